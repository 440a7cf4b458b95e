/* Constrained-decoding acceptor tables (lib/deg/acceptor.h). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deg.h"

typedef struct {
    const char *pattern;
    size_t min_len, max_len;
    const char *text;
    int prefix_ok, eos_ok;
} acc_case;

#define NOMAX SIZE_MAX
static const acc_case ACC[] = {
    /* anchored code */
    {"^[A-Z]{3}-\\d{4}$", 0, NOMAX, "", 1, 0},
    {"^[A-Z]{3}-\\d{4}$", 0, NOMAX, "A", 1, 0},
    {"^[A-Z]{3}-\\d{4}$", 0, NOMAX, "ABC-", 1, 0},
    {"^[A-Z]{3}-\\d{4}$", 0, NOMAX, "ABC-12", 1, 0},
    {"^[A-Z]{3}-\\d{4}$", 0, NOMAX, "ABC-1234", 1, 1},
    {"^[A-Z]{3}-\\d{4}$", 0, NOMAX, "ABC-12345", 0, 0},
    {"^[A-Z]{3}-\\d{4}$", 0, NOMAX, "abc", 0, 0},
    {"^[A-Z]{3}-\\d{4}$", 0, NOMAX, "AB1", 0, 0},
    /* dates */
    {"^\\d{4}-\\d{2}-\\d{2}$", 0, NOMAX, "2026-0", 1, 0},
    {"^\\d{4}-\\d{2}-\\d{2}$", 0, NOMAX, "2026-03-05", 1, 1},
    {"^\\d{4}-\\d{2}-\\d{2}$", 0, NOMAX, "2026/03", 0, 0},
    {"^\\d{4}-\\d{2}-\\d{2}$", 0, 10, "2026-03-05 ", 0, 0},
    /* email-ish */
    {"^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$", 0, 254, "joe.b", 1, 0},
    {"^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$", 0, 254, "joe@ex", 1, 0},
    {"^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$", 0, 254, "joe@example.com", 1, 1},
    {"^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$", 0, 254, "joe@@", 0, 0},
    {"^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$", 0, 254, "Joe", 0, 0},
    /* search semantics: an unanchored pattern can always be appended */
    {"abc$", 0, NOMAX, "x", 1, 0},
    {"abc$", 0, NOMAX, "abcd", 1, 0},
    {"abc$", 0, NOMAX, "xabc", 1, 1},
    {"\\b(?:urgent|asap)\\b", 0, NOMAX, "please, asap!", 1, 1},
    {"\\b(?:urgent|asap)\\b", 0, NOMAX, "please", 1, 0},
    {"^a|b", 0, NOMAX, "xyz", 1, 0},
    {"^a|b", 0, NOMAX, "xbz", 1, 1},
    /* word boundary at the end */
    {"^(?:yes|no)\\b", 0, NOMAX, "yes", 1, 1},
    {"^(?:yes|no)\\b", 0, NOMAX, "yesx", 0, 0},
    {"^(?:yes|no)\\b", 0, NOMAX, "n", 1, 0},
    /* lengths in code points, no pattern */
    {NULL, 2, 4, "", 1, 0},
    {NULL, 2, 4, "a", 1, 0},
    {NULL, 2, 4, "ab", 1, 1},
    {NULL, 2, 4, "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 1, 1},
    {NULL, 2, 4, "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9x", 0, 0},
    {NULL, 0, 0, "", 1, 1},
    {NULL, 0, 0, "a", 0, 0},
    /* truncated UTF-8 at the end of a token */
    {"^\xC3\xA9+$", 2, 4, "\xC3", 1, 0},
    {"^\xC3\xA9+$", 2, 4, "\xC3\xA9\xC3\xA9\xC3", 1, 0},
    {"^\xC3\xA9+$", 2, 4, "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3", 0, 0},
    {"^\xC3\xA9+$", 2, 4, "a\xC3", 0, 0},
    {NULL, 0, NOMAX, "\xE2\x82", 1, 0},
    {NULL, 0, NOMAX, "\xFF", 0, 0},
    {NULL, 0, NOMAX, "\xC3\xC3", 0, 0},
    /* Unicode classes (UCP) and JS escapes */
    {"^\\w+$", 0, NOMAX, "\xC3\xA9t\xC3\xA9", 1, 1},
    {"^\\u0041+$", 0, NOMAX, "AA", 1, 1},
    {"^\\d+$", 0, NOMAX, "\xD9\xA1\xD9\xA2", 1, 1},
};

Test(acceptor, table)
{
    for (size_t i = 0; i < sizeof ACC / sizeof ACC[0]; i++) {
        const acc_case *c = &ACC[i];
        deg_acceptor *a = NULL;
        cr_assert_eq(deg_acceptor_new(c->pattern, c->min_len, c->max_len, &a), DEG_OK, "%s", deg_errmsg());
        size_t n = strlen(c->text);
        cr_expect_eq(deg_acceptor_prefix_ok(a, c->text, n), c->prefix_ok, "prefix_ok(/%s/, \"%s\")",
                     c->pattern ? c->pattern : "", c->text);
        cr_expect_eq(deg_acceptor_eos_ok(a, c->text, n), c->eos_ok, "eos_ok(/%s/, \"%s\")",
                     c->pattern ? c->pattern : "", c->text);
        deg_acceptor_free(a);
    }
}

/* Greedy walk: at every step the only admissible characters lead to the
 * pattern, so a walk over a small alphabet must end in a valid text. */
Test(acceptor, walk_reaches_valid_text)
{
    deg_acceptor *a;
    cr_assert_eq(deg_acceptor_new("^[A-Z]{2}\\d{3}$", 5, 5, &a), DEG_OK);
    const char alpha[] = "a1Z-9Q";
    char buf[16];
    size_t n = 0;
    while (!deg_acceptor_eos_ok(a, buf, n)) {
        int moved = 0;
        for (size_t k = 0; k < sizeof alpha - 1 && !moved; k++) {
            buf[n] = alpha[k];
            if (deg_acceptor_prefix_ok(a, buf, n + 1)) { n++; moved = 1; }
        }
        cr_assert(moved, "dead end after %zu chars", n);
        cr_assert_leq(n, 5);
    }
    buf[n] = 0;
    cr_expect_str_eq(buf, "ZZ111");
    deg_acceptor_free(a);
}

Test(acceptor, errors_and_bad_input)
{
    deg_acceptor *a = NULL;
    cr_expect_eq(deg_acceptor_new("(", 0, 10, &a), DEG_ERR_SCHEMA);
    cr_expect(strstr(deg_errmsg(), "offset 1"), "%s", deg_errmsg());
    cr_expect_null(a);
    cr_expect_eq(deg_acceptor_new("a", 5, 4, &a), DEG_ERR_RANGE);
    cr_expect_eq(deg_acceptor_new("\xff", 0, 4, &a), DEG_ERR_UTF8);
    cr_expect_eq(deg_acceptor_new("a", 0, 4, NULL), DEG_ERR_ARG);
    cr_expect_eq(deg_acceptor_prefix_ok(NULL, "a", 1), 0);
    deg_acceptor_free(NULL);
    /* 1 MB pattern: rejected at once, with the limit in the message */
    size_t big = 1 << 20;
    char *p = malloc(big + 1);
    memset(p, 'a', big);
    p[big] = 0;
    clock_t t0 = clock();
    cr_expect_eq(deg_acceptor_new(p, 0, 10, &a), DEG_ERR_SCHEMA);
    cr_expect(strstr(deg_errmsg(), "limit"), "%s", deg_errmsg());
    free(p);
    /* catastrophic backtracking is bounded by the match limit */
    cr_assert_eq(deg_acceptor_new("^(a+)+$", 0, NOMAX, &a), DEG_OK);
    char t[64];
    memset(t, 'a', 40);
    t[40] = 'b';
    cr_expect_eq(deg_acceptor_eos_ok(a, t, 41), 0);
    cr_expect_eq(deg_acceptor_prefix_ok(a, t, 41), 0);
    deg_acceptor_free(a);
    cr_expect(clock() - t0 < 20 * CLOCKS_PER_SEC);
}
