/* keyline_json.c - JSON members as key lines: the objects members open ("author": {),
 * a nested member's "PARENT KEY" line, the least nested of members named alike, and
 * nested members read by exact names (keyprior.h; libdeg 0.26.0, 0.27.0). */
#include <stdlib.h>
#include <string.h>

#include "deg/keyprior.h"

/* By key, then JSON depth. */
static int by_key_depth(const void *a, const void *b)
{
    const dg_keyline *p = a, *q = b;
    int c = strcmp(p->key, q->key);
    if (c) return c;
    return (p->json_depth > q->json_depth) - (p->json_depth < q->json_depth);
}

/* Of the JSON members named alike, only the least nested stay key lines, as XML
 * elements' (keyline_xml.c): package.json's own "name", not its "author": {"name": ...}
 * (bench/devreal set 7 read "Julian Gruber" for `name`); the nested ones stay readable
 * as "PARENT KEY". Lines are reordered by key here; the caller sorts them back. */
void dg_keylines_json_least_nested(dg_keylines *ix)
{
    if (ix->n < 2) return;
    qsort(ix->p, ix->n, sizeof *ix->p, by_key_depth);
    size_t o = 0, min = 0;
    for (size_t i = 0; i < ix->n; i++) {
        const dg_keyline *kv = &ix->p[i];
        int first = i == 0 || strcmp(kv->key, ix->p[i - 1].key) != 0;
        if (first) min = 0;
        if (kv->json_depth && !kv->exact_only) {
            if (min && kv->json_depth > min) continue; /* a deeper one of this key */
            if (!min) min = kv->json_depth;
        }
        ix->p[o++] = *kv;
    }
    ix->n = o;
}

/* A JSON member below the document's top members is its parent's: read by its exact name
 * (its "PARENT KEY" line says the whole fact), so a repository's "url" is no `homepage` by
 * the vocabulary (libdeg 0.27.0; bench/devreal set 10). After the sort by position: the
 * order of one value's lines (plain, then qualified) stays. */
void dg_keylines_json_nested_exact(dg_keylines *ix)
{
    size_t top = 0;
    for (size_t i = 0; i < ix->n; i++)
        if (ix->p[i].json_depth && !ix->p[i].exact_only && (!top || ix->p[i].json_depth < top))
            top = ix->p[i].json_depth;
    for (size_t i = 0; i < ix->n; i++)
        if (ix->p[i].json_depth > top) ix->p[i].exact_only = 1;
}

/* Line [b, e) closes levels with the '}' / ']' it opens with ("}", "},", "}, {") and
 * opens one when it ends with '{' or '[' (a member "key": { names it). */
void dg_json_nest_line(dg_json_nest *J, const char *s, size_t b, size_t e)
{
    size_t i = b, j = e, k0, k1, colon;
    while (j > i && strchr(" \t\r,", s[j - 1])) j--;
    while (i < j && strchr(" \t,}]", s[i])) {
        if ((s[i] == '}' || s[i] == ']') && J->n > 0) J->n--;
        i++;
    }
    if (i >= j || (s[j - 1] != '{' && s[j - 1] != '[')) return;
    size_t at = J->n++;
    if (at >= DG_JSON_DEPTH) return;
    J->k0[at] = J->k1[at] = 0;
    if (s[j - 1] == '{' && dg_json_member_split(s, i, e, &k0, &k1, &colon)) {
        J->k0[at] = k0;
        J->k1[at] = k1;
    }
}

/* A JSON member line (key [k0, k1), value [v0, v1); line start byte b = code point cp)
 * inside an object a member opened is also the key line "PARENT KEY", for exact names
 * only (dg_keylines_add_qualified): package.json's "author": {"email": ...} is "author
 * email", "repository": {"url": ...} "repository url"; a field `email` does not read a
 * contributor's. */
int dg_json_parent_key(const char *ctx, const dg_json_nest *J, size_t b, size_t cp,
                       size_t k0, size_t k1, size_t v0, size_t v1, dg_keylines *ix, size_t *cap)
{
    if (J->n == 0 || J->n > DG_JSON_DEPTH || J->k1[J->n - 1] == J->k0[J->n - 1]) return 0;
    size_t p0 = J->k0[J->n - 1];
    return dg_keylines_add_qualified(ctx, &b, &cp, ctx + p0, J->k1[J->n - 1] - p0, ctx + k0,
                                     k1 - k0, v0, v1, ix, cap);
}
