/* sentences.c - sentence ends of running text (sentences.h). */
#include "deg/sentences.h"

#include <stdint.h>

#include "base/utf8.h"

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Capital letters: ASCII, Latin-1 (the capitals of datagen's seven languages),
 * Greek and Cyrillic (basic blocks; lib/base holds no case tables). */
static int upper_cp(uint32_t c)
{
    if (c >= 'A' && c <= 'Z') return 1;
    if (c >= 0xC0 && c <= 0xDE) return c != 0xD7;            /* Latin-1, not U+00D7 x */
    if (c >= 0x391 && c <= 0x3A9) return c != 0x3A2;          /* Greek */
    if (c >= 0x400 && c <= 0x42F) return 1;                   /* Cyrillic */
    return 0;
}

static int ascii_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int dg_sentence_end(const char *s, size_t n, size_t b)
{
    if (b >= n || (s[b] != '.' && s[b] != '!' && s[b] != '?')) return 0;
    size_t j = b + 1;
    if (j >= n || !blank(s[j])) return 0;
    while (j < n && blank(s[j])) j++;
    uint32_t cp = 0;
    if (j >= n || !dg_utf8_decode(s + j, n - j, &cp) || !upper_cp(cp)) return 0;
    if (s[b] != '.') return 1;
    size_t k = b; /* the ASCII letters right before the '.' */
    while (k > 0 && ascii_letter(s[k - 1])) k--;
    size_t w = b - k;
    if (w == 1 && (k == 0 || (unsigned char)s[k - 1] < 0x80)) return 0; /* an initial */
    if (w >= 2 && w <= 3 && s[k] >= 'A' && s[k] <= 'Z') {
        int lower_rest = 1;
        for (size_t i = k + 1; i < b; i++) lower_rest &= s[i] >= 'a' && s[i] <= 'z';
        if (lower_rest && (k == 0 || (unsigned char)s[k - 1] < 0x80)) return 0; /* "Dem." "Mr." */
    }
    return 1;
}
