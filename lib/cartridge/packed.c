/* Packed training step of self-study (spec cartridges.md, "Batched
 * self-study"): several conversations in one forward/backward behind the
 * cartridge, each segment attending to the cartridge and to itself only. */
#include <math.h>
#include <stdlib.h>

#include "base/status.h"
#include "cartridge/cartridge_internal.h"
#include "grad/train.h"
#include "model/arch.h"

deg_status dg_cartridge_check_packed(const deg_model *m, const int32_t *ids, size_t n_ids,
                                     const size_t *seg_lens, size_t n_segs,
                                     const deg_distill_target *targets, size_t n_targets,
                                     const char *w)
{
    if (!ids || !seg_lens || !targets) return dg_fail(DEG_ERR_ARG, "%s: NULL argument", w);
    if (n_ids == 0 || n_segs == 0 || n_targets == 0)
        return dg_fail(DEG_ERR_ARG, "%s: need ids, segments and targets (got %zu, %zu, %zu)", w,
                       n_ids, n_segs, n_targets);
    int32_t nv = m->hp.n_vocab;
    size_t sum = 0;
    for (size_t s = 0; s < n_segs; s++) {
        if (seg_lens[s] == 0) return dg_fail(DEG_ERR_ARG, "%s: segment %zu is empty", w, s);
        sum += seg_lens[s];
    }
    if (sum != n_ids)
        return dg_fail(DEG_ERR_ARG, "%s: segment lengths sum to %zu, not n_ids = %zu", w, sum,
                       n_ids);
    for (size_t i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= nv)
            return dg_fail(DEG_ERR_RANGE, "%s: id %d at %zu outside [0, %d)", w, ids[i], i, nv);
    for (size_t i = 0; i < n_targets; i++) {
        const deg_distill_target *t = &targets[i];
        if (t->position < 1 || (size_t)t->position >= n_ids || t->token < 0 ||
            t->token >= nv || !isfinite(t->logprob))
            return dg_fail(DEG_ERR_RANGE, "%s: target %zu (position %d, token %d, logprob %g) "
                           "out of range", w, i, t->position, t->token, (double)t->logprob);
        /* A segment's first token has no prediction inside its segment. */
        size_t s0 = 0;
        for (size_t s = 0; s < n_segs && s0 <= (size_t)t->position; s0 += seg_lens[s++])
            if ((size_t)t->position == s0)
                return dg_fail(DEG_ERR_RANGE, "%s: target %zu is at the first token of "
                               "segment %zu (position %d): nothing in its segment predicts it",
                               w, i, s, t->position);
    }
    return DEG_OK;
}

deg_status deg_cartridge_backward_packed(deg_cartridge *c, const int32_t *ids, size_t n_ids,
                                         const size_t *seg_lens, size_t n_segs,
                                         const deg_distill_target *targets, size_t n_targets,
                                         int checkpoint, float *loss)
{
    const char *w = "deg_cartridge_backward_packed";
    if (!c) return dg_fail(DEG_ERR_ARG, "%s: NULL cartridge", w);
    const deg_model *m = c->model;
    DG_TRY(dg_cartridge_check_packed(m, ids, n_ids, seg_lens, n_segs, targets, n_targets, w));
    float l = 0.0f;
    dg_distill_loss dl = {targets, n_targets};
    dg_train_args a = {.pk = (const float *const *)c->k, .pv = (const float *const *)c->v,
                       .P = c->p, .prec = (const float *const *)c->r, .ids = ids, .T = n_ids,
                       .loss_fn = dg_distill_loss_fn, .loss_ud = &dl, .checkpoint = checkpoint,
                       .loss = &l, .dpk = c->gk, .dpv = c->gv, .dprec = c->gr,
                       .seg_lens = seg_lens, .n_segs = n_segs};
    DG_TRY(dg_train_run(m, &a));
    if (loss) *loss = l;
    if (!isfinite(l))
        return dg_fail(DEG_ERR_NUMERIC, "%s: the loss is %g (non-finite rows or targets?)", w,
                       (double)l);
    return DEG_OK;
}
