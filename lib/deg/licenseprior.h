/* licenseprior.h - the licence prior of fill decoding: the licences a document states,
 * by name or by their text, read as the choice options they are (libdeg 0.24.0).
 *
 * Why: a licence has many spellings ("GPL-2+", "GPLv2+", "GNU General Public License ...
 * either version 2 of the License, or (at your option) any later version" are all SPDX
 * "GPL-2.0-or-later"; "Expat" is "MIT") and is often stated only by its text ("Permission
 * is hereby granted, free of charge, ..."). The key prior matches an option only as
 * written, and the 135M heads know no licence texts: a LICENSE file holding the MIT text
 * was answered "LGPL-2.1-or-later" at p 0.9 (bench/devreal set 2).
 *
 * Rule: a choice leaf outside arrays whose name or title has a word starting "licen"
 * (license, licence, licenses, license_id). Each string option is parsed as a licence
 * name (dg_license_parse); each option naming a licence the context states
 * (dg_license_written) gets key_prior.sole once. The heads stay the judges between
 * options that all match (a text naming several licences, an unstated version). */
#ifndef DG_DEG_LICENSEPRIOR_H
#define DG_DEG_LICENSEPRIOR_H

#include <stddef.h>

typedef enum dg_license_family {
    DG_LIC_NONE = 0,
    DG_LIC_GPL, DG_LIC_LGPL, DG_LIC_AGPL, DG_LIC_APACHE, DG_LIC_MIT, DG_LIC_ISC, DG_LIC_BSD,
    DG_LIC_MPL, DG_LIC_ZLIB, DG_LIC_UNLICENSE, DG_LIC_CC0, DG_LIC_ARTISTIC, DG_LIC_PSF,
    DG_LIC_EPL, DG_LIC_BSL, DG_LIC_PUBLIC_DOMAIN
} dg_license_family;

typedef struct dg_license {
    dg_license_family family;
    int major, minor; /* version (BSD: its clauses, "BSD-3-Clause" = 3); -1 unstated */
    int later;        /* 1 "or later" / "+", 0 "only", -1 unstated */
    size_t at;        /* dg_license_written: the byte its name or text starts at */
    size_t end;       /* dg_license_written: the byte after its name as an identifier
                       * (name_span: "GPL-2.0+", "GPLv2", "MIT", "GNU General Public
                       * License"), 0 for a licence stated by its text alone */
} dg_license;

/* The first licence named in s[0, n) (an option: "GPL-2.0-or-later", "Expat",
 * "BSD 3-Clause", "Apache License 2.0", "The MIT License"), case-insensitive, with the
 * version and "or later" after the name: 1 with *out, else 0. */
int dg_license_parse(const char *s, size_t n, dg_license *out);

/* The licences ctx (len bytes) states: every licence name written as a word ("GPL",
 * "LGPLv2.1+", "GNU Lesser General Public License", "Apache", "MIT", "Expat", "BSD",
 * ...; not inside an e-mail address; but for the GPL family's, whose names are
 * licences' only, with a word starting "licen" on its line or the line before: "MIT
 * License", "License: Expat", "<license>\n<name>Apache-2.0</name>", not "OS: UNIX (BSD,
 * Linux)" nor the Apache HTTP Server; version and "or later" read from the rest of its
 * sentence, at most
 * DG_LICENSE_WINDOW bytes), and the texts that state one without its name (MIT's
 * "Permission is hereby granted, free of charge", ISC's, the BSD clauses, zlib's,
 * the Unlicense's; whitespace runs and line breaks match a space). At most cap into
 * out; returns how many (the first cap). */
#define DG_LICENSE_WINDOW 240
#define DG_LICENSES_READ 64 /* the fill decoders' cap: licences read per context */
size_t dg_license_written(const char *ctx, size_t len, dg_license *out, size_t cap);

/* Does option licence o name written licence w: one family, equal versions where both
 * state one (minor 0 when unstated: "GPL-2" = "2.0"), equal "or later" where both state
 * it. */
int dg_license_same(const dg_license *o, const dg_license *w);

/* Is normalised name `words` (dg_key_norm) a licence's: a word starting "licen"? */
int dg_license_named(const char *words);

/* Is f a licence's leaf: outside arrays, its name or title licence-named
 * (dg_license_named)? Read by the choice rule (fill_decide.c) and the span rule
 * (fill_extract.c). */
struct dg_field_plan;
int dg_license_field(const struct dg_field_plan *f);

/* Does f's name or title name the licence itself (libdeg 0.26.0): a licence's leaf
 * (dg_license_field) whose normalised name ends in a word starting "licen" ("license",
 * "project licence") or in id / identifier / name / spdx / type right after one
 * ("license_id", "licence name")? Not an attribute of it: `license_version`,
 * `license_url`, `license_file` (datagen-v2 test license/Apache-2.0/1 read "Apache
 * License" for `license_version` when every licence-named string was read so). */
int dg_license_name_field(const struct dg_field_plan *f);

#endif
