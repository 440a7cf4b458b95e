/* GGUF v3 reader (spec: ggml docs/gguf.md). The file is memory-mapped; every
 * pointer handed out borrows from the dg_gguf object and lives until
 * dg_gguf_close. Tensor data offsets honour general.alignment (default 32). */
#ifndef DG_FORMAT_GGUF_H
#define DG_FORMAT_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"
#include "tensor/tensor.h"

typedef struct dg_gguf dg_gguf;

typedef enum dg_gguf_type {
    DG_GGUF_UINT8 = 0, DG_GGUF_INT8 = 1, DG_GGUF_UINT16 = 2, DG_GGUF_INT16 = 3,
    DG_GGUF_UINT32 = 4, DG_GGUF_INT32 = 5, DG_GGUF_FLOAT32 = 6, DG_GGUF_BOOL = 7,
    DG_GGUF_STRING = 8, DG_GGUF_ARRAY = 9, DG_GGUF_UINT64 = 10, DG_GGUF_INT64 = 11,
    DG_GGUF_FLOAT64 = 12
} dg_gguf_type;

/* A string inside the mapping: NOT NUL-terminated. */
typedef struct dg_gguf_str {
    const char *ptr;
    uint64_t len;
} dg_gguf_str;

/* Open and validate (magic, version 2/3, bounds of every header field and
 * tensor extent against the file size). Errors: DEG_ERR_IO, DEG_ERR_FORMAT
 * (message says which field at which byte offset), DEG_ERR_UNSUPPORTED
 * (tensor dtype deg cannot read; the message names tensor and type). */
deg_status dg_gguf_open(const char *path, dg_gguf **out);
void dg_gguf_close(dg_gguf *g);

/* Metadata lookups. Each returns DEG_ERR_RANGE if the key is absent (and
 * sets no message, so callers can use defaults), DEG_ERR_FORMAT if the type
 * differs (integer getters accept any integer type whose value fits). */
deg_status dg_gguf_get_u64(const dg_gguf *g, const char *key, uint64_t *out);
deg_status dg_gguf_get_i64(const dg_gguf *g, const char *key, int64_t *out);
deg_status dg_gguf_get_f32(const dg_gguf *g, const char *key, float *out);
deg_status dg_gguf_get_bool(const dg_gguf *g, const char *key, int *out);
deg_status dg_gguf_get_str(const dg_gguf *g, const char *key, dg_gguf_str *out);
/* Array of element type *elem_type with *n elements; *data points at the
 * first element in the mapping. For string arrays use dg_gguf_arr_str. */
deg_status dg_gguf_get_arr(const dg_gguf *g, const char *key, dg_gguf_type *elem_type,
                           uint64_t *n, const void **data);
/* i-th element of an array of any integer type, as int64. Errors:
 * DEG_ERR_RANGE (key absent), DEG_ERR_FORMAT (not an integer array, i out
 * of range, or the value does not fit). */
deg_status dg_gguf_arr_int(const dg_gguf *g, const char *key, uint64_t i, int64_t *out);
/* i-th string of a string array (O(1) after open: offsets are indexed). */
deg_status dg_gguf_arr_str(const dg_gguf *g, const char *key, uint64_t i, dg_gguf_str *out);

/* File-level facts and the raw key/value list (in file order), for tools and
 * tests. dg_gguf_kv_key returns a NUL-terminated copy owned by g. */
uint32_t dg_gguf_version(const dg_gguf *g);
size_t dg_gguf_alignment(const dg_gguf *g);
size_t dg_gguf_n_kv(const dg_gguf *g);
const char *dg_gguf_kv_key(const dg_gguf *g, size_t i);
dg_gguf_type dg_gguf_kv_type(const dg_gguf *g, size_t i);
/* Static name of a metadata value type ("uint32", "string", ...). */
const char *dg_gguf_type_name(dg_gguf_type t);
/* Static name of a ggml tensor type id ("Q5_K", ...; "unknown" if none). */
const char *dg_ggml_type_name(uint32_t ggml_type);

size_t dg_gguf_n_tensors(const dg_gguf *g);
const dg_tensor_view *dg_gguf_tensor(const dg_gguf *g, size_t i);
/* NULL if absent. */
const dg_tensor_view *dg_gguf_find(const dg_gguf *g, const char *name);

#endif
