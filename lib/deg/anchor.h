/* anchor.h - position-anchored array items (deg contract §12.3 anchor head,
 * §12.6): the anchor head's logits over a region of context tokens, the
 * anchored-extract bias, and the rules that turn anchor logits into item
 * anchors (threshold / count_peaks / hybrid). Pure functions of their inputs
 * (no batch, no clock), so every array decision is deterministic and
 * batch-invariant (§10). The fork plumbing (anchor forks, regions, locators)
 * is in fill_arrays.c and fill_forks.c.
 *
 * Shapes: E = n_embd, D = DG_HEAD_DIM, fp32, Linear layout [out, in].
 *   a [E]        hidden state at ANSWER: of the array's anchor fork
 *   ctx [nc, E]  trunk hidden states of the context tokens (c_t)
 */
#ifndef DG_DEG_ANCHOR_H
#define DG_DEG_ANCHOR_H

#include <stddef.h>
#include <stdint.h>

#include "deg/fill.h"

/* Non-maximum suppression radius of count_peaks, in tokens (§12.6 PEAK_RADIUS). */
#define DG_PEAK_RADIUS 4
/* Tokens of context text in an anchored item's locator line (§12.6). */
#define DG_LOCATOR_TOKENS 24

/* Bucket of an offset d = t - anchor (tokens) for the anchored-extract bias:
 * the number of edges <= d among -256 -64 -16 -4 0 1 2 4 8 16 32 64 128 256
 * (§12.3), i.e. 0 (d < -256) .. DG_ANCHOR_BUCKETS - 1 (d >= 256). */
int dg_anchor_bucket(int64_t d);

/* Anchor logits of context tokens [r0, r1):
 *   out[t - r0] = qa(a) . ka(c_t) / sqrt(D) + ua . c_t + b      (§12.3)
 * computed as w . c_t + b with w = ka^T qa(a) / 16 + ua (fixed-order fp32;
 * the same function of (a, c_t) in every batch). Errors: DEG_ERR_NOMEM. */
deg_status dg_anchor_logits(const dg_heads *h, const float *a, const float *ctx, size_t r0,
                            size_t r1, float *out);
/* w [E] of dg_anchor_logits (exposed for the gradient). */
void dg_anchor_query(const dg_heads *h, const float *a, float *w);

/* Anchored-extract bias (§12.3): for the start (w = 0) and end (w = 1)
 * logits l[nc] of an extract fork inside an anchored item with anchor token
 * `anchor` and region [anchor, rend): l[t] += B[w][inside][bucket(t - anchor)],
 * inside = anchor <= t < rend. B = h->anchor_bias [2, 2, DG_ANCHOR_BUCKETS]. */
void dg_anchor_bias_add(const dg_heads *h, int w, size_t anchor, size_t rend, float *l,
                        size_t nc);

/* Item anchors from a region's anchor logits (§12.6).
 *   mode       a deg_array_decode (threshold / count_peaks / hybrid)
 *   min_items  minItems (>= 0)
 *   cap        maxItems, else options.max_items, else -1 (no cap)
 *   count      the count fork's N (count_peaks / hybrid; already resolved by
 *              dg_anchor_count_n), ignored by threshold
 * Rules:
 *   threshold: tokens with logit > 0 (p > 0.5) are marked; each run of
 *     adjacent marked tokens is one item at its best token (first maximum).
 *     Fewer than min_items: the best remaining tokens not adjacent to a
 *     chosen one are added. More than cap: the highest are kept.
 *   count_peaks: the N best local maxima (logit >= every logit within
 *     DG_PEAK_RADIUS) with non-maximum suppression (no two anchors within
 *     DG_PEAK_RADIUS), then the best remaining tokens outside every radius,
 *     then (our rule; the spec is silent) the best remaining tokens at all,
 *     until N anchors or the region is exhausted.
 *   hybrid: threshold, unless no token has logit > 0 and N > 0: count_peaks.
 * "Best" = higher logit, ties to the earlier token. out[n] receives region
 * offsets (0 .. n - 1) in ascending order; *n_out may be < min_items when the
 * region has too few usable tokens (the caller fails or drops, §12.6).
 * Errors: DEG_ERR_NOMEM. */
deg_status dg_anchor_pick(const float *logits, size_t n, int mode, int64_t min_items,
                          int64_t cap, int64_t count, size_t *out, size_t *n_out);

/* Number of threshold items (runs of logit > 0) of logits[n]. */
size_t dg_anchor_runs(const float *logits, size_t n);

/* count_peaks' N (§12.6) from the count head's logits lg[DG_COUNT_MAX + 1]
 * at temperature T: argmax (first maximum) over [min_items, top], top =
 * min(cap (or DG_COUNT_MAX when cap < 0), DG_COUNT_MAX); at the saturated top
 * class the threshold count `runs` when larger; then capped by cap. A
 * min_items beyond DG_COUNT_MAX gives min_items (the count head cannot say
 * more; the anchors decide). */
int64_t dg_anchor_count_n(const float *lg, double T, int64_t min_items, int64_t cap, size_t runs);

/* The count classes dg_anchor_count_n reads (§12.6 count_peaks): [min_items,
 * top], top = min(cap (or DG_COUNT_MAX when cap < 0), DG_COUNT_MAX), at least
 * min_items. Returns 0 when min_items is beyond DG_COUNT_MAX (no class to
 * read: the anchors decide); the trainer uses it for the anchored count fork. */
int dg_anchor_count_range(int64_t min_items, int64_t cap, int64_t *lo, int64_t *hi);

#endif
