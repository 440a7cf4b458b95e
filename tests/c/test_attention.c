/* The one-pass attention kernel (dg_attend_group, lib/model/ops.h): a
 * (row, head)'s output and softmax statistics are bitwise the
 * same however the call is composed (all rows at once, one row at a time as
 * in decode, blocks of 3; all G heads of the KV head together or one by
 * one; the row's context split into prefix and own rows anywhere, inside a
 * 64-key tile or at its edge), and within 2e-6 of a double-precision
 * two-pass softmax. Head sizes with and without the specialised bodies (64,
 * 128; 24; 12, not a multiple of 8), GQA groups of 1..8, contexts ending
 * inside, at and past tiles, strided K/V (a second KV head), repeated keys
 * (tied maxima), scores that underflow exp, and a 5,000-key context in the
 * fixed scratch (ASan checks it stays inside). */
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

/* ------------------------------------------------------------- attention */

/* N keys/values of KV head 1 of 2 (stride 2D), G query heads per row
 * (q_stride G*D + 5), rows at global positions 0..N-1. */
typedef struct {
    int D, G;
    size_t N, kv_stride, q_stride;
    float *k, *v, *q;
} att_case;

static att_case make_case(int D, int G, size_t N, float qscale)
{
    att_case c = {D, G, N, 2 * (size_t)D, (size_t)G * D + 5, NULL, NULL, NULL};
    c.k = malloc(sizeof(float) * N * c.kv_stride);
    c.v = malloc(sizeof(float) * N * c.kv_stride);
    c.q = malloc(sizeof(float) * N * c.q_stride);
    fill(c.k, N * c.kv_stride, 1.0f), fill(c.v, N * c.kv_stride, 1.0f);
    fill(c.q, N * c.q_stride, qscale);
    /* repeated keys: equal scores, the max met more than once */
    if (N > 3) memcpy(c.k + 3 * c.kv_stride, c.k + c.kv_stride, sizeof(float) * c.kv_stride);
    if (N > 70) memcpy(c.k + 70 * c.kv_stride, c.k + 2 * c.kv_stride, sizeof(float) * c.kv_stride);
    return c;
}

static void free_case(att_case *c)
{
    free(c->k), free(c->v), free(c->q);
}

/* Rows t0 .. t0+n-1 of the case, heads g0 .. g0+G-1, with the first Lp keys
 * given as the prefix and keys Lp.. as own rows (Lp <= t0): out [N, G*D],
 * stats [N, 2G] at the rows' global positions. */
static void run(const att_case *c, size_t Lp, size_t t0, size_t n, int g0, int G, float *out,
                float *stats)
{
    int D = c->D;
    size_t os = (size_t)c->G * D, ss = 2 * (size_t)c->G;
    float *scratch = malloc(sizeof(float) * dg_attend_group_scratch(D, G));
    const float *k1 = c->k + D, *v1 = c->v + D; /* KV head 1 */
    dg_attend_group(out + t0 * os + (size_t)g0 * D, os, stats + t0 * ss + 2 * (size_t)g0, ss,
                    c->q + t0 * c->q_stride + (size_t)g0 * D, c->q_stride, Lp ? k1 : NULL,
                    Lp ? v1 : NULL, Lp, k1 + Lp * c->kv_stride, v1 + Lp * c->kv_stride, t0 - Lp,
                    n, c->kv_stride, D, G, scratch);
    free(scratch);
}

/* out/stats of row t, head g against the reference (all rows, all heads,
 * Lp = 0, one call): bitwise. */
static void expect_same(const att_case *c, const float *o1, const float *s1, const float *o2,
                        const float *s2, size_t t, int g, const char *what)
{
    size_t os = (size_t)c->G * c->D, ss = 2 * (size_t)c->G;
    const float *a = o1 + t * os + (size_t)g * c->D, *b = o2 + t * os + (size_t)g * c->D;
    cr_assert(memcmp(a, b, sizeof(float) * c->D) == 0,
              "D=%d G=%d N=%zu %s: row %zu head %d differs (%.9g vs %.9g)", c->D, c->G, c->N,
              what, t, g, (double)b[0], (double)a[0]);
    cr_assert(memcmp(s1 + t * ss + 2 * g, s2 + t * ss + 2 * g, 8) == 0,
              "D=%d G=%d N=%zu %s: row %zu head %d: stats differ", c->D, c->G, c->N, what, t, g);
}

/* Double-precision two-pass softmax of row t, head g. */
static void expect_close(const att_case *c, const float *o, const float *st, size_t t, int g,
                         double tol)
{
    int D = c->D;
    const float *q = c->q + t * c->q_stride + (size_t)g * D;
    double *s = malloc(sizeof(double) * (t + 1)), mx = -INFINITY, sum = 0.0;
    for (size_t j = 0; j <= t; j++) {
        const float *kj = c->k + D + j * c->kv_stride;
        double d = 0.0;
        for (int e = 0; e < D; e++) d += (double)q[e] * kj[e];
        s[j] = d / sqrt((double)D);
        if (s[j] > mx) mx = s[j];
    }
    for (size_t j = 0; j <= t; j++) sum += s[j] = exp(s[j] - mx);
    size_t os = (size_t)c->G * D, ss = 2 * (size_t)c->G;
    for (int e = 0; e < D; e++) {
        double r = 0.0;
        for (size_t j = 0; j <= t; j++) r += s[j] * c->v[D + j * c->kv_stride + e];
        r /= sum;
        double got = o[t * os + (size_t)g * D + e];
        cr_assert(fabs(got - r) <= tol + tol * fabs(r),
                  "D=%d G=%d row %zu head %d [%d]: %.9g vs double %.9g", D, c->G, t, g, e, got, r);
    }
    double m = st[t * ss + 2 * g], l = st[t * ss + 2 * g + 1];
    cr_assert(fabs(m - mx) <= 1e-5 * (1 + fabs(mx)), "row max %.9g vs %.9g", m, mx);
    cr_assert(fabs(l * exp(m - mx) - sum) <= 2e-6 * sum, "sum %.9g vs %.9g", l * exp(m - mx), sum);
    free(s);
}

static void check(int D, int G, size_t N, float qscale, int accurate)
{
    att_case c = make_case(D, G, N, qscale);
    size_t no = N * (size_t)G * D, ns = N * 2 * (size_t)G;
    float *o1 = calloc(no, 4), *s1 = calloc(ns, 4), *o2 = calloc(no, 4), *s2 = calloc(ns, 4);
    run(&c, 0, 0, N, 0, G, o1, s1); /* prefill: every row and head in one call */
    if (accurate)
        for (size_t t = 0; t < N; t += 1 + t / 7)
            for (int g = 0; g < G; g++) expect_close(&c, o1, s1, t, g, 2e-6);
    /* decode: one row at a time; each head alone */
    for (size_t t = 0; t < N; t++) run(&c, 0, t, 1, 0, G, o2, s2);
    for (size_t t = 0; t < N; t++)
        for (int g = 0; g < G; g++) expect_same(&c, o1, s1, o2, s2, t, g, "one row per call");
    memset(o2, 0, no * 4);
    for (int g = 0; g < G; g++) run(&c, 0, 0, N, g, 1, o2, s2);
    for (size_t t = 0; t < N; t++)
        for (int g = 0; g < G; g++) expect_same(&c, o1, s1, o2, s2, t, g, "one head per call");
    /* blocks of 3 rows over a prefix of Lp rows, Lp inside, at and past tiles */
    const size_t Lps[] = {1, 5, 63, 64, 65, 130, 200};
    for (size_t li = 0; li < sizeof Lps / sizeof Lps[0]; li++) {
        size_t Lp = Lps[li];
        if (Lp >= N) continue;
        memset(o2, 0, no * 4);
        for (size_t t = Lp; t < N; t += 3) run(&c, Lp, t, N - t < 3 ? N - t : 3, 0, G, o2, s2);
        for (size_t t = Lp; t < N; t++)
            for (int g = 0; g < G; g++) expect_same(&c, o1, s1, o2, s2, t, g, "prefix + blocks");
    }
    free(o1), free(s1), free(o2), free(s2);
    free_case(&c);
}

Test(attention, row_bitwise_whatever_the_call)
{
    const int Ds[] = {64, 128, 24, 12};
    const int Gs[] = {1, 3, 4, 8};
    const size_t Ns[] = {1, 9, 64, 65, 140};
    for (int di = 0; di < 4; di++)
        for (int gi = 0; gi < 4; gi++)
            for (int ni = 0; ni < 5; ni++)
                if ((di + gi + ni) % 2 == 0 || ni == 4) check(Ds[di], Gs[gi], Ns[ni], 1.0f, 1);
}

Test(attention, long_context_past_many_tiles)
{
    check(64, 3, 300, 1.0f, 1);
    check(24, 2, 261, 1.0f, 1);
}

/* Large queries: scores spread over hundreds, most exp() underflow to 0, the
 * running max moves often. */
Test(attention, bitwise_with_underflowing_scores)
{
    check(64, 3, 149, 60.0f, 0);
    check(12, 4, 75, 60.0f, 0);
}

/* The scratch does not grow with the context: one decode row at 5,000 keys
 * in dg_attend_group_scratch(D, G) floats (ASan: no access past it). */
Test(attention, fixed_scratch_long_context)
{
    int D = 64, G = 3;
    cr_assert_eq(dg_attend_group_scratch(D, G),
                 (size_t)DG_ATTN_TILE + (size_t)DG_ATTN_ROWS * G * D);
    att_case c = make_case(D, G, 5000, 1.0f);
    size_t no = c.N * (size_t)G * D, ns = c.N * 2 * (size_t)G;
    float *o = calloc(no, 4), *s = calloc(ns, 4);
    run(&c, 1000, 4999, 1, 0, G, o, s);
    for (int g = 0; g < G; g++) expect_close(&c, o, s, 4999, g, 1e-5);
    free(o), free(s);
    free_case(&c);
}
