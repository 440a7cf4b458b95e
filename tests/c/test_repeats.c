/* The generate_stop_repeat decoding rule (lib/deg/repeats.h, deg_fill.h): the cut
 * of generated text before its first repeated line, and the checkpoint flag. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_fixture.h"
#include "deg.h"
#include "deg/repeats.h"

/* Cut length of each text, as the rule says (written out by hand). */
Test(repeats, cut_before_the_first_repeated_line)
{
    static const struct {
        const char *t;
        size_t cut;
    } C[] = {
        {"RENICE(1)\n\nRENICE(1)\n\nRENICE(1)\n", 9},  /* blank lines and LFs dropped */
        {"A\nB\nA\n", 3},                               /* "A\nB" */
        {"A\nB\n  A \t\n", 3},                          /* blanks trimmed in the compare */
        {"A\nB\nA", 5},                                 /* the last line is not complete yet */
        {"A\n\n\nB\n", 6},                              /* blank lines never repeat */
        {"one\ntwo\nthree\n", 14},                      /* no repeat: the whole text */
        {"x\ny\ny\nx\n", 3},                            /* the first repeat: "y" */
        {"", 0},
        {"\n\n", 2},
        {"abc\nab\nabc d\n", 13},                       /* lines equal as wholes only */
        {"A\nA\n", 1},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++)
        cr_assert_eq(dg_repeat_cut(C[i].t, strlen(C[i].t), NULL, 0), C[i].cut,
                     "case %zu: %zu, want %zu", i, dg_repeat_cut(C[i].t, strlen(C[i].t), NULL, 0),
                     C[i].cut);
}

/* A line of the prompt (KNOWN VALUES and the row's header) counts as an earlier line,
 * its last line too, once the text has a non-blank line of its own (not a prompt line);
 * lines of the text still do. */
Test(repeats, cut_before_a_line_of_the_prompt)
{
    static const char P[] = "KNOWN VALUES:\n/name = \"newer\"\nWRITE /summary\n"
                            "LIMITS: maxLength 200;\nVALUE:";
    static const struct {
        const char *t;
        size_t cut;
    } C[] = {
        {"Debug symbols.\n\nLIMITS: maxLength 200;\n", 14},
        {"/name = \"newer\"\n/purpose = \"x\"\n", 31}, /* no text of its own before */
        {"\n  VALUE:\nmore\n", 15},                      /* a blank line is none either */
        {"Sum.\n  VALUE:\nmore\n", 4},                   /* the prompt's last line */
        {"/name = \"newer\"\nOwn.\nLIMITS: maxLength 200;\n", 20}, /* after "Own." */
        {"LIMITS: maxLength 200; and so on\n", 33},    /* lines equal as wholes only */
        {"A\nB\nA\n", 3},
        {"KNOWN VALUES:", 13},                          /* not complete yet */
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++)
        cr_assert_eq(dg_repeat_cut(C[i].t, strlen(C[i].t), P, strlen(P)), C[i].cut,
                     "case %zu: %zu, want %zu", i,
                     dg_repeat_cut(C[i].t, strlen(C[i].t), P, strlen(P)), C[i].cut);
}

/* deg.json "generate_stop_repeat": a bad value is a FormatError naming it; true loads
 * and survives a save. (A fill with the rule: tests/python/test_decoding_rules.py,
 * on the real model, whose greedy text loops.) */
Test(repeats, flag_is_checked_and_saved)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tests/goldens/tiny-llama", DEG_SOURCE_ROOT);
    snprintf(dir, sizeof dir, "%s/repeats-%d", DEG_BUILD_ROOT, (int)getpid());
    cr_assert_eq(deg_ckpt_create_random(model, 11, dir), DEG_OK, "%s", deg_errmsg());
    static const char *const bad[] = {"[true]", "{\"on\": true}"};
    tu_assert_meta_rejected(dir, "generate_stop_repeat", bad, sizeof bad / sizeof bad[0]);
    json_t *scalars[] = {json_string("yes"), json_integer(1), json_null()};
    deg_ckpt *k = NULL;
    for (size_t i = 0; i < 3; i++) {
        tu_set_meta(dir, "generate_stop_repeat", scalars[i]);
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_ERR_FORMAT, "value %zu", i);
        cr_assert(strstr(deg_errmsg(), "generate_stop_repeat"), "%s", deg_errmsg());
    }
    tu_set_meta(dir, "generate_stop_repeat", json_true());
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    json_t *meta = tu_saved_meta(k, dir);
    cr_assert(json_is_true(json_object_get(meta, "generate_stop_repeat")));
    json_decref(meta);
    deg_ckpt_free(k);
}
