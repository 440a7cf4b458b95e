/* validate.h - check a JSON value against the INPUT schema (spec §8: the
 * response value is always valid; an invalid one is a FillError).
 *
 * Keywords (JSON Schema 2020-12 semantics, as python-jsonschema's
 * Draft202012Validator applies them; agreement is tested against the JSON
 * Schema Test Suite and hypothesis-generated values):
 *   boolean schemas; type (incl. unions; "integer" accepts 2.0); enum, const
 *   (1 == 1.0, true != 1, deep equality); anyOf, oneOf; properties, required,
 *   additionalProperties (bool or schema: the properties not in
 *   "properties"); items (schema form); minItems, maxItems, uniqueItems;
 *   minLength, maxLength (code points); pattern (PCRE2 search with the
 *   compiler's options plus UCP, so \d \w \s are Unicode-aware as in Python
 *   re); minimum, maximum, exclusiveMinimum, exclusiveMaximum (exact
 *   int/float comparison); multipleOf decimal-exact (issue 19: the JSON
 *   Schema spec divides the decimal values, so 4.02 is a multiple of 0.01;
 *   python-jsonschema divides binary doubles, 401.99999999999994, and says
 *   no: deg departs from it here, see dg_decimal_multiple); format date,
 *   date-time, email, uri, uuid
 *   (dg_format_check; other formats are annotations); local $ref ("#",
 *   "#/json/pointer", percent-decoded) with $defs/definitions, applied
 *   together with its siblings (2019-09, 2020-12). Annotations and unknown
 *   keywords are ignored, as a validator does; rejecting them is the
 *   compiler's job.
 * The root's $schema picks the draft (2020-12 when absent): in draft-04, 06
 * and 07 a $ref's siblings are ignored (draft-07 §8.3); in draft-04 an
 * integer is a number written without a fraction or exponent (2.0 is not
 * one) and const is not a keyword (it came with draft-06).
 *
 * Errors appended to `errors` (a JSON array), one object per violation:
 *   {"instance": <RFC 6901 pointer into the value>,
 *    "schema": <RFC 6901 pointer to the failing keyword in the schema>,
 *    "keyword": "<keyword>", "msg": "<what failed>"}
 * anyOf/oneOf report one error at the keyword (not the branches' errors).
 */
#ifndef DG_DEG_VALIDATE_H
#define DG_DEG_VALIDATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* A JSON number's decimal value as |v| = m * 10^e, m with no trailing zero
 * digits (0 = {0, 0}). A float's decimal value is its shortest round-trip
 * digits (Python repr(), which is the JSON text's value when the text has at
 * most 17 significant digits); an integer's its digits. */
typedef struct dg_decimal {
    uint64_t m;
    int e;
} dg_decimal;
dg_decimal dg_decimal_of_double(double v);
dg_decimal dg_decimal_of_int(int64_t v);
/* multipleOf on decimal values: x / d is an integer (d != 0; 0 is a
 * multiple of everything). Exact: no binary rounding is involved. */
bool dg_decimal_multiple(dg_decimal x, dg_decimal d);

#include "deg.h"

/* Validate value against schema (root document for $ref). Appends the
 * violations to errors (may be NULL: then stops at the first) and sets
 * *n_errors (may be NULL). Returns DEG_OK whether valid or not;
 * DEG_ERR_SCHEMA for a keyword value it cannot apply (pattern that does not
 * compile, non-local or unresolvable $ref, $ref recursion deeper than 2048
 * without consuming the value), DEG_ERR_NOMEM. */
deg_status dg_validate(const json_t *schema, const json_t *value, json_t *errors,
                       size_t *n_errors);

/* JSON Schema equality: numbers by value (1 == 1.0), booleans distinct
 * from numbers, arrays and objects deep. */
int dg_validate_equal(const json_t *a, const json_t *b);

#endif
