/* Architecture table: the private layout of deg_model and the descriptor each
 * architecture file (arch_<name>.c) provides. lib/model/load.c reads the
 * hyper-parameters common to all decoder-only transformers, then hands the
 * per-layer weights, the per-layer forward and its backward (training) to the
 * descriptor, so adding an architecture (qwen3.5 hybrid, lfm2) adds its files
 * and a table entry and touches no other architecture. */
#ifndef DG_MODEL_ARCH_H
#define DG_MODEL_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "deg.h"
#include "format/gguf.h"
#include "format/safetensors.h"
#include "tensor/weight.h"
#include "tokenizer/tokenizer.h"

typedef struct dg_arch dg_arch;
typedef struct dg_batch dg_batch;
typedef struct dg_layer_acts dg_layer_acts; /* layer.h */
typedef struct dg_layer_grad dg_layer_grad; /* layer_bwd.h */

/* Hyper-parameters (names as in deg_model_info). */
typedef struct dg_hparams {
    int32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx_train;
    float rope_theta, rms_eps;
    int32_t rope_dim;   /* rotary dims per head (<= head_dim; partial RoPE below it) */
} dg_hparams;

/* Weights of one decoder layer, shapes as in PyTorch (Linear weight =
 * [out_features, in_features]). Norm vectors are f32; the projections are
 * typed (tensor/weight.h): f32 (dequantized at load) or, with
 * DEG_WEIGHTS_NATIVE, the file's dtype borrowed from the mapping. Pointers
 * either borrow from the mapped file or from the model's owned buffers.
 * Fields an architecture does not use stay NULL / zero; arch_data is for
 * architectures whose layers hold other kinds of weights (convolutions,
 * recurrent state). */
typedef struct dg_layer {
    const float *attn_norm; /* [n_embd] */
    dg_weight wq;           /* [n_head * head_dim, n_embd] */
    dg_weight wk;           /* [n_head_kv * head_dim, n_embd] */
    dg_weight wv;           /* [n_head_kv * head_dim, n_embd] */
    dg_weight wo;           /* [n_embd, n_head * head_dim] */
    const float *q_norm;    /* [head_dim] per-head RMSNorm (qwen3) or NULL */
    const float *k_norm;    /* [head_dim] (qwen3) or NULL */
    const float *ffn_norm;  /* [n_embd] */
    dg_weight w_gate;       /* [n_ff, n_embd] */
    dg_weight w_up;         /* [n_ff, n_embd] */
    dg_weight w_down;       /* [n_embd, n_ff] */
    /* What the layer keeps in the model state (state.h): has_kv = 1 for an
     * attention layer (K/V rows), state_floats = the size of its fixed-size
     * recurrent block (0: none). Set by the architecture's load_layer. */
    int has_kv;
    size_t state_floats;
    /* Attention geometry of the layer (an attention layer, or one that reads
     * another's K/V): n_head_kv KV heads of head_dim floats (load.c sets the
     * model's where the architecture leaves 0; Gemma 4's full-attention
     * layers have their own), kv_row = n_head_kv * head_dim floats per K/V
     * row of the state; window > 0: sliding-window attention over the last
     * `window` keys (ops.h dg_attend_group_win); attn_scale: the score scale
     * (0: 1/sqrt(head_dim)); kv_shared = 1: the layer keeps no K/V of its own
     * and attends layer kv_src's rows (Gemma 4's num_kv_shared_layers). */
    int32_t n_head_kv, head_dim;
    size_t kv_row;
    int32_t window;
    float attn_scale;
    int kv_shared, kv_src;
    void *arch_data;
} dg_layer;

/* Where tensors come from: one GGUF file or a (possibly sharded)
 * safetensors checkpoint. Exactly one is non-NULL. */
typedef struct dg_weight_src {
    dg_gguf *gguf;
    dg_st_set *st;
} dg_weight_src;

struct deg_model {
    const dg_arch *arch;
    dg_hparams hp;
    char *name;
    char *path;                /* the path it was loaded from (absolute if resolvable) */
    char *chat_template;       /* NULL if none */
    const char *chat_layout;   /* static */
    dg_tokenizer *tok;
    int32_t bos_id, eos_id;
    int tied_lm_head;

    dg_weight tok_embd;        /* [n_vocab, n_embd] (rows read by dg_weight_get_row) */
    const float *out_norm;     /* [n_embd] */
    dg_weight lm_head;         /* [n_vocab, n_embd] (= tok_embd when tied) */
    dg_layer *layers;          /* [n_layer] */

    dg_weight_src src;         /* kept open: F32 weights borrow its mapping */
    void **owned;              /* buffers freed with the model */
    size_t n_owned, cap_owned;
    size_t weight_bytes;
    int native_weights;        /* 1: DEG_WEIGHTS_NATIVE or _NATIVE_F32ACT (typed weights keep
                                  the file's dtype) */
    int f32_act;               /* 1: DEG_WEIGHTS_NATIVE_F32ACT (quantized weights take f32
                                  activation rows: dg_weight.f32_act) */
    const char *hf_prefix;     /* static; HF directories: replaces the leading "model." of
                                  every tensor name (a multimodal checkpoint's language model,
                                  "model.language_model."); NULL: names as written */
    void *arch_hp;             /* architecture-specific hyper-parameters (arch_<name>.c; owned) */
    size_t scratch_per_token;  /* floats of pass scratch per token its layers need beyond
                                  dg_batch's (dg_batch.rbuf); set by the architecture */
    size_t max_qd, max_kd;     /* the largest n_head * head_dim, n_head_kv * head_dim over
                                  the layers (load.c; the pass buffers q/att, k/v) */
    size_t max_ff;             /* the largest MLP width over the layers (load.c: the
                                  w_gate rows; Gemma 4's double-wide MLPs) */
    float final_softcap;       /* > 0: logits = c * tanh(logits / c) (Gemma 4's
                                  final_logit_softcapping; dg_lm_head); 0: none */
};

/* Architecture descriptor. Names in GGUF follow llama.cpp (blk.N.attn_q...),
 * in HF directories transformers (model.layers.N.self_attn.q_proj...). */
struct dg_arch {
    const char *name;          /* GGUF general.architecture / HF model_type */
    /* Optional: read the architecture's own config.json keys after the
     * common ones (may adjust m->hp, sets m->arch_hp). NULL: none. */
    deg_status (*hf_config)(deg_model *m, json_t *cfg, const char *cfg_path);
    /* What the common GGUF hyper-parameters (load.c) accept beyond a plain
     * transformer's (DG_GGUF_* below; 0: none). */
    unsigned gguf_flags;
    /* llama.cpp's general.architecture for the family when it differs from
     * name (GGUF files are found by it: dg_arch_find_gguf); NULL: name. */
    const char *gguf_arch;
    /* Optional: read the architecture's own GGUF metadata (llama.cpp keys
     * "<arch>.*") after the common ones; sets m->arch_hp. NULL: none. */
    deg_status (*gguf_config)(deg_model *m);
    /* HF / GGUF names of the final norm; NULL = "model.norm.weight" /
     * "output_norm.weight". */
    const char *hf_out_norm;
    const char *gguf_out_norm;
    /* Optional: run after every weight is loaded (e.g. rewrite norms). */
    deg_status (*finish)(deg_model *m);
    /* deg_model_info.chat_layout of the family (NULL: recognised from the
     * chat template: "chatml" if it writes <|im_start|> turns, else "none"). */
    const char *chat_layout;
    /* Optional: run at the start of every forward pass, after the token
     * embeddings are in x [M, n_embd] (ids [M], positions pos [M] of the
     * pass's tokens): Gemma 4 scales the embeddings and computes its
     * per-layer inputs and RoPE tables into b->rbuf. NULL: nothing. */
    void (*begin_pass)(const deg_model *m, dg_batch *b, float *x, const int32_t *ids,
                       const int64_t *pos);
    /* Load layer il's weights into *out (shape-checked). */
    deg_status (*load_layer)(deg_model *m, int il, dg_layer *out);
    /* Run layer il on the batch: x [n_tokens, n_embd] residual stream, in place. */
    void (*forward_layer)(const deg_model *m, int il, dg_batch *b, float *x);
    /* Layer il's backward (layer_bwd.h; written beside the forward, e.g.
     * layer_std.c / layer_std_bwd.c): dx [M, E] holds dL/d(layer output) and
     * becomes dL/d(layer input). b is the batch of the training forward that
     * filled a (forward_layer with b->save = a; a recurrent layer's backward
     * reruns its block's forward in b's scratch and segment states); segments
     * with own_len0 = 0: their own K/V are a->k, a->v; with g->dlora, a->att is
     * saved. Errors: DEG_ERR_NOMEM. NULL: the architecture cannot train (the
     * training driver, hence cartridges, LoRA and self-study, refuses it with
     * DEG_ERR_UNSUPPORTED). */
    deg_status (*backward_layer)(const deg_model *m, int il, dg_batch *b,
                                 const dg_layer_acts *a, float *dx, const dg_layer_grad *g);
    /* 1: the layers apply LoRA adapters (include/lora.h) beyond
     * dg_forward_std_layer's (which always does): the attention and MLP
     * projections of a hybrid; its recurrent layers' projections are not
     * adapted. */
    int lora;
    /* What the training forward's saved sets (layer.h dg_layer_acts) hold
     * beyond the standard layer's: DG_SAVE_GEMMA4 = q_pre, k_pre, v_pre, att
     * and x_ffn on every layer; 0: the standard sets. */
    unsigned train_saves;
    /* Optional: [out, in] of a recurrent layer's projection adapted by target
     * t (DG_LORA_REC_IN / REC_Z / REC_OUT, lora_internal.h); both 0 when the
     * architecture has none. NULL: no recurrent targets. */
    void (*rec_lora_dims)(const deg_model *m, int t, size_t *in, size_t *out);
};

#define DG_SAVE_GEMMA4 1u
/* gguf_flags: DG_GGUF_PARTIAL_ROPE: rope.dimension_count below key_length is
 * rotate-half RoPE on the first dims of each head (hp.rope_dim; llama.cpp's
 * NEOX RoPE with n_rot < head_dim, as HF's partial_rotary_factor);
 * DG_GGUF_LAYER_ARRAYS: attention.head_count_kv and feed_forward_length may
 * be per-layer arrays with different entries (the common hyper-parameters
 * take the first attention layer's / layer 0's; the architecture's
 * gguf_config reads the arrays with dg_gguf_layer_ints). */
#define DG_GGUF_PARTIAL_ROPE 1u
#define DG_GGUF_LAYER_ARRAYS 2u

/* NULL if unknown. The table lives in arch_table.c. dg_arch_find: by name
 * (HF model_type); dg_arch_find_gguf: by GGUF general.architecture. */
const dg_arch *dg_arch_find(const char *name);
const dg_arch *dg_arch_find_gguf(const char *name);
/* "llama, qwen3": the supported names, for error messages. */
void dg_arch_list(char *buf, size_t cap);

/* --- weight loading helpers (weights.c) --------------------------------- */

/* Fetch a tensor as f32 with the expected shape (outermost first). gguf_name
 * is used for GGUF files, hf_name for HF directories (either may contain one
 * "%d", replaced by il). permute_heads > 0: the tensor is a llama.cpp-
 * converted attn_q/attn_k of a `llama` GGUF whose rows inside each of the
 * permute_heads heads are interleaved (llama.cpp's converter reorders rows so
 * its interleaved RoPE equals HF's rotate-half; transformers' GGUF loader
 * reverses it, and so do we: hf_row[h][a*D/2 + b] = gguf_row[h][2b + a]).
 * Errors: DEG_ERR_FORMAT naming the tensor (missing, or expected vs actual
 * shape), DEG_ERR_UNSUPPORTED (dtype), DEG_ERR_NOMEM. */
deg_status dg_weight_get(deg_model *m, const char *gguf_name, const char *hf_name, int il,
                         int n_dims, const int64_t *shape, int permute_heads,
                         const float **out);
/* Fetch a 2-D weight [rows, cols] typed: with m->native_weights and a dtype
 * dg_weight_supported handles, borrowed from the mapping in its dtype (a
 * permute_heads reorder becomes a row map); otherwise as f32 via
 * dg_weight_get. Same errors. */
deg_status dg_weight_get_matrix(deg_model *m, const char *gguf_name, const char *hf_name, int il,
                                int64_t rows, int64_t cols, int permute_heads, dg_weight *out);
/* dg_weight_get / dg_weight_get_matrix reading a GGUF tensor whose rows
 * (row_map) and / or columns (col_map) llama.cpp's converter reordered:
 * logical (Hugging Face) row r is the file's row row_map[r], column c its
 * column col_map[c] (maps owned by the model or static, [shape[0]] /
 * [cols]; NULL: in order; ignored for HF directories, whose tensors are in
 * the logical order). A row map of a native matrix becomes dg_weight.row_map;
 * a column map that moves whole quantization blocks (each block of the
 * logical order one block of the file, in order) gives a native matrix
 * holding the file's blocks in that order (dequantized: exactly the f32
 * reorder); any other column map makes the matrix f32 (a block cannot be
 * split). Same errors as dg_weight_get. */
deg_status dg_weight_get_mapped(deg_model *m, const char *gguf_name, const char *hf_name, int il,
                                int n_dims, const int64_t *shape, const int32_t *row_map,
                                const int32_t *col_map, const float **out);
deg_status dg_weight_get_matrix_mapped(deg_model *m, const char *gguf_name, const char *hf_name,
                                       int il, int64_t rows, int64_t cols,
                                       const int32_t *row_map, const int32_t *col_map,
                                       dg_weight *out);
/* GGUF metadata "<general.architecture>.<key>" read per layer into out[n]:
 * a number (every layer), or an array of exactly n integers or booleans (1 /
 * 0). *found = 0 when the key is absent (out untouched). Errors:
 * DEG_ERR_FORMAT naming the key (another type, another length, a value
 * outside [0, INT32_MAX]). */
deg_status dg_gguf_layer_ints(const deg_model *m, const char *key, int32_t n, int32_t *out,
                              int *found);
/* The GGUF key "<general.architecture>.<key>" of the model's file, in buf. */
const char *dg_gguf_arch_key(const deg_model *m, const char *key, char *buf, size_t cap);
/* Layer kinds from config.json: "layer_types" (an array of n_layer strings,
 * attn_name -> 1, other_name -> 0, anything else DEG_ERR_UNSUPPORTED), else
 * idx_key (may be NULL; an array of attention layer indices); *found = 0 if
 * neither is there (is_attn untouched). Errors: DEG_ERR_FORMAT naming the key. */
deg_status dg_hf_layer_types(const deg_model *m, json_t *cfg, const char *path,
                             const char *attn_name, const char *other_name, const char *idx_key,
                             unsigned char *is_attn, int *found);
/* Hand a malloc'd buffer to the model (freed with it); on failure p is
 * freed. Errors: DEG_ERR_NOMEM. */
deg_status dg_model_own(deg_model *m, void *p);
/* *out = a zeroed block of bytes owned by the model. Errors: DEG_ERR_NOMEM. */
deg_status dg_model_alloc(deg_model *m, size_t bytes, void **out);
/* The tensor name in the model's source: gguf_name for GGUF, else hf_name
 * (its leading "model." replaced by m->hf_prefix when set), "%d" = il. */
void dg_tensor_name(char *buf, size_t cap, const deg_model *m, const char *gguf_name,
                    const char *hf_name, int il);
/* 1 if the tensor exists in the model's source. */
int dg_weight_has(const deg_model *m, const char *gguf_name, const char *hf_name, int il);

/* Standard pre-norm decoder layer (llama, qwen3): RMSNorm -> GQA attention
 * with rotate-half RoPE (optional per-head q/k RMSNorm before RoPE) ->
 * residual -> RMSNorm -> SwiGLU MLP -> residual. In layer_std.c (batch
 * layout: layer.h); its backward is dg_backward_std_layer (layer_std_bwd.c). */
void dg_forward_std_layer(const deg_model *m, int il, dg_batch *b, float *x);
/* The attention pieces of the standard layer (layer_std.c), for
 * architectures with their own attention variant (qwen3_5's gated one):
 * dg_kv_append_segs writes the pass's K/V rows k, v [M, KD] (after norm and
 * RoPE) to each segment's own cache; dg_attention_segs runs causal GQA
 * attention of every (segment, head) of q [M, n_head*head_dim] into b->att
 * (stats: the training forward's softmax statistics, or NULL), the query
 * heads of a KV head together (dg_attend_group, ops.h); b->scores holds
 * dg_attention_scratch(m) floats per thread (independent of the context). */
void dg_kv_append_segs(const dg_batch *b, int il, const float *k, const float *v, size_t KD);
void dg_attention_segs(const deg_model *m, int il, dg_batch *b, const float *q, float *stats);
size_t dg_attention_scratch(const deg_model *m);
/* The SwiGLU feed-forward half of a layer (RMSNorm ffn_norm -> w_down(silu(
 * w_gate x) * w_up x) -> residual), in layer_std.c: shared by every
 * architecture whose layers end with it (llama, qwen3, lfm2, qwen3_5). */
void dg_forward_mlp(const deg_model *m, int il, dg_batch *b, float *x);
/* y[M, ldy] += the LoRA of target t (DG_LORA_*, lora_internal.h) of layer il
 * for the rows of segments that run an adapter (x: the projection's input
 * [M, ldx]); per row, in parallel over segments (layer_std.c). */
void dg_lora_add_segs(const dg_batch *b, int il, int t, const float *x, size_t ldx, float *y,
                      size_t ldy);
/* HF tensor names (with one "%d" = the layer) of the standard layer's
 * tensors; the GGUF names are llama.cpp's (blk.%d.attn_q.weight ...) for
 * every architecture. dg_std_names_llama: transformers' llama/qwen3 names. */
typedef struct dg_std_names {
    const char *attn_norm, *q, *k, *v, *o, *q_norm, *k_norm, *ffn_norm, *gate, *up, *down;
    const char *gguf_ffn_norm; /* the GGUF name of ffn_norm (NULL: blk.%d.ffn_norm.weight) */
} dg_std_names;
extern const dg_std_names dg_std_names_llama;
/* Loads the tensors of the standard layer (clears *out first, sets has_kv);
 * with_qk_norm loads q/k norms. dg_load_std_layer: with the llama names. */
deg_status dg_load_std_layer_named(deg_model *m, int il, const dg_std_names *names,
                                   int with_qk_norm, int gguf_permuted_qk, dg_layer *out);
deg_status dg_load_std_layer(deg_model *m, int il, int with_qk_norm, int gguf_permuted_qk,
                             dg_layer *out);
/* Loads ffn_norm and the SwiGLU MLP (names->ffn_norm, gate, up, down). */
deg_status dg_load_mlp(deg_model *m, int il, const dg_std_names *names, dg_layer *out);

#endif
