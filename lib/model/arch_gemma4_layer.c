/* Gemma 4 text (arch_gemma4.c): the pass set-up (scaled embeddings, per-layer
 * inputs, the two RoPE tables) and the layer forward, inference only (no
 * backward: training and LoRA refuse the architecture). Every step is per
 * token row or a GEMM, so a row's numbers do not depend on the batch. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "model/arch.h"
#include "model/arch_gemma4.h"
#include "model/layer.h"
#include "model/ops.h"
#include "tensor/blas.h"

/* The pass scratch (dg_batch.rbuf), regions of M rows each. */
typedef struct g4_buf {
    float *ple;          /* [M, n_layer * ple_dim] per-layer inputs */
    float *ple_tok;      /* [M, n_layer * ple_dim] their token-identity part */
    float *cos[2], *sin[2]; /* [M, head_dim / 2] of the sliding [0] / full [1] layers */
    float *gate, *up;    /* [M, max_ff] */
    float *pg;           /* [M, ple_dim] */
    float *moe_out;      /* [M, n_embd] the experts' sum (MoE) */
    float *moe_tmp;      /* [M, moe_scratch] per-token router / expert temporaries */
} g4_buf;

#define N_REGIONS 11

/* Per-token scratch of one token's routing and experts: the normed input
 * [E], the experts' input [E], gate|up [2I], one expert's output [E],
 * router scores [n_exp]. */
static size_t moe_scratch(const deg_model *m)
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
                           moe_scratch(m)};
    size_t t = 0;
    for (int i = 0; i < N_REGIONS; i++) t += w[i] = v[i];
    return t;
}

size_t dg_g4_scratch(const deg_model *m)
{
    size_t w[N_REGIONS];
    return widths(m, w);
}

static g4_buf regions(const deg_model *m, const dg_batch *b)
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

/* gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
static inline float gelu_tanh(float x)
{
    const float k = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

void dg_g4_begin_pass(const deg_model *m, dg_batch *b, float *x, const int32_t *ids,
                      const int64_t *pos)
{
    const g4_hp *a = m->arch_hp;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd;
    g4_buf g = regions(m, b);
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

/* x += post_attention_norm(o_proj(attention(input_norm(x)))). */
static void g4_attention(const deg_model *m, int il, dg_batch *b, float *x, const g4_buf *gb)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    const g4_layer *g = L->arch_data;
    const g4_hp *a = m->arch_hp;
    int full = a->is_full[il];
    size_t M = b->n_tokens, E = (size_t)hp->n_embd, D = (size_t)L->head_dim;
    size_t QD = (size_t)hp->n_head * D, KD = L->kv_row;
    dg_rmsnorm_rows(b->xn, x, L->attn_norm, M, E, hp->rms_eps);
    if (L->kv_shared) {
        dg_weight_matmul(&L->wq, (int64_t)M, b->xn, (int64_t)E, b->q, (int64_t)QD);
    } else if (g->v_is_k) { /* V = the raw K projection (attention_k_eq_v) */
        const dg_weight *ws[2] = {&L->wq, &L->wk};
        float *ys[2] = {b->q, b->v};
        const int64_t ld[2] = {(int64_t)QD, (int64_t)KD};
        dg_weight_matmul_multi(ws, 2, (int64_t)M, b->xn, (int64_t)E, ys, ld);
        memcpy(b->k, b->v, sizeof(float) * M * KD);
    } else {
        const dg_weight *ws[3] = {&L->wq, &L->wk, &L->wv};
        float *ys[3] = {b->q, b->k, b->v};
        const int64_t ld[3] = {(int64_t)QD, (int64_t)KD, (int64_t)KD};
        dg_weight_matmul_multi(ws, 3, (int64_t)M, b->xn, (int64_t)E, ys, ld);
    }
    dg_rmsnorm_rows(b->q, b->q, L->q_norm, M * (size_t)hp->n_head, D, hp->rms_eps);
    dg_rope_apply(b->q, gb->cos[full], gb->sin[full], M, hp->n_head, (int)D);
    if (!L->kv_shared) {
        size_t nkv = (size_t)L->n_head_kv;
        dg_rmsnorm_rows(b->k, b->k, L->k_norm, M * nkv, D, hp->rms_eps);
        dg_rope_apply(b->k, gb->cos[full], gb->sin[full], M, (int)nkv, (int)D);
        dg_rmsnorm_rows(b->v, b->v, g->v_norm_ones, M * nkv, D, hp->rms_eps);
        dg_kv_append_segs(b, il, b->k, b->v, KD);
    }
    dg_attention_segs(m, il, b, b->q, NULL);
    dg_weight_matmul(&L->wo, (int64_t)M, b->att, (int64_t)QD, b->tmp, (int64_t)E);
    add_normed(x, b->tmp, g->post_attn_norm, M, E, hp->rms_eps);
}

/* The routed experts of one token (Gemma4TextRouter, Gemma4TextExperts):
 * out [E] = sum over its top_k experts e, in ascending e (transformers adds
 * them in that order) of w_e * down_e(gelu(gate_e(h2)) * up_e(h2)),
 * h2 = pre_feedforward_layernorm_2(x); w = softmax(router(norm(x) * scale
 * / sqrt(E))) over the experts, the top_k renormalised to sum 1, times
 * per_expert_scale. t: moe_scratch floats. */
static void moe_token(const deg_model *m, const g4_layer *g, const float *x, float *out, float *t)
{
    const g4_hp *a = m->arch_hp;
    size_t E = (size_t)m->hp.n_embd, I = (size_t)a->moe_ff, X = (size_t)a->n_exp;
    float *r = t, *h2 = r + E, *gu = h2 + E, *o = gu + 2 * I, *p = o + E;
    float eps = m->hp.rms_eps, rs = (float)(1.0 / sqrt((double)E));
    dg_rmsnorm(r, x, g->ones, 1, E, eps);
    for (size_t j = 0; j < E; j++) r[j] = r[j] * g->router_scale[j] * rs;
    dg_weight_matmul(&g->router, 1, r, (int64_t)E, p, (int64_t)X);
    float mx = p[0], sum = 0.0f;
    for (size_t e = 1; e < X; e++) mx = p[e] > mx ? p[e] : mx;
    for (size_t e = 0; e < X; e++) sum += p[e] = expf(p[e] - mx);
    for (size_t e = 0; e < X; e++) p[e] /= sum;
    /* top_k (ties: the lower index), marked by negating into -1 - p */
    float tsum = 0.0f;
    for (int k = 0; k < a->top_k; k++) {
        size_t best = X;
        for (size_t e = 0; e < X; e++)
            if (p[e] >= 0.0f && (best == X || p[e] > p[best])) best = e;
        tsum += p[best];
        p[best] = -1.0f - p[best];
    }
    dg_rmsnorm(h2, x, g->pre_ffn_norm_2, 1, E, eps);
    memset(out, 0, sizeof(float) * E);
    for (size_t e = 0; e < X; e++) {
        if (p[e] >= 0.0f) continue;
        float w = (-1.0f - p[e]) / tsum * g->expert_scale[e];
        const float *gw = g->gate_up + e * 2 * I * E, *dw = g->down + e * E * I;
        for (size_t j = 0; j < 2 * I; j++) gu[j] = dg_dot(gw + j * E, h2, E);
        for (size_t j = 0; j < I; j++) gu[j] = gelu_tanh(gu[j]) * gu[I + j];
        for (size_t j = 0; j < E; j++) o[j] = dg_dot(dw + j * I, gu, I);
        for (size_t j = 0; j < E; j++) out[j] += o[j] * w;
    }
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
#pragma omp parallel for schedule(static) if (M > 4) num_threads(dg_num_threads())
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < F; j++)
            gb->gate[i * F + j] = gelu_tanh(gb->gate[i * F + j]) * gb->up[i * F + j];
    dg_weight_matmul(&L->w_down, (int64_t)M, gb->gate, (int64_t)F, b->tmp, (int64_t)E);
    if (((const g4_hp *)m->arch_hp)->n_exp) {
        size_t ms = moe_scratch(m);
#pragma omp parallel for schedule(static) if (M > 1) num_threads(dg_num_threads())
        for (size_t i = 0; i < M; i++)
            moe_token(m, g, x + i * E, gb->moe_out + i * E, gb->moe_tmp + i * ms);
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
            gb->pg[i * P + j] = gelu_tanh(gb->pg[i * P + j]) * gb->ple[i * LP + (size_t)il * P + j];
    dg_weight_matmul(&g->ple_proj, (int64_t)M, gb->pg, (int64_t)P, b->tmp, (int64_t)E);
    add_normed(x, b->tmp, g->ple_post_norm, M, E, m->hp.rms_eps);
}

void dg_g4_forward_layer(const deg_model *m, int il, dg_batch *b, float *x)
{
    const g4_layer *g = m->layers[il].arch_data;
    g4_buf gb = regions(m, b);
    size_t n = b->n_tokens * (size_t)m->hp.n_embd;
    g4_attention(m, il, b, x, &gb);
    g4_mlp(m, il, b, x, &gb);
    if (((const g4_hp *)m->arch_hp)->ple_dim) g4_ple(m, il, b, x, &gb);
    if (g->layer_scalar != 1.0f)
        for (size_t i = 0; i < n; i++) x[i] *= g->layer_scalar;
}
