/* Where self-study draws place their chunks: the spec's uniform start or
 * COVER placement's shuffled cycles of windows tiling the corpus
 * (include/cartridge.h, deg_selfstudy_placement; issue 13). */
#include <stdlib.h>

#include "base/status.h"
#include "cartridge/selfstudy_internal.h"

/* The seed of cycle c's stream ("cover" in ASCII, then the fleet's
 * round_seed mixing). */
#define COVER_SALT 0x636F766572ULL

size_t dg_cover_width(const deg_selfstudy_params *p)
{
    size_t a = (size_t)p->max_a, c = (size_t)p->chunk_min;
    if (p->recall >= 1.0f) return a;
    if (p->recall <= 0.0f) return c;
    return a < c ? a : c;
}

/* Cycle c's stream, advanced past its offset draw; *offset = o. */
static dg_rng cycle_stream(const deg_selfstudy *s, size_t c, size_t *offset)
{
    dg_rng r;
    dg_rng_seed(&r, (s->p.seed ^ COVER_SALT) * 1000003ULL + (uint64_t)c);
    *offset = c ? (size_t)dg_rng_below(&r, s->width) : 0;
    return r;
}

/* Windows of a grid with offset o over n tokens: 0, then o + kW in (0, n). */
static size_t n_windows(size_t n, size_t w, size_t o)
{
    if (o == 0) return (n + w - 1) / w;
    return o < n ? 1 + (n - o + w - 1) / w : 1;
}

/* slots = cycle c's window starts in visiting order. */
static deg_status build_cycle(deg_selfstudy *s, size_t c)
{
    size_t n = s->corpus->n, w = s->width, o;
    dg_rng r = cycle_stream(s, c, &o);
    size_t k = n_windows(n, w, o);
    size_t *slots = malloc(k * sizeof *slots);
    if (!slots)
        return dg_fail(DEG_ERR_NOMEM, "deg_selfstudy: out of memory for %zu cover windows", k);
    slots[0] = 0;
    for (size_t j = 1; j < k; j++) slots[j] = o ? o + (j - 1) * w : j * w;
    for (size_t j = k - 1; j >= 1; j--) {
        size_t t = (size_t)dg_rng_below(&r, (uint64_t)j + 1), v = slots[j];
        slots[j] = slots[t];
        slots[t] = v;
    }
    free(s->slots);
    s->slots = slots;
    s->n_slots = k;
    s->cycle = c;
    return DEG_OK;
}

deg_status dg_cover_window(deg_selfstudy *s, size_t *start)
{
    size_t k = s->n_drawn;
    if (!s->slots || k < s->cycle_first) { /* first use, or moved back: from cycle 0 */
        size_t c = 0, first = 0, o;
        for (;;) { /* the cycle draw k falls in (each cycle's size from its offset) */
            (void)cycle_stream(s, c, &o);
            size_t m = n_windows(s->corpus->n, s->width, o);
            if (k - first < m) break;
            first += m;
            c++;
        }
        DG_TRY(build_cycle(s, c));
        s->cycle_first = first;
    }
    while (k - s->cycle_first >= s->n_slots) {
        size_t first = s->cycle_first + s->n_slots;
        DG_TRY(build_cycle(s, s->cycle + 1));
        s->cycle_first = first;
    }
    *start = s->slots[k - s->cycle_first];
    return DEG_OK;
}

deg_status deg_selfstudy_set_placement(deg_selfstudy *s, int32_t placement)
{
    if (!s) return dg_fail(DEG_ERR_ARG, "deg_selfstudy_set_placement: NULL study");
    if (placement != DEG_SELFSTUDY_PLACE_RANDOM && placement != DEG_SELFSTUDY_PLACE_COVER)
        return dg_fail(DEG_ERR_ARG, "deg_selfstudy_set_placement: placement %d is neither "
                       "RANDOM (0) nor COVER (1)", placement);
    s->placement = placement;
    return DEG_OK;
}

int32_t deg_selfstudy_get_placement(const deg_selfstudy *s)
{
    return s ? s->placement : DEG_SELFSTUDY_PLACE_RANDOM;
}

size_t deg_selfstudy_n_drawn(const deg_selfstudy *s) { return s ? s->n_drawn : 0; }

deg_status deg_selfstudy_set_n_drawn(deg_selfstudy *s, size_t n)
{
    if (!s) return dg_fail(DEG_ERR_ARG, "deg_selfstudy_set_n_drawn: NULL study");
    s->n_drawn = n; /* the cycle is found again at the next COVER draw */
    free(s->slots);
    s->slots = NULL;
    s->n_slots = 0;
    s->cycle = s->cycle_first = 0;
    return DEG_OK;
}
