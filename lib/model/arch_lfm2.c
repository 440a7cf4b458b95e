/* `lfm2` (LiquidAI LFM2 / LFM2.5; transformers modeling_lfm2.py): a hybrid of
 * gated short-convolution layers and GQA attention layers, both followed by
 * the SwiGLU MLP. Conv layer: B, C, x = in_proj(operator_norm(h)) (three
 * [E] chunks), y = C * conv(B * x) (depthwise causal conv of conv_L_cache
 * taps, no activation), h += out_proj(y). Attention layer: the standard
 * layer with per-head q/k RMSNorm (q_layernorm, k_layernorm) and rotate-half
 * RoPE. Norms are w * norm(x); the final norm is model.embedding_norm.
 * State: a conv layer keeps the last conv_L_cache - 1 values of B * x
 * (dg_layer.state_floats = (K-1) * E); attention layers keep K/V.
 * GGUF, as llama.cpp's convert_hf_to_gguf.py (LFM2Model) writes it: the
 * layer kinds from lfm2.attention.head_count_kv (an array, 0 on conv
 * layers), the taps from lfm2.shortconv.l_cache, feed_forward_length already
 * adjusted, tensors blk.N.shortconv.{in_proj,conv,out_proj} (the conv
 * squeezed to [E, K]), the standard llama.cpp names otherwise (operator_norm
 * = attn_norm, q/k_layernorm = attn_q/k_norm, w1/w3/w2 = ffn_gate/up/down,
 * no q/k row permutation: NEOX RoPE), final norm token_embd_norm. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "model/arch.h"
#include "model/arch_lfm2.h"
#include "model/conv.h"
#include "model/layer.h"
#include "model/layer_bwd.h"
#include "model/lora_internal.h"
#include "model/ops.h"
#include "tensor/blas.h"

static const dg_std_names lfm2_names = {
    .attn_norm = "model.layers.%d.operator_norm.weight",
    .q = "model.layers.%d.self_attn.q_proj.weight",
    .k = "model.layers.%d.self_attn.k_proj.weight",
    .v = "model.layers.%d.self_attn.v_proj.weight",
    .o = "model.layers.%d.self_attn.out_proj.weight",
    .q_norm = "model.layers.%d.self_attn.q_layernorm.weight",
    .k_norm = "model.layers.%d.self_attn.k_layernorm.weight",
    .ffn_norm = "model.layers.%d.ffn_norm.weight",
    .gate = "model.layers.%d.feed_forward.w1.weight",
    .up = "model.layers.%d.feed_forward.w3.weight",
    .down = "model.layers.%d.feed_forward.w2.weight",
};

/* Lfm2MLP: with block_auto_adjust_ff_dim the width is int(2 * ff / 3), then
 * int(multiplier * that) rounded up to a multiple of block_multiple_of. */
static deg_status lfm2_ff_dim(dg_hparams *hp, json_t *cfg, const char *path)
{
    json_t *ff = json_object_get(cfg, "block_ff_dim");
    if (json_is_integer(ff)) hp->n_ff = (int32_t)json_integer_value(ff);
    json_t *adj = json_object_get(cfg, "block_auto_adjust_ff_dim");
    if (adj && json_is_false(adj)) return DEG_OK;
    double f = (double)(int64_t)(2.0 * hp->n_ff / 3.0);
    json_t *mul = json_object_get(cfg, "block_ffn_dim_multiplier");
    if (!mul || !json_is_null(mul)) {
        double mv = mul ? json_number_value(mul) : 1.0;
        json_t *mo = json_object_get(cfg, "block_multiple_of");
        int64_t mult = mo ? json_integer_value(mo) : 256;
        if ((mul && !json_is_number(mul)) || mult <= 0)
            return dg_fail(DEG_ERR_FORMAT, "%s: invalid block_ffn_dim_multiplier / "
                           "block_multiple_of", path);
        int64_t v = (int64_t)(mv * f);
        f = (double)(mult * ((v + mult - 1) / mult));
    }
    if (f <= 0 || f > (1 << 24))
        return dg_fail(DEG_ERR_FORMAT, "%s: MLP width %g out of range", path, f);
    hp->n_ff = (int32_t)f;
    return DEG_OK;
}

/* m->arch_hp = a new lfm2_hp (zeroed, is_attn allocated) and the pass
 * scratch of a conv layer. */
static deg_status lfm2_new_hp(deg_model *m, lfm2_hp **out)
{
    lfm2_hp *a;
    DG_TRY(dg_model_alloc(m, sizeof *a, (void **)&a));
    DG_TRY(dg_model_alloc(m, (size_t)m->hp.n_layer, (void **)&a->is_attn));
    m->arch_hp = a;
    m->scratch_per_token = 5 * (size_t)m->hp.n_embd;
    *out = a;
    return DEG_OK;
}

static deg_status check_conv_K(int64_t K, const char *where)
{
    if (K < 1 || K > 64)
        return dg_fail(DEG_ERR_FORMAT, "%s: conv_L_cache %lld out of [1, 64]", where, (long long)K);
    return DEG_OK;
}

static deg_status lfm2_gguf_config(deg_model *m)
{
    const dg_gguf *g = m->src.gguf;
    lfm2_hp *a;
    DG_TRY(lfm2_new_hp(m, &a));
    int64_t K;
    deg_status st = dg_gguf_get_i64(g, "lfm2.shortconv.l_cache", &K);
    if (st == DEG_ERR_RANGE)
        return dg_fail(DEG_ERR_FORMAT, "GGUF: missing metadata key 'lfm2.shortconv.l_cache'");
    DG_TRY(st);
    DG_TRY(check_conv_K(K, "GGUF lfm2.shortconv.l_cache"));
    a->conv_K = (int32_t)K;
    int32_t n = m->hp.n_layer, *kv;
    DG_TRY(dg_model_alloc(m, sizeof(int32_t) * (size_t)n, (void **)&kv));
    int found;
    DG_TRY(dg_gguf_layer_ints(m, "attention.head_count_kv", n, kv, &found));
    for (int32_t i = 0; i < n; i++) a->is_attn[i] = !found || kv[i] != 0; /* absent: all attention */
    return DEG_OK;
}

static deg_status lfm2_hf_config(deg_model *m, json_t *cfg, const char *path)
{
    dg_hparams *hp = &m->hp;
    lfm2_hp *a;
    DG_TRY(lfm2_new_hp(m, &a));
    unsigned char *is_attn = a->is_attn;
    json_t *eps = json_object_get(cfg, "norm_eps");
    hp->rms_eps = json_is_number(eps) ? (float)json_number_value(eps) : 1e-5f;
    json_t *k = json_object_get(cfg, "conv_L_cache");
    int64_t K = json_is_integer(k) ? (int64_t)json_integer_value(k) : 3;
    DG_TRY(check_conv_K(K, path));
    a->conv_K = (int32_t)K;
    if (json_is_true(json_object_get(cfg, "conv_bias")))
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: conv_bias = true is not supported", path);
    json_t *tie = json_object_get(cfg, "tie_embedding");
    if (!json_object_get(cfg, "tie_word_embeddings") && tie) m->tied_lm_head = json_is_true(tie);
    if (!json_object_get(cfg, "tie_word_embeddings") && !tie) m->tied_lm_head = 1;
    DG_TRY(lfm2_ff_dim(hp, cfg, path));
    int found;
    DG_TRY(dg_hf_layer_types(m, cfg, path, "full_attention", "conv", "full_attn_idxs", is_attn,
                             &found));
    if (!found) memset(is_attn, 1, (size_t)hp->n_layer); /* Lfm2Config: all attention */
    return DEG_OK;
}

static deg_status lfm2_load_layer(deg_model *m, int il, dg_layer *L)
{
    const lfm2_hp *a = m->arch_hp;
    if (a->is_attn[il]) return dg_load_std_layer_named(m, il, &lfm2_names, 1, 0, L);
    memset(L, 0, sizeof *L);
    int64_t E = m->hp.n_embd;
    lfm2_conv *c;
    DG_TRY(dg_model_alloc(m, sizeof *c, (void **)&c));
    /* HF [E, 1, K]; llama.cpp squeezes it to [E, K]: the same floats */
    int64_t cshape_hf[] = {E, 1, a->conv_K}, cshape_gguf[] = {E, a->conv_K};
    DG_TRY(dg_weight_get(m, "blk.%d.attn_norm.weight", lfm2_names.attn_norm, il, 1, &E, 0,
                         &L->attn_norm));
    DG_TRY(dg_weight_get_matrix(m, "blk.%d.shortconv.in_proj.weight",
                                "model.layers.%d.conv.in_proj.weight", il, 3 * E, E, 0,
                                &c->in_proj));
    DG_TRY(dg_weight_get(m, "blk.%d.shortconv.conv.weight", "model.layers.%d.conv.conv.weight",
                         il, m->src.gguf ? 2 : 3, m->src.gguf ? cshape_gguf : cshape_hf, 0,
                         &c->conv));
    DG_TRY(dg_weight_get_matrix(m, "blk.%d.shortconv.out_proj.weight",
                                "model.layers.%d.conv.out_proj.weight", il, E, E, 0,
                                &c->out_proj));
    DG_TRY(dg_load_mlp(m, il, &lfm2_names, L));
    L->arch_data = c;
    L->state_floats = (size_t)(a->conv_K - 1) * (size_t)E;
    return DEG_OK;
}

void dg_lfm2_conv_core(const deg_model *m, int il, dg_batch *b, const float *x)
{
    const dg_layer *L = &m->layers[il];
    const lfm2_conv *c = L->arch_data;
    int K = ((const lfm2_hp *)m->arch_hp)->conv_K;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd;
    float *bcx = b->rbuf, *bx = bcx + M * 3 * E, *y0 = bx + M * E;
    dg_rmsnorm_rows(b->xn, x, L->attn_norm, M, E, m->hp.rms_eps);
    dg_weight_matmul(&c->in_proj, (int64_t)M, b->xn, (int64_t)E, bcx, (int64_t)(3 * E));
    dg_lora_add_segs(b, il, DG_LORA_REC_IN, b->xn, E, bcx, 3 * E);
    for (size_t i = 0; i < M; i++)
        for (size_t e = 0; e < E; e++) bx[i * E + e] = bcx[i * 3 * E + e] * bcx[i * 3 * E + 2 * E + e];
    /* Tasks: (segment, block of channels); a channel's taps and tail are its own. */
    const size_t CB = 256;
    size_t nblk = (E + CB - 1) / CB;
    long n_tasks = (long)(b->n_segs * nblk);
#pragma omp parallel for schedule(dynamic, 1) num_threads(b->n_threads) if (M * E >= 16384)
    for (long t = 0; t < n_tasks; t++) {
        const dg_seg *s = &b->segs[(size_t)t / nblk];
        size_t c0 = ((size_t)t % nblk) * CB, c1 = c0 + CB < E ? c0 + CB : E;
        dg_causal_conv(y0 + s->t0 * E, E, bx + s->t0 * E, E, s->n, c0, c1, E, K, c->conv,
                       NULL, s->rec[il], 0);
    }
}

void dg_lfm2_conv_gated(const deg_model *m, const dg_batch *b, float *y)
{
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd;
    const float *bcx = b->rbuf, *y0 = b->rbuf + M * 4 * E;
    for (size_t i = 0; i < M; i++)
        for (size_t e = 0; e < E; e++) y[i * E + e] = y0[i * E + e] * bcx[i * 3 * E + E + e];
}

/* The gated short convolution of a conv layer, x += out_proj(C * conv(B * x)). */
static void lfm2_conv_block(const deg_model *m, int il, dg_batch *b, float *x)
{
    const lfm2_conv *c = m->layers[il].arch_data;
    size_t M = b->n_tokens, E = (size_t)m->hp.n_embd;
    dg_lfm2_conv_core(m, il, b, x);
    dg_lfm2_conv_gated(m, b, b->tmp);
    dg_weight_matmul(&c->out_proj, (int64_t)M, b->tmp, (int64_t)E, b->xn, (int64_t)E);
    dg_lora_add_segs(b, il, DG_LORA_REC_OUT, b->tmp, E, b->xn, E);
    for (size_t i = 0; i < M * E; i++) x[i] += b->xn[i];
}

static void lfm2_forward_layer(const deg_model *m, int il, dg_batch *b, float *x)
{
    if (m->layers[il].has_kv) {
        dg_forward_std_layer(m, il, b, x);
        return;
    }
    size_t n = b->n_tokens * (size_t)m->hp.n_embd;
    if (b->save) memcpy(b->save->x_in, x, sizeof(float) * n);
    lfm2_conv_block(m, il, b, x);
    if (b->save) memcpy(b->save->x_mid, x, sizeof(float) * n);
    dg_forward_mlp(m, il, b, x);
}

/* LoRA on a conv layer's own projections: in_proj [3E, E], out_proj [E, E]. */
static void lfm2_rec_lora_dims(const deg_model *m, int t, size_t *in, size_t *out)
{
    size_t E = (size_t)m->hp.n_embd;
    *in = t == DG_LORA_REC_Z ? 0 : E;
    *out = t == DG_LORA_REC_IN ? 3 * E : t == DG_LORA_REC_OUT ? E : 0;
}

const dg_arch dg_arch_lfm2 = {
    .name = "lfm2",
    .hf_config = lfm2_hf_config,
    .gguf_config = lfm2_gguf_config,
    .hf_out_norm = "model.embedding_norm.weight",
    .gguf_out_norm = "token_embd_norm.weight",
    .chat_layout = "lfm2",
    .load_layer = lfm2_load_layer,
    .forward_layer = lfm2_forward_layer,
    .backward_layer = dg_backward_lfm2_layer,
    .lora = 1,
    .rec_lora_dims = lfm2_rec_lora_dims,
};
