/* The lean acceptance gate of speculative decoding (spec cartridges.md,
 * "Batched self-study": drafts off below 35% rolling acceptance over 16
 * drafted tokens, 32-token re-probe; parameters in deg_spec_params). One per
 * stream; used by lib/model/spec.c, unit-tested in tests/c/test_spec.c. */
#ifndef DG_MODEL_SPEC_GATE_H
#define DG_MODEL_SPEC_GATE_H

#include <stdint.h>
#include <string.h>

#include "deg.h"

/* The lean acceptance gate of one stream: a ring of the last `window`
 * drafted tokens' outcomes (bit = kept). */
typedef struct dg_spec_gate {
    uint64_t ring;
    int n, pos;      /* outcomes held (<= window), next slot */
    int off;         /* drafting off */
    int off_ids;     /* ids decoded since it turned off */
} dg_spec_gate;

static inline void dg_spec_gate_record(dg_spec_gate *g, const deg_spec_params *sp, int kept)
{
    uint64_t bit = (uint64_t)1 << g->pos;
    g->ring = kept ? g->ring | bit : g->ring & ~bit;
    g->pos = (g->pos + 1) % sp->gate_window;
    if (g->n < sp->gate_window) g->n++;
}

/* After a round's outcomes: turn off when the window is full and low. */
static inline int dg_spec_gate_check(dg_spec_gate *g, const deg_spec_params *sp)
{
    if (!sp->gate || g->off || g->n < sp->gate_window) return 0;
    int kept = __builtin_popcountll(g->ring);
    if ((float)kept < sp->gate_min_acceptance * (float)sp->gate_window) {
        g->off = 1;
        g->off_ids = 0;
        return 1;
    }
    return 0;
}

/* n ids decoded with drafting off: re-probe with an empty window after
 * gate_reprobe of them. */
static inline void dg_spec_gate_idle(dg_spec_gate *g, const deg_spec_params *sp, size_t n)
{
    if (!g->off) return;
    g->off_ids += (int)n;
    if (g->off_ids >= sp->gate_reprobe) memset(g, 0, sizeof *g);
}

#endif
