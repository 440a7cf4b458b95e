/* Tokenizer from a Hugging Face tokenizer.json (the `tokenizers`
 * serialization): model BPE (vocab + merges in "a b" or ["a", "b"] form),
 * added_tokens, pre_tokenizer (ByteLevel, Split, Digits, Sequence), decoder
 * ByteLevel. Optional tokenizer_config.json gives bos/eos/pad and
 * add_bos_token. Anything else that changes the ids is refused with
 * DEG_ERR_UNSUPPORTED rather than silently ignored. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "tokenizer/tok_internal.h"

static deg_status load_json_file(const char *path, const char *what, json_t **out)
{
    json_error_t err;
    json_t *root = json_load_file(path, JSON_ALLOW_NUL, &err);
    if (!root) {
        if (json_error_code(&err) == json_error_cannot_open_file)
            return dg_fail(DEG_ERR_IO, "%s %s: %s", what, path, err.text);
        return dg_fail(DEG_ERR_FORMAT, "%s %s: line %d column %d: %s", what, path, err.line,
                       err.column, err.text);
    }
    if (!json_is_object(root)) {
        json_decref(root);
        return dg_fail(DEG_ERR_FORMAT, "%s %s: top level is not an object", what, path);
    }
    *out = root;
    return DEG_OK;
}

static int get_bool(const json_t *obj, const char *key, int dflt)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_boolean(v)) return json_is_true(v);
    return dflt;
}

static deg_status parse_behavior(const json_t *v, dg_split_behavior *out)
{
    static const struct { const char *name; dg_split_behavior b; } names[] = {
        {"Removed", DG_SPLIT_REMOVED}, {"Isolated", DG_SPLIT_ISOLATED},
        {"MergedWithPrevious", DG_SPLIT_MERGED_PREV}, {"MergedWithNext", DG_SPLIT_MERGED_NEXT},
        {"Contiguous", DG_SPLIT_CONTIGUOUS}};
    const char *s = json_string_value(v);
    if (!s) return dg_fail(DEG_ERR_FORMAT, "Split: \"behavior\" missing or not a string");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) { *out = names[i].b; return DEG_OK; }
    return dg_fail(DEG_ERR_FORMAT, "Split: unknown behavior \"%s\"", s);
}

/* *bytelevel_last: set to 1 if the last step added was ByteLevel. */
static deg_status parse_pretok(dg_tokenizer *t, const json_t *p, int depth, int *bytelevel_last)
{
    if (depth > 8) return dg_fail(DEG_ERR_FORMAT, "pre_tokenizer: nesting too deep");
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!json_is_object(p) || !type)
        return dg_fail(DEG_ERR_FORMAT, "pre_tokenizer: expected an object with a \"type\"");
    if (strcmp(type, "Sequence") == 0) {
        const json_t *arr = json_object_get(p, "pretokenizers");
        if (!json_is_array(arr))
            return dg_fail(DEG_ERR_FORMAT, "pre_tokenizer Sequence: \"pretokenizers\" is not an array");
        size_t i;
        const json_t *it;
        json_array_foreach(arr, i, it) DG_TRY(parse_pretok(t, it, depth + 1, bytelevel_last));
        return DEG_OK;
    }
    if (*bytelevel_last)
        return dg_fail(DEG_ERR_UNSUPPORTED,
                       "pre_tokenizer %s after ByteLevel is not supported (ByteLevel must be last)",
                       type);
    if (strcmp(type, "ByteLevel") == 0) {
        *bytelevel_last = 1;
        return dg_tokb_pre_bytelevel(t, get_bool(p, "add_prefix_space", 1),
                                     get_bool(p, "use_regex", 1));
    }
    if (strcmp(type, "Digits") == 0)
        return dg_tokb_pre_digits(t, get_bool(p, "individual_digits", 0));
    if (strcmp(type, "Split") == 0) {
        const json_t *pat = json_object_get(p, "pattern");
        const json_t *re = json_object_get(pat, "Regex");
        const json_t *str = json_object_get(pat, "String");
        dg_split_behavior b = DG_SPLIT_ISOLATED;
        DG_TRY(parse_behavior(json_object_get(p, "behavior"), &b));
        int invert = get_bool(p, "invert", 0);
        if (json_is_string(re))
            return dg_tokb_pre_regex(t, json_string_value(re), json_string_length(re), 0, b, invert);
        if (json_is_string(str))
            return dg_tokb_pre_regex(t, json_string_value(str), json_string_length(str), 1, b,
                                     invert);
        return dg_fail(DEG_ERR_FORMAT, "pre_tokenizer Split: \"pattern\" needs \"Regex\" or \"String\"");
    }
    return dg_fail(DEG_ERR_UNSUPPORTED, "pre_tokenizer type \"%s\" is not supported "
                   "(supported: ByteLevel, Split, Digits, Sequence)", type);
}

static deg_status parse_normalizer(dg_tokenizer *t, const json_t *n)
{
    if (!n || json_is_null(n)) return DEG_OK;
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type) return dg_fail(DEG_ERR_FORMAT, "normalizer: expected an object with a \"type\"");
    if (strcmp(type, "NFC") == 0) {
        t->normalizer = DG_NORM_NFC;
        return DEG_OK;
    }
    if (strcmp(type, "Sequence") == 0) {
        const json_t *arr = json_object_get(n, "normalizers");
        if (!json_is_array(arr)) return dg_fail(DEG_ERR_FORMAT, "normalizer Sequence: no array");
        size_t i;
        const json_t *it;
        json_array_foreach(arr, i, it) {
            if (t->normalizer != DG_NORM_NONE)
                return dg_fail(DEG_ERR_UNSUPPORTED, "normalizer Sequence with more than NFC");
            DG_TRY(parse_normalizer(t, it));
        }
        return DEG_OK;
    }
    return dg_fail(DEG_ERR_UNSUPPORTED, "normalizer \"%s\" is not supported (only NFC)", type);
}

static deg_status parse_decoder(const json_t *d)
{
    const char *type = json_string_value(json_object_get(d, "type"));
    if (type && strcmp(type, "ByteLevel") == 0) return DEG_OK;
    return dg_fail(DEG_ERR_UNSUPPORTED, "decoder %s is not supported (byte-level BPE needs ByteLevel)",
                   type ? type : "null");
}

static deg_status parse_model(dg_tokenizer *t, const json_t *m)
{
    if (!json_is_object(m)) return dg_fail(DEG_ERR_FORMAT, "missing \"model\" object");
    const json_t *vocab = json_object_get(m, "vocab");
    const json_t *merges = json_object_get(m, "merges");
    const char *type = json_string_value(json_object_get(m, "type"));
    if (type && strcmp(type, "BPE") != 0)
        return dg_fail(DEG_ERR_UNSUPPORTED, "model type \"%s\" is not supported (only BPE)", type);
    if (!json_is_object(vocab)) return dg_fail(DEG_ERR_FORMAT, "model.vocab is missing or not an object");
    if (!json_is_array(merges)) return dg_fail(DEG_ERR_FORMAT, "model.merges is missing or not an array");
    if (get_bool(m, "byte_fallback", 0))
        return dg_fail(DEG_ERR_UNSUPPORTED, "model.byte_fallback is not supported");
    const json_t *dropout = json_object_get(m, "dropout");
    if (dropout && !json_is_null(dropout) && json_number_value(dropout) != 0.0)
        return dg_fail(DEG_ERR_UNSUPPORTED, "model.dropout is not supported at inference");
    const char *keys[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_object_get(m, keys[i]);
        if (json_is_string(v) && json_string_length(v) > 0)
            return dg_fail(DEG_ERR_UNSUPPORTED, "model.%s is not supported", keys[i]);
    }
    t->ignore_merges = get_bool(m, "ignore_merges", 0);

    const char *key;
    const json_t *val;
    char stackbuf[512];
    json_object_foreach((json_t *)vocab, key, val) {
        if (!json_is_integer(val))
            return dg_fail(DEG_ERR_FORMAT, "model.vocab[\"%.100s\"] is not an integer", key);
        json_int_t id = json_integer_value(val);
        if (id < 0 || id > INT32_MAX)
            return dg_fail(DEG_ERR_FORMAT, "model.vocab[\"%.100s\"] = %lld out of range", key,
                           (long long)id);
        size_t len = strlen(key);
        char *buf = len <= sizeof stackbuf ? stackbuf : malloc(len);
        if (!buf) return dg_fail(DEG_ERR_NOMEM, "tokenizer: out of memory");
        int spelled;
        size_t n = dg_tok_unspell(key, len, buf, &spelled);
        deg_status s = dg_tokb_set_token(t, (int32_t)id, buf, n, spelled);
        if (buf != stackbuf) free(buf);
        if (s != DEG_OK) return dg_fail_context(s, "model.vocab[\"%.100s\"]", key);
    }
    DG_TRY(dg_tokb_vocab_done(t));

    size_t i;
    json_array_foreach(merges, i, val) {
        const char *a, *b;
        size_t alen, blen;
        if (json_is_string(val)) {
            /* "a b": exactly one space (tokenizers convert_merges_to_hashmap) */
            const char *s = json_string_value(val);
            size_t len = json_string_length(val);
            const char *sp = memchr(s, ' ', len);
            if (!sp || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s)))
                return dg_fail(DEG_ERR_FORMAT, "model.merges[%zu] = \"%.100s\": expected \"a b\"", i, s);
            a = s; alen = (size_t)(sp - s);
            b = sp + 1; blen = len - alen - 1;
        } else if (json_is_array(val) && json_array_size(val) == 2 &&
                   json_is_string(json_array_get(val, 0)) && json_is_string(json_array_get(val, 1))) {
            a = json_string_value(json_array_get(val, 0));
            alen = json_string_length(json_array_get(val, 0));
            b = json_string_value(json_array_get(val, 1));
            blen = json_string_length(json_array_get(val, 1));
        } else {
            return dg_fail(DEG_ERR_FORMAT, "model.merges[%zu]: expected \"a b\" or [\"a\", \"b\"]", i);
        }
        if (i >= UINT32_MAX) return dg_fail(DEG_ERR_FORMAT, "model.merges: too many merges");
        deg_status s = dg_tokb_add_merge(t, a, alen, b, blen, (uint32_t)i);
        if (s != DEG_OK) return dg_fail_context(s, "model.merges[%zu]", i);
    }
    return DEG_OK;
}

static deg_status parse_added(dg_tokenizer *t, const json_t *arr)
{
    if (!arr || json_is_null(arr)) return DEG_OK;
    if (!json_is_array(arr)) return dg_fail(DEG_ERR_FORMAT, "added_tokens is not an array");
    size_t i;
    const json_t *a;
    json_array_foreach(arr, i, a) {
        const json_t *id = json_object_get(a, "id");
        const json_t *content = json_object_get(a, "content");
        if (!json_is_integer(id) || !json_is_string(content))
            return dg_fail(DEG_ERR_FORMAT, "added_tokens[%zu]: needs integer \"id\" and string \"content\"", i);
        json_int_t v = json_integer_value(id);
        if (v < 0 || v > INT32_MAX)
            return dg_fail(DEG_ERR_FORMAT, "added_tokens[%zu]: id %lld out of range", i, (long long)v);
        int special = get_bool(a, "special", 0);
        deg_status s = dg_tokb_add_added(t, (int32_t)v, json_string_value(content),
                                         json_string_length(content), special,
                                         get_bool(a, "lstrip", 0), get_bool(a, "rstrip", 0),
                                         get_bool(a, "single_word", 0),
                                         get_bool(a, "normalized", !special));
        if (s != DEG_OK) return dg_fail_context(s, "added_tokens[%zu]", i);
    }
    return DEG_OK;
}

/* A tokenizer_config.json token: "<s>" or {"content": "<s>", ...}. */
static deg_status config_token(const dg_tokenizer *t, const json_t *cfg, const char *key,
                               int32_t *out)
{
    const json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) return DEG_OK;
    if (json_is_object(v)) v = json_object_get(v, "content");
    if (!json_is_string(v))
        return dg_fail(DEG_ERR_FORMAT, "tokenizer_config.json: \"%s\" is not a string or {content}", key);
    int32_t id = dg_tokenizer_find(t, json_string_value(v), json_string_length(v));
    if (id < 0)
        return dg_fail(DEG_ERR_FORMAT, "tokenizer_config.json: %s \"%.100s\" is not a token", key,
                       json_string_value(v));
    *out = id;
    return DEG_OK;
}

static deg_status build(dg_tokenizer *t, const json_t *root, const json_t *cfg)
{
    DG_TRY(parse_normalizer(t, json_object_get(root, "normalizer")));
    DG_TRY(parse_model(t, json_object_get(root, "model")));
    DG_TRY(parse_added(t, json_object_get(root, "added_tokens")));
    const json_t *pre = json_object_get(root, "pre_tokenizer");
    int bytelevel_last = 0;
    if (pre && !json_is_null(pre)) DG_TRY(parse_pretok(t, pre, 0, &bytelevel_last));
    if (!bytelevel_last)
        return dg_fail(DEG_ERR_UNSUPPORTED, "pre_tokenizer: byte-level BPE needs a ByteLevel "
                       "pre-tokenizer as the last step");
    DG_TRY(parse_decoder(json_object_get(root, "decoder")));
    DG_TRY(dg_tokb_finish(t));
    if (cfg) {
        DG_TRY(config_token(t, cfg, "bos_token", &t->bos));
        DG_TRY(config_token(t, cfg, "eos_token", &t->eos));
        DG_TRY(config_token(t, cfg, "pad_token", &t->pad));
        t->add_bos = get_bool(cfg, "add_bos_token", 0);
    }
    return DEG_OK;
}

deg_status dg_tokenizer_from_json(const char *tokenizer_json_path,
                                  const char *tokenizer_config_path, dg_tokenizer **out)
{
    if (!tokenizer_json_path || !out) return dg_fail(DEG_ERR_ARG, "tokenizer: NULL path or out");
    *out = NULL;
    json_t *root = NULL, *cfg = NULL;
    DG_TRY(load_json_file(tokenizer_json_path, "tokenizer.json", &root));
    deg_status s = DEG_OK;
    if (tokenizer_config_path)
        s = load_json_file(tokenizer_config_path, "tokenizer_config.json", &cfg);
    dg_tokenizer *t = NULL;
    if (s == DEG_OK) s = dg_tokb_new(&t);
    if (s == DEG_OK) {
        s = build(t, root, cfg);
        if (s != DEG_OK) {
            dg_fail_context(s, "tokenizer.json %s", tokenizer_json_path);
            dg_tokenizer_free(t);
            t = NULL;
        }
    }
    json_decref(root);
    json_decref(cfg);
    *out = t;
    return s;
}
