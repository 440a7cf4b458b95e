/* Generation API on the real SmolLM2-135M-Instruct: chat layout from the
 * GGUF metadata, greedy chat answer, seeded sampling reproducible, batched
 * forks bitwise equal to single-row runs, stop/max_tokens, continuation.
 * Model: $DEG_MODEL or ${DEG_CACHE:-~/.cache/deg}/models/SmolLM2-135M-Instruct.Q4_1.gguf;
 * the tests skip (with the reason) when it is absent. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deg.h"

static char g_path[4096];

static const char *model_path(void)
{
    const char *env = getenv("DEG_MODEL");
    if (env && *env) {
        snprintf(g_path, sizeof g_path, "%s", env);
    } else {
        const char *cache = getenv("DEG_CACHE");
        if (cache && *cache)
            snprintf(g_path, sizeof g_path, "%s/models/SmolLM2-135M-Instruct.Q4_1.gguf", cache);
        else
            snprintf(g_path, sizeof g_path,
                     "%s/.cache/deg/models/SmolLM2-135M-Instruct.Q4_1.gguf",
                     getenv("HOME") ? getenv("HOME") : "");
    }
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

TestSuite(generate, .init = load, .fini = unload, .timeout = 300);

/* Chat prompt ids for one user message (caller frees). */
static int32_t *chat_ids(const char *user, size_t *n)
{
    deg_chat_message m[1] = {{"user", user}};
    char *text = NULL;
    cr_assert_eq(deg_chat_format(g_model, m, 1, 1, &text), DEG_OK, "%s", deg_errmsg());
    size_t cap = strlen(text) + 16;
    int32_t *ids = malloc(cap * sizeof *ids);
    cr_assert_eq(deg_tokenize(g_model, text, strlen(text), 1, ids, cap, n), DEG_OK, "%s",
                 deg_errmsg());
    deg_free(text);
    return ids;
}

static char *detok(const int32_t *ids, size_t n)
{
    size_t len = 0;
    deg_status s = deg_detokenize(g_model, ids, n, NULL, 0, &len);
    cr_assert(s == DEG_OK || s == DEG_ERR_RANGE);
    char *buf = malloc(len + 1);
    cr_assert_eq(deg_detokenize(g_model, ids, n, buf, len, &len), DEG_OK);
    buf[len] = '\0';
    return buf;
}

static int32_t token_id(const char *piece)
{
    int32_t id[4];
    size_t n = 0;
    cr_assert_eq(deg_tokenize(g_model, piece, strlen(piece), 1, id, 4, &n), DEG_OK);
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

Test(generate, greedy_chat_answer_is_sensible_and_stops)
{
    size_t n_prompt;
    int32_t *prompt = chat_ids("What is the capital of France?", &n_prompt);
    deg_sample_params p = deg_sample_params_default();
    p.max_tokens = 48;
    int32_t out[48];
    size_t n_out = 0;
    deg_gen_stats st;
    cr_assert_eq(deg_generate(g_model, prompt, n_prompt, &p, out, 48, &n_out, &st), DEG_OK, "%s",
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
    cr_assert_eq(deg_generate(g_model, prompt, n_prompt, &p, again, 48, &n_again, NULL), DEG_OK);
    cr_assert_eq(n_again, n_out);
    cr_assert_eq(memcmp(again, out, n_out * sizeof *out), 0);
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
#define NROWS 5
static const int32_t extra[NROWS][3] = {{0}, {28, 253}, {330}, {0}, {506, 314, 101}};
static const size_t n_extra[NROWS] = {0, 2, 1, 0, 3};

static deg_sample_params row_params(int i)
{
    deg_sample_params p = deg_sample_params_default();
    switch (i) {
    case 0: p.max_tokens = 10; break;                                   /* greedy */
    case 1: p.temperature = 0.9f; p.seed = 1; p.max_tokens = 4; break;
    case 2: p.temperature = 1.2f; p.top_k = 50; p.seed = 2; p.max_tokens = 12; break;
    case 3: p.temperature = 0.8f; p.top_p = 0.8f; p.seed = 3; p.max_tokens = 8; break;
    default: p.temperature = 0.7f; p.top_k = 20; p.top_p = 0.9f; p.seed = 4; p.max_tokens = 12;
    }
    return p;
}

/* Rows of one deg_forks_generate batch (own prefixes of different lengths,
 * different params and max_tokens, so they retire at different steps) equal
 * single-row runs: same ids, bitwise same final logits. */
static void check_batched(deg_model *model, const int32_t *prompt, size_t n_prompt)
{
    deg_trunk *trunk;
    cr_assert_eq(deg_trunk_new(model, &trunk), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(trunk, prompt, n_prompt, NULL, NULL), DEG_OK);
    deg_model_info mi;
    cr_assert_eq(deg_model_get_info(model, &mi), DEG_OK);
    const size_t V = (size_t)mi.n_vocab;

    /* single-row runs */
    int32_t single[NROWS][12];
    size_t n_single[NROWS];
    float *logit_single = malloc(NROWS * V * sizeof(float));
    for (int i = 0; i < NROWS; i++) {
        deg_fork *f;
        cr_assert_eq(deg_fork_new(trunk, &f), DEG_OK);
        if (n_extra[i]) cr_assert_eq(deg_fork_feed(f, extra[i], n_extra[i], NULL), DEG_OK);
        deg_sample_params p = row_params(i);
        int32_t *o = single[i];
        cr_assert_eq(deg_forks_generate(&f, 1, &p, &o, &n_single[i], NULL), DEG_OK, "%s",
                     deg_errmsg());
        cr_assert_eq(deg_fork_logits(f, logit_single + i * V), DEG_OK);
        deg_fork_free(f);
    }

    /* all rows in one batch, in reverse order to move every row */
    deg_fork *forks[NROWS];
    int32_t batch[NROWS][12];
    int32_t *outs[NROWS];
    size_t n_batch[NROWS];
    deg_sample_params ps[NROWS];
    deg_gen_stats stats[NROWS];
    for (int k = 0; k < NROWS; k++) {
        int i = NROWS - 1 - k;
        cr_assert_eq(deg_fork_new(trunk, &forks[k]), DEG_OK);
        if (n_extra[i]) cr_assert_eq(deg_fork_feed(forks[k], extra[i], n_extra[i], NULL), DEG_OK);
        ps[k] = row_params(i);
        outs[k] = batch[i];
    }
    cr_assert_eq(deg_forks_generate(forks, NROWS, ps, outs, n_batch, stats), DEG_OK, "%s",
                 deg_errmsg());
    float *logit = malloc(V * sizeof(float));
    for (int k = 0; k < NROWS; k++) {
        int i = NROWS - 1 - k;
        cr_assert_eq(n_batch[k], n_single[i], "row %d: %zu ids batched, %zu alone", i, n_batch[k],
                     n_single[i]);
        cr_assert_eq(memcmp(batch[i], single[i], n_single[i] * sizeof(int32_t)), 0,
                     "row %d ids differ", i);
        cr_assert_eq(stats[k].generated_tokens, n_batch[k]);
        cr_assert_eq(stats[k].prompt_tokens, n_prompt + n_extra[i]);
        cr_assert_eq(deg_fork_len(forks[k]), n_extra[i] + n_batch[k] - 1,
                     "all ids but the last are fed");
        cr_assert_eq(deg_fork_logits(forks[k], logit), DEG_OK);
        cr_assert_eq(memcmp(logit, logit_single + i * V, V * sizeof(float)), 0,
                     "row %d final logits differ bitwise", i);
        deg_fork_free(forks[k]);
    }
    /* rows retired at different steps: max_tokens differ */
    cr_assert_eq(n_single[1], 4);
    free(logit);
    free(logit_single);
    deg_trunk_free(trunk);
}

Test(generate, batched_rows_equal_single_rows_bitwise)
{
    size_t n_prompt;
    int32_t *prompt = chat_ids("Tell me something about cats.", &n_prompt);
    check_batched(g_model, prompt, n_prompt);
    free(prompt);
}

/* max_tokens cuts a greedy run, a stop id ends it at its first occurrence
 * (included), and feeding the last id continues it exactly. */
static void check_stop_and_continuation(deg_model *model, const int32_t *prompt,
                                        size_t n_prompt)
{
    int32_t no_stop = 0;
    deg_sample_params p = deg_sample_params_default();
    p.max_tokens = 12;
    p.stop_ids = &no_stop;
    p.n_stop_ids = 0;
    int32_t full[12];
    size_t n_full;
    deg_gen_stats st;
    cr_assert_eq(deg_generate(model, prompt, n_prompt, &p, full, 12, &n_full, &st), DEG_OK);
    cr_assert_eq(n_full, 12);
    cr_assert_eq(st.stopped, 0);

    /* max_tokens 3: the first three of the same greedy run */
    p.max_tokens = 3;
    int32_t three[12];
    size_t n_three;
    cr_assert_eq(deg_generate(model, prompt, n_prompt, &p, three, 12, &n_three, &st), DEG_OK);
    cr_assert_eq(n_three, 3);
    cr_assert_eq(st.stopped, 0);
    cr_assert_eq(memcmp(three, full, 3 * sizeof(int32_t)), 0);

    /* a stop id: ends at its first occurrence, included */
    int32_t stop = full[5];
    size_t first = 0;
    while (full[first] != stop) first++;
    p.max_tokens = 12;
    p.stop_ids = &stop;
    p.n_stop_ids = 1;
    int32_t stopped[12];
    size_t n_stopped;
    cr_assert_eq(deg_generate(model, prompt, n_prompt, &p, stopped, 12, &n_stopped, &st),
                 DEG_OK);
    cr_assert_eq(n_stopped, first + 1);
    cr_assert_eq(st.stopped, 1);
    cr_assert_eq(stopped[n_stopped - 1], stop);
    cr_assert_eq(memcmp(stopped, full, n_stopped * sizeof(int32_t)), 0);

    /* continuation: 6 ids, feed the last, 6 more == the 12-id run */
    deg_trunk *t;
    deg_fork *f;
    cr_assert_eq(deg_trunk_new(model, &t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, prompt, n_prompt, NULL, NULL), DEG_OK);
    cr_assert_eq(deg_fork_new(t, &f), DEG_OK);
    p.stop_ids = &no_stop;
    p.n_stop_ids = 0;
    p.max_tokens = 6;
    int32_t part[12];
    int32_t *o = part;
    size_t n1, n2;
    cr_assert_eq(deg_forks_generate(&f, 1, &p, &o, &n1, NULL), DEG_OK);
    cr_assert_eq(deg_fork_feed(f, &part[5], 1, NULL), DEG_OK);
    o = part + 6;
    cr_assert_eq(deg_forks_generate(&f, 1, &p, &o, &n2, NULL), DEG_OK);
    cr_assert_eq(n1 + n2, 12);
    cr_assert_eq(memcmp(part, full, 12 * sizeof(int32_t)), 0);
    deg_fork_free(f);
    deg_trunk_free(t);
}

Test(generate, max_tokens_stop_ids_and_continuation)
{
    size_t n_prompt;
    int32_t *prompt = chat_ids("Count from one to twenty in words.", &n_prompt);
    check_stop_and_continuation(g_model, prompt, n_prompt);
    free(prompt);
}

/* ---- tiny random models from tests/goldens (always present) ------------- */

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
