/* deg_ckpt_open over an already loaded model (one model for several
 * checkpoints and cartridges): fills bitwise equal to deg_ckpt_load's, the
 * model borrowed (alive after deg_ckpt_free), backbone mismatch, the
 * null_margin default, deg_ckpt_backbone_path, bad params, the chat layout a
 * checkpoint records and how its name maps. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cartridge.h"
#include "deg.h"
#include "model/chat.h"
#include "model/model.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static char dir_buf[256];

static const char *random_ckpt(const char *model, const char *name)
{
    snprintf(dir_buf, sizeof dir_buf, "%s/ckpt-open-%d-%s", DEG_BUILD_ROOT, (int)getpid(), name);
    cr_assert_eq(deg_ckpt_create_random(model, 3, dir_buf), DEG_OK, "%s", deg_errmsg());
    return dir_buf;
}

/* An extract-heavy request: nullable leaves are where null_margin acts. The
 * response's numbers are printed to 17 digits, so equal texts = equal bits. */
static const char *REQ =
    "{\"context\": \"Order 4711 from ann@example.com, placed on 5 March 2026, total $12.50.\","
    " \"schema\": {\"type\": \"object\", \"properties\": {"
    "\"email\": {\"type\": [\"string\", \"null\"], \"format\": \"email\"},"
    "\"placed\": {\"type\": [\"string\", \"null\"], \"format\": \"date\"},"
    "\"total\": {\"type\": [\"number\", \"null\"]},"
    "\"urgent\": {\"type\": \"boolean\"}}}%s}";

static char *fill_text(deg_ckpt *k, const char *options)
{
    char req[1024];
    snprintf(req, sizeof req, REQ, options ? options : "");
    char *resp = NULL, *errs = NULL;
    deg_status s = deg_fill(k, req, strlen(req), &resp, &errs);
    cr_assert_eq(s, DEG_OK, "%s (%s)", deg_errmsg(), errs ? errs : "-");
    deg_free(errs);
    return resp;
}

Test(ckpt_open, shared_model_fills_bitwise_like_own_model)
{
    char model_path[512];
    snprintf(model_path, sizeof model_path, "%s/tiny-llama", GOLDENS);
    const char *dir = random_ckpt(model_path, "shared");
    deg_ckpt *own = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &own), DEG_OK, "%s", deg_errmsg());
    char *want = fill_text(own, NULL);

    deg_model *m = NULL;
    cr_assert_eq(deg_model_load(model_path, &m), DEG_OK, "%s", deg_errmsg());
    deg_ckpt_params p = deg_ckpt_default_params();
    cr_assert_null(p.model);
    cr_assert_eq(p.has_null_margin, 0);
    cr_assert_eq(p.fork_budget_bytes, 0);
    p.model = m;
    deg_ckpt *a = NULL, *b = NULL;
    cr_assert_eq(deg_ckpt_open(dir, &p, &a), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_ckpt_open(dir, &p, &b), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_ckpt_model(a), m, "the checkpoint runs on the given model");
    cr_assert_eq(deg_ckpt_model(b), m);
    char *got_a = fill_text(a, NULL);
    cr_assert_str_eq(got_a, want, "shared-model fill equals the owning checkpoint's");
    /* a cartridge over the same model meanwhile */
    deg_cartridge *c = NULL;
    cr_assert_eq(deg_cartridge_init_random_vectors(m, 4, 1, &c), DEG_OK, "%s", deg_errmsg());
    deg_ckpt_free(a);
    /* the model is borrowed: still usable after a checkpoint over it is freed */
    char *got_b = fill_text(b, NULL);
    cr_assert_str_eq(got_b, want);
    deg_trunk *t = NULL;
    cr_assert_eq(deg_trunk_from_cartridge(c, &t), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_trunk_len(t), 4);
    deg_trunk_free(t);
    deg_cartridge_free(c);
    deg_ckpt_free(b);
    deg_model_info info;
    cr_assert_eq(deg_model_get_info(m, &info), DEG_OK);
    deg_model_free(m);
    deg_ckpt_free(own);
    deg_free(want);
    deg_free(got_a);
    deg_free(got_b);
}

Test(ckpt_open, null_margin_default_is_the_requests_null)
{
    char model_path[512];
    snprintf(model_path, sizeof model_path, "%s/tiny-qwen3", GOLDENS);
    const char *dir = random_ckpt(model_path, "margin");
    deg_ckpt_params p = deg_ckpt_default_params();
    p.model_path = model_path;
    p.has_null_margin = 1;
    p.null_margin = 50.0; /* large: every nullable extract leaf becomes null */
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_open(dir, &p, &k), DEG_OK, "%s", deg_errmsg());
    deg_ckpt *plain = NULL;
    cr_assert_eq(deg_ckpt_load(dir, model_path, &plain), DEG_OK, "%s", deg_errmsg());
    char *dflt = fill_text(k, NULL);
    char *nul = fill_text(k, ", \"options\": {\"null_margin\": null}");
    char *explicit = fill_text(plain, ", \"options\": {\"null_margin\": 50.0}");
    char *zero_k = fill_text(k, ", \"options\": {\"null_margin\": 0}");
    char *zero_plain = fill_text(plain, NULL);
    cr_assert_str_eq(dflt, explicit, "an absent null_margin takes the checkpoint default");
    cr_assert_str_eq(nul, explicit, "null_margin null takes the checkpoint default");
    cr_assert_str_eq(zero_k, zero_plain, "an explicit null_margin overrides the default");
    cr_assert(strstr(dflt, "\"email\":null"), "margin 50 nulls the email: %s", dflt);
    cr_assert_str_neq(dflt, zero_plain, "the default changed the response");
    deg_free(dflt);
    deg_free(nul);
    deg_free(explicit);
    deg_free(zero_k);
    deg_free(zero_plain);
    deg_ckpt_free(k);
    deg_ckpt_free(plain);
}

/* Sets key in deg.json's object obj ("" = the top level) in dir to v
 * (NULL = remove it). */
static void set_json(const char *dir, const char *obj, const char *key, json_t *v)
{
    char path[512];
    snprintf(path, sizeof path, "%s/deg.json", dir);
    json_error_t e;
    json_t *meta = json_load_file(path, 0, &e);
    cr_assert_not_null(meta, "%s", e.text);
    json_t *o = *obj ? json_object_get(meta, obj) : meta;
    cr_assert(json_is_object(o), "deg.json has an object %s", obj);
    if (v) json_object_set_new(o, key, v);
    else json_object_del(o, key);
    cr_assert_eq(json_dump_file(meta, path, JSON_INDENT(1)), 0);
    json_decref(meta);
}

Test(ckpt_open, null_margin_from_the_checkpoint)
{
    char model_path[512];
    snprintf(model_path, sizeof model_path, "%s/tiny-qwen3", GOLDENS);
    const char *dir = random_ckpt(model_path, "jmargin");
    deg_ckpt *plain = NULL;
    cr_assert_eq(deg_ckpt_load(dir, model_path, &plain), DEG_OK, "%s", deg_errmsg());
    char *zero = fill_text(plain, NULL);
    char *fifty = fill_text(plain, ", \"options\": {\"null_margin\": 50.0}");
    deg_ckpt_free(plain);

    set_json(dir, "", "null_margin", json_real(50.0));
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, model_path, &k), DEG_OK, "%s", deg_errmsg());
    char *dflt = fill_text(k, NULL);
    char *req0 = fill_text(k, ", \"options\": {\"null_margin\": 0}");
    cr_assert_str_eq(dflt, fifty, "deg.json's null_margin is the requests' default");
    cr_assert_str_eq(req0, zero, "a request's null_margin overrides deg.json's");
    cr_assert(strstr(dflt, "\"email\":null"), "margin 50 nulls the email: %s", dflt);
    deg_ckpt_free(k);
    /* params (a server's --null-margin) override deg.json's too */
    deg_ckpt_params p = deg_ckpt_default_params();
    p.model_path = model_path;
    p.has_null_margin = 1;
    p.null_margin = 0.0;
    cr_assert_eq(deg_ckpt_open(dir, &p, &k), DEG_OK, "%s", deg_errmsg());
    char *par0 = fill_text(k, NULL);
    cr_assert_str_eq(par0, zero, "params.null_margin overrides deg.json's");
    deg_ckpt_free(k);

    set_json(dir, "", "null_margin", json_string("1.5"));
    cr_assert_eq(deg_ckpt_load(dir, model_path, &k), DEG_ERR_FORMAT);
    cr_assert(strstr(deg_errmsg(), "null_margin must be a finite number"), "%s", deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "deg.json"), "the message names the file: %s", deg_errmsg());
    set_json(dir, "", "null_margin", NULL);
    cr_assert_eq(deg_ckpt_load(dir, model_path, &k), DEG_OK, "%s", deg_errmsg());
    char *absent = fill_text(k, NULL);
    cr_assert_str_eq(absent, zero, "no null_margin in deg.json = 0");
    deg_ckpt_free(k);
    deg_free(zero);
    deg_free(fifty);
    deg_free(dflt);
    deg_free(req0);
    deg_free(par0);
    deg_free(absent);
}

/* The extract leaves' meta confidences of a response, in pointer order. */
static size_t extract_confs(const char *resp, json_t **value, double *out, size_t cap)
{
    json_error_t e;
    json_t *r = json_loads(resp, 0, &e);
    cr_assert_not_null(r, "%s", e.text);
    *value = json_incref(json_object_get(r, "value"));
    const char *ptrs[] = {"/email", "/placed", "/total"};
    size_t n = 0;
    for (size_t i = 0; i < 3 && n < cap; i++) {
        json_t *m = json_object_get(json_object_get(r, "meta"), ptrs[i]);
        cr_assert(json_is_number(json_object_get(m, "confidence")), "%s has a confidence", ptrs[i]);
        out[n++] = json_number_value(json_object_get(m, "confidence"));
    }
    json_decref(r);
    return n;
}

Test(ckpt_open, extract_confidence_calibration)
{
    char model_path[512];
    snprintf(model_path, sizeof model_path, "%s/tiny-qwen3", GOLDENS);
    const char *dir = random_ckpt(model_path, "xconf");
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, model_path, &k), DEG_OK, "%s", deg_errmsg());
    char *plain = fill_text(k, NULL);
    deg_ckpt_free(k);
    /* scale 1, bias 0: sigmoid(lp) = p / (1 + p) of the plain confidence p */
    json_t *xc = json_pack("{s:f, s:f}", "scale", 1.0, "bias", 0.0);
    set_json(dir, "calibration", "extract_confidence", xc);
    cr_assert_eq(deg_ckpt_load(dir, model_path, &k), DEG_OK, "%s", deg_errmsg());
    char *one = fill_text(k, NULL);
    deg_ckpt_free(k);
    /* scale 0.5, bias 2: sigmoid(0.5 ln p + 2) = 1 / (1 + e^-2 p^-0.5) */
    set_json(dir, "calibration", "extract_confidence",
             json_pack("{s:f, s:f}", "scale", 0.5, "bias", 2.0));
    cr_assert_eq(deg_ckpt_load(dir, model_path, &k), DEG_OK, "%s", deg_errmsg());
    char *two = fill_text(k, NULL);
    deg_ckpt_free(k);
    json_t *v0, *v1, *v2;
    double c0[3], c1[3], c2[3];
    cr_assert_eq(extract_confs(plain, &v0, c0, 3), 3);
    extract_confs(one, &v1, c1, 3);
    extract_confs(two, &v2, c2, 3);
    cr_assert(json_equal(v0, v1) && json_equal(v0, v2), "values never change");
    for (int i = 0; i < 3; i++) {
        cr_assert(c0[i] > 0 && c0[i] <= 1);
        cr_assert_float_eq(c1[i], c0[i] / (1 + c0[i]), 1e-12, "%d: %.17g vs %.17g", i, c1[i], c0[i]);
        cr_assert_float_eq(c2[i], 1 / (1 + exp(-2.0) / sqrt(c0[i])), 1e-12, "%d", i);
    }
    json_decref(v0);
    json_decref(v1);
    json_decref(v2);
    set_json(dir, "calibration", "extract_confidence", json_pack("{s:f}", "scale", 1.0));
    cr_assert_eq(deg_ckpt_load(dir, model_path, &k), DEG_ERR_FORMAT);
    cr_assert(strstr(deg_errmsg(), "calibration.extract_confidence must be"), "%s", deg_errmsg());
    set_json(dir, "calibration", "extract_confidence", json_pack("{s:s, s:f}", "scale", "1", "bias", 0.0));
    cr_assert_eq(deg_ckpt_load(dir, model_path, &k), DEG_ERR_FORMAT);
    deg_free(plain);
    deg_free(one);
    deg_free(two);
}

Test(ckpt_open, mismatch_backbone_path_and_bad_params)
{
    char llama[512], qwen[512];
    snprintf(llama, sizeof llama, "%s/tiny-llama", GOLDENS);
    snprintf(qwen, sizeof qwen, "%s/tiny-qwen3", GOLDENS);
    const char *dir = random_ckpt(llama, "mismatch");
    deg_model *other = NULL;
    cr_assert_eq(deg_model_load(qwen, &other), DEG_OK, "%s", deg_errmsg());
    deg_ckpt_params p = deg_ckpt_default_params();
    p.model = other;
    deg_ckpt *k = (deg_ckpt *)1;
    deg_status s = deg_ckpt_open(dir, &p, &k);
    cr_assert_eq(s, DEG_ERR_MISMATCH, "%s: %s", deg_status_name(s), deg_errmsg());
    cr_assert_null(k);
    cr_assert(strstr(deg_errmsg(), "SHA-256"), "%s", deg_errmsg());
    /* the borrowed model survives the failed open */
    deg_model_info info;
    cr_assert_eq(deg_model_get_info(other, &info), DEG_OK);
    cr_assert_str_eq(info.arch, "qwen3");
    deg_model_free(other);

    p = deg_ckpt_default_params();
    p.has_null_margin = 1;
    p.null_margin = 1.0 / 0.0;
    cr_assert_eq(deg_ckpt_open(dir, &p, &k), DEG_ERR_ARG);
    p = deg_ckpt_default_params();
    p.fork_budget_bytes = 1000;
    cr_assert_eq(deg_ckpt_open(dir, &p, &k), DEG_ERR_ARG);
    cr_assert_eq(deg_ckpt_open(NULL, NULL, &k), DEG_ERR_ARG);
    /* params NULL = defaults: resolves the recorded backbone path */
    cr_assert_eq(deg_ckpt_open(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    deg_ckpt_free(k);

    char *bp = NULL;
    cr_assert_eq(deg_ckpt_backbone_path(dir, &bp), DEG_OK, "%s", deg_errmsg());
    char want[4096];
    cr_assert(realpath(llama, want));
    cr_assert_str_eq(bp, want, "deg.json records the absolute backbone path");
    deg_free(bp);
    cr_assert_eq(deg_ckpt_backbone_path("/nonexistent/ckpt", &bp), DEG_ERR_IO);
    cr_assert_null(bp);
    cr_assert_eq(deg_ckpt_backbone_path(NULL, &bp), DEG_ERR_ARG);
}

static void set_chat_layout(const char *dir, const char *name)
{
    char js[512];
    snprintf(js, sizeof js, "%s/deg.json", dir);
    json_t *meta = json_load_file(js, 0, NULL);
    cr_assert(meta);
    json_object_set_new(meta, "chat_layout", json_string(name));
    cr_assert_eq(json_dump_file(meta, js, JSON_INDENT(1)), 0);
    json_decref(meta);
}

/* The trunk's tokens before the context under the checkpoint dir's layout equal
 * the chat tokenization (dg_chat_tokenize, Hugging Face's apply_chat_template rule)
 * of a user message "CONTEXT:\n" in layout want, up to the context. */
static void expect_trunk_opening(const char *dir, dg_chat_layout want)
{
    static const char req[] = "{\"context\": \"Order 4711.\", \"schema\": {\"type\": "
                              "\"object\", \"properties\": {\"urgent\": {\"type\": \"boolean\"}}}}";
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    deg_features *f = NULL;
    cr_assert_eq(deg_features_extract(k, req, strlen(req), "{\"urgent\": true}", 16, 0, 0, &f,
                                      NULL), DEG_OK, "%s", deg_errmsg());
    deg_chat_message msg = {"user", "CONTEXT:\n"};
    int32_t *ids = NULL;
    size_t n = 0;
    cr_assert_eq(dg_chat_tokenize(dg_model_tokenizer(deg_ckpt_model(k)), want, NULL, &msg, 1, 0,
                                  0, &ids, &n), DEG_OK, "%s", deg_errmsg());
    /* the message's rendering goes on with "<|im_end|>\n" (special: its own token) */
    cr_assert(f->ctx_first >= 3 && f->ctx_first + 2 <= n, "%zu of %zu", f->ctx_first, n);
    for (size_t i = 0; i < f->ctx_first; i++)
        cr_expect_eq(f->trunk_ids[i], ids[i], "layout %s: trunk token %zu",
                     dg_chat_layout_name(want), i);
    free(ids);
    deg_features_free(f);
    deg_ckpt_free(k);
}

/* One name mapping (model/chat.h): a checkpoint records its model's layout by
 * name (LFM2 models "lfm2": "<|startoftext|>" + ChatML, its template's text), the
 * fill reads the name back through the same mapping (a checkpoint that recorded
 * "chatml" on an LFM2 model keeps the ChatML prompt its heads were trained on),
 * and an unknown name is refused at load. */
Test(ckpt_open, chat_layout_is_the_models_by_one_name_mapping)
{
    const char *const tiny[] = {"tiny-llama", "tiny-qwen3", "tiny-lfm2", "tiny-qwen3_5"};
    const char *const want[] = {"chatml", "qwen3", "lfm2", "qwen3"};
    for (size_t i = 0; i < 4; i++) {
        char model[512], js[600];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, tiny[i]);
        const char *dir = random_ckpt(model, tiny[i]);
        snprintf(js, sizeof js, "%s/deg.json", dir);
        json_t *meta = json_load_file(js, 0, NULL);
        cr_assert(meta);
        cr_expect_str_eq(json_string_value(json_object_get(meta, "chat_layout")), want[i], "%s",
                         tiny[i]);
        json_decref(meta);
    }
    char model[512];
    snprintf(model, sizeof model, "%s/tiny-lfm2", GOLDENS);
    const char *dir = random_ckpt(model, "lfm2-layout");
    expect_trunk_opening(dir, DG_CHAT_LFM2);
    set_chat_layout(dir, "chatml");
    expect_trunk_opening(dir, DG_CHAT_CHATML);
    set_chat_layout(dir, "ChatML");
    deg_ckpt *k = (deg_ckpt *)1;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_ERR_FORMAT);
    cr_assert_null(k);
    cr_assert(strstr(deg_errmsg(), "chat_layout \"ChatML\" is not a chat layout"), "%s",
              deg_errmsg());
}
