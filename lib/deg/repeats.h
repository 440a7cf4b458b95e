/* repeats.h - where generated text starts repeating itself or its prompt: the one
 * rule behind the generate_stop_repeat decoding rule (deg_fill.h: an x-generate
 * value ends before the first line that repeats an earlier one or a prompt line).
 *
 * Why: greedy decoding of a small model falls into loops on short fields
 * ("RENICE(1)\n\nRENICE(1)\n\nRENICE(1)..." for a one-line summary; "Debian
 * changes file format\n\nDebian changes file format..."). SmolLM2-135M, on 40
 * x-generate fields of datagen-v2's val split in the fill layout, repeated a line
 * in 12; ending each at its first repeat raised the mean word-F1 against the gold
 * text from 0.300 to 0.340 and changed no text without a repeat. The model also
 * echoes its prompt's lines ("LIMITS: maxLength 200;", "DESCRIPTION: a one-line
 * summary of what the command does", a KNOWN VALUES line "/function_name =
 * \"newer\""): 4 of the same 40 fields after the loops were cut. Cut there
 * (values 0.258 -> 0.247 word F1), two echoes that opened the text left "",
 * where the echoed KNOWN VALUES line held words of the answer; so a prompt line
 * ends the text only after a line of its own (2 leaks cut, word F1 0.258 -> 0.272).
 *
 * The rule: a line is the bytes between two LFs (the first from the text's
 * start), compared with its blanks (space, TAB, CR) trimmed at both ends; blank
 * lines never count. A complete line (one an LF ends) equal to an earlier line
 * of the text, or to a line of the prompt once the text has a non-blank line that
 * is none, repeats; the text is cut before the first such line, and the cut drops the
 * trailing blanks and LFs before it ("A\n\nA\n" -> "A"). */
#ifndef DG_DEG_REPEATS_H
#define DG_DEG_REPEATS_H

#include <stddef.h>

/* Length in bytes of text t (n bytes) cut by the rule above, or n when no complete
 * line repeats an earlier one or a line of prompt (np bytes; NULL when np is 0).
 * O(lines x (lines + prompt lines) x line length); the decode budget and the
 * prompt bound them. */
size_t dg_repeat_cut(const char *t, size_t n, const char *prompt, size_t np);

#endif
