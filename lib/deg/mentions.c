/* mentions.c - the mention prior's verdict (mentions.h has the rule and its source). */
#include "deg/mentions.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "base/status.h"
#include "deg/keyprior.h"
#include "deg/request.h"

deg_status dg_mention_prior_load(const json_t *v, const char *jpath, dg_mention_prior *out)
{
    memset(out, 0, sizeof *out);
    if (!v || json_is_null(v)) return DEG_OK;
    json_t *b = json_object_get(v, "bonus"), *a = json_object_get(v, "absent");
    if (!json_is_object(v) || !json_is_number(b) || !json_is_number(a) ||
        json_object_size(v) != 2)
        return dg_fail(DEG_ERR_FORMAT, "%s: mention_prior must be null or {\"bonus\": number, "
                       "\"absent\": number}", jpath);
    out->bonus = json_number_value(b);
    out->absent = json_number_value(a);
    if (!(out->bonus >= 0 && out->bonus <= DG_PRIOR_MAX) ||
        !(out->absent >= 0 && out->absent <= DG_PRIOR_MAX))
        return dg_fail(DEG_ERR_FORMAT, "%s: mention_prior.bonus and .absent must be numbers in "
                       "[0, %g]", jpath, DG_PRIOR_MAX);
    out->on = 1;
    return DEG_OK;
}

static int in_list(const char *w, size_t n, const char *const *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(list[i]) == n && strncmp(w, list[i], n) == 0) return 1;
    return 0;
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char *const LINKING[] = {"is", "has", "have", "are", "was", "were", "be", "been",
                                      "does", "do", "can", "any", "its", "it", "for", "to",
                                      "in", "on", "at", "by", "with", "there", "this", "that",
                                      "and", "or", "if", "whether", "should",
                                      /* verbs of having it (0.23.0: "uses_systemd") */
                                      "uses", "contains", "includes"};
/* verbs of a text naming its subject (0.23.0): "mentions_bsd" holds when the text names
 * BSD at all, negated or not ("not BSD licensed" mentions BSD) */
static const char *const NAMING[] = {"mentions", "mention", "names", "refers", "cites", "lists"};
static const char *const PREDICATE[] = {"allowed", "included", "available", "required",
                                        "possible", "supported", "enabled", "present",
                                        "provided", "offered", "accepted", "welcome",
                                        "needed", "permitted", "given"};
/* a subject holding one of these is a count ("OneTimezone", "multipleTimezones"): the
 * count prior's business (countprior.h), no mention */
static const char *const QUANTITY[] = {"one", "two", "three", "single", "multiple", "several",
                                       "many", "more", "most", "less", "least", "each",
                                       "every", "all", "both", "only", "sole"};
static const char *const NEGATION[] = {"no", "not", "non", "none", "never", "without", "nor",
                                       "cannot", "neither", "false"};

typedef struct subject {
    int naming; /* the name asks whether the text names it (NAMING), not whether it holds */
    size_t n;
    char w[DG_MENTION_MAX_WORDS][DG_KEY_MAX_LEN + 1];
} subject;

/* The subject words of normalised words `t` (mentions.h); 0 when there is none. */
static int subject_of(const char *t, subject *s)
{
    s->n = 0;
    s->naming = 0;
    for (const char *p = t; *p;) {
        const char *e = strchr(p, ' ');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (in_list(p, n, NEGATION, N_OF(NEGATION)) || in_list(p, n, QUANTITY, N_OF(QUANTITY)))
            return 0; /* "licenseNotMentioned", "OneTimezone" */
        if (in_list(p, n, NAMING, N_OF(NAMING))) {
            s->naming = 1;
        } else if (!in_list(p, n, LINKING, N_OF(LINKING)) &&
                   !in_list(p, n, PREDICATE, N_OF(PREDICATE))) {
            if (n < 3 || s->n == DG_MENTION_MAX_WORDS) return 0;
            for (size_t i = 0; i < n; i++)
                if (isdigit((unsigned char)p[i])) return 0;
            memcpy(s->w[s->n], p, n);
            s->w[s->n++][n] = 0;
        }
        p = e ? e + 1 : p + n;
    }
    return s->n > 0;
}

/* The subject of a field (name, description) and whether it is negated. */
static int field_subject(const char *name, const char *desc, subject *s, int *negated)
{
    char t[DG_KEY_MAX_LEN * 4 + 1];
    *negated = 0;
    if (desc) {
        dg_key_norm(desc, strlen(desc), t, sizeof t);
        if (strncmp(t, "opposite ", 9) == 0) { /* "the opposite of: X" ("the", "of" dropped) */
            *negated = 1;
            return subject_of(t + 9, s);
        }
    }
    dg_key_norm(name, strlen(name), t, sizeof t);
    const char *p = t;
    if (strncmp(p, "not ", 4) == 0) p += 4, *negated = 1;
    else if (strncmp(p, "no ", 3) == 0) p += 3, *negated = 1;
    return subject_of(p, s);
}

static int is_word_byte(unsigned char c)
{
    return isalnum(c) || c >= 0x80;
}

/* A cheap necessary test before the number-folded compare (run per word of the
 * context): folding only trims a word's end (at most "ies" -> "y", then 'e', 's', 'd'),
 * so the first letters agree and the lengths differ by at most 4 bytes. */
static int could_name(const char *lw, size_t n, const char *sw)
{
    size_t m = strlen(sw);
    return lw[0] == sw[0] && (n > m ? n - m : m - n) <= 4;
}

/* Does clause word [w, w + n) name subject word sw? 1 as it is, 2 after a negating
 * prefix "un"/"non", 0 no. */
static int names_word(const char *w, size_t n, const char *sw)
{
    char lw[DG_KEY_MAX_LEN + 1];
    if (n == 0 || n > DG_KEY_MAX_LEN) return 0;
    for (size_t i = 0; i < n; i++) lw[i] = (char)tolower((unsigned char)w[i]);
    lw[n] = 0;
    if (could_name(lw, n, sw) && dg_key_match_name(sw, NULL, lw, 1) == 2) return 1;
    size_t skip = strncmp(lw, "non", 3) == 0 ? 3 : strncmp(lw, "un", 2) == 0 ? 2 : 0;
    if (skip && n - skip >= 3 && could_name(lw + skip, n - skip, sw) &&
        dg_key_match_name(sw, NULL, lw + skip, 1) == 2)
        return 2;
    return 0;
}

/* Does byte i of s start a clause boundary? *len: its bytes. */
static int boundary_at(const char *s, size_t len, size_t i, size_t *blen)
{
    *blen = 1;
    if (strchr(".!?;:,()[]|=\t\n", s[i])) return 1;
    if (s[i] == ' ' && i + 2 < len && s[i + 1] == '-' && s[i + 2] == ' ') {
        *blen = 3;
        return 1;
    }
    if ((i == 0 || !is_word_byte((unsigned char)s[i - 1])) && i + 3 <= len &&
        strncasecmp(s + i, "but", 3) == 0 && (i + 3 == len || !is_word_byte((unsigned char)s[i + 3]))) {
        *blen = 3;
        return 1;
    }
    return 0;
}

/* Verdict of clause [b, e): -1 it does not name the subject, 1 it says it holds,
 * 0 it is negated. */
static int judge_clause(const char *s, size_t b, size_t e, const subject *sub)
{
    int found[DG_MENTION_MAX_WORDS] = {0};
    int neg = 0;
    for (size_t i = b; i < e;) {
        while (i < e && !is_word_byte((unsigned char)s[i])) i++;
        size_t w0 = i;
        while (i < e && is_word_byte((unsigned char)s[i])) i++;
        size_t n = i - w0;
        if (n == 0) continue;
        char lw[16];
        if (n < sizeof lw) {
            for (size_t k = 0; k < n; k++) lw[k] = (char)tolower((unsigned char)s[w0 + k]);
            if (in_list(lw, n, NEGATION, N_OF(NEGATION))) neg = 1;
        }
        /* "isn't", "don't": ASCII apostrophe (between words), or U+2019 (a word byte) */
        if ((s[w0 + n - 1] == 'n' && i + 1 < e && s[i] == '\'' && s[i + 1] == 't') ||
            (n >= 5 && memcmp(s + i - 5, "n\xe2\x80\x99t", 5) == 0))
            neg = 1;
        for (size_t k = 0; k < sub->n; k++) {
            int m = names_word(s + w0, n, sub->w[k]);
            if (m) found[k] = 1;
            if (m == 2) neg = 1;
        }
    }
    for (size_t k = 0; k < sub->n; k++)
        if (!found[k]) return -1;
    return neg && !sub->naming ? 0 : 1;
}

/* A naming clause that is a label: the yes/no word its value starts with (after the
 * ':', '=', '|' or TAB at byte i and blanks, dg_key_yes_no), else -1. */
static int label_value(const char *s, size_t len, size_t i)
{
    if (i >= len || !strchr(":=|\t", s[i])) return -1;
    size_t w = i + 1;
    while (w < len && (s[w] == ' ' || s[w] == '\t' || s[w] == '|' || s[w] == '"')) w++;
    size_t e = w;
    while (e < len && is_word_byte((unsigned char)s[e])) e++;
    return e > w ? dg_key_yes_no(s + w, e - w) : -1;
}

/* prose: only clauses of running text count, not a label (a clause ending at ':', '=',
 * '|' or TAB) nor a "key=value" value ("RemainAfterExit=on" names no "after"). */
static dg_mention judge_subject(const subject *sub, int negated, const char *ctx, size_t len,
                                int prose)
{
    int verdict = -1;
    size_t b = 0;
    for (size_t i = 0; i <= len; i++) {
        size_t blen = 0;
        if (i < len && !boundary_at(ctx, len, i, &blen)) continue;
        if (prose && i > b && ((i < len && strchr(":=|\t", ctx[i])) || (b > 0 && ctx[b - 1] == '=')))
            b = i; /* skipped: the clause starts after this boundary (set below) */
        if (i > b) {
            int v = judge_clause(ctx, b, i, sub);
            if (v >= 0) {
                int y = label_value(ctx, len, i); /* "has_html: false", "| Has comments | oui |" */
                if (y >= 0) v = y;
                if (verdict >= 0 && v != verdict) return DG_MENTION_NONE;
                verdict = v;
            }
        }
        b = i + (blen ? blen : 1);
        if (blen > 1) i += blen - 1;
    }
    if (verdict < 0) return DG_MENTION_ABSENT;
    return (verdict ^ negated) ? DG_MENTION_HOLDS : DG_MENTION_NOT;
}

dg_mention dg_mention_judge_name(const char *name, const char *description, const char *ctx,
                                 size_t len, int *negated)
{
    subject sub;
    int neg;
    if (negated) *negated = 0;
    if (!name || !field_subject(name, description, &sub, &neg)) return DG_MENTION_NONE;
    if (negated) *negated = neg;
    return judge_subject(&sub, neg, ctx, len, 0);
}

static dg_mention judge_field(const dg_field_plan *f, const char *ctx, size_t len, int *negated,
                              int prose)
{
    subject sub;
    int neg;
    if (negated) *negated = 0;
    if (f->depth_items > 0 || f->path.n == 0 || !f->path.seg[f->path.n - 1])
        return DG_MENTION_NONE;
    /* the name's subject, else the title's ("p1" titled "Pets allowed") */
    if (!field_subject(f->path.seg[f->path.n - 1], f->description, &sub, &neg) &&
        !(f->title && field_subject(f->title, f->description, &sub, &neg)))
        return DG_MENTION_NONE;
    if (negated) *negated = neg;
    return judge_subject(&sub, neg, ctx, len, prose);
}

dg_mention dg_mention_judge(const dg_field_plan *f, const char *ctx, size_t len, int *negated)
{
    return judge_field(f, ctx, len, negated, 0);
}

dg_mention dg_mention_judge_prose(const dg_field_plan *f, const char *ctx, size_t len,
                                  int *negated)
{
    return judge_field(f, ctx, len, negated, 1);
}
