/* JSON pointers (RFC 6901) and local $refs (lib/deg/jsonptr.h): escaping, joining,
 * evaluation and $ref resolution, with the RFC's own examples. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "deg/jsonptr.h"

/* RFC 6901 §5's example document. */
static const char *RFC_DOC =
    "{\"foo\": [\"bar\", \"baz\"], \"\": 0, \"a/b\": 1, \"c%d\": 2, \"e^f\": 3, \"g|h\": 4,"
    " \"i\\\\j\": 5, \"k\\\"l\": 6, \" \": 7, \"m~n\": 8}";

Test(jsonptr, escape_and_join)
{
    const char *seg = "a/b~c";
    cr_assert_eq(dg_jsonptr_escaped_len(seg, 5), 7);
    char buf[16];
    *dg_jsonptr_escape(buf, seg, 5) = 0;
    cr_expect_str_eq(buf, "a~1b~0c");
    char *k = dg_loc_key("/x", "m~n/");
    cr_expect_str_eq(k, "/x/m~0n~1");
    free(k);
    k = dg_loc_key("", "");
    cr_expect_str_eq(k, "/");
    free(k);
    k = dg_loc_index("/foo", 12);
    cr_expect_str_eq(k, "/foo/12");
    free(k);
}

Test(jsonptr, rfc6901_section5_examples)
{
    json_t *doc = json_loads(RFC_DOC, 0, NULL);
    cr_assert_not_null(doc);
    struct { const char *ptr; json_int_t want; } ints[] = {
        {"/", 0}, {"/a~1b", 1}, {"/c%d", 2}, {"/e^f", 3}, {"/g|h", 4}, {"/i\\j", 5},
        {"/k\"l", 6}, {"/ ", 7}, {"/m~0n", 8}};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        int bad = -1;
        const json_t *v = dg_jsonptr_get(doc, ints[i].ptr, &bad);
        cr_expect(json_is_integer(v) && json_integer_value(v) == ints[i].want, "%s", ints[i].ptr);
        cr_expect_eq(bad, 0);
    }
    cr_expect_eq(dg_jsonptr_get(doc, "", NULL), doc);
    cr_expect_str_eq(json_string_value(dg_jsonptr_get(doc, "/foo/0", NULL)), "bar");
    cr_expect_str_eq(json_string_value(dg_jsonptr_get(doc, "/foo/1", NULL)), "baz");
    json_decref(doc);
}

Test(jsonptr, misses_and_syntax_errors)
{
    json_t *doc = json_loads("{\"foo\": [\"bar\", \"baz\"], \"n\": 1}", 0, NULL);
    const char *missing[] = {"/foo/2", "/foo/99999999999999999999999", "/nope", "/n/x",
                             "/foo/0/x"};
    for (size_t i = 0; i < sizeof missing / sizeof *missing; i++) {
        int bad = -1;
        cr_expect_null(dg_jsonptr_get(doc, missing[i], &bad), "%s", missing[i]);
        cr_expect_eq(bad, 0, "%s", missing[i]);
    }
    /* RFC 6901 §4: an array index is "0" or digits without a leading 0; "-" names
     * the element after the last, which does not exist */
    const char *not_index[] = {"/foo/01", "/foo/-", "/foo/+1", "/foo/ 1", "/foo/", "/foo/-1"};
    for (size_t i = 0; i < sizeof not_index / sizeof *not_index; i++) {
        int bad = -1;
        cr_expect_null(dg_jsonptr_get(doc, not_index[i], &bad), "%s", not_index[i]);
        cr_expect_eq(bad, 2, "%s", not_index[i]);
    }
    const char *syntax[] = {"foo", "/foo~", "/fo~2o", "/~/x"};
    for (size_t i = 0; i < sizeof syntax / sizeof *syntax; i++) {
        int bad = -1;
        cr_expect_null(dg_jsonptr_get(doc, syntax[i], &bad), "%s", syntax[i]);
        cr_expect_eq(bad, 1, "%s", syntax[i]);
    }
    json_decref(doc);
}

/* $ref: percent-decoding comes first (RFC 6901 §6), so %2F separates segments and
 * %7E0 is an escaped "~". */
Test(jsonptr, ref_resolve)
{
    json_t *doc = json_loads("{\"$defs\": {\"a b\": {\"t\": 1}, \"m~n\": {\"t\": 2},"
                             " \"x\": {\"y\": {\"t\": 3}}, \"x/y\": {\"t\": 4}}}", 0, NULL);
    struct { const char *ref, *loc; json_int_t t; } ok[] = {
        {"#/$defs/a%20b", "/$defs/a b", 1}, {"#/$defs/m~0n", "/$defs/m~0n", 2},
        {"#/$defs/m%7E0n", "/$defs/m~0n", 2}, {"#/$defs/x%2Fy", "/$defs/x/y", 3},
        {"#/$defs/x~1y", "/$defs/x~1y", 4}};
    char why[320], *tloc;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        const json_t *v = dg_ref_resolve(doc, ok[i].ref, &tloc, why, sizeof why);
        cr_assert_not_null(v, "%s: %s", ok[i].ref, why);
        cr_expect_eq(json_integer_value(json_object_get(v, "t")), ok[i].t, "%s", ok[i].ref);
        cr_expect_str_eq(tloc, ok[i].loc);
        free(tloc);
    }
    cr_expect_eq(dg_ref_resolve(doc, "#", &tloc, why, sizeof why), doc);
    cr_expect_str_eq(tloc, "");
    free(tloc);
    struct { const char *ref, *why; } bad[] = {
        {"other.json#/a", "is not local"}, {"#/$defs/a%2", "bad percent-encoding at offset 9"},
        {"#defs", "plain-name fragments"}, {"#/$defs/m~2n", "bad JSON pointer escape"},
        {"#/$defs/zz", "points to nothing"},
        /* found by the fuzz differential against python-jsonschema: */
        /* RFC 3986 §2.1: '%' starts %XX ("%p", "%25" is a '%') */
        {"#/$defs/a%p", "bad percent-encoding at offset 9"},
        /* §3.5: a space, '#', '%'-less non-ASCII are not fragment characters */
        {"#/$defs/a b", "holds byte 0x20 at offset 9"}, {"#/$defs/a#b", "holds '#' at offset 9"},
        {"#/$defs/\xc3\xa9", "holds byte 0xC3"},
        /* JSON Schema (2020-12 core §5): "%2F" as the first character is not "/":
         * a plain name, not a pointer */
        {"#%2F$defs%2Fx", "plain-name fragments"},
        /* a NUL or bytes that are not UTF-8 once decoded name nothing */
        {"#/$defs/a%00b", "%00 decodes to a NUL"}, {"#/$defs/%ff", "not UTF-8"},
        {"#/$defs/x/y/-1", "points to nothing"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_expect_null(dg_ref_resolve(doc, bad[i].ref, &tloc, why, sizeof why), "%s", bad[i].ref);
        cr_expect_null(tloc);
        cr_expect(strstr(why, bad[i].why) != NULL, "%s: %s", bad[i].ref, why);
    }
    json_decref(doc);
}
