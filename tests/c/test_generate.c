/* Generation API on the tiny random models of tests/goldens (always present):
 * batched forks bitwise equal to single-row runs (llama, qwen3, GGUF),
 * stop/max_tokens/continuation, seeded runs and the default EOS stop, chat
 * layout from the model metadata, bad input. The real SmolLM2 is exercised
 * by test_generate_smollm2.c (suite `model`). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deg.h"
#include "gen_checks.h"

static deg_model *load_tiny(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/goldens/%s", DEG_SOURCE_ROOT, rel);
    deg_model *m = NULL;
    cr_assert_eq(deg_model_load(path, &m), DEG_OK, "load %s: %s", path, deg_errmsg());
    return m;
}

static const int32_t tiny_prompt[9] = {1, 17, 300, 45, 2, 99, 256, 7, 411};

Test(generate_tiny, batched_rows_equal_single_rows_bitwise)
{
    const char *models[] = {"tiny-llama", "tiny-qwen3-untied", "tiny-gguf/tiny-llama-tied.gguf"};
    for (size_t k = 0; k < 3; k++) {
        deg_model *m = load_tiny(models[k]);
        check_batched(m, tiny_prompt, 9);
        deg_model_free(m);
    }
}

Test(generate_tiny, max_tokens_stop_ids_and_continuation)
{
    deg_model *m = load_tiny("tiny-qwen3");
    check_stop_and_continuation(m, tiny_prompt, 9);
    deg_model_free(m);
}

Test(generate_tiny, seeded_sampling_and_default_stop)
{
    deg_model *m = load_tiny("tiny-llama");
    deg_model_info mi;
    cr_assert_eq(deg_model_get_info(m, &mi), DEG_OK);
    cr_assert_eq(mi.eos_id, 2);
    deg_sample_params p = deg_sample_params_default();
    p.temperature = 1.5f; /* a random model: flat enough to hit EOS sometimes */
    p.max_tokens = 40;
    int32_t a[40], b[40];
    size_t na, nb;
    deg_gen_stats st;
    int stopped = 0;
    for (uint64_t seed = 0; seed < 8; seed++) {
        p.seed = seed;
        cr_assert_eq(deg_generate(m, tiny_prompt, 9, &p, a, 40, &na, &st), DEG_OK, "%s",
                     deg_errmsg());
        cr_assert_eq(deg_generate(m, tiny_prompt, 9, &p, b, 40, &nb, NULL), DEG_OK);
        cr_assert_eq(na, nb);
        cr_assert_eq(memcmp(a, b, na * sizeof *a), 0, "seed %d reproducible", (int)seed);
        /* the default stop is the model's EOS: it ends the run, only at the end */
        for (size_t i = 0; i + 1 < na; i++) cr_assert_neq(a[i], 2);
        cr_assert_eq(st.stopped, a[na - 1] == 2);
        cr_assert(st.stopped || na == 40);
        stopped += st.stopped;
    }
    cr_log_info("tiny-llama: %d of 8 seeded runs stopped at EOS", stopped);
    deg_model_free(m);
}

Test(generate_tiny, chat_layout_from_metadata)
{
    /* qwen3 architecture: the Qwen3 layout (thinking off) whatever the file's template */
    deg_model *q = load_tiny("tiny-qwen3");
    deg_chat_message msgs[2] = {{"system", "You are terse."}, {"user", "What is 2+2?"}};
    char *out = NULL;
    cr_assert_eq(deg_chat_format(q, msgs, 2, 1, &out), DEG_OK, "%s", deg_errmsg());
    cr_assert_str_eq(out, "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\n"
                          "What is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    deg_free(out);
    deg_model_free(q);
    /* a llama with a plain ChatML template: ChatML, no default system message */
    deg_model *l = load_tiny("tiny-llama");
    cr_assert_eq(deg_chat_format(l, msgs + 1, 1, 1, &out), DEG_OK, "%s", deg_errmsg());
    cr_assert_str_eq(out, "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n");
    deg_free(out);
    deg_model_free(l);
}

Test(generate_tiny, bad_input_is_an_error)
{
    deg_model *tm = load_tiny("tiny-llama");
    int32_t prompt[2] = {1, 2};
    int32_t out[8];
    size_t n = 99;
    deg_sample_params p = deg_sample_params_default();
    p.max_tokens = 8;
    cr_assert_eq(deg_generate(tm, prompt, 0, &p, out, 8, &n, NULL), DEG_ERR_ARG);
    cr_assert_eq(n, 0);
    cr_assert_eq(deg_generate(tm, prompt, 2, &p, out, 4, &n, NULL), DEG_ERR_ARG);
    cr_assert(strstr(deg_errmsg(), "cap 4") != NULL, "%s", deg_errmsg());
    p.max_tokens = 0;
    cr_assert_eq(deg_generate(tm, prompt, 2, &p, out, 8, &n, NULL), DEG_ERR_ARG);
    p.max_tokens = 8;
    p.temperature = -1.0f;
    cr_assert_eq(deg_generate(tm, prompt, 2, &p, out, 8, &n, NULL), DEG_ERR_ARG);
    p.temperature = 0.0f;
    int32_t bad_id = 1 << 30;
    cr_assert_neq(deg_generate(tm, &bad_id, 1, &p, out, 8, &n, NULL), DEG_OK);
    p.stop_ids = NULL;
    p.n_stop_ids = 3;
    cr_assert_eq(deg_generate(tm, prompt, 2, &p, out, 8, &n, NULL), DEG_ERR_ARG);
    p.n_stop_ids = 0;

    /* a fork of an empty trunk has no logits to start from */
    deg_trunk *t;
    deg_fork *f;
    cr_assert_eq(deg_trunk_new(tm, &t), DEG_OK);
    cr_assert_eq(deg_fork_new(t, &f), DEG_OK);
    int32_t *o = out;
    cr_assert_eq(deg_forks_generate(&f, 1, &p, &o, &n, NULL), DEG_ERR_STATE);
    cr_assert_eq(n, 0);
    /* the same fork twice in one batch */
    deg_fork *twice[2] = {f, f};
    int32_t *outs[2] = {out, out};
    size_t ns[2];
    deg_sample_params ps[2] = {p, p};
    cr_assert_eq(deg_forks_generate(twice, 2, ps, outs, ns, NULL), DEG_ERR_ARG);
    cr_assert_eq(deg_forks_generate(&f, 1, NULL, &o, &n, NULL), DEG_ERR_ARG);
    deg_fork_free(f);
    deg_trunk_free(t);

    deg_chat_message bad[1] = {{"narrator", "x"}};
    char *text = NULL;
    cr_assert_eq(deg_chat_format(tm, bad, 1, 1, &text), DEG_ERR_ARG);
    cr_assert_null(text);
    deg_model_free(tm);
}
