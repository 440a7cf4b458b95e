/* Pieces the quantized dot kernels share (qdot.c: one activation row,
 * qdot_rows.c: many): the kernel-set level, the final 8-lane sum and the x86
 * building blocks (block integer dots, horizontal sums). Internal to
 * lib/tensor. */
#ifndef DG_TENSOR_QDOT_SIMD_H
#define DG_TENSOR_QDOT_SIMD_H

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DG_QDOT_X86 1
#endif

/* The kernel set in use (dg_qdot_kernel's choice, made once). */
enum { DG_QK_SCALAR, DG_QK_AVX2, DG_QK_VNNI };
int dg_qdot_level(void);

/* y = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)): every kernel's last
 * step (qdot.h). */
static inline float dg_qdot_finish(const float a[8])
{
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

static inline uint16_t dg_ld_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

#ifdef DG_QDOT_X86
/* Eight int32 vectors -> one vector of their eight horizontal sums. */
#define DG_HSUM8(p, out)                                                              \
    do {                                                                              \
        __m256i t0_ = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]),                \
                                        _mm256_hadd_epi32(p[2], p[3]));               \
        __m256i t1_ = _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]),                \
                                        _mm256_hadd_epi32(p[6], p[7]));               \
        out = _mm256_add_epi32(_mm256_permute2x128_si256(t0_, t1_, 0x20),             \
                               _mm256_permute2x128_si256(t0_, t1_, 0x31));            \
    } while (0)

/* The int32x8 of 4-byte group sums of unsigned bytes u times signed bytes s
 * (exact: |u| <= 128 with AVX2's 16-bit pair sums, any u8 with VNNI). */
#define DG_DOT_AVX2(u, s) _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
#define DG_DOT_VNNI(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s)

#define DG_TARGET_AVX2 "avx2,f16c"
#define DG_TARGET_VNNI "avx2,f16c,avx512f,avx512vl,avx512vnni"
#endif

#endif
