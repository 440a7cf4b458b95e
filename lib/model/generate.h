/* Checks and the stop rule shared by the decode loops (generate.c, spec.c). */
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

/* 1 if id is one of stops[0..n). */
static inline int dg_is_stop(const int32_t *stops, size_t n, int32_t id)
{
    for (size_t j = 0; j < n; j++)
        if (stops[j] == id) return 1;
    return 0;
}

#endif
