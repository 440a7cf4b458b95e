#include "model/ops.h"

/* The hot loops are static target_clones (an ifunc of a global function
 * would be exported whatever its visibility); the dg_* entry points wrap
 * them. */

#include <math.h>
#include <string.h>

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
 * falls in. Returns max_j sc[j]. q, k_j: [D]. */
static inline __attribute__((always_inline)) float qk_rows(const float *q, const float *k,
                                                          size_t stride, size_t n, int D,
                                                          float scale, float *sc)
{
    float mx = -INFINITY;
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

/* sc[j] = expf(sc[j] - mx) for j < n; returns their sum, added in j order. */
static inline __attribute__((always_inline)) float exp_rows(float *sc, size_t n, float mx)
{
    float sum = 0.0f;
    for (size_t j = 0; j < n; j++) {
        float e = expf(sc[j] - mx);
        sc[j] = e;
        sum += e;
    }
    return sum;
}

/* dg_attend_head for a given D; always_inline and called with constants for
 * the common head sizes so the accumulators live in registers. */
static inline __attribute__((always_inline)) void attend_d(
    float *out, size_t out_stride, float *stats, size_t stats_stride, const float *q,
    size_t q_stride, const float *kp, const float *vp, size_t Lp, const float *ko,
    const float *vo, size_t L0, size_t n, size_t kv_stride, int D, float *scores)
{
    float scale = 1.0f / sqrtf((float)D);
    dg_v8 accv[DG_ATTN_MAX_HEAD_DIM / 8];
    float *acc = (float *)accv;
    for (size_t i = 0; i < n; i++) {
        const float *qi = q + i * q_stride;
        size_t Lo = L0 + i + 1;
        float mx = -INFINITY;
        if (Lp) mx = qk_rows(qi, kp, kv_stride, Lp, D, scale, scores);
        float mo = qk_rows(qi, ko, kv_stride, Lo, D, scale, scores + Lp);
        if (mo > mx) mx = mo;
        float sum = exp_rows(scores, Lp + Lo, mx);
        float inv = 1.0f / sum;
        float *oi = out + i * out_stride;
        if (D % 8 == 0) {
            for (int d = 0; d < D / 8; d++) accv[d] = (dg_v8){0};
            if (Lp) pv_rows(accv, scores, vp, kv_stride, Lp, D);
            pv_rows(accv, scores + Lp, vo, kv_stride, Lo, D);
            for (int d = 0; d < D / 8; d++) dg_st8(oi + 8 * d, accv[d] * inv);
        } else {
            for (int d = 0; d < D; d++) acc[d] = 0.0f;
            if (Lp) pv_rows_any(acc, scores, vp, kv_stride, Lp, D);
            pv_rows_any(acc, scores + Lp, vo, kv_stride, Lo, D);
            for (int d = 0; d < D; d++) oi[d] = acc[d] * inv;
        }
        if (stats) {
            stats[i * stats_stride] = mx;
            stats[i * stats_stride + 1] = sum;
        }
    }
}

DG_HOT static void dg_attend_head_impl(float *out, size_t out_stride, float *stats,
                                       size_t stats_stride, const float *q, size_t q_stride,
                                       const float *kp, const float *vp, size_t Lp,
                                       const float *ko, const float *vo, size_t L0, size_t n,
                                       size_t kv_stride, int D, float *scores)
{
    switch (D) {
    case 64:
        attend_d(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo, L0, n,
                 kv_stride, 64, scores);
        break;
    case 128:
        attend_d(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo, L0, n,
                 kv_stride, 128, scores);
        break;
    default:
        attend_d(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo, L0, n,
                 kv_stride, D, scores);
        break;
    }
}

/* dg_attend_group for a given D (see ops.h): DG_ATTN_ROWS query rows x
 * G heads ("pairs") per block; each K/V tile of DG_ATTN_TILE rows is read
 * once for all pairs of the block. Per pair the operations are attend_d's:
 * qk_rows over the keys in order (a key's score does not depend on the tile
 * it falls in; the running max keeps the first of equal maxima, as one scan
 * does), exp_rows over the whole row, then p_j v_j added in j order (the
 * accumulator carried from tile to tile). */
static inline __attribute__((always_inline)) void attend_group_d(
    float *out, size_t out_stride, float *stats, size_t stats_stride, const float *q,
    size_t q_stride, const float *kp, const float *vp, size_t Lp, const float *ko,
    const float *vo, size_t L0, size_t n, size_t kv_stride, int D, int G, float *scratch)
{
    enum { R = DG_ATTN_ROWS, T = DG_ATTN_TILE, GM = DG_ATTN_MAX_GROUP };
    float scale = 1.0f / sqrtf((float)D);
    size_t Lmax = Lp + L0 + n, Dp = ((size_t)D + 7) & ~(size_t)7;
    float *accs = scratch + (size_t)R * G * Lmax; /* [R * G, Dp] */
    dg_v8 accv[DG_ATTN_MAX_HEAD_DIM / 8];
    float *acc = (float *)accv;
    for (size_t i0 = 0; i0 < n; i0 += R) {
        int nr = n - i0 < (size_t)R ? (int)(n - i0) : R, np = nr * G;
        float mx[R * GM];
        size_t len[R * GM]; /* own keys of the pair's row */
        for (int p = 0; p < np; p++) mx[p] = -INFINITY, len[p] = L0 + i0 + (size_t)(p / G) + 1;
#define DG_PAIR_Q(p) (q + (i0 + (size_t)((p) / G)) * q_stride + (size_t)((p) % G) * (size_t)D)
#define DG_PAIR_SC(p) (scratch + (size_t)(p) * Lmax)
        /* scores: prefix keys, then own keys (rows of the block end at different keys) */
        for (size_t j0 = 0; j0 < Lp; j0 += T) {
            size_t c = Lp - j0 < T ? Lp - j0 : T;
            for (int p = 0; p < np; p++) {
                float m = qk_rows(DG_PAIR_Q(p), kp + j0 * kv_stride, kv_stride, c, D, scale,
                                  DG_PAIR_SC(p) + j0);
                if (m > mx[p]) mx[p] = m;
            }
        }
        size_t own_end = L0 + i0 + (size_t)nr; /* the block's last row's own keys */
        for (size_t j0 = 0; j0 < own_end; j0 += T)
            for (int p = 0; p < np; p++) {
                if (len[p] <= j0) continue;
                size_t c = len[p] - j0 < T ? len[p] - j0 : T;
                float m = qk_rows(DG_PAIR_Q(p), ko + j0 * kv_stride, kv_stride, c, D, scale,
                                  DG_PAIR_SC(p) + Lp + j0);
                if (m > mx[p]) mx[p] = m;
            }
        float sum[R * GM];
        for (int p = 0; p < np; p++) {
            sum[p] = exp_rows(DG_PAIR_SC(p), Lp + len[p], mx[p]);
            memset(accs + (size_t)p * Dp, 0, sizeof(float) * Dp);
        }
        /* p_j v_j: the pair's accumulator in registers for one tile */
        for (int part = 0; part < 2; part++) {
            const float *v = part ? vo : vp;
            size_t off = part ? Lp : 0, jend = part ? own_end : Lp;
            for (size_t j0 = 0; j0 < jend; j0 += T)
                for (int p = 0; p < np; p++) {
                    size_t lim = part ? len[p] : Lp;
                    if (lim <= j0) continue;
                    size_t c = lim - j0 < T ? lim - j0 : T;
                    float *ap = accs + (size_t)p * Dp;
                    const float *pp = DG_PAIR_SC(p) + off + j0;
                    if (D % 8 == 0) {
                        for (int d = 0; d < D / 8; d++) accv[d] = dg_ld8(ap + 8 * d);
                        pv_rows(accv, pp, v + j0 * kv_stride, kv_stride, c, D);
                        for (int d = 0; d < D / 8; d++) dg_st8(ap + 8 * d, accv[d]);
                    } else {
                        pv_rows_any(ap, pp, v + j0 * kv_stride, kv_stride, c, D);
                    }
                }
        }
        for (int p = 0; p < np; p++) {
            size_t i = i0 + (size_t)(p / G);
            int g = p % G;
            float inv = 1.0f / sum[p];
            float *oi = out + i * out_stride + (size_t)g * D;
            const float *ap = accs + (size_t)p * Dp;
            if (D % 8 == 0) {
                for (int d = 0; d < D / 8; d++) dg_st8(oi + 8 * d, dg_ld8(ap + 8 * d) * inv);
            } else {
                for (int d = 0; d < D; d++) acc[d] = ap[d];
                for (int d = 0; d < D; d++) oi[d] = acc[d] * inv;
            }
            if (stats) {
                stats[i * stats_stride + 2 * (size_t)g] = mx[p];
                stats[i * stats_stride + 2 * (size_t)g + 1] = sum[p];
            }
        }
#undef DG_PAIR_Q
#undef DG_PAIR_SC
    }
}

DG_HOT static void dg_attend_group_impl(float *out, size_t out_stride, float *stats,
                                        size_t stats_stride, const float *q, size_t q_stride,
                                        const float *kp, const float *vp, size_t Lp,
                                        const float *ko, const float *vo, size_t L0, size_t n,
                                        size_t kv_stride, int D, int G, float *scratch)
{
    switch (D) {
    case 64:
        attend_group_d(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo,
                       L0, n, kv_stride, 64, G, scratch);
        break;
    case 128:
        attend_group_d(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo,
                       L0, n, kv_stride, 128, G, scratch);
        break;
    default:
        attend_group_d(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo,
                       L0, n, kv_stride, D, G, scratch);
        break;
    }
}

DG_HOT static float dg_attn_scores_impl(float *sc, const float *q, const float *k,
                                        size_t kv_stride, size_t n, int D, float scale)
{
    return qk_rows(q, k, kv_stride, n, D, scale, sc);
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

void dg_attend_head(float *out, size_t out_stride, float *stats, size_t stats_stride,
                    const float *q, size_t q_stride, const float *kp, const float *vp,
                    size_t Lp, const float *ko, const float *vo, size_t L0, size_t n,
                    size_t kv_stride, int D, float *scores)
{
    dg_attend_head_impl(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo,
                        L0, n, kv_stride, D, scores);
}

size_t dg_attend_group_scratch(size_t max_ctx, int D, int G)
{
    return (size_t)DG_ATTN_ROWS * (size_t)G * (max_ctx + (((size_t)D + 7) & ~(size_t)7));
}

void dg_attend_group(float *out, size_t out_stride, float *stats, size_t stats_stride,
                     const float *q, size_t q_stride, const float *kp, const float *vp,
                     size_t Lp, const float *ko, const float *vo, size_t L0, size_t n,
                     size_t kv_stride, int D, int G, float *scratch)
{
    dg_attend_group_impl(out, out_stride, stats, stats_stride, q, q_stride, kp, vp, Lp, ko, vo,
                         L0, n, kv_stride, D, G, scratch);
}

float dg_attn_scores(float *sc, const float *q, const float *k, size_t kv_stride, size_t n,
                     int D, float scale)
{
    return dg_attn_scores_impl(sc, q, k, kv_stride, n, D, scale);
}
