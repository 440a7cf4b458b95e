#include <criterion/criterion.h>
#include <string.h>

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
