/* Parser tables: numbers, dates, date-times (lib/deg/parse.h rules). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "deg.h"
#include "deg/parse.h"

typedef struct {
    const char *in;
    int integer_only;
    const char *out; /* NULL = must fail */
} num_case;

static const num_case NUMS[] = {
    /* plain */
    {"0", 0, "0"}, {"42", 0, "42"}, {"  42 ", 0, "42"}, {"007", 0, "7"},
    {"-5", 0, "-5"}, {"+5", 0, "5"}, {"\xE2\x88\x92" "5", 0, "-5"}, {"-0", 0, "0"},
    {"3.14", 0, "3.14"}, {"0.1", 0, "0.1"}, {"2.50", 0, "2.5"}, {"2.00", 0, "2.0"},
    {"-0.0", 0, "0.0"}, {".5", 0, "0.5"}, {",5", 0, "0.5"},
    /* US thousands */
    {"1,234", 0, "1234"}, {"12,345", 0, "12345"}, {"123,456", 0, "123456"},
    {"1,234,567", 0, "1234567"}, {"1,234.56", 0, "1234.56"}, {"1,234,567.891", 0, "1234567.891"},
    /* European */
    {"1.234,56", 0, "1234.56"}, {"1.234.567", 0, "1234567"}, {"1.234.567,8", 0, "1234567.8"},
    {"1,5", 0, "1.5"}, {"0,123", 0, "0.123"}, {"1,2345", 0, "1.2345"}, {"12,5", 0, "12.5"},
    {"1234,56", 0, "1234.56"}, {"1,23", 0, "1.23"},
    /* spaces, apostrophes */
    {"1 234 567", 0, "1234567"}, {"1 234,56", 0, "1234.56"}, {"1\xC2\xA0" "234", 0, "1234"},
    {"1\xE2\x80\xAF" "234,5", 0, "1234.5"}, {"1'234'567", 0, "1234567"}, {"1'234.56", 0, "1234.56"},
    {"1\xE2\x80\x99" "234", 0, "1234"},
    /* single dot is a decimal point */
    {"1.234", 0, "1.234"}, {"1.5", 0, "1.5"},
    /* Indian */
    {"1,23,456", 0, "123456"}, {"12,34,56,789", 0, "123456789"},
    /* currency and percent */
    {"$1,234.56", 0, "1234.56"}, {"-$5", 0, "-5"}, {"$-5", 0, "-5"}, {"$ 5", 0, "5"},
    {"\xE2\x82\xAC" "1.234,50", 0, "1234.5"}, {"1.234,50 \xE2\x82\xAC", 0, "1234.5"},
    {"\xC2\xA3" "99", 0, "99"}, {"\xC2\xA5" "1000", 0, "1000"}, {"USD 1,000", 0, "1000"},
    {"1,000 EUR", 0, "1000"}, {"EUR1000", 0, "1000"}, {"US$20", 0, "20"}, {"45%", 0, "45"},
    {"45 %", 0, "45"}, {"-3.5%", 0, "-3.5"}, {"12,5 %", 0, "12.5"}, {"\xE2\x82\xB9" "1,23,456", 0, "123456"},
    /* exponent */
    {"6.02e23", 0, "6.02e23"}, {"1E-3", 0, "1e-3"}, {"1.5e3", 1, "1500"}, {"1e+05", 0, "1e5"},
    /* integer leaves */
    {"1,234", 1, "1234"}, {"2.00", 1, "2"}, {"2.5", 1, NULL}, {"1.234,5", 1, NULL},
    {"-17", 1, "-17"}, {"9223372036854775807", 1, "9223372036854775807"},
    {"9223372036854775808", 1, NULL}, {"-9223372036854775808", 1, "-9223372036854775808"},
    {"123456789012345678901234567890", 0, "123456789012345678901234567890"},
    {"1.5e-1", 1, NULL}, {"0.0", 1, "0"},
    /* rejected */
    {"", 0, NULL}, {"   ", 0, NULL}, {"abc", 0, NULL}, {"five", 0, NULL}, {"(1,234)", 0, NULL},
    {"1,,234", 0, NULL}, {"1,234,56", 0, NULL}, {"1,2345,678", 0, NULL}, {"12.34.5", 0, NULL},
    {"1.234.567.89", 0, NULL}, {"1,234,567,", 0, NULL}, {"5.", 0, NULL}, {"1e", 0, NULL},
    {"--5", 0, NULL}, {"$$5", 0, NULL}, {"5%%", 0, NULL}, {"1.2.3,4,5", 0, NULL},
    {"1,234.567,8", 0, NULL}, {"0,123,456", 0, NULL}, {"NaN", 0, NULL}, {"Infinity", 0, NULL},
    {"12a", 0, NULL}, {"$", 0, NULL}, {"%", 0, NULL}, {"1 2", 0, NULL}, {"1 2345", 0, NULL},
    {"\xD9\xA1\xD9\xA2", 0, NULL}, {"5 USDX", 0, NULL}, {"1.234,5.6", 0, NULL},
};

Test(parse, number_table)
{
    char buf[256];
    size_t n = sizeof NUMS / sizeof NUMS[0];
    for (size_t i = 0; i < n; i++) {
        const num_case *c = &NUMS[i];
        deg_status st = dg_parse_number(c->in, strlen(c->in), c->integer_only, buf, sizeof buf);
        if (c->out) {
            cr_expect_eq(st, DEG_OK, "number \"%s\" (int=%d): %s", c->in, c->integer_only, deg_errmsg());
            if (st == DEG_OK) cr_expect_str_eq(buf, c->out, "number \"%s\"", c->in);
        } else {
            cr_expect_neq(st, DEG_OK, "number \"%s\" must fail, got %s", c->in, buf);
        }
    }
}

/* tests/goldens/dates/dates.json (tests/goldens/gen_dates.py: Python's strptime with each
 * form's explicit formats, email.utils for RFC 2822): the forms real documents write. */
static json_t *load_date_goldens(void)
{
    json_error_t e;
    json_t *g = json_load_file(DEG_SOURCE_ROOT "/tests/goldens/dates/dates.json", 0, &e);
    cr_assert(g, "dates.json: %s (line %d)", e.text, e.line);
    return g;
}

Test(parse, date_goldens)
{
    json_t *g = load_date_goldens();
    size_t i, n_ok = 0, n_bad = 0;
    json_t *c;
    json_array_foreach(json_object_get(g, "dates"), i, c) {
        const char *in = json_string_value(json_object_get(c, "text"));
        const char *want = json_string_value(json_object_get(c, "date"));
        char buf[11];
        deg_status st = dg_parse_date(in, strlen(in), DEG_DATE_ANY, buf);
        if (want) {
            cr_expect_eq(st, DEG_OK, "date \"%s\": %s", in, deg_errmsg());
            if (st == DEG_OK) cr_expect_str_eq(buf, want, "date \"%s\"", in);
            n_ok++;
        } else {
            cr_expect_neq(st, DEG_OK, "date \"%s\" is not a date, got %s", in, buf);
            n_bad++;
        }
    }
    cr_expect(n_ok >= 30 && n_bad >= 15, "%zu dates, %zu non-dates", n_ok, n_bad);
    json_array_foreach(json_object_get(g, "date_times"), i, c) {
        const char *in = json_string_value(json_object_get(c, "text"));
        const char *def = json_string_value(json_object_get(c, "default_offset"));
        const char *want = json_string_value(json_object_get(c, "date_time"));
        char buf[64];
        int assumed = -1;
        deg_status st = dg_parse_datetime(in, strlen(in), DEG_DATE_ANY, def, buf, sizeof buf, &assumed);
        if (want) {
            cr_expect_eq(st, DEG_OK, "date-time \"%s\": %s", in, deg_errmsg());
            if (st == DEG_OK) cr_expect_str_eq(buf, want, "date-time \"%s\"", in);
        } else {
            cr_expect_neq(st, DEG_OK, "date-time \"%s\" is not a date-time, got %s", in, buf);
        }
    }
    json_decref(g);
}

typedef struct {
    const char *in;
    deg_date_order order;
    const char *out;
} date_case;

static const date_case DATES[] = {
    {"2026-03-05", DEG_DATE_ANY, "2026-03-05"}, {"2026/3/5", DEG_DATE_ANY, "2026-03-05"},
    {"2026.03.05", DEG_DATE_DMY, "2026-03-05"},
    /* ambiguous numeric dates */
    {"03/05/2026", DEG_DATE_ANY, NULL}, {"03/05/2026", DEG_DATE_MDY, "2026-03-05"},
    {"03/05/2026", DEG_DATE_DMY, "2026-05-03"}, {"05.03.2026", DEG_DATE_ANY, NULL},
    {"05.03.2026", DEG_DATE_DMY, "2026-03-05"}, {"05.03.2026", DEG_DATE_MDY, "2026-05-03"},
    {"13/05/2026", DEG_DATE_ANY, "2026-05-13"}, {"05/13/2026", DEG_DATE_ANY, "2026-05-13"},
    {"13/05/2026", DEG_DATE_MDY, NULL}, {"05/13/2026", DEG_DATE_DMY, NULL},
    {"05/05/2026", DEG_DATE_ANY, "2026-05-05"}, {"31-12-2025", DEG_DATE_ANY, "2025-12-31"},
    {"12-31-2025", DEG_DATE_ANY, "2025-12-31"}, {"1/2/2026", DEG_DATE_MDY, "2026-01-02"},
    {"1/2/2026", DEG_DATE_DMY, "2026-02-01"}, {"1/2/2026", DEG_DATE_ANY, NULL},
    {"30/02/2026", DEG_DATE_ANY, NULL}, {"02/30/2026", DEG_DATE_MDY, NULL},
    {"29/02/2024", DEG_DATE_ANY, "2024-02-29"}, {"29.02.2025", DEG_DATE_DMY, NULL},
    /* names */
    {"5 March 2026", DEG_DATE_ANY, "2026-03-05"}, {"5th March 2026", DEG_DATE_ANY, "2026-03-05"},
    {"5th of March, 2026", DEG_DATE_ANY, "2026-03-05"}, {"March 5, 2026", DEG_DATE_ANY, "2026-03-05"},
    {"March 5 2026", DEG_DATE_MDY, "2026-03-05"}, {"Mar 5th 2026", DEG_DATE_ANY, "2026-03-05"},
    {"Mar. 5, 2026", DEG_DATE_ANY, "2026-03-05"}, {"mar 5 2026", DEG_DATE_ANY, "2026-03-05"},
    {"Sept 30, 2025", DEG_DATE_ANY, "2025-09-30"}, {"1st Jan 2026", DEG_DATE_ANY, "2026-01-01"},
    {"22nd February 2024", DEG_DATE_ANY, "2024-02-22"}, {"3rd Dec 1999", DEG_DATE_ANY, "1999-12-03"},
    {"05-Mar-2026", DEG_DATE_ANY, "2026-03-05"}, {"5/Mar/2026", DEG_DATE_ANY, "2026-03-05"},
    {"5. M\xC3\xA4rz 2026", DEG_DATE_ANY, "2026-03-05"}, {"5 mars 2026", DEG_DATE_ANY, "2026-03-05"},
    {"12 d\xC3\xA9" "cembre 2025", DEG_DATE_ANY, "2025-12-12"}, {"5 de marzo 2026", DEG_DATE_ANY, NULL},
    {"1 ao\xC3\xBBt 2026", DEG_DATE_ANY, "2026-08-01"}, {"24. Dezember 2025", DEG_DATE_ANY, "2025-12-24"},
    {"Thursday, March 5, 2026", DEG_DATE_ANY, "2026-03-05"}, {"Thu 5 Mar 2026", DEG_DATE_ANY, "2026-03-05"},
    {"Friday, March 5, 2026", DEG_DATE_ANY, NULL}, {"February 29, 2024", DEG_DATE_ANY, "2024-02-29"},
    {"February 29, 2025", DEG_DATE_ANY, NULL}, {"Feb 30 2026", DEG_DATE_ANY, NULL},
    {"April 31, 2026", DEG_DATE_ANY, NULL}, {"2025-02-29", DEG_DATE_ANY, NULL},
    {"2026-13-01", DEG_DATE_ANY, NULL}, {"2026-00-10", DEG_DATE_ANY, NULL}, {"2026-01-32", DEG_DATE_ANY, NULL},
    /* date from a date-time text */
    {"2026-03-05T14:30:00Z", DEG_DATE_ANY, "2026-03-05"}, {"March 5, 2026 2:30 PM", DEG_DATE_ANY, "2026-03-05"},
    /* rejected */
    {"March 2026", DEG_DATE_ANY, NULL}, {"03/05/26", DEG_DATE_MDY, NULL}, {"5 March", DEG_DATE_ANY, NULL},
    {"yesterday", DEG_DATE_ANY, NULL}, {"", DEG_DATE_ANY, NULL}, {"2026-03", DEG_DATE_ANY, NULL},
    {"20260305", DEG_DATE_ANY, NULL}, {"2026-03-05 and more", DEG_DATE_ANY, NULL},
    {"5 Marchy 2026", DEG_DATE_ANY, NULL}, {"03/05-2026", DEG_DATE_MDY, NULL},
    {"2026-03-055", DEG_DATE_ANY, NULL}, {"5 March 20266", DEG_DATE_ANY, NULL},
    /* year first with a month name (more in tests/goldens/dates/dates.json): other
     * languages' names, never date_order, a lower-case month after a space is prose */
    {"2023 Mai 14", DEG_DATE_ANY, "2023-05-14"}, {"2023 Sept 5", DEG_DATE_DMY, "2023-09-05"},
    {"2023-M\xC3\xA4rz-05", DEG_DATE_MDY, "2023-03-05"}, {"2023 may 5", DEG_DATE_ANY, NULL},
    {"2023 mar 14", DEG_DATE_ANY, NULL}, {"2023.Mar.14", DEG_DATE_ANY, NULL},
    {"2023 Mar 14th", DEG_DATE_ANY, "2023-03-14"}, {"2023-Mar-14th", DEG_DATE_ANY, NULL},
    {"2023Mar 14", DEG_DATE_ANY, NULL}, {"Tue, 2023 Mar 14", DEG_DATE_ANY, "2023-03-14"},
    {"Wed, 2023 Mar 14", DEG_DATE_ANY, NULL},
};

Test(parse, date_table)
{
    char buf[11];
    size_t n = sizeof DATES / sizeof DATES[0];
    for (size_t i = 0; i < n; i++) {
        const date_case *c = &DATES[i];
        deg_status st = dg_parse_date(c->in, strlen(c->in), c->order, buf);
        if (c->out) {
            cr_expect_eq(st, DEG_OK, "date \"%s\" (order %d): %s", c->in, c->order, deg_errmsg());
            if (st == DEG_OK) cr_expect_str_eq(buf, c->out, "date \"%s\"", c->in);
        } else {
            cr_expect_neq(st, DEG_OK, "date \"%s\" (order %d) must fail, got %s", c->in, c->order, buf);
        }
    }
}

typedef struct {
    const char *in;
    deg_date_order order;
    const char *def;  /* default_offset */
    const char *out;
    int assumed;
} dt_case;

static const dt_case DTS[] = {
    {"2026-03-05T14:30:00Z", 0, "Z", "2026-03-05T14:30:00Z", 0},
    {"2026-03-05T14:30", 0, "Z", "2026-03-05T14:30:00Z", 1},
    {"2026-03-05T14:30", 0, "+01:00", "2026-03-05T14:30:00+01:00", 1},
    {"2026-03-05T14:30", 0, NULL, NULL, 0},
    {"2026-03-05 14:30:15.250+02:00", 0, NULL, "2026-03-05T14:30:15.250+02:00", 0},
    {"2026-03-05t14:30:15z", 0, NULL, "2026-03-05T14:30:15Z", 0},
    {"2026-03-05T14:30:00-0500", 0, NULL, "2026-03-05T14:30:00-05:00", 0},
    {"2026-03-05T14:30:00+05", 0, NULL, "2026-03-05T14:30:00+05:00", 0},
    {"2026-03-05 14:30 UTC", 0, NULL, "2026-03-05T14:30:00Z", 0},
    {"2026-03-05 14:30 GMT", 0, NULL, "2026-03-05T14:30:00Z", 0},
    {"2026-03-05 14:30 UTC+2", 0, NULL, "2026-03-05T14:30:00+02:00", 0},
    {"2026-03-05 14:30 GMT-05:30", 0, NULL, "2026-03-05T14:30:00-05:30", 0},
    {"2026-03-05 14:30 +0200", 0, NULL, "2026-03-05T14:30:00+02:00", 0},
    {"2026-03-05 14:30 \xE2\x88\x92" "03:00", 0, NULL, "2026-03-05T14:30:00-03:00", 0},
    {"2026-03-05 14:30\xE2\x88\x92" "03:00", 0, NULL, "2026-03-05T14:30:00-03:00", 0},
    {"March 5, 2026 2:30 PM", 0, "Z", "2026-03-05T14:30:00Z", 1},
    {"March 5, 2026 at 2:30 PM EST", 0, "Z", "2026-03-05T14:30:00-05:00", 0},
    {"March 5, 2026, 2:30pm PDT", 0, NULL, "2026-03-05T14:30:00-07:00", 0},
    {"Mar 5th 2026 12:00 AM", 0, "Z", "2026-03-05T00:00:00Z", 1},
    {"Mar 5th 2026 12:00 PM", 0, "Z", "2026-03-05T12:00:00Z", 1},
    {"Mar 5th 2026 12:15 a.m.", 0, "Z", "2026-03-05T00:15:00Z", 1},
    {"5 March 2026 2 PM", 0, "Z", "2026-03-05T14:00:00Z", 1},
    {"5 March 2026, 14:30 CET", 0, NULL, "2026-03-05T14:30:00+01:00", 0},
    {"5 March 2026 14:30 CEST", 0, NULL, "2026-03-05T14:30:00+02:00", 0},
    {"Thu, 5 Mar 2026 14:30:00 +0000", 0, NULL, "2026-03-05T14:30:00+00:00", 0},
    {"05.03.2026 14:30", DEG_DATE_DMY, "Z", "2026-03-05T14:30:00Z", 1},
    {"05.03.2026 14:30", DEG_DATE_ANY, "Z", NULL, 0},
    {"03/05/2026 2:30 PM", DEG_DATE_MDY, "-05:00", "2026-03-05T14:30:00-05:00", 1},
    {"03/05/2026 2:30 PM", DEG_DATE_DMY, "Z", "2026-05-03T14:30:00Z", 1},
    {"13/05/2026 09:05", DEG_DATE_ANY, "Z", "2026-05-13T09:05:00Z", 1},
    {"14:30, 5 March 2026", 0, "Z", "2026-03-05T14:30:00Z", 1},
    {"2:30 PM on March 5, 2026", 0, "Z", "2026-03-05T14:30:00Z", 1},
    {"2:30 PM EST on March 5, 2026", 0, NULL, "2026-03-05T14:30:00-05:00", 0},
    {"1998-12-31T23:59:60Z", 0, NULL, "1998-12-31T23:59:60Z", 0},
    {"1998-12-31T15:59:60-08:00", 0, NULL, "1998-12-31T15:59:60-08:00", 0},
    {"1998-12-31T22:59:60Z", 0, NULL, NULL, 0},
    /* invalid */
    {"2026-03-05", 0, "Z", NULL, 0},
    {"2:30 PM", 0, "Z", NULL, 0},
    {"2026-02-30T10:00Z", 0, NULL, NULL, 0},
    {"2025-02-29 10:00", 0, "Z", NULL, 0},
    {"2026-03-05T24:00Z", 0, NULL, NULL, 0},
    {"2026-03-05T12:60Z", 0, NULL, NULL, 0},
    {"2026-03-05 13:00 PM", 0, "Z", NULL, 0},
    {"2026-03-05 0:30 AM", 0, "Z", NULL, 0},
    {"2026-03-05T14:30+25:00", 0, NULL, NULL, 0},
    {"2026-03-05 14:30 IST", 0, NULL, NULL, 0},
    {"2026-03-05 14:30 est", 0, NULL, NULL, 0},
    {"2026-03-05 14", 0, "Z", NULL, 0},
    {"2026-03-05T14:30Zulu", 0, NULL, NULL, 0},
};

Test(parse, datetime_table)
{
    char buf[128];
    size_t n = sizeof DTS / sizeof DTS[0];
    for (size_t i = 0; i < n; i++) {
        const dt_case *c = &DTS[i];
        int assumed = -1;
        deg_status st = dg_parse_datetime(c->in, strlen(c->in), c->order, c->def, buf, sizeof buf, &assumed);
        if (c->out) {
            cr_expect_eq(st, DEG_OK, "date-time \"%s\": %s", c->in, deg_errmsg());
            if (st == DEG_OK) {
                cr_expect_str_eq(buf, c->out, "date-time \"%s\"", c->in);
                cr_expect_eq(assumed, c->assumed, "date-time \"%s\" assumed_offset", c->in);
            }
        } else {
            cr_expect_neq(st, DEG_OK, "date-time \"%s\" must fail, got %s", c->in, buf);
        }
    }
}

Test(parse, table_sizes)
{
    size_t total = sizeof NUMS / sizeof NUMS[0] + sizeof DATES / sizeof DATES[0] +
                   sizeof DTS / sizeof DTS[0];
    cr_assert_geq(total, 150, "parser tables hold %zu cases", total);
}

Test(parse, public_api_ownership_and_errors)
{
    char *out = NULL;
    cr_assert_eq(deg_parse_number("1.234,5", 7, 0, &out), DEG_OK);
    cr_assert_str_eq(out, "1234.5");
    deg_free(out);
    cr_assert_eq(deg_parse_number("\xff", 1, 0, &out), DEG_ERR_UTF8);
    cr_assert_null(out);
    cr_assert_eq(deg_parse_date("5 March 2026", 12, DEG_DATE_ANY, &out), DEG_OK);
    cr_assert_str_eq(out, "2026-03-05");
    deg_free(out);
    cr_assert_eq(deg_parse_date("03/05/2026", 10, DEG_DATE_ANY, &out), DEG_ERR_FORMAT);
    cr_assert(strstr(deg_errmsg(), "ambiguous"), "%s", deg_errmsg());
    cr_assert_eq(deg_parse_date("30/02/2026", 10, DEG_DATE_DMY, &out), DEG_ERR_RANGE);
    int assumed = 0;
    cr_assert_eq(deg_parse_datetime("2026-03-05 10:00", 16, DEG_DATE_ANY, "+05:30", &out, &assumed), DEG_OK);
    cr_assert_str_eq(out, "2026-03-05T10:00:00+05:30");
    cr_assert_eq(assumed, 1);
    deg_free(out);
    cr_assert_eq(deg_parse_datetime("2026-03-05 10:00", 16, DEG_DATE_ANY, "bogus", &out, &assumed), DEG_ERR_ARG);
    cr_assert_eq(deg_parse_date("x", 1, (deg_date_order)7, &out), DEG_ERR_ARG);
}

Test(parse, huge_inputs_bounded)
{
    size_t n = 1 << 20;
    char *big = malloc(n + 1);
    for (size_t i = 0; i < n; i++) big[i] = (char)('0' + i % 10);
    big[n] = 0;
    char *out = NULL;
    cr_assert_eq(deg_parse_number(big, n, 0, &out), DEG_OK);
    cr_assert_eq(strlen(out), n - 1); /* the leading 0 is dropped */
    deg_free(out);
    cr_assert_eq(deg_parse_number(big, n, 1, &out), DEG_ERR_RANGE);
    memset(big, ',', n);
    cr_assert_eq(deg_parse_number(big, n, 0, &out), DEG_ERR_FORMAT);
    for (size_t i = 0; i < n; i++) big[i] = (i % 4 == 3) ? ',' : '1';
    cr_assert_eq(deg_parse_number(big, n - 1, 0, &out), DEG_ERR_FORMAT);
    memset(big, '1', n);
    cr_assert_neq(deg_parse_date(big, n, DEG_DATE_ANY, &out), DEG_OK);
    cr_assert_neq(deg_parse_datetime(big, n, DEG_DATE_ANY, "Z", &out, NULL), DEG_OK);
    free(big);
}
