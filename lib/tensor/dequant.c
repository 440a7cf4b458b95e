/* Dequantization to f32. The formulas follow the ggml block definitions
 * (GGUF spec, ggml docs) and are evaluated with the same roundings as gguf-py
 * (gguf.quants): every product/sum is one f32 operation. FMA contraction
 * would change the last bit, so it is switched off for this file. */
#pragma GCC optimize("fp-contract=off")
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <string.h>

#include "base/status.h"
#include "tensor/dtype.h"

static inline uint16_t ld_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static inline float ld_f16(const uint8_t *p) { return dg_f16_to_f32(ld_u16(p)); }

/* Q8_0 block [34 B] -> y[32]: y[i] = qs[i] * d */
static void deq_q8_0(const uint8_t *b, float *y)
{
    float d = ld_f16(b);
    const int8_t *qs = (const int8_t *)(b + 2);
    for (int i = 0; i < 32; i++) y[i] = (float)qs[i] * d;
}

/* Q4_0 block [18 B] -> y[32]: y[j] = d * ((qs[j] & 15) - 8),
 * y[j+16] = d * ((qs[j] >> 4) - 8), j < 16 */
static void deq_q4_0(const uint8_t *b, float *y)
{
    float d = ld_f16(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((int)(qs[j] & 0x0F) - 8);
        y[j + 16] = d * (float)((int)(qs[j] >> 4) - 8);
    }
}

/* Q4_1 block [20 B] -> y[32]: y[j] = d * (qs[j] & 15) + m,
 * y[j+16] = d * (qs[j] >> 4) + m */
static void deq_q4_1(const uint8_t *b, float *y)
{
    float d = ld_f16(b);
    float m = ld_f16(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < 16; j++) {
        float lo = d * (float)(qs[j] & 0x0F);
        float hi = d * (float)(qs[j] >> 4);
        y[j] = lo + m;
        y[j + 16] = hi + m;
    }
}

/* Q5_0 / Q5_1 block [22 / 24 B] -> y[32] (gguf-py's Q5_0 / Q5_1): q_j =
 * (qs[j] & 15) | (bit j of qh) << 4, q_{j+16} = (qs[j] >> 4) | (bit j + 16 of
 * qh) << 4 (qh little-endian), j < 16; Q5_0 y = d * (q - 16), Q5_1
 * y = (d * q) + m. */
static void deq_q5(const uint8_t *b, float *y, int has_min)
{
    float d = ld_f16(b);
    float m = has_min ? ld_f16(b + 2) : 0.0f;
    const uint8_t *p = b + (has_min ? 4 : 2), *qs = p + 4;
    uint32_t qh = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                  (uint32_t)p[3] << 24;
    for (int j = 0; j < 16; j++) {
        int lo = (qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4;
        int hi = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
        if (has_min) {
            y[j] = d * (float)lo + m;
            y[j + 16] = d * (float)hi + m;
        } else {
            y[j] = d * (float)(lo - 16);
            y[j + 16] = d * (float)(hi - 16);
        }
    }
}

/* Q4_K super-block [144 B] -> y[256]: 8 sub-blocks of 32 with 6-bit scale sc
 * and min mn packed in scales[12] (dg_q4k_scale_min).
 * qs holds 4 chunks of 32 bytes; chunk c: low nibbles -> sub-block 2c, high
 * nibbles -> sub-block 2c+1. y = (d*sc) * q - (dmin*mn). */
static void deq_q4_k(const uint8_t *b, float *y)
{
    float d = ld_f16(b);
    float dmin = ld_f16(b + 2);
    const uint8_t *s = b + 4;
    const uint8_t *qs = b + 16;
    for (int c = 0; c < 4; c++) {
        for (int h = 0; h < 2; h++) {
            int j = 2 * c + h;
            int sc, mn;
            dg_q4k_scale_min(s, j, &sc, &mn);
            float dl = d * (float)sc;
            float ml = dmin * (float)mn;
            float *yy = y + 32 * j;
            const uint8_t *q = qs + 32 * c;
            for (int l = 0; l < 32; l++) {
                float t = dl * (float)(h ? (q[l] >> 4) : (q[l] & 0x0F));
                yy[l] = t - ml;
            }
        }
    }
}

/* Q6_K super-block [210 B] -> y[256]: two halves of 128; in half n:
 *   q(l + 32k) = (4 low bits of ql[64n + l + 32(k&1)] (k<2: low nibble,
 *                 k>=2: high nibble)) | (((qh[32n + l] >> 2k) & 3) << 4),
 *   minus 32; l < 32, k < 4.
 *   y = (d * scales[16-element group]) * q */
static void deq_q6_k(const uint8_t *b, float *y)
{
    const uint8_t *ql = b;
    const uint8_t *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    float d = ld_f16(b + 208);
    for (int n = 0; n < 2; n++) {
        for (int k = 0; k < 4; k++) {
            for (int l = 0; l < 32; l++) {
                int e = 128 * n + 32 * k + l;
                uint8_t lb = ql[64 * n + l + 32 * (k & 1)];
                int lo = (k < 2) ? (lb & 0x0F) : (lb >> 4);
                int hi = (qh[32 * n + l] >> (2 * k)) & 3;
                int q = (lo | (hi << 4)) - 32;
                float ds = d * (float)sc[e / 16];
                y[e] = ds * (float)q;
            }
        }
    }
}

deg_status dg_dequantize(dg_dtype t, const void *src, float *dst, int64_t n)
{
    const uint8_t *s = src;
    int64_t be = dg_dtype_block_elems(t);
    if (be == 0) return dg_fail(DEG_ERR_ARG, "dequantize: unknown dtype %d", (int)t);
    if (n < 0 || n % be != 0)
        return dg_fail(DEG_ERR_ARG, "dequantize %s: %lld elements is not a multiple of the block size %lld",
                       dg_dtype_name(t), (long long)n, (long long)be);
    size_t bb = dg_dtype_block_bytes(t);
    int64_t nb = n / be;
    switch (t) {
    case DG_F32:
        memcpy(dst, src, (size_t)n * 4);
        return DEG_OK;
    case DG_F16:
        for (int64_t i = 0; i < n; i++) dst[i] = dg_f16_to_f32(ld_u16(s + 2 * i));
        return DEG_OK;
    case DG_BF16:
        for (int64_t i = 0; i < n; i++) dst[i] = dg_bf16_to_f32(ld_u16(s + 2 * i));
        return DEG_OK;
    case DG_F64:
        for (int64_t i = 0; i < n; i++) {
            double v;
            memcpy(&v, s + 8 * i, 8);
            dst[i] = (float)v;
        }
        return DEG_OK;
    case DG_Q8_0:
        for (int64_t i = 0; i < nb; i++) deq_q8_0(s + i * bb, dst + i * be);
        return DEG_OK;
    case DG_Q4_0:
        for (int64_t i = 0; i < nb; i++) deq_q4_0(s + i * bb, dst + i * be);
        return DEG_OK;
    case DG_Q4_1:
        for (int64_t i = 0; i < nb; i++) deq_q4_1(s + i * bb, dst + i * be);
        return DEG_OK;
    case DG_Q5_0:
    case DG_Q5_1:
        for (int64_t i = 0; i < nb; i++) deq_q5(s + i * bb, dst + i * be, t == DG_Q5_1);
        return DEG_OK;
    case DG_Q4_K:
        for (int64_t i = 0; i < nb; i++) deq_q4_k(s + i * bb, dst + i * be);
        return DEG_OK;
    case DG_Q6_K:
        for (int64_t i = 0; i < nb; i++) deq_q6_k(s + i * bb, dst + i * be);
        return DEG_OK;
    default:
        return dg_fail(DEG_ERR_UNSUPPORTED, "dequantize: %s is not a floating-point type",
                       dg_dtype_name(t));
    }
}
