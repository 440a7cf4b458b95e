/* Training forward/backward behind a K/V prefix (see train.h). */
#include "grad/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "grad/kernels.h"
#include "model/arch.h"
#include "model/ops.h"
#include "model/state.h"
#include "tensor/blas.h"

static _Thread_local size_t last_act_bytes;
size_t dg_train_last_activation_bytes(void) { return last_act_bytes; }

/* What one layer's backward needs (see train.h). */
typedef struct lact {
    float *x_in;    /* [T, E] layer input (the checkpoint) */
    float *q_pre;   /* [T, H*D] q before the per-head norm (qwen3) or NULL */
    float *k_pre;   /* [T, Hkv*D] or NULL */
    float *q;       /* [T, H*D] after norm + RoPE */
    float *k, *v;   /* [T, Hkv*D] own K (after norm + RoPE) and V */
    float *stats;   /* [T, H, 2] attention row max and sum */
    float *x_mid;   /* [T, E] residual after attention */
    float *gate, *up; /* [T, F] MLP pre-activations */
} lact;

typedef struct ctx {
    const deg_model *m;
    const dg_hparams *hp;
    size_t T, P, E, D, QD, KD, F;
    int nt, qk_norm;
    float *cos_t, *sin_t;     /* [T, D/2] at positions P.. (per segment) */
    const size_t *seg;        /* packed segment lengths, or NULL (one segment of T) */
    size_t n_seg;
    /* forward scratch */
    float *xn, *att, *tmp, *hbuf, *ascr;
    /* backward scratch */
    float *dxn, *datt, *dq, *dk, *dv, *dh, *dgate, *dup;
} ctx;

/* x, out: [n, dim] in parallel over rows (each row's arithmetic unchanged). */
static void rmsnorm_rows(float *out, const float *x, const float *w, size_t n, size_t dim,
                         float eps)
{
#pragma omp parallel for schedule(static) if (n > 16) num_threads(dg_num_threads())
    for (size_t i = 0; i < n; i++) dg_rmsnorm(out + i * dim, x + i * dim, w, 1, dim, eps);
}

static void rmsnorm_bwd_rows(float *dx, const float *dy, const float *x, const float *w,
                             size_t n, size_t dim, float eps, int acc)
{
#pragma omp parallel for schedule(static) if (n > 16) num_threads(dg_num_threads())
    for (size_t i = 0; i < n; i++)
        dg_rmsnorm_backward(dx + i * dim, dy + i * dim, x + i * dim, w, 1, dim, eps, acc);
}

/* C[M,N] = A[M,K] . B[N,K]^T */
static void mm_nt(size_t M, size_t N, size_t K, const float *A, const float *B, float *C)
{
    if (M == 0) return;
    dg_sgemm_nt((int64_t)M, (int64_t)N, (int64_t)K, A, (int64_t)K, B, (int64_t)K, C,
                (int64_t)N, 0.0f);
}

/* Attention over packed segments: segment [s0, s0 + n) attends to the
 * prefix and causally to its own rows only (one kernel call per segment on
 * row slices, so a segment's numbers are those of an unpacked run). */
static void attn_fwd_segs(const ctx *c, const lact *a, const float *pk, const float *pv)
{
    const dg_hparams *hp = c->hp;
    size_t n_seg = c->seg ? c->n_seg : 1, s0 = 0;
    for (size_t s = 0; s < n_seg; s++) {
        size_t n = c->seg ? c->seg[s] : c->T;
        dg_attention_forward(c->att + s0 * c->QD, a->stats + s0 * (size_t)hp->n_head * 2,
                             a->q + s0 * c->QD, pk, pv, c->P, a->k + s0 * c->KD,
                             a->v + s0 * c->KD, n, hp->n_head, hp->n_head_kv, (int)c->D,
                             c->ascr, c->nt);
        s0 += n;
    }
}

static deg_status attn_bwd_segs(const ctx *c, const lact *a, const float *pk, const float *pv,
                                float *dpk, float *dpv)
{
    const dg_hparams *hp = c->hp;
    size_t n_seg = c->seg ? c->n_seg : 1, s0 = 0;
    for (size_t s = 0; s < n_seg; s++) {
        size_t n = c->seg ? c->seg[s] : c->T;
        DG_TRY(dg_attention_backward(c->dq + s0 * c->QD, dpk, dpv, c->dk + s0 * c->KD,
                                     c->dv + s0 * c->KD, c->datt + s0 * c->QD,
                                     a->q + s0 * c->QD, pk, pv, c->P, a->k + s0 * c->KD,
                                     a->v + s0 * c->KD, n, hp->n_head, hp->n_head_kv,
                                     (int)c->D, a->stats + s0 * (size_t)hp->n_head * 2,
                                     c->nt));
        s0 += n;
    }
    return DEG_OK;
}

/* One decoder layer forward, x: [T, E] in place; fills a (a->x_in must
 * already hold x). The kernel sequence is dg_forward_std_layer's. */
static void layer_fwd(const ctx *c, int il, const lact *a, float *x, const float *pk,
                      const float *pv)
{
    const dg_hparams *hp = c->hp;
    const dg_layer *L = &c->m->layers[il];
    size_t T = c->T, E = c->E, D = c->D, QD = c->QD, KD = c->KD, F = c->F;

    rmsnorm_rows(c->xn, x, L->attn_norm, T, E, hp->rms_eps);
    mm_nt(T, QD, E, c->xn, L->wq, a->q_pre ? a->q_pre : a->q);
    mm_nt(T, KD, E, c->xn, L->wk, a->k_pre ? a->k_pre : a->k);
    mm_nt(T, KD, E, c->xn, L->wv, a->v);
    if (L->q_norm) rmsnorm_rows(a->q, a->q_pre, L->q_norm, T * hp->n_head, D, hp->rms_eps);
    if (L->k_norm) rmsnorm_rows(a->k, a->k_pre, L->k_norm, T * hp->n_head_kv, D, hp->rms_eps);
    dg_rope_apply(a->q, c->cos_t, c->sin_t, T, hp->n_head, (int)D);
    dg_rope_apply(a->k, c->cos_t, c->sin_t, T, hp->n_head_kv, (int)D);
    attn_fwd_segs(c, a, pk, pv);
    mm_nt(T, E, QD, c->att, L->wo, c->tmp);
    for (size_t i = 0; i < T * E; i++) x[i] += c->tmp[i];
    memcpy(a->x_mid, x, sizeof(float) * T * E);

    rmsnorm_rows(c->xn, x, L->ffn_norm, T, E, hp->rms_eps);
    mm_nt(T, F, E, c->xn, L->w_gate, a->gate);
    mm_nt(T, F, E, c->xn, L->w_up, a->up);
    memcpy(c->hbuf, a->gate, sizeof(float) * T * F);
#pragma omp parallel for schedule(static) if (T > 4) num_threads(dg_num_threads())
    for (size_t i = 0; i < T; i++) dg_swiglu(c->hbuf + i * F, a->up + i * F, F);
    mm_nt(T, E, F, c->hbuf, L->w_down, c->tmp);
    for (size_t i = 0; i < T * E; i++) x[i] += c->tmp[i];
}

/* One decoder layer backward: dx [T, E] holds dL/d(layer output) and becomes
 * dL/d(layer input); dpk, dpv ([P, KD], may be NULL) accumulate. */
static deg_status layer_bwd(const ctx *c, int il, const lact *a, float *dx, const float *pk,
                            const float *pv, float *dpk, float *dpv)
{
    const dg_hparams *hp = c->hp;
    const dg_layer *L = &c->m->layers[il];
    size_t T = c->T, E = c->E, D = c->D, QD = c->QD, KD = c->KD, F = c->F;

    /* MLP: x_out = x_mid + W_down . (silu(W_gate xn2) * (W_up xn2)) */
    dg_linear_backward_x(c->dh, dx, L->w_down, T, E, F, 0);
#pragma omp parallel for schedule(static) if (T > 4) num_threads(dg_num_threads())
    for (size_t i = 0; i < T; i++)
        dg_swiglu_backward(c->dgate + i * F, c->dup + i * F, c->dh + i * F, a->gate + i * F,
                           a->up + i * F, F);
    dg_linear_backward_x(c->dxn, c->dgate, L->w_gate, T, F, E, 0);
    dg_linear_backward_x(c->dxn, c->dup, L->w_up, T, F, E, 1);
    rmsnorm_bwd_rows(dx, c->dxn, a->x_mid, L->ffn_norm, T, E, hp->rms_eps, 1);

    /* Attention: x_mid = x_in + W_o . attn(q, [prefix; k], [prefix; v]) */
    dg_linear_backward_x(c->datt, dx, L->wo, T, E, QD, 0);
    DG_TRY(attn_bwd_segs(c, a, pk, pv, dpk, dpv));
    dg_rope_backward(c->dq, c->cos_t, c->sin_t, T, hp->n_head, (int)D);
    dg_rope_backward(c->dk, c->cos_t, c->sin_t, T, hp->n_head_kv, (int)D);
    /* Per-head norms, in place (the kernel reads a row's dy before writing). */
    if (L->q_norm) {
        memcpy(c->datt, c->dq, sizeof(float) * T * QD);
        rmsnorm_bwd_rows(c->dq, c->datt, a->q_pre, L->q_norm, T * hp->n_head, D, hp->rms_eps, 0);
    }
    if (L->k_norm) {
        memcpy(c->datt, c->dk, sizeof(float) * T * KD);
        rmsnorm_bwd_rows(c->dk, c->datt, a->k_pre, L->k_norm, T * hp->n_head_kv, D,
                         hp->rms_eps, 0);
    }
    dg_linear_backward_x(c->dxn, c->dq, L->wq, T, QD, E, 0);
    dg_linear_backward_x(c->dxn, c->dk, L->wk, T, KD, E, 1);
    dg_linear_backward_x(c->dxn, c->dv, L->wv, T, KD, E, 1);
    rmsnorm_bwd_rows(dx, c->dxn, a->x_in, L->attn_norm, T, E, hp->rms_eps, 1);
    return DEG_OK;
}

/* ------------------------------------------------------------ allocation */

typedef struct pool {
    void **ptrs;
    size_t n, cap, bytes;
    int failed;
} pool;

static float *palloc(pool *p, size_t n_floats)
{
    if (p->failed) return NULL;
    if (n_floats == 0) n_floats = 1;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        void **np = realloc(p->ptrs, cap * sizeof(void *));
        if (!np) { p->failed = 1; return NULL; }
        p->ptrs = np;
        p->cap = cap;
    }
    size_t bytes = (n_floats * sizeof(float) + 63) & ~(size_t)63;
    float *f = aligned_alloc(64, bytes);
    if (!f) { p->failed = 1; return NULL; }
    p->ptrs[p->n++] = f;
    p->bytes += bytes;
    return f;
}

static void pool_free(pool *p)
{
    for (size_t i = 0; i < p->n; i++) free(p->ptrs[i]);
    free(p->ptrs);
}

/* All fields but x_in. */
static void lact_alloc(pool *p, const ctx *c, lact *a)
{
    size_t T = c->T;
    a->q_pre = c->qk_norm ? palloc(p, T * c->QD) : NULL;
    a->k_pre = c->qk_norm ? palloc(p, T * c->KD) : NULL;
    a->q = palloc(p, T * c->QD);
    a->k = palloc(p, T * c->KD);
    a->v = palloc(p, T * c->KD);
    a->stats = palloc(p, T * (size_t)c->hp->n_head * 2);
    a->x_mid = palloc(p, T * c->E);
    a->gate = palloc(p, T * c->F);
    a->up = palloc(p, T * c->F);
}

/* ------------------------------------------------------------------ loss */

typedef struct tref {
    int32_t pos;
    size_t idx;
} tref;

static int tref_cmp(const void *a, const void *b)
{
    const tref *x = a, *y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

/* Fused final norm + LM head + sparse distillation loss (+ its gradient into
 * dx rows when dx != NULL). x: [T, E] final residual stream. */
static deg_status loss_head(const ctx *c, const dg_train_args *a, const float *x, float *dx,
                            pool *p)
{
    const deg_model *m = c->m;
    size_t E = c->E, V = (size_t)c->hp->n_vocab, n = a->n_targets;
    tref *tr = malloc((n ? n : 1) * sizeof *tr);
    if (!tr) return dg_fail(DEG_ERR_NOMEM, "training loss: out of memory");
    for (size_t i = 0; i < n; i++) tr[i] = (tref){a->targets[i].position, i};
    qsort(tr, n, sizeof *tr, tref_cmp);
    size_t n_pos = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || tr[i].pos != tr[i - 1].pos) n_pos++;

    size_t B = DG_TRAIN_LOGIT_ROWS;
    float *hn = palloc(p, B * E), *xr = palloc(p, B * E), *z = palloc(p, B * V);
    float *dhn = palloc(p, B * E);
    int32_t rows[DG_TRAIN_LOGIT_ROWS];
    size_t first[DG_TRAIN_LOGIT_ROWS + 1];
    if (p->failed) {
        free(tr);
        return dg_fail(DEG_ERR_NOMEM, "training loss: out of memory");
    }
    double loss = 0.0;
    double invN = n_pos ? 1.0 / (double)n_pos : 0.0;
    size_t i = 0;
    while (i < n) {
        /* Gather up to B distinct positions. */
        size_t nb = 0;
        while (i < n && nb < B) {
            rows[nb] = tr[i].pos - 1;
            first[nb] = i;
            while (i < n && tr[i].pos == tr[first[nb]].pos) i++;
            nb++;
        }
        first[nb] = i;
        for (size_t b = 0; b < nb; b++)
            memcpy(xr + b * E, x + (size_t)rows[b] * E, sizeof(float) * E);
        rmsnorm_rows(hn, xr, m->out_norm, nb, E, c->hp->rms_eps);
        dg_lm_head(m, hn, nb, z);
        for (size_t b = 0; b < nb; b++) {
            float *zb = z + b * V;
            float mx = -INFINITY;
            for (size_t j = 0; j < V; j++) if (zb[j] > mx) mx = zb[j];
            double s = 0.0;
            for (size_t j = 0; j < V; j++) s += exp((double)zb[j] - mx);
            double lse = mx + log(s);
            double wsum = 0.0;
            for (size_t e = first[b]; e < first[b + 1]; e++) {
                const deg_distill_target *t = &a->targets[tr[e].idx];
                double w = exp((double)t->logprob);
                loss += -w * ((double)zb[t->token] - lse) * invN;
                wsum += w;
            }
            if (!dx) continue;
            /* dz = (wsum * softmax(z) - sum_e w_e onehot(token_e)) / N */
            for (size_t j = 0; j < V; j++)
                zb[j] = (float)(wsum * exp((double)zb[j] - lse) * invN);
            for (size_t e = first[b]; e < first[b + 1]; e++) {
                const deg_distill_target *t = &a->targets[tr[e].idx];
                zb[t->token] -= (float)(exp((double)t->logprob) * invN);
            }
        }
        if (dx) {
            dg_linear_backward_x(dhn, z, m->lm_head, nb, V, E, 0);
            for (size_t b = 0; b < nb; b++)
                dg_rmsnorm_backward(dx + (size_t)rows[b] * E, dhn + b * E, xr + b * E,
                                    m->out_norm, 1, E, c->hp->rms_eps, 1);
        }
    }
    free(tr);
    if (a->loss) *a->loss = (float)loss;
    return DEG_OK;
}

/* --------------------------------------------------------------- driver */

deg_status dg_train_run(const deg_model *m, const dg_train_args *a)
{
    if (m->arch->forward_layer != dg_forward_std_layer)
        return dg_fail(DEG_ERR_UNSUPPORTED,
                       "training: architecture '%s' has no backward (only the standard "
                       "llama/qwen3 layer)", m->arch->name);
    const dg_hparams *hp = &m->hp;
    ctx c = {.m = m, .hp = hp, .T = a->T, .P = a->P, .E = (size_t)hp->n_embd,
             .D = (size_t)hp->head_dim, .F = (size_t)hp->n_ff};
    c.QD = (size_t)hp->n_head * c.D;
    c.KD = (size_t)hp->n_head_kv * c.D;
    c.nt = dg_num_threads();
    if (c.nt < 1) c.nt = 1;
    c.qk_norm = m->layers[0].q_norm != NULL;
    size_t T = c.T, E = c.E, NL = (size_t)hp->n_layer;
    int backward = a->dpk != NULL;
    if (T == 0) {
        if (a->loss) *a->loss = 0.0f;
        return DEG_OK;
    }

    pool p = {0};
    c.cos_t = palloc(&p, T * (c.D / 2));
    c.sin_t = palloc(&p, T * (c.D / 2));
    c.xn = palloc(&p, T * E);
    c.att = palloc(&p, T * c.QD);
    c.tmp = palloc(&p, T * E);
    c.hbuf = palloc(&p, T * c.F);
    c.ascr = palloc(&p, (size_t)c.nt * 2 * (c.P + T));
    float *x = palloc(&p, T * E);
    int64_t *pos = malloc(T * sizeof(int64_t));
    /* Saved activations: per layer (full), or per-layer inputs + one
     * recompute set (checkpoint), or one reused set (forward only). */
    int full = backward && !a->checkpoint;
    size_t n_sets = full ? NL : 1;
    lact *acts = calloc(n_sets, sizeof *acts);
    float **x_ins = calloc(NL, sizeof *x_ins);
    size_t bytes0 = p.bytes;
    if (acts && x_ins) {
        for (size_t s = 0; s < n_sets; s++) lact_alloc(&p, &c, &acts[s]);
        for (size_t il = 0; il < NL; il++)
            x_ins[il] = (backward || il == 0) ? palloc(&p, T * E) : x_ins[0];
    }
    last_act_bytes = p.bytes - bytes0;
    if (p.failed || !pos || !acts || !x_ins) {
        pool_free(&p);
        free(pos); free(acts); free(x_ins);
        return dg_fail(DEG_ERR_NOMEM, "training forward: cannot allocate activations for %zu "
                       "tokens", T);
    }
    if (a->n_segs > 0) {
        c.seg = a->seg_lens;
        c.n_seg = a->n_segs;
    }
    for (size_t i = 0, s = 0, s0 = 0; i < T; i++) {
        while (c.seg && s < c.n_seg && i >= s0 + c.seg[s]) s0 += c.seg[s++];
        pos[i] = (int64_t)(c.P + i - s0);
        memcpy(x + i * E, m->tok_embd + (size_t)a->ids[i] * E, sizeof(float) * E);
    }
    dg_rope_table(c.cos_t, c.sin_t, pos, T, hp->head_dim, hp->rope_theta);

    for (size_t il = 0; il < NL; il++) {
        lact *s = &acts[full ? il : 0];
        s->x_in = x_ins[il];
        memcpy(s->x_in, x, sizeof(float) * T * E);
        layer_fwd(&c, (int)il, s, x, a->P ? a->pk[il] : NULL, a->P ? a->pv[il] : NULL);
    }
    deg_status st = DEG_OK;
    if (a->logits) {
        float *hn = palloc(&p, T * E);
        if (!hn) st = dg_fail(DEG_ERR_NOMEM, "training forward: out of memory");
        else {
            rmsnorm_rows(hn, x, m->out_norm, T, E, hp->rms_eps);
            dg_lm_head(m, hn, T, a->logits);
        }
    }
    float *dx = NULL;
    if (st == DEG_OK && backward) {
        dx = palloc(&p, T * E);
        c.dxn = palloc(&p, T * E);
        c.datt = palloc(&p, T * c.QD);
        c.dq = palloc(&p, T * c.QD);
        c.dk = palloc(&p, T * c.KD);
        c.dv = palloc(&p, T * c.KD);
        c.dh = palloc(&p, T * c.F);
        c.dgate = palloc(&p, T * c.F);
        c.dup = palloc(&p, T * c.F);
        if (p.failed) st = dg_fail(DEG_ERR_NOMEM, "training backward: out of memory");
        else memset(dx, 0, sizeof(float) * T * E);
    }
    if (st == DEG_OK && (a->loss || backward)) st = loss_head(&c, a, x, dx, &p);
    if (st == DEG_OK && backward) {
        for (size_t il = NL; il-- > 0 && st == DEG_OK;) {
            lact *s = &acts[full ? il : 0];
            const float *pk = a->P ? a->pk[il] : NULL, *pv = a->P ? a->pv[il] : NULL;
            if (!full) {
                /* Recompute the layer from its saved input (same code path:
                 * the activations, hence the gradients, are bitwise equal). */
                s->x_in = x_ins[il];
                memcpy(x, s->x_in, sizeof(float) * T * E);
                layer_fwd(&c, (int)il, s, x, pk, pv);
            }
            st = layer_bwd(&c, (int)il, s, dx, pk, pv, a->P ? a->dpk[il] : NULL,
                           a->P ? a->dpv[il] : NULL);
        }
    }
    pool_free(&p);
    free(pos);
    free(acts);
    free(x_ins);
    return st;
}
