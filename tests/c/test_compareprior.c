/* Booleans that compare a written value (lib/deg/compareprior.c): reading the
 * comparison from descriptions and names, judging it on key lines and "The K is V."
 * statements, deg.json key_prior.compare, and deg_fill on the tiny random models
 * where a large bonus must give every comparison's answer (random heads alone do
 * not). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_fixture.h"
#include "deg.h"
#include "deg/compareprior.h"
#include "deg/keyprior.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

Test(compareprior, parse)
{
    struct {
        const char *text;
        int is_name, ok, op, negated;
        const char *key, *value;
        double threshold;
    } C[] = {
        {"whether type equals note", 0, 1, DG_CMP_EQUALS, 0, "type", "note", 0},
        {"true if the type is 'boolean'", 0, 1, DG_CMP_EQUALS, 0, "type", "boolean", 0},
        {"Is the top-level type application?", 0, 1, DG_CMP_EQUALS, 0,
         "top level type application", "", 0}, /* the split is open */
        {"InputTypeIsNote", 1, 1, DG_CMP_EQUALS, 0, "input type", "note", 0},
        {"SectionIs4", 1, 1, DG_CMP_EQUALS, 0, "section", "4", 0},
        {"not_type_is_error", 1, 1, DG_CMP_EQUALS, 1, "type", "error", 0},
        {"the opposite of: whether license equals GPL", 0, 1, DG_CMP_EQUALS, 1, "license",
         "gpl", 0},
        {"true if the type is not 'select'", 0, 1, DG_CMP_EQUALS, 1, "type", "select", 0},
        {"Is the first port greater than 5300?", 0, 1, DG_CMP_GREATER, 0, "first port", "", 5300},
        {"true when size > 100", 0, 1, DG_CMP_GREATER, 0, "size", "", 100},
        {"whether the size exceeds 1.5", 0, 1, DG_CMP_GREATER, 0, "size", "", 1.5},
        {"socketmodeAbove150", 1, 1, DG_CMP_GREATER, 0, "socketmode", "", 150},
        {"true if at most one item of formats is listed", 0, 0, 0, 0, "", "", 0}, /* a count */
        {"true if it is not a Find<Package> module", 0, 0, 0, 0, "", "", 0},     /* a pronoun */
        {"true if the type is recognised by name only (no magic rules)", 0, 0, 0, 0, "", "", 0},
        {"does the page have an OPTIONS section?", 0, 0, 0, 0, "", "", 0},
        {"Essential", 1, 0, 0, 0, "", "", 0},
        /* a key word longer than the key buffer: no comparison (found by scripts/fuzz) */
        {"333333333333333333333333333333333333333333333333333333333333333333</td>3332", 0, 0, 0,
         0, "", "", 0},
        {"333333333333333333333333333333333333333333333333333333333333333333</td>3332", 1, 0, 0,
         0, "", "", 0},
        /* nor a value word (scripts/fuzz lists on 0.24.0) */
        {"x is {3333333333333333333333333333333333333333333333333333333333333333333333333}", 0,
         0, 0, 0, "", "", 0},
        {"x is {3333333333333333333333333333333333333333333333333333333333333333333333333}", 1,
         0, 0, 0, "", "", 0},
        {"x is 33", 1, 1, DG_CMP_EQUALS, 0, "x", "33", 0},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        dg_cmp_pred p;
        int ok = dg_cmp_parse(C[i].text, strlen(C[i].text), C[i].is_name, &p);
        cr_assert_eq(ok, C[i].ok, "%s", C[i].text);
        if (!ok) continue;
        cr_assert_eq((int)p.op, C[i].op, "%s", C[i].text);
        cr_assert_eq(p.negated, C[i].negated, "%s", C[i].text);
        cr_assert_str_eq(p.key, C[i].key, "%s", C[i].text);
        if (p.op == DG_CMP_EQUALS) cr_assert_str_eq(p.value, C[i].value, "%s", C[i].text);
        else cr_assert_eq(p.threshold, C[i].threshold, "%s", C[i].text);
    }
}

/* Judge text on ASCII text (code point = byte). */
static int judge(const char *pred_text, int is_name, const char *ctx, int *exact)
{
    dg_cmp_pred p;
    cr_assert(dg_cmp_parse(pred_text, strlen(pred_text), is_name, &p), "%s", pred_text);
    dg_keylines kv = {0};
    size_t n = strlen(ctx);
    cr_assert_eq(dg_keylines_scan(ctx, n, &kv), DEG_OK);
    size_t *cp = malloc((n + 1) * sizeof *cp);
    for (size_t i = 0; i <= n; i++) cp[i] = i;
    int t = dg_cmp_judge(&p, ctx, &kv, cp, exact);
    free(cp);
    dg_keylines_free(&kv);
    return t;
}

Test(compareprior, judge)
{
    int ex;
    cr_assert_eq(judge("whether type equals note", 0, "Template: x/y\nType: note\n", &ex), 1);
    cr_assert_eq(ex, 1);
    cr_assert_eq(judge("whether type equals note", 0, "Type: boolean\n", &ex), 0);
    cr_assert_eq(judge("whether type equals note", 0, "Name: note\n", &ex), -1, "no Type line");
    cr_assert_eq(judge("InputTypeIsNote", 1, "Type: note\n", &ex), 1, "a partial key holds");
    cr_assert_eq(ex, 0);
    cr_assert_eq(judge("InputTypeIsNote", 1, "Type: boolean\n", &ex), -1,
                 "a partial key never denies");
    cr_assert_eq(judge("Is the top-level type application?", 0,
                       "MIME type: application/x-alz\nTop-level type: application\n", &ex), 1);
    cr_assert_eq(judge("Is the top-level type audio?", 0, "Top-level type: application\n", &ex),
                 -1, "an open split only holds");
    cr_assert_eq(judge("whether license equals MPL", 0,
                       "<tr><th>License</th><td>MPL</td></tr>\n", &ex), 1, "an HTML row");
    cr_assert_eq(judge("true if the type is 'select'", 0,
                       "The package is locales. The type is select. The default is C.", &ex), 1);
    cr_assert_eq(judge("true if the type is 'boolean'", 0,
                       "The package is locales. The type is select.", &ex), 0, "a statement");
    cr_assert_eq(judge("true if the version is '1.2.3'", 0, "The version is 1.2.3. Done.", &ex),
                 1, "a statement's value keeps its dots");
    cr_assert_eq(judge("whether RemainAfterExit is enabled", 0, "RemainAfterExit=yes\n", &ex), 1,
                 "a truth value");
    cr_assert_eq(judge("true if DefaultDependencies is on", 0, "DefaultDependencies=no\n", &ex),
                 0);
    cr_assert_eq(judge("true if the package is essential", 0,
                       "Package: libfoo\nEssential: yes\n", &ex), -1,
                 "V names another line: that line's question, not Package's value");
    cr_assert_eq(judge("true when first port > 4", 0, "first port: 22\n", &ex), 1);
    cr_assert_eq(judge("true when first port > 40", 0, "first port: 22/tcp\n", &ex), 0);
    cr_assert_eq(judge("true when first port > 40", 0, "first port: ssh\n", &ex), -1);
}

static const char *CTX = "Template: demo/question\nType: boolean\nSection: 8\nSize: 1234\n";
static const char *SCHEMA =
    "{\"type\":\"object\",\"required\":[\"a\",\"b\",\"c\",\"d\"],\"properties\":{"
    "\"a\":{\"type\":\"boolean\",\"description\":\"whether type equals boolean\"},"
    "\"b\":{\"type\":\"boolean\",\"description\":\"Is the type note?\"},"
    "\"c\":{\"type\":\"boolean\",\"description\":\"the opposite of: whether section equals 8\"},"
    "\"d\":{\"type\":\"boolean\",\"description\":\"true when size > 1000\"}}}";

static json_t *fill(deg_ckpt *k)
{
    return tu_fill(k, CTX, SCHEMA, NULL);
}

/* A bonus far above the random heads' logit range answers every comparison (b's split
 * is open: "Type: boolean" does not deny "note", so b stays the heads'); without
 * `compare` the random heads must not give them all; a bad value is a FormatError. */
Test(compareprior, fill_reads_compared_values)
{
    static const char *TINY[] = {"tiny-llama", "tiny-qwen3"};
    int differ = 0;
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/compareprior-fill-%d-%zu", DEG_BUILD_ROOT, (int)getpid(),
                 mi);
        deg_ckpt *k = tu_random_ckpt(model, 13, dir, NULL, -1);
        deg_ckpt_free(k);
        tu_set_meta(dir, "key_prior", json_pack("{s:f, s:f}", "exact", 200.0, "partial", 100.0));
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        json_t *r0 = fill(k);
        deg_ckpt_free(k);
        static const char *const bad[] = {"{\"exact\": 1, \"partial\": 1, \"compare\": true}",
                                          "{\"exact\": 1, \"partial\": 1, \"compare\": 2e6}"};
        tu_assert_meta_rejected(dir, "key_prior", bad, 2);
        tu_set_meta(dir, "key_prior", json_pack("{s:f, s:f, s:f}", "exact", 200.0, "partial",
                                                100.0, "compare", 400.0));
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        json_t *saved = tu_saved_meta(k, dir);
        cr_assert_eq(json_real_value(json_object_get(json_object_get(saved, "key_prior"),
                                                     "compare")), 400.0);
        json_decref(saved);
        json_t *r = fill(k);
        json_t *v = json_object_get(r, "value"), *v0 = json_object_get(r0, "value");
        cr_assert(json_is_true(json_object_get(v, "a")), "%s", TINY[mi]);
        cr_assert(json_is_false(json_object_get(v, "c")), "%s", TINY[mi]);
        cr_assert(json_is_true(json_object_get(v, "d")), "%s", TINY[mi]);
        cr_assert(json_equal(json_object_get(v, "b"), json_object_get(v0, "b")),
                  "an open split that does not hold leaves the heads' answer");
        if (!json_is_true(json_object_get(v0, "a")) || !json_is_false(json_object_get(v0, "c")) ||
            !json_is_true(json_object_get(v0, "d")))
            differ++;
        json_decref(r);
        json_decref(r0);
        deg_ckpt_free(k);
    }
    cr_assert_gt(differ, 0, "random heads alone answered every comparison");
}
