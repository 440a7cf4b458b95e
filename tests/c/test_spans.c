/* Format checks, candidate spans and the span trimmer. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deg.h"
#include "deg/parse.h"

typedef struct {
    const char *format, *in;
    int ok;
} fmt_case;

static const fmt_case FMTS[] = {
    {"date", "2026-03-05", 1}, {"date", "2024-02-29", 1}, {"date", "2025-02-29", 0},
    {"date", "2026-3-5", 0}, {"date", "2026-03-05 ", 0}, {"date", "06/19/1963", 0},
    {"date", "2013-350", 0}, {"date", "0000-01-01", 0}, {"date", "2026-04-31", 0},
    {"date", "\xD9\xA2\xD9\xA0\xD9\xA2\xD9\xA6-03-05", 0},
    {"date-time", "1963-06-19T08:30:06.283185Z", 1}, {"date-time", "1963-06-19T08:30:06Z", 1},
    {"date-time", "1937-01-01T12:00:27.87+00:20", 1}, {"date-time", "1963-06-19t08:30:06.283185z", 1},
    {"date-time", "1990-02-31T15:59:59.123-08:00", 0}, {"date-time", "1990-12-31T15:59:60-24:00", 0},
    {"date-time", "1998-12-31T23:59:60Z", 1}, {"date-time", "1998-12-31T15:59:60.123-08:00", 1},
    {"date-time", "1998-12-31T23:58:60Z", 0}, {"date-time", "06/19/1963 08:30:06 PST", 0},
    {"date-time", "2013-350T01:01:01", 0}, {"date-time", "2026-03-05T14:30Z", 0},
    {"date-time", "2026-03-05 14:30:00Z", 0}, {"date-time", "2026-03-05T14:30:00", 0},
    {"date-time", "2026-03-05T14:30:00.Z", 0}, {"date-time", "2026-03-05T24:00:00Z", 0},
    {"date-time", "2026-03-05T14:30:00+0100", 0}, {"date-time", "2026-03-05T14:30:00Z\n", 0},
    {"email", "joe.bloggs@example.com", 1}, {"email", "2962", 0}, {"email", "a+b@x.co.uk", 1},
    {"email", "\"joe bloggs\"@example.com", 1}, {"email", "joe@[127.0.0.1]", 1},
    {"email", "joe@[IPv6:::1]", 1}, {"email", ".joe@example.com", 0}, {"email", "joe.@example.com", 0},
    {"email", "jo..e@example.com", 0}, {"email", "joe@-example.com", 0}, {"email", "joe@example..com", 0},
    {"email", "joe@localhost", 1}, {"email", "joe@", 0}, {"email", "@example.com", 0},
    {"email", "j\xC3\xB6" "e@example.com", 0}, {"email", "joe @example.com", 0}, {"email", "a@b@c", 0},
    {"uri", "http://foo.bar/?baz=qux#quux", 1}, {"uri", "http://foo.com/blah_(wikipedia)_blah#cite-1", 1},
    {"uri", "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com", 1}, {"uri", "http://223.255.255.254", 1},
    {"uri", "ldap://[2001:db8::7]/c=GB?objectClass?one", 1}, {"uri", "mailto:John.Doe@example.com", 1},
    {"uri", "urn:oasis:names:specification:docbook:dtd:xml:4.1.2", 1}, {"uri", "tel:+1-816-555-1212", 1},
    {"uri", "//foo.bar/?baz=qux#quux", 0}, {"uri", "/abc", 0}, {"uri", "\\\\WINDOWS\\fileshare", 0},
    {"uri", "abc", 0}, {"uri", "http:// shouldfail.com", 0}, {"uri", ":// should fail", 0},
    {"uri", "http://[2001:db8::zz]/", 0}, {"uri", "http://example.com/%zz", 0}, {"uri", "h\xC3\xA9://x", 0},
    {"uri", "http://example.com/\xC3\xA9", 0}, {"uri", "a:", 1}, {"uri", "1http://x", 0},
    {"uuid", "123e4567-e89b-12d3-a456-426614174000", 1}, {"uuid", "123E4567-E89B-12D3-A456-426614174000", 1},
    {"uuid", "123e4567e89b12d3a456426614174000", 0}, {"uuid", "{123e4567-e89b-12d3-a456-426614174000}", 0},
    {"uuid", "123e4567-e89b-12d3-a456-42661417400g", 0}, {"uuid", "123e4567-e89b-12d3-a456-4266141740000", 0},
};

Test(spans, format_table)
{
    for (size_t i = 0; i < sizeof FMTS / sizeof FMTS[0]; i++) {
        const fmt_case *c = &FMTS[i];
        int ok = -1;
        cr_expect_eq(deg_format_check(c->format, c->in, strlen(c->in), &ok), DEG_OK);
        cr_expect_eq(ok, c->ok, "%s \"%s\": got %d", c->format, c->in, ok);
    }
    int ok;
    cr_expect_eq(deg_format_check("ipv4", "1.2.3.4", 7, &ok), DEG_ERR_ARG);
    cr_expect_eq(deg_format_check("email", "a@b\xff", 4, &ok), DEG_OK);
    cr_expect_eq(ok, 0);
}

typedef struct {
    const char *kind, *text;
    const char *expect[16]; /* the candidate substrings, in span order */
} cand_case;

static const cand_case CANDS[] = {
    {"number", "Total: $1,234.56 now", {"$1,234.56", "1,234.56"}},
    {"number", "was 1.234,5 EUR", {"1.234,5", "1.234,5 EUR"}},
    {"number", "up 12% or -3.5 %", {"12", "12%", "-3.5", "-3.5 %", "3.5", "3.5 %"}},
    {"number", "at 14:30 on v3.5.2 x2", {NULL}},
    {"number", "1 234 567 items", {"1 234 567", "234 567", "567"}},
    {"integer", "\xE2\x82\xAC" "5 and \xE2\x88\x92" "7", {"\xE2\x82\xAC" "5", "5", "\xE2\x88\x92" "7", "7"}},
    {"date", "Due Thursday, March 5, 2026.", {"Thursday, March 5, 2026", "March 5, 2026"}},
    {"date", "on 05/03/2026 or 2026-03-05; 5th of March 2026 / 5-Mar-2026",
     {"05/03/2026", "2026-03-05", "5th of March 2026", "5-Mar-2026"}},
    {"date", "version 1.2.2026x and 2026-03", {NULL}},
    {"date-time", "Sent 2026-03-05T14:30:00Z, then March 5, 2026 at 2:30 PM EST.",
     {"2026-03-05T14:30:00Z", "March 5, 2026 at 2:30 PM", "March 5, 2026 at 2:30 PM EST"}},
    {"date-time", "14:30, 5 March 2026", {"14:30, 5 March 2026"}},
    {"email", "Mail joe.bloggs@example.com, or <a+b@x.co.uk>. Not @foo or a@.",
     {"joe.bloggs@example.com", "a+b@x.co.uk"}},
    /* key=value logs: the whole atext run and the address after the last '=' */
    {"email", "[10:00] reporter=ana.b@mail.example.org x=y",
     {"reporter=ana.b@mail.example.org", "ana.b@mail.example.org"}},
    {"uri", "See https://example.com/a_(b). Or (http://x.org/path?q=1), mailto:joe@x.com; note: this",
     {"https://example.com/a_(b)", "http://x.org/path?q=1", "mailto:joe@x.com"}},
    {"uuid", "id=123e4567-e89b-12d3-a456-426614174000; 123e4567-e89b-12d3-a456-4266141740001",
     {"123e4567-e89b-12d3-a456-426614174000"}},
    /* code-point offsets: the euro sign and accents are one code point */
    {"email", "\xC3\xA9t\xC3\xA9: remi@example.fr", {"remi@example.fr"}},
    {"email", "r\xC3\xA9mi@example.fr", {NULL}},
};

/* substring of text at code points [a, b) */
static char *cp_sub(const char *t, size_t a, size_t b)
{
    size_t n = strlen(t), i = 0, k = 0, bs = 0, be = n;
    while (i <= n) {
        if (k == a) bs = i;
        if (k == b) { be = i; break; }
        if (i == n) break;
        i++;
        while (i < n && ((unsigned char)t[i] & 0xC0) == 0x80) i++;
        k++;
    }
    char *o = malloc(be - bs + 1);
    memcpy(o, t + bs, be - bs);
    o[be - bs] = 0;
    return o;
}

Test(spans, candidate_table)
{
    for (size_t i = 0; i < sizeof CANDS / sizeof CANDS[0]; i++) {
        const cand_case *c = &CANDS[i];
        size_t *sp = NULL, n = 0;
        cr_assert_eq(deg_candidates(c->kind, c->text, strlen(c->text), &sp, &n), DEG_OK, "%s", deg_errmsg());
        size_t want = 0;
        while (want < 16 && c->expect[want]) want++;
        cr_expect_eq(n, want, "%s in \"%s\": %zu candidates, want %zu", c->kind, c->text, n, want);
        for (size_t k = 0; k < n && k < want; k++) {
            char *sub = cp_sub(c->text, sp[2 * k], sp[2 * k + 1]);
            cr_expect_str_eq(sub, c->expect[k], "%s in \"%s\" #%zu", c->kind, c->text, k);
            free(sub);
        }
        deg_free(sp);
    }
    size_t *sp;
    size_t n;
    cr_expect_eq(deg_candidates("color", "x", 1, &sp, &n), DEG_ERR_ARG);
    cr_expect_eq(deg_candidates("number", "\xc3", 1, &sp, &n), DEG_ERR_UTF8);
}

/* The date candidates of tests/goldens/dates/dates.json (tests/goldens/gen_dates.py): each
 * form real documents write, in a vim header line, is exactly the span it was put at, and
 * that span parses; a broken boundary (a digit or letter right after, "Marching") gives
 * no span. */
Test(spans, date_candidate_goldens)
{
    json_error_t e;
    json_t *g = json_load_file(DEG_SOURCE_ROOT "/tests/goldens/dates/dates.json", 0, &e);
    cr_assert(g, "dates.json: %s (line %d)", e.text, e.line);
    size_t i, n_cases = 0;
    json_t *c;
    json_array_foreach(json_object_get(g, "candidates"), i, c) {
        const char *kind = json_string_value(json_object_get(c, "kind"));
        const char *ctx = json_string_value(json_object_get(c, "context"));
        json_t *want = json_object_get(c, "spans");
        size_t *sp = NULL, n = 0;
        cr_assert_eq(deg_candidates(kind, ctx, strlen(ctx), &sp, &n), DEG_OK, "%s", deg_errmsg());
        cr_expect_eq(n, json_array_size(want), "%s in \"%s\": %zu candidates, want %zu", kind, ctx, n,
                     json_array_size(want));
        for (size_t k = 0; k < n && k < json_array_size(want); k++) {
            json_t *w = json_array_get(want, k);
            cr_expect(sp[2 * k] == (size_t)json_integer_value(json_array_get(w, 0)) &&
                          sp[2 * k + 1] == (size_t)json_integer_value(json_array_get(w, 1)),
                      "%s in \"%s\" #%zu: [%zu, %zu)", kind, ctx, k, sp[2 * k], sp[2 * k + 1]);
            char *sub = cp_sub(ctx, sp[2 * k], sp[2 * k + 1]);
            char iso[11];
            cr_expect_eq(dg_parse_date(sub, strlen(sub), DEG_DATE_ANY, iso), DEG_OK, "candidate \"%s\": %s",
                         sub, deg_errmsg());
            free(sub);
        }
        deg_free(sp);
        n_cases++;
    }
    cr_expect(n_cases >= 30, "%zu candidate contexts", n_cases);
    json_decref(g);
}

typedef struct {
    const char *in, *out;
} trim_case;

static const trim_case TRIMS[] = {
    {"  hello, ", "hello"}, {"(foo)", "(foo)"}, {"foo)", "foo"}, {"(foo", "foo"}, {"f(x)", "f(x)"},
    {"\"quoted\"", "quoted"}, {"\xE2\x80\x9Cquoted,\xE2\x80\x9D", "quoted"}, {"U.S.", "U.S."},
    {"Inc.", "Inc"}, {"done.", "done"}, {"e.g.", "e.g."}, {"- item", "item"}, {"-5", "-5"},
    {"students'", "students'"}, {"'students'", "students"}, {"[1] ", "[1]"},
    {"(555) 123-4567.", "(555) 123-4567"}, {" ... ", ""}, {"\xC2\xAB" "Wort" "\xC2\xBB", "Wort"},
    {": value;", "value"}, {".5", ".5"}, {"$5,", "$5"}, {"a)", "a"}, {"((a)", "(a)"},
    {"\t\nJohn Smith\xC2\xA0", "John Smith"}, {"\xE2\x80\xA2 point", "point"}, {"x -", "x"},
    {"", ""}, {"Acme Corp.\"", "Acme Corp"}, {"{a}", "{a}"}, {"[a", "a"},
    {"./src/main.rs", "./src/main.rs"}, {"\"../rustbook\"", "../rustbook"}, {". x", "x"},
    {"...x", "x"},
};

Test(spans, trim_table)
{
    for (size_t i = 0; i < sizeof TRIMS / sizeof TRIMS[0]; i++) {
        const char *t = TRIMS[i].in;
        size_t ncp = 0;
        dg_parse_utf8_check(t, strlen(t), "t", &ncp);
        size_t a, b;
        cr_assert_eq(deg_span_trim(t, strlen(t), 0, ncp, &a, &b), DEG_OK, "%s", deg_errmsg());
        char *sub = cp_sub(t, a, b);
        cr_expect_str_eq(sub, TRIMS[i].out, "trim \"%s\"", t);
        free(sub);
    }
    /* offsets are relative to the whole text */
    const char *t = "Name: \xC3\x89mile Zola, born";
    size_t a, b;
    cr_assert_eq(deg_span_trim(t, strlen(t), 5, 18, &a, &b), DEG_OK);
    cr_expect_eq(a, 6);
    cr_expect_eq(b, 16);
    cr_expect_eq(deg_span_trim(t, strlen(t), 5, 99, &a, &b), DEG_ERR_RANGE);
    cr_expect_eq(deg_span_trim(t, strlen(t), 6, 5, &a, &b), DEG_ERR_RANGE);
}

Test(spans, huge_context_bounded)
{
    size_t n = 1 << 20;
    char *big = malloc(n + 1);
    const char *kinds[] = {"number", "date", "date-time", "email", "uri", "uuid"};
    /* digits, a URL-ish run without spaces, then many short matches of
     * every kind: each kind must finish in bounded time */
    static const char *many = "a@b.cc http://x.io/p 2026-03-05 14:30 1,234 123e4567-e89b-12d3-a456-426614174000 ";
    size_t ml = strlen(many);
    clock_t t0 = clock();
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < n; i++)
            big[i] = pass == 0 ? (char)('0' + i % 10) : pass == 1 ? "http://a/b."[i % 11] : many[i % ml];
        for (size_t k = 0; k < 6; k++) {
            size_t *sp = NULL, m = 0;
            cr_assert_eq(deg_candidates(kinds[k], big, n, &sp, &m), DEG_OK, "%s: %s", kinds[k], deg_errmsg());
            if (pass == 2) cr_expect_gt(m, 1000, "%s: %zu candidates", kinds[k], m);
            deg_free(sp);
        }
    }
    cr_expect_lt(clock() - t0, 60 * CLOCKS_PER_SEC);
    free(big);
}
