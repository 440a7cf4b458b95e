/* Native (quantized) weights on the real SmolLM2 Q4_1 GGUF (suite model;
 * skips without the file): resident weights ~ the file size, the same model
 * fingerprint as the f32 path, logits within the activation-quantization
 * budget of the f32 path on the transformers golden prompts (max |delta| and
 * argmax agreement reported), and a prefill's logits bitwise the same at 1
 * and 2 threads; greedy 64-token continuations against transformers' (common
 * prefixes reported and bounded). The same for native weights with f32
 * activations (DEG_WEIGHTS_NATIVE_F32ACT: the f32 path's numbers up to
 * summation order) and the chat sanity answer on it. The other bitwise suites (fork batches, fill independence,
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
/* max |logit(native) - logit(f32)| allowed. Measured 2.46 in session 6,
 * 2.07 in session 8 (max over the 127 positions of the golden prompts; top
 * logits ~16..33; argmax equal at 122 of them; the same at 1 thread: the
 * kernels are bitwise; every product matches a double reference with the
 * same 8-bit activations to 1.5e-7 relative, so this is the rounding). The 8-bit
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
/* The same with f32 activations: measured 320 of 320 (all five identical to
 * transformers'); 300 leaves room for one late near-tie. */
#define F32ACT_GREEDY_PREFIX_MIN 300

/* max |logit(native-f32act) - logit(f32)|: both are f32 dots of the same
 * dequantized weights, in different summation orders (8-lane dots vs BLIS).
 * Measured 6.1e-5 over the 127 golden positions (argmax equal at all), the
 * size of the f32 path's own distance to transformers (5.1e-5); the 8-bit
 * activations' 2.46 fails it by 2000x. */
#define F32ACT_LOGIT_BUDGET 1e-3f

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

/* Prefill logits of the golden prompts with weights mode `mode` against the
 * f32 path's: every |delta| <= budget, argmax agreement at >= agree_pct % of
 * the positions; prompt 0's prefill is bitwise the same at 1 and 2 threads.
 * Logs the max |delta| and the agreement. */
static void logits_vs_f32(int mode, float budget, int agree_pct)
{
    dg_safetensors *gold;
    cr_assert_eq(dg_safetensors_open(GOLDEN, &gold), DEG_OK, "%s", deg_errmsg());
    deg_model *q = load(mode), *f = load(DEG_WEIGHTS_F32);
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
                cr_assert(d <= budget, "mode %d prompt %d pos %zu id %zu: %g vs %g", mode, p, i,
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
    cr_log_info("weights mode %d vs f32: max |delta logit| %g, argmax agrees at %d of %d "
                "positions", mode, worst, agree, total);
    cr_assert_geq(agree * 100, total * agree_pct, "argmax agrees at only %d of %d positions",
                  agree, total);
    deg_model_free(q);
    deg_model_free(f);
    dg_safetensors_close(gold);
}

Test(quant_smollm2, logits_within_budget_of_f32_and_thread_invariant, .timeout = 1200)
{
    SKIP_IF_ABSENT();
    logits_vs_f32(DEG_WEIGHTS_NATIVE, NATIVE_LOGIT_BUDGET, 80);
}

/* Native weights with f32 activations (fdot.h): the f32 path's logits up to
 * f32 summation order, the same argmax everywhere. */
Test(quant_smollm2, f32act_logits_match_f32_and_thread_invariant, .timeout = 1200)
{
    SKIP_IF_ABSENT();
    logits_vs_f32(DEG_WEIGHTS_NATIVE_F32ACT, F32ACT_LOGIT_BUDGET, 100);
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
/* Sum over the five prompts of the common prefix of the greedy
 * continuation with weights mode `mode` and transformers' (log line). */
static int greedy_prefix_total(int mode)
{
    dg_safetensors *gold;
    cr_assert_eq(dg_safetensors_open(GOLDEN, &gold), DEG_OK, "%s", deg_errmsg());
    deg_model *q = load(mode);
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
    cr_log_info("greedy 64 weights mode %d vs transformers f32, common prefix/equal "
                "positions:%s; total prefix %d of 320, %d of 5 identical", mode, line,
                prefix_total, full);
    deg_model_free(q);
    dg_safetensors_close(gold);
    return prefix_total;
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
    int total = greedy_prefix_total(DEG_WEIGHTS_NATIVE);
    cr_assert_geq(total, NATIVE_GREEDY_PREFIX_MIN, "common prefixes total %d", total);
}

/* With f32 activations the continuations are transformers' (F32ACT_GREEDY_PREFIX_MIN). */
Test(quant_smollm2, greedy_continuations_f32act_vs_f32, .timeout = 1800)
{
    SKIP_IF_ABSENT();
    int total = greedy_prefix_total(DEG_WEIGHTS_NATIVE_F32ACT);
    cr_assert_geq(total, F32ACT_GREEDY_PREFIX_MIN, "common prefixes total %d", total);
}

/* Greedy answer to the chat sanity question with weights mode `mode` (caller
 * frees); *stopped: it ended with <|im_end|> within 48 tokens. */
static char *chat_answer(int mode, int *stopped)
{
    deg_model *m = load(mode);
    deg_chat_message msg[1] = {{"user", "What is the capital of France?"}};
    char *text = NULL;
    cr_assert_eq(deg_chat_format(m, msg, 1, 1, &text), DEG_OK, "%s", deg_errmsg());
    int32_t ids[256], out[48];
    size_t n = 0, n_out = 0, len = 0;
    cr_assert_eq(deg_tokenize(m, text, strlen(text), 1, ids, 256, &n), DEG_OK, "%s",
                 deg_errmsg());
    deg_free(text);
    deg_sample_params sp = deg_sample_params_default();
    sp.max_tokens = 48;
    deg_gen_stats st;
    cr_assert_eq(deg_generate(m, ids, n, &sp, out, 48, &n_out, &st), DEG_OK, "%s",
                 deg_errmsg());
    char *ans = malloc(1024);
    cr_assert_eq(deg_detokenize(m, out, n_out, ans, 1023, &len), DEG_OK);
    ans[len] = 0;
    *stopped = st.stopped;
    deg_model_free(m);
    return ans;
}

/* The chat sanity question (test_generate_smollm2.c asks it of the default
 * weights). Its first answer token is a near-tie on this Q4_1 file: f32
 * logits 'The' 25.325 vs 'L' 25.243. The 8-bit activation rounding flips it
 * (native: 'L' 24.666 vs 'The' 24.604, then "L'Étoile, la Marseillaise, ...",
 * logged here) -- and so does llama.cpp on the same file (its Q8_1
 * activations: 'L' 25.098 vs 'The' 24.856, the same "L'Étoile" text; checked
 * with llama.cpp 0.3.36's libllama, session 8). f32 activations over the
 * native weights keep the f32 answer. */
Test(quant_smollm2, chat_answer_f32act_is_sensible, .timeout = 600)
{
    SKIP_IF_ABSENT();
    int stopped = 0;
    char *q8 = chat_answer(DEG_WEIGHTS_NATIVE, &stopped);
    cr_log_info("native (8-bit activations) answer: %s", q8);
    free(q8);
    char *ans = chat_answer(DEG_WEIGHTS_NATIVE_F32ACT, &stopped);
    cr_log_info("native-f32act answer: %s", ans);
    cr_assert(strstr(ans, "Paris") != NULL, "answer: %s", ans);
    cr_assert(stopped, "stops at <|im_end|> within 48 tokens: %s", ans);
    free(ans);
}
