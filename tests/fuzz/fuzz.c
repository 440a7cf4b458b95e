/* libFuzzer targets (issue 19): one source, one target per build (-DFUZZ_<NAME>),
 * built by tests/fuzz/meson.build with clang (-Dfuzz=true) and run by
 * scripts/fuzz. Every target checks more than "no crash" (ASan/UBSan in the
 * build catch memory and UB errors):
 *  - gguf, safetensors, tokenizer_json: readers over arbitrary files; what
 *    opens is walked whole (every key, tensor byte, token);
 *  - tokenize: SmolLM2's tokenizer (tests/goldens) on arbitrary text: strict
 *    mode decodes back to the text byte for byte, drop mode to the text minus
 *    exactly the bytes the vocabulary lacks (the HF rule, tests/goldens);
 *  - schema: compile twice -> the same fingerprint and plan JSON;
 *  - request: request / options parsing; an accepted request renders again;
 *  - validate: schema NUL value; the same verdict twice;
 *  - acceptor: pattern NUL text: a text eos_ok accepts is also prefix_ok;
 *  - parse: number / date / date-time parsers (outputs re-parse to themselves
 *    and pass the format checks) and the UTF-8 validator against an
 *    independent decoder written here (Unicode 15 Table 3-7). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/utf8.h"
#include "deg.h"
#include "deg/compareprior.h"
#include "deg/keyprior.h"
#include "deg/licenseprior.h"
#include "deg/lists.h"
#include "format/gguf.h"
#include "format/safetensors.h"
#include "tokenizer/tokenizer.h"

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #c, __FILE__, __LINE__); \
            abort();                                                               \
        }                                                                          \
    } while (0)

/* the input as a file (readers take paths): an anonymous memfd */
__attribute__((unused)) static int as_file(const uint8_t *d, size_t n, char *path, size_t cap)
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    CHECK(fd >= 0);
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, d + off, n - off);
        CHECK(w > 0);
        off += (size_t)w;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

static volatile uint8_t sink;
__attribute__((unused)) static void touch(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint8_t x = 0;
    for (size_t i = 0; i < n; i++) x ^= b[i];
    sink ^= x;
}

__attribute__((unused)) static char *cstr(const uint8_t *d, size_t n)
{
    char *s = malloc(n + 1);
    memcpy(s, d, n);
    s[n] = 0;
    return s;
}

#if defined(FUZZ_GGUF)
static void run(const uint8_t *d, size_t n)
{
    char path[64];
    int fd = as_file(d, n, path, sizeof path);
    dg_gguf *g = NULL;
    if (dg_gguf_open(path, &g) == DEG_OK) {
        for (size_t i = 0; i < dg_gguf_n_kv(g); i++) {
            const char *k = dg_gguf_kv_key(g, i);
            dg_gguf_str s;
            if (dg_gguf_get_str(g, k, &s) == DEG_OK) touch(s.ptr, (size_t)s.len);
        }
        for (size_t i = 0; i < dg_gguf_n_tensors(g); i++) {
            const dg_tensor_view *t = dg_gguf_tensor(g, i);
            touch(t->data, t->n_bytes);
        }
        dg_gguf_close(g);
    } else {
        CHECK(deg_errmsg()[0]);
    }
    close(fd);
}
#elif defined(FUZZ_SAFETENSORS)
static void run(const uint8_t *d, size_t n)
{
    char path[64];
    int fd = as_file(d, n, path, sizeof path);
    dg_safetensors *st = NULL;
    if (dg_safetensors_open(path, &st) == DEG_OK) {
        /* the reference's rule: the tensors cover the data exactly */
        size_t covered = 0;
        for (size_t i = 0; i < dg_safetensors_n_tensors(st); i++) {
            const dg_tensor_view *t = dg_safetensors_tensor(st, i);
            touch(t->data, t->n_bytes);
            covered += t->n_bytes;
        }
        uint64_t hl;
        memcpy(&hl, d, 8);
        CHECK(covered == n - 8 - hl);
        dg_safetensors_close(st);
    } else {
        CHECK(deg_errmsg()[0]);
    }
    close(fd);
}
#elif defined(FUZZ_TOKENIZER_JSON)
static void run(const uint8_t *d, size_t n)
{
    char path[64];
    int fd = as_file(d, n, path, sizeof path);
    dg_tokenizer *t = NULL;
    if (dg_tokenizer_from_json(path, NULL, &t) == DEG_OK) {
        static const char text[] = "Order 4711: caf\xc3\xa9 <|im_start|> x\x04y \xf0\x9f\x98\x80";
        int32_t ids[256];
        size_t k = 0;
        if (dg_tokenizer_encode_ex(t, text, sizeof text - 1, DEG_TOKENIZE_SPECIAL |
                                   DEG_TOKENIZE_DROP_MISSING_BYTES, ids, 256, &k) == DEG_OK) {
            char buf[1024];
            size_t len = 0;
            CHECK(dg_tokenizer_decode(t, ids, k, buf, sizeof buf, &len) != DEG_ERR_INTERNAL);
        }
        dg_tokenizer_free(t);
    }
    close(fd);
}
#elif defined(FUZZ_TOKENIZE)
static dg_tokenizer *tok;
static void run(const uint8_t *d, size_t n)
{
    if (!tok) {
        /* SmolLM2's tokenizer.json (plain copy made by scripts/fuzz) */
        const char *p = getenv("DEG_FUZZ_TOKENIZER");
        CHECK(p && dg_tokenizer_from_json(p, NULL, &tok) == DEG_OK);
    }
    size_t cap = 2 * n + 8, k = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    char *out = malloc(4 * n + 64), *kept = malloc(n + 1);
    size_t len = 0, nk = 0;
    int valid = dg_utf8_validate((const char *)d, n, NULL);
    deg_status s = dg_tokenizer_encode_ex(tok, (const char *)d, n, 0, ids, cap, &k);
    if (!valid) CHECK(s == DEG_ERR_UTF8);
    if (s == DEG_OK) { /* strict: decode is the exact inverse */
        CHECK(dg_tokenizer_decode(tok, ids, k, out, 4 * n + 64, &len) == DEG_OK);
        CHECK(len == n && memcmp(out, d, n) == 0);
    }
    s = dg_tokenizer_encode_ex(tok, (const char *)d, n, DEG_TOKENIZE_DROP_MISSING_BYTES, ids, cap,
                               &k);
    CHECK(valid ? s == DEG_OK : s == DEG_ERR_UTF8);
    if (s == DEG_OK) { /* drop: the text minus exactly the missing bytes */
        for (size_t i = 0; i < n; i++)
            if (!dg_tokenizer_byte_missing(tok, d[i])) kept[nk++] = (char)d[i];
        CHECK(dg_tokenizer_decode(tok, ids, k, out, 4 * n + 64, &len) == DEG_OK);
        CHECK(len == nk && memcmp(out, kept, nk) == 0);
    }
    free(ids);
    free(out);
    free(kept);
}
#elif defined(FUZZ_SCHEMA)
static void run(const uint8_t *d, size_t n)
{
    deg_plan *a = NULL, *b = NULL;
    char *errs = NULL;
    deg_status s = deg_plan_compile((const char *)d, n, &a, &errs);
    if (s == DEG_OK) {
        CHECK(deg_plan_compile((const char *)d, n, &b, NULL) == DEG_OK);
        CHECK(strcmp(deg_plan_fingerprint(a), deg_plan_fingerprint(b)) == 0);
        char *ja = NULL, *jb = NULL;
        CHECK(deg_plan_to_json(a, &ja) == DEG_OK && deg_plan_to_json(b, &jb) == DEG_OK);
        CHECK(strcmp(ja, jb) == 0);
        deg_free(ja);
        deg_free(jb);
    } else {
        CHECK(s == DEG_ERR_SCHEMA || s == DEG_ERR_NOMEM);
        CHECK(errs != NULL);
    }
    deg_plan_free(a);
    deg_plan_free(b);
    deg_free(errs);
}
#elif defined(FUZZ_REQUEST)
static void run(const uint8_t *d, size_t n)
{
    deg_request *r = NULL;
    char *errs = NULL;
    deg_status s = deg_request_parse((const char *)d, n, &r, &errs);
    if (s == DEG_OK) {
        size_t len = 0;
        const char *ctx = deg_request_context(r, &len);
        touch(ctx, len);
        CHECK(deg_request_plan(r) != NULL);
        deg_fill_options o = deg_request_options(r);
        CHECK(o.max_new_tokens >= 1);
        deg_request_free(r);
    } else {
        CHECK(s == DEG_ERR_REQUEST || s == DEG_ERR_SCHEMA || s == DEG_ERR_UTF8 ||
              s == DEG_ERR_NOMEM);
    }
    deg_free(errs);
    deg_fill_options o;
    char *e2 = NULL;
    (void)deg_fill_options_parse((const char *)d, n, &o, &e2);
    deg_free(e2);
}
#elif defined(FUZZ_VALIDATE)
static void run(const uint8_t *d, size_t n)
{
    const uint8_t *z = memchr(d, 0, n);
    if (!z) return;
    char *schema = cstr(d, (size_t)(z - d)), *value = cstr(z + 1, n - (size_t)(z - d) - 1);
    size_t n1 = 0, n2 = 0;
    char *e1 = NULL, *e2 = NULL;
    deg_status s1 = deg_validate(schema, value, &n1, &e1);
    deg_status s2 = deg_validate(schema, value, &n2, &e2);
    CHECK(s1 == s2 && n1 == n2);
    if (s1 == DEG_OK) CHECK(strcmp(e1, e2) == 0 && (n1 == 0) == (strcmp(e1, "[]") == 0));
    deg_free(e1);
    deg_free(e2);
    free(schema);
    free(value);
}
#elif defined(FUZZ_ACCEPTOR)
static void run(const uint8_t *d, size_t n)
{
    const uint8_t *z = memchr(d, 0, n);
    if (!z || z - d < 1 || n < 2) return;
    char *pat = cstr(d, (size_t)(z - d));
    const char *text = (const char *)z + 1;
    size_t tl = n - (size_t)(z - d) - 1;
    size_t minl = d[0] % 4, maxl = d[0] & 0x80 ? SIZE_MAX : 8 + d[0] % 16;
    deg_acceptor *a = NULL;
    if (deg_acceptor_new(pat, minl, maxl, &a) == DEG_OK) {
        for (size_t k = 0; k <= tl && k < 64; k++) {
            int eos = deg_acceptor_eos_ok(a, text, k), pre = deg_acceptor_prefix_ok(a, text, k);
            if (eos) CHECK(pre); /* a complete valid text is a valid prefix of itself */
        }
        deg_acceptor_free(a);
    }
    free(pat);
}
#elif defined(FUZZ_PARSE)
/* Independent UTF-8 decoder (Unicode Table 3-7, well-formed sequences). */
static int ref_utf8_ok(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t b = s[i];
        size_t need;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b < 0x80) { i++; continue; }
        else if (b >= 0xC2 && b <= 0xDF) need = 1;
        else if (b == 0xE0) { need = 2; lo = 0xA0; }
        else if (b >= 0xE1 && b <= 0xEC) need = 2;
        else if (b == 0xED) { need = 2; hi = 0x9F; }
        else if (b >= 0xEE && b <= 0xEF) need = 2;
        else if (b == 0xF0) { need = 3; lo = 0x90; }
        else if (b >= 0xF1 && b <= 0xF3) need = 3;
        else if (b == 0xF4) { need = 3; hi = 0x8F; }
        else return 0;
        if (i + need >= n) return 0; /* truncated */
        if (s[i + 1] < lo || s[i + 1] > hi) return 0;
        for (size_t k = 2; k <= need; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
        i += need + 1;
    }
    return 1;
}

static void run(const uint8_t *d, size_t n)
{
    CHECK(!!dg_utf8_validate((const char *)d, n, NULL) == ref_utf8_ok(d, n));
    char *out = NULL;
    for (int integer = 0; integer < 2; integer++) {
        if (deg_parse_number((const char *)d, n, integer, &out) == DEG_OK) {
            char *again = NULL;
            CHECK(deg_parse_number(out, strlen(out), integer, &again) == DEG_OK);
            CHECK(strcmp(out, again) == 0);
            deg_free(again);
        }
        deg_free(out);
        out = NULL;
    }
    for (int order = 0; order < 3; order++) {
        int ok = 0;
        if (deg_parse_date((const char *)d, n, (deg_date_order)order, &out) == DEG_OK) {
            CHECK(strlen(out) == 10);
            CHECK(deg_format_check("date", out, 10, &ok) == DEG_OK && ok == 1);
        }
        deg_free(out);
        out = NULL;
        int assumed = 0;
        if (deg_parse_datetime((const char *)d, n, (deg_date_order)order, "Z", &out, &assumed) ==
            DEG_OK) {
            CHECK(deg_format_check("date-time", out, strlen(out), &ok) == DEG_OK && ok == 1);
        }
        deg_free(out);
        out = NULL;
    }
    size_t *spans = NULL, ns = 0;
    static const char *const kinds[] = {"number", "integer", "date", "email", "uri", "uuid"};
    for (int k = 0; k < 6; k++) {
        if (deg_candidates(kinds[k], (const char *)d, n, &spans, &ns) == DEG_OK)
            for (size_t i = 0; i < ns; i++) CHECK(spans[2 * i] < spans[2 * i + 1]);
        deg_free(spans);
        spans = NULL;
    }
}
#elif defined(FUZZ_LISTS)
/* The list prior's scan of a context (lists.c, tables.c; valid UTF-8 only, as a
 * request's context is): every item and cell inside the text, items non-empty,
 * cells in order; the key lines' values inside the text (keyprior.c, HTML rows
 * included); a comparison read from the same bytes as a name and as a description
 * (compareprior.c) has a key and, when it compares with a value, one. */
static void run(const uint8_t *d, size_t n)
{
    if (!dg_utf8_validate((const char *)d, n, NULL)) return;
    size_t n_cp = dg_utf8_count((const char *)d, n);
    dg_lists ls = {0};
    if (dg_lists_scan((const char *)d, n, &ls) != DEG_OK) return; /* out of memory only */
    size_t items = 0;
    for (size_t i = 0; i < ls.n; i++) {
        CHECK(ls.p[i].first + ls.p[i].n <= ls.n_items && (ls.p[i].n > 0));
        items += ls.p[i].n;
    }
    CHECK(items == ls.n_items);
    for (size_t i = 0; i < ls.n_items; i++) {
        CHECK(ls.item[2 * i] < ls.item[2 * i + 1] && ls.item[2 * i + 1] <= n_cp);
        CHECK(ls.item_cell[i] <= ls.item_cell[i + 1]);
    }
    CHECK(ls.item_cell[ls.n_items] == ls.n_cells);
    for (size_t c = 0; c < ls.n_cells; c++)
        CHECK(ls.cell[c].c0 <= ls.cell[c].c1 && ls.cell[c].c1 <= n_cp);
    dg_lists_free(&ls);
    dg_keylines kv = {0};
    if (dg_keylines_scan((const char *)d, n, &kv) != DEG_OK) return;
    for (size_t i = 0; i < kv.n; i++)
        CHECK(kv.p[i].val0 < kv.p[i].val1 && kv.p[i].val1 <= n_cp && kv.p[i].key[0]);
    dg_keylines_free(&kv);
    for (int is_name = 0; is_name < 2; is_name++) {
        dg_cmp_pred p;
        if (!dg_cmp_parse((const char *)d, n, is_name, &p)) continue;
        CHECK(p.op != DG_CMP_NONE && p.key[0]);
        CHECK(p.op == DG_CMP_GREATER || p.value[0] || !is_name);
    }
    /* the licences the text states and names (licenseprior.c): known families, versions
     * of one digit */
    dg_license w[8], o;
    size_t nw = dg_license_written((const char *)d, n, w, 8);
    CHECK(nw <= 8);
    for (size_t i = 0; i < nw; i++)
        CHECK(w[i].family != DG_LIC_NONE && w[i].major <= 9 && w[i].minor <= 9);
    if (dg_license_parse((const char *)d, n, &o))
        CHECK(o.family != DG_LIC_NONE && o.major <= 9 && o.later <= 1);
}
#else
#error "define one FUZZ_<TARGET>"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20)) return 0;
    run(data, size);
    return 0;
}
