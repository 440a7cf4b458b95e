/* Cartridge rows: allocation, initialisation (capture, random vectors, random
 * text), row access, and the serving write into a trunk. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "cartridge/cartridge_internal.h"
#include "model/arch.h"
#include "model/sample.h"
#include "model/state.h"
#include "tokenizer/tokenizer.h"

/* [n_layer] blocks of n[il] floats (at least one float each), zeroed. */
static float **rows_alloc(int n_layer, const size_t *n)
{
    float **r = calloc((size_t)n_layer, sizeof *r);
    if (!r) return NULL;
    for (int il = 0; il < n_layer; il++) {
        r[il] = calloc(n[il] ? n[il] : 1, sizeof(float));
        if (!r[il]) {
            for (int j = 0; j < il; j++) free(r[j]);
            free(r);
            return NULL;
        }
    }
    return r;
}

static void rows_free(float **r, int n_layer)
{
    for (int il = 0; r && il < n_layer; il++) free(r[il]);
    free(r);
}

void deg_cartridge_free(deg_cartridge *c)
{
    if (!c) return;
    float **all[] = {c->k, c->v, c->gk, c->gv, c->mk, c->mv, c->sk, c->sv,
                     c->r, c->gr, c->mr, c->sr};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) rows_free(all[i], c->n_layer);
    free(c->rn);
    deg_draft_ref_free(c->draft);
    free(c);
}

size_t dg_cartridge_row(const deg_cartridge *c, int il)
{
    return c->model->layers[il].has_kv ? c->model->layers[il].kv_row : 0;
}

size_t deg_cartridge_row_len(const deg_cartridge *c, int32_t layer)
{
    return c && layer >= 0 && layer < c->n_layer ? dg_cartridge_row(c, layer) : 0;
}

size_t dg_cartridge_kv_n(const deg_cartridge *c, int il)
{
    return c->p * dg_cartridge_row(c, il);
}

deg_status dg_cartridge_alloc(const deg_model *m, size_t p, deg_cartridge **out)
{
    /* A cartridge is K/V rows for every attention layer (cartridges.md)
     * and, on a hybrid, the initial state of every recurrent layer. */
    deg_cartridge *c = calloc(1, sizeof *c);
    if (!c) return dg_fail(DEG_ERR_NOMEM, "cartridge: out of memory");
    c->model = m;
    c->p = p;
    c->n_layer = m->hp.n_layer;
    c->frozen = p ? 1 : 0;
    size_t *nkv = calloc((size_t)c->n_layer, sizeof *nkv);
    c->rn = calloc((size_t)c->n_layer, sizeof *c->rn);
    int ok = nkv && c->rn;
    for (int il = 0; ok && il < c->n_layer; il++) {
        nkv[il] = dg_cartridge_kv_n(c, il);
        c->rn[il] = m->layers[il].state_floats;
    }
    float ***all[] = {&c->k, &c->v, &c->gk, &c->gv, &c->mk, &c->mv, &c->sk, &c->sv,
                      &c->r, &c->gr, &c->mr, &c->sr};
    for (size_t i = 0; ok && i < sizeof all / sizeof all[0]; i++) {
        *all[i] = rows_alloc(c->n_layer, i < 8 ? nkv : c->rn);
        ok = *all[i] != NULL;
    }
    free(nkv);
    if (!ok) {
        deg_cartridge_free(c);
        return dg_fail(DEG_ERR_NOMEM, "cartridge: cannot allocate %zu rows", p);
    }
    *out = c;
    return DEG_OK;
}

static deg_status check_new(const deg_model *m, size_t p, deg_cartridge **out, const char *w)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "%s: out is NULL", w);
    *out = NULL;
    if (!m) return dg_fail(DEG_ERR_ARG, "%s: model is NULL", w);
    if (p == 0) return dg_fail(DEG_ERR_ARG, "%s: p = 0 (a cartridge needs at least one row)", w);
    return DEG_OK;
}

deg_status deg_cartridge_init_tokens(const deg_model *m, const int32_t *ids, size_t p,
                                     deg_cartridge **out)
{
    DG_TRY(check_new(m, p, out, "deg_cartridge_init_tokens"));
    if (!ids) return dg_fail(DEG_ERR_ARG, "deg_cartridge_init_tokens: ids is NULL");
    deg_trunk *t = NULL;
    DG_TRY(deg_trunk_new(m, &t));
    deg_status st = deg_trunk_prefill(t, ids, p, NULL, NULL);
    deg_cartridge *c = NULL;
    if (st == DEG_OK) st = dg_cartridge_alloc(m, p, &c);
    if (st == DEG_OK)
        for (int il = 0; il < c->n_layer; il++) {
            if (dg_cartridge_kv_n(c, il)) dg_trunk_get_kv(t, il, 0, p, c->k[il], c->v[il]);
            if (c->rn[il]) dg_trunk_get_rec(t, il, c->r[il]);
        }
    deg_trunk_free(t);
    if (st != DEG_OK) return dg_fail_context(st, "deg_cartridge_init_tokens");
    *out = c;
    return DEG_OK;
}

deg_status deg_cartridge_init_corpus(const deg_model *m, const char *text, size_t len,
                                     size_t p, deg_cartridge **out)
{
    DG_TRY(check_new(m, p, out, "deg_cartridge_init_corpus"));
    if (!text && len) return dg_fail(DEG_ERR_ARG, "deg_cartridge_init_corpus: text is NULL");
    /* The corpus as a system message in the model's chat layout: render a
     * system message holding a sentinel with deg_chat_format and split the
     * text around it. The layout parts are tokenized with special tokens
     * parsed, the corpus without (special-token text in a corpus stays
     * text). Models without a chat layout get the raw corpus. */
    if (!m->tok)
        return dg_fail(DEG_ERR_STATE, "deg_cartridge_init_corpus: the model has no tokenizer");
    static const char sentinel[] = "\001DEG_CORPUS\001";
    deg_chat_message msg = {"system", sentinel};
    char *rendered = NULL;
    const char *pre = "", *post = "";
    deg_status cs = deg_chat_format(m, &msg, 1, 0, &rendered);
    if (cs == DEG_OK) {
        char *at = strstr(rendered, sentinel);
        if (!at) {
            free(rendered);
            return dg_fail(DEG_ERR_INTERNAL, "deg_cartridge_init_corpus: the chat layout lost "
                           "the system message");
        }
        *at = '\0';
        pre = rendered;
        post = at + strlen(sentinel);
    } else if (cs == DEG_ERR_UNSUPPORTED) {
        dg_clear_error();
    } else {
        return dg_fail_context(cs, "deg_cartridge_init_corpus");
    }
    size_t n = strlen(pre) + len + strlen(post);
    size_t cap = n + 16, n_ids = 0, k = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    deg_status st = ids ? DEG_OK : dg_fail(DEG_ERR_NOMEM, "deg_cartridge_init_corpus: oom");
    const char *parts[3] = {pre, text, post};
    size_t lens[3] = {strlen(pre), len, strlen(post)};
    for (int i = 0; i < 3 && st == DEG_OK; i++) {
        if (!lens[i]) continue;
        st = dg_tokenizer_encode(m->tok, parts[i], lens[i], i != 1, ids + k, cap - k, &n_ids);
        k += n_ids;
    }
    free(rendered);
    if (st == DEG_OK && k < p)
        st = dg_fail(DEG_ERR_RANGE,
                     "deg_cartridge_init_corpus: p = %zu is larger than the corpus (%zu tokens "
                     "wrapped as a system message)", p, k);
    if (st == DEG_OK) st = deg_cartridge_init_tokens(m, ids, p, out);
    free(ids);
    if (st != DEG_OK && st != DEG_ERR_RANGE) return dg_fail_context(st, "corpus init");
    return st;
}

deg_status deg_cartridge_init_random_vectors(const deg_model *m, size_t p, uint64_t seed,
                                             deg_cartridge **out)
{
    DG_TRY(check_new(m, p, out, "deg_cartridge_init_random_vectors"));
    deg_cartridge *c = NULL;
    DG_TRY(dg_cartridge_alloc(m, p, &c));
    dg_rng rng;
    dg_rng_seed(&rng, seed);
    for (int il = 0; il < c->n_layer; il++)
        for (int kv = 0; kv < 2; kv++) {
            size_t n = dg_cartridge_kv_n(c, il); /* recurrent layers: the zero state */
            float *r = kv ? c->v[il] : c->k[il];
            /* Box-Muller: two normals per pair of uniforms. */
            for (size_t i = 0; i < n; i += 2) {
                double u1 = dg_rng_uniform(&rng), u2 = dg_rng_uniform(&rng);
                double rad = sqrt(-2.0 * log(1.0 - u1));
                r[i] = (float)(rad * cos(2.0 * M_PI * u2));
                if (i + 1 < n) r[i + 1] = (float)(rad * sin(2.0 * M_PI * u2));
            }
        }
    *out = c;
    return DEG_OK;
}

deg_status deg_cartridge_init_random_text(const deg_model *m, size_t p, uint64_t seed,
                                          deg_cartridge **out)
{
    DG_TRY(check_new(m, p, out, "deg_cartridge_init_random_text"));
    int32_t *ids = malloc(p * sizeof *ids);
    if (!ids) return dg_fail(DEG_ERR_NOMEM, "deg_cartridge_init_random_text: out of memory");
    dg_rng rng;
    dg_rng_seed(&rng, seed);
    for (size_t i = 0; i < p; i++)
        ids[i] = (int32_t)(dg_rng_next(&rng) % (uint64_t)m->hp.n_vocab);
    deg_status st = deg_cartridge_init_tokens(m, ids, p, out);
    free(ids);
    return st;
}

size_t deg_cartridge_len(const deg_cartridge *c) { return c ? c->p : 0; }
size_t deg_cartridge_frozen_prefix(const deg_cartridge *c) { return c ? c->frozen : 0; }
int64_t deg_cartridge_steps(const deg_cartridge *c) { return c ? c->steps : 0; }

deg_status deg_cartridge_set_frozen_prefix(deg_cartridge *c, size_t n)
{
    if (!c) return dg_fail(DEG_ERR_ARG, "deg_cartridge_set_frozen_prefix: NULL cartridge");
    if (n > c->p)
        return dg_fail(DEG_ERR_RANGE,
                       "deg_cartridge_set_frozen_prefix: %zu frozen rows > p = %zu", n, c->p);
    c->frozen = n;
    return DEG_OK;
}

static deg_status check_layer(const deg_cartridge *c, int32_t layer, const char *w)
{
    if (!c) return dg_fail(DEG_ERR_ARG, "%s: NULL cartridge", w);
    if (layer < 0 || layer >= c->n_layer)
        return dg_fail(DEG_ERR_RANGE, "%s: layer %d outside [0, %d)", w, (int)layer,
                       c->n_layer);
    const dg_layer *L = &c->model->layers[layer];
    if (L->kv_shared && c->p)
        return dg_fail(DEG_ERR_ARG, "%s: layer %d keeps no K/V rows: it reads layer %d's "
                       "(KV sharing)", w, (int)layer, L->kv_src);
    if (!dg_cartridge_kv_n(c, layer) && c->p)
        return dg_fail(DEG_ERR_ARG, "%s: layer %d is a recurrent layer (no K/V rows; its part "
                       "of the cartridge is a state: deg_cartridge_get_state)", w, (int)layer);
    return DEG_OK;
}

deg_status deg_cartridge_get_rows(const deg_cartridge *c, int32_t layer, float *keys,
                                  float *values)
{
    DG_TRY(check_layer(c, layer, "deg_cartridge_get_rows"));
    size_t n = dg_cartridge_kv_n(c, layer) * sizeof(float);
    if (keys) memcpy(keys, c->k[layer], n);
    if (values) memcpy(values, c->v[layer], n);
    return DEG_OK;
}

deg_status deg_cartridge_set_rows(deg_cartridge *c, int32_t layer, const float *keys,
                                  const float *values)
{
    DG_TRY(check_layer(c, layer, "deg_cartridge_set_rows"));
    size_t n = dg_cartridge_kv_n(c, layer) * sizeof(float);
    if (keys) memcpy(c->k[layer], keys, n);
    if (values) memcpy(c->v[layer], values, n);
    return DEG_OK;
}

deg_status deg_cartridge_get_grads(const deg_cartridge *c, int32_t layer, float *dkeys,
                                   float *dvalues)
{
    DG_TRY(check_layer(c, layer, "deg_cartridge_get_grads"));
    size_t n = dg_cartridge_kv_n(c, layer) * sizeof(float);
    if (dkeys) memcpy(dkeys, c->gk[layer], n);
    if (dvalues) memcpy(dvalues, c->gv[layer], n);
    return DEG_OK;
}

size_t deg_cartridge_state_len(const deg_cartridge *c, int32_t layer)
{
    return c && layer >= 0 && layer < c->n_layer ? c->rn[layer] : 0;
}

static deg_status check_state(const deg_cartridge *c, int32_t layer, const void *buf,
                              const char *w)
{
    if (!c || !buf) return dg_fail(DEG_ERR_ARG, "%s: NULL argument", w);
    if (layer < 0 || layer >= c->n_layer)
        return dg_fail(DEG_ERR_RANGE, "%s: layer %d outside [0, %d)", w, (int)layer,
                       c->n_layer);
    if (!c->rn[layer])
        return dg_fail(DEG_ERR_ARG, "%s: layer %d is an attention layer (K/V rows, no state: "
                       "deg_cartridge_get_rows)", w, (int)layer);
    return DEG_OK;
}

deg_status deg_cartridge_get_state(const deg_cartridge *c, int32_t layer, float *state)
{
    DG_TRY(check_state(c, layer, state, "deg_cartridge_get_state"));
    memcpy(state, c->r[layer], sizeof(float) * c->rn[layer]);
    return DEG_OK;
}

deg_status deg_cartridge_set_state(deg_cartridge *c, int32_t layer, const float *state)
{
    DG_TRY(check_state(c, layer, state, "deg_cartridge_set_state"));
    memcpy(c->r[layer], state, sizeof(float) * c->rn[layer]);
    return DEG_OK;
}

deg_status deg_cartridge_get_state_grads(const deg_cartridge *c, int32_t layer, float *dstate)
{
    DG_TRY(check_state(c, layer, dstate, "deg_cartridge_get_state_grads"));
    memcpy(dstate, c->gr[layer], sizeof(float) * c->rn[layer]);
    return DEG_OK;
}

void deg_cartridge_zero_grads(deg_cartridge *c)
{
    if (!c) return;
    for (int il = 0; il < c->n_layer; il++) {
        memset(c->gk[il], 0, sizeof(float) * dg_cartridge_kv_n(c, il));
        memset(c->gv[il], 0, sizeof(float) * dg_cartridge_kv_n(c, il));
        memset(c->gr[il], 0, sizeof(float) * c->rn[il]);
    }
}

int dg_cartridge_finite(const deg_cartridge *c)
{
    for (int il = 0; il < c->n_layer; il++) {
        for (size_t i = 0; i < dg_cartridge_kv_n(c, il); i++)
            if (!isfinite(c->k[il][i]) || !isfinite(c->v[il][i])) return 0;
        for (size_t i = 0; i < c->rn[il]; i++)
            if (!isfinite(c->r[il][i])) return 0;
    }
    return 1;
}

deg_status deg_trunk_from_cartridge(const deg_cartridge *c, deg_trunk **out)
{
    if (!c || !out) return dg_fail(DEG_ERR_ARG, "deg_trunk_from_cartridge: NULL argument");
    return deg_trunk_from_cartridges(&c, 1, out);
}

deg_status deg_cartridge_set_draft_ref(deg_cartridge *c, const int32_t *ids, size_t n_ids)
{
    if (!c) return dg_fail(DEG_ERR_ARG, "deg_cartridge_set_draft_ref: cartridge is NULL");
    deg_draft_ref *r = NULL;
    if (n_ids) DG_TRY(deg_draft_ref_new(c->model, ids, n_ids, &r));
    deg_draft_ref_free(c->draft);
    c->draft = r;
    return DEG_OK;
}

const deg_draft_ref *deg_cartridge_draft_ref(const deg_cartridge *c)
{
    return c ? c->draft : NULL;
}

deg_status deg_cartridge_compose_draft_ref(const deg_cartridge *const *parts, size_t n_parts,
                                           deg_draft_ref **out)
{
    const char *w = "deg_cartridge_compose_draft_ref";
    if (!out) return dg_fail(DEG_ERR_ARG, "%s: out is NULL", w);
    *out = NULL;
    deg_status st = deg_cartridge_compose_check(parts, n_parts);
    if (st != DEG_OK) return dg_fail_context(st, "%s", w);
    size_t total = 0;
    for (size_t i = 0; i < n_parts; i++) total += deg_draft_ref_len(parts[i]->draft);
    if (total == 0) return DEG_OK;
    int32_t *ids = malloc(total * sizeof *ids);
    if (!ids) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory for %zu ids", w, total);
    size_t at = 0;
    for (size_t i = 0; i < n_parts; i++) {
        size_t k = deg_draft_ref_len(parts[i]->draft);
        if (k) memcpy(ids + at, deg_draft_ref_ids(parts[i]->draft), k * sizeof *ids);
        at += k;
    }
    st = deg_draft_ref_new(parts[0]->model, ids, total, out);
    free(ids);
    return st == DEG_OK ? DEG_OK : dg_fail_context(st, "%s", w);
}
