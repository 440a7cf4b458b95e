/* Byte-level BPE tokenizer (GPT-2 byte-to-unicode mapping, merge ranks),
 * built from a GGUF vocabulary (tokenizer.ggml.*) or a Hugging Face
 * tokenizer.json; pre-tokenizer regexes run through PCRE2 (UTF-8, Unicode
 * properties). Immutable after construction: shareable across threads. */
#ifndef DG_TOKENIZER_TOKENIZER_H
#define DG_TOKENIZER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"
#include "format/gguf.h"

typedef struct dg_tokenizer dg_tokenizer;

/* From GGUF metadata (tokenizer.ggml.model == "gpt2", .tokens, .merges,
 * .token_type, .pre, .bos_token_id, .eos_token_id, ...). The tokenizer copies
 * what it keeps; the dg_gguf may be closed afterwards. */
deg_status dg_tokenizer_from_gguf(const dg_gguf *g, dg_tokenizer **out);
/* From a tokenizer.json file (and, if not NULL, tokenizer_config.json for
 * bos/eos and added-token flags). */
deg_status dg_tokenizer_from_json(const char *tokenizer_json_path,
                                  const char *tokenizer_config_path, dg_tokenizer **out);
void dg_tokenizer_free(dg_tokenizer *t);

int32_t dg_tokenizer_n_vocab(const dg_tokenizer *t);
int32_t dg_tokenizer_bos(const dg_tokenizer *t);   /* -1 if none */
int32_t dg_tokenizer_eos(const dg_tokenizer *t);   /* -1 if none */
/* Id of an exact token string (special or regular), -1 if absent. */
int32_t dg_tokenizer_find(const dg_tokenizer *t, const char *piece, size_t len);

/* Encode: same contract as deg_tokenize (DEG_ERR_RANGE when cap too small,
 * *n_ids always set to the full count; DEG_ERR_UTF8 on invalid input). */
deg_status dg_tokenizer_encode(const dg_tokenizer *t, const char *text, size_t len,
                               int parse_special, int32_t *ids, size_t cap, size_t *n_ids);
/* Decode: same contract as deg_detokenize. */
deg_status dg_tokenizer_decode(const dg_tokenizer *t, const int32_t *ids, size_t n_ids,
                               char *buf, size_t cap, size_t *len);

#endif
