/* lists_keys.c - lists of keys (lists.h): a JSON object's member keys and an INI or TOML
 * section's keys, lists only a plain array takes (dg_list.members). */
#include <ctype.h>
#include <string.h>

#include "base/status.h"
#include "base/utf8.h"
#include "deg/keyprior.h"
#include "deg/lists_scan.h"

/* (lists_scan.h) */
int dg_lscan_json_open(const char *s, size_t b, size_t e, char opener, size_t *key0,
                       size_t *key1, size_t *open)
{
    size_t i, v0, v1;
    if (!dg_json_member_split(s, b, e, key0, key1, &i)) {
        /* TOML / Python: `key = [` then quoted strings (0.25.0: pyproject.toml's
         * "requires = ['trampolim']"); an unquoted "[a, b]" is a delimited value */
        if (opener != '[' || !dg_keyline_split(s, b, e, key0, key1, &v0, &v1) || v0 == v1 ||
            s[v0] != '[')
            return 0;
        i = v0 + 1;
        while (i < v1 && (s[i] == ' ' || s[i] == '\t')) i++;
        if (i < v1 && s[i] != '"' && s[i] != '\'') return 0;
        *open = v0 + 1;
        return 1;
    }
    i++;
    while (i < e && s[i] == ' ') i++;
    if (i >= e || s[i] != opener) return 0;
    *open = i + 1;
    return 1;
}

/* The keys of an object's own members from byte i (after '{') to its '}' or the end of
 * the context, each key's text between its quotes an item (nested objects' and arrays'
 * members skipped). Why: package.json's "dependencies": {"ms": "2.1.2"} lists the
 * dependencies by its keys; a `dependencies` array read the devDependencies' "brfs" and
 * a value (bench/devreal set 2, libdeg 0.24.0). Into the open list, marked members. */
deg_status dg_lscan_member_keys(dg_lscan *S, size_t len, size_t lb, size_t i, size_t *next,
                                size_t *cp)
{
    const char *s = S->ctx;
    size_t lcp = *cp, depth = 1;
    S->raw[S->n_raw].members = DG_MEMBERS_JSON;
    while (i < len && depth > 0) {
        char c = s[i];
        if (c == '\n') {
            lcp += dg_utf8_count(s + lb, i + 1 - lb);
            lb = i + 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) break;
        } else if (c == '"') {
            size_t q0 = ++i;
            while (i < len && s[i] != '"' && s[i] != '\n') i += s[i] == '\\' && i + 1 < len ? 2 : 1;
            if (i >= len || s[i] != '"') break;
            size_t j = i + 1;
            while (j < len && (s[j] == ' ' || s[j] == '\t')) j++;
            if (depth == 1 && j < len && s[j] == ':') DG_TRY(dg_lscan_item(S, lb, lcp, q0, i, NULL));
        }
        i++;
    }
    const char *nl = i < len ? memchr(s + i, '\n', len - i) : NULL;
    size_t e = nl ? (size_t)(nl - s) : len;
    *cp = lcp + dg_utf8_count(s + lb, e - lb) + (nl ? 1 : 0);
    *next = nl ? e + 1 : len;
    return DEG_OK;
}

#define DG_SECTION_LINES 256 /* lines of a section read for its keys */

/* Line [b, e) as a section header "[name]" (INI, TOML; after blanks): 1 with the name's
 * bytes [*k0, *k1). Not "[[name]]" (a TOML array of tables) nor a numbered section
 * ("[services.1]", "[services 2]": tables.c reads those as records). */
static int section_header(const char *s, size_t b, size_t e, size_t *k0, size_t *k1)
{
    while (b < e && (s[b] == ' ' || s[b] == '\t')) b++;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) e--;
    if (e - b < 3 || s[b] != '[' || s[e - 1] != ']' || s[b + 1] == '[') return 0;
    size_t i = b + 1, last = i;
    for (; i < e - 1; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '_' || c == '-' || c == '.' || c == ' ')) return 0;
        if (c == '.' || c == ' ') last = i + 1;
    }
    int digits = last < e - 1;
    for (size_t j = last; j < e - 1; j++) digits = digits && isdigit((unsigned char)s[j]);
    if (digits) return 0;
    *k0 = b + 1;
    *k1 = e - 1;
    return 1;
}

/* The next section header's line after line [b, e) (within DG_SECTION_LINES lines) is a
 * numbered section of base name [k0, k1) ("[time_zones.1]" after "[time_zones]")? */
static int numbered_next(const char *s, size_t len, size_t e, size_t k0, size_t k1)
{
    for (int n = 0; n < DG_SECTION_LINES && e < len; n++) {
        size_t lb = e + 1, t = lb;
        e = dg_lscan_line_end(s, len, lb);
        while (t < e && (s[t] == ' ' || s[t] == '\t')) t++;
        if (t >= e || s[t] != '[') continue;
        size_t x = t + 1, m = k1 - k0;
        if (e - x <= m + 1 || memcmp(s + x, s + k0, m) != 0 || (s[x + m] != '.' && s[x + m] != ' '))
            return 0;
        return isdigit((unsigned char)s[x + m + 1]);
    }
    return 0;
}

/* (lists_scan.h) Why: Cargo.toml's "[dependencies]" section names its dependencies by its
 * keys ("mdbook-driver = { version = ... }"); a `dependencies` array read one of them
 * (bench/devreal set 3, libdeg 0.24.0). A section followed by numbered ones of its name
 * ("[time_zones]" over "[time_zones.1]") holds the set's own facts, not its items. */
deg_status dg_lscan_section_keys(dg_lscan *S, size_t len, size_t b, size_t e, size_t cp)
{
    const char *s = S->ctx;
    size_t k0, k1;
    if (!section_header(s, b, e, &k0, &k1) || numbered_next(s, len, e, k0, k1)) return DEG_OK;
    DG_TRY(dg_lscan_open(S, k0, k1, 0));
    S->raw[S->n_raw].members = DG_MEMBERS_SECTION;
    size_t lb = b, lcp = cp;
    for (int n = 0; n < DG_SECTION_LINES && e < len; n++) {
        lcp += dg_utf8_count(s + lb, e + 1 - lb);
        lb = e + 1;
        e = dg_lscan_line_end(s, len, lb);
        size_t t = lb, x0, x1, v0, v1;
        while (t < e && (s[t] == ' ' || s[t] == '\t')) t++;
        if (t < e && s[t] == '[') break; /* the next section */
        if (t >= e || s[t] == '#' || s[t] == ';') continue;
        if (dg_keyline_split(s, lb, e, &x0, &x1, &v0, &v1))
            DG_TRY(dg_lscan_item(S, lb, lcp, x0, x1, NULL));
    }
    dg_lscan_close(S);
    return DEG_OK;
}
