/* run.h - work limits of one call: cancel tokens, deadlines, and the
 * per-thread poll hook that long loops (forward passes, fork batches, decode
 * steps) call between units of work. Public side: deg_cancel_* and
 * deg_run_limits in include/deg.h. */
#ifndef DG_BASE_RUN_H
#define DG_BASE_RUN_H

#include <stdatomic.h>
#include <stdint.h>

#include "deg.h"

struct deg_cancel {
    atomic_int flag;
};

/* A call's limits in absolute form: deadline = CLOCK_MONOTONIC seconds (0 =
 * none); deadline_ms kept for the message. */
typedef struct dg_limits {
    const deg_cancel *cancel;
    double deadline;
    int64_t deadline_ms;
    int64_t max_fields, max_fork_tokens; /* 0 = none */
} dg_limits;

/* Monotonic clock in seconds. */
double dg_now(void);

/* Absolute limits from a public struct (NULL = deg_run_limits_default()), the deadline counted
 * from now. Extra request-level values (0 = none) tighten them. */
void dg_limits_init(dg_limits *L, const deg_run_limits *pub);
void dg_limits_tighten(dg_limits *L, int64_t deadline_ms, int64_t max_fields,
                       int64_t max_fork_tokens);

/* DEG_OK, or the failure with its message: DEG_ERR_CANCELLED ("cancelled
 * during <phase>") or DEG_ERR_LIMIT ("deadline of N ms passed during
 * <phase>"). */
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
