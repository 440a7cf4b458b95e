/* lists_xml.c - XML element lines as list items (lists.h "XML"): each element is one item
 * of the list under its name. */
#include <ctype.h>
#include <string.h>

#include "deg/keyprior.h"
#include "deg/lists_scan.h"

static int name_byte(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.';
}

/* Line [b, e) as `<name ...>text</name>` after spaces/tabs (dg_xml_leaf_at): 1 with the
 * name's bytes [*k0, *k1) and the text's [*v0, *v1). */
static int leaf_line(const char *s, size_t b, size_t e, size_t *k0, size_t *k1, size_t *v0,
                     size_t *v1)
{
    while (b < e && (s[b] == ' ' || s[b] == '\t')) b++;
    size_t after;
    if (!dg_xml_leaf_at(s, e, b, k1, v0, v1, &after)) return 0;
    *k0 = b + 1;
    return 1;
}

/* The depth change of line [b, e): start tags (not self-closing, not "<?", "<!") minus
 * end tags. */
static long depth_change(const char *s, size_t b, size_t e)
{
    long d = 0;
    for (size_t i = b; i + 1 < e; i++) {
        if (s[i] != '<') continue;
        if (s[i + 1] == '/') {
            d--;
        } else if (isalpha((unsigned char)s[i + 1])) {
            const char *gt = memchr(s + i, '>', e - i);
            if (!gt || gt[-1] != '/') d++;
        }
    }
    return d;
}

#define DG_XML_BLOCK_LINES 64 /* lines a block element is searched for its identifier */

/* The identifier of the block element whose start tag ends line [b, e): among the leaf
 * lines directly inside it (within DG_XML_BLOCK_LINES lines), the first whose name's
 * last word is "name" or "title", else the last whose last word is "id" (Maven's
 * <dependency>: groupId, then artifactId). 1 with its text's bytes [*v0, *v1).
 * Why: a record element (<dependency>, <license>, <developer>, an RSS <item>) is one
 * item of its list, and its name is what a list of strings asks for; the tag's own name
 * ("dependency") was read instead (bench/devreal set 2, libdeg 0.24.0). */
static int block_id(const char *s, size_t len, size_t e, size_t *v0, size_t *v1)
{
    long depth = 0;
    int have_id = 0;
    size_t b = e + 1;
    for (int n = 0; b < len && n < DG_XML_BLOCK_LINES; n++) {
        size_t le = dg_lscan_line_end(s, len, b), k0, k1, t0, t1;
        if (depth == 0 && leaf_line(s, b, le, &k0, &k1, &t0, &t1)) {
            char key[DG_KEY_MAX_LEN + 1];
            size_t kl = dg_key_norm(s + k0, k1 - k0, key, sizeof key);
            const char *last = strrchr(key, ' ');
            last = last ? last + 1 : key;
            if (!strcmp(last, "name") || !strcmp(last, "title")) {
                *v0 = t0;
                *v1 = t1;
                return 1;
            }
            if (kl && !strcmp(last, "id")) {
                *v0 = t0;
                *v1 = t1;
                have_id = 1;
            }
        } else {
            depth += depth_change(s, b, le);
            if (depth < 0) break; /* the block's end tag */
        }
        b = le + 1;
    }
    return have_id;
}

int dg_lscan_xml_element(const char *s, size_t len, size_t b, size_t e, size_t *k0, size_t *k1,
                         size_t *v0, size_t *v1)
{
    size_t i = b;
    while (i < e && (s[i] == ' ' || s[i] == '\t')) i++;
    if (i + 1 >= e || s[i] != '<' || !isalpha((unsigned char)s[i + 1])) return 0;
    size_t n0 = ++i;
    while (i < e && name_byte((unsigned char)s[i])) i++;
    if (i >= e || (s[i] != ' ' && s[i] != '/' && s[i] != '>') || dg_html_tag(s + n0, i - n0))
        return 0;
    *k0 = n0;
    *k1 = i;
    size_t gt = i;
    while (gt < e && s[gt] != '>') gt++;
    if (gt >= e) return 0;
    size_t t0 = gt + 1, t1 = t0;
    while (t1 < e && s[t1] != '<') t1++;
    if (s[gt - 1] != '/' && t1 + 1 < e && t1 > t0 && s[t1 + 1] == '/') {
        *v0 = t0; /* <name ...>text</name> */
        *v1 = t1;
        return 1;
    }
    size_t q0 = i;
    while (q0 < gt && s[q0] != '"' && s[q0] != '\'') q0++;
    size_t q1 = q0 < gt ? q0 + 1 : gt;
    while (q1 < gt && s[q1] != s[q0]) q1++;
    if (q1 < gt && q1 > q0 + 1) {
        *v0 = q0 + 1;
        *v1 = q1;
        return 1;
    }
    int rest = 0; /* markup after the start tag: not a block opening on its own line */
    for (size_t j = gt + 1; j < e && !rest; j++) rest = s[j] != ' ' && s[j] != '\t' && s[j] != '\r';
    if (s[gt - 1] != '/' && !rest) return block_id(s, len, e, v0, v1);
    *v0 = n0;
    *v1 = i;
    return 1;
}
