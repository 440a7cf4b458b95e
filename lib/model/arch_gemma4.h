/* Private layout of a `gemma4_text` model (arch_gemma4.c: configuration and
 * loading; arch_gemma4_layer.c: the pass set-up and the layer forward). */
#ifndef DG_MODEL_ARCH_GEMMA4_H
#define DG_MODEL_ARCH_GEMMA4_H

#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include "model/arch.h"

/* RoPE of one layer type (transformers Gemma4TextRotaryEmbedding):
 * inv_freq[j] = 1 / theta^(2j / head_dim) / factor for j < n_rot, 0 for
 * n_rot <= j < head_dim / 2 (those pairs do not rotate), rotate-half over
 * the whole head. "default": n_rot = head_dim / 2, factor 1; "proportional":
 * n_rot = int(partial_rotary_factor * head_dim // 2). */
typedef struct g4_rope {
    int32_t head_dim, n_rot;
    float theta, factor;
} g4_rope;

/* Model-level hyper-parameters and weights (deg_model.arch_hp). */
typedef struct g4_hp {
    unsigned char *is_full;   /* [n_layer] 1: full_attention, 0: sliding_attention */
    int32_t *kv_src;          /* [n_layer] from config (KV sharing), -1: own K/V */
    int32_t *n_ff;            /* [n_layer] MLP width (double-wide on KV-sharing layers) */
    int32_t *hd, *nkv;        /* [n_layer] per-layer head_dim / KV heads */
    int32_t window;           /* sliding_window */
    int k_eq_v;               /* attention_k_eq_v: full layers' V = the raw K projection */
    g4_rope rope[2];          /* [0] sliding, [1] full */
    float embed_scale;        /* sqrt(hidden_size) */
    /* per-layer inputs (PLE); ple_dim = 0: none */
    int32_t ple_dim, ple_vocab;
    dg_weight ple_embd;       /* [ple_vocab, n_layer * ple_dim] */
    dg_weight ple_model_proj; /* [n_layer * ple_dim, n_embd] */
    const float *ple_proj_norm; /* [ple_dim] */
    int32_t max_ff;           /* the largest n_ff[il] */
    /* Mixture of experts (enable_moe_block; n_exp = 0: none): num_experts,
     * top_k_experts, moe_intermediate_size */
    int32_t n_exp, top_k, moe_ff;
} g4_hp;

/* A layer's weights beyond dg_layer's (dg_layer.arch_data); dg_layer holds
 * input_layernorm (attn_norm), q/k/v/o, q_norm / k_norm, pre_feedforward
 * layernorm (ffn_norm) and the MLP. */
typedef struct g4_layer {
    const float *post_attn_norm, *post_ffn_norm; /* [n_embd] */
    const float *v_norm_ones;                    /* [head_dim] ones (v_norm has no scale) */
    float layer_scalar;
    int v_is_k;                                  /* V = the raw K projection */
    dg_weight ple_gate;                          /* [ple_dim, n_embd] */
    dg_weight ple_proj;                          /* [n_embd, ple_dim] */
    const float *ple_post_norm;                  /* [n_embd] */
    /* MoE block (g4_hp.n_exp > 0; Gemma4TextRouter / Gemma4TextExperts) */
    dg_weight router;                            /* [n_exp, n_embd] router.proj */
    const float *router_scale;                   /* [n_embd] router.scale */
    const float *expert_scale;                   /* [n_exp] router.per_expert_scale */
    const float *gate_up;                        /* [n_exp, 2 moe_ff, n_embd] */
    const float *down;                           /* [n_exp, n_embd, moe_ff] */
    const float *pre_ffn_norm_2, *post_ffn_norm_1, *post_ffn_norm_2; /* [n_embd] */
    const float *ones;                           /* [n_embd] (the router's scale-free norm) */
} g4_layer;

/* The pass scratch (dg_batch.rbuf), regions of M rows each: begin_pass
 * writes ple and the RoPE tables, the layers the rest (the backward,
 * arch_gemma4_bwd.c, reads ple and the tables). */
typedef struct g4_buf {
    float *ple;          /* [M, n_layer * ple_dim] per-layer inputs */
    float *ple_tok;      /* [M, n_layer * ple_dim] their token-identity part */
    float *cos[2], *sin[2]; /* [M, head_dim / 2] of the sliding [0] / full [1] layers */
    float *gate, *up;    /* [M, max_ff] */
    float *pg;           /* [M, ple_dim] */
    float *moe_out;      /* [M, n_embd] the experts' sum (MoE) */
    float *moe_tmp;      /* [M, moe_scratch] per-token router / expert temporaries */
} g4_buf;
g4_buf dg_g4_regions(const deg_model *m, const dg_batch *b);

/* gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in
 * torch's f32 order (ATen/native/cpu/Gelu.h: x^3 = x * x * x first, then
 * times kappa). */
static inline float dg_gelu_tanh(float x)
{
    const float k = 0.7978845608028654f;
    float x3 = x * x * x;
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x3)));
}

/* The router of one token (Gemma4TextRouter): p [n_exp] = softmax(router(
 * norm(x) * scale / sqrt(E))) with its top_k entries (ties: the lower index)
 * marked by negating into -1 - p; returns their sum. r: [n_embd] scratch. */
float dg_g4_route(const deg_model *m, const g4_layer *g, const float *x, float *r, float *p);

/* The routed experts of one token's residual x [n_embd] into out [n_embd]
 * (before post_feedforward_layernorm_2); t: dg_g4_moe_scratch floats. */
void dg_g4_moe_token(const deg_model *m, const g4_layer *g, const float *x, float *out, float *t);
size_t dg_g4_moe_scratch(const deg_model *m);

/* Expert e of one token (Gemma4TextExperts): gu [2 moe_ff] = gate_up_e h2
 * (pre-activations), h [moe_ff] = gelu(gate) * up (may alias gu), o [n_embd]
 * = down_e h. */
void dg_g4_expert(const deg_model *m, const g4_layer *g, size_t e, const float *h2, float *gu,
                  float *h, float *o);

/* Scratch floats per token of a pass (deg_model.scratch_per_token). */
size_t dg_g4_scratch(const deg_model *m);
void dg_g4_begin_pass(const deg_model *m, dg_batch *b, float *x, const int32_t *ids,
                      const int64_t *pos);
void dg_g4_forward_layer(const deg_model *m, int il, dg_batch *b, float *x);

#endif
