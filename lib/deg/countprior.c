/* countprior.c - count predicates of boolean fields over the lists of the
 * context (countprior.h). */
#include "deg/countprior.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

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

/* Words that end what a count scale counts: the scale's own words ("the number of
 * targets as a band", "number_of_keys_level", "which band the number of commands
 * falls in"). */
static int ends_scale_noun(const words *W, size_t i)
{
    static const char *const END[] = {"level", "levels", "band", "bands", "bucket", "buckets",
                                      "scale", "class", "tier", "bin", "range", "group",
                                      "as", "falls", "fall", "within", "per", "which", "count"};
    return ends_noun(W, i) || is_any_of(W, i, END, sizeof END / sizeof END[0]);
}

/* The noun phrase from word i (past "item"/"items"), 1..NOUN_MAX_WORDS words, into
 * noun; returns its word count (0: none). scale: a count scale's noun (it also ends
 * at the scale's words, ends_scale_noun). */
static size_t take_noun_ex(const words *W, size_t i, char *noun, size_t cap, int scale)
{
    if (is(W, i, "item") || is(W, i, "items")) i++;
    size_t o = 0, k = 0;
    noun[0] = 0;
    int (*ends)(const words *, size_t) = scale ? ends_scale_noun : ends_noun;
    for (; i < W->count && k < NOUN_MAX_WORDS && !ends(W, i); i++, k++) {
        if (o + (o ? 1 : 0) + W->n[i] + 1 > cap) break;
        if (o) noun[o++] = ' ';
        memcpy(noun + o, W->w[i], W->n[i]);
        o += W->n[i];
        noun[o] = 0;
    }
    if (i < W->count && k == NOUN_MAX_WORDS && !ends(W, i)) k = 0; /* a clause, not a noun */
    if (k == 0) noun[0] = 0;
    return k;
}

static size_t take_noun(const words *W, size_t i, char *noun, size_t cap)
{
    return take_noun_ex(W, i, noun, cap, 0);
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
    if (is(W, i, "no") || is(W, i, "without") || is(W, i, "lacks") || is(W, i, "lacking")) {
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

/* Source i (0 name, 1 title, 2 description) of field f as normalised words
 * (dg_key_norm of its first DG_KEY_DESC_MAX bytes) into norm; 0 when f has none. */
static int field_words(const dg_field_plan *f, int i, char norm[DG_KEY_DESC_MAX + 1])
{
    const char *src = i == 0 ? f->path.seg[f->path.n - 1] : i == 1 ? f->title : f->description;
    if (!src) return 0;
    size_t len = strlen(src);
    dg_key_norm(src, len < DG_KEY_DESC_MAX ? len : DG_KEY_DESC_MAX, norm, DG_KEY_DESC_MAX + 1);
    return 1;
}

size_t dg_count_preds_of(const dg_field_plan *f, dg_count_pred out[3])
{
    if (f->mode != DG_MODE_NOUL || f->depth_items > 0 || f->path.n == 0) return 0;
    size_t n = 0;
    for (int i = 0; i < 3; i++) {
        char norm[DG_KEY_DESC_MAX + 1];
        if (!field_words(f, i, norm)) continue;
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

/* The list counted for noun phrase `noun`: the list whose key matches it as a name
 * (plurals folded; exact before partial, a partial key having fewer words than the
 * noun; ties to more items, then the first), keys that are predicates skipped, tables
 * skipped (rows are not counted yet: lists.h tables), and an INI section's keys (the
 * facts "[time_zones]" states, not its zones: datagen-v2 test zone/CM/0). -1: none. */
static int counted_list(const dg_lists *ls, const char *noun)
{
    int best_m = 0, counted = -1;
    size_t noun_words = n_words(noun);
    for (size_t i = 0; i < ls->n; i++) {
        const dg_list *L = &ls->p[i];
        char kn[DG_KEY_MAX_LEN + 1];
        if (L->table || (L->members & DG_MEMBERS_SECTION) ||
            dg_count_parse_words(L->key, kn, sizeof kn) != DG_COUNT_NONE_OP)
            continue;
        int m = dg_key_match_name(noun, NULL, L->key, 1);
        /* partial: only a key of fewer words than the noun ("variables" for "result
         * variables"); "remain after exit" is no list of "after" */
        if (m == 0 || m < best_m || (m == 1 && n_words(L->key) >= noun_words)) continue;
        if (m == best_m && L->n <= ls->p[counted].n) continue; /* ties: more items */
        counted = (int)i;
        best_m = m;
    }
    return counted;
}

/* A heading line of ctx (NUL-terminated) naming `noun` without its last word
 * "section": the line's words alone, markup (# * [ ] = and a trailing ':') aside -
 * "OPTIONS" or "## Options" for "options section", "[Install]" for "install
 * section". 1 when one is written, else 0. */
static int heading_written(const char *ctx, const char *noun)
{
    size_t nl = strlen(noun);
    if (nl <= 8 || strcmp(noun + nl - 8, " section") != 0) return 0;
    char want[DG_KEY_MAX_LEN + 1];
    memcpy(want, noun, nl - 8);
    want[nl - 8] = 0;
    for (const char *l = ctx; *l;) {
        size_t e = strcspn(l, "\n");
        const char *a = l, *b = l + e;
        while (a < b && strchr(" \t#*[=", *a)) a++;
        while (b > a && strchr(" \t#*]=:\r", b[-1])) b--;
        if (b > a && (size_t)(b - a) <= DG_KEY_MAX_LEN && !memchr(a, ':', (size_t)(b - a))) {
            char w[DG_KEY_MAX_LEN + 1];
            dg_key_norm(a, (size_t)(b - a), w, sizeof w);
            if (strcmp(w, want) == 0) return 1;
        }
        l += e + (l[e] ? 1 : 0);
    }
    return 0;
}

int dg_count_judge(const dg_lists *ls, const char *ctx, const size_t *cp_byte,
                   const dg_count_pred *p, int *li)
{
    *li = -1;
    if (p->op == DG_COUNT_NONE_OP || !p->noun[0]) return -1;
    for (size_t i = 0; i < ls->n; i++) {
        const dg_list *L = &ls->p[i];
        char noun[DG_KEY_MAX_LEN + 1];
        dg_count_op kop = L->table ? DG_COUNT_NONE_OP
                                   : dg_count_parse_words(L->key, noun, sizeof noun);
        if (kop == DG_COUNT_NONE_OP) continue;
        /* a key that is itself a predicate over the same noun, stating yes/no ("Has
         * magic: ja" for noMagic): its truth bounds the count */
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
    }
    int counted = counted_list(ls, p->noun);
    if (counted < 0) {
        /* "has an OPTIONS section" of a page that writes the heading (no list of it) */
        if ((p->op == DG_COUNT_ANY || p->op == DG_COUNT_ZERO) && heading_written(ctx, p->noun))
            return dg_count_holds(p->op, 1);
        return -1;
    }
    *li = counted;
    return dg_count_holds(p->op, ls->p[counted].n);
}

/* Field f is a count scale's leaf: a score outside arrays every level of which is
 * labelled with a count range (plan.h level_count, parsed at compile). */
static int count_levels(const dg_field_plan *f)
{
    return f->mode == DG_MODE_SCORE && f->depth_items == 0 && f->path.n > 0 &&
           f->level_count != NULL;
}

size_t dg_count_scale_nouns(const dg_field_plan *f, char out[3][DG_KEY_MAX_LEN + 1])
{
    if (!count_levels(f)) return 0;
    size_t n = 0;
    for (int k = 0; k < 3; k++) {
        char norm[DG_KEY_DESC_MAX + 1];
        if (!field_words(f, k, norm)) continue;
        words W;
        split_words(norm, &W);
        size_t got = 0;
        for (size_t i = 0; i < W.count && !got; i++) {
            size_t at = is(&W, i, "number") || is(&W, i, "num") || is(&W, i, "count") ? i + 1
                        : is(&W, i, "how") && is(&W, i + 1, "many")                 ? i + 2
                                                                                    : 0;
            got = at ? take_noun_ex(&W, at, out[n], sizeof out[n], 1) : 0;
        }
        /* "extension_count", "keywordCount": the words before a last "count" */
        if (!got && W.count >= 2 && W.count <= NOUN_MAX_WORDS + 1 &&
            is(&W, W.count - 1, "count"))
            got = take_noun_ex(&W, 0, out[n], sizeof out[n], 1) == W.count - 1;
        if (got) n++;
    }
    return n;
}

int dg_count_scale_judge(const dg_lists *ls, const dg_field_plan *f, int *li, size_t *count)
{
    char nouns[3][DG_KEY_MAX_LEN + 1];
    size_t nn = dg_count_scale_nouns(f, nouns);
    *li = -1;
    *count = 0;
    if (nn == 0) return -1;
    for (size_t i = 0; i < nn && *li < 0; i++) *li = counted_list(ls, nouns[i]);
    if (*li < 0) return -1;
    *count = ls->p[*li].n;
    for (size_t i = 0; i < f->n_levels; i++)
        if (f->level_count[i][0] <= *count && *count <= f->level_count[i][1]) return (int)i;
    return -1;
}

int dg_count_wanted(const dg_plan *P)
{
    for (size_t i = 0; i < P->n_fields; i++) {
        dg_count_pred p[3];
        char nouns[3][DG_KEY_MAX_LEN + 1];
        if (dg_count_preds_of(&P->fields[i], p) || dg_count_scale_nouns(&P->fields[i], nouns))
            return 1;
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
