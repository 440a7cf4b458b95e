/* schema_check.c - schema compiler helpers: error lists, keyword tables, JSON value
 * helpers, type/branch/bound readings of a node, the $schema draft. Pass 1 (lint) is
 * schema_lint.c; schema_check.h says how the two passes split the work. */
#include "deg/schema_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deg/plan.h"
#include "deg/validate.h"

/* ------------------------------------------------------------------------ */
/* Errors and locations                                                      */
/* ------------------------------------------------------------------------ */

void dg_err_add(dg_errlist *e, const char *loc, const char *fmt, ...)
{
    if (e->full) return;
    if (json_array_size(e->list) >= DG_SCHEMA_MAX_ERRORS) {
        e->full = true;
        json_array_append_new(e->list, json_pack("{s:s,s:s}", "loc", "",
            "msg", "too many errors; the list stops here"));
        return;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_array_append_new(e->list, json_pack("{s:s,s:s}", "loc", loc ? loc : "", "msg", msg));
}

void dg_err_dedupe(dg_errlist *e)
{
    json_t *out = json_array();
    size_t i;
    json_t *x;
    json_array_foreach(e->list, i, x)
    {
        bool dup = false;
        size_t j;
        json_t *y;
        json_array_foreach(out, j, y)
        {
            if (json_equal(x, y)) { dup = true; break; }
        }
        if (!dup) json_array_append(out, x);
    }
    json_decref(e->list);
    e->list = out;
}

/* ------------------------------------------------------------------------ */
/* Keyword tables                                                            */
/* ------------------------------------------------------------------------ */

bool dg_kw_in(const char *k, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(k, *list)) return true;
    return false;
}

static const char *const ANNOTATIONS[] = {
    "title", "description", "default", "examples", "$comment", "$schema", "$id",
    "$anchor", "$defs", "definitions", "readOnly", "writeOnly", "deprecated", NULL};
static const char *const UNSUPPORTED[] = {
    "allOf", "not", "if", "then", "else", "const", "dependentSchemas", "dependentRequired",
    "dependencies", "patternProperties", "propertyNames", "unevaluatedProperties",
    "minProperties", "maxProperties", "unevaluatedItems", "prefixItems", "additionalItems",
    "contains", "minContains", "maxContains", "$dynamicRef", "$dynamicAnchor",
    "$recursiveRef", "$recursiveAnchor", "contentEncoding", "contentMediaType",
    "contentSchema", NULL};
static const char *const STRUCTURAL[] = {
    "type", "enum", "properties", "required", "additionalProperties", "items", "anyOf",
    "oneOf", "$ref", "format", "minLength", "maxLength", "pattern", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
    "uniqueItems", "x-generate", "x-max-tokens", "x-levels", NULL};
const char *const dg_kw_string[] = {"minLength", "maxLength", "pattern", "format", NULL};
const char *const dg_kw_number[] = {"minimum", "maximum", "exclusiveMinimum",
                                        "exclusiveMaximum", "multipleOf", NULL};
const char *const dg_kw_array[] = {"items", "minItems", "maxItems", "uniqueItems", NULL};
const char *const dg_kw_object[] = {"properties", "required", "additionalProperties", NULL};
const char *const dg_simple_types[] = {"array", "boolean", "integer", "null", "number",
                                           "object", "string", NULL};
const char *const dg_formats[] = {"date", "date-time", "email", "uri", "uuid", NULL};

bool dg_kw_is_annotation(const char *k) { return dg_kw_in(k, ANNOTATIONS); }
bool dg_kw_is_unsupported(const char *k) { return dg_kw_in(k, UNSUPPORTED); }
bool dg_kw_is_structural(const char *k) { return dg_kw_in(k, STRUCTURAL); }

bool dg_kw_is_annotation_ext(const char *k)
{
    return dg_kw_is_annotation(k) || !strcmp(k, "x-max-tokens") || !strcmp(k, "x-levels");
}

/* ------------------------------------------------------------------------ */
/* JSON value helpers                                                        */
/* ------------------------------------------------------------------------ */

bool dg_json_is_number(const json_t *v) { return json_is_integer(v) || json_is_real(v); }

double dg_json_number(const json_t *v)
{
    return json_is_integer(v) ? (double)json_integer_value(v) : json_real_value(v);
}

bool dg_json_is_integer(const json_t *v, dg_draft draft, int64_t *out)
{
    if (json_is_integer(v)) {
        if (out) *out = json_integer_value(v);
        return true;
    }
    if (json_is_real(v) && draft >= DG_DRAFT6) {
        double x = json_real_value(v);
        if (isfinite(x) && x == floor(x)) {
            /* 5e26 is an integer too (the fuzz differential: "maxLength": 5e26 is a
             * valid schema); beyond int64 it reads as the nearest end, which no
             * length or count reaches */
            if (out) *out = x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : (int64_t)x;
            return true;
        }
    }
    return false;
}

bool dg_json_equal(const json_t *a, const json_t *b)
{
    if (dg_json_is_number(a) && dg_json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return dg_json_number(a) == dg_json_number(b);
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b)) return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!dg_json_equal(json_array_get(a, i), json_array_get(b, i))) return false;
        return true;
    }
    if (json_is_object(a) && json_is_object(b)) {
        if (json_object_size(a) != json_object_size(b)) return false;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            json_t *w = json_object_get(b, k);
            if (!w || !dg_json_equal(v, w)) return false;
        }
        return true;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

const char *dg_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

dg_typeinfo dg_type_info(const json_t *node)
{
    dg_typeinfo t = {0};
    json_t *ty = json_object_get(node, "type");
    if (!ty) return t;
    t.present = true;
    if (json_is_string(ty)) {
        const char *s = json_string_value(ty);
        if (!dg_kw_in(s, dg_simple_types)) return t;
        t.valid = true;
        if (!strcmp(s, "null")) t.nullable = true;
        else t.base = s;
        return t;
    }
    if (!json_is_array(ty) || json_array_size(ty) == 0 || json_array_size(ty) > 2) return t;
    const char *base = NULL;
    bool nul = false;
    for (size_t i = 0; i < json_array_size(ty); i++) {
        json_t *e = json_array_get(ty, i);
        if (!json_is_string(e) || !dg_kw_in(json_string_value(e), dg_simple_types)) return t;
        const char *s = json_string_value(e);
        if (!strcmp(s, "null")) {
            if (nul) return t;
            nul = true;
        } else {
            if (base) return t;
            base = s;
        }
    }
    t.valid = true;
    t.base = base;
    t.nullable = nul;
    return t;
}

static bool only_keys(const json_t *b, bool (*ok)(const char *))
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)b, k, v)
    {
        if (!ok(k)) return false;
    }
    return true;
}

static bool null_branch_key(const char *k) { return !strcmp(k, "type") || dg_kw_is_annotation_ext(k); }
static bool value_branch_key(const char *k)
{
    return !strcmp(k, "type") || !strcmp(k, "const") || !strcmp(k, "enum") ||
           dg_kw_is_annotation_ext(k);
}

bool dg_branch_is_null(const json_t *b)
{
    if (!json_is_object(b)) return false;
    json_t *t = json_object_get(b, "type");
    return json_is_string(t) && !strcmp(json_string_value(t), "null") &&
           !json_object_get(b, "const") && !json_object_get(b, "enum") &&
           only_keys(b, null_branch_key);
}

bool dg_branch_is_value(const json_t *b)
{
    if (!json_is_object(b)) return false;
    bool c = json_object_get(b, "const") != NULL, e = json_object_get(b, "enum") != NULL;
    return (c || e) && !(c && e) && only_keys(b, value_branch_key);
}

dg_branch_form dg_branch_form_of(const json_t *node, const char **kw, size_t *x_index)
{
    json_t *br = json_object_get(node, "anyOf");
    *kw = "anyOf";
    if (!br) {
        br = json_object_get(node, "oneOf");
        *kw = "oneOf";
    }
    if (!br) {
        *kw = NULL;
        return DG_FORM_NONE;
    }
    if (!json_is_array(br) || json_array_size(br) == 0) return DG_FORM_INVALID;
    size_t n = json_array_size(br), n_null = 0, n_value = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *b = json_array_get(br, i);
        if (dg_branch_is_null(b)) n_null++;
        else if (dg_branch_is_value(b)) n_value++;
    }
    if (n_value >= 1 && n_value + n_null == n && n_null <= 1) return DG_FORM_CHOICE;
    if (n == 2 && n_null == 1) {
        *x_index = dg_branch_is_null(json_array_get(br, 0)) ? 1 : 0;
        return DG_FORM_NULLABLE;
    }
    return DG_FORM_INVALID;
}

dg_bounds dg_bounds_of(const json_t *node, dg_draft draft)
{
    dg_bounds b = {0};
    json_t *mn = json_object_get(node, "minimum"), *mx = json_object_get(node, "maximum");
    json_t *xmn = json_object_get(node, "exclusiveMinimum");
    json_t *xmx = json_object_get(node, "exclusiveMaximum");
    json_t *mo = json_object_get(node, "multipleOf");
    if (dg_json_is_number(mn)) {
        b.has_lo = true;
        b.lo = dg_json_number(mn);
        b.lo_strict = draft == DG_DRAFT4 && json_is_true(xmn);
    }
    if (dg_json_is_number(mx)) {
        b.has_hi = true;
        b.hi = dg_json_number(mx);
        b.hi_strict = draft == DG_DRAFT4 && json_is_true(xmx);
    }
    if (draft != DG_DRAFT4 && dg_json_is_number(xmn)) {
        double v = dg_json_number(xmn);
        if (!b.has_lo || v >= b.lo) {
            b.has_lo = true;
            b.lo = v;
            b.lo_strict = true;
        }
    }
    if (draft != DG_DRAFT4 && dg_json_is_number(xmx)) {
        double v = dg_json_number(xmx);
        if (!b.has_hi || v <= b.hi) {
            b.has_hi = true;
            b.hi = v;
            b.hi_strict = true;
        }
    }
    if (dg_json_is_number(mo) && dg_json_number(mo) > 0) {
        b.has_mult = true;
        b.mult = dg_json_number(mo);
        b.mult_is_int = json_is_integer(mo) || b.mult == floor(b.mult);
    }
    return b;
}

/* Is the integer v a multiple of multipleOf, decimal-exact as the validator
 * decides it (validate.h dg_decimal_multiple)? */
static bool int_is_multiple(int64_t v, const dg_bounds *b)
{
    if (!b->has_mult) return true;
    return dg_decimal_multiple(dg_decimal_of_int(v), dg_decimal_of_double(b->mult));
}

int64_t dg_integer_levels(const dg_bounds *b, int64_t *levels, int64_t cap)
{
    double lo = b->lo_strict ? floor(b->lo) + 1 : ceil(b->lo);
    double hi = b->hi_strict ? ceil(b->hi) - 1 : floor(b->hi);
    if (lo > hi) return 0;
    if (hi - lo > 1e6) {
        /* Too wide to scan: only an integer step can still give few values. */
        if (!b->mult_is_int) return cap + 1;
        double k = floor(hi / b->mult) - ceil(lo / b->mult) + 1;
        if (k > (double)cap) return cap + 1;
        int64_t n = 0;
        for (double q = ceil(lo / b->mult); q <= floor(hi / b->mult); q++) {
            if (levels) levels[n] = (int64_t)(q * b->mult);
            n++;
        }
        return n;
    }
    int64_t n = 0;
    for (int64_t v = (int64_t)lo; v <= (int64_t)hi; v++) {
        if (!int_is_multiple(v, b)) continue;
        if (n < cap && levels) levels[n] = v;
        n++;
        if (n > cap) return cap + 1;
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* Draft                                                                     */
/* ------------------------------------------------------------------------ */

bool dg_schema_draft(const json_t *root, dg_draft *draft, dg_errlist *errs)
{
    static const struct { const char *uri; dg_draft d; } known[] = {
        {"https://json-schema.org/draft/2020-12/schema", DG_DRAFT2020},
        {"https://json-schema.org/draft/2019-09/schema", DG_DRAFT2019},
        {"http://json-schema.org/draft-07/schema", DG_DRAFT7},
        {"http://json-schema.org/draft-06/schema", DG_DRAFT6},
        {"http://json-schema.org/draft-04/schema", DG_DRAFT4},
    };
    *draft = DG_DRAFT2020;
    json_t *s = json_is_object(root) ? json_object_get(root, "$schema") : NULL;
    if (!s) return true;
    if (!json_is_string(s)) return false; /* reported by the meta-schema check */
    const char *u = json_string_value(s);
    size_t n = strlen(u);
    if (n && u[n - 1] == '#') n--;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strlen(known[i].uri) == n && !strncmp(u, known[i].uri, n)) {
            *draft = known[i].d;
            return true;
        }
    }
    dg_err_add(errs, "/$schema", "unknown $schema \"%.200s\": deg reads drafts 2020-12 "
               "(default), 2019-09, 07, 06 and 04", u);
    return false;
}
