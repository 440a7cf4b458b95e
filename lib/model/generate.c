/* Generation: the library's decode loop (dg_forks_decode, generate.h: lockstep
 * rows, each with its own token choice), lockstep sampling of several forks on it
 * (deg_forks_generate) and the one-prompt convenience (deg_generate). Contracts in
 * include/deg.h.
 *
 * deg_forks_generate: per step, every live row samples one id from its own logits
 * row with its own stream (sample.h), then all rows that go on are fed together
 * through deg_forks_feed, whose rows are batch-invariant: so a row's ids depend
 * only on its fork, its params and its seed, never on the other rows. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/run.h"
#include "base/status.h"
#include "model/arch.h"
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


/* ---- the decode loop ------------------------------------------------------ */

/* One deg_forks_feed of the nb gathered rows, its status mapped by d->fed. */
static deg_status decode_feed(const dg_decode *d, deg_fork **bf, size_t nb,
                              const int32_t **b_ids, const size_t *b_n, float **b_logits)
{
    deg_status st = deg_forks_feed(bf, nb, b_ids, b_n, b_logits);
    return d->fed ? d->fed(d->ud, st) : st;
}

deg_status dg_forks_decode(deg_fork *const *forks, size_t n, const int32_t *const *prompts,
                           const size_t *n_prompt, float *logits, const dg_decode *d)
{
    if (n == 0) return DEG_OK;
    const size_t V = (size_t)forks[0]->trunk->model->hp.n_vocab;
    deg_fork **bf = malloc(n * sizeof *bf);       /* rows fed this step */
    int32_t *b_id = malloc(n * sizeof *b_id);
    const int32_t **b_ids = malloc(n * sizeof *b_ids);
    size_t *b_n = malloc(n * sizeof *b_n);
    float **b_logits = logits ? malloc(n * sizeof *b_logits) : NULL;
    unsigned char *done = calloc(n, 1);
    deg_status st = DEG_OK;
    if (!bf || !b_id || !b_ids || !b_n || (logits && !b_logits) || !done)
        st = dg_fail(DEG_ERR_NOMEM, "decode: out of memory for %zu rows", n);
    if (st == DEG_OK && prompts) {
        for (size_t i = 0; i < n; i++) {
            bf[i] = forks[i];
            b_ids[i] = prompts[i];
            b_n[i] = n_prompt[i];
            if (b_logits) b_logits[i] = n_prompt[i] ? logits + i * V : NULL;
        }
        st = decode_feed(d, bf, n, b_ids, b_n, b_logits);
    }
    while (st == DEG_OK) {
        if (d->step_begin && (st = d->step_begin(d->ud)) != DEG_OK) break;
        size_t nb = 0;
        for (size_t i = 0; i < n && st == DEG_OK; i++) {
            if (done[i]) continue;
            int32_t id = -1;
            int feed = 0;
            if ((st = d->choose(d->ud, i, &id, &feed)) != DEG_OK) break;
            if (!feed) {
                done[i] = 1;
                continue;
            }
            b_id[nb] = id;
            bf[nb] = forks[i];
            b_ids[nb] = &b_id[nb];
            b_n[nb] = 1;
            if (b_logits) b_logits[nb] = logits + i * V;
            nb++;
        }
        if (st == DEG_OK && nb > 0) st = decode_feed(d, bf, nb, b_ids, b_n, b_logits);
        if (d->step_end) d->step_end(d->ud);
        if (nb == 0) break;
    }
    free(bf);
    free(b_id);
    free(b_ids);
    free(b_n);
    free(b_logits);
    free(done);
    return st;
}

/* ---- deg_forks_generate: the sampler as the rows' choice --------------------- */

typedef struct gen_row {
    dg_rng rng;
    const int32_t *stops;
    size_t n_stops;
    int32_t max_tokens;
    int live;
    int in_step;
} gen_row;

typedef struct gen_ctx {
    deg_fork *const *forks;
    size_t n_forks, V;
    const deg_sample_params *params;
    int32_t *const *out_ids;
    size_t *n_out;
    deg_gen_stats *stats;
    const dg_limits *lim;
    gen_row *rows;
    float *logits;         /* [n_forks, V] each row's logits after its last token */
    dg_logits_seen seen;   /* may be NULL (dg_forks_generate_seen) */
    void *seen_ud;
    dg_sampler *sampler;
    double t0;             /* the current step's start (stats) */
} gen_ctx;

/* The work limits, and the rows that take part in the step (a row is charged
 * the steps it takes part in). */
static deg_status gen_step_begin(void *ud)
{
    gen_ctx *c = ud;
    DG_TRY(dg_limits_check(c->lim, "decode"));
    for (size_t i = 0; i < c->n_forks; i++) c->rows[i].in_step = c->rows[i].live;
    return DEG_OK;
}

/* Sample row i's next id from its logits with its own stream; a stop id or
 * max_tokens ends the row (the stop id is kept in the output, not fed). */
static deg_status gen_choose(void *ud, size_t i, int32_t *id, int *feed)
{
    gen_ctx *c = ud;
    gen_row *r = &c->rows[i];
    if (c->seen) DG_TRY(c->seen(c->seen_ud, i, c->n_out[i], c->logits + i * c->V));
    deg_status st = dg_sample(c->sampler, c->logits + i * c->V, &c->params[i], &r->rng, id);
    if (st != DEG_OK)
        return dg_fail_context(st, "deg_forks_generate: row %zu, token %zu", i, c->n_out[i]);
    c->out_ids[i][c->n_out[i]++] = *id;
    int stop = dg_is_stop(r->stops, r->n_stops, *id);
    *feed = !(stop || c->n_out[i] >= (size_t)r->max_tokens);
    if (!*feed) {
        r->live = 0;
        if (c->stats) c->stats[i].stopped = stop;
    }
    return DEG_OK;
}

static void gen_step_end(void *ud)
{
    gen_ctx *c = ud;
    double t1 = now_seconds();
    if (c->stats)
        for (size_t i = 0; i < c->n_forks; i++) {
            if (c->rows[i].in_step) c->stats[i].decode_seconds += t1 - c->t0;
            c->stats[i].generated_tokens = c->n_out[i];
        }
    c->t0 = t1;
}

deg_status deg_forks_generate(deg_fork *const *forks, size_t n_forks,
                              const deg_sample_params *params, int32_t *const *out_ids,
                              size_t *n_out, deg_gen_stats *stats)
{
    return deg_forks_generate_ex(forks, n_forks, params, out_ids, n_out, stats, NULL);
}

static deg_status forks_generate(deg_fork *const *forks, size_t n_forks,
                                 const deg_sample_params *params, int32_t *const *out_ids,
                                 size_t *n_out, deg_gen_stats *stats, const dg_limits *lim,
                                 dg_logits_seen seen, void *seen_ud);

deg_status dg_forks_generate_seen(deg_fork *const *forks, size_t n_forks,
                                  const deg_sample_params *params, int32_t *const *out_ids,
                                  size_t *n_out, dg_logits_seen seen, void *ud)
{
    dg_limits lim;
    dg_limits_init(&lim, NULL, 1);
    return forks_generate(forks, n_forks, params, out_ids, n_out, NULL, &lim, seen, ud);
}

deg_status deg_forks_generate_ex(deg_fork *const *forks, size_t n_forks,
                                 const deg_sample_params *params, int32_t *const *out_ids,
                                 size_t *n_out, deg_gen_stats *stats,
                                 const deg_run_limits *limits)
{
    dg_limits lim;
    dg_limits_init(&lim, limits, 1);
    return forks_generate(forks, n_forks, params, out_ids, n_out, stats, &lim, NULL, NULL);
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
                                 size_t *n_out, deg_gen_stats *stats, const dg_limits *lim,
                                 dg_logits_seen seen, void *seen_ud)
{
    if (n_forks == 0) return DEG_OK;
    DG_TRY(dg_generate_check(forks, n_forks, params, out_ids, n_out, "deg_forks_generate"));
    const deg_model *m = forks[0]->trunk->model;

    deg_model_info info;
    DG_TRY(deg_model_get_info(m, &info));
    int32_t dstops[DG_CHAT_MAX_STOPS];
    const size_t n_dstops = dg_chat_stop_ids(m, dg_chat_layout_of_model(m), dstops);
    gen_ctx c = {.forks = forks, .n_forks = n_forks, .V = (size_t)info.n_vocab,
                 .params = params, .out_ids = out_ids, .n_out = n_out, .stats = stats,
                 .lim = lim, .seen = seen, .seen_ud = seen_ud};
    c.rows = calloc(n_forks, sizeof *c.rows);
    c.logits = malloc(n_forks * c.V * sizeof *c.logits);
    deg_status st = DEG_OK;
    if (!c.rows || !c.logits)
        st = dg_fail(DEG_ERR_NOMEM, "deg_forks_generate: out of memory for %zu rows", n_forks);
    if (st == DEG_OK) st = dg_sampler_new(info.n_vocab, &c.sampler);

    c.t0 = now_seconds();
    for (size_t i = 0; i < n_forks && st == DEG_OK; i++) {
        gen_row *r = &c.rows[i];
        dg_rng_seed(&r->rng, params[i].seed);
        r->stops = params[i].stop_ids ? params[i].stop_ids : dstops;
        r->n_stops = params[i].stop_ids ? params[i].n_stop_ids : n_dstops;
        r->max_tokens = params[i].max_tokens;
        r->live = 1;
        if (stats) {
            memset(&stats[i], 0, sizeof stats[i]);
            stats[i].prompt_tokens = deg_trunk_len(forks[i]->trunk) + deg_fork_len(forks[i]);
        }
        st = deg_fork_logits(forks[i], c.logits + i * c.V);
        if (st != DEG_OK) st = dg_fail_context(st, "deg_forks_generate: row %zu", i);
    }
    const dg_decode d = {.choose = gen_choose, .step_begin = gen_step_begin,
                         .step_end = gen_step_end, .ud = &c};
    if (st == DEG_OK) st = dg_forks_decode(forks, n_forks, NULL, NULL, c.logits, &d);
    dg_sampler_free(c.sampler);
    free(c.rows);
    free(c.logits);
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
    dg_limits_init(&lim, limits, 1);
    double t0 = now_seconds();
    dg_poll prev = dg_run_push(dg_limits_poll, &lim);
    deg_status st = dg_limits_check(&lim, "prefill");
    if (st == DEG_OK) st = deg_trunk_prefill(trunk, prompt, n_prompt, NULL, NULL);
    dg_run_pop(prev);
    double t1 = now_seconds();
    if (st == DEG_OK) st = deg_fork_new(trunk, &fork);
    if (st == DEG_OK) {
        st = forks_generate(&fork, 1, params, &out_ids, n_out, stats, &lim, NULL, NULL);
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
