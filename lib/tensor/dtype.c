/* Element types: names, block sizes, row bytes and the f16 <-> f32 conversions (dtype.h). */
#include "tensor/dtype.h"

#include <math.h>
#include <string.h>

#include "tensor/tensor.h"

/* Block layouts (ggml docs, ggml-common.h; QK_K = 256):
 *   Q8_0: f16 d; int8 qs[32]                                     34 B / 32
 *   Q4_0: f16 d; uint8 qs[16] (low nibbles = elems 0..15)         18 B / 32
 *   Q4_1: f16 d; f16 m; uint8 qs[16]                              20 B / 32
 *   Q5_0: f16 d; uint32 qh (5th bits); uint8 qs[16]               22 B / 32
 *   Q5_1: f16 d; f16 m; uint32 qh; uint8 qs[16]                   24 B / 32
 *   Q4_K: f16 d; f16 dmin; uint8 scales[12] (6-bit packed); qs[128]  144 B / 256
 *   Q6_K: uint8 ql[128]; uint8 qh[64]; int8 scales[16]; f16 d     210 B / 256 */
static const struct {
    const char *name;
    int64_t block_elems;
    size_t block_bytes;
} dtype_info[DG_DTYPE_COUNT] = {
    [DG_F32] = {"f32", 1, 4},     [DG_F16] = {"f16", 1, 2},     [DG_BF16] = {"bf16", 1, 2},
    [DG_Q8_0] = {"q8_0", 32, 34}, [DG_Q4_0] = {"q4_0", 32, 18}, [DG_Q4_1] = {"q4_1", 32, 20},
    [DG_Q4_K] = {"q4_K", 256, 144}, [DG_Q6_K] = {"q6_K", 256, 210},
    [DG_I8] = {"i8", 1, 1},       [DG_I16] = {"i16", 1, 2},     [DG_I32] = {"i32", 1, 4},
    [DG_I64] = {"i64", 1, 8},     [DG_F64] = {"f64", 1, 8},     [DG_U8] = {"u8", 1, 1},
    [DG_BOOL] = {"bool", 1, 1},   [DG_Q5_0] = {"q5_0", 32, 22}, [DG_Q5_1] = {"q5_1", 32, 24},
};

static int valid(dg_dtype t) { return (unsigned)t < (unsigned)DG_DTYPE_COUNT; }

const char *dg_dtype_name(dg_dtype t) { return valid(t) ? dtype_info[t].name : "?"; }
int64_t dg_dtype_block_elems(dg_dtype t) { return valid(t) ? dtype_info[t].block_elems : 0; }
size_t dg_dtype_block_bytes(dg_dtype t) { return valid(t) ? dtype_info[t].block_bytes : 0; }

int dg_dtype_is_quantized(dg_dtype t)
{
    return t == DG_Q8_0 || t == DG_Q4_0 || t == DG_Q4_1 || t == DG_Q4_K || t == DG_Q6_K;
}

int dg_dtype_is_float(dg_dtype t)
{
    return t == DG_F32 || t == DG_F16 || t == DG_BF16 || t == DG_F64 || t == DG_Q5_0 ||
           t == DG_Q5_1 || dg_dtype_is_quantized(t);
}

size_t dg_dtype_row_bytes(dg_dtype t, int64_t n, int *ok)
{
    int64_t be = dg_dtype_block_elems(t);
    if (!valid(t) || n < 0 || n % be != 0) {
        if (ok) *ok = 0;
        return 0;
    }
    if (ok) *ok = 1;
    return (size_t)(n / be) * dtype_info[t].block_bytes;
}

int64_t dg_tensor_numel(const dg_tensor_view *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->n_dims; i++) n *= t->shape[i];
    return n;
}

/* ---- f16 / bf16 (IEEE 754 binary16; bfloat16 = top half of binary32) ---- */

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float dg_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t mant = h & 0x3FF;
    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24, exact in f32 */
        float v = (float)mant * 0x1p-24f;
        return bits_f32(f32_bits(v) | sign);
    }
    if (exp == 31) return bits_f32(sign | 0x7F800000u | (mant << 13));
    return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t dg_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    x &= 0x7FFFFFFFu;
    if (x > 0x7F800000u) return sign | 0x7E00 | (uint16_t)((x >> 13) & 0x3FF); /* NaN stays NaN */
    /* 65520 (halfway between 65504 and 65536) and above round to infinity */
    if (x >= 0x477FF000u) return sign | 0x7C00;
    if (x < 0x38800000u) {
        /* below 2^-14: subnormal half; v * 2^24 is exact, rint rounds to even */
        float v = bits_f32(x) * 0x1p24f;
        return sign | (uint16_t)rintf(v);
    }
    x += 0xFFFu + ((x >> 13) & 1u); /* round to nearest even; carries into the exponent */
    return sign | (uint16_t)((x >> 13) - (112u << 10));
}

float dg_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t dg_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
