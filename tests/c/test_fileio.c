/* Tests of lib/base/fileio.h (mappings, atomic writes, whole-file reads, path joins) and utf8.h. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fileio.h"
#include "base/utf8.h"
#include "core_testutil.h"

Test(fileio, map_reads_whole_file)
{
    char *dir = tu_mkdtemp();
    char *p = tu_path(dir, "a.bin");
    tu_write(p, "hello, map", 10);
    dg_mapping m;
    cr_assert_eq(dg_map_file(p, &m), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(m.size, 10);
    cr_assert_eq(memcmp(m.data, "hello, map", 10), 0);
    dg_unmap(&m);
    cr_assert_null(m.data);
    dg_unmap(&m); /* twice is fine */
    free(p);
    tu_rmrf(dir);
    free(dir);
}

Test(fileio, map_empty_file_is_valid_and_empty)
{
    char *dir = tu_mkdtemp();
    char *p = tu_path(dir, "empty");
    tu_write(p, "", 0);
    dg_mapping m;
    cr_assert_eq(dg_map_file(p, &m), DEG_OK);
    cr_assert_eq(m.size, 0);
    cr_assert_null(m.data);
    dg_unmap(&m);
    free(p);
    tu_rmrf(dir);
    free(dir);
}

Test(fileio, map_errors_name_path_and_reason)
{
    dg_mapping m;
    cr_assert_eq(dg_map_file("/nonexistent/deg/x.gguf", &m), DEG_ERR_IO);
    cr_assert(strstr(deg_errmsg(), "/nonexistent/deg/x.gguf"), "%s", deg_errmsg());
    cr_assert(strstr(deg_errmsg(), "No such file"), "%s", deg_errmsg());
    char *dir = tu_mkdtemp();
    cr_assert_eq(dg_map_file(dir, &m), DEG_ERR_IO);
    cr_assert(strstr(deg_errmsg(), "not a regular file"), "%s", deg_errmsg());
    tu_rmrf(dir);
    free(dir);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

Test(fileio, atomic_write_replaces_and_leaves_no_temp)
{
    char *dir = tu_mkdtemp();
    char *p = tu_path(dir, "out.bin");
    dg_chunk c1[] = {{"abc", 3}, {NULL, 0}, {"defg", 4}};
    cr_assert_eq(dg_write_atomic(p, c1, 3), DEG_OK, "%s", deg_errmsg());
    size_t n;
    uint8_t *b = tu_read(p, &n);
    cr_assert_eq(n, 7);
    cr_assert_eq(memcmp(b, "abcdefg", 7), 0);
    free(b);
    dg_chunk c2[] = {{"xy", 2}};
    cr_assert_eq(dg_write_atomic(p, c2, 1), DEG_OK);
    b = tu_read(p, &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(memcmp(b, "xy", 2), 0);
    free(b);
    struct stat st;
    stat(p, &st);
    cr_assert((st.st_mode & 0044) != 0 || (umask(022), 1), "file should be readable by others");
    cr_assert_eq(count_entries(dir), 1, "a temporary file was left behind");
    free(p);
    tu_rmrf(dir);
    free(dir);
}

Test(fileio, atomic_write_failure_keeps_old_file)
{
    char *dir = tu_mkdtemp();
    char *p = tu_path(dir, "keep.bin");
    tu_write(p, "old", 3);
    /* chunk with data == NULL but len > 0 is an argument error mid-write */
    dg_chunk bad[] = {{"new", 3}, {NULL, 5}};
    cr_assert_eq(dg_write_atomic(p, bad, 2), DEG_ERR_ARG);
    size_t n;
    uint8_t *b = tu_read(p, &n);
    cr_assert_eq(n, 3);
    cr_assert_eq(memcmp(b, "old", 3), 0);
    free(b);
    cr_assert_eq(count_entries(dir), 1);
    /* directory that does not exist */
    cr_assert_eq(dg_write_atomic("/nonexistent/deg/out.bin", bad, 1), DEG_ERR_IO);
    cr_assert(strstr(deg_errmsg(), "/nonexistent/deg/out.bin"), "%s", deg_errmsg());
    free(p);
    tu_rmrf(dir);
    free(dir);
}

Test(fileio, read_file_small_and_limit)
{
    char *dir = tu_mkdtemp();
    char *p = tu_path(dir, "c.json");
    tu_write(p, "{\"a\":1}", 7);
    char *s;
    size_t n;
    cr_assert_eq(dg_read_file(p, 1 << 20, &s, &n), DEG_OK);
    cr_assert_eq(n, 7);
    cr_assert_str_eq(s, "{\"a\":1}");
    free(s);
    cr_assert_eq(dg_read_file(p, 6, &s, &n), DEG_ERR_RANGE);
    cr_assert_null(s);
    cr_assert(strstr(deg_errmsg(), "c.json"), "%s", deg_errmsg());
    cr_assert_eq(dg_read_file("/nonexistent/x.json", 100, &s, NULL), DEG_ERR_IO);
    free(p);
    tu_rmrf(dir);
    free(dir);
}

/* ---- UTF-8 ------------------------------------------------------------- */

static void valid(const char *s, size_t n)
{
    size_t off = 99;
    cr_assert(dg_utf8_validate(s, n, &off), "should be valid (bad at %zu)", off);
}

static void invalid_at(const char *s, size_t n, size_t at)
{
    size_t off = 99;
    cr_assert_not(dg_utf8_validate(s, n, &off), "should be invalid");
    cr_assert_eq(off, at, "bad offset %zu, expected %zu", off, at);
}

/* The one path join and directory part (safetensors shards, HF directories,
 * checkpoints, temporaries all use these). */
Test(fileio, path_join_and_dir_of)
{
    const char *cases[][3] = {{"a", "b", "a/b"},
                              {"/models/x", "config.json", "/models/x/config.json"},
                              {".", "deg.json", "./deg.json"},
                              {"a/", "b", "a//b"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *p = dg_path_join(cases[i][0], cases[i][1]);
        cr_assert_str_eq(p, cases[i][2]);
        free(p);
    }
    const char *dirs[][2] = {{"a/b/c.safetensors", "a/b"}, {"c.safetensors", "."},
                             {"/c.safetensors", "/"}, {"/m/x", "/m"}};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char *d = dg_dir_of(dirs[i][0]);
        cr_assert_str_eq(d, dirs[i][1], "dg_dir_of(%s)", dirs[i][0]);
        free(d);
    }
}

Test(utf8, accepts_well_formed)
{
    valid("", 0);
    valid("plain ascii text, long enough for the 8-byte path", 49);
    valid("h\xC3\xA9llo", 6);                   /* é */
    valid("\xE2\x9C\x93", 3);                    /* ✓ */
    valid("\xF0\x9F\x98\x80", 4);                /* 😀 */
    valid("\xEF\xBF\xBF\xF4\x8F\xBF\xBF", 7);   /* U+FFFF, U+10FFFF */
    valid("\xED\x9F\xBF\xEE\x80\x80", 6);       /* U+D7FF, U+E000 around surrogates */
    valid("a\0b", 3);                            /* NUL is a valid code point */
}

Test(utf8, rejects_ill_formed_with_offset)
{
    invalid_at("abc\x80", 4, 3);               /* stray continuation */
    invalid_at("\xC0\xAF", 2, 0);              /* overlong '/' */
    invalid_at("ab\xC1\xBF", 4, 2);            /* overlong */
    invalid_at("\xE0\x80\xAF", 3, 0);          /* overlong 3-byte */
    invalid_at("\xF0\x80\x80\xAF", 4, 0);      /* overlong 4-byte */
    invalid_at("x\xED\xA0\x80", 4, 1);         /* surrogate U+D800 */
    invalid_at("\xED\xBF\xBF", 3, 0);          /* surrogate U+DFFF */
    invalid_at("\xF4\x90\x80\x80", 4, 0);      /* U+110000 */
    invalid_at("\xF5\x80\x80\x80", 4, 0);
    invalid_at("\xFF", 1, 0);
    invalid_at("ok\xE2\x9C", 4, 2);            /* truncated at end */
    invalid_at("\xE2\x28\xA1", 3, 0);          /* bad continuation */
    invalid_at("0123456789abcdef\xC3", 17, 16);
}

Test(utf8, decode_encode_roundtrip_all_scalars)
{
    char buf[4];
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        int n = dg_utf8_encode(cp, buf);
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            cr_assert_eq(n, 0);
            continue;
        }
        cr_assert(n >= 1 && n <= 4);
        uint32_t back;
        cr_assert_eq(dg_utf8_decode(buf, (size_t)n, &back), n);
        cr_assert_eq(back, cp);
        if (n > 1) cr_assert_eq(dg_utf8_decode(buf, (size_t)n - 1, &back), 0);
    }
    cr_assert_eq(dg_utf8_encode(0x110000, buf), 0);
}

Test(utf8, complete_len_drops_only_a_cut_final_character)
{
    /* every scalar value cut after each of its bytes: the cut part goes, a
     * whole character stays */
    char buf[8] = "ab";
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        int n = dg_utf8_encode(cp, buf + 2);
        if (n == 0) continue;
        cr_assert_eq(dg_utf8_complete_len(buf, 2 + (size_t)n), 2 + (size_t)n, "U+%04X whole", cp);
        for (int k = 1; k < n; k++)
            cr_assert_eq(dg_utf8_complete_len(buf, 2 + (size_t)k), 2, "U+%04X cut at %d", cp, k);
    }
    /* not a cut character: left as it is (ill-formed bytes are not judged) */
    cr_assert_eq(dg_utf8_complete_len("", 0), 0);
    cr_assert_eq(dg_utf8_complete_len("a\x80", 2), 2);             /* stray continuation */
    cr_assert_eq(dg_utf8_complete_len("\x80\x80\x80\x80", 4), 4);  /* no lead in reach */
    cr_assert_eq(dg_utf8_complete_len("a\xC0", 2), 2);             /* never a lead */
    cr_assert_eq(dg_utf8_complete_len("a\xF5\x80", 3), 3);
    cr_assert_eq(dg_utf8_complete_len("a\xE0\x80", 3), 3);         /* overlong second byte */
    cr_assert_eq(dg_utf8_complete_len("a\xED\xA0", 3), 3);         /* a surrogate's */
    cr_assert_eq(dg_utf8_complete_len("a\xF4\x90\x80", 4), 4);     /* above U+10FFFF */
    cr_assert_eq(dg_utf8_complete_len("a\xE2\x82\xAC", 4), 4);     /* whole euro sign */
    cr_assert_eq(dg_utf8_complete_len("a\xF0\x9F\x98", 4), 1);     /* cut emoji */
}
