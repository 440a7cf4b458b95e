/* Response assembly (spec §8): value in schema order, meta by concrete
 * pointer, usage, plan fingerprint, FillError on an invalid value. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deg.h"

static const char *SCHEMA =
    "{\"type\":\"object\",\"$defs\":{\"Item\":{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\"},\"price\":{\"type\":\"number\",\"minimum\":0}},\"required\":[\"name\"]}},"
    "\"properties\":{"
    "\"department\":{\"enum\":[\"sales\",\"support\"]},"
    "\"urgent\":{\"type\":\"boolean\"},"
    "\"a/b\":{\"type\":\"string\"},"
    "\"m~n\":{\"type\":\"integer\",\"maximum\":100},"
    "\"due\":{\"type\":[\"string\",\"null\"],\"format\":\"date\"},"
    "\"note\":{\"type\":\"string\"},"
    "\"line_items\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/Item\"},\"minItems\":1},"
    "\"reply\":{\"type\":\"string\",\"x-generate\":true,\"maxLength\":40}},"
    "\"required\":[\"department\",\"urgent\",\"a/b\",\"line_items\",\"reply\"]}";

static deg_plan *compile(void)
{
    deg_plan *p = NULL;
    char *errs = NULL;
    cr_assert_eq(deg_plan_compile(SCHEMA, strlen(SCHEMA), &p, &errs), DEG_OK, "%s %s", deg_errmsg(),
                 errs ? errs : "");
    return p;
}

/* Outcomes listed in a scrambled order: the value follows the schema. */
static const char *OUTCOMES =
    "{\"fields\":{"
    "\"/reply\":{\"value\":\"We are on it.\",\"meta\":{\"mode\":\"generate\",\"generated_tokens\":5}},"
    "\"/line_items/1/price\":{\"value\":0.1,\"meta\":{\"mode\":\"extract.number\",\"span\":[30,33]}},"
    "\"/line_items/1/name\":{\"value\":\"nut\",\"meta\":{\"mode\":\"extract.span\",\"span\":[20,23]}},"
    "\"/line_items/0/name\":{\"value\":\"bolt\",\"meta\":{\"mode\":\"extract.span\",\"span\":[5,9]}},"
    "\"/line_items/0/price\":{\"meta\":{\"mode\":\"extract.number\",\"span\":null,\"null_reason\":\"not_found\"}},"
    "\"/department\":{\"value\":\"support\",\"meta\":{\"mode\":\"decide.choice\",\"probability\":0.8}},"
    "\"/urgent\":{\"value\":true,\"meta\":{\"mode\":\"decide.noul\",\"probability\":0.91}},"
    "\"/a~1b\":{\"value\":\"x\",\"meta\":{\"mode\":\"extract.span\",\"span\":[1,2]}},"
    "\"/m~0n\":{\"value\":7,\"meta\":{\"mode\":\"extract.number\",\"span\":[3,4]}},"
    "\"/due\":{\"value\":null,\"meta\":{\"mode\":\"extract.date\",\"span\":null,\"null_reason\":\"not_found\"}}},"
    "\"arrays\":{\"/line_items\":{\"items\":2,\"dropped\":1}},"
    "\"usage\":{\"prompt_tokens\":42}}";

Test(response, assembles_in_schema_order)
{
    deg_plan *p = compile();
    char *resp = NULL, *errs = NULL;
    cr_assert_eq(deg_response_assemble(p, OUTCOMES, &resp, &errs), DEG_OK, "%s", deg_errmsg());
    char want[4096];
    snprintf(want, sizeof want,
             "{\"value\": {\"department\": \"support\", \"urgent\": true, \"a/b\": \"x\", \"m~n\": 7, "
             "\"due\": null, \"line_items\": [{\"name\": \"bolt\"}, {\"name\": \"nut\", \"price\": 0.1}], "
             "\"reply\": \"We are on it.\"}, "
             "\"meta\": {\"/department\": {\"mode\": \"decide.choice\", \"probability\": 0.8}, "
             "\"/urgent\": {\"mode\": \"decide.noul\", \"probability\": 0.91}, "
             "\"/a~1b\": {\"mode\": \"extract.span\", \"span\": [1, 2]}, "
             "\"/m~0n\": {\"mode\": \"extract.number\", \"span\": [3, 4]}, "
             "\"/due\": {\"mode\": \"extract.date\", \"span\": null, \"null_reason\": \"not_found\"}, "
             "\"/line_items\": {\"mode\": \"array\", \"items\": 2, \"dropped\": 1}, "
             "\"/line_items/0/name\": {\"mode\": \"extract.span\", \"span\": [5, 9]}, "
             "\"/line_items/0/price\": {\"mode\": \"extract.number\", \"span\": null, \"null_reason\": \"not_found\"}, "
             "\"/line_items/1/name\": {\"mode\": \"extract.span\", \"span\": [20, 23]}, "
             "\"/line_items/1/price\": {\"mode\": \"extract.number\", \"span\": [30, 33]}, "
             "\"/reply\": {\"mode\": \"generate\", \"generated_tokens\": 5}}, "
             "\"usage\": {\"prompt_tokens\": 42, \"generated_tokens\": 5}, \"plan\": \"%s\"}",
             deg_plan_fingerprint(p));
    cr_expect_str_eq(resp, want);
    deg_free(resp);
    deg_plan_free(p);
}

static void expect_fill_error(deg_plan *p, const char *outcomes, const char *want_in_errors)
{
    char *resp = NULL, *errs = NULL;
    cr_expect_eq(deg_response_assemble(p, outcomes, &resp, &errs), DEG_ERR_FILL, "%s", deg_errmsg());
    cr_expect_null(resp);
    cr_expect(strstr(deg_errmsg(), "FillError"), "%s", deg_errmsg());
    cr_expect(errs && strstr(errs, want_in_errors), "errors %s lack %s", errs ? errs : "(null)", want_in_errors);
    deg_free(errs);
}

Test(response, invalid_value_is_fill_error)
{
    deg_plan *p = compile();
    /* required reply omitted */
    expect_fill_error(p,
        "{\"fields\":{\"/department\":{\"value\":\"sales\"},\"/urgent\":{\"value\":false},\"/a~1b\":{\"value\":\"x\"},"
        "\"/line_items/0/name\":{\"value\":\"b\"}},\"arrays\":{\"/line_items\":{\"items\":1}}}",
        "\"keyword\": \"required\"");
    /* out of bounds, bad date, minItems */
    expect_fill_error(p,
        "{\"fields\":{\"/department\":{\"value\":\"sales\"},\"/urgent\":{\"value\":false},\"/a~1b\":{\"value\":\"x\"},"
        "\"/m~0n\":{\"value\":101},\"/due\":{\"value\":\"2025-02-29\"},\"/reply\":{\"value\":\"ok\"}},"
        "\"arrays\":{\"/line_items\":{\"items\":0}}}",
        "\"instance\": \"/m~0n\", \"schema\": \"/properties/m~0n/maximum\"");
    /* a value of the wrong type */
    expect_fill_error(p,
        "{\"fields\":{\"/department\":{\"value\":\"hr\"},\"/urgent\":{\"value\":1},\"/a~1b\":{\"value\":\"x\"},"
        "\"/reply\":{\"value\":\"ok\"},\"/line_items/0/name\":{\"value\":\"b\"}},\"arrays\":{\"/line_items\":{\"items\":1}}}",
        "\"instance\": \"/urgent\"");
    deg_plan_free(p);
}

Test(response, malformed_outcomes)
{
    deg_plan *p = compile();
    char *resp = NULL, *errs = NULL;
    cr_expect_eq(deg_response_assemble(p, "{\"fields\":{\"/nope\":{\"value\":1}}}", &resp, &errs), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "/nope"), "%s", deg_errmsg());
    /* an item beyond the counted items is not reachable */
    cr_expect_eq(deg_response_assemble(p, "{\"fields\":{\"/line_items/3/name\":{\"value\":\"b\"}},"
                                          "\"arrays\":{\"/line_items\":{\"items\":0}}}", &resp, &errs), DEG_ERR_ARG);
    cr_expect_eq(deg_response_assemble(p, "{\"arrays\":{\"/line_items\":{\"items\":-1}}}", &resp, &errs), DEG_ERR_ARG);
    /* an object item with no leaf values is an empty object: the validator
     * then reports the missing required keys (FillError) */
    cr_expect_eq(deg_response_assemble(p, "{\"arrays\":{\"/line_items\":{\"items\":1}}}", &resp, &errs), DEG_ERR_FILL);
    deg_free(errs);
    errs = NULL;
    cr_expect_eq(deg_response_assemble(p, "{\"bogus\":1}", &resp, &errs), DEG_ERR_ARG);
    cr_expect_eq(deg_response_assemble(p, "{", &resp, &errs), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "line 1"), "%s", deg_errmsg());
    cr_expect_null(resp);
    deg_plan_free(p);
}

Test(response, generate_array_and_usage)
{
    const char *s = "{\"type\":\"object\",\"properties\":{\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
                    "\"x-generate\":true,\"maxItems\":3,\"uniqueItems\":true}},\"required\":[\"tags\"]}";
    deg_plan *p;
    cr_assert_eq(deg_plan_compile(s, strlen(s), &p, NULL), DEG_OK, "%s", deg_errmsg());
    char *resp = NULL, *errs = NULL;
    cr_assert_eq(deg_response_assemble(p,
        "{\"fields\":{\"/tags/0\":{\"value\":\"a\",\"meta\":{\"mode\":\"generate\",\"generated_tokens\":2}},"
        "\"/tags/1\":{\"value\":\"b\",\"meta\":{\"mode\":\"generate\",\"generated_tokens\":3}}},"
        "\"arrays\":{\"/tags\":{\"items\":2}}}", &resp, &errs), DEG_OK, "%s", deg_errmsg());
    cr_expect(strstr(resp, "\"value\": {\"tags\": [\"a\", \"b\"]}"), "%s", resp);
    cr_expect(strstr(resp, "\"usage\": {\"prompt_tokens\": 0, \"generated_tokens\": 5}"), "%s", resp);
    deg_free(resp);
    /* duplicate items break uniqueItems: FillError, never returned */
    cr_expect_eq(deg_response_assemble(p,
        "{\"fields\":{\"/tags/0\":{\"value\":\"a\"},\"/tags/1\":{\"value\":\"a\"}},"
        "\"arrays\":{\"/tags\":{\"items\":2}}}", &resp, &errs), DEG_ERR_FILL);
    cr_expect(errs && strstr(errs, "uniqueItems"), "%s", errs ? errs : "");
    deg_free(errs);
    /* a counted string item with no value cannot be assembled */
    cr_expect_eq(deg_response_assemble(p, "{\"fields\":{\"/tags/0\":{\"value\":\"a\"}},"
        "\"arrays\":{\"/tags\":{\"items\":2}}}", &resp, &errs), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "no value"), "%s", deg_errmsg());
    deg_plan_free(p);
}
