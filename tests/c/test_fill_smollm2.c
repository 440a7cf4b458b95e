/* deg.fill on the real SmolLM2 GGUF with random heads (suite 'model'; skips
 * without the model file): every field's raw head outputs bitwise equal alone,
 * reordered, inside a bigger schema and inside deg_fill_many; a generate
 * field's text identical alone and next to another generate field (same
 * decided values: KNOWN VALUES follow leaf order, so reordering the decide
 * fields legitimately changes the generate prompt). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deg.h"
#include "model_path.h"

static char model_path[1024];

static int find_model(void)
{
    return tu_default_model(model_path, sizeof model_path) != NULL;
}

static const char *CTX = "Order 4711 from ACME, placed on 5 March 2026 by jane@example.com. "
                         "Total $1,234.50. The customer is angry and wants a refund.";
static const char *F[][2] = {
    {"dep", "{\"enum\": [\"billing\", \"shipping\", \"other\"]}"},
    {"urgent", "{\"type\": \"boolean\"}"},
    {"anger", "{\"type\": \"integer\", \"minimum\": 0, \"maximum\": 4}"},
    {"total", "{\"type\": [\"number\", \"null\"]}"},
    {"email", "{\"type\": [\"string\", \"null\"], \"format\": \"email\"}"},
    {"who", "{\"type\": [\"string\", \"null\"], \"maxLength\": 30}"},
    {"reply", "{\"type\": \"string\", \"x-generate\": true, \"x-max-tokens\": 8}"},
    {"code", "{\"type\": \"string\", \"x-generate\": true, \"pattern\": \"^[A-Z]{3}$\"}"},
};

static char *req_of(const int *idx, int n)
{
    json_t *p = json_object();
    for (int i = 0; i < n; i++) json_object_set_new(p, F[idx[i]][0], json_loads(F[idx[i]][1], 0, NULL));
    json_t *r = json_pack("{s:s, s:{s:s, s:o}, s:{s:i}}", "context", CTX, "schema", "type",
                          "object", "properties", p, "options", "max_new_tokens", 8);
    char *t = json_dumps(r, JSON_PRESERVE_ORDER);
    json_decref(r);
    return t;
}

static char *field(const char *resp, const char *name)
{
    json_t *r = json_loads(resp, 0, NULL);
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", name);
    json_t *o = json_pack("{s:O?, s:O?}", "m", json_object_get(json_object_get(r, "meta"), ptr), "v",
                          json_object_get(json_object_get(r, "value"), name));
    char *t = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(o);
    json_decref(r);
    return t;
}

Test(fill_smollm2, independence_bitwise, .timeout = 1800)
{
    if (!find_model()) cr_skip_test("SmolLM2 not found (%s): set DEG_MODEL or run scripts/fetch-model", model_path);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/fill-smollm2-%d", DEG_BUILD_ROOT, (int)getpid());
    cr_assert_eq(deg_ckpt_create_random(model_path, 2, dir), DEG_OK, "%s", deg_errmsg());
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, model_path, &k), DEG_OK, "%s", deg_errmsg());
    deg_ckpt_set_debug(k, 1);
    int all[8] = {0, 1, 2, 3, 4, 5, 6, 7}, rev[8] = {7, 6, 5, 4, 3, 2, 1, 0};
    char *ra = req_of(all, 8), *rr = req_of(rev, 8);
    int half1[4] = {0, 2, 4, 6}, half2[4] = {1, 3, 5, 7};
    char *h1 = req_of(half1, 4), *h2 = req_of(half2, 4);
    const char *reqs[3] = {ra, h1, h2};
    size_t lens[3] = {strlen(ra), strlen(h1), strlen(h2)};
    char *out[3], *errs[3];
    deg_status sts[3];
    cr_assert_eq(deg_fill_many(k, 3, reqs, lens, out, errs, sts), DEG_OK, "%s", deg_errmsg());
    char *resp_rev = NULL;
    cr_assert_eq(deg_fill(k, rr, strlen(rr), &resp_rev, NULL), DEG_OK, "%s", deg_errmsg());
    /* decide/extract fields: alone, reordered, split, fill_many */
    for (int i = 0; i < 6; i++) {
        char *a = field(out[0], F[i][0]);
        cr_assert(strstr(a, "\"m\":{"), "%s present", F[i][0]);
        char *b = field(resp_rev, F[i][0]);
        char *c = field(out[i % 2 ? 2 : 1], F[i][0]);
        cr_assert_str_eq(a, b, "%s reordered", F[i][0]);
        cr_assert_str_eq(a, c, "%s split + fill_many", F[i][0]);
        int one = i;
        char *r1 = req_of(&one, 1);
        char *alone = NULL;
        cr_assert_eq(deg_fill(k, r1, strlen(r1), &alone, NULL), DEG_OK, "%s", deg_errmsg());
        char *d = field(alone, F[i][0]);
        cr_assert_str_eq(a, d, "%s alone", F[i][0]);
        free(a); free(b); free(c); free(d); free(r1); deg_free(alone);
    }
    /* generate fields: the same parallel outcomes (KNOWN VALUES, in leaf order) give
     * the same text alone and next to the other generate field (§10) */
    for (int g = 6; g < 8; g++) {
        int idx[7] = {0, 1, 2, 3, 4, 5, g};
        char *r1 = req_of(idx, 7);
        char *alone = NULL;
        cr_assert_eq(deg_fill(k, r1, strlen(r1), &alone, NULL), DEG_OK, "%s", deg_errmsg());
        char *a = field(out[0], F[g][0]), *d = field(alone, F[g][0]);
        cr_assert(strstr(a, "generated_tokens"), "%s", a);
        cr_assert_str_eq(a, d, "%s alone vs next to the other generate field", F[g][0]);
        free(a); free(d); free(r1); deg_free(alone);
    }
    for (int i = 0; i < 3; i++) { deg_free(out[i]); deg_free(errs[i]); }
    deg_free(resp_rev);
    free(ra); free(rr); free(h1); free(h2);
    deg_ckpt_free(k);
}
