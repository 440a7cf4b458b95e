/* The mention prior (lib/deg/mentions.h): a boolean field's subject in the clauses of
 * the context, negated or not; deg.json validation; deg_fill on the tiny random models,
 * where the prior (at a weight no random head outweighs) alone decides booleans and
 * nullable booleans. Verdicts below are the rule's, worked out by hand. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_fixture.h"
#include "deg.h"
#include "deg/mentions.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static dg_mention judge(const char *name, const char *desc, const char *ctx, int *neg)
{
    return dg_mention_judge_name(name, desc, ctx, strlen(ctx), neg);
}

Test(mentions, verdicts)
{
    static const struct {
        const char *name, *desc, *ctx;
        dg_mention want;
        int negated;
    } C[] = {
        {"breakfast_included", NULL, "Rooms from 95 EUR. Breakfast included. Free Wi-Fi.",
         DG_MENTION_HOLDS, 0},
        /* negation after the subject, in the same clause */
        {"breakfast_included", NULL, "Breakfast is not included (served for 9 GBP).",
         DG_MENTION_NOT, 0},
        /* predicate words need not be written: "no pets" names pets_allowed */
        {"pets_allowed", NULL, "Sorry, no pets. Available from May.", DG_MENTION_NOT, 0},
        {"petsAllowed", NULL, "Pets welcome.", DG_MENTION_HOLDS, 0},
        /* a negating prefix on the subject word */
        {"furnished", NULL, "Two rooms. Unfurnished, no balcony.", DG_MENTION_NOT, 0},
        {"smoking", NULL, "A non-smoking room", DG_MENTION_NOT, 0},
        {"has_patch", NULL, "Crash on start. No patch yet.", DG_MENTION_NOT, 0},
        {"has_patch", NULL, "Crash on start; patch attached", DG_MENTION_HOLDS, 0},
        /* number folded; "isn't" (ASCII and U+2019) negates */
        {"prerequisites_required", NULL, "Prerequisite: Compilers I.", DG_MENTION_HOLDS, 0},
        {"online", NULL, "The course isn't online.", DG_MENTION_NOT, 0},
        {"online", NULL, "The course isn\xe2\x80\x99t online.", DG_MENTION_NOT, 0},
        /* every subject word in one clause; the clause ends at "," */
        {"free_entry", NULL, "Entry is free!", DG_MENTION_HOLDS, 0},
        {"free_entry", NULL, "Entry: 5 EUR, free drinks", DG_MENTION_ABSENT, 0},
        /* "but" starts a clause: "not" negates the first one only */
        {"parking", NULL, "Not in the centre but parking is free", DG_MENTION_HOLDS, 0},
        /* clauses that disagree: no verdict */
        {"regression", NULL, "Not a regression. Well, a regression after all.",
         DG_MENTION_NONE, 0},
        /* negated fields read the verdict negated; absent stays absent */
        {"not_free", NULL, "Entry is free!", DG_MENTION_NOT, 1},
        {"noPets", NULL, "Sorry, no pets.", DG_MENTION_HOLDS, 1},
        {"not_gift", "the opposite of: is the order a gift?", "Your order is confirmed.",
         DG_MENTION_ABSENT, 1},
        {"x", "the opposite of: free", "Entry is free.", DG_MENTION_NOT, 1},
        /* no subject: digits, short words, only linking/predicate words, too many words */
        {"section_is_1", NULL, "Section 1", DG_MENTION_NONE, 0},
        {"is_ok", NULL, "It is ok.", DG_MENTION_NONE, 0},
        {"is_allowed", NULL, "Allowed.", DG_MENTION_NONE, 0},
        {"one_two_three_four_five", NULL, "one two three four five", DG_MENTION_NONE, 0},
        /* an HTML row is one clause: its "false" cell negates */
        {"find_module", NULL, "<tr><th>Find module</th><td>false</td></tr>",
         DG_MENTION_NOT, 0},
        {"resolved", NULL, "[2024-04-06] RESOLVED", DG_MENTION_HOLDS, 0},
        /* a label's yes/no value decides ("commented" = "comments": participle folded) */
        {"htmlAvailable", NULL, "index: /usr/share/info\nhas_html: false\n", DG_MENTION_NOT, 0},
        {"commented", NULL, "HAS COMMENTS:\tnein  \n", DG_MENTION_NOT, 0},
        {"commented", NULL, "| Has comments   | oui |", DG_MENTION_HOLDS, 0},
        {"commented", NULL, "Has comments = true", DG_MENTION_HOLDS, 0},
        {"commented", NULL, "Comments: not allowed", DG_MENTION_HOLDS, 0}, /* a label: value not yes/no */
        /* a negation inside the name: no subject */
        {"licenseNotMentioned", NULL, "The license is GPL.", DG_MENTION_NONE, 0},
        /* a count is no mention */
        {"OneTimezone", NULL, "one timezone", DG_MENTION_NONE, 0},
        {"multipleTimezones", NULL, "Timezones: several", DG_MENTION_NONE, 0},
        {"resolved", NULL, "", DG_MENTION_ABSENT, 0},
        /* a verb of naming is no subject word (0.23.0) */
        {"mentions_bsd", NULL, "use the BSD editline package", DG_MENTION_HOLDS, 0},
        {"mentions_bsd", NULL, "It is not BSD licensed.", DG_MENTION_HOLDS, 0},
        {"mentionsCatman", NULL, "Expunge catman pages which have not been read.",
         DG_MENTION_HOLDS, 0},
        {"mentions_bsd", NULL, "GPL only.", DG_MENTION_ABSENT, 0},
        {"usesSystemd", NULL, "No systemd here.", DG_MENTION_NOT, 0},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        int neg = -1;
        dg_mention v = judge(C[i].name, C[i].desc, C[i].ctx, &neg);
        cr_assert_eq(v, C[i].want, "case %zu (%s): %d, want %d", i, C[i].name, v, C[i].want);
        if (C[i].want != DG_MENTION_NONE)
            cr_assert_eq(neg, C[i].negated, "case %zu (%s): negated %d", i, C[i].name, neg);
    }
}

Test(mentions, deg_json_validation)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    snprintf(dir, sizeof dir, "%s/mention-bad-%d", DEG_BUILD_ROOT, (int)getpid());
    cr_assert_eq(deg_ckpt_create_random(model, 3, dir), DEG_OK, "%s", deg_errmsg());
    const char *bad[] = {"{\"bonus\": 1}", "{\"absent\": 1}", "[1, 2]", "{\"bonus\": \"x\", \"absent\": 1}",
                         "{\"bonus\": 1, \"absent\": 1, \"other\": 2}",
                         "{\"bonus\": -1, \"absent\": 1}", "{\"bonus\": 1, \"absent\": 1e39}"};
    tu_assert_meta_rejected(dir, "mention_prior", bad, sizeof bad / sizeof bad[0]);
    tu_set_meta(dir, "mention_prior", json_pack("{s:f, s:f}", "bonus", 10.0, "absent", 2.5));
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    json_t *meta = tu_saved_meta(k, dir);
    json_t *mp = json_object_get(meta, "mention_prior");
    cr_assert_eq(json_real_value(json_object_get(mp, "bonus")), 10.0, "survives a save");
    cr_assert_eq(json_real_value(json_object_get(mp, "absent")), 2.5);
    json_decref(meta);
    char dir2[600];
    snprintf(dir2, sizeof dir2, "%s-saved", dir);
    cr_assert_neq(deg_ckpt_save(k, dir2, "{\"mention_prior\": 1}", 0), DEG_OK, "reserved key");
    deg_ckpt_free(k);
}

static const char CTX[] = "Seaview Guesthouse, Brighton. Breakfast is not included. "
                          "Free private parking. Dogs welcome. Entry is free!";
static const char SCHEMA[] =
    "{\"type\": \"object\", \"properties\": {"
    "\"breakfast_included\": {\"type\": \"boolean\"},"
    "\"parking_available\": {\"type\": \"boolean\"},"
    "\"wifi\": {\"type\": \"boolean\"},"
    "\"not_free\": {\"type\": \"boolean\", \"description\": \"the opposite of: free\"},"
    "\"p1\": {\"type\": [\"boolean\", \"null\"], \"title\": \"Breakfast included\"},"
    "\"parking\": {\"type\": [\"boolean\", \"null\"]},"
    "\"pool\": {\"enum\": [null, false, true]},"
    "\"stars\": {\"enum\": [\"one\", \"two\", \"three\"]},"
    "\"category_is_audio\": {\"type\": \"boolean\"}}}";

/* With the prior at a weight beyond any random head: booleans and nullable booleans
 * take its verdicts, with meta saying so; other choices keep their heads. */
Test(mentions, fill_follows_the_verdicts)
{
    static const char *TINY[] = {"tiny-llama", "tiny-qwen3"};
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/mention-fill-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        deg_ckpt *k0 = tu_random_ckpt(model, 11, dir, NULL, -1);
        json_t *r0 = tu_fill(k0, CTX, SCHEMA, NULL);
        deg_ckpt_free(k0);
        tu_set_meta(dir, "mention_prior", json_pack("{s:f, s:f}", "bonus", 500.0, "absent", 400.0));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        deg_ckpt_set_debug(k, 1); /* as tu_random_ckpt: meta "raw" digests */
        json_t *r = tu_fill(k, CTX, SCHEMA, NULL);
        json_t *v = json_object_get(r, "value"), *meta = json_object_get(r, "meta");
        cr_assert(json_is_false(json_object_get(v, "breakfast_included")), "%s", TINY[mi]);
        cr_assert(json_is_true(json_object_get(v, "parking_available")));
        cr_assert(json_is_false(json_object_get(v, "wifi")), "absent: does not hold");
        cr_assert(json_is_false(json_object_get(v, "not_free")), "free is written");
        /* "p1" has no subject (a digit): its title's is read */
        cr_assert(json_is_false(json_object_get(v, "p1")), "title: breakfast not included");
        cr_assert(json_is_true(json_object_get(v, "parking")));
        cr_assert(json_is_null(json_object_get(v, "pool")), "not stated: null");
        json_t *m = json_object_get(meta, "/breakfast_included");
        cr_assert_str_eq(json_string_value(json_object_get(m, "mention")), "does_not_hold");
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(meta, "/wifi"),
                                                           "mention")), "absent");
        m = json_object_get(meta, "/pool");
        cr_assert_str_eq(json_string_value(json_object_get(m, "mention")), "absent");
        cr_assert(json_is_false(json_object_get(m, "head")), "the head is dropped");
        json_t *pr = json_object_get(m, "probabilities");
        cr_assert_eq(json_array_size(pr), 3);
        /* options [null, false, true]: null gets e^(400/T) over two e^0 */
        cr_assert_gt(json_real_value(json_array_get(pr, 0)), 0.99);
        cr_assert_float_eq(json_real_value(json_array_get(pr, 1)),
                           json_real_value(json_array_get(pr, 2)), 1e-12);
        /* a choice of strings keeps its head: bitwise the random checkpoint's */
        cr_assert(json_equal(json_object_get(v, "stars"),
                             json_object_get(json_object_get(r0, "value"), "stars")));
        cr_assert(json_equal(json_object_get(meta, "/stars"),
                             json_object_get(json_object_get(r0, "meta"), "/stars")));
        cr_assert_null(json_object_get(json_object_get(meta, "/stars"), "mention"));
        /* a comparison ("K is V", compareprior.h) gets no mention verdict: the heads' */
        cr_assert_null(json_object_get(json_object_get(meta, "/category_is_audio"), "mention"));
        cr_assert(json_equal(json_object_get(v, "category_is_audio"),
                             json_object_get(json_object_get(r0, "value"), "category_is_audio")));
        json_decref(r);
        json_decref(r0);
        deg_ckpt_free(k);
    }
}

/* A "has X" boolean the count prior finds no list of X for (its closed-world answer:
 * 0 items, false) takes a sentence's verdict instead (libdeg 0.21.0), running text only:
 * a "Key=value" line naming X in its key says nothing; nothing naming X: the count
 * prior's false. */
Test(mentions, has_x_reads_a_sentence)
{
    static const char *TINY[] = {"tiny-llama", "tiny-qwen3"};
    const char *ctx = "Sunny flat with a balcony. No lift in the building.\nRemainAfterExit=yes\n";
    const char *schema = "{\"type\": \"object\", \"properties\": {"
                         "\"has_balcony\": {\"type\": \"boolean\"},"
                         "\"has_lift\": {\"type\": \"boolean\"},"
                         "\"has_after\": {\"type\": \"boolean\"},"
                         "\"has_garden\": {\"type\": \"boolean\"}}}";
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/mention-hasx-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        deg_ckpt *k0 = tu_random_ckpt(model, 11, dir, NULL, -1);
        deg_ckpt_free(k0);
        tu_set_meta(dir, "count_prior", json_pack("{s:f, s:f}", "bonus", 500.0, "absent", 400.0));
        tu_set_meta(dir, "mention_prior", json_pack("{s:f, s:f}", "bonus", 500.0, "absent", 400.0));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        json_t *r = tu_fill(k, ctx, schema, NULL);
        json_t *v = json_object_get(r, "value"), *meta = json_object_get(r, "meta");
        cr_assert(json_is_true(json_object_get(v, "has_balcony")), "%s: stated", TINY[mi]);
        cr_assert(json_is_false(json_object_get(v, "has_lift")), "%s: negated", TINY[mi]);
        cr_assert(json_is_false(json_object_get(v, "has_after")), "%s: a key is no sentence",
                  TINY[mi]);
        cr_assert(json_is_false(json_object_get(v, "has_garden")), "%s: untold", TINY[mi]);
        json_t *m = json_object_get(meta, "/has_balcony");
        cr_assert_str_eq(json_string_value(json_object_get(m, "mention")), "holds");
        cr_assert(json_is_null(json_object_get(m, "list_key")), "the count prior's meta stays");
        cr_assert_null(json_object_get(json_object_get(meta, "/has_after"), "mention"));
        cr_assert_null(json_object_get(json_object_get(meta, "/has_garden"), "mention"));
        json_decref(r);
        deg_ckpt_free(k);
    }
}
