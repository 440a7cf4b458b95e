/* Trunk and fork (include/deg.h): the public calls that validate input and
 * run dg_forward over their states (state.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "model/arch.h"
#include "model/state.h"

static deg_status check_ids(const deg_model *m, const int32_t *ids, size_t n, const char *where)
{
    if (n && !ids) return dg_fail(DEG_ERR_ARG, "%s: ids is NULL with %zu tokens", where, n);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->hp.n_vocab)
            return dg_fail(DEG_ERR_RANGE, "%s: token id %d at index %zu is outside [0, %d)",
                           where, (int)ids[i], i, (int)m->hp.n_vocab);
    return DEG_OK;
}

/* ---------------------------------------------------------------- trunk */

deg_status deg_trunk_new(const deg_model *model, deg_trunk **out)
{
    if (!model || !out) return dg_fail(DEG_ERR_ARG, "deg_trunk_new: NULL argument");
    *out = NULL;
    deg_trunk *t = calloc(1, sizeof *t);
    if (!t) return dg_fail(DEG_ERR_NOMEM, "deg_trunk_new: out of memory");
    t->model = model;
    t->last_hidden = malloc(sizeof(float) * (size_t)model->hp.n_embd);
    deg_status st = t->last_hidden ? dg_state_init(&t->st, model)
                                   : dg_fail(DEG_ERR_NOMEM, "deg_trunk_new: out of memory");
    if (st != DEG_OK) {
        free(t->last_hidden);
        free(t);
        return st;
    }
    *out = t;
    return DEG_OK;
}

void deg_trunk_free(deg_trunk *trunk)
{
    if (!trunk) return;
    dg_state_free(&trunk->st);
    free(trunk->last_hidden);
    free(trunk);
}

/* deg_trunk_prefill, with the final-norm hidden states of the new tokens written to
 * hidden [n_ids, n_embd] when it is not NULL. */
static deg_status trunk_prefill(deg_trunk *trunk, const int32_t *ids, size_t n_ids,
                                float *logits, float *last_logits, float *hidden)
{
    if (!trunk) return dg_fail(DEG_ERR_ARG, "deg_trunk_prefill: trunk is NULL");
    if (trunk->n_forks)
        return dg_fail(DEG_ERR_STATE,
                       "deg_trunk_prefill: the trunk has %zu live fork(s); free them before "
                       "extending it", trunk->n_forks);
    DG_TRY(check_ids(trunk->model, ids, n_ids, "deg_trunk_prefill"));
    if (n_ids == 0) return DEG_OK;
    dg_row row = {.prefix = NULL, .own = &trunk->st, .ids = ids, .n = n_ids,
                  .logits = logits, .last_logits = last_logits, .hidden = hidden,
                  .last_hidden = trunk->last_hidden};
    return dg_forward(trunk->model, &row, 1);
}

deg_status deg_trunk_prefill(deg_trunk *trunk, const int32_t *ids, size_t n_ids, float *logits,
                             float *last_logits)
{
    return trunk_prefill(trunk, ids, n_ids, logits, last_logits, NULL);
}

deg_status dg_trunk_prefill_hidden(deg_trunk *trunk, const int32_t *ids, size_t n_ids,
                                   float *hidden)
{
    return trunk_prefill(trunk, ids, n_ids, NULL, NULL, hidden);
}

void dg_trunk_get_kv(const deg_trunk *trunk, int il, size_t first, size_t n, float *k,
                     float *v)
{
    dg_state_get_kv(&trunk->st, il, first, n, k, v);
}

deg_status dg_trunk_set_kv(deg_trunk *trunk, size_t len,
                           void (*put)(void *ud, int il, float *k, float *v), void *ud)
{
    if (trunk->st.len || trunk->n_forks)
        return dg_fail(DEG_ERR_STATE, "dg_trunk_set_kv: the trunk is not empty");
    DG_TRY(dg_state_reserve(&trunk->st, len));
    for (int il = 0; il < trunk->st.n_layer; il++)
        if (trunk->st.has_kv[il]) put(ud, il, trunk->st.k[il], trunk->st.v[il]);
    trunk->st.len = len;
    for (int i = 0; i < trunk->model->hp.n_embd; i++) trunk->last_hidden[i] = NAN;
    return DEG_OK;
}

dg_trunk_view dg_trunk_view_of(const deg_trunk *trunk)
{
    return (dg_trunk_view){.model = trunk->model, .len = trunk->st.len,
                           .k = (const float *const *)trunk->st.k,
                           .v = (const float *const *)trunk->st.v,
                           .rec = (const float *const *)trunk->st.rec};
}

void dg_trunk_get_rec(const deg_trunk *trunk, int il, float *out)
{
    memcpy(out, trunk->st.rec[il], sizeof(float) * trunk->st.rec_n[il]);
}

void dg_trunk_set_rec(deg_trunk *trunk, int il, const float *in)
{
    memcpy(trunk->st.rec[il], in, sizeof(float) * trunk->st.rec_n[il]);
}

size_t deg_trunk_len(const deg_trunk *trunk) { return trunk ? trunk->st.len : 0; }

deg_status dg_trunk_clone(const deg_trunk *src, deg_trunk **out)
{
    DG_TRY(deg_trunk_new(src->model, out));
    deg_trunk *t = *out;
    const dg_state *s = &src->st;
    deg_status st = dg_state_reserve(&t->st, s->len);
    if (st != DEG_OK) {
        deg_trunk_free(t);
        *out = NULL;
        return st;
    }
    for (int il = 0; il < s->n_layer; il++)
        if (s->has_kv[il] && s->len) dg_state_put_kv(&t->st, il, 0, s->len, s->k[il], s->v[il]);
    dg_state_copy_fixed(&t->st, s);
    t->st.len = s->len;
    memcpy(t->last_hidden, src->last_hidden, sizeof(float) * (size_t)src->model->hp.n_embd);
    return DEG_OK;
}

/* ----------------------------------------------------------------- fork */

deg_status deg_fork_new(deg_trunk *trunk, deg_fork **out)
{
    if (!trunk || !out) return dg_fail(DEG_ERR_ARG, "deg_fork_new: NULL argument");
    *out = NULL;
    const deg_model *m = trunk->model;
    deg_fork *f = calloc(1, sizeof *f);
    if (!f) return dg_fail(DEG_ERR_NOMEM, "deg_fork_new: out of memory");
    f->trunk = trunk;
    f->adapter = -1;
    f->last_logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    deg_status st = f->last_logits ? dg_state_init(&f->st, m)
                                   : dg_fail(DEG_ERR_NOMEM, "deg_fork_new: out of memory");
    if (st != DEG_OK) {
        free(f->last_logits);
        free(f);
        return st;
    }
    dg_state_copy_fixed(&f->st, &trunk->st);
    trunk->n_forks++;
    *out = f;
    return DEG_OK;
}

void deg_fork_free(deg_fork *fork)
{
    if (!fork) return;
    fork->trunk->n_forks--;
    dg_state_free(&fork->st);
    free(fork->hidden);
    free(fork->last_logits);
    free(fork);
}

size_t deg_fork_len(const deg_fork *fork) { return fork ? fork->st.len : 0; }

static deg_status reserve_hidden(deg_fork *f, size_t n)
{
    if (n <= f->hidden_cap) return DEG_OK;
    size_t cap = dg_grow_cap(f->hidden_cap, n);
    deg_status st = dg_resize(&f->hidden, cap, (size_t)f->trunk->model->hp.n_embd * sizeof(float));
    if (st != DEG_OK) return dg_fail_context(st, "fork: hidden states of %zu rows", cap);
    f->hidden_cap = cap;
    return DEG_OK;
}

deg_status deg_forks_feed(deg_fork *const *forks, size_t n_forks, const int32_t *const *ids,
                          const size_t *n_ids, float *const *logits)
{
    if (n_forks == 0) return DEG_OK;
    if (!forks || !ids || !n_ids)
        return dg_fail(DEG_ERR_ARG, "deg_forks_feed: NULL forks, ids or n_ids");
    if (!forks[0]) return dg_fail(DEG_ERR_ARG, "deg_forks_feed: fork 0 is NULL");
    const deg_model *m = forks[0]->trunk->model;
    for (size_t i = 0; i < n_forks; i++) {
        if (!forks[i]) return dg_fail(DEG_ERR_ARG, "deg_forks_feed: fork %zu is NULL", i);
        if (forks[i]->trunk->model != m)
            return dg_fail(DEG_ERR_ARG, "deg_forks_feed: fork %zu belongs to another model", i);
        for (size_t j = 0; j < i; j++)
            if (forks[j] == forks[i])
                return dg_fail(DEG_ERR_ARG, "deg_forks_feed: fork %zu is also row %zu", i, j);
        char where[64];
        snprintf(where, sizeof where, "deg_forks_feed: row %zu", i);
        DG_TRY(check_ids(m, ids[i], n_ids[i], where));
    }
    dg_row *rows = calloc(n_forks, sizeof *rows);
    if (!rows) return dg_fail(DEG_ERR_NOMEM, "deg_forks_feed: out of memory");
    deg_status st = DEG_OK;
    for (size_t i = 0; i < n_forks && st == DEG_OK; i++) {
        deg_fork *f = forks[i];
        st = reserve_hidden(f, f->st.len + n_ids[i]);
        size_t E = (size_t)m->hp.n_embd;
        rows[i] = (dg_row){.prefix = &f->trunk->st, .own = &f->st, .ids = ids[i],
                           .n = n_ids[i], .logits = logits ? logits[i] : NULL,
                           .hidden = f->hidden + f->st.len * E, .lora = f->lora,
                           .adapter = f->adapter};
    }
    if (st == DEG_OK) st = dg_forward(m, rows, n_forks);
    if (st == DEG_OK) {
        size_t V = (size_t)m->hp.n_vocab;
        for (size_t i = 0; i < n_forks; i++) {
            if (!n_ids[i]) continue;
            deg_fork *f = forks[i];
            if (rows[i].logits) {
                memcpy(f->last_logits, rows[i].logits + (n_ids[i] - 1) * V, sizeof(float) * V);
                f->has_last_logits = 1;
            } else {
                f->has_last_logits = 0;
            }
        }
    }
    free(rows);
    return st;
}

deg_status deg_fork_feed(deg_fork *fork, const int32_t *ids, size_t n_ids, float *logits)
{
    return deg_forks_feed(&fork, 1, &ids, &n_ids, logits ? &logits : NULL);
}

deg_status deg_fork_logits(const deg_fork *fork, float *logits)
{
    if (!fork || !logits) return dg_fail(DEG_ERR_ARG, "deg_fork_logits: NULL argument");
    const deg_model *m = fork->trunk->model;
    size_t E = (size_t)m->hp.n_embd, V = (size_t)m->hp.n_vocab;
    if (fork->st.len) {
        if (fork->has_last_logits) {
            memcpy(logits, fork->last_logits, sizeof(float) * V);
            return DEG_OK;
        }
        return dg_lm_head(m, fork->hidden + (fork->st.len - 1) * E, 1, logits);
    }
    if (fork->trunk->st.len) return dg_lm_head(m, fork->trunk->last_hidden, 1, logits);
    return dg_fail(DEG_ERR_STATE, "deg_fork_logits: neither the fork nor its trunk has tokens");
}

deg_status deg_fork_hidden(const deg_fork *fork, size_t first, size_t n, float *hidden)
{
    if (!fork || (n && !hidden)) return dg_fail(DEG_ERR_ARG, "deg_fork_hidden: NULL argument");
    if (first > fork->st.len || n > fork->st.len - first)
        return dg_fail(DEG_ERR_RANGE, "deg_fork_hidden: tokens [%zu, %zu) outside the %zu fed",
                       first, first + n, fork->st.len);
    size_t E = (size_t)fork->trunk->model->hp.n_embd;
    if (n) memcpy(hidden, fork->hidden + first * E, sizeof(float) * E * n);
    return DEG_OK;
}

deg_status deg_fork_truncate(deg_fork *fork, size_t n)
{
    if (!fork) return dg_fail(DEG_ERR_ARG, "deg_fork_truncate: fork is NULL");
    if (n > fork->st.len)
        return dg_fail(DEG_ERR_RANGE, "deg_fork_truncate: %zu tokens asked, the fork has %zu",
                       n, fork->st.len);
    if (n == fork->st.len) return DEG_OK;
    if (dg_model_has_recurrent(fork->trunk->model))
        return dg_fail(DEG_ERR_UNSUPPORTED, "deg_fork_truncate: the model has recurrent layers, "
                       "whose state is updated in place and cannot be rewound");
    /* K/V rows [n, len) become free space: the next feed overwrites them;
     * the last-logits cache described the dropped last token */
    fork->st.len = n;
    fork->has_last_logits = 0;
    return DEG_OK;
}
