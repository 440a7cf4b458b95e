/* Encode and decode. The pipeline follows tokenizers' Tokenizer::encode for
 * our subset: (1) split the text on added tokens (tokenizer/added_vocabulary.rs:
 * leftmost-longest, first the non-normalized tokens, then the normalized
 * ones in what is left; lstrip/rstrip/single_word), (2) pre-tokenize each
 * remaining segment (Split / Digits / ByteLevel regex, in order), (3) BPE
 * each piece. parse_special = 0 is tokenizers' encode_special_tokens = true:
 * special added tokens are then not matched, non-special added tokens still
 * are (llama.cpp's parse_special = false does the same). */
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "tokenizer/tok_internal.h"
#include "base/utf8.h"

typedef struct piece {
    uint32_t off, len;
} piece;

typedef struct span {
    uint32_t s, e;
    uint8_t m;
} span;

typedef struct seg {
    size_t off, len;
    int32_t id; /* added token id, or -1 for text */
} seg;

typedef struct enc_ctx {
    const dg_tokenizer *t;
    char *wb;
    size_t wb_len, wb_cap;
    piece *pa, *pb;
    size_t pa_n, pa_cap, pb_n, pb_cap;
    span *sp;
    size_t sp_n, sp_cap;
    seg *s1, *s2;
    size_t s1_n, s1_cap, s2_n, s2_cap;
    char *nb;             /* NFC of the current segment */
    size_t nb_cap;
    size_t report_base;   /* offset of the current segment in the input */
    int drop_missing;     /* DEG_TOKENIZE_DROP_MISSING_BYTES */
    const dg_tok_range *plain; /* byte ranges of the input where special tokens are text */
    size_t n_plain;
    size_t split_base;    /* offset of split_added's text in the input; SIZE_MAX unknown (NFC) */
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit;
    dg_bpe_scratch *bpe;
    int32_t *out;
    size_t n_out, cap_out;
} enc_ctx;


static void ctx_free(enc_ctx *c)
{
    free(c->wb); free(c->pa); free(c->pb); free(c->sp); free(c->s1); free(c->s2); free(c->nb);
    if (c->md) pcre2_match_data_free(c->md);
    if (c->mctx) pcre2_match_context_free(c->mctx);
    if (c->jit) pcre2_jit_stack_free(c->jit);
    dg_bpe_scratch_free(c->bpe);
    free(c->out);
}

/* pcre2_match; on JIT stack exhaustion (long whitespace runs with
 * lookahead) retry once with a large JIT stack. */
static int re_match(enc_ctx *c, const pcre2_code *re, const char *s, size_t len, size_t start,
                    uint32_t opts)
{
    int rc = pcre2_match(re, (PCRE2_SPTR)s, len, start, opts | PCRE2_NO_UTF_CHECK, c->md,
                         c->mctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !c->jit) {
        c->jit = pcre2_jit_stack_create(32 * 1024, 256 * 1024 * 1024, NULL);
        c->mctx = pcre2_match_context_create(NULL);
        if (!c->jit || !c->mctx) return PCRE2_ERROR_NOMEMORY;
        pcre2_jit_stack_assign(c->mctx, NULL, c->jit);
        rc = pcre2_match(re, (PCRE2_SPTR)s, len, start, opts | PCRE2_NO_UTF_CHECK, c->md,
                         c->mctx);
    }
    return rc;
}

static deg_status re_error(int rc)
{
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    return dg_fail(DEG_ERR_INTERNAL, "tokenize: pre-tokenizer regex failed: %s", (const char *)msg);
}

/* Length of the UTF-8 character starting with byte b (input is valid). */
static inline size_t u8len(unsigned char b)
{
    return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

/* ---- Split ------------------------------------------------------------------ */

/* Matches of re in piece [s, s+len) as spans covering it (tokenizers
 * pattern.rs: gaps are non-matches; an empty match is a split point). */
static deg_status find_spans(enc_ctx *c, const pcre2_code *re, const char *s, size_t len)
{
    c->sp_n = 0;
    size_t prev = 0, start = 0;
    while (start <= len) {
        int rc = re_match(c, re, s, len, start, 0);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) return re_error(rc);
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
        size_t ms = ov[0], me = ov[1];
        DG_TRY(DG_GROW(c->sp, c->sp_cap, c->sp_n + 2));
        if (ms != prev) c->sp[c->sp_n++] = (span){(uint32_t)prev, (uint32_t)ms, 0};
        c->sp[c->sp_n++] = (span){(uint32_t)ms, (uint32_t)me, 1};
        prev = me;
        if (me == ms) {
            if (me >= len) break;
            start = me + u8len((unsigned char)s[me]);
        } else {
            start = me;
        }
    }
    if (prev != len) {
        DG_TRY(DG_GROW(c->sp, c->sp_cap, c->sp_n + 1));
        c->sp[c->sp_n++] = (span){(uint32_t)prev, (uint32_t)len, 0};
    }
    return DEG_OK;
}

static deg_status emit(enc_ctx *c, uint32_t base, uint32_t s, uint32_t e)
{
    if (e <= s) return DEG_OK;
    DG_TRY(DG_GROW(c->pb, c->pb_cap, c->pb_n + 1));
    c->pb[c->pb_n++] = (piece){base + s, e - s};
    return DEG_OK;
}

/* tokenizers NormalizedString::split with a SplitDelimiterBehavior. */
static deg_status split_piece(enc_ctx *c, const dg_pre_step *st, piece p)
{
    DG_TRY(find_spans(c, st->re, c->wb + p.off, p.len));
    span *sp = c->sp;
    size_t n = c->sp_n;
    if (st->invert)
        for (size_t i = 0; i < n; i++) sp[i].m = !sp[i].m;
    switch (st->behavior) {
    case DG_SPLIT_ISOLATED:
        for (size_t i = 0; i < n; i++) DG_TRY(emit(c, p.off, sp[i].s, sp[i].e));
        return DEG_OK;
    case DG_SPLIT_REMOVED:
        for (size_t i = 0; i < n; i++)
            if (!sp[i].m) DG_TRY(emit(c, p.off, sp[i].s, sp[i].e));
        return DEG_OK;
    case DG_SPLIT_CONTIGUOUS:
    case DG_SPLIT_MERGED_PREV: {
        /* Fold left: a span joins the previous output piece when
         * contiguous: same kind as the previous span;
         * merged-with-previous: a match right after a non-match. */
        size_t k = 0;
        int prev_m = 0;
        for (size_t i = 0; i < n; i++) {
            span cur = sp[i]; /* read before sp[k] (k <= i) is overwritten */
            int join = st->behavior == DG_SPLIT_CONTIGUOUS ? cur.m == prev_m
                                                            : (cur.m && !prev_m);
            if (join && k > 0) sp[k - 1].e = cur.e;
            else sp[k++] = (span){cur.s, cur.e, 0};
            prev_m = cur.m;
        }
        for (size_t i = 0; i < k; i++) DG_TRY(emit(c, p.off, sp[i].s, sp[i].e));
        return DEG_OK;
    }
    case DG_SPLIT_MERGED_NEXT: {
        /* Fold right: a match right before a non-match joins it. */
        size_t k = n; /* output built from the end: sp[k..n) */
        int prev_m = 0;
        for (size_t i = n; i-- > 0;) {
            span cur = sp[i];
            if (cur.m && !prev_m && k < n) sp[k].s = cur.s;
            else sp[--k] = (span){cur.s, cur.e, 0};
            prev_m = cur.m;
        }
        for (size_t i = k; i < n; i++) DG_TRY(emit(c, p.off, sp[i].s, sp[i].e));
        return DEG_OK;
    }
    }
    return dg_fail(DEG_ERR_INTERNAL, "tokenize: unknown split behavior %d", (int)st->behavior);
}

static deg_status prefix_space(enc_ctx *c, piece p)
{
    if (c->wb[p.off] == ' ') return emit(c, 0, p.off, p.off + p.len);
    if (c->wb_len + p.len + 1 > UINT32_MAX)
        return dg_fail(DEG_ERR_RANGE, "tokenize: text longer than 4 GiB");
    DG_TRY(DG_GROW(c->wb, c->wb_cap, c->wb_len + p.len + 1));
    uint32_t off = (uint32_t)c->wb_len;
    c->wb[c->wb_len++] = ' ';
    memcpy(c->wb + c->wb_len, c->wb + p.off, p.len);
    c->wb_len += p.len;
    return emit(c, 0, off, off + p.len + 1);
}

/* Pre-tokenize and BPE one text segment, text[base, base+len). */
static deg_status encode_text(enc_ctx *c, const char *all, size_t base, size_t len)
{
    const dg_tokenizer *t = c->t;
    const char *text = all + base;
    if (len == 0) return DEG_OK;
    if (t->missing_bytes && !c->drop_missing) {
        for (size_t i = 0; i < len; i++)
            if (t->byte_id[(unsigned char)text[i]] < 0)
                return dg_fail(DEG_ERR_UNSUPPORTED,
                               "tokenize: byte 0x%02x at byte offset %zu has no token in this "
                               "vocabulary (HF tokenizers drop it: DEG_TOKENIZE_DROP_MISSING_BYTES "
                               "does the same)",
                               (unsigned)(unsigned char)text[i], c->report_base + base + i);
    }
    if (len > UINT32_MAX / 2) return dg_fail(DEG_ERR_RANGE, "tokenize: text longer than 2 GiB");
    c->wb_len = 0;
    DG_TRY(DG_GROW(c->wb, c->wb_cap, len));
    memcpy(c->wb, text, len);
    c->wb_len = len;
    DG_TRY(DG_GROW(c->pa, c->pa_cap, 1));
    c->pa[0] = (piece){0, (uint32_t)len};
    c->pa_n = 1;
    for (size_t k = 0; k < t->n_pre; k++) {
        const dg_pre_step *st = &t->pre[k];
        c->pb_n = 0;
        for (size_t i = 0; i < c->pa_n; i++) {
            if (st->kind == DG_PRE_PREFIX_SPACE) DG_TRY(prefix_space(c, c->pa[i]));
            else DG_TRY(split_piece(c, st, c->pa[i]));
        }
        piece *tp = c->pa; c->pa = c->pb; c->pb = tp;
        size_t tc = c->pa_cap; c->pa_cap = c->pb_cap; c->pb_cap = tc;
        c->pa_n = c->pb_n;
    }
    for (size_t i = 0; i < c->pa_n; i++)
        DG_TRY(dg_bpe_word(t, &c->bpe, c->wb + c->pa[i].off, c->pa[i].len, &c->out, &c->n_out,
                           &c->cap_out));
    return DEG_OK;
}

/* ---- added tokens ---------------------------------------------------------------- */

/* Rust char::is_whitespace: the Unicode White_Space property. */
static int is_white_space(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

static uint32_t cp_at(const char *s, size_t len, size_t i)
{
    uint32_t cp = 0;
    if (!dg_utf8_decode(s + i, len - i, &cp)) return 0;
    return cp;
}

static size_t cp_start_before(const char *s, size_t i)
{
    do { i--; } while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80);
    return i;
}

/* A word character for single_word (Rust regex \w, approximated with
 * PCRE2 \w in UCP mode: letters, marks, decimal digits, connector punct). */
static int is_word_cp(enc_ctx *c, const char *s, size_t len, size_t i)
{
    const dg_tokenizer *t = c->t;
    (void)t;
    size_t n = u8len((unsigned char)s[i]);
    int rc = re_match(c, c->t->word_re, s + i, n, 0, PCRE2_ANCHORED);
    (void)len;
    return rc > 0;
}

/* Where [s, e) (input offsets) lies against the plain ranges: 0 outside
 * all, 1 inside one, 2 across a boundary. With an unknown base (the text
 * was NFC-normalized), any plain range inside the segment counts as 1. */
static int plain_overlap(const enc_ctx *c, size_t s, size_t e, size_t seg_len)
{
    if (c->split_base == SIZE_MAX) {
        size_t b = c->report_base;
        for (size_t i = 0; i < c->n_plain; i++)
            if (c->plain[i].start < b + seg_len && c->plain[i].end > b) return 1;
        return 0;
    }
    s += c->split_base;
    e += c->split_base;
    for (size_t i = 0; i < c->n_plain; i++) {
        const dg_tok_range *r = &c->plain[i];
        if (r->end <= s || r->start >= e) continue;
        return r->start <= s && e <= r->end ? 1 : 2;
    }
    return 0;
}

/* Split [off, off+len) of text on the added tokens whose `normalized` flag
 * equals want_normalized; appends segments to *out. A special token inside a
 * plain range is text (as with parse_special = 0); one across a plain
 * range's boundary is not a match (the scan moves on by one byte, so a
 * token right after the range still matches). */
static deg_status split_added(enc_ctx *c, const char *text, size_t off, size_t len,
                              int want_normalized, int parse_special, seg **out, size_t *n_out,
                              size_t *cap_out)
{
    const dg_tokenizer *t = c->t;
    const char *s = text + off;
    size_t cursor = 0, pos = 0;
    while (pos < len) {
        unsigned b = (unsigned char)s[pos];
        const dg_tok_added *best = NULL;
        for (uint32_t k = t->added_first[b]; k < t->added_first[b + 1]; k++) {
            const dg_tok_added *a = &t->added[t->added_order[k]];
            if (a->normalized != want_normalized || a->len > len - pos) continue;
            if (memcmp(t->added_bytes + a->off, s + pos, a->len) == 0) { best = a; break; }
        }
        if (!best) { pos++; continue; }
        size_t start = pos, stop = pos + best->len;
        int plain = best->special && c->n_plain ? plain_overlap(c, off + start, off + stop, len)
                                                : 0;
        if (plain == 2) { pos++; continue; }
        pos = stop; /* matches do not overlap, even discarded ones */
        if ((!parse_special || plain) && best->special) continue;
        if (best->single_word) {
            int start_ok = start == 0 || !is_word_cp(c, s, len, cp_start_before(s, start));
            int stop_ok = stop == len || !is_word_cp(c, s, len, stop);
            if (!start_ok || !stop_ok) continue;
        }
        if (best->lstrip) {
            size_t ns = start;
            while (ns > 0) {
                size_t p = cp_start_before(s, ns);
                if (!is_white_space(cp_at(s, len, p))) break;
                ns = p;
            }
            start = ns > cursor ? ns : cursor;
        }
        if (best->rstrip) {
            while (stop < len) {
                uint32_t cp = cp_at(s, len, stop);
                if (!is_white_space(cp)) break;
                stop += u8len((unsigned char)s[stop]);
            }
            if (stop > pos) pos = stop;
        }
        DG_TRY(DG_GROW(*out, *cap_out, *n_out + 2));
        if (cursor < start) (*out)[(*n_out)++] = (seg){off + cursor, start - cursor, -1};
        (*out)[(*n_out)++] = (seg){off + start, stop - start, best->id};
        cursor = stop;
    }
    if (cursor < len) {
        DG_TRY(DG_GROW(*out, *cap_out, *n_out + 1));
        (*out)[(*n_out)++] = (seg){off + cursor, len - cursor, -1};
    }
    return DEG_OK;
}

static deg_status push_id(enc_ctx *c, int32_t id)
{
    DG_TRY(DG_GROW(c->out, c->cap_out, c->n_out + 1));
    c->out[c->n_out++] = id;
    return DEG_OK;
}

/* One segment left by the non-normalized added tokens: normalize it, split
 * it on the normalized added tokens, encode the pieces. */
static deg_status encode_segment(enc_ctx *c, const char *text, size_t len, int parse_special)
{
    const dg_tokenizer *t = c->t;
    if (t->normalizer == DG_NORM_NFC && dg_tok_nfc_needed(text, len)) {
        size_t n;
        DG_TRY(dg_tok_nfc(text, len, &c->nb, &c->nb_cap, &n));
        text = c->nb;
        len = n;
        c->split_base = SIZE_MAX;
    } else {
        c->split_base = c->report_base;
    }
    if (t->n_added == 0) return encode_text(c, text, 0, len);
    c->s2_n = 0;
    DG_TRY(split_added(c, text, 0, len, 1, parse_special, &c->s2, &c->s2_n, &c->s2_cap));
    for (size_t i = 0; i < c->s2_n; i++) {
        seg g = c->s2[i];
        if (g.id >= 0) DG_TRY(push_id(c, g.id));
        else DG_TRY(encode_text(c, text, g.off, g.len));
    }
    return DEG_OK;
}

static deg_status encode_all(enc_ctx *c, const char *text, size_t len, int parse_special)
{
    const dg_tokenizer *t = c->t;
    c->md = pcre2_match_data_create(4, NULL);
    if (!c->md) return dg_fail(DEG_ERR_NOMEM, "tokenize: out of memory");
    if (t->n_added == 0) return encode_segment(c, text, len, parse_special);
    c->split_base = 0;
    DG_TRY(split_added(c, text, 0, len, 0, parse_special, &c->s1, &c->s1_n, &c->s1_cap));
    for (size_t i = 0; i < c->s1_n; i++) {
        seg g = c->s1[i];
        if (g.id >= 0) {
            DG_TRY(push_id(c, g.id));
        } else {
            c->report_base = g.off;
            DG_TRY(encode_segment(c, text + g.off, g.len, parse_special));
        }
    }
    return DEG_OK;
}

int dg_tokenizer_byte_missing(const dg_tokenizer *t, unsigned char b)
{
    return t->byte_id[b] < 0;
}

deg_status dg_tokenizer_encode(const dg_tokenizer *t, const char *text, size_t len,
                               int parse_special, int32_t *ids, size_t cap, size_t *n_ids)
{
    return dg_tokenizer_encode_ex(t, text, len, parse_special ? DEG_TOKENIZE_SPECIAL : 0u, ids,
                                  cap, n_ids);
}

deg_status dg_tokenizer_encode_ex(const dg_tokenizer *t, const char *text, size_t len,
                                  unsigned flags, int32_t *ids, size_t cap, size_t *n_ids)
{
    return dg_tokenizer_encode_plain(t, text, len, flags, NULL, 0, ids, cap, n_ids);
}

/* The checks every encode entry point makes on its input, then the encoding
 * into c->out[0..n_out) (c->t set by the caller; c freed by the caller). */
static deg_status encode_run(enc_ctx *c, const char *text, size_t len, unsigned flags,
                             const dg_tok_range *plain, size_t n_plain)
{
    size_t bad;
    if (!dg_utf8_validate(text, len, &bad))
        return dg_fail(DEG_ERR_UTF8, "tokenize: invalid UTF-8 at byte offset %zu (byte 0x%02x)",
                       bad, (unsigned)(unsigned char)text[bad]);
    if (flags & ~(DEG_TOKENIZE_SPECIAL | DEG_TOKENIZE_DROP_MISSING_BYTES))
        return dg_fail(DEG_ERR_ARG, "tokenize: unknown flags 0x%x", flags);
    if (n_plain && !plain) return dg_fail(DEG_ERR_ARG, "tokenize: plain is NULL but n_plain is %zu", n_plain);
    for (size_t i = 0; i < n_plain; i++)
        if (plain[i].start > plain[i].end || plain[i].end > len ||
            (i && plain[i].start < plain[i - 1].end))
            return dg_fail(DEG_ERR_ARG,
                           "tokenize: plain range %zu [%zu, %zu) is not ordered inside [0, %zu)",
                           i, plain[i].start, plain[i].end, len);
    c->drop_missing = (flags & DEG_TOKENIZE_DROP_MISSING_BYTES) != 0;
    c->plain = plain;
    c->n_plain = n_plain;
    return len ? encode_all(c, text, len, (flags & DEG_TOKENIZE_SPECIAL) != 0) : DEG_OK;
}

deg_status dg_tokenizer_encode_plain(const dg_tokenizer *t, const char *text, size_t len,
                                     unsigned flags, const dg_tok_range *plain, size_t n_plain,
                                     int32_t *ids, size_t cap, size_t *n_ids)
{
    if (!t || !n_ids) return dg_fail(DEG_ERR_ARG, "tokenize: NULL tokenizer or n_ids");
    *n_ids = 0;
    if (!text && len) return dg_fail(DEG_ERR_ARG, "tokenize: text is NULL but len is %zu", len);
    if (!ids && cap) return dg_fail(DEG_ERR_ARG, "tokenize: ids is NULL but cap is %zu", cap);
    enc_ctx c = {.t = t};
    deg_status s = encode_run(&c, text, len, flags, plain, n_plain);
    if (s == DEG_OK) {
        *n_ids = c.n_out;
        if (c.n_out && cap) memcpy(ids, c.out, (c.n_out < cap ? c.n_out : cap) * sizeof *ids);
        if (c.n_out > cap)
            s = dg_fail(DEG_ERR_RANGE, "tokenize: %zu ids do not fit in a buffer of %zu",
                        c.n_out, cap);
    }
    ctx_free(&c);
    return s;
}

deg_status dg_tokenizer_encode_alloc(const dg_tokenizer *t, const char *text, size_t len,
                                     unsigned flags, const dg_tok_range *plain, size_t n_plain,
                                     int32_t **ids, size_t *n_ids)
{
    if (!t || !ids || !n_ids) return dg_fail(DEG_ERR_ARG, "tokenize: NULL tokenizer or output");
    *ids = NULL;
    *n_ids = 0;
    if (!text && len) return dg_fail(DEG_ERR_ARG, "tokenize: text is NULL but len is %zu", len);
    enc_ctx c = {.t = t};
    deg_status s = encode_run(&c, text, len, flags, plain, n_plain);
    if (s == DEG_OK) {
        /* the encoder's own output array is handed over: nothing is encoded twice */
        int32_t *p = c.out ? c.out : malloc(sizeof *p);
        if (!p) {
            s = dg_fail(DEG_ERR_NOMEM, "tokenize: out of memory");
        } else {
            *ids = p;
            *n_ids = c.n_out;
            c.out = NULL;
        }
    }
    ctx_free(&c);
    return s;
}

/* ---- decode ------------------------------------------------------------------------ */

deg_status dg_tokenizer_decode(const dg_tokenizer *t, const int32_t *ids, size_t n_ids,
                               char *buf, size_t cap, size_t *len)
{
    if (!t || !len) return dg_fail(DEG_ERR_ARG, "detokenize: NULL tokenizer or len");
    *len = 0;
    if (!ids && n_ids) return dg_fail(DEG_ERR_ARG, "detokenize: ids is NULL but n_ids is %zu", n_ids);
    if (!buf && cap) return dg_fail(DEG_ERR_ARG, "detokenize: buf is NULL but cap is %zu", cap);
    size_t total = 0;
    for (size_t i = 0; i < n_ids; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_vocab)
            return dg_fail(DEG_ERR_RANGE, "detokenize: id %d at index %zu outside [0, %d)", id, i,
                           t->n_vocab);
        const dg_tok_entry *e = &t->tok[id];
        /* Ids without a token string (padding rows) decode to nothing, as in
         * tokenizers' decode. */
        if (total < cap) {
            size_t k = cap - total < e->len ? cap - total : e->len;
            memcpy(buf + total, t->bytes + e->off, k);
        }
        total += e->len;
    }
    *len = total;
    if (total > cap)
        return dg_fail(DEG_ERR_RANGE, "detokenize: %zu bytes do not fit in a buffer of %zu", total,
                       cap);
    return DEG_OK;
}

deg_status dg_tokenizer_decode_alloc(const dg_tokenizer *t, const int32_t *ids, size_t n_ids,
                                     char **out, size_t *len)
{
    if (!t || !out || !len) return dg_fail(DEG_ERR_ARG, "detokenize: NULL tokenizer or output");
    *out = NULL;
    *len = 0;
    if (!ids && n_ids) return dg_fail(DEG_ERR_ARG, "detokenize: ids is NULL but n_ids is %zu", n_ids);
    size_t total = 0;
    for (size_t i = 0; i < n_ids; i++)
        if (ids[i] >= 0 && ids[i] < t->n_vocab) total += t->tok[ids[i]].len;
    char *buf = malloc(total + 1);
    if (!buf) return dg_fail(DEG_ERR_NOMEM, "detokenize: out of memory (%zu bytes)", total + 1);
    deg_status s = dg_tokenizer_decode(t, ids, n_ids, buf, total, len);
    if (s != DEG_OK) {
        free(buf);
        *len = 0;
        return s;
    }
    buf[total] = '\0';
    *out = buf;
    return DEG_OK;
}

/* ---- accessors ------------------------------------------------------------------- */

int32_t dg_tokenizer_n_vocab(const dg_tokenizer *t) { return t ? t->n_vocab : 0; }
int32_t dg_tokenizer_bos(const dg_tokenizer *t) { return t ? t->bos : -1; }
int32_t dg_tokenizer_eos(const dg_tokenizer *t) { return t ? t->eos : -1; }
int32_t dg_tokenizer_pad(const dg_tokenizer *t) { return t ? t->pad : -1; }
int dg_tokenizer_add_bos(const dg_tokenizer *t) { return t ? t->add_bos : 0; }

int dg_tokenizer_is_special(const dg_tokenizer *t, int32_t id)
{
    return t && id >= 0 && id < t->n_vocab && (t->tok[id].flags & DG_TOKF_SPECIAL) != 0;
}

const char *dg_tokenizer_token_bytes(const dg_tokenizer *t, int32_t id, size_t *len)
{
    if (!t || id < 0 || id >= t->n_vocab || !(t->tok[id].flags & DG_TOKF_PRESENT)) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->tok[id].len;
    return t->bytes + t->tok[id].off;
}

int32_t dg_tokenizer_find(const dg_tokenizer *t, const char *piece, size_t len)
{
    if (!t || (!piece && len)) return -1;
    for (size_t i = 0; i < t->n_added; i++) {
        const dg_tok_added *a = &t->added[i];
        if (a->len == len && memcmp(t->added_bytes + a->off, piece, len) == 0) return a->id;
    }
    return len ? dg_tok_lookup_raw(t, piece, len) : -1;
}

void dg_tokenizer_free(dg_tokenizer *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n_pre; i++)
        if (t->pre[i].re) pcre2_code_free(t->pre[i].re);
    if (t->word_re) pcre2_code_free(t->word_re);
    free(t->pre);
    free(t->tok);
    free(t->bytes);
    free(t->vhash);
    free(t->reachable);
    free(t->merges);
    free(t->added);
    free(t->added_bytes);
    free(t->added_order);
    free(t);
}
