/* Anchor-mode training features and losses (deg.h "Training",
 * deg_features_extract_anchored; §12.4 anchor / anchor_count, §12.6) on the
 * tiny random llama: with deg_fill's own anchors as the gold (and the gold
 * items in reverse document order), the traced anchor, anchored count and
 * anchored item forks give bitwise the raw head outputs deg_fill digests
 * (meta "raw"); left-out instances are counted; the anchor losses' gradient
 * through deg_train_loss_grad matches finite differences and is bitwise
 * across thread counts. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deg.h"
#include "ckpt_fixture.h"
#include "deg/fill.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static char dir_buf[256];

static deg_ckpt *make_ckpt(uint64_t seed, const char *mode)
{
    snprintf(dir_buf, sizeof dir_buf, "%s/train-anchor-test-%d-%s", DEG_BUILD_ROOT,
             (int)getpid(), mode);
    return tu_random_ckpt(GOLDENS "/tiny-llama", seed, dir_buf, mode, -1);
}

static const char *CTX =
    "Orders: ACME Corp ordered 3 red chairs on 2024-05-01 and 2 lamps; Globex ordered one desk "
    "and 4 pens on 2024-06-02. Contact: ann@example.com, bob@example.org. Priority high.";

/* rows: anchored (extract leaves), each with a nested anchored "sub" and an
 * index-addressed "tags" (no extract leaf) */
static const char *SCHEMA =
    "{\"type\": \"object\", \"properties\": {"
    "\"priority\": {\"enum\": [\"low\", \"high\"]},"
    "\"rows\": {\"type\": \"array\", \"minItems\": 2, \"items\": {\"type\": \"object\", "
    "\"properties\": {\"name\": {\"type\": \"string\"}, \"kind\": {\"enum\": [\"x\", \"y\"]}, "
    "\"n\": {\"type\": [\"integer\", \"null\"]}, "
    "\"sub\": {\"type\": \"array\", \"minItems\": 1, \"items\": {\"type\": \"object\", "
    "\"properties\": {\"v\": {\"type\": \"string\"}}}}, "
    "\"tags\": {\"type\": \"array\", \"maxItems\": 3, \"items\": {\"enum\": [\"a\", \"b\"]}}}}}}}";

static char *request(void)
{
    json_t *r = json_pack("{s:s, s:o}", "context", CTX, "schema", json_loads(SCHEMA, 0, NULL));
    char *t = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    return t;
}

static void sha_hex2(const float *a, size_t na, const float *b, size_t nb, char out[65])
{
    struct sha256_ctx c;
    uint8_t d[32];
    sha256_init(&c);
    sha256_update(&c, na * sizeof(float), (const uint8_t *)a);
    if (b) sha256_update(&c, nb * sizeof(float), (const uint8_t *)b);
    sha256_digest(&c, 32, d);
    for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static long find(const deg_features *f, const char *ptr, const char *mode)
{
    for (size_t i = 0; i < f->n_forks; i++)
        if (strcmp(f->forks[i].pointer, ptr) == 0 && (!mode || strcmp(f->forks[i].mode, mode) == 0))
            return (long)i;
    return -1;
}

static json_t *meta_of(json_t *resp, const char *ptr)
{
    return json_object_get(json_object_get(resp, "meta"), ptr);
}

/* gold value and anchors from deg_fill's response, gold items reversed */
static void gold_from_fill(json_t *resp, json_t **gold, json_t **anchors, size_t *n_rows)
{
    json_t *ra = json_object_get(meta_of(resp, "/rows"), "anchors");
    size_t n = json_array_size(ra);
    *n_rows = n;
    json_t *rows = json_array(), *an = json_object(), *st = json_array();
    for (size_t g = 0; g < n; g++) {
        size_t i = n - 1 - g; /* fill item i is gold item g */
        json_array_append(st, json_array_get(ra, i));
        char p[64];
        snprintf(p, sizeof p, "/rows/%zu/sub", i);
        json_t *sa = json_object_get(meta_of(resp, p), "anchors");
        cr_assert(json_array_size(sa) >= 1, "%s anchors", p);
        json_t *sub = json_array();
        for (size_t s = 0; s < json_array_size(sa); s++)
            json_array_append_new(sub, json_pack("{s:s}", "v", "x"));
        json_t *tags = json_array();
        snprintf(p, sizeof p, "/rows/%zu/tags", i);
        json_int_t nt = json_integer_value(json_object_get(meta_of(resp, p), "items"));
        for (json_int_t t = 0; t < nt; t++) json_array_append_new(tags, json_string("a"));
        json_array_append_new(rows, json_pack("{s:s, s:s, s:o, s:o}", "name", "x", "kind", "x",
                                              "sub", sub, "tags", tags));
        snprintf(p, sizeof p, "/rows/%zu/sub", g);
        json_object_set_new(an, p, json_pack("{s:O, s:[i, i]}", "starts", sa, "region", 0, 0));
    }
    json_object_set_new(an, "/rows", json_pack("{s:o}", "starts", st));
    *gold = json_pack("{s:s, s:o}", "priority", "low", "rows", rows);
    *anchors = an;
}

static deg_features *extract_flags(deg_ckpt *k, json_t *gold, json_t *anchors, unsigned flags,
                                   char **errs)
{
    char *req = request();
    char *g = json_dumps(gold, JSON_COMPACT), *a = json_dumps(anchors, JSON_COMPACT);
    deg_features *f = NULL;
    deg_status s = deg_features_extract_anchored(k, req, strlen(req), g, strlen(g), a, strlen(a),
                                                 0, flags, &f, errs);
    cr_assert_eq(s, DEG_OK, "%s", deg_errmsg());
    free(req);
    free(g);
    free(a);
    return f;
}

static deg_features *extract_anchored(deg_ckpt *k, json_t *gold, json_t *anchors, char **errs)
{
    return extract_flags(k, gold, anchors, 0, errs);
}

/* raw digest of a traced leaf fork (as fill's dg_fill_decode_* digest it) */
static void leaf_raw(deg_ckpt *k, const deg_features *f, size_t i, char hex[65])
{
    const deg_feature_fork *fk = &f->forks[i];
    const deg_feature_anchor *an = &f->anchor[i];
    deg_train_example ex = {0};
    int E = f->n_embd;
    ex.answer = fk->hidden + (size_t)(fk->n_rows - 1) * E;
    static float lg[2 * 1024];
    size_t n = 0;
    if (!strcmp(fk->mode, "decide.choice")) {
        ex.kind = DEG_HEAD_CHOICE;
        ex.rows = fk->hidden;
        ex.n_rows = (size_t)fk->n_rows - 1;
    } else {
        cr_assert(!strncmp(fk->mode, "extract.", 8), "%s", fk->mode);
        ex.kind = an->anchor >= 0 ? DEG_HEAD_EXTRACT_ANCHORED : DEG_HEAD_EXTRACT;
        ex.rows = f->ctx_hidden;
        ex.n_rows = f->n_ctx;
        ex.lo = (int32_t)an->anchor;
        ex.hi = (int32_t)an->rend;
    }
    cr_assert_eq(deg_train_logits(k, &ex, lg, sizeof lg / sizeof lg[0], &n), DEG_OK, "%s",
                 deg_errmsg());
    sha_hex2(lg, n, NULL, 0, hex);
}

Test(train_anchor, features_match_fill_bitwise, .timeout = 300)
{
    deg_ckpt *k = make_ckpt(7, "anchor");
    char *req = request();
    char *resp = NULL, *errs = NULL;
    cr_assert_eq(deg_fill(k, req, strlen(req), &resp, &errs), DEG_OK, "%s %s", deg_errmsg(),
                 errs ? errs : "");
    json_t *r = json_loads(resp, 0, NULL);
    cr_assert_null(json_object_get(meta_of(r, "/rows"), "dropped"));
    json_t *gold, *anchors;
    size_t n;
    gold_from_fill(r, &gold, &anchors, &n);
    cr_assert(n >= 2);
    deg_features *f = extract_anchored(k, gold, anchors, &errs);
    cr_assert(f->anchor);
    cr_assert_eq(f->n_anchor_arrays, 1 + n);
    cr_assert_eq(f->n_anchor_skipped + f->n_anchor_shared, 0);
    const int E = f->n_embd;
    /* the anchor fork + its count fork: the fill's anchor (+ count) logits digest */
    long ia = find(f, "/rows", "anchor"), ic = find(f, "/rows", "anchor_count");
    cr_assert(ia >= 0 && ic >= 0);
    const deg_feature_anchor *an = &f->anchor[ia];
    cr_assert_eq(an->r0, 0);
    cr_assert_eq(an->r1, (int64_t)f->n_ctx);
    cr_assert_eq(an->n_starts, n);
    cr_assert_eq(f->forks[ia].count_gold, (int32_t)n);
    cr_assert_eq(f->forks[ic].count_lo, 2);
    cr_assert_eq(f->forks[ic].count_hi, 64);
    cr_assert_eq(f->forks[ic].count_gold, (int32_t)n);
    for (size_t i = 0; i < n; i++) {
        size_t t = (size_t)an->starts[i];
        cr_assert_eq(f->tok_cp[2 * t],
                     (size_t)json_integer_value(json_array_get(
                         json_object_get(meta_of(r, "/rows"), "anchors"), i)),
                     "anchor %zu: the fill's token", i);
        if (i) cr_assert(an->starts[i] > an->starts[i - 1], "ascending");
    }
    size_t nr = (size_t)(an->r1 - an->r0);
    float *alog = malloc(nr * sizeof *alog), clog[DG_COUNT_MAX + 1];
    size_t got = 0;
    deg_train_example ex = {.kind = DEG_HEAD_ANCHOR, .answer = f->forks[ia].hidden,
                            .rows = f->ctx_hidden + (size_t)an->r0 * E, .n_rows = nr};
    cr_assert_eq(deg_train_logits(k, &ex, alog, nr, &got), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(got, nr);
    ex = (deg_train_example){.kind = DEG_HEAD_ANCHOR_COUNT, .answer = f->forks[ic].hidden,
                             .lo = 0, .hi = DG_COUNT_MAX};
    cr_assert_eq(deg_train_logits(k, &ex, clog, DG_COUNT_MAX + 1, &got), DEG_OK);
    char hex[65];
    sha_hex2(alog, nr, clog, DG_COUNT_MAX + 1, hex);
    cr_assert_str_eq(hex, json_string_value(json_object_get(meta_of(r, "/rows"), "raw")),
                     "anchor fork: the fill's anchor + count logits");
    free(alog);
    /* every item leaf (gold item g = fill item n-1-g) and each nested sub */
    size_t leaves = 0, subs = 0;
    for (size_t g = 0; g < n; g++) {
        const char *names[] = {"name", "kind", "n"};
        for (int q = 0; q < 3; q++) {
            char pg[64], pf[64];
            snprintf(pg, sizeof pg, "/rows/%zu/%s", g, names[q]);
            snprintf(pf, sizeof pf, "/rows/%zu/%s", n - 1 - g, names[q]);
            long i = find(f, pg, NULL);
            cr_assert(i >= 0, "fork %s", pg);
            cr_assert(f->anchor[i].anchor >= 0 && f->anchor[i].rend > f->anchor[i].anchor);
            leaf_raw(k, f, (size_t)i, hex);
            const char *raw = json_string_value(json_object_get(meta_of(r, pf), "raw"));
            cr_assert(raw, "raw of %s", pf);
            cr_assert_str_eq(hex, raw, "%s (fill %s): the runtime's raw head outputs", pg, pf);
            leaves++;
        }
        char ps[64], pfs[64];
        snprintf(ps, sizeof ps, "/rows/%zu/sub", g);
        snprintf(pfs, sizeof pfs, "/rows/%zu/sub", n - 1 - g);
        long is = find(f, ps, "anchor");
        cr_assert(is >= 0, "anchor fork %s", ps);
        const deg_feature_anchor *sa = &f->anchor[is];
        /* the nested region is the parent item's [anchor, next anchor) */
        cr_assert(sa->r0 >= an->r0 && sa->r1 <= an->r1 && sa->r0 < sa->r1);
        size_t ns = (size_t)(sa->r1 - sa->r0);
        alog = malloc(ns * sizeof *alog);
        long isc = find(f, ps, "anchor_count");
        cr_assert(isc >= 0);
        ex = (deg_train_example){.kind = DEG_HEAD_ANCHOR, .answer = f->forks[is].hidden,
                                 .rows = f->ctx_hidden + (size_t)sa->r0 * E, .n_rows = ns};
        cr_assert_eq(deg_train_logits(k, &ex, alog, ns, &got), DEG_OK);
        ex = (deg_train_example){.kind = DEG_HEAD_ANCHOR_COUNT, .answer = f->forks[isc].hidden,
                                 .lo = 0, .hi = DG_COUNT_MAX};
        cr_assert_eq(deg_train_logits(k, &ex, clog, DG_COUNT_MAX + 1, &got), DEG_OK);
        sha_hex2(alog, ns, clog, DG_COUNT_MAX + 1, hex);
        cr_assert_str_eq(hex, json_string_value(json_object_get(meta_of(r, pfs), "raw")),
                         "%s: the fill's anchor + count logits", ps);
        free(alog);
        for (size_t s = 0; s < sa->n_starts; s++) {
            char pv[128], pfv[128];
            snprintf(pv, sizeof pv, "%s/%zu/v", ps, s);
            snprintf(pfv, sizeof pfv, "%s/%zu/v", pfs, s);
            long i = find(f, pv, NULL);
            cr_assert(i >= 0, "fork %s", pv);
            /* the innermost anchored item is the sub item */
            cr_assert_eq(f->anchor[i].anchor, sa->starts[s]);
            leaf_raw(k, f, (size_t)i, hex);
            cr_assert_str_eq(hex, json_string_value(json_object_get(meta_of(r, pfv), "raw")),
                             "%s", pv);
            subs++;
        }
        /* index-addressed tags inside an anchored item: a count fork, no anchor */
        char pt[64];
        snprintf(pt, sizeof pt, "/rows/%zu/tags", g);
        long it = find(f, pt, "count");
        cr_assert(it >= 0 && find(f, pt, "anchor") < 0, "%s by index", pt);
        snprintf(pfs, sizeof pfs, "/rows/%zu/tags", n - 1 - g);
        cr_assert_eq(f->forks[it].count_gold,
                     (int32_t)json_integer_value(json_object_get(meta_of(r, pfs), "items")),
                     "%s: its gold item's count", pt);
    }
    cr_assert(leaves == 3 * n && subs >= n);
    /* top-level leaves are as in an index trace */
    long ip = find(f, "/priority", "decide.choice");
    cr_assert(ip >= 0 && f->anchor[ip].anchor == -1 && f->anchor[ip].r0 == -1);
    leaf_raw(k, f, (size_t)ip, hex);
    cr_assert_str_eq(hex, json_string_value(json_object_get(meta_of(r, "/priority"), "raw")));
    /* DEG_FEATURES_ANCHORED_ONLY: the same forks minus the top-level leaf, bitwise */
    deg_features *o = extract_flags(k, gold, anchors, DEG_FEATURES_ANCHORED_ONLY, NULL);
    cr_assert_eq(o->n_forks, f->n_forks - 1, "%zu of %zu", o->n_forks, f->n_forks);
    cr_assert(find(o, "/priority", NULL) < 0);
    for (size_t i = 0; i < o->n_forks; i++) {
        long j = find(f, o->forks[i].pointer, o->forks[i].mode);
        cr_assert(j >= 0 && f->forks[j].n_rows == o->forks[i].n_rows, "%s", o->forks[i].pointer);
        cr_assert_eq(memcmp(f->forks[j].hidden, o->forks[i].hidden,
                            (size_t)o->forks[i].n_rows * E * sizeof(float)), 0);
        cr_assert_eq(memcmp(&f->anchor[j], &o->anchor[i], 4 * sizeof(int64_t)), 0);
    }
    deg_features_free(o);
    /* an anchor-mode checkpoint still gives index traces (documents below
     * anchor_min_tokens): the gold count, ITEM i forks, no anchor facts */
    deg_features *x = NULL;
    char *gt = json_dumps(gold, JSON_COMPACT);
    cr_assert_eq(deg_features_extract(k, req, strlen(req), gt, strlen(gt), 0, 0, &x, NULL), DEG_OK,
                 "%s", deg_errmsg());
    long ix = find(x, "/rows", "count");
    cr_assert(ix >= 0 && x->forks[ix].count_gold == (int32_t)n && !x->anchor);
    cr_assert(find(x, "/rows", "anchor") < 0 && find(x, "/rows/1/name", NULL) >= 0);
    free(gt);
    deg_features_free(x);
    deg_features_free(f);
    json_decref(gold);
    json_decref(anchors);
    json_decref(r);
    deg_free(resp);
    deg_free(errs);
    free(req);
    deg_ckpt_free(k);
}

/* rows at "Orders" (0) and "Corp" (14); /rows/0/sub at "ACME" (8), inside
 * row 0's region; /rows/1/sub empty */
static const char *ANCHORS = "{\"/rows\": {\"starts\": [0, 14]}, \"/rows/0/sub\": {\"starts\": "
                             "[8]}, \"/rows/1/sub\": {\"starts\": []}}";

Test(train_anchor, left_out_instances_and_bad_input, .timeout = 300)
{
    /* an index-mode checkpoint: the anchored trace runs anchor mode anyway */
    deg_ckpt *k = make_ckpt(8, "index");
    json_t *gold = json_loads(
        "{\"rows\": [{\"name\": \"a\", \"sub\": [{\"v\": \"b\"}]}, {\"name\": \"c\", \"sub\": []}]}",
        0, NULL);
    json_t *an = json_loads(ANCHORS, 0, NULL);
    deg_features *f = extract_anchored(k, gold, an, NULL);
    cr_assert_eq(f->n_anchor_arrays, 3);
    long i1 = find(f, "/rows/1/sub", "anchor");
    cr_assert(i1 >= 0 && f->anchor[i1].n_starts == 0, "an empty gold array: the hard negative");
    long i0 = find(f, "/rows/0/sub", "anchor");
    cr_assert(i0 >= 0 && f->anchor[i0].n_starts == 1);
    cr_assert(find(f, "/rows/0/sub/0/v", NULL) >= 0);
    /* two code points of one multi-character token */
    size_t c2 = SIZE_MAX;
    for (size_t t = 0; t < f->n_ctx && c2 == SIZE_MAX; t++)
        if (f->tok_cp[2 * t + 1] - f->tok_cp[2 * t] >= 2) c2 = f->tok_cp[2 * t];
    cr_assert(c2 != SIZE_MAX);
    deg_features_free(f);
    json_object_set_new(an, "/rows", json_pack("{s:[I, I]}", "starts", (json_int_t)c2,
                                               (json_int_t)c2 + 1));
    f = extract_anchored(k, gold, an, NULL);
    cr_assert_eq(f->n_anchor_shared, 1, "shared %zu", f->n_anchor_shared);
    cr_assert_eq(f->n_anchor_arrays, 0);
    cr_assert(find(f, "/rows", "anchor") < 0 && find(f, "/rows", "anchor_count") < 0);
    cr_assert(find(f, "/rows/0/name", NULL) < 0, "a left-out instance has no items");
    deg_features_free(f);
    /* null, a start count that is not the gold's item count, past the context */
    const char *bad[] = {"null", "{\"starts\": [0]}", "{\"starts\": [0, 100000]}"};
    for (int b = 0; b < 3; b++) {
        json_object_set_new(an, "/rows", json_loads(bad[b], JSON_DECODE_ANY, NULL));
        f = extract_anchored(k, gold, an, NULL);
        cr_assert_eq(f->n_anchor_skipped, 1, "%s", bad[b]);
        cr_assert_eq(f->n_anchor_arrays, 0);
        deg_features_free(f);
    }
    json_object_del(an, "/rows");
    f = extract_anchored(k, gold, an, NULL);
    cr_assert_eq(f->n_anchor_skipped, 1, "missing entry");
    deg_features_free(f);
    /* malformed anchors: DEG_ERR_ARG */
    char *req = request();
    const char *g = "{}";
    const char *mal[] = {"[1]", "{\"/rows\": 3}", "{\"/rows\": {\"starts\": [-1]}}",
                         "{\"/rows\": {\"starts\": [1.5]}}", "{oops"};
    for (int m = 0; m < 5; m++) {
        f = NULL;
        cr_assert_eq(deg_features_extract_anchored(k, req, strlen(req), g, 2, mal[m],
                                                   strlen(mal[m]), 0, 0, &f, NULL),
                     DEG_ERR_ARG, "%s", mal[m]);
        cr_assert_null(f);
    }
    cr_assert_eq(deg_features_extract_anchored(k, req, strlen(req), g, 2, NULL, 0, 0, 0, &f,
                                               NULL), DEG_ERR_ARG);
    /* an index trace reports no anchor facts */
    cr_assert_eq(deg_features_extract(k, req, strlen(req), g, 2, 0, 0, &f, NULL), DEG_OK);
    cr_assert_null(f->anchor);
    cr_assert_eq(f->n_anchor_arrays + f->n_anchor_skipped + f->n_anchor_shared, 0);
    deg_features_free(f);
    free(req);
    json_decref(gold);
    json_decref(an);
    deg_ckpt_free(k);
}

/* offset of a head tensor in the flat parameter vector */
#define OFF(k, p) ((size_t)((k)->h.p - (k)->store))

Test(train_anchor, loss_grad_matches_finite_differences, .timeout = 300)
{
    deg_ckpt *k = make_ckpt(11, "index");
    json_t *gold = json_loads(
        "{\"rows\": [{\"name\": \"a\", \"sub\": [{\"v\": \"b\"}]}, {\"name\": \"c\", \"sub\": []}]}",
        0, NULL);
    json_t *an = json_loads(ANCHORS, 0, NULL);
    deg_features *f = extract_anchored(k, gold, an, NULL);
    const int E = f->n_embd;
    deg_train_example ex[16];
    int32_t pos[16][2];
    size_t n = 0;
    const char *ptrs[] = {"/rows", "/rows/0/sub", "/rows/1/sub"};
    for (int p = 0; p < 3; p++) {
        long i = find(f, ptrs[p], "anchor");
        cr_assert(i >= 0);
        const deg_feature_anchor *a = &f->anchor[i];
        size_t j = n++;
        for (size_t s = 0; s < a->n_starts; s++) pos[j][s] = (int32_t)(a->starts[s] - a->r0);
        ex[j] = (deg_train_example){.kind = DEG_HEAD_ANCHOR, .answer = f->forks[i].hidden,
                                    .rows = f->ctx_hidden + (size_t)a->r0 * E,
                                    .n_rows = (size_t)(a->r1 - a->r0), .pos_start = pos[j],
                                    .n_start = a->n_starts};
        long c = find(f, ptrs[p], "anchor_count");
        cr_assert(c >= 0);
        const deg_feature_fork *cf = &f->forks[c];
        int32_t cnt = cf->count_gold < cf->count_lo ? cf->count_lo : cf->count_gold;
        ex[n++] = (deg_train_example){.kind = DEG_HEAD_ANCHOR_COUNT, .answer = cf->hidden,
                                      .lo = cf->count_lo, .hi = cf->count_hi, .count = cnt};
    }
    const char *lv[] = {"/rows/0/name", "/rows/0/sub/0/v"};
    for (int q = 0; q < 2; q++) {
        long i = find(f, lv[q], NULL);
        cr_assert(i >= 0 && f->anchor[i].anchor >= 0);
        size_t j = n++;
        pos[j][0] = (int32_t)f->anchor[i].anchor + 1;
        pos[j][1] = (int32_t)f->n_ctx; /* a span and the null outcome */
        ex[j] = (deg_train_example){.kind = DEG_HEAD_EXTRACT_ANCHORED,
                                      .answer = f->forks[i].hidden, .rows = f->ctx_hidden,
                                      .n_rows = f->n_ctx, .pos_start = pos[j], .n_start = 2,
                                      .pos_end = pos[j], .n_end = 1,
                                      .lo = (int32_t)f->anchor[i].anchor,
                                      .hi = (int32_t)f->anchor[i].rend};
    }
    /* a plain count example shares the count head with anchor_count */
    ex[n++] = (deg_train_example){.kind = DEG_HEAD_COUNT, .answer = f->forks[0].hidden,
                                  .lo = 0, .hi = 5, .count = 2};
    size_t np = deg_ckpt_n_params(k);
    float *theta = malloc(np * sizeof *theta), *g = malloc(np * sizeof *g),
          *g2 = malloc(np * sizeof *g2);
    double w[DEG_TRAIN_WEIGHTS] = {1, 1, 1, 0.5, 0.25, 2.0, 0.75}, losses[16], tot, tot2;
    cr_assert_eq(deg_ckpt_get_params(k, theta, np), DEG_OK);
    cr_assert_eq(deg_train_loss_grad(k, ex, n, w, g, np, losses, &tot), DEG_OK, "%s",
                 deg_errmsg());
    double check = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(isfinite(losses[i]) && losses[i] > 0, "loss %zu = %g", i, losses[i]);
        int slot = ex[i].kind == DEG_HEAD_EXTRACT_ANCHORED ? DEG_HEAD_EXTRACT : ex[i].kind;
        check += w[slot] * losses[i];
    }
    cr_assert_float_eq(tot, check, 1e-9);
    int prev = deg_set_num_threads(1);
    cr_assert_eq(deg_train_loss_grad(k, ex, n, w, g2, np, NULL, &tot2), DEG_OK);
    deg_set_num_threads(prev);
    cr_assert_eq(memcmp(g, g2, np * sizeof *g), 0, "bitwise across threads");
    /* coordinates in every tensor the anchor losses touch */
    size_t coords[256], nco = 0;
    const size_t D = DG_HEAD_DIM;
    for (size_t j = 0; j < 7; j++) {
        coords[nco++] = OFF(k, anchor_q) + j * 2311 % (D * E);
        coords[nco++] = OFF(k, anchor_k) + j * 1777 % (D * E);
        coords[nco++] = OFF(k, anchor_u) + j * 9 % E;
        coords[nco++] = OFF(k, ext_qs) + j * 1531 % (D * E);
        coords[nco++] = OFF(k, ext_ke) + j * 1201 % (D * E);
        coords[nco++] = OFF(k, count_w) + (size_t)(j % 6) * E + j;
    }
    coords[nco++] = OFF(k, anchor_b);
    coords[nco++] = OFF(k, ext_null_b);
    for (size_t c = 0; c < 6; c++) coords[nco++] = OFF(k, count_b) + c;
    for (size_t b = 0; b < 4 * DG_ANCHOR_BUCKETS; b++)
        if (g[OFF(k, anchor_bias) + b] != 0) coords[nco++] = OFF(k, anchor_bias) + b;
    size_t nonzero = 0;
    for (size_t q = 0; q < nco; q++) {
        size_t c = coords[q];
        float keep = theta[c];
        double eps = 1e-2;
        theta[c] = keep + (float)eps;
        deg_ckpt_set_params(k, theta, np);
        deg_train_loss_grad(k, ex, n, w, g2, np, NULL, &tot2);
        double lp = tot2;
        theta[c] = keep - (float)eps;
        deg_ckpt_set_params(k, theta, np);
        deg_train_loss_grad(k, ex, n, w, g2, np, NULL, &tot2);
        double lm = tot2;
        theta[c] = keep;
        double h = (double)(keep + (float)eps) - (double)(keep - (float)eps);
        double num = (lp - lm) / h;
        cr_assert(fabs(num - g[c]) <= 2e-3 + 2e-2 * fabs(num), "param %zu: numeric %.6g, "
                  "analytic %.6g", c, num, (double)g[c]);
        nonzero += g[c] != 0;
    }
    deg_ckpt_set_params(k, theta, np);
    cr_assert(nonzero > nco / 2 && nco > 50, "checked %zu, nonzero %zu", nco, nonzero);
    /* malformed anchor examples */
    deg_train_example bad = ex[0];
    int32_t far = (int32_t)bad.n_rows;
    bad.pos_start = &far;
    bad.n_start = 1;
    cr_assert_eq(deg_train_loss_grad(k, &bad, 1, w, g2, np, NULL, &tot2), DEG_ERR_ARG);
    bad = ex[4];
    for (size_t i = 0; i < n; i++)
        if (ex[i].kind == DEG_HEAD_EXTRACT_ANCHORED) bad = ex[i];
    bad.hi = bad.lo;
    cr_assert_eq(deg_train_loss_grad(k, &bad, 1, w, g2, np, NULL, &tot2), DEG_ERR_ARG);
    double wn[DEG_TRAIN_WEIGHTS] = {1, 1, 1, 1, 1, NAN, 1};
    cr_assert_eq(deg_train_loss_grad(k, ex, n, wn, g2, np, NULL, &tot2), DEG_ERR_ARG);
    free(theta);
    free(g);
    free(g2);
    deg_features_free(f);
    json_decref(gold);
    json_decref(an);
    deg_ckpt_free(k);
}
