/* parse.c - the UTF-8 helpers of the parsers and the date and date-time parsers (rules in
 * parse.h); numbers are in parse_number.c. */
#include "deg/parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "deg/parse_internal.h"

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                    */
/* ------------------------------------------------------------------------ */

int32_t dg_parse_utf8_next(const char *s, size_t n, size_t *i)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t p = *i;
    unsigned c = u[p];
    if (c < 0x80) { *i = p + 1; return (int32_t)c; }
    int len;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return -1;
    if (p + (size_t)len > n) return -1;
    for (int k = 1; k < len; k++) {
        unsigned d = u[p + k];
        if ((d & 0xC0) != 0x80) return -1;
        cp = (cp << 6) | (d & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
    *i = p + (size_t)len;
    return (int32_t)cp;
}

deg_status dg_parse_utf8_check(const char *s, size_t n, const char *what, size_t *n_cp)
{
    size_t i = 0, k = 0;
    while (i < n) {
        if ((unsigned char)s[i] < 0x80) { i++; k++; continue; }
        if (dg_parse_utf8_next(s, n, &i) < 0)
            return dg_fail(DEG_ERR_UTF8, "%s: invalid UTF-8 at byte %zu", what, i);
        k++;
    }
    if (n_cp) *n_cp = k;
    return DEG_OK;
}

int dg_parse_is_space(int32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

void dg_parse_trim_ws(const char **s, size_t *n)
{
    const char *p = *s;
    size_t len = *n;
    for (;;) {
        size_t i = 0;
        if (len == 0) break;
        int32_t cp = dg_parse_utf8_next(p, len, &i);
        if (cp < 0 || !dg_parse_is_space(cp)) break;
        p += i;
        len -= i;
    }
    while (len > 0) {
        size_t b = len - 1;
        while (b > 0 && ((unsigned char)p[b] & 0xC0) == 0x80) b--;
        size_t i = b;
        int32_t cp = dg_parse_utf8_next(p, len, &i);
        if (cp < 0 || i != len || !dg_parse_is_space(cp)) break;
        len = b;
    }
    *s = p;
    *n = len;
}

/* Case-insensitive ASCII prefix test: does [s, s+n) start with word w? */
static int starts_ci(const char *s, size_t n, const char *w)
{
    size_t k = strlen(w);
    if (k > n) return 0;
    for (size_t i = 0; i < k; i++) {
        unsigned char a = (unsigned char)s[i], b = (unsigned char)w[i];
        if (a >= 'A' && a <= 'Z') a = (unsigned char)(a + 32);
        if (b >= 'A' && b <= 'Z') b = (unsigned char)(b + 32);
        if (a != b) return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Dates and times                                                          */
/* ------------------------------------------------------------------------ */

static int is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int days_in_month(int y, int m)
{
    static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12) return 0;
    return m == 2 && is_leap(y) ? 29 : d[m - 1];
}

int dg_parse_valid_date(int y, int m, int d)
{
    return y >= 1 && y <= 9999 && m >= 1 && m <= 12 && d >= 1 && d <= days_in_month(y, m);
}

/* 0 = Monday (Sakamoto's method gives 0 = Sunday). */
static int weekday(int y, int m, int d)
{
    static const int t[] = {0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4};
    if (m < 3) y -= 1;
    int w = (y + y / 4 - y / 100 + y / 400 + t[m - 1] + d) % 7;
    return (w + 6) % 7;
}

typedef struct {
    const char *name;
    int value;
} named;

/* Month names: English (full + abbreviations), German, French, Spanish. */
static const named MONTHS[] = {
    {"january", 1}, {"february", 2}, {"march", 3}, {"april", 4}, {"may", 5},
    {"june", 6}, {"july", 7}, {"august", 8}, {"september", 9}, {"october", 10},
    {"november", 11}, {"december", 12},
    {"sept", 9}, {"jan", 1}, {"feb", 2}, {"mar", 3}, {"apr", 4}, {"jun", 6},
    {"jul", 7}, {"aug", 8}, {"sep", 9}, {"oct", 10}, {"nov", 11}, {"dec", 12},
    {"januar", 1}, {"februar", 2}, {"m\xC3\xA4rz", 3}, {"mai", 5}, {"juni", 6},
    {"juli", 7}, {"oktober", 10}, {"dezember", 12},
    {"janvier", 1}, {"f\xC3\xA9vrier", 2}, {"mars", 3}, {"avril", 4}, {"juin", 6},
    {"juillet", 7}, {"ao\xC3\xBBt", 8}, {"septembre", 9}, {"octobre", 10},
    {"novembre", 11}, {"d\xC3\xA9" "cembre", 12},
    {"enero", 1}, {"febrero", 2}, {"marzo", 3}, {"abril", 4}, {"mayo", 5},
    {"junio", 6}, {"julio", 7}, {"agosto", 8}, {"septiembre", 9}, {"octubre", 10},
    {"noviembre", 11}, {"diciembre", 12},
    {NULL, 0}};

static const named WEEKDAYS[] = {
    {"monday", 0}, {"tuesday", 1}, {"wednesday", 2}, {"thursday", 3}, {"friday", 4},
    {"saturday", 5}, {"sunday", 6}, {"tues", 1}, {"thurs", 3}, {"thur", 3},
    {"mon", 0}, {"tue", 1}, {"wed", 2}, {"thu", 3}, {"fri", 4}, {"sat", 5}, {"sun", 6},
    {NULL, 0}};

/* Fixed-offset zone abbreviations (minutes east of UTC). */
static const named ZONES[] = {
    {"CEST", 120}, {"EEST", 180}, {"WEST", 60}, {"AEST", 600}, {"AEDT", 660},
    {"EST", -300}, {"EDT", -240}, {"CST", -360}, {"CDT", -300}, {"MST", -420},
    {"MDT", -360}, {"PST", -480}, {"PDT", -420}, {"CET", 60}, {"EET", 120},
    {"WET", 0}, {"JST", 540}, {NULL, 0}};

/* A parse cursor over the text. */
typedef struct {
    const char *s;
    size_t n, i;
} cur;

static int at_end(const cur *c) { return c->i >= c->n; }
static char peek(const cur *c) { return c->i < c->n ? c->s[c->i] : '\0'; }

static void skip_spaces(cur *c)
{
    while (c->i < c->n) {
        size_t j = c->i;
        int32_t cp = dg_parse_utf8_next(c->s, c->n, &j);
        if (cp < 0 || !dg_parse_is_space(cp)) break;
        c->i = j;
    }
}

/* Digits: 1..maxd digits; returns count, value in *v. */
static int digits(cur *c, int maxd, int *v)
{
    int k = 0, x = 0;
    while (c->i < c->n && is_digit(c->s[c->i]) && k < maxd + 1) {
        x = x * 10 + (c->s[c->i] - '0');
        c->i++;
        k++;
    }
    if (k > maxd) return -1;
    *v = x;
    return k;
}

/* Match a word of the table at the cursor (longest first as listed: the
 * table lists full names before prefixes where it matters); the word must
 * end at a non-letter. */
static int match_word(cur *c, const named *tab, int *value)
{
    size_t best = 0;
    int bv = 0;
    for (int k = 0; tab[k].name; k++) {
        size_t l = strlen(tab[k].name);
        if (c->i + l > c->n || !starts_ci(c->s + c->i, c->n - c->i, tab[k].name)) continue;
        if (c->i + l < c->n && (is_alpha(c->s[c->i + l]) || ((unsigned char)c->s[c->i + l] >= 0x80)))
            continue;
        if (l > best) { best = l; bv = tab[k].value; }
    }
    if (!best) return 0;
    c->i += best;
    *value = bv;
    return 1;
}

static int match_lit(cur *c, const char *lit)
{
    size_t l = strlen(lit);
    if (c->i + l > c->n || !starts_ci(c->s + c->i, c->n - c->i, lit)) return 0;
    c->i += l;
    return 1;
}

/* Ordinal suffix after a day number. */
static void skip_ordinal(cur *c)
{
    size_t save = c->i;
    if (match_lit(c, "st") || match_lit(c, "nd") || match_lit(c, "rd") || match_lit(c, "th")) {
        if (!at_end(c) && is_alpha(peek(c))) c->i = save;
    }
}

typedef struct {
    int y, m, d;
    int weekday; /* -1 = not written */
} date_t;

enum { DATE_OK = 0, DATE_NONE = 1, DATE_AMBIGUOUS = 2, DATE_INVALID = 3 };

/* Resolve a numeric A?B?YYYY date. */
static int resolve_numeric(int a, int b, int y, deg_date_order order, date_t *out)
{
    int mdy = dg_parse_valid_date(y, a, b), dmy = dg_parse_valid_date(y, b, a);
    if (order == DEG_DATE_MDY) {
        if (!mdy) return DATE_INVALID;
        out->m = a; out->d = b;
    } else if (order == DEG_DATE_DMY) {
        if (!dmy) return DATE_INVALID;
        out->m = b; out->d = a;
    } else {
        if (mdy && dmy && a != b) return DATE_AMBIGUOUS;
        if (!mdy && !dmy) return DATE_INVALID;
        if (mdy) { out->m = a; out->d = b; }
        else { out->m = b; out->d = a; }
    }
    out->y = y;
    return DATE_OK;
}

/* After a 4-digit year YYYY (cursor just past it): YYYY-MM-DD, YYYY/MM/DD,
 * YYYY.MM.DD (ISO 8601's calendar date and its separators); YYYY-Mon-DD,
 * YYYY/Mon/DD; YYYY Mon[.] D[th] (vim runtime headers' "Last Change: 2023 Mar
 * 14": 770 of the 1,113 "Last Change:" lines in /usr/share/vim 9.0). The year
 * is first and the month in the middle or a word, so none is ambiguous:
 * date_order never applies. The month word must end at a non-letter ("2023
 * Marching 5" is not a date) and not run into the day ("2023 Mar14": the
 * candidate regex's MONTH(?!\w)); the day must end at a non-digit. After a
 * space the month is capitalized ("by 2030 may 5 teams..." is prose, not May
 * 5; the candidate regex's (?=[A-Z])). Returns
 * DATE_OK (cursor after the date), DATE_NONE (cursor unspecified: the caller
 * resets it) or DATE_INVALID. */
static int parse_year_first(cur *c, int y, date_t *out)
{
    int m, d;
    char sep = peek(c);
    if (sep == '-' || sep == '/' || sep == '.') {
        c->i++;
        if (digits(c, 2, &m) > 0) {
            if (peek(c) != sep) return DATE_NONE;
            c->i++;
        } else if (sep == '.' || !match_word(c, MONTHS, &m) || peek(c) != sep) {
            return DATE_NONE;
        } else {
            c->i++;
        }
    } else {
        size_t year_end = c->i;
        skip_spaces(c);
        if (c->i == year_end || !(peek(c) >= 'A' && peek(c) <= 'Z') || !match_word(c, MONTHS, &m) ||
            is_digit(peek(c)))
            return DATE_NONE;
        if (peek(c) == '.') c->i++;
        skip_spaces(c);
    }
    if (digits(c, 2, &d) <= 0 || (!at_end(c) && is_digit(peek(c)))) return DATE_NONE;
    if (sep != '-' && sep != '/' && sep != '.') skip_ordinal(c);
    if (!dg_parse_valid_date(y, m, d)) return DATE_INVALID;
    out->y = y; out->m = m; out->d = d;
    return DATE_OK;
}

/* Parse a date at the cursor. On DATE_OK the cursor is after the date. */
static int parse_date_at(cur *c, deg_date_order order, date_t *out)
{
    size_t start = c->i;
    out->weekday = -1;
    int wd;
    if (match_word(c, WEEKDAYS, &wd)) {
        if (peek(c) == '.') c->i++;
        if (peek(c) == ',') c->i++;
        skip_spaces(c);
        out->weekday = wd;
    }
    size_t body = c->i;
    int v1, k1 = digits(c, 4, &v1);
    if (k1 == 4) {
        int r = parse_year_first(c, v1, out);
        if (r == DATE_NONE) c->i = start;
        return r;
    }
    if (k1 == 1 || k1 == 2) {
        char sep = peek(c);
        if (sep == '/' || sep == '-' || sep == '.') {
            size_t after_sep = c->i + 1;
            c->i = after_sep;
            int v2, k2 = digits(c, 2, &v2);
            if (k2 > 0) {
                /* numeric A?B?YYYY */
                if (peek(c) != sep) { c->i = start; return DATE_NONE; }
                c->i++;
                int y, ky = digits(c, 4, &y);
                if (ky != 4) { c->i = start; return DATE_NONE; }
                if (!at_end(c) && is_digit(peek(c))) { c->i = start; return DATE_NONE; }
                return resolve_numeric(v1, v2, y, order, out);
            }
            if (sep == '.') {
                /* "5. März 2026" */
                skip_spaces(c);
            }
            int m;
            if (match_word(c, MONTHS, &m)) {
                /* D-Mon-YYYY, D/Mon/YYYY, D. Month YYYY */
                if (peek(c) == '.') c->i++;
                if (sep != '.' && peek(c) == sep) c->i++;
                else skip_spaces(c);
                int y;
                if (digits(c, 4, &y) != 4 || (!at_end(c) && is_digit(peek(c)))) { c->i = start; return DATE_NONE; }
                if (!dg_parse_valid_date(y, m, v1)) return DATE_INVALID;
                out->y = y; out->m = m; out->d = v1;
                return DATE_OK;
            }
            c->i = start;
            return DATE_NONE;
        }
        /* D[th] [of] Month[.][,] YYYY */
        skip_ordinal(c);
        skip_spaces(c);
        size_t save = c->i;
        if (match_lit(c, "of") && (at_end(c) || !is_alpha(peek(c)))) skip_spaces(c);
        else c->i = save;
        int m;
        if (!match_word(c, MONTHS, &m)) { c->i = start; return DATE_NONE; }
        if (peek(c) == '.') c->i++;
        if (peek(c) == ',') c->i++;
        skip_spaces(c);
        int y;
        if (digits(c, 4, &y) != 4 || (!at_end(c) && is_digit(peek(c)))) { c->i = start; return DATE_NONE; }
        if (!dg_parse_valid_date(y, m, v1)) return DATE_INVALID;
        out->y = y; out->m = m; out->d = v1;
        return DATE_OK;
    }
    if (k1 == 0) {
        /* Month D[th][,] YYYY */
        c->i = body;
        int m;
        if (!match_word(c, MONTHS, &m)) { c->i = start; return DATE_NONE; }
        if (peek(c) == '.') c->i++;
        skip_spaces(c);
        int d, kd = digits(c, 2, &d);
        if (kd <= 0) { c->i = start; return DATE_NONE; }
        skip_ordinal(c);
        if (peek(c) == ',') c->i++;
        skip_spaces(c);
        int y;
        if (digits(c, 4, &y) != 4 || (!at_end(c) && is_digit(peek(c)))) { c->i = start; return DATE_NONE; }
        if (!dg_parse_valid_date(y, m, d)) return DATE_INVALID;
        out->y = y; out->m = m; out->d = d;
        return DATE_OK;
    }
    c->i = start;
    return DATE_NONE;
}

typedef struct {
    int h, mi, sec;
    const char *frac; /* digits after '.', not NUL-terminated */
    size_t frac_len;
    int has_zone;
    int zone_min;     /* offset east of UTC, minutes */
    int zone_z;       /* written as Z/UTC/GMT with no offset */
} time_t_;

/* Zone at the cursor (after optional spaces). Returns 1 and fills t, 0 if
 * none (cursor unchanged), -1 if malformed. */
static int parse_zone(cur *c, time_t_ *t)
{
    size_t start = c->i;
    skip_spaces(c);
    if (peek(c) == 'Z' || peek(c) == 'z') {
        c->i++;
        if (!at_end(c) && is_alpha(peek(c))) { c->i = start; return 0; }
        t->has_zone = 1; t->zone_min = 0; t->zone_z = 1;
        return 1;
    }
    int named_base = 0, named = 0;
    if (match_lit(c, "UTC") || match_lit(c, "GMT")) {
        if (!at_end(c) && is_alpha(peek(c))) { c->i = start; return 0; }
        named = 1;
    } else {
        int v;
        if (match_word(c, ZONES, &v)) {
            /* Abbreviations are upper case only ("est" is a word). */
            for (size_t k = start; k < c->i; k++)
                if (c->s[k] >= 'a' && c->s[k] <= 'z') { c->i = start; return 0; }
            t->has_zone = 1; t->zone_min = v; t->zone_z = 0;
            return 1;
        }
    }
    int neg = 0;
    size_t l = 0;
    if (peek(c) == '+') l = 1;
    else if (peek(c) == '-') { l = 1; neg = 1; }
    else if (c->i + 3 <= c->n && memcmp(c->s + c->i, "\xE2\x88\x92", 3) == 0) { l = 3; neg = 1; }
    if (!l) {
        if (named) { t->has_zone = 1; t->zone_min = named_base; t->zone_z = 1; return 1; }
        c->i = start;
        return 0;
    }
    /* After a space, a bare sign must start a full offset (+HHMM, +HH:MM):
     * "14:30 - 5" is not a zone. */
    int spaced = !named && c->i != start;
    c->i += l;
    int hh, mm = 0, full = 0;
    int kh = digits(c, 4, &hh);
    if (kh == 4) { mm = hh % 100; hh /= 100; full = 1; }
    else if (kh == 1 || kh == 2) {
        if (peek(c) == ':') {
            c->i++;
            if (digits(c, 2, &mm) != 2) { if (spaced) { c->i = start; return 0; } return -1; }
            full = 1;
        } else if (!named && kh == 1) {
            if (spaced) { c->i = start; return 0; }
            return -1;
        }
    } else { if (spaced) { c->i = start; return 0; } return -1; }
    if (spaced && !full) { c->i = start; return 0; }
    if (!at_end(c) && is_digit(peek(c))) return -1;
    if (hh > 23 || mm > 59) return -1;
    t->has_zone = 1;
    t->zone_min = (neg ? -1 : 1) * (hh * 60 + mm);
    t->zone_z = 0;
    return 1;
}

/* Time at the cursor: H[:MM[:SS[.f]]] [AM|PM] [zone]. A bare hour needs
 * AM/PM. Returns DATE_OK / DATE_NONE / DATE_INVALID. */
static int parse_time_at(cur *c, time_t_ *t)
{
    size_t start = c->i;
    memset(t, 0, sizeof *t);
    int h, kh = digits(c, 2, &h);
    if (kh <= 0) { c->i = start; return DATE_NONE; }
    int mi = 0, sec = 0, has_min = 0;
    if (peek(c) == ':') {
        c->i++;
        if (digits(c, 2, &mi) != 2) { c->i = start; return DATE_NONE; }
        has_min = 1;
        if (peek(c) == ':') {
            c->i++;
            if (digits(c, 2, &sec) != 2) { c->i = start; return DATE_NONE; }
            if (peek(c) == '.' || peek(c) == ',') {
                size_t fs = c->i + 1, j = fs;
                while (j < c->n && is_digit(c->s[j])) j++;
                if (j > fs) { t->frac = c->s + fs; t->frac_len = j - fs; c->i = j; }
            }
        }
    }
    if (!at_end(c) && is_digit(peek(c))) { c->i = start; return DATE_NONE; }
    /* AM / PM */
    size_t save = c->i;
    skip_spaces(c);
    int ampm = 0;
    if (match_lit(c, "a.m.") || match_lit(c, "am")) ampm = 1;
    else if (match_lit(c, "p.m.") || match_lit(c, "pm")) ampm = 2;
    if (ampm && !at_end(c) && is_alpha(peek(c))) { ampm = 0; }
    if (!ampm) c->i = save;
    if (!has_min && !ampm) { c->i = start; return DATE_NONE; }
    if (ampm) {
        if (h < 1 || h > 12) return DATE_INVALID;
        if (ampm == 1) h = h == 12 ? 0 : h;
        else h = h == 12 ? 12 : h + 12;
    }
    if (h > 23 || mi > 59 || sec > 60) return DATE_INVALID;
    t->h = h; t->mi = mi; t->sec = sec;
    size_t zs = c->i;
    int z = parse_zone(c, t);
    if (z < 0) { c->i = zs; return DATE_INVALID; }
    /* Second 60 only as a leap second (23:59:60 UTC). */
    if (sec == 60) {
        int off = t->has_zone ? t->zone_min : 0;
        int utc = ((h * 60 + mi - off) % 1440 + 1440) % 1440;
        if (utc != 23 * 60 + 59) return DATE_INVALID;
    }
    return DATE_OK;
}

static deg_status date_fail(int code, const char *s, size_t n, const char *what)
{
    int show = (int)(n > 80 ? 80 : n);
    switch (code) {
    case DATE_AMBIGUOUS:
        return dg_fail(DEG_ERR_FORMAT, "%s \"%.*s\": ambiguous numeric date (both month/day readings are valid; set date_order)", what, show, s);
    case DATE_INVALID:
        return dg_fail(DEG_ERR_RANGE, "%s \"%.*s\": not a valid calendar date or time", what, show, s);
    default:
        return dg_fail(DEG_ERR_FORMAT, "%s \"%.*s\": not a recognized %s", what, show, s, what);
    }
}

/* Date then optional time (or time then date). has_time reports which. */
static int parse_date_time(const char *s, size_t n, deg_date_order order, date_t *d,
                           time_t_ *t, int *has_time)
{
    cur c = {s, n, 0};
    *has_time = 0;
    int r = parse_date_at(&c, order, d);
    if (r == DATE_OK) {
        if (d->weekday >= 0 && d->weekday != weekday(d->y, d->m, d->d)) return DATE_INVALID;
        if (at_end(&c)) return DATE_OK;
        /* separator to the time */
        if (peek(&c) == 'T' || peek(&c) == 't') c.i++;
        else {
            size_t b = c.i;
            if (peek(&c) == ',') c.i++;
            skip_spaces(&c);
            if (match_lit(&c, "at ") || match_lit(&c, "@")) skip_spaces(&c);
            if (c.i == b) return DATE_NONE;
        }
        int tr = parse_time_at(&c, t);
        if (tr != DATE_OK) return tr == DATE_NONE ? DATE_NONE : tr;
        skip_spaces(&c);
        if (!at_end(&c)) return DATE_NONE;
        *has_time = 1;
        return DATE_OK;
    }
    if (r != DATE_NONE) return r;
    /* time first: "14:30, 5 March 2026", "2:30 PM on March 5, 2026" */
    c.i = 0;
    int tr = parse_time_at(&c, t);
    if (tr != DATE_OK) return tr == DATE_INVALID ? tr : DATE_NONE;
    size_t b = c.i;
    if (peek(&c) == ',') c.i++;
    skip_spaces(&c);
    if (match_lit(&c, "on ")) skip_spaces(&c);
    if (c.i == b) return DATE_NONE;
    r = parse_date_at(&c, order, d);
    if (r != DATE_OK) return r;
    if (d->weekday >= 0 && d->weekday != weekday(d->y, d->m, d->d)) return DATE_INVALID;
    skip_spaces(&c);
    if (!at_end(&c)) return DATE_NONE;
    *has_time = 1;
    return DATE_OK;
}

/* The date (and time) written in s0[0..n0) ("what" names it in errors): UTF-8
 * checked, surrounding whitespace trimmed, then parse_date_time. */
static deg_status read_date_time(const char *s0, size_t n0, deg_date_order order,
                                 const char *what, date_t *d, time_t_ *t, int *has_time)
{
    DG_TRY(dg_parse_utf8_check(s0, n0, what, NULL));
    const char *s = s0;
    size_t n = n0;
    dg_parse_trim_ws(&s, &n);
    int r = parse_date_time(s, n, order, d, t, has_time);
    return r == DATE_OK ? DEG_OK : date_fail(r, s0, n0, what);
}

deg_status dg_parse_date(const char *s0, size_t n0, deg_date_order order, char out[11])
{
    if (!s0 || !out) return dg_fail(DEG_ERR_ARG, "date: NULL argument");
    date_t d;
    time_t_ t;
    int has_time;
    DG_TRY(read_date_time(s0, n0, order, "date", &d, &t, &has_time));
    snprintf(out, 11, "%04d-%02d-%02d", d.y, d.m, d.d);
    return DEG_OK;
}

/* "Z" or [+-]HH:MM -> minutes; -1 on error (*z = 1 for Z). */
static int parse_offset_option(const char *o, int *minutes, int *z)
{
    if (strcmp(o, "Z") == 0 || strcmp(o, "z") == 0) { *minutes = 0; *z = 1; return 0; }
    if (strlen(o) != 6 || (o[0] != '+' && o[0] != '-') || o[3] != ':' ||
        !is_digit(o[1]) || !is_digit(o[2]) || !is_digit(o[4]) || !is_digit(o[5]))
        return -1;
    int h = (o[1] - '0') * 10 + (o[2] - '0'), m = (o[4] - '0') * 10 + (o[5] - '0');
    if (h > 23 || m > 59) return -1;
    *minutes = (o[0] == '-' ? -1 : 1) * (h * 60 + m);
    *z = 0;
    return 0;
}

deg_status dg_parse_datetime(const char *s0, size_t n0, deg_date_order order,
                             const char *default_offset, char *out, size_t cap,
                             int *assumed_offset)
{
    if (!s0 || !out) return dg_fail(DEG_ERR_ARG, "date-time: NULL argument");
    if (assumed_offset) *assumed_offset = 0;
    int dmin = 0, dz = 0;
    if (default_offset && parse_offset_option(default_offset, &dmin, &dz) < 0)
        return dg_fail(DEG_ERR_ARG, "date-time: default_offset \"%s\" is not \"Z\" or \"+HH:MM\"", default_offset);
    date_t d;
    time_t_ t;
    int has_time;
    DG_TRY(read_date_time(s0, n0, order, "date-time", &d, &t, &has_time));
    if (!has_time)
        return dg_fail(DEG_ERR_FORMAT, "date-time \"%.*s\": no time written (midnight would be invented)", (int)(n0 > 80 ? 80 : n0), s0);
    int assumed = 0;
    if (!t.has_zone) {
        if (!default_offset)
            return dg_fail(DEG_ERR_FORMAT, "date-time \"%.*s\": no zone written and no default_offset", (int)(n0 > 80 ? 80 : n0), s0);
        t.zone_min = dmin; t.zone_z = dz; assumed = 1;
        if (t.sec == 60) {
            int utc = ((t.h * 60 + t.mi - dmin) % 1440 + 1440) % 1440;
            if (utc != 23 * 60 + 59) return date_fail(DATE_INVALID, s0, n0, "date-time");
        }
    }
    if (cap < 40 + t.frac_len) return dg_fail(DEG_ERR_ARG, "date-time: output buffer too small");
    int k = snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d", d.y, d.m, d.d, t.h, t.mi, t.sec);
    if (t.frac_len) {
        out[k++] = '.';
        memcpy(out + k, t.frac, t.frac_len);
        k += (int)t.frac_len;
    }
    if (t.zone_z && t.zone_min == 0) snprintf(out + k, cap - (size_t)k, "Z");
    else {
        int a = t.zone_min < 0 ? -t.zone_min : t.zone_min;
        snprintf(out + k, cap - (size_t)k, "%c%02d:%02d", t.zone_min < 0 ? '-' : '+', a / 60, a % 60);
    }
    if (assumed_offset) *assumed_offset = assumed;
    return DEG_OK;
}

/* ------------------------------------------------------------------------ */
/* Public wrappers                                                          */
/* ------------------------------------------------------------------------ */

DEG_API deg_status deg_parse_number(const char *text, size_t len, int integer_only, char **out_json)
{
    if (!text || !out_json) return dg_fail(DEG_ERR_ARG, "deg_parse_number: NULL argument");
    *out_json = NULL;
    char *buf = malloc(len + 16);
    if (!buf) return dg_fail(DEG_ERR_NOMEM, "deg_parse_number: out of memory");
    deg_status st = dg_parse_number(text, len, integer_only, buf, len + 16);
    if (st != DEG_OK) { free(buf); return st; }
    *out_json = buf;
    return DEG_OK;
}

DEG_API deg_status deg_parse_date(const char *text, size_t len, deg_date_order order, char **out_iso)
{
    if (!text || !out_iso) return dg_fail(DEG_ERR_ARG, "deg_parse_date: NULL argument");
    *out_iso = NULL;
    if (order != DEG_DATE_ANY && order != DEG_DATE_MDY && order != DEG_DATE_DMY)
        return dg_fail(DEG_ERR_ARG, "deg_parse_date: bad date_order %d", (int)order);
    char buf[11];
    DG_TRY(dg_parse_date(text, len, order, buf));
    *out_iso = strdup(buf);
    return *out_iso ? DEG_OK : dg_fail(DEG_ERR_NOMEM, "deg_parse_date: out of memory");
}

DEG_API deg_status deg_parse_datetime(const char *text, size_t len, deg_date_order order,
                                      const char *default_offset, char **out_rfc3339,
                                      int *assumed_offset)
{
    if (!text || !out_rfc3339) return dg_fail(DEG_ERR_ARG, "deg_parse_datetime: NULL argument");
    *out_rfc3339 = NULL;
    if (order != DEG_DATE_ANY && order != DEG_DATE_MDY && order != DEG_DATE_DMY)
        return dg_fail(DEG_ERR_ARG, "deg_parse_datetime: bad date_order %d", (int)order);
    char *buf = malloc(len + 48);
    if (!buf) return dg_fail(DEG_ERR_NOMEM, "deg_parse_datetime: out of memory");
    deg_status st = dg_parse_datetime(text, len, order, default_offset, buf, len + 48, assumed_offset);
    if (st != DEG_OK) { free(buf); return st; }
    *out_rfc3339 = buf;
    return DEG_OK;
}
