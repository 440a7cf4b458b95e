/* File access: read-only memory maps of whole files (weights are mapped, not
 * copied), atomic writes (temp file in the same directory + fsync + rename, so
 * a reader never sees a half-written file), and a whole-file reader for small
 * text files (JSON configs). Errors are DEG_ERR_IO with the path and
 * strerror(errno) in the message. */
#ifndef DG_BASE_FILEIO_H
#define DG_BASE_FILEIO_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"

/* A read-only, private mapping of a whole file. An empty file maps to
 * data == NULL, size == 0 (valid: format readers report "empty file"). */
typedef struct dg_mapping {
    const uint8_t *data;
    size_t size;
} dg_mapping;

/* Map path read-only. On failure *m is zeroed. Errors: DEG_ERR_IO (open,
 * fstat, not a regular file, mmap). */
deg_status dg_map_file(const char *path, dg_mapping *m);
/* Unmap and zero *m; accepts a zeroed or already-unmapped mapping. */
void dg_unmap(dg_mapping *m);

/* One piece of the content of an atomic write (borrowed). */
typedef struct dg_chunk {
    const void *data;
    size_t len;
} dg_chunk;

/* Write the concatenation of chunks[0..n) to path atomically: the bytes go to
 * a new temporary file "<path>.tmp.XXXXXX" in the same directory, are
 * fsync'ed, and the file is renamed over path (then the directory is
 * fsync'ed). On any failure the temporary file is removed and path is left
 * as it was. The new file gets mode 0644 (minus umask). Errors: DEG_ERR_IO,
 * DEG_ERR_ARG. */
deg_status dg_write_atomic(const char *path, const dg_chunk *chunks, size_t n);

/* Whole saves (issue 19): saves of artifacts in a directory are serialized
 * by an advisory lock, flock() on the directory itself (released by the
 * kernel when the holder dies, so a killed save never leaves it held).
 * dg_dir_lock(dir, 1) waits for it; dg_dir_lock(dir, 0) returns -1 at once
 * when a save holds it. Returns the lock's fd for dg_dir_unlock, or -1 (not
 * taken, also when dir cannot be opened: callers treat it as best effort). */
int dg_dir_lock(const char *dir, int wait);
void dg_dir_unlock(int fd);

/* Directory part of path (malloc'd; "." when there is none; NULL on OOM). */
char *dg_dir_of(const char *path);
/* "dir/name" (malloc'd; NULL on OOM): libdeg's one path join (dir as given: a
 * trailing '/' is not folded, as POSIX resolves "a//b" as "a/b"). */
char *dg_path_join(const char *dir, const char *name);

/* Remove what killed saves of path left next to it: dg_write_atomic's
 * temporaries "<path>.tmp.*". Call only with the directory's lock held (no
 * save is running). Returns the number of files removed. */
size_t dg_remove_stale_temps(const char *path);

/* Read a whole (small) file into a fresh NUL-terminated buffer *out (owned
 * by the caller, free()) of *len bytes (len excludes the NUL; may be NULL).
 * Files larger than max_bytes are rejected with DEG_ERR_RANGE (guards
 * against reading a weight file as a config). Errors: DEG_ERR_IO,
 * DEG_ERR_RANGE, DEG_ERR_NOMEM. */
deg_status dg_read_file(const char *path, size_t max_bytes, char **out, size_t *len);

#endif
