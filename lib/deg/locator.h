/* locator.h - the block of a document a field's description points at (libdeg 0.28.0).
 *
 * Why: a document of several paragraphs or sections writes one key in each ("License:"
 * under every "Files:" paragraph, "Version:" under every "Package:" of a dpkg status
 * file, "url" under every [remote] of a git config), and a user tells which one by
 * quoting the line that opens it: "license of the main files (Files: *)", "version of
 * libc6 (Package: libc6)", "the URL of [remote "origin"]". Without the quote's block the
 * key prior gave every paragraph's value the same bonus and the heads chose among them.
 *
 * Rule: the description's quoted texts are read: inside (), "", '', `` or curly
 * quotes, or a bracketed "[name]" as written: a "Key: value" (dg_keyline_split: a key of
 * 1..DG_KEY_MAX_WORDS words, a non-empty value of at most DG_LOCATOR_MAX bytes) or an
 * INI section header "[name]". A quote points at the context line that is that line:
 * the same key (dg_key_norm) and the same value (case-insensitive, blank runs equal), or
 * the same header. When exactly one line of the context is pointed at (by the first
 * quote that points at any), the block runs from that line to the next blank line
 * ("Key: value": a paragraph) or the next line
 * opening with '[' (a section); else there is no block. */
#ifndef DG_DEG_LOCATOR_H
#define DG_DEG_LOCATOR_H

#include <stddef.h>

#define DG_LOCATOR_MAX 80

/* The block of ctx (len bytes, UTF-8) description desc (NUL-terminated, NULL = none)
 * points at (the rule above): 1 with its bytes [*b0, *b1), else 0. */
int dg_locator_block(const char *desc, const char *ctx, size_t len, size_t *b0, size_t *b1);

#endif
