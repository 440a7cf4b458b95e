/* Suffix automata over token ids (draft.h) and the public draft reference
 * (deg_draft_ref_*, include/deg.h). */
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "model/draft.h"
#include "model/arch.h"

#define SAM_MAX_TOKENS ((size_t)1 << 30) /* states (< 2 n) and edges (< 3 n) fit int32 */

static size_t hash_of(int32_t state, int32_t tok, size_t cap)
{
    uint64_t h = ((uint64_t)(uint32_t)state << 32) | (uint32_t)tok;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

/* Edge index of (state, tok), -1 if none. */
static int32_t find_edge(const dg_sam *s, int32_t state, int32_t tok)
{
    for (size_t h = hash_of(state, tok, s->hash_cap);; h = (h + 1) & (s->hash_cap - 1)) {
        int32_t e = s->hash[h];
        if (e < 0 || (s->e_from[e] == state && s->e_tok[e] == tok)) return e;
    }
}

static void hash_put(dg_sam *s, int32_t e)
{
    size_t h = hash_of(s->e_from[e], s->e_tok[e], s->hash_cap);
    while (s->hash[h] >= 0) h = (h + 1) & (s->hash_cap - 1);
    s->hash[h] = e;
}

/* Keep the load factor at most 1/2. */
static int hash_reserve(dg_sam *s, size_t n_edges)
{
    if (2 * n_edges <= s->hash_cap) return 0;
    size_t cap = dg_grow_cap(s->hash_cap, 2 * n_edges); /* a power of two: probes mask by it */
    int32_t *h = malloc(cap * sizeof *h);
    if (!h) return -1;
    free(s->hash);
    s->hash = h;
    s->hash_cap = cap;
    memset(h, 0xff, cap * sizeof *h);
    for (size_t e = 0; e < s->n_edges; e++) hash_put(s, (int32_t)e);
    return 0;
}

static int add_edge(dg_sam *s, int32_t from, int32_t tok, int32_t to)
{
    size_t n = s->n_edges + 1;
    void *const arr[] = {&s->e_from, &s->e_tok, &s->e_to, &s->e_next};
    const size_t el[] = {4, 4, 4, 4};
    if (dg_grow_all(arr, el, 4, &s->cap_edges, n) != DEG_OK) return -1;
    if (hash_reserve(s, n)) return -1;
    int32_t e = (int32_t)s->n_edges++;
    s->e_from[e] = from;
    s->e_tok[e] = tok;
    s->e_to[e] = to;
    s->e_next[e] = s->first_edge[from];
    s->first_edge[from] = e;
    hash_put(s, e);
    return 0;
}

static int32_t new_state(dg_sam *s, int32_t len, int64_t firstpos)
{
    void *const arr[] = {&s->len, &s->link, &s->first_edge, &s->firstpos};
    const size_t el[] = {4, 4, 4, 8};
    if (dg_grow_all(arr, el, 4, &s->cap_states, s->n_states + 1) != DEG_OK) return -1;
    int32_t v = (int32_t)s->n_states++;
    s->len[v] = len;
    s->link[v] = -1;
    s->first_edge[v] = -1;
    s->firstpos[v] = firstpos;
    return v;
}

deg_status dg_sam_init(dg_sam *s, size_t n)
{
    memset(s, 0, sizeof *s);
    if ((n && DG_GROW(s->text, s->cap_text, n) != DEG_OK) ||
        new_state(s, 0, -1) < 0 || hash_reserve(s, n ? n : 1)) {
        dg_sam_free(s);
        return dg_fail(DEG_ERR_NOMEM, "draft index: out of memory for %zu tokens", n);
    }
    s->last = 0;
    return DEG_OK;
}

void dg_sam_free(dg_sam *s)
{
    void *all[] = {s->len, s->link, s->first_edge, s->firstpos, s->e_from, s->e_tok, s->e_to,
                   s->e_next, s->hash, s->text};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    memset(s, 0, sizeof *s);
}

static deg_status oom(void)
{
    return dg_fail(DEG_ERR_NOMEM, "draft index: out of memory");
}

/* The online construction; firstpos of the new state is the new token's
 * index, a clone inherits the cloned state's. */
deg_status dg_sam_extend(dg_sam *s, int32_t id)
{
    if (s->n_text >= SAM_MAX_TOKENS)
        return dg_fail(DEG_ERR_RANGE, "draft index: more than %zu tokens", SAM_MAX_TOKENS);
    if (DG_GROW(s->text, s->cap_text, s->n_text + 1) != DEG_OK) return oom();
    int64_t pos = (int64_t)s->n_text;
    int32_t cur = new_state(s, s->len[s->last] + 1, pos);
    if (cur < 0) return oom();
    int32_t p = s->last, e = -1;
    while (p >= 0 && (e = find_edge(s, p, id)) < 0) {
        if (add_edge(s, p, id, cur)) return oom();
        p = s->link[p];
    }
    if (p < 0) {
        s->link[cur] = 0;
    } else {
        int32_t q = s->e_to[e];
        if (s->len[p] + 1 == s->len[q]) {
            s->link[cur] = q;
        } else {
            int32_t cl = new_state(s, s->len[p] + 1, s->firstpos[q]);
            if (cl < 0) return oom();
            for (int32_t f = s->first_edge[q]; f >= 0; f = s->e_next[f])
                if (add_edge(s, cl, s->e_tok[f], s->e_to[f])) return oom();
            s->link[cl] = s->link[q];
            while (p >= 0 && (e = find_edge(s, p, id)) >= 0 && s->e_to[e] == q) {
                s->e_to[e] = cl;
                p = s->link[p];
            }
            s->link[q] = cl;
            s->link[cur] = cl;
        }
    }
    s->last = cur;
    s->text[s->n_text++] = id;
    return DEG_OK;
}

void dg_sam_match_step(const dg_sam *ref, dg_sam_match *m, int32_t id)
{
    int32_t v = m->state;
    size_t l = m->len;
    for (;;) {
        int32_t e = find_edge(ref, v, id);
        if (e >= 0) {
            m->state = ref->e_to[e];
            m->len = l + 1;
            return;
        }
        if (v == 0) {
            m->state = 0;
            m->len = 0;
            return;
        }
        v = ref->link[v];
        l = (size_t)ref->len[v];
    }
}

void dg_sam_ref_continuation(const dg_sam *ref, const dg_sam_match *m, size_t *first,
                             size_t *avail, size_t *match)
{
    int32_t v = m->state;
    size_t l = m->len;
    *first = *avail = *match = 0;
    /* a shorter suffix (a link) may also occur earlier, with a continuation */
    while (v > 0) {
        size_t next = (size_t)ref->firstpos[v] + 1;
        if (next < ref->n_text) {
            *first = next;
            *avail = ref->n_text - next;
            *match = l;
            return;
        }
        v = ref->link[v];
        l = (size_t)ref->len[v];
    }
}

void dg_sam_self_continuation(const dg_sam *s, size_t *first, size_t *avail, size_t *match)
{
    *first = *avail = *match = 0;
    int32_t d = s->n_text ? s->link[s->last] : 0;
    if (d <= 0) return;
    size_t next = (size_t)s->firstpos[d] + 1; /* < n_text: d predates the last token */
    *first = next;
    *avail = s->n_text - next;
    *match = (size_t)s->len[d];
}

/* ------------------------------------------------------- public reference */

struct deg_draft_ref {
    dg_sam sam;
};

deg_status deg_draft_ref_new(const deg_model *model, const int32_t *ids, size_t n_ids,
                             deg_draft_ref **out)
{
    if (!model || !out || (n_ids && !ids))
        return dg_fail(DEG_ERR_ARG, "deg_draft_ref_new: NULL argument");
    *out = NULL;
    int32_t nv = model->hp.n_vocab;
    for (size_t i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= nv)
            return dg_fail(DEG_ERR_RANGE, "deg_draft_ref_new: token id %d at index %zu is "
                           "outside [0, %d)", (int)ids[i], i, (int)nv);
    if (n_ids > SAM_MAX_TOKENS)
        return dg_fail(DEG_ERR_RANGE, "deg_draft_ref_new: %zu tokens, at most %zu", n_ids,
                       SAM_MAX_TOKENS);
    deg_draft_ref *r = calloc(1, sizeof *r);
    if (!r) return oom();
    deg_status st = dg_sam_init(&r->sam, n_ids);
    for (size_t i = 0; i < n_ids && st == DEG_OK; i++) st = dg_sam_extend(&r->sam, ids[i]);
    if (st != DEG_OK) {
        deg_draft_ref_free(r);
        return dg_fail_context(st, "deg_draft_ref_new");
    }
    *out = r;
    return DEG_OK;
}

void deg_draft_ref_free(deg_draft_ref *ref)
{
    if (!ref) return;
    dg_sam_free(&ref->sam);
    free(ref);
}

size_t deg_draft_ref_len(const deg_draft_ref *ref) { return ref ? ref->sam.n_text : 0; }

const int32_t *deg_draft_ref_ids(const deg_draft_ref *ref)
{
    return ref && ref->sam.n_text ? ref->sam.text : NULL;
}

const dg_sam *dg_draft_ref_sam(const deg_draft_ref *ref) { return ref ? &ref->sam : NULL; }
