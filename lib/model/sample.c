/* Token sampling: rule and PRNG references in sample.h. */
#include "model/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

/* ---- PRNG --------------------------------------------------------------- */

/* splitmix64 (Steele, Lea, Flood 2014; constants from Vigna's
 * splitmix64.c). */
uint64_t dg_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void dg_rng_seed(dg_rng *rng, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < 4; i++) rng->s[i] = dg_splitmix64(&st);
    /* splitmix64 is a bijection of distinct counters, so four consecutive
     * outputs are never all zero; keep the guard for clarity. */
    if ((rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]) == 0) rng->s[0] = 1;
}

static inline uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t dg_rng_next(dg_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

double dg_rng_uniform(dg_rng *rng)
{
    return (double)(dg_rng_next(rng) >> 11) * 0x1.0p-53;
}

uint64_t dg_rng_below(dg_rng *rng, uint64_t n)
{
    unsigned __int128 m = (unsigned __int128)dg_rng_next(rng) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t t = (0 - n) % n;
        while (low < t) {
            m = (unsigned __int128)dg_rng_next(rng) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* ---- checks ------------------------------------------------------------- */

int32_t dg_sample_argmax(const float *logits, int32_t n)
{
    int32_t best = -1;
    for (int32_t i = 0; i < n; i++) {
        float v = logits[i];
        if (isnan(v)) continue;
        if (best < 0 || v > logits[best]) best = i;
    }
    return best;
}

deg_status dg_sample_check(const deg_sample_params *p)
{
    if (!p) return dg_fail(DEG_ERR_ARG, "sample params: NULL");
    if (!isfinite(p->temperature) || p->temperature < 0.0f)
        return dg_fail(DEG_ERR_ARG, "sample params: temperature %g must be finite and >= 0",
                       (double)p->temperature);
    if (p->top_k < 0)
        return dg_fail(DEG_ERR_ARG, "sample params: top_k %d must be >= 0 (0 = off)",
                       (int)p->top_k);
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
        return dg_fail(DEG_ERR_ARG, "sample params: top_p %g must be in (0, 1] (1 = off)",
                       (double)p->top_p);
    return DEG_OK;
}

/* Scan a row: the largest finite logit and the number of finite entries.
 * NaN or +inf anywhere is an error: it means the forward pass overflowed. */
static deg_status scan_row(const float *l, int32_t n, float *lmax, int32_t *n_finite)
{
    float m = -INFINITY;
    int32_t c = 0;
    for (int32_t i = 0; i < n; i++) {
        float v = l[i];
        if (isnan(v)) return dg_fail(DEG_ERR_NUMERIC, "sample: logit %d is NaN", (int)i);
        if (v == INFINITY) return dg_fail(DEG_ERR_NUMERIC, "sample: logit %d is +inf", (int)i);
        if (v == -INFINITY) continue;
        c++;
        if (v > m) m = v;
    }
    if (c == 0) return dg_fail(DEG_ERR_NUMERIC, "sample: every logit is -inf");
    *lmax = m;
    *n_finite = c;
    return DEG_OK;
}

/* ---- sampler: candidates popped from a max-heap in (logit desc, id asc) -- */

struct dg_sampler {
    int32_t n_vocab;
    int32_t *heap;   /* [n_vocab] ids; heap[0] is the next candidate */
    int32_t n_heap;
    int32_t *ids;    /* [n_vocab] candidates popped so far, in order */
    double *w;       /* [n_vocab] their weights, then probabilities */
    const float *l;  /* row being sampled */
};

deg_status dg_sampler_new(int32_t n_vocab, dg_sampler **out)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "dg_sampler_new: out is NULL");
    *out = NULL;
    if (n_vocab <= 0) return dg_fail(DEG_ERR_ARG, "dg_sampler_new: n_vocab %d <= 0", (int)n_vocab);
    dg_sampler *s = calloc(1, sizeof *s);
    if (!s) return dg_fail(DEG_ERR_NOMEM, "dg_sampler_new: out of memory");
    s->n_vocab = n_vocab;
    s->heap = malloc((size_t)n_vocab * sizeof *s->heap);
    s->ids = malloc((size_t)n_vocab * sizeof *s->ids);
    s->w = malloc((size_t)n_vocab * sizeof *s->w);
    if (!s->heap || !s->ids || !s->w) {
        dg_sampler_free(s);
        return dg_fail(DEG_ERR_NOMEM, "dg_sampler_new: out of memory for %d ids", (int)n_vocab);
    }
    *out = s;
    return DEG_OK;
}

void dg_sampler_free(dg_sampler *s)
{
    if (!s) return;
    free(s->heap);
    free(s->ids);
    free(s->w);
    free(s);
}

/* a comes before b in candidate order. */
static inline int before(const float *l, int32_t a, int32_t b)
{
    return l[a] > l[b] || (l[a] == l[b] && a < b);
}

static void sift_down(dg_sampler *s, int32_t i)
{
    int32_t *h = s->heap;
    const float *l = s->l;
    int32_t n = s->n_heap;
    int32_t x = h[i];
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(l, h[c + 1], h[c])) c++;
        if (!before(l, h[c], x)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* Heap of the finite-logit ids: O(n) heapify. */
static void heap_build(dg_sampler *s, const float *logits)
{
    s->l = logits;
    int32_t n = 0;
    for (int32_t i = 0; i < s->n_vocab; i++)
        if (logits[i] != -INFINITY) s->heap[n++] = i;
    s->n_heap = n;
    for (int32_t i = n / 2 - 1; i >= 0; i--) sift_down(s, i);
}

static int32_t heap_pop(dg_sampler *s)
{
    int32_t top = s->heap[0];
    s->heap[0] = s->heap[--s->n_heap];
    if (s->n_heap > 0) sift_down(s, 0);
    return top;
}

/* Weight of id relative to the row maximum, in double. */
static inline double weight(const float *l, int32_t id, double lmax, double inv_t)
{
    return exp(((double)l[id] - lmax) * inv_t);
}

/* The kept set (sample.h rule) into s->ids/s->w [0, *n_kept), weights not
 * normalised; *w_kept = their sum in candidate order. With lazy_u >= 0 and
 * neither top-k nor top-p active, stops popping as soon as the draw
 * u * total is decided and returns the chosen id in *chosen (the kept set is
 * then the full vocabulary, not materialised). */
static deg_status kept_set(dg_sampler *s, const float *logits, const deg_sample_params *p,
                           double lazy_u, int32_t *n_kept, double *w_kept, int32_t *chosen)
{
    float lmax_f = 0.0f;
    int32_t n_finite = 0;
    DG_TRY(scan_row(logits, s->n_vocab, &lmax_f, &n_finite));
    const double lmax = lmax_f, inv_t = 1.0 / (double)p->temperature;
    heap_build(s, logits);
    *chosen = -1;

    if (p->top_k > 0) {
        int32_t k = p->top_k < n_finite ? p->top_k : n_finite;
        double z = 0.0;
        for (int32_t j = 0; j < k; j++) {
            int32_t id = heap_pop(s);
            s->ids[j] = id;
            s->w[j] = weight(logits, id, lmax, inv_t);
            z += s->w[j];
        }
        int32_t n = k;
        double kept = z;
        if (p->top_p < 1.0f) {
            const double cut = (double)p->top_p * z;
            double before_mass = 0.0;
            n = 0;
            while (n < k && before_mass < cut) before_mass += s->w[n++];
            kept = before_mass;
        }
        *n_kept = n;
        *w_kept = kept;
        return DEG_OK;
    }

    /* No top-k: normalise over the whole row (sum in id order). */
    double z = 0.0;
    for (int32_t i = 0; i < s->n_vocab; i++)
        if (logits[i] != -INFINITY) z += weight(logits, i, lmax, inv_t);

    if (p->top_p < 1.0f) {
        const double cut = (double)p->top_p * z;
        double before_mass = 0.0;
        int32_t n = 0;
        while (s->n_heap > 0 && before_mass < cut) {
            int32_t id = heap_pop(s);
            s->ids[n] = id;
            s->w[n] = weight(logits, id, lmax, inv_t);
            before_mass += s->w[n++];
        }
        *n_kept = n;
        *w_kept = before_mass;
        return DEG_OK;
    }

    if (lazy_u >= 0.0) {
        /* Plain temperature sampling: walk candidates only until decided. */
        const double target = lazy_u * z;
        double c = 0.0;
        int32_t id = -1;
        while (s->n_heap > 0) {
            id = heap_pop(s);
            c += weight(logits, id, lmax, inv_t);
            if (c > target) break;
        }
        *chosen = id; /* rounding: the last candidate if the sum fell short */
        *n_kept = 0;
        *w_kept = z;
        return DEG_OK;
    }

    int32_t n = 0;
    double kept = 0.0;
    while (s->n_heap > 0) {
        int32_t id = heap_pop(s);
        s->ids[n] = id;
        s->w[n] = weight(logits, id, lmax, inv_t);
        kept += s->w[n++];
    }
    *n_kept = n;
    *w_kept = kept;
    return DEG_OK;
}

deg_status dg_sample_candidates(dg_sampler *s, const float *logits,
                                const deg_sample_params *params, size_t *n_kept,
                                const int32_t **ids, const double **probs)
{
    if (!s || !logits || !n_kept || !ids || !probs)
        return dg_fail(DEG_ERR_ARG, "dg_sample_candidates: NULL argument");
    DG_TRY(dg_sample_check(params));
    if (params->temperature == 0.0f)
        return dg_fail(DEG_ERR_ARG, "dg_sample_candidates: temperature must be > 0");
    int32_t n = 0, chosen;
    double wk = 0.0;
    DG_TRY(kept_set(s, logits, params, -1.0, &n, &wk, &chosen));
    for (int32_t j = 0; j < n; j++) s->w[j] /= wk;
    *n_kept = (size_t)n;
    *ids = s->ids;
    *probs = s->w;
    return DEG_OK;
}

deg_status dg_sample(dg_sampler *s, const float *logits, const deg_sample_params *params,
                     dg_rng *rng, int32_t *out_id)
{
    if (!s || !logits || !out_id)
        return dg_fail(DEG_ERR_ARG, "dg_sample: NULL argument");
    DG_TRY(dg_sample_check(params));
    if (params->temperature == 0.0f) {
        float lmax = 0.0f;
        int32_t n_finite = 0;
        DG_TRY(scan_row(logits, s->n_vocab, &lmax, &n_finite));
        *out_id = dg_sample_argmax(logits, s->n_vocab);
        return DEG_OK;
    }
    if (!rng) return dg_fail(DEG_ERR_ARG, "dg_sample: temperature > 0 needs a random stream");
    const double u = dg_rng_uniform(rng);
    int32_t n = 0, chosen;
    double wk = 0.0;
    DG_TRY(kept_set(s, logits, params, u, &n, &wk, &chosen));
    if (chosen >= 0) {
        *out_id = chosen;
        return DEG_OK;
    }
    const double target = u * wk;
    double c = 0.0;
    int32_t j = 0;
    for (; j < n - 1; j++) {
        c += s->w[j];
        if (c > target) break;
    }
    *out_id = s->ids[j];
    return DEG_OK;
}

deg_sample_params deg_sample_params_default(void)
{
    deg_sample_params p;
    memset(&p, 0, sizeof p);
    p.temperature = 0.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.seed = 0;
    p.max_tokens = 256;
    p.stop_ids = NULL;
    p.n_stop_ids = 0;
    return p;
}
