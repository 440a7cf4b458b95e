/* Training on the hybrid and non-uniform backbones (tiny random lfm2,
 * qwen3_5 and the three Gemma 4 models of tests/goldens): the training
 * forward behind a captured prefix state is bitwise the inference prefill
 * (K/V of the attention layers at each layer's width, the recurrent blocks of
 * the others), and the whole-model backward (short conv, Gated DeltaNet,
 * gated attention with partial RoPE, MLP; Gemma 4's sliding windows, scale-1
 * attention, q/k/v norms, V = K, post-norms, GeGLU, routed experts, per-layer
 * inputs, layer_scalar, K/V sharing, soft-capped logits; packed segments)
 * agrees with central finite differences of the loss into the prefix K/V rows
 * and the initial recurrent states; checkpointing gives bitwise the same
 * gradients. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cartridge/cartridge_internal.h"
#include "grad/train.h"
#include "model/arch.h"
#include "model/state.h"
#include "tiny_model.h"

static const char *const HYBRIDS[] = {"tiny-lfm2", "tiny-qwen3_5", "tiny-gemma4",
                                      "tiny-gemma4-kvshare", "tiny-gemma4-moe"};
enum { N_MODELS = sizeof HYBRIDS / sizeof HYBRIDS[0], N_RECURRENT = 2 };

/* Deterministic values in [-s, s). */
static float urand(uint64_t *x, float s)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return s * (2.0f * (float)((*x >> 40) & 0xffffff) / 16777216.0f - 1.0f);
}

/* Prefix state of P rows: random K/V on attention layers, random blocks on
 * recurrent ones (the arrays of a dg_train_args), and their gradients. */
typedef struct prefix {
    int L;
    size_t P, *row, *nrec; /* row[il]: the layer's K/V row (0: none, a KV-sharing layer) */
    float **k, **v, **rec, **dk, **dv, **drec;
} prefix;

static prefix prefix_new(const deg_model *m, size_t P, uint64_t seed)
{
    prefix p = {.L = m->hp.n_layer, .P = P};
    float ***all[] = {&p.k, &p.v, &p.rec, &p.dk, &p.dv, &p.drec};
    for (int i = 0; i < 6; i++) *all[i] = calloc((size_t)p.L, sizeof(float *));
    p.nrec = calloc((size_t)p.L, sizeof(size_t));
    p.row = calloc((size_t)p.L, sizeof(size_t));
    for (int il = 0; il < p.L; il++) {
        p.row[il] = m->layers[il].has_kv ? m->layers[il].kv_row : 0;
        size_t nk = p.row[il] ? P * p.row[il] : 1, nr = m->layers[il].state_floats;
        p.nrec[il] = nr;
        p.k[il] = calloc(nk, 4); p.v[il] = calloc(nk, 4);
        p.dk[il] = calloc(nk, 4); p.dv[il] = calloc(nk, 4);
        p.rec[il] = nr ? calloc(nr, 4) : NULL;
        p.drec[il] = nr ? calloc(nr, 4) : NULL;
        for (size_t i = 0; m->layers[il].has_kv && i < nk; i++) {
            p.k[il][i] = urand(&seed, 1.0f);
            p.v[il][i] = urand(&seed, 1.0f);
        }
        for (size_t i = 0; i < nr; i++) p.rec[il][i] = urand(&seed, 0.5f);
    }
    return p;
}

static void prefix_free(prefix *p)
{
    float **all[] = {p->k, p->v, p->rec, p->dk, p->dv, p->drec};
    for (int i = 0; i < 6; i++) {
        for (int il = 0; il < p->L; il++) free(all[i][il]);
        free(all[i]);
    }
    free(p->nrec);
    free(p->row);
}

static void zero_grads(prefix *p)
{
    for (int il = 0; il < p->L; il++) {
        size_t nk = p->row[il] ? p->P * p->row[il] : 1;
        memset(p->dk[il], 0, nk * 4);
        memset(p->dv[il], 0, nk * 4);
        if (p->drec[il]) memset(p->drec[il], 0, p->nrec[il] * 4);
    }
}

enum { T = 9 };
static const int32_t IDS[T] = {5, 77, 300, 12, 9, 401, 33, 250, 7};
static const size_t SEGS[2] = {5, 4};
/* Targets away from each segment's first token (position 5 starts the second). */
static const deg_distill_target TG[] = {{1, 40, -0.5f}, {2, 41, -1.5f}, {3, 7, -0.1f},
                                        {4, 500, -0.7f}, {6, 3, -0.2f},  {7, 99, -1.1f},
                                        {8, 12, -0.4f}};

static float run_loss(const deg_model *m, prefix *p, int backward, int checkpoint)
{
    dg_distill_loss dl = {TG, sizeof TG / sizeof TG[0]};
    float loss = 0;
    dg_train_args a = {.pk = (const float *const *)p->k, .pv = (const float *const *)p->v,
                       .P = p->P, .prec = (const float *const *)p->rec, .ids = IDS, .T = T,
                       .loss_fn = dg_distill_loss_fn, .loss_ud = &dl, .loss = &loss,
                       .checkpoint = checkpoint, .seg_lens = SEGS, .n_segs = 2};
    if (backward) {
        a.dpk = p->dk;
        a.dpv = p->dv;
        a.dprec = p->drec;
    }
    cr_assert_eq(dg_train_run(m, &a), DEG_OK, "%s", deg_errmsg());
    return loss;
}

/* Indices of the n largest |g| plus n spread over the array. */
static void probes(const float *g, size_t len, size_t n, size_t *out)
{
    for (size_t j = 0; j < n; j++) {
        size_t best = 0;
        float bv = -1;
        for (size_t i = 0; i < len; i++) {
            int taken = 0;
            for (size_t q = 0; q < j; q++) taken |= out[q] == i;
            if (!taken && fabsf(g[i]) > bv) bv = fabsf(g[i]), best = i;
        }
        out[j] = best;
        out[n + j] = (j * 7919 + 13) % len;
    }
}

Test(train_hybrid, gradcheck_whole_model, .timeout = 600)
{
    for (int mi = 0; mi < N_MODELS; mi++) {
        deg_model *m = tiny_load(HYBRIDS[mi]);
        prefix p = prefix_new(m, 6, 42 + (uint64_t)mi);
        run_loss(m, &p, 1, 0);
        double worst_kv = 0, worst_rec = 0;
        int n_rec = 0, n_kv = 0;
        for (int il = 0; il < p.L; il++) {
            int rec = p.nrec[il] > 0;
            if (!rec && !p.row[il]) continue; /* reads another layer's rows */
            for (int which = 0; which < (rec ? 1 : 2); which++) {
                float *x = rec ? p.rec[il] : which ? p.v[il] : p.k[il];
                float *gr = rec ? p.drec[il] : which ? p.dv[il] : p.dk[il];
                size_t len = rec ? p.nrec[il] : p.P * p.row[il], pr[12];
                float *g = malloc(len * 4);
                memcpy(g, gr, len * 4);
                double gm = 0;
                for (size_t i = 0; i < len; i++) gm = fmax(gm, fabs(g[i]));
                cr_assert_gt(gm, 0, "%s layer %d: zero gradient", HYBRIDS[mi], il);
                probes(g, len, 6, pr);
                for (int q = 0; q < 12; q++) {
                    size_t i = pr[q];
                    float x0 = x[i], h = 1e-2f;
                    x[i] = x0 + h;
                    double lp = run_loss(m, &p, 0, 0);
                    x[i] = x0 - h;
                    double lm = run_loss(m, &p, 0, 0);
                    x[i] = x0;
                    double e = fabs((lp - lm) / (2.0 * h) - g[i]) / gm;
                    if (rec) worst_rec = fmax(worst_rec, e), n_rec++;
                    else worst_kv = fmax(worst_kv, e), n_kv++;
                }
                free(g);
            }
        }
        cr_log_info("gradcheck %s: max |fd - analytic| / max|grad|: prefix K/V %.3g (%d probes), "
                    "initial recurrent state %.3g (%d probes)", HYBRIDS[mi], worst_kv, n_kv,
                    worst_rec, n_rec);
        cr_expect_lt(worst_kv, 2e-2, "%s", HYBRIDS[mi]);
        cr_expect_lt(worst_rec, 2e-2, "%s", HYBRIDS[mi]);
        if (mi < N_RECURRENT) cr_expect_gt(n_rec, 0);
        /* Checkpointing recomputes each layer with the same code: bitwise. */
        prefix q = prefix_new(m, 6, 42 + (uint64_t)mi);
        zero_grads(&p);
        run_loss(m, &p, 1, 0);
        run_loss(m, &q, 1, 1);
        for (int il = 0; il < p.L; il++) {
            size_t nk = p.row[il] ? p.P * p.row[il] : 1;
            cr_expect(memcmp(p.dk[il], q.dk[il], nk * 4) == 0 &&
                      memcmp(p.dv[il], q.dv[il], nk * 4) == 0 &&
                      (!p.nrec[il] || memcmp(p.drec[il], q.drec[il], p.nrec[il] * 4) == 0),
                      "%s layer %d: checkpointed gradients differ", HYBRIDS[mi], il);
        }
        prefix_free(&q);
        prefix_free(&p);
        deg_model_free(m);
    }
}

Test(train_hybrid, forward_equals_prefill)
{
    /* The training forward of a suffix behind the trunk's state (K/V rows
     * and recurrent blocks after P tokens) = the prefill of prefix + suffix,
     * bitwise, unpacked and packed (each segment restarts from the state). */
    for (int mi = 0; mi < N_MODELS; mi++) {
        deg_model *m = tiny_load(HYBRIDS[mi]);
        geo g = geometry(m);
        enum { P = 11, S = 6 };
        int32_t all[P + S];
        for (int i = 0; i < P + S; i++) all[i] = (int32_t)((i * 37 + 11) % (int)g.V);
        deg_trunk *t = NULL;
        cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
        float *ref = malloc((P + S) * g.V * 4), *lg = malloc(2 * S * g.V * 4);
        cr_assert_eq(deg_trunk_prefill(t, all, P + S, ref, NULL), DEG_OK);
        deg_trunk *tp = NULL;
        cr_assert_eq(deg_trunk_new(m, &tp), DEG_OK);
        cr_assert_eq(deg_trunk_prefill(tp, all, P, NULL, NULL), DEG_OK);
        int32_t twice[2 * S];
        memcpy(twice, all + P, S * 4);
        memcpy(twice + S, all + P, S * 4);
        size_t segs[2] = {S, S};
        for (int packed = 0; packed < 2; packed++) {
            dg_train_args a = {.pk = (const float *const *)tp->st.k,
                               .pv = (const float *const *)tp->st.v, .P = P,
                               .prec = (const float *const *)tp->st.rec, .ids = twice,
                               .T = packed ? 2 * S : S, .logits = lg,
                               .seg_lens = packed ? segs : NULL, .n_segs = packed ? 2 : 0};
            cr_assert_eq(dg_train_run(m, &a), DEG_OK, "%s", deg_errmsg());
            for (int r = 0; r <= packed; r++)
                cr_expect(memcmp(lg + r * S * g.V, ref + P * g.V, S * g.V * 4) == 0,
                          "%s: training forward (packed %d, segment %d) differs from the "
                          "prefill", HYBRIDS[mi], packed, r);
        }
        deg_trunk_free(tp);
        deg_trunk_free(t);
        free(ref); free(lg);
        deg_model_free(m);
    }
}
