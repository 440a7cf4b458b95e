/* Composition of cartridges (spec cartridges.md, "Composition"): several
 * cartridges as one prefix by concatenation, for serving and for training. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "cartridge/cartridge_internal.h"
#include "grad/train.h"
#include "model/arch.h"
#include "model/state.h"

deg_status deg_cartridge_compose_check(const deg_cartridge *const *parts, size_t n_parts)
{
    const char *w = "cartridge composition";
    if (!parts || n_parts == 0)
        return dg_fail(DEG_ERR_ARG, "%s: no parts (a composition needs at least one cartridge)",
                       w);
    for (size_t i = 0; i < n_parts; i++)
        if (!parts[i]) return dg_fail(DEG_ERR_ARG, "%s: part %zu is NULL", w, i);
    const deg_cartridge *a = parts[0];
    if (n_parts > 1 && dg_model_has_recurrent(a->model))
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: the model '%s' has recurrent layers; a "
                       "recurrent state summarises one whole prefix and two cannot be "
                       "concatenated (compose cartridges of attention-only models)", w,
                       a->model->arch->name);
    char fa[65] = "", fb[65];
    for (size_t i = 1; i < n_parts; i++) {
        const deg_cartridge *b = parts[i];
        if (b->model == a->model) continue;
        /* Another handle of the model: the rows must live in the same K/V
         * space, layer for layer (the first difference is named). */
        if (b->n_layer != a->n_layer)
            return dg_fail(DEG_ERR_MISMATCH, "%s: part %zu has %d layers, part 0 has %d", w, i,
                           b->n_layer, a->n_layer);
        for (int il = 0; il < a->n_layer; il++)
            if (dg_cartridge_row(b, il) != dg_cartridge_row(a, il))
                return dg_fail(DEG_ERR_MISMATCH, "%s: part %zu has %zu floats per K/V row "
                               "(n_head_kv * head_dim) on layer %d, part 0 has %zu", w, i,
                               dg_cartridge_row(b, il), il, dg_cartridge_row(a, il));
        if (!fa[0]) dg_model_fingerprint(a->model, fa);
        dg_model_fingerprint(b->model, fb);
        if (strcmp(fa, fb) != 0)
            return dg_fail(DEG_ERR_MISMATCH, "%s: part %zu belongs to another model (weights "
                           "fingerprint %.12s..., part 0 %.12s...)", w, i, fb, fa);
    }
    return DEG_OK;
}

size_t deg_cartridge_compose_len(const deg_cartridge *const *parts, size_t n_parts)
{
    size_t P = 0;
    for (size_t i = 0; parts && i < n_parts; i++) P += parts[i] ? parts[i]->p : 0;
    return P;
}

/* The composed prefix: per layer the parts' rows back to back (and, for a
 * backward, zeroed gradient blocks of the same shape). */
typedef struct composed {
    int L;
    size_t P;
    size_t *row;          /* [L] floats per K/V row of layer il */
    float **k, **v, **gk, **gv;
} composed;

static void composed_free(composed *c)
{
    float **all[] = {c->k, c->v, c->gk, c->gv};
    for (size_t i = 0; i < 4; i++) {
        for (int il = 0; all[i] && il < c->L; il++) free(all[i][il]);
        free(all[i]);
    }
    free(c->row);
}

static deg_status composed_build(const deg_cartridge *const *parts, size_t n, int grads,
                                 composed *c)
{
    memset(c, 0, sizeof *c);
    c->L = parts[0]->n_layer;
    c->P = deg_cartridge_compose_len(parts, n);
    c->row = calloc((size_t)c->L, sizeof(size_t));
    if (!c->row) return dg_fail(DEG_ERR_NOMEM, "cartridge composition: out of memory");
    for (int il = 0; il < c->L; il++) c->row[il] = dg_cartridge_row(parts[0], il);
    float ***all[] = {&c->k, &c->v, &c->gk, &c->gv};
    for (int i = 0; i < (grads ? 4 : 2); i++) {
        *all[i] = calloc((size_t)c->L, sizeof(float *));
        for (int il = 0; *all[i] && il < c->L; il++) {
            (*all[i])[il] = calloc(c->P * c->row[il] + 1, sizeof(float));
            if (!(*all[i])[il]) {
                composed_free(c);
                return dg_fail(DEG_ERR_NOMEM, "cartridge composition: cannot allocate %zu rows",
                               c->P);
            }
        }
        if (!*all[i]) {
            composed_free(c);
            return dg_fail(DEG_ERR_NOMEM, "cartridge composition: out of memory");
        }
    }
    for (int il = 0; il < c->L; il++) {
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
            size_t nb = dg_cartridge_kv_n(parts[i], il);
            memcpy(c->k[il] + o, parts[i]->k[il], nb * sizeof(float));
            memcpy(c->v[il] + o, parts[i]->v[il], nb * sizeof(float));
            o += parts[i]->p * c->row[il];
        }
    }
    return DEG_OK;
}

typedef struct compose_parts {
    const deg_cartridge *const *parts;
    size_t n;
} compose_parts;

/* dg_trunk_set_kv callback: layer il's K/V rows, part after part (the KV cache is
 * f32 like the rows: plain copies). */
static void put_parts(void *ud, int il, float *k, float *v)
{
    const compose_parts *cp = ud;
    size_t o = 0;
    for (size_t i = 0; i < cp->n; i++) {
        const deg_cartridge *c = cp->parts[i];
        size_t row = dg_cartridge_row(c, il);
        memcpy(k + o * row, c->k[il], c->p * row * sizeof(float));
        memcpy(v + o * row, c->v[il], c->p * row * sizeof(float));
        o += c->p;
    }
}

deg_status deg_trunk_from_cartridges(const deg_cartridge *const *parts, size_t n_parts,
                                     deg_trunk **out)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_trunk_from_cartridges: out is NULL");
    *out = NULL;
    DG_TRY(deg_cartridge_compose_check(parts, n_parts));
    const deg_model *m = parts[0]->model;
    size_t P = deg_cartridge_compose_len(parts, n_parts);
    deg_trunk *t = NULL;
    DG_TRY(deg_trunk_new(m, &t));
    /* No token produced the last row: the trunk has no last hidden state
     * (NaN, so logits asked of a fork with no own tokens are visibly
     * invalid rather than made up). Feed the fork at least one token. */
    compose_parts cp = {parts, n_parts};
    deg_status st = dg_trunk_set_kv(t, P, put_parts, &cp);
    if (st != DEG_OK) {
        deg_trunk_free(t);
        return dg_fail_context(st, "deg_trunk_from_cartridges");
    }
    /* a hybrid's recurrent layers (one part: compose_check) */
    for (int il = 0; il < parts[0]->n_layer; il++)
        if (parts[0]->rn[il]) dg_trunk_set_rec(t, il, parts[0]->r[il]);
    *out = t;
    return DEG_OK;
}

deg_status deg_cartridge_compose_eval(const deg_cartridge *const *parts, size_t n_parts,
                                      const int32_t *ids, size_t n_ids,
                                      const deg_distill_target *targets, size_t n_targets,
                                      float *loss, float *logits)
{
    const char *w = "deg_cartridge_compose_eval";
    DG_TRY(deg_cartridge_compose_check(parts, n_parts));
    const deg_model *m = parts[0]->model;
    DG_TRY(dg_cartridge_check_inputs(m, ids, n_ids, targets, n_targets, w));
    composed c;
    DG_TRY(composed_build(parts, n_parts, 0, &c));
    dg_distill_loss dl = {targets, n_targets};
    dg_train_args a = {.pk = (const float *const *)c.k, .pv = (const float *const *)c.v,
                       .P = c.P, .prec = (const float *const *)parts[0]->r, .ids = ids,
                       .T = n_ids, .loss_fn = dg_distill_loss_fn, .loss_ud = &dl,
                       .loss = n_targets ? loss : NULL, .logits = logits};
    deg_status st = dg_train_run(m, &a);
    composed_free(&c);
    return st;
}

deg_status deg_cartridge_compose_backward(deg_cartridge *const *parts, size_t n_parts,
                                          const int32_t *ids, size_t n_ids,
                                          const size_t *seg_lens, size_t n_segs,
                                          const deg_distill_target *targets, size_t n_targets,
                                          int checkpoint, float *loss)
{
    const char *w = "deg_cartridge_compose_backward";
    const deg_cartridge *const *cp = (const deg_cartridge *const *)parts;
    DG_TRY(deg_cartridge_compose_check(cp, n_parts));
    const deg_model *m = parts[0]->model;
    if (seg_lens) {
        DG_TRY(dg_cartridge_check_packed(m, ids, n_ids, seg_lens, n_segs, targets, n_targets, w));
    } else {
        DG_TRY(dg_cartridge_check_inputs(m, ids, n_ids, targets, n_targets, w));
        if (n_targets == 0) return dg_fail(DEG_ERR_ARG, "%s: no targets (nothing to learn)", w);
    }
    composed c;
    DG_TRY(composed_build(cp, n_parts, 1, &c));
    float l = 0.0f;
    dg_distill_loss dl = {targets, n_targets};
    /* (hybrids: one part, whose state gradient goes straight to it) */
    dg_train_args a = {.pk = (const float *const *)c.k, .pv = (const float *const *)c.v,
                       .P = c.P, .prec = (const float *const *)parts[0]->r, .ids = ids,
                       .T = n_ids, .loss_fn = dg_distill_loss_fn, .loss_ud = &dl,
                       .checkpoint = checkpoint, .loss = &l, .dpk = c.gk, .dpv = c.gv,
                       .dprec = parts[0]->gr, .seg_lens = seg_lens,
                       .n_segs = seg_lens ? n_segs : 0};
    deg_status st = dg_train_run(m, &a);
    if (st == DEG_OK && !isfinite(l))
        st = dg_fail(DEG_ERR_NUMERIC, "%s: the loss is %g (non-finite rows or targets?)", w,
                     (double)l);
    if (st == DEG_OK) {
        /* One backward reached the concatenation: hand each part its block
         * (a part listed twice receives both blocks' sum). */
        for (int il = 0; il < c.L; il++) {
            size_t o = 0;
            for (size_t i = 0; i < n_parts; i++) {
                size_t nb = dg_cartridge_kv_n(parts[i], il);
                float *gk = parts[i]->gk[il], *gv = parts[i]->gv[il];
                for (size_t j = 0; j < nb; j++) {
                    gk[j] += c.gk[il][o + j];
                    gv[j] += c.gv[il][o + j];
                }
                o += parts[i]->p * c.row[il];
            }
        }
        if (loss) *loss = l;
    }
    composed_free(&c);
    return st;
}
