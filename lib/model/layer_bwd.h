/* Layer backward over a pass laid out as lib/model/layer.h (the training
 * forward's batch), per architecture, each beside its forward and reached
 * through the architecture's descriptor (dg_arch.backward_layer, arch.h): the
 * standard llama/qwen3 layer's (and the MLP half every architecture shares)
 * in layer_std_bwd.c, beside layer_std.c whose saved activations
 * (dg_layer_acts) it reads; lfm2's short-conv block in arch_lfm2_bwd.c,
 * qwen3_5's Gated DeltaNet and gated attention in arch_qwen3_5_bwd.c, Gemma 4's
 * layer in arch_gemma4_bwd.c. */
#ifndef DG_MODEL_LAYER_BWD_H
#define DG_MODEL_LAYER_BWD_H

#include <stddef.h>

#include "deg.h"
#include "model/arch.h"
#include "model/layer.h"

/* Backward scratch of one pass of M tokens: dxn [M, E], datt, dq [M, H*D],
 * dk, dv [M, Hkv*D], dh, dgate, dup [M, F]. */
typedef struct dg_layer_grad {
    float *dxn, *datt, *dq, *dk, *dv, *dh, *dgate, *dup;
    /* Gradients into the segments' prefix K/V, per layer [prefix_len,
     * Hkv*D], accumulated (+=); NULL = none (a frozen trunk). Every segment of
     * the pass shares one prefix when these are set. */
    float *const *dpk, *const *dpv;
    /* Gradient into the segments' LoRA parameters (flat layout of
     * include/lora.h), accumulated; NULL = none. With it: scratch xn [M, E]
     * and h [M, F] (the recomputed inputs of the adapted projections). */
    float *dlora;
    float *xn, *h;
    /* Recurrent layers: prec[il] the block every segment started layer il
     * from (never NULL for a recurrent layer: zeros when there is no prefix
     * state), dprec[il] its gradient, accumulated over segments (NULL array:
     * none). */
    const float *const *prec;
    float *const *dprec;
    /* KV sharing (Gemma 4): dk_share[src], dv_share[src] [M, kv_row of src]
     * the gradient into layer src's own K/V rows from the later layers that
     * attend them (accumulated there, added in at src's backward); NULL
     * array: the model shares none. */
    float *const *dk_share, *const *dv_share;
} dg_layer_grad;

/* The architectures' layer backwards (dg_arch.backward_layer, whose contract
 * arch.h states: dx [M, E] from dL/d(layer output) to dL/d(layer input)) of
 * llama and qwen3, lfm2, qwen3_5, gemma4. */
deg_status dg_backward_std_layer(const deg_model *m, int il, dg_batch *b,
                                 const dg_layer_acts *a, float *dx, const dg_layer_grad *g);
deg_status dg_backward_lfm2_layer(const deg_model *m, int il, dg_batch *b,
                                  const dg_layer_acts *a, float *dx, const dg_layer_grad *g);
deg_status dg_backward_qwen3_5_layer(const deg_model *m, int il, dg_batch *b,
                                     const dg_layer_acts *a, float *dx, const dg_layer_grad *g);
deg_status dg_backward_gemma4_layer(const deg_model *m, int il, dg_batch *b,
                                    const dg_layer_acts *a, float *dx, const dg_layer_grad *g);

/* Pieces of the standard layer's backward for the other architectures:
 * dg_backward_mlp: dx (dL/d layer output) becomes dL/d x_mid (through the
 * residual and the SwiGLU MLP, adapters included; reads a->x_mid, gate, up).
 * dg_backward_attn_segs: the attention of every segment, g->datt -> g->dq,
 * dk, dv (and the prefix K/V gradients g->dpk, dpv), at the layer's own
 * geometry (dg_layer: head_dim, n_head_kv, score scale, window; a KV-sharing
 * layer reads layer kv_src's rows, so its prefix gradient goes to
 * g->dpk[kv_src] and g->dk, dv are the gradient into kv_src's own rows). dg_backward_lora: the
 * adapters of target t (DG_LORA_*) of the segments that run one: dy [M, ldy]
 * the gradient at the projection's output, x [M, ldx] its input; dx [M, ldx]
 * += the adapters' share, their parameters' gradient into g->dlora (no-op
 * without it). dg_backward_qk_norm: the per-head q/k RMSNorms in place on
 * g->dq, g->dk (scratch g->datt; no-op for a layer without them). */
deg_status dg_backward_mlp(const deg_model *m, int il, const dg_batch *b, const dg_layer_acts *a,
                           float *dx, const dg_layer_grad *g);
/* The attention layers' shared steps (standard, qwen3_5's gated attention):
 * dg_backward_attn_core: g->datt (at the attention output, per head) -> g->dq, g->dk
 * at the q/k projections' outputs (through the attention of every segment, RoPE and
 * the per-head q/k norms) and g->dv; the prefix K/V gradients into g->dpk, dpv.
 * dg_backward_attn_input: from dq [M, ldq] (the gradient at q_proj's output: ldq =
 * n_head * head_dim, or twice that for qwen3_5's [q | gate] rows), g->dk and g->dv
 * through q/k/v_proj and their adapters (xn [M, E]: the normed input, read only with
 * g->dlora) and the attention norm: dx += dL/d x_in (dx holds the residual's share).
 * The per-head q/k norms of dg_backward_qk_norm are at the layer's head_dim. */
deg_status dg_backward_attn_core(const deg_model *m, int il, const dg_batch *b,
                                 const dg_layer_acts *a, const dg_layer_grad *g);
deg_status dg_backward_attn_input(const deg_model *m, int il, const dg_batch *b,
                                  const dg_layer_acts *a, float *dx, const dg_layer_grad *g,
                                  const float *dq, size_t ldq, const float *xn);
deg_status dg_backward_attn_segs(const deg_model *m, int il, const dg_batch *b,
                                 const dg_layer_acts *a, const dg_layer_grad *g);
void dg_backward_lora(const dg_batch *b, int il, int t, const dg_layer_grad *g, const float *dy,
                      size_t ldy, const float *x, size_t ldx, float *dx);
void dg_backward_qk_norm(const deg_model *m, int il, const dg_batch *b, const dg_layer_acts *a,
                         const dg_layer_grad *g);

/* dg_rmsnorm_backward over n rows, in parallel over rows when n > 16 (each
 * row's arithmetic is the same either way). */
void dg_rmsnorm_backward_rows(float *dx, const float *dy, const float *x, const float *w,
                              size_t n, size_t dim, float eps, int accumulate);

#endif
