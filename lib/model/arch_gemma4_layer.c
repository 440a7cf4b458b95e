/* Gemma 4 text (arch_gemma4.c): the pass set-up (scaled embeddings, per-layer
 * inputs, the two RoPE tables) and the layer forward, for inference and for
 * training (b->save: the activations its backward, arch_gemma4_bwd.c,
 * reads). Every step is per token row or a GEMM, so a row's numbers do not
 * depend on the batch. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "model/arch.h"
#include "model/arch_gemma4.h"
#include "model/layer.h"
#include "model/lora_internal.h"
#include "model/ops.h"
#include "tensor/blas.h"

#define N_REGIONS 11

/* Per-token scratch of one token's routing and experts: the normed input
 * [E], the experts' input [E], gate|up [2I], one expert's output [E],
 * router scores [n_exp]. */
size_t dg_g4_moe_scratch(const deg_model *m)
{
    const g4_hp *a = m->arch_hp;
    size_t E = (size_t)m->hp.n_embd;
    return a->n_exp ? 3 * E + 2 * (size_t)a->moe_ff + (size_t)a->n_exp : 0;
}

static size_t widths(const deg_model *m, size_t w[N_REGIONS])
{
    const g4_hp *a = m->arch_hp;
    size_t LP = (size_t)m->hp.n_layer * (size_t)a->ple_dim;
    size_t h0 = (size_t)a->rope[0].head_dim / 2, h1 = (size_t)a->rope[1].head_dim / 2;
    size_t f = (size_t)a->max_ff, moe = a->n_exp ? (size_t)m->hp.n_embd : 0;
    size_t v[N_REGIONS] = {LP, LP, h0, h0, h1, h1, f, f, (size_t)a->ple_dim, moe,
                           dg_g4_moe_scratch(m)};
    size_t t = 0;
    for (int i = 0; i < N_REGIONS; i++) t += w[i] = v[i];
    return t;
}

size_t dg_g4_scratch(const deg_model *m)
{
    size_t w[N_REGIONS];
    return widths(m, w);
}

g4_buf dg_g4_regions(const deg_model *m, const dg_batch *b)
{
    size_t w[N_REGIONS], M = b->n_tokens;
    widths(m, w);
    float *p = b->rbuf;
    g4_buf g;
    float **dst[N_REGIONS] = {&g.ple, &g.ple_tok, &g.cos[0], &g.sin[0], &g.cos[1], &g.sin[1],
                              &g.gate, &g.up, &g.pg, &g.moe_out, &g.moe_tmp};
    for (int i = 0; i < N_REGIONS; i++) {
        *dst[i] = p;
        p += M * w[i];
    }
    return g;
}

/* RoPE table of one layer type (g4_rope, arch_gemma4.h): as transformers,
 * inv_freq in f32 (1 / theta^(2j/D), then / factor), angle = pos * inv_freq
 * in f32; pairs j >= n_rot have inv_freq 0 (cos 1, sin 0). */
static void rope_table(float *cos_t, float *sin_t, const int64_t *pos, size_t n,
                       const g4_rope *r)
{
    int half = r->head_dim / 2;
    for (size_t i = 0; i < n; i++) {
        float p = (float)pos[i];
        for (int j = 0; j < half; j++) {
            float inv = 0.0f;
            if (j < r->n_rot) {
                inv = 1.0f / powf(r->theta, (float)(2 * j) / (float)r->head_dim);
                if (r->factor != 1.0f) inv /= r->factor;
            }
            float ang = p * inv;
            cos_t[i * (size_t)half + (size_t)j] = cosf(ang);
            sin_t[i * (size_t)half + (size_t)j] = sinf(ang);
        }
    }
}

void dg_g4_begin_pass(const deg_model *m, dg_batch *b, float *x, const int32_t *ids,
                      const int64_t *pos)
{
    const g4_hp *a = m->arch_hp;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd;
    g4_buf g = dg_g4_regions(m, b);
    for (size_t i = 0; i < M * E; i++) x[i] *= a->embed_scale;
    for (int t = 0; t < 2; t++)
        if (a->rope[t].head_dim) rope_table(g.cos[t], g.sin[t], pos, M, &a->rope[t]);
    if (!a->ple_dim) return;
    /* Gemma4TextModel.get_per_layer_inputs / project_per_layer_inputs:
     * ple = (norm(W_mp x * E^-1/2) + embed_per_layer(id) * sqrt(P)) * 2^-1/2,
     * the norm per [P] slice */
    size_t P = (size_t)a->ple_dim, LP = (size_t)m->hp.n_layer * P;
    dg_weight_matmul(&a->ple_model_proj, (int64_t)M, x, (int64_t)E, g.ple, (int64_t)LP);
    float ps = (float)(1.0 / sqrt((double)E)), ts = (float)sqrt((double)P);
    float hs = (float)(1.0 / sqrt(2.0));
    for (size_t i = 0; i < M * LP; i++) g.ple[i] *= ps;
    dg_rmsnorm_rows(g.ple, g.ple, a->ple_proj_norm, M * (size_t)m->hp.n_layer, P, m->hp.rms_eps);
    for (size_t i = 0; i < M; i++) {
        float *t = g.ple_tok + i * LP, *o = g.ple + i * LP;
        dg_weight_get_row(&a->ple_embd, ids[i], t);
        for (size_t j = 0; j < LP; j++) o[j] = (o[j] + t[j] * ts) * hs;
    }
}

/* x [M, E] += norm(y [M, E]) with the layer's post-norm w (y normed in place). */
static void add_normed(float *x, float *y, const float *w, size_t M, size_t E, float eps)
{
    dg_rmsnorm_rows(y, y, w, M, E, eps);
    for (size_t i = 0; i < M * E; i++) x[i] += y[i];
}

/* x += post_attention_norm(o_proj(attention(input_norm(x)))). Training
 * (b->save): q/k/v before their norms into q_pre / k_pre / v_pre (V = K:
 * v_pre unused, k_pre is it), after norm and RoPE into q / k / v, the
 * softmax statistics and the attention output att. */
static void g4_attention(const deg_model *m, int il, dg_batch *b, float *x, const g4_buf *gb)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    const g4_layer *g = L->arch_data;
    const g4_hp *a = m->arch_hp;
    dg_layer_acts *sv = b->save;
    int full = a->is_full[il];
    size_t M = b->n_tokens, E = (size_t)hp->n_embd, D = (size_t)L->head_dim;
    size_t QD = (size_t)hp->n_head * D, KD = L->kv_row;
    float *q = sv ? sv->q : b->q, *k = sv ? sv->k : b->k, *v = sv ? sv->v : b->v;
    float *q_pre = sv ? sv->q_pre : q, *k_pre = sv ? sv->k_pre : k;
    float *v_pre = sv ? (g->v_is_k ? sv->k_pre : sv->v_pre) : v;
    dg_rmsnorm_rows(b->xn, x, L->attn_norm, M, E, hp->rms_eps);
    if (L->kv_shared) {
        dg_weight_matmul(&L->wq, (int64_t)M, b->xn, (int64_t)E, q_pre, (int64_t)QD);
    } else if (g->v_is_k) { /* V = the raw K projection (attention_k_eq_v) */
        const dg_weight *ws[2] = {&L->wq, &L->wk};
        float *ys[2] = {q_pre, v_pre};
        const int64_t ld[2] = {(int64_t)QD, (int64_t)KD};
        dg_weight_matmul_multi(ws, 2, (int64_t)M, b->xn, (int64_t)E, ys, ld);
        dg_lora_add_segs(b, il, DG_LORA_K, b->xn, E, v_pre, KD);
        if (k_pre != v_pre) memcpy(k_pre, v_pre, sizeof(float) * M * KD);
    } else {
        const dg_weight *ws[3] = {&L->wq, &L->wk, &L->wv};
        float *ys[3] = {q_pre, k_pre, v_pre};
        const int64_t ld[3] = {(int64_t)QD, (int64_t)KD, (int64_t)KD};
        dg_weight_matmul_multi(ws, 3, (int64_t)M, b->xn, (int64_t)E, ys, ld);
        dg_lora_add_segs(b, il, DG_LORA_K, b->xn, E, k_pre, KD);
        dg_lora_add_segs(b, il, DG_LORA_V, b->xn, E, v_pre, KD);
    }
    dg_lora_add_segs(b, il, DG_LORA_Q, b->xn, E, q_pre, QD);
    dg_rmsnorm_rows(q, q_pre, L->q_norm, M * (size_t)hp->n_head, D, hp->rms_eps);
    dg_rope_apply(q, gb->cos[full], gb->sin[full], M, hp->n_head, (int)D);
    if (!L->kv_shared) {
        size_t nkv = (size_t)L->n_head_kv;
        dg_rmsnorm_rows(k, k_pre, L->k_norm, M * nkv, D, hp->rms_eps);
        dg_rope_apply(k, gb->cos[full], gb->sin[full], M, (int)nkv, (int)D);
        dg_rmsnorm_rows(v, v_pre, g->v_norm_ones, M * nkv, D, hp->rms_eps);
        dg_kv_append_segs(b, il, k, v, KD);
    }
    dg_attention_segs(m, il, b, q, sv ? sv->stats : NULL);
    if (sv) memcpy(sv->att, b->att, sizeof(float) * M * QD);
    dg_weight_matmul(&L->wo, (int64_t)M, b->att, (int64_t)QD, b->tmp, (int64_t)E);
    dg_lora_add_segs(b, il, DG_LORA_O, b->att, QD, b->tmp, E);
    add_normed(x, b->tmp, g->post_attn_norm, M, E, hp->rms_eps);
}

/* The routed experts of one token (Gemma4TextRouter, Gemma4TextExperts):
 * out [E] = sum over its top_k experts e, in ascending e (transformers adds
 * them in that order) of w_e * down_e(gelu(gate_e(h2)) * up_e(h2)),
 * h2 = pre_feedforward_layernorm_2(x); w = softmax(router(norm(x) * scale
 * / sqrt(E))) over the experts, the top_k renormalised to sum 1, times
 * per_expert_scale. t: moe_scratch floats. */
void dg_g4_moe_token(const deg_model *m, const g4_layer *g, const float *x, float *out, float *t)
{
    const g4_hp *a = m->arch_hp;
    size_t E = (size_t)m->hp.n_embd, I = (size_t)a->moe_ff, X = (size_t)a->n_exp;
    float *r = t, *h2 = r + E, *gu = h2 + E, *o = gu + 2 * I, *p = o + E;
    float tsum = dg_g4_route(m, g, x, r, p);
    dg_rmsnorm(h2, x, g->pre_ffn_norm_2, 1, E, m->hp.rms_eps);
    memset(out, 0, sizeof(float) * E);
    for (size_t e = 0; e < X; e++) {
        if (p[e] >= 0.0f) continue;
        float w = (-1.0f - p[e]) / tsum * g->expert_scale[e];
        dg_g4_expert(m, g, e, h2, gu, gu, o);
        for (size_t j = 0; j < E; j++) out[j] += o[j] * w;
    }
}

float dg_g4_route(const deg_model *m, const g4_layer *g, const float *x, float *r, float *p)
{
    const g4_hp *a = m->arch_hp;
    size_t E = (size_t)m->hp.n_embd, X = (size_t)a->n_exp;
    float rs = (float)(1.0 / sqrt((double)E));
    dg_rmsnorm(r, x, g->ones, 1, E, m->hp.rms_eps);
    for (size_t j = 0; j < E; j++) r[j] = r[j] * g->router_scale[j] * rs;
    dg_weight_matmul(&g->router, 1, r, (int64_t)E, p, (int64_t)X);
    float mx = p[0], sum = 0.0f;
    for (size_t e = 1; e < X; e++) mx = p[e] > mx ? p[e] : mx;
    for (size_t e = 0; e < X; e++) sum += p[e] = expf(p[e] - mx);
    for (size_t e = 0; e < X; e++) p[e] /= sum;
    float tsum = 0.0f;
    for (int k = 0; k < a->top_k; k++) {
        size_t best = X;
        for (size_t e = 0; e < X; e++)
            if (p[e] >= 0.0f && (best == X || p[e] > p[best])) best = e;
        tsum += p[best];
        p[best] = -1.0f - p[best];
    }
    return tsum;
}

void dg_g4_expert(const deg_model *m, const g4_layer *g, size_t e, const float *h2, float *gu,
                  float *h, float *o)
{
    const g4_hp *a = m->arch_hp;
    size_t E = (size_t)m->hp.n_embd, I = (size_t)a->moe_ff;
    const float *gw = g->gate_up + e * 2 * I * E, *dw = g->down + e * E * I;
    for (size_t j = 0; j < 2 * I; j++) gu[j] = dg_dot(gw + j * E, h2, E);
    for (size_t j = 0; j < I; j++) h[j] = dg_gelu_tanh(gu[j]) * gu[I + j];
    for (size_t j = 0; j < E; j++) o[j] = dg_dot(dw + j * I, h, I);
}

/* x += post_feedforward_norm(down(gelu(gate(h)) * up(h))), h = pre_feedforward_norm(x);
 * with MoE: x += post_feedforward_norm(post_1(mlp) + post_2(experts(x))). */
static void g4_mlp(const deg_model *m, int il, dg_batch *b, float *x, const g4_buf *gb)
{
    const dg_layer *L = &m->layers[il];
    const g4_layer *g = L->arch_data;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd;
    size_t F = (size_t)((const g4_hp *)m->arch_hp)->n_ff[il];
    dg_rmsnorm_rows(b->xn, x, L->ffn_norm, M, E, m->hp.rms_eps);
    const dg_weight *ws[2] = {&L->w_gate, &L->w_up};
    float *ys[2] = {gb->gate, gb->up};
    const int64_t ld[2] = {(int64_t)F, (int64_t)F};
    dg_weight_matmul_multi(ws, 2, (int64_t)M, b->xn, (int64_t)E, ys, ld);
    dg_lora_add_segs(b, il, DG_LORA_GATE, b->xn, E, gb->gate, F);
    dg_lora_add_segs(b, il, DG_LORA_UP, b->xn, E, gb->up, F);
    if (b->save) {
        memcpy(b->save->gate, gb->gate, sizeof(float) * M * F);
        memcpy(b->save->up, gb->up, sizeof(float) * M * F);
    }
#pragma omp parallel for schedule(static) if (M > 4) num_threads(dg_num_threads())
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < F; j++)
            gb->gate[i * F + j] = dg_gelu_tanh(gb->gate[i * F + j]) * gb->up[i * F + j];
    dg_weight_matmul(&L->w_down, (int64_t)M, gb->gate, (int64_t)F, b->tmp, (int64_t)E);
    dg_lora_add_segs(b, il, DG_LORA_DOWN, gb->gate, F, b->tmp, E);
    if (((const g4_hp *)m->arch_hp)->n_exp) {
        size_t ms = dg_g4_moe_scratch(m);
#pragma omp parallel for schedule(static) if (M > 1) num_threads(dg_num_threads())
        for (size_t i = 0; i < M; i++)
            dg_g4_moe_token(m, g, x + i * E, gb->moe_out + i * E, gb->moe_tmp + i * ms);
        dg_rmsnorm_rows(b->tmp, b->tmp, g->post_ffn_norm_1, M, E, m->hp.rms_eps);
        dg_rmsnorm_rows(gb->moe_out, gb->moe_out, g->post_ffn_norm_2, M, E, m->hp.rms_eps);
        for (size_t i = 0; i < M * E; i++) b->tmp[i] += gb->moe_out[i];
    }
    add_normed(x, b->tmp, g->post_ffn_norm, M, E, m->hp.rms_eps);
}

/* x += post_per_layer_input_norm(W_proj(gelu(W_gate x) * ple[:, il])). */
static void g4_ple(const deg_model *m, int il, dg_batch *b, float *x, const g4_buf *gb)
{
    const g4_hp *a = m->arch_hp;
    const g4_layer *g = m->layers[il].arch_data;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd, P = (size_t)a->ple_dim;
    size_t LP = (size_t)m->hp.n_layer * P;
    dg_weight_matmul(&g->ple_gate, (int64_t)M, x, (int64_t)E, gb->pg, (int64_t)P);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < P; j++)
            gb->pg[i * P + j] = dg_gelu_tanh(gb->pg[i * P + j]) * gb->ple[i * LP + (size_t)il * P + j];
    dg_weight_matmul(&g->ple_proj, (int64_t)M, gb->pg, (int64_t)P, b->tmp, (int64_t)E);
    add_normed(x, b->tmp, g->ple_post_norm, M, E, m->hp.rms_eps);
}

void dg_g4_forward_layer(const deg_model *m, int il, dg_batch *b, float *x)
{
    const g4_layer *g = m->layers[il].arch_data;
    g4_buf gb = dg_g4_regions(m, b);
    dg_layer_acts *sv = b->save;
    size_t n = b->n_tokens * (size_t)m->hp.n_embd;
    if (sv) memcpy(sv->x_in, x, sizeof(float) * n);
    g4_attention(m, il, b, x, &gb);
    if (sv) memcpy(sv->x_mid, x, sizeof(float) * n);
    g4_mlp(m, il, b, x, &gb);
    if (sv && sv->x_ffn) memcpy(sv->x_ffn, x, sizeof(float) * n);
    if (((const g4_hp *)m->arch_hp)->ple_dim) g4_ple(m, il, b, x, &gb);
    if (g->layer_scalar != 1.0f)
        for (size_t i = 0; i < n; i++) x[i] *= g->layer_scalar;
}
