/* LoRA adapters (include/lora.h): the private layout of deg_lora and the
 * per-row kernels the layer forward (layer_std.c) and the layer backward
 * (lib/model/layer_std_bwd.c) apply. */
#ifndef DG_MODEL_LORA_INTERNAL_H
#define DG_MODEL_LORA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "lora.h"

/* Largest rank (the kernels keep A x on the stack). */
#define DG_LORA_MAX_RANK 256

/* Targets in the order of the flat layout (and of the DEG_LORA_* bits). */
enum { DG_LORA_Q, DG_LORA_K, DG_LORA_V, DG_LORA_O, DG_LORA_GATE, DG_LORA_UP, DG_LORA_DOWN,
       DG_LORA_REC_IN, DG_LORA_REC_Z, DG_LORA_REC_OUT, DG_LORA_N_TARGETS };
/* Every target bit deg_lora_new accepts. */
#define DG_LORA_ALL_BITS (DEG_LORA_ALL | DEG_LORA_ALL_RECURRENT)

struct deg_lora {
    const deg_model *model;
    deg_lora_params p;
    float scale;                           /* alpha / rank */
    /* in[il * DG_LORA_N_TARGETS + t], out[...]: layer il's projection of
     * target t is [out, in] (Gemma 4's layers differ: full layers' head_dim,
     * KV-sharing layers' double-wide MLPs); read with dg_lora_in / _out. */
    size_t *in, *out;
    /* off[((a * n_layer) + il) * DG_LORA_N_TARGETS + t]: offset of A in data
     * (B follows at + rank * in[t]); (size_t)-1 for a disabled target. */
    size_t *off;
    size_t n_params;
    float *data;                           /* [n_params] */
};

static inline size_t dg_lora_in(const deg_lora *l, int il, int t)
{
    return l->in[(size_t)il * DG_LORA_N_TARGETS + (size_t)t];
}
static inline size_t dg_lora_out(const deg_lora *l, int il, int t)
{
    return l->out[(size_t)il * DG_LORA_N_TARGETS + (size_t)t];
}

/* A of adapter a, layer il, target t, or NULL when t is not adapted. */
const float *dg_lora_A(const deg_lora *l, int a, int il, int t);
/* Offset of A in the flat layout (B at + rank * in[t]); (size_t)-1 if none. */
size_t dg_lora_offset(const deg_lora *l, int a, int il, int t);

/* Forward of one projection's adapter on n rows, each row alone in a fixed
 * order (so a row's numbers never depend on the other rows or threads):
 *   u = A x_i (dg_dot over in), y_i[o] += scale * dot(B[o,:], u)
 * x: [n, in] stride ldx; y: [n, out] stride ldy; A [r, in], B [out, r]. */
void dg_lora_rows(float *y, size_t ldy, const float *x, size_t ldx, size_t n, const float *A,
                  const float *B, int r, size_t in, size_t out, float scale);

/* Its backward on the same n rows, dy [n, out] stride ldy:
 *   u = A x_i, du = scale * B^T dy_i;
 *   dB += scale * dy_i u^T, dA += du x_i^T, dx_i += A^T du (dx may be NULL)
 * rows in order (the sums over rows have a fixed order). */
void dg_lora_rows_backward(float *dA, float *dB, float *dx, size_t lddx, const float *dy,
                           size_t ldy, const float *x, size_t ldx, size_t n, const float *A,
                           const float *B, int r, size_t in, size_t out, float scale);

#endif
