/* heads_grad.h - losses of deg contract §12.4 and their gradients with
 * respect to the fp32 heads of §12.3 (forward as in heads.c / fill_*.c), for
 * the frozen-backbone trainer (deg.train), and optionally with respect to the
 * fork hidden states the heads read (d_answer, d_rows: what the LoRA
 * backward of include/lora.h takes; the context rows are the frozen trunk's
 * and get none).
 *
 * Shapes (E = n_embd, D = DG_HEAD_DIM), Linear layout [out, in], fp32:
 *   a [E]        hidden state at ANSWER:
 *   opts [n, E]  hidden states at the end of each option / level line
 *   ctx [nc, E]  trunk hidden states of the addressable context tokens
 * Gradients are ADDED into a dg_heads_grad whose tensors have the same
 * shapes as dg_heads' (caller-owned, zeroed by the caller); each function
 * returns its loss (nats, double) and touches only its own head's tensors.
 * Forward logits use the runtime's fp32 dot order (dg_head_dot), softmaxes
 * run in double at temperature 1 (training; calibration fits T after).
 * Errors: none (arguments are the caller's contract; n >= 1, targets sum 1).
 */
#ifndef DG_DEG_HEADS_GRAD_H
#define DG_DEG_HEADS_GRAD_H

#include <stddef.h>

#include "deg/fill.h"

typedef struct dg_heads_grad {
    float *choice_q, *choice_k, *choice_u;
    float *score_q, *score_k, *score_u;
    float *noul_w, *noul_b;
    float *ext_qs, *ext_ks, *ext_qe, *ext_ke, *ext_null_w, *ext_null_b;
    float *count_w, *count_b;
    float *anchor_q, *anchor_k, *anchor_u, *anchor_b, *anchor_bias;
    /* Optional (NULL = not wanted), added into: d_answer [E] the gradient
     * w.r.t. a (every kind; x for count), d_rows [n, E] w.r.t. the option
     * rows opts (pointer heads only). */
    float *d_answer, *d_rows;
} dg_heads_grad;

/* decide (choice / score pointer head): KL(t || softmax(l)) with
 * l_i = q(a).k(o_i)/sqrt(D) + u.o_i; t [n] the target distribution. */
double dg_grad_pointer(const dg_heads *h, dg_heads_grad *g, int score, const float *a,
                       const float *opts, size_t n, const double *t);

/* decide (noul): logits [w.a + b, 0], KL([t_true, 1 - t_true] || softmax). */
double dg_grad_noul(const dg_heads *h, dg_heads_grad *g, const float *a, double t_true);

/* extract: start and end pointers over ctx plus the shared null logit
 * null_w.a + null_b as outcome nc. Loss = -log sum_{pos} p_start -
 * log sum_{pos} p_end (every alternative a positive). pos_start / pos_end
 * hold token indices in [0, nc]; nc = the null outcome (absent gold). */
double dg_grad_extract(const dg_heads *h, dg_heads_grad *g, const float *a, const float *ctx,
                       size_t nc, const size_t *pos_start, size_t n_ps, const size_t *pos_end,
                       size_t n_pe);

/* extract inside an anchored item (§12.3, §12.6): as dg_grad_extract with
 * the anchored-extract bias B[start|end, inside, bucket(t - anchor)] on the
 * context logits (inside = anchor <= t < rend); also adds into
 * g->anchor_bias. */
double dg_grad_extract_anchored(const dg_heads *h, dg_heads_grad *g, const float *a,
                                const float *ctx, size_t nc, size_t anchor, size_t rend,
                                const size_t *pos_start, size_t n_ps, const size_t *pos_end,
                                size_t n_pe);

/* anchor (§12.4): one anchored array instance. l_t = qa(a).ka(c_t)/sqrt(D) +
 * ua.c_t + b over the region's tokens t in [r0, r1) (as dg_anchor_logits);
 * loss = sum_t BCE(sigmoid(l_t), [t is a gold item start]) / (1 + number of
 * distinct gold starts). starts[n_starts] are token indices in [r0, r1);
 * none = the hard negative (an empty gold array). The optional anchor_count
 * loss is dg_grad_count on the array's count fork with lo = minItems,
 * hi = min(maxItems or DG_COUNT_MAX, DG_COUNT_MAX) and target = min(gold
 * count, hi) (the top class then means "at least that many"). */
double dg_grad_anchor(const dg_heads *h, dg_heads_grad *g, const float *a, const float *ctx,
                      size_t r0, size_t r1, const size_t *starts, size_t n_starts);

/* count: CE of `target` over the classes [lo, hi] of l_c = w_c.x + b_c
 * (0 <= lo <= target <= hi <= DG_COUNT_MAX). */
double dg_grad_count(const dg_heads *h, dg_heads_grad *g, const float *x, int lo, int hi,
                     int target);

#endif
