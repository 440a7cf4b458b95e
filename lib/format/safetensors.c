/* safetensors reader, writer and sharded checkpoints. Format
 * (huggingface/safetensors README): u64 little-endian header length N, N
 * bytes of UTF-8 JSON {name: {"dtype", "shape", "data_offsets": [begin,
 * end]}, "__metadata__": {str: str}}, then the byte buffer; offsets are
 * relative to the buffer. The reference implementation caps N at 100 MB. */
#include "format/safetensors.h"

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fileio.h"
#include "base/grow.h"
#include "base/status.h"
#include "base/strmap.h"
#include "base/utf8.h"

#define ST_MAX_HEADER (100u * 1000u * 1000u)

/* dtype names and the reference writer's ordering rank (higher first: the
 * Rust Dtype enum order, which the writer sorts by, descending). */
static const struct {
    const char *name;
    dg_dtype dtype;
    int rank;
} st_dtypes[] = {
    {"I64", DG_I64, 10}, {"F64", DG_F64, 9}, {"F32", DG_F32, 8},   {"I32", DG_I32, 7},
    {"BF16", DG_BF16, 6}, {"F16", DG_F16, 5}, {"I16", DG_I16, 4},  {"I8", DG_I8, 3},
    {"U8", DG_U8, 2},     {"BOOL", DG_BOOL, 1},
};
#define N_ST_DTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

static int dtype_from_name(const char *s, dg_dtype *out)
{
    for (size_t i = 0; i < N_ST_DTYPES; i++)
        if (strcmp(st_dtypes[i].name, s) == 0) {
            *out = st_dtypes[i].dtype;
            return 1;
        }
    return 0;
}

static int dtype_index(dg_dtype t)
{
    for (size_t i = 0; i < N_ST_DTYPES; i++)
        if (st_dtypes[i].dtype == t) return (int)i;
    return -1;
}

/* ---- reader ----------------------------------------------------------------- */

struct dg_safetensors {
    dg_mapping map;
    char *path;
    size_t n_tensors;
    dg_tensor_view *tensors;
    char **names;
    size_t n_meta;
    char **meta_keys;
    char **meta_vals;
    dg_strmap index;
};

void dg_safetensors_close(dg_safetensors *st)
{
    if (!st) return;
    for (size_t i = 0; i < st->n_tensors; i++) free(st->names[i]);
    for (size_t i = 0; i < st->n_meta; i++) {
        free(st->meta_keys[i]);
        free(st->meta_vals[i]);
    }
    free(st->names);
    free(st->tensors);
    free(st->meta_keys);
    free(st->meta_vals);
    dg_strmap_free(&st->index);
    dg_unmap(&st->map);
    free(st->path);
    free(st);
}

typedef struct extent {
    uint64_t begin, end;
    size_t i;
} extent;

static int cmp_extent(const void *a, const void *b)
{
    const extent *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static deg_status parse_tensor(dg_safetensors *st, const char *name, json_t *info,
                               uint64_t data_size, dg_tensor_view *t, extent *ext)
{
    const char *p = st->path;
    if (!json_is_object(info))
        return dg_fail(DEG_ERR_FORMAT, "%s: header entry '%s' is not an object", p, name);
    json_t *jd = json_object_get(info, "dtype");
    json_t *js = json_object_get(info, "shape");
    json_t *jo = json_object_get(info, "data_offsets");
    if (!json_is_string(jd))
        return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s': \"dtype\" missing or not a string", p, name);
    if (!json_is_array(js))
        return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s': \"shape\" missing or not an array", p, name);
    if (!json_is_array(jo) || json_array_size(jo) != 2)
        return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s': \"data_offsets\" must be [begin, end]", p, name);
    if (!dtype_from_name(json_string_value(jd), &t->dtype))
        return dg_fail(DEG_ERR_UNSUPPORTED,
                       "%s: tensor '%s' has dtype %s, which deg cannot read "
                       "(supported: F32 F16 BF16 F64 I8 I16 I32 I64 U8 BOOL)",
                       p, name, json_string_value(jd));
    size_t nd = json_array_size(js);
    if (nd > DG_MAX_DIMS)
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: tensor '%s' has %zu dimensions (deg supports at most %d)",
                       p, name, nd, DG_MAX_DIMS);
    t->n_dims = (int)nd;
    uint64_t numel = 1;
    for (size_t d = 0; d < nd; d++) {
        json_t *v = json_array_get(js, d);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s': shape[%zu] is not a non-negative integer",
                           p, name, d);
        uint64_t dim = (uint64_t)json_integer_value(v);
        if (dim && numel > UINT64_MAX / 16 / dim)
            return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s': shape overflows", p, name);
        numel *= dim;
        t->shape[d] = (int64_t)dim;
    }
    json_t *jb = json_array_get(jo, 0), *je = json_array_get(jo, 1);
    if (!json_is_integer(jb) || !json_is_integer(je) || json_integer_value(jb) < 0 ||
        json_integer_value(je) < 0)
        return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s': data_offsets are not non-negative integers", p,
                       name);
    uint64_t b = (uint64_t)json_integer_value(jb), e = (uint64_t)json_integer_value(je);
    if (b > e)
        return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin",
                       p, name, (unsigned long long)b, (unsigned long long)e);
    if (e > data_size)
        return dg_fail(DEG_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the data (%llu bytes)",
                       p, name, (unsigned long long)b, (unsigned long long)e,
                       (unsigned long long)data_size);
    uint64_t want = numel * dg_dtype_block_bytes(t->dtype);
    if (e - b != want)
        return dg_fail(DEG_ERR_FORMAT,
                       "%s: tensor '%s': shape and dtype %s need %llu bytes but data_offsets [%llu, %llu] "
                       "hold %llu",
                       p, name, json_string_value(jd), (unsigned long long)want, (unsigned long long)b,
                       (unsigned long long)e, (unsigned long long)(e - b));
    t->n_bytes = (size_t)(e - b);
    ext->begin = b;
    ext->end = e;
    return DEG_OK;
}

static deg_status parse_meta(dg_safetensors *st, json_t *meta)
{
    if (json_is_null(meta)) return DEG_OK;
    if (!json_is_object(meta))
        return dg_fail(DEG_ERR_FORMAT, "%s: \"__metadata__\" is not an object", st->path);
    size_t n = json_object_size(meta);
    st->meta_keys = calloc(n ? n : 1, sizeof(char *));
    st->meta_vals = calloc(n ? n : 1, sizeof(char *));
    if (!st->meta_keys || !st->meta_vals) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", st->path);
    const char *k;
    json_t *v;
    json_object_foreach(meta, k, v) {
        if (!json_is_string(v))
            return dg_fail(DEG_ERR_FORMAT, "%s: __metadata__ value of '%s' is not a string", st->path, k);
        st->meta_keys[st->n_meta] = strdup(k);
        st->meta_vals[st->n_meta] = strdup(json_string_value(v));
        st->n_meta++;
        if (!st->meta_keys[st->n_meta - 1] || !st->meta_vals[st->n_meta - 1])
            return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", st->path);
    }
    return DEG_OK;
}

static deg_status st_parse(dg_safetensors *st)
{
    const uint8_t *base = st->map.data;
    size_t size = st->map.size;
    if (size == 0) return dg_fail(DEG_ERR_FORMAT, "%s: empty file (not a safetensors file)", st->path);
    if (size < 8)
        return dg_fail(DEG_ERR_FORMAT, "%s: %zu bytes is too short for the 8-byte header length", st->path,
                       size);
    uint64_t n;
    memcpy(&n, base, 8);
    if (n > size - 8)
        return dg_fail(DEG_ERR_FORMAT, "%s: header length %llu is larger than the file (%zu bytes)",
                       st->path, (unsigned long long)n, size);
    if (n > ST_MAX_HEADER)
        return dg_fail(DEG_ERR_FORMAT, "%s: header length %llu exceeds the 100 MB limit", st->path,
                       (unsigned long long)n);
    if (n < 2 || base[8] != '{')
        return dg_fail(DEG_ERR_FORMAT, "%s: header is not a JSON object (not a safetensors file?)",
                       st->path);
    json_error_t err;
    json_t *root = json_loadb((const char *)base + 8, (size_t)n, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return dg_fail(DEG_ERR_FORMAT, "%s: malformed JSON header at byte %d: %s", st->path,
                       err.position, err.text);
    deg_status s = DEG_OK;
    uint64_t data_size = size - 8 - n;
    size_t cap = json_object_size(root);
    extent *ext = NULL;
    if (!json_is_object(root)) {
        s = dg_fail(DEG_ERR_FORMAT, "%s: header is not a JSON object", st->path);
        goto out;
    }
    st->tensors = calloc(cap ? cap : 1, sizeof *st->tensors);
    st->names = calloc(cap ? cap : 1, sizeof *st->names);
    ext = calloc(cap ? cap : 1, sizeof *ext);
    if (!st->tensors || !st->names || !ext) {
        s = dg_fail(DEG_ERR_NOMEM, "%s: out of memory", st->path);
        goto out;
    }
    const char *key;
    json_t *val;
    size_t nt = 0;
    json_object_foreach(root, key, val) {
        if (strcmp(key, "__metadata__") == 0) {
            s = parse_meta(st, val);
        } else {
            dg_tensor_view tv = {0};
            s = parse_tensor(st, key, val, data_size, &tv, &ext[nt]);
            if (s == DEG_OK) {
                char *nm = strdup(key);
                if (!nm) {
                    s = dg_fail(DEG_ERR_NOMEM, "%s: out of memory", st->path);
                } else {
                    st->names[nt] = nm;
                    tv.name = nm;
                    st->tensors[nt] = tv;
                    ext[nt].i = nt;
                    nt++;
                    st->n_tensors = nt;
                }
            }
        }
        if (s != DEG_OK) goto out;
    }
    /* The reference's rule (safetensors Metadata::validate + deserialize):
     * sorted by data_offsets, each tensor starts where the previous one ended
     * (the first at 0) and the last ends at the end of the file: no gap, no
     * overlap, no trailing bytes, so nothing else (another format: a
     * polyglot file) can hide in the buffer. */
    qsort(ext, nt, sizeof *ext, cmp_extent);
    uint64_t at = 0;
    for (size_t k = 0; k < nt; k++) {
        if (ext[k].begin != at) {
            const char *what = ext[k].begin > at ? "a gap" : "an overlap";
            if (k == 0)
                s = dg_fail(DEG_ERR_FORMAT, "%s: the first tensor '%s' starts at data offset %llu, "
                            "not 0 (the data must be the tensors back to back)", st->path,
                            st->names[ext[k].i], (unsigned long long)ext[k].begin);
            else
                s = dg_fail(DEG_ERR_FORMAT, "%s: %s in the data between tensors '%s' (ends at "
                            "%llu) and '%s' (begins at %llu): the data must be the tensors back to "
                            "back", st->path, what, st->names[ext[k - 1].i],
                            (unsigned long long)at, st->names[ext[k].i],
                            (unsigned long long)ext[k].begin);
            goto out;
        }
        at = ext[k].end;
    }
    if (at != data_size) {
        s = dg_fail(DEG_ERR_FORMAT, "%s: %llu bytes after the last tensor (the data is %llu bytes, "
                    "the tensors cover %llu): trailing bytes are refused, as the safetensors "
                    "reference does", st->path, (unsigned long long)(data_size - at),
                    (unsigned long long)data_size, (unsigned long long)at);
        goto out;
    }
    {
        dg_tensor_view *sorted = malloc((nt ? nt : 1) * sizeof *sorted);
        char **snames = malloc((nt ? nt : 1) * sizeof *snames);
        if (!sorted || !snames) {
            free(sorted);
            free(snames);
            s = dg_fail(DEG_ERR_NOMEM, "%s: out of memory", st->path);
            goto out;
        }
        for (size_t k = 0; k < nt; k++) {
            sorted[k] = st->tensors[ext[k].i];
            sorted[k].data = base + 8 + n + ext[k].begin;
            snames[k] = st->names[ext[k].i];
        }
        free(st->tensors);
        free(st->names);
        st->tensors = sorted;
        st->names = snames;
    }
    if (dg_strmap_init(&st->index, nt) != 0) {
        s = dg_fail(DEG_ERR_NOMEM, "%s: out of memory", st->path);
        goto out;
    }
    for (size_t k = 0; k < nt; k++) dg_strmap_put(&st->index, st->names[k], k, NULL);
out:
    free(ext);
    json_decref(root);
    return s;
}

deg_status dg_safetensors_open(const char *path, dg_safetensors **out)
{
    *out = NULL;
    if (!path) return dg_fail(DEG_ERR_ARG, "dg_safetensors_open: path is NULL");
    dg_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return dg_fail(DEG_ERR_NOMEM, "out of memory");
    }
    deg_status s = dg_map_file(path, &st->map);
    if (s == DEG_OK) s = st_parse(st);
    if (s != DEG_OK) {
        dg_safetensors_close(st);
        return s;
    }
    *out = st;
    return DEG_OK;
}

size_t dg_safetensors_n_tensors(const dg_safetensors *st) { return st->n_tensors; }

const dg_tensor_view *dg_safetensors_tensor(const dg_safetensors *st, size_t i)
{
    return i < st->n_tensors ? &st->tensors[i] : NULL;
}

const dg_tensor_view *dg_safetensors_find(const dg_safetensors *st, const char *name)
{
    size_t i;
    return dg_strmap_get(&st->index, name, &i) ? &st->tensors[i] : NULL;
}

const char *dg_safetensors_meta(const dg_safetensors *st, const char *key)
{
    for (size_t i = 0; i < st->n_meta; i++)
        if (strcmp(st->meta_keys[i], key) == 0) return st->meta_vals[i];
    return NULL;
}

/* ---- writer ----------------------------------------------------------------- */

typedef struct wt_tensor {
    char *name;
    dg_dtype dtype;
    int n_dims;
    int64_t shape[DG_MAX_DIMS];
    const void *data;
    size_t n_bytes;
} wt_tensor;

struct dg_st_writer {
    wt_tensor *t;
    size_t n, cap;
    char **mk, **mv;
    size_t n_meta, cap_meta;
};

deg_status dg_st_writer_new(dg_st_writer **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? DEG_OK : dg_fail(DEG_ERR_NOMEM, "out of memory");
}

void dg_st_writer_free(dg_st_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free(w->t[i].name);
    for (size_t i = 0; i < w->n_meta; i++) {
        free(w->mk[i]);
        free(w->mv[i]);
    }
    free(w->t);
    free(w->mk);
    free(w->mv);
    free(w);
}

deg_status dg_st_writer_add(dg_st_writer *w, const char *name, dg_dtype dtype, int n_dims,
                            const int64_t *shape, const void *data)
{
    if (!w || !name || !*name) return dg_fail(DEG_ERR_ARG, "safetensors writer: empty tensor name");
    if (strcmp(name, "__metadata__") == 0)
        return dg_fail(DEG_ERR_ARG, "safetensors writer: '__metadata__' is reserved");
    if (!dg_utf8_validate(name, strlen(name), NULL))
        return dg_fail(DEG_ERR_ARG, "safetensors writer: tensor name is not valid UTF-8");
    if (dtype_index(dtype) < 0)
        return dg_fail(DEG_ERR_UNSUPPORTED, "safetensors writer: tensor '%s': dtype %s cannot be stored",
                       name, dg_dtype_name(dtype));
    if (n_dims < 0 || n_dims > DG_MAX_DIMS || (n_dims > 0 && !shape))
        return dg_fail(DEG_ERR_ARG, "safetensors writer: tensor '%s': %d dimensions", name, n_dims);
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return dg_fail(DEG_ERR_ARG, "safetensors writer: duplicate tensor '%s'", name);
    uint64_t numel = 1;
    for (int d = 0; d < n_dims; d++) {
        if (shape[d] < 0 || (shape[d] && numel > (uint64_t)INT64_MAX / 16 / (uint64_t)shape[d]))
            return dg_fail(DEG_ERR_ARG, "safetensors writer: tensor '%s': bad shape[%d] = %lld", name, d,
                           (long long)shape[d]);
        numel *= (uint64_t)shape[d];
    }
    size_t nb = (size_t)numel * dg_dtype_block_bytes(dtype);
    if (nb && !data) return dg_fail(DEG_ERR_ARG, "safetensors writer: tensor '%s' has no data", name);
    deg_status st = DG_GROW(w->t, w->cap, w->n + 1);
    if (st != DEG_OK) return dg_fail_context(st, "safetensors writer");
    wt_tensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name))) return dg_fail(DEG_ERR_NOMEM, "out of memory");
    t->dtype = dtype;
    t->n_dims = n_dims;
    for (int d = 0; d < n_dims; d++) t->shape[d] = shape[d];
    t->data = data;
    t->n_bytes = nb;
    w->n++;
    return DEG_OK;
}

deg_status dg_st_writer_meta(dg_st_writer *w, const char *key, const char *value)
{
    if (!w || !key || !value) return dg_fail(DEG_ERR_ARG, "safetensors writer: NULL metadata");
    if (!dg_utf8_validate(key, strlen(key), NULL) || !dg_utf8_validate(value, strlen(value), NULL))
        return dg_fail(DEG_ERR_ARG, "safetensors writer: metadata '%s' is not valid UTF-8", key);
    for (size_t i = 0; i < w->n_meta; i++)
        if (strcmp(w->mk[i], key) == 0) {
            char *v = strdup(value);
            if (!v) return dg_fail(DEG_ERR_NOMEM, "out of memory");
            free(w->mv[i]);
            w->mv[i] = v;
            return DEG_OK;
        }
    void *const arrs[] = {&w->mk, &w->mv};
    const size_t elems[] = {sizeof *w->mk, sizeof *w->mv};
    deg_status st = dg_grow_all(arrs, elems, 2, &w->cap_meta, w->n_meta + 1);
    if (st != DEG_OK) return dg_fail_context(st, "safetensors writer");
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return dg_fail(DEG_ERR_NOMEM, "out of memory");
    }
    w->mk[w->n_meta] = k;
    w->mv[w->n_meta] = v;
    w->n_meta++;
    return DEG_OK;
}

static int cmp_wt(const void *a, const void *b)
{
    const wt_tensor *x = *(const wt_tensor *const *)a, *y = *(const wt_tensor *const *)b;
    int rx = st_dtypes[dtype_index(x->dtype)].rank, ry = st_dtypes[dtype_index(y->dtype)].rank;
    if (rx != ry) return ry - rx;
    return strcmp(x->name, y->name);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

deg_status dg_st_writer_commit(dg_st_writer *w, const char *path)
{
    if (!w || !path) return dg_fail(DEG_ERR_ARG, "safetensors writer: NULL argument");
    deg_status s = DEG_OK;
    const wt_tensor **order = malloc((w->n ? w->n : 1) * sizeof *order);
    const char **mkeys = malloc((w->n_meta ? w->n_meta : 1) * sizeof *mkeys);
    dg_chunk *chunks = malloc((w->n + 2) * sizeof *chunks);
    json_t *root = json_object();
    char *hdr = NULL;
    if (!order || !mkeys || !chunks || !root) {
        s = dg_fail(DEG_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < w->n; i++) order[i] = &w->t[i];
    qsort(order, w->n, sizeof *order, cmp_wt);
    if (w->n_meta) {
        json_t *meta = json_object();
        for (size_t i = 0; i < w->n_meta; i++) mkeys[i] = w->mk[i];
        qsort(mkeys, w->n_meta, sizeof *mkeys, cmp_str);
        for (size_t i = 0; i < w->n_meta; i++)
            for (size_t j = 0; j < w->n_meta; j++)
                if (w->mk[j] == mkeys[i]) json_object_set_new(meta, mkeys[i], json_string(w->mv[j]));
        json_object_set_new(root, "__metadata__", meta);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n; i++) {
        const wt_tensor *t = order[i];
        json_t *info = json_object(), *shape = json_array(), *offs = json_array();
        for (int d = 0; d < t->n_dims; d++) json_array_append_new(shape, json_integer(t->shape[d]));
        json_array_append_new(offs, json_integer((json_int_t)off));
        json_array_append_new(offs, json_integer((json_int_t)(off + t->n_bytes)));
        json_object_set_new(info, "dtype", json_string(st_dtypes[dtype_index(t->dtype)].name));
        json_object_set_new(info, "shape", shape);
        json_object_set_new(info, "data_offsets", offs);
        json_object_set_new(root, t->name, info);
        off += t->n_bytes;
    }
    hdr = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!hdr) {
        s = dg_fail(DEG_ERR_NOMEM, "safetensors writer: cannot serialise the header");
        goto out;
    }
    size_t hl = strlen(hdr), padded = (hl + 7) / 8 * 8;
    char *ph = realloc(hdr, padded + 8);
    if (!ph) {
        s = dg_fail(DEG_ERR_NOMEM, "out of memory");
        goto out;
    }
    hdr = ph;
    memmove(hdr + 8, hdr, hl);
    memset(hdr + 8 + hl, ' ', padded - hl);
    uint64_t n64 = padded;
    memcpy(hdr, &n64, 8);
    chunks[0].data = hdr;
    chunks[0].len = padded + 8;
    for (size_t i = 0; i < w->n; i++) {
        chunks[i + 1].data = order[i]->data;
        chunks[i + 1].len = order[i]->n_bytes;
    }
    s = dg_write_atomic(path, chunks, w->n + 1);
out:
    free(order);
    free(mkeys);
    free(chunks);
    free(hdr);
    json_decref(root);
    return s;
}

/* ---- sharded checkpoints ---------------------------------------------------- */

struct dg_st_set {
    char *dir;
    size_t n_files, cap_files;
    dg_safetensors **files;
    size_t n_tensors;
    const dg_tensor_view **tensors;
    dg_strmap index;
};

void dg_st_set_close(dg_st_set *set)
{
    if (!set) return;
    for (size_t i = 0; i < set->n_files; i++) dg_safetensors_close(set->files[i]);
    free(set->files);
    free(set->tensors);
    dg_strmap_free(&set->index);
    free(set->dir);
    free(set);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static deg_status set_add_file(dg_st_set *set, const char *path)
{
    DG_TRY(DG_GROW(set->files, set->cap_files, set->n_files + 1));
    DG_TRY(dg_safetensors_open(path, &set->files[set->n_files]));
    set->n_files++;
    return DEG_OK;
}

static deg_status set_index_tensors(dg_st_set *set)
{
    size_t n = 0;
    for (size_t f = 0; f < set->n_files; f++) n += set->files[f]->n_tensors;
    set->tensors = malloc((n ? n : 1) * sizeof *set->tensors);
    if (!set->tensors || dg_strmap_init(&set->index, n) != 0) return dg_fail(DEG_ERR_NOMEM, "out of memory");
    for (size_t f = 0; f < set->n_files; f++)
        for (size_t i = 0; i < set->files[f]->n_tensors; i++) {
            const dg_tensor_view *t = &set->files[f]->tensors[i];
            size_t old;
            if (dg_strmap_put(&set->index, t->name, set->n_tensors, &old) == 0) {
                size_t g = 0;
                while (g < f && !dg_safetensors_find(set->files[g], t->name)) g++;
                return dg_fail(DEG_ERR_FORMAT, "tensor '%s' is in two shards: %s and %s", t->name,
                               set->files[g]->path, set->files[f]->path);
            }
            set->tensors[set->n_tensors++] = t;
        }
    return DEG_OK;
}

static deg_status set_from_index(dg_st_set *set, const char *index_path)
{
    char *text = NULL;
    DG_TRY(dg_read_file(index_path, 64u << 20, &text, NULL));
    json_error_t err;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    free(text);
    if (!root)
        return dg_fail(DEG_ERR_FORMAT, "%s: malformed JSON at line %d: %s", index_path, err.line, err.text);
    deg_status s = DEG_OK;
    json_t *wm = json_object_get(root, "weight_map");
    const char *tname;
    json_t *fv;
    char **shards = NULL;
    size_t n_shards = 0;
    if (!json_is_object(wm)) {
        s = dg_fail(DEG_ERR_FORMAT, "%s: no \"weight_map\" object", index_path);
        goto out;
    }
    shards = calloc(json_object_size(wm) + 1, sizeof *shards);
    if (!shards) {
        s = dg_fail(DEG_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* unique shard names, in order of first mention */
    json_object_foreach(wm, tname, fv) {
        const char *f = json_string_value(fv);
        if (!f || !*f || strchr(f, '/') || strcmp(f, "..") == 0 || strcmp(f, ".") == 0) {
            s = dg_fail(DEG_ERR_FORMAT, "%s: weight_map entry '%s' does not name a file in the same directory",
                        index_path, tname);
            goto out;
        }
        size_t k = 0;
        while (k < n_shards && strcmp(shards[k], f) != 0) k++;
        if (k == n_shards) shards[n_shards++] = (char *)f;
    }
    if (n_shards == 0) {
        s = dg_fail(DEG_ERR_FORMAT, "%s: weight_map is empty", index_path);
        goto out;
    }
    for (size_t k = 0; k < n_shards && s == DEG_OK; k++) {
        char *p = dg_path_join(set->dir, shards[k]);
        if (!p) {
            s = dg_fail(DEG_ERR_NOMEM, "out of memory");
            break;
        }
        s = set_add_file(set, p);
        free(p);
    }
    if (s == DEG_OK) s = set_index_tensors(set);
    if (s != DEG_OK) goto out;
    /* every listed tensor is in the shard the index names */
    json_object_foreach(wm, tname, fv) {
        size_t i;
        const char *f = json_string_value(fv);
        if (!dg_strmap_get(&set->index, tname, &i)) {
            s = dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s' is listed in the weight_map but missing from %s",
                        index_path, tname, f);
            goto out;
        }
        size_t k = 0;
        while (k < n_shards && strcmp(shards[k], f) != 0) k++;
        if (dg_safetensors_find(set->files[k], tname) != set->tensors[i]) {
            s = dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s' is listed in %s but stored in another shard",
                        index_path, tname, f);
            goto out;
        }
    }
out:
    free(shards);
    json_decref(root);
    return s;
}

deg_status dg_st_set_open(const char *path, dg_st_set **out)
{
    *out = NULL;
    if (!path) return dg_fail(DEG_ERR_ARG, "dg_st_set_open: path is NULL");
    dg_st_set *set = calloc(1, sizeof *set);
    if (!set) return dg_fail(DEG_ERR_NOMEM, "out of memory");
    deg_status s;
    char *index = NULL, *single = NULL;
    if (is_dir(path)) {
        set->dir = strdup(path);
        index = dg_path_join(path, "model.safetensors.index.json");
        single = dg_path_join(path, "model.safetensors");
        if (!set->dir || !index || !single) {
            s = dg_fail(DEG_ERR_NOMEM, "out of memory");
        } else if (is_file(index)) {
            s = set_from_index(set, index);
        } else if (is_file(single)) {
            s = set_add_file(set, single);
            if (s == DEG_OK) s = set_index_tensors(set);
        } else {
            s = dg_fail(DEG_ERR_IO, "%s: no model.safetensors.index.json or model.safetensors in this directory",
                        path);
        }
    } else {
        set->dir = dg_dir_of(path);
        if (!set->dir)
            s = dg_fail(DEG_ERR_NOMEM, "out of memory");
        else if (ends_with(path, ".json"))
            s = set_from_index(set, path);
        else {
            s = set_add_file(set, path);
            if (s == DEG_OK) s = set_index_tensors(set);
        }
    }
    free(index);
    free(single);
    if (s != DEG_OK) {
        dg_st_set_close(set);
        return s;
    }
    *out = set;
    return DEG_OK;
}

size_t dg_st_set_n_tensors(const dg_st_set *set) { return set->n_tensors; }
size_t dg_st_set_n_files(const dg_st_set *set) { return set->n_files; }
const char *dg_st_set_dir(const dg_st_set *set) { return set->dir; }

const dg_tensor_view *dg_st_set_tensor(const dg_st_set *set, size_t i)
{
    return i < set->n_tensors ? set->tensors[i] : NULL;
}

const dg_tensor_view *dg_st_set_find(const dg_st_set *set, const char *name)
{
    size_t i;
    return dg_strmap_get(&set->index, name, &i) ? set->tensors[i] : NULL;
}
