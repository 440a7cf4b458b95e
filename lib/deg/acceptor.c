/* Constrained-decoding acceptor (rules in acceptor.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "deg/acceptor.h"

#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "deg/parse.h"
#include "deg/pattern.h"

struct deg_acceptor {
    pcre2_code *code;          /* NULL = no pattern */
    pcre2_match_data *md;
    pcre2_match_context *mc;
    size_t min_len, max_len;
    int anchored;              /* every match must start at offset 0 (^, \A) */
};

DEG_API deg_status deg_acceptor_new(const char *pattern, size_t min_length, size_t max_length,
                                    deg_acceptor **out)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_acceptor_new: NULL out");
    *out = NULL;
    if (min_length > max_length)
        return dg_fail(DEG_ERR_RANGE, "deg_acceptor_new: minLength %zu > maxLength %zu", min_length, max_length);
    deg_acceptor *a = calloc(1, sizeof *a);
    if (!a) return dg_fail(DEG_ERR_NOMEM, "deg_acceptor_new: out of memory");
    a->min_len = min_length;
    a->max_len = max_length;
    if (pattern) {
        size_t pl = strlen(pattern);
        deg_status st = dg_parse_utf8_check(pattern, pl, "pattern", NULL);
        if (st != DEG_OK) { free(a); return st; }
        if (pl > DG_PATTERN_MAX_BYTES) {
            free(a);
            return dg_fail(DEG_ERR_SCHEMA, "pattern of %zu bytes is longer than the %d-byte limit", pl,
                           DG_PATTERN_MAX_BYTES);
        }
        dg_regex_error e;
        a->code = dg_pattern_compile(pattern, pl, PCRE2_JIT_COMPLETE | PCRE2_JIT_PARTIAL_HARD, &e);
        if (!a->code) {
            free(a);
            if (e.code == PCRE2_ERROR_NOMEMORY)
                return dg_fail(DEG_ERR_NOMEM, "deg_acceptor_new: out of memory");
            return dg_fail(DEG_ERR_SCHEMA, "pattern does not compile: %s at offset %zu", e.msg, e.offset);
        }
        uint32_t opts = 0;
        pcre2_pattern_info(a->code, PCRE2_INFO_ALLOPTIONS, &opts);
        a->anchored = (opts & PCRE2_ANCHORED) != 0;
        a->md = pcre2_match_data_create(1, NULL);
        a->mc = pcre2_match_context_create(NULL);
        if (!a->md || !a->mc) { deg_acceptor_free(a); return dg_fail(DEG_ERR_NOMEM, "deg_acceptor_new: out of memory"); }
        /* Bound backtracking: a pathological pattern fails the check
         * instead of hanging the generator. */
        pcre2_set_match_limit(a->mc, 10000000);
    }
    *out = a;
    return DEG_OK;
}

DEG_API void deg_acceptor_free(deg_acceptor *a)
{
    if (!a) return;
    pcre2_code_free(a->code);
    pcre2_match_data_free(a->md);
    pcre2_match_context_free(a->mc);
    free(a);
}

/* Code points of [s, s+n) if valid UTF-8 except possibly a truncated final
 * sequence (*trunc = 1; it counts as one). (size_t)-1 if invalid. */
static size_t count_cps(const char *s, size_t n, int *trunc)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, k = 0;
    *trunc = 0;
    while (i < n) {
        if (u[i] < 0x80) { i++; k++; continue; }
        size_t j = i;
        if (dg_parse_utf8_next(s, n, &j) >= 0) { i = j; k++; continue; }
        /* truncated at the end? a valid lead byte followed only by
         * continuation bytes up to n, fewer than needed */
        unsigned c = u[i];
        size_t need = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        if (!need || i + need <= n) return (size_t)-1;
        for (size_t q = i + 1; q < n; q++)
            if ((u[q] & 0xC0) != 0x80) return (size_t)-1;
        *trunc = 1;
        return k + 1;
    }
    return k;
}

DEG_API int deg_acceptor_prefix_ok(deg_acceptor *a, const char *text, size_t len)
{
    if (!a || (!text && len)) return 0;
    int trunc;
    size_t k = count_cps(text ? text : "", len, &trunc);
    if (k == (size_t)-1 || k > a->max_len) return 0;
    /* An empty text, or any text when the pattern may start matching
     * later (search semantics: append a match), can still become valid. */
    if (!a->code || len == 0 || !a->anchored) return 1;
    if (trunc) {
        /* Match the complete characters; the pending one is judged when its
         * token completes it (an over-approximation by one character). */
        while (len > 0 && ((unsigned char)text[len - 1] & 0xC0) == 0x80) len--;
        len--; /* the lead byte */
        if (len == 0) return 1;
    }
    int rc = pcre2_match(a->code, (PCRE2_SPTR)text, len, 0, PCRE2_PARTIAL_HARD | PCRE2_NO_UTF_CHECK,
                         a->md, a->mc);
    return rc >= 0 || rc == PCRE2_ERROR_PARTIAL;
}

DEG_API int deg_acceptor_eos_ok(deg_acceptor *a, const char *text, size_t len)
{
    if (!a || (!text && len)) return 0;
    int trunc;
    size_t k = count_cps(text ? text : "", len, &trunc);
    if (k == (size_t)-1 || trunc || k < a->min_len || k > a->max_len) return 0;
    if (!a->code) return 1;
    int rc = pcre2_match(a->code, (PCRE2_SPTR)(text ? text : ""), len, 0, PCRE2_NO_UTF_CHECK, a->md, a->mc);
    return rc >= 0;
}
