/* Training forward and backward of token sequences behind a prefix of K/V
 * rows (and, on hybrids, initial recurrent states), through a frozen model
 * (llama, qwen3, lfm2, qwen3_5, gemma4). The forward is the inference
 * forward's layer (lib/model/layer_std.c, one code path; so with the same
 * prefix its logits are bitwise equal to a fork's) told to keep what the
 * backward (lib/model/layer_std_bwd.c) needs; the loss is the caller's (a
 * callback on the final residual stream: the cartridge's fused sparse
 * distillation loss is lib/cartridge/distill_loss.c).
 *
 * Layout (spec cartridges.md, "Semantics"): the prefix holds P rows per layer
 * in KV-cache space (keys after q/k norm and RoPE); the T tokens sit at RoPE
 * positions P..P+T-1 (per packed segment); attention is end-aligned causal
 * (every token sees the whole prefix). Gradients flow into the prefix rows
 * only (model weights are frozen, embeddings get none).
 *
 * Memory: without checkpointing every layer keeps its input, its pre-norm q/k
 * (qwen3), post-RoPE q/k, v, the attention row statistics, its mid residual
 * and the MLP gate/up pre-activations; with checkpointing only each layer's
 * input is kept and the layer is recomputed (same code, so bitwise-equal
 * gradients) just before its backward. */
#ifndef DG_GRAD_TRAIN_H
#define DG_GRAD_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"
#include "lora.h"

/* The loss on the final residual stream x [T, n_embd] (before the final
 * norm). Sets *loss; when dx != NULL also writes dL/dx into dx [T, n_embd],
 * which the driver zeroed (the callback may add into chosen rows only). ud is
 * dg_train_args.loss_ud. */
typedef deg_status (*dg_train_loss_fn)(const deg_model *m, const float *x, size_t T,
                                       float *dx, float *loss, void *ud);

typedef struct dg_train_args {
    /* Prefix: [n_layer] pointers to [P, n_head_kv*head_dim] f32 rows. P may
     * be 0 (then pk/pv may be NULL). Borrowed. */
    const float *const *pk, *const *pv;
    size_t P;
    const int32_t *ids;     /* [T] token ids (validated by the caller) */
    size_t T;
    dg_train_loss_fn loss_fn; /* NULL: forward only (logits) */
    void *loss_ud;
    int checkpoint;         /* recompute each layer in the backward */
    /* Outputs (each may be NULL): */
    float *loss;            /* scalar (needs loss_fn) */
    float *logits;          /* [T, n_vocab], all rows (tests, gates) */
    /* Gradients of the loss, accumulated (+=) into [n_layer] arrays of
     * [P, n_head_kv*head_dim]; NULL = forward only. */
    float *const *dpk, *const *dpv;
    /* Recurrent layers (hybrids: dg_layer.state_floats > 0): prec[il] the
     * fixed-size block (state.h layout) every segment starts layer il from,
     * i.e. the state after the prefix; NULL array or entry = zeros. dprec:
     * gradients into those blocks, accumulated (+=) over segments, [n_layer]
     * arrays of state_floats (entries of other layers unused); NULL = none.
     * A segment's state never reaches another segment (packing stays exact). */
    const float *const *prec;
    float *const *dprec;
    /* Packing (spec "Batched self-study"): n_segs > 0 splits ids into
     * segments of seg_lens[s] tokens (sum = T). Each segment sits at RoPE
     * positions P.. and attends to the prefix and causally to itself only;
     * the loss is the mean over all segments' supervised positions. 0 = one
     * segment. Validated by the caller. */
    const size_t *seg_lens;
    size_t n_segs;
    /* LoRA (lib/model/lora_internal.h): segment s runs adapter seg_adapters[s] of lora
     * (-1 = none); NULL lora = no adapters. dlora: gradient into the
     * adapters' flat parameters [deg_lora_n_params], accumulated (+=); NULL
     * = none. A backward runs when dpk, dprec or dlora is set. */
    const deg_lora *lora;
    const int32_t *seg_adapters;
    float *dlora;
} dg_train_args;

/* The two phases of dg_train_run, for callers whose loss needs the forward's
 * result before it can give a gradient (the LoRA tape, include/lora.h). The
 * state borrows the args' arrays (they must outlive it). */
typedef struct dg_train_state dg_train_state;
/* Forward with saved activations (when the args ask for a backward). */
deg_status dg_train_forward(const deg_model *m, const dg_train_args *a, dg_train_state **out);
/* Final residual stream [T, n_embd] (before the final norm). */
const float *dg_train_final(const dg_train_state *s);
/* dx [T, n_embd]: dL/d(final residual), used as scratch. Once per state. */
deg_status dg_train_backward(dg_train_state *s, float *dx);
void dg_train_state_free(dg_train_state *s);

/* DEG_OK when the model's architecture has a layer backward (every
 * training entry needs one; self-study checks it before it synthesises any
 * conversation), else DEG_ERR_UNSUPPORTED naming it, prefixed by who. */
deg_status dg_train_check(const deg_model *m, const char *who);

/* Errors: DEG_ERR_UNSUPPORTED (architecture without a layer backward),
 * DEG_ERR_NOMEM, the loss callback's. dpk != NULL needs loss_fn. */
deg_status dg_train_run(const deg_model *m, const dg_train_args *a);

/* Bytes the saved activations of one run take (for reports): set after each
 * dg_train_run on the calling thread. */
size_t dg_train_last_activation_bytes(void);

#endif
