/* Cartridges on Gemma 4 (tiny random gemma4_text models of
 * tests/goldens/gen_gemma4_goldens.py): per-layer K/V geometry (row_len per
 * layer; none on KV-sharing layers), the serving equivalence gate (also
 * with the MoE feed-forward) with a
 * prefix longer than the sliding window (a sliding layer's query sees the
 * cartridge exactly as a real prefix, within its window), save/load, a
 * two-part composition split from one capture (the window cuts through the
 * composed prefix), the training forward behind the cartridge (bitwise the
 * real prefill), the transformers golden of a training step (logits, loss
 * and the gradients into every layer's rows, tests/goldens/
 * gen_gemma4_train_goldens.py), and training that lowers the loss. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cartridge.h"
#include "cartridge_testutil.h"
#include <math.h>
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
    /* the training forward behind the cartridge: the same layer code */
    float *lg = malloc(S * g.V * 4);
    cr_assert_eq(deg_cartridge_eval(c, all + P, S, NULL, 0, NULL, lg), DEG_OK, "%s",
                 deg_errmsg());
    cr_expect(memcmp(lg, ref + P * g.V, S * g.V * 4) == 0,
              "%s: the training forward behind the cartridge differs from the real prefill",
              name);
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

/* The transformers golden (gen_gemma4_train_goldens.py: the prefill's cache
 * entries as autograd leaves): the capture, logits and loss behind the
 * cartridge, the gradients into every row-holding layer's rows (row 0 is
 * frozen in deg: rows 1..). */
static void check_golden(const char *name)
{
    char path[512], key[64];
    snprintf(path, sizeof path, "%s/cartridge/%s.safetensors", TINY_GOLDENS, name);
    dg_safetensors *st = NULL;
    cr_assert_eq(dg_safetensors_open(path, &st), DEG_OK, "%s: %s", path, deg_errmsg());
    deg_model *m = tiny_load(name);
    geo g = geometry(m);
    size_t P, T, NT;
    const int32_t *prefix = golden_tensor(st, "prefix_ids", &P), *ids = golden_tensor(st, "ids", &T);
    const int32_t *tpos = golden_tensor(st, "tgt_pos", &NT), *ttok = golden_tensor(st, "tgt_tok", NULL);
    const float *tlp = golden_tensor(st, "tgt_lp", NULL), *glog = golden_tensor(st, "logits", NULL);
    const double *gloss = golden_tensor(st, "loss", NULL);
    deg_distill_target *tg = malloc(NT * sizeof *tg);
    for (size_t i = 0; i < NT; i++) tg[i] = (deg_distill_target){tpos[i], ttok[i], tlp[i]};
    deg_cartridge *c = NULL;
    cr_assert_eq(deg_cartridge_init_tokens(m, prefix, P, &c), DEG_OK, "%s", deg_errmsg());
    double e_cap = 0, e_rows = 0;
    int n_layers = 0;
    for (int il = 0; il < g.L; il++) {
        size_t row = deg_cartridge_row_len(c, il), n = P * row, gn;
        if (!row) continue;
        float *k = malloc(n * 4), *v = malloc(n * 4);
        deg_cartridge_get_rows(c, il, k, v);
        snprintf(key, sizeof key, "rows_k.%d", il);
        const float *rk = golden_tensor(st, key, &gn);
        cr_assert_eq(gn, n, "%s: %s has %zu floats, the layer's rows %zu", name, key, gn, n);
        snprintf(key, sizeof key, "rows_v.%d", il);
        const float *rv = golden_tensor(st, key, NULL);
        e_cap = fmax(e_cap, fmax(rel_err_ff(k, rk, n), rel_err_ff(v, rv, n)));
        deg_cartridge_set_rows(c, il, rk, rv);
        free(k);
        free(v);
    }
    float *logits = malloc(T * g.V * 4), loss = 0, loss2 = 0;
    cr_assert_eq(deg_cartridge_eval(c, ids, T, tg, NT, &loss, logits), DEG_OK, "%s",
                 deg_errmsg());
    double el = rel_err_ff(logits, glog, T * g.V), eloss = fabs(loss - gloss[0]) / fabs(gloss[0]);
    cr_assert_eq(deg_cartridge_backward(c, ids, T, tg, NT, 0, &loss2), DEG_OK, "%s",
                 deg_errmsg());
    for (int il = 0; il < g.L; il++) {
        size_t row = deg_cartridge_row_len(c, il), n = P * row;
        if (!row) continue;
        float *k = malloc(n * 4), *v = malloc(n * 4);
        deg_cartridge_get_grads(c, il, k, v);
        snprintf(key, sizeof key, "grad_k.%d", il);
        const double *gk = golden_tensor(st, key, NULL);
        snprintf(key, sizeof key, "grad_v.%d", il);
        const double *gv = golden_tensor(st, key, NULL);
        double e = fmax(rel_err_fd(k + row, gk + row, n - row), rel_err_fd(v + row, gv + row, n - row));
        cr_log_info("%s layer %d: grad rows rel err %.3g", name, il, e);
        e_rows = fmax(e_rows, e);
        n_layers++;
        free(k);
        free(v);
    }
    cr_log_info("%s vs transformers: capture rel err %.3g, logits %.3g, loss %.7f vs %.7f, "
                "grad rows %.3g (%d layers)", name, e_cap, el, (double)loss, gloss[0], e_rows,
                n_layers);
    cr_expect_lt(e_cap, 1e-4);
    cr_expect_lt(el, 2e-4);
    cr_expect_lt(eloss, 1e-4);
    cr_expect_lt(e_rows, 1e-4);
    free(logits);
    free(tg);
    deg_cartridge_free(c);
    deg_model_free(m);
    dg_safetensors_close(st);
}

Test(cartridge_gemma4, transformers_golden) { check_golden("tiny-gemma4"); }
Test(cartridge_gemma4, transformers_golden_kvshare) { check_golden("tiny-gemma4-kvshare"); }
Test(cartridge_gemma4, transformers_golden_moe) { check_golden("tiny-gemma4-moe"); }

/* Training end to end: distillation targets from the real prefill of a
 * prefix, a random-vector cartridge trained toward them; the loss falls. */
Test(cartridge_gemma4, training_lowers_loss, .timeout = 300)
{
    static const char *const names[] = {"tiny-gemma4", "tiny-gemma4-kvshare", "tiny-gemma4-moe"};
    for (int mi = 0; mi < 3; mi++) {
        deg_model *m = tiny_load(names[mi]);
        geo g = geometry(m);
        enum { NP = 12, NS = 10 };
        int32_t all[NP + NS];
        for (int i = 0; i < NP + NS; i++) all[i] = (int32_t)((i * 53 + 7) % (int)g.V);
        float *ref = malloc((NP + NS) * g.V * 4);
        deg_trunk *t = NULL;
        cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
        cr_assert_eq(deg_trunk_prefill(t, all, NP + NS, ref, NULL), DEG_OK);
        deg_trunk_free(t);
        deg_distill_target tg[NS * 4];
        size_t n_tg = 0;
        for (int i = 1; i < NS; i++) {
            size_t n = 0;
            cr_assert_eq(deg_distill_targets_from_logits(m, ref + (NP + i - 1) * g.V, i, 4,
                                                         0.99f, tg + n_tg, &n), DEG_OK);
            n_tg += n;
        }
        deg_cartridge *c = NULL;
        cr_assert_eq(deg_cartridge_init_random_vectors(m, 8, 5, &c), DEG_OK, "%s", deg_errmsg());
        deg_adam_params ap = deg_adam_params_default();
        ap.lr = 2e-2f;
        float first = 0, last = 0;
        for (int step = 0; step < 20; step++) {
            float l = 0;
            cr_assert_eq(deg_cartridge_train_step(c, all + NP, NS, tg, n_tg, &ap, step % 2, &l),
                         DEG_OK, "%s", deg_errmsg());
            if (step == 0) first = l;
            last = l;
        }
        cr_log_info("%s: distillation loss %.4f -> %.4f over 20 steps", names[mi], (double)first,
                    (double)last);
        cr_expect_lt(last, 0.8f * first, "%s: %g -> %g", names[mi], (double)first, (double)last);
        deg_cartridge_free(c);
        free(ref);
        deg_model_free(m);
    }
}
