/* Training forward and backward of one token sequence behind a prefix of K/V
 * rows, through a frozen llama/qwen3 model, with a fused sparse distillation
 * loss. The inference forward (lib/model/forward.c) stays untouched: this
 * file re-runs the same kernels in the same order (so with the same prefix
 * its logits are bitwise equal to a fork's) and keeps what the backward
 * needs.
 *
 * Layout (spec cartridges.md, "Semantics"): the prefix holds P rows per layer
 * in KV-cache space (keys after q/k norm and RoPE); the T tokens sit at RoPE
 * positions P..P+T-1; attention is end-aligned causal (every token sees the
 * whole prefix). Gradients flow into the prefix rows only (model weights are
 * frozen, embeddings get none).
 *
 * Loss (spec "Objective"): sparse teacher targets (position t, token, teacher
 * logprob) are read from the student's logits row t-1:
 *   loss = (1/N) sum_entries -exp(logprob) * log softmax(z[t-1])[token]
 * N = number of distinct supervised positions (a position's top-k entries
 * together are one supervised token). Only the rows t-1 of supervised
 * positions go through the final norm and LM head, in blocks of
 * DG_TRAIN_LOGIT_ROWS rows: no [T, vocab] block exists.
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

#include "cartridge.h"
#include "deg.h"

#define DG_TRAIN_LOGIT_ROWS 32

typedef struct dg_train_args {
    /* Prefix: [n_layer] pointers to [P, n_head_kv*head_dim] f32 rows. P may
     * be 0 (then pk/pv may be NULL). Borrowed. */
    const float *const *pk, *const *pv;
    size_t P;
    const int32_t *ids;     /* [T] token ids (validated by the caller) */
    size_t T;
    const deg_distill_target *targets;  /* [n_targets], validated */
    size_t n_targets;
    int checkpoint;         /* recompute each layer in the backward */
    /* Outputs (each may be NULL): */
    float *loss;            /* scalar (needs targets) */
    float *logits;          /* [T, n_vocab], all rows (tests, gates) */
    /* Gradients of the loss, accumulated (+=) into [n_layer] arrays of
     * [P, n_head_kv*head_dim]; NULL = forward only. */
    float *const *dpk, *const *dpv;
    /* Packing (spec "Batched self-study"): n_segs > 0 splits ids into
     * segments of seg_lens[s] tokens (sum = T). Each segment sits at RoPE
     * positions P.. and attends to the prefix and causally to itself only;
     * the loss is the mean over all segments' supervised positions. 0 = one
     * segment. Validated by the caller. */
    const size_t *seg_lens;
    size_t n_segs;
} dg_train_args;

/* Errors: DEG_ERR_UNSUPPORTED (architecture without the standard layer),
 * DEG_ERR_NOMEM. Targets must have 1 <= position < T and token in range. */
deg_status dg_train_run(const deg_model *m, const dg_train_args *a);

/* Bytes the saved activations of one run take (for reports): set after each
 * dg_train_run on the calling thread. */
size_t dg_train_last_activation_bytes(void);

#endif
