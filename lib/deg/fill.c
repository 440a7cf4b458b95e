/* fill.c - the deg.fill entry points (deg_fill, deg_fill_many and their _ex forms):
 * request preparation, the fill's round callbacks and the checks after the rounds.
 *
 * The deg.fill runtime (fill.h; deg contract §7, §8, §12.1-§12.3, §12.6) is this
 * file and the fill_*.c files fill_internal.h lists. One request:
 *  1. Trunk = fixed prefix + rendered context + "\n" (never the schema),
 *     prefilled once (chunked by dg_forward); the final-norm hidden states of
 *     the context tokens are kept for the extract pointers (c_t).
 *  2. Parallel phase in rounds: round 0 = every top-level decide/extract leaf
 *     and every top-level array's count fork; each later round = the leaves
 *     and nested count forks of the items the previous round counted
 *     (index-addressed arrays, level by level, §12.3 count). All forks of a
 *     round (of every request of a deg_fill_many call) are rows of one
 *     deg_forks_feed batch over their trunks by reference, split only by the
 *     memory budget; after the pass only the rows the heads read (option line
 *     ends and ANSWER:) are kept, and the forks are freed.
 *  3. Items whose required non-nullable values are missing are dropped
 *     (§12.6), innermost first; survivors are renumbered.
 *  4. Generate phase: KNOWN VALUES extends the trunk once; every x-generate
 *     leaf is a fork of it; all decode together, constrained by the acceptor.
 *  5. Response assembly (deg/response.h) validates the value.
 *
 * Fork text (§12.1), lines joined by "\n":
 *   FIELD <concrete pointer> | ITEM i of <array pointer> (one per enclosing
 *   array, outermost first) | TITLE: t | DESCRIPTION: d | KIND: <mode> |
 *   CONSTRAINTS: <json> (extract, when any) | OPTIONS: + "- <option>" lines
 *   (choice: the value as JSON [+ ": " description]; score: the level or
 *   "<level>: <label>", "null" last for a nullable scale) | ANSWER:
 * Each line is tokenized on its own, so an option line's last token is the
 * end of that line whatever the neighbouring text is.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/run.h"
#include "base/status.h"
#include "deg/countprior.h"
#include "deg/fill_internal.h"
#include "deg/keyprior.h"
#include "deg/locator.h"
#include "deg/parse.h"
#include "deg/request.h"
#include "model/state.h"

/* 1 when ctx[0, len) holds white space only (Unicode White_Space, dg_parse_is_space,
 * and U+FEFF, a byte order mark) or nothing: there is nothing to read. */
static int blank_only(const char *ctx, size_t len)
{
    for (size_t i = 0; i < len;) {
        int32_t cp = dg_parse_utf8_next(ctx, len, &i);
        if (cp < 0 || !(dg_parse_is_space(cp) || cp == 0xFEFF)) return 0;
    }
    return 1;
}

/* r->block: per field the block its description points at (locator.h). */
static deg_status field_blocks(freq *r)
{
    size_t n = r->plan->n_fields;
    r->block = malloc((n ? n : 1) * 2 * sizeof *r->block);
    if (!r->block) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    for (size_t i = 0; i < n; i++) {
        const dg_field_plan *f = &r->plan->fields[i];
        size_t *b = r->block + 2 * i;
        /* array leaves read their item's region, never a located block (locator.h) */
        if (f->depth_items > 0 ||
            !dg_locator_block(f->description, r->ctx, r->ctx_len, &b[0], &b[1])) {
            b[0] = 0;
            b[1] = r->ctx_len;
        }
    }
    return DEG_OK;
}

void dg_fill_prepare(const dg_ckpt *k, freq *r, const char *text, size_t len)
{
    char *errs = NULL;
    deg_status st = deg_request_parse(text, len, &r->rq, &errs);
    if (st != DEG_OK) {
        r->st = st;
        r->errors = errs ? json_loads(errs, 0, NULL) : NULL;
        if (!r->errors) {
            r->errors = json_array();
            json_array_append_new(r->errors, json_pack("{s:s, s:s}", "loc", "", "msg", deg_errmsg()));
        }
        free(errs);
        return;
    }
    free(errs);
    r->plan = deg_request_plan(r->rq);
    r->ctx = deg_request_context(r->rq, &r->ctx_len);
    r->opt = deg_request_options(r->rq);
    dg_opt_ext ox = dg_request_ext(r->rq);
    dg_limits_tighten(&r->lim, ox.deadline_ms, ox.max_fields, ox.max_fork_tokens);
    r->lm_prior = ox.has_lm_prior ? ox.lm_prior_start
                  : k->has_lm_prior ? k->lm_prior_start : 0.0;
    r->list_bonus = ox.has_list_prior ? ox.list_prior_bonus
                    : k->has_list_prior ? k->list_prior_bonus : 0.0;
    r->list_by_anchor = ox.has_list_prior ? ox.list_prior_by_anchor
                        : k->has_list_prior && k->list_prior_by_anchor;
    if (blank_only(r->ctx, r->ctx_len)) { /* as empty: an item "read" from blanks was {} */
        dg_fail(DEG_ERR_REQUEST, r->ctx_len ? "context: blank (only white space: there is "
                                              "nothing to read)"
                                            : "context: empty (there is nothing to read)");
        dg_fill_fail(r, DEG_ERR_REQUEST, "/context");
        return;
    }
    if (r->opt.temperature > 0 && !r->opt.has_seed) {
        dg_fail(DEG_ERR_REQUEST, "options.temperature > 0 requires options.seed (§7.3)");
        dg_fill_fail(r, DEG_ERR_REQUEST, "/options/seed");
        return;
    }
    dg_fill_plan_fields_check(r);
    dg_fill_first_round_check(r, k->model);
    if (r->st != DEG_OK) return;
    st = dg_fill_trunk(k, r);
    if (st == DEG_OK && k->key_prior.on) st = dg_keylines_scan(r->ctx, r->ctx_len, &r->kv);
    if (st == DEG_OK && k->key_prior.on) st = field_blocks(r);
    /* with the list prior on, the lists also say where a headerless table's cells are
     * (dg_fill_cell_map: a field outside the table reads inside one of its cells) */
    if (st == DEG_OK && ((r->list_bonus > 0 && (!r->trace || dg_lists_wanted(r->plan))) ||
                         (k->count_prior.on && dg_count_wanted(r->plan))))
        st = dg_lists_scan(r->ctx, r->ctx_len, &r->lists);
    if (st == DEG_OK && r->list_bonus > 0 && !r->trace) st = dg_fill_cell_map(r);
    if (st == DEG_OK && (k->span_single_line || k->span_single_sentence))
        st = dg_fill_line_tables(r);
    if (st == DEG_OK && k->span_single_sentence) st = dg_fill_sentence_table(r);
    if (st != DEG_OK) dg_fill_fail(r, st, "/context");
}

/* A request's own failure is recorded in it (at loc); what stops every request is returned. */
static deg_status request_status(freq *r, deg_status s, const char *loc)
{
    if (s == DEG_ERR_NOMEM || s == DEG_ERR_INTERNAL) return s;
    if (s != DEG_OK) dg_fill_fail(r, s, loc);
    return DEG_OK;
}

static deg_status fill_decoded(const dg_ckpt *k, freq *reqs, job *j, int ran, jobs *next)
{
    freq *r = &reqs[j->req];
    if (r->st != DEG_OK) return DEG_OK;
    deg_status s = DEG_OK;
    if (j->kind == JOB_ANCHOR) {
        s = dg_fill_decode_anchor(k, r, j);
    } else if (j->kind == JOB_COUNT && r->insts[j->target].anchored) {
        dg_fill_decode_anchor_count(k, r, j);
    } else if (j->kind == JOB_COUNT) {
        s = dg_fill_decode_count(k, r, j);
        if (s == DEG_OK) s = dg_fill_expand(r, j->req, next, k->model, (int)j->target);
    } else {
        const dg_field_plan *f = &r->plan->fields[r->leaves[j->target].field];
        s = dg_mode_is_decide(f->mode) ? dg_fill_decode_decide(k, r, j) : dg_fill_decode_extract(k, r, j);
    }
    return request_status(r, s, "");
}

/* Anchored arrays: anchors once the anchor and count forks are both decoded,
 * then the items' forks and nested arrays (next round). */
static deg_status fill_anchors(const dg_ckpt *k, freq *reqs, job *j, jobs *next)
{
    freq *r = &reqs[j->req];
    if (r->st != DEG_OK) return DEG_OK;
    deg_status s = dg_fill_resolve_anchors(k, r, (int)j->target);
    if (s == DEG_OK) s = dg_fill_expand(r, j->req, next, k->model, (int)j->target);
    return request_status(r, s, r->plan->arrays[r->insts[j->target].array].schema_loc);
}

static const round_ops fill_round = {
    .prepare = dg_fill_table_columns, .decoded = fill_decoded, .anchors = fill_anchors};

static deg_status fill_run(deg_ckpt *k, freq *reqs, size_t n)
{
    deg_status st = DEG_OK;
    jobs J = {0};
    /* round 0 */
    for (size_t ri = 0; ri < n && st == DEG_OK; ri++) {
        freq *r = &reqs[ri];
        if (r->st != DEG_OK) continue;
        r->anchor_heads = strcmp(k->array_mode, "anchor") == 0;
        r->anchor_on = r->anchor_heads && (int64_t)(r->c1 - r->c0) >= k->anchor_min_tokens;
        st = dg_fill_expand(r, ri, &J, k->model, -1);
        if (st == DEG_ERR_LIMIT || st == DEG_ERR_CANCELLED) st = DEG_OK; /* r failed alone */
    }
    if (st == DEG_OK) st = dg_fill_rounds(k, reqs, &J, &fill_round);
    else dg_fill_jobs_free(&J);
    if (st != DEG_OK) return st;
    for (size_t ri = 0; ri < n; ri++) {
        freq *r = &reqs[ri];
        if (r->st != DEG_OK) continue;
        if (dg_fill_distinct_items(k, r) != DEG_OK) { /* out of memory: r fails alone */
            dg_fill_fail(r, DEG_ERR_NOMEM, "");
            continue;
        }
        dg_fill_drops(r);
        /* after the drops: they read only forbid leaves, which keep their spans, and
         * the pointers span_taken_by names are renumbered by them */
        if (dg_fill_distinct_spans(k, r) != DEG_OK) { /* out of memory: r fails alone */
            dg_fill_fail(r, DEG_ERR_NOMEM, "");
            continue;
        }
        for (size_t li = 0; li < r->n_leaves && r->st == DEG_OK; li++) {
            const leaf *L = &r->leaves[li];
            if (L->failed && L->inst < 0) {
                dg_fail(DEG_ERR_FILL, "%s", L->fail_msg ? L->fail_msg : "required value missing");
                dg_fill_fail(r, DEG_ERR_FILL, r->plan->fields[L->field].schema_loc);
            }
        }
        for (size_t ii = 0; ii < r->n_insts && r->st == DEG_OK; ii++) {
            const inst *I = &r->insts[ii];
            const dg_array_plan *a = &r->plan->arrays[I->array];
            if (I->parent < 0 && I->n_alive < a->min_items) {
                dg_fail(DEG_ERR_FILL, "%s: minItems %lld: only %lld items have their required "
                        "values", a->pointer, (long long)a->min_items, (long long)I->n_alive);
                dg_fill_fail(r, DEG_ERR_FILL, a->schema_loc);
            }
        }
    }
    return dg_fill_generate(k, reqs, n);
}

deg_status deg_fill_many(deg_ckpt *ckpt, size_t n, const char *const *requests,
                         const size_t *lens, char **responses, char **errors,
                         deg_status *statuses)
{
    return deg_fill_many_ex(ckpt, n, requests, lens, NULL, responses, errors, statuses);
}

deg_status deg_fill_many_ex(deg_ckpt *ckpt, size_t n, const char *const *requests,
                            const size_t *lens, const deg_run_limits *limits, char **responses,
                            char **errors, deg_status *statuses)
{
    if (!ckpt || (n && (!requests || !lens || !responses || !statuses)))
        return dg_fail(DEG_ERR_ARG, "deg_fill_many: NULL argument");
    for (size_t i = 0; i < n; i++) {
        responses[i] = NULL;
        if (errors) errors[i] = NULL;
        statuses[i] = DEG_OK;
    }
    if (n == 0) return DEG_OK;
    freq *reqs = calloc(n, sizeof *reqs);
    if (!reqs) return dg_fail(DEG_ERR_NOMEM, "deg_fill_many: out of memory");
    for (size_t i = 0; i < n; i++) dg_limits_init(&reqs[i].lim, limits ? &limits[i] : NULL, n);
    for (size_t i = 0; i < n; i++) {
        if (!requests[i]) {
            dg_fail(DEG_ERR_ARG, "request %zu is NULL", i);
            dg_fill_fail(&reqs[i], DEG_ERR_ARG, "");
            continue;
        }
        dg_fill_prepare(ckpt, &reqs[i], requests[i], lens[i]);
    }
    deg_status st = fill_run(ckpt, reqs, n);
    char first_msg[1024] = "";
    deg_status first = DEG_OK;
    for (size_t i = 0; i < n; i++) {
        freq *r = &reqs[i];
        if (st == DEG_OK && r->st == DEG_OK) {
            json_t *resp = NULL;
            deg_status s2 = dg_fill_assemble(ckpt, r, &resp);
            if (s2 == DEG_OK) {
                responses[i] = dg_fill_dump(resp);
                json_decref(resp);
                if (!responses[i]) s2 = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            }
            if (s2 != DEG_OK) dg_fill_fail(r, s2, "");
        }
        statuses[i] = st != DEG_OK ? st : r->st;
        if (statuses[i] != DEG_OK && first == DEG_OK) {
            first = statuses[i];
            const char *msg = r->errors && json_array_size(r->errors)
                                  ? json_string_value(json_object_get(json_array_get(r->errors, 0), "msg"))
                                  : NULL;
            snprintf(first_msg, sizeof first_msg, "%s", msg ? msg : deg_errmsg());
        }
        if (errors && r->errors) errors[i] = dg_fill_dump(r->errors);
        dg_fill_clear(r);
    }
    free(reqs);
    if (st != DEG_OK) return st;
    if (first != DEG_OK) return dg_fail(first, "%s", first_msg);
    return DEG_OK;
}

deg_status deg_fill(deg_ckpt *ckpt, const char *request_json, size_t len, char **response_json,
                    char **errors_json)
{
    return deg_fill_ex(ckpt, request_json, len, NULL, response_json, errors_json);
}

deg_status deg_fill_ex(deg_ckpt *ckpt, const char *request_json, size_t len,
                       const deg_run_limits *limits, char **response_json, char **errors_json)
{
    if (response_json) *response_json = NULL;
    if (errors_json) *errors_json = NULL;
    if (!ckpt || !request_json || !response_json)
        return dg_fail(DEG_ERR_ARG, "deg_fill: NULL argument");
    deg_status s1 = DEG_OK;
    char *err = NULL;
    deg_status st = deg_fill_many_ex(ckpt, 1, &request_json, &len, limits, response_json, &err,
                                     &s1);
    if (errors_json) *errors_json = err;
    else free(err);
    return st;
}

deg_status deg_ckpt_set_debug(deg_ckpt *ckpt, int on)
{
    if (!ckpt) return dg_fail(DEG_ERR_ARG, "deg_ckpt_set_debug: NULL checkpoint");
    ckpt->debug_raw = on != 0;
    return DEG_OK;
}
