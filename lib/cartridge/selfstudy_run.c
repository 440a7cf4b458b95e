/* The self-study training run: the group gradient of a batch of
 * conversations, and the run's steps (synthesis queue, epochs, seeded
 * replay order, Adam). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "grad/train.h"
#include "cartridge/cartridge_internal.h"
#include "cartridge/selfstudy_internal.h"

/* One backward over parts (a single cartridge: its own call, else the
 * composition's). */
static deg_status backward(deg_cartridge *const *parts, size_t n_parts, const int32_t *ids,
                           size_t n_ids, const size_t *segs, size_t n_segs,
                           const deg_distill_target *tg, size_t n_tg, int checkpoint, float *loss)
{
    if (n_parts > 1)
        return deg_cartridge_compose_backward(parts, n_parts, ids, n_ids, segs, n_segs, tg, n_tg,
                                              checkpoint, loss);
    if (segs)
        return deg_cartridge_backward_packed(parts[0], ids, n_ids, segs, n_segs, tg, n_tg,
                                             checkpoint, loss);
    return deg_cartridge_backward(parts[0], ids, n_ids, tg, n_tg, checkpoint, loss);
}

/* pack = 0: one backward per conversation, targets weighted by N_c / N. */
static deg_status backward_each(deg_cartridge *const *parts, size_t n_parts,
                                const deg_selfstudy_conv *convs, size_t n, size_t total,
                                int checkpoint, double *loss)
{
    for (size_t i = 0; i < n; i++) {
        const deg_selfstudy_conv *c = &convs[i];
        if (!c->n_targets) continue;
        deg_distill_target *tg = malloc(c->n_targets * sizeof *tg);
        if (!tg) return dg_fail(DEG_ERR_NOMEM, "deg_selfstudy_backward: out of memory");
        double lw = log((double)c->n_supervised / (double)total);
        for (size_t k = 0; k < c->n_targets; k++) {
            tg[k] = c->targets[k];
            tg[k].logprob = (float)((double)c->targets[k].logprob + lw);
        }
        float l = 0.0f;
        deg_status st = backward(parts, n_parts, c->student_ids, c->n_student, NULL, 0, tg,
                                 c->n_targets, checkpoint, &l);
        free(tg);
        if (st != DEG_OK) return st;
        *loss += l;
    }
    return DEG_OK;
}

/* pack = 1: the conversations back to back in one packed backward. */
static deg_status backward_packed(deg_cartridge *const *parts, size_t n_parts,
                                  const deg_selfstudy_conv *convs, size_t n, int checkpoint,
                                  double *loss)
{
    size_t n_ids = 0, n_tg = 0, n_segs = 0;
    for (size_t i = 0; i < n; i++)
        if (convs[i].n_targets) {
            n_ids += convs[i].n_student;
            n_tg += convs[i].n_targets;
            n_segs++;
        }
    int32_t *ids = malloc((n_ids + 1) * sizeof *ids);
    size_t *segs = malloc((n_segs + 1) * sizeof *segs);
    deg_distill_target *tg = malloc((n_tg + 1) * sizeof *tg);
    deg_status st = ids && segs && tg ? DEG_OK
                                      : dg_fail(DEG_ERR_NOMEM, "deg_selfstudy_backward: out of "
                                                "memory");
    size_t off = 0, t = 0, s = 0;
    for (size_t i = 0; st == DEG_OK && i < n; i++) {
        const deg_selfstudy_conv *c = &convs[i];
        if (!c->n_targets) continue;
        memcpy(ids + off, c->student_ids, c->n_student * sizeof *ids);
        for (size_t k = 0; k < c->n_targets; k++) {
            tg[t] = c->targets[k];
            tg[t++].position += (int32_t)off;
        }
        segs[s++] = c->n_student;
        off += c->n_student;
    }
    float l = 0.0f;
    if (st == DEG_OK)
        st = backward(parts, n_parts, ids, n_ids, segs, n_segs, tg, n_tg, checkpoint, &l);
    free(ids);
    free(segs);
    free(tg);
    *loss = l;
    return st;
}

deg_status deg_selfstudy_backward(deg_cartridge *const *parts, size_t n_parts,
                                  const deg_selfstudy_conv *convs, size_t n, int pack,
                                  int checkpoint, float *loss)
{
    if (!parts || n_parts == 0 || (!convs && n))
        return dg_fail(DEG_ERR_ARG, "deg_selfstudy_backward: NULL argument or no parts");
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const deg_selfstudy_conv *c = &convs[i];
        if (c->n_targets && (!c->targets || !c->student_ids || c->n_supervised == 0))
            return dg_fail(DEG_ERR_ARG, "deg_selfstudy_backward: conversation %zu has targets "
                           "but no ids or no supervised positions", i);
        if (c->n_targets) total += c->n_supervised;
    }
    double l = 0.0;
    if (total) {
        DG_TRY(pack ? backward_packed(parts, n_parts, convs, n, checkpoint, &l)
                    : backward_each(parts, n_parts, convs, n, total, checkpoint, &l));
    }
    if (loss) *loss = (float)l;
    return DEG_OK;
}

/* ---- the run ------------------------------------------------------------ */

struct deg_selfstudy_run {
    deg_selfstudy *study;         /* borrowed */
    deg_cartridge *cart;          /* borrowed */
    deg_selfstudy_train_params p;
    dg_rng replay;
    deg_selfstudy_conv *convs;    /* synthesised, in synthesis order (owned) */
    size_t n_convs, cap;
    size_t n_seen;                /* the first n_seen have been trained on */
    size_t *order;                /* the current replay pass' order, or NULL */
    size_t drawn0;                /* the study's draws when the run was made */
    int64_t step, trained;
};

deg_selfstudy_train_params deg_selfstudy_default_train_params(void)
{
    return (deg_selfstudy_train_params){.steps = 8, .epochs = 1, .accum = 4, .gen_batch = 0,
                                        .pack = 1, .checkpoint = 0, .replay_seed = 0x2E91A7,
                                        .adam = deg_adam_params_default()};
}

deg_status deg_selfstudy_run_new(deg_selfstudy *study, deg_cartridge *cart,
                                 const deg_selfstudy_train_params *params,
                                 deg_selfstudy_run **out)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_selfstudy_run_new: NULL out");
    *out = NULL;
    if (!study || !cart) return dg_fail(DEG_ERR_ARG, "deg_selfstudy_run_new: NULL argument");
    deg_selfstudy_train_params p = params ? *params : deg_selfstudy_default_train_params();
    if (p.steps < 0 || p.epochs < 1 || p.accum < 1 || p.gen_batch < 0)
        return dg_fail(DEG_ERR_ARG, "deg_selfstudy_run_new: need steps >= 0, epochs >= 1, "
                       "accum >= 1 and gen_batch >= 0 (got %d, %d, %d, %d)", p.steps, p.epochs,
                       p.accum, p.gen_batch);
    if (cart->model != study->model)
        return dg_fail(DEG_ERR_MISMATCH, "deg_selfstudy_run_new: the cartridge belongs to "
                       "another model handle than the corpus");
    /* before any conversation is synthesised for it */
    DG_TRY(dg_train_check(cart->model, "deg_selfstudy_run_new"));
    if (p.gen_batch == 0) p.gen_batch = p.accum;
    deg_selfstudy_run *r = calloc(1, sizeof *r);
    if (!r) return dg_fail(DEG_ERR_NOMEM, "deg_selfstudy_run_new: out of memory");
    r->study = study;
    r->cart = cart;
    r->p = p;
    r->drawn0 = deg_selfstudy_n_drawn(study);
    dg_rng_seed(&r->replay, p.replay_seed);
    *out = r;
    return DEG_OK;
}

void deg_selfstudy_run_free(deg_selfstudy_run *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_convs; i++) deg_selfstudy_conv_clear(&r->convs[i]);
    free(r->convs);
    free(r->order);
    free(r);
}

static deg_status grow(deg_selfstudy_run *r, size_t need)
{
    deg_status st = DG_GROW(r->convs, r->cap, need);
    return st == DEG_OK ? st : dg_fail_context(st, "deg_selfstudy_run");
}

/* Synthesise until accum conversations wait behind the seen ones. */
static deg_status fill_queue(deg_selfstudy_run *r)
{
    while (r->n_convs - r->n_seen < (size_t)r->p.accum) {
        size_t g = (size_t)r->p.gen_batch;
        DG_TRY(grow(r, r->n_convs + g));
        DG_TRY(deg_selfstudy_generate(r->study, g, r->convs + r->n_convs));
        r->n_convs += g;
    }
    return DEG_OK;
}

/* The pass' new order: a Fisher-Yates shuffle of [0, n_seen). */
static deg_status shuffle(deg_selfstudy_run *r)
{
    size_t *o = malloc((r->n_seen + 1) * sizeof *o);
    if (!o) return dg_fail(DEG_ERR_NOMEM, "deg_selfstudy_run: out of memory");
    for (size_t i = 0; i < r->n_seen; i++) o[i] = i;
    for (size_t i = r->n_seen; i > 1; i--) {
        size_t j = (size_t)dg_rng_below(&r->replay, i);
        size_t t = o[i - 1];
        o[i - 1] = o[j];
        o[j] = t;
    }
    free(r->order);
    r->order = o;
    return DEG_OK;
}

deg_status deg_selfstudy_run_step(deg_selfstudy_run *r, float *loss)
{
    if (!r) return dg_fail(DEG_ERR_ARG, "deg_selfstudy_run_step: NULL run");
    int64_t steps = r->p.steps, s = r->step + 1;
    if (s > steps * r->p.epochs)
        return dg_fail(DEG_ERR_STATE, "deg_selfstudy_run_step: the run is done (%lld steps)",
                       (long long)(steps * r->p.epochs));
    size_t accum = (size_t)r->p.accum;
    const deg_selfstudy_conv *group;
    deg_selfstudy_conv *picked = NULL;
    if (s <= steps) { /* first pass: synthesise */
        DG_TRY(fill_queue(r));
        group = r->convs + r->n_seen;
    } else { /* replay in a new order each pass */
        if ((s - 1) % steps == 0) DG_TRY(shuffle(r));
        size_t at = (size_t)((s - 1) % steps) * accum;
        if (!(picked = malloc(accum * sizeof *picked)))
            return dg_fail(DEG_ERR_NOMEM, "deg_selfstudy_run_step: out of memory");
        for (size_t k = 0; k < accum; k++) picked[k] = r->convs[r->order[at + k]];
        group = picked;
    }
    deg_cartridge_zero_grads(r->cart);
    float l = 0.0f;
    deg_cartridge *parts[1] = {r->cart};
    deg_status st = deg_selfstudy_backward(parts, 1, group, accum, r->p.pack, r->p.checkpoint,
                                           &l);
    free(picked);
    if (st == DEG_OK) st = deg_cartridge_adam_step(r->cart, &r->p.adam);
    if (st != DEG_OK) return st;
    if (s <= steps) r->n_seen += accum;
    r->step = s;
    r->trained += (int64_t)accum;
    if (loss) *loss = l;
    return DEG_OK;
}

void deg_selfstudy_run_get_state(const deg_selfstudy_run *r, deg_selfstudy_run_state *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!r) return;
    out->step = r->step;
    out->trained = r->trained;
    out->n_synthesised = r->n_convs;
    out->n_seen = r->n_seen;
    deg_selfstudy_get_rng(r->study, out->rng_synthesis);
    memcpy(out->rng_replay, r->replay.s, sizeof r->replay.s);
    out->order = r->order;
    out->n_order = r->order ? r->n_seen : 0;
}

const deg_selfstudy_conv *deg_selfstudy_run_conv(const deg_selfstudy_run *r, size_t i)
{
    return r && i < r->n_convs ? &r->convs[i] : NULL;
}

/* A deep copy of c (every array owned by dst). */
static deg_status conv_copy(deg_selfstudy_conv *dst, const deg_selfstudy_conv *c)
{
    memset(dst, 0, sizeof *dst);
    *dst = *c;
    dst->message = strdup(c->message ? c->message : "");
    dst->answer_ids = malloc((c->n_answer + 1) * sizeof(int32_t));
    dst->student_ids = malloc((c->n_student + 1) * sizeof(int32_t));
    dst->targets = malloc((c->n_targets + 1) * sizeof *c->targets);
    if (!dst->message || !dst->answer_ids || !dst->student_ids || !dst->targets) {
        deg_selfstudy_conv_clear(dst);
        return dg_fail(DEG_ERR_NOMEM, "deg_selfstudy_run_restore: out of memory");
    }
    if (c->n_answer) memcpy(dst->answer_ids, c->answer_ids, c->n_answer * sizeof(int32_t));
    if (c->n_student) memcpy(dst->student_ids, c->student_ids, c->n_student * sizeof(int32_t));
    if (c->n_targets) memcpy(dst->targets, c->targets, c->n_targets * sizeof *c->targets);
    return DEG_OK;
}

static deg_status check_state(const deg_selfstudy_run *r, const deg_selfstudy_run_state *st,
                              const deg_selfstudy_conv *convs)
{
    const char *w = "deg_selfstudy_run_restore";
    int64_t steps = r->p.steps, accum = r->p.accum;
    int64_t pass1 = st->step < steps ? st->step : steps;
    if (st->step < 0 || st->trained != st->step * accum || (int64_t)st->n_seen != pass1 * accum ||
        st->n_synthesised < st->n_seen || (st->n_synthesised && !convs))
        return dg_fail(DEG_ERR_ARG, "%s: step %lld, %lld trained, %zu seen and %zu synthesised "
                       "do not fit together (steps %d, accum %d)", w, (long long)st->step,
                       (long long)st->trained, st->n_seen, st->n_synthesised, r->p.steps,
                       r->p.accum);
    int in_replay = st->step > steps && steps > 0;
    if (in_replay ? (!st->order || st->n_order != st->n_seen) : st->n_order != 0)
        return dg_fail(DEG_ERR_ARG, "%s: a replay order of %zu entries at step %lld", w,
                       st->n_order, (long long)st->step);
    if (in_replay) {
        char *hit = calloc(st->n_seen + 1, 1);
        if (!hit) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", w);
        for (size_t i = 0; i < st->n_order; i++) {
            if (st->order[i] >= st->n_seen || hit[st->order[i]]) {
                free(hit);
                return dg_fail(DEG_ERR_ARG, "%s: the order is not a permutation of [0, %zu)", w,
                               st->n_seen);
            }
            hit[st->order[i]] = 1;
        }
        free(hit);
    }
    if ((st->rng_replay[0] | st->rng_replay[1] | st->rng_replay[2] | st->rng_replay[3]) == 0)
        return dg_fail(DEG_ERR_ARG, "%s: the all-zero replay state", w);
    return DEG_OK;
}

deg_status deg_selfstudy_run_restore(deg_selfstudy_run *r, const deg_selfstudy_run_state *st,
                                     const deg_selfstudy_conv *convs)
{
    if (!r || !st) return dg_fail(DEG_ERR_ARG, "deg_selfstudy_run_restore: NULL argument");
    if (r->step || r->n_convs)
        return dg_fail(DEG_ERR_STATE, "deg_selfstudy_run_restore: the run has already stepped");
    DG_TRY(check_state(r, st, convs));
    DG_TRY(deg_selfstudy_set_rng(r->study, st->rng_synthesis));
    DG_TRY(deg_selfstudy_set_n_drawn(r->study, r->drawn0 + st->n_synthesised));
    DG_TRY(grow(r, st->n_synthesised + 1));
    size_t *order = NULL;
    if (st->n_order) {
        if (!(order = malloc(st->n_order * sizeof *order)))
            return dg_fail(DEG_ERR_NOMEM, "deg_selfstudy_run_restore: out of memory");
        memcpy(order, st->order, st->n_order * sizeof *order);
    }
    for (size_t i = 0; i < st->n_synthesised; i++) {
        deg_status s = conv_copy(&r->convs[i], &convs[i]);
        if (s != DEG_OK) {
            for (size_t k = 0; k < i; k++) deg_selfstudy_conv_clear(&r->convs[k]);
            free(order);
            return s;
        }
    }
    r->n_convs = st->n_synthesised;
    r->n_seen = st->n_seen;
    r->order = order;
    r->step = st->step;
    r->trained = st->trained;
    memcpy(r->replay.s, st->rng_replay, sizeof r->replay.s);
    return DEG_OK;
}
