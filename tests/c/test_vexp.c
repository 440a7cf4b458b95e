/* The softmax's exp (dg_expf / dg_exp_sub_sum, lib/model/vexp.h): the
 * scalar, SSE2, AVX2 and AVX-512 paths give the same bits (values and sums,
 * odd lengths) over a sweep of the whole float line (every 257th bit
 * pattern); the error vs exp() in double and vs libm's expf, in ulps, is
 * logged and bounded; special values. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "model/vexp.h"

static int64_t ord(float f) /* float bits to a line on which ulps are steps */
{
    int32_t b;
    memcpy(&b, &f, 4);
    return b < 0 ? -(int64_t)(b & 0x7fffffff) : (int64_t)b;
}

static int64_t ulps(float a, float b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : INT32_MAX;
    int64_t d = ord(a) - ord(b);
    return d < 0 ? -d : d;
}

Test(vexp, paths_bitwise_and_accurate)
{
    enum { B = 4099 };
    static float x[B], p[DG_VEXP_N][B];
    int64_t max_ref = 0, max_libm = 0, max_ref_libm = 0;
    float at_ref = 0, at_libm = 0;
    uint64_t n_checked = 0;
    /* every 257th bit pattern of the float line, both signs */
    uint32_t u = 0;
    int done = 0;
    while (!done) {
        size_t n = 0;
        for (; n < B; n++) {
            float f;
            memcpy(&f, &u, 4);
            x[n] = f;
            if (u > 0xFFFFFFFFu - 257u) { done = 1, n++; break; }
            u += 257u;
        }
        float sums[DG_VEXP_N];
        for (int path = 0; path < DG_VEXP_N; path++) {
            if (!dg_vexp_supported(path)) continue;
            sums[path] = dg_exp_sub_sum_path(path, p[path], x, 0.0f, n);
        }
        for (int path = 1; path < DG_VEXP_N; path++) {
            if (!dg_vexp_supported(path)) continue;
            for (size_t i = 0; i < n; i++)
                cr_assert(memcmp(&p[path][i], &p[0][i], 4) == 0,
                          "exp(%a): path %d gives %a, scalar %a", (double)x[i], path,
                          (double)p[path][i], (double)p[0][i]);
            /* (a NaN's payload may come from either operand of an add) */
            cr_assert(memcmp(&sums[path], &sums[0], 4) == 0 || (isnan(sums[path]) && isnan(sums[0])),
                      "sum: path %d gives %a, scalar %a", path, (double)sums[path],
                      (double)sums[0]);
        }
        for (size_t i = 0; i < n; i++) {
            float e = dg_expf(x[i]);
            cr_assert(memcmp(&e, &p[0][i], 4) == 0 || (isnan(e) && isnan(p[0][i])));
            float ref = (float)exp((double)x[i]), lm = expf(x[i]);
            int64_t d = ulps(e, ref), dl = ulps(e, lm), dr = ulps(lm, ref);
            if (d > max_ref) max_ref = d, at_ref = x[i];
            if (dl > max_libm) max_libm = dl, at_libm = x[i];
            if (dr > max_ref_libm) max_ref_libm = dr;
        }
        n_checked += n;
    }
    cr_log_info("dg_expf over %llu inputs: max %lld ulp vs exp() in double (at %a), %lld vs "
                "libm expf (at %a); libm expf vs exp(): %lld ulp",
                (unsigned long long)n_checked, (long long)max_ref, (double)at_ref,
                (long long)max_libm, (double)at_libm, (long long)max_ref_libm);
    cr_assert_leq(max_ref, 1, "dg_expf %lld ulp from exp() at %a", (long long)max_ref,
                  (double)at_ref);
    cr_assert_leq(max_libm, 2, "dg_expf %lld ulp from libm at %a", (long long)max_libm,
                  (double)at_libm);
    /* the paths were all run */
    cr_assert(n_checked > 16000000u);
}

Test(vexp, special_values)
{
    cr_assert_eq(dg_expf(0.0f), 1.0f);
    cr_assert_eq(dg_expf(-0.0f), 1.0f);
    cr_assert(isinf(dg_expf(INFINITY)) && dg_expf(INFINITY) > 0);
    cr_assert_eq(dg_expf(-INFINITY), 0.0f);
    cr_assert(isnan(dg_expf(NAN)));
    cr_assert(isinf(dg_expf(88.73f)));
    cr_assert(isfinite(dg_expf(88.72f)) && dg_expf(88.72f) > 3.3e38f);
    cr_assert_eq(dg_expf(-104.0f), 0.0f);
    float sub = dg_expf(-103.0f); /* a subnormal */
    cr_assert(sub > 0.0f && sub < 0x1p-126f && ulps(sub, (float)exp(-103.0)) <= 1);
    float s[3] = {NAN, 1.0f, -INFINITY}, p[3];
    for (int path = 0; path < DG_VEXP_N; path++) {
        if (!dg_vexp_supported(path)) continue;
        dg_exp_sub_sum_path(path, p, s, 0.0f, 3);
        cr_assert(isnan(p[0]) && p[1] == dg_expf(1.0f) && p[2] == 0.0f, "path %d", path);
    }
}
