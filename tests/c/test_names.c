/* The span_whole_names decoding rule (lib/deg/names.h): a span of capitalised words
 * grows to the whole name, by hand-written cases. */
#include <criterion/criterion.h>
#include <string.h>

#include "deg/names.h"

/* Grow the first occurrence of `part` in `s`; the text it grows to, or "" when it
 * does not grow. */
static const char *grown(const char *s, const char *part)
{
    static char out[256];
    const char *p = strstr(s, part);
    cr_assert(p, "%s in %s", part, s);
    size_t b0 = (size_t)(p - s), b1 = b0 + strlen(part);
    out[0] = 0;
    if (dg_name_extend(s, strlen(s), &b0, &b1)) {
        cr_assert_lt(b1 - b0, sizeof out);
        memcpy(out, s + b0, b1 - b0);
        out[b1 - b0] = 0;
    }
    return out;
}

Test(names, spans_grow_to_the_whole_name)
{
    static const char *const C[][3] = {
        /* text, span, grown ("" = unchanged) */
        {"Speaker: Bruno Eriksen (bruno@example.com).", "Bruno", "Bruno Eriksen"},
        {"Speaker: Ana Kowalski (ana@example.net).", "Kowalski", "Ana Kowalski"},
        {"Speaker: Hugo Novak. Speaker: Ana", "Hugo", "Hugo Novak"},
        {"Copyright 1999 Ian A. Murdock <imurdock@debian.org>", "A. Murdock", "Ian A. Murdock"},
        {"Copyright 1999 Ian A. Murdock <x>", "Murdock", "Ian A. Murdock"},
        {"Author: Jean-Luc O'Brien, 2001", "O'Brien", "Jean-Luc O'Brien"},
        /* not "von" */
        {"von J\xc3\xbcrgen M\xc3\xbcller.", "M\xc3\xbcller", "J\xc3\xbcrgen M\xc3\xbcller"},
        {"Bisha Koobaad;Bisha Labaad", "Koobaad", "Bisha Koobaad"},
        {"Join us in Porto. Bruno Eriksen speaks", "Bruno", "Bruno Eriksen"}, /* not "Porto." */
        {"the city of Graz for 3,325 per month", "Graz", ""},
        {"Speaker:  Bruno  Eriksen", "Bruno", ""}, /* single spaces only */
        {"Name\tBruno Eriksen", "Bruno", "Bruno Eriksen"}, /* a TAB is no joining space */
        {"bruno eriksen", "bruno", ""},                    /* no capitals: no name */
        {"Bruno eriksen Smith", "Bruno", ""},
        {"A B C D E F G H", "D", "A B C D E F"}, /* at most DG_NAME_MAX_WORDS words */
        {"Rosa Petrov (rosa@x)", "Rosa Petrov", ""},
        {"(Hugo Novak)", "Hugo", "Hugo Novak"},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++)
        cr_assert_str_eq(grown(C[i][0], C[i][1]), C[i][2], "%s: %s", C[i][0], C[i][1]);
}
