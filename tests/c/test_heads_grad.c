/* Gradchecks of every head loss (lib/deg/heads_grad.c): analytic gradients
 * against central finite differences of the loss itself, on random heads and
 * hidden states (NE = 6, D = DG_HEAD_DIM), plus hand values and determinism. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "deg/fill.h"
#include "deg/heads_grad.h"

#define NE 6
#define D DG_HEAD_DIM
#define NC 5
#define NO 4

/* one buffer per tensor, same layout in weights and gradients */
enum { CQ, CK, CU, SQ, SK, SU, NW, NB, XQS, XKS, XQE, XKE, XNW, XNB, KW, KB,
       AQ, AK, AU, AB, ABIAS, NT };
static const size_t SZ[NT] = {D * NE, D * NE, NE, D * NE, D * NE, NE, NE, 1,
                              D * NE, D * NE, D * NE, D * NE, NE, 1, (DG_COUNT_MAX + 1) * NE,
                              DG_COUNT_MAX + 1, D * NE, D * NE, NE, 1, 4 * DG_ANCHOR_BUCKETS};
static float *W[NT], *G[NT];
static dg_heads H;
static dg_heads_grad GR;
static float A[NE], OPTS[NO * NE], CTX[NC * NE];
static unsigned long long rng_state = 88172645463325252ULL;

static float frand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static void setup(void)
{
    for (int t = 0; t < NT; t++) {
        W[t] = malloc(SZ[t] * sizeof(float));
        G[t] = calloc(SZ[t], sizeof(float));
        for (size_t i = 0; i < SZ[t]; i++) W[t][i] = frand() * 0.3f;
    }
    H = (dg_heads){.E = NE, .choice_q = W[CQ], .choice_k = W[CK], .choice_u = W[CU],
                   .score_q = W[SQ], .score_k = W[SK], .score_u = W[SU], .noul_w = W[NW],
                   .noul_b = W[NB], .ext_qs = W[XQS], .ext_ks = W[XKS], .ext_qe = W[XQE],
                   .ext_ke = W[XKE], .ext_null_w = W[XNW], .ext_null_b = W[XNB],
                   .count_w = W[KW], .count_b = W[KB], .anchor_q = W[AQ], .anchor_k = W[AK],
                   .anchor_u = W[AU], .anchor_b = W[AB], .anchor_bias = W[ABIAS]};
    GR = (dg_heads_grad){.choice_q = G[CQ], .choice_k = G[CK], .choice_u = G[CU],
                         .score_q = G[SQ], .score_k = G[SK], .score_u = G[SU], .noul_w = G[NW],
                         .noul_b = G[NB], .ext_qs = G[XQS], .ext_ks = G[XKS], .ext_qe = G[XQE],
                         .ext_ke = G[XKE], .ext_null_w = G[XNW], .ext_null_b = G[XNB],
                         .count_w = G[KW], .count_b = G[KB], .anchor_q = G[AQ],
                         .anchor_k = G[AK], .anchor_u = G[AU], .anchor_b = G[AB],
                         .anchor_bias = G[ABIAS]};
    for (int i = 0; i < NE; i++) A[i] = frand();
    for (int i = 0; i < NO * NE; i++) OPTS[i] = frand();
    for (int i = 0; i < NC * NE; i++) CTX[i] = frand();
}

static void teardown(void)
{
    for (int t = 0; t < NT; t++) {
        free(W[t]);
        free(G[t]);
    }
}

static const double T_OPT[NO] = {0.1, 0.6, 0.0, 0.3};
static const size_t PS[] = {1, 3}, PE[] = {3};
static const size_t STARTS[] = {2, 4, 2};  /* a duplicate counts once */

static double run_loss(int which, dg_heads_grad *g)
{
    switch (which) {
    case 0: return dg_grad_pointer(&H, g, 0, A, OPTS, NO, T_OPT);
    case 1: return dg_grad_pointer(&H, g, 1, A, OPTS, NO, T_OPT);
    case 2: return dg_grad_noul(&H, g, A, 0.8);
    case 3: return dg_grad_extract(&H, g, A, CTX, NC, PS, 2, PE, 1);
    case 4: { const size_t nul = NC; return dg_grad_extract(&H, g, A, CTX, NC, &nul, 1, &nul, 1); }
    case 5: return dg_grad_count(&H, g, A, 1, 7, 3);
    case 6: return dg_grad_anchor(&H, g, A, CTX, 1, NC, STARTS, 3);
    case 7: return dg_grad_anchor(&H, g, A, CTX, 0, NC, NULL, 0);
    default: return dg_grad_extract_anchored(&H, g, A, CTX, NC, 2, 4, PS, 2, PE, 1);
    }
}

static double loss_of(int which)
{
    dg_heads_grad tmp;  /* gradients into a throwaway buffer */
    float *buf[NT];
    for (int t = 0; t < NT; t++) buf[t] = calloc(SZ[t], sizeof(float));
    tmp = (dg_heads_grad){buf[CQ], buf[CK], buf[CU], buf[SQ], buf[SK], buf[SU], buf[NW], buf[NB],
                          buf[XQS], buf[XKS], buf[XQE], buf[XKE], buf[XNW], buf[XNB], buf[KW],
                          buf[KB], buf[AQ], buf[AK], buf[AU], buf[AB], buf[ABIAS]};
    double l = run_loss(which, &tmp);
    for (int t = 0; t < NT; t++) free(buf[t]);
    return l;
}

/* compare G[t] to central differences for every tensor the loss touches */
static void gradcheck(int which, const int *tensors, int nt)
{
    for (int t = 0; t < NT; t++) memset(G[t], 0, SZ[t] * sizeof(float));
    double l0 = run_loss(which, &GR);
    cr_assert(isfinite(l0) && l0 >= 0, "loss %g", l0);
    int checked = 0;
    for (int k = 0; k < nt; k++) {
        int t = tensors[k];
        size_t step = SZ[t] > 64 ? 7 : 1;
        for (size_t i = 0; i < SZ[t]; i += step) {
            float keep = W[t][i];
            const float eps = 1e-2f;
            W[t][i] = keep + eps;
            double lp = loss_of(which);
            W[t][i] = keep - eps;
            double lm = loss_of(which);
            W[t][i] = keep;
            double num = (lp - lm) / (2.0 * eps), ana = G[t][i];
            cr_assert(fabs(num - ana) <= 2e-3 + 2e-2 * fabs(num),
                      "loss %d tensor %d [%zu]: analytic %g numeric %g", which, t, i, ana, num);
            checked++;
        }
    }
    cr_assert(checked > 0);
    /* tensors the loss does not touch stay zero */
    for (int t = 0; t < NT; t++) {
        int mine = 0;
        for (int k = 0; k < nt; k++) mine |= tensors[k] == t;
        if (!mine)
            for (size_t i = 0; i < SZ[t]; i++) cr_assert(G[t][i] == 0.0f);
    }
}

TestSuite(heads_grad, .init = setup, .fini = teardown);

Test(heads_grad, choice_kl) { int t[] = {CQ, CK, CU}; gradcheck(0, t, 3); }
Test(heads_grad, score_kl) { int t[] = {SQ, SK, SU}; gradcheck(1, t, 3); }
Test(heads_grad, noul_kl) { int t[] = {NW, NB}; gradcheck(2, t, 2); }
Test(heads_grad, extract_marginal) { int t[] = {XQS, XKS, XQE, XKE, XNW, XNB}; gradcheck(3, t, 6); }
Test(heads_grad, extract_null) { int t[] = {XQS, XKS, XQE, XKE, XNW, XNB}; gradcheck(4, t, 6); }
Test(heads_grad, count_ce) { int t[] = {KW, KB}; gradcheck(5, t, 2); }
Test(heads_grad, anchor_bce) { int t[] = {AQ, AK, AU, AB}; gradcheck(6, t, 4); }
Test(heads_grad, anchor_bce_negative) { int t[] = {AQ, AK, AU, AB}; gradcheck(7, t, 4); }
Test(heads_grad, extract_anchored_bias)
{
    int t[] = {XQS, XKS, XQE, XKE, XNW, XNB, ABIAS};
    gradcheck(8, t, 7);
}

/* zero anchor head but b: every logit = b; BCE per token ln(1 + e^b) for
 * negatives, ln(1 + e^-b) for the positives, over 1 + 2 distinct starts */
Test(heads_grad, anchor_hand_value)
{
    memset(W[AQ], 0, SZ[AQ] * sizeof(float));
    memset(W[AU], 0, SZ[AU] * sizeof(float));
    W[AB][0] = -1.0f;
    double l = dg_grad_anchor(&H, &GR, A, CTX, 1, NC, STARTS, 3);
    double want = (2 * log1p(exp(-1.0)) + 2 * log1p(exp(1.0))) / 3.0;
    cr_assert_float_eq(l, want, 1e-9, "got %.12g want %.12g", l, want);
    double s = 1.0 / (1.0 + exp(1.0));
    cr_assert_float_eq(G[AB][0], (float)((4 * s - 2) / 3.0), 1e-6);
}

/* hand values: zero noul head -> logits [0, 0]: KL([.8,.2] || [.5,.5]) =
 * .8 ln 1.6 + .2 ln .4; gradient of the logit p - t = .5 - .8 = -.3 */
Test(heads_grad, noul_hand_value)
{
    memset(W[NW], 0, NE * sizeof(float));
    W[NB][0] = 0;
    double l = dg_grad_noul(&H, &GR, A, 0.8);
    cr_assert_float_eq(l, 0.8 * log(1.6) + 0.2 * log(0.4), 1e-12);
    cr_assert_float_eq(G[NB][0], -0.3f, 1e-6);
    for (int e = 0; e < NE; e++) cr_assert_float_eq(G[NW][e], -0.3f * A[e], 1e-6);
}

/* zero count head: uniform over [1, 7] -> CE = ln 7 */
Test(heads_grad, count_hand_value)
{
    memset(W[KW], 0, SZ[KW] * sizeof(float));
    memset(W[KB], 0, SZ[KB] * sizeof(float));
    double l = dg_grad_count(&H, &GR, A, 1, 7, 3);  /* once: the macro evaluates twice */
    cr_assert_float_eq(l, log(7.0), 1e-12);
    cr_assert_float_eq(G[KB][3], (float)(1.0 / 7 - 1), 1e-6, "got %g", G[KB][3]);
    cr_assert(G[KB][0] == 0.0f && G[KB][8] == 0.0f);
}

/* same inputs -> the same gradient bits */
Test(heads_grad, deterministic)
{
    dg_grad_extract(&H, &GR, A, CTX, NC, PS, 2, PE, 1);
    float *first = malloc(SZ[XKS] * sizeof(float));
    memcpy(first, G[XKS], SZ[XKS] * sizeof(float));
    memset(G[XKS], 0, SZ[XKS] * sizeof(float));
    dg_grad_extract(&H, &GR, A, CTX, NC, PS, 2, PE, 1);
    cr_assert(memcmp(first, G[XKS], SZ[XKS] * sizeof(float)) == 0);
    free(first);
}

/* d loss / d hidden (d_answer, and d_rows for the pointer heads) against
 * central differences on A and OPTS, for every loss. */
Test(heads_grad, hidden_gradients)
{
    static float da[NE], dr[NO * NE];
    for (int which = 0; which <= 8; which++) {
        for (int t = 0; t < NT; t++) memset(G[t], 0, SZ[t] * sizeof(float));
        memset(da, 0, sizeof da);
        memset(dr, 0, sizeof dr);
        dg_heads_grad g = GR;
        g.d_answer = da;
        g.d_rows = which <= 1 ? dr : NULL;
        double l0 = run_loss(which, &g);
        cr_assert(isfinite(l0));
        int checked = 0;
        for (int arr = 0; arr < (which <= 1 ? 2 : 1); arr++) {
            float *x = arr ? OPTS : A, *an = arr ? dr : da;
            size_t n = arr ? (size_t)NO * NE : (size_t)NE;
            for (size_t i = (size_t)which % 3; i < n; i += 3) {
                float keep = x[i];
                const float eps = 1e-2f;
                x[i] = keep + eps;
                double lp = loss_of(which);
                x[i] = keep - eps;
                double lm = loss_of(which);
                x[i] = keep;
                double num = (lp - lm) / (2.0 * eps);
                cr_assert(fabs(num - an[i]) <= 2e-3 + 2e-2 * fabs(num),
                          "loss %d %s[%zu]: analytic %g numeric %g", which,
                          arr ? "rows" : "answer", i, (double)an[i], num);
                checked++;
            }
        }
        cr_assert(checked > 0);
    }
}
