/* Trunk and fork (include/deg.h): K/V caches and the public calls that
 * validate input and run dg_forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "base/status.h"
#include "model/arch.h"
#include "model/state.h"

deg_status dg_kv_init(dg_kv *kv, const deg_model *m)
{
    memset(kv, 0, sizeof *kv);
    kv->n_layer = m->hp.n_layer;
    kv->row = (size_t)m->hp.n_head_kv * (size_t)m->hp.head_dim;
    kv->k = calloc((size_t)kv->n_layer, sizeof(float *));
    kv->v = calloc((size_t)kv->n_layer, sizeof(float *));
    kv->mapped = calloc(2 * (size_t)kv->n_layer, sizeof(size_t));
    if (!kv->k || !kv->v || !kv->mapped) {
        dg_kv_free(kv);
        return dg_fail(DEG_ERR_NOMEM, "KV cache: out of memory");
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

deg_status dg_kv_reserve(dg_kv *kv, size_t n)
{
    if (n <= kv->cap) return DEG_OK;
    size_t cap = kv->cap ? kv->cap : 16;
    while (cap < n) cap *= 2;
    size_t old_bytes = kv->cap * kv->row * sizeof(float), bytes = cap * kv->row * sizeof(float);
    for (int il = 0; il < kv->n_layer; il++) {
        if (kv_grow(&kv->k[il], &kv->mapped[2 * il], old_bytes, bytes) ||
            kv_grow(&kv->v[il], &kv->mapped[2 * il + 1], old_bytes, bytes))
            return dg_fail(DEG_ERR_NOMEM, "KV cache: cannot grow to %zu rows", cap);
    }
    kv->cap = cap;
    return DEG_OK;
}

void dg_kv_free(dg_kv *kv)
{
    for (int il = 0; kv->k && il < kv->n_layer; il++)
        kv_release(kv->k[il], kv->mapped ? kv->mapped[2 * il] : 0);
    for (int il = 0; kv->v && il < kv->n_layer; il++)
        kv_release(kv->v[il], kv->mapped ? kv->mapped[2 * il + 1] : 0);
    free(kv->k);
    free(kv->v);
    free(kv->mapped);
    memset(kv, 0, sizeof *kv);
}

static deg_status check_ids(const deg_model *m, const int32_t *ids, size_t n, const char *where)
{
    if (n && !ids) return dg_fail(DEG_ERR_ARG, "%s: ids is NULL with %zu tokens", where, n);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->hp.n_vocab)
            return dg_fail(DEG_ERR_RANGE, "%s: token id %d at index %zu is outside [0, %d)",
                           where, (int)ids[i], i, (int)m->hp.n_vocab);
    return DEG_OK;
}

/* ---------------------------------------------------------------- trunk */

deg_status deg_trunk_new(const deg_model *model, deg_trunk **out)
{
    if (!model || !out) return dg_fail(DEG_ERR_ARG, "deg_trunk_new: NULL argument");
    *out = NULL;
    deg_trunk *t = calloc(1, sizeof *t);
    if (!t) return dg_fail(DEG_ERR_NOMEM, "deg_trunk_new: out of memory");
    t->model = model;
    t->last_hidden = malloc(sizeof(float) * (size_t)model->hp.n_embd);
    deg_status st = t->last_hidden ? dg_kv_init(&t->kv, model)
                                   : dg_fail(DEG_ERR_NOMEM, "deg_trunk_new: out of memory");
    if (st != DEG_OK) {
        free(t->last_hidden);
        free(t);
        return st;
    }
    *out = t;
    return DEG_OK;
}

void deg_trunk_free(deg_trunk *trunk)
{
    if (!trunk) return;
    dg_kv_free(&trunk->kv);
    free(trunk->last_hidden);
    free(trunk);
}

deg_status deg_trunk_prefill(deg_trunk *trunk, const int32_t *ids, size_t n_ids, float *logits,
                             float *last_logits)
{
    if (!trunk) return dg_fail(DEG_ERR_ARG, "deg_trunk_prefill: trunk is NULL");
    if (trunk->n_forks)
        return dg_fail(DEG_ERR_STATE,
                       "deg_trunk_prefill: the trunk has %zu live fork(s); free them before "
                       "extending it", trunk->n_forks);
    DG_TRY(check_ids(trunk->model, ids, n_ids, "deg_trunk_prefill"));
    if (n_ids == 0) return DEG_OK;
    dg_row row = {.prefix = NULL, .own = &trunk->kv, .ids = ids, .n = n_ids,
                  .logits = logits, .last_logits = last_logits,
                  .last_hidden = trunk->last_hidden};
    return dg_forward(trunk->model, &row, 1);
}

size_t deg_trunk_len(const deg_trunk *trunk) { return trunk ? trunk->kv.len : 0; }

/* ----------------------------------------------------------------- fork */

deg_status deg_fork_new(deg_trunk *trunk, deg_fork **out)
{
    if (!trunk || !out) return dg_fail(DEG_ERR_ARG, "deg_fork_new: NULL argument");
    *out = NULL;
    const deg_model *m = trunk->model;
    deg_fork *f = calloc(1, sizeof *f);
    if (!f) return dg_fail(DEG_ERR_NOMEM, "deg_fork_new: out of memory");
    f->trunk = trunk;
    f->adapter = -1;
    f->last_logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    deg_status st = f->last_logits ? dg_kv_init(&f->kv, m)
                                   : dg_fail(DEG_ERR_NOMEM, "deg_fork_new: out of memory");
    if (st != DEG_OK) {
        free(f->last_logits);
        free(f);
        return st;
    }
    trunk->n_forks++;
    *out = f;
    return DEG_OK;
}

void deg_fork_free(deg_fork *fork)
{
    if (!fork) return;
    fork->trunk->n_forks--;
    dg_kv_free(&fork->kv);
    free(fork->hidden);
    free(fork->last_logits);
    free(fork);
}

size_t deg_fork_len(const deg_fork *fork) { return fork ? fork->kv.len : 0; }

static deg_status reserve_hidden(deg_fork *f, size_t n)
{
    if (n <= f->hidden_cap) return DEG_OK;
    size_t cap = f->hidden_cap ? f->hidden_cap : 16;
    while (cap < n) cap *= 2;
    float *h = realloc(f->hidden, cap * (size_t)f->trunk->model->hp.n_embd * sizeof(float));
    if (!h) return dg_fail(DEG_ERR_NOMEM, "fork: cannot grow hidden states to %zu rows", cap);
    f->hidden = h;
    f->hidden_cap = cap;
    return DEG_OK;
}

deg_status deg_forks_feed(deg_fork *const *forks, size_t n_forks, const int32_t *const *ids,
                          const size_t *n_ids, float *const *logits)
{
    if (n_forks == 0) return DEG_OK;
    if (!forks || !ids || !n_ids)
        return dg_fail(DEG_ERR_ARG, "deg_forks_feed: NULL forks, ids or n_ids");
    if (!forks[0]) return dg_fail(DEG_ERR_ARG, "deg_forks_feed: fork 0 is NULL");
    const deg_model *m = forks[0]->trunk->model;
    for (size_t i = 0; i < n_forks; i++) {
        if (!forks[i]) return dg_fail(DEG_ERR_ARG, "deg_forks_feed: fork %zu is NULL", i);
        if (forks[i]->trunk->model != m)
            return dg_fail(DEG_ERR_ARG, "deg_forks_feed: fork %zu belongs to another model", i);
        for (size_t j = 0; j < i; j++)
            if (forks[j] == forks[i])
                return dg_fail(DEG_ERR_ARG, "deg_forks_feed: fork %zu is also row %zu", i, j);
        char where[64];
        snprintf(where, sizeof where, "deg_forks_feed: row %zu", i);
        DG_TRY(check_ids(m, ids[i], n_ids[i], where));
    }
    dg_row *rows = calloc(n_forks, sizeof *rows);
    if (!rows) return dg_fail(DEG_ERR_NOMEM, "deg_forks_feed: out of memory");
    deg_status st = DEG_OK;
    for (size_t i = 0; i < n_forks && st == DEG_OK; i++) {
        deg_fork *f = forks[i];
        st = reserve_hidden(f, f->kv.len + n_ids[i]);
        size_t E = (size_t)m->hp.n_embd;
        rows[i] = (dg_row){.prefix = &f->trunk->kv, .own = &f->kv, .ids = ids[i],
                           .n = n_ids[i], .logits = logits ? logits[i] : NULL,
                           .hidden = f->hidden + f->kv.len * E, .lora = f->lora,
                           .adapter = f->adapter};
    }
    if (st == DEG_OK) st = dg_forward(m, rows, n_forks);
    if (st == DEG_OK) {
        size_t V = (size_t)m->hp.n_vocab;
        for (size_t i = 0; i < n_forks; i++) {
            if (!n_ids[i]) continue;
            deg_fork *f = forks[i];
            if (rows[i].logits) {
                memcpy(f->last_logits, rows[i].logits + (n_ids[i] - 1) * V, sizeof(float) * V);
                f->has_last_logits = 1;
            } else {
                f->has_last_logits = 0;
            }
        }
    }
    free(rows);
    return st;
}

deg_status deg_fork_feed(deg_fork *fork, const int32_t *ids, size_t n_ids, float *logits)
{
    return deg_forks_feed(&fork, 1, &ids, &n_ids, logits ? &logits : NULL);
}

deg_status deg_fork_logits(const deg_fork *fork, float *logits)
{
    if (!fork || !logits) return dg_fail(DEG_ERR_ARG, "deg_fork_logits: NULL argument");
    const deg_model *m = fork->trunk->model;
    size_t E = (size_t)m->hp.n_embd, V = (size_t)m->hp.n_vocab;
    if (fork->kv.len) {
        if (fork->has_last_logits) {
            memcpy(logits, fork->last_logits, sizeof(float) * V);
            return DEG_OK;
        }
        return dg_lm_head(m, fork->hidden + (fork->kv.len - 1) * E, 1, logits);
    }
    if (fork->trunk->kv.len) return dg_lm_head(m, fork->trunk->last_hidden, 1, logits);
    return dg_fail(DEG_ERR_STATE, "deg_fork_logits: neither the fork nor its trunk has tokens");
}

deg_status deg_fork_hidden(const deg_fork *fork, size_t first, size_t n, float *hidden)
{
    if (!fork || (n && !hidden)) return dg_fail(DEG_ERR_ARG, "deg_fork_hidden: NULL argument");
    if (first > fork->kv.len || n > fork->kv.len - first)
        return dg_fail(DEG_ERR_RANGE, "deg_fork_hidden: tokens [%zu, %zu) outside the %zu fed",
                       first, first + n, fork->kv.len);
    size_t E = (size_t)fork->trunk->model->hp.n_embd;
    if (n) memcpy(hidden, fork->hidden + first * E, sizeof(float) * E * n);
    return DEG_OK;
}
