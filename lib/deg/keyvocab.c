/* keyvocab.c - the vocabulary of document keys: other words for what a field's name
 * says, read as partial matches (keyprior.h dg_key_vocab_match; libdeg 0.25.0).
 *
 * Why: the key prior and the list prior match a field's name with a key by its words,
 * and the common package and project formats name one fact with different words. A
 * field `dependencies` matched no key of an RPM spec ("Requires:"), an R DESCRIPTION
 * ("Depends:") or a setup.cfg ("install_requires"), `build_dependencies` no
 * "Build-Depends:" of a Debian source control file, and a field `name` no key of a
 * DESCRIPTION ("Package: jsonlite": the span went to "httr", a package its Suggests line
 * names). A field `maintainer_email` or `source_url` names what its value is (an
 * address, a URL) after what it belongs to: "Maintainer: A <a@b>", an RPM spec's
 * "Source0:". The words below come from those formats' own documentation (Debian Policy
 * 5.6, the RPM spec file reference, Writing R Extensions 1.1.1, setuptools, the Cargo and
 * npm manifests, Maven's POM reference).
 *
 * Rule: with no match as written (dg_key_match_written), a field name and a key match
 * partially (1, never exact) when they have the same words, in any order and number
 * folded, after
 *   - canonical words: depends, depend, requires, require, requirements, requirement,
 *     deps, prerequisites, prereqs -> dependency; website, webpage -> homepage;
 *     licence -> license (British spelling); "install" dropped (setuptools'
 *     install_requires); identifier -> id, and a key's "spdx" dropped (libdeg 0.26.0:
 *     "SPDX-License-Identifier" is a `license_id`); a key word's trailing digits after
 *     3+ letters dropped ("Source0", "URL2": numbered keys of one kind);
 *   - one-word names and keys paired (PAIRS, after rewriting): a field `name` reads a
 *     key "Package" (a package's name: Debian, R), `homepage` (`website`) a key "URL"
 *     (an RPM spec's, pkg-config's), `url` a key "Homepage", and `contact` a key
 *     "Author" or "Maintainer" (libdeg 0.26.0);
 *   - a name of 2+ words ending in what its value is ("url", "uri", "link", "email",
 *     "mail") read without that word: `maintainer_email` = "maintainer", `source_url` =
 *     "source" (the grammar candidates inside the key's value get the bonus: the
 *     address inside "Maintainer: A <a@b>"), also paired (`contact_email` = "Author"),
 *     and paired with a key ending in a word of the same kind without it
 *     (`contact_email` = "Author-email", "maintainer_email");
 *   - a name of 2+ words opening with an end word (earliest, latest, min, max, ...) read
 *     without it, by the words as written: `earliest_year` = "copyright year".
 * The same words, not words that hold the other's: a qualified key is another fact
 * ("Build-Depends:", "Pre-Depends:", "Requires.private:" are no `dependencies`, "Depends:"
 * no `build_dependencies`). Words that only held the name's were tried first: on the
 * held-out real documents `dependencies` lost 9 of 100 fields and no field gained, so
 * they were left out (checkpoints/smollm2-135m-v13/EVAL.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deg/keyprior.h"

static const char *const CANON[][2] = {
    {"depends", "dependency"},       {"depend", "dependency"},
    {"requires", "dependency"},      {"require", "dependency"},
    {"requirements", "dependency"},  {"requirement", "dependency"},
    {"deps", "dependency"},          {"prerequisites", "dependency"},
    {"prereqs", "dependency"},       {"dependencies", "dependency"},
    {"website", "homepage"},         {"webpage", "homepage"},
    {"licence", "license"},          {"licences", "licenses"},
    {"install", ""}, /* setuptools' install_requires: the run-time dependencies */
    {"identifier", "id"},
};

/* One-word field names and the one-word keys that name the same fact, {name, key}: a
 * package's name (Debian's and R's "Package:"), a project's homepage (an RPM spec's
 * "URL:") and the other way round. One way only for the name: a key "name" is anyone's
 * (a `Package` field read a parameter's "name = url" under "[signature.1]": datagen-v2
 * test pydoc/webbrowser.open_new/1). A contact is the person to reach: a package's author
 * or maintainer (npm's "author", setuptools' author_email / maintainer_email, Debian's
 * "Maintainer:"; libdeg 0.26.0: `contact_email` read a contributor's address under
 * package.json's "author": "silverwind <me@silverwind.io>"). */
static const char *const PAIRS[][2] = {{"name", "package"}, {"homepage", "url"},
                                       {"url", "homepage"}, {"contact", "author"},
                                       {"contact", "maintainer"}};

/* Words that say what a value is, and the format they name (dg_key_value_kind). */
static const char *const VALUE_WORDS[][2] = {
    {"url", "uri"}, {"uri", "uri"}, {"link", "uri"}, {"email", "email"}, {"mail", "email"},
};

const char *dg_key_value_kind(const char *word)
{
    for (size_t i = 0; i < sizeof VALUE_WORDS / sizeof VALUE_WORDS[0]; i++)
        if (!strcmp(word, VALUE_WORDS[i][0])) return VALUE_WORDS[i][1];
    return NULL;
}

/* The canonical word of the word at p (ending at e, a ' ') written together with the
 * next one, when CANON has that compound ("web site" = "website", "web page"), else NULL. */
static const char *two_word_canon(const char *p, const char *e)
{
    if (!e) return NULL;
    size_t l1 = (size_t)(e - p), l2 = strcspn(e + 1, " ");
    for (size_t i = 0; i < sizeof CANON / sizeof CANON[0]; i++) {
        const char *c = CANON[i][0];
        if (strlen(c) == l1 + l2 && !memcmp(c, p, l1) && !memcmp(c + l1, e + 1, l2) && l1 && l2)
            return CANON[i][1];
    }
    return NULL;
}

/* Rewrite normalised words in[] into out[cap]: canonical words (also of two written
 * apart: "web site"), and (key) trailing digits dropped after 3+ letters. Returns 1 when
 * any word changed. */
static int canon_words(const char *in, char *out, size_t cap, int key)
{
    size_t o = 0;
    int changed = 0;
    const char *p = in;
    out[0] = 0;
    while (*p) {
        const char *e = strchr(p, ' ');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        const char *w = p;
        size_t wl = l;
        const char *two = two_word_canon(p, e);
        if (two) { /* "web site" is "website" (libdeg 0.27.0) */
            w = two;
            wl = strlen(w);
            e = strchr(e + 1, ' ');
        }
        for (size_t i = 0; !two && i < sizeof CANON / sizeof CANON[0]; i++)
            if (strlen(CANON[i][0]) == l && memcmp(CANON[i][0], p, l) == 0) {
                w = CANON[i][1];
                wl = strlen(w);
                break;
            }
        if (key && l == 4 && memcmp(p, "spdx", 4) == 0) { /* "SPDX-License-Identifier" */
            w = "";
            wl = 0;
        }
        if (key && w == p) {
            size_t d = wl, letters = 0;
            while (d > 0 && w[d - 1] >= '0' && w[d - 1] <= '9') d--;
            for (size_t i = 0; i < d; i++) letters += (w[i] >= 'a' && w[i] <= 'z');
            if (d < wl && d == letters && letters >= 3) wl = d;
        }
        changed |= w != p || wl != l;
        if (wl == 0) { /* a word dropped */
            if (!e) break;
            p = e + 1;
            continue;
        }
        if (o + (o ? 1 : 0) + wl + 1 > cap) break;
        if (o) out[o++] = ' ';
        memcpy(out + o, w, wl);
        o += wl;
        out[o] = 0;
        if (!e) break;
        p = e + 1;
    }
    return changed;
}

int dg_key_dependency_key(const char *key)
{
    char c[DG_KEY_MAX_LEN + 1];
    canon_words(key, c, sizeof c, 1);
    return dg_key_words_in(c, "dependency");
}

/* Words that say what an address (a URL, an e-mail address) is for in the keys of
 * package and project metadata (the formats keyvocab.c's head names: Debian Policy
 * 5.6's Vcs-* and Bugs, npm's repository/bugs/funding, the POM's scm and
 * issueManagement, Cargo's repository and documentation) and of notices (copyright,
 * licence). */
static const char *const ADDRESS_PURPOSE[] = {
    "repository", "repo", "vcs", "git", "svn", "browser", "scm", "source", "code",
    "download", "bugs", "bug", "tracker", "issues", "issue", "documentation", "docs",
    "doc", "changelog", "changes", "funding", "sponsor", "sponsors", "donate",
    "copyright", "license", "url", "uri", "link", "type", "directory"};

int dg_key_address_purpose(const char *key)
{
    int any = 0;
    for (const char *p = key; *p;) {
        const char *e = strchr(p, ' ');
        size_t n = e ? (size_t)(e - p) : strlen(p), i = 0;
        while (i < sizeof ADDRESS_PURPOSE / sizeof *ADDRESS_PURPOSE &&
               !(strlen(ADDRESS_PURPOSE[i]) == n && memcmp(ADDRESS_PURPOSE[i], p, n) == 0))
            i++;
        if (i == sizeof ADDRESS_PURPOSE / sizeof *ADDRESS_PURPOSE) return 0;
        any = 1;
        if (!e) break;
        p = e + 1;
    }
    return any;
}

/* Normalised name without its last word when that word says what the value is and
 * other words precede it ("contact email" -> "contact"); 1 when cut. */
/* Words of a number's name that ask for one end of the numbers its key states (-1 the
 * least, 1 the greatest). "first" and "last" are left out: they also name a position
 * ("first_port" of a list), and the years of notices are not written in order (png.h
 * opens with "2018-2022" above "1995-1996"). */
static const struct { const char *word; int end; } EXTREMES[] = {
    {"earliest", -1}, {"oldest", -1}, {"minimum", -1}, {"min", -1}, {"lowest", -1},
    {"smallest", -1}, {"least", -1}, {"fewest", -1},
    {"latest", 1}, {"newest", 1}, {"maximum", 1}, {"max", 1}, {"highest", 1},
    {"largest", 1}, {"greatest", 1}, {"most", 1},
};

/* The end word w[0, n) asks for (EXTREMES), else 0. */
static int extreme_word(const char *w, size_t n)
{
    for (size_t j = 0; j < sizeof EXTREMES / sizeof EXTREMES[0]; j++)
        if (strlen(EXTREMES[j].word) == n && !strncmp(w, EXTREMES[j].word, n))
            return EXTREMES[j].end;
    return 0;
}

/* A name of 2+ words opening with an end word names its key without it:
 * `earliest_year` a notice's "copyright year", `max_connections` "Connections". */
static const char *cut_extreme_word(const char *name)
{
    const char *sp = strchr(name, ' ');
    return sp && extreme_word(name, (size_t)(sp - name)) ? sp + 1 : NULL;
}

static int cut_value_word(const char *name, char *out, size_t cap)
{
    const char *sp = strrchr(name, ' ');
    if (!sp || (size_t)(sp - name) + 1 > cap || !dg_key_value_kind(sp + 1)) return 0;
    memcpy(out, name, (size_t)(sp - name));
    out[sp - name] = 0;
    return 1;
}

static int cmp_word(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Words w (normalised, rewritten) sorted into out[cap], joined by ' '. */
static void sort_words(const char *w, char *out, size_t cap)
{
    char buf[DG_KEY_MAX_LEN + 1];
    const char *word[DG_KEY_MAX_LEN / 2 + 1];
    size_t n = 0, o = 0;
    snprintf(buf, sizeof buf, "%s", w);
    /* split in place (no strtok: fills run on several threads at once) */
    for (char *p = buf; *p && n < sizeof word / sizeof word[0];) {
        word[n++] = p;
        char *sp = strchr(p, ' ');
        if (!sp) break;
        *sp = 0;
        p = sp + 1;
    }
    qsort(word, n, sizeof word[0], cmp_word);
    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(word[i]);
        if (o + (o ? 1 : 0) + l + 1 > cap) break;
        if (o) out[o++] = ' ';
        memcpy(out + o, word[i], l + 1);
        o += l;
    }
}

/* The same words, in any order, as written or with number folded ("home page" =
 * "homepage", "private dependency" = "dependency private"). */
static int same_words(const char *name, const char *key)
{
    char a[DG_KEY_MAX_LEN + 1], b[DG_KEY_MAX_LEN + 1];
    sort_words(name, a, sizeof a);
    sort_words(key, b, sizeof b);
    return a[0] && b[0] &&
           (dg_key_match_written(a, NULL, b, 0) == 2 || dg_key_match_written(a, NULL, b, 1) == 2);
}

/* Rewritten name n and key k are one of PAIRS. */
static int paired(const char *n, const char *k)
{
    for (size_t i = 0; i < sizeof PAIRS / sizeof PAIRS[0]; i++)
        if (!strcmp(n, PAIRS[i][0]) && !strcmp(k, PAIRS[i][1])) return 1;
    return 0;
}

static int vocab_one(const char *name, const char *key)
{
    char n2[DG_KEY_MAX_LEN + 1], k2[DG_KEY_MAX_LEN + 1], cut[DG_KEY_MAX_LEN + 1];
    char kcut[DG_KEY_MAX_LEN + 1];
    if (!name[0] || !key[0]) return 0;
    int cn = canon_words(name, n2, sizeof n2, 0), ck = canon_words(key, k2, sizeof k2, 1);
    if (paired(n2, k2)) return 1; /* rewritten: `website` too */
    if ((cn || ck) && same_words(n2, k2)) return 1;
    const char *rest = cut_extreme_word(name);
    if (rest && (dg_key_match_written(rest, NULL, key, 0) || dg_key_match_written(rest, NULL, key, 1)))
        return 1;
    if (!cut_value_word(name, cut, sizeof cut)) return 0;
    canon_words(cut, n2, sizeof n2, 0);
    if (same_words(n2, k2) || paired(n2, k2)) return 1; /* `contact_email` = "Author" */
    /* both end in a word of one kind: the pairs without it ("Author-email", "author_email") */
    const char *nw = strrchr(name, ' ') + 1, *kw = strrchr(k2, ' ');
    return kw && cut_value_word(k2, kcut, sizeof kcut) &&
           !strcmp(dg_key_value_kind(nw), dg_key_value_kind(kw + 1)) && paired(n2, kcut);
}

int dg_key_vocab_match(const char *seg, const char *title, const char *key)
{
    char name[DG_KEY_MAX_LEN + 1];
    for (int i = 0; i < 2; i++) {
        const char *s = i ? title : seg;
        if (!s) continue;
        dg_key_norm(s, strlen(s), name, sizeof name);
        if (vocab_one(name, key)) return 1;
    }
    return 0;
}

int dg_key_name_extreme(const dg_field_plan *f)
{
    if ((f->type != DG_TYPE_NUMBER && f->type != DG_TYPE_INTEGER) || f->depth_items > 0 ||
        f->path.n == 0)
        return 0;
    char name[DG_KEY_MAX_LEN + 1];
    for (int i = 0; i < 2; i++) {
        const char *s = i ? f->title : f->path.seg[f->path.n - 1];
        if (!s) continue;
        dg_key_norm(s, strlen(s), name, sizeof name);
        for (const char *w = name; *w;) {
            size_t n = strcspn(w, " ");
            int end = extreme_word(w, n);
            if (end) return end;
            w += n;
            while (*w == ' ') w++;
        }
    }
    return 0;
}
