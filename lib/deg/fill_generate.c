/* fill_generate.c - the generate phase (§7.3): KNOWN VALUES on each trunk, then every
 * x-generate leaf of every request decoded together under its acceptor. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/run.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "base/strmap.h"
#include "base/utf8.h"
#include "deg/acceptor.h"
#include "deg/fill_internal.h"
#include "deg/render.h"
#include "deg/repeats.h"
#include "model/arch.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/sample.h"
#include "model/state.h"
#include "tokenizer/tokenizer.h"

typedef struct kv_key {
    size_t leaf;
    size_t n;
    size_t k[130];
} kv_key;

static int cmp_key(const void *x, const void *y)
{
    const kv_key *a = x, *b = y;
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++)
        if (a->k[i] != b->k[i]) return a->k[i] < b->k[i] ? -1 : 1;
    return a->n < b->n ? -1 : a->n > b->n;
}

/* Document-order key of a leaf: (first field of the outermost array, new item
 * index, ..., own field index). */
static void leaf_key(const freq *r, size_t li, kv_key *key)
{
    const leaf *L = &r->leaves[li];
    int chain[64];
    size_t items[64];
    int n = 0;
    int c = L->inst;
    size_t it = L->item;
    while (c >= 0 && n < 64) {
        chain[n] = c;
        items[n] = it;
        n++;
        it = r->insts[c].parent_item;
        c = r->insts[c].parent;
    }
    key->leaf = li;
    key->n = 0;
    for (int q = n - 1; q >= 0; q--) {
        key->k[key->n++] = r->plan->arrays[r->insts[chain[q]].array].first_field;
        key->k[key->n++] = r->insts[chain[q]].newidx[items[q]];
    }
    key->k[key->n++] = L->field;
}

static deg_status known_values(const dg_ckpt *k, freq *r)
{
    kv_key *keys = malloc((r->n_leaves ? r->n_leaves : 1) * sizeof *keys);
    if (!keys) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    size_t n = 0;
    for (size_t li = 0; li < r->n_leaves; li++) {
        const leaf *L = &r->leaves[li];
        if (!L->value || L->failed) continue;
        if (r->plan->fields[L->field].mode == DG_MODE_GENERATE) continue;
        if (L->inst >= 0 && !dg_fill_reachable(r, L->inst, L->item)) continue;
        leaf_key(r, li, &keys[n++]);
    }
    qsort(keys, n, sizeof *keys, cmp_key);
    dg_strbuf b = {0};
    dg_sb_puts(&b, "KNOWN VALUES:\n");
    for (size_t i = 0; i < n; i++) {
        const leaf *L = &r->leaves[keys[i].leaf];
        char *p = dg_fill_leaf_pointer(r, L);
        char *v = dg_json_render(L->value, 0);
        if (p && v) dg_sb_printf(&b, "%s = %s\n", p, v);
        else b.oom = 1;
        free(p);
        free(v);
    }
    free(keys);
    if (b.oom) {
        free(b.p);
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    }
    ivec ids = {0};
    deg_status st = dg_fill_tok(&ids, k->model, b.p, b.len, 0);
    free(r->known_text);
    r->known_text = b.p; /* the prompt lines generated text must not repeat (repeats.h) */
    double t0 = dg_now();
    if (st == DEG_OK) st = deg_trunk_prefill(r->trunk, ids.p, ids.n, NULL, NULL);
    r->t_generate += dg_now() - t0;
    free(ids.p);
    return st;
}

typedef struct gen_row {
    size_t req, leaf;
    deg_fork *fork;
    dg_acceptor *acc;
    int32_t budget;
    int32_t n_tok;
    dg_strbuf text;
    ivec ids;               /* debug: the generated tokens but the stop token */
    size_t dropped;         /* bytes of a cut final character dropped (end_in_char) */
    int repeat_cut;         /* ended before a repeated line (generate_stop_repeat) */
    dg_strbuf prompt;       /* generate_stop_repeat: KNOWN VALUES + the row's header text */
    dg_rng rng;
    double temp;
    int done;
    int32_t next;
} gen_row;

/* Decoding ended (budget spent, or nothing admissible) with g's text: a final
 * character cut by the last token's end is dropped (deg contract §12.3: a
 * value never ends inside a UTF-8 character); 1 if the rest is a complete
 * value for the acceptor (minLength, maxLength, pattern). */
static int end_in_char(gen_row *g)
{
    size_t len = dg_utf8_complete_len(g->text.p ? g->text.p : "", g->text.len);
    if (!deg_acceptor_eos_ok(g->acc, g->text.p ? g->text.p : "", len)) return 0;
    g->dropped += g->text.len - len;
    g->text.len = len;
    if (g->text.p) g->text.p[len] = 0;
    return 1;
}

typedef struct tc {
    float key;
    int32_t id;
} tc;

static int cmp_tc(const void *x, const void *y)
{
    const tc *a = x, *b = y;
    if (a->key > b->key) return -1;
    if (a->key < b->key) return 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Top DG_GEN_TOP candidates of a logits row in (key desc, id asc) order,
 * key = logit (greedy) or logit / T + Gumbel noise from the row's stream
 * (sampling without replacement, so "tried in sampled order"). */
static size_t top_candidates(const float *logits, int32_t V, double T, dg_rng *rng, tc *out)
{
    size_t n = 0;
    for (int32_t id = 0; id < V; id++) {
        tc c = {logits[id], id};
        if (n < DG_GEN_TOP) {
            out[n++] = c;
            if (n == DG_GEN_TOP) qsort(out, n, sizeof *out, cmp_tc);
        } else if (cmp_tc(&c, &out[n - 1]) < 0) {
            size_t x = n - 1;
            while (x > 0 && cmp_tc(&c, &out[x - 1]) < 0) {
                out[x] = out[x - 1];
                x--;
            }
            out[x] = c;
        }
    }
    if (n < DG_GEN_TOP) qsort(out, n, sizeof *out, cmp_tc);
    if (T > 0) {
        for (size_t i = 0; i < n; i++) {
            double u = dg_rng_uniform(rng);
            if (u <= 0) u = 1e-300;
            out[i].key = (float)((double)out[i].key / T - log(-log(u)));
        }
        qsort(out, n, sizeof *out, cmp_tc);
    }
    return n;
}

static int is_stop(const dg_ckpt *k, int32_t id)
{
    return id == k->stop_id || id == k->eos_id;
}

/* Pick the next token of a generate row: candidates in order, the first
 * admissible one; -2 = nothing admissible. */
static int32_t pick(const dg_ckpt *k, gen_row *g, const float *logits, tc *buf)
{
    const dg_tokenizer *tk = dg_model_tokenizer(k->model);
    int32_t V = k->model->hp.n_vocab;
    size_t n = top_candidates(logits, V, g->temp, &g->rng, buf);
    for (size_t i = 0; i < n; i++) {
        int32_t id = buf[i].id;
        if (is_stop(k, id)) {
            if (deg_acceptor_eos_ok(g->acc, g->text.p ? g->text.p : "", g->text.len)) return id;
            continue;
        }
        if (dg_tokenizer_is_special(tk, id)) continue;
        size_t len = 0;
        const char *bytes = dg_tokenizer_token_bytes(tk, id, &len);
        if (!bytes || len == 0) continue;
        size_t old = g->text.len;
        dg_sb_put(&g->text, bytes, len);
        if (g->text.oom) return -3;
        int ok = deg_acceptor_prefix_ok(g->acc, g->text.p, g->text.len);
        g->text.len = old;
        g->text.p[old] = 0;
        if (ok) return id;
    }
    /* Nothing in the top DG_GEN_TOP is admissible, but the text (without a
     * cut final character) is complete: end it (the stop token may rank below
     * the top candidates, e.g. at maxLength). Counted as the stop token. */
    if (end_in_char(g)) return k->stop_id >= 0 ? k->stop_id : k->eos_id >= 0 ? k->eos_id : -4;
    return -2;
}

/* Generate phase, step 1 for request ri: a leaf per x-generate field (one per
 * surviving item), KNOWN VALUES on its trunk, a fork job per leaf in J. The
 * request's own failure is recorded in it; returns what stops every request. */
static deg_status gen_request_jobs(const dg_ckpt *k, freq *reqs, size_t ri, jobs *J)
{
    freq *r = &reqs[ri];
    if (r->st != DEG_OK) return DEG_OK;
    int any = 0;
    const dg_plan *P = r->plan;
    for (size_t fi = 0; fi < P->n_fields && r->st == DEG_OK; fi++) {
        const dg_field_plan *f = &P->fields[fi];
        if (f->mode != DG_MODE_GENERATE) continue;
        for (size_t ii = 0; f->array >= 0 && ii < r->n_insts; ii++) {
            inst *I = &r->insts[ii];
            if (I->array != f->array) continue;
            for (int64_t t = 0; t < I->n_items; t++) {
                if (!dg_fill_reachable(r, (int)ii, (size_t)t)) continue;
                if (dg_fill_add_leaf(r, fi, (int)ii, (size_t)t) < 0)
                    return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
                any = 1;
            }
        }
        if (f->array < 0) {
            if (dg_fill_add_leaf(r, fi, -1, 0) < 0)
                return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            any = 1;
        }
    }
    if (!any || dg_fill_stopped(r, "the generate phase")) return DEG_OK;
    dg_poll prev = dg_run_push(dg_limits_poll, &r->lim);
    deg_status st = known_values(k, r);
    dg_run_pop(prev);
    if (st != DEG_OK) {
        dg_fill_fail(r, st, "");
        return DEG_OK;
    }
    for (size_t li = 0; li < r->n_leaves; li++) {
        if (P->fields[r->leaves[li].field].mode != DG_MODE_GENERATE) continue;
        job *j = dg_fill_job_add(J, JOB_GEN, ri, li);
        if (!j) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
        DG_TRY(dg_fill_gen_job(j, k, r, &r->leaves[li]));
    }
    return DEG_OK;
}

/* The decoding row of generate job j: token budget, temperature, the row's
 * random stream (options.seed ^ FNV-1a of the leaf's pointer), its acceptor,
 * its prompt's text (generate_stop_repeat) and its fork of the request's trunk. */
static deg_status gen_row_init(const dg_ckpt *k, freq *reqs, const job *j, gen_row *g)
{
    freq *r = &reqs[j->req];
    leaf *L = &r->leaves[j->target];
    const dg_field_plan *f = &r->plan->fields[L->field];
    g->req = j->req;
    g->leaf = j->target;
    g->budget = f->max_tokens > 0 ? f->max_tokens : r->opt.max_new_tokens;
    g->temp = r->opt.temperature;
    char *ptr = dg_fill_leaf_pointer(r, L);
    uint64_t sm = r->opt.seed ^ dg_fnv1a64(ptr ? ptr : "");
    free(ptr);
    dg_rng_seed(&g->rng, dg_splitmix64(&sm));
    size_t maxlen = f->constraints.max_length >= 0 ? (size_t)f->constraints.max_length : SIZE_MAX;
    size_t minlen = f->constraints.min_length >= 0 ? (size_t)f->constraints.min_length : 0;
    DG_TRY(deg_acceptor_new(f->constraints.pattern, minlen, maxlen, &g->acc));
    if (k->generate_stop_repeat) {
        /* the lines of the row's prompt: KNOWN VALUES, then its own header */
        const dg_tokenizer *tk = dg_model_tokenizer(k->model);
        if (r->known_text) dg_sb_puts(&g->prompt, r->known_text);
        for (size_t t = 0; t < j->ids.n; t++) {
            size_t len = 0;
            const char *bytes = dg_tokenizer_token_bytes(tk, j->ids.p[t], &len);
            if (bytes && len) dg_sb_put(&g->prompt, bytes, len);
        }
        if (g->prompt.oom) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    }
    return deg_fork_new(r->trunk, &g->fork);
}

/* Fail g's request with a message naming the leaf (fmt: one %s for its pointer,
 * then the arguments). */
static void gen_fail(freq *reqs, const gen_row *g, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void gen_fail(freq *reqs, const gen_row *g, const char *fmt, ...)
{
    freq *r = &reqs[g->req];
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    char *ptr = dg_fill_leaf_pointer(r, &r->leaves[g->leaf]);
    dg_fail(DEG_ERR_FILL, "x-generate %s: %s", ptr ? ptr : "?", msg ? msg : "out of memory");
    free(ptr);
    free(msg);
    dg_fill_fail(r, DEG_ERR_FILL, "");
}

/* One decode step of row g: stop checks, the budget, the next admissible token
 * (pick) appended to the text. *fed = 1 when the row feeds *next this step.
 * A row's own failure fails its request; returns what stops every row. */
static deg_status gen_step(const dg_ckpt *k, freq *reqs, gen_row *g, float *logits, tc *buf,
                           int32_t *next, int *fed)
{
    freq *r = &reqs[g->req];
    *fed = 0;
    if (g->done) return DEG_OK;
    r->due = 1;
    int stopped = dg_fill_stopped(r, "the generate phase");
    r->due = 0;
    if (stopped) return DEG_OK;
    if (g->n_tok >= g->budget) {
        /* budget spent without a stop token: valid only if complete */
        g->done = 1;
        if (!end_in_char(g))
            gen_fail(reqs, g, "the budget of %d tokens ended before minLength/maxLength/pattern "
                     "were met (text so far: \"%.80s\")", (int)g->budget,
                     g->text.p ? g->text.p : "");
        return DEG_OK;
    }
    DG_TRY(deg_fork_logits(g->fork, logits));
    int32_t id = pick(k, g, logits, buf);
    if (id == -3) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    if (id == -2) {
        g->done = 1;
        gen_fail(reqs, g, "no admissible token among the top %d after \"%.80s\" "
                 "(minLength/maxLength/pattern cannot be met)", DG_GEN_TOP,
                 g->text.p ? g->text.p : "");
        return DEG_OK;
    }
    g->n_tok++;
    if (id == -4 || is_stop(k, id)) {
        g->done = 1;
        return DEG_OK;
    }
    size_t len = 0;
    const char *bytes = dg_tokenizer_token_bytes(dg_model_tokenizer(k->model), id, &len);
    dg_sb_put(&g->text, bytes, len);
    if (g->text.oom || (k->debug_raw && dg_fill_push(&g->ids, id) != DEG_OK))
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    if (k->generate_stop_repeat && memchr(bytes, '\n', len)) {
        /* a line just ended: if it repeats an earlier one or a line of the prompt,
         * the value ends before it (repeats.h), when what is left is a complete value */
        size_t cut = dg_repeat_cut(g->text.p, g->text.len, g->prompt.p, g->prompt.len);
        if (cut < g->text.len && deg_acceptor_eos_ok(g->acc, g->text.p, cut)) {
            g->text.len = cut;
            g->text.p[cut] = 0;
            g->repeat_cut = 1;
            g->done = 1;
            return DEG_OK;
        }
    }
    *next = id;
    *fed = 1;
    return DEG_OK;
}

/* Each row's text as its leaf's value (with meta), unless its request stopped. */
static void gen_results(const dg_ckpt *k, freq *reqs, gen_row *rows, size_t n_rows, double dt)
{
    for (size_t q = 0; q < n_rows; q++) {
        gen_row *g = &rows[q];
        freq *r = &reqs[g->req];
        r->t_generate += dt / (double)n_rows;
        if (r->st != DEG_OK) continue;
        leaf *L = &r->leaves[g->leaf];
        L->value = json_stringn(g->text.p ? g->text.p : "", g->text.len);
        if (!L->value) { /* cannot happen: the acceptor admits valid UTF-8 only */
            gen_fail(reqs, g, "generated text is not valid UTF-8");
            continue;
        }
        L->meta = json_pack("{s:s, s:i}", "mode", "generate", "generated_tokens",
                            (int)g->n_tok);
        if (L->meta && g->repeat_cut)
            json_object_set_new(L->meta, "stopped", json_string("repeated_line"));
        if (L->meta && k->debug_raw) {
            json_t *a = json_array();
            for (size_t t = 0; t < g->ids.n; t++)
                json_array_append_new(a, json_integer(g->ids.p[t]));
            json_object_set_new(L->meta, "token_ids", a);
            json_object_set_new(L->meta, "dropped_bytes", json_integer((json_int_t)g->dropped));
        }
        r->generated_tokens += (size_t)g->n_tok;
    }
}

/* The fill's rows on the library's decode loop (model/generate.h dg_forks_decode). */
typedef struct gen_decoding {
    const dg_ckpt *k;
    freq *reqs;
    gen_row *rows;
    float *logits;          /* [n_vocab] scratch */
    tc *buf;                /* [DG_GEN_TOP] scratch */
    int32_t *next;          /* [n_rows] each row's token of the step */
    batch_poll *bp;
} gen_decoding;

/* Row q's choice: gen_step (the acceptor's admissible candidates in order). */
static deg_status gen_choose(void *ud, size_t q, int32_t *id, int *feed)
{
    gen_decoding *d = ud;
    DG_TRY(gen_step(d->k, d->reqs, &d->rows[q], d->logits, d->buf, &d->next[q], feed));
    if (*feed) {
        *id = d->next[q];
        d->reqs[d->rows[q].req].gen_fed++;
    }
    return DEG_OK;
}

/* A feed stopped by the run poll (every request of the batch stopped) is no
 * error: each row's request fails with its own reason (dg_fill_stopped). */
static deg_status gen_fed(void *ud, deg_status st)
{
    const gen_decoding *d = ud;
    return d->bp->stopped ? DEG_OK : st;
}

/* Decode rows [0, n_rows) (the prompts of jobs J) together on the library's
 * decode loop: one deg_forks_feed of every prompt, then one token per active
 * row per step. */
static deg_status gen_decode(const dg_ckpt *k, freq *reqs, const jobs *J, gen_row *rows,
                             size_t n_rows)
{
    deg_status st = DEG_OK;
    double t0 = dg_now();
    deg_fork **forks = calloc(n_rows, sizeof *forks);
    const int32_t **ids = calloc(n_rows, sizeof *ids);
    size_t *ns = calloc(n_rows, sizeof *ns);
    size_t *sel = calloc(n_rows, sizeof *sel);
    gen_decoding gd = {k, reqs, rows, malloc((size_t)k->model->hp.n_vocab * sizeof(float)),
                       malloc(DG_GEN_TOP * sizeof(tc)), calloc(n_rows, sizeof(int32_t)), NULL};
    if (!forks || !ids || !ns || !sel || !gd.logits || !gd.buf || !gd.next)
        st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    for (size_t q = 0; q < n_rows && st == DEG_OK; q++) reqs[rows[q].req].due += J->p[q].ids.n;
    for (size_t q = 0; q < n_rows && st == DEG_OK; q++) {
        freq *r = &reqs[rows[q].req];
        forks[q] = rows[q].fork;
        ids[q] = J->p[q].ids.p;
        ns[q] = dg_fill_stopped(r, "the generate phase") ? 0 : J->p[q].ids.n;
        r->gen_fed += ns[q];
        sel[q] = q;
    }
    for (size_t q = 0; q < n_rows && st == DEG_OK; q++) reqs[rows[q].req].due = 0;
    batch_poll bp = {reqs, J->p, sel, n_rows, 0};
    gd.bp = &bp;
    const dg_decode dec = {.choose = gen_choose, .fed = gen_fed, .ud = &gd};
    dg_poll prev = dg_run_push(dg_fill_batch_poll, &bp);
    if (st == DEG_OK) st = dg_forks_decode(forks, n_rows, ids, ns, NULL, &dec);
    dg_run_pop(prev);
    double dt = dg_now() - t0;
    if (st == DEG_OK) gen_results(k, reqs, rows, n_rows, dt);
    else
        for (size_t q = 0; q < n_rows; q++) reqs[rows[q].req].t_generate += dt / (double)n_rows;
    free(forks);
    free(ids);
    free(ns);
    free(sel);
    free(gd.logits);
    free(gd.buf);
    free(gd.next);
    return st;
}

/* Generate phase for every request (§7.3): KNOWN VALUES on each trunk, then
 * all x-generate leaves of all requests decode together. */
deg_status dg_fill_generate(const dg_ckpt *k, freq *reqs, size_t n_req)
{
    jobs J = {0};
    gen_row *rows = NULL;
    size_t n_rows = 0;
    deg_status st = DEG_OK;
    for (size_t ri = 0; ri < n_req && st == DEG_OK; ri++) st = gen_request_jobs(k, reqs, ri, &J);
    if (st != DEG_OK || J.n == 0) goto done;
    rows = calloc(J.n, sizeof *rows);
    if (!rows) {
        st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
        goto done;
    }
    for (size_t q = 0; q < J.n && st == DEG_OK; q++)
        st = gen_row_init(k, reqs, &J.p[q], &rows[n_rows++]);
    if (st == DEG_OK) st = gen_decode(k, reqs, &J, rows, n_rows);
done:
    for (size_t q = 0; q < n_rows; q++) {
        deg_fork_free(rows[q].fork);
        deg_acceptor_free(rows[q].acc);
        free(rows[q].text.p);
        free(rows[q].prompt.p);
        free(rows[q].ids.p);
    }
    free(rows);
    dg_fill_jobs_free(&J);
    return st;
}
