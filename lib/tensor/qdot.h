/* Dot products of quantized weight rows with 8-bit-quantized activation
 * rows: the arithmetic of every quantized matrix product (weight.c).
 *
 * Activations. A row x[K] (K a multiple of 32) is quantized per block of 32
 * (dg_q8_row): d = max|x| / 127, q[i] = rint(x[i] / d) in [-127, 127]
 * (round to nearest even; d = 0 gives q = 0), with the block's integer sum
 * of q kept for the formats with a min (Q4_1, Q4_K).
 *
 * One block contribution. For each block b of 32 elements, the weight
 * block's integer dot product with q is exact (int32), then turned into one
 * f32 contribution c_b with a fixed expression per format (ggml's block
 * definitions, tensor/dtype.c; dw, mw: the weight block's f16 scale/min):
 *   Q8_0:  c = (dw * d) * isum,            isum = sum w_i q_i
 *   Q4_0:  c = (dw * d) * isum,            isum = sum (w_i - 8) q_i
 *   Q4_1:  c = (dw * d) * isum + (mw * d) * qsum
 *   Q4_K:  sub-block j (32 elems) with 6-bit scale sc, min mn:
 *          c = (dw * d) * (sc * isum) - (dmin * d) * (mn * qsum)
 *   Q6_K:  two groups of 16 with int8 scales s0, s1:
 *          c = (dw * d) * (s0 * isum0 + s1 * isum1)
 * Fixed summation order: acc[b mod 8] += c_b over b = 0, 1, ..., then
 * y = ((acc0 + acc1) + (acc2 + acc3)) + ((acc4 + acc5) + (acc6 + acc7)),
 * every operation one f32 rounding (no FMA contraction: this file is built
 * with fp-contract off). The SIMD kernels (AVX2; AVX-512 VNNI for the
 * integer dot; every format above, eight blocks per step with block b in
 * lane b mod 8) compute the same integers and the same f32 operations lane
 * by lane, so they are bitwise equal to the portable scalar kernel (tested
 * in tests/c/test_qmatmul.c, the AVX2 set again under DEG_QKERNEL=avx2 in
 * the qmatmul_avx2 test); a row's result depends only on its own x row
 * and the weight row, never on how many rows or threads a call has.
 *
 * Error bound against the f32 product of the dequantized weights: the
 * activation rounding moves each x_i by at most d_b / 2, so
 * |y - sum_i w_i x_i| <= sum_b d_b / 2 * sum_{i in b} |w_i| (+ f32 rounding). */
#ifndef DG_TENSOR_QDOT_H
#define DG_TENSOR_QDOT_H

#include <stddef.h>
#include <stdint.h>

#include "tensor/dtype.h"

#define DG_QK 32

/* A quantized activation row of nb = K / 32 blocks; the three arrays are
 * caller-owned (q: [K], d: [nb], s: [nb]). */
typedef struct dg_q8_row {
    int8_t *q;
    float *d;
    int32_t *s;     /* per block: the integer sum of its 32 q */
    int64_t nb;
    /* Optional, for dg_qdot_rows (filled by dg_q8_interleave; NULL: unused).
     * qt [dg_q8_groups(nb) * 32]: per group of 8 blocks, 8 vectors of 32
     * bytes, vector k's 4-byte lane l = q[32 (g + l) + 4k ..] (zeros past
     * nb); hs [2 * dg_q8_groups(nb)]: the sums of each block's first 16 q,
     * then of its last 16. */
    int8_t *qt;
    int32_t *hs;
} dg_q8_row;

/* nb rounded up to whole groups of 8 blocks. */
static inline int64_t dg_q8_groups(int64_t nb) { return (nb + 7) & ~(int64_t)7; }

/* Quantize x[K] (K = 32 * r->nb) into r (q, d, s). dg_q8_quantize: AVX2
 * when the kernel set has it; dg_q8_quantize_scalar: the portable reference
 * (bitwise equal; NaN / infinite blocks always take the reference's code). */
void dg_q8_quantize(const float *x, const dg_q8_row *r);
void dg_q8_quantize_scalar(const float *x, const dg_q8_row *r);

/* Fill r->qt and r->hs from r->q (after dg_q8_quantize). */
void dg_q8_interleave(const dg_q8_row *r);

/* Kernel sets, chosen once from the CPU (or DEG_QKERNEL=scalar|avx2|vnni,
 * capped at what the CPU has). Static name: "scalar", "avx2", "avx512vnni". */
const char *dg_qdot_kernel(void);

/* Dot of weight row w (dtype t, nb32 * 32 elements in its block layout)
 * with the quantized row x. dg_qdot: the kernel set in use;
 * dg_qdot_scalar: the portable reference (bitwise equal). t must be one of
 * Q8_0, Q4_0, Q4_1, Q4_K, Q6_K. */
float dg_qdot(dg_dtype t, const uint8_t *w, const dg_q8_row *x);
float dg_qdot_scalar(dg_dtype t, const uint8_t *w, const dg_q8_row *x);

/* Many x rows against nr <= DG_QDOT_ROWS_MAX weight rows (prefill, batched
 * decode): y[m * ldy + r] = dg_qdot(t, w[r], &x[m]) for m in [0, M), r in
 * [0, nr), bitwise, each weight row's blocks unpacked once (bytes and f32
 * scales, qdot_rows.c) into scratch and reused for every x row; the pairs go
 * x row by x row (an x row read once per call, then from L1). All x rows
 * have x[0].nb blocks and qt/hs filled (dg_q8_interleave; with x[0].qt NULL:
 * dg_qdot per pair); scratch: dg_qdot_rows_scratch(nb) bytes (room for
 * DG_QDOT_ROWS_MAX rows), caller-owned, any alignment. */
#define DG_QDOT_ROWS_MAX 4
size_t dg_qdot_rows_scratch(int64_t nb);
void dg_qdot_rows(dg_dtype t, const uint8_t *const *w, int nr, const dg_q8_row *x, int64_t M,
                  float *y, int64_t ldy, void *scratch);

#endif
