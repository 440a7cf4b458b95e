/* Growing arrays: dg_grow_cap's doubling rule and the overflow-checked reallocation (grow.h). */
#include "base/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

enum { FIRST_CAP = 16 };

size_t dg_grow_cap(size_t cap, size_t need)
{
    if (need <= cap) return cap;
    size_t c = cap ? cap : FIRST_CAP;
    while (c < need) {
        if (c > SIZE_MAX / 2) return need;
        c *= 2;
    }
    return c;
}

deg_status dg_resize(void *pp, size_t n, size_t elem)
{
    if (n == 0) n = 1;
    if (elem && n > SIZE_MAX / elem)
        return dg_fail(DEG_ERR_NOMEM, "an array of %zu elements of %zu bytes does not fit in memory",
                       n, elem);
    void *old;
    memcpy(&old, pp, sizeof old);
    size_t bytes = n * elem;
    void *q = realloc(old, bytes ? bytes : 1);
    if (!q)
        return dg_fail(DEG_ERR_NOMEM, "out of memory for an array of %zu elements of %zu bytes", n,
                       elem);
    memcpy(pp, &q, sizeof q);
    return DEG_OK;
}

deg_status dg_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return DEG_OK;
    size_t c = dg_grow_cap(*cap, need);
    DG_TRY(dg_resize(pp, c, elem));
    *cap = c;
    return DEG_OK;
}

deg_status dg_grow_all(void *const *arrs, const size_t *elems, size_t n_arr, size_t *cap,
                       size_t need)
{
    if (need <= *cap) return DEG_OK;
    size_t c = dg_grow_cap(*cap, need);
    for (size_t i = 0; i < n_arr; i++) DG_TRY(dg_resize(arrs[i], c, elems[i]));
    *cap = c;
    return DEG_OK;
}
