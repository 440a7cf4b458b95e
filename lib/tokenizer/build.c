/* Tokenizer construction shared by the tokenizer.json and GGUF loaders:
 * token table, bytes->id hash, merge-rank hash, added tokens, pre-tokenizer
 * steps. The GPT-2 byte alphabet is the one of tokenizers'
 * pre_tokenizers/byte_level.rs (bytes_char) and OpenAI's encoder.py. */
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/regex.h"
#include "base/status.h"
#include "tokenizer/tok_internal.h"

/* ---- GPT-2 byte alphabet ------------------------------------------------ */

/* Printable bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand for themselves;
 * the other 68 bytes map, in byte order, to U+0100..U+0143. */
static int byte_is_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

static uint32_t byte_to_cp(unsigned b)
{
    if (byte_is_printable(b)) return b;
    unsigned n = 0;
    for (unsigned i = 0; i < b; i++)
        if (!byte_is_printable(i)) n++;
    return 0x100 + n;
}

/* Code point -> byte, -1 if the code point is not in the alphabet. */
static int cp_to_byte(uint32_t cp)
{
    static int table[0x144];
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        int tmp[0x144];
        for (int i = 0; i < 0x144; i++) tmp[i] = -1;
        for (unsigned b = 0; b < 256; b++) tmp[byte_to_cp(b)] = (int)b;
        memcpy(table, tmp, sizeof tmp); /* idempotent: racing writers agree */
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return cp < 0x144 ? table[cp] : -1;
}

/* Lenient UTF-8 decode for token strings (GGUF strings are unchecked):
 * returns the length (1..4) or 0 if ill-formed. */
static int decode_cp(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len == 0 || (size_t)len > n) return 0;
    uint32_t v = c & (0x3F >> (len - 1));
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return len;
}

size_t dg_tok_unspell(const char *s, size_t len, char *out, int *spelled)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < len) {
        uint32_t cp;
        int k = decode_cp(u + i, len - i, &cp);
        int b = k ? cp_to_byte(cp) : -1;
        if (b < 0) {
            memcpy(out, s, len);
            if (spelled) *spelled = 0;
            return len;
        }
        out[o++] = (char)b;
        i += (size_t)k;
    }
    if (spelled) *spelled = 1;
    return o;
}

void dg_tok_spell(const char *raw, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        uint32_t cp = byte_to_cp((unsigned char)raw[i]);
        if (cp < 0x80) out[o++] = (char)cp;
        else { out[o++] = (char)(0xC0 | (cp >> 6)); out[o++] = (char)(0x80 | (cp & 0x3F)); }
    }
    out[o] = '\0';
}

/* ---- hashing -------------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
    return h ^ (h >> 29);
}

static inline uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static size_t pow2_at_least(size_t n)
{
    size_t p = 16;
    while (p < n) p <<= 1;
    return p;
}

int32_t dg_tok_lookup_raw(const dg_tokenizer *t, const char *s, size_t len)
{
    if (!t->vhash) return -1;
    size_t i = hash_bytes(s, len) & t->vhash_mask;
    for (;;) {
        int32_t id = t->vhash[i];
        if (id < 0) return -1;
        const dg_tok_entry *e = &t->tok[id];
        if (e->len == len && memcmp(t->bytes + e->off, s, len) == 0) return id;
        i = (i + 1) & t->vhash_mask;
    }
}

int32_t dg_tok_lookup_spelled(const dg_tokenizer *t, const char *s, size_t len)
{
    char stackbuf[256];
    char *buf = len <= sizeof stackbuf ? stackbuf : malloc(len);
    if (!buf) return -1;
    int spelled;
    size_t n = dg_tok_unspell(s, len, buf, &spelled);
    int32_t id = -1;
    if (spelled) {
        id = dg_tok_lookup_raw(t, buf, n);
    } else {
        /* Not in the byte alphabet: only reachable as an unspelled token. */
        for (int32_t i = 0; i < t->n_vocab; i++) {
            const dg_tok_entry *e = &t->tok[i];
            if ((e->flags & DG_TOKF_PRESENT) && !t->reachable[i] && e->len == n &&
                memcmp(t->bytes + e->off, buf, n) == 0) { id = i; break; }
        }
    }
    if (buf != stackbuf) free(buf);
    return id;
}

/* ---- builder ------------------------------------------------------------ */

deg_status dg_tokb_new(dg_tokenizer **out)
{
    dg_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return dg_fail(DEG_ERR_NOMEM, "tokenizer: out of memory");
    t->bos = t->eos = t->pad = -1;
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
    *out = t;
    return DEG_OK;
}

/* Make room for ids [0, n). */
static deg_status grow_ids(dg_tokenizer *t, size_t n)
{
    if (n <= t->tok_cap) {
        if ((int32_t)n > t->n_vocab) t->n_vocab = (int32_t)n;
        return DEG_OK;
    }
    size_t old = t->tok_cap;
    void *const arrs[] = {&t->tok, &t->reachable};
    const size_t elems[] = {sizeof *t->tok, sizeof *t->reachable};
    deg_status st = dg_grow_all(arrs, elems, 2, &t->tok_cap, n);
    if (st != DEG_OK) return dg_fail_context(st, "tokenizer");
    memset(t->tok + old, 0, (t->tok_cap - old) * sizeof *t->tok);
    memset(t->reachable + old, 0, (t->tok_cap - old) * sizeof *t->reachable);
    if ((int32_t)n > t->n_vocab) t->n_vocab = (int32_t)n;
    return DEG_OK;
}

static deg_status push_bytes(char **buf, size_t *len, size_t *cap, const char *s, size_t n,
                             uint32_t *off)
{
    if (*len + n > UINT32_MAX) return dg_fail(DEG_ERR_RANGE, "tokenizer: vocabulary text over 4 GiB");
    deg_status st = dg_grow(buf, cap, *len + n, 1);
    if (st != DEG_OK) return dg_fail_context(st, "tokenizer");
    if (n) memcpy(*buf + *len, s, n);
    *off = (uint32_t)*len;
    *len += n;
    return DEG_OK;
}

/* Ids are capped well below INT32_MAX so n_vocab + 1 never overflows. */
#define DG_TOK_MAX_ID (1 << 24)

deg_status dg_tokb_set_token(dg_tokenizer *t, int32_t id, const char *raw, size_t len,
                             int reachable)
{
    if (id < 0 || id >= DG_TOK_MAX_ID)
        return dg_fail(DEG_ERR_FORMAT, "token id %d out of range [0, %d)", id, DG_TOK_MAX_ID);
    DG_TRY(grow_ids(t, (size_t)id + 1));
    uint32_t off = 0;
    DG_TRY(push_bytes(&t->bytes, &t->bytes_len, &t->bytes_cap, raw, len, &off));
    t->tok[id].off = off;
    t->tok[id].len = (uint32_t)len;
    t->tok[id].flags |= DG_TOKF_PRESENT;
    t->reachable[id] = reachable ? 1 : 0;
    return DEG_OK;
}

deg_status dg_tokb_vocab_done(dg_tokenizer *t)
{
    size_t n = 0;
    for (int32_t i = 0; i < t->n_vocab; i++)
        if (t->reachable[i]) n++;
    size_t cap = pow2_at_least(2 * n + 1);
    free(t->vhash);
    t->vhash = malloc(cap * sizeof *t->vhash);
    if (!t->vhash) return dg_fail(DEG_ERR_NOMEM, "tokenizer: out of memory");
    memset(t->vhash, 0xFF, cap * sizeof *t->vhash);
    t->vhash_mask = cap - 1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (!t->reachable[id]) continue;
        const dg_tok_entry *e = &t->tok[id];
        const char *s = t->bytes + e->off;
        size_t i = hash_bytes(s, e->len) & t->vhash_mask;
        for (;;) {
            int32_t o = t->vhash[i];
            if (o < 0) { t->vhash[i] = id; break; }
            const dg_tok_entry *oe = &t->tok[o];
            if (oe->len == e->len && memcmp(t->bytes + oe->off, s, e->len) == 0) {
                t->vhash[i] = id; /* later duplicate wins, as a dict built in order */
                break;
            }
            i = (i + 1) & t->vhash_mask;
        }
    }
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        t->byte_id[b] = dg_tok_lookup_raw(t, &c, 1);
        if (t->byte_id[b] < 0) t->missing_bytes = 1;
    }
    return DEG_OK;
}

static deg_status merges_reserve(dg_tokenizer *t, size_t n)
{
    if (2 * n + 1 <= t->merge_mask + 1 && t->merges) return DEG_OK;
    size_t cap = pow2_at_least(2 * n + 1 < 4096 ? 4096 : 2 * n + 1);
    dg_merge_slot *m = malloc(cap * sizeof *m);
    if (!m) return dg_fail(DEG_ERR_NOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < cap; i++) m[i].key = UINT64_MAX;
    size_t mask = cap - 1;
    if (t->merges) {
        for (size_t i = 0; i <= t->merge_mask; i++) {
            if (t->merges[i].key == UINT64_MAX) continue;
            size_t j = hash_u64(t->merges[i].key) & mask;
            while (m[j].key != UINT64_MAX) j = (j + 1) & mask;
            m[j] = t->merges[i];
        }
        free(t->merges);
    }
    t->merges = m;
    t->merge_mask = mask;
    return DEG_OK;
}

deg_status dg_tokb_add_merge(dg_tokenizer *t, const char *a, size_t alen, const char *b,
                             size_t blen, uint32_t rank)
{
    int32_t ia = dg_tok_lookup_spelled(t, a, alen);
    if (ia < 0) return dg_fail(DEG_ERR_FORMAT, "merge %u: token \"%.*s\" is not in the vocabulary",
                               rank, (int)(alen > 200 ? 200 : alen), a);
    int32_t ib = dg_tok_lookup_spelled(t, b, blen);
    if (ib < 0) return dg_fail(DEG_ERR_FORMAT, "merge %u: token \"%.*s\" is not in the vocabulary",
                               rank, (int)(blen > 200 ? 200 : blen), b);
    if (!t->reachable[ia] || !t->reachable[ib]) return DEG_OK; /* can never fire */
    const dg_tok_entry *ea = &t->tok[ia], *eb = &t->tok[ib];
    size_t n = (size_t)ea->len + eb->len;
    char stackbuf[512];
    char *buf = n <= sizeof stackbuf ? stackbuf : malloc(n);
    if (!buf) return dg_fail(DEG_ERR_NOMEM, "tokenizer: out of memory");
    memcpy(buf, t->bytes + ea->off, ea->len);
    memcpy(buf + ea->len, t->bytes + eb->off, eb->len);
    int32_t im = dg_tok_lookup_raw(t, buf, n);
    if (buf != stackbuf) free(buf);
    if (im < 0)
        return dg_fail(DEG_ERR_FORMAT, "merge %u: \"%.*s\" + \"%.*s\" is not in the vocabulary",
                       rank, (int)(alen > 200 ? 200 : alen), a, (int)(blen > 200 ? 200 : blen), b);
    DG_TRY(merges_reserve(t, t->n_merges + 1));
    uint64_t key = ((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib;
    size_t j = hash_u64(key) & t->merge_mask;
    while (t->merges[j].key != UINT64_MAX && t->merges[j].key != key) j = (j + 1) & t->merge_mask;
    if (t->merges[j].key == UINT64_MAX) t->n_merges++;
    t->merges[j].key = key;  /* a later duplicate overrides, as in tokenizers */
    t->merges[j].rank = rank;
    t->merges[j].id = im;
    return DEG_OK;
}

deg_status dg_tokb_add_added(dg_tokenizer *t, int32_t id, const char *content, size_t len,
                             int special, int lstrip, int rstrip, int single_word,
                             int normalized)
{
    if (len == 0) return DEG_OK; /* tokenizers ignores empty added tokens */
    if (id < 0 || id >= DG_TOK_MAX_ID)
        return dg_fail(DEG_ERR_FORMAT, "added token id %d out of range [0, %d)", id, DG_TOK_MAX_ID);
    DG_TRY(grow_ids(t, (size_t)id + 1));
    deg_status gs = DG_GROW(t->added, t->added_cap, t->n_added + 1);
    if (gs != DEG_OK) return dg_fail_context(gs, "tokenizer");
    dg_tok_added *a = &t->added[t->n_added];
    /* tokenizers matches a normalized token by its normalized content. */
    char *norm = NULL;
    size_t norm_cap = 0;
    if (normalized && t->normalizer == DG_NORM_NFC && dg_tok_nfc_needed(content, len)) {
        DG_TRY(dg_tok_nfc(content, len, &norm, &norm_cap, &len));
        content = norm;
    }
    deg_status ps = push_bytes(&t->added_bytes, &t->added_bytes_len, &t->added_bytes_cap, content,
                               len, &a->off);
    if (ps != DEG_OK) { free(norm); return ps; }
    a->len = (uint32_t)len;
    a->id = id;
    a->special = special != 0;
    a->lstrip = lstrip != 0;
    a->rstrip = rstrip != 0;
    a->single_word = single_word != 0;
    a->normalized = normalized != 0;
    t->n_added++;

    /* Decode form: what tokenizers' ByteLevel decoder makes of the content. */
    char stackbuf[256];
    char *buf = len <= sizeof stackbuf ? stackbuf : malloc(len);
    if (!buf) { free(norm); return dg_fail(DEG_ERR_NOMEM, "tokenizer: out of memory"); }
    size_t n = dg_tok_unspell(content, len, buf, NULL);
    uint32_t off = 0;
    deg_status s = push_bytes(&t->bytes, &t->bytes_len, &t->bytes_cap, buf, n, &off);
    if (buf != stackbuf) free(buf);
    free(norm);
    if (s != DEG_OK) return s;
    t->tok[id].off = off;
    t->tok[id].len = (uint32_t)n;
    t->tok[id].flags |= DG_TOKF_PRESENT | DG_TOKF_ADDED;
    if (special) t->tok[id].flags |= DG_TOKF_SPECIAL;
    else t->tok[id].flags &= (uint8_t)~DG_TOKF_SPECIAL;
    return DEG_OK;
}

/* ---- pre-tokenizer steps --------------------------------------------------- */

const char dg_tok_gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char dg_tok_llama3_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char dg_tok_qwen2_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char dg_tok_qwen35_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static deg_status push_step(dg_tokenizer *t, dg_pre_step st)
{
    deg_status gs = DG_GROW(t->pre, t->cap_pre, t->n_pre + 1);
    if (gs != DEG_OK) {
        if (st.re) pcre2_code_free(st.re);
        return dg_fail_context(gs, "tokenizer");
    }
    t->pre[t->n_pre++] = st;
    return DEG_OK;
}

/* tokenizers compiles its regexes with Oniguruma, whose Unicode \s is the
 * White_Space property; PCRE2 10.42's UCP \s also matches U+180E (Mongolian
 * vowel separator, Cf since Unicode 6.3). Spell \s and \S out as the
 * White_Space set so both engines agree. \S inside a class is left as is. */
#define WS_SET "\\t-\\r\\x20\\x85\\xA0\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}" \
               "\\x{202F}\\x{205F}\\x{3000}"

static char *rewrite_space_classes(const char *p, size_t len, size_t *out_len)
{
    static const char set[] = WS_SET;
    size_t cap = len * (sizeof set + 4) + 1, o = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    int in_class = 0;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        if (c == '\\' && i + 1 < len) {
            char d = p[i + 1];
            if (d == 's' || (d == 'S' && !in_class)) {
                if (!in_class) out[o++] = '[';
                if (d == 'S') out[o++] = '^';
                memcpy(out + o, set, sizeof set - 1);
                o += sizeof set - 1;
                if (!in_class) out[o++] = ']';
            } else {
                out[o++] = c;
                out[o++] = d;
            }
            i++;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = 1;
            out[o++] = c;
            /* a ']' right after '[' or '[^' is a literal */
            if (i + 1 < len && p[i + 1] == '^') out[o++] = p[++i];
            if (i + 1 < len && p[i + 1] == ']') out[o++] = p[++i];
            continue;
        }
        if (in_class && c == '[' && i + 1 < len && p[i + 1] == ':') {
            const char *end = memchr(p + i + 2, ']', len - i - 2); /* [:alpha:] */
            size_t stop = end ? (size_t)(end - p) : len - 1;
            memcpy(out + o, p + i, stop - i + 1);
            o += stop - i + 1;
            i = stop;
            continue;
        }
        if (in_class && c == ']') in_class = 0;
        out[o++] = c;
    }
    *out_len = o;
    return out;
}

deg_status dg_tokb_pre_regex(dg_tokenizer *t, const char *pattern, size_t len, int literal,
                             dg_split_behavior behavior, int invert)
{
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    size_t plen = len;
    char *pat = literal ? NULL : rewrite_space_classes(pattern, len, &plen);
    if (!literal && !pat) return dg_fail(DEG_ERR_NOMEM, "tokenizer: out of memory");
    dg_regex_error e;
    pcre2_code *re = dg_regex_compile(pat ? pat : pattern, plen, opts, 0, PCRE2_JIT_COMPLETE, &e);
    free(pat);
    if (!re)
        return dg_fail(DEG_ERR_FORMAT, "pre-tokenizer regex /%.*s/: %s at offset %zu",
                       (int)(len > 300 ? 300 : len), pattern, e.msg, e.offset);
    dg_pre_step st = {DG_PRE_SPLIT, behavior, invert != 0, re};
    return push_step(t, st);
}

deg_status dg_tokb_pre_bytelevel(dg_tokenizer *t, int add_prefix_space, int use_regex)
{
    if (add_prefix_space) {
        dg_pre_step st = {DG_PRE_PREFIX_SPACE, DG_SPLIT_ISOLATED, 0, NULL};
        DG_TRY(push_step(t, st));
    }
    if (use_regex)
        return dg_tokb_pre_regex(t, dg_tok_gpt2_regex, strlen(dg_tok_gpt2_regex), 0,
                                 DG_SPLIT_ISOLATED, 0);
    return DEG_OK;
}

deg_status dg_tokb_pre_digits(dg_tokenizer *t, int individual)
{
    /* tokenizers' Digits splits on char::is_numeric, i.e. \p{N}. */
    if (individual) return dg_tokb_pre_regex(t, "\\p{N}", 5, 0, DG_SPLIT_ISOLATED, 0);
    return dg_tokb_pre_regex(t, "\\p{N}+", 6, 0, DG_SPLIT_ISOLATED, 0);
}

/* ---- finish ----------------------------------------------------------------- */

static int cmp_added(const void *pa, const void *pb, void *ctx)
{
    const dg_tokenizer *t = ctx;
    const dg_tok_added *a = &t->added[*(const uint32_t *)pa];
    const dg_tok_added *b = &t->added[*(const uint32_t *)pb];
    unsigned fa = (unsigned char)t->added_bytes[a->off], fb = (unsigned char)t->added_bytes[b->off];
    if (fa != fb) return fa < fb ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
    return ia < ib ? -1 : ia > ib;
}

deg_status dg_tokb_finish(dg_tokenizer *t)
{
    if (!t->vhash) DG_TRY(dg_tokb_vocab_done(t));
    if (!t->merges) DG_TRY(merges_reserve(t, 1));
    free(t->added_order);
    t->added_order = malloc((t->n_added + 1) * sizeof *t->added_order);
    if (!t->added_order) return dg_fail(DEG_ERR_NOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < t->n_added; i++) t->added_order[i] = (uint32_t)i;
    qsort_r(t->added_order, t->n_added, sizeof *t->added_order, cmp_added, t);
    size_t k = 0;
    for (unsigned b = 0; b <= 256; b++) {
        while (k < t->n_added &&
               (unsigned char)t->added_bytes[t->added[t->added_order[k]].off] < b) k++;
        t->added_first[b] = (uint32_t)k;
    }
    t->added_first[256] = (uint32_t)t->n_added;
    int need_word = 0;
    for (size_t i = 0; i < t->n_added; i++) need_word |= t->added[i].single_word;
    if (need_word && !t->word_re) {
        dg_regex_error e;
        t->word_re = dg_regex_compile("\\w", 2, PCRE2_UTF | PCRE2_UCP, 0, 0, &e);
        if (!t->word_re) return dg_fail(DEG_ERR_INTERNAL, "tokenizer: cannot compile \\w");
    }
    return DEG_OK;
}
