/* One layer pass over a batch of token rows: the segment and batch layout that
 * the per-architecture layer forward (lib/model/layer_std.c) reads, shared by
 * the inference forward (lib/model/forward.c: forks, prefill) and the training
 * forward (lib/grad/train.c), which passes buffers to capture what its
 * backward (lib/model/layer_std_bwd.c) needs. One layer, two callers (as
 * llm.c's gpt2_forward serves inference and training). */
#ifndef DG_MODEL_LAYER_H
#define DG_MODEL_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"
#include "lora.h"

typedef struct dg_row dg_row;

/* A segment: n query tokens, rows [t0, t0 + n) of the pass matrices, that
 * attend to a prefix of K/V rows and causally to their own rows.
 *   prefix (per layer il): pk[il], pv[il]: [prefix_len, n_head_kv*head_dim]
 *     (pk == NULL: no prefix);
 *   own (per layer il): ok[il], ov[il] + own_base rows: the segment's own
 *     K/V, rows [0, own_len0) hold earlier tokens; the layer writes this
 *     segment's rows at [own_len0, own_len0 + n) (skipped when they already
 *     are the pass's K/V buffer: the training forward's saved k/v). */
typedef struct dg_seg {
    const dg_row *row;    /* inference: the row the segment belongs to (outputs); else NULL */
    size_t off;           /* inference: first token of the segment within its row */
    size_t n, t0;
    const float *const *pk, *const *pv;
    size_t prefix_len;
    float *const *ok, *const *ov;
    size_t own_base, own_len0;
    float *const *rec;    /* per layer il: rec[il] the row's fixed-size recurrent block
                             (state.h), updated in place; NULL: no recurrent state */
    const deg_lora *lora; /* adapters of the segment's tokens (lib/model/lora_internal.h) or NULL */
    int adapter;          /* adapter index in lora, -1 = none (the base model) */
} dg_seg;

/* What one layer's backward needs (lib/grad/train.c keeps one per layer, or
 * one reused set when it recomputes layers). Shapes per pass of M tokens;
 * fields a layer does not produce stay NULL:
 *   x_in [M, E] layer input; q_pre [M, H*D] / k_pre [M, Hkv*D] q/k before the
 *   per-head norm (qwen3 only); q [M, H*D], k, v [M, Hkv*D] after norm + RoPE;
 *   stats [M, H, 2] attention row max and sum of exp; x_mid [M, E] residual
 *   after attention; gate, up [M, F] MLP pre-activations; att [M, H*D] the
 *   attention output (saved only when the caller allocates it: the LoRA
 *   backward needs it, and qwen3_5's gated attention, whose att is before the
 *   output gate).
 * Gemma 4 (dg_arch.train_saves DG_SAVE_GEMMA4) also saves v_pre [M, Hkv*D]
 * (v before its norm), x_ffn [M, E] (the residual after the feed-forward
 * half, the per-layer-input block's input), and q_pre / k_pre and att on
 * every attention layer; its full layers have their own head_dim / KV heads
 * (the sets are sized by the widest layer or the layer's own geometry).
 * A recurrent layer (lfm2 short conv, Gated DeltaNet) saves x_in, x_mid and
 * the MLP's gate/up only: its backward recomputes the block from x_in and the
 * initial state (dg_layer_grad.prec) with the forward's own code. */
typedef struct dg_layer_acts {
    float *x_in, *q_pre, *k_pre, *q, *k, *v, *stats, *x_mid, *gate, *up, *att;
    float *v_pre, *x_ffn;
} dg_layer_acts;

struct dg_batch {
    size_t n_tokens;     /* M */
    dg_seg *segs;
    size_t n_segs;
    const float *rope_cos, *rope_sin;  /* [M, head_dim/2] */
    /* scratch */
    float *xn;           /* [M, n_embd] */
    float *q;            /* [M, n_head*head_dim] */
    float *k, *v;        /* [M, n_head_kv*head_dim] */
    float *att;          /* [M, n_head*head_dim] */
    float *gate, *up;    /* [M, n_ff] */
    float *tmp;          /* [M, n_embd] */
    float *rbuf;         /* [M, scratch_per_token] (deg_model): recurrent layers' scratch */
    float *scores;       /* [n_threads, dg_attention_scratch(m)]: attention scratch */
    int n_threads;
    /* Training: the layer fills *save (NULL in inference). */
    dg_layer_acts *save;
};

/* The scratch of a pass of M tokens (xn, q, k, v, att, gate, up, tmp, scores, rbuf
 * of dg_batch) in one block of dg_batch_scratch_floats floats, 64-byte aligned by the
 * caller (parts at multiples of 16 floats), for the inference and the training
 * forward alike; n_threads: the pass's attention threads (scores). saves: the pass
 * saves activations (training), whose set holds q, k, v and up (left NULL here).
 * dg_batch_bind_scratch points b's scratch into block and sets b->n_threads; a part
 * of no size (rbuf of a model without recurrent layers) is NULL. */
size_t dg_batch_scratch_floats(const deg_model *m, size_t M, int n_threads, int saves);
void dg_batch_bind_scratch(dg_batch *b, const deg_model *m, size_t M, int n_threads,
                           int saves, float *block);

/* Every segment's recurrent block of layer il (seg->rec[il]) := rec0 (n
 * floats; rec0 NULL: zeros). The training forward and the recurrent layers'
 * backward (which recompute from the initial state) start a layer with it. */
void dg_segs_rec_reset(const dg_batch *b, int il, const float *rec0, size_t n);

/* RMSNorm of n rows of dim floats (dg_rmsnorm per row, in parallel over rows
 * when n > 16: each row's arithmetic is the same either way). x, out may alias. */
void dg_rmsnorm_rows(float *out, const float *x, const float *w, size_t n, size_t dim,
                     float eps);

#endif
