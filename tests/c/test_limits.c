/* Work limits and cancellation (issue 19 item 4): deg_cancel tokens set from
 * another thread stop deg_fill_ex / deg_fill_many_ex / deg_generate_ex within
 * one unit of work; deadlines, max_fields and max_fork_tokens (call limits
 * and request options) fail with DEG_ERR_LIMIT; in a deg_fill_many_ex batch
 * only the stopped request fails and the others are bitwise unchanged. Tiny
 * random models (tests/goldens). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/run.h"
#include "deg.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static deg_ckpt *make_ckpt(uint64_t seed)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    snprintf(dir, sizeof dir, "%s/limits-test-%d", DEG_BUILD_ROOT, (int)getpid());
    cr_assert_eq(deg_ckpt_create_random(model, seed, dir), DEG_OK, "%s", deg_errmsg());
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    return k;
}

static char *request_of(const char *context, const char *schema, const char *options)
{
    json_t *r = json_pack("{s:s, s:o}", "context", context, "schema", json_loads(schema, 0, NULL));
    cr_assert(json_object_get(r, "schema"), "schema is JSON");
    if (options) json_object_set_new(r, "options", json_loads(options, 0, NULL));
    char *t = json_dumps(r, JSON_PRESERVE_ORDER);
    json_decref(r);
    return t;
}

/* ~n bytes of words (about n / 4 tokens on the tiny tokenizer) */
static char *long_text(size_t n)
{
    char *c = malloc(n + 64);
    size_t len = 0;
    const char *w[] = {"alpha ", "beta ", "42 ", "gamma, ", "on 5 March 2026 ", "x@y.org "};
    for (size_t i = 0; len + 20 < n; i++) {
        const char *s = w[(i * 7) % 6];
        memcpy(c + len, s, strlen(s));
        len += strlen(s);
    }
    c[len] = 0;
    return c;
}

static const char *SMALL = "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"boolean\"}, "
                           "\"n\": {\"type\": [\"number\", \"null\"]}}}";

typedef struct canceller {
    deg_cancel *c;
    int delay_ms;
    double at;
} canceller;

static void *cancel_later(void *p)
{
    canceller *x = p;
    usleep((useconds_t)x->delay_ms * 1000);
    x->at = now();
    deg_cancel_set(x->c);
    return NULL;
}

Test(limits, cancel_token_basics)
{
    deg_cancel *c = NULL;
    cr_assert_eq(deg_cancel_new(&c), DEG_OK);
    cr_assert_eq(deg_cancel_is_set(c), 0);
    deg_cancel_set(c);
    cr_assert_eq(deg_cancel_is_set(c), 1);
    deg_cancel_reset(c);
    cr_assert_eq(deg_cancel_is_set(c), 0);
    deg_cancel_free(c);
    deg_cancel_free(NULL);
    cr_assert_eq(deg_cancel_new(NULL), DEG_ERR_ARG);
    cr_assert_str_eq(deg_status_name(DEG_ERR_CANCELLED), "DEG_ERR_CANCELLED");
    cr_assert_str_eq(deg_status_name(DEG_ERR_LIMIT), "DEG_ERR_LIMIT");
    deg_run_limits l = deg_run_limits_default();
    cr_assert(l.cancel == NULL && l.deadline_ms == DEG_DEFAULT_DEADLINE_MS &&
              l.max_fields == DEG_DEFAULT_MAX_FIELDS &&
              l.max_fork_tokens == DEG_DEFAULT_MAX_FORK_TOKENS);
    cr_assert(DEG_DEFAULT_MAX_FIELDS == 4096 && DEG_DEFAULT_MAX_FORK_TOKENS == 1048576 &&
              DEG_MAX_FORK_LEN == 8192 && DEG_DEFAULT_DEADLINE_MS == 600000);
}

/* Bounded by default in time too (issue 19): a call given no limits runs
 * under the default deadline (10 min per request; in deg_fill_many_ex times
 * the call's requests), and every limit's message says where it came from
 * and how to lift it (the C field and the Python keyword). The deadline is
 * moved into the past here instead of waiting 10 minutes. */
Test(limits, default_deadline_and_how_to_lift)
{
    dg_limits L;
    dg_limits_init(&L, NULL, 1);
    cr_assert_eq(L.deadline_ms, DEG_DEFAULT_DEADLINE_MS);
    cr_assert(L.deadline > dg_now() + 590.0 && L.deadline < dg_now() + 610.0);
    cr_assert_eq(dg_limits_check(&L, "prefill"), DEG_OK);
    L.deadline = dg_now() - 1.0;
    cr_assert_eq(dg_limits_check(&L, "prefill"), DEG_ERR_LIMIT);
    cr_assert(strstr(deg_errmsg(), "deadline of 600000 ms passed during prefill; to lift it: it "
                                   "is libdeg's default deadline (DEG_DEFAULT_DEADLINE_MS"),
              "%s", deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "deg_run_limits.deadline_ms (C)") &&
              strstr(deg_errmsg(), "deg.fill(limits={\"deadline_ms\": N})") &&
              strstr(deg_errmsg(), "Model.generate(deadline_ms=N)") &&
              strstr(deg_errmsg(), "0 = none"), "%s", deg_errmsg());
    /* deg_fill_many_ex of 3 requests: the default is per request */
    deg_run_limits d = deg_run_limits_default();
    dg_limits_init(&L, &d, 3);
    cr_assert_eq(L.deadline_ms, 3 * DEG_DEFAULT_DEADLINE_MS);
    cr_assert_eq(L.deadline_from, DG_FROM_DEFAULT);
    /* the caller's own deadline: not scaled, "raise" it */
    d.deadline_ms = 1000;
    dg_limits_init(&L, &d, 3);
    cr_assert_eq(L.deadline_ms, 1000);
    L.deadline = dg_now() - 1.0;
    cr_assert_eq(dg_limits_check(&L, "the fork rounds"), DEG_ERR_LIMIT);
    cr_assert(strstr(deg_errmsg(), "deadline of 1000 ms passed during the fork rounds; to lift "
                                   "it: raise deg_run_limits.deadline_ms (C)"), "%s",
              deg_errmsg());
    cr_assert_null(strstr(deg_errmsg(), "default"), "%s", deg_errmsg());
    /* a request's tighter option: it says so, and offers no lift */
    dg_limits_init(&L, &d, 3);
    dg_limits_tighten(&L, 500, 7, 0);
    cr_assert(L.deadline_from == DG_FROM_REQUEST && L.fields_from == DG_FROM_REQUEST &&
              L.fork_tokens_from == DG_FROM_DEFAULT && L.max_fields == 7);
    L.deadline = dg_now() - 1.0;
    cr_assert_eq(dg_limits_check(&L, "prefill"), DEG_ERR_LIMIT);
    cr_assert(strstr(deg_errmsg(), "deadline of 500 ms passed during prefill; set by the "
                                   "request's options.deadline_ms"), "%s", deg_errmsg());
    cr_assert_null(strstr(deg_errmsg(), DG_LIMIT_HINT_MARK), "%s", deg_errmsg());
    /* 0 = none */
    d.deadline_ms = 0;
    dg_limits_init(&L, &d, 1);
    cr_assert(L.deadline == 0 && dg_limits_check(&L, "prefill") == DEG_OK);
}

/* A token already set: the fill stops before any work, the checkpoint stays
 * usable, and the same request then fills exactly as without limits. */
Test(limits, fill_cancel_preset_then_reuse)
{
    deg_ckpt *k = make_ckpt(3);
    char *req = request_of("Order 4711 from ACME, total $12.50.", SMALL, NULL);
    deg_cancel *c = NULL;
    cr_assert_eq(deg_cancel_new(&c), DEG_OK);
    deg_cancel_set(c);
    deg_run_limits l = deg_run_limits_default();
    l.cancel = c;
    char *resp = NULL, *errs = NULL;
    deg_status s = deg_fill_ex(k, req, strlen(req), &l, &resp, &errs);
    cr_assert_eq(s, DEG_ERR_CANCELLED, "%s", deg_status_name(s));
    cr_assert(strstr(deg_errmsg(), "cancelled during prefill"), "%s", deg_errmsg());
    cr_assert_null(resp);
    cr_assert(errs && strstr(errs, "cancelled"), "%s", errs ? errs : "-");
    deg_free(errs);
    char *plain = NULL;
    cr_assert_eq(deg_fill(k, req, strlen(req), &plain, NULL), DEG_OK, "%s", deg_errmsg());
    deg_cancel_reset(c);
    cr_assert_eq(deg_fill_ex(k, req, strlen(req), &l, &resp, NULL), DEG_OK, "%s", deg_errmsg());
    cr_assert_str_eq(resp, plain);
    deg_free(resp);
    deg_free(plain);
    deg_cancel_free(c);
    free(req);
    deg_ckpt_free(k);
}

/* Cancel from another thread while a long context is prefilled: the call
 * returns DEG_ERR_CANCELLED within one 256-token pass, not after the whole
 * prefill. */
Test(limits, fill_cancel_from_thread, .timeout = 600)
{
    deg_ckpt *k = make_ckpt(5);
    char *ctx = long_text(60000); /* ~15k tokens: seconds of prefill even unloaded */
    char *req = request_of(ctx, SMALL, NULL);
    deg_cancel *c = NULL;
    cr_assert_eq(deg_cancel_new(&c), DEG_OK);
    deg_run_limits l = deg_run_limits_default();
    l.cancel = c;
    canceller x = {c, 100, 0};
    pthread_t th;
    pthread_create(&th, NULL, cancel_later, &x);
    char *resp = NULL;
    deg_status s = deg_fill_ex(k, req, strlen(req), &l, &resp, NULL);
    double done = now();
    pthread_join(th, NULL);
    cr_assert_eq(s, DEG_ERR_CANCELLED, "%s: %s", deg_status_name(s), deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "cancelled during prefill"), "%s", deg_errmsg());
    cr_assert(done - x.at < 10.0, "returned %.2f s after the cancel", done - x.at);
    cr_assert_null(resp);
    deg_cancel_free(c);
    free(req);
    free(ctx);
    deg_ckpt_free(k);
}

/* Deadline as a request option and as a call limit. */
Test(limits, fill_deadline, .timeout = 600)
{
    deg_ckpt *k = make_ckpt(7);
    char *ctx = long_text(60000);
    char *req = request_of(ctx, SMALL, "{\"deadline_ms\": 50}");
    char *errs = NULL, *resp = NULL;
    double t0 = now();
    deg_status s = deg_fill(k, req, strlen(req), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_LIMIT, "%s: %s", deg_status_name(s), deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "deadline of 50 ms passed during prefill"), "%s",
              deg_errmsg());
    cr_assert(now() - t0 < 30.0);
    deg_free(errs);
    free(req);
    req = request_of(ctx, SMALL, NULL);
    deg_run_limits l = deg_run_limits_default();
    l.deadline_ms = 40;
    s = deg_fill_ex(k, req, strlen(req), &l, &resp, NULL);
    cr_assert_eq(s, DEG_ERR_LIMIT, "%s: %s", deg_status_name(s), deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "deadline of 40 ms"), "%s", deg_errmsg());
    free(req);
    /* bad option values are request errors */
    const char *bad[] = {"{\"deadline_ms\": 0}", "{\"max_fields\": -3}",
                         "{\"max_fork_tokens\": 1.5}", "{\"deadline_ms\": true}"};
    for (size_t i = 0; i < 4; i++) {
        req = request_of("x", SMALL, bad[i]);
        s = deg_fill(k, req, strlen(req), &resp, &errs);
        cr_assert_eq(s, DEG_ERR_REQUEST, "%s", bad[i]);
        cr_assert(errs && strstr(errs, "must be an integer >= 1 or null"), "%s", errs);
        deg_free(errs);
        free(req);
    }
    /* null = no limit; options parse accepts them */
    deg_fill_options o;
    const char *okopt = "{\"deadline_ms\": null, \"max_fields\": 10, \"max_fork_tokens\": 5}";
    cr_assert_eq(deg_fill_options_parse(okopt, strlen(okopt), &o, NULL), DEG_OK, "%s",
                 deg_errmsg());
    free(ctx);
    deg_ckpt_free(k);
}

static char *array_schema(int n_fields, int n_items)
{
    json_t *props = json_object();
    for (int i = 0; i < n_fields; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%d", i);
        json_object_set_new(props, name, json_pack("{s:s}", "type", "boolean"));
    }
    json_t *sch = json_pack("{s:s, s:{s:{s:s, s:i, s:i, s:{s:s, s:o}}}}", "type", "object",
                            "properties", "items", "type", "array", "minItems", n_items,
                            "maxItems", n_items, "items", "type", "object", "properties", props);
    char *t = json_dumps(sch, JSON_PRESERVE_ORDER);
    json_decref(sch);
    return t;
}

/* The case: an item of 3002 fields, 5 items (116 s on the tiny model:
 * the count fork alone lists the 3002 item fields, ~24k tokens). A fork-token
 * cap stops it before any fork runs; a field cap stops the item expansion
 * before the items' forks run. */
Test(limits, max_fields, .timeout = 600)
{
    deg_ckpt *k = make_ckpt(9);
    char *schema = array_schema(3002, 5);
    char *req = request_of("Five rows of flags.", schema, "{\"max_fork_tokens\": 20000}");
    char *resp = NULL, *errs = NULL;
    double t0 = now();
    deg_run_limits nofield = deg_run_limits_default();
    nofield.max_fields = 0; /* 15,011 fields: over the default field cap */
    deg_status s = deg_fill_ex(k, req, strlen(req), &nofield, &resp, &errs);
    cr_assert_eq(s, DEG_ERR_LIMIT, "%s: %s", deg_status_name(s), deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "max_fork_tokens 20000: the first round's forks need at "
                                   "least "), "%s", deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "checked before the prefill"), "%s", deg_errmsg());
    cr_assert(now() - t0 < 60.0, "the cap must stop the fill before its forks run");
    deg_free(errs);
    free(req);
    free(schema);
    schema = array_schema(300, 5);
    req = request_of("Five rows of flags.", schema, "{\"max_fields\": 1000}");
    s = deg_fill(k, req, strlen(req), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_LIMIT, "%s: %s", deg_status_name(s), deg_errmsg());
    /* 1 instance + minItems 5 x 300 leaves, known before the prefill */
    cr_assert(strstr(deg_errmsg(), "max_fields 1000: the schema instantiates at least 1501 "
                                   "fields"), "%s", deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "checked before the prefill; set by the request's "
                                   "options.max_fields"), "%s", deg_errmsg());
    deg_free(errs);
    free(req);
    free(schema);
    /* small schema: cap above the need = same response as without */
    const char *arr = "{\"type\": \"object\", \"properties\": {\"xs\": {\"type\": \"array\", "
                      "\"minItems\": 2, \"maxItems\": 2, \"items\": {\"type\": \"object\", "
                      "\"properties\": {\"a\": {\"type\": \"boolean\"}, \"b\": {\"type\": "
                      "\"boolean\"}}}}}}";
    req = request_of("two rows", arr, NULL);
    char *plain = NULL;
    cr_assert_eq(deg_fill(k, req, strlen(req), &plain, NULL), DEG_OK, "%s", deg_errmsg());
    free(req);
    /* 2 items x 2 leaves + 1 instance = 5 fields */
    req = request_of("two rows", arr, "{\"max_fields\": 5}");
    cr_assert_eq(deg_fill(k, req, strlen(req), &resp, NULL), DEG_OK, "%s", deg_errmsg());
    json_t *a = json_loads(plain, 0, NULL), *b = json_loads(resp, 0, NULL);
    cr_assert(json_equal(json_object_get(a, "value"), json_object_get(b, "value")));
    cr_assert(json_equal(json_object_get(a, "meta"), json_object_get(b, "meta")));
    json_decref(a);
    json_decref(b);
    deg_free(resp);
    free(req);
    req = request_of("two rows", arr, "{\"max_fields\": 4}");
    cr_assert_eq(deg_fill(k, req, strlen(req), &resp, NULL), DEG_ERR_LIMIT);
    cr_assert(strstr(deg_errmsg(), "max_fields 4: the schema instantiates at least 5 fields"),
              "%s", deg_errmsg());
    free(req);
    deg_free(plain);
    deg_ckpt_free(k);
}

/* Bounded by default (issue 19 item 4): an item of 4100 fields (the issue's
 * had 3002) stops under deg_fill (no limits) and deg_fill_ex / deg_fill_many_ex
 * with NULL limits at the default field cap, checked against the schema's own
 * field count before any work (the prefill included: the message names the
 * phase), and the message says the cap is the default one. An item of 2000
 * fields passes the field cap, but its count fork (~16k tokens: it lists every
 * item field) is over DEG_MAX_FORK_LEN and is refused before its round runs.
 * Explicit limits replace the defaults; 0 lifts a cap. */
Test(limits, bounded_by_default, .timeout = 600)
{
    deg_ckpt *k = make_ckpt(9);
    char *schema = array_schema(4100, 2);
    char *req = request_of("Two rows of flags.", schema, NULL);
    for (int call = 0; call < 3; call++) {
        char *resp = NULL, *errs = NULL;
        deg_status s, st1 = DEG_OK;
        const char *reqs[1] = {req};
        size_t lens[1] = {strlen(req)};
        if (call == 0) s = deg_fill(k, req, strlen(req), &resp, &errs);
        else if (call == 1) s = deg_fill_ex(k, req, strlen(req), NULL, &resp, &errs);
        else s = deg_fill_many_ex(k, 1, reqs, lens, NULL, &resp, &errs, &st1);
        cr_assert_eq(s, DEG_ERR_LIMIT, "%d: %s: %s", call, deg_status_name(s), deg_errmsg());
        cr_assert(strstr(deg_errmsg(), "max_fields 4096: the schema instantiates at least 8201 "
                                       "fields"), "%s", deg_errmsg());
        cr_assert(strstr(deg_errmsg(), "before the prefill"), "%s", deg_errmsg());
        cr_assert(strstr(deg_errmsg(), "; to lift it: it is libdeg's default cap "
                                       "(DEG_DEFAULT_MAX_FIELDS); set deg_run_limits.max_fields "
                                       "(C) or deg.fill(limits={\"max_fields\": N}) (Python)"),
                  "%s", deg_errmsg());
        cr_assert(strstr(errs, "max_fields 4096"), "%s", errs);
        cr_assert_null(resp);
        deg_free(errs);
    }
    free(req);
    free(schema);
    /* one fork over DEG_MAX_FORK_LEN: the count fork of a 2000-field item */
    schema = array_schema(2000, 1);
    req = request_of("One row of flags.", schema, NULL);
    char *resp = NULL;
    deg_status s = deg_fill(k, req, strlen(req), &resp, NULL);
    cr_assert_eq(s, DEG_ERR_LIMIT, "%s: %s", deg_status_name(s), deg_errmsg());
    /* the per-fork cap leads the message (not the total), then how to lift it */
    cr_assert(!strncmp(deg_errmsg(), "DEG_MAX_FORK_LEN 8192: one fork of ", 35), "%s",
              deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "tokens (the count fork of /items) is over the cap of a single "
                                   "fork"), "%s", deg_errmsg());
    /* its text is known from the plan: refused before the prefill */
    cr_assert(strstr(deg_errmsg(), "(max_fork_tokens 1048576), checked before the prefill; to "
                                   "lift it: set max_fork_tokens to 0"), "%s", deg_errmsg());
    free(req);
    free(schema);
    /* 1 instance + 2 x 3000 leaves (minItems 2): a cap of the caller's own
     * replaces the default and says nothing of defaults */
    schema = array_schema(3000, 2);
    req = request_of("Two rows of flags.", schema, "{\"max_fork_tokens\": 10}");
    deg_run_limits l = deg_run_limits_default();
    l.max_fields = 2000;
    s = deg_fill_ex(k, req, strlen(req), &l, &resp, NULL);
    cr_assert_eq(s, DEG_ERR_LIMIT, "%s: %s", deg_status_name(s), deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "max_fields 2000: the schema instantiates at least 6001 "
                                   "fields"), "%s", deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "; to lift it: raise deg_run_limits.max_fields"), "%s",
              deg_errmsg());
    cr_assert_null(strstr(deg_errmsg(), "default"), "%s", deg_errmsg());
    l.max_fields = 0; /* none: the request's own fork-token cap stops it */
    s = deg_fill_ex(k, req, strlen(req), &l, &resp, NULL);
    cr_assert_eq(s, DEG_ERR_LIMIT);
    cr_assert(strstr(deg_errmsg(), "max_fork_tokens 10: "), "%s", deg_errmsg());
    cr_assert_null(strstr(deg_errmsg(), "default"), "%s", deg_errmsg());
    free(req);
    free(schema);
    deg_ckpt_free(k);
}

/* The field count a schema instantiates at the least is known before the
 * prefill (issue 19: an item of 500 fields x minItems 10 was refused only
 * after 167 s, at the 9th item): minItems multiplies an item's fields, nested
 * arrays multiply again, and the bound is exact when minItems = maxItems. */
Test(limits, min_items_counted_before_the_prefill, .timeout = 600)
{
    deg_ckpt *k = make_ckpt(9);
    json_t *props = json_object();
    for (int i = 0; i < 500; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%d", i);
        json_object_set_new(props, name, json_pack("{s:s}", "type", "boolean"));
    }
    json_t *sch = json_pack("{s:s, s:{s:{s:s, s:i, s:{s:s, s:o}}}}", "type", "object",
                            "properties", "rows", "type", "array", "minItems", 10, "items",
                            "type", "object", "properties", props);
    char *schema = json_dumps(sch, JSON_PRESERVE_ORDER);
    json_decref(sch);
    char *ctx = long_text(4000);
    char *req = request_of(ctx, schema, NULL);
    char *resp = NULL, *errs = NULL;
    deg_status s = deg_fill(k, req, strlen(req), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_LIMIT, "%s: %s", deg_status_name(s), deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "max_fields 4096: the schema instantiates at least 5001 "
                                   "fields"), "%s", deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "checked before the prefill"), "%s", deg_errmsg());
    cr_assert_null(resp);
    deg_free(errs);
    free(req);
    free(schema);
    free(ctx);
    /* nested: 1 outer instance + 3 outer items x (1 leaf + 1 inner instance +
     * 4 inner items x 2 leaves) = 31 */
    const char *nested =
        "{\"type\": \"object\", \"properties\": {\"o\": {\"type\": \"array\", \"minItems\": 3, "
        "\"maxItems\": 3, \"items\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": "
        "\"boolean\"}, \"in\": {\"type\": \"array\", \"minItems\": 4, \"maxItems\": 4, \"items\": "
        "{\"type\": \"object\", \"properties\": {\"b\": {\"type\": \"boolean\"}, \"c\": {\"type\": "
        "\"boolean\"}}}}}}}}}";
    req = request_of("three rows of four", nested, "{\"max_fields\": 30}");
    s = deg_fill(k, req, strlen(req), &resp, NULL);
    cr_assert_eq(s, DEG_ERR_LIMIT, "%s: %s", deg_status_name(s), deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "max_fields 30: the schema instantiates at least 31 fields"),
              "%s", deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "before the prefill"), "%s", deg_errmsg());
    free(req);
    /* the bound is exact: 31 fields fill */
    req = request_of("three rows of four", nested, "{\"max_fields\": 31}");
    cr_assert_eq(deg_fill(k, req, strlen(req), &resp, NULL), DEG_OK, "%s", deg_errmsg());
    json_t *root = json_loads(resp, 0, NULL), *v = json_object_get(root, "value");
    cr_assert_eq(json_array_size(json_object_get(v, "o")), 3);
    cr_assert_eq(json_array_size(json_object_get(json_array_get(json_object_get(v, "o"), 2),
                                                 "in")), 4);
    json_decref(root);
    deg_free(resp);
    free(req);
    deg_ckpt_free(k);
}

Test(limits, max_fork_tokens)
{
    deg_ckpt *k = make_ckpt(11);
    char *req = request_of("Order 4711 from ACME.", SMALL, "{\"max_fork_tokens\": 5}");
    char *resp = NULL;
    deg_status s = deg_fill(k, req, strlen(req), &resp, NULL);
    cr_assert_eq(s, DEG_ERR_LIMIT, "%s: %s", deg_status_name(s), deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "max_fork_tokens 5: "), "%s", deg_errmsg());
    free(req);
    /* generate: its prompt tokens count (the parallel phase has no fork here) */
    const char *gen = "{\"type\": \"object\", \"properties\": {\"w\": {\"type\": \"string\", "
                      "\"x-generate\": true, \"x-max-tokens\": 40}}}";
    req = request_of("Order 4711 from ACME.", gen, "{\"max_fork_tokens\": 12}");
    s = deg_fill(k, req, strlen(req), &resp, NULL);
    cr_assert_eq(s, DEG_ERR_LIMIT, "%s: %s", deg_status_name(s), deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "during the generate phase"), "%s", deg_errmsg());
    free(req);
    deg_ckpt_free(k);
}

/* fill_many_ex: request 1 cancelled (token set), request 2 over its field cap,
 * requests 0 and 3 bitwise equal to their lone deg_fill responses. */
Test(limits, fill_many_only_the_stopped_fail)
{
    deg_ckpt *k = make_ckpt(13);
    deg_ckpt_set_debug(k, 1);
    const char *ctx = "Order 4711 from ACME Corp on 5 March 2026, total $1,234.50.";
    char *reqs[4];
    for (int i = 0; i < 4; i++) reqs[i] = request_of(ctx, SMALL, NULL);
    size_t lens[4];
    for (int i = 0; i < 4; i++) lens[i] = strlen(reqs[i]);
    deg_cancel *c = NULL;
    cr_assert_eq(deg_cancel_new(&c), DEG_OK);
    deg_cancel_set(c);
    deg_run_limits l[4] = {deg_run_limits_default(), deg_run_limits_default(),
                           deg_run_limits_default(), deg_run_limits_default()};
    l[1].cancel = c;
    l[2].max_fields = 1;
    char *resp[4], *errs[4];
    deg_status st[4];
    deg_status s = deg_fill_many_ex(k, 4, (const char *const *)reqs, lens, l, resp, errs, st);
    cr_assert_eq(s, DEG_ERR_CANCELLED, "first failing request's status: %s",
                 deg_status_name(s));
    cr_assert_eq(st[0], DEG_OK);
    cr_assert_eq(st[1], DEG_ERR_CANCELLED);
    cr_assert_eq(st[2], DEG_ERR_LIMIT);
    cr_assert_eq(st[3], DEG_OK);
    cr_assert(errs[2] && strstr(errs[2], "max_fields 1"), "%s", errs[2] ? errs[2] : "-");
    for (int i = 0; i < 4; i += 3) {
        char *lone = NULL;
        cr_assert_eq(deg_fill(k, reqs[i], lens[i], &lone, NULL), DEG_OK);
        json_t *a = json_loads(lone, 0, NULL), *b = json_loads(resp[i], 0, NULL);
        json_object_del(a, "timing");
        json_object_del(b, "timing");
        cr_assert(json_equal(a, b), "request %d differs from its lone fill", i);
        json_decref(a);
        json_decref(b);
        deg_free(lone);
    }
    for (int i = 0; i < 4; i++) {
        deg_free(resp[i]);
        deg_free(errs[i]);
        free(reqs[i]);
    }
    deg_cancel_free(c);
    deg_ckpt_free(k);
}

static deg_model *tiny_model(void)
{
    char model[512];
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    deg_model *m = NULL;
    cr_assert_eq(deg_model_load(model, &m), DEG_OK, "%s", deg_errmsg());
    return m;
}

/* Generation: a cancel from another thread stops the decode loop; the ids
 * produced so far are those of the unstopped run. A deadline does the same. */
Test(limits, generate_cancel_and_deadline, .timeout = 600)
{
    deg_model *m = tiny_model();
    int32_t prompt[] = {5, 6, 7, 8};
    deg_sample_params p = deg_sample_params_default();
    p.max_tokens = 200000; /* far more than runs in the test's time */
    p.stop_ids = NULL;
    int32_t none = -1;
    p.stop_ids = &none;
    p.n_stop_ids = 0;
    int32_t *out = malloc((size_t)p.max_tokens * sizeof *out);
    size_t n_out = 0;
    deg_cancel *c = NULL;
    cr_assert_eq(deg_cancel_new(&c), DEG_OK);
    deg_run_limits l = deg_run_limits_default();
    l.cancel = c;
    /* warm up (BLIS kernel choice, OpenMP threads) so the cancel lands in decode */
    size_t n_warm = 0;
    deg_sample_params w = p;
    w.max_tokens = 2;
    cr_assert_eq(deg_generate(m, prompt, 4, &w, out, 2, &n_warm, NULL), DEG_OK);
    canceller x = {c, 1000, 0};
    pthread_t th;
    pthread_create(&th, NULL, cancel_later, &x);
    deg_status s = deg_generate_ex(m, prompt, 4, &p, out, (size_t)p.max_tokens, &n_out, NULL, &l);
    double done = now();
    pthread_join(th, NULL);
    cr_assert_eq(s, DEG_ERR_CANCELLED, "%s: %s", deg_status_name(s), deg_errmsg());
    /* a loaded machine may still be in the prefill after 1 s */
    cr_assert(strstr(deg_errmsg(), "cancelled during "), "%s", deg_errmsg());
    cr_assert(done - x.at < 10.0, "returned %.2f s after the cancel", done - x.at);
    cr_assert(n_out < (size_t)p.max_tokens, "n_out %zu", n_out);
    if (n_out > 0) { /* the ids so far equal a plain run of that length */
        deg_sample_params q = p;
        q.max_tokens = (int32_t)n_out;
        int32_t *ref = malloc(n_out * sizeof *ref);
        size_t n_ref = 0;
        cr_assert_eq(deg_generate(m, prompt, 4, &q, ref, n_out, &n_ref, NULL), DEG_OK);
        cr_assert_eq(n_ref, n_out);
        cr_assert_eq(memcmp(ref, out, n_out * sizeof *out), 0);
        free(ref);
    }
    /* deadline */
    deg_cancel_reset(c);
    l.deadline_ms = 100;
    s = deg_generate_ex(m, prompt, 4, &p, out, (size_t)p.max_tokens, &n_out, NULL, &l);
    cr_assert_eq(s, DEG_ERR_LIMIT, "%s: %s", deg_status_name(s), deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "deadline of 100 ms passed during "), "%s", deg_errmsg());
    /* forks API, token already set: nothing decoded */
    deg_cancel_set(c);
    l.deadline_ms = 0;
    deg_trunk *t = NULL;
    deg_fork *f = NULL;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, prompt, 4, NULL, NULL), DEG_OK);
    cr_assert_eq(deg_fork_new(t, &f), DEG_OK);
    p.max_tokens = 8;
    s = deg_forks_generate_ex(&f, 1, &p, &out, &n_out, NULL, &l);
    cr_assert_eq(s, DEG_ERR_CANCELLED);
    cr_assert_eq(n_out, 0);
    deg_fork_free(f);
    deg_trunk_free(t);
    deg_cancel_free(c);
    free(out);
    deg_model_free(m);
}

/* The C rule for closing a handle another thread uses (deg.h "Threads"):
 * cancel the call, wait for it to return, then free. A filler thread runs a
 * long fill and another a long generation; the main thread closes both this
 * way. Under ASan (scripts/run-tests) this checks that calls stopped mid-pass
 * free everything they made and touch nothing after returning. */
typedef struct job_arg {
    deg_ckpt *k;
    deg_model *m;
    const char *req;
    deg_cancel *c;
    deg_status st;
    size_t n_out;
} job_arg;

static void *fill_job(void *p)
{
    job_arg *a = p;
    deg_run_limits l = deg_run_limits_default();
    l.cancel = a->c;
    char *resp = NULL, *errs = NULL;
    a->st = deg_fill_ex(a->k, a->req, strlen(a->req), &l, &resp, &errs);
    deg_free(resp);
    deg_free(errs);
    return NULL;
}

static void *gen_job(void *p)
{
    job_arg *a = p;
    deg_run_limits l = deg_run_limits_default();
    l.cancel = a->c;
    int32_t prompt[] = {5, 6, 7};
    deg_sample_params sp = deg_sample_params_default();
    sp.max_tokens = 100000;
    int32_t none = 0;
    sp.stop_ids = &none;
    sp.n_stop_ids = 0;
    int32_t *out = malloc((size_t)sp.max_tokens * sizeof *out);
    a->st = deg_generate_ex(a->m, prompt, 3, &sp, out, (size_t)sp.max_tokens, &a->n_out, NULL,
                            &l);
    free(out);
    return NULL;
}

Test(limits, close_from_another_thread, .timeout = 900)
{
    deg_ckpt *k = make_ckpt(17);
    deg_model *m = tiny_model();
    char *ctx = long_text(60000);
    char *req = request_of(ctx, SMALL, NULL);
    deg_cancel *c = NULL;
    cr_assert_eq(deg_cancel_new(&c), DEG_OK);
    job_arg fa = {.k = k, .req = req, .c = c, .st = DEG_OK};
    job_arg ga = {.m = m, .c = c, .st = DEG_OK};
    pthread_t tf, tg;
    pthread_create(&tf, NULL, fill_job, &fa);
    pthread_create(&tg, NULL, gen_job, &ga);
    usleep(300 * 1000);
    deg_cancel_set(c);
    pthread_join(tf, NULL);
    pthread_join(tg, NULL);
    deg_ckpt_free(k);
    deg_model_free(m);
    cr_assert_eq(fa.st, DEG_ERR_CANCELLED, "fill: %s", deg_status_name(fa.st));
    cr_assert_eq(ga.st, DEG_ERR_CANCELLED, "generate: %s", deg_status_name(ga.st));
    deg_cancel_free(c);
    free(req);
    free(ctx);
}
