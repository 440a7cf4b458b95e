/* Response assembly (rules in response.h). */
#include "deg/response.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "deg/jsonptr.h"
#include "deg/render.h"
#include "deg/validate.h"

enum { NODE_FIELD = 1, NODE_ARRAY = 2, NODE_OBJECT = 3 };

typedef struct {
    const dg_plan *plan;
    json_t *index;      /* display pointer -> kind * 2^32 + node index */
    json_t *fields, *arrays; /* outcomes */
    json_t *meta;       /* response meta being built */
    json_t *seen_f, *seen_a; /* outcome keys consumed */
    size_t used;        /* outcome entries consumed */
    long long generated;
    deg_status st;
} actx;

static deg_status fail_nomem(actx *c)
{
    if (c->st == DEG_OK) c->st = dg_fail(DEG_ERR_NOMEM, "response: out of memory");
    return c->st;
}

/* The schema node at a (decoded) JSON pointer, following local $refs of nodes that
 * have no "properties" of their own. */
static const json_t *schema_at(const json_t *root, const char *ptr)
{
    const json_t *cur = dg_jsonptr_get(root, ptr, NULL);
    for (int hops = 0; cur && hops < 64; hops++) {
        const json_t *ref = json_object_get(cur, "$ref");
        if (!json_is_string(ref) || json_object_get(cur, "properties")) break;
        const char *r = json_string_value(ref);
        if (r[0] != '#') break;
        char why[320], *tloc;
        cur = dg_ref_resolve(root, r, &tloc, why, sizeof why);
        free(tloc);
    }
    return cur;
}

static int lookup(actx *c, const char *display, size_t *idx)
{
    json_t *v = json_object_get(c->index, display);
    if (!v) return 0;
    json_int_t x = json_integer_value(v);
    *idx = (size_t)(x & 0xffffffff);
    return (int)(x >> 32);
}

static json_t *build_object(actx *c, size_t obj, size_t *idx, size_t n_idx);

/* Take the outcome entry for a concrete pointer out of `from`. */
static json_t *take(actx *c, json_t *from, const char *concrete)
{
    json_t *e = json_object_get(from, concrete);
    if (e) {
        c->used++;
        if (json_object_set(from == c->fields ? c->seen_f : c->seen_a, concrete, json_true()) < 0)
            fail_nomem(c);
    }
    return e;
}

static void add_field_meta(actx *c, const char *concrete, json_t *entry)
{
    json_t *m = json_object_get(entry, "meta");
    if (!m) return;
    json_t *g = json_object_get(m, "generated_tokens");
    if (json_is_integer(g)) c->generated += json_integer_value(g);
    if (json_object_set(c->meta, concrete, m) < 0) fail_nomem(c);
}

/* Value of the node (kind, i) at concrete indices idx; NULL = omitted. */
static json_t *build_node(actx *c, int kind, size_t i, size_t *idx, size_t n_idx)
{
    const dg_plan *p = c->plan;
    if (kind == NODE_OBJECT) return build_object(c, i, idx, n_idx);
    if (kind == NODE_FIELD) {
        char *ptr = dg_path_pointer(&p->fields[i].path, idx, n_idx);
        if (!ptr) { fail_nomem(c); return NULL; }
        json_t *e = take(c, c->fields, ptr);
        json_t *v = NULL;
        if (e) {
            if (!json_is_object(e)) {
                c->st = dg_fail(DEG_ERR_ARG, "response: outcome for %s is not an object", ptr);
            } else {
                add_field_meta(c, ptr, e);
                v = json_object_get(e, "value");
                if (v) json_incref(v);
            }
        }
        free(ptr);
        return v;
    }
    /* array */
    const dg_array_plan *a = &p->arrays[i];
    char *ptr = dg_path_pointer(&a->path, idx, n_idx);
    if (!ptr) { fail_nomem(c); return NULL; }
    json_t *e = take(c, c->arrays, ptr);
    if (!e) { free(ptr); return NULL; }
    json_t *items = json_object_get(e, "items");
    json_t *dropped = json_object_get(e, "dropped");
    if (!json_is_integer(items) || json_integer_value(items) < 0 || json_integer_value(items) > 1000000 ||
        (dropped && (!json_is_integer(dropped) || json_integer_value(dropped) < 0))) {
        c->st = dg_fail(DEG_ERR_ARG, "response: array outcome %s needs \"items\" (0..1000000) and an optional "
                        "non-negative \"dropped\"", ptr);
        free(ptr);
        return NULL;
    }
    size_t n = (size_t)json_integer_value(items);
    json_t *m = json_object();
    json_t *extra = json_object_get(e, "meta");
    if (!m || json_object_set_new(m, "mode", json_string("array")) < 0 ||
        json_object_set_new(m, "items", json_integer((json_int_t)n)) < 0 ||
        (dropped && json_integer_value(dropped) > 0 && json_object_set(m, "dropped", dropped) < 0) ||
        (json_is_object(extra) && json_object_update_missing(m, extra) < 0) ||
        json_object_set_new(c->meta, ptr, m) < 0) {
        fail_nomem(c);
        free(ptr);
        return NULL;
    }
    char *item_display = dg_loc_key(a->pointer, "*");
    free(ptr);
    if (!item_display) { fail_nomem(c); return NULL; }
    size_t ci;
    int ck = lookup(c, item_display, &ci);
    free(item_display);
    json_t *arr = json_array();
    if (!arr) { fail_nomem(c); return NULL; }
    size_t *sub = malloc((n_idx + 1) * sizeof *sub);
    if (!sub) { json_decref(arr); fail_nomem(c); return NULL; }
    if (n_idx) memcpy(sub, idx, n_idx * sizeof *sub);
    for (size_t k = 0; k < n && c->st == DEG_OK; k++) {
        sub[n_idx] = k;
        json_t *v = ck ? build_node(c, ck, ci, sub, n_idx + 1) : NULL;
        /* An item whose value is missing stays in place as null only if
         * the runtime said so; a missing item leaf is an error. */
        if (!v) {
            if (c->st == DEG_OK) {
                char *ip = dg_path_pointer(&a->path, idx, n_idx);
                c->st = dg_fail(DEG_ERR_ARG, "response: array %s has %zu items but item %zu has no value",
                                ip ? ip : "?", n, k);
                free(ip);
            }
            break;
        }
        if (json_array_append_new(arr, v) < 0) fail_nomem(c);
    }
    free(sub);
    return arr;
}

static json_t *build_object(actx *c, size_t obj, size_t *idx, size_t n_idx)
{
    const dg_object_plan *o = &c->plan->objects[obj];
    const json_t *s = schema_at(c->plan->schema, o->schema_loc);
    const json_t *props = s ? json_object_get(s, "properties") : NULL;
    json_t *out = json_object();
    if (!out) { fail_nomem(c); return NULL; }
    const char *key;
    json_t *sub;
    json_object_foreach((json_t *)props, key, sub) {
        if (c->st != DEG_OK) break;
        char *disp = dg_loc_key(o->pointer, key);
        if (!disp) { fail_nomem(c); break; }
        size_t ni;
        int kind = lookup(c, disp, &ni);
        free(disp);
        if (!kind) continue;
        json_t *v = build_node(c, kind, ni, idx, n_idx);
        if (v && json_object_set_new(out, key, v) < 0) fail_nomem(c);
    }
    (void)sub;
    return out;
}

static int index_add(json_t *index, const char *ptr, int kind, size_t i)
{
    return json_object_set_new(index, ptr, json_integer(((json_int_t)kind << 32) | (json_int_t)i));
}

deg_status dg_response_assemble(const dg_plan *plan, const json_t *outcomes, json_t **response,
                                json_t **errors)
{
    *response = NULL;
    if (errors) *errors = NULL;
    if (!plan || !json_is_object(outcomes))
        return dg_fail(DEG_ERR_ARG, "response: plan and an outcomes object are required");
    json_t *fields = json_object_get(outcomes, "fields");
    json_t *arrays = json_object_get(outcomes, "arrays");
    json_t *usage = json_object_get(outcomes, "usage");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)outcomes, k, v)
        if (strcmp(k, "fields") && strcmp(k, "arrays") && strcmp(k, "usage"))
            return dg_fail(DEG_ERR_ARG, "response: unknown outcomes member \"%s\" (fields, arrays, usage)", k);
    if ((fields && !json_is_object(fields)) || (arrays && !json_is_object(arrays)) ||
        (usage && !json_is_object(usage)))
        return dg_fail(DEG_ERR_ARG, "response: outcomes fields/arrays/usage must be objects");
    json_t *pt = usage ? json_object_get(usage, "prompt_tokens") : NULL;
    if (pt && (!json_is_integer(pt) || json_integer_value(pt) < 0))
        return dg_fail(DEG_ERR_ARG, "response: usage.prompt_tokens must be a non-negative integer");

    actx c = {0};
    c.plan = plan;
    c.fields = fields;
    c.arrays = arrays;
    c.index = json_object();
    c.meta = json_object();
    c.seen_f = json_object();
    c.seen_a = json_object();
    if (!c.index || !c.meta || !c.seen_f || !c.seen_a) { fail_nomem(&c); goto out; }
    for (size_t i = 0; i < plan->n_fields; i++)
        if (index_add(c.index, plan->fields[i].pointer, NODE_FIELD, i) < 0) { fail_nomem(&c); goto out; }
    for (size_t i = 0; i < plan->n_arrays; i++)
        if (index_add(c.index, plan->arrays[i].pointer, NODE_ARRAY, i) < 0) { fail_nomem(&c); goto out; }
    for (size_t i = 0; i < plan->n_objects; i++)
        if (index_add(c.index, plan->objects[i].pointer, NODE_OBJECT, i) < 0) { fail_nomem(&c); goto out; }

    json_t *value = plan->n_objects ? build_object(&c, 0, NULL, 0) : json_object();
    if (c.st != DEG_OK) { json_decref(value); goto out; }
    size_t total = (fields ? json_object_size(fields) : 0) + (arrays ? json_object_size(arrays) : 0);
    if (c.used != total) {
        /* name one outcome the plan did not reach */
        const char *bad = "";
        json_object_foreach(fields, k, v) if (!json_object_get(c.seen_f, k)) { bad = k; break; }
        if (!*bad && arrays) json_object_foreach(arrays, k, v) if (!json_object_get(c.seen_a, k)) { bad = k; break; }
        c.st = dg_fail(DEG_ERR_ARG, "response: %zu outcome entr%s match no node the plan reaches "
                       "(e.g. \"%s\")", total - c.used, total - c.used == 1 ? "y does" : "ies do", bad);
        json_decref(value);
        goto out;
    }
    json_t *resp = json_pack("{s:o, s:O, s:{s:I, s:I}, s:s}", "value", value, "meta", c.meta, "usage",
                             "prompt_tokens", pt ? json_integer_value(pt) : (json_int_t)0,
                             "generated_tokens", (json_int_t)c.generated, "plan", plan->fingerprint);
    if (!resp) { fail_nomem(&c); goto out; }
    json_t *errs = json_array();
    size_t n_err = 0;
    if (!errs) { json_decref(resp); fail_nomem(&c); goto out; }
    c.st = dg_validate(plan->schema, json_object_get(resp, "value"), errs, &n_err);
    if (c.st == DEG_OK && n_err > 0) {
        json_t *e0 = json_array_get(errs, 0);
        c.st = dg_fail(DEG_ERR_FILL, "FillError: the filled value is invalid against the schema (%zu violation%s; "
                       "first at \"%s\": %s)", n_err, n_err == 1 ? "" : "s",
                       json_string_value(json_object_get(e0, "instance")),
                       json_string_value(json_object_get(e0, "msg")));
        if (errors) *errors = errs;
        else json_decref(errs);
        json_decref(resp);
        goto out;
    }
    json_decref(errs);
    if (c.st != DEG_OK) { json_decref(resp); goto out; }
    *response = resp;
out:
    json_decref(c.index);
    json_decref(c.meta);
    json_decref(c.seen_f);
    json_decref(c.seen_a);
    return c.st;
}

DEG_API deg_status deg_response_assemble(const deg_plan *plan, const char *outcomes_json,
                                         char **response_json, char **errors_json)
{
    if (response_json) *response_json = NULL;
    if (errors_json) *errors_json = NULL;
    if (!plan || !outcomes_json || !response_json)
        return dg_fail(DEG_ERR_ARG, "deg_response_assemble: NULL argument");
    json_error_t jerr;
    json_t *o = json_loads(outcomes_json, JSON_ALLOW_NUL, &jerr);
    if (!o)
        return dg_fail(DEG_ERR_ARG, "deg_response_assemble: outcomes are not valid JSON: line %d, column %d: %s",
                       jerr.line, jerr.column, jerr.text);
    json_t *resp = NULL, *errs = NULL;
    deg_status st = dg_response_assemble(plan, o, &resp, &errs);
    json_decref(o);
    if (st == DEG_ERR_FILL && errs && errors_json) {
        *errors_json = dg_json_render(errs, 0);
        if (!*errors_json) st = DEG_ERR_NOMEM;
    }
    json_decref(errs);
    if (st != DEG_OK) return st;
    *response_json = dg_json_render(resp, 0);
    json_decref(resp);
    return *response_json ? DEG_OK : DEG_ERR_NOMEM;
}
