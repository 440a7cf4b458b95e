/* Native (quantized) weights on the real SmolLM2 Q4_1 GGUF (suite model;
 * skips without the file): resident weights ~ the file size, the same model
 * fingerprint as the f32 path, logits within the activation-quantization
 * budget of the f32 path on the transformers golden prompts (max |delta| and
 * argmax agreement reported), and a prefill's logits bitwise the same at 1
 * and 2 threads; greedy 64-token continuations against transformers' (common
 * prefixes reported and bounded). The other bitwise suites (fork batches, fill independence,
 * the cartridge equivalence gate) run on native weights with DEG_WEIGHTS=native. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cartridge/cartridge_internal.h"
#include "deg.h"
#include "format/safetensors.h"
#include "model_path.h"

#define GOLDEN DEG_SOURCE_ROOT "/tests/goldens/smollm2/golden.safetensors"
/* max |logit(native) - logit(f32)| allowed. Measured 2.46 (max over the
 * 127 positions of the golden prompts; top logits ~16..33; argmax equal at
 * 122 of them; the same at 1 thread: the kernels are bitwise). The 8-bit
 * rounding of the activations (up to 1/254 of each block's largest value,
 * qdot.h) is largest where SmolLM2's massive activations share a block with
 * small values, and it compounds over 30 layers; llama.cpp quantizes
 * activations the same way (q8_0/q8_1). 3.0 leaves headroom for BLIS kernel
 * sets on the f32 side without hiding a broken kernel (a wrong nibble or
 * block order moves logits by tens). */
#define NATIVE_LOGIT_BUDGET 3.0f
/* Sum over the five prompts of the tokens before the native greedy
 * continuation first differs from transformers' f32 one. Measured 162 of
 * 320 (2026-12-01, per prompt 0/12/22 and two prompts identical for all 64;
 * prompt 0's first argmax is a near-tie the activation rounding flips); a
 * broken kernel parts from the first tokens on every prompt. */
#define NATIVE_GREEDY_PREFIX_MIN 96

static char path[1024];

static deg_model *load(int weights)
{
    deg_model_params p = deg_model_default_params();
    p.weights = weights;
    deg_model *m = NULL;
    cr_assert_eq(deg_model_load_with_params(path, &p, &m), DEG_OK, "%s", deg_errmsg());
    return m;
}

#define SKIP_IF_ABSENT()                                                              \
    do {                                                                              \
        if (!tu_default_model(path, sizeof path))                                     \
            cr_skip_test("SmolLM2 GGUF not found at %s", path);                       \
    } while (0)

Test(quant_smollm2, resident_weights_and_fingerprint)
{
    SKIP_IF_ABSENT();
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    deg_model *q = load(DEG_WEIGHTS_NATIVE), *f = load(DEG_WEIGHTS_F32);
    deg_model_info iq, iff;
    deg_model_get_info(q, &iq);
    deg_model_get_info(f, &iff);
    cr_log_info("weights held: native %.1f MiB, f32 %.1f MiB, file %.1f MiB",
                iq.weight_bytes / 1048576.0, iff.weight_bytes / 1048576.0,
                sb.st_size / 1048576.0);
    cr_assert_leq((double)iq.weight_bytes, 1.1 * (double)sb.st_size);
    cr_assert_gt((double)iff.weight_bytes, 4.0 * (double)sb.st_size);
    char hq[65], hf[65];
    dg_model_fingerprint(q, hq);
    dg_model_fingerprint(f, hf);
    cr_assert_str_eq(hq, hf);
    deg_model_free(q);
    deg_model_free(f);
}

Test(quant_smollm2, logits_within_budget_of_f32_and_thread_invariant, .timeout = 1200)
{
    SKIP_IF_ABSENT();
    dg_safetensors *gold;
    cr_assert_eq(dg_safetensors_open(GOLDEN, &gold), DEG_OK, "%s", deg_errmsg());
    deg_model *q = load(DEG_WEIGHTS_NATIVE), *f = load(DEG_WEIGHTS_F32);
    size_t V = 49152;
    float worst = 0.0f;
    int agree = 0, total = 0;
    for (int p = 0; p < 5; p++) {
        char name[32];
        snprintf(name, sizeof name, "p%d.ids", p);
        const dg_tensor_view *t = dg_safetensors_find(gold, name);
        cr_assert_not_null(t);
        size_t L = (size_t)t->shape[0];
        const int32_t *ids = t->data;
        float *lq = malloc(sizeof(float) * L * V), *lf = malloc(sizeof(float) * L * V);
        deg_trunk *tq, *tf;
        cr_assert_eq(deg_trunk_new(q, &tq), DEG_OK);
        cr_assert_eq(deg_trunk_new(f, &tf), DEG_OK);
        deg_set_num_threads(2);
        cr_assert_eq(deg_trunk_prefill(tq, ids, L, lq, NULL), DEG_OK);
        cr_assert_eq(deg_trunk_prefill(tf, ids, L, lf, NULL), DEG_OK);
        for (size_t i = 0; i < L; i++) {
            size_t aq = 0, af = 0;
            for (size_t j = 0; j < V; j++) {
                float d = fabsf(lq[i * V + j] - lf[i * V + j]);
                cr_assert(d <= NATIVE_LOGIT_BUDGET, "prompt %d pos %zu id %zu: %g vs %g", p, i,
                          j, lq[i * V + j], lf[i * V + j]);
                if (d > worst) worst = d;
                if (lq[i * V + j] > lq[i * V + aq]) aq = j;
                if (lf[i * V + j] > lf[i * V + af]) af = j;
            }
            agree += aq == af;
            total++;
        }
        if (p == 0) { /* thread-count invariance of the native prefill */
            float *l1 = malloc(sizeof(float) * L * V);
            deg_trunk *t1;
            deg_set_num_threads(1);
            cr_assert_eq(deg_trunk_new(q, &t1), DEG_OK);
            cr_assert_eq(deg_trunk_prefill(t1, ids, L, l1, NULL), DEG_OK);
            cr_assert(memcmp(l1, lq, sizeof(float) * L * V) == 0, "1 vs 2 threads differ");
            deg_trunk_free(t1);
            free(l1);
        }
        deg_set_num_threads(0);
        deg_trunk_free(tq);
        deg_trunk_free(tf);
        free(lq);
        free(lf);
    }
    cr_log_info("native vs f32: max |delta logit| %g, argmax agrees at %d of %d positions",
                worst, agree, total);
    cr_assert_geq(agree * 10, total * 8, "argmax agrees at only %d of %d positions", agree,
                  total);
    deg_model_free(q);
    deg_model_free(f);
    dg_safetensors_close(gold);
}

/* Greedy 64-token continuations of the five golden prompts (all five decoded
 * together, forks of five trunks, no stop token) with the given weights. */
static void greedy64(deg_model *m, const dg_safetensors *gold, int32_t out[5][64])
{
    deg_trunk *t[5];
    deg_fork *f[5];
    int32_t *outs[5];
    size_t n_out[5];
    for (int p = 0; p < 5; p++) {
        char name[32];
        snprintf(name, sizeof name, "p%d.ids", p);
        const dg_tensor_view *v = dg_safetensors_find(gold, name);
        cr_assert_not_null(v);
        cr_assert_eq(deg_trunk_new(m, &t[p]), DEG_OK);
        cr_assert_eq(deg_trunk_prefill(t[p], v->data, (size_t)v->shape[0], NULL, NULL), DEG_OK,
                     "%s", deg_errmsg());
        cr_assert_eq(deg_fork_new(t[p], &f[p]), DEG_OK);
        outs[p] = out[p];
    }
    deg_sample_params sp = deg_sample_params_default();
    sp.max_tokens = 64;
    int32_t none = 0;
    sp.stop_ids = &none, sp.n_stop_ids = 0; /* transformers' goldens run 64 tokens */
    deg_sample_params ps[5] = {sp, sp, sp, sp, sp};
    cr_assert_eq(deg_forks_generate(f, 5, ps, outs, n_out, NULL), DEG_OK, "%s", deg_errmsg());
    for (int p = 0; p < 5; p++) {
        cr_assert_eq(n_out[p], 64);
        deg_fork_free(f[p]);
        deg_trunk_free(t[p]);
    }
}

/* The native path's greedy continuations against transformers' f32 ones
 * (the goldens; test_model_smollm2.c holds deg's f32 path to them token for
 * token): tokens before the first divergence and positions equal, per
 * prompt. Once the activation rounding moves an argmax the two texts part
 * (greedy decoding amplifies a near-tie), so the bound is on the common
 * prefixes: NATIVE_GREEDY_PREFIX_MIN, below the measured total (log line). */
Test(quant_smollm2, greedy_continuations_native_vs_f32, .timeout = 1800)
{
    SKIP_IF_ABSENT();
    dg_safetensors *gold;
    cr_assert_eq(dg_safetensors_open(GOLDEN, &gold), DEG_OK, "%s", deg_errmsg());
    deg_model *q = load(DEG_WEIGHTS_NATIVE);
    int32_t gq[5][64];
    greedy64(q, gold, gq);
    int prefix_total = 0, full = 0;
    char line[256] = "";
    for (int p = 0; p < 5; p++) {
        char name[32];
        snprintf(name, sizeof name, "p%d.greedy", p);
        const dg_tensor_view *v = dg_safetensors_find(gold, name);
        cr_assert_not_null(v);
        const int32_t *want = v->data;
        int pre = 0, eq = 0;
        while (pre < 64 && gq[p][pre] == want[pre]) pre++;
        for (int s = 0; s < 64; s++) eq += gq[p][s] == want[s];
        prefix_total += pre, full += pre == 64;
        size_t o = strlen(line);
        snprintf(line + o, sizeof line - o, " p%d %d/%d", p, pre, eq);
    }
    cr_log_info("greedy 64 native vs transformers f32, common prefix/equal positions:%s; "
                "total prefix %d of 320, %d of 5 identical", line, prefix_total, full);
    cr_assert_geq(prefix_total, NATIVE_GREEDY_PREFIX_MIN, "common prefixes total %d",
                  prefix_total);
    deg_model_free(q);
    dg_safetensors_close(gold);
}
