/* Dot products of typed weight rows with f32 activation rows (weight-only
 * quantization, "W4A32"): the F16/BF16 products, and the quantized dtypes'
 * products when the model keeps its activations in f32
 * (DEG_WEIGHTS_NATIVE_F32ACT).
 *
 * Definition (every kernel, bit for bit): the weight row is dequantized to
 * the exact f32 values dg_dequantize gives (the f32 path's weights; gguf-py's
 * roundings), then
 *   acc[i mod 8] = acc[i mod 8] + w_i * x_i   for i = 0, 1, ..., K - 1
 * (a multiply and an add, each one f32 rounding: no FMA; built with
 * fp-contract off) and y = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)).
 * So y is the f32 dot of the dequantized weights with x up to summation
 * order: no activation rounding (compare qdot.h's 8-bit activations).
 * The AVX2 kernels dequantize a panel of up to 16 weight rows into scratch
 * once per call (every dtype, the K-quants included: a prefill pass of M x
 * rows dequantizes each weight row once, not once per 64 rows), then take
 * the x rows in blocks that stay in L2 (192 KiB) against 8 panel rows at a
 * time (4 past 1024 columns: they stay in L1), dotting up to 4 x rows at a
 * time (register blocking: 4 x 2, 1 x 8 pairs; 4 x 4 where AVX-512VL's 32
 * registers hold them, the same 256-bit operations) and finishing 4 pairs'
 * lane sums with shuffles (each add's operands in the reference's order);
 * a single x row (decode) against
 * Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q4_K dequantizes each 32-element block (Q4_K: sub-block,
 * its eight scales and mins unpacked once per super-block)
 * in registers and multiplies at once (4 weight rows per pass, no scratch).
 * Each (x row, weight row) pair
 * still gets exactly the sequence above, so y[m, n] depends only on x row m
 * and weight row n: never on the rows in the call, the blocking or the
 * thread count. Tested bitwise against dg_fdot_scalar in
 * tests/c/test_qmatmul.c (also under DEG_QKERNEL=scalar / avx2).
 * Cost (bench_qdot, one thread, best of 100 under load, SmolLM2 shapes):
 * decode (one x row) takes 1.3-2.1x the 8-bit kernels' time per row dot
 * for Q4_0/Q4_1/Q8_0 (61 vs 38 ns per 576-wide Q4_1 row), Q4_K 1.95x (150 vs
 * 77 ns per 1536-wide row; 234 before its fused loop, session 9; 191 before
 * its scales were unpacked once per super-block, session 10), Q6_K
 * 1.7x; 64-row batches (prefill) 1.03-1.16x (Q4_1 576-wide: 14.6 vs 14.2
 * ns; 1536-wide 35.8 vs 31.3). Prefill passes (256 x rows, bench_qdot 256
 * 300 32, best of 300, load ~21, session 10) with the once-per-call panels
 * and shuffle sums: Q4_1 576-wide 14.9 -> 11.9 ns per row dot (1.25x),
 * 1536-wide 37.3 -> 33.5 (1.11x); Q4_K 1536-wide 38.1 -> 33.3 (1.15x). */
#ifndef DG_TENSOR_FDOT_H
#define DG_TENSOR_FDOT_H

#include <stddef.h>
#include <stdint.h>

#include "tensor/dtype.h"
#include "tensor/weight.h"

/* The reference: weight row w (dtype t: F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0,
 * Q5_1, Q4_K, Q6_K; K elements, a whole number of blocks) dotted with x[K]. */
float dg_fdot_scalar(dg_dtype t, const uint8_t *w, const float *x, int64_t K);

/* Floats of scratch dg_fdot_tile needs for M x rows of K elements. */
size_t dg_fdot_scratch(int64_t K, int64_t M);

/* y[m * ldy + n] = the dot of weight row n of w with x row m (x + m * ldx),
 * for m in [0, M), n in [n0, n1): bitwise dg_fdot_scalar per pair.
 * scratch: dg_fdot_scratch(w->cols, M) floats, caller-owned. */
void dg_fdot_tile(const dg_weight *w, int64_t n0, int64_t n1, int64_t M, const float *x,
                  int64_t ldx, float *y, int64_t ldy, float *scratch);

/* out[K] = weight row w (dtype t) dequantized, bitwise dg_dequantize (AVX2
 * when the CPU has it, else dg_dequantize itself). */
void dg_fdot_dequant_row(dg_dtype t, const uint8_t *w, float *out, int64_t K);

#endif
