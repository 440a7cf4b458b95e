/* Status + per-thread message: every public call that fails sets the message
 * with dg_fail() and returns its status (the sqlite3_errmsg model). */
#ifndef DG_BASE_STATUS_H
#define DG_BASE_STATUS_H

#include "deg.h"

/* Set the calling thread's message (printf format) and return status. */
deg_status dg_fail(deg_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefix the current message with "context: " (for nested failures) and
 * return status unchanged. */
deg_status dg_fail_context(deg_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clear the calling thread's message. */
void dg_clear_error(void);

/* Propagate a failure: evaluates expr once, returns it from the caller if not
 * DEG_OK. */
#define DG_TRY(expr)                                   \
    do {                                               \
        deg_status dg_try_s_ = (expr);                 \
        if (dg_try_s_ != DEG_OK) return dg_try_s_;     \
    } while (0)

#endif
