/* Weight fetching: find a tensor by name in the model's GGUF file or
 * safetensors shards, check its shape, and hand out f32 data — borrowed from
 * the mapping for aligned F32 tensors, otherwise dequantized once into a
 * buffer the model owns — or, for matrices with native weights, the file's
 * typed blocks borrowed from the mapping. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "model/arch.h"

static const dg_tensor_view *src_find(const dg_weight_src *s, const char *name)
{
    return s->gguf ? dg_gguf_find(s->gguf, name) : dg_st_set_find(s->st, name);
}

void dg_tensor_name(char *buf, size_t cap, const deg_model *m, const char *gguf_name,
                    const char *hf_name, int il)
{
    const char *fmt = m->src.gguf ? gguf_name : hf_name;
    size_t o = 0;
    if (!m->src.gguf && m->hf_prefix && !strncmp(fmt, "model.", 6)) {
        o = (size_t)snprintf(buf, cap, "%s", m->hf_prefix);
        fmt += 6;
        if (o >= cap) return;
    }
    snprintf(buf + o, cap - o, fmt, il);
}

static void shape_str(char *buf, size_t cap, int n_dims, const int64_t *shape)
{
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n_dims && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

int dg_weight_has(const deg_model *m, const char *gguf_name, const char *hf_name, int il)
{
    char name[256];
    dg_tensor_name(name, sizeof name, m, gguf_name, hf_name, il);
    return src_find(&m->src, name) != NULL;
}

deg_status dg_model_alloc(deg_model *m, size_t bytes, void **out)
{
    *out = NULL;
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) return dg_fail(DEG_ERR_NOMEM, "model: out of memory (%zu bytes)", bytes);
    DG_TRY(dg_model_own(m, p));
    *out = p;
    return DEG_OK;
}

deg_status dg_model_own(deg_model *m, void *p)
{
    deg_status st = DG_GROW(m->owned, m->cap_owned, m->n_owned + 1);
    if (st != DEG_OK) {
        free(p);
        return dg_fail_context(st, "model");
    }
    m->owned[m->n_owned++] = p;
    return DEG_OK;
}

/* The tensor named by gguf_name / hf_name, checked to have shape. */
static deg_status find_checked(const deg_model *m, const char *gguf_name, const char *hf_name,
                               int il, int n_dims, const int64_t *shape, int permute_heads,
                               char name[256], const dg_tensor_view **out)
{
    dg_tensor_name(name, 256, m, gguf_name, hf_name, il);
    const dg_tensor_view *t = src_find(&m->src, name);
    char want[96], got[96];
    shape_str(want, sizeof want, n_dims, shape);
    if (!t) return dg_fail(DEG_ERR_FORMAT, "missing tensor '%s' (expected shape %s)", name, want);
    int same = t->n_dims == n_dims;
    for (int i = 0; same && i < n_dims; i++) same = t->shape[i] == shape[i];
    if (!same) {
        shape_str(got, sizeof got, t->n_dims, t->shape);
        return dg_fail(DEG_ERR_FORMAT, "tensor '%s' has shape %s, expected %s", name, got, want);
    }
    if (permute_heads > 0 && (shape[0] % (2 * permute_heads) != 0 || n_dims != 2))
        return dg_fail(DEG_ERR_FORMAT, "tensor '%s': %lld rows do not split into %d heads",
                       name, (long long)shape[0], permute_heads);
    *out = t;
    return DEG_OK;
}

/* f32 copy of t (n floats, shape[0] rows of n / shape[0]) into an owned
 * buffer, row r = the file's row row_map[r], column c = its column
 * col_map[c] (either NULL: in order). */
static deg_status gather_f32(deg_model *m, const dg_tensor_view *t, const char *name, int64_t n,
                             int64_t rows, const int32_t *row_map, const int32_t *col_map,
                             const float **out)
{
    int64_t cols = n / rows;
    float *buf = malloc(sizeof(float) * (size_t)n), *src = buf;
    if (!buf) return dg_fail(DEG_ERR_NOMEM, "tensor '%s': cannot allocate %lld floats", name,
                             (long long)n);
    deg_status st = DEG_OK;
    if (t->dtype == DG_F32 && !row_map && !col_map) {
        memcpy(buf, t->data, sizeof(float) * (size_t)n);
    } else if (t->dtype == DG_F32) {
        src = (float *)t->data; /* read with memcpy below: may be unaligned */
    } else if ((st = dg_dequantize(t->dtype, t->data, buf, n)) != DEG_OK) {
        dg_fail_context(st, "tensor '%s'", name);
    } else if (row_map || col_map) {
        src = buf;
        buf = malloc(sizeof(float) * (size_t)n);
        if (!buf) st = dg_fail(DEG_ERR_NOMEM, "tensor '%s': cannot allocate %lld floats", name,
                               (long long)n);
    }
    if (st == DEG_OK && src != buf)
        for (int64_t r = 0; r < rows; r++) {
            const char *row = (const char *)src + sizeof(float) * (size_t)((row_map ? row_map[r]
                                                                                   : r) * cols);
            if (!col_map) {
                memcpy(buf + r * cols, row, sizeof(float) * (size_t)cols);
                continue;
            }
            for (int64_t c = 0; c < cols; c++)
                memcpy(buf + r * cols + c, row + sizeof(float) * (size_t)col_map[c], sizeof(float));
        }
    if (src != buf && src != t->data) free(src);
    if (st != DEG_OK) {
        free(buf);
        return st;
    }
    DG_TRY(dg_model_own(m, buf));
    *out = buf;
    return DEG_OK;
}

deg_status dg_weight_get_mapped(deg_model *m, const char *gguf_name, const char *hf_name, int il,
                                int n_dims, const int64_t *shape, const int32_t *row_map,
                                const int32_t *col_map, const float **out)
{
    char name[256];
    const dg_tensor_view *t;
    DG_TRY(find_checked(m, gguf_name, hf_name, il, n_dims, shape, 0, name, &t));
    if (!m->src.gguf) row_map = col_map = NULL;
    if (col_map && n_dims != 2)
        return dg_fail(DEG_ERR_FORMAT, "tensor '%s': a column order needs a matrix", name);
    int64_t n = 1;
    for (int i = 0; i < n_dims; i++) n *= shape[i];
    m->weight_bytes += (size_t)n * sizeof(float);
    if (t->dtype == DG_F32 && !row_map && !col_map && ((uintptr_t)t->data % sizeof(float)) == 0) {
        *out = t->data;
        return DEG_OK;
    }
    return gather_f32(m, t, name, n, shape[0], row_map, col_map, out);
}

static deg_status head_row_map(deg_model *m, int64_t rows, int heads, const int32_t **out);

deg_status dg_weight_get(deg_model *m, const char *gguf_name, const char *hf_name, int il,
                         int n_dims, const int64_t *shape, int permute_heads, const float **out)
{
    const int32_t *map = NULL;
    if (permute_heads && m->src.gguf) {
        char name[256];
        const dg_tensor_view *t;
        DG_TRY(find_checked(m, gguf_name, hf_name, il, n_dims, shape, permute_heads, name, &t));
        DG_TRY(head_row_map(m, shape[0], permute_heads, &map));
    }
    return dg_weight_get_mapped(m, gguf_name, hf_name, il, n_dims, shape, map, NULL, out);
}

/* Row map of llama.cpp's q/k interleave (see unpermute_heads): logical
 * (HF) row h*D + a*D/2 + b is stored row h*D + 2b + a. */
static deg_status head_row_map(deg_model *m, int64_t rows, int heads, const int32_t **out)
{
    int32_t *map = malloc(sizeof(int32_t) * (size_t)rows);
    if (!map) return dg_fail(DEG_ERR_NOMEM, "model: out of memory");
    int64_t D = rows / heads, half = D / 2;
    for (int64_t h = 0; h < heads; h++)
        for (int64_t a = 0; a < 2; a++)
            for (int64_t b = 0; b < half; b++)
                map[h * D + a * half + b] = (int32_t)(h * D + 2 * b + a);
    DG_TRY(dg_model_own(m, map));
    *out = map;
    return DEG_OK;
}

/* 1 if col_map [cols] moves whole blocks of bs columns: each block of the
 * logical column order is one block of the file, its columns in order. */
static int moves_whole_blocks(const int32_t *col_map, int64_t cols, int64_t bs)
{
    for (int64_t c = 0; c < cols; c++) {
        int64_t first = col_map[c - c % bs];
        if (first % bs || col_map[c] != first + c % bs) return 0;
    }
    return 1;
}

/* The file's rows of quantized blocks t [rows, row_bytes] with each row's
 * blocks put in the logical column order (moves_whole_blocks(col_map)), into
 * a buffer the model owns: the same blocks, so dequantized they are exactly
 * the f32 reorder. */
static deg_status reorder_blocks(deg_model *m, const dg_tensor_view *t, const int32_t *col_map,
                                 int64_t rows, int64_t cols, size_t row_bytes, const void **out)
{
    int64_t bs = dg_dtype_block_elems(t->dtype);
    size_t bb = dg_dtype_block_bytes(t->dtype), nb = (size_t)(cols / bs);
    uint8_t *buf;
    DG_TRY(dg_model_alloc(m, row_bytes * (size_t)rows, (void **)&buf));
    const uint8_t *src = t->data;
    for (int64_t r = 0; r < rows; r++)
        for (size_t b = 0; b < nb; b++)
            memcpy(buf + (size_t)r * row_bytes + b * bb,
                   src + (size_t)r * row_bytes + (size_t)(col_map[b * (size_t)bs] / bs) * bb, bb);
    *out = buf;
    return DEG_OK;
}

deg_status dg_weight_get_matrix_mapped(deg_model *m, const char *gguf_name, const char *hf_name,
                                       int il, int64_t rows, int64_t cols,
                                       const int32_t *row_map, const int32_t *col_map,
                                       dg_weight *out)
{
    int64_t shape[2] = {rows, cols};
    char name[256];
    const dg_tensor_view *t;
    DG_TRY(find_checked(m, gguf_name, hf_name, il, 2, shape, 0, name, &t));
    if (!m->src.gguf) row_map = col_map = NULL;
    memset(out, 0, sizeof *out);
    out->rows = rows;
    out->cols = cols;
    /* a column order is applied to quantized blocks only when it moves whole
     * blocks (Qwen3.5's value heads of dv columns in blocks of 32 that divide
     * dv; a head of 128 columns splits a K-quant's 256-block): else the matrix
     * is f32 */
    if (m->native_weights && t->dtype != DG_F32 && dg_weight_supported(t->dtype, cols) &&
        rows <= INT32_MAX &&
        (!col_map || moves_whole_blocks(col_map, cols, dg_dtype_block_elems(t->dtype)))) {
        int ok;
        out->dtype = t->dtype;
        out->row_bytes = dg_dtype_row_bytes(t->dtype, cols, &ok);
        if (!ok || out->row_bytes * (size_t)rows != t->n_bytes)
            return dg_fail(DEG_ERR_FORMAT, "tensor '%s': %zu bytes for %lld x %lld %s", name,
                           t->n_bytes, (long long)rows, (long long)cols,
                           dg_dtype_name(t->dtype));
        out->data = t->data;
        if (col_map) DG_TRY(reorder_blocks(m, t, col_map, rows, cols, out->row_bytes, &out->data));
        out->f32_act = m->f32_act;
        out->row_map = row_map;
        m->weight_bytes += dg_weight_bytes(out);
        return DEG_OK;
    }
    const float *f = NULL;
    DG_TRY(dg_weight_get_mapped(m, gguf_name, hf_name, il, 2, shape, row_map, col_map, &f));
    out->dtype = DG_F32;
    out->data = f;
    out->row_bytes = sizeof(float) * (size_t)cols;
    return DEG_OK;
}

deg_status dg_weight_get_matrix(deg_model *m, const char *gguf_name, const char *hf_name, int il,
                                int64_t rows, int64_t cols, int permute_heads, dg_weight *out)
{
    const int32_t *map = NULL;
    if (permute_heads && m->src.gguf) {
        char name[256];
        const dg_tensor_view *t;
        int64_t shape[2] = {rows, cols};
        DG_TRY(find_checked(m, gguf_name, hf_name, il, 2, shape, permute_heads, name, &t));
        DG_TRY(head_row_map(m, rows, permute_heads, &map));
    }
    return dg_weight_get_matrix_mapped(m, gguf_name, hf_name, il, rows, cols, map, NULL, out);
}

const dg_std_names dg_std_names_llama = {
    .attn_norm = "model.layers.%d.input_layernorm.weight",
    .q = "model.layers.%d.self_attn.q_proj.weight",
    .k = "model.layers.%d.self_attn.k_proj.weight",
    .v = "model.layers.%d.self_attn.v_proj.weight",
    .o = "model.layers.%d.self_attn.o_proj.weight",
    .q_norm = "model.layers.%d.self_attn.q_norm.weight",
    .k_norm = "model.layers.%d.self_attn.k_norm.weight",
    .ffn_norm = "model.layers.%d.post_attention_layernorm.weight",
    .gate = "model.layers.%d.mlp.gate_proj.weight",
    .up = "model.layers.%d.mlp.up_proj.weight",
    .down = "model.layers.%d.mlp.down_proj.weight",
};

deg_status dg_load_mlp(deg_model *m, int il, const dg_std_names *nm, dg_layer *L)
{
    const dg_hparams *hp = &m->hp;
    int64_t E = hp->n_embd, F = hp->n_ff;
    DG_TRY(dg_weight_get(m, nm->gguf_ffn_norm ? nm->gguf_ffn_norm : "blk.%d.ffn_norm.weight",
                         nm->ffn_norm, il, 1, &E, 0, &L->ffn_norm));
    DG_TRY(dg_weight_get_matrix(m, "blk.%d.ffn_gate.weight", nm->gate, il, F, E, 0, &L->w_gate));
    DG_TRY(dg_weight_get_matrix(m, "blk.%d.ffn_up.weight", nm->up, il, F, E, 0, &L->w_up));
    DG_TRY(dg_weight_get_matrix(m, "blk.%d.ffn_down.weight", nm->down, il, E, F, 0, &L->w_down));
    return DEG_OK;
}

deg_status dg_load_std_layer_named(deg_model *m, int il, const dg_std_names *nm, int with_qk_norm,
                                   int gguf_permuted_qk, dg_layer *L)
{
    const dg_hparams *hp = &m->hp;
    int64_t E = hp->n_embd, D = hp->head_dim, QD = (int64_t)hp->n_head * D,
            KD = (int64_t)hp->n_head_kv * D;
    int perm = gguf_permuted_qk && m->src.gguf;
    memset(L, 0, sizeof *L);
    DG_TRY(dg_weight_get(m, "blk.%d.attn_norm.weight", nm->attn_norm, il, 1, &E, 0,
                         &L->attn_norm));
    DG_TRY(dg_weight_get_matrix(m, "blk.%d.attn_q.weight", nm->q, il, QD, E,
                                perm ? hp->n_head : 0, &L->wq));
    DG_TRY(dg_weight_get_matrix(m, "blk.%d.attn_k.weight", nm->k, il, KD, E,
                                perm ? hp->n_head_kv : 0, &L->wk));
    DG_TRY(dg_weight_get_matrix(m, "blk.%d.attn_v.weight", nm->v, il, KD, E, 0, &L->wv));
    DG_TRY(dg_weight_get_matrix(m, "blk.%d.attn_output.weight", nm->o, il, E, QD, 0, &L->wo));
    if (with_qk_norm) {
        DG_TRY(dg_weight_get(m, "blk.%d.attn_q_norm.weight", nm->q_norm, il, 1, &D, 0,
                             &L->q_norm));
        DG_TRY(dg_weight_get(m, "blk.%d.attn_k_norm.weight", nm->k_norm, il, 1, &D, 0,
                             &L->k_norm));
    }
    DG_TRY(dg_load_mlp(m, il, nm, L));
    L->has_kv = 1;
    return DEG_OK;
}

deg_status dg_load_std_layer(deg_model *m, int il, int with_qk_norm, int gguf_permuted_qk,
                             dg_layer *L)
{
    return dg_load_std_layer_named(m, il, &dg_std_names_llama, with_qk_norm, gguf_permuted_qk, L);
}
