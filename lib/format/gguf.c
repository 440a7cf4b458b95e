/* GGUF reader. Layout (ggml docs/gguf.md, v2/v3; v3 only adds big-endian
 * files, which are rejected here):
 *   u32 magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
 *   n_kv x { string key | u32 type | value }
 *   n_tensors x { string name | u32 n_dims | u64 ne[n_dims] (innermost first)
 *                 | u32 ggml_type | u64 offset (relative to the data section) }
 *   padding to general.alignment (default 32) | tensor data
 *   string = u64 len + bytes (no NUL); array = u32 elem_type + u64 n + elems.
 * Every read is bounds-checked against the file size before it happens, and
 * every count is checked against the bytes left before anything is allocated
 * for it, so a corrupt file cannot cause a huge allocation. */
#include "format/gguf.h"

#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/grow.h"
#include "base/status.h"

#define GGUF_MAGIC 0x46554747u /* "GGUF" little-endian */
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NESTING 8

typedef struct gguf_kv {
    char *key;                 /* NUL-terminated copy */
    dg_gguf_type type;
    const uint8_t *val;        /* scalar value / string header / array header */
    /* arrays */
    dg_gguf_type elem_type;
    uint64_t n;
    const uint8_t *data;       /* first element */
    uint64_t *str_off;         /* string arrays: offset of each string header */
} gguf_kv;

struct dg_gguf {
    dg_mapping map;
    char *path;
    uint32_t version;
    size_t alignment;
    size_t data_offset;
    size_t n_kv;
    gguf_kv *kv;
    size_t n_tensors;
    dg_tensor_view *tensors;
    char *names;               /* all tensor names, NUL-terminated, back to back */
    size_t *index;             /* open-addressing hash of tensor names; SIZE_MAX = empty */
    size_t index_cap;
};

typedef struct cursor {
    const dg_gguf *g;
    const uint8_t *base;
    size_t size;
    size_t pos;
} cursor;

static const char *type_names[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32",
                                   "float32", "bool", "string", "array", "uint64", "int64",
                                   "float64"};

const char *dg_gguf_type_name(dg_gguf_type t)
{
    return (unsigned)t <= DG_GGUF_FLOAT64 ? type_names[t] : "invalid";
}

/* Size of a fixed-size value type, 0 for string/array/invalid. */
static size_t type_size(uint32_t t)
{
    switch (t) {
    case DG_GGUF_UINT8: case DG_GGUF_INT8: case DG_GGUF_BOOL: return 1;
    case DG_GGUF_UINT16: case DG_GGUF_INT16: return 2;
    case DG_GGUF_UINT32: case DG_GGUF_INT32: case DG_GGUF_FLOAT32: return 4;
    case DG_GGUF_UINT64: case DG_GGUF_INT64: case DG_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

/* ggml_type ids (ggml.h enum ggml_type). */
const char *dg_ggml_type_name(uint32_t t)
{
    static const char *names[] = {
        [0] = "F32", [1] = "F16", [2] = "Q4_0", [3] = "Q4_1", [6] = "Q5_0", [7] = "Q5_1",
        [8] = "Q8_0", [9] = "Q8_1", [10] = "Q2_K", [11] = "Q3_K", [12] = "Q4_K",
        [13] = "Q5_K", [14] = "Q6_K", [15] = "Q8_K", [16] = "IQ2_XXS", [17] = "IQ2_XS",
        [18] = "IQ3_XXS", [19] = "IQ1_S", [20] = "IQ4_NL", [21] = "IQ3_S", [22] = "IQ2_S",
        [23] = "IQ4_XS", [24] = "I8", [25] = "I16", [26] = "I32", [27] = "I64", [28] = "F64",
        [29] = "IQ1_M", [30] = "BF16", [34] = "TQ1_0", [35] = "TQ2_0", [39] = "MXFP4"};
    if (t < sizeof names / sizeof names[0] && names[t]) return names[t];
    return "unknown";
}

static int ggml_to_dtype(uint32_t t, dg_dtype *out)
{
    switch (t) {
    case 0: *out = DG_F32; return 1;
    case 1: *out = DG_F16; return 1;
    case 2: *out = DG_Q4_0; return 1;
    case 3: *out = DG_Q4_1; return 1;
    case 6: *out = DG_Q5_0; return 1;
    case 7: *out = DG_Q5_1; return 1;
    case 8: *out = DG_Q8_0; return 1;
    case 12: *out = DG_Q4_K; return 1;
    case 14: *out = DG_Q6_K; return 1;
    case 24: *out = DG_I8; return 1;
    case 25: *out = DG_I16; return 1;
    case 26: *out = DG_I32; return 1;
    case 27: *out = DG_I64; return 1;
    case 28: *out = DG_F64; return 1;
    case 30: *out = DG_BF16; return 1;
    default: return 0;
    }
}

static size_t left(const cursor *c) { return c->size - c->pos; }

static deg_status truncated(const cursor *c, const char *what, size_t need)
{
    return dg_fail(DEG_ERR_FORMAT, "%s: truncated GGUF: %s needs %zu bytes at offset %zu, file is %zu bytes",
                   c->g->path, what, need, c->pos, c->size);
}

static deg_status need(const cursor *c, size_t n, const char *what)
{
    if (left(c) < n) return truncated(c, what, n);
    return DEG_OK;
}

static deg_status rd_u32(cursor *c, uint32_t *v, const char *what)
{
    DG_TRY(need(c, 4, what));
    memcpy(v, c->base + c->pos, 4);
    c->pos += 4;
    return DEG_OK;
}

static deg_status rd_u64(cursor *c, uint64_t *v, const char *what)
{
    DG_TRY(need(c, 8, what));
    memcpy(v, c->base + c->pos, 8);
    c->pos += 8;
    return DEG_OK;
}

/* String: u64 length then bytes; *p points at the bytes. */
static deg_status rd_str(cursor *c, const uint8_t **p, uint64_t *len, const char *what)
{
    size_t at = c->pos;
    DG_TRY(rd_u64(c, len, what));
    if (*len > left(c))
        return dg_fail(DEG_ERR_FORMAT,
                       "%s: %s at offset %zu: string length %llu runs past the end of the file (%zu bytes)",
                       c->g->path, what, at, (unsigned long long)*len, c->size);
    *p = c->base + c->pos;
    c->pos += (size_t)*len;
    return DEG_OK;
}

/* Skip one value of type t (arrays recursively), checking bounds. */
static deg_status skip_value(cursor *c, uint32_t t, int depth, const char *key);

static deg_status skip_array(cursor *c, int depth, const char *key, uint32_t *et_out,
                             uint64_t *n_out, const uint8_t **data_out)
{
    if (depth > GGUF_MAX_NESTING)
        return dg_fail(DEG_ERR_FORMAT, "%s: key '%s': arrays nested deeper than %d at offset %zu",
                       c->g->path, key, GGUF_MAX_NESTING, c->pos);
    uint32_t et;
    uint64_t n;
    size_t at = c->pos;
    DG_TRY(rd_u32(c, &et, "array element type"));
    DG_TRY(rd_u64(c, &n, "array length"));
    if (et > DG_GGUF_FLOAT64)
        return dg_fail(DEG_ERR_FORMAT, "%s: key '%s': invalid array element type %u at offset %zu",
                       c->g->path, key, et, at);
    /* Minimum bytes per element: fixed size, 8 for a string length, 12 for
     * a nested array header. Checked before walking so n cannot be absurd. */
    size_t min_el = et == DG_GGUF_STRING ? 8 : et == DG_GGUF_ARRAY ? 12 : type_size(et);
    if (n > left(c) / min_el)
        return dg_fail(DEG_ERR_FORMAT,
                       "%s: key '%s': array of %llu %s at offset %zu does not fit in the file (%zu bytes left)",
                       c->g->path, key, (unsigned long long)n, dg_gguf_type_name(et), at, left(c));
    if (et_out) *et_out = et;
    if (n_out) *n_out = n;
    if (data_out) *data_out = c->base + c->pos;
    if (et != DG_GGUF_STRING && et != DG_GGUF_ARRAY) {
        c->pos += (size_t)n * min_el;
        return DEG_OK;
    }
    for (uint64_t i = 0; i < n; i++) DG_TRY(skip_value(c, et, depth + 1, key));
    return DEG_OK;
}

static deg_status skip_value(cursor *c, uint32_t t, int depth, const char *key)
{
    if (t == DG_GGUF_STRING) {
        const uint8_t *p;
        uint64_t len;
        return rd_str(c, &p, &len, "string value");
    }
    if (t == DG_GGUF_ARRAY) return skip_array(c, depth, key, NULL, NULL, NULL);
    size_t sz = type_size(t);
    if (!sz)
        return dg_fail(DEG_ERR_FORMAT, "%s: key '%s': invalid value type %u at offset %zu",
                       c->g->path, key, t, c->pos);
    DG_TRY(need(c, sz, "metadata value"));
    c->pos += sz;
    return DEG_OK;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void dg_gguf_close(dg_gguf *g)
{
    if (!g) return;
    for (size_t i = 0; i < g->n_kv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].str_off);
    }
    free(g->kv);
    free(g->tensors);
    free(g->names);
    free(g->index);
    dg_unmap(&g->map);
    free(g->path);
    free(g);
}

static const gguf_kv *find_kv(const dg_gguf *g, const char *key)
{
    for (size_t i = 0; i < g->n_kv; i++)
        if (strcmp(g->kv[i].key, key) == 0) return &g->kv[i];
    return NULL;
}

static deg_status parse_kvs(dg_gguf *g, cursor *c)
{
    for (size_t i = 0; i < g->n_kv; i++) {
        gguf_kv *kv = &g->kv[i];
        const uint8_t *kp;
        uint64_t klen;
        size_t at = c->pos;
        DG_TRY(rd_str(c, &kp, &klen, "metadata key"));
        if (memchr(kp, 0, (size_t)klen))
            return dg_fail(DEG_ERR_FORMAT, "%s: metadata key %zu at offset %zu contains a NUL byte",
                           g->path, i, at);
        kv->key = strndup((const char *)kp, (size_t)klen);
        if (!kv->key) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", g->path);
        for (size_t j = 0; j < i; j++)
            if (strcmp(g->kv[j].key, kv->key) == 0)
                return dg_fail(DEG_ERR_FORMAT, "%s: duplicate metadata key '%s' at offset %zu",
                               g->path, kv->key, at);
        uint32_t t;
        DG_TRY(rd_u32(c, &t, "metadata value type"));
        if (t > DG_GGUF_FLOAT64)
            return dg_fail(DEG_ERR_FORMAT, "%s: key '%s': invalid value type %u at offset %zu",
                           g->path, kv->key, t, c->pos - 4);
        kv->type = (dg_gguf_type)t;
        kv->val = c->base + c->pos;
        if (t == DG_GGUF_ARRAY) {
            uint32_t et;
            DG_TRY(skip_array(c, 1, kv->key, &et, &kv->n, &kv->data));
            kv->elem_type = (dg_gguf_type)et;
            if (et == DG_GGUF_STRING) {
                /* Index the strings for O(1) access; n <= bytes/8 was checked. */
                kv->str_off = malloc((size_t)(kv->n ? kv->n : 1) * sizeof *kv->str_off);
                if (!kv->str_off) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", g->path);
                size_t p = (size_t)(kv->data - c->base);
                for (uint64_t j = 0; j < kv->n; j++) {
                    uint64_t len;
                    kv->str_off[j] = p;
                    memcpy(&len, c->base + p, 8); /* bounds already checked by skip_array */
                    p += 8 + (size_t)len;
                }
            }
        } else {
            DG_TRY(skip_value(c, t, 0, kv->key));
        }
    }
    return DEG_OK;
}

static deg_status parse_alignment(dg_gguf *g)
{
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    uint64_t a;
    deg_status s = dg_gguf_get_u64(g, "general.alignment", &a);
    if (s == DEG_ERR_RANGE) return DEG_OK;
    if (s != DEG_OK) return s;
    if (a == 0 || (a & (a - 1)) != 0 || a > (1u << 20))
        return dg_fail(DEG_ERR_FORMAT, "%s: general.alignment = %llu is not a power of two in [1, 2^20]",
                       g->path, (unsigned long long)a);
    g->alignment = (size_t)a;
    return DEG_OK;
}

static int cmp_by_data(const void *a, const void *b)
{
    const dg_tensor_view *x = *(const dg_tensor_view *const *)a;
    const dg_tensor_view *y = *(const dg_tensor_view *const *)b;
    return x->data < y->data ? -1 : x->data > y->data;
}

static deg_status parse_tensors(dg_gguf *g, cursor *c)
{
    /* Pass 1: measure names so they can live in one block. */
    size_t start = c->pos, names_len = 0;
    for (size_t i = 0; i < g->n_tensors; i++) {
        const uint8_t *np;
        uint64_t nlen;
        uint32_t nd, type;
        uint64_t off, ne;
        DG_TRY(rd_str(c, &np, &nlen, "tensor name"));
        DG_TRY(rd_u32(c, &nd, "tensor n_dims"));
        if (nd > GGUF_MAX_DIMS)
            return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%.*s' has %u dimensions (at most %d)",
                           g->path, (int)(nlen > 256 ? 256 : nlen), (const char *)np, nd,
                           GGUF_MAX_DIMS);
        for (uint32_t d = 0; d < nd; d++) DG_TRY(rd_u64(c, &ne, "tensor dimension"));
        DG_TRY(rd_u32(c, &type, "tensor type"));
        DG_TRY(rd_u64(c, &off, "tensor offset"));
        names_len += (size_t)nlen + 1;
    }
    size_t end_infos = c->pos;
    c->pos = start;
    g->names = malloc(names_len ? names_len : 1);
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    if (!g->names || !g->tensors) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", g->path);

    /* The data section starts at the next multiple of the alignment. */
    size_t a = g->alignment;
    if (end_infos > SIZE_MAX - a) return dg_fail(DEG_ERR_FORMAT, "%s: header too large", g->path);
    g->data_offset = (end_infos + a - 1) / a * a;
    if (g->n_tensors > 0 && g->data_offset > c->size)
        return dg_fail(DEG_ERR_FORMAT,
                       "%s: truncated GGUF: tensor data section starts at offset %zu, past the end of the file (%zu bytes)",
                       g->path, g->data_offset, c->size);

    char *nm = g->names;
    for (size_t i = 0; i < g->n_tensors; i++) {
        dg_tensor_view *t = &g->tensors[i];
        const uint8_t *np = NULL;
        uint64_t nlen = 0;
        uint32_t nd = 0, type = 0;
        uint64_t ne[GGUF_MAX_DIMS] = {0}, off = 0;
        /* bounds were checked in pass 1 */
        rd_str(c, &np, &nlen, "tensor name");
        memcpy(nm, np, (size_t)nlen);
        nm[nlen] = '\0';
        t->name = nm;
        nm += nlen + 1;
        if (memchr(np, 0, (size_t)nlen))
            return dg_fail(DEG_ERR_FORMAT, "%s: tensor %zu: name contains a NUL byte", g->path, i);
        rd_u32(c, &nd, "tensor n_dims");
        for (uint32_t d = 0; d < nd; d++) rd_u64(c, &ne[d], "tensor dimension");
        rd_u32(c, &type, "tensor type");
        rd_u64(c, &off, "tensor offset");
        if (!ggml_to_dtype(type, &t->dtype))
            return dg_fail(DEG_ERR_UNSUPPORTED,
                           "%s: tensor '%s' has type %s (ggml type %u), which deg cannot read "
                           "(supported: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q6_K I8 I16 I32 I64 F64)",
                           g->path, t->name, dg_ggml_type_name(type), type);
        /* shape: outermost first, numel must not overflow */
        t->n_dims = (int)nd;
        uint64_t numel = 1;
        for (uint32_t d = 0; d < nd; d++) {
            if (ne[d] > (uint64_t)INT64_MAX || (ne[d] && numel > (uint64_t)INT64_MAX / ne[d]))
                return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s': dimensions overflow (ne[%u] = %llu)",
                               g->path, t->name, d, (unsigned long long)ne[d]);
            numel *= ne[d];
            t->shape[nd - 1 - d] = (int64_t)ne[d];
        }
        int64_t row = nd ? (int64_t)ne[0] : 1;
        int ok;
        size_t row_bytes = dg_dtype_row_bytes(t->dtype, row, &ok);
        if (!ok)
            return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s': row length %lld is not a multiple of the %s block size %lld",
                           g->path, t->name, (long long)row, dg_dtype_name(t->dtype),
                           (long long)dg_dtype_block_elems(t->dtype));
        uint64_t n_rows = row ? numel / (uint64_t)row : 0;
        if (row_bytes && n_rows > (uint64_t)SIZE_MAX / row_bytes)
            return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s': size overflows", g->path, t->name);
        t->n_bytes = (size_t)(n_rows * row_bytes);
        if (off % a != 0)
            return dg_fail(DEG_ERR_FORMAT, "%s: tensor '%s': data offset %llu is not a multiple of the alignment %zu",
                           g->path, t->name, (unsigned long long)off, a);
        size_t avail = c->size - g->data_offset;
        if (off > avail || t->n_bytes > avail - off)
            return dg_fail(DEG_ERR_FORMAT,
                           "%s: tensor '%s' (%s, %zu bytes at data offset %llu) runs past the end of the file "
                           "(data section is %zu bytes)",
                           g->path, t->name, dg_dtype_name(t->dtype), t->n_bytes,
                           (unsigned long long)off, avail);
        t->data = c->base + g->data_offset + off;
    }
    c->pos = end_infos;

    /* Tensor extents must not overlap (llama.cpp requires them back to back). */
    if (g->n_tensors > 1) {
        const dg_tensor_view **by = malloc(g->n_tensors * sizeof *by);
        if (!by) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", g->path);
        for (size_t i = 0; i < g->n_tensors; i++) by[i] = &g->tensors[i];
        qsort(by, g->n_tensors, sizeof *by, cmp_by_data);
        for (size_t i = 1; i < g->n_tensors; i++) {
            const dg_tensor_view *p = by[i - 1], *q = by[i];
            if ((const uint8_t *)p->data + p->n_bytes > (const uint8_t *)q->data) {
                deg_status s = dg_fail(DEG_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap in the file",
                                       g->path, p->name, q->name);
                free(by);
                return s;
            }
        }
        free(by);
    }

    /* Name index (and duplicate check). */
    g->index_cap = dg_grow_cap(0, 2 * g->n_tensors); /* a power of two: probes mask by it */
    g->index = malloc(g->index_cap * sizeof *g->index);
    if (!g->index) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", g->path);
    for (size_t i = 0; i < g->index_cap; i++) g->index[i] = SIZE_MAX;
    for (size_t i = 0; i < g->n_tensors; i++) {
        size_t h = (size_t)hash_str(g->tensors[i].name) & (g->index_cap - 1);
        while (g->index[h] != SIZE_MAX) {
            if (strcmp(g->tensors[g->index[h]].name, g->tensors[i].name) == 0)
                return dg_fail(DEG_ERR_FORMAT, "%s: duplicate tensor name '%s'", g->path,
                               g->tensors[i].name);
            h = (h + 1) & (g->index_cap - 1);
        }
        g->index[h] = i;
    }
    return DEG_OK;
}

static deg_status gguf_parse(dg_gguf *g)
{
    cursor c = {g, g->map.data, g->map.size, 0};
    if (g->map.size == 0) return dg_fail(DEG_ERR_FORMAT, "%s: empty file (not a GGUF file)", g->path);
    uint32_t magic, version;
    if (g->map.size < 4 || (memcpy(&magic, g->map.data, 4), magic != GGUF_MAGIC)) {
        char shown[9] = {0};
        for (size_t i = 0; i < 4 && i < g->map.size; i++) {
            unsigned char ch = g->map.data[i];
            shown[i] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
        }
        return dg_fail(DEG_ERR_FORMAT, "%s: not a GGUF file (magic '%s', expected 'GGUF')", g->path,
                       shown);
    }
    c.pos = 4;
    DG_TRY(rd_u32(&c, &version, "version"));
    if (version == 1)
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: GGUF version 1 is not supported (only 2 and 3)", g->path);
    if (version != 2 && version != 3) {
        if ((version & 0xFFFF) == 0 && __builtin_bswap32(version) <= 3)
            return dg_fail(DEG_ERR_UNSUPPORTED, "%s: big-endian GGUF files are not supported", g->path);
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: unsupported GGUF version %u (only 2 and 3)", g->path,
                       version);
    }
    g->version = version;
    uint64_t nt, nkv;
    DG_TRY(rd_u64(&c, &nt, "tensor count"));
    DG_TRY(rd_u64(&c, &nkv, "metadata count"));
    /* Smallest possible kv: 8 (key len) + 4 (type) + 1 (u8 value); smallest
     * tensor info: 8 (name len) + 4 (n_dims) + 4 (type) + 8 (offset). */
    if (nkv > left(&c) / 13)
        return dg_fail(DEG_ERR_FORMAT, "%s: metadata count %llu cannot fit in a %zu-byte file",
                       g->path, (unsigned long long)nkv, c.size);
    if (nt > left(&c) / 24)
        return dg_fail(DEG_ERR_FORMAT, "%s: tensor count %llu cannot fit in a %zu-byte file",
                       g->path, (unsigned long long)nt, c.size);
    g->kv = calloc(nkv ? (size_t)nkv : 1, sizeof *g->kv);
    if (!g->kv) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", g->path);
    g->n_kv = (size_t)nkv;
    DG_TRY(parse_kvs(g, &c));
    DG_TRY(parse_alignment(g));
    g->n_tensors = (size_t)nt;
    DG_TRY(parse_tensors(g, &c));
    return DEG_OK;
}

deg_status dg_gguf_open(const char *path, dg_gguf **out)
{
    *out = NULL;
    dg_gguf *g = calloc(1, sizeof *g);
    if (!g) return dg_fail(DEG_ERR_NOMEM, "out of memory");
    g->path = strdup(path ? path : "");
    if (!g->path) {
        free(g);
        return dg_fail(DEG_ERR_NOMEM, "out of memory");
    }
    deg_status s = dg_map_file(path, &g->map);
    if (s == DEG_OK) s = gguf_parse(g);
    if (s != DEG_OK) {
        /* n_kv entries past the failure point are zeroed (calloc). */
        dg_gguf_close(g);
        return s;
    }
    *out = g;
    return DEG_OK;
}

/* ---- accessors ---------------------------------------------------------- */

uint32_t dg_gguf_version(const dg_gguf *g) { return g->version; }
size_t dg_gguf_alignment(const dg_gguf *g) { return g->alignment; }
size_t dg_gguf_n_kv(const dg_gguf *g) { return g->n_kv; }
const char *dg_gguf_kv_key(const dg_gguf *g, size_t i) { return i < g->n_kv ? g->kv[i].key : NULL; }
dg_gguf_type dg_gguf_kv_type(const dg_gguf *g, size_t i)
{
    return i < g->n_kv ? g->kv[i].type : (dg_gguf_type)-1;
}
size_t dg_gguf_n_tensors(const dg_gguf *g) { return g->n_tensors; }

const dg_tensor_view *dg_gguf_tensor(const dg_gguf *g, size_t i)
{
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const dg_tensor_view *dg_gguf_find(const dg_gguf *g, const char *name)
{
    if (!g->index || !name) return NULL;
    size_t h = (size_t)hash_str(name) & (g->index_cap - 1);
    while (g->index[h] != SIZE_MAX) {
        if (strcmp(g->tensors[g->index[h]].name, name) == 0) return &g->tensors[g->index[h]];
        h = (h + 1) & (g->index_cap - 1);
    }
    return NULL;
}

static deg_status lookup(const dg_gguf *g, const char *key, const gguf_kv **kv)
{
    *kv = find_kv(g, key);
    return *kv ? DEG_OK : DEG_ERR_RANGE; /* absent: no message, callers use defaults */
}

static deg_status wrong_type(const dg_gguf *g, const gguf_kv *kv, const char *expected)
{
    return dg_fail(DEG_ERR_FORMAT, "%s: GGUF key '%s' has type %s, expected %s", g->path, kv->key,
                   dg_gguf_type_name(kv->type), expected);
}

/* Integer value as sign + magnitude: *neg set for negative values. */
/* The integer of value type t at p (1), or 0 if t is not an integer type. */
static int int_of(uint32_t t, const uint8_t *p, int *neg, uint64_t *mag)
{
    int64_t sv = 0;
    *neg = 0;
    switch (t) {
    case DG_GGUF_UINT8: *mag = p[0]; return 1;
    case DG_GGUF_UINT16: { uint16_t v; memcpy(&v, p, 2); *mag = v; return 1; }
    case DG_GGUF_UINT32: { uint32_t v; memcpy(&v, p, 4); *mag = v; return 1; }
    case DG_GGUF_UINT64: { uint64_t v; memcpy(&v, p, 8); *mag = v; return 1; }
    case DG_GGUF_INT8: sv = (int8_t)p[0]; break;
    case DG_GGUF_INT16: { int16_t v; memcpy(&v, p, 2); sv = v; break; }
    case DG_GGUF_INT32: { int32_t v; memcpy(&v, p, 4); sv = v; break; }
    case DG_GGUF_INT64: { int64_t v; memcpy(&v, p, 8); sv = v; break; }
    default: return 0;
    }
    *neg = sv < 0;
    *mag = sv < 0 ? (uint64_t)0 - (uint64_t)sv : (uint64_t)sv;
    return 1;
}

static int int_value(const gguf_kv *kv, int *neg, uint64_t *mag)
{
    return int_of(kv->type, kv->val, neg, mag);
}

deg_status dg_gguf_get_u64(const dg_gguf *g, const char *key, uint64_t *out)
{
    const gguf_kv *kv;
    DG_TRY(lookup(g, key, &kv));
    int neg;
    uint64_t mag;
    if (!int_value(kv, &neg, &mag)) return wrong_type(g, kv, "an unsigned integer");
    if (neg)
        return dg_fail(DEG_ERR_FORMAT, "%s: GGUF key '%s' is negative (-%llu), expected an unsigned integer",
                       g->path, key, (unsigned long long)mag);
    *out = mag;
    return DEG_OK;
}

deg_status dg_gguf_get_i64(const dg_gguf *g, const char *key, int64_t *out)
{
    const gguf_kv *kv;
    DG_TRY(lookup(g, key, &kv));
    int neg;
    uint64_t mag;
    if (!int_value(kv, &neg, &mag)) return wrong_type(g, kv, "an integer");
    if (!neg && mag > (uint64_t)INT64_MAX)
        return dg_fail(DEG_ERR_FORMAT, "%s: GGUF key '%s' = %llu does not fit in int64", g->path, key,
                       (unsigned long long)mag);
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return DEG_OK;
}

deg_status dg_gguf_get_f32(const dg_gguf *g, const char *key, float *out)
{
    const gguf_kv *kv;
    DG_TRY(lookup(g, key, &kv));
    if (kv->type == DG_GGUF_FLOAT32) {
        memcpy(out, kv->val, 4);
        return DEG_OK;
    }
    if (kv->type == DG_GGUF_FLOAT64) {
        double d;
        memcpy(&d, kv->val, 8);
        *out = (float)d;
        return DEG_OK;
    }
    return wrong_type(g, kv, "float32");
}

deg_status dg_gguf_get_bool(const dg_gguf *g, const char *key, int *out)
{
    const gguf_kv *kv;
    DG_TRY(lookup(g, key, &kv));
    if (kv->type != DG_GGUF_BOOL) return wrong_type(g, kv, "bool");
    *out = kv->val[0] != 0;
    return DEG_OK;
}

deg_status dg_gguf_get_str(const dg_gguf *g, const char *key, dg_gguf_str *out)
{
    const gguf_kv *kv;
    DG_TRY(lookup(g, key, &kv));
    if (kv->type != DG_GGUF_STRING) return wrong_type(g, kv, "string");
    memcpy(&out->len, kv->val, 8);
    out->ptr = (const char *)kv->val + 8;
    return DEG_OK;
}

deg_status dg_gguf_get_arr(const dg_gguf *g, const char *key, dg_gguf_type *elem_type, uint64_t *n,
                           const void **data)
{
    const gguf_kv *kv;
    DG_TRY(lookup(g, key, &kv));
    if (kv->type != DG_GGUF_ARRAY) return wrong_type(g, kv, "array");
    if (elem_type) *elem_type = kv->elem_type;
    if (n) *n = kv->n;
    if (data) *data = kv->data;
    return DEG_OK;
}

deg_status dg_gguf_arr_int(const dg_gguf *g, const char *key, uint64_t i, int64_t *out)
{
    const gguf_kv *kv;
    DG_TRY(lookup(g, key, &kv));
    int neg;
    uint64_t mag;
    if (kv->type != DG_GGUF_ARRAY || kv->elem_type == DG_GGUF_STRING ||
        kv->elem_type == DG_GGUF_ARRAY || i >= kv->n ||
        !int_of(kv->elem_type, (const uint8_t *)kv->data + i * type_size(kv->elem_type), &neg,
                &mag))
        return dg_fail(DEG_ERR_FORMAT, "%s: GGUF key '%s' is not an integer array with an "
                       "element %llu", g->path, key, (unsigned long long)i);
    if (!neg && mag > (uint64_t)INT64_MAX)
        return dg_fail(DEG_ERR_FORMAT, "%s: GGUF key '%s'[%llu] does not fit in int64", g->path,
                       key, (unsigned long long)i);
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return DEG_OK;
}

deg_status dg_gguf_arr_str(const dg_gguf *g, const char *key, uint64_t i, dg_gguf_str *out)
{
    const gguf_kv *kv;
    DG_TRY(lookup(g, key, &kv));
    if (kv->type != DG_GGUF_ARRAY || kv->elem_type != DG_GGUF_STRING)
        return dg_fail(DEG_ERR_FORMAT, "%s: GGUF key '%s' is not an array of strings", g->path, key);
    if (i >= kv->n)
        return dg_fail(DEG_ERR_RANGE, "%s: index %llu out of range for '%s' (%llu strings)", g->path,
                       (unsigned long long)i, key, (unsigned long long)kv->n);
    const uint8_t *p = g->map.data + kv->str_off[i];
    memcpy(&out->len, p, 8);
    out->ptr = (const char *)p + 8;
    return DEG_OK;
}
