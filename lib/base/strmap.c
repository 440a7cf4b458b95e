/* A small string -> index map: FNV-1a hashing and open addressing (strmap.h). */
#include "base/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"

uint64_t dg_fnv1a64(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t hash(const char *s)
{
    uint64_t h = dg_fnv1a64(s);
    return (size_t)(h ^ (h >> 29));
}

int dg_strmap_init(dg_strmap *m, size_t n)
{
    size_t cap = dg_grow_cap(0, 2 * n + 1); /* a power of two (the probe masks by cap - 1) */
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = malloc(cap * sizeof *m->vals);
    m->n = 0;
    if (!m->keys || !m->vals) {
        free(m->keys);
        free(m->vals);
        m->keys = NULL;
        m->vals = NULL;
        m->cap = 0;
        return -1;
    }
    m->cap = cap;
    return 0;
}

void dg_strmap_free(dg_strmap *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}

int dg_strmap_put(dg_strmap *m, const char *key, size_t val, size_t *old)
{
    if (m->cap == 0 || 2 * (m->n + 1) > m->cap) return -1;
    size_t i = hash(key) & (m->cap - 1);
    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0) {
            if (old) *old = m->vals[i];
            return 0;
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return 1;
}

int dg_strmap_get(const dg_strmap *m, const char *key, size_t *val)
{
    if (m->cap == 0 || !key) return 0;
    size_t i = hash(key) & (m->cap - 1);
    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0) {
            if (val) *val = m->vals[i];
            return 1;
        }
        i = (i + 1) & (m->cap - 1);
    }
    return 0;
}
