/* Deterministic exp for the softmax (vexp.h): a scalar and a vector form of
 * one algorithm, the vector form built for each x86-64 level. */

/* No FMA contraction anywhere in this file: the scalar form, and the vector
 * form on SSE2 (no FMA), must round every product the way the AVX2 and
 * AVX-512 builds do. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "model/vexp.h"

#include <stdint.h>
#include <string.h>

#include "model/ops.h"

#define VX_LOG2E 1.44269504088896341f
#define VX_ROUND 12582912.0f /* 1.5 * 2^23: (t + R) - R rounds t to an integer, ties to even */
#define VX_C1 0.693359375f
#define VX_C2 -2.12194440e-4f
#define VX_P0 1.9875691500e-4f
#define VX_P1 1.3981999507e-3f
#define VX_P2 8.3334519073e-3f
#define VX_P3 4.1665795894e-2f
#define VX_P4 1.6666665459e-1f
#define VX_P5 5.0000001201e-1f
#define VX_LO -104.0f
#define VX_HI 88.8f

/* The range reduction and polynomial of dg_expf on x (clamped, not NaN) of
 * type T (float or dg_v8: the same statements, so the same operations in the
 * same order on one lane or eight): fx = n as a float, y = exp(r). */
#define VX_CORE(T, x, fx, y)                                                                   \
    do {                                                                                       \
        fx = (x) * VX_LOG2E;                                                                   \
        fx = fx + VX_ROUND;                                                                    \
        fx = fx - VX_ROUND;                                                                    \
        T r_ = (x) - fx * VX_C1;                                                               \
        r_ = r_ - fx * VX_C2;                                                                  \
        T z_ = r_ * r_;                                                                        \
        y = (T){0} + VX_P0;                                                                    \
        y = y * r_ + VX_P1;                                                                    \
        y = y * r_ + VX_P2;                                                                    \
        y = y * r_ + VX_P3;                                                                    \
        y = y * r_ + VX_P4;                                                                    \
        y = y * r_ + VX_P5;                                                                    \
        y = y * z_ + r_;                                                                       \
        y = y + 1.0f;                                                                          \
    } while (0)

static inline float bits_to_f(int32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

float dg_expf(float x)
{
    if (x != x) return x + x;
    if (x < VX_LO) x = VX_LO;
    if (x > VX_HI) x = VX_HI;
    float fx, y;
    VX_CORE(float, x, fx, y);
    int32_t n = (int32_t)fx, n1 = n / 2 - (n < 0 && (n & 1)); /* floor(n / 2) */
    int32_t n2 = n - n1;
    return y * bits_to_f((n1 + 127) * (1 << 23)) * bits_to_f((n2 + 127) * (1 << 23));
}

typedef int32_t vx_i8 __attribute__((vector_size(32)));

/* *out = dg_expf of the 8 lanes of *in, the same operations in the same
 * order (pointers: 32-byte vectors by value would change the ABI between
 * the builds). */
static inline __attribute__((always_inline)) void vexp8(dg_v8 *out, const dg_v8 *in)
{
    dg_v8 x = *in;
    vx_i8 nan = x != x;
    vx_i8 lo = x < VX_LO, hi = x > VX_HI;
    dg_v8 xc = (dg_v8)(((vx_i8)x & ~(lo | hi | nan)) | ((vx_i8)((dg_v8){0} + VX_LO) & lo) |
                       ((vx_i8)((dg_v8){0} + VX_HI) & hi));
    dg_v8 fx, y;
    VX_CORE(dg_v8, xc, fx, y);
    vx_i8 n = __builtin_convertvector(fx, vx_i8);
    vx_i8 n1 = n >> 1, n2 = n - n1; /* arithmetic shift: floor(n / 2) */
    dg_v8 s1 = (dg_v8)((n1 + 127) << 23), s2 = (dg_v8)((n2 + 127) << 23);
    dg_v8 e = y * s1 * s2;
    *out = (dg_v8)(((vx_i8)e & ~nan) | ((vx_i8)(x + x) & nan));
}

/* dg_exp_sub_sum with the vector form; the tail (n % 8) lanes by dg_expf. */
static inline __attribute__((always_inline)) float exp_sub_sum_v(float *p, const float *s,
                                                                 float m, size_t n)
{
    dg_v8 acc = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        dg_v8 x = dg_ld8(s + i) - m, e;
        vexp8(&e, &x);
        dg_st8(p + i, e);
        acc += e;
    }
    for (int l = 0; l < 8 && i < n; l++, i++) {
        float e = dg_expf(s[i] - m);
        p[i] = e;
        acc[l] += e;
    }
    return dg_hsum8(acc);
}

/* The scalar form: one element at a time, lane j % 8 as the vector form. */
static float exp_sub_sum_scalar(float *p, const float *s, float m, size_t n)
{
    float acc[8] = {0};
    for (size_t i = 0; i < n; i++) {
        float e = dg_expf(s[i] - m);
        p[i] = e;
        acc[i % 8] += e;
    }
    return dg_hsum8(acc);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define VX_PATH(name, tgt)                                                                     \
    __attribute__((target(tgt))) static float name(float *p, const float *s, float m, size_t n) \
    {                                                                                          \
        return exp_sub_sum_v(p, s, m, n);                                                      \
    }
VX_PATH(exp_sub_sum_avx2, "avx2")
VX_PATH(exp_sub_sum_avx512, "avx512f,avx512vl,avx512dq,avx512bw")
static float exp_sub_sum_sse2(float *p, const float *s, float m, size_t n)
{
    return exp_sub_sum_v(p, s, m, n);
}

int dg_vexp_supported(int path)
{
    switch (path) {
    case DG_VEXP_SCALAR:
    case DG_VEXP_SSE2: return 1;
    case DG_VEXP_AVX2: return __builtin_cpu_supports("avx2");
    case DG_VEXP_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
    default: return 0;
    }
}

float dg_exp_sub_sum_path(int path, float *p, const float *s, float m, size_t n)
{
    switch (path) {
    case DG_VEXP_SSE2: return exp_sub_sum_sse2(p, s, m, n);
    case DG_VEXP_AVX2: return exp_sub_sum_avx2(p, s, m, n);
    case DG_VEXP_AVX512: return exp_sub_sum_avx512(p, s, m, n);
    default: return exp_sub_sum_scalar(p, s, m, n);
    }
}

typedef float (*vx_fn)(float *, const float *, float, size_t);
static vx_fn vx_best(void)
{
    static vx_fn best; /* the choice depends on the CPU only: a racy first set is harmless */
    vx_fn f = __atomic_load_n(&best, __ATOMIC_RELAXED);
    if (f) return f;
    f = dg_vexp_supported(DG_VEXP_AVX512) ? exp_sub_sum_avx512
        : dg_vexp_supported(DG_VEXP_AVX2) ? exp_sub_sum_avx2
                                          : exp_sub_sum_sse2;
    __atomic_store_n(&best, f, __ATOMIC_RELAXED);
    return f;
}

float dg_exp_sub_sum(float *p, const float *s, float m, size_t n)
{
    return vx_best()(p, s, m, n);
}
#else
int dg_vexp_supported(int path)
{
    return path == DG_VEXP_SCALAR;
}

float dg_exp_sub_sum_path(int path, float *p, const float *s, float m, size_t n)
{
    (void)path;
    return exp_sub_sum_scalar(p, s, m, n);
}

float dg_exp_sub_sum(float *p, const float *s, float m, size_t n)
{
    return exp_sub_sum_v(p, s, m, n);
}
#endif
