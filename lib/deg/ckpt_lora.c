/* LoRA adapters of a fill checkpoint (include/lora.h "checkpoints", §12.7):
 * deg.json["lora"] + adapters.safetensors, and the per-kind selector. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/prevsave.h"
#include "base/status.h"
#include "deg/fill.h"
#include "format/safetensors.h"
#include "model/arch.h"
#include "model/lora_internal.h"

static const char *const TARGET_NAMES[DG_LORA_N_TARGETS] = {
    "q", "k", "v", "o", "gate", "up", "down", "rec_in", "rec_z", "rec_out"};
static const char *const KIND_NAMES[] = {"decide", "extract"};
static const char *const SHARED_NAMES[] = {"shared"};

static const char *const *adapter_names(int32_t selector, int *n)
{
    *n = selector == DEG_LORA_SELECT_KIND ? 2 : 1;
    return selector == DEG_LORA_SELECT_KIND ? KIND_NAMES : SHARED_NAMES;
}

deg_status deg_ckpt_add_lora(deg_ckpt *k, const deg_lora_params *params, int32_t selector)
{
    if (!k || !params) return dg_fail(DEG_ERR_ARG, "deg_ckpt_add_lora: NULL argument");
    if (selector != DEG_LORA_SELECT_KIND && selector != DEG_LORA_SELECT_SHARED)
        return dg_fail(DEG_ERR_ARG, "deg_ckpt_add_lora: selector %d is not DEG_LORA_SELECT_KIND "
                       "or DEG_LORA_SELECT_SHARED", (int)selector);
    deg_lora_params p = *params;
    int n;
    adapter_names(selector, &n);
    p.n_adapters = n;
    deg_lora *l = NULL;
    DG_TRY(deg_lora_new(k->model, &p, &l));
    deg_lora_free(k->lora);
    k->lora = l;
    k->lora_selector = selector;
    return DEG_OK;
}

deg_lora *deg_ckpt_get_lora(deg_ckpt *k) { return k ? k->lora : NULL; }

int32_t deg_ckpt_lora_adapter(const deg_ckpt *k, int32_t kind)
{
    if (!k || !k->lora) return -1;
    int decide = kind == DEG_HEAD_CHOICE || kind == DEG_HEAD_SCORE || kind == DEG_HEAD_NOUL;
    int extract = kind == DEG_HEAD_EXTRACT || kind == DEG_HEAD_COUNT ||
                  kind == DEG_HEAD_ANCHOR || kind == DEG_HEAD_ANCHOR_COUNT ||
                  kind == DEG_HEAD_EXTRACT_ANCHORED;
    if (!decide && !extract) return -1;
    if (k->lora_selector == DEG_LORA_SELECT_SHARED) return 0;
    return decide ? 0 : 1;
}

/* Parse deg.json["lora"] into params + selector. */
static deg_status parse_entry(json_t *e, const char *jpath, deg_lora_params *p, int32_t *sel)
{
    *p = deg_lora_default_params();
    json_t *r = json_object_get(e, "rank"), *a = json_object_get(e, "alpha");
    json_t *tg = json_object_get(e, "targets"), *ad = json_object_get(e, "adapters");
    const char *s = json_string_value(json_object_get(e, "selector"));
    const char *ctx = json_string_value(json_object_get(e, "context"));
    const char *file = json_string_value(json_object_get(e, "file"));
    if (!json_is_object(e) || !json_is_integer(r) || !json_is_number(a) || !json_is_array(tg) ||
        !json_is_array(ad) || !s)
        return dg_fail(DEG_ERR_FORMAT, "%s: \"lora\" needs integer \"rank\", number \"alpha\", "
                       "arrays \"targets\" and \"adapters\" and a \"selector\"", jpath);
    if (strcmp(s, "kind") && strcmp(s, "shared"))
        return dg_fail(DEG_ERR_FORMAT, "%s: lora.selector \"%s\" is not \"kind\" or \"shared\"",
                       jpath, s);
    if (ctx && strcmp(ctx, "base"))
        return dg_fail(DEG_ERR_UNSUPPORTED, "%s: lora.context \"%s\": only \"base\" (the context "
                       "read by the base weights, §12.7) is supported", jpath, ctx);
    if (file && strcmp(file, DG_CKPT_ADAPTERS_FILE))
        return dg_fail(DEG_ERR_FORMAT, "%s: lora.file must be \"%s\"", jpath, DG_CKPT_ADAPTERS_FILE);
    *sel = strcmp(s, "kind") == 0 ? DEG_LORA_SELECT_KIND : DEG_LORA_SELECT_SHARED;
    int n;
    const char *const *names = adapter_names(*sel, &n);
    if (json_array_size(ad) != (size_t)n)
        return dg_fail(DEG_ERR_FORMAT, "%s: selector \"%s\" needs %d adapter name(s)", jpath, s,
                       n);
    for (int i = 0; i < n; i++) {
        const char *nm = json_string_value(json_array_get(ad, (size_t)i));
        if (!nm || strcmp(nm, names[i]))
            return dg_fail(DEG_ERR_FORMAT, "%s: lora.adapters[%d] must be \"%s\" (selector "
                           "\"%s\")", jpath, i, names[i], s);
    }
    p->targets = 0;
    for (size_t i = 0; i < json_array_size(tg); i++) {
        const char *t = json_string_value(json_array_get(tg, i));
        int found = -1;
        for (int j = 0; t && j < DG_LORA_N_TARGETS; j++)
            if (strcmp(t, TARGET_NAMES[j]) == 0) found = j;
        if (found < 0)
            return dg_fail(DEG_ERR_FORMAT, "%s: lora.targets[%zu] is not one of q k v o gate up "
                           "down", jpath, i);
        p->targets |= 1u << found;
    }
    p->rank = (int32_t)json_integer_value(r);
    p->alpha = (float)json_number_value(a);
    p->n_adapters = n;
    if (json_integer_value(r) < 1 || json_integer_value(r) > DG_LORA_MAX_RANK || !p->targets ||
        !isfinite(p->alpha))
        return dg_fail(DEG_ERR_FORMAT, "%s: lora needs rank in [1, %d], a finite alpha and at "
                       "least one target", jpath, DG_LORA_MAX_RANK);
    return DEG_OK;
}

/* Copy tensor <name>.layers.<il>.<t>.lora_A / _B of shape [r0, r1] into dst. */
static deg_status read_tensor(dg_safetensors *sf, const char *spath, const char *name,
                              int64_t r0, int64_t r1, float *dst)
{
    const dg_tensor_view *t = dg_safetensors_find(sf, name);
    if (!t) return dg_fail(DEG_ERR_FORMAT, "%s: adapter tensor '%s' is missing", spath, name);
    if (t->dtype != DG_F32 || t->n_dims != 2 || t->shape[0] != r0 || t->shape[1] != r1)
        return dg_fail(DEG_ERR_MISMATCH, "%s: adapter tensor '%s' must be F32 [%lld, %lld]",
                       spath, name, (long long)r0, (long long)r1);
    size_t n = (size_t)(r0 * r1);
    memcpy(dst, t->data, n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        if (!isfinite(dst[i]))
            return dg_fail(DEG_ERR_NUMERIC, "%s: adapter tensor '%s' holds NaN/Inf", spath, name);
    return DEG_OK;
}

/* Visit every (adapter, layer, enabled target) tensor pair with its names. */
typedef deg_status (*visit_fn)(void *ud, const char *na, const char *nb, int64_t r,
                               int64_t in, int64_t out, float *A);
static deg_status visit(const deg_lora *l, int32_t selector, visit_fn f, void *ud)
{
    int n;
    const char *const *names = adapter_names(selector, &n);
    char na[192], nb[192];
    for (int a = 0; a < n; a++)
        for (int il = 0; il < l->model->hp.n_layer; il++)
            for (int t = 0; t < DG_LORA_N_TARGETS; t++) {
                size_t o = dg_lora_offset(l, a, il, t);
                if (o == (size_t)-1) continue;
                snprintf(na, sizeof na, "%s.layers.%d.%s.lora_A", names[a], il, TARGET_NAMES[t]);
                snprintf(nb, sizeof nb, "%s.layers.%d.%s.lora_B", names[a], il, TARGET_NAMES[t]);
                DG_TRY(f(ud, na, nb, l->p.rank, (int64_t)dg_lora_in(l, il, t),
                         (int64_t)dg_lora_out(l, il, t), l->data + o));
            }
    return DEG_OK;
}

typedef struct rd { dg_safetensors *sf; const char *spath; } rd;
static deg_status read_pair(void *ud, const char *na, const char *nb, int64_t r, int64_t in,
                            int64_t out, float *A)
{
    rd *c = ud;
    DG_TRY(read_tensor(c->sf, c->spath, na, r, in, A));
    return read_tensor(c->sf, c->spath, nb, out, r, A + r * in);
}

deg_status dg_ckpt_lora_load(dg_ckpt *k, json_t *meta, const char *dir, const char *jpath)
{
    json_t *e = json_object_get(meta, "lora");
    if (!e || json_is_null(e)) return DEG_OK;
    deg_lora_params p;
    int32_t sel = DEG_LORA_SELECT_KIND;
    DG_TRY(parse_entry(e, jpath, &p, &sel));
    DG_TRY(deg_ckpt_add_lora(k, &p, sel));
    char *spath = dg_path_join(dir, DG_CKPT_ADAPTERS_FILE), *ppath = spath ? dg_prev_path(spath) : NULL;
    if (!ppath) {
        free(spath);
        return dg_fail(DEG_ERR_NOMEM, "checkpoint adapters: out of memory");
    }
    /* the adapters deg.json names (lora.sha256; absent before issue 19's
     * whole saves): the current file or, after a killed save, its .prev */
    json_t *sha = json_object_get(e, "sha256");
    int use_prev = 0;
    deg_status st = sha && !json_is_string(sha)
                        ? dg_fail(DEG_ERR_FORMAT, "%s: lora.sha256 must be 64 hex digits", jpath)
                        : dg_prev_pick(spath, json_string_value(sha), jpath, &use_prev);
    dg_safetensors *sf = NULL;
    if (st == DEG_OK) st = dg_safetensors_open(use_prev ? ppath : spath, &sf);
    if (st == DEG_OK) {
        rd c = {sf, use_prev ? ppath : spath};
        st = visit(k->lora, sel, read_pair, &c);
    }
    dg_safetensors_close(sf);
    free(spath);
    free(ppath);
    if (st != DEG_OK) {
        deg_lora_free(k->lora);
        k->lora = NULL;
    }
    return st;
}

static deg_status add_pair(void *ud, const char *na, const char *nb, int64_t r, int64_t in,
                           int64_t out, float *A)
{
    dg_st_writer *w = ud;
    int64_t sa[2] = {r, in}, sb[2] = {out, r};
    DG_TRY(dg_st_writer_add(w, na, DG_F32, 2, sa, A));
    return dg_st_writer_add(w, nb, DG_F32, 2, sb, A + r * in);
}

deg_status dg_ckpt_lora_save(const dg_ckpt *k, json_t *meta, const char *dir)
{
    if (!k->lora) return DEG_OK;
    const deg_lora *l = k->lora;
    int n;
    const char *const *names = adapter_names(k->lora_selector, &n);
    json_t *tg = json_array(), *ad = json_array();
    for (int t = 0; t < DG_LORA_N_TARGETS; t++)
        if ((l->p.targets >> t) & 1) json_array_append_new(tg, json_string(TARGET_NAMES[t]));
    for (int a = 0; a < n; a++) json_array_append_new(ad, json_string(names[a]));
    json_t *e = json_pack("{s:i, s:f, s:o, s:o, s:s, s:s, s:s}", "rank", (int)l->p.rank,
                          "alpha", (double)l->p.alpha, "targets", tg, "adapters", ad,
                          "selector", k->lora_selector == DEG_LORA_SELECT_KIND ? "kind" : "shared",
                          "context", "base", "file", DG_CKPT_ADAPTERS_FILE);
    char *spath = dg_path_join(dir, DG_CKPT_ADAPTERS_FILE);
    dg_st_writer *w = NULL;
    deg_status st = !e || !spath ? dg_fail(DEG_ERR_NOMEM, "checkpoint adapters: out of memory")
                                 : dg_st_writer_new(&w);
    if (st == DEG_OK) st = visit(l, k->lora_selector, add_pair, w);
    if (st == DEG_OK) st = dg_st_writer_meta(w, "format", "deg-lora-v1");
    if (st == DEG_OK) st = dg_st_writer_commit(w, spath);
    char sha[65];
    if (st == DEG_OK) st = dg_file_sha256(spath, sha);
    if (st == DEG_OK) st = json_object_set_new(e, "sha256", json_string(sha)) == 0
                               ? DEG_OK : dg_fail(DEG_ERR_NOMEM, "checkpoint adapters: oom");
    if (st == DEG_OK) json_object_set(meta, "lora", e);
    json_decref(e);
    dg_st_writer_free(w);
    free(spath);
    return st;
}
