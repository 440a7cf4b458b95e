/* jsonptr.h - JSON pointers (RFC 6901) and local $refs: the one place that escapes,
 * joins, evaluates and resolves them (schema compiler, validator, plan, response, trace).
 *
 * A pointer is "" (the whole document) or a sequence of "/" + segment, where a
 * segment's "~" is written "~0" and its "/" is written "~1" (RFC 6901 §3). A local
 * $ref is "#" + a URI fragment: percent-decoded first, then read as a pointer
 * (RFC 6901 §6, RFC 3986 §2.1). Strings are UTF-8 and NUL-terminated unless a
 * length is given; results marked malloc'd are the caller's to free().
 */
#ifndef DG_DEG_JSONPTR_H
#define DG_DEG_JSONPTR_H

#include <jansson.h>
#include <stddef.h>

/* Bytes the n-byte segment seg takes once escaped ("~" and "/" take two). */
size_t dg_jsonptr_escaped_len(const char *seg, size_t n);
/* Write the escaped segment at dst (room for dg_jsonptr_escaped_len(seg, n) bytes; no
 * NUL is written); returns the byte after the last one written. */
char *dg_jsonptr_escape(char *dst, const char *seg, size_t n);

/* loc + "/" + escaped key, or loc + "/" + decimal index. malloc'd; NULL when out of
 * memory. */
char *dg_loc_key(const char *loc, const char *key);
char *dg_loc_index(const char *loc, size_t i);

/* The value at pointer ptr in root (borrowed from root), or NULL. RFC 6901 §4: an
 * object segment is a member name; an array segment is a decimal index without
 * leading zeros ("0" itself is fine), below the array's size ("-" names nothing).
 * *bad_syntax (if non-NULL) is set to 1 when ptr is not a pointer at all (does not
 * start with "/" and is not "", or "~" not followed by "0" or "1"), to 2 when a
 * segment on an array is not an array index ("-", "01", "x"), else 0. */
const json_t *dg_jsonptr_get(const json_t *root, const char *ptr, int *bad_syntax);

/* Resolve a local $ref ("#" or "#/...") against root. Returns the target, with *tloc
 * = its decoded pointer (malloc'd); or NULL with *tloc = NULL and why (why_cap
 * bytes) saying what is wrong: not local, a plain-name fragment (one that does not
 * start with "/" as written: "#%2Fa" is not a pointer), a byte RFC 3986 §3.5 does not
 * allow in a fragment (a space, '#', non-ASCII: they must be percent-encoded), bad
 * percent-encoding, a decoded fragment that is not UTF-8 or holds NUL, a bad "~"
 * escape, a segment that is not an array index, or a pointer to nothing. */
const json_t *dg_ref_resolve(const json_t *root, const char *ref, char **tloc,
                             char *why, size_t why_cap);

#endif
