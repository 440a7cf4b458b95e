/* Validator: the JSON Schema Test Suite cases that use only supported
 * keywords, plus error pointers and bad input. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deg.h"
#include "deg/validate.h"

#define SUITE "/usr/share/json-schema-test-suite/tests"

static const char *const SCHEMA_KW[] = {
    "type", "enum", "const", "anyOf", "oneOf", "properties", "required", "additionalProperties",
    "items", "minItems", "maxItems", "uniqueItems", "minLength", "maxLength", "pattern",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format", "$ref",
    "$defs", "definitions", "title", "description", "default", "examples", "$comment", "$schema",
    NULL};
static const char *const FORMATS[] = {"date", "date-time", "email", "uri", "uuid", NULL};

static int in_list(const char *const *l, const char *k)
{
    for (int i = 0; l[i]; i++)
        if (!strcmp(l[i], k)) return 1;
    return 0;
}

/* 1 if the schema uses only the keywords deg supports (no tuple items, local refs
 * only, formats deg checks); the suite's draft-04/06/07 cases run with that draft's
 * $schema, so deg ignores a $ref's siblings there as those drafts say. */
static int supported(const json_t *s)
{
    if (json_is_boolean(s)) return 1;
    if (!json_is_object(s)) return 0;
    const char *k;
    json_t *v;
    json_t *ref = json_object_get(s, "$ref");
    if (ref && (!json_is_string(ref) || json_string_value(ref)[0] != '#')) return 0;
    json_object_foreach((json_t *)s, k, v) {
        if (!in_list(SCHEMA_KW, k)) return 0;
        if (!strcmp(k, "properties") || !strcmp(k, "$defs") || !strcmp(k, "definitions")) {
            if (!json_is_object(v)) return 0;
            const char *k2;
            json_t *v2;
            json_object_foreach(v, k2, v2) if (!supported(v2)) return 0;
        } else if (!strcmp(k, "items") || !strcmp(k, "additionalProperties")) {
            if (!supported(v)) return 0;
        } else if (!strcmp(k, "anyOf") || !strcmp(k, "oneOf")) {
            if (!json_is_array(v)) return 0;
            for (size_t i = 0; i < json_array_size(v); i++)
                if (!supported(json_array_get(v, i))) return 0;
        } else if (!strcmp(k, "format")) {
            if (!json_is_string(v) || !in_list(FORMATS, json_string_value(v))) return 0;
        }
    }
    return 1;
}

typedef struct {
    int run, pass, skipped_groups, parse_skipped;
} tally;

/* The suite's cases of one draft directory, each schema given that draft's $schema. */
static void run_file(const char *path, const char *draft_uri, tally *t)
{
    json_error_t err;
    /* Integers beyond int64 make jansson fail: load per case below. */
    json_t *groups = json_load_file(path, JSON_DECODE_ANY, &err);
    if (!groups) { t->parse_skipped++; return; }
    for (size_t g = 0; g < json_array_size(groups); g++) {
        json_t *grp = json_array_get(groups, g);
        json_t *schema = json_object_get(grp, "schema");
        if (!supported(schema)) { t->skipped_groups++; continue; }
        if (json_is_object(schema) && !json_object_get(schema, "$schema"))
            json_object_set_new(schema, "$schema", json_string(draft_uri));
        json_t *tests = json_object_get(grp, "tests");
        for (size_t i = 0; i < json_array_size(tests); i++) {
            json_t *tc = json_array_get(tests, i);
            int want = json_is_true(json_object_get(tc, "valid"));
            size_t n_err = 99;
            deg_status st = dg_validate(schema, json_object_get(tc, "data"), NULL, &n_err);
            t->run++;
            int got = st == DEG_OK && n_err == 0;
            if (st == DEG_OK && got == want) t->pass++;
            else
                cr_log_error("%s: \"%s\" / \"%s\": expected %s, got %s (%s)", path,
                             json_string_value(json_object_get(grp, "description")),
                             json_string_value(json_object_get(tc, "description")),
                             want ? "valid" : "invalid", got ? "valid" : "invalid",
                             st == DEG_OK ? "ok" : deg_errmsg());
        }
    }
    json_decref(groups);
}

static void run_dir(const char *dir, const char *draft_uri, tally *t)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char *names[256];
    int n = 0;
    while ((e = readdir(d)) && n < 256)
        if (strstr(e->d_name, ".json")) names[n++] = strdup(e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        run_file(p, draft_uri, t);
        free(names[i]);
    }
}

Test(validate, json_schema_test_suite)
{
    DIR *d = opendir(SUITE);
    if (!d) cr_skip_test("json-schema-test-suite is not installed (" SUITE ")");
    closedir(d);
    tally t = {0};
    static const char *const D4 = "http://json-schema.org/draft-04/schema#",
                             *const D6 = "http://json-schema.org/draft-06/schema#",
                             *const D7 = "http://json-schema.org/draft-07/schema#";
    const char *dirs[][2] = {{SUITE "/draft7", D7}, {SUITE "/draft6", D6}, {SUITE "/draft4", D4},
                             {SUITE "/draft7/optional/format", D7},
                             {SUITE "/draft6/optional/format", D6},
                             {SUITE "/draft4/optional/format", D4}};
    for (int i = 0; i < 6; i++) run_dir(dirs[i][0], dirs[i][1], &t);
    cr_log_info("JSON Schema Test Suite: %d/%d cases passed (%d groups skipped: unsupported keywords)",
                t.pass, t.run, t.skipped_groups);
    fprintf(stderr, "JSON Schema Test Suite: %d/%d cases passed (%d groups skipped: unsupported keywords)\n",
            t.pass, t.run, t.skipped_groups);
    cr_expect_gt(t.run, 300, "only %d cases ran", t.run);
    cr_expect_eq(t.pass, t.run, "%d of %d suite cases disagree", t.run - t.pass, t.run);
}

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, JSON_DECODE_ANY, &e);
    cr_assert_not_null(j, "bad test JSON %s: %s", s, e.text);
    return j;
}

Test(validate, error_pointers)
{
    json_t *s = J("{\"type\":\"object\",\"properties\":{\"a/b\":{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"maximum\":5}},"
                  "\"m~n\":{\"type\":\"string\",\"format\":\"date\"},\"e\":{\"$ref\":\"#/$defs/E\"}},"
                  "\"required\":[\"a/b\",\"zz\"],\"additionalProperties\":false,"
                  "\"$defs\":{\"E\":{\"enum\":[\"x\",\"y\"]}}}");
    json_t *v = J("{\"a/b\":[1,7,2.5],\"m~n\":\"2025-02-29\",\"e\":\"z\",\"extra\":1}");
    json_t *errs = json_array();
    size_t n = 0;
    cr_assert_eq(dg_validate(s, v, errs, &n), DEG_OK);
    char *got = json_dumps(errs, JSON_COMPACT);
    const char *want =
        "[{\"instance\":\"/a~1b/1\",\"schema\":\"/properties/a~1b/items/maximum\",\"keyword\":\"maximum\",\"msg\":\"value is greater than maximum\"},"
        "{\"instance\":\"/a~1b/2\",\"schema\":\"/properties/a~1b/items/type\",\"keyword\":\"type\",\"msg\":\"number is not of the schema's type\"},"
        "{\"instance\":\"/m~0n\",\"schema\":\"/properties/m~0n/format\",\"keyword\":\"format\",\"msg\":\"string is not a valid date\"},"
        "{\"instance\":\"/e\",\"schema\":\"/properties/e/$ref/enum\",\"keyword\":\"enum\",\"msg\":\"value is not one of the enum values\"},"
        "{\"instance\":\"\",\"schema\":\"/required\",\"keyword\":\"required\",\"msg\":\"required property \\\"zz\\\" is missing\"},"
        "{\"instance\":\"/extra\",\"schema\":\"/additionalProperties\",\"keyword\":\"additionalProperties\",\"msg\":\"property \\\"extra\\\" is not allowed\"}]";
    cr_expect_str_eq(got, want);
    cr_expect_eq(n, 6);
    free(got);
    json_decref(errs);
    json_decref(s);
    json_decref(v);
}

Test(validate, numbers_and_strings)
{
    struct { const char *s, *v; int ok; } T[] = {
        /* multipleOf is decimal-exact (issue 19 item 6; python-jsonschema divides
         * doubles: 0.3/0.1 = 2.9999999999999996, 4.02/0.01 = 401.99999999999994) */
        {"{\"multipleOf\":0.1}", "0.3", 1}, {"{\"multipleOf\":0.01}", "0.07", 1},
        {"{\"multipleOf\":0.01}", "4.02", 1}, {"{\"multipleOf\":0.01}", "4.025", 0},
        {"{\"multipleOf\":0.01}", "19.99", 1}, {"{\"multipleOf\":0.05}", "1.15", 1},
        {"{\"multipleOf\":0.05}", "1.16", 0}, {"{\"multipleOf\":2.5}", "7.5", 1},
        {"{\"multipleOf\":0.3}", "0.1", 0}, {"{\"multipleOf\":0.3333}", "1", 0},
        {"{\"multipleOf\":1e-8}", "12391239123", 1}, {"{\"multipleOf\":0.01}", "-4.02", 1},
        {"{\"multipleOf\":0.01}", "0", 1}, {"{\"multipleOf\":1e-300}", "1e300", 1},
        {"{\"multipleOf\":3}", "9223372036854775806", 1},
        {"{\"multipleOf\":100}", "1e2", 1}, {"{\"multipleOf\":0.2}", "1e-1", 0},
        {"{\"multipleOf\":0.0001}", "0.0075", 1},
        {"{\"multipleOf\":3}", "9", 1}, {"{\"multipleOf\":3}", "10", 0}, {"{\"multipleOf\":2}", "4.0", 1},
        {"{\"multipleOf\":2}", "4.5", 0}, {"{\"multipleOf\":0.123456789}", "1e308", 0},
        {"{\"maximum\":9007199254740992}", "9007199254740993", 0},
        {"{\"maximum\":9007199254740992.0}", "9007199254740993", 0},
        {"{\"minimum\":1}", "1.0", 1}, {"{\"exclusiveMinimum\":1}", "1.0", 0},
        {"{\"type\":\"integer\"}", "2.0", 1}, {"{\"type\":\"integer\"}", "2.5", 0},
        {"{\"type\":\"number\"}", "true", 0}, {"{\"enum\":[1,true]}", "1.0", 1}, {"{\"enum\":[true]}", "1", 0},
        {"{\"const\":{\"a\":[1,2]}}", "{\"a\":[1.0,2]}", 1}, {"{\"uniqueItems\":true}", "[1,1.0]", 0},
        {"{\"uniqueItems\":true}", "[1,true]", 1},
        {"{\"maxLength\":2}", "\"\\u00e9\\u00e9\"", 1}, {"{\"maxLength\":2}", "\"\\ud83d\\ude00xx\"", 0},
        {"{\"pattern\":\"^\\\\d+$\"}", "\"\\u0661\\u0662\"", 1}, {"{\"pattern\":\"b\"}", "\"abc\"", 1},
        {"{\"pattern\":\"^b\"}", "\"abc\"", 0}, {"{\"pattern\":\"\\\\u0041\"}", "\"A\"", 1},
        {"{\"type\":[\"string\",\"null\"]}", "null", 1},
        {"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", "3", 0},
        {"{\"oneOf\":[{\"const\":1,\"description\":\"one\"},{\"const\":2}]}", "2", 1},
        {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "3", 0},
        {"{\"format\":\"uuid\"}", "\"x\"", 0}, {"{\"format\":\"ipv4\"}", "\"x\"", 1},
        {"{\"format\":\"email\"}", "3", 1},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        json_t *s = J(T[i].s), *v = J(T[i].v);
        size_t n = 99;
        cr_expect_eq(dg_validate(s, v, NULL, &n), DEG_OK, "%s", deg_errmsg());
        cr_expect_eq(n == 0, T[i].ok, "schema %s value %s: %zu errors", T[i].s, T[i].v, n);
        json_decref(s);
        json_decref(v);
    }
}

Test(validate, public_api_and_bad_input)
{
    size_t n = 0;
    char *errs = NULL;
    cr_assert_eq(deg_validate("{\"type\":\"string\"}", "\"x\"", &n, &errs), DEG_OK);
    cr_expect_eq(n, 0);
    cr_expect_str_eq(errs, "[]");
    deg_free(errs);
    cr_assert_eq(deg_validate("{\"type\":\n \"string\",}", "1", &n, &errs), DEG_ERR_FORMAT);
    cr_expect(strstr(deg_errmsg(), "line 2"), "%s", deg_errmsg());
    cr_expect_null(errs);
    cr_assert_eq(deg_validate("{}", "\"\xff\"", &n, &errs), DEG_ERR_FORMAT);
    /* recursive $ref that never consumes the value */
    clock_t t0 = clock();
    cr_assert_eq(deg_validate("{\"$ref\":\"#\"}", "1", &n, &errs), DEG_ERR_SCHEMA);
    cr_expect(strstr(deg_errmsg(), "recursive"), "%s", deg_errmsg());
    cr_assert_eq(deg_validate("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}",
                              "1", &n, &errs), DEG_ERR_SCHEMA);
    /* recursion that consumes the value is fine */
    cr_assert_eq(deg_validate("{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}", "[[[[]]],[]]", &n, &errs), DEG_OK);
    deg_free(errs);
    cr_assert_eq(deg_validate("{\"$ref\":\"http://x/y\"}", "1", &n, &errs), DEG_ERR_SCHEMA);
    cr_assert_eq(deg_validate("{\"$ref\":\"#/nope\"}", "1", &n, &errs), DEG_ERR_SCHEMA);
    cr_assert_eq(deg_validate("{\"pattern\":\"(\"}", "\"a\"", &n, &errs), DEG_ERR_SCHEMA);
    cr_expect(strstr(deg_errmsg(), "offset"), "%s", deg_errmsg());
    /* 1 MB pattern: compiles or fails cleanly, bounded time */
    size_t big = 1 << 20;
    char *sch = malloc(big + 64);
    strcpy(sch, "{\"pattern\":\"");
    size_t o = strlen(sch);
    for (size_t i = 0; i < big; i++) sch[o + i] = "ab|"[i % 3];
    strcpy(sch + o + big, "\"}");
    deg_status st = deg_validate(sch, "\"zzz\"", &n, &errs);
    cr_expect(st == DEG_OK || st == DEG_ERR_SCHEMA, "%s", deg_errmsg());
    deg_free(errs);
    errs = NULL;
    free(sch);
    /* 10,000-deep value: a clear parse error (jansson's depth limit) */
    char *deep = malloc(20002);
    memset(deep, '[', 10000);
    memset(deep + 10000, ']', 10000);
    deep[20000] = 0;
    cr_expect_eq(deg_validate("{}", deep, &n, &errs), DEG_ERR_FORMAT);
    free(deep);
    cr_expect(clock() - t0 < 20 * CLOCKS_PER_SEC);
}

/* Issue 19 item 8: deg_validate refuses what it would not apply (the
 * compiler's unsupported keywords, anywhere in the schema) and schemas that
 * are not objects or booleans, instead of passing every value. */
Test(validate, unsupported_and_non_schemas_refused)
{
    struct { const char *s, *loc_kw; } bad[] = {
        {"{\"allOf\": [{\"minimum\": 10}]}", "unsupported keyword \"allOf\""},
        {"{\"not\": {\"type\": \"integer\"}}", "unsupported keyword \"not\""},
        {"{\"type\": \"object\", \"minProperties\": 2}", "unsupported keyword \"minProperties\""},
        {"{\"properties\": {\"a\": {\"if\": {}, \"then\": {}}}}", "schema at \"/properties/a/if\""},
        {"{\"anyOf\": [{\"type\": \"string\"}, {\"prefixItems\": []}]}", "schema at \"/anyOf/1/prefixItems\""},
        {"{\"$defs\": {\"d\": {\"contains\": {}}}}", "unsupported keyword \"contains\""},
        {"5", "a schema must be a JSON object or boolean, not integer"},
        {"\"{\\\"type\\\": \\\"integer\\\"}\"", "not string"},
        {"[{\"type\": \"integer\"}]", "not array"},
        {"null", "not null"},
        {"{\"properties\": {\"a\": 5}}", "schema at \"/properties/a\": a schema must be"},
        {"{\"items\": \"x\"}", "schema at \"/items\""},
        {"{\"anyOf\": {\"type\": \"string\"}}", "anyOf must be a non-empty array of schemas"},
        /* keyword values of the wrong meta-schema type (found by the fuzz
         * differential against python-jsonschema: deg gave verdicts) */
        {"{\"type\": \"Object\"}", "schema at \"/type\": type must be one of"},
        {"{\"items\": {\"type\": [\"string\", \"nul\"]}}", "schema at \"/items/type\""},
        {"{\"minimum\": true}", "schema at \"/minimum\": minimum must be a number"},
        {"{\"exclusiveMinimum\": true}", "exclusiveMinimum must be a number, not boolean"},
        {"{\"maxLength\": -1}", "maxLength must be a non-negative integer"},
        {"{\"required\": [\"a\", \"a\"]}", "required lists \"a\" twice"},
        {"{\"$schema\": \"http://example.com/s\"}", "unknown $schema"},
        /* a pattern that does not compile, where no string reaches it */
        {"{\"properties\": {\"a\": {\"pattern\": \"(abc\"}}}", "pattern does not compile"},
        /* a $ref to a non-schema (python-jsonschema crashes on it) */
        {"{\"$ref\": \"#/required/0\", \"required\": [\"a\"]}", "points to string, not a schema"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = 99;
        char *errs = NULL;
        deg_status s = deg_validate(bad[i].s, "5", &n, &errs);
        cr_expect_eq(s, DEG_ERR_SCHEMA, "%s: %s", bad[i].s, deg_status_name(s));
        cr_expect(strstr(deg_errmsg(), bad[i].loc_kw), "%s: %s", bad[i].s, deg_errmsg());
        cr_expect_null(errs);
    }
    /* draft-04: a boolean exclusiveMinimum / exclusiveMaximum makes the bound strict */
    const char *d4 = "{\"$schema\": \"http://json-schema.org/draft-04/schema#\", \"minimum\": 0, "
                     "\"exclusiveMinimum\": true, \"maximum\": 3, \"exclusiveMaximum\": true}";
    const char *vals[] = {"0", "0.5", "3", "2.5"};
    size_t want[] = {1, 0, 1, 0};
    for (size_t i = 0; i < 4; i++) {
        size_t n = 99;
        cr_expect_eq(deg_validate(d4, vals[i], &n, NULL), DEG_OK, "%s", deg_errmsg());
        cr_expect_eq(n, want[i], "draft-04 exclusive bounds, value %s: %zu", vals[i], n);
    }
    /* what it applies: const, unknown keywords ignored, a property named like a keyword */
    const char *ok[] = {"{\"const\": 5}", "{\"foo\": 1, \"x-bar\": 2}", "true",
                        "{\"properties\": {\"allOf\": {\"type\": \"integer\"}}}"};
    for (size_t i = 0; i < 4; i++) {
        size_t n = 99;
        char *errs = NULL;
        cr_expect_eq(deg_validate(ok[i], "5", &n, &errs), DEG_OK, "%s: %s", ok[i], deg_errmsg());
        cr_expect_eq(n, 0, "%s", ok[i]);
        deg_free(errs);
    }
}

/* Disagreements with python-jsonschema found by the fuzz differential
 * (tests/fuzz/diff.py), settled by the spec: deg's schema check now says what the
 * draft's meta-schema says, before the value is read. */
Test(validate, schema_check_by_the_draft)
{
    static const char *const D4 = "\"$schema\": \"http://json-schema.org/draft-04/schema#\"";
    char s[512];
    struct { const char *body, *value, *msg; } bad[] = {
        /* draft-04's meta-schema: "dependencies": {"exclusiveMinimum": ["minimum"]} */
        {"\"properties\": {\"a\": {\"exclusiveMinimum\": true, \"maximum\": 3}}", "{\"a\": 1}",
         "schema at \"/properties/a/exclusiveMinimum\": exclusiveMinimum needs minimum"},
        {"\"exclusiveMaximum\": false", "1", "exclusiveMaximum needs maximum beside it"},
        /* boolean schemas came with draft-06; draft-04's enum is non-empty */
        {"\"items\": true", "[1]", "schema at \"/items\": a schema must be an object in draft-04"},
        {"\"anyOf\": [false, {}]", "1", "schema at \"/anyOf/0\""},
        {"\"enum\": []", "1", "enum must not be empty in draft-04"},
        {"\"id\": 5", "1", "id must be a string in draft-04"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(s, sizeof s, "{%s, %s}", D4, bad[i].body);
        size_t n = 99;
        cr_expect_eq(deg_validate(s, bad[i].value, &n, NULL), DEG_ERR_SCHEMA, "%s", s);
        cr_expect(strstr(deg_errmsg(), bad[i].msg), "%s: %s", s, deg_errmsg());
    }
    /* a $ref is checked with the schema, before the value is read (which here is not
     * JSON): RFC 3986 §2.1 percent-encoding, §3.5 fragment characters, RFC 6901 */
    struct { const char *s, *msg; } refs[] = {
        {"{\"properties\": {\"c\": {\"$ref\": \"s%5p2/q\"}}}", "is not local"},
        {"{\"$defs\": {\"a%p\": {}}, \"$ref\": \"#/$defs/a%p\"}", "bad percent-encoding at offset 9"},
        {"{\"$defs\": {\"a b\": {}}, \"$ref\": \"#/$defs/a b\"}", "not a URI reference"},
        {"{\"$defs\": {\"a\": {}}, \"$ref\": \"#/$defs/a%00b\"}", "%00 decodes to a NUL"},
        {"{\"$defs\": {\"\\ufffd\": {}}, \"$ref\": \"#/$defs/%ff\"}", "not UTF-8"},
        {"{\"$defs\": {\"a\": {}}, \"$ref\": \"#%2F$defs%2Fa\"}", "plain-name fragments"},
        {"{\"$defs\": {\"a~2\": {}}, \"$ref\": \"#/$defs/a~2\"}", "bad JSON pointer escape"},
        {"{\"anyOf\": [{}, {}], \"$ref\": \"#/anyOf/-1\"}", "not an array index"},
        {"{\"properties\": {\"x\": {\"$ref\": \"#/nope\"}}}", "points to nothing"},
        /* a target outside the positions the walk checks is checked as a schema */
        {"{\"$ref\": \"#/foo\", \"foo\": {\"minimum\": true}}",
         "schema at \"/foo/minimum\": minimum must be a number, not boolean (checked as the "
         "target of the $ref at \"/$ref\")"},
        /* $id is a URI reference; from 2019-09 on without a fragment */
        {"{\"$id\": \":\"}", "schema at \"/$id\": $id \":\" is not a URI reference"},
        {"{\"$id\": \"https://example.com/s#/a\"}", "has a fragment"},
    };
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
        size_t n = 99;
        cr_expect_eq(deg_validate(refs[i].s, "{", &n, NULL), DEG_ERR_SCHEMA, "%s: %s", refs[i].s,
                     deg_errmsg());
        cr_expect(strstr(deg_errmsg(), refs[i].msg), "%s: %s", refs[i].s, deg_errmsg());
    }
}

/* Verdicts that depend on the draft, and deg's where python-jsonschema divides floats. */
Test(validate, verdicts_by_the_draft)
{
    struct { const char *s, *v; size_t n; } T[] = {
        /* draft-07 §8.3 (draft-04/06 alike): a $ref's siblings are ignored; from
         * 2019-09 on they apply beside it */
        {"{\"$schema\": \"http://json-schema.org/draft-07/schema#\", \"definitions\": {\"a\": {}},"
         " \"properties\": {\"x\": {\"$ref\": \"#/definitions/a\", \"minimum\": 5}}}", "{\"x\": 1}", 0},
        {"{\"$schema\": \"http://json-schema.org/draft-04/schema#\", \"definitions\": {\"a\": {}},"
         " \"properties\": {\"x\": {\"$ref\": \"#/definitions/a\", \"minimum\": 5}}}", "{\"x\": 1}", 0},
        {"{\"$schema\": \"https://json-schema.org/draft/2019-09/schema\", \"$defs\": {\"a\": {}},"
         " \"properties\": {\"x\": {\"$ref\": \"#/$defs/a\", \"minimum\": 5}}}", "{\"x\": 1}", 1},
        {"{\"$defs\": {\"a\": {}}, \"properties\": {\"x\": {\"$ref\": \"#/$defs/a\", \"minimum\": 5}}}",
         "{\"x\": 1}", 1},
        /* draft-04's integer has no fraction or exponent part; draft-06's is any
         * number whose value is an integer */
        {"{\"$schema\": \"http://json-schema.org/draft-04/schema#\", \"type\": \"integer\"}", "1.0", 1},
        {"{\"$schema\": \"http://json-schema.org/draft-04/schema#\", \"type\": \"integer\"}", "1e2", 1},
        {"{\"$schema\": \"http://json-schema.org/draft-06/schema#\", \"type\": \"integer\"}", "1.0", 0},
        /* const came with draft-06: an unknown keyword in draft-04 */
        {"{\"$schema\": \"http://json-schema.org/draft-04/schema#\", \"const\": 3}", "4", 0},
        {"{\"$schema\": \"http://json-schema.org/draft-06/schema#\", \"const\": 3}", "4", 1},
        /* a $ref target that is a boolean in draft-04 (outside its meta-schema's positions) */
        {"{\"$schema\": \"http://json-schema.org/draft-04/schema#\", \"$ref\": \"#/x\", \"x\": false}", "1", 1},
        /* multipleOf on the decimal value: 1 / 2.6381721e-58 = 10^65 / 26381721 is not an
         * integer (python-jsonschema's float quotient 3.79e57 is integral: "a multiple") */
        {"{\"multipleOf\": 2.6381721e-58}", "1", 1},
        /* from draft-06 on 5.11e26 is a non-negative integer, beyond int64 or not */
        {"{\"maxLength\": 511111111111111111111111111.0}", "\"x\"", 0},
        {"{\"minItems\": 1e300}", "[1]", 1},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        size_t n = 99;
        cr_expect_eq(deg_validate(T[i].s, T[i].v, &n, NULL), DEG_OK, "%s: %s", T[i].s, deg_errmsg());
        cr_expect_eq(n, T[i].n, "schema %s value %s: %zu errors", T[i].s, T[i].v, n);
    }
}
