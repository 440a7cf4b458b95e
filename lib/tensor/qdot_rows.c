/* Multi-row quantized dot products (prefill, batched decode): up to
 * DG_QDOT_ROWS_MAX weight rows' blocks unpacked once into plain bytes and f32
 * scales, then dotted with each of M 8-bit activation rows, bitwise dg_qdot
 * per pair (qdot.h). The pairs go x row by x row, every weight row of the
 * call against one x row before the next, so each x row is read from L2 once
 * per call and then hit in L1 (one weight row per call read every x row from
 * L2 again for each weight row). */
#pragma GCC optimize("fp-contract=off")
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <stdint.h>
#include <string.h>

#include "tensor/qdot.h"
#include "tensor/qdot_simd.h"

/* The unpacked row in the scratch, nb8 = dg_q8_groups(nb):
 *   u[nb8 * 32]  the weights as bytes in element order: the 4-bit values
 *                (Q4_0, Q4_1, Q4_K; 0..15), Q6_K's 6-bit values (0..63),
 *                Q8_0's int8 (AVX2) or int8 + 128 (VNNI); interleaved like
 *                dg_q8_row.qt (per group of 8 blocks, vector k's lane l holds
 *                bytes 4k..4k+3 of block l), so one 32-byte integer dot of
 *                vector k with x's vector k adds 4 products to each of the 8
 *                blocks' lanes, and 8 of them give the 8 block sums at once;
 *   f0[nb8]      block b's f32 scale (Q4_K, Q6_K: the super-block's d);
 *   f1[nb8]      Q4_1: the block's min m; Q4_K: the super-block's dmin;
 *   i0, i1[nb8]  Q4_K: the block's 6-bit scale and min; Q6_K: the int8
 *                scales of its elements 0..15 and 16..31.
 * Lanes of the last group past nb are zero scales (never summed). */
typedef struct prep {
    uint8_t *u;
    float *f0, *f1;
    int32_t *i0, *i1;
} prep;

/* Bytes of one unpacked row (a multiple of 32: the next row stays aligned). */
static size_t prep_bytes(int64_t nb) { return (size_t)dg_q8_groups(nb) * (32 + 4 * 4); }

size_t dg_qdot_rows_scratch(int64_t nb) { return DG_QDOT_ROWS_MAX * prep_bytes(nb) + 64; }

/* Unpacked row `row` (0 .. DG_QDOT_ROWS_MAX - 1) in the scratch. */
static prep prep_at(void *scratch, int64_t nb, int row)
{
    size_t n = (size_t)dg_q8_groups(nb);
    uint8_t *p = (uint8_t *)(((uintptr_t)scratch + 31) & ~(uintptr_t)31) + (size_t)row * prep_bytes(nb);
    prep r;
    r.u = p, p += 32 * n;
    r.f0 = (float *)p, p += 4 * n;
    r.f1 = (float *)p, p += 4 * n;
    r.i0 = (int32_t *)p, p += 4 * n;
    r.i1 = (int32_t *)p;
    return r;
}

void dg_q8_interleave(const dg_q8_row *r)
{
    int64_t nb = r->nb, n8 = dg_q8_groups(nb);
    for (int64_t g = 0; g < n8; g += 8)
        for (int k = 0; k < 8; k++)
            for (int l = 0; l < 8; l++) {
                int8_t *dst = r->qt + 32 * (g + k) + 4 * l;
                if (g + l < nb) memcpy(dst, r->q + 32 * (g + l) + 4 * k, 4);
                else memset(dst, 0, 4);
            }
    for (int64_t b = 0; b < n8; b++) {
        int32_t h0 = 0, h1 = 0;
        for (int i = 0; b < nb && i < 16; i++) h0 += r->q[32 * b + i], h1 += r->q[32 * b + 16 + i];
        r->hs[b] = h0, r->hs[n8 + b] = h1;
    }
}

#ifdef DG_QDOT_X86
/* ---- unpacking one weight row ------------------------------------------- */

/* v[l] = block l's 32 bytes as 8 int32 units -> v[k] lane l = old v[l] unit k. */
__attribute__((target(DG_TARGET_AVX2))) static inline void transpose8(__m256i v[8])
{
    __m256i t[8], w[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        w[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        w[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        w[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        w[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_permute2x128_si256(w[k], w[4 + k], 0x20);
        v[4 + k] = _mm256_permute2x128_si256(w[k], w[4 + k], 0x31);
    }
}

/* Q8_0, Q4_0, Q4_1: 32-element blocks. The f16 scales widen exactly
 * (F16C), the values the one-row kernels read. */
__attribute__((target(DG_TARGET_AVX2))) static void prep_q32(dg_dtype t, const uint8_t *w,
                                                             int64_t nb, int vnni, prep *p)
{
    const __m128i m4 = _mm_set1_epi8(15);
    size_t bb = t == DG_Q8_0 ? 34 : t == DG_Q4_0 ? 18 : 20;
    int qoff = t == DG_Q4_1 ? 4 : 2;
    for (int64_t g = 0; g < nb; g += 8) {
        __m256i v[8];
        for (int l = 0; l < 8; l++) {
            int64_t b = g + l;
            if (b >= nb) {
                v[l] = _mm256_setzero_si256();
                p->f0[b] = p->f1[b] = 0.0f;
                continue;
            }
            const uint8_t *blk = w + (size_t)b * bb;
            if (t == DG_Q8_0) {
                v[l] = _mm256_loadu_si256((const __m256i *)(blk + 2));
                if (vnni) v[l] = _mm256_xor_si256(v[l], _mm256_set1_epi8((char)0x80));
            } else {
                __m128i qs = _mm_loadu_si128((const __m128i *)(blk + qoff));
                v[l] = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(qs, 4), m4),
                                        _mm_and_si128(qs, m4));
            }
            p->f0[b] = _cvtsh_ss(dg_ld_u16(blk));
            p->f1[b] = t == DG_Q4_1 ? _cvtsh_ss(dg_ld_u16(blk + 2)) : 0.0f;
        }
        transpose8(v);
        for (int k = 0; k < 8; k++) _mm256_store_si256((__m256i *)(p->u + 32 * (g + k)), v[k]);
    }
}

/* Q4_K, Q6_K: 256-element super-blocks, 8 blocks each (qdot.c's layouts). */
__attribute__((target(DG_TARGET_AVX2))) static void prep_k(dg_dtype t, const uint8_t *w,
                                                           int64_t nb, prep *p)
{
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3);
    for (int64_t g = 0; g < nb; g += 8) {
        __m256i v[8];
        if (t == DG_Q4_K) {
            const uint8_t *blk = w + (size_t)(g / 8) * 144;
            for (int i = 0; i < 4; i++) {
                __m256i q = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * i));
                v[2 * i] = _mm256_and_si256(q, m4);
                v[2 * i + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            }
            float d = _cvtsh_ss(dg_ld_u16(blk)), dmin = _cvtsh_ss(dg_ld_u16(blk + 2));
            for (int j = 0; j < 8; j++) {
                int sc, mn;
                dg_q4k_scale_min(blk + 4, j, &sc, &mn);
                p->i0[g + j] = sc, p->i1[g + j] = mn;
                p->f0[g + j] = d, p->f1[g + j] = dmin;
            }
        } else {
            const uint8_t *blk = w + (size_t)(g / 8) * 210, *qh = blk + 128;
            const int8_t *scs = (const int8_t *)(blk + 192);
            float d = _cvtsh_ss(dg_ld_u16(blk + 208));
            for (int n = 0; n < 2; n++) {
                __m256i l0 = _mm256_loadu_si256((const __m256i *)(blk + 64 * n));
                __m256i l1 = _mm256_loadu_si256((const __m256i *)(blk + 64 * n + 32));
                __m256i h = _mm256_loadu_si256((const __m256i *)(qh + 32 * n));
                for (int k = 0; k < 4; k++) {
                    __m256i lb = k & 1 ? l1 : l0;
                    __m256i lo = _mm256_and_si256(k < 2 ? lb : _mm256_srli_epi16(lb, 4), m4);
                    __m256i hi = _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(2 * k)), m3);
                    v[4 * n + k] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
                    p->i0[g + 4 * n + k] = scs[8 * n + 2 * k];
                    p->i1[g + 4 * n + k] = scs[8 * n + 2 * k + 1];
                }
            }
            for (int j = 0; j < 8; j++) p->f0[g + j] = d, p->f1[g + j] = 0.0f;
        }
        transpose8(v);
        for (int k = 0; k < 8; k++) _mm256_store_si256((__m256i *)(p->u + 32 * (g + k)), v[k]);
    }
}

/* ---- the pair kernels ----------------------------------------------------- */

/* One function per (instruction set, format): every x row m against the nr
 * unpacked rows (x row by x row: see the top of the file; per group of 8
 * blocks the x row's scales are loaded once for the nr rows, each pair
 * keeping its own accumulator), eight blocks per step with block b in lane
 * b mod 8. ISUM
 * sets is (and for Q6_K ib: the second half's) to the eight blocks' integer
 * dot sums (xv: the row's interleaved bytes of the group), GROUP(is) turns
 * them into their f32 contributions c (dx, xs: the x row's scales and block
 * sums; f0v..i1v: the weight's) with exactly the one-row kernels'
 * operations, so acc[b mod 8] += c_b matches them lane for lane. The last
 * group's lanes past nb (zero bytes, zero scales) are masked out of the
 * accumulator. */
#define DG_QROWS(NAME, TARGET, ISUM, GROUP)                                                \
    __attribute__((target(TARGET), always_inline)) static inline void NAME##_n(            \
        const prep *pws, const int nr, const dg_q8_row *x, int64_t M, float *y, int64_t ldy) \
    {                                                                                      \
        int64_t nb = x[0].nb, n8 = dg_q8_groups(nb);                                       \
        __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(nb - (n8 - 8))),         \
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));      \
        for (int64_t m = 0; m < M; m++) {                                                  \
            __m256 accs[DG_QDOT_ROWS_MAX];                                                 \
            for (int r = 0; r < nr; r++) accs[r] = _mm256_setzero_ps();                    \
            for (int64_t g = 0; g < n8; g += 8) {                                          \
                const __m256i *xv = (const __m256i *)(x[m].qt + 32 * g);                   \
                int last = g + 8 > nb;                                                     \
                __m256 dx = last ? _mm256_maskload_ps(x[m].d + g, mask)                    \
                                 : _mm256_loadu_ps(x[m].d + g);                            \
                __m256i xs = last ? _mm256_maskload_epi32(x[m].s + g, mask)                \
                                  : _mm256_loadu_si256((const __m256i *)(x[m].s + g));     \
                (void)xs;                                                                  \
                for (int r = 0; r < nr; r++) {                                             \
                    const prep *pw = &pws[r];                                              \
                    const __m256i *wv = (const __m256i *)(pw->u + 32 * g);                 \
                    __m256i is, ib;                                                        \
                    ISUM;                                                                  \
                    (void)ib;                                                              \
                    __m256 f0v = _mm256_load_ps(pw->f0 + g);                               \
                    __m256 f1v = _mm256_load_ps(pw->f1 + g);                               \
                    __m256i i0v = _mm256_load_si256((const __m256i *)(pw->i0 + g));        \
                    __m256i i1v = _mm256_load_si256((const __m256i *)(pw->i1 + g));        \
                    (void)f1v, (void)i0v, (void)i1v;                                       \
                    __m256 sum = _mm256_add_ps(accs[r], GROUP(is));                        \
                    accs[r] = last ? _mm256_blendv_ps(accs[r], sum, _mm256_castsi256_ps(mask)) \
                                   : sum;                                                  \
                }                                                                          \
            }                                                                              \
            for (int r = 0; r < nr; r++) {                                                 \
                float a[8];                                                                \
                _mm256_storeu_ps(a, accs[r]);                                              \
                y[m * ldy + r] = dg_qdot_finish(a);                                        \
            }                                                                              \
        }                                                                                  \
    }                                                                                      \
    /* nr a constant in each case: the x row's bytes and scales loaded once per   */      \
    /* group for all nr weight rows, the nr accumulators in registers.             */      \
    __attribute__((target(TARGET))) static void NAME(const prep *pws, int nr,              \
                                                     const dg_q8_row *x, int64_t M,        \
                                                     float *y, int64_t ldy)                \
    {                                                                                      \
        switch (nr) {                                                                      \
        case 4: NAME##_n(pws, 4, x, M, y, ldy); break;                                     \
        case 3: NAME##_n(pws, 3, x, M, y, ldy); break;                                     \
        case 2: NAME##_n(pws, 2, x, M, y, ldy); break;                                     \
        default: NAME##_n(pws, 1, x, M, y, ldy); break;                                    \
        }                                                                                  \
    }

/* Integer sums: two chains of four 32-byte dots (the exact int32 sums in
 * any order). */
#define ACC_AVX2(a, u, s) _mm256_add_epi32(a, DG_DOT_AVX2(u, s))
#define ACC_VNNI(a, u, s) _mm256_dpbusd_epi32(a, u, s)
#define IS_PLAIN(ACC)                                                                      \
    do {                                                                                   \
        __m256i e = _mm256_setzero_si256(), o = e;                                         \
        for (int k = 0; k < 8; k += 2) {                                                   \
            e = ACC(e, _mm256_load_si256(wv + k), _mm256_loadu_si256(xv + k));              \
            o = ACC(o, _mm256_load_si256(wv + k + 1), _mm256_loadu_si256(xv + k + 1));      \
        }                                                                                  \
        is = _mm256_add_epi32(e, o);                                                       \
    } while (0)
/* Q8_0 on AVX2: |w| times x with w's sign (maddubs takes unsigned x signed). */
#define IS_Q8_AVX2                                                                         \
    do {                                                                                   \
        __m256i e = _mm256_setzero_si256(), o = e;                                         \
        for (int k = 0; k < 8; k += 2) {                                                   \
            __m256i w0 = _mm256_load_si256(wv + k), w1 = _mm256_load_si256(wv + k + 1);    \
            e = ACC_AVX2(e, _mm256_abs_epi8(w0), _mm256_sign_epi8(_mm256_loadu_si256(xv + k), w0)); \
            o = ACC_AVX2(o, _mm256_abs_epi8(w1),                                           \
                         _mm256_sign_epi8(_mm256_loadu_si256(xv + k + 1), w1));             \
        }                                                                                  \
        is = _mm256_add_epi32(e, o);                                                       \
    } while (0)
/* Q6_K: elements 0..15 of each block are vectors 0..3, 16..31 are 4..7;
 * (w - 32) x summed as w x - 32 x (hs: x's half-block sums), then each half
 * times its int8 scale. */
#define IS_Q6(ACC)                                                                         \
    do {                                                                                   \
        __m256i e = _mm256_setzero_si256(), o = e;                                         \
        for (int k = 0; k < 4; k++) {                                                      \
            e = ACC(e, _mm256_load_si256(wv + k), _mm256_loadu_si256(xv + k));              \
            o = ACC(o, _mm256_load_si256(wv + 4 + k), _mm256_loadu_si256(xv + 4 + k));      \
        }                                                                                  \
        __m256i h0 = _mm256_loadu_si256((const __m256i *)(x[m].hs + g));                   \
        __m256i h1 = _mm256_loadu_si256((const __m256i *)(x[m].hs + n8 + g));              \
        e = _mm256_sub_epi32(e, _mm256_slli_epi32(h0, 5));                                 \
        o = _mm256_sub_epi32(o, _mm256_slli_epi32(h1, 5));                                 \
        is = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_load_si256((const __m256i *)(pw->i0 + g)), e), \
                              _mm256_mullo_epi32(_mm256_load_si256((const __m256i *)(pw->i1 + g)), o)); \
    } while (0)

#define MULF(a, b) _mm256_mul_ps(a, b)
#define CVT(v) _mm256_cvtepi32_ps(v)

/* Block contributions (qdot.h's expressions). */
#define G_PLAIN(is) MULF(MULF(f0v, dx), CVT(is))
#define G_Q4_0(is) G_PLAIN(_mm256_sub_epi32(is, _mm256_slli_epi32(xs, 3)))
#define G_Q8_VNNI(is) G_PLAIN(_mm256_sub_epi32(is, _mm256_slli_epi32(xs, 7)))
#define G_Q4_1(is) _mm256_add_ps(G_PLAIN(is), MULF(MULF(f1v, dx), CVT(xs)))
#define G_Q4_K(is)                                                                         \
    _mm256_sub_ps(MULF(MULF(f0v, dx), CVT(_mm256_mullo_epi32(i0v, is))),                   \
                  MULF(MULF(f1v, dx), CVT(_mm256_mullo_epi32(i1v, xs))))

DG_QROWS(rows_q4_0_avx2, DG_TARGET_AVX2, IS_PLAIN(ACC_AVX2), G_Q4_0)
DG_QROWS(rows_q4_1_avx2, DG_TARGET_AVX2, IS_PLAIN(ACC_AVX2), G_Q4_1)
DG_QROWS(rows_q8_0_avx2, DG_TARGET_AVX2, IS_Q8_AVX2, G_PLAIN)
DG_QROWS(rows_q4_k_avx2, DG_TARGET_AVX2, IS_PLAIN(ACC_AVX2), G_Q4_K)
DG_QROWS(rows_q6_k_avx2, DG_TARGET_AVX2, IS_Q6(ACC_AVX2), G_PLAIN)
DG_QROWS(rows_q4_0_vnni, DG_TARGET_VNNI, IS_PLAIN(ACC_VNNI), G_Q4_0)
DG_QROWS(rows_q4_1_vnni, DG_TARGET_VNNI, IS_PLAIN(ACC_VNNI), G_Q4_1)
DG_QROWS(rows_q8_0_vnni, DG_TARGET_VNNI, IS_PLAIN(ACC_VNNI), G_Q8_VNNI)
DG_QROWS(rows_q4_k_vnni, DG_TARGET_VNNI, IS_PLAIN(ACC_VNNI), G_Q4_K)
DG_QROWS(rows_q6_k_vnni, DG_TARGET_VNNI, IS_Q6(ACC_VNNI), G_PLAIN)

typedef void (*rows_fn)(const prep *, int, const dg_q8_row *, int64_t, float *, int64_t);

static rows_fn rows_kernel(dg_dtype t, int vnni)
{
    switch (t) {
    case DG_Q4_0: return vnni ? rows_q4_0_vnni : rows_q4_0_avx2;
    case DG_Q4_1: return vnni ? rows_q4_1_vnni : rows_q4_1_avx2;
    case DG_Q8_0: return vnni ? rows_q8_0_vnni : rows_q8_0_avx2;
    case DG_Q4_K: return vnni ? rows_q4_k_vnni : rows_q4_k_avx2;
    case DG_Q6_K: return vnni ? rows_q6_k_vnni : rows_q6_k_avx2;
    default: return NULL;
    }
}
#endif

void dg_qdot_rows(dg_dtype t, const uint8_t *const *w, int nr, const dg_q8_row *x, int64_t M,
                  float *y, int64_t ldy, void *scratch)
{
    if (M <= 0 || nr <= 0) return;
    int level = dg_qdot_level();
#ifdef DG_QDOT_X86
    rows_fn f = level != DG_QK_SCALAR && x[0].qt && nr <= DG_QDOT_ROWS_MAX
                    ? rows_kernel(t, level == DG_QK_VNNI)
                    : NULL;
    if (f) {
        int64_t nb = x[0].nb;
        prep p[DG_QDOT_ROWS_MAX];
        for (int r = 0; r < nr; r++) {
            p[r] = prep_at(scratch, nb, r);
            if (t == DG_Q4_K || t == DG_Q6_K) prep_k(t, w[r], nb, &p[r]);
            else prep_q32(t, w[r], nb, level == DG_QK_VNNI, &p[r]);
        }
        f(p, nr, x, M, y, ldy);
        return;
    }
#else
    (void)level, (void)scratch;
#endif
    for (int64_t m = 0; m < M; m++)
        for (int r = 0; r < nr; r++) y[m * ldy + r] = dg_qdot(t, w[r], &x[m]);
}
