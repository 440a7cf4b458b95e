/* Training forward/backward behind a K/V prefix (see train.h): the driver
 * that runs the model's layer forward with saved activations, the caller's
 * loss, and the layer backward in reverse. */
#include "grad/train.h"

#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "model/layer_bwd.h"
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
    if (DG_GROW(p->ptrs, p->cap, p->n + 1) != DEG_OK) {
        p->failed = 1;
        return NULL;
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

/* All fields but x_in, for layer il (il < 0: one set reused by every layer,
 * sized for any of them), at each layer's own attention geometry and MLP
 * width. Recurrent layers keep x_mid and the MLP's gate/up only; att is
 * kept when save_att (adapters: their backward reads it) or for a gated
 * attention (qwen3_5: q_proj also gives the output gate, whose backward
 * needs the attention output before it); the architecture's train_saves
 * add Gemma 4's (layer.h). A KV-sharing layer keeps no K/V of its own. */
static void acts_alloc(pool *p, const deg_model *m, size_t T, int il, int save_att,
                       dg_layer_acts *a)
{
    const dg_hparams *hp = &m->hp;
    int g4 = (m->arch->train_saves & DG_SAVE_GEMMA4) != 0;
    size_t QD = 0, KD = 0, F = (size_t)hp->n_ff;
    int attn = 0, qk_norm = 0;
    for (int j = il < 0 ? 0 : il; j < (il < 0 ? hp->n_layer : il + 1); j++) {
        const dg_layer *L = &m->layers[j];
        if ((size_t)L->w_gate.rows > F) F = (size_t)L->w_gate.rows;
        if (!L->has_kv && !L->kv_shared) continue;
        size_t qd = (size_t)hp->n_head * (size_t)L->head_dim;
        attn = 1;
        if (qd > QD) QD = qd;
        if (L->has_kv && L->kv_row > KD) KD = L->kv_row;
        qk_norm |= L->q_norm != NULL;
        save_att |= L->wq.rows > (int64_t)qd;
    }
    memset(a, 0, sizeof *a);
    if (attn) {
        a->q_pre = qk_norm || g4 ? palloc(p, T * QD) : NULL;
        a->q = palloc(p, T * QD);
        a->stats = palloc(p, T * (size_t)hp->n_head * 2);
        a->att = save_att || g4 ? palloc(p, T * QD) : NULL;
    }
    if (KD) {
        a->k_pre = qk_norm || g4 ? palloc(p, T * KD) : NULL;
        a->k = palloc(p, T * KD);
        a->v = palloc(p, T * KD);
        a->v_pre = g4 ? palloc(p, T * KD) : NULL;
    }
    a->x_mid = palloc(p, T * (size_t)hp->n_embd);
    a->x_ffn = g4 ? palloc(p, T * (size_t)hp->n_embd) : NULL;
    a->gate = palloc(p, T * F);
    a->up = palloc(p, T * F);
}

/* One activation set for every layer (checkpointing, or a forward only): a
 * layer whose K/V a later KV-sharing layer reads keeps them in rows of its
 * own, as the set's are overwritten by the layers in between. */
static void share_sources(pool *p, const deg_model *m, size_t T, const dg_layer_acts *set,
                          float **ok, float **ov)
{
    for (int il = 0; il < m->hp.n_layer; il++) {
        int src = m->layers[il].kv_src;
        if (!m->layers[il].kv_shared || ok[src] != set->k) continue;
        ok[src] = palloc(p, T * m->layers[src].kv_row);
        ov[src] = palloc(p, T * m->layers[src].kv_row);
    }
}

/* Recurrent blocks of the pass: one working block per segment (every layer
 * restarts it from rec0[il] before running: dg_segs_rec_reset), rec0 the
 * initial blocks (the args' prec, or a zero block). */
static deg_status rec_init(pool *p, const deg_model *m, const dg_train_args *a, dg_seg *segs,
                           size_t n_seg, float ***seg_rec, const float ***rec0)
{
    size_t NL = (size_t)m->hp.n_layer, max_n = 0;
    for (size_t il = 0; il < NL; il++)
        if (m->layers[il].state_floats > max_n) max_n = m->layers[il].state_floats;
    if (!max_n) return DEG_OK;
    *seg_rec = calloc(n_seg * NL, sizeof **seg_rec);
    *rec0 = calloc(NL, sizeof **rec0);
    float *zero = palloc(p, max_n);
    if (!*seg_rec || !*rec0 || !zero)
        return dg_fail(DEG_ERR_NOMEM, "training forward: out of memory (recurrent state)");
    memset(zero, 0, sizeof(float) * max_n);
    for (size_t il = 0; il < NL; il++)
        (*rec0)[il] = a->prec && a->prec[il] ? a->prec[il] : zero;
    for (size_t s = 0; s < n_seg; s++) {
        float *w = palloc(p, max_n);
        if (!w) return dg_fail(DEG_ERR_NOMEM, "training forward: out of memory");
        for (size_t il = 0; il < NL; il++) (*seg_rec)[s * NL + il] = w;
        segs[s].rec = *seg_rec + s * NL;
    }
    return DEG_OK;
}

/* The pass layout: one segment per packed segment (one of T if unpacked),
 * at RoPE positions P.., attending to the prefix and to its own rows, whose
 * K/V are the saved activations of the layer (acts[il], own_base = t0). */
struct dg_train_state {
    const deg_model *m;
    const dg_train_args *a;
    pool p;
    dg_batch b;
    dg_layer_acts *acts;   /* [n_sets] */
    float **ok, **ov;      /* [n_layer]: acts[il or 0].k / .v */
    float **x_ins;         /* [n_layer] */
    float **seg_rec;       /* [n_seg * n_layer] recurrent working blocks (hybrids) or NULL */
    const float **rec0;    /* [n_layer] initial recurrent blocks (hybrids) or NULL */
    float *x;              /* [T, E] residual stream */
    int64_t *pos;
    int full;              /* one activation set per layer */
    int want_bwd, done_bwd;
    float **share;         /* [2 * n_layer] dg_layer_grad.dk_share | dv_share or NULL */
};

static deg_status state_init(dg_train_state *r, const deg_model *m, const dg_train_args *a)
{
    const dg_hparams *hp = &m->hp;
    size_t T = a->T, E = (size_t)hp->n_embd, D = (size_t)hp->head_dim, NL = (size_t)hp->n_layer;
    size_t n_seg = a->n_segs ? a->n_segs : 1;
    pool *p = &r->p;
    dg_batch *b = &r->b;
    int nt = dg_num_threads();
    if (nt < 1) nt = 1;
    b->n_tokens = T;
    float *cs = palloc(p, T * (D / 2)), *sn = palloc(p, T * (D / 2));
    b->rope_cos = cs;
    b->rope_sin = sn;
    /* the layer pass's scratch; q, k, v and up are the saved activations' */
    float *scratch = palloc(p, dg_batch_scratch_floats(m, T, nt, 1));
    if (scratch) dg_batch_bind_scratch(b, m, T, nt, 1, scratch);
    r->x = palloc(p, T * E);
    /* Saved activations: per layer (full), or per-layer inputs + one
     * recompute set (checkpoint), or one reused set (forward only). */
    r->full = r->want_bwd && !a->checkpoint;
    size_t n_sets = r->full ? NL : 1, bytes0 = p->bytes;
    r->acts = calloc(n_sets, sizeof *r->acts);
    r->ok = calloc(NL, sizeof *r->ok);
    r->ov = calloc(NL, sizeof *r->ov);
    r->x_ins = calloc(NL, sizeof *r->x_ins);
    r->pos = malloc(T * sizeof *r->pos);
    b->segs = calloc(n_seg, sizeof *b->segs);
    if (!r->acts || !r->ok || !r->ov || !r->x_ins || !r->pos || !b->segs)
        return dg_fail(DEG_ERR_NOMEM, "training forward: out of memory");
    for (size_t s = 0; s < n_sets; s++)
        acts_alloc(p, m, T, r->full ? (int)s : -1, r->want_bwd && a->dlora != NULL, &r->acts[s]);
    for (size_t il = 0; il < NL; il++) {
        r->x_ins[il] = (r->want_bwd || il == 0) ? palloc(p, T * E) : r->x_ins[0];
        r->ok[il] = r->acts[r->full ? il : 0].k;
        r->ov[il] = r->acts[r->full ? il : 0].v;
    }
    if (!r->full) share_sources(p, m, T, &r->acts[0], r->ok, r->ov);
    last_act_bytes = p->bytes - bytes0;
    if (p->failed)
        return dg_fail(DEG_ERR_NOMEM, "training forward: cannot allocate activations for %zu "
                       "tokens", T);
    b->n_segs = n_seg;
    for (size_t s = 0, t0 = 0; s < n_seg; s++) {
        size_t n = a->n_segs ? a->seg_lens[s] : T;
        int ad = a->lora && a->seg_adapters ? a->seg_adapters[s] : -1;
        b->segs[s] = (dg_seg){.n = n, .t0 = t0, .pk = a->P ? a->pk : NULL,
                              .pv = a->P ? a->pv : NULL, .prefix_len = a->P, .ok = r->ok,
                              .ov = r->ov, .own_base = t0, .own_len0 = 0,
                              .lora = ad >= 0 ? a->lora : NULL, .adapter = ad};
        for (size_t i = 0; i < n; i++) r->pos[t0 + i] = (int64_t)(a->P + i);
        t0 += n;
    }
    DG_TRY(rec_init(p, m, a, b->segs, n_seg, &r->seg_rec, &r->rec0));
    dg_rope_table(cs, sn, r->pos, T, hp->rope_dim, hp->rope_theta);
    return DEG_OK;
}

void dg_train_state_free(dg_train_state *r)
{
    if (!r) return;
    pool_free(&r->p);
    free(r->acts);
    free(r->ok);
    free(r->ov);
    free(r->x_ins);
    free(r->pos);
    free(r->b.segs);
    free(r->seg_rec);
    free(r->rec0);
    free(r->share);
    free(r);
}

/* Layer il forward from x (in place), saving into its activation set. */
static void layer_fwd(dg_train_state *r, int il, float *x)
{
    dg_layer_acts *s = &r->acts[r->full ? il : 0];
    s->x_in = r->x_ins[il];
    r->b.save = s;
    size_t n_rec = r->m->layers[il].state_floats;
    if (n_rec) dg_segs_rec_reset(&r->b, il, r->rec0[il], n_rec);
    r->m->arch->forward_layer(r->m, il, &r->b, x);
}

deg_status dg_train_check(const deg_model *m, const char *who)
{
    if (!m->arch->backward_layer)
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: architecture '%s' has no layer backward (it "
                       "cannot be trained)", who, m->arch->name);
    return DEG_OK;
}

deg_status dg_train_forward(const deg_model *m, const dg_train_args *a, dg_train_state **out)
{
    *out = NULL;
    DG_TRY(dg_train_check(m, "training"));
    dg_train_state *r = calloc(1, sizeof *r);
    if (!r) return dg_fail(DEG_ERR_NOMEM, "training forward: out of memory");
    r->m = m;
    r->a = a;
    r->want_bwd = a->dpk != NULL || a->dlora != NULL || a->dprec != NULL;
    size_t E = (size_t)m->hp.n_embd;
    deg_status st = a->T ? state_init(r, m, a) : DEG_OK;
    if (st != DEG_OK) {
        dg_train_state_free(r);
        return st;
    }
    for (size_t i = 0; i < a->T; i++)
        dg_weight_get_row(&m->tok_embd, a->ids[i], r->x + i * E);
    if (a->T && m->arch->begin_pass) m->arch->begin_pass(m, &r->b, r->x, a->ids, r->pos);
    for (int il = 0; a->T && il < m->hp.n_layer; il++) layer_fwd(r, il, r->x);
    *out = r;
    return DEG_OK;
}

const float *dg_train_final(const dg_train_state *s) { return s->x; }

deg_status dg_train_backward(dg_train_state *r, float *dx)
{
    const deg_model *m = r->m;
    const dg_train_args *a = r->a;
    if (!r->want_bwd || r->done_bwd)
        return dg_fail(DEG_ERR_INTERNAL, "training backward: no saved forward");
    r->done_bwd = 1;
    size_t T = a->T, E = (size_t)m->hp.n_embd, QD = m->max_qd, KD = m->max_kd;
    size_t F = m->max_ff, NL = (size_t)m->hp.n_layer;
    if (T == 0) return DEG_OK;
    pool *p = &r->p;
    /* KV sharing: the gradient into a source layer's own K/V rows from the
     * later layers that read them, added in at the source's backward */
    float **share = NULL;
    for (size_t il = 0; il < NL; il++) {
        const dg_layer *L = &m->layers[il];
        if (!L->kv_shared) continue;
        if (!share && !(share = calloc(2 * NL, sizeof *share)))
            return dg_fail(DEG_ERR_NOMEM, "training backward: out of memory");
        size_t src = (size_t)L->kv_src, n = T * m->layers[src].kv_row;
        if (!share[src]) {
            share[src] = palloc(p, n);
            share[NL + src] = palloc(p, n);
            if (share[src]) memset(share[src], 0, sizeof(float) * n);
            if (share[NL + src]) memset(share[NL + src], 0, sizeof(float) * n);
        }
    }
    r->share = share;
    dg_layer_grad g = {.dxn = palloc(p, T * E), .datt = palloc(p, T * QD),
                       .dq = palloc(p, T * QD), .dk = palloc(p, T * KD), .dv = palloc(p, T * KD),
                       .dh = palloc(p, T * F), .dgate = palloc(p, T * F),
                       .dup = palloc(p, T * F), .dpk = a->P ? a->dpk : NULL,
                       .dpv = a->P ? a->dpv : NULL, .dlora = a->dlora,
                       .prec = r->rec0, .dprec = a->dprec, .dk_share = share,
                       .dv_share = share ? share + NL : NULL};
    if (a->dlora) {
        g.xn = palloc(p, T * E);
        g.h = palloc(p, T * F);
    }
    if (p->failed) return dg_fail(DEG_ERR_NOMEM, "training backward: out of memory");
    for (int il = m->hp.n_layer; il-- > 0;) {
        if (!r->full) {
            /* Recompute the layer from its saved input (same code path:
             * the activations, hence the gradients, are bitwise equal). */
            memcpy(r->x, r->x_ins[il], sizeof(float) * T * E);
            layer_fwd(r, il, r->x);
        }
        DG_TRY(m->arch->backward_layer(m, il, &r->b, &r->acts[r->full ? il : 0], dx, &g));
    }
    return DEG_OK;
}

/* --------------------------------------------------------------- driver */

deg_status dg_train_run(const deg_model *m, const dg_train_args *a)
{
    int want_bwd = a->dpk != NULL || a->dlora != NULL || a->dprec != NULL;
    if (want_bwd && !a->loss_fn)
        return dg_fail(DEG_ERR_INTERNAL, "training: a backward needs a loss");
    if (a->T == 0) {
        if (a->loss) *a->loss = 0.0f;
        return DEG_OK;
    }
    dg_train_state *r;
    DG_TRY(dg_train_forward(m, a, &r));
    const dg_hparams *hp = &m->hp;
    size_t T = a->T, E = (size_t)hp->n_embd;
    deg_status st = DEG_OK;
    if (a->logits) {
        float *hn = palloc(&r->p, T * E);
        if (!hn) st = dg_fail(DEG_ERR_NOMEM, "training forward: out of memory");
        else {
            dg_rmsnorm_rows(hn, r->x, m->out_norm, T, E, hp->rms_eps);
            dg_lm_head(m, hn, T, a->logits);
        }
    }
    float *dx = NULL, l = 0.0f;
    if (st == DEG_OK && want_bwd) {
        dx = palloc(&r->p, T * E);
        if (!dx) st = dg_fail(DEG_ERR_NOMEM, "training backward: out of memory");
        else memset(dx, 0, sizeof(float) * T * E);
    }
    if (st == DEG_OK && a->loss_fn && (a->loss || want_bwd)) {
        st = a->loss_fn(m, r->x, T, dx, &l, a->loss_ud);
        if (st == DEG_OK && a->loss) *a->loss = l;
    }
    if (st == DEG_OK && want_bwd) st = dg_train_backward(r, dx);
    dg_train_state_free(r);
    return st;
}
