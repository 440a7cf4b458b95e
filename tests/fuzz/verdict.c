/* fuzz_verdict: libdeg's accept / reject verdict per input file, for the
 * differential replay of the fuzz corpora against reference implementations
 * (tests/fuzz/diff.py; issue 19).
 *
 *   fuzz_verdict KIND FILE...     KIND: utf8 | safetensors | gguf | validate
 *
 * One line per FILE, in order: "ok" or "ok <n>" (validate: the number of
 * violations), else "reject <STATUS> <message>" (status name and deg_errmsg(),
 * newlines and tabs as spaces). utf8: dg_utf8_validate over the file's bytes;
 * safetensors / gguf: the readers' open (every header check; the data is not
 * read); validate: deg_validate(schema, value) with the file holding
 * "<schema JSON>\0<value JSON>" (the fuzz target's layout; a file without NUL
 * is "skip"). Exit 2 on a usage or I/O error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "deg.h"
#include "format/gguf.h"
#include "format/safetensors.h"

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *b = malloc(cap + 1);
    size_t k;
    while (b && (k = fread(b + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) {
            char *nb = realloc(b, 2 * cap + 1);
            if (!nb) {
                free(b);
                b = NULL;
            }
            b = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (b) b[len] = 0;
    *n = len;
    return b;
}

static void reject(deg_status st)
{
    printf("reject %s ", deg_status_name(st));
    for (const char *p = deg_errmsg(); *p; p++) putchar(*p == '\n' || *p == '\t' ? ' ' : *p);
    putchar('\n');
}

static void one(const char *kind, const char *path)
{
    size_t n = 0;
    char *d = slurp(path, &n);
    if (!d) {
        fprintf(stderr, "fuzz_verdict: cannot read %s\n", path);
        exit(2);
    }
    deg_status st = DEG_OK;
    if (!strcmp(kind, "utf8")) {
        size_t bad = 0;
        if (dg_utf8_validate(d, n, &bad)) printf("ok\n");
        else printf("reject DEG_ERR_UTF8 ill-formed at byte %zu\n", bad);
    } else if (!strcmp(kind, "safetensors")) {
        dg_safetensors *s = NULL;
        if ((st = dg_safetensors_open(path, &s)) == DEG_OK) {
            printf("ok\n");
            dg_safetensors_close(s);
        } else {
            reject(st);
        }
    } else if (!strcmp(kind, "gguf")) {
        dg_gguf *g = NULL;
        if ((st = dg_gguf_open(path, &g)) == DEG_OK) {
            printf("ok\n");
            dg_gguf_close(g);
        } else {
            reject(st);
        }
    } else if (!strcmp(kind, "validate")) {
        const char *z = memchr(d, 0, n);
        if (!z) {
            printf("skip\n");
        } else {
            size_t nv = 0;
            char *errs = NULL;
            if ((st = deg_validate(d, z + 1, &nv, &errs)) == DEG_OK) printf("ok %zu\n", nv);
            else reject(st);
            deg_free(errs);
        }
    } else {
        fprintf(stderr, "fuzz_verdict: unknown kind %s\n", kind);
        exit(2);
    }
    free(d);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_verdict utf8|safetensors|gguf|validate FILE...\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) one(argv[1], argv[i]);
    return 0;
}
