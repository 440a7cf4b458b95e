/* GGUF reader: a file written by gguf-py's GGUFWriter (tests/goldens/gen_gguf.py)
 * checked value by value, hand-made bad files (each a clear error), a column
 * order applied to quantized blocks by the weight loader, and the real
 * SmolLM2 model when it is available. */
#include <criterion/criterion.h>
#include "model_path.h"
#include <math.h>
#include <string.h>

#include "core_testutil.h"
#include "base/status.h"
#include "format/gguf.h"
#include "model/arch.h"
#include "tensor/weight.h"

#define SMALL DEG_SOURCE_ROOT "/tests/goldens/gguf/small.gguf"

static int str_eq(dg_gguf_str s, const char *want)
{
    return s.len == strlen(want) && memcmp(s.ptr, want, s.len) == 0;
}

Test(gguf, small_metadata_every_type)
{
    dg_gguf *g;
    cr_assert_eq(dg_gguf_open(SMALL, &g), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(dg_gguf_version(g), 3);
    cr_assert_eq(dg_gguf_alignment(g), 64);
    uint64_t u;
    int64_t i;
    float f;
    int b;
    dg_gguf_str s;
    cr_assert_eq(dg_gguf_get_u64(g, "t.u8", &u), DEG_OK);
    cr_assert_eq(u, 200);
    cr_assert_eq(dg_gguf_get_i64(g, "t.i8", &i), DEG_OK);
    cr_assert_eq(i, -100);
    cr_assert_eq(dg_gguf_get_u64(g, "t.i8", &u), DEG_ERR_FORMAT, "negative into u64");
    cr_assert(strstr(deg_errmsg(), "t.i8"), "%s", deg_errmsg());
    cr_assert_eq(dg_gguf_get_u64(g, "t.u16", &u), DEG_OK);
    cr_assert_eq(u, 60000);
    cr_assert_eq(dg_gguf_get_i64(g, "t.i16", &i), DEG_OK);
    cr_assert_eq(i, -30000);
    cr_assert_eq(dg_gguf_get_u64(g, "t.u32", &u), DEG_OK);
    cr_assert_eq(u, 4000000000u);
    cr_assert_eq(dg_gguf_get_i64(g, "t.i32", &i), DEG_OK);
    cr_assert_eq(i, -2000000000);
    cr_assert_eq(dg_gguf_get_f32(g, "t.f32", &f), DEG_OK);
    cr_assert_eq(f, 0.15625f);
    cr_assert_eq(dg_gguf_get_bool(g, "t.bool_true", &b), DEG_OK);
    cr_assert_eq(b, 1);
    cr_assert_eq(dg_gguf_get_bool(g, "t.bool_false", &b), DEG_OK);
    cr_assert_eq(b, 0);
    cr_assert_eq(dg_gguf_get_str(g, "t.str", &s), DEG_OK);
    cr_assert(str_eq(s, "héllo wörld ✓"));
    cr_assert_eq(dg_gguf_get_str(g, "t.empty_str", &s), DEG_OK);
    cr_assert_eq(s.len, 0);
    cr_assert_eq(dg_gguf_get_u64(g, "t.u64", &u), DEG_OK);
    cr_assert_eq(u, 18000000000000000000ull);
    cr_assert_eq(dg_gguf_get_i64(g, "t.u64", &i), DEG_ERR_FORMAT, "too big for i64");
    cr_assert_eq(dg_gguf_get_i64(g, "t.i64", &i), DEG_OK);
    cr_assert_eq(i, -9000000000000000000ll);
    cr_assert_eq(dg_gguf_get_f32(g, "t.f64", &f), DEG_OK);
    cr_assert_eq(f, (float)2.718281828459045);
    cr_assert_eq(dg_gguf_get_str(g, "general.architecture", &s), DEG_OK);
    cr_assert(str_eq(s, "llama"));
    /* wrong type, absent key */
    cr_assert_eq(dg_gguf_get_str(g, "t.u8", &s), DEG_ERR_FORMAT);
    cr_assert(strstr(deg_errmsg(), "'t.u8' has type uint8, expected string"), "%s", deg_errmsg());
    dg_clear_error();
    cr_assert_eq(dg_gguf_get_u64(g, "no.such.key", &u), DEG_ERR_RANGE);
    cr_assert_str_eq(deg_errmsg(), "", "absent key must not set a message");
    /* arrays */
    dg_gguf_type et;
    uint64_t n;
    const void *d;
    cr_assert_eq(dg_gguf_get_arr(g, "t.arr_u8", &et, &n, &d), DEG_OK);
    cr_assert_eq(et, DG_GGUF_UINT8);
    cr_assert_eq(n, 3);
    cr_assert_eq(((const uint8_t *)d)[2], 255);
    cr_assert_eq(dg_gguf_get_arr(g, "t.arr_i16", &et, &n, &d), DEG_OK);
    int16_t i16[3];
    memcpy(i16, d, 6);
    cr_assert(et == DG_GGUF_INT16 && n == 3 && i16[0] == -1 && i16[2] == -300);
    cr_assert_eq(dg_gguf_get_arr(g, "t.arr_i32", &et, &n, &d), DEG_OK);
    int32_t i32[4];
    memcpy(i32, d, 16);
    cr_assert(et == DG_GGUF_INT32 && n == 4 && i32[1] == -8 && i32[3] == 10);
    cr_assert_eq(dg_gguf_get_arr(g, "t.arr_u64", &et, &n, &d), DEG_OK);
    uint64_t u64[2];
    memcpy(u64, d, 16);
    cr_assert(et == DG_GGUF_UINT64 && n == 2 && u64[1] == (1ull << 40));
    cr_assert_eq(dg_gguf_get_arr(g, "t.arr_f32", &et, &n, &d), DEG_OK);
    float f32[2];
    memcpy(f32, d, 8);
    cr_assert(et == DG_GGUF_FLOAT32 && n == 2 && f32[0] == 0.5f && f32[1] == -1.25f);
    cr_assert_eq(dg_gguf_get_arr(g, "t.arr_f64", &et, &n, &d), DEG_OK);
    double f64;
    memcpy(&f64, d, 8);
    cr_assert(et == DG_GGUF_FLOAT64 && n == 1 && f64 == 0.1);
    cr_assert_eq(dg_gguf_get_arr(g, "t.arr_bool", &et, &n, &d), DEG_OK);
    cr_assert(et == DG_GGUF_BOOL && n == 3 && ((const uint8_t *)d)[1] == 0 &&
              ((const uint8_t *)d)[2] == 1);
    cr_assert_eq(dg_gguf_get_arr(g, "t.arr_str", &et, &n, &d), DEG_OK);
    cr_assert(et == DG_GGUF_STRING && n == 4);
    const char *want[] = {"a", "", "Ġthe", "日本語"};
    for (uint64_t k = 0; k < 4; k++) {
        cr_assert_eq(dg_gguf_arr_str(g, "t.arr_str", k, &s), DEG_OK);
        cr_assert(str_eq(s, want[k]), "string %llu", (unsigned long long)k);
    }
    cr_assert_eq(dg_gguf_arr_str(g, "t.arr_str", 4, &s), DEG_ERR_RANGE);
    cr_assert_eq(dg_gguf_arr_str(g, "t.arr_i32", 0, &s), DEG_ERR_FORMAT);
    cr_assert_eq(dg_gguf_get_arr(g, "t.arr_nested", &et, &n, &d), DEG_OK);
    cr_assert(et == DG_GGUF_ARRAY && n == 3);
    /* first nested element: u32 type, u64 n = 3, then three int32 */
    uint32_t inner_t;
    uint64_t inner_n;
    memcpy(&inner_t, d, 4);
    memcpy(&inner_n, (const uint8_t *)d + 4, 8);
    cr_assert(inner_t == DG_GGUF_INT32 && inner_n == 3);
    cr_assert_eq(dg_gguf_get_arr(g, "t.arr_nested_str", &et, &n, &d), DEG_OK);
    cr_assert(et == DG_GGUF_ARRAY && n == 2);
    /* a value after all the arrays: only right if they were skipped exactly */
    cr_assert_eq(dg_gguf_get_u64(g, "t.after_arrays", &u), DEG_OK);
    cr_assert_eq(u, 12345);
    /* raw kv listing */
    cr_assert_eq(dg_gguf_n_kv(g), 27); /* gguf-py's reader lists the same 27 */
    int found = 0;
    for (size_t k = 0; k < dg_gguf_n_kv(g); k++)
        if (strcmp(dg_gguf_kv_key(g, k), "t.arr_nested") == 0) {
            cr_assert_eq(dg_gguf_kv_type(g, k), DG_GGUF_ARRAY);
            found = 1;
        }
    cr_assert(found);
    dg_gguf_close(g);
}

static void check_against_expected(const dg_gguf *g, const char *name, dg_dtype dt, int nd,
                                   const int64_t *shape)
{
    const dg_tensor_view *t = dg_gguf_find(g, name);
    cr_assert_not_null(t, "tensor %s missing", name);
    cr_assert_eq(t->dtype, dt, "%s: dtype %s", name, dg_dtype_name(t->dtype));
    cr_assert_eq(t->n_dims, nd, "%s: n_dims", name);
    for (int k = 0; k < nd; k++)
        cr_assert_eq(t->shape[k], shape[k], "%s: shape[%d] = %lld", name, k, (long long)t->shape[k]);
    int64_t n = dg_tensor_numel(t);
    cr_assert_eq(t->n_bytes, dg_dtype_row_bytes(dt, n, NULL));
    cr_assert_eq(((uintptr_t)t->data) % 64, 0, "%s: data not 64-aligned", name);
    char ename[128];
    snprintf(ename, sizeof ename, "%s.expected", name);
    const dg_tensor_view *e = dg_gguf_find(g, ename);
    cr_assert_not_null(e);
    cr_assert_eq(e->dtype, DG_F32);
    cr_assert_eq(dg_tensor_numel(e), n);
    float *got = malloc((size_t)n * 4);
    cr_assert_eq(dg_dequantize(t->dtype, t->data, got, n), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(memcmp(got, e->data, (size_t)n * 4), 0, "%s: values differ from gguf-py", name);
    free(got);
}

Test(gguf, small_tensors_value_by_value)
{
    dg_gguf *g;
    cr_assert_eq(dg_gguf_open(SMALL, &g), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(dg_gguf_n_tensors(g), 28);
    check_against_expected(g, "w.f32", DG_F32, 2, (int64_t[]){3, 5});
    check_against_expected(g, "w.f16", DG_F16, 2, (int64_t[]){2, 8});
    check_against_expected(g, "w.bf16", DG_BF16, 2, (int64_t[]){4, 4});
    check_against_expected(g, "w.q8_0", DG_Q8_0, 2, (int64_t[]){2, 64});
    check_against_expected(g, "w.q4_0", DG_Q4_0, 2, (int64_t[]){3, 64});
    check_against_expected(g, "w.q4_1", DG_Q4_1, 2, (int64_t[]){2, 64});
    check_against_expected(g, "w.q4_k", DG_Q4_K, 2, (int64_t[]){2, 256});
    check_against_expected(g, "w.q6_k", DG_Q6_K, 2, (int64_t[]){2, 256});
    check_against_expected(g, "w.q5_0", DG_Q5_0, 2, (int64_t[]){2, 64});
    check_against_expected(g, "w.q5_1", DG_Q5_1, 2, (int64_t[]){2, 64});
    check_against_expected(g, "w.f64", DG_F64, 1, (int64_t[]){2});
    check_against_expected(g, "w.3d", DG_F32, 3, (int64_t[]){2, 3, 4});

    const dg_tensor_view *t = dg_gguf_find(g, "w.i8");
    cr_assert(t && t->dtype == DG_I8 && t->n_dims == 1 && t->shape[0] == 3);
    cr_assert(((const int8_t *)t->data)[0] == -128 && ((const int8_t *)t->data)[2] == 127);
    t = dg_gguf_find(g, "w.i16");
    cr_assert(t && t->dtype == DG_I16 && t->shape[0] == 2 && t->shape[1] == 2);
    cr_assert(((const int16_t *)t->data)[0] == -32768 && ((const int16_t *)t->data)[3] == 32767);
    t = dg_gguf_find(g, "w.i32");
    cr_assert(t && t->dtype == DG_I32 && ((const int32_t *)t->data)[2] == 2147483647);
    t = dg_gguf_find(g, "w.i64");
    cr_assert(t && t->dtype == DG_I64 && ((const int64_t *)t->data)[0] == -(1ll << 62));
    cr_assert_null(dg_gguf_find(g, "w.nope"));
    cr_assert_null(dg_gguf_tensor(g, 28));
    cr_assert_str_eq(dg_gguf_tensor(g, 0)->name, "w.f32");
    dg_gguf_close(g);
}

/* ---- hand-made files ---------------------------------------------------- */

static char *tmpdir;
static void setup(void) { tmpdir = tu_mkdtemp(); }
static void teardown(void)
{
    tu_rmrf(tmpdir);
    free(tmpdir);
}

/* Write b to a temp file, open it, expect status and a message containing
 * every non-NULL needle. */
static void expect(const void *data, size_t len, deg_status want, const char *n1, const char *n2)
{
    char *p = tu_path(tmpdir, "t.gguf");
    tu_write(p, data, len);
    dg_gguf *g = (dg_gguf *)0x1;
    deg_status s = dg_gguf_open(p, &g);
    cr_assert_eq(s, want, "status %s, expected %s: %s", deg_status_name(s), deg_status_name(want),
                 deg_errmsg());
    if (s != DEG_OK) cr_assert_null(g);
    dg_gguf_close(s == DEG_OK ? g : NULL);
    if (n1) cr_assert(strstr(deg_errmsg(), n1), "message lacks '%s': %s", n1, deg_errmsg());
    if (n2) cr_assert(strstr(deg_errmsg(), n2), "message lacks '%s': %s", n2, deg_errmsg());
    if (s != DEG_OK) cr_assert(strstr(deg_errmsg(), p), "message lacks the path: %s", deg_errmsg());
    free(p);
}

static void header(tu_buf *b, uint32_t version, uint64_t nt, uint64_t nkv)
{
    tu_put(b, "GGUF", 4);
    tu_u32(b, version);
    tu_u64(b, nt);
    tu_u64(b, nkv);
}

/* One tensor info: 1-D or 2-D (ne innermost first). */
static void tinfo(tu_buf *b, const char *name, uint32_t nd, const uint64_t *ne, uint32_t type,
                  uint64_t off)
{
    tu_str(b, name);
    tu_u32(b, nd);
    for (uint32_t k = 0; k < nd; k++) tu_u64(b, ne[k]);
    tu_u32(b, type);
    tu_u64(b, off);
}

TestSuite(gguf_bad, .init = setup, .fini = teardown);

Test(gguf_bad, empty_file) { expect("", 0, DEG_ERR_FORMAT, "empty file", NULL); }

Test(gguf_bad, wrong_magic)
{
    expect("GGML\3\0\0\0", 8, DEG_ERR_FORMAT, "not a GGUF file", "GGML");
    expect("PK", 2, DEG_ERR_FORMAT, "not a GGUF file", NULL);
}

Test(gguf_bad, unsupported_versions)
{
    tu_buf b = {0};
    header(&b, 1, 0, 0);
    expect(b.p, b.n, DEG_ERR_UNSUPPORTED, "version 1", NULL);
    b.n = 0;
    header(&b, 4, 0, 0);
    expect(b.p, b.n, DEG_ERR_UNSUPPORTED, "version 4", NULL);
    b.n = 0;
    header(&b, 0x03000000, 0, 0);
    expect(b.p, b.n, DEG_ERR_UNSUPPORTED, "big-endian", NULL);
    b.n = 0;
    header(&b, 2, 0, 0); /* v2 has the same layout: accepted */
    expect(b.p, b.n, DEG_OK, NULL, NULL);
    free(b.p);
}

Test(gguf_bad, truncated_header)
{
    tu_buf b = {0};
    header(&b, 3, 0, 0);
    expect(b.p, 10, DEG_ERR_FORMAT, "truncated", "tensor count");
    expect(b.p, 20, DEG_ERR_FORMAT, "truncated", "metadata count");
    free(b.p);
}

Test(gguf_bad, every_truncation_of_a_real_file_fails_cleanly)
{
    size_t n;
    uint8_t *full = tu_read(SMALL, &n);
    cr_assert_not_null(full);
    /* every prefix up to the data section, then a few inside the data; the
     * last 64 bytes may be padding after the last tensor */
    for (size_t len = 0; len < n - 64; len += (len < 2200 ? 1 : 97)) {
        char *p = tu_path(tmpdir, "trunc.gguf");
        tu_write(p, full, len);
        dg_gguf *g;
        deg_status s = dg_gguf_open(p, &g);
        cr_assert_eq(s, DEG_ERR_FORMAT, "prefix of %zu bytes: %s (%s)", len, deg_status_name(s),
                     deg_errmsg());
        cr_assert_null(g);
        free(p);
    }
    free(full);
}

Test(gguf_bad, corrupted_bytes_never_crash)
{
    size_t n;
    uint8_t *full = tu_read(SMALL, &n);
    uint64_t rng = 88172645463325252ull;
    char *p = tu_path(tmpdir, "fuzz.gguf");
    for (int iter = 0; iter < 400; iter++) {
        uint8_t *c = malloc(n);
        memcpy(c, full, n);
        for (int k = 0; k < 3; k++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            size_t at = (size_t)(rng % 2200);
            c[at] = (uint8_t)(rng >> 32);
        }
        tu_write(p, c, n);
        dg_gguf *g;
        deg_status s = dg_gguf_open(p, &g);
        if (s == DEG_OK) {
            for (size_t i = 0; i < dg_gguf_n_tensors(g); i++) cr_assert_not_null(dg_gguf_tensor(g, i)->name);
            dg_gguf_close(g);
        } else {
            cr_assert(s == DEG_ERR_FORMAT || s == DEG_ERR_UNSUPPORTED, "%s", deg_errmsg());
            cr_assert(strlen(deg_errmsg()) > 0);
        }
        free(c);
    }
    free(p);
    free(full);
}

Test(gguf_bad, string_length_past_eof)
{
    tu_buf b = {0};
    header(&b, 3, 0, 1);
    tu_u64(&b, 1000); /* key length */
    for (int k = 0; k < 100; k++) tu_u8(&b, 'a');
    expect(b.p, b.n, DEG_ERR_FORMAT, "string length 1000", "past the end");
    b.n = 0;
    header(&b, 3, 0, 1);
    tu_str(&b, "k");
    tu_u32(&b, DG_GGUF_STRING);
    tu_u64(&b, UINT64_MAX); /* value length */
    expect(b.p, b.n, DEG_ERR_FORMAT, "past the end", NULL);
    free(b.p);
}

Test(gguf_bad, huge_counts_rejected_without_allocation)
{
    tu_buf b = {0};
    header(&b, 3, 0, UINT64_MAX / 2);
    expect(b.p, b.n, DEG_ERR_FORMAT, "metadata count", "cannot fit");
    b.n = 0;
    header(&b, 3, 1ull << 60, 0);
    expect(b.p, b.n, DEG_ERR_FORMAT, "tensor count", "cannot fit");
    b.n = 0;
    header(&b, 3, 0, 1);
    tu_str(&b, "arr");
    tu_u32(&b, DG_GGUF_ARRAY);
    tu_u32(&b, DG_GGUF_UINT32);
    tu_u64(&b, 1ull << 61);
    expect(b.p, b.n, DEG_ERR_FORMAT, "'arr'", "does not fit");
    b.n = 0;
    header(&b, 3, 0, 1);
    tu_str(&b, "arrs");
    tu_u32(&b, DG_GGUF_ARRAY);
    tu_u32(&b, DG_GGUF_STRING);
    tu_u64(&b, 1ull << 40);
    tu_u64(&b, 0);
    expect(b.p, b.n, DEG_ERR_FORMAT, "'arrs'", "does not fit");
    free(b.p);
}

Test(gguf_bad, invalid_types_and_nesting)
{
    tu_buf b = {0};
    header(&b, 3, 0, 1);
    tu_str(&b, "k");
    tu_u32(&b, 13);
    tu_u64(&b, 0);
    expect(b.p, b.n, DEG_ERR_FORMAT, "invalid value type 13", NULL);
    b.n = 0;
    header(&b, 3, 0, 1);
    tu_str(&b, "deep");
    tu_u32(&b, DG_GGUF_ARRAY);
    for (int k = 0; k < 20; k++) {
        tu_u32(&b, DG_GGUF_ARRAY);
        tu_u64(&b, 1);
    }
    tu_u32(&b, DG_GGUF_UINT8);
    tu_u64(&b, 0);
    expect(b.p, b.n, DEG_ERR_FORMAT, "nested deeper", NULL);
    b.n = 0;
    header(&b, 3, 0, 2);
    tu_str(&b, "dup");
    tu_u32(&b, DG_GGUF_UINT8);
    tu_u8(&b, 1);
    tu_str(&b, "dup");
    tu_u32(&b, DG_GGUF_UINT8);
    tu_u8(&b, 1);
    expect(b.p, b.n, DEG_ERR_FORMAT, "duplicate metadata key 'dup'", NULL);
    free(b.p);
}

/* A valid one-tensor file: F32 [8] at offset off, alignment 32. */
static void one_tensor(tu_buf *b, const char *name, uint32_t nd, const uint64_t *ne,
                       uint32_t type, uint64_t off, size_t data_bytes)
{
    header(b, 3, 1, 0);
    tinfo(b, name, nd, ne, type, off);
    tu_pad(b, 32);
    for (size_t k = 0; k < data_bytes; k++) tu_u8(b, (uint8_t)k);
}

Test(gguf_bad, tensor_checks)
{
    tu_buf b = {0};
    one_tensor(&b, "ok", 1, (uint64_t[]){8}, 0, 0, 32);
    expect(b.p, b.n, DEG_OK, NULL, NULL);
    b.n = 0;
    one_tensor(&b, "short", 1, (uint64_t[]){8}, 0, 0, 31);
    expect(b.p, b.n, DEG_ERR_FORMAT, "'short'", "past the end");
    b.n = 0;
    one_tensor(&b, "far", 1, (uint64_t[]){8}, 0, 1ull << 40, 32);
    expect(b.p, b.n, DEG_ERR_FORMAT, "'far'", "past the end");
    b.n = 0;
    one_tensor(&b, "wrap", 1, (uint64_t[]){8}, 0, UINT64_MAX - 31, 32);
    expect(b.p, b.n, DEG_ERR_FORMAT, "'wrap'", NULL);
    b.n = 0;
    one_tensor(&b, "mis", 1, (uint64_t[]){4}, 0, 16, 64);
    expect(b.p, b.n, DEG_ERR_FORMAT, "'mis'", "not a multiple of the alignment 32");
    b.n = 0;
    one_tensor(&b, "blk.0.ffn_down.weight", 1, (uint64_t[]){256}, 13 /* Q5_K */, 0, 176);
    expect(b.p, b.n, DEG_ERR_UNSUPPORTED, "'blk.0.ffn_down.weight'", "Q5_K");
    b.n = 0;
    one_tensor(&b, "odd", 1, (uint64_t[]){16}, 2 /* Q4_0 */, 0, 64);
    expect(b.p, b.n, DEG_ERR_FORMAT, "'odd'", "block size 32");
    b.n = 0;
    one_tensor(&b, "dims5", 5, (uint64_t[]){1, 1, 1, 1, 1}, 0, 0, 32);
    expect(b.p, b.n, DEG_ERR_FORMAT, "'dims5'", "5 dimensions");
    b.n = 0;
    one_tensor(&b, "huge", 2, (uint64_t[]){1ull << 40, 1ull << 40}, 0, 0, 32);
    expect(b.p, b.n, DEG_ERR_FORMAT, "'huge'", "overflow");
    b.n = 0;
    one_tensor(&b, "big", 2, (uint64_t[]){1ull << 20, 1ull << 20}, 0, 0, 32);
    expect(b.p, b.n, DEG_ERR_FORMAT, "'big'", "past the end");
    /* two tensors: duplicate names, overlap */
    b.n = 0;
    header(&b, 3, 2, 0);
    tinfo(&b, "a", 1, (uint64_t[]){8}, 0, 0);
    tinfo(&b, "a", 1, (uint64_t[]){8}, 0, 32);
    tu_pad(&b, 32);
    for (int k = 0; k < 64; k++) tu_u8(&b, 0);
    expect(b.p, b.n, DEG_ERR_FORMAT, "duplicate tensor name 'a'", NULL);
    b.n = 0;
    header(&b, 3, 2, 0);
    tinfo(&b, "x", 1, (uint64_t[]){16}, 0, 0);
    tinfo(&b, "y", 1, (uint64_t[]){8}, 0, 32);
    tu_pad(&b, 32);
    for (int k = 0; k < 96; k++) tu_u8(&b, 0);
    expect(b.p, b.n, DEG_ERR_FORMAT, "overlap", "'x'");
    free(b.p);
}

Test(gguf_bad, bad_alignment_value)
{
    tu_buf b = {0};
    header(&b, 3, 0, 1);
    tu_str(&b, "general.alignment");
    tu_u32(&b, DG_GGUF_UINT32);
    tu_u32(&b, 24);
    expect(b.p, b.n, DEG_ERR_FORMAT, "general.alignment", "power of two");
    b.n = 0;
    header(&b, 3, 0, 1);
    tu_str(&b, "general.alignment");
    tu_u32(&b, DG_GGUF_STRING);
    tu_str(&b, "32");
    expect(b.p, b.n, DEG_ERR_FORMAT, "general.alignment", "expected an unsigned integer");
    free(b.p);
}

Test(gguf_bad, missing_file)
{
    dg_gguf *g;
    cr_assert_eq(dg_gguf_open("/nonexistent/m.gguf", &g), DEG_ERR_IO);
    cr_assert(strstr(deg_errmsg(), "/nonexistent/m.gguf"));
}

/* ---- a column order on quantized blocks ---------------------------------- */

/* A GGUF holding one Q8_0 matrix "w" [rows, cols] of varied blocks. */
static char *q8_matrix_file(int64_t rows, int64_t cols)
{
    tu_buf b = {0};
    uint64_t ne[2] = {(uint64_t)cols, (uint64_t)rows};
    header(&b, 3, 1, 0);
    tinfo(&b, "w", 2, ne, 8 /* GGML_TYPE_Q8_0 */, 0);
    tu_pad(&b, 32);
    for (int64_t k = 0; k < rows * cols / 32; k++) {
        uint16_t d = dg_f32_to_f16(0.01f * (float)(k + 1));
        tu_put(&b, &d, 2);
        for (int j = 0; j < 32; j++) tu_u8(&b, (uint8_t)(int8_t)((k * 37 + j * 11) % 255 - 127));
    }
    char *p = tu_path(tmpdir, "q8.gguf");
    tu_write(p, b.p, b.n);
    free(b.p);
    return p;
}

/* The matrix as dg_weight_get_matrix_mapped loads it with column order
 * col_map, native blocks or f32; each row dequantized into rows_out. */
static dg_dtype load_mapped(const char *path, int native, const int32_t *col_map, int64_t rows,
                            int64_t cols, float *rows_out)
{
    deg_model *m = calloc(1, sizeof *m);
    cr_assert_eq(dg_gguf_open(path, &m->src.gguf), DEG_OK, "%s", deg_errmsg());
    m->native_weights = native;
    m->f32_act = 1;
    dg_weight w;
    cr_assert_eq(dg_weight_get_matrix_mapped(m, "w", NULL, 0, rows, cols, NULL, col_map, &w),
                 DEG_OK, "%s", deg_errmsg());
    for (int64_t r = 0; r < rows; r++) dg_weight_get_row(&w, r, rows_out + r * cols);
    deg_model_free(m);
    return w.dtype;
}

/* Qwen3.5's value heads reordered by llama.cpp's converter (out_proj's
 * columns): with heads as wide as a multiple of the block, the native matrix
 * keeps its Q8_0 blocks, moved, and dequantizes to exactly the f32 reorder;
 * heads narrower than a block cannot be moved intact, so that matrix is f32. */
Test(gguf_weights, quantized_column_order_moves_whole_blocks, .init = setup, .fini = teardown)
{
    enum { R = 3, C = 256 };
    char *p = q8_matrix_file(R, C);
    /* llama.cpp's tiled order of 2 key heads (q35_head_maps): logical value
     * head h = kh * r + j is file head j * 2 + kh, r = heads / 2 */
    static float nat[R * C], f32[R * C], plain[R * C];
    int32_t mapA[C], map16[C];
    for (int c = 0; c < C; c++) {
        int h = c / 32, g = c / 16; /* 8 heads of 32 columns; 16 heads of 16 */
        mapA[c] = (h % 4 * 2 + h / 4) * 32 + c % 32;
        map16[c] = (g % 8 * 2 + g / 8) * 16 + c % 16;
    }
    cr_assert_eq(load_mapped(p, 1, mapA, R, C, nat), DG_Q8_0);
    cr_assert_eq(load_mapped(p, 0, mapA, R, C, f32), DG_F32);
    cr_assert_eq(load_mapped(p, 1, NULL, R, C, plain), DG_Q8_0);
    cr_assert(memcmp(nat, f32, sizeof nat) == 0);
    cr_assert(memcmp(nat, plain, sizeof nat) != 0); /* the order did move the blocks */
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) cr_assert_eq(f32[r * C + c], plain[r * C + mapA[c]]);
    cr_assert_eq(load_mapped(p, 1, map16, R, C, nat), DG_F32);
    cr_assert_eq(load_mapped(p, 0, map16, R, C, f32), DG_F32);
    cr_assert(memcmp(nat, f32, sizeof nat) == 0);
    free(p);
}

/* ---- the real model (skipped when absent) ------------------------------- */

static const char *model_path(char *buf, size_t cap)
{
    return tu_default_model(buf, cap);
}

Test(gguf, real_smollm2_model)
{
    char buf[1024];
    const char *path = model_path(buf, sizeof buf);
    if (!path) cr_skip_test("SmolLM2 GGUF not found (set DEG_MODEL or run scripts/fetch-model)");
    dg_gguf *g;
    cr_assert_eq(dg_gguf_open(path, &g), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(dg_gguf_n_tensors(g), 272);
    dg_gguf_str s;
    cr_assert_eq(dg_gguf_get_str(g, "general.architecture", &s), DEG_OK);
    cr_assert(str_eq(s, "llama"));
    uint64_t n;
    cr_assert_eq(dg_gguf_get_u64(g, "llama.block_count", &n), DEG_OK);
    cr_assert_eq(n, 30);
    dg_gguf_type et;
    cr_assert_eq(dg_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, NULL), DEG_OK);
    cr_assert_eq(et, DG_GGUF_STRING);
    cr_assert_eq(n, 49152);
    cr_assert_eq(dg_gguf_arr_str(g, "tokenizer.ggml.tokens", n - 1, &s), DEG_OK);
    const dg_tensor_view *t = dg_gguf_find(g, "token_embd.weight");
    cr_assert_not_null(t);
    cr_assert_eq(t->dtype, DG_Q8_0);
    cr_assert(t->n_dims == 2 && t->shape[0] == 49152 && t->shape[1] == 576);
    t = dg_gguf_find(g, "blk.0.ffn_down.weight");
    cr_assert(t && t->dtype == DG_Q4_1 && t->shape[0] == 576 && t->shape[1] == 1536);
    float *row = malloc(1536 * sizeof *row);
    cr_assert_eq(dg_dequantize(t->dtype, t->data, row, 1536), DEG_OK);
    double sum = 0;
    for (int k = 0; k < 1536; k++) {
        cr_assert(isfinite(row[k]));
        sum += fabs(row[k]);
    }
    cr_assert(sum > 0);
    free(row);
    dg_gguf_close(g);
}
