/* deg_train_loss_grad / deg_train_logits (deg.h "Training"): the §12.4
 * losses of a batch of examples over cached features, through the gradient
 * functions of heads_grad.c, with the gradient in the checkpoint's flat
 * parameter layout. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "deg/anchor.h"
#include "deg/fill.h"
#include "deg/heads_grad.h"

/* Weight slot of a loss kind (EXTRACT_ANCHORED is an extract item). */
static int slot_of(int kind)
{
    return kind == DEG_HEAD_EXTRACT_ANCHORED ? DEG_HEAD_EXTRACT : kind;
}

static deg_status check_example(const dg_ckpt *k, const deg_train_example *x, size_t i)
{
    if (!x->answer) return dg_fail(DEG_ERR_ARG, "example %zu: answer is NULL", i);
    switch (x->kind) {
    case DEG_HEAD_CHOICE:
    case DEG_HEAD_SCORE: {
        if (!x->rows || x->n_rows < 1 || !x->target)
            return dg_fail(DEG_ERR_ARG, "example %zu: a pointer example needs rows (n_rows >= "
                           "1) and a target", i);
        double s = 0;
        for (size_t j = 0; j < x->n_rows; j++) {
            if (!(x->target[j] >= 0) || !isfinite(x->target[j]))
                return dg_fail(DEG_ERR_ARG, "example %zu: target[%zu] is not a probability", i, j);
            s += x->target[j];
        }
        if (fabs(s - 1.0) > 1e-6)
            return dg_fail(DEG_ERR_ARG, "example %zu: target sums to %.9g, not 1", i, s);
        return DEG_OK;
    }
    case DEG_HEAD_NOUL:
        if (!x->target || !(x->target[0] >= 0 && x->target[0] <= 1))
            return dg_fail(DEG_ERR_ARG, "example %zu: noul target must be p(true) in [0, 1]", i);
        return DEG_OK;
    case DEG_HEAD_ANCHOR:
        if (!x->rows || x->n_rows < 1 || (x->n_start && !x->pos_start))
            return dg_fail(DEG_ERR_ARG, "example %zu: an anchor example needs the region's rows "
                           "(n_rows >= 1) and pos_start when n_start > 0", i);
        for (size_t j = 0; j < x->n_start; j++)
            if (x->pos_start[j] < 0 || (size_t)x->pos_start[j] >= x->n_rows)
                return dg_fail(DEG_ERR_ARG, "example %zu: anchor start %d outside the region "
                               "[0, %zu)", i, x->pos_start[j], x->n_rows);
        return DEG_OK;
    case DEG_HEAD_EXTRACT_ANCHORED:
        if (!(0 <= x->lo && x->lo < x->hi && (size_t)x->hi <= x->n_rows))
            return dg_fail(DEG_ERR_ARG, "example %zu: anchored extract needs 0 <= anchor (lo = %d) "
                           "< region end (hi = %d) <= n_rows (%zu)", i, x->lo, x->hi, x->n_rows);
        /* fall through */
    case DEG_HEAD_EXTRACT:
        if (!x->rows && x->n_rows)
            return dg_fail(DEG_ERR_ARG, "example %zu: extract rows is NULL", i);
        if (!x->n_start || !x->n_end || !x->pos_start || !x->pos_end)
            return dg_fail(DEG_ERR_ARG, "example %zu: extract needs >= 1 start and end positive "
                           "(n_rows = null)", i);
        for (size_t j = 0; j < x->n_start + x->n_end; j++) {
            int32_t p = j < x->n_start ? x->pos_start[j] : x->pos_end[j - x->n_start];
            if (p < 0 || (size_t)p > x->n_rows)
                return dg_fail(DEG_ERR_ARG, "example %zu: extract positive %d outside [0, %zu]",
                               i, p, x->n_rows);
        }
        return DEG_OK;
    case DEG_HEAD_COUNT:
    case DEG_HEAD_ANCHOR_COUNT:
        if (!(0 <= x->lo && x->lo <= x->count && x->count <= x->hi && x->hi <= DG_COUNT_MAX))
            return dg_fail(DEG_ERR_ARG, "example %zu: count needs 0 <= lo (%d) <= count (%d) <= "
                           "hi (%d) <= %d", i, x->lo, x->count, x->hi, DG_COUNT_MAX);
        return DEG_OK;
    default:
        (void)k;
        return dg_fail(DEG_ERR_ARG, "example %zu: unknown head kind %d", i, x->kind);
    }
}

/* Gradient groups: each touches only its own tensors, so they run in
 * parallel. EXTRACT_ANCHORED joins the extract group (it also owns
 * anchor.bias), ANCHOR_COUNT the count group (through its own buffer, scaled
 * by its own weight). */
enum { GR_CHOICE, GR_SCORE, GR_NOUL, GR_EXTRACT, GR_COUNT, GR_ANCHOR, GR_N };

static int group_of(int kind)
{
    switch (kind) {
    case DEG_HEAD_EXTRACT_ANCHORED: return GR_EXTRACT;
    case DEG_HEAD_ANCHOR_COUNT: return GR_COUNT;
    case DEG_HEAD_ANCHOR: return GR_ANCHOR;
    default: return kind;
    }
}

/* Flat-layout views: the gradient buffer bound like ckpt->h binds the store,
 * and each group's [begin, end) ranges (the table keeps a kind's tensors
 * together: choice, score, noul, extract, count, then anchor q, k, u, b, and
 * anchor.bias last, which belongs to the extract group). */
static void bind_grad(const dg_ckpt *k, float *g, dg_heads_grad *o, size_t range[][2][2])
{
    const dg_heads *h = &k->h;
#define OFF(p) ((size_t)((p) - k->store))
    o->choice_q = g + OFF(h->choice_q); o->choice_k = g + OFF(h->choice_k);
    o->choice_u = g + OFF(h->choice_u);
    o->score_q = g + OFF(h->score_q); o->score_k = g + OFF(h->score_k);
    o->score_u = g + OFF(h->score_u);
    o->noul_w = g + OFF(h->noul_w); o->noul_b = g + OFF(h->noul_b);
    o->ext_qs = g + OFF(h->ext_qs); o->ext_ks = g + OFF(h->ext_ks);
    o->ext_qe = g + OFF(h->ext_qe); o->ext_ke = g + OFF(h->ext_ke);
    o->ext_null_w = g + OFF(h->ext_null_w); o->ext_null_b = g + OFF(h->ext_null_b);
    o->count_w = g + OFF(h->count_w); o->count_b = g + OFF(h->count_b);
    o->anchor_q = g + OFF(h->anchor_q); o->anchor_k = g + OFF(h->anchor_k);
    o->anchor_u = g + OFF(h->anchor_u); o->anchor_b = g + OFF(h->anchor_b);
    o->anchor_bias = g + OFF(h->anchor_bias);
    const size_t b[GR_N + 1] = {OFF(h->choice_q), OFF(h->score_q), OFF(h->noul_w),
                                OFF(h->ext_qs), OFF(h->count_w), OFF(h->anchor_q),
                                OFF(h->anchor_bias)};
    size_t end_bias = OFF(h->anchor_bias) + 4 * DG_ANCHOR_BUCKETS;
#undef OFF
    for (int i = 0; i < GR_N; i++) {
        range[i][0][0] = b[i];
        range[i][0][1] = b[i + 1];
        range[i][1][0] = range[i][1][1] = 0;
    }
    range[GR_EXTRACT][1][0] = b[GR_N];
    range[GR_EXTRACT][1][1] = end_bias;
}

static double example_loss(const dg_ckpt *k, dg_heads_grad *g, const deg_train_example *x)
{
    switch (x->kind) {
    case DEG_HEAD_CHOICE:
    case DEG_HEAD_SCORE:
        return dg_grad_pointer(&k->h, g, x->kind == DEG_HEAD_SCORE, x->answer, x->rows,
                               x->n_rows, x->target);
    case DEG_HEAD_NOUL: return dg_grad_noul(&k->h, g, x->answer, x->target[0]);
    case DEG_HEAD_EXTRACT:
    case DEG_HEAD_EXTRACT_ANCHORED: {
        size_t *ps = malloc((x->n_start + x->n_end) * sizeof *ps);
        if (!ps) return NAN;
        for (size_t j = 0; j < x->n_start; j++) ps[j] = (size_t)x->pos_start[j];
        for (size_t j = 0; j < x->n_end; j++) ps[x->n_start + j] = (size_t)x->pos_end[j];
        double l = x->kind == DEG_HEAD_EXTRACT
                       ? dg_grad_extract(&k->h, g, x->answer, x->rows, x->n_rows, ps, x->n_start,
                                         ps + x->n_start, x->n_end)
                       : dg_grad_extract_anchored(&k->h, g, x->answer, x->rows, x->n_rows,
                                                  (size_t)x->lo, (size_t)x->hi, ps, x->n_start,
                                                  ps + x->n_start, x->n_end);
        free(ps);
        return l;
    }
    case DEG_HEAD_ANCHOR: {
        size_t *ps = malloc((x->n_start ? x->n_start : 1) * sizeof *ps);
        if (!ps) return NAN;
        for (size_t j = 0; j < x->n_start; j++) ps[j] = (size_t)x->pos_start[j];
        double l = dg_grad_anchor(&k->h, g, x->answer, x->rows, 0, x->n_rows, ps, x->n_start);
        free(ps);
        return l;
    }
    default: return dg_grad_count(&k->h, g, x->answer, x->lo, x->hi, x->count);
    }
}

/* Example i's loss into ls[i] with its hidden-state gradients (if wanted)
 * zeroed, accumulated and scaled by its weight w. */
static void one_example(const dg_ckpt *k, const dg_heads_grad *g, const deg_train_example *x,
                        float *da, float *dr, float w, double *ls)
{
    dg_heads_grad gi = *g;
    size_t E = (size_t)k->h.E;
    int pointer = x->kind == DEG_HEAD_CHOICE || x->kind == DEG_HEAD_SCORE;
    gi.d_answer = da;
    gi.d_rows = pointer ? dr : NULL;
    if (da) memset(da, 0, E * sizeof *da);
    if (gi.d_rows) memset(dr, 0, x->n_rows * E * sizeof *dr);
    *ls = example_loss(k, &gi, x);
    for (size_t e = 0; da && e < E; e++) da[e] *= w;
    for (size_t e = 0; gi.d_rows && e < x->n_rows * E; e++) dr[e] *= w;
}

static deg_status loss_grad(const deg_ckpt *ckpt, const deg_train_example *ex, size_t n,
                            const double *weights, float *grad, size_t n_grad, double *losses,
                            double *total, float *const *d_answer, float *const *d_rows)
{
    if (!ckpt || (n && !ex) || !weights || !grad || !total)
        return dg_fail(DEG_ERR_ARG, "deg_train_loss_grad: NULL argument");
    if (n_grad != ckpt->n_store)
        return dg_fail(DEG_ERR_ARG, "deg_train_loss_grad: n_grad is %zu, the checkpoint has "
                       "%zu parameters", n_grad, ckpt->n_store);
    for (size_t i = 0; i < n; i++) DG_TRY(check_example(ckpt, &ex[i], i));
    int n_w = DEG_HEAD_KINDS;
    for (size_t i = 0; i < n; i++)
        if (ex[i].kind >= DEG_HEAD_KINDS) n_w = DEG_TRAIN_WEIGHTS;
    for (int i = 0; i < n_w; i++)
        if (!isfinite(weights[i]))
            return dg_fail(DEG_ERR_ARG, "deg_train_loss_grad: weights[%d] is not finite", i);
    const dg_heads *h = &ckpt->h;
    const size_t n_count = (size_t)(DG_COUNT_MAX + 1) * (size_t)(h->E + 1);
    double *ls = malloc((n ? n : 1) * sizeof *ls);
    float *gac = calloc(n_count, sizeof *gac); /* anchor_count's count.w, count.b gradient */
    if (!ls || !gac) {
        free(ls);
        free(gac);
        return dg_fail(DEG_ERR_NOMEM, "deg_train_loss_grad: out of memory");
    }
    memset(grad, 0, n_grad * sizeof *grad);
    dg_heads_grad g, gc;
    size_t range[GR_N][2][2];
    bind_grad(ckpt, grad, &g, range);
    gc = g;
    gc.count_w = gac;
    gc.count_b = gac + (size_t)(DG_COUNT_MAX + 1) * (size_t)h->E;
    /* Each group touches only its own tensors: the groups run in parallel,
     * each over its examples in order, so the bits do not depend on threads. */
#pragma omp parallel for schedule(dynamic, 1)
    for (int grp = 0; grp < GR_N; grp++) {
        float w = grp < n_w ? (float)weights[grp] : 0.0f; /* no anchor example: no gradient */
        for (size_t i = 0; i < n; i++)
            if (group_of(ex[i].kind) == grp && ex[i].kind != DEG_HEAD_ANCHOR_COUNT)
                one_example(ckpt, &g, &ex[i], d_answer ? d_answer[i] : NULL,
                            d_rows ? d_rows[i] : NULL, (float)weights[slot_of(ex[i].kind)],
                            &ls[i]);
        for (int r = 0; r < 2; r++)
            for (size_t p = range[grp][r][0]; p < range[grp][r][1]; p++) grad[p] *= w;
        if (grp == GR_COUNT && n_w > DEG_HEAD_ANCHOR_COUNT) {
            int any = 0;
            for (size_t i = 0; i < n; i++)
                if (ex[i].kind == DEG_HEAD_ANCHOR_COUNT) {
                    one_example(ckpt, &gc, &ex[i], d_answer ? d_answer[i] : NULL, NULL,
                                (float)weights[DEG_HEAD_ANCHOR_COUNT], &ls[i]);
                    any = 1;
                }
            float wa = (float)weights[DEG_HEAD_ANCHOR_COUNT];
            float *gcw = grad + (size_t)(h->count_w - ckpt->store);
            if (any)
                for (size_t p = 0; p < n_count; p++) gcw[p] += wa * gac[p];
        }
    }
    free(gac);
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(ls[i])) {
            free(ls);
            return dg_fail(DEG_ERR_NOMEM, "deg_train_loss_grad: example %zu: out of memory", i);
        }
        t += weights[slot_of(ex[i].kind)] * ls[i];
        if (losses) losses[i] = ls[i];
    }
    free(ls);
    *total = t;
    return DEG_OK;
}

deg_status deg_train_loss_grad(const deg_ckpt *ckpt, const deg_train_example *ex, size_t n,
                               const double *weights, float *grad, size_t n_grad,
                               double *losses, double *total)
{
    return loss_grad(ckpt, ex, n, weights, grad, n_grad, losses, total, NULL, NULL);
}

deg_status deg_train_loss_grad_hidden(const deg_ckpt *ckpt, const deg_train_example *ex,
                                      size_t n, const double *weights, float *grad,
                                      size_t n_grad, double *losses, double *total,
                                      float *const *d_answer, float *const *d_rows)
{
    return loss_grad(ckpt, ex, n, weights, grad, n_grad, losses, total, d_answer, d_rows);
}

deg_status deg_train_logits(const deg_ckpt *ckpt, const deg_train_example *ex, float *logits,
                            size_t cap, size_t *n_out)
{
    if (!ckpt || !ex || !n_out || (cap && !logits))
        return dg_fail(DEG_ERR_ARG, "deg_train_logits: NULL argument");
    const dg_heads *h = &ckpt->h;
    const int E = h->E;
    size_t need;
    switch (ex->kind) {
    case DEG_HEAD_CHOICE:
    case DEG_HEAD_SCORE: need = ex->n_rows; break;
    case DEG_HEAD_NOUL: need = 2; break;
    case DEG_HEAD_EXTRACT:
    case DEG_HEAD_EXTRACT_ANCHORED: need = 2 * (ex->n_rows + 1); break;
    case DEG_HEAD_COUNT:
    case DEG_HEAD_ANCHOR_COUNT: need = ex->hi >= ex->lo ? (size_t)(ex->hi - ex->lo + 1) : 0; break;
    case DEG_HEAD_ANCHOR: need = ex->n_rows; break;
    default: return dg_fail(DEG_ERR_ARG, "deg_train_logits: unknown head kind %d", ex->kind);
    }
    *n_out = need;
    if (!ex->answer) return dg_fail(DEG_ERR_ARG, "deg_train_logits: answer is NULL");
    if ((ex->kind == DEG_HEAD_COUNT || ex->kind == DEG_HEAD_ANCHOR_COUNT) &&
        !(0 <= ex->lo && ex->lo <= ex->hi && ex->hi <= DG_COUNT_MAX))
        return dg_fail(DEG_ERR_ARG, "deg_train_logits: count range [%d, %d] outside [0, %d]",
                       ex->lo, ex->hi, DG_COUNT_MAX);
    if ((ex->kind == DEG_HEAD_CHOICE || ex->kind == DEG_HEAD_SCORE) && (!ex->rows || !ex->n_rows))
        return dg_fail(DEG_ERR_ARG, "deg_train_logits: a pointer example needs rows");
    if ((ex->kind == DEG_HEAD_EXTRACT || ex->kind == DEG_HEAD_EXTRACT_ANCHORED ||
         ex->kind == DEG_HEAD_ANCHOR) && !ex->rows && ex->n_rows)
        return dg_fail(DEG_ERR_ARG, "deg_train_logits: rows is NULL");
    if (ex->kind == DEG_HEAD_EXTRACT_ANCHORED &&
        !(0 <= ex->lo && ex->lo < ex->hi && (size_t)ex->hi <= ex->n_rows))
        return dg_fail(DEG_ERR_ARG, "deg_train_logits: anchored extract needs 0 <= lo < hi <= "
                       "n_rows");
    if (cap < need)
        return dg_fail(DEG_ERR_RANGE, "deg_train_logits: %zu logits, room for %zu", need, cap);
    switch (ex->kind) {
    case DEG_HEAD_CHOICE:
    case DEG_HEAD_SCORE:
        dg_head_pointer(h, ex->kind == DEG_HEAD_SCORE, ex->answer, ex->rows, ex->n_rows, logits);
        break;
    case DEG_HEAD_NOUL:
        logits[0] = dg_head_dot(h->noul_w, ex->answer, E) + h->noul_b[0];
        logits[1] = 0.0f;
        break;
    case DEG_HEAD_EXTRACT:
    case DEG_HEAD_EXTRACT_ANCHORED: {
        float *r = malloc((size_t)E * sizeof *r);
        if (!r) return dg_fail(DEG_ERR_NOMEM, "deg_train_logits: out of memory");
        for (int w = 0; w < 2; w++) {
            float *l = logits + (size_t)w * (ex->n_rows + 1);
            dg_head_extract_logits(h, w, ex->answer, ex->rows, ex->n_rows, r, NULL, l);
            if (ex->kind == DEG_HEAD_EXTRACT_ANCHORED)
                dg_anchor_bias_add(h, w, (size_t)ex->lo, (size_t)ex->hi, l, ex->n_rows);
        }
        free(r);
        break;
    }
    case DEG_HEAD_ANCHOR:
        if (ex->n_rows) DG_TRY(dg_anchor_logits(h, ex->answer, ex->rows, 0, ex->n_rows, logits));
        break;
    default:
        for (int c = ex->lo; c <= ex->hi; c++)
            logits[c - ex->lo] = dg_head_dot(h->count_w + (size_t)c * E, ex->answer, E) +
                                 h->count_b[c];
    }
    return DEG_OK;
}
