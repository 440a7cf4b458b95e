/* list_parts.c - a list item's parts as cells: "a; Key: b", "a &mdash; b",
 * "X (a, b)" (lists.h; the scanner's item adder, lists_scan.h). */
#include <stddef.h>
#include <string.h>

#include "base/status.h"
#include "deg/keyprior.h"
#include "deg/lists_scan.h"

/* Separators between the parts of one list item ("Asia/Amman; Coordinates:
 * +3157+03556", "Africa/Casablanca &mdash; +3339-00735", "a | b"): "; ", a
 * spaced em or en dash (also as the HTML entity) or '|'. Returns the separator's
 * length at byte i of [i, e), else 0. */
static size_t part_sep(const char *s, size_t i, size_t e)
{
#define SEP_(x) {x, sizeof x - 1}
    static const struct { const char *s; size_t n; } SEP[] = {
        SEP_("; "), SEP_(" \xe2\x80\x94 "), SEP_(" \xe2\x80\x93 "), SEP_(" &mdash; "),
        SEP_(" &ndash; "), SEP_(" | ")};
#undef SEP_
    for (size_t k = 0; k < sizeof SEP / sizeof SEP[0]; k++)
        if (e - i >= SEP[k].n && memcmp(s + i, SEP[k].s, SEP[k].n) == 0) return SEP[k].n;
    return 0;
}

/* The part separators (part_sep) of [b, e). A line with any is a record
 * ("Australia/Brisbane, an en dash, Coordinates: -2728+15302"), not a mapping's
 * member, though its first part reads as a key (indented_run). */
size_t dg_lscan_count_parts(const char *s, size_t b, size_t e)
{
    size_t n = 0;
    for (size_t i = b; i < e; i++) n += part_sep(s, i, e) > 0;
    return n;
}

/* An item written "X (a, b, c)" - a name, then its details in parentheses, two to 16
 * parts between ", " (libdeg 0.21.0; "http-alt (8080, tcp, webcache)") - as the cells
 * X, a, b, c of the item just added (no parenthesis inside the details, nothing after
 * them; one detail is a note on X, read by the heads as before: "libc6 (>= 2.14)" holds
 * a relation and a version, "Bruno (bruno@example.com)"; but cells when another item
 * of the same delimited value has two: S->paren_one, libdeg 0.22.0). Why: prose writes a record this way, and each
 * property read the whole item or a run over its commas (datagen-v2 val services,
 * prose and e-mail layouts: "http-alt (8080, tcp" for the name). */
static deg_status paren_cells(dg_lscan *S, size_t lb, size_t lcp, size_t b, size_t e)
{
    const char *s = S->ctx;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '.')) e--;
    if (e - b < 4 || s[e - 1] != ')') return DEG_OK;
    const char *op = memchr(s + b, '(', e - b);
    size_t o = op ? (size_t)(op - s) : e;
    if (o <= b + 1 || s[o - 1] != ' ' || memchr(s + o + 1, '(', e - 1 - (o + 1)) ||
        memchr(s + b, ')', o - b))
        return DEG_OK;
    size_t n = 1;
    for (size_t i = o + 1; i + 1 < e - 1; i++) n += s[i] == ',' && s[i + 1] == ' ';
    /* one detail is a note on X ("libc6 (>= 2.14)"), unless the list's other items
     * write two (S->paren_one: "Asia/Amman (+3157+03556); Asia/Dubai (+2518+05518,
     * Gulf)", the second detail optional) */
    if (n < (S->paren_one ? 1u : 2u) || n > 16) return DEG_OK;
    DG_TRY(dg_lscan_cell(S, b, b, lb, lcp, b, o - 1));
    for (size_t p0 = o + 1; p0 < e - 1;) {
        size_t p1 = p0;
        while (p1 + 1 < e - 1 && !(s[p1] == ',' && s[p1 + 1] == ' ')) p1++;
        if (p1 + 1 >= e - 1) p1 = e - 1;
        DG_TRY(dg_lscan_cell(S, p0, p0, lb, lcp, p0, p1));
        p0 = p1 < e - 1 ? p1 + 2 : e;
    }
    return DEG_OK;
}

/* The parts of list item [b, e) (its line at byte lb = code point lcp) as cells
 * of the item just added, when it has two to 17 (part_sep; more is a run of
 * text, not a record an object maps part by part): a "Key: value" part is a cell
 * under its key ("Coordinates"), another one a cell without a key. An object array on the list then reads them as a table's records do
 * (lists.h): a member named like a key reads that cell, the one member left
 * unnamed the one cell left. Items of one part have no cells. */
static deg_status item_cells(dg_lscan *S, size_t lb, size_t lcp, size_t b, size_t e)
{
    const char *s = S->ctx;
    size_t n = dg_lscan_count_parts(s, b, e);
    if (n == 0) return paren_cells(S, lb, lcp, b, e);
    if (n > 16) return DEG_OK;
    for (size_t p0 = b; p0 < e;) {
        size_t p1 = p0, w = 0;
        while (p1 < e && !(w = part_sep(s, p1, e))) p1++;
        size_t k0, k1, v0, v1;
        if (dg_keyline_split(s, p0, p1, &k0, &k1, &v0, &v1) && v1 > v0)
            DG_TRY(dg_lscan_cell(S, k0, k1, lb, lcp, v0, v1));
        else
            DG_TRY(dg_lscan_cell(S, p0, p0, lb, lcp, p0, p1));
        p0 = p1 + w;
    }
    return DEG_OK;
}

/* (lists_scan.h) */
deg_status dg_lscan_add_item(dg_lscan *S, size_t lb, size_t lcp, size_t b, size_t e)
{
    int added;
    DG_TRY(dg_lscan_item(S, lb, lcp, b, e, &added));
    return added ? item_cells(S, lb, lcp, b, e) : DEG_OK;
}

