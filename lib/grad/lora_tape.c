/* LoRA training tape (include/lora.h): fork rows over a frozen trunk, forward
 * with their adapters through the training driver (the inference layer), and
 * the backward from gradients at the rows' final-norm hidden states into the
 * adapters' parameters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "model/ops_bwd.h"
#include "grad/train.h"
#include "model/arch.h"
#include "model/layer.h"
#include "model/lora_internal.h"
#include "model/state.h"

struct deg_lora_tape {
    const deg_lora *lora;
    const deg_model *m;
    dg_train_args args;
    int32_t *ids;          /* [T] rows concatenated */
    size_t *lens, *start;  /* [n_rows] */
    int32_t *adapters;     /* [n_rows] */
    size_t n_rows;
    float *grad;           /* [n_params] the backward's gradient (args.dlora) */
    dg_train_state *st;
    int used;
};

void deg_lora_tape_free(deg_lora_tape *t)
{
    if (!t) return;
    dg_train_state_free(t->st);
    free(t->ids);
    free(t->lens);
    free(t->start);
    free(t->adapters);
    free(t->grad);
    free(t);
}

static deg_status check_rows(const deg_lora *l, const deg_trunk *trunk, const int32_t *const *ids,
                             const size_t *n_ids, const int32_t *adapters, size_t n_rows,
                             size_t *total)
{
    const char *w = "deg_lora_tape_forward";
    if (!l || !trunk || !ids || !n_ids || !adapters)
        return dg_fail(DEG_ERR_ARG, "%s: NULL argument", w);
    if (n_rows == 0) return dg_fail(DEG_ERR_ARG, "%s: no rows", w);
    dg_trunk_view tv = dg_trunk_view_of(trunk);
    if (tv.model != l->model)
        return dg_fail(DEG_ERR_MISMATCH, "%s: the trunk belongs to another model than the "
                       "adapters", w);
    if (tv.len == 0) return dg_fail(DEG_ERR_STATE, "%s: the trunk is empty", w);
    int32_t V = l->model->hp.n_vocab;
    *total = 0;
    for (size_t r = 0; r < n_rows; r++) {
        if (n_ids[r] == 0 || !ids[r])
            return dg_fail(DEG_ERR_ARG, "%s: row %zu is empty or NULL", w, r);
        if (adapters[r] < -1 || adapters[r] >= l->p.n_adapters)
            return dg_fail(DEG_ERR_ARG, "%s: row %zu: adapter %d outside [-1, %d)", w, r,
                           (int)adapters[r], (int)l->p.n_adapters);
        for (size_t i = 0; i < n_ids[r]; i++)
            if (ids[r][i] < 0 || ids[r][i] >= V)
                return dg_fail(DEG_ERR_RANGE, "%s: row %zu, token %zu: id %d outside [0, %d)", w,
                               r, i, (int)ids[r][i], (int)V);
        *total += n_ids[r];
    }
    return DEG_OK;
}

deg_status deg_lora_tape_forward(const deg_lora *l, const deg_trunk *trunk,
                                 const int32_t *const *ids, const size_t *n_ids,
                                 const int32_t *adapters, size_t n_rows, int checkpoint,
                                 deg_lora_tape **out)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_lora_tape_forward: NULL out");
    *out = NULL;
    size_t T = 0;
    DG_TRY(check_rows(l, trunk, ids, n_ids, adapters, n_rows, &T));
    deg_lora_tape *t = calloc(1, sizeof *t);
    if (!t) return dg_fail(DEG_ERR_NOMEM, "deg_lora_tape_forward: out of memory");
    t->lora = l;
    t->m = l->model;
    t->n_rows = n_rows;
    t->ids = malloc(T * sizeof *t->ids);
    t->lens = malloc(n_rows * sizeof *t->lens);
    t->start = malloc(n_rows * sizeof *t->start);
    t->adapters = malloc(n_rows * sizeof *t->adapters);
    t->grad = calloc(l->n_params ? l->n_params : 1, sizeof(float));
    if (!t->ids || !t->lens || !t->start || !t->adapters || !t->grad) {
        deg_lora_tape_free(t);
        return dg_fail(DEG_ERR_NOMEM, "deg_lora_tape_forward: out of memory");
    }
    for (size_t r = 0, o = 0; r < n_rows; r++) {
        memcpy(t->ids + o, ids[r], n_ids[r] * sizeof(int32_t));
        t->lens[r] = n_ids[r];
        t->start[r] = o;
        t->adapters[r] = adapters[r];
        o += n_ids[r];
    }
    /* the trunk's K/V and recurrent blocks as the prefix, by reference */
    const dg_trunk_view tv = dg_trunk_view_of(trunk);
    t->args = (dg_train_args){.pk = tv.k, .pv = tv.v, .P = tv.len, .prec = tv.rec,
                              .ids = t->ids, .T = T, .checkpoint = checkpoint,
                              .seg_lens = t->lens, .n_segs = n_rows, .lora = l,
                              .seg_adapters = t->adapters, .dlora = t->grad};
    deg_status st = dg_train_forward(t->m, &t->args, &t->st);
    if (st != DEG_OK) {
        deg_lora_tape_free(t);
        return st;
    }
    *out = t;
    return DEG_OK;
}

static deg_status token_index(const deg_lora_tape *t, size_t row, size_t pos, size_t *ti,
                              const char *w)
{
    if (row >= t->n_rows)
        return dg_fail(DEG_ERR_RANGE, "%s: row %zu outside [0, %zu)", w, row, t->n_rows);
    if (pos >= t->lens[row])
        return dg_fail(DEG_ERR_RANGE, "%s: token %zu outside row %zu's %zu tokens", w, pos, row,
                       t->lens[row]);
    *ti = t->start[row] + pos;
    return DEG_OK;
}

deg_status deg_lora_tape_hidden(const deg_lora_tape *t, size_t row, size_t first, size_t n,
                                float *hidden)
{
    const char *w = "deg_lora_tape_hidden";
    if (!t || (n && !hidden)) return dg_fail(DEG_ERR_ARG, "%s: NULL argument", w);
    if (t->used) return dg_fail(DEG_ERR_STATE, "%s: the tape's backward has run", w);
    if (n == 0) return DEG_OK;
    size_t t0 = 0, t1 = 0;
    DG_TRY(token_index(t, row, first, &t0, w));
    DG_TRY(token_index(t, row, first + n - 1, &t1, w));
    const dg_hparams *hp = &t->m->hp;
    size_t E = (size_t)hp->n_embd;
    dg_rmsnorm_rows(hidden, dg_train_final(t->st) + t0 * E, t->m->out_norm, n, E, hp->rms_eps);
    return DEG_OK;
}

deg_status deg_lora_tape_backward(deg_lora_tape *t, size_t n_grads, const size_t *rows,
                                  const size_t *pos, const float *dhidden, float *grad,
                                  size_t n_grad)
{
    const char *w = "deg_lora_tape_backward";
    if (!t || !grad || (n_grads && (!rows || !pos || !dhidden)))
        return dg_fail(DEG_ERR_ARG, "%s: NULL argument", w);
    if (t->used) return dg_fail(DEG_ERR_ARG, "%s: called twice on one tape", w);
    if (n_grad != t->lora->n_params)
        return dg_fail(DEG_ERR_ARG, "%s: n_grad = %zu, the adapters have %zu parameters", w,
                       n_grad, t->lora->n_params);
    size_t E = (size_t)t->m->hp.n_embd, T = t->args.T;
    for (size_t g = 0; g < n_grads; g++) {
        size_t ti;
        DG_TRY(token_index(t, rows[g], pos[g], &ti, w));
    }
    float *dx = calloc(T * E, sizeof(float));
    if (!dx) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", w);
    const float *x = dg_train_final(t->st);
    for (size_t g = 0; g < n_grads; g++) {
        size_t ti = t->start[rows[g]] + pos[g];
        dg_rmsnorm_backward(dx + ti * E, dhidden + g * E, x + ti * E, t->m->out_norm, 1, E,
                            t->m->hp.rms_eps, 1);
    }
    t->used = 1;
    deg_status st = dg_train_backward(t->st, dx);
    free(dx);
    if (st == DEG_OK)
        for (size_t i = 0; i < n_grad; i++) grad[i] += t->grad[i];
    return st;
}
