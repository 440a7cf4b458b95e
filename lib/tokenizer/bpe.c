/* BPE on token ids for one pre-token word. Rule (tokenizers models/bpe
 * Word::merge_all): repeatedly apply the adjacent pair with the lowest merge
 * rank, the leftmost one on ties, until no adjacent pair has a merge.
 *
 * Short words (the vast majority) use flat arrays: pair ranks are cached
 * and only the two neighbours of a merge are looked up again, O(n^2)
 * worst case on a handful of ints that stay in L1. Long words (whitespace
 * runs, unsegmented scripts) use a binary heap of candidate merges over a
 * linked list, O(n log n), with the same stale-entry rule as tokenizers. */
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "tokenizer/tok_internal.h"

#define DG_BPE_FLAT_MAX 48

typedef struct bpe_heap_item {
    uint32_t rank;
    uint32_t pos;
    int32_t id;
} bpe_heap_item;

struct dg_bpe_scratch {
    size_t cap;        /* symbols */
    int32_t *sym;      /* [cap] symbol ids */
    uint32_t *prank;   /* [cap] rank of pair (i, i+1) (flat) */
    int32_t *pid;      /* [cap] merged id of pair (i, i+1) (flat) */
    int32_t *prev, *next; /* [cap] linked list (heap) */
    bpe_heap_item *heap;  /* [3*cap]: n-1 initial pairs + 2 per merge */
};

static inline uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static inline const dg_merge_slot *merge_find(const dg_tokenizer *t, int32_t a, int32_t b)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t i = hash_u64(key) & t->merge_mask;
    for (;;) {
        const dg_merge_slot *s = &t->merges[i];
        if (s->key == key) return s;
        if (s->key == UINT64_MAX) return NULL;
        i = (i + 1) & t->merge_mask;
    }
}

void dg_bpe_scratch_free(dg_bpe_scratch *s)
{
    if (!s) return;
    free(s->sym); free(s->prank); free(s->pid); free(s->prev); free(s->next); free(s->heap);
    free(s);
}

static deg_status scratch_reserve(dg_bpe_scratch **ps, size_t n)
{
    dg_bpe_scratch *s = *ps;
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) return dg_fail(DEG_ERR_NOMEM, "tokenize: out of memory");
        *ps = s;
    }
    if (n <= s->cap) return DEG_OK;
    /* the heap holds up to 3 entries per symbol */
    void *const arrs[] = {&s->sym, &s->prank, &s->pid, &s->prev, &s->next, &s->heap};
    const size_t elems[] = {sizeof *s->sym,  sizeof *s->prank, sizeof *s->pid,
                            sizeof *s->prev, sizeof *s->next,  3 * sizeof *s->heap};
    deg_status st = dg_grow_all(arrs, elems, 6, &s->cap, n);
    return st == DEG_OK ? st : dg_fail_context(st, "tokenize");
}

static deg_status out_push(int32_t **out, size_t *n, size_t *cap, const int32_t *ids, size_t k)
{
    if (k == 0) return DEG_OK; /* every byte of the word dropped: *out may be NULL */
    deg_status st = dg_grow(out, cap, *n + k, sizeof **out);
    if (st != DEG_OK) return dg_fail_context(st, "tokenize");
    memcpy(*out + *n, ids, k * sizeof *ids);
    *n += k;
    return DEG_OK;
}

static inline void pair_info(const dg_tokenizer *t, int32_t a, int32_t b, uint32_t *rank,
                             int32_t *id)
{
    const dg_merge_slot *m = merge_find(t, a, b);
    *rank = m ? m->rank : DG_TOK_NO_RANK;
    *id = m ? m->id : -1;
}

/* Flat arrays: sym[0..n) in place; returns the final count. */
static size_t bpe_flat(const dg_tokenizer *t, dg_bpe_scratch *s, size_t n)
{
    int32_t *sym = s->sym;
    uint32_t *pr = s->prank;
    int32_t *pid = s->pid;
    for (size_t i = 0; i + 1 < n; i++) pair_info(t, sym[i], sym[i + 1], &pr[i], &pid[i]);
    while (n > 1) {
        size_t best = 0;
        uint32_t br = pr[0];
        for (size_t i = 1; i + 1 < n; i++)
            if (pr[i] < br) { br = pr[i]; best = i; }
        if (br == DG_TOK_NO_RANK) break;
        sym[best] = pid[best];
        /* remove symbol best+1 */
        memmove(sym + best + 1, sym + best + 2, (n - best - 2) * sizeof *sym);
        memmove(pr + best + 1, pr + best + 2, (n > best + 3 ? n - best - 3 : 0) * sizeof *pr);
        memmove(pid + best + 1, pid + best + 2, (n > best + 3 ? n - best - 3 : 0) * sizeof *pid);
        n--;
        if (best > 0) pair_info(t, sym[best - 1], sym[best], &pr[best - 1], &pid[best - 1]);
        if (best + 1 < n) pair_info(t, sym[best], sym[best + 1], &pr[best], &pid[best]);
    }
    return n;
}

static inline int heap_less(const bpe_heap_item *a, const bpe_heap_item *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(bpe_heap_item *h, size_t *n, bpe_heap_item it)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(&it, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = it;
}

static bpe_heap_item heap_pop(bpe_heap_item *h, size_t *n)
{
    bpe_heap_item top = h[0];
    bpe_heap_item last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && heap_less(&h[c + 1], &h[c])) c++;
        if (!heap_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

/* Heap + linked list; compacts the survivors into sym[0..k) and returns k. */
static size_t bpe_heap(const dg_tokenizer *t, dg_bpe_scratch *s, size_t n)
{
    int32_t *sym = s->sym, *prev = s->prev, *next = s->next;
    bpe_heap_item *h = s->heap;
    size_t hn = 0;
    for (size_t i = 0; i < n; i++) {
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        const dg_merge_slot *m = merge_find(t, sym[i], sym[i + 1]);
        if (m) heap_push(h, &hn, (bpe_heap_item){m->rank, (uint32_t)i, m->id});
    }
    /* sym[i] == -1 marks a symbol merged into its left neighbour. */
    while (hn) {
        bpe_heap_item top = heap_pop(h, &hn);
        size_t pos = top.pos;
        if (sym[pos] < 0 || next[pos] < 0) continue;
        size_t nx = (size_t)next[pos];
        const dg_merge_slot *m = merge_find(t, sym[pos], sym[nx]);
        if (!m || m->id != top.id) continue; /* stale entry */
        sym[pos] = top.id;
        sym[nx] = -1;
        next[pos] = next[nx];
        if (next[nx] >= 0) prev[next[nx]] = (int32_t)pos;
        if (prev[pos] >= 0) {
            size_t pv = (size_t)prev[pos];
            const dg_merge_slot *mp = merge_find(t, sym[pv], sym[pos]);
            if (mp) heap_push(h, &hn, (bpe_heap_item){mp->rank, (uint32_t)pv, mp->id});
        }
        if (next[pos] >= 0) {
            const dg_merge_slot *mn = merge_find(t, sym[pos], sym[next[pos]]);
            if (mn) heap_push(h, &hn, (bpe_heap_item){mn->rank, (uint32_t)pos, mn->id});
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (sym[i] >= 0) sym[k++] = sym[i];
    return k;
}

deg_status dg_bpe_word(const dg_tokenizer *t, dg_bpe_scratch **scratch, const char *w,
                       size_t len, int32_t **out, size_t *n, size_t *cap)
{
    const unsigned char *u = (const unsigned char *)w;
    if (len == 1) /* a dropped byte (see below) yields nothing */
        return t->byte_id[u[0]] < 0 ? DEG_OK : out_push(out, n, cap, &t->byte_id[u[0]], 1);
    if (t->ignore_merges) {
        int32_t id = dg_tok_lookup_raw(t, w, len);
        if (id >= 0) return out_push(out, n, cap, &id, 1);
    }
    /* Heap entries: at most n-1 initial pairs plus two per merge. */
    DG_TRY(scratch_reserve(scratch, len + 1));
    dg_bpe_scratch *s = *scratch;
    /* A byte the vocabulary has no token for (only reached under
     * DG_TOK_DROP_MISSING) is dropped before the merges and its neighbours
     * become adjacent: HF tokenizers' BPE::merge_word without unk_token. */
    size_t m = 0;
    for (size_t i = 0; i < len; i++)
        if (t->byte_id[u[i]] >= 0) s->sym[m++] = t->byte_id[u[i]];
    size_t k = m <= DG_BPE_FLAT_MAX ? bpe_flat(t, s, m) : bpe_heap(t, s, m);
    return out_push(out, n, cap, s->sym, k);
}
