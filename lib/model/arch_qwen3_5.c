/* `qwen3_5_text` (Qwen3.5 language model; transformers modeling_qwen3_5.py):
 * Gated DeltaNet layers ("linear_attention") and gated GQA attention layers
 * ("full_attention"), each followed by the SwiGLU MLP.
 *  - Norms are zero-centred: x / rms(x) * (1 + w) (Qwen3_5RMSNorm); the
 *    loader stores 1 + w, so the shared RMSNorm kernel applies them.
 *  - Gated attention: q_proj gives per head [q (D) | gate (D)]; per-head q/k
 *    RMSNorm, partial rotate-half RoPE (partial_rotary_factor, the text
 *    positions of its multimodal RoPE are one 1-D position), attention,
 *    out * sigmoid(gate), o_proj.
 *  - Gated DeltaNet: qkv = in_proj_qkv(x) through a depthwise causal conv
 *    (linear_conv_kernel_dim taps) + SiLU; per value head h (key head
 *    h / (nv/nk)): q, k L2-normalised (eps 1e-6), q / sqrt(dk);
 *    beta = sigmoid(in_proj_b x), g = -exp(A_log) * softplus(in_proj_a x +
 *    dt_bias); S = S * exp(g); S += k (beta (v - S^T k))^T; o = S^T q
 *    (torch_recurrent_gated_delta_rule, token by token); o = RMSNorm(o) * w
 *    * silu(in_proj_z x) per head (Qwen3_5RMSNormGated); out_proj.
 * State of a DeltaNet layer (dg_layer.state_floats): S [nv, dk, dv] f32 then
 * the conv tail [K-1, conv_dim]. GGUF (llama.cpp qwen35) is not read. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "model/arch.h"
#include "model/arch_qwen3_5.h"
#include "model/conv.h"
#include "model/delta_rule.h"
#include "model/layer.h"
#include "model/layer_bwd.h"
#include "model/lora_internal.h"
#include "model/ops.h"
#include "tensor/blas.h"

static deg_status cfg_int(json_t *cfg, const char *key, int32_t dflt, int32_t *out,
                          const char *path)
{
    json_t *v = json_object_get(cfg, key);
    *out = v ? (int32_t)json_integer_value(v) : dflt;
    if ((v && !json_is_integer(v)) || *out <= 0 || *out > 65536)
        return dg_fail(DEG_ERR_FORMAT, "%s: invalid \"%s\"", path, key);
    return DEG_OK;
}

static deg_status q35_hf_config(deg_model *m, json_t *cfg, const char *path)
{
    dg_hparams *hp = &m->hp;
    q35_hp *a;
    unsigned char *is_attn;
    DG_TRY(dg_model_alloc(m, sizeof *a, (void **)&a));
    DG_TRY(dg_model_alloc(m, (size_t)hp->n_layer, (void **)&is_attn));
    a->is_attn = is_attn;
    m->arch_hp = a;
    DG_TRY(cfg_int(cfg, "linear_num_key_heads", 16, &a->nk, path));
    DG_TRY(cfg_int(cfg, "linear_num_value_heads", 32, &a->nv, path));
    DG_TRY(cfg_int(cfg, "linear_key_head_dim", 128, &a->dk, path));
    DG_TRY(cfg_int(cfg, "linear_value_head_dim", 128, &a->dv, path));
    DG_TRY(cfg_int(cfg, "linear_conv_kernel_dim", 4, &a->conv_K, path));
    if (a->dk > DG_DN_MAX_HEAD_DIM || a->dv > DG_DN_MAX_HEAD_DIM)
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: linear key/value head dims %d/%d exceed %d", path,
                       (int)a->dk, (int)a->dv, DG_DN_MAX_HEAD_DIM);
    if (a->nv % a->nk)
        return dg_fail(DEG_ERR_FORMAT, "%s: linear_num_value_heads %d is not a multiple of "
                       "linear_num_key_heads %d", path, (int)a->nv, (int)a->nk);
    int found;
    DG_TRY(dg_hf_layer_types(m, cfg, path, "full_attention", "linear_attention", NULL, is_attn,
                             &found));
    if (!found) { /* Qwen3_5TextConfig: every full_attention_interval-th layer */
        int32_t every;
        DG_TRY(cfg_int(cfg, "full_attention_interval", 4, &every, path));
        for (int32_t i = 0; i < hp->n_layer; i++) is_attn[i] = (i + 1) % every == 0;
    }
    size_t QD = (size_t)hp->n_head * (size_t)hp->head_dim, VD = (size_t)a->nv * (size_t)a->dv;
    size_t dn = 2 * dg_q35_conv_dim(a) + 3 * VD + 2 * (size_t)a->nv, at = 3 * QD;
    m->scratch_per_token = dn > at ? dn : at;
    return DEG_OK;
}

/* *w (n floats, a zero-centred norm weight) replaced by an owned 1 + w. */
static deg_status plus_one(deg_model *m, int64_t n, const float **w)
{
    float *p;
    DG_TRY(dg_model_alloc(m, sizeof(float) * (size_t)n, (void **)&p));
    for (int64_t i = 0; i < n; i++) p[i] = 1.0f + (*w)[i];
    *w = p;
    return DEG_OK;
}

/* A zero-centred norm weight, loaded and stored as 1 + w. */
static deg_status norm_plus_one(deg_model *m, const char *hf, int il, int64_t n,
                                const float **out)
{
    DG_TRY(dg_weight_get(m, NULL, hf, il, 1, &n, 0, out));
    return plus_one(m, n, out);
}

#define Q35 "model.layers.%d."

static const dg_std_names q35_mlp_names = {
    .ffn_norm = Q35 "post_attention_layernorm.weight", .gate = Q35 "mlp.gate_proj.weight",
    .up = Q35 "mlp.up_proj.weight", .down = Q35 "mlp.down_proj.weight"};

static deg_status q35_load_attn(deg_model *m, int il, dg_layer *L)
{
    const dg_hparams *hp = &m->hp;
    int64_t E = hp->n_embd, D = hp->head_dim, QD = (int64_t)hp->n_head * D,
            KD = (int64_t)hp->n_head_kv * D;
    DG_TRY(dg_weight_get_matrix(m, NULL, Q35 "self_attn.q_proj.weight", il, 2 * QD, E, 0, &L->wq));
    DG_TRY(dg_weight_get_matrix(m, NULL, Q35 "self_attn.k_proj.weight", il, KD, E, 0, &L->wk));
    DG_TRY(dg_weight_get_matrix(m, NULL, Q35 "self_attn.v_proj.weight", il, KD, E, 0, &L->wv));
    DG_TRY(dg_weight_get_matrix(m, NULL, Q35 "self_attn.o_proj.weight", il, E, QD, 0, &L->wo));
    DG_TRY(norm_plus_one(m, Q35 "self_attn.q_norm.weight", il, D, &L->q_norm));
    DG_TRY(norm_plus_one(m, Q35 "self_attn.k_norm.weight", il, D, &L->k_norm));
    L->has_kv = 1;
    return DEG_OK;
}

static deg_status q35_load_deltanet(deg_model *m, int il, dg_layer *L)
{
    const q35_hp *a = m->arch_hp;
    int64_t E = m->hp.n_embd, CD = (int64_t)dg_q35_conv_dim(a), VD = (int64_t)a->nv * a->dv,
            NV = a->nv, DV = a->dv;
    q35_dn *d;
    DG_TRY(dg_model_alloc(m, sizeof *d, (void **)&d));
    int64_t cshape[] = {CD, 1, a->conv_K};
    DG_TRY(dg_weight_get_matrix(m, NULL, Q35 "linear_attn.in_proj_qkv.weight", il, CD, E, 0,
                                &d->in_qkv));
    DG_TRY(dg_weight_get_matrix(m, NULL, Q35 "linear_attn.in_proj_z.weight", il, VD, E, 0,
                                &d->in_z));
    DG_TRY(dg_weight_get_matrix(m, NULL, Q35 "linear_attn.in_proj_b.weight", il, NV, E, 0,
                                &d->in_b));
    DG_TRY(dg_weight_get_matrix(m, NULL, Q35 "linear_attn.in_proj_a.weight", il, NV, E, 0,
                                &d->in_a));
    DG_TRY(dg_weight_get(m, NULL, Q35 "linear_attn.conv1d.weight", il, 3, cshape, 0, &d->conv));
    DG_TRY(dg_weight_get(m, NULL, Q35 "linear_attn.A_log", il, 1, &NV, 0, &d->A_log));
    DG_TRY(dg_weight_get(m, NULL, Q35 "linear_attn.dt_bias", il, 1, &NV, 0, &d->dt_bias));
    DG_TRY(dg_weight_get(m, NULL, Q35 "linear_attn.norm.weight", il, 1, &DV, 0, &d->norm));
    DG_TRY(dg_weight_get_matrix(m, NULL, Q35 "linear_attn.out_proj.weight", il, E, VD, 0,
                                &d->out));
    L->arch_data = d;
    L->state_floats = (size_t)a->nv * (size_t)a->dk * (size_t)a->dv +
                      (size_t)(a->conv_K - 1) * (size_t)CD;
    return DEG_OK;
}

static deg_status q35_load_layer(deg_model *m, int il, dg_layer *L)
{
    const q35_hp *a = m->arch_hp;
    memset(L, 0, sizeof *L);
    DG_TRY(norm_plus_one(m, Q35 "input_layernorm.weight", il, m->hp.n_embd, &L->attn_norm));
    DG_TRY(a->is_attn[il] ? q35_load_attn(m, il, L) : q35_load_deltanet(m, il, L));
    DG_TRY(dg_load_mlp(m, il, &q35_mlp_names, L));
    return plus_one(m, m->hp.n_embd, &L->ffn_norm);
}

static deg_status q35_finish(deg_model *m) { return plus_one(m, m->hp.n_embd, &m->out_norm); }

/* Gated attention block: x += o_proj(attention(q, k, v) * sigmoid(gate)),
 * LoRA adapters on q_proj (q and gate), k, v and o_proj.
 * Training (b->save): q/k before and after their norms, v, the attention
 * statistics and its output before the gate are saved (the gate itself is
 * recomputed by the backward, lib/model/arch_qwen3_5_bwd.c). */
static void q35_attn_block(const deg_model *m, int il, dg_batch *b, float *x)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    dg_layer_acts *sv = b->save;
    size_t M = b->n_tokens, E = (size_t)hp->n_embd, D = (size_t)hp->head_dim;
    size_t H = (size_t)hp->n_head, QD = H * D, KD = (size_t)hp->n_head_kv * D;
    float *qg = b->rbuf, *gate = b->rbuf + M * 2 * QD;
    float *q = sv ? sv->q : b->q, *k = sv ? sv->k : b->k, *v = sv ? sv->v : b->v;
    float *q_pre = sv ? sv->q_pre : q, *k_pre = sv ? sv->k_pre : k;
    dg_rmsnorm_rows(b->xn, x, L->attn_norm, M, E, hp->rms_eps);
    dg_weight_matmul(&L->wq, (int64_t)M, b->xn, (int64_t)E, qg, (int64_t)(2 * QD));
    dg_weight_matmul(&L->wk, (int64_t)M, b->xn, (int64_t)E, k_pre, (int64_t)KD);
    dg_weight_matmul(&L->wv, (int64_t)M, b->xn, (int64_t)E, v, (int64_t)KD);
    dg_lora_add_segs(b, il, DG_LORA_Q, b->xn, E, qg, 2 * QD);
    dg_lora_add_segs(b, il, DG_LORA_K, b->xn, E, k_pre, KD);
    dg_lora_add_segs(b, il, DG_LORA_V, b->xn, E, v, KD);
    for (size_t i = 0; i < M; i++)
        for (size_t h = 0; h < H; h++) {
            memcpy(q_pre + i * QD + h * D, qg + i * 2 * QD + h * 2 * D, sizeof(float) * D);
            memcpy(gate + i * QD + h * D, qg + i * 2 * QD + h * 2 * D + D, sizeof(float) * D);
        }
    dg_rmsnorm_rows(q, q_pre, L->q_norm, M * H, D, hp->rms_eps);
    dg_rmsnorm_rows(k, k_pre, L->k_norm, M * (size_t)hp->n_head_kv, D, hp->rms_eps);
    dg_rope_apply_partial(q, b->rope_cos, b->rope_sin, M, (int)H, (int)D, hp->rope_dim);
    dg_rope_apply_partial(k, b->rope_cos, b->rope_sin, M, hp->n_head_kv, (int)D, hp->rope_dim);
    dg_kv_append_segs(b, il, k, v, KD);
    dg_attention_segs(m, il, b, q, sv ? sv->stats : NULL);
    if (sv) memcpy(sv->att, b->att, sizeof(float) * M * QD);
    for (size_t i = 0; i < M * QD; i++) b->att[i] *= 1.0f / (1.0f + expf(-gate[i]));
    dg_weight_matmul(&L->wo, (int64_t)M, b->att, (int64_t)QD, b->tmp, (int64_t)E);
    dg_lora_add_segs(b, il, DG_LORA_O, b->att, QD, b->tmp, E);
    for (size_t i = 0; i < M * E; i++) x[i] += b->tmp[i];
}

/* x * 1/sqrt(sum x^2 + 1e-6), n floats in place (transformers l2norm). */
static void l2norm(float *x, size_t n)
{
    float ss = 0.0f;
    for (size_t i = 0; i < n; i++) ss += x[i] * x[i];
    float r = 1.0f / sqrtf(ss + 1e-6f);
    for (size_t i = 0; i < n; i++) x[i] *= r;
}

/* torch.nn.functional.softplus (beta 1, threshold 20). */
static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

const float *dg_q35_token_inputs(const q35_hp *a, const q35_dn *d, int h, const float *qc_row,
                                 const float *ab_row, float *q, float *k, float *beta,
                                 float *decay)
{
    size_t dk = (size_t)a->dk, kh = (size_t)(h / (a->nv / a->nk)), KD = (size_t)a->nk * dk;
    float sq = sqrtf((float)dk), negA = -expf(d->A_log[h]);
    memcpy(q, qc_row + kh * dk, sizeof(float) * dk);
    memcpy(k, qc_row + KD + kh * dk, sizeof(float) * dk);
    l2norm(q, dk);
    for (size_t i = 0; i < dk; i++) q[i] /= sq;
    l2norm(k, dk);
    *beta = 1.0f / (1.0f + expf(-ab_row[h]));
    *decay = expf(negA * softplus(ab_row[a->nv + h] + d->dt_bias[h]));
    return qc_row + 2 * KD + (size_t)h * (size_t)a->dv;
}

/* The gated delta rule of one value head h over a segment's n tokens, from
 * and into its state S [dk, dv]; qc [n, ldq] (after conv), ab [n, ldab]
 * (b | a), out [n, ldo] at head h. */
static void delta_rule_head(const q35_hp *a, const q35_dn *d, int h, size_t n, const float *qc,
                            size_t ldq, const float *ab, size_t ldab, float *S, float *out,
                            size_t ldo)
{
    float q[DG_DN_MAX_HEAD_DIM], k[DG_DN_MAX_HEAD_DIM], beta, decay;
    for (size_t t = 0; t < n; t++) {
        const float *v = dg_q35_token_inputs(a, d, h, qc + t * ldq, ab + t * ldab, q, k, &beta,
                                             &decay);
        dg_delta_rule_step(S, q, k, v, decay, beta, (size_t)a->dk, (size_t)a->dv, NULL,
                           out + t * ldo + (size_t)h * (size_t)a->dv);
    }
}

void dg_q35_deltanet_core(const deg_model *m, int il, dg_batch *b, const float *x)
{
    const dg_layer *L = &m->layers[il];
    const q35_hp *a = m->arch_hp;
    const q35_dn *d = L->arch_data;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd, CD = dg_q35_conv_dim(a);
    size_t NV = (size_t)a->nv, DV = (size_t)a->dv, VD = NV * DV;
    size_t S_n = NV * (size_t)a->dk * DV;
    float *qkv = b->rbuf, *qc = qkv + M * CD, *z = qc + M * CD, *ab = z + M * VD,
          *core = ab + M * 2 * NV;
    dg_rmsnorm_rows(b->xn, x, L->attn_norm, M, E, m->hp.rms_eps);
    dg_weight_matmul(&d->in_qkv, (int64_t)M, b->xn, (int64_t)E, qkv, (int64_t)CD);
    dg_weight_matmul(&d->in_z, (int64_t)M, b->xn, (int64_t)E, z, (int64_t)VD);
    dg_lora_add_segs(b, il, DG_LORA_REC_IN, b->xn, E, qkv, CD);
    dg_lora_add_segs(b, il, DG_LORA_REC_Z, b->xn, E, z, VD);
    dg_weight_matmul(&d->in_b, (int64_t)M, b->xn, (int64_t)E, ab, (int64_t)(2 * NV));
    dg_weight_matmul(&d->in_a, (int64_t)M, b->xn, (int64_t)E, ab + NV, (int64_t)(2 * NV));
    const size_t CB = 256;
    size_t nblk = (CD + CB - 1) / CB;
    long n_tasks = (long)(b->n_segs * nblk);
    int par = M * CD >= 16384 && b->n_threads > 1;
#pragma omp parallel for schedule(dynamic, 1) num_threads(b->n_threads) if (par)
    for (long t = 0; t < n_tasks; t++) {
        const dg_seg *s = &b->segs[(size_t)t / nblk];
        size_t c0 = ((size_t)t % nblk) * CB, c1 = c0 + CB < CD ? c0 + CB : CD;
        dg_causal_conv(qc + s->t0 * CD, CD, qkv + s->t0 * CD, CD, s->n, c0, c1, CD, a->conv_K,
                       d->conv, NULL, s->rec[il] + S_n, 1);
    }
    n_tasks = (long)(b->n_segs * NV);
    par = M * S_n >= 65536 && b->n_threads > 1;
#pragma omp parallel for schedule(dynamic, 1) num_threads(b->n_threads) if (par)
    for (long t = 0; t < n_tasks; t++) {
        const dg_seg *s = &b->segs[(size_t)t / NV];
        size_t h = (size_t)t % NV;
        delta_rule_head(a, d, (int)h, s->n, qc + s->t0 * CD, CD, ab + s->t0 * 2 * NV, 2 * NV,
                        s->rec[il] + h * (size_t)a->dk * DV, core + s->t0 * VD, VD);
    }
}

float *dg_q35_gated(const deg_model *m, int il, dg_batch *b)
{
    const q35_hp *a = m->arch_hp;
    const q35_dn *d = m->layers[il].arch_data;
    size_t M = b->n_tokens, CD = dg_q35_conv_dim(a);
    size_t NV = (size_t)a->nv, DV = (size_t)a->dv, VD = NV * DV;
    const float *z = b->rbuf + 2 * M * CD, *core = z + M * VD + M * 2 * NV;
    float *gated = (float *)core + M * VD;
    /* gated RMSNorm per (token, head): RMSNorm(o) * w * silu(z) */
    dg_rmsnorm_rows(gated, core, d->norm, M * NV, DV, m->hp.rms_eps);
    for (size_t i = 0; i < M * VD; i++) gated[i] *= z[i] / (1.0f + expf(-z[i]));
    return gated;
}

/* Gated DeltaNet block: x += out_proj(gated_norm(delta_rule(conv(qkv)), z)). */
static void q35_deltanet_block(const deg_model *m, int il, dg_batch *b, float *x)
{
    const q35_hp *a = m->arch_hp;
    const q35_dn *d = m->layers[il].arch_data;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd, VD = (size_t)a->nv * (size_t)a->dv;
    dg_q35_deltanet_core(m, il, b, x);
    float *gated = dg_q35_gated(m, il, b);
    dg_weight_matmul(&d->out, (int64_t)M, gated, (int64_t)VD, b->tmp, (int64_t)E);
    dg_lora_add_segs(b, il, DG_LORA_REC_OUT, gated, VD, b->tmp, E);
    for (size_t i = 0; i < M * E; i++) x[i] += b->tmp[i];
}

static void q35_forward_layer(const deg_model *m, int il, dg_batch *b, float *x)
{
    size_t n = b->n_tokens * (size_t)m->hp.n_embd;
    if (b->save) memcpy(b->save->x_in, x, sizeof(float) * n);
    if (m->layers[il].has_kv)
        q35_attn_block(m, il, b, x);
    else
        q35_deltanet_block(m, il, b, x);
    if (b->save) memcpy(b->save->x_mid, x, sizeof(float) * n);
    dg_forward_mlp(m, il, b, x);
}

/* LoRA on a DeltaNet layer's own projections: in_proj_qkv [CD, E], in_proj_z
 * [VD, E], out_proj [E, VD]. */
static void q35_rec_lora_dims(const deg_model *m, int t, size_t *in, size_t *out)
{
    const q35_hp *a = m->arch_hp;
    size_t E = (size_t)m->hp.n_embd, VD = (size_t)a->nv * (size_t)a->dv;
    *in = t == DG_LORA_REC_OUT ? VD : E;
    *out = t == DG_LORA_REC_IN ? dg_q35_conv_dim(a) : t == DG_LORA_REC_Z ? VD : E;
}

const dg_arch dg_arch_qwen3_5 = {
    .name = "qwen3_5_text",
    .hf_config = q35_hf_config,
    .no_gguf = 1,
    .gguf_arch = "qwen35",
    .no_gguf_why = "llama.cpp's qwen35 converter reorders the DeltaNet value heads, stores "
                   "A = -exp(A_log) and the norms as 1 + w, splits q/k/v and z, renames "
                   "dt_bias and appends MTP layers; deg does not undo that layout yet",
    .finish = q35_finish,
    .chat_layout = "qwen3",
    .load_layer = q35_load_layer,
    .forward_layer = q35_forward_layer,
    .backward_layer = dg_backward_qwen3_5_layer,
    .lora = 1,
    .rec_lora_dims = q35_rec_lora_dims,
};
