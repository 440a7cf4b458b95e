/* ckpt_fixture.h - a random-heads checkpoint on one of the tiny goldens for the
 * C tests: created in a directory, optionally with deg.json's array_mode and
 * anchor_min_tokens replaced, loaded with debug ("raw" digests) on; deg.json edits;
 * an array of strings joined for comparison. */
#ifndef DEG_TESTS_CKPT_FIXTURE_H
#define DEG_TESTS_CKPT_FIXTURE_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deg.h"

/* The strings of JSON array arr joined by '|' (a static buffer: use before the next call). */
static inline const char *tu_joined(json_t *arr)
{
    static char out[512];
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < json_array_size(arr) && o < sizeof out; i++)
        o += (size_t)snprintf(out + o, sizeof out - o, "%s%s", i ? "|" : "",
                              json_string_value(json_array_get(arr, i)));
    return out;
}

/* Set deg.json key of checkpoint dir to value (owned; NULL deletes the key). */
static inline void tu_set_meta(const char *dir, const char *key, json_t *value)
{
    char js[600];
    snprintf(js, sizeof js, "%s/deg.json", dir);
    json_t *meta = json_load_file(js, 0, NULL);
    cr_assert(meta, "%s: no deg.json", dir);
    if (value) json_object_set_new(meta, key, value);
    else json_object_del(meta, key);
    cr_assert_eq(json_dump_file(meta, js, JSON_INDENT(1)), 0);
    json_decref(meta);
}

/* array_mode NULL and anchor_min_tokens < 0 keep deg_ckpt_create_random's. */
static inline deg_ckpt *tu_random_ckpt(const char *model, uint64_t seed, const char *dir,
                                       const char *array_mode, long anchor_min_tokens)
{
    cr_assert_eq(deg_ckpt_create_random(model, seed, dir), DEG_OK, "%s", deg_errmsg());
    if (array_mode || anchor_min_tokens >= 0) {
        char js[512];
        snprintf(js, sizeof js, "%s/deg.json", dir);
        json_t *meta = json_load_file(js, 0, NULL);
        cr_assert(meta);
        if (array_mode) json_object_set_new(meta, "array_mode", json_string(array_mode));
        if (anchor_min_tokens >= 0)
            json_object_set_new(meta, "anchor_min_tokens", json_integer(anchor_min_tokens));
        cr_assert_eq(json_dump_file(meta, js, JSON_INDENT(1)), 0);
        json_decref(meta);
    }
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    deg_ckpt_set_debug(k, 1);
    return k;
}

/* Each JSON text of bad[0, n) as deg.json's `key` makes deg_ckpt_load of dir fail
 * with DEG_ERR_FORMAT and a message naming the key. */
static inline void tu_assert_meta_rejected(const char *dir, const char *key,
                                           const char *const *bad, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tu_set_meta(dir, key, json_loads(bad[i], 0, NULL));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_ERR_FORMAT, "%s: %s", key, bad[i]);
        cr_assert(strstr(deg_errmsg(), key), "%s", deg_errmsg());
    }
}

/* deg_fill of `ctx` into `schema` (JSON text) with `options` (JSON text or NULL) on k:
 * the parsed response (caller frees); a failed fill fails the test. */
static inline json_t *tu_fill(deg_ckpt *k, const char *ctx, const char *schema,
                              const char *options)
{
    json_t *req = json_pack("{s:s, s:o}", "context", ctx, "schema", json_loads(schema, 0, NULL));
    if (options) json_object_set_new(req, "options", json_loads(options, 0, NULL));
    char *rq = json_dumps(req, 0), *out = NULL;
    json_decref(req);
    cr_assert_eq(deg_fill(k, rq, strlen(rq), &out, NULL), DEG_OK, "%s", deg_errmsg());
    json_t *resp = json_loads(out, 0, NULL);
    cr_assert(resp, "response is no JSON");
    free(rq);
    free(out);
    return resp;
}

/* Save k into "<dir>-saved" and return the deg.json written there (caller frees). */
static inline json_t *tu_saved_meta(const deg_ckpt *k, const char *dir)
{
    char dir2[600], js[700];
    snprintf(dir2, sizeof dir2, "%s-saved", dir);
    cr_assert_eq(deg_ckpt_save(k, dir2, NULL, 0), DEG_OK, "%s", deg_errmsg());
    snprintf(js, sizeof js, "%s/deg.json", dir2);
    json_t *meta = json_load_file(js, 0, NULL);
    cr_assert(meta, "%s: no deg.json", js);
    return meta;
}

#endif
