/* The count prior (lib/deg/countprior.c): booleans read as count predicates over a
 * noun ("withoutAfter", "does it list any requires?"), judged on the lists of the
 * context (counted items, or a predicate key stating yes/no), number folding of
 * names, deg.json validation, and deg_fill on the tiny random models, where the
 * prior must set every such boolean to what the lists say (random heads alone do
 * not). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_fixture.h"
#include "deg.h"
#include "deg/countprior.h"
#include "deg/keyprior.h"
#include "deg/lists.h"
#include "deg/plan.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

/* The predicate of a raw name or description (normalised as dg_count_preds_of does). */
static dg_count_op parse(const char *text, char *noun)
{
    char norm[DG_KEY_DESC_MAX + 1];
    dg_key_norm(text, strlen(text), norm, sizeof norm);
    return dg_count_parse_words(norm, noun, DG_KEY_MAX_LEN + 1);
}

Test(countprior, parse)
{
    static const struct {
        const char *text;
        dg_count_op op;
        const char *noun;
    } C[] = {
        {"withoutAfter", DG_COUNT_ZERO, "after"},
        {"NO_WANTED_BY", DG_COUNT_ZERO, "wanted by"},
        {"true if it lists no choices", DG_COUNT_ZERO, "choices"},
        {"true if the unit has no [Install] section", DG_COUNT_ZERO, "install section"},
        {"true if the template sets no default", DG_COUNT_ZERO, "default"},
        {"HasRequires", DG_COUNT_ANY, "requires"},
        {"does it list any requires?", DG_COUNT_ANY, "requires"},
        {"are any sub class of given?", DG_COUNT_ANY, "sub class"},
        {"default_given", DG_COUNT_ANY, "default"},
        {"AtMostOneAfter", DG_COUNT_AT_MOST_ONE, "after"},
        {"true if at most one item of formats is listed", DG_COUNT_AT_MOST_ONE, "formats"},
        {"single-files", DG_COUNT_AT_MOST_ONE, "files"},
        {"MoreThanOneExtensions", DG_COUNT_SEVERAL, "extensions"},
        {"is more than one item of glob listed?", DG_COUNT_SEVERAL, "glob"},
        {"does the document list several sections?", DG_COUNT_SEVERAL, "sections"},
        /* none: no quantifier, "not", a bare "lists X", a clause past three words */
        {"does the template give a default answer?", DG_COUNT_NONE_OP, ""},
        {"true if it is not a Find<Package> module", DG_COUNT_NONE_OP, ""},
        {"licenseNotMentioned", DG_COUNT_NONE_OP, ""},
        {"it lists files", DG_COUNT_NONE_OP, ""},
        {"true if the license is 'GPL'", DG_COUNT_NONE_OP, ""},
        {"has the package been built from source by hand", DG_COUNT_NONE_OP, ""},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        char noun[DG_KEY_MAX_LEN + 1];
        dg_count_op op = parse(C[i].text, noun);
        cr_assert_eq(op, C[i].op, "%s: op %d, want %d", C[i].text, op, C[i].op);
        cr_assert_str_eq(noun, C[i].noun, "%s", C[i].text);
    }
    cr_assert(dg_count_holds(DG_COUNT_ZERO, 0) && !dg_count_holds(DG_COUNT_ZERO, 1));
    cr_assert(dg_count_holds(DG_COUNT_ANY, 3) && !dg_count_holds(DG_COUNT_ANY, 0));
    cr_assert(dg_count_holds(DG_COUNT_AT_MOST_ONE, 1) && !dg_count_holds(DG_COUNT_AT_MOST_ONE, 2));
    cr_assert(dg_count_holds(DG_COUNT_SEVERAL, 2) && !dg_count_holds(DG_COUNT_SEVERAL, 1));
}

/* One yes/no word reader for the key prior and the stated predicates. */
Test(countprior, yes_no_words)
{
    static const char *const YES[] = {"yes", "Y", "TRUE", "1", "ja", "Oui", "s\xc3\xad", "sim"};
    static const char *const NO[] = {"no", "N", "False", "0", "nein", "non", "n\xc3\xa3o", "nee"};
    for (size_t i = 0; i < sizeof YES / sizeof YES[0]; i++) {
        cr_assert_eq(dg_key_yes_no(YES[i], strlen(YES[i])), 1, "%s", YES[i]);
        cr_assert_eq(dg_key_yes_no(NO[i], strlen(NO[i])), 0, "%s", NO[i]);
    }
    cr_assert_eq(dg_key_yes_no("yess", 4), -1);
    cr_assert_eq(dg_key_yes_no("maybe", 5), -1);
    cr_assert_eq(dg_key_yes_no("yes", 2), -1, "a prefix is not the word");
}

/* Plurals and singulars fold alike for list names (keyprior.c fold_plural). */
Test(countprior, number_folding)
{
    static const char *const SAME[][2] = {{"formats", "format"}, {"aliases", "alias"},
                                          {"licenses", "license"}, {"dependencies", "dependency"},
                                          {"classes", "class"}, {"addresses", "address"},
                                          {"matches", "match"}, {"parent types", "parent type"},
                                          {"released", "release"}, {"opened", "opens"},
                                          {"created", "creates"}};
    for (size_t i = 0; i < sizeof SAME / sizeof SAME[0]; i++) {
        cr_assert_eq(dg_key_match_name(SAME[i][0], NULL, SAME[i][1], 1), 2, "%s", SAME[i][0]);
        cr_assert_eq(dg_key_match_name(SAME[i][1], NULL, SAME[i][0], 1), 2, "%s", SAME[i][1]);
    }
    cr_assert_eq(dg_key_match_name("aliases", NULL, "alias", 0), 0, "plural 0: words as written");
    cr_assert_eq(dg_key_match_name("class", NULL, "case", 1), 0);
    cr_assert_eq(dg_key_match_name("feed", NULL, "fee", 1), 0, "too short to lose its 'd'");
    cr_assert_eq(dg_key_match_name("released on", NULL, "release", 1), 1,
                 "a release table's column for ReleasedOn");
    cr_assert_eq(dg_key_match_name("wanted by", NULL, "wants", 1), 0, "WantedBy is no Wants:");
    cr_assert_eq(dg_key_match_name("created by", NULL, "created", 1), 0, "an agent, no date");
    cr_assert_eq(dg_key_match_name("wanted by", NULL, "wanted by", 1), 2);
}

static int judge(const char *ctx, const char *text, char *key)
{
    dg_count_pred p;
    char norm[DG_KEY_DESC_MAX + 1];
    dg_key_norm(text, strlen(text), norm, sizeof norm);
    p.op = dg_count_parse_words(norm, p.noun, sizeof p.noun);
    cr_assert_neq(p.op, DG_COUNT_NONE_OP, "%s", text);
    size_t cpb[2048], n = 0;
    for (size_t b = 0; ctx[b]; b++)
        if (((unsigned char)ctx[b] & 0xC0) != 0x80) cpb[n++] = b;
    cpb[n] = strlen(ctx);
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    int li, v = dg_count_judge(&ls, ctx, cpb, &p, &li);
    strcpy(key, li >= 0 ? ls.p[li].key : "");
    cr_assert(v >= 0 || li < 0, "%s: no verdict, but list %d", text, li);
    dg_lists_free(&ls);
    return v;
}

Test(countprior, judge)
{
    const char *ctx = "[Unit]\n"
                      "Description=Daily apt activities\n"
                      "After=network-online.target time-sync.target\n"
                      "Wants=network-online.target\n"
                      "RemainAfterExit=yes\n"
                      "Alias: p.service\n"
                      "Has magic: ja\n"
                      "| Has html | No |\n"
                      "Default: false\n";
    static const struct {
        const char *text;
        int want;
        const char *key;
    } C[] = {
        {"withoutAfter", 0, "after"},
        {"any_after", 1, "after"},
        {"several_after", 1, "after"},
        {"AtMostOneAfter", 0, "after"},
        {"single_wants", 1, "wants"},
        {"more than one wants", 0, "wants"},
        {"no-aliases", 0, "alias"},        /* plural folded */
        {"at-most-one-aliases", 1, "alias"},
        {"default_given", 1, "default"},   /* "false" is the default's value, counted */
        /* stated: the key is a predicate over the same noun with a yes/no value */
        {"noMagic", 0, "has magic"},
        {"hasMagic", 1, "has magic"},
        {"withoutHtml", 1, "has html"},
        {"single-html", 1, "has html"},    /* no html: at most one */
        /* no list tells: "Before" absent; "several magic" not bounded by "has magic: ja";
         * "RemainAfterExit" is no list of "after exit"... nor of "exit" (partial keys
         * must be shorter than the noun) */
        {"no before", -1, ""},
        {"several magic", -1, ""},
        {"any exit", -1, ""},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        char key[DG_KEY_MAX_LEN + 1];
        int v = judge(ctx, C[i].text, key);
        cr_assert_eq(v, C[i].want, "%s: got %d, want %d (list %s)", C[i].text, v, C[i].want, key);
        cr_assert_str_eq(key, C[i].key, "%s", C[i].text);
    }
}

/* An INI section's keys are a list for a plain array (lists_keys.c), but the count
 * prior does not count them: "[zones]" over two keys states no two zones (datagen-v2
 * test zone/CM/0); a JSON object's member keys are counted. */
Test(countprior, section_keys_not_counted)
{
    char key[DG_KEY_MAX_LEN + 1];
    cr_assert_eq(judge("[zones]\ncountry = CM\nseveral = No\n", "several zones", key), -1);
    cr_assert_eq(judge("{\n  \"zones\": {\"a\": 1, \"b\": 2}\n}\n", "several zones", key), 1);
    cr_assert_str_eq(key, "zones");
}

/* "has an X section" with no list of it: a heading line naming X tells (a man
 * page's OPTIONS, a unit's [Install]); a key line or a longer line does not. */
Test(countprior, judge_headings)
{
    const char *ctx = "NAME\n       strace-log-merge - merge logs\n\n"
                      "## Options\n  -h  help\n\n[Install]\nWantedBy=multi-user.target\n"
                      "Has examples section: maybe\nSEE ALSO more\n";
    static const struct {
        const char *text;
        int want;
    } C[] = {
        {"has_options_section", 1}, {"no_options_section", 0},  {"HasInstallSection", 1},
        {"lacksInstallSection", 0}, {"has_name_section", 1},    {"has_see_section", -1},
        {"has_examples_section", -1}, /* "Has examples section: maybe" is no heading */
        {"several_options_section", -1}, /* a heading is no count */
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        char key[DG_KEY_MAX_LEN + 1];
        int v = judge(ctx, C[i].text, key);
        cr_assert_eq(v, C[i].want, "%s: got %d, want %d", C[i].text, v, C[i].want);
    }
}

/* Ties between lists the noun names alike go to the one with more items: a Maven
 * POM's <dependency> elements, not their <dependencies> container. */
Test(countprior, judge_ties_to_more_items)
{
    const char *pom = "<project>\n"
                      "  <dependencies>\n"
                      "    <dependency>\n"
                      "      <groupId>junit</groupId>\n"
                      "    </dependency>\n"
                      "    <dependency>\n"
                      "      <groupId>org.slf4j</groupId>\n"
                      "    </dependency>\n"
                      "  </dependencies>\n"
                      "</project>\n";
    char key[DG_KEY_MAX_LEN + 1];
    cr_assert_eq(judge(pom, "several_dependencies", key), 1);
    cr_assert_str_eq(key, "dependency");
    cr_assert_eq(judge(pom, "single dependency", key), 0);
}

static const char *FCTX = "After=network-online.target time-sync.target\n"
                          "Wants=network-online.target\n"
                          "Has magic: nein\n"
                          "  <sub-class-of type=\"text/plain\"/>\n";

/* noul fields whose truth the lists give (expected value per field) */
static const char *FSCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"withoutAfter\":{\"type\":\"boolean\"},"
    "\"anyAfter\":{\"type\":\"boolean\"},"
    "\"x1\":{\"type\":\"boolean\",\"description\":\"true if at most one item of wants is listed\"},"
    "\"severalWants\":{\"type\":\"boolean\"},"
    "\"hasMagic\":{\"type\":\"boolean\"},"
    "\"noMagic\":{\"type\":\"boolean\"},"
    "\"withoutBefore\":{\"type\":\"boolean\"},"
    "\"anyBefore\":{\"type\":\"boolean\"},"
    "\"anyParentTypes\":{\"type\":\"boolean\",\"description\":\"does it list any sub class of?\"},"
    "\"license_is_gpl\":{\"type\":\"boolean\"}}}";
static const int WANT[] = {0, 1, 1, 0, 0, 1, 1, 0, 1};
static const char *const NAMES[] = {"withoutAfter", "anyAfter", "x1", "severalWants", "hasMagic",
                                    "noMagic", "withoutBefore", "anyBefore", "anyParentTypes"};

static json_t *ffill(deg_ckpt *k)
{
    return tu_fill(k, FCTX, FSCHEMA, NULL);
}

/* With a large bonus (and `absent` for Before, which no line writes) every count
 * predicate takes the lists' truth (by its name's noun, else its description's)
 * and meta names the list; the random heads
 * alone get some wrong (so the test can fail); the one boolean that is no count
 * keeps the heads' value. */
Test(countprior, fill_follows_the_lists)
{
    static const char *TINY[] = {"tiny-llama", "tiny-qwen3"};
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/count-fill-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        deg_ckpt *k0 = tu_random_ckpt(model, 11, dir, NULL, -1);
        json_t *r0 = ffill(k0);
        deg_ckpt_free(k0);
        tu_set_meta(dir, "count_prior", json_pack("{s:f, s:f}", "bonus", 500.0, "absent", 400.0));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        json_t *r = ffill(k);
        json_t *v = json_object_get(r, "value"), *v0 = json_object_get(r0, "value");
        json_t *meta = json_object_get(r, "meta");
        int differ = 0;
        for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
            json_t *b = json_object_get(v, NAMES[i]);
            cr_assert(json_is_boolean(b) && json_is_true(b) == WANT[i], "%s: %s", TINY[mi],
                      NAMES[i]);
            differ += json_is_true(json_object_get(v0, NAMES[i])) != WANT[i];
        }
        cr_assert_gt(differ, 0, "random heads alone gave every count");
        json_t *m = json_object_get(meta, "/anyAfter");
        cr_assert_str_eq(json_string_value(json_object_get(m, "list_key")), "after");
        cr_assert_eq(json_integer_value(json_object_get(m, "list_items")), 2);
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(meta, "/noMagic"),
                                                           "list_key")), "has magic");
        /* the name's noun ("parent types") names no list; the description's does */
        m = json_object_get(meta, "/anyParentTypes");
        cr_assert_str_eq(json_string_value(json_object_get(m, "list_key")), "sub class");
        m = json_object_get(meta, "/anyBefore");
        cr_assert(json_is_null(json_object_get(m, "list_key")), "absent: no list");
        cr_assert_null(json_object_get(json_object_get(meta, "/license_is_gpl"), "list_key"));
        cr_assert(json_equal(json_object_get(v, "license_is_gpl"),
                             json_object_get(v0, "license_is_gpl")), "not a count: the heads'");
        json_decref(r);
        json_decref(r0);
        deg_ckpt_free(k);
    }
}

Test(countprior, deg_json_validation)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    snprintf(dir, sizeof dir, "%s/count-bad-%d", DEG_BUILD_ROOT, (int)getpid());
    cr_assert_eq(deg_ckpt_create_random(model, 3, dir), DEG_OK, "%s", deg_errmsg());
    const char *bad[] = {"{\"bonus\": -1}", "{\"absent\": 1}", "[1]", "{\"bonus\": \"x\"}",
                         "{\"bonus\": 1, \"other\": 2}", "{\"bonus\": 1, \"absent\": -2}",
                         "{\"bonus\": 1e39}", "{\"bonus\": 1, \"absent\": true}"};
    tu_assert_meta_rejected(dir, "count_prior", bad, sizeof bad / sizeof bad[0]);
    tu_set_meta(dir, "count_prior", json_pack("{s:f}", "bonus", 6.5));
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    json_t *meta = tu_saved_meta(k, dir);
    json_t *cp = json_object_get(meta, "count_prior");
    cr_assert_eq(json_real_value(json_object_get(cp, "bonus")), 6.5, "survives a save");
    cr_assert_eq(json_real_value(json_object_get(cp, "absent")), 0.0);
    json_decref(meta);
    char dir2[600];
    snprintf(dir2, sizeof dir2, "%s-saved", dir);
    cr_assert_neq(deg_ckpt_save(k, dir2, "{\"count_prior\": 1}", 0), DEG_OK, "reserved key");
    deg_ckpt_free(k);
}

/* Count scales: the nouns a score's name, title or description counts, only when
 * every level is labelled with a count range; the level the lists' count falls in. */
Test(countprior, scale_nouns_and_levels)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"number_of_targets_level\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2,"
        "\"x-levels\":{\"0\":\"0 to 1\",\"1\":\"2 to 3\",\"2\":\"4 or more\"},"
        "\"description\":\"the number of targets as a band on a 0-2 scale\"},"
        "\"x\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3,"
        "\"x-levels\":{\"1\":\"0\",\"2\":\"1-2\",\"3\":\"3+\"},"
        "\"description\":\"which band the number of commands falls in\"},"
        "\"keywordCount\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2,"
        "\"x-levels\":{\"0\":\"0\",\"1\":\"1\",\"2\":\"more than 1: several\"}},"
        "\"numberOfKeysScale\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1,"
        "\"x-levels\":{\"0\":\"few\",\"1\":\"many\"}},"
        "\"severity\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2,"
        "\"x-levels\":{\"0\":\"0\",\"1\":\"1\",\"2\":\"2\"}},"
        "\"number_of_targets_band\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2,"
        "\"x-levels\":{\"0\":\"4 or more\",\"1\":\"2 to 3\",\"2\":\"0 to 1\"}},"
        "\"number_of_targets_bucket\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1,"
        "\"x-levels\":{\"0\":\"0 to 1\",\"1\":\"5 or more\"}},"
        "\"number_of_targets_scale\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2,"
        "\"x-levels\":{\"0\":\"none\",\"1\":\"1 to 2\",\"2\":\"3 or more\"}},"
        "\"number_of_targets_tier\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1,"
        "\"x-levels\":{\"0\":\"1 to 0\",\"1\":\"2 or more\"}}}}";
    static const struct {
        const char *name;
        size_t n;
        const char *nouns[3];
        int level;       /* judged on CTX */
        size_t count;
    } W[] = {
        {"number_of_targets_level", 2, {"targets", "targets"}, 1, 3},
        {"x", 1, {"commands"}, 2, 4},
        {"keywordCount", 1, {"keyword"}, -1, 0}, /* no list named: the heads alone */
        {"numberOfKeysScale", 0, {NULL}, -1, 0}, /* labels are no counts */
        {"severity", 0, {NULL}, -1, 0},          /* no noun counted */
        {"number_of_targets_band", 1, {"targets"}, 1, 3}, /* levels list ranges high to low */
        {"number_of_targets_bucket", 1, {"targets"}, -1, 3}, /* 3 falls between the ranges */
        {"number_of_targets_scale", 1, {"targets"}, 2, 3}, /* "none" is the range of 0 */
        {"number_of_targets_tier", 0, {NULL}, -1, 0},      /* "1 to 0" is no range */
    };
    const char *ctx = "Targets:\n* a\n* b\n* c\n\nCommands: w, x, y and z\n";
    deg_plan *p = NULL;
    char *errs = NULL;
    cr_assert_eq(deg_plan_compile(schema, strlen(schema), &p, &errs), DEG_OK, "%s", errs);
    const dg_plan *P = (const dg_plan *)p;
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    for (size_t i = 0; i < sizeof W / sizeof W[0]; i++) {
        const dg_field_plan *f = NULL;
        for (size_t j = 0; j < P->n_fields; j++)
            if (!strcmp(P->fields[j].path.seg[0], W[i].name)) f = &P->fields[j];
        cr_assert_not_null(f, "%s", W[i].name);
        char nouns[3][DG_KEY_MAX_LEN + 1];
        size_t n = dg_count_scale_nouns(f, nouns);
        cr_assert_eq(n, W[i].n, "%s: %zu nouns", W[i].name, n);
        for (size_t k = 0; k < n; k++) cr_assert_str_eq(nouns[k], W[i].nouns[k], "%s", W[i].name);
        int li;
        size_t count;
        cr_assert_eq(dg_count_scale_judge(&ls, f, &li, &count), W[i].level, "%s", W[i].name);
        cr_assert_eq(count, W[i].count, "%s", W[i].name);
        cr_assert_eq(li >= 0, W[i].count > 0, "%s: the list counted", W[i].name);
    }
    dg_lists_free(&ls);
    deg_plan_free(p);
}

/* x-levels labels as count ranges (plan.h dg_level_count_range). */
Test(countprior, level_count_ranges)
{
    static const struct {
        const char *label;
        int ok;
        size_t lo, hi;
    } C[] = {
        {"7", 1, 7, 7},
        {"0 to 19", 1, 0, 19},
        {" 2-3: a few", 1, 2, 3},
        {"2\xe2\x80\x93" "3", 1, 2, 3},
        {"4..9", 1, 4, 9},
        {"40 or more", 1, 40, SIZE_MAX},
        {"20+", 1, 20, SIZE_MAX},
        {"At least 3", 1, 3, SIZE_MAX},
        {">= 3", 1, 3, SIZE_MAX},
        {"more than 5", 1, 6, SIZE_MAX},
        {"over 5", 1, 6, SIZE_MAX},
        {"> 5", 1, 6, SIZE_MAX},
        {"none", 1, 0, 0},
        {"Zero: nothing listed", 1, 0, 0},
        {"no", 1, 0, 0},
        {"no idea", 0, 0, 0},
        {"nonexistent", 0, 0, 0},
        {"19 to 0", 0, 0, 0},
        {"few", 0, 0, 0},
        {"1.5", 0, 0, 0},
        {"-1", 0, 0, 0},
        {"3 apples", 0, 0, 0},
        {"1234567890", 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        size_t lo = 0, hi = 0;
        cr_assert_eq(dg_level_count_range(C[i].label, &lo, &hi), C[i].ok, "%s", C[i].label);
        if (!C[i].ok) continue;
        cr_assert_eq(lo, C[i].lo, "%s: lo %zu", C[i].label, lo);
        cr_assert_eq(hi, C[i].hi, "%s: hi %zu", C[i].label, hi);
    }
}

/* deg_fill with the count prior on: every count scale takes the level of its list's
 * count and meta names the list; random heads alone get some wrong; a scale whose
 * list is not written (Before) and a score that counts nothing keep the heads'. */
Test(countprior, fill_scales)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"number_of_after_band\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2,"
        "\"x-levels\":{\"0\":\"0 to 1\",\"1\":\"2 to 3\",\"2\":\"4 or more\"}},"
        "\"numberOfBeforeLevel\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2,"
        "\"x-levels\":{\"0\":\"0\",\"1\":\"1\",\"2\":\"2 or more\"}},"
        "\"wants_count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3,"
        "\"x-levels\":{\"1\":\"0\",\"2\":\"1\",\"3\":\"2+\"}},"
        "\"mood\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2,"
        "\"x-levels\":{\"0\":\"low\",\"1\":\"mid\",\"2\":\"high\"}},"
        "\"number_of_after_bucket\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1,"
        "\"x-levels\":{\"0\":\"0 to 1\",\"1\":\"3 or more\"}}}}";
    static const char *const NAMES[] = {"number_of_after_band", "wants_count"};
    static const int WANT[] = {1, 1};  /* After: 2 items; Wants: 1 */
    static const json_int_t MIN[] = {0, 1};
    static const char *TINY[] = {"tiny-llama", "tiny-qwen3"};
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/count-scale-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        json_t *resp[2];
        for (int on = 0; on < 2; on++) {
            deg_ckpt *k = NULL;
            if (!on) {
                k = tu_random_ckpt(model, 11, dir, NULL, -1);
            } else {
                tu_set_meta(dir, "count_prior", json_pack("{s:f, s:f}", "bonus", 500.0, "absent",
                                                          400.0));
                cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
            }
            json_t *req = json_pack("{s:s, s:o}", "context", FCTX, "schema",
                                    json_loads(schema, 0, NULL));
            char *rq = json_dumps(req, 0), *out = NULL;
            json_decref(req);
            cr_assert_eq(deg_fill(k, rq, strlen(rq), &out, NULL), DEG_OK, "%s", deg_errmsg());
            resp[on] = json_loads(out, 0, NULL);
            free(rq);
            free(out);
            deg_ckpt_free(k);
        }
        json_t *v0 = json_object_get(resp[0], "value"), *v = json_object_get(resp[1], "value");
        json_t *meta = json_object_get(resp[1], "meta");
        int differ = 0;
        for (size_t i = 0; i < 2; i++) {
            json_int_t got = json_integer_value(json_object_get(v, NAMES[i]));
            cr_assert_eq(got, MIN[i] + WANT[i], "%s: %s = %lld", TINY[mi], NAMES[i],
                         (long long)got);
            differ += json_integer_value(json_object_get(v0, NAMES[i])) != MIN[i] + WANT[i];
        }
        cr_assert_gt(differ, 0, "random heads alone gave every level");
        json_t *m = json_object_get(meta, "/number_of_after_band");
        cr_assert_str_eq(json_string_value(json_object_get(m, "list_key")), "after");
        cr_assert_eq(json_integer_value(json_object_get(m, "list_items")), 2);
        /* 2 After items fall between the gap scale's ranges: the heads', meta counted */
        m = json_object_get(meta, "/number_of_after_bucket");
        cr_assert_str_eq(json_string_value(json_object_get(m, "list_key")), "after");
        cr_assert_eq(json_integer_value(json_object_get(m, "list_items")), 2);
        cr_assert(json_equal(json_object_get(v, "number_of_after_bucket"),
                             json_object_get(v0, "number_of_after_bucket")), "gap: the heads'");
        for (int i = 0; i < 2; i++) {
            const char *name = i ? "mood" : "numberOfBeforeLevel", *ptr = i ? "/mood"
                                                                             : "/numberOfBeforeLevel";
            cr_assert_null(json_object_get(json_object_get(meta, ptr), "list_key"), "%s", name);
            cr_assert(json_equal(json_object_get(v, name), json_object_get(v0, name)),
                      "%s: the heads'", name);
        }
        json_decref(resp[0]);
        json_decref(resp[1]);
    }
}
