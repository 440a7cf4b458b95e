/* Backward of the standard pre-norm decoder layer (llama, qwen3) whose
 * forward is lib/model/layer_std.c (see layer_bwd.h). */
#include "model/layer_bwd.h"

#include <math.h>
#include <string.h>

#include "base/status.h"
#include "model/ops_bwd.h"
#include "model/lora_internal.h"
#include "model/ops.h"
#include "tensor/blas.h"

void dg_rmsnorm_backward_rows(float *dx, const float *dy, const float *x, const float *w,
                              size_t n, size_t dim, float eps, int acc)
{
#pragma omp parallel for schedule(static) if (n > 16) num_threads(dg_num_threads())
    for (size_t i = 0; i < n; i++)
        dg_rmsnorm_backward(dx + i * dim, dy + i * dim, x + i * dim, w, 1, dim, eps, acc);
}

/* Attention backward per segment (layer_bwd.h): segment s attends to its
 * prefix and causally to its own rows (one kernel call on row slices; the
 * own rows are where the forward appended them, s->ok[kv_src]). */
deg_status dg_backward_attn_segs(const deg_model *m, int il, const dg_batch *b,
                                const dg_layer_acts *a, const dg_layer_grad *g)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    int src = L->kv_src, D = L->head_dim, nt = b->n_threads;
    size_t QD = (size_t)hp->n_head * (size_t)D, KD = L->kv_row;
    float scale = L->attn_scale > 0.0f ? L->attn_scale : 1.0f / sqrtf((float)D);
    for (size_t si = 0; si < b->n_segs; si++) {
        const dg_seg *s = &b->segs[si];
        size_t t0 = s->t0, P = s->prefix_len;
        const float *pk = s->pk ? s->pk[src] : NULL, *pv = s->pv ? s->pv[src] : NULL;
        const float *ko = s->ok[src] + s->own_base * KD, *vo = s->ov[src] + s->own_base * KD;
        DG_TRY(dg_attention_backward_win(g->dq + t0 * QD, g->dpk ? g->dpk[src] : NULL,
                                         g->dpv ? g->dpv[src] : NULL, g->dk + t0 * KD,
                                         g->dv + t0 * KD, g->datt + t0 * QD, a->q + t0 * QD, pk,
                                         pv, P, ko, vo, s->n, hp->n_head, L->n_head_kv, D, scale,
                                         (size_t)L->window,
                                         a->stats + t0 * (size_t)hp->n_head * 2, nt));
    }
    return DEG_OK;
}

/* LoRA backward of target t (layer_bwd.h). Segments in order (the parameter
 * gradient sums rows in a fixed order). */
void dg_backward_lora(const dg_batch *b, int il, int t, const dg_layer_grad *g, const float *dy,
                     size_t ldy, const float *x, size_t ldx, float *dx)
{
    if (!g->dlora) return;
    for (size_t si = 0; si < b->n_segs; si++) {
        const dg_seg *s = &b->segs[si];
        if (s->adapter < 0) continue;
        const deg_lora *l = s->lora;
        size_t o = dg_lora_offset(l, s->adapter, il, t);
        if (o == (size_t)-1) continue;
        size_t in = dg_lora_in(l, il, t), ra = (size_t)l->p.rank * in;
        dg_lora_rows_backward(g->dlora + o, g->dlora + o + ra, dx + s->t0 * ldx, ldx,
                              dy + s->t0 * ldy, ldy, x + s->t0 * ldx, ldx, s->n, l->data + o,
                              l->data + o + ra, l->p.rank, in, dg_lora_out(l, il, t), l->scale);
    }
}

deg_status dg_backward_mlp(const deg_model *m, int il, const dg_batch *b, const dg_layer_acts *a,
                           float *dx, const dg_layer_grad *g)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    size_t T = b->n_tokens, E = (size_t)hp->n_embd, F = (size_t)hp->n_ff;
    /* x_out = x_mid + W_down . (silu(W_gate xn2) * (W_up xn2)) (+ adapters:
     * their inputs xn2 and h are recomputed by the forward's kernels) */
    DG_TRY(dg_weight_backward_x(&L->w_down, (int64_t)T, dx, (int64_t)E, g->dh, (int64_t)F,
                                0));
    if (g->dlora) {
        memcpy(g->h, a->gate, sizeof(float) * T * F);
#pragma omp parallel for schedule(static) if (T > 4) num_threads(dg_num_threads())
        for (size_t i = 0; i < T; i++) dg_swiglu(g->h + i * F, a->up + i * F, F);
        dg_backward_lora(b, il, DG_LORA_DOWN, g, dx, E, g->h, F, g->dh);
    }
#pragma omp parallel for schedule(static) if (T > 4) num_threads(dg_num_threads())
    for (size_t i = 0; i < T; i++)
        dg_swiglu_backward(g->dgate + i * F, g->dup + i * F, g->dh + i * F, a->gate + i * F,
                           a->up + i * F, F);
    DG_TRY(dg_weight_backward_x(&L->w_gate, (int64_t)T, g->dgate, (int64_t)F, g->dxn, (int64_t)E,
                                0));
    DG_TRY(dg_weight_backward_x(&L->w_up, (int64_t)T, g->dup, (int64_t)F, g->dxn, (int64_t)E,
                                1));
    if (g->dlora) {
        dg_rmsnorm_rows(g->xn, a->x_mid, L->ffn_norm, T, E, hp->rms_eps);
        dg_backward_lora(b, il, DG_LORA_GATE, g, g->dgate, F, g->xn, E, g->dxn);
        dg_backward_lora(b, il, DG_LORA_UP, g, g->dup, F, g->xn, E, g->dxn);
    }
    dg_rmsnorm_backward_rows(dx, g->dxn, a->x_mid, L->ffn_norm, T, E, hp->rms_eps, 1);
    return DEG_OK;
}

void dg_backward_qk_norm(const deg_model *m, int il, const dg_batch *b, const dg_layer_acts *a,
                         const dg_layer_grad *g)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    size_t T = b->n_tokens, D = (size_t)L->head_dim;
    size_t QD = (size_t)hp->n_head * D, KD = L->kv_row;
    /* In place (the kernel reads a row's dy before writing). */
    if (L->q_norm) {
        memcpy(g->datt, g->dq, sizeof(float) * T * QD);
        dg_rmsnorm_backward_rows(g->dq, g->datt, a->q_pre, L->q_norm, T * hp->n_head, D,
                                 hp->rms_eps, 0);
    }
    if (L->k_norm) {
        memcpy(g->datt, g->dk, sizeof(float) * T * KD);
        dg_rmsnorm_backward_rows(g->dk, g->datt, a->k_pre, L->k_norm, T * (size_t)L->n_head_kv,
                                 D, hp->rms_eps, 0);
    }
}

deg_status dg_backward_attn_core(const deg_model *m, int il, const dg_batch *b,
                                 const dg_layer_acts *a, const dg_layer_grad *g)
{
    const dg_hparams *hp = &m->hp;
    size_t T = b->n_tokens, D = (size_t)hp->head_dim;
    DG_TRY(dg_backward_attn_segs(m, il, b, a, g));
    dg_rope_backward_partial(g->dq, b->rope_cos, b->rope_sin, T, hp->n_head, (int)D,
                             hp->rope_dim);
    dg_rope_backward_partial(g->dk, b->rope_cos, b->rope_sin, T, hp->n_head_kv, (int)D,
                             hp->rope_dim);
    dg_backward_qk_norm(m, il, b, a, g);
    return DEG_OK;
}

deg_status dg_backward_attn_input(const deg_model *m, int il, const dg_batch *b,
                                  const dg_layer_acts *a, float *dx, const dg_layer_grad *g,
                                  const float *dq, size_t ldq, const float *xn)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    size_t T = b->n_tokens, E = (size_t)hp->n_embd;
    size_t KD = (size_t)hp->n_head_kv * (size_t)hp->head_dim;
    DG_TRY(dg_weight_backward_x(&L->wq, (int64_t)T, dq, (int64_t)ldq, g->dxn, (int64_t)E, 0));
    DG_TRY(dg_weight_backward_x(&L->wk, (int64_t)T, g->dk, (int64_t)KD, g->dxn, (int64_t)E, 1));
    DG_TRY(dg_weight_backward_x(&L->wv, (int64_t)T, g->dv, (int64_t)KD, g->dxn, (int64_t)E, 1));
    dg_backward_lora(b, il, DG_LORA_Q, g, dq, ldq, xn, E, g->dxn);
    dg_backward_lora(b, il, DG_LORA_K, g, g->dk, KD, xn, E, g->dxn);
    dg_backward_lora(b, il, DG_LORA_V, g, g->dv, KD, xn, E, g->dxn);
    dg_rmsnorm_backward_rows(dx, g->dxn, a->x_in, L->attn_norm, T, E, hp->rms_eps, 1);
    return DEG_OK;
}

deg_status dg_backward_std_layer(const deg_model *m, int il, dg_batch *b,
                                 const dg_layer_acts *a, float *dx, const dg_layer_grad *g)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    size_t T = b->n_tokens, E = (size_t)hp->n_embd, D = (size_t)hp->head_dim;
    size_t QD = (size_t)hp->n_head * D;
    DG_TRY(dg_backward_mlp(m, il, b, a, dx, g));

    /* Attention: x_mid = x_in + W_o . attn(q, [prefix; k], [prefix; v]) */
    DG_TRY(dg_weight_backward_x(&L->wo, (int64_t)T, dx, (int64_t)E, g->datt, (int64_t)QD,
                                0));
    dg_backward_lora(b, il, DG_LORA_O, g, dx, E, a->att, QD, g->datt);
    DG_TRY(dg_backward_attn_core(m, il, b, a, g));
    if (g->dlora) dg_rmsnorm_rows(g->xn, a->x_in, L->attn_norm, T, E, hp->rms_eps);
    return dg_backward_attn_input(m, il, b, a, dx, g, g->dq, QD, g->xn);
}
