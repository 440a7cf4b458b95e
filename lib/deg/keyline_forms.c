/* keyline_forms.c - key lines that well-known text forms state without a "Key: value"
 * line (keyprior.h): a Debian changelog's entry header and trailer, copyright notices;
 * XML leaf elements are keyline_xml.c's. (A rendered man
 * page's headings over indented lines were tried in 0.23.0 and left out: "SYNOPSIS"
 * gained nothing, its value's trailing "..." is trimmed, and the "DESCRIPTION" line
 * took a `summary` described as "the NAME line's description".) */
#include "deg/keyprior.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "deg/lists_scan.h"

/* Append key line `key` over bytes [v0, v1) of ctx, counting on from cursor c
 * (dg_keylines_add_on; each form's lines come in document order). Returns 0 or -1 on
 * out of memory. */
typedef struct cursor {
    size_t b, cp;
} cursor;

static int add(const char *ctx, cursor *c, const char *key, size_t v0, size_t v1,
               dg_keylines *ix, size_t *cap)
{
    return dg_keylines_add_on(ctx, &c->b, &c->cp, key, strlen(key), v0, v1, ix, cap);
}

/* Bytes [*x, *y) of the run of non-blank bytes at i. */
static void token(const char *s, size_t e, size_t i, size_t *x, size_t *y)
{
    *x = i;
    while (i < e && s[i] != ' ' && s[i] != '\t') i++;
    *y = i;
}

/* Line [b, e) as a Debian changelog entry header "PACKAGE (VERSION) DISTRIBUTIONS;
 * urgency=URGENCY" (deb-changelog(5)): 1 with the bytes of the four values in v[0..7]. */
static int entry_header(const char *s, size_t b, size_t e, size_t *v)
{
    size_t p0, p1;
    token(s, e, b, &p0, &p1);
    if (p1 == p0 || p1 + 2 >= e || s[p1] != ' ' || s[p1 + 1] != '(') return 0;
    for (size_t i = p0; i < p1; i++) /* a source package name: policy 5.6.1 */
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || strchr("+-.", s[i])))
            return 0;
    size_t v0 = p1 + 2, v1 = v0;
    while (v1 < e && s[v1] != ')' && s[v1] != ' ') v1++;
    if (v1 >= e || s[v1] != ')' || v1 == v0 || v1 + 2 >= e || s[v1 + 1] != ' ') return 0;
    size_t d0 = v1 + 2, semi = d0;
    while (semi < e && s[semi] != ';') semi++;
    if (semi >= e || semi == d0) return 0;
    size_t u0 = semi + 1;
    while (u0 < e && s[u0] == ' ') u0++;
    if (e - u0 < 9 || memcmp(s + u0, "urgency=", 8) != 0) return 0;
    u0 += 8;
    size_t u1 = u0;
    while (u1 < e && isalpha((unsigned char)s[u1])) u1++;
    if (u1 == u0) return 0;
    size_t out[8] = {p0, p1, v0, v1, d0, semi, u0, u1};
    memcpy(v, out, sizeof out);
    return 1;
}

/* The first Debian changelog entry (deb-changelog(5)): its header (entry_header, the
 * first line of the text that is one) as the key lines package, version, distribution
 * and urgency, and its trailer " -- MAINTAINER <EMAIL>  DATE" as maintainer and date.
 * The first entry only: it is the package's current state, the one fields outside
 * arrays ask for. Why: the header states four facts on one line with no key before
 * them; the heads read the next entry's version and a bug number for the distribution
 * (a new user's check, libdeg 0.22.0). */
static int changelog(const char *s, size_t len, dg_keylines *ix, size_t *cap)
{
    size_t v[8], e = 0, b = 0;
    for (;; b = e + 1) {
        if (b >= len) return 0;
        e = dg_lscan_line_end(s, len, b);
        if (entry_header(s, b, e, v)) break;
    }
    cursor c = {0, 0};
    if (add(s, &c, "package", v[0], v[1], ix, cap) < 0 ||
        add(s, &c, "version", v[2], v[3], ix, cap) < 0 ||
        add(s, &c, "distribution", v[4], v[5], ix, cap) < 0 ||
        add(s, &c, "urgency", v[6], v[7], ix, cap) < 0)
        return -1;
    /* the trailer: the first " -- " line after the header */
    for (size_t lb = e + 1; lb < len;) {
        size_t le = dg_lscan_line_end(s, len, lb);
        if (le - lb > 4 && memcmp(s + lb, " -- ", 4) == 0) {
            const char *gt = memchr(s + lb, '>', le - lb);
            if (!gt) return 0;
            size_t m1 = (size_t)(gt - s) + 1, t0 = m1;
            while (t0 < le && s[t0] == ' ') t0++;
            size_t t1 = le;
            while (t1 > t0 && (s[t1 - 1] == ' ' || s[t1 - 1] == '\r')) t1--;
            if (add(s, &c, "maintainer", lb + 4, m1, ix, cap) < 0 ||
                add(s, &c, "date", t0, t1, ix, cap) < 0)
                return -1;
            return 0;
        }
        lb = le + 1;
    }
    return 0;
}

/* 1 when [i, e) is "HOLDER YEARS" ("Copyright (C) Sun Microsystems 2008", "(C) Copyright
 * IBM Corp. 2001, 2004"): the holder (letters first) and last words of 4-digit years 1xxx
 * or 2xxx parted by ", " or "-", with the years' bytes in v[0..1]
 * and the holder's in v[2..3]. */
static int years_after(const char *s, size_t i, size_t e, size_t *v)
{
    while (e > i && strchr(" \t\r.*/", s[e - 1])) e--; /* and a comment's close */
    if (e - i < 7 || !isalpha((unsigned char)s[i])) return 0;
    size_t y = e, n = 0; /* the years: "2008", "2001, 2004", "2001-2004" */
    while (y >= i + 6 && (s[y - 4] == '1' || s[y - 4] == '2') && isdigit((unsigned char)s[y - 3]) &&
           isdigit((unsigned char)s[y - 2]) && isdigit((unsigned char)s[y - 1]) &&
           !isalnum((unsigned char)s[y - 5])) {
        y -= 4;
        n++;
        size_t g = y;
        while (g > i && strchr(" ,-", s[g - 1])) g--;
        if (g == y || g < i + 6 || !isdigit((unsigned char)s[g - 1])) break;
        y = g;
    }
    if (n == 0 || s[y - 1] != ' ') return 0;
    size_t h1 = y - 1;
    while (h1 > i && strchr(" ,", s[h1 - 1])) h1--;
    size_t out[4] = {y, e, i, h1};
    memcpy(v, out, sizeof out);
    return h1 - i >= 2;
}

/* Line [b, e) as a copyright notice "[comment marks] [Portions] Copyright [(c)|©] YEARS
 * HOLDER" or "... HOLDER YEAR" (years_after)
 * (YEARS: 4-digit years with '-', ',', blanks between: "2005-2010, 2012"): 1 with the
 * years' bytes in v[0..1] and the holder's in v[2..3] (up to a " <" e-mail, " -", "All
 * rights reserved" or the line's end; trailing '.' ',' left out). */
static int notice(const char *s, size_t b, size_t e, size_t *v)
{
    size_t i = b;
    while (i < e && strchr(" \t#*/;%!-", s[i])) i++;
    if (e - i > 9 && strncasecmp(s + i, "portions ", 9) == 0) i += 9; /* "Portions Copyright" */
    if (e - i > 4 && strncasecmp(s + i, "(c) ", 4) == 0) i += 4;       /* "(C) Copyright IBM" */
    if (e - i < 15 || strncasecmp(s + i, "copyright", 9) != 0 || s[i + 9] != ' ') return 0;
    i += 10;
    for (;;) { /* "(c)", "(C)", "©" */
        while (i < e && s[i] == ' ') i++;
        if (e - i >= 3 && (strncasecmp(s + i, "(c)", 3) == 0)) i += 3;
        else if (e - i >= 2 && (unsigned char)s[i] == 0xC2 && (unsigned char)s[i + 1] == 0xA9) i += 2;
        else break;
    }
    size_t y0 = i, y1 = i;
    while (i + 4 <= e && isdigit((unsigned char)s[i]) && isdigit((unsigned char)s[i + 1]) &&
           isdigit((unsigned char)s[i + 2]) && isdigit((unsigned char)s[i + 3]) &&
           (i + 4 == e || !isalnum((unsigned char)s[i + 4]))) {
        i += 4;
        y1 = i;
        while (i < e && strchr(" \t,-", s[i])) i++;
    }
    if (y1 == y0) return years_after(s, i, e, v);
    if (i >= e) return 0;
    if (e - i > 3 && strncasecmp(s + i, "by ", 3) == 0) i += 3;
    size_t h0 = i, h1 = i;
    while (h1 < e && !(s[h1] == '<' || (s[h1] == ' ' && h1 + 1 < e && s[h1 + 1] == '-') ||
                       (e - h1 >= 19 && strncasecmp(s + h1, "all rights reserved", 19) == 0)))
        h1++;
    while (h1 > h0 && strchr(" \t\r.,", s[h1 - 1])) h1--;
    if (h1 - h0 < 2 || !isalpha((unsigned char)s[h0])) return 0;
    size_t out[4] = {y0, y1, h0, h1};
    memcpy(v, out, sizeof out);
    return 1;
}

/* Copyright notices (notice) as the key lines "copyright year" (the years) and
 * "copyright holder" (also as "holder": a field named so reads it exactly, a partial
 * match's bonus did not outweigh the heads); the first DG_NOTICES_MAX of the text. Why: a LICENSE file's
 * "Copyright (c) 2025 Yamashita, Yuu" states its holder without a key, and the heads
 * read "a copy" from the licence text below it (bench/devreal set 2, libdeg 0.24.0).
 * Since libdeg 0.26.0 only the first notice's holder is a key line (every notice's
 * years stay, for the ends a name asks for): of several notices the heads read a later
 * holder for a `copyright_holder` (6 of 8 headers and LICENSE files in a new user's
 * check), and the first notice is the one a single holder field asks for. */
#define DG_NOTICES_MAX 16
static int notices(const char *s, size_t len, dg_keylines *ix, size_t *cap)
{
    size_t v[4], n = 0;
    cursor c = {0, 0};
    for (size_t b = 0, e; b < len && n < DG_NOTICES_MAX; b = e + 1) {
        e = dg_lscan_line_end(s, len, b);
        if (!notice(s, b, e, v)) continue;
        /* in document order: the cursor c only moves forward ("HOLDER YEAR" puts the
         * holder first); the holder of the first notice only (below) */
        int before = v[2] < v[0], holder = n++ == 0;
        if ((holder && before && (add(s, &c, "copyright holder", v[2], v[3], ix, cap) < 0 ||
                                  add(s, &c, "holder", v[2], v[3], ix, cap) < 0)) ||
            add(s, &c, "copyright year", v[0], v[1], ix, cap) < 0 ||
            (holder && !before && (add(s, &c, "copyright holder", v[2], v[3], ix, cap) < 0 ||
                                   add(s, &c, "holder", v[2], v[3], ix, cap) < 0)))
            return -1;
    }
    return 0;
}

int dg_keylines_forms(const char *ctx, size_t len, dg_keylines *ix, size_t *cap)
{
    int rc = changelog(ctx, len, ix, cap);
    if (rc == 0) rc = notices(ctx, len, ix, cap);
    return rc < 0 ? rc : dg_keylines_xml(ctx, len, ix, cap);
}
