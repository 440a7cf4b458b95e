/* Internal view of a loaded model shared by the model, generation and fill
 * code. The struct deg_model itself is private to lib/model. */
#ifndef DG_MODEL_MODEL_H
#define DG_MODEL_MODEL_H

#include "deg.h"
#include "tokenizer/tokenizer.h"

/* Borrowed from the model; valid until deg_model_free. */
const dg_tokenizer *dg_model_tokenizer(const deg_model *model);
/* deg_tokenize_ex's ids (DEG_TOKENIZE_* flags) in a malloc'd array (*ids, free;
 * non-NULL on success, also for no ids) of *n_ids, encoded once
 * (dg_tokenizer_encode_alloc). Errors: DEG_ERR_ARG, DEG_ERR_STATE (no
 * tokenizer), as deg_tokenize_ex (never DEG_ERR_RANGE), DEG_ERR_NOMEM. */
deg_status dg_model_tokenize(const deg_model *model, const char *text, size_t len, unsigned flags,
                             int32_t **ids, size_t *n_ids);
/* deg_detokenize's bytes in a malloc'd buffer: *out (free) holds *len bytes
 * and a NUL after them, sized once (dg_tokenizer_decode_alloc). Errors as
 * deg_detokenize (never DEG_ERR_RANGE for the size), DEG_ERR_NOMEM. */
deg_status dg_model_detokenize(const deg_model *model, const int32_t *ids, size_t n_ids,
                               char **out, size_t *len);
/* The raw Jinja chat template from the file's metadata (GGUF
 * tokenizer.chat_template or tokenizer_config.json "chat_template"), or NULL. */
const char *dg_model_chat_template(const deg_model *model);
/* The path deg_model_load was given (borrowed; valid until deg_model_free):
 * what a checkpoint opened over this model hashes to check its backbone. */
const char *dg_model_path(const deg_model *model);

#endif
