/* Sampler: PRNG reference vectors, greedy ties, top-k/top-p kept sets,
 * temperature, empirical frequencies, seeded reproducibility, bad input. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "deg.h"
#include "model/sample.h"

static deg_sample_params params(float t, int32_t k, float p)
{
    deg_sample_params sp = deg_sample_params_default();
    sp.temperature = t;
    sp.top_k = k;
    sp.top_p = p;
    return sp;
}

/* Reference outputs of splitmix64.c seeded with 1234567 (Rosetta Code,
 * "Pseudo-random numbers/Splitmix64"). */
Test(sample, splitmix64_reference_vector)
{
    static const uint64_t want[5] = {6457827717110365317ull, 3203168211198807973ull,
                                     9817491932198370423ull, 4593380528125082431ull,
                                     16408922859458223821ull};
    uint64_t st = 1234567;
    for (int i = 0; i < 5; i++) cr_assert_eq(dg_splitmix64(&st), want[i], "output %d", i);
}

/* xoshiro256** 1.0 from the state {1, 2, 3, 4}: first outputs of the
 * reference xoshiro256starstar.c. */
Test(sample, xoshiro256ss_reference_vector)
{
    static const uint64_t want[4] = {11520ull, 0ull, 1509978240ull, 1215971899390074240ull};
    dg_rng r = {{1, 2, 3, 4}};
    for (int i = 0; i < 4; i++) cr_assert_eq(dg_rng_next(&r), want[i], "output %d", i);
}

Test(sample, seeding_and_uniform)
{
    dg_rng a, b;
    dg_rng_seed(&a, 42);
    uint64_t st = 42;
    for (int i = 0; i < 4; i++) cr_assert_eq(a.s[i], dg_splitmix64(&st));
    dg_rng_seed(&a, 7);
    b = a;
    uint64_t x = dg_rng_next(&b);
    cr_assert_eq(dg_rng_uniform(&a), (double)(x >> 11) / 9007199254740992.0);
    for (int i = 0; i < 100000; i++) {
        double u = dg_rng_uniform(&a);
        cr_assert(u >= 0.0 && u < 1.0);
    }
}

Test(sample, argmax_ties_to_lowest_id_and_skips_nan)
{
    float l[5] = {1.0f, 3.0f, NAN, 3.0f, 2.0f};
    cr_assert_eq(dg_sample_argmax(l, 5), 1);
    float m[3] = {NAN, -1.0f, -1.0f};
    cr_assert_eq(dg_sample_argmax(m, 3), 1);
    float n[2] = {NAN, NAN};
    cr_assert_eq(dg_sample_argmax(n, 2), -1);
    cr_assert_eq(dg_sample_argmax(l, 0), -1);
}

Test(sample, greedy_draws_no_random_number)
{
    dg_sampler *s;
    cr_assert_eq(dg_sampler_new(4, &s), DEG_OK);
    float l[4] = {0.5f, 2.0f, 2.0f, -1.0f};
    dg_rng r, r0;
    dg_rng_seed(&r, 9);
    r0 = r;
    deg_sample_params sp = params(0.0f, 0, 1.0f);
    int32_t id = -1;
    cr_assert_eq(dg_sample(s, l, &sp, &r, &id), DEG_OK);
    cr_assert_eq(id, 1);
    cr_assert_eq(memcmp(&r, &r0, sizeof r), 0);
    /* top_k / top_p do not change greedy. */
    sp.top_k = 3;
    sp.top_p = 0.1f;
    cr_assert_eq(dg_sample(s, l, &sp, NULL, &id), DEG_OK);
    cr_assert_eq(id, 1);
    dg_sampler_free(s);
}

/* Distribution p = [0.4, 0.1, 0.3, 0.2] as logits log(p): candidate order
 * ids 0, 2, 3, 1. */
static void check_kept(dg_sampler *s, const float *l, float t, int32_t k, float p,
                       size_t n_want, const int32_t *ids_want, const double *p_want)
{
    deg_sample_params sp = params(t, k, p);
    size_t n = 0;
    const int32_t *ids;
    const double *probs;
    cr_assert_eq(dg_sample_candidates(s, l, &sp, &n, &ids, &probs), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(n, n_want, "top_k %d top_p %g: kept %zu, want %zu", k, (double)p, n, n_want);
    for (size_t j = 0; j < n; j++) {
        cr_assert_eq(ids[j], ids_want[j], "top_k %d top_p %g: kept[%zu]", k, (double)p, j);
        cr_assert(fabs(probs[j] - p_want[j]) < 1e-6, "top_k %d top_p %g: p[%zu] = %.9f want %.9f",
                  k, (double)p, j, probs[j], p_want[j]);
    }
}

Test(sample, top_k_and_top_p_keep_known_sets)
{
    dg_sampler *s;
    cr_assert_eq(dg_sampler_new(4, &s), DEG_OK);
    float l[4] = {logf(0.4f), logf(0.1f), logf(0.3f), logf(0.2f)};

    /* no truncation: all four in candidate order */
    check_kept(s, l, 1.0f, 0, 1.0f, 4, (int32_t[]){0, 2, 3, 1},
               (double[]){0.4, 0.3, 0.2, 0.1});
    /* top-k 2: {0, 2} renormalised to 4/7, 3/7 */
    check_kept(s, l, 1.0f, 2, 1.0f, 2, (int32_t[]){0, 2}, (double[]){4.0 / 7, 3.0 / 7});
    /* top-k larger than the vocabulary keeps all */
    check_kept(s, l, 1.0f, 10, 1.0f, 4, (int32_t[]){0, 2, 3, 1},
               (double[]){0.4, 0.3, 0.2, 0.1});
    /* top-p alone: mass before each candidate 0, .4, .7, .9 */
    check_kept(s, l, 1.0f, 0, 0.39f, 1, (int32_t[]){0}, (double[]){1.0});
    check_kept(s, l, 1.0f, 0, 0.42f, 2, (int32_t[]){0, 2}, (double[]){4.0 / 7, 3.0 / 7});
    check_kept(s, l, 1.0f, 0, 0.71f, 3, (int32_t[]){0, 2, 3},
               (double[]){4.0 / 9, 3.0 / 9, 2.0 / 9});
    check_kept(s, l, 1.0f, 0, 0.95f, 4, (int32_t[]){0, 2, 3, 1},
               (double[]){0.4, 0.3, 0.2, 0.1});
    /* top-p over the top-k survivors: top-3 renormalised is 4/9, 3/9, 2/9,
     * so 0.42 already stops after the first (0.444 >= 0.42), while over the
     * whole row it keeps two (above). */
    check_kept(s, l, 1.0f, 3, 0.42f, 1, (int32_t[]){0}, (double[]){1.0});
    check_kept(s, l, 1.0f, 3, 0.5f, 2, (int32_t[]){0, 2}, (double[]){4.0 / 7, 3.0 / 7});
    dg_sampler_free(s);
}

Test(sample, temperature_scales_logits)
{
    dg_sampler *s;
    cr_assert_eq(dg_sampler_new(3, &s), DEG_OK);
    float l[3] = {2.0f, 1.0f, 0.0f};
    /* T = 2: weights e^1, e^0.5, e^0 */
    double z = exp(1.0) + exp(0.5) + 1.0;
    check_kept(s, l, 2.0f, 0, 1.0f, 3, (int32_t[]){0, 1, 2},
               (double[]){exp(1.0) / z, exp(0.5) / z, 1.0 / z});
    /* top-p is applied after temperature: at T = 0.5 (weights e^4, e^2, 1)
     * p0 = 0.867 so top_p 0.8 keeps one; at T = 2 p0 = 0.507, p0 + p1 = 0.814
     * so it keeps two. */
    check_kept(s, l, 0.5f, 0, 0.8f, 1, (int32_t[]){0}, (double[]){1.0});
    check_kept(s, l, 2.0f, 0, 0.8f, 2, (int32_t[]){0, 1},
               (double[]){exp(1.0) / (exp(1.0) + exp(0.5)), exp(0.5) / (exp(1.0) + exp(0.5))});
    dg_sampler_free(s);
}

Test(sample, ties_ordered_by_id_and_minus_inf_excluded)
{
    dg_sampler *s;
    cr_assert_eq(dg_sampler_new(5, &s), DEG_OK);
    float l[5] = {1.0f, 5.0f, -INFINITY, 5.0f, 0.0f};
    double e = exp(-4.0), z = 2.0 + e + 1.0 * exp(-5.0);
    check_kept(s, l, 1.0f, 0, 1.0f, 4, (int32_t[]){1, 3, 0, 4},
               (double[]){1.0 / z, 1.0 / z, e / z, exp(-5.0) / z});
    check_kept(s, l, 1.0f, 1, 1.0f, 1, (int32_t[]){1}, (double[]){1.0});
    /* top_k beyond the finite entries keeps the finite ones only */
    check_kept(s, l, 1.0f, 5, 1.0f, 4, (int32_t[]){1, 3, 0, 4},
               (double[]){1.0 / z, 1.0 / z, e / z, exp(-5.0) / z});
    dg_sampler_free(s);
}

/* Candidate order and kept set by an independent route: qsort the whole row. */
static const float *g_row;
static int cmp_desc(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (g_row[x] != g_row[y]) return g_row[x] > g_row[y] ? -1 : 1;
    return x < y ? -1 : 1;
}

Test(sample, large_vocab_matches_full_sort)
{
    const int32_t n = 49152;
    float *l = malloc(n * sizeof *l);
    int32_t *order = malloc(n * sizeof *order);
    double *w = malloc(n * sizeof *w);
    dg_rng r;
    dg_rng_seed(&r, 123);
    for (int32_t i = 0; i < n; i++) {
        /* heavy ties: values on a coarse grid */
        l[i] = (float)((int)(dg_rng_uniform(&r) * 400.0)) * 0.05f - 10.0f;
        order[i] = i;
    }
    l[777] = 12.0f; /* a clear winner */
    g_row = l;
    qsort(order, n, sizeof *order, cmp_desc);

    dg_sampler *s;
    cr_assert_eq(dg_sampler_new(n, &s), DEG_OK);
    const struct { float t; int32_t k; float p; } cases[] = {
        {0.7f, 0, 0.9f}, {1.0f, 40, 0.95f}, {1.3f, 0, 1.0f}, {0.9f, 1000, 1.0f}, {2.0f, 0, 0.5f}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int32_t k = cases[c].k ? cases[c].k : n;
        double inv_t = 1.0 / cases[c].t, z = 0.0;
        for (int32_t j = 0; j < k; j++) z += w[j] = exp(((double)l[order[j]] - 12.0) * inv_t);
        int32_t keep = 0;
        double before = 0.0, kept = 0.0;
        if (cases[c].p < 1.0f) {
            while (keep < k && before < cases[c].p * z) before += w[keep++];
            kept = before;
        } else {
            keep = k;
            kept = z;
        }
        deg_sample_params sp = params(cases[c].t, cases[c].k, cases[c].p);
        size_t nk;
        const int32_t *ids;
        const double *probs;
        cr_assert_eq(dg_sample_candidates(s, l, &sp, &nk, &ids, &probs), DEG_OK);
        cr_assert_eq(nk, (size_t)keep, "case %zu: kept %zu want %d", c, nk, keep);
        for (int32_t j = 0; j < keep; j++) {
            cr_assert_eq(ids[j], order[j], "case %zu: kept[%d]", c, j);
            cr_assert(fabs(probs[j] - w[j] / kept) < 1e-9 * (1.0 + w[j] / kept));
        }
    }
    dg_sampler_free(s);
    free(l);
    free(order);
    free(w);
}

/* dg_sample picks the first kept candidate whose cumulative probability
 * exceeds u, u being the stream's next uniform: replay it by hand, including
 * the lazy path (no top-k, no top-p). */
Test(sample, draw_follows_the_stream)
{
    const int32_t n = 1000;
    float l[1000];
    dg_rng g;
    dg_rng_seed(&g, 5);
    for (int32_t i = 0; i < n; i++) l[i] = (float)(dg_rng_uniform(&g) * 6.0);
    dg_sampler *s, *s2;
    cr_assert_eq(dg_sampler_new(n, &s), DEG_OK);
    cr_assert_eq(dg_sampler_new(n, &s2), DEG_OK);
    const struct { float t; int32_t k; float p; } cases[] = {
        {1.0f, 0, 1.0f}, {0.8f, 50, 1.0f}, {1.2f, 0, 0.8f}, {1.0f, 30, 0.6f}};
    for (size_t c = 0; c < 4; c++) {
        deg_sample_params sp = params(cases[c].t, cases[c].k, cases[c].p);
        dg_rng r, replay;
        dg_rng_seed(&r, 1000 + c);
        replay = r;
        for (int d = 0; d < 300; d++) {
            int32_t id;
            cr_assert_eq(dg_sample(s, l, &sp, &r, &id), DEG_OK);
            double u = dg_rng_uniform(&replay);
            size_t nk;
            const int32_t *ids;
            const double *probs;
            cr_assert_eq(dg_sample_candidates(s2, l, &sp, &nk, &ids, &probs), DEG_OK);
            double cum = 0.0;
            size_t j = 0;
            for (; j + 1 < nk; j++) {
                cum += probs[j];
                if (cum > u) break;
            }
            cr_assert_eq(id, ids[j], "case %zu draw %d: got %d want %d (u %.17g)", c, d, id,
                         ids[j], u);
        }
        cr_assert_eq(memcmp(&r, &replay, sizeof r), 0, "one draw per sample");
    }
    dg_sampler_free(s);
    dg_sampler_free(s2);
}

static void frequencies(float t, int32_t k, float p, const double *want, int n_draws)
{
    float l[4] = {logf(0.4f), logf(0.1f), logf(0.3f), logf(0.2f)};
    dg_sampler *s;
    cr_assert_eq(dg_sampler_new(4, &s), DEG_OK);
    deg_sample_params sp = params(t, k, p);
    dg_rng r;
    dg_rng_seed(&r, 2024);
    int count[4] = {0};
    for (int d = 0; d < n_draws; d++) {
        int32_t id;
        cr_assert_eq(dg_sample(s, l, &sp, &r, &id), DEG_OK);
        cr_assert(id >= 0 && id < 4);
        count[id]++;
    }
    for (int i = 0; i < 4; i++) {
        double f = (double)count[i] / n_draws;
        /* 5 standard deviations of a binomial frequency */
        double tol = 5.0 * sqrt(want[i] * (1.0 - want[i]) / n_draws) + 1e-12;
        cr_assert(fabs(f - want[i]) <= tol, "T %g k %d p %g: id %d freq %.5f want %.5f", (double)t,
                  k, (double)p, i, f, want[i]);
    }
    dg_sampler_free(s);
}

Test(sample, empirical_frequencies)
{
    frequencies(1.0f, 0, 1.0f, (double[]){0.4, 0.1, 0.3, 0.2}, 200000);
    frequencies(1.0f, 2, 1.0f, (double[]){4.0 / 7, 0.0, 3.0 / 7, 0.0}, 200000);
    frequencies(1.0f, 0, 0.71f, (double[]){4.0 / 9, 0.0, 3.0 / 9, 2.0 / 9}, 200000);
    /* T = 0.5 squares the probabilities: 16, 1, 9, 4 (/30) */
    frequencies(0.5f, 0, 1.0f, (double[]){16.0 / 30, 1.0 / 30, 9.0 / 30, 4.0 / 30}, 200000);
}

Test(sample, same_seed_same_sequence)
{
    const int32_t n = 300;
    float l[300];
    for (int32_t i = 0; i < n; i++) l[i] = (float)((i * 37) % 101) * 0.05f;
    dg_sampler *s;
    cr_assert_eq(dg_sampler_new(n, &s), DEG_OK);
    deg_sample_params sp = params(0.9f, 40, 0.9f);
    int32_t a[200], b[200], c[200];
    dg_rng ra, rb, rc;
    dg_rng_seed(&ra, 77);
    dg_rng_seed(&rb, 77);
    dg_rng_seed(&rc, 78);
    for (int i = 0; i < 200; i++) {
        cr_assert_eq(dg_sample(s, l, &sp, &ra, &a[i]), DEG_OK);
        cr_assert_eq(dg_sample(s, l, &sp, &rb, &b[i]), DEG_OK);
        cr_assert_eq(dg_sample(s, l, &sp, &rc, &c[i]), DEG_OK);
    }
    cr_assert_eq(memcmp(a, b, sizeof a), 0);
    cr_assert_neq(memcmp(a, c, sizeof a), 0);
    dg_sampler_free(s);
}

Test(sample, bad_input_is_an_error)
{
    dg_sampler *s = NULL;
    cr_assert_eq(dg_sampler_new(0, &s), DEG_ERR_ARG);
    cr_assert_null(s);
    cr_assert_eq(dg_sampler_new(3, &s), DEG_OK);
    dg_rng r;
    dg_rng_seed(&r, 1);
    int32_t id;
    float ok[3] = {0.0f, 1.0f, 2.0f};
    const deg_sample_params bad[] = {params(-1.0f, 0, 1.0f), params(NAN, 0, 1.0f),
                                     params(INFINITY, 0, 1.0f), params(1.0f, -1, 1.0f),
                                     params(1.0f, 0, 0.0f), params(1.0f, 0, 1.5f),
                                     params(1.0f, 0, NAN)};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(dg_sample(s, ok, &bad[i], &r, &id), DEG_ERR_ARG, "case %zu", i);
        cr_assert(strstr(deg_errmsg(), "sample params") != NULL);
    }
    deg_sample_params sp = params(1.0f, 0, 1.0f);
    cr_assert_eq(dg_sample(s, ok, &sp, NULL, &id), DEG_ERR_ARG);
    float nan_row[3] = {0.0f, NAN, 1.0f};
    float inf_row[3] = {0.0f, INFINITY, 1.0f};
    float dead_row[3] = {-INFINITY, -INFINITY, -INFINITY};
    cr_assert_eq(dg_sample(s, nan_row, &sp, &r, &id), DEG_ERR_NUMERIC);
    cr_assert(strstr(deg_errmsg(), "logit 1 is NaN") != NULL, "%s", deg_errmsg());
    cr_assert_eq(dg_sample(s, inf_row, &sp, &r, &id), DEG_ERR_NUMERIC);
    cr_assert_eq(dg_sample(s, dead_row, &sp, &r, &id), DEG_ERR_NUMERIC);
    deg_sample_params greedy = params(0.0f, 0, 1.0f);
    cr_assert_eq(dg_sample(s, nan_row, &greedy, &r, &id), DEG_ERR_NUMERIC);
    size_t nk;
    const int32_t *ids;
    const double *probs;
    cr_assert_eq(dg_sample_candidates(s, ok, &greedy, &nk, &ids, &probs), DEG_ERR_ARG);
    dg_sampler_free(s);
    dg_sampler_free(NULL);
}
