/* sentences.h - where running text ends a sentence: the one rule behind the
 * span_single_sentence decoding rule (deg_fill.h: a plain-string leaf outside
 * arrays never reads across a sentence end) and the list prior's split of a prose
 * line into "Key: value" sentences (lists.c).
 *
 * Why: on prose the end pointer of an unsure short field runs on into the next
 * sentences ("Graz for 3,325 per month. 150 m2. Sorry, no pets." for a city); of
 * v13's plain spans on the development sets that held a sentence end, 25 of 26
 * were wrong, while 14 of 5,230 gold plain leaves outside arrays of union10 hold
 * one (first lines of docstrings: "Split a pathname.  Returns tuple ...").
 *
 * The rule: byte b of s, a '.', '!' or '?', ends a sentence when one or more
 * blanks (space, TAB, CR, LF) follow it and then an uppercase letter (ASCII A-Z,
 * Latin-1, Greek and Cyrillic capitals); a '.'
 * right after a single letter ("Ian A. Murdock", "e.g. Foo", "U.S. Army") or
 * after a capitalised word of at most 3 letters ("Dem. Rep. of Congo", "Mr. X",
 * "Inc. Foo") is an abbreviation, not an end. */
#ifndef DG_DEG_SENTENCES_H
#define DG_DEG_SENTENCES_H

#include <stddef.h>

/* 1 when byte b of s (n bytes, valid UTF-8) ends a sentence by the rule above,
 * else 0 (b >= n, or not one of . ! ?). */
int dg_sentence_end(const char *s, size_t n, size_t b);

#endif
