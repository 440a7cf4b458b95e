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

/* Partial rotary (transformers apply_rotary_pos_emb with rotary_dim <
 * head_dim, e.g. qwen3_5's partial_rotary_factor): dg_rope_apply on the
 * first rot_dim floats of each head (tables of dg_rope_table(rot_dim)), the
 * rest passes through. dg_rope_apply = rot_dim == head_dim. */
void dg_rope_apply_partial(float *x, const float *cos_t, const float *sin_t, size_t n,
                           int n_heads, int head_dim, int rot_dim);

/* SwiGLU gate: g[i] = silu(g[i]) * u[i], silu(z) = z / (1 + exp(-z)).
 * g, u: [n]. */
void dg_swiglu(float *g, const float *u, size_t n);

/* 8 f32 lanes (GCC vector extension: one AVX register, or two SSE ones in
 * the baseline build). dg_v8u is the same with 4-byte alignment, for loads
 * and stores at any float address. Macros rather than functions: passing
 * 32-byte vectors by value would change the ABI between the clones. */
typedef float dg_v8 __attribute__((vector_size(32)));
typedef float dg_v8u __attribute__((vector_size(32), aligned(4), may_alias));
#define dg_ld8(p) (*(const dg_v8u *)(p))
#define dg_st8(p, v) (*(dg_v8u *)(p) = (v))
/* The fixed combination of the 8 lanes of a dot product. */
#define dg_hsum8(a) \
    ((((a)[0] + (a)[4]) + ((a)[1] + (a)[5])) + (((a)[2] + (a)[6]) + ((a)[3] + (a)[7])))

/* dot(a, b) over n floats in a fixed order: 8 interleaved partial sums
 * (lane l takes elements l, l+8, ...), combined by dg_hsum8. The order is a
 * function of n only. Inline so that callers compiled for several targets
 * (target_clones) get a vector body each; a row's result then depends on the
 * CPU, never on the batch. */
static inline float dg_dot(const float *a, const float *b, size_t n)
{
    dg_v8 acc = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) acc += dg_ld8(a + i) * dg_ld8(b + i);
    for (int l = 0; l < 8 && i < n; l++, i++) acc[l] += a[i] * b[i];
    return dg_hsum8(acc);
}

/* y[:] += a * x[:], n floats. */
static inline void dg_axpy(float *y, float a, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

/* Causal attention of the G (1..DG_ATTN_MAX_GROUP) query heads that share
 * one KV head (GQA), one pass over the keys with the online softmax
 * (FlashAttention's recurrence; no score row is stored):
 *   head g of query row i (i < n) at q + i*q_stride + g*D, [D];
 *   it attends prefix rows j < Lp (kp/vp + j*kv_stride) then own rows
 *   j <= L0 + i (ko/vo + j*kv_stride), K after RoPE, pointers already at the
 *   KV head (kp/vp may be NULL when Lp == 0);
 *   out + i*out_stride + g*D [D] = softmax_j(q . k_j / sqrt(D)) . v_j;
 *   stats (may be NULL) + i*stats_stride + 2g: {m, l}, the row max of the
 *   scores and sum_j exp(s_j - m), what the backward recomputes p_j from
 *   (lib/model/ops_bwd.h).
 * The keys of a row, prefix then own, are cut into tiles of DG_ATTN_TILE at
 * fixed indices 0, T, 2T, ... of that concatenation (a tile may straddle
 * prefix and own); per tile: scores in dg_dot's lane order times
 * 1/sqrt(D), m' = max(m, tile max), p_j = dg_expf(s_j - m') with their sum
 * in dg_exp_sub_sum's order (vexp.h), a = dg_expf(m - m'), l = l a + sum,
 * acc = acc a + p_j v_j in j order; out = acc * (1 / l). So a (row, head)'s
 * bits depend only on its query, its keys/values and the CPU: not on the
 * other rows or heads of the call, on how its context splits into prefix
 * and own rows, or on the thread count (tests/c/test_attention.c). Each
 * K/V tile is read once per block of DG_ATTN_ROWS query rows x G heads.
 * Cost: time O(n * (Lp + L0 + n) * D * G), linear in the context per row;
 * memory: dg_attend_group_scratch(D, G) floats of scratch (one tile's
 * scores and the block's accumulators), independent of the context.
 * D <= DG_ATTN_MAX_HEAD_DIM. */
#define DG_ATTN_MAX_HEAD_DIM 512
#define DG_ATTN_ROWS 4
#define DG_ATTN_TILE 64
#define DG_ATTN_MAX_GROUP 8
size_t dg_attend_group_scratch(int D, int G);
void dg_attend_group(float *out, size_t out_stride, float *stats, size_t stats_stride,
                     const float *q, size_t q_stride, const float *kp, const float *vp,
                     size_t Lp, const float *ko, const float *vo, size_t L0, size_t n,
                     size_t kv_stride, int D, int G, float *scratch);
/* dg_attend_group with the score scale given (scores = q . k * scale; Gemma 4
 * uses 1 after its q/k norms) and a sliding window (window > 0: query row i
 * attends only its last `window` keys, global key indices
 * [Lp + L0 + i + 1 - window, Lp + L0 + i], as transformers'
 * sliding_window_causal mask: kv_idx > q_idx - window). Tiles stay at the
 * fixed global indices (the first tile a row reads starts at its first key),
 * so the bits still depend only on the row's own query, keys and values.
 * dg_attend_group = scale 1/sqrt(D), window 0 (none). */
void dg_attend_group_win(float *out, size_t out_stride, float *stats, size_t stats_stride,
                         const float *q, size_t q_stride, const float *kp, const float *vp,
                         size_t Lp, const float *ko, const float *vo, size_t L0, size_t n,
                         size_t kv_stride, int D, int G, float scale, size_t window,
                         float *scratch);

/* Run-time dispatch of hot loops: an x86-64-v3 (AVX2+FMA) body and the
 * baseline one. ("arch=haswell" would test for an Intel model and miss AMD.) */
#if defined(__x86_64__) && !defined(__clang__)
#define DG_HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define DG_HOT
#endif

#endif
