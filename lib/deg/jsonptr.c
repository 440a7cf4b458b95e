/* JSON pointers (RFC 6901) and local $refs: escaping, joining, evaluation (jsonptr.h). */
#include "deg/jsonptr.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

size_t dg_jsonptr_escaped_len(const char *seg, size_t n)
{
    size_t m = n;
    for (size_t i = 0; i < n; i++) m += seg[i] == '~' || seg[i] == '/';
    return m;
}

char *dg_jsonptr_escape(char *dst, const char *seg, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (seg[i] == '~') { *dst++ = '~'; *dst++ = '0'; }
        else if (seg[i] == '/') { *dst++ = '~'; *dst++ = '1'; }
        else *dst++ = seg[i];
    }
    return dst;
}

char *dg_loc_key(const char *loc, const char *key)
{
    size_t n = strlen(loc), k = strlen(key);
    char *s = malloc(n + 1 + dg_jsonptr_escaped_len(key, k) + 1);
    if (!s) return NULL;
    memcpy(s, loc, n);
    s[n] = '/';
    *dg_jsonptr_escape(s + n + 1, key, k) = '\0';
    return s;
}

char *dg_loc_index(const char *loc, size_t i)
{
    size_t n = strlen(loc) + 24;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s/%zu", loc, i);
    return s;
}

/* Array index segment (RFC 6901 §4): "0" or [1-9][0-9]*, below size. *bad = 2 when tok
 * is not an index at all ("-", "01", "+1", "x"). */
static const json_t *array_member(const json_t *a, const char *tok, size_t t, int *bad)
{
    if (t == 0 || (tok[0] == '0' && t > 1)) { *bad = 2; return NULL; }
    size_t i = 0;
    for (size_t k = 0; k < t; k++) {
        if (tok[k] < '0' || tok[k] > '9') { *bad = 2; return NULL; }
        if (i > (SIZE_MAX - 9) / 10) return NULL; /* beyond any array */
        i = 10 * i + (size_t)(tok[k] - '0');
    }
    return i < json_array_size(a) ? json_array_get(a, i) : NULL;
}

const json_t *dg_jsonptr_get(const json_t *root, const char *ptr, int *bad_syntax)
{
    int bad_local;
    int *bad = bad_syntax ? bad_syntax : &bad_local;
    *bad = 0;
    if (!*ptr) return root;
    if (*ptr != '/') { *bad = 1; return NULL; }
    char *tok = malloc(strlen(ptr) + 1); /* a segment never grows when unescaped */
    if (!tok) return NULL;
    const json_t *cur = root;
    const char *p = ptr;
    while (cur && *p == '/') {
        p++;
        size_t t = 0;
        for (; *p && *p != '/'; p++) {
            if (*p != '~') { tok[t++] = *p; continue; }
            if (p[1] != '0' && p[1] != '1') { *bad = 1; cur = NULL; break; }
            tok[t++] = p[1] == '0' ? '~' : '/';
            p++;
        }
        if (!cur) break;
        tok[t] = '\0';
        if (json_is_object(cur)) cur = json_object_get(cur, tok);
        else if (json_is_array(cur)) cur = array_member(cur, tok, t, bad);
        else cur = NULL;
    }
    free(tok);
    return cur;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A byte RFC 3986 §3.5 allows in a fragment as it is: pchar (unreserved, sub-delims,
 * ':' '@') or '/' '?' ('%' starts a percent-encoding, checked by the caller). */
static bool fragment_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (c && strchr("-._~!$&'()*+,;=:@/?", c));
}

/* The fragment of ref (after "#") checked (RFC 3986 §3.5) and percent-decoded into
 * frag (room for strlen(ref) bytes + NUL); its decoded length, or -1 with why set. */
static long fragment_decode(const char *ref, char *frag, char *why, size_t why_cap)
{
    size_t o = 0;
    for (const char *p = ref + 1; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '%') {
            int h = hexval(p[1]), l = h >= 0 ? hexval(p[2]) : -1;
            if (h < 0 || l < 0) {
                snprintf(why, why_cap, "$ref \"%.200s\": bad percent-encoding at offset %zu "
                         "('%%' must start %%XX, two hex digits: RFC 3986 §2.1; a '%%' itself "
                         "is %%25)", ref, (size_t)(p - ref));
                return -1;
            }
            frag[o++] = (char)(h * 16 + l);
            p += 2;
        } else if (fragment_char(c)) {
            frag[o++] = (char)c;
        } else {
            char shown[16];
            if (c > 0x20 && c < 0x7f) snprintf(shown, sizeof shown, "'%c'", c);
            else snprintf(shown, sizeof shown, "byte 0x%02X", c);
            snprintf(why, why_cap, "$ref \"%.200s\" is not a URI reference: its fragment holds "
                     "%s at offset %zu, which RFC 3986 §3.5 does not allow there; "
                     "percent-encode it (%%%02X)", ref, shown, (size_t)(p - ref), c);
            return -1;
        }
    }
    frag[o] = '\0';
    return (long)o;
}

const json_t *dg_ref_resolve(const json_t *root, const char *ref, char **tloc, char *why,
                             size_t why_cap)
{
    *tloc = NULL;
    if (ref[0] != '#') {
        snprintf(why, why_cap, "$ref \"%.200s\" is not local: only \"#\" and \"#/...\" "
                 "references are supported", ref);
        return NULL;
    }
    /* JSON Schema (2020-12 core §5): a fragment that is empty or starts with "/" is a
     * JSON pointer; any other is a plain name ("#%2F..." too: %2F is not "/" there) */
    if (ref[1] && ref[1] != '/') {
        snprintf(why, why_cap, "$ref \"%.200s\": plain-name fragments are not supported; "
                 "use a JSON pointer \"#/...\" (a pointer fragment starts with \"/\" as "
                 "written, not percent-encoded)", ref);
        return NULL;
    }
    /* URI fragment: percent-decode first, then read it as a JSON pointer (RFC 6901 §6). */
    char *frag = malloc(strlen(ref) + 1);
    if (!frag) {
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    long n = fragment_decode(ref, frag, why, why_cap);
    size_t bad_at = 0;
    if (n < 0) {
        free(frag);
        return NULL;
    }
    if (strlen(frag) != (size_t)n) {
        /* jansson refuses NUL in member names, and no array index holds one */
        snprintf(why, why_cap, "$ref \"%.200s\" points to nothing in this schema: %%00 "
                 "decodes to a NUL character, which no member name holds", ref);
        free(frag);
        return NULL;
    }
    if (!dg_utf8_validate(frag, (size_t)n, &bad_at)) {
        snprintf(why, why_cap, "$ref \"%.200s\": its fragment percent-decodes to bytes that are "
                 "not UTF-8 (decoded byte %zu); a JSON pointer is a Unicode string, percent-"
                 "encoded as UTF-8 (RFC 6901 §6, RFC 3986 §2.5)", ref, bad_at);
        free(frag);
        return NULL;
    }
    int bad = 0;
    const json_t *cur = dg_jsonptr_get(root, frag, &bad);
    if (!cur) {
        if (bad == 1)
            snprintf(why, why_cap, "$ref \"%.200s\": bad JSON pointer escape (~ must be "
                     "followed by 0 or 1: RFC 6901 §3)", ref);
        else if (bad == 2)
            snprintf(why, why_cap, "$ref \"%.200s\": a segment on an array is not an array "
                     "index (RFC 6901 §4: 0, or digits without a leading 0; \"-\" names no "
                     "element)", ref);
        else
            snprintf(why, why_cap, "$ref \"%.200s\" points to nothing in this schema", ref);
        free(frag);
        return NULL;
    }
    *tloc = frag;
    return cur;
}
