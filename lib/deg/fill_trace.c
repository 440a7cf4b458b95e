/* fill_trace.c - the training trace (fill.h dg_fill_trace; deg/features.c): a
 * request's trunk and forks as deg_fill runs them, with teacher-forced counts and
 * anchors, reported to hooks instead of decoded. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "deg/anchor.h"
#include "deg/fill_internal.h"

deg_status dg_fill_trace_order(job *j, const freq *r, const leaf *L, size_t n)
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
            !dg_fill_innermost_anchor(r, in, item, &anc, &rend))
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
            if (!dg_anchor_count_range(a->min_items, dg_fill_anchor_cap(r, a), &tf.lo, &tf.hi))
                return DEG_OK; /* minItems beyond the count head: untrainable */
        } else {
            DG_TRY(dg_fill_count_range(r, I, &tf.lo, &tf.hi));
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
        if (dg_fill_innermost_anchor(r, L->inst, L->item, &anc, &rend)) {
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
    DG_TRY(dg_fill_count_range(r, I, &lo, &hi));
    char *ptr = trace_pointer(r, &r->plan->arrays[I->array].path, I->parent, I->parent_item);
    if (!ptr) return dg_fail(DEG_ERR_NOMEM, "fill trace: out of memory");
    int64_t n = 0;
    deg_status st = r->trace->count(r->trace->ud, (size_t)I->array, ptr, &n);
    free(ptr);
    DG_TRY(st);
    if (n < lo) n = lo;
    if (n > hi) n = hi;
    DG_TRY(dg_fill_set_count(I, n));
    return dg_fill_expand(r, j->req, next, k->model, (int)j->target);
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
 * items' forks and nested arrays), as dg_fill_resolve_anchors + expand do in deg_fill. */
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
        return st == DEG_OK ? dg_fill_set_count(I, 0) : st;
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
    DG_TRY(dg_fill_set_count(I, n));
    return dg_fill_expand(r, j->req, next, k->model, (int)j->target);
}

/* The trace's round (dg_fill_rounds), in deg_fill's order: the wanted forks run
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
    dg_fill_prepare(k, &r, request, len);
    deg_status st = DEG_OK;
    jobs J = {0};
    if (r.st == DEG_OK)
        st = h->trunk(h->ud, r.ctx_hidden, r.c1 - r.c0, r.tok_cp0, r.tok_cp1, r.trunk_ids,
                      deg_trunk_len(r.trunk), r.c0);
    r.anchor_on = h->anchors != NULL;
    if (r.st == DEG_OK && st == DEG_OK) st = dg_fill_expand(&r, 0, &J, k->model, -1);
    if (r.st == DEG_OK && st == DEG_OK) st = dg_fill_rounds(k, &r, &J, &trace_round);
    else dg_fill_jobs_free(&J);
    if (st == DEG_OK && r.st != DEG_OK) {
        st = r.st;
        const char *msg = r.errors && json_array_size(r.errors)
                              ? json_string_value(json_object_get(json_array_get(r.errors, 0), "msg"))
                              : NULL;
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", msg ? msg : deg_errmsg());
        dg_fail(st, "%s", buf);
        if (errors_json) *errors_json = dg_fill_dump(r.errors);
    }
    dg_fill_clear(&r);
    return st;
}
