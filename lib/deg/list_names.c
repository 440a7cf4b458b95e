/* list_names.c - lists of names: an array that asks for names reads the name each
 * list item opens with, not the version constraint, marker or qualifier after it
 * (lists.h dg_lists_names_array, dg_lists_name_end; libdeg 0.27.0); and a file of
 * requirement lines is a list without a key (dg_lscan_requirement_runs). */
#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include "base/status.h"
#include "base/utf8.h"
#include "deg/keyprior.h"
#include "deg/lists.h"
#include "deg/lists_scan.h"

/* 1 when text s (its first DG_KEY_DESC_MAX bytes, normalised) has the word "name" or
 * "names". */
static int text_asks_names(const char *s)
{
    if (!s) return 0;
    char norm[DG_KEY_DESC_MAX + 1];
    size_t n = strlen(s);
    dg_key_norm(s, n < DG_KEY_DESC_MAX ? n : DG_KEY_DESC_MAX, norm, sizeof norm);
    return dg_key_words_in(norm, "name") || dg_key_words_in(norm, "names");
}

int dg_lists_names_array(const dg_plan *P, size_t a)
{
    if (!dg_lists_plain_array(P, a)) return 0;
    const dg_array_plan *A = &P->arrays[a];
    const dg_field_plan *f = &P->fields[A->first_field];
    return text_asks_names(A->path.seg[A->path.n - 1]) || text_asks_names(A->title) ||
           text_asks_names(A->description) || text_asks_names(f->title) ||
           text_asks_names(f->description);
}

int dg_lists_dependency_array(const dg_array_plan *A)
{
    char norm[DG_KEY_MAX_LEN + 1];
    for (int i = 0; i < 2; i++) {
        const char *s = i ? A->title : A->path.n ? A->path.seg[A->path.n - 1] : NULL;
        if (!s) continue;
        dg_key_norm(s, strlen(s), norm, sizeof norm);
        if (dg_key_dependency_key(norm)) return 1;
    }
    return 0;
}

int dg_lists_dependencies_unwritten(const dg_plan *P, size_t a, size_t n_keylines)
{
    return n_keylines >= DG_LISTS_KEYED_DOC && dg_lists_plain_array(P, a) &&
           P->arrays[a].min_items == 0 && dg_lists_dependency_array(&P->arrays[a]);
}

/* A name's bytes: letters, digits and . _ - + (Debian "libstdc++6", PEP 508
 * "zope.interface", R "R.rsp"), '/' and a leading '@' (npm "@npmcli/config", Go
 * "golang.org/x/net"). */
static int name_byte(unsigned char c)
{
    return isalnum(c) || c == '.' || c == '_' || c == '-' || c == '+' || c == '/';
}

int dg_lscan_package_name(const char *s, size_t b, size_t e)
{
    if (b >= e || !isalpha((unsigned char)s[b])) return 0;
    for (size_t i = b; i < e; i++)
        if (!name_byte((unsigned char)s[i]) || s[i] == '/') return 0;
    return 1;
}

/* What may follow a name in a requirement: a version constraint or relation
 * ("(>= 2.29)", ">=4.1", "~=0.10", "!=2", "^1.2"), an extra ("[socks]"), an
 * environment marker ("; python_version < '3.5'"), an alternative ("| b"), an
 * architecture qualifier (":any"), a URL ("jc @ git+https://..."). Sources: PEP 508 (name, extras, version spec,
 * marker), Debian Policy 7.1 (relations, alternatives) and 5.6.8 (":any"). */
static int after_name(const char *s, size_t i, size_t e, size_t blanks)
{
    if (i >= e) return 0;
    unsigned char c = (unsigned char)s[i];
    if (strchr("([<>=!~;^|", c)) return 1;
    /* ":any", not "://" (a URL) nor "group:artifact:1.0" (a coordinate) */
    if (c == ':') {
        size_t j = i + 1;
        while (j < e && islower((unsigned char)s[j])) j++;
        return j > i + 1 && (j == e || s[j] == ' ' || s[j] == ',' || s[j] == '(');
    }
    /* "golang.org/x/net v0.17.0", "glibc 2.17": a version after blanks; PEP 508's
     * "name @ url" */
    return blanks > 0 && (isdigit(c) || c == '@' ||
                          (c == 'v' && i + 1 < e && isdigit((unsigned char)s[i + 1])));
}

/* End of the run of name bytes [b, e) opens with (a leading '@', then a letter or digit
 * first), or b when it opens with none. */
static size_t name_run(const char *s, size_t b, size_t e)
{
    size_t i = b;
    if (i < e && s[i] == '@') i++;
    if (i >= e || !isalnum((unsigned char)s[i])) return b;
    while (i < e && name_byte((unsigned char)s[i])) i++;
    return i;
}

size_t dg_lists_name_end(const char *s, size_t b, size_t e)
{
    size_t i = name_run(s, b, e);
    if (i == b) return e;
    size_t end = i;
    while (end > b && !isalnum((unsigned char)s[end - 1])) end--; /* "foo-" is no name */
    size_t j = i;
    while (j < e && (s[j] == ' ' || s[j] == '\t')) j++;
    return end > b && after_name(s, j, e, j - i) ? end : e;
}

/* Line [b, e) (no '\n'; a '\r' and trailing blanks left out by the caller) is one
 * requirement: unindented, a name alone or a name and a requirement's tail
 * (after_name; '=' only as "==", '(' only before a relation or a version, a " #"
 * comment), as pip's requirements files write them ("PyYAML>=3.10", "six",
 * "rsa>=4.1; python_version >= '3.5'"). "Name=Vim", "main()" and "Key: value"
 * are none. *cut: where the item ends (before a " #" comment). */
static int requirement_line(const char *s, size_t b, size_t e, size_t *cut)
{
    size_t i = name_run(s, b, e);
    if (i == b) return 0;
    *cut = e;
    if (i == e) return i - b <= DG_KEY_MAX_LEN;
    size_t j = i;
    while (j < e && (s[j] == ' ' || s[j] == '\t')) j++;
    if (j > i && s[j] == '#') {
        *cut = i;
        return 1;
    }
    if (s[j] == '=') return j + 1 < e && s[j + 1] == '=';
    if (s[j] == '(') {
        size_t k = j + 1;
        while (k < e && s[k] == ' ') k++;
        return k < e && (strchr("<>=!~", s[k]) || isdigit((unsigned char)s[k]));
    }
    return after_name(s, j, e, j - i);
}

/* Close run S->raw[S->n_raw] of n requirement lines: one line is no list. */
static void close_run(dg_lscan *S, size_t n)
{
    if (n < 2) {
        S->raw[S->n_raw].bare = 0;
        S->raw[S->n_raw].key[0] = 0;
    }
    dg_lscan_close(S);
}

/* (lists_scan.h) Runs of two or more requirement lines (requirement_line), '#'
 * comment lines, option lines ("-r base.txt", "-e .[socks]") and blank lines between
 * them, each run a list whose items are its requirement lines, under the key
 * "requirements" no line writes (what the lines are: `dependencies` and `requires`
 * match it by the key vocabulary, keyvocab.c), never merged with a written key's list:
 * a requirements file ("requests>=1.2.3,<=2.0.1\nrsa>=4.1; ...\nsix"). Why: v13
 * answered [".2.1"] for the dependencies of a requirements file (bench/devreal set 8). */
deg_status dg_lscan_requirement_runs(dg_lscan *S)
{
    const char *s = S->ctx;
    size_t len = S->len, cp = 0, n = 0;
    int open = 0;
    for (size_t b = 0; b < len;) {
        size_t e = dg_lscan_line_end(s, len, b), ve = e, after = e < len ? e + 1 : len, cut;
        while (ve > b && (s[ve - 1] == '\r' || s[ve - 1] == ' ' || s[ve - 1] == '\t')) ve--;
        if (requirement_line(s, b, ve, &cut)) {
            if (!open) {
                DG_TRY(dg_lscan_open(S, b, b, 0));
                strcpy(S->raw[S->n_raw].key, "requirements"); /* what it is: no line names it */
                S->raw[S->n_raw].bare = 1;
                open = 1;
            }
            DG_TRY(dg_lscan_item(S, b, cp, b, cut, NULL));
            n++;
        } else if (open && ve > b && s[b] != '#' && s[b] != '-') {
            close_run(S, n);
            open = 0;
            n = 0;
        }
        cp += dg_utf8_count(s + b, after - b);
        b = after;
    }
    if (open) close_run(S, n);
    return DEG_OK;
}
