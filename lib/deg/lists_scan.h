/* lists_scan.h - the scanner state shared by lists.c (lists under keys) and
 * tables.c (table records with cells); internal to the list prior (lists.h). */
#ifndef DG_DEG_LISTS_SCAN_H
#define DG_DEG_LISTS_SCAN_H

#include <stddef.h>

#include "deg.h"
#include "deg/lists.h"

typedef struct raw_list {          /* one key line's list (or one table) before merging */
    char key[DG_KEY_MAX_LEN + 1];
    size_t first, n;               /* into the item buffer */
    int table;                     /* a table: kept even without a key, never merged */
    int members;                   /* keys: DG_MEMBERS_* bits (dg_list.members) */
    int bare;                      /* requirement lines (list_names.c): under the key
                                    * "requirements" no line writes, never merged */
} raw_list;

typedef struct dg_lscan {
    const char *ctx;
    size_t len;
    size_t *item;                  /* [2 * n_items] code points */
    size_t n_items, cap_items;
    size_t *icell;                 /* [2 * n_items]: first cell, number of cells */
    size_t cap_icell;
    dg_cell *cell;
    size_t n_cells, cap_cells;
    raw_list *raw;
    size_t n_raw, cap_raw;
    int paren_one;                 /* "X (a)" items are cells too (list_parts.c) */
} dg_lscan;

/* Append item bytes [b, e) (b's line starts at byte lb = code point lcp), trimmed
 * of spaces, a trailing '\r' and one pair of enclosing quotes; empty items are
 * skipped (*added = 0; added may be NULL). Errors: DEG_ERR_NOMEM. */
deg_status dg_lscan_item(dg_lscan *S, size_t lb, size_t lcp, size_t b, size_t e, int *added);

/* Append a cell under column bytes [k0, k1) (normalised) to the last item, its
 * value bytes [b, e) trimmed as items are ("-", "–", "—" and "" are empty cells);
 * b's line starts at byte lb = code point lcp. Errors: DEG_ERR_NOMEM. */
deg_status dg_lscan_cell(dg_lscan *S, size_t k0, size_t k1, size_t lb, size_t lcp, size_t b,
                         size_t e);

/* Append list item [b, e) (dg_lscan_item) with its parts as cells (list_parts.c):
 * two to 17 parts between "; ", a spaced em or en dash (or its HTML entity) or
 * " | ", a "Key: value" part under its key; else "X (a, b, ...)" with two to 16
 * details. Errors: DEG_ERR_NOMEM. */
deg_status dg_lscan_add_item(dg_lscan *S, size_t lb, size_t lcp, size_t b, size_t e);

/* The part separators of line [b, e) (list_parts.c): a line with any is a record,
 * not a mapping's member, though its first part reads as a key. */
size_t dg_lscan_count_parts(const char *s, size_t b, size_t e);

/* Start raw list S->raw[S->n_raw] under key bytes [k0, k1) at the next item
 * (table: 1 for a table's records). Errors: DEG_ERR_NOMEM. */
deg_status dg_lscan_open(dg_lscan *S, size_t k0, size_t k1, int table);

/* End the open raw list: kept when it has items and a key (or is a table or
 * bare), else dropped. */
void dg_lscan_close(dg_lscan *S);

/* Bullet line [b, e): the first byte of its text after the marker ("-", "*",
 * "+", U+2022, "N." / "N)" and a blank), else 0. */
size_t dg_lscan_bullet(const char *s, size_t b, size_t e);

/* The end of the line holding byte b (its '\n', or len). */
size_t dg_lscan_line_end(const char *s, size_t len, size_t b);

/* The spaces and tabs line [b, e) starts with. */
size_t dg_lscan_indent(const char *s, size_t b, size_t e);

/* The caption of a table or bullet list whose first line starts at byte b: the
 * non-blank line above (blank lines skipped; above a grid's top border and
 * markup-only lines such as "<table>"), trimmed of heading marks ('#', '*', '=',
 * '>', a trailing ':') and of one HTML element around it; a heading has none of
 * | : = , ; " TAB < inside, no final '.', at most DG_KEY_MAX_WORDS words
 * ("## Dependencies", "<h2>Releases</h2>", "Currencies:"). 1 with its bytes
 * [*k0, *k1), else 0. */
int dg_lscan_caption(const char *s, size_t b, size_t *k0, size_t *k1);

/* An XML element line [b, e) of s (len bytes; after spaces/tabs): `<name attr="v" .../>`,
 * `<name ...>text</name>` or an opening `<name attr="v">`, name not an HTML tag
 * (lists_xml.c). The element is one item of the list under its name: its text when it
 * has some (no markup inside), else its first attribute's quoted value; a block element
 * (a bare start tag alone on its line) its identifier child's text (the first direct
 * child leaf named "...name" or "...title", else the last named "...id"), and no item
 * without one; else (a bare self-closing tag) its name (freedesktop shared-mime-info
 * `<alias type="video/x-ms-wvx"/>`, `<magic priority="50">`; Maven's `<dependency>` =
 * its artifactId, D-Bus configuration). Returns 1 with the name's bytes [*k0, *k1) and
 * the item's [*v0, *v1). */
int dg_lscan_xml_element(const char *s, size_t len, size_t b, size_t e, size_t *k0, size_t *k1,
                         size_t *v0, size_t *v1);

/* A JSON member line `"key": [` or `"key": {` (opener '[' or '{'; the value may close on
 * this line or continue over the next ones; dg_json_member_split; lists_keys.c): 1 with
 * the key's bytes [*key0, *key1) and the byte after the opener in *open. */
int dg_lscan_json_open(const char *s, size_t b, size_t e, char opener, size_t *key0,
                       size_t *key1, size_t *open);

/* The keys of the JSON object opened at byte i (after '{'; its line starts at byte lb =
 * code point *cp) as items of the open list, marked members (nested members skipped);
 * *next = the byte after the line holding its '}' (a line start), *cp its code point.
 * Errors: DEG_ERR_NOMEM. */
deg_status dg_lscan_member_keys(dg_lscan *S, size_t len, size_t lb, size_t i, size_t *next,
                                size_t *cp);

/* When line [b, e) (code point cp) is an INI/TOML section header "[name]" (not "[[x]]",
 * not a numbered "[x.1]"), the keys of the "key = value" lines below it up to the next
 * header (at most 256 lines; comments skipped) as a members list under the name
 * (lists_keys.c); the lines stay the scan's. Errors: DEG_ERR_NOMEM. */
deg_status dg_lscan_section_keys(dg_lscan *S, size_t len, size_t b, size_t e, size_t cp);

/* A table starting at line [b, e) (code point cp): its records added as one
 * table list (tables.c). *skip = the byte after the table's last line (b when
 * none): the caller looks for the next table there, so that a grid's rows are
 * not headers again. Lines are not consumed (they stay key lines).
 * Errors: DEG_ERR_NOMEM. */
deg_status dg_tables_at(dg_lscan *S, size_t b, size_t e, size_t cp, size_t *skip);

/* Bytes [b, e) are a package name alone (list_names.c): a letter, then letters,
 * digits and . _ - + ("zlib", "libpcre2-8", "glib-2.0"). */
int dg_lscan_package_name(const char *s, size_t b, size_t e);

/* Runs of requirement lines (list_names.c): each a keyless list whose items are
 * the lines. Errors: DEG_ERR_NOMEM. */
deg_status dg_lscan_requirement_runs(dg_lscan *S);

#endif
