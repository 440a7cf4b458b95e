/* safetensors reader and writer (format: 8-byte little-endian header length,
 * JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {str:str}},
 * then the data). Readers memory-map; writers write to a temporary file in the
 * same directory and rename it into place (never a half-written file). */
#ifndef DG_FORMAT_SAFETENSORS_H
#define DG_FORMAT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"
#include "tensor/tensor.h"

typedef struct dg_safetensors dg_safetensors;

/* Errors: DEG_ERR_IO, DEG_ERR_FORMAT (header length beyond file, bad JSON,
 * offsets out of range or overlapping, shape/size mismatch),
 * DEG_ERR_UNSUPPORTED (dtype, more than DG_MAX_DIMS dimensions).
 * Dtypes read: F32 F16 BF16 F64 I8 I16 I32 I64 U8 BOOL. Tensors are listed
 * in file (data offset) order. Data pointers are as aligned as the file
 * makes them: the reference writer pads the header to a multiple of 8, so
 * every tensor is aligned to its element size; other files may not be. */
deg_status dg_safetensors_open(const char *path, dg_safetensors **out);
void dg_safetensors_close(dg_safetensors *st);
size_t dg_safetensors_n_tensors(const dg_safetensors *st);
const dg_tensor_view *dg_safetensors_tensor(const dg_safetensors *st, size_t i);
const dg_tensor_view *dg_safetensors_find(const dg_safetensors *st, const char *name);
/* __metadata__ value for key, NULL if absent; borrowed. */
const char *dg_safetensors_meta(const dg_safetensors *st, const char *key);

/* Writer: add tensors (the data is borrowed until dg_st_writer_commit), then
 * commit writes the file atomically. The layout is the reference
 * implementation's (Python/Rust safetensors 0.4+): tensors ordered by dtype
 * (I64 F64 F32 I32 BF16 F16 I16 I8 U8 BOOL) then name, compact JSON header
 * with "__metadata__" first (keys sorted), padded with spaces to a multiple
 * of 8; so a file with at most one metadata key is byte-identical to
 * safetensors.save_file's. Errors (add): DEG_ERR_ARG (empty/duplicate/
 * reserved name, bad shape), DEG_ERR_UNSUPPORTED (quantized dtype);
 * (commit): DEG_ERR_IO. */
typedef struct dg_st_writer dg_st_writer;
deg_status dg_st_writer_new(dg_st_writer **out);
deg_status dg_st_writer_add(dg_st_writer *w, const char *name, dg_dtype dtype, int n_dims,
                            const int64_t *shape, const void *data);
deg_status dg_st_writer_meta(dg_st_writer *w, const char *key, const char *value);
deg_status dg_st_writer_commit(dg_st_writer *w, const char *path);
void dg_st_writer_free(dg_st_writer *w);

/* A Hugging Face checkpoint: one model.safetensors, or the shards listed by
 * model.safetensors.index.json ("weight_map": {tensor: shard file}). path is
 * a directory (index preferred over a single file), an index .json, or a
 * .safetensors file. Shard names must be plain file names in the index's
 * directory. Every tensor of the weight map must be in its shard; a tensor
 * name in two shards is an error. Errors: DEG_ERR_IO (nothing to open),
 * DEG_ERR_FORMAT (bad index, missing tensor), and the reader's errors. */
typedef struct dg_st_set dg_st_set;
deg_status dg_st_set_open(const char *path, dg_st_set **out);
void dg_st_set_close(dg_st_set *set);
size_t dg_st_set_n_tensors(const dg_st_set *set);
const dg_tensor_view *dg_st_set_tensor(const dg_st_set *set, size_t i);
/* NULL if absent; borrowed until dg_st_set_close. */
const dg_tensor_view *dg_st_set_find(const dg_st_set *set, const char *name);
/* Directory holding the files (for config.json etc.); borrowed. */
const char *dg_st_set_dir(const dg_st_set *set);
size_t dg_st_set_n_files(const dg_st_set *set);

#endif
