/* locator.c - the block of a document a field's description points at (locator.h). */
#include <ctype.h>
#include <string.h>

#include "deg/keyprior.h"
#include "deg/locator.h"

/* Are s[0, n) and t[0, m) the same text, case-insensitive, a run of blanks equal to
 * one blank? */
static int same_text(const char *s, size_t n, const char *t, size_t m)
{
    size_t i = 0, j = 0;
    while (i < n && j < m) {
        int bs = s[i] == ' ' || s[i] == '\t', bt = t[j] == ' ' || t[j] == '\t';
        if (bs && bt) {
            while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
            while (j < m && (t[j] == ' ' || t[j] == '\t')) j++;
            continue;
        }
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)t[j])) return 0;
        i++;
        j++;
    }
    return i == n && j == m;
}

/* A quote's form: a key line's normalised key and value, or a section header. */
typedef struct quote {
    int section;                     /* "[name]" */
    const char *v;                   /* the value (key line) or the header (section) */
    size_t vn;
    char key[DG_KEY_MAX_LEN + 1];
} quote;

/* Line [b, e) of s trimmed of blanks and '\r' into [*t0, *t1). */
static void trim(const char *s, size_t b, size_t e, size_t *t0, size_t *t1)
{
    while (b < e && (s[b] == ' ' || s[b] == '\t')) b++;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) e--;
    *t0 = b;
    *t1 = e;
}

/* Quote text s[0, n) as a locator form: 1 with *q, else 0. */
static int quote_form(const char *s, size_t n, quote *q)
{
    size_t t0, t1, k0, k1, v0, v1;
    trim(s, 0, n, &t0, &t1);
    if (t1 - t0 >= 3 && s[t0] == '[' && s[t1 - 1] == ']') {
        q->section = 1;
        q->v = s + t0;
        q->vn = t1 - t0;
        return 1;
    }
    if (!dg_keyline_split(s, t0, t1, &k0, &k1, &v0, &v1) || v1 <= v0 || v1 - v0 > DG_LOCATOR_MAX)
        return 0;
    q->section = 0;
    q->v = s + v0;
    q->vn = v1 - v0;
    return dg_key_norm(s + k0, k1 - k0, q->key, sizeof q->key) > 0;
}

/* Does line [b, e) of ctx (no '\n') say what quote q says? */
static int line_is(const quote *q, const char *ctx, size_t b, size_t e)
{
    size_t t0, t1, k0, k1, v0, v1;
    trim(ctx, b, e, &t0, &t1);
    if (q->section) return same_text(ctx + t0, t1 - t0, q->v, q->vn);
    if (!dg_keyline_split(ctx, t0, t1, &k0, &k1, &v0, &v1) || v1 <= v0) return 0;
    char key[DG_KEY_MAX_LEN + 1];
    dg_key_norm(ctx + k0, k1 - k0, key, sizeof key);
    return strcmp(key, q->key) == 0 && same_text(ctx + v0, v1 - v0, q->v, q->vn);
}

/* Is line [b, e) where q's block ends: a blank line (key line), a line opening with '['
 * (section)? */
static int block_end(const quote *q, const char *ctx, size_t b, size_t e)
{
    size_t t0, t1;
    trim(ctx, b, e, &t0, &t1);
    return q->section ? t0 < t1 && ctx[t0] == '[' : t0 == t1;
}

/* The lines of ctx q points at: how many (stops counting at 2), the first's start in
 * *at. */
static int pointed(const quote *q, const char *ctx, size_t len, size_t *at)
{
    int n = 0;
    for (size_t b = 0; b < len && n < 2;) {
        const char *nl = memchr(ctx + b, '\n', len - b);
        size_t e = nl ? (size_t)(nl - ctx) : len;
        if (line_is(q, ctx, b, e) && n++ == 0) *at = b;
        b = e + 1;
    }
    return n;
}

static const char *closer(const char *s, size_t *open_len)
{
    static const char *const pairs[][2] = {
        {"(", ")"}, {"[", "]"}, {"\"", "\""}, {"'", "'"}, {"`", "`"},
        {"\xe2\x80\x9c", "\xe2\x80\x9d"}, {"\xe2\x80\x98", "\xe2\x80\x99"}};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        size_t n = strlen(pairs[i][0]);
        if (strncmp(s, pairs[i][0], n) == 0) {
            *open_len = n;
            return pairs[i][1];
        }
    }
    return NULL;
}

int dg_locator_block(const char *desc, const char *ctx, size_t len, size_t *b0, size_t *b1)
{
    if (!desc) return 0;
    for (const char *p = desc; *p; p++) {
        size_t on;
        const char *close = closer(p, &on);
        if (!close) continue;
        const char *end = strstr(p + on, close);
        const char *nl = strchr(p + on, '\n');
        if (!end || (nl && nl < end)) continue;
        size_t n = (size_t)(end - (p + on));
        const char *t = p + on;
        if (*p == '[') { /* a section header quotes itself, brackets and all */
            t = p;
            n += 2;
        }
        quote q;
        size_t at = 0;
        if (n == 0 || n > DG_KEY_MAX_LEN + DG_LOCATOR_MAX + 4 || !quote_form(t, n, &q))
            continue;
        int hits = pointed(&q, ctx, len, &at);
        if (hits == 0) continue;
        if (hits > 1) return 0; /* the first quote that points at any is ambiguous */
        const char *l = memchr(ctx + at, '\n', len - at);
        size_t b = l ? (size_t)(l - ctx) + 1 : len;
        while (b < len) {
            const char *nx = memchr(ctx + b, '\n', len - b);
            size_t e = nx ? (size_t)(nx - ctx) : len;
            if (block_end(&q, ctx, b, e)) break;
            b = e + 1;
        }
        *b0 = at;
        *b1 = b < len ? b : len;
        return 1;
    }
    return 0;
}
