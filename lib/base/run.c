/* run.c - cancel tokens, deadlines and the per-thread poll hook (run.h). */
#include "base/run.h"

#include <stdlib.h>
#include <time.h>

#include "base/status.h"

double dg_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

deg_status deg_cancel_new(deg_cancel **out)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_cancel_new: out is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out) return dg_fail(DEG_ERR_NOMEM, "deg_cancel_new: out of memory");
    atomic_init(&(*out)->flag, 0);
    return DEG_OK;
}

void deg_cancel_free(deg_cancel *cancel) { free(cancel); }

void deg_cancel_set(deg_cancel *cancel)
{
    if (cancel) atomic_store(&cancel->flag, 1);
}

void deg_cancel_reset(deg_cancel *cancel)
{
    if (cancel) atomic_store(&cancel->flag, 0);
}

int deg_cancel_is_set(const deg_cancel *cancel)
{
    return cancel ? atomic_load(&((deg_cancel *)cancel)->flag) : 0;
}

deg_run_limits deg_run_limits_default(void)
{
    deg_run_limits l = {0};
    l.max_fields = DEG_DEFAULT_MAX_FIELDS;
    l.max_fork_tokens = DEG_DEFAULT_MAX_FORK_TOKENS;
    return l;
}

static int64_t tighter(int64_t a, int64_t b)
{
    if (a <= 0) return b > 0 ? b : 0;
    if (b <= 0) return a;
    return a < b ? a : b;
}

void dg_limits_init(dg_limits *L, const deg_run_limits *pub)
{
    *L = (dg_limits){0};
    deg_run_limits def;
    if (!pub) {
        def = deg_run_limits_default();
        pub = &def;
    }
    L->cancel = pub->cancel;
    L->max_fields = pub->max_fields > 0 ? pub->max_fields : 0;
    L->max_fork_tokens = pub->max_fork_tokens > 0 ? pub->max_fork_tokens : 0;
    dg_limits_tighten(L, pub->deadline_ms, 0, 0);
}

void dg_limits_tighten(dg_limits *L, int64_t deadline_ms, int64_t max_fields,
                       int64_t max_fork_tokens)
{
    L->max_fields = tighter(L->max_fields, max_fields);
    L->max_fork_tokens = tighter(L->max_fork_tokens, max_fork_tokens);
    if (deadline_ms > 0) {
        double d = dg_now() + (double)deadline_ms / 1000.0;
        if (L->deadline == 0 || d < L->deadline) {
            L->deadline = d;
            L->deadline_ms = deadline_ms;
        }
    }
}

int dg_limits_hit(const dg_limits *L)
{
    if (!L) return 0;
    if (L->cancel && deg_cancel_is_set(L->cancel)) return 1;
    return L->deadline > 0 && dg_now() >= L->deadline;
}

deg_status dg_limits_check(const dg_limits *L, const char *phase)
{
    if (!L) return DEG_OK;
    if (L->cancel && deg_cancel_is_set(L->cancel))
        return dg_fail(DEG_ERR_CANCELLED, "cancelled during %s", phase);
    if (L->deadline > 0 && dg_now() >= L->deadline)
        return dg_fail(DEG_ERR_LIMIT, "deadline of %lld ms passed during %s",
                       (long long)L->deadline_ms, phase);
    return DEG_OK;
}

deg_status dg_limits_poll(void *ctx) { return dg_limits_check(ctx, "prefill"); }

static _Thread_local dg_poll dg_poll_cur;

dg_poll dg_run_push(dg_poll_fn fn, void *ctx)
{
    dg_poll prev = dg_poll_cur;
    dg_poll_cur = (dg_poll){fn, ctx};
    return prev;
}

void dg_run_pop(dg_poll prev) { dg_poll_cur = prev; }

deg_status dg_run_poll(void) { return dg_poll_cur.fn ? dg_poll_cur.fn(dg_poll_cur.ctx) : DEG_OK; }
