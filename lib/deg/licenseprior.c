/* licenseprior.c - licences a document states, and licence options (licenseprior.h).
 * Names and texts from the SPDX License List (spdx.org/licenses) and the licences'
 * own texts. */
#include "deg/licenseprior.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "deg/keyprior.h"

/* Names, longest first where one starts another ("gnu lesser general public" before
 * "gnu general public"; "gpl" is only ever read at a word start, so not in "lgpl"). */
static const struct {
    const char *name;
    dg_license_family family;
} NAMES[] = {
    {"gnu affero general public", DG_LIC_AGPL}, {"gnu lesser general public", DG_LIC_LGPL},
    {"gnu library general public", DG_LIC_LGPL}, {"gnu general public", DG_LIC_GPL},
    {"agpl", DG_LIC_AGPL}, {"lgpl", DG_LIC_LGPL}, {"gpl", DG_LIC_GPL},
    {"apache", DG_LIC_APACHE}, {"mit", DG_LIC_MIT}, {"expat", DG_LIC_MIT},
    {"isc", DG_LIC_ISC}, {"bsd", DG_LIC_BSD}, {"mozilla public", DG_LIC_MPL},
    {"mpl", DG_LIC_MPL}, {"zlib", DG_LIC_ZLIB}, {"unlicense", DG_LIC_UNLICENSE},
    {"cc0", DG_LIC_CC0}, {"artistic", DG_LIC_ARTISTIC}, {"psf", DG_LIC_PSF},
    {"python software foundation", DG_LIC_PSF}, {"eclipse public", DG_LIC_EPL},
    {"epl", DG_LIC_EPL}, {"boost software", DG_LIC_BSL}, {"bsl", DG_LIC_BSL},
    {"public domain", DG_LIC_PUBLIC_DOMAIN}};

/* Texts that state a licence without naming it (their first words). */
static const struct {
    const char *text;
    dg_license_family family;
    int major;
} TEXTS[] = {
    {"permission is hereby granted, free of charge, to any person obtaining a copy", DG_LIC_MIT, -1},
    {"permission to use, copy, modify, and/or distribute this software for any purpose", DG_LIC_ISC, -1},
    {"provided 'as-is', without any express or implied warranty", DG_LIC_ZLIB, -1},
    {"this is free and unencumbered software released into the public domain", DG_LIC_UNLICENSE, -1},
    {"redistribution and use in source and binary forms", DG_LIC_BSD, -1}};

/* Families whose names carry a version (BSD: its clauses). */
static int versioned(dg_license_family f)
{
    return f == DG_LIC_GPL || f == DG_LIC_LGPL || f == DG_LIC_AGPL || f == DG_LIC_APACHE ||
           f == DG_LIC_MPL || f == DG_LIC_BSD || f == DG_LIC_ARTISTIC || f == DG_LIC_EPL ||
           f == DG_LIC_CC0;
}

/* Phrase p (lowercase; ' ' matching any run of whitespace) at s[i, n): the byte after
 * it, or 0. */
static size_t phrase_at(const char *s, size_t n, size_t i, const char *p)
{
    for (; *p; p++) {
        if (*p == ' ') {
            if (i >= n || !isspace((unsigned char)s[i])) return 0;
            while (i < n && isspace((unsigned char)s[i])) i++;
            continue;
        }
        if (i >= n || tolower((unsigned char)s[i]) != *p) return 0;
        i++;
    }
    return i;
}

static int word_start(const char *s, size_t i)
{
    return i == 0 || !isalnum((unsigned char)s[i - 1]);
}

/* Version, clauses and "or later" of family f from its name's end at s[i, e). */
static void read_rest(const char *s, size_t i, size_t e, dg_license *L)
{
    L->major = L->minor = L->later = -1;
    if (!versioned(L->family)) return;
    for (size_t j = i; j < e; j++) {
        if (s[j] == '.' && (j + 1 >= e || isspace((unsigned char)s[j + 1])) && j > i + 2)
            break; /* the sentence's end */
        if (L->family == DG_LIC_BSD && L->major < 0) {
            if (phrase_at(s, e, j, "new") || phrase_at(s, e, j, "revised") ||
                phrase_at(s, e, j, "modified"))
                L->major = 3;
            else if (phrase_at(s, e, j, "simplified") || phrase_at(s, e, j, "freebsd"))
                L->major = 2;
        }
        if (L->major < 0 && isdigit((unsigned char)s[j]) &&
            (j + 1 >= e || !isdigit((unsigned char)s[j + 1])) &&
            (j == 0 || !isalnum((unsigned char)s[j - 1]) || tolower((unsigned char)s[j - 1]) == 'v')) {
            L->major = s[j] - '0'; /* one digit: a year is no version */
            if (j + 2 < e && s[j + 1] == '.' && isdigit((unsigned char)s[j + 2])) {
                L->minor = s[j + 2] - '0';
                j += 2;
            }
            if (j + 1 < e && s[j + 1] == '+') L->later = 1;
            continue;
        }
        if (L->later < 0 && (phrase_at(s, e, j, "or later") || phrase_at(s, e, j, "or-later") ||
                             phrase_at(s, e, j, "any later") || phrase_at(s, e, j, "or newer")))
            L->later = 1;
        if (L->later < 0 && L->major >= 0 && phrase_at(s, e, j, "only")) L->later = 0;
    }
}

/* The licence whose name starts at s[i] (a word start): 1 with *L and the byte after the
 * name in *after. */
static int name_at(const char *s, size_t n, size_t i, dg_license *L, size_t *after)
{
    for (size_t k = 0; k < sizeof NAMES / sizeof *NAMES; k++) {
        size_t j = phrase_at(s, n, i, NAMES[k].name);
        if (!j) continue;
        /* a whole word, or "GPLv2" / "GPL-2" / "BSD3" */
        if (j < n && isalpha((unsigned char)s[j]) &&
            !(tolower((unsigned char)s[j]) == 'v' && j + 1 < n && isdigit((unsigned char)s[j + 1])))
            continue;
        L->family = NAMES[k].family;
        *after = j;
        return 1;
    }
    return 0;
}

int dg_license_parse(const char *s, size_t n, dg_license *out)
{
    size_t i = 0, after = 0;
    for (; i < n; i++)
        if (isalpha((unsigned char)s[i]) && word_start(s, i) && name_at(s, n, i, out, &after))
            break;
    if (i >= n) return 0;
    read_rest(s, after, n, out);
    if (out->family == DG_LIC_BSD && out->major < 0) {
        /* "BSD-3-Clause": the digit */
        for (size_t j = after; j < n && out->major < 0; j++)
            if (isdigit((unsigned char)s[j])) out->major = s[j] - '0';
    }
    return 1;
}

/* The BSD text's clauses: 4 with "advertising materials", 3 with "endorse or promote"
 * (the third clause: "Neither the name of ... nor the names of its contributors may be
 * used to endorse or promote", or libevent's "The name of the author may not be used to
 * endorse or promote"), else 2 (SPDX BSD-4-Clause, BSD-3-Clause, BSD-2-Clause). */
static int bsd_clauses(const char *s, size_t n, size_t i)
{
    size_t e = i + 2000 < n ? i + 2000 : n;
    int clauses = 2;
    for (size_t j = i; j < e; j++) {
        if (phrase_at(s, e, j, "advertising materials")) return 4;
        if (phrase_at(s, e, j, "endorse or promote")) clauses = 3;
    }
    return clauses;
}

/* Is byte i inside an e-mail address (its run of non-blank bytes holds '@')?
 * "miles@gnu.ai.mit.edu" names no MIT licence (a URL may: ".../licenses/LICENSE-2.0"). */
#define DG_LICENSE_REACH 256 /* bytes looked at either side of a name: the work per name
                                * is bounded on a text of one long line */

static int in_email(const char *s, size_t len, size_t i)
{
    size_t a = i, b = i;
    while (a > 0 && i - a < DG_LICENSE_REACH && !isspace((unsigned char)s[a - 1]) &&
           s[a - 1] != '<')
        a--;
    while (b < len && b - i < DG_LICENSE_REACH && !isspace((unsigned char)s[b]) && s[b] != '>')
        b++;
    return memchr(s + a, '@', b - a) != NULL;
}

/* A word starting "licen" (License, licensed, LICENCE) on the line holding byte i or on
 * the line before it (within DG_LICENSE_REACH bytes after i, twice that before). */
static int licence_word_near(const char *s, size_t len, size_t i)
{
    size_t b = i, e = i;
    for (int lines = 0; b > 0 && i - b < 2 * DG_LICENSE_REACH && lines < 2; b--)
        if (s[b - 1] == '\n' && ++lines == 2) break;
    while (e < len && e - i < DG_LICENSE_REACH && s[e] != '\n') e++;
    for (size_t j = b; j + 5 <= e; j++)
        if (word_start(s, j) && !strncasecmp(s + j, "licen", 5)) return 1;
    return 0;
}

/* The byte after a licence name as an identifier, the name ending at s[after]: with the
 * characters written onto it ("GPL-2.0+", "GPLv2", "BSD-3-Clause"; not ',', ';', ':',
 * quotes, brackets, a final '.'), and for a name of several words its following word
 * "License"/"Licence" ("GNU General Public License"; "MIT license" stays "MIT", as its
 * identifier is written). A version in words after it ("version 2") is left out. */
static size_t name_span(const char *s, size_t n, size_t at, size_t after)
{
    size_t e = after;
    while (e < n && !isspace((unsigned char)s[e]) && !strchr(",;:()[]{}<>\"'`", s[e])) e++;
    while (e > after && s[e - 1] == '.') e--;
    if (e == after && memchr(s + at, ' ', after - at) && e + 8 <= n && s[e] == ' ' &&
        (strncasecmp(s + e + 1, "license", 7) == 0 || strncasecmp(s + e + 1, "licence", 7) == 0) &&
        (e + 8 == n || !isalnum((unsigned char)s[e + 8])))
        e += 8;
    return e;
}

size_t dg_license_written(const char *ctx, size_t len, dg_license *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n < cap; i++) {
        if (!isalpha((unsigned char)ctx[i]) || !word_start(ctx, i)) continue;
        dg_license L = {0};
        size_t after;
        if (name_at(ctx, len, i, &L, &after) && !in_email(ctx, len, i) &&
            (L.family == DG_LIC_GPL || L.family == DG_LIC_LGPL || L.family == DG_LIC_AGPL ||
             licence_word_near(ctx, len, i))) {
            size_t e = after + DG_LICENSE_WINDOW < len ? after + DG_LICENSE_WINDOW : len;
            read_rest(ctx, after, e, &L);
            L.at = i;
            L.end = name_span(ctx, len, i, after);
            out[n++] = L;
            i = after - 1;
            continue;
        }
        for (size_t k = 0; k < sizeof TEXTS / sizeof *TEXTS; k++) {
            if (!phrase_at(ctx, len, i, TEXTS[k].text)) continue;
            L = (dg_license){TEXTS[k].family, TEXTS[k].major, -1, -1, i, 0};
            if (L.family == DG_LIC_BSD) L.major = bsd_clauses(ctx, len, i);
            out[n++] = L;
            break;
        }
    }
    return n;
}

int dg_license_same(const dg_license *o, const dg_license *w)
{
    if (o->family != w->family) return 0;
    if (o->major >= 0 && w->major >= 0) {
        if (o->major != w->major) return 0;
        int om = o->minor < 0 ? 0 : o->minor, wm = w->minor < 0 ? 0 : w->minor;
        if (o->family != DG_LIC_BSD && om != wm) return 0;
    }
    return o->later < 0 || w->later < 0 || o->later == w->later;
}

int dg_license_named(const char *words)
{
    for (const char *p = words; (p = strstr(p, "licen")) != NULL; p++)
        if (p == words || p[-1] == ' ') return 1;
    return 0;
}

int dg_license_field(const struct dg_field_plan *f)
{
    if (f->depth_items > 0 || f->path.n == 0 || !f->path.seg[f->path.n - 1]) return 0;
    char name[DG_KEY_MAX_LEN + 1], title[DG_KEY_MAX_LEN + 1] = "";
    const char *seg = f->path.seg[f->path.n - 1];
    dg_key_norm(seg, strlen(seg), name, sizeof name);
    if (f->title) dg_key_norm(f->title, strlen(f->title), title, sizeof title);
    return dg_license_named(name) || dg_license_named(title);
}

/* Normalised name w ends in a licence word, or in an identifier word right after one. */
static int names_licence(const char *w)
{
    const char *last = strrchr(w, ' ');
    if (!last) return strncmp(w, "licen", 5) == 0;
    if (strncmp(last + 1, "licen", 5) == 0) return 1;
    static const char *const ID[] = {"id", "identifier", "name", "spdx", "type"};
    int id = 0;
    for (size_t i = 0; i < sizeof ID / sizeof *ID; i++) id |= strcmp(last + 1, ID[i]) == 0;
    if (!id) return 0;
    const char *prev = last;
    while (prev > w && prev[-1] != ' ') prev--;
    return strncmp(prev, "licen", 5) == 0;
}

int dg_license_name_field(const struct dg_field_plan *f)
{
    if (!dg_license_field(f)) return 0;
    char w[DG_KEY_MAX_LEN + 1];
    const char *seg = f->path.seg[f->path.n - 1];
    dg_key_norm(seg, strlen(seg), w, sizeof w);
    if (names_licence(w)) return 1;
    if (!f->title) return 0;
    dg_key_norm(f->title, strlen(f->title), w, sizeof w);
    return names_licence(w);
}
