/* plan.h - the fill plan: what schema compilation produces (deg contract §3, §4, §6).
 *
 * A plan is built once from a JSON Schema by dg_plan_compile() (plan_compile.c), is
 * immutable afterwards and may be shared across threads. Everything a plan points to
 * is owned by the plan and freed by dg_plan_free().
 *
 * Layout:
 *  - fields[]: the leaves, depth-first in schema order (properties in the order the
 *    schema lists them, then an array's item leaves under the array).
 *  - arrays[]: the array nodes, in the same depth-first order (an array comes before
 *    its item leaves and before nested arrays).
 *  - objects[]: the object nodes (the root is objects[0]), depth-first.
 *
 * Paths: a leaf's path is its property names from the root; an array item step is
 * written "*" in the display pointer and is a NULL segment in dg_path (so a property
 * literally named "*" stays distinguishable). Display pointers escape names as RFC 6901
 * does ("~" -> "~0", "/" -> "~1"); the root object is "".
 *
 * The public handle `deg_plan` (include/deg.h) is this struct.
 */
#ifndef DG_DEG_PLAN_H
#define DG_DEG_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "deg.h"

/* Mechanism of a leaf (§3). Names as in the contract: dg_mode_name(). */
typedef enum dg_mode {
    DG_MODE_CHOICE = 0, /* "decide.choice": enum / const-or-enum branches / [boolean, null] */
    DG_MODE_SCORE,      /* "decide.score": integer with 2..11 admissible values */
    DG_MODE_NOUL,       /* "decide.noul": boolean */
    DG_MODE_NUMBER,     /* "extract.number": every other number */
    DG_MODE_DATE,       /* "extract.date": string with format date / date-time */
    DG_MODE_SPAN,       /* "extract.span": string (optionally email / uri / uuid) */
    DG_MODE_GENERATE    /* "generate": x-generate string (or each item of an array of string) */
} dg_mode;

/* What a leaf becomes when it has no valid value (§4). Computed for every leaf from
 * (required, nullable): nullable -> NULL; else optional -> OMIT; else FORBID. Decide
 * leaves always produce a value, so for them it only documents the rule. */
typedef enum dg_on_null {
    DG_ON_NULL_NULL = 0, /* "null" */
    DG_ON_NULL_OMIT,     /* "omit" */
    DG_ON_NULL_FORBID    /* "forbid" */
} dg_on_null;

/* The only formats deg accepts (§5). */
typedef enum dg_format {
    DG_FORMAT_NONE = 0,
    DG_FORMAT_DATE,      /* "date" (RFC 3339 full-date) */
    DG_FORMAT_DATE_TIME, /* "date-time" (RFC 3339) */
    DG_FORMAT_EMAIL,
    DG_FORMAT_URI,
    DG_FORMAT_UUID
} dg_format;

/* JSON type of a leaf's non-null values. DG_TYPE_ANY = a choice whose options have
 * several JSON types (e.g. enum [1, "a", true]). */
typedef enum dg_type {
    DG_TYPE_STRING = 0,
    DG_TYPE_INTEGER,
    DG_TYPE_NUMBER,
    DG_TYPE_BOOLEAN,
    DG_TYPE_ANY
} dg_type;

/* A path from the root: seg[i] is a property name, or NULL for "each item". */
typedef struct dg_path {
    size_t n;
    char **seg;
} dg_path;

/* §4 constraints of a leaf, as the schema states them (absent = not checked).
 * Lengths count Unicode code points, as JSON Schema does. */
typedef struct dg_constraints {
    int64_t min_length;      /* -1 = absent */
    int64_t max_length;      /* -1 = absent */
    const char *pattern;     /* NULL = absent; searched (not anchored), §4 */
    bool has_minimum, has_maximum, has_exclusive_minimum, has_exclusive_maximum,
        has_multiple_of;
    double minimum, maximum, exclusive_minimum, exclusive_maximum, multiple_of;
    /* The same keywords as a JSON object with the schema's own values (integers stay
     * integers; draft-04 boolean exclusive bounds are converted to the numeric form).
     * Only present keywords appear. Never NULL. */
    json_t *json;
} dg_constraints;

typedef struct dg_field_plan {
    dg_path path;
    char *pointer;           /* display form: "/line_items/" "*" "/name" (one string) */
    char *schema_loc;        /* JSON pointer of the leaf's schema in the input schema */
    dg_mode mode;
    dg_type type;

    /* decide.choice: the option values in schema order (a JSON array; null is an
     * option when the enum lists it or the boolean is nullable), and per option its
     * description or NULL (from oneOf/anyOf branch descriptions). 0 / NULL otherwise. */
    size_t n_options;
    json_t *options;
    char **option_descriptions;

    /* decide.score: the admissible levels, ascending (after bounds and multipleOf),
     * and per level its x-levels label or NULL. 0 / NULL otherwise. */
    size_t n_levels;
    int64_t *levels;
    char **level_labels;
    /* decide.score whose every x-levels label is a count range (dg_level_count_range:
     * "0 to 19", "40 or more"): per level [lo, hi] item counts (hi SIZE_MAX: open),
     * read by the count prior (countprior.h); NULL otherwise. */
    size_t (*level_count)[2];

    /* The head has an extra outcome meaning null that is not among options/levels:
     * true exactly for nullable score leaves (§4). Nullable choices list null as an
     * option instead; extract leaves use on_null. */
    bool null_outcome;

    dg_format format;
    dg_constraints constraints;

    bool required;           /* the key is in its object's `required`; item leaves: true */
    bool nullable;           /* [X, "null"], anyOf/oneOf [X, {type: null}], enum with null */
    dg_on_null on_null;
    char *title;             /* NULL = none; the leaf's instructions to the model */
    char *description;       /* NULL = none */
    int32_t max_tokens;      /* x-max-tokens; 0 = unset (use options.max_new_tokens) */

    int32_t array;           /* index in plan->arrays of the innermost enclosing array, -1 */
    size_t depth_items;      /* number of enclosing arrays (NULL segments in path) */

    /* sha256 hex of the leaf's canonical spec (see dg_field_canonical() in
     * plan_fingerprint.c and doc/ARCHITECTURE.md): same wherever the leaf appears. */
    char fingerprint[65];
} dg_field_plan;

typedef struct dg_array_plan {
    dg_path path;
    char *pointer;
    char *schema_loc;
    int64_t min_items;       /* 0 when absent */
    int64_t max_items;       /* -1 when absent: runtime cap is options.max_items */
    bool unique_items;
    bool required;
    bool generate;           /* x-generate array of string: every item is generated */
    char *title, *description;
    int32_t parent_array;    /* enclosing array's index, -1 */
    size_t first_field;      /* item leaves are fields[first_field .. + n_fields) */
    size_t n_fields;
    char fingerprint[65];    /* canonical spec of the count decision (§6 note) */
} dg_array_plan;

typedef struct dg_object_plan {
    dg_path path;
    char *pointer;
    char *schema_loc;
    bool required;           /* root: true; item objects: true */
    bool additional_properties; /* absent or true -> true; deg never emits extra keys */
    size_t n_properties;
    int32_t parent_array;
    size_t first_field, n_fields;
    char *title, *description;
} dg_object_plan;

struct deg_plan {
    size_t n_fields;
    dg_field_plan *fields;
    size_t n_arrays;
    dg_array_plan *arrays;
    size_t n_objects;
    dg_object_plan *objects;
    json_t *schema;          /* the input schema (a reference; never modified) */
    char fingerprint[65];    /* FillPlan.fingerprint (§6) */
};
typedef struct deg_plan dg_plan;

/* Compile a parsed schema. On success *out is owned by the caller (dg_plan_free) and
 * *errors is NULL. On DEG_ERR_SCHEMA, *errors (if errors != NULL) receives a new JSON
 * array of {"loc": <JSON pointer into the schema>, "msg": <text>} listing every
 * problem found (owned by the caller, json_decref). The schema is only read. */
deg_status dg_plan_compile(const json_t *schema, dg_plan **out, json_t **errors);

void dg_plan_free(dg_plan *plan);

/* An x-levels label as a count range: "7", "0 to 19", "2-3" (also en dash, ".."),
 * "40 or more" (and more / or above / and above), "20+", "at least 3", ">= 3",
 * "more than 5" / "over 5" / "> 5" (6 or more), "none" / "zero" / "no" / "nothing"
 * (0) -> [*lo, *hi] (hi SIZE_MAX: open);
 * after it only blanks, or ':' and a description. 1 parsed, 0 not (also "19 to
 * 0": a range is written low to high). */
int dg_level_count_range(const char *label, size_t *lo, size_t *hi);

/* The plan as JSON (new reference): {"fingerprint", "fields": [...], "arrays": [...],
 * "objects": [...]}; the format is documented in doc/ARCHITECTURE.md. */
json_t *dg_plan_to_json(const dg_plan *plan);

/* Concrete RFC 6901 pointer of a path with the item steps filled by idx[0..n_idx)
 * (outermost first; n_idx must equal the number of NULL segments); an index equal to
 * DG_IDX_STAR renders as "*" (anchored items in fork text, §12.6). malloc'd. */
#define DG_IDX_STAR SIZE_MAX
char *dg_path_pointer(const dg_path *path, const size_t *idx, size_t n_idx);

const char *dg_mode_name(dg_mode mode);       /* "decide.choice", ... */
const char *dg_on_null_name(dg_on_null v);    /* "null", "omit", "forbid" */
const char *dg_format_name(dg_format f);      /* NULL for DG_FORMAT_NONE, "date", ... */
const char *dg_type_name(dg_type t);          /* "string", ..., "any" */
static inline bool dg_mode_is_decide(dg_mode m) { return m <= DG_MODE_NOUL; }
static inline bool dg_mode_is_extract(dg_mode m)
{
    return m >= DG_MODE_NUMBER && m <= DG_MODE_SPAN;
}

#endif
