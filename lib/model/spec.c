/* Lossless speculative greedy decoding (deg_forks_generate_spec,
 * include/deg.h): per-stream drafts from suffix automata (draft.h), one
 * ragged deg_forks_feed per round, exact argmax verification, fork rewinds,
 * and the per-stream acceptance gate. */
#include <stdlib.h>
#include <string.h>

#include "base/run.h"
#include "base/status.h"
#include "model/arch.h"
#include "model/chat.h"
#include "model/draft.h"
#include "model/generate.h"
#include "model/sample.h"
#include "model/spec_gate.h"
#include "model/state.h"

deg_spec_params deg_spec_default_params(void)
{
    deg_spec_params p;
    memset(&p, 0, sizeof p);
    p.draft_max = 8;
    p.min_match = 2;
    p.gate = 1;
    p.gate_window = 16;
    p.gate_min_acceptance = 0.35f;
    p.gate_reprobe = 32;
    return p;
}

static deg_status check_spec(const deg_spec_params *p)
{
    if (p->draft_max < 1 || p->draft_max > 256)
        return dg_fail(DEG_ERR_ARG, "spec params: draft_max %d must be in [1, 256]",
                       (int)p->draft_max);
    if (p->min_match < 1)
        return dg_fail(DEG_ERR_ARG, "spec params: min_match %d must be >= 1", (int)p->min_match);
    if (p->gate != 0 && p->gate != 1)
        return dg_fail(DEG_ERR_ARG, "spec params: gate %d must be 0 or 1", (int)p->gate);
    if (p->gate_window < 1 || p->gate_window > 64)
        return dg_fail(DEG_ERR_ARG, "spec params: gate_window %d must be in [1, 64]",
                       (int)p->gate_window);
    if (!(p->gate_min_acceptance >= 0.0f && p->gate_min_acceptance <= 1.0f))
        return dg_fail(DEG_ERR_ARG, "spec params: gate_min_acceptance %g must be in [0, 1]",
                       (double)p->gate_min_acceptance);
    if (p->gate_reprobe < 1)
        return dg_fail(DEG_ERR_ARG, "spec params: gate_reprobe %d must be >= 1",
                       (int)p->gate_reprobe);
    return DEG_OK;
}

typedef struct spec_row {
    dg_sam own;             /* seed ++ emitted ids */
    const dg_sam *ref;      /* or NULL */
    dg_sam_match match;     /* own text against ref */
    dg_spec_gate gate;
    const int32_t *stops;
    size_t n_stops;
    int32_t max_tokens;
    int32_t carry;          /* last emitted id, not fed yet */
    int32_t *span;          /* [1 + draft_max]: carry ++ draft */
    size_t n_span;
    float *logits;          /* [1 + draft_max, n_vocab] */
    size_t len0;            /* fork length before the round's feed */
    int live, in_step;
    int no_drafts;          /* the model has recurrent layers: no rewinds */
} spec_row;

static deg_status row_emit(spec_row *r, int32_t id)
{
    DG_TRY(dg_sam_extend(&r->own, id));
    if (r->ref) dg_sam_match_step(r->ref, &r->match, id);
    return DEG_OK;
}

/* The round's draft after r->carry into r->span[1..]: at most k tokens of
 * the longest continuation (reference on a tie), if min_match long. */
static size_t row_draft(spec_row *r, const deg_spec_params *sp, size_t k)
{
    if (k == 0 || r->no_drafts || (sp->gate && r->gate.off)) return 0;
    size_t f1 = 0, a1 = 0, m1 = 0, f2 = 0, a2 = 0, m2 = 0;
    if (r->ref) dg_sam_ref_continuation(r->ref, &r->match, &f1, &a1, &m1);
    dg_sam_self_continuation(&r->own, &f2, &a2, &m2);
    const int32_t *src = NULL;
    size_t avail = 0;
    if (a1 && m1 >= (size_t)sp->min_match && m1 >= m2) {
        src = r->ref->text + f1;
        avail = a1;
    } else if (a2 && m2 >= (size_t)sp->min_match) {
        src = r->own.text + f2;
        avail = a2;
    }
    size_t n = avail < k ? avail : k;
    if (n) memcpy(r->span + 1, src, n * sizeof *src);
    return n;
}

/* Append id to row i's output; 1 if the row is done (stop id or
 * max_tokens), and then it leaves the batch. */
static int emit(spec_row *r, int32_t id, int32_t *out, size_t *n_out, deg_gen_stats *stats,
                deg_status *st)
{
    out[(*n_out)++] = id;
    int stop = dg_is_stop(r->stops, r->n_stops, id);
    if (stop || *n_out >= (size_t)r->max_tokens) {
        r->live = 0;
        if (stats) stats->stopped = stop;
        return 1;
    }
    *st = row_emit(r, id);
    return *st != DEG_OK;
}

/* Verify row r's round: its logits rows 0..n_span-1 after [carry, d1..dk].
 * Emits the kept drafts and the argmax after them (the next carry), rewinds
 * the fork past the rest, records the gate outcomes. */
static deg_status verify(spec_row *r, deg_fork *fork, dg_sampler *sm,
                         const deg_sample_params *prm, const deg_spec_params *sp, size_t V,
                         int32_t *out, size_t *n_out, deg_gen_stats *stats, deg_spec_stats *ss)
{
    size_t k = r->n_span - 1, i = 0, emitted = 0;
    deg_status st = DEG_OK;
    for (;; i++) {
        int32_t tok;
        DG_TRY(dg_sample(sm, r->logits + i * V, prm, NULL, &tok));
        int kept = i < k && tok == r->span[1 + i];
        if (i < k) {
            dg_spec_gate_record(&r->gate, sp, kept);
            if (ss) ss->drafted++, ss->accepted += (size_t)kept;
        }
        emitted++;
        if (emit(r, tok, out, n_out, stats, &st) || !kept) {
            if (st != DEG_OK) return st;
            /* drafts after a rejection were drafted and lost */
            for (size_t j = i + 1; r->live && !kept && j < k; j++) {
                dg_spec_gate_record(&r->gate, sp, 0);
                if (ss) ss->drafted++;
            }
            r->carry = tok;
            break;
        }
    }
    if (k == 0) dg_spec_gate_idle(&r->gate, sp, emitted);
    if (dg_spec_gate_check(&r->gate, sp) && ss) ss->gate_offs++;
    /* the fork keeps carry, d1..di: every emitted id but the newest */
    return deg_fork_truncate(fork, r->len0 + 1 + i);
}

/* Set up row i: its own index seeded, its reference matched over the seed,
 * its buffers; then its first id from the fork's current logits. */
static deg_status row_init(spec_row *r, deg_fork *fork, const deg_spec_stream *sm,
                           const deg_sample_params *prm, const deg_spec_params *sp,
                           const int32_t *dstops, size_t n_dstops, size_t V)
{
    r->stops = prm->stop_ids ? prm->stop_ids : dstops;
    r->n_stops = prm->stop_ids ? prm->n_stop_ids : n_dstops;
    r->max_tokens = prm->max_tokens;
    r->live = 1;
    r->no_drafts = dg_model_has_recurrent(fork->trunk->model);
    r->ref = dg_draft_ref_sam(sm->ref);
    DG_TRY(dg_sam_init(&r->own, sm->n_seed_ids + (size_t)prm->max_tokens));
    r->span = malloc((1 + (size_t)sp->draft_max) * sizeof *r->span);
    r->logits = malloc((1 + (size_t)sp->draft_max) * V * sizeof *r->logits);
    if (!r->span || !r->logits)
        return dg_fail(DEG_ERR_NOMEM, "out of memory for %d-token drafts", (int)sp->draft_max);
    for (size_t j = 0; j < sm->n_seed_ids; j++) DG_TRY(row_emit(r, sm->seed_ids[j]));
    return deg_fork_logits(fork, r->logits);
}

static deg_status check_streams(const deg_model *m, const deg_spec_stream *streams, size_t n,
                                const deg_sample_params *params)
{
    if (!streams) return dg_fail(DEG_ERR_ARG, "streams is NULL");
    for (size_t i = 0; i < n; i++) {
        if (params[i].temperature != 0.0f)
            return dg_fail(DEG_ERR_ARG, "row %zu: temperature %g: speculative decoding "
                           "verifies by exact argmax equality, so it is greedy only", i,
                           (double)params[i].temperature);
        const deg_spec_stream *s = &streams[i];
        if (s->n_seed_ids && !s->seed_ids)
            return dg_fail(DEG_ERR_ARG, "row %zu: seed_ids is NULL with n_seed_ids %zu", i,
                           s->n_seed_ids);
        for (size_t j = 0; j < s->n_seed_ids; j++)
            if (s->seed_ids[j] < 0 || s->seed_ids[j] >= m->hp.n_vocab)
                return dg_fail(DEG_ERR_RANGE, "row %zu: seed id %d at index %zu is outside "
                               "[0, %d)", i, (int)s->seed_ids[j], j, (int)m->hp.n_vocab);
    }
    return DEG_OK;
}

typedef struct spec_batch {
    spec_row *rows;
    deg_fork **bf;
    const int32_t **b_ids;
    size_t *b_n;
    float **b_logits;
    dg_sampler *sampler;
} spec_batch;

static void batch_free(spec_batch *b, size_t n)
{
    for (size_t i = 0; b->rows && i < n; i++) {
        dg_sam_free(&b->rows[i].own);
        free(b->rows[i].span);
        free(b->rows[i].logits);
    }
    free(b->rows);
    free(b->bf);
    free(b->b_ids);
    free(b->b_n);
    free(b->b_logits);
    dg_sampler_free(b->sampler);
}

/* The rounds: draft, one ragged feed of every live row, verify. */
static deg_status run_rounds(spec_batch *b, deg_fork *const *forks, size_t n,
                             const deg_sample_params *params, const deg_spec_params *sp,
                             int32_t *const *out_ids, size_t *n_out, deg_gen_stats *stats,
                             deg_spec_stats *ss, const dg_limits *lim, size_t V)
{
    deg_status st = DEG_OK;
    double t0 = dg_now();
    for (;;) {
        size_t nb = 0;
        for (size_t i = 0; i < n; i++) {
            spec_row *r = &b->rows[i];
            r->in_step = r->live;
            if (!r->live) continue;
            size_t left = (size_t)r->max_tokens - n_out[i];  /* >= 1 */
            r->span[0] = r->carry;
            r->n_span = 1 + row_draft(r, sp, left - 1 < (size_t)sp->draft_max
                                                 ? left - 1 : (size_t)sp->draft_max);
            r->len0 = deg_fork_len(forks[i]);
            b->bf[nb] = forks[i];
            b->b_ids[nb] = r->span;
            b->b_n[nb] = r->n_span;
            b->b_logits[nb] = r->logits;
            nb++;
            if (ss) ss[i].forwards++;
        }
        if (nb == 0) break;
        if ((st = dg_limits_check(lim, "decode")) != DEG_OK) break;
        if ((st = deg_forks_feed(b->bf, nb, b->b_ids, b->b_n, b->b_logits)) != DEG_OK) break;
        for (size_t i = 0; i < n && st == DEG_OK; i++) {
            if (!b->rows[i].live) continue;
            st = verify(&b->rows[i], forks[i], b->sampler, &params[i], sp, V, out_ids[i],
                        &n_out[i], stats ? &stats[i] : NULL, ss ? &ss[i] : NULL);
            if (st != DEG_OK) st = dg_fail_context(st, "row %zu, token %zu", i, n_out[i]);
        }
        double t1 = dg_now();
        for (size_t i = 0; stats && i < n; i++) {
            if (b->rows[i].in_step) stats[i].decode_seconds += t1 - t0;
            stats[i].generated_tokens = n_out[i];
        }
        t0 = t1;
        if (st != DEG_OK) break;
    }
    return st;
}

deg_status deg_forks_generate_spec(deg_fork *const *forks, size_t n_forks,
                                   const deg_sample_params *params,
                                   const deg_spec_stream *streams, const deg_spec_params *spec,
                                   int32_t *const *out_ids, size_t *n_out, deg_gen_stats *stats,
                                   deg_spec_stats *spec_stats, const deg_run_limits *limits)
{
    const char *w = "deg_forks_generate_spec";
    if (n_forks == 0) return DEG_OK;
    DG_TRY(dg_generate_check(forks, n_forks, params, out_ids, n_out, w));
    const deg_model *m = forks[0]->trunk->model;
    deg_spec_params sp = spec ? *spec : deg_spec_default_params();
    deg_status st = check_spec(&sp);
    if (st == DEG_OK) st = check_streams(m, streams, n_forks, params);
    if (st != DEG_OK) return dg_fail_context(st, "%s", w);
    dg_limits lim;
    dg_limits_init(&lim, limits, 1);
    const size_t V = (size_t)m->hp.n_vocab;
    int32_t dstops[DG_CHAT_MAX_STOPS];
    const size_t n_dstops = dg_chat_stop_ids(m, dg_chat_layout_of_model(m), dstops);

    spec_batch b = {0};
    b.rows = calloc(n_forks, sizeof *b.rows);
    b.bf = malloc(n_forks * sizeof *b.bf);
    b.b_ids = malloc(n_forks * sizeof *b.b_ids);
    b.b_n = malloc(n_forks * sizeof *b.b_n);
    b.b_logits = malloc(n_forks * sizeof *b.b_logits);
    if (!b.rows || !b.bf || !b.b_ids || !b.b_n || !b.b_logits)
        st = dg_fail(DEG_ERR_NOMEM, "%s: out of memory for %zu rows", w, n_forks);
    if (st == DEG_OK) st = dg_sampler_new((int32_t)V, &b.sampler);
    if (spec_stats) memset(spec_stats, 0, n_forks * sizeof *spec_stats);
    for (size_t i = 0; i < n_forks && st == DEG_OK; i++) {
        spec_row *r = &b.rows[i];
        if (stats) {
            memset(&stats[i], 0, sizeof stats[i]);
            stats[i].prompt_tokens = deg_trunk_len(forks[i]->trunk) + deg_fork_len(forks[i]);
        }
        st = row_init(r, forks[i], &streams[i], &params[i], &sp, dstops, n_dstops, V);
        int32_t id = 0;
        if (st == DEG_OK) st = dg_sample(b.sampler, r->logits, &params[i], NULL, &id);
        if (st == DEG_OK && !emit(r, id, out_ids[i], &n_out[i], stats ? &stats[i] : NULL, &st))
            r->carry = id;
        if (stats) stats[i].generated_tokens = n_out[i];
        if (st != DEG_OK) st = dg_fail_context(st, "%s: row %zu", w, i);
    }
    if (st == DEG_OK)
        st = run_rounds(&b, forks, n_forks, params, &sp, out_ids, n_out, stats, spec_stats, &lim,
                        V);
    batch_free(&b, n_forks);
    if (st != DEG_OK && st != DEG_ERR_CANCELLED && st != DEG_ERR_LIMIT)
        return dg_fail_context(st, "%s", w);
    return st;
}
