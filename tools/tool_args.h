/* tool_args: the tools' command lines, "--key value" options read by a table and the document files (header-only). */
#ifndef DEG_TOOLS_TOOL_ARGS_H
#define DEG_TOOLS_TOOL_ARGS_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read_file.h"

/* What an option's value is parsed as, and the type of its destination. */
typedef enum { TOOL_I32, TOOL_SIZE, TOOL_U64, TOOL_F32, TOOL_STR } tool_opt_type;

/* One option: --key VALUE written to *dst (TOOL_STR: the const char * argv entry). */
typedef struct {
    const char *key;
    tool_opt_type type;
    void *dst;
} tool_opt;

/* Parse the whole of v as t into dst: 1, or 0 when v is not such a number (empty, trailing
 * characters, a sign on an unsigned value, out of the type's range, not finite). */
static inline int tool_parse_value(const char *v, tool_opt_type t, void *dst)
{
    char *end = NULL;
    errno = 0;
    if (t == TOOL_STR) {
        *(const char **)dst = v;
        return 1;
    }
    if (t == TOOL_F32) {
        float f = strtof(v, &end);
        if (end == v || *end || errno || !isfinite(f)) return 0;
        *(float *)dst = f;
        return 1;
    }
    if (t == TOOL_I32) {
        long long x = strtoll(v, &end, 10);
        if (end == v || *end || errno || x < INT32_MIN || x > INT32_MAX) return 0;
        *(int32_t *)dst = (int32_t)x;
        return 1;
    }
    if (strchr(v, '-')) return 0; /* strtoull would wrap "-1" */
    unsigned long long u = strtoull(v, &end, 10);
    if (end == v || *end || errno) return 0;
    if (t == TOOL_SIZE) {
        if (u > SIZE_MAX) return 0;
        *(size_t *)dst = (size_t)u;
    } else {
        *(uint64_t *)dst = (uint64_t)u;
    }
    return 1;
}

/* Read "--key VALUE" pairs from argv[*i] on, while the argument starts with "--", into
 * the destinations of opts[0..n_opts); *i is left on the first other argument. Returns
 * 0, or 2 (bad usage) after printing "prog: ..." to stderr: an unknown key, a key with
 * no value, or a value that is not a number of its option's type. */
static inline int tool_read_opts(const char *prog, int argc, char **argv, int *i,
                                 const tool_opt *opts, size_t n_opts)
{
    static const char *const what[] = {"an integer", "a count", "a count", "a number", ""};
    for (; *i < argc && strncmp(argv[*i], "--", 2) == 0; *i += 2) {
        const char *k = argv[*i] + 2;
        size_t o = 0;
        while (o < n_opts && strcmp(opts[o].key, k) != 0) o++;
        if (o == n_opts) {
            fprintf(stderr, "%s: unknown option %s\n", prog, argv[*i]);
            return 2;
        }
        if (*i + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value\n", prog, argv[*i]);
            return 2;
        }
        if (!tool_parse_value(argv[*i + 1], opts[o].type, opts[o].dst)) {
            fprintf(stderr, "%s: %s '%s' is not %s\n", prog, argv[*i], argv[*i + 1],
                    what[opts[o].type]);
            return 2;
        }
    }
    return 0;
}

/* The documents files[0..n): *texts[d] the bytes of files[d] (*lens[d] of them); all
 * malloc'd, freed by tool_free_docs. Returns 0, or 1 after printing "prog: cannot read
 * FILE" (or out of memory) to stderr, nothing left allocated. */
static inline int tool_read_docs(const char *prog, char *const *files, size_t n, char ***texts,
                                 size_t **lens)
{
    *texts = calloc(n ? n : 1, sizeof **texts);
    *lens = calloc(n ? n : 1, sizeof **lens);
    if (!*texts || !*lens) {
        fprintf(stderr, "%s: out of memory\n", prog);
        free(*texts);
        free(*lens);
        return 1;
    }
    for (size_t d = 0; d < n; d++)
        if (!((*texts)[d] = read_file(files[d], &(*lens)[d]))) {
            fprintf(stderr, "%s: cannot read %s\n", prog, files[d]);
            for (size_t e = 0; e < d; e++) free((*texts)[e]);
            free(*texts);
            free(*lens);
            return 1;
        }
    return 0;
}

static inline void tool_free_docs(char **texts, size_t *lens, size_t n)
{
    for (size_t d = 0; d < n; d++) free(texts[d]);
    free(texts);
    free(lens);
}

#endif
