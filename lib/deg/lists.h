/* lists.h - the list prior of fill decoding: lists a document writes under a
 * key, matched to an array field by the field's name (deg.json / options
 * "list_prior"; issue 12).
 *
 * Why: most documents users fill from write a list as the value of a labelled
 * line, and on layouts the heads never saw the array count and anchor heads
 * miss them (v7 on datagen v5's unseen kinds: 3 of 351 array-item spans right,
 * the count right for 9% of arrays; a YAML-like "choices:" over eleven "- X"
 * lines was answered []). When an array of plain strings is named like a
 * line's key, the prior takes the list's items as the array's anchors (§12.6:
 * where each item starts, so how many there are) and adds `bonus` to each item
 * fork's start logit at its item's first token and end logit at its last. The
 * item forks still read the values (pointer heads, the anchored-span bias);
 * the values stay verbatim spans of the context. A checkpoint without
 * "list_prior" decodes exactly as before.
 *
 * Lists (offsets are code points of the context, the unit of §8 spans):
 *   - bullets: a key line with an empty value ("choices:", "Keywords="), then
 *     the lines below it that start (after spaces/tabs) with "-", "*", "+",
 *     U+2022 or "N." / "N)" and a space, blank lines allowed before and
 *     between them (a loose Markdown list): one item per line, its text
 *     trimmed of spaces and one pair of enclosing quotes;
 *   - bullets under a heading (libdeg 0.15.0): a run of such bullet lines (blank
 *     lines between allowed) whose first has a caption above it, as tables
 *     take one ("## Dependencies", "<h3>Authors</h3>", "Supported platforms";
 *     dg_lscan_caption), is that caption's list; a bullet opening a YAML record
 *     ("- name: a" with "  tz: b" indented below it) ends the run (its line is
 *     only the record's first member), a lone "- libcurl4 (= 7.88.1)" or "- **apt**: the tool" is an
 *     item. Bullets under prose are no list;
 *   - indented lines (libdeg 0.16.0): a key line with an empty value, then lines
 *     indented past it, none a bullet or a key line (those are a nested mapping:
 *     "build:\n  os: linux"), up to a blank or less indented line: one item per
 *     line ("Signature:\n  files; Default: None\n  backup");
 *   - delimited: a key line whose value has ';' (else ',') between items:
 *     "MimeType=text/plain;text/x-c;", "Keywords: a, b, c"; empty parts skipped;
 *     never split inside parentheses or brackets ("Ann [aut, cre], Bob [ctb]");
 *     a written list's last two items split at a conjunction ("a, b and c",
 *     "Utility and TextEditor"; and und et y e en &);
 *   - blank-separated: a value without those whose parts are identifiers (one of
 *     . : / @ _ = in each): "After=a.target b.service", "man:x(8) https://y"; under a
 *     dependency key also package names ("Requires.private: libssl libcrypto zlib";
 *     libdeg 0.27.0);
 *   - single: any other key line's value is a one-item list;
 *   - requirement lines (libdeg 0.27.0, list_names.c): a run of 2+ unindented lines each
 *     a requirement ("six", "PyYAML>=3.10"; comments, option and blank lines between) is
 *     one list under the key "requirements" no line writes (dg_list.bare);
 *   - sentences: a line of prose may hold several "Key: value" sentences
 *     ("Extensions: a, b and c. Types: x, y."): it is split before each ". X"
 *     (X uppercase or non-ASCII) and each sentence read as a key line, its
 *     trailing '.' left out;
 *   - JSON: a member `"key": [` and the strings of that array, on this line or
 *     the next ones up to its ']' (each string's text between its quotes); a
 *     member `"key": {` and the keys of that object's own members (libdeg 0.24.0:
 *     package.json "dependencies"; a plain array's list only, dg_list.members);
 *     a key line `key = [` whose array holds quoted strings ('...' too) is one as well
 *     (TOML, Python: pyproject.toml's "requires = ['trampolim']"; libdeg 0.25.0), an
 *     unquoted "[a, b]" value a delimited one without its brackets;
 *   - folded (libdeg 0.25.0): a key line whose value ends in ',' goes on over the lines
 *     below indented past it, while each ends in ',' or the next starts with one (RFC
 *     822 folding: a Debian control file's "Build-Depends:", R's "Author:");
 *   - INI/TOML sections (libdeg 0.24.0): a header "[name]" and the keys of the
 *     "key = value" lines below it (Cargo.toml's "[dependencies]"; members, as above;
 *     lists_keys.c);
 *   - HTML: a table row `<th>key</th><td>value</td>`: the value's `<li>` entries,
 *     else the value delimited as above (no markup inside);
 *   - XML: an element line `<name a="v"/>`, `<name>text</name>` or `<name a="v">`
 *     (name not an HTML tag) is one item of list "name": its text, else its first
 *     attribute's value, else for a block element its identifier child's text
 *     (`<dependency>` = its <artifactId>, `<license>` = its <name>; libdeg 0.24.0),
 *     else its name ("<alias type="video/x-ms-wvx"/>"; lists_xml.c);
 * An item of a bullet, indented or HTML <li> list with two or more parts (libdeg
 * 0.16.0; "; ", a spaced em or en dash or its HTML entity, " | " between them) has
 * its parts as cells, a "Key: value" part under its key ("Asia/Amman;
 * Coordinates: +3157+03556" = ("", "Asia/Amman"), ("coordinates", "+3157+03556"));
 * an item "X (a, b)" of a delimited value has the cells X, a, b (two to 16
 * details, or one when another item of the value has two: 0.21.0, 0.22.0):
 * an object array on the list reads them as a table's records (below); an item of
 * one part has none and its leaves read the whole item;
 * and tables (tables.c): records whose values stand under column names, each one
 * item (its extent: first to last cell) with its cells (dg_cell: column key and
 * value span) -
 *   - pipe tables: a row of '|'-separated header cells, a separator line of
 *     '-', '=', '+', ':' and '|' (Markdown "|---|---|", an ASCII grid's
 *     "+----+----+" border), then rows of 2+ cells (grid borders between
 *     rows skipped; a ragged row's cells take the columns in order);
 *   - HTML: a `<tr>` of two or more `<th>` cells, then `<tr>`s of as many `<td>`
 *     (a cell's text, or the text inside one inline element: `<code>X</code>`);
 *   - CSV/TSV: a header line of 2+ comma- (or tab-) separated names (letters
 *     first, no blanks inside but single spaces), then lines with as many
 *     parts at most and at least two;
 *   - JSON: an array of objects (`"key": [` or a bare `[`, then `{`): each object
 *     one record, its scalar members the cells (null = an empty cell);
 *   - YAML: "- key: value" bullets continued by "key: value" lines indented
 *     past the dash: each bullet one record;
 *   a table's key is its caption: the non-blank line right above it when that
 *   reads as a heading (no '|', at most DG_KEY_MAX_WORDS words; "## Time
 *   zones", "<h2>Releases</h2>", "Currencies:"), the member's key for JSON,
 *   the bullets' key line for YAML, else "" (no name). Tables add lists; the
 *   lines stay key lines too ("| Country | Benin |" rows);
 *   - INI sections (libdeg 0.21.0): consecutive numbered section headers of one
 *     base name ("[services.1]", "[services 2]") or TOML's "[[services]]", each
 *     section's "key = value" lines one record under the base name;
 *   - headerless TSV (libdeg 0.18.0): a paragraph (blank or '#' comment lines, or the
 *     text's ends, around it; '#' lines inside skipped, 0.21.0) of lines with 3+
 *     non-empty TAB-separated parts each ("NI<TAB>+1209-08617<TAB>America/Managua"),
 *     or (0.21.0) of rows aligned in columns: parts between TAB runs or 2+ spaces,
 *     a trailing '#' comment left out, "540/tcp" as two cells, at least two rows of
 *     2+ parts and at least half of them (the others one blank-free part: a
 *     mime.types type without extensions); no key line, bullet, markup line or prose
 *     sentence among them (tables.c aligned_row): its cells have no column name
 *     (DG_TABLE_HEADERLESS);
 * and every other list under the same normalised key (keyprior.h) is one list, in
 * document order: repeated "Requires: x" / "Format: HTML" lines are one list.
 * Key lines follow dg_keyline_split (keyprior.h). Anchoring (fill_arrays.c): the
 * first maxItems items, an item whose text an earlier one has skipped under
 * uniqueItems, none when fewer than minItems remain or two items share a token. */
#ifndef DG_DEG_LISTS_H
#define DG_DEG_LISTS_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"
#include "deg/keyprior.h"
#include "deg/plan.h"

typedef struct dg_list {
    char key[DG_KEY_MAX_LEN + 1]; /* normalised key (dg_key_norm); "" for a table without caption */
    size_t first, n;              /* items [first, first + n) of dg_lists.item */
    size_t at;                    /* its first key line's rank among the key lines */
    int table;                    /* DG_TABLE_*: a table's records (items with cells), never merged */
    int members;                  /* some items are keys, DG_MEMBERS_* bits: plain arrays
                                   * only, by an exact name or the description */
    int bare;                     /* requirement lines under no written key (key
                                   * "requirements", list_names.c), never merged */
} dg_list;

#define DG_MEMBERS_JSON 1    /* dg_list.members: a JSON object's member keys */
#define DG_MEMBERS_SECTION 2 /* an INI/TOML section's keys: no count (countprior.c) */

#define DG_TABLE_NAMED 1      /* dg_list.table: columns under names (or a YAML/JSON record's keys) */
#define DG_TABLE_HEADERLESS 2 /* dg_list.table: a headerless TSV paragraph, cells without names */

typedef struct dg_cell {          /* a table record's value (a list item's part) under its column */
    char key[DG_KEY_MAX_LEN + 1]; /* normalised column name */
    size_t c0, c1;                /* code points; c0 == c1: written empty ("", "-", null) */
} dg_cell;

typedef struct dg_lists {
    dg_list *p;                   /* owned; free with dg_lists_free */
    size_t n;
    size_t *item;                 /* [2 * n_items]: item i is code points [item[2i], item[2i+1]) */
    size_t n_items;
    size_t *item_cell;            /* [n_items + 1]: item i's cells are cell[item_cell[i] ..
                                     item_cell[i + 1]) (a table record's, a list item's parts) */
    dg_cell *cell;
    size_t n_cells;
} dg_lists;

/* Scan the context (valid UTF-8, len bytes). Errors: DEG_ERR_NOMEM. */
deg_status dg_lists_scan(const char *ctx, size_t len, dg_lists *out);
void dg_lists_free(dg_lists *ls);

/* 1 when array `a` of plan P can take a list: a top-level array whose item is one
 * plain string extract leaf (no format, no pattern). */
int dg_lists_plain_array(const dg_plan *P, size_t a);

/* 1 when plain array `a` (dg_lists_plain_array) asks for names: the word "name" or
 * "names" in its name, title or description or its item's ("names of the required
 * packages (Depends)", `package_names`). Its items read the name each list item
 * opens with (dg_lists_name_end), and a name two items share is taken once
 * (fill_arrays.c list_anchors): "Depends: libc6 (>= 2.29), zlib1g (>= 1:1.2)" ->
 * ["libc6", "zlib1g"]. Why: a user asking for names wants neither the constraint
 * nor the same package twice; v13 answered "libc6 (>= 2.29)" (bench/devreal set 8). */
int dg_lists_names_array(const dg_plan *P, size_t a);

/* 1 when array A's name or title has a word the key vocabulary reads as "dependency"
 * (keyprior.h dg_key_dependency_key: `dependencies`, `requires`, `test_requirements`,
 * `build_deps`). */
int dg_lists_dependency_array(const dg_array_plan *A);

/* Key lines (keyprior.h dg_keylines_scan) of a document of keys: at least this many. */
#define DG_LISTS_KEYED_DOC 3

/* 1 when plain array `a` (no minItems) is a dependency array (dg_lists_dependency_array)
 * and the document holds at least DG_LISTS_KEYED_DOC key lines (n_keylines): when no
 * list matches it (dg_lists_match < 0) the array is empty (fill_arrays.c), not what the
 * anchor head finds elsewhere. Why: a package's dependencies stand under a key in the
 * formats that write them (Debian's Depends, pkg-config's Requires, setuptools'
 * install_requires, an npm "dependencies" object, a requirements file: lists.h), so a
 * document of keys with none of them has none; v13 answered the Breaks line's
 * "libmagic1 (<< 1:5.28" and a Recommends line for packages without Depends (bench/devreal
 * sets 8 and 9). */
int dg_lists_dependencies_unwritten(const dg_plan *P, size_t a, size_t n_keylines);

/* Byte end of the name item bytes [b, e) open with, when a requirement's tail
 * follows it (a version constraint or relation, an extra, an environment marker,
 * an alternative, an ":arch" qualifier, or a version after blanks: "libc6 (>=
 * 2.29)", "rsa>=4.1; python_version >= '3.5'", "requests[socks]", "python3:any",
 * "glibc >= 2.17"; PEP 508, Debian Policy 7.1); e otherwise ("Flask", "Jeroen Ooms
 * [aut]": a name of words is the item as written). A name is ASCII: letters,
 * digits, . _ - + / and a leading '@', ending in a letter or digit. */
size_t dg_lists_name_end(const char *s, size_t b, size_t e);

/* 1 when array `a` of plan P is a top-level array of objects whose leaves are
 * the objects' own properties (no nested arrays), one of them a string extract
 * leaf: a list's items anchor its objects ("Speaker: Ana (ana@x.org). Speaker:
 * Bo." for speakers [{name, email}]; "Depends: libc6 (>= 2.14)" for depends
 * [{name, relation, version}]), each object's leaves read by the heads inside
 * its list item's text (fill_extract.c); no item bonus (that is for a plain
 * array's one leaf). */
int dg_lists_object_array(const dg_plan *P, size_t a);

/* 1 when some array of P can take a list (the scan is worth doing). */
int dg_lists_wanted(const dg_plan *P);

/* The list of array `a` by name, or -1: a plain or object array (above) matches a list
 * whose key is its property name or title (dg_key_match_name, plurals folded),
 * or one its description names in parentheses or quotes ("names of the required
 * packages (Requires-Dist)") or in its leading noun phrase ("documentation
 * references, in order"; dg_key_desc_names); the strongest match wins (exact
 * name, then a partial name the description names too, then the description,
 * then a partial name: "Zones", the country's time zones, takes "Time zones:"
 * over "Several zones:"), ties to the list with more items, then the first. Tables: an object array takes the table whose columns
 * (of its first 64 records) name the most of its item's properties
 * (dg_lists_cell_of; at least one), ties
 * to the caption's match by name as above, then more rows, then the first, before
 * any list by name alone; a plain array never takes a table. A list whose items'
 * "Key: value" parts name its properties counts its named columns the same way
 * (0.22.0: "Services:\n- whois; Port: 43; Protocol: tcp" is the list of `entries`
 * [{service, port}]). A headerless table
 * (no column names) is taken by its caption's name like a list, else, when nothing
 * else matches, as the text's only headerless table (captioned or not, 0.21.0: a
 * '#' comment above reads as a caption): a data file's rows are the objects a lone
 * object array asks for; with no headerless table, the text's only list of records
 * (every item two parts or more: "<li>whois &mdash; 43 &mdash; tcp</li>") is taken
 * the same way, also over a list that only a partial name matches ("ports" takes the
 * records, not "First port: 123"; 0.22.0). */
int dg_lists_match(const dg_lists *ls, const dg_plan *P, size_t a);

/* The cell of item `item` (an index into ls->item) under the column named by
 * field `field` of object array `a` of P (dg_key_match_name on its property name
 * or title, as written or with number folded: "architecture" reads "Architectures";
 * exact before partial; a partial match skips a column another leaf of
 * the array names exactly: "numericCode" reads "numeric", not "code"; then the
 * first), or NULL (no cells, or no column matches). The list prior adds its bonus
 * at the cell's first and last token, or to the null outcome when the cell is
 * written empty (fill_extract.c). */
const dg_cell *dg_lists_cell_of(const dg_lists *ls, const dg_plan *P, size_t a, size_t item,
                                size_t field);

/* dg_lists_record_cells: the field's column is written in other records of the
 * table but not in this one (a JSON or YAML record without the member, a short row):
 * the field reads as an empty cell. */
#define DG_CELL_MISSING (SIZE_MAX - 1)

/* Which fields of object array `a` some record of table li names by a column (its
 * first 64 records, as dg_lists_match): named[j] = 1 for field first_field + j. */
void dg_lists_columns_named(const dg_lists *ls, const dg_plan *P, size_t a, size_t li,
                            unsigned char *named);

/* The cells the leaves of object array `a` read in item `item` (an index into
 * ls->item), computed once per record (fill_arrays.c keeps them per instance):
 * out[j] (j < the array's n_fields) = the index into ls->cell of the cell under the
 * column that names field first_field + j (dg_lists_cell_of); else DG_CELL_MISSING
 * when named[j] (the table's columns, dg_lists_columns_named; may be NULL); else,
 * for the one leaf of the array no column names, the one written cell no column
 * claims ("Comment" for a note beside timezone and coordinates; none when two or
 * more are left); else SIZE_MAX. */
void dg_lists_record_cells(const dg_lists *ls, const dg_plan *P, size_t a, size_t item,
                           const unsigned char *named, size_t *out);

/* 1 when cell c is written (not empty) and no leaf reads it (rc: the record's
 * dg_lists_record_cells, nf entries): where a leaf with no cell of its own may read. */
int dg_lists_cell_unread(const dg_lists *ls, const size_t *rc, size_t nf, size_t c);

/* The list one of whose items covers context token t (cp_tok: the token of each
 * code point, fill_internal.h), the first in list order, or -1. Tables are
 * skipped (a plain array never takes one). */
int dg_lists_at(const dg_lists *ls, const size_t *cp_tok, size_t t);

#endif
