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
 * DEG_ERR_UNSUPPORTED (dtype). */
deg_status dg_safetensors_open(const char *path, dg_safetensors **out);
void dg_safetensors_close(dg_safetensors *st);
size_t dg_safetensors_n_tensors(const dg_safetensors *st);
const dg_tensor_view *dg_safetensors_tensor(const dg_safetensors *st, size_t i);
const dg_tensor_view *dg_safetensors_find(const dg_safetensors *st, const char *name);
/* __metadata__ value for key, NULL if absent; borrowed. */
const char *dg_safetensors_meta(const dg_safetensors *st, const char *key);

/* Writer: add tensors (the data is borrowed until dg_st_writer_commit), then
 * commit writes the file atomically. */
typedef struct dg_st_writer dg_st_writer;
deg_status dg_st_writer_new(dg_st_writer **out);
deg_status dg_st_writer_add(dg_st_writer *w, const char *name, dg_dtype dtype, int n_dims,
                            const int64_t *shape, const void *data);
deg_status dg_st_writer_meta(dg_st_writer *w, const char *key, const char *value);
deg_status dg_st_writer_commit(dg_st_writer *w, const char *path);
void dg_st_writer_free(dg_st_writer *w);

#endif
