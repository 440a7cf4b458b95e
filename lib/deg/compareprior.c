/* compareprior.c - booleans that compare a written value (rule and why:
 * compareprior.h). */
#include "deg/compareprior.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "deg/parse.h"

#define CMP_MAX_WORDS 24
#define CMP_MAX_VALUE_WORDS 4 /* "is recognised by name only (no magic rules)" is no value */

typedef struct words {
    char buf[DG_KEY_DESC_MAX + 1];
    char *w[CMP_MAX_WORDS];
    size_t n;
} words;

static int is_digits(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

/* "is4" / "above150" -> "is" "4": an operator word run into its number (camelCase
 * names split no digits). */
static const char *const GLUED[] = {"is", "over", "above", "exceeds"};

static void split_words(const char *s, size_t n, words *W)
{
    /* '>' reads "over" ("true when size > 100"); dg_key_norm drops it */
    char raw[DG_KEY_DESC_MAX + 1];
    size_t o = 0;
    for (size_t i = 0; i < n && o + 7 < sizeof raw; i++) {
        if (s[i] == '>') {
            memcpy(raw + o, " over ", 6);
            o += 6;
        } else {
            raw[o++] = s[i];
        }
    }
    dg_key_norm(raw, o, W->buf, sizeof W->buf);
    W->n = 0;
    char *save = NULL;
    for (char *t = strtok_r(W->buf, " ", &save); t && W->n < CMP_MAX_WORDS;
         t = strtok_r(NULL, " ", &save)) {
        W->w[W->n++] = t;
    }
}

static int word_is(const words *W, size_t i, const char *w)
{
    return i < W->n && strcmp(W->w[i], w) == 0;
}

/* Words [a, b) of W joined by ' ' into out (cap bytes). */
static void join(const words *W, size_t a, size_t b, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t i = a; i < b; i++) {
        size_t l = strlen(W->w[i]);
        if (o + l + 2 > cap) break;
        if (o) out[o++] = ' ';
        memcpy(out + o, W->w[i], l);
        o += l;
        out[o] = 0;
    }
}

/* T from words [a, W->n): "100", "1 5" (1.5, 1_5), else 0. */
static int threshold_at(const words *W, size_t a, double *t)
{
    if (a >= W->n || !is_digits(W->w[a]) || a + 2 < W->n) return 0;
    char num[2 * DG_KEY_MAX_LEN + 2];
    if (a + 1 < W->n) {
        if (!is_digits(W->w[a + 1])) return 0;
        snprintf(num, sizeof num, "%s.%s", W->w[a], W->w[a + 1]);
    } else {
        snprintf(num, sizeof num, "%s", W->w[a]);
    }
    *t = strtod(num, NULL);
    return 1;
}

/* The operator at word i: 1 equals ("equals", "is"), 2 greater ("greater than",
 * "over", "above", "exceeds", "more than"); *len its words. */
static int op_at(const words *W, size_t i, size_t *len)
{
    *len = 1;
    if (word_is(W, i, "equals") || word_is(W, i, "is")) return 1;
    if (word_is(W, i, "over") || word_is(W, i, "above") || word_is(W, i, "exceeds")) return 2;
    if ((word_is(W, i, "greater") || word_is(W, i, "more")) && word_is(W, i + 1, "than")) {
        *len = 2;
        return 2;
    }
    return 0;
}

/* Words [a, b) can be a key: not a pronoun ("it is not a module") nor a count
 * ("at most one item of formats is listed": countprior.h). */
static int plain_key(const words *W, size_t a, size_t b)
{
    static const char *const NOT_KEY[] = {"it", "this", "that", "there", "at", "any", "no",
                                          "more", "several", "multiple", "single", "only",
                                          "many", "one", "none", "each", "every", "all"};
    if (b <= a) return 0;
    for (size_t i = 0; i < sizeof NOT_KEY / sizeof NOT_KEY[0]; i++)
        if (strcmp(W->w[a], NOT_KEY[i]) == 0) return 0;
    return 1;
}

/* A value word that states presence, not a value ("X is listed / given / set"). */
static int state_word(const char *w)
{
    static const char *const STATE[] = {"listed", "given", "set", "present", "written",
                                        "missing", "empty", "absent", "defined", "known"};
    for (size_t i = 0; i < sizeof STATE / sizeof STATE[0]; i++)
        if (strcmp(w, STATE[i]) == 0) return 1;
    return 0;
}

/* "K <op> V" over words [a, W->n): 1 with *out. */
static int read_relation(const words *W, size_t a, dg_cmp_pred *out)
{
    for (size_t i = a + 1; i + 1 < W->n; i++) {
        size_t len;
        int op = op_at(W, i, &len);
        if (!op) continue;
        size_t v = i + len;
        if (op == 1 && word_is(W, v, "not")) { /* "K is not V" */
            out->negated = !out->negated;
            v++;
        }
        if (v >= W->n || !plain_key(W, a, i)) return 0;
        join(W, a, i, out->key, sizeof out->key);
        if (op == 1) {
            if (state_word(W->w[v]) && v + 1 == W->n) return 0; /* "X is listed": a count */
            if (W->n - v > CMP_MAX_VALUE_WORDS) return 0; /* a clause, not a value */
            out->op = DG_CMP_EQUALS;
            join(W, v, W->n, out->value, sizeof out->value);
            return 1;
        }
        out->op = DG_CMP_GREATER;
        return threshold_at(W, v, &out->threshold);
    }
    return 0;
}

int dg_cmp_parse(const char *s, size_t n, int is_name, dg_cmp_pred *out)
{
    memset(out, 0, sizeof *out);
    words *W = malloc(sizeof *W);
    if (!W) return 0;
    split_words(s, n, W);
    /* an operator glued to its number: "is4", "above150" */
    words *G = malloc(sizeof *G);
    if (!G) {
        free(W);
        return 0;
    }
    G->n = 0;
    size_t o = 0;
    for (size_t i = 0; i < W->n && G->n + 2 <= CMP_MAX_WORDS; i++) {
        const char *t = W->w[i];
        size_t parts = 1, cut = 0;
        for (size_t g = 0; g < sizeof GLUED / sizeof GLUED[0]; g++) {
            size_t l = strlen(GLUED[g]);
            if (strncmp(t, GLUED[g], l) == 0 && is_digits(t + l)) {
                parts = 2;
                cut = l;
            }
        }
        for (size_t p = 0; p < parts; p++) {
            const char *part = parts == 2 ? (p ? t + cut : t) : t;
            size_t l = parts == 2 && !p ? cut : strlen(part);
            if (o + l + 1 > sizeof G->buf) break;
            memcpy(G->buf + o, part, l);
            G->buf[o + l] = 0;
            G->w[G->n++] = G->buf + o;
            o += l + 1;
        }
    }
    free(W);
    size_t a = 0;
    int ok = 0;
    if (word_is(G, 0, "opposite")) { /* datagen's and users' "the opposite of: ..." */
        out->negated = 1;
        a = 1;
    } else if (is_name && (word_is(G, 0, "not") || word_is(G, 0, "no"))) {
        out->negated = 1;
        a = 1;
    }
    int is_form = 0;
    if (word_is(G, a, "whether") || word_is(G, a, "if") || word_is(G, a, "when")) a++;
    else if (word_is(G, a, "true") && (word_is(G, a + 1, "if") || word_is(G, a + 1, "when")))
        a += 2;
    else
        is_form = !is_name && word_is(G, a, "is") && a + 2 < G->n;
    if (is_form) {
        /* "is [the] K V?" or "is [the] K greater than T?" */
        size_t b = a + 1, len;
        size_t i = b + 1;
        while (i < G->n && op_at(G, i, &len) != 2) i++;
        join(G, b, i, out->key, sizeof out->key); /* "= V": the split is found on the lines */
        out->op = i < G->n ? DG_CMP_GREATER : DG_CMP_EQUALS;
        ok = i < G->n ? threshold_at(G, i + len, &out->threshold) : 1;
    } else {
        ok = read_relation(G, a, out);
    }
    free(G);
    /* a key word longer than the key buffer joins to nothing: no comparison (fuzz: 66
     * digits, "</td>", "3332" read as a comparison with an empty key); nor is a value
     * ("x is {333...3}": 73 digits, scripts/fuzz lists on 0.24.0), but for "is [the] K
     * V?", whose split is found on the lines */
    if (!ok || !out->key[0] || (!is_form && out->op == DG_CMP_EQUALS && !out->value[0])) {
        memset(out, 0, sizeof *out);
        ok = 0;
    }
    return ok;
}

/* 1 when normalised words s end with the words of t (*cut: where they start). */
static int ends_with_words(const char *s, const char *t, size_t *cut)
{
    size_t ls = strlen(s), lt = strlen(t);
    if (lt == 0 || lt >= ls || strcmp(s + ls - lt, t) != 0 || s[ls - lt - 1] != ' ') return 0;
    *cut = ls - lt - 1;
    return 1;
}

int dg_cmp_pred_of(const dg_field_plan *f, dg_cmp_pred *out)
{
    if (f->depth_items > 0 || f->path.n == 0 || !f->path.seg[f->path.n - 1]) return 0;
    const char *seg = f->path.seg[f->path.n - 1];
    dg_cmp_pred named;
    int has_name = (f->title && dg_cmp_parse(f->title, strlen(f->title), 1, &named)) ||
                   dg_cmp_parse(seg, strlen(seg), 1, &named);
    if (f->description && dg_cmp_parse(f->description, strlen(f->description), 0, out)) {
        size_t cut;
        /* "is the K V?" with V named: "Is the top-level type application?" for
         * category_is_application reads K "top level type" */
        if (out->op == DG_CMP_EQUALS && !out->value[0] && has_name &&
            named.op == DG_CMP_EQUALS && ends_with_words(out->key, named.value, &cut)) {
            memcpy(out->value, named.value, sizeof out->value);
            out->key[cut] = 0;
        }
        return 1;
    }
    if (has_name) *out = named;
    return has_name;
}

/* The leading number of value bytes [b, e): 1 with *v. */
static int leading_number(const char *ctx, size_t b, size_t e, double *v)
{
    size_t t = b; /* digits, ',' or '.' between digits; then no letter ("22/tcp": 22) */
    while (t < e && (isdigit((unsigned char)ctx[t]) ||
                     ((ctx[t] == ',' || ctx[t] == '.') && t > b && t + 1 < e &&
                      isdigit((unsigned char)ctx[t + 1]))))
        t++;
    if (t < e && isalpha((unsigned char)ctx[t])) return 0;
    char out[64];
    if (t == b || t - b + 8 > sizeof out || dg_parse_number(ctx + b, t - b, 0, out, sizeof out))
        return 0;
    *v = strtod(out, NULL);
    return 1;
}

/* Normalised words w as a truth value: 1 (yes, true, on, enabled, ...), 0 (no, false,
 * off, disabled, ...; dg_key_yes_no's seven languages too), -1 neither. */
static int truth_of(const char *w)
{
    static const char *const ON[] = {"on", "enabled", "enable", "active"};
    static const char *const OFF[] = {"off", "disabled", "disable", "inactive"};
    for (size_t i = 0; i < sizeof ON / sizeof ON[0]; i++)
        if (strcmp(w, ON[i]) == 0) return 1;
    for (size_t i = 0; i < sizeof OFF / sizeof OFF[0]; i++)
        if (strcmp(w, OFF[i]) == 0) return 0;
    return dg_key_yes_no(w, strlen(w));
}

/* Written value v equals compared value V (both normalised): the same words, or the
 * same truth ("RemainAfterExit=yes" is "enabled", "DefaultDependencies=no" is "off"). */
static int same_value(const char *v, const char *V)
{
    if (strcmp(v, V) == 0) return 1;
    int a = truth_of(v), b = truth_of(V);
    return a >= 0 && a == b;
}

/* Running-text statements "[The] K is X." (a clause of its own, K exactly):
 * 1 when one has X = V, 0 when one has another X, -1 when none is written. */
static int judge_prose(const dg_cmp_pred *p, const char *key, const char *value, const char *ctx)
{
    if (p->op != DG_CMP_EQUALS) return -1;
    size_t kl = strlen(key);
    int seen = 0;
    for (const char *c = ctx; *c;) {
        size_t e = 0; /* to a sentence end: '.' only before a blank or the end ("1.2.3") */
        while (c[e] && !strchr(";!?\n", c[e]) &&
               !(c[e] == '.' && (!c[e + 1] || c[e + 1] == ' ' || c[e + 1] == '\n')))
            e++;
        char w[DG_KEY_MAX_LEN + 1];
        if (e <= DG_KEY_MAX_LEN) {
            dg_key_norm(c, e, w, sizeof w);
            if (strncmp(w, key, kl) == 0 && strncmp(w + kl, " is ", 4) == 0) {
                seen = 1;
                if (same_value(w + kl + 4, value)) return 1;
            }
        }
        c += e + (c[e] ? 1 : 0);
    }
    return seen ? 0 : -1;
}

/* Judge key/value (closed) on the lines whose key names key at strength `want`
 * (2 exact, 1 partial): 1 / 0 / -1 as dg_cmp_judge. */
static int judge_at(const dg_cmp_pred *p, const char *key, const char *value, const char *ctx,
                    const dg_keylines *kv, const size_t *cp_byte, int want)
{
    int seen = 0;
    /* "true if the package is essential" beside an "Essential:" line asks that line,
     * not whether "Package:" reads "essential" */
    for (size_t i = 0; p->op == DG_CMP_EQUALS && i < kv->n; i++)
        if (dg_key_match_name(value, NULL, kv->p[i].key, 1) == 2) return -1;
    for (size_t i = 0; i < kv->n; i++) {
        if (dg_key_match_name(key, NULL, kv->p[i].key, 1) != want ||
            (kv->p[i].exact_only && want != 2)) /* a qualified key: exact only */
            continue;
        size_t b = cp_byte[kv->p[i].val0], e = cp_byte[kv->p[i].val1];
        if (p->op == DG_CMP_EQUALS) {
            char v[DG_KEY_MAX_LEN + 1];
            dg_key_norm(ctx + b, e - b, v, sizeof v);
            if (!v[0]) continue;
            seen = 1;
            if (same_value(v, value)) return 1;
        } else {
            double x;
            if (!leading_number(ctx, b, e, &x)) continue;
            seen = 1;
            if (x > p->threshold) return 1;
        }
    }
    return seen ? 0 : -1;
}

int dg_cmp_judge(const dg_cmp_pred *p, const char *ctx, const dg_keylines *kv,
                 const size_t *cp_byte, int *exact)
{
    *exact = 0;
    if (p->op == DG_CMP_NONE || !kv) return -1;
    for (int want = 2; want >= 1; want--) {
        if (p->op == DG_CMP_GREATER || p->value[0]) {
            int t = judge_at(p, p->key, p->value, ctx, kv, cp_byte, want);
            if (t < 0 && want == 2) t = judge_prose(p, p->key, p->value, ctx);
            /* a partial key tells only when it holds ("Type=" of a unit's [Mount]
             * section is no "unit type"; dev: partial denials right 3 of 7) */
            if (t == 1 || (t == 0 && want == 2)) {
                *exact = want == 2;
                return t;
            }
            continue;
        }
        /* "is K V" with the split open: the longest K some line names (at this
         * strength) and V the rest; only a line holding V tells (the split can be
         * wrong: "is the package Architecture: all?" is not K "package") */
        words W;
        split_words(p->key, strlen(p->key), &W);
        for (size_t j = W.n; j-- > 1;) {
            char key[DG_KEY_MAX_LEN + 1], value[DG_KEY_MAX_LEN + 1];
            join(&W, 0, j, key, sizeof key);
            join(&W, j, W.n, value, sizeof value);
            if (judge_at(p, key, value, ctx, kv, cp_byte, want) == 1) {
                *exact = want == 2;
                return 1;
            }
        }
    }
    return -1;
}

double dg_cmp_prior(const dg_key_prior *kp, const dg_field_plan *f, const char *ctx,
                    const dg_keylines *kv, const size_t *cp_byte)
{
    dg_cmp_pred p;
    if (!kp || !kp->on || !(kp->compare > 0) || !dg_cmp_pred_of(f, &p)) return 0.0;
    int exact, t = dg_cmp_judge(&p, ctx, kv, cp_byte, &exact);
    if (t < 0) return 0.0;
    double b = exact ? kp->compare : kp->compare / 2;
    return (t != p.negated) ? b : -b;
}
