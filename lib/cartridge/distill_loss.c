/* The fused sparse distillation loss of cartridge training (spec
 * cartridges.md, "Objective"), as the loss of lib/grad's training driver. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "cartridge/cartridge_internal.h"
#include "model/ops_bwd.h"
#include "model/layer_bwd.h"
#include "model/arch.h"
#include "model/layer.h"
#include "model/state.h"

typedef struct tref {
    int32_t pos;
    size_t idx;
} tref;

static int tref_cmp(const void *a, const void *b)
{
    const tref *x = a, *y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

/* Loss of one logits row zb [V] for the entries [e0, e1) of tr; with dz
 * (non-NULL) the gradient at zb into dz [V]. */
static double row_loss(const float *zb, float *dz, size_t V, const dg_distill_loss *d,
                       const tref *tr, size_t e0, size_t e1, double invN)
{
    float mx = -INFINITY;
    for (size_t j = 0; j < V; j++) if (zb[j] > mx) mx = zb[j];
    double s = 0.0;
    for (size_t j = 0; j < V; j++) s += exp((double)zb[j] - mx);
    double lse = mx + log(s), loss = 0.0, wsum = 0.0;
    for (size_t e = e0; e < e1; e++) {
        const deg_distill_target *t = &d->targets[tr[e].idx];
        double w = exp((double)t->logprob);
        loss += -w * ((double)zb[t->token] - lse) * invN;
        wsum += w;
    }
    if (!dz) return loss;
    /* dz = (wsum * softmax(z) - sum_e w_e onehot(token_e)) / N */
    for (size_t j = 0; j < V; j++) dz[j] = (float)(wsum * exp((double)zb[j] - lse) * invN);
    for (size_t e = e0; e < e1; e++) {
        const deg_distill_target *t = &d->targets[tr[e].idx];
        dz[t->token] -= (float)(exp((double)t->logprob) * invN);
    }
    return loss;
}

deg_status dg_distill_loss_fn(const deg_model *m, const float *x, size_t T, float *dx,
                              float *loss_out, void *ud)
{
    (void)T;
    const dg_distill_loss *d = ud;
    size_t E = (size_t)m->hp.n_embd, V = (size_t)m->hp.n_vocab, n = d->n_targets;
    size_t B = DG_DISTILL_LOGIT_ROWS;
    tref *tr = malloc((n ? n : 1) * sizeof *tr);
    float *hn = malloc(sizeof(float) * B * E), *xr = malloc(sizeof(float) * B * E);
    float *z = malloc(sizeof(float) * B * V), *dhn = malloc(sizeof(float) * B * E);
    float *dz = dx ? malloc(sizeof(float) * B * V) : NULL;
    if (!tr || !hn || !xr || !z || !dhn || (dx && !dz)) {
        free(tr); free(hn); free(xr); free(z); free(dhn); free(dz);
        return dg_fail(DEG_ERR_NOMEM, "training loss: out of memory");
    }
    for (size_t i = 0; i < n; i++) tr[i] = (tref){d->targets[i].position, i};
    qsort(tr, n, sizeof *tr, tref_cmp);
    size_t n_pos = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || tr[i].pos != tr[i - 1].pos) n_pos++;
    int32_t rows[DG_DISTILL_LOGIT_ROWS];
    size_t first[DG_DISTILL_LOGIT_ROWS + 1];
    double loss = 0.0, invN = n_pos ? 1.0 / (double)n_pos : 0.0;
    size_t i = 0;
    while (i < n) {
        /* Gather up to B distinct positions. */
        size_t nb = 0;
        while (i < n && nb < B) {
            rows[nb] = tr[i].pos - 1;
            first[nb] = i;
            while (i < n && tr[i].pos == tr[first[nb]].pos) i++;
            nb++;
        }
        first[nb] = i;
        for (size_t b = 0; b < nb; b++)
            memcpy(xr + b * E, x + (size_t)rows[b] * E, sizeof(float) * E);
        dg_rmsnorm_rows(hn, xr, m->out_norm, nb, E, m->hp.rms_eps);
        dg_lm_head(m, hn, nb, z);
        for (size_t b = 0; b < nb; b++)
            loss += row_loss(z + b * V, dz ? dz + b * V : NULL, V, d, tr, first[b],
                             first[b + 1], invN);
        if (dx) {
            deg_status st = dg_lm_head_backward(m, z, dz, nb, dhn);
            if (st != DEG_OK) {
                free(tr); free(hn); free(xr); free(z); free(dhn); free(dz);
                return st;
            }
            for (size_t b = 0; b < nb; b++)
                dg_rmsnorm_backward(dx + (size_t)rows[b] * E, dhn + b * E, xr + b * E,
                                    m->out_norm, 1, E, m->hp.rms_eps, 1);
        }
    }
    free(tr); free(hn); free(xr); free(z); free(dhn); free(dz);
    *loss_out = (float)loss;
    return DEG_OK;
}
