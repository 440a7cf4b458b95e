/* Backward of Gemma 4's layer (forward: lib/model/arch_gemma4_layer.c, whose
 * saved activations it reads; see layer_bwd.h): layer_scalar, the per-layer
 * input block, the GeGLU MLP and the routed experts (router included) with
 * their post-norms, then the attention: post-norm, o_proj, the windowed /
 * scale-1 attention of dg_backward_attn_segs, RoPE, the q/k norms and the
 * scale-free v norm, V = K on full layers, K/V sharing; LoRA adapters on
 * q/k/v/o and the MLP's gate/up/down (their gradients into g->dlora). The pre-norm values a
 * post-norm's backward needs (o_proj, down_proj, the experts', the per-layer
 * projection's outputs) are recomputed from the saved inputs with the
 * forward's own calls. Frozen weights: gradients flow into activations, the
 * prefix K/V rows, the adapters and nowhere else (the per-layer inputs depend on the token
 * embeddings only, so they get none). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "model/ops_bwd.h"
#include "model/layer_bwd.h"
#include "model/arch_gemma4.h"
#include "model/lora_internal.h"
#include "model/ops.h"
#include "tensor/blas.h"

/* d gelu_tanh(x) / dx (dg_gelu_tanh, arch_gemma4.h):
 * 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), t = tanh(k (x + c x^3)) */
static float gelu_grad(float x)
{
    const float k = 0.7978845608028654f, c = 0.044715f;
    float t = tanhf(k * (x + c * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * c * x * x);
}

/* The backward's scratch: y, dy [M, E] (a recomputed pre-norm output and its
 * gradient), yf [M, E], h [M, F], pg, dpg [M, P], mo, dmo [M, E] (experts). */
typedef struct g4_bw {
    float *y, *dy, *yf, *h, *pg, *dpg, *mo, *dmo;
} g4_bw;

/* x_out = x_ffn + post_per_layer_input_norm(W_proj(gelu(W_gate x_ffn) *
 * ple[il])): dx (at x_out) += the gate path's share, in place. */
static deg_status ple_bwd(const deg_model *m, int il, const dg_batch *b, const dg_layer_acts *a,
                          float *dx, const g4_bw *w)
{
    const g4_hp *ah = m->arch_hp;
    const g4_layer *g = m->layers[il].arch_data;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd, P = (size_t)ah->ple_dim;
    size_t LP = (size_t)m->hp.n_layer * P;
    const float *ple = dg_g4_regions(m, b).ple + (size_t)il * P;
    dg_weight_matmul(&g->ple_gate, (int64_t)M, a->x_ffn, (int64_t)E, w->dpg, (int64_t)P);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < P; j++)
            w->pg[i * P + j] = dg_gelu_tanh(w->dpg[i * P + j]) * ple[i * LP + j];
    dg_weight_matmul(&g->ple_proj, (int64_t)M, w->pg, (int64_t)P, w->y, (int64_t)E);
    dg_rmsnorm_backward_rows(w->dy, dx, w->y, g->ple_post_norm, M, E, m->hp.rms_eps, 0);
    /* pg now takes the pre-activations' gradient: dpg held them */
    for (size_t i = 0; i < M * P; i++) w->pg[i] = w->dpg[i];
    DG_TRY(dg_weight_backward_x(&g->ple_proj, (int64_t)M, w->dy, (int64_t)E, w->dpg, (int64_t)P,
                                0));
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < P; j++)
            w->dpg[i * P + j] *= ple[i * LP + j] * gelu_grad(w->pg[i * P + j]);
    return dg_weight_backward_x(&g->ple_gate, (int64_t)M, w->dpg, (int64_t)P, dx, (int64_t)E, 1);
}

/* Per-token scratch of moe_token_bwd: r, h2, o, dh2, dr, dn [E]; gu, dgu
 * [2 moe_ff]; h, dh [moe_ff]; p, dw, dp [n_exp]. */
static size_t moe_bwd_floats(const deg_model *m)
{
    const g4_hp *a = m->arch_hp;
    return 6 * (size_t)m->hp.n_embd + 6 * (size_t)a->moe_ff + 3 * (size_t)a->n_exp;
}

/* The routed experts of one token (dg_g4_moe_token), backward from dout [E]
 * (at the experts' sum) into dx [E] (+=) through the experts' inputs
 * (pre_feedforward_layernorm_2) and the router: with S = the top-k
 * probabilities' sum and w_e = p_e / S * s_e,
 *   dw_e = dout . o_e;  dp_k = dw_k s_k / S - sum_e dw_e s_e p_e / S^2 (top-k
 *   only; the choice itself is piecewise constant); softmax, router.proj,
 *   the scale and the scale-free norm back to x. */
static void moe_token_bwd(const deg_model *m, const g4_layer *g, const float *x,
                          const float *dout, float *dx, float *t)
{
    const g4_hp *a = m->arch_hp;
    size_t E = (size_t)m->hp.n_embd, I = (size_t)a->moe_ff, X = (size_t)a->n_exp;
    float *r = t, *h2 = r + E, *o = h2 + E, *dh2 = o + E, *dr = dh2 + E, *dn = dr + E;
    float *gu = dn + E, *dgu = gu + 2 * I, *h = dgu + 2 * I, *dh = h + I;
    float *p = dh + I, *dw = p + X, *dp = dw + X;
    float eps = m->hp.rms_eps, rs = (float)(1.0 / sqrt((double)E));
    float S = dg_g4_route(m, g, x, r, p);
    dg_rmsnorm(h2, x, g->pre_ffn_norm_2, 1, E, eps);
    memset(dh2, 0, sizeof(float) * E);
    double A = 0.0;
    for (size_t e = 0; e < X; e++) {
        dw[e] = 0.0f;
        if (p[e] >= 0.0f) continue;
        float pe = -1.0f - p[e], we = pe / S * g->expert_scale[e];
        dg_g4_expert(m, g, e, h2, gu, h, o);
        double d = 0.0;
        for (size_t j = 0; j < E; j++) d += (double)dout[j] * o[j];
        dw[e] = (float)d;
        A += d * g->expert_scale[e] * pe;
        /* dh = down_e^T (w_e dout); through gelu(gate) * up; dh2 += gate_up_e^T dgu */
        const float *down = g->down + e * E * I, *gw = g->gate_up + e * 2 * I * E;
        memset(dh, 0, sizeof(float) * I);
        for (size_t j = 0; j < E; j++) {
            float dj = we * dout[j];
            for (size_t c = 0; c < I; c++) dh[c] += down[j * I + c] * dj;
        }
        for (size_t c = 0; c < I; c++) {
            dgu[c] = dh[c] * gu[I + c] * gelu_grad(gu[c]);
            dgu[I + c] = dh[c] * dg_gelu_tanh(gu[c]);
        }
        for (size_t j = 0; j < 2 * I; j++)
            for (size_t c = 0; c < E; c++) dh2[c] += gw[j * E + c] * dgu[j];
    }
    A /= (double)S * (double)S;
    double pdp = 0.0;
    for (size_t e = 0; e < X; e++) {
        float pe = p[e] < 0.0f ? -1.0f - p[e] : p[e];
        dp[e] = p[e] < 0.0f ? (float)(dw[e] * g->expert_scale[e] / S - A) : 0.0f;
        pdp += (double)pe * dp[e];
        p[e] = pe;
    }
    for (size_t e = 0; e < X; e++) dp[e] = p[e] * (dp[e] - (float)pdp); /* softmax */
    dg_weight_backward_x(&g->router, 1, dp, (int64_t)X, dr, (int64_t)E, 0);
    for (size_t j = 0; j < E; j++) dn[j] = dr[j] * g->router_scale[j] * rs;
    dg_rmsnorm_backward(dx, dn, x, g->ones, 1, E, eps, 1);
    dg_rmsnorm_backward(dx, dh2, x, g->pre_ffn_norm_2, 1, E, eps, 1);
}

/* The experts' share of the feed-forward (MoE layers): y_ffn = post_1(yd) +
 * post_2(mo); dyd [M, E] (into w->dy) from dyf = d y_ffn, dx += the experts'
 * path. Needs w->y = yd (down_proj's output). */
static deg_status moe_bwd(const deg_model *m, int il, const dg_batch *b, const dg_layer_acts *a,
                          float *dx, const float *dyf, const g4_bw *w)
{
    const g4_layer *g = m->layers[il].arch_data;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd, ms = dg_g4_moe_scratch(m);
    size_t mb = moe_bwd_floats(m);
    int nt = dg_num_threads() > 0 ? dg_num_threads() : 1;
    float *t = malloc(sizeof(float) * (size_t)nt * (ms > mb ? ms : mb));
    if (!t) return dg_fail(DEG_ERR_NOMEM, "gemma4 layer backward: out of memory (experts)");
    dg_rmsnorm_backward_rows(w->dmo, dyf, w->mo, g->post_ffn_norm_2, M, E, m->hp.rms_eps, 0);
    dg_rmsnorm_backward_rows(w->dy, dyf, w->y, g->post_ffn_norm_1, M, E, m->hp.rms_eps, 0);
#pragma omp parallel for schedule(static) if (M > 1) num_threads(nt)
    for (size_t i = 0; i < M; i++)
        moe_token_bwd(m, g, a->x_mid + i * E, w->dmo + i * E, dx + i * E,
                      t + (size_t)omp_get_thread_num() * (ms > mb ? ms : mb));
    free(t);
    return DEG_OK;
}

/* x_ffn = x_mid + post_feedforward_norm(y_ffn), y_ffn = down(gelu(gate) *
 * up) (MoE: post_1 of it + post_2 of the experts' sum): dx (at x_ffn)
 * becomes dL/d x_mid. */
static deg_status mlp_bwd(const deg_model *m, int il, const dg_batch *b, const dg_layer_acts *a,
                          float *dx, const dg_layer_grad *g, const g4_bw *w)
{
    const g4_hp *ah = m->arch_hp;
    const dg_layer *L = &m->layers[il];
    const g4_layer *gl = L->arch_data;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd, F = (size_t)ah->n_ff[il];
    float eps = m->hp.rms_eps;
    for (size_t i = 0; i < M * F; i++) w->h[i] = dg_gelu_tanh(a->gate[i]) * a->up[i];
    dg_weight_matmul(&L->w_down, (int64_t)M, w->h, (int64_t)F, w->y, (int64_t)E);
    dg_lora_add_segs(b, il, DG_LORA_DOWN, w->h, F, w->y, E);
    if (ah->n_exp) {
        size_t ms = dg_g4_moe_scratch(m);
        float *t = malloc(sizeof(float) * ms);
        if (!t) return dg_fail(DEG_ERR_NOMEM, "gemma4 layer backward: out of memory (experts)");
        for (size_t i = 0; i < M; i++) dg_g4_moe_token(m, gl, a->x_mid + i * E, w->mo + i * E, t);
        free(t);
        dg_rmsnorm_rows(w->yf, w->y, gl->post_ffn_norm_1, M, E, eps);
        dg_rmsnorm_rows(w->dmo, w->mo, gl->post_ffn_norm_2, M, E, eps);
        for (size_t i = 0; i < M * E; i++) w->yf[i] += w->dmo[i];
        float *dyf = g->dxn; /* free until the MLP's input gradient */
        dg_rmsnorm_backward_rows(dyf, dx, w->yf, gl->post_ffn_norm, M, E, eps, 0);
        DG_TRY(moe_bwd(m, il, b, a, dx, dyf, w));
    } else {
        dg_rmsnorm_backward_rows(w->dy, dx, w->y, gl->post_ffn_norm, M, E, eps, 0);
    }
    DG_TRY(dg_weight_backward_x(&L->w_down, (int64_t)M, w->dy, (int64_t)E, g->dh, (int64_t)F, 0));
    dg_backward_lora(b, il, DG_LORA_DOWN, g, w->dy, E, w->h, F, g->dh);
    for (size_t i = 0; i < M * F; i++) {
        g->dgate[i] = g->dh[i] * a->up[i] * gelu_grad(a->gate[i]);
        g->dup[i] = g->dh[i] * dg_gelu_tanh(a->gate[i]);
    }
    DG_TRY(dg_weight_backward_x(&L->w_gate, (int64_t)M, g->dgate, (int64_t)F, g->dxn, (int64_t)E,
                                0));
    DG_TRY(dg_weight_backward_x(&L->w_up, (int64_t)M, g->dup, (int64_t)F, g->dxn, (int64_t)E, 1));
    if (g->dlora) { /* the adapters' input: the pre-feedforward norm's output */
        dg_rmsnorm_rows(g->xn, a->x_mid, L->ffn_norm, M, E, eps);
        dg_backward_lora(b, il, DG_LORA_GATE, g, g->dgate, F, g->xn, E, g->dxn);
        dg_backward_lora(b, il, DG_LORA_UP, g, g->dup, F, g->xn, E, g->dxn);
    }
    dg_rmsnorm_backward_rows(dx, g->dxn, a->x_mid, L->ffn_norm, M, E, eps, 1);
    return DEG_OK;
}

/* dst[n] += src[n] */
static void add_into(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

/* x_mid = x_in + post_attention_norm(o_proj(att)): dx (at x_mid) becomes
 * dL/d x_in. */
static deg_status attn_bwd(const deg_model *m, int il, const dg_batch *b, const dg_layer_acts *a,
                           float *dx, const dg_layer_grad *g, const g4_bw *w)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    const g4_layer *gl = L->arch_data;
    g4_buf gb = dg_g4_regions(m, b);
    int full = ((const g4_hp *)m->arch_hp)->is_full[il], D = L->head_dim, H = hp->n_head;
    int nkv = L->n_head_kv;
    size_t M = b->n_tokens, E = (size_t)hp->n_embd, QD = (size_t)H * (size_t)D, KD = L->kv_row;
    float eps = hp->rms_eps;
    dg_weight_matmul(&L->wo, (int64_t)M, a->att, (int64_t)QD, w->y, (int64_t)E);
    dg_lora_add_segs(b, il, DG_LORA_O, a->att, QD, w->y, E);
    dg_rmsnorm_backward_rows(w->dy, dx, w->y, gl->post_attn_norm, M, E, eps, 0);
    DG_TRY(dg_weight_backward_x(&L->wo, (int64_t)M, w->dy, (int64_t)E, g->datt, (int64_t)QD, 0));
    dg_backward_lora(b, il, DG_LORA_O, g, w->dy, E, a->att, QD, g->datt);
    DG_TRY(dg_backward_attn_segs(m, il, b, a, g));
    dg_rope_backward(g->dq, gb.cos[full], gb.sin[full], M, H, D);
    memcpy(g->datt, g->dq, sizeof(float) * M * QD);
    dg_rmsnorm_backward_rows(g->dq, g->datt, a->q_pre, L->q_norm, M * (size_t)H, (size_t)D, eps,
                             0);
    DG_TRY(dg_weight_backward_x(&L->wq, (int64_t)M, g->dq, (int64_t)QD, g->dxn, (int64_t)E, 0));
    if (g->dlora) { /* the q/k/v adapters' input: the input norm's output */
        dg_rmsnorm_rows(g->xn, a->x_in, L->attn_norm, M, E, eps);
        dg_backward_lora(b, il, DG_LORA_Q, g, g->dq, QD, g->xn, E, g->dxn);
    }
    if (L->kv_shared) { /* the rows are layer kv_src's: its backward takes this share */
        add_into(g->dk_share[L->kv_src], g->dk, M * KD);
        add_into(g->dv_share[L->kv_src], g->dv, M * KD);
    } else {
        if (g->dk_share && g->dk_share[il]) {
            add_into(g->dk, g->dk_share[il], M * KD);
            add_into(g->dv, g->dv_share[il], M * KD);
        }
        dg_rope_backward(g->dk, gb.cos[full], gb.sin[full], M, nkv, D);
        memcpy(g->datt, g->dk, sizeof(float) * M * KD);
        dg_rmsnorm_backward_rows(g->dk, g->datt, a->k_pre, L->k_norm, M * (size_t)nkv,
                                 (size_t)D, eps, 0);
        memcpy(g->datt, g->dv, sizeof(float) * M * KD);
        dg_rmsnorm_backward_rows(g->dv, g->datt, gl->v_is_k ? a->k_pre : a->v_pre,
                                 gl->v_norm_ones, M * (size_t)nkv, (size_t)D, eps, 0);
        if (gl->v_is_k) add_into(g->dk, g->dv, M * KD); /* V = the raw K projection */
        DG_TRY(dg_weight_backward_x(&L->wk, (int64_t)M, g->dk, (int64_t)KD, g->dxn, (int64_t)E,
                                    1));
        dg_backward_lora(b, il, DG_LORA_K, g, g->dk, KD, g->xn, E, g->dxn);
        if (!gl->v_is_k) {
            DG_TRY(dg_weight_backward_x(&L->wv, (int64_t)M, g->dv, (int64_t)KD, g->dxn,
                                        (int64_t)E, 1));
            dg_backward_lora(b, il, DG_LORA_V, g, g->dv, KD, g->xn, E, g->dxn);
        }
    }
    dg_rmsnorm_backward_rows(dx, g->dxn, a->x_in, L->attn_norm, M, E, eps, 1);
    return DEG_OK;
}

deg_status dg_backward_gemma4_layer(const deg_model *m, int il, dg_batch *b,
                                    const dg_layer_acts *a, float *dx, const dg_layer_grad *g)
{
    const g4_hp *ah = m->arch_hp;
    const g4_layer *gl = m->layers[il].arch_data;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd, F = (size_t)ah->max_ff;
    size_t P = (size_t)ah->ple_dim, ME = M * E;
    float *buf = malloc(sizeof(float) * (5 * ME + M * F + 2 * M * P + 1));
    if (!buf)
        return dg_fail(DEG_ERR_NOMEM, "gemma4 layer backward: out of memory (%zu tokens)", M);
    g4_bw w = {.y = buf, .dy = buf + ME, .yf = buf + 2 * ME, .mo = buf + 3 * ME,
               .dmo = buf + 4 * ME, .h = buf + 5 * ME};
    w.pg = w.h + M * F;
    w.dpg = w.pg + M * P;
    for (size_t i = 0; i < ME; i++) dx[i] *= gl->layer_scalar; /* x_out = s * (...) */
    deg_status st = P ? ple_bwd(m, il, b, a, dx, &w) : DEG_OK;
    if (st == DEG_OK) st = mlp_bwd(m, il, b, a, dx, g, &w);
    if (st == DEG_OK) st = attn_bwd(m, il, b, a, dx, g, &w);
    free(buf);
    return st;
}
