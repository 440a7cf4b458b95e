/* Growable NUL-terminated string for building text (chat layouts, rendered
 * JSON, fork prompts). Allocation failure is sticky: appends after it are
 * no-ops and oom stays set, so a builder checks once at the end. */
#ifndef DG_BASE_STRBUF_H
#define DG_BASE_STRBUF_H

#include <stddef.h>

typedef struct dg_strbuf {
    char *p;      /* owned; NULL until the first append; free() when done */
    size_t len;   /* bytes in p, excluding the terminating NUL */
    size_t cap;
    int oom;      /* an allocation failed */
} dg_strbuf;

/* Room for n more bytes (and the NUL) in b->p, so that up to n bytes can be written
 * at b->p + b->len directly: 0, or -1 with b->oom set (an earlier failure, out of
 * memory, or a size past SIZE_MAX). */
int dg_sb_reserve(dg_strbuf *b, size_t n);
/* Cut b back to its first len bytes (nothing when len >= b->len). */
void dg_sb_truncate(dg_strbuf *b, size_t len);
void dg_sb_put(dg_strbuf *b, const char *s, size_t n);
void dg_sb_puts(dg_strbuf *b, const char *s);
void dg_sb_printf(dg_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
