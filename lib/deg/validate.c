/* JSON Schema validator for the response (rules in validate.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "deg/validate.h"

#include <math.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "base/utf8.h"
#include "deg/jsonptr.h"
#include "deg/parse.h"
#include "deg/pattern.h"
#include "deg/plan.h"
#include "deg/render.h"
#include "deg/schema_check.h"

#define MAX_DEPTH 2048

/* Append "/" + escaped segment to the pointer b; returns the previous length (for
 * pop), or (size_t)-1 when out of memory (b->oom set; pop then does nothing). */
static size_t sb_push(dg_strbuf *b, const char *seg, size_t len)
{
    size_t old = b->len, n = dg_jsonptr_escaped_len(seg, len);
    if (dg_sb_reserve(b, 1 + n) < 0) return (size_t)-1;
    b->p[b->len++] = '/';
    b->len = (size_t)(dg_jsonptr_escape(b->p + b->len, seg, len) - b->p);
    b->p[b->len] = 0;
    return old;
}

static size_t sb_push_index(dg_strbuf *b, size_t i)
{
    char t[32];
    int k = snprintf(t, sizeof t, "%zu", i);
    return sb_push(b, t, (size_t)k);
}

static void sb_pop(dg_strbuf *b, size_t old)
{
    if (old != (size_t)-1) dg_sb_truncate(b, old);
}

typedef struct {
    const json_t *schema;
    pcre2_code *code;
} pat_entry;

typedef struct {
    const json_t *root;
    json_t *errors;      /* NULL = count only */
    size_t n_errors;
    int quiet;           /* > 0 inside anyOf/oneOf trials: record nothing */
    dg_draft draft;      /* the root's $schema (2020-12 when absent or unknown) */
    deg_status fatal;
    int depth;
    pat_entry *pats;
    size_t n_pats, cap_pats;
    pcre2_match_data *md;
    dg_strbuf ip, sp;    /* instance and schema pointers */
} vctx;

static void add_error(vctx *c, const char *kw, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_error(vctx *c, const char *kw, const char *fmt, ...)
{
    c->n_errors++;
    if (c->quiet || !c->errors) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t old = sb_push(&c->sp, kw, strlen(kw));
    json_t *e = json_pack("{s:s, s:s, s:s, s:s}", "instance", c->ip.p ? c->ip.p : "", "schema",
                          c->sp.p ? c->sp.p : "", "keyword", kw, "msg", msg);
    sb_pop(&c->sp, old);
    if (!e || json_array_append_new(c->errors, e) < 0) c->fatal = DEG_ERR_NOMEM;
}

/* ---- equality and numbers ---------------------------------------------- */

static int is_num(const json_t *v) { return json_is_integer(v) || json_is_real(v); }

/* Exact comparison of two JSON numbers: -1, 0, 1. */
static int num_cmp(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return x < y ? -1 : x > y;
    }
    /* long double has a 64-bit significand on x86-64: exact for int64 and
     * for every double. */
    long double x = json_is_integer(a) ? (long double)json_integer_value(a) : (long double)json_real_value(a);
    long double y = json_is_integer(b) ? (long double)json_integer_value(b) : (long double)json_real_value(b);
    return x < y ? -1 : x > y;
}

int dg_validate_equal(const json_t *a, const json_t *b)
{
    if (a == b) return 1;
    if (!a || !b) return 0;
    if (is_num(a) && is_num(b)) return num_cmp(a, b) == 0;
    if (json_typeof(a) != json_typeof(b)) return 0;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b)) return 0;
        for (size_t i = 0; i < n; i++)
            if (!dg_validate_equal(json_array_get(a, i), json_array_get(b, i))) return 0;
        return 1;
    }
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b)) return 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v) {
            json_t *w = json_object_get(b, k);
            if (!w || !dg_validate_equal(v, w)) return 0;
        }
        return 1;
    }
    default: return 1; /* true, false, null: same type */
    }
}

static dg_decimal dec_norm(uint64_t m, int e)
{
    if (m == 0) return (dg_decimal){0, 0};
    while (m % 10 == 0) {
        m /= 10;
        e++;
    }
    return (dg_decimal){m, e};
}

dg_decimal dg_decimal_of_int(int64_t v)
{
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    return dec_norm(m, 0);
}

dg_decimal dg_decimal_of_double(double v)
{
    char buf[40];
    if (!isfinite(v) || v == 0) return (dg_decimal){0, 0};
    dg_float_repr(fabs(v), buf, sizeof buf); /* "4.02", "1e-05", "1.5e+300", "100.0" */
    uint64_t m = 0;
    int frac = 0, in_frac = 0;
    const char *p = buf;
    for (; *p && *p != 'e'; p++) {
        if (*p == '.') in_frac = 1;
        else if (*p >= '0' && *p <= '9') {
            m = 10 * m + (uint64_t)(*p - '0'); /* at most 17 digits + ".0" */
            frac += in_frac;
        }
    }
    int e = *p == 'e' ? atoi(p + 1) : 0;
    return dec_norm(m, e - frac);
}

bool dg_decimal_multiple(dg_decimal x, dg_decimal d)
{
    if (x.m == 0) return true;
    if (d.m == 0) return false;
    /* x / d = (x.m / d.m) * 10^(x.e - d.e); with both mantissas free of
     * trailing zeros, a negative exponent difference can never be made up */
    if (x.e < d.e) return false;
    unsigned __int128 r = x.m % d.m;
    for (int k = x.e - d.e; k > 0 && r; k--) r = (r * 10) % d.m;
    return r == 0;
}

/* multipleOf (validate.h): 1 = failed. */
static int multiple_of_failed(const json_t *inst, const json_t *db)
{
    dg_decimal x = json_is_integer(inst) ? dg_decimal_of_int(json_integer_value(inst))
                                         : dg_decimal_of_double(json_real_value(inst));
    dg_decimal d = json_is_integer(db) ? dg_decimal_of_int(json_integer_value(db))
                                       : dg_decimal_of_double(json_real_value(db));
    return !dg_decimal_multiple(x, d);
}

/* ---- helpers ----------------------------------------------------------- */

/* Draft-04's integer is a number without a fraction or exponent part as written
 * (jansson reads 2.0 and 1e2 as reals); from draft-06 on any number whose value is an
 * integer. */
static int has_type(const json_t *v, const char *t, dg_draft draft)
{
    if (!strcmp(t, "string")) return json_is_string(v);
    if (!strcmp(t, "integer"))
        return json_is_integer(v) || (draft != DG_DRAFT4 && json_is_real(v) &&
                                      trunc(json_real_value(v)) == json_real_value(v));
    if (!strcmp(t, "number")) return is_num(v);
    if (!strcmp(t, "boolean")) return json_is_boolean(v);
    if (!strcmp(t, "null")) return json_is_null(v);
    if (!strcmp(t, "object")) return json_is_object(v);
    if (!strcmp(t, "array")) return json_is_array(v);
    return 0;
}

static size_t cp_len(const json_t *s)
{
    return dg_utf8_count(json_string_value(s), json_string_length(s));
}

/* A pattern string compiled in deg's dialect (pattern.h), or NULL with *e set. */
static pcre2_code *compile_pattern(const json_t *pat, uint32_t jit, dg_regex_error *e)
{
    if (dg_parse_utf8_check(json_string_value(pat), json_string_length(pat), "pattern", NULL) ==
        DEG_OK)
        return dg_pattern_compile(json_string_value(pat), json_string_length(pat), jit, e);
    e->offset = 0;
    pcre2_get_error_message(PCRE2_ERROR_UTF8_ERR1, (PCRE2_UCHAR *)e->msg, sizeof e->msg);
    return NULL;
}

static pcre2_code *get_pattern(vctx *c, const json_t *pat)
{
    for (size_t i = 0; i < c->n_pats; i++)
        if (c->pats[i].schema == pat) return c->pats[i].code;
    dg_regex_error e;
    pcre2_code *code = compile_pattern(pat, PCRE2_JIT_COMPLETE, &e);
    if (!code) {
        c->fatal = dg_fail(DEG_ERR_SCHEMA, "validate: pattern at %s does not compile: %s at offset %zu",
                           c->sp.p ? c->sp.p : "", e.msg, e.offset);
        return NULL;
    }
    deg_status st = DG_GROW(c->pats, c->cap_pats, c->n_pats + 1);
    if (st != DEG_OK) {
        pcre2_code_free(code);
        c->fatal = dg_fail_context(st, "validate");
        return NULL;
    }
    c->pats[c->n_pats].schema = pat;
    c->pats[c->n_pats].code = code;
    c->n_pats++;
    return code;
}

static void validate_node(vctx *c, const json_t *s, const json_t *v);

/* Is v valid against s (no errors recorded)? */
static int trial(vctx *c, const json_t *s, const json_t *v)
{
    size_t before = c->n_errors;
    c->quiet++;
    validate_node(c, s, v);
    c->quiet--;
    int ok = c->n_errors == before;
    c->n_errors = before;
    return ok;
}

/* Object keywords: properties, required, additionalProperties. */
static void validate_object(vctx *c, const json_t *s, const json_t *v)
{
    const json_t *k;
    const json_t *props = json_object_get(s, "properties");
    if (json_is_object(props)) {
        const char *key;
        json_t *sub;
        json_object_foreach((json_t *)props, key, sub) {
            json_t *pv = json_object_get(v, key);
            if (!pv) continue;
            size_t o1 = sb_push(&c->sp, "properties", 10);
            size_t o2 = sb_push(&c->sp, key, strlen(key));
            size_t o3 = sb_push(&c->ip, key, strlen(key));
            validate_node(c, sub, pv);
            sb_pop(&c->ip, o3);
            sb_pop(&c->sp, o2);
            sb_pop(&c->sp, o1);
        }
    }
    if ((k = json_object_get(s, "required")) && json_is_array(k)) {
        for (size_t i = 0; i < json_array_size(k); i++) {
            const json_t *r = json_array_get(k, i);
            if (json_is_string(r) && !json_object_get(v, json_string_value(r)))
                add_error(c, "required", "required property \"%s\" is missing", json_string_value(r));
        }
    }
    if ((k = json_object_get(s, "additionalProperties"))) {
        const char *key;
        json_t *pv;
        json_object_foreach((json_t *)v, key, pv) {
            if (json_is_object(props) && json_object_get(props, key)) continue;
            if (json_is_false(k)) {
                size_t o3 = sb_push(&c->ip, key, strlen(key));
                add_error(c, "additionalProperties", "property \"%s\" is not allowed", key);
                sb_pop(&c->ip, o3);
            } else {
                size_t o1 = sb_push(&c->sp, "additionalProperties", 20);
                size_t o3 = sb_push(&c->ip, key, strlen(key));
                validate_node(c, k, pv);
                sb_pop(&c->ip, o3);
                sb_pop(&c->sp, o1);
            }
        }
    }
}

/* Array keywords: items, minItems, maxItems, uniqueItems. */
static void validate_array(vctx *c, const json_t *s, const json_t *v)
{
    const json_t *k;
    size_t n = json_array_size(v);
    if ((k = json_object_get(s, "items")) && (json_is_object(k) || json_is_boolean(k))) {
        for (size_t i = 0; i < n && !c->fatal; i++) {
            size_t o1 = sb_push(&c->sp, "items", 5);
            size_t o3 = sb_push_index(&c->ip, i);
            validate_node(c, k, json_array_get(v, i));
            sb_pop(&c->ip, o3);
            sb_pop(&c->sp, o1);
        }
    }
    if ((k = json_object_get(s, "minItems")) && is_num(k) && (double)n < json_number_value(k))
        add_error(c, "minItems", "%zu items, fewer than minItems", n);
    if ((k = json_object_get(s, "maxItems")) && is_num(k) && (double)n > json_number_value(k))
        add_error(c, "maxItems", "%zu items, more than maxItems", n);
    if ((k = json_object_get(s, "uniqueItems")) && json_is_true(k)) {
        int dup = 0;
        for (size_t i = 0; i < n && !dup; i++)
            for (size_t j = i + 1; j < n && !dup; j++)
                if (dg_validate_equal(json_array_get(v, i), json_array_get(v, j))) dup = 1;
        if (dup) add_error(c, "uniqueItems", "items are not unique");
    }
}

/* String keywords: minLength, maxLength (code points), pattern, format. */
static void validate_string(vctx *c, const json_t *s, const json_t *v)
{
    const json_t *k;
    size_t old;
    size_t len = 0;
    int counted = 0;
    if ((k = json_object_get(s, "minLength")) && is_num(k)) {
        len = cp_len(v); counted = 1;
        if ((double)len < json_number_value(k)) add_error(c, "minLength", "%zu code points, fewer than minLength", len);
    }
    if ((k = json_object_get(s, "maxLength")) && is_num(k)) {
        if (!counted) len = cp_len(v);
        if ((double)len > json_number_value(k)) add_error(c, "maxLength", "%zu code points, more than maxLength", len);
    }
    if ((k = json_object_get(s, "pattern")) && json_is_string(k)) {
        old = sb_push(&c->sp, "pattern", 7);
        pcre2_code *code = get_pattern(c, k);
        sb_pop(&c->sp, old);
        if (code) {
            pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
            if (!md) c->fatal = dg_fail(DEG_ERR_NOMEM, "validate: out of memory");
            else {
                int rc = pcre2_match(code, (PCRE2_SPTR)json_string_value(v), json_string_length(v), 0, 0, md, NULL);
                pcre2_match_data_free(md);
                if (rc == PCRE2_ERROR_NOMATCH) add_error(c, "pattern", "string does not match the pattern");
                else if (rc < 0) {
                    char m[200];
                    pcre2_get_error_message(rc, (PCRE2_UCHAR *)m, sizeof m);
                    c->fatal = dg_fail(DEG_ERR_SCHEMA, "validate: pattern match failed: %s", m);
                }
            }
        }
    }
    if ((k = json_object_get(s, "format")) && json_is_string(k)) {
        int r = dg_format_check(json_string_value(k), json_string_value(v), json_string_length(v));
        if (r == 0) add_error(c, "format", "string is not a valid %s", json_string_value(k));
    }
}

/* Number keywords: minimum, maximum, exclusive bounds, multipleOf. */
static void validate_number(vctx *c, const json_t *s, const json_t *v)
{
    const json_t *k;
    /* draft-04: a boolean exclusiveMinimum / exclusiveMaximum makes the
     * bound strict (a boolean is a schema error in later drafts) */
    int xlo = json_is_true(json_object_get(s, "exclusiveMinimum"));
    int xhi = json_is_true(json_object_get(s, "exclusiveMaximum"));
    if ((k = json_object_get(s, "minimum")) && is_num(k) && num_cmp(v, k) < xlo)
        add_error(c, xlo ? "exclusiveMinimum" : "minimum",
                  xlo ? "value is not greater than minimum (exclusiveMinimum)"
                      : "value is less than minimum");
    if ((k = json_object_get(s, "maximum")) && is_num(k) && num_cmp(v, k) > -xhi)
        add_error(c, xhi ? "exclusiveMaximum" : "maximum",
                  xhi ? "value is not less than maximum (exclusiveMaximum)"
                      : "value is greater than maximum");
    if ((k = json_object_get(s, "exclusiveMinimum")) && is_num(k) && num_cmp(v, k) <= 0)
        add_error(c, "exclusiveMinimum", "value is not greater than exclusiveMinimum");
    if ((k = json_object_get(s, "exclusiveMaximum")) && is_num(k) && num_cmp(v, k) >= 0)
        add_error(c, "exclusiveMaximum", "value is not less than exclusiveMaximum");
    if ((k = json_object_get(s, "multipleOf")) && is_num(k) && multiple_of_failed(v, k))
        add_error(c, "multipleOf", "value is not a multiple of multipleOf");
}

static void validate_node(vctx *c, const json_t *s, const json_t *v)
{
    if (c->fatal) return;
    if (json_is_true(s)) return;
    if (json_is_false(s)) { add_error(c, "false", "the schema false admits no value"); return; }
    if (!json_is_object(s)) return;
    if (++c->depth > MAX_DEPTH) {
        c->fatal = dg_fail(DEG_ERR_SCHEMA, "validate: recursive $ref or schema nesting deeper than %d "
                           "levels (at %.200s...)", MAX_DEPTH, c->sp.p ? c->sp.p : "");
        c->depth--;
        return;
    }
    size_t old;
    const json_t *k;

    if ((k = json_object_get(s, "$ref")) && json_is_string(k)) {
        char why[320], *tloc;
        const json_t *t = dg_ref_resolve(c->root, json_string_value(k), &tloc, why, sizeof why);
        free(tloc);
        if (!t) {
            c->fatal = dg_fail(DEG_ERR_SCHEMA, "validate: $ref \"%s\" at %s is not a resolvable local reference (%s)",
                               json_string_value(k), c->sp.p ? c->sp.p : "", why);
        } else if (!json_is_object(t) && !json_is_boolean(t)) {
            c->fatal = dg_fail(DEG_ERR_SCHEMA, "validate: $ref \"%s\" at %s points to %s, not a "
                               "schema (a JSON object or boolean)", json_string_value(k),
                               c->sp.p ? c->sp.p : "", dg_json_kind(t));
        } else {
            old = sb_push(&c->sp, "$ref", 4);
            validate_node(c, t, v);
            sb_pop(&c->sp, old);
        }
        if (c->draft <= DG_DRAFT7) { /* draft-07 §8.3 (draft-04/06 alike): "All other */
            c->depth--;              /* properties in a "$ref" object MUST be ignored" */
            return;
        }
    }
    if ((k = json_object_get(s, "type"))) {
        int ok = 0;
        if (json_is_string(k)) ok = has_type(v, json_string_value(k), c->draft);
        else if (json_is_array(k)) {
            for (size_t i = 0; i < json_array_size(k) && !ok; i++) {
                const json_t *t = json_array_get(k, i);
                if (json_is_string(t) && has_type(v, json_string_value(t), c->draft)) ok = 1;
            }
        }
        if (!ok) add_error(c, "type", "%s is not of the schema's type", dg_json_kind(v));
    }
    if ((k = json_object_get(s, "enum")) && json_is_array(k)) {
        int ok = 0;
        for (size_t i = 0; i < json_array_size(k) && !ok; i++) ok = dg_validate_equal(v, json_array_get(k, i));
        if (!ok) add_error(c, "enum", "value is not one of the enum values");
    }
    if ((k = json_object_get(s, "const")) && c->draft != DG_DRAFT4) { /* const: draft-06 on */
        if (!dg_validate_equal(v, k)) add_error(c, "const", "value is not the const value");
    }
    if ((k = json_object_get(s, "anyOf")) && json_is_array(k)) {
        int ok = 0;
        old = sb_push(&c->sp, "anyOf", 5);
        for (size_t i = 0; i < json_array_size(k) && !ok && !c->fatal; i++) {
            size_t o2 = sb_push_index(&c->sp, i);
            ok = trial(c, json_array_get(k, i), v);
            sb_pop(&c->sp, o2);
        }
        sb_pop(&c->sp, old);
        if (!ok && !c->fatal) add_error(c, "anyOf", "value matches none of the anyOf branches");
    }
    if ((k = json_object_get(s, "oneOf")) && json_is_array(k)) {
        size_t n_ok = 0;
        old = sb_push(&c->sp, "oneOf", 5);
        for (size_t i = 0; i < json_array_size(k) && n_ok < 2 && !c->fatal; i++) {
            size_t o2 = sb_push_index(&c->sp, i);
            n_ok += (size_t)trial(c, json_array_get(k, i), v);
            sb_pop(&c->sp, o2);
        }
        sb_pop(&c->sp, old);
        if (n_ok != 1 && !c->fatal)
            add_error(c, "oneOf", n_ok ? "value matches more than one oneOf branch"
                                       : "value matches none of the oneOf branches");
    }

    if (json_is_object(v)) validate_object(c, s, v);
    if (json_is_array(v)) validate_array(c, s, v);
    if (json_is_string(v)) validate_string(c, s, v);
    if (is_num(v)) validate_number(c, s, v);
    c->depth--;
}

deg_status dg_validate(const json_t *schema, const json_t *value, json_t *errors, size_t *n_errors)
{
    if (n_errors) *n_errors = 0;
    if (!schema || !value) return dg_fail(DEG_ERR_ARG, "validate: NULL schema or value");
    vctx c = {0};
    c.root = schema;
    c.errors = errors;
    dg_errlist E = {json_array(), false}; /* an unknown $schema: 2020-12 (deg_validate refuses it) */
    dg_schema_draft(schema, &c.draft, &E);
    json_decref(E.list);
    dg_sb_puts(&c.ip, "");
    dg_sb_puts(&c.sp, "");
    if (!c.ip.oom && !c.sp.oom) validate_node(&c, schema, value);
    for (size_t i = 0; i < c.n_pats; i++) pcre2_code_free(c.pats[i].code);
    free(c.pats);
    free(c.ip.p);
    free(c.sp.p);
    if (c.fatal) return c.fatal;
    if (c.ip.oom || c.sp.oom) /* a pointer of an error could not be written */
        return dg_fail(DEG_ERR_NOMEM, "validate: out of memory");
    if (n_errors) *n_errors = c.n_errors;
    return DEG_OK;
}

static deg_status load_json(const char *text, const char *what, json_t **out)
{
    json_error_t err;
    *out = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (!*out)
        return dg_fail(DEG_ERR_FORMAT, "%s is not valid JSON: line %d, column %d: %s", what, err.line,
                       err.column, err.text);
    return DEG_OK;
}

/* The first error of an error list as DEG_ERR_SCHEMA. */
static deg_status schema_error(dg_errlist *E)
{
    json_t *e = json_array_get(E->list, 0);
    deg_status st = dg_fail(DEG_ERR_SCHEMA, "schema at \"%s\": %s",
                            json_string_value(json_object_get(e, "loc")),
                            json_string_value(json_object_get(e, "msg")));
    json_decref(E->list);
    return st;
}

/* deg_validate's schema check: the document, its draft, the $ref targets checked so far
 * outside the walk's positions (walked). */
typedef struct {
    const json_t *root;
    dg_draft draft;
    const json_t **seen;
    size_t n_seen, cap_seen;
} schema_walk;

static deg_status check_schema(schema_walk *W, const json_t *s, const char *loc, int depth);

/* Is the (decoded) pointer ptr a position check_schema's walk reaches from the root:
 * the root, or a keyword of properties / $defs / definitions (+ a name), items /
 * additionalProperties, anyOf / oneOf (+ an index) from one? */
static int walked(const char *ptr)
{
    static const char *const MAP[] = {"properties", "$defs", "definitions", NULL};
    static const char *const ONE[] = {"items", "additionalProperties", NULL};
    static const char *const LIST[] = {"anyOf", "oneOf", NULL};
    int at_schema = 1;
    for (const char *p = ptr; *p == '/';) {
        const char *e = strchr(p + 1, '/');
        size_t n = e ? (size_t)(e - p - 1) : strlen(p + 1);
        char seg[32] = "";
        if (n < sizeof seg) memcpy(seg, p + 1, n), seg[n] = 0; /* keywords are short */
        if (!at_schema) at_schema = 1; /* a member name or an index: a schema again */
        else if (dg_kw_in(seg, MAP) || dg_kw_in(seg, LIST)) at_schema = 0;
        else if (!dg_kw_in(seg, ONE)) return 0;
        p += 1 + n;
    }
    return at_schema;
}

/* A $ref resolved up front, before the value is read (an unresolvable one is a schema
 * error whatever the value), and its target a schema. A target the walk does not reach
 * (e.g. "#/x" under an unknown keyword) is checked here, once; its errors say so. */
static deg_status check_ref(schema_walk *W, const json_t *ref, const char *kl, int depth)
{
    char why[512], *tloc = NULL;
    const json_t *t = dg_ref_resolve(W->root, json_string_value(ref), &tloc, why, sizeof why);
    if (!t) return dg_fail(DEG_ERR_SCHEMA, "schema at \"%s\": %s", kl, why);
    deg_status st = DEG_OK;
    int seen = walked(tloc);
    for (size_t i = 0; i < W->n_seen && !seen; i++) seen = W->seen[i] == t;
    if (!json_is_object(t) && !json_is_boolean(t)) {
        st = dg_fail(DEG_ERR_SCHEMA, "schema at \"%s\": $ref \"%s\" points to %s, not a schema "
                     "(a JSON object or boolean)", kl, json_string_value(ref), dg_json_kind(t));
    } else if (!seen && (st = DG_GROW(W->seen, W->cap_seen, W->n_seen + 1)) == DEG_OK) {
        W->seen[W->n_seen++] = t;
        st = check_schema(W, t, tloc, depth + 1);
        if (st == DEG_ERR_SCHEMA && !strstr(deg_errmsg(), "(checked as the target of")) {
            char *m = strdup(deg_errmsg()); /* the innermost $ref says where it was reached */
            st = dg_fail(st, "%s (checked as the target of the $ref at \"%s\")", m ? m : "", kl);
            free(m);
        }
    }
    free(tloc);
    return st;
}

/* One keyword k = v of the schema at loc (kl = loc/k): unsupported keywords refused,
 * the ones deg applies meta-checked, a pattern compiled. */
static deg_status check_keyword(schema_walk *W, const char *k, const json_t *v, const char *loc,
                                const char *kl)
{
    if (dg_kw_is_unsupported(k) && strcmp(k, "const") != 0) /* located at the keyword */
        return dg_fail(DEG_ERR_SCHEMA, "schema at \"%s\": unsupported keyword \"%s\" (deg "
                       "applies the keywords of deg-contract §5 only; deg.compile_schema "
                       "rejects it too)", kl, k);
    if (!dg_kw_is_structural(k) && !dg_kw_is_annotation(k) &&
        (W->draft != DG_DRAFT4 || strcmp(k, "id") != 0)) /* draft-04's $id */
        return DEG_OK;
    dg_errlist E = {json_array(), false};
    bool ok = E.list && dg_schema_meta_check(W->root, W->draft, k, v, kl, &E);
    if (!E.list) return dg_fail(DEG_ERR_NOMEM, "deg_validate: out of memory");
    if (!ok) return schema_error(&E);
    json_decref(E.list);
    if (!strcmp(k, "pattern")) { /* compiled up front: a bad one is an error anywhere */
        dg_regex_error e;
        pcre2_code *re = compile_pattern(v, 0, &e);
        if (!re)
            return dg_fail(DEG_ERR_SCHEMA, "schema at \"%s\": pattern does not compile: %s "
                           "at offset %zu", loc, e.msg, e.offset);
        pcre2_code_free(re);
    }
    return DEG_OK;
}

/* deg_validate's schema check (issue 19 item 8): every schema position holds
 * an object or a boolean, no keyword of the compiler's unsupported list
 * (§5; schema_check.c) appears (the validator would not apply it, so a
 * verdict would be wrong, not just incomplete; const is applied), and every
 * keyword deg applies has a value of its meta-schema type for the draft
 * (schema_check.c's meta check: "type": "Object" or "minimum": true are
 * schema errors, as python-jsonschema's check_schema says, not a verdict), with
 * the draft's rules across keywords (draft-04's exclusiveMinimum needs minimum);
 * every $ref resolves to a schema, itself checked. Unknown keywords are ignored, as
 * JSON Schema says. */
static deg_status check_schema(schema_walk *W, const json_t *s, const char *loc, int depth)
{
    if (json_is_boolean(s)) return DEG_OK;
    static const char *const NAMES[] = {"object", "array", "string", "integer", "number",
                                        "true", "false", "null"};
    if (!json_is_object(s))
        return dg_fail(DEG_ERR_SCHEMA, "schema at \"%s\": a schema must be a JSON object or "
                       "boolean, not %s", loc, NAMES[json_typeof(s)]);
    if (depth > 2048)
        return dg_fail(DEG_ERR_SCHEMA, "schema at \"%s\": nested deeper than 2048 (subschemas "
                       "and $ref hops)", loc);
    const char *k;
    json_t *v;
    deg_status st = DEG_OK;
    json_object_foreach((json_t *)s, k, v)
    {
        char *kl = dg_loc_key(loc, k);
        st = kl ? check_keyword(W, k, v, loc, kl)
                : dg_fail(DEG_ERR_NOMEM, "deg_validate: out of memory");
        free(kl);
        if (st != DEG_OK) return st;
    }
    dg_errlist E = {json_array(), false};
    bool ok = E.list && dg_schema_meta_check_node(W->root, W->draft, s, loc, &E);
    if (!E.list) return dg_fail(DEG_ERR_NOMEM, "deg_validate: out of memory");
    if (!ok) return schema_error(&E);
    json_decref(E.list);
    if (json_is_string(v = json_object_get(s, "$ref"))) { /* after the node's own keywords */
        char *kl = dg_loc_key(loc, "$ref");
        st = kl ? check_ref(W, v, kl, depth) : dg_fail(DEG_ERR_NOMEM, "deg_validate: out of memory");
        free(kl);
        if (st != DEG_OK) return st;
    }
    json_object_foreach((json_t *)s, k, v)
    {
        int map = !strcmp(k, "properties") || !strcmp(k, "$defs") || !strcmp(k, "definitions");
        int list = !strcmp(k, "anyOf") || !strcmp(k, "oneOf");
        int one = !strcmp(k, "items") || !strcmp(k, "additionalProperties");
        if (!map && !list && !one) continue;
        char *kl = dg_loc_key(loc, k);
        if (!kl) return dg_fail(DEG_ERR_NOMEM, "deg_validate: out of memory");
        if (one) {
            st = check_schema(W, v, kl, depth + 1);
        } else if (map && json_is_object(v)) {
            const char *k2;
            json_t *v2;
            json_object_foreach(v, k2, v2)
            {
                char *l2 = dg_loc_key(kl, k2);
                st = l2 ? check_schema(W, v2, l2, depth + 1)
                        : dg_fail(DEG_ERR_NOMEM, "deg_validate: out of memory");
                free(l2);
                if (st != DEG_OK) break;
            }
        } else if (list && json_is_array(v)) {
            for (size_t i = 0; i < json_array_size(v) && st == DEG_OK; i++) {
                char *l2 = dg_loc_index(kl, i);
                st = l2 ? check_schema(W, json_array_get(v, i), l2, depth + 1)
                        : dg_fail(DEG_ERR_NOMEM, "deg_validate: out of memory");
                free(l2);
            }
        } else {
            st = dg_fail(DEG_ERR_SCHEMA, "schema at \"%s\": %s must be %s", kl, k,
                         map ? "an object of schemas" : "an array of schemas");
        }
        free(kl);
        if (st != DEG_OK) return st;
    }
    return DEG_OK;
}

DEG_API deg_status deg_validate(const char *schema_json, const char *value_json, size_t *n_errors,
                                char **errors_json)
{
    if (errors_json) *errors_json = NULL;
    if (n_errors) *n_errors = 0;
    if (!schema_json || !value_json || !n_errors) return dg_fail(DEG_ERR_ARG, "deg_validate: NULL argument");
    json_t *s, *v;
    DG_TRY(load_json(schema_json, "schema", &s));
    dg_draft draft = DG_DRAFT2020;
    dg_errlist E = {json_array(), false};
    deg_status st = DEG_OK;
    if (!E.list) st = dg_fail(DEG_ERR_NOMEM, "deg_validate: out of memory");
    else if (!dg_schema_draft(s, &draft, &E) && !json_array_size(E.list))
        dg_err_add(&E, "/$schema", "$schema must be a string");
    if (st == DEG_OK && json_array_size(E.list)) st = schema_error(&E);
    else json_decref(E.list);
    if (st == DEG_OK) {
        schema_walk W = {.root = s, .draft = draft};
        st = check_schema(&W, s, "", 0);
        free(W.seen);
    }
    if (st == DEG_OK) st = load_json(value_json, "value", &v);
    if (st != DEG_OK) { json_decref(s); return st; }
    json_t *errs = json_array();
    if (!errs) st = dg_fail(DEG_ERR_NOMEM, "deg_validate: out of memory");
    else st = dg_validate(s, v, errs, n_errors);
    if (st == DEG_OK && errors_json) {
        *errors_json = json_dumps(errs, JSON_COMPACT | JSON_ENSURE_ASCII);
        if (!*errors_json) st = dg_fail(DEG_ERR_NOMEM, "deg_validate: out of memory");
    }
    json_decref(errs);
    json_decref(s);
    json_decref(v);
    return st;
}
