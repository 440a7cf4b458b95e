/* The document-key prior (lib/deg/keyprior.c): key/value line scanning and
 * code point offsets, key normalisation, field matching, deg.json validation,
 * and deg_fill on the tiny random models where a large bonus must put the
 * labelled value in every field kind (random heads alone would not). */
#include <criterion/criterion.h>
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_fixture.h"
#include "deg.h"
#include "base/utf8.h"
#include "deg/keyprior.h"
#include "deg/plan.h"
#include "deg/sentences.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static const char *TINY[] = {"tiny-llama", "tiny-qwen3"};

static const char *norm(const char *s)
{
    static char out[DG_KEY_MAX_LEN + 1];
    dg_key_norm(s, strlen(s), out, sizeof out);
    return out;
}

/* The plan of a schema that must compile. */
static deg_plan *compile_plan(const char *schema)
{
    deg_plan *p = NULL;
    char *errs = NULL;
    cr_assert_eq(deg_plan_compile(schema, strlen(schema), &p, &errs), DEG_OK, "%s",
                 errs ? errs : deg_errmsg());
    return p;
}

/* A key line scan's expected key and value (value as UTF-8 bytes). */
typedef struct kv_want {
    const char *key, *value;
} kv_want;

/* ix holds exactly the nw lines of want, in order: each key, and each value's text
 * (code points of ctx mapped to bytes, so non-ASCII contexts compare too). */
static void expect_lines(const char *ctx, const dg_keylines *ix, const kv_want *want, size_t nw)
{
    cr_assert_eq(ix->n, nw, "got %zu lines", ix->n);
    size_t len = strlen(ctx), n = 0;
    size_t *cpb = malloc((len + 1) * sizeof *cpb);
    cr_assert_not_null(cpb);
    for (size_t b = 0; b < len; b++)
        if (((unsigned char)ctx[b] & 0xC0) != 0x80) cpb[n++] = b;
    cpb[n] = len;
    for (size_t i = 0; i < nw; i++) {
        cr_assert_str_eq(ix->p[i].key, want[i].key, "line %zu", i);
        size_t b0 = cpb[ix->p[i].val0], b1 = cpb[ix->p[i].val1];
        cr_assert(b1 - b0 == strlen(want[i].value) && !memcmp(ctx + b0, want[i].value, b1 - b0),
                  "line %zu: %.*s", i, (int)(b1 - b0), ctx + b0);
    }
    free(cpb);
}

Test(keyprior, norm)
{
    cr_assert_str_eq(norm("Upstream-Name"), "upstream name");
    cr_assert_str_eq(norm("installedSizeKb"), "installed size kb");
    cr_assert_str_eq(norm("  Home-page "), "home page");
    cr_assert_str_eq(norm("The name of the package"), "name package");
    cr_assert_str_eq(norm("--"), "");
    cr_assert_str_eq(norm("Stra\xc3\x9f" "e-Nr"), "stra\xc3\x9f""e nr");
}

Test(keyprior, scan_lines_and_offsets)
{
    /* "é" is two bytes and one code point: offsets after it are code points; '*' is
     * emphasis only on a line that opens with it, else a glob's (libdeg 0.27.0) */
    const char *ctx = "Name: blinker\n"
                      "Résumé: ok\n"
                      "Version:    1.9.0  \n"
                      "not a key line at all, it has: too many words in front of it\n"
                      "| Home-page | https://x.example/ |\n"
                      "**License:** MIT\n"
                      "Files: *\n"
                      "Sources: src/*\n"
                      "*Note: read me*\n"
                      "Empty:\n"
                      "PRETTY_NAME=\"Debian GNU/Linux 12\"\n"
                      "http://a.example/b";
    dg_keylines ix = {0};
    cr_assert_eq(dg_keylines_scan(ctx, strlen(ctx), &ix), DEG_OK);
    const kv_want want[] = {
        {"name", "blinker"}, {"r\xc3\xa9sum\xc3\xa9", "ok"}, {"version", "1.9.0"}, {"home page", "https://x.example/"},
        {"license", "MIT"}, {"files", "*"}, {"sources", "src/*"}, {"note", "read me"},
        {"pretty name", "Debian GNU/Linux 12"}};
    expect_lines(ctx, &ix, want, sizeof want / sizeof *want);
    dg_keylines_free(&ix);
    cr_assert_null(ix.p);
}

/* HTML rows on one line are key lines when key and value hold no markup: the
 * value is the <td>'s text; a cell holding a list is lists.c's, not a key line. */
Test(keyprior, scan_html_rows)
{
    const char *ctx = "<html><body>\n<table>\n"
                      "<tr><th>Template</th><td>locales/default</td></tr>\n"
                      "  <TR><TH> Top-level type</TH> <TD> application </TD></TR>\n"
                      "<tr><th>Zones</th><td><ol><li>Europe/Monaco</li></ol></td></tr>\n"
                      "<tr><th>Bad+key</th><td>x</td></tr>\n"
                      "<th>License</th><td>MPL</td>\n"
                      "<tr><th>Empty</th><td></td></tr>\n</table>";
    dg_keylines ix = {0};
    cr_assert_eq(dg_keylines_scan(ctx, strlen(ctx), &ix), DEG_OK);
    const kv_want want[] = {
        {"template", "locales/default"}, {"top level type", "application"}, {"license", "MPL"}};
    expect_lines(ctx, &ix, want, sizeof want / sizeof *want);
    dg_keylines_free(&ix);
}

/* JSON members are key lines: quoted key, value inside its quotes; a member
 * opening an object or array, or null, has no value; a key with bytes no key
 * has ("a+b") is no key line; a member of an object a member opens is also "PARENT
 * KEY" (libdeg 0.26.0, exact names only). */
Test(keyprior, scan_json_members)
{
    const char *ctx = "{\n"
                      "  \"name\": \"left-pad\",\n"
                      "  \"version\" : \"1.3.0\",\n"
                      "  \"private\": true,\n"
                      "  \"homepage\": null,\n"
                      "  \"keywords\": [\"pad\", \"left\"],\n"
                      "  \"repository\": {\n"
                      "    \"type\": \"git\"\n"
                      "  },\n"
                      "  \"a+b\": \"x\",\n"
                      "  \"engines\": {\"node\": \">=0.8\"}\n"
                      "}";
    dg_keylines ix = {0};
    cr_assert_eq(dg_keylines_scan(ctx, strlen(ctx), &ix), DEG_OK);
    const kv_want want[] = {
        {"name", "left-pad"}, {"version", "1.3.0"}, {"private", "true"}, {"type", "git"},
        {"repository type", "git"}};
    expect_lines(ctx, &ix, want, sizeof want / sizeof *want);
    /* the member under "repository": { and its qualified line, exact names only (the
     * nested one since libdeg 0.27.0) */
    for (size_t i = 0; i < ix.n; i++)
        cr_assert_eq(ix.p[i].exact_only, i >= 3, "line %zu", i);
    dg_keylines_free(&ix);
}

/* Directive lines "KEY value" (no separator) are key lines in a block of 3 or more:
 * comments, blanks, bare flags and key lines do not end a block (nor count); a prose
 * line does; a comment and
 * ';' after the value are left out; two directive lines alone are no block; a value
 * of 7 words or ending in '.' is prose. In document order with the key lines. */
Test(keyprior, scan_directive_lines)
{
    const char *ctx = "# sshd_config\n"
                      "Port 22\n"
                      "\n"
                      "#PermitRootLogin yes\n"
                      "PermitRootLogin no   # not as root\n"
                      "Banner: /etc/issue.net\n"
                      "auto-key-retrieve\n"
                      "    UID_MIN\t\t 1000\n"
                      "ServerRoot \"/etc/apache2\"\n"
                      "worker_processes auto;\n"
                      "This line is prose with many more words than a value.\n"
                      "Host one\n"
                      "Flag\n"
                      "User two\n"
                      "The end of it all here now yes.\n"
                      "Short one\n"
                      "Short two\n"
                      "Short three.\n";
    dg_keylines ix = {0};
    cr_assert_eq(dg_keylines_scan(ctx, strlen(ctx), &ix), DEG_OK);
    const kv_want want[] = {
        {"port", "22"}, {"permit root login", "no"}, {"banner", "/etc/issue.net"},
        {"uid min", "1000"}, {"server root", "/etc/apache2"}, {"worker processes", "auto"}};
    expect_lines(ctx, &ix, want, sizeof want / sizeof *want);
    dg_keylines_free(&ix);
}

/* scripts/fuzz (fuzz_lists, CI on ab3cad8): a context ending in a directive's lone "-"
 * value was read one byte past its end; an exact-length heap copy lets ASan see it. */
Test(keyprior, scan_directive_at_the_end)
{
    static const char in[] = "Zteo  -";
    char *ctx = malloc(sizeof in - 1);
    cr_assert_not_null(ctx);
    memcpy(ctx, in, sizeof in - 1);
    dg_keylines ix = {0};
    cr_assert_eq(dg_keylines_scan(ctx, sizeof in - 1, &ix), DEG_OK);
    cr_assert_eq(ix.n, 0); /* one directive line is no block */
    dg_keylines_free(&ix);
    free(ctx);
}

/* The first Debian changelog entry's header and trailer are key lines (keyline_forms.c);
 * the second entry's are not, nor a line that only looks like a header. */
Test(keyprior, scan_changelog_entry)
{
    const char *ctx = "Changes:\n"
                      "not a header (1.0) x; y\n"
                      "bc (1.07.1-3) unstable; urgency=medium\n"
                      "\n"
                      "  * bump standards version to 4.6.0\n"
                      "\n"
                      " -- Ryan Kavanagh <rak@debian.org>  Sat, 07 Aug 2021 10:32:14 -0400\n"
                      "\n"
                      "bc (1.07.1-2) unstable; urgency=low\n"
                      " -- Someone Else <se@debian.org>  Mon, 01 Jan 2018 00:00:00 +0000\n";
    dg_keylines ix = {0};
    cr_assert_eq(dg_keylines_scan(ctx, strlen(ctx), &ix), DEG_OK);
    struct { const char *key, *value; } want[] = {
        {"changes", NULL}, {"package", "bc"}, {"version", "1.07.1-3"},
        {"distribution", "unstable"}, {"urgency", "medium"},
        {"maintainer", "Ryan Kavanagh <rak@debian.org>"},
        {"date", "Sat, 07 Aug 2021 10:32:14 -0400"}};
    size_t nw = sizeof want / sizeof *want, j = 0;
    for (size_t i = 0; i < ix.n; i++) {
        if (!strcmp(ix.p[i].key, "changes")) continue; /* "Changes:" has no value */
        cr_assert(j + 1 < nw, "extra line %s", ix.p[i].key);
        j++;
        cr_assert_str_eq(ix.p[i].key, want[j].key);
        cr_assert_eq(ix.p[i].val1 - ix.p[i].val0, strlen(want[j].value), "%s", want[j].key);
        cr_assert(memcmp(ctx + ix.p[i].val0, want[j].value, strlen(want[j].value)) == 0,
                  "%s: %.*s", want[j].key, (int)(ix.p[i].val1 - ix.p[i].val0),
                  ctx + ix.p[i].val0);
    }
    cr_assert_eq(j + 1, nw);
    dg_keylines_free(&ix);
}

static const dg_field_plan *field(deg_plan *p, const char *pointer)
{
    const dg_plan *P = (const dg_plan *)p;
    for (size_t i = 0; i < P->n_fields; i++)
        if (strcmp(P->fields[i].pointer, pointer) == 0) return &P->fields[i];
    cr_assert_fail("no field %s", pointer);
    return NULL;
}

/* Copyright notices: "copyright year", "copyright holder" and "holder" key lines, after comment
 * marks and "(c)"/"©"; the holder ends before an e-mail, " -" or "All rights
 * reserved", and only the first notice's is read (libdeg 0.26.0); "Copyright:" is a
 * plain key line, and prose that only says "copyright" or names no year is none. */
Test(keyprior, scan_copyright_notices)
{
    const char *ctx = "/* zlib.h\n"
                      "  Copyright (C) 1995-2022 Jean-loup Gailly and Mark Adler\n"
                      " * Copyright © 2005, 2007 by Foo Bar <foo@bar.org>\n"
                      "# Copyright 2010 The Baz Authors. All rights reserved.\n"
                      "Copyright: 2001 Not A Notice\n"
                      "copyright holders may not use this\n"
                      "Copyright (c) Nobody\n";
    dg_keylines ix = {0};
    cr_assert_eq(dg_keylines_scan(ctx, strlen(ctx), &ix), DEG_OK);
    const kv_want want[] = {
        {"copyright year", "1995-2022"},
        {"copyright holder", "Jean-loup Gailly and Mark Adler"},
        {"holder", "Jean-loup Gailly and Mark Adler"},
        {"copyright year", "2005, 2007"}, /* later notices: their years only */
        {"copyright year", "2010"},
        {"copyright", "2001 Not A Notice"}};
    expect_lines(ctx, &ix, want, sizeof want / sizeof *want);
    dg_keylines_free(&ix);
}

/* XML leaf elements on one line are key lines (camelCase split, a namespace prefix
 * dropped), each key's shallowest only, and every element's "PARENT KEY" for exact names: the project's <name>, not a developer's; the
 * parent's <groupId> when the project writes none; comments, CDATA and declarations
 * hold no tags; a multi-line text or one holding markup is no key line. */
Test(keyprior, scan_xml_elements)
{
    const char *ctx = "<?xml version=\"1.0\"?>\n"
                      "<project xmlns=\"http://maven.apache.org/POM/4.0.0\"\n"
                      "  xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">\n"
                      "  <!-- <name>commented out</name> -->\n"
                      "  <parent>\n"
                      "    <groupId>org.apache.maven</groupId>\n"
                      "    <artifactId>maven</artifactId>\n"
                      "  </parent>\n"
                      "  <artifactId>maven-artifact</artifactId>\n"
                      "  <name> Maven Artifact </name>\n"
                      "  <description>two\n lines</description>\n"
                      "  <developers><developer>\n"
                      "    <name>Timothy Wall</name>\n"
                      "    <dc:email>tw@example.org</dc:email>\n"
                      "  </developer></developers>\n"
                      "  <note>a <b>bold</b> word</note>\n"
                      "  <empty></empty><self/>\n"
                      "</project>\n";
    dg_keylines ix = {0};
    cr_assert_eq(dg_keylines_scan(ctx, strlen(ctx), &ix), DEG_OK);
    /* key, value, exact_only: "PARENT KEY" lines are read by an exact name only */
    struct { const char *key, *value; int exact_only; } want[] = {
        /* the start tag's attribute line is dg_keyline_split's "key: value" */
        {"xmlns", "xsi=\"http://www.w3.org/2001/XMLSchema-instance\">", 0},
        {"group id", "org.apache.maven", 0}, {"parent group id", "org.apache.maven", 1},
        {"parent artifact id", "maven", 1},
        {"artifact id", "maven-artifact", 0}, {"project artifact id", "maven-artifact", 1},
        {"name", "Maven Artifact", 0}, {"project name", "Maven Artifact", 1},
        {"developer name", "Timothy Wall", 1},
        {"email", "tw@example.org", 0}, {"developer email", "tw@example.org", 1}};
    size_t nw = sizeof want / sizeof *want;
    cr_assert_eq(ix.n, nw, "got %zu lines", ix.n);
    for (size_t i = 0; i < nw; i++) {
        cr_assert_str_eq(ix.p[i].key, want[i].key);
        cr_assert_eq(ix.p[i].val1 - ix.p[i].val0, strlen(want[i].value), "%s", want[i].key);
        cr_assert(memcmp(ctx + ix.p[i].val0, want[i].value, strlen(want[i].value)) == 0,
                  "%s: %.*s", want[i].key, (int)(ix.p[i].val1 - ix.p[i].val0), ctx + ix.p[i].val0);
        cr_assert_eq(ix.p[i].exact_only, want[i].exact_only, "%s", want[i].key);
    }
    dg_keylines_free(&ix);
    /* no '<': nothing to read; an unterminated tag or comment ends the scan */
    const char *bad[] = {"<a>x</a", "<a x=\"1>y</a>", "<!-- <a>x</a>", "<a>x</b>", "<>x</>"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(dg_keylines_scan(bad[i], strlen(bad[i]), &ix), DEG_OK);
        cr_assert_eq(ix.n, 0, "%s: %zu lines", bad[i], ix.n);
        dg_keylines_free(&ix);
    }
}

/* The key vocabulary (keyvocab.c): other words for one fact, partial only. */
Test(keyprior, vocabulary)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"dependencies\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
        "\"build_dependencies\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
        "\"name\":{\"type\":\"string\"},"
        "\"contact_email\":{\"type\":\"string\"},"
        "\"source_url\":{\"type\":\"string\"},"
        "\"license\":{\"type\":\"string\"},"
        "\"email\":{\"type\":\"string\"},"
        "\"website\":{\"type\":\"string\"},"
        "\"bug_tracker_url\":{\"type\":\"string\"}}}";
    deg_plan *p = compile_plan(schema);
    /* arrays: the list prior matches by name (dg_key_match_name, plural folded) */
    cr_assert_eq(dg_key_match_name("dependencies", NULL, "requires", 1), 1);
    cr_assert_eq(dg_key_match_name("dependencies", NULL, "depends", 1), 1);
    cr_assert_eq(dg_key_match_name("dependencies", NULL, "install requires", 1), 1);
    cr_assert_eq(dg_key_match_name("dependencies", NULL, "requirements", 1), 1);
    /* the same words only: a qualified key is another fact */
    cr_assert_eq(dg_key_match_name("dependencies", NULL, "requires python", 1), 0);
    cr_assert_eq(dg_key_match_name("dependencies", NULL, "build depends", 1), 0);
    cr_assert_eq(dg_key_match_name("build_dependencies", NULL, "depends", 1), 0);
    cr_assert_eq(dg_key_match_name("private_dependencies", NULL, "requires private", 1), 1,
                 "any order");
    cr_assert_eq(dg_key_match_name("dependencies", NULL, "prerequisites", 1), 1);
    cr_assert_eq(dg_key_match_name("dependencies", NULL, "dependency", 1), 2, "as written");
    cr_assert_eq(dg_key_match_name("dependencies", NULL, "provides", 1), 0);
    cr_assert_eq(dg_key_match_name("build_dependencies", NULL, "build requires", 1), 1);
    cr_assert_eq(dg_key_match_name("build_dependencies", NULL, "suggests", 1), 0);
    cr_assert_eq(dg_key_match(field(p, "/name"), "package"), 1);
    cr_assert_eq(dg_key_match(field(p, "/name"), "package type"), 0, "one word only");
    cr_assert_eq(dg_key_match_name("package", NULL, "name", 0), 0, "a key name is anyone's");
    cr_assert_eq(dg_key_match(field(p, "/contact_email"), "contact"), 1);
    cr_assert_eq(dg_key_match(field(p, "/contact_email"), "upstream contact"), 0);
    /* a contact is the author or maintainer (libdeg 0.26.0), one way only */
    cr_assert_eq(dg_key_match(field(p, "/contact_email"), "maintainer"), 1);
    cr_assert_eq(dg_key_match(field(p, "/contact_email"), "author"), 1);
    cr_assert_eq(dg_key_match(field(p, "/contact_email"), "author email"), 1);
    cr_assert_eq(dg_key_match(field(p, "/contact_email"), "maintainer mail"), 1);
    cr_assert_eq(dg_key_match(field(p, "/contact_email"), "author url"), 0, "another kind");
    cr_assert_eq(dg_key_match(field(p, "/contact_email"), "contributor"), 0);
    cr_assert_eq(dg_key_match_name("author_email", NULL, "contact", 0), 0, "one way");
    cr_assert_eq(dg_key_match_name("author", NULL, "maintainer", 0), 0);
    /* "SPDX-License-Identifier" names a licence id (libdeg 0.26.0) */
    cr_assert_eq(dg_key_match_name("license_id", NULL, "spdx license identifier", 0), 1);
    cr_assert_eq(dg_key_match_name("license_identifier", NULL, "spdx license identifier", 0),
                 1);
    cr_assert_eq(dg_key_match_name("spdx_id", NULL, "spdx license identifier", 0), 0);
    cr_assert_eq(dg_key_match(field(p, "/source_url"), "source0"), 1, "numbered key");
    cr_assert_eq(dg_key_match(field(p, "/source_url"), "patch0"), 0);
    cr_assert_eq(dg_key_match(field(p, "/license"), "licence"), 1);
    cr_assert_eq(dg_key_match(field(p, "/email"), "contact"), 0, "nothing left to match");
    cr_assert_eq(dg_key_match(field(p, "/website"), "homepage"), 1);
    cr_assert_eq(dg_key_match(field(p, "/website"), "home page"), 1);
    cr_assert_eq(dg_key_match(field(p, "/website"), "url"), 1, "the pair after rewriting");
    /* a compound written apart (libdeg 0.27.0) */
    cr_assert_eq(dg_key_match_name("homepage", NULL, "web site", 0), 1);
    cr_assert_eq(dg_key_match_name("homepage", NULL, "web page", 0), 1);
    cr_assert_eq(dg_key_match_name("homepage", NULL, "web", 0), 0);
    cr_assert_eq(dg_key_match_name("homepage", NULL, "site web", 0), 0, "in its order only");
    /* exact-only lines (qualified, nested JSON): a 2+ word key also by the vocabulary,
     * a lone word never (libdeg 0.27.0) */
    dg_key_prior kp = {.on = 1, .exact = 16.0, .partial = 8.0};
    dg_keyline author = {.key = "author email", .exact_only = 1};
    dg_keyline url = {.key = "url", .exact_only = 1};
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/contact_email"), &author), 8.0);
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/website"), &url), 0.0);
    url.exact_only = 0;
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/website"), &url), 8.0);
    dg_keyline bugs = {.key = "bugs url", .exact_only = 1}, parent = {.key = "parent source",
                                                                     .exact_only = 1};
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/bug_tracker_url"), &bugs), 8.0, "holds its words");
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/source_url"), &parent), 0.0, "a part of it");
    /* the checks that take exact matches only see none of these */
    cr_assert_eq(dg_key_match_written("dependencies", NULL, "requires", 1), 0);
    deg_plan_free(p);
}

Test(keyprior, match)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"upstream_name\":{\"type\":\"string\"},"
        "\"homepage\":{\"type\":\"string\"},"
        "\"earliestCopyrightYear\":{\"type\":\"integer\"},"
        "\"pkg\":{\"type\":\"string\",\"title\":\"Package name\"},"
        "\"site\":{\"type\":\"string\",\"format\":\"uri\"},"
        "\"contact\":{\"type\":\"string\",\"format\":\"email\"},"
        "\"deps\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
        "{\"name\":{\"type\":\"string\"}}}}}}";
    deg_plan *p = compile_plan(schema);
    cr_assert_eq(dg_key_match(field(p, "/upstream_name"), "upstream name"), 2);
    cr_assert_eq(dg_key_match(field(p, "/upstream_name"), "name"), 1);
    cr_assert_eq(dg_key_match(field(p, "/homepage"), "home page"), 2);
    cr_assert_eq(dg_key_match(field(p, "/homepage"), "home"), 0);
    cr_assert_eq(dg_key_match(field(p, "/earliestCopyrightYear"), "copyright"), 1);
    cr_assert_eq(dg_key_match(field(p, "/pkg"), "package name"), 2, "by title");
    cr_assert_eq(dg_key_match(field(p, "/pkg"), "package"), 1);
    cr_assert_eq(dg_key_match(field(p, "/pkg"), "version"), 0);
    cr_assert_eq(dg_key_match(field(p, "/deps/*/name"), "name"), 0, "array leaves: none");
    /* the key is the word for the field's format: partial */
    cr_assert_eq(dg_key_match(field(p, "/site"), "url"), 1);
    cr_assert_eq(dg_key_match(field(p, "/site"), "uri"), 1);
    cr_assert_eq(dg_key_match(field(p, "/site"), "download url"), 0);
    cr_assert_eq(dg_key_match(field(p, "/homepage"), "url"), 1, "no format: the vocabulary");
    cr_assert_eq(dg_key_match(field(p, "/contact"), "e mail"), 1);
    cr_assert_eq(dg_key_match(field(p, "/contact"), "email"), 1);
    cr_assert_eq(dg_key_match(field(p, "/contact"), "url"), 0);
    dg_key_prior kp = {1, 8.0, 3.0};
    dg_keyline kv = {0, 1, "upstream name"};
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/upstream_name"), &kv), 8.0);
    dg_keyline q = {0, 1, "name", 1}; /* a qualified key: exact names only */
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/upstream_name"), &q), 0.0);
    dg_keyline qe = {0, 1, "upstream name", 1};
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/upstream_name"), &qe), 8.0);
    kp.on = 0;
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/upstream_name"), &kv), 0.0);
    deg_plan_free(p);
}

/* Keys a field's description names (dg_key_in_description, key_prior.description):
 * whole words of the normalised description, keys of >= 4 bytes, no array leaves;
 * the bonus only where the name and title do not match. */
Test(keyprior, description_names_key)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"summary\":{\"type\":\"string\",\"description\":\"the unit's Description= text\"},"
        "\"command\":{\"type\":\"string\",\"description\":\"the command it runs (Exec=)\"},"
        "\"owner\":{\"type\":\"string\",\"description\":\"the package the question belongs to\"},"
        "\"permissive\":{\"type\":\"boolean\",\"description\":\"a non-copyleft, not public licence\"},"
        "\"rows\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
        "{\"x\":{\"type\":\"string\",\"description\":\"its Exec= line\"}}}}}}";
    deg_plan *p = compile_plan(schema);
    cr_assert(dg_key_in_description(field(p, "/summary"), "description"));
    cr_assert(dg_key_in_description(field(p, "/command"), "exec"));
    cr_assert(dg_key_in_description(field(p, "/owner"), "package"));
    cr_assert(dg_key_in_description(field(p, "/owner"), "question"));
    cr_assert(!dg_key_in_description(field(p, "/owner"), "pack"), "whole words");
    cr_assert(!dg_key_in_description(field(p, "/owner"), "the"), "keys of >= 4 bytes");
    cr_assert(!dg_key_in_description(field(p, "/summary"), "unit description"));
    cr_assert(!dg_key_in_description(field(p, "/rows/*/x"), "exec"), "array leaves: none");
    cr_assert(!dg_key_in_description(field(p, "/permissive"), "copyleft"), "negated");
    cr_assert(!dg_key_in_description(field(p, "/permissive"), "public"), "negated");
    cr_assert(dg_key_in_description(field(p, "/permissive"), "licence"));
    dg_key_prior kp = {1, 16.0, 8.0, 0.0, 4.0};
    dg_keyline exec = {0, 1, "exec"}, cmd = {0, 1, "command"};
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/command"), &exec), 4.0);
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/command"), &cmd), 16.0, "the name wins");
    kp.description = 0;
    cr_assert_eq(dg_key_bonus(&kp, field(p, "/command"), &exec), 0.0, "0 = off");
    deg_plan_free(p);
}

/* Prose labels of grammar candidates (dg_key_phrase_before): the clause right
 * before the value ends with the field's words, maybe plus one linking word. */
Test(keyprior, phrase_before)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"available_from\":{\"type\":\"string\",\"format\":\"date\"},"
        "\"created\":{\"type\":\"string\",\"format\":\"date\"},"
        "\"dueDate\":{\"type\":\"string\",\"format\":\"date\"},"
        "\"d\":{\"type\":\"string\",\"format\":\"date\",\"title\":\"Signed\"},"
        "\"rows\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
        "{\"created\":{\"type\":\"string\",\"format\":\"date\"}}}}}}";
    deg_plan *p = compile_plan(schema);
    struct { const char *text, *ptr; int want; } cases[] = {
        {"Unfurnished. Available from October 13, 2027.", "/available_from", 1},
        {"Unfurnished. Available from October 13, 2027.", "/created", 0},
        {"Ticket opened and created on 2024-04-06 by ops", "/created", 1},
        {"Ticket created, then closed on 2024-04-06", "/created", 0}, /* ',' ends the clause */
        {"the invoice date 2024-11-10 and the due date 2025-01-09", "/dueDate", 1},
        {"the invoice date 2024-11-10 and the due date 2025-01-09", "/available_from", 0},
        {"Contract signed on 3 March 2021", "/d", 1},                  /* by title */
        {"Contract unsigned on 3 March 2021", "/d", 0},                 /* whole words */
        {"created on on 2024-04-06", "/created", 0},                    /* one linking word */
        {"created 2024-04-06", "/rows/*/created", 0},                   /* array leaves: none */
        {"created\n2024-04-06", "/created", 0},                        /* same line only */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *t = cases[i].text;
        /* b = the last date of the text: its first digit run of 4 or its day/month word */
        const char *v = strstr(t, "October");
        if (!v) v = strstr(t, "3 March");
        if (!v) {
            const char *q = t;
            while ((q = strstr(q, "20")) && q[4] != '-') q++;
            const char *last = q;
            while (q && (q = strstr(q + 1, "20"))) if (q[4] == '-') last = q;
            v = last;
        }
        cr_assert_not_null(v, "case %zu", i);
        cr_assert_eq(dg_key_phrase_before(field(p, cases[i].ptr), t, (size_t)(v - t)),
                     cases[i].want, "case %zu: %s for %s", i, t, cases[i].ptr);
    }
    deg_plan_free(p);
}

/* Units in names (dg_key_name_unit, dg_key_unit_after): a number followed by the
 * unit word its field's name ends in. */
Test(keyprior, unit_after)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"area_m2\":{\"type\":[\"number\",\"null\"]},"
        "\"priceEUR\":{\"type\":\"number\"},"
        "\"timeout_ms\":{\"type\":\"integer\"},"
        "\"area_label\":{\"type\":\"number\"},"
        "\"note_m2\":{\"type\":\"string\"},"
        "\"m2\":{\"type\":\"number\"},"
        "\"rows\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
        "{\"area_m2\":{\"type\":\"number\"}}}}}}";
    deg_plan *p = compile_plan(schema);
    struct { const char *text, *ptr; int want; } cases[] = {
        {"107 m2. Sorry, no pets.", "/area_m2", 1},
        {"107 M2", "/area_m2", 1},                 /* case folded */
        {"86 m\xc2\xb2, furnished", "/area_m2", 1}, /* superscript two */
        {"107m2", "/area_m2", 1},                  /* no space */
        {"107  m2", "/area_m2", 0},                /* at most one space */
        {"107 m23", "/area_m2", 0},                /* whole word */
        {"107 m", "/area_m2", 0},                  /* cut short */
        {"Tickets cost 68.50 EUR.", "/priceEUR", 1}, /* camelCase name */
        {"a 250ms timeout", "/timeout_ms", 1},
        {"107 m2", "/area_label", 0},              /* another unit */
        {"107 m2 and 5 label", "/area_label", 0},  /* another number's */
        {"107 m2", "/note_m2", 0},                 /* strings: not numbers */
        {"107 m2", "/m2", 0},                      /* one word: no unit split */
        {"107 m2", "/rows/*/area_m2", 0},          /* array leaves: none */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *t = cases[i].text;
        size_t e = 0; /* the end of the text's first number */
        while (t[e] && !isdigit((unsigned char)t[e])) e++;
        while (isdigit((unsigned char)t[e]) || (t[e] == '.' && isdigit((unsigned char)t[e + 1])))
            e++;
        char unit[DG_KEY_MAX_LEN + 1];
        dg_key_name_unit(field(p, cases[i].ptr), unit, sizeof unit);
        cr_assert_eq(dg_key_unit_after(unit, t, strlen(t), e), cases[i].want,
                     "case %zu: %s for %s", i, t, cases[i].ptr);
    }
    deg_plan_free(p);
}

Test(keyprior, deg_json_validation)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    snprintf(dir, sizeof dir, "%s/keyprior-bad-%d", DEG_BUILD_ROOT, (int)getpid());
    cr_assert_eq(deg_ckpt_create_random(model, 3, dir), DEG_OK, "%s", deg_errmsg());
    const char *bad[] = {"{\"exact\": -1, \"partial\": 1}", "{\"exact\": 1}", "[1, 2]",
                         "{\"exact\": 1, \"partial\": \"x\"}",
                         "{\"exact\": 1, \"partial\": 1, \"other\": 2}",
                         "{\"exact\": 1, \"partial\": 1, \"phrase\": -1}",
                         "{\"exact\": 1, \"partial\": 1, \"phrase\": 2e6}",
                         "{\"exact\": 1, \"partial\": 1, \"phrase\": true}",
                         "{\"exact\": 1, \"partial\": 1, \"description\": -2}",
                         "{\"exact\": 1, \"partial\": 1, \"description\": null}",
                         "{\"exact\": 1, \"partial\": 1, \"sole\": -4}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_set_meta(dir, "key_prior", json_loads(bad[i], 0, NULL));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_ERR_FORMAT, "%s", bad[i]);
        cr_assert(strstr(deg_errmsg(), "key_prior"), "%s", deg_errmsg());
    }
    /* a valid prior survives a save */
    tu_set_meta(dir, "key_prior", json_pack("{s:f, s:f, s:f, s:f, s:f}", "exact", 6.0, "partial",
                                            2.5, "phrase", 4.0, "description", 3.0, "sole", 5.0));
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    char dir2[600];
    snprintf(dir2, sizeof dir2, "%s-saved", dir);
    cr_assert_eq(deg_ckpt_save(k, dir2, NULL, 0), DEG_OK, "%s", deg_errmsg());
    deg_ckpt_free(k);
    char js[700];
    snprintf(js, sizeof js, "%s/deg.json", dir2);
    json_t *meta = json_load_file(js, 0, NULL);
    json_t *kp = json_object_get(meta, "key_prior");
    cr_assert_eq(json_real_value(json_object_get(kp, "exact")), 6.0);
    cr_assert_eq(json_real_value(json_object_get(kp, "partial")), 2.5);
    cr_assert_eq(json_real_value(json_object_get(kp, "phrase")), 4.0);
    cr_assert_eq(json_real_value(json_object_get(kp, "description")), 3.0);
    cr_assert_eq(json_real_value(json_object_get(kp, "sole")), 5.0);
    json_decref(meta);
}

static const char *CTX = "Package: frobnicator\n"
                         "Version: 2.4.1-3\n"
                         "Section: devel\n"
                         "Essential: yes\n"
                         "Installed-Size: 1234\n"
                         "Maintainer: Jane Roe <jane@example.org>\n"
                         "Description: frobs the widgets of other programs quickly\n";

static const char *SCHEMA =
    "{\"type\":\"object\",\"required\":[\"package\",\"version\",\"section\",\"essential\"],"
    "\"properties\":{"
    "\"package\":{\"type\":\"string\"},"
    "\"version\":{\"type\":\"string\"},"
    "\"section\":{\"enum\":[\"admin\",\"libs\",\"devel\",\"net\"]},"
    "\"essential\":{\"type\":\"boolean\"},"
    "\"installedSize\":{\"type\":[\"integer\",\"null\"]},"
    "\"maintainer_email\":{\"type\":[\"string\",\"null\"],\"format\":\"email\"}}}";

static json_t *fill(deg_ckpt *k)
{
    return tu_fill(k, CTX, SCHEMA, NULL);
}

/* With a bonus far above the random heads' logit range, every labelled field
 * must read its own line; the same checkpoint without the prior must not give
 * all of them (else this test could not fail). */
Test(keyprior, fill_reads_labelled_lines)
{
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/keyprior-fill-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        deg_ckpt *k0 = tu_random_ckpt(model, 11, dir, NULL, -1);
        json_t *r0 = fill(k0);
        deg_ckpt_free(k0);
        tu_set_meta(dir, "key_prior", json_pack("{s:f, s:f}", "exact", 200.0, "partial", 100.0));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        json_t *r = fill(k);
        json_t *v = json_object_get(r, "value");
        cr_assert_str_eq(json_string_value(json_object_get(v, "package")), "frobnicator");
        cr_assert_str_eq(json_string_value(json_object_get(v, "version")), "2.4.1-3");
        cr_assert_str_eq(json_string_value(json_object_get(v, "section")), "devel");
        cr_assert(json_is_true(json_object_get(v, "essential")));
        cr_assert_eq(json_integer_value(json_object_get(v, "installedSize")), 1234);
        cr_assert_str_eq(json_string_value(json_object_get(v, "maintainer_email")),
                         "jane@example.org");
        json_t *span = json_object_get(json_object_get(json_object_get(r, "meta"), "/version"),
                                       "span");
        cr_assert_eq(json_integer_value(json_array_get(span, 0)), 30);
        cr_assert_eq(json_integer_value(json_array_get(span, 1)), 37);
        json_t *v0 = json_object_get(r0, "value");
        cr_assert(!json_equal(v0, v), "random heads alone gave the labelled values");
        json_decref(r);
        json_decref(r0);
        deg_ckpt_free(k);
    }
}

static const char *LINES_CTX = "alpha beta gamma\ndelta epsilon zeta\neta theta iota\n"
                               "kappa lambda mu\nnu xi omicron\npi rho sigma\n";

/* The value of a fill of ctx into string fields f0..f(n-1) (owned by the caller). */
static json_t *plain_values(deg_ckpt *k, const char *ctx, int n)
{
    json_t *props = json_object();
    for (int i = 0; i < n; i++) {
        char name[8];
        snprintf(name, sizeof name, "f%d", i);
        json_object_set_new(props, name, json_pack("{s:s}", "type", "string"));
    }
    json_t *req = json_pack("{s:s, s:{s:s, s:o}}", "context", ctx, "schema", "type", "object",
                            "properties", props);
    char *rq = json_dumps(req, 0), *out = NULL;
    json_decref(req);
    cr_assert_eq(deg_fill(k, rq, strlen(rq), &out, NULL), DEG_OK, "%s", deg_errmsg());
    json_t *resp = json_loads(out, 0, NULL);
    json_t *v = json_incref(json_object_get(resp, "value"));
    json_decref(resp);
    free(rq);
    free(out);
    return v;
}

/* Count of plain-string values over fields f0..f7 that hold a line break. */
static int multi_line_values(deg_ckpt *k)
{
    json_t *vals = plain_values(k, LINES_CTX, 8), *v;
    const char *key;
    int n = 0;
    json_object_foreach(vals, key, v)
        if (json_is_string(v) && strchr(json_string_value(v), '\n')) n++;
    json_decref(vals);
    return n;
}

/* A boolean decoding rule of deg.json `flag` on both tiny models: count(k) > 0
 * with random heads and the rule off (so the test can fail), 0 with it on; a bad
 * value is a FormatError naming the flag; the flag survives a save. */
static void check_rule_flag(const char *flag, int (*count)(deg_ckpt *), const char *tag)
{
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/keyprior-%s-%d-%zu", DEG_BUILD_ROOT, tag, (int)getpid(), mi);
        deg_ckpt *k0 = tu_random_ckpt(model, 5, dir, NULL, -1);
        int before = count(k0);
        deg_ckpt_free(k0);
        cr_assert_gt(before, 0, "%s: %s: nothing to hold without the rule", TINY[mi], flag);
        tu_set_meta(dir, flag, json_string("yes"));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_ERR_FORMAT);
        cr_assert(strstr(deg_errmsg(), flag), "%s", deg_errmsg());
        tu_set_meta(dir, flag, json_true());
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        cr_assert_eq(count(k), 0, "%s: %s", TINY[mi], flag);
        char dir2[600], js[700];
        snprintf(dir2, sizeof dir2, "%s-saved", dir);
        cr_assert_eq(deg_ckpt_save(k, dir2, NULL, 0), DEG_OK, "%s", deg_errmsg());
        snprintf(js, sizeof js, "%s/deg.json", dir2);
        json_t *meta = json_load_file(js, 0, NULL);
        cr_assert(json_is_true(json_object_get(meta, flag)), "%s survives a save", flag);
        json_decref(meta);
        deg_ckpt_free(k);
    }
}

/* deg.json "span_single_line": plain-string spans never cross a line break. */
Test(keyprior, single_line_spans)
{
    check_rule_flag("span_single_line", multi_line_values, "lines");
}

/* Word boundaries of dg_utf8_is_word: letters and digits of spaced scripts are
 * word characters; punctuation, Latin-1 symbols, CJK and Thai are not. */
Test(keyprior, word_characters)
{
    const uint32_t word[] = {'a', 'Z', '7', 0xE9 /* é */, 0xDF /* ß */, 0xAA /* ª */,
                             0x0915 /* Devanagari ka */, 0x093F /* vowel sign i */,
                             0x0430 /* Cyrillic a */, 0x05D0 /* alef */, 0xAC00 /* Hangul */};
    const uint32_t bound[] = {' ', '-', '.', '_', '"', 0xA0 /* NBSP */, 0xA9 /* © */,
                              0xD7 /* × */, 0x2014 /* em dash */, 0x4E2D /* 中 */,
                              0x3042 /* あ */, 0x0E01 /* Thai ko kai */, 0xFF0C /* fullwidth , */};
    for (size_t i = 0; i < sizeof word / sizeof word[0]; i++)
        cr_assert(dg_utf8_is_word(word[i]), "U+%04X", (unsigned)word[i]);
    for (size_t i = 0; i < sizeof bound / sizeof bound[0]; i++)
        cr_assert(!dg_utf8_is_word(bound[i]), "U+%04X", (unsigned)bound[i]);
}

/* Long words the tokenizers split into several tokens: random pointer heads cut them. */
static const char *WORDS_CTX = "Hippopotomonstrosesquippedaliophobia supercalifragilistic "
                               "antidisestablishmentarianism floccinaucinihilipilification "
                               "pneumonoultramicroscopicsilicovolcanoconiosis "
                               "incomprehensibilities-unimaginatively thyroparathyroidectomized\n";

/* One identifier joined by '-', '.' and '_' of one-letter parts (every token
 * edge inside it is a join): random pointer heads end spans between the parts. */
static const char *JOINS_CTX = "a-b-c-d-e-f-g-h-i-j-k-l-m.n.o.p.q.r_s_t_u_v_w_x_y_z 2003-2014\n";

/* Code point j of c is a '-', '.' or '_' joining two words, a letter on one
 * side (span_word_bounds: "xdg-user" cuts "xdg-user-dirs-update"; "2003" of
 * "2003-2014" cuts nothing). */
static int joins(const char *c, size_t j)
{
    if (j == 0 || !c[j] || !c[j + 1] || (c[j] != '-' && c[j] != '.' && c[j] != '_')) return 0;
    if (!isalnum((unsigned char)c[j - 1]) || !isalnum((unsigned char)c[j + 1])) return 0;
    return !(isdigit((unsigned char)c[j - 1]) && isdigit((unsigned char)c[j + 1]));
}

/* Count of plain-string values over fields f0..f15 whose span cuts a word of
 * ctx (ASCII: code points are bytes), a joined word included; *joined = how
 * many start or end at or next to a join (joins()). */
static int cut_word_values(deg_ckpt *k, const char *ctx, int *joined)
{
    *joined = 0;
    json_t *props = json_object();
    for (int i = 0; i < 16; i++) {
        char name[8];
        snprintf(name, sizeof name, "f%d", i);
        json_object_set_new(props, name, json_pack("{s:s}", "type", "string"));
    }
    json_t *req = json_pack("{s:s, s:{s:s, s:o}}", "context", ctx, "schema", "type",
                            "object", "properties", props);
    char *rq = json_dumps(req, 0), *out = NULL;
    json_decref(req);
    cr_assert_eq(deg_fill(k, rq, strlen(rq), &out, NULL), DEG_OK, "%s", deg_errmsg());
    json_t *resp = json_loads(out, 0, NULL);
    int n = 0;
    const char *key;
    json_t *m;
    size_t len = strlen(ctx);
    json_object_foreach(json_object_get(resp, "meta"), key, m) {
        json_t *sp = json_object_get(m, "span");
        if (!json_is_array(sp)) continue;
        size_t s = (size_t)json_integer_value(json_array_get(sp, 0));
        size_t e = (size_t)json_integer_value(json_array_get(sp, 1));
        cr_assert(s < e && e <= len);
        int j = (s > 0 && joins(ctx, s - 1)) || joins(ctx, s) || (e < len && joins(ctx, e)) ||
                joins(ctx, e - 1);
        if (j || (s > 0 && isalnum((unsigned char)ctx[s - 1]) && isalnum((unsigned char)ctx[s])) ||
            (e < len && isalnum((unsigned char)ctx[e - 1]) && isalnum((unsigned char)ctx[e])))
            n++;
        *joined += j;
    }
    json_decref(resp);
    free(rq);
    free(out);
    return n;
}

/* deg.json "span_word_bounds": no plain span cuts a word; the same random heads
 * without it do (so the test can fail); a bad value is a FormatError; the flag
 * survives a save. */
Test(keyprior, word_bound_spans)
{
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/keyprior-words-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        deg_ckpt *k0 = tu_random_ckpt(model, 5, dir, NULL, -1);
        int jb = 0, ja = 0;
        int before = cut_word_values(k0, WORDS_CTX, &ja);
        int before_j = cut_word_values(k0, JOINS_CTX, &jb);
        deg_ckpt_free(k0);
        cr_assert_gt(before, 0, "%s: no cut word without the rule", TINY[mi]);
        cr_assert_gt(jb, 0, "%s: no cut joined word without the rule (%d cuts)", TINY[mi], before_j);
        tu_set_meta(dir, "span_word_bounds", json_integer(1));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_ERR_FORMAT);
        cr_assert(strstr(deg_errmsg(), "span_word_bounds"), "%s", deg_errmsg());
        tu_set_meta(dir, "span_word_bounds", json_true());
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        cr_assert_eq(cut_word_values(k, WORDS_CTX, &ja), 0);
        cr_assert_eq(cut_word_values(k, JOINS_CTX, &ja), 0);
        char dir2[600], js[700];
        snprintf(dir2, sizeof dir2, "%s-saved", dir);
        cr_assert_eq(deg_ckpt_save(k, dir2, NULL, 0), DEG_OK, "%s", deg_errmsg());
        snprintf(js, sizeof js, "%s/deg.json", dir2);
        json_t *meta = json_load_file(js, 0, NULL);
        cr_assert(json_is_true(json_object_get(meta, "span_word_bounds")));
        json_decref(meta);
        deg_ckpt_free(k);
    }
}

/* dg_sentence_end (sentences.h): '.', '!' or '?', blanks, then a capital; not
 * after an initial or a short capitalised abbreviation. */
Test(keyprior, sentence_ends)
{
    static const struct {
        const char *s;
        size_t b;
        int end;
    } C[] = {
        {"Graz for 3,325 per month. 150 m2.", 24, 0},         /* a digit follows */
        {"in Graz on 2027-08-21 10:30. Entry is free", 27, 1},
        {"Entry is free! On 12 May", 13, 1},
        {"Is it? Yes", 5, 1},
        {"activities. the next", 10, 0},                    /* lowercase follows */
        {"activities.The next", 10, 0},                     /* no blank */
        {"Ian A. Murdock", 5, 0},                           /* an initial */
        {"e.g. Foo", 3, 0},
        {"Dem. Rep. of Congo", 3, 0},                        /* "Dem." */
        {"Mr. Smith", 2, 0},
        {"Text Editor. The comment", 11, 1},                 /* a longer capitalised word */
        {"tzdata/Zones/Australia. The", 22, 1},
        {"etc. Then", 3, 1},
        {"done.\n\n  Next line", 4, 1},
        {"fin. \xc3\x89t\xc3\xa9 venu", 3, 1},               /* É */
        {"\xd0\xba\xd0\xbe\xd0\xbd\xd0\xb5\xd1\x86. \xd0\x9d\xd0\xbe\xd0\xb2", 10, 1}, /* Cyrillic */
        {"end.", 3, 0},                                     /* nothing follows */
        {"a, b", 1, 0},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++)
        cr_assert_eq(dg_sentence_end(C[i].s, strlen(C[i].s), C[i].b), C[i].end, "%s @%zu", C[i].s,
                     C[i].b);
}

static const char *SENT_CTX = "Alpha beta gamma. Delta epsilon! Zeta eta theta? Iota kappa. "
                              "Lambda mu nu. Xi omicron pi. Rho sigma tau! Upsilon phi. "
                              "Chi psi omega. Ano kato. Mesa exo.\n";

/* Count of plain-string values over fields f0..f15 that hold a sentence end. */
static int multi_sentence_values(deg_ckpt *k)
{
    json_t *vals = plain_values(k, SENT_CTX, 16), *v;
    const char *key;
    int n = 0;
    json_object_foreach(vals, key, v) {
        const char *s = json_string_value(v);
        for (size_t b = 0; s && s[b]; b++)
            if (dg_sentence_end(s, strlen(s), b)) {
                n++;
                break;
            }
    }
    json_decref(vals);
    return n;
}

/* deg.json "span_single_sentence": no plain span outside arrays holds a
 * sentence end. */
Test(keyprior, single_sentence_spans)
{
    check_rule_flag("span_single_sentence", multi_sentence_values, "sent");
}

/* Count of plain-string values over fields f0..f15 on SENT_CTX (no word twice,
 * so one text is one span) that an earlier field holds too. */
static int shared_values(deg_ckpt *k)
{
    json_t *vals = plain_values(k, SENT_CTX, 16), *v, *w;
    const char *key, *key2;
    int n = 0;
    json_object_foreach(vals, key, v) {
        json_object_foreach(vals, key2, w) {
            if (w == v) break;
            if (json_equal(v, w)) {
                n++;
                break;
            }
        }
    }
    json_decref(vals);
    return n;
}

/* deg.json "span_distinct": no two leaves of one object keep the same span. */
Test(keyprior, distinct_spans)
{
    check_rule_flag("span_distinct", shared_values, "distinct");
}

/* key_prior.sole (fill_decide.c, fill_extract.c): the only option written, the only
 * day written. With a bonus far above the random heads' range the written option and
 * the written day must come out; where two options or two days are written the fill
 * must be bitwise the fill without the rule (it gives no bonus there), and the random
 * heads alone must not give the written values (else this test could not fail). */
static const char *SOLE_SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"kind\":{\"enum\":[\"concert\",\"workshop\",\"meetup\",\"fair\"]},"
    "\"level\":{\"enum\":[\"low\",\"high\",\"very high\"]},"
    "\"created\":{\"type\":\"string\",\"format\":\"date-time\"}}}";

static json_t *sole_fill(const char *dir, double sole, const char *ctx)
{
    tu_set_meta(dir, "key_prior",
                json_pack("{s:f, s:f, s:f}", "exact", 1.0, "partial", 1.0, "sole", sole));
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    json_t *r = tu_fill(k, ctx, SOLE_SCHEMA, NULL);
    deg_ckpt_free(k);
    return r;
}

Test(keyprior, sole_option_and_day)
{
    const char *one = "Join us for the Rust Workshop in Ghent. Risk: very high.\n"
                      "[2024-04-06 22:18:00 -0500] NEW ticket=48213\n"
                      "[2024-04-06 22:18:00 -0500] RESOLVED\n";
    const char *two = "A workshop, then a concert. Risk: very high.\n"
                      "[2024-04-06 22:18:00 -0500] NEW\n[2024-04-07 09:00:00 -0500] DONE\n";
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/keyprior-sole-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        deg_ckpt_free(tu_random_ckpt(model, 11, dir, NULL, -1));
        json_t *r0 = sole_fill(dir, 0.0, one), *r = sole_fill(dir, 500.0, one);
        json_t *v = json_object_get(r, "value"), *v0 = json_object_get(r0, "value");
        cr_assert_str_eq(json_string_value(json_object_get(v, "kind")), "workshop", "%s",
                         TINY[mi]);
        cr_assert_str_eq(json_string_value(json_object_get(v, "created")),
                         "2024-04-06T22:18:00-05:00", "%s", TINY[mi]);
        cr_assert(!json_equal(v0, v), "%s: random heads alone gave the written values", TINY[mi]);
        /* "high" is written inside "very high": two options, no bonus */
        cr_assert(json_equal(json_object_get(json_object_get(r0, "meta"), "/level"),
                             json_object_get(json_object_get(r, "meta"), "/level")),
                  "%s", TINY[mi]);
        json_decref(r0);
        json_decref(r);
        r0 = sole_fill(dir, 0.0, two);
        r = sole_fill(dir, 500.0, two);
        cr_assert(json_equal(json_object_get(r0, "value"), json_object_get(r, "value")) &&
                      json_equal(json_object_get(r0, "meta"), json_object_get(r, "meta")),
                  "%s: two options and two days give no bonus", TINY[mi]);
        json_decref(r0);
        json_decref(r);
        /* libdeg 0.23.0: a word in a URL or e-mail address, after a negation or in
         * another key's value is not written; each sentence beside its plain twin (which
         * must give the bonus, or these checks could not fail) */
        static const char *const unread[][2] = {
            {"There is no workshop this week.\n", "There is a workshop this week.\n"},
            {"See https://example.org/workshop today.\n", "See the workshop today.\n"},
            {"Mail workshop@example.org today.\n", "Mail the workshop today.\n"},
            {"Venue: the workshop hall\n", "Venue: workshop, the hall\n"},
            {"A non-workshop day.\n", "A workshop day.\n"},
        };
        for (size_t u = 0; u < sizeof unread / sizeof *unread; u++) {
            r0 = sole_fill(dir, 0.0, unread[u][0]);
            r = sole_fill(dir, 500.0, unread[u][0]);
            cr_assert(json_equal(json_object_get(r0, "value"), json_object_get(r, "value")),
                      "%s: %s", TINY[mi], unread[u][0]);
            json_decref(r0);
            json_decref(r);
            r = sole_fill(dir, 500.0, unread[u][1]);
            cr_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "value"), "kind")),
                             "workshop", "%s: %s", TINY[mi], unread[u][1]);
            json_decref(r);
        }
    }
}

/* Notice forms of libdeg 0.26.0 (keyline_forms.c): "Portions Copyright", the holder
 * before its years ("Copyright (C) Sun Microsystems 2008", "(C) Copyright IBM Corp. 2001,
 * 2004"; holder line first: the key lines are in document order), a TAB after the years,
 * the first notice's holder only; and a C comment's marks around a key
 * line ("/" "* SPDX-License-Identifier: ... *" "/", "// Key: value"). From linux/ethtool.h,
 * linux/nl80211.h and linux/sonypi.h, worked out by hand. */
Test(keyprior, scan_notice_forms_and_comment_keys)
{
    const char *ctx = "/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */\n"
                      " * Portions Copyright (C) Sun Microsystems 2008\n"
                      " * Portions Copyright 2001 Sun Microsystems (thockin@sun.com)\n"
                      " * Copyright 2015-2017\tIntel Deutschland GmbH\n"
                      "// Maintainer: Jeff\n"
                      " * (C) Copyright IBM Corp. 2001, 2004\n"
                      " * Copyright (C) 1998 David S. Miller (davem@redhat.com)\n";
    dg_keylines ix = {0};
    cr_assert_eq(dg_keylines_scan(ctx, strlen(ctx), &ix), DEG_OK);
    const kv_want want[] = {
        {"spdx license identifier", "GPL-2.0 WITH Linux-syscall-note"},
        {"copyright holder", "Sun Microsystems"}, {"holder", "Sun Microsystems"},
        {"copyright year", "2008"},
        {"copyright year", "2001"}, /* later notices: their years only */
        {"copyright year", "2015-2017"},
        {"copyright 2015 2017", "Intel Deutschland GmbH"}, /* a TAB parts a key line too */
        {"maintainer", "Jeff"},
        {"copyright year", "2001, 2004"},
        {"copyright year", "1998"}};
    expect_lines(ctx, &ix, want, sizeof want / sizeof *want);
    dg_keylines_free(&ix);
}

/* Ends in names (dg_key_name_extreme) and the name read without its end word: `earliest_year`
 * names a notice's "copyright year"; strings, array leaves and "first"/"last" ask for no
 * end. */
Test(keyprior, name_extremes)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"earliest_year\":{\"type\":\"integer\"},"
        "\"latestYear\":{\"type\":\"integer\"},"
        "\"max_connections\":{\"type\":\"number\"},"
        "\"n\":{\"type\":\"integer\",\"title\":\"Oldest release year\"},"
        "\"first_year\":{\"type\":\"integer\"},"
        "\"latest_version\":{\"type\":\"string\"},"
        "\"years\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
        "{\"min_year\":{\"type\":\"integer\"}}}}}}";
    deg_plan *p = compile_plan(schema);
    cr_assert_eq(dg_key_name_extreme(field(p, "/earliest_year")), -1);
    cr_assert_eq(dg_key_name_extreme(field(p, "/latestYear")), 1);
    cr_assert_eq(dg_key_name_extreme(field(p, "/max_connections")), 1);
    cr_assert_eq(dg_key_name_extreme(field(p, "/n")), -1, "by title");
    cr_assert_eq(dg_key_name_extreme(field(p, "/first_year")), 0, "a position, not an end");
    cr_assert_eq(dg_key_name_extreme(field(p, "/latest_version")), 0, "a string");
    cr_assert_eq(dg_key_name_extreme(field(p, "/years/*/min_year")), 0, "an array's leaf");
    cr_assert_eq(dg_key_match(field(p, "/earliest_year"), "copyright year"), 1);
    cr_assert_eq(dg_key_match(field(p, "/latestYear"), "year"), 1);
    cr_assert_eq(dg_key_match(field(p, "/max_connections"), "connections"), 1);
    cr_assert_eq(dg_key_match(field(p, "/max_connections"), "max connections"), 2);
    cr_assert_eq(dg_key_match(field(p, "/first_year"), "copyright year"), 0);
    cr_assert_eq(dg_key_match(field(p, "/earliest_year"), "copyright holder"), 0);
    deg_plan_free(p);
}

/* JSON nesting (keyprior.c json_nest_line): only the innermost object a member opened
 * qualifies its members; array items' anonymous objects ("}, {" included) qualify
 * none, and a level closed on a line's start ends its qualifying. Of the plain keys
 * named alike only the least nested stay (json_least_nested): the package's "name", not
 * the author's or a contributor's; the author's "email", not the contributors'. From
 * socks-proxy-agent's package.json (npm), worked out by hand. */
Test(keyprior, scan_json_parents)
{
    const char *ctx = "{\n"
                      "  \"name\": \"socks-proxy-agent\",\n"
                      "  \"author\": {\n"
                      "    \"email\": \"nathan@tootallnate.net\",\n"
                      "    \"name\": \"Nathan Rajlich\"\n"
                      "  },\n"
                      "  \"contributors\": [\n"
                      "    {\n"
                      "      \"name\": \"Kiko Beats\",\n"
                      "      \"email\": \"kiko@example.com\"\n"
                      "    }, {\n"
                      "      \"email\": \"josh@example.com\"\n"
                      "    }\n"
                      "  ],\n"
                      "  \"repository\": {\n"
                      "    \"type\": \"git\",\n"
                      "    \"meta\": {\n"
                      "      \"url\": \"https://example.com/x.git\"\n"
                      "    },\n"
                      "    \"directory\": \"packages/x\"\n"
                      "  },\n"
                      "  \"license\": \"MIT\"\n"
                      "}\n";
    dg_keylines ix = {0};
    cr_assert_eq(dg_keylines_scan(ctx, strlen(ctx), &ix), DEG_OK);
    const kv_want want[] = {
        {"name", "socks-proxy-agent"},
        {"email", "nathan@tootallnate.net"}, {"author email", "nathan@tootallnate.net"},
        {"author name", "Nathan Rajlich"},
        {"type", "git"}, {"repository type", "git"},
        {"url", "https://example.com/x.git"}, {"meta url", "https://example.com/x.git"},
        {"directory", "packages/x"}, {"repository directory", "packages/x"},
        {"license", "MIT"}};
    expect_lines(ctx, &ix, want, sizeof want / sizeof *want);
    /* qualified lines and (libdeg 0.27.0) the members below the top ones: exact names */
    for (size_t i = 0; i < ix.n; i++)
        cr_assert_eq(ix.p[i].exact_only, i != 0 && i != ix.n - 1, "line %zu", i);
    dg_keylines_free(&ix);
}
