#include "grad/kernels.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "model/ops.h"
#include "tensor/blas.h"

/* dy: [M, N], w: [N, K] -> dx: [M, K] */
void dg_linear_backward_x(float *dx, const float *dy, const float *w, size_t M, size_t N,
                          size_t K, int accumulate)
{
    if (M == 0) return;
    dg_sgemm_nn((int64_t)M, (int64_t)K, (int64_t)N, dy, (int64_t)N, w, (int64_t)K, dx,
                (int64_t)K, accumulate ? 1.0f : 0.0f);
}

/* dy: [M, N], x: [M, K] -> dw: [N, K] (+=); scratch: [N, M] */
void dg_linear_backward_w(float *dw, const float *dy, const float *x, size_t M, size_t N,
                          size_t K, float *scratch)
{
    if (M == 0) return;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) scratch[j * M + i] = dy[i * N + j];
    dg_sgemm_nn((int64_t)N, (int64_t)K, (int64_t)M, scratch, (int64_t)M, x, (int64_t)K, dw,
                (int64_t)K, 1.0f);
}

/* x, dy, dx: [n, dim]; w: [dim] */
void dg_rmsnorm_backward(float *dx, const float *dy, const float *x, const float *w, size_t n,
                         size_t dim, float eps, int accumulate)
{
    for (size_t i = 0; i < n; i++) {
        const float *xi = x + i * dim, *gi = dy + i * dim;
        float *di = dx + i * dim;
        double ss = 0.0;
        for (size_t j = 0; j < dim; j++) ss += (double)xi[j] * (double)xi[j];
        float var = (float)(ss / (double)dim);
        float r = 1.0f / sqrtf(var + eps);
        double dot = 0.0;
        for (size_t j = 0; j < dim; j++) dot += (double)w[j] * gi[j] * xi[j];
        float c = (float)(dot * (double)r * (double)r * (double)r / (double)dim);
        for (size_t j = 0; j < dim; j++) {
            float g = r * (w[j] * gi[j]) - xi[j] * c;
            di[j] = accumulate ? di[j] + g : g;
        }
    }
}

/* dx: [n, H, D]; cos_t, sin_t: [n, D/2] */
void dg_rope_backward(float *dx, const float *cos_t, const float *sin_t, size_t n,
                      int n_heads, int head_dim)
{
    int half = head_dim / 2;
    for (size_t i = 0; i < n; i++) {
        const float *c = cos_t + i * half, *s = sin_t + i * half;
        for (int h = 0; h < n_heads; h++) {
            float *v = dx + (i * n_heads + h) * head_dim;
            for (int j = 0; j < half; j++) {
                float a = v[j], b = v[j + half];
                v[j] = a * c[j] + b * s[j];
                v[j + half] = b * c[j] - a * s[j];
            }
        }
    }
}

/* dg, du, dh, g, u: [n] */
void dg_swiglu_backward(float *dg, float *du, const float *dh, const float *g, const float *u,
                        size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float z = g[i];
        float s = 1.0f / (1.0f + expf(-z));
        float silu = z / (1.0f + expf(-z));   /* as the forward computes it */
        du[i] = dh[i] * silu;
        dg[i] = dh[i] * u[i] * (s * (1.0f + z * (1.0f - s)));
    }
}

/* One (query token i, head h): scores into sc[0..P+i+1), returns max; the
 * kernel of the forward (dg_attn_scores, lib/model/ops.h). */
static float scores_row(float *sc, const float *qi, const float *kp, size_t P,
                        const float *ko, size_t i, size_t kvrow, int g, int D, float scale)
{
    float mx = P ? dg_attn_scores(sc, qi, kp + (size_t)g * D, kvrow, P, D, scale) : -INFINITY;
    float mo = dg_attn_scores(sc + P, qi, ko + (size_t)g * D, kvrow, i + 1, D, scale);
    return mo > mx ? mo : mx;
}

/* q, out: [T, H, D]; kp, vp: [P, Hkv, D]; ko, vo: [T, Hkv, D]; stats: [T, H, 2].
 * The inference forward's kernel (dg_attend_head), one call per head. */
void dg_attention_forward(float *out, float *stats, const float *q, const float *kp,
                          const float *vp, size_t P, const float *ko, const float *vo,
                          size_t T, int H, int Hkv, int D, float *scratch, int n_threads)
{
    size_t kvrow = (size_t)Hkv * D, qrow = (size_t)H * D;
    int grp = H / Hkv;
    size_t L = P + T;
    long n_tasks = (long)H;
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads) if (n_threads > 1)
    for (long t = 0; t < n_tasks; t++) {
        int h = (int)t, g = h / grp;
        float *sc = scratch + (size_t)omp_get_thread_num() * L;
        size_t go = (size_t)g * D, ho = (size_t)h * D;
        dg_attend_head(out + ho, qrow, stats + 2 * (size_t)h, 2 * (size_t)H, q + ho, qrow,
                       kp ? kp + go : NULL, vp ? vp + go : NULL, P, ko + go, vo + go, 0, T,
                       kvrow, D, sc);
    }
}

void dg_attention_backward(float *dq, float *dkp, float *dvp, float *dko, float *dvo,
                           const float *dout, const float *q, const float *kp,
                           const float *vp, size_t P, const float *ko, const float *vo,
                           size_t T, int H, int Hkv, int D, const float *stats,
                           float *scratch, int n_threads)
{
    size_t kvrow = (size_t)Hkv * D, qrow = (size_t)H * D;
    float scale = 1.0f / sqrtf((float)D);
    int grp = H / Hkv;
    size_t L = P + T;
    for (size_t i = 0; i < T; i++)
        for (int g = 0; g < Hkv; g++) {
            memset(dko + i * kvrow + (size_t)g * D, 0, sizeof(float) * (size_t)D);
            memset(dvo + i * kvrow + (size_t)g * D, 0, sizeof(float) * (size_t)D);
        }
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads) if (n_threads > 1)
    for (long t = 0; t < (long)Hkv; t++) {
        int g = (int)t;
        float *p = scratch + (size_t)omp_get_thread_num() * 2 * L;
        float *dp = p + L;
        for (int h = g * grp; h < (g + 1) * grp; h++) {
            for (size_t i = 0; i < T; i++) {
                const float *qi = q + i * qrow + (size_t)h * D;
                const float *gi = dout + i * qrow + (size_t)h * D;
                float mx = stats[(i * H + h) * 2];
                float inv = 1.0f / stats[(i * H + h) * 2 + 1];
                scores_row(p, qi, kp, P, ko, i, kvrow, g, D, scale);
                size_t n = P + i + 1;
                double delta = 0.0;
                for (size_t j = 0; j < n; j++) {
                    p[j] = expf(p[j] - mx) * inv;
                    const float *vj = j < P ? vp + j * kvrow : vo + (j - P) * kvrow;
                    dp[j] = dg_dot(gi, vj + (size_t)g * D, D);
                    delta += (double)p[j] * dp[j];
                }
                float *dqi = dq + i * qrow + (size_t)h * D;
                memset(dqi, 0, sizeof(float) * (size_t)D);
                for (size_t j = 0; j < n; j++) {
                    float ds = p[j] * (dp[j] - (float)delta) * scale;
                    const float *kj;
                    float *dkj, *dvj;
                    if (j < P) {
                        kj = kp + j * kvrow + (size_t)g * D;
                        dkj = dkp ? dkp + j * kvrow + (size_t)g * D : NULL;
                        dvj = dvp ? dvp + j * kvrow + (size_t)g * D : NULL;
                    } else {
                        kj = ko + (j - P) * kvrow + (size_t)g * D;
                        dkj = dko + (j - P) * kvrow + (size_t)g * D;
                        dvj = dvo + (j - P) * kvrow + (size_t)g * D;
                    }
                    dg_axpy(dqi, ds, kj, D);
                    if (dkj) dg_axpy(dkj, ds, qi, D);
                    if (dvj) dg_axpy(dvj, p[j], gi, D);
                }
            }
        }
    }
}
