#include "model/ops.h"

/* The hot loops are static target_clones (an ifunc of a global function
 * would be exported whatever its visibility); the dg_* entry points wrap
 * them. */

#include <math.h>

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

/* x: [n, H, D]; cos_t, sin_t: [n, D/2] */
DG_HOT static void dg_rope_apply_impl(float *x, const float *cos_t, const float *sin_t, size_t n, int n_heads,
                   int head_dim)
{
    int half = head_dim / 2;
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

void dg_rmsnorm(float *out, const float *x, const float *w, size_t n, size_t dim, float eps)
{
    dg_rmsnorm_impl(out, x, w, n, dim, eps);
}

void dg_rope_apply(float *x, const float *cos_t, const float *sin_t, size_t n, int n_heads, int head_dim)
{
    dg_rope_apply_impl(x, cos_t, sin_t, n, n_heads, head_dim);
}

void dg_swiglu(float *g, const float *u, size_t n)
{
    dg_swiglu_impl(g, u, n);
}
