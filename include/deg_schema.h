/*
 * deg_schema.h - the schema fill contract of libdeg (public C API):
 * the schema compiler and fill plan, requests and options, context rendering,
 * the deterministic parsers, format checks, span candidates, the validator
 * and the generate-phase acceptor (deg contract §3-§9, §12.3).
 *
 * Conventions as in deg_runtime.h (status codes, deg_errmsg(), ownership
 * notes). Parsed by the Python binding's cffi build: plain C declarations.
 */
#ifndef DEG_SCHEMA_H
#define DEG_SCHEMA_H

#include "deg_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Schema compiler, fill plan, requests and options, context rendering      */
/* ------------------------------------------------------------------------ */

/* A fill plan: the compiled form of a JSON Schema (deg contract §3-§6). Immutable;
 * may be shared across threads. */
typedef struct deg_plan deg_plan;

/* Compile the JSON Schema text [schema_json, +len) (UTF-8 JSON) into a fill plan.
 * Pure: the same text always gives the same plan and fingerprints.
 * On success *out is owned by the caller (deg_plan_free).
 * Errors:
 *  - DEG_ERR_SCHEMA: the schema is invalid for deg (§5) or is not JSON / not UTF-8.
 *    If errors_json != NULL, *errors_json receives every problem found as a JSON
 *    array [{"loc": "<JSON pointer into the schema>", "msg": "..."}, ...], a
 *    NUL-terminated string owned by the caller (deg_free). Malformed JSON gives one
 *    entry with loc "" and the line and column in msg. deg_errmsg() names the count
 *    and the first problem.
 *  - DEG_ERR_ARG (NULL arguments), DEG_ERR_NOMEM.
 * Limits (each an error, never a crash): nesting depth 64 subschemas, 20000 plan
 * nodes, enums of 2..255 values, patterns up to 65536 bytes. */
DEG_API deg_status deg_plan_compile(const char *schema_json, size_t len, deg_plan **out,
                                    char **errors_json);
DEG_API void deg_plan_free(deg_plan *plan);

/* The plan as JSON (format in doc/ARCHITECTURE.md, "Fill plan JSON"): fields, arrays,
 * objects and fingerprints. *out is a NUL-terminated string owned by the caller
 * (deg_free). */
DEG_API deg_status deg_plan_to_json(const deg_plan *plan, char **out);

/* FillPlan.fingerprint: 64 lowercase hex chars, borrowed from the plan. */
DEG_API const char *deg_plan_fingerprint(const deg_plan *plan);

/* Number of leaves (fields) in the plan. */
DEG_API size_t deg_plan_num_fields(const deg_plan *plan);

/* Render a context for reading (§7.1). context_json is JSON text: a JSON string gives
 * its content verbatim; any other JSON value is serialized as Python's
 * json.dumps(value, ensure_ascii=False) does (", " / ": " separators, the given key
 * order, Python float repr). *out is NUL-terminated UTF-8 owned by the caller
 * (deg_free); *out_len (may be NULL) gets its byte length (a string context may
 * contain NUL). Integers of any length are written exactly. Errors: DEG_ERR_REQUEST
 * (malformed JSON, with line and column; NUL in an object key), DEG_ERR_UTF8,
 * DEG_ERR_NOMEM. */
DEG_API deg_status deg_context_render(const char *context_json, size_t len, char **out,
                                      size_t *out_len);

/* Fill options (§9 `options`); deg_fill_options_default() gives the defaults. */

typedef enum deg_array_decode {
    DEG_ARRAY_DECODE_COUNT_PEAKS = 0, /* default */
    DEG_ARRAY_DECODE_THRESHOLD = 1,
    DEG_ARRAY_DECODE_HYBRID = 2
} deg_array_decode;

typedef struct deg_fill_options {
    int32_t max_new_tokens;     /* >= 1; default 256 (per generate field) */
    int64_t max_items;          /* >= 1, or -1 = null (no cap; default) */
    int32_t date_order;         /* a deg_date_order (parsers section): DEG_DATE_ANY
                                   (= null, default), DEG_DATE_MDY, DEG_DATE_DMY */
    int32_t default_offset_minutes; /* "Z" = 0 (default); "+05:30" = 330 */
    int32_t default_offset_is_z;    /* 1 when written "Z" */
    double temperature;         /* >= 0; 0 = greedy (default) */
    int32_t has_seed;           /* 0 = seed null (default) */
    uint64_t seed;
    deg_array_decode array_decode;
    int32_t has_null_margin;    /* 0 = null: the server's default (default) */
    double null_margin;         /* finite, nats */
} deg_fill_options;

DEG_API deg_fill_options deg_fill_options_default(void);

/* Parse an `options` object (JSON text) over the defaults. Unknown options and wrong
 * types are errors: DEG_ERR_REQUEST with *errors_json (may be NULL) as for
 * deg_plan_compile, locs relative to the options object ("/seed"). */
DEG_API deg_status deg_fill_options_parse(const char *options_json, size_t len,
                                          deg_fill_options *out, char **errors_json);

/* A parsed fill request {context, schema, model, options} (§9). */
typedef struct deg_request deg_request;

/* Parse and check a request: every field and option type-checked, unknown fields and
 * options rejected, the schema compiled, the context rendered. *out is owned by the
 * caller (deg_request_free). On DEG_ERR_REQUEST (envelope/options problems, with or
 * without schema problems) or DEG_ERR_SCHEMA (only schema problems), *errors_json
 * (may be NULL) receives all problems as for deg_plan_compile, locs pointing into the
 * request ("/options/seed", "/schema/properties/a/type"). */
DEG_API deg_status deg_request_parse(const char *request_json, size_t len,
                                     deg_request **out, char **errors_json);
DEG_API void deg_request_free(deg_request *request);
/* Borrowed from the request (valid until deg_request_free). */
DEG_API const deg_plan *deg_request_plan(const deg_request *request);
DEG_API const char *deg_request_context(const deg_request *request, size_t *len);
DEG_API const char *deg_request_model(const deg_request *request); /* "deg-latest" if absent */
DEG_API deg_fill_options deg_request_options(const deg_request *request);

/* ------------------------------------------------------------------------ */
/* Parsers, format checks, candidates, validator, acceptor                  */
/* ------------------------------------------------------------------------ */

/* Deterministic parsers of the contract (spec §3, §9, §12.3). They only
 * normalize what is written and never invent digits or dates; the exact
 * rules (separators, ambiguous "1,234", date styles, zones) are documented
 * in lib/deg/parse.h. Inputs are UTF-8 byte ranges (not NUL-terminated);
 * span offsets are Unicode code points. Strings returned through char **
 * are NUL-terminated and owned by the caller (deg_free).
 * Common errors: DEG_ERR_ARG (NULL pointer), DEG_ERR_UTF8 (invalid UTF-8,
 * with the byte offset), DEG_ERR_FORMAT (the text is not a value of that
 * kind; the message says why), DEG_ERR_RANGE (well-formed but not
 * admissible: fractional value for an integer, beyond int64, invalid
 * calendar date). */

/* options.date_order (spec §9). ANY = null: an ambiguous numeric date
 * parses only when exactly one reading is a valid calendar date. */
typedef enum deg_date_order {
    DEG_DATE_ANY = 0,
    DEG_DATE_MDY = 1,
    DEG_DATE_DMY = 2
} deg_date_order;

/* A number copied from text ("1,234.5", "1.234,56", "-$5", "45 %", "EUR 3")
 * -> JSON number text in *out_json ("1234.5"). integer_only != 0 for an
 * integer leaf: fractional values are DEG_ERR_RANGE. */
DEG_API deg_status deg_parse_number(const char *text, size_t len, int integer_only,
                                    char **out_json);

/* A date ("5 March 2026", "03/05/2026", "2026-03-05") -> "YYYY-MM-DD" in
 * *out_iso. */
DEG_API deg_status deg_parse_date(const char *text, size_t len, deg_date_order order,
                                  char **out_iso);

/* A date-time ("March 5, 2026 2:30 PM EST") -> RFC 3339 in *out_rfc3339.
 * default_offset ("Z", "+HH:MM", or NULL = a zone must be written) is used
 * when the text has no zone; then *assumed_offset = 1 (may be NULL). */
DEG_API deg_status deg_parse_datetime(const char *text, size_t len, deg_date_order order,
                                      const char *default_offset, char **out_rfc3339,
                                      int *assumed_offset);

/* Format check of the validator: *ok = 1 if text conforms to format
 * ("date", "date-time", "email", "uri", "uuid"), else 0 (invalid UTF-8 is
 * 0). DEG_ERR_ARG for any other format name. */
DEG_API deg_status deg_format_check(const char *format, const char *text, size_t len,
                                    int *ok);

/* Every candidate span a typed leaf could take in the rendered context:
 * kind = "number", "integer", "date", "date-time", "email", "uri" or
 * "uuid". *spans (owned by the caller, deg_free; NULL when none) holds
 * 2 * *n_spans size_t: start0, end0, start1, end1, ... ([start, end) in code
 * points), sorted, no duplicates. */
DEG_API deg_status deg_candidates(const char *kind, const char *text, size_t len,
                                  size_t **spans, size_t *n_spans);

/* Trim [start, end) (code points, end <= length of text) of whitespace and
 * boundary punctuation a token carried in (rule in lib/deg/parse.h). The
 * result may be empty (*out_start == *out_end). DEG_ERR_RANGE if the span
 * is out of bounds. */
DEG_API deg_status deg_span_trim(const char *text, size_t len, size_t start, size_t end,
                                 size_t *out_start, size_t *out_end);

/* Validate a JSON value against a JSON Schema (both NUL-terminated JSON
 * texts), with the keywords the contract supports (lib/deg/validate.h) and
 * the format checks above. DEG_OK when both documents could be read, valid
 * or not: *n_errors = the number of violations and, if errors_json != NULL,
 * *errors_json (owned by the caller, deg_free) = a JSON array of
 * {"instance": <RFC 6901 pointer into the value>, "schema": <pointer into
 * the schema>, "keyword": "...", "msg": "..."} in document order ("[]" when
 * valid). Errors: DEG_ERR_FORMAT (a document is not JSON: line and column
 * in the message), DEG_ERR_SCHEMA (the schema is not a JSON object or
 * boolean, or a subschema is not; a keyword deg does not apply, those
 * deg_plan_compile lists as unsupported (allOf, not, if/then/else,
 * minProperties, prefixItems, ...; const is applied), with its location;
 * a keyword value the validator cannot use: a value of the wrong meta-schema
 * type for the $schema's draft ("type": "Object", "minimum": true), a
 * pattern that does not compile (checked up front), an unknown $schema, an
 * unresolvable, non-schema or endlessly recursive $ref). draft-04's boolean
 * exclusiveMinimum / exclusiveMaximum make minimum / maximum strict. Unknown
 * keywords are ignored, as JSON Schema says. */
DEG_API deg_status deg_validate(const char *schema_json, const char *value_json,
                                size_t *n_errors, char **errors_json);

/* Response assembly (spec §8; details in lib/deg/response.h). outcomes_json
 * is the runtime's per-node results:
 *   {"fields": {"<concrete pointer>": {"value": V, "meta": {...}}, ...},
 *    "arrays": {"<concrete pointer>": {"items": n, "dropped": d, "meta": {...}}},
 *    "usage": {"prompt_tokens": n}}
 * (concrete pointer = the leaf's RFC 6901 pointer with integer item indices;
 * a field without "value" is an omitted key). On DEG_OK *response_json =
 * {"value", "meta", "usage", "plan"} as Python's json.dumps writes it, the
 * value checked against the input schema. DEG_ERR_FILL (FillError) when
 * the value violates the schema: no response, and *errors_json (may be
 * NULL) = the violations as deg_validate lists them. DEG_ERR_ARG for
 * malformed outcomes or an outcome no plan node takes. Strings are owned
 * by the caller (deg_free). */
DEG_API deg_status deg_response_assemble(const deg_plan *plan, const char *outcomes_json,
                                         char **response_json, char **errors_json);

/* Constrained-decoding acceptor of a generate leaf (spec §4, §12.3): the
 * leaf's pattern (NUL-terminated, NULL = none; JSON Schema SEARCH semantics,
 * PCRE2 with UTF and UCP), minLength and maxLength in code points
 * (max_length = SIZE_MAX: none). Compiled once (JIT when available); one
 * acceptor is used by one thread at a time (it owns its match data).
 * Errors: DEG_ERR_SCHEMA (pattern does not compile: PCRE2 message and
 * offset), DEG_ERR_RANGE (min_length > max_length). *out owned by the
 * caller (deg_acceptor_free). */
typedef struct deg_acceptor deg_acceptor;
DEG_API deg_status deg_acceptor_new(const char *pattern, size_t min_length,
                                    size_t max_length, deg_acceptor **out);
DEG_API void deg_acceptor_free(deg_acceptor *acc);
/* 1 if the partial text [text, text+len) can still become valid: at most
 * max_length code points and a partial (or complete) match of the pattern
 * searched anywhere, i.e. of (?s:.*?)(?:pattern) anchored at the start. A
 * truncated UTF-8 sequence at the end (a token ending mid-character) is
 * allowed and counts as one more code point. 0 otherwise (also for invalid
 * UTF-8). It does not look ahead at the length budget: a prefix whose
 * shortest completion exceeds max_length is still 1. */
DEG_API int deg_acceptor_prefix_ok(deg_acceptor *acc, const char *text, size_t len);
/* 1 if end-of-text is admissible after [text, text+len): complete valid
 * UTF-8, min_length <= code points <= max_length, and the pattern matches
 * somewhere. */
DEG_API int deg_acceptor_eos_ok(deg_acceptor *acc, const char *text, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* DEG_SCHEMA_H */
