/* Whole saves of a set of files committed by one manifest (issue 19): each
 * data file is kept as "<file>.prev" (a hard link) before it is replaced, the
 * manifest (deg.json, fleet.json) names every data file by SHA-256 and its
 * atomic rename is the one commit point, then the .prev files are dropped.
 * A save killed before the manifest leaves the old manifest, some new data
 * files and their .prev (the old ones): the loader takes, for each file, the
 * version the manifest names (dg_prev_pick), so the old set loads whole; the
 * next load or save with the directory lock held puts .prev back
 * (dg_prev_settle). Protocol for a save, under dg_dir_lock of the directory:
 * dg_prev_settle(f, pick) for files a killed save left, dg_prev_keep(f),
 * write f atomically, dg_file_sha256(f) into the manifest, write the
 * manifest atomically, dg_prev_drop(f). File systems without hard links get
 * no .prev: a torn save is then refused at load by the hash (FormatError)
 * instead of recovered. */
#ifndef DG_BASE_PREVSAVE_H
#define DG_BASE_PREVSAVE_H

#include <nettle/sha2.h>

#include "deg.h"

/* Feed the bytes of the file at path to ctx. Errors: DEG_ERR_IO, NOMEM. */
deg_status dg_sha256_file_update(const char *path, struct sha256_ctx *ctx);
/* Lower-case hex of n bytes into out (2n + 1 chars). */
void dg_hex(const uint8_t *d, size_t n, char *out);
/* SHA-256 hex of a whole file. Errors: DEG_ERR_IO, NOMEM. */
deg_status dg_file_sha256(const char *path, char out[65]);

/* "<path>.prev" (malloc'd; NULL on OOM). */
char *dg_prev_path(const char *path);
/* Keep the current path as path.prev (replacing an older .prev); no-op when
 * path does not exist or the file system has no hard links. Call with the
 * directory's lock held. Errors: DEG_ERR_IO, NOMEM. */
deg_status dg_prev_keep(const char *path);
/* Which version of path the manifest names: want_sha (64 hex) NULL (old
 * manifests without hashes) -> path; else path if its hash is want_sha,
 * else path.prev if its hash is, else DEG_ERR_FORMAT naming both hashes.
 * *use_prev = 1 when path.prev is the one. who prefixes the message. */
deg_status dg_prev_pick(const char *path, const char *want_sha, const char *who, int *use_prev);
/* With the directory's lock held: rename path.prev over path (use_prev) or
 * remove path.prev. */
void dg_prev_settle(const char *path, int use_prev);
/* Remove path.prev (after the manifest is in place). */
void dg_prev_drop(const char *path);

#endif
