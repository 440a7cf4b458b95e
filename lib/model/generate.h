/* The library's batched decode loop (dg_forks_decode: deg_forks_generate and the
 * fill's generate phase), and the checks and stop rule shared by the decode loops
 * (generate.c, spec.c). */
#ifndef DG_MODEL_GENERATE_H
#define DG_MODEL_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"

/* The argument checks of deg_forks_generate (w names the caller): non-NULL
 * arrays, distinct forks of one model, valid sample params, max_tokens > 0,
 * stop_ids given when counted, out_ids rows non-NULL. Zeroes n_out. */
deg_status dg_generate_check(deg_fork *const *forks, size_t n_forks,
                             const deg_sample_params *params, int32_t *const *out_ids,
                             size_t *n_out, const char *w);

/* A decode's per-row token choice and step hooks (dg_forks_decode). ud is passed
 * to each. */
typedef struct dg_decode {
    /* Row i's next token this step: *feed = 1 and *id to feed it; *feed = 0: the
     * row is done (it is not asked again). The row's logits are the decode's
     * logits row i when the decode has them, else deg_fork_logits of its fork.
     * A status other than DEG_OK ends the decode with it. */
    deg_status (*choose)(void *ud, size_t i, int32_t *id, int *feed);
    /* May be NULL. Before each step: a status other than DEG_OK ends the decode. */
    deg_status (*step_begin)(void *ud);
    /* May be NULL. After each step (its feed, if any row fed). */
    void (*step_end)(void *ud);
    /* May be NULL. The status of each deg_forks_feed, mapped: what it returns
     * goes on (DEG_OK) or ends the decode (e.g. the fill's run poll stopping the
     * feed of rows whose requests each fail on their own: DEG_OK). */
    deg_status (*fed)(void *ud, deg_status st);
    void *ud;
} dg_decode;

/* THE decode loop of the library: rows decode in lockstep. prompts (NULL: none)
 * gives each row's ids fed first (n_prompt[i] may be 0), all rows in one
 * deg_forks_feed; then per step every row not done chooses its next token
 * (d->choose: the library's sampler with its stop ids and max_tokens in
 * deg_forks_generate, the fill's acceptor-filtered candidates in
 * lib/deg/fill_generate.c) and the rows that chose one are fed it in one
 * deg_forks_feed, until no row feeds. deg_forks_feed's rows are batch-invariant,
 * so a row's tokens depend on its fork and its choice only, never on the other
 * rows. logits (NULL: none) [n, n_vocab]: each feed writes row i's logits after
 * its last token to row i (rows not fed keep theirs). Errors: the feeds', the
 * hooks'. */
deg_status dg_forks_decode(deg_fork *const *forks, size_t n, const int32_t *const *prompts,
                           const size_t *n_prompt, float *logits, const dg_decode *d);

/* Row i's logits [n_vocab] from which its token j (0-based, of this decode) is
 * about to be chosen: the logits after the fork's state before the decode and
 * its tokens 0..j-1. Borrowed for the call. A status other than DEG_OK ends the
 * decode with it. */
typedef deg_status (*dg_logits_seen)(void *ud, size_t i, size_t j, const float *logits);

/* deg_forks_generate (no stats, the default limits) that shows every row's
 * logits to seen before each of its tokens is chosen (self-study: bot B's
 * decode yields the teacher's targets, selfstudy_bots.c). The ids are those of
 * deg_forks_generate. */
deg_status dg_forks_generate_seen(deg_fork *const *forks, size_t n_forks,
                                  const deg_sample_params *params, int32_t *const *out_ids,
                                  size_t *n_out, dg_logits_seen seen, void *ud);

/* 1 if id is one of stops[0..n). */
static inline int dg_is_stop(const int32_t *stops, size_t n, int32_t id)
{
    for (size_t j = 0; j < n; j++)
        if (stops[j] == id) return 1;
    return 0;
}

#endif
