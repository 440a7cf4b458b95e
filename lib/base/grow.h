/* Growing arrays: libdeg's one growth rule (capacity doubles from 16 elements) with size overflow checks. */
#ifndef DG_BASE_GROW_H
#define DG_BASE_GROW_H

#include <stddef.h>

#include "deg.h"

/* The capacity, in elements, that an array of cap elements grows to so that it holds
 * need: cap itself when need <= cap; else cap (16 when cap is 0) doubled until it is
 * at least need (need itself when doubling would pass SIZE_MAX). From 0 or a power of
 * two the result is a power of two, so hash tables size by it too. Where several parallel
 * arrays share one capacity, compute it once here and dg_resize each to it. */
size_t dg_grow_cap(size_t cap, size_t need);

/* Reallocate the array *pp to n elements of elem bytes each (contents kept up to the
 * smaller size; new elements uninitialised; n == 0 keeps one element so that a
 * successful call never yields NULL). pp is the address of the array's pointer (a
 * T **; object pointers share one representation on every platform deg builds for).
 * Errors (*pp unchanged): DEG_ERR_NOMEM with the message "out of memory for an array
 * of N elements of B bytes", or "an array of N elements of B bytes does not fit in
 * memory" when n * elem overflows size_t. */
deg_status dg_resize(void *pp, size_t n, size_t elem);

/* Make the array *pp, of *cap elements of elem bytes, hold at least need elements:
 * nothing when need <= *cap; else *cap becomes dg_grow_cap(*cap, need) and *pp is
 * reallocated (dg_resize). On failure *pp and *cap are unchanged and the status and
 * message are dg_resize's. Callers that know what the array holds add it with
 * dg_fail_context ("tokenize: out of memory for an array of ..."). */
deg_status dg_grow(void *pp, size_t *cap, size_t need, size_t elem);

/* dg_grow for n_arr parallel arrays that share the capacity *cap: arrs[i] is the
 * address of array i's pointer, elems[i] its element size. All are reallocated to
 * dg_grow_cap(*cap, need) elements; on failure *cap is unchanged (the arrays already
 * reallocated keep their contents and their larger blocks, freed as usual). */
deg_status dg_grow_all(void *const *arrs, const size_t *elems, size_t n_arr, size_t *cap,
                       size_t need);

/* dg_grow for an array ptr of capacity cap (a size_t lvalue), elements sized by ptr's
 * type. */
#define DG_GROW(ptr, cap, need) dg_grow(&(ptr), &(cap), (need), sizeof *(ptr))

#endif
