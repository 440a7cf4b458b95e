/* Malformed LFM2 GGUF files (issue 18): variants of llama.cpp's own
 * tests/goldens/tiny-gguf/tiny-lfm2.gguf rewritten here with one metadata
 * key or tensor shape broken (missing or inconsistent per-layer
 * attention.head_count_kv, shortconv.l_cache missing / out of range / of the
 * wrong type, tensors of the wrong shape, layer kinds that disagree with the
 * tensors). Each load fails with a clear error naming the key or tensor,
 * never a crash. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core_testutil.h"
#include "deg.h"

#define SRC DEG_SOURCE_ROOT "/tests/goldens/tiny-gguf/tiny-lfm2.gguf"

/* The parsed layout of a GGUF v3 file: each metadata entry's key and raw
 * value bytes (type included), each tensor info's fields, the data section. */
typedef struct kv_ent { char key[128]; const uint8_t *raw; size_t n; } kv_ent;
typedef struct ti_ent { char name[128]; uint32_t nd, type; uint64_t ne[4], off; } ti_ent;
typedef struct gg {
    uint8_t *file;
    size_t len, n_kv, n_t, data_off;
    kv_ent kv[128];
    ti_ent t[128];
} gg;

static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* Bytes of a value of type ty at p. */
static size_t val_size(uint32_t ty, const uint8_t *p)
{
    static const size_t fixed[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (ty == 8) return 8 + (size_t)rd64(p);
    if (ty != 9) return fixed[ty];
    uint32_t et = rd32(p);
    uint64_t n = rd64(p + 4);
    size_t o = 12;
    for (uint64_t i = 0; i < n; i++) o += val_size(et, p + o);
    return o;
}

static gg *gg_read(void)
{
    gg *g = calloc(1, sizeof *g);
    g->file = tu_read(SRC, &g->len);
    cr_assert_not_null(g->file, "%s", SRC);
    const uint8_t *p = g->file + 24;
    g->n_t = rd64(g->file + 8);
    g->n_kv = rd64(g->file + 16);
    cr_assert(g->n_kv <= 128 && g->n_t <= 128);
    size_t align = 32;
    for (size_t i = 0; i < g->n_kv; i++) {
        size_t kl = rd64(p);
        cr_assert_lt(kl, sizeof g->kv[i].key);
        memcpy(g->kv[i].key, p + 8, kl);
        p += 8 + kl;
        g->kv[i].raw = p;
        g->kv[i].n = 4 + val_size(rd32(p), p + 4);
        if (!strcmp(g->kv[i].key, "general.alignment")) align = rd32(p + 4);
        p += g->kv[i].n;
    }
    for (size_t i = 0; i < g->n_t; i++) {
        ti_ent *t = &g->t[i];
        size_t nl = rd64(p);
        cr_assert_lt(nl, sizeof t->name);
        memcpy(t->name, p + 8, nl);
        p += 8 + nl;
        t->nd = rd32(p);
        p += 4;
        for (uint32_t d = 0; d < t->nd; d++, p += 8) t->ne[d] = rd64(p);
        t->type = rd32(p);
        t->off = rd64(p + 4);
        p += 12;
    }
    size_t o = (size_t)(p - g->file);
    g->data_off = (o + align - 1) / align * align;
    return g;
}

static kv_ent *gg_kv(gg *g, const char *key)
{
    for (size_t i = 0; i < g->n_kv; i++)
        if (!strcmp(g->kv[i].key, key)) return &g->kv[i];
    cr_assert_fail("key %s not in %s", key, SRC);
    return NULL;
}

static ti_ent *gg_t(gg *g, const char *name)
{
    for (size_t i = 0; i < g->n_t; i++)
        if (!strcmp(g->t[i].name, name)) return &g->t[i];
    cr_assert_fail("tensor %s not in %s", name, SRC);
    return NULL;
}

/* Write g to path (entries with n = 0 dropped). */
static void gg_write(const gg *g, const char *path)
{
    tu_buf b = {0};
    size_t n_kv = 0;
    for (size_t i = 0; i < g->n_kv; i++) n_kv += g->kv[i].n > 0;
    tu_put(&b, g->file, 8); /* magic + version */
    tu_u64(&b, g->n_t);
    tu_u64(&b, n_kv);
    for (size_t i = 0; i < g->n_kv; i++) {
        if (!g->kv[i].n) continue;
        tu_str(&b, g->kv[i].key);
        tu_put(&b, g->kv[i].raw, g->kv[i].n);
    }
    for (size_t i = 0; i < g->n_t; i++) {
        tu_str(&b, g->t[i].name);
        tu_u32(&b, g->t[i].nd);
        for (uint32_t d = 0; d < g->t[i].nd; d++) tu_u64(&b, g->t[i].ne[d]);
        tu_u32(&b, g->t[i].type);
        tu_u64(&b, g->t[i].off);
    }
    tu_pad(&b, 32);
    tu_put(&b, g->file + g->data_off, g->len - g->data_off);
    tu_write(path, b.p, b.n);
    free(b.p);
}

/* Write g, load it, expect status want and a message containing `names`. */
static void gg_expect(gg *g, deg_status want, const char *names, const char *what)
{
    char *dir = tu_mkdtemp(), *path = tu_path(dir, "bad-lfm2.gguf");
    gg_write(g, path);
    deg_model *m = NULL;
    deg_status s = deg_model_load(path, &m);
    cr_expect_eq(s, want, "%s: status %d (%s), want %d", what, (int)s, deg_errmsg(), (int)want);
    cr_expect(strstr(deg_errmsg(), names) != NULL, "%s: message '%s' does not name '%s'", what,
              deg_errmsg(), names);
    cr_log_info("%s -> %s", what, deg_errmsg());
    cr_expect_null(m);
    deg_model_free(m);
    tu_rmrf(dir);
    free(dir); free(path);
}

static void gg_free(gg *g) { free(g->file); free(g); }

/* Raw value bytes built here (kept alive until the next gg_read). */
static uint8_t valbuf[4][256];
static void set_u32(kv_ent *e, int slot, uint32_t type, uint32_t v)
{
    memcpy(valbuf[slot], &type, 4);
    memcpy(valbuf[slot] + 4, &v, 4);
    e->raw = valbuf[slot];
    e->n = 8;
}
static void set_arr_i32(kv_ent *e, int slot, uint32_t et, const int32_t *v, uint64_t n)
{
    uint32_t t = 9;
    memcpy(valbuf[slot], &t, 4);
    memcpy(valbuf[slot] + 4, &et, 4);
    memcpy(valbuf[slot] + 8, &n, 8);
    memcpy(valbuf[slot] + 16, v, n * 4);
    e->raw = valbuf[slot];
    e->n = 16 + n * 4;
}

Test(gguf_lfm2_bad, unchanged_copy_loads)
{
    /* the rewriter itself: an unmodified rewrite loads */
    gg *g = gg_read();
    char *dir = tu_mkdtemp(), *path = tu_path(dir, "copy.gguf");
    gg_write(g, path);
    deg_model *m = NULL;
    cr_assert_eq(deg_model_load(path, &m), DEG_OK, "%s", deg_errmsg());
    deg_model_free(m);
    tu_rmrf(dir);
    free(dir); free(path);
    gg_free(g);
}

Test(gguf_lfm2_bad, l_cache)
{
    const char *k = "lfm2.shortconv.l_cache";
    gg *g = gg_read();
    gg_kv(g, k)->n = 0;
    gg_expect(g, DEG_ERR_FORMAT, k, "missing l_cache");
    gg_free(g);
    uint32_t bad[] = {0, 65, 100000};
    for (int i = 0; i < 3; i++) {
        g = gg_read();
        set_u32(gg_kv(g, k), 0, 4, bad[i]);
        gg_expect(g, DEG_ERR_FORMAT, k, "l_cache out of range");
        gg_free(g);
    }
    g = gg_read();
    set_u32(gg_kv(g, k), 0, 6, 0x40400000u); /* float32 3.0 */
    gg_expect(g, DEG_ERR_FORMAT, k, "l_cache of type float32");
    gg_free(g);
    /* 4 taps declared, the conv tensors hold 3 */
    g = gg_read();
    set_u32(gg_kv(g, k), 0, 4, 4);
    gg_expect(g, DEG_ERR_FORMAT, "shortconv.conv.weight", "l_cache disagrees with the tensor");
    gg_free(g);
}

Test(gguf_lfm2_bad, head_count_kv)
{
    const char *k = "lfm2.attention.head_count_kv";
    /* tiny-lfm2: conv, attention, conv, conv, attention; 2 K/V heads */
    int32_t four[] = {0, 2, 0, 0};
    gg *g = gg_read();
    set_arr_i32(gg_kv(g, k), 0, 5, four, 4);
    gg_expect(g, DEG_ERR_FORMAT, k, "4 entries for 5 layers");
    gg_free(g);
    float fl[] = {0, 2, 0, 0, 2};
    g = gg_read();
    set_arr_i32(gg_kv(g, k), 0, 6, (const int32_t *)fl, 5);
    gg_expect(g, DEG_ERR_FORMAT, k, "float32 entries");
    gg_free(g);
    int32_t neg[] = {0, 2, 0, -1, 2};
    g = gg_read();
    set_arr_i32(gg_kv(g, k), 0, 5, neg, 5);
    gg_expect(g, DEG_ERR_FORMAT, k, "negative entry");
    gg_free(g);
    int32_t mixed[] = {0, 2, 0, 0, 1};
    g = gg_read();
    set_arr_i32(gg_kv(g, k), 0, 5, mixed, 5);
    gg_expect(g, DEG_ERR_UNSUPPORTED, k, "attention layers with different K/V heads");
    gg_free(g);
    /* kinds that disagree with the tensors: the missing tensor is named */
    int32_t conv_as_attn[] = {2, 2, 0, 0, 2};
    g = gg_read();
    set_arr_i32(gg_kv(g, k), 0, 5, conv_as_attn, 5);
    gg_expect(g, DEG_ERR_FORMAT, "blk.0.attn_q.weight", "conv layer 0 declared attention");
    gg_free(g);
    int32_t attn_as_conv[] = {0, 0, 0, 0, 2};
    g = gg_read();
    set_arr_i32(gg_kv(g, k), 0, 5, attn_as_conv, 5);
    gg_expect(g, DEG_ERR_FORMAT, "blk.1.shortconv.in_proj.weight",
              "attention layer 1 declared conv");
    gg_free(g);
}

Test(gguf_lfm2_bad, tensor_shapes)
{
    static const char *const names[] = {"blk.0.shortconv.conv.weight",
                                        "blk.2.shortconv.in_proj.weight",
                                        "blk.3.shortconv.out_proj.weight"};
    for (int i = 0; i < 3; i++) {
        gg *g = gg_read();
        ti_ent *t = gg_t(g, names[i]);
        if (i == 2) { /* [E, E] -> [E/2, E] (half the data: still inside the file) */
            t->ne[1] /= 2;
        } else {      /* swap the two dims: same byte count, wrong shape */
            uint64_t d = t->ne[0];
            t->ne[0] = t->ne[1];
            t->ne[1] = d;
        }
        gg_expect(g, DEG_ERR_FORMAT, names[i], names[i]);
        gg_free(g);
    }
}
