/* parse_number.c - the number parser (parse.h "Number rule"): marks around the digits,
 * digit groups and decimal separators, JSON number text out. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "deg/parse.h"
#include "deg/parse_internal.h"

/* Currency marks; longest first where one is a prefix of another. */
static const char *const CURRENCY[] = {
    "US$", "NZ$", "HK$", "A$", "C$", "S$", "R$",
    "$", "\xE2\x82\xAC" /* € */, "\xC2\xA3" /* £ */, "\xC2\xA5" /* ¥ */,
    "\xE2\x82\xB9" /* ₹ */, "\xE2\x82\xA9" /* ₩ */, "\xE2\x82\xBD" /* ₽ */,
    "\xE2\x82\xBA" /* ₺ */, "\xE2\x82\xAA" /* ₪ */, "\xE2\x82\xAB" /* ₫ */,
    "\xE2\x82\xB1" /* ₱ */, "\xE2\x82\xB4" /* ₴ */, "\xE2\x82\xA6" /* ₦ */,
    "\xC2\xA2" /* ¢ */, "\xE2\x82\xBF" /* ₿ */,
    "USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "NZD", "HKD", "SGD", "CNY",
    "RMB", "SEK", "NOK", "DKK", "PLN", "CZK", "HUF", "INR", "BRL", "MXN", "ZAR",
    "RUB", "TRY", "KRW", "ILS", "AED", "SAR", NULL};

static int is_code(const char *c) { return c[0] >= 'A' && c[0] <= 'Z' && strlen(c) == 3 && c[1] != '$'; }

/* Length of a currency mark at the start of [s, s+n), 0 if none. A letter
 * code must not run on into more letters. */
static size_t currency_prefix(const char *s, size_t n)
{
    for (int k = 0; CURRENCY[k]; k++) {
        size_t l = strlen(CURRENCY[k]);
        if (l <= n && memcmp(s, CURRENCY[k], l) == 0) {
            if (is_code(CURRENCY[k]) && l < n && is_alpha(s[l])) continue;
            return l;
        }
    }
    return 0;
}

static size_t currency_suffix(const char *s, size_t n)
{
    for (int k = 0; CURRENCY[k]; k++) {
        size_t l = strlen(CURRENCY[k]);
        if (l <= n && memcmp(s + n - l, CURRENCY[k], l) == 0) {
            if (is_code(CURRENCY[k]) && l < n && is_alpha(s[n - l - 1])) continue;
            return l;
        }
    }
    return 0;
}

/* Sign at the start: '+', '-' or U+2212; returns its length, *neg set. */
static size_t sign_prefix(const char *s, size_t n, int *neg)
{
    if (n >= 1 && (s[0] == '+' || s[0] == '-')) { *neg = s[0] == '-'; return 1; }
    if (n >= 3 && memcmp(s, "\xE2\x88\x92", 3) == 0) { *neg = 1; return 3; }
    return 0;
}

enum { SEP_NONE, SEP_COMMA, SEP_DOT, SEP_SPACE, SEP_APOS };

/* Separator at s[i]: its kind and byte length, or SEP_NONE. */
static int sep_at(const char *s, size_t n, size_t i, size_t *len)
{
    *len = 1;
    if (s[i] == ',') return SEP_COMMA;
    if (s[i] == '.') return SEP_DOT;
    if (s[i] == ' ') return SEP_SPACE;
    if (s[i] == '\'') return SEP_APOS;
    if (i + 2 <= n && memcmp(s + i, "\xC2\xA0", 2) == 0) { *len = 2; return SEP_SPACE; }
    if (i + 3 <= n && (memcmp(s + i, "\xE2\x80\xAF", 3) == 0 ||
                       memcmp(s + i, "\xE2\x80\x89", 3) == 0)) { *len = 3; return SEP_SPACE; }
    if (i + 3 <= n && memcmp(s + i, "\xE2\x80\x99", 3) == 0) { *len = 3; return SEP_APOS; }
    return SEP_NONE;
}

#define MAX_GROUPS 64

static deg_status number_fail(const char *s, size_t n, const char *why)
{
    return dg_fail(DEG_ERR_FORMAT, "number \"%.*s\": %s", (int)(n > 80 ? 80 : n), s, why);
}

/* Write sign + digits/fraction/exponent in JSON form. int_digits has no
 * leading zeros (or is "0"). */
static deg_status emit_number(char *out, size_t cap, int neg, const char *ip, size_t il,
                              const char *fp, size_t fl, int has_frac, const char *ep,
                              size_t el, int integer_only, const char *s, size_t n)
{
    /* Drop leading zeros of the integer part. */
    while (il > 1 && ip[0] == '0') { ip++; il--; }
    if (il == 0) { ip = "0"; il = 1; }
    /* Trailing fraction zeros carry no value. */
    while (fl > 0 && fp[fl - 1] == '0') fl--;
    int all_zero = (il == 1 && ip[0] == '0') && fl == 0;
    if (all_zero) neg = 0;
    size_t need = il + fl + el + 8;
    if (cap < need) return dg_fail(DEG_ERR_ARG, "number: output buffer too small");
    char *o = out;
    if (integer_only) {
        /* Shift the decimal point by the exponent: value = ip.fp x 10^e. */
        long e = 0;
        if (el > 0) {
            size_t k = 0;
            int eneg = 0;
            if (ep[0] == '+' || ep[0] == '-') { eneg = ep[0] == '-'; k = 1; }
            for (; k < el; k++) {
                if (e > 100000) break;
                e = e * 10 + (ep[k] - '0');
            }
            if (eneg) e = -e;
        }
        /* digits D = ip fp, scale 10^(e - fl) */
        char digits[96];
        size_t dl = 0;
        if (il + fl > 40) return dg_fail(DEG_ERR_RANGE, "number \"%.*s\": beyond int64", (int)(n > 80 ? 80 : n), s);
        memcpy(digits, ip, il); dl = il;
        if (fl) memcpy(digits + dl, fp, fl);
        dl += fl;
        long scale = e - (long)fl;
        if (scale < 0) {
            for (long k = 0; k < -scale; k++) {
                if ((long)dl - 1 - k < 0) break;
                if (digits[dl - 1 - k] != '0')
                    return dg_fail(DEG_ERR_RANGE, "number \"%.*s\": fractional value for an integer", (int)(n > 80 ? 80 : n), s);
            }
            dl = (long)dl + scale > 0 ? (size_t)((long)dl + scale) : 0;
        } else {
            if (scale > 40) return dg_fail(DEG_ERR_RANGE, "number \"%.*s\": beyond int64", (int)(n > 80 ? 80 : n), s);
            for (long k = 0; k < scale; k++) digits[dl++] = '0';
        }
        size_t st = 0;
        while (st + 1 < dl && digits[st] == '0') st++;
        if (dl == 0) { digits[0] = '0'; dl = 1; st = 0; }
        size_t len = dl - st;
        int zero = len == 1 && digits[st] == '0';
        /* int64: at most 19 digits, compared as text with the limits. */
        const char *lim = neg ? "9223372036854775808" : "9223372036854775807";
        if (len > 19 || (len == 19 && memcmp(digits + st, lim, 19) > 0))
            return dg_fail(DEG_ERR_RANGE, "number \"%.*s\": beyond int64", (int)(n > 80 ? 80 : n), s);
        if (neg && !zero) *o++ = '-';
        memcpy(o, digits + st, len);
        o[len] = '\0';
        return DEG_OK;
    }
    if (neg) *o++ = '-';
    memcpy(o, ip, il); o += il;
    if (has_frac || fl > 0) {
        *o++ = '.';
        if (fl == 0) *o++ = '0';
        else { memcpy(o, fp, fl); o += fl; }
    }
    if (el > 0) {
        *o++ = 'e';
        size_t k = 0;
        if (ep[0] == '-') *o++ = '-';
        if (ep[0] == '+' || ep[0] == '-') k = 1;
        while (k + 1 < el && ep[k] == '0') k++;
        memcpy(o, ep + k, el - k); o += el - k;
    }
    *o = '\0';
    return DEG_OK;
}

/* Sign, currency and percent marks around the digits (parse.h "Number rule"):
 * stripped from [*ps, *ps + *pn), *neg set by the sign. */
static void strip_marks(const char **ps, size_t *pn, int *neg)
{
    const char *s = *ps;
    size_t n = *pn;
    int have_sign = 0, have_cur = 0, have_pct = 0;
    /* Prefix marks: sign and currency in either order, spaces after a
     * currency mark. */
    for (;;) {
        size_t l;
        int ng = 0;
        if (!have_sign && (l = sign_prefix(s, n, &ng)) > 0) {
            have_sign = 1; *neg = ng; s += l; n -= l;
            continue;
        }
        if (!have_cur && (l = currency_prefix(s, n)) > 0) {
            have_cur = 1; s += l; n -= l;
            dg_parse_trim_ws(&s, &n);
            continue;
        }
        break;
    }
    /* Suffix marks: percent or currency, spaces before. */
    for (;;) {
        size_t l;
        if (!have_pct && !have_cur && n > 0 && s[n - 1] == '%') {
            have_pct = 1; n--; dg_parse_trim_ws(&s, &n);
            continue;
        }
        if (!have_cur && !have_pct && (l = currency_suffix(s, n)) > 0 && l < n) {
            have_cur = 1; n -= l; dg_parse_trim_ws(&s, &n);
            continue;
        }
        break;
    }
    if (!have_sign) {
        /* "$ -5" after the currency mark was stripped with its space. */
        size_t l;
        int ng = 0;
        if ((l = sign_prefix(s, n, &ng)) > 0) { *neg = ng; s += l; n -= l; }
    }
    *ps = s;
    *pn = n;
}

/* Exponent form: digits[.digits]e[+-]digits, no grouping. Returns 0 if [s, s+n)
 * is not in that form, else 1 with the result in *st. */
static int exponent_form(const char *s, size_t n, int neg, int integer_only, char *out,
                         size_t cap, const char *s0, size_t n0, deg_status *st)
{
    size_t i = 0, il, fs = 0, fl = 0, es;
    while (i < n && is_digit(s[i])) i++;
    il = i;
    int frac = 0;
    if (i < n && s[i] == '.') {
        frac = 1; i++; fs = i;
        while (i < n && is_digit(s[i])) i++;
        fl = i - fs;
    }
    if (!(i < n && (s[i] == 'e' || s[i] == 'E') && (il > 0 || fl > 0) && !(frac && fl == 0)))
        return 0;
    i++;
    es = i;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t ds = i;
    while (i < n && is_digit(s[i])) i++;
    if (i == n && i > ds) /* il == 0: ".5e3" */
        *st = emit_number(out, cap, neg, s, il, s + fs, fl, frac, s + es, n - es, integer_only,
                          s0, n0);
    else
        *st = number_fail(s0, n0, "malformed exponent");
    return 1;
}

/* The digit groups of a number and the separators between them. */
typedef struct groups {
    size_t gs[MAX_GROUPS], gl[MAX_GROUPS]; /* group g: bytes [gs, gs + gl) */
    int sk[MAX_GROUPS + 1];                /* sk[g]: the separator before group g (g >= 1) */
    size_t ng;
    int lead_sep;                          /* a '.' or ',' before the first group */
} groups;

static deg_status split_groups(const char *s, size_t n, const char *s0, size_t n0, groups *G)
{
    size_t ng = 0, i = 0;
    G->lead_sep = SEP_NONE;
    {
        size_t l;
        int k = sep_at(s, n, 0, &l);
        if (k == SEP_DOT || k == SEP_COMMA) { G->lead_sep = k; i = l; }
    }
    for (;;) {
        if (ng == MAX_GROUPS) return number_fail(s0, n0, "too many digit groups");
        size_t st = i;
        while (i < n && is_digit(s[i])) i++;
        if (i == st) {
            if (i < n && !is_digit(s[i])) {
                size_t l;
                if (sep_at(s, n, i, &l) != SEP_NONE)
                    return number_fail(s0, n0, ng ? "two separators in a row or trailing separator"
                                                  : "starts with a separator");
                return number_fail(s0, n0, "not a digit, separator, sign, currency or percent mark");
            }
            return number_fail(s0, n0, ng ? "ends with a separator" : "no digits");
        }
        G->gs[ng] = st; G->gl[ng] = i - st;
        ng++;
        G->ng = ng;
        if (i == n) break;
        size_t l;
        int k = sep_at(s, n, i, &l);
        if (k == SEP_NONE) return number_fail(s0, n0, "not a digit, separator, sign, currency or percent mark");
        G->sk[ng] = k;  /* separator before group ng */
        i += l;
        if (i == n) return number_fail(s0, n0, "ends with a separator");
    }
    return DEG_OK;
}

/* Which groups are the integer part: groups [0, *ni), the fraction group ni (if
 * any); the thousands separator must group them (1-3 digits, then groups of 3;
 * Indian grouping with commas). */
static deg_status integer_groups(const char *s, const groups *G, const char *s0, size_t n0,
                                 size_t *ni_out)
{
    const size_t *gs = G->gs, *gl = G->gl;
    const int *sk = G->sk;
    size_t ng = G->ng, ni = ng;
    int thousands = SEP_NONE;
    if (ng > 1) {
        int last = sk[ng - 1];
        int uniform = 1;
        for (size_t g = 1; g < ng; g++) if (sk[g] != last) uniform = 0;
        if (uniform) {
            if (last == SEP_SPACE || last == SEP_APOS) thousands = last;
            else if (last == SEP_DOT) {
                if (ng == 2) ni = 1;
                else thousands = SEP_DOT;
            } else { /* comma */
                if (ng == 2) {
                    int grouping = gl[1] == 3 && gl[0] <= 3 && s[gs[0]] != '0';
                    if (grouping) thousands = SEP_COMMA;
                    else ni = 1;
                } else thousands = SEP_COMMA;
            }
        } else {
            if (last != SEP_DOT && last != SEP_COMMA)
                return number_fail(s0, n0, "mixed separators: the last one must be the decimal '.' or ','");
            int other = sk[1];
            for (size_t g = 1; g < ng - 1; g++)
                if (sk[g] != other) return number_fail(s0, n0, "more than two kinds of separator");
            if (other == last) return number_fail(s0, n0, "decimal separator used twice");
            thousands = other;
            ni = ng - 1;
        }
    }
    /* Validate thousands grouping of groups [0, ni). */
    if (ni > 1) {
        int ok = gl[0] >= 1 && gl[0] <= 3 && s[gs[0]] != '0';
        for (size_t g = 1; g < ni; g++) if (gl[g] != 3) ok = 0;
        if (!ok && thousands == SEP_COMMA && ni >= 3) {
            /* Indian grouping: 1-2 digit lead, then 2-digit groups, last 3. */
            ok = gl[0] >= 1 && gl[0] <= 2 && s[gs[0]] != '0' && gl[ni - 1] == 3;
            for (size_t g = 1; g + 1 < ni; g++) if (gl[g] != 2) ok = 0;
        }
        if (!ok) return number_fail(s0, n0, "digit groups are not thousands groups (1-3 digits, then groups of 3)");
    }
    *ni_out = ni;
    return DEG_OK;
}

deg_status dg_parse_number(const char *s0, size_t n0, int integer_only, char *out, size_t cap)
{
    if (!s0 || !out) return dg_fail(DEG_ERR_ARG, "number: NULL argument");
    DG_TRY(dg_parse_utf8_check(s0, n0, "number", NULL));
    const char *s = s0;
    size_t n = n0;
    dg_parse_trim_ws(&s, &n);
    if (n == 0) return number_fail(s0, n0, "empty");
    int neg = 0;
    strip_marks(&s, &n, &neg);
    if (n == 0) return number_fail(s0, n0, "no digits");
    if (s[0] == '(' || s[n - 1] == ')')
        return number_fail(s0, n0, "parentheses are not read as a sign (ambiguous accounting negative)");
    deg_status st;
    if (exponent_form(s, n, neg, integer_only, out, cap, s0, n0, &st)) return st;
    groups G;
    DG_TRY(split_groups(s, n, s0, n0, &G));
    if (G.lead_sep != SEP_NONE) {
        if (G.ng != 1) return number_fail(s0, n0, "a leading decimal separator must be followed by digits only");
        return emit_number(out, cap, neg, "0", 1, s + G.gs[0], G.gl[0], 1, NULL, 0, integer_only, s0, n0);
    }
    size_t ni = G.ng;
    DG_TRY(integer_groups(s, &G, s0, n0, &ni));
    char ibuf[MAX_GROUPS * 4];
    char *ip;
    size_t il = 0;
    char *heap = NULL;
    if (n + 1 > sizeof ibuf) {
        heap = malloc(n + 1);
        if (!heap) return dg_fail(DEG_ERR_NOMEM, "number: out of memory");
        ip = heap;
    } else ip = ibuf;
    for (size_t g = 0; g < ni; g++) { memcpy(ip + il, s + G.gs[g], G.gl[g]); il += G.gl[g]; }
    if (ni < G.ng)
        st = emit_number(out, cap, neg, ip, il, s + G.gs[ni], G.gl[ni], 1, NULL, 0, integer_only, s0, n0);
    else
        st = emit_number(out, cap, neg, ip, il, NULL, 0, 0, NULL, 0, integer_only, s0, n0);
    free(heap);
    return st;
}
