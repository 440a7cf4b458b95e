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
    int stepwise;           /* a deg_spec_state: max_tokens caps one call only */
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
    int full = *n_out >= (size_t)r->max_tokens;
    if (stop || (full && !r->stepwise)) {
        r->live = 0;
        if (stats) stats->stopped = stop;
        return 1;
    }
    *st = row_emit(r, id);  /* a stepwise row goes on from this id next call */
    return full || *st != DEG_OK;
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
    spec_row **rows;        /* n rows (generate: into store; step: the states') */
    spec_row *store;
    deg_fork **bf;
    const int32_t **b_ids;
    size_t *b_n;
    float **b_logits;
    dg_sampler *sampler;
} spec_batch;

static void row_free(spec_row *r)
{
    dg_sam_free(&r->own);
    free(r->span);
    free(r->logits);
}

static void batch_free(spec_batch *b, size_t n)
{
    for (size_t i = 0; b->store && i < n; i++) row_free(&b->store[i]);
    free(b->store);
    free(b->rows);
    free(b->bf);
    free(b->b_ids);
    free(b->b_n);
    free(b->b_logits);
    dg_sampler_free(b->sampler);
}

/* One round: draft, one ragged feed of every live row (plus the plain
 * rows, if any: b's arrays have room for them), verify. *n_fed = the
 * speculative rows fed (0: every row is done; the plain rows are fed
 * anyway). */
static deg_status one_round(spec_batch *b, deg_fork *const *forks, size_t n,
                            const deg_sample_params *params, const deg_spec_params *sp,
                            int32_t *const *out_ids, size_t *n_out, deg_gen_stats *stats,
                            deg_spec_stats *ss, const dg_limits *lim, size_t V,
                            const deg_feed_rows *plain, size_t *n_fed)
{
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) {
        spec_row *r = b->rows[i];
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
    *n_fed = nb;
    size_t np = plain ? plain->n : 0;
    for (size_t j = 0; j < np; j++) {
        b->bf[nb + j] = plain->forks[j];
        b->b_ids[nb + j] = plain->ids[j];
        b->b_n[nb + j] = plain->n_ids[j];
        b->b_logits[nb + j] = NULL;  /* the fork keeps its last row: deg_fork_logits */
    }
    if (nb + np == 0) return DEG_OK;
    if (lim) DG_TRY(dg_limits_check(lim, "decode"));
    DG_TRY(deg_forks_feed(b->bf, nb + np, b->b_ids, b->b_n, b->b_logits));
    deg_status st = DEG_OK;
    for (size_t i = 0; i < n && st == DEG_OK; i++) {
        if (!b->rows[i]->in_step) continue;
        st = verify(b->rows[i], forks[i], b->sampler, &params[i], sp, V, out_ids[i], &n_out[i],
                    stats ? &stats[i] : NULL, ss ? &ss[i] : NULL);
        if (st != DEG_OK) st = dg_fail_context(st, "row %zu, token %zu", i, n_out[i]);
    }
    return st;
}

/* The rounds until every row is done. */
static deg_status run_rounds(spec_batch *b, deg_fork *const *forks, size_t n,
                             const deg_sample_params *params, const deg_spec_params *sp,
                             int32_t *const *out_ids, size_t *n_out, deg_gen_stats *stats,
                             deg_spec_stats *ss, const dg_limits *lim, size_t V)
{
    double t0 = dg_now();
    for (;;) {
        size_t nb = 0;
        deg_status st = one_round(b, forks, n, params, sp, out_ids, n_out, stats, ss, lim, V,
                                  NULL, &nb);
        double t1 = dg_now();
        for (size_t i = 0; stats && i < n; i++) {
            if (b->rows[i]->in_step) stats[i].decode_seconds += t1 - t0;
            stats[i].generated_tokens = n_out[i];
        }
        t0 = t1;
        if (st != DEG_OK || nb == 0) return st;
    }
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
    b.store = calloc(n_forks, sizeof *b.store);
    b.rows = malloc(n_forks * sizeof *b.rows);
    for (size_t i = 0; b.store && b.rows && i < n_forks; i++) b.rows[i] = &b.store[i];
    b.bf = malloc(n_forks * sizeof *b.bf);
    b.b_ids = malloc(n_forks * sizeof *b.b_ids);
    b.b_n = malloc(n_forks * sizeof *b.b_n);
    b.b_logits = malloc(n_forks * sizeof *b.b_logits);
    if (!b.store || !b.rows || !b.bf || !b.b_ids || !b.b_n || !b.b_logits)
        st = dg_fail(DEG_ERR_NOMEM, "%s: out of memory for %zu rows", w, n_forks);
    if (st == DEG_OK) st = dg_sampler_new((int32_t)V, &b.sampler);
    if (spec_stats) memset(spec_stats, 0, n_forks * sizeof *spec_stats);
    for (size_t i = 0; i < n_forks && st == DEG_OK; i++) {
        spec_row *r = b.rows[i];
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

/* ------------------------------------------------------------------ */
/* Step-wise streams (deg_spec_state)                                  */
/* ------------------------------------------------------------------ */

struct deg_spec_state {
    const deg_model *model;
    deg_spec_params sp;
    spec_row row;
    int32_t stops[DG_CHAT_MAX_STOPS];
    int32_t *own_stops;      /* the caller's stop ids (copied) or NULL */
    deg_spec_stats stats;
};

deg_status deg_spec_state_new(const deg_model *m, const int32_t *text, size_t n_text,
                              const deg_draft_ref *ref, const deg_spec_params *spec,
                              const int32_t *stop_ids, size_t n_stop_ids, deg_spec_state **out)
{
    const char *w = "deg_spec_state_new";
    if (!out) return dg_fail(DEG_ERR_ARG, "%s: out is NULL", w);
    *out = NULL;
    if (!m || !text || n_text == 0 || (n_stop_ids && !stop_ids))
        return dg_fail(DEG_ERR_ARG, "%s: need a model and at least one id of text (its last "
                       "is the carry)", w);
    deg_spec_stream sm = {text, n_text, ref};
    deg_sample_params greedy = deg_sample_params_default();
    greedy.temperature = 0.0f;
    deg_spec_params sp = spec ? *spec : deg_spec_default_params();
    deg_status st = check_spec(&sp);
    if (st == DEG_OK) st = check_streams(m, &sm, 1, &greedy);
    for (size_t j = 0; st == DEG_OK && j < n_stop_ids; j++)
        if (stop_ids[j] < 0 || stop_ids[j] >= m->hp.n_vocab)
            st = dg_fail(DEG_ERR_RANGE, "stop id %d is outside [0, %d)", (int)stop_ids[j],
                         (int)m->hp.n_vocab);
    if (st != DEG_OK) return dg_fail_context(st, "%s", w);
    deg_spec_state *s = calloc(1, sizeof *s);
    if (!s) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", w);
    s->model = m;
    s->sp = sp;
    spec_row *r = &s->row;
    r->n_stops = dg_chat_stop_ids(m, dg_chat_layout_of_model(m), s->stops);
    r->stops = s->stops;
    if (stop_ids) {  /* exactly these (none for n_stop_ids = 0) */
        s->own_stops = malloc((n_stop_ids ? n_stop_ids : 1) * sizeof *s->own_stops);
        if (s->own_stops && n_stop_ids)
            memcpy(s->own_stops, stop_ids, n_stop_ids * sizeof *stop_ids);
        r->stops = s->own_stops;
        r->n_stops = n_stop_ids;
    }
    r->live = 1;
    r->stepwise = 1;
    r->no_drafts = dg_model_has_recurrent(m);
    r->ref = dg_draft_ref_sam(ref);
    r->carry = text[n_text - 1];
    st = (stop_ids && !s->own_stops) ? dg_fail(DEG_ERR_NOMEM, "%s: out of memory", w)
                                       : dg_sam_init(&r->own, n_text + 256);
    r->span = malloc((1 + (size_t)sp.draft_max) * sizeof *r->span);
    r->logits = malloc((1 + (size_t)sp.draft_max) * (size_t)m->hp.n_vocab * sizeof *r->logits);
    if (st == DEG_OK && (!r->span || !r->logits))
        st = dg_fail(DEG_ERR_NOMEM, "%s: out of memory for %d-token drafts", w,
                     (int)sp.draft_max);
    for (size_t j = 0; j < n_text && st == DEG_OK; j++) st = row_emit(r, text[j]);
    if (st != DEG_OK) {
        deg_spec_state_free(s);
        return dg_fail_context(st, "%s", w);
    }
    *out = s;
    return DEG_OK;
}

void deg_spec_state_free(deg_spec_state *s)
{
    if (!s) return;
    row_free(&s->row);
    free(s->own_stops);
    free(s);
}

deg_spec_stats deg_spec_state_stats(const deg_spec_state *s)
{
    deg_spec_stats z = {0};
    return s ? s->stats : z;
}

int deg_spec_state_done(const deg_spec_state *s) { return !s || !s->row.live; }

static deg_status check_step(deg_fork *const *forks, size_t n, deg_spec_state *const *states,
                             const int32_t *max_ids, int32_t *const *out_ids, size_t *n_out)
{
    if (n && (!forks || !states || !max_ids || !out_ids || !n_out))
        return dg_fail(DEG_ERR_ARG, "NULL argument");
    for (size_t i = 0; i < n; i++) {
        if (!forks[i] || !states[i] || !out_ids[i])
            return dg_fail(DEG_ERR_ARG, "row %zu: NULL fork, state or output", i);
        if (forks[i]->trunk->model != states[i]->model)
            return dg_fail(DEG_ERR_MISMATCH, "row %zu: the state belongs to another model", i);
        if (!states[i]->row.live)
            return dg_fail(DEG_ERR_STATE, "row %zu: the stream has emitted a stop id", i);
        if (max_ids[i] < 1)
            return dg_fail(DEG_ERR_ARG, "row %zu: max_ids %d must be >= 1", i, (int)max_ids[i]);
        if (memcmp(&states[i]->sp, &states[0]->sp, sizeof states[0]->sp) != 0)
            return dg_fail(DEG_ERR_ARG, "row %zu: the states of one step need the same spec "
                           "params", i);
        for (size_t j = 0; j < i; j++)
            if (forks[j] == forks[i] || states[j] == states[i])
                return dg_fail(DEG_ERR_ARG, "rows %zu and %zu share a fork or a state", j, i);
    }
    return DEG_OK;
}

/* The plain rows: whole, and no fork twice among them or the step's. */
static deg_status check_plain(deg_fork *const *forks, size_t n, const deg_feed_rows *pl)
{
    if (!pl || pl->n == 0) return DEG_OK;
    if (!pl->forks || !pl->ids || !pl->n_ids)
        return dg_fail(DEG_ERR_ARG, "plain rows: NULL forks, ids or n_ids");
    for (size_t j = 0; j < pl->n; j++) {
        if (!pl->forks[j] || (pl->n_ids[j] && !pl->ids[j]))
            return dg_fail(DEG_ERR_ARG, "plain row %zu: NULL fork or ids", j);
        for (size_t i = 0; i < n; i++)
            if (forks[i] == pl->forks[j])
                return dg_fail(DEG_ERR_ARG, "plain row %zu is also speculative row %zu", j, i);
        for (size_t i = 0; i < j; i++)
            if (pl->forks[i] == pl->forks[j])
                return dg_fail(DEG_ERR_ARG, "plain rows %zu and %zu share a fork", i, j);
    }
    return DEG_OK;
}

deg_status deg_forks_spec_step(deg_fork *const *forks, size_t n, deg_spec_state *const *states,
                               const int32_t *max_ids, int32_t *const *out_ids, size_t *n_out)
{
    if (n == 0) return DEG_OK;
    return deg_forks_spec_step_ex(forks, n, states, max_ids, out_ids, n_out, NULL);
}

deg_status deg_forks_spec_step_ex(deg_fork *const *forks, size_t n,
                                  deg_spec_state *const *states, const int32_t *max_ids,
                                  int32_t *const *out_ids, size_t *n_out,
                                  const deg_feed_rows *plain)
{
    const char *w = n ? "deg_forks_spec_step" : "deg_forks_spec_step_ex";
    size_t np = plain ? plain->n : 0;
    if (n + np == 0) return DEG_OK;
    deg_status st = check_step(forks, n, states, max_ids, out_ids, n_out);
    if (st == DEG_OK) st = check_plain(forks, n, plain);
    if (st != DEG_OK) return dg_fail_context(st, "%s", w);
    const deg_model *m = n ? states[0]->model : plain->forks[0]->trunk->model;
    const size_t V = (size_t)m->hp.n_vocab;
    deg_sample_params greedy = deg_sample_params_default();
    greedy.temperature = 0.0f;
    spec_batch b = {0};
    size_t rows = n + np;
    b.rows = malloc((n ? n : 1) * sizeof *b.rows);
    b.bf = malloc(rows * sizeof *b.bf);
    b.b_ids = malloc(rows * sizeof *b.b_ids);
    b.b_n = malloc(rows * sizeof *b.b_n);
    b.b_logits = malloc(rows * sizeof *b.b_logits);
    deg_sample_params *params = malloc((n ? n : 1) * sizeof *params);
    deg_spec_stats *ss = calloc(n ? n : 1, sizeof *ss);
    if (!b.rows || !b.bf || !b.b_ids || !b.b_n || !b.b_logits || !params || !ss)
        st = dg_fail(DEG_ERR_NOMEM, "%s: out of memory for %zu rows", w, rows);
    if (st == DEG_OK) st = dg_sampler_new((int32_t)V, &b.sampler);
    for (size_t i = 0; st == DEG_OK && i < n; i++) {
        b.rows[i] = &states[i]->row;
        b.rows[i]->max_tokens = max_ids[i];
        n_out[i] = 0;
        params[i] = greedy;
    }
    size_t nb = 0;
    if (st == DEG_OK)
        st = one_round(&b, forks, n, params, n ? &states[0]->sp : NULL, out_ids, n_out, NULL,
                       ss, NULL, V, plain, &nb);
    for (size_t i = 0; st == DEG_OK && i < n; i++) {
        deg_spec_stats *t = &states[i]->stats;
        t->forwards += ss[i].forwards;
        t->drafted += ss[i].drafted;
        t->accepted += ss[i].accepted;
        t->gate_offs += ss[i].gate_offs;
    }
    free(params);
    free(ss);
    b.store = NULL;  /* the rows are the states' */
    batch_free(&b, 0);
    return st == DEG_OK ? DEG_OK : dg_fail_context(st, "%s", w);
}
