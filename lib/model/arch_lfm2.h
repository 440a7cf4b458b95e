/* lfm2's private layout (arch_lfm2.c): hyper-parameters, the weights of a
 * short-conv layer, and the first half of its block, shared with the layer
 * backward (lib/model/arch_lfm2_bwd.c) so both run the same arithmetic. */
#ifndef DG_MODEL_ARCH_LFM2_H
#define DG_MODEL_ARCH_LFM2_H

#include <stdint.h>

#include "model/arch.h"
#include "model/layer.h"

typedef struct lfm2_hp {
    int32_t conv_K;          /* conv_L_cache: taps of the short convolution */
    unsigned char *is_attn;  /* [n_layer] 1: full_attention layer, 0: conv layer */
} lfm2_hp;

/* Weights of a conv layer (dg_layer.arch_data). */
typedef struct lfm2_conv {
    dg_weight in_proj;   /* [3E, E] */
    const float *conv;   /* [E, 1, K] */
    dg_weight out_proj;  /* [E, E] */
} lfm2_conv;

/* Conv layer il on x [M, E] (not modified) up to the gated product: b->rbuf
 * [M, 5E] (m->scratch_per_token) = B | C | X (in_proj of RMSNorm(x), [M, 3E]),
 * then bx = B * X [M, E], then y0 = conv(bx) [M, E] from each segment's tail
 * (seg->rec[il], advanced). b->xn = RMSNorm(x). The block's output is
 * out_proj(C * y0). With adapters (DG_LORA_REC_IN) the in_proj output
 * includes them. */
void dg_lfm2_conv_core(const deg_model *m, int il, dg_batch *b, const float *x);
/* y [M, E] = C * y0 from the core's b->rbuf: out_proj's input. */
void dg_lfm2_conv_gated(const deg_model *m, const dg_batch *b, float *y);

#endif
