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
