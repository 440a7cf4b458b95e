/* Cartridges on Gemma 4 (tiny random gemma4_text models of
 * tests/goldens/gen_gemma4_goldens.py): per-layer K/V geometry (row_len per
 * layer; none on KV-sharing layers), the serving equivalence gate (also
 * with the MoE feed-forward) with a
 * prefix longer than the sliding window (a sliding layer's query sees the
 * cartridge exactly as a real prefix, within its window), save/load, a
 * two-part composition split from one capture (the window cuts through the
 * composed prefix), and the training forward's refusal (gemma4 has no layer
 * backward). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cartridge.h"
#include "cartridge_testutil.h"
#include "deg.h"
#include "tiny_model.h"

enum { P = 20, S = 7 }; /* P > the sliding windows (8, 6) */

/* Logits of S suffix tokens fed to a fork of trunk t into lg [S, V]. */
static void fork_logits(deg_trunk *t, const int32_t *ids, float *lg)
{
    deg_fork *f = NULL;
    cr_assert_eq(deg_fork_new(t, &f), DEG_OK);
    cr_assert_eq(deg_fork_feed(f, ids, S, lg), DEG_OK, "%s", deg_errmsg());
    deg_fork_free(f);
}

/* ref [(n + S), V]: the real prefill of n prefix tokens + the suffix. */
static float *real_prefill(deg_model *m, const int32_t *all, size_t n, size_t V)
{
    deg_trunk *t = NULL;
    float *ref = malloc((n + S) * V * 4);
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, all, n + S, ref, NULL), DEG_OK);
    deg_trunk_free(t);
    return ref;
}

static void served_equals(const deg_cartridge *const *parts, size_t n_parts, const int32_t *suf,
                          const float *want, size_t V, const char *what)
{
    deg_trunk *ct = NULL;
    float *lg = malloc(S * V * 4);
    cr_assert_eq(deg_trunk_from_cartridges(parts, n_parts, &ct), DEG_OK, "%s", deg_errmsg());
    fork_logits(ct, suf, lg);
    cr_expect(memcmp(lg, want, S * V * 4) == 0, "%s: logits differ from the real prefill", what);
    deg_trunk_free(ct);
    free(lg);
}

static void gemma4_gate(const char *name, const size_t *row_len)
{
    deg_model *m = tiny_load(name);
    geo g = geometry(m);
    int32_t all[2 * P + S];
    for (int i = 0; i < 2 * P + S; i++) all[i] = (int32_t)((i * 37 + 11) % (int)g.V);
    float *ref = real_prefill(m, all, P, g.V);
    deg_cartridge *c = NULL;
    cr_assert_eq(deg_cartridge_init_tokens(m, all, P, &c), DEG_OK, "%s", deg_errmsg());
    for (int il = 0; il < g.L; il++) {
        cr_assert_eq(deg_cartridge_row_len(c, il), row_len[il], "%s layer %d row_len %zu", name,
                     il, deg_cartridge_row_len(c, il));
        if (row_len[il]) continue; /* a KV-sharing layer: no rows to read */
        cr_expect_eq(deg_cartridge_get_rows(c, il, NULL, NULL), DEG_ERR_ARG);
        cr_expect(strstr(deg_errmsg(), "KV sharing") != NULL, "%s", deg_errmsg());
    }
    const deg_cartridge *one[1] = {c};
    served_equals(one, 1, all + P, ref + P * g.V, g.V, name);
    /* the training forward refuses the architecture (no layer backward) */
    float *lg = malloc(S * g.V * 4);
    cr_assert_eq(deg_cartridge_eval(c, all + P, S, NULL, 0, NULL, lg), DEG_ERR_UNSUPPORTED);
    free(lg);
    /* save -> load: the per-layer shapes round-trip, serving is unchanged */
    char *path = cart_tmp_path("g4cart", name);
    deg_cartridge *d = NULL;
    cr_assert_eq(deg_cartridge_save(c, path, 1), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_cartridge_load(m, path, &d), DEG_OK, "%s", deg_errmsg());
    one[0] = d;
    served_equals(one, 1, all + P, ref + P * g.V, g.V, "loaded");
    unlink(path);
    free(path);
    deg_cartridge_free(d);
    deg_cartridge_free(c);
    free(ref);
    /* Two parts from one capture of 2P tokens split at P (part B's rows sit at
     * positions P..2P-1) = the real prefill of the 2P tokens. */
    ref = real_prefill(m, all, 2 * P, g.V);
    deg_cartridge *whole = NULL, *parts[2] = {NULL, NULL};
    cr_assert_eq(deg_cartridge_init_tokens(m, all, 2 * P, &whole), DEG_OK);
    for (int j = 0; j < 2; j++)
        cr_assert_eq(deg_cartridge_init_random_vectors(m, P, (uint64_t)j + 1, &parts[j]), DEG_OK,
                     "%s", deg_errmsg());
    for (int il = 0; il < g.L; il++) {
        size_t row = deg_cartridge_row_len(whole, il);
        if (!row) continue;
        float *k = malloc(2 * P * row * 4), *v = malloc(2 * P * row * 4);
        cr_assert_eq(deg_cartridge_get_rows(whole, il, k, v), DEG_OK);
        for (int j = 0; j < 2; j++)
            cr_assert_eq(deg_cartridge_set_rows(parts[j], il, k + j * P * row, v + j * P * row),
                         DEG_OK);
        free(k);
        free(v);
    }
    served_equals((const deg_cartridge *const *)parts, 2, all + 2 * P, ref + 2 * P * g.V, g.V,
                  "two composed parts");
    deg_cartridge_free(parts[0]);
    deg_cartridge_free(parts[1]);
    deg_cartridge_free(whole);
    free(ref);
    deg_model_free(m);
}

Test(cartridge_gemma4, equivalence_gate)
{
    /* tiny-gemma4: sliding 2 KV heads x 16, full 1 x 32 (k_eq_v) */
    const size_t g4[] = {32, 32, 32, 32, 32};
    gemma4_gate("tiny-gemma4", g4);
    /* -kvshare: sliding 2 x 16, full 2 x 32; layers 2, 3 read layers 0, 1's rows */
    const size_t kvs[] = {32, 64, 0, 0};
    gemma4_gate("tiny-gemma4-kvshare", kvs);
    /* -moe: sliding 2 x 16, full 2 x 32; routed experts beside every MLP */
    const size_t moe[] = {32, 64, 64};
    gemma4_gate("tiny-gemma4-moe", moe);
}
