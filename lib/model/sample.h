/* Sampling one token id from a logits row: greedy, temperature, top-k,
 * top-p, drawn from a seeded per-stream PRNG.
 *
 * The rule (same order as Hugging Face transformers' logits warpers:
 * temperature, then top-k, then top-p):
 *  - temperature == 0: greedy = argmax of the logits, ties to the lowest id.
 *    No random number is drawn.
 *  - otherwise the candidates are all ids in the order (logit descending,
 *    id ascending); -inf logits are never candidates. Their weights are
 *    w_i = exp((l_i - l_max) / temperature), computed in double.
 *  - top_k > 0 keeps the first top_k candidates.
 *  - top_p < 1 then keeps the shortest prefix of the survivors whose weight
 *    (normalised over the top-k survivors) reaches top_p: candidate j is kept
 *    iff the mass of the candidates before it is < top_p. At least one
 *    candidate is always kept.
 *  - one uniform u in [0, 1) is drawn from the stream and the first kept
 *    candidate whose cumulative weight exceeds u * (total kept weight) is
 *    chosen (cumulative sums in candidate order, in double).
 * The result is a function of (logits, params, stream state) only: no
 * dependence on threads, other rows or time.
 *
 * PRNG: xoshiro256** 1.0 (D. Blackman and S. Vigna, "Scrambled linear
 * pseudorandom number generators", ACM TOMS 2021; reference code at
 * https://prng.di.unimi.it/xoshiro256starstar.c), its state seeded from the
 * 64-bit seed by splitmix64 as the authors recommend
 * (https://prng.di.unimi.it/splitmix64.c). Uniform doubles take the top 53
 * bits: (x >> 11) * 2^-53.
 */
#ifndef DG_MODEL_SAMPLE_H
#define DG_MODEL_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"

/* One random stream. Plain value: copy it to fork the stream. */
typedef struct dg_rng {
    uint64_t s[4];
} dg_rng;

/* Seed the stream: the four state words are consecutive splitmix64 outputs
 * starting from state = seed (never all zero). */
void dg_rng_seed(dg_rng *rng, uint64_t seed);
/* Next 64-bit output of xoshiro256**. */
uint64_t dg_rng_next(dg_rng *rng);
/* Uniform double in [0, 1) with 53 random bits. */
double dg_rng_uniform(dg_rng *rng);
/* Uniform integer in [0, n) (n >= 1), unbiased: Lemire's multiply-shift
 * with rejection ("Fast random integer generation in an interval", ACM
 * TOMS 2019); draws one output, more only on a rejection. */
uint64_t dg_rng_below(dg_rng *rng, uint64_t n);
/* splitmix64: advances *state and returns the next output (exposed for the
 * test against the reference vectors). */
uint64_t dg_splitmix64(uint64_t *state);

/* Greedy choice: index of the largest value in logits[0..n), ties to the
 * lowest index; NaN entries are never chosen. Returns -1 if n <= 0 or every
 * entry is NaN. */
int32_t dg_sample_argmax(const float *logits, int32_t n);

/* Check the sampling fields of params (temperature finite and >= 0,
 * top_k >= 0, 0 < top_p <= 1). max_tokens and stop ids are not looked at.
 * Returns DEG_ERR_ARG with the field in the message. */
deg_status dg_sample_check(const deg_sample_params *params);

/* Scratch for sampling rows of n_vocab logits (O(n_vocab) memory, reused
 * across calls; one thread at a time). */
typedef struct dg_sampler dg_sampler;

/* Errors: DEG_ERR_ARG (n_vocab <= 0), DEG_ERR_NOMEM. */
deg_status dg_sampler_new(int32_t n_vocab, dg_sampler **out);
void dg_sampler_free(dg_sampler *s);

/* The kept candidate set of one logits row [n_vocab] for temperature > 0:
 * *n_kept ids in candidate order (logit desc, id asc) and their
 * probabilities renormalised over the kept set (sum 1 up to rounding).
 * *ids and *probs are borrowed from the sampler (valid until its next call).
 * Errors: DEG_ERR_ARG (params; temperature must be > 0 here),
 * DEG_ERR_NUMERIC (a NaN or +inf logit, or no finite logit). */
deg_status dg_sample_candidates(dg_sampler *s, const float *logits,
                                const deg_sample_params *params, size_t *n_kept,
                                const int32_t **ids, const double **probs);

/* Sample one id from a logits row [n_vocab] (rule in the file comment).
 * rng is advanced by one draw when temperature > 0, untouched when greedy.
 * Errors: DEG_ERR_ARG (params), DEG_ERR_NUMERIC (NaN/+inf logit or no finite
 * logit). */
deg_status dg_sample(dg_sampler *s, const float *logits, const deg_sample_params *params,
                     dg_rng *rng, int32_t *out_id);

#endif
