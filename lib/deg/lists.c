/* lists.c - lists written under a key in a context, and their match to an array
 * field (lists.h). */
#include "deg/lists.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/grow.h"
#include "base/status.h"
#include "base/utf8.h"
#include "deg/lists_scan.h"
#include "deg/sentences.h"

size_t dg_lscan_bullet(const char *s, size_t b, size_t e)
{
    size_t i = b;
    while (i < e && (s[i] == ' ' || s[i] == '\t')) i++;
    if (i >= e) return 0;
    unsigned char c = (unsigned char)s[i];
    if (c == '-' || c == '*' || c == '+') i++;
    else if (c == 0xE2 && i + 2 < e && (unsigned char)s[i + 1] == 0x80 &&
             (unsigned char)s[i + 2] == 0xA2)
        i += 3; /* U+2022 BULLET */
    else if (isdigit(c)) {
        size_t d = i;
        while (i < e && i - d < 4 && isdigit((unsigned char)s[i])) i++;
        if (i >= e || (s[i] != '.' && s[i] != ')')) return 0;
        i++;
    } else
        return 0;
    if (i >= e || (s[i] != ' ' && s[i] != '\t')) return 0;
    while (i < e && (s[i] == ' ' || s[i] == '\t')) i++;
    return i < e ? i : 0;
}

/* Bytes [*b, *e) trimmed of spaces, a trailing '\r' and one pair of enclosing quotes. */
static void trim_value(const char *s, size_t *b, size_t *e)
{
    while (*b < *e && (s[*b] == ' ' || s[*b] == '\t')) (*b)++;
    while (*e > *b && (s[*e - 1] == ' ' || s[*e - 1] == '\t' || s[*e - 1] == '\r')) (*e)--;
    if (*e - *b >= 2 && (s[*b] == '"' || s[*b] == '\'') && s[*e - 1] == s[*b]) {
        (*b)++;
        (*e)--;
    }
}

deg_status dg_lscan_item(dg_lscan *S, size_t lb, size_t lcp, size_t b, size_t e, int *added)
{
    const char *s = S->ctx;
    if (added) *added = 0;
    trim_value(s, &b, &e);
    if (e <= b) return DEG_OK;
    if (DG_GROW(S->item, S->cap_items, 2 * (S->n_items + 1)) != DEG_OK ||
        DG_GROW(S->icell, S->cap_icell, 2 * (S->n_items + 1)) != DEG_OK)
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (lists)");
    size_t c0 = lcp + dg_utf8_count(s + lb, b - lb);
    S->item[2 * S->n_items] = c0;
    S->item[2 * S->n_items + 1] = c0 + dg_utf8_count(s + b, e - b);
    S->icell[2 * S->n_items] = S->n_cells;
    S->icell[2 * S->n_items + 1] = 0;
    S->n_items++;
    if (added) *added = 1;
    return DEG_OK;
}

deg_status dg_lscan_cell(dg_lscan *S, size_t k0, size_t k1, size_t lb, size_t lcp, size_t b,
                         size_t e)
{
    const char *s = S->ctx;
    if (!S->n_items) return DEG_OK;
    if (DG_GROW(S->cell, S->cap_cells, S->n_cells + 1) != DEG_OK)
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (tables)");
    dg_cell *c = &S->cell[S->n_cells];
    dg_key_norm(s + k0, k1 - k0, c->key, sizeof c->key);
    trim_value(s, &b, &e);
    /* a dash alone says "nothing here": "-", en dash, em dash */
    if ((e - b == 1 && s[b] == '-') ||
        (e - b == 3 && memcmp(s + b, "\xe2\x80", 2) == 0 &&
         ((unsigned char)s[b + 2] == 0x93 || (unsigned char)s[b + 2] == 0x94)))
        e = b;
    c->c0 = lcp + dg_utf8_count(s + lb, b - lb);
    c->c1 = c->c0 + dg_utf8_count(s + b, e - b);
    S->n_cells++;
    S->icell[2 * (S->n_items - 1) + 1]++;
    return DEG_OK;
}

/* Conjunctions that join the last two items of a written list ("a, b and c"):
 * the words datagen's renderings use (render.py WORDS, en de fr es it/pt nl) and
 * '&'. */
static const char *const CONJ[] = {"and", "und", "et", "y", "e", "en", "&"};

/* [*c0, *c1) = the first " W " of [b, e) with W a conjunction (the spaces
 * included): 1, else 0. Only when text stands on both sides. */
static int find_conj(const char *s, size_t b, size_t e, size_t *c0, size_t *c1)
{
    for (size_t i = b + 1; i + 2 < e; i++) {
        if (s[i] != ' ') continue;
        for (size_t k = 0; k < sizeof CONJ / sizeof CONJ[0]; k++) {
            size_t n = strlen(CONJ[k]);
            if (i + 1 + n < e - 1 && memcmp(s + i + 1, CONJ[k], n) == 0 && s[i + 1 + n] == ' ') {
                *c0 = i;
                *c1 = i + 2 + n;
                return 1;
            }
        }
    }
    return 0;
}

/* A part that reads as an identifier, not a word: it holds one of . : / @ _ =
 * ("basic.target", "man:bash(1)", "https://x.org/", "LANG=C"). */
static int identifier_like(const char *s, size_t b, size_t e)
{
    for (size_t i = b; i < e; i++)
        if (s[i] == '.' || s[i] == ':' || s[i] == '/' || s[i] == '@' || s[i] == '_' || s[i] == '=')
            return 1;
    return 0;
}

/* Items of a value [v0, v1) split at blanks when it has two or more parts and
 * each is identifier-like (systemd's "After=a.target b.service",
 * "Documentation=man:x(8) https://..."), or under a dependency key (keyvocab.c) a
 * package name (list_names.c: pkg-config's "Requires.private: libssl libcrypto zlib",
 * whose Requires separates names by commas or blanks; libdeg 0.27.0); else no items
 * added and *done = 0. */
static deg_status add_blank_separated(dg_lscan *S, size_t lb, size_t lcp, size_t v0, size_t v1,
                                      int *done)
{
    const char *s = S->ctx;
    size_t first = S->n_items;
    /* the open list's key (dg_lscan_open), when a list is open */
    int deps = S->n_raw < S->cap_raw && dg_key_dependency_key(S->raw[S->n_raw].key);
    *done = 0;
    for (size_t i = v0; i < v1;) {
        while (i < v1 && (s[i] == ' ' || s[i] == '\t')) i++;
        size_t b = i;
        while (i < v1 && s[i] != ' ' && s[i] != '\t') i++;
        /* under a dependency key no part is a constraint: "glibc >= 2.17" is one item */
        int ok = deps ? isalpha((unsigned char)s[b]) &&
                            (identifier_like(s, b, i) || dg_lscan_package_name(s, b, i))
                      : identifier_like(s, b, i);
        if (b < i && !ok) break;
        DG_TRY(dg_lscan_item(S, lb, lcp, b, i, NULL));
        *done = i >= v1;
    }
    if (!*done || S->n_items - first < 2) {
        S->n_items = first; /* a word among the parts, or one part: not this rule */
        *done = 0;
    }
    return DEG_OK;
}

/* Items of a delimited value [v0, v1): split at ';' when it has one, else at ','
 * (never inside parentheses, 0.21.0, or brackets, 0.25.0; an item's "X (a, b)" parts are
 * its cells: paren_cells) with the last part split once more at a conjunction ("a, b and c"; a value
 * without commas: "Utility and TextEditor"); a value with neither splits at
 * blanks when its parts are identifiers (add_blank_separated). */
static deg_status add_delimited(dg_lscan *S, size_t lb, size_t lcp, size_t v0, size_t v1)
{
    const char *s = S->ctx;
    char d = memchr(s + v0, ';', v1 - v0) ? ';' : ',';
    size_t b = v0;
    size_t c0, c1;
    int depth = 0; /* inside parentheses: "a (1, 2), b" splits after ")" only */
    S->paren_one = 0; /* some item "X (a, b)": "Y (c)" is X, c too (list_parts.c) */
    for (size_t i = v0; i + 1 < v1 && !S->paren_one; i++) {
        if (s[i] == '(') depth++;
        if (s[i] == ')' && depth > 0) depth--;
        S->paren_one = depth > 0 && s[i] == ',' && s[i + 1] == ' ';
    }
    depth = 0;
    int square = 0; /* nor inside brackets: "Ann [aut, cre], Bob [ctb]" (R's roles; 0.25.0) */
    for (size_t i = v0; i <= v1; i++) {
        if (i < v1 && s[i] == '(') depth++;
        if (i < v1 && s[i] == ')' && depth > 0) depth--;
        if (i < v1 && s[i] == '[') square++;
        if (i < v1 && s[i] == ']' && square > 0) square--;
        if (i < v1 && square > 0) continue;
        if (i == v1 || (s[i] == d && depth == 0)) {
            if (i == v1 && d == ',' && find_conj(s, b, i, &c0, &c1)) {
                DG_TRY(dg_lscan_add_item(S, lb, lcp, b, c0));
                b = c1;
            } else if (i == v1 && b == v0) {
                int done;
                DG_TRY(add_blank_separated(S, lb, lcp, v0, v1, &done));
                if (done) break;
            }
            DG_TRY(dg_lscan_add_item(S, lb, lcp, b, i));
            b = i + 1;
        }
    }
    S->paren_one = 0; /* this value's only */
    return DEG_OK;
}

/* End of the sentence that starts at byte b of line [b, e): its first sentence
 * end (sentences.h: ". X", X a capital, not after an initial or "Mr."; "Categories:
 * Utility and TextEditor. Keys: Name, Exec"), else e. Prose renderings write
 * several "Key: value" sentences on one line; each is a key line of its own. */
static size_t sentence_end(const char *s, size_t b, size_t e)
{
    for (size_t i = b + 1; i < e; i++)
        if (dg_sentence_end(s, e, i)) return i;
    return e;
}

/* First occurrence of needle in s[b, e), or e. */
static size_t find(const char *s, size_t b, size_t e, const char *needle)
{
    const char *p = memmem(s + b, e - b, needle, strlen(needle));
    return p ? (size_t)(p - s) : e;
}

/* The JSON strings of an array from byte i (after '[') to its ']', a blank line (an
 * unclosed array: the lists below it stay the scan's; 0.25.0) or the end of the context;
 * each string's text between its quotes ('...' too: TOML, Python) is an item. Returns the
 * byte after the last line the array used (a line start), updating *cp to its
 * code point. */
static deg_status json_items(dg_lscan *S, size_t len, size_t lb, size_t i, size_t *next,
                             size_t *cp)
{
    const char *s = S->ctx;
    size_t lcp = *cp;
    while (i < len && s[i] != ']') {
        if (s[i] == '\n' && i + 1 < len && s[i + 1] == '\n') break; /* unclosed: ends here */
        if (s[i] == '\n') {
            lcp += dg_utf8_count(s + lb, i + 1 - lb);
            lb = i + 1;
            i++;
            continue;
        }
        if (s[i] != '"' && s[i] != '\'') {
            i++;
            continue;
        }
        char q = s[i]; /* TOML and Python write '...' too */
        size_t q0 = ++i;
        while (i < len && s[i] != q && s[i] != '\n') i += s[i] == '\\' && i + 1 < len ? 2 : 1;
        if (i >= len || s[i] != q) break;
        DG_TRY(dg_lscan_item(S, lb, lcp, q0, i, NULL));
        i++;
    }
    /* continue after the line holding the ']' */
    const char *nl = i < len ? memchr(s + i, '\n', len - i) : NULL;
    size_t e = nl ? (size_t)(nl - s) : len;
    *cp = lcp + dg_utf8_count(s + lb, e - lb) + (nl ? 1 : 0);
    *next = nl ? e + 1 : len;
    return DEG_OK;
}

/* An HTML table row `<th>key</th><td>value</td>` on line [b, e): key and value
 * bytes. The value's items are its `<li>` entries when it has any (else it is
 * delimited like a key line's value). */
static int html_row(const char *s, size_t b, size_t e, size_t *k0, size_t *k1, size_t *v0,
                    size_t *v1)
{
    size_t th = find(s, b, e, "<th>");
    if (th == e) return 0;
    *k0 = th + 4;
    *k1 = find(s, *k0, e, "</th>");
    if (*k1 == e) return 0;
    size_t td = find(s, *k1, e, "<td>");
    if (td == e) return 0;
    *v0 = td + 4;
    *v1 = find(s, *v0, e, "</td>");
    return 1;
}

static deg_status html_items(dg_lscan *S, size_t lb, size_t lcp, size_t v0, size_t v1)
{
    const char *s = S->ctx;
    size_t li = find(s, v0, v1, "<li>");
    if (li == v1) {
        if (!memchr(s + v0, '<', v1 - v0)) return add_delimited(S, lb, lcp, v0, v1);
        return DEG_OK;
    }
    while (li < v1) {
        size_t a = li + 4, z = a;
        while (z < v1 && s[z] != '<') z++;
        DG_TRY(dg_lscan_add_item(S, lb, lcp, a, z));
        li = find(s, z, v1, "<li>");
    }
    return DEG_OK;
}

deg_status dg_lscan_open(dg_lscan *S, size_t k0, size_t k1, int table)
{
    if (DG_GROW(S->raw, S->cap_raw, S->n_raw + 1) != DEG_OK)
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (lists)");
    raw_list *L = &S->raw[S->n_raw];
    dg_key_norm(S->ctx + k0, k1 - k0, L->key, sizeof L->key);
    L->first = S->n_items;
    L->table = table;
    L->members = 0;
    L->bare = 0;
    return DEG_OK;
}

void dg_lscan_close(dg_lscan *S)
{
    raw_list *L = &S->raw[S->n_raw];
    L->n = S->n_items - L->first;
    if (L->n && (L->key[0] || L->table || L->bare)) {
        S->n_raw++;
        return;
    }
    if (L->first < S->n_items) S->n_cells = S->icell[2 * L->first]; /* its cells go too */
    S->n_items = L->first;
}

/* The line after line [b, e) is indented past it and starts with ',' (the ", libfoo"
 * style of folded lists). */
static int comma_leads_next(const dg_lscan *S, size_t b, size_t e)
{
    if (e >= S->len) return 0;
    size_t n0 = e + 1, n1 = dg_lscan_line_end(S->ctx, S->len, n0);
    size_t t = n0 + dg_lscan_indent(S->ctx, n0, n1);
    return t < n1 && S->ctx[t] == ',' && t - n0 > dg_lscan_indent(S->ctx, b, e);
}

/* The key lines of text line [b, e) (code point cp), one per sentence
 * (sentence_end): each with a value adds a raw list of its delimited items; a
 * last one with an empty value is left open (*open = 1) for the bullets below
 * the line, a line's only one whose value ends in ',' or whose next line starts with
 * one (*open = 2) for the folded lines below it (folded_run). A sentence's trailing '.'
 * is not part of its value. */
static deg_status scan_sentences(dg_lscan *S, size_t b, size_t e, size_t cp, int *open)
{
    const char *s = S->ctx;
    size_t j0, j1, jc;
    int json = dg_json_member_split(s, b, e, &j0, &j1, &jc); /* a JSON line is one sentence */
    *open = 0;
    for (size_t sb = b; sb < e;) {
        size_t se = json ? e : sentence_end(s, sb, e), next = se < e ? se + 1 : e;
        size_t ve = se;
        while (ve > sb && (s[ve - 1] == ' ' || s[ve - 1] == '\t' || s[ve - 1] == '\r')) ve--;
        if (se == e && ve > sb + 1 && s[ve - 1] == '.' && s[ve - 2] != '.') ve--;
        size_t k0, k1, v0, v1;
        if (dg_keyline_split(s, sb, ve, &k0, &k1, &v0, &v1)) {
            DG_TRY(dg_lscan_open(S, k0, k1, 0));
            if (v1 == v0 && se == e) {
                *open = 1;
                return DEG_OK;
            }
            if (v1 > v0 + 1 && s[v0] == '[' && s[v1 - 1] == ']') { /* "[a, b]": its items */
                v0++;
                v1--;
            }
            if (v1 > v0) DG_TRY(add_delimited(S, b, cp, v0, v1));
            if (se == e && !json && (s[ve - 1] == ',' || comma_leads_next(S, b, e))) {
                *open = 2; /* folded: folded_run reads on */
                return DEG_OK;
            }
            dg_lscan_close(S);
        }
        sb = next;
        while (sb < e && s[sb] == ' ') sb++;
    }
    return DEG_OK;
}

enum { RUN_END, RUN_KEY, RUN_CAPTION };

/* Bullet line [b, e) (its text at byte t) opens a YAML record: its text is a
 * "key: value" line and the next line, indented past the bullet's marker, is one
 * too ("- name: a\n  tz: b"). Such a bullet's line is only its record's first
 * member (tables.c reads records under a key line, "zones:"; under a heading they
 * are no list). "- libcurl4 (= 7.88.1)" or "- **apt**: the tool" alone are items. */
static int yaml_record(const char *s, size_t len, size_t b, size_t e, size_t t)
{
    size_t k0, k1, v0, v1;
    if (!dg_keyline_split(s, t, e, &k0, &k1, &v0, &v1) || v1 == v0 || e >= len) return 0;
    size_t n0 = e + 1, n1 = dg_lscan_line_end(s, len, n0), ind = dg_lscan_indent(s, n0, n1);
    return ind > dg_lscan_indent(s, b, e) && !dg_lscan_bullet(s, n0, n1) &&
           dg_keyline_split(s, n0 + ind, n1, &k0, &k1, &v0, &v1) && v1 > v0;
}

/* The bullets from byte *b (code point *cp) on: bullet lines, blank lines
 * between them (a loose Markdown list) or before the first; the run ends before
 * the first other line, *b / *cp after its last bullet (unchanged when there is
 * none). RUN_KEY (under an empty-valued key line): each bullet one item.
 * RUN_CAPTION (under a heading): the same, but a bullet that opens a YAML record
 * (yaml_record) ends the run. RUN_END: as
 * RUN_CAPTION, no items added (only where the run ends). */
static deg_status bullet_run(dg_lscan *S, size_t *b, size_t *cp, int mode)
{
    const char *s = S->ctx;
    size_t len = S->len, at = *b, at_cp = *cp;
    while (at < len) {
        size_t e = dg_lscan_line_end(s, len, at), after = e < len ? e + 1 : len;
        size_t after_cp = at_cp + dg_utf8_count(s + at, after - at);
        size_t t = dg_lscan_bullet(s, at, e);
        size_t blank = dg_lscan_indent(s, at, e);
        if (!t && at + blank < e && !(at + blank + 1 == e && s[e - 1] == '\r')) break;
        if (t && mode != RUN_KEY && yaml_record(s, len, at, e, t)) break;
        if (t) {
            if (mode != RUN_END) DG_TRY(dg_lscan_add_item(S, at, at_cp, t, e));
            *b = after;
            *cp = after_cp;
        }
        at = after;
        at_cp = after_cp;
    }
    return DEG_OK;
}

/* The lines from byte *b (code point *cp) on indented past `ind` (the key line's
 * indent), up to a blank or less indented line: each one item when none of them
 * is a bullet or a key line without parts (dg_lscan_count_parts) ("Signature:\n  files;
 * Default: None\n  mode"); key lines are a nested mapping the scan reads as key
 * lines ("build:\n  os: linux"), bullets are bullet_run's. *b / *cp after the last item
 * when there are items. */
static deg_status indented_run(dg_lscan *S, size_t *b, size_t *cp, size_t ind)
{
    const char *s = S->ctx;
    size_t len = S->len, at = *b, k0, k1, v0, v1;
    while (at < len) {
        size_t e = dg_lscan_line_end(s, len, at), t = at + dg_lscan_indent(s, at, e);
        if (t - at <= ind || t >= e || (t + 1 == e && s[t] == '\r')) break;
        if (dg_lscan_bullet(s, at, e) ||
            (!dg_lscan_count_parts(s, t, e) && dg_keyline_split(s, t, e, &k0, &k1, &v0, &v1)))
            return DEG_OK;
        at = e < len ? e + 1 : len;
    }
    size_t end = at;
    for (at = *b; at < end;) {
        size_t e = dg_lscan_line_end(s, len, at), after = e < len ? e + 1 : len;
        DG_TRY(dg_lscan_add_item(S, at, *cp, at, e));
        *cp += dg_utf8_count(s + at, after - at);
        at = after;
    }
    *b = end;
    return DEG_OK;
}

/* RFC 822 folding (libdeg 0.25.0): a key line whose value ends in ',' continues on the
 * lines below indented past it ("Build-Depends: debhelper-compat (= 13),\n autoconf,\n
 * texinfo": Debian control files, R DESCRIPTION's "Imports:" and "Author:"), each line's
 * items delimited as the value's, while the line before ends in ',' or the line starts
 * with one (", libfoo" style). *b / *cp after the last folded line. */
static deg_status folded_run(dg_lscan *S, size_t *b, size_t *cp, size_t ind)
{
    const char *s = S->ctx;
    size_t len = S->len, at = *b;
    int more = 1;
    while (at < len) {
        size_t e = dg_lscan_line_end(s, len, at), t = at + dg_lscan_indent(s, at, e), ve = e;
        while (ve > t && (s[ve - 1] == ' ' || s[ve - 1] == '\t' || s[ve - 1] == '\r')) ve--;
        if (t - at <= ind || t >= ve || (!more && s[t] != ',') || dg_lscan_bullet(s, at, e))
            break;
        more = s[ve - 1] == ',';
        DG_TRY(add_delimited(S, at, *cp, t, ve));
        size_t after = e < len ? e + 1 : len;
        *cp += dg_utf8_count(s + at, after - at);
        at = after;
    }
    *b = at;
    return DEG_OK;
}

static deg_status scan_lists(dg_lscan *S, size_t len)
{
    const char *s = S->ctx;
    size_t b = 0, cp = 0, skip = 0, run_end = 0;
    while (b < len) {
        const char *nl = memchr(s + b, '\n', len - b);
        size_t e = nl ? (size_t)(nl - s) : len;
        size_t next = nl ? e + 1 : len;
        size_t next_cp = cp + dg_utf8_count(s + b, e - b) + (nl ? 1 : 0);
        size_t k0 = 0, k1 = 0, v0 = 0, v1 = 0, open = 0;
        if (b >= skip) DG_TRY(dg_tables_at(S, b, e, cp, &skip));
        DG_TRY(dg_lscan_section_keys(S, len, b, e, cp));
        int json = dg_lscan_json_open(s, b, e, '[', &k0, &k1, &open);
        int jobj = !json && dg_lscan_json_open(s, b, e, '{', &k0, &k1, &open);
        json = json || jobj;
        int html = !json && html_row(s, b, e, &k0, &k1, &v0, &v1);
        int xml = !json && !html && dg_lscan_xml_element(s, len, b, e, &k0, &k1, &v0, &v1);
        if (!json && !html && !xml) {
            int open_list;
            if (b >= run_end && dg_lscan_bullet(s, b, e)) {
                /* bullets under a heading ("## Dependencies", a caption line):
                 * read here, the lines left to the scan (key lines, records) */
                size_t r0 = b, rcp = cp;
                int cap = dg_lscan_caption(s, b, &k0, &k1);
                if (cap) DG_TRY(dg_lscan_open(S, k0, k1, 0));
                DG_TRY(bullet_run(S, &r0, &rcp, cap ? RUN_CAPTION : RUN_END));
                if (cap) dg_lscan_close(S);
                run_end = r0 > next ? r0 : next;
            }
            DG_TRY(scan_sentences(S, b, e, cp, &open_list));
            /* bullets below an empty-valued key line ("choices:", blank lines allowed) */
            if (open_list == 2) {
                DG_TRY(folded_run(S, &next, &next_cp, dg_lscan_indent(s, b, e)));
                dg_lscan_close(S);
                run_end = next;
            } else if (open_list) {
                size_t n0 = next;
                DG_TRY(bullet_run(S, &next, &next_cp, RUN_KEY));
                if (next == n0) DG_TRY(indented_run(S, &next, &next_cp, dg_lscan_indent(s, b, e)));
                dg_lscan_close(S);
                run_end = next;
            }
        } else {
            DG_TRY(dg_lscan_open(S, k0, k1, 0));
            if (jobj) {
                next_cp = cp;
                DG_TRY(dg_lscan_member_keys(S, len, b, open, &next, &next_cp));
            } else if (json) {
                next_cp = cp;
                DG_TRY(json_items(S, len, b, open, &next, &next_cp));
            } else if (xml) {
                DG_TRY(dg_lscan_item(S, b, cp, v0, v1, NULL));
            } else {
                DG_TRY(html_items(S, b, cp, v0, v1));
            }
            dg_lscan_close(S);
        }
        b = next;
        cp = next_cp;
    }
    return DEG_OK;
}

/* Lists by the document position of their first key line. */
static int cmp_first_line(const void *x, const void *y)
{
    size_t a = ((const dg_list *)x)->at, b = ((const dg_list *)y)->at;
    return (a > b) - (a < b);
}

typedef struct by_key {             /* a raw list's key and its index, for sorting */
    const char *key;
    size_t i;
    int table;
} by_key;

/* By key, lists before tables, then document order (qsort is not stable: the
 * index breaks ties). */
static int cmp_key(const void *x, const void *y)
{
    const by_key *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    if (!c) c = a->table - b->table;
    return c ? c : (a->i > b->i) - (a->i < b->i);
}

/* Append raw list R's items and their cells to ls (room allocated by the caller). */
static void take_items(dg_lists *ls, const dg_lscan *S, const raw_list *R)
{
    for (size_t j = 0; j < R->n; j++) {
        size_t it = R->first + j, c0 = S->icell[2 * it], nc = S->icell[2 * it + 1];
        ls->item[2 * ls->n_items] = S->item[2 * it];
        ls->item[2 * ls->n_items + 1] = S->item[2 * it + 1];
        if (nc) memcpy(ls->cell + ls->n_cells, S->cell + c0, nc * sizeof *ls->cell);
        ls->n_cells += nc;
        ls->item_cell[++ls->n_items] = ls->n_cells;
    }
    ls->p[ls->n - 1].n += R->n;
}

deg_status dg_lists_scan(const char *ctx, size_t len, dg_lists *out)
{
    dg_lscan S = {.ctx = ctx, .len = len};
    dg_lists ls = {0};
    deg_status st = scan_lists(&S, len);
    if (st == DEG_OK) st = dg_lscan_requirement_runs(&S);
    /* one list per key: the raw lists of a key merged in document order (sorted by
     * key, O(n log n) in the key lines), the lists ordered by first appearance; a
     * table stays a list of its own */
    by_key *ord = st == DEG_OK ? malloc((S.n_raw ? S.n_raw : 1) * sizeof *ord) : NULL;
    if (st == DEG_OK && !ord) st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory (lists)");
    if (st == DEG_OK) {
        ls.item = malloc((S.n_items ? 2 * S.n_items : 1) * sizeof *ls.item);
        ls.item_cell = calloc(S.n_items + 1, sizeof *ls.item_cell);
        ls.cell = malloc((S.n_cells ? S.n_cells : 1) * sizeof *ls.cell);
        ls.p = malloc((S.n_raw ? S.n_raw : 1) * sizeof *ls.p);
        if (!ls.item || !ls.item_cell || !ls.cell || !ls.p)
            st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory (lists)");
    }
    if (st == DEG_OK) {
        for (size_t i = 0; i < S.n_raw; i++) ord[i] = (by_key){S.raw[i].key, i, S.raw[i].table};
        qsort(ord, S.n_raw, sizeof *ord, cmp_key);
        for (size_t i = 0; i < S.n_raw; i++) {
            const raw_list *R = &S.raw[ord[i].i];
            if (i == 0 || R->table || R->bare || S.raw[ord[i - 1].i].table ||
                S.raw[ord[i - 1].i].bare ||
                strcmp(R->key, ord[i - 1].key) != 0) {
                dg_list *L = &ls.p[ls.n++];
                memcpy(L->key, R->key, sizeof L->key);
                L->first = ls.n_items;
                L->n = 0;
                L->at = ord[i].i;
                L->table = R->table;
                L->bare = R->bare;
                L->members = 0;
            }
            ls.p[ls.n - 1].members |= R->members;
            take_items(&ls, &S, R);
        }
        qsort(ls.p, ls.n, sizeof *ls.p, cmp_first_line);
    }
    free(ord);
    free(S.item);
    free(S.icell);
    free(S.cell);
    free(S.raw);
    if (st != DEG_OK) {
        dg_lists_free(&ls);
        return st;
    }
    *out = ls;
    return DEG_OK;
}

void dg_lists_free(dg_lists *ls)
{
    if (!ls) return;
    free(ls->p);
    free(ls->item);
    free(ls->item_cell);
    free(ls->cell);
    memset(ls, 0, sizeof *ls);
}

int dg_lists_plain_array(const dg_plan *P, size_t a)
{
    const dg_array_plan *A = &P->arrays[a];
    if (A->parent_array >= 0 || A->generate || A->n_fields != 1 || A->path.n == 0) return 0;
    const dg_field_plan *f = &P->fields[A->first_field];
    return f->mode == DG_MODE_SPAN && f->format == DG_FORMAT_NONE && !f->constraints.pattern &&
           f->array == (int32_t)a && f->path.n == A->path.n + 1 && A->path.seg[A->path.n - 1];
}

int dg_lists_object_array(const dg_plan *P, size_t a)
{
    const dg_array_plan *A = &P->arrays[a];
    if (A->parent_array >= 0 || A->generate || A->n_fields == 0 || A->path.n == 0 ||
        !A->path.seg[A->path.n - 1])
        return 0;
    int span = 0;
    for (size_t i = 0; i < A->n_fields; i++) {
        const dg_field_plan *f = &P->fields[A->first_field + i];
        if (f->array != (int32_t)a || f->path.n != A->path.n + 2) return 0;
        span |= f->mode == DG_MODE_SPAN;
    }
    return span;
}

int dg_lists_wanted(const dg_plan *P)
{
    for (size_t a = 0; a < P->n_arrays; a++)
        if (dg_lists_plain_array(P, a) || dg_lists_object_array(P, a)) return 1;
    return 0;
}

/* Match strength of list L's key for array A by name: exact name 4, a partial name
 * (also by the key vocabulary, keyvocab.c) the description names too 3, the
 * description alone 2, a partial name alone 1, else 0 (names: A's description names,
 * dg_key_desc_names); a run of requirement lines (L->bare) names any dependency array
 * partially (1: `docs_dependencies` of a docs requirements file). The description breaks ties between partial names: "Zones" (the
 * country's time zones) is the list under "Time zones:", not the one under "Several
 * zones:". */
static int name_strength(const dg_array_plan *A, const char *names, const dg_list *L)
{
    if (!L->key[0]) return 0;
    if (L->bare) return dg_lists_dependency_array(A); /* a partial name: no line writes it */
    int m = dg_key_match_name(A->path.seg[A->path.n - 1], A->title, L->key, 1);
    if (m == 2) return 4;
    return 2 * dg_key_words_in(names, L->key) + m;
}

/* Properties of object array A whose name or title a column of table L names (in
 * its first 64 records: the work stays bounded on long tables). */
static int table_columns(const dg_lists *ls, const dg_plan *P, const dg_array_plan *A,
                         const dg_list *L)
{
    int n = 0;
    for (size_t i = 0; i < A->n_fields; i++) {
        for (size_t j = 0; j < L->n && j < 64; j++)
            if (dg_lists_cell_of(ls, P, (size_t)(A - P->arrays), L->first + j,
                                 A->first_field + i)) {
                n++;
                break;
            }
    }
    return n;
}

/* Every item of list L has two or more parts (cells): a list of records. */
static int record_list(const dg_lists *ls, const dg_list *L)
{
    for (size_t j = L->first; j < L->first + L->n; j++)
        if (ls->item_cell[j + 1] - ls->item_cell[j] < 2) return 0;
    return L->n > 0;
}

int dg_lists_match(const dg_lists *ls, const dg_plan *P, size_t a)
{
    int plain = dg_lists_plain_array(P, a);
    if (!plain && !dg_lists_object_array(P, a)) return -1;
    const dg_array_plan *A = &P->arrays[a];
    char names[2 * DG_KEY_DESC_MAX + 8]; /* once per array, not per list */
    dg_key_desc_names(A->description, names, sizeof names);
    int best = -1, best_m = 0, best_c = 0, lone = -1, n_lone = 0, rec = -1, n_rec = 0;
    for (size_t i = 0; i < ls->n; i++) {
        const dg_list *L = &ls->p[i];
        int c = 0;
        if (L->members && !plain) continue; /* keys alone: no record's values */
        if (L->table == DG_TABLE_HEADERLESS) {
            if (plain) continue;
            if (n_lone++ == 0) lone = (int)i; /* captioned or not (a '#' comment above) */
        } else if (L->table && (plain || (c = table_columns(ls, P, A, L)) == 0)) {
            continue;
        } else if (!L->table && !plain) { /* a list's items' "Key: value" parts (0.22.0) */
            c = table_columns(ls, P, A, L);
            if (record_list(ls, L) && n_rec++ == 0) rec = (int)i;
        }
        int m = name_strength(A, names, L);
        if (!c && !m) continue;
        /* keys alone, by a partial name, are a guess: "[defaults]" is no `default_options` */
        if (L->members && m < 2) continue;
        /* columns first, then the name's strength, then more items */
        if (c > best_c || (c == best_c && (m > best_m || (m == best_m && best >= 0 &&
                                                          L->n > ls->p[best].n)))) {
            best = (int)i;
            best_m = m;
            best_c = c;
        }
    }
    /* the text's only headerless table, else its only list of records */
    int only = n_lone == 1 ? lone : n_lone == 0 && n_rec == 1 ? rec : -1;
    if (best < 0) return only;
    /* the only list of records before a list matched by a partial name alone, which an
     * object array's items do not fill ("ports" is the "Services" records, not "First
     * port: 123") */
    return best_c == 0 && best_m <= 1 && only >= 0 && only == rec ? rec : best;
}

/* The last path segment of field f (its property name), or NULL. */
static const char *prop_name(const dg_field_plan *f)
{
    return f->path.n ? f->path.seg[f->path.n - 1] : NULL;
}

/* Match strength of a column key for a property (name seg, title): the better of
 * dg_key_match_name as written ("timezone" = "Time zone", compact) and with number
 * folded ("architecture" = "Architectures"). */
static int column_match(const char *seg, const char *title, const char *key)
{
    int m = dg_key_match_name(seg, title, key, 0);
    if (m == 2) return 2;
    int f = dg_key_match_name(seg, title, key, 1);
    return f > m ? f : m;
}

/* Some leaf of array a other than `field` names column key exactly. */
static int claimed(const dg_plan *P, size_t a, size_t field, const char *key)
{
    const dg_array_plan *A = &P->arrays[a];
    for (size_t i = A->first_field; i < A->first_field + A->n_fields; i++) {
        const char *seg = prop_name(&P->fields[i]);
        if (i != field && seg && column_match(seg, P->fields[i].title, key) == 2)
            return 1;
    }
    return 0;
}

const dg_cell *dg_lists_cell_of(const dg_lists *ls, const dg_plan *P, size_t a, size_t item,
                                size_t field)
{
    const dg_field_plan *f = &P->fields[field];
    const char *seg = prop_name(f);
    if (!ls->item_cell || !seg) return NULL;
    const dg_cell *partial = NULL;
    for (size_t c = ls->item_cell[item]; c < ls->item_cell[item + 1]; c++) {
        int m = column_match(seg, f->title, ls->cell[c].key);
        if (m == 2) return &ls->cell[c];
        if (m == 1 && !partial && !claimed(P, a, field, ls->cell[c].key)) partial = &ls->cell[c];
    }
    return partial;
}

int dg_lists_cell_unread(const dg_lists *ls, const size_t *rc, size_t nf, size_t c)
{
    if (ls->cell[c].c1 <= ls->cell[c].c0) return 0;
    for (size_t j = 0; j < nf; j++)
        if (rc[j] == c) return 0;
    return 1;
}

void dg_lists_columns_named(const dg_lists *ls, const dg_plan *P, size_t a, size_t li,
                            unsigned char *named)
{
    const dg_array_plan *A = &P->arrays[a];
    const dg_list *L = &ls->p[li];
    for (size_t j = 0; j < A->n_fields; j++) {
        named[j] = 0;
        for (size_t i = 0; i < L->n && i < 64 && !named[j]; i++)
            named[j] = dg_lists_cell_of(ls, P, a, L->first + i, A->first_field + j) != NULL;
    }
}

void dg_lists_record_cells(const dg_lists *ls, const dg_plan *P, size_t a, size_t item,
                           const unsigned char *named, size_t *out)
{
    const dg_array_plan *A = &P->arrays[a];
    size_t unnamed = SIZE_MAX, n_unnamed = 0;
    for (size_t j = 0; j < A->n_fields; j++) {
        const dg_cell *c = dg_lists_cell_of(ls, P, a, item, A->first_field + j);
        out[j] = c ? (size_t)(c - ls->cell) : named && named[j] ? DG_CELL_MISSING : SIZE_MAX;
        if (out[j] == SIZE_MAX) {
            unnamed = j;
            n_unnamed++;
        }
    }
    if (n_unnamed != 1 || !ls->item_cell) return;
    size_t left = SIZE_MAX;
    for (size_t c = ls->item_cell[item]; c < ls->item_cell[item + 1]; c++)
        if (dg_lists_cell_unread(ls, out, A->n_fields, c)) {
            if (left != SIZE_MAX) return;
            left = c;
        }
    out[unnamed] = left;
}

int dg_lists_at(const dg_lists *ls, const size_t *cp_tok, size_t t)
{
    for (size_t i = 0; i < ls->n; i++)
        for (size_t j = 0; !ls->p[i].table && j < ls->p[i].n; j++) {
            const size_t *it = ls->item + 2 * (ls->p[i].first + j);
            if (cp_tok[it[0]] <= t && t <= cp_tok[it[1] - 1]) return (int)i;
        }
    return -1;
}
