/* Mixed-visibility joint self-study over a fleet (include/cartridge.h,
 * "Mixed-visibility joint self-study over a fleet"): the seeded draw of a
 * round's target and co-loaded parts, and the training round. */
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/status.h"
#include "cartridge/fleet_internal.h"
#include "grad/train.h"
#include "model/sample.h"

deg_fleet_train_params deg_fleet_default_train_params(void)
{
    return (deg_fleet_train_params){.accum = 4, .p_iso = 0.75f, .distract_max = 2,
                                    .schedule = DEG_FLEET_SCHEDULE_LENGTH, .seed = 0,
                                    .pack = 1, .checkpoint = 0,
                                    .study = deg_selfstudy_default_params()};
}

/* The seed of step n of a run seeded by seed (deg.fleets' former integer
 * mix, kept: the same on every platform). */
static uint64_t round_seed(uint64_t seed, uint64_t n) { return seed * 1000003u + n; }

static deg_status check_params(const deg_fleet_train_params *p, const char *w)
{
    if (!p) return dg_fail(DEG_ERR_ARG, "%s: params is NULL", w);
    if (p->accum < 1) return dg_fail(DEG_ERR_ARG, "%s: accum %d must be >= 1", w, (int)p->accum);
    if (!(p->p_iso >= 0.0f && p->p_iso <= 1.0f))
        return dg_fail(DEG_ERR_ARG, "%s: p_iso %g must be in [0, 1]", w, (double)p->p_iso);
    if (p->distract_max < 0)
        return dg_fail(DEG_ERR_ARG, "%s: distract_max %d must be >= 0", w,
                       (int)p->distract_max);
    if (p->schedule != DEG_FLEET_SCHEDULE_LENGTH && p->schedule != DEG_FLEET_SCHEDULE_UNIFORM)
        return dg_fail(DEG_ERR_ARG, "%s: schedule %d must be DEG_FLEET_SCHEDULE_LENGTH (0) or "
                       "DEG_FLEET_SCHEDULE_UNIFORM (1)", w, (int)p->schedule);
    if ((p->pack != 0 && p->pack != 1) || (p->checkpoint != 0 && p->checkpoint != 1))
        return dg_fail(DEG_ERR_ARG, "%s: pack and checkpoint must be 0 or 1", w);
    return DEG_OK;
}

/* The target among cand[0..n): proportional to the token counts. */
static size_t draw_target(const deg_fleet *f, dg_rng *rng, const size_t *cand, size_t n)
{
    uint64_t total = 0, acc = 0;
    for (size_t i = 0; i < n; i++) total += f->docs[cand[i]].tokens ? f->docs[cand[i]].tokens : 1;
    uint64_t u = dg_rng_below(rng, total);
    for (size_t i = 0; i < n; i++) {
        acc += f->docs[cand[i]].tokens ? f->docs[cand[i]].tokens : 1;
        if (u < acc) return cand[i];
    }
    return cand[n - 1];
}

/* The fleet's fewest Adam steps over EVERY document (residents and
 * absentees): the level the UNIFORM schedule steps next. */
static int64_t fleet_low(const deg_fleet *f)
{
    int64_t low = INT64_MAX;
    for (size_t i = 0; i < f->n; i++)
        if (f->docs[i].steps < low) low = f->docs[i].steps;
    return low;
}

/* May resident document i take part in a round under the schedule? LENGTH:
 * every resident; UNIFORM: those at the fleet-wide fewest steps low. */
static int eligible(const deg_fleet *f, int schedule, size_t i, int64_t low)
{
    return f->docs[i].c && (schedule == DEG_FLEET_SCHEDULE_LENGTH || f->docs[i].steps == low);
}

/* Has a UNIFORM round a candidate among the residents? */
static int uniform_ready(const deg_fleet *f)
{
    int64_t low = fleet_low(f);
    for (size_t i = 0; i < f->n; i++)
        if (eligible(f, DEG_FLEET_SCHEDULE_UNIFORM, i, low)) return 1;
    return 0;
}

deg_status deg_fleet_draw(const deg_fleet *f, const deg_fleet_train_params *p, size_t *target,
                          size_t *parts, size_t cap, size_t *n_parts)
{
    const char *w = "deg_fleet_draw";
    if (!f || !target || !parts || !n_parts) return dg_fail(DEG_ERR_ARG, "%s: NULL argument", w);
    DG_TRY(check_params(p, w));
    if (cap < 1 + (size_t)p->distract_max)
        return dg_fail(DEG_ERR_ARG, "%s: parts has room for %zu, a round may co-load 1 + "
                       "distract_max = %d", w, cap, 1 + (int)p->distract_max);
    if (dg_fleet_n_resident(f) == 0)
        return dg_fail(DEG_ERR_STATE, "%s: the fleet has no resident document", w);
    int64_t low = fleet_low(f);
    size_t *cand = malloc((f->n ? f->n : 1) * sizeof *cand), nc = 0;
    if (!cand) return dg_fail(DEG_ERR_NOMEM, "%s: out of memory", w);
    for (size_t i = 0; i < f->n; i++)
        if (eligible(f, p->schedule, i, low)) cand[nc++] = i;
    if (nc == 0) {
        free(cand);
        return dg_fail(DEG_ERR_STATE, "%s: schedule UNIFORM: no resident document has the "
                       "fleet's fewest Adam steps (%lld); rotate first (deg_fleet_rotate; "
                       "deg_fleet_train_round does)", w, (long long)low);
    }
    dg_rng rng;
    dg_rng_seed(&rng, round_seed(p->seed, (uint64_t)f->rounds));
    size_t t = draw_target(f, &rng, cand, nc), m = 0, n = 1;
    for (size_t i = 0; i < nc; i++)  /* the other candidates, in id order */
        if (cand[i] != t) cand[m++] = cand[i];
    double u = dg_rng_uniform(&rng);
    parts[0] = t;
    if (u >= (double)p->p_iso && p->distract_max > 0 && m > 0) {
        size_t kmax = (size_t)p->distract_max < m ? (size_t)p->distract_max : m;
        size_t k = 1 + (size_t)dg_rng_below(&rng, kmax);
        for (size_t j = 0; j < k; j++) {  /* partial Fisher-Yates over the others */
            size_t s = j + (size_t)dg_rng_below(&rng, m - j), x = cand[j];
            cand[j] = cand[s];
            cand[s] = x;
            parts[1 + j] = cand[j];
        }
        n = 1 + k;
        for (size_t j = n - 1; j > 0; j--) {
            size_t s = (size_t)dg_rng_below(&rng, j + 1), x = parts[j];
            parts[j] = parts[s];
            parts[s] = x;
        }
    }
    free(cand);
    *target = t;
    *n_parts = n;
    return DEG_OK;
}

/* The round's conversations: accum about the target document alone. */
static deg_status round_convs(const deg_fleet *f, const deg_fleet_train_params *p, size_t t,
                              deg_selfstudy_conv *convs)
{
    const dg_fleet_doc *d = &f->docs[t];
    char *text = NULL;
    size_t len = 0;
    deg_status st = dg_read_file(d->text_path, DG_FLEET_TEXT_MAX, &text, &len);
    deg_corpus *corpus = NULL;
    deg_selfstudy *study = NULL;
    const char *name = d->name, *txt = text;
    if (st == DEG_OK) st = deg_corpus_new(f->model, &name, &txt, &len, 1, &corpus);
    deg_selfstudy_params sp = p->study;
    sp.seed = round_seed(round_seed(p->seed, (uint64_t)f->rounds), (uint64_t)t + 1);
    if (st == DEG_OK) st = deg_selfstudy_new(corpus, &sp, &study);
    if (st == DEG_OK) st = deg_selfstudy_generate(study, (size_t)p->accum, convs);
    deg_selfstudy_free(study);
    deg_corpus_free(corpus);
    free(text);
    if (st != DEG_OK) return dg_fail_context(st, "fleet document %zu (%s)", t, d->name);
    return DEG_OK;
}

deg_status deg_fleet_train_round(deg_fleet *f, const deg_fleet_train_params *p, size_t *parts,
                                 size_t cap, deg_fleet_round *out)
{
    const char *w = "deg_fleet_train_round";
    if (!f) return dg_fail(DEG_ERR_ARG, "%s: fleet is NULL", w);
    DG_TRY(check_params(p, w));
    /* before any conversation is synthesised for the round (as self-study) */
    DG_TRY(dg_train_check(f->model, w));
    if (parts && cap < 1 + (size_t)p->distract_max)
        return dg_fail(DEG_ERR_ARG, "%s: parts has room for %zu, a round may co-load 1 + "
                       "distract_max = %d", w, cap, 1 + (int)p->distract_max);
    size_t n_max = 1 + (size_t)p->distract_max, target = 0, n = 0;
    size_t *sel = malloc(n_max * sizeof *sel);
    deg_cartridge **carts = malloc(n_max * sizeof *carts);
    deg_selfstudy_conv *convs = calloc((size_t)p->accum, sizeof *convs);
    deg_status st = sel && carts && convs ? DEG_OK : dg_fail(DEG_ERR_NOMEM, "%s: oom", w);
    /* UNIFORM steps only documents at the fleet's fewest steps; when every
     * one of them is on disk, the rotation brings the least-trained in
     * first (it evicts >= 1 resident, all above that level, and admits the
     * least-trained absentees, which are at it). */
    if (st == DEG_OK && p->schedule == DEG_FLEET_SCHEDULE_UNIFORM && !uniform_ready(f))
        st = deg_fleet_rotate(f);
    if (st == DEG_OK) st = deg_fleet_draw(f, p, &target, sel, n_max, &n);
    if (st == DEG_OK) st = round_convs(f, p, target, convs);
    for (size_t i = 0; st == DEG_OK && i < n; i++) {
        carts[i] = f->docs[sel[i]].c;
        deg_cartridge_zero_grads(carts[i]);
    }
    float loss = 0.0f;
    if (st == DEG_OK)
        st = deg_selfstudy_backward(carts, n, convs, (size_t)p->accum, p->pack, p->checkpoint,
                                    &loss);
    if (st != DEG_OK)  /* leave no half-accumulated gradient behind */
        for (size_t i = 0; sel && i < n; i++) deg_cartridge_zero_grads(f->docs[sel[i]].c);
    if (st == DEG_OK) st = deg_fleet_step(f, sel, n);
    if (st == DEG_OK) {
        if (parts) memcpy(parts, sel, n * sizeof *sel);
        if (out) *out = (deg_fleet_round){f->rounds, target, n, loss};
    }
    for (size_t i = 0; convs && i < (size_t)p->accum; i++) deg_selfstudy_conv_clear(&convs[i]);
    free(convs);
    free(carts);
    free(sel);
    return st == DEG_OK ? DEG_OK : dg_fail_context(st, "%s", w);
}
