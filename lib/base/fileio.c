/* fileio.c - files: read-only mappings, whole-file reads, atomic writes, directory
 * locks, stale temporary files (base/fileio.h). */
#include "base/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/status.h"

/* Open path read-only as a regular file: *fd and its *st, or an error saying
 * what failed (verb: "map" / "read", the caller's use). */
static deg_status open_regular(const char *path, const char *verb, int *fd, struct stat *st)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) return dg_fail(DEG_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    if (fstat(*fd, st) != 0) {
        int e = errno;
        close(*fd);
        return dg_fail(DEG_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st->st_mode)) {
        close(*fd);
        return dg_fail(DEG_ERR_IO, "cannot %s '%s': not a regular file", verb, path);
    }
    return DEG_OK;
}

deg_status dg_map_file(const char *path, dg_mapping *m)
{
    m->data = NULL;
    m->size = 0;
    if (!path) return dg_fail(DEG_ERR_ARG, "dg_map_file: path is NULL");
    int fd;
    struct stat st;
    DG_TRY(open_regular(path, "map", &fd, &st));
    if (st.st_size == 0) {
        close(fd);
        return DEG_OK;
    }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return dg_fail(DEG_ERR_IO, "cannot map '%s': file too large", path);
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return dg_fail(DEG_ERR_IO, "cannot mmap '%s' (%lld bytes): %s", path,
                       (long long)st.st_size, strerror(e));
    m->data = p;
    m->size = (size_t)st.st_size;
    return DEG_OK;
}

void dg_unmap(dg_mapping *m)
{
    if (m && m->data && m->size) munmap((void *)m->data, m->size);
    if (m) {
        m->data = NULL;
        m->size = 0;
    }
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        /* Large single writes are split: Linux writes at most ~2 GiB per call. */
        size_t n = len > (1u << 30) ? (1u << 30) : len;
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

deg_status dg_write_atomic(const char *path, const dg_chunk *chunks, size_t n)
{
    if (!path || !*path) return dg_fail(DEG_ERR_ARG, "dg_write_atomic: empty path");
    if (n && !chunks) return dg_fail(DEG_ERR_ARG, "dg_write_atomic: chunks is NULL");
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 12);
    if (!tmp) return dg_fail(DEG_ERR_NOMEM, "dg_write_atomic: out of memory");
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", 12);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        deg_status s = dg_fail(DEG_ERR_IO, "cannot create a temporary file next to '%s': %s",
                               path, strerror(errno));
        free(tmp);
        return s;
    }
    /* mkstemp creates 0600; a saved artifact should be readable like any file. */
    mode_t um = umask(0);
    umask(um);
    (void)fchmod(fd, 0644 & ~um);
    const char *what = NULL;
    for (size_t i = 0; i < n && !what; i++) {
        if (chunks[i].len && !chunks[i].data) {
            close(fd);
            unlink(tmp);
            free(tmp);
            return dg_fail(DEG_ERR_ARG, "dg_write_atomic: chunk %zu has no data", i);
        }
        if (write_all(fd, chunks[i].data, chunks[i].len) != 0) what = "write";
    }
    if (!what && fsync(fd) != 0) what = "fsync";
    int e = errno;
    if (close(fd) != 0 && !what) {
        what = "close";
        e = errno;
    }
    if (!what && rename(tmp, path) != 0) {
        what = "rename";
        e = errno;
    }
    if (what) {
        unlink(tmp);
        free(tmp);
        return dg_fail(DEG_ERR_IO, "cannot write '%s' (%s failed): %s", path, what, strerror(e));
    }
    free(tmp);
    /* Make the rename durable: fsync the directory (best effort). */
    char *dir = dg_dir_of(path);
    if (dir) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    return DEG_OK;
}

deg_status dg_read_file(const char *path, size_t max_bytes, char **out, size_t *len)
{
    *out = NULL;
    if (len) *len = 0;
    if (!path) return dg_fail(DEG_ERR_ARG, "dg_read_file: path is NULL");
    int fd;
    struct stat st;
    DG_TRY(open_regular(path, "read", &fd, &st));
    if ((uint64_t)st.st_size > (uint64_t)max_bytes) {
        close(fd);
        return dg_fail(DEG_ERR_RANGE, "'%s' is %lld bytes, more than the %zu allowed", path,
                       (long long)st.st_size, max_bytes);
    }
    size_t cap = (size_t)st.st_size;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return dg_fail(DEG_ERR_NOMEM, "cannot allocate %zu bytes to read '%s'", cap + 1, path);
    }
    size_t got = 0;
    while (got < cap) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            free(buf);
            close(fd);
            return dg_fail(DEG_ERR_IO, "cannot read '%s': %s", path, strerror(e));
        }
        if (r == 0) break; /* file shrank while reading: return what is there */
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    *out = buf;
    if (len) *len = got;
    return DEG_OK;
}

int dg_dir_lock(const char *dir, int wait)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r;
    do r = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB));
    while (r != 0 && errno == EINTR);
    if (r != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void dg_dir_unlock(int fd)
{
    if (fd >= 0) close(fd); /* closing the last fd releases the flock */
}

char *dg_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
}

char *dg_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

size_t dg_remove_stale_temps(const char *path)
{
    char *dir = dg_dir_of(path);
    if (!dir) return 0;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t bl = strlen(base), n = 0;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strncmp(e->d_name, base, bl) != 0 || strncmp(e->d_name + bl, ".tmp.", 5) != 0)
                continue;
            char *full = dg_path_join(dir, e->d_name);
            if (!full) break;
            if (unlink(full) == 0) n++;
            free(full);
        }
        closedir(d);
    }
    free(dir);
    return n;
}
