/* repeats.c - the cut of generated text before its first repeated line (repeats.h). */
#include "deg/repeats.h"

#include <string.h>

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Line [b, e) of t with its blanks trimmed: *tb, *te. */
static void trim(const char *t, size_t b, size_t e, size_t *tb, size_t *te)
{
    while (b < e && blank(t[b])) b++;
    while (e > b && blank(t[e - 1])) e--;
    *tb = b;
    *te = e;
}

/* Some line of t before byte `end`, trimmed, equals x[b, e) (non-empty). */
static int seen_before(const char *t, size_t end, size_t b, size_t e, const char *x)
{
    size_t s = 0;
    while (s < end) {
        const char *nl = memchr(t + s, '\n', end - s);
        size_t le = nl ? (size_t)(nl - t) : end;
        size_t xb, xe;
        trim(t, s, le, &xb, &xe);
        if (xe - xb == e - b && memcmp(t + xb, x + b, e - b) == 0) return 1;
        s = le + 1;
    }
    return 0;
}

size_t dg_repeat_cut(const char *t, size_t n, const char *prompt, size_t np)
{
    size_t s = 0;
    int own = 0; /* a non-blank line before this one is no prompt line */
    while (s < n) {
        const char *nl = memchr(t + s, '\n', n - s);
        if (!nl) break; /* the last line is not complete yet */
        size_t le = (size_t)(nl - t);
        size_t b, e;
        trim(t, s, le, &b, &e);
        if (e > b) {
            int echo = np && seen_before(prompt, np, b, e, t);
            /* a repeat of the prompt ends the text only after a line of its own */
            if ((s > 0 && seen_before(t, s - 1, b, e, t)) || (echo && own)) {
                size_t cut = s;
                while (cut > 0 && (blank(t[cut - 1]) || t[cut - 1] == '\n')) cut--;
                return cut;
            }
            if (!echo) own = 1;
        }
        s = le + 1;
    }
    return n;
}
