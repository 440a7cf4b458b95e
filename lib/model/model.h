/* Internal view of a loaded model shared by the model, generation and fill
 * code. The struct deg_model itself is private to lib/model. */
#ifndef DG_MODEL_MODEL_H
#define DG_MODEL_MODEL_H

#include "deg.h"
#include "tokenizer/tokenizer.h"

/* Borrowed from the model; valid until deg_model_free. */
const dg_tokenizer *dg_model_tokenizer(const deg_model *model);
/* The raw Jinja chat template from the file's metadata (GGUF
 * tokenizer.chat_template or tokenizer_config.json "chat_template"), or NULL. */
const char *dg_model_chat_template(const deg_model *model);
/* The path deg_model_load was given (borrowed; valid until deg_model_free):
 * what a checkpoint opened over this model hashes to check its backbone. */
const char *dg_model_path(const deg_model *model);

#endif
