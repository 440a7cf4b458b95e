/* Growable NUL-terminated string: appends, printf, reserve and truncate (strbuf.h). */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"

int dg_sb_reserve(dg_strbuf *b, size_t n)
{
    if (b->oom) return -1;
    if (n > SIZE_MAX - b->len - 1 || DG_GROW(b->p, b->cap, b->len + n + 1) != DEG_OK) {
        b->oom = 1;
        return -1;
    }
    return 0;
}

void dg_sb_truncate(dg_strbuf *b, size_t len)
{
    if (len >= b->len) return;
    b->len = len;
    b->p[len] = '\0';
}

void dg_sb_put(dg_strbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (dg_sb_reserve(b, n) != 0) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void dg_sb_puts(dg_strbuf *b, const char *s) { dg_sb_put(b, s, strlen(s)); }

void dg_sb_printf(dg_strbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        dg_sb_put(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    dg_sb_put(b, big, (size_t)n);
    free(big);
}
