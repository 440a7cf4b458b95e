/* Anchor head, anchored-extract bias and anchor picking (anchor.h; deg
 * contract §12.3, §12.6). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "deg/anchor.h"

static const int64_t EDGES[] = {-256, -64, -16, -4, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256};

int dg_anchor_bucket(int64_t d)
{
    int b = 0;
    for (size_t i = 0; i < sizeof EDGES / sizeof EDGES[0]; i++)
        if (EDGES[i] <= d) b++;
    return b;
}

/* w[E] = ka^T qa(a) / 16 + ua */
void dg_anchor_query(const dg_heads *h, const float *a, float *w)
{
    const int E = h->E, D = DG_HEAD_DIM;
    float q[DG_HEAD_DIM];
    dg_head_proj(h->anchor_q, D, E, a, q);
    dg_head_proj_t(h->anchor_k, D, E, q, w);
    for (int e = 0; e < E; e++) w[e] = w[e] / 16.0f + h->anchor_u[e];
}

/* a [E], ctx [nc, E] -> out [r1 - r0] */
deg_status dg_anchor_logits(const dg_heads *h, const float *a, const float *ctx, size_t r0,
                            size_t r1, float *out)
{
    const int E = h->E;
    float *w = malloc((size_t)E * sizeof *w);
    if (!w) return dg_fail(DEG_ERR_NOMEM, "anchor head: out of memory");
    dg_anchor_query(h, a, w);
    for (size_t t = r0; t < r1; t++)
        out[t - r0] = dg_head_dot(w, ctx + t * (size_t)E, E) + h->anchor_b[0];
    free(w);
    return DEG_OK;
}

void dg_anchor_bias_add(const dg_heads *h, int w, size_t anchor, size_t rend, float *l,
                        size_t nc)
{
    for (size_t t = 0; t < nc; t++) {
        int inside = t >= anchor && t < rend;
        int b = dg_anchor_bucket((int64_t)t - (int64_t)anchor);
        l[t] += h->anchor_bias[((size_t)w * 2 + (size_t)inside) * DG_ANCHOR_BUCKETS + (size_t)b];
    }
}

size_t dg_anchor_runs(const float *l, size_t n)
{
    size_t runs = 0;
    for (size_t t = 0; t < n; t++)
        if (l[t] > 0 && (t == 0 || !(l[t - 1] > 0))) runs++;
    return runs;
}

int dg_anchor_count_range(int64_t min_items, int64_t cap, int64_t *lo, int64_t *hi)
{
    *lo = min_items;
    *hi = cap >= 0 && cap < DG_COUNT_MAX ? cap : DG_COUNT_MAX;
    if (*hi < *lo) *hi = *lo;
    return min_items <= DG_COUNT_MAX;
}

int64_t dg_anchor_count_n(const float *lg, double T, int64_t min_items, int64_t cap, size_t runs)
{
    int64_t lo, top;
    if (!dg_anchor_count_range(min_items, cap, &lo, &top)) return min_items;
    size_t n = (size_t)(top - min_items + 1);
    double p[DG_COUNT_MAX + 1];
    dg_softmax(lg + min_items, n, T, p, NULL);
    int64_t N = min_items + (int64_t)dg_argmax_d(p, n);
    if (N == top && (int64_t)runs > N) N = (int64_t)runs;
    if (cap >= 0 && N > cap) N = cap;
    if (N < min_items) N = min_items;
    return N;
}

/* (logit, token) pairs sorted best first: logit desc, token asc (a total
 * order, so qsort's result is unique). */
typedef struct lt {
    float l;
    size_t t;
} lt;

static int cmp_best(const void *x, const void *y)
{
    const lt *a = x, *b = y;
    if (a->l > b->l) return -1;
    if (a->l < b->l) return 1;
    return a->t < b->t ? -1 : a->t > b->t;
}

static int cmp_pos(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return a < b ? -1 : a > b;
}

/* idx[n] (token positions) reordered best first by l[idx[i]] */
static void sort_best(const float *l, size_t *idx, size_t n, lt *tmp)
{
    for (size_t i = 0; i < n; i++) tmp[i] = (lt){l[idx[i]], idx[i]};
    qsort(tmp, n, sizeof *tmp, cmp_best);
    for (size_t i = 0; i < n; i++) idx[i] = tmp[i].t;
}

/* 1 if t is within DG_PEAK_RADIUS of one of out[0..k) */
static int near_any(const size_t *out, size_t k, size_t t)
{
    for (size_t q = 0; q < k; q++)
        if ((out[q] > t ? out[q] - t : t - out[q]) <= DG_PEAK_RADIUS) return 1;
    return 0;
}

static size_t pick_threshold(const float *l, size_t n, int64_t min_items, int64_t cap,
                             size_t *order, char *used, lt *tmp, size_t *out)
{
    size_t k = 0;
    memset(used, 0, n);
    for (size_t t = 0; t < n;) {
        if (!(l[t] > 0)) {
            t++;
            continue;
        }
        size_t best = t;
        size_t e = t;
        for (; e < n && l[e] > 0; e++) {
            used[e] = 1;
            if (l[e] > l[best]) best = e;
        }
        out[k++] = best;
        t = e;
    }
    if ((int64_t)k < min_items) {
        /* best remaining tokens not adjacent to a marked or chosen one */
        for (size_t t = 0; t < n; t++) order[t] = t;
        sort_best(l, order, n, tmp);
        for (size_t i = 0; i < n && (int64_t)k < min_items; i++) {
            size_t t = order[i];
            if (used[t] || (t > 0 && used[t - 1]) || (t + 1 < n && used[t + 1])) continue;
            used[t] = 1;
            out[k++] = t;
        }
    }
    if (cap >= 0 && (int64_t)k > cap) {
        sort_best(l, out, k, tmp);
        k = (size_t)cap;
    }
    qsort(out, k, sizeof *out, cmp_pos);
    return k;
}

static size_t pick_peaks(const float *l, size_t n, int64_t N, size_t *order, char *used,
                         lt *tmp, size_t *out)
{
    size_t k = 0;
    const size_t R = DG_PEAK_RADIUS;
    memset(used, 0, n);
    for (size_t t = 0; t < n; t++) order[t] = t;
    sort_best(l, order, n, tmp);
    /* pass 0: local maxima outside every chosen radius; pass 1: any token
     * outside every radius; pass 2: any remaining token */
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < n && (int64_t)k < N; i++) {
            size_t t = order[i];
            if (used[t]) continue;
            if (pass == 0) {
                size_t a = t >= R ? t - R : 0, b = t + R < n ? t + R : n - 1;
                int peak = 1;
                for (size_t s = a; s <= b && peak; s++) peak = !(l[s] > l[t]);
                if (!peak) continue;
            }
            if (pass < 2 && near_any(out, k, t)) continue;
            used[t] = 1;
            out[k++] = t;
        }
    }
    qsort(out, k, sizeof *out, cmp_pos);
    return k;
}

deg_status dg_anchor_pick(const float *logits, size_t n, int mode, int64_t min_items,
                          int64_t cap, int64_t count, size_t *out, size_t *n_out)
{
    *n_out = 0;
    if (n == 0) return DEG_OK;
    size_t *order = malloc(n * sizeof *order);
    char *used = malloc(n);
    lt *tmp = malloc(n * sizeof *tmp);
    if (!order || !used || !tmp) {
        free(order);
        free(used);
        free(tmp);
        return dg_fail(DEG_ERR_NOMEM, "anchors: out of memory (%zu region tokens)", n);
    }
    int peaks = mode == DEG_ARRAY_DECODE_COUNT_PEAKS ||
                (mode == DEG_ARRAY_DECODE_HYBRID && dg_anchor_runs(logits, n) == 0 && count > 0);
    if (peaks) {
        int64_t N = count;
        if (cap >= 0 && N > cap) N = cap;
        *n_out = pick_peaks(logits, n, N, order, used, tmp, out);
    } else {
        *n_out = pick_threshold(logits, n, min_items, cap, order, used, tmp, out);
    }
    free(order);
    free(used);
    free(tmp);
    return DEG_OK;
}
