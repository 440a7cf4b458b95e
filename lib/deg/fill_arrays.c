/* fill_arrays.c - arrays of a fill (§12.3 count, §12.6): count and anchor decoding,
 * item regions, drops of items missing required values, renumbered pointers. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "deg/anchor.h"
#include "deg/fill_internal.h"

/* End (exclusive) of anchored item `item`'s region: the next sibling's
 * anchor, the last item's its instance's region end (§12.6). */
size_t dg_fill_item_end(const inst *I, size_t item)
{
    return item + 1 < (size_t)I->n_items ? I->anchor[item + 1] : I->r1;
}

/* Anchor token and region end of the innermost anchored item enclosing item
 * `item` of instance `in` (the anchored-extract bias, §12.3); 0 if none. */
int dg_fill_innermost_anchor(const freq *r, int in, size_t item, size_t *anchor, size_t *rend)
{
    while (in >= 0) {
        const inst *I = &r->insts[in];
        if (I->anchored) {
            *anchor = I->anchor[item];
            *rend = dg_fill_item_end(I, item);
            return 1;
        }
        item = I->parent_item;
        in = I->parent;
    }
    return 0;
}

/* Anchor fork: the anchor head's logits over the instance's region. */
deg_status dg_fill_decode_anchor(const dg_ckpt *k, freq *r, job *j)
{
    inst *I = &r->insts[j->target];
    const float *a = j->h + (j->n_mark - 1) * (size_t)k->h.E;
    size_t n = I->r1 - I->r0;
    I->alog = malloc((n ? n : 1) * sizeof(float));
    if (!I->alog) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (anchor logits)");
    return dg_anchor_logits(&k->h, a, r->ctx_hidden, I->r0, I->r1, I->alog);
}

/* An anchored array's item cap: maxItems, else options.max_items, else -1 (none). */
int64_t dg_fill_anchor_cap(const freq *r, const dg_array_plan *a)
{
    return a->max_items >= 0 ? a->max_items : r->opt.max_items >= 0 ? r->opt.max_items : -1;
}

/* Count fork of an anchored array (count_peaks / hybrid): logits kept. */
void dg_fill_decode_anchor_count(const dg_ckpt *k, freq *r, job *j)
{
    inst *I = &r->insts[j->target];
    const float *h = j->h + (j->n_mark - 1) * (size_t)k->h.E;
    for (int c = 0; c <= DG_COUNT_MAX; c++)
        I->clog[c] = dg_head_dot(k->h.count_w + (size_t)c * k->h.E, h, k->h.E) + k->h.count_b[c];
    I->has_clog = 1;
}

/* Code points [a0, a1) and [b0, b1) of the context hold the same text. */
static int same_text(const freq *r, size_t a0, size_t a1, size_t b0, size_t b1)
{
    size_t x0 = r->cp_byte[a0], x1 = r->cp_byte[a1], y0 = r->cp_byte[b0], y1 = r->cp_byte[b1];
    return x1 - x0 == y1 - y0 && memcmp(r->ctx + x0, r->ctx + y0, x1 - x0) == 0;
}

/* Code point end of list item `i` of list L as array a reads it: its name's end
 * on a list of names (lists.h dg_lists_name_end), else the item's end. */
static size_t item_end(const freq *r, const dg_list *L, size_t i, int names)
{
    const size_t *it = r->lists.item + 2 * (L->first + i);
    if (!names) return it[1];
    size_t b = r->cp_byte[it[0]], e = r->cp_byte[it[1]], n = dg_lists_name_end(r->ctx, b, e);
    /* a cut name is ASCII (its bytes are code points); an uncut item may not be
     * ("Maach\u1ecb": a month's name; counting its bytes ran past the item) */
    return n == e ? it[1] : it[0] + (n - b);
}

/* List prior (lists.h): the anchors of instance I are its list's items, the
 * context token holding each item's first code point (idx[i] = the list item of
 * anchor i, end[i] = where it ends as read: item_end; names: a list of names,
 * lists.h dg_lists_names_array), when those tokens are
 * distinct, ascending and inside the region and there are at least minItems (the
 * first maxItems / options.max_items are kept). Under uniqueItems, and on a list of
 * names, an item whose text (name) an earlier one has is skipped (a list merged from
 * repeated keys may repeat a value; "rsa>=4.1; python_version >= '3.5'" and
 * "rsa<=4.0; ..." name one package). Returns the count, or 0 when the list cannot
 * anchor the array (the heads' anchors are used). */
static size_t list_anchors(const freq *r, const inst *I, const dg_array_plan *a, int64_t cap,
                           int names, size_t room, size_t *out, size_t *idx, size_t *end)
{
    const dg_list *L = &r->lists.p[I->list1 - 1];
    const size_t *it = r->lists.item + 2 * L->first;
    size_t n = 0;
    for (size_t i = 0; i < L->n && (cap < 0 || n < (size_t)cap); i++) {
        int dup = 0;
        size_t e = item_end(r, L, i, names);
        for (size_t j = 0; (a->unique_items || names) && j < n && !dup; j++)
            dup = same_text(r, it[2 * i], e, it[2 * idx[j]], end[j]);
        if (dup) continue;
        size_t t = r->cp_tok[it[2 * i]];
        if (t < I->r0 || t >= I->r1 || (n > 0 && t <= out[n - 1]) || n == room) return 0;
        out[n] = t;
        end[n] = e;
        idx[n++] = i;
    }
    return n == 0 || (int64_t)n < a->min_items ? 0 : n;
}

/* The cells each leaf of a table's records reads (lists.h dg_lists_record_cells;
 * a column other records write and this one does not is DG_CELL_MISSING), for I's
 * `got` items from its list: I->rec_cell, left NULL for a plain array or a list
 * none of whose items has cells (a table's records, a list item's parts). */
static deg_status record_cells(const freq *r, inst *I, size_t got)
{
    const dg_list *L = &r->lists.p[I->list1 - 1];
    size_t nf = r->plan->arrays[I->array].n_fields;
    if (!got || dg_lists_plain_array(r->plan, (size_t)I->array)) return DEG_OK;
    int cells = 0;
    for (size_t i = 0; i < got && !cells; i++) {
        size_t it = L->first + I->list_idx[i];
        cells = r->lists.item_cell[it + 1] > r->lists.item_cell[it];
    }
    if (!cells) return DEG_OK;
    I->rec_cell = malloc(got * nf * sizeof(size_t));
    unsigned char *named = malloc(nf ? nf : 1);
    if (!I->rec_cell || !named) {
        free(named);
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (table cells)");
    }
    dg_lists_columns_named(&r->lists, r->plan, (size_t)I->array, (size_t)(I->list1 - 1), named);
    for (size_t i = 0; i < got; i++)
        dg_lists_record_cells(&r->lists, r->plan, (size_t)I->array, L->first + I->list_idx[i],
                              named, I->rec_cell + i * nf);
    free(named);
    return DEG_OK;
}

/* Items of an anchored instance from its anchor (and count) logits (§12.6). */
deg_status dg_fill_resolve_anchors(const dg_ckpt *k, freq *r, int in)
{
    inst *I = &r->insts[in];
    const dg_array_plan *a = &r->plan->arrays[I->array];
    size_t n = I->r1 - I->r0;
    int64_t cap = dg_fill_anchor_cap(r, a);
    int mode = r->opt.array_decode;
    int64_t count = -1;
    if (mode != DEG_ARRAY_DECODE_THRESHOLD) {
        if (!I->has_clog) return dg_fail(DEG_ERR_INTERNAL, "fill: anchored array without count");
        count = dg_anchor_count_n(I->clog, k->temp[DG_T_COUNT], a->min_items, cap,
                                  dg_anchor_runs(I->alog, n));
    }
    size_t got = 0;
    if (I->list_probe && n > 0) {
        /* by_anchor: the list holding the anchor head's best token (ties: the first) */
        size_t best = 0;
        for (size_t t = 1; t < n; t++)
            if (I->alog[t] > I->alog[best]) best = t;
        int li = dg_lists_at(&r->lists, r->cp_tok, I->r0 + best);
        if (li >= 0) I->list1 = li + 1;
    }
    /* a list's anchors are distinct tokens of the region: at most n of them */
    I->anchor = malloc((n ? n : 1) * sizeof(size_t));
    if (!I->anchor) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (anchors)");
    if (I->list1) {
        I->list_idx = malloc((n ? n : 1) * sizeof(size_t));
        I->name_end = malloc((n ? n : 1) * sizeof(size_t));
        if (!I->list_idx || !I->name_end)
            return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (anchors)");
        int names = dg_lists_names_array(r->plan, (size_t)I->array);
        got = list_anchors(r, I, a, cap, names, n, I->anchor, I->list_idx, I->name_end);
        I->from_list = got > 0;
        if (!names) { /* it was scratch for the item ends list_anchors compares */
            free(I->name_end);
            I->name_end = NULL;
        }
        DG_TRY(record_cells(r, I, got));
    }
    if (!I->from_list && !I->list_absent) {
        DG_TRY(dg_anchor_pick(I->alog, n, mode, a->min_items, cap, count, I->anchor, &got));
        for (size_t i = 0; i < got; i++) I->anchor[i] += I->r0;
    }
    if (k->debug_raw) {
        I->raw = json_object();
        dg_fill_raw_digest(k, I->raw, I->alog, n, I->has_clog ? I->clog : NULL,
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
         * the drop rule removes its enclosing item (dg_fill_drops). */
        return dg_fail(DEG_ERR_FILL, "%s: minItems %lld: the anchor head finds only %zu item "
                       "positions in the context (%zu tokens)", a->pointer,
                       (long long)a->min_items, got, n);
    }
    return DEG_OK;
}

/* Classes [*lo, *hi] of the count head for instance I (§12.3 count). */
deg_status dg_fill_count_range(const freq *r, const inst *I, int64_t *lo, int64_t *hi)
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

deg_status dg_fill_set_count(inst *I, int64_t n)
{
    I->n_items = n;
    I->alive = malloc((size_t)(I->n_items ? I->n_items : 1));
    I->newidx = calloc((size_t)(I->n_items ? I->n_items : 1), sizeof(size_t));
    if (!I->alive || !I->newidx) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    memset(I->alive, 1, (size_t)I->n_items);
    return DEG_OK;
}

deg_status dg_fill_decode_count(const dg_ckpt *k, freq *r, job *j)
{
    inst *I = &r->insts[j->target];
    const float *h = j->h + (j->n_mark - 1) * (size_t)k->h.E;
    int64_t lo = 0, cap = 0;
    DG_TRY(dg_fill_count_range(r, I, &lo, &cap));
    float lg[DG_COUNT_MAX + 1];
    double p[DG_COUNT_MAX + 1];
    for (int c = 0; c <= DG_COUNT_MAX; c++)
        lg[c] = dg_head_dot(k->h.count_w + (size_t)c * k->h.E, h, k->h.E) + k->h.count_b[c];
    size_t n = (size_t)(cap - lo + 1);
    dg_softmax(lg + lo, n, k->temp[DG_T_COUNT], p, NULL);
    size_t b = dg_argmax_d(p, n);
    return dg_fill_set_count(I, lo + (int64_t)b);
}

void dg_fill_drops(freq *r)
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
int dg_fill_reachable(const freq *r, int in, size_t item)
{
    while (in >= 0) {
        if (!r->insts[in].alive[item]) return 0;
        item = r->insts[in].parent_item;
        in = r->insts[in].parent;
    }
    return 1;
}

/* New (renumbered) indices of the chain ending at item `item` of `in`. */
size_t dg_fill_new_chain(const freq *r, int in, size_t item, size_t *out)
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

char *dg_fill_leaf_pointer(const freq *r, const leaf *L)
{
    size_t idx[64];
    size_t n = dg_fill_new_chain(r, L->inst, L->item, idx);
    return dg_path_pointer(&r->plan->fields[L->field].path, idx, n);
}
