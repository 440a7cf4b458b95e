/* The deg.fill runtime (fill.h; deg contract §7, §8, §12.1-§12.3, §12.6).
 *
 * One request:
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
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/run.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "base/strmap.h"
#include "base/utf8.h"
#include "deg/acceptor.h"
#include "deg/anchor.h"
#include "deg/fill.h"
#include "deg/keyprior.h"
#include "deg/parse.h"
#include "deg/plan.h"
#include "deg/render.h"
#include "deg/request.h"
#include "deg/response.h"
#include "deg/validate.h"
#include "model/arch.h"
#include "model/chat.h"
#include "model/model.h"
#include "model/sample.h"
#include "model/state.h"
#include "tokenizer/tokenizer.h"

/* ---- small helpers -------------------------------------------------------- */


/* Growable int32 token list. */
typedef struct ivec {
    int32_t *p;
    size_t n, cap;
} ivec;

/* Tokenize text (special != 0: special tokens parsed) onto v. Bytes the
 * vocabulary lacks are dropped as HF tokenizers drops them (issue 19 item 5:
 * one control byte used to reject a whole document); build_trunk maps the
 * context's tokens back to the original bytes. */
static deg_status iv_tok(ivec *v, const deg_model *m, const char *text, size_t len, int special)
{
    size_t n = 0;
    unsigned fl = (special ? DEG_TOKENIZE_SPECIAL : 0u) | DEG_TOKENIZE_DROP_MISSING_BYTES;
    deg_status st = dg_tokenizer_encode_ex(dg_model_tokenizer(m), text, len, fl, NULL, 0, &n);
    if (st != DEG_OK && st != DEG_ERR_RANGE) return st;
    dg_clear_error();
    if (v->n + n > v->cap) {
        size_t cap = v->cap ? v->cap : 64;
        while (cap < v->n + n) cap *= 2;
        int32_t *p = realloc(v->p, cap * sizeof *p);
        if (!p) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (tokens)");
        v->p = p;
        v->cap = cap;
    }
    size_t got = 0;
    DG_TRY(dg_tokenizer_encode_ex(dg_model_tokenizer(m), text, len, fl, v->p + v->n, n, &got));
    v->n += got;
    return DEG_OK;
}

static deg_status iv_push(ivec *v, int32_t id)
{
    if (v->n + 1 > v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 64;
        int32_t *p = realloc(v->p, cap * sizeof *p);
        if (!p) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (tokens)");
        v->p = p;
        v->cap = cap;
    }
    v->p[v->n++] = id;
    return DEG_OK;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- per-request state ---------------------------------------------------- */

typedef struct inst {       /* one array instance */
    int array;              /* plan->arrays index */
    int parent;             /* enclosing instance, -1 = top level */
    size_t parent_item;
    size_t *idx;            /* original item indices of the enclosing items, outermost first */
    size_t n_idx;
    int64_t n_items;        /* decided count */
    char *alive;            /* [n_items] */
    size_t *newidx;         /* [n_items] index after dropping */
    int64_t n_alive;
    /* §12.6 anchor mode: the items are the anchors found in the region */
    int anchored;
    size_t r0, r1;          /* region: context tokens [r0, r1) (every instance has one) */
    size_t *anchor;         /* [n_items] anchor tokens, ascending */
    float *alog;            /* [r1 - r0] anchor logits, until resolved */
    float clog[DG_COUNT_MAX + 1]; /* count fork logits (count_peaks / hybrid) */
    int has_clog;
    json_t *raw;            /* debug: digest of the anchor (+ count) logits */
    size_t *gold_idx;       /* trace, anchored: gold item index of each anchor (anchor order) */
    int trace_out;          /* trace: left out (the anchors hook said so) */
} inst;

typedef struct leaf {
    size_t field;
    int inst;               /* innermost enclosing instance, -1 */
    size_t item;
    size_t *idx;            /* original indices, outermost first */
    size_t n_idx;
    json_t *value;          /* NULL = key omitted */
    json_t *meta;
    int failed;             /* forbid leaf without a valid value */
    char *fail_msg;
} leaf;

enum { JOB_LEAF = 0, JOB_COUNT = 1, JOB_GEN = 2, JOB_ANCHOR = 3 };

typedef struct job {
    int kind;
    size_t req;
    size_t target;          /* leaf index (LEAF/GEN) or instance index (COUNT) */
    ivec ids;
    size_t *mark;           /* own-token positions whose hidden states are kept */
    size_t n_mark, cap_mark;
    float *h;               /* [n_mark, E] */
    size_t *order;          /* choice leaf under a trace: plan outcome of each option line */
} job;

typedef struct jobs {
    job *p;
    size_t n, cap;
} jobs;

typedef struct freq {
    deg_status st;
    json_t *errors;         /* problems list for the caller (request/schema/fill) */
    deg_request *rq;
    const dg_plan *plan;
    const char *ctx;
    size_t ctx_len;
    deg_fill_options opt;
    deg_trunk *trunk;
    size_t c0, c1;          /* context tokens are trunk rows [c0, c1) */
    int anchor_on;          /* anchor-mode checkpoint and >= anchor_min_tokens (§12.6) */
    float *ctx_hidden;      /* [c1 - c0, E] */
    /* single-line spans (span_single_line): per code point cp, the newlines
     * before it, the first non-blank code point >= cp and one past the last
     * non-blank code point < cp ([n_cp + 1] each) */
    size_t *nl_pre, *nb_next, *nb_prev;
    dg_keylines kv;         /* key/value lines of the context (key prior on) */
    size_t *tok_cp0, *tok_cp1; /* per context token: code point range it covers */
    size_t *cp_tok;         /* per code point: the context token holding its first byte */
    size_t *cp_byte;        /* per code point: byte offset (n_cp + 1 entries) */
    size_t n_cp;
    inst *insts;
    size_t n_insts, cap_insts;
    leaf *leaves;
    size_t n_leaves, cap_leaves;
    size_t generated_tokens;
    double t_prefill, t_forks, t_generate;
    size_t fork_rows, fork_tokens;
    const dg_trace_hooks *trace; /* training trace (dg_fill_trace), else NULL */
    int32_t *trunk_ids;     /* trace only: the trunk's tokens [deg_trunk_len] */
    dg_limits lim;          /* work limits (deg_fill_many_ex + request options) */
    size_t due;             /* fork tokens of the round about to run (max_fork_tokens) */
    size_t gen_fed;         /* generate phase: prompt + decoded tokens fed to forks */
} freq;

static void set_fail(freq *r, deg_status st, const char *loc)
{
    if (r->st != DEG_OK) return;
    r->st = st;
    if (!r->errors) r->errors = json_array();
    json_array_append_new(r->errors, json_pack("{s:s, s:s}", "loc", loc ? loc : "",
                                               "msg", deg_errmsg()));
}

/* Work limits (base/run.h): a request that is cancelled, past its deadline
 * or over a cap fails alone with DEG_ERR_CANCELLED / DEG_ERR_LIMIT. Returns 1
 * if the request has stopped (for any reason). */
static int stop_check(freq *r, const char *phase)
{
    if (r->st != DEG_OK) return 1;
    deg_status st = dg_limits_check(&r->lim, phase);
    size_t nf = r->n_leaves + r->n_insts;
    if (st == DEG_OK && r->lim.max_fields && (int64_t)nf > r->lim.max_fields)
        st = dg_fail(DEG_ERR_LIMIT, "max_fields %lld: the schema instantiates %zu fields "
                     "(leaves of every item + array instances) during %s",
                     (long long)r->lim.max_fields, nf, phase);
    if (st == DEG_OK && r->lim.max_fork_tokens &&
        (int64_t)(r->fork_tokens + r->gen_fed + r->due) > r->lim.max_fork_tokens)
        st = dg_fail(DEG_ERR_LIMIT, "max_fork_tokens %lld: %zu fork tokens needed during %s",
                     (long long)r->lim.max_fork_tokens, r->fork_tokens + r->gen_fed + r->due,
                     phase);
    if (st != DEG_OK) set_fail(r, st, "");
    return st != DEG_OK;
}

/* Poll hook of one fork batch (dg_run_push): the batch stops between its
 * passes once every request in it has stopped. */
typedef struct batch_poll {
    freq *reqs;
    const job *J;
    const size_t *sel;
    size_t n;
    int stopped;
} batch_poll;

static deg_status batch_poll_fn(void *ctx)
{
    batch_poll *b = ctx;
    for (size_t q = 0; q < b->n; q++) {
        freq *r = &b->reqs[b->J[b->sel[q]].req];
        if (r->st == DEG_OK && !dg_limits_hit(&r->lim)) return DEG_OK;
    }
    b->stopped = 1;
    return DEG_ERR_CANCELLED;
}

static int add_inst(freq *r, int array, int parent, size_t parent_item)
{
    if (r->n_insts == r->cap_insts) {
        size_t cap = r->cap_insts ? 2 * r->cap_insts : 16;
        inst *p = realloc(r->insts, cap * sizeof *p);
        if (!p) return -1;
        r->insts = p;
        r->cap_insts = cap;
    }
    inst *I = &r->insts[r->n_insts];
    memset(I, 0, sizeof *I);
    I->array = array;
    I->parent = parent;
    I->parent_item = parent_item;
    size_t n = 0;
    if (parent >= 0) n = r->insts[parent].n_idx + 1;
    I->idx = calloc(n ? n : 1, sizeof(size_t));
    if (!I->idx) return -1;
    if (parent >= 0) {
        memcpy(I->idx, r->insts[parent].idx, r->insts[parent].n_idx * sizeof(size_t));
        I->idx[n - 1] = parent_item;
    }
    I->n_idx = n;
    return (int)r->n_insts++;
}

static long add_leaf(freq *r, size_t field, int in, size_t item)
{
    if (r->n_leaves == r->cap_leaves) {
        size_t cap = r->cap_leaves ? 2 * r->cap_leaves : 32;
        leaf *p = realloc(r->leaves, cap * sizeof *p);
        if (!p) return -1;
        r->leaves = p;
        r->cap_leaves = cap;
    }
    leaf *L = &r->leaves[r->n_leaves];
    memset(L, 0, sizeof *L);
    L->field = field;
    L->inst = in;
    L->item = item;
    size_t n = in >= 0 ? r->insts[in].n_idx + 1 : 0;
    L->idx = calloc(n ? n : 1, sizeof(size_t));
    if (!L->idx) return -1;
    if (in >= 0) {
        memcpy(L->idx, r->insts[in].idx, r->insts[in].n_idx * sizeof(size_t));
        L->idx[n - 1] = item;
    }
    L->n_idx = n;
    return (long)r->n_leaves++;
}

static void freq_clear(freq *r)
{
    for (size_t i = 0; i < r->n_insts; i++) {
        free(r->insts[i].idx);
        free(r->insts[i].alive);
        free(r->insts[i].newidx);
        free(r->insts[i].anchor);
        free(r->insts[i].alog);
        free(r->insts[i].gold_idx);
        json_decref(r->insts[i].raw);
    }
    free(r->insts);
    for (size_t i = 0; i < r->n_leaves; i++) {
        free(r->leaves[i].idx);
        json_decref(r->leaves[i].value);
        json_decref(r->leaves[i].meta);
        free(r->leaves[i].fail_msg);
    }
    free(r->leaves);
    deg_trunk_free(r->trunk);
    free(r->ctx_hidden);
    free(r->trunk_ids);
    free(r->tok_cp0);
    free(r->tok_cp1);
    free(r->cp_tok);
    free(r->cp_byte);
    dg_keylines_free(&r->kv);
    free(r->nl_pre);
    free(r->nb_next);
    free(r->nb_prev);
    deg_request_free(r->rq);
    json_decref(r->errors);
}

/* ---- jobs ----------------------------------------------------------------- */

static job *jobs_add(jobs *J, int kind, size_t req, size_t target)
{
    if (J->n == J->cap) {
        size_t cap = J->cap ? 2 * J->cap : 32;
        job *p = realloc(J->p, cap * sizeof *p);
        if (!p) return NULL;
        J->p = p;
        J->cap = cap;
    }
    job *j = &J->p[J->n++];
    memset(j, 0, sizeof *j);
    j->kind = kind;
    j->req = req;
    j->target = target;
    return j;
}

static deg_status job_mark(job *j)
{
    if (j->n_mark == j->cap_mark) {
        size_t cap = j->cap_mark ? 2 * j->cap_mark : 8;
        size_t *p = realloc(j->mark, cap * sizeof *p);
        if (!p) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
        j->mark = p;
        j->cap_mark = cap;
    }
    if (j->ids.n == 0) return dg_fail(DEG_ERR_INTERNAL, "fill: mark on an empty fork");
    j->mark[j->n_mark++] = j->ids.n - 1;
    return DEG_OK;
}

static void jobs_free(jobs *J)
{
    for (size_t i = 0; i < J->n; i++) {
        free(J->p[i].ids.p);
        free(J->p[i].mark);
        free(J->p[i].h);
        free(J->p[i].order);
    }
    free(J->p);
    memset(J, 0, sizeof *J);
}

/* Append "text\n" to the fork as its own tokenization. */
static deg_status put_line(job *j, const deg_model *m, const char *text)
{
    DG_TRY(iv_tok(&j->ids, m, text, strlen(text), 0));
    return iv_tok(&j->ids, m, "\n", 1, 0);
}

static deg_status put_linef(job *j, const deg_model *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static deg_status put_linef(job *j, const deg_model *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    deg_status st = put_line(j, m, s);
    free(s);
    return st;
}

/* Fork-side indices of the item chain ending at item `item` of instance
 * `in` (outermost first): an anchored item renders as "*" (DG_IDX_STAR, no
 * ordinal in an anchored item's forks, §12.6), an index-addressed one as its
 * original index. Returns the chain length. */
static size_t fork_chain(const freq *r, int in, size_t item, size_t *out)
{
    size_t tmp[64], n = 0;
    while (in >= 0 && n < 64) {
        tmp[n++] = r->insts[in].anchored ? DG_IDX_STAR : item;
        item = r->insts[in].parent_item;
        in = r->insts[in].parent;
    }
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

/* End (exclusive) of anchored item `item`'s region: the next sibling's
 * anchor, the last item's its instance's region end (§12.6). */
static size_t item_end(const inst *I, size_t item)
{
    return item + 1 < (size_t)I->n_items ? I->anchor[item + 1] : I->r1;
}

/* Locator of anchored item `item` of I: the context text from its anchor,
 * at most DG_LOCATOR_TOKENS tokens, cut at the region end, as a JSON string. */
static char *locator_json(const freq *r, const inst *I, size_t item)
{
    size_t t0 = I->anchor[item], t1 = item_end(I, item);
    if (t1 > t0 + DG_LOCATOR_TOKENS) t1 = t0 + DG_LOCATOR_TOKENS;
    size_t b0 = r->cp_byte[r->tok_cp0[t0]];
    size_t b1 = t1 > t0 ? r->cp_byte[r->tok_cp1[t1 - 1]] : b0;
    if (b1 < b0) b1 = b0;
    json_t *js = json_stringn(r->ctx + b0, b1 - b0);
    char *out = js ? dg_json_render(js, 0) : NULL;
    json_decref(js);
    return out;
}

/* One line per enclosing item of instance in (and of item `item` of `in`
 * itself when with_self), outermost first: "ITEM i of <array pointer>"
 * (index-addressed) or "ITEM <array pointer> AT: \"<locator>\"" (anchored,
 * §12.6). */
static deg_status put_items(job *j, const deg_model *m, const freq *r, int in, int with_self,
                            size_t item)
{
    if (in < 0) return DEG_OK;
    /* collect the chain outermost first */
    int chain[64];
    size_t items[64];
    int n = 0;
    int c = in;
    size_t it = item;
    int self = with_self;
    while (c >= 0 && n < 64) {
        if (self) {
            chain[n] = c;
            items[n] = it;
            n++;
        }
        self = 1;
        it = r->insts[c].parent_item;
        c = r->insts[c].parent;
    }
    for (int k = n - 1; k >= 0; k--) {
        const inst *I = &r->insts[chain[k]];
        size_t idx[64];
        size_t ni = fork_chain(r, I->parent, I->parent_item, idx);
        char *p = dg_path_pointer(&r->plan->arrays[I->array].path, idx, ni);
        if (!p) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
        deg_status st;
        if (I->anchored) {
            char *loc = locator_json(r, I, items[k]);
            st = loc ? put_linef(j, m, "ITEM %s AT: %s", p, loc)
                     : dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            free(loc);
        } else {
            st = put_linef(j, m, "ITEM %zu of %s", items[k], p);
        }
        free(p);
        DG_TRY(st);
    }
    return DEG_OK;
}

static deg_status put_annotations(job *j, const deg_model *m, const char *title,
                                  const char *desc)
{
    if (title) DG_TRY(put_linef(j, m, "TITLE: %s", title));
    if (desc) DG_TRY(put_linef(j, m, "DESCRIPTION: %s", desc));
    return DEG_OK;
}

static char *json_text(const json_t *v)
{
    return dg_json_render(v, 0);
}

static deg_status trace_order(job *j, const freq *r, const leaf *L, size_t n);

static deg_status build_leaf_job(job *j, const deg_model *m, const freq *r, const leaf *L)
{
    const dg_field_plan *f = &r->plan->fields[L->field];
    size_t idx[64];
    size_t ni = fork_chain(r, L->inst, L->item, idx);
    char *ptr = dg_path_pointer(&f->path, idx, ni);
    if (!ptr) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    deg_status st = put_linef(j, m, "FIELD %s", ptr);
    free(ptr);
    DG_TRY(st);
    DG_TRY(put_items(j, m, r, L->inst, 1, L->item));
    DG_TRY(put_annotations(j, m, f->title, f->description));
    DG_TRY(put_linef(j, m, "KIND: %s", dg_mode_name(f->mode)));
    if (dg_mode_is_extract(f->mode)) {
        json_t *c = json_deep_copy(f->constraints.json);
        if (f->format != DG_FORMAT_NONE)
            json_object_set_new(c, "format", json_string(dg_format_name(f->format)));
        if (json_object_size(c)) {
            char *t = dg_json_render(c, DG_RENDER_SORT_KEYS);
            st = t ? put_linef(j, m, "CONSTRAINTS: %s", t) : dg_fail(DEG_ERR_NOMEM, "oom");
            free(t);
        }
        json_decref(c);
        DG_TRY(st);
    }
    if (f->mode == DG_MODE_CHOICE || f->mode == DG_MODE_SCORE) {
        DG_TRY(put_line(j, m, "OPTIONS:"));
        size_t n = f->mode == DG_MODE_CHOICE ? f->n_options : f->n_levels + (f->null_outcome ? 1 : 0);
        DG_TRY(trace_order(j, r, L, n));
        for (size_t line = 0; line < n; line++) {
            size_t i = j->order ? j->order[line] : line;
            dg_strbuf b = {0};
            dg_sb_puts(&b, "- ");
            if (f->mode == DG_MODE_CHOICE) {
                char *t = json_text(json_array_get(f->options, i));
                if (t) dg_sb_puts(&b, t);
                else b.oom = 1;
                free(t);
                if (f->option_descriptions && f->option_descriptions[i]) {
                    dg_sb_puts(&b, ": ");
                    dg_sb_puts(&b, f->option_descriptions[i]);
                }
            } else if (i < f->n_levels) {
                dg_sb_printf(&b, "%lld", (long long)f->levels[i]);
                if (f->level_labels && f->level_labels[i]) dg_sb_printf(&b, ": %s", f->level_labels[i]);
            } else {
                dg_sb_puts(&b, "null");
            }
            if (b.oom) {
                free(b.p);
                return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            }
            st = iv_tok(&j->ids, m, b.p, b.len, 0);
            free(b.p);
            DG_TRY(st);
            DG_TRY(job_mark(j));
            DG_TRY(iv_tok(&j->ids, m, "\n", 1, 0));
        }
    }
    DG_TRY(iv_tok(&j->ids, m, "ANSWER:", 7, 0));
    return job_mark(j);
}

/* Count fork (§12.1) or, with anchor != 0, anchor fork (§12.6) of instance in. */
static deg_status build_array_job(job *j, const deg_model *m, const freq *r, int in, int anchor)
{
    const inst *I = &r->insts[in];
    const dg_array_plan *a = &r->plan->arrays[I->array];
    size_t idx[64];
    size_t ni = fork_chain(r, I->parent, I->parent_item, idx);
    char *ptr = dg_path_pointer(&a->path, idx, ni);
    if (!ptr) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    deg_status st = put_linef(j, m, "ARRAY %s", ptr);
    free(ptr);
    DG_TRY(st);
    DG_TRY(put_items(j, m, r, in, 0, 0));
    DG_TRY(put_annotations(j, m, a->title, a->description));
    dg_strbuf b = {0};
    dg_sb_puts(&b, "ITEM FIELDS:");
    for (size_t i = 0; i < a->n_fields; i++) {
        dg_sb_puts(&b, i ? ", " : " ");
        dg_sb_puts(&b, r->plan->fields[a->first_field + i].pointer);
    }
    st = b.oom ? dg_fail(DEG_ERR_NOMEM, "fill: out of memory") : put_line(j, m, b.p);
    free(b.p);
    DG_TRY(st);
    if (anchor) DG_TRY(put_line(j, m, "KIND: mark where each item starts in the context"));
    DG_TRY(iv_tok(&j->ids, m, "ANSWER:", 7, 0));
    return job_mark(j);
}

static deg_status build_count_job(job *j, const deg_model *m, const freq *r, int in)
{
    return build_array_job(j, m, r, in, 0);
}

/* 1 if array ai's item subtree has an extract leaf: it can be anchored (§12.6). */
static int array_has_extract(const dg_plan *P, size_t ai)
{
    const dg_array_plan *a = &P->arrays[ai];
    for (size_t i = 0; i < a->n_fields; i++)
        if (dg_mode_is_extract(P->fields[a->first_field + i].mode)) return 1;
    return 0;
}

/* Jobs of a new array instance c: anchored -> anchor fork (+ count fork for
 * count_peaks / hybrid); index -> count fork. */
static deg_status array_jobs(freq *r, size_t ri, jobs *J, const deg_model *m, int c)
{
    inst *C = &r->insts[c];
    int in = C->parent;
    if (in < 0) {
        C->r0 = 0;
        C->r1 = r->c1 - r->c0;
    } else if (r->insts[in].anchored) {
        C->r0 = r->insts[in].anchor[C->parent_item];
        C->r1 = item_end(&r->insts[in], C->parent_item);
    } else {
        C->r0 = r->insts[in].r0;
        C->r1 = r->insts[in].r1;
    }
    C->anchored = r->anchor_on && array_has_extract(r->plan, (size_t)C->array);
    if (C->anchored) {
        job *j = jobs_add(J, JOB_ANCHOR, ri, (size_t)c);
        if (!j) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
        DG_TRY(build_array_job(j, m, r, c, 1));
        if (r->opt.array_decode == DEG_ARRAY_DECODE_THRESHOLD) return DEG_OK;
    }
    job *j = jobs_add(J, JOB_COUNT, ri, (size_t)c);
    if (!j) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    return build_count_job(j, m, r, c);
}

/* Create the round's jobs for the items of instance `in` (its leaves and
 * nested count forks), or for the top level when in < 0. */
static deg_status expand(freq *r, size_t ri, jobs *J, const deg_model *m, int in)
{
    const dg_plan *P = r->plan;
    int64_t n_items = in >= 0 ? r->insts[in].n_items : 1;
    int array = in >= 0 ? r->insts[in].array : -1;
    for (int64_t it = 0; it < n_items; it++) {
        for (size_t fi = 0; fi < P->n_fields; fi++) {
            const dg_field_plan *f = &P->fields[fi];
            if (f->array != array || f->mode == DG_MODE_GENERATE) continue;
            long li = add_leaf(r, fi, in, (size_t)it);
            if (li < 0) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            job *j = jobs_add(J, JOB_LEAF, ri, (size_t)li);
            if (!j) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            DG_TRY(build_leaf_job(j, m, r, &r->leaves[li]));
        }
        for (size_t ai = 0; ai < P->n_arrays; ai++) {
            if (P->arrays[ai].parent_array != array) continue;
            int c = add_inst(r, (int)ai, in, (size_t)it);
            if (c < 0) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            DG_TRY(array_jobs(r, ri, J, m, c));
        }
        if (stop_check(r, "the fork rounds")) return r->st;
    }
    return DEG_OK;
}

/* ---- trunk ---------------------------------------------------------------- */

/* The fill prompt is one user turn of the checkpoint's chat layout, written in two
 * parts: the trunk opens it (the turn's opening, "CONTEXT:\n", the context) and a
 * generate fork's text closes it (the turn's end and the generation prompt); the
 * text around the content is the chat renderer's (dg_chat_user_turn). Layout
 * "none": no turn ("CONTEXT:\n" ... "VALUE: "). Any other name is ChatML. */
static dg_chat_layout fill_layout(const dg_ckpt *k)
{
    if (strcmp(k->chat_layout, "none") == 0) return DG_CHAT_NONE;
    return strcmp(k->chat_layout, "qwen3") == 0 ? DG_CHAT_QWEN3 : DG_CHAT_CHATML;
}

/* The trunk's text before the context, tokenized with special tokens into ids. */
static deg_status put_turn_open(ivec *ids, const dg_ckpt *k)
{
    static const char head[] = "CONTEXT:\n";
    dg_chat_layout layout = fill_layout(k);
    if (layout == DG_CHAT_NONE) return iv_tok(ids, k->model, head, strlen(head), 1);
    char *open, *close;
    DG_TRY(dg_chat_user_turn(layout, &open, &close));
    dg_strbuf b = {0};
    dg_sb_puts(&b, open);
    dg_sb_puts(&b, head);
    free(open);
    free(close);
    deg_status st = b.oom ? dg_fail(DEG_ERR_NOMEM, "fill: out of memory")
                          : iv_tok(ids, k->model, b.p, b.len, 1);
    free(b.p);
    return st;
}

static deg_status build_trunk(const dg_ckpt *k, freq *r)
{
    const deg_model *m = k->model;
    const dg_tokenizer *tk = dg_model_tokenizer(m);
    ivec ids = {0};
    deg_status st = DEG_OK;
    int32_t bos = dg_tokenizer_bos(tk);
    if (bos >= 0 && dg_tokenizer_add_bos(tk)) st = iv_push(&ids, bos);
    if (st == DEG_OK) st = put_turn_open(&ids, k);
    r->c0 = ids.n;
    if (st == DEG_OK) st = iv_tok(&ids, m, r->ctx, r->ctx_len, 0);
    r->c1 = ids.n;
    if (st == DEG_OK) st = iv_tok(&ids, m, "\n", 1, 0);
    if (st != DEG_OK) goto done;
    size_t nc = r->c1 - r->c0;
    /* code point tables */
    size_t ncp = 0;
    if ((st = dg_parse_utf8_check(r->ctx, r->ctx_len, "context", &ncp)) != DEG_OK) goto done;
    r->n_cp = ncp;
    r->cp_byte = malloc((ncp + 1) * sizeof(size_t));
    r->cp_tok = malloc((ncp + 1) * sizeof(size_t));
    r->tok_cp0 = malloc((nc + 1) * sizeof(size_t));
    r->tok_cp1 = malloc((nc + 1) * sizeof(size_t));
    if (!r->cp_byte || !r->cp_tok || !r->tok_cp0 || !r->tok_cp1) {
        st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory (context tables)");
        goto done;
    }
    {
        size_t c = 0;
        for (size_t b = 0; b < r->ctx_len; b++)
            if (((unsigned char)r->ctx[b] & 0xC0) != 0x80) r->cp_byte[c++] = b;
        r->cp_byte[ncp] = r->ctx_len;
        for (size_t e = 0; e < ncp; e++) r->cp_tok[e] = SIZE_MAX;
        /* token byte ranges -> code point ranges; bytes the tokenizer dropped
         * (iv_tok) belong to no token and are stepped over */
        size_t byte = 0, cp = 0;
        for (size_t t = 0; t < nc; t++) {
            size_t len = 0;
            (void)dg_tokenizer_token_bytes(tk, ids.p[r->c0 + t], &len);
            while (byte < r->ctx_len && dg_tokenizer_byte_missing(tk, (unsigned char)r->ctx[byte]))
                byte++;
            size_t b0 = byte, b1 = byte + len;
            /* cp0: first code point starting at or after b0, or containing b0 */
            while (cp < ncp && r->cp_byte[cp + 1] <= b0) cp++;
            r->tok_cp0[t] = cp;
            size_t e = cp;
            while (e < ncp && r->cp_byte[e] < b1) {
                /* unset: the character's first byte was dropped (iv_tok) */
                if (r->cp_byte[e] >= b0 || r->cp_tok[e] == SIZE_MAX) r->cp_tok[e] = t;
                e++;
            }
            r->tok_cp1[t] = e;
            byte = b1;
        }
        while (byte < r->ctx_len && dg_tokenizer_byte_missing(tk, (unsigned char)r->ctx[byte]))
            byte++;
        if (byte != r->ctx_len) {
            st = dg_fail(DEG_ERR_INTERNAL, "fill: context tokens cover %zu bytes, the context "
                         "has %zu", byte, r->ctx_len);
            goto done;
        }
        r->cp_tok[ncp] = nc;
        /* a dropped character: the next token (as for a position between tokens) */
        for (size_t e = ncp, next = nc; e-- > 0;) {
            if (r->cp_tok[e] == SIZE_MAX) r->cp_tok[e] = next;
            else next = r->cp_tok[e];
        }
    }
    if ((st = deg_trunk_new(m, &r->trunk)) != DEG_OK) goto done;
    {
        size_t E = (size_t)m->hp.n_embd;
        float *hidden = malloc((ids.n ? ids.n : 1) * E * sizeof(float));
        if (!hidden) {
            st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory (context hidden states, %zu tokens)",
                         ids.n);
            goto done;
        }
        dg_row row = {.prefix = NULL, .own = &r->trunk->st, .ids = ids.p, .n = ids.n,
                      .hidden = hidden, .last_hidden = r->trunk->last_hidden};
        double t0 = now_s();
        dg_poll prev = dg_run_push(dg_limits_poll, &r->lim);
        st = dg_limits_check(&r->lim, "prefill");
        if (st == DEG_OK) st = dg_forward(m, &row, 1);
        dg_run_pop(prev);
        r->t_prefill += now_s() - t0;
        if (st == DEG_OK) {
            /* keep only the context rows */
            memmove(hidden, hidden + r->c0 * E, nc * E * sizeof(float));
            float *h = realloc(hidden, (nc ? nc : 1) * E * sizeof(float));
            r->ctx_hidden = h ? h : hidden;
        } else {
            free(hidden);
        }
    }
done:
    if (r->trace && st == DEG_OK) r->trunk_ids = ids.p; /* the trace reports them */
    else free(ids.p);
    return st;
}

/* ---- fork passes ---------------------------------------------------------- */

static size_t fork_token_bytes(const deg_model *m)
{
    return (size_t)m->hp.n_layer * 2 * (size_t)m->hp.n_head_kv * (size_t)m->hp.head_dim *
               sizeof(float) +
           2 * (size_t)m->hp.n_embd * sizeof(float) + 1024;
}

/* The head kind a job's fork row serves, for the adapter selector (§12.7). */
static int32_t job_head_kind(const freq *reqs, const job *j)
{
    if (j->kind == JOB_GEN) return -1; /* x-generate rows: the base model */
    if (j->kind == JOB_COUNT) return DEG_HEAD_COUNT;
    if (j->kind == JOB_ANCHOR) return DEG_HEAD_ANCHOR;
    const freq *r = &reqs[j->req];
    dg_mode mode = r->plan->fields[r->leaves[j->target].field].mode;
    return dg_mode_is_decide(mode) ? DEG_HEAD_CHOICE : DEG_HEAD_EXTRACT;
}

/* Run jobs [0, n) as rows of batches sized from the memory budget, each row
 * with the adapter its kind selects; keep the marked hidden rows. Jobs of
 * stopped requests (failed, cancelled, over a limit: stop_check) are
 * skipped; their h stays NULL. */
static deg_status run_jobs(const dg_ckpt *k, freq *reqs, job *J, size_t n)
{
    const deg_model *m = k->model;
    size_t E = (size_t)m->hp.n_embd;
    size_t per_tok = fork_token_bytes(m);
    deg_status st = DEG_OK;
    /* the round's fork tokens count against max_fork_tokens before it runs */
    for (size_t q = 0; q < n; q++) reqs[J[q].req].due += J[q].ids.n;
    for (size_t q = 0; q < n; q++) stop_check(&reqs[J[q].req], "the fork rounds");
    for (size_t q = 0; q < n; q++) reqs[J[q].req].due = 0;
    deg_fork **forks = calloc(n ? n : 1, sizeof *forks);
    const int32_t **ids = calloc(n ? n : 1, sizeof *ids);
    size_t *ns = calloc(n ? n : 1, sizeof *ns);
    size_t *sel = calloc(n ? n : 1, sizeof *sel);
    if (!forks || !ids || !ns || !sel) st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    size_t i = 0;
    while (i < n && st == DEG_OK) {
        size_t nb = 0, bytes = 0;
        for (; i < n && (nb == 0 || bytes + J[i].ids.n * per_tok <= k->fork_budget_bytes); i++) {
            if (stop_check(&reqs[J[i].req], "the fork rounds")) continue;
            bytes += J[i].ids.n * per_tok;
            sel[nb++] = i;
        }
        if (nb == 0) break;
        for (size_t q = 0; q < nb && st == DEG_OK; q++) {
            job *j = &J[sel[q]];
            st = deg_fork_new(reqs[j->req].trunk, &forks[q]);
            if (st == DEG_OK && k->lora)
                st = deg_fork_set_adapter(forks[q], k->lora,
                                          deg_ckpt_lora_adapter(k, job_head_kind(reqs, j)));
            ids[q] = j->ids.p;
            ns[q] = j->ids.n;
        }
        double t0 = now_s();
        batch_poll bp = {reqs, J, sel, nb, 0};
        dg_poll prev = dg_run_push(batch_poll_fn, &bp);
        if (st == DEG_OK) st = deg_forks_feed(forks, nb, ids, ns, NULL);
        dg_run_pop(prev);
        double dt = now_s() - t0;
        if (bp.stopped) {
            /* every request of the batch stopped: each fails with its reason */
            for (size_t q = 0; q < nb; q++) stop_check(&reqs[J[sel[q]].req], "the fork rounds");
            st = DEG_OK;
        }
        for (size_t q = 0; q < nb && st == DEG_OK && !bp.stopped; q++) {
            job *j = &J[sel[q]];
            reqs[j->req].t_forks += dt * (double)ns[q] / (double)(bytes / per_tok);
            reqs[j->req].fork_rows++;
            reqs[j->req].fork_tokens += ns[q];
            j->h = malloc(j->n_mark * E * sizeof(float));
            if (!j->h) st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            for (size_t t = 0; t < j->n_mark && st == DEG_OK; t++)
                st = deg_fork_hidden(forks[q], j->mark[t], 1, j->h + t * E);
        }
        for (size_t q = 0; q < nb; q++) {
            deg_fork_free(forks[q]);
            forks[q] = NULL;
        }
    }
    free(forks);
    free(ids);
    free(ns);
    free(sel);
    return st;
}

/* ---- decoding ------------------------------------------------------------- */

static void raw_digest(const dg_ckpt *k, json_t *meta, const float *a, size_t n, const float *b,
                       size_t nb)
{
    if (!k->debug_raw) return;
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, n * sizeof(float), (const uint8_t *)a);
    if (b) sha256_update(&c, nb * sizeof(float), (const uint8_t *)b);
    uint8_t d[32];
    sha256_digest(&c, 32, d);
    char h[65];
    for (int i = 0; i < 32; i++) sprintf(h + 2 * i, "%02x", d[i]);
    json_object_set_new(meta, "raw", json_string(h));
}

static json_t *probs_json(const double *p, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_real(p[i]));
    return a;
}

/* ---- single-line plain spans (deg.json "span_single_line") ----------------- */

/* Blank for the line rule: ASCII whitespace and C0 controls (dg_span_trim trims
 * these and Unicode spaces; the exact check after trimming uses nl_pre). */
static int blank_byte(unsigned char c)
{
    return c <= 0x20 || c == 0x7F;
}

static deg_status line_tables(freq *r)
{
    size_t n = r->n_cp;
    r->nl_pre = malloc((n + 1) * sizeof(size_t));
    r->nb_next = malloc((n + 1) * sizeof(size_t));
    r->nb_prev = malloc((n + 1) * sizeof(size_t));
    if (!r->nl_pre || !r->nb_next || !r->nb_prev)
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (line tables)");
    size_t nl = 0, last = 0;
    for (size_t c = 0; c < n; c++) {
        r->nl_pre[c] = nl;
        r->nb_prev[c] = last;
        unsigned char b = (unsigned char)r->ctx[r->cp_byte[c]];
        if (b == '\n') nl++;
        if (!blank_byte(b)) last = c + 1;
    }
    r->nl_pre[n] = nl;
    r->nb_prev[n] = last;
    size_t next = n;
    r->nb_next[n] = n;
    for (size_t c = n; c-- > 0;) {
        if (!blank_byte((unsigned char)r->ctx[r->cp_byte[c]])) next = c;
        r->nb_next[c] = next;
    }
    return DEG_OK;
}

/* Does token span [ti, tj] hold a line break between its first and last
 * non-blank code points? (Such a span is never a gold plain string in the
 * training data: 0 of 25,446 in datagen v1 + v2 train.) */
static int crosses_line(const freq *r, size_t ti, size_t tj)
{
    size_t s = r->nb_next[r->tok_cp0[ti]], e = r->nb_prev[r->tok_cp1[tj]];
    return s < e && r->nl_pre[e] != r->nl_pre[s];
}

/* ---- key prior (keyprior.h) ---------------------------------------------- */

/* Is the word [w, w + n) a whole-word, case-insensitive occurrence in [s, s + len)? */
static int has_word_ci(const char *s, size_t len, const char *w, size_t n)
{
    if (n == 0 || n > len) return 0;
    for (size_t i = 0; i + n <= len; i++) {
        if (strncasecmp(s + i, w, n) != 0) continue;
        int lb = i == 0 || !isalnum((unsigned char)s[i - 1]);
        int rb = i + n == len || !isalnum((unsigned char)s[i + n]);
        if (lb && rb) return 1;
    }
    return 0;
}

/* Bytes [*b, *e) of the value of line kv. */
static void kv_bytes(const freq *r, const dg_keyline *kv, size_t *b, size_t *e)
{
    *b = r->cp_byte[kv->val0];
    *e = r->cp_byte[kv->val1];
}

/* Choice: each option whose text is a whole word of a matching line's value
 * gets that line's bonus (the largest over lines). */
static void key_prior_choice(const dg_ckpt *k, const freq *r, const dg_field_plan *f, float *lg)
{
    if (!k->key_prior.on) return;
    float *best = calloc(f->n_options ? f->n_options : 1, sizeof *best);
    if (!best) return;  /* the prior is advisory: without memory the heads decide alone */
    /* lines outer, so the field/key match is computed once per line, not per option */
    for (size_t i = 0; i < r->kv.n; i++) {
        float bonus = (float)dg_key_bonus(&k->key_prior, f, &r->kv.p[i]);
        if (bonus <= 0) continue;
        size_t b, e;
        kv_bytes(r, &r->kv.p[i], &b, &e);
        for (size_t o = 0; o < f->n_options; o++) {
            json_t *v = json_array_get(f->options, o);
            char buf[32];
            const char *t = NULL;
            if (json_is_string(v)) t = json_string_value(v);
            else if (json_is_integer(v)) {
                snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                t = buf;
            }
            if (t && t[0] && bonus > best[o] && has_word_ci(r->ctx + b, e - b, t, strlen(t)))
                best[o] = bonus;
        }
    }
    for (size_t o = 0; o < f->n_options; o++) lg[o] += best[o];
    free(best);
}

/* noul: + the bonus of a matching line whose value starts with yes/true, - for no/false. */
static double key_prior_noul(const dg_ckpt *k, const freq *r, const dg_field_plan *f)
{
    static const char *const YES[] = {"yes", "true", "y"}, *const NO[] = {"no", "false", "n"};
    if (!k->key_prior.on) return 0.0;
    double out = 0;
    for (size_t i = 0; i < r->kv.n; i++) {
        double bonus = dg_key_bonus(&k->key_prior, f, &r->kv.p[i]);
        if (bonus <= fabs(out)) continue;
        size_t b, e;
        kv_bytes(r, &r->kv.p[i], &b, &e);
        size_t w = b;
        while (w < e && isalnum((unsigned char)r->ctx[w])) w++;
        for (int y = 0; y < 3; y++) {
            if (w - b == strlen(YES[y]) && strncasecmp(r->ctx + b, YES[y], w - b) == 0) out = bonus;
            if (w - b == strlen(NO[y]) && strncasecmp(r->ctx + b, NO[y], w - b) == 0) out = -bonus;
        }
    }
    return out;
}

/* Extract: per context token, the start (bs) and end (be) bonus: the value of a
 * matching line (plain strings), or each grammar candidate [s, e) inside it
 * (typed fields; spans = ns candidate pairs). Largest bonus per token. */
static void key_prior_extract(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                              const size_t *spans, size_t ns, int typed, float *bs, float *be)
{
    size_t nc = r->c1 - r->c0;
    memset(bs, 0, nc * sizeof *bs);
    memset(be, 0, nc * sizeof *be);
    if (!k->key_prior.on) return;
    for (size_t i = 0; i < r->kv.n; i++) {
        const dg_keyline *kv = &r->kv.p[i];
        float bonus = (float)dg_key_bonus(&k->key_prior, f, kv);
        if (bonus <= 0) continue;
        if (!typed) {
            size_t ts = r->cp_tok[kv->val0], te = r->cp_tok[kv->val1 - 1];
            if (bs[ts] < bonus) bs[ts] = bonus;
            if (be[te] < bonus) be[te] = bonus;
            continue;
        }
        for (size_t c = 0; c < ns; c++) {
            size_t s = spans[2 * c], e = spans[2 * c + 1];
            if (e <= s || s < kv->val0 || e > kv->val1) continue;
            size_t ts = r->cp_tok[s], te = r->cp_tok[e - 1];
            if (bs[ts] < bonus) bs[ts] = bonus;
            if (be[te] < bonus) be[te] = bonus;
        }
    }
}

static deg_status decode_decide(const dg_ckpt *k, freq *r, job *j)
{
    leaf *L = &r->leaves[j->target];
    const dg_field_plan *f = &r->plan->fields[L->field];
    const float *a = j->h + (j->n_mark - 1) * (size_t)k->h.E;
    if (f->mode == DG_MODE_NOUL) {
        float l = dg_head_dot(k->h.noul_w, a, k->h.E) + k->h.noul_b[0];
        l += (float)key_prior_noul(k, r, f);
        float lg[2] = {l, 0.0f};
        double p[2];
        dg_softmax(lg, 2, k->temp[DG_T_NOUL], p, NULL);
        L->value = json_boolean(p[0] >= 0.5);
        L->meta = json_pack("{s:s, s:f}", "mode", "decide.noul", "probability", p[0]);
        raw_digest(k, L->meta, lg, 1, NULL, 0);
        return DEG_OK;
    }
    int score = f->mode == DG_MODE_SCORE;
    size_t n = score ? f->n_levels + (f->null_outcome ? 1 : 0) : f->n_options;
    float *lg = malloc(n * sizeof(float));
    double *p = malloc(n * sizeof(double));
    if (!lg || !p) {
        free(lg);
        free(p);
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    }
    dg_head_pointer(&k->h, score, a, j->h, n, lg);
    if (!score) key_prior_choice(k, r, f, lg);
    dg_softmax(lg, n, k->temp[score ? DG_T_SCORE : DG_T_CHOICE], p, NULL);
    size_t b = dg_argmax_d(p, n);
    L->meta = json_pack("{s:s, s:f, s:f, s:o}", "mode", dg_mode_name(f->mode), "probability",
                        p[b], "confidence", dg_confidence(p[b], n), "probabilities",
                        probs_json(p, n));
    if (score) {
        double z = 0, e = 0;
        for (size_t i = 0; i < f->n_levels; i++) {
            z += p[i];
            e += p[i] * (double)f->levels[i];
        }
        json_object_set_new(L->meta, "expected", z > 0 ? json_real(e / z) : json_null());
        L->value = b < f->n_levels ? json_integer((json_int_t)f->levels[b]) : json_null();
    } else {
        L->value = json_deep_copy(json_array_get(f->options, b));
    }
    raw_digest(k, L->meta, lg, n, NULL, 0);
    free(lg);
    free(p);
    return DEG_OK;
}

/* Anchor token and region end of the innermost anchored item enclosing item
 * `item` of instance `in` (the anchored-extract bias, §12.3); 0 if none. */
static int innermost_anchor(const freq *r, int in, size_t item, size_t *anchor, size_t *rend)
{
    while (in >= 0) {
        const inst *I = &r->insts[in];
        if (I->anchored) {
            *anchor = I->anchor[item];
            *rend = item_end(I, item);
            return 1;
        }
        item = I->parent_item;
        in = I->parent;
    }
    return 0;
}

/* Anchor fork: the anchor head's logits over the instance's region. */
static deg_status decode_anchor(const dg_ckpt *k, freq *r, job *j)
{
    inst *I = &r->insts[j->target];
    const float *a = j->h + (j->n_mark - 1) * (size_t)k->h.E;
    size_t n = I->r1 - I->r0;
    I->alog = malloc((n ? n : 1) * sizeof(float));
    if (!I->alog) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (anchor logits)");
    return dg_anchor_logits(&k->h, a, r->ctx_hidden, I->r0, I->r1, I->alog);
}

/* An anchored array's item cap: maxItems, else options.max_items, else -1 (none). */
static int64_t anchor_cap(const freq *r, const dg_array_plan *a)
{
    return a->max_items >= 0 ? a->max_items : r->opt.max_items >= 0 ? r->opt.max_items : -1;
}

/* Count fork of an anchored array (count_peaks / hybrid): logits kept. */
static void decode_anchor_count(const dg_ckpt *k, freq *r, job *j)
{
    inst *I = &r->insts[j->target];
    const float *h = j->h + (j->n_mark - 1) * (size_t)k->h.E;
    for (int c = 0; c <= DG_COUNT_MAX; c++)
        I->clog[c] = dg_head_dot(k->h.count_w + (size_t)c * k->h.E, h, k->h.E) + k->h.count_b[c];
    I->has_clog = 1;
}

/* Items of an anchored instance from its anchor (and count) logits (§12.6). */
static deg_status resolve_anchors(const dg_ckpt *k, freq *r, int in)
{
    inst *I = &r->insts[in];
    const dg_array_plan *a = &r->plan->arrays[I->array];
    size_t n = I->r1 - I->r0;
    int64_t cap = anchor_cap(r, a);
    int mode = r->opt.array_decode;
    int64_t count = -1;
    if (mode != DEG_ARRAY_DECODE_THRESHOLD) {
        if (!I->has_clog) return dg_fail(DEG_ERR_INTERNAL, "fill: anchored array without count");
        count = dg_anchor_count_n(I->clog, k->temp[DG_T_COUNT], a->min_items, cap,
                                  dg_anchor_runs(I->alog, n));
    }
    I->anchor = malloc((n ? n : 1) * sizeof(size_t));
    if (!I->anchor) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (anchors)");
    size_t got = 0;
    DG_TRY(dg_anchor_pick(I->alog, n, mode, a->min_items, cap, count, I->anchor, &got));
    for (size_t i = 0; i < got; i++) I->anchor[i] += I->r0;
    if (k->debug_raw) {
        I->raw = json_object();
        raw_digest(k, I->raw, I->alog, n, I->has_clog ? I->clog : NULL,
                   I->has_clog ? DG_COUNT_MAX + 1 : 0);
    }
    I->n_items = (int64_t)got;
    I->alive = malloc(got ? got : 1);
    I->newidx = calloc(got ? got : 1, sizeof(size_t));
    if (!I->alive || !I->newidx) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    memset(I->alive, 1, got);
    free(I->alog);
    I->alog = NULL;
    if ((int64_t)got < a->min_items && I->parent < 0) {
        /* A nested array short of positions leaves n_alive < minItems, and
         * the drop rule removes its enclosing item (apply_drops). */
        return dg_fail(DEG_ERR_FILL, "%s: minItems %lld: the anchor head finds only %zu item "
                       "positions in the context (%zu tokens)", a->pointer,
                       (long long)a->min_items, got, n);
    }
    return DEG_OK;
}

/* Schema of a leaf's own constraints (+ format) for the candidate filter. */
static json_t *leaf_schema(const dg_field_plan *f)
{
    json_t *s = json_deep_copy(f->constraints.json);
    if (f->format != DG_FORMAT_NONE)
        json_object_set_new(s, "format", json_string(dg_format_name(f->format)));
    return s;
}

typedef struct cand {
    size_t s, e;   /* code points */
    double lp;
    size_t ord;
} cand;

static int cmp_cand(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    if (a->lp > b->lp) return -1;
    if (a->lp < b->lp) return 1;
    return a->ord < b->ord ? -1 : a->ord > b->ord;
}

/* Value of the span [s, e) for leaf f, or NULL with *reason set. */
static json_t *span_value(const freq *r, const dg_field_plan *f, const json_t *schema, size_t s,
                          size_t e, const char **reason, int *assumed)
{
    const char *txt = r->ctx + r->cp_byte[s];
    size_t len = r->cp_byte[e] - r->cp_byte[s];
    json_t *v = NULL;
    *assumed = 0;
    if (f->mode == DG_MODE_NUMBER) {
        char buf[128];
        if (len + 8 > sizeof buf) {
            *reason = "unparsable";
            return NULL;
        }
        if (dg_parse_number(txt, len, f->type == DG_TYPE_INTEGER, buf, sizeof buf) != DEG_OK) {
            dg_clear_error();
            *reason = "unparsable";
            return NULL;
        }
        v = json_loads(buf, JSON_DECODE_ANY, NULL);
    } else if (f->mode == DG_MODE_DATE) {
        if (f->format == DG_FORMAT_DATE_TIME) {
            size_t cap = len + 64;
            char *buf = malloc(cap);
            char off[32];
            const char *o = "Z";
            if (!r->opt.default_offset_is_z) {
                int mnt = r->opt.default_offset_minutes;
                snprintf(off, sizeof off, "%c%02d:%02d", mnt < 0 ? '-' : '+', abs(mnt) / 60,
                         abs(mnt) % 60);
                o = off;
            }
            if (buf && dg_parse_datetime(txt, len, (deg_date_order)r->opt.date_order, o, buf, cap,
                                         assumed) == DEG_OK)
                v = json_string(buf);
            else
                dg_clear_error();
            free(buf);
        } else {
            char buf[11];
            if (dg_parse_date(txt, len, (deg_date_order)r->opt.date_order, buf) == DEG_OK)
                v = json_string(buf);
            else
                dg_clear_error();
        }
        if (!v) {
            *reason = "unparsable";
            return NULL;
        }
    } else {
        v = json_stringn(txt, len);
    }
    if (!v) {
        *reason = "unparsable";
        return NULL;
    }
    json_t *errs = json_array();
    size_t ne = 0;
    if (dg_validate(schema, v, errs, &ne) != DEG_OK) {
        dg_clear_error();
        ne = 1;
    }
    if (ne) {
        const char *kw = json_string_value(json_object_get(json_array_get(errs, 0), "keyword"));
        static const char *const KW[] = {"minLength", "maxLength", "pattern", "format",
                                         "minimum", "maximum", "exclusiveMinimum",
                                         "exclusiveMaximum", "multipleOf"};
        *reason = "unparsable";
        for (size_t i = 0; kw && i < sizeof KW / sizeof KW[0]; i++)
            if (strcmp(kw, KW[i]) == 0) *reason = KW[i];
        json_decref(v);
        v = NULL;
    }
    json_decref(errs);
    return v;
}

static const char *cand_kind(const dg_field_plan *f)
{
    if (f->mode == DG_MODE_NUMBER) return f->type == DG_TYPE_INTEGER ? "integer" : "number";
    if (f->mode == DG_MODE_DATE) return f->format == DG_FORMAT_DATE_TIME ? "date-time" : "date";
    if (f->format == DG_FORMAT_EMAIL) return "email";
    if (f->format == DG_FORMAT_URI) return "uri";
    if (f->format == DG_FORMAT_UUID) return "uuid";
    return NULL;
}

/* Log-softmax over the context tokens + null of logits t[0..nc) and null. */
static void log_softmax_ctx(float *lg, size_t n, double T, double *lp)
{
    double mx = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if ((double)lg[i] / T > mx) mx = (double)lg[i] / T;
    double z = 0;
    for (size_t i = 0; i < n; i++) z += exp((double)lg[i] / T - mx);
    double lz = log(z) + mx;
    for (size_t i = 0; i < n; i++) lp[i] = (double)lg[i] / T - lz;
}

static deg_status decode_extract(const dg_ckpt *k, freq *r, job *j)
{
    leaf *L = &r->leaves[j->target];
    const dg_field_plan *f = &r->plan->fields[L->field];
    const int E = k->h.E;
    const float *a = j->h + (j->n_mark - 1) * (size_t)E;
    size_t nc = r->c1 - r->c0;
    deg_status st = DEG_OK;
    float q[DG_HEAD_DIM];
    float *rs = malloc(2 * (size_t)E * sizeof(float));
    float *lg = malloc(2 * (nc + 1) * sizeof(float));
    double *lp = malloc(2 * (nc + 1) * sizeof(double));
    float *kb = malloc(2 * (nc + 1) * sizeof(float));
    cand *cs = NULL;
    size_t *spans = NULL, ns = 0;
    json_t *schema = leaf_schema(f);
    size_t anc = 0, rend = 0;
    int anchored = innermost_anchor(r, L->inst, L->item, &anc, &rend);
    if (!rs || !lg || !lp || !kb || !schema) {
        st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
        goto done;
    }
    const char *kind = cand_kind(f);
    if (kind && (st = dg_candidates(kind, r->ctx, r->ctx_len, &spans, &ns)) != DEG_OK) goto done;
    key_prior_extract(k, r, f, spans, ns, kind != NULL, kb, kb + nc + 1);
    for (int w = 0; w < 2; w++) {
        float *l = lg + (size_t)w * (nc + 1);
        dg_head_extract_logits(&k->h, w, a, r->ctx_hidden, nc, rs + (size_t)w * E, q, l);
        if (anchored) dg_anchor_bias_add(&k->h, w, anc, rend, l, nc);
        if (k->key_prior.on)
            for (size_t t = 0; t < nc; t++) l[t] += kb[(size_t)w * (nc + 1) + t];
        log_softmax_ctx(l, nc + 1, k->temp[DG_T_EXTRACT], lp + (size_t)w * (nc + 1));
    }
    const double *lps = lp, *lpe = lp + nc + 1;
    double null_lp = lps[nc] + lpe[nc];
    size_t n_c = 0;
    if (kind) {
        cs = malloc((ns ? ns : 1) * sizeof *cs);
        if (!cs) {
            st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            goto done;
        }
        for (size_t i = 0; i < ns; i++) {
            size_t s = spans[2 * i], e = spans[2 * i + 1];
            if (e <= s || e > r->n_cp) continue;
            size_t ti = r->cp_tok[s], tj = r->cp_tok[e - 1];
            cs[n_c++] = (cand){s, e, lps[ti] + lpe[tj], i};
        }
    } else {
        /* top DG_SPAN_TOP token spans i <= j < i + 128 (min-heap by score) */
        cs = malloc(DG_SPAN_TOP * sizeof *cs);
        if (!cs) {
            st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            goto done;
        }
        for (size_t ti = 0; ti < nc; ti++) {
            size_t lim = ti + DG_SPAN_MAX_TOKENS < nc ? ti + DG_SPAN_MAX_TOKENS : nc;
            for (size_t tj = ti; tj < lim; tj++) {
                if (k->span_single_line && crosses_line(r, ti, tj)) break;
                double s = lps[ti] + lpe[tj];
                cand c = {ti, tj, s, ti * DG_SPAN_MAX_TOKENS + (tj - ti)};
                if (n_c < DG_SPAN_TOP) {
                    size_t x = n_c++;
                    cs[x] = c;
                    while (x > 0 && cmp_cand(&cs[(x - 1) / 2], &cs[x]) < 0) {
                        cand t = cs[x];
                        cs[x] = cs[(x - 1) / 2];
                        cs[(x - 1) / 2] = t;
                        x = (x - 1) / 2;
                    }
                } else if (cmp_cand(&c, &cs[0]) < 0) {
                    /* cs[0] is the worst kept (heap ordered by cmp: worst at root) */
                    cs[0] = c;
                    size_t x = 0;
                    for (;;) {
                        size_t l = 2 * x + 1, rr = l + 1, w = x;
                        if (l < n_c && cmp_cand(&cs[l], &cs[w]) > 0) w = l;
                        if (rr < n_c && cmp_cand(&cs[rr], &cs[w]) > 0) w = rr;
                        if (w == x) break;
                        cand t = cs[x];
                        cs[x] = cs[w];
                        cs[w] = t;
                        x = w;
                    }
                }
            }
        }
    }
    qsort(cs, n_c, sizeof *cs, cmp_cand);
    json_t *best = NULL;
    size_t bs = 0, be = 0;
    double blp = -INFINITY;
    int assumed = 0;
    const char *first_reason = NULL;
    for (size_t i = 0; i < n_c && !best; i++) {
        size_t s = cs[i].s, e = cs[i].e;
        if (!kind) {
            /* token span -> code points, trimmed */
            size_t s0 = r->tok_cp0[s], e0 = r->tok_cp1[e];
            if (e0 <= s0) continue;
            if (dg_span_trim(r->ctx, r->ctx_len, s0, e0, &s, &e) != DEG_OK) {
                dg_clear_error();
                continue;
            }
            if (e <= s) continue;
            if (k->span_single_line && r->nl_pre[e] != r->nl_pre[s]) continue;
        }
        const char *reason = NULL;
        int as = 0;
        json_t *v = span_value(r, f, schema, s, e, &reason, &as);
        if (v) {
            best = v;
            bs = s;
            be = e;
            blp = cs[i].lp;
            assumed = as;
        } else if (!first_reason) {
            first_reason = reason;
        }
    }
    double margin = r->opt.has_null_margin ? r->opt.null_margin : k->null_margin;
    int take_null = 0;
    const char *reason = NULL;
    if (f->on_null == DG_ON_NULL_FORBID) {
        if (!best) {
            L->failed = 1;
            char *ptr = dg_path_pointer(&f->path, L->idx, L->n_idx);
            if (asprintf(&L->fail_msg, "%s is required and not nullable, but no valid value "
                         "was found in the context (%zu candidate spans, %s)", ptr ? ptr : "?",
                         n_c, first_reason ? first_reason : "not_found") < 0)
                L->fail_msg = NULL;
            free(ptr);
        }
    } else if (!best) {
        take_null = 1;
        reason = first_reason ? first_reason : "not_found";
    } else if (blp < null_lp + margin) {
        take_null = 1;
        reason = "not_found";
    }
    L->meta = json_pack("{s:s}", "mode", dg_mode_name(f->mode));
    if (best && !take_null) {
        L->value = best;
        best = NULL;
        json_object_set_new(L->meta, "confidence", json_real(exp(blp)));
        json_object_set_new(L->meta, "span", json_pack("[I,I]", (json_int_t)bs, (json_int_t)be));
        if (assumed) json_object_set_new(L->meta, "assumed_offset", json_true());
    } else {
        json_object_set_new(L->meta, "confidence", json_real(exp(null_lp)));
        json_object_set_new(L->meta, "span", json_null());
        if (reason) json_object_set_new(L->meta, "null_reason", json_string(reason));
        if (take_null && f->on_null == DG_ON_NULL_NULL) L->value = json_null();
    }
    raw_digest(k, L->meta, lg, 2 * (nc + 1), NULL, 0);
    json_decref(best);
done:
    json_decref(schema);
    free(spans);
    free(cs);
    free(rs);
    free(lg);
    free(lp);
    free(kb);
    return st;
}

/* Classes [*lo, *hi] of the count head for instance I (§12.3 count). */
static deg_status count_range(const freq *r, const inst *I, int64_t *lo, int64_t *hi)
{
    const dg_array_plan *a = &r->plan->arrays[I->array];
    int64_t cap = a->max_items >= 0 ? a->max_items
                  : r->opt.max_items >= 0 ? r->opt.max_items : DG_COUNT_DEFAULT_CAP;
    if (cap > DG_COUNT_MAX) cap = DG_COUNT_MAX;
    *lo = a->min_items;
    if (*lo > DG_COUNT_MAX) {
        char *p = dg_path_pointer(&a->path, I->idx, I->n_idx);
        deg_status st = dg_fail(DEG_ERR_FILL, "%s: minItems %lld is beyond the count head's "
                                "range 0..%d", p ? p : "?", (long long)*lo, DG_COUNT_MAX);
        free(p);
        return st;
    }
    *hi = cap < *lo ? *lo : cap;
    return DEG_OK;
}

static deg_status set_count(inst *I, int64_t n)
{
    I->n_items = n;
    I->alive = malloc((size_t)(I->n_items ? I->n_items : 1));
    I->newidx = calloc((size_t)(I->n_items ? I->n_items : 1), sizeof(size_t));
    if (!I->alive || !I->newidx) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    memset(I->alive, 1, (size_t)I->n_items);
    return DEG_OK;
}

static deg_status decode_count(const dg_ckpt *k, freq *r, job *j)
{
    inst *I = &r->insts[j->target];
    const float *h = j->h + (j->n_mark - 1) * (size_t)k->h.E;
    int64_t lo = 0, cap = 0;
    DG_TRY(count_range(r, I, &lo, &cap));
    float lg[DG_COUNT_MAX + 1];
    double p[DG_COUNT_MAX + 1];
    for (int c = 0; c <= DG_COUNT_MAX; c++)
        lg[c] = dg_head_dot(k->h.count_w + (size_t)c * k->h.E, h, k->h.E) + k->h.count_b[c];
    size_t n = (size_t)(cap - lo + 1);
    dg_softmax(lg + lo, n, k->temp[DG_T_COUNT], p, NULL);
    size_t b = dg_argmax_d(p, n);
    return set_count(I, lo + (int64_t)b);
}

/* ---- drops (§12.6) -------------------------------------------------------- */

static void apply_drops(freq *r)
{
    /* children were created after their parents: reverse order decides the
     * children's fate before the parents'. */
    for (size_t ii = r->n_insts; ii-- > 0;) {
        inst *I = &r->insts[ii];
        for (size_t li = 0; li < r->n_leaves; li++) {
            const leaf *L = &r->leaves[li];
            if (L->inst == (int)ii && L->failed) I->alive[L->item] = 0;
        }
        for (size_t ci = ii + 1; ci < r->n_insts; ci++) {
            const inst *C = &r->insts[ci];
            if (C->parent == (int)ii && C->n_alive < r->plan->arrays[C->array].min_items)
                I->alive[C->parent_item] = 0;
        }
        I->n_alive = 0;
        for (int64_t t = 0; t < I->n_items; t++)
            if (I->alive[t]) I->newidx[t] = (size_t)I->n_alive++;
    }
}

/* 1 if every enclosing item of instance `in` (and item `item` of it) survived. */
static int reachable(const freq *r, int in, size_t item)
{
    while (in >= 0) {
        if (!r->insts[in].alive[item]) return 0;
        item = r->insts[in].parent_item;
        in = r->insts[in].parent;
    }
    return 1;
}

/* New (renumbered) indices of the chain ending at item `item` of `in`. */
static size_t new_chain(const freq *r, int in, size_t item, size_t *out)
{
    size_t n = 0;
    size_t tmp[64];
    while (in >= 0 && n < 64) {
        tmp[n++] = r->insts[in].newidx[item];
        item = r->insts[in].parent_item;
        in = r->insts[in].parent;
    }
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

/* ---- known values and generate -------------------------------------------- */

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

static char *leaf_pointer(const freq *r, const leaf *L)
{
    size_t idx[64];
    size_t n = new_chain(r, L->inst, L->item, idx);
    return dg_path_pointer(&r->plan->fields[L->field].path, idx, n);
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
        if (L->inst >= 0 && !reachable(r, L->inst, L->item)) continue;
        leaf_key(r, li, &keys[n++]);
    }
    qsort(keys, n, sizeof *keys, cmp_key);
    dg_strbuf b = {0};
    dg_sb_puts(&b, "KNOWN VALUES:\n");
    for (size_t i = 0; i < n; i++) {
        const leaf *L = &r->leaves[keys[i].leaf];
        char *p = leaf_pointer(r, L);
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
    deg_status st = iv_tok(&ids, k->model, b.p, b.len, 0);
    free(b.p);
    double t0 = now_s();
    if (st == DEG_OK) st = deg_trunk_prefill(r->trunk, ids.p, ids.n, NULL, NULL);
    r->t_generate += now_s() - t0;
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

static deg_status build_gen_job(job *j, const dg_ckpt *k, const freq *r, const leaf *L)
{
    const deg_model *m = k->model;
    const dg_field_plan *f = &r->plan->fields[L->field];
    char *ptr = leaf_pointer(r, L);
    if (!ptr) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    deg_status st = put_linef(j, m, "WRITE %s", ptr);
    free(ptr);
    DG_TRY(st);
    const char *title = f->title, *desc = f->description;
    if (f->array >= 0 && r->plan->arrays[f->array].generate) {
        const dg_array_plan *a = &r->plan->arrays[f->array];
        if (!title) title = a->title;
        if (!desc) desc = a->description;
    }
    DG_TRY(put_annotations(j, m, title, desc));
    dg_strbuf b = {0};
    dg_sb_puts(&b, "LIMITS:");
    if (f->constraints.min_length >= 0)
        dg_sb_printf(&b, " minLength %lld;", (long long)f->constraints.min_length);
    if (f->constraints.max_length >= 0)
        dg_sb_printf(&b, " maxLength %lld;", (long long)f->constraints.max_length);
    if (f->constraints.pattern) dg_sb_printf(&b, " pattern %s;", f->constraints.pattern);
    st = b.oom ? dg_fail(DEG_ERR_NOMEM, "fill: out of memory") : put_line(j, m, b.p);
    free(b.p);
    DG_TRY(st);
    DG_TRY(iv_tok(&j->ids, m, "VALUE:", 6, 0));
    if (fill_layout(k) == DG_CHAT_NONE) return iv_tok(&j->ids, m, " ", 1, 0);
    char *open, *close;
    DG_TRY(dg_chat_user_turn(fill_layout(k), &open, &close));
    st = iv_tok(&j->ids, m, close, strlen(close), 1);
    free(open);
    free(close);
    return st;
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

/* Generate phase for every request (§7.3): KNOWN VALUES on each trunk, then
 * all x-generate leaves of all requests decode together. */
static deg_status generate_phase(const dg_ckpt *k, freq *reqs, size_t n_req)
{
    const deg_model *m = k->model;
    jobs J = {0};
    gen_row *rows = NULL;
    size_t n_rows = 0;
    deg_status st = DEG_OK;
    /* 1. leaves */
    for (size_t ri = 0; ri < n_req; ri++) {
        freq *r = &reqs[ri];
        if (r->st != DEG_OK) continue;
        int any = 0;
        const dg_plan *P = r->plan;
        for (size_t fi = 0; fi < P->n_fields && r->st == DEG_OK; fi++) {
            const dg_field_plan *f = &P->fields[fi];
            if (f->mode != DG_MODE_GENERATE) continue;
            for (size_t ii = 0; f->array >= 0 && ii < r->n_insts; ii++) {
                inst *I = &r->insts[ii];
                if (I->array != f->array) continue;
                for (int64_t t = 0; t < I->n_items; t++) {
                    if (!reachable(r, (int)ii, (size_t)t)) continue;
                    if (add_leaf(r, fi, (int)ii, (size_t)t) < 0)
                        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
                    any = 1;
                }
            }
            if (f->array < 0) {
                if (add_leaf(r, fi, -1, 0) < 0) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
                any = 1;
            }
        }
        if (!any || stop_check(r, "the generate phase")) continue;
        dg_poll prev = dg_run_push(dg_limits_poll, &r->lim);
        st = known_values(k, r);
        dg_run_pop(prev);
        if (st != DEG_OK) {
            set_fail(r, st, "");
            st = DEG_OK;
            continue;
        }
        for (size_t li = 0; li < r->n_leaves; li++) {
            if (P->fields[r->leaves[li].field].mode != DG_MODE_GENERATE) continue;
            job *j = jobs_add(&J, JOB_GEN, ri, li);
            if (!j) {
                st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
                goto done;
            }
            if ((st = build_gen_job(j, k, r, &r->leaves[li])) != DEG_OK) goto done;
        }
    }
    if (J.n == 0) goto done;
    rows = calloc(J.n, sizeof *rows);
    if (!rows) {
        st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
        goto done;
    }
    for (size_t q = 0; q < J.n; q++) {
        job *j = &J.p[q];
        freq *r = &reqs[j->req];
        leaf *L = &r->leaves[j->target];
        const dg_field_plan *f = &r->plan->fields[L->field];
        gen_row *g = &rows[n_rows++];
        g->req = j->req;
        g->leaf = j->target;
        g->budget = f->max_tokens > 0 ? f->max_tokens : r->opt.max_new_tokens;
        g->temp = r->opt.temperature;
        char *ptr = leaf_pointer(r, L);
        uint64_t sm = r->opt.seed ^ dg_fnv1a64(ptr ? ptr : "");
        free(ptr);
        dg_rng_seed(&g->rng, dg_splitmix64(&sm));
        size_t maxlen = f->constraints.max_length >= 0 ? (size_t)f->constraints.max_length : SIZE_MAX;
        size_t minlen = f->constraints.min_length >= 0 ? (size_t)f->constraints.min_length : 0;
        if ((st = deg_acceptor_new(f->constraints.pattern, minlen, maxlen, &g->acc)) != DEG_OK)
            goto done;
        if ((st = deg_fork_new(r->trunk, &g->fork)) != DEG_OK) goto done;
    }
    {
        double t0 = now_s();
        deg_fork **forks = calloc(n_rows, sizeof *forks);
        const int32_t **ids = calloc(n_rows, sizeof *ids);
        size_t *ns = calloc(n_rows, sizeof *ns);
        float *logits = malloc((size_t)m->hp.n_vocab * sizeof(float));
        tc *buf = malloc(DG_GEN_TOP * sizeof *buf);
        int32_t *next = calloc(n_rows, sizeof *next);
        if (!forks || !ids || !ns || !logits || !buf || !next)
            st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
        size_t *sel = calloc(n_rows, sizeof *sel);
        if (!sel) st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
        for (size_t q = 0; q < n_rows && st == DEG_OK; q++) reqs[rows[q].req].due += J.p[q].ids.n;
        for (size_t q = 0; q < n_rows && st == DEG_OK; q++) {
            freq *r = &reqs[rows[q].req];
            forks[q] = rows[q].fork;
            ids[q] = J.p[q].ids.p;
            ns[q] = stop_check(r, "the generate phase") ? 0 : J.p[q].ids.n;
            r->gen_fed += ns[q];
            sel[q] = q;
        }
        for (size_t q = 0; q < n_rows && st == DEG_OK; q++) reqs[rows[q].req].due = 0;
        batch_poll bp = {reqs, J.p, sel, n_rows, 0};
        dg_poll prev = dg_run_push(batch_poll_fn, &bp);
        if (st == DEG_OK) st = deg_forks_feed(forks, n_rows, ids, ns, NULL);
        if (bp.stopped) st = DEG_OK; /* each row's request fails below (stop_check) */
        for (;;) {
            if (st != DEG_OK) break;
            size_t n_active = 0;
            for (size_t q = 0; q < n_rows; q++) {
                gen_row *g = &rows[q];
                freq *r = &reqs[g->req];
                ns[q] = 0;
                if (g->done) continue;
                r->due = 1;
                int stopped = stop_check(r, "the generate phase");
                r->due = 0;
                if (stopped) continue;
                leaf *L = &r->leaves[g->leaf];
                if (g->n_tok >= g->budget) {
                    /* budget spent without a stop token: valid only if complete */
                    g->done = 1;
                    if (!end_in_char(g)) {
                        char *ptr = leaf_pointer(r, L);
                        dg_fail(DEG_ERR_FILL, "x-generate %s: the budget of %d tokens ended "
                                "before minLength/maxLength/pattern were met (text so far: "
                                "\"%.80s\")", ptr ? ptr : "?", (int)g->budget,
                                g->text.p ? g->text.p : "");
                        free(ptr);
                        set_fail(r, DEG_ERR_FILL, "");
                    }
                    continue;
                }
                if ((st = deg_fork_logits(g->fork, logits)) != DEG_OK) break;
                int32_t id = pick(k, g, logits, buf);
                if (id == -3) {
                    st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
                    break;
                }
                if (id == -2) {
                    g->done = 1;
                    char *ptr = leaf_pointer(r, L);
                    dg_fail(DEG_ERR_FILL, "x-generate %s: no admissible token among the top %d "
                            "after \"%.80s\" (minLength/maxLength/pattern cannot be met)",
                            ptr ? ptr : "?", DG_GEN_TOP, g->text.p ? g->text.p : "");
                    free(ptr);
                    set_fail(r, DEG_ERR_FILL, "");
                    continue;
                }
                g->n_tok++;
                if (id == -4 || is_stop(k, id)) {
                    g->done = 1;
                    continue;
                }
                size_t len = 0;
                const char *bytes = dg_tokenizer_token_bytes(dg_model_tokenizer(m), id, &len);
                dg_sb_put(&g->text, bytes, len);
                if (g->text.oom || (k->debug_raw && iv_push(&g->ids, id) != DEG_OK)) {
                    st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
                    break;
                }
                next[q] = id;
                ids[q] = &next[q];
                ns[q] = 1;
                r->gen_fed++;
                n_active++;
            }
            if (st != DEG_OK || n_active == 0) break;
            st = deg_forks_feed(forks, n_rows, ids, ns, NULL);
            if (bp.stopped) st = DEG_OK;
        }
        dg_run_pop(prev);
        free(sel);
        double dt = now_s() - t0;
        for (size_t q = 0; q < n_rows; q++) {
            gen_row *g = &rows[q];
            freq *r = &reqs[g->req];
            r->t_generate += dt / (double)n_rows;
            if (st != DEG_OK || r->st != DEG_OK) continue;
            leaf *L = &r->leaves[g->leaf];
            L->value = json_stringn(g->text.p ? g->text.p : "", g->text.len);
            if (!L->value) { /* cannot happen: the acceptor admits valid UTF-8 only */
                char *ptr = leaf_pointer(r, L);
                dg_fail(DEG_ERR_FILL, "x-generate %s: generated text is not valid UTF-8",
                        ptr ? ptr : "?");
                free(ptr);
                set_fail(r, DEG_ERR_FILL, "");
                continue;
            }
            L->meta = json_pack("{s:s, s:i}", "mode", "generate", "generated_tokens",
                                (int)g->n_tok);
            if (L->meta && k->debug_raw) {
                json_t *a = json_array();
                for (size_t t = 0; t < g->ids.n; t++)
                    json_array_append_new(a, json_integer(g->ids.p[t]));
                json_object_set_new(L->meta, "token_ids", a);
                json_object_set_new(L->meta, "dropped_bytes", json_integer((json_int_t)g->dropped));
            }
            r->generated_tokens += (size_t)g->n_tok;
        }
        free(forks);
        free(ids);
        free(ns);
        free(logits);
        free(buf);
        free(next);
    }
done:
    for (size_t q = 0; q < n_rows; q++) {
        deg_fork_free(rows[q].fork);
        deg_acceptor_free(rows[q].acc);
        free(rows[q].text.p);
        free(rows[q].ids.p);
    }
    free(rows);
    jobs_free(&J);
    return st;
}

/* ---- assembly ------------------------------------------------------------- */

/* §12.1: there is no context cap, so a trunk longer than the backbone's
 * trained positions (n_ctx_train) is read whole, with RoPE positions beyond
 * the trained range (no truncation; the spec is silent on a warning). The
 * response says so under the root pointer "" of meta:
 * {"mode": "document", "warnings": ["..."]}. */
static void context_warning(const dg_ckpt *k, const freq *r, json_t *out)
{
    int32_t nt = k->model->hp.n_ctx_train;
    size_t n = deg_trunk_len(r->trunk);
    if (nt <= 0 || n <= (size_t)nt) return;
    char msg[256];
    snprintf(msg, sizeof msg, "context: %zu prompt tokens exceed the backbone's %d trained "
             "positions; read whole (no truncation), positions beyond %d are untrained", n,
             (int)nt, (int)nt);
    json_t *meta = json_object_get(out, "meta");
    if (meta)
        json_object_set_new(meta, "", json_pack("{s:s, s:[s]}", "mode", "document", "warnings",
                                                msg));
}

static deg_status assemble(const dg_ckpt *k, freq *r, json_t **response)
{
    json_t *fields = json_object(), *arrays = json_object();
    for (size_t li = 0; li < r->n_leaves; li++) {
        const leaf *L = &r->leaves[li];
        if (L->inst >= 0 && !reachable(r, L->inst, L->item)) continue;
        if (!L->meta) continue;
        char *p = leaf_pointer(r, L);
        json_t *e = json_object();
        if (L->value) json_object_set(e, "value", L->value);
        json_object_set(e, "meta", L->meta);
        json_object_set_new(fields, p, e);
        free(p);
    }
    for (size_t ii = 0; ii < r->n_insts; ii++) {
        const inst *I = &r->insts[ii];
        if (I->parent >= 0 && !reachable(r, I->parent, I->parent_item)) continue;
        size_t idx[64];
        size_t n = new_chain(r, I->parent, I->parent_item, idx);
        char *p = dg_path_pointer(&r->plan->arrays[I->array].path, idx, n);
        json_t *e = json_pack("{s:I}", "items", (json_int_t)I->n_alive);
        if (I->n_items > I->n_alive)
            json_object_set_new(e, "dropped", json_integer((json_int_t)(I->n_items - I->n_alive)));
        if (I->anchored) {
            /* where each surviving item starts: code point offset of its anchor token */
            json_t *an = json_array();
            for (int64_t t = 0; t < I->n_items; t++)
                if (I->alive[t])
                    json_array_append_new(an, json_integer((json_int_t)r->tok_cp0[I->anchor[t]]));
            json_t *em = json_pack("{s:s, s:o}", "array_mode", "anchor", "anchors", an);
            if (I->raw) json_object_update(em, I->raw);
            json_object_set_new(e, "meta", em);
        }
        json_object_set_new(arrays, p, e);
        free(p);
    }
    json_t *outcomes = json_pack("{s:o, s:o, s:{s:I}}", "fields", fields, "arrays", arrays,
                                 "usage", "prompt_tokens", (json_int_t)deg_trunk_len(r->trunk));
    json_t *errors = NULL;
    json_t *resp = NULL;
    deg_status st = dg_response_assemble(r->plan, outcomes, &resp, &errors);
    json_decref(outcomes);
    if (st == DEG_ERR_FILL && errors) {
        if (!r->errors) r->errors = json_array();
        json_array_extend(r->errors, errors);
    }
    json_decref(errors);
    if (st != DEG_OK) return st;
    json_t *out = json_pack("{s:s}", "model", deg_request_model(r->rq));
    json_object_update(out, resp);
    json_decref(resp);
    context_warning(k, r, out);
    if (k->debug_raw) {
        json_object_set_new(out, "timing",
                            json_pack("{s:f, s:f, s:f, s:I, s:I}", "prefill_s", r->t_prefill,
                                      "forks_s", r->t_forks, "generate_s", r->t_generate,
                                      "fork_rows", (json_int_t)r->fork_rows, "fork_tokens",
                                      (json_int_t)r->fork_tokens));
    }
    *response = out;
    return DEG_OK;
}

/* ---- public entry points -------------------------------------------------- */

static void prepare(const dg_ckpt *k, freq *r, const char *text, size_t len)
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
    dg_opt_limits ol = dg_request_limits(r->rq);
    dg_limits_tighten(&r->lim, ol.deadline_ms, ol.max_fields, ol.max_fork_tokens);
    if (r->ctx_len == 0) {
        dg_fail(DEG_ERR_REQUEST, "context: empty (there is nothing to read)");
        set_fail(r, DEG_ERR_REQUEST, "/context");
        return;
    }
    if (r->opt.temperature > 0 && !r->opt.has_seed) {
        dg_fail(DEG_ERR_REQUEST, "options.temperature > 0 requires options.seed (§7.3)");
        set_fail(r, DEG_ERR_REQUEST, "/options/seed");
        return;
    }
    st = build_trunk(k, r);
    if (st == DEG_OK && k->key_prior.on) st = dg_keylines_scan(r->ctx, r->ctx_len, &r->kv);
    if (st == DEG_OK && k->span_single_line) st = line_tables(r);
    if (st != DEG_OK) set_fail(r, st, "/context");
}

/* ---- the round loop ------------------------------------------------------- */

/* What a caller of run_rounds does with a round's jobs: deg_fill / deg_fill_many
 * decode them (fill_round), the training trace reports them (trace_round). A
 * callback records a request's own failure in the request and returns only
 * errors that stop every request (out of memory, internal, the trace's hooks). */
typedef struct round_ops {
    /* Move the jobs to run to the front of J, in order; returns their count
     * (NULL: run every job). */
    size_t (*select)(const freq *reqs, jobs *J);
    /* Job j of the round (ran: it was run), in job order; may queue next-round jobs. */
    deg_status (*decoded)(const dg_ckpt *k, freq *reqs, job *j, int ran, jobs *next);
    /* Each anchor job, once every job of the round is decoded. */
    deg_status (*anchors)(const dg_ckpt *k, freq *reqs, job *j, jobs *next);
    /* Each job again after the anchors (NULL: nothing). */
    deg_status (*after)(const dg_ckpt *k, freq *reqs, job *j, int ran);
    /* 1: stop once request 0 has failed (the trace's single request). */
    int stop_on_failure;
} round_ops;

/* THE round loop (§12.1): from the jobs of round 0 in *J, while jobs remain: run
 * the selected jobs as fork batches (run_jobs), hand each job to ops->decoded,
 * each anchor job to ops->anchors, each job to ops->after, and go on with the
 * jobs they queued. *J is freed. */
static deg_status run_rounds(const dg_ckpt *k, freq *reqs, jobs *J, const round_ops *ops)
{
    deg_status st = DEG_OK;
    while (st == DEG_OK && J->n && !(ops->stop_on_failure && reqs[0].st != DEG_OK)) {
        size_t nrun = ops->select ? ops->select(reqs, J) : J->n;
        st = run_jobs(k, reqs, J->p, nrun);
        jobs next = {0};
        for (size_t q = 0; q < J->n && st == DEG_OK; q++)
            st = ops->decoded(k, reqs, &J->p[q], q < nrun, &next);
        for (size_t q = 0; q < J->n && st == DEG_OK; q++)
            if (J->p[q].kind == JOB_ANCHOR) st = ops->anchors(k, reqs, &J->p[q], &next);
        for (size_t q = 0; q < J->n && st == DEG_OK && ops->after; q++)
            st = ops->after(k, reqs, &J->p[q], q < nrun);
        jobs_free(J);
        *J = next;
    }
    jobs_free(J);
    return st;
}

/* A request's own failure is recorded in it (at loc); what stops every request is returned. */
static deg_status request_status(freq *r, deg_status s, const char *loc)
{
    if (s == DEG_ERR_NOMEM || s == DEG_ERR_INTERNAL) return s;
    if (s != DEG_OK) set_fail(r, s, loc);
    return DEG_OK;
}

static deg_status fill_decoded(const dg_ckpt *k, freq *reqs, job *j, int ran, jobs *next)
{
    freq *r = &reqs[j->req];
    if (r->st != DEG_OK) return DEG_OK;
    deg_status s = DEG_OK;
    if (j->kind == JOB_ANCHOR) {
        s = decode_anchor(k, r, j);
    } else if (j->kind == JOB_COUNT && r->insts[j->target].anchored) {
        decode_anchor_count(k, r, j);
    } else if (j->kind == JOB_COUNT) {
        s = decode_count(k, r, j);
        if (s == DEG_OK) s = expand(r, j->req, next, k->model, (int)j->target);
    } else {
        const dg_field_plan *f = &r->plan->fields[r->leaves[j->target].field];
        s = dg_mode_is_decide(f->mode) ? decode_decide(k, r, j) : decode_extract(k, r, j);
    }
    return request_status(r, s, "");
}

/* Anchored arrays: anchors once the anchor and count forks are both decoded,
 * then the items' forks and nested arrays (next round). */
static deg_status fill_anchors(const dg_ckpt *k, freq *reqs, job *j, jobs *next)
{
    freq *r = &reqs[j->req];
    if (r->st != DEG_OK) return DEG_OK;
    deg_status s = resolve_anchors(k, r, (int)j->target);
    if (s == DEG_OK) s = expand(r, j->req, next, k->model, (int)j->target);
    return request_status(r, s, r->plan->arrays[r->insts[j->target].array].schema_loc);
}

static const round_ops fill_round = {.decoded = fill_decoded, .anchors = fill_anchors};

static deg_status fill_run(deg_ckpt *k, freq *reqs, size_t n)
{
    deg_status st = DEG_OK;
    jobs J = {0};
    /* round 0 */
    for (size_t ri = 0; ri < n && st == DEG_OK; ri++) {
        freq *r = &reqs[ri];
        if (r->st != DEG_OK) continue;
        r->anchor_on = strcmp(k->array_mode, "anchor") == 0 &&
                       (int64_t)(r->c1 - r->c0) >= k->anchor_min_tokens;
        st = expand(r, ri, &J, k->model, -1);
        if (st == DEG_ERR_LIMIT || st == DEG_ERR_CANCELLED) st = DEG_OK; /* r failed alone */
    }
    if (st == DEG_OK) st = run_rounds(k, reqs, &J, &fill_round);
    else jobs_free(&J);
    if (st != DEG_OK) return st;
    for (size_t ri = 0; ri < n; ri++) {
        freq *r = &reqs[ri];
        if (r->st != DEG_OK) continue;
        apply_drops(r);
        for (size_t li = 0; li < r->n_leaves && r->st == DEG_OK; li++) {
            const leaf *L = &r->leaves[li];
            if (L->failed && L->inst < 0) {
                dg_fail(DEG_ERR_FILL, "%s", L->fail_msg ? L->fail_msg : "required value missing");
                set_fail(r, DEG_ERR_FILL, r->plan->fields[L->field].schema_loc);
            }
        }
        for (size_t ii = 0; ii < r->n_insts && r->st == DEG_OK; ii++) {
            const inst *I = &r->insts[ii];
            const dg_array_plan *a = &r->plan->arrays[I->array];
            if (I->parent < 0 && I->n_alive < a->min_items) {
                dg_fail(DEG_ERR_FILL, "%s: minItems %lld: only %lld items have their required "
                        "values", a->pointer, (long long)a->min_items, (long long)I->n_alive);
                set_fail(r, DEG_ERR_FILL, a->schema_loc);
            }
        }
    }
    return generate_phase(k, reqs, n);
}

static char *dump(json_t *v)
{
    return v ? json_dumps(v, JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_ENSURE_ASCII * 0 |
                                 JSON_REAL_PRECISION(17))
             : NULL;
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
    for (size_t i = 0; i < n; i++) dg_limits_init(&reqs[i].lim, limits ? &limits[i] : NULL);
    for (size_t i = 0; i < n; i++) {
        if (!requests[i]) {
            dg_fail(DEG_ERR_ARG, "request %zu is NULL", i);
            set_fail(&reqs[i], DEG_ERR_ARG, "");
            continue;
        }
        prepare(ckpt, &reqs[i], requests[i], lens[i]);
    }
    deg_status st = fill_run(ckpt, reqs, n);
    char first_msg[1024] = "";
    deg_status first = DEG_OK;
    for (size_t i = 0; i < n; i++) {
        freq *r = &reqs[i];
        if (st == DEG_OK && r->st == DEG_OK) {
            json_t *resp = NULL;
            deg_status s2 = assemble(ckpt, r, &resp);
            if (s2 == DEG_OK) {
                responses[i] = dump(resp);
                json_decref(resp);
                if (!responses[i]) s2 = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            }
            if (s2 != DEG_OK) set_fail(r, s2, "");
        }
        statuses[i] = st != DEG_OK ? st : r->st;
        if (statuses[i] != DEG_OK && first == DEG_OK) {
            first = statuses[i];
            const char *msg = r->errors && json_array_size(r->errors)
                                  ? json_string_value(json_object_get(json_array_get(r->errors, 0), "msg"))
                                  : NULL;
            snprintf(first_msg, sizeof first_msg, "%s", msg ? msg : deg_errmsg());
        }
        if (errors && r->errors) errors[i] = dump(r->errors);
        freq_clear(r);
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

/* ---- training trace (fill.h dg_fill_trace; deg/features.c) ----------------- */

static deg_status trace_order(job *j, const freq *r, const leaf *L, size_t n)
{
    const dg_field_plan *f = &r->plan->fields[L->field];
    if (!r->trace || !r->trace->shuffle || f->mode != DG_MODE_CHOICE || n < 2) return DEG_OK;
    char *ptr = dg_path_pointer(&f->path, L->idx, L->n_idx);
    j->order = malloc(n * sizeof *j->order);
    if (!ptr || !j->order) {
        free(ptr);
        return dg_fail(DEG_ERR_NOMEM, "fill trace: out of memory");
    }
    int shuffled = r->trace->shuffle(r->trace->ud, ptr, n, j->order);
    free(ptr);
    if (!shuffled) {
        free(j->order);
        j->order = NULL;
    }
    return DEG_OK;
}

static int trace_wants(const freq *r, const job *j)
{
    const dg_trace_hooks *h = r->trace;
    if (h->anchored_only && j->kind != JOB_ANCHOR) {
        size_t anc, rend;
        int in = j->kind == JOB_COUNT ? r->insts[j->target].parent : r->leaves[j->target].inst;
        size_t item = j->kind == JOB_COUNT ? r->insts[j->target].parent_item
                                           : r->leaves[j->target].item;
        if (!(j->kind == JOB_COUNT && r->insts[j->target].anchored) &&
            !innermost_anchor(r, in, item, &anc, &rend))
            return 0;
    }
    if (!h->want) return 1;
    if (j->kind == JOB_COUNT || j->kind == JOB_ANCHOR)
        return h->want(h->ud, j->kind == JOB_COUNT ? DG_TRACE_COUNT : DG_TRACE_ANCHOR,
                       (size_t)r->insts[j->target].array, -1);
    size_t fi = r->leaves[j->target].field;
    return h->want(h->ud, DG_TRACE_LEAF, fi, (int)r->plan->fields[fi].mode);
}

/* Concrete pointer of `path` inside item `item` of instance `in` (none when
 * in < 0) in the gold's item indices: an anchored level maps its anchor order
 * back to the gold item (gold_idx); an index-addressed level is the index. */
static char *trace_pointer(const freq *r, const dg_path *path, int in, size_t item)
{
    size_t tmp[64], idx[64], n = 0;
    while (in >= 0 && n < 64) {
        const inst *I = &r->insts[in];
        tmp[n++] = I->gold_idx ? I->gold_idx[item] : item;
        item = I->parent_item;
        in = I->parent;
    }
    for (size_t i = 0; i < n; i++) idx[i] = tmp[n - 1 - i];
    return dg_path_pointer(path, idx, n);
}

/* Report job j (run) to the hooks. */
static deg_status trace_report(const dg_ckpt *k, freq *r, const job *j)
{
    dg_trace_fork tf = {0};
    tf.hidden = j->h;
    tf.n_rows = j->n_mark;
    tf.order = j->order;
    tf.n_tokens = j->ids.n;
    tf.ids = j->ids.p;
    tf.marks = j->mark;
    tf.anchor = tf.rend = -1;
    char *ptr;
    if (j->kind == JOB_COUNT || j->kind == JOB_ANCHOR) {
        const inst *I = &r->insts[j->target];
        tf.kind = j->kind == JOB_COUNT ? DG_TRACE_COUNT : DG_TRACE_ANCHOR;
        tf.head_kind = j->kind == JOB_ANCHOR ? DEG_HEAD_ANCHOR
                       : I->anchored         ? DEG_HEAD_ANCHOR_COUNT
                                             : DEG_HEAD_COUNT;
        tf.index = (size_t)I->array;
        tf.mode = -1;
        if (j->kind == JOB_ANCHOR) {
            tf.r0 = I->r0;
            tf.r1 = I->r1;
            tf.starts = I->anchor;
            tf.n_starts = (size_t)I->n_items;
        } else if (I->anchored) {
            tf.anchored = 1;
            const dg_array_plan *a = &r->plan->arrays[I->array];
            if (!dg_anchor_count_range(a->min_items, anchor_cap(r, a), &tf.lo, &tf.hi))
                return DEG_OK; /* minItems beyond the count head: untrainable */
        } else {
            DG_TRY(count_range(r, I, &tf.lo, &tf.hi));
        }
        ptr = trace_pointer(r, &r->plan->arrays[I->array].path, I->parent, I->parent_item);
    } else {
        const leaf *L = &r->leaves[j->target];
        tf.kind = DG_TRACE_LEAF;
        tf.index = L->field;
        tf.mode = (int)r->plan->fields[L->field].mode;
        tf.head_kind = tf.mode == DG_MODE_CHOICE  ? DEG_HEAD_CHOICE
                       : tf.mode == DG_MODE_SCORE ? DEG_HEAD_SCORE
                       : tf.mode == DG_MODE_NOUL  ? DEG_HEAD_NOUL
                                                  : DEG_HEAD_EXTRACT;
        size_t anc = 0, rend = 0;
        if (innermost_anchor(r, L->inst, L->item, &anc, &rend)) {
            tf.anchor = (int64_t)anc;
            tf.rend = (int64_t)rend;
        }
        ptr = trace_pointer(r, &r->plan->fields[L->field].path, L->inst, L->item);
    }
    if (!ptr) return dg_fail(DEG_ERR_NOMEM, "fill trace: out of memory");
    tf.pointer = ptr;
    (void)k;
    deg_status st = r->trace->fork(r->trace->ud, &tf);
    free(ptr);
    return st;
}

/* Teacher count of a count job: the hook's gold count, clamped to the head's
 * range as decoding would be; then the next round's jobs. */
static deg_status trace_count(const dg_ckpt *k, freq *r, const job *j, jobs *next)
{
    inst *I = &r->insts[j->target];
    int64_t lo = 0, hi = 0;
    DG_TRY(count_range(r, I, &lo, &hi));
    char *ptr = trace_pointer(r, &r->plan->arrays[I->array].path, I->parent, I->parent_item);
    if (!ptr) return dg_fail(DEG_ERR_NOMEM, "fill trace: out of memory");
    int64_t n = 0;
    deg_status st = r->trace->count(r->trace->ud, (size_t)I->array, ptr, &n);
    free(ptr);
    DG_TRY(st);
    if (n < lo) n = lo;
    if (n > hi) n = hi;
    DG_TRY(set_count(I, n));
    return expand(r, j->req, next, k->model, (int)j->target);
}

typedef struct gold_anchor {
    size_t tok, item;
} gold_anchor;

static int cmp_gold_anchor(const void *x, const void *y)
{
    const gold_anchor *a = x, *b = y;
    return a->tok < b->tok ? -1 : a->tok > b->tok;
}

/* Teacher anchors of an anchored instance (the hook's gold, in anchor order,
 * each remembering its gold item), then the next round's jobs (§12.6: the
 * items' forks and nested arrays), as resolve_anchors + expand do in deg_fill. */
static deg_status trace_anchors(const dg_ckpt *k, freq *r, const job *j, jobs *next)
{
    inst *I = &r->insts[j->target];
    char *ptr = trace_pointer(r, &r->plan->arrays[I->array].path, I->parent, I->parent_item);
    if (!ptr) return dg_fail(DEG_ERR_NOMEM, "fill trace: out of memory");
    int64_t n = -1;
    size_t *starts = NULL;
    deg_status st = r->trace->anchors(r->trace->ud, (size_t)I->array, ptr, I->r0, I->r1,
                                      r->cp_tok, r->n_cp, &n, &starts);
    free(ptr);
    if (st != DEG_OK || n < 0) {
        free(starts);
        I->trace_out = 1;
        return st == DEG_OK ? set_count(I, 0) : st;
    }
    gold_anchor *ga = malloc((n ? (size_t)n : 1) * sizeof *ga);
    I->anchor = malloc((n ? (size_t)n : 1) * sizeof(size_t));
    I->gold_idx = malloc((n ? (size_t)n : 1) * sizeof(size_t));
    if (!ga || !I->anchor || !I->gold_idx || (n && !starts)) {
        free(ga);
        free(starts);
        return dg_fail(DEG_ERR_NOMEM, "fill trace: out of memory (anchors)");
    }
    for (int64_t i = 0; i < n; i++) ga[i] = (gold_anchor){starts[i], (size_t)i};
    free(starts);
    qsort(ga, (size_t)n, sizeof *ga, cmp_gold_anchor);
    for (int64_t i = 0; i < n; i++) {
        if (ga[i].tok < I->r0 || ga[i].tok >= I->r1 || (i && ga[i].tok == ga[i - 1].tok)) {
            size_t tok = ga[i].tok; /* read before free: the message names it */
            free(ga);
            return dg_fail(DEG_ERR_INTERNAL, "fill trace: gold anchor token %zu repeated or "
                           "outside the region [%zu, %zu)", tok, I->r0, I->r1);
        }
        I->anchor[i] = ga[i].tok;
        I->gold_idx[i] = ga[i].item;
    }
    free(ga);
    DG_TRY(set_count(I, n));
    return expand(r, j->req, next, k->model, (int)j->target);
}

/* The trace's round (run_rounds), in deg_fill's order: the wanted forks run
 * (first, stable); leaves and index counts are reported (their items expand
 * now), then the anchored instances' teacher anchors and their items, then
 * the anchored arrays' forks (reported with the anchors). */
static size_t trace_select(const freq *reqs, jobs *J)
{
    size_t nw = 0;
    for (size_t q = 0; q < J->n; q++) {
        if (!trace_wants(reqs, &J->p[q])) continue;
        job t = J->p[q];
        memmove(&J->p[nw + 1], &J->p[nw], (q - nw) * sizeof t);
        J->p[nw++] = t;
    }
    return nw;
}

static int trace_anchored(const freq *r, const job *j)
{
    return j->kind == JOB_ANCHOR || (j->kind == JOB_COUNT && r->insts[j->target].anchored);
}

static deg_status trace_decoded(const dg_ckpt *k, freq *reqs, job *j, int ran, jobs *next)
{
    if (trace_anchored(reqs, j)) return DEG_OK;
    deg_status st = ran ? trace_report(k, reqs, j) : DEG_OK;
    if (st == DEG_OK && j->kind == JOB_COUNT) st = trace_count(k, reqs, j, next);
    return st;
}

static deg_status trace_anchors_of(const dg_ckpt *k, freq *reqs, job *j, jobs *next)
{
    return trace_anchors(k, reqs, j, next);
}

static deg_status trace_after(const dg_ckpt *k, freq *reqs, job *j, int ran)
{
    if (ran && trace_anchored(reqs, j) && !reqs->insts[j->target].trace_out)
        return trace_report(k, reqs, j);
    return DEG_OK;
}

static const round_ops trace_round = {.select = trace_select, .decoded = trace_decoded,
                                      .anchors = trace_anchors_of, .after = trace_after,
                                      .stop_on_failure = 1};

deg_status dg_fill_trace(dg_ckpt *k, const char *request, size_t len, const dg_trace_hooks *h,
                         char **errors_json)
{
    if (errors_json) *errors_json = NULL;
    if (!k || !request || !h || !h->count || !h->trunk || !h->fork)
        return dg_fail(DEG_ERR_ARG, "dg_fill_trace: NULL argument");
    freq r;
    memset(&r, 0, sizeof r);
    r.trace = h;
    prepare(k, &r, request, len);
    deg_status st = DEG_OK;
    jobs J = {0};
    if (r.st == DEG_OK)
        st = h->trunk(h->ud, r.ctx_hidden, r.c1 - r.c0, r.tok_cp0, r.tok_cp1, r.trunk_ids,
                      deg_trunk_len(r.trunk), r.c0);
    r.anchor_on = h->anchors != NULL;
    if (r.st == DEG_OK && st == DEG_OK) st = expand(&r, 0, &J, k->model, -1);
    if (r.st == DEG_OK && st == DEG_OK) st = run_rounds(k, &r, &J, &trace_round);
    else jobs_free(&J);
    if (st == DEG_OK && r.st != DEG_OK) {
        st = r.st;
        const char *msg = r.errors && json_array_size(r.errors)
                              ? json_string_value(json_object_get(json_array_get(r.errors, 0), "msg"))
                              : NULL;
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", msg ? msg : deg_errmsg());
        dg_fail(st, "%s", buf);
        if (errors_json) *errors_json = dump(r.errors);
    }
    freq_clear(&r);
    return st;
}
