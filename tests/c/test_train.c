/* Training API (deg.h "Training") on the tiny random llama with random heads:
 * traced features give bitwise the head inputs deg_fill uses (the raw-output
 * digests of every top-level field match), teacher-forced counts, option
 * shuffling, the batch loss/gradient against finite differences through the
 * flat parameter vector, determinism across thread counts, save/load round
 * trip (params, temperatures, extra keys), and bad input. */
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

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static char dir_buf[256];

static const char *tmp_dir(const char *name)
{
    snprintf(dir_buf, sizeof dir_buf, "%s/train-test-%d-%s", DEG_BUILD_ROOT, (int)getpid(), name);
    return dir_buf;
}

static deg_ckpt *make_ckpt(uint64_t seed)
{
    return tu_random_ckpt(GOLDENS "/tiny-llama", seed, tmp_dir("init"), NULL, -1);
}

static const char *CONTEXT =
    "Order 4711 from ACME Corp, placed by jane.doe@example.com. Total: $1,234.50. "
    "The customer is angry and wants a refund. Items: red chair (2 units), blue lamp (1 unit).";

static const char *SCHEMA =
    "{\"type\": \"object\", \"properties\": {"
    "\"department\": {\"enum\": [\"billing\", \"shipping\", \"other\", \"sales\"]},"
    "\"urgent\": {\"type\": \"boolean\"},"
    "\"anger\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 4},"
    "\"total\": {\"type\": [\"number\", \"null\"]},"
    "\"email\": {\"type\": [\"string\", \"null\"], \"format\": \"email\"},"
    "\"company\": {\"type\": \"string\"},"
    "\"items\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"properties\": {"
    "  \"name\": {\"type\": \"string\"}, \"units\": {\"type\": \"integer\"}}}}}}";

static const char *GOLD =
    "{\"department\": \"billing\", \"urgent\": true, \"anger\": 3, \"total\": 1234.5,"
    " \"email\": \"jane.doe@example.com\", \"company\": \"ACME Corp\","
    " \"items\": [{\"name\": \"red chair\", \"units\": 2}, {\"name\": \"blue lamp\", \"units\": 1}]}";

static char *request(void)
{
    json_t *r = json_pack("{s:s, s:o}", "context", CONTEXT, "schema", json_loads(SCHEMA, 0, NULL));
    char *t = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    return t;
}

static void sha_hex(const float *x, size_t n, char out[65])
{
    struct sha256_ctx c;
    uint8_t d[32];
    sha256_init(&c);
    sha256_update(&c, n * sizeof(float), (const uint8_t *)x);
    sha256_digest(&c, 32, d);
    for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static const deg_feature_fork *find_fork(const deg_features *f, const char *ptr)
{
    for (size_t i = 0; i < f->n_forks; i++)
        if (strcmp(f->forks[i].pointer, ptr) == 0) return &f->forks[i];
    return NULL;
}

static int kind_of(const char *mode)
{
    if (!strcmp(mode, "decide.choice")) return DEG_HEAD_CHOICE;
    if (!strcmp(mode, "decide.score")) return DEG_HEAD_SCORE;
    if (!strcmp(mode, "decide.noul")) return DEG_HEAD_NOUL;
    if (!strcmp(mode, "count")) return DEG_HEAD_COUNT;
    return DEG_HEAD_EXTRACT;
}

/* The example (no targets) of a fork: the head's inputs. */
static deg_train_example inputs_of(const deg_features *f, const deg_feature_fork *k)
{
    deg_train_example ex = {0};
    ex.kind = kind_of(k->mode);
    int E = f->n_embd;
    ex.answer = k->hidden + (size_t)(k->n_rows - 1) * E;
    if (ex.kind == DEG_HEAD_CHOICE || ex.kind == DEG_HEAD_SCORE) {
        ex.rows = k->hidden;
        ex.n_rows = (size_t)k->n_rows - 1;
    } else if (ex.kind == DEG_HEAD_EXTRACT) {
        ex.rows = f->ctx_hidden;
        ex.n_rows = f->n_ctx;
    } else if (ex.kind == DEG_HEAD_COUNT) {
        ex.lo = k->count_lo;
        ex.hi = k->count_hi;
    }
    return ex;
}

Test(train, features_match_fill_bitwise)
{
    deg_ckpt *k = make_ckpt(5);
    char *req = request();
    char *resp = NULL, *errs = NULL;
    cr_assert_eq(deg_fill(k, req, strlen(req), &resp, &errs), DEG_OK, "%s", deg_errmsg());
    json_t *r = json_loads(resp, 0, NULL);
    deg_features *f = NULL;
    cr_assert_eq(deg_features_extract(k, req, strlen(req), GOLD, strlen(GOLD), 0, 0, &f, &errs),
                 DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(f->n_embd, 64);
    /* round 0: 6 leaves + the items count; round 1: 2 gold items x 2 leaves */
    cr_assert_eq(f->n_forks, 11, "forks %zu", f->n_forks);
    cr_assert(f->n_ctx > 20 && f->n_trunk_tokens > f->n_ctx);
    /* token code point ranges tile the context */
    size_t ncp = strlen(CONTEXT);
    cr_assert_eq(f->tok_cp[0], 0);
    cr_assert_eq(f->tok_cp[2 * f->n_ctx - 1], ncp);
    for (size_t t = 1; t < f->n_ctx; t++) cr_assert_eq(f->tok_cp[2 * t], f->tok_cp[2 * t - 1]);
    const char *top[] = {"/department", "/urgent", "/anger", "/total", "/email", "/company"};
    for (size_t i = 0; i < 6; i++) {
        const deg_feature_fork *fk = find_fork(f, top[i]);
        cr_assert(fk, "fork %s", top[i]);
        deg_train_example ex = inputs_of(f, fk);
        float lg[2 * 512];
        size_t n = 0;
        cr_assert_eq(deg_train_logits(k, &ex, lg, sizeof lg / sizeof lg[0], &n), DEG_OK, "%s",
                     deg_errmsg());
        char hex[65];
        sha_hex(lg, ex.kind == DEG_HEAD_NOUL ? 1 : n, hex); /* fill digests the noul logit only */
        const char *raw = json_string_value(
            json_object_get(json_object_get(json_object_get(r, "meta"), top[i]), "raw"));
        cr_assert(raw, "raw of %s", top[i]);
        cr_assert_str_eq(hex, raw, "%s: features give the runtime's raw head outputs", top[i]);
    }
    const deg_feature_fork *dep = find_fork(f, "/department");
    cr_assert_str_eq(dep->mode, "decide.choice");
    cr_assert_eq(dep->n_rows, 5);
    for (int i = 0; i < 4; i++) cr_assert_eq(dep->order[i], i);
    const deg_feature_fork *items = find_fork(f, "/items");
    cr_assert_str_eq(items->mode, "count");
    cr_assert_eq(items->count_gold, 2);
    cr_assert_eq(items->count_lo, 0);
    cr_assert_eq(items->count_hi, 32);
    cr_assert_eq(items->n_rows, 1);
    cr_assert(find_fork(f, "/items/1/name") && find_fork(f, "/items/1/units"));
    cr_assert_null(find_fork(f, "/items/2/name"));
    cr_assert_str_eq(find_fork(f, "/items/0/units")->mode, "extract.number");
    deg_features_free(f);
    json_decref(r);
    deg_free(resp);
    free(req);
    deg_ckpt_free(k);
}

Test(train, shuffle_and_choice_only)
{
    deg_ckpt *k = make_ckpt(5);
    char *req = request();
    deg_features *a = NULL, *b = NULL, *c = NULL;
    cr_assert_eq(deg_features_extract(k, req, strlen(req), GOLD, strlen(GOLD), 7,
                                      DEG_FEATURES_CHOICE_ONLY, &a, NULL), DEG_OK);
    cr_assert_eq(deg_features_extract(k, req, strlen(req), GOLD, strlen(GOLD), 7,
                                      DEG_FEATURES_CHOICE_ONLY, &b, NULL), DEG_OK);
    cr_assert_eq(a->n_forks, 1);
    cr_assert_str_eq(a->forks[0].pointer, "/department");
    int seen[4] = {0}, moved = 0;
    for (int i = 0; i < 4; i++) {
        seen[a->forks[0].order[i]]++;
        moved += a->forks[0].order[i] != i;
        cr_assert_eq(a->forks[0].order[i], b->forks[0].order[i], "same seed, same order");
    }
    for (int i = 0; i < 4; i++) cr_assert_eq(seen[i], 1, "a permutation");
    /* some seed in 1..8 moves an option (a fixed point for all would be 1/24^8) */
    for (uint64_t s = 1; s <= 8 && !moved; s++) {
        cr_assert_eq(deg_features_extract(k, req, strlen(req), GOLD, strlen(GOLD), s,
                                          DEG_FEATURES_CHOICE_ONLY, &c, NULL), DEG_OK);
        for (int i = 0; i < 4; i++) moved += c->forks[0].order[i] != i;
        deg_features_free(c);
    }
    cr_assert(moved, "shuffling moves options");
    /* shuffled lines give the same hidden rows as the same text would:
     * bitwise equal to the deterministic second run */
    cr_assert_eq(memcmp(a->forks[0].hidden, b->forks[0].hidden, 5 * 64 * sizeof(float)), 0);
    deg_features_free(a);
    deg_features_free(b);
    free(req);
    deg_ckpt_free(k);
}

Test(train, bad_input)
{
    deg_ckpt *k = make_ckpt(5);
    char *req = request();
    deg_features *f = NULL;
    char *errs = NULL;
    cr_assert_eq(deg_features_extract(k, req, strlen(req), "{oops", 5, 0, 0, &f, NULL), DEG_ERR_ARG);
    cr_assert_null(f);
    cr_assert_eq(deg_features_extract(k, req, strlen(req), GOLD, strlen(GOLD), 0, 4, &f, NULL),
                 DEG_ERR_ARG);
    const char *bad = "{\"context\": \"x\", \"schema\": {\"type\": \"object\", \"properties\": "
                      "{\"a\": {\"type\": \"strin\"}}}}";
    deg_status s = deg_features_extract(k, bad, strlen(bad), "{}", 2, 0, 0, &f, &errs);
    cr_assert_eq(s, DEG_ERR_SCHEMA, "%s", deg_status_name(s));
    cr_assert(errs && strstr(errs, "loc"), "errors list: %s", errs ? errs : "-");
    deg_free(errs);
    /* malformed examples */
    float a[64] = {0}, g1[1];
    double t[2] = {0.7, 0.2}, tot;
    deg_train_example ex = {.kind = DEG_HEAD_CHOICE, .answer = a, .rows = a, .n_rows = 1,
                            .target = t};
    size_t np = deg_ckpt_n_params(k);
    float *grad = malloc(np * sizeof *grad);
    double w[DEG_HEAD_KINDS] = {1, 1, 1, 1, 1};
    cr_assert_eq(deg_train_loss_grad(k, &ex, 1, w, grad, np, NULL, &tot), DEG_ERR_ARG);
    cr_assert(strstr(deg_errmsg(), "example 0"), "%s", deg_errmsg());
    ex = (deg_train_example){.kind = DEG_HEAD_COUNT, .answer = a, .lo = 2, .hi = 4, .count = 5};
    cr_assert_eq(deg_train_loss_grad(k, &ex, 1, w, grad, np, NULL, &tot), DEG_ERR_ARG);
    int32_t p = 9;
    ex = (deg_train_example){.kind = DEG_HEAD_EXTRACT, .answer = a, .rows = a, .n_rows = 1,
                             .pos_start = &p, .n_start = 1, .pos_end = &p, .n_end = 1};
    cr_assert_eq(deg_train_loss_grad(k, &ex, 1, w, grad, np, NULL, &tot), DEG_ERR_ARG);
    ex.kind = 9;
    cr_assert_eq(deg_train_loss_grad(k, &ex, 1, w, grad, np, NULL, &tot), DEG_ERR_ARG);
    cr_assert_eq(deg_train_loss_grad(k, &ex, 0, w, g1, 1, NULL, &tot), DEG_ERR_ARG, "n_grad");
    /* set_params refuses NaN and leaves the heads unchanged */
    float *p0 = malloc(np * sizeof *p0), *p1 = malloc(np * sizeof *p1);
    cr_assert_eq(deg_ckpt_get_params(k, p0, np), DEG_OK);
    memcpy(p1, p0, np * sizeof *p1);
    p1[np / 2] = NAN;
    cr_assert_eq(deg_ckpt_set_params(k, p1, np), DEG_ERR_NUMERIC);
    cr_assert_eq(deg_ckpt_get_params(k, p1, np), DEG_OK);
    cr_assert_eq(memcmp(p0, p1, np * sizeof *p0), 0);
    cr_assert_eq(deg_ckpt_set_params(k, p0, np - 1), DEG_ERR_ARG);
    double temps[DEG_HEAD_KINDS] = {1, 1, 0, 1, 1};
    cr_assert_eq(deg_ckpt_set_calibration(k, temps), DEG_ERR_ARG);
    cr_assert_eq(deg_ckpt_save(k, tmp_dir("bad"), "{\"heads\": 1}", 0), DEG_ERR_ARG);
    cr_assert_eq(deg_ckpt_save(k, tmp_dir("bad"), "[1]", 0), DEG_ERR_ARG);
    cr_assert_eq(deg_ckpt_save(k, tmp_dir("bad"), NULL, 8), DEG_ERR_ARG);
    free(p0);
    free(p1);
    free(grad);
    free(req);
    deg_ckpt_free(k);
}

/* A batch with every kind, targets from the gold. */
typedef struct batch {
    deg_features *f;
    deg_train_example ex[16];
    size_t n;
    double tgt[16][8];
    int32_t pos[16][2];
} batch;

static void make_batch(deg_ckpt *k, batch *b)
{
    char *req = request();
    cr_assert_eq(deg_features_extract(k, req, strlen(req), GOLD, strlen(GOLD), 0, 0, &b->f, NULL),
                 DEG_OK, "%s", deg_errmsg());
    free(req);
    b->n = 0;
    for (size_t i = 0; i < b->f->n_forks; i++) {
        const deg_feature_fork *fk = &b->f->forks[i];
        deg_train_example ex = inputs_of(b->f, fk);
        size_t j = b->n++;
        memset(b->tgt[j], 0, sizeof b->tgt[j]);
        if (ex.kind == DEG_HEAD_CHOICE || ex.kind == DEG_HEAD_SCORE) {
            b->tgt[j][1] = 0.75; /* a soft target */
            b->tgt[j][0] = 0.25;
            ex.target = b->tgt[j];
        } else if (ex.kind == DEG_HEAD_NOUL) {
            b->tgt[j][0] = 1.0;
            ex.target = b->tgt[j];
        } else if (ex.kind == DEG_HEAD_COUNT) {
            ex.count = fk->count_gold;
        } else {
            /* a span (tokens 3..4) and, for one field, the null outcome too */
            b->pos[j][0] = 3;
            b->pos[j][1] = (int32_t)ex.n_rows;
            ex.pos_start = b->pos[j];
            ex.n_start = strcmp(fk->pointer, "/total") == 0 ? 2 : 1;
            ex.pos_end = b->pos[j];
            ex.n_end = 1;
            b->pos[j][0] = 3;
        }
        b->ex[j] = ex;
    }
}

Test(train, loss_grad_matches_finite_differences)
{
    deg_ckpt *k = make_ckpt(11);
    batch b;
    make_batch(k, &b);
    size_t np = deg_ckpt_n_params(k);
    float *theta = malloc(np * sizeof *theta), *g = malloc(np * sizeof *g),
          *g2 = malloc(np * sizeof *g2);
    double losses[16], w[DEG_HEAD_KINDS] = {1.0, 0.5, 2.0, 0.25, 0.5}, tot, tot2;
    cr_assert_eq(deg_ckpt_get_params(k, theta, np), DEG_OK);
    cr_assert_eq(deg_train_loss_grad(k, b.ex, b.n, w, g, np, losses, &tot), DEG_OK, "%s",
                 deg_errmsg());
    double check = 0;
    for (size_t i = 0; i < b.n; i++) {
        cr_assert(isfinite(losses[i]) && losses[i] >= 0, "loss %zu = %g", i, losses[i]);
        check += w[b.ex[i].kind] * losses[i];
    }
    cr_assert_float_eq(tot, check, 1e-9);
    /* deterministic whatever the thread count */
    int prev = deg_set_num_threads(1);
    cr_assert_eq(deg_train_loss_grad(k, b.ex, b.n, w, g2, np, NULL, &tot2), DEG_OK);
    deg_set_num_threads(prev);
    cr_assert_eq(memcmp(g, g2, np * sizeof *g), 0, "bitwise across threads");
    cr_assert_eq(tot, tot2);
    /* central differences on coordinates spread over every head kind */
    size_t checked = 0, nonzero = 0;
    for (size_t c = 0; c < np; c += np / 97 + 1) {
        float keep = theta[c];
        double eps = 1e-2;
        theta[c] = keep + (float)eps;
        deg_ckpt_set_params(k, theta, np);
        deg_train_loss_grad(k, b.ex, b.n, w, g2, np, NULL, &tot2);
        double lp = tot2;
        theta[c] = keep - (float)eps;
        deg_ckpt_set_params(k, theta, np);
        deg_train_loss_grad(k, b.ex, b.n, w, g2, np, NULL, &tot2);
        double lm = tot2;
        theta[c] = keep;
        double h = (double)(keep + (float)eps) - (double)(keep - (float)eps);
        double num = (lp - lm) / h;
        cr_assert(fabs(num - g[c]) <= 2e-3 + 2e-2 * fabs(num), "param %zu: numeric %.6g, "
                  "analytic %.6g", c, num, (double)g[c]);
        checked++;
        nonzero += g[c] != 0;
    }
    deg_ckpt_set_params(k, theta, np);
    cr_assert(checked > 90 && nonzero > 20, "checked %zu, nonzero %zu", checked, nonzero);
    /* a kind's weight scales only its own part of the gradient */
    double w1[DEG_HEAD_KINDS] = {1, 1, 1, 1, 1};
    cr_assert_eq(deg_train_loss_grad(k, b.ex, b.n, w1, g2, np, NULL, &tot2), DEG_OK);
    size_t diff_scaled = 0;
    for (size_t c = 0; c < np; c++)
        if (g2[c] != 0 && g[c] != g2[c]) diff_scaled++;
    cr_assert(diff_scaled > 0);
    deg_features_free(b.f);
    free(theta);
    free(g);
    free(g2);
    deg_ckpt_free(k);
}

/* d total / d hidden (deg_train_loss_grad_hidden) against central finite
 * differences on coordinates of every example's answer row and the pointer
 * heads' option rows, through copies of the features. */
Test(train, hidden_grad_matches_finite_differences)
{
    deg_ckpt *k = make_ckpt(13);
    batch b;
    make_batch(k, &b);
    size_t np = deg_ckpt_n_params(k), E = (size_t)b.f->n_embd;
    float *g = malloc(np * sizeof *g), *g2 = malloc(np * sizeof *g2);
    double w[DEG_HEAD_KINDS] = {1.0, 0.5, 2.0, 0.25, 0.5}, tot, tot2;
    float *ans[16], *rows[16], *da[16], *dr[16];
    for (size_t i = 0; i < b.n; i++) {
        deg_train_example *x = &b.ex[i];
        ans[i] = malloc(E * 4);
        memcpy(ans[i], x->answer, E * 4);
        x->answer = ans[i];
        int ptr = x->kind == DEG_HEAD_CHOICE || x->kind == DEG_HEAD_SCORE;
        rows[i] = ptr ? malloc(x->n_rows * E * 4) : NULL;
        if (ptr) {
            memcpy(rows[i], x->rows, x->n_rows * E * 4);
            x->rows = rows[i];
        }
        da[i] = malloc(E * 4);
        dr[i] = ptr ? malloc(x->n_rows * E * 4) : NULL;
    }
    cr_assert_eq(deg_train_loss_grad_hidden(k, b.ex, b.n, w, g, np, NULL, &tot, da, dr), DEG_OK,
                 "%s", deg_errmsg());
    cr_assert_eq(deg_train_loss_grad(k, b.ex, b.n, w, g2, np, NULL, &tot2), DEG_OK);
    cr_assert(tot == tot2 && memcmp(g, g2, np * 4) == 0, "the hidden gradients changed the rest");
    size_t checked = 0, kinds = 0;
    for (size_t i = 0; i < b.n; i++) {
        deg_train_example *x = &b.ex[i];
        kinds |= (size_t)1 << x->kind;
        size_t nr = rows[i] ? x->n_rows : 0;
        for (size_t r = 0; r <= nr; r++) {
            float *v = r == 0 ? ans[i] : rows[i] + (r - 1) * E;
            float *an = r == 0 ? da[i] : dr[i] + (r - 1) * E;
            for (size_t e = (i + r) % 7; e < E; e += E / 3) {
                float keep = v[e];
                double eps = 1e-2;
                v[e] = keep + (float)eps;
                deg_train_loss_grad(k, b.ex, b.n, w, g2, np, NULL, &tot2);
                double lp = tot2;
                v[e] = keep - (float)eps;
                deg_train_loss_grad(k, b.ex, b.n, w, g2, np, NULL, &tot2);
                double lm = tot2;
                v[e] = keep;
                double num = (lp - lm) / ((double)(keep + (float)eps) - (double)(keep - (float)eps));
                cr_assert(fabs(num - an[e]) <= 2e-3 + 2e-2 * fabs(num),
                          "example %zu (kind %d) row %zu dim %zu: numeric %.6g, analytic %.6g", i,
                          x->kind, r, e, num, (double)an[e]);
                checked++;
            }
        }
    }
    cr_log_info("hidden gradient: %zu coordinates checked, kinds mask 0x%zx", checked, kinds);
    cr_assert(checked > 40);
    cr_assert_eq(kinds & 0x1f, 0x1f, "every head kind covered (mask 0x%zx)", kinds);
    for (size_t i = 0; i < b.n; i++) { free(ans[i]); free(rows[i]); free(da[i]); free(dr[i]); }
    deg_features_free(b.f);
    free(g);
    free(g2);
    deg_ckpt_free(k);
}

Test(train, save_load_round_trip)
{
    deg_ckpt *k = make_ckpt(2);
    size_t np = deg_ckpt_n_params(k);
    float *p = malloc(np * sizeof *p), *q = malloc(np * sizeof *q);
    deg_ckpt_get_params(k, p, np);
    for (size_t i = 0; i < np; i++) p[i] = p[i] * 0.5f + (float)(i % 7) * 1e-3f;
    cr_assert_eq(deg_ckpt_set_params(k, p, np), DEG_OK);
    double t[DEG_HEAD_KINDS] = {1.5, 0.75, 2.0, 1.25, 1.0}, t2[DEG_HEAD_KINDS];
    cr_assert_eq(deg_ckpt_set_calibration(k, t), DEG_OK);
    const char *dir = tmp_dir("saved");
    cr_assert_eq(deg_ckpt_save(k, dir, "{\"training\": {\"seed\": 3}}", 0), DEG_OK, "%s",
                 deg_errmsg());
    deg_ckpt *k2 = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k2), DEG_OK, "%s", deg_errmsg());
    deg_ckpt_get_params(k2, q, np);
    cr_assert_eq(memcmp(p, q, np * sizeof *p), 0);
    deg_ckpt_get_calibration(k2, t2);
    for (int i = 0; i < DEG_HEAD_KINDS; i++) cr_assert_eq(t2[i], t[i]);
    char path[512];
    snprintf(path, sizeof path, "%s/deg.json", dir);
    json_t *meta = json_load_file(path, 0, NULL);
    cr_assert(meta);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(meta, "training"), "seed")), 3);
    cr_assert(json_object_get(json_object_get(meta, "backbone"), "path"));
    cr_assert_str_eq(json_string_value(json_object_get(meta, "array_mode")), "index");
    json_decref(meta);
    /* the same request fills the same way from the saved copy */
    char *req = request(), *r1 = NULL, *r2 = NULL;
    deg_ckpt_set_debug(k, 0); /* no timings in the responses */
    cr_assert_eq(deg_fill(k, req, strlen(req), &r1, NULL), DEG_OK);
    cr_assert_eq(deg_fill(k2, req, strlen(req), &r2, NULL), DEG_OK);
    cr_assert_str_eq(r1, r2);
    /* no backbone path: resolved by name (here: explicit model path) */
    cr_assert_eq(deg_ckpt_save(k, dir, NULL, DEG_SAVE_NO_BACKBONE_PATH), DEG_OK);
    meta = json_load_file(path, 0, NULL);
    cr_assert_null(json_object_get(json_object_get(meta, "backbone"), "path"));
    cr_assert_null(json_object_get(meta, "training"));
    json_decref(meta);
    deg_ckpt *k3 = NULL;
    cr_assert_eq(deg_ckpt_load(dir, GOLDENS "/tiny-llama", &k3), DEG_OK, "%s", deg_errmsg());
    deg_ckpt_free(k3);
    deg_free(r1);
    deg_free(r2);
    free(req);
    free(p);
    free(q);
    deg_ckpt_free(k2);
    deg_ckpt_free(k);
}
