/* schema_api.c - public API of the schema compiler, context rendering, fill options
 * and requests (deg contract §6, §7.1, §9). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/utf8.h"
#include "deg.h"
#include "deg/plan.h"
#include "deg/render.h"
#include "deg/schema_check.h"
#include "deg/request.h"

/* JSON text -> json_t, with every failure as one {loc: "", msg} entry. Decoding keeps
 * key order (jansson >= 2.8 objects iterate in insertion order). */
json_t *dg_json_parse_text(const char *text, size_t len, int flags, dg_errlist *E,
                           deg_status *status)
{
    size_t bad;
    if (!text) {
        *status = DEG_ERR_ARG;
        dg_err_add(E, "", "no JSON text (NULL)");
        return NULL;
    }
    if (!dg_utf8_validate(text, len, &bad)) {
        *status = DEG_ERR_UTF8;
        dg_err_add(E, "", "not valid UTF-8: ill-formed byte sequence at byte offset %zu", bad);
        return NULL;
    }
    json_error_t err;
    json_t *v = json_loadb(text, len, flags | JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (!v) {
        *status = DEG_ERR_FORMAT;
        dg_err_add(E, "", "malformed JSON at line %d, column %d: %s", err.line, err.column,
                   err.text);
    }
    return v;
}

/* Integer tokens of the JSON text (outside strings) that do not fit int64: offsets. */
static json_t *find_bigints(const char *text, size_t len, json_t **spans)
{
    json_t *digits = NULL;
    *spans = NULL;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
            continue;
        }
        if (c != '-' && !(c >= '0' && c <= '9')) continue;
        size_t j = i + (c == '-'), k = j;
        while (k < len && text[k] >= '0' && text[k] <= '9') k++;
        bool integer = !(k < len && (text[k] == '.' || text[k] == 'e' || text[k] == 'E'));
        size_t end = k;
        if (!integer)
            while (end < len && strchr("0123456789.eE+-", text[end])) end++;
        /* INT64 has 19 digits: only longer or equal-length tokens can overflow. */
        if (integer && k - j >= 19 && k > j) {
            bool over = k - j > 19;
            if (!over) {
                const char *lim = c == '-' ? "9223372036854775808" : "9223372036854775807";
                over = memcmp(text + j, lim, 19) > 0;
            }
            if (over) {
                if (!digits) {
                    digits = json_array();
                    *spans = json_array();
                }
                json_array_append_new(digits, json_stringn(text + i, k - i));
                json_array_append_new(*spans, json_pack("[I,I]", (json_int_t)i, (json_int_t)k));
            }
        }
        i = end - 1;
    }
    return digits;
}

json_t *dg_json_parse_bigint(const char *text, size_t len, dg_errlist *E, deg_status *status,
                             json_t **bigints)
{
    *bigints = NULL;
    size_t bad;
    if (!text || !dg_utf8_validate(text, len, &bad) ||
        memmem(text, len, "\\u0000dgbig:", 12) != NULL)
        return dg_json_parse_text(text, len, 0, E, status);
    json_t *spans = NULL, *digits = find_bigints(text, len, &spans);
    if (!digits) return dg_json_parse_text(text, len, 0, E, status);
    /* Replace each such integer by the string "\u0000dgbig:<i>". */
    size_t cap = len + 32 * json_array_size(spans) + 1, o = 0, prev = 0;
    char *t = malloc(cap);
    json_t *v = NULL;
    if (t) {
        for (size_t i = 0; i < json_array_size(spans); i++) {
            json_t *sp = json_array_get(spans, i);
            size_t a = (size_t)json_integer_value(json_array_get(sp, 0));
            size_t b = (size_t)json_integer_value(json_array_get(sp, 1));
            memcpy(t + o, text + prev, a - prev);
            o += a - prev;
            o += (size_t)snprintf(t + o, cap - o, "\"\\u0000dgbig:%zu\"", i);
            prev = b;
        }
        memcpy(t + o, text + prev, len - prev);
        o += len - prev;
        dg_errlist E2 = {json_array(), false};
        deg_status s2;
        v = dg_json_parse_text(t, o, 0, &E2, &s2);
        json_decref(E2.list);
        free(t);
    }
    json_decref(spans);
    if (!v) {
        json_decref(digits);
        return dg_json_parse_text(text, len, 0, E, status); /* errors at the original places */
    }
    *bigints = digits;
    return v;
}

/* A big-integer placeholder outside the context: not supported there. */
static void reject_placeholders(const json_t *v, const char *loc, dg_errlist *E, int depth)
{
    if (depth > 4096) return;
    if (json_is_string(v)) {
        if (json_string_length(v) > DG_BIGINT_MARK_LEN &&
            !memcmp(json_string_value(v), DG_BIGINT_MARK, DG_BIGINT_MARK_LEN))
            dg_err_add(E, loc, "integer beyond 64 bits: only the context may hold one");
        return;
    }
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x)
        {
            char *kl = dg_loc_key(loc, k);
            reject_placeholders(x, kl, E, depth + 1);
            free(kl);
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            char *il = dg_loc_index(loc, i);
            reject_placeholders(x, il, E, depth + 1);
            free(il);
        }
    }
}

static char *errors_string(const json_t *list)
{
    return json_dumps(list, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER);
}

static deg_status fail_with_list(deg_status s, const char *what, dg_errlist *E, char **errors_json)
{
    json_t *e0 = json_array_get(E->list, 0);
    dg_fail(s, "%s: %zu problem%s; first at \"%s\": %s", what, json_array_size(E->list),
            json_array_size(E->list) == 1 ? "" : "s",
            json_string_value(json_object_get(e0, "loc")),
            json_string_value(json_object_get(e0, "msg")));
    if (errors_json) *errors_json = errors_string(E->list);
    json_decref(E->list);
    E->list = NULL;
    return s;
}

/* ------------------------------------------------------------------------ */
/* Plan                                                                      */
/* ------------------------------------------------------------------------ */

deg_status deg_plan_compile(const char *schema_json, size_t len, deg_plan **out,
                            char **errors_json)
{
    if (errors_json) *errors_json = NULL;
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_plan_compile: out is NULL");
    *out = NULL;
    dg_errlist E = {json_array(), false};
    deg_status ps;
    json_t *schema = dg_json_parse_text(schema_json, len, 0, &E, &ps);
    if (!schema) return fail_with_list(DEG_ERR_SCHEMA, "invalid schema", &E, errors_json);
    json_decref(E.list);
    json_t *errs = NULL;
    deg_status s = dg_plan_compile(schema, out, &errs);
    json_decref(schema);
    if (s == DEG_ERR_SCHEMA && errors_json) *errors_json = errors_string(errs);
    json_decref(errs);
    return s;
}

void deg_plan_free(deg_plan *plan) { dg_plan_free(plan); }

deg_status deg_plan_to_json(const deg_plan *plan, char **out)
{
    if (!plan || !out) return dg_fail(DEG_ERR_ARG, "deg_plan_to_json: NULL argument");
    json_t *j = dg_plan_to_json(plan);
    *out = j ? dg_json_render(j, 0) : NULL;
    json_decref(j);
    return *out ? DEG_OK : dg_fail(DEG_ERR_NOMEM, "deg_plan_to_json: out of memory");
}

const char *deg_plan_fingerprint(const deg_plan *plan) { return plan ? plan->fingerprint : ""; }

size_t deg_plan_num_fields(const deg_plan *plan) { return plan ? plan->n_fields : 0; }

/* ------------------------------------------------------------------------ */
/* Context                                                                   */
/* ------------------------------------------------------------------------ */

deg_status dg_context_render_json(const json_t *context, const json_t *bigints, char **out,
                                  size_t *out_len)
{
    bool placeholder = bigints && json_is_string(context) &&
                       json_string_length(context) > DG_BIGINT_MARK_LEN &&
                       !memcmp(json_string_value(context), DG_BIGINT_MARK, DG_BIGINT_MARK_LEN);
    if (json_is_string(context) && !placeholder) {
        size_t n = json_string_length(context);
        *out = malloc(n + 1);
        if (!*out) return dg_fail(DEG_ERR_NOMEM, "render context: out of memory");
        memcpy(*out, json_string_value(context), n + 1);
        if (out_len) *out_len = n;
        return DEG_OK;
    }
    *out = dg_json_render_raw(context, 0, bigints);
    if (!*out) return dg_fail_context(DEG_ERR_REQUEST, "render context");
    if (out_len) *out_len = strlen(*out);
    return DEG_OK;
}

deg_status deg_context_render(const char *context_json, size_t len, char **out, size_t *out_len)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_context_render: out is NULL");
    *out = NULL;
    dg_errlist E = {json_array(), false};
    deg_status ps = DEG_OK;
    json_t *big = NULL;
    json_t *v = dg_json_parse_bigint(context_json, len, &E, &ps, &big);
    if (!v) {
        json_t *e0 = json_array_get(E.list, 0);
        deg_status s = dg_fail(ps == DEG_ERR_UTF8 ? DEG_ERR_UTF8 : DEG_ERR_REQUEST,
                               "render context: %s",
                               json_string_value(json_object_get(e0, "msg")));
        json_decref(E.list);
        return s;
    }
    json_decref(E.list);
    deg_status s = dg_context_render_json(v, big, out, out_len);
    json_decref(v);
    json_decref(big);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

deg_fill_options deg_fill_options_default(void)
{
    deg_fill_options o = {0};
    o.max_new_tokens = 256;
    o.max_items = -1;
    o.date_order = DEG_DATE_ANY;
    o.default_offset_minutes = 0;
    o.default_offset_is_z = 1;
    o.temperature = 0;
    o.array_decode = DEG_ARRAY_DECODE_COUNT_PEAKS;
    return o;
}

static bool is_int(const json_t *v) { return json_is_integer(v); }

void dg_options_check(const json_t *opts, const char *loc, deg_fill_options *o,
                      dg_opt_ext *ext, dg_errlist *E)
{
    *o = deg_fill_options_default();
    dg_opt_ext drop;
    if (!ext) ext = &drop;
    *ext = (dg_opt_ext){0};
    if (!json_is_object(opts)) {
        dg_err_add(E, loc, "options must be an object");
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)opts, k, v)
    {
        char *kl = dg_loc_key(loc, k);
        if (!strcmp(k, "max_new_tokens")) {
            if (!is_int(v) || json_integer_value(v) < 1 || json_integer_value(v) > INT32_MAX)
                dg_err_add(E, kl, "max_new_tokens must be an integer >= 1");
            else o->max_new_tokens = (int32_t)json_integer_value(v);
        } else if (!strcmp(k, "max_items")) {
            if (json_is_null(v)) o->max_items = -1;
            else if (!is_int(v) || json_integer_value(v) < 1)
                dg_err_add(E, kl, "max_items must be an integer >= 1 or null");
            else o->max_items = json_integer_value(v);
        } else if (!strcmp(k, "date_order")) {
            if (json_is_null(v)) o->date_order = DEG_DATE_ANY;
            else if (json_is_string(v) && !strcmp(json_string_value(v), "MDY"))
                o->date_order = DEG_DATE_MDY;
            else if (json_is_string(v) && !strcmp(json_string_value(v), "DMY"))
                o->date_order = DEG_DATE_DMY;
            else dg_err_add(E, kl, "date_order must be \"MDY\", \"DMY\" or null");
        } else if (!strcmp(k, "default_offset")) {
            const char *s = json_is_string(v) ? json_string_value(v) : NULL;
            if (s && !strcmp(s, "Z")) {
                o->default_offset_minutes = 0;
                o->default_offset_is_z = 1;
            } else if (s && strlen(s) == 6 && (s[0] == '+' || s[0] == '-') && s[3] == ':' &&
                       s[1] >= '0' && s[1] <= '9' && s[2] >= '0' && s[2] <= '9' &&
                       s[4] >= '0' && s[4] <= '9' && s[5] >= '0' && s[5] <= '9' &&
                       (s[1] - '0') * 10 + (s[2] - '0') <= 23 &&
                       (s[4] - '0') * 10 + (s[5] - '0') <= 59) {
                int m = ((s[1] - '0') * 10 + (s[2] - '0')) * 60 + (s[4] - '0') * 10 + (s[5] - '0');
                o->default_offset_minutes = s[0] == '-' ? -m : m;
                o->default_offset_is_z = 0;
            } else {
                dg_err_add(E, kl, "default_offset must be \"Z\" or \"+HH:MM\" / \"-HH:MM\" "
                           "(HH 00..23, MM 00..59)");
            }
        } else if (!strcmp(k, "temperature")) {
            if (!dg_json_is_number(v) || !(dg_json_number(v) >= 0) || !isfinite(dg_json_number(v)))
                dg_err_add(E, kl, "temperature must be a finite number >= 0");
            else o->temperature = dg_json_number(v);
        } else if (!strcmp(k, "seed")) {
            if (json_is_null(v)) o->has_seed = 0;
            else if (!is_int(v) || json_integer_value(v) < 0)
                dg_err_add(E, kl, "seed must be a non-negative integer or null");
            else {
                o->has_seed = 1;
                o->seed = (uint64_t)json_integer_value(v);
            }
        } else if (!strcmp(k, "array_decode")) {
            const char *s = json_is_string(v) ? json_string_value(v) : "";
            if (!strcmp(s, "count_peaks")) o->array_decode = DEG_ARRAY_DECODE_COUNT_PEAKS;
            else if (!strcmp(s, "threshold")) o->array_decode = DEG_ARRAY_DECODE_THRESHOLD;
            else if (!strcmp(s, "hybrid")) o->array_decode = DEG_ARRAY_DECODE_HYBRID;
            else dg_err_add(E, kl, "array_decode must be \"threshold\", \"count_peaks\" or "
                            "\"hybrid\"");
        } else if (!strcmp(k, "null_margin")) {
            if (json_is_null(v)) o->has_null_margin = 0;
            else if (!dg_json_is_number(v) || !isfinite(dg_json_number(v)))
                dg_err_add(E, kl, "null_margin must be a finite number or null");
            else {
                o->has_null_margin = 1;
                o->null_margin = dg_json_number(v);
            }
        } else if (!strcmp(k, "lm_prior") || !strcmp(k, "list_prior")) {
            /* the deg.json forms (ckpt.c): lm_prior {"start": x}, list_prior
             * {"bonus": x [, "by_anchor": bool]}; null = the checkpoint's */
            int lm = !strcmp(k, "lm_prior");
            const char *field = lm ? "start" : "bonus";
            json_t *x = json_object_get(v, field);
            json_t *ba = lm ? NULL : json_object_get(v, "by_anchor");
            int *has = lm ? &ext->has_lm_prior : &ext->has_list_prior;
            double *dst = lm ? &ext->lm_prior_start : &ext->list_prior_bonus;
            if (json_is_null(v)) *has = 0;
            else if (!json_is_object(v) || json_object_size(v) != 1 + (ba != NULL) ||
                     !dg_json_is_number(x) ||
                     !(dg_json_number(x) >= 0 && dg_json_number(x) <= DG_PRIOR_MAX) ||
                     (ba && !json_is_boolean(ba)))
                dg_err_add(E, kl, "%s must be null or {\"%s\": a number in [0, %g]%s}", k, field,
                           DG_PRIOR_MAX, lm ? "" : " [, \"by_anchor\": boolean]");
            else {
                *has = 1;
                *dst = dg_json_number(x);
                if (!lm) ext->list_prior_by_anchor = json_is_true(ba);
            }
        } else if (!strcmp(k, "deadline_ms") || !strcmp(k, "max_fields") ||
                   !strcmp(k, "max_fork_tokens")) {
            int64_t *dst = !strcmp(k, "deadline_ms") ? &ext->deadline_ms
                           : !strcmp(k, "max_fields") ? &ext->max_fields
                                                      : &ext->max_fork_tokens;
            if (json_is_null(v)) *dst = 0;
            else if (!is_int(v) || json_integer_value(v) < 1)
                dg_err_add(E, kl, "%s must be an integer >= 1 or null", k);
            else *dst = json_integer_value(v);
        } else {
            dg_err_add(E, kl, "unknown option \"%.100s\"", k);
        }
        free(kl);
    }
    if (o->temperature > 0 && !o->has_seed) {
        char *kl = dg_loc_key(loc, "seed");
        dg_err_add(E, kl, "temperature > 0 requires a seed (an integer, not null)");
        free(kl);
    }
}

deg_status deg_fill_options_parse(const char *options_json, size_t len, deg_fill_options *out,
                                  char **errors_json)
{
    if (errors_json) *errors_json = NULL;
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_fill_options_parse: out is NULL");
    *out = deg_fill_options_default();
    dg_errlist E = {json_array(), false};
    deg_status ps;
    json_t *v = dg_json_parse_text(options_json, len, 0, &E, &ps);
    deg_fill_options o;
    if (v) dg_options_check(v, "", &o, NULL, &E);
    json_decref(v);
    if (json_array_size(E.list))
        return fail_with_list(DEG_ERR_REQUEST, "invalid options", &E, errors_json);
    json_decref(E.list);
    *out = o;
    return DEG_OK;
}

/* ------------------------------------------------------------------------ */
/* Request                                                                   */
/* ------------------------------------------------------------------------ */

struct deg_request {
    json_t *json;
    dg_plan *plan;
    char *context;
    size_t context_len;
    char *model;
    deg_fill_options options;
    dg_opt_ext ext;
};

dg_opt_ext dg_request_ext(const deg_request *request)
{
    return request ? request->ext : (dg_opt_ext){0};
}

void deg_request_free(deg_request *r)
{
    if (!r) return;
    json_decref(r->json);
    dg_plan_free(r->plan);
    free(r->context);
    free(r->model);
    free(r);
}

deg_status deg_request_parse(const char *request_json, size_t len, deg_request **out,
                             char **errors_json)
{
    if (errors_json) *errors_json = NULL;
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_request_parse: out is NULL");
    *out = NULL;
    dg_errlist E = {json_array(), false};
    deg_status ps;
    json_t *big = NULL;
    json_t *j = dg_json_parse_bigint(request_json, len, &E, &ps, &big);
    if (!j) return fail_with_list(DEG_ERR_REQUEST, "invalid request", &E, errors_json);
    deg_request *r = calloc(1, sizeof *r);
    if (!r) {
        json_decref(j);
        json_decref(E.list);
        return dg_fail(DEG_ERR_NOMEM, "deg_request_parse: out of memory");
    }
    r->json = j;
    r->options = deg_fill_options_default();
    if (big && json_is_object(j)) {
        const char *k;
        json_t *v;
        size_t before = json_array_size(E.list);
        json_object_foreach(j, k, v)
        {
            if (!strcmp(k, "context")) continue;
            char *kl = dg_loc_key("", k);
            reject_placeholders(v, kl, &E, 0);
            free(kl);
        }
        if (json_array_size(E.list) > before) {
            json_decref(big);
            deg_request_free(r);
            return fail_with_list(DEG_ERR_REQUEST, "invalid request", &E, errors_json);
        }
    }
    bool envelope_bad = false, schema_bad = false;
    if (!json_is_object(j)) {
        dg_err_add(&E, "", "a request must be a JSON object {context, schema, model, options}");
        envelope_bad = true;
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v)
        {
            if (strcmp(k, "context") && strcmp(k, "schema") && strcmp(k, "model") &&
                strcmp(k, "options")) {
                char *kl = dg_loc_key("", k);
                dg_err_add(&E, kl, "unknown request field \"%.100s\"", k);
                free(kl);
                envelope_bad = true;
            }
        }
        json_t *ctx = json_object_get(j, "context");
        if (!ctx) {
            dg_err_add(&E, "", "missing field \"context\"");
            envelope_bad = true;
        } else if ((!json_is_string(ctx) && !json_is_object(ctx) && !json_is_array(ctx)) ||
                   (big && json_is_string(ctx) && json_string_length(ctx) > DG_BIGINT_MARK_LEN &&
                    !memcmp(json_string_value(ctx), DG_BIGINT_MARK, DG_BIGINT_MARK_LEN))) {
            dg_err_add(&E, "/context", "context must be a string, an object or an array");
            envelope_bad = true;
        } else if (dg_context_render_json(ctx, big, &r->context, &r->context_len) != DEG_OK) {
            dg_err_add(&E, "/context", "%s", deg_errmsg());
            envelope_bad = true;
        }
        json_t *m = json_object_get(j, "model");
        if (m && !json_is_string(m)) {
            dg_err_add(&E, "/model", "model must be a string");
            envelope_bad = true;
        } else {
            r->model = strdup(m ? json_string_value(m) : "deg-latest");
        }
        json_t *o = json_object_get(j, "options");
        if (o && !json_is_null(o)) {
            size_t before = json_array_size(E.list);
            dg_options_check(o, "/options", &r->options, &r->ext, &E);
            envelope_bad = envelope_bad || json_array_size(E.list) > before;
        }
        json_t *s = json_object_get(j, "schema");
        if (!s) {
            dg_err_add(&E, "", "missing field \"schema\"");
            envelope_bad = true;
        } else {
            json_t *errs = NULL;
            if (dg_plan_compile(s, &r->plan, &errs) != DEG_OK) {
                schema_bad = true;
                size_t i;
                json_t *e;
                json_array_foreach(errs, i, e)
                {
                    const char *l = json_string_value(json_object_get(e, "loc"));
                    size_t n = strlen(l) + 8;
                    char *sl = malloc(n);
                    snprintf(sl, n, "/schema%s", l);
                    dg_err_add(&E, sl, "%s", json_string_value(json_object_get(e, "msg")));
                    free(sl);
                }
                json_decref(errs);
            }
        }
    }
    json_decref(big);
    if (envelope_bad || schema_bad) {
        deg_request_free(r);
        return fail_with_list(envelope_bad ? DEG_ERR_REQUEST : DEG_ERR_SCHEMA,
                              "invalid request", &E, errors_json);
    }
    json_decref(E.list);
    if (!r->model) {
        deg_request_free(r);
        return dg_fail(DEG_ERR_NOMEM, "deg_request_parse: out of memory");
    }
    *out = r;
    return DEG_OK;
}

const deg_plan *deg_request_plan(const deg_request *r) { return r ? r->plan : NULL; }

const char *deg_request_context(const deg_request *r, size_t *len)
{
    if (len) *len = r ? r->context_len : 0;
    return r ? r->context : NULL;
}

const char *deg_request_model(const deg_request *r) { return r ? r->model : NULL; }

deg_fill_options deg_request_options(const deg_request *r)
{
    return r ? r->options : deg_fill_options_default();
}
