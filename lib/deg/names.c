/* names.c - a plain span of capitalised words grows to the whole name (names.h). */
#include "deg/names.h"

static int upper(unsigned char c)
{
    return c >= 'A' && c <= 'Z';
}

static int letter(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c >= 0x80;
}

/* s[b, e) is one capitalised word or an initial. */
static int cap_word(const char *s, size_t b, size_t e)
{
    const unsigned char *u = (const unsigned char *)s;
    if (e <= b || !upper(u[b])) return 0;
    if (e - b == 2 && u[b + 1] == '.') return 1; /* "A." */
    for (size_t i = b + 1; i < e; i++)
        if (!letter(u[i]) && u[i] != '\'' && u[i] != '-') return 0;
    return 1;
}

static int space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* s[b, e) is capitalised words joined by single spaces: their count, else 0. */
static int cap_words(const char *s, size_t b, size_t e)
{
    int n = 0;
    size_t w = b;
    for (size_t i = b; i <= e; i++) {
        if (i < e && s[i] != ' ') continue;
        if (!cap_word(s, w, i)) return 0;
        n++;
        w = i + 1;
    }
    return n;
}

static int closer(char c)
{
    return c == '.' || c == ',' || c == ';' || c == ':' || c == ')' || c == '!' || c == '?';
}

int dg_name_extend(const char *s, size_t n, size_t *b0, size_t *b1)
{
    size_t b = *b0, e = *b1;
    int words = e > b ? cap_words(s, b, e) : 0;
    if (!words) return 0;
    for (;;) { /* left: "<Word> " before b */
        if (words >= DG_NAME_MAX_WORDS || b < 2 || s[b - 1] != ' ' || s[b - 2] == ' ') break;
        size_t w = b - 1;
        while (w > 0 && !space(s[w - 1])) w--;
        if (!cap_word(s, w, b - 1)) break;
        b = w;
        words++;
    }
    for (;;) { /* right: " <Word>" after e, maybe with a closing mark */
        if (words >= DG_NAME_MAX_WORDS || e + 1 >= n || s[e] != ' ' || space(s[e + 1])) break;
        size_t w = e + 1;
        while (w < n && !space(s[w])) w++;
        size_t we = w;
        if (!cap_word(s, e + 1, we) && we > e + 2 && closer(s[we - 1])) we--;
        if (!cap_word(s, e + 1, we)) break;
        e = we;
        words++;
        if (we < w) break; /* the closing mark ends the name */
    }
    if (b == *b0 && e == *b1) return 0;
    *b0 = b;
    *b1 = e;
    return 1;
}
