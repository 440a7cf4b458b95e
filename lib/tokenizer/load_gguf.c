/* Tokenizer from GGUF metadata (llama.cpp's tokenizer.ggml.* keys), built
 * the way transformers' GGUF converter builds it
 * (integrations/gguf/gguf_tokenizer_mapping.py: byte_level_tokenizer,
 * add_gguf_special_tokens, set_split_regex), except for pre = "smollm" (see
 * tokenizer.h). Only tokenizer.ggml.model = "gpt2" (byte-level BPE). */
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "format/gguf.h"
#include "tokenizer/tok_internal.h"

/* llama.cpp token types (llama_token_type). */
enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5,
       TT_BYTE = 6 };

typedef enum { PRE_GPT2, PRE_SMOLLM, PRE_LLAMA3, PRE_QWEN2, PRE_QWEN35 } pre_kind;

/* tokenizer.ggml.pre -> pre-tokenizer. The split names follow transformers'
 * GGUF_PRE_TOKENIZER_SPLITS; "smollm" follows llama.cpp and the published
 * SmolLM2 tokenizer.json (\p{N} isolated, then the GPT-2 regex). */
static const struct { const char *name; pre_kind kind; } pre_names[] = {
    {"default", PRE_GPT2},      {"gpt2", PRE_GPT2},        {"gpt-2", PRE_GPT2},
    {"smollm", PRE_SMOLLM},     {"llama3", PRE_LLAMA3},    {"llama-v3", PRE_LLAMA3},
    {"llama-bpe", PRE_LLAMA3},  {"falcon3", PRE_LLAMA3},   {"falcon-h1", PRE_LLAMA3},
    {"pixtral", PRE_LLAMA3},    {"midm-2.0", PRE_LLAMA3},  {"lfm2", PRE_LLAMA3},
    {"dbrx", PRE_LLAMA3},       {"smaug-bpe", PRE_LLAMA3}, {"qwen2", PRE_QWEN2},
    {"deepseek-r1-qwen", PRE_QWEN2}, {"megrez", PRE_QWEN2}, {"qwen35", PRE_QWEN35},
};

static deg_status set_pre(dg_tokenizer *t, const char *pre, size_t len)
{
    for (size_t i = 0; i < sizeof pre_names / sizeof pre_names[0]; i++) {
        if (strlen(pre_names[i].name) != len || memcmp(pre_names[i].name, pre, len) != 0) continue;
        const char *re = NULL;
        switch (pre_names[i].kind) {
        case PRE_GPT2: return dg_tokb_pre_bytelevel(t, 0, 1);
        case PRE_SMOLLM:
            DG_TRY(dg_tokb_pre_digits(t, 1));
            return dg_tokb_pre_bytelevel(t, 0, 1);
        case PRE_LLAMA3: re = dg_tok_llama3_regex; break;
        case PRE_QWEN2: re = dg_tok_qwen2_regex; break;
        case PRE_QWEN35: re = dg_tok_qwen35_regex; break;
        }
        DG_TRY(dg_tokb_pre_regex(t, re, strlen(re), 0, DG_SPLIT_ISOLATED, 0));
        return dg_tokb_pre_bytelevel(t, 0, 0);
    }
    return dg_fail(DEG_ERR_UNSUPPORTED, "tokenizer.ggml.pre \"%.*s\" is not supported",
                   (int)(len > 100 ? 100 : len), pre);
}

/* All characters in the GPT-2 byte alphabet (transformers keeps such a
 * token as spelled; others are respelled from their UTF-8 bytes). */
static int is_spelled(const char *s, size_t len, char *scratch)
{
    int spelled;
    (void)dg_tok_unspell(s, len, scratch, &spelled);
    return spelled;
}

static deg_status get_id(const dg_gguf *g, const char *key, int32_t n, int32_t *out)
{
    uint64_t v;
    deg_status s = dg_gguf_get_u64(g, key, &v);
    if (s == DEG_ERR_RANGE) return DEG_OK; /* absent: keep -1 */
    if (s != DEG_OK) return s;
    if (v >= (uint64_t)n)
        return dg_fail(DEG_ERR_FORMAT, "%s = %llu is outside the vocabulary (%d tokens)", key,
                       (unsigned long long)v, n);
    *out = (int32_t)v;
    return DEG_OK;
}

static deg_status build(dg_tokenizer *t, const dg_gguf *g)
{
    dg_gguf_str model;
    deg_status s = dg_gguf_get_str(g, "tokenizer.ggml.model", &model);
    if (s == DEG_ERR_RANGE) return dg_fail(DEG_ERR_FORMAT, "no tokenizer.ggml.model in the file");
    if (s != DEG_OK) return s;
    if (model.len != 4 || memcmp(model.ptr, "gpt2", 4) != 0)
        return dg_fail(DEG_ERR_UNSUPPORTED, "tokenizer.ggml.model \"%.*s\" is not supported "
                       "(only \"gpt2\", byte-level BPE)", (int)(model.len > 100 ? 100 : model.len),
                       model.ptr);

    dg_gguf_type et;
    uint64_t n_tok, n_merge = 0, n_type = 0;
    const void *data;
    s = dg_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n_tok, &data);
    if (s == DEG_ERR_RANGE) return dg_fail(DEG_ERR_FORMAT, "no tokenizer.ggml.tokens in the file");
    if (s != DEG_OK) return s;
    if (et != DG_GGUF_STRING) return dg_fail(DEG_ERR_FORMAT, "tokenizer.ggml.tokens is not a string array");
    if (n_tok == 0 || n_tok >= (1u << 24))
        return dg_fail(DEG_ERR_FORMAT, "tokenizer.ggml.tokens has %llu entries", (unsigned long long)n_tok);

    const void *types = NULL;
    s = dg_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &n_type, &types);
    if (s == DEG_OK && (et != DG_GGUF_INT32 || n_type != n_tok))
        return dg_fail(DEG_ERR_FORMAT, "tokenizer.ggml.token_type: expected %llu int32, got %llu of %s",
                       (unsigned long long)n_tok, (unsigned long long)n_type, dg_gguf_type_name(et));
    if (s != DEG_OK && s != DEG_ERR_RANGE) return s;
    if (s == DEG_ERR_RANGE) types = NULL;

    char *scratch = NULL;
    size_t scratch_cap = 0;
/* scratch holds one token's bytes (the one growth rule, base/grow.h) */
#define NEED(n)                                                                       \
    do {                                                                              \
        if ((s = dg_grow(&scratch, &scratch_cap, (n), 1)) != DEG_OK) {                \
            free(scratch);                                                            \
            return s;                                                                 \
        }                                                                             \
    } while (0)

    for (uint64_t i = 0; i < n_tok; i++) {
        dg_gguf_str tok;
        s = dg_gguf_arr_str(g, "tokenizer.ggml.tokens", i, &tok);
        if (s != DEG_OK) { free(scratch); return s; }
        NEED(tok.len + 1);
        /* Spelled tokens map to their bytes, others are their own UTF-8 (and
         * transformers respells them, so they are BPE-reachable too). */
        size_t n = dg_tok_unspell(tok.ptr, tok.len, scratch, NULL);
        s = dg_tokb_set_token(t, (int32_t)i, scratch, n, 1);
        if (s != DEG_OK) { free(scratch); return dg_fail_context(s, "tokenizer.ggml.tokens[%llu]", (unsigned long long)i); }
    }
    s = dg_tokb_vocab_done(t);
    if (s != DEG_OK) { free(scratch); return s; }

    s = dg_gguf_get_arr(g, "tokenizer.ggml.merges", &et, &n_merge, &data);
    if (s == DEG_OK && et != DG_GGUF_STRING) s = dg_fail(DEG_ERR_FORMAT, "tokenizer.ggml.merges is not a string array");
    if (s == DEG_ERR_RANGE) {
        s = DEG_OK; /* transformers would derive merges from scores; gpt2 files carry them */
        n_merge = 0;
    }
    if (s != DEG_OK) { free(scratch); return s; }
    for (uint64_t i = 0; i < n_merge; i++) {
        dg_gguf_str m;
        s = dg_gguf_arr_str(g, "tokenizer.ggml.merges", i, &m);
        if (s != DEG_OK) { free(scratch); return s; }
        const char *sp = memchr(m.ptr, ' ', m.len);
        if (!sp || memchr(sp + 1, ' ', m.len - (size_t)(sp + 1 - m.ptr))) {
            free(scratch);
            return dg_fail(DEG_ERR_FORMAT, "tokenizer.ggml.merges[%llu] = \"%.*s\": expected \"a b\"",
                           (unsigned long long)i, (int)(m.len > 100 ? 100 : m.len), m.ptr);
        }
        size_t alen = (size_t)(sp - m.ptr);
        s = dg_tokb_add_merge(t, m.ptr, alen, sp + 1, m.len - alen - 1, (uint32_t)i);
        if (s != DEG_OK) { free(scratch); return dg_fail_context(s, "tokenizer.ggml.merges[%llu]", (unsigned long long)i); }
    }

    /* Control tokens spelled in the byte alphabet -> special; user-defined
     * spelled tokens -> plain added tokens (as transformers). */
    for (uint64_t i = 0; types && i < n_tok; i++) {
        int32_t tt;
        memcpy(&tt, (const char *)types + 4 * i, 4);
        if (tt != TT_CONTROL && tt != TT_USER_DEFINED) continue;
        dg_gguf_str tok;
        s = dg_gguf_arr_str(g, "tokenizer.ggml.tokens", i, &tok);
        if (s != DEG_OK) break;
        NEED(tok.len + 1);
        if (!is_spelled(tok.ptr, tok.len, scratch)) continue;
        s = dg_tokb_add_added(t, (int32_t)i, tok.ptr, tok.len, tt == TT_CONTROL, 0, 0, 0, 0);
        if (s != DEG_OK) break;
    }
    free(scratch);
#undef NEED
    if (s != DEG_OK) return s;

    dg_gguf_str pre = {"default", 7};
    s = dg_gguf_get_str(g, "tokenizer.ggml.pre", &pre);
    if (s != DEG_OK && s != DEG_ERR_RANGE) return s;
    DG_TRY(set_pre(t, pre.ptr, pre.len));
    DG_TRY(dg_tokb_finish(t));

    DG_TRY(get_id(g, "tokenizer.ggml.bos_token_id", t->n_vocab, &t->bos));
    DG_TRY(get_id(g, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos));
    DG_TRY(get_id(g, "tokenizer.ggml.padding_token_id", t->n_vocab, &t->pad));
    int add_bos = 0;
    s = dg_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos);
    if (s != DEG_OK && s != DEG_ERR_RANGE) return s;
    t->add_bos = add_bos;
    return DEG_OK;
}

deg_status dg_tokenizer_from_gguf(const dg_gguf *g, dg_tokenizer **out)
{
    if (!g || !out) return dg_fail(DEG_ERR_ARG, "tokenizer: NULL gguf or out");
    *out = NULL;
    dg_tokenizer *t;
    DG_TRY(dg_tokb_new(&t));
    deg_status s = build(t, g);
    if (s != DEG_OK) {
        dg_fail_context(s, "GGUF tokenizer");
        dg_tokenizer_free(t);
        return s;
    }
    *out = t;
    return DEG_OK;
}
