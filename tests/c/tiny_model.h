/* Helpers of the C tests over the tiny random llama/qwen3 models of
 * tests/goldens (made by gen_model_goldens.py) and their torch goldens:
 * loading a model, reading a golden tensor, relative errors. */
#ifndef DEG_TESTS_TINY_MODEL_H
#define DEG_TESTS_TINY_MODEL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "deg.h"
#include "format/safetensors.h"

#define TINY_GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static inline deg_model *tiny_load(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", TINY_GOLDENS, name);
    deg_model *m = NULL;
    deg_status s = deg_model_load(p, &m);
    cr_assert_eq(s, DEG_OK, "load %s: %s", p, deg_errmsg());
    return m;
}

/* Layer count, floats per K/V row (n_head_kv * head_dim), vocabulary. */
typedef struct geo {
    int L;
    size_t row, V;
} geo;
static inline geo geometry(const deg_model *m)
{
    deg_model_info info;
    cr_assert_eq(deg_model_get_info(m, &info), DEG_OK);
    return (geo){info.n_layer, (size_t)info.n_head_kv * info.head_dim, (size_t)info.n_vocab};
}

/* The data of golden tensor name (shape product into *n if n). */
static inline const void *golden_tensor(dg_safetensors *st, const char *name, size_t *n)
{
    const dg_tensor_view *t = dg_safetensors_find(st, name);
    cr_assert_not_null(t, "golden tensor %s", name);
    size_t c = 1;
    for (int i = 0; i < t->n_dims; i++) c *= (size_t)t->shape[i];
    if (n) *n = c;
    return t->data;
}

/* max |a - b| / max |b|: a f32; b f64 (b64) or f32 (b32), the other NULL. */
static inline double rel_err_any(const float *a, const double *b64, const float *b32, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        double bi = b64 ? b64[i] : (double)b32[i];
        double e = fabs((double)a[i] - bi);
        if (!(e <= d)) d = e;
        if (fabs(bi) > m) m = fabs(bi);
    }
    return m > 0 ? d / m : d;
}
static inline double rel_err_fd(const float *a, const double *b, size_t n)
{
    return rel_err_any(a, b, NULL, n);
}
static inline double rel_err_ff(const float *a, const float *b, size_t n)
{
    return rel_err_any(a, NULL, b, n);
}

#endif
