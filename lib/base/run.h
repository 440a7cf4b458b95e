/* run.h - work limits of one call: cancel tokens, deadlines, and the
 * per-thread poll hook that long loops (forward passes, fork batches, decode
 * steps) call between units of work. Public side: deg_cancel_* and
 * deg_run_limits in include/deg.h. */
#ifndef DG_BASE_RUN_H
#define DG_BASE_RUN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "deg.h"

struct deg_cancel {
    atomic_int flag;
};

/* Where a limit in force came from: the caller's deg_run_limits, libdeg's
 * default (no limits given, or a value equal to the default), or the
 * request's own options (tighter than the caller's). Its message says how to
 * lift it accordingly (dg_limit_hint). */
enum { DG_FROM_CALL = 0, DG_FROM_DEFAULT, DG_FROM_REQUEST };
/* Which limit, for dg_limit_hint. */
typedef enum dg_limit_kind { DG_LIMIT_DEADLINE = 0, DG_LIMIT_FIELDS, DG_LIMIT_FORK_TOKENS } dg_limit_kind;

/* A call's limits in absolute form: deadline = CLOCK_MONOTONIC seconds (0 =
 * none); deadline_ms kept for the message; *_from: DG_FROM_* of each. */
typedef struct dg_limits {
    const deg_cancel *cancel;
    double deadline;
    int64_t deadline_ms;
    int64_t max_fields, max_fork_tokens; /* 0 = none */
    unsigned char deadline_from, fields_from, fork_tokens_from;
} dg_limits;

/* Monotonic clock in seconds. */
double dg_now(void);

/* Absolute limits from a public struct (NULL = deg_run_limits_default()), the deadline counted
 * from now. n_requests: requests sharing the call (deg_fill_many_ex; 1 otherwise): libdeg's
 * default deadline is per request, so it is multiplied by n_requests (the requests of a
 * batch share its passes). Extra request-level values (0 = none) tighten them. */
void dg_limits_init(dg_limits *L, const deg_run_limits *pub, size_t n_requests);
void dg_limits_tighten(dg_limits *L, int64_t deadline_ms, int64_t max_fields,
                       int64_t max_fork_tokens);

/* What a limit's message ends with (static text): "; to lift it: " + how,
 * when the limit is libdeg's default or the caller's (the C field and the
 * Python keyword; deg serve replaces this tail with its server flag), or
 * "; set by the request's options.<name> ..." when the request set it. */
const char *dg_limit_hint(const dg_limits *L, dg_limit_kind which);
/* The marker that opens a liftable limit's hint (deg serve finds it). */
#define DG_LIMIT_HINT_MARK "; to lift it: "

/* DEG_OK, or the failure with its message: DEG_ERR_CANCELLED ("cancelled
 * during <phase>") or DEG_ERR_LIMIT ("deadline of N ms passed during
 * <phase>" + dg_limit_hint). */
deg_status dg_limits_check(const dg_limits *L, const char *phase);
/* The same without setting a message (0 = go on). */
int dg_limits_hit(const dg_limits *L);

/* The calling thread's poll hook: dg_forward calls dg_run_poll() between its
 * passes, so a prefill or a fork batch run under a hook stops within one
 * pass. A hook returns DEG_OK to go on, else the status to stop with (its
 * message set). Hooks nest: dg_run_push returns the previous one, which
 * dg_run_pop restores. */
typedef deg_status (*dg_poll_fn)(void *ctx);
typedef struct dg_poll {
    dg_poll_fn fn;
    void *ctx;
} dg_poll;
dg_poll dg_run_push(dg_poll_fn fn, void *ctx);
void dg_run_pop(dg_poll prev);
deg_status dg_run_poll(void);

/* A dg_poll_fn over one dg_limits (ctx = const dg_limits *), phase "prefill". */
deg_status dg_limits_poll(void *ctx);

#endif
