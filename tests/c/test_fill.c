/* deg.fill runtime on the tiny random models (llama, qwen3, the hybrids lfm2 and
 * qwen3_5, Gemma 4 with and without KV sharing) with random heads:
 * checkpoint round trip and mismatch, fork exactness against an independent
 * full forward, bitwise independence of every field (alone, reordered, inside
 * bigger schemas, split vs merged, fill_many, repeats), generate under
 * constraints, arrays and drops, bad input. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deg.h"
#include "deg/fill.h"
#include "model/arch.h"
#include "model/model.h"
#include "model/state.h"
#include "tokenizer/tokenizer.h"
#include "base/utf8.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static const char *TINY[] = {"tiny-llama", "tiny-qwen3", "tiny-lfm2", "tiny-qwen3_5",
                             "tiny-gemma4", "tiny-gemma4-kvshare"};
#define N_TINY (sizeof TINY / sizeof TINY[0])

static char tmpdir_buf[256];

static const char *tmp_ckpt(const char *name)
{
    snprintf(tmpdir_buf, sizeof tmpdir_buf, "%s/fill-test-%d-%s", DEG_BUILD_ROOT, (int)getpid(),
             name);
    return tmpdir_buf;
}

static deg_ckpt *make_ckpt(const char *tiny, uint64_t seed)
{
    char model[512];
    snprintf(model, sizeof model, "%s/%s", GOLDENS, tiny);
    const char *dir = tmp_ckpt(tiny);
    deg_status s = deg_ckpt_create_random(model, seed, dir);
    cr_assert_eq(s, DEG_OK, "create %s: %s", dir, deg_errmsg());
    deg_ckpt *k = NULL;
    s = deg_ckpt_load(dir, NULL, &k);
    cr_assert_eq(s, DEG_OK, "load %s: %s", dir, deg_errmsg());
    deg_ckpt_set_debug(k, 1);
    return k;
}

static const char *CONTEXT =
    "Order 4711 from ACME Corp, placed on 5 March 2026 by jane.doe@example.com. "
    "Total: $1,234.50 for 3 items. The customer is angry about the late delivery "
    "and wants a refund. Items: red chair (2 units, $400.00), blue lamp (1 unit, $34.50).";

/* field schemas by name */
typedef struct fdef {
    const char *name;
    const char *schema;
    int required;
} fdef;

static const fdef FIELDS[] = {
    {"department", "{\"enum\": [\"billing\", \"shipping\", \"other\"]}", 1},
    {"urgent", "{\"type\": \"boolean\"}", 1},
    {"anger", "{\"type\": \"integer\", \"minimum\": 0, \"maximum\": 4}", 1},
    {"anger_n", "{\"type\": [\"integer\", \"null\"], \"minimum\": 1, \"maximum\": 3}", 0},
    {"total", "{\"type\": [\"number\", \"null\"]}", 0},
    {"count", "{\"type\": \"integer\"}", 0},
    {"placed", "{\"type\": [\"string\", \"null\"], \"format\": \"date\"}", 0},
    {"email", "{\"type\": [\"string\", \"null\"], \"format\": \"email\"}", 1},
    {"company", "{\"type\": \"string\", \"maxLength\": 40}", 0},
    {"order_id", "{\"type\": [\"string\", \"null\"], \"pattern\": \"^[0-9]+$\"}", 0},
    {"mood", "{\"oneOf\": [{\"const\": \"calm\", \"description\": \"no anger\"}, "
             "{\"const\": \"upset\", \"description\": \"some anger\"}]}", 1},
};
#define N_FIELDS (sizeof FIELDS / sizeof FIELDS[0])

static char *schema_of(const size_t *idx, size_t n)
{
    json_t *props = json_object(), *req = json_array();
    for (size_t i = 0; i < n; i++) {
        const fdef *f = &FIELDS[idx[i]];
        json_object_set_new(props, f->name, json_loads(f->schema, 0, NULL));
        if (f->required) json_array_append_new(req, json_string(f->name));
    }
    json_t *s = json_pack("{s:s, s:o, s:o}", "type", "object", "properties", props, "required", req);
    char *t = json_dumps(s, JSON_PRESERVE_ORDER);
    json_decref(s);
    return t;
}

static char *request_of(const char *context, const char *schema, const char *options)
{
    json_t *r = json_pack("{s:s, s:o}", "context", context, "schema", json_loads(schema, 0, NULL));
    if (options) json_object_set_new(r, "options", json_loads(options, 0, NULL));
    char *t = json_dumps(r, JSON_PRESERVE_ORDER);
    json_decref(r);
    return t;
}

static json_t *fill_ok(deg_ckpt *k, const char *req)
{
    char *resp = NULL, *errs = NULL;
    deg_status s = deg_fill(k, req, strlen(req), &resp, &errs);
    cr_assert_eq(s, DEG_OK, "fill: %s (%s) errors=%s", deg_errmsg(), deg_status_name(s),
                 errs ? errs : "-");
    json_t *v = json_loads(resp, 0, NULL);
    cr_assert(v, "response is JSON: %s", resp);
    deg_free(resp);
    deg_free(errs);
    return v;
}

/* meta of pointer p and value under key name, as compact text */
static char *field_text(json_t *resp, const char *name)
{
    char ptr[128];
    snprintf(ptr, sizeof ptr, "/%s", name);
    json_t *m = json_object_get(json_object_get(resp, "meta"), ptr);
    json_t *v = json_object_get(json_object_get(resp, "value"), name);
    json_t *pair = json_pack("{s:O?, s:O?}", "meta", m, "value", v);
    char *t = json_dumps(pair, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(pair);
    return t;
}

Test(fill, checkpoint_mismatch_and_format)
{
    char model[512], other[512];
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    snprintf(other, sizeof other, "%s/tiny-qwen3", GOLDENS);
    const char *dir = tmp_ckpt("mismatch");
    cr_assert_eq(deg_ckpt_create_random(model, 7, dir), DEG_OK, "%s", deg_errmsg());
    deg_ckpt *k = NULL;
    deg_status s = deg_ckpt_load(dir, other, &k);
    cr_assert_eq(s, DEG_ERR_MISMATCH, "got %s: %s", deg_status_name(s), deg_errmsg());
    cr_assert_null(k);
    cr_assert(strstr(deg_errmsg(), "SHA-256"), "%s", deg_errmsg());
    s = deg_ckpt_load(dir, model, &k);
    cr_assert_eq(s, DEG_OK, "%s", deg_errmsg());
    deg_ckpt_free(k);
    /* same seed -> identical heads file; another seed -> different */
    char p1[600], p2[600];
    snprintf(p1, sizeof p1, "%s/heads.safetensors", dir);
    const char *dir2 = tmp_ckpt("mismatch2");
    char d2[256];
    snprintf(d2, sizeof d2, "%s", dir2);
    cr_assert_eq(deg_ckpt_create_random(model, 7, d2), DEG_OK);
    snprintf(p2, sizeof p2, "%s/heads.safetensors", d2);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", p1, p2);
    cr_assert_eq(system(cmd), 0, "same seed gives the same heads");
    /* missing directory */
    s = deg_ckpt_load("/nonexistent/ckpt", NULL, &k);
    cr_assert_eq(s, DEG_ERR_IO, "%s", deg_status_name(s));
    /* corrupt deg.json */
    char jp[600];
    snprintf(jp, sizeof jp, "%s/deg.json", d2);
    FILE *f = fopen(jp, "w");
    fputs("{\"format\": \"other\"}", f);
    fclose(f);
    s = deg_ckpt_load(d2, model, &k);
    cr_assert_eq(s, DEG_ERR_FORMAT, "%s", deg_status_name(s));
}

/* A fork's hidden states equal an independent forward of trunk + fork tokens. */
Test(fill, fork_exactness)
{
    for (size_t mi = 0; mi < N_TINY; mi++) {
        char model[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        deg_model *m = NULL;
        cr_assert_eq(deg_model_load(model, &m), DEG_OK);
        int32_t V = m->hp.n_vocab;
        size_t E = (size_t)m->hp.n_embd;
        int32_t trunk_ids[40], fork_ids[3][9];
        for (int i = 0; i < 40; i++) trunk_ids[i] = (i * 37 + 11) % V;
        for (int r = 0; r < 3; r++)
            for (int i = 0; i < 9; i++) fork_ids[r][i] = (r * 101 + i * 13 + 5) % V;
        deg_trunk *t = NULL;
        cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
        cr_assert_eq(deg_trunk_prefill(t, trunk_ids, 40, NULL, NULL), DEG_OK);
        deg_fork *fk[3];
        const int32_t *ids[3];
        size_t ns[3] = {9, 5, 9};
        for (int r = 0; r < 3; r++) {
            cr_assert_eq(deg_fork_new(t, &fk[r]), DEG_OK);
            ids[r] = fork_ids[r];
        }
        cr_assert_eq(deg_forks_feed(fk, 3, ids, ns, NULL), DEG_OK);
        for (int r = 0; r < 3; r++) {
            float *h = malloc(ns[r] * E * sizeof(float));
            cr_assert_eq(deg_fork_hidden(fk[r], 0, ns[r], h), DEG_OK);
            /* independent full forward of trunk + fork tokens */
            int32_t all[49];
            memcpy(all, trunk_ids, sizeof trunk_ids);
            memcpy(all + 40, fork_ids[r], ns[r] * sizeof(int32_t));
            dg_state kv;
            cr_assert_eq(dg_state_init(&kv, m), DEG_OK);
            float *ref = malloc((40 + ns[r]) * E * sizeof(float));
            dg_row row = {.prefix = NULL, .own = &kv, .ids = all, .n = 40 + ns[r], .hidden = ref};
            cr_assert_eq(dg_forward(m, &row, 1), DEG_OK);
            double md = 0;
            for (size_t i = 0; i < ns[r] * E; i++) {
                double d = fabs((double)h[i] - (double)ref[40 * E + i]);
                if (d > md) md = d;
            }
            cr_assert(md <= 1e-5, "%s row %d: max |fork - full| = %g", TINY[mi], r, md);
            dg_state_free(&kv);
            free(ref);
            free(h);
        }
        for (int r = 0; r < 3; r++) deg_fork_free(fk[r]);
        deg_trunk_free(t);
        deg_model_free(m);
    }
}

Test(fill, response_shape_and_validity)
{
    for (size_t mi = 0; mi < N_TINY; mi++) {
        deg_ckpt *k = make_ckpt(TINY[mi], 1);
        size_t idx[N_FIELDS];
        for (size_t i = 0; i < N_FIELDS; i++) idx[i] = i;
        char *schema = schema_of(idx, N_FIELDS);
        char *req = request_of(CONTEXT, schema, NULL);
        json_t *resp = fill_ok(k, req);
        json_t *value = json_object_get(resp, "value");
        json_t *meta = json_object_get(resp, "meta");
        cr_assert(json_is_object(value));
        /* decide fields always present */
        const char *dep = json_string_value(json_object_get(value, "department"));
        cr_assert(dep && (!strcmp(dep, "billing") || !strcmp(dep, "shipping") || !strcmp(dep, "other")));
        cr_assert(json_is_boolean(json_object_get(value, "urgent")));
        json_int_t anger = json_integer_value(json_object_get(value, "anger"));
        cr_assert(anger >= 0 && anger <= 4);
        json_t *dm = json_object_get(meta, "/department");
        cr_assert_str_eq(json_string_value(json_object_get(dm, "mode")), "decide.choice");
        json_t *probs = json_object_get(dm, "probabilities");
        cr_assert_eq(json_array_size(probs), 3);
        double sum = 0, peak = 0;
        for (size_t i = 0; i < 3; i++) {
            double p = json_real_value(json_array_get(probs, i));
            sum += p;
            if (p > peak) peak = p;
        }
        cr_assert(fabs(sum - 1) < 1e-9);
        cr_assert(fabs(json_real_value(json_object_get(dm, "confidence")) - (3 * peak - 1) / 2) < 1e-12);
        json_t *am = json_object_get(meta, "/anger_n");
        cr_assert_eq(json_array_size(json_object_get(am, "probabilities")), 4, "levels 1..3 + null");
        /* the email, if found, is the one in the context, with its span */
        json_t *em = json_object_get(value, "email");
        if (json_is_string(em)) {
            cr_assert_str_eq(json_string_value(em), "jane.doe@example.com");
            json_t *span = json_object_get(json_object_get(meta, "/email"), "span");
            cr_assert_eq(json_integer_value(json_array_get(span, 1)) -
                             json_integer_value(json_array_get(span, 0)), 20);
        }
        json_t *pl = json_object_get(value, "placed");
        if (json_is_string(pl)) cr_assert_str_eq(json_string_value(pl), "2026-03-05");
        /* usage and plan */
        cr_assert_eq(json_integer_value(json_object_get(json_object_get(resp, "usage"),
                                                        "generated_tokens")), 0);
        cr_assert_eq(strlen(json_string_value(json_object_get(resp, "plan"))), 64);
        /* validity against the input schema */
        char *vt = json_dumps(value, 0);
        size_t nerr = 99;
        cr_assert_eq(deg_validate(schema, vt, &nerr, NULL), DEG_OK);
        cr_assert_eq(nerr, 0);
        free(vt);
        json_decref(resp);
        free(req);
        free(schema);
        deg_ckpt_free(k);
    }
}

/* §10: a field's raw head outputs and outcome do not depend on the other
 * fields, their order, the batch, or other requests. */
Test(fill, determinism_bitwise)
{
    for (size_t mi = 0; mi < N_TINY; mi++) {
        deg_ckpt *k = make_ckpt(TINY[mi], 3);
        size_t all[N_FIELDS], rev[N_FIELDS];
        for (size_t i = 0; i < N_FIELDS; i++) {
            all[i] = i;
            rev[i] = N_FIELDS - 1 - i;
        }
        char *s_all = schema_of(all, N_FIELDS), *s_rev = schema_of(rev, N_FIELDS);
        char *r_all = request_of(CONTEXT, s_all, NULL), *r_rev = request_of(CONTEXT, s_rev, NULL);
        json_t *full = fill_ok(k, r_all);
        json_t *reordered = fill_ok(k, r_rev);
        /* split: first half / second half */
        size_t h = N_FIELDS / 2;
        char *s_a = schema_of(all, h), *s_b = schema_of(all + h, N_FIELDS - h);
        char *r_a = request_of(CONTEXT, s_a, NULL), *r_b = request_of(CONTEXT, s_b, NULL);
        /* fill_many: the split halves plus an unrelated request in one batch */
        char *other = request_of("Something else entirely: 42 apples.", s_all, NULL);
        const char *reqs[3] = {r_a, other, r_b};
        size_t lens[3] = {strlen(r_a), strlen(other), strlen(r_b)};
        char *resp[3];
        deg_status sts[3];
        cr_assert_eq(deg_fill_many(k, 3, reqs, lens, resp, NULL, sts), DEG_OK, "%s", deg_errmsg());
        json_t *ma = json_loads(resp[0], 0, NULL), *mb = json_loads(resp[2], 0, NULL);
        json_t *sa = fill_ok(k, r_a);
        for (size_t i = 0; i < N_FIELDS; i++) {
            const char *name = FIELDS[i].name;
            char *ref = field_text(full, name);
            cr_assert(strstr(ref, "\"raw\""), "debug raw present: %s", ref);
            char *t1 = field_text(reordered, name);
            cr_assert_str_eq(t1, ref, "%s reordered", name);
            char *t2 = field_text(i < h ? ma : mb, name);
            cr_assert_str_eq(t2, ref, "%s split + fill_many", name);
            if (i < h) {
                char *t3 = field_text(sa, name);
                cr_assert_str_eq(t3, ref, "%s split", name);
                free(t3);
            }
            /* alone */
            size_t one = i;
            char *s1 = schema_of(&one, 1);
            char *r1 = request_of(CONTEXT, s1, NULL);
            json_t *alone = fill_ok(k, r1);
            char *t4 = field_text(alone, name);
            cr_assert_str_eq(t4, ref, "%s alone", name);
            free(t4);
            json_decref(alone);
            free(r1);
            free(s1);
            free(ref);
            free(t1);
            free(t2);
        }
        /* repeats */
        char *full_text = json_dumps(full, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
        for (int rep = 0; rep < 10; rep++) {
            json_t *again = fill_ok(k, r_all);
            json_object_del(again, "timing");
            json_t *f2 = json_deep_copy(full);
            json_object_del(f2, "timing");
            char *a = json_dumps(again, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
            char *b = json_dumps(f2, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
            cr_assert_str_eq(a, b, "repeat %d", rep);
            free(a);
            free(b);
            json_decref(again);
            json_decref(f2);
        }
        free(full_text);
        for (int i = 0; i < 3; i++) deg_free(resp[i]);
        json_decref(ma);
        json_decref(mb);
        json_decref(sa);
        json_decref(full);
        json_decref(reordered);
        free(s_all); free(s_rev); free(r_all); free(r_rev);
        free(s_a); free(s_b); free(r_a); free(r_b); free(other);
        deg_ckpt_free(k);
    }
}

static const char *ARRAY_SCHEMA =
    "{\"type\": \"object\", \"properties\": {"
    "\"items\": {\"type\": \"array\", \"maxItems\": 4, \"items\": {\"type\": \"object\", "
    "\"properties\": {\"name\": {\"type\": \"string\"}, \"price\": {\"type\": [\"number\", \"null\"]}, "
    "\"color\": {\"enum\": [\"red\", \"blue\"]}, "
    "\"tags\": {\"type\": \"array\", \"maxItems\": 2, \"items\": {\"enum\": [\"a\", \"b\"]}}}, "
    "\"required\": [\"name\", \"color\"]}},"
    "\"summary\": {\"type\": \"string\", \"x-generate\": true, \"x-max-tokens\": 6}},"
    "\"required\": [\"items\", \"summary\"]}";

Test(fill, arrays_and_generate)
{
    /* llama and qwen3 (the hybrids take minutes here under the sanitizers;
     * this request on every tiny model, with tiny-lfm2 seed 5's budget ending
     * inside a UTF-8 character: generate_budget_ends_inside_a_character) */
    for (size_t mi = 0; mi < 2; mi++) {
        deg_ckpt *k = make_ckpt(TINY[mi], 5);
        char *req = request_of(CONTEXT, ARRAY_SCHEMA, "{\"max_new_tokens\": 8}");
        json_t *resp = fill_ok(k, req);
        json_t *items = json_object_get(json_object_get(resp, "value"), "items");
        cr_assert(json_is_array(items));
        json_t *am = json_object_get(json_object_get(resp, "meta"), "/items");
        cr_assert_str_eq(json_string_value(json_object_get(am, "mode")), "array");
        cr_assert_eq((size_t)json_integer_value(json_object_get(am, "items")), json_array_size(items));
        json_t *sm = json_object_get(json_object_get(resp, "meta"), "/summary");
        json_int_t gt = json_integer_value(json_object_get(sm, "generated_tokens"));
        cr_assert(gt >= 1 && gt <= 6, "x-max-tokens 6 respected: %lld", (long long)gt);
        cr_assert_eq(json_integer_value(json_object_get(json_object_get(resp, "usage"),
                                                        "generated_tokens")), gt);
        /* generate text identical alone and next to another generate field */
        const char *two =
            "{\"type\": \"object\", \"properties\": {"
            "\"items\": {\"type\": \"array\", \"maxItems\": 4, \"items\": {\"type\": \"object\", "
            "\"properties\": {\"name\": {\"type\": \"string\"}, \"price\": {\"type\": [\"number\", \"null\"]}, "
            "\"color\": {\"enum\": [\"red\", \"blue\"]}, "
            "\"tags\": {\"type\": \"array\", \"maxItems\": 2, \"items\": {\"enum\": [\"a\", \"b\"]}}}, "
            "\"required\": [\"name\", \"color\"]}},"
            "\"other\": {\"type\": \"string\", \"x-generate\": true, \"maxLength\": 10},"
            "\"summary\": {\"type\": \"string\", \"x-generate\": true, \"x-max-tokens\": 6}},"
            "\"required\": [\"items\", \"summary\"]}";
        char *req2 = request_of(CONTEXT, two, "{\"max_new_tokens\": 8}");
        json_t *resp2 = fill_ok(k, req2);
        cr_assert(json_equal(json_object_get(json_object_get(resp, "value"), "summary"),
                             json_object_get(json_object_get(resp2, "value"), "summary")));
        json_t *o = json_object_get(json_object_get(resp2, "value"), "other");
        if (o) cr_assert(strlen(json_string_value(o)) <= 40);
        json_decref(resp2);
        free(req2);
        json_decref(resp);
        free(req);
        deg_ckpt_free(k);
    }
}

/* The generate value of field `name` of resp against its debug token_ids:
 * the value is the decoded bytes without a cut final character (the longest
 * well-formed prefix: an independent reading of the contract's rule) and
 * dropped_bytes says how many went. Returns dropped_bytes. */
static size_t check_generate_value(deg_ckpt *k, json_t *resp, const char *name)
{
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", name);
    json_t *meta = json_object_get(json_object_get(resp, "meta"), ptr);
    json_t *ids = json_object_get(meta, "token_ids");
    cr_assert(json_is_array(ids), "%s: debug token_ids", name);
    const dg_tokenizer *tk = dg_model_tokenizer(deg_ckpt_model(k));
    size_t n = 0, cap = 1024;
    char *raw = malloc(cap);
    for (size_t t = 0; t < json_array_size(ids); t++) {
        size_t len = 0;
        const char *b = dg_tokenizer_token_bytes(tk, (int32_t)json_integer_value(json_array_get(ids, t)), &len);
        cr_assert(b && n + len <= cap);
        memcpy(raw + n, b, len);
        n += len;
    }
    size_t keep = n;
    while (keep > 0 && !dg_utf8_validate(raw, keep, NULL)) keep--;
    cr_assert(n - keep <= 3, "%s: only a cut final character may go (%zu bytes)", name, n - keep);
    json_t *v = json_object_get(json_object_get(resp, "value"), name);
    cr_assert(json_is_string(v), "%s is a string", name);
    cr_assert_eq(json_string_length(v), keep, "%s: %zu bytes, expected %zu", name,
                 json_string_length(v), keep);
    cr_assert(memcmp(json_string_value(v), raw, keep) == 0, "%s: the decoded text", name);
    cr_assert_eq((size_t)json_integer_value(json_object_get(meta, "dropped_bytes")), n - keep);
    free(raw);
    return n - keep;
}

Test(fill, generate_budget_ends_inside_a_character)
{
    /* A token budget spent inside a UTF-8 character (tiny-lfm2 seed 5 is the
     * case issue 18 found): the value is the text before that character,
     * valid against the schema, instead of a FillError. Every model and a few
     * budgets, so the rule is met wherever the cut falls. */
    const char *schema =
        "{\"type\": \"object\", \"properties\": {"
        "\"summary\": {\"type\": \"string\", \"x-generate\": true, \"x-max-tokens\": %d}},"
        "\"required\": [\"summary\"]}";
    size_t cut = 0, runs = 0;
    for (size_t mi = 0; mi < N_TINY; mi++) {
        deg_ckpt *k = make_ckpt(TINY[mi], 5);
        /* the issue-18 request itself */
        char *req = request_of(CONTEXT, ARRAY_SCHEMA, "{\"max_new_tokens\": 8}");
        json_t *resp = fill_ok(k, req);
        size_t d = check_generate_value(k, resp, "summary");
        if (strcmp(TINY[mi], "tiny-lfm2") == 0)
            cr_assert(d > 0, "tiny-lfm2 seed 5: the budget ends inside a character");
        cut += d > 0;
        runs++;
        json_decref(resp);
        free(req);
        for (int budget = 1; budget <= 4; budget++) {
            char sch[512];
            snprintf(sch, sizeof sch, schema, budget);
            req = request_of(CONTEXT, sch, NULL);
            resp = fill_ok(k, req);
            json_t *sm = json_object_get(json_object_get(resp, "meta"), "/summary");
            cr_assert(json_integer_value(json_object_get(sm, "generated_tokens")) <= budget);
            cut += check_generate_value(k, resp, "summary") > 0;
            runs++;
            char *errs = NULL;
            size_t ne = 1;
            char *vt = json_dumps(json_object_get(resp, "value"), JSON_ENCODE_ANY);
            deg_status vs = deg_validate(sch, vt, &ne, &errs);
            cr_assert(vs == DEG_OK && ne == 0, "valid against the schema: %s",
                      errs ? errs : deg_errmsg());
            free(vt);
            deg_free(errs);
            json_decref(resp);
            free(req);
        }
        deg_ckpt_free(k);
    }
    cr_log_info("generate: %zu of %zu values had a cut final character dropped", cut, runs);
}

Test(fill, span_values_are_verbatim_with_nul)
{
    /* NUL and other control bytes inside a document: every plain string value
     * is the context's text at its span, byte for byte (the contract's rule;
     * a NUL was reported to come out as a space), and the response JSON
     * carries the NUL (\u0000). */
    static const char ctx[] = "Name: Jane\0Doe\0Smith\nCity: New\0York\x1d" "City\n"
                              "Note: a\0b\0c\0d\0e\0f\0g\0h\x04i\nCode: X\0Y\0Z\0 end\n";
    const size_t ctx_len = sizeof ctx - 1;
    const char *schema =
        "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, "
        "\"city\": {\"type\": \"string\"}, \"note\": {\"type\": \"string\"}, "
        "\"code\": {\"type\": [\"string\", \"null\"]}}, "
        "\"required\": [\"name\", \"city\", \"note\"]}";
    size_t cp_byte[sizeof ctx], ncp = 0;
    for (size_t b = 0; b < ctx_len; b++)
        if (((unsigned char)ctx[b] & 0xC0) != 0x80) cp_byte[ncp++] = b;
    cp_byte[ncp] = ctx_len;
    size_t with_nul = 0, spans = 0;
    for (size_t mi = 0; mi < N_TINY; mi++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            deg_ckpt *k = make_ckpt(TINY[mi], seed);
            json_t *r = json_pack("{s:s%, s:o}", "context", ctx, ctx_len, "schema",
                                  json_loads(schema, 0, NULL));
            char *req = json_dumps(r, JSON_PRESERVE_ORDER);
            json_decref(r);
            char *resp = NULL, *errs = NULL;
            deg_status st = deg_fill(k, req, strlen(req), &resp, &errs);
            cr_assert_eq(st, DEG_OK, "%s seed %d: %s", TINY[mi], (int)seed, deg_errmsg());
            json_t *R = json_loads(resp, JSON_ALLOW_NUL, NULL);
            cr_assert(R, "response is JSON");
            const char *key;
            json_t *v;
            json_object_foreach(json_object_get(R, "value"), key, v) {
                char ptr[64];
                snprintf(ptr, sizeof ptr, "/%s", key);
                json_t *sp = json_object_get(json_object_get(json_object_get(R, "meta"), ptr), "span");
                if (json_is_null(v)) continue;
                cr_assert(json_is_array(sp), "%s has a span", ptr);
                size_t a = (size_t)json_integer_value(json_array_get(sp, 0));
                size_t e = (size_t)json_integer_value(json_array_get(sp, 1));
                cr_assert(a <= e && e <= ncp);
                size_t b0 = cp_byte[a], b1 = cp_byte[e];
                cr_assert_eq(json_string_length(v), b1 - b0, "%s: %zu bytes, span %zu", ptr,
                             json_string_length(v), b1 - b0);
                cr_assert(memcmp(json_string_value(v), ctx + b0, b1 - b0) == 0,
                          "%s: the context's text at [%zu, %zu)", ptr, a, e);
                spans++;
                with_nul += memchr(json_string_value(v), 0, json_string_length(v)) != NULL;
            }
            json_decref(R);
            deg_free(resp);
            deg_free(errs);
            free(req);
            deg_ckpt_free(k);
        }
    }
    cr_assert(with_nul >= 1, "some value holds a NUL (%zu of %zu)", with_nul, spans);
}

Test(fill, generate_constraints)
{
    deg_ckpt *k = make_ckpt("tiny-llama", 9);
    const char *schema =
        "{\"type\": \"object\", \"properties\": {"
        "\"code\": {\"type\": \"string\", \"x-generate\": true, \"pattern\": \"^[A-Z]{3}-[0-9]{2}$\"},"
        "\"short\": {\"type\": \"string\", \"x-generate\": true, \"minLength\": 2, \"maxLength\": 5}},"
        "\"required\": [\"code\", \"short\"]}";
    for (int sampled = 0; sampled < 2; sampled++) {
        char *req = request_of(CONTEXT, schema, sampled ? "{\"temperature\": 0.8, \"seed\": 3, "
                                                          "\"max_new_tokens\": 16}"
                                                        : "{\"max_new_tokens\": 16}");
        char *resp = NULL, *errs = NULL;
        deg_status s = deg_fill(k, req, strlen(req), &resp, &errs);
        if (s == DEG_OK) {
            json_t *v = json_object_get(json_loads(resp, 0, NULL), "value");
            const char *code = json_string_value(json_object_get(v, "code"));
            cr_assert(code && strlen(code) == 6 && code[3] == '-', "code %s", code ? code : "?");
            size_t sl = strlen(json_string_value(json_object_get(v, "short")));
            cr_assert(sl >= 2 && sl <= 5 * 4);
        } else {
            /* the only other allowed outcome: a clear FillError */
            cr_assert_eq(s, DEG_ERR_FILL, "%s: %s", deg_status_name(s), deg_errmsg());
            cr_assert(strstr(deg_errmsg(), "x-generate"), "%s", deg_errmsg());
        }
        deg_free(resp);
        deg_free(errs);
        free(req);
    }
    /* unsatisfiable: minLength 50 within 2 tokens */
    const char *bad = "{\"type\": \"object\", \"properties\": {\"t\": {\"type\": \"string\", "
                      "\"x-generate\": true, \"minLength\": 50, \"x-max-tokens\": 2}}}";
    char *req = request_of(CONTEXT, bad, NULL);
    char *resp = NULL, *errs = NULL;
    deg_status s = deg_fill(k, req, strlen(req), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_FILL, "%s", deg_status_name(s));
    cr_assert(strstr(deg_errmsg(), "/t"), "names the field: %s", deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "budget of 2 tokens"), "%s", deg_errmsg());
    cr_assert_null(resp);
    deg_free(errs);
    free(req);
    deg_ckpt_free(k);
}

Test(fill, bad_input)
{
    deg_ckpt *k = make_ckpt("tiny-llama", 11);
    char *resp = NULL, *errs = NULL;
    /* invalid schema: 422-style list */
    const char *r1 = "{\"context\": \"x\", \"schema\": {\"type\": \"object\", \"properties\": "
                     "{\"a\": {\"type\": \"string\", \"x-genrate\": true}, \"b\": {\"allOf\": []}}}}";
    deg_status s = deg_fill(k, r1, strlen(r1), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_SCHEMA, "%s", deg_status_name(s));
    json_t *e = json_loads(errs, 0, NULL);
    cr_assert(json_array_size(e) >= 2, "every problem listed: %s", errs);
    json_decref(e);
    deg_free(errs);
    /* unknown option */
    const char *r2 = "{\"context\": \"x\", \"schema\": {\"type\": \"object\", \"properties\": "
                     "{\"a\": {\"type\": \"boolean\"}}}, \"options\": {\"bogus\": 1}}";
    s = deg_fill(k, r2, strlen(r2), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_REQUEST, "%s", deg_status_name(s));
    cr_assert(errs && strstr(errs, "/options/bogus"), "%s", errs ? errs : "-");
    deg_free(errs);
    /* context of the wrong type */
    const char *r3 = "{\"context\": 5, \"schema\": {\"type\": \"object\", \"properties\": "
                     "{\"a\": {\"type\": \"boolean\"}}}}";
    s = deg_fill(k, r3, strlen(r3), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_REQUEST, "%s", deg_status_name(s));
    deg_free(errs);
    /* empty context */
    const char *r4 = "{\"context\": \"\", \"schema\": {\"type\": \"object\", \"properties\": "
                     "{\"a\": {\"type\": \"boolean\"}}}}";
    s = deg_fill(k, r4, strlen(r4), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_REQUEST, "%s", deg_status_name(s));
    cr_assert(strstr(deg_errmsg(), "empty"), "%s", deg_errmsg());
    deg_free(errs);
    /* blanks only: as empty (an array item "read" from them was {}) */
    const char *r4b = "{\"context\": \" \\n\\t\\r\\n \", \"schema\": {\"type\": \"object\", "
                      "\"properties\": {\"a\": {\"type\": \"boolean\"}}}}";
    s = deg_fill(k, r4b, strlen(r4b), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_REQUEST, "%s", deg_status_name(s));
    cr_assert(strstr(deg_errmsg(), "blank"), "%s", deg_errmsg());
    cr_assert(errs && strstr(errs, "/context"), "%s", errs ? errs : "-");
    deg_free(errs);
    /* Unicode white space only (no-break, em and ideographic spaces) */
    const char *r4u = "{\"context\": \"\\u00a0\\u2003\\n\\u3000\", \"schema\": {\"type\": "
                      "\"object\", \"properties\": {\"a\": {\"type\": \"boolean\"}}}}";
    s = deg_fill(k, r4u, strlen(r4u), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_REQUEST, "%s", deg_status_name(s));
    deg_free(errs);
    /* temperature without seed */
    const char *r5 = "{\"context\": \"x\", \"schema\": {\"type\": \"object\", \"properties\": "
                     "{\"a\": {\"type\": \"boolean\"}}}, \"options\": {\"temperature\": 0.5}}";
    s = deg_fill(k, r5, strlen(r5), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_REQUEST, "%s", deg_status_name(s));
    deg_free(errs);
    /* not JSON */
    s = deg_fill(k, "{", 1, &resp, &errs);
    cr_assert(s == DEG_ERR_REQUEST || s == DEG_ERR_FORMAT, "%s", deg_status_name(s));
    deg_free(errs);
    /* required non-nullable typed value absent: FillError */
    const char *r6 = "{\"context\": \"no numbers here at all\", \"schema\": {\"type\": \"object\", "
                     "\"properties\": {\"n\": {\"type\": \"number\"}}, \"required\": [\"n\"]}}";
    s = deg_fill(k, r6, strlen(r6), &resp, &errs);
    cr_assert_eq(s, DEG_ERR_FILL, "%s", deg_status_name(s));
    cr_assert(strstr(deg_errmsg(), "/n"), "%s", deg_errmsg());
    deg_free(errs);
    /* optional one: omitted; nullable one: null with not_found */
    const char *r7 = "{\"context\": \"no numbers here at all\", \"schema\": {\"type\": \"object\", "
                     "\"properties\": {\"n\": {\"type\": \"number\"}, \"m\": {\"type\": [\"number\", \"null\"]}}}}";
    json_t *v = fill_ok(k, r7);
    cr_assert_null(json_object_get(json_object_get(v, "value"), "n"));
    cr_assert(json_is_null(json_object_get(json_object_get(v, "value"), "m")));
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(v, "meta"), "/m"), "null_reason")),
                     "not_found");
    json_decref(v);
    deg_ckpt_free(k);
}

/* A long context (tiny model): streams through chunked prefill, no cap. */
Test(fill, long_context, .timeout = 900)
{
    deg_ckpt *k = make_ckpt("tiny-llama", 13);
    deg_ckpt_set_fork_budget(k, (size_t)4 << 20);
    size_t n = 16000; /* ~4k tokens (16 prefill passes): attention is O(n^2), and CI runs this under ASan */
    char *ctx = malloc(n + 64);
    size_t len = 0;
    const char *words[] = {"alpha ", "beta ", "42 ", "gamma, ", "on 5 March 2026 ", "x@y.org "};
    for (size_t i = 0; len + 20 < n; i++) {
        const char *w = words[(i * 7) % 6];
        memcpy(ctx + len, w, strlen(w));
        len += strlen(w);
    }
    ctx[len] = 0;
    const char *schema = "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"boolean\"}, "
                         "\"n\": {\"type\": [\"number\", \"null\"]}, \"s\": {\"type\": \"string\"}}}";
    char *req = request_of(ctx, schema, NULL);
    json_t *resp = fill_ok(k, req);
    json_int_t pt = json_integer_value(json_object_get(json_object_get(resp, "usage"), "prompt_tokens"));
    cr_assert(pt > 2000, "prompt tokens %lld", (long long)pt);
    json_decref(resp);
    free(req);
    free(ctx);
    deg_ckpt_free(k);
}

/* §12.1 no context cap: tiny-llama is trained on 256 positions; a longer
 * trunk is read whole and meta[""] warns; a short one has no warning. */
Test(fill, beyond_trained_positions_warns)
{
    deg_ckpt *k = make_ckpt("tiny-llama", 21);
    size_t idx[] = {0, 4};
    char *schema = schema_of(idx, 2);
    char *shortq = request_of("Order 4711 from ACME.", schema, NULL);
    json_t *r = fill_ok(k, shortq);
    cr_assert_null(json_object_get(json_object_get(r, "meta"), ""));
    json_decref(r);
    char longc[4096] = "";
    for (int i = 0; i < 4; i++) strcat(longc, CONTEXT);
    char *longq = request_of(longc, schema, NULL);
    r = fill_ok(k, longq);
    json_int_t pt = json_integer_value(json_object_get(json_object_get(r, "usage"), "prompt_tokens"));
    cr_assert_gt(pt, 256);
    json_t *m = json_object_get(json_object_get(r, "meta"), "");
    cr_assert(m, "meta[\"\"] warns");
    cr_assert_str_eq(json_string_value(json_object_get(m, "mode")), "document");
    const char *w = json_string_value(json_array_get(json_object_get(m, "warnings"), 0));
    cr_assert(w && strstr(w, "256 trained positions"), "%s", w ? w : "-");
    /* the value is filled from the whole context */
    cr_assert(json_object_get(json_object_get(r, "value"), "department"));
    json_decref(r);
    free(shortq);
    free(longq);
    free(schema);
    deg_ckpt_free(k);
}

/* Date-time candidates that start together are one written date-time: the
 * fullest reading (with its written zone) is the value, never the shorter one
 * with the zone assumed. Random heads over several fields and seeds point at
 * both ends; without the rule some fields read "...01:32:51Z" (checked when
 * the rule was written: tiny-qwen3 seed 3 does). */
Test(fill, date_time_reads_its_written_zone)
{
    static const char ctx[] = "* 1.0.8-5 went out on 2021-12-03 01:32:51 -0700; urgency was "
                              "medium. Uploader: foka@debian.org\n";
    json_t *props = json_object(), *req_names = json_array();
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof name, "when%d", i);
        json_object_set_new(props, name, json_pack("{s:s, s:s}", "type", "string", "format",
                                                   "date-time"));
        json_array_append_new(req_names, json_string(name));
    }
    json_t *schema = json_pack("{s:s, s:o, s:o}", "type", "object", "properties", props,
                               "required", req_names);
    size_t fields = 0;
    for (size_t mi = 0; mi < 2; mi++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            deg_ckpt *k = make_ckpt(TINY[mi], seed);
            json_t *r = json_pack("{s:s, s:O}", "context", ctx, "schema", schema);
            char *req = json_dumps(r, 0);
            json_decref(r);
            char *resp = NULL, *errs = NULL;
            cr_assert_eq(deg_fill(k, req, strlen(req), &resp, &errs), DEG_OK, "%s", deg_errmsg());
            json_t *R = json_loads(resp, 0, NULL);
            const char *key;
            json_t *v;
            json_object_foreach(json_object_get(R, "value"), key, v) {
                cr_assert_str_eq(json_string_value(v), "2021-12-03T01:32:51-07:00", "%s seed %d %s",
                                 TINY[mi], (int)seed, key);
                fields++;
            }
            json_decref(R);
            deg_free(resp);
            deg_free(errs);
            free(req);
            deg_ckpt_free(k);
        }
    }
    cr_assert_eq(fields, 48);
    json_decref(schema);
}
