/* Typed weight matrices: a Linear weight [rows = out, cols = in] held in its
 * file's dtype (f32, f16/bf16, or ggml quantized blocks), and the products
 * the model and its backward take with it.
 *
 * Products and their numerics, per dtype:
 *   F32: BLIS (dg_sgemm_nt / dg_sgemm_nn, tensor/blas.h): exactly the f32
 *     path, batch-invariant by BLIS's row chunking.
 *   Q8_0, Q4_0, Q4_1, Q4_K, Q6_K with f32_act = 0: the x row is quantized
 *     per block of 32 to 8 bits and dotted with integer block products
 *     (tensor/qdot.h: fixed summation order, bitwise equal across the
 *     scalar, AVX2 and AVX-512 VNNI kernels).
 *   F16, BF16, Q5_0, Q5_1 (no 8-bit kernels), and the quantized dtypes
 *   with f32_act = 1: f32 dot of the
 *     exactly dequantized weights with the f32 x row, acc[i mod 8] += w_i *
 *     x_i (one rounding each, no FMA) then ((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7))
 *     (tensor/fdot.h; scalar and AVX2 bitwise equal): the f32 path's
 *     numbers up to summation order.
 * In every case y[m, n] depends only on x row m and weight row n: never on M
 * (rows in the call) nor on the thread count.
 *
 * Backward dX = dY . W (frozen weights): F32 is BLIS's product as before;
 * the other dtypes dequantize 64 weight rows at a time (tensor/dtype.h:
 * the exact values the f32 path holds) and accumulate the 64-row tiles in
 * order with BLIS, so dX is the f32 product with the dequantized weights up
 * to f32 summation order (activations are not quantized in the backward),
 * with no resident f32 copy. */
#ifndef DG_TENSOR_WEIGHT_H
#define DG_TENSOR_WEIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"
#include "tensor/dtype.h"

/* Longest row (cols) of a non-f32 weight (its 8-bit x row may live on the
 * stack when memory runs out). */
#define DG_WEIGHT_MAX_COLS 65536

typedef struct dg_weight {
    dg_dtype dtype;          /* F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q6_K */
    int64_t rows, cols;      /* [out_features, in_features] */
    const void *data;        /* rows one after another, row_bytes each (borrowed) */
    size_t row_bytes;
    const int32_t *row_map;  /* NULL, or [rows]: logical row r is stored row row_map[r] */
    int f32_act;             /* quantized dtypes: 0 = x rows quantized to 8 bits (qdot.h),
                                1 = f32 x rows (fdot.h); F16/BF16/Q5_0/Q5_1 always
                                f32 x rows */
} dg_weight;

/* 1 if products with w quantize the x rows to 8 bits (qdot.h). */
static inline int dg_weight_q8_act(const dg_weight *w)
{
    return dg_dtype_is_quantized(w->dtype) && !w->f32_act;
}

/* 1 if dg_weight_matmul supports dtype t (and cols is a whole number of
 * blocks, cols <= DG_WEIGHT_MAX_COLS for non-f32). */
int dg_weight_supported(dg_dtype t, int64_t cols);

/* Stored bytes of row r. */
static inline const uint8_t *dg_weight_row_data(const dg_weight *w, int64_t r)
{
    return (const uint8_t *)w->data + (size_t)(w->row_map ? w->row_map[r] : r) * w->row_bytes;
}

/* y[M, rows] = x[M, cols] . W^T (row strides ldx, ldy in floats). */
void dg_weight_matmul(const dg_weight *w, int64_t M, const float *x, int64_t ldx, float *y,
                      int64_t ldy);

/* Most weights in one dg_weight_matmul_multi call. */
#define DG_WEIGHT_MAX_MULTI 4

/* ys[i][M, ws[i]->rows] = x[M, cols] . W_i^T for nw (1..DG_WEIGHT_MAX_MULTI)
 * weights of the same cols (q/k/v, gate/up): bitwise what nw dg_weight_matmul
 * calls give (the same quantized x rows and per-row dots), with x quantized
 * once and the weights' row tiles in one parallel loop (a decode step's
 * thread wake-ups and quantizations per layer: 7 -> 4). */
void dg_weight_matmul_multi(const dg_weight *const *ws, int nw, int64_t M, const float *x,
                            int64_t ldx, float *const *ys, const int64_t *ldys);

/* dx[M, cols] (+)= dy[M, rows] . W (accumulate != 0 adds into dx).
 * Errors: DEG_ERR_NOMEM (the 64-row dequantized tile). */
deg_status dg_weight_backward_x(const dg_weight *w, int64_t M, const float *dy, int64_t lddy,
                                float *dx, int64_t lddx, int accumulate);

/* out[cols] = row r as f32 (the dequantized values). */
void dg_weight_get_row(const dg_weight *w, int64_t r, float *out);

/* Bytes the weight's data occupies. */
size_t dg_weight_bytes(const dg_weight *w);

#endif
