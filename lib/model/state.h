/* Model state of trunks and forks (K/V rows of attention layers, fixed-size
 * blocks of recurrent layers), and the batched forward over rows that each
 * extend one state (the trunk's on prefill, a fork's on feed) while
 * attending to an optional read-only prefix (the fork's trunk's K/V). */
#ifndef DG_MODEL_STATE_H
#define DG_MODEL_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"
#include "lora.h"

/* The model state of one sequence (a trunk's tokens, or a fork's own
 * tokens), per layer, as the layer kind needs (§12.1, §12.2):
 *  - attention layers (dg_layer.has_kv): growable K/V rows. k[il] and v[il]
 *    are [cap, row[il]] f32, row[il] = the layer's n_head_kv * head_dim (Gemma 4's
 *    layers differ); rows [0, len) are valid;
 *    keys are stored after RoPE. k[il] = v[il] = NULL for other layers.
 *  - recurrent layers (dg_layer.state_floats > 0: Gated DeltaNet, short
 *    convolution): a fixed-size f32 block rec[il] of rec_n[il] floats (the
 *    recurrent state and/or the convolution tail, laid out by the layer's
 *    file), updated in place token by token. NULL where state_floats is 0.
 * len counts the tokens the state has seen (every layer sees every token).
 * A fork's state starts as a copy of its trunk's fixed-size blocks
 * (dg_state_copy_fixed) and reads the trunk's K/V by reference (dg_row.prefix).
 * Batches are packed without padding (rows are stacked, layer.h), so no
 * padded position ever writes K/V or advances a recurrent state. */
typedef struct dg_state {
    float **k, **v;     /* [n_layer] each */
    size_t len, cap;
    int n_layer;
    size_t *row;        /* [n_layer] floats per K/V row of layer il (dg_layer.kv_row:
                           n_head_kv * head_dim of the layer; 0 without K/V) */
    size_t *mapped;     /* [2 * n_layer] (k, v per layer): mapping length of a
                           large array (mmap'd, state.c), 0 for a heap block */
    float **rec;        /* [n_layer] fixed-size recurrent blocks or NULL */
    size_t *rec_n;      /* [n_layer] floats in rec[il] */
    unsigned char *has_kv; /* [n_layer] 1: the layer keeps K/V rows */
} dg_state;

/* Errors: DEG_ERR_NOMEM. The fixed-size blocks start at zero (the initial
 * state of every recurrent layer deg runs). */
deg_status dg_state_init(dg_state *st, const deg_model *m);
/* Make room for at least n K/V rows (doubling; contents kept). */
deg_status dg_state_reserve(dg_state *st, size_t n);
void dg_state_free(dg_state *st);
/* dst's fixed-size blocks = src's (same model); K/V rows untouched. */
void dg_state_copy_fixed(dg_state *dst, const dg_state *src);
/* 1 if the model has a layer without K/V or with a fixed-size block (a
 * hybrid: its state is not K/V rows alone). */
int dg_model_has_recurrent(const deg_model *m);
/* K/V rows [first, first + n) of attention layer il, copied out to / in from
 * k, v [n, row[il]] (write: rows must be reserved; len is the caller's to set). */
void dg_state_get_kv(const dg_state *st, int il, size_t first, size_t n, float *k, float *v);
void dg_state_put_kv(dg_state *st, int il, size_t first, size_t n, const float *k,
                     const float *v);

/* deg_trunk_prefill that also writes the final-norm hidden states of the new tokens
 * to hidden [n_ids, n_embd] (fp32, caller-owned): the fill's trunk keeps its context
 * rows for the extract pointers. Errors: as deg_trunk_prefill. */
deg_status dg_trunk_prefill_hidden(deg_trunk *trunk, const int32_t *ids, size_t n_ids,
                                   float *hidden);

/* K/V rows of a trunk as data (cartridges: lib/cartridge). dg_trunk_get_kv copies rows
 * [first, first + n) of attention layer il out to k, v [n, n_head_kv * head_dim];
 * dg_trunk_set_kv makes an empty trunk hold len rows written by put(ud, il, k, v) for
 * each attention layer il (k, v: [len, n_head_kv * head_dim] to fill), with no last
 * hidden state (NaN: no token produced the last row, so a fork must be fed at least
 * one token before its logits mean anything). Errors: DEG_ERR_STATE (the trunk is not
 * empty), DEG_ERR_NOMEM. */
void dg_trunk_get_kv(const deg_trunk *trunk, int il, size_t first, size_t n, float *k,
                     float *v);
deg_status dg_trunk_set_kv(deg_trunk *trunk, size_t len,
                           void (*put)(void *ud, int il, float *k, float *v), void *ud);
/* A new trunk holding a copy of src's state (K/V rows, recurrent blocks, last
 * hidden state; no forks): prefilling more tokens into it gives bitwise what
 * one prefill of src's tokens and those would (rows do not depend on where a
 * prefill is split). Self-study clones a chunk's trunk for each prompt that
 * starts with it. Errors: DEG_ERR_NOMEM (*out = NULL). */
deg_status dg_trunk_clone(const deg_trunk *src, deg_trunk **out);
/* A trunk's state as the read-only prefix of a pass that attends to it without
 * copying it (the LoRA tape, lib/grad: dg_train_args.pk / pv / prec): per layer il,
 * k[il], v[il] its K/V rows [len, n_head_kv * head_dim] (NULL for a layer without
 * K/V) and rec[il] its fixed-size recurrent block (NULL where the layer has none).
 * Borrowed: valid while the trunk is neither prefilled again nor freed. */
typedef struct dg_trunk_view {
    const deg_model *model;
    size_t len;
    const float *const *k, *const *v, *const *rec;
} dg_trunk_view;
dg_trunk_view dg_trunk_view_of(const deg_trunk *trunk);
/* A hybrid's recurrent layer il: its fixed-size block of the trunk's state
 * (state_floats of dg_layer) copied out / in (cartridges on hybrids). */
void dg_trunk_get_rec(const deg_trunk *trunk, int il, float *out);
void dg_trunk_set_rec(deg_trunk *trunk, int il, const float *in);

struct deg_trunk {
    const deg_model *model;
    dg_state st;
    size_t n_forks;          /* live forks: prefill is refused while > 0 */
    float *last_hidden;      /* [n_embd] final-norm hidden of the last token */
};

struct deg_fork {
    deg_trunk *trunk;
    dg_state st;             /* own tokens' K/V; recurrent blocks (from the trunk's) */
    float *hidden;           /* [hidden_cap, n_embd] final-norm hidden, own tokens */
    size_t hidden_cap;
    float *last_logits;      /* [n_vocab] cache, valid if has_last_logits */
    int has_last_logits;
    const deg_lora *lora;    /* adapters of its rows (borrowed) or NULL */
    int32_t adapter;         /* adapter index, -1 = none (deg_fork_set_adapter) */
};

/* One row of a batched forward: tokens ids[0..n) appended to own at
 * positions prefix->len + own->len + i, attending to prefix K/V rows
 * [0, len) (may be NULL) then own rows causally; recurrent layers continue
 * from own's fixed-size blocks (which must already hold the prefix's final
 * blocks: a fork copies them at creation). */
typedef struct dg_row {
    const dg_state *prefix;
    dg_state *own;
    const int32_t *ids;
    size_t n;
    float *logits;       /* [n, n_vocab] or NULL */
    float *last_logits;  /* [n_vocab] logits of the last token, or NULL */
    float *hidden;       /* [n, n_embd] final-norm hidden or NULL */
    float *last_hidden;  /* [n_embd] final-norm hidden of the last token, or NULL */
    const deg_lora *lora;/* LoRA adapters of the row's tokens, or NULL */
    int adapter;         /* adapter index in lora, -1 = none */
} dg_row;

/* Tokens per forward pass: bounds scratch memory; longer inputs are split
 * into passes (a row may span several; rows are independent, so the numbers
 * do not depend on where the split falls). */
#define DG_PASS_TOKENS 256
/* Rows per LM-head GEMM (bounds the logits scratch to this many rows). */
#define DG_LOGIT_ROWS 32

/* Test-only probe (measurements against transformers' per-layer hidden
 * states, tests/goldens/probe_layers.c): when set, called in every pass
 * with the pass's M stacked token rows x [M, n_embd] after the embeddings
 * (and the architecture's begin_pass: il = -1), after each layer il, and
 * after the final norm (il = n_layer). NULL (the default) in the library's
 * own use; not thread-safe, not public. */
extern void (*dg_forward_probe)(int il, const float *x, size_t M, size_t E);

/* Ids must already be validated. Errors: DEG_ERR_NOMEM. */
deg_status dg_forward(const deg_model *m, const dg_row *rows, size_t n_rows);

/* logits [n, n_vocab] = LM head of final-norm hidden [n, n_embd]. */
deg_status dg_lm_head(const deg_model *m, const float *hidden, size_t n, float *logits);
/* Its backward (training losses): dlogits [n, n_vocab] the gradient at the
 * returned logits (soft-capped ones: scaled in place by the cap's derivative
 * 1 - (logits / c)^2, so logits [n, n_vocab] are dg_lm_head's output) ->
 * dhidden [n, n_embd] (overwritten). Errors: dg_weight_backward_x's. */
deg_status dg_lm_head_backward(const deg_model *m, const float *logits, float *dlogits, size_t n,
                               float *dhidden);

#endif
