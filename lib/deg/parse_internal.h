/* parse_internal.h - helpers shared by the parsers' own files (parse.c, parse_number.c). */
#ifndef DG_DEG_PARSE_INTERNAL_H
#define DG_DEG_PARSE_INTERNAL_H

#include <stddef.h>

/* ASCII digit / letter (the parsers read only ASCII digits: parse.h). */
static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Trim Unicode whitespace (dg_parse_is_space) at both ends of [*s, *s + *n). */
void dg_parse_trim_ws(const char **s, size_t *n);

#endif
