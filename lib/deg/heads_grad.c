/* Losses of §12.4 and their head gradients (heads_grad.h). For a softmax
 * over logits l with probabilities p, dKL(t||p)/dl = p - t, and for the
 * marginal -log sum_{pos} p the gradient is p - r, r = p restricted to the
 * positives and renormalised. Every reduction runs in a fixed order, so the
 * same inputs give the same bits (same command + seed -> same checkpoint). */
#include <math.h>
#include <stdlib.h>

#include "deg/anchor.h"
#include "deg/heads_grad.h"

/* log-softmax of l[n] (float) in double */
static void log_softmax(const float *l, size_t n, double *lp)
{
    double mx = -INFINITY, z = 0;
    for (size_t i = 0; i < n; i++)
        if (l[i] > mx) mx = l[i];
    for (size_t i = 0; i < n; i++) z += exp((double)l[i] - mx);
    double lz = mx + log(z);
    for (size_t i = 0; i < n; i++) lp[i] = (double)l[i] - lz;
}

/* d[E] += W[D, E]^T x[D] (when d != NULL; r: [E] scratch) */
static void add_proj_t(float *d, const float *W, int D, int E, const float *x, float *r)
{
    if (!d) return;
    dg_head_proj_t(W, D, E, x, r);
    for (int e = 0; e < E; e++) d[e] += r[e];
}

/* G[D, E] += x[D] (outer) y[E] */
static void outer_add(float *G, int D, int E, const float *x, const float *y)
{
    for (int d = 0; d < D; d++) {
        float *row = G + (size_t)d * E;
        for (int e = 0; e < E; e++) row[e] += x[d] * y[e];
    }
}

double dg_grad_pointer(const dg_heads *h, dg_heads_grad *g, int score, const float *a,
                       const float *opts, size_t n, const double *t)
{
    const int E = h->E, D = DG_HEAD_DIM;
    const float *Wq = score ? h->score_q : h->choice_q, *Wk = score ? h->score_k : h->choice_k;
    float *gq = score ? g->score_q : g->choice_q, *gk = score ? g->score_k : g->choice_k;
    float *gu = score ? g->score_u : g->choice_u;
    float q[DG_HEAD_DIM], k[DG_HEAD_DIM], dq[DG_HEAD_DIM] = {0};
    float *l = malloc(n * sizeof *l);
    double *lp = malloc(n * sizeof *lp);
    float *v = calloc((size_t)E, sizeof *v);
    double loss = NAN;
    if (!l || !lp || !v) goto done;
    dg_head_pointer(h, score, a, opts, n, l);
    log_softmax(l, n, lp);
    dg_head_proj(Wq, D, E, a, q);
    loss = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] > 0) loss += t[i] * (log(t[i]) - lp[i]);
        float gi = (float)(exp(lp[i]) - t[i]);
        const float *o = opts + i * (size_t)E;
        dg_head_proj(Wk, D, E, o, k);
        for (int d = 0; d < D; d++) dq[d] += gi * k[d] / 16.0f;
        for (int e = 0; e < E; e++) v[e] += gi * o[e];
    }
    /* l_i = q.(Wk o_i)/16 + u.o_i: dWk = (q/16) (x) sum g_i o_i, du = sum g_i o_i */
    for (int d = 0; d < D; d++) q[d] /= 16.0f;
    outer_add(gk, D, E, q, v);
    for (int e = 0; e < E; e++) gu[e] += v[e];
    outer_add(gq, D, E, dq, a);
    /* hidden states: da = Wq^T dq; do_i = g_i (Wk^T q/16 + u) */
    add_proj_t(g->d_answer, Wq, D, E, dq, v);
    if (g->d_rows) {
        const float *u = score ? h->score_u : h->choice_u;
        dg_head_proj_t(Wk, D, E, q, v);
        for (int e = 0; e < E; e++) v[e] += u[e];
        for (size_t i = 0; i < n; i++) {
            float gi = (float)(exp(lp[i]) - t[i]);
            float *d = g->d_rows + i * (size_t)E;
            for (int e = 0; e < E; e++) d[e] += gi * v[e];
        }
    }
done:
    free(l);
    free(lp);
    free(v);
    return loss;
}

double dg_grad_noul(const dg_heads *h, dg_heads_grad *g, const float *a, double t_true)
{
    const int E = h->E;
    float l[2] = {dg_head_dot(h->noul_w, a, E) + h->noul_b[0], 0.0f};
    double lp[2];
    log_softmax(l, 2, lp);
    double loss = 0;
    if (t_true > 0) loss += t_true * (log(t_true) - lp[0]);
    if (t_true < 1) loss += (1 - t_true) * (log(1 - t_true) - lp[1]);
    float gl = (float)(exp(lp[0]) - t_true);
    for (int e = 0; e < E; e++) g->noul_w[e] += gl * a[e];
    g->noul_b[0] += gl;
    if (g->d_answer)
        for (int e = 0; e < E; e++) g->d_answer[e] += gl * h->noul_w[e];
    return loss;
}

/* anchored != 0: the anchored-extract bias of (anchor, rend) is on the logits */
static double grad_extract(const dg_heads *h, dg_heads_grad *g, const float *a, const float *ctx,
                           size_t nc, int anchored, size_t anchor, size_t rend,
                           const size_t *pos_start, size_t n_ps, const size_t *pos_end,
                           size_t n_pe)
{
    const int E = h->E, D = DG_HEAD_DIM;
    float q[DG_HEAD_DIM], dq[DG_HEAD_DIM];
    float *r = malloc((size_t)E * sizeof *r), *v = malloc((size_t)E * sizeof *v);
    float *l = malloc((nc + 1) * sizeof *l);
    double *lp = malloc((nc + 1) * sizeof *lp), *gr = malloc((nc + 1) * sizeof *gr);
    double loss = NAN;
    if (!r || !v || !l || !lp || !gr) goto done;
    loss = 0;
    for (int w = 0; w < 2; w++) {
        const float *K = w ? h->ext_ke : h->ext_ks;
        float *gQ = w ? g->ext_qe : g->ext_qs, *gK = w ? g->ext_ke : g->ext_ks;
        const size_t *pos = w ? pos_end : pos_start;
        size_t npos = w ? n_pe : n_ps;
        dg_head_extract_logits(h, w, a, ctx, nc, r, q, l); /* the runtime's forward */
        if (anchored) dg_anchor_bias_add(h, w, anchor, rend, l, nc);
        log_softmax(l, nc + 1, lp);
        /* marginal over the positives (duplicates count once) */
        double mx = -INFINITY;
        for (size_t i = 0; i < nc + 1; i++) gr[i] = 0;
        for (size_t k = 0; k < npos; k++) gr[pos[k]] = 1;
        for (size_t i = 0; i < nc + 1; i++)
            if (gr[i] > 0 && lp[i] > mx) mx = lp[i];
        double z = 0;
        for (size_t i = 0; i < nc + 1; i++)
            if (gr[i] > 0) z += exp(lp[i] - mx);
        double lm = mx + log(z);
        loss -= lm;
        /* dL/dl_i = p_i - (pos_i ? exp(lp_i - lm) : 0) */
        for (size_t i = 0; i < nc + 1; i++)
            gr[i] = exp(lp[i]) - (gr[i] > 0 ? exp(lp[i] - lm) : 0.0);
        for (int e = 0; e < E; e++) v[e] = 0;
        for (size_t t = 0; t < nc; t++) {
            float gt = (float)gr[t];
            const float *c = ctx + t * (size_t)E;
            for (int e = 0; e < E; e++) v[e] += gt * c[e];
        }
        /* l_t = (Q a)^T K c_t: dK = q (x) v, d(Qa) = K v, dQ = (K v) (x) a */
        outer_add(gK, D, E, q, v);
        dg_head_proj(K, D, E, v, dq);
        outer_add(gQ, D, E, dq, a);
        float gn = (float)gr[nc];
        for (int e = 0; e < E; e++) g->ext_null_w[e] += gn * a[e];
        g->ext_null_b[0] += gn;
        /* da = Q^T (K v) + gn null_w (the null logit is shared by start and end) */
        add_proj_t(g->d_answer, w ? h->ext_qe : h->ext_qs, D, E, dq, v);
        if (g->d_answer)
            for (int e = 0; e < E; e++) g->d_answer[e] += gn * h->ext_null_w[e];
        if (anchored)
            for (size_t t = 0; t < nc; t++) {
                int inside = t >= anchor && t < rend;
                int b = dg_anchor_bucket((int64_t)t - (int64_t)anchor);
                g->anchor_bias[((size_t)w * 2 + (size_t)inside) * DG_ANCHOR_BUCKETS + (size_t)b] +=
                    (float)gr[t];
            }
    }
done:
    free(r);
    free(v);
    free(l);
    free(lp);
    free(gr);
    return loss;
}

double dg_grad_extract(const dg_heads *h, dg_heads_grad *g, const float *a, const float *ctx,
                       size_t nc, const size_t *pos_start, size_t n_ps, const size_t *pos_end,
                       size_t n_pe)
{
    return grad_extract(h, g, a, ctx, nc, 0, 0, 0, pos_start, n_ps, pos_end, n_pe);
}

double dg_grad_extract_anchored(const dg_heads *h, dg_heads_grad *g, const float *a,
                                const float *ctx, size_t nc, size_t anchor, size_t rend,
                                const size_t *pos_start, size_t n_ps, const size_t *pos_end,
                                size_t n_pe)
{
    return grad_extract(h, g, a, ctx, nc, 1, anchor, rend, pos_start, n_ps, pos_end, n_pe);
}

/* BCE with logits: softplus(l) - y l, and d/dl = sigmoid(l) - y. */
double dg_grad_anchor(const dg_heads *h, dg_heads_grad *g, const float *a, const float *ctx,
                      size_t r0, size_t r1, const size_t *starts, size_t n_starts)
{
    const int E = h->E, D = DG_HEAD_DIM;
    size_t n = r1 - r0;
    float *v = calloc((size_t)E, sizeof *v);
    float *l = malloc((n ? n : 1) * sizeof *l);
    char *y = calloc(n ? n : 1, 1);
    float q[DG_HEAD_DIM], dq[DG_HEAD_DIM];
    double loss = NAN;
    if (!v || !l || !y || dg_anchor_logits(h, a, ctx, r0, r1, l) != DEG_OK) goto done;
    size_t n_pos = 0;
    for (size_t i = 0; i < n_starts; i++)
        if (starts[i] >= r0 && starts[i] < r1 && !y[starts[i] - r0]) {
            y[starts[i] - r0] = 1;
            n_pos++;
        }
    double scale = 1.0 / (1.0 + (double)n_pos), gb = 0;
    loss = 0;
    for (size_t t = 0; t < n; t++) {
        double x = l[t];
        loss += (x > 0 ? x : 0) + log1p(exp(-fabs(x))) - (y[t] ? x : 0);
        float gt = (float)((1.0 / (1.0 + exp(-x)) - y[t]) * scale);
        gb += gt;
        const float *c = ctx + (r0 + t) * (size_t)E;
        for (int e = 0; e < E; e++) v[e] += gt * c[e];
    }
    loss *= scale;
    /* l_t = (K^T Q a / 16 + u) . c_t + b: du = v, dK = (q/16) (x) v,
     * dQ = (K v / 16) (x) a */
    dg_head_proj(h->anchor_q, D, E, a, q);
    for (int d = 0; d < D; d++) q[d] /= 16.0f;
    outer_add(g->anchor_k, D, E, q, v);
    dg_head_proj(h->anchor_k, D, E, v, dq);
    for (int d = 0; d < D; d++) dq[d] /= 16.0f;
    outer_add(g->anchor_q, D, E, dq, a);
    for (int e = 0; e < E; e++) g->anchor_u[e] += v[e];
    g->anchor_b[0] += (float)gb;
    add_proj_t(g->d_answer, h->anchor_q, D, E, dq, v); /* da = Q^T (K v / 16) */
done:
    free(v);
    free(l);
    free(y);
    return loss;
}

double dg_grad_count(const dg_heads *h, dg_heads_grad *g, const float *x, int lo, int hi,
                     int target)
{
    const int E = h->E;
    /* zeroed: gcc cannot see that the callers check lo <= hi (train.c), and
     * warns -Wmaybe-uninitialized in the ASan build */
    float l[DG_COUNT_MAX + 1] = {0};
    double lp[DG_COUNT_MAX + 1];
    int n = hi - lo + 1;
    for (int c = lo; c <= hi; c++)
        l[c - lo] = dg_head_dot(h->count_w + (size_t)c * E, x, E) + h->count_b[c];
    log_softmax(l, (size_t)n, lp);
    for (int c = lo; c <= hi; c++) {
        float gc = (float)(exp(lp[c - lo]) - (c == target ? 1.0 : 0.0));
        float *row = g->count_w + (size_t)c * E;
        for (int e = 0; e < E; e++) row[e] += gc * x[e];
        g->count_b[c] += gc;
        if (g->d_answer)
            for (int e = 0; e < E; e++) g->d_answer[e] += gc * h->count_w[(size_t)c * E + e];
    }
    return -lp[target - lo];
}
