/* Private layout of deg_corpus and deg_selfstudy (include/cartridge.h,
 * "Self-study"), shared by corpus.c and selfstudy*.c. */
#ifndef DG_SELFSTUDY_INTERNAL_H
#define DG_SELFSTUDY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cartridge.h"
#include "model/sample.h"

struct deg_corpus {
    const deg_model *model;   /* borrowed */
    size_t n_docs;
    char **names;             /* [n_docs] owned */
    size_t *first;            /* [n_docs + 1]: document d = tokens [first[d], first[d+1]) */
    int32_t *ids;             /* [n] (capacity cap_ids) */
    size_t n, cap_ids;
    char *text;               /* the concatenated blocks, NUL-terminated */
    size_t text_len;
};

struct deg_selfstudy {
    const deg_corpus *corpus; /* borrowed */
    const deg_model *model;
    deg_selfstudy_params p;
    dg_rng rng;
    size_t *passages;         /* [2 * n_passages] token spans (first, end) */
    size_t n_passages;
    int32_t stop[2];          /* deg_model_stop_ids */
    size_t n_stop;
    deg_selfstudy_timing timing;
    int32_t placement;        /* deg_selfstudy_placement */
    size_t n_drawn;           /* conversations drawn */
    /* COVER placement (selfstudy_place.c): the cycle `cycle`, whose first
     * draw was draw cycle_first, visits the window starts slots[0..n_slots)
     * in order (NULL until a COVER draw needs them). */
    size_t width;             /* the grid's window W */
    size_t cycle, cycle_first;
    size_t *slots, n_slots;
};

/* The window start of draw s->n_drawn under COVER placement (the rule:
 * include/cartridge.h, deg_selfstudy_placement). Errors: DEG_ERR_NOMEM. */
deg_status dg_cover_window(deg_selfstudy *s, size_t *start);
/* The grid's window W for settings p. */
size_t dg_cover_width(const deg_selfstudy_params *p);

/* [*first, *end) of s[0..n) without leading and trailing ASCII whitespace. */
void dg_strip(const char *s, size_t n, size_t *first, size_t *end);
/* ids[0..n) decoded (deg_detokenize) as well-formed UTF-8 (dg_utf8_lossy);
 * malloc'd, NUL-terminated. */
deg_status dg_detokenize_lossy(const deg_model *m, const int32_t *ids, size_t n, char **out);

#endif
