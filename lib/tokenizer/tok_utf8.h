/* Strict UTF-8 checks for the tokenizer (Unicode table 3-7: no overlong
 * forms, no surrogates, nothing above U+10FFFF, no stray continuation bytes,
 * no truncated sequences). Local to lib/tokenizer until lib/base/utf8.h
 * provides dg_utf8_validate; then these become thin wrappers. */
#ifndef DG_TOKENIZER_TOK_UTF8_H
#define DG_TOKENIZER_TOK_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* 1 if s[0..len) is well-formed, else 0 with *bad = offset of the first
 * byte of the first ill-formed sequence. */
int dg_tok_utf8_validate(const char *s, size_t len, size_t *bad);
/* Decode one well-formed code point: its length (1..4), 0 if ill-formed. */
int dg_tok_utf8_decode(const char *s, size_t len, uint32_t *cp);

#endif
