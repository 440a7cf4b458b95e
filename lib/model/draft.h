/* Suffix automata over token ids: the draft sources of speculative decoding
 * (lib/model/spec.c; spec cartridges.md, "Batched self-study").
 *
 * A dg_sam is the suffix automaton (Blumer et al. 1985; the online
 * construction) of a token text that may grow one token at a time. Besides
 * the usual len/link it keeps, per state, firstpos: the end position of the
 * first occurrence of the state's strings. Two ways to draft from it:
 *   - a REFERENCE (the corpus of a cartridge, built once, then read-only and
 *     shareable between threads): a stream keeps its matching statistics
 *     (the state and length of the longest suffix of its text that occurs
 *     in the reference, dg_sam_match_step); the draft is what follows that
 *     occurrence in the reference;
 *   - the stream's OWN text (prompt + generated ids, appended as they are
 *     emitted): the longest suffix of the text that also occurred earlier is
 *     the state link(last) (every other state predates the last token, so
 *     its firstpos is an earlier occurrence); the draft is what followed it.
 * Transitions live in per-state edge lists (so a clone can copy them) with
 * an open-addressing hash on (state, token) for lookups. */
#ifndef DG_MODEL_DRAFT_H
#define DG_MODEL_DRAFT_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"

typedef struct dg_sam {
    int32_t *len, *link, *first_edge; /* per state */
    int64_t *firstpos;                /* per state: end index of the first occurrence */
    size_t n_states, cap_states;
    int32_t *e_from, *e_tok, *e_to, *e_next; /* edges */
    size_t n_edges, cap_edges;
    int32_t *hash;                    /* edge index or -1; hash_cap a power of two */
    size_t hash_cap;
    int32_t last;                     /* state of the whole text */
    int32_t *text;                    /* the indexed ids */
    size_t n_text, cap_text;
} dg_sam;

/* Empty automaton (the root state only), room for about n tokens. */
deg_status dg_sam_init(dg_sam *s, size_t n);
void dg_sam_free(dg_sam *s);
/* Append one id (ids are not range-checked here). DEG_ERR_NOMEM, or
 * DEG_ERR_RANGE past 2^30 tokens. */
deg_status dg_sam_extend(dg_sam *s, int32_t id);

/* Matching statistics of a stream against a reference automaton: the state
 * and length of the longest suffix of the stream's text occurring in it. */
typedef struct dg_sam_match {
    int32_t state;
    size_t len;
} dg_sam_match;
void dg_sam_match_step(const dg_sam *ref, dg_sam_match *m, int32_t id);

/* Continuation after the matched occurrence in the reference: *first = the
 * index in ref->text of the token that follows it, *avail = how many tokens
 * follow (0 = none), *match = the length of the suffix it continues (a
 * shorter suffix than m->len when the first occurrence of the whole match
 * ends the reference). */
void dg_sam_ref_continuation(const dg_sam *ref, const dg_sam_match *m, size_t *first,
                             size_t *avail, size_t *match);
/* Continuation in the automaton's own text: the longest suffix of the text
 * that also occurred earlier (length *match, 0 = none), followed at index
 * *first by *avail tokens of the text. */
void dg_sam_self_continuation(const dg_sam *s, size_t *first, size_t *avail, size_t *match);

/* The automaton of a public draft reference (borrowed; NULL for NULL). */
const dg_sam *dg_draft_ref_sam(const deg_draft_ref *ref);

#endif
