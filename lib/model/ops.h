/* Forward kernels of the transformer layers, f32. Every kernel works on one
 * token row (or one (token, head)) at a time with a fixed arithmetic order,
 * so a row's result never depends on the other rows computed alongside it
 * (the batch-invariance rule of doc/ARCHITECTURE.md). Backward kernels will
 * pair with these in lib/grad. */
#ifndef DG_MODEL_OPS_H
#define DG_MODEL_OPS_H

#include <stddef.h>
#include <stdint.h>

/* RMSNorm (Zhang & Sennrich 2019; transformers LlamaRMSNorm):
 *   out[i,:] = x[i,:] / sqrt(mean(x[i,:]^2) + eps) * w[:]
 * x, out: [n, dim] (may alias); w: [dim]. Sum of squares in double. */
void dg_rmsnorm(float *out, const float *x, const float *w, size_t n, size_t dim, float eps);

/* RoPE tables for rotate-half RoPE (transformers LlamaRotaryEmbedding):
 *   inv_freq[j] = 1 / theta^(2j/head_dim), angle = pos[i] * inv_freq[j] (f32)
 * cos_t, sin_t: [n, head_dim/2]; pos: [n]. */
void dg_rope_table(float *cos_t, float *sin_t, const int64_t *pos, size_t n, int head_dim,
                   float theta);

/* Apply rotate-half RoPE in place to x: [n, n_heads, head_dim] with the
 * tables of the same n tokens:
 *   y[j]       = x[j] * cos[j] - x[j + D/2] * sin[j]
 *   y[j + D/2] = x[j + D/2] * cos[j] + x[j] * sin[j]        (j < D/2) */
void dg_rope_apply(float *x, const float *cos_t, const float *sin_t, size_t n, int n_heads,
                   int head_dim);

/* SwiGLU gate: g[i] = silu(g[i]) * u[i], silu(z) = z / (1 + exp(-z)).
 * g, u: [n]. */
void dg_swiglu(float *g, const float *u, size_t n);

/* dot(a, b) over n floats in a fixed order: 8 interleaved partial sums
 * (lane j takes elements j, j+8, ...), combined pairwise at the end. The
 * order is a function of n only, and the loop vectorizes. Inline so that
 * callers compiled for several targets (target_clones) get a vector body
 * each; a row's result then depends only on the CPU, never on the batch. */
static inline float dg_dot(const float *a, const float *b, size_t n)
{
    float acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    for (int j = 0; i < n; i++, j++) acc[j] += a[i] * b[i];
    float s0 = (acc[0] + acc[4]) + (acc[1] + acc[5]);
    float s1 = (acc[2] + acc[6]) + (acc[3] + acc[7]);
    return s0 + s1;
}

/* y[:] += a * x[:], n floats. */
static inline void dg_axpy(float *y, float a, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

/* Run-time dispatch of hot loops: an AVX2+FMA body and the baseline one. */
#if defined(__x86_64__) && !defined(__clang__)
#define DG_HOT __attribute__((target_clones("arch=haswell", "default")))
#else
#define DG_HOT
#endif

#endif
