/* names.h - a name is not cut: the span_whole_names decoding rule (deg_fill.h: a
 * plain-string span made of capitalised words takes the capitalised words next to
 * it).
 *
 * Why: an unsure start or end pointer stops inside a person's or a thing's name:
 * "Bruno" of "Speaker: Bruno Eriksen (bruno@...)", "A. Murdock" of "Ian A. Murdock",
 * "Koobaad" of the Somali month "Bisha Koobaad", "The OpenSSL Project" of "The
 * OpenSSL Project Authors". Simulated on v13's responses (libdeg 0.17.0): on the four
 * development sets 5 plain spans became right and none wrong; on datagen-v2's
 * test100 5 right (event speakers), none wrong; on the held-out real documents none
 * changed value for the better or the worse (1 wrong value stayed wrong).
 *
 * The rule, on bytes: a capitalised word is an ASCII capital followed by letters
 * (ASCII, or any byte of a multi-byte UTF-8 character), '\'' or '-' ("Eriksen",
 * "O'Brien", "Jean-Luc", "Müller"), or an initial (one ASCII capital and a '.':
 * "A."). A span whose text is capitalised words joined by single spaces grows, on
 * each side, over one space and the whole capitalised word beyond it, as long as
 * there is one; on the right a word may be followed by one of . , ; : ) ! ? (not
 * taken). A word that ends a sentence ("Porto.") is no initial, so the span never
 * grows over a sentence end; at most DG_NAME_MAX_WORDS words in all. */
#ifndef DG_DEG_NAMES_H
#define DG_DEG_NAMES_H

#include <stddef.h>

#define DG_NAME_MAX_WORDS 6

/* Grow span [*b0, *b1) (bytes of s, n bytes, valid UTF-8) by the rule above;
 * 1 when it grew, else 0 (spans). */
int dg_name_extend(const char *s, size_t n, size_t *b0, size_t *b1);

#endif
