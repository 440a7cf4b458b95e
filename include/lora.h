/*
 * lora.h - LoRA adapters on the fork path (public C API of libdeg).
 *
 * Low-rank adapters (Hu et al. 2021, arXiv 2106.09685; the project's spec
 * deg-contract.md §12.7) on the attention and MLP projections of every layer
 * (targets q, k, v, o, gate, up, down): a projection y = W x of W [out, in]
 * becomes
 *     y = W x + (alpha / rank) * B (A x),   A: [rank, in], B: [out, rank]
 * with B = 0 at creation (an adapter starts as the base model) and A drawn
 * from U(-1/sqrt(in), 1/sqrt(in)) (torch's kaiming_uniform_(a=sqrt(5)) bound,
 * as peft initialises lora_A) from a xoshiro256** stream seeded by the params.
 * One deg_lora holds n_adapters such adapters of the same rank and targets
 * (e.g. "decide" and "extract"); each fork names the adapter its rows run
 * with (deg_fork_set_adapter; -1 = none: the base model). The context trunk
 * is read by the base weights (§12.7 `--lora-context base`): adapters act on
 * fork rows only, so rows with different adapters share one batch and a
 * row's numbers are bitwise those it has alone, next to adapter-off rows, or
 * at any thread count.
 *
 * Parameters are f32 in one flat array (deg_lora_get_params/set_params),
 * laid out adapter-major: for adapter a, layer il, each enabled target t in
 * the order q, k, v, o, gate, up, down, rec_in, rec_z, rec_out: A [rank, in_t]
 * then B [out_t, rank]
 * (row-major). in/out: q [n_head*head_dim, n_embd], k and v
 * [n_head_kv*head_dim, n_embd], o [n_embd, n_head*head_dim], gate and up
 * [n_ff, n_embd], down [n_embd, n_ff] (as [out, in]).
 * Hybrids (lfm2, qwen3_5): a recurrent layer has no q, k, v, o (those
 * targets are absent from its part of the layout); its own projections are
 * the targets rec_in, rec_z, rec_out (DEG_LORA_REC_*, after down in the
 * layout order, present on recurrent layers only: rec_z on qwen3_5 only);
 * qwen3_5's q_proj gives q and the attention
 * output gate, so its q target is [2*n_head*head_dim, n_embd] (the
 * projection adapted whole).
 * Gemma 4 (gemma4_text): the shapes are each layer's own (its full layers'
 * head_dim and KV heads, double-wide MLPs on its KV-sharing layers); a
 * KV-sharing layer has no k, v (absent from its part of the layout), a full
 * layer with V = K (attention_k_eq_v) no v (its k adapter also reaches V, the
 * raw k_proj output); the routed experts, the router and the per-layer-input
 * projections are not adapted.
 *
 * Training (deg_lora_tape_*): fork rows over a frozen trunk are run forward
 * with their adapters, keeping what the backward needs; the caller computes
 * its loss on the rows' final-norm hidden states (e.g. the head losses of
 * deg_train_loss_grad_hidden, deg.h, which also gives dL/dhidden at the
 * ANSWER: and option rows) and hands back dL/dhidden at chosen rows; the backward runs
 * through the same layer code as inference and accumulates dL/dA, dL/dB into
 * a gradient array in the flat layout. No gradient flows into the trunk or
 * the base weights.
 *
 * Conventions as in deg.h (status codes, deg_errmsg(), ownership notes). A
 * deg_lora borrows its model (the model must outlive it); forks using it
 * borrow it too (it must outlive them and not change while they are fed).
 */
#ifndef DEG_LORA_H
#define DEG_LORA_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct deg_lora deg_lora;

/* Target bits (deg_lora_params.targets). */
#define DEG_LORA_Q 1
#define DEG_LORA_K 2
#define DEG_LORA_V 4
#define DEG_LORA_O 8
#define DEG_LORA_GATE 16
#define DEG_LORA_UP 32
#define DEG_LORA_DOWN 64
#define DEG_LORA_ALL 127
/* A hybrid's recurrent layers' own projections (not in DEG_LORA_ALL: adding
 * them changes the layout of adapters made with DEG_LORA_ALL):
 *   REC_IN  the input projection: lfm2 conv.in_proj [3 n_embd, n_embd] (B, C, x);
 *           qwen3_5 linear_attn.in_proj_qkv [2 nk dk + nv dv, n_embd]
 *   REC_Z   qwen3_5 linear_attn.in_proj_z [nv dv, n_embd] (the output gate)
 *   REC_OUT the output projection: lfm2 conv.out_proj [n_embd, n_embd]; qwen3_5
 *           linear_attn.out_proj [n_embd, nv dv]
 * (qwen3_5's in_proj_b / in_proj_a, [nv, n_embd] each, are not adapted). */
#define DEG_LORA_REC_IN 128
#define DEG_LORA_REC_Z 256
#define DEG_LORA_REC_OUT 512
#define DEG_LORA_ALL_RECURRENT 896 /* REC_IN | REC_Z | REC_OUT (a literal: the cffi bindings read plain numbers) */

typedef struct deg_lora_params {
    int32_t rank;          /* r in [1, 256] (default 8) */
    float alpha;           /* scale = alpha / rank; finite (default 16) */
    uint32_t targets;      /* DEG_LORA_* bits, nonzero (default DEG_LORA_ALL) */
    int32_t n_adapters;    /* >= 1 (default 1) */
    uint64_t seed;         /* stream of the A init (default 0) */
} deg_lora_params;

DEG_API deg_lora_params deg_lora_default_params(void);

/* New adapters for model (borrowed): B = 0, A random (see above), so every
 * adapter starts as the base model. Errors: DEG_ERR_ARG (NULL, rank outside
 * [1, 256], n_adapters < 1, no or unknown target bits, non-finite alpha),
 * DEG_ERR_UNSUPPORTED (an architecture without the standard layer),
 * DEG_ERR_NOMEM. */
DEG_API deg_status deg_lora_new(const deg_model *model, const deg_lora_params *params,
                                deg_lora **out);
DEG_API void deg_lora_free(deg_lora *lora);
/* The params it was made with. */
DEG_API deg_lora_params deg_lora_get_config(const deg_lora *lora);
/* Number of f32 parameters (all adapters). */
DEG_API size_t deg_lora_n_params(const deg_lora *lora);
/* Copy the flat parameters out / in (n must equal deg_lora_n_params; set
 * refuses non-finite values: DEG_ERR_NUMERIC, nothing changed). */
DEG_API deg_status deg_lora_get_params(const deg_lora *lora, float *out, size_t n);
DEG_API deg_status deg_lora_set_params(deg_lora *lora, const float *in, size_t n);

/* Run the fork's future rows with adapter `adapter` of lora (borrowed), or
 * with none (lora NULL or adapter -1: the base model; the default). Tokens
 * already fed keep the K/V they were computed with. Errors: DEG_ERR_ARG
 * (NULL fork, adapter outside [-1, n_adapters)), DEG_ERR_MISMATCH (lora of
 * another model). */
DEG_API deg_status deg_fork_set_adapter(deg_fork *fork, const deg_lora *lora, int32_t adapter);

/* ---------------------------------------------------------------- training */

typedef struct deg_lora_tape deg_lora_tape;

/* Forward of n_rows fork rows over trunk (borrowed; must stay unchanged and
 * outlive the tape): row i = ids[i][0..n_ids[i]) (n_ids[i] >= 1) as a fresh
 * fork of trunk would run them, with adapter adapters[i] of lora (-1 = none).
 * The rows' final-norm hidden states are bitwise those of forks fed the same
 * ids with the same adapter (deg_fork_hidden). checkpoint != 0 keeps only
 * each layer's input and recomputes the layer in the backward (same code:
 * bitwise-equal gradients, less memory). Errors: DEG_ERR_ARG (NULL
 * pointers, empty rows, adapter out of range), DEG_ERR_RANGE (token id),
 * DEG_ERR_MISMATCH (trunk of another model), DEG_ERR_STATE (empty trunk),
 * DEG_ERR_NOMEM. */
DEG_API deg_status deg_lora_tape_forward(const deg_lora *lora, const deg_trunk *trunk,
                                         const int32_t *const *ids, const size_t *n_ids,
                                         const int32_t *adapters, size_t n_rows, int checkpoint,
                                         deg_lora_tape **out);
DEG_API void deg_lora_tape_free(deg_lora_tape *tape);
/* Final-norm hidden states [n, n_embd] of row's tokens [first, first + n).
 * Errors: DEG_ERR_RANGE. */
DEG_API deg_status deg_lora_tape_hidden(const deg_lora_tape *tape, size_t row, size_t first,
                                        size_t n, float *hidden);
/* Backward: n_grads gradients dL/dhidden (dhidden [n_grads, n_embd]) at the
 * final-norm hidden state of token pos[g] of row rows[g] (a token may appear
 * more than once: gradients add). Accumulates (+=) dL/dA and dL/dB into
 * grad [deg_lora_n_params] (flat layout; only adapters used by the rows get
 * nonzero entries). May be called once per tape. Errors: DEG_ERR_ARG (NULL,
 * second call), DEG_ERR_RANGE (row/pos), DEG_ERR_NOMEM. */
DEG_API deg_status deg_lora_tape_backward(deg_lora_tape *tape, size_t n_grads,
                                          const size_t *rows, const size_t *pos,
                                          const float *dhidden, float *grad, size_t n_grad);

/* ------------------------------------------------------- checkpoints */

/* A fill checkpoint (deg.h deg_ckpt) may carry adapters: deg.json["lora"]
 * {"rank", "alpha", "targets": ["q", ...], "adapters": [names], "selector",
 * "context": "base", "file": "adapters.safetensors"} and adapters.safetensors
 * with, per adapter name, layer il and target t, "<name>.layers.<il>.<t>.lora_A"
 * F32 [rank, in] and ".lora_B" F32 [out, rank]. deg_fill then runs each fork
 * row with the adapter its kind selects (§12.7): selector "kind" (adapters
 * "decide", "extract"): choice/score/noul rows -> "decide", extract, count
 * and anchor rows -> "extract"; selector "shared" (one adapter "shared"):
 * every such row. The context trunk and x-generate rows always run the base
 * model. A checkpoint without "lora" runs exactly as before (bitwise). */
#define DEG_LORA_SELECT_KIND 0
#define DEG_LORA_SELECT_SHARED 1

/* Give ckpt fresh adapters (B = 0: fill output is unchanged until they are
 * trained) with params' rank, alpha, targets and seed; n_adapters is set by
 * the selector (2 for KIND, 1 for SHARED). Replaces adapters it had. Saved by
 * deg_ckpt_save. Errors: as deg_lora_new, DEG_ERR_ARG (selector). */
DEG_API deg_status deg_ckpt_add_lora(deg_ckpt *ckpt, const deg_lora_params *params,
                                     int32_t selector);
/* The checkpoint's adapters (borrowed, valid until deg_ckpt_free or the next
 * deg_ckpt_add_lora; their parameters may be set), or NULL. */
DEG_API deg_lora *deg_ckpt_get_lora(deg_ckpt *ckpt);
/* The adapter index the checkpoint's selector gives rows of a head kind
 * (DEG_HEAD_* of deg.h), or -1 (no adapters, or a kind the selector leaves
 * on the base model). */
DEG_API int32_t deg_ckpt_lora_adapter(const deg_ckpt *ckpt, int32_t head_kind);

#ifdef __cplusplus
}
#endif

#endif
