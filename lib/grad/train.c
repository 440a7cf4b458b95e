/* Training forward/backward behind a K/V prefix (see train.h): the driver
 * that runs the model's layer forward with saved activations, the caller's
 * loss, and the layer backward in reverse. */
#include "grad/train.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "grad/layer_bwd.h"
#include "model/arch.h"
#include "model/layer.h"
#include "model/ops.h"
#include "tensor/blas.h"
#include "model/state.h"

static _Thread_local size_t last_act_bytes;
size_t dg_train_last_activation_bytes(void) { return last_act_bytes; }

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
static void acts_alloc(pool *p, const deg_model *m, size_t T, dg_layer_acts *a)
{
    const dg_hparams *hp = &m->hp;
    size_t D = (size_t)hp->head_dim, QD = (size_t)hp->n_head * D, KD = (size_t)hp->n_head_kv * D;
    int qk_norm = m->layers[0].q_norm != NULL;
    a->q_pre = qk_norm ? palloc(p, T * QD) : NULL;
    a->k_pre = qk_norm ? palloc(p, T * KD) : NULL;
    a->q = palloc(p, T * QD);
    a->k = palloc(p, T * KD);
    a->v = palloc(p, T * KD);
    a->stats = palloc(p, T * (size_t)hp->n_head * 2);
    a->x_mid = palloc(p, T * (size_t)hp->n_embd);
    a->gate = palloc(p, T * (size_t)hp->n_ff);
    a->up = palloc(p, T * (size_t)hp->n_ff);
}

/* The pass layout: one segment per packed segment (one of T if unpacked),
 * at RoPE positions P.., attending to the prefix and to its own rows, whose
 * K/V are the saved activations of the layer (acts[il], own_base = t0). */
typedef struct run {
    dg_batch b;
    dg_layer_acts *acts;   /* [n_sets] */
    float **ok, **ov;      /* [n_layer]: acts[il or 0].k / .v */
    float **x_ins;         /* [n_layer] */
    int64_t *pos;
    int full;              /* one activation set per layer */
} run;

static deg_status run_init(run *r, pool *p, const deg_model *m, const dg_train_args *a,
                           int backward)
{
    const dg_hparams *hp = &m->hp;
    size_t T = a->T, E = (size_t)hp->n_embd, D = (size_t)hp->head_dim, NL = (size_t)hp->n_layer;
    size_t QD = (size_t)hp->n_head * D, F = (size_t)hp->n_ff;
    size_t n_seg = a->n_segs ? a->n_segs : 1, max_seg = 0;
    for (size_t s = 0; s < n_seg; s++) {
        size_t n = a->n_segs ? a->seg_lens[s] : T;
        if (n > max_seg) max_seg = n;
    }
    dg_batch *b = &r->b;
    memset(r, 0, sizeof *r);
    b->n_threads = dg_num_threads();
    if (b->n_threads < 1) b->n_threads = 1;
    b->n_tokens = T;
    b->max_ctx = a->P + max_seg;
    float *cs = palloc(p, T * (D / 2)), *sn = palloc(p, T * (D / 2));
    b->rope_cos = cs;
    b->rope_sin = sn;
    b->xn = palloc(p, T * E);
    b->att = palloc(p, T * QD);
    b->gate = palloc(p, T * F);
    b->tmp = palloc(p, T * E);
    b->scores = palloc(p, (size_t)b->n_threads * b->max_ctx);
    /* Saved activations: per layer (full), or per-layer inputs + one
     * recompute set (checkpoint), or one reused set (forward only). */
    r->full = backward && !a->checkpoint;
    size_t n_sets = r->full ? NL : 1, bytes0 = p->bytes;
    r->acts = calloc(n_sets, sizeof *r->acts);
    r->ok = calloc(NL, sizeof *r->ok);
    r->ov = calloc(NL, sizeof *r->ov);
    r->x_ins = calloc(NL, sizeof *r->x_ins);
    r->pos = malloc(T * sizeof *r->pos);
    b->segs = calloc(n_seg, sizeof *b->segs);
    if (!r->acts || !r->ok || !r->ov || !r->x_ins || !r->pos || !b->segs)
        return dg_fail(DEG_ERR_NOMEM, "training forward: out of memory");
    for (size_t s = 0; s < n_sets; s++) acts_alloc(p, m, T, &r->acts[s]);
    for (size_t il = 0; il < NL; il++) {
        r->x_ins[il] = (backward || il == 0) ? palloc(p, T * E) : r->x_ins[0];
        r->ok[il] = r->acts[r->full ? il : 0].k;
        r->ov[il] = r->acts[r->full ? il : 0].v;
    }
    last_act_bytes = p->bytes - bytes0;
    if (p->failed)
        return dg_fail(DEG_ERR_NOMEM, "training forward: cannot allocate activations for %zu "
                       "tokens", T);
    b->n_segs = n_seg;
    for (size_t s = 0, t0 = 0; s < n_seg; s++) {
        size_t n = a->n_segs ? a->seg_lens[s] : T;
        b->segs[s] = (dg_seg){.n = n, .t0 = t0, .pk = a->P ? a->pk : NULL,
                              .pv = a->P ? a->pv : NULL, .prefix_len = a->P, .ok = r->ok,
                              .ov = r->ov, .own_base = t0, .own_len0 = 0};
        for (size_t i = 0; i < n; i++) r->pos[t0 + i] = (int64_t)(a->P + i);
        t0 += n;
    }
    dg_rope_table(cs, sn, r->pos, T, hp->head_dim, hp->rope_theta);
    return DEG_OK;
}

static void run_free(run *r)
{
    free(r->acts);
    free(r->ok);
    free(r->ov);
    free(r->x_ins);
    free(r->pos);
    free(r->b.segs);
}

/* Layer il forward from x (in place), saving into its activation set. */
static void layer_fwd(const deg_model *m, run *r, int il, float *x)
{
    dg_layer_acts *s = &r->acts[r->full ? il : 0];
    s->x_in = r->x_ins[il];
    r->b.save = s;
    m->arch->forward_layer(m, il, &r->b, x);
}

static deg_status backward(const deg_model *m, const dg_train_args *a, run *r, float *x,
                           float *dx, pool *p, dg_layer_backward_fn bwd)
{
    size_t T = a->T, E = (size_t)m->hp.n_embd, D = (size_t)m->hp.head_dim;
    size_t QD = (size_t)m->hp.n_head * D, KD = (size_t)m->hp.n_head_kv * D;
    size_t F = (size_t)m->hp.n_ff;
    dg_layer_grad g = {.dxn = palloc(p, T * E), .datt = palloc(p, T * QD),
                       .dq = palloc(p, T * QD), .dk = palloc(p, T * KD), .dv = palloc(p, T * KD),
                       .dh = palloc(p, T * F), .dgate = palloc(p, T * F),
                       .dup = palloc(p, T * F), .dpk = a->P ? a->dpk : NULL,
                       .dpv = a->P ? a->dpv : NULL};
    if (p->failed) return dg_fail(DEG_ERR_NOMEM, "training backward: out of memory");
    for (int il = m->hp.n_layer; il-- > 0;) {
        if (!r->full) {
            /* Recompute the layer from its saved input (same code path:
             * the activations, hence the gradients, are bitwise equal). */
            memcpy(x, r->x_ins[il], sizeof(float) * T * E);
            layer_fwd(m, r, il, x);
        }
        DG_TRY(bwd(m, il, &r->b, &r->acts[r->full ? il : 0], dx, &g));
    }
    return DEG_OK;
}

/* --------------------------------------------------------------- driver */

deg_status dg_train_run(const deg_model *m, const dg_train_args *a)
{
    dg_layer_backward_fn bwd = dg_layer_backward_for(m);
    if (!bwd)
        return dg_fail(DEG_ERR_UNSUPPORTED, "training: architecture '%s' has no layer backward",
                       m->arch->name);
    const dg_hparams *hp = &m->hp;
    size_t T = a->T, E = (size_t)hp->n_embd;
    int want_bwd = a->dpk != NULL;
    if (want_bwd && !a->loss_fn)
        return dg_fail(DEG_ERR_INTERNAL, "training: a backward needs a loss");
    if (T == 0) {
        if (a->loss) *a->loss = 0.0f;
        return DEG_OK;
    }
    pool p = {0};
    run r;
    float *x = palloc(&p, T * E);
    deg_status st = run_init(&r, &p, m, a, want_bwd);
    if (st == DEG_OK && !x) st = dg_fail(DEG_ERR_NOMEM, "training forward: out of memory");
    if (st == DEG_OK) {
        for (size_t i = 0; i < T; i++)
            memcpy(x + i * E, m->tok_embd + (size_t)a->ids[i] * E, sizeof(float) * E);
        for (int il = 0; il < hp->n_layer; il++) layer_fwd(m, &r, il, x);
    }
    if (st == DEG_OK && a->logits) {
        float *hn = palloc(&p, T * E);
        if (!hn) st = dg_fail(DEG_ERR_NOMEM, "training forward: out of memory");
        else {
            dg_rmsnorm_rows(hn, x, m->out_norm, T, E, hp->rms_eps);
            dg_lm_head(m, hn, T, a->logits);
        }
    }
    float *dx = NULL, l = 0.0f;
    if (st == DEG_OK && want_bwd) {
        dx = palloc(&p, T * E);
        if (!dx) st = dg_fail(DEG_ERR_NOMEM, "training backward: out of memory");
        else memset(dx, 0, sizeof(float) * T * E);
    }
    if (st == DEG_OK && a->loss_fn && (a->loss || want_bwd)) {
        st = a->loss_fn(m, x, T, dx, &l, a->loss_ud);
        if (st == DEG_OK && a->loss) *a->loss = l;
    }
    if (st == DEG_OK && want_bwd) st = backward(m, a, &r, x, dx, &p, bwd);
    run_free(&r);
    pool_free(&p);
    return st;
}
