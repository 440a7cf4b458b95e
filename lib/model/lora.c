/* LoRA adapters (include/lora.h): creation, flat parameters, fork selection
 * and the per-row forward/backward kernels of one adapted projection. */
#include "model/lora_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "model/arch.h"
#include "model/ops.h"
#include "model/sample.h"
#include "model/state.h"
#include "tensor/blas.h"

_Static_assert(DEG_LORA_ALL_RECURRENT == (DEG_LORA_REC_IN | DEG_LORA_REC_Z | DEG_LORA_REC_OUT),
               "DEG_LORA_ALL_RECURRENT is the three recurrent target bits");
_Static_assert(DG_LORA_ALL_BITS == (1u << DG_LORA_N_TARGETS) - 1,
               "one DEG_LORA_* bit per target of the layout");

deg_lora_params deg_lora_default_params(void)
{
    return (deg_lora_params){.rank = 8, .alpha = 16.0f, .targets = DEG_LORA_ALL,
                             .n_adapters = 1, .seed = 0};
}

/* Layer il's [out, in] per target, from its weights: q's out is the q
 * projection's rows (n_head * head_dim of the layer, or twice that for
 * qwen3_5's gated attention: q_proj gives q and the output gate; the adapter
 * adapts the projection whole, as peft does), o's in its columns; the MLP's
 * width is the layer's (Gemma 4's double-wide MLPs); the recurrent targets
 * are the architecture's (rec_lora_dims). A target the layer lacks gets its
 * model-wide shape (never allocated: has_target). */
static void target_dims(const deg_model *m, int il, size_t *in, size_t *out)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    size_t E = (size_t)hp->n_embd, QD = (size_t)hp->n_head * hp->head_dim;
    size_t KD = (size_t)hp->n_head_kv * hp->head_dim, F = (size_t)hp->n_ff;
    size_t QO = L->wq.rows ? (size_t)L->wq.rows : QD, OI = L->wo.cols ? (size_t)L->wo.cols : QD;
    size_t FG = L->w_gate.rows ? (size_t)L->w_gate.rows : F;
    size_t FD = L->w_down.cols ? (size_t)L->w_down.cols : F;
    if (L->kv_row) KD = L->kv_row;
    size_t i[DG_LORA_N_TARGETS] = {E, E, E, OI, E, E, FD};
    size_t o[DG_LORA_N_TARGETS] = {QO, KD, KD, E, FG, FG, E};
    for (int t = DG_LORA_REC_IN; t < DG_LORA_N_TARGETS; t++)
        if (m->arch->rec_lora_dims) m->arch->rec_lora_dims(m, t, &i[t], &o[t]);
    memcpy(in, i, sizeof i);
    memcpy(out, o, sizeof o);
}

/* 1 if layer il has target t's projection (a KV-sharing layer has no k/v;
 * a Gemma 4 full layer with V = K no v_proj). */
static int has_target(const deg_model *m, const deg_lora *l, int il, int t)
{
    const dg_layer *L = &m->layers[il];
    if (t == DG_LORA_Q || t == DG_LORA_O) return L->has_kv || L->kv_shared;
    if (t == DG_LORA_K) return L->has_kv;
    if (t == DG_LORA_V) return L->has_kv && L->wv.rows > 0;
    if (t <= DG_LORA_DOWN) return 1;
    return L->state_floats && dg_lora_out(l, il, t) > 0;
}

deg_status deg_lora_new(const deg_model *m, const deg_lora_params *p, deg_lora **out)
{
    if (!m || !p || !out) return dg_fail(DEG_ERR_ARG, "deg_lora_new: NULL argument");
    *out = NULL;
    if (p->rank < 1 || p->rank > DG_LORA_MAX_RANK || p->n_adapters < 1)
        return dg_fail(DEG_ERR_ARG, "deg_lora_new: need rank in [1, %d] (got %d) and "
                       "n_adapters >= 1 (got %d)", DG_LORA_MAX_RANK, (int)p->rank,
                       (int)p->n_adapters);
    if (p->targets == 0 || (p->targets & ~(uint32_t)DG_LORA_ALL_BITS))
        return dg_fail(DEG_ERR_ARG, "deg_lora_new: targets 0x%x: need a nonzero set of "
                       "DEG_LORA_* bits (0x7f = all attention/MLP, 0x380 = a hybrid's "
                       "recurrent projections)", (unsigned)p->targets);
    if (!isfinite(p->alpha))
        return dg_fail(DEG_ERR_ARG, "deg_lora_new: alpha is not finite");
    if (m->arch->forward_layer != dg_forward_std_layer && !m->arch->lora)
        return dg_fail(DEG_ERR_UNSUPPORTED, "deg_lora_new: architecture '%s' has no adapted "
                       "layer", m->arch->name);
    deg_lora *l = calloc(1, sizeof *l);
    size_t NL = (size_t)m->hp.n_layer, NA = (size_t)p->n_adapters, r = (size_t)p->rank;
    if (!l) return dg_fail(DEG_ERR_NOMEM, "deg_lora_new: out of memory");
    l->model = m;
    l->p = *p;
    l->scale = p->alpha / (float)p->rank;
    l->off = malloc(NA * NL * DG_LORA_N_TARGETS * sizeof *l->off);
    l->in = malloc(NL * DG_LORA_N_TARGETS * sizeof *l->in);
    l->out = malloc(NL * DG_LORA_N_TARGETS * sizeof *l->out);
    if (!l->off || !l->in || !l->out) {
        deg_lora_free(l);
        return dg_fail(DEG_ERR_NOMEM, "deg_lora_new: out of memory");
    }
    for (size_t il = 0; il < NL; il++)
        target_dims(m, (int)il, l->in + il * DG_LORA_N_TARGETS, l->out + il * DG_LORA_N_TARGETS);
    size_t n = 0;
    for (size_t a = 0; a < NA; a++)
        for (size_t il = 0; il < NL; il++)
            for (int t = 0; t < DG_LORA_N_TARGETS; t++) {
                size_t *o = &l->off[(a * NL + il) * DG_LORA_N_TARGETS + (size_t)t];
                int on = (p->targets >> t) & 1 && has_target(m, l, (int)il, t);
                *o = on ? n : (size_t)-1;
                if (*o != (size_t)-1)
                    n += r * (dg_lora_in(l, (int)il, t) + dg_lora_out(l, (int)il, t));
            }
    l->n_params = n;
    if (n == 0) {
        deg_lora_free(l);
        return dg_fail(DEG_ERR_ARG, "deg_lora_new: targets 0x%x: no layer of '%s' has those "
                       "projections", (unsigned)p->targets, m->arch->name);
    }
    l->data = calloc(n, sizeof(float));
    if (!l->data) {
        deg_lora_free(l);
        return dg_fail(DEG_ERR_NOMEM, "deg_lora_new: cannot allocate %zu parameters", n);
    }
    /* A ~ U(-1/sqrt(in), 1/sqrt(in)) in layout order; B = 0. */
    dg_rng rng;
    dg_rng_seed(&rng, p->seed);
    for (size_t i = 0; i < NA * NL * DG_LORA_N_TARGETS; i++) {
        int t = (int)(i % DG_LORA_N_TARGETS), il = (int)(i / DG_LORA_N_TARGETS % NL);
        if (l->off[i] == (size_t)-1) continue;
        size_t in = dg_lora_in(l, il, t);
        double bound = 1.0 / sqrt((double)in);
        float *A = l->data + l->off[i];
        for (size_t j = 0; j < r * in; j++)
            A[j] = (float)((2.0 * dg_rng_uniform(&rng) - 1.0) * bound);
    }
    *out = l;
    return DEG_OK;
}

void deg_lora_free(deg_lora *l)
{
    if (!l) return;
    free(l->off);
    free(l->in);
    free(l->out);
    free(l->data);
    free(l);
}

deg_lora_params deg_lora_get_config(const deg_lora *l)
{
    return l ? l->p : deg_lora_default_params();
}

size_t deg_lora_n_params(const deg_lora *l) { return l ? l->n_params : 0; }

deg_status deg_lora_get_params(const deg_lora *l, float *out, size_t n)
{
    if (!l || (n && !out)) return dg_fail(DEG_ERR_ARG, "deg_lora_get_params: NULL argument");
    if (n != l->n_params)
        return dg_fail(DEG_ERR_ARG, "deg_lora_get_params: n = %zu, the adapters have %zu "
                       "parameters", n, l->n_params);
    memcpy(out, l->data, n * sizeof(float));
    return DEG_OK;
}

deg_status deg_lora_set_params(deg_lora *l, const float *in, size_t n)
{
    if (!l || (n && !in)) return dg_fail(DEG_ERR_ARG, "deg_lora_set_params: NULL argument");
    if (n != l->n_params)
        return dg_fail(DEG_ERR_ARG, "deg_lora_set_params: n = %zu, the adapters have %zu "
                       "parameters", n, l->n_params);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(in[i]))
            return dg_fail(DEG_ERR_NUMERIC, "deg_lora_set_params: parameter %zu is %g; nothing "
                           "was changed", i, (double)in[i]);
    memcpy(l->data, in, n * sizeof(float));
    return DEG_OK;
}

size_t dg_lora_offset(const deg_lora *l, int a, int il, int t)
{
    return l->off[((size_t)a * (size_t)l->model->hp.n_layer + (size_t)il) * DG_LORA_N_TARGETS +
                  (size_t)t];
}

const float *dg_lora_A(const deg_lora *l, int a, int il, int t)
{
    size_t o = dg_lora_offset(l, a, il, t);
    return o == (size_t)-1 ? NULL : l->data + o;
}

deg_status deg_fork_set_adapter(deg_fork *f, const deg_lora *l, int32_t adapter)
{
    if (!f) return dg_fail(DEG_ERR_ARG, "deg_fork_set_adapter: NULL fork");
    if (!l || adapter == -1) {
        f->lora = NULL;
        f->adapter = -1;
        return DEG_OK;
    }
    if (l->model != f->trunk->model)
        return dg_fail(DEG_ERR_MISMATCH, "deg_fork_set_adapter: the adapters belong to another "
                       "model than the fork");
    if (adapter < -1 || adapter >= l->p.n_adapters)
        return dg_fail(DEG_ERR_ARG, "deg_fork_set_adapter: adapter %d outside [-1, %d)",
                       (int)adapter, (int)l->p.n_adapters);
    f->lora = l;
    f->adapter = adapter;
    return DEG_OK;
}

/* ------------------------------------------------------------ kernels */

void dg_lora_rows(float *y, size_t ldy, const float *x, size_t ldx, size_t n, const float *A,
                  const float *B, int r, size_t in, size_t out, float scale)
{
    for (size_t i = 0; i < n; i++) {
        float u[DG_LORA_MAX_RANK];
        const float *xi = x + i * ldx;
        float *yi = y + i * ldy;
        for (int j = 0; j < r; j++) u[j] = dg_dot(A + (size_t)j * in, xi, in);
        for (size_t o = 0; o < out; o++) yi[o] += scale * dg_dot(B + o * (size_t)r, u, (size_t)r);
    }
}

void dg_lora_rows_backward(float *dA, float *dB, float *dx, size_t lddx, const float *dy,
                           size_t ldy, const float *x, size_t ldx, size_t n, const float *A,
                           const float *B, int r, size_t in, size_t out, float scale)
{
    float u[DG_LORA_MAX_RANK], du[DG_LORA_MAX_RANK];
    for (size_t i = 0; i < n; i++) {
        const float *xi = x + i * ldx, *gi = dy + i * ldy;
        for (int j = 0; j < r; j++) {
            u[j] = dg_dot(A + (size_t)j * in, xi, in);
            du[j] = 0.0f;
        }
        for (size_t o = 0; o < out; o++) {
            float g = scale * gi[o];
            const float *Bo = B + o * (size_t)r;
            float *dBo = dB + o * (size_t)r;
            for (int j = 0; j < r; j++) {
                dBo[j] += g * u[j];
                du[j] += g * Bo[j];
            }
        }
        for (int j = 0; j < r; j++) dg_axpy(dA + (size_t)j * in, du[j], xi, in);
        if (dx)
            for (int j = 0; j < r; j++) dg_axpy(dx + i * lddx, du[j], A + (size_t)j * in, in);
    }
}
