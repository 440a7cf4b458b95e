/* Tests of lib/base: status messages and their context, status names, regex compilation. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/regex.h"
#include "base/status.h"
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
