/* The block a field's description points at (lib/deg/locator.c) and the keys that say
 * what else an address is for (lib/deg/keyvocab.c dg_key_address_purpose). */
#include <criterion/criterion.h>
#include <string.h>

#include "deg/keyprior.h"
#include "deg/locator.h"

/* The block desc points at in ctx as text, "" when none. */
static const char *block(const char *desc, const char *ctx, char *out, size_t cap)
{
    size_t b0 = 0, b1 = 0;
    out[0] = 0;
    if (dg_locator_block(desc, ctx, strlen(ctx), &b0, &b1)) {
        cr_assert(b0 <= b1 && b1 <= strlen(ctx) && b1 - b0 < cap);
        memcpy(out, ctx + b0, b1 - b0);
        out[b1 - b0] = 0;
    }
    return out;
}

static const char DEP[] =
    "Name: demo\n"
    "License: Apache-2.0\n"
    "\n"
    "Files: *\n"
    "Copyright: 2001 A\n"
    "License: GPL-2+\n"
    "\n"
    "Files: src/*.c\n"
    "License: MIT\n";

Test(locator, paragraph_of_a_quoted_key_line)
{
    char b[256];
    cr_assert_str_eq(block("license of the main files (Files: *)", DEP, b, sizeof b),
                     "Files: *\nCopyright: 2001 A\nLicense: GPL-2+\n");
    /* other quote marks, case and blanks as the document's own line */
    cr_assert_str_eq(block("the licence of `files:   src/*.c`", DEP, b, sizeof b),
                     "Files: src/*.c\nLicense: MIT\n");
    cr_assert_str_eq(block("licence (\"Files: src/*.c\")", DEP, b, sizeof b),
                     "Files: src/*.c\nLicense: MIT\n");
}

Test(locator, no_block)
{
    char b[256];
    cr_assert_str_eq(block(NULL, DEP, b, sizeof b), "");
    cr_assert_str_eq(block("licence of the package", DEP, b, sizeof b), "", "no quote");
    cr_assert_str_eq(block("(Files: lib/*)", DEP, b, sizeof b), "", "no such line");
    cr_assert_str_eq(block("(Files: src/*)", DEP, b, sizeof b), "", "a value is whole");
    cr_assert_str_eq(block("(License: MIT)", "License: MIT\n\nLicense: MIT\n", b, sizeof b), "",
                     "two lines: ambiguous");
    cr_assert_str_eq(block("the project's licence", DEP, b, sizeof b), "", "an apostrophe");
}

Test(locator, next_quote_when_the_first_points_nowhere)
{
    char b[256];
    cr_assert_str_eq(block("(see 'Files: lib/*', else 'Files: *')", DEP, b, sizeof b),
                     "Files: *\nCopyright: 2001 A\nLicense: GPL-2+\n");
}

Test(locator, ini_section)
{
    const char *ini = "[tox]\nenvlist = py,docs\n\n[testenv]\ndeps = pytest\n\n"
                      "[testenv:docs]\ndeps = sphinx\n\nskip_install = true\n[flake8]\nmax = 9\n";
    char b[256];
    cr_assert_str_eq(block("dependencies of [testenv:docs]", ini, b, sizeof b),
                     "[testenv:docs]\ndeps = sphinx\n\nskip_install = true\n");
    cr_assert_str_eq(block("(\"[testenv]\")", ini, b, sizeof b), "[testenv]\ndeps = pytest\n\n");
}

Test(locator, dpkg_package_line_is_whole)
{
    const char *st = "Package: libc6-dev\nVersion: 1\n\nPackage: libc6\nVersion: 2\n";
    char b[256];
    cr_assert_str_eq(block("version of libc6 (Package: libc6)", st, b, sizeof b),
                     "Package: libc6\nVersion: 2\n");
}

Test(locator, address_purpose_keys)
{
    cr_assert(dg_key_address_purpose("repository url"));
    cr_assert(dg_key_address_purpose("bugs"));
    cr_assert(dg_key_address_purpose("vcs git"));
    cr_assert(dg_key_address_purpose("copyright"));
    cr_assert_not(dg_key_address_purpose("homepage"));
    cr_assert_not(dg_key_address_purpose("upstream contact"));
    cr_assert_not(dg_key_address_purpose("project url"), "a project's URL may be its home");
    cr_assert_not(dg_key_address_purpose(""));
}
