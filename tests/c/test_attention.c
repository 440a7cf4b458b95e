/* The grouped, tiled attention kernel (dg_attend_group, lib/model/ops.h)
 * bitwise equal to the per-head kernel (dg_attend_head) for every (row,
 * head): outputs and softmax statistics, over head sizes with and without
 * the specialised bodies (64, 128; 24; 12, not a multiple of 8), GQA groups
 * of 1..8 heads, prefixes and own contexts that end inside, at and past the
 * 64-key tiles, query blocks of 1..9 rows (full and partial 4-row blocks),
 * strided K/V (a second KV head), repeated keys (tied maxima) and scores
 * that underflow exp. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/ops.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static float frand(void) /* [-1, 1) */
{
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (float)((double)(rs >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void fill(float *x, size_t n, float s)
{
    for (size_t i = 0; i < n; i++) x[i] = s * frand();
}

/* One configuration: KV heads 2 (the group attends KV head 1), G query heads. */
static void check(int D, int G, size_t Lp, size_t L0, size_t n, float qscale)
{
    size_t kv_stride = 2 * (size_t)D, q_stride = (size_t)G * D + 5, out_stride = q_stride + 3;
    size_t own = L0 + n, ctx = Lp + own;
    float *kp = malloc(sizeof(float) * (Lp + 1) * kv_stride);
    float *vp = malloc(sizeof(float) * (Lp + 1) * kv_stride);
    float *ko = malloc(sizeof(float) * own * kv_stride), *vo = malloc(sizeof(float) * own * kv_stride);
    float *q = malloc(sizeof(float) * n * q_stride);
    float *o1 = calloc(n * out_stride, sizeof(float)), *o2 = calloc(n * out_stride, sizeof(float));
    size_t st_stride = 2 * (size_t)G + 1;
    float *s1 = calloc(n * st_stride, sizeof(float)), *s2 = calloc(n * st_stride, sizeof(float));
    float *scores = malloc(sizeof(float) * ctx);
    float *scratch = malloc(sizeof(float) * dg_attend_group_scratch(ctx, D, G));
    fill(kp, (Lp + 1) * kv_stride, 1.0f), fill(vp, (Lp + 1) * kv_stride, 1.0f);
    fill(ko, own * kv_stride, 1.0f), fill(vo, own * kv_stride, 1.0f);
    fill(q, n * q_stride, qscale);
    /* repeated keys: equal scores, the max met more than once */
    if (own > 3) memcpy(ko + 3 * kv_stride, ko + 1 * kv_stride, sizeof(float) * kv_stride);
    if (Lp > 70) memcpy(kp + 70 * kv_stride, kp + 2 * kv_stride, sizeof(float) * kv_stride);
    const float *kph = Lp ? kp + D : NULL, *vph = Lp ? vp + D : NULL; /* KV head 1 */
    for (int g = 0; g < G; g++)
        dg_attend_head(o1 + (size_t)g * D, out_stride, s1 + 2 * (size_t)g, st_stride,
                       q + (size_t)g * D, q_stride, kph, vph, Lp, ko + D, vo + D, L0, n,
                       kv_stride, D, scores);
    dg_attend_group(o2, out_stride, s2, st_stride, q, q_stride, kph, vph, Lp, ko + D, vo + D, L0,
                    n, kv_stride, D, G, scratch);
    for (size_t i = 0; i < n; i++)
        for (int g = 0; g < G; g++) {
            const float *a = o1 + i * out_stride + (size_t)g * D, *b = o2 + i * out_stride + (size_t)g * D;
            for (int d = 0; d < D; d++)
                cr_assert(memcmp(&a[d], &b[d], 4) == 0,
                          "D=%d G=%d Lp=%zu L0=%zu n=%zu: row %zu head %d [%d]: group %.9g vs "
                          "head %.9g", D, G, Lp, L0, n, i, g, d, (double)b[d], (double)a[d]);
            cr_assert(memcmp(s1 + i * st_stride + 2 * g, s2 + i * st_stride + 2 * g, 8) == 0,
                      "D=%d G=%d Lp=%zu L0=%zu n=%zu: row %zu head %d: stats differ", D, G, Lp,
                      L0, n, i, g);
            cr_assert(isfinite(a[0]) && s1[i * st_stride + 2 * g + 1] >= 1.0f);
        }
    free(kp), free(vp), free(ko), free(vo), free(q), free(o1), free(o2), free(s1), free(s2);
    free(scores), free(scratch);
}

Test(attention, group_bitwise_equals_per_head)
{
    const int Ds[] = {64, 128, 24, 12};
    const int Gs[] = {1, 3, 4, 8};
    const size_t Lps[] = {0, 1, 64, 65, 200};
    const size_t L0s[] = {0, 5, 63, 130};
    const size_t ns[] = {1, 3, 4, 9};
    for (int di = 0; di < 4; di++)
        for (int gi = 0; gi < 4; gi++)
            for (int pi = 0; pi < 5; pi++)
                for (int li = 0; li < 4; li++)
                    for (int ni = 0; ni < 4; ni++)
                        if ((di + gi + pi + li + ni) % 3 == 0 || (ni == 3 && li == 3))
                            check(Ds[di], Gs[gi], Lps[pi], L0s[li], ns[ni], 1.0f);
}

/* Large queries: scores spread over hundreds, most exp() underflow to 0. */
Test(attention, group_bitwise_with_underflowing_scores)
{
    check(64, 3, 100, 40, 9, 60.0f);
    check(12, 4, 0, 70, 5, 60.0f);
}
