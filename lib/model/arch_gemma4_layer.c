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
} g4_buf;

static size_t widths(const deg_model *m, size_t w[8])
{
    const g4_hp *a = m->arch_hp;
    size_t LP = (size_t)m->hp.n_layer * (size_t)a->ple_dim;
    size_t h0 = (size_t)a->rope[0].head_dim / 2, h1 = (size_t)a->rope[1].head_dim / 2;
    size_t f = (size_t)a->max_ff;
    size_t v[8] = {LP, LP, h0, h0, h1, h1, f, f};
    memcpy(w, v, sizeof v);
    return LP * 2 + h0 * 2 + h1 * 2 + f * 2 + (size_t)a->ple_dim;
}

size_t dg_g4_scratch(const deg_model *m)
{
    size_t w[8];
    return widths(m, w);
}

static g4_buf regions(const deg_model *m, const dg_batch *b)
{
    size_t w[8], M = b->n_tokens;
    widths(m, w);
    float *p = b->rbuf;
    float **dst[8];
    g4_buf g;
    dst[0] = &g.ple, dst[1] = &g.ple_tok, dst[2] = &g.cos[0], dst[3] = &g.sin[0];
    dst[4] = &g.cos[1], dst[5] = &g.sin[1], dst[6] = &g.gate, dst[7] = &g.up;
    for (int i = 0; i < 8; i++) {
        *dst[i] = p;
        p += M * w[i];
    }
    g.pg = p;
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

/* x += post_feedforward_norm(down(gelu(gate(h)) * up(h))), h = pre_feedforward_norm(x). */
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
