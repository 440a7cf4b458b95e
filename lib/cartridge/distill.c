/* Training behind a cartridge: sparse distillation targets, forward/loss,
 * backward into the rows (lib/grad/train.c), Adam over the trainable rows. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "cartridge/cartridge_internal.h"
#include "grad/adam.h"
#include "grad/train.h"
#include "model/arch.h"

deg_adam_params deg_adam_params_default(void)
{
    return (deg_adam_params){.lr = 2e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                             .weight_decay = 0.0f};
}

typedef struct lp_idx {
    float lp;
    int32_t id;
} lp_idx;

/* The k best of the V logprobs lp_of(j) in the order (logprob descending, id
 * ascending) into top[0..*n): the first k entries of that full sort, found by
 * one pass with insertion into the sorted top (j ascending, so an equal
 * logprob never displaces an earlier id); O(V) for a peaked row instead of a
 * sort of the whole vocabulary. */
static void top_k(const float *logits, size_t V, double lse, size_t k, lp_idx *top, size_t *n)
{
    size_t m = 0;
    for (size_t j = 0; j < V; j++) {
        float lp = (float)((double)logits[j] - lse);
        if (m == k && !(lp > top[k - 1].lp)) continue;
        size_t at = m < k ? m++ : k - 1;
        while (at > 0 && top[at - 1].lp < lp) {
            top[at] = top[at - 1];
            at--;
        }
        top[at] = (lp_idx){lp, (int32_t)j};
    }
    *n = m;
}

deg_status deg_distill_targets_from_logits(const deg_model *m, const float *logits,
                                           int32_t position, int32_t k, float min_mass,
                                           deg_distill_target *out, size_t *n_out)
{
    if (!m || !logits || !out || !n_out)
        return dg_fail(DEG_ERR_ARG, "deg_distill_targets_from_logits: NULL argument");
    if (k <= 0 || !(min_mass > 0.0f && min_mass <= 1.0f))
        return dg_fail(DEG_ERR_ARG,
                       "deg_distill_targets_from_logits: need k > 0 and 0 < min_mass <= 1 "
                       "(got k = %d, min_mass = %g)", (int)k, (double)min_mass);
    size_t V = (size_t)m->hp.n_vocab;
    float mx = -INFINITY;
    for (size_t j = 0; j < V; j++) {
        if (!isfinite(logits[j]))
            return dg_fail(DEG_ERR_NUMERIC,
                           "deg_distill_targets_from_logits: logit %zu is not finite", j);
        if (logits[j] > mx) mx = logits[j];
    }
    double s = 0.0;
    for (size_t j = 0; j < V; j++) s += exp((double)logits[j] - mx);
    double lse = mx + log(s);
    size_t kk = (size_t)k < V ? (size_t)k : V, n_top = 0;
    lp_idx *a = malloc(kk * sizeof *a);
    if (!a) return dg_fail(DEG_ERR_NOMEM, "deg_distill_targets_from_logits: out of memory");
    top_k(logits, V, lse, kk, a, &n_top);
    double mass = 0.0;
    size_t n = 0;
    while (n < n_top && mass < (double)min_mass) {
        out[n] = (deg_distill_target){position, a[n].id, a[n].lp};
        mass += exp((double)a[n].lp);
        n++;
    }
    free(a);
    *n_out = n;
    return DEG_OK;
}

deg_status dg_cartridge_check_inputs(const deg_model *m, const int32_t *ids, size_t n_ids,
                                     const deg_distill_target *tg, size_t n_tg, const char *w)
{
    if (n_ids && !ids) return dg_fail(DEG_ERR_ARG, "%s: ids is NULL", w);
    if (n_tg && !tg) return dg_fail(DEG_ERR_ARG, "%s: targets is NULL", w);
    int32_t V = m->hp.n_vocab;
    for (size_t i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return dg_fail(DEG_ERR_RANGE, "%s: token id %d at index %zu outside [0, %d)", w,
                           (int)ids[i], i, (int)V);
    for (size_t i = 0; i < n_tg; i++) {
        if (tg[i].position < 1 || (size_t)tg[i].position >= n_ids)
            return dg_fail(DEG_ERR_RANGE,
                           "%s: target %zu: position %d outside [1, %zu) (the prediction is "
                           "read from logits row position - 1)", w, i, (int)tg[i].position,
                           n_ids);
        if (tg[i].token < 0 || tg[i].token >= V)
            return dg_fail(DEG_ERR_RANGE, "%s: target %zu: token %d outside [0, %d)", w, i,
                           (int)tg[i].token, (int)V);
        if (!isfinite(tg[i].logprob) || tg[i].logprob > 0.0f)
            return dg_fail(DEG_ERR_RANGE, "%s: target %zu: logprob %g is not a finite value "
                           "<= 0", w, i, (double)tg[i].logprob);
    }
    return DEG_OK;
}

deg_status deg_cartridge_eval(const deg_cartridge *c, const int32_t *ids, size_t n_ids,
                              const deg_distill_target *targets, size_t n_targets, float *loss,
                              float *logits)
{
    if (!c) return dg_fail(DEG_ERR_ARG, "%s: NULL cartridge", __func__);
    DG_TRY(dg_cartridge_check_inputs(c->model, ids, n_ids, targets, n_targets,
                                     "deg_cartridge_eval"));
    dg_distill_loss dl = {targets, n_targets};
    dg_train_args a = {.pk = (const float *const *)c->k, .pv = (const float *const *)c->v,
                       .P = c->p, .prec = (const float *const *)c->r, .ids = ids, .T = n_ids,
                       .loss_fn = dg_distill_loss_fn, .loss_ud = &dl, .loss = loss,
                       .logits = logits};
    return dg_train_run(c->model, &a);
}

deg_status deg_cartridge_backward(deg_cartridge *c, const int32_t *ids, size_t n_ids,
                                  const deg_distill_target *targets, size_t n_targets,
                                  int checkpoint, float *loss)
{
    if (!c) return dg_fail(DEG_ERR_ARG, "%s: NULL cartridge", __func__);
    DG_TRY(dg_cartridge_check_inputs(c->model, ids, n_ids, targets, n_targets,
                                     "deg_cartridge_backward"));
    if (n_targets == 0)
        return dg_fail(DEG_ERR_ARG, "deg_cartridge_backward: no targets (nothing to learn)");
    float l = 0.0f;
    dg_distill_loss dl = {targets, n_targets};
    dg_train_args a = {.pk = (const float *const *)c->k, .pv = (const float *const *)c->v,
                       .P = c->p, .prec = (const float *const *)c->r, .ids = ids, .T = n_ids,
                       .loss_fn = dg_distill_loss_fn, .loss_ud = &dl, .checkpoint = checkpoint,
                       .loss = &l, .dpk = c->gk, .dpv = c->gv, .dprec = c->gr};
    DG_TRY(dg_train_run(c->model, &a));
    if (loss) *loss = l;
    if (!isfinite(l))
        return dg_fail(DEG_ERR_NUMERIC, "deg_cartridge_backward: the loss is %g (non-finite "
                       "rows or targets?)", (double)l);
    return DEG_OK;
}

/* The rule of prm, or DEG_ERR_ARG naming fn when a hyperparameter is out of range. */
static deg_status adam_rule(const deg_adam_params *prm, bool decoupled, const char *fn,
                            dg_adam_rule *rule)
{
    if (!(prm->lr >= 0) || !isfinite(prm->lr) || !(prm->beta1 >= 0 && prm->beta1 < 1) ||
        !(prm->beta2 >= 0 && prm->beta2 < 1) || !(prm->eps > 0) || !(prm->weight_decay >= 0) ||
        !isfinite(prm->weight_decay))
        return dg_fail(DEG_ERR_ARG, "%s: need lr >= 0, betas in [0, 1), eps > 0, "
                       "weight_decay >= 0", fn);
    *rule = (dg_adam_rule){.beta1 = prm->beta1, .beta2 = prm->beta2, .eps = prm->eps,
                           .weight_decay = prm->weight_decay, .decoupled = decoupled};
    return DEG_OK;
}

deg_status deg_adam_update(float *params, const float *grad, float *m, float *v, size_t n,
                           int64_t step, const float *lr_each, const deg_adam_params *hp,
                           int decoupled)
{
    if (!hp || (n && (!params || !grad || !m || !v)))
        return dg_fail(DEG_ERR_ARG, "deg_adam_update: NULL argument");
    if (step < 1) return dg_fail(DEG_ERR_ARG, "deg_adam_update: step %lld < 1", (long long)step);
    dg_adam_rule rule;
    DG_TRY(adam_rule(hp, decoupled != 0, "deg_adam_update", &rule));
    for (size_t i = 0; lr_each && i < n; i++)
        if (!(lr_each[i] >= 0) || !isfinite(lr_each[i]))
            return dg_fail(DEG_ERR_ARG, "deg_adam_update: lr_each[%zu] = %g is not a finite "
                           "rate >= 0", i, (double)lr_each[i]);
    size_t bad = dg_adam_update(params, grad, m, v, n, hp->lr, lr_each, step, &rule, false);
    if (bad != SIZE_MAX)
        return dg_fail(DEG_ERR_NUMERIC, "deg_adam_update: element %zu would become non-finite "
                       "(gradient %g, step %lld); nothing was changed", bad, (double)grad[bad],
                       (long long)step);
    dg_adam_update(params, grad, m, v, n, hp->lr, lr_each, step, &rule, true);
    return DEG_OK;
}

deg_status deg_cartridge_adam_step(deg_cartridge *c, const deg_adam_params *prm)
{
    if (!c || !prm) return dg_fail(DEG_ERR_ARG, "deg_cartridge_adam_step: NULL argument");
    dg_adam_rule rule;
    DG_TRY(adam_rule(prm, false, "deg_cartridge_adam_step", &rule));
    int64_t t = c->steps + 1;
    /* Two passes: check that every update is finite, then apply; a failed
     * step changes nothing. Per layer: K/V rows past the frozen ones, or a
     * recurrent layer's whole state (kv = 2). */
    for (int pass = 0; pass < 2; pass++) {
        for (int il = 0; il < c->n_layer; il++)
            for (int kv = 0; kv < 3; kv++) {
                size_t row = dg_cartridge_row(c, il);
                size_t o = kv < 2 ? c->frozen * row : 0;
                size_t n = kv < 2 ? dg_cartridge_kv_n(c, il) : c->rn[il];
                if (n <= o) continue;
                float *w = kv == 2 ? c->r[il] : kv ? c->v[il] : c->k[il];
                float *g = kv == 2 ? c->gr[il] : kv ? c->gv[il] : c->gk[il];
                float *m1 = kv == 2 ? c->mr[il] : kv ? c->mv[il] : c->mk[il];
                float *m2 = kv == 2 ? c->sr[il] : kv ? c->sv[il] : c->sk[il];
                size_t bad = dg_adam_update(w + o, g + o, m1 + o, m2 + o, n - o, prm->lr, NULL, t,
                                            &rule, pass == 1);
                if (pass == 0 && bad != SIZE_MAX) {
                    size_t i = o + bad;
                    float gi = g[i];
                    deg_cartridge_zero_grads(c);
                    if (kv == 2)
                        return dg_fail(DEG_ERR_NUMERIC, "deg_cartridge_adam_step: layer %d "
                                       "state element %zu would become non-finite (gradient "
                                       "%g); nothing was changed", il, i, (double)gi);
                    return dg_fail(DEG_ERR_NUMERIC,
                                   "deg_cartridge_adam_step: layer %d %s row %zu "
                                   "would become non-finite (gradient %g); nothing "
                                   "was changed", il, kv ? "value" : "key",
                                   i / row, (double)gi);
                }
            }
    }
    c->steps = t;
    deg_cartridge_zero_grads(c);
    return DEG_OK;
}

deg_status deg_cartridge_train_step(deg_cartridge *c, const int32_t *ids, size_t n_ids,
                                    const deg_distill_target *targets, size_t n_targets,
                                    const deg_adam_params *params, int checkpoint, float *loss)
{
    if (!c || !params) return dg_fail(DEG_ERR_ARG, "deg_cartridge_train_step: NULL argument");
    deg_cartridge_zero_grads(c);
    deg_status st = deg_cartridge_backward(c, ids, n_ids, targets, n_targets, checkpoint, loss);
    if (st != DEG_OK) {
        deg_cartridge_zero_grads(c);
        return st;
    }
    return deg_cartridge_adam_step(c, params);
}
