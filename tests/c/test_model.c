/* Model runtime against transformers goldens (tests/goldens/gen_model_goldens.py)
 * and the trunk/fork properties: fork exactness, chunked prefill, batch
 * invariance, bad input. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deg.h"
#include "format/safetensors.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static const char *const TINY[] = {"tiny-llama", "tiny-llama-tied", "tiny-qwen3",
                                   "tiny-qwen3-untied"};
#define N_TINY (sizeof TINY / sizeof TINY[0])

typedef struct golden {
    dg_safetensors *st;
} golden;

static golden golden_open(const char *model)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s/golden.safetensors", GOLDENS, model);
    golden g = {0};
    deg_status s = dg_safetensors_open(p, &g.st);
    cr_assert_eq(s, DEG_OK, "%s: %s", p, deg_errmsg());
    return g;
}

/* Tensor by name; *n = element count. */
static const void *gt(const golden *g, const char *name, size_t *n)
{
    const dg_tensor_view *t = dg_safetensors_find(g->st, name);
    cr_assert_not_null(t, "golden tensor %s", name);
    size_t c = 1;
    for (int i = 0; i < t->n_dims; i++) c *= (size_t)t->shape[i];
    if (n) *n = c;
    return t->data;
}

static deg_model *load_tiny(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", GOLDENS, name);
    deg_model *m = NULL;
    deg_status s = deg_model_load(p, &m);
    cr_assert_eq(s, DEG_OK, "load %s: %s (%s)", p, deg_errmsg(), deg_status_name(s));
    return m;
}

static float max_abs_diff(const float *a, const float *b, size_t n)
{
    float d = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float e = fabsf(a[i] - b[i]);
        if (!(e <= d)) d = e; /* NaN propagates */
    }
    return d;
}

static int n_vocab(const deg_model *m)
{
    deg_model_info info;
    cr_assert_eq(deg_model_get_info(m, &info), DEG_OK);
    return info.n_vocab;
}

Test(model, tiny_info)
{
    for (size_t k = 0; k < N_TINY; k++) {
        deg_model *m = load_tiny(TINY[k]);
        deg_model_info info;
        cr_assert_eq(deg_model_get_info(m, &info), DEG_OK);
        int qwen = strstr(TINY[k], "qwen3") != NULL;
        cr_assert_str_eq(info.arch, qwen ? "qwen3" : "llama");
        cr_assert_eq(info.n_vocab, 512);
        cr_assert_eq(info.n_embd, 64);
        cr_assert_eq(info.n_layer, 2);
        cr_assert_eq(info.n_head, 4);
        cr_assert_eq(info.n_head_kv, 2);
        cr_assert_eq(info.head_dim, qwen ? 32 : 16);
        cr_assert_eq(info.n_ff, 128);
        cr_assert_float_eq(info.rope_theta, qwen ? 1e6f : 5e4f, 1.0f);
        int tied = !strcmp(TINY[k], "tiny-llama-tied") || !strcmp(TINY[k], "tiny-qwen3");
        cr_assert_eq(info.tied_lm_head, tied, "%s", TINY[k]);
        cr_assert_str_eq(info.chat_layout, qwen ? "qwen3" : "chatml");
        deg_model_free(m);
    }
}

/* Full prefill of each sequence: logits of every position. */
Test(model, tiny_prefill_matches_transformers)
{
    for (size_t k = 0; k < N_TINY; k++) {
        deg_model *m = load_tiny(TINY[k]);
        golden g = golden_open(TINY[k]);
        int V = n_vocab(m);
        float worst = 0.0f;
        for (int i = 0; i < 4; i++) {
            char name[64];
            size_t n, nl;
            snprintf(name, sizeof name, "prefill.%d.ids", i);
            const int32_t *ids = gt(&g, name, &n);
            snprintf(name, sizeof name, "prefill.%d.logits", i);
            const float *want = gt(&g, name, &nl);
            cr_assert_eq(nl, n * (size_t)V);
            float *got = malloc(sizeof(float) * nl), last[512];
            deg_trunk *t;
            cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
            cr_assert_eq(deg_trunk_prefill(t, ids, n, got, last), DEG_OK, "%s", deg_errmsg());
            cr_assert_eq(deg_trunk_len(t), n);
            float d = max_abs_diff(got, want, nl);
            cr_assert(d <= 1e-4f, "%s prefill.%d: max |diff| %g", TINY[k], i, d);
            cr_assert(memcmp(last, got + (n - 1) * V, sizeof(float) * V) == 0);
            if (d > worst) worst = d;
            deg_trunk_free(t);
            free(got);
        }
        cr_log_info("%s prefill max |diff| %g", TINY[k], worst);
        dg_safetensors_close(g.st);
        deg_model_free(m);
    }
}

/* Step-by-step decode, two ways: trunk prefill one token per call, and one
 * fork fed one token per call. */
Test(model, tiny_decode_matches_transformers)
{
    for (size_t k = 0; k < N_TINY; k++) {
        deg_model *m = load_tiny(TINY[k]);
        golden g = golden_open(TINY[k]);
        int V = n_vocab(m);
        size_t n;
        const int32_t *ids = gt(&g, "decode.ids", &n);
        const float *want = gt(&g, "decode.logits", NULL);
        float *row = malloc(sizeof(float) * V);
        deg_trunk *t, *empty;
        deg_fork *f;
        cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
        cr_assert_eq(deg_trunk_new(m, &empty), DEG_OK);
        cr_assert_eq(deg_fork_new(empty, &f), DEG_OK);
        cr_assert_eq(deg_fork_logits(f, row), DEG_ERR_STATE);
        float worst = 0.0f;
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(deg_trunk_prefill(t, ids + i, 1, NULL, row), DEG_OK);
            float d = max_abs_diff(row, want + i * V, V);
            cr_assert(d <= 1e-4f, "%s trunk decode step %zu: %g", TINY[k], i, d);
            if (d > worst) worst = d;
            cr_assert_eq(deg_fork_feed(f, ids + i, 1, row), DEG_OK);
            d = max_abs_diff(row, want + i * V, V);
            cr_assert(d <= 1e-4f, "%s fork decode step %zu: %g", TINY[k], i, d);
            if (d > worst) worst = d;
        }
        cr_assert_eq(deg_fork_len(f), n);
        cr_log_info("%s decode max |diff| %g", TINY[k], worst);
        free(row);
        deg_fork_free(f);
        deg_trunk_free(t);
        deg_trunk_free(empty);
        dg_safetensors_close(g.st);
        deg_model_free(m);
    }
}

/* Forks of a shared trunk, fed together in one batch, equal transformers'
 * full forward of trunk + fork tokens. */
Test(model, tiny_forks_match_transformers)
{
    for (size_t k = 0; k < N_TINY; k++) {
        deg_model *m = load_tiny(TINY[k]);
        golden g = golden_open(TINY[k]);
        int V = n_vocab(m);
        size_t nt;
        const int32_t *trunk_ids = gt(&g, "trunk.ids", &nt);
        deg_trunk *t;
        cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
        cr_assert_eq(deg_trunk_prefill(t, trunk_ids, nt, NULL, NULL), DEG_OK);
        deg_fork *forks[3];
        const int32_t *ids[3];
        size_t n[3];
        float *logits[3];
        const float *want[3];
        for (int j = 0; j < 3; j++) {
            char name[64];
            snprintf(name, sizeof name, "fork.%d.ids", j);
            ids[j] = gt(&g, name, &n[j]);
            snprintf(name, sizeof name, "fork.%d.logits", j);
            want[j] = gt(&g, name, NULL);
            logits[j] = malloc(sizeof(float) * n[j] * V);
            cr_assert_eq(deg_fork_new(t, &forks[j]), DEG_OK);
        }
        cr_assert_eq(deg_forks_feed(forks, 3, ids, n, logits), DEG_OK, "%s", deg_errmsg());
        float worst = 0.0f;
        for (int j = 0; j < 3; j++) {
            float d = max_abs_diff(logits[j], want[j], n[j] * V);
            cr_assert(d <= 1e-4f, "%s fork %d: %g", TINY[k], j, d);
            if (d > worst) worst = d;
            float *last = malloc(sizeof(float) * V);
            cr_assert_eq(deg_fork_logits(forks[j], last), DEG_OK);
            cr_assert(memcmp(last, logits[j] + (n[j] - 1) * V, sizeof(float) * V) == 0);
            free(last);
            deg_fork_free(forks[j]);
            free(logits[j]);
        }
        cr_log_info("%s forks max |diff| %g", TINY[k], worst);
        deg_trunk_free(t);
        dg_safetensors_close(g.st);
        deg_model_free(m);
    }
}

static void fill_ids(int32_t *ids, size_t n, unsigned seed, int V)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        ids[i] = (int32_t)((seed >> 8) % (unsigned)V);
    }
}

/* A fork's logits and hidden states equal a fresh trunk prefilled with
 * trunk + fork tokens (the hidden states via a fork of an empty trunk). */
Test(model, fork_exactness)
{
    deg_model *m = load_tiny("tiny-qwen3");
    int V = n_vocab(m), E = 64;
    int32_t all[40];
    fill_ids(all, 40, 11, V);
    size_t T = 25, F = 15;
    deg_trunk *t, *full, *empty;
    deg_fork *f, *g;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_new(m, &full), DEG_OK);
    cr_assert_eq(deg_trunk_new(m, &empty), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, all, T, NULL, NULL), DEG_OK);
    cr_assert_eq(deg_fork_new(t, &f), DEG_OK);
    float *fl = malloc(sizeof(float) * F * V), *rl = malloc(sizeof(float) * (T + F) * V);
    cr_assert_eq(deg_fork_feed(f, all + T, 5, fl), DEG_OK);           /* in two feeds */
    cr_assert_eq(deg_fork_feed(f, all + T + 5, F - 5, fl + 5 * V), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(full, all, T + F, rl, NULL), DEG_OK);
    float d = max_abs_diff(fl, rl + T * V, F * V);
    cr_assert(d <= 1e-5f, "fork vs full logits: %g", d);

    cr_assert_eq(deg_fork_new(empty, &g), DEG_OK);
    cr_assert_eq(deg_fork_feed(g, all, T + F, NULL), DEG_OK);
    float *fh = malloc(sizeof(float) * F * E), *rh = malloc(sizeof(float) * F * E);
    cr_assert_eq(deg_fork_hidden(f, 0, F, fh), DEG_OK);
    cr_assert_eq(deg_fork_hidden(g, T, F, rh), DEG_OK);
    d = max_abs_diff(fh, rh, F * E);
    cr_assert(d <= 1e-5f, "fork vs full hidden: %g", d);
    cr_assert_eq(deg_fork_hidden(f, 10, 6, fh), DEG_ERR_RANGE);
    /* Logits computed on demand from the hidden state match. */
    float *last = malloc(sizeof(float) * V);
    cr_assert_eq(deg_fork_logits(g, last), DEG_OK);
    d = max_abs_diff(last, rl + (T + F - 1) * V, V);
    cr_assert(d <= 1e-5f, "on-demand logits: %g", d);
    free(last);
    free(fh);
    free(rh);
    free(fl);
    free(rl);
    deg_fork_free(f);
    deg_fork_free(g);
    deg_trunk_free(t);
    deg_trunk_free(full);
    deg_trunk_free(empty);
    deg_model_free(m);
}

/* Prefill longer than one pass, in pieces vs in one call. */
Test(model, chunked_prefill_equals_one_shot)
{
    deg_model *m = load_tiny("tiny-llama");
    int V = n_vocab(m);
    size_t N = 700;
    int32_t *ids = malloc(sizeof(int32_t) * N);
    fill_ids(ids, N, 5, V);
    float *a = malloc(sizeof(float) * N * V), *b = malloc(sizeof(float) * N * V);
    deg_trunk *t1, *t2;
    cr_assert_eq(deg_trunk_new(m, &t1), DEG_OK);
    cr_assert_eq(deg_trunk_new(m, &t2), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t1, ids, N, a, NULL), DEG_OK);
    size_t cuts[] = {0, 1, 100, 357, 360, 700};
    for (int i = 0; i + 1 < 6; i++)
        cr_assert_eq(deg_trunk_prefill(t2, ids + cuts[i], cuts[i + 1] - cuts[i],
                                       b + cuts[i] * V, NULL), DEG_OK);
    cr_assert_eq(deg_trunk_len(t2), N);
    float d = max_abs_diff(a, b, N * V);
    cr_assert(d <= 1e-5f, "chunked vs one-shot: %g", d);
    free(a);
    free(b);
    free(ids);
    deg_trunk_free(t1);
    deg_trunk_free(t2);
    deg_model_free(m);
}

/* A fork's logits are bitwise equal alone and inside batches of 1..16 rows of
 * mixed lengths, with forks of another trunk mixed in. */
Test(model, batch_invariance)
{
    deg_model *m = load_tiny("tiny-llama");
    int V = n_vocab(m);
    int32_t pa[30], pb[17], probe[6];
    fill_ids(pa, 30, 1, V);
    fill_ids(pb, 17, 2, V);
    fill_ids(probe, 6, 3, V);
    deg_trunk *ta, *tb;
    cr_assert_eq(deg_trunk_new(m, &ta), DEG_OK);
    cr_assert_eq(deg_trunk_new(m, &tb), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(ta, pa, 30, NULL, NULL), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(tb, pb, 17, NULL, NULL), DEG_OK);

    /* Reference: the probe fork alone, fed 2 tokens then 4. */
    float *ref = malloc(sizeof(float) * 6 * V);
    deg_fork *f;
    cr_assert_eq(deg_fork_new(ta, &f), DEG_OK);
    cr_assert_eq(deg_fork_feed(f, probe, 2, ref), DEG_OK);
    cr_assert_eq(deg_fork_feed(f, probe + 2, 4, ref + 2 * V), DEG_OK);
    deg_fork_free(f);

    float *got = malloc(sizeof(float) * 6 * V);
    for (size_t B = 1; B <= 16; B++) {
        deg_fork *forks[16];
        const int32_t *ids[16];
        size_t n[16];
        float *lg[16];
        int32_t other[16][40];
        size_t pos = B / 2; /* where the probe sits: varies with B */
        for (size_t r = 0; r < B; r++) {
            deg_trunk *tr = (r % 3 == 1 && r != pos) ? tb : ta;
            cr_assert_eq(deg_fork_new(tr, &forks[r]), DEG_OK);
            fill_ids(other[r], 40, (unsigned)(100 + B * 17 + r), V);
            /* some rows start with a prefix of their own */
            if (r % 2 && r != pos)
                cr_assert_eq(deg_fork_feed(forks[r], other[r] + 30, 1 + r % 4, NULL), DEG_OK);
        }
        for (int step = 0; step < 2; step++) {
            for (size_t r = 0; r < B; r++) {
                if (r == pos) {
                    ids[r] = step ? probe + 2 : probe;
                    n[r] = step ? 4 : 2;
                    lg[r] = step ? got + 2 * V : got;
                } else {
                    ids[r] = other[r] + step * 15;
                    n[r] = (r * 5 + B + step) % 15; /* 0..14, sometimes 0 */
                    lg[r] = NULL;
                    if (r % 4 == 0) lg[r] = malloc(sizeof(float) * 15 * V);
                }
            }
            cr_assert_eq(deg_forks_feed(forks, B, ids, n, lg), DEG_OK, "%s", deg_errmsg());
            for (size_t r = 0; r < B; r++)
                if (r != pos) free(lg[r]);
        }
        cr_assert(memcmp(got, ref, sizeof(float) * 6 * V) == 0,
                  "batch of %zu: probe logits differ (max %g)", B, max_abs_diff(got, ref, 6 * V));
        for (size_t r = 0; r < B; r++) deg_fork_free(forks[r]);
    }
    free(ref);
    free(got);
    deg_trunk_free(ta);
    deg_trunk_free(tb);
    deg_model_free(m);
}

Test(model, bad_calls)
{
    deg_model *m = load_tiny("tiny-llama");
    deg_trunk *t;
    deg_fork *f;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    int32_t ids[3] = {1, 512, 3};
    cr_assert_eq(deg_trunk_prefill(t, ids, 3, NULL, NULL), DEG_ERR_RANGE);
    cr_assert(strstr(deg_errmsg(), "512") != NULL, "%s", deg_errmsg());
    ids[1] = -1;
    cr_assert_eq(deg_trunk_prefill(t, ids, 3, NULL, NULL), DEG_ERR_RANGE);
    cr_assert_eq(deg_trunk_len(t), 0);
    ids[1] = 2;
    cr_assert_eq(deg_trunk_prefill(t, ids, 3, NULL, NULL), DEG_OK);
    cr_assert_eq(deg_fork_new(t, &f), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, ids, 1, NULL, NULL), DEG_ERR_STATE);
    cr_assert_eq(deg_fork_feed(f, ids, 3, NULL), DEG_OK);
    ids[0] = 9999;
    cr_assert_eq(deg_fork_feed(f, ids, 3, NULL), DEG_ERR_RANGE);
    cr_assert_eq(deg_fork_len(f), 3);
    deg_fork *twice[2] = {f, f};
    const int32_t *pp[2] = {ids + 1, ids + 1};
    size_t nn[2] = {1, 1};
    cr_assert_eq(deg_forks_feed(twice, 2, pp, nn, NULL), DEG_ERR_ARG);
    deg_fork_free(f);
    cr_assert_eq(deg_trunk_prefill(t, ids + 1, 1, NULL, NULL), DEG_OK);
    cr_assert_eq(deg_trunk_len(t), 4);
    deg_trunk_free(t);
    deg_model_free(m);
    deg_model_free(NULL);
    deg_trunk_free(NULL);
    deg_fork_free(NULL);
}
