/* Cartridge equivalence gate on the real SmolLM2-135M-Instruct Q4_1 GGUF:
 * an untrained corpus-init cartridge (p = 256) must reproduce the real
 * prefill of the same tokens for a 128-token suffix (max |delta logit| = 0,
 * greedy agreement on every row), through the training forward and through
 * a fork of deg_trunk_from_cartridge; plus greedy generation behind both.
 * Also one training step with and without checkpointing (bitwise-equal
 * gradients), the two-part composition gate and composed training (every
 * part's gradient, sinks frozen). Skipped when the model file
 * is absent: $DEG_MODEL or
 * ${DEG_CACHE:-~/.cache/deg}/models/SmolLM2-135M-Instruct.Q4_1.gguf. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cartridge.h"
#include "deg.h"
#include "model_path.h"
#include "model/arch.h"
#include "tokenizer/tokenizer.h"

#define P 256
#define S 128

static char model_path[1024];

/* The real SmolLM2 model (skips the test when the GGUF is not found) and its info. */
static deg_model *load_smollm2(deg_model_info *info)
{
    if (!tu_default_model(model_path, sizeof model_path))
        cr_skip_test("SmolLM2 GGUF not found at %s (set DEG_MODEL)", model_path);
    deg_model *m = NULL;
    cr_assert_eq(deg_model_load(model_path, &m), DEG_OK, "%s", deg_errmsg());
    deg_model_get_info(m, info);
    return m;
}

static char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

/* The corpus wrapped as deg_cartridge_init_corpus does (ChatML system). */
static size_t wrapped_ids(const deg_model *m, const char *text, size_t len, int32_t *ids,
                          size_t cap)
{
    const dg_tokenizer *tok = m->tok;
    size_t k = 0, n = 0;
    cr_assert_eq(dg_tokenizer_encode(tok, "<|im_start|>system\n", 19, 1, ids, cap, &n), DEG_OK);
    k += n;
    cr_assert_eq(dg_tokenizer_encode(tok, text, len, 0, ids + k, cap - k, &n), DEG_OK);
    k += n;
    return k;
}

Test(cartridge_smollm2, equivalence_gate, .timeout = 1200)
{
    deg_model_info info;
    deg_model *m = load_smollm2(&info);
    size_t V = (size_t)info.n_vocab;
    size_t clen, slen;
    char *corpus = read_text(DEG_SOURCE_ROOT "/doc/ARCHITECTURE.md", &clen);
    char *sfx = read_text(DEG_SOURCE_ROOT "/README.md", &slen);
    int32_t *all = malloc((clen + slen + 64) * sizeof *all);
    size_t nc = wrapped_ids(m, corpus, clen, all, clen + 64);
    cr_assert_geq(nc, P, "corpus too short: %zu tokens", nc);
    size_t ns = 0;
    cr_assert_eq(dg_tokenizer_encode(m->tok, sfx, slen, 0, all + P, slen + 64, &ns), DEG_OK);
    cr_assert_geq(ns, S);

    deg_cartridge *c = NULL;
    cr_assert_eq(deg_cartridge_init_corpus(m, corpus, clen, P, &c), DEG_OK, "%s", deg_errmsg());
    /* init_corpus captured exactly the first P wrapped tokens. */
    deg_cartridge *c2 = NULL;
    cr_assert_eq(deg_cartridge_init_tokens(m, all, P, &c2), DEG_OK);
    size_t n = (size_t)P * info.n_head_kv * info.head_dim;
    float *a = malloc(n * 4), *b = malloc(n * 4);
    for (int il = 0; il < info.n_layer; il++) {
        deg_cartridge_get_rows(c, il, a, NULL);
        deg_cartridge_get_rows(c2, il, b, NULL);
        cr_assert(memcmp(a, b, n * 4) == 0, "init_corpus != capture of the wrapped tokens");
    }
    deg_cartridge_free(c2);

    /* Real prefill of prefix + suffix. */
    deg_trunk *t = NULL;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    float *ref = malloc((size_t)(P + S) * V * 4);
    cr_assert_eq(deg_trunk_prefill(t, all, P + S, ref, NULL), DEG_OK);
    float *lg = malloc((size_t)S * V * 4);
    const char *what[2] = {"training forward", "fork of deg_trunk_from_cartridge"};
    for (int path = 0; path < 2; path++) {
        deg_trunk *ct = NULL;
        deg_fork *f = NULL;
        if (path == 0) {
            cr_assert_eq(deg_cartridge_eval(c, all + P, S, NULL, 0, NULL, lg), DEG_OK);
        } else {
            cr_assert_eq(deg_trunk_from_cartridge(c, &ct), DEG_OK);
            cr_assert_eq(deg_fork_new(ct, &f), DEG_OK);
            cr_assert_eq(deg_fork_feed(f, all + P, S, lg), DEG_OK);
        }
        double maxd = 0;
        int agree = 0;
        for (size_t i = 0; i < S; i++) {
            const float *x = lg + i * V, *y = ref + (P + i) * V;
            size_t ax = 0, ay = 0;
            for (size_t j = 0; j < V; j++) {
                double d = fabs((double)x[j] - y[j]);
                if (!(d <= maxd)) maxd = d;
                if (x[j] > x[ax]) ax = j;
                if (y[j] > y[ay]) ay = j;
            }
            agree += ax == ay;
        }
        cr_log_info("SmolLM2 equivalence gate (p = %d, suffix %d, %s): max |delta logit| = %g, "
                    "greedy agreement %d/%d", P, S, what[path], maxd, agree, S);
        cr_expect_eq(maxd, 0.0);
        cr_expect_eq(agree, S);
        if (f) {
            /* Greedy generation behind the cartridge vs behind the real prefix. */
            deg_fork *g = NULL;
            deg_trunk *rt = NULL;
            cr_assert_eq(deg_trunk_new(m, &rt), DEG_OK);
            cr_assert_eq(deg_trunk_prefill(rt, all, P, NULL, NULL), DEG_OK);
            cr_assert_eq(deg_fork_new(rt, &g), DEG_OK);
            cr_assert_eq(deg_fork_feed(g, all + P, S, NULL), DEG_OK);
            deg_sample_params sp = deg_sample_params_default();
            sp.max_tokens = 32;
            int32_t o1[32], o2[32];
            size_t n1 = 0, n2 = 0;
            deg_fork *fs[1] = {f};
            int32_t *outs1[1] = {o1};
            cr_assert_eq(deg_forks_generate(fs, 1, &sp, outs1, &n1, NULL), DEG_OK, "%s",
                         deg_errmsg());
            fs[0] = g;
            int32_t *outs2[1] = {o2};
            cr_assert_eq(deg_forks_generate(fs, 1, &sp, outs2, &n2, NULL), DEG_OK);
            cr_expect_eq(n1, n2);
            cr_expect(memcmp(o1, o2, n1 * 4) == 0, "greedy generation differs");
            cr_log_info("SmolLM2 gate: greedy generation behind the cartridge = behind the real "
                        "prefix for %zu tokens", n1);
            deg_fork_free(g);
            deg_trunk_free(rt);
            deg_fork_free(f);
            deg_trunk_free(ct);
        }
    }
    free(a); free(b); free(lg); free(ref); free(all); free(corpus); free(sfx);
    deg_trunk_free(t);
    deg_cartridge_free(c);
    deg_model_free(m);
}

/* The composition gate on the real model (spec "Composition"): two parts
 * split from one capture of 2P wrapped tokens (part B holds the rows at
 * positions P..2P-1), composed, reproduce the real prefill of the 2P tokens
 * on the next S tokens: max |delta logit| = 0, greedy S/S; a one-part
 * composition is bitwise the single cartridge. */
Test(cartridge_smollm2, composition_gate, .timeout = 1200)
{
    deg_model_info info;
    deg_model *m = load_smollm2(&info);
    size_t V = (size_t)info.n_vocab, row = (size_t)info.n_head_kv * info.head_dim;
    size_t clen;
    char *corpus = read_text(DEG_SOURCE_ROOT "/doc/ARCHITECTURE.md", &clen);
    int32_t *all = malloc((clen + 64) * sizeof *all);
    size_t nc = wrapped_ids(m, corpus, clen, all, clen + 64);
    cr_assert_geq(nc, 2 * P + S, "corpus too short: %zu tokens", nc);
    deg_cartridge *whole = NULL, *parts[2] = {NULL, NULL};
    cr_assert_eq(deg_cartridge_init_tokens(m, all, 2 * P, &whole), DEG_OK, "%s", deg_errmsg());
    float *k = malloc(2 * P * row * 4), *v = malloc(2 * P * row * 4);
    for (int j = 0; j < 2; j++) {
        cr_assert_eq(deg_cartridge_init_random_vectors(m, P, 1, &parts[j]), DEG_OK);
        for (int il = 0; il < info.n_layer; il++) {
            deg_cartridge_get_rows(whole, il, k, v);
            deg_cartridge_set_rows(parts[j], il, k + j * P * row, v + j * P * row);
        }
    }
    deg_trunk *t = NULL;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    float *ref = malloc((size_t)(2 * P + S) * V * 4), *lg = malloc((size_t)S * V * 4);
    cr_assert_eq(deg_trunk_prefill(t, all, 2 * P + S, ref, NULL), DEG_OK);
    const deg_cartridge *cp[2] = {parts[0], parts[1]};
    deg_trunk *ct = NULL;
    deg_fork *f = NULL;
    cr_assert_eq(deg_trunk_from_cartridges(cp, 2, &ct), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_fork_new(ct, &f), DEG_OK);
    cr_assert_eq(deg_fork_feed(f, all + 2 * P, S, lg), DEG_OK);
    double maxd = 0;
    int agree = 0;
    for (size_t i = 0; i < S; i++) {
        const float *x = lg + i * V, *y = ref + (2 * P + i) * V;
        size_t ax = 0, ay = 0;
        for (size_t j = 0; j < V; j++) {
            double d = fabs((double)x[j] - y[j]);
            if (!(d <= maxd)) maxd = d;
            if (x[j] > x[ax]) ax = j;
            if (y[j] > y[ay]) ay = j;
        }
        agree += ax == ay;
    }
    cr_log_info("SmolLM2 composition gate (2 parts x p = %d, suffix %d): max |delta logit| = "
                "%g, greedy agreement %d/%d", P, S, maxd, agree, S);
    cr_expect_eq(maxd, 0.0);
    cr_expect_eq(agree, S);
    /* One part == the single cartridge (training forward). */
    float *l1 = malloc((size_t)S * V * 4);
    const deg_cartridge *one[1] = {parts[0]};
    cr_assert_eq(deg_cartridge_compose_eval(one, 1, all + P, S, NULL, 0, NULL, lg), DEG_OK);
    cr_assert_eq(deg_cartridge_eval(parts[0], all + P, S, NULL, 0, NULL, l1), DEG_OK);
    cr_expect(memcmp(lg, l1, (size_t)S * V * 4) == 0, "one-part composition != cartridge");
    deg_fork_free(f);
    deg_trunk_free(ct);
    deg_trunk_free(t);
    free(k); free(v); free(ref); free(lg); free(l1); free(all); free(corpus);
    deg_cartridge_free(parts[0]); deg_cartridge_free(parts[1]); deg_cartridge_free(whole);
    deg_model_free(m);
}

/* The training steps' inputs: a prefix of np token ids, a sequence of T ids,
 * and two distillation targets per position 1..T-1 (the next id at -0.2, id 42
 * at -2.5); tg: room for 2 (T - 1). Returns the target count. */
static size_t step_inputs(int32_t *pre, int np, int32_t *ids, int T, deg_distill_target *tg)
{
    size_t nt = 0;
    for (int i = 0; i < np; i++) pre[i] = 1000 + 37 * i;
    for (int i = 0; i < T; i++) ids[i] = 2000 + 53 * i;
    for (int pos = 1; pos < T; pos++) {
        tg[nt++] = (deg_distill_target){pos, ids[pos], -0.2f};
        tg[nt++] = (deg_distill_target){pos, 42, -2.5f};
    }
    return nt;
}

/* Composed training on the real model (spec "Composition"): one backward
 * through two parts split from one capture of 2CP tokens gives each part
 * exactly its block of the whole capture's gradient (the same forward), not
 * zero in any layer; an Adam step on each part moves its trainable rows and
 * leaves its sink row (row 0: part B's is capture row CP) bitwise as it was
 * in every layer, K and V. */
Test(cartridge_smollm2, composed_backward_reaches_every_part, .timeout = 1200)
{
    deg_model_info info;
    deg_model *m = load_smollm2(&info);
    enum { CP = 32, T = 24 };
    size_t row = (size_t)info.n_head_kv * info.head_dim, n = CP * row;
    int32_t cap[2 * CP], ids[T];
    deg_distill_target tg[2 * (T - 1)];
    size_t nt = step_inputs(cap, 2 * CP, ids, T, tg);
    deg_cartridge *whole = NULL, *parts[2] = {NULL, NULL};
    cr_assert_eq(deg_cartridge_init_tokens(m, cap, 2 * CP, &whole), DEG_OK, "%s", deg_errmsg());
    float *wk = malloc(2 * n * 4), *wv = malloc(2 * n * 4);
    float *k0 = malloc(n * 4), *v0 = malloc(n * 4), *k1 = malloc(n * 4), *v1 = malloc(n * 4);
    for (int j = 0; j < 2; j++) {
        cr_assert_eq(deg_cartridge_init_random_vectors(m, CP, 1, &parts[j]), DEG_OK);
        for (int il = 0; il < info.n_layer; il++) {
            deg_cartridge_get_rows(whole, il, wk, wv);
            deg_cartridge_set_rows(parts[j], il, wk + j * n, wv + j * n);
        }
    }
    float lw = 0, lc = 0;
    cr_assert_eq(deg_cartridge_backward(whole, ids, T, tg, nt, 0, &lw), DEG_OK, "%s",
                 deg_errmsg());
    cr_assert_eq(deg_cartridge_compose_backward(parts, 2, ids, T, NULL, 0, tg, nt, 0, &lc),
                 DEG_OK, "%s", deg_errmsg());
    cr_expect_eq(lw, lc, "composed loss %g, whole %g", (double)lc, (double)lw);
    for (int il = 0; il < info.n_layer; il++) {
        deg_cartridge_get_grads(whole, il, wk, wv);
        for (int j = 0; j < 2; j++) {
            deg_cartridge_get_grads(parts[j], il, k0, v0);
            cr_expect(memcmp(k0, wk + j * n, n * 4) == 0 && memcmp(v0, wv + j * n, n * 4) == 0,
                      "layer %d part %d: gradient is not the whole capture's block", il, j);
            double s = 0;
            for (size_t i = row; i < n; i++) s += fabs(k0[i]) + fabs(v0[i]);
            cr_expect(s > 0 && isfinite(s), "layer %d part %d: no gradient (%g)", il, j, s);
        }
    }
    deg_adam_params ap = deg_adam_params_default();
    for (int j = 0; j < 2; j++) {
        float **bk = malloc(info.n_layer * sizeof *bk), **bv = malloc(info.n_layer * sizeof *bv);
        for (int il = 0; il < info.n_layer; il++) {
            bk[il] = malloc(n * 4); bv[il] = malloc(n * 4);
            deg_cartridge_get_rows(parts[j], il, bk[il], bv[il]);
        }
        cr_assert_eq(deg_cartridge_adam_step(parts[j], &ap), DEG_OK, "%s", deg_errmsg());
        int moved = 0;
        for (int il = 0; il < info.n_layer; il++) {
            deg_cartridge_get_rows(parts[j], il, k1, v1);
            cr_expect(memcmp(bk[il], k1, row * 4) == 0 && memcmp(bv[il], v1, row * 4) == 0,
                      "part %d layer %d: the sink row moved", j, il);
            moved += memcmp(bk[il] + row, k1 + row, (n - row) * 4) != 0 &&
                     memcmp(bv[il] + row, v1 + row, (n - row) * 4) != 0;
            free(bk[il]); free(bv[il]);
        }
        cr_expect_eq(moved, info.n_layer, "part %d: trainable rows moved in %d of %d layers",
                     j, moved, info.n_layer);
        free(bk); free(bv);
    }
    cr_log_info("SmolLM2 composed backward (2 parts x p = %d, %d tokens): loss %.4f = the "
                "whole capture's, every part's gradient its block, sinks frozen", CP, T,
                (double)lc);
    free(wk); free(wv); free(k0); free(v0); free(k1); free(v1);
    deg_cartridge_free(parts[0]); deg_cartridge_free(parts[1]); deg_cartridge_free(whole);
    deg_model_free(m);
}

/* One training step on the real model: checkpointed and plain backward give
 * bitwise-equal row gradients; the step changes only trainable rows. */
Test(cartridge_smollm2, checkpoint_bitwise_and_step, .timeout = 1200)
{
    deg_model_info info;
    deg_model *m = load_smollm2(&info);
    enum { CP = 32, T = 24 };
    int32_t pre[CP], ids[T];
    deg_distill_target tg[2 * (T - 1)];
    size_t nt = step_inputs(pre, CP, ids, T, tg);
    deg_cartridge *c = NULL;
    cr_assert_eq(deg_cartridge_init_tokens(m, pre, CP, &c), DEG_OK);
    size_t n = (size_t)CP * info.n_head_kv * info.head_dim;
    float *a = malloc(n * 4), *b = malloc(n * 4), *a2 = malloc(n * 4), *b2 = malloc(n * 4);
    float **gk = malloc(info.n_layer * sizeof *gk), **gv = malloc(info.n_layer * sizeof *gv);
    float l1, l2;
    cr_assert_eq(deg_cartridge_backward(c, ids, T, tg, nt, 0, &l1), DEG_OK, "%s", deg_errmsg());
    for (int il = 0; il < info.n_layer; il++) {
        gk[il] = malloc(n * 4); gv[il] = malloc(n * 4);
        deg_cartridge_get_grads(c, il, gk[il], gv[il]);
    }
    deg_cartridge_zero_grads(c);
    cr_assert_eq(deg_cartridge_backward(c, ids, T, tg, nt, 1, &l2), DEG_OK);
    cr_expect_eq(l1, l2);
    int same = 1;
    double gmax = 0;
    for (int il = 0; il < info.n_layer; il++) {
        deg_cartridge_get_grads(c, il, a, b);
        same &= memcmp(a, gk[il], n * 4) == 0 && memcmp(b, gv[il], n * 4) == 0;
        for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(a[i]));
    }
    cr_expect(same, "checkpointed gradients differ from the plain backward");
    cr_expect(gmax > 0 && isfinite(gmax), "gradient max %g", gmax);
    cr_log_info("SmolLM2: loss %.4f, checkpointed gradients bitwise equal (max |dK| %.3g)",
                (double)l1, gmax);
    /* A step moves trainable rows only. */
    deg_cartridge_get_rows(c, 5, a, b);
    deg_adam_params ap = deg_adam_params_default();
    cr_assert_eq(deg_cartridge_adam_step(c, &ap), DEG_OK);
    deg_cartridge_get_rows(c, 5, a2, b2);
    size_t row = (size_t)info.n_head_kv * info.head_dim;
    cr_expect(memcmp(a, a2, row * 4) == 0 && memcmp(b, b2, row * 4) == 0, "sink row moved");
    cr_expect(memcmp(a + row, a2 + row, (n - row) * 4) != 0, "trainable rows did not move");
    float l3;
    cr_assert_eq(deg_cartridge_eval(c, ids, T, tg, nt, &l3, NULL), DEG_OK);
    cr_log_info("SmolLM2: loss after one Adam step (lr 2e-3): %.4f -> %.4f", (double)l1,
                (double)l3);
    for (int il = 0; il < info.n_layer; il++) { free(gk[il]); free(gv[il]); }
    free(gk); free(gv); free(a); free(b); free(a2); free(b2);
    deg_cartridge_free(c);
    deg_model_free(m);
}
