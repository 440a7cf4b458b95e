/* fill_distinct.c - one span, one field (deg.json "span_distinct"): no two
 * extract leaves of one object keep the same span of the context.
 *
 * Why: a leaf the heads are unsure of takes the span a sibling reads ("curl" for
 * a package's name, homepage and section; a time zone's name for its zone,
 * coordinates and area). Of v13's extract leaves on the development sets that
 * shared their span with a sibling scored higher, 21 of 213 were right (libdeg
 * 0.15.0 plus 0.16.0's lists: union10 val, dev5, dev4, devwl).
 *
 * The rule: per object (the top level, or one item of one array instance), leaves
 * claim their spans by their span's log-probability (ties: plan order). A leaf
 * whose span an earlier one claimed (meta span_taken_by: that leaf's pointer)
 * takes its alternative (the best other valid span not overlapping its own,
 * fill_extract.c) when no leaf of the object holds it and it beats the null
 * outcome by the null margin, else null (or, for an optional non-nullable field,
 * no key; meta null_reason "not_found"). A required, non-nullable leaf (on_null
 * forbid) has no null: it takes any free alternative, else it keeps the span and
 * an optional holder gives it up instead (a time zone's required name over its
 * optional area). (Claiming every required leaf's span first was tried: unsure
 * required fields then took confident optional ones' spans, dev5 726 -> 719
 * fields right.)
 *
 * Items too: two items of one array instance whose required (forbid) leaf of one
 * field reads the same span are one item read twice (index mode's "ITEM 2 of"
 * fork landing on item 1's text: "oa2", "oa2", "oa2"); the later item fails and
 * dg_fill_drops drops it (meta "dropped"). Of v13's array items on the same sets
 * that repeated an earlier item's span, 5 of 183 were right and 137 were beyond
 * the gold array's length.
 *
 * Pure functions of one request's leaves: batch independent, deterministic. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/status.h"
#include "deg/fill_internal.h"

typedef struct claim {
    size_t leaf;
    int inst;
    size_t item;
    double lp;
} claim;

static int cmp_claim(const void *x, const void *y)
{
    const claim *a = x, *b = y;
    if (a->inst != b->inst) return a->inst < b->inst ? -1 : 1;
    if (a->item != b->item) return a->item < b->item ? -1 : 1;
    if (a->lp != b->lp) return a->lp > b->lp ? -1 : 1;
    return a->leaf < b->leaf ? -1 : a->leaf > b->leaf;
}

/* Is leaf L's field required and not nullable (no null to fall back to)? */
static int forbid(const freq *r, const leaf *L)
{
    return r->plan->fields[L->field].on_null == DG_ON_NULL_FORBID;
}

/* Does a leaf of c[from, to) hold span [s0, s1)? */
static int taken(const freq *r, const claim *c, size_t from, size_t to, size_t s0, size_t s1,
                 size_t *by)
{
    for (size_t i = from; i < to; i++) {
        const leaf *L = &r->leaves[c[i].leaf];
        if (L->has_span && L->s0 == s0 && L->s1 == s1) {
            *by = c[i].leaf;
            return 1;
        }
    }
    return 0;
}

/* Does leaf L (c[from, to) its object's leaves) have an alternative no leaf of the
 * object holds? */
static int alt_free(const freq *r, const leaf *L, const claim *c, size_t from, size_t to)
{
    size_t other;
    return L->alt && !taken(r, c, from, to, L->a0, L->a1, &other);
}

/* Leaf L gives up its span to leaf `by`: its alternative, else null (a required,
 * non-nullable leaf without a free alternative keeps the span). The alternative
 * must be no span a leaf of the object holds (c[from, to)), before or after L in
 * claim order (one leaf's move never takes a later sibling's span), and beat the
 * null outcome by the null margin unless L has no null. */
static deg_status yield(const dg_ckpt *k, freq *r, leaf *L, const leaf *by, double margin,
                        const claim *c, size_t from, size_t to)
{
    const dg_field_plan *f = &r->plan->fields[L->field];
    int no_null = forbid(r, L);
    char *ptr = dg_fill_leaf_pointer(r, by);
    if (!ptr) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    json_object_set_new(L->meta, "span_taken_by", json_string(ptr));
    free(ptr);
    if ((no_null || L->alt_lp >= L->null_lp + margin) && alt_free(r, L, c, from, to)) {
        json_decref(L->value);
        L->value = L->alt;
        L->alt = NULL;
        L->s0 = L->a0;
        L->s1 = L->a1;
        L->lp = L->alt_lp;
        json_object_set_new(L->meta, "confidence",
                            json_real(dg_fill_extract_confidence(k, L->lp)));
        json_object_set_new(L->meta, "span", json_pack("[I,I]", (json_int_t)L->s0,
                                                       (json_int_t)L->s1));
        json_object_del(L->meta, "assumed_offset");
        return DEG_OK;
    }
    if (no_null) return DEG_OK;
    json_decref(L->value);
    L->value = f->on_null == DG_ON_NULL_NULL ? json_null() : NULL;
    L->has_span = 0;
    json_object_set_new(L->meta, "confidence",
                        json_real(dg_fill_extract_confidence(k, L->null_lp)));
    json_object_set_new(L->meta, "span", json_null());
    json_object_set_new(L->meta, "null_reason", json_string("not_found"));
    json_object_del(L->meta, "assumed_offset");
    return DEG_OK;
}

deg_status dg_fill_distinct_spans(const dg_ckpt *k, freq *r)
{
    if (!k->span_distinct) return DEG_OK;
    claim *c = malloc((r->n_leaves ? r->n_leaves : 1) * sizeof *c);
    if (!c) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (span_distinct)");
    size_t n = 0;
    for (size_t i = 0; i < r->n_leaves; i++) {
        const leaf *L = &r->leaves[i];
        if (L->has_span) c[n++] = (claim){i, L->inst, L->item, L->lp};
    }
    qsort(c, n, sizeof *c, cmp_claim);
    double margin = r->opt.has_null_margin ? r->opt.null_margin : k->null_margin;
    deg_status st = DEG_OK;
    for (size_t g = 0; g < n && st == DEG_OK;) {
        size_t end = g;
        while (end < n && c[end].inst == c[g].inst && c[end].item == c[g].item) end++;
        /* c[g, i) hold their spans; leaf i claims or yields */
        for (size_t i = g; i < end && st == DEG_OK; i++) {
            leaf *L = &r->leaves[c[i].leaf];
            size_t by;
            if (!taken(r, c, g, i, L->s0, L->s1, &by)) continue;
            leaf *B = &r->leaves[by];
            /* a required leaf with nowhere to go keeps the span: an optional holder
             * gives it up instead */
            if (forbid(r, L) && !forbid(r, B) && !alt_free(r, L, c, g, end))
                st = yield(k, r, B, L, margin, c, g, end);
            else
                st = yield(k, r, L, B, margin, c, g, end);
        }
        g = end;
    }
    free(c);
    return st;
}

typedef struct item_span {
    size_t leaf, field, s0, s1, item;
    int inst;
} item_span;

/* Items by (instance, field, span, item): one span's repeats are adjacent, the
 * first item first. */
static int cmp_items(const void *x, const void *y)
{
    const item_span *a = x, *b = y;
    if (a->inst != b->inst) return a->inst < b->inst ? -1 : 1;
    if (a->field != b->field) return a->field < b->field ? -1 : 1;
    if (a->s0 != b->s0) return a->s0 < b->s0 ? -1 : 1;
    if (a->s1 != b->s1) return a->s1 < b->s1 ? -1 : 1;
    return (a->item > b->item) - (a->item < b->item);
}

deg_status dg_fill_distinct_items(const dg_ckpt *k, freq *r)
{
    if (!k->span_distinct) return DEG_OK;
    item_span *v = malloc((r->n_leaves ? r->n_leaves : 1) * sizeof *v);
    if (!v) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (span_distinct)");
    size_t n = 0;
    for (size_t i = 0; i < r->n_leaves; i++) {
        const leaf *L = &r->leaves[i];
        if (L->has_span && L->inst >= 0 && forbid(r, L))
            v[n++] = (item_span){i, L->field, L->s0, L->s1, L->item, L->inst};
    }
    qsort(v, n, sizeof *v, cmp_items);
    for (size_t i = 1; i < n; i++) {
        const item_span *a = &v[i - 1], *b = &v[i];
        if (a->inst != b->inst || a->field != b->field || a->s0 != b->s0 || a->s1 != b->s1)
            continue;
        leaf *L = &r->leaves[b->leaf];
        L->failed = 1; /* dg_fill_drops drops its item */
        char *ptr = dg_path_pointer(&r->plan->fields[L->field].path, L->idx, L->n_idx);
        if (asprintf(&L->fail_msg, "%s holds the span an earlier item's does (%zu..%zu)",
                     ptr ? ptr : "?", b->s0, b->s1) < 0)
            L->fail_msg = NULL;
        free(ptr);
    }
    free(v);
    return DEG_OK;
}
