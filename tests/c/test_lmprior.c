/* The LM-head start prior of extract leaves (deg.json / options "lm_prior",
 * lib/deg/fill_extract.c) on the tiny random models: deg.json and request-option
 * validation, save round trip, lambda 0 = off bitwise, and the start logits moving
 * by exactly lambda * log p of each context token under the backbone's own
 * next-token distribution after the leaf's fork, recomputed here through the public
 * trunk / fork API from the trace's tokens (deg_features_extract). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_fixture.h"
#include "deg.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static const char *TINY[] = {"tiny-llama", "tiny-qwen3"};

static json_t *saved_meta(deg_ckpt *k, const char *dir)
{
    cr_assert_eq(deg_ckpt_save(k, dir, NULL, 0), DEG_OK, "%s", deg_errmsg());
    char js[700];
    snprintf(js, sizeof js, "%s/deg.json", dir);
    json_t *meta = json_load_file(js, 0, NULL);
    cr_assert(meta);
    return meta;
}

Test(lmprior, deg_json_validation_and_save)
{
    char model[512], dir[512], dir2[600];
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    snprintf(dir, sizeof dir, "%s/lmprior-json-%d", DEG_BUILD_ROOT, (int)getpid());
    snprintf(dir2, sizeof dir2, "%s-saved", dir);
    cr_assert_eq(deg_ckpt_create_random(model, 3, dir), DEG_OK, "%s", deg_errmsg());
    const char *bad[] = {"{\"start\": -0.1}", "{\"start\": \"0.3\"}", "{}", "[0.3]", "0.3",
                         "{\"start\": 0.3, \"end\": 0.3}", "{\"start\": null}", "true"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_set_meta(dir, "lm_prior", json_loads(bad[i], JSON_DECODE_ANY, NULL));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_ERR_FORMAT, "%s", bad[i]);
        cr_assert(strstr(deg_errmsg(), "lm_prior"), "%s: %s", bad[i], deg_errmsg());
        cr_assert(strstr(deg_errmsg(), "deg.json"), "%s: %s", bad[i], deg_errmsg());
    }
    /* a valid weight survives a save; absent / null load as off and are not written */
    const double ok[] = {0.3, 0.0, 2.5};
    for (size_t i = 0; i < 3; i++) {
        tu_set_meta(dir, "lm_prior", json_pack("{s:f}", "start", ok[i]));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        json_t *meta = saved_meta(k, dir2);
        json_t *lp = json_object_get(meta, "lm_prior");
        cr_assert_eq(json_object_size(lp), 1);
        cr_assert_eq(json_number_value(json_object_get(lp, "start")), ok[i]);
        json_decref(meta);
        deg_ckpt_free(k);
    }
    for (int absent = 0; absent < 2; absent++) {
        tu_set_meta(dir, "lm_prior", absent ? NULL : json_null());
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        json_t *meta = saved_meta(k, dir2);
        cr_assert_null(json_object_get(meta, "lm_prior"));
        json_decref(meta);
        deg_ckpt_free(k);
    }
    /* deg's own key: a caller's extra keys may not set it */
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_ckpt_save(k, dir2, "{\"lm_prior\": {\"start\": 1}}", 0), DEG_ERR_ARG);
    cr_assert(strstr(deg_errmsg(), "lm_prior"), "%s", deg_errmsg());
    deg_ckpt_free(k);
}

Test(lmprior, request_option_validation)
{
    const char *bad[] = {"{\"start\": -1}", "{\"start\": \"x\"}", "{}", "[1]", "1",
                         "{\"start\": 1, \"x\": 2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char rq[512];
        snprintf(rq, sizeof rq, "{\"context\": \"a\", \"schema\": {\"type\": \"object\", "
                 "\"properties\": {\"a\": {\"type\": \"string\"}}}, \"options\": "
                 "{\"lm_prior\": %s}}", bad[i]);
        deg_request *r = NULL;
        char *errs = NULL;
        cr_assert_eq(deg_request_parse(rq, strlen(rq), &r, &errs), DEG_ERR_REQUEST, "%s", bad[i]);
        json_t *e = json_loads(errs, 0, NULL);
        cr_assert_eq(json_array_size(e), 1, "%s", errs);
        json_t *e0 = json_array_get(e, 0);
        cr_assert_str_eq(json_string_value(json_object_get(e0, "loc")), "/options/lm_prior");
        cr_assert(strstr(json_string_value(json_object_get(e0, "msg")), "a number in [0, 1e+06]"),
                  "%s", errs);
        json_decref(e);
        deg_free(errs);
    }
    const char *good[] = {"null", "{\"start\": 0}", "{\"start\": 0.3}", "{\"start\": 2}"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char opt[128];
        snprintf(opt, sizeof opt, "{\"lm_prior\": %s}", good[i]);
        deg_fill_options o;
        cr_assert_eq(deg_fill_options_parse(opt, strlen(opt), &o, NULL), DEG_OK, "%s: %s", opt,
                     deg_errmsg());
    }
}

static const char *CTX = "Package: frobnicator\n"
                         "Version: 2.4.1-3\n"
                         "Maintainer: Jane Roe <jane@example.org>\n"
                         "Installed-Size: 1234\n"
                         "Description: frobs the widgets of other programs quickly\n";

/* Extract leaves of every kind the prior touches: plain spans, a typed candidate
 * field (email), a number; and a decide field it must leave alone. */
static const char *SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\"},"
    "\"release\":{\"type\":[\"string\",\"null\"]},"
    "\"contact\":{\"type\":[\"string\",\"null\"],\"format\":\"email\"},"
    "\"size\":{\"type\":[\"integer\",\"null\"]},"
    "\"essential\":{\"type\":\"boolean\"}}}";

static const char *EXTRACT[] = {"/name", "/release", "/contact", "/size"};
#define N_EXTRACT 4

static char *request(const char *options)
{
    json_t *r = json_pack("{s:s, s:o}", "context", CTX, "schema", json_loads(SCHEMA, 0, NULL));
    if (options) json_object_set_new(r, "options", json_loads(options, 0, NULL));
    char *t = json_dumps(r, 0);
    json_decref(r);
    return t;
}

/* value + meta of a response (the debug "timing" is wall time) */
static char *outcome(const char *resp)
{
    json_t *r = json_loads(resp, 0, NULL);
    cr_assert(r, "%s", resp);
    json_t *o = json_pack("{s:O, s:O}", "value", json_object_get(r, "value"), "meta",
                          json_object_get(r, "meta"));
    char *t = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(o);
    json_decref(r);
    return t;
}

static char *fill(deg_ckpt *k, const char *options)
{
    char *rq = request(options), *out = NULL;
    cr_assert_eq(deg_fill(k, rq, strlen(rq), &out, NULL), DEG_OK, "%s", deg_errmsg());
    char *o = outcome(out);
    free(rq);
    deg_free(out);
    return o;
}

/* meta[ptr][key] ("start_logits" / "end_logits") of an outcome, as doubles (n =
 * context tokens + null) */
static double *pointer_logits(const char *outcome_text, const char *ptr, const char *key,
                              size_t *n)
{
    json_t *o = json_loads(outcome_text, 0, NULL);
    json_t *a = json_object_get(json_object_get(json_object_get(o, "meta"), ptr), key);
    cr_assert(json_is_array(a), "%s: no %s", ptr, key);
    *n = json_array_size(a);
    double *x = malloc(*n * sizeof *x);
    for (size_t i = 0; i < *n; i++) x[i] = json_number_value(json_array_get(a, i));
    json_decref(o);
    return x;
}

/* lambda * log_softmax(LM logits after the leaf's fork)[id of context token t], from
 * the trace's tokens through the public trunk / fork API (not the fill's code path). */
static double *expected_prior(deg_ckpt *k, const deg_features *F, const char *ptr, double lambda)
{
    const deg_model *m = deg_ckpt_model(k);
    deg_model_info info;
    deg_model_get_info(m, &info);
    size_t V = (size_t)info.n_vocab, fi = F->n_forks;
    for (size_t i = 0; i < F->n_forks; i++)
        if (strcmp(F->forks[i].pointer, ptr) == 0) fi = i;
    cr_assert_lt(fi, F->n_forks, "no fork for %s", ptr);
    deg_trunk *tr = NULL;
    deg_fork *fk = NULL;
    cr_assert_eq(deg_trunk_new(m, &tr), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(tr, F->trunk_ids, F->n_trunk_tokens, NULL, NULL), DEG_OK,
                 "%s", deg_errmsg());
    cr_assert_eq(deg_fork_new(tr, &fk), DEG_OK);
    size_t n = F->tokens[fi].n_ids;
    float *all = malloc(n * V * sizeof *all); /* the forward's own logits of every fork token */
    cr_assert_eq(deg_fork_feed(fk, F->tokens[fi].ids, n, all), DEG_OK);
    const float *z = all + (n - 1) * V;
    double mx = -INFINITY, s = 0;
    for (size_t v = 0; v < V; v++) mx = fmax(mx, z[v]);
    for (size_t v = 0; v < V; v++) s += exp(z[v] - mx);
    double *b = malloc(F->n_ctx * sizeof *b);
    for (size_t t = 0; t < F->n_ctx; t++)
        b[t] = lambda * (z[F->trunk_ids[F->ctx_first + t]] - mx - log(s));
    free(all);
    deg_fork_free(fk);
    deg_trunk_free(tr);
    return b;
}

/* With lambda > 0 each extract leaf's start logits are the unprimed ones + lambda *
 * log p_LM(token) (within fp32 rounding of the sum), null's and the end logits
 * bitwise unchanged; the
 * same weight from deg.json and from options.lm_prior gives the same response;
 * lambda 0 (deg.json or options) and options {"start": 0} over a deg.json prior are
 * bitwise the fill without it; deg_fill_many next to another request is deg_fill. */
Test(lmprior, fill_adds_lambda_log_p)
{
    const double lambda = 0.5;
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/lmprior-fill-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        deg_ckpt *k = tu_random_ckpt(model, 7, dir, NULL, -1);
        char *off = fill(k, NULL), *zero = fill(k, "{\"lm_prior\": {\"start\": 0}}");
        char opt[64];
        snprintf(opt, sizeof opt, "{\"lm_prior\": {\"start\": %g}}", lambda);
        char *on = fill(k, opt);
        cr_assert_str_eq(zero, off);
        cr_assert_str_neq(on, off);
        /* the recomputation */
        char *rq = request(NULL), *errs = NULL;
        deg_features *F = NULL;
        cr_assert_eq(deg_features_extract(k, rq, strlen(rq), "{}", 2, 0, 0, &F, &errs), DEG_OK,
                     "%s", deg_errmsg());
        double max_moved = 0;
        for (size_t e = 0; e < N_EXTRACT; e++) {
            size_t n0, n1;
            double *s0 = pointer_logits(off, EXTRACT[e], "start_logits", &n0);
            double *s1 = pointer_logits(on, EXTRACT[e], "start_logits", &n1);
            cr_assert_eq(n0, F->n_ctx + 1);
            cr_assert_eq(n1, n0);
            double *e0 = pointer_logits(off, EXTRACT[e], "end_logits", &n0);
            double *e1 = pointer_logits(on, EXTRACT[e], "end_logits", &n1);
            cr_assert_eq(n0, F->n_ctx + 1);
            cr_assert(memcmp(e0, e1, n0 * sizeof *e0) == 0, "%s: the end logits moved",
                      EXTRACT[e]);
            free(e0);
            free(e1);
            double *b = expected_prior(k, F, EXTRACT[e], lambda);
            for (size_t t = 0; t < F->n_ctx; t++) {
                double d = s1[t] - s0[t];
                /* fp32: lambda log p and the sum s0 + it each round by half an ulp */
                double tol = 1e-6 + 1.2e-7 * (fabs(s1[t]) + fabs(b[t]));
                cr_assert_leq(fabs(d - b[t]), tol, "%s %s token %zu: moved %.9g, lambda log p "
                              "%.9g", TINY[mi], EXTRACT[e], t, d, b[t]);
                max_moved = fmax(max_moved, fabs(d));
            }
            cr_assert_eq(s1[F->n_ctx], s0[F->n_ctx], "%s: the null logit moved", EXTRACT[e]);
            free(s0);
            free(s1);
            free(b);
        }
        /* log p over a vocabulary of thousands is far below 0: a prior this test
         * would miss (wrong row, wrong token, no normalisation) moves logits by units */
        cr_assert_gt(max_moved, 1.0);
        deg_features_free(F);
        free(rq);
        /* the decide leaf is untouched */
        json_t *a = json_loads(off, 0, NULL), *b = json_loads(on, 0, NULL);
        cr_assert(json_equal(json_object_get(json_object_get(a, "meta"), "/essential"),
                             json_object_get(json_object_get(b, "meta"), "/essential")));
        json_decref(a);
        json_decref(b);
        /* deg_fill_many: bitwise the fill alone, next to a request without the prior */
        char *rqs[2] = {request(opt), request(NULL)}, *outs[2] = {0};
        size_t lens[2] = {strlen(rqs[0]), strlen(rqs[1])};
        deg_status sts[2];
        cr_assert_eq(deg_fill_many(k, 2, (const char *const *)rqs, lens, outs, NULL, sts), DEG_OK);
        char *m0 = outcome(outs[0]), *m1 = outcome(outs[1]);
        cr_assert_str_eq(m0, on);
        cr_assert_str_eq(m1, off);
        free(m0);
        free(m1);
        for (int i = 0; i < 2; i++) {
            free(rqs[i]);
            deg_free(outs[i]);
        }
        deg_ckpt_free(k);
        /* the same weight from deg.json; options {"start": 0} turns it off; deg.json 0 = off */
        tu_set_meta(dir, "lm_prior", json_pack("{s:f}", "start", lambda));
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        deg_ckpt_set_debug(k, 1);
        char *json_on = fill(k, NULL), *json_off = fill(k, "{\"lm_prior\": {\"start\": 0}}");
        cr_assert_str_eq(json_on, on);
        cr_assert_str_eq(json_off, off);
        deg_ckpt_free(k);
        tu_set_meta(dir, "lm_prior", json_pack("{s:f}", "start", 0.0));
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        deg_ckpt_set_debug(k, 1);
        char *json_zero = fill(k, NULL);
        cr_assert_str_eq(json_zero, off);
        deg_ckpt_free(k);
        free(json_on);
        free(json_off);
        free(json_zero);
        free(off);
        free(zero);
        free(on);
    }
}
