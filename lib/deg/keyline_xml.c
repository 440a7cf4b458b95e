/* keyline_xml.c - XML leaf elements as key lines (keyprior.h): `<name>Java Native
 * Access</name>` states the fact `name` as plainly as "Name: Java Native Access" does.
 *
 * Why: a Maven POM, a D-Bus or fontconfig file, an Android manifest or an RSS item write
 * their facts as elements; without a key line the heads took a developer's <name> for the
 * project's and <parent>'s <groupId> for the artifact (bench/devreal set 2, libdeg 0.24.0).
 *
 * Rule: an element whose start tag, text and end tag of the same name sit on one line,
 * the text holding no markup ('<') and no line break, and no text before it on its line
 * (tags may be: "<head><title>"; "a <b>bold</b> word" is inline), named by no HTML tag
 * but <title> (dg_html_tag: "<td>x</td>" is a table's cell, tables.c), is a key line: the key is the
 * element's local name (after a "prefix:"; dg_key_norm splits camelCase: artifactId ->
 * "artifact id"), the value its text trimmed of blanks. Among the elements of one key,
 * only those at the smallest nesting depth are kept (each element also gives the key line
 * "PARENT KEY", "parent version", which only an exact name reads; dg_keyline.exact_only): the document's own <version> and not
 * its dependencies' (a POM's <project> children before <dependency> children); depth
 * counts open start tags, minus end tags, over the whole text (XML 1.0 §3.1; comments,
 * processing instructions, declarations and CDATA sections hold no tags, self-closing
 * tags open nothing). HTML's unclosed tags (<br>, <p>) skew the depth but only rank
 * elements of one key against each other. Work: one pass over the context, the leaves
 * kept in a buffer (one per element). */
#include "deg/keyprior.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/grow.h"

typedef struct leaf {
    size_t k0, k1, v0, v1; /* bytes of the local name and of the trimmed text */
    size_t p0, p1;         /* bytes of the parent element's local name (p0 == p1: none) */
    long depth;
    int keep; /* at the smallest depth of its key */
    char key[DG_KEY_MAX_LEN + 1];
} leaf;

int dg_html_tag(const char *s, size_t n)
{
    static const char *const TAGS[] = {
        "html", "head", "body", "title", "meta", "link", "script", "style", "div", "span",
        "p", "a", "b", "i", "u", "em", "strong", "code", "pre", "br", "hr", "img", "table",
        "thead", "tbody", "tfoot", "tr", "th", "td", "ul", "ol", "li", "dl", "dt", "dd", "h1",
        "h2", "h3", "h4", "h5", "h6", "section", "header", "footer", "nav", "main", "article",
        "form", "input", "label", "button", "select", "option", "small", "sup", "sub",
        "blockquote", "caption", "col", "colgroup", "iframe", "svg", "tt", "kbd", "var"};
    for (size_t i = 0; i < sizeof TAGS / sizeof TAGS[0]; i++)
        if (strlen(TAGS[i]) == n && strncasecmp(TAGS[i], s, n) == 0) return 1;
    return 0;
}

static int name_byte(unsigned char c)
{
    return c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' || c == ':';
}

/* Skip from '<' at i past the construct it opens, for those that hold no tags: a
 * comment, a CDATA section, a processing instruction or a declaration. Returns the byte
 * after it (len when unterminated), or i when i opens a tag. */
static size_t skip_markup(const char *s, size_t len, size_t i)
{
    static const struct { const char *open, *close; } kinds[] = {
        {"<!--", "-->"}, {"<![CDATA[", "]]>"}, {"<?", "?>"}, {"<!", ">"}};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        size_t n = strlen(kinds[k].open);
        if (len - i < n || memcmp(s + i, kinds[k].open, n) != 0) continue;
        size_t m = strlen(kinds[k].close);
        for (size_t j = i + n; j + m <= len; j++)
            if (memcmp(s + j, kinds[k].close, m) == 0) return j + m;
        return len;
    }
    return i;
}

/* At i (just past '<' of a start tag whose name is [n0, n1)), the end of the start tag:
 * the byte after its '>' (*self: it ends "/>"), or 0 when the tag is not closed. */
static size_t tag_end(const char *s, size_t len, size_t i, int *self)
{
    char q = 0;
    for (; i < len; i++) {
        if (q) {
            if (s[i] == q) q = 0;
        } else if (s[i] == '"' || s[i] == '\'') {
            q = s[i];
        } else if (s[i] == '>') {
            *self = s[i - 1] == '/';
            return i + 1;
        } else if (s[i] == '<') {
            return 0;
        }
    }
    return 0;
}

/* The leaf element whose start tag ends at t (name [n0, n1)): 1 with its trimmed text's
 * bytes [*v0, *v1) (non-empty) and the byte after its end tag in *after. */
static int leaf_text(const char *s, size_t len, size_t n0, size_t n1, size_t t, size_t *v0,
                     size_t *v1, size_t *after)
{
    size_t i = t;
    while (i < len && s[i] != '<' && s[i] != '\n') i++;
    size_t n = n1 - n0;
    if (i + 3 + n > len || s[i] != '<' || s[i + 1] != '/' || memcmp(s + i + 2, s + n0, n) != 0)
        return 0;
    size_t c = i + 2 + n;
    while (c < len && (s[c] == ' ' || s[c] == '\t')) c++;
    if (c >= len || s[c] != '>') return 0;
    size_t a = t, b = i;
    while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r')) a++;
    while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r')) b--;
    if (a == b) return 0;
    *v0 = a;
    *v1 = b;
    *after = c + 1;
    return 1;
}

int dg_xml_leaf_at(const char *s, size_t len, size_t i, size_t *n1, size_t *v0, size_t *v1,
                   size_t *after)
{
    if (i + 1 >= len || s[i] != '<' || !isalpha((unsigned char)s[i + 1])) return 0;
    size_t e = i + 1;
    while (e < len && name_byte((unsigned char)s[e])) e++;
    int self = 0;
    size_t t = tag_end(s, len, e, &self);
    if (!t || self || !leaf_text(s, len, i + 1, e, t, v0, v1, after)) return 0;
    *n1 = e;
    return 1;
}

/* The leaves of the text in document order (*out, owned; *n), with their depths.
 * Returns 0 or -1 on out of memory. */
#define DG_XML_STACK 64 /* open elements whose names are kept (deeper: no parent) */

/* The local name of the element whose name is bytes [n0, n1): after a "prefix:". */
static size_t local_name(const char *s, size_t n0, size_t n1)
{
    const char *colon = memchr(s + n0, ':', n1 - n0);
    return colon ? (size_t)(colon - s) + 1 : n0;
}

static int scan(const char *s, size_t len, leaf **out, size_t *n)
{
    size_t cap = 0, i = 0, open[DG_XML_STACK][2];
    long depth = 0;
    int text = 0; /* text precedes the tag on its line: an inline element */
    *out = NULL;
    *n = 0;
    while (i < len) {
        const char *lt = memchr(s + i, '<', len - i);
        if (!lt) break;
        for (; i < (size_t)(lt - s); i++)
            text = s[i] == '\n' ? 0 : text || !(s[i] == ' ' || s[i] == '\t' || s[i] == '\r');
        size_t j = skip_markup(s, len, i);
        if (j != i) {
            i = j;
            continue;
        }
        if (i + 1 < len && s[i + 1] == '/') { /* an end tag */
            if (depth > 0) depth--;
            i += 2;
            continue;
        }
        size_t n0 = i + 1, n1, v0, v1, after;
        if (!text && dg_xml_leaf_at(s, len, i, &n1, &v0, &v1, &after)) {
            if (DG_GROW(*out, cap, *n + 1) != DEG_OK) return -1;
            size_t k0 = local_name(s, n0, n1), p0 = 0, p1 = 0;
            if (depth > 0 && depth <= DG_XML_STACK) {
                p0 = open[depth - 1][0];
                p1 = open[depth - 1][1];
            }
            leaf *L = &(*out)[(*n)++];
            *L = (leaf){k0, n1, v0, v1, p0, p1, depth, 0, ""};
            /* HTML's markup is no key, but for a page's (or a feed's) <title> */
            if (!dg_html_tag(s + k0, n1 - k0) || (n1 - k0 == 5 && !strncasecmp(s + k0, "title", 5)))
                dg_key_norm(s + k0, n1 - k0, L->key, sizeof L->key);
            i = after;
            continue;
        }
        n1 = n0;
        while (n1 < len && name_byte((unsigned char)s[n1])) n1++;
        int self = 0;
        size_t t = n1 > n0 ? tag_end(s, len, n1, &self) : 0;
        if (!t) {
            i++;
            continue;
        }
        if (!self) {
            if (depth < DG_XML_STACK) {
                open[depth][0] = local_name(s, n0, n1);
                open[depth][1] = n1;
            }
            depth++;
        }
        i = t;
    }
    return 0;
}

static int by_key(const void *a, const void *b)
{
    const leaf *x = *(leaf *const *)a, *y = *(leaf *const *)b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->depth > y->depth) - (x->depth < y->depth);
}

int dg_keylines_xml(const char *ctx, size_t len, dg_keylines *ix, size_t *cap)
{
    if (!memchr(ctx, '<', len)) return 0;
    leaf *L, **by = NULL;
    size_t n, b = 0, cp = 0;
    if (scan(ctx, len, &L, &n) < 0) return -1;
    if (n && !(by = malloc(n * sizeof *by))) {
        free(L);
        return -1;
    }
    /* keep each key's shallowest elements: sorted by key, then depth */
    for (size_t a = 0; a < n; a++) by[a] = &L[a];
    if (n > 1) qsort(by, n, sizeof *by, by_key);
    for (size_t a = 0; a < n; a++)
        by[a]->keep = by[a]->key[0] &&
                      (a == 0 || strcmp(by[a - 1]->key, by[a]->key) != 0 ||
                       (by[a - 1]->keep && by[a - 1]->depth == by[a]->depth));
    free(by);
    int rc = 0;
    for (size_t a = 0; a < n && rc == 0; a++) {
        if (!L[a].key[0]) continue;
        if (L[a].keep)
            rc = dg_keylines_add_on(ctx, &b, &cp, ctx + L[a].k0, L[a].k1 - L[a].k0, L[a].v0,
                                    L[a].v1, ix, cap);
        /* "parent key" ("parent version", "license name"), for an exact name only: a
         * field `parent_version` reads the parent's <version>, `name` not a license's */
        if (rc == 0 && L[a].p1 > L[a].p0)
            rc = dg_keylines_add_qualified(ctx, &b, &cp, ctx + L[a].p0, L[a].p1 - L[a].p0,
                                           ctx + L[a].k0, L[a].k1 - L[a].k0, L[a].v0, L[a].v1,
                                           ix, cap);
    }
    free(L);
    return rc;
}
