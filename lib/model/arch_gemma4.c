/* `gemma4_text` (Gemma 4 language model; transformers modeling_gemma4.py,
 * Gemma4TextModel / Gemma4ForCausalLM, or the text model of a
 * Gemma4ForConditionalGeneration under model.language_model.): configuration
 * and weights. Its layer (arch_gemma4_layer.c):
 *   h = x + post_attention_norm(attn(input_norm(x)))
 *   h = h + post_feedforward_norm(mlp(pre_feedforward_norm(h)))   (GeGLU, tanh GELU)
 *   h = h + post_per_layer_input_norm(W_proj(gelu(W_gate h) * ple[il]))  (if PLE)
 *   x = h * layer_scalar
 * Attention: per-head q/k RMSNorm, v RMSNorm without scale, score scale 1,
 * sliding-window layers (sliding_window keys, default RoPE) and full layers
 * (their own head_dim and KV heads, proportional RoPE); with
 * attention_k_eq_v a full layer's V is its raw K projection; the last
 * num_kv_shared_layers layers reuse the K/V of the last earlier layer of
 * their type. Embeddings x sqrt(hidden_size); per-layer inputs (PLE) from
 * embed_tokens_per_layer and per_layer_model_projection; logits soft-capped
 * (final_logit_softcapping). Norms are w * x / rms(x) (Gemma4RMSNorm: weight
 * initialised to 1, not 1 + w as in Gemma 1-3).
 * With enable_moe_block every layer adds a routed mixture of experts beside
 * its MLP (Gemma4TextRouter: softmax over the experts of proj(norm(h) *
 * scale / sqrt(E)), top-k renormalised, times per_expert_scale; experts
 * GeGLU on pre_feedforward_layernorm_2(h); the two outputs post-normed
 * (_1, _2) and summed before post_feedforward_layernorm).
 * GGUF: llama.cpp's gemma4 layout (g4_gguf_config).
 * Not supported (refused at load): bidirectional attention, RoPE types other than default / proportional,
 * activations other than gelu_pytorch_tanh. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "model/arch.h"
#include "model/arch_gemma4.h"
#include "model/layer_bwd.h"
#include "model/ops.h"

static deg_status cfg_int(json_t *cfg, const char *key, int32_t dflt, int32_t lo, int32_t *out,
                          const char *path)
{
    json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return DEG_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > (1 << 24))
        return dg_fail(DEG_ERR_FORMAT, "%s: invalid \"%s\"", path, key);
    *out = (int32_t)json_integer_value(v);
    return DEG_OK;
}

static deg_status cfg_refusals(json_t *cfg, const char *path)
{
    json_t *bi = json_object_get(cfg, "use_bidirectional_attention");
    if (json_is_string(bi) && !strcmp(json_string_value(bi), "all"))
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: use_bidirectional_attention = \"all\" is not "
                       "supported (a causal LM only)", path);
    json_t *act = json_object_get(cfg, "hidden_activation");
    if (act && (!json_is_string(act) || strcmp(json_string_value(act), "gelu_pytorch_tanh")))
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: hidden_activation '%s' is not supported "
                       "(gelu_pytorch_tanh only)", path,
                       json_is_string(act) ? json_string_value(act) : "?");
    return DEG_OK;
}

/* Every layer's head_dim and KV heads usable (where: the source, for messages). */
static deg_status g4_check_geometry(const deg_model *m, const g4_hp *a, const char *where)
{
    for (int32_t i = 0; i < m->hp.n_layer; i++) {
        if (a->hd[i] < 2 || a->hd[i] % 2 || a->hd[i] > DG_ATTN_MAX_HEAD_DIM)
            return dg_fail(DEG_ERR_UNSUPPORTED, "%s: layer %d head_dim %d (must be even and "
                           "<= %d)", where, (int)i, (int)a->hd[i], DG_ATTN_MAX_HEAD_DIM);
        if (a->nkv[i] < 1 || m->hp.n_head % a->nkv[i])
            return dg_fail(DEG_ERR_FORMAT, "%s: layer %d: %d query heads are not a multiple "
                           "of its %d KV heads", where, (int)i, (int)m->hp.n_head,
                           (int)a->nkv[i]);
    }
    return DEG_OK;
}

/* Per-layer head_dim / KV heads: "per_layer_config" {"<layer>": {head_dim,
 * num_key_value_heads}} as transformers 5 saves it, else the constructor
 * keys it derives it from (Gemma4TextConfig.__post_init__): full layers get
 * global_head_dim (default 512) and, with attention_k_eq_v,
 * num_global_key_value_heads. */
static deg_status cfg_geometry(deg_model *m, g4_hp *a, json_t *cfg, const char *path)
{
    const dg_hparams *hp = &m->hp;
    int32_t n = hp->n_layer;
    for (int32_t i = 0; i < n; i++) a->hd[i] = hp->head_dim, a->nkv[i] = hp->n_head_kv;
    json_t *plc = json_object_get(cfg, "per_layer_config");
    if (json_is_object(plc)) {
        const char *key;
        json_t *e;
        json_object_foreach(plc, key, e) {
            char *end;
            long il = strtol(key, &end, 10);
            if (*end || end == key || il < 0 || il >= n || !json_is_object(e))
                return dg_fail(DEG_ERR_FORMAT, "%s: per_layer_config key '%s' is not a layer "
                               "index below %d", path, key, (int)n);
            DG_TRY(cfg_int(e, "head_dim", a->hd[il], 2, &a->hd[il], path));
            DG_TRY(cfg_int(e, "num_key_value_heads", a->nkv[il], 1, &a->nkv[il], path));
        }
    } else {
        int32_t ghd = 0, gkv = 0;
        DG_TRY(cfg_int(cfg, "global_head_dim", 512, 2, &ghd, path));
        DG_TRY(cfg_int(cfg, "num_global_key_value_heads", 0, 1, &gkv, path));
        for (int32_t i = 0; i < n; i++) {
            if (!a->is_full[i]) continue;
            a->hd[i] = ghd;
            if (a->k_eq_v && gkv) a->nkv[i] = gkv;
        }
    }
    return g4_check_geometry(m, a, path);
}

/* rope_parameters {"sliding_attention": {...}, "full_attention": {...}}
 * (defaults: Gemma4TextConfig's). */
static deg_status cfg_rope(deg_model *m, g4_hp *a, json_t *cfg, const char *path)
{
    static const char *const names[2] = {"sliding_attention", "full_attention"};
    json_t *rp = json_object_get(cfg, "rope_parameters");
    for (int t = 0; t < 2; t++) {
        g4_rope *r = &a->rope[t];
        r->head_dim = 0;
        for (int32_t i = 0; i < m->hp.n_layer; i++) {
            if (a->is_full[i] != t) continue;
            if (r->head_dim && r->head_dim != a->hd[i])
                return dg_fail(DEG_ERR_UNSUPPORTED, "%s: %s layers with different head_dim "
                               "(%d, %d)", path, names[t], (int)r->head_dim, (int)a->hd[i]);
            r->head_dim = a->hd[i];
        }
        json_t *p = json_is_object(rp) ? json_object_get(rp, names[t]) : NULL;
        const char *type = t ? "proportional" : "default";
        double theta = t ? 1000000.0 : 10000.0, prf = t ? 0.25 : 1.0, factor = 1.0;
        if (json_is_object(p)) {
            json_t *ty = json_object_get(p, "rope_type"), *th = json_object_get(p, "rope_theta");
            json_t *pf = json_object_get(p, "partial_rotary_factor");
            json_t *fa = json_object_get(p, "factor");
            type = json_is_string(ty) ? json_string_value(ty) : "default";
            theta = json_is_number(th) ? json_number_value(th) : 10000.0;
            prf = json_is_number(pf) ? json_number_value(pf) : 1.0;
            factor = json_is_number(fa) ? json_number_value(fa) : 1.0;
        }
        if (strcmp(type, "default") && strcmp(type, "proportional"))
            return dg_fail(DEG_ERR_UNSUPPORTED, "%s: RoPE type '%s' of %s layers is not "
                           "supported (default, proportional)", path, type, names[t]);
        if (!(theta > 0) || !(prf > 0 && prf <= 1) || !(factor > 0))
            return dg_fail(DEG_ERR_FORMAT, "%s: invalid rope_parameters of %s layers", path,
                           names[t]);
        r->theta = (float)theta;
        /* the default type ignores partial_rotary_factor and factor
         * (Gemma4TextRotaryEmbedding.compute_default_rope_parameters) */
        int prop = !strcmp(type, "proportional");
        r->factor = prop ? (float)factor : 1.0f;
        r->n_rot = prop ? (int32_t)(prf * r->head_dim / 2) : r->head_dim / 2;
        if (r->n_rot > r->head_dim / 2) r->n_rot = r->head_dim / 2;
    }
    return DEG_OK;
}

/* Gemma4TextConfig.kv_sharing_modes: layers from n - ns on reuse the K/V of
 * the last earlier layer of their type (kv_src; -1: own K/V). where names
 * the source for messages. */
static deg_status g4_kv_sharing(deg_model *m, g4_hp *a, int32_t ns, const char *where)
{
    int32_t n = m->hp.n_layer;
    if (ns >= n)
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: num_kv_shared_layers %d leaves no layer that "
                       "computes K/V (%d layers)", where, (int)ns, (int)n);
    for (int32_t i = 0; i < n; i++) {
        a->kv_src[i] = -1;
        if (i < n - ns) continue;
        for (int32_t j = n - ns - 1; j >= 0 && a->kv_src[i] < 0; j--)
            if (a->is_full[j] == a->is_full[i]) a->kv_src[i] = j;
        if (a->kv_src[i] < 0)
            return dg_fail(DEG_ERR_FORMAT, "%s: layer %d shares K/V but no earlier layer of "
                           "its type computes them", where, (int)i);
        if (a->hd[i] != a->hd[a->kv_src[i]] || a->nkv[i] != a->nkv[a->kv_src[i]])
            return dg_fail(DEG_ERR_FORMAT, "%s: layer %d shares the K/V of layer %d of another "
                           "geometry", where, (int)i, (int)a->kv_src[i]);
    }
    return DEG_OK;
}

/* KV sharing and the MLP widths from config.json (use_double_wide_mlp: the
 * sharing layers' MLPs are twice intermediate_size). */
static deg_status cfg_kv_sharing(deg_model *m, g4_hp *a, json_t *cfg, const char *path)
{
    int32_t n = m->hp.n_layer, ns = 0;
    DG_TRY(cfg_int(cfg, "num_kv_shared_layers", 0, 0, &ns, path));
    DG_TRY(g4_kv_sharing(m, a, ns, path));
    int wide = json_is_true(json_object_get(cfg, "use_double_wide_mlp"));
    a->max_ff = m->hp.n_ff;
    for (int32_t i = 0; i < n; i++) {
        a->n_ff[i] = wide && a->kv_src[i] >= 0 ? 2 * m->hp.n_ff : m->hp.n_ff;
        if (a->n_ff[i] > a->max_ff) a->max_ff = a->n_ff[i];
    }
    return DEG_OK;
}

/* m->arch_hp = a new g4_hp with its per-layer arrays allocated. */
static deg_status g4_new_hp(deg_model *m, g4_hp **out)
{
    int32_t n = m->hp.n_layer;
    g4_hp *a;
    DG_TRY(dg_model_alloc(m, sizeof *a, (void **)&a));
    m->arch_hp = a;
    DG_TRY(dg_model_alloc(m, (size_t)n, (void **)&a->is_full));
    int32_t **arrs[] = {&a->kv_src, &a->n_ff, &a->hd, &a->nkv};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++)
        DG_TRY(dg_model_alloc(m, sizeof(int32_t) * (size_t)n, (void **)arrs[i]));
    *out = a;
    return DEG_OK;
}

/* The MoE sizes' checks (where: the source for messages). */
static deg_status g4_check_moe(const g4_hp *a, const char *where)
{
    if (!a->n_exp || !a->top_k || !a->moe_ff || a->top_k > a->n_exp || a->n_exp > 4096)
        return dg_fail(DEG_ERR_FORMAT, "%s: enable_moe_block needs num_experts (<= 4096), "
                       "top_k_experts <= num_experts and moe_intermediate_size", where);
    return DEG_OK;
}

static deg_status g4_hf_config(deg_model *m, json_t *cfg, const char *path)
{
    dg_hparams *hp = &m->hp;
    int32_t n = hp->n_layer;
    g4_hp *a;
    DG_TRY(cfg_refusals(cfg, path));
    DG_TRY(g4_new_hp(m, &a));
    int found;
    DG_TRY(dg_hf_layer_types(m, cfg, path, "full_attention", "sliding_attention", NULL,
                             a->is_full, &found));
    if (!found) /* Gemma4TextConfig: 5 sliding layers, then a full one */
        for (int32_t i = 0; i < n; i++) a->is_full[i] = (i + 1) % 6 == 0;
    a->is_full[n - 1] = 1; /* Gemma4TextConfig forces the last layer to full attention */
    DG_TRY(cfg_int(cfg, "sliding_window", 512, 1, &a->window, path));
    a->k_eq_v = json_is_true(json_object_get(cfg, "attention_k_eq_v"));
    DG_TRY(cfg_geometry(m, a, cfg, path));
    DG_TRY(cfg_rope(m, a, cfg, path));
    hp->rope_theta = a->rope[0].theta; /* deg_model_info's: the sliding layers' (as head_dim) */
    DG_TRY(cfg_kv_sharing(m, a, cfg, path));
    DG_TRY(cfg_int(cfg, "hidden_size_per_layer_input", 256, 0, &a->ple_dim, path));
    DG_TRY(cfg_int(cfg, "vocab_size_per_layer_input", 262144, 1, &a->ple_vocab, path));
    json_t *sc = json_object_get(cfg, "final_logit_softcapping");
    if (sc && !json_is_null(sc) && (!json_is_number(sc) || !(json_number_value(sc) > 0)))
        return dg_fail(DEG_ERR_FORMAT, "%s: invalid \"final_logit_softcapping\"", path);
    m->final_softcap = json_is_number(sc) ? (float)json_number_value(sc) : 0.0f;
    if (json_is_true(json_object_get(cfg, "enable_moe_block"))) {
        DG_TRY(cfg_int(cfg, "num_experts", 0, 1, &a->n_exp, path));
        DG_TRY(cfg_int(cfg, "top_k_experts", 0, 1, &a->top_k, path));
        DG_TRY(cfg_int(cfg, "moe_intermediate_size", 0, 1, &a->moe_ff, path));
        DG_TRY(g4_check_moe(a, path));
    }
    /* transformers: torch.tensor(hidden_size ** 0.5), an f32 scalar */
    a->embed_scale = (float)sqrt((double)hp->n_embd);
    m->scratch_per_token = dg_g4_scratch(m);
    return DEG_OK;
}

/* GGUF "gemma4.<key>" as an integer >= lo; absent: dflt, or (dflt < 0) an
 * error naming the key. */
static deg_status gguf_i32(const deg_model *m, const char *key, int32_t dflt, int32_t lo,
                           int32_t *out)
{
    char full[160];
    int64_t v;
    dg_gguf_arch_key(m, key, full, sizeof full);
    deg_status st = dg_gguf_get_i64(m->src.gguf, full, &v);
    if (st == DEG_ERR_RANGE && dflt >= 0) v = dflt;
    else if (st == DEG_ERR_RANGE)
        return dg_fail(DEG_ERR_FORMAT, "GGUF: missing metadata key '%s'", full);
    else if (st != DEG_OK) return dg_fail_context(st, "GGUF key '%s'", full);
    if (v < lo || v > (1 << 24))
        return dg_fail(DEG_ERR_FORMAT, "GGUF: '%s' = %lld is out of range", full, (long long)v);
    *out = (int32_t)v;
    return DEG_OK;
}

/* GGUF "gemma4.<key>" as a float > 0 (absent: dflt). */
static deg_status gguf_pos_f32(const deg_model *m, const char *key, float dflt, float *out)
{
    char full[160];
    dg_gguf_arch_key(m, key, full, sizeof full);
    deg_status st = dg_gguf_get_f32(m->src.gguf, full, out);
    if (st == DEG_ERR_RANGE) *out = dflt;
    else if (st != DEG_OK) return dg_fail_context(st, "GGUF key '%s'", full);
    if (!(*out > 0.0f) && !(st == DEG_ERR_RANGE && dflt == 0.0f))
        return dg_fail(DEG_ERR_FORMAT, "GGUF: '%s' = %g must be positive", full, (double)*out);
    return DEG_OK;
}

/* RoPE from llama.cpp's gemma4 keys: sliding layers rope.freq_base_swa over
 * rope.dimension_count_swa = their whole head (the default type); full
 * layers rope.freq_base over their whole head (rope.dimension_count =
 * key_length, checked by load.c), with the proportional type written as the
 * rope_freqs tensor [head_dim / 2] of frequency divisors: the first n_rot
 * entries the type's factor, the rest 1e30 (pairs that do not rotate). */
static deg_status g4_gguf_rope(deg_model *m, g4_hp *a, int32_t hd_swa)
{
    int32_t rd_swa;
    DG_TRY(gguf_i32(m, "rope.dimension_count_swa", hd_swa, 2, &rd_swa));
    if (rd_swa != hd_swa)
        return dg_fail(DEG_ERR_UNSUPPORTED, "GGUF: gemma4.rope.dimension_count_swa %d of "
                       "head_dim %d (partial RoPE on sliding layers is not supported)",
                       (int)rd_swa, (int)hd_swa);
    g4_rope *r = &a->rope[0];
    r->head_dim = hd_swa;
    r->n_rot = hd_swa / 2;
    r->factor = 1.0f;
    DG_TRY(gguf_pos_f32(m, "rope.freq_base_swa", 10000.0f, &r->theta));
    r = &a->rope[1];
    r->head_dim = m->hp.head_dim;
    r->n_rot = r->head_dim / 2;
    r->factor = 1.0f;
    r->theta = m->hp.rope_theta;
    if (!dg_weight_has(m, "rope_freqs.weight", NULL, 0)) return DEG_OK;
    const float *ff;
    int64_t half = r->head_dim / 2;
    DG_TRY(dg_weight_get(m, "rope_freqs.weight", NULL, 0, 1, &half, 0, &ff));
    int32_t k = 0;
    while (k < half && ff[k] < 1e29f) k++;
    for (int64_t j = 0; j < half; j++)
        if (!(ff[j] > 0.0f) || (j < k && ff[j] != ff[0]) || (j >= k && ff[j] < 1e29f))
            return dg_fail(DEG_ERR_UNSUPPORTED, "GGUF: rope_freqs.weight[%lld] = %g: expected "
                           "one factor on the leading pairs, then >= 1e30 (not rotating)",
                           (long long)j, (double)ff[j]);
    r->n_rot = k;
    r->factor = k ? ff[0] : 1.0f;
    return DEG_OK;
}

/* Layer kinds and per-layer geometry from llama.cpp's gemma4 keys:
 * attention.sliding_window_pattern (1 = sliding), key_length (full layers)
 * and key_length_swa, per-layer head_count_kv. The model's head_dim /
 * n_head_kv become the sliding layers' (as config.json's). */
static deg_status g4_gguf_layers(deg_model *m, g4_hp *a)
{
    dg_hparams *hp = &m->hp;
    int32_t n = hp->n_layer, hd_swa, vd_swa, *v = a->n_ff; /* n_ff: scratch until read */
    int found;
    DG_TRY(dg_gguf_layer_ints(m, "attention.sliding_window_pattern", n, v, &found));
    if (!found)
        return dg_fail(DEG_ERR_FORMAT, "GGUF: missing metadata key "
                       "'gemma4.attention.sliding_window_pattern'");
    for (int32_t i = 0; i < n; i++) a->is_full[i] = !v[i];
    DG_TRY(gguf_i32(m, "attention.sliding_window", -1, 1, &a->window));
    DG_TRY(gguf_i32(m, "attention.key_length_swa", -1, 2, &hd_swa));
    DG_TRY(gguf_i32(m, "attention.value_length_swa", hd_swa, 1, &vd_swa));
    if (vd_swa != hd_swa)
        return dg_fail(DEG_ERR_UNSUPPORTED, "GGUF: gemma4.attention.value_length_swa %d != "
                       "key_length_swa %d", (int)vd_swa, (int)hd_swa);
    DG_TRY(dg_gguf_layer_ints(m, "attention.head_count_kv", n, a->nkv, &found));
    int32_t first_swa = -1;
    for (int32_t i = 0; i < n; i++) {
        if (!found) a->nkv[i] = hp->n_head;
        a->hd[i] = a->is_full[i] ? hp->head_dim : hd_swa;
        if (!a->is_full[i] && first_swa < 0) first_swa = i;
    }
    DG_TRY(g4_check_geometry(m, a, "GGUF"));
    DG_TRY(g4_gguf_rope(m, a, hd_swa));
    if (first_swa >= 0) hp->head_dim = hd_swa, hp->n_head_kv = a->nkv[first_swa];
    hp->rope_theta = a->rope[0].theta; /* as g4_hf_config */
    return DEG_OK;
}

/* GGUF as llama.cpp's convert_hf_to_gguf.py (Gemma4Model) writes it: the
 * layer geometry (g4_gguf_layers), attention.shared_kv_layers,
 * feed_forward_length per layer (double-wide MLPs written out),
 * embedding_length_per_layer_input, final_logit_softcapping, expert_count /
 * expert_used_count / expert_feed_forward_length. Tensors: llama.cpp's names
 * (g4_load_layer); the router's scale and the per-expert scale as
 * ffn_gate_inp.scale and ffn_down_exps.scale. Not in the file, taken as
 * Gemma 4's: gelu_pytorch_tanh, causal attention, the sqrt(hidden_size)
 * embedding scale. */
static deg_status g4_gguf_config(deg_model *m)
{
    dg_hparams *hp = &m->hp;
    int32_t n = hp->n_layer, ns;
    g4_hp *a;
    DG_TRY(g4_new_hp(m, &a));
    DG_TRY(g4_gguf_layers(m, a));
    DG_TRY(gguf_i32(m, "attention.shared_kv_layers", 0, 0, &ns));
    DG_TRY(g4_kv_sharing(m, a, ns, "GGUF"));
    int found;
    DG_TRY(dg_gguf_layer_ints(m, "feed_forward_length", n, a->n_ff, &found));
    a->max_ff = 0;
    for (int32_t i = 0; i < n; i++) {
        if (a->n_ff[i] < 1)
            return dg_fail(DEG_ERR_FORMAT, "GGUF: gemma4.feed_forward_length[%d] = %d", (int)i,
                           (int)a->n_ff[i]);
        if (a->n_ff[i] > a->max_ff) a->max_ff = a->n_ff[i];
    }
    DG_TRY(gguf_i32(m, "embedding_length_per_layer_input", 0, 0, &a->ple_dim));
    if (a->ple_dim) {
        const dg_tensor_view *t = dg_gguf_find(m->src.gguf, "per_layer_token_embd.weight");
        if (!t || t->n_dims != 2 || t->shape[0] < 1 || t->shape[0] > INT32_MAX)
            return dg_fail(DEG_ERR_FORMAT, "GGUF: gemma4.embedding_length_per_layer_input %d "
                           "but no [vocab, n_layer * %d] per_layer_token_embd.weight",
                           (int)a->ple_dim, (int)a->ple_dim);
        a->ple_vocab = (int32_t)t->shape[0];
    }
    DG_TRY(gguf_pos_f32(m, "final_logit_softcapping", 0.0f, &m->final_softcap));
    DG_TRY(gguf_i32(m, "expert_count", 0, 0, &a->n_exp));
    if (a->n_exp) {
        DG_TRY(gguf_i32(m, "expert_used_count", -1, 1, &a->top_k));
        DG_TRY(gguf_i32(m, "expert_feed_forward_length", -1, 1, &a->moe_ff));
        DG_TRY(g4_check_moe(a, "GGUF"));
    }
    a->embed_scale = (float)sqrt((double)hp->n_embd);
    m->scratch_per_token = dg_g4_scratch(m);
    return DEG_OK;
}

#define G4 "model.layers.%d."
#define BLK "blk.%d."

/* An owned [n] vector of ones (the scale-free v_norm). */
static deg_status ones(deg_model *m, int64_t n, const float **out)
{
    float *p;
    DG_TRY(dg_model_alloc(m, sizeof(float) * (size_t)n, (void **)&p));
    for (int64_t i = 0; i < n; i++) p[i] = 1.0f;
    *out = p;
    return DEG_OK;
}

static deg_status g4_load_attn(deg_model *m, int il, const g4_hp *a, dg_layer *L, g4_layer *g)
{
    int64_t E = m->hp.n_embd, D = a->hd[il], QD = (int64_t)m->hp.n_head * D,
            KD = (int64_t)a->nkv[il] * D;
    DG_TRY(dg_weight_get_matrix(m, BLK "attn_q.weight", G4 "self_attn.q_proj.weight", il, QD, E, 0, &L->wq));
    DG_TRY(dg_weight_get_matrix(m, BLK "attn_output.weight", G4 "self_attn.o_proj.weight", il, E, QD, 0, &L->wo));
    DG_TRY(dg_weight_get(m, BLK "attn_q_norm.weight", G4 "self_attn.q_norm.weight", il, 1, &D, 0, &L->q_norm));
    L->head_dim = (int32_t)D;
    L->n_head_kv = a->nkv[il];
    L->window = a->is_full[il] ? 0 : a->window;
    L->attn_scale = 1.0f; /* Gemma4TextAttention.scaling */
    if (a->kv_src[il] >= 0) { /* reads an earlier layer's K/V */
        L->kv_shared = 1;
        L->kv_src = a->kv_src[il];
        return DEG_OK;
    }
    DG_TRY(dg_weight_get_matrix(m, BLK "attn_k.weight", G4 "self_attn.k_proj.weight", il, KD, E, 0, &L->wk));
    /* GGUF: llama.cpp's converter writes no attn_v where V = K */
    g->v_is_k = a->is_full[il] && (m->src.gguf ? !dg_weight_has(m, BLK "attn_v.weight", NULL, il)
                                               : a->k_eq_v);
    if (!g->v_is_k)
        DG_TRY(dg_weight_get_matrix(m, BLK "attn_v.weight", G4 "self_attn.v_proj.weight", il, KD, E, 0, &L->wv));
    DG_TRY(dg_weight_get(m, BLK "attn_k_norm.weight", G4 "self_attn.k_norm.weight", il, 1, &D, 0, &L->k_norm));
    DG_TRY(ones(m, D, &g->v_norm_ones));
    L->has_kv = 1;
    return DEG_OK;
}

/* Layer il's [n_embd] norm weight (GGUF name gguf, HF name hf). */
static deg_status g4_norm(deg_model *m, const char *gguf, const char *hf, int il,
                          const float **out)
{
    int64_t E = m->hp.n_embd;
    return dg_weight_get(m, gguf, hf, il, 1, &E, 0, out);
}

static deg_status g4_load_moe(deg_model *m, int il, const g4_hp *a, g4_layer *g)
{
    int64_t E = m->hp.n_embd, X = a->n_exp, I = a->moe_ff;
    int64_t gu[3] = {X, 2 * I, E}, dn[3] = {X, E, I};
    DG_TRY(dg_weight_get_matrix(m, BLK "ffn_gate_inp.weight", G4 "router.proj.weight", il, X, E, 0, &g->router));
    DG_TRY(g4_norm(m, BLK "ffn_gate_inp.scale", G4 "router.scale", il, &g->router_scale));
    DG_TRY(dg_weight_get(m, BLK "ffn_down_exps.scale", G4 "router.per_expert_scale", il, 1, &X, 0, &g->expert_scale));
    DG_TRY(dg_weight_get(m, BLK "ffn_gate_up_exps.weight", G4 "experts.gate_up_proj", il, 3, gu, 0, &g->gate_up));
    DG_TRY(dg_weight_get(m, BLK "ffn_down_exps.weight", G4 "experts.down_proj", il, 3, dn, 0, &g->down));
    DG_TRY(g4_norm(m, BLK "pre_ffw_norm_2.weight", G4 "pre_feedforward_layernorm_2.weight", il, &g->pre_ffn_norm_2));
    DG_TRY(g4_norm(m, BLK "post_ffw_norm_1.weight", G4 "post_feedforward_layernorm_1.weight", il, &g->post_ffn_norm_1));
    DG_TRY(g4_norm(m, BLK "post_ffw_norm_2.weight", G4 "post_feedforward_layernorm_2.weight", il, &g->post_ffn_norm_2));
    return ones(m, E, &g->ones);
}

static deg_status g4_load_layer(deg_model *m, int il, dg_layer *L)
{
    const g4_hp *a = m->arch_hp;
    int64_t E = m->hp.n_embd, F = a->n_ff[il], P = a->ple_dim, one = 1;
    memset(L, 0, sizeof *L);
    g4_layer *g;
    DG_TRY(dg_model_alloc(m, sizeof *g, (void **)&g));
    L->arch_data = g;
    DG_TRY(g4_norm(m, BLK "attn_norm.weight", G4 "input_layernorm.weight", il, &L->attn_norm));
    DG_TRY(g4_load_attn(m, il, a, L, g));
    DG_TRY(g4_norm(m, BLK "post_attention_norm.weight", G4 "post_attention_layernorm.weight", il, &g->post_attn_norm));
    DG_TRY(g4_norm(m, BLK "ffn_norm.weight", G4 "pre_feedforward_layernorm.weight", il, &L->ffn_norm));
    DG_TRY(g4_norm(m, BLK "post_ffw_norm.weight", G4 "post_feedforward_layernorm.weight", il, &g->post_ffn_norm));
    DG_TRY(dg_weight_get_matrix(m, BLK "ffn_gate.weight", G4 "mlp.gate_proj.weight", il, F, E, 0, &L->w_gate));
    DG_TRY(dg_weight_get_matrix(m, BLK "ffn_up.weight", G4 "mlp.up_proj.weight", il, F, E, 0, &L->w_up));
    DG_TRY(dg_weight_get_matrix(m, BLK "ffn_down.weight", G4 "mlp.down_proj.weight", il, E, F, 0, &L->w_down));
    g->layer_scalar = 1.0f;
    if (dg_weight_has(m, BLK "layer_output_scale.weight", G4 "layer_scalar", il)) {
        const float *s;
        DG_TRY(dg_weight_get(m, BLK "layer_output_scale.weight", G4 "layer_scalar", il, 1, &one, 0, &s));
        g->layer_scalar = s[0];
    }
    if (a->n_exp) DG_TRY(g4_load_moe(m, il, a, g));
    if (P) {
        DG_TRY(dg_weight_get_matrix(m, BLK "inp_gate.weight", G4 "per_layer_input_gate.weight", il, P, E, 0,
                                    &g->ple_gate));
        DG_TRY(dg_weight_get_matrix(m, BLK "proj.weight", G4 "per_layer_projection.weight", il, E, P, 0,
                                    &g->ple_proj));
        DG_TRY(g4_norm(m, BLK "post_norm.weight", G4 "post_per_layer_input_norm.weight", il, &g->ple_post_norm));
    }
    return DEG_OK;
}

/* The model-level per-layer-input weights (after the layers). */
static deg_status g4_finish(deg_model *m)
{
    g4_hp *a = m->arch_hp;
    if (!a->ple_dim) return DEG_OK;
    int64_t E = m->hp.n_embd, P = a->ple_dim, LP = (int64_t)m->hp.n_layer * P;
    if (a->ple_vocab < m->hp.n_vocab)
        return dg_fail(DEG_ERR_FORMAT, "vocab_size_per_layer_input %d is below the vocabulary "
                       "(%d): a token would have no per-layer input", (int)a->ple_vocab,
                       (int)m->hp.n_vocab);
    DG_TRY(dg_weight_get_matrix(m, "per_layer_token_embd.weight", "model.embed_tokens_per_layer.weight", 0, a->ple_vocab,
                                LP, 0, &a->ple_embd));
    DG_TRY(dg_weight_get_matrix(m, "per_layer_model_proj.weight", "model.per_layer_model_projection.weight", 0, LP, E, 0,
                                &a->ple_model_proj));
    DG_TRY(dg_weight_get(m, "per_layer_proj_norm.weight", "model.per_layer_projection_norm.weight", 0, 1, &P, 0,
                         &a->ple_proj_norm));
    return DEG_OK;
}

const dg_arch dg_arch_gemma4 = {
    .name = "gemma4_text",
    .hf_config = g4_hf_config,
    .gguf_arch = "gemma4",
    .gguf_config = g4_gguf_config,
    .gguf_flags = DG_GGUF_LAYER_ARRAYS,
    .finish = g4_finish,
    .begin_pass = dg_g4_begin_pass,
    .load_layer = g4_load_layer,
    .forward_layer = dg_g4_forward_layer,
    .backward_layer = dg_backward_gemma4_layer,
    .train_saves = DG_SAVE_GEMMA4,
    .lora = 1,
};
