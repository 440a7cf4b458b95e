/* response.h - response assembly (deg contract §8): the fill value, meta keyed
 * by concrete RFC 6901 pointers, usage and the plan fingerprint, validated
 * against the INPUT schema before it is returned. Public form:
 * deg_response_assemble() in include/deg.h.
 *
 * Input: the plan and the runtime's outcomes, a JSON object
 *   {"fields": {"<concrete pointer>": {"value": <JSON>, "meta": {...}}, ...},
 *    "arrays": {"<concrete pointer>": {"items": n, "dropped": d, "meta": {...}}, ...},
 *    "usage":  {"prompt_tokens": n}}
 * Concrete pointers are the plan's paths with integer item indices, escaped
 * as RFC 6901 does ("/line_items/0/name", "/a~1b"). A field entry without
 * "value" is an omitted key (on_null omit); "value": null is a null value.
 * A field or array with no entry at all is omitted. "dropped" and "meta"
 * are optional. Every entry must name a node the plan can reach with the
 * given array counts (else DEG_ERR_ARG: an outcome is never silently
 * dropped).
 *
 * Output: {"value": ..., "meta": {...}, "usage": {"prompt_tokens",
 * "generated_tokens"}, "plan": "<FillPlan.fingerprint>"} where
 *  - value: objects with their keys in schema order, arrays with their
 *    counted items;
 *  - meta: every field entry's meta under its pointer (in value order), and
 *    per array {"mode": "array", "items": n[, "dropped": d]} plus its meta;
 *  - usage.generated_tokens = the sum of the fields' meta.generated_tokens.
 * Then the value is validated against the input schema (validate.h, format
 * checks included). A violation is DEG_ERR_FILL (FillError): no response,
 * and *errors = the violations.
 */
#ifndef DG_DEG_RESPONSE_H
#define DG_DEG_RESPONSE_H

#include <jansson.h>

#include "deg.h"
#include "deg/plan.h"

/* On DEG_OK *response is a new reference. On DEG_ERR_FILL, *errors (if
 * errors != NULL) is a new array of validator violations. Other errors:
 * DEG_ERR_ARG (malformed outcomes), DEG_ERR_SCHEMA (the schema cannot be
 * applied by the validator), DEG_ERR_NOMEM. */
deg_status dg_response_assemble(const dg_plan *plan, const json_t *outcomes, json_t **response,
                                json_t **errors);

#endif
