/* render.c - JSON text as Python's json.dumps writes it (see render.h). */
#include "deg/render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/strbuf.h"


/* Try the decimal strings one unit above and below tmp's last mantissa
 * digit (tmp as printed by %.*e); on round trip copy it into tmp. */
static int adjust_last_digit(char *tmp, double x)
{
    for (int dir = 1; dir >= -1; dir -= 2) {
        char c[40];
        snprintf(c, sizeof c, "%s", tmp);
        char *e = strchr(c, 'e');
        if (!e) return 0;
        char *d = e - 1;
        int carry = dir;
        while (carry && d >= c) {
            if (*d == '.' ) { d--; continue; }
            if (*d < '0' || *d > '9') break;
            int v = *d - '0' + carry;
            carry = 0;
            if (v > 9) { v = 0; carry = 1; }
            else if (v < 0) { v = 9; carry = -1; }
            *d = (char)('0' + v);
            d--;
        }
        /* A carry out of the leading digit (9.99e5 -> 10.0e5) or a leading
         * zero is not a prec-digit string: skip it. */
        const char *m = c[0] == '-' ? c + 1 : c;
        if (carry || *m == '0') continue;
        if (strtod(c, NULL) == x) {
            memcpy(tmp, c, strlen(c) + 1);
            return 1;
        }
    }
    return 0;
}

int dg_float_repr(double x, char *buf, size_t cap)
{
    /* Shortest digit string that reads back as x (repr's round-trip rule). */
    char tmp[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
        if (strtod(tmp, NULL) == x) break;
        /* Just below a power of two the round-trip interval is lopsided:
         * the correctly rounded prec-digit string may fall outside it while
         * its neighbour one unit up or down is inside (2^-24 reads back
         * from 5.960464477539063e-08, not ...062e-08). repr takes that one. */
        if (prec < 17 && adjust_last_digit(tmp, x)) break;
    }
    /* tmp = [-]d[.ddd]e[+-]XX */
    const char *s = tmp;
    int neg = 0;
    if (*s == '-') { neg = 1; s++; }
    char digits[24];
    int nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') digits[nd++] = *s;
    int exp10 = atoi(s + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--; /* %.*e may pad with zeros */
    digits[nd] = '\0';

    char out[64];
    int o = 0;
    if (neg) out[o++] = '-';
    if (exp10 < -4 || exp10 >= 16) {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            for (int i = 1; i < nd; i++) out[o++] = digits[i];
        }
        o += snprintf(out + o, sizeof out - (size_t)o, "e%c%02d", exp10 < 0 ? '-' : '+',
                      exp10 < 0 ? -exp10 : exp10);
    } else if (exp10 < 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = -1; i > exp10; i--) out[o++] = '0';
        for (int i = 0; i < nd; i++) out[o++] = digits[i];
    } else {
        for (int i = 0; i <= exp10; i++) out[o++] = i < nd ? digits[i] : '0';
        out[o++] = '.';
        if (nd > exp10 + 1)
            for (int i = exp10 + 1; i < nd; i++) out[o++] = digits[i];
        else
            out[o++] = '0';
    }
    out[o] = '\0';
    snprintf(buf, cap, "%s", out);
    return o;
}

static void put_string(dg_strbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    dg_sb_put(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[7];
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c < 0x20) {
            switch (c) {
            case '\n': esc = "\\n"; break;
            case '\r': esc = "\\r"; break;
            case '\t': esc = "\\t"; break;
            case '\b': esc = "\\b"; break;
            case '\f': esc = "\\f"; break;
            default:
                u[0] = '\\'; u[1] = 'u'; u[2] = '0'; u[3] = '0';
                u[4] = hex[c >> 4]; u[5] = hex[c & 15]; u[6] = '\0';
                esc = u;
            }
        }
        if (esc) {
            dg_sb_put(b, s + i - run, run);
            run = 0;
            dg_sb_puts(b, esc);
        } else {
            run++;
        }
    }
    dg_sb_put(b, s + n - run, run);
    dg_sb_put(b, "\"", 1);
}

typedef struct kv {
    const char *key;
    size_t klen;
    json_t *value;
} kv;

static int kv_cmp(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, n); /* UTF-8 byte order = code point order */
    if (c) return c;
    return x->klen < y->klen ? -1 : x->klen > y->klen;
}

static deg_status render(dg_strbuf *b, const json_t *v, int flags, int depth, const json_t *raw)
{
    if (depth > DG_RENDER_MAX_DEPTH)
        return dg_fail(DEG_ERR_RANGE, "render JSON: nested deeper than %d levels",
                       DG_RENDER_MAX_DEPTH);
    const char *isep = (flags & DG_RENDER_COMPACT) ? "," : ", ";
    const char *ksep = (flags & DG_RENDER_COMPACT) ? ":" : ": ";
    char num[64];
    switch (json_typeof(v)) {
    case JSON_NULL: dg_sb_puts(b, "null"); break;
    case JSON_TRUE: dg_sb_puts(b, "true"); break;
    case JSON_FALSE: dg_sb_puts(b, "false"); break;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        dg_sb_puts(b, num);
        break;
    case JSON_REAL: {
        double x = json_real_value(v);
        if (!isfinite(x))
            return dg_fail(DEG_ERR_NUMERIC, "render JSON: non-finite number");
        dg_float_repr(x, num, sizeof num);
        dg_sb_puts(b, num);
        break;
    }
    case JSON_STRING: {
        const char *sv = json_string_value(v);
        size_t sn = json_string_length(v);
        if (raw && sn > DG_BIGINT_MARK_LEN && !memcmp(sv, DG_BIGINT_MARK, DG_BIGINT_MARK_LEN)) {
            json_t *r = json_array_get(raw, strtoul(sv + DG_BIGINT_MARK_LEN, NULL, 10));
            if (json_is_string(r)) {
                dg_sb_puts(b, json_string_value(r));
                break;
            }
        }
        put_string(b, sv, sn);
        break;
    }
    case JSON_ARRAY: {
        dg_sb_put(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) dg_sb_puts(b, isep);
            DG_TRY(render(b, json_array_get(v, i), flags, depth + 1, raw));
        }
        dg_sb_put(b, "]", 1);
        break;
    }
    case JSON_OBJECT: {
        size_t n = json_object_size(v);
        kv *items = n ? malloc(n * sizeof *items) : NULL;
        if (n && !items) return dg_fail(DEG_ERR_NOMEM, "render JSON: out of memory");
        size_t i = 0;
        const char *key;
        size_t klen;
        json_t *val;
        json_object_keylen_foreach((json_t *)v, key, klen, val)
        {
            items[i].key = key;
            items[i].klen = klen;
            items[i].value = val;
            i++;
        }
        if ((flags & DG_RENDER_SORT_KEYS) && n > 1) qsort(items, n, sizeof *items, kv_cmp);
        dg_sb_put(b, "{", 1);
        deg_status s = DEG_OK;
        for (i = 0; i < n && s == DEG_OK; i++) {
            if (i) dg_sb_puts(b, isep);
            put_string(b, items[i].key, items[i].klen);
            dg_sb_puts(b, ksep);
            s = render(b, items[i].value, flags, depth + 1, raw);
        }
        free(items);
        DG_TRY(s);
        dg_sb_put(b, "}", 1);
        break;
    }
    }
    return DEG_OK;
}

char *dg_json_render(const json_t *value, int flags)
{
    return dg_json_render_raw(value, flags, NULL);
}

char *dg_json_render_raw(const json_t *value, int flags, const json_t *raw)
{
    dg_strbuf b = {0};
    deg_status s = render(&b, value, flags, 0, raw);
    if (s == DEG_OK && b.oom) s = dg_fail(DEG_ERR_NOMEM, "render JSON: out of memory");
    if (s != DEG_OK) {
        free(b.p);
        return NULL;
    }
    if (!b.p) return strdup("");
    return b.p;
}
