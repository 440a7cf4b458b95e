/* Byte-level BPE tokenizer (GPT-2 byte-to-unicode mapping, merge ranks),
 * built from a GGUF vocabulary (tokenizer.ggml.*) or a Hugging Face
 * tokenizer.json; pre-tokenizer regexes run through PCRE2 (UTF-8, Unicode
 * properties, JIT). Immutable after construction: shareable across threads
 * (encode/decode allocate their scratch per call).
 *
 * Reference behaviour: Hugging Face `tokenizers` (Tokenizer::encode with
 * add_special_tokens = false, decode with skip_special_tokens = false),
 * pinned by tests/c/test_tokenizer.c on >= 20k lines. Supported pipeline:
 * model BPE (ignore_merges honoured; no byte_fallback/dropout/suffixes),
 * normalizer none or NFC (Qwen2/3; Unicode 14 tables), pre-tokenizers ByteLevel (last) / Split (Regex or String,
 * all five behaviours, invert) / Digits / Sequence, decoder ByteLevel;
 * added tokens with special/lstrip/rstrip/single_word/normalized. Anything
 * else is refused at load with DEG_ERR_UNSUPPORTED.
 *
 * Deliberate differences from `tokenizers`:
 *  - a text byte for which the vocabulary has no single-byte token (SmolLM2
 *    has none for 0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, ...) is an error
 *    (DEG_ERR_UNSUPPORTED, with its offset), not silently dropped;
 *  - GGUF tokenizer.ggml.pre = "smollm" gets Digits(individual) + ByteLevel
 *    like the published SmolLM2 tokenizer.json and llama.cpp; transformers'
 *    GGUF converter leaves plain ByteLevel there (differs on whitespace
 *    before digits, e.g. "  1"). */
#ifndef DG_TOKENIZER_TOKENIZER_H
#define DG_TOKENIZER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"
#include "format/gguf.h"

typedef struct dg_tokenizer dg_tokenizer;

/* From GGUF metadata (tokenizer.ggml.model == "gpt2", .tokens, .merges,
 * .token_type, .pre, .bos_token_id, .eos_token_id, ...). The tokenizer copies
 * what it keeps; the dg_gguf may be closed afterwards. As transformers'
 * GGUF converter: token_type 3 (control) -> special added token, 4
 * (user-defined) -> non-special added token. Errors: DEG_ERR_UNSUPPORTED
 * (model not "gpt2", unknown .pre), DEG_ERR_FORMAT (missing/ill-typed keys,
 * merges not in the vocabulary). */
deg_status dg_tokenizer_from_gguf(const dg_gguf *g, dg_tokenizer **out);
/* From a tokenizer.json file (and, if not NULL, tokenizer_config.json for
 * bos_token/eos_token/pad_token and add_bos_token). Without a config,
 * bos/eos/pad are -1. Errors: DEG_ERR_IO (unreadable), DEG_ERR_FORMAT
 * (bad JSON, missing model, bad merges entry, ...; message names the
 * field), DEG_ERR_UNSUPPORTED (model type not BPE, unsupported normalizer /
 * pre-tokenizer / decoder). */
deg_status dg_tokenizer_from_json(const char *tokenizer_json_path,
                                  const char *tokenizer_config_path, dg_tokenizer **out);
void dg_tokenizer_free(dg_tokenizer *t);

/* Max token id + 1 over the vocabulary and added tokens (a model's
 * embedding may have more rows: ids without a token decode to nothing). */
int32_t dg_tokenizer_n_vocab(const dg_tokenizer *t);
int32_t dg_tokenizer_bos(const dg_tokenizer *t);   /* -1 if none */
int32_t dg_tokenizer_eos(const dg_tokenizer *t);   /* -1 if none */
int32_t dg_tokenizer_pad(const dg_tokenizer *t);   /* -1 if none */
/* 1 if the file asks for BOS at the start (GGUF add_bos_token,
 * tokenizer_config add_bos_token); encode never adds it itself. */
int dg_tokenizer_add_bos(const dg_tokenizer *t);
/* 1 if id is a special (control) added token such as <|im_end|>. */
int dg_tokenizer_is_special(const dg_tokenizer *t, int32_t id);
/* Raw bytes of token id (what decode appends for it), borrowed from t;
 * *len = 0 and NULL for ids outside [0, n_vocab) or without a token. A
 * token may hold part of a UTF-8 character. */
const char *dg_tokenizer_token_bytes(const dg_tokenizer *t, int32_t id, size_t *len);
/* Id of an exact token string (special or regular), -1 if absent. */
int32_t dg_tokenizer_find(const dg_tokenizer *t, const char *piece, size_t len);

/* Encode: same contract as deg_tokenize (DEG_ERR_RANGE when cap too small,
 * *n_ids always set to the full count; DEG_ERR_UTF8 on invalid input, with
 * the byte offset in the message). parse_special = 0 is tokenizers'
 * encode_special_tokens = true: special added tokens are encoded as text,
 * non-special added tokens (e.g. Qwen3's <think>) are still matched. */
deg_status dg_tokenizer_encode(const dg_tokenizer *t, const char *text, size_t len,
                               int parse_special, int32_t *ids, size_t cap, size_t *n_ids);
/* The same with DEG_TOKENIZE_* flags (deg_tokenize_ex). */
deg_status dg_tokenizer_encode_ex(const dg_tokenizer *t, const char *text, size_t len,
                                  unsigned flags, int32_t *ids, size_t cap, size_t *n_ids);
/* A byte range [start, end) of an input text. */
typedef struct dg_tok_range {
    size_t start, end;
} dg_tok_range;
/* dg_tokenizer_encode_ex where, inside the plain ranges (ordered, not
 * overlapping), special added tokens are text even with
 * DEG_TOKENIZE_SPECIAL, and a special token across a range boundary is not
 * matched. Outside them the text is split and pre-tokenized as one piece
 * with the rest, so the ids equal encode_ex's whenever the plain ranges hold
 * no special token's text (the chat layout: message contents are plain, the
 * layout's <|im_start|> are not; see deg_chat_tokenize). Errors as
 * encode_ex, DEG_ERR_ARG for unordered ranges. */
deg_status dg_tokenizer_encode_plain(const dg_tokenizer *t, const char *text, size_t len,
                                     unsigned flags, const dg_tok_range *plain, size_t n_plain,
                                     int32_t *ids, size_t cap, size_t *n_ids);
/* dg_tokenizer_encode_plain (plain = NULL, n_plain = 0: dg_tokenizer_encode_ex)
 * into a malloc'd array: *ids (free; non-NULL on success, also for no ids) of
 * *n_ids, encoded once. The one way libdeg tokenizes into memory it allocates
 * (chat, fill texts, self-study corpora): no caller guesses a size and retries.
 * Errors as encode_plain (never DEG_ERR_RANGE), DEG_ERR_NOMEM; *ids = NULL,
 * *n_ids = 0 on error. */
deg_status dg_tokenizer_encode_alloc(const dg_tokenizer *t, const char *text, size_t len,
                                     unsigned flags, const dg_tok_range *plain, size_t n_plain,
                                     int32_t **ids, size_t *n_ids);
/* 1 if byte b has no token in the vocabulary (dropped under
 * DEG_TOKENIZE_DROP_MISSING_BYTES). */
int dg_tokenizer_byte_missing(const dg_tokenizer *t, unsigned char b);
/* Decode: same contract as deg_detokenize. */
deg_status dg_tokenizer_decode(const dg_tokenizer *t, const int32_t *ids, size_t n_ids,
                               char *buf, size_t cap, size_t *len);
/* The same into a malloc'd buffer: *out (free) holds the *len decoded bytes and
 * a NUL after them (the bytes may hold NULs and partial UTF-8 characters), sized
 * once from the ids. Errors as decode (never DEG_ERR_RANGE for the size),
 * DEG_ERR_NOMEM; *out = NULL, *len = 0 on error. */
deg_status dg_tokenizer_decode_alloc(const dg_tokenizer *t, const int32_t *ids, size_t n_ids,
                                     char **out, size_t *len);

#endif
