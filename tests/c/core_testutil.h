/* Small helpers shared by the core C tests (fileio, gguf, safetensors,
 * dequant): temporary directories, whole-file read/write, a byte builder. */
#ifndef DEG_TESTS_CORE_TESTUTIL_H
#define DEG_TESTS_CORE_TESTUTIL_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Fresh directory under $TMPDIR (or /tmp); caller frees the string. */
static inline char *tu_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char *p;
    if (asprintf(&p, "%s/degtest.XXXXXX", base && *base ? base : "/tmp") < 0) abort();
    cr_assert_not_null(mkdtemp(p), "mkdtemp failed");
    return p;
}

static inline void tu_rmrf(const char *dir)
{
    char *cmd;
    if (asprintf(&cmd, "rm -rf '%s'", dir) < 0) abort();
    if (system(cmd) != 0) cr_log_warn("could not remove %s", dir);
    free(cmd);
}

static inline char *tu_path(const char *dir, const char *name)
{
    char *p;
    if (asprintf(&p, "%s/%s", dir, name) < 0) abort();
    return p;
}

static inline void tu_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    if (len) cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* Whole file into malloc'ed memory (NULL if absent). */
static inline uint8_t *tu_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    *len = 0;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) abort();
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Growable byte buffer for hand-made files. */
typedef struct tu_buf {
    uint8_t *p;
    size_t n, cap;
} tu_buf;

static inline void tu_put(tu_buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static inline void tu_u8(tu_buf *b, uint8_t v) { tu_put(b, &v, 1); }
static inline void tu_u32(tu_buf *b, uint32_t v) { tu_put(b, &v, 4); }
static inline void tu_u64(tu_buf *b, uint64_t v) { tu_put(b, &v, 8); }
static inline void tu_str(tu_buf *b, const char *s)
{
    tu_u64(b, strlen(s));
    tu_put(b, s, strlen(s));
}
static inline void tu_pad(tu_buf *b, size_t align)
{
    while (b->n % align) tu_u8(b, 0);
}

#endif
