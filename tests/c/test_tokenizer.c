/* Tokenizer parity with Hugging Face `tokenizers` (goldens by
 * tests/goldens/gen_tokenizer.py): every variant in
 * tests/goldens/tokenizer/variants.json is a base tokenizer.json (SmolLM2's
 * converted vocabulary or the tiny trained one) with a patch (pre-tokenizer,
 * model flags, extra added tokens); the test applies the patch with jansson,
 * loads it with dg_tokenizer_from_json, and asserts identical ids on every
 * text, plus decode(encode(x)) == x byte-exact where that is an identity. */
#include <criterion/criterion.h>
#include "model_path.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/status.h"
#include "deg.h"
#include "core_testutil.h"
#include "format/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

#define GOLD DEG_SOURCE_ROOT "/tests/goldens/tokenizer/"

/* ---- helpers --------------------------------------------------------------- */

static char *read_gz(const char *path, size_t *len)
{
    gzFile f = gzopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (n == cap) { cap *= 2; buf = realloc(buf, cap + 1); }
        int k = gzread(f, buf + n, (unsigned)(cap - n));
        cr_assert(k >= 0, "gzread %s failed", path);
        if (k == 0) break;
        n += (size_t)k;
    }
    gzclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* JSON-lines of strings -> array of json_t strings (caller decrefs). */
static json_t *read_texts(const char *path)
{
    size_t len;
    char *buf = read_gz(path, &len); /* gzread also reads plain files */
    json_t *arr = json_array();
    char *p = buf;
    while (*p) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        if (*p) {
            json_error_t err;
            json_t *s = json_loads(p, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
            cr_assert(json_is_string(s), "%s: bad line: %s", path, err.text);
            json_array_append_new(arr, s);
        }
        if (!nl) break;
        p = nl + 1;
    }
    free(buf);
    return arr;
}

/* Expected ids: one line of space-separated ids per text. */
typedef struct idlines {
    char *buf;
    char **line;
    size_t n;
} idlines;

static idlines read_ids(const char *path)
{
    idlines r = {0};
    size_t len;
    r.buf = read_gz(path, &len);
    size_t cap = 1024;
    r.line = malloc(cap * sizeof *r.line);
    char *p = r.buf;
    while (*p) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        if (r.n == cap) { cap *= 2; r.line = realloc(r.line, cap * sizeof *r.line); }
        r.line[r.n++] = p;
        if (!nl) break;
        p = nl + 1;
    }
    return r;
}

static size_t parse_ids(const char *s, int32_t **out, size_t *cap)
{
    size_t n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) break;
        if (n == *cap) { *cap = *cap ? 2 * *cap : 256; *out = realloc(*out, *cap * sizeof **out); }
        (*out)[n++] = (int32_t)v;
        s = end;
    }
    return n;
}

static json_t *load_base(json_t *variants, const char *base)
{
    const char *file = json_string_value(json_object_get(json_object_get(variants, "bases"), base));
    cr_assert(file, "no base %s", base);
    char path[1024];
    snprintf(path, sizeof path, "%s%s", GOLD, file);
    size_t len;
    char *buf = read_gz(path, &len);
    json_error_t err;
    json_t *j = json_loadb(buf, len, 0, &err);
    free(buf);
    cr_assert(j, "%s: %s", path, err.text);
    return j;
}

/* Write base+patch to a temp tokenizer.json; returns its path (static). */
static const char *write_patched(const json_t *base, const json_t *patch, char *path)
{
    json_t *j = json_deep_copy(base);
    json_t *pre = json_object_get(patch, "pre_tokenizer");
    if (pre) json_object_set(j, "pre_tokenizer", pre);
    json_t *norm = json_object_get(patch, "normalizer");
    if (norm) json_object_set(j, "normalizer", norm);
    json_t *ms = json_object_get(patch, "model_set");
    const char *k;
    json_t *v;
    if (ms) json_object_foreach(ms, k, v) json_object_set(json_object_get(j, "model"), k, v);
    json_t *extra = json_object_get(patch, "added_tokens_extra");
    if (extra) json_array_extend(json_object_get(j, "added_tokens"), extra);
    strcpy(path, "/tmp/deg_tok_test_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(json_dump_file(j, path, JSON_COMPACT), 0);
    json_decref(j);
    return path;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Encode every selected text, compare with the golden ids, round-trip.
 * Returns the number of mismatching texts (details printed). */
static size_t check_texts(const dg_tokenizer *t, const char *name, json_t *texts, size_t first,
                          size_t stride, size_t count, int parse_special, const idlines *gold,
                          int roundtrip, size_t *n_tokens, double *seconds)
{
    cr_assert_eq(gold->n, count, "%s: %zu golden lines for %zu texts", name, gold->n, count);
    size_t bad = 0, capd = 1 << 16;
    int32_t *ids = NULL, *want = NULL;
    size_t wcap = 0;
    char *dec = malloc(capd);
    for (size_t i = 0; i < count; i++) {
        const json_t *s = json_array_get(texts, first + i * stride);
        const char *text = json_string_value(s);
        size_t len = json_string_length(s);
        size_t n;
        double t0 = now_s();
        /* the allocating encode (the library's callers use it; the caller-buffer
         * contract is pinned by buffer_contract) */
        free(ids);
        ids = NULL;
        deg_status st = dg_tokenizer_encode_alloc(t, text, len,
                                                  parse_special ? DEG_TOKENIZE_SPECIAL : 0u, NULL,
                                                  0, &ids, &n);
        *seconds += now_s() - t0;
        cr_assert_eq(st, DEG_OK, "%s: text %zu: %s", name, i, deg_errmsg());
        *n_tokens += n;
        size_t nw = parse_ids(gold->line[i], &want, &wcap);
        if (nw != n || (n && memcmp(ids, want, n * sizeof *ids) != 0)) {
            if (bad < 5) {
                fprintf(stderr, "%s: text %zu mismatch: %.200s\n  want:", name,
                        first + i * stride, text);
                for (size_t k = 0; k < nw && k < 40; k++) fprintf(stderr, " %d", want[k]);
                fprintf(stderr, "\n  got: ");
                for (size_t k = 0; k < n && k < 40; k++) fprintf(stderr, " %d", ids[k]);
                fprintf(stderr, "\n");
            }
            bad++;
        }
        if (roundtrip) {
            size_t dl;
            st = dg_tokenizer_decode(t, ids, n, dec, capd, &dl);
            if (st == DEG_ERR_RANGE) {
                capd = dl + 1;
                dec = realloc(dec, capd);
                st = dg_tokenizer_decode(t, ids, n, dec, capd, &dl);
            }
            cr_assert_eq(st, DEG_OK, "%s: decode %zu: %s", name, i, deg_errmsg());
            cr_assert(dl == len && memcmp(dec, text, len) == 0,
                      "%s: text %zu does not round-trip: %.200s", name, i, text);
        }
    }
    free(ids);
    free(want);
    free(dec);
    return bad;
}

static int variant_roundtrips(const char *name)
{
    /* Identity only where nothing is removed or added around the text. */
    return strncmp(name, "split_", 6) != 0 && strcmp(name, "prefix_space") != 0 &&
           strncmp(name, "added_flags", 11) != 0 && strstr(name, "nfc") == NULL;
}

/* only_smollm2: run only the "smollm2" corpus variant (else all others).
 * ext: if not NULL, use this tokenizer for every variant whose base is
 * smollm2 with an empty patch (the GGUF path) and skip the rest. */
static void run_variants_with(int only_smollm2, const dg_tokenizer *ext, const char *label)
{
    json_error_t err;
    json_t *variants = json_load_file(GOLD "variants.json", 0, &err);
    cr_assert(variants, "variants.json: %s", err.text);
    json_t *corpus = read_texts(GOLD "corpus.jsonl.gz");
    json_t *specials = read_texts(GOLD "specials.jsonl");
    json_t *nfd = read_texts(GOLD "nfd.jsonl.gz");
    cr_assert_geq(json_array_size(corpus), 20000);
    json_t *bases = json_object();
    size_t total_bad = 0, i;
    json_t *v;
    json_array_foreach(json_object_get(variants, "variants"), i, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *base = json_string_value(json_object_get(v, "base"));
        if (ext) {
            if (strcmp(base, "smollm2") != 0 || json_object_size(json_object_get(v, "patch")) != 0)
                continue;
        } else if (only_smollm2 != (strcmp(name, "smollm2") == 0)) {
            continue;
        }
        dg_tokenizer *t = NULL;
        if (!ext) {
            json_t *bj = json_object_get(bases, base);
            if (!bj) {
                bj = load_base(variants, base);
                json_object_set_new(bases, base, bj);
            }
            char path[64];
            write_patched(bj, json_object_get(v, "patch"), path);
            deg_status st = dg_tokenizer_from_json(path, NULL, &t);
            unlink(path);
            cr_assert_eq(st, DEG_OK, "%s: %s", name, deg_errmsg());
        }
        const dg_tokenizer *use = ext ? ext : t;
        char idpath[1024];
        snprintf(idpath, sizeof idpath, "%s%s", GOLD,
                 json_string_value(json_object_get(v, "ids")));
        idlines gold = read_ids(idpath);
        const char *src = json_string_value(json_object_get(v, "texts"));
        json_t *texts = strcmp(src, "specials") == 0 ? specials
                        : strcmp(src, "nfd") == 0    ? nfd
                                                     : corpus;
        size_t n_tok = 0;
        double secs = 0;
        size_t bad = check_texts(use, name, texts,
                                 (size_t)json_integer_value(json_object_get(v, "first")),
                                 (size_t)json_integer_value(json_object_get(v, "stride")),
                                 (size_t)json_integer_value(json_object_get(v, "count")),
                                 (int)json_integer_value(json_object_get(v, "parse_special")),
                                 &gold, variant_roundtrips(name), &n_tok, &secs);
        fprintf(stderr, "tokenizer parity %-5s %-28s %6lld texts %7zu ids %zu mismatches, "
                "%.3f s encode (%.0f tokens/s)\n", label, name,
                (long long)json_integer_value(json_object_get(v, "count")), n_tok, bad, secs,
                secs > 0 ? (double)n_tok / secs : 0.0);
        total_bad += bad;
        free(gold.buf);
        free(gold.line);
        dg_tokenizer_free(t);
    }
    json_decref(bases);
    json_decref(corpus);
    json_decref(specials);
    json_decref(nfd);
    json_decref(variants);
    cr_assert_eq(total_bad, 0, "%zu texts differ from HF tokenizers", total_bad);
}

static void run_variants(int only_smollm2) { run_variants_with(only_smollm2, NULL, "json"); }

/* ---- tests ----------------------------------------------------------------- */

Test(tokenizer, smollm2_json_corpus_parity, .timeout = 300) { run_variants(1); }

Test(tokenizer, pretokenizer_variants_parity, .timeout = 300) { run_variants(0); }

static dg_tokenizer *load_tiny(void)
{
    dg_tokenizer *t = NULL;
    deg_status st = dg_tokenizer_from_json(DEG_SOURCE_ROOT "/tests/goldens/tiny-tokenizer/tokenizer.json",
                                           DEG_SOURCE_ROOT "/tests/goldens/tiny-tokenizer/tokenizer_config.json",
                                           &t);
    cr_assert_eq(st, DEG_OK, "%s", deg_errmsg());
    return t;
}

Test(tokenizer, tiny_metadata)
{
    dg_tokenizer *t = load_tiny();
    cr_assert_eq(dg_tokenizer_n_vocab(t), 512);
    cr_assert_eq(dg_tokenizer_find(t, "<|im_start|>", 12), 1);
    cr_assert_eq(dg_tokenizer_bos(t), 1);
    cr_assert_eq(dg_tokenizer_eos(t), 2);
    cr_assert_eq(dg_tokenizer_find(t, "a", 1) >= 0, 1);
    cr_assert_eq(dg_tokenizer_find(t, "no such token!", 14), -1);
    dg_tokenizer_free(t);
}

Test(tokenizer, invalid_utf8_reports_offset)
{
    dg_tokenizer *t = load_tiny();
    static const struct { const char *s; size_t len; size_t off; const char *what; } cases[] = {
        {"ab\xC0\xAF", 4, 2, "overlong '/'"},
        {"abc\xE0\x80\xAF", 6, 3, "overlong 3-byte"},
        {"x\x80y", 3, 1, "lone continuation"},
        {"hello \xE2\x82", 8, 6, "truncated sequence"},
        {"\xED\xA0\x80z", 4, 0, "surrogate U+D800"},
        {"ok \xF4\x90\x80\x80", 7, 3, "above U+10FFFF"},
        {"\xFF", 1, 0, "byte 0xFF"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t ids[64];
        size_t n = 99;
        deg_status st = dg_tokenizer_encode(t, cases[i].s, cases[i].len, 1, ids, 64, &n);
        cr_assert_eq(st, DEG_ERR_UTF8, "%s: status %d", cases[i].what, st);
        char want[64];
        snprintf(want, sizeof want, "byte offset %zu", cases[i].off);
        cr_assert(strstr(deg_errmsg(), want), "%s: message '%s' lacks '%s'", cases[i].what,
                  deg_errmsg(), want);
        cr_assert_eq(n, 0);
    }
    dg_tokenizer_free(t);
}

Test(tokenizer, buffer_contract)
{
    dg_tokenizer *t = load_tiny();
    const char *text = "Hello world, hello tokens 12345!";
    size_t n = 0;
    cr_assert_eq(dg_tokenizer_encode(t, text, strlen(text), 1, NULL, 0, &n), DEG_ERR_RANGE);
    cr_assert_gt(n, 5);
    int32_t ids[128];
    size_t n2 = 0;
    cr_assert_eq(dg_tokenizer_encode(t, text, strlen(text), 1, ids, n, &n2), DEG_OK);
    cr_assert_eq(n, n2);
    char buf[128];
    size_t len = 0;
    cr_assert_eq(dg_tokenizer_decode(t, ids, n, buf, 3, &len), DEG_ERR_RANGE);
    cr_assert_eq(len, strlen(text));
    cr_assert_eq(dg_tokenizer_decode(t, ids, n, buf, sizeof buf, &len), DEG_OK);
    cr_assert(len == strlen(text) && memcmp(buf, text, len) == 0);
    /* the allocating encode and decode: the same ids and bytes, sized once */
    int32_t *aids = NULL;
    size_t an = 0;
    cr_assert_eq(dg_tokenizer_encode_alloc(t, text, strlen(text), DEG_TOKENIZE_SPECIAL, NULL, 0,
                                           &aids, &an), DEG_OK);
    cr_assert(an == n && memcmp(aids, ids, n * sizeof *ids) == 0);
    char *abuf = NULL;
    cr_assert_eq(dg_tokenizer_decode_alloc(t, aids, an, &abuf, &len), DEG_OK);
    cr_assert(len == strlen(text) && strcmp(abuf, text) == 0);
    free(abuf);
    free(aids);
    cr_assert_eq(dg_tokenizer_encode_alloc(t, "", 0, 0, NULL, 0, &aids, &an), DEG_OK);
    cr_assert(aids != NULL && an == 0);
    free(aids);
    cr_assert_eq(dg_tokenizer_decode_alloc(t, NULL, 0, &abuf, &len), DEG_OK);
    cr_assert(abuf != NULL && abuf[0] == '\0' && len == 0);
    free(abuf);
    /* errors leave no output */
    aids = (int32_t *)1;
    cr_assert_eq(dg_tokenizer_encode_alloc(t, "\xff", 1, 0, NULL, 0, &aids, &an), DEG_ERR_UTF8);
    cr_assert(aids == NULL && an == 0);
    int32_t bad_id = 1 << 20;
    cr_assert_eq(dg_tokenizer_decode_alloc(t, &bad_id, 1, &abuf, &len), DEG_ERR_RANGE);
    cr_assert(abuf == NULL && len == 0);
    /* empty text */
    cr_assert_eq(dg_tokenizer_encode(t, "", 0, 1, NULL, 0, &n), DEG_OK);
    cr_assert_eq(n, 0);
    cr_assert_eq(dg_tokenizer_encode(t, NULL, 0, 1, NULL, 0, &n), DEG_OK);
    cr_assert_eq(dg_tokenizer_encode(t, NULL, 3, 1, NULL, 0, &n), DEG_ERR_ARG);
    dg_tokenizer_free(t);
}

Test(tokenizer, decode_rejects_ids_out_of_range)
{
    dg_tokenizer *t = load_tiny();
    char buf[64];
    size_t len;
    int32_t bad1[] = {5, 512};
    cr_assert_eq(dg_tokenizer_decode(t, bad1, 2, buf, sizeof buf, &len), DEG_ERR_RANGE);
    cr_assert(strstr(deg_errmsg(), "id 512 at index 1"), "%s", deg_errmsg());
    int32_t bad2[] = {-1};
    cr_assert_eq(dg_tokenizer_decode(t, bad2, 1, buf, sizeof buf, &len), DEG_ERR_RANGE);
    int32_t ok[] = {1, 2};
    cr_assert_eq(dg_tokenizer_decode(t, ok, 2, buf, sizeof buf, &len), DEG_OK);
    cr_assert(len == 22 && memcmp(buf, "<|im_start|><|im_end|>", 22) == 0);
    dg_tokenizer_free(t);
}

Test(tokenizer, long_inputs_do_not_break_the_regex)
{
    dg_tokenizer *t = load_tiny();
    size_t n = 1 << 20;
    char *text = malloc(n);
    for (size_t i = 0; i < n; i++) text[i] = (i % 100000 == 99999) ? 'x' : ' ';
    size_t count = 0;
    deg_status st = dg_tokenizer_encode(t, text, n, 1, NULL, 0, &count);
    cr_assert(st == DEG_ERR_RANGE && count > 0, "%d %s", st, deg_errmsg());
    int32_t *ids = malloc(count * sizeof *ids);
    cr_assert_eq(dg_tokenizer_encode(t, text, n, 1, ids, count, &count), DEG_OK);
    char *back = malloc(n);
    size_t len;
    cr_assert_eq(dg_tokenizer_decode(t, ids, count, back, n, &len), DEG_OK);
    cr_assert(len == n && memcmp(back, text, n) == 0);
    free(ids);
    free(back);
    free(text);
    dg_tokenizer_free(t);
}

/* Malformed tokenizer.json files: each a clear error, no leak. */
static deg_status load_string(const char *json, char *msg, size_t msg_cap)
{
    char path[] = "/tmp/deg_tok_bad_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
    close(fd);
    dg_tokenizer *t = (dg_tokenizer *)0x1;
    deg_status st = dg_tokenizer_from_json(path, NULL, &t);
    unlink(path);
    snprintf(msg, msg_cap, "%s", deg_errmsg());
    if (st != DEG_OK) cr_assert_null(t);
    dg_tokenizer_free(st == DEG_OK ? t : NULL);
    return st;
}

#define BL "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}," \
           "\"decoder\":{\"type\":\"ByteLevel\"}"

Test(tokenizer, malformed_tokenizer_json)
{
    char msg[2048];
    cr_assert_eq(load_string("{\"added_tokens\":[]," BL "}", msg, sizeof msg), DEG_ERR_FORMAT);
    cr_assert(strstr(msg, "model"), "%s", msg);
    cr_assert_eq(load_string("{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}," BL "}", msg, sizeof msg),
                 DEG_ERR_UNSUPPORTED);
    cr_assert(strstr(msg, "Unigram"), "%s", msg);
    cr_assert_eq(load_string("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}," BL "}", msg, sizeof msg),
                 DEG_ERR_UNSUPPORTED);
    cr_assert_eq(load_string("{\"model\":", msg, sizeof msg), DEG_ERR_FORMAT);
    cr_assert(strstr(msg, "line 1"), "%s", msg);
    cr_assert_eq(load_string("[1,2]", msg, sizeof msg), DEG_ERR_FORMAT);
    {
        dg_tokenizer *t = NULL;
        cr_assert_eq(dg_tokenizer_from_json("/nonexistent/tokenizer.json", NULL, &t), DEG_ERR_IO);
    }

    /* A real vocabulary with a bad merges entry / bad parts. */
    json_error_t err;
    json_t *j = json_load_file(DEG_SOURCE_ROOT "/tests/goldens/tiny-tokenizer/tokenizer.json", 0, &err);
    cr_assert(j);
    json_t *merges = json_object_get(json_object_get(j, "model"), "merges");
    static const char *bad_merges[] = {"[\"a b c\"]", "[\"ab\"]", "[[\"a\"]]", "[42]",
                                       "[\"a zzzzzzzz\"]", "[[\"a\", 1]]"};
    json_t *saved = json_deep_copy(merges);
    for (size_t i = 0; i < sizeof bad_merges / sizeof bad_merges[0]; i++) {
        json_t *m = json_loads(bad_merges[i], 0, &err);
        json_object_set_new(json_object_get(j, "model"), "merges", m);
        char *s = json_dumps(j, JSON_COMPACT);
        cr_assert_eq(load_string(s, msg, sizeof msg), DEG_ERR_FORMAT, "%s", bad_merges[i]);
        cr_assert(strstr(msg, "merges[0]"), "%s: %s", bad_merges[i], msg);
        free(s);
    }
    json_object_set_new(json_object_get(j, "model"), "merges", saved);

    /* unsupported pieces of the pipeline */
    static const char *pre_bad[] = {
        "{\"type\":\"Metaspace\"}",
        "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"ByteLevel\"},{\"type\":\"Digits\"}]}",
        "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\",\"invert\":false}",
        "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Sideways\",\"invert\":false}",
        "null"};
    static const deg_status pre_st[] = {DEG_ERR_UNSUPPORTED, DEG_ERR_UNSUPPORTED, DEG_ERR_FORMAT,
                                        DEG_ERR_FORMAT, DEG_ERR_UNSUPPORTED};
    json_t *pre_saved = json_deep_copy(json_object_get(j, "pre_tokenizer"));
    for (size_t i = 0; i < sizeof pre_bad / sizeof pre_bad[0]; i++) {
        json_object_set_new(j, "pre_tokenizer", json_loads(pre_bad[i], JSON_DECODE_ANY, &err));
        char *s = json_dumps(j, JSON_COMPACT);
        cr_assert_eq(load_string(s, msg, sizeof msg), pre_st[i], "%s: %s", pre_bad[i], msg);
        free(s);
    }
    json_object_set_new(j, "pre_tokenizer", pre_saved);
    json_object_set_new(j, "normalizer", json_loads("{\"type\":\"Lowercase\"}", 0, &err));
    char *s = json_dumps(j, JSON_COMPACT);
    cr_assert_eq(load_string(s, msg, sizeof msg), DEG_ERR_UNSUPPORTED, "%s", msg);
    free(s);
    json_object_set_new(j, "normalizer", json_null());
    json_object_set_new(j, "decoder", json_null());
    s = json_dumps(j, JSON_COMPACT);
    cr_assert_eq(load_string(s, msg, sizeof msg), DEG_ERR_UNSUPPORTED, "%s", msg);
    free(s);
    json_decref(j);
}

/* SmolLM2's vocabulary has no token for some bytes (0x04, 0x06, ...). HF
 * tokenizers drops them silently; we refuse the text and say where. */
Test(tokenizer, byte_without_token_is_an_error)
{
    json_error_t err;
    json_t *j = json_load_file(DEG_SOURCE_ROOT "/tests/goldens/tiny-tokenizer/tokenizer.json", 0, &err);
    cr_assert(j);
    json_object_del(json_object_get(json_object_get(j, "model"), "vocab"), "~");
    json_object_set_new(json_object_get(j, "model"), "merges", json_array());
    char path[] = "/tmp/deg_tok_nobyte_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    json_dump_file(j, path, JSON_COMPACT);
    json_decref(j);
    dg_tokenizer *t = NULL;
    cr_assert_eq(dg_tokenizer_from_json(path, NULL, &t), DEG_OK, "%s", deg_errmsg());
    unlink(path);
    size_t n;
    cr_assert_eq(dg_tokenizer_encode(t, "abc", 3, 1, NULL, 0, &n), DEG_ERR_RANGE);
    cr_assert_eq(n, 3);
    cr_assert_eq(dg_tokenizer_encode(t, "ab~c", 4, 1, NULL, 0, &n), DEG_ERR_UNSUPPORTED);
    cr_assert(strstr(deg_errmsg(), "byte 0x7e at byte offset 2"), "%s", deg_errmsg());
    /* the other behaviour: dropped, as HF tokenizers does */
    int32_t a[8], b[8];
    size_t na = 0, nb = 0;
    cr_assert_eq(dg_tokenizer_encode_ex(t, "ab~c", 4, DEG_TOKENIZE_DROP_MISSING_BYTES, a, 8, &na),
                 DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(dg_tokenizer_encode_ex(t, "abc", 3, 0, b, 8, &nb), DEG_OK);
    cr_assert_eq(na, nb);
    cr_assert_eq(memcmp(a, b, na * sizeof *a), 0);
    cr_assert(dg_tokenizer_byte_missing(t, '~') && !dg_tokenizer_byte_missing(t, 'a'));
    cr_assert_eq(dg_tokenizer_encode_ex(t, "ab", 2, 4u, a, 8, &na), DEG_ERR_ARG);
    dg_tokenizer_free(t);
}

/* Issue 19 item 5: SmolLM2's missing bytes (control bytes, UTF-8 lead bytes of
 * 4-byte characters) dropped as HF tokenizers drops them: the same ids
 * (tests/goldens/gen_tokenizer_dropped.py), and the tokens' bytes are the text
 * minus exactly those bytes; without the flag such a text is refused. */
Test(tokenizer, dropped_bytes_match_hf)
{
    json_error_t err;
    json_t *g = json_load_file(GOLD "dropped_bytes.json", 0, &err);
    cr_assert(g, "%s", err.text);
    size_t len;
    char *tj = read_gz(GOLD "smollm2.tokenizer.json.gz", &len);
    char path[] = "/tmp/deg_tok_smol_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_eq(write(fd, tj, len), (ssize_t)len);
    close(fd);
    free(tj);
    dg_tokenizer *t = NULL;
    cr_assert_eq(dg_tokenizer_from_json(path, NULL, &t), DEG_OK, "%s", deg_errmsg());
    unlink(path);
    json_t *miss = json_object_get(g, "missing_bytes");
    for (int b = 0; b < 256; b++) {
        int listed = 0;
        for (size_t i = 0; i < json_array_size(miss); i++)
            listed |= json_integer_value(json_array_get(miss, i)) == b;
        cr_assert_eq(dg_tokenizer_byte_missing(t, (unsigned char)b), listed, "byte 0x%02x", b);
    }
    json_t *cases = json_object_get(g, "cases");
    cr_assert(json_array_size(cases) >= 10);
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        const char *text = json_string_value(json_object_get(c, "text"));
        size_t tl = json_string_length(json_object_get(c, "text"));
        json_t *want = json_object_get(c, "ids");
        int32_t ids[256];
        size_t n = 0;
        deg_status s = dg_tokenizer_encode_ex(t, text, tl, DEG_TOKENIZE_DROP_MISSING_BYTES, ids,
                                              256, &n);
        cr_assert_eq(s, DEG_OK, "case %zu: %s", i, deg_errmsg());
        cr_assert_eq(n, json_array_size(want), "case %zu: %zu ids, HF %zu", i, n,
                     json_array_size(want));
        for (size_t k = 0; k < n; k++)
            cr_assert_eq(ids[k], json_integer_value(json_array_get(want, k)), "case %zu id %zu", i,
                         k);
        /* token bytes = the text minus the dropped bytes */
        char kept[512], got[512];
        size_t nk = 0, ng = 0, has_missing = 0;
        for (size_t k = 0; k < tl; k++) {
            if (dg_tokenizer_byte_missing(t, (unsigned char)text[k])) has_missing = 1;
            else kept[nk++] = text[k];
        }
        for (size_t k = 0; k < n; k++) {
            size_t bl = 0;
            const char *bytes = dg_tokenizer_token_bytes(t, ids[k], &bl);
            memcpy(got + ng, bytes, bl);
            ng += bl;
        }
        cr_assert(ng == nk && memcmp(got, kept, nk) == 0, "case %zu: token bytes", i);
        s = dg_tokenizer_encode_ex(t, text, tl, 0, ids, 256, &n);
        cr_assert_eq(s, has_missing ? DEG_ERR_UNSUPPORTED : DEG_OK, "case %zu strict", i);
    }
    dg_tokenizer_free(t);
    json_decref(g);
}

Test(tokenizer, token_accessors)
{
    dg_tokenizer *t = load_tiny();
    size_t len;
    const char *b = dg_tokenizer_token_bytes(t, 2, &len);
    cr_assert(b && len == 10 && memcmp(b, "<|im_end|>", 10) == 0);
    cr_assert_eq(dg_tokenizer_is_special(t, 2), 1);
    int32_t sp = dg_tokenizer_find(t, " ", 1);
    cr_assert_geq(sp, 0);
    cr_assert_eq(dg_tokenizer_is_special(t, sp), 0);
    b = dg_tokenizer_token_bytes(t, sp, &len);
    cr_assert(b && len == 1 && b[0] == ' ');  /* "Ġ" in the file */
    cr_assert_null(dg_tokenizer_token_bytes(t, 512, &len));
    cr_assert_eq(len, 0);
    cr_assert_eq(dg_tokenizer_pad(t), 0);
    cr_assert_eq(dg_tokenizer_add_bos(t), 0);
    dg_tokenizer_free(t);
}

/* ---- GGUF path ------------------------------------------------------------- */

static const char *model_path(char *buf, size_t cap)
{
    return tu_default_model(buf, cap);
}

/* The real SmolLM2 GGUF vocabulary gives the same ids as HF tokenizers on
 * the whole corpus and on the special-token texts. */
Test(tokenizer_gguf, smollm2_corpus_parity, .timeout = 300)
{
    char buf[1024];
    const char *path = model_path(buf, sizeof buf);
    if (!path) cr_skip_test("SmolLM2 GGUF not found (set DEG_MODEL or run scripts/fetch-model)");
    dg_gguf *g;
    cr_assert_eq(dg_gguf_open(path, &g), DEG_OK, "%s", deg_errmsg());
    dg_tokenizer *t;
    cr_assert_eq(dg_tokenizer_from_gguf(g, &t), DEG_OK, "%s", deg_errmsg());
    dg_gguf_close(g); /* the tokenizer keeps copies */
    cr_assert_eq(dg_tokenizer_n_vocab(t), 49152);
    cr_assert_eq(dg_tokenizer_bos(t), 1);
    cr_assert_eq(dg_tokenizer_eos(t), 2);
    cr_assert_eq(dg_tokenizer_pad(t), 2);
    cr_assert_eq(dg_tokenizer_add_bos(t), 0);
    cr_assert_eq(dg_tokenizer_find(t, "<|im_end|>", 10), 2);
    cr_assert_eq(dg_tokenizer_is_special(t, 1), 1);
    run_variants_with(0, t, "gguf");
    dg_tokenizer_free(t);
}

/* Hand-made GGUF vocabularies: 256 byte tokens + "ab" + "<|end|>". */
static void kv_str(tu_buf *b, const char *k, const char *v)
{
    tu_str(b, k);
    tu_u32(b, 8);
    tu_str(b, v);
}

static void kv_u32(tu_buf *b, const char *k, uint32_t v)
{
    tu_str(b, k);
    tu_u32(b, 4);
    tu_u32(b, v);
}

static void spell_byte(unsigned b, char out[3])
{
    unsigned cp = b, n = 0;
    int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    if (!printable) {
        for (unsigned i = 0; i < b; i++)
            if (!((i >= 0x21 && i <= 0x7E) || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE)) n++;
        cp = 0x100 + n;
    }
    if (cp < 0x80) { out[0] = (char)cp; out[1] = 0; }
    else { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); out[2] = 0; }
}

typedef struct mini_opts {
    const char *model, *pre, *merge;
    int omit_tokens, short_types;
    uint32_t bos;
} mini_opts;

static deg_status load_mini(mini_opts o, dg_tokenizer **out)
{
    tu_buf b = {0};
    int n_kv = 5 + (o.omit_tokens ? 0 : 1) + (o.pre ? 1 : 0) + (o.bos ? 1 : 0);
    tu_put(&b, "GGUF", 4);
    tu_u32(&b, 3);
    tu_u64(&b, 0);
    tu_u64(&b, (uint64_t)n_kv);
    kv_str(&b, "general.architecture", "llama");
    kv_str(&b, "tokenizer.ggml.model", o.model ? o.model : "gpt2");
    if (o.pre) kv_str(&b, "tokenizer.ggml.pre", o.pre);
    if (!o.omit_tokens) {
        tu_str(&b, "tokenizer.ggml.tokens");
        tu_u32(&b, 9);
        tu_u32(&b, 8);
        tu_u64(&b, 258);
        for (unsigned i = 0; i < 256; i++) {
            char s[3];
            spell_byte(i, s);
            tu_str(&b, s);
        }
        tu_str(&b, "ab");
        tu_str(&b, "<|end|>");
    }
    tu_str(&b, "tokenizer.ggml.token_type");
    tu_u32(&b, 9);
    tu_u32(&b, 5);
    uint64_t nt = o.short_types ? 10 : 258;
    tu_u64(&b, nt);
    for (uint64_t i = 0; i < nt; i++) tu_u32(&b, i == 257 ? 3 : 1);
    tu_str(&b, "tokenizer.ggml.merges");
    tu_u32(&b, 9);
    tu_u32(&b, 8);
    tu_u64(&b, 1);
    tu_str(&b, o.merge ? o.merge : "a b");
    kv_u32(&b, "tokenizer.ggml.eos_token_id", 257);
    if (o.bos) kv_u32(&b, "tokenizer.ggml.bos_token_id", o.bos);
    char *dir = tu_mkdtemp();
    char *path = tu_path(dir, "mini.gguf");
    tu_write(path, b.p, b.n);
    free(b.p);
    dg_gguf *g = NULL;
    deg_status st = dg_gguf_open(path, &g);
    cr_assert_eq(st, DEG_OK, "%s", deg_errmsg());
    *out = NULL;
    st = dg_tokenizer_from_gguf(g, out);
    dg_gguf_close(g);
    tu_rmrf(dir);
    free(path);
    free(dir);
    return st;
}

Test(tokenizer_gguf, mini_vocabulary)
{
    dg_tokenizer *t;
    cr_assert_eq(load_mini((mini_opts){0}, &t), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(dg_tokenizer_n_vocab(t), 258);
    cr_assert_eq(dg_tokenizer_eos(t), 257);
    cr_assert_eq(dg_tokenizer_bos(t), -1);
    int32_t ids[16];
    size_t n;
    cr_assert_eq(dg_tokenizer_encode(t, "ab<|end|>ab", 11, 1, ids, 16, &n), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(n, 3);
    cr_assert(ids[0] == 256 && ids[1] == 257 && ids[2] == 256);
    cr_assert_eq(dg_tokenizer_encode(t, "ab<|end|>", 9, 0, ids, 16, &n), DEG_OK);
    cr_assert_eq(n, 8); /* "ab" + 7 single bytes */
    cr_assert_eq(dg_tokenizer_encode(t, " ab", 3, 1, ids, 16, &n), DEG_OK);
    cr_assert(n == 2 && ids[0] == ' ' && ids[1] == 256); /* " ab" has no merge with the space */
    dg_tokenizer_free(t);
}

Test(tokenizer_gguf, bad_metadata)
{
    dg_tokenizer *t = (dg_tokenizer *)0x1;
    cr_assert_eq(load_mini((mini_opts){.model = "llama"}, &t), DEG_ERR_UNSUPPORTED);
    cr_assert(strstr(deg_errmsg(), "llama"), "%s", deg_errmsg());
    cr_assert_null(t);
    cr_assert_eq(load_mini((mini_opts){.pre = "mystery-pre"}, &t), DEG_ERR_UNSUPPORTED);
    cr_assert(strstr(deg_errmsg(), "mystery-pre"), "%s", deg_errmsg());
    cr_assert_eq(load_mini((mini_opts){.omit_tokens = 1}, &t), DEG_ERR_FORMAT);
    cr_assert_eq(load_mini((mini_opts){.short_types = 1}, &t), DEG_ERR_FORMAT);
    cr_assert(strstr(deg_errmsg(), "token_type"), "%s", deg_errmsg());
    cr_assert_eq(load_mini((mini_opts){.merge = "ab"}, &t), DEG_ERR_FORMAT);
    cr_assert(strstr(deg_errmsg(), "merges[0]"), "%s", deg_errmsg());
    cr_assert_eq(load_mini((mini_opts){.merge = "a zq"}, &t), DEG_ERR_FORMAT);
    cr_assert_eq(load_mini((mini_opts){.merge = "b c"}, &t), DEG_ERR_FORMAT); /* "bc" absent */
    cr_assert_eq(load_mini((mini_opts){.bos = 999}, &t), DEG_ERR_FORMAT);
    cr_assert(strstr(deg_errmsg(), "bos_token_id"), "%s", deg_errmsg());
    cr_assert_eq(load_mini((mini_opts){.pre = "qwen2"}, &t), DEG_OK, "%s", deg_errmsg());
    dg_tokenizer_free(t);
    cr_assert_eq(load_mini((mini_opts){.pre = "llama-bpe"}, &t), DEG_OK, "%s", deg_errmsg());
    dg_tokenizer_free(t);
}

/* ---- public API (deg_tokenize / deg_detokenize) ------------------------------- */

Test(tokenizer_api, tiny_model_round_trip)
{
    deg_model *m = NULL;
    deg_status st = deg_model_load(DEG_SOURCE_ROOT "/tests/goldens/tiny-llama", &m);
    cr_assert_eq(st, DEG_OK, "%s", deg_errmsg());
    const dg_tokenizer *t = dg_model_tokenizer(m);
    cr_assert_not_null(t);
    const char *text = "<|im_start|>user\nHello, tokens 12345 \xE2\x9C\x93<|im_end|>\n";
    size_t len = strlen(text), n = 0, n2 = 0;
    int32_t ids[256], ids2[256];
    cr_assert_eq(deg_tokenize(m, text, len, 1, ids, 256, &n), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(dg_tokenizer_encode(t, text, len, 1, ids2, 256, &n2), DEG_OK);
    cr_assert(n == n2 && memcmp(ids, ids2, n * sizeof *ids) == 0);
    cr_assert_eq(ids[0], dg_tokenizer_find(t, "<|im_start|>", 12));
    size_t n_plain = 0;
    cr_assert_eq(deg_tokenize(m, text, len, 0, ids2, 256, &n_plain), DEG_OK);
    cr_assert_gt(n_plain, n);
    char buf[512];
    size_t blen = 0;
    cr_assert_eq(deg_detokenize(m, ids, n, buf, sizeof buf, &blen), DEG_OK, "%s", deg_errmsg());
    cr_assert(blen == len && memcmp(buf, text, len) == 0);
    /* rows of the embedding beyond the tokenizer decode to nothing */
    deg_model_info info;
    cr_assert_eq(deg_model_get_info(m, &info), DEG_OK);
    int32_t n_tok = dg_tokenizer_n_vocab(t);
    if (info.n_vocab > n_tok) {
        int32_t pad[] = {ids[0], n_tok, ids[1]};
        cr_assert_eq(deg_detokenize(m, pad, 3, buf, sizeof buf, &blen), DEG_OK, "%s", deg_errmsg());
        int32_t two[] = {ids[0], ids[1]};
        size_t blen2 = 0;
        char buf2[512];
        cr_assert_eq(deg_detokenize(m, two, 2, buf2, sizeof buf2, &blen2), DEG_OK);
        cr_assert(blen == blen2 && memcmp(buf, buf2, blen) == 0);
    }
    int32_t bad[] = {ids[0], info.n_vocab};
    cr_assert_eq(deg_detokenize(m, bad, 2, buf, sizeof buf, &blen), DEG_ERR_RANGE);
    cr_assert(strstr(deg_errmsg(), "index 1"), "%s", deg_errmsg());
    cr_assert_eq(deg_tokenize(m, "a\xC0\xAF", 3, 1, ids, 256, &n), DEG_ERR_UTF8);
    cr_assert(strstr(deg_errmsg(), "byte offset 1"), "%s", deg_errmsg());
    cr_assert_eq(deg_tokenize(NULL, "a", 1, 1, ids, 256, &n), DEG_ERR_ARG);
    cr_assert_eq(deg_detokenize(NULL, ids, 1, buf, sizeof buf, &blen), DEG_ERR_ARG);
    deg_model_free(m);
}
