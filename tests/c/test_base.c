/* Tests of lib/base: status messages, status names, regex compilation, the growth rule, the string builder. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/regex.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "deg.h"

Test(base, fail_sets_message_and_returns_status)
{
    dg_clear_error();
    cr_assert_str_eq(deg_errmsg(), "");
    deg_status s = dg_fail(DEG_ERR_FORMAT, "bad magic %#x at offset %d", 0x1234, 7);
    cr_assert_eq(s, DEG_ERR_FORMAT);
    cr_assert_str_eq(deg_errmsg(), "bad magic 0x1234 at offset 7");
    dg_fail_context(s, "loading %s", "m.gguf");
    cr_assert_str_eq(deg_errmsg(), "loading m.gguf: bad magic 0x1234 at offset 7");
}

Test(base, status_names_and_version)
{
    cr_assert_str_eq(deg_status_name(DEG_ERR_UTF8), "DEG_ERR_UTF8");
    cr_assert_str_eq(deg_status_name((deg_status)-999), "DEG_ERR_UNKNOWN");
    cr_assert_str_eq(deg_version(), DEG_VERSION_STRING);
}

/* A context prefix on a message already near the cap: the result is cut at
 * the cap and marked with "...", the prefix and the message start intact. */
Test(base, fail_context_cuts_long_messages_visibly)
{
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    dg_fail(DEG_ERR_IO, "%s", big);
    cr_assert_eq(strlen(deg_errmsg()), 2047);
    dg_fail_context(DEG_ERR_IO, "reading %s", "a.gguf");
    const char *m = deg_errmsg();
    cr_assert_eq(strlen(m), 2047);
    cr_assert_eq(strncmp(m, "reading a.gguf: xxx", 19), 0, "%.40s", m);
    cr_assert_str_eq(m + 2044, "...");
    dg_fail(DEG_ERR_IO, "short");
    dg_fail_context(DEG_ERR_IO, "ctx");
    cr_assert_str_eq(deg_errmsg(), "ctx: short");
}

/* dg_regex_compile: PCRE2's own error and offset on failure; with extra options and
 * JIT the code matches as PCRE2 says (UCP: \d takes Arabic-Indic digits; EXTRA_ALT_BSUX:
 * \u{e9} is U+00E9). */
Test(base, regex_compile_reports_and_matches)
{
    dg_regex_error e;
    cr_assert_null(dg_regex_compile("ab(c", PCRE2_ZERO_TERMINATED, PCRE2_UTF, 0, 0, &e));
    cr_expect_eq(e.code, PCRE2_ERROR_MISSING_CLOSING_PARENTHESIS);
    cr_expect_eq(e.offset, 4);
    cr_expect(strstr(e.msg, "missing closing parenthesis") != NULL, "%s", e.msg);
    cr_assert_null(dg_regex_compile("a\xff", 2, PCRE2_UTF, 0, 0, &e));
    cr_expect_eq(e.code, PCRE2_ERROR_UTF8_ERR21, "%d", e.code);

    const char *pat = "^\\d+\\u{e9}$";
    pcre2_code *re = dg_regex_compile(pat, strlen(pat), PCRE2_UTF | PCRE2_UCP | PCRE2_ALT_BSUX,
                                      PCRE2_EXTRA_ALT_BSUX, PCRE2_JIT_COMPLETE, &e);
    cr_assert_not_null(re, "%s", e.msg);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    const char *yes = "\xd9\xa3" "7\xc3\xa9", *no = "7e";
    cr_expect_gt(pcre2_match(re, (PCRE2_SPTR)yes, strlen(yes), 0, 0, md, NULL), 0);
    cr_expect_eq(pcre2_match(re, (PCRE2_SPTR)no, strlen(no), 0, 0, md, NULL), PCRE2_ERROR_NOMATCH);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
}

/* The one growth rule (base/grow.h): capacities double from 16 and stay powers of two
 * (hash tables size by them); a need past SIZE_MAX / 2 gives the need itself. */
Test(base, grow_cap_doubles_from_16)
{
    cr_assert_eq(dg_grow_cap(0, 0), 0);
    cr_assert_eq(dg_grow_cap(0, 1), 16);
    cr_assert_eq(dg_grow_cap(0, 17), 32);
    cr_assert_eq(dg_grow_cap(0, 2 * 1000 + 1), 2048);
    cr_assert_eq(dg_grow_cap(64, 64), 64);   /* room already */
    cr_assert_eq(dg_grow_cap(64, 65), 128);
    cr_assert_eq(dg_grow_cap(3, 7), 12);     /* doubles what is there */
    cr_assert_eq(dg_grow_cap(16, SIZE_MAX - 5), SIZE_MAX - 5);
}

/* dg_grow keeps the contents, grows only when needed, and refuses a byte size past
 * SIZE_MAX with DEG_ERR_NOMEM and a message, leaving the array as it was. */
Test(base, grow_keeps_contents_and_refuses_overflow)
{
    int32_t *a = NULL;
    size_t cap = 0;
    cr_assert_eq(DG_GROW(a, cap, 3), DEG_OK);
    cr_assert_not_null(a);
    cr_assert_eq(cap, 16);
    for (int i = 0; i < 16; i++) a[i] = i * 7;
    int32_t *before = a;
    cr_assert_eq(DG_GROW(a, cap, 16), DEG_OK);
    cr_assert_eq(a, before); /* no reallocation when it fits */
    cr_assert_eq(DG_GROW(a, cap, 100), DEG_OK);
    cr_assert_eq(cap, 128);
    for (int i = 0; i < 16; i++) cr_assert_eq(a[i], i * 7);
    before = a;
    dg_clear_error();
    cr_assert_eq(DG_GROW(a, cap, SIZE_MAX / 2), DEG_ERR_NOMEM);
    cr_assert_eq(a, before);
    cr_assert_eq(cap, 128);
    cr_assert(strstr(deg_errmsg(), "does not fit in memory"), "%s", deg_errmsg());
    cr_assert_eq(a[15], 15 * 7);
    free(a);
}

/* Parallel arrays share one capacity: all are resized to it, a failure leaves it. */
Test(base, grow_all_resizes_parallel_arrays)
{
    int32_t *x = NULL;
    double *y = NULL;
    size_t cap = 0;
    void *const arrs[] = {&x, &y};
    const size_t elems[] = {sizeof *x, sizeof *y};
    cr_assert_eq(dg_grow_all(arrs, elems, 2, &cap, 20), DEG_OK);
    cr_assert_eq(cap, 32);
    x[31] = 5;
    y[31] = 2.5;
    cr_assert_eq(dg_grow_all(arrs, elems, 2, &cap, 33), DEG_OK);
    cr_assert_eq(cap, 64);
    cr_assert_eq(x[31], 5);
    cr_assert_eq(y[31], 2.5);
    const size_t huge[] = {sizeof *x, SIZE_MAX / 8};
    cr_assert_eq(dg_grow_all(arrs, huge, 2, &cap, 65), DEG_ERR_NOMEM);
    cr_assert_eq(cap, 64);
    free(x);
    free(y);
}

/* The string builder's reserve and truncate (the validator's pointers push and pop). */
Test(base, strbuf_reserve_and_truncate)
{
    dg_strbuf b = {0};
    dg_sb_puts(&b, "/properties");
    size_t mark = b.len;
    cr_assert_eq(dg_sb_reserve(&b, 100), 0);
    cr_assert_geq(b.cap, b.len + 101);
    dg_sb_printf(&b, "/%s/%d", "items", 3);
    cr_assert_str_eq(b.p, "/properties/items/3");
    dg_sb_truncate(&b, mark);
    cr_assert_str_eq(b.p, "/properties");
    dg_sb_truncate(&b, 1000); /* longer than the text: nothing */
    cr_assert_str_eq(b.p, "/properties");
    cr_assert_eq(dg_sb_reserve(&b, SIZE_MAX - 3), -1);
    cr_assert(b.oom);
    dg_sb_puts(&b, "x"); /* sticky: appends after a failure do nothing */
    cr_assert_str_eq(b.p, "/properties");
    free(b.p);
}
