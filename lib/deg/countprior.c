/* countprior.c - count predicates of boolean fields over the lists of the
 * context (countprior.h). */
#include "deg/countprior.h"

#include <jansson.h>
#include <string.h>

#include "base/status.h"
#include "deg/request.h"

#define MAX_WORDS 48
#define NOUN_MAX_WORDS 3

typedef struct words {
    const char *w[MAX_WORDS];
    size_t n[MAX_WORDS];
    size_t count;
} words;

/* Split normalised text (words joined by ' ') into words; at most MAX_WORDS. */
static void split_words(const char *s, words *out)
{
    out->count = 0;
    while (*s && out->count < MAX_WORDS) {
        while (*s == ' ') s++;
        const char *b = s;
        while (*s && *s != ' ') s++;
        if (s > b) {
            out->w[out->count] = b;
            out->n[out->count++] = (size_t)(s - b);
        }
    }
}

static int is(const words *W, size_t i, const char *w)
{
    return i < W->count && W->n[i] == strlen(w) && memcmp(W->w[i], w, W->n[i]) == 0;
}

static int is_any_of(const words *W, size_t i, const char *const *ws, size_t nw)
{
    for (size_t k = 0; k < nw; k++)
        if (is(W, i, ws[k])) return 1;
    return 0;
}

/* Words that end the counted noun phrase. */
static int ends_noun(const words *W, size_t i)
{
    static const char *const END[] = {"is", "are", "listed", "given", "set", "present", "in",
                                      "on", "for", "to", "or", "and", "was", "were", "be"};
    return is_any_of(W, i, END, sizeof END / sizeof END[0]);
}

/* The noun phrase from word i (past "item"/"items"), 1..NOUN_MAX_WORDS words, into
 * noun; returns its word count (0: none). */
static size_t take_noun(const words *W, size_t i, char *noun, size_t cap)
{
    if (is(W, i, "item") || is(W, i, "items")) i++;
    size_t o = 0, k = 0;
    noun[0] = 0;
    for (; i < W->count && k < NOUN_MAX_WORDS && !ends_noun(W, i); i++, k++) {
        if (o + (o ? 1 : 0) + W->n[i] + 1 > cap) break;
        if (o) noun[o++] = ' ';
        memcpy(noun + o, W->w[i], W->n[i]);
        o += W->n[i];
        noun[o] = 0;
    }
    if (i < W->count && k == NOUN_MAX_WORDS && !ends_noun(W, i)) k = 0; /* a clause, not a noun */
    if (k == 0) noun[0] = 0;
    return k;
}

/* A quantifier at word i: its op and how many words it spans, else 0. */
static size_t quantifier_at(const words *W, size_t i, dg_count_op *op)
{
    static const char *const HAS[] = {"has", "have", "with", "contains", "lists", "list"};
    static const char *const SEVERAL[] = {"several", "multiple", "many"};
    if (is(W, i, "at") && is(W, i + 1, "most") && is(W, i + 2, "one")) {
        *op = DG_COUNT_AT_MOST_ONE;
        return 3;
    }
    if (is(W, i, "more") && is(W, i + 1, "than") && is(W, i + 2, "one")) {
        *op = DG_COUNT_SEVERAL;
        return 3;
    }
    if (is(W, i, "only") && is(W, i + 1, "one")) {
        *op = DG_COUNT_AT_MOST_ONE;
        return 2;
    }
    if (is(W, i, "single")) {
        *op = DG_COUNT_AT_MOST_ONE;
        return 1;
    }
    if (is_any_of(W, i, SEVERAL, sizeof SEVERAL / sizeof SEVERAL[0])) {
        *op = DG_COUNT_SEVERAL;
        return 1;
    }
    if (is(W, i, "no") || is(W, i, "without")) {
        *op = DG_COUNT_ZERO;
        return 1;
    }
    if (is(W, i, "any")) {
        *op = DG_COUNT_ANY;
        return 1;
    }
    if (is_any_of(W, i, HAS, sizeof HAS / sizeof HAS[0])) {
        /* "has no X" / "lists any X" / "lists at most one X": the next word's quantifier */
        size_t q = quantifier_at(W, i + 1, op);
        if (q) return 1 + q;
        if (is(W, i, "lists") || is(W, i, "list")) return 0; /* "lists X" alone: no count */
        *op = DG_COUNT_ANY;
        return 1;
    }
    return 0;
}

dg_count_op dg_count_parse_words(const char *text, char *noun, size_t cap)
{
    words W;
    split_words(text, &W);
    if (cap) noun[0] = 0;
    for (size_t i = 0; i < W.count; i++)
        if (is(&W, i, "not")) return DG_COUNT_NONE_OP;
    for (size_t i = 0; i < W.count; i++) {
        dg_count_op op;
        size_t q = quantifier_at(&W, i, &op);
        if (!q) continue;
        if (take_noun(&W, i + q, noun, cap)) return op;
        noun[0] = 0;
        return DG_COUNT_NONE_OP;
    }
    /* a name "X given" / "X listed" / "X present": any */
    if (W.count >= 2 && W.count <= NOUN_MAX_WORDS + 1 &&
        (is(&W, W.count - 1, "given") || is(&W, W.count - 1, "listed") ||
         is(&W, W.count - 1, "present")) && take_noun(&W, 0, noun, cap) == W.count - 1)
        return DG_COUNT_ANY;
    return DG_COUNT_NONE_OP;
}

size_t dg_count_preds_of(const dg_field_plan *f, dg_count_pred out[3])
{
    if (f->mode != DG_MODE_NOUL || f->depth_items > 0 || f->path.n == 0) return 0;
    const char *src[3] = {f->path.seg[f->path.n - 1], f->title, f->description};
    size_t n = 0;
    for (int i = 0; i < 3; i++) {
        if (!src[i]) continue;
        char norm[DG_KEY_DESC_MAX + 1];
        size_t len = strlen(src[i]);
        dg_key_norm(src[i], len < DG_KEY_DESC_MAX ? len : DG_KEY_DESC_MAX, norm, sizeof norm);
        out[n].op = dg_count_parse_words(norm, out[n].noun, sizeof out[n].noun);
        if (out[n].op != DG_COUNT_NONE_OP) n++;
    }
    return n;
}

int dg_count_holds(dg_count_op op, size_t n)
{
    switch (op) {
    case DG_COUNT_ZERO: return n == 0;
    case DG_COUNT_ANY: return n >= 1;
    case DG_COUNT_AT_MOST_ONE: return n <= 1;
    case DG_COUNT_SEVERAL: return n >= 2;
    default: return 0;
    }
}

/* Words of normalised text s. */
static size_t n_words(const char *s)
{
    words W;
    split_words(s, &W);
    return W.count;
}

/* Op over an item count known to lie in [lo, hi] (hi 2 = "2 or more"): 1 holds
 * for every such count, 0 for none, -1 it depends. */
static int holds_over(dg_count_op op, size_t lo, size_t hi)
{
    int all = 1, any = 0;
    for (size_t n = lo; n <= hi; n++) {
        int h = dg_count_holds(op, n);
        all &= h;
        any |= h;
    }
    return all ? 1 : any ? -1 : 0;
}

/* The counts for which a predicate key's stated truth t holds, as [*lo, *hi]. */
static void stated_range(dg_count_op op, int t, size_t *lo, size_t *hi)
{
    static const size_t R[5][2][2] = {
        {{0, 2}, {0, 2}},
        {{1, 2}, {0, 0}}, /* ZERO: false -> 1+, true -> 0 */
        {{0, 0}, {1, 2}}, /* ANY */
        {{2, 2}, {0, 1}}, /* AT_MOST_ONE */
        {{0, 1}, {2, 2}}, /* SEVERAL */
    };
    *lo = R[op][t][0];
    *hi = R[op][t][1];
}

int dg_count_judge(const dg_lists *ls, const char *ctx, const size_t *cp_byte,
                   const dg_count_pred *p, int *li)
{
    *li = -1;
    if (p->op == DG_COUNT_NONE_OP || !p->noun[0]) return -1;
    int best_m = 0, counted = -1;
    size_t noun_words = n_words(p->noun);
    for (size_t i = 0; i < ls->n; i++) {
        const dg_list *L = &ls->p[i];
        if (L->table) continue; /* rows are not counted (yet): lists.h tables */
        char noun[DG_KEY_MAX_LEN + 1];
        dg_count_op kop = dg_count_parse_words(L->key, noun, sizeof noun);
        if (kop != DG_COUNT_NONE_OP) {
            /* a key that is itself a predicate over the same noun, stating yes/no
             * ("Has magic: ja" for noMagic): its truth bounds the count */
            if (L->n != 1 || dg_key_match_name(p->noun, NULL, noun, 1) != 2) continue;
            const size_t *it = ls->item + 2 * L->first;
            int t = dg_key_yes_no(ctx + cp_byte[it[0]], cp_byte[it[1]] - cp_byte[it[0]]);
            if (t < 0) continue;
            size_t lo, hi;
            stated_range(kop, t, &lo, &hi);
            int v = holds_over(p->op, lo, hi);
            if (v >= 0) {
                *li = (int)i;
                return v;
            }
            continue;
        }
        int m = dg_key_match_name(p->noun, NULL, L->key, 1);
        /* partial: only a key of fewer words than the noun ("variables" for "result
         * variables"); "remain after exit" is no list of "after" */
        if (m == 0 || m < best_m || (m == 1 && n_words(L->key) >= noun_words)) continue;
        if (m == best_m && L->n <= ls->p[counted].n) continue; /* ties: more items */
        counted = (int)i;
        best_m = m;
    }
    if (counted < 0) return -1;
    *li = counted;
    return dg_count_holds(p->op, ls->p[counted].n);
}

int dg_count_wanted(const dg_plan *P)
{
    for (size_t i = 0; i < P->n_fields; i++) {
        dg_count_pred p[3];
        if (dg_count_preds_of(&P->fields[i], p)) return 1;
    }
    return 0;
}

/* deg.json "count_prior": absent/null = off, else {"bonus": b[, "absent": a]}, numbers
 * in [0, DG_PRIOR_MAX] (countprior.h). Errors: DEG_ERR_FORMAT. */
deg_status dg_count_prior_load(const json_t *v, const char *jpath, dg_count_prior *out)
{
    memset(out, 0, sizeof *out);
    if (!v || json_is_null(v)) return DEG_OK;
    json_t *b = json_object_get(v, "bonus"), *a = json_object_get(v, "absent");
    if (!json_is_object(v) || !json_is_number(b) || (a && !json_is_number(a)) ||
        json_object_size(v) != 1u + (a != NULL))
        return dg_fail(DEG_ERR_FORMAT, "%s: count_prior must be null or {\"bonus\": number[, "
                       "\"absent\": number]}", jpath);
    out->bonus = json_number_value(b);
    out->absent = a ? json_number_value(a) : 0.0;
    if (!(out->bonus >= 0 && out->bonus <= DG_PRIOR_MAX) ||
        !(out->absent >= 0 && out->absent <= DG_PRIOR_MAX))
        return dg_fail(DEG_ERR_FORMAT, "%s: count_prior.bonus and .absent must be numbers in "
                       "[0, %g]", jpath, DG_PRIOR_MAX);
    out->on = 1;
    return DEG_OK;
}
