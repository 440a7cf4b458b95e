/* deg_features_extract / deg_features_extract_anchored (deg.h "Training"):
 * what the heads read for one (request, gold value), through the runtime's
 * own trunk and forks (dg_fill_trace, fill_trace.c) with teacher-forced array
 * counts, or in anchor mode (§12.6) teacher-forced gold anchors. The backbone
 * is frozen during head training, so the trainer computes these once per
 * record and reuses them every epoch (§12.4). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "base/strmap.h"
#include "deg/fill.h"
#include "deg/jsonptr.h"
#include "deg/plan.h"
#include "model/sample.h"

typedef struct feat_impl {
    deg_features pub;          /* first: deg_features * <-> feat_impl * */
    deg_feature_fork *forks;
    deg_feature_anchor *anch;  /* [cap_forks] in anchor traces, else NULL */
    deg_feature_tokens *toks;  /* [cap_forks] */
    size_t cap_forks;
    float *ctx_hidden;
    size_t *tok_cp;
    int32_t *trunk_ids;
} feat_impl;

typedef struct tracer {
    feat_impl *f;
    json_t *gold;
    json_t *anchors;           /* anchor traces: the gold anchors object, else NULL */
    uint64_t seed;
    unsigned flags;
    int E;
} tracer;

/* The value at JSON pointer p in v (borrowed), NULL if absent. */
static json_t *resolve(json_t *v, const char *p) { return (json_t *)dg_jsonptr_get(v, p, NULL); }

static int64_t gold_items(const tracer *t, const char *pointer)
{
    json_t *a = resolve(t->gold, pointer);
    return json_is_array(a) ? (int64_t)json_array_size(a) : 0;
}

static deg_status hook_count(void *ud, size_t array, const char *pointer, int64_t *n)
{
    (void)array;
    *n = gold_items(ud, pointer);
    return DEG_OK;
}

static int hook_want(void *ud, int kind, size_t index, int mode)
{
    const tracer *t = ud;
    (void)index;
    if (t->flags & DEG_FEATURES_CHOICE_ONLY)
        return kind == DG_TRACE_LEAF && mode == DG_MODE_CHOICE;
    return 1;
}

static int hook_shuffle(void *ud, const char *pointer, size_t n, size_t *order)
{
    const tracer *t = ud;
    if (!t->seed) return 0;
    dg_rng rng;
    dg_rng_seed(&rng, t->seed * 0x9E3779B97F4A7C15ull ^ dg_fnv1a64(pointer));
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(dg_rng_next(&rng) % (uint64_t)(i + 1));
        size_t x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    return 1;
}

static deg_status hook_trunk(void *ud, const float *ctx_hidden, size_t nc, const size_t *cp0,
                             const size_t *cp1, const int32_t *trunk_ids, size_t n_trunk,
                             size_t c0)
{
    tracer *t = ud;
    feat_impl *f = t->f;
    f->ctx_hidden = malloc((nc ? nc : 1) * (size_t)t->E * sizeof(float));
    f->tok_cp = malloc((nc ? nc : 1) * 2 * sizeof(size_t));
    f->trunk_ids = malloc((n_trunk ? n_trunk : 1) * sizeof(int32_t));
    if (!f->ctx_hidden || !f->tok_cp || !f->trunk_ids)
        return dg_fail(DEG_ERR_NOMEM, "features: out of memory");
    memcpy(f->ctx_hidden, ctx_hidden, nc * (size_t)t->E * sizeof(float));
    memcpy(f->trunk_ids, trunk_ids, n_trunk * sizeof(int32_t));
    f->pub.trunk_ids = f->trunk_ids;
    f->pub.ctx_first = c0;
    for (size_t i = 0; i < nc; i++) {
        f->tok_cp[2 * i] = cp0[i];
        f->tok_cp[2 * i + 1] = cp1[i];
    }
    f->pub.n_ctx = nc;
    f->pub.ctx_hidden = f->ctx_hidden;
    f->pub.tok_cp = f->tok_cp;
    f->pub.n_trunk_tokens = n_trunk;
    return DEG_OK;
}

static deg_status hook_fork(void *ud, const dg_trace_fork *tf)
{
    tracer *t = ud;
    feat_impl *f = t->f;
    void *const arrs[] = {&f->forks, &f->toks, &f->anch};
    const size_t elems[] = {sizeof *f->forks, sizeof *f->toks, sizeof *f->anch};
    deg_status st = dg_grow_all(arrs, elems, t->anchors ? 3 : 2, &f->cap_forks, f->pub.n_forks + 1);
    f->pub.forks = f->forks; /* the public views follow their arrays, grown or not */
    f->pub.tokens = f->toks;
    if (t->anchors) f->pub.anchor = f->anch;
    if (st != DEG_OK) return dg_fail_context(st, "features");
    deg_feature_fork *o = &f->forks[f->pub.n_forks];
    memset(o, 0, sizeof *o);
    deg_feature_tokens *tok = &f->toks[f->pub.n_forks];
    memset(tok, 0, sizeof *tok);
    o->count_gold = -1;
    deg_feature_anchor *an = t->anchors ? &f->anch[f->pub.n_forks] : NULL;
    if (an) *an = (deg_feature_anchor){tf->anchor, tf->rend, -1, -1, 0, NULL};
    f->pub.n_forks++; /* counted now so deg_features_free releases a partial entry */
    char *ptr = strdup(tf->pointer);
    float *h = malloc((tf->n_rows ? tf->n_rows : 1) * (size_t)t->E * sizeof(float));
    o->pointer = ptr;
    o->hidden = h;
    if (!ptr || !h) return dg_fail(DEG_ERR_NOMEM, "features: out of memory");
    memcpy(h, tf->hidden, tf->n_rows * (size_t)t->E * sizeof(float));
    o->n_rows = (int32_t)tf->n_rows;
    o->index = (int32_t)tf->index;
    o->n_tokens = (int32_t)tf->n_tokens;
    int32_t *ids = malloc((tf->n_tokens ? tf->n_tokens : 1) * sizeof *ids);
    size_t *rows = malloc((tf->n_rows ? tf->n_rows : 1) * sizeof *rows);
    tok->ids = ids;
    tok->rows = rows;
    if (!ids || !rows) return dg_fail(DEG_ERR_NOMEM, "features: out of memory");
    memcpy(ids, tf->ids, tf->n_tokens * sizeof *ids);
    memcpy(rows, tf->marks, tf->n_rows * sizeof *rows);
    tok->n_ids = tf->n_tokens;
    tok->head_kind = tf->head_kind;
    if (tf->kind == DG_TRACE_ANCHOR) {
        o->mode = "anchor";
        an->r0 = (int64_t)tf->r0;
        an->r1 = (int64_t)tf->r1;
        int32_t *st = malloc((tf->n_starts ? tf->n_starts : 1) * sizeof *st);
        if (!st) return dg_fail(DEG_ERR_NOMEM, "features: out of memory");
        for (size_t i = 0; i < tf->n_starts; i++) st[i] = (int32_t)tf->starts[i];
        an->starts = st;
        an->n_starts = tf->n_starts;
        o->count_gold = (int32_t)tf->n_starts;
        return DEG_OK;
    }
    if (tf->kind == DG_TRACE_COUNT) {
        o->mode = tf->anchored ? "anchor_count" : "count";
        o->count_lo = (int32_t)tf->lo;
        o->count_hi = (int32_t)tf->hi;
        o->count_gold = (int32_t)gold_items(t, tf->pointer);
        return DEG_OK;
    }
    o->mode = dg_mode_name((dg_mode)tf->mode);
    if (tf->mode == DG_MODE_CHOICE || tf->mode == DG_MODE_SCORE) {
        size_t n = tf->n_rows - 1;
        int32_t *ord = malloc((n ? n : 1) * sizeof *ord);
        if (!ord) return dg_fail(DEG_ERR_NOMEM, "features: out of memory");
        for (size_t i = 0; i < n; i++) ord[i] = (int32_t)(tf->order ? tf->order[i] : i);
        o->order = ord;
    }
    return DEG_OK;
}

/* Gold anchors of an anchored instance (dg_trace_hooks.anchors): the
 * anchors object's starts (code points) mapped to context tokens. Left out
 * and counted: no usable entry (n_anchor_skipped), anchors sharing a token or
 * outside the instance's token region (n_anchor_shared). */
static deg_status hook_anchors(void *ud, size_t array, const char *pointer, size_t r0, size_t r1,
                               const size_t *cp_tok, size_t n_cp, int64_t *n, size_t **starts)
{
    tracer *t = ud;
    feat_impl *f = t->f;
    (void)array;
    *n = -1;
    *starts = NULL;
    json_t *e = json_object_get(t->anchors, pointer);
    json_t *st = json_object_get(e, "starts");
    json_t *items = resolve(t->gold, pointer);
    size_t m = json_array_size(st);
    if (!json_is_array(st) || !json_is_array(items) || json_array_size(items) != m) {
        f->pub.n_anchor_skipped++;
        return DEG_OK;
    }
    size_t *tok = malloc((m ? m : 1) * sizeof *tok);
    if (!tok) return dg_fail(DEG_ERR_NOMEM, "features: out of memory");
    for (size_t i = 0; i < m; i++) {
        json_int_t cp = json_integer_value(json_array_get(st, i));
        if (cp < 0 || (size_t)cp >= n_cp) { /* checked as integers by the caller */
            free(tok);
            f->pub.n_anchor_skipped++;
            return DEG_OK;
        }
        tok[i] = cp_tok[cp];
        int bad = tok[i] < r0 || tok[i] >= r1;
        for (size_t j = 0; j < i && !bad; j++) bad = tok[j] == tok[i];
        if (bad) {
            free(tok);
            f->pub.n_anchor_shared++;
            return DEG_OK;
        }
    }
    f->pub.n_anchor_arrays++;
    *n = (int64_t)m;
    *starts = tok;
    return DEG_OK;
}

/* anchors: an object whose values are null or {"starts": [integer >= 0, ...], ...}. */
static deg_status check_anchors(const json_t *a)
{
    if (!json_is_object(a))
        return dg_fail(DEG_ERR_ARG, "deg_features_extract_anchored: anchors is not a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)a, key, v) {
        if (json_is_null(v)) continue;
        json_t *st = json_object_get(v, "starts");
        if (!json_is_object(v) || !json_is_array(st))
            return dg_fail(DEG_ERR_ARG, "deg_features_extract_anchored: anchors[\"%s\"]: not null "
                           "or an object with a \"starts\" array", key);
        size_t i;
        json_t *x;
        json_array_foreach(st, i, x) {
            if (!json_is_integer(x) || json_integer_value(x) < 0)
                return dg_fail(DEG_ERR_ARG, "deg_features_extract_anchored: anchors[\"%s\"]."
                               "starts[%zu] is not an integer >= 0", key, i);
        }
    }
    return DEG_OK;
}

void deg_features_free(deg_features *features)
{
    if (!features) return;
    feat_impl *f = (feat_impl *)features;
    for (size_t i = 0; i < f->pub.n_forks; i++) {
        free((char *)f->forks[i].pointer);
        free((float *)f->forks[i].hidden);
        free((int32_t *)f->forks[i].order);
        if (f->anch) free((int32_t *)f->anch[i].starts);
        free((int32_t *)f->toks[i].ids);
        free((size_t *)f->toks[i].rows);
    }
    free(f->forks);
    free(f->anch);
    free(f->toks);
    free(f->trunk_ids);
    free(f->ctx_hidden);
    free(f->tok_cp);
    free(f);
}

/* anchors_json == NULL: index trace (deg_features_extract) */
static deg_status extract(const char *fn, deg_ckpt *ckpt, const char *request_json, size_t len,
                          const char *gold_json, size_t gold_len, const char *anchors_json,
                          size_t anchors_len, uint64_t shuffle_seed, unsigned flags,
                          deg_features **out, char **errors_json)
{
    if (errors_json) *errors_json = NULL;
    if (out) *out = NULL;
    if (!ckpt || !request_json || !gold_json || !out)
        return dg_fail(DEG_ERR_ARG, "%s: NULL argument", fn);
    unsigned known = DEG_FEATURES_CHOICE_ONLY | (anchors_json ? DEG_FEATURES_ANCHORED_ONLY : 0u);
    if (flags & ~known)
        return dg_fail(DEG_ERR_ARG, "%s: unknown flags 0x%x", fn, flags);
    json_error_t e;
    json_t *gold = json_loadb(gold_json, gold_len, JSON_DECODE_ANY, &e);
    if (!gold)
        return dg_fail(DEG_ERR_ARG, "%s: gold value is not JSON: %s (line %d)", fn, e.text,
                       e.line);
    json_t *anchors = NULL;
    if (anchors_json) {
        anchors = json_loadb(anchors_json, anchors_len, 0, &e);
        deg_status sa = anchors ? check_anchors(anchors)
                                : dg_fail(DEG_ERR_ARG, "%s: anchors are not JSON: %s (line %d)",
                                          fn, e.text, e.line);
        if (sa != DEG_OK) {
            json_decref(gold);
            json_decref(anchors);
            return sa;
        }
    }
    feat_impl *f = calloc(1, sizeof *f);
    if (!f) {
        json_decref(gold);
        json_decref(anchors);
        return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", fn);
    }
    f->pub.n_embd = ckpt->h.E;
    tracer t = {f, gold, anchors, shuffle_seed, flags, ckpt->h.E};
    dg_trace_hooks h = {&t, hook_count, hook_want, hook_shuffle, hook_trunk, hook_fork,
                        anchors ? hook_anchors : NULL,
                        anchors && (flags & DEG_FEATURES_ANCHORED_ONLY)};
    deg_status st = dg_fill_trace(ckpt, request_json, len, &h, errors_json);
    json_decref(gold);
    json_decref(anchors);
    if (st != DEG_OK) {
        deg_features_free(&f->pub);
        return st;
    }
    *out = &f->pub;
    return DEG_OK;
}

deg_status deg_features_extract(deg_ckpt *ckpt, const char *request_json, size_t len,
                                const char *gold_json, size_t gold_len, uint64_t shuffle_seed,
                                unsigned flags, deg_features **out, char **errors_json)
{
    return extract("deg_features_extract", ckpt, request_json, len, gold_json, gold_len, NULL, 0,
                   shuffle_seed, flags, out, errors_json);
}

deg_status deg_features_extract_anchored(deg_ckpt *ckpt, const char *request_json, size_t len,
                                         const char *gold_json, size_t gold_len,
                                         const char *anchors_json, size_t anchors_len,
                                         uint64_t shuffle_seed, unsigned flags,
                                         deg_features **out, char **errors_json)
{
    if (!anchors_json) {
        if (errors_json) *errors_json = NULL;
        if (out) *out = NULL;
        return dg_fail(DEG_ERR_ARG, "deg_features_extract_anchored: NULL anchors");
    }
    return extract("deg_features_extract_anchored", ckpt, request_json, len, gold_json, gold_len,
                   anchors_json, anchors_len, shuffle_seed, flags, out, errors_json);
}
