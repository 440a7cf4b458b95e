/* Deterministic exp for the softmax: one f32 algorithm whose bits are the
 * same on every code path (scalar, SSE2, AVX2, AVX-512). */
#ifndef DG_MODEL_VEXP_H
#define DG_MODEL_VEXP_H

#include <stddef.h>

/* exp(x) in f32 (Cephes expf's algorithm, S. Moshier): n = round(x log2 e)
 * by the 1.5*2^23 rounding constant, r = x - n*C1 - n*C2 (Cody-Waite, C1 =
 * 0.693359375 exact in 9 bits), exp(r) by the degree-7 polynomial
 * 1 + r + r^2 (p5 + r (p4 + ... r p0)) in Horner order, times 2^n applied as
 * two exact power-of-two factors (one rounding even when the result is
 * subnormal). Every step is one IEEE f32 add or multiply (no FMA: the file
 * is compiled without contraction), so every path gives the same bits.
 * x < -104 gives 0 (or the subnormal/0 the formula rounds to near it),
 * x > 88.8 gives +inf, NaN gives NaN. Error vs the correctly rounded exp:
 * at most 1 ulp for normal results (tests/c/test_attention.c measures it
 * over the float line; libm's expf is itself within 1 ulp). */
float dg_expf(float x);

/* p[j] = dg_expf(s[j] - m) for j < n (p may equal s); returns sum_j p[j]
 * in dg_dot's lane order (lane j % 8 accumulates in j order, the 8 lanes
 * combined by dg_hsum8, lib/model/ops.h). The order is a function of n only;
 * the bits are the same on every CPU. */
float dg_exp_sub_sum(float *p, const float *s, float m, size_t n);

/* For tests: the same function built for one code path. */
enum { DG_VEXP_SCALAR, DG_VEXP_SSE2, DG_VEXP_AVX2, DG_VEXP_AVX512, DG_VEXP_N };
/* 1 when this CPU runs the path (scalar and SSE2: always on x86-64; only
 * the scalar path elsewhere). */
int dg_vexp_supported(int path);
/* dg_exp_sub_sum on the given path (a supported one). */
float dg_exp_sub_sum_path(int path, float *p, const float *s, float m, size_t n);

#endif
