/* Cartridge persistence as safetensors (see include/cartridge.h) and the
 * model fingerprint that ties a saved cartridge to its model. */
#include <inttypes.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/status.h"
#include "cartridge/cartridge_internal.h"
#include "format/safetensors.h"
#include "model/arch.h"

#define FORMAT_NAME "deg-cartridge/1"
/* Tensor kinds per layer: layers.<il>.keys / values / state. */
static const char *const KIND[3] = {"keys", "values", "state"};

/* The stored tensors of a cartridge, one table for save and load: per layer il
 * and kind kv (0 keys, 1 values: [p, n_head_kv, head_dim] on attention layers;
 * 2 state: [rn] on a hybrid's recurrent layers), the value and its two Adam
 * moments, named PRE[a] "layers.<il>.<kind>". */
static const char *const PRE[3] = {"", "adam.m.", "adam.v."};

typedef struct ctensor {
    int nd;
    int64_t shape[3];
    float *a[3]; /* value, Adam m, Adam v */
} ctensor;

/* Layer il's tensor of kind kv in *t; 0 if the layer has none of that kind. */
static int cart_tensor(const deg_cartridge *c, int il, int kv, ctensor *t)
{
    if (!(kv < 2 ? dg_cartridge_kv_n(c, il) : c->rn[il])) return 0;
    float *const *arr[3][3] = {{c->k, c->mk, c->sk}, {c->v, c->mv, c->sv},
                               {c->r, c->mr, c->sr}};
    t->nd = kv < 2 ? 3 : 1;
    t->shape[0] = kv < 2 ? (int64_t)c->p : (int64_t)c->rn[il];
    t->shape[1] = c->model->layers[il].n_head_kv;
    t->shape[2] = c->model->layers[il].head_dim;
    for (int a = 0; a < 3; a++) t->a[a] = arr[kv][a][il];
    return 1;
}

static void cart_tensor_name(char *name, size_t cap, int a, int il, int kv)
{
    snprintf(name, cap, "%slayers.%d.%s", PRE[a], il, KIND[kv]);
}
#define DRAFT_NAME "draft_reference"

static void sha_floats(struct sha256_ctx *ctx, const float *x, size_t n)
{
    if (x && n) sha256_update(ctx, n * sizeof(float), (const uint8_t *)x);
}

/* Hash row r of w as f32 (the dequantized values whatever dtype it is held
 * in), streamed a block at a time: the same bytes as hashing the f32 row. */
static void sha_row(struct sha256_ctx *ctx, const dg_weight *w, int64_t r)
{
    const uint8_t *p = dg_weight_row_data(w, r);
    if (w->dtype == DG_F32) {
        sha256_update(ctx, (size_t)w->cols * sizeof(float), p);
        return;
    }
    float buf[256];
    int64_t be = dg_dtype_block_elems(w->dtype), step = be > 1 ? be : 256;
    size_t bb = dg_dtype_block_bytes(w->dtype);
    for (int64_t i = 0; i < w->cols; i += step) {
        int64_t n = w->cols - i < step ? w->cols - i : step;
        (void)dg_dequantize(w->dtype, p + (size_t)(i / be) * bb, buf, n);
        sha_floats(ctx, buf, (size_t)n);
    }
}

/* Over the hyper-parameters and a fixed sample of the weights as computed
 * on (f32 after dequantization, whether the model holds them as f32 or in
 * the file's dtype: one model, one fingerprint): enough to tell models
 * apart, cheap to hash. */
void dg_model_fingerprint(const deg_model *m, char hex[65])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    const dg_hparams *hp = &m->hp;
    char head[256];
    int n = snprintf(head, sizeof head, "%s|%d|%d|%d|%d|%d|%d|%d|%.9g|%.9g", m->arch->name,
                     hp->n_vocab, hp->n_embd, hp->n_layer, hp->n_head, hp->n_head_kv,
                     hp->head_dim, hp->n_ff, (double)hp->rope_theta, (double)hp->rms_eps);
    sha256_update(&ctx, (size_t)n, (const uint8_t *)head);
    size_t E = (size_t)hp->n_embd, V = (size_t)hp->n_vocab;
    for (size_t r = 0; r < V; r += V / 16 + 1) sha_row(&ctx, &m->tok_embd, (int64_t)r);
    sha_floats(&ctx, m->out_norm, E);
    sha_row(&ctx, &m->lm_head, (int64_t)V - 1);
    for (int il = 0; il < hp->n_layer; il++) {
        const dg_layer *L = &m->layers[il];
        sha_floats(&ctx, L->attn_norm, E);
        /* row 0 of each (E floats; w_down's is n_ff floats); a recurrent
         * layer has no q/k/v (its norm and MLP still tell models apart) */
        if (L->has_kv) {
            sha_row(&ctx, &L->wq, 0);
            sha_row(&ctx, &L->wk, 0);
            if (L->wv.rows) sha_row(&ctx, &L->wv, 0); /* none: Gemma 4's V = K layers */
        }
        sha_row(&ctx, &L->w_down, 0);
    }
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_digest(&ctx, sizeof d, d);
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
        hex[2 * i] = hx[d[i] >> 4];
        hex[2 * i + 1] = hx[d[i] & 15];
    }
    hex[64] = '\0';
}

typedef struct meta_kv {
    const char *key;
    char val[96];
} meta_kv;

/* The model identity written to / checked against the header. */
static size_t model_meta(const deg_model *m, meta_kv *kv)
{
    const dg_hparams *hp = &m->hp;
    size_t n = 0;
    kv[n].key = "arch"; snprintf(kv[n++].val, 96, "%s", m->arch->name);
    kv[n].key = "n_layer"; snprintf(kv[n++].val, 96, "%d", hp->n_layer);
    kv[n].key = "n_head_kv"; snprintf(kv[n++].val, 96, "%d", hp->n_head_kv);
    kv[n].key = "head_dim"; snprintf(kv[n++].val, 96, "%d", hp->head_dim);
    kv[n].key = "n_embd"; snprintf(kv[n++].val, 96, "%d", hp->n_embd);
    kv[n].key = "n_vocab"; snprintf(kv[n++].val, 96, "%d", hp->n_vocab);
    kv[n].key = "rope_theta"; snprintf(kv[n++].val, 96, "%.9g", (double)hp->rope_theta);
    kv[n].key = "weights_fingerprint"; dg_model_fingerprint(m, kv[n++].val);
    return n;
}

deg_status deg_cartridge_save(const deg_cartridge *c, const char *path, int with_optimizer)
{
    if (!c || !path) return dg_fail(DEG_ERR_ARG, "deg_cartridge_save: NULL argument");
    if (!dg_cartridge_finite(c))
        return dg_fail(DEG_ERR_NUMERIC, "deg_cartridge_save: the cartridge has non-finite "
                       "rows; nothing written to %s", path);
    dg_st_writer *w = NULL;
    DG_TRY(dg_st_writer_new(&w));
    deg_status st = DEG_OK;
    char name[96];
    /* Per layer: keys and values (attention layers), state (a hybrid's
     * recurrent layers, 1-D), each with its Adam moments when asked. */
    for (int il = 0; il < c->n_layer && st == DEG_OK; il++)
        for (int kv = 0; kv < 3 && st == DEG_OK; kv++) {
            ctensor t;
            if (!cart_tensor(c, il, kv, &t)) continue;
            for (int a = 0; a < (with_optimizer ? 3 : 1) && st == DEG_OK; a++) {
                cart_tensor_name(name, sizeof name, a, il, kv);
                st = dg_st_writer_add(w, name, DG_F32, t.nd, t.shape, t.a[a]);
            }
        }
    /* the draft reference as I64 (the entry the spec names; 8 bytes a token) */
    size_t n_draft = deg_draft_ref_len(c->draft);
    int64_t *draft = n_draft ? malloc(n_draft * sizeof *draft) : NULL;
    if (n_draft && !draft && st == DEG_OK)
        st = dg_fail(DEG_ERR_NOMEM, "out of memory for %zu draft ids", n_draft);
    if (draft && st == DEG_OK) {
        const int32_t *ids = deg_draft_ref_ids(c->draft);
        for (size_t i = 0; i < n_draft; i++) draft[i] = ids[i];
        int64_t dshape[1] = {(int64_t)n_draft};
        st = dg_st_writer_add(w, DRAFT_NAME, DG_I64, 1, dshape, draft);
    }
    meta_kv mk[12];
    size_t nm = model_meta(c->model, mk);
    char buf[64];
    if (st == DEG_OK) st = dg_st_writer_meta(w, "format", FORMAT_NAME);
    snprintf(buf, sizeof buf, "%zu", c->frozen);
    if (st == DEG_OK) st = dg_st_writer_meta(w, "frozen_prefix", buf);
    snprintf(buf, sizeof buf, "%" PRId64, c->steps);
    if (st == DEG_OK) st = dg_st_writer_meta(w, "adam_steps", buf);
    for (size_t i = 0; i < nm && st == DEG_OK; i++) st = dg_st_writer_meta(w, mk[i].key, mk[i].val);
    /* whole saves (issue 19): the file is written atomically (temp + rename);
     * under the directory's save lock, what killed saves left is removed */
    char *dir = st == DEG_OK ? dg_dir_of(path) : NULL;
    int lock = dir ? dg_dir_lock(dir, 1) : -1;
    if (st == DEG_OK) dg_remove_stale_temps(path);
    if (st == DEG_OK) st = dg_st_writer_commit(w, path);
    dg_dir_unlock(lock);
    free(dir);
    dg_st_writer_free(w);
    free(draft);
    if (st != DEG_OK) return dg_fail_context(st, "deg_cartridge_save %s", path);
    return DEG_OK;
}

/* After a load: with no save running (the lock is free), remove the
 * temporaries killed saves of path left. */
static void tidy(const char *path)
{
    char *dir = dg_dir_of(path);
    int lock = dir ? dg_dir_lock(dir, 0) : -1;
    if (lock >= 0) dg_remove_stale_temps(path);
    dg_dir_unlock(lock);
    free(dir);
}

/* A count in the metadata: decimal digits only (no sign, spaces or other
 * text, as written by deg_cartridge_save), at most 18 of them, so the value
 * and the optimizer's next step count fit int64 (strtoll would clamp 2^63
 * and more to INT64_MAX and accept " 3" and "+3"). */
static deg_status parse_size(const dg_safetensors *st, const char *key, const char *path,
                             long long lo, long long *out)
{
    const char *v = dg_safetensors_meta(st, key);
    size_t n = v ? strlen(v) : 0, i = 0;
    while (i < n && v[i] >= '0' && v[i] <= '9') i++;
    long long x = 0;
    for (size_t j = 0; j < i && i == n && n <= 18; j++) x = 10 * x + (v[j] - '0');
    if (!v || n == 0 || i != n || n > 18 || x < lo)
        return dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: metadata \"%s\" %s%s%s is not a "
                       "decimal integer >= %lld of at most 18 digits", path, key,
                       v ? "\"" : "missing", v ? v : "", v ? "\"" : "", lo);
    *out = x;
    return DEG_OK;
}

/* Copy tensor `name` ([p, Hkv, D] F32) into dst; required or optional. */
/* Tensor name, F32 of the given shape (n_dims 3: [p, n_head_kv, head_dim]
 * rows; 1: a recurrent layer's state [n]), into dst. */
static deg_status read_rows(const dg_safetensors *st, const char *name, int n_dims,
                            const int64_t *shape, float *dst, int required, int *found,
                            const char *path)
{
    const dg_tensor_view *t = dg_safetensors_find(st, name);
    if (found) *found = t != NULL;
    if (!t) {
        if (!required) return DEG_OK;
        return dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: tensor %s missing", path, name);
    }
    int ok = t->dtype == DG_F32 && t->n_dims == n_dims;
    size_t n = 1;
    for (int i = 0; ok && i < n_dims; i++) {
        ok = t->shape[i] == shape[i];
        n *= (size_t)shape[i];
    }
    if (!ok && n_dims == 1)
        return dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: tensor %s is %s with %d dims, "
                       "expected F32 [%" PRId64 "] (the layer's recurrent state)", path, name,
                       dg_dtype_name(t->dtype), t->n_dims, shape[0]);
    if (!ok)
        return dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: tensor %s is %s with %d dims, "
                       "expected F32 [%" PRId64 ", %" PRId64 ", %" PRId64 "]", path, name,
                       dg_dtype_name(t->dtype), t->n_dims, shape[0], shape[1], shape[2]);
    memcpy(dst, t->data, n * sizeof(float));
    return DEG_OK;
}

/* The optional draft reference: I64 [n >= 1], ids in the vocabulary; its
 * suffix index is built here, once. */
static deg_status read_draft(const dg_safetensors *st, deg_cartridge *c, const char *path,
                             int *found)
{
    const dg_tensor_view *t = dg_safetensors_find(st, DRAFT_NAME);
    *found = t != NULL;
    if (!t) return DEG_OK;
    if (t->dtype != DG_I64 || t->n_dims != 1 || t->shape[0] < 1)
        return dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: tensor " DRAFT_NAME " is %s "
                       "with %d dims, expected I64 [n] with n >= 1", path,
                       dg_dtype_name(t->dtype), t->n_dims);
    size_t n = (size_t)t->shape[0];
    int32_t *ids = malloc(n * sizeof *ids);
    if (!ids) return dg_fail(DEG_ERR_NOMEM, "deg_cartridge_load %s: out of memory for %zu "
                             "draft ids", path, n);
    deg_status s = DEG_OK;
    for (size_t i = 0; i < n && s == DEG_OK; i++) {
        int64_t v;
        memcpy(&v, (const uint8_t *)t->data + i * sizeof v, sizeof v); /* may be unaligned */
        if (v < 0 || v >= c->model->hp.n_vocab)
            s = dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: " DRAFT_NAME "[%zu] = %" PRId64
                        " is not a token id of the model (n_vocab %d)", path, i, v,
                        (int)c->model->hp.n_vocab);
        ids[i] = (int32_t)v;
    }
    if (s == DEG_OK) s = deg_cartridge_set_draft_ref(c, ids, n);
    free(ids);
    return s;
}

deg_status deg_cartridge_load(const deg_model *m, const char *path, deg_cartridge **out)
{
    if (!m || !path || !out) return dg_fail(DEG_ERR_ARG, "deg_cartridge_load: NULL argument");
    *out = NULL;
    dg_safetensors *st = NULL;
    deg_status s = dg_safetensors_open(path, &st);
    if (s != DEG_OK) return dg_fail_context(s, "deg_cartridge_load");
    deg_cartridge *c = NULL;
    const char *fmt = dg_safetensors_meta(st, "format");
    if (!fmt || strcmp(fmt, FORMAT_NAME) != 0) {
        s = dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: not a deg cartridge (metadata "
                    "\"format\" is %s%s%s, expected \"" FORMAT_NAME "\")", path,
                    fmt ? "\"" : "", fmt ? fmt : "absent", fmt ? "\"" : "");
        goto done;
    }
    /* The model identity, field by field: the first difference is named. */
    meta_kv mk[12];
    size_t nm = model_meta(m, mk);
    for (size_t i = 0; i < nm; i++) {
        const char *v = dg_safetensors_meta(st, mk[i].key);
        if (!v) {
            s = dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: metadata \"%s\" missing", path,
                        mk[i].key);
            goto done;
        }
        if (strcmp(v, mk[i].val) != 0) {
            s = dg_fail(DEG_ERR_MISMATCH, "deg_cartridge_load %s: saved for another model: %s "
                        "is %s in the file, %s in the loaded model", path, mk[i].key, v,
                        mk[i].val);
            goto done;
        }
    }
    /* Geometry from the header: p from the first attention layer's keys. */
    int il0 = 0;
    while (il0 < m->hp.n_layer && !m->layers[il0].has_kv) il0++;
    char name0[64];
    snprintf(name0, sizeof name0, "layers.%d.keys", il0);
    const dg_tensor_view *t0 = dg_safetensors_find(st, name0);
    if (!t0 || t0->n_dims != 3 || t0->shape[0] < 1) {
        s = dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: tensor %s missing or not [p, "
                    "n_head_kv, head_dim] with p >= 1", path, name0);
        goto done;
    }
    long long frozen = 0, steps = 0;
    if ((s = parse_size(st, "frozen_prefix", path, 0, &frozen)) != DEG_OK) goto done;
    if ((s = parse_size(st, "adam_steps", path, 0, &steps)) != DEG_OK) goto done;
    size_t p = (size_t)t0->shape[0];
    if ((size_t)frozen > p) {
        s = dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: frozen_prefix %lld > p = %zu", path,
                    frozen, p);
        goto done;
    }
    if ((s = dg_cartridge_alloc(m, p, &c)) != DEG_OK) goto done;
    c->frozen = (size_t)frozen;
    c->steps = steps;
    char name[96];
    int have[3] = {0}, n_main = 0;
    for (int il = 0; il < c->n_layer && s == DEG_OK; il++)
        for (int kv = 0; kv < 3 && s == DEG_OK; kv++) {
            ctensor t;
            if (!cart_tensor(c, il, kv, &t)) continue;
            n_main++;
            for (int a = 0; a < 3 && s == DEG_OK; a++) {
                int f = 0;
                cart_tensor_name(name, sizeof name, a, il, kv);
                s = read_rows(st, name, t.nd, t.shape, t.a[a], a == 0, a ? &f : NULL, path);
                have[a] += f;
            }
        }
    int have_m = have[1], have_v = have[2];
    if (s == DEG_OK && (have_m || have_v) && (have_m != n_main || have_v != n_main))
        s = dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: optimizer moments incomplete",
                    path);
    int have_draft = 0;
    if (s == DEG_OK) s = read_draft(st, c, path, &have_draft);
    size_t expect = (size_t)n_main * (have_m ? 3 : 1) + (size_t)have_draft;
    if (s == DEG_OK && dg_safetensors_n_tensors(st) != expect)
        s = dg_fail(DEG_ERR_FORMAT, "deg_cartridge_load %s: %zu tensors, expected %zu for %d "
                    "layers", path, dg_safetensors_n_tensors(st), expect, c->n_layer);
    if (s == DEG_OK && !dg_cartridge_finite(c))
        s = dg_fail(DEG_ERR_NUMERIC, "deg_cartridge_load %s: non-finite rows", path);
done:
    dg_safetensors_close(st);
    if (s != DEG_OK) {
        deg_cartridge_free(c);
        return s;
    }
    tidy(path);
    *out = c;
    return DEG_OK;
}
