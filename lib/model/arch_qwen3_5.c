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
 *    h / (nv/nk)): q, k L2-normalised (eps 1e-6), q * dk^-1/2;
 *    beta = sigmoid(in_proj_b x), g = -exp(A_log) * softplus(in_proj_a x +
 *    dt_bias); S = S * exp(g); S += k (beta (v - S^T k))^T; o = S^T q
 *    (torch_recurrent_gated_delta_rule, token by token); o = RMSNorm(o) * w
 *    * silu(in_proj_z x) per head (Qwen3_5RMSNormGated); out_proj.
 * State of a DeltaNet layer (dg_layer.state_floats): S [nv, dk, dv] f32 then
 * the conv tail [K-1, conv_dim].
 * GGUF, as llama.cpp's convert_hf_to_gguf.py (Qwen3_5TextModel, general.
 * architecture "qwen35") writes it: qwen35.ssm.{state_size = dk, group_count
 * = nk, time_step_rank = nv, inner_size = nv dv, conv_kernel}, the layer
 * kinds from qwen35.attention.recurrent_layers (else full_attention_interval),
 * partial RoPE as rope.dimension_count (its rope.dimension_sections, the
 * multimodal RoPE's, are one 1-D position for text), block_count counting
 * nextn_predict_layers MTP layers after the decoder's (not read). Tensors:
 * the zero-centred norms stored as 1 + w (taken as they are; ssm_norm, the
 * gated norm, is not zero-centred), attn_q = q_proj (q | gate per head),
 * attn_qkv / attn_gate / ssm_beta / ssm_alpha = in_proj_qkv / z / b / a,
 * ssm_conv1d squeezed to [conv_dim, K], ssm_a = -exp(A_log), ssm_dt.bias =
 * dt_bias, ssm_out = out_proj; with nk < nv the value heads reordered
 * (q35_hp.map_*: undone at load). */
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

/* m->arch_hp = a new q35_hp with is_attn allocated. */
static deg_status q35_new_hp(deg_model *m, q35_hp **out)
{
    q35_hp *a;
    DG_TRY(dg_model_alloc(m, sizeof *a, (void **)&a));
    DG_TRY(dg_model_alloc(m, (size_t)m->hp.n_layer, (void **)&a->is_attn));
    m->arch_hp = a;
    *out = a;
    return DEG_OK;
}

/* After the DeltaNet geometry is read (from config.json or GGUF metadata,
 * named by where): its checks and the pass scratch. */
static deg_status q35_geometry(deg_model *m, q35_hp *a, const char *where)
{
    const dg_hparams *hp = &m->hp;
    if (a->dk > DG_DN_MAX_HEAD_DIM || a->dv > DG_DN_MAX_HEAD_DIM)
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: linear key/value head dims %d/%d exceed %d",
                       where, (int)a->dk, (int)a->dv, DG_DN_MAX_HEAD_DIM);
    if (a->nv % a->nk)
        return dg_fail(DEG_ERR_FORMAT, "%s: linear_num_value_heads %d is not a multiple of "
                       "linear_num_key_heads %d", where, (int)a->nv, (int)a->nk);
    size_t QD = (size_t)hp->n_head * (size_t)hp->head_dim, VD = (size_t)a->nv * (size_t)a->dv;
    size_t dn = 2 * dg_q35_conv_dim(a) + 3 * VD + 2 * (size_t)a->nv, at = 3 * QD;
    m->scratch_per_token = dn > at ? dn : at;
    return DEG_OK;
}

/* Qwen3_5TextConfig's default layer kinds: every every-th layer is attention. */
static void q35_interval(deg_model *m, q35_hp *a, int32_t every)
{
    for (int32_t i = 0; i < m->hp.n_layer; i++) a->is_attn[i] = (i + 1) % every == 0;
}

static deg_status q35_hf_config(deg_model *m, json_t *cfg, const char *path)
{
    q35_hp *a;
    DG_TRY(q35_new_hp(m, &a));
    DG_TRY(cfg_int(cfg, "linear_num_key_heads", 16, &a->nk, path));
    DG_TRY(cfg_int(cfg, "linear_num_value_heads", 32, &a->nv, path));
    DG_TRY(cfg_int(cfg, "linear_key_head_dim", 128, &a->dk, path));
    DG_TRY(cfg_int(cfg, "linear_value_head_dim", 128, &a->dv, path));
    DG_TRY(cfg_int(cfg, "linear_conv_kernel_dim", 4, &a->conv_K, path));
    int found;
    DG_TRY(dg_hf_layer_types(m, cfg, path, "full_attention", "linear_attention", NULL, a->is_attn,
                             &found));
    if (!found) {
        int32_t every;
        DG_TRY(cfg_int(cfg, "full_attention_interval", 4, &every, path));
        q35_interval(m, a, every);
    }
    return q35_geometry(m, a, path);
}

/* GGUF "qwen35.<key>": a count in [1, 65536]; absent: dflt (0: required). */
static deg_status gguf_count(const deg_model *m, const char *key, int32_t dflt, int32_t *out)
{
    char full[160];
    int64_t v;
    dg_gguf_arch_key(m, key, full, sizeof full);
    deg_status st = dg_gguf_get_i64(m->src.gguf, full, &v);
    if (st == DEG_ERR_RANGE && dflt) v = dflt;
    else if (st == DEG_ERR_RANGE) return dg_fail(DEG_ERR_FORMAT, "GGUF: missing metadata key '%s'", full);
    else if (st != DEG_OK) return dg_fail_context(st, "GGUF key '%s'", full);
    if (v < 1 || v > 65536)
        return dg_fail(DEG_ERR_FORMAT, "GGUF: '%s' = %lld is out of range", full, (long long)v);
    *out = (int32_t)v;
    return DEG_OK;
}

/* The value-head maps of a GGUF file with nk < nv (q35_hp.map_*). */
static deg_status q35_head_maps(deg_model *m, q35_hp *a)
{
    if (a->nk == a->nv) return DEG_OK;
    size_t nv = (size_t)a->nv, dv = (size_t)a->dv, r = nv / (size_t)a->nk;
    size_t qk = 2 * (size_t)a->nk * (size_t)a->dk, CD = dg_q35_conv_dim(a);
    DG_TRY(dg_model_alloc(m, sizeof(int32_t) * nv, (void **)&a->map_nv));
    DG_TRY(dg_model_alloc(m, sizeof(int32_t) * nv * dv, (void **)&a->map_vd));
    DG_TRY(dg_model_alloc(m, sizeof(int32_t) * CD, (void **)&a->map_qkv));
    for (size_t h = 0; h < nv; h++) /* logical h = kh * r + j is file head j * nk + kh */
        a->map_nv[h] = (int32_t)((h % r) * (size_t)a->nk + h / r);
    for (size_t i = 0; i < nv * dv; i++)
        a->map_vd[i] = a->map_nv[i / dv] * (int32_t)dv + (int32_t)(i % dv);
    for (size_t c = 0; c < CD; c++)
        a->map_qkv[c] = c < qk ? (int32_t)c : (int32_t)qk + a->map_vd[c - qk];
    return DEG_OK;
}

static deg_status q35_gguf_config(deg_model *m)
{
    dg_hparams *hp = &m->hp;
    int32_t n_all = hp->n_layer, nextn = 0, inner = 0, *rec;
    char key[160];
    int64_t v;
    deg_status st = dg_gguf_get_i64(m->src.gguf,
                                    dg_gguf_arch_key(m, "nextn_predict_layers", key, sizeof key), &v);
    if (st == DEG_OK && (v < 0 || v >= n_all))
        return dg_fail(DEG_ERR_FORMAT, "GGUF: '%s' = %lld leaves no decoder layer of %d", key,
                       (long long)v, (int)n_all);
    if (st == DEG_OK) nextn = (int32_t)v;
    else if (st != DEG_ERR_RANGE) return dg_fail_context(st, "GGUF key '%s'", key);
    hp->n_layer = n_all - nextn; /* the MTP layers after the decoder are not read */
    q35_hp *a;
    DG_TRY(q35_new_hp(m, &a));
    DG_TRY(gguf_count(m, "ssm.state_size", 0, &a->dk));
    DG_TRY(gguf_count(m, "ssm.group_count", 0, &a->nk));
    DG_TRY(gguf_count(m, "ssm.time_step_rank", 0, &a->nv));
    DG_TRY(gguf_count(m, "ssm.inner_size", 0, &inner));
    DG_TRY(gguf_count(m, "ssm.conv_kernel", 0, &a->conv_K));
    if (inner % a->nv)
        return dg_fail(DEG_ERR_FORMAT, "GGUF: qwen35.ssm.inner_size %d is not a multiple of "
                       "qwen35.ssm.time_step_rank %d", (int)inner, (int)a->nv);
    a->dv = inner / a->nv;
    DG_TRY(dg_model_alloc(m, sizeof(int32_t) * (size_t)n_all, (void **)&rec));
    int found;
    DG_TRY(dg_gguf_layer_ints(m, "attention.recurrent_layers", n_all, rec, &found));
    if (found) {
        for (int32_t i = 0; i < hp->n_layer; i++) a->is_attn[i] = !rec[i];
    } else {
        int32_t every;
        DG_TRY(gguf_count(m, "full_attention_interval", 4, &every));
        q35_interval(m, a, every);
    }
    DG_TRY(q35_geometry(m, a, "GGUF"));
    return q35_head_maps(m, a);
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

/* A zero-centred norm weight stored as 1 + w (HF: w, plus one here; GGUF:
 * llama.cpp's converter stored 1 + w). */
static deg_status norm_plus_one(deg_model *m, const char *gguf, const char *hf, int il, int64_t n,
                                const float **out)
{
    DG_TRY(dg_weight_get(m, gguf, hf, il, 1, &n, 0, out));
    return m->src.gguf ? DEG_OK : plus_one(m, n, out);
}

#define Q35 "model.layers.%d."
#define BLK "blk.%d."

static const dg_std_names q35_mlp_names = {
    .ffn_norm = Q35 "post_attention_layernorm.weight", .gate = Q35 "mlp.gate_proj.weight",
    .up = Q35 "mlp.up_proj.weight", .down = Q35 "mlp.down_proj.weight",
    .gguf_ffn_norm = BLK "post_attention_norm.weight"};

static deg_status q35_load_attn(deg_model *m, int il, dg_layer *L)
{
    const dg_hparams *hp = &m->hp;
    int64_t E = hp->n_embd, D = hp->head_dim, QD = (int64_t)hp->n_head * D,
            KD = (int64_t)hp->n_head_kv * D;
    DG_TRY(dg_weight_get_matrix(m, BLK "attn_q.weight", Q35 "self_attn.q_proj.weight", il, 2 * QD,
                                E, 0, &L->wq));
    DG_TRY(dg_weight_get_matrix(m, BLK "attn_k.weight", Q35 "self_attn.k_proj.weight", il, KD, E,
                                0, &L->wk));
    DG_TRY(dg_weight_get_matrix(m, BLK "attn_v.weight", Q35 "self_attn.v_proj.weight", il, KD, E,
                                0, &L->wv));
    DG_TRY(dg_weight_get_matrix(m, BLK "attn_output.weight", Q35 "self_attn.o_proj.weight", il, E,
                                QD, 0, &L->wo));
    DG_TRY(norm_plus_one(m, BLK "attn_q_norm.weight", Q35 "self_attn.q_norm.weight", il, D,
                         &L->q_norm));
    DG_TRY(norm_plus_one(m, BLK "attn_k_norm.weight", Q35 "self_attn.k_norm.weight", il, D,
                         &L->k_norm));
    L->has_kv = 1;
    return DEG_OK;
}

/* -exp(A_log) [nv]: HF computes it here (the arithmetic the forward used to
 * do per token), GGUF stores it (ssm_a). */
static deg_status q35_neg_A(deg_model *m, int il, const q35_hp *a, const float **out)
{
    int64_t NV = a->nv;
    if (m->src.gguf)
        return dg_weight_get_mapped(m, BLK "ssm_a", NULL, il, 1, &NV, a->map_nv, NULL, out);
    const float *A_log;
    float *p;
    DG_TRY(dg_weight_get(m, NULL, Q35 "linear_attn.A_log", il, 1, &NV, 0, &A_log));
    DG_TRY(dg_model_alloc(m, sizeof(float) * (size_t)NV, (void **)&p));
    for (int64_t h = 0; h < NV; h++) p[h] = -expf(A_log[h]);
    *out = p;
    return DEG_OK;
}

static deg_status q35_load_deltanet(deg_model *m, int il, dg_layer *L)
{
    const q35_hp *a = m->arch_hp;
    int64_t E = m->hp.n_embd, CD = (int64_t)dg_q35_conv_dim(a), VD = (int64_t)a->nv * a->dv,
            NV = a->nv, DV = a->dv;
    q35_dn *d;
    DG_TRY(dg_model_alloc(m, sizeof *d, (void **)&d));
    /* HF [CD, 1, K]; llama.cpp squeezes it to [CD, K]: the same floats */
    int64_t cshape_hf[] = {CD, 1, a->conv_K}, cshape_gguf[] = {CD, a->conv_K};
    DG_TRY(dg_weight_get_matrix_mapped(m, BLK "attn_qkv.weight", Q35 "linear_attn.in_proj_qkv.weight",
                                       il, CD, E, a->map_qkv, NULL, &d->in_qkv));
    DG_TRY(dg_weight_get_matrix_mapped(m, BLK "attn_gate.weight", Q35 "linear_attn.in_proj_z.weight",
                                       il, VD, E, a->map_vd, NULL, &d->in_z));
    DG_TRY(dg_weight_get_matrix_mapped(m, BLK "ssm_beta.weight", Q35 "linear_attn.in_proj_b.weight",
                                       il, NV, E, a->map_nv, NULL, &d->in_b));
    DG_TRY(dg_weight_get_matrix_mapped(m, BLK "ssm_alpha.weight", Q35 "linear_attn.in_proj_a.weight",
                                       il, NV, E, a->map_nv, NULL, &d->in_a));
    DG_TRY(dg_weight_get_mapped(m, BLK "ssm_conv1d.weight", Q35 "linear_attn.conv1d.weight", il,
                                m->src.gguf ? 2 : 3, m->src.gguf ? cshape_gguf : cshape_hf,
                                a->map_qkv, NULL, &d->conv));
    DG_TRY(q35_neg_A(m, il, a, &d->neg_A));
    DG_TRY(dg_weight_get_mapped(m, BLK "ssm_dt.bias", Q35 "linear_attn.dt_bias", il, 1, &NV,
                                a->map_nv, NULL, &d->dt_bias));
    DG_TRY(dg_weight_get(m, BLK "ssm_norm.weight", Q35 "linear_attn.norm.weight", il, 1, &DV, 0,
                         &d->norm));
    DG_TRY(dg_weight_get_matrix_mapped(m, BLK "ssm_out.weight", Q35 "linear_attn.out_proj.weight",
                                       il, E, VD, NULL, a->map_vd, &d->out));
    L->arch_data = d;
    L->state_floats = (size_t)a->nv * (size_t)a->dk * (size_t)a->dv +
                      (size_t)(a->conv_K - 1) * (size_t)CD;
    return DEG_OK;
}

static deg_status q35_load_layer(deg_model *m, int il, dg_layer *L)
{
    const q35_hp *a = m->arch_hp;
    memset(L, 0, sizeof *L);
    DG_TRY(norm_plus_one(m, BLK "attn_norm.weight", Q35 "input_layernorm.weight", il,
                         m->hp.n_embd, &L->attn_norm));
    DG_TRY(a->is_attn[il] ? q35_load_attn(m, il, L) : q35_load_deltanet(m, il, L));
    DG_TRY(dg_load_mlp(m, il, &q35_mlp_names, L));
    return m->src.gguf ? DEG_OK : plus_one(m, m->hp.n_embd, &L->ffn_norm);
}

static deg_status q35_finish(deg_model *m)
{
    return m->src.gguf ? DEG_OK : plus_one(m, m->hp.n_embd, &m->out_norm);
}

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
    float isq = dg_q35_q_scale(a), negA = d->neg_A[h];
    memcpy(q, qc_row + kh * dk, sizeof(float) * dk);
    memcpy(k, qc_row + KD + kh * dk, sizeof(float) * dk);
    l2norm(q, dk);
    for (size_t i = 0; i < dk; i++) q[i] *= isq;
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
    .gguf_arch = "qwen35",
    .gguf_config = q35_gguf_config,
    .gguf_flags = DG_GGUF_PARTIAL_ROPE,
    .finish = q35_finish,
    .chat_layout = "qwen3",
    .load_layer = q35_load_layer,
    .forward_layer = q35_forward_layer,
    .backward_layer = dg_backward_qwen3_5_layer,
    .lora = 1,
    .rec_lora_dims = q35_rec_lora_dims,
};
