/* fp32 heads of §12.3 (fill.h): projections, pointer logits, softmax and the
 * decision rules shared by every head. Every reduction runs in one fixed order
 * per output (8 interleaved partial sums, then a fixed tree), so a field's
 * numbers depend only on its own inputs (§10, §12.2). */
#include <math.h>
#include <string.h>

#include "deg/fill.h"

float dg_head_dot(const float *a, const float *b, int n)
{
    float s[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) s[j] += a[i + j] * b[i + j];
    for (; i < n; i++) s[0] += a[i] * b[i];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

/* y[D] = W[D, E] x[E] */
void dg_head_proj(const float *W, int D, int E, const float *x, float *y)
{
    for (int d = 0; d < D; d++) y[d] = dg_head_dot(W + (size_t)d * E, x, E);
}

void dg_head_proj_t(const float *W, int D, int E, const float *q, float *r)
{
    for (int e = 0; e < E; e++) {
        float s = 0;
        for (int d = 0; d < D; d++) s += W[(size_t)d * E + e] * q[d];
        r[e] = s;
    }
}

/* logits[i] = q(a) . k(o_i) / sqrt(D) + u . o_i   (jev v1 pointer head)
 * a [E], opts [n, E] -> logits [n] */
void dg_head_pointer(const dg_heads *h, int score, const float *a, const float *opts, size_t n,
                     float *logits)
{
    const int E = h->E, D = DG_HEAD_DIM;
    const float *Wq = score ? h->score_q : h->choice_q;
    const float *Wk = score ? h->score_k : h->choice_k;
    const float *u = score ? h->score_u : h->choice_u;
    float q[DG_HEAD_DIM], k[DG_HEAD_DIM];
    dg_head_proj(Wq, D, E, a, q);
    for (size_t i = 0; i < n; i++) {
        const float *o = opts + i * (size_t)E;
        dg_head_proj(Wk, D, E, o, k);
        logits[i] = dg_head_dot(q, k, D) / 16.0f + dg_head_dot(u, o, E);
    }
}

/* p = softmax(logits / T) in double, log-probs in lp (may be NULL). */
void dg_softmax(const float *logits, size_t n, double T, double *p, double *lp)
{
    double mx = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if ((double)logits[i] / T > mx) mx = (double)logits[i] / T;
    double z = 0;
    for (size_t i = 0; i < n; i++) z += exp((double)logits[i] / T - mx);
    double lz = log(z);
    for (size_t i = 0; i < n; i++) {
        double l = (double)logits[i] / T - mx - lz;
        if (lp) lp[i] = l;
        p[i] = exp(l);
    }
}

size_t dg_argmax_d(const double *p, size_t n)
{
    size_t b = 0;
    for (size_t i = 1; i < n; i++)
        if (p[i] > p[b]) b = i;
    return b;
}

double dg_confidence(double peak, size_t count)
{
    if (count <= 1) return 1.0;
    return ((double)count * peak - 1.0) / ((double)count - 1.0);
}

/* Extract pointer logits over the context (start w = 0, end w = 1):
 * r = K^T (Q a), l_t = r . c_t, and the null logit null_w . a + null_b as
 * outcome nc. The key projection is moved to the query side, so the cost is
 * O(context x E) per field and nothing of size [context, D] exists.
 * a [E], ctx [nc, E] -> logits [nc + 1]; r [E] scratch (also the q of the
 * caller's gradient: q [D] is written when not NULL). */
void dg_head_extract_logits(const dg_heads *h, int w, const float *a, const float *ctx,
                            size_t nc, float *r, float *q, float *logits)
{
    const int E = h->E, D = DG_HEAD_DIM;
    const float *Q = w ? h->ext_qe : h->ext_qs, *K = w ? h->ext_ke : h->ext_ks;
    float qb[DG_HEAD_DIM];
    if (!q) q = qb;
    dg_head_proj(Q, D, E, a, q);
    dg_head_proj_t(K, D, E, q, r);
    for (size_t t = 0; t < nc; t++) logits[t] = dg_head_dot(r, ctx + t * (size_t)E, E);
    logits[nc] = dg_head_dot(h->ext_null_w, a, E) + h->ext_null_b[0];
}
