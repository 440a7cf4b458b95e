/* Whole saves of file sets committed by one manifest: .prev keeping, SHA-256
 * of files, picking the named version (protocol in prevsave.h). */
#include "base/prevsave.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/status.h"

deg_status dg_sha256_file_update(const char *path, struct sha256_ctx *ctx)
{
    FILE *f = fopen(path, "rb");
    if (!f) return dg_fail(DEG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    enum { CH = 1 << 20 };
    uint8_t *buf = malloc(CH);
    if (!buf) {
        fclose(f);
        return dg_fail(DEG_ERR_NOMEM, "%s: out of memory hashing", path);
    }
    size_t n;
    while ((n = fread(buf, 1, CH, f)) > 0) sha256_update(ctx, n, buf);
    int err = ferror(f);
    free(buf);
    fclose(f);
    if (err) return dg_fail(DEG_ERR_IO, "%s: read error", path);
    return DEG_OK;
}

void dg_hex(const uint8_t *d, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = 0;
}

deg_status dg_file_sha256(const char *path, char out[65])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    DG_TRY(dg_sha256_file_update(path, &ctx));
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_digest(&ctx, sizeof d, d);
    dg_hex(d, sizeof d, out);
    return DEG_OK;
}

char *dg_prev_path(const char *path)
{
    size_t n = strlen(path) + sizeof ".prev";
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s.prev", path);
    return p;
}

deg_status dg_prev_keep(const char *path)
{
    char *prev = dg_prev_path(path);
    if (!prev) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", path);
    deg_status st = DEG_OK;
    if (unlink(prev) != 0 && errno != ENOENT)
        st = dg_fail(DEG_ERR_IO, "%s: cannot remove: %s", prev, strerror(errno));
    else if (link(path, prev) != 0 && errno != ENOENT && errno != EPERM && errno != ENOTSUP &&
             errno != EOPNOTSUPP)
        st = dg_fail(DEG_ERR_IO, "%s: cannot link to %s: %s", path, prev, strerror(errno));
    free(prev);
    return st;
}

deg_status dg_prev_pick(const char *path, const char *want, const char *who, int *use_prev)
{
    *use_prev = 0;
    if (!want) return DEG_OK;
    if (strlen(want) != 64)
        return dg_fail(DEG_ERR_FORMAT, "%s: the SHA-256 of %s must be 64 hex digits", who, path);
    char got[65], old[65];
    DG_TRY(dg_file_sha256(path, got));
    if (strcmp(got, want) == 0) return DEG_OK;
    char *prev = dg_prev_path(path);
    if (!prev) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", who);
    int ok = dg_file_sha256(prev, old) == DEG_OK && strcmp(old, want) == 0;
    dg_clear_error();
    free(prev);
    if (ok) {
        *use_prev = 1; /* a save was killed before its manifest: the old file is whole */
        return DEG_OK;
    }
    return dg_fail(DEG_ERR_FORMAT, "%s: %s has SHA-256 %s, but the manifest names %s: the "
                   "set is not whole (a file was replaced, or a save was interrupted where no earlier "
                   "version could be kept)", who, path, got, want);
}

void dg_prev_settle(const char *path, int use_prev)
{
    char *prev = dg_prev_path(path);
    if (!prev) return;
    if (use_prev) (void)rename(prev, path);
    else (void)unlink(prev);
    free(prev);
}

void dg_prev_drop(const char *path) { dg_prev_settle(path, 0); }
