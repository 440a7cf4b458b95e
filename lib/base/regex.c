/* PCRE2 compilation with one error report (regex.h). */
#include "base/regex.h"

#include <string.h>

pcre2_code *dg_regex_compile(const char *pattern, size_t len, uint32_t opts, uint32_t extra,
                             uint32_t jit_opts, dg_regex_error *err)
{
    memset(err, 0, sizeof *err);
    pcre2_compile_context *cc = NULL;
    if (extra) {
        cc = pcre2_compile_context_create(NULL);
        if (!cc) {
            err->code = PCRE2_ERROR_NOMEMORY;
            pcre2_get_error_message(err->code, (PCRE2_UCHAR *)err->msg, sizeof err->msg);
            return NULL;
        }
        pcre2_set_compile_extra_options(cc, extra);
    }
    PCRE2_SIZE off = 0;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &err->code, &off, cc);
    pcre2_compile_context_free(cc);
    if (!re) {
        err->offset = (size_t)off;
        pcre2_get_error_message(err->code, (PCRE2_UCHAR *)err->msg, sizeof err->msg);
        return NULL;
    }
    err->code = 0;
    if (jit_opts) (void)pcre2_jit_compile(re, jit_opts); /* no JIT: the interpreter */
    return re;
}
