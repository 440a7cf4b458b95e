/* Quantized-weight x 8-bit-activation dot products: the portable scalar
 * kernel and the AVX2 / AVX-512 VNNI ones, bitwise equal (see qdot.h). */
#pragma GCC optimize("fp-contract=off")
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include "tensor/qdot.h"

#include <math.h>
#include <pthread.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "tensor/qdot_simd.h"

static inline float ld_f16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return dg_f16_to_f32(v);
}

/* Block b of r from its 32 floats xb: the reference expressions (qdot.h). */
static void q8_block_scalar(const float *xb, const dg_q8_row *r, int64_t b)
{
    float amax = 0.0f;
    for (int i = 0; i < DG_QK; i++) {
        float a = fabsf(xb[i]);
        if (a > amax) amax = a;
    }
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int32_t s = 0;
    for (int i = 0; i < DG_QK; i++) {
        float v = nearbyintf(xb[i] * id);
        /* NaN (a NaN activation, or 0 * inf when x holds an infinity or
         * 1 / d overflows) quantizes to 0: (int)NaN is undefined in C. */
        int q = v != v ? 0 : v > 127.0f ? 127 : v < -127.0f ? -127 : (int)v;
        r->q[b * DG_QK + i] = (int8_t)q;
        s += q;
    }
    r->d[b] = d;
    r->s[b] = s;
}

#ifdef DG_QDOT_X86
/* q8_block_scalar with AVX2, the same operations lane by lane: |x| max (exact
 * in any order), the same scalar d and id, x * id rounded to nearest-even
 * (nearbyintf in the default rounding mode), clamped to +-127, the exact
 * integer sum. A block holding a NaN or an infinity, or whose 1 / d
 * overflows (a denormal max), goes to the scalar code (its float-to-int
 * conversions of NaN there are the reference's): returns 0. */
__attribute__((target(DG_TARGET_AVX2))) static int q8_block_avx2(const float *xb,
                                                                 const dg_q8_row *r, int64_t b)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4], mx = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_loadu_ps(xb + 8 * k);
        __m256 a = _mm256_andnot_ps(sign, v[k]);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, _mm256_set1_ps(INFINITY), _CMP_NLT_UQ));
        mx = _mm256_max_ps(mx, a);
    }
    if (_mm256_movemask_ps(bad)) return 0;
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
    float amax = _mm_cvtss_f32(h);
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    if (!(id <= 3.4028235e38f)) return 0; /* 1 / a denormal d: inf, and -0 * inf is NaN */
    const __m256 idv = _mm256_set1_ps(id), hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f);
    __m256i qi[4], sum = _mm256_setzero_si256();
    for (int k = 0; k < 4; k++) {
        __m256 t = _mm256_round_ps(_mm256_mul_ps(v[k], idv),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        qi[k] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(t, lo), hi));
        sum = _mm256_add_epi32(sum, qi[k]);
    }
    /* packs: 32-bit units [k0 0-3, k1 0-3, k2 0-3, k3 0-3, k0 4-7, ...] -> element order */
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]),
                                   _mm256_packs_epi32(qi[2], qi[3]));
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)(r->q + b * DG_QK), p);
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    r->d[b] = d;
    r->s[b] = _mm_cvtsi128_si32(s4);
    return 1;
}
#endif

void dg_q8_quantize_scalar(const float *x, const dg_q8_row *r)
{
    for (int64_t b = 0; b < r->nb; b++) q8_block_scalar(x + b * DG_QK, r, b);
}

void dg_q8_quantize(const float *x, const dg_q8_row *r)
{
#ifdef DG_QDOT_X86
    if (dg_qdot_level() != DG_QK_SCALAR) {
        for (int64_t b = 0; b < r->nb; b++)
            if (!q8_block_avx2(x + b * DG_QK, r, b)) q8_block_scalar(x + b * DG_QK, r, b);
        return;
    }
#endif
    dg_q8_quantize_scalar(x, r);
}

/* ---- the portable kernel ------------------------------------------------- */

static int32_t isum_q8(const int8_t *w, const int8_t *x)
{
    int32_t s = 0;
    for (int i = 0; i < 32; i++) s += (int32_t)w[i] * x[i];
    return s;
}

/* qs[16]: element j = low nibble of qs[j], element j + 16 = high nibble. */
static int32_t isum_q4(const uint8_t *qs, const int8_t *x, int offset)
{
    int32_t s = 0;
    for (int j = 0; j < 16; j++)
        s += ((int32_t)(qs[j] & 15) - offset) * x[j] + ((int32_t)(qs[j] >> 4) - offset) * x[j + 16];
    return s;
}

/* Contribution of 32-element block b of weight row w (qdot.h). */
static float block_c(dg_dtype t, const uint8_t *w, int64_t b, const dg_q8_row *x)
{
    const int8_t *xq = x->q + b * DG_QK;
    float d = x->d[b];
    switch (t) {
    case DG_Q8_0: {
        const uint8_t *blk = w + b * 34;
        return (ld_f16(blk) * d) * (float)isum_q8((const int8_t *)(blk + 2), xq);
    }
    case DG_Q4_0: {
        const uint8_t *blk = w + b * 18;
        return (ld_f16(blk) * d) * (float)isum_q4(blk + 2, xq, 8);
    }
    case DG_Q4_1: {
        const uint8_t *blk = w + b * 20;
        float t1 = (ld_f16(blk) * d) * (float)isum_q4(blk + 4, xq, 0);
        float t2 = (ld_f16(blk + 2) * d) * (float)x->s[b];
        return t1 + t2;
    }
    case DG_Q4_K: {
        const uint8_t *blk = w + (b / 8) * 144, *q = blk + 16 + 32 * ((b % 8) / 2);
        int j = (int)(b % 8), h = j & 1, sc, mn;
        dg_q4k_scale_min(blk + 4, j, &sc, &mn);
        int32_t s = 0;
        for (int l = 0; l < 32; l++) s += (int32_t)(h ? q[l] >> 4 : q[l] & 15) * xq[l];
        float t1 = (ld_f16(blk) * d) * (float)(sc * s);
        float t2 = (ld_f16(blk + 2) * d) * (float)(mn * x->s[b]);
        return t1 - t2;
    }
    case DG_Q6_K: {
        const uint8_t *blk = w + (b / 8) * 210;
        const uint8_t *ql = blk, *qh = blk + 128;
        const int8_t *sc = (const int8_t *)(blk + 192);
        int j = (int)(b % 8), n = j / 4, k = j % 4;
        int32_t s[2] = {0, 0};
        for (int l = 0; l < 32; l++) {
            uint8_t lb = ql[64 * n + l + 32 * (k & 1)];
            int lo = k < 2 ? (lb & 15) : (lb >> 4), hi = (qh[32 * n + l] >> (2 * k)) & 3;
            s[l >= 16] += ((lo | (hi << 4)) - 32) * xq[l];
        }
        int32_t is = sc[8 * n + 2 * k] * s[0] + sc[8 * n + 2 * k + 1] * s[1];
        return (ld_f16(blk + 208) * d) * (float)is;
    }
    default:
        return NAN;
    }
}

static float qdot_from(dg_dtype t, const uint8_t *w, const dg_q8_row *x, float acc[8],
                       int64_t b0)
{
    for (int64_t b = b0; b < x->nb; b++) acc[b & 7] += block_c(t, w, b, x);
    return dg_qdot_finish(acc);
}

float dg_qdot_scalar(dg_dtype t, const uint8_t *w, const dg_q8_row *x)
{
    float acc[8] = {0};
    return qdot_from(t, w, x, acc, 0);
}

/* ---- AVX2 / AVX-512 VNNI: eight blocks at a time -------------------------- */

#ifdef DG_QDOT_X86
/* The 8 f16 values at p, p + stride, ... as f32. */
#define DG_F16X8(p, stride)                                                             \
    _mm256_cvtph_ps(_mm_setr_epi16(                                                     \
        (short)dg_ld_u16(p), (short)dg_ld_u16(p + stride),                              \
        (short)dg_ld_u16(p + 2 * stride), (short)dg_ld_u16(p + 3 * stride),             \
        (short)dg_ld_u16(p + 4 * stride), (short)dg_ld_u16(p + 5 * stride),             \
        (short)dg_ld_u16(p + 6 * stride), (short)dg_ld_u16(p + 7 * stride)))

/* Eight blocks g..g+7 of the row into acc (lane i: block g + i).
 * DOT(u, s) is the int32x8 of 4-byte group sums of unsigned u times signed s;
 * WV(bi) the block's weights as 32 bytes (unsigned nibbles, or Q8_0's |w|
 * with its signs moved onto x: DG_QX). */
#define DG_Q4V(bi)                                                                         \
    _mm256_set_m128i(                                                                     \
        _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)((bi) + qoff)), 4), m4), \
        _mm_and_si128(_mm_loadu_si128((const __m128i *)((bi) + qoff)), m4))
#define DG_BLOCK_DOT(DOT, bi, xv)                                                          \
    (t == DG_Q8_0 ? DOT(_mm256_abs_epi8(_mm256_loadu_si256((const __m256i *)((bi) + 2))),  \
                        _mm256_sign_epi8(xv, _mm256_loadu_si256((const __m256i *)((bi) + 2)))) \
                  : DOT(DG_Q4V(bi), xv))

/* One kernel body per instruction set (Q8_0, Q4_0, Q4_1): eight blocks per
 * step; a row's last nb mod 8 blocks (SmolLM2's 576-wide rows end in 2) get
 * their integer sums from the same DOT and the scalar kernel's f32
 * expression (block_c's), so every c_b and acc[b mod 8] += c_b is the
 * scalar kernel's. */
#define DG_QDOT_SIMD(NAME, TARGET, DOT)                                                   \
    __attribute__((target(TARGET))) static float NAME(dg_dtype t, const uint8_t *w,       \
                                                      const dg_q8_row *x)                 \
    {                                                                                     \
        size_t bb = t == DG_Q8_0 ? 34 : t == DG_Q4_0 ? 18 : 20;                           \
        int qoff = t == DG_Q4_1 ? 4 : 2;                                                  \
        const __m128i m4 = _mm_set1_epi8(15);                                             \
        __m256 acc = _mm256_setzero_ps();                                                 \
        int64_t g = 0;                                                                    \
        for (; g + 8 <= x->nb; g += 8) {                                                  \
            __m256i p[8];                                                                 \
            const uint8_t *blk = w + g * bb;                                              \
            for (int i = 0; i < 8; i++) {                                                 \
                __m256i xv = _mm256_loadu_si256((const __m256i *)(x->q + (g + i) * 32));  \
                p[i] = DG_BLOCK_DOT(DOT, blk + i * bb, xv);                               \
            }                                                                             \
            __m256i is;                                                                   \
            DG_HSUM8(p, is);                                                              \
            __m256i xs = _mm256_loadu_si256((const __m256i *)(x->s + g));                 \
            if (t == DG_Q4_0) is = _mm256_sub_epi32(is, _mm256_slli_epi32(xs, 3));        \
            __m256 dx = _mm256_loadu_ps(x->d + g);                                        \
            __m256 c = _mm256_mul_ps(_mm256_mul_ps(DG_F16X8(blk, bb), dx),                \
                                     _mm256_cvtepi32_ps(is));                             \
            if (t == DG_Q4_1)                                                             \
                c = _mm256_add_ps(c, _mm256_mul_ps(_mm256_mul_ps(DG_F16X8(blk + 2, bb), dx), \
                                                   _mm256_cvtepi32_ps(xs)));              \
            acc = _mm256_add_ps(acc, c);                                                  \
        }                                                                                 \
        float a[8];                                                                       \
        _mm256_storeu_ps(a, acc);                                                         \
        for (int64_t b = g; b < x->nb; b++) {                                             \
            const uint8_t *bi = w + b * bb;                                               \
            __m256i xv = _mm256_loadu_si256((const __m256i *)(x->q + b * 32));            \
            __m256i v = DG_BLOCK_DOT(DOT, bi, xv);                                        \
            __m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)); \
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));                              \
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));                              \
            int32_t isum = _mm_cvtsi128_si32(h) - (t == DG_Q4_0 ? 8 * x->s[b] : 0);       \
            float c = (_cvtsh_ss(dg_ld_u16(bi)) * x->d[b]) * (float)isum;                 \
            if (t == DG_Q4_1)                                                             \
                c = c + (_cvtsh_ss(dg_ld_u16(bi + 2)) * x->d[b]) * (float)x->s[b];        \
            a[b & 7] += c;                                                                \
        }                                                                                 \
        return dg_qdot_finish(a);                                                         \
    }

/* The K-quants, one 256-element super-block (8 blocks of 32, lanes j = b mod 8)
 * per step: the integer sums are the scalar kernel's (integer arithmetic is
 * exact in any order), then the same f32 operations lane by lane.
 *  Q4_K: lane j = block j's isum (low nibbles of bytes 32 (j / 2).. for even
 *        j, high for odd), times its 6-bit scale sc_j and min mn_j (unpacked
 *        from the 12 scale bytes with ggml's masks, exactly dg_q4k_scale_min).
 *  Q6_K: the 6-bit values w in [0, 63] (w - 32 is the weight): DOT(w, x) -
 *        DOT(32, x) per 4 elements; the first four int32 lanes cover the
 *        block's elements 0..15 (scale s0), the last four 16..31 (s1), so a
 *        lane-wise multiply by (s0 x4, s1 x4) and the horizontal sum give
 *        s0 * isum0 + s1 * isum1. */
#define DG_QDOTK_SIMD(NAME, TARGET, DOT)                                                  \
    __attribute__((target(TARGET))) static float NAME(dg_dtype t, const uint8_t *w,       \
                                                      const dg_q8_row *x)                 \
    {                                                                                     \
        const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3);                \
        const __m256i k32 = _mm256_set1_epi8(32);                                         \
        __m256 acc = _mm256_setzero_ps();                                                 \
        int64_t g = 0;                                                                    \
        for (; g + 8 <= x->nb; g += 8) {                                                  \
            __m256i p[8];                                                                 \
            const int8_t *xq = x->q + g * 32;                                             \
            __m256 dx = _mm256_loadu_ps(x->d + g), c;                                     \
            if (t == DG_Q4_K) {                                                           \
                const uint8_t *blk = w + (g / 8) * 144;                                   \
                for (int i = 0; i < 4; i++) {                                             \
                    __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * i)); \
                    __m256i x0 = _mm256_loadu_si256((const __m256i *)(xq + 64 * i));      \
                    __m256i x1 = _mm256_loadu_si256((const __m256i *)(xq + 64 * i + 32)); \
                    p[2 * i] = DOT(_mm256_and_si256(v, m4), x0);                          \
                    p[2 * i + 1] = DOT(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), x1);\
                }                                                                         \
                __m256i is;                                                               \
                DG_HSUM8(p, is);                                                          \
                uint32_t u[4];                                                            \
                memcpy(u, blk + 4, 12);                                                   \
                u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);  \
                uint32_t mlo = u[1] & 0x3f3f3f3fu;                                        \
                u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);         \
                u[2] = mlo;                                                               \
                u[0] &= 0x3f3f3f3fu;                                                      \
                __m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)u));   \
                __m256i mn = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(u + 2))); \
                __m256i xs = _mm256_loadu_si256((const __m256i *)(x->s + g));             \
                __m256 t1 = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(ld_f16(blk)), dx),  \
                                          _mm256_cvtepi32_ps(_mm256_mullo_epi32(sc, is))); \
                __m256 t2 = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(ld_f16(blk + 2)), dx), \
                                          _mm256_cvtepi32_ps(_mm256_mullo_epi32(mn, xs))); \
                c = _mm256_sub_ps(t1, t2);                                                \
            } else {                                                                      \
                const uint8_t *blk = w + (g / 8) * 210, *qh = blk + 128;                  \
                const int8_t *scs = (const int8_t *)(blk + 192);                          \
                for (int n = 0; n < 2; n++) {                                             \
                    __m256i l0 = _mm256_loadu_si256((const __m256i *)(blk + 64 * n));     \
                    __m256i l1 = _mm256_loadu_si256((const __m256i *)(blk + 64 * n + 32)); \
                    __m256i h = _mm256_loadu_si256((const __m256i *)(qh + 32 * n));       \
                    for (int k = 0; k < 4; k++) {                                         \
                        __m256i lb = k & 1 ? l1 : l0;                                     \
                        __m256i lo = _mm256_and_si256(k < 2 ? lb : _mm256_srli_epi16(lb, 4), m4); \
                        __m256i hi = _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(2 * k)), m3); \
                        __m256i w6 = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));       \
                        __m256i xv = _mm256_loadu_si256((const __m256i *)(xq + 32 * (4 * n + k))); \
                        __m256i d4 = _mm256_sub_epi32(DOT(w6, xv), DOT(k32, xv));         \
                        __m256i s2 = _mm256_set_m128i(_mm_set1_epi32(scs[8 * n + 2 * k + 1]), \
                                                      _mm_set1_epi32(scs[8 * n + 2 * k])); \
                        p[4 * n + k] = _mm256_mullo_epi32(d4, s2);                        \
                    }                                                                     \
                }                                                                         \
                __m256i is;                                                               \
                DG_HSUM8(p, is);                                                          \
                c = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(ld_f16(blk + 208)), dx),    \
                                  _mm256_cvtepi32_ps(is));                                \
            }                                                                             \
            acc = _mm256_add_ps(acc, c);                                                  \
        }                                                                                 \
        float a[8];                                                                       \
        _mm256_storeu_ps(a, acc);                                                         \
        return qdot_from(t, w, x, a, g);                                                  \
    }

DG_QDOT_SIMD(qdot_avx2, DG_TARGET_AVX2, DG_DOT_AVX2)
DG_QDOT_SIMD(qdot_vnni, DG_TARGET_VNNI, DG_DOT_VNNI)
DG_QDOTK_SIMD(qdotk_avx2, DG_TARGET_AVX2, DG_DOT_AVX2)
DG_QDOTK_SIMD(qdotk_vnni, DG_TARGET_VNNI, DG_DOT_VNNI)
#endif

/* ---- choice ----------------------------------------------------------------- */

enum { K_SCALAR = DG_QK_SCALAR, K_AVX2 = DG_QK_AVX2, K_VNNI = DG_QK_VNNI };
static int g_kernel = K_SCALAR;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#ifdef DG_QDOT_X86
/* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports has no
 * "f16c" feature string (clang 14 rejects it), GCC's has; cpuid.h works for both. */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

static void choose(void)
{
    int best = K_SCALAR;
#ifdef DG_QDOT_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && has_f16c()) best = K_AVX2;
    if (best == K_AVX2 && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512vnni"))
        best = K_VNNI;
#endif
    const char *e = getenv("DEG_QKERNEL");
    int want = best;
    if (e && !strcmp(e, "scalar")) want = K_SCALAR;
    else if (e && !strcmp(e, "avx2")) want = K_AVX2;
    g_kernel = want < best ? want : best;
}

const char *dg_qdot_kernel(void)
{
    pthread_once(&g_once, choose);
    return g_kernel == K_VNNI ? "avx512vnni" : g_kernel == K_AVX2 ? "avx2" : "scalar";
}

int dg_qdot_level(void)
{
    pthread_once(&g_once, choose);
    return g_kernel;
}

float dg_qdot(dg_dtype t, const uint8_t *w, const dg_q8_row *x)
{
    pthread_once(&g_once, choose);
#ifdef DG_QDOT_X86
    if (t == DG_Q8_0 || t == DG_Q4_0 || t == DG_Q4_1) {
        if (g_kernel == K_VNNI) return qdot_vnni(t, w, x);
        if (g_kernel == K_AVX2) return qdot_avx2(t, w, x);
    }
    if (t == DG_Q4_K || t == DG_Q6_K) {
        if (g_kernel == K_VNNI) return qdotk_vnni(t, w, x);
        if (g_kernel == K_AVX2) return qdotk_avx2(t, w, x);
    }
#endif
    return dg_qdot_scalar(t, w, x);
}
