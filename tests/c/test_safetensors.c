/* safetensors: files written by the reference implementation
 * (tests/goldens/gen_safetensors.py) read value by value; deg's writer
 * produces byte-identical files; sharded checkpoints; bad input. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "base/status.h"
#include "core_testutil.h"
#include "format/safetensors.h"

#define GOLD DEG_SOURCE_ROOT "/tests/goldens/safetensors/"

static char *tmpdir;
static void setup(void) { tmpdir = tu_mkdtemp(); }
static void teardown(void)
{
    tu_rmrf(tmpdir);
    free(tmpdir);
}

static double elem(const dg_tensor_view *t, int64_t i)
{
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case DG_F32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
    case DG_F64: { double v; memcpy(&v, p + 8 * i, 8); return v; }
    case DG_F16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return dg_f16_to_f32(v); }
    case DG_BF16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return dg_bf16_to_f32(v); }
    case DG_I8: return ((const int8_t *)p)[i];
    case DG_U8: case DG_BOOL: return p[i];
    case DG_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case DG_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case DG_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
    default: cr_assert_fail("unexpected dtype"); return 0;
    }
}

static dg_dtype torch_dtype(const char *s)
{
    static const struct { const char *n; dg_dtype t; } m[] = {
        {"float32", DG_F32}, {"float16", DG_F16}, {"bfloat16", DG_BF16}, {"float64", DG_F64},
        {"int8", DG_I8}, {"int16", DG_I16}, {"int32", DG_I32}, {"int64", DG_I64},
        {"uint8", DG_U8}, {"bool", DG_BOOL}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (!strcmp(m[i].n, s)) return m[i].t;
    cr_assert_fail("unknown torch dtype %s", s);
    return DG_F32;
}

Test(safetensors, reads_reference_file_value_by_value)
{
    dg_safetensors *st;
    cr_assert_eq(dg_safetensors_open(GOLD "py_all.safetensors", &st), DEG_OK, "%s", deg_errmsg());
    json_error_t err;
    json_t *want = json_load_file(GOLD "py_all.json", 0, &err);
    cr_assert_not_null(want, "%s", err.text);
    cr_assert_eq(dg_safetensors_n_tensors(st), json_object_size(want));
    const char *name;
    json_t *w;
    json_object_foreach(want, name, w) {
        const dg_tensor_view *t = dg_safetensors_find(st, name);
        cr_assert_not_null(t, "tensor %s missing", name);
        cr_assert_str_eq(t->name, name);
        cr_assert_eq(t->dtype, torch_dtype(json_string_value(json_object_get(w, "dtype"))), "%s", name);
        json_t *shape = json_object_get(w, "shape");
        cr_assert_eq((size_t)t->n_dims, json_array_size(shape), "%s", name);
        for (int d = 0; d < t->n_dims; d++)
            cr_assert_eq(t->shape[d], json_integer_value(json_array_get(shape, (size_t)d)));
        json_t *vals = json_object_get(w, "values");
        cr_assert_eq((size_t)dg_tensor_numel(t), json_array_size(vals), "%s", name);
        cr_assert_eq(t->n_bytes, (size_t)dg_tensor_numel(t) * dg_dtype_block_bytes(t->dtype));
        for (size_t i = 0; i < json_array_size(vals); i++) {
            json_t *v = json_array_get(vals, i);
            double e = json_is_true(v) ? 1 : json_is_false(v) ? 0 : json_number_value(v);
            cr_assert_eq(elem(t, (int64_t)i), e, "%s[%zu]: %.17g vs %.17g", name, i, elem(t, (int64_t)i), e);
        }
        /* the reference writer keeps every tensor aligned to its element size */
        cr_assert_eq((uintptr_t)t->data % dg_dtype_block_bytes(t->dtype), 0, "%s", name);
    }
    /* float types also go through dg_dequantize */
    const dg_tensor_view *b = dg_safetensors_find(st, "brain");
    float f[6];
    cr_assert_eq(dg_dequantize(b->dtype, b->data, f, 6), DEG_OK);
    cr_assert_eq(f[0], -0.45703125f);
    cr_assert_str_eq(dg_safetensors_meta(st, "format"), "pt");
    cr_assert_str_eq(dg_safetensors_meta(st, "note"), "ünï/\"q\"");
    cr_assert_null(dg_safetensors_meta(st, "absent"));
    cr_assert_null(dg_safetensors_find(st, "absent"));
    cr_assert_null(dg_safetensors_find(st, "__metadata__"));
    /* tensors are listed in file order */
    for (size_t i = 1; i < dg_safetensors_n_tensors(st); i++)
        cr_assert((const uint8_t *)dg_safetensors_tensor(st, i)->data >=
                  (const uint8_t *)dg_safetensors_tensor(st, i - 1)->data);
    json_decref(want);
    dg_safetensors_close(st);
}

/* Same tensors as writer_ref_tensors() in gen_safetensors.py. */
static float wf32[12], bf32_a = 1.0f, scalar = 2.5f, empty_dummy;
static uint16_t bf16v[5], zbf16[4];
static int64_t ei64[2] = {-3, 1ll << 40};
static double df64[2] = {0.125, -2.0};
static int32_t ii32[2] = {7, -7};
static int16_t hi16[3] = {300, -300, 1};
static int8_t ci8[2] = {-128, 127};
static uint8_t uu8[3] = {0, 255, 9}, flag[2] = {1, 0};

static dg_st_writer *build_writer_ref(void)
{
    for (int i = 0; i < 12; i++) wf32[i] = (float)i * 0.25f - 1.0f;
    for (int i = 0; i < 5; i++) bf16v[i] = dg_f32_to_f16((float)i * 0.5f - 1.0f);
    for (int i = 0; i < 4; i++) zbf16[i] = dg_f32_to_bf16((float)i * 1.5f);
    dg_st_writer *w;
    cr_assert_eq(dg_st_writer_new(&w), DEG_OK);
    /* insertion order differs from the file order on purpose */
    cr_assert_eq(dg_st_writer_add(w, "scalar", DG_F32, 0, NULL, &scalar), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "w.f32", DG_F32, 2, (int64_t[]){3, 4}, wf32), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "b.f16", DG_F16, 1, (int64_t[]){5}, bf16v), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "z.bf16", DG_BF16, 2, (int64_t[]){2, 2}, zbf16), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "flag", DG_BOOL, 1, (int64_t[]){2}, flag), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "e.i64", DG_I64, 1, (int64_t[]){2}, ei64), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "d.f64", DG_F64, 1, (int64_t[]){2}, df64), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "i.i32", DG_I32, 2, (int64_t[]){2, 1}, ii32), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "h.i16", DG_I16, 1, (int64_t[]){3}, hi16), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "c.i8", DG_I8, 1, (int64_t[]){2}, ci8), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "u.u8", DG_U8, 1, (int64_t[]){3}, uu8), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "empty", DG_F32, 2, (int64_t[]){0, 3}, &empty_dummy), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "a.f32", DG_F32, 1, (int64_t[]){1}, &bf32_a), DEG_OK);
    cr_assert_eq(dg_st_writer_meta(w, "format", "pt"), DEG_OK);
    return w;
}

TestSuite(st_io, .init = setup, .fini = teardown);

Test(st_io, writer_output_is_byte_identical_to_reference)
{
    dg_st_writer *w = build_writer_ref();
    char *p = tu_path(tmpdir, "c.safetensors");
    cr_assert_eq(dg_st_writer_commit(w, p), DEG_OK, "%s", deg_errmsg());
    dg_st_writer_free(w);
    size_t na, nb;
    uint8_t *a = tu_read(p, &na), *b = tu_read(GOLD "py_writer_ref.safetensors", &nb);
    cr_assert_not_null(b);
    cr_assert_eq(na, nb, "size %zu vs reference %zu", na, nb);
    for (size_t i = 0; i < na; i++)
        cr_assert_eq(a[i], b[i], "byte %zu differs: 0x%02x vs 0x%02x (header: %.*s)", i, a[i], b[i],
                     (int)(nb > 400 ? 400 : nb), (const char *)b + 8);
    free(a);
    free(b);
    free(p);
}

Test(st_io, writer_roundtrip_and_metadata)
{
    dg_st_writer *w = build_writer_ref();
    cr_assert_eq(dg_st_writer_meta(w, "zeta", "last"), DEG_OK);
    cr_assert_eq(dg_st_writer_meta(w, "alpha", "first \"quoted\" ü\n"), DEG_OK);
    cr_assert_eq(dg_st_writer_meta(w, "format", "deg"), DEG_OK); /* replaces */
    char *p = tu_path(tmpdir, "rt.safetensors");
    cr_assert_eq(dg_st_writer_commit(w, p), DEG_OK, "%s", deg_errmsg());
    dg_st_writer_free(w);
    dg_safetensors *st;
    cr_assert_eq(dg_safetensors_open(p, &st), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(dg_safetensors_n_tensors(st), 13);
    cr_assert_str_eq(dg_safetensors_meta(st, "format"), "deg");
    cr_assert_str_eq(dg_safetensors_meta(st, "alpha"), "first \"quoted\" ü\n");
    const dg_tensor_view *t = dg_safetensors_find(st, "w.f32");
    cr_assert(t && t->dtype == DG_F32 && t->n_dims == 2 && t->shape[0] == 3 && t->shape[1] == 4);
    cr_assert_eq(memcmp(t->data, wf32, sizeof wf32), 0);
    t = dg_safetensors_find(st, "scalar");
    cr_assert(t && t->n_dims == 0 && dg_tensor_numel(t) == 1 && elem(t, 0) == 2.5);
    t = dg_safetensors_find(st, "empty");
    cr_assert(t && t->n_bytes == 0 && dg_tensor_numel(t) == 0);
    t = dg_safetensors_find(st, "e.i64");
    cr_assert(t && elem(t, 1) == (double)(1ll << 40));
    /* header keys of metadata are sorted: alpha < format < zeta */
    size_t n;
    uint8_t *raw = tu_read(p, &n);
    const char *h = (const char *)raw + 8;
    cr_assert(strstr(h, "\"__metadata__\":{\"alpha\":") == h + 1, "%.120s", h);
    free(raw);
    dg_safetensors_close(st);
    free(p);
}

Test(st_io, writer_rejects_bad_arguments)
{
    dg_st_writer *w;
    float x = 0;
    cr_assert_eq(dg_st_writer_new(&w), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "q", DG_Q4_0, 1, (int64_t[]){32}, &x), DEG_ERR_UNSUPPORTED);
    cr_assert(strstr(deg_errmsg(), "q4_0"), "%s", deg_errmsg());
    cr_assert_eq(dg_st_writer_add(w, "", DG_F32, 0, NULL, &x), DEG_ERR_ARG);
    cr_assert_eq(dg_st_writer_add(w, "__metadata__", DG_F32, 0, NULL, &x), DEG_ERR_ARG);
    cr_assert_eq(dg_st_writer_add(w, "bad\xff", DG_F32, 0, NULL, &x), DEG_ERR_ARG);
    cr_assert_eq(dg_st_writer_add(w, "neg", DG_F32, 1, (int64_t[]){-1}, &x), DEG_ERR_ARG);
    cr_assert_eq(dg_st_writer_add(w, "x", DG_F32, 0, NULL, &x), DEG_OK);
    cr_assert_eq(dg_st_writer_add(w, "x", DG_F32, 0, NULL, &x), DEG_ERR_ARG);
    cr_assert(strstr(deg_errmsg(), "duplicate"), "%s", deg_errmsg());
    cr_assert_eq(dg_st_writer_meta(w, "k", "\xc3"), DEG_ERR_ARG);
    /* unwritable target: nothing is left behind, old file untouched */
    cr_assert_eq(dg_st_writer_commit(w, "/nonexistent/dir/x.safetensors"), DEG_ERR_IO);
    cr_assert(strstr(deg_errmsg(), "/nonexistent/dir/x.safetensors"), "%s", deg_errmsg());
    dg_st_writer_free(w);
    dg_st_writer_free(NULL);
}

/* ---- sharded checkpoints ---------------------------------------------------- */

static void check_sharded(dg_st_set *s)
{
    cr_assert_eq(dg_st_set_n_files(s), 2);
    cr_assert_eq(dg_st_set_n_tensors(s), 3);
    const dg_tensor_view *t = dg_st_set_find(s, "model.layers.0.w");
    cr_assert(t && t->dtype == DG_F32 && t->shape[0] == 2 && t->shape[1] == 3);
    cr_assert_eq(elem(t, 5), 5.0);
    t = dg_st_set_find(s, "lm_head.weight");
    cr_assert(t && t->dtype == DG_F16 && elem(t, 3) == 3.0);
    t = dg_st_set_find(s, "model.norm");
    cr_assert(t && t->dtype == DG_BF16 && elem(t, 0) == 1.0);
    cr_assert_null(dg_st_set_find(s, "nope"));
}

Test(st_set, sharded_directory_and_index_path)
{
    dg_st_set *s;
    cr_assert_eq(dg_st_set_open(GOLD "sharded", &s), DEG_OK, "%s", deg_errmsg());
    check_sharded(s);
    cr_assert_str_eq(dg_st_set_dir(s), GOLD "sharded");
    dg_st_set_close(s);
    cr_assert_eq(dg_st_set_open(GOLD "sharded/model.safetensors.index.json", &s), DEG_OK, "%s",
                 deg_errmsg());
    check_sharded(s);
    cr_assert_str_eq(dg_st_set_dir(s), GOLD "sharded");
    dg_st_set_close(s);
}

TestSuite(st_set_tmp, .init = setup, .fini = teardown);

static void write_text(const char *name, const char *text)
{
    char *p = tu_path(tmpdir, name);
    tu_write(p, text, strlen(text));
    free(p);
}

static void write_st(const char *name, const char *tensor)
{
    dg_st_writer *w;
    static float v[2] = {1, 2};
    dg_st_writer_new(&w);
    dg_st_writer_add(w, tensor, DG_F32, 1, (int64_t[]){2}, v);
    char *p = tu_path(tmpdir, name);
    cr_assert_eq(dg_st_writer_commit(w, p), DEG_OK);
    free(p);
    dg_st_writer_free(w);
}

static void expect_set(const char *path, deg_status want, const char *needle)
{
    dg_st_set *s = (dg_st_set *)0x1;
    deg_status got = dg_st_set_open(path, &s);
    cr_assert_eq(got, want, "%s: %s (%s)", path, deg_status_name(got), deg_errmsg());
    if (got != DEG_OK) cr_assert_null(s);
    if (needle) cr_assert(strstr(deg_errmsg(), needle), "message lacks '%s': %s", needle, deg_errmsg());
    dg_st_set_close(got == DEG_OK ? s : NULL);
}

Test(st_set_tmp, single_file_directory_and_errors)
{
    expect_set(tmpdir, DEG_ERR_IO, "no model.safetensors");
    write_st("model.safetensors", "only");
    dg_st_set *s;
    cr_assert_eq(dg_st_set_open(tmpdir, &s), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(dg_st_set_n_files(s), 1);
    cr_assert_not_null(dg_st_set_find(s, "only"));
    dg_st_set_close(s);
    char *p = tu_path(tmpdir, "model.safetensors");
    cr_assert_eq(dg_st_set_open(p, &s), DEG_OK);
    cr_assert_not_null(dg_st_set_find(s, "only"));
    dg_st_set_close(s);
    free(p);

    /* an index takes precedence; each failure names its cause */
    write_st("a.safetensors", "t1");
    write_st("b.safetensors", "t1");
    write_text("model.safetensors.index.json", "{\"weight_map\": {\"t1\": \"a.safetensors\", \"t2\": \"a.safetensors\"}}");
    expect_set(tmpdir, DEG_ERR_FORMAT, "'t2' is listed in the weight_map but missing from a.safetensors");
    write_text("model.safetensors.index.json", "{\"weight_map\": {\"t1\": \"a.safetensors\", \"t9\": \"b.safetensors\"}}");
    expect_set(tmpdir, DEG_ERR_FORMAT, "in two shards");
    write_text("model.safetensors.index.json", "{\"weight_map\": {\"t1\": \"../a.safetensors\"}}");
    expect_set(tmpdir, DEG_ERR_FORMAT, "does not name a file");
    write_text("model.safetensors.index.json", "{\"weight_map\": {\"t1\": \"missing.safetensors\"}}");
    expect_set(tmpdir, DEG_ERR_IO, "missing.safetensors");
    write_text("model.safetensors.index.json", "{\"weight_map\": [}");
    expect_set(tmpdir, DEG_ERR_FORMAT, "malformed JSON");
    write_text("model.safetensors.index.json", "{\"metadata\": {}}");
    expect_set(tmpdir, DEG_ERR_FORMAT, "no \"weight_map\"");
    write_text("model.safetensors.index.json", "{\"weight_map\": {\"t1\": \"a.safetensors\"}}");
    cr_assert_eq(dg_st_set_open(tmpdir, &s), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(dg_st_set_n_tensors(s), 1);
    dg_st_set_close(s);
    expect_set("/nonexistent/model", DEG_ERR_IO, "/nonexistent/model");
}

/* ---- bad input ------------------------------------------------------------ */

TestSuite(st_bad, .init = setup, .fini = teardown);

static void expect_raw(const void *data, size_t len, deg_status want, const char *n1, const char *n2)
{
    char *p = tu_path(tmpdir, "t.safetensors");
    tu_write(p, data, len);
    dg_safetensors *st = (dg_safetensors *)0x1;
    deg_status s = dg_safetensors_open(p, &st);
    cr_assert_eq(s, want, "%s, expected %s: %s", deg_status_name(s), deg_status_name(want), deg_errmsg());
    if (s != DEG_OK) {
        cr_assert_null(st);
        cr_assert(strstr(deg_errmsg(), p), "message lacks the path: %s", deg_errmsg());
    }
    dg_safetensors_close(s == DEG_OK ? st : NULL);
    if (n1) cr_assert(strstr(deg_errmsg(), n1), "message lacks '%s': %s", n1, deg_errmsg());
    if (n2) cr_assert(strstr(deg_errmsg(), n2), "message lacks '%s': %s", n2, deg_errmsg());
    free(p);
}

/* header JSON + data_len bytes of data */
static void expect_hdr(const char *json, size_t data_len, deg_status want, const char *n1, const char *n2)
{
    tu_buf b = {0};
    tu_u64(&b, strlen(json));
    tu_put(&b, json, strlen(json));
    for (size_t i = 0; i < data_len; i++) tu_u8(&b, (uint8_t)i);
    expect_raw(b.p, b.n, want, n1, n2);
    free(b.p);
}

Test(st_bad, sizes_and_header_length)
{
    expect_raw("", 0, DEG_ERR_FORMAT, "empty file", NULL);
    expect_raw("\x10\0\0", 3, DEG_ERR_FORMAT, "too short", NULL);
    tu_buf b = {0};
    tu_u64(&b, 1000);
    tu_put(&b, "{}", 2);
    expect_raw(b.p, b.n, DEG_ERR_FORMAT, "header length 1000 is larger than the file", NULL);
    b.n = 0;
    tu_u64(&b, UINT64_MAX);
    tu_put(&b, "{}", 2);
    expect_raw(b.p, b.n, DEG_ERR_FORMAT, "larger than the file", NULL);
    b.n = 0;
    tu_u64(&b, 2);
    tu_put(&b, "{}", 2);
    expect_raw(b.p, b.n, DEG_OK, NULL, NULL); /* no tensors: valid */
    free(b.p);
    expect_hdr("GGUF", 0, DEG_ERR_FORMAT, "not a JSON object", NULL);
}

Test(st_bad, malformed_json)
{
    expect_hdr("{\"a\": {\"dtype\": \"F32\",", 0, DEG_ERR_FORMAT, "malformed JSON", NULL);
    expect_hdr("{\"a\": 1} trailing", 0, DEG_ERR_FORMAT, "malformed JSON", NULL);
    expect_hdr("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               8, DEG_ERR_FORMAT, "malformed JSON", "duplicate");
    expect_hdr("{\"a\": 1}", 0, DEG_ERR_FORMAT, "'a' is not an object", NULL);
    expect_hdr("{\"a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4, DEG_ERR_FORMAT, "'a'", "dtype");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", 4, DEG_ERR_FORMAT, "'a'", "shape");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}}", 4, DEG_ERR_FORMAT,
               "'a'", "data_offsets");
    expect_hdr("{\"__metadata__\": {\"k\": 1}}", 0, DEG_ERR_FORMAT, "__metadata__ value of 'k'", NULL);
    expect_hdr("{\"__metadata__\": [1]}", 0, DEG_ERR_FORMAT, "__metadata__", NULL);
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}  \n ", 4, DEG_OK,
               NULL, NULL); /* padding whitespace is fine */
}

Test(st_bad, dtype_shape_and_offsets)
{
    expect_hdr("{\"emb\": {\"dtype\": \"F8_E4M3\", \"shape\": [4], \"data_offsets\": [0, 4]}}", 4,
               DEG_ERR_UNSUPPORTED, "'emb'", "F8_E4M3");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}",
               4, DEG_ERR_UNSUPPORTED, "'a'", "9 dimensions");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1], \"data_offsets\": [0, 4]}}", 4,
               DEG_OK, NULL, NULL); /* a vision tower's 5-D patch convolution */
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 20]}}", 20,
               DEG_ERR_FORMAT, "'a'", "need 24 bytes");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [0, 8]}}", 8, DEG_ERR_FORMAT,
               "'a'", "shape[0]");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 8]}}", 8,
               DEG_ERR_FORMAT, "'a'", "shape[0]");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 4294967296], "
               "\"data_offsets\": [0, 8]}}",
               8, DEG_ERR_FORMAT, "'a'", "overflow");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 7, DEG_ERR_FORMAT,
               "'a'", "run past the end of the data (7 bytes)");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", 8, DEG_ERR_FORMAT,
               "'a'", "end before they begin");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [-8, 0]}}", 8, DEG_ERR_FORMAT,
               "'a'", "non-negative");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
               " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
               12, DEG_ERR_FORMAT, "overlap", "'b'");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
               " \"b\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [4, 4]},"
               " \"c\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]}}",
               12, DEG_ERR_FORMAT, "an overlap", "'b'"); /* the reference: invalid offset for b */
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
               " \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [12, 16]}}",
               16, DEG_ERR_FORMAT, "a gap", "'b' (begins at 12)");
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 12,
               DEG_ERR_FORMAT, "4 bytes after the last tensor", NULL);
    expect_hdr("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", 12,
               DEG_ERR_FORMAT, "starts at data offset 4, not 0", NULL);
}

/* Issue 19 item 10: the verdicts of the `safetensors` package (the reference,
 * tests/goldens/gen_safetensors_verdicts.py) on gaps, trailing bytes, a first
 * offset other than 0, overlaps and empty tensors: libdeg accepts exactly the
 * files it accepts. */
Test(st_bad, reference_verdicts)
{
    const char *dir = DEG_SOURCE_ROOT "/tests/goldens/safetensors_verdicts";
    char path[1024];
    snprintf(path, sizeof path, "%s/verdicts.json", dir);
    json_t *v = json_load_file(path, 0, NULL);
    cr_assert(v, "%s", path);
    json_t *cases = json_object_get(v, "cases");
    cr_assert(json_object_size(cases) >= 10);
    const char *name;
    json_t *c;
    json_object_foreach(cases, name, c) {
        snprintf(path, sizeof path, "%s/%s.safetensors", dir, name);
        dg_safetensors *st = NULL;
        deg_status s = dg_safetensors_open(path, &st);
        int ok = json_is_true(json_object_get(c, "ok"));
        cr_expect_eq(s == DEG_OK, ok, "%s: libdeg %s (%s), reference %s", name,
                     deg_status_name(s), s ? deg_errmsg() : "",
                     ok ? "ok" : json_string_value(json_object_get(c, "error")));
        if (!ok) cr_expect_eq(s, DEG_ERR_FORMAT, "%s: %s", name, deg_status_name(s));
        dg_safetensors_close(st);
    }
    json_decref(v);
}

Test(st_bad, every_truncation_of_a_reference_file_fails_cleanly)
{
    size_t n;
    uint8_t *full = tu_read(GOLD "py_all.safetensors", &n);
    cr_assert_not_null(full);
    char *p = tu_path(tmpdir, "trunc.safetensors");
    for (size_t len = 0; len < n; len++) {
        tu_write(p, full, len);
        dg_safetensors *st;
        deg_status s = dg_safetensors_open(p, &st);
        cr_assert_eq(s, DEG_ERR_FORMAT, "prefix of %zu bytes: %s (%s)", len, deg_status_name(s), deg_errmsg());
    }
    free(p);
    free(full);
}

Test(st_bad, corrupted_bytes_never_crash)
{
    size_t n;
    uint8_t *full = tu_read(GOLD "py_all.safetensors", &n);
    uint64_t rng = 0x2545F4914F6CDD1Dull;
    char *p = tu_path(tmpdir, "fuzz.safetensors");
    uint8_t *c = malloc(n);
    for (int iter = 0; iter < 400; iter++) {
        memcpy(c, full, n);
        for (int k = 0; k < 2; k++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            c[rng % 900] = (uint8_t)(rng >> 40);
        }
        tu_write(p, c, n);
        dg_safetensors *st;
        deg_status s = dg_safetensors_open(p, &st);
        if (s == DEG_OK)
            dg_safetensors_close(st);
        else
            cr_assert(s == DEG_ERR_FORMAT || s == DEG_ERR_UNSUPPORTED, "%s", deg_errmsg());
    }
    free(c);
    free(p);
    free(full);
}
