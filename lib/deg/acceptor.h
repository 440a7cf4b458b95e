/* acceptor.h - constrained-decoding acceptor of a generate leaf (spec §4,
 * §12.3 generate). Public API: deg_acceptor_* in include/deg.h.
 *
 * The leaf's pattern P has JSON Schema SEARCH semantics (it may match
 * anywhere: the contract's "(?s:.*?)(?:P)(?s:.*)"). It is compiled once with
 * the compiler's pattern options plus UCP (plan.h DG_PATTERN_PCRE2_OPTIONS;
 * the meaning the validator gives it), JIT-compiled for complete and
 * PARTIAL_HARD matching when the platform has a JIT.
 *
 *  prefix_ok(t) = cp(t) <= maxLength, and t can be extended to a text in
 *                 which P matches somewhere:
 *                 - always when t is empty or P is not anchored at the start
 *                   (PCRE2_INFO_ALLOPTIONS has no PCRE2_ANCHORED): a match
 *                   can still be appended;
 *                 - for an anchored P (^..., \A...): P matched at offset 0
 *                   with PCRE2_PARTIAL_HARD is complete or partial.
 *                 Matching the wrapped (?s:.*?)(?:P) partially instead would
 *                 accept every text (the lazy prefix always reaches the end
 *                 and reports a partial match), so "^[A-Z]{3}$" would accept
 *                 "abc": this form is exact for anchored patterns.
 *  eos_ok(t)    = t is complete valid UTF-8, minLength <= cp(t) <= maxLength
 *                 and P matches somewhere in t (pcre2_match searches).
 * A token may end inside a UTF-8 character: prefix_ok counts a truncated
 * final sequence as one code point and matches the complete characters
 * before it (the pending character is judged when a later token completes
 * it); eos_ok rejects it.
 * Cost: one pcre2_match per call, O(len) for typical patterns (see
 * bench/bench_acceptor.c), no allocation after dg_acceptor_new.
 * Limits: prefix_ok does not look ahead at the length budget, so a prefix
 * whose shortest completion is longer than maxLength is still accepted;
 * the generator must then stop at maxLength and fail (FillError).
 */
#ifndef DG_DEG_ACCEPTOR_H
#define DG_DEG_ACCEPTOR_H

#include "deg.h"

typedef struct deg_acceptor dg_acceptor;

#endif
