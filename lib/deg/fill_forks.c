/* fill_forks.c - the fork texts of deg contract §12.1 (leaf, count, anchor and
 * x-generate forks) and the expansion of a round's jobs from the items counted. */
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "deg/anchor.h"
#include "deg/fill_internal.h"
#include "deg/render.h"
#include "model/chat.h"
#include "model/state.h"

/* Append "text\n" to the fork as its own tokenization. */
static deg_status put_line(job *j, const deg_model *m, const char *text)
{
    DG_TRY(dg_fill_tok(&j->ids, m, text, strlen(text), 0));
    return dg_fill_tok(&j->ids, m, "\n", 1, 0);
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

static deg_status job_mark(job *j)
{
    deg_status st = DG_GROW(j->mark, j->cap_mark, j->n_mark + 1);
    if (st != DEG_OK) return dg_fail_context(st, "fill");
    if (j->ids.n == 0) return dg_fail(DEG_ERR_INTERNAL, "fill: mark on an empty fork");
    j->mark[j->n_mark++] = j->ids.n - 1;
    return DEG_OK;
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

/* Locator of anchored item `item` of I: the context text from its anchor,
 * at most DG_LOCATOR_TOKENS tokens, cut at the region end, as a JSON string. */
static char *locator_json(const freq *r, const inst *I, size_t item)
{
    size_t t0 = I->anchor[item], t1 = dg_fill_item_end(I, item);
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

/* "<word> <pointer>": the fork-side pointer of path inside item `item` of
 * instance `in` (fork_chain). */
static deg_status put_path_line(job *j, const deg_model *m, const char *word, const freq *r,
                                const dg_path *path, int in, size_t item)
{
    size_t idx[64];
    size_t ni = fork_chain(r, in, item, idx);
    char *ptr = dg_path_pointer(path, idx, ni);
    if (!ptr) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    deg_status st = put_linef(j, m, "%s %s", word, ptr);
    free(ptr);
    return st;
}

static deg_status build_leaf_job(job *j, const deg_model *m, const freq *r, const leaf *L)
{
    const dg_field_plan *f = &r->plan->fields[L->field];
    deg_status st = DEG_OK;
    DG_TRY(put_path_line(j, m, "FIELD", r, &f->path, L->inst, L->item));
    DG_TRY(put_items(j, m, r, L->inst, 1, L->item));
    DG_TRY(put_annotations(j, m, f->title, f->description));
    DG_TRY(put_linef(j, m, "KIND: %s", dg_mode_name(f->mode)));
    if (dg_mode_is_extract(f->mode)) {
        json_t *c = dg_fill_leaf_schema(f);
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
        DG_TRY(dg_fill_trace_order(j, r, L, n));
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
            st = dg_fill_tok(&j->ids, m, b.p, b.len, 0);
            free(b.p);
            DG_TRY(st);
            DG_TRY(job_mark(j));
            DG_TRY(dg_fill_tok(&j->ids, m, "\n", 1, 0));
        }
    }
    DG_TRY(dg_fill_tok(&j->ids, m, "ANSWER:", 7, 0));
    return job_mark(j);
}

/* Count fork (§12.1) or, with anchor != 0, anchor fork (§12.6) of an instance
 * of plan array `array` in item parent_item of instance parent (-1: top level). */
static deg_status build_array_text(job *j, const deg_model *m, const freq *r, int array,
                                   int parent, size_t parent_item, int anchor)
{
    const dg_array_plan *a = &r->plan->arrays[array];
    DG_TRY(put_path_line(j, m, "ARRAY", r, &a->path, parent, parent_item));
    DG_TRY(put_items(j, m, r, parent, 1, parent_item));
    DG_TRY(put_annotations(j, m, a->title, a->description));
    dg_strbuf b = {0};
    dg_sb_puts(&b, "ITEM FIELDS:");
    for (size_t i = 0; i < a->n_fields; i++) {
        dg_sb_puts(&b, i ? ", " : " ");
        dg_sb_puts(&b, r->plan->fields[a->first_field + i].pointer);
    }
    deg_status st = b.oom ? dg_fail(DEG_ERR_NOMEM, "fill: out of memory") : put_line(j, m, b.p);
    free(b.p);
    DG_TRY(st);
    if (anchor) DG_TRY(put_line(j, m, "KIND: mark where each item starts in the context"));
    DG_TRY(dg_fill_tok(&j->ids, m, "ANSWER:", 7, 0));
    return job_mark(j);
}

static deg_status build_array_job(job *j, const deg_model *m, const freq *r, int in, int anchor)
{
    const inst *I = &r->insts[in];
    return build_array_text(j, m, r, I->array, I->parent, I->parent_item, anchor);
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
        C->r1 = dg_fill_item_end(&r->insts[in], C->parent_item);
    } else {
        C->r0 = r->insts[in].r0;
        C->r1 = r->insts[in].r1;
    }
    C->anchored = r->anchor_on && array_has_extract(r->plan, (size_t)C->array);
    /* list prior (lists.h): a top-level array named like a key's list anchors at
     * any document length (decoding only: a training trace never sees it) */
    if (in < 0 && r->list_bonus > 0 && r->anchor_heads && !r->trace) {
        int li = dg_lists_match(&r->lists, r->plan, (size_t)C->array);
        if (li >= 0) {
            C->list1 = li + 1;
            C->anchored = 1;
        } else if (dg_lists_dependencies_unwritten(r->plan, (size_t)C->array, r->kv.n)) {
            C->list_absent = 1;
            C->anchored = 1;
        } else if (r->list_by_anchor && r->lists.n > 0 &&
                   dg_lists_plain_array(r->plan, (size_t)C->array)) {
            C->list_probe = 1;
            C->anchored = 1;
        }
    }
    if (C->anchored) {
        job *j = dg_fill_job_add(J, JOB_ANCHOR, ri, (size_t)c);
        if (!j) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
        DG_TRY(build_array_job(j, m, r, c, 1));
        if (r->opt.array_decode == DEG_ARRAY_DECODE_THRESHOLD) return DEG_OK;
    }
    job *j = dg_fill_job_add(J, JOB_COUNT, ri, (size_t)c);
    if (!j) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    return build_count_job(j, m, r, c);
}

/* *n = one top-level fork's tokens: a leaf's, or an array's count fork (an
 * anchor fork is that text + one line). */
static deg_status top_fork_len(const freq *r, const deg_model *m, int array, size_t field,
                               size_t *n)
{
    job j = {0};
    leaf L = {.field = field, .inst = -1};
    deg_status st = array >= 0 ? build_array_text(&j, m, r, array, -1, 0, 0)
                               : build_leaf_job(&j, m, r, &L);
    *n = j.ids.n;
    free(j.ids.p);
    free(j.mark);
    free(j.order);
    return st;
}

void dg_fill_first_round_check(freq *r, const deg_model *m)
{
    const dg_plan *P = r->plan;
    if (r->st != DEG_OK || !r->lim.max_fork_tokens) return;
    size_t total = 0, over = 0; /* over: tokens of the first fork over DEG_MAX_FORK_LEN */
    int over_array = -1;
    size_t over_i = 0;
    for (size_t i = 0; i < P->n_fields + P->n_arrays; i++) {
        int array = i < P->n_fields ? -1 : (int)(i - P->n_fields);
        if (array < 0 ? P->fields[i].array >= 0 || P->fields[i].mode == DG_MODE_GENERATE
                      : P->arrays[array].parent_array >= 0)
            continue;
        size_t n = 0;
        deg_status st = top_fork_len(r, m, array, i, &n);
        if (st != DEG_OK) {
            dg_fill_fail(r, st, "");
            return;
        }
        if (!over && n > DEG_MAX_FORK_LEN) {
            over = n;
            over_array = array;
            over_i = i;
        }
        total += n;
    }
    /* the order of the rounds' own checks: the total, then each fork */
    if ((int64_t)total > r->lim.max_fork_tokens) {
        dg_fail(DEG_ERR_LIMIT, "max_fork_tokens %lld: the first round's forks need at least "
                "%zu tokens (every top-level field's fork and array's count fork), checked "
                "before the prefill%s", (long long)r->lim.max_fork_tokens, total,
                dg_limit_hint(&r->lim, DG_LIMIT_FORK_TOKENS));
        dg_fill_fail(r, DEG_ERR_LIMIT, "");
    } else if (over) {
        dg_fill_fork_len_check(r, over, over_array >= 0 ? "the count fork of " :
                               "the fork of field ", over_array >= 0 ?
                               P->arrays[over_array].pointer : P->fields[over_i].pointer,
                               ", checked before the prefill");
    }
}

/* Create the round's jobs for the items of instance `in` (its leaves and
 * nested count forks), or for the top level when in < 0. */
deg_status dg_fill_expand(freq *r, size_t ri, jobs *J, const deg_model *m, int in)
{
    const dg_plan *P = r->plan;
    int64_t n_items = in >= 0 ? r->insts[in].n_items : 1;
    int array = in >= 0 ? r->insts[in].array : -1;
    for (int64_t it = 0; it < n_items; it++) {
        for (size_t fi = 0; fi < P->n_fields; fi++) {
            const dg_field_plan *f = &P->fields[fi];
            if (f->array != array || f->mode == DG_MODE_GENERATE) continue;
            long li = dg_fill_add_leaf(r, fi, in, (size_t)it);
            if (li < 0) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            job *j = dg_fill_job_add(J, JOB_LEAF, ri, (size_t)li);
            if (!j) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            DG_TRY(build_leaf_job(j, m, r, &r->leaves[li]));
        }
        for (size_t ai = 0; ai < P->n_arrays; ai++) {
            if (P->arrays[ai].parent_array != array) continue;
            int c = dg_fill_add_inst(r, (int)ai, in, (size_t)it);
            if (c < 0) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            DG_TRY(array_jobs(r, ri, J, m, c));
        }
        if (dg_fill_stopped(r, "the fork rounds")) return r->st;
    }
    return DEG_OK;
}

deg_status dg_fill_gen_job(job *j, const dg_ckpt *k, const freq *r, const leaf *L)
{
    const deg_model *m = k->model;
    const dg_field_plan *f = &r->plan->fields[L->field];
    char *ptr = dg_fill_leaf_pointer(r, L);
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
    DG_TRY(dg_fill_tok(&j->ids, m, "VALUE:", 6, 0));
    if (dg_fill_layout(k) == DG_CHAT_NONE) return dg_fill_tok(&j->ids, m, " ", 1, 0);
    char *open, *close;
    DG_TRY(dg_chat_user_turn(dg_fill_layout(k), &open, &close));
    st = dg_fill_tok(&j->ids, m, close, strlen(close), 1);
    free(open);
    free(close);
    return st;
}
