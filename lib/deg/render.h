/* render.h - JSON text exactly as Python's json.dumps writes it (deg contract §7.1).
 *
 * The context is rendered once with separators ", " / ": ", the given key order and
 * ensure_ascii=False; canonical specs for fingerprints use sorted keys and ","/":".
 * Numbers follow Python: integers exact, floats as repr() (shortest round-trip digits,
 * exponent form when the decimal exponent is < -4 or >= 16: 1e-05, 1e+16, 0.1, 100.0).
 * Strings escape only '"', '\\', and control characters below U+0020 (\n \r \t \b \f,
 * else \u00XX in lowercase hex), as json.dumps(ensure_ascii=False) does.
 */
#ifndef DG_DEG_RENDER_H
#define DG_DEG_RENDER_H

#include <jansson.h>
#include <stddef.h>

#include "deg.h"

enum {
    DG_RENDER_SORT_KEYS = 1, /* keys in code point order (sort_keys=True) */
    DG_RENDER_COMPACT = 2    /* separators (",", ":") instead of (", ", ": ") */
};

/* Render a JSON value; returns a malloc'd NUL-terminated string (free()), or NULL with
 * dg_fail set (DEG_ERR_NOMEM, DEG_ERR_NUMERIC for NaN/Inf, DEG_ERR_RANGE when nested
 * deeper than DG_RENDER_MAX_DEPTH). */
#define DG_RENDER_MAX_DEPTH 512
char *dg_json_render(const json_t *value, int flags);

/* As dg_json_render, but a string value "\0dgbig:<i>" (a placeholder left by
 * dg_json_parse_bigint for an integer beyond 64 bits) is written as raw[i], the
 * integer's digits as they appeared in the text. raw may be NULL. */
char *dg_json_render_raw(const json_t *value, int flags, const json_t *raw);
/* Prefix of those placeholders (NUL + "dgbig:"), and its length. */
#define DG_BIGINT_MARK "\0dgbig:"
#define DG_BIGINT_MARK_LEN 7

/* Python repr() of a finite double into buf (at least 32 bytes); returns length. */
int dg_float_repr(double x, char *buf, size_t cap);

#endif
