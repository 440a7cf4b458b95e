/* The licence prior (lib/deg/licenseprior.h): licence names parsed as options, the
 * licences a text states by name or by its text, their match. Verdicts worked out by
 * hand from the SPDX License List's identifiers and the licences' texts. */
#include <criterion/criterion.h>
#include <string.h>

#include "deg.h"
#include "deg/licenseprior.h"
#include "deg/plan.h"

static dg_license parse(const char *s)
{
    dg_license L;
    cr_assert(dg_license_parse(s, strlen(s), &L), "%s: no licence", s);
    return L;
}

Test(licenseprior, parse_options)
{
    static const struct {
        const char *s;
        dg_license want;
    } C[] = {
        {"GPL-2.0-or-later", {DG_LIC_GPL, 2, 0, 1}},
        {"GPL-2.0-only", {DG_LIC_GPL, 2, 0, 0}},
        {"GPL-3", {DG_LIC_GPL, 3, -1, -1}},
        {"GPLv2+", {DG_LIC_GPL, 2, -1, 1}},
        {"LGPL-2.1+", {DG_LIC_LGPL, 2, 1, 1}},
        {"AGPL-3.0", {DG_LIC_AGPL, 3, 0, -1}},
        {"Apache-2.0", {DG_LIC_APACHE, 2, 0, -1}},
        {"Apache License 2.0", {DG_LIC_APACHE, 2, 0, -1}},
        {"MIT", {DG_LIC_MIT, -1, -1, -1}},
        {"Expat", {DG_LIC_MIT, -1, -1, -1}},
        {"BSD-3-Clause", {DG_LIC_BSD, 3, -1, -1}},
        {"BSD 2-Clause \"Simplified\"", {DG_LIC_BSD, 2, -1, -1}},
        {"New BSD", {DG_LIC_BSD, -1, -1, -1}}, /* "New" before the name: not read */
        {"MPL-2.0", {DG_LIC_MPL, 2, 0, -1}},
        {"Zlib", {DG_LIC_ZLIB, -1, -1, -1}},
        {"ISC", {DG_LIC_ISC, -1, -1, -1}},
        {"Public Domain", {DG_LIC_PUBLIC_DOMAIN, -1, -1, -1}},
    };
    for (size_t i = 0; i < sizeof C / sizeof *C; i++) {
        dg_license L = parse(C[i].s);
        cr_assert_eq(L.family, C[i].want.family, "%s", C[i].s);
        cr_assert_eq(L.major, C[i].want.major, "%s: major %d", C[i].s, L.major);
        cr_assert_eq(L.minor, C[i].want.minor, "%s: minor %d", C[i].s, L.minor);
        cr_assert_eq(L.later, C[i].want.later, "%s: later %d", C[i].s, L.later);
    }
    static const char *const NONE[] = {"proprietary", "submit", "LGPLish", "other", ""};
    for (size_t i = 0; i < sizeof NONE / sizeof *NONE; i++) {
        dg_license L;
        cr_assert_not(dg_license_parse(NONE[i], strlen(NONE[i]), &L), "%s", NONE[i]);
    }
}

/* The first licence a text states. */
static dg_license first(const char *text, size_t *n)
{
    dg_license w[8] = {0};
    *n = dg_license_written(text, strlen(text), w, 8);
    return w[0];
}

Test(licenseprior, written)
{
    static const struct {
        const char *text;
        dg_license want;
    } C[] = {
        {"License: GPL-2+\n", {DG_LIC_GPL, 2, -1, 1}},
        {"This program is free software; you can redistribute it under the terms of the GNU\n"
         "General Public License as published by the Free Software Foundation; either version 2\n"
         "of the License, or (at your option) any later version.\n",
         {DG_LIC_GPL, 2, -1, 1}},
        {"under the GNU Lesser General Public License, version 2.1 only.",
         {DG_LIC_LGPL, 2, 1, 0}},
        {"Licensed under the Apache License, Version 2.0 (the \"License\");",
         {DG_LIC_APACHE, 2, 0, -1}},
        {"MIT License\n\nCopyright (c) 2025 A. Author\n", {DG_LIC_MIT, -1, -1, -1}},
        {"Copyright (c) 2025 Yamashita, Yuu\n\nPermission is hereby granted, free of charge, to\n"
         "any person obtaining a copy of this software", {DG_LIC_MIT, -1, -1, -1}},
        {"  This software is provided 'as-is', without any express or implied\n  warranty.",
         {DG_LIC_ZLIB, -1, -1, -1}},
        {"Redistribution and use in source and binary forms, with or without modification,\n"
         "are permitted provided that ...\n3. Neither the name of the copyright holder nor the\n"
         "   names of its contributors may be used to endorse or promote products ...",
         {DG_LIC_BSD, 3, -1, -1}},
        /* libevent's third clause */
        {"Redistribution and use in source and binary forms ... are met:\n"
         "3. The name of the author may not be used to endorse or promote products\n",
         {DG_LIC_BSD, 3, -1, -1}},
        {"Redistribution and use in source and binary forms, with or without modification,\n"
         "are permitted provided that the following conditions are met: ...",
         {DG_LIC_BSD, 2, -1, -1}},
        /* a year after a versionless name is no version */
        {"GPL (c) 2009", {DG_LIC_GPL, -1, -1, -1}},
    };
    for (size_t i = 0; i < sizeof C / sizeof *C; i++) {
        size_t n;
        dg_license L = first(C[i].text, &n);
        cr_assert_geq(n, 1, "%zu: none read", i);
        cr_assert_eq(L.family, C[i].want.family, "%zu: family %d", i, L.family);
        cr_assert_eq(L.major, C[i].want.major, "%zu: major %d", i, L.major);
        cr_assert_eq(L.minor, C[i].want.minor, "%zu: minor %d", i, L.minor);
        cr_assert_eq(L.later, C[i].want.later, "%zu: later %d", i, L.later);
    }
    size_t n;
    first("We submit permits; the limit is a GPLish idea.", &n);
    cr_assert_eq(n, 0, "no licence in words that only hold a name");
    first("Written by Miles Bader <miles@gnu.ai.mit.edu>.", &n);
    cr_assert_eq(n, 0, "no licence in an e-mail address");
    dg_license u = first("See http://www.apache.org/licenses/LICENSE-2.0.txt", &n);
    cr_assert(n == 1 && u.family == DG_LIC_APACHE && u.major == 2, "a URL may name one");
    dg_license w[2];
    const char *three = "License: MIT or Apache-2.0 or ISC";
    cr_assert_eq(dg_license_written(three, strlen(three), w, 2), 2, "at most cap");
    cr_assert_eq(w[1].at, 16, "where its name starts");
    /* a name other than the GPL family's needs a "licen" word on its line or the one
     * before */
    first("Name: bc\nOS: UNIX (BSD, Linux)\n", &n);
    cr_assert_eq(n, 0, "an operating system");
    first("Served by the Apache HTTP Server at MIT.", &n);
    cr_assert_eq(n, 0);
    u = first("<license>\n  <name>Apache-2.0</name>\n", &n);
    cr_assert(n == 1 && u.family == DG_LIC_APACHE, "the line before says licence");
    u = first("Copying: GPLv3 only\n", &n);
    cr_assert(n == 1 && u.family == DG_LIC_GPL && u.major == 3 && u.later == 0, "GPL alone");
}

Test(licenseprior, same_and_named)
{
    dg_license gpl2plus = parse("GPL-2+"), gpl2 = parse("GPL-2.0-only");
    dg_license w_later = {DG_LIC_GPL, 2, -1, 1}, w_bare = {DG_LIC_GPL, -1, -1, -1};
    cr_assert(dg_license_same(&gpl2plus, &w_later));
    cr_assert_not(dg_license_same(&gpl2, &w_later), "only vs or later");
    cr_assert(dg_license_same(&gpl2, &w_bare), "no version written: every GPL option");
    dg_license gpl3 = parse("GPL-3.0-or-later"), lgpl = parse("LGPL-2.1-or-later");
    cr_assert_not(dg_license_same(&gpl3, &w_later));
    cr_assert_not(dg_license_same(&lgpl, &w_later));
    dg_license bsd3 = parse("BSD-3-Clause"), bsd2 = parse("BSD-2-Clause");
    dg_license w_bsd3 = {DG_LIC_BSD, 3, -1, -1};
    cr_assert(dg_license_same(&bsd3, &w_bsd3));
    cr_assert_not(dg_license_same(&bsd2, &w_bsd3));
    cr_assert(dg_license_named("license"));
    cr_assert(dg_license_named("spdx licence id"));
    cr_assert(dg_license_named("licenses"));
    cr_assert_not(dg_license_named("unlicensed count"));
    cr_assert_not(dg_license_named("name"));
}

/* A named licence's identifier as written (dg_license end): the characters written onto
 * the name, a several-word name's "License", never a version in words; a licence stated
 * by its text alone has none. Worked out by hand from each text. */
Test(licenseprior, name_spans)
{
    static const struct {
        const char *text, *want;
    } C[] = {
        {"/* SPDX-License-Identifier: GPL-2.0+ WITH Linux-syscall-note */", "GPL-2.0+"},
        {"   Licensed under the MIT license:", "MIT"},
        {"under the terms of the MIT license. See LICENSE", "MIT"},
        {"licensed GPLv2, see COPYING", "GPLv2"},
        {"License: BSD-3-Clause.", "BSD-3-Clause"},
        {"the GNU General Public License version 2", "GNU General Public License"},
        {"licensed under (GPL-2.0-or-later)", "GPL-2.0-or-later"},
        {"the Apache License, Version 2.0", "Apache"},
    };
    for (size_t i = 0; i < sizeof C / sizeof *C; i++) {
        size_t n;
        dg_license L = first(C[i].text, &n);
        cr_assert_geq(n, 1, "%s", C[i].text);
        cr_assert(L.end > L.at, "%s", C[i].text);
        cr_assert(L.end - L.at == strlen(C[i].want) &&
                      !memcmp(C[i].text + L.at, C[i].want, L.end - L.at),
                  "%s: %.*s", C[i].text, (int)(L.end - L.at), C[i].text + L.at);
    }
    size_t n;
    dg_license L = first("Permission is hereby granted, free of charge, to any person obtaining a "
                         "copy", &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(L.family, DG_LIC_MIT);
    cr_assert_eq(L.end, 0, "stated by its text: no name to read");
}

/* Which licence-named leaves name the licence itself (dg_license_name_field): the span
 * rule reads licence names for these only, not for an attribute of the licence. */
Test(licenseprior, name_fields)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"license\":{\"type\":\"string\"},"
        "\"projectLicence\":{\"type\":\"string\"},"
        "\"license_id\":{\"type\":\"string\"},"
        "\"x\":{\"type\":\"string\",\"title\":\"License name\"},"
        "\"license_version\":{\"type\":\"string\"},"
        "\"LicenseURL\":{\"type\":\"string\"},"
        "\"owner\":{\"type\":\"string\"},"
        "\"deps\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
        "{\"license\":{\"type\":\"string\"}}}}}}";
    deg_plan *p = NULL;
    char *errs = NULL;
    cr_assert_eq(deg_plan_compile(schema, strlen(schema), &p, &errs), DEG_OK);
    const dg_plan *P = (const dg_plan *)p;
    static const struct {
        const char *pointer;
        int field, name_field;
    } C[] = {
        {"/license", 1, 1}, {"/projectLicence", 1, 1}, {"/license_id", 1, 1}, {"/x", 1, 1},
        {"/license_version", 1, 0}, {"/LicenseURL", 1, 0}, {"/owner", 0, 0},
        {"/deps/*/license", 0, 0}, /* an array's leaf: the context's licences are not its */
    };
    for (size_t i = 0; i < sizeof C / sizeof *C; i++) {
        const dg_field_plan *f = NULL;
        for (size_t j = 0; j < P->n_fields; j++)
            if (!strcmp(P->fields[j].pointer, C[i].pointer)) f = &P->fields[j];
        cr_assert(f, "%s", C[i].pointer);
        cr_assert_eq(dg_license_field(f), C[i].field, "%s", C[i].pointer);
        cr_assert_eq(dg_license_name_field(f), C[i].name_field, "%s", C[i].pointer);
    }
    deg_plan_free(p);
}
