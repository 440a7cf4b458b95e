/* Model state: K/V caches of trunks and forks, and the batched forward over
 * rows that each extend one cache (the trunk's on prefill, a fork's on feed)
 * while attending to an optional read-only prefix cache (the fork's trunk). */
#ifndef DG_MODEL_STATE_H
#define DG_MODEL_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"
#include "lora.h"

/* Growable per-layer K/V rows. k[il] and v[il] are [cap, n_head_kv*head_dim]
 * f32; rows [0, len) are valid. Keys are stored after RoPE. */
typedef struct dg_kv {
    float **k, **v;     /* [n_layer] each */
    size_t len, cap;
    int n_layer;
    size_t row;         /* floats per row = n_head_kv * head_dim */
    size_t *mapped;     /* [2 * n_layer] (k, v per layer): mapping length of a
                           large array (mmap'd, trunk.c), 0 for a heap block */
} dg_kv;

deg_status dg_kv_init(dg_kv *kv, const deg_model *m);
/* Make room for at least n rows (doubling; contents kept). */
deg_status dg_kv_reserve(dg_kv *kv, size_t n);
void dg_kv_free(dg_kv *kv);

struct deg_trunk {
    const deg_model *model;
    dg_kv kv;
    size_t n_forks;          /* live forks: prefill is refused while > 0 */
    float *last_hidden;      /* [n_embd] final-norm hidden of the last token */
};

struct deg_fork {
    deg_trunk *trunk;
    dg_kv kv;                /* own tokens' K/V */
    float *hidden;           /* [hidden_cap, n_embd] final-norm hidden, own tokens */
    size_t hidden_cap;
    float *last_logits;      /* [n_vocab] cache, valid if has_last_logits */
    int has_last_logits;
    const deg_lora *lora;    /* adapters of its rows (borrowed) or NULL */
    int32_t adapter;         /* adapter index, -1 = none (deg_fork_set_adapter) */
};

/* One row of a batched forward: tokens ids[0..n) appended to own at
 * positions prefix->len + own->len + i, attending to prefix rows [0, len)
 * (may be NULL) then own rows causally. */
typedef struct dg_row {
    const dg_kv *prefix;
    dg_kv *own;
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

/* Ids must already be validated. Errors: DEG_ERR_NOMEM. */
deg_status dg_forward(const deg_model *m, const dg_row *rows, size_t n_rows);

/* logits [n, n_vocab] = LM head of final-norm hidden [n, n_embd]. */
deg_status dg_lm_head(const deg_model *m, const float *hidden, size_t n, float *logits);

#endif
