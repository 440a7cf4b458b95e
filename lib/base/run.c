/* run.c - cancel tokens, deadlines and the per-thread poll hook (run.h). */
#include "base/run.h"

#include <stdint.h>
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
    l.deadline_ms = DEG_DEFAULT_DEADLINE_MS;
    l.max_fields = DEG_DEFAULT_MAX_FIELDS;
    l.max_fork_tokens = DEG_DEFAULT_MAX_FORK_TOKENS;
    return l;
}

static void set_deadline(dg_limits *L, int64_t ms)
{
    L->deadline = dg_now() + (double)ms / 1000.0;
    L->deadline_ms = ms;
}

void dg_limits_init(dg_limits *L, const deg_run_limits *pub, size_t n_requests)
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
    L->fields_from = L->max_fields == DEG_DEFAULT_MAX_FIELDS ? DG_FROM_DEFAULT : DG_FROM_CALL;
    L->fork_tokens_from =
        L->max_fork_tokens == DEG_DEFAULT_MAX_FORK_TOKENS ? DG_FROM_DEFAULT : DG_FROM_CALL;
    if (pub->deadline_ms <= 0) return;
    int64_t ms = pub->deadline_ms;
    if (ms == DEG_DEFAULT_DEADLINE_MS) {
        L->deadline_from = DG_FROM_DEFAULT; /* per request of the call */
        ms = n_requests > (size_t)(INT64_MAX / ms) ? INT64_MAX : ms * (int64_t)(n_requests ? n_requests : 1);
    }
    set_deadline(L, ms);
}

/* a request option (> 0) tighter than the limit in force replaces it */
static int tighter(int64_t *cur, int64_t opt)
{
    if (opt <= 0 || (*cur > 0 && *cur <= opt)) return 0;
    *cur = opt;
    return 1;
}

void dg_limits_tighten(dg_limits *L, int64_t deadline_ms, int64_t max_fields,
                       int64_t max_fork_tokens)
{
    if (tighter(&L->max_fields, max_fields)) L->fields_from = DG_FROM_REQUEST;
    if (tighter(&L->max_fork_tokens, max_fork_tokens)) L->fork_tokens_from = DG_FROM_REQUEST;
    if (deadline_ms > 0) {
        double d = dg_now() + (double)deadline_ms / 1000.0;
        if (L->deadline == 0 || d < L->deadline) {
            set_deadline(L, deadline_ms);
            L->deadline_from = DG_FROM_REQUEST;
        }
    }
}

const char *dg_limit_hint(const dg_limits *L, dg_limit_kind which)
{
    /* [kind][DG_FROM_*] */
    static const char *const hint[3][3] = {
        {DG_LIMIT_HINT_MARK "raise deg_run_limits.deadline_ms (C) or deadline_ms in Python "
                            "(deg.fill(limits={\"deadline_ms\": N}), Model.generate(deadline_ms="
                            "N)), 0 = none",
         DG_LIMIT_HINT_MARK "it is libdeg's default deadline (DEG_DEFAULT_DEADLINE_MS, 10 min "
                            "per request of the call); set deg_run_limits.deadline_ms (C) or "
                            "deadline_ms in Python (deg.fill(limits={\"deadline_ms\": N}), "
                            "Model.generate(deadline_ms=N)), 0 = none",
         "; set by the request's options.deadline_ms (a request's options can only tighten "
         "the caller's limits)"},
        {DG_LIMIT_HINT_MARK "raise deg_run_limits.max_fields (C) or deg.fill(limits="
                            "{\"max_fields\": N}) (Python), 0 = none",
         DG_LIMIT_HINT_MARK "it is libdeg's default cap (DEG_DEFAULT_MAX_FIELDS); set "
                            "deg_run_limits.max_fields (C) or deg.fill(limits={\"max_fields\": "
                            "N}) (Python), 0 = none",
         "; set by the request's options.max_fields (a request's options can only tighten "
         "the caller's limits)"},
        {DG_LIMIT_HINT_MARK "raise deg_run_limits.max_fork_tokens (C) or deg.fill(limits="
                            "{\"max_fork_tokens\": N}) (Python), 0 = none",
         DG_LIMIT_HINT_MARK "it is libdeg's default cap (DEG_DEFAULT_MAX_FORK_TOKENS); set "
                            "deg_run_limits.max_fork_tokens (C) or deg.fill(limits="
                            "{\"max_fork_tokens\": N}) (Python), 0 = none",
         "; set by the request's options.max_fork_tokens (a request's options can only "
         "tighten the caller's limits)"},
    };
    unsigned from = which == DG_LIMIT_DEADLINE ? L->deadline_from
                    : which == DG_LIMIT_FIELDS ? L->fields_from : L->fork_tokens_from;
    return hint[which][from > 2 ? 0 : from];
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
        return dg_fail(DEG_ERR_LIMIT, "deadline of %lld ms passed during %s%s",
                       (long long)L->deadline_ms, phase, dg_limit_hint(L, DG_LIMIT_DEADLINE));
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
