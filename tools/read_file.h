/* read_file: a whole file into a malloc'd buffer, for the tools' C programs
 * (header-only: each tool is one translation unit on the public API). */
#ifndef DEG_TOOLS_READ_FILE_H
#define DEG_TOOLS_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

/* The bytes of path (*len of them; owned by the caller, free()), or NULL when
 * it cannot be read or memory runs out. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *g = realloc(buf, cap *= 2);
            if (!g) free(buf);
            buf = g;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

#endif
