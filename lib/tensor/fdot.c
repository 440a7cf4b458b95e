/* Typed weight rows times f32 activation rows (see fdot.h): the scalar
 * reference, the AVX2 row dequantization and the register-blocked tiles. */
#pragma GCC optimize("fp-contract=off")
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include "tensor/fdot.h"

#include "tensor/qdot_simd.h"

#define PANEL_ROWS 16 /* most weight rows dequantized into the scratch at a time */
#define L1_ROWS 8      /* of those, rows dotted with a block of x rows at a time (their
                          dequantized copies stay in a 32 KiB L1; 4 past 1024 columns) */
#define X_BLOCK (192 * 1024) /* bytes of x rows per pass over the panel: they stay in L2 */
#define CHUNK 256      /* elements the reference dequantizes at a time */

/* acc[i mod 8] += w_i x_i for i in [i0, K), then the fixed final sum. */
static float dot_from(const float *w, const float *x, int64_t K, float acc[8], int64_t i0)
{
    for (int64_t i = i0; i < K; i++) acc[i & 7] += w[i] * x[i];
    return dg_qdot_finish(acc);
}

float dg_fdot_scalar(dg_dtype t, const uint8_t *w, const float *x, int64_t K)
{
    float acc[8] = {0}, buf[CHUNK];
    int64_t be = dg_dtype_block_elems(t);
    size_t bb = dg_dtype_block_bytes(t);
    for (int64_t i = 0; i < K; i += CHUNK) {
        int64_t n = K - i < CHUNK ? K - i : CHUNK;
        (void)dg_dequantize(t, w + (size_t)(i / be) * bb, buf, n);
        for (int64_t j = 0; j < n; j++) acc[(i + j) & 7] += buf[j] * x[i + j];
    }
    return dg_qdot_finish(acc);
}

/* Rows dotted with a block of x rows at a time (l1), x rows per block
 * (mblk), weight rows dequantized at a time (the panel; returned): each
 * panel is dequantized once for all M x rows. With one x block (M <= mblk:
 * decode, batched decode, short prefills) a panel is the l1 rows alone,
 * still in L1 from their dequantization (and the scratch stays small). */
static int64_t fdot_blocking(int64_t K, int64_t M, int64_t *l1, int64_t *mblk)
{
    *l1 = K <= 1024 ? L1_ROWS : L1_ROWS / 2;
    *mblk = X_BLOCK / (int64_t)sizeof(float) / K & ~(int64_t)3;
    if (*mblk < 4) *mblk = 4;
    return M > *mblk ? PANEL_ROWS : *l1;
}

size_t dg_fdot_scratch(int64_t K, int64_t M)
{
    int64_t l1, mblk;
    return (size_t)fdot_blocking(K, M, &l1, &mblk) * (size_t)K;
}

#ifdef DG_QDOT_X86
/* Eight bytes (unsigned or signed) at lane 0.. of v as f32. */
#define U8F(v) _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v))
#define S8F(v) _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v))

/* The 32 bits of a Q5 block's qh (little-endian) as 32 bytes: byte i is
 * 0x10 if bit i is set, else 0 (element i's fifth bit, in place). */
__attribute__((target(DG_TARGET_AVX2))) static inline __m256i q5_high(const uint8_t *qh)
{
    uint32_t h;
    memcpy(&h, qh, 4);
    const __m256i idx = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                         2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64,
                                         -128, 1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32,
                                         64, -128);
    __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)h), idx), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(0x10));
}

/* One 32-element block of Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 as four vectors
 * of eight (elements 0..7, ..., 24..31), dequant.c's expressions lane by
 * lane: Q8_0 q * d; Q4_0 d * (q - 8); Q5_0 d * (q - 16); Q4_1 / Q5_1
 * (d * q) + m (the Q5 q: the nibble | the qh bit << 4). */
__attribute__((target(DG_TARGET_AVX2))) static inline void deq_block(dg_dtype t,
                                                                     const uint8_t *blk,
                                                                     __m256 v[4])
{
    const __m128i m4 = _mm_set1_epi8(15);
    __m256 d = _mm256_set1_ps(_cvtsh_ss(dg_ld_u16(blk)));
    if (t == DG_Q8_0) {
        for (int k = 0; k < 4; k++)
            v[k] = _mm256_mul_ps(S8F(_mm_loadl_epi64((const __m128i *)(blk + 2 + 8 * k))), d);
        return;
    }
    int q5 = t == DG_Q5_0 || t == DG_Q5_1, has_m = t == DG_Q4_1 || t == DG_Q5_1;
    __m128i qs = _mm_loadu_si128((const __m128i *)(blk + 2 + 2 * has_m + 4 * q5));
    __m128i lo = _mm_and_si128(qs, m4), hi = _mm_and_si128(_mm_srli_epi16(qs, 4), m4);
    if (q5) {
        __m256i h = q5_high(blk + 2 + 2 * has_m);
        lo = _mm_or_si128(lo, _mm256_castsi256_si128(h));
        hi = _mm_or_si128(hi, _mm256_extracti128_si256(h, 1));
    }
    if (!has_m) {
        __m128i k = _mm_set1_epi8(q5 ? 16 : 8);
        lo = _mm_sub_epi8(lo, k), hi = _mm_sub_epi8(hi, k);
        v[0] = _mm256_mul_ps(d, S8F(lo)), v[1] = _mm256_mul_ps(d, S8F(_mm_srli_si128(lo, 8)));
        v[2] = _mm256_mul_ps(d, S8F(hi)), v[3] = _mm256_mul_ps(d, S8F(_mm_srli_si128(hi, 8)));
        return;
    }
    __m256 m = _mm256_set1_ps(_cvtsh_ss(dg_ld_u16(blk + 2)));
    v[0] = _mm256_add_ps(_mm256_mul_ps(d, U8F(lo)), m);
    v[1] = _mm256_add_ps(_mm256_mul_ps(d, U8F(_mm_srli_si128(lo, 8))), m);
    v[2] = _mm256_add_ps(_mm256_mul_ps(d, U8F(hi)), m);
    v[3] = _mm256_add_ps(_mm256_mul_ps(d, U8F(_mm_srli_si128(hi, 8))), m);
}

static inline size_t block_bytes32(dg_dtype t)
{
    return t == DG_Q8_0 ? 34 : t == DG_Q4_0 ? 18 : t == DG_Q4_1 ? 20 : t == DG_Q5_0 ? 22 : 24;
}

/* 32 bytes of q values (element l of a sub-block at byte l) times scale
 * sc0 (elements 0..15) / sc1 (16..31), minus mn (Q4_K) -> v[4] (elements
 * 0..7, ..., 24..31); signed: the bytes are int8. */
__attribute__((target(DG_TARGET_AVX2))) static inline void deq32(__m256i q, int sgn, __m256 sc0,
                                                                 __m256 sc1, const __m256 *mn,
                                                                 __m256 v[4])
{
    __m128i h[2] = {_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)};
    for (int k = 0; k < 4; k++) {
        __m128i b = k & 1 ? _mm_srli_si128(h[k / 2], 8) : h[k / 2];
        __m256 f = sgn ? S8F(b) : U8F(b);
        __m256 x = _mm256_mul_ps(k < 2 ? sc0 : sc1, f);
        v[k] = mn ? _mm256_sub_ps(x, *mn) : x;
    }
}

/* Elements 32 j .. 32 j + 31 (j in 0..7) of a Q4_K / Q6_K super-block b as
 * v[4], dequant.c's expressions lane by lane: Q4_K (d * sc) * q - (dmin *
 * mn) per sub-block of 32 (sub-block j: nibble j & 1 of the bytes 32 (j / 2)
 * ..); Q6_K (d * s) * q per group of 16 (the q - 32 exact in int8; chunk j
 * = 4 n + k: low nibbles of 64 n + 32 (k & 1) .., shifted by 4 for k >= 2,
 * 2-bit high parts 2 k of qh 32 n ..). */
__attribute__((target(DG_TARGET_AVX2))) static inline void deq_k_chunk(dg_dtype t,
                                                                       const uint8_t *b, int j,
                                                                       __m256 v[4])
{
    const __m256i m4 = _mm256_set1_epi8(15);
    if (t == DG_Q4_K) {
        float d = _cvtsh_ss(dg_ld_u16(b)), dmin = _cvtsh_ss(dg_ld_u16(b + 2));
        int sc, mn;
        dg_q4k_scale_min(b + 4, j, &sc, &mn);
        __m256 dl = _mm256_set1_ps(d * (float)sc), ml = _mm256_set1_ps(dmin * (float)mn);
        __m256i q = _mm256_loadu_si256((const __m256i *)(b + 16 + 32 * (j >> 1)));
        deq32(_mm256_and_si256(j & 1 ? _mm256_srli_epi16(q, 4) : q, m4), 0, dl, dl, &ml, v);
        return;
    }
    int n = j >> 2, k = j & 3;
    const int8_t *sc = (const int8_t *)(b + 192);
    float d = _cvtsh_ss(dg_ld_u16(b + 208));
    __m256i h = _mm256_loadu_si256((const __m256i *)(b + 128 + 32 * n));
    __m256i lb = _mm256_loadu_si256((const __m256i *)(b + 64 * n + 32 * (k & 1)));
    __m256i lo = _mm256_and_si256(k < 2 ? lb : _mm256_srli_epi16(lb, 4), m4);
    __m256i hi = _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(2 * k)),
                                  _mm256_set1_epi8(3));
    __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)),
                                _mm256_set1_epi8(32));
    deq32(q, 1, _mm256_set1_ps(d * (float)sc[8 * n + 2 * k]),
          _mm256_set1_ps(d * (float)sc[8 * n + 2 * k + 1]), NULL, v);
}

static inline size_t super_bytes(dg_dtype t) { return t == DG_Q4_K ? 144 : 210; }

/* Q4_K and Q6_K rows of K elements, chunk by chunk (deq_k_chunk). */
__attribute__((target(DG_TARGET_AVX2))) static void deq_k_avx2(dg_dtype t, const uint8_t *w,
                                                               float *out, int64_t K)
{
    for (int64_t sb = 0; sb < K / 256; sb++)
        for (int j = 0; j < 8; j++) {
            __m256 v[4];
            deq_k_chunk(t, w + (size_t)sb * super_bytes(t), j, v);
            for (int k = 0; k < 4; k++) _mm256_storeu_ps(out + 256 * sb + 32 * j + 8 * k, v[k]);
        }
}

/* F16 widened exactly (F16C), BF16 shifted; the 32-element formats by
 * deq_block, the K-quants by deq_k_avx2. */
__attribute__((target(DG_TARGET_AVX2))) static void deq_avx2(dg_dtype t, const uint8_t *w,
                                                             float *out, int64_t K)
{
    if (t == DG_Q4_K || t == DG_Q6_K) {
        deq_k_avx2(t, w, out, K);
        return;
    }
    if (t == DG_F16 || t == DG_BF16) {
        int64_t i = 0;
        for (; i + 8 <= K; i += 8) {
            __m128i h = _mm_loadu_si128((const __m128i *)(w + 2 * i));
            _mm256_storeu_ps(out + i, t == DG_F16 ? _mm256_cvtph_ps(h)
                                                  : _mm256_castsi256_ps(_mm256_slli_epi32(
                                                        _mm256_cvtepu16_epi32(h), 16)));
        }
        if (i < K) (void)dg_dequantize(t, w + 2 * i, out + i, K - i);
        return;
    }
    size_t bb = block_bytes32(t);
    for (int64_t b = 0; b < K / 32; b++) {
        __m256 v[4];
        deq_block(t, w + (size_t)b * bb, v);
        for (int k = 0; k < 4; k++) _mm256_storeu_ps(out + 32 * b + 8 * k, v[k]);
    }
}

/* Elements 32 c .. 32 c + 31 of a quantized row as v[4]: block c of Q8_0 /
 * Q4_0 / Q4_1 (deq_block), chunk c mod 8 of super-block c / 8 of Q4_K /
 * Q6_K (deq_k_chunk). */
__attribute__((target(DG_TARGET_AVX2), always_inline)) static inline void deq_chunk(
    dg_dtype t, const uint8_t *row, int64_t c, __m256 v[4])
{
    if (t == DG_Q4_K || t == DG_Q6_K)
        deq_k_chunk(t, row + (size_t)(c >> 3) * super_bytes(t), (int)(c & 7), v);
    else
        deq_block(t, row + (size_t)c * block_bytes32(t), v);
}

/* Four accumulators' final sums [s(a), s(b), s(c), s(d)], each
 * ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)) with every add's operands
 * in that order (dg_qdot_finish, bitwise, NaN payloads included): even and
 * odd lanes picked by shuffles, then added, twice, then the two halves. */
__attribute__((target(DG_TARGET_AVX2), always_inline)) static inline __m128 hsum4(__m256 a,
                                                                                 __m256 b,
                                                                                 __m256 c,
                                                                                 __m256 d)
{
    /* x = [a0+a1, a2+a3, b0+b1, b2+b3, a4+a5, a6+a7, b4+b5, b6+b7], y: c, d */
    __m256 x = _mm256_add_ps(_mm256_shuffle_ps(a, b, 0x88), _mm256_shuffle_ps(a, b, 0xdd));
    __m256 y = _mm256_add_ps(_mm256_shuffle_ps(c, d, 0x88), _mm256_shuffle_ps(c, d, 0xdd));
    /* z = [a0123, b0123, c0123, d0123, a4567, b4567, c4567, d4567] */
    __m256 z = _mm256_add_ps(_mm256_shuffle_ps(x, y, 0x88), _mm256_shuffle_ps(x, y, 0xdd));
    return _mm_add_ps(_mm256_castps256_ps128(z), _mm256_extractf128_ps(z, 1));
}

/* y[0 .. NB) = the final sums of acc[0 .. NB) (hsum4). */
#define FD_STORE_SUMS(NB, acc, y)                                                          \
    do {                                                                                   \
        if ((NB) % 4 == 0) {                                                               \
            for (int j_ = 0; j_ < (NB); j_ += 4)                                           \
                _mm_storeu_ps((y) + j_, hsum4((acc)[j_], (acc)[(j_ + 1) % (NB)],           \
                                              (acc)[(j_ + 2) % (NB)], (acc)[(j_ + 3) % (NB)])); \
        } else if ((NB) == 2) {                                                            \
            _mm_storel_pi((__m64 *)(y), hsum4((acc)[0], (acc)[1 % (NB)], (acc)[0], (acc)[0])); \
        } else {                                                                           \
            for (int j_ = 0; j_ < (NB); j_++)                                              \
                _mm_store_ss((y) + j_, hsum4((acc)[j_], (acc)[j_], (acc)[j_], (acc)[j_])); \
        }                                                                                  \
    } while (0)

/* One x row (decode) against R weight rows of a quantized dtype t, fused:
 * each 32-element chunk dequantized in registers and multiplied at once, no
 * scratch; the same operations per pair as dequantizing first (deq_chunk,
 * then acc += w * x over elements 0..7, ..., 24..31 of the chunk in order).
 * always_inline with a constant t: one specialized loop per dtype. */
__attribute__((target(DG_TARGET_AVX2), always_inline)) static inline void fused_rows(
    dg_dtype t, int R, const dg_weight *w, int64_t n0, const float *x, float *y)
{
    const uint8_t *row[4];
    __m256 acc[4];
    for (int r = 0; r < R; r++)
        row[r] = dg_weight_row_data(w, n0 + r), acc[r] = _mm256_setzero_ps();
    for (int64_t c = 0; c < w->cols / 32; c++) {
        const float *xc = x + 32 * c;
        for (int r = 0; r < R; r++) {
            __m256 v[4];
            deq_chunk(t, row[r], c, v);
            for (int k = 0; k < 4; k++)
                acc[r] = _mm256_add_ps(acc[r], _mm256_mul_ps(v[k], _mm256_loadu_ps(xc + 8 * k)));
        }
    }
    FD_STORE_SUMS(R, acc, y);
}

/* Q4_K super-block b's eight sub-block scales and mins times d and dmin:
 * dl[j] = d * sc_j, ml[j] = dmin * mn_j (dg_q4k_scale_min's 6-bit fields,
 * unpacked for all j at once as ggml does; the same f32 products as
 * deq_k_chunk's, one rounding each). */
__attribute__((target(DG_TARGET_AVX2), always_inline)) static inline void q4k_scales(
    const uint8_t *b, float dl[8], float ml[8])
{
    uint32_t u[3];
    memcpy(u, b + 4, 12);
    uint32_t sc_lo = u[0] & 0x3f3f3f3fu, mn_lo = u[1] & 0x3f3f3f3fu;
    uint32_t sc_hi = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    uint32_t mn_hi = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    __m256 sc = U8F(_mm_set_epi32(0, 0, (int)sc_hi, (int)sc_lo));
    __m256 mn = U8F(_mm_set_epi32(0, 0, (int)mn_hi, (int)mn_lo));
    _mm256_storeu_ps(dl, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(dg_ld_u16(b))), sc));
    _mm256_storeu_ps(ml, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(dg_ld_u16(b + 2))), mn));
}

/* fused_rows for Q4_K, super-block by super-block: each row's scales
 * unpacked once per super-block (q4k_scales) instead of once per chunk;
 * the chunks' values and the per-pair operations are fused_rows' exactly
 * (chunks in order, acc += w * x over elements 0..7, ..., 24..31). */
__attribute__((target(DG_TARGET_AVX2), always_inline)) static inline void fused_q4k_rows(
    int R, const dg_weight *w, int64_t n0, const float *x, float *y)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    const uint8_t *row[4];
    __m256 acc[4];
    for (int r = 0; r < R; r++)
        row[r] = dg_weight_row_data(w, n0 + r), acc[r] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < w->cols / 256; sb++) {
        float dl[4][8], ml[4][8];
        for (int r = 0; r < R; r++) q4k_scales(row[r] + 144 * sb, dl[r], ml[r]);
        for (int j = 0; j < 8; j++) {
            const float *xc = x + 256 * sb + 32 * j;
            for (int r = 0; r < R; r++) {
                __m256 v[4], d = _mm256_set1_ps(dl[r][j]), m = _mm256_set1_ps(ml[r][j]);
                __m256i q = _mm256_loadu_si256(
                    (const __m256i *)(row[r] + 144 * sb + 16 + 32 * (j >> 1)));
                deq32(_mm256_and_si256(j & 1 ? _mm256_srli_epi16(q, 4) : q, m4), 0, d, d, &m,
                      v);
                for (int k = 0; k < 4; k++)
                    acc[r] = _mm256_add_ps(acc[r],
                                           _mm256_mul_ps(v[k], _mm256_loadu_ps(xc + 8 * k)));
            }
        }
    }
    FD_STORE_SUMS(R, acc, y);
}

__attribute__((target(DG_TARGET_AVX2))) static void fused_Q4_K(const dg_weight *w, int64_t n0,
                                                               int64_t n1, const float *x,
                                                               float *y)
{
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) fused_q4k_rows(4, w, n, x, y + n);
    for (; n < n1; n++) fused_q4k_rows(1, w, n, x, y + n);
}

#define FD_FUSED(T)                                                                        \
    __attribute__((target(DG_TARGET_AVX2))) static void fused_##T(                          \
        const dg_weight *w, int64_t n0, int64_t n1, const float *x, float *y)              \
    {                                                                                      \
        int64_t n = n0;                                                                    \
        for (; n + 4 <= n1; n += 4) fused_rows(DG_##T, 4, w, n, x, y + n);                 \
        for (; n < n1; n++) fused_rows(DG_##T, 1, w, n, x, y + n);                         \
    }

FD_FUSED(Q8_0)
FD_FUSED(Q4_0)
FD_FUSED(Q4_1)
FD_FUSED(Q5_0)
FD_FUSED(Q5_1)

/* The fused decode kernel of dtype t; NULL for the dtypes that dequantize
 * rows into scratch first (F16/BF16; Q6_K, whose fused loop measured 7%
 * slower than dequantize-then-dot: bench_qdot 193 vs 180 ns per 1536-wide
 * row, its 2-bit high parts re-shifted per row). */
static void (*fused_for(dg_dtype t))(const dg_weight *, int64_t, int64_t, const float *, float *)
{
    switch (t) {
    case DG_Q8_0: return fused_Q8_0;
    case DG_Q4_0: return fused_Q4_0;
    case DG_Q4_1: return fused_Q4_1;
    case DG_Q4_K: return fused_Q4_K;
    case DG_Q5_0: return fused_Q5_0;
    case DG_Q5_1: return fused_Q5_1;
    default: return NULL;
    }
}

/* MB x rows against NB dequantized weight rows (w, row stride K): every
 * pair's eight lanes run i = 0, 8, 16, ... (one multiply, one add), the
 * K mod 8 tail and the final sum as dot_from. */
#define FD_KERNEL(MB, NB) FD_KERNEL_T(MB, NB, DG_TARGET_AVX2, )
#define FD_KERNEL_T(MB, NB, TARGET, SUFFIX)                                                \
    __attribute__((target(TARGET))) static void kern_##MB##x##NB##SUFFIX(                  \
        const float *w, const float *x, int64_t ldx, int64_t K, float *y, int64_t ldy)     \
    {                                                                                      \
        __m256 acc[MB][NB];                                                                \
        for (int m = 0; m < MB; m++)                                                       \
            for (int j = 0; j < NB; j++) acc[m][j] = _mm256_setzero_ps();                  \
        int64_t K8 = K & ~(int64_t)7;                                                      \
        for (int64_t i = 0; i < K8; i += 8) {                                              \
            __m256 wv[NB];                                                                 \
            for (int j = 0; j < NB; j++) wv[j] = _mm256_loadu_ps(w + j * K + i);           \
            for (int m = 0; m < MB; m++) {                                                 \
                __m256 xv = _mm256_loadu_ps(x + m * ldx + i);                              \
                for (int j = 0; j < NB; j++)                                               \
                    acc[m][j] = _mm256_add_ps(acc[m][j], _mm256_mul_ps(wv[j], xv));        \
            }                                                                              \
        }                                                                                  \
        if (K8 == K) {                                                                     \
            for (int m = 0; m < MB; m++) FD_STORE_SUMS(NB, acc[m], y + m * ldy);           \
            return;                                                                        \
        }                                                                                  \
        for (int m = 0; m < MB; m++)                                                       \
            for (int j = 0; j < NB; j++) {                                                 \
                float a[8];                                                                \
                _mm256_storeu_ps(a, acc[m][j]);                                            \
                y[m * ldy + j] = dot_from(w + j * K, x + m * ldx, K, a, K8);               \
            }                                                                              \
    }

FD_KERNEL(1, 8)
FD_KERNEL(1, 4)
FD_KERNEL(1, 1)
FD_KERNEL(4, 2)
FD_KERNEL(4, 1)
FD_KERNEL(2, 2)
FD_KERNEL(2, 1)
FD_KERNEL(3, 2)
FD_KERNEL(3, 1)
/* With AVX-512VL's 32 vector registers (the same 256-bit operations): 4 x 4
 * pairs, half the x loads per product of 4 x 2. */
FD_KERNEL_T(4, 4, DG_TARGET_VNNI, _wide)

typedef void (*kern_fn)(const float *, const float *, int64_t, int64_t, float *, int64_t);

/* nn dequantized rows against x rows [0, M); wide: the CPU has AVX-512VL. */
static void tile_avx2(const float *w, int64_t nn, int64_t K, int64_t M, const float *x,
                      int64_t ldx, float *y, int64_t ldy, int wide)
{
    static const kern_fn two[5] = {NULL, NULL, kern_2x2, kern_3x2, kern_4x2};
    static const kern_fn one[5] = {NULL, kern_1x1, kern_2x1, kern_3x1, kern_4x1};
    for (int64_t m0 = 0; m0 < M; m0 += 4) {
        int64_t mm = M - m0 < 4 ? M - m0 : 4;
        const float *xm = x + m0 * ldx;
        float *ym = y + m0 * ldy;
        int64_t j = 0;
        if (mm == 1) {
            for (; j + 8 <= nn; j += 8) kern_1x8(w + j * K, xm, ldx, K, ym + j, ldy);
            for (; j + 4 <= nn; j += 4) kern_1x4(w + j * K, xm, ldx, K, ym + j, ldy);
        } else {
            if (wide && mm == 4)
                for (; j + 4 <= nn; j += 4) kern_4x4_wide(w + j * K, xm, ldx, K, ym + j, ldy);
            for (; j + 2 <= nn; j += 2) two[mm](w + j * K, xm, ldx, K, ym + j, ldy);
        }
        for (; j < nn; j++) one[mm](w + j * K, xm, ldx, K, ym + j, ldy);
    }
}
#endif

void dg_fdot_dequant_row(dg_dtype t, const uint8_t *w, float *out, int64_t K)
{
#ifdef DG_QDOT_X86
    if (dg_qdot_level() != DG_QK_SCALAR && t != DG_F32) {
        deq_avx2(t, w, out, K);
        return;
    }
#endif
    (void)dg_dequantize(t, w, out, K);
}

void dg_fdot_tile(const dg_weight *w, int64_t n0, int64_t n1, int64_t M, const float *x,
                  int64_t ldx, float *y, int64_t ldy, float *scratch)
{
    int64_t K = w->cols;
    int simd = dg_qdot_level() != DG_QK_SCALAR;
    dg_dtype t = w->dtype;
#ifdef DG_QDOT_X86
    if (simd && M == 1 && fused_for(t)) {
        fused_for(t)(w, n0, n1, x, y);
        return;
    }
#endif
    /* Each panel of weight rows is dequantized once for all M x rows; the x
     * rows go by in blocks that stay in L2, and each block meets l1
     * dequantized rows at a time (tile_avx2's register blocking). */
    int64_t l1, mblk, panel = fdot_blocking(K, M, &l1, &mblk);
    for (int64_t nb = n0; nb < n1; nb += panel) {
        int64_t nn = n1 - nb < panel ? n1 - nb : panel;
        for (int64_t j = 0; j < nn; j++)
            dg_fdot_dequant_row(w->dtype, dg_weight_row_data(w, nb + j), scratch + j * K, K);
#ifdef DG_QDOT_X86
        if (simd) {
            for (int64_t m0 = 0; m0 < M; m0 += mblk)
                for (int64_t j0 = 0; j0 < nn; j0 += l1)
                    tile_avx2(scratch + j0 * K, nn - j0 < l1 ? nn - j0 : l1, K,
                              M - m0 < mblk ? M - m0 : mblk, x + m0 * ldx, ldx,
                              y + m0 * ldy + nb + j0, ldy, dg_qdot_level() == DG_QK_VNNI);
            continue;
        }
#endif
        (void)simd, (void)l1, (void)mblk;
        for (int64_t m = 0; m < M; m++)
            for (int64_t j = 0; j < nn; j++) {
                float acc[8] = {0};
                y[m * ldy + nb + j] = dot_from(scratch + j * K, x + m * ldx, K, acc, 0);
            }
    }
}
