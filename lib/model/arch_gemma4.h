/* Private layout of a `gemma4_text` model (arch_gemma4.c: configuration and
 * loading; arch_gemma4_layer.c: the pass set-up and the layer forward). */
#ifndef DG_MODEL_ARCH_GEMMA4_H
#define DG_MODEL_ARCH_GEMMA4_H

#include <stddef.h>
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

/* Scratch floats per token of a pass (deg_model.scratch_per_token). */
size_t dg_g4_scratch(const deg_model *m);
void dg_g4_begin_pass(const deg_model *m, dg_batch *b, float *x, const int32_t *ids,
                      const int64_t *pos);
void dg_g4_forward_layer(const deg_model *m, int il, dg_batch *b, float *x);

#endif
