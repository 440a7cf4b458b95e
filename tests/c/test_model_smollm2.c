/* The real SmolLM2-135M-Instruct Q4_1 GGUF against transformers
 * (from_pretrained(gguf_file=), dequantized to f32): logits on several
 * prompts and greedy 64-token continuations (tests/goldens/smollm2, written
 * by tests/goldens/gen_model_goldens.py --smollm2), on f32 weights (pinned:
 * DEG_WEIGHTS does not change it). Skipped when the model
 * file is absent: $DEG_MODEL or ${DEG_CACHE:-~/.cache/deg}/models/. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "deg.h"
#include "model_path.h"
#include "format/safetensors.h"

#define GOLDEN DEG_SOURCE_ROOT "/tests/goldens/smollm2/golden.safetensors"
#define N_PROMPTS 5
#define N_GREEDY 64

static char model_path[1024];

static int find_model(void)
{
    return tu_default_model(model_path, sizeof model_path) != NULL;
}

static deg_model *model;
static dg_safetensors *gold;

static void setup(void)
{
    if (!find_model()) return;
    /* f32 weights whatever the default (DEG_WEIGHTS): the goldens are
     * transformers' f32 numbers, 1e-3 apart at most; native weights are
     * compared with f32 in test_quant_smollm2.c. */
    deg_model_params mp = deg_model_default_params();
    mp.weights = DEG_WEIGHTS_F32;
    deg_status s = deg_model_load_with_params(model_path, &mp, &model);
    cr_assert_eq(s, DEG_OK, "load %s: %s", model_path, deg_errmsg());
    s = dg_safetensors_open(GOLDEN, &gold);
    cr_assert_eq(s, DEG_OK, "%s: %s", GOLDEN, deg_errmsg());
}

static void teardown(void)
{
    deg_model_free(model);
    dg_safetensors_close(gold);
    model = NULL;
    gold = NULL;
}

#define SKIP_IF_ABSENT()                                                                    \
    do {                                                                                    \
        if (!model)                                                                         \
            cr_skip_test("SmolLM2 GGUF not found at %s (set DEG_MODEL or run "              \
                         "scripts/fetch-model)", model_path);                               \
    } while (0)

static const void *gt(const char *name, size_t *n)
{
    const dg_tensor_view *t = dg_safetensors_find(gold, name);
    if (!t) return NULL;
    size_t c = 1;
    for (int i = 0; i < t->n_dims; i++) c *= (size_t)t->shape[i];
    if (n) *n = c;
    return t->data;
}

static int32_t argmax(const float *x, int n)
{
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

TestSuite(smollm2, .init = setup, .fini = teardown);

Test(smollm2, info)
{
    SKIP_IF_ABSENT();
    deg_model_info info;
    cr_assert_eq(deg_model_get_info(model, &info), DEG_OK);
    cr_assert_str_eq(info.arch, "llama");
    cr_assert_eq(info.n_vocab, 49152);
    cr_assert_eq(info.n_embd, 576);
    cr_assert_eq(info.n_layer, 30);
    cr_assert_eq(info.n_head, 9);
    cr_assert_eq(info.n_head_kv, 3);
    cr_assert_eq(info.head_dim, 64);
    cr_assert_eq(info.n_ff, 1536);
    cr_assert_eq(info.tied_lm_head, 1);
    cr_assert_float_eq(info.rope_theta, 100000.0f, 1.0f);
    cr_assert_str_eq(info.chat_layout, "chatml");
}

Test(smollm2, logits_match_transformers)
{
    SKIP_IF_ABSENT();
    int V = 49152;
    float worst_full = 0.0f, worst_sub = 0.0f;
    for (int p = 0; p < N_PROMPTS; p++) {
        char name[64];
        size_t L = 0, S = 0;
        snprintf(name, sizeof name, "p%d.ids", p);
        const int32_t *ids = gt(name, &L);
        cr_assert_not_null(ids, "%s", name);
        snprintf(name, sizeof name, "p%d.sub_vocab", p);
        const int32_t *sub = gt(name, &S);
        snprintf(name, sizeof name, "p%d.sub_logits", p);
        const float *want_sub = gt(name, NULL);
        float *logits = malloc(sizeof(float) * L * V);
        deg_trunk *t;
        cr_assert_eq(deg_trunk_new(model, &t), DEG_OK);
        cr_assert_eq(deg_trunk_prefill(t, ids, L, logits, NULL), DEG_OK, "%s", deg_errmsg());
        for (size_t i = 0; i < L; i++)
            for (size_t j = 0; j < S; j++) {
                float d = fabsf(logits[i * V + sub[j]] - want_sub[i * S + j]);
                cr_assert(d <= 1e-3f, "prompt %d pos %zu id %d: %g vs %g", p, i, sub[j],
                          logits[i * V + sub[j]], want_sub[i * S + j]);
                if (d > worst_sub) worst_sub = d;
            }
        snprintf(name, sizeof name, "p%d.full_logits", p);
        const float *want_full = gt(name, NULL);
        if (want_full) {
            for (int j = 0; j < V; j++) {
                float d = fabsf(logits[(L - 1) * V + j] - want_full[j]);
                cr_assert(d <= 1e-3f, "prompt %d last pos id %d: %g", p, j, d);
                if (d > worst_full) worst_full = d;
            }
        }
        deg_trunk_free(t);
        free(logits);
    }
    cr_log_info("smollm2 max |diff| full-vocab %g, subset %g", worst_full, worst_sub);
}

/* Greedy continuations: each prompt on its own trunk, all five decoded
 * together as rows of one batch (forks of different trunks). */
Test(smollm2, greedy_continuations_match_transformers)
{
    SKIP_IF_ABSENT();
    int V = 49152;
    deg_trunk *t[N_PROMPTS];
    deg_fork *f[N_PROMPTS];
    const int32_t *want[N_PROMPTS];
    int32_t next[N_PROMPTS], got[N_PROMPTS][N_GREEDY];
    float *logits[N_PROMPTS];
    size_t total = 0;
    double t0 = now();
    for (int p = 0; p < N_PROMPTS; p++) {
        char name[64];
        size_t L = 0, G = 0;
        snprintf(name, sizeof name, "p%d.ids", p);
        const int32_t *ids = gt(name, &L);
        snprintf(name, sizeof name, "p%d.greedy", p);
        want[p] = gt(name, &G);
        cr_assert_eq(G, N_GREEDY);
        logits[p] = malloc(sizeof(float) * V);
        cr_assert_eq(deg_trunk_new(model, &t[p]), DEG_OK);
        cr_assert_eq(deg_trunk_prefill(t[p], ids, L, NULL, logits[p]), DEG_OK);
        cr_assert_eq(deg_fork_new(t[p], &f[p]), DEG_OK);
        next[p] = argmax(logits[p], V);
        total += L;
    }
    double t1 = now();
    for (int s = 0; s < N_GREEDY; s++) {
        const int32_t *ids[N_PROMPTS];
        size_t n[N_PROMPTS];
        for (int p = 0; p < N_PROMPTS; p++) {
            got[p][s] = next[p];
            ids[p] = &got[p][s];
            n[p] = 1;
        }
        if (s + 1 == N_GREEDY) break;
        cr_assert_eq(deg_forks_feed(f, N_PROMPTS, ids, n, logits), DEG_OK);
        for (int p = 0; p < N_PROMPTS; p++) next[p] = argmax(logits[p], V);
    }
    double t2 = now();
    cr_log_info("smollm2: prefill %zu tokens %.1f tok/s; batched decode of %d rows %.1f tok/s",
                total, (double)total / (t1 - t0), N_PROMPTS,
                (double)(N_PROMPTS * (N_GREEDY - 1)) / (t2 - t1));
    for (int p = 0; p < N_PROMPTS; p++) {
        for (int s = 0; s < N_GREEDY; s++)
            cr_assert_eq(got[p][s], want[p][s], "prompt %d: token %d is %d, transformers %d", p,
                         s, got[p][s], want[p][s]);
        deg_fork_free(f[p]);
        deg_trunk_free(t[p]);
        free(logits[p]);
    }
}

/* Real dimensions: a fork's decode logits bitwise equal alone and among
 * other rows of mixed lengths (forks of two trunks). */
Test(smollm2, batch_invariance)
{
    SKIP_IF_ABSENT();
    int V = 49152;
    size_t L0 = 0, L1 = 0;
    const int32_t *p0 = gt("p0.ids", &L0), *p1 = gt("p1.ids", &L1);
    deg_trunk *ta, *tb;
    cr_assert_eq(deg_trunk_new(model, &ta), DEG_OK);
    cr_assert_eq(deg_trunk_new(model, &tb), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(ta, p0, L0, NULL, NULL), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(tb, p1, L1, NULL, NULL), DEG_OK);
    int32_t probe[3] = {504, 2114, 30};
    float *ref = malloc(sizeof(float) * 3 * V), *got = malloc(sizeof(float) * 3 * V);
    deg_fork *f;
    cr_assert_eq(deg_fork_new(ta, &f), DEG_OK);
    cr_assert_eq(deg_fork_feed(f, probe, 3, ref), DEG_OK);
    deg_fork_free(f);
    size_t sizes[] = {1, 2, 5, 8, 16};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t B = sizes[k], pos = B - 1 - B / 3;
        deg_fork *forks[16];
        const int32_t *ids[16];
        size_t n[16];
        float *lg[16] = {0};
        for (size_t r = 0; r < B; r++) {
            cr_assert_eq(deg_fork_new(r % 2 && r != pos ? tb : ta, &forks[r]), DEG_OK);
            ids[r] = r == pos ? probe : p1 + r;
            n[r] = r == pos ? 3 : 1 + (r * 7) % 9;
        }
        lg[pos] = got;
        cr_assert_eq(deg_forks_feed(forks, B, ids, n, lg), DEG_OK);
        cr_assert(memcmp(got, ref, sizeof(float) * 3 * V) == 0, "batch of %zu differs", B);
        for (size_t r = 0; r < B; r++) deg_fork_free(forks[r]);
    }
    free(ref);
    free(got);
    deg_trunk_free(ta);
    deg_trunk_free(tb);
}
