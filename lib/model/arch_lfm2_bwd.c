/* Backward of lfm2's layers (forward: lib/model/arch_lfm2.c): an attention
 * layer is the standard layer; a short-conv layer's block is rerun from its
 * saved input and initial tail (dg_lfm2_conv_core) and differentiated here. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "model/ops_bwd.h"
#include "model/layer_bwd.h"
#include "model/arch_lfm2.h"
#include "model/lora_internal.h"
#include "tensor/blas.h"

/* x_mid = x_in + out_proj(C * y0), y0 = conv(B * X), B | C | X = in_proj(xn):
 *   dy = out_proj^T dx; dC = dy * y0; dy0 = dy * C;
 *   dbx, dtail = conv^T dy0; dB = dbx * X; dX = dbx * B;
 *   dxn = in_proj^T [dB | dC | dX]; dx += RMSNorm^T dxn.
 * Adapters on out_proj / in_proj (DG_LORA_REC_OUT / REC_IN) add their share
 * to dy / dxn and their parameter gradients (dg_backward_lora). */
static deg_status conv_block_bwd(const deg_model *m, int il, dg_batch *b, const dg_layer_acts *a,
                                 float *dx, const dg_layer_grad *g, float *buf)
{
    const dg_layer *L = &m->layers[il];
    const lfm2_conv *c = L->arch_data;
    int K = ((const lfm2_hp *)m->arch_hp)->conv_K;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd, E3 = 3 * E;
    dg_segs_rec_reset(b, il, g->prec[il], L->state_floats);
    dg_lfm2_conv_core(m, il, b, a->x_in);
    const float *bcx = b->rbuf, *bx = bcx + M * E3, *y0 = bx + M * E;
    float *dy = buf, *dbcx = dy + M * E, *dy0 = dbcx + M * E3, *dbx = dy0 + M * E;
    float *dtail = dbx + M * E, *gated = dtail + L->state_floats;
    DG_TRY(dg_weight_backward_x(&c->out_proj, (int64_t)M, dx, (int64_t)E, dy, (int64_t)E, 0));
    if (g->dlora) {
        dg_lfm2_conv_gated(m, b, gated);
        dg_backward_lora(b, il, DG_LORA_REC_OUT, g, dx, E, gated, E, dy);
    }
    for (size_t i = 0; i < M; i++)
        for (size_t e = 0; e < E; e++) {
            dbcx[i * E3 + E + e] = dy[i * E + e] * y0[i * E + e];
            dy0[i * E + e] = dy[i * E + e] * bcx[i * E3 + E + e];
        }
    float *dprec = g->dprec ? g->dprec[il] : NULL;
    for (size_t si = 0; si < b->n_segs; si++) {
        const dg_seg *s = &b->segs[si];
        dg_causal_conv_backward(dbx + s->t0 * E, NULL, dtail, dy0 + s->t0 * E, bx + s->t0 * E,
                                g->prec[il], s->n, E, K, c->conv, 0);
        for (size_t j = 0; dprec && j < L->state_floats; j++) dprec[j] += dtail[j];
    }
    for (size_t i = 0; i < M; i++)
        for (size_t e = 0; e < E; e++) {
            dbcx[i * E3 + e] = dbx[i * E + e] * bcx[i * E3 + 2 * E + e];
            dbcx[i * E3 + 2 * E + e] = dbx[i * E + e] * bcx[i * E3 + e];
        }
    DG_TRY(dg_weight_backward_x(&c->in_proj, (int64_t)M, dbcx, (int64_t)E3, g->dxn, (int64_t)E,
                                0));
    dg_backward_lora(b, il, DG_LORA_REC_IN, g, dbcx, E3, b->xn, E, g->dxn);
    dg_rmsnorm_backward_rows(dx, g->dxn, a->x_in, L->attn_norm, M, E, m->hp.rms_eps, 1);
    return DEG_OK;
}

deg_status dg_backward_lfm2_layer(const deg_model *m, int il, dg_batch *b,
                                  const dg_layer_acts *a, float *dx, const dg_layer_grad *g)
{
    const dg_layer *L = &m->layers[il];
    if (L->has_kv) return dg_backward_std_layer(m, il, b, a, dx, g);
    DG_TRY(dg_backward_mlp(m, il, b, a, dx, g));
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd;
    float *buf = malloc(sizeof(float) * (M * 7 * E + L->state_floats));
    if (!buf)
        return dg_fail(DEG_ERR_NOMEM, "lfm2 conv layer backward: out of memory (%zu tokens)", M);
    deg_status st = conv_block_bwd(m, il, b, a, dx, g, buf);
    free(buf);
    return st;
}
