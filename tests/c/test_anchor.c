/* §12.6 anchor mode: the pure rules of lib/deg/anchor.c on hand-made logits
 * (bucket edges, threshold runs / minItems fill / cap, count_peaks with NMS,
 * hybrid, the count rule), and deg_fill on the tiny random models with an
 * anchor-mode checkpoint: crafted head weights whose anchors fall at known
 * tokens (threshold, count_peaks, hybrid, nested regions, the anchored-extract
 * bias, dropped items, minItems failures), routing by anchor_min_tokens, and
 * bitwise independence of anchored fields (alone, reordered, inside bigger
 * schemas, fill_many). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deg.h"
#include "ckpt_fixture.h"
#include "deg/anchor.h"
#include "deg/fill.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static const char *TINY[] = {"tiny-llama", "tiny-qwen3"};

/* ---- rules ---------------------------------------------------------------- */

Test(anchor_rules, buckets)
{
    const int64_t d[] = {-100000, -257, -256, -65, -64, -17, -16, -5, -4, -1, 0, 1, 2, 3,
                         4, 7, 8, 255, 256, 100000};
    const int b[] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 6, 7, 7, 8, 8, 9, 13, 14, 14};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        cr_assert_eq(dg_anchor_bucket(d[i]), b[i], "bucket(%lld)", (long long)d[i]);
    cr_assert_eq(DG_ANCHOR_BUCKETS, 15);
}

static size_t pick(const float *l, size_t n, int mode, int64_t mn, int64_t cap, int64_t count,
                   size_t *out)
{
    size_t k = 0;
    cr_assert_eq(dg_anchor_pick(l, n, mode, mn, cap, count, out, &k), DEG_OK);
    return k;
}

Test(anchor_rules, threshold)
{
    const float l[] = {-1, 2, 3, -1, -1, 1, -2, 0.5f, 0.7f};
    size_t out[16];
    size_t k = pick(l, 9, DEG_ARRAY_DECODE_THRESHOLD, 0, -1, -1, out);
    cr_assert_eq(k, 3);
    cr_assert(out[0] == 2 && out[1] == 5 && out[2] == 8, "%zu %zu %zu", out[0], out[1], out[2]);
    cr_assert_eq(dg_anchor_runs(l, 9), 3);
    /* more than maxItems: the highest are kept, in document order */
    k = pick(l, 9, DEG_ARRAY_DECODE_THRESHOLD, 0, 2, -1, out);
    cr_assert(k == 2 && out[0] == 2 && out[1] == 5);
    /* fewer than minItems: best remaining tokens not adjacent to a chosen one */
    const float m[] = {-1, 2, -3, -3, -3, -2, -0.5f};
    k = pick(m, 7, DEG_ARRAY_DECODE_THRESHOLD, 2, -1, -1, out);
    cr_assert(k == 2 && out[0] == 1 && out[1] == 6, "%zu: %zu %zu", k, out[0], out[1]);
    k = pick(m, 7, DEG_ARRAY_DECODE_THRESHOLD, 5, -1, -1, out);
    cr_assert(k == 3 && out[0] == 1 && out[1] == 3 && out[2] == 6, "too few positions: %zu", k);
    /* flat logits: ties go to the earlier token */
    const float f[] = {-1, -1, -1, -1, -1, -1};
    k = pick(f, 6, DEG_ARRAY_DECODE_THRESHOLD, 3, -1, -1, out);
    cr_assert(k == 3 && out[0] == 0 && out[1] == 2 && out[2] == 4);
    const float g[] = {1, 1, 1, 1};
    k = pick(g, 4, DEG_ARRAY_DECODE_THRESHOLD, 0, -1, -1, out);
    cr_assert(k == 1 && out[0] == 0, "one run, first maximum");
}

Test(anchor_rules, count_peaks_and_hybrid)
{
    const float l[] = {0, 1, 5, 1, 0, 0, 0, 4, 0, 3, 0, 0, 0, 0, 0, 2};
    size_t out[16];
    size_t k = pick(l, 16, DEG_ARRAY_DECODE_COUNT_PEAKS, 0, -1, 3, out);
    cr_assert(k == 3 && out[0] == 2 && out[1] == 7 && out[2] == 15, "%zu: %zu %zu %zu", k,
              out[0], out[1], out[2]);
    /* a 4th: no peak and no token outside every radius is left: best remaining */
    k = pick(l, 16, DEG_ARRAY_DECODE_COUNT_PEAKS, 0, -1, 4, out);
    cr_assert(k == 4 && out[0] == 2 && out[1] == 7 && out[2] == 9 && out[3] == 15);
    /* capped by maxItems */
    k = pick(l, 16, DEG_ARRAY_DECODE_COUNT_PEAKS, 0, 2, 4, out);
    cr_assert(k == 2 && out[0] == 2 && out[1] == 7);
    /* flat logits: suppression spaces anchors by radius + 1 */
    float f[16];
    for (int i = 0; i < 16; i++) f[i] = -3;
    k = pick(f, 16, DEG_ARRAY_DECODE_COUNT_PEAKS, 0, -1, 3, out);
    cr_assert(k == 3 && out[0] == 0 && out[1] == 5 && out[2] == 10);
    k = pick(f, 3, DEG_ARRAY_DECODE_COUNT_PEAKS, 0, -1, 5, out);
    cr_assert_eq(k, 3, "region exhausted");
    /* hybrid: threshold when something passes p > 0.5 ... */
    k = pick(l, 16, DEG_ARRAY_DECODE_HYBRID, 0, -1, 1, out);
    cr_assert(k == 4 && out[0] == 2 && out[1] == 7 && out[2] == 9 && out[3] == 15,
              "threshold runs: %zu", k);
    /* ... else count_peaks when the count says N > 0 */
    k = pick(f, 16, DEG_ARRAY_DECODE_HYBRID, 0, -1, 2, out);
    cr_assert(k == 2 && out[0] == 0 && out[1] == 5);
    k = pick(f, 16, DEG_ARRAY_DECODE_HYBRID, 0, -1, 0, out);
    cr_assert_eq(k, 0);
}

Test(anchor_rules, count_rule)
{
    float lg[DG_COUNT_MAX + 1];
    for (int c = 0; c <= DG_COUNT_MAX; c++) lg[c] = 0;
    lg[3] = 5;
    cr_assert_eq(dg_anchor_count_n(lg, 1.0, 0, -1, 0), 3);
    cr_assert_eq(dg_anchor_count_n(lg, 1.0, 4, -1, 0), 4, "first maximum of the masked range");
    cr_assert_eq(dg_anchor_count_n(lg, 1.0, 0, 2, 0), 0);
    lg[3] = 0;
    lg[DG_COUNT_MAX] = 5;
    cr_assert_eq(dg_anchor_count_n(lg, 1.0, 0, -1, 70), 70, "saturated: the threshold count");
    cr_assert_eq(dg_anchor_count_n(lg, 1.0, 0, -1, 10), DG_COUNT_MAX);
    lg[DG_COUNT_MAX] = 0;
    lg[10] = 5;
    cr_assert_eq(dg_anchor_count_n(lg, 1.0, 0, 10, 12), 10, "saturated at maxItems, capped");
    cr_assert_eq(dg_anchor_count_n(lg, 1.0, 70, -1, 0), 70);
}

/* ---- fill ----------------------------------------------------------------- */

static char dir_buf[256];

static deg_ckpt *make_ckpt(const char *tiny, uint64_t seed, const char *mode, long min_tokens)
{
    char model[512];
    snprintf(model, sizeof model, "%s/%s", GOLDENS, tiny);
    snprintf(dir_buf, sizeof dir_buf, "%s/anchor-test-%d-%s-%s-%ld", DEG_BUILD_ROOT,
             (int)getpid(), tiny, mode, min_tokens);
    return tu_random_ckpt(model, seed, dir_buf, mode, min_tokens);
}

/* Anchor head = the constant b (q = k = u = 0): flat logits; the count head
 * says n (count_w = 0, count_b one-hot); the anchored-extract bias pulls
 * start and end onto the anchor token (bucket of d = 0, inside). */
static void craft(deg_ckpt *k, float b, int n)
{
    const dg_heads *h = &k->h;
    size_t E = (size_t)h->E;
    memset((float *)h->anchor_q, 0, DG_HEAD_DIM * E * sizeof(float));
    memset((float *)h->anchor_k, 0, DG_HEAD_DIM * E * sizeof(float));
    memset((float *)h->anchor_u, 0, E * sizeof(float));
    ((float *)h->anchor_b)[0] = b;
    memset((float *)h->count_w, 0, (DG_COUNT_MAX + 1) * E * sizeof(float));
    for (int c = 0; c <= DG_COUNT_MAX; c++) ((float *)h->count_b)[c] = c == n ? 10.0f : 0.0f;
    float *B = (float *)h->anchor_bias;
    for (int w = 0; w < 2; w++) B[(w * 2 + 1) * DG_ANCHOR_BUCKETS + dg_anchor_bucket(0)] = 60.0f;
    ((float *)h->ext_null_b)[0] = -60.0f;
}

static const char *CTX =
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
    "sigma tau upsilon phi chi psi omega, contact ann@example.com or bob@example.org today.";

/* code point (= byte, ASCII) start of each context token; returns the count */
static size_t token_starts(deg_ckpt *k, size_t *starts, size_t cap)
{
    const dg_tokenizer *tk = dg_model_tokenizer(deg_ckpt_model(k));
    int32_t ids[512];
    size_t n = 0;
    cr_assert_eq(dg_tokenizer_encode(tk, CTX, strlen(CTX), 0, ids, 512, &n), DEG_OK);
    size_t b = 0;
    for (size_t i = 0; i < n && i < cap; i++) {
        size_t len = 0;
        dg_tokenizer_token_bytes(tk, ids[i], &len);
        starts[i] = b;
        b += len;
    }
    cr_assert_eq(b, strlen(CTX));
    return n;
}

static json_t *fill_req(deg_ckpt *k, const char *schema, const char *options, deg_status want,
                        char **errs_out)
{
    json_t *r = json_pack("{s:s, s:o}", "context", CTX, "schema", json_loads(schema, 0, NULL));
    if (options) json_object_set_new(r, "options", json_loads(options, 0, NULL));
    char *req = json_dumps(r, JSON_PRESERVE_ORDER);
    json_decref(r);
    char *resp = NULL, *errs = NULL;
    deg_status s = deg_fill(k, req, strlen(req), &resp, &errs);
    cr_assert_eq(s, want, "fill: %s (%s) errors=%s", deg_errmsg(), deg_status_name(s),
                 errs ? errs : "-");
    json_t *v = resp ? json_loads(resp, 0, NULL) : NULL;
    if (want == DEG_OK) {
        cr_assert(v, "response JSON");
        /* the value validates against its schema */
        char *vt = json_dumps(json_object_get(v, "value"), JSON_ENCODE_ANY);
        char *verr = NULL;
        size_t ne = 99;
        cr_assert_eq(deg_validate(schema, vt, &ne, &verr), DEG_OK, "%s", deg_errmsg());
        cr_assert_eq(ne, 0, "valid: %s", verr ? verr : "");
        deg_free(verr);
        free(vt);
    }
    if (errs_out) *errs_out = errs;
    else deg_free(errs);
    deg_free(resp);
    free(req);
    return v;
}

static json_t *meta_of(json_t *resp, const char *ptr)
{
    return json_object_get(json_object_get(resp, "meta"), ptr);
}

static void assert_anchors(json_t *resp, const char *ptr, const size_t *want, size_t n)
{
    json_t *m = meta_of(resp, ptr);
    cr_assert(m, "meta %s", ptr);
    cr_assert_str_eq(json_string_value(json_object_get(m, "array_mode")), "anchor");
    json_t *a = json_object_get(m, "anchors");
    char *t = json_dumps(a, JSON_COMPACT);
    cr_assert_eq(json_array_size(a), n, "%s anchors %s, want %zu", ptr, t, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq((size_t)json_integer_value(json_array_get(a, i)), want[i], "%s anchors %s",
                     ptr, t);
    free(t);
}

static const char *ROWS =
    "{\"type\": \"object\", \"properties\": {\"rows\": {\"type\": \"array\", \"minItems\": 3, "
    "\"items\": {\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, "
    "\"kind\": {\"enum\": [\"x\", \"y\"]}}, \"required\": [\"name\", \"kind\"]}}}, "
    "\"required\": [\"rows\"]}";

Test(anchor_fill, crafted_rules_and_bias, .timeout = 300)
{
    for (size_t mi = 0; mi < 2; mi++) {
        deg_ckpt *k = make_ckpt(TINY[mi], 3, "anchor", 0);
        size_t st[512];
        size_t nt = token_starts(k, st, 512);
        cr_assert(nt > 20);
        /* threshold, nothing marked: minItems 3 -> tokens 0, 2, 4 */
        craft(k, -1.0f, 3);
        json_t *r = fill_req(k, ROWS, "{\"array_decode\": \"threshold\"}", DEG_OK, NULL);
        size_t w[] = {st[0], st[2], st[4]};
        assert_anchors(r, "/rows", w, 3);
        /* the anchored-extract bias puts each name on its own anchor token */
        for (int i = 0; i < 3; i++) {
            char p[64];
            snprintf(p, sizeof p, "/rows/%d/name", i);
            json_t *sp = json_object_get(meta_of(r, p), "span");
            size_t tok = (size_t)(2 * i);
            cr_assert(json_is_array(sp), "%s span", p);
            size_t s = (size_t)json_integer_value(json_array_get(sp, 0));
            size_t e = (size_t)json_integer_value(json_array_get(sp, 1));
            cr_assert(s >= st[tok] && e <= st[tok + 1] && s < e, "%s span [%zu, %zu) in token "
                      "[%zu, %zu)", p, s, e, st[tok], st[tok + 1]);
        }
        json_decref(r);
        /* count_peaks: the count says 3 -> flat logits, radius 4 -> tokens 0, 5, 10 */
        r = fill_req(k, ROWS, "{\"array_decode\": \"count_peaks\"}", DEG_OK, NULL);
        size_t w2[] = {st[0], st[5], st[10]};
        assert_anchors(r, "/rows", w2, 3);
        json_decref(r);
        /* hybrid, nothing marked, count 4 -> peaks; maxItems via options.max_items */
        craft(k, -1.0f, 4);
        r = fill_req(k, ROWS, "{\"array_decode\": \"hybrid\", \"max_items\": 4}", DEG_OK, NULL);
        size_t w3[] = {st[0], st[5], st[10], st[15]};
        assert_anchors(r, "/rows", w3, 4);
        json_decref(r);
        /* every token marked: one run, its first maximum (hybrid -> threshold) */
        craft(k, 1.0f, 4);
        const char *one =
            "{\"type\": \"object\", \"properties\": {\"rows\": {\"type\": \"array\", "
            "\"items\": {\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}}, "
            "\"required\": [\"name\"]}}}, \"required\": [\"rows\"]}";
        r = fill_req(k, one, "{\"array_decode\": \"hybrid\"}", DEG_OK, NULL);
        size_t w4[] = {st[0]};
        assert_anchors(r, "/rows", w4, 1);
        json_decref(r);
        deg_ckpt_free(k);
    }
}

Test(anchor_fill, nested_regions_drops_and_min_items, .timeout = 300)
{
    for (size_t mi = 0; mi < 2; mi++) {
        deg_ckpt *k = make_ckpt(TINY[mi], 4, "anchor", 0);
        size_t st[512];
        size_t nt = token_starts(k, st, 512);
        craft(k, -1.0f, 0);
        char schema[1024];
        const char *fmt =
            "{\"type\": \"object\", \"properties\": {\"rows\": {\"type\": \"array\", "
            "\"minItems\": 2, \"items\": {\"type\": \"object\", \"properties\": {"
            "\"name\": {\"type\": \"string\"}, \"sub\": {\"type\": \"array\", \"minItems\": %d, "
            "\"items\": {\"type\": \"object\", \"properties\": {\"v\": {\"type\": \"string\"}}, "
            "\"required\": [\"v\"]}}, \"tags\": {\"type\": \"array\", \"maxItems\": 2, "
            "\"items\": {\"enum\": [\"a\", \"b\"]}}}, \"required\": [\"name\", \"sub\", \"tags\"]}}}, "
            "\"required\": [\"rows\"]}";
        /* rows at tokens 0 and 2: regions [0, 2) and [2, end); each sub
         * anchors inside its parent's region */
        snprintf(schema, sizeof schema, fmt, 1);
        json_t *r = fill_req(k, schema, "{\"array_decode\": \"threshold\"}", DEG_OK, NULL);
        size_t a0[] = {st[0], st[2]}, s0[] = {st[0]}, s1[] = {st[2]};
        assert_anchors(r, "/rows", a0, 2);
        assert_anchors(r, "/rows/0/sub", s0, 1);
        assert_anchors(r, "/rows/1/sub", s1, 1);
        /* an index-addressed array (no extract leaf) inside an anchored item */
        json_t *tm = meta_of(r, "/rows/0/tags");
        cr_assert(tm && !json_object_get(tm, "array_mode"), "tags by index");
        json_decref(r);
        /* count_peaks, count 2: rows at tokens 0 and 5; sub minItems 6 does
         * not fit region [0, 5), so rows/0 cannot be represented and is
         * dropped; rows/1 (region [5, end)) keeps 6 peaks */
        craft(k, -1.0f, 2);
        snprintf(schema, sizeof schema, fmt, 6);
        char *p = strstr(schema, "\"minItems\": 2");
        memcpy(p, "\"minItems\": 1", 13);
        r = fill_req(k, schema, "{\"array_decode\": \"count_peaks\"}", DEG_OK, NULL);
        json_t *rm = meta_of(r, "/rows");
        cr_assert_eq(json_integer_value(json_object_get(rm, "items")), 1);
        cr_assert_eq(json_integer_value(json_object_get(rm, "dropped")), 1);
        cr_assert(nt > 31);
        size_t a1[] = {st[5]}, s2[] = {st[5], st[10], st[15], st[20], st[25], st[30]};
        assert_anchors(r, "/rows", a1, 1);
        assert_anchors(r, "/rows/0/sub", s2, 6);
        json_decref(r);
        craft(k, -1.0f, 0);
        /* top-level minItems beyond the region's positions: FillError */
        char big[1024];
        snprintf(big, sizeof big,
                 "{\"type\": \"object\", \"properties\": {\"rows\": {\"type\": \"array\", "
                 "\"minItems\": %zu, \"items\": {\"type\": \"object\", \"properties\": {\"name\": "
                 "{\"type\": \"string\"}}, \"required\": [\"name\"]}}}, \"required\": [\"rows\"]}",
                 nt / 2 + 2);
        char *errs = NULL;
        fill_req(k, big, "{\"array_decode\": \"threshold\"}", DEG_ERR_FILL, &errs);
        cr_assert(errs && strstr(errs, "minItems") && strstr(errs, "positions"), "%s", errs);
        deg_free(errs);
        /* items whose required email has no valid value are dropped */
        craft(k, 1.0f, 0);
        const char *em = "{\"type\": \"object\", \"properties\": {\"rows\": {\"type\": \"array\", "
                         "\"items\": {\"type\": \"object\", \"properties\": {\"u\": {\"type\": "
                         "\"string\", \"format\": \"uuid\"}}, \"required\": [\"u\"]}}}, "
                         "\"required\": [\"rows\"]}";
        r = fill_req(k, em, "{\"array_decode\": \"threshold\"}", DEG_OK, NULL);
        rm = meta_of(r, "/rows");
        cr_assert_eq(json_integer_value(json_object_get(rm, "items")), 0);
        cr_assert_eq(json_integer_value(json_object_get(rm, "dropped")), 1);
        cr_assert_eq(json_array_size(json_object_get(rm, "anchors")), 0);
        json_decref(r);
        const char *em1 = "{\"type\": \"object\", \"properties\": {\"rows\": {\"type\": \"array\", "
                          "\"minItems\": 1, \"items\": {\"type\": \"object\", \"properties\": {\"u\": "
                          "{\"type\": \"string\", \"format\": \"uuid\"}}, \"required\": [\"u\"]}}}, "
                          "\"required\": [\"rows\"]}";
        errs = NULL;
        fill_req(k, em1, "{\"array_decode\": \"threshold\"}", DEG_ERR_FILL, &errs);
        cr_assert(errs && strstr(errs, "only 0 items have their required values"), "%s", errs);
        deg_free(errs);
        deg_ckpt_free(k);
    }
}

/* Below anchor_min_tokens an anchor-mode checkpoint fills exactly as index mode. */
Test(anchor_fill, routing_by_length, .timeout = 300)
{
    deg_ckpt *ki = make_ckpt("tiny-llama", 9, "index", 0);
    json_t *ri = fill_req(ki, ROWS, NULL, DEG_OK, NULL);
    deg_ckpt_free(ki);
    deg_ckpt *ka = make_ckpt("tiny-llama", 9, "anchor", 1000000);
    json_t *ra = fill_req(ka, ROWS, NULL, DEG_OK, NULL);
    deg_ckpt_free(ka);
    json_object_del(ri, "timing");
    json_object_del(ra, "timing");
    char *ti = json_dumps(ri, JSON_SORT_KEYS), *ta = json_dumps(ra, JSON_SORT_KEYS);
    cr_assert_str_eq(ti, ta, "index-routed anchor checkpoint = index checkpoint");
    free(ti);
    free(ta);
    cr_assert(!json_object_get(meta_of(ra, "/rows"), "array_mode"));
    json_decref(ri);
    json_decref(ra);
    deg_ckpt *kz = make_ckpt("tiny-llama", 9, "anchor", 0);
    json_t *rz = fill_req(kz, ROWS, NULL, DEG_OK, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(meta_of(rz, "/rows"), "array_mode")),
                     "anchor");
    json_decref(rz);
    deg_ckpt_free(kz);
}

/* compact text of every meta entry under prefix, values included */
static char *under(json_t *resp, const char *prefix)
{
    json_t *o = json_object();
    const char *key;
    json_t *m;
    json_object_foreach(json_object_get(resp, "meta"), key, m)
        if (strncmp(key, prefix, strlen(prefix)) == 0) json_object_set(o, key, m);
    json_object_set(o, "value", json_object_get(json_object_get(resp, "value"), prefix + 1));
    char *t = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(o);
    return t;
}

static const char *ARR =
    "\"rows\": {\"type\": \"array\", \"maxItems\": 5, \"items\": {\"type\": \"object\", "
    "\"properties\": {\"name\": {\"type\": \"string\"}, \"mail\": {\"type\": [\"string\", "
    "\"null\"], \"format\": \"email\"}, \"kind\": {\"enum\": [\"x\", \"y\"]}, \"sub\": {\"type\": "
    "\"array\", \"maxItems\": 2, \"items\": {\"type\": \"object\", \"properties\": {\"v\": "
    "{\"type\": [\"string\", \"null\"]}}, \"required\": [\"v\"]}}}, \"required\": [\"name\", \"kind\"]}}";

Test(anchor_fill, determinism_bitwise, .timeout = 600)
{
    for (size_t mi = 0; mi < 2; mi++) {
        deg_ckpt *k = make_ckpt(TINY[mi], 11, "anchor", 0);
        /* a livelier anchor head than the -6 start, so items exist */
        ((float *)k->h.anchor_b)[0] = 0.0f;
        char alone[2048], bigger[2048], other[1024];
        snprintf(alone, sizeof alone, "{\"type\": \"object\", \"properties\": {%s}, "
                 "\"required\": [\"rows\"]}", ARR);
        snprintf(bigger, sizeof bigger, "{\"type\": \"object\", \"properties\": {"
                 "\"flag\": {\"type\": \"boolean\"}, \"when\": {\"type\": [\"string\", \"null\"], "
                 "\"format\": \"date\"}, %s, \"dept\": {\"enum\": [\"a\", \"b\"]}}, "
                 "\"required\": [\"dept\", \"rows\", \"flag\"]}", ARR);
        snprintf(other, sizeof other, "{\"type\": \"object\", \"properties\": {\"n\": "
                 "{\"type\": [\"number\", \"null\"]}, \"list\": {\"type\": \"array\", \"items\": "
                 "{\"type\": \"object\", \"properties\": {\"w\": {\"type\": \"string\"}}, "
                 "\"required\": [\"w\"]}}}, \"required\": [\"list\"]}");
        const char *modes[] = {"threshold", "count_peaks", "hybrid"};
        for (int md = 0; md < 3; md++) {
            char opt[64];
            snprintf(opt, sizeof opt, "{\"array_decode\": \"%s\"}", modes[md]);
            json_t *ra = fill_req(k, alone, opt, DEG_OK, NULL);
            char *ta = under(ra, "/rows");
            json_t *m = meta_of(ra, "/rows");
            cr_assert(json_object_get(m, "raw"), "debug raw of the anchor logits");
            json_t *rb = fill_req(k, bigger, opt, DEG_OK, NULL);
            char *tb = under(rb, "/rows");
            cr_assert_str_eq(ta, tb, "%s: alone vs inside a bigger, reordered schema", modes[md]);
            json_t *rr = fill_req(k, alone, opt, DEG_OK, NULL);
            char *tr = under(rr, "/rows");
            cr_assert_str_eq(ta, tr, "repeat");
            /* fill_many with another request's rows in the same batches */
            json_t *q1 = json_pack("{s:s, s:o, s:o}", "context", CTX, "schema",
                                   json_loads(other, 0, NULL), "options", json_loads(opt, 0, NULL));
            json_t *q2 = json_pack("{s:s, s:o, s:o}", "context", CTX, "schema",
                                   json_loads(bigger, 0, NULL), "options", json_loads(opt, 0, NULL));
            char *reqs[2] = {json_dumps(q1, 0), json_dumps(q2, 0)};
            size_t lens[2] = {strlen(reqs[0]), strlen(reqs[1])};
            char *resps[2] = {0};
            deg_status sts[2];
            cr_assert_eq(deg_fill_many(k, 2, (const char *const *)reqs, lens, resps, NULL, sts),
                         DEG_OK, "%s", deg_errmsg());
            json_t *rm = json_loads(resps[1], 0, NULL);
            char *tm = under(rm, "/rows");
            cr_assert_str_eq(ta, tm, "%s: fill_many", modes[md]);
            for (int i = 0; i < 2; i++) {
                free(reqs[i]);
                deg_free(resps[i]);
            }
            json_decref(q1);
            json_decref(q2);
            json_decref(rm);
            free(tm);
            free(ta);
            free(tb);
            free(tr);
            json_decref(ra);
            json_decref(rb);
            json_decref(rr);
        }
        deg_ckpt_free(k);
    }
}
