/* Layer backward over a pass laid out as lib/model/layer.h (the training
 * forward's batch), per architecture: the standard llama/qwen3 layer's is in
 * layer_std_bwd.c, beside the forward of lib/model/layer_std.c whose saved
 * activations (dg_layer_acts) it reads. */
#ifndef DG_GRAD_LAYER_BWD_H
#define DG_GRAD_LAYER_BWD_H

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
} dg_layer_grad;

/* dx [M, E] holds dL/d(layer output) and becomes dL/d(layer input). b is the
 * batch of the forward that filled a (segments with own_len0 = 0: the
 * segments' own K/V are a->k, a->v; with g->dlora, a->att saved). Errors:
 * DEG_ERR_NOMEM. */
typedef deg_status (*dg_layer_backward_fn)(const deg_model *m, int il, const dg_batch *b,
                                           const dg_layer_acts *a, float *dx,
                                           const dg_layer_grad *g);

/* The backward of the model's layer, or NULL when its architecture has none. */
dg_layer_backward_fn dg_layer_backward_for(const deg_model *m);

deg_status dg_backward_std_layer(const deg_model *m, int il, const dg_batch *b,
                                 const dg_layer_acts *a, float *dx, const dg_layer_grad *g);

/* dg_rmsnorm_backward over n rows, in parallel over rows when n > 16 (each
 * row's arithmetic is the same either way). */
void dg_rmsnorm_backward_rows(float *dx, const float *dy, const float *x, const float *w,
                              size_t n, size_t dim, float eps, int accumulate);

#endif
