/* Private layout of deg_cartridge (include/cartridge.h), shared by the
 * files of lib/cartridge. */
#ifndef DG_CARTRIDGE_INTERNAL_H
#define DG_CARTRIDGE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cartridge.h"

struct deg_cartridge {
    const deg_model *model;   /* borrowed */
    size_t p;                 /* prefix rows */
    int n_layer;
    size_t frozen;            /* rows [0, frozen) are constants */
    float **k, **v;           /* [n_layer] x [p, row(il)] (attention layers, row =
                                 dg_cartridge_row: the layer's n_head_kv * head_dim,
                                 Gemma 4's differ per layer; a recurrent layer's
                                 are empty: dg_cartridge_kv_n) */
    float **gk, **gv;         /* gradients, same shape (allocated with k/v) */
    float **mk, **mv;         /* Adam first moments */
    float **sk, **sv;         /* Adam second moments */
    /* Hybrids (docs/ARCHITECTURE.md "Cartridges on hybrids"): a recurrent
     * layer's part of the cartridge is the fixed-size block its layer starts
     * the cartridge's readers from (state.h layout: the state after the
     * prefix), trainable as a whole (no frozen part); rn[il] floats, 0 and
     * NULL blocks on attention layers. */
    size_t *rn;
    float **r, **gr, **mr, **sr;
    int64_t steps;
    deg_draft_ref *draft;     /* draft reference (corpus ids) or NULL; owned */
};

/* Floats of layer il's K/V rows: p * dg_cartridge_row on attention layers,
 * 0 on recurrent layers (and on Gemma 4's KV-sharing layers, which read an
 * earlier layer's rows). */
size_t dg_cartridge_kv_n(const deg_cartridge *c, int il);
/* Floats per K/V row of layer il (dg_layer.kv_row; 0 without K/V). */
size_t dg_cartridge_row(const deg_cartridge *c, int il);

/* Empty cartridge of p rows (zeroed rows, recurrent blocks, grads, moments). */
deg_status dg_cartridge_alloc(const deg_model *m, size_t p, deg_cartridge **out);

/* 64 lowercase hex chars + NUL: SHA-256 over the model's architecture,
 * hyper-parameters and a fixed sample of its weights (persist.c). */
void dg_model_fingerprint(const deg_model *m, char hex[65]);

/* The loss of cartridge training (distill_loss.c; spec cartridges.md,
 * "Objective"): sparse teacher targets (position t, token, teacher logprob)
 * read from the student's logits row t-1:
 *   loss = (1/N) sum_entries -exp(logprob) * log softmax(z[t-1])[token]
 * N = number of distinct supervised positions (a position's top-k entries
 * together are one supervised token). Only the rows t-1 of supervised
 * positions go through the final norm and LM head, in blocks of
 * DG_DISTILL_LOGIT_ROWS rows: no [T, vocab] block exists. A dg_train_loss_fn
 * (lib/grad/train.h) with ud = dg_distill_loss *; targets validated by the
 * caller (1 <= position < T, token in range). */
#define DG_DISTILL_LOGIT_ROWS 32
typedef struct dg_distill_loss {
    const deg_distill_target *targets;
    size_t n_targets;
} dg_distill_loss;
deg_status dg_distill_loss_fn(const deg_model *m, const float *x, size_t T, float *dx,
                              float *loss, void *ud);

/* Input checks shared by the single and composed entry points (w names the
 * caller in messages): ids in the vocabulary, targets at positions
 * [1, n_ids) with in-vocabulary tokens and finite logprob <= 0. */
deg_status dg_cartridge_check_inputs(const deg_model *m, const int32_t *ids, size_t n_ids,
                                     const deg_distill_target *tg, size_t n_tg, const char *w);
/* The packed form: segments non-empty summing to n_ids, no target at a
 * segment's first token (plus the checks above); ids/targets non-empty. */
deg_status dg_cartridge_check_packed(const deg_model *m, const int32_t *ids, size_t n_ids,
                                     const size_t *seg_lens, size_t n_segs,
                                     const deg_distill_target *targets, size_t n_targets,
                                     const char *w);

/* 1 if every row value of the cartridge is finite. */
int dg_cartridge_finite(const deg_cartridge *c);

#endif
