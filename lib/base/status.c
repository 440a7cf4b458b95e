/* Status + per-thread message: dg_fail, dg_fail_context, deg_errmsg, status names (status.h). */
#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Long enough for a JSON pointer plus a PCRE2 message plus a file path. */
#define DG_ERRMSG_CAP 2048

static _Thread_local char dg_errmsg_buf[DG_ERRMSG_CAP];

const char *deg_errmsg(void) { return dg_errmsg_buf; }

void dg_clear_error(void) { dg_errmsg_buf[0] = '\0'; }

deg_status dg_fail(deg_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dg_errmsg_buf, sizeof dg_errmsg_buf, fmt, ap);
    va_end(ap);
    return status;
}

deg_status dg_fail_context(deg_status status, const char *fmt, ...)
{
    char prefix[512];
    char old[DG_ERRMSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, dg_errmsg_buf, sizeof old);
    /* "prefix: old", cut at the buffer's end with a visible "..." so a cut
     * message never passes for a whole one. */
    size_t lp = strlen(prefix), lo = strnlen(old, sizeof old - 1), room = DG_ERRMSG_CAP - 1 - lp - 2;
    int cut = lo > room;
    if (cut) lo = room;
    memcpy(dg_errmsg_buf, prefix, lp);
    memcpy(dg_errmsg_buf + lp, ": ", 2);
    memcpy(dg_errmsg_buf + lp + 2, old, lo);
    dg_errmsg_buf[lp + 2 + lo] = '\0';
    if (cut) memcpy(dg_errmsg_buf + lp + 2 + lo - 3, "...", 3);
    return status;
}

const char *deg_status_name(deg_status status)
{
    switch (status) {
    case DEG_OK: return "DEG_OK";
    case DEG_ERR_ARG: return "DEG_ERR_ARG";
    case DEG_ERR_IO: return "DEG_ERR_IO";
    case DEG_ERR_FORMAT: return "DEG_ERR_FORMAT";
    case DEG_ERR_UNSUPPORTED: return "DEG_ERR_UNSUPPORTED";
    case DEG_ERR_NOMEM: return "DEG_ERR_NOMEM";
    case DEG_ERR_UTF8: return "DEG_ERR_UTF8";
    case DEG_ERR_RANGE: return "DEG_ERR_RANGE";
    case DEG_ERR_SCHEMA: return "DEG_ERR_SCHEMA";
    case DEG_ERR_REQUEST: return "DEG_ERR_REQUEST";
    case DEG_ERR_FILL: return "DEG_ERR_FILL";
    case DEG_ERR_STATE: return "DEG_ERR_STATE";
    case DEG_ERR_MISMATCH: return "DEG_ERR_MISMATCH";
    case DEG_ERR_NUMERIC: return "DEG_ERR_NUMERIC";
    case DEG_ERR_INTERNAL: return "DEG_ERR_INTERNAL";
    case DEG_ERR_CANCELLED: return "DEG_ERR_CANCELLED";
    case DEG_ERR_LIMIT: return "DEG_ERR_LIMIT";
    }
    return "DEG_ERR_UNKNOWN";
}
