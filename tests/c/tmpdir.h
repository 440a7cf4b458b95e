/* Temporary directories of the C tests that write files (fleets): made with
 * mkdtemp under /tmp (or /dev/shm), removed whole at the end. */
#ifndef DEG_TESTS_TMPDIR_H
#define DEG_TESTS_TMPDIR_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

/* A fresh directory /tmp/deg-<what>-XXXXXX into buf. */
static inline void test_tmpdir(char *buf, size_t n, const char *what)
{
    snprintf(buf, n, "/tmp/deg-%s-XXXXXX", what);
    cr_assert_not_null(mkdtemp(buf));
}

/* The same under /dev/shm when it is a writable directory (memory: a test
 * that saves a fleet hundreds of times is not bound by disk fsyncs), else
 * under /tmp. */
static inline void test_tmpdir_mem(char *buf, size_t n, const char *what)
{
    snprintf(buf, n, "/dev/shm/deg-%s-XXXXXX", what);
    if (!mkdtemp(buf)) test_tmpdir(buf, n, what);
}

static inline void test_rmtree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

#endif
