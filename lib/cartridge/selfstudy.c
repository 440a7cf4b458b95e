/* deg_selfstudy: the seeded draws of self-study conversations (chunk, seed
 * prompt, conversation kind) and the synthesis of a batch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "cartridge/selfstudy_bots.h"
#include "cartridge/selfstudy_internal.h"

/* The seed prompts: the reference five types (structuring, summarization,
 * question, use-case, creative) plus mechanism (why/how) and verbatim
 * precision (exact wording, numbers, names). Each asks bot A for a message
 * about the excerpt it sees; none names a topic. */
static const char *const STRUCTURING[] = {
    "Write a request asking for a part of the excerpt above to be reorganised into a clear "
    "structure, such as a list, a table or an outline. Name the part precisely. Output only "
    "the request."};
static const char *const SUMMARIZATION[] = {
    "Write a request asking for a short summary of a specific section of the excerpt above. "
    "Say which section. Output only the request.",
    "Write a request for a one-paragraph summary of the excerpt above. Output only the "
    "request."};
static const char *const QUESTION[] = {
    "Write one question that can be answered from the excerpt above. Be specific and include "
    "enough context that the question makes sense on its own. Output only the question.",
    "Write one factual question about a detail of the excerpt above. Output only the "
    "question."};
static const char *const USE_CASE[] = {
    "Think of a practical situation in which someone would need the information in the "
    "excerpt above, and write the message that person would send to ask for help. Output "
    "only the message."};
static const char *const CREATIVE[] = {
    "Write an unusual but answerable request about the excerpt above, for example asking for "
    "an analogy, a short example or an explanation for a beginner. Output only the request."};
static const char *const MECHANISM[] = {
    "Write a question asking why or how something described in the excerpt above works the "
    "way it does. Output only the question."};
static const char *const VERBATIM[] = {
    "Write a question whose answer is an exact detail of the excerpt above: a name, a number, "
    "a command, a value or a precise wording. Output only the question."};

static const struct {
    const char *name;
    const char *const *prompts;
    size_t n;
} KINDS[DEG_SELFSTUDY_N_SEED_TYPES] = {
    {"structuring", STRUCTURING, 1}, {"summarization", SUMMARIZATION, 2},
    {"question", QUESTION, 2},       {"use_case", USE_CASE, 1},
    {"creative", CREATIVE, 1},       {"mechanism", MECHANISM, 1},
    {"verbatim", VERBATIM, 1},
};

const char *deg_selfstudy_kind_name(int32_t kind)
{
    if (kind >= 0 && kind < DEG_SELFSTUDY_N_SEED_TYPES) return KINDS[kind].name;
    if (kind == DEG_SELFSTUDY_RECALL) return "recall";
    if (kind == DEG_SELFSTUDY_PASSAGE_QA) return "passage_qa";
    return NULL;
}

size_t deg_selfstudy_n_seed_prompts(int32_t kind)
{
    return kind >= 0 && kind < DEG_SELFSTUDY_N_SEED_TYPES ? KINDS[kind].n : 0;
}

const char *deg_selfstudy_seed_prompt(int32_t kind, size_t j)
{
    return j < deg_selfstudy_n_seed_prompts(kind) ? KINDS[kind].prompts[j] : NULL;
}

deg_selfstudy_params deg_selfstudy_default_params(void)
{
    return (deg_selfstudy_params){.seed = 0, .chunk_min = 256, .chunk_max = 512, .max_q = 64,
                                  .max_a = 160, .top_k = 20, .min_mass = 0.99f,
                                  .temperature_a = 0.6f, .recall = 0.0f, .recall_q_min = 16,
                                  .recall_q_max = 48, .passage_qa = 0.0f, .spec_b = 0};
}

static deg_status check_params(const deg_selfstudy_params *p)
{
    const char *w = "deg_selfstudy_new";
    if (p->chunk_min < 1 || p->chunk_max < p->chunk_min)
        return dg_fail(DEG_ERR_ARG, "%s: chunk sizes need 1 <= chunk_min <= chunk_max, got %d, "
                       "%d", w, p->chunk_min, p->chunk_max);
    if (p->max_q < 1 || p->max_a < 1)
        return dg_fail(DEG_ERR_ARG, "%s: max_q and max_a must be >= 1, got %d, %d", w, p->max_q,
                       p->max_a);
    if (p->top_k < 1 || !(p->min_mass > 0.0f && p->min_mass <= 1.0f))
        return dg_fail(DEG_ERR_ARG, "%s: need top_k >= 1 and 0 < min_mass <= 1 (got %d, %g)", w,
                       p->top_k, (double)p->min_mass);
    if (!(p->temperature_a > 0.0f) || !isfinite(p->temperature_a))
        return dg_fail(DEG_ERR_ARG, "%s: temperature_a must be > 0, got %g", w,
                       (double)p->temperature_a);
    if (!(p->recall >= 0.0f && p->recall <= 1.0f))
        return dg_fail(DEG_ERR_ARG, "%s: recall is a fraction in [0, 1], got %g", w,
                       (double)p->recall);
    if (!(p->passage_qa >= 0.0f && p->passage_qa <= 1.0f) ||
        (double)p->recall + p->passage_qa > 1.0 + 1e-6)
        return dg_fail(DEG_ERR_ARG, "%s: passage_qa is a fraction in [0, 1] with recall + "
                       "passage_qa <= 1, got passage_qa %g, recall %g", w,
                       (double)p->passage_qa, (double)p->recall);
    if (p->recall_q_min < 1 || p->recall_q_max < p->recall_q_min)
        return dg_fail(DEG_ERR_ARG, "%s: recall_q needs 1 <= min <= max, got %d, %d", w,
                       p->recall_q_min, p->recall_q_max);
    return DEG_OK;
}

deg_status deg_selfstudy_new(const deg_corpus *corpus, const deg_selfstudy_params *params,
                             deg_selfstudy **out)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_selfstudy_new: NULL out");
    *out = NULL;
    if (!corpus) return dg_fail(DEG_ERR_ARG, "deg_selfstudy_new: NULL corpus");
    deg_selfstudy_params p = params ? *params : deg_selfstudy_default_params();
    DG_TRY(check_params(&p));
    deg_selfstudy *s = calloc(1, sizeof *s);
    if (!s) return dg_fail(DEG_ERR_NOMEM, "deg_selfstudy_new: out of memory");
    s->corpus = corpus;
    s->model = corpus->model;
    s->p = p;
    s->width = dg_cover_width(&p);
    dg_rng_seed(&s->rng, p.seed);
    deg_status st = deg_model_stop_ids(s->model, s->stop, 2, &s->n_stop);
    if (st == DEG_OK && p.passage_qa > 0.0f)
        st = deg_selfstudy_passages(s->model, corpus->ids, corpus->n, p.max_a, 12, &s->passages,
                                    &s->n_passages);
    if (st != DEG_OK) {
        deg_selfstudy_free(s);
        return st;
    }
    *out = s;
    return DEG_OK;
}

void deg_selfstudy_free(deg_selfstudy *s)
{
    if (!s) return;
    free(s->slots);
    free(s->passages);
    free(s);
}

void deg_selfstudy_get_rng(const deg_selfstudy *s, uint64_t state[4])
{
    if (s && state) memcpy(state, s->rng.s, sizeof s->rng.s);
}

deg_status deg_selfstudy_set_rng(deg_selfstudy *s, const uint64_t state[4])
{
    if (!s || !state) return dg_fail(DEG_ERR_ARG, "deg_selfstudy_set_rng: NULL argument");
    if ((state[0] | state[1] | state[2] | state[3]) == 0)
        return dg_fail(DEG_ERR_ARG, "deg_selfstudy_set_rng: the all-zero state is not a "
                       "xoshiro256** state");
    memcpy(s->rng.s, state, sizeof s->rng.s);
    return DEG_OK;
}

deg_selfstudy_timing deg_selfstudy_get_timing(const deg_selfstudy *s)
{
    deg_selfstudy_timing t = {0};
    return s ? s->timing : t;
}

void deg_selfstudy_conv_clear(deg_selfstudy_conv *c)
{
    if (!c) return;
    free(c->message);
    free(c->answer_ids);
    free(c->student_ids);
    free(c->targets);
    memset(c, 0, sizeof *c);
}

/* Uniform integer in [lo, hi]. */
static size_t range(dg_rng *r, size_t lo, size_t hi)
{
    return lo + (size_t)dg_rng_below(r, (uint64_t)(hi - lo) + 1);
}

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* COVER placement of a drawn plan (include/cartridge.h,
 * deg_selfstudy_placement): size is the drawn chunk length L. */
static deg_status place_cover(deg_selfstudy *s, dg_plan *pl, size_t size)
{
    size_t n = s->corpus->n, w;
    DG_TRY(dg_cover_window(s, &w));
    if (pl->kind == DEG_SELFSTUDY_PASSAGE_QA) return DEG_OK;
    if (pl->kind == DEG_SELFSTUDY_RECALL) {
        size_t answer = min_sz((size_t)s->p.max_a, n - w);
        pl->q = min_sz(pl->q, w);
        if (size < pl->q + answer) size = pl->q + answer;
        pl->at = w - pl->q;
        pl->first = min_sz(pl->at, n - size);
    } else {
        pl->first = min_sz(w, n - size);
    }
    pl->end = pl->first + size;
    return DEG_OK;
}

/* One conversation's draws (the order is the contract: include/cartridge.h). */
static deg_status draw_plan(deg_selfstudy *s, dg_plan *pl)
{
    const deg_selfstudy_params *p = &s->p;
    size_t n = s->corpus->n;
    int cover = s->placement == DEG_SELFSTUDY_PLACE_COVER;
    size_t size = min_sz(range(&s->rng, (size_t)p->chunk_min, (size_t)p->chunk_max), n);
    memset(pl, 0, sizeof *pl);
    if (!cover) pl->first = range(&s->rng, 0, n - size);
    pl->kind = (int32_t)dg_rng_below(&s->rng, DEG_SELFSTUDY_N_SEED_TYPES);
    pl->prompt = (size_t)dg_rng_below(&s->rng, KINDS[pl->kind].n);
    pl->seed_a = dg_rng_next(&s->rng) >> 1;
    pl->end = pl->first + size;
    if (p->recall > 0.0f || p->passage_qa > 0.0f) {
        double u = dg_rng_uniform(&s->rng);
        size_t half = size / 2 > 1 ? size / 2 : 1;
        if (u < (double)p->recall) {
            pl->kind = DEG_SELFSTUDY_RECALL;
            pl->q = min_sz(range(&s->rng, (size_t)p->recall_q_min, (size_t)p->recall_q_max),
                           half);
        } else if (u < (double)p->recall + (double)p->passage_qa) {
            uint64_t bits = dg_rng_next(&s->rng) >> 16;
            if (s->n_passages == 0) { /* no passage: a recall conversation */
                pl->kind = DEG_SELFSTUDY_RECALL;
                pl->q = min_sz((size_t)p->recall_q_min, half);
            } else {
                size_t k = (size_t)(bits % s->n_passages);
                size_t a = s->passages[2 * k], b = s->passages[2 * k + 1];
                if (b - a > size) size = b - a;
                size_t lo = b > size ? b - size : 0, hi = min_sz(a, n - size);
                pl->first = lo + (size_t)((bits >> 24) % (hi - lo + 1));
                pl->end = pl->first + size;
                pl->kind = DEG_SELFSTUDY_PASSAGE_QA;
                pl->pa = a;
                pl->pb = b;
            }
        }
    }
    pl->at = pl->first;
    if (cover) DG_TRY(place_cover(s, pl, size));
    s->n_drawn++;
    return DEG_OK;
}

static double now(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

deg_status deg_selfstudy_generate(deg_selfstudy *s, size_t n, deg_selfstudy_conv *out)
{
    if (!s || (!out && n)) return dg_fail(DEG_ERR_ARG, "deg_selfstudy_generate: NULL argument");
    if (n == 0) return DEG_OK;
    dg_batch b = {0};
    deg_status st = dg_batch_alloc(&b, n);
    if (st != DEG_OK) return st;
    for (size_t i = 0; i < n && st == DEG_OK; i++) st = draw_plan(s, &b.plans[i]);
    if (st != DEG_OK) {
        dg_batch_free(&b);
        return st;
    }
    double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    st = dg_selfstudy_prompts(s, &b);
    if (st == DEG_OK) st = dg_selfstudy_bot_a(s, &b);
    if (st == DEG_OK) st = dg_selfstudy_bot_b(s, &b);
    double t1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_PROCESS_CPUTIME_ID);
    if (st == DEG_OK) st = dg_selfstudy_teach(s, &b, out);
    s->timing.generate += t1 - t0;
    s->timing.generate_cpu += c1 - c0;
    s->timing.teacher += now(CLOCK_MONOTONIC) - t1;
    s->timing.teacher_cpu += now(CLOCK_PROCESS_CPUTIME_ID) - c1;
    dg_batch_free(&b);
    return st;
}
