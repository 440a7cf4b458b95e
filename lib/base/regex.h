/* regex.h - PCRE2 compilation: the one place libdeg compiles a regular expression
 * (JSON Schema patterns, the format checks' built-in expressions, tokenizer
 * pre-tokenizers) and JIT-compiles it.
 *
 * Include after defining PCRE2_CODE_UNIT_WIDTH 8 (this header does it if unset).
 * Options are PCRE2's own (pcre2_compile(3), pcre2_set_compile_extra_options(3),
 * pcre2_jit_compile(3)); each caller keeps its dialect's options beside its use.
 */
#ifndef DG_BASE_REGEX_H
#define DG_BASE_REGEX_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

/* Why a compile failed: PCRE2's error code (PCRE2_ERROR_NOMEMORY when memory ran
 * out), its message, and the byte offset in the pattern where it stopped. */
typedef struct dg_regex_error {
    int code;
    size_t offset;
    char msg[256];
} dg_regex_error;

/* Compile pattern[0..len) (len may be PCRE2_ZERO_TERMINATED) as UTF-8 code units with
 * compile options opts and extra options extra (0 = none), then JIT-compile it with
 * jit_opts (0 = no JIT; where the platform has no JIT, matching uses the
 * interpreter, with the same results). Returns the code (free with pcre2_code_free),
 * or NULL with *err filled. */
pcre2_code *dg_regex_compile(const char *pattern, size_t len, uint32_t opts, uint32_t extra,
                             uint32_t jit_opts, dg_regex_error *err);

#endif
