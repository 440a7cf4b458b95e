/* Scores the document writes (lib/deg/scoreprior.c): numbers and labels to levels,
 * names after a number, the bonuses from key lines and running text, deg.json
 * key_prior.score, and deg_fill on the tiny random models where a large bonus must
 * give every written score (random heads alone do not). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_fixture.h"
#include "deg.h"
#include "deg/keyprior.h"
#include "deg/plan.h"
#include "deg/scoreprior.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static const char *SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"bedrooms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10},"
    "\"severity_level\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5,"
    "\"x-levels\":{\"1\":\"cosmetic\",\"4\":\"blocking work\",\"5\":\"outage\"}},"
    "\"socketmode_band\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":3,\"x-levels\":"
    "{\"0\":\"0 to 299\",\"1\":\"300 to 599\",\"2\":\"600 to 899\",\"3\":\"900 or more\"}},"
    "\"size_band\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2,\"description\":"
    "\"installed size, banded\",\"x-levels\":{\"0\":\"0 to 49\",\"1\":\"50 to 999\","
    "\"2\":\"1000 or more\"}},"
    "\"rooms\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
    "{\"seats\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9}}}}}}";

static deg_plan *plan(void)
{
    deg_plan *p = NULL;
    char *errs = NULL;
    cr_assert_eq(deg_plan_compile(SCHEMA, strlen(SCHEMA), &p, &errs), DEG_OK, "%s",
                 errs ? errs : deg_errmsg());
    return p;
}

static const dg_field_plan *field(deg_plan *p, const char *pointer)
{
    const dg_plan *P = (const dg_plan *)p;
    for (size_t i = 0; i < P->n_fields; i++)
        if (strcmp(P->fields[i].pointer, pointer) == 0) return &P->fields[i];
    cr_assert_fail("no field %s", pointer);
    return NULL;
}

Test(scoreprior, numbers_and_labels_to_levels)
{
    deg_plan *p = plan();
    const dg_field_plan *beds = field(p, "/bedrooms"), *sev = field(p, "/severity_level"),
                        *mode = field(p, "/socketmode_band");
    struct { const dg_field_plan *f; const char *text; int level; } N[] = {
        {beds, "5", 5}, {beds, "0", 0}, {beds, "10", 10}, {beds, "11", -1}, /* no level 11 */
        {beds, "4.5", -1},                                                /* not integral */
        {beds, "x", -1},   {sev, "4", 3},   {sev, "0", -1},  /* levels 1..5: index = value - 1 */
        {mode, "0600", 2}, {mode, "299", 0}, {mode, "1,326", 3}, /* quantity bands */
        {mode, "599.9", 1},                                     /* the fraction dropped */
    };
    for (size_t i = 0; i < sizeof N / sizeof N[0]; i++)
        cr_assert_eq(dg_score_level_of_number(N[i].f, N[i].text, strlen(N[i].text)), N[i].level,
                     "case %zu: %s", i, N[i].text);
    struct { const char *text; int level; } L[] = {
        {"a complete OUTAGE since noon", 4}, {"it is blocking work", 3},
        {"cosmetics only", -1}, /* whole words */
        {"no label here", -1},
    };
    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++)
        cr_assert_eq(dg_score_level_of_label(sev, L[i].text, strlen(L[i].text)), L[i].level,
                     "%s", L[i].text);
    cr_assert_eq(dg_score_level_of_label(mode, "600 to 899", 10), -1, "ranges are numbers");
    deg_plan_free(p);
}

Test(scoreprior, name_after_a_number)
{
    deg_plan *p = plan();
    const dg_field_plan *beds = field(p, "/bedrooms"), *seats = field(p, "/rooms/*/seats");
    struct { const char *text; int want; } C[] = {
        {"5-bedroom flat in Ghent", 1}, {"5 bedrooms, two baths", 1}, {"5  Bedrooms", 1},
        {"5bedrooms", 0},           /* one word */
        {"5 flats with bedrooms", 0}, /* the name must follow the number */
        {"5\nbedrooms", 0},           /* same line */
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++)
        cr_assert_eq(dg_score_named_after(beds, C[i].text, strlen(C[i].text), 1), C[i].want,
                     "%s", C[i].text);
    cr_assert_eq(dg_score_named_after(seats, "4 seats", 7, 1), 0, "array leaves: none");
    deg_plan_free(p);
}

/* The bonuses on ASCII text (code point = byte), at temperature temp. */
static int prior_at(const dg_field_plan *f, const char *ctx, double temp, float *lg)
{
    dg_keylines kv = {0};
    size_t n = strlen(ctx);
    cr_assert_eq(dg_keylines_scan(ctx, n, &kv), DEG_OK);
    size_t *cp = malloc((n + 1) * sizeof *cp);
    for (size_t i = 0; i <= n; i++) cp[i] = i;
    dg_key_prior kp = {.on = 1, .exact = 16, .partial = 8, .description = 4, .score = 12};
    memset(lg, 0, f->n_levels * sizeof *lg);
    int top = dg_score_prior(&kp, f, ctx, n, &kv, cp, temp, lg);
    free(cp);
    dg_keylines_free(&kv);
    return top;
}

static int prior(const dg_field_plan *f, const char *ctx, float *lg)
{
    return prior_at(f, ctx, 1.0, lg);
}

Test(scoreprior, key_lines_and_running_text)
{
    deg_plan *p = plan();
    const dg_field_plan *beds = field(p, "/bedrooms"), *sev = field(p, "/severity_level"),
                        *mode = field(p, "/socketmode_band");
    float lg[16];
    cr_assert_eq(prior(beds, "Flat in Ghent\nBedrooms: 3 (one small)\n", lg), 3);
    cr_assert_eq(lg[3], 16.0f, "a key line: the exact bonus");
    cr_assert_eq(prior(beds, "A 4-bedroom flat for 1,326 per month, built 2019.", lg), 4);
    cr_assert_eq(lg[4], 12.0f, "running text: the score bonus");
    cr_assert_eq(lg[1] + lg[3] + lg[10], 0.0f, "other numbers get nothing");
    cr_assert_eq(prior(sev, "Severity: outage\n", lg), 4, "label in a key line, scale word dropped");
    cr_assert_eq(prior(sev, "Severity: 2 of 5\n", lg), 1, "the leading number");
    cr_assert_eq(prior(mode, "| SocketMode | 0600 |\n", lg), 2, "a table row, a band");
    const dg_field_plan *size = field(p, "/size_band");
    cr_assert_eq(prior(size, "Package: bash\nInstalled-Size: 7164\n", lg), 2,
                 "a line the description names");
    cr_assert_eq(lg[2], 4.0f, "at the description bonus");
    cr_assert_eq(prior_at(beds, "A 4-bedroom flat", 4.5, lg), 4);
    cr_assert_eq(lg[4], 54.0f, "x the temperature: calibrated logit units");
    cr_assert_eq(prior(beds, "Rooms: 3\nBuilt: 1999, 2 floors\n", lg), -1, "nothing names it");
    cr_assert_eq(prior(beds, "Bedrooms: v2, 10:30, 7x\n", lg), -1, "no leading number");
    cr_assert_eq(prior(beds, "Flats with 2-3 bedrooms", lg), -1, "a range is no written value");
    dg_key_prior off = {.on = 1, .exact = 16, .partial = 8};
    dg_keylines kv = {0};
    size_t cp[64];
    for (size_t i = 0; i < 64; i++) cp[i] = i;
    cr_assert_eq(dg_score_prior(&off, beds, "Bedrooms: 3\n", 12, &kv, cp, 1.0, lg), -1, "score 0 = off");
    deg_plan_free(p);
}

static const char *CTX = "Listing 42\nSeverity: outage\nSocketMode: 0600\n"
                         "A 4-bedroom flat with a garden.\n";
static const char *FSCHEMA =
    "{\"type\":\"object\",\"required\":[\"bedrooms\",\"severity_level\",\"socketmode_band\"],"
    "\"properties\":{"
    "\"bedrooms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10},"
    "\"severity_level\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5,"
    "\"x-levels\":{\"1\":\"cosmetic\",\"5\":\"outage\"}},"
    "\"socketmode_band\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":3,\"x-levels\":"
    "{\"0\":\"0 to 299\",\"1\":\"300 to 599\",\"2\":\"600 to 899\",\"3\":\"900 or more\"}}}}";

static json_t *fill(deg_ckpt *k)
{
    return tu_fill(k, CTX, FSCHEMA, NULL);
}

/* A bonus far above the random heads' logit range gives every written score (and
 * meta written_level); the same checkpoint without `score` must not (else this test
 * could not fail); a bad value is a FormatError; `score` survives a save. */
Test(scoreprior, fill_reads_written_scores)
{
    static const char *TINY[] = {"tiny-llama", "tiny-qwen3"};
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/scoreprior-fill-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        deg_ckpt *k0 = tu_random_ckpt(model, 11, dir, NULL, -1);
        deg_ckpt_free(k0);
        tu_set_meta(dir, "key_prior", json_pack("{s:f, s:f}", "exact", 200.0, "partial", 100.0));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        json_t *r0 = fill(k);
        deg_ckpt_free(k);
        static const char *const bad[] = {"{\"exact\": 1, \"partial\": 1, \"score\": \"high\"}",
                                          "{\"exact\": 1, \"partial\": 1, \"score\": -1}"};
        tu_assert_meta_rejected(dir, "key_prior", bad, 2);
        tu_set_meta(dir, "key_prior", json_pack("{s:f, s:f, s:f}", "exact", 200.0, "partial",
                                                100.0, "score", 200.0));
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        json_t *r = fill(k);
        json_t *v = json_object_get(r, "value"), *meta = json_object_get(r, "meta");
        cr_assert_eq(json_integer_value(json_object_get(v, "bedrooms")), 4);
        cr_assert_eq(json_integer_value(json_object_get(v, "severity_level")), 5);
        cr_assert_eq(json_integer_value(json_object_get(v, "socketmode_band")), 2);
        cr_assert_eq(json_integer_value(json_object_get(json_object_get(meta, "/bedrooms"),
                                                        "written_level")), 4);
        cr_assert(!json_equal(json_object_get(r0, "value"), v),
                  "random heads alone gave the written scores");
        json_t *saved = tu_saved_meta(k, dir);
        cr_assert_eq(json_real_value(json_object_get(json_object_get(saved, "key_prior"), "score")),
                     200.0);
        json_decref(saved);
        json_decref(r);
        json_decref(r0);
        deg_ckpt_free(k);
    }
}
