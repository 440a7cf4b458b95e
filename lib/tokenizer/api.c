/* Public tokenizer entry points (include/deg.h): thin wrappers over the
 * model's dg_tokenizer. */
#include "base/status.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

DEG_API deg_status deg_tokenize(const deg_model *model, const char *text, size_t len,
                                int parse_special, int32_t *ids, size_t cap, size_t *n_ids)
{
    if (n_ids) *n_ids = 0;
    if (!model) return dg_fail(DEG_ERR_ARG, "deg_tokenize: model is NULL");
    const dg_tokenizer *t = dg_model_tokenizer(model);
    if (!t) return dg_fail(DEG_ERR_STATE, "deg_tokenize: the model has no tokenizer");
    return dg_tokenizer_encode(t, text, len, parse_special, ids, cap, n_ids);
}

DEG_API deg_status deg_detokenize(const deg_model *model, const int32_t *ids, size_t n_ids,
                                  char *buf, size_t cap, size_t *len)
{
    if (len) *len = 0;
    if (!model) return dg_fail(DEG_ERR_ARG, "deg_detokenize: model is NULL");
    const dg_tokenizer *t = dg_model_tokenizer(model);
    if (!t) return dg_fail(DEG_ERR_STATE, "deg_detokenize: the model has no tokenizer");
    return dg_tokenizer_decode(t, ids, n_ids, buf, cap, len);
}
