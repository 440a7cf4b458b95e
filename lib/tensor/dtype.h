/* Element types of weights and activations, and the block layouts of the
 * quantized ones (GGUF spec / ggml: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 blocks of
 * 32; Q4_K and Q6_K super-blocks of 256). */
#ifndef DG_TENSOR_DTYPE_H
#define DG_TENSOR_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"

typedef enum dg_dtype {
    DG_F32 = 0,
    DG_F16,
    DG_BF16,
    DG_Q8_0,
    DG_Q4_0,
    DG_Q4_1,
    DG_Q4_K,
    DG_Q6_K,
    DG_I8,
    DG_I16,
    DG_I32,
    DG_I64,
    DG_F64,
    DG_U8,      /* safetensors U8 */
    DG_BOOL,    /* safetensors BOOL: one byte, 0 or 1 */
    DG_Q5_0,    /* the 5-bit formats llama.cpp's K-quant mixes fall back to on rows */
    DG_Q5_1,    /* whose length is not a multiple of 256 (e.g. SmolLM2's 576) */
    DG_DTYPE_COUNT
} dg_dtype;

/* Static name ("f32", "q4_1", ...); "?" for values outside the enum. */
const char *dg_dtype_name(dg_dtype t);
/* 1 for F32, F16, BF16, F64 and the quantized types (dg_dequantize works). */
int dg_dtype_is_float(dg_dtype t);
/* 1 for Q8_0, Q4_0, Q4_1, Q4_K, Q6_K: the dtypes with 8-bit-activation
 * integer kernels (qdot.h). Q5_0 / Q5_1 are block formats without them:
 * their products always take f32 activations (fdot.h), like F16/BF16. */
int dg_dtype_is_quantized(dg_dtype t);
/* Elements per block (1 for plain types). */
int64_t dg_dtype_block_elems(dg_dtype t);
/* Bytes per block (element size for plain types). */
size_t dg_dtype_block_bytes(dg_dtype t);
/* Bytes of a row of n elements; DEG_ERR_FORMAT via *ok=0 if n is not a
 * multiple of the block size. */
size_t dg_dtype_row_bytes(dg_dtype t, int64_t n, int *ok);

/* Dequantize n elements (n a multiple of the block size) of type t at src
 * into f32 dst. F32/F16/BF16 convert exactly; F64 rounds to nearest f32.
 * src needs no alignment. The quantized formulas are those of ggml (and
 * gguf-py's gguf.quants), evaluated in the same order with the same f32
 * roundings and no FMA contraction, so results are bit-identical to gguf-py
 * (tests/c/test_dequant.c). Errors: DEG_ERR_UNSUPPORTED for integer types,
 * DEG_ERR_ARG if n is negative or not a multiple of the block size. */
deg_status dg_dequantize(dg_dtype t, const void *src, float *dst, int64_t n);

/* Q4_K: the 6-bit scale and min of sub-block j (0..7) from the packed
 * scales[12] (ggml get_scale_min_k4):
 *   j < 4:  sc = s[j] & 63,  mn = s[j+4] & 63
 *   j >= 4: sc = (s[j+4] & 15) | ((s[j-4] >> 6) << 4),
 *           mn = (s[j+4] >> 4) | ((s[j] >> 6) << 4) */
static inline void dg_q4k_scale_min(const uint8_t *s, int j, int *sc, int *mn)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

float dg_f16_to_f32(uint16_t h);
uint16_t dg_f32_to_f16(float f);   /* round to nearest even */
float dg_bf16_to_f32(uint16_t h);
uint16_t dg_f32_to_bf16(float f);  /* round to nearest even; NaN stays NaN */

#endif
