/* Backward kernels (declared and documented in ops_bwd.h), each beside its forward in ops.c. */
#include "model/ops_bwd.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

#include "model/ops.h"
#include "model/vexp.h"
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
    dg_rope_backward_partial(dx, cos_t, sin_t, n, n_heads, head_dim, head_dim);
}

void dg_rope_backward_partial(float *dx, const float *cos_t, const float *sin_t, size_t n,
                              int n_heads, int head_dim, int rot_dim)
{
    int half = rot_dim / 2;
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

/* q, out: [T, H, D]; kp, vp: [P, Hkv, D]; ko, vo: [T, Hkv, D]; stats: [T, H, 2].
 * The inference forward's kernel (dg_attend_group), one call per head. */
void dg_attention_forward(float *out, float *stats, const float *q, const float *kp,
                          const float *vp, size_t P, const float *ko, const float *vo,
                          size_t T, int H, int Hkv, int D, float *scratch, int n_threads)
{
    size_t kvrow = (size_t)Hkv * D, qrow = (size_t)H * D;
    int grp = H / Hkv;
    size_t per_thread = dg_attend_group_scratch(D, 1);
    long n_tasks = (long)H;
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads) if (n_threads > 1)
    for (long t = 0; t < n_tasks; t++) {
        int h = (int)t, g = h / grp;
        float *sc = scratch + (size_t)omp_get_thread_num() * per_thread;
        size_t go = (size_t)g * D, ho = (size_t)h * D;
        dg_attend_group(out + ho, qrow, stats + 2 * (size_t)h, 2 * (size_t)H, q + ho, qrow,
                        kp ? kp + go : NULL, vp ? vp + go : NULL, P, ko + go, vo + go, 0, T,
                        kvrow, D, 1, sc);
    }
}

/* Row-major transpose: src [R, C] -> dst [C, R]. */
static void transpose(float *dst, const float *src, size_t R, size_t C)
{
    for (size_t i = 0; i < R; i++)
        for (size_t j = 0; j < C; j++) dst[j * R + i] = src[i * C + j];
}

/* Per query head h (kv head g = h / (H/Hkv)), with K_g, V_g: [L, D]
 * gathered (prefix rows then own rows) and S, dP: [T, L] (entries past the
 * causal edge are 0 in P and dS):
 *   S = Q_h . K_g^T, P = exp(S/sqrt(D) - max) / sum  (the forward's stats)
 *   dP = dO_h . V_g^T; dS = P * (dP - rowsum(P * dP)) / sqrt(D)
 *   dQ_h = dS . K_g;  dK_h = dS^T . Q_h;  dV_h = P^T . dO_h
 * then dK_g = sum of dK_h over the group's heads in head order (same for
 * V). Heads run in parallel (OpenMP), each product is one BLIS call made
 * from inside the parallel region (so single-threaded: no BLIS barriers per
 * small product); every sum has a fixed order, so the result does not
 * depend on the thread count. */
deg_status dg_attention_backward(float *dq, float *dkp, float *dvp, float *dko, float *dvo,
                                 const float *dout, const float *q, const float *kp,
                                 const float *vp, size_t P, const float *ko, const float *vo,
                                 size_t T, int H, int Hkv, int D, const float *stats,
                                 int n_threads)
{
    return dg_attention_backward_win(dq, dkp, dvp, dko, dvo, dout, q, kp, vp, P, ko, vo, T, H,
                                     Hkv, D, 1.0f / sqrtf((float)D), 0, stats, n_threads);
}

/* Rows j < lo of query row i (window: its first key, as dg_attend_group_win)
 * and j > P + i have p_ij = 0, hence ds_ij = 0. */
deg_status dg_attention_backward_win(float *dq, float *dkp, float *dvp, float *dko, float *dvo,
                                     const float *dout, const float *q, const float *kp,
                                     const float *vp, size_t P, const float *ko, const float *vo,
                                     size_t T, int H, int Hkv, int D, float scale, size_t window,
                                     const float *stats, int n_threads)
{
    size_t kvrow = (size_t)Hkv * D, qrow = (size_t)H * D, Dz = (size_t)D;
    int grp = H / Hkv;
    size_t L = P + T, LD = L * Dz;
    if (T == 0) return DEG_OK;
    if (n_threads < 1) n_threads = 1;
    size_t per_thread = 3 * T * L;
    size_t total = 2 * (size_t)Hkv * LD + 2 * (size_t)H * LD + (size_t)n_threads * per_thread;
    float *ws = malloc(sizeof(float) * total);
    if (!ws)
        return dg_fail(DEG_ERR_NOMEM, "attention backward: cannot allocate %zu floats for "
                       "%zu x %zu score blocks", total, T, L);
    float *Kg = ws, *Vg = Kg + (size_t)Hkv * LD;
    float *dKh = Vg + (size_t)Hkv * LD, *dVh = dKh + (size_t)H * LD;
    float *thr = dVh + (size_t)H * LD;
    for (int g = 0; g < Hkv; g++)
        for (size_t j = 0; j < L; j++) {
            const float *kj = j < P ? kp + j * kvrow : ko + (j - P) * kvrow;
            const float *vj = j < P ? vp + j * kvrow : vo + (j - P) * kvrow;
            memcpy(Kg + g * LD + j * Dz, kj + (size_t)g * Dz, sizeof(float) * Dz);
            memcpy(Vg + g * LD + j * Dz, vj + (size_t)g * Dz, sizeof(float) * Dz);
        }
    dg_blas_init();
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads) if (n_threads > 1)
    for (long t = 0; t < (long)H; t++) {
        int h = (int)t, g = h / grp;
        float *S = thr + (size_t)omp_get_thread_num() * per_thread;
        float *dP = S + T * L, *St = dP + T * L;
        const float *K = Kg + g * LD, *V = Vg + g * LD;
        const float *qh = q + (size_t)h * Dz, *gh = dout + (size_t)h * Dz;
        dg_sgemm_nt((int64_t)T, (int64_t)L, D, qh, (int64_t)qrow, K, D, S, (int64_t)L, 0.0f);
        dg_sgemm_nt((int64_t)T, (int64_t)L, D, gh, (int64_t)qrow, V, D, dP, (int64_t)L, 0.0f);
        for (size_t i = 0; i < T; i++) {
            float *si = S + i * L, *dpi = dP + i * L;
            float mx = stats[(i * H + h) * 2];
            float inv = 1.0f / stats[(i * H + h) * 2 + 1];
            size_t n = P + i + 1, lo = window && n > window ? n - window : 0;
            double delta = 0.0;
            for (size_t j = lo; j < n; j++) {
                si[j] = dg_expf(si[j] * scale - mx) * inv; /* the forward's exp */
                delta += (double)si[j] * dpi[j];
            }
            for (size_t j = lo; j < n; j++) dpi[j] = si[j] * (dpi[j] - (float)delta) * scale;
            for (size_t j = 0; j < lo; j++) si[j] = dpi[j] = 0.0f;
            for (size_t j = n; j < L; j++) si[j] = dpi[j] = 0.0f;
        }
        /* S holds P, dP holds dS. */
        dg_sgemm_nn((int64_t)T, D, (int64_t)L, dP, (int64_t)L, K, D, dq + (size_t)h * Dz,
                    (int64_t)qrow, 0.0f);
        transpose(St, dP, T, L);
        dg_sgemm_nn((int64_t)L, D, (int64_t)T, St, (int64_t)T, qh, (int64_t)qrow,
                    dKh + (size_t)h * LD, D, 0.0f);
        transpose(St, S, T, L);
        dg_sgemm_nn((int64_t)L, D, (int64_t)T, St, (int64_t)T, gh, (int64_t)qrow,
                    dVh + (size_t)h * LD, D, 0.0f);
    }
    for (int g = 0; g < Hkv; g++)
        for (size_t j = 0; j < L; j++) {
            float *dk = j < P ? (dkp ? dkp + j * kvrow : NULL) : dko + (j - P) * kvrow;
            float *dv = j < P ? (dvp ? dvp + j * kvrow : NULL) : dvo + (j - P) * kvrow;
            if (j >= P) {
                memset(dk + (size_t)g * Dz, 0, sizeof(float) * Dz);
                memset(dv + (size_t)g * Dz, 0, sizeof(float) * Dz);
            }
            for (int h = g * grp; h < (g + 1) * grp; h++) {
                const float *a = dKh + (size_t)h * LD + j * Dz, *b = dVh + (size_t)h * LD + j * Dz;
                if (dk) for (size_t d = 0; d < Dz; d++) dk[(size_t)g * Dz + d] += a[d];
                if (dv) for (size_t d = 0; d < Dz; d++) dv[(size_t)g * Dz + d] += b[d];
            }
        }
    free(ws);
    return DEG_OK;
}
