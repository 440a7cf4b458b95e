/* Composed cartridges on the tiny random models (spec cartridges.md,
 * "Composition"): a one-part composition is bitwise the single cartridge; a
 * two-part composition split from one capture is bitwise the real prefill of
 * the concatenated prefix (training forward and serving trunk); one backward
 * reaches every part (equal to the single-cartridge gradient of the
 * concatenation, finite differences), sinks stay frozen; geometry errors. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cartridge.h"
#include "deg.h"
#include "tiny_model.h"

/* A cartridge of rows [first, first + n) of cartridge `src`. */
static deg_cartridge *slice(const deg_model *m, const deg_cartridge *src, size_t first, size_t n)
{
    geo g = geometry(m);
    size_t P = deg_cartridge_len(src);
    deg_cartridge *c = NULL;
    cr_assert_eq(deg_cartridge_init_random_vectors(m, n, 1, &c), DEG_OK);
    float *k = malloc(P * g.row * 4), *v = malloc(P * g.row * 4);
    for (int il = 0; il < g.L; il++) {
        deg_cartridge_get_rows(src, il, k, v);
        deg_cartridge_set_rows(c, il, k + first * g.row, v + first * g.row);
    }
    free(k); free(v);
    return c;
}

static const char *const TINY[] = {"tiny-llama", "tiny-qwen3"};

Test(cartridge_compose, split_capture_is_the_real_prefill)
{
    for (size_t mi = 0; mi < 2; mi++) {
        deg_model *m = tiny_load(TINY[mi]);
        geo g = geometry(m);
        enum { PA = 5, PB = 6, S = 7 };
        int32_t all[PA + PB + S];
        for (int i = 0; i < PA + PB + S; i++) all[i] = (int32_t)((i * 53 + 3) % (int)g.V);
        deg_trunk *t = NULL;
        cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
        float *ref = malloc((PA + PB + S) * g.V * 4), *lg = malloc(S * g.V * 4);
        cr_assert_eq(deg_trunk_prefill(t, all, PA + PB + S, ref, NULL), DEG_OK);
        deg_cartridge *whole = NULL;
        cr_assert_eq(deg_cartridge_init_tokens(m, all, PA + PB, &whole), DEG_OK);
        deg_cartridge *a = slice(m, whole, 0, PA), *b = slice(m, whole, PA, PB);
        const deg_cartridge *parts[2] = {a, b};
        cr_assert_eq(deg_cartridge_compose_check(parts, 2), DEG_OK);
        cr_assert_eq(deg_cartridge_compose_len(parts, 2), PA + PB);
        /* Training forward behind the composition. */
        cr_assert_eq(deg_cartridge_compose_eval(parts, 2, all + PA + PB, S, NULL, 0, NULL, lg),
                     DEG_OK, "%s", deg_errmsg());
        cr_expect(memcmp(lg, ref + (PA + PB) * g.V, S * g.V * 4) == 0,
                  "%s: composed forward differs from the real prefill", TINY[mi]);
        /* Serving: the trunk's K/V are the concatenated prefix, its forks
         * decode like the real prefill. */
        deg_trunk *ct = NULL;
        deg_fork *f = NULL;
        cr_assert_eq(deg_trunk_from_cartridges(parts, 2, &ct), DEG_OK);
        cr_assert_eq(deg_trunk_len(ct), PA + PB);
        cr_assert_eq(deg_fork_new(ct, &f), DEG_OK);
        cr_assert_eq(deg_fork_feed(f, all + PA + PB, S, lg), DEG_OK);
        cr_expect(memcmp(lg, ref + (PA + PB) * g.V, S * g.V * 4) == 0,
                  "%s: fork behind the composed trunk differs from the real prefill", TINY[mi]);
        deg_fork_free(f);
        deg_trunk_free(ct);
        /* A one-part composition is bitwise the single cartridge. */
        const deg_cartridge *one[1] = {whole};
        float *l1 = malloc(S * g.V * 4);
        float loss1 = 0, loss2 = 0;
        deg_distill_target tg[] = {{2, 4, -0.3f}, {5, 9, -1.0f}};
        cr_assert_eq(deg_cartridge_compose_eval(one, 1, all + PA + PB, S, tg, 2, &loss1, lg),
                     DEG_OK);
        cr_assert_eq(deg_cartridge_eval(whole, all + PA + PB, S, tg, 2, &loss2, l1), DEG_OK);
        cr_expect(memcmp(lg, l1, S * g.V * 4) == 0 && loss1 == loss2,
                  "%s: one-part composition differs from the cartridge", TINY[mi]);
        free(l1);
        deg_cartridge_free(a); deg_cartridge_free(b); deg_cartridge_free(whole);
        deg_trunk_free(t);
        free(ref); free(lg);
        deg_model_free(m);
    }
}

Test(cartridge_compose, one_backward_reaches_every_part)
{
    for (size_t mi = 0; mi < 2; mi++) {
        deg_model *m = tiny_load(TINY[mi]);
        geo g = geometry(m);
        enum { PA = 4, PB = 5, PC = 3, P = PA + PB + PC, T = 6 };
        deg_cartridge *whole = NULL;
        cr_assert_eq(deg_cartridge_init_random_vectors(m, P, 11, &whole), DEG_OK);
        deg_cartridge *a = slice(m, whole, 0, PA), *b = slice(m, whole, PA, PB),
                      *c = slice(m, whole, PA + PB, PC);
        deg_cartridge *parts[3] = {a, b, c};
        const deg_cartridge *cparts[3] = {a, b, c};
        int32_t ids[T] = {5, 77, 300, 12, 9, 41};
        deg_distill_target tg[] = {{1, 40, -0.5f}, {1, 41, -1.5f}, {3, 7, -0.1f},
                                   {4, 500, -0.7f}, {5, 2, -0.2f}};
        size_t NT = 5;
        float lw = 0, lc = 0;
        cr_assert_eq(deg_cartridge_backward(whole, ids, T, tg, NT, 0, &lw), DEG_OK);
        cr_assert_eq(deg_cartridge_compose_backward(parts, 3, ids, T, NULL, 0, tg, NT, 0, &lc),
                     DEG_OK, "%s", deg_errmsg());
        cr_expect_eq(lw, lc);
        /* Each part's gradient is its block of the concatenation's (the
         * same forward, so bitwise) and is not zero. */
        float *wk = malloc(P * g.row * 4), *wv = malloc(P * g.row * 4);
        float *pk = malloc(P * g.row * 4), *pv = malloc(P * g.row * 4);
        size_t off[3] = {0, PA, PA + PB}, len[3] = {PA, PB, PC};
        for (int il = 0; il < g.L; il++) {
            deg_cartridge_get_grads(whole, il, wk, wv);
            for (int i = 0; i < 3; i++) {
                deg_cartridge_get_grads(parts[i], il, pk, pv);
                cr_expect(memcmp(pk, wk + off[i] * g.row, len[i] * g.row * 4) == 0 &&
                              memcmp(pv, wv + off[i] * g.row, len[i] * g.row * 4) == 0,
                          "%s layer %d part %d gradient differs", TINY[mi], il, i);
                double s = 0;
                for (size_t j = 0; j < len[i] * g.row; j++) s += fabs(pk[j]) + fabs(pv[j]);
                cr_expect_gt(s, 0.0, "%s layer %d part %d got no gradient", TINY[mi], il, i);
            }
        }
        /* Finite differences through the composition into part c (the last
         * part: its rows sit furthest from the tokens' positions). */
        deg_cartridge_get_grads(c, 0, pk, pv);
        double gm = 0, worst = 0;
        for (size_t j = 0; j < PC * g.row; j++) gm = fmax(gm, fmax(fabs(pk[j]), fabs(pv[j])));
        float *k = malloc(PC * g.row * 4), *v = malloc(PC * g.row * 4);
        for (int probe = 0; probe < 8; probe++) {
            size_t i = (size_t)(probe * 37 + 5) % (PC * g.row);
            int isv = probe & 1;
            deg_cartridge_get_rows(c, 0, k, v);
            float *x = isv ? v : k, x0 = x[i], h = 1e-2f, lp, lm;
            x[i] = x0 + h; deg_cartridge_set_rows(c, 0, k, v);
            deg_cartridge_compose_eval(cparts, 3, ids, T, tg, NT, &lp, NULL);
            x[i] = x0 - h; deg_cartridge_set_rows(c, 0, k, v);
            deg_cartridge_compose_eval(cparts, 3, ids, T, tg, NT, &lm, NULL);
            x[i] = x0; deg_cartridge_set_rows(c, 0, k, v);
            double num = ((double)lp - lm) / (2.0 * h), ana = isv ? pv[i] : pk[i];
            worst = fmax(worst, fabs(num - ana) / gm);
        }
        cr_log_info("%s composed gradcheck: max |fd - analytic| / max|grad| = %.3g", TINY[mi],
                    worst);
        cr_expect_lt(worst, 2e-2);
        /* Adam on every part: trainable rows move, each part's sink row 0
         * stays bitwise what it was. */
        deg_adam_params ap = deg_adam_params_default();
        for (int i = 0; i < 3; i++) {
            float *k0 = malloc(len[i] * g.row * 4), *k1 = malloc(len[i] * g.row * 4);
            deg_cartridge_get_rows(parts[i], 1, k0, NULL);
            cr_assert_eq(deg_cartridge_adam_step(parts[i], &ap), DEG_OK);
            deg_cartridge_get_rows(parts[i], 1, k1, NULL);
            cr_expect(memcmp(k0, k1, g.row * 4) == 0, "part %d: sink moved", i);
            cr_expect(memcmp(k0 + g.row, k1 + g.row, (len[i] - 1) * g.row * 4) != 0,
                      "part %d: trainable rows did not move", i);
            free(k0); free(k1);
        }
        /* Packed composed backward == packed single backward of the whole. */
        size_t seg[2] = {3, 3};
        deg_distill_target tp[] = {{1, 40, -0.5f}, {2, 7, -0.1f}, {4, 500, -0.7f},
                                   {5, 2, -0.2f}};
        for (int i = 0; i < 3; i++) deg_cartridge_zero_grads(parts[i]);
        deg_cartridge_zero_grads(whole);
        for (int il = 0; il < g.L; il++) { /* whole := the parts' updated rows */
            for (int i = 0; i < 3; i++) {
                deg_cartridge_get_rows(parts[i], il, pk + off[i] * g.row, pv + off[i] * g.row);
            }
            deg_cartridge_set_rows(whole, il, pk, pv);
        }
        cr_assert_eq(deg_cartridge_backward_packed(whole, ids, T, seg, 2, tp, 4, 0, &lw), DEG_OK);
        cr_assert_eq(deg_cartridge_compose_backward(parts, 3, ids, T, seg, 2, tp, 4, 0, &lc),
                     DEG_OK);
        cr_expect_eq(lw, lc);
        deg_cartridge_get_grads(whole, g.L - 1, wk, wv);
        deg_cartridge_get_grads(b, g.L - 1, pk, pv);
        cr_expect(memcmp(pk, wk + PA * g.row, PB * g.row * 4) == 0, "packed gradient differs");
        free(k); free(v); free(wk); free(wv); free(pk); free(pv);
        for (int i = 0; i < 3; i++) deg_cartridge_free(parts[i]);
        deg_cartridge_free(whole);
        deg_model_free(m);
    }
}

Test(cartridge_compose, geometry_and_input_errors)
{
    deg_model *l = tiny_load("tiny-llama"), *q = tiny_load("tiny-qwen3"),
              *l2 = tiny_load("tiny-llama");
    deg_cartridge *a = NULL, *b = NULL, *c = NULL;
    cr_assert_eq(deg_cartridge_init_random_vectors(l, 3, 1, &a), DEG_OK);
    cr_assert_eq(deg_cartridge_init_random_vectors(q, 3, 1, &b), DEG_OK);
    cr_assert_eq(deg_cartridge_init_random_vectors(l2, 4, 1, &c), DEG_OK);
    const deg_cartridge *ab[2] = {a, b}, *ac[2] = {a, c}, *an[2] = {a, NULL};
    cr_expect_eq(deg_cartridge_compose_check(ab, 2), DEG_ERR_MISMATCH);
    cr_expect(strstr(deg_errmsg(), "part 1") != NULL, "%s", deg_errmsg());
    /* Another handle of the same weights composes. */
    cr_expect_eq(deg_cartridge_compose_check(ac, 2), DEG_OK, "%s", deg_errmsg());
    cr_expect_eq(deg_cartridge_compose_check(an, 2), DEG_ERR_ARG);
    cr_expect_eq(deg_cartridge_compose_check(ab, 0), DEG_ERR_ARG);
    deg_trunk *t = NULL;
    cr_expect_eq(deg_trunk_from_cartridges(ab, 2, &t), DEG_ERR_MISMATCH);
    cr_expect_null(t);
    int32_t ids[3] = {1, 2, 99999};
    cr_expect_eq(deg_cartridge_compose_eval(ac, 2, ids, 3, NULL, 0, NULL, NULL), DEG_ERR_RANGE);
    deg_cartridge *parts[2] = {a, c};
    deg_distill_target tg = {0, 1, -0.1f};
    geo g = geometry(l);
    float *g0 = malloc(3 * g.row * 4);
    cr_expect_eq(deg_cartridge_compose_backward(parts, 2, ids, 2, NULL, 0, &tg, 1, 0, NULL),
                 DEG_ERR_RANGE);
    deg_cartridge_get_grads(a, 0, g0, NULL);
    for (size_t i = 0; i < 3 * g.row; i++) cr_expect_eq(g0[i], 0.0f);
    free(g0);
    deg_cartridge_free(a); deg_cartridge_free(b); deg_cartridge_free(c);
    deg_model_free(l); deg_model_free(q); deg_model_free(l2);
}
