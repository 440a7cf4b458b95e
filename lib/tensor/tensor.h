/* A borrowed view of a tensor's bytes: name, dtype, shape. Shapes are listed
 * outermost first (row-major, as safetensors and PyTorch write them): a
 * Linear weight [out_features, in_features] has shape {out, in}. GGUF lists
 * ne[] innermost first; the GGUF reader reverses it into this order. */
#ifndef DG_TENSOR_TENSOR_H
#define DG_TENSOR_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "tensor/dtype.h"

/* Most dimensions a safetensors tensor may have (vision towers of
 * multimodal checkpoints hold 5-D patch convolutions; GGUF allows 4). */
#define DG_MAX_DIMS 8

typedef struct dg_tensor_view {
    const char *name;          /* borrowed from the file object */
    dg_dtype dtype;
    int n_dims;
    int64_t shape[DG_MAX_DIMS];/* outermost first */
    const void *data;          /* borrowed: points into the mapped file */
    size_t n_bytes;
} dg_tensor_view;

int64_t dg_tensor_numel(const dg_tensor_view *t);

#endif
