/* qwen3_5's private layout (arch_qwen3_5.c): hyper-parameters, the weights
 * of a Gated DeltaNet layer and the pieces of its block that the layer
 * backward (lib/model/arch_qwen3_5_bwd.c) reruns, so both use the same arithmetic. */
#ifndef DG_MODEL_ARCH_QWEN3_5_H
#define DG_MODEL_ARCH_QWEN3_5_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "model/arch.h"
#include "model/layer.h"

typedef struct q35_hp {
    int32_t nk, nv, dk, dv, conv_K;
    unsigned char *is_attn;  /* [n_layer] */
    /* GGUF files with nk < nv (llama.cpp's converter stores the value heads
     * of key head kh tiled, j * nk + kh, not grouped, kh * (nv / nk) + j):
     * the file rows of the logical (HF) rows of in_proj_qkv / conv1d [conv
     * dim], in_proj_z / out_proj's columns [nv dv] and in_proj_a / b, A,
     * dt_bias [nv] (dg_weight_get_mapped); NULL: in order. */
    int32_t *map_qkv, *map_vd, *map_nv;
} q35_hp;

/* DeltaNet weights (dg_layer.arch_data of a linear_attention layer). */
typedef struct q35_dn {
    dg_weight in_qkv;             /* [2 nk dk + nv dv, E] */
    dg_weight in_z;               /* [nv dv, E] */
    dg_weight in_b, in_a;         /* [nv, E] */
    const float *conv;            /* [conv_dim, 1, K] */
    const float *neg_A;           /* [nv] -exp(A_log) (GGUF: ssm_a as stored) */
    const float *dt_bias;         /* [nv] */
    const float *norm;            /* [dv] */
    dg_weight out;                /* [E, nv dv] */
} q35_dn;

/* Channels of the q/k/v convolution: 2 nk dk + nv dv. */
static inline size_t dg_q35_conv_dim(const q35_hp *a)
{
    return 2 * (size_t)a->nk * (size_t)a->dk + (size_t)a->nv * (size_t)a->dv;
}

/* The queries' scale 1 / sqrt(dk) as transformers applies it (query *
 * dk ** -0.5: a double constant rounded to f32, then one f32 product). */
static inline float dg_q35_q_scale(const q35_hp *a)
{
    return (float)(1.0 / sqrt((double)a->dk));
}

/* Value head h's delta-rule inputs at one token: q, k [dk] from the conv
 * output row qc_row [conv_dim] (key head h / (nv / nk); L2-normalised with
 * eps 1e-6, q then times dg_q35_q_scale), *beta = sigmoid(b), *decay =
 * exp(-exp(A_log) * softplus(a + dt_bias)) from ab_row [2 nv] (b | a).
 * Returns v [dv] (in qc_row). */
const float *dg_q35_token_inputs(const q35_hp *a, const q35_dn *d, int h, const float *qc_row,
                                 const float *ab_row, float *q, float *k, float *beta,
                                 float *decay);

/* DeltaNet layer il on x [M, E] (not modified) up to the delta rule's
 * output: b->rbuf (m->scratch_per_token) = qkv [M, CD] (in_proj_qkv of
 * xn = RMSNorm(x), in b->xn), qc [M, CD] (SiLU(conv(qkv)) from each
 * segment's tail), z [M, nv dv], ab [M, 2 nv] (b | a), o [M, nv dv] (the
 * delta rule per value head from each segment's state; seg->rec[il]
 * advanced), then [M, nv dv] free for the gated norm's output. */
void dg_q35_deltanet_core(const deg_model *m, int il, dg_batch *b, const float *x);
/* After the core: the gated RMSNorm RMSNorm(o) * w * silu(z) per (token,
 * value head) into the free [M, nv dv] of b->rbuf, returned (out_proj's
 * input). */
float *dg_q35_gated(const deg_model *m, int il, dg_batch *b);

#endif
