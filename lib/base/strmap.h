/* A small string -> index map (open addressing, FNV-1a). Keys are borrowed
 * and must outlive the map. Used for tensor-name lookups. */
#ifndef DG_BASE_STRMAP_H
#define DG_BASE_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct dg_strmap {
    const char **keys;
    size_t *vals;
    size_t cap;   /* power of two, 0 = empty map */
    size_t n;
} dg_strmap;

/* Room for n keys; 0 on success, -1 out of memory. */
/* 64-bit FNV-1a of a NUL-terminated string (Fowler-Noll-Vo, offset basis
 * 14695981039346656037, prime 1099511628211): stable across runs and
 * machines, so it also seeds per-field RNG streams (fill, features). */
uint64_t dg_fnv1a64(const char *s);

int dg_strmap_init(dg_strmap *m, size_t n);
void dg_strmap_free(dg_strmap *m);
/* Insert key -> val. Returns 1 if inserted, 0 if the key was already there
 * (*old receives its value, may be NULL), -1 if the map is full. */
int dg_strmap_put(dg_strmap *m, const char *key, size_t val, size_t *old);
/* 1 and *val if found, else 0. */
int dg_strmap_get(const dg_strmap *m, const char *key, size_t *val);

#endif
