/* scoreprior.c - scores the document writes as a number or a level's label (rule and
 * why: scoreprior.h). */
#include "deg/scoreprior.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "deg/parse.h"

int dg_score_level_of_number(const dg_field_plan *f, const char *s, size_t n)
{
    char out[64];
    if (n == 0 || n + 8 > sizeof out || dg_parse_number(s, n, 0, out, sizeof out) != DEG_OK)
        return -1;
    double v = strtod(out, NULL);
    if (!(v >= 0)) return -1;
    if (f->level_count) { /* quantity bands: the range holding the written number */
        double w = floor(v);
        for (size_t i = 0; i < f->n_levels; i++)
            if (w >= (double)f->level_count[i][0] &&
                (f->level_count[i][1] == SIZE_MAX || w <= (double)f->level_count[i][1]))
                return (int)i;
        return -1;
    }
    if (v != floor(v)) return -1;
    for (size_t i = 0; i < f->n_levels; i++)
        if ((double)f->levels[i] == v) return (int)i;
    return -1;
}

/* [w, w + m) occurs in [s, s + n) as whole words, ASCII case folded. */
static int has_words(const char *s, size_t n, const char *w, size_t m)
{
    for (size_t i = 0; m > 0 && i + m <= n; i++) {
        if (strncasecmp(s + i, w, m) != 0) continue;
        if ((i == 0 || !isalnum((unsigned char)s[i - 1])) &&
            (i + m == n || !isalnum((unsigned char)s[i + m])))
            return 1;
    }
    return 0;
}

int dg_score_level_of_label(const dg_field_plan *f, const char *s, size_t n)
{
    int best = -1;
    size_t best_len = 0;
    for (size_t i = 0; f->level_labels && i < f->n_levels; i++) {
        const char *l = f->level_labels[i];
        size_t lo, hi, m = l ? strlen(l) : 0;
        if (!m || dg_level_count_range(l, &lo, &hi)) continue; /* numbers are read as numbers */
        if (m > best_len && has_words(s, n, l, m)) {
            best = (int)i;
            best_len = m;
        }
    }
    return best;
}

static int clause_mark(char c)
{
    return c == '\n' || c == '.' || c == ';' || c == ':' || c == '!' || c == '?' || c == ',' ||
           c == '(' || c == ')' || c == '|' || c == '\t';
}

/* Scale words a score's name may end with ("severity_level"): dropped for key lines. */
static int is_scale_word(const char *w)
{
    static const char *const S[] = {"level", "band", "bucket", "scale", "tier", "class"};
    for (size_t i = 0; i < sizeof S / sizeof S[0]; i++)
        if (strcmp(w, S[i]) == 0) return 1;
    return 0;
}

/* Key or words `key` (normalised) name score f exactly: its name or title, or its
 * name without a trailing scale word; number folded when plural. */
static int names_score(const dg_field_plan *f, const char *key, int plural)
{
    if (f->depth_items > 0 || f->path.n == 0 || !f->path.seg[f->path.n - 1]) return 0;
    const char *seg = f->path.seg[f->path.n - 1];
    if (dg_key_match_name(seg, f->title, key, plural) == 2) return 1;
    char name[DG_KEY_MAX_LEN + 1];
    dg_key_norm(seg, strlen(seg), name, sizeof name);
    char *sp = strrchr(name, ' ');
    if (!sp || !is_scale_word(sp + 1)) return 0;
    *sp = 0;
    return dg_key_match_name(name, NULL, key, plural) == 2;
}

int dg_score_named_after(const dg_field_plan *f, const char *ctx, size_t len, size_t e)
{
    size_t a = e;
    if (a < len && ctx[a] == '-') a++;
    else {
        while (a < len && ctx[a] == ' ') a++;
        if (a == e) return 0; /* "5bedrooms" is one word */
    }
    size_t b = a;
    while (b < len && b - a < DG_KEY_MAX_LEN && !clause_mark(ctx[b])) b++;
    if (b - a >= DG_KEY_MAX_LEN) /* cut inside a word: end before it */
        while (b > a && ctx[b - 1] != ' ') b--;
    char w[DG_KEY_MAX_LEN + 1];
    dg_key_norm(ctx + a, b - a, w, sizeof w);
    /* every word prefix of the clause, shortest first */
    char *p = w;
    for (int words = 0; words < DG_KEY_MAX_WORDS && *p; words++) {
        char *sp = strchr(p, ' ');
        char keep = sp ? *sp : 0;
        if (sp) *sp = 0;
        int hit = names_score(f, w, 1);
        if (sp) *sp = keep;
        if (hit) return 1;
        if (!sp) break;
        p = sp + 1;
    }
    return 0;
}

/* The numbers of running text: a run of ASCII digits (with ',' / '.' between digit
 * groups) not inside a word, a number or a time ("v2", "1.5.3"'s parts, "10:30"), and
 * not after a sign, a dash or a slash ("-5" is no 5; "2019-2023", "4/5" read 2019, 4).
 * [*s, *e) the next one at or after *s; 0 when none is left. */
static int next_number(const char *ctx, size_t len, size_t *s, size_t *e)
{
    for (size_t i = *s; i < len; i++) {
        if (!isdigit((unsigned char)ctx[i])) continue;
        char p = i ? ctx[i - 1] : ' ';
        size_t j = i;
        while (j < len && (isdigit((unsigned char)ctx[j]) ||
                           ((ctx[j] == ',' || ctx[j] == '.') && j + 1 < len &&
                            isdigit((unsigned char)ctx[j + 1]))))
            j++;
        if (isalnum((unsigned char)p) || p == '.' || p == ',' || p == ':' || p == '_' ||
            p == '-' || p == '+' || p == '/' || /* a sign, a range's end, a denominator */
            (j < len && (isalpha((unsigned char)ctx[j]) || ctx[j] == '_' ||
                         (ctx[j] == ':' && j + 1 < len && isdigit((unsigned char)ctx[j + 1]))))) {
            i = j; /* part of a word or a time: skip the run */
            continue;
        }
        *s = i;
        *e = j;
        return 1;
    }
    return 0;
}

static void give(float *bonus, int level, float b)
{
    if (level >= 0 && bonus[level] < b) bonus[level] = b;
}

int dg_score_prior(const dg_key_prior *kp, const dg_field_plan *f, const char *ctx, size_t len,
                   const dg_keylines *kv, const size_t *cp_byte, double temp, float *lg)
{
    if (!kp || !kp->on || !(kp->score > 0) || f->n_levels == 0 || f->depth_items > 0) return -1;
    float *bonus = calloc(f->n_levels, sizeof *bonus);
    if (!bonus) return -1; /* the prior is advisory: without memory the heads decide alone */
    for (size_t i = 0; kv && i < kv->n; i++) {
        /* a line naming the leaf; else one its description names (key_prior.description:
         * "installed size, banded" reads "Installed-Size:") */
        float b_line = names_score(f, kv->p[i].key, 0) ? (float)kp->exact
                       : kp->description > 0 && dg_key_in_description(f, kv->p[i].key)
                           ? (float)kp->description
                           : 0.0f;
        if (b_line <= 0) continue;
        size_t b = cp_byte[kv->p[i].val0], e = cp_byte[kv->p[i].val1], s = b, ne;
        int lv = -1;
        if (next_number(ctx, e, &s, &ne) && s == b + strspn(ctx + b, " \t\"'"))
            lv = dg_score_level_of_number(f, ctx + s, ne - s); /* the value's leading number */
        if (lv < 0) lv = dg_score_level_of_label(f, ctx + b, e - b);
        give(bonus, lv, b_line);
    }
    size_t s = 0, e;
    while (next_number(ctx, len, &s, &e)) {
        if (dg_key_phrase_before(f, ctx, s) || dg_score_named_after(f, ctx, len, e))
            give(bonus, dg_score_level_of_number(f, ctx + s, e - s), (float)kp->score);
        s = e;
    }
    int top = -1;
    for (size_t i = 0; i < f->n_levels; i++) {
        lg[i] += (float)(bonus[i] * temp);
        if (bonus[i] > 0 && (top < 0 || bonus[i] > bonus[top])) top = (int)i;
    }
    free(bonus);
    return top;
}
