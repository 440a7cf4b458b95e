/* deg_model_load: a GGUF file (hyper-parameters from <arch>.* metadata, the
 * llama.cpp key names) or a Hugging Face directory (config.json, *.safetensors
 * single or sharded via model.safetensors.index.json, tokenizer.json,
 * tokenizer_config.json / chat_template.jinja). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fileio.h"
#include "base/status.h"
#include "model/arch.h"
#include "model/chat.h"
#include "model/model.h"
#include "model/ops.h"

/* Sanity bound for sizes read from metadata, so a corrupt file fails with a
 * message instead of a giant allocation. */
#define DG_HP_MAX (1 << 24)

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* chat_template.jinja is text of a few KiB: the cap keeps a stray large file from being read whole */
#define CHAT_TEMPLATE_MAX ((size_t)16 << 20)

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* ------------------------------------------------------------- hparams */

static deg_status check_hparams(dg_hparams *hp, const char *where)
{
    if (hp->rope_dim == 0) hp->rope_dim = hp->head_dim;
    struct { const char *name; int32_t v; } pos[] = {
        {"n_embd", hp->n_embd}, {"n_layer", hp->n_layer}, {"n_head", hp->n_head},
        {"n_head_kv", hp->n_head_kv}, {"head_dim", hp->head_dim}, {"n_ff", hp->n_ff}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (pos[i].v <= 0 || pos[i].v > DG_HP_MAX)
            return dg_fail(DEG_ERR_FORMAT, "%s: %s = %d is out of range", where, pos[i].name,
                           (int)pos[i].v);
    if (hp->n_head % hp->n_head_kv)
        return dg_fail(DEG_ERR_FORMAT, "%s: n_head %d is not a multiple of n_head_kv %d", where,
                       (int)hp->n_head, (int)hp->n_head_kv);
    if (hp->head_dim > DG_ATTN_MAX_HEAD_DIM)
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: head_dim %d exceeds %d", where,
                       (int)hp->head_dim, DG_ATTN_MAX_HEAD_DIM);
    if (hp->head_dim % 2)
        return dg_fail(DEG_ERR_FORMAT, "%s: head_dim %d is odd (RoPE needs pairs)", where,
                       (int)hp->head_dim);
    if (!(hp->rope_theta > 0.0f) || !(hp->rms_eps > 0.0f))
        return dg_fail(DEG_ERR_FORMAT, "%s: rope_theta %g / rms_eps %g must be positive", where,
                       (double)hp->rope_theta, (double)hp->rms_eps);
    return DEG_OK;
}

static deg_status gguf_int(const dg_gguf *g, const char *arch, const char *key, int required,
                           int32_t dflt, int32_t *out)
{
    char full[160];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    int64_t v;
    deg_status st = dg_gguf_get_i64(g, full, &v);
    if (st == DEG_ERR_RANGE) {
        if (required) return dg_fail(DEG_ERR_FORMAT, "GGUF: missing metadata key '%s'", full);
        *out = dflt;
        return DEG_OK;
    }
    if (st != DEG_OK) return dg_fail_context(st, "GGUF key '%s'", full);
    if (v < 0 || v > INT32_MAX)
        return dg_fail(DEG_ERR_FORMAT, "GGUF: '%s' = %lld is out of range", full, (long long)v);
    *out = (int32_t)v;
    return DEG_OK;
}

static deg_status gguf_float(const dg_gguf *g, const char *arch, const char *key, float dflt,
                             float *out)
{
    char full[160];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    deg_status st = dg_gguf_get_f32(g, full, out);
    if (st == DEG_ERR_RANGE) {
        *out = dflt;
        return DEG_OK;
    }
    if (st != DEG_OK) return dg_fail_context(st, "GGUF key '%s'", full);
    return DEG_OK;
}

const char *dg_gguf_arch_key(const deg_model *m, const char *key, char *buf, size_t cap)
{
    const char *a = m->arch->gguf_arch ? m->arch->gguf_arch : m->arch->name;
    snprintf(buf, cap, "%s.%s", a, key);
    return buf;
}

deg_status dg_gguf_layer_ints(const deg_model *m, const char *key, int32_t n, int32_t *out,
                              int *found)
{
    const dg_gguf *g = m->src.gguf;
    char full[160];
    dg_gguf_arch_key(m, key, full, sizeof full);
    dg_gguf_type et;
    uint64_t len;
    const void *data;
    *found = 1;
    deg_status st = dg_gguf_get_arr(g, full, &et, &len, &data);
    if (st == DEG_ERR_RANGE) {
        dg_clear_error();
        *found = 0;
        return DEG_OK;
    }
    if (st != DEG_OK) { /* not an array: a number for every layer */
        dg_clear_error();
        int64_t v;
        st = dg_gguf_get_i64(g, full, &v);
        if (st != DEG_OK || v < 0 || v > INT32_MAX)
            return dg_fail(DEG_ERR_FORMAT, "GGUF: '%s' is neither a count nor an array of "
                           "%d per-layer counts", full, (int)n);
        for (int32_t i = 0; i < n; i++) out[i] = (int32_t)v;
        return DEG_OK;
    }
    if (len != (uint64_t)n)
        return dg_fail(DEG_ERR_FORMAT, "GGUF: '%s' has %llu entries for %d layers", full,
                       (unsigned long long)len, (int)n);
    for (int32_t i = 0; i < n; i++) {
        int64_t v;
        if (et == DG_GGUF_BOOL) v = ((const uint8_t *)data)[i] != 0;
        else DG_TRY(dg_gguf_arr_int(g, full, (uint64_t)i, &v));
        if (v < 0 || v > INT32_MAX)
            return dg_fail(DEG_ERR_FORMAT, "GGUF: '%s'[%d] = %lld is out of range", full, (int)i,
                           (long long)v);
        out[i] = (int32_t)v;
    }
    return DEG_OK;
}

/* A per-layer count of the common hyper-parameters (attention.head_count_kv,
 * feed_forward_length): a number, or (hybrids: llama.cpp's lfm2, gemma4) an
 * array with one entry per layer, 0 on layers without attention; the
 * non-zero entries must agree unless the architecture reads the array
 * (DG_GGUF_LAYER_ARRAYS). *out = the first non-zero entry (dflt if none or
 * the key is absent and not required). */
static deg_status gguf_layer_count(const deg_model *m, const char *key, int required,
                                   int32_t dflt, int32_t *out)
{
    int32_t n = m->hp.n_layer, *v = malloc(sizeof(int32_t) * (size_t)n), first = 0;
    if (!v) return dg_fail(DEG_ERR_NOMEM, "model: out of memory");
    int found;
    char full[160];
    dg_gguf_arch_key(m, key, full, sizeof full);
    deg_status st = dg_gguf_layer_ints(m, key, n, v, &found);
    if (st == DEG_OK && !found && required)
        st = dg_fail(DEG_ERR_FORMAT, "GGUF: missing metadata key '%s'", full);
    for (int32_t i = 0; st == DEG_OK && found && i < n; i++) {
        if (v[i] && first && v[i] != first && !(m->arch->gguf_flags & DG_GGUF_LAYER_ARRAYS))
            st = dg_fail(DEG_ERR_UNSUPPORTED, "GGUF: '%s'[%d] = %d (layers of %s with "
                         "different values)", full, (int)i, (int)v[i], m->arch->name);
        if (v[i] && !first) first = v[i];
    }
    free(v);
    if (st == DEG_OK) *out = first ? first : dflt;
    return st;
}

static deg_status gguf_hparams(deg_model *m, const char *arch)
{
    const dg_gguf *g = m->src.gguf;
    dg_hparams *hp = &m->hp;
    DG_TRY(gguf_int(g, arch, "block_count", 1, 0, &hp->n_layer));
    if (hp->n_layer <= 0 || hp->n_layer > DG_HP_MAX)
        return dg_fail(DEG_ERR_FORMAT, "GGUF: %s.block_count = %d is out of range", arch,
                       (int)hp->n_layer);
    DG_TRY(gguf_int(g, arch, "embedding_length", 1, 0, &hp->n_embd));
    DG_TRY(gguf_int(g, arch, "attention.head_count", 1, 0, &hp->n_head));
    DG_TRY(gguf_layer_count(m, "attention.head_count_kv", 0, hp->n_head, &hp->n_head_kv));
    DG_TRY(gguf_layer_count(m, "feed_forward_length", 1, 0, &hp->n_ff));
    DG_TRY(gguf_int(g, arch, "context_length", 0, 0, &hp->n_ctx_train));
    int32_t dflt_hd = hp->n_head > 0 ? hp->n_embd / hp->n_head : 0;
    DG_TRY(gguf_int(g, arch, "attention.key_length", 0, dflt_hd, &hp->head_dim));
    int32_t vlen = 0, rope_dims = 0;
    DG_TRY(gguf_int(g, arch, "attention.value_length", 0, hp->head_dim, &vlen));
    DG_TRY(gguf_int(g, arch, "rope.dimension_count", 0, hp->head_dim, &rope_dims));
    DG_TRY(gguf_float(g, arch, "rope.freq_base", 10000.0f, &hp->rope_theta));
    DG_TRY(gguf_float(g, arch, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->rms_eps));
    if (vlen != hp->head_dim)
        return dg_fail(DEG_ERR_UNSUPPORTED, "GGUF: value_length %d != key_length %d",
                       (int)vlen, (int)hp->head_dim);
    int partial = m->arch->gguf_flags & DG_GGUF_PARTIAL_ROPE;
    if (rope_dims != hp->head_dim &&
        !(partial && rope_dims >= 2 && rope_dims % 2 == 0 && rope_dims < hp->head_dim))
        return dg_fail(DEG_ERR_UNSUPPORTED,
                       "GGUF: partial RoPE (%s.rope.dimension_count %d of head_dim %d)", arch,
                       (int)rope_dims, (int)hp->head_dim);
    hp->rope_dim = rope_dims;
    dg_gguf_str s;
    char key[160];
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    if (dg_gguf_get_str(g, key, &s) == DEG_OK && !(s.len == 4 && !memcmp(s.ptr, "none", 4)))
        return dg_fail(DEG_ERR_UNSUPPORTED, "GGUF: RoPE scaling '%.*s' is not supported",
                       (int)s.len, s.ptr);
    return check_hparams(hp, "GGUF");
}

static int json_int(json_t *cfg, const char *key, int32_t dflt, int32_t *out)
{
    json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 1;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
        return 0;
    *out = (int32_t)json_integer_value(v);
    return 1;
}

static int json_float(json_t *cfg, const char *key, float dflt, float *out)
{
    json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 1;
    }
    if (!json_is_number(v)) return 0;
    *out = (float)json_number_value(v);
    return 1;
}

static deg_status hf_hparams(deg_model *m, json_t *cfg, const char *cfg_path)
{
    dg_hparams *hp = &m->hp;
    const char *bad = NULL;
#define REQ_INT(key, field) \
    if (!bad && (!json_is_integer(json_object_get(cfg, key)) || !json_int(cfg, key, 0, &hp->field))) bad = key
    REQ_INT("hidden_size", n_embd);
    REQ_INT("num_hidden_layers", n_layer);
    REQ_INT("num_attention_heads", n_head);
    REQ_INT("intermediate_size", n_ff);
#undef REQ_INT
    if (bad) return dg_fail(DEG_ERR_FORMAT, "%s: missing or invalid \"%s\"", cfg_path, bad);
    if (!json_int(cfg, "num_key_value_heads", hp->n_head, &hp->n_head_kv)) bad = "num_key_value_heads";
    else if (!json_int(cfg, "head_dim", hp->n_head ? hp->n_embd / hp->n_head : 0, &hp->head_dim))
        bad = "head_dim";
    else if (!json_int(cfg, "max_position_embeddings", 0, &hp->n_ctx_train))
        bad = "max_position_embeddings";
    else if (!json_float(cfg, "rms_norm_eps", 1e-6f, &hp->rms_eps)) bad = "rms_norm_eps";
    if (bad) return dg_fail(DEG_ERR_FORMAT, "%s: invalid \"%s\"", cfg_path, bad);

    /* RoPE: transformers 4 writes rope_theta (+ rope_scaling), transformers 5
     * rope_parameters {rope_type, rope_theta}. Only the default type runs. */
    json_t *rp = json_object_get(cfg, "rope_parameters");
    json_t *rs = json_object_get(cfg, "rope_scaling");
    json_t *rope = json_is_object(rp) ? rp : (json_is_object(rs) ? rs : NULL);
    float theta_top = 10000.0f;
    if (!json_float(cfg, "rope_theta", 10000.0f, &theta_top))
        return dg_fail(DEG_ERR_FORMAT, "%s: invalid \"rope_theta\"", cfg_path);
    hp->rope_theta = theta_top;
    if (rope) {
        json_t *type = json_object_get(rope, "rope_type");
        if (!type) type = json_object_get(rope, "type");
        if (type && (!json_is_string(type) || strcmp(json_string_value(type), "default")))
            return dg_fail(DEG_ERR_UNSUPPORTED, "%s: RoPE type '%s' is not supported", cfg_path,
                           json_is_string(type) ? json_string_value(type) : "?");
        if (!json_float(rope, "rope_theta", theta_top, &hp->rope_theta))
            return dg_fail(DEG_ERR_FORMAT, "%s: invalid rope_theta", cfg_path);
    }
    /* Partial rotary (transformers' default RoPE: dim = int(head_dim *
     * partial_rotary_factor), the first dim floats of each head rotate). */
    float prf = 1.0f;
    if (!json_float(rope ? rope : cfg, "partial_rotary_factor", 1.0f, &prf) ||
        !json_float(cfg, "partial_rotary_factor", prf, &prf) || !(prf > 0.0f && prf <= 1.0f))
        return dg_fail(DEG_ERR_FORMAT, "%s: invalid partial_rotary_factor", cfg_path);
    hp->rope_dim = (int32_t)((float)hp->head_dim * prf);
    if (hp->rope_dim < 2 || hp->rope_dim % 2)
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: rotary dims %d (head_dim %d x "
                       "partial_rotary_factor %g) must be even and >= 2", cfg_path,
                       (int)hp->rope_dim, (int)hp->head_dim, (double)prf);
    json_t *act = json_object_get(cfg, "hidden_act");
    if (act && (!json_is_string(act) || strcmp(json_string_value(act), "silu")))
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: hidden_act '%s' is not supported (silu only)",
                       cfg_path, json_is_string(act) ? json_string_value(act) : "?");
    if (json_is_true(json_object_get(cfg, "attention_bias")) ||
        json_is_true(json_object_get(cfg, "mlp_bias")))
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: attention/MLP biases are not supported",
                       cfg_path);
    return check_hparams(hp, cfg_path);
}

deg_status dg_hf_layer_types(const deg_model *m, json_t *cfg, const char *path,
                             const char *attn_name, const char *other_name, const char *idx_key,
                             unsigned char *is_attn, int *found)
{
    int32_t n = m->hp.n_layer;
    json_t *lt = json_object_get(cfg, "layer_types");
    json_t *ix = idx_key ? json_object_get(cfg, idx_key) : NULL;
    *found = 1;
    if (json_is_array(lt)) {
        if (json_array_size(lt) != (size_t)n)
            return dg_fail(DEG_ERR_FORMAT, "%s: layer_types has %zu entries for %d layers", path,
                           json_array_size(lt), (int)n);
        for (int32_t i = 0; i < n; i++) {
            const char *s = json_string_value(json_array_get(lt, (size_t)i));
            if (s && !strcmp(s, attn_name)) is_attn[i] = 1;
            else if (s && !strcmp(s, other_name)) is_attn[i] = 0;
            else
                return dg_fail(DEG_ERR_UNSUPPORTED, "%s: layer_types[%d] = '%s' (expected '%s' "
                               "or '%s')", path, (int)i, s ? s : "?", attn_name, other_name);
        }
        return DEG_OK;
    }
    if (json_is_array(ix)) {
        memset(is_attn, 0, (size_t)n);
        for (size_t i = 0; i < json_array_size(ix); i++) {
            json_t *v = json_array_get(ix, i);
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= n)
                return dg_fail(DEG_ERR_FORMAT, "%s: %s[%zu] is not a layer index", path, idx_key,
                               i);
            is_attn[json_integer_value(v)] = 1;
        }
        return DEG_OK;
    }
    *found = 0;
    return DEG_OK;
}

/* ---------------------------------------------------------- the sources */

/* gguf: name is a GGUF general.architecture (dg_arch_find_gguf). */
static const dg_arch *find_arch(const char *name, size_t len, const char *where, int gguf,
                                deg_status *st)
{
    char buf[64];
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, name, len);
    buf[len] = '\0';
    const dg_arch *a = gguf ? dg_arch_find_gguf(buf) : dg_arch_find(buf);
    if (!a) {
        char list[256];
        dg_arch_list(list, sizeof list);
        *st = dg_fail(DEG_ERR_UNSUPPORTED, "%s: unknown architecture '%s' (supported: %s)",
                      where, buf, list);
    }
    return a;
}

static deg_status load_gguf(deg_model *m, const char *path)
{
    DG_TRY(dg_gguf_open(path, &m->src.gguf));
    const dg_gguf *g = m->src.gguf;
    dg_gguf_str s;
    deg_status st = dg_gguf_get_str(g, "general.architecture", &s);
    if (st == DEG_ERR_RANGE)
        return dg_fail(DEG_ERR_FORMAT, "%s: no general.architecture", path);
    if (st != DEG_OK) return st;
    m->arch = find_arch(s.ptr, (size_t)s.len, path, 1, &st);
    if (!m->arch) return st;
    char arch[64];
    snprintf(arch, sizeof arch, "%s", m->arch->gguf_arch ? m->arch->gguf_arch : m->arch->name);
    /* the metadata readers' messages name the key; the file is named here */
    st = gguf_hparams(m, arch);
    if (st == DEG_OK && m->arch->gguf_config) st = m->arch->gguf_config(m);
    if (st != DEG_OK) return dg_fail_context(st, "%s", path);
    if (dg_gguf_get_str(g, "general.name", &s) == DEG_OK) m->name = dup_n(s.ptr, (size_t)s.len);
    if (dg_gguf_get_str(g, "tokenizer.chat_template", &s) == DEG_OK) {
        m->chat_template = dup_n(s.ptr, (size_t)s.len);
        if (!m->chat_template) return dg_fail(DEG_ERR_NOMEM, "model: out of memory");
    }
    st = dg_tokenizer_from_gguf(g, &m->tok);
    if (st != DEG_OK) return dg_fail_context(st, "%s: tokenizer", path);
    return DEG_OK;
}

static deg_status load_hf(deg_model *m, const char *dir)
{
    char *cfg_path = dg_path_join(dir, "config.json");
    char *tok_path = dg_path_join(dir, "tokenizer.json");
    char *tcfg_path = dg_path_join(dir, "tokenizer_config.json");
    char *jinja_path = dg_path_join(dir, "chat_template.jinja");
    json_t *cfg = NULL, *tcfg = NULL;
    deg_status st = DEG_OK;
    if (!cfg_path || !tok_path || !tcfg_path || !jinja_path) {
        st = dg_fail(DEG_ERR_NOMEM, "model: out of memory");
        goto done;
    }
    json_error_t err;
    if (!file_exists(cfg_path)) {
        st = dg_fail(DEG_ERR_IO, "%s: not found (not a model directory)", cfg_path);
        goto done;
    }
    cfg = json_load_file(cfg_path, 0, &err);
    if (!json_is_object(cfg)) {
        st = dg_fail(DEG_ERR_FORMAT, "%s: line %d: %s", cfg_path, err.line,
                     cfg ? "not a JSON object" : err.text);
        goto done;
    }
    /* A multimodal checkpoint (transformers' *ForConditionalGeneration, e.g.
     * Qwen3.5's model_type "qwen3_5"): its language model is text_config,
     * with tensors under model.language_model.; the other towers are not read. */
    json_t *lm = cfg, *tc = json_object_get(cfg, "text_config");
    if (json_is_object(tc)) {
        lm = tc;
        m->hf_prefix = "model.language_model.";
    }
    json_t *mt = json_object_get(lm, "model_type");
    if (!json_is_string(mt)) {
        st = dg_fail(DEG_ERR_FORMAT, "%s: no \"%smodel_type\"", cfg_path,
                     lm == cfg ? "" : "text_config.");
        goto done;
    }
    m->arch = find_arch(json_string_value(mt), strlen(json_string_value(mt)), cfg_path, 0, &st);
    if (!m->arch) goto done;
    if ((st = hf_hparams(m, lm, cfg_path)) != DEG_OK) goto done;
    /* transformers ties by the outer config's flag (PreTrainedModel.tie_weights) */
    json_t *tie = json_object_get(cfg, "tie_word_embeddings");
    m->tied_lm_head = json_is_true(tie ? tie : json_object_get(lm, "tie_word_embeddings"));
    /* the architecture's own keys (may override the tie: lfm2's tie_embedding) */
    if (m->arch->hf_config && (st = m->arch->hf_config(m, lm, cfg_path)) != DEG_OK) goto done;
    json_t *nm = json_object_get(cfg, "_name_or_path");
    if (json_is_string(nm)) m->name = strdup(json_string_value(nm));

    int have_tcfg = file_exists(tcfg_path);
    if (have_tcfg) {
        tcfg = json_load_file(tcfg_path, 0, &err);
        if (!json_is_object(tcfg)) {
            st = dg_fail(DEG_ERR_FORMAT, "%s: line %d: %s", tcfg_path, err.line,
                         tcfg ? "not a JSON object" : err.text);
            goto done;
        }
        json_t *ct = json_object_get(tcfg, "chat_template");
        if (json_is_string(ct)) {
            m->chat_template = strdup(json_string_value(ct));
        } else if (json_is_array(ct)) { /* [{name, template}]: take "default" */
            size_t i;
            json_t *e;
            json_array_foreach(ct, i, e) {
                json_t *n = json_object_get(e, "name"), *t = json_object_get(e, "template");
                if (json_is_string(n) && json_is_string(t) &&
                    !strcmp(json_string_value(n), "default"))
                    m->chat_template = strdup(json_string_value(t));
            }
        }
    }
    /* a template file beside the model: one that exists but cannot be read is an error */
    if (!m->chat_template && file_exists(jinja_path) &&
        (st = dg_read_file(jinja_path, CHAT_TEMPLATE_MAX, &m->chat_template, NULL)) != DEG_OK)
        goto done;

    if ((st = dg_st_set_open(dir, &m->src.st)) != DEG_OK) goto done;
    if (!file_exists(tok_path)) {
        st = dg_fail(DEG_ERR_IO, "%s: not found", tok_path);
        goto done;
    }
    st = dg_tokenizer_from_json(tok_path, have_tcfg ? tcfg_path : NULL, &m->tok);
    if (st != DEG_OK) dg_fail_context(st, "%s", tok_path);
done:
    json_decref(cfg);
    json_decref(tcfg);
    free(cfg_path);
    free(tok_path);
    free(tcfg_path);
    free(jinja_path);
    return st;
}

/* Every attention layer's geometry (arch.h dg_layer): the model's where its
 * architecture left it 0; the pass buffers' widths (max_qd, max_kd, max_ff). */
static void layer_geometry(deg_model *m)
{
    const dg_hparams *hp = &m->hp;
    m->max_qd = (size_t)hp->n_head * (size_t)hp->head_dim;
    m->max_kd = (size_t)hp->n_head_kv * (size_t)hp->head_dim;
    m->max_ff = (size_t)hp->n_ff;
    for (int il = 0; il < hp->n_layer; il++) {
        dg_layer *L = &m->layers[il];
        if ((size_t)L->w_gate.rows > m->max_ff) m->max_ff = (size_t)L->w_gate.rows;
        if (!L->has_kv && !L->kv_shared) continue;
        if (!L->head_dim) L->head_dim = hp->head_dim;
        if (!L->n_head_kv) L->n_head_kv = hp->n_head_kv;
        if (!L->kv_shared) L->kv_src = il;
        L->kv_row = (size_t)L->n_head_kv * (size_t)L->head_dim;
        size_t qd = (size_t)hp->n_head * (size_t)L->head_dim;
        if (qd > m->max_qd) m->max_qd = qd;
        if (L->kv_row > m->max_kd) m->max_kd = L->kv_row;
    }
}

/* Weights shared by every architecture, then the layers. */
static deg_status load_weights(deg_model *m)
{
    dg_hparams *hp = &m->hp;
    const char *g_embd = "token_embd.weight", *h_embd = "model.embed_tokens.weight";
    /* n_vocab is the embedding's row count (the logits row length); config
     * vocab_size / tokenizer size must not exceed it. */
    char name[256];
    dg_tensor_name(name, sizeof name, m, g_embd, h_embd, 0);
    const dg_tensor_view *te = m->src.gguf ? dg_gguf_find(m->src.gguf, name)
                                           : dg_st_set_find(m->src.st, name);
    if (!te) return dg_fail(DEG_ERR_FORMAT, "missing tensor '%s'", name);
    if (te->n_dims != 2 || te->shape[0] <= 0 || te->shape[0] > INT32_MAX)
        return dg_fail(DEG_ERR_FORMAT, "tensor '%s': bad shape for an embedding", name);
    hp->n_vocab = (int32_t)te->shape[0];
    int64_t E[] = {hp->n_embd};
    DG_TRY(dg_weight_get_matrix(m, g_embd, h_embd, 0, hp->n_vocab, hp->n_embd, 0, &m->tok_embd));
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return dg_fail(DEG_ERR_NOMEM, "model: out of memory");
    for (int il = 0; il < hp->n_layer; il++) DG_TRY(m->arch->load_layer(m, il, &m->layers[il]));
    layer_geometry(m);
    DG_TRY(dg_weight_get(m, m->arch->gguf_out_norm ? m->arch->gguf_out_norm : "output_norm.weight",
                         m->arch->hf_out_norm ? m->arch->hf_out_norm : "model.norm.weight", 0, 1,
                         E, 0, &m->out_norm));
    if (!m->tied_lm_head && dg_weight_has(m, "output.weight", "lm_head.weight", 0)) {
        DG_TRY(dg_weight_get_matrix(m, "output.weight", "lm_head.weight", 0, hp->n_vocab,
                                    hp->n_embd, 0, &m->lm_head));
    } else {
        m->tied_lm_head = 1;
        m->lm_head = m->tok_embd;
    }
    if (m->arch->finish) DG_TRY(m->arch->finish(m));
    return DEG_OK;
}

deg_model_params deg_model_default_params(void)
{
    deg_model_params p = {.weights = DEG_WEIGHTS_DEFAULT};
    return p;
}

/* The weight mode as a DEG_WEIGHTS_F32 / _NATIVE / _NATIVE_F32ACT value;
 * -1 (error set) for a bad value. */
static int weight_mode(const deg_model_params *p)
{
    int32_t w = p ? p->weights : DEG_WEIGHTS_DEFAULT;
    if (w == DEG_WEIGHTS_DEFAULT) {
        const char *e = getenv("DEG_WEIGHTS");
        /* native: the fast mode is the default (issue 15; include/deg_runtime.h
         * gives the measurements behind the choice). */
        if (!e || !*e || !strcmp(e, "native")) return DEG_WEIGHTS_NATIVE;
        if (!strcmp(e, "f32")) return DEG_WEIGHTS_F32;
        if (!strcmp(e, "native-f32act")) return DEG_WEIGHTS_NATIVE_F32ACT;
        dg_fail(DEG_ERR_ARG,
                "DEG_WEIGHTS='%s': expected \"f32\", \"native\" or \"native-f32act\"", e);
        return -1;
    }
    if (w == DEG_WEIGHTS_F32 || w == DEG_WEIGHTS_NATIVE || w == DEG_WEIGHTS_NATIVE_F32ACT)
        return w;
    dg_fail(DEG_ERR_ARG, "deg_model_params.weights = %d: expected a DEG_WEIGHTS_* value",
            (int)w);
    return -1;
}

deg_status deg_model_load(const char *path, deg_model **out)
{
    return deg_model_load_with_params(path, NULL, out);
}

deg_status deg_model_load_with_params(const char *path, const deg_model_params *params,
                                      deg_model **out)
{
    if (!path || !out) return dg_fail(DEG_ERR_ARG, "deg_model_load: NULL argument");
    *out = NULL;
    int mode = weight_mode(params);
    if (mode < 0) return DEG_ERR_ARG;
    struct stat sb;
    if (stat(path, &sb) != 0) return dg_fail(DEG_ERR_IO, "%s: no such file or directory", path);
    deg_model *m = calloc(1, sizeof *m);
    if (!m) return dg_fail(DEG_ERR_NOMEM, "deg_model_load: out of memory");
    m->native_weights = mode != DEG_WEIGHTS_F32;
    m->f32_act = mode == DEG_WEIGHTS_NATIVE_F32ACT;
    deg_status st = S_ISDIR(sb.st_mode) ? load_hf(m, path) : load_gguf(m, path);
    if (st == DEG_OK) {
        st = load_weights(m);
        if (st != DEG_OK) dg_fail_context(st, "%s", path);
    }
    if (st == DEG_OK) {
        int32_t tv = dg_tokenizer_n_vocab(m->tok);
        if (tv > m->hp.n_vocab)
            st = dg_fail(DEG_ERR_FORMAT, "%s: tokenizer has %d tokens, the embedding only %d rows",
                         path, (int)tv, (int)m->hp.n_vocab);
    }
    if (st != DEG_OK) {
        deg_model_free(m);
        return st;
    }
    m->bos_id = dg_tokenizer_bos(m->tok);
    m->eos_id = dg_tokenizer_eos(m->tok);
    if (!m->name) m->name = strdup("");
    {
        char abs[4096];
        m->path = strdup(realpath(path, abs) ? abs : path);
    }
    if (!m->name || !m->path) {
        deg_model_free(m);
        return dg_fail(DEG_ERR_NOMEM, "deg_model_load: out of memory");
    }
    /* the family's, else recognised from the chat template (chat.h) */
    m->chat_layout = m->arch->chat_layout ? m->arch->chat_layout
                                          : dg_chat_layout_name(dg_chat_layout_detect(m->chat_template));
    *out = m;
    return DEG_OK;
}

void deg_model_free(deg_model *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    free(m->layers);
    if (m->tok) dg_tokenizer_free(m->tok);
    if (m->src.gguf) dg_gguf_close(m->src.gguf);
    if (m->src.st) dg_st_set_close(m->src.st);
    free(m->name);
    free(m->path);
    free(m->chat_template);
    free(m);
}

deg_status deg_model_get_info(const deg_model *m, deg_model_info *info)
{
    if (!m || !info) return dg_fail(DEG_ERR_ARG, "deg_model_get_info: NULL argument");
    memset(info, 0, sizeof *info);
    info->arch = m->arch->name;
    info->name = m->name ? m->name : "";
    info->n_vocab = m->hp.n_vocab;
    info->n_embd = m->hp.n_embd;
    info->n_layer = m->hp.n_layer;
    info->n_head = m->hp.n_head;
    info->n_head_kv = m->hp.n_head_kv;
    info->head_dim = m->hp.head_dim;
    info->n_ff = m->hp.n_ff;
    info->n_ctx_train = m->hp.n_ctx_train;
    info->rope_theta = m->hp.rope_theta;
    info->rms_eps = m->hp.rms_eps;
    info->tied_lm_head = m->tied_lm_head;
    info->bos_id = m->bos_id;
    info->eos_id = m->eos_id;
    info->chat_layout = m->chat_layout;
    info->weight_bytes = m->weight_bytes;
    return DEG_OK;
}

const dg_tokenizer *dg_model_tokenizer(const deg_model *model) { return model->tok; }

const char *dg_model_chat_template(const deg_model *model) { return model->chat_template; }
const char *dg_model_path(const deg_model *model) { return model->path; }
