/* Multi-row quantized dot products (prefill, batched decode): a weight row's
 * blocks unpacked once into plain bytes and f32 scales, then dotted with
 * each of M 8-bit activation rows, bitwise dg_qdot per pair (qdot.h). */
#pragma GCC optimize("fp-contract=off")
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <stdint.h>
#include <string.h>

#include "tensor/qdot.h"
#include "tensor/qdot_simd.h"

/* The unpacked row in the scratch, nb8 = nb rounded up to 8 blocks:
 *   u[nb8 * 32]  block b's 32 weights as bytes in element order: the 4-bit
 *                values (Q4_0, Q4_1, Q4_K; 0..15), Q6_K's 6-bit values
 *                (0..63), Q8_0's int8 (AVX2) or int8 + 128 (VNNI);
 *   f0[nb8]      block b's f32 scale (Q4_K, Q6_K: the super-block's d);
 *   f1[nb8]      Q4_1: the block's min m; Q4_K: the super-block's dmin;
 *   i0, i1[nb8]  Q4_K: the block's 6-bit scale and min;
 *   s2[nb8 * 8]  Q6_K: the block's two int8 scales, four lanes each.
 * Lanes of the last group past nb are zero scales (never summed). */
typedef struct prep {
    uint8_t *u;
    float *f0, *f1;
    int32_t *i0, *i1, *s2;
} prep;

static int64_t round8(int64_t nb) { return (nb + 7) & ~(int64_t)7; }

size_t dg_qdot_rows_scratch(int64_t nb)
{
    return (size_t)round8(nb) * (32 + 4 * 4 + 32) + 64;
}

static prep prep_at(void *scratch, int64_t nb)
{
    size_t n = (size_t)round8(nb);
    uint8_t *p = (uint8_t *)(((uintptr_t)scratch + 31) & ~(uintptr_t)31);
    prep r;
    r.u = p, p += 32 * n;
    r.s2 = (int32_t *)p, p += 32 * n;
    r.f0 = (float *)p, p += 4 * n;
    r.f1 = (float *)p, p += 4 * n;
    r.i0 = (int32_t *)p, p += 4 * n;
    r.i1 = (int32_t *)p;
    return r;
}

#ifdef DG_QDOT_X86
/* ---- unpacking one weight row ------------------------------------------- */

/* Q8_0, Q4_0, Q4_1: 32-element blocks. The f16 scales widen exactly
 * (F16C), the values the one-row kernels read. */
__attribute__((target(DG_TARGET_AVX2))) static void prep_q32(dg_dtype t, const uint8_t *w,
                                                             int64_t nb, int vnni, prep *p)
{
    const __m128i m4 = _mm_set1_epi8(15);
    size_t bb = t == DG_Q8_0 ? 34 : t == DG_Q4_0 ? 18 : 20;
    int qoff = t == DG_Q4_1 ? 4 : 2;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = w + (size_t)b * bb;
        __m256i v;
        if (t == DG_Q8_0) {
            v = _mm256_loadu_si256((const __m256i *)(blk + 2));
            if (vnni) v = _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80));
        } else {
            __m128i qs = _mm_loadu_si128((const __m128i *)(blk + qoff));
            v = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(qs, 4), m4), _mm_and_si128(qs, m4));
        }
        _mm256_store_si256((__m256i *)(p->u + 32 * b), v);
        p->f0[b] = _cvtsh_ss(dg_ld_u16(blk));
        p->f1[b] = t == DG_Q4_1 ? _cvtsh_ss(dg_ld_u16(blk + 2)) : 0.0f;
    }
    for (int64_t b = nb; b < round8(nb); b++) p->f0[b] = p->f1[b] = 0.0f;
}

/* Q4_K, Q6_K: 256-element super-blocks, 8 blocks each (qdot.c's layouts). */
__attribute__((target(DG_TARGET_AVX2))) static void prep_k(dg_dtype t, const uint8_t *w,
                                                           int64_t nb, prep *p)
{
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3);
    for (int64_t g = 0; g < nb; g += 8) {
        __m256i *u = (__m256i *)(p->u + 32 * g);
        if (t == DG_Q4_K) {
            const uint8_t *blk = w + (size_t)(g / 8) * 144;
            for (int i = 0; i < 4; i++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * i));
                _mm256_store_si256(u + 2 * i, _mm256_and_si256(v, m4));
                _mm256_store_si256(u + 2 * i + 1, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
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
                    _mm256_store_si256(u + 4 * n + k, _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)));
                    int32_t *s2 = p->s2 + 8 * (g + 4 * n + k);
                    for (int l = 0; l < 4; l++)
                        s2[l] = scs[8 * n + 2 * k], s2[4 + l] = scs[8 * n + 2 * k + 1];
                }
            }
            for (int j = 0; j < 8; j++) p->f0[g + j] = d;
        }
    }
}

/* ---- the pair kernels ----------------------------------------------------- */

/* One function per (instruction set, format): every x row m against the
 * unpacked row, eight blocks per step with block b in lane b mod 8. BDOT(b)
 * is block b's int32x8 of partial sums (xq: the row's bytes), GROUP(is)
 * turns the eight blocks' integer sums into their f32 contributions c
 * (dx, xs: the x row's scales and block sums; f0v..i1v: the weight's) with
 * exactly the one-row kernels' operations, so acc[b mod 8] += c_b matches
 * them lane for lane. The last nb mod 8 blocks run as a group whose lanes
 * past nb are zero integer sums, masked out of the accumulator. */
#define DG_QROWS(NAME, TARGET, BDOT, GROUP)                                                \
    __attribute__((target(TARGET))) static void NAME(const prep *pw, const dg_q8_row *x,    \
                                                     int64_t M, float *y, int64_t ldy)     \
    {                                                                                      \
        const __m256i k32 = _mm256_set1_epi8(32);                                          \
        (void)k32;                                                                         \
        int64_t nb = x[0].nb, nfull = nb & ~(int64_t)7;                                    \
        int r = (int)(nb - nfull);                                                         \
        __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(r),                            \
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));      \
        for (int64_t m = 0; m < M; m++) {                                                  \
            const int8_t *xq = x[m].q;                                                     \
            __m256 acc = _mm256_setzero_ps();                                              \
            int64_t g = 0;                                                                 \
            for (; g <= nb - 8; g += 8) {                                                  \
                __m256i p[8], is;                                                          \
                for (int i = 0; i < 8; i++) p[i] = BDOT(g + i);                            \
                DG_HSUM8(p, is);                                                           \
                __m256 dx = _mm256_loadu_ps(x[m].d + g);                                   \
                __m256i xs = _mm256_loadu_si256((const __m256i *)(x[m].s + g));            \
                __m256 f0v = _mm256_load_ps(pw->f0 + g), f1v = _mm256_load_ps(pw->f1 + g);  \
                __m256i i0v = _mm256_load_si256((const __m256i *)(pw->i0 + g));            \
                __m256i i1v = _mm256_load_si256((const __m256i *)(pw->i1 + g));            \
                (void)f1v, (void)i0v, (void)i1v, (void)xs;                                 \
                acc = _mm256_add_ps(acc, GROUP(is));                                       \
            }                                                                              \
            if (r) {                                                                       \
                __m256i p[8], is;                                                          \
                for (int i = 0; i < 8; i++) p[i] = i < r ? BDOT(g + i) : _mm256_setzero_si256(); \
                DG_HSUM8(p, is);                                                           \
                __m256 dx = _mm256_maskload_ps(x[m].d + g, mask);                          \
                __m256i xs = _mm256_maskload_epi32(x[m].s + g, mask);                      \
                __m256 f0v = _mm256_load_ps(pw->f0 + g), f1v = _mm256_load_ps(pw->f1 + g);  \
                __m256i i0v = _mm256_setzero_si256(), i1v = i0v;                           \
                (void)f1v, (void)i0v, (void)i1v, (void)xs;                                 \
                __m256 sum = _mm256_add_ps(acc, GROUP(is));                                \
                acc = _mm256_blendv_ps(acc, sum, _mm256_castsi256_ps(mask));               \
            }                                                                              \
            float a[8];                                                                    \
            _mm256_storeu_ps(a, acc);                                                      \
            y[m * ldy] = dg_qdot_finish(a);                                                \
        }                                                                                  \
    }

#define U_AT(b) _mm256_load_si256((const __m256i *)(pw->u + 32 * (b)))
#define X_AT(b) _mm256_loadu_si256((const __m256i *)(xq + 32 * (b)))
#define MULF(a, b) _mm256_mul_ps(a, b)
#define CVT(v) _mm256_cvtepi32_ps(v)

/* Block integer dots. */
#define BD_U_AVX2(b) DG_DOT_AVX2(U_AT(b), X_AT(b))
#define BD_U_VNNI(b) DG_DOT_VNNI(U_AT(b), X_AT(b))
#define BD_Q8_AVX2(b) DG_DOT_AVX2(_mm256_abs_epi8(U_AT(b)), _mm256_sign_epi8(X_AT(b), U_AT(b)))
#define BD_Q6_(DOT, b)                                                                     \
    _mm256_mullo_epi32(_mm256_sub_epi32(DOT(U_AT(b), X_AT(b)), DOT(k32, X_AT(b))),         \
                       _mm256_load_si256((const __m256i *)(pw->s2 + 8 * (b))))
#define BD_Q6_AVX2(b) BD_Q6_(DG_DOT_AVX2, b)
#define BD_Q6_VNNI(b) BD_Q6_(DG_DOT_VNNI, b)

/* Block contributions (qdot.h's expressions). */
#define G_PLAIN(is) MULF(MULF(f0v, dx), CVT(is))
#define G_Q4_0(is) G_PLAIN(_mm256_sub_epi32(is, _mm256_slli_epi32(xs, 3)))
#define G_Q8_VNNI(is) G_PLAIN(_mm256_sub_epi32(is, _mm256_slli_epi32(xs, 7)))
#define G_Q4_1(is) _mm256_add_ps(G_PLAIN(is), MULF(MULF(f1v, dx), CVT(xs)))
#define G_Q4_K(is)                                                                         \
    _mm256_sub_ps(MULF(MULF(f0v, dx), CVT(_mm256_mullo_epi32(i0v, is))),                   \
                  MULF(MULF(f1v, dx), CVT(_mm256_mullo_epi32(i1v, xs))))

DG_QROWS(rows_q4_0_avx2, DG_TARGET_AVX2, BD_U_AVX2, G_Q4_0)
DG_QROWS(rows_q4_1_avx2, DG_TARGET_AVX2, BD_U_AVX2, G_Q4_1)
DG_QROWS(rows_q8_0_avx2, DG_TARGET_AVX2, BD_Q8_AVX2, G_PLAIN)
DG_QROWS(rows_q4_k_avx2, DG_TARGET_AVX2, BD_U_AVX2, G_Q4_K)
DG_QROWS(rows_q6_k_avx2, DG_TARGET_AVX2, BD_Q6_AVX2, G_PLAIN)
DG_QROWS(rows_q4_0_vnni, DG_TARGET_VNNI, BD_U_VNNI, G_Q4_0)
DG_QROWS(rows_q4_1_vnni, DG_TARGET_VNNI, BD_U_VNNI, G_Q4_1)
DG_QROWS(rows_q8_0_vnni, DG_TARGET_VNNI, BD_U_VNNI, G_Q8_VNNI)
DG_QROWS(rows_q4_k_vnni, DG_TARGET_VNNI, BD_U_VNNI, G_Q4_K)
DG_QROWS(rows_q6_k_vnni, DG_TARGET_VNNI, BD_Q6_VNNI, G_PLAIN)

typedef void (*rows_fn)(const prep *, const dg_q8_row *, int64_t, float *, int64_t);

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

void dg_qdot_rows(dg_dtype t, const uint8_t *w, const dg_q8_row *x, int64_t M, float *y,
                  int64_t ldy, void *scratch)
{
    if (M <= 0) return;
    int level = dg_qdot_level();
#ifdef DG_QDOT_X86
    rows_fn f = level != DG_QK_SCALAR ? rows_kernel(t, level == DG_QK_VNNI) : NULL;
    if (f) {
        int64_t nb = x[0].nb;
        prep p = prep_at(scratch, nb);
        if (t == DG_Q4_K || t == DG_Q6_K) prep_k(t, w, nb, &p);
        else prep_q32(t, w, nb, level == DG_QK_VNNI, &p);
        f(&p, x, M, y, ldy);
        return;
    }
#else
    (void)level, (void)scratch;
#endif
    for (int64_t m = 0; m < M; m++) y[m * ldy] = dg_qdot(t, w, &x[m]);
}
