/* Strict UTF-8 (RFC 3629 / Unicode 15, table 3-7 "well-formed byte
 * sequences"): no overlong forms, no surrogates (U+D800..U+DFFF), nothing
 * above U+10FFFF, no stray continuation bytes, no truncated sequences. */
#ifndef DG_BASE_UTF8_H
#define DG_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* 1 if buf[0..len) is well-formed UTF-8, else 0 with *bad_offset (may be
 * NULL) = byte offset of the first byte of the first ill-formed sequence. */
int dg_utf8_validate(const char *buf, size_t len, size_t *bad_offset);

/* Decode one code point at s[0..len): returns its byte length (1..4) and sets
 * *cp, or 0 if the sequence there is ill-formed or truncated. */
int dg_utf8_decode(const char *s, size_t len, uint32_t *cp);

/* Length of buf[0..len) without a final sequence cut short by the end of the
 * buffer: len minus the bytes of a final lead byte plus fewer continuation
 * bytes than it needs (bytes a longer buffer could complete into one well-formed
 * character), else len. Nothing else is judged: the prefix may still be
 * ill-formed elsewhere (dg_utf8_validate). Used where decoding stops at a
 * token boundary inside a character (an x-generate budget, deg contract §12.3). */
size_t dg_utf8_complete_len(const char *buf, size_t len);

/* Code points in buf[0..len) of well-formed UTF-8 (bytes that are not
 * continuation bytes). */
size_t dg_utf8_count(const char *buf, size_t len);

/* Is cp a character inside a word, for word boundaries of scripts that
 * separate words with spaces: ASCII letters and digits, and non-ASCII
 * characters except Latin-1 punctuation and symbols (U+0080..U+00BF but the
 * ordinal and micro letters ª µ º, U+00D7, U+00F7), General Punctuation
 * through Miscellaneous Symbols and Arrows (U+2000..U+2BFF), and the
 * characters of scripts written without spaces between words (CJK radicals
 * through Unified Ideographs U+2E80..U+9FFF with kana and CJK punctuation,
 * compatibility ideographs U+F900..U+FAFF, half/fullwidth forms
 * U+FF00..U+FFEF, Thai and Lao U+0E00..U+0EFF, Myanmar U+1000..U+109F, Khmer
 * U+1780..U+17FF): each of those is a word boundary on both sides. No Unicode
 * tables: a rule for span edges (fill_extract.c), not a tokenizer. */
int dg_utf8_is_word(uint32_t cp);

/* Encode cp (<= U+10FFFF, not a surrogate) into out[0..4): returns the byte
 * length, or 0 if cp is not a Unicode scalar value. */
int dg_utf8_encode(uint32_t cp, char out[4]);

/* buf[0..len) as well-formed UTF-8: every maximal subpart of an ill-formed
 * sequence (Unicode 15 section 3.9, "U+FFFD Substitution of Maximal
 * Subparts"; what Python's bytes.decode(errors="replace") does) becomes
 * U+FFFD. Returns a malloc'd NUL-terminated string (its length in *out_len,
 * may be NULL), or NULL when out of memory. */
char *dg_utf8_lossy(const char *buf, size_t len, size_t *out_len);

#endif
