/* schema_check.h - internals shared by the schema compiler's files (not a public
 * interface): error list, JSON-pointer locations, keyword tables, the document lint.
 *
 * Compilation runs in two passes over the parsed schema (plan_compile.c):
 *  1. lint (schema_lint.c): every subschema of the document once, in document order,
 *     with the checks that depend only on that subschema's own keywords: unknown,
 *     unsupported and limited keywords, meta-schema value types for the chosen draft,
 *     keywords that do not apply to the type, enums, bounds, patterns, `required`.
 *  2. build (plan_compile.c): the fields reachable from the root, following local
 *     $refs, with the checks that depend on context: recursion, root type, nullable
 *     objects/arrays, x-generate / x-max-tokens / x-levels placement.
 * Every problem is collected; nothing stops at the first.
 */
#ifndef DG_DEG_SCHEMA_CHECK_H
#define DG_DEG_SCHEMA_CHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "deg/jsonptr.h" /* dg_loc_key, dg_loc_index, dg_ref_resolve */

/* Subschema nesting limit (objects, arrays, branches and $ref hops each count one).
 * Deeper schemas are an error, which also bounds recursion on any input. */
#define DG_SCHEMA_MAX_DEPTH 64
/* Largest plan: fields + arrays + objects built (bounds $ref fan-out expansion). */
#define DG_SCHEMA_MAX_NODES 20000
/* An error list stops growing here (one last entry says so). */
#define DG_SCHEMA_MAX_ERRORS 500
/* enum / const-or-enum branch option counts (§3). */
#define DG_ENUM_MIN 2
#define DG_ENUM_MAX 255
/* Score leaves: an integer with at most this many admissible values (§3). */
#define DG_SCORE_MAX_LEVELS 11

typedef enum dg_draft { DG_DRAFT4 = 4, DG_DRAFT6 = 6, DG_DRAFT7 = 7, DG_DRAFT2019 = 2019,
                        DG_DRAFT2020 = 2020 } dg_draft;

typedef struct dg_errlist {
    json_t *list;     /* array of {"loc", "msg"} */
    bool full;
} dg_errlist;

void dg_err_add(dg_errlist *e, const char *loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Remove repeated (loc, msg) pairs, keeping first occurrences. */
void dg_err_dedupe(dg_errlist *e);


/* Keyword classes. */
bool dg_kw_is_annotation(const char *k);   /* §5 allowed annotations */
bool dg_kw_is_unsupported(const char *k);  /* §5 unsupported list */
bool dg_kw_is_structural(const char *k);   /* keywords deg interprets */
/* Annotations plus x-max-tokens and x-levels (they refine without changing the mode). */
bool dg_kw_is_annotation_ext(const char *k);
/* Is k in the NULL-terminated list? */
bool dg_kw_in(const char *k, const char *const *list);
/* NULL-terminated tables: the keywords that apply to strings, numbers, arrays, objects;
 * the simple type names; the formats deg reads (§5). */
extern const char *const dg_kw_string[], *const dg_kw_number[], *const dg_kw_array[],
    *const dg_kw_object[], *const dg_simple_types[], *const dg_formats[];
/* JSON Schema's name of a value's kind ("object", "integer", "number", ...). */
const char *dg_json_kind(const json_t *v);

/* Numeric helpers: a JSON number's value; an integer in the meta-schema sense for the
 * draft (draft 6+ accepts integral reals such as 3.0 or 5e26; *out is clamped to the
 * int64 range). */
bool dg_json_is_number(const json_t *v);
double dg_json_number(const json_t *v);
bool dg_json_is_integer(const json_t *v, dg_draft draft, int64_t *out);
/* Value equality as JSON Schema defines it (1 == 1.0; true != 1). */
bool dg_json_equal(const json_t *a, const json_t *b);

/* Type keyword: base type name ("string", ...; NULL if absent/invalid) and nullable. */
typedef struct dg_typeinfo {
    bool present, valid;
    const char *base;   /* non-null type; NULL if only "null" or invalid */
    bool nullable;
} dg_typeinfo;
dg_typeinfo dg_type_info(const json_t *node);

/* anyOf/oneOf forms (§5 limited keywords). */
typedef enum dg_branch_form { DG_FORM_NONE = 0, DG_FORM_NULLABLE, DG_FORM_CHOICE,
                              DG_FORM_INVALID } dg_branch_form;
/* Which of anyOf/oneOf the node uses ("anyOf", "oneOf" or NULL) and its form; for the
 * nullable form *x_index is the non-null branch. */
dg_branch_form dg_branch_form_of(const json_t *node, const char **kw, size_t *x_index);
bool dg_branch_is_null(const json_t *b);
bool dg_branch_is_value(const json_t *b);

/* Numeric bounds of a node (draft-04 boolean exclusives folded in). */
typedef struct dg_bounds {
    bool has_lo, has_hi, lo_strict, hi_strict, has_mult;
    double lo, hi, mult;
    bool mult_is_int;
} dg_bounds;
dg_bounds dg_bounds_of(const json_t *node, dg_draft draft);
/* Admissible integers of an integer node with both bounds: returns the count, capped
 * at cap+1 ("more than cap"); fills levels[0..min(count,cap)) ascending if non-NULL. */
int64_t dg_integer_levels(const dg_bounds *b, int64_t *levels, int64_t cap);


/* The meta-schema value check of one keyword k = v of a subschema at kloc
 * (draft-specific where the meta-schemas differ: draft-04's boolean
 * exclusiveMinimum); unknown keywords pass. false + an error in errs when the
 * value is unusable. Shared by the lint and deg_validate's schema check. */
bool dg_schema_meta_check(const json_t *root, dg_draft draft, const char *k, const json_t *v,
                          const char *kloc, dg_errlist *errs);
/* The meta-schema rules over a node's keywords together (draft-04: exclusiveMinimum /
 * exclusiveMaximum need minimum / maximum beside them); false + errors at loc/<kw>. */
bool dg_schema_meta_check_node(const json_t *root, dg_draft draft, const json_t *node,
                               const char *loc, dg_errlist *errs);

/* Pass 1 over the whole document (see the top of this file). */
void dg_schema_lint(const json_t *root, dg_draft draft, dg_errlist *errs);
/* The draft named by the root's $schema (2020-12 when absent); false + error if the
 * $schema is not one deg knows. */
bool dg_schema_draft(const json_t *root, dg_draft *draft, dg_errlist *errs);

#endif
