#include "tokenizer/tok_utf8.h"

int dg_tok_utf8_decode(const char *str, size_t len, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    if (len == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    int n;
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; v = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3; v = c & 0x0F;
        if (c == 0xE0) lo = 0xA0;      /* overlong */
        if (c == 0xED) hi = 0x9F;      /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4; v = c & 0x07;
        if (c == 0xF0) lo = 0x90;      /* overlong */
        if (c == 0xF4) hi = 0x8F;      /* > U+10FFFF */
    } else {
        return 0;                      /* continuation byte, C0/C1, F5..FF */
    }
    if ((size_t)n > len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    v = (v << 6) | (s[1] & 0x3F);
    for (int i = 2; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return n;
}

int dg_tok_utf8_validate(const char *str, size_t len, size_t *bad)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        if (s[i] < 0x80) { i++; continue; }
        uint32_t cp;
        int n = dg_tok_utf8_decode(str + i, len - i, &cp);
        if (!n) {
            if (bad) *bad = i;
            return 0;
        }
        i += (size_t)n;
    }
    return 1;
}
