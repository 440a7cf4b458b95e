/* tokenize.c - the public tokenizer entry points (include/deg_runtime.h): thin
 * wrappers over the model's dg_tokenizer (in lib/model since they take a deg_model:
 * lib/tokenizer knows no model). The model's vocabulary (embedding rows) may be
 * larger than the tokenizer's: ids in between have no text and decode to nothing,
 * as in tokenizers' decode. */
#include <stdlib.h>

#include "base/status.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

DEG_API deg_status deg_tokenize_ex(const deg_model *model, const char *text, size_t len,
                                   unsigned flags, int32_t *ids, size_t cap, size_t *n_ids)
{
    if (n_ids) *n_ids = 0;
    if (!model || !n_ids) return dg_fail(DEG_ERR_ARG, "deg_tokenize: model or n_ids is NULL");
    const dg_tokenizer *t = dg_model_tokenizer(model);
    if (!t) return dg_fail(DEG_ERR_STATE, "deg_tokenize: the model has no tokenizer");
    return dg_tokenizer_encode_ex(t, text, len, flags, ids, cap, n_ids);
}

deg_status dg_model_tokenize(const deg_model *model, const char *text, size_t len, unsigned flags,
                             int32_t **ids, size_t *n_ids)
{
    if (ids) *ids = NULL;
    if (n_ids) *n_ids = 0;
    if (!model || !ids || !n_ids) return dg_fail(DEG_ERR_ARG, "tokenize: NULL model or output");
    const dg_tokenizer *t = dg_model_tokenizer(model);
    if (!t) return dg_fail(DEG_ERR_STATE, "tokenize: the model has no tokenizer");
    return dg_tokenizer_encode_alloc(t, text, len, flags, NULL, 0, ids, n_ids);
}

DEG_API deg_status deg_tokenize(const deg_model *model, const char *text, size_t len,
                                int parse_special, int32_t *ids, size_t cap, size_t *n_ids)
{
    return deg_tokenize_ex(model, text, len, parse_special ? DEG_TOKENIZE_SPECIAL : 0u, ids, cap,
                           n_ids);
}

/* The ids checked against the model's vocabulary ("who" names the caller in
 * errors), then decoded into buf/cap (out = NULL) or a malloc'd *out. Ids the
 * tokenizer has no text for (embedding rows beyond it) decode to nothing. */
static deg_status detokenize(const deg_model *model, const char *who, const int32_t *ids,
                             size_t n_ids, char *buf, size_t cap, char **out, size_t *len)
{
    if (len) *len = 0;
    if (out) *out = NULL;
    if (!model || !len) return dg_fail(DEG_ERR_ARG, "%s: model or len is NULL", who);
    if (!ids && n_ids) return dg_fail(DEG_ERR_ARG, "%s: ids is NULL but n_ids is %zu", who, n_ids);
    const dg_tokenizer *t = dg_model_tokenizer(model);
    if (!t) return dg_fail(DEG_ERR_STATE, "%s: the model has no tokenizer", who);
    deg_model_info info;
    DG_TRY(deg_model_get_info(model, &info));
    int32_t n_tok = dg_tokenizer_n_vocab(t);
    size_t beyond = 0;
    for (size_t i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= info.n_vocab)
            return dg_fail(DEG_ERR_RANGE, "%s: id %d at index %zu outside [0, %d)", who, ids[i],
                           i, info.n_vocab);
        if (ids[i] >= n_tok) beyond++;
    }
    int32_t *kept = NULL;
    size_t k = n_ids;
    if (beyond) {
        kept = malloc((n_ids - beyond + 1) * sizeof *kept);
        if (!kept) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", who);
        k = 0;
        for (size_t i = 0; i < n_ids; i++)
            if (ids[i] < n_tok) kept[k++] = ids[i];
    }
    const int32_t *use = kept ? kept : ids;
    deg_status s = out ? dg_tokenizer_decode_alloc(t, use, k, out, len)
                       : dg_tokenizer_decode(t, use, k, buf, cap, len);
    free(kept);
    return s;
}

DEG_API deg_status deg_detokenize(const deg_model *model, const int32_t *ids, size_t n_ids,
                                  char *buf, size_t cap, size_t *len)
{
    return detokenize(model, "deg_detokenize", ids, n_ids, buf, cap, NULL, len);
}

deg_status dg_model_detokenize(const deg_model *model, const int32_t *ids, size_t n_ids,
                               char **out, size_t *len)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "detokenize: out is NULL");
    return detokenize(model, "detokenize", ids, n_ids, NULL, 0, out, len);
}
