/* Forward kernels of the transformer layers, f32, one row at a time (ops.h). */
#include "model/ops.h"

/* The hot loops are static target_clones (an ifunc of a global function
 * would be exported whatever its visibility); the dg_* entry points wrap
 * them. */

#include <math.h>
#include <string.h>

#include "model/vexp.h"

/* x, out: [n, dim]; w: [dim] */
DG_HOT static void dg_rmsnorm_impl(float *out, const float *x, const float *w, size_t n, size_t dim, float eps)
{
    for (size_t i = 0; i < n; i++) {
        const float *xi = x + i * dim;
        float *oi = out + i * dim;
        double ss = 0.0;
        for (size_t j = 0; j < dim; j++) ss += (double)xi[j] * (double)xi[j];
        /* transformers: hidden * torch.rsqrt(variance + eps), all f32 */
        float var = (float)(ss / (double)dim);
        float r = 1.0f / sqrtf(var + eps);
        for (size_t j = 0; j < dim; j++) oi[j] = w[j] * (xi[j] * r);
    }
}

/* cos_t, sin_t: [n, D/2]; pos: [n] */
void dg_rope_table(float *cos_t, float *sin_t, const int64_t *pos, size_t n, int head_dim,
                   float theta)
{
    int half = head_dim / 2;
    for (size_t i = 0; i < n; i++) {
        float p = (float)pos[i];
        for (int j = 0; j < half; j++) {
            float inv_freq = 1.0f / powf(theta, (float)(2 * j) / (float)head_dim);
            float a = p * inv_freq;
            cos_t[i * half + j] = cosf(a);
            sin_t[i * half + j] = sinf(a);
        }
    }
}

/* x: [n, H, D]; cos_t, sin_t: [n, R/2]; the first R = rot_dim of each head rotate */
DG_HOT static void dg_rope_apply_impl(float *x, const float *cos_t, const float *sin_t, size_t n, int n_heads,
                   int head_dim, int rot_dim)
{
    int half = rot_dim / 2;
    for (size_t i = 0; i < n; i++) {
        const float *c = cos_t + i * half, *s = sin_t + i * half;
        for (int h = 0; h < n_heads; h++) {
            float *v = x + (i * n_heads + h) * head_dim;
            for (int j = 0; j < half; j++) {
                float a = v[j], b = v[j + half];
                v[j] = a * c[j] - b * s[j];
                v[j + half] = b * c[j] + a * s[j];
            }
        }
    }
}

/* g, u: [n] */
DG_HOT static void dg_swiglu_impl(float *g, const float *u, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float z = g[i];
        g[i] = z / (1.0f + expf(-z)) * u[i];
    }
}

/* ------------------------------------------------------------ attention */

/* sc[j] = (q . k_j) * scale for n key rows k_j = k + j*stride, each dot in
 * dg_dot's order (8 lanes, dg_hsum8). Four keys at a time so the four
 * dependency chains overlap; a key's score does not depend on which group it
 * falls in. Returns max(mx, max_j sc[j]). q, k_j: [D]. */
static inline __attribute__((always_inline)) float qk_rows(const float *q, const float *k,
                                                          size_t stride, size_t n, int D,
                                                          float scale, float *sc, float mx)
{
    size_t j = 0;
    if (D % 8 == 0) {
        for (; j + 4 <= n; j += 4) {
            const float *k0 = k + j * stride, *k1 = k0 + stride, *k2 = k1 + stride,
                        *k3 = k2 + stride;
            dg_v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
            for (int i = 0; i < D; i += 8) {
                dg_v8 qv = dg_ld8(q + i);
                a0 += qv * dg_ld8(k0 + i);
                a1 += qv * dg_ld8(k1 + i);
                a2 += qv * dg_ld8(k2 + i);
                a3 += qv * dg_ld8(k3 + i);
            }
            float v[4] = {dg_hsum8(a0) * scale, dg_hsum8(a1) * scale, dg_hsum8(a2) * scale,
                          dg_hsum8(a3) * scale};
            for (int r = 0; r < 4; r++) {
                sc[j + r] = v[r];
                if (v[r] > mx) mx = v[r];
            }
        }
    }
    for (; j < n; j++) {
        float v = dg_dot(q, k + j * stride, (size_t)D) * scale;
        sc[j] = v;
        if (v > mx) mx = v;
    }
    return mx;
}

/* acc[:] += p[j] * v_j[:] for j = 0..n-1 in order; v_j = v + j*stride: [D],
 * D a multiple of 8 (acc: D/8 lane vectors). */
static inline __attribute__((always_inline)) void pv_rows(dg_v8 *restrict acc, const float *p,
                                                         const float *v, size_t stride,
                                                         size_t n, int D)
{
    for (size_t j = 0; j < n; j++) {
        const float *vj = v + j * stride;
        dg_v8 pj = (dg_v8){0} + p[j];
        for (int d = 0; d < D / 8; d++) acc[d] += pj * dg_ld8(vj + 8 * d);
    }
}

/* The same for any D, one float at a time. */
static void pv_rows_any(float *acc, const float *p, const float *v, size_t stride, size_t n,
                        int D)
{
    for (size_t j = 0; j < n; j++) dg_axpy(acc, p[j], v + j * stride, (size_t)D);
}

/* The rows of one tile of a pair's keys: global key indices [j0, j0 + c)
 * of the row's context (prefix rows j < Lp, then own rows j - Lp); a tile
 * may straddle the two. */
typedef struct attn_src {
    const float *kp, *vp, *ko, *vo;
    size_t Lp, stride;
} attn_src;

/* One tile of the online softmax (Milakov & Gimelshein 2018; FlashAttention,
 * Dao et al. 2022) for one (row, head) with state (*m, *l, acc[D]):
 *   s_j = q . k_j / sqrt(D) (qk_rows), m' = max(m, max_j s_j),
 *   p_j = dg_expf(s_j - m'), t = sum_j p_j (dg_exp_sub_sum's order),
 *   a = dg_expf(m - m') (skipped when m' == m: a = 1 exactly),
 *   l = l a + t, acc = acc a + sum_j p_j v_j (j in order).
 * sc: [DG_ATTN_TILE] scratch. */
static inline __attribute__((always_inline)) void online_tile(
    const attn_src *s, const float *q, size_t j0, size_t c, int D, float scale, float *sc,
    float *m, float *l, float *ap)
{
    size_t np_ = j0 < s->Lp ? (s->Lp - j0 < c ? s->Lp - j0 : c) : 0; /* prefix keys in tile */
    float mt = *m;
    if (np_) mt = qk_rows(q, s->kp + j0 * s->stride, s->stride, np_, D, scale, sc, mt);
    if (c > np_)
        mt = qk_rows(q, s->ko + (j0 + np_ - s->Lp) * s->stride, s->stride, c - np_, D, scale,
                     sc + np_, mt);
    float t = dg_exp_sub_sum(sc, sc, mt, c);
    float a = mt != *m ? dg_expf(*m - mt) : 1.0f;
    *l = *l * a + t;
    *m = mt;
    if (D % 8 == 0) {
        dg_v8 accv[DG_ATTN_MAX_HEAD_DIM / 8];
        for (int d = 0; d < D / 8; d++) accv[d] = dg_ld8(ap + 8 * d);
        if (a != 1.0f)
            for (int d = 0; d < D / 8; d++) accv[d] *= a;
        if (np_) pv_rows(accv, sc, s->vp + j0 * s->stride, s->stride, np_, D);
        if (c > np_)
            pv_rows(accv, sc + np_, s->vo + (j0 + np_ - s->Lp) * s->stride, s->stride, c - np_,
                    D);
        for (int d = 0; d < D / 8; d++) dg_st8(ap + 8 * d, accv[d]);
    } else {
        if (a != 1.0f)
            for (int d = 0; d < D; d++) ap[d] *= a;
        if (np_) pv_rows_any(ap, sc, s->vp + j0 * s->stride, s->stride, np_, D);
        if (c > np_)
            pv_rows_any(ap, sc + np_, s->vo + (j0 + np_ - s->Lp) * s->stride, s->stride,
                        c - np_, D);
    }
}

/* dg_attend_group for a given D (see ops.h): DG_ATTN_ROWS query rows x
 * G heads ("pairs") per block; the block's keys go by in tiles of
 * DG_ATTN_TILE at fixed global key indices (0, T, 2T, ... of prefix + own),
 * each tile read once for all the pairs that reach it. A pair's operations
 * depend only on its own context length: the tiles it reaches, cut where its
 * own context ends. Scratch: the tile's scores, then the pairs'
 * accumulators. */
static inline __attribute__((always_inline)) void attend_group_d(
    float *out, size_t out_stride, float *stats, size_t stats_stride, const float *q,
    size_t q_stride, const float *kp, const float *vp, size_t Lp, const float *ko,
    const float *vo, size_t L0, size_t n, size_t kv_stride, int D, int G, float scale,
    size_t window, float *scratch)
{
    enum { R = DG_ATTN_ROWS, T = DG_ATTN_TILE, GM = DG_ATTN_MAX_GROUP };
    size_t Dp = ((size_t)D + 7) & ~(size_t)7;
    float *sc = scratch, *accs = scratch + T; /* [T]; [R * G, Dp] */
    attn_src src = {kp, vp, ko, vo, Lp, kv_stride};
    for (size_t i0 = 0; i0 < n; i0 += R) {
        int nr = n - i0 < (size_t)R ? (int)(n - i0) : R, np = nr * G;
        float m[R * GM], l[R * GM];
        for (int p = 0; p < np; p++) m[p] = -INFINITY, l[p] = 0.0f;
        memset(accs, 0, sizeof(float) * Dp * (size_t)np);
        size_t end = Lp + L0 + i0 + (size_t)nr; /* the block's last row's context */
        /* a sliding window: the block's first row sees keys from lo0 on (the
         * tile holding lo0 is the first one read) */
        size_t lo0 = window && Lp + L0 + i0 + 1 > window ? Lp + L0 + i0 + 1 - window : 0;
        for (size_t j0 = lo0 / T * T; j0 < end; j0 += T)
            for (int p = 0; p < np; p++) {
                size_t tot = Lp + L0 + i0 + (size_t)(p / G) + 1; /* the pair's context */
                size_t lo = window && tot > window ? tot - window : 0; /* its first key */
                if (tot <= j0 || lo >= j0 + T) continue;
                size_t js = lo > j0 ? lo : j0, je = tot < j0 + T ? tot : j0 + T;
                const float *qp = q + (i0 + (size_t)(p / G)) * q_stride + (size_t)(p % G) * D;
                online_tile(&src, qp, js, je - js, D, scale, sc, &m[p], &l[p],
                            accs + (size_t)p * Dp);
            }
        for (int p = 0; p < np; p++) {
            size_t i = i0 + (size_t)(p / G);
            int g = p % G;
            float inv = 1.0f / l[p];
            float *oi = out + i * out_stride + (size_t)g * D;
            const float *ap = accs + (size_t)p * Dp;
            if (D % 8 == 0) {
                for (int d = 0; d < D / 8; d++) dg_st8(oi + 8 * d, dg_ld8(ap + 8 * d) * inv);
            } else {
                for (int d = 0; d < D; d++) oi[d] = ap[d] * inv;
            }
            if (stats) {
                stats[i * stats_stride + 2 * (size_t)g] = m[p];
                stats[i * stats_stride + 2 * (size_t)g + 1] = l[p];
            }
        }
    }
}

DG_HOT static void dg_attend_group_impl(float *out, size_t out_stride, float *stats,
                                        size_t stats_stride, const float *q, size_t q_stride,
                                        const float *kp, const float *vp, size_t Lp,
                                        const float *ko, const float *vo, size_t L0, size_t n,
                                        size_t kv_stride, int D, int G, float scale,
                                        size_t window, float *scratch)
{
    switch (D) {
    case 64:
        attend_group_d(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo,
                       L0, n, kv_stride, 64, G, scale, window, scratch);
        break;
    case 128:
        attend_group_d(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo,
                       L0, n, kv_stride, 128, G, scale, window, scratch);
        break;
    default:
        attend_group_d(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo,
                       L0, n, kv_stride, D, G, scale, window, scratch);
        break;
    }
}

void dg_rmsnorm(float *out, const float *x, const float *w, size_t n, size_t dim, float eps)
{
    dg_rmsnorm_impl(out, x, w, n, dim, eps);
}

void dg_rope_apply(float *x, const float *cos_t, const float *sin_t, size_t n, int n_heads, int head_dim)
{
    dg_rope_apply_impl(x, cos_t, sin_t, n, n_heads, head_dim, head_dim);
}

void dg_rope_apply_partial(float *x, const float *cos_t, const float *sin_t, size_t n,
                           int n_heads, int head_dim, int rot_dim)
{
    dg_rope_apply_impl(x, cos_t, sin_t, n, n_heads, head_dim, rot_dim);
}

void dg_swiglu(float *g, const float *u, size_t n)
{
    dg_swiglu_impl(g, u, n);
}

size_t dg_attend_group_scratch(int D, int G)
{
    return DG_ATTN_TILE + (size_t)DG_ATTN_ROWS * (size_t)G * (((size_t)D + 7) & ~(size_t)7);
}

void dg_attend_group(float *out, size_t out_stride, float *stats, size_t stats_stride,
                     const float *q, size_t q_stride, const float *kp, const float *vp,
                     size_t Lp, const float *ko, const float *vo, size_t L0, size_t n,
                     size_t kv_stride, int D, int G, float *scratch)
{
    dg_attend_group_impl(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo,
                         L0, n, kv_stride, D, G, 1.0f / sqrtf((float)D), 0, scratch);
}

void dg_attend_group_win(float *out, size_t out_stride, float *stats, size_t stats_stride,
                         const float *q, size_t q_stride, const float *kp, const float *vp,
                         size_t Lp, const float *ko, const float *vo, size_t L0, size_t n,
                         size_t kv_stride, int D, int G, float scale, size_t window,
                         float *scratch)
{
    dg_attend_group_impl(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo,
                         L0, n, kv_stride, D, G, scale, window, scratch);
}
