/* deg_ckpt_open over an already loaded model (one model for several
 * checkpoints and cartridges): fills bitwise equal to deg_ckpt_load's, the
 * model borrowed (alive after deg_ckpt_free), backbone mismatch, the
 * null_margin default, deg_ckpt_backbone_path, bad params. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cartridge.h"
#include "deg.h"

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
