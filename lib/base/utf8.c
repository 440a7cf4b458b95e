/* Strict UTF-8: validation, decoding and encoding of code points (utf8.h). */
#include "base/utf8.h"

#include <stdlib.h>
#include <string.h>

/* Lead byte c of a multi-byte sequence: its length n (2..4), the allowed
 * range [lo, hi] of the second byte and the payload bits of c (table 3-7: the
 * narrowed second-byte ranges exclude overlongs (E0, F0), surrogates (ED) and
 * code points above U+10FFFF (F4)). 0 for a continuation byte, C0/C1
 * (overlong) and F5..FF. */
static int lead_info(unsigned c, unsigned *lo, unsigned *hi, uint32_t *v)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        *v = c & 0x1F;
        return 2;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        *v = c & 0x0F;
        if (c == 0xE0) *lo = 0xA0;
        if (c == 0xED) *hi = 0x9F;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        *v = c & 0x07;
        if (c == 0xF0) *lo = 0x90;
        if (c == 0xF4) *hi = 0x8F;
        return 4;
    }
    return 0;
}

int dg_utf8_decode(const char *str, size_t len, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    if (len == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    unsigned lo, hi;
    uint32_t v;
    int n = lead_info(c, &lo, &hi, &v);
    if (n == 0 || len < (size_t)n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    v = (v << 6) | (s[1] & 0x3F);
    for (int i = 2; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return n;
}

size_t dg_utf8_complete_len(const char *buf, size_t len)
{
    const unsigned char *s = (const unsigned char *)buf;
    size_t i = len;
    while (i > 0 && len - i < 3 && (s[i - 1] & 0xC0) == 0x80) i--;
    if (i == 0) return len;
    size_t lead = i - 1;
    unsigned lo, hi;
    uint32_t v;
    int n = lead_info(s[lead], &lo, &hi, &v);
    if (n == 0 || len - lead >= (size_t)n) return len; /* not a lead, or not cut */
    if (len - lead >= 2 && (s[lead + 1] < lo || s[lead + 1] > hi)) return len;
    return lead;
}

int dg_utf8_validate(const char *buf, size_t len, size_t *bad_offset)
{
    const unsigned char *s = (const unsigned char *)buf;
    size_t i = 0;
    while (i < len) {
        /* ASCII fast path: 8 bytes at a time when none has the top bit. */
        while (i + 8 <= len) {
            uint64_t w;
            __builtin_memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= len) break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        int n = dg_utf8_decode(buf + i, len - i, &cp);
        if (n == 0) {
            if (bad_offset) *bad_offset = i;
            return 0;
        }
        i += (size_t)n;
    }
    return 1;
}

int dg_utf8_encode(uint32_t cp, char out[4])
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > 0x10FFFF) return 0;
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

char *dg_utf8_lossy(const char *buf, size_t len, size_t *out_len)
{
    const unsigned char *s = (const unsigned char *)buf;
    char *out = malloc(len * 3 + 1); /* a replaced byte grows to 3 */
    if (!out) return NULL;
    size_t i = 0, o = 0;
    while (i < len) {
        uint32_t cp;
        int n = dg_utf8_decode(buf + i, len - i, &cp);
        if (n > 0) {
            memcpy(out + o, buf + i, (size_t)n);
            o += (size_t)n;
            i += (size_t)n;
            continue;
        }
        /* the maximal subpart: the lead byte and the continuation bytes that
         * could still start a well-formed sequence with it */
        unsigned lo, hi;
        int need = lead_info(s[i], &lo, &hi, &cp);
        size_t k = 1;
        if (need > 0 && i + 1 < len && s[i + 1] >= lo && s[i + 1] <= hi) {
            k = 2;
            while ((int)k < need && i + k < len && (s[i + k] & 0xC0) == 0x80) k++;
        }
        memcpy(out + o, "\xEF\xBF\xBD", 3);
        o += 3;
        i += k;
    }
    out[o] = 0;
    if (out_len) *out_len = o;
    return out;
}

int dg_utf8_is_word(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z');
    if (cp <= 0xBF) return cp == 0xAA || cp == 0xB5 || cp == 0xBA;
    if (cp == 0xD7 || cp == 0xF7) return 0;
    if ((cp >= 0x0E00 && cp <= 0x0EFF) || (cp >= 0x1000 && cp <= 0x109F) ||
        (cp >= 0x1780 && cp <= 0x17FF) || (cp >= 0x2000 && cp <= 0x2BFF) ||
        (cp >= 0x2E80 && cp <= 0x9FFF) || (cp >= 0xF900 && cp <= 0xFAFF) ||
        (cp >= 0xFF00 && cp <= 0xFFEF))
        return 0;
    return 1;
}

size_t dg_utf8_count(const char *buf, size_t len)
{
    size_t c = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)buf[i] & 0xC0) != 0x80) c++;
    return c;
}
