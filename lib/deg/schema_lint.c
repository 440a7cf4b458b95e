/* schema_lint.c - pass 1 of the schema compiler (schema_check.h): the lint over the
 * whole document, meta-schema value types of the keywords deg accepts and the checks
 * each node's own keywords allow. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "deg/schema_check.h"

#include <math.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "deg/parse.h"
#include "deg/pattern.h"

typedef struct lint {
    const json_t *root;
    dg_draft draft;
    dg_errlist *errs;
    bool depth_reported;
} lint;

static void lint_node(lint *L, const json_t *node, const char *loc, int depth);

static bool is_schema_value(const json_t *v) { return json_is_object(v) || json_is_boolean(v); }

static bool check_nonneg_int(lint *L, const json_t *v, const char *loc, const char *kw)
{
    int64_t x;
    if (!dg_json_is_integer(v, L->draft, &x) || x < 0) {
        dg_err_add(L->errs, loc, "%s must be a non-negative integer, not %s", kw,
                   dg_json_kind(v));
        return false;
    }
    return true;
}

/* $anchor: 2020-12's name pattern, 2019-09's in that draft (the drafts before have no
 * $anchor; deg reads it as 2020-12's there). */
static bool check_anchor(lint *L, const json_t *v, const char *kloc)
{
    const char *s = json_string_value(v);
    bool d2019 = L->draft == DG_DRAFT2019;
    bool ok = (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s == '_' && !d2019);
    for (const char *p = s + 1; ok && *p; p++)
        ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
             *p == '-' || *p == '_' || *p == '.' || (*p == ':' && d2019);
    if (!ok)
        dg_err_add(L->errs, kloc, "$anchor must match %s",
                   d2019 ? "^[A-Za-z][-A-Za-z0-9.:_]*$ in draft 2019-09"
                         : "^[A-Za-z_][-A-Za-z0-9._]*$");
    return ok;
}

/* $id: a URI-reference (RFC 3986 §4.1, the meta-schemas' format), and from 2019-09 on
 * without a fragment other than an empty one (their pattern ^[^#]*#?$). */
static bool check_id(lint *L, const json_t *v, const char *kloc)
{
    const char *s = json_string_value(v), *h = strchr(s, '#');
    if (!dg_uri_reference_check(s, json_string_length(v))) {
        dg_err_add(L->errs, kloc, "$id \"%.200s\" is not a URI reference (RFC 3986 §4.1: "
                   "ASCII, reserved characters and spaces percent-encoded)", s);
        return false;
    }
    if (L->draft >= DG_DRAFT2019 && h && h[1]) {
        dg_err_add(L->errs, kloc, "$id \"%.200s\" has a fragment: from draft 2019-09 on an "
                   "$id may end in an empty \"#\" only (name a subschema with $anchor)", s);
        return false;
    }
    return true;
}

/* meta_check for the keywords of scalar values (annotations, bounds, type, enum):
 * 1 = the value is usable, 0 = not (reported), -1 = k is not one of them. */
static int meta_check_scalar(lint *L, const char *k, const json_t *v, const char *kloc)
{
    dg_errlist *E = L->errs;
    if (!strcmp(k, "title") || !strcmp(k, "description") || !strcmp(k, "$comment") ||
        !strcmp(k, "$id") || !strcmp(k, "$schema") || !strcmp(k, "$ref") ||
        !strcmp(k, "format") || !strcmp(k, "pattern") || !strcmp(k, "$anchor")) {
        if (!json_is_string(v)) {
            dg_err_add(E, kloc, "%s must be a string, not %s", k, dg_json_kind(v));
            return false;
        }
        if (!strcmp(k, "$anchor")) return check_anchor(L, v, kloc);
        if (!strcmp(k, "$id")) return check_id(L, v, kloc);
        return true;
    }
    if (!strcmp(k, "id") && L->draft == DG_DRAFT4) { /* draft-04's $id */
        if (!json_is_string(v)) {
            dg_err_add(E, kloc, "id must be a string in draft-04, not %s", dg_json_kind(v));
            return false;
        }
        return true;
    }
    if (!strcmp(k, "readOnly") || !strcmp(k, "writeOnly") || !strcmp(k, "deprecated") ||
        !strcmp(k, "uniqueItems")) {
        if (!json_is_boolean(v)) {
            dg_err_add(E, kloc, "%s must be a boolean, not %s", k, dg_json_kind(v));
            return false;
        }
        return true;
    }
    if (!strcmp(k, "examples")) {
        if (!json_is_array(v)) {
            dg_err_add(E, kloc, "examples must be an array, not %s", dg_json_kind(v));
            return false;
        }
        return true;
    }
    if (!strcmp(k, "minLength") || !strcmp(k, "maxLength") || !strcmp(k, "minItems") ||
        !strcmp(k, "maxItems"))
        return check_nonneg_int(L, v, kloc, k);
    if (!strcmp(k, "minimum") || !strcmp(k, "maximum")) {
        if (!dg_json_is_number(v)) {
            dg_err_add(E, kloc, "%s must be a number, not %s", k, dg_json_kind(v));
            return false;
        }
        return true;
    }
    if (!strcmp(k, "exclusiveMinimum") || !strcmp(k, "exclusiveMaximum")) {
        if (L->draft == DG_DRAFT4) {
            if (!json_is_boolean(v)) {
                dg_err_add(E, kloc, "%s must be a boolean in draft-04, not %s", k,
                           dg_json_kind(v));
                return false;
            }
        } else if (!dg_json_is_number(v)) {
            dg_err_add(E, kloc, "%s must be a number, not %s", k, dg_json_kind(v));
            return false;
        }
        return true;
    }
    if (!strcmp(k, "multipleOf")) {
        if (!dg_json_is_number(v) || !(dg_json_number(v) > 0)) {
            dg_err_add(E, kloc, "multipleOf must be a number greater than 0");
            return false;
        }
        return true;
    }
    if (!strcmp(k, "type")) {
        bool ok = json_is_string(v) && dg_kw_in(json_string_value(v), dg_simple_types);
        if (json_is_array(v)) {
            ok = json_array_size(v) > 0;
            for (size_t i = 0; ok && i < json_array_size(v); i++) {
                json_t *e = json_array_get(v, i);
                ok = json_is_string(e) && dg_kw_in(json_string_value(e), dg_simple_types);
                for (size_t j = 0; ok && j < i; j++) ok = !json_equal(e, json_array_get(v, j));
            }
        }
        if (!ok) {
            dg_err_add(E, kloc, "type must be one of array, boolean, integer, null, number, "
                       "object, string, or a non-empty array of distinct such names");
            return false;
        }
        return true;
    }
    if (!strcmp(k, "enum")) {
        if (!json_is_array(v)) {
            dg_err_add(E, kloc, "enum must be an array, not %s", dg_json_kind(v));
            return false;
        }
        if (L->draft == DG_DRAFT4) { /* its meta-schema: minItems 1, uniqueItems */
            size_t n = json_array_size(v);
            for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < i; j++)
                    if (dg_json_equal(json_array_get(v, i), json_array_get(v, j))) {
                        char *il = dg_loc_index(kloc, i); /* check_enum_values' words */
                        dg_err_add(E, il, "enum lists the same value twice (first at %zu)", j);
                        free(il);
                        return false;
                    }
            if (n == 0) {
                dg_err_add(E, kloc, "enum must not be empty in draft-04");
                return false;
            }
        }
        return true;
    }
    return -1;
}

/* Boolean schemas came with draft-06: draft-04's meta-schema allows a boolean only as
 * additionalProperties (and in $defs, which deg reads in every draft). */
static bool no_bool_schemas(lint *L, const char *k)
{
    return L->draft == DG_DRAFT4 && strcmp(k, "additionalProperties") && strcmp(k, "$defs");
}

static void not_a_schema(lint *L, const json_t *v, const char *loc)
{
    if (json_is_boolean(v))
        dg_err_add(L->errs, loc, "a schema must be an object in draft-04 (boolean schemas "
                   "came with draft-06)");
    else
        dg_err_add(L->errs, loc, "a schema must be an object or a boolean, not %s",
                   dg_json_kind(v));
}

/* meta_check for the keywords holding names or schemas (required, properties,
 * items, anyOf/oneOf) and deg's x-* keywords; any other keyword's value is usable. */
static bool meta_check_structure(lint *L, const char *k, const json_t *v, const char *kloc)
{
    dg_errlist *E = L->errs;
    if (!strcmp(k, "required")) {
        bool ok = json_is_array(v) && (L->draft != DG_DRAFT4 || json_array_size(v) > 0);
        for (size_t i = 0; ok && i < json_array_size(v); i++)
            ok = json_is_string(json_array_get(v, i));
        if (!ok) {
            dg_err_add(E, kloc, "required must be an array of strings%s",
                       L->draft == DG_DRAFT4 ? " (non-empty in draft-04)" : "");
            return false;
        }
        json_t *seen = json_object();
        for (size_t i = 0; i < json_array_size(v); i++) {
            const char *s = json_string_value(json_array_get(v, i));
            if (json_object_get(seen, s)) {
                char *il = dg_loc_index(kloc, i);
                dg_err_add(E, il, "required lists \"%.200s\" twice", s);
                free(il);
                ok = false;
            }
            json_object_set_new(seen, s, json_true());
        }
        json_decref(seen);
        return ok;
    }
    if (!strcmp(k, "properties") || !strcmp(k, "$defs") || !strcmp(k, "definitions")) {
        if (!json_is_object(v)) {
            dg_err_add(E, kloc, "%s must be an object of schemas, not %s", k, dg_json_kind(v));
            return false;
        }
        const char *pk;
        json_t *pv;
        bool ok = true;
        json_object_foreach((json_t *)v, pk, pv)
        {
            if (!is_schema_value(pv) || (json_is_boolean(pv) && no_bool_schemas(L, k))) {
                char *pl = dg_loc_key(kloc, pk);
                not_a_schema(L, pv, pl);
                free(pl);
                ok = false;
            }
        }
        return ok;
    }
    if (!strcmp(k, "additionalProperties") || !strcmp(k, "items")) {
        if (!strcmp(k, "items") && json_is_array(v)) {
            dg_err_add(E, kloc, "tuple \"items\": [...] is not supported: give one schema "
                       "for every item");
            return false;
        }
        if (!is_schema_value(v)) {
            dg_err_add(E, kloc, "%s must be a schema (object or boolean), not %s", k,
                       dg_json_kind(v));
            return false;
        }
        if (json_is_boolean(v) && no_bool_schemas(L, k)) {
            not_a_schema(L, v, kloc);
            return false;
        }
        return true;
    }
    if (!strcmp(k, "anyOf") || !strcmp(k, "oneOf")) {
        bool ok = json_is_array(v) && json_array_size(v) > 0;
        if (!ok) {
            dg_err_add(E, kloc, "%s must be a non-empty array of schemas", k);
            return false;
        }
        for (size_t i = 0; i < json_array_size(v); i++) {
            const json_t *b = json_array_get(v, i);
            if (!is_schema_value(b) || (json_is_boolean(b) && no_bool_schemas(L, k))) {
                char *il = dg_loc_index(kloc, i);
                not_a_schema(L, b, il);
                free(il);
                ok = false;
            }
        }
        return ok;
    }
    if (!strcmp(k, "x-generate")) {
        if (!json_is_boolean(v)) {
            dg_err_add(E, kloc, "x-generate must be true or false");
            return false;
        }
        return true;
    }
    if (!strcmp(k, "x-max-tokens")) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > INT32_MAX) {
            dg_err_add(E, kloc, "x-max-tokens must be an integer >= 1");
            return false;
        }
        return true;
    }
    if (!strcmp(k, "x-levels")) {
        bool ok = json_is_object(v);
        const char *lk;
        json_t *lv;
        if (ok) json_object_foreach((json_t *)v, lk, lv)
            {
                if (!json_is_string(lv) || json_string_length(lv) == 0) {
                    char *ll = dg_loc_key(kloc, lk);
                    dg_err_add(E, ll, "an x-levels label must be a non-empty string");
                    free(ll);
                    ok = false;
                }
            }
        else dg_err_add(E, kloc, "x-levels must be an object {\"<level>\": \"label\"}");
        return ok;
    }
    return true; /* default, const in branches: any value */
}

/* Meta-schema value types of the keywords deg accepts (draft-specific where the
 * meta-schemas differ). Returns false when the value is unusable. */
static bool meta_check(lint *L, const char *k, const json_t *v, const char *kloc)
{
    int r = meta_check_scalar(L, k, v, kloc);
    return r >= 0 ? r != 0 : meta_check_structure(L, k, v, kloc);
}

/* The meta-schema rules that tie a node's keywords together: draft-04's
 * "dependencies" (exclusiveMinimum needs minimum, exclusiveMaximum needs maximum;
 * said of a boolean one: a number there already has its own error). */
static bool meta_check_node(lint *L, const json_t *node, const char *loc)
{
    bool ok = true;
    if (L->draft != DG_DRAFT4 || !json_is_object(node)) return ok;
    static const char *const pairs[2][2] = {{"exclusiveMinimum", "minimum"},
                                            {"exclusiveMaximum", "maximum"}};
    for (int i = 0; i < 2; i++) {
        if (json_is_boolean(json_object_get(node, pairs[i][0])) &&
            !json_object_get(node, pairs[i][1])) {
            char *kl = dg_loc_key(loc, pairs[i][0]);
            dg_err_add(L->errs, kl, "%s needs %s beside it in draft-04 (its meta-schema's "
                       "dependencies)", pairs[i][0], pairs[i][1]);
            free(kl);
            ok = false;
        }
    }
    return ok;
}

bool dg_schema_meta_check_node(const json_t *root, dg_draft draft, const json_t *node,
                               const char *loc, dg_errlist *errs)
{
    lint L = {.root = root, .draft = draft, .errs = errs};
    return meta_check_node(&L, node, loc);
}

bool dg_schema_meta_check(const json_t *root, dg_draft draft, const char *k, const json_t *v,
                          const char *kloc, dg_errlist *errs)
{
    lint L = {.root = root, .draft = draft, .errs = errs};
    return meta_check(&L, k, v, kloc);
}

static bool value_matches_type(const json_t *v, const dg_typeinfo *t)
{
    if (json_is_null(v)) return t->nullable;
    if (!t->base) return false;
    if (!strcmp(t->base, "string")) return json_is_string(v);
    if (!strcmp(t->base, "boolean")) return json_is_boolean(v);
    if (!strcmp(t->base, "number")) return dg_json_is_number(v);
    if (!strcmp(t->base, "integer")) return dg_json_is_integer(v, DG_DRAFT6, NULL);
    return false;
}

/* Check one enum-like option list; all problems go to loc (or loc/i). */
static void check_enum_values(lint *L, const json_t *values, const char *loc,
                              const json_t *type_node)
{
    dg_typeinfo t = type_node ? dg_type_info(type_node) : (dg_typeinfo){0};
    size_t n = json_array_size(values);
    if (n > DG_ENUM_MAX) {
        dg_err_add(L->errs, loc, "enum has %zu values; deg accepts %d..%d", n, DG_ENUM_MIN,
                   DG_ENUM_MAX);
        return;
    }
    if (n < DG_ENUM_MIN)
        dg_err_add(L->errs, loc, "enum has %zu value%s; deg needs %d..%d (a single value "
                   "has nothing to decide)", n, n == 1 ? "" : "s", DG_ENUM_MIN, DG_ENUM_MAX);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(values, i);
        char *il = dg_loc_index(loc, i);
        if (json_is_object(v) || json_is_array(v)) {
            dg_err_add(L->errs, il, "enum values must be scalars (string, number, boolean "
                       "or null), not %s", dg_json_kind(v));
        } else if (t.valid && !value_matches_type(v, &t)) {
            dg_err_add(L->errs, il, "enum value of type %s does not match the field's type",
                       dg_json_kind(v));
        }
        for (size_t j = 0; j < i; j++) {
            if (dg_json_equal(v, json_array_get(values, j))) {
                dg_err_add(L->errs, il, "enum lists the same value twice (first at %zu)", j);
                break;
            }
        }
        free(il);
    }
}

/* anyOf/oneOf in the const/enum form: all options together. */
static void check_choice_branches(lint *L, const json_t *br, const char *bloc)
{
    json_t *all = json_array();
    for (size_t i = 0; i < json_array_size(br); i++) {
        json_t *b = json_array_get(br, i);
        char *il = dg_loc_index(bloc, i);
        const char *k;
        json_t *v;
        json_object_foreach(b, k, v)
        {
            char *kl = dg_loc_key(il, k);
            meta_check(L, k, v, kl);
            free(kl);
        }
        if (dg_branch_is_null(b)) {
            json_array_append_new(all, json_null());
        } else {
            bool is_const = json_object_get(b, "const") != NULL;
            json_t *vals = is_const ? json_pack("[O]", json_object_get(b, "const"))
                                    : json_incref(json_object_get(b, "enum"));
            char *vl = dg_loc_key(il, is_const ? "const" : "enum");
            dg_typeinfo t = dg_type_info(b);
            if (!json_is_array(vals)) {
                /* reported by meta_check */
            } else if (json_array_size(vals) == 0) {
                dg_err_add(L->errs, vl, "an enum branch needs at least one value");
            } else {
                for (size_t j = 0; t.present && t.valid && j < json_array_size(vals); j++) {
                    json_t *x = json_array_get(vals, j);
                    if (json_is_object(x) || json_is_array(x) || value_matches_type(x, &t))
                        continue;
                    char *xl = is_const ? strdup(vl) : dg_loc_index(vl, j);
                    dg_err_add(L->errs, xl, "%s value of type %s does not match the branch's "
                               "type", is_const ? "const" : "enum", dg_json_kind(x));
                    free(xl);
                }
                json_array_extend(all, vals);
            }
            json_decref(vals);
            free(vl);
        }
        free(il);
    }
    /* Count, scalars and duplicates over the union of the branches. */
    size_t n = json_array_size(all);
    if (n > DG_ENUM_MAX || n < DG_ENUM_MIN) {
        dg_err_add(L->errs, bloc, "the branches give %zu options; deg accepts %d..%d", n,
                   DG_ENUM_MIN, DG_ENUM_MAX);
    } else {
        for (size_t i = 0; i < n; i++) {
            json_t *v = json_array_get(all, i);
            if (json_is_object(v) || json_is_array(v)) {
                dg_err_add(L->errs, bloc, "option %zu is %s: options must be scalars", i,
                           dg_json_kind(v));
                continue;
            }
            for (size_t j = 0; j < i; j++) {
                if (dg_json_equal(v, json_array_get(all, j))) {
                    dg_err_add(L->errs, bloc, "the branches list the same value twice "
                               "(options %zu and %zu)", j, i);
                    break;
                }
            }
        }
    }
    json_decref(all);
}

static void check_pattern(lint *L, const json_t *v, const char *loc)
{
    size_t n = json_string_length(v);
    if (n > DG_PATTERN_MAX_BYTES) {
        dg_err_add(L->errs, loc, "pattern is %zu bytes; deg accepts patterns up to %d bytes",
                   n, DG_PATTERN_MAX_BYTES);
        return;
    }
    dg_regex_error e;
    pcre2_code *re = dg_pattern_compile(json_string_value(v), n, 0, &e);
    if (!re) dg_err_add(L->errs, loc, "invalid pattern: %s at offset %zu", e.msg, e.offset);
    pcre2_code_free(re);
}

/* A string node: format, pattern, minLength <= maxLength. */
static void lint_string(lint *L, const json_t *node, const char *loc)
{
    dg_errlist *E = L->errs;
    char *kl;
    json_t *f = json_object_get(node, "format");
    if (json_is_string(f) && !dg_kw_in(json_string_value(f), dg_formats)) {
        kl = dg_loc_key(loc, "format");
        dg_err_add(E, kl, "format \"%.100s\" is not supported: use date, date-time, "
                   "email, uri or uuid", json_string_value(f));
        free(kl);
    }
    json_t *p = json_object_get(node, "pattern");
    if (json_is_string(p)) {
        kl = dg_loc_key(loc, "pattern");
        check_pattern(L, p, kl);
        free(kl);
    }
    int64_t mn, mx;
    if (dg_json_is_integer(json_object_get(node, "minLength"), L->draft, &mn) &&
        dg_json_is_integer(json_object_get(node, "maxLength"), L->draft, &mx) &&
        mn > mx && mn >= 0 && mx >= 0) {
        kl = dg_loc_key(loc, "minLength");
        dg_err_add(E, kl, "minLength %lld > maxLength %lld admits no string",
                   (long long)mn, (long long)mx);
        free(kl);
    }
}

/* An integer or number node: bounds that admit a value (draft-04's exclusive bounds
 * need their bound: meta_check_node). */
static void lint_number(lint *L, const json_t *node, const char *loc, const char *base)
{
    dg_errlist *E = L->errs;
    dg_bounds b = dg_bounds_of(node, L->draft);
    if (!strcmp(base, "integer") && b.has_lo && b.has_hi) {
        int64_t n = dg_integer_levels(&b, NULL, 1);
        if (n <= 1) {
            dg_err_add(E, loc, "integer bounds admit %s value%s", n ? "only one" : "no",
                       n ? "" : "s");
        }
    } else if (b.has_lo && b.has_hi &&
               (b.lo > b.hi || (b.lo == b.hi && (b.lo_strict || b.hi_strict)))) {
        dg_err_add(E, loc, "number bounds admit no value (lower %g%s, upper %g%s)", b.lo,
                   b.lo_strict ? " exclusive" : "", b.hi, b.hi_strict ? " exclusive" : "");
    } else if (b.has_lo && b.has_hi && b.has_mult && !strcmp(base, "number")) {
        double klo = ceil(b.lo / b.mult - 1e-9), khi = floor(b.hi / b.mult + 1e-9);
        if (b.lo_strict && fabs(klo * b.mult - b.lo) <= 1e-9 * fabs(b.mult)) klo++;
        if (b.hi_strict && fabs(khi * b.mult - b.hi) <= 1e-9 * fabs(b.mult)) khi--;
        if (klo > khi)
            dg_err_add(E, loc, "number bounds admit no multiple of %g", b.mult);
    }
}

/* An array node: not nullable, minItems <= maxItems, an items schema. */
static void lint_array(lint *L, const json_t *node, const char *loc, const dg_typeinfo *t)
{
    dg_errlist *E = L->errs;
    char *kl;
    int64_t mn, mx;
    if (t->nullable) {
        kl = dg_loc_key(loc, "type");
        dg_err_add(E, kl, "nullable arrays are not supported");
        free(kl);
    }
    if (dg_json_is_integer(json_object_get(node, "minItems"), L->draft, &mn) &&
        dg_json_is_integer(json_object_get(node, "maxItems"), L->draft, &mx) && mn > mx &&
        mx >= 0) {
        kl = dg_loc_key(loc, "minItems");
        dg_err_add(E, kl, "minItems %lld > maxItems %lld admits no array", (long long)mn,
                   (long long)mx);
        free(kl);
    }
    if (!json_object_get(node, "items"))
        dg_err_add(E, loc, "an array needs an \"items\" schema");
}

/* An object node: not nullable, no additionalProperties schema, required names in
 * properties. */
static void lint_object(lint *L, const json_t *node, const char *loc, const dg_typeinfo *t)
{
    dg_errlist *E = L->errs;
    char *kl;
    if (t->nullable) {
        kl = dg_loc_key(loc, "type");
        dg_err_add(E, kl, "nullable objects are not supported");
        free(kl);
    }
    json_t *ap = json_object_get(node, "additionalProperties");
    if (json_is_object(ap)) {
        kl = dg_loc_key(loc, "additionalProperties");
        dg_err_add(E, kl, "additionalProperties must be true or false: with a schema "
                   "the key names would be unknown");
        free(kl);
    }
    json_t *req = json_object_get(node, "required"), *props = json_object_get(node, "properties");
    if (json_is_array(req)) {
        for (size_t i = 0; i < json_array_size(req); i++) {
            json_t *r = json_array_get(req, i);
            if (json_is_string(r) &&
                !(json_is_object(props) && json_object_get(props, json_string_value(r)))) {
                char *rl = dg_loc_key(loc, "required");
                char *il = dg_loc_index(rl, i);
                dg_err_add(E, il, "required name \"%.200s\" is not in properties",
                           json_string_value(r));
                free(il);
                free(rl);
            }
        }
    }
}

/* Checks that need only this node's keywords (type applicability, bounds, ...). */
static void lint_semantics(lint *L, const json_t *node, const char *loc)
{
    dg_errlist *E = L->errs;
    const char *k;
    json_t *v;
    char *kl;
    bool has_ref = json_object_get(node, "$ref") != NULL;
    const char *bkw;
    size_t xi = 0;
    dg_branch_form form = dg_branch_form_of(node, &bkw, &xi);

    if (has_ref) {
        json_object_foreach((json_t *)node, k, v)
        {
            if (!strcmp(k, "$ref") || dg_kw_is_annotation_ext(k) || dg_kw_is_unsupported(k) ||
                !dg_kw_is_structural(k))
                continue; /* the last two were reported already */
            kl = dg_loc_key(loc, k);
            dg_err_add(E, kl, "\"%s\" beside $ref: $ref's siblings may only be annotations",
                       k);
            free(kl);
        }
        return;
    }
    if (form != DG_FORM_NONE) {
        if (json_object_get(node, "anyOf") && json_object_get(node, "oneOf")) {
            kl = dg_loc_key(loc, "oneOf");
            dg_err_add(E, kl, "use anyOf or oneOf, not both");
            free(kl);
        }
        json_object_foreach((json_t *)node, k, v)
        {
            if (!strcmp(k, "anyOf") || !strcmp(k, "oneOf") || dg_kw_is_annotation_ext(k) ||
                dg_kw_is_unsupported(k) || !dg_kw_is_structural(k))
                continue;
            kl = dg_loc_key(loc, k);
            dg_err_add(E, kl, "\"%s\" beside %s: only annotations may sit beside anyOf/oneOf "
                       "(put it in the branch)", k, bkw);
            free(kl);
        }
        if (form == DG_FORM_INVALID && json_is_array(json_object_get(node, bkw)) &&
            json_array_size(json_object_get(node, bkw)) > 0) {
            kl = dg_loc_key(loc, bkw);
            dg_err_add(E, kl, "%s is supported only as [X, {\"type\": \"null\"}] (nullable) "
                       "or with every branch a const/enum (a choice)", bkw);
            free(kl);
        }
        return;
    }

    dg_typeinfo t = dg_type_info(node);
    json_t *en = json_object_get(node, "enum");
    if (t.present && t.valid) {
        if (!t.base) {
            kl = dg_loc_key(loc, "type");
            dg_err_add(E, kl, "type \"null\" alone has nothing to fill; use [X, \"null\"]");
            free(kl);
            return;
        }
    } else if (t.present) {
        json_t *ty = json_object_get(node, "type");
        bool simple = true;
        if (json_is_array(ty))
            for (size_t i = 0; i < json_array_size(ty); i++)
                simple = simple && json_is_string(json_array_get(ty, i)) &&
                         dg_kw_in(json_string_value(json_array_get(ty, i)), dg_simple_types);
        if (json_is_array(ty) && simple && json_array_size(ty) > 1) {
            /* valid JSON Schema, but not [X, "null"] (duplicates were reported by meta) */
            bool dup = false;
            for (size_t i = 0; i < json_array_size(ty); i++)
                for (size_t j = 0; j < i; j++)
                    dup = dup || json_equal(json_array_get(ty, i), json_array_get(ty, j));
            if (!dup) {
                kl = dg_loc_key(loc, "type");
                dg_err_add(E, kl, "union types are allowed only as [X, \"null\"]");
                free(kl);
            }
        }
        return;
    }
    const char *base = t.base;

    if (en) {
        kl = dg_loc_key(loc, "enum");
        if (json_is_array(en)) check_enum_values(L, en, kl, t.present ? node : NULL);
        free(kl);
        json_object_foreach((json_t *)node, k, v)
        {
            if (!dg_kw_is_structural(k) || !strcmp(k, "enum") || !strcmp(k, "type") ||
                !strcmp(k, "x-generate") || !strcmp(k, "x-max-tokens") ||
                !strcmp(k, "x-levels"))
                continue;
            kl = dg_loc_key(loc, k);
            dg_err_add(E, kl, "\"%s\" does not apply to an enum field", k);
            free(kl);
        }
        return;
    }
    if (!base) return; /* no type: the build pass reports it where it matters */

    /* Keywords that do not apply to the type. */
    json_object_foreach((json_t *)node, k, v)
    {
        const char *needs = NULL;
        if (dg_kw_in(k, dg_kw_string)) needs = "string";
        else if (dg_kw_in(k, dg_kw_number)) needs = "number";
        else if (dg_kw_in(k, dg_kw_array)) needs = "array";
        else if (dg_kw_in(k, dg_kw_object)) needs = "object";
        if (!needs) continue;
        bool ok = !strcmp(needs, base) ||
                  (!strcmp(needs, "number") && !strcmp(base, "integer"));
        if (!ok) {
            kl = dg_loc_key(loc, k);
            dg_err_add(E, kl, "\"%s\" does not apply to type %s (it is a %s keyword)", k,
                       base, needs);
            free(kl);
        }
    }

    if (!strcmp(base, "string")) lint_string(L, node, loc);
    else if (!strcmp(base, "integer") || !strcmp(base, "number")) lint_number(L, node, loc, base);
    else if (!strcmp(base, "array")) lint_array(L, node, loc, &t);
    else if (!strcmp(base, "object")) lint_object(L, node, loc, &t);
}

static void lint_child(lint *L, const json_t *child, const char *loc, const char *k, int depth)
{
    char *cl = dg_loc_key(loc, k);
    lint_node(L, child, cl, depth);
    free(cl);
}

static void lint_node(lint *L, const json_t *node, const char *loc, int depth)
{
    dg_errlist *E = L->errs;
    if (depth > DG_SCHEMA_MAX_DEPTH) {
        if (!L->depth_reported)
            dg_err_add(E, loc, "schema nested deeper than %d levels (deg's limit)",
                       DG_SCHEMA_MAX_DEPTH);
        L->depth_reported = true;
        return;
    }
    if (!json_is_object(node)) return; /* booleans/non-schemas: reported where used */

    const char *k;
    json_t *v;
    json_object_foreach((json_t *)node, k, v)
    {
        char *kl = dg_loc_key(loc, k);
        if (dg_kw_is_unsupported(k)) {
            if (!strcmp(k, "const"))
                dg_err_add(E, kl, "const is not supported: a single value has nothing to "
                           "decide (const belongs only in anyOf/oneOf option branches)");
            else
                dg_err_add(E, kl, "unsupported keyword \"%s\"", k);
        } else if (!strncmp(k, "x-", 2) && !dg_kw_is_structural(k)) {
            dg_err_add(E, kl, "unknown extension keyword \"%.100s\" (deg knows x-generate, "
                       "x-max-tokens and x-levels)", k);
        } else if (!dg_kw_is_structural(k) && !dg_kw_is_annotation(k)) {
            dg_err_add(E, kl, "unknown keyword \"%.100s\"", k);
        } else {
            meta_check(L, k, v, kl);
        }
        free(kl);
    }
    meta_check_node(L, node, loc);
    lint_semantics(L, node, loc);

    /* Subschemas. */
    json_t *props = json_object_get(node, "properties");
    if (json_is_object(props)) {
        char *pl = dg_loc_key(loc, "properties");
        json_object_foreach(props, k, v) lint_child(L, v, pl, k, depth + 1);
        free(pl);
    }
    static const char *const defs[] = {"$defs", "definitions"};
    for (int d = 0; d < 2; d++) {
        json_t *dd = json_object_get(node, defs[d]);
        if (!json_is_object(dd)) continue;
        char *dl = dg_loc_key(loc, defs[d]);
        json_object_foreach(dd, k, v) lint_child(L, v, dl, k, depth + 1);
        free(dl);
    }
    json_t *items = json_object_get(node, "items");
    if (json_is_object(items)) lint_child(L, items, loc, "items", depth + 1);
    const char *bkw;
    size_t xi = 0;
    dg_branch_form form = dg_branch_form_of(node, &bkw, &xi);
    if (form == DG_FORM_CHOICE) {
        char *bl = dg_loc_key(loc, bkw);
        check_choice_branches(L, json_object_get(node, bkw), bl);
        free(bl);
    } else if (form == DG_FORM_NULLABLE) {
        char *bl = dg_loc_key(loc, bkw);
        json_t *br = json_object_get(node, bkw);
        char *il = dg_loc_index(bl, 1 - xi);
        json_t *nb = json_array_get(br, 1 - xi);
        json_object_foreach(nb, k, v)
        {
            char *kl = dg_loc_key(il, k);
            meta_check(L, k, v, kl);
            free(kl);
        }
        free(il);
        il = dg_loc_index(bl, xi);
        lint_node(L, json_array_get(br, xi), il, depth + 1);
        free(il);
        free(bl);
    }
    json_t *ref = json_object_get(node, "$ref");
    if (json_is_string(ref)) {
        char why[512], *tloc = NULL;
        if (!dg_ref_resolve(L->root, json_string_value(ref), &tloc, why, sizeof why)) {
            char *rl = dg_loc_key(loc, "$ref");
            dg_err_add(E, rl, "%s", why);
            free(rl);
        }
        free(tloc);
    }
}

void dg_schema_lint(const json_t *root, dg_draft draft, dg_errlist *errs)
{
    lint L = {root, draft, errs, false};
    lint_node(&L, root, "", 0);
}
