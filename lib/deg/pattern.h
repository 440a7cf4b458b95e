/* pattern.h - JSON Schema `pattern` compilation: the one meaning deg gives a pattern,
 * shared by the compiler's check (schema_check.c), the validator (validate.c) and the
 * generate-phase acceptor (acceptor.c), so they agree on what a pattern matches.
 *
 * Dialect: UTF-8 code points (PCRE2_UTF, the pattern's UTF-8 checked by PCRE2),
 * Unicode-aware \d \w \s \b and POSIX classes (PCRE2_UCP, as Python `re` on str),
 * JavaScript-style \uXXXX and \u{hhhh} escapes (PCRE2_ALT_BSUX, PCRE2_EXTRA_ALT_BSUX:
 * JSON Schema patterns are ECMA-262 regular expressions, JSON Schema 2020-12
 * validation §6.3.3).
 */
#ifndef DG_DEG_PATTERN_H
#define DG_DEG_PATTERN_H

#include "base/regex.h"

#define DG_PATTERN_PCRE2_OPTIONS (PCRE2_UTF | PCRE2_UCP | PCRE2_ALT_BSUX)
#define DG_PATTERN_PCRE2_EXTRA_OPTIONS (PCRE2_EXTRA_ALT_BSUX)
/* Longest pattern accepted, in bytes: bounds compile time and memory. */
#define DG_PATTERN_MAX_BYTES 65536

/* Compile a pattern (len bytes) in deg's dialect, JIT-compiled with jit_opts (0 =
 * none). Returns the code (pcre2_code_free) or NULL with *err filled (dg_regex_compile). */
static inline pcre2_code *dg_pattern_compile(const char *pattern, size_t len, uint32_t jit_opts,
                                             dg_regex_error *err)
{
    return dg_regex_compile(pattern, len, DG_PATTERN_PCRE2_OPTIONS,
                            DG_PATTERN_PCRE2_EXTRA_OPTIONS, jit_opts, err);
}

#endif
