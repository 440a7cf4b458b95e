/* Format checks, candidate spans and the span trimmer (rules in parse.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <arpa/inet.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/regex.h"
#include "base/status.h"
#include "deg/parse.h"

static int dig(char c) { return c >= '0' && c <= '9'; }
static int num2(const char *s) { return (s[0] - '0') * 10 + (s[1] - '0'); }

/* ------------------------------------------------------------------------ */
/* Format checks                                                            */
/* ------------------------------------------------------------------------ */

static int check_full_date(const char *s, size_t n)
{
    if (n != 10 || s[4] != '-' || s[7] != '-') return 0;
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && !dig(s[i])) return 0;
    int y = num2(s) * 100 + num2(s + 2);
    return dg_parse_valid_date(y, num2(s + 5), num2(s + 8));
}

static int check_date_time(const char *s, size_t n)
{
    if (n < 20 || !check_full_date(s, 10)) return 0;
    if (s[10] != 'T' && s[10] != 't') return 0;
    const char *t = s + 11;
    if (!dig(t[0]) || !dig(t[1]) || t[2] != ':' || !dig(t[3]) || !dig(t[4]) || t[5] != ':' ||
        !dig(t[6]) || !dig(t[7]))
        return 0;
    int h = num2(t), mi = num2(t + 3), sec = num2(t + 6);
    size_t i = 19;
    if (i < n && s[i] == '.') {
        size_t f = ++i;
        while (i < n && dig(s[i])) i++;
        if (i == f) return 0;
    }
    if (i >= n) return 0;
    int off = 0;
    if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n) off = 0;
    else if ((s[i] == '+' || s[i] == '-') && i + 6 == n && dig(s[i + 1]) && dig(s[i + 2]) &&
             s[i + 3] == ':' && dig(s[i + 4]) && dig(s[i + 5])) {
        int oh = num2(s + i + 1), om = num2(s + i + 4);
        if (oh > 23 || om > 59) return 0;
        off = (s[i] == '-' ? -1 : 1) * (oh * 60 + om);
    } else return 0;
    if (h > 23 || mi > 59 || sec > 60) return 0;
    if (sec == 60) {
        int utc = ((h * 60 + mi - off) % 1440 + 1440) % 1440;
        if (utc != 23 * 60 + 59) return 0;
    }
    return 1;
}

static int check_uuid(const char *s, size_t n)
{
    if (n != 36) return 0;
    for (size_t i = 0; i < 36; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return 0;
        } else if (!dig(c) && !((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return 0;
    }
    return 1;
}

static int is_alnum(char c) { return dig(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static int check_hostname(const char *s, size_t n)
{
    if (n == 0 || n > 253) return 0;
    size_t i = 0;
    while (i < n) {
        size_t st = i;
        while (i < n && s[i] != '.') {
            if (!is_alnum(s[i]) && s[i] != '-') return 0;
            i++;
        }
        size_t l = i - st;
        if (l == 0 || l > 63 || s[st] == '-' || s[i - 1] == '-') return 0;
        if (i < n) {
            i++;
            if (i == n) return 0; /* trailing dot */
        }
    }
    return 1;
}

static int check_email(const char *s, size_t n)
{
    static const char atext[] = "!#$%&'*+-/=?^_`{|}~";
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80 || (unsigned char)s[i] < 0x20) return 0;
    /* local part */
    size_t i = 0;
    if (n > 0 && s[0] == '"') {
        i = 1;
        for (;;) {
            if (i >= n) return 0;
            if (s[i] == '\\') {
                if (i + 1 >= n) return 0;
                i += 2;
                continue;
            }
            if (s[i] == '"') { i++; break; }
            i++;
        }
    } else {
        size_t st = 0;
        for (;;) {
            size_t a = i;
            while (i < n && (is_alnum(s[i]) || (s[i] && strchr(atext, s[i])))) i++;
            if (i == a) return 0;
            if (i < n && s[i] == '.') { i++; continue; }
            break;
        }
        (void)st;
    }
    if (i == 0 || i > 64 || i >= n || s[i] != '@') return 0;
    const char *d = s + i + 1;
    size_t dl = n - i - 1;
    if (dl >= 2 && d[0] == '[' && d[dl - 1] == ']') {
        char buf[64];
        size_t l = dl - 2;
        if (l >= sizeof buf) return 0;
        memcpy(buf, d + 1, l);
        buf[l] = 0;
        unsigned char addr[16];
        if (strncmp(buf, "IPv6:", 5) == 0) return inet_pton(AF_INET6, buf + 5, addr) == 1;
        /* inet_pton accepts only dotted-quad decimal: no leading zeros
         * ambiguity, no short forms. */
        return inet_pton(AF_INET, buf, addr) == 1;
    }
    return check_hostname(d, dl);
}

#define PCHAR "(?:[A-Za-z0-9\\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})"
/* RFC 3986 §3.2: "//" authority (userinfo, IP literal or reg-name, port). */
#define AUTHORITY "//(?:(?:[A-Za-z0-9\\-._~!$&'()*+,;=:]|%[0-9A-Fa-f]{2})*@)?" \
    "(?:\\[(?<ip6>[0-9A-Fa-f:.]+)\\]|\\[[vV][0-9A-Fa-f]+\\.[A-Za-z0-9\\-._~!$&'()*+,;=:]+\\]" \
    "|(?:[A-Za-z0-9\\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)" \
    "(?::[0-9]*)?"
#define QUERY_FRAGMENT "(?:\\?(?:" PCHAR "|[/?])*)?(?:\\#(?:" PCHAR "|[/?])*)?\\z"
/* RFC 3986 §3: scheme ":" hier-part (authority + path-abempty, path-absolute,
 * path-rootless or path-empty). */
#define SCHEME_HIER_PART "[A-Za-z][A-Za-z0-9+.\\-]*:" \
    "(?:" AUTHORITY "(?:/" PCHAR "*)*" \
    "|/(?:" PCHAR "+(?:/" PCHAR "*)*)?" \
    "|" PCHAR "+(?:/" PCHAR "*)*" \
    "|)"
/* RFC 3986 §3 URI: scheme ":" hier-part [ "?" query ] [ "#" fragment ]. */
static const char URI_RE[] = "^" SCHEME_HIER_PART QUERY_FRAGMENT;
/* RFC 3986 §4.1 URI-reference: a URI, or a relative-ref (relative-part [ "?" query ]
 * [ "#" fragment ], whose first path segment holds no ':' unless it starts with '/'). */
#define SEGMENT_NZ_NC "(?:[A-Za-z0-9\\-._~!$&'()*+,;=@]|%[0-9A-Fa-f]{2})+"
static const char URI_REF_RE[] =
    "^(?:" SCHEME_HIER_PART
    "|" AUTHORITY "(?:/" PCHAR "*)*"
    "|/(?:" PCHAR "+(?:/" PCHAR "*)*)?"
    "|" SEGMENT_NZ_NC "(?:/" PCHAR "*)*"
    "|)" QUERY_FRAGMENT;

/* Candidate regexes (UTF + UCP), one list per kind; see dg_candidates. */
#define CUR "(?:US\\$|NZ\\$|HK\\$|A\\$|C\\$|S\\$|R\\$|[$\\x{20AC}\\x{00A3}\\x{00A5}\\x{20B9}\\x{20A9}\\x{20BD}\\x{20BA}\\x{20AA}\\x{20AB}\\x{20B1}\\x{20B4}\\x{20A6}\\x{00A2}\\x{20BF}]" \
    "|(?:USD|EUR|GBP|JPY|CHF|CAD|AUD|NZD|HKD|SGD|CNY|RMB|SEK|NOK|DKK|PLN|CZK|HUF|INR|BRL|MXN|ZAR|RUB|TRY|KRW|ILS|AED|SAR)(?![A-Za-z]))"
#define GSEP "[,.'\\x{2019} \\x{00A0}\\x{202F}\\x{2009}]"
#define CORE "(?:\\d{1,3}(?:(?<gs>" GSEP ")\\d{3})(?:\\k<gs>\\d{3})*(?:[.,]\\d+)?(?![\\d])" \
    "|\\d{1,2},\\d{2}(?:,\\d{2})*,\\d{3}(?![\\d])" \
    "|\\d+(?:[.,]\\d+)?(?:[eE][-+]?\\d+)?(?![\\d])|[.,]\\d+(?![\\d]))"
#define NUM_BEFORE "(?<![\\w.,:\\x{2019}'])"
#define NUM_AFTER "(?![\\w:]|[.,]\\d)"
#define SIGN "[-+\\x{2212}]"

static const char *const NUMBER_RES[] = {
    NUM_BEFORE "(?<!\\d[.,])" CORE NUM_AFTER,
    "(?<![\\w\\x{2212}+-])" SIGN CORE NUM_AFTER,
    "(?<![\\w])(?:" SIGN "\\s?)?" CUR "\\s?" SIGN "?" CORE NUM_AFTER,
    "(?<![\\w.,:'\\x{2019}])" SIGN "?" CORE "\\s?(?:%|" CUR ")",
    NULL};

#define MONTH "(?i:january|february|march|april|may|june|july|august|september|october|november|december" \
    "|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec|januar|februar|m\\x{e4}rz|mai|juni|juli|oktober|dezember" \
    "|janvier|f\\x{e9}vrier|mars|avril|juin|juillet|ao\\x{fb}t|septembre|octobre|novembre|d\\x{e9}cembre" \
    "|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre)(?!\\w)"
#define WDAY "(?i:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tues|thurs|thur|mon|tue|wed|thu|fri|sat|sun)\\.?,?\\s+"
#define ORD "(?i:st|nd|rd|th)?"
#define DATE_CORE "(?:\\d{4}(?<s1>[-/.])\\d{1,2}\\k<s1>\\d{1,2}" \
    "|\\d{4}(?<s3>[-/])" MONTH "\\k<s3>\\d{1,2}" \
    "|\\d{4}\\s+(?=[A-Z])" MONTH "\\.?\\s*\\d{1,2}" ORD \
    "|\\d{1,2}(?<s2>[-/.])\\d{1,2}\\k<s2>\\d{4}" \
    "|\\d{1,2}[-/]" MONTH "[-/]\\d{4}" \
    "|\\d{1,2}" ORD "\\.?\\s*(?i:of\\s+)?" MONTH "\\.?,?\\s*\\d{4}" \
    "|" MONTH "\\.?\\s*\\d{1,2}" ORD ",?\\s*\\d{4})"
#define D_BEFORE "(?<![\\w.\\-/])"
#define D_AFTER "(?![\\w]|[-/.]\\d)"
#define AMPM "(?i:[ap]\\.m\\.|[ap]m(?!\\w))"
#define TIME "(?:\\d{1,2}:\\d{2}(?::\\d{2}(?:[.,]\\d+)?)?(?:\\s?" AMPM ")?|\\d{1,2}\\s?" AMPM ")"
#define ZONE "(?:\\s?(?:[Zz](?!\\w)|[-+\\x{2212}]\\d{2}(?::?\\d{2})?(?!\\d)|(?:UTC|GMT)(?:[-+\\x{2212}]\\d{1,2}(?::\\d{2})?)?(?!\\w)" \
    "|(?:CEST|EEST|WEST|AEST|AEDT|EST|EDT|CST|CDT|MST|MDT|PST|PDT|CET|EET|WET|JST)(?!\\w)))"
#define DT_SEP "(?:[Tt]|,?\\s+(?i:at\\s+|@\\s*)?)"

static const char *const DATE_RES[] = {
    D_BEFORE DATE_CORE D_AFTER,
    "(?<![\\w])" WDAY DATE_CORE D_AFTER,
    NULL};

static const char *const DATETIME_RES[] = {
    D_BEFORE DATE_CORE DT_SEP TIME "(?![\\w:])",
    D_BEFORE DATE_CORE DT_SEP TIME ZONE,
    "(?<![\\w])" WDAY DATE_CORE DT_SEP TIME ZONE "?",
    "(?<![\\w:.])" TIME ZONE "?,?\\s+(?i:on\\s+)?" DATE_CORE D_AFTER,
    NULL};

static const char *const EMAIL_RES[] = {
    "(?<![\\w.!#$%&*+/=?^{|}~-])[A-Za-z0-9!#$%&*+/=?^_{|}~-]+(?:\\.[A-Za-z0-9!#$%&*+/=?^_{|}~-]+)*"
    "@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*",
    NULL};

static const char *const URI_RES[] = {
    "(?<![\\w+.-])(?i:[a-z][a-z0-9+.-]*://[^\\s<>\"`{}|\\\\^]+"
    "|(?:mailto|urn|tel|news|sip|sips|geo|magnet|data|doi):[^\\s<>\"`{}|\\\\^]+)",
    NULL};

static const char *const UUID_RES[] = {
    "(?<![0-9A-Fa-f])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?![0-9A-Fa-f])",
    NULL};

enum { K_NUMBER, K_DATE, K_DATETIME, K_EMAIL, K_URI, K_UUID, K_COUNT };
static const char *const *const KIND_RES[K_COUNT] = {NUMBER_RES, DATE_RES, DATETIME_RES,
                                                     EMAIL_RES, URI_RES, UUID_RES};
#define MAX_RES 8

static pthread_once_t re_once = PTHREAD_ONCE_INIT;
static pcre2_code *uri_code, *uri_ref_code;
static pcre2_code *kind_code[K_COUNT][MAX_RES];
static int re_error; /* 0 = fine; else the failing regex index + 1 */
static char re_errmsg[256];

static void compile_all(void)
{
    dg_regex_error e;
    uri_code = dg_regex_compile(URI_RE, PCRE2_ZERO_TERMINATED, 0, 0, PCRE2_JIT_COMPLETE, &e);
    if (uri_code)
        uri_ref_code = dg_regex_compile(URI_REF_RE, PCRE2_ZERO_TERMINATED, PCRE2_DUPNAMES,
                                        0, PCRE2_JIT_COMPLETE, &e);
    if (!uri_code || !uri_ref_code) {
        re_error = 1;
        snprintf(re_errmsg, sizeof re_errmsg, "%s", e.msg);
        return;
    }
    for (int k = 0; k < K_COUNT; k++) {
        for (int r = 0; KIND_RES[k][r]; r++) {
            kind_code[k][r] = dg_regex_compile(KIND_RES[k][r], PCRE2_ZERO_TERMINATED,
                                               PCRE2_UTF | PCRE2_UCP | PCRE2_DUPNAMES, 0,
                                               PCRE2_JIT_COMPLETE, &e);
            if (!kind_code[k][r]) {
                re_error = 100 * (k + 1) + r;
                snprintf(re_errmsg, sizeof re_errmsg, "%.200s at offset %zu", e.msg, e.offset);
                return;
            }
        }
    }
}

static deg_status ensure_regexes(void)
{
    pthread_once(&re_once, compile_all);
    if (re_error)
        return dg_fail(DEG_ERR_INTERNAL, "built-in regex %d does not compile: %s", re_error, re_errmsg);
    return DEG_OK;
}

/* s matches code (URI_RE or URI_REF_RE): ASCII only, an IPv6 literal must parse. */
static int uri_match(pcre2_code *const *code, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80 || (unsigned char)s[i] <= 0x20) return 0;
    if (ensure_regexes() != DEG_OK) return 0;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(*code, NULL);
    if (!md) return 0;
    int rc = pcre2_match(*code, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
    int ok = rc >= 0;
    if (ok) {
        PCRE2_SIZE l = 0;
        if (pcre2_substring_length_byname(md, (PCRE2_SPTR) "ip6", &l) == 0 && l > 0) {
            char buf[64];
            unsigned char addr[16];
            if (l >= sizeof buf) ok = 0;
            else {
                PCRE2_SIZE bl = sizeof buf;
                pcre2_substring_copy_byname(md, (PCRE2_SPTR) "ip6", (PCRE2_UCHAR *)buf, &bl);
                ok = inet_pton(AF_INET6, buf, addr) == 1;
            }
        }
    }
    pcre2_match_data_free(md);
    return ok;
}

static int check_uri(const char *s, size_t n) { return uri_match(&uri_code, s, n); }

int dg_uri_reference_check(const char *s, size_t n) { return uri_match(&uri_ref_code, s, n); }

int dg_format_check(const char *format, const char *s, size_t n)
{
    if (!format) return -1;
    int which = strcmp(format, "date") == 0        ? 0
                : strcmp(format, "date-time") == 0 ? 1
                : strcmp(format, "email") == 0     ? 2
                : strcmp(format, "uri") == 0       ? 3
                : strcmp(format, "uuid") == 0      ? 4
                                                   : -1;
    if (which < 0) return -1;
    if (!s || dg_parse_utf8_check(s, n, "format", NULL) != DEG_OK) return 0;
    switch (which) {
    case 0: return check_full_date(s, n);
    case 1: return check_date_time(s, n);
    case 2: return check_email(s, n);
    case 3: return check_uri(s, n);
    default: return check_uuid(s, n);
    }
}

DEG_API deg_status deg_format_check(const char *format, const char *text, size_t len, int *ok)
{
    if (!format || !ok || (!text && len)) return dg_fail(DEG_ERR_ARG, "deg_format_check: NULL argument");
    int r = dg_format_check(format, text ? text : "", len);
    if (r < 0) {
        *ok = 0;
        return dg_fail(DEG_ERR_ARG, "deg_format_check: unknown format \"%s\" (date, date-time, email, uri, uuid)", format);
    }
    *ok = r;
    return DEG_OK;
}

/* ------------------------------------------------------------------------ */
/* Code-point offsets                                                       */
/* ------------------------------------------------------------------------ */

/* Monotone byte -> code-point counter (positions queried in increasing
 * order; reset() to go back). */
typedef struct {
    const char *s;
    size_t byte, cp;
} cp_counter;

static size_t cp_at(cp_counter *c, size_t byte)
{
    if (byte < c->byte) { c->byte = 0; c->cp = 0; }
    for (size_t i = c->byte; i < byte; i++)
        if (((unsigned char)c->s[i] & 0xC0) != 0x80) c->cp++;
    c->byte = byte;
    return c->cp;
}

/* Byte offset of code point index cp (cp <= number of code points). */
static size_t byte_of_cp(const char *s, size_t n, size_t cp)
{
    size_t i = 0, k = 0;
    while (i < n && k < cp) {
        i++;
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
        k++;
    }
    return i;
}

/* ------------------------------------------------------------------------ */
/* Span trimmer                                                             */
/* ------------------------------------------------------------------------ */

static int is_quote(int32_t c)
{
    return c == '"' || c == '\'' || c == '`' || c == 0xAB || c == 0xBB || c == 0x201C ||
           c == 0x201D || c == 0x201E || c == 0x2018 || c == 0x2019;
}

static int32_t closer_of(int32_t c) { return c == '(' ? ')' : c == '[' ? ']' : c == '{' ? '}' : 0; }
static int32_t opener_of(int32_t c) { return c == ')' ? '(' : c == ']' ? '[' : c == '}' ? '{' : 0; }

/* Does the closer matching the opener at cps[a] lie within (a, b)? */
static int opener_closed(const int32_t *cps, size_t a, size_t b)
{
    int32_t o = cps[a], cl = closer_of(o);
    long depth = 0;
    for (size_t i = a; i < b; i++) {
        if (cps[i] == o) depth++;
        else if (cps[i] == cl && --depth == 0) return 1;
    }
    return 0;
}

/* Is the closer at cps[b-1] matched by an opener within [a, b-1)? */
static int closer_opened(const int32_t *cps, size_t a, size_t b)
{
    int32_t cl = cps[b - 1], o = opener_of(cl);
    long depth = 0;
    for (size_t i = b; i-- > a;) {
        if (cps[i] == cl) depth++;
        else if (cps[i] == o && --depth == 0) return 1;
    }
    return 0;
}

deg_status dg_span_trim(const char *s, size_t n, size_t start, size_t end, size_t *out_start,
                        size_t *out_end)
{
    size_t ncp;
    DG_TRY(dg_parse_utf8_check(s, n, "span_trim text", &ncp));
    if (start > end || end > ncp)
        return dg_fail(DEG_ERR_RANGE, "span_trim: span [%zu, %zu) outside the text's %zu code points", start, end, ncp);
    size_t b0 = byte_of_cp(s, n, start);
    size_t len = end - start;
    int32_t *cps = malloc((len ? len : 1) * sizeof *cps);
    if (!cps) return dg_fail(DEG_ERR_NOMEM, "span_trim: out of memory");
    size_t bi = b0;
    for (size_t k = 0; k < len; k++) cps[k] = dg_parse_utf8_next(s, n, &bi);
    size_t a = 0, b = len;
    for (int changed = 1; changed && a < b;) {
        changed = 0;
        int32_t f = cps[a], l = cps[b - 1];
        if (dg_parse_is_space(f) || f < 0x20 || f == 0x7F) { a++; changed = 1; continue; }
        if (dg_parse_is_space(l) || l < 0x20 || l == 0x7F) { b--; changed = 1; continue; }
        if (f == ',' || f == ';' || f == ':' || f == '!' || f == '?' || f == '.') {
            /* ".5" is a number: keep a leading dot before a digit; "./src", "../lib" are
             * relative paths (libdeg 0.25.0: a Cargo.toml's workspace = "../rustbook" read
             * "/rustbook") */
            int path = f == '.' && ((a + 1 < b && cps[a + 1] == '/') ||
                                    (a + 2 < b && cps[a + 1] == '.' && cps[a + 2] == '/'));
            if (!path && !(f == '.' && a + 1 < b && cps[a + 1] >= '0' && cps[a + 1] <= '9')) { a++; changed = 1; continue; }
        }
        if (l == ',' || l == ';' || l == ':' || l == '!' || l == '?') { b--; changed = 1; continue; }
        if (l == '.') {
            /* keep it when the last word is an abbreviation made of 1-2
             * letter pieces each ending in '.': "U.S.", "e.g.", "Ph.D." */
            int abbrev = 1, pieces = 0;
            size_t i = b - 1, run = 0;
            while (i > a && !dg_parse_is_space(cps[i - 1])) {
                int32_t c = cps[i - 1];
                if (c == '.') {
                    if (run == 0 || run > 2) { abbrev = 0; break; }
                    run = 0;
                } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
                    if (++run > 2) { abbrev = 0; break; }
                    if (run == 1) pieces++;
                } else { abbrev = 0; break; }
                i--;
            }
            if (run == 0 || pieces < 2) abbrev = 0;
            if (!abbrev) { b--; changed = 1; continue; }
        }
        if (is_quote(f)) { a++; changed = 1; continue; }
        if (is_quote(l)) {
            int possessive = (l == '\'' || l == 0x2019) && b - a >= 2 &&
                             (cps[b - 2] == 's' || cps[b - 2] == 'S');
            int opened = 0;
            for (size_t i = 0; i + 1 < b; i++) if (cps[i] == l || (l == 0x2019 && cps[i] == 0x2018)) opened = 1;
            if (!possessive || opened) { b--; changed = 1; continue; }
        }
        if (closer_of(f) && !opener_closed(cps, a, b)) { a++; changed = 1; continue; }
        if (opener_of(l) && !closer_opened(cps, a, b)) { b--; changed = 1; continue; }
        if ((f == '-' || f == '*' || f == 0x2022 || f == 0xB7 || f == 0x2013 || f == 0x2014) &&
            a + 1 < b && dg_parse_is_space(cps[a + 1])) { a++; changed = 1; continue; }
        if ((l == '-' || l == 0x2013 || l == 0x2014) && b - a >= 2 && dg_parse_is_space(cps[b - 2])) {
            b--; changed = 1; continue;
        }
    }
    free(cps);
    if (a >= b) { a = b = (a > b ? b : a); }
    *out_start = start + a;
    *out_end = start + b;
    return DEG_OK;
}

DEG_API deg_status deg_span_trim(const char *text, size_t len, size_t start, size_t end,
                                 size_t *out_start, size_t *out_end)
{
    if (!text || !out_start || !out_end) return dg_fail(DEG_ERR_ARG, "deg_span_trim: NULL argument");
    return dg_span_trim(text, len, start, end, out_start, out_end);
}

/* ------------------------------------------------------------------------ */
/* Candidates                                                               */
/* ------------------------------------------------------------------------ */

typedef struct {
    size_t *v; /* pairs */
    size_t n, cap;
} span_list;

static int push(span_list *l, size_t a, size_t b)
{
    if (a >= b) return 0;
    if (dg_grow(&l->v, &l->cap, l->n + 1, 2 * sizeof *l->v) != DEG_OK) return -1;
    l->v[2 * l->n] = a;
    l->v[2 * l->n + 1] = b;
    l->n++;
    return 0;
}

static int cmp_span(const void *x, const void *y)
{
    const size_t *a = x, *b = y;
    if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
    if (a[1] != b[1]) return a[1] < b[1] ? -1 : 1;
    return 0;
}

static int kind_of(const char *kind)
{
    if (!kind) return -1;
    if (!strcmp(kind, "number") || !strcmp(kind, "integer")) return K_NUMBER;
    if (!strcmp(kind, "date")) return K_DATE;
    if (!strcmp(kind, "date-time")) return K_DATETIME;
    if (!strcmp(kind, "email")) return K_EMAIL;
    if (!strcmp(kind, "uri")) return K_URI;
    if (!strcmp(kind, "uuid")) return K_UUID;
    return -1;
}

deg_status dg_candidates(const char *kind, const char *s, size_t n, size_t **spans, size_t *n_spans)
{
    *spans = NULL;
    *n_spans = 0;
    int k = kind_of(kind);
    if (k < 0)
        return dg_fail(DEG_ERR_ARG, "candidates: unknown kind \"%s\" (number, integer, date, date-time, email, uri, uuid)", kind ? kind : "(null)");
    DG_TRY(dg_parse_utf8_check(s, n, "candidates text", NULL));
    DG_TRY(ensure_regexes());
    span_list l = {0};
    deg_status st = DEG_OK;
    for (int r = 0; r < MAX_RES && kind_code[k][r]; r++) {
        pcre2_code *re = kind_code[k][r];
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
        if (!md) { st = dg_fail(DEG_ERR_NOMEM, "candidates: out of memory"); break; }
        cp_counter cc = {s, 0, 0};
        size_t off = 0;
        while (off <= n) {
            int rc = pcre2_match(re, (PCRE2_SPTR)s, n, off, PCRE2_NO_UTF_CHECK, md, NULL);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) {
                char m[200];
                pcre2_get_error_message(rc, (PCRE2_UCHAR *)m, sizeof m);
                st = dg_fail(DEG_ERR_INTERNAL, "candidates: match failed: %s", m);
                break;
            }
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t bs = ov[0], be = ov[1];
            size_t cs = cp_at(&cc, bs), ce = cp_at(&cc, be);
            if (k >= K_EMAIL) {
                /* verbatim kinds: the match trimmed of the punctuation it
                 * carried in ("(see http://x.org/a)." -> "http://x.org/a"),
                 * kept only when it passes the format check */
                size_t ts, te;
                /* trim within the match only: O(match), not O(text) */
                if (dg_span_trim(s + bs, be - bs, 0, ce - cs, &ts, &te) == DEG_OK) {
                    size_t tb = byte_of_cp(s + bs, be - bs, ts) + bs;
                    size_t teb = byte_of_cp(s + bs, be - bs, te) + bs;
                    ts += cs;
                    te += cs;
                    if (dg_format_check(kind, s + tb, teb - tb) == 1 && push(&l, ts, te) < 0) goto nomem;
                    /* "key=user@host" (logs, query strings): '=' is an RFC 5322
                     * atext character, so the whole match is an address, but
                     * the address written is usually the part after the last
                     * '=' of the local part: offer it too. The local part is
                     * ASCII, so byte and code point offsets agree there. */
                    if (k == K_EMAIL) {
                        const char *at = memchr(s + tb, '@', teb - tb);
                        const char *eq = NULL;
                        for (const char *c = s + tb; at && c < at; c++)
                            if (*c == '=') eq = c;
                        if (eq && eq + 1 < at &&
                            dg_format_check(kind, eq + 1, (size_t)(s + teb - (eq + 1))) == 1 &&
                            push(&l, ts + (size_t)(eq + 1 - (s + tb)), te) < 0)
                            goto nomem;
                    }
                }
            } else if (push(&l, cs, ce) < 0) goto nomem;
            /* advance one code point past the match start so overlapping
             * later matches are still found */
            size_t nx = (k == K_URI || k == K_EMAIL) && be > bs ? be : bs + 1;
            while (nx < n && ((unsigned char)s[nx] & 0xC0) == 0x80) nx++;
            off = nx;
            continue;
        nomem:
            st = dg_fail(DEG_ERR_NOMEM, "candidates: out of memory");
            break;
        }
        pcre2_match_data_free(md);
        if (st != DEG_OK) break;
    }
    if (st != DEG_OK) { free(l.v); return st; }
    if (l.n > 1) {
        qsort(l.v, l.n, 2 * sizeof *l.v, cmp_span);
        size_t w = 1;
        for (size_t i = 1; i < l.n; i++) {
            if (l.v[2 * i] == l.v[2 * (w - 1)] && l.v[2 * i + 1] == l.v[2 * (w - 1) + 1]) continue;
            l.v[2 * w] = l.v[2 * i];
            l.v[2 * w + 1] = l.v[2 * i + 1];
            w++;
        }
        l.n = w;
    }
    if (l.n == 0) { free(l.v); l.v = NULL; }
    *spans = l.v;
    *n_spans = l.n;
    return DEG_OK;
}

DEG_API deg_status deg_candidates(const char *kind, const char *text, size_t len, size_t **spans,
                                  size_t *n_spans)
{
    if (!text || !spans || !n_spans) return dg_fail(DEG_ERR_ARG, "deg_candidates: NULL argument");
    return dg_candidates(kind, text, len, spans, n_spans);
}
