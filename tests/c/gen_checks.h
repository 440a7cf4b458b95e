/* Checks of the generation API shared by test_generate.c (tiny random
 * models) and test_generate_smollm2.c (the real SmolLM2). Header-only:
 * included by one test file each. */
#ifndef DG_TESTS_GEN_CHECKS_H
#define DG_TESTS_GEN_CHECKS_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "deg.h"

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

#endif
