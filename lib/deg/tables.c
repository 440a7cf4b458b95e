/* tables.c - tables of a context read as records whose values stand under column
 * names (lists.h "tables"): pipe (Markdown, ASCII grid), HTML, CSV/TSV, JSON arrays
 * of objects, YAML lists of maps and numbered INI sections, and headerless TSV or
 * aligned-column paragraphs (no names). Each
 * table is one list of the list prior: its records are the items (first to last
 * cell), each with its cells.
 *
 * Why: a fill's array of objects is most often written as a table, one row per
 * object and one column per property ("| Time zone | Coordinates | Comment |"),
 * and the heads alone, reading a row as running text, gave the same span to
 * every property or dropped the item (datagen-v2 test: 7 of 60 arrays right,
 * 21 of them tables, JSON or YAML records). The column's name says which cell
 * a property reads; the item forks still read the value. */
#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "base/status.h"
#include "base/utf8.h"
#include "deg/keyprior.h"
#include "deg/lists_scan.h"

#define MAX_COLS 32     /* columns of a pipe, HTML or CSV table read; wider rows are no table */
#define MAX_MEMBERS 64  /* members of one JSON record read */

/* Position anchor: byte b is code point cp. Offsets of later bytes are counted
 * from the last anchor (advanced row by row: linear in the table). */
typedef struct pos {
    size_t b, cp;
} pos;

static void advance(const char *s, pos *p, size_t b)
{
    p->cp += dg_utf8_count(s + p->b, b - p->b);
    p->b = b;
}

size_t dg_lscan_line_end(const char *s, size_t len, size_t b)
{
    const char *nl = b < len ? memchr(s + b, '\n', len - b) : NULL;
    return nl ? (size_t)(nl - s) : len;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* A separator line: only '|', '+', '-', '=', ':' and blanks, with 3+ '-' or '='. */
static int separator(const char *s, size_t b, size_t e)
{
    size_t dashes = 0;
    for (size_t i = b; i < e; i++) {
        if (s[i] == '-' || s[i] == '=') dashes++;
        else if (s[i] != '|' && s[i] != '+' && s[i] != ':' && !is_blank(s[i])) return 0;
    }
    return dashes >= 3;
}

/* Parts of line [b, e) split at d, trailing blanks off: their bytes into cb
 * (cb[2i], cb[2i+1] = part i). With quotes, a part in double quotes may hold d
 * (CSV); a pipe row has none. Returns the count (MAX_COLS + 1: too many). */
static size_t split_cells(const char *s, size_t b, size_t e, char d, int quotes, size_t *cb)
{
    size_t n = 0, c0 = b;
    int quoted = 0;
    while (e > b && is_blank(s[e - 1])) e--;
    for (size_t i = b; i <= e; i++) {
        if (quotes && i < e && s[i] == '"') quoted = !quoted;
        if (i == e || (s[i] == d && !quoted)) {
            if (n == MAX_COLS) return MAX_COLS + 1;
            cb[2 * n] = c0;
            cb[2 * n + 1] = i;
            n++;
            c0 = i + 1;
        }
    }
    return n;
}

/* Cells of a pipe row [b, e): split at '|' (one leading and one trailing pipe are
 * borders). Returns the count (0: no row, or wider than MAX_COLS). */
static size_t pipe_cells(const char *s, size_t b, size_t e, size_t *cb)
{
    while (b < e && is_blank(s[b])) b++;
    while (e > b && is_blank(s[e - 1])) e--;
    if (b < e && s[b] == '|') b++;
    if (e > b && s[e - 1] == '|') e--;
    if (!memchr(s + b, '|', e - b)) return 0;
    size_t n = split_cells(s, b, e, '|', 0, cb);
    return n > MAX_COLS ? 0 : n;
}

/* Line [b, e) is markup only ("<table>", "<thead>"): it starts with '<' and has
 * no text outside its tags. */
static int markup_only(const char *s, size_t b, size_t e)
{
    int in = 0;
    while (b < e && is_blank(s[b])) b++;
    if (b >= e || s[b] != '<') return 0;
    for (size_t i = b; i < e; i++) {
        if (s[i] == '<') in = 1;
        else if (s[i] == '>') in = 0;
        else if (!in && !is_blank(s[i])) return 0;
    }
    return 1;
}

int dg_lscan_caption(const char *s, size_t b, size_t *k0, size_t *k1)
{
    for (int tries = 0; tries < 3; tries++) {
        size_t e = b;
        for (;;) {
            if (e == 0) return 0;
            e--; /* the '\n' ending the line above */
            size_t lb = e;
            while (lb > 0 && s[lb - 1] != '\n') lb--;
            size_t x = lb;
            while (x < e && is_blank(s[x])) x++;
            b = lb;
            if (x < e) break;
        }
        size_t x = b, y = e;
        if (separator(s, x, y) || markup_only(s, x, y)) continue;
        while (x < y && (is_blank(s[x]) || s[x] == '#' || s[x] == '*' || s[x] == '=' ||
                         s[x] == '>'))
            x++;
        while (y > x && (is_blank(s[y - 1]) || s[y - 1] == '#' || s[y - 1] == '*' ||
                         s[y - 1] == '=' || s[y - 1] == ':'))
            y--;
        if (x < y && s[x] == '<') { /* <h2>Releases</h2> */
            const char *gt = memchr(s + x, '>', y - x);
            if (!gt) return 0;
            x = (size_t)(gt - s) + 1;
            const char *lt = memchr(s + x, '<', y - x);
            if (lt) y = (size_t)(lt - s);
        }
        if (x >= y || y - x > DG_KEY_MAX_LEN || s[y - 1] == '.') return 0;
        size_t words = 1;
        for (size_t i = x; i < y; i++) {
            if (strchr("|:=,;\"\t<", s[i])) return 0;
            words += s[i] == ' ' && i + 1 < y && s[i + 1] != ' ';
        }
        if (words > DG_KEY_MAX_WORDS) return 0;
        *k0 = x;
        *k1 = y;
        return 1;
    }
    return 0;
}

/* Open a table list of kind `table` (DG_TABLE_*) captioned by the line above byte
 * b (else unnamed). */
static deg_status open_captioned(dg_lscan *S, size_t b, int table)
{
    size_t k0 = b, k1 = b;
    if (!dg_lscan_caption(S->ctx, b, &k0, &k1)) k1 = k0;
    return dg_lscan_open(S, k0, k1, table);
}

/* One record: the item from the first non-empty cell to the last, then its cells
 * under the header's columns hk (n of each; [2i], [2i+1] bytes; SIZE_MAX: unread). */
static deg_status add_row(dg_lscan *S, const pos *p, const size_t *hk, const size_t *cb,
                          size_t n)
{
    const char *s = S->ctx;
    size_t first = 0, last = 0;
    int any = 0;
    for (size_t c = 0; c < n; c++) {
        size_t x = cb[2 * c], y = cb[2 * c + 1];
        if (x == SIZE_MAX) continue;
        while (x < y && is_blank(s[x])) x++;
        while (y > x && is_blank(s[y - 1])) y--;
        if (x == y) continue;
        if (!any) first = x;
        last = y;
        any = 1;
    }
    int added = 0;
    if (any) DG_TRY(dg_lscan_item(S, p->b, p->cp, first, last, &added));
    for (size_t c = 0; added && c < n; c++)
        if (hk[2 * c + 1] > hk[2 * c] && hk[2 * c] != SIZE_MAX && cb[2 * c] != SIZE_MAX)
            DG_TRY(dg_lscan_cell(S, hk[2 * c], hk[2 * c + 1], p->b, p->cp, cb[2 * c],
                                 cb[2 * c + 1]));
    return DEG_OK;
}

/* Trim bytes [*x, *y) of blanks (header cells). */
static void trim(const char *s, size_t *x, size_t *y)
{
    while (*x < *y && is_blank(s[*x])) (*x)++;
    while (*y > *x && is_blank(s[*y - 1])) (*y)--;
}

/* A pipe table whose header is line [b, e): 1 when read (*skip past it). */
static deg_status pipe_table(dg_lscan *S, size_t b, size_t e, size_t cp, size_t *skip, int *got)
{
    const char *s = S->ctx;
    size_t hk[2 * MAX_COLS], cb[2 * MAX_COLS];
    size_t n = pipe_cells(s, b, e, hk);
    *got = 0;
    if (n < 2 || e >= S->len) return DEG_OK;
    size_t sb = e + 1, se = dg_lscan_line_end(s, S->len, sb);
    if (!separator(s, sb, se)) return DEG_OK;
    for (size_t c = 0; c < n; c++) trim(s, &hk[2 * c], &hk[2 * c + 1]);
    pos p = {b, cp};
    DG_TRY(open_captioned(S, b, DG_TABLE_NAMED));
    size_t lb = se < S->len ? se + 1 : S->len;
    while (lb < S->len) {
        size_t le = dg_lscan_line_end(s, S->len, lb);
        if (!separator(s, lb, le)) { /* a ragged row keeps its first cells' columns */
            size_t m = pipe_cells(s, lb, le, cb);
            if (m < 2) break;
            advance(s, &p, lb);
            DG_TRY(add_row(S, &p, hk, cb, m < n ? m : n));
        }
        lb = le < S->len ? le + 1 : S->len;
    }
    dg_lscan_close(S);
    *skip = lb;
    *got = 1;
    return DEG_OK;
}

/* The next "<tag" (tag "th" or "td", then '>' or a blank) in [i, e), or e. */
static size_t find_tag(const char *s, size_t i, size_t e, const char *tag)
{
    for (; i + 3 < e; i++)
        if (s[i] == '<' && strncasecmp(s + i + 1, tag, 2) == 0 && /* i + 3 < e: in bounds */
            (s[i + 3] == '>' || s[i + 3] == ' '))
            return i;
    return e;
}

/* A cell's content at x (row bytes end at e) that is one inline element around
 * text, "<code>X</code>" or '<a href="..">X</a>' before the cell's own closing tag
 * (blanks around allowed): 1 with the text's bytes [*t0, *t1), else 0. */
static int inline_text(const char *s, size_t x, size_t e, size_t *t0, size_t *t1)
{
    while (x < e && is_blank(s[x])) x++;
    if (x + 1 >= e || s[x] != '<' || !isalpha((unsigned char)s[x + 1])) return 0;
    const char *gt = memchr(s + x, '>', e - x);
    if (!gt || gt[-1] == '/') return 0;
    size_t a = (size_t)(gt - s) + 1, b = a;
    while (b < e && s[b] != '<') b++;
    if (b + 1 >= e || s[b + 1] != '/') return 0; /* a second element inside */
    const char *close = memchr(s + b, '>', e - b);
    if (!close) return 0;
    size_t z = (size_t)(close - s) + 1;
    while (z < e && is_blank(s[z])) z++;
    if (z + 1 >= e || s[z] != '<' || s[z + 1] != '/') return 0; /* text after it */
    *t0 = a;
    *t1 = b;
    return 1;
}

/* Cells "<tag ...>text</tag>" of row bytes [i, e): their text bytes into cb (the
 * text inside one inline element is read, inline_text; a cell with other markup
 * inside is unread: SIZE_MAX, SIZE_MAX). Returns the count (at most MAX_COLS + 1). */
static size_t html_cells(const char *s, size_t i, size_t e, const char *tag, size_t *cb)
{
    size_t n = 0;
    for (i = find_tag(s, i, e, tag); i < e && n <= MAX_COLS; i = find_tag(s, i, e, tag)) {
        const char *gt = memchr(s + i, '>', e - i);
        if (!gt) break;
        size_t x = (size_t)(gt - s) + 1, y = x, t0, t1;
        while (y < e && s[y] != '<') y++;
        if (n < MAX_COLS) { /* markup inside: unread (SIZE_MAX), not empty */
            int text = y + 1 < e && s[y + 1] == '/';
            if (!text && inline_text(s, x, e, &t0, &t1)) {
                cb[2 * n] = t0;
                cb[2 * n + 1] = t1;
            } else {
                cb[2 * n] = text ? x : SIZE_MAX;
                cb[2 * n + 1] = text ? y : SIZE_MAX;
            }
        }
        n++;
        i = y;
    }
    return n;
}

/* Bytes at i of s (len bytes) start with lit, ASCII case folded. */
static int at_ci(const char *s, size_t len, size_t i, const char *lit)
{
    size_t n = strlen(lit);
    return i + n <= len && strncasecmp(s + i, lit, n) == 0;
}

/* The bytes of the HTML row starting at the first "<tr" at or after i (to its
 * "</tr>", else the end of the line), unless "</table>" or text other than
 * markup comes first: 1 with [*r0, *r1). */
static int next_tr(const char *s, size_t len, size_t i, size_t *r0, size_t *r1)
{
    while (i < len && (is_blank(s[i]) || s[i] == '\n')) i++;
    while (i + 1 < len && s[i] == '<' && s[i + 1] == '/' && !at_ci(s, len, i, "</tr")) {
        if (at_ci(s, len, i, "</table")) return 0;
        const char *gt = memchr(s + i, '>', len - i); /* </thead> */
        if (!gt) return 0;
        i = (size_t)(gt - s) + 1;
        while (i < len && (is_blank(s[i]) || s[i] == '\n')) i++;
    }
    if (at_ci(s, len, i, "<tbody")) {
        const char *gt = memchr(s + i, '>', len - i);
        if (!gt) return 0;
        i = (size_t)(gt - s) + 1;
        while (i < len && (is_blank(s[i]) || s[i] == '\n')) i++;
    }
    if (!at_ci(s, len, i, "<tr") || i + 3 >= len || (s[i + 3] != '>' && !is_blank(s[i + 3])))
        return 0;
    const char *end = NULL;
    for (size_t j = i; j < len && !end; j++)
        if (s[j] == '<' && at_ci(s, len, j, "</tr>")) end = s + j;
    *r0 = i;
    *r1 = end ? (size_t)(end - s) + 5 : dg_lscan_line_end(s, len, i);
    return 1;
}

/* An HTML table whose header row (2+ <th> cells) starts on line [b, e) (its
 * "<tr" there, the row over lines to its "</tr>"; else the line's <th> cells). */
static deg_status html_table(dg_lscan *S, size_t b, size_t e, size_t cp, size_t *skip, int *got)
{
    const char *s = S->ctx;
    size_t hk[2 * (MAX_COLS + 1)], cb[2 * (MAX_COLS + 1)];
    *got = 0;
    /* the header row: from a "<tr" on this line to its "</tr>" (over lines), else
     * this line's <th> cells */
    size_t h0 = b, h1 = e, i, r0, r1;
    while (h0 < e && !(s[h0] == '<' && at_ci(s, e, h0, "<tr") && h0 + 3 < e &&
                       (s[h0 + 3] == '>' || is_blank(s[h0 + 3]))))
        h0++;
    if (h0 < e) {
        if (!next_tr(s, S->len, h0, &r0, &r1)) return DEG_OK;
        h0 = r0;
        h1 = r1;
    } else {
        h0 = b;
    }
    if (find_tag(s, h0, h1, "td") < h1) return DEG_OK; /* a "<th>key</th><td>value</td>" row */
    size_t n = html_cells(s, h0, h1, "th", hk);
    if (n < 2 || n > MAX_COLS) return DEG_OK;
    if (h1 != e) {
        i = h1;
    } else {
        const char *tr_end = memmem(s + b, S->len - b, "</tr>", 5);
        i = tr_end ? (size_t)(tr_end - s) + 5 : e;
    }
    if (!next_tr(s, S->len, i, &r0, &r1)) return DEG_OK;
    pos p = {b, cp};
    DG_TRY(open_captioned(S, b, DG_TABLE_NAMED));
    while (next_tr(s, S->len, i, &r0, &r1)) {
        if (html_cells(s, r0, r1, "td", cb) != n) break;
        advance(s, &p, r0);
        DG_TRY(add_row(S, &p, hk, cb, n));
        i = r1;
    }
    dg_lscan_close(S);
    *skip = dg_lscan_line_end(s, S->len, i);
    *got = 1;
    return DEG_OK;
}

/* A column name of a CSV header: a letter first, then letters, digits, '_', '-',
 * '.', '/' or single spaces; at most 3 words and DG_KEY_MAX_LEN bytes. */
static int column_name(const char *s, size_t x, size_t y)
{
    trim(s, &x, &y);
    if (x >= y || y - x > DG_KEY_MAX_LEN || !isalpha((unsigned char)s[x])) return 0;
    size_t words = 1;
    for (size_t i = x; i < y; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ') {
            if ((i + 1 < y && s[i + 1] == ' ') || ++words > 3) return 0;
        } else if (!isalnum(c) && c != '_' && c != '-' && c != '.' && c != '/' && c < 0x80) {
            return 0;
        }
    }
    return 1;
}

/* A CSV (',') or TSV (TAB) table whose header is line [b, e). */
static deg_status csv_table(dg_lscan *S, size_t b, size_t e, size_t cp, size_t *skip, int *got)
{
    const char *s = S->ctx;
    size_t hk[2 * (MAX_COLS + 1)], cb[2 * (MAX_COLS + 1)];
    *got = 0;
    char d = memchr(s + b, '\t', e - b) ? '\t' : ',';
    size_t n = split_cells(s, b, e, d, 1, hk);
    if (n < 2 || n > MAX_COLS || e >= S->len) return DEG_OK;
    for (size_t c = 0; c < n; c++) {
        if (!column_name(s, hk[2 * c], hk[2 * c + 1])) return DEG_OK;
        trim(s, &hk[2 * c], &hk[2 * c + 1]);
    }
    size_t lb = e + 1, le = dg_lscan_line_end(s, S->len, lb), m = split_cells(s, lb, le, d, 1, cb);
    if (m < 2 || m > n) return DEG_OK;
    pos p = {b, cp};
    DG_TRY(open_captioned(S, b, DG_TABLE_NAMED));
    while (lb < S->len) {
        le = dg_lscan_line_end(s, S->len, lb);
        m = split_cells(s, lb, le, d, 1, cb);
        if (m < 2 || m > n) break;
        for (size_t c = 0; c < m; c++) { /* "..." cells read inside the quotes */
            size_t x = cb[2 * c], y = cb[2 * c + 1];
            trim(s, &x, &y);
            if (y - x >= 2 && s[x] == '"' && s[y - 1] == '"') {
                cb[2 * c] = x + 1;
                cb[2 * c + 1] = y - 1;
            }
        }
        advance(s, &p, lb);
        DG_TRY(add_row(S, &p, hk, cb, m));
        lb = le < S->len ? le + 1 : S->len;
    }
    dg_lscan_close(S);
    *skip = lb;
    *got = 1;
    return DEG_OK;
}

/* Past JSON value at byte i (string, number, literal, or a nested object/array,
 * strings inside skipped): the byte after it, or len. */
static size_t skip_value(const char *s, size_t len, size_t i)
{
    int depth = 0;
    for (; i < len; i++) {
        char c = s[i];
        if (c == '"') {
            for (i++; i < len && s[i] != '"'; i++)
                if (s[i] == '\\') i++;
            if (!depth) return i + 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (!depth) return i;
            if (--depth == 0) return i + 1;
        } else if (!depth && (c == ',' || c == '\n' || is_blank(c))) {
            return i;
        }
    }
    return len;
}

static size_t skip_ws(const char *s, size_t len, size_t i)
{
    while (i < len && (is_blank(s[i]) || s[i] == '\n')) i++;
    return i;
}

/* One JSON object at byte i ('{'): its scalar members as a record. Returns the
 * byte after its '}', or 0 when it is no object of members. */
static size_t json_record(dg_lscan *S, pos *p, size_t i, deg_status *st)
{
    const char *s = S->ctx;
    size_t len = S->len, m[4 * MAX_MEMBERS], n = 0, first = 0, last = 0;
    i = skip_ws(s, len, i + 1);
    while (i < len && s[i] == '"') {
        size_t k0 = i + 1, k1 = k0;
        while (k1 < len && s[k1] != '"') k1 += s[k1] == '\\' ? 2 : 1;
        if (k1 >= len) return 0;
        size_t j = skip_ws(s, len, k1 + 1);
        if (j >= len || s[j] != ':') return 0;
        size_t v0 = skip_ws(s, len, j + 1), v1 = skip_value(s, len, v0);
        if (v1 >= len || v1 == v0) return 0;
        if (!n) first = k0 - 1;
        last = v1;
        if (n < MAX_MEMBERS && s[v0] != '{' && s[v0] != '[') {
            int null = v1 - v0 == 4 && memcmp(s + v0, "null", 4) == 0;
            m[4 * n] = k0;
            m[4 * n + 1] = k1;
            m[4 * n + 2] = null ? v0 : v0 + (s[v0] == '"');
            m[4 * n + 3] = null ? v0 : v1 - (s[v0] == '"');
            n++;
        }
        i = skip_ws(s, len, v1);
        if (i < len && s[i] == ',') i = skip_ws(s, len, i + 1);
    }
    if (i >= len || s[i] != '}' || !n) return 0;
    advance(s, p, first);
    int added = 0;
    *st = dg_lscan_item(S, p->b, p->cp, first, last, &added);
    for (size_t k = 0; *st == DEG_OK && added && k < n; k++)
        *st = dg_lscan_cell(S, m[4 * k], m[4 * k + 1], p->b, p->cp, m[4 * k + 2], m[4 * k + 3]);
    return i + 1;
}

/* A JSON array of objects opening on line [b, e): `"key": [` or a bare `[`, its
 * first element an object. */
static deg_status json_table(dg_lscan *S, size_t b, size_t e, size_t cp, size_t *skip, int *got)
{
    const char *s = S->ctx;
    size_t k0 = b, k1 = b, colon, i;
    *got = 0;
    if (dg_json_member_split(s, b, e, &k0, &k1, &colon)) {
        i = skip_ws(s, e, colon + 1);
    } else {
        i = b;
        while (i < e && is_blank(s[i])) i++;
        k1 = k0;
    }
    if (i >= e || s[i] != '[') return DEG_OK;
    i = skip_ws(s, S->len, i + 1);
    if (i >= S->len || s[i] != '{') return DEG_OK;
    pos p = {b, cp};
    DG_TRY(dg_lscan_open(S, k0, k1, DG_TABLE_NAMED));
    deg_status st = DEG_OK;
    while (i < S->len && s[i] == '{') {
        size_t next = json_record(S, &p, i, &st);
        DG_TRY(st);
        if (!next) break;
        i = skip_ws(s, S->len, next);
        if (i < S->len && s[i] == ',') i = skip_ws(s, S->len, i + 1);
    }
    dg_lscan_close(S);
    *skip = dg_lscan_line_end(s, S->len, i);
    *got = 1;
    return DEG_OK;
}

size_t dg_lscan_indent(const char *s, size_t b, size_t e)
{
    size_t i = b;
    while (i < e && (s[i] == ' ' || s[i] == '\t')) i++;
    return i - b;
}

/* The first byte of the next non-blank line at or after lb, or len. */
static size_t next_nonblank(const char *s, size_t len, size_t lb)
{
    while (lb < len) {
        size_t le = dg_lscan_line_end(s, len, lb);
        if (dg_lscan_indent(s, lb, le) < le - lb && !(le - lb == 1 && s[lb] == '\r')) return lb;
        lb = le < len ? le + 1 : len;
    }
    return len;
}

/* A YAML list of maps under key line [b, e) ("currencies:" then "  - code: AOA"
 * bullets, each continued by "    name: Kwanza" lines indented to its text; deeper
 * lines (a nested list) belong to the record without cells; blank lines between
 * records are skipped). A key with an empty value (a nested block) is no cell. */
static deg_status yaml_table(dg_lscan *S, size_t b, size_t e, size_t cp, size_t *skip, int *got)
{
    const char *s = S->ctx;
    size_t k0, k1, v0, v1, t, lb = e + 1;
    *got = 0;
    if (e >= S->len || !dg_keyline_split(s, b, e, &k0, &k1, &v0, &v1) || v1 > v0) return DEG_OK;
    lb = next_nonblank(s, S->len, lb);
    size_t le = dg_lscan_line_end(s, S->len, lb);
    size_t x0, x1, y0, y1;
    if (!(t = dg_lscan_bullet(s, lb, le)) || s[dg_lscan_indent(s, lb, le) + lb] != '-' ||
        !dg_keyline_split(s, t, le, &x0, &x1, &y0, &y1) || y1 == y0)
        return DEG_OK;
    size_t dash = dg_lscan_indent(s, lb, le);
    pos p = {b, cp};
    DG_TRY(dg_lscan_open(S, k0, k1, DG_TABLE_NAMED));
    while (lb < S->len) {
        le = dg_lscan_line_end(s, S->len, lb);
        t = dg_lscan_bullet(s, lb, le);
        if (!t || dg_lscan_indent(s, lb, le) != dash || s[lb + dash] != '-') break;
        size_t col = t - lb, rb = lb, re = le; /* the record's lines [rb, re) */
        size_t nb = next_nonblank(s, S->len, le < S->len ? le + 1 : S->len);
        while (nb < S->len) { /* deeper than the dash: still this record */
            size_t ne = dg_lscan_line_end(s, S->len, nb);
            if (dg_lscan_indent(s, nb, ne) <= dash) break;
            re = ne;
            nb = next_nonblank(s, S->len, ne < S->len ? ne + 1 : S->len);
        }
        advance(s, &p, rb);
        int added = 0;
        DG_TRY(dg_lscan_item(S, p.b, p.cp, t, re, &added));
        for (size_t l = rb; added && l < re;) {
            size_t l1 = dg_lscan_line_end(s, S->len, l), from = l == rb ? t : l;
            if ((l == rb || dg_lscan_indent(s, l, l1) == col) &&
                dg_keyline_split(s, from, l1, &x0, &x1, &y0, &y1) && y1 > y0)
                DG_TRY(dg_lscan_cell(S, x0, x1, p.b, p.cp, y0, y1));
            l = l1 + 1;
        }
        lb = nb;
    }
    dg_lscan_close(S);
    *skip = lb;
    *got = 1;
    return DEG_OK;
}

/* Section header line [b, e) of an INI or TOML file naming one record of a set:
 * "[services.1]", "[services 2]", "[host-3]" (a base name, then '.', ' ', '-' or '_'
 * and a number) or "[[services]]" (TOML's array of tables): 1 with the base name's
 * bytes [*k0, *k1). */
static int section_header(const char *s, size_t b, size_t e, size_t *k0, size_t *k1)
{
    trim(s, &b, &e);
    if (e - b < 3 || s[b] != '[' || s[e - 1] != ']') return 0;
    int toml = e - b >= 5 && s[b + 1] == '[' && s[e - 2] == ']';
    size_t x = b + 1 + (size_t)toml, y = e - 1 - (size_t)toml;
    for (size_t i = x; i < y; i++)
        if (s[i] == '[' || s[i] == ']' || s[i] == '=') return 0;
    if (!toml) {
        size_t d = y;
        while (d > x && isdigit((unsigned char)s[d - 1])) d--;
        if (d == y || d <= x + 1 || !strchr(". -_", s[d - 1])) return 0;
        y = d - 1;
    }
    trim(s, &x, &y);
    if (x >= y) return 0;
    *k0 = x;
    *k1 = y;
    return 1;
}

/* Numbered INI sections or a TOML array of tables (libdeg 0.21.0): consecutive
 * section headers with one base name (section_header), each section's "key = value"
 * (or "key: value") lines one record, its keys the columns; the table's key is the
 * base name ("[services.1]" ... -> "services"); blank and '#'/';' comment lines
 * between; the table ends at a section of another name or a line that is neither.
 * Why: datagen's INI layout writes an array of objects this way, and the heads read
 * its key lines as loose values (datagen-v2 val services, INI: 25 of 81 fields). */
static deg_status ini_table(dg_lscan *S, size_t b, size_t e, size_t cp, size_t *skip, int *got)
{
    const char *s = S->ctx;
    size_t k0, k1, x0, x1, y0, y1;
    *got = 0;
    if (!section_header(s, b, e, &k0, &k1)) return DEG_OK;
    pos p = {b, cp};
    size_t lb = b, end = b;
    int open = 0;
    while (lb < S->len) {
        size_t le = dg_lscan_line_end(s, S->len, lb), h0, h1;
        if (!section_header(s, lb, le, &h0, &h1) || h1 - h0 != k1 - k0 ||
            strncasecmp(s + h0, s + k0, k1 - k0) != 0)
            break;
        /* the section's lines: up to the next header or a line of another kind */
        size_t rb = SIZE_MAX, re = 0, l = le < S->len ? le + 1 : S->len;
        while (l < S->len) {
            size_t l1 = dg_lscan_line_end(s, S->len, l), t = l;
            while (t < l1 && is_blank(s[t])) t++;
            if (t < l1 && s[t] == '[') break;
            if (t < l1 && s[t] != '#' && s[t] != ';') {
                if (!dg_keyline_split(s, l, l1, &x0, &x1, &y0, &y1)) break;
                if (rb == SIZE_MAX) rb = t;
                re = l1;
            }
            l = l1 < S->len ? l1 + 1 : S->len;
        }
        if (rb == SIZE_MAX) break; /* a header without key lines ends the set */
        if (!open) DG_TRY(dg_lscan_open(S, k0, k1, DG_TABLE_NAMED));
        open = 1;
        advance(s, &p, rb);
        int added = 0;
        DG_TRY(dg_lscan_item(S, p.b, p.cp, rb, re, &added));
        for (size_t m = rb; added && m < re;) {
            size_t m1 = dg_lscan_line_end(s, S->len, m);
            if (dg_keyline_split(s, m, m1, &x0, &x1, &y0, &y1) && y1 > y0)
                DG_TRY(dg_lscan_cell(S, x0, x1, p.b, p.cp, y0, y1));
            m = m1 < S->len ? m1 + 1 : S->len;
        }
        end = lb = l;
    }
    if (!open) return DEG_OK;
    dg_lscan_close(S);
    *skip = end;
    *got = 1;
    return DEG_OK;
}

/* Part [x, y) is a number with a protocol after a slash ("540/tcp", "53/udp": the
 * port column of /etc/services, nmap's and EXPOSE's "8080/tcp"): its split byte
 * (the '/'), else 0. Why: the port and the protocol are two properties of the row. */
static size_t port_proto(const char *s, size_t x, size_t y)
{
    size_t i = x;
    while (i < y && isdigit((unsigned char)s[i])) i++;
    if (i == x || i + 1 >= y || s[i] != '/') return 0;
    for (size_t j = i + 1; j < y; j++)
        if (!isalpha((unsigned char)s[j])) return 0;
    return i;
}

/* Line [b, e) as a headerless TSV row: 3+ non-empty parts between TABs (runs of
 * TABs are one separator; a "80/tcp" part as two, port_proto) before any part
 * starting with '#' (a trailing comment), not a '#' comment line; their bytes into
 * cb. Returns the count, else 0. */
static size_t tsv_row(const char *s, size_t b, size_t e, size_t *cb)
{
    size_t x = b, n = 0, raw[2 * (MAX_COLS + 1)];
    while (x < e && is_blank(s[x])) x++;
    if (x >= e || s[x] == '#' || !memchr(s + b, '\t', e - b)) return 0;
    size_t m = split_cells(s, b, e, '\t', 0, raw);
    if (m > MAX_COLS) return 0;
    for (size_t c = 0; c < m; c++) {
        size_t x0 = raw[2 * c], y0 = raw[2 * c + 1];
        trim(s, &x0, &y0);
        if (x0 == y0) continue;
        if (s[x0] == '#') break; /* a trailing comment (0.21.0), not a cell */
        if (n + 2 > MAX_COLS) return 0;
        size_t sl = port_proto(s, x0, y0); /* "80/tcp": two cells (0.21.0) */
        if (sl) {
            cb[2 * n] = x0;
            cb[2 * n + 1] = sl;
            n++;
            x0 = sl + 1;
        }
        cb[2 * n] = x0;
        cb[2 * n + 1] = y0;
        n++;
    }
    return n >= 3 ? n : 0;
}

/* Line [b, e) holds only blanks. */
static int blank_line(const char *s, size_t b, size_t e)
{
    while (b < e && is_blank(s[b])) b++;
    return b >= e;
}

/* Line [b, e) is a '#' comment (its first non-blank byte). */
static int comment_line(const char *s, size_t b, size_t e)
{
    while (b < e && is_blank(s[b])) b++;
    return b < e && s[b] == '#';
}

/* Line [b, e) as a row of aligned columns (libdeg 0.21.0): parts between runs of
 * TABs or of 2+ spaces, up to a part starting with '#' (a trailing comment, left
 * out), a "540/tcp" part as two (port_proto); their bytes into cb. Not a row: a
 * comment line, a bullet, a line starting with markup ('|', '<', '[', '{', '>'),
 * a key line (its first part ends in ':', or the line has '='), a part with
 * ": " inside, or a sentence before two spaces ("It ends.  Next one"). Returns the
 * count (1: one part, which has no blank inside), else 0. */
static size_t aligned_row(const char *s, size_t b, size_t e, size_t *cb)
{
    size_t x = b, n = 0;
    while (x < e && is_blank(s[x])) x++;
    while (e > x && is_blank(s[e - 1])) e--;
    if (x >= e || strchr("#|<[{>", s[x]) || dg_lscan_bullet(s, b, e) || memchr(s + x, '=', e - x))
        return 0;
    int inner_blank = 0;
    while (x < e && s[x] != '#') {
        size_t y = x;
        int pb = 0; /* this part has a blank inside */
        for (;;) { /* the part ends at a TAB or at two blanks */
            if (y >= e || s[y] == '\t' || (s[y] == ' ' && y + 1 < e && is_blank(s[y + 1]))) break;
            if (s[y] == ' ') pb = inner_blank = 1;
            if (s[y] == ':' && y + 1 < e && s[y + 1] == ' ') return 0;
            y++;
        }
        if (n + 2 > MAX_COLS) return 0;
        if (pb && s[y - 1] == '.' && y < e) return 0; /* prose: "End.  Next" */
        if (n == 0 && s[y - 1] == ':') return 0;
        size_t sl = port_proto(s, x, y);
        if (sl) {
            cb[2 * n] = x;
            cb[2 * n + 1] = sl;
            n++;
            x = sl + 1;
        }
        cb[2 * n] = x;
        cb[2 * n + 1] = y;
        n++;
        x = y;
        while (x < e && is_blank(s[x])) x++;
    }
    return n == 1 && inner_blank ? 0 : n;
}

/* A row one part short of its table's usual count whose first part holds one blank
 * before a number ("idpr-cmtp 38\tIDPR-CMTP" among /etc/protocols' "ip\t0\tIP" rows):
 * that blank separates the first two cells (libdeg 0.23.0; a new user's /etc/protocols read
 * "idpr-cmtp 38" as one name). Returns the new count (n, or n + 1). */
static size_t split_first(const char *s, size_t *cb, size_t n)
{
    size_t x = cb[0], y = cb[1], sp = 0;
    for (size_t i = x; i < y; i++)
        if (s[i] == ' ') {
            if (sp) return n;
            sp = i;
        }
    if (!sp || sp + 1 == y || n + 1 > MAX_COLS) return n;
    for (size_t i = sp + 1; i < y; i++) /* a name then a number; "New York" stays whole */
        if (!isdigit((unsigned char)s[i])) return n;
    memmove(cb + 2, cb, 2 * n * sizeof *cb);
    cb[1] = sp;
    cb[2] = sp + 1;
    return n + 1;
}

/* A headerless table (libdeg 0.18.0; aligned columns 0.21.0): a paragraph (blank
 * or '#' comment lines, or the text's ends, around it; comment lines inside it
 * skipped) whose every line is a TSV row (tsv_row; "NI\t+1209-08617\tAmerica/Managua",
 * zone.tab and other tab-separated data files), or else whose every line is an
 * aligned row (aligned_row; "uucp            540/tcp\t\tuucpd\t\t# uucp daemon",
 * /etc/services, mime.types, command output), at least two and at least half of
 * them with 2+ parts; at most 4096 rows. Each row is a record whose cells have no
 * column name (key ""): an object array takes the table by its caption, or as the
 * text's only headerless table (dg_lists_match); its leaves' spans keep to one cell
 * each. Why: a one-row data file was no list at all, and the heads answered []
 * (datagen-v2 test zone files: 8 of 12 arrays of one zone); /etc/services lines
 * aligned by spaces were no table either (datagen-v2 val services, raw layout: 7%
 * of fields right, object arrays answered [] or one row's cells across fields). */
static deg_status tsv_table(dg_lscan *S, size_t b, size_t e, size_t cp, size_t *skip, int *got)
{
    const char *s = S->ctx;
    size_t cb[2 * (MAX_COLS + 1)];
    *got = 0;
    if (comment_line(s, b, e)) return DEG_OK;
    if (b > 0) { /* the line above must be blank, a comment, or none */
        size_t pe = b - 1, pb = pe;
        while (pb > 0 && s[pb - 1] != '\n') pb--;
        if (!blank_line(s, pb, pe) && !comment_line(s, pb, pe)) return DEG_OK;
    }
    /* the paragraph: rows up to a blank line or the end, comment lines skipped */
    size_t lb = b, rows = 0, multi = 0, count[MAX_COLS + 1] = {0};
    int tsv = 1, aligned = 1;
    while (lb < S->len && (tsv || aligned)) {
        size_t le = dg_lscan_line_end(s, S->len, lb);
        if (blank_line(s, lb, le)) break;
        if (!comment_line(s, lb, le)) {
            if (++rows > 4096) return DEG_OK;
            tsv = tsv && tsv_row(s, lb, le, cb);
            size_t n = aligned ? aligned_row(s, lb, le, cb) : 0;
            aligned = aligned && n;
            multi += n >= 2;
            count[n <= MAX_COLS ? n : 0]++;
        }
        lb = le < S->len ? le + 1 : S->len;
    }
    if (!rows || (!tsv && !(aligned && multi >= 2 && 2 * multi >= rows))) return DEG_OK;
    size_t modal = 0;
    for (size_t n = 2; !tsv && n <= MAX_COLS; n++)
        if (count[n] > count[modal]) modal = n;
    DG_TRY(open_captioned(S, b, DG_TABLE_HEADERLESS));
    pos p = {b, cp};
    for (size_t x = b; x < lb;) {
        size_t le = dg_lscan_line_end(s, S->len, x);
        size_t n = comment_line(s, x, le) ? 0 : tsv ? tsv_row(s, x, le, cb)
                                                    : aligned_row(s, x, le, cb);
        if (n && modal && n + 1 == modal) n = split_first(s, cb, n);
        advance(s, &p, x);
        int added = 0;
        if (n) DG_TRY(dg_lscan_item(S, p.b, p.cp, cb[0], cb[2 * n - 1], &added));
        for (size_t c = 0; added && c < n; c++)
            DG_TRY(dg_lscan_cell(S, cb[2 * c], cb[2 * c], p.b, p.cp, cb[2 * c], cb[2 * c + 1]));
        x = le < S->len ? le + 1 : S->len;
    }
    dg_lscan_close(S);
    *skip = lb;
    *got = 1;
    return DEG_OK;
}

deg_status dg_tables_at(dg_lscan *S, size_t b, size_t e, size_t cp, size_t *skip)
{
    typedef deg_status (*reader)(dg_lscan *, size_t, size_t, size_t, size_t *, int *);
    static const reader READERS[] = {pipe_table, html_table, json_table, yaml_table, csv_table,
                                     ini_table, tsv_table};
    *skip = b;
    for (size_t r = 0; r < sizeof READERS / sizeof READERS[0]; r++) {
        int got = 0;
        DG_TRY(READERS[r](S, b, e, cp, skip, &got));
        if (got) return DEG_OK;
    }
    return DEG_OK;
}
