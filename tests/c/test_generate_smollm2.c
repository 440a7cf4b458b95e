/* Generation API on the real SmolLM2-135M-Instruct (suite `model`): chat
 * layout from the GGUF metadata, greedy chat answer, seeded sampling reproducible, batched
 * forks bitwise equal to single-row runs, stop/max_tokens, continuation.
 * Model: $DEG_MODEL or ${DEG_CACHE:-~/.cache/deg}/models/SmolLM2-135M-Instruct.Q4_1.gguf;
 * the tests skip (with the reason) when it is absent. Text goes through the
 * model's tokenizer (dg_tokenizer_encode/decode, the code behind
 * deg_tokenize/deg_detokenize). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deg.h"
#include "model_path.h"
#include "model/model.h"
#include "gen_checks.h"

static char g_path[4096];

static const char *model_path(void)
{
    tu_default_model(g_path, sizeof g_path);
    return g_path;
}

static deg_model *g_model;

static void load(void)
{
    const char *p = model_path();
    if (access(p, R_OK) != 0)
        cr_skip_test("SmolLM2 model not found at %s (set DEG_MODEL or run scripts/fetch-model)",
                     p);
    deg_status s = deg_model_load(p, &g_model);
    cr_assert_eq(s, DEG_OK, "load %s: %s", p, deg_errmsg());
}

static void unload(void)
{
    deg_model_free(g_model);
    g_model = NULL;
}

TestSuite(generate, .init = load, .fini = unload, .timeout = 600);

/* Chat prompt ids for one user message (caller frees). */
static int32_t *chat_ids(const char *user, size_t *n)
{
    deg_chat_message m[1] = {{"user", user}};
    char *text = NULL;
    cr_assert_eq(deg_chat_format(g_model, m, 1, 1, &text), DEG_OK, "%s", deg_errmsg());
    size_t cap = strlen(text) + 16;
    int32_t *ids = malloc(cap * sizeof *ids);
    cr_assert_eq(dg_tokenizer_encode(dg_model_tokenizer(g_model), text, strlen(text), 1, ids, cap, n), DEG_OK, "%s",
                 deg_errmsg());
    deg_free(text);
    return ids;
}

static char *detok(const int32_t *ids, size_t n)
{
    size_t len = 0;
    deg_status s = dg_tokenizer_decode(dg_model_tokenizer(g_model), ids, n, NULL, 0, &len);
    cr_assert(s == DEG_OK || s == DEG_ERR_RANGE);
    char *buf = malloc(len + 1);
    cr_assert_eq(dg_tokenizer_decode(dg_model_tokenizer(g_model), ids, n, buf, len, &len), DEG_OK);
    buf[len] = '\0';
    return buf;
}

static int32_t token_id(const char *piece)
{
    int32_t id[4];
    size_t n = 0;
    cr_assert_eq(dg_tokenizer_encode(dg_model_tokenizer(g_model), piece, strlen(piece), 1, id, 4, &n), DEG_OK);
    cr_assert_eq(n, 1, "%s is one token", piece);
    return id[0];
}

Test(generate, chat_format_matches_transformers_goldens)
{
    deg_model_info mi;
    cr_assert_eq(deg_model_get_info(g_model, &mi), DEG_OK);
    json_error_t err;
    json_t *g = json_load_file(DEG_SOURCE_ROOT "/tests/goldens/chat_goldens.json", 0, &err);
    cr_assert_not_null(g, "%s", err.text);
    size_t i, n_checked = 0;
    json_t *c;
    json_array_foreach(json_object_get(g, "cases"), i, c) {
        if (strcmp(json_string_value(json_object_get(c, "layout")), "chatml") != 0) continue;
        json_t *msgs = json_object_get(c, "messages");
        size_t n = json_array_size(msgs);
        deg_chat_message *m = calloc(n, sizeof *m);
        for (size_t j = 0; j < n; j++) {
            m[j].role = json_string_value(json_object_get(json_array_get(msgs, j), "role"));
            m[j].content =
                json_string_value(json_object_get(json_array_get(msgs, j), "content"));
        }
        char *out = NULL;
        int gen = json_is_true(json_object_get(c, "add_generation_prompt"));
        cr_assert_eq(deg_chat_format(g_model, m, n, gen, &out), DEG_OK, "%s", deg_errmsg());
        cr_assert_str_eq(out, json_string_value(json_object_get(c, "text")), "case %s",
                         json_string_value(json_object_get(c, "name")));
        deg_free(out);
        free(m);
        n_checked++;
    }
    cr_assert(n_checked >= 20);
    json_decref(g);
    /* the chat prompt tokenizes with <|im_start|> / <|im_end|> as single ids */
    cr_assert_eq(token_id("<|im_start|>"), 1);
    cr_assert_eq(token_id("<|im_end|>"), 2);
    cr_assert_eq(mi.eos_id, 2);
}

/* On native-f32act (the f32 path's answer): the default native mode's 8-bit
 * activations flip this question's first-token near-tie ('The' 25.325 vs 'L'
 * 25.243 in f32) as llama.cpp does on the same file (test_quant_smollm2.c's
 * chat_answer_f32act_is_sensible logs both answers); the other tests here
 * run on the default. */
Test(generate, greedy_chat_answer_is_sensible_and_stops)
{
    size_t n_prompt;
    int32_t *prompt = chat_ids("What is the capital of France?", &n_prompt);
    deg_sample_params p = deg_sample_params_default();
    p.max_tokens = 48;
    int32_t out[48];
    size_t n_out = 0;
    deg_gen_stats st;
    deg_model_params mp = deg_model_default_params();
    mp.weights = DEG_WEIGHTS_NATIVE_F32ACT;
    deg_model *m = NULL;
    cr_assert_eq(deg_model_load_with_params(model_path(), &mp, &m), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_generate(m, prompt, n_prompt, &p, out, 48, &n_out, &st), DEG_OK, "%s",
                 deg_errmsg());
    char *text = detok(out, n_out);
    cr_log_info("greedy answer (%zu tokens): %s", n_out, text);
    cr_assert(strstr(text, "Paris") != NULL, "answer: %s", text);
    cr_assert_eq(st.stopped, 1, "stops at <|im_end|> within 48 tokens: %s", text);
    cr_assert_eq(out[n_out - 1], 2);
    cr_assert_eq(st.prompt_tokens, n_prompt);
    cr_assert_eq(st.generated_tokens, n_out);
    cr_assert(st.prefill_seconds > 0.0 && st.decode_seconds > 0.0);
    /* greedy is deterministic */
    int32_t again[48];
    size_t n_again = 0;
    cr_assert_eq(deg_generate(m, prompt, n_prompt, &p, again, 48, &n_again, NULL), DEG_OK);
    cr_assert_eq(n_again, n_out);
    cr_assert_eq(memcmp(again, out, n_out * sizeof *out), 0);
    deg_model_free(m);
    free(text);
    free(prompt);
}

Test(generate, seeded_sampling_is_reproducible)
{
    size_t n_prompt;
    int32_t *prompt = chat_ids("Write a short poem about the sea.", &n_prompt);
    deg_sample_params p = deg_sample_params_default();
    p.temperature = 0.9f;
    p.top_k = 50;
    p.top_p = 0.95f;
    p.seed = 42;
    p.max_tokens = 16;
    int32_t a[16], b[16], c[16];
    size_t na, nb, nc;
    cr_assert_eq(deg_generate(g_model, prompt, n_prompt, &p, a, 16, &na, NULL), DEG_OK);
    cr_assert_eq(deg_generate(g_model, prompt, n_prompt, &p, b, 16, &nb, NULL), DEG_OK);
    cr_assert_eq(na, nb);
    cr_assert_eq(memcmp(a, b, na * sizeof *a), 0, "same seed, same ids");
    p.seed = 43;
    cr_assert_eq(deg_generate(g_model, prompt, n_prompt, &p, c, 16, &nc, NULL), DEG_OK);
    cr_assert(nc != na || memcmp(a, c, na * sizeof *a) != 0, "another seed, another text");
    char *ta = detok(a, na), *tc = detok(c, nc);
    cr_log_info("seed 42: %s\nseed 43: %s", ta, tc);
    free(ta);
    free(tc);
    free(prompt);
}

/* Row i of a batch: own prefix tokens and params. */
Test(generate, batched_rows_equal_single_rows_bitwise)
{
    size_t n_prompt;
    int32_t *prompt = chat_ids("Tell me something about cats.", &n_prompt);
    check_batched(g_model, prompt, n_prompt);
    free(prompt);
}

Test(generate, max_tokens_stop_ids_and_continuation)
{
    size_t n_prompt;
    int32_t *prompt = chat_ids("Count from one to twenty in words.", &n_prompt);
    check_stop_and_continuation(g_model, prompt, n_prompt);
    free(prompt);
}

