/* Model state of a trunk or fork (state.h): K/V rows of attention layers
 * (growable, large arrays mmap'd) and fixed-size blocks of recurrent layers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "base/grow.h"
#include "base/status.h"
#include "model/arch.h"
#include "model/state.h"

deg_status dg_state_init(dg_state *st, const deg_model *m)
{
    memset(st, 0, sizeof *st);
    size_t L = (size_t)m->hp.n_layer;
    st->n_layer = m->hp.n_layer;
    st->k = calloc(L, sizeof(float *));
    st->v = calloc(L, sizeof(float *));
    st->mapped = calloc(2 * L, sizeof(size_t));
    st->rec = calloc(L, sizeof(float *));
    st->rec_n = calloc(L, sizeof(size_t));
    st->has_kv = calloc(L, 1);
    st->row = calloc(L, sizeof(size_t));
    int ok = st->k && st->v && st->mapped && st->rec && st->rec_n && st->has_kv && st->row;
    for (size_t il = 0; ok && il < L; il++) {
        st->has_kv[il] = m->layers[il].has_kv != 0;
        st->row[il] = st->has_kv[il] ? m->layers[il].kv_row : 0;
        size_t n = m->layers[il].state_floats;
        if (!n) continue;
        st->rec[il] = calloc(n, sizeof(float));
        st->rec_n[il] = n;
        ok = st->rec[il] != NULL;
    }
    if (!ok) {
        dg_state_free(st);
        return dg_fail(DEG_ERR_NOMEM, "model state: out of memory");
    }
    return DEG_OK;
}

/* Layer arrays of at least DG_KV_MAP_BYTES are anonymous mappings grown with
 * mremap (Linux): growing never copies, the capacity beyond the rows written
 * is never resident, and freeing returns the pages at once. With the heap, a
 * doubled long-context cache left its old blocks behind as resident holes
 * (malloc's mmap threshold rises to 32 MiB as buffers are freed), so the
 * peak held up to twice the context K/V (§12.1 bound: weights + context K/V +
 * one fork batch). */
#define DG_KV_MAP_BYTES ((size_t)1 << 20)

/* Grow one layer array *slot to new_bytes; *mapped_bytes = its mapping's
 * length, 0 for a heap block. On failure the array is unchanged. */
static int kv_grow(float **slot, size_t *mapped_bytes, size_t old_bytes, size_t new_bytes)
{
#ifdef __linux__
    if (new_bytes >= DG_KV_MAP_BYTES) {
        void *q;
        if (*mapped_bytes) {
            q = mremap(*slot, *mapped_bytes, new_bytes, MREMAP_MAYMOVE);
        } else {
            q = mmap(NULL, new_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (q != MAP_FAILED && *slot) {
                memcpy(q, *slot, old_bytes);
                free(*slot);
            }
        }
        if (q == MAP_FAILED) return -1;
        *slot = q;
        *mapped_bytes = new_bytes;
        return 0;
    }
#endif
    (void)old_bytes;
    if (*mapped_bytes) return 0; /* a mapping never shrinks back to the heap */
    float *p = realloc(*slot, new_bytes);
    if (!p) return -1;
    *slot = p;
    return 0;
}

static void kv_release(float *p, size_t mapped_bytes)
{
#ifdef __linux__
    if (mapped_bytes) {
        munmap(p, mapped_bytes);
        return;
    }
#endif
    free(p);
}

deg_status dg_state_reserve(dg_state *st, size_t n)
{
    if (n <= st->cap) return DEG_OK;
    size_t cap = dg_grow_cap(st->cap, n);
    for (int il = 0; il < st->n_layer; il++) {
        if (!st->has_kv[il]) continue;
        size_t row_bytes = st->row[il] * sizeof(float);
        if (row_bytes && cap > SIZE_MAX / row_bytes)
            return dg_fail(DEG_ERR_NOMEM, "KV cache: %zu rows of %zu bytes do not fit in memory",
                           cap, row_bytes);
        size_t old_bytes = st->cap * row_bytes, bytes = cap * row_bytes;
        if (kv_grow(&st->k[il], &st->mapped[2 * il], old_bytes, bytes) ||
            kv_grow(&st->v[il], &st->mapped[2 * il + 1], old_bytes, bytes))
            return dg_fail(DEG_ERR_NOMEM, "KV cache: cannot grow to %zu rows", cap);
    }
    st->cap = cap;
    return DEG_OK;
}

void dg_state_free(dg_state *st)
{
    for (int il = 0; st->k && il < st->n_layer; il++)
        kv_release(st->k[il], st->mapped ? st->mapped[2 * il] : 0);
    for (int il = 0; st->v && il < st->n_layer; il++)
        kv_release(st->v[il], st->mapped ? st->mapped[2 * il + 1] : 0);
    for (int il = 0; st->rec && il < st->n_layer; il++) free(st->rec[il]);
    free(st->k);
    free(st->v);
    free(st->mapped);
    free(st->rec);
    free(st->rec_n);
    free(st->has_kv);
    free(st->row);
    memset(st, 0, sizeof *st);
}

void dg_state_copy_fixed(dg_state *dst, const dg_state *src)
{
    for (int il = 0; il < dst->n_layer; il++)
        if (dst->rec[il]) memcpy(dst->rec[il], src->rec[il], sizeof(float) * dst->rec_n[il]);
}

int dg_model_has_recurrent(const deg_model *m)
{
    for (int il = 0; il < m->hp.n_layer; il++)
        if ((!m->layers[il].has_kv && !m->layers[il].kv_shared) || m->layers[il].state_floats)
            return 1;
    return 0;
}

void dg_state_get_kv(const dg_state *st, int il, size_t first, size_t n, float *k, float *v)
{
    size_t r = st->row[il];
    memcpy(k, st->k[il] + first * r, sizeof(float) * n * r);
    memcpy(v, st->v[il] + first * r, sizeof(float) * n * r);
}

void dg_state_put_kv(dg_state *st, int il, size_t first, size_t n, const float *k,
                     const float *v)
{
    size_t r = st->row[il];
    memcpy(st->k[il] + first * r, k, sizeof(float) * n * r);
    memcpy(st->v[il] + first * r, v, sizeof(float) * n * r);
}
