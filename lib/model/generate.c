/* Generation: lockstep decode of several forks (deg_forks_generate) and the
 * one-prompt convenience (deg_generate). Contracts in include/deg.h.
 *
 * Per step, every live row samples one id from its own logits row with its
 * own stream (sample.h), then all rows that go on are fed together through
 * deg_forks_feed, whose rows are batch-invariant: so a row's ids depend only
 * on its fork, its params and its seed, never on the other rows. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/run.h"
#include "base/status.h"
#include "model/chat.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/sample.h"
#include "model/state.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


typedef struct gen_row {
    dg_rng rng;
    const int32_t *stops;
    size_t n_stops;
    int32_t max_tokens;
    int live;
    int in_step;
} gen_row;

static int is_stop(const gen_row *r, int32_t id)
{
    return dg_is_stop(r->stops, r->n_stops, id);
}

deg_status deg_forks_generate(deg_fork *const *forks, size_t n_forks,
                              const deg_sample_params *params, int32_t *const *out_ids,
                              size_t *n_out, deg_gen_stats *stats)
{
    return deg_forks_generate_ex(forks, n_forks, params, out_ids, n_out, stats, NULL);
}

static deg_status forks_generate(deg_fork *const *forks, size_t n_forks,
                                 const deg_sample_params *params, int32_t *const *out_ids,
                                 size_t *n_out, deg_gen_stats *stats, const dg_limits *lim);

deg_status deg_forks_generate_ex(deg_fork *const *forks, size_t n_forks,
                                 const deg_sample_params *params, int32_t *const *out_ids,
                                 size_t *n_out, deg_gen_stats *stats,
                                 const deg_run_limits *limits)
{
    dg_limits lim;
    dg_limits_init(&lim, limits);
    return forks_generate(forks, n_forks, params, out_ids, n_out, stats, &lim);
}

deg_status dg_generate_check(deg_fork *const *forks, size_t n_forks,
                             const deg_sample_params *params, int32_t *const *out_ids,
                             size_t *n_out, const char *w)
{
    if (!forks || !params || !out_ids || !n_out)
        return dg_fail(DEG_ERR_ARG, "%s: NULL forks, params, out_ids or n_out", w);
    for (size_t i = 0; i < n_forks; i++) n_out[i] = 0;
    if (!forks[0]) return dg_fail(DEG_ERR_ARG, "%s: fork 0 is NULL", w);
    const deg_model *m = forks[0]->trunk->model;
    for (size_t i = 0; i < n_forks; i++) {
        if (!forks[i]) return dg_fail(DEG_ERR_ARG, "%s: fork %zu is NULL", w, i);
        if (forks[i]->trunk->model != m)
            return dg_fail(DEG_ERR_ARG, "%s: fork %zu belongs to another model", w, i);
        for (size_t j = 0; j < i; j++)
            if (forks[j] == forks[i])
                return dg_fail(DEG_ERR_ARG, "%s: fork %zu is also row %zu", w, i, j);
        deg_status s = dg_sample_check(&params[i]);
        if (s != DEG_OK) return dg_fail_context(s, "%s: row %zu", w, i);
        if (params[i].max_tokens <= 0)
            return dg_fail(DEG_ERR_ARG, "%s: row %zu: max_tokens %d must be > 0", w, i,
                           (int)params[i].max_tokens);
        if (params[i].n_stop_ids && !params[i].stop_ids)
            return dg_fail(DEG_ERR_ARG, "%s: row %zu: stop_ids is NULL with n_stop_ids %zu", w,
                           i, params[i].n_stop_ids);
        if (!out_ids[i]) return dg_fail(DEG_ERR_ARG, "%s: out_ids[%zu] is NULL", w, i);
    }
    return DEG_OK;
}

static deg_status forks_generate(deg_fork *const *forks, size_t n_forks,
                                 const deg_sample_params *params, int32_t *const *out_ids,
                                 size_t *n_out, deg_gen_stats *stats, const dg_limits *lim)
{
    if (n_forks == 0) return DEG_OK;
    DG_TRY(dg_generate_check(forks, n_forks, params, out_ids, n_out, "deg_forks_generate"));
    const deg_model *m = forks[0]->trunk->model;

    deg_model_info info;
    DG_TRY(deg_model_get_info(m, &info));
    const size_t V = (size_t)info.n_vocab;
    int32_t dstops[DG_CHAT_MAX_STOPS];
    const size_t n_dstops = dg_chat_stop_ids(m, dg_chat_layout_of_model(m), dstops);

    gen_row *rows = calloc(n_forks, sizeof *rows);
    float *logits = malloc(n_forks * V * sizeof *logits);
    deg_fork **bf = malloc(n_forks * sizeof *bf);       /* rows fed this step */
    int32_t *b_id = malloc(n_forks * sizeof *b_id);
    const int32_t **b_ids = malloc(n_forks * sizeof *b_ids);
    size_t *b_n = malloc(n_forks * sizeof *b_n);
    float **b_logits = malloc(n_forks * sizeof *b_logits);
    dg_sampler *sampler = NULL;
    deg_status st = DEG_OK;
    if (!rows || !logits || !bf || !b_id || !b_ids || !b_n || !b_logits)
        st = dg_fail(DEG_ERR_NOMEM, "deg_forks_generate: out of memory for %zu rows", n_forks);
    if (st == DEG_OK) st = dg_sampler_new(info.n_vocab, &sampler);

    double t0 = now_seconds();
    for (size_t i = 0; i < n_forks && st == DEG_OK; i++) {
        gen_row *r = &rows[i];
        dg_rng_seed(&r->rng, params[i].seed);
        r->stops = params[i].stop_ids ? params[i].stop_ids : dstops;
        r->n_stops = params[i].stop_ids ? params[i].n_stop_ids : n_dstops;
        r->max_tokens = params[i].max_tokens;
        r->live = 1;
        if (stats) {
            memset(&stats[i], 0, sizeof stats[i]);
            stats[i].prompt_tokens = deg_trunk_len(forks[i]->trunk) + deg_fork_len(forks[i]);
        }
        st = deg_fork_logits(forks[i], logits + i * V);
        if (st != DEG_OK) st = dg_fail_context(st, "deg_forks_generate: row %zu", i);
    }

    size_t n_live = n_forks;
    while (st == DEG_OK && n_live > 0) {
        if ((st = dg_limits_check(lim, "decode")) != DEG_OK) break;
        /* a row is charged the steps it takes part in */
        for (size_t i = 0; i < n_forks; i++) rows[i].in_step = rows[i].live;
        /* sample every live row; gather those that go on */
        size_t nb = 0;
        for (size_t i = 0; i < n_forks && st == DEG_OK; i++) {
            gen_row *r = &rows[i];
            if (!r->live) continue;
            int32_t id;
            st = dg_sample(sampler, logits + i * V, &params[i], &r->rng, &id);
            if (st != DEG_OK) {
                st = dg_fail_context(st, "deg_forks_generate: row %zu, token %zu", i, n_out[i]);
                break;
            }
            out_ids[i][n_out[i]++] = id;
            int stop = is_stop(r, id);
            if (stop || n_out[i] >= (size_t)r->max_tokens) {
                r->live = 0;
                n_live--;
                if (stats) stats[i].stopped = stop;
                continue;
            }
            b_id[nb] = id;
            bf[nb] = forks[i];
            b_ids[nb] = &b_id[nb];
            b_n[nb] = 1;
            b_logits[nb] = logits + i * V;
            nb++;
        }
        if (st == DEG_OK && nb > 0)
            st = deg_forks_feed(bf, nb, b_ids, b_n, b_logits);
        double t1 = now_seconds();
        if (stats)
            for (size_t i = 0; i < n_forks; i++) {
                if (rows[i].in_step) stats[i].decode_seconds += t1 - t0;
                stats[i].generated_tokens = n_out[i];
            }
        t0 = t1;
    }

    dg_sampler_free(sampler);
    free(rows);
    free(logits);
    free(bf);
    free(b_id);
    free(b_ids);
    free(b_n);
    free(b_logits);
    return st;
}

deg_status deg_generate(const deg_model *model, const int32_t *prompt, size_t n_prompt,
                        const deg_sample_params *params, int32_t *out_ids, size_t cap,
                        size_t *n_out, deg_gen_stats *stats)
{
    return deg_generate_ex(model, prompt, n_prompt, params, out_ids, cap, n_out, stats, NULL);
}

deg_status deg_generate_ex(const deg_model *model, const int32_t *prompt, size_t n_prompt,
                           const deg_sample_params *params, int32_t *out_ids, size_t cap,
                           size_t *n_out, deg_gen_stats *stats, const deg_run_limits *limits)
{
    if (n_out) *n_out = 0;
    if (stats) memset(stats, 0, sizeof *stats);
    if (!model || !params || !out_ids || !n_out)
        return dg_fail(DEG_ERR_ARG, "deg_generate: NULL model, params, out_ids or n_out");
    if (!prompt || n_prompt == 0)
        return dg_fail(DEG_ERR_ARG, "deg_generate: the prompt is empty");
    if (params->max_tokens <= 0)
        return dg_fail(DEG_ERR_ARG, "deg_generate: max_tokens %d must be > 0",
                       (int)params->max_tokens);
    if (cap < (size_t)params->max_tokens)
        return dg_fail(DEG_ERR_ARG, "deg_generate: cap %zu is smaller than max_tokens %d", cap,
                       (int)params->max_tokens);
    deg_trunk *trunk = NULL;
    deg_fork *fork = NULL;
    DG_TRY(deg_trunk_new(model, &trunk));
    /* the deadline counts from here; the prefill polls it between passes */
    dg_limits lim;
    dg_limits_init(&lim, limits);
    double t0 = now_seconds();
    dg_poll prev = dg_run_push(dg_limits_poll, &lim);
    deg_status st = dg_limits_check(&lim, "prefill");
    if (st == DEG_OK) st = deg_trunk_prefill(trunk, prompt, n_prompt, NULL, NULL);
    dg_run_pop(prev);
    double t1 = now_seconds();
    if (st == DEG_OK) st = deg_fork_new(trunk, &fork);
    if (st == DEG_OK) {
        st = forks_generate(&fork, 1, params, &out_ids, n_out, stats, &lim);
        if (stats) {
            stats->prompt_tokens = n_prompt;
            stats->prefill_seconds = t1 - t0;
        }
    }
    deg_fork_free(fork);
    deg_trunk_free(trunk);
    if (st != DEG_OK) return dg_fail_context(st, "deg_generate");
    return DEG_OK;
}
