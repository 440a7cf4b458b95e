/* Private layout of deg_cartridge (include/cartridge.h), shared by the
 * files of lib/cartridge. */
#ifndef DG_CARTRIDGE_INTERNAL_H
#define DG_CARTRIDGE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cartridge.h"

struct deg_cartridge {
    const deg_model *model;   /* borrowed */
    size_t p;                 /* prefix rows */
    size_t row;               /* floats per row = n_head_kv * head_dim */
    int n_layer;
    size_t frozen;            /* rows [0, frozen) are constants */
    float **k, **v;           /* [n_layer] x [p, row] */
    float **gk, **gv;         /* gradients, same shape (allocated with k/v) */
    float **mk, **mv;         /* Adam first moments */
    float **sk, **sv;         /* Adam second moments */
    int64_t steps;
};

/* Empty cartridge of p rows (zeroed rows, grads, moments). */
deg_status dg_cartridge_alloc(const deg_model *m, size_t p, deg_cartridge **out);

/* 64 lowercase hex chars + NUL: SHA-256 over the model's architecture,
 * hyper-parameters and a fixed sample of its weights (persist.c). */
void dg_model_fingerprint(const deg_model *m, char hex[65]);

/* 1 if every row value of the cartridge is finite. */
int dg_cartridge_finite(const deg_cartridge *c);

#endif
