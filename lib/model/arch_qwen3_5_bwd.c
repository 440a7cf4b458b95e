/* Backward of qwen3_5's layers (forward: lib/model/arch_qwen3_5.c): the
 * gated attention layer (from its saved activations, the output gate
 * recomputed) and the Gated DeltaNet layer (its block rerun from the saved
 * input and the initial state by dg_q35_deltanet_core, then differentiated:
 * gated RMSNorm, the delta rule (dg_delta_rule_backward), the q/k L2 norms,
 * beta and decay, the SiLU causal conv, the four input projections). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "model/ops_bwd.h"
#include "model/layer_bwd.h"
#include "model/arch_qwen3_5.h"
#include "model/delta_rule.h"
#include "model/lora_internal.h"
#include "model/ops.h"
#include "tensor/blas.h"

static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* x_mid = x_in + o_proj(att * sigmoid(gate)), [q | gate] per head = q_proj(xn)
 * (adapters on q_proj, k, v, o: their gradients into g->dlora). */
static deg_status attn_bwd(const deg_model *m, int il, dg_batch *b, const dg_layer_acts *a,
                           float *dx, const dg_layer_grad *g, float *dqg)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    size_t T = b->n_tokens, E = (size_t)hp->n_embd, D = (size_t)hp->head_dim, H = (size_t)hp->n_head;
    size_t QD = H * D;
    float *qg = b->rbuf; /* the forward's q_proj output, recomputed */
    dg_rmsnorm_rows(b->xn, a->x_in, L->attn_norm, T, E, hp->rms_eps);
    dg_weight_matmul(&L->wq, (int64_t)T, b->xn, (int64_t)E, qg, (int64_t)(2 * QD));
    dg_lora_add_segs(b, il, DG_LORA_Q, b->xn, E, qg, 2 * QD);
    DG_TRY(dg_weight_backward_x(&L->wo, (int64_t)T, dx, (int64_t)E, g->datt, (int64_t)QD, 0));
    if (g->dlora) { /* o_proj's input: the gated attention output */
        float *gated = dqg + T * 2 * QD;
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j < QD; j++)
                gated[i * QD + j] = a->att[i * QD + j] *
                                    (1.0f / (1.0f + expf(-qg[i * 2 * QD + (j / D) * 2 * D + D + j % D])));
        dg_backward_lora(b, il, DG_LORA_O, g, dx, E, gated, QD, g->datt);
    }
    for (size_t i = 0; i < T; i++)
        for (size_t h = 0; h < H; h++)
            for (size_t j = 0; j < D; j++) {
                size_t o = i * QD + h * D + j, og = i * 2 * QD + h * 2 * D + D + j;
                float s = sigmoidf(qg[og]);
                dqg[og] = g->datt[o] * a->att[o] * s * (1.0f - s);
                g->datt[o] *= s;
            }
    DG_TRY(dg_backward_attn_core(m, il, b, a, g));
    for (size_t i = 0; i < T; i++)
        for (size_t h = 0; h < H; h++)
            memcpy(dqg + i * 2 * QD + h * 2 * D, g->dq + i * QD + h * D, sizeof(float) * D);
    return dg_backward_attn_input(m, il, b, a, dx, g, dqg, 2 * QD, b->xn);
}

/* dx of y = x / sqrt(sum x^2 + 1e-6) * scale, from dy (n floats; the
 * forward's l2norm, arch_qwen3_5.c), accumulated into dx. */
static void l2norm_bwd(float *dx, const float *dy, const float *x, size_t n, float scale)
{
    float ss = 0.0f, xd = 0.0f;
    for (size_t i = 0; i < n; i++) {
        ss += x[i] * x[i];
        xd += x[i] * dy[i];
    }
    float r = 1.0f / sqrtf(ss + 1e-6f);
    for (size_t i = 0; i < n; i++) dx[i] += scale * (r * dy[i] - x[i] * r * r * r * xd);
}

/* Per-head scratch of the delta rule backward over a segment of n tokens. */
typedef struct head_buf {
    float *q, *k, *v, *dout, *beta, *decay, *dq, *dk, *dv, *dbeta, *ddecay, *dS0;
} head_buf;

/* Value head h of segment s: the delta rule's backward, then through the
 * normalisations into dqc [M, CD] and dab [M, 2 nv]. */
static deg_status head_bwd(const deg_model *m, int il, const dg_seg *s, int h, const float *qc,
                           const float *ab, const float *dout, float *dqc, float *dab,
                           const dg_layer_grad *g, head_buf *w)
{
    const q35_hp *a = m->arch_hp;
    const q35_dn *d = m->layers[il].arch_data;
    size_t dk = (size_t)a->dk, dv = (size_t)a->dv, NV = (size_t)a->nv, CD = dg_q35_conv_dim(a);
    size_t KD = (size_t)a->nk * dk, kh = (size_t)h / (NV / (size_t)a->nk), n = s->n;
    for (size_t t = 0; t < n; t++) {
        size_t i = s->t0 + t;
        const float *v = dg_q35_token_inputs(a, d, h, qc + i * CD, ab + i * 2 * NV, w->q + t * dk,
                                             w->k + t * dk, w->beta + t, w->decay + t);
        memcpy(w->v + t * dv, v, sizeof(float) * dv);
        memcpy(w->dout + t * dv, dout + i * NV * dv + (size_t)h * dv, sizeof(float) * dv);
    }
    const float *S0 = g->prec[il] + (size_t)h * dk * dv;
    DG_TRY(dg_delta_rule_backward(w->dq, w->dk, w->dv, w->dbeta, w->ddecay, w->dS0, w->dout, w->q,
                                  w->k, w->v, w->beta, w->decay, S0, n, dk, dv));
    if (g->dprec && g->dprec[il])
        for (size_t j = 0; j < dk * dv; j++) g->dprec[il][(size_t)h * dk * dv + j] += w->dS0[j];
    float negA = d->neg_A[h], isq = dg_q35_q_scale(a);
    for (size_t t = 0; t < n; t++) {
        size_t i = s->t0 + t;
        const float *row = qc + i * CD;
        float *drow = dqc + i * CD;
        l2norm_bwd(drow + kh * dk, w->dq + t * dk, row + kh * dk, dk, isq);
        l2norm_bwd(drow + KD + kh * dk, w->dk + t * dk, row + KD + kh * dk, dk, 1.0f);
        memcpy(drow + 2 * KD + (size_t)h * dv, w->dv + t * dv, sizeof(float) * dv);
        float be = w->beta[t], x = ab[i * 2 * NV + NV + (size_t)h] + d->dt_bias[h];
        dab[i * 2 * NV + (size_t)h] = w->dbeta[t] * be * (1.0f - be);
        /* decay = exp(negA * softplus(x)); softplus' = sigmoid (1 past the threshold 20) */
        float dsp = x > 20.0f ? 1.0f : sigmoidf(x);
        dab[i * 2 * NV + NV + (size_t)h] = w->ddecay[t] * w->decay[t] * negA * dsp;
    }
    return DEG_OK;
}

/* Gated RMSNorm backward per (token, head): y = RMSNorm(o) * w * silu(z). */
static void gated_norm_bwd(const deg_model *m, const q35_dn *d, size_t M, const float *o,
                           const float *z, const float *dy, float *dout, float *dz)
{
    const q35_hp *a = m->arch_hp;
    size_t DV = (size_t)a->dv, NR = M * (size_t)a->nv;
    float nrm[DG_DN_MAX_HEAD_DIM], dn[DG_DN_MAX_HEAD_DIM];
    for (size_t r = 0; r < NR; r++) {
        dg_rmsnorm(nrm, o + r * DV, d->norm, 1, DV, m->hp.rms_eps);
        for (size_t j = 0; j < DV; j++) {
            float zz = z[r * DV + j], s = sigmoidf(zz), g = dy[r * DV + j];
            dz[r * DV + j] = g * nrm[j] * s * (1.0f + zz * (1.0f - s));
            dn[j] = g * zz * s;
        }
        dg_rmsnorm_backward(dout + r * DV, dn, o + r * DV, d->norm, 1, DV, m->hp.rms_eps, 0);
    }
}

static deg_status deltanet_bwd(const deg_model *m, int il, dg_batch *b, const dg_layer_acts *a,
                               float *dx, const dg_layer_grad *g, float *buf)
{
    const dg_layer *L = &m->layers[il];
    const q35_hp *ah = m->arch_hp;
    const q35_dn *d = L->arch_data;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd, CD = dg_q35_conv_dim(ah);
    size_t NV = (size_t)ah->nv, VD = NV * (size_t)ah->dv, S_n = VD * (size_t)ah->dk;
    dg_segs_rec_reset(b, il, g->prec[il], L->state_floats);
    dg_q35_deltanet_core(m, il, b, a->x_in);
    const float *qkv = b->rbuf, *qc = qkv + M * CD, *z = qc + M * CD, *ab = z + M * VD,
                *o = ab + M * 2 * NV;
    float *dy = buf, *dz = dy + M * VD, *dout = dz + M * VD, *dqc = dout + M * VD;
    float *dqkv = dqc + M * CD, *dab = dqkv + M * CD, *dtail = dab + M * 2 * NV;
    float *hw = dtail + (L->state_floats - S_n);
    DG_TRY(dg_weight_backward_x(&d->out, (int64_t)M, dx, (int64_t)E, dy, (int64_t)VD, 0));
    if (g->dlora) dg_backward_lora(b, il, DG_LORA_REC_OUT, g, dx, E, dg_q35_gated(m, il, b), VD, dy);
    gated_norm_bwd(m, d, M, o, z, dy, dout, dz);
    memset(dqc, 0, sizeof(float) * M * CD);
    size_t max_n = 0;
    for (size_t si = 0; si < b->n_segs; si++)
        if (b->segs[si].n > max_n) max_n = b->segs[si].n;
    size_t dk = (size_t)ah->dk, dv = (size_t)ah->dv;
    head_buf w = {.q = hw, .k = hw + max_n * dk, .dq = hw + 2 * max_n * dk,
                  .dk = hw + 3 * max_n * dk, .v = hw + 4 * max_n * dk};
    w.dout = w.v + max_n * dv;
    w.dv = w.dout + max_n * dv;
    w.beta = w.dv + max_n * dv;
    w.decay = w.beta + max_n;
    w.dbeta = w.decay + max_n;
    w.ddecay = w.dbeta + max_n;
    w.dS0 = w.ddecay + max_n;
    float *dprec = g->dprec ? g->dprec[il] : NULL;
    for (size_t si = 0; si < b->n_segs; si++) {
        const dg_seg *s = &b->segs[si];
        for (int h = 0; h < (int)NV; h++)
            DG_TRY(head_bwd(m, il, s, h, qc, ab, dout, dqc, dab, g, &w));
        dg_causal_conv_backward(dqkv + s->t0 * CD, NULL, dtail, dqc + s->t0 * CD,
                                qkv + s->t0 * CD, g->prec[il] + S_n, s->n, CD, ah->conv_K,
                                d->conv, 1);
        for (size_t j = 0; dprec && j < L->state_floats - S_n; j++) dprec[S_n + j] += dtail[j];
    }
    DG_TRY(dg_weight_backward_x(&d->in_qkv, (int64_t)M, dqkv, (int64_t)CD, g->dxn, (int64_t)E,
                                0));
    DG_TRY(dg_weight_backward_x(&d->in_z, (int64_t)M, dz, (int64_t)VD, g->dxn, (int64_t)E, 1));
    DG_TRY(dg_weight_backward_x(&d->in_b, (int64_t)M, dab, (int64_t)(2 * NV), g->dxn, (int64_t)E,
                                1));
    DG_TRY(dg_weight_backward_x(&d->in_a, (int64_t)M, dab + NV, (int64_t)(2 * NV), g->dxn,
                                (int64_t)E, 1));
    dg_backward_lora(b, il, DG_LORA_REC_IN, g, dqkv, CD, b->xn, E, g->dxn);
    dg_backward_lora(b, il, DG_LORA_REC_Z, g, dz, VD, b->xn, E, g->dxn);
    dg_rmsnorm_backward_rows(dx, g->dxn, a->x_in, L->attn_norm, M, E, m->hp.rms_eps, 1);
    return DEG_OK;
}

deg_status dg_backward_qwen3_5_layer(const deg_model *m, int il, dg_batch *b,
                                     const dg_layer_acts *a, float *dx, const dg_layer_grad *g)
{
    const dg_layer *L = &m->layers[il];
    const q35_hp *ah = m->arch_hp;
    DG_TRY(dg_backward_mlp(m, il, b, a, dx, g));
    size_t M = b->n_tokens, QD = (size_t)m->hp.n_head * (size_t)m->hp.head_dim, n;
    if (L->has_kv) {
        n = M * 3 * QD; /* dqg [M, 2QD], the gated output [M, QD] (adapters) */
    } else {
        size_t CD = dg_q35_conv_dim(ah), NV = (size_t)ah->nv, VD = NV * (size_t)ah->dv;
        size_t dk = (size_t)ah->dk, dv = (size_t)ah->dv, max_n = 0;
        for (size_t si = 0; si < b->n_segs; si++)
            if (b->segs[si].n > max_n) max_n = b->segs[si].n;
        n = 3 * M * VD + 2 * M * CD + 2 * M * NV + L->state_floats +
            max_n * (4 * dk + 3 * dv + 4) + dk * dv;
    }
    float *buf = calloc(n, sizeof(float));
    if (!buf)
        return dg_fail(DEG_ERR_NOMEM, "qwen3_5 layer backward: out of memory (%zu tokens)", M);
    deg_status st = L->has_kv ? attn_bwd(m, il, b, a, dx, g, buf) : deltanet_bwd(m, il, b, a, dx, g, buf);
    free(buf);
    return st;
}
