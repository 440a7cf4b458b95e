/* request.h - fill requests and options (deg contract §9), internal side. The
 * public API is in include/deg.h (deg_request_*, deg_fill_options_*). */
#ifndef DG_DEG_REQUEST_H
#define DG_DEG_REQUEST_H

#include <jansson.h>

#include "deg.h"
#include "deg/schema_check.h"

/* Parse JSON text (UTF-8 checked first, key order kept). NULL on failure with one
 * {loc: "", msg} entry in E ("malformed JSON at line L, column C: ...", or the byte
 * offset of ill-formed UTF-8) and *status = DEG_ERR_UTF8 / DEG_ERR_FORMAT / ARG. */
json_t *dg_json_parse_text(const char *text, size_t len, int flags, dg_errlist *E,
                           deg_status *status);

/* As dg_json_parse_text, but integers beyond 64 bits (which jansson cannot hold) are
 * read as placeholder strings DG_BIGINT_MARK "<i>" and their digits appended to
 * *bigints (a new JSON array of strings, or NULL when there were none), for
 * dg_json_render_raw. Used for contexts, which must render such integers exactly. */
json_t *dg_json_parse_bigint(const char *text, size_t len, dg_errlist *E, deg_status *status,
                             json_t **bigints);

/* §7.1 rendering of a parsed context: a string verbatim, else Python json.dumps.
 * *out malloc'd (NUL-terminated), *out_len its length (may be NULL). */
deg_status dg_context_render_json(const json_t *context, const json_t *bigints, char **out,
                                  size_t *out_len);

/* deg's extension options of a request (§9), kept out of deg_fill_options, whose
 * layout is public ABI:
 *  - work limits (deg_run_limits in deg.h): "deadline_ms", "max_fields",
 *    "max_fork_tokens", integers >= 1 or null (0 here = null = none);
 *  - "lm_prior": null (the checkpoint's deg.json "lm_prior") or {"start": lambda},
 *    lambda finite >= 0 (0 = off for this request): the weight of the LM-head
 *    start prior of extract leaves (fill_extract.c). */
/* Largest lm_prior.start / list_prior.bonus (deg.json and options): both become
 * fp32 logit terms, and a weight past any logit's scale only overflows them
 * (a bonus of 1e39 was +inf in fp32 and gave a made-up span). */
#define DG_PRIOR_MAX 1e6

typedef struct dg_opt_ext {
    int64_t deadline_ms, max_fields, max_fork_tokens;
    int has_lm_prior;
    double lm_prior_start;
    int has_list_prior;
    double list_prior_bonus;
    int list_prior_by_anchor;
} dg_opt_ext;

/* Check an options object (errors go to E with locs under loc) into *o and
 * *ext (may be NULL: the extension options are then checked and dropped). */
void dg_options_check(const json_t *opts, const char *loc, deg_fill_options *o,
                      dg_opt_ext *ext, dg_errlist *E);

/* The request's extension options (zeros when none were given). */
dg_opt_ext dg_request_ext(const deg_request *request);

#endif
