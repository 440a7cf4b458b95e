#include "base/utf8.h"

int dg_utf8_decode(const char *str, size_t len, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    if (len == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    /* Lead byte ranges and the allowed range of the second byte (table 3-7):
     * the narrowed second-byte ranges exclude overlongs (E0, F0), surrogates
     * (ED) and code points above U+10FFFF (F4). */
    int n;
    unsigned lo = 0x80, hi = 0xBF;
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        v = c & 0x0F;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        v = c & 0x07;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0; /* continuation byte, C0/C1 (overlong), F5..FF */
    }
    if (len < (size_t)n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    v = (v << 6) | (s[1] & 0x3F);
    for (int i = 2; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return n;
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
