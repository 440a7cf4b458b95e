/* LoRA adapters on the fork path (include/lora.h) on the tiny random models:
 * the kernel gradcheck, creation and parameters, adapter-off and B = 0 rows
 * equal the base model, adapted rows bitwise independent (alone / batched
 * with other adapters and adapter-off rows / 1 or 2 threads), the training
 * tape bitwise equal to forks, its backward against finite differences and
 * with checkpointing, the torch golden (tests/goldens/gen_lora_goldens.py)
 * and bad input. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deg.h"
#include "lora.h"
#include "model/lora_internal.h"
#include "tiny_model.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static double urand(void) /* [-1, 1) */
{
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}
static void fill(float *x, size_t n, double s) { for (size_t i = 0; i < n; i++) x[i] = (float)(s * urand()); }

/* ------------------------------------------------------- kernel gradcheck */

/* float64 reference: L = sum_i dy_i . (scale * B (A x_i)) */
typedef struct { const double *A, *B, *x; const float *dy; size_t n, in, out; int r; double s; } lr_ctx;
static double lr_loss(const lr_ctx *c)
{
    double L = 0;
    for (size_t i = 0; i < c->n; i++) {
        double u[16];
        for (int j = 0; j < c->r; j++) {
            u[j] = 0;
            for (size_t k = 0; k < c->in; k++) u[j] += c->A[j * c->in + k] * c->x[i * c->in + k];
        }
        for (size_t o = 0; o < c->out; o++) {
            double y = 0;
            for (int j = 0; j < c->r; j++) y += c->B[o * c->r + j] * u[j];
            L += c->dy[i * c->out + o] * c->s * y;
        }
    }
    return L;
}
static void num_grad(double *g, double *p, size_t n, lr_ctx *c)
{
    for (size_t i = 0; i < n; i++) {
        double p0 = p[i], h = 1e-6;
        p[i] = p0 + h; double a = lr_loss(c);
        p[i] = p0 - h; double b = lr_loss(c);
        p[i] = p0;
        g[i] = (a - b) / (2 * h);
    }
}

Test(lora, kernel_gradcheck)
{
    size_t n = 5, in = 12, out = 9;
    int r = 3;
    float s = 1.7f;
    float A[36], B[27], x[60], dy[45], y[45], y0[45];
    fill(A, 36, 0.5); fill(B, 27, 0.5); fill(x, 60, 1.0); fill(dy, 45, 1.0); fill(y0, 45, 1.0);
    double Ad[36], Bd[27], xd[60];
    for (int i = 0; i < 36; i++) Ad[i] = A[i];
    for (int i = 0; i < 27; i++) Bd[i] = B[i];
    for (int i = 0; i < 60; i++) xd[i] = x[i];
    lr_ctx c = {Ad, Bd, xd, dy, n, in, out, r, s};

    /* forward: y = y0 + s B (A x) */
    memcpy(y, y0, sizeof y);
    dg_lora_rows(y, out, x, in, n, A, B, r, in, out, s);
    double ef = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t o = 0; o < out; o++) {
            double ref = y0[i * out + o];
            for (int j = 0; j < r; j++) {
                double u = 0;
                for (size_t k = 0; k < in; k++) u += Ad[j * in + k] * xd[i * in + k];
                ref += s * Bd[o * r + j] * u;
            }
            ef = fmax(ef, fabs(y[i * out + o] - ref));
        }
    cr_expect_lt(ef, 1e-5, "forward max abs err %g", ef);

    float dA[36] = {0}, dB[27] = {0}, dx[60] = {0};
    dg_lora_rows_backward(dA, dB, dx, in, dy, out, x, in, n, A, B, r, in, out, s);
    double gA[36], gB[27], gx[60];
    num_grad(gA, Ad, 36, &c);
    num_grad(gB, Bd, 27, &c);
    num_grad(gx, xd, 60, &c);
    double eA = rel_err_fd(dA, gA, 36), eB = rel_err_fd(dB, gB, 27), ex = rel_err_fd(dx, gx, 60);
    cr_log_info("lora kernel gradcheck: rel err dA %.3g dB %.3g dx %.3g", eA, eB, ex);
    cr_expect_lt(eA, 1e-5);
    cr_expect_lt(eB, 1e-5);
    cr_expect_lt(ex, 1e-5);
}

/* -------------------------------------------------- creation, parameters */

Test(lora, new_and_params)
{
    deg_model *m = tiny_load("tiny-qwen3");
    deg_model_info mi;
    deg_model_get_info(m, &mi);
    deg_lora_params p = deg_lora_default_params();
    cr_expect_eq(p.rank, 8);
    cr_expect_eq(p.alpha, 16.0f);
    cr_expect_eq(p.targets, (uint32_t)DEG_LORA_ALL);
    p.rank = 4;
    p.n_adapters = 2;
    deg_lora *l = NULL;
    cr_assert_eq(deg_lora_new(m, &p, &l), DEG_OK, "%s", deg_errmsg());
    size_t E = (size_t)mi.n_embd, QD = (size_t)mi.n_head * mi.head_dim;
    size_t KD = (size_t)mi.n_head_kv * mi.head_dim, F = (size_t)mi.n_ff;
    size_t per_layer = 4 * ((E + QD) + (E + KD) + (E + KD) + (QD + E) + 2 * (E + F) + (F + E));
    cr_expect_eq(deg_lora_n_params(l), 2 * (size_t)mi.n_layer * per_layer);
    size_t n = deg_lora_n_params(l);
    float *w = malloc(n * 4);
    cr_assert_eq(deg_lora_get_params(l, w, n), DEG_OK);
    /* adapter 1, layer 0, target q: A in U(-1/sqrt(E), 1/sqrt(E)), B = 0 */
    size_t o = dg_lora_offset(l, 1, 0, DG_LORA_Q);
    double amax = 0, bmax = 0;
    for (size_t i = 0; i < 4 * E; i++) amax = fmax(amax, fabs(w[o + i]));
    for (size_t i = 0; i < QD * 4; i++) bmax = fmax(bmax, fabs(w[o + 4 * E + i]));
    cr_expect(amax > 0.5 / sqrt((double)E) && amax <= 1.0 / sqrt((double)E), "A bound %g", amax);
    cr_expect_eq(bmax, 0.0);
    w[3] = NAN;
    cr_expect_eq(deg_lora_set_params(l, w, n), DEG_ERR_NUMERIC);
    cr_expect(strstr(deg_errmsg(), "parameter 3") != NULL, "%s", deg_errmsg());
    cr_expect_eq(deg_lora_set_params(l, w, n - 1), DEG_ERR_ARG);
    w[3] = 0.25f;
    cr_expect_eq(deg_lora_set_params(l, w, n), DEG_OK);
    float v;
    cr_assert_eq(deg_lora_get_params(l, w, n), DEG_OK);
    v = w[3];
    cr_expect_eq(v, 0.25f);
    /* same seed, same init */
    deg_lora *l2 = NULL;
    p.targets = DEG_LORA_Q | DEG_LORA_DOWN;
    cr_assert_eq(deg_lora_new(m, &p, &l2), DEG_OK);
    cr_expect_eq(deg_lora_n_params(l2), 2 * (size_t)mi.n_layer * 4 * ((E + QD) + (F + E)));
    deg_lora_free(l2);
    /* bad params */
    p = deg_lora_default_params();
    p.rank = 0;
    cr_expect_eq(deg_lora_new(m, &p, &l2), DEG_ERR_ARG);
    p.rank = 257;
    cr_expect_eq(deg_lora_new(m, &p, &l2), DEG_ERR_ARG);
    p.rank = 8;
    p.targets = 1024;
    cr_expect_eq(deg_lora_new(m, &p, &l2), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "targets") != NULL, "%s", deg_errmsg());
    /* recurrent targets only, on a model without recurrent layers: nothing */
    p.targets = DEG_LORA_ALL_RECURRENT;
    cr_expect_eq(deg_lora_new(m, &p, &l2), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "no layer") != NULL, "%s", deg_errmsg());
    p.targets = DEG_LORA_ALL;
    p.alpha = INFINITY;
    cr_expect_eq(deg_lora_new(m, &p, &l2), DEG_ERR_ARG);
    p.alpha = 16;
    p.n_adapters = 0;
    cr_expect_eq(deg_lora_new(m, &p, &l2), DEG_ERR_ARG);
    cr_expect_eq(deg_lora_new(NULL, &p, &l2), DEG_ERR_ARG);
    free(w);
    deg_lora_free(l);
    deg_lora_free(NULL);
    deg_model_free(m);
}

/* --------------------------------------------------------- fork rows */

/* Adapters with random A and B (so every target changes the numbers). */
static deg_lora *random_lora(const deg_model *m, int n_adapters, uint32_t targets)
{
    deg_lora_params p = deg_lora_default_params();
    p.rank = 4;
    p.n_adapters = n_adapters;
    p.targets = targets;
    p.seed = 7;
    deg_lora *l = NULL;
    cr_assert_eq(deg_lora_new(m, &p, &l), DEG_OK, "%s", deg_errmsg());
    size_t n = deg_lora_n_params(l);
    float *w = malloc(n * 4);
    fill(w, n, 0.2);
    cr_assert_eq(deg_lora_set_params(l, w, n), DEG_OK);
    free(w);
    return l;
}

static const int32_t TRUNK_IDS[] = {5, 17, 3, 99, 42, 7, 61, 12, 8, 33};
static const int32_t ROW_A[] = {4, 9, 77, 21, 6, 15};
static const int32_t ROW_B[] = {11, 2, 50};
static const int32_t ROW_C[] = {30, 31, 32, 33, 34, 35, 36, 1};

typedef struct rowres { float *hidden, *logits; size_t n; } rowres;

/* A tiny model, two random adapters and a trunk of TRUNK_IDS. */
typedef struct fixture {
    deg_model *m;
    deg_lora *l;
    deg_trunk *t;
    size_t E, V;
    int n_layer;
} fixture;
static fixture fixture_new(const char *name)
{
    fixture x = {.m = tiny_load(name)};
    deg_model_info mi;
    deg_model_get_info(x.m, &mi);
    x.E = (size_t)mi.n_embd;
    x.V = (size_t)mi.n_vocab;
    x.n_layer = mi.n_layer;
    /* on the hybrids also their recurrent layers' own projections (llama and
     * qwen3 have none: those bits add nothing there) */
    x.l = random_lora(x.m, 2, DEG_LORA_ALL | DEG_LORA_ALL_RECURRENT);
    cr_assert_eq(deg_trunk_new(x.m, &x.t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(x.t, TRUNK_IDS, 10, NULL, NULL), DEG_OK);
    return x;
}
static void fixture_free(fixture *x)
{
    deg_trunk_free(x->t);
    deg_lora_free(x->l);
    deg_model_free(x->m);
}

/* Feed forks of trunk with the given rows and adapters in one batch; keep
 * each row's hidden states and logits. */
static void run_forks(deg_trunk *t, const deg_lora *l, size_t n, const int32_t *const *ids,
                      const size_t *lens, const int32_t *ad, rowres *out, size_t E, size_t V)
{
    deg_fork **f = calloc(n, sizeof *f);
    float **lg = calloc(n, sizeof *lg);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(deg_fork_new(t, &f[i]), DEG_OK);
        cr_assert_eq(deg_fork_set_adapter(f[i], l, ad[i]), DEG_OK, "%s", deg_errmsg());
        lg[i] = out[i].logits = malloc(lens[i] * V * 4);
        out[i].hidden = malloc(lens[i] * E * 4);
        out[i].n = lens[i];
    }
    cr_assert_eq(deg_forks_feed(f, n, ids, lens, lg), DEG_OK, "%s", deg_errmsg());
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(deg_fork_hidden(f[i], 0, lens[i], out[i].hidden), DEG_OK);
        deg_fork_free(f[i]);
    }
    free(f);
    free(lg);
}
static void rowres_free(rowres *r) { free(r->hidden); free(r->logits); }

static void check_independent(const char *name)
{
    fixture x = fixture_new(name);
    deg_model *m = x.m;
    deg_lora *l = x.l;
    deg_trunk *t = x.t;
    size_t E = x.E, V = x.V;

    const int32_t *ids1[] = {ROW_A};
    size_t len1[] = {6};
    int32_t ad1[] = {0};
    rowres alone, base;
    run_forks(t, l, 1, ids1, len1, ad1, &alone, E, V);
    int32_t off[] = {-1};
    run_forks(t, l, 1, ids1, len1, off, &base, E, V);
    cr_expect(memcmp(alone.hidden, base.hidden, 6 * E * 4) != 0, "the adapter changes nothing");

    /* Row A with adapter 0 between an adapter-off row, an adapter-1 row and
     * another adapter-0 row, at 1 and 2 threads. */
    const int32_t *ids4[] = {ROW_B, ROW_A, ROW_C, ROW_B};
    size_t len4[] = {3, 6, 8, 3};
    int32_t ad4[] = {-1, 0, 1, 0};
    for (int nt = 1; nt <= 2; nt++) {
        deg_set_num_threads(nt);
        rowres r4[4];
        run_forks(t, l, 4, ids4, len4, ad4, r4, E, V);
        cr_expect(memcmp(r4[1].hidden, alone.hidden, 6 * E * 4) == 0,
                  "%s: adapted row differs batched (threads %d)", name, nt);
        cr_expect(memcmp(r4[1].logits, alone.logits, 6 * V * 4) == 0,
                  "%s: adapted logits differ batched (threads %d)", name, nt);
        /* the adapter-off row is the base model's */
        const int32_t *idsb[] = {ROW_B};
        size_t lenb[] = {3};
        rowres rb;
        run_forks(t, l, 1, idsb, lenb, off, &rb, E, V);
        cr_expect(memcmp(r4[0].hidden, rb.hidden, 3 * E * 4) == 0,
                  "%s: adapter-off row differs next to adapted rows", name);
        cr_expect(memcmp(r4[3].hidden, rb.hidden, 3 * E * 4) != 0,
                  "%s: adapter 0 left row B unchanged", name);
        rowres_free(&rb);
        for (int i = 0; i < 4; i++) rowres_free(&r4[i]);
    }
    deg_set_num_threads(0);

    /* B = 0: an adapter equals the base model (values; y + 0). */
    deg_lora_params p = deg_lora_default_params();
    deg_lora *z = NULL;
    cr_assert_eq(deg_lora_new(m, &p, &z), DEG_OK);
    rowres rz;
    int32_t ad0[] = {0};
    run_forks(t, z, 1, ids1, len1, ad0, &rz, E, V);
    for (size_t i = 0; i < 6 * E; i++)
        cr_assert_eq(rz.hidden[i], base.hidden[i], "%s: B = 0 adapter differs at %zu", name, i);
    rowres_free(&rz);
    deg_lora_free(z);

    rowres_free(&alone);
    rowres_free(&base);
    fixture_free(&x);
}

Test(lora, rows_independent_llama) { check_independent("tiny-llama"); }
Test(lora, rows_independent_qwen3) { check_independent("tiny-qwen3"); }

Test(lora, fork_set_adapter_errors)
{
    deg_model *m = tiny_load("tiny-llama"), *q = tiny_load("tiny-qwen3");
    deg_lora *l = random_lora(m, 2, DEG_LORA_ALL), *lq = random_lora(q, 1, DEG_LORA_ALL);
    deg_trunk *t = NULL;
    deg_fork *f = NULL;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, TRUNK_IDS, 4, NULL, NULL), DEG_OK);
    cr_assert_eq(deg_fork_new(t, &f), DEG_OK);
    cr_expect_eq(deg_fork_set_adapter(f, l, 2), DEG_ERR_ARG);
    cr_expect_eq(deg_fork_set_adapter(f, l, -2), DEG_ERR_ARG);
    cr_expect_eq(deg_fork_set_adapter(f, lq, 0), DEG_ERR_MISMATCH);
    cr_expect_eq(deg_fork_set_adapter(NULL, l, 0), DEG_ERR_ARG);
    cr_expect_eq(deg_fork_set_adapter(f, l, 1), DEG_OK);
    cr_expect_eq(deg_fork_set_adapter(f, NULL, 0), DEG_OK);
    deg_fork_free(f);
    deg_trunk_free(t);
    deg_lora_free(l);
    deg_lora_free(lq);
    deg_model_free(m);
    deg_model_free(q);
}

/* ------------------------------------------------------------- the tape */

/* Loss of the probe: sum_g w_g . hidden(row_g, pos_g), in double. */
typedef struct probe {
    size_t n;
    size_t rows[4], pos[4];
    float *w;   /* [n, E] */
} probe;

static double probe_loss(const deg_lora *l, deg_trunk *t, const int32_t *const *ids,
                         const size_t *lens, const int32_t *ad, size_t nr, const probe *pr,
                         size_t E)
{
    deg_lora_tape *tp = NULL;
    cr_assert_eq(deg_lora_tape_forward(l, t, ids, lens, ad, nr, 0, &tp), DEG_OK, "%s",
                 deg_errmsg());
    float *h = malloc(E * 4);
    double L = 0;
    for (size_t g = 0; g < pr->n; g++) {
        cr_assert_eq(deg_lora_tape_hidden(tp, pr->rows[g], pr->pos[g], 1, h), DEG_OK);
        for (size_t e = 0; e < E; e++) L += (double)pr->w[g * E + e] * h[e];
    }
    free(h);
    deg_lora_tape_free(tp);
    return L;
}

/* h: the central differences' step (f32 forward; the probe in double). */
static void check_tape_h(const char *name, double h_step)
{
    fixture x = fixture_new(name);
    deg_lora *l = x.l;
    deg_trunk *t = x.t;
    size_t E = x.E, V = x.V;
    const int32_t *ids[] = {ROW_A, ROW_B, ROW_C};
    size_t lens[] = {6, 3, 8};
    int32_t ad[] = {0, -1, 1};

    /* Forward: the tape's hidden states are bitwise the forks'. */
    rowres fr[3];
    run_forks(t, l, 3, ids, lens, ad, fr, E, V);
    deg_lora_tape *tp = NULL;
    cr_assert_eq(deg_lora_tape_forward(l, t, ids, lens, ad, 3, 0, &tp), DEG_OK, "%s",
                 deg_errmsg());
    for (size_t r = 0; r < 3; r++) {
        float *h = malloc(lens[r] * E * 4);
        cr_assert_eq(deg_lora_tape_hidden(tp, r, 0, lens[r], h), DEG_OK);
        cr_expect(memcmp(h, fr[r].hidden, lens[r] * E * 4) == 0,
                  "%s: tape row %zu differs from its fork", name, r);
        free(h);
        rowres_free(&fr[r]);
    }

    /* Backward vs central finite differences of the f32 forward (double
     * accumulation of the probe), on a sample of parameters of every target
     * of both adapters. */
    probe pr = {.n = 4, .rows = {0, 0, 2, 1}, .pos = {5, 2, 7, 1}};
    pr.w = malloc(4 * E * 4);
    fill(pr.w, 4 * E, 1.0);
    size_t n = deg_lora_n_params(l);
    float *grad = calloc(n, 4), *grad2 = calloc(n, 4);
    cr_assert_eq(deg_lora_tape_backward(tp, pr.n, pr.rows, pr.pos, pr.w, grad, n), DEG_OK,
                 "%s", deg_errmsg());
    cr_expect_eq(deg_lora_tape_backward(tp, pr.n, pr.rows, pr.pos, pr.w, grad, n), DEG_ERR_ARG);
    deg_lora_tape_free(tp);
    /* checkpointing: bitwise-equal gradients */
    cr_assert_eq(deg_lora_tape_forward(l, t, ids, lens, ad, 3, 1, &tp), DEG_OK);
    cr_assert_eq(deg_lora_tape_backward(tp, pr.n, pr.rows, pr.pos, pr.w, grad2, n), DEG_OK);
    cr_expect(memcmp(grad, grad2, n * 4) == 0, "%s: checkpointed gradients differ", name);
    deg_lora_tape_free(tp);

    float *w = malloc(n * 4), *w0 = malloc(n * 4);
    deg_lora_get_params(l, w0, n);
    double emax = 0, gmax = 0;
    int checked = 0;
    for (int a = 0; a < 2; a++)
        for (int tg = 0; tg < DG_LORA_N_TARGETS; tg++) {
            int il = (a + tg) % x.n_layer, tries = 0;
            /* (a hybrid's recurrent layers have no q/k/v/o adapters, its
             * attention layers no rec_* ones; llama/qwen3 have no rec_*) */
            while (dg_lora_offset(l, a, il, tg) == (size_t)-1 && tries++ < x.n_layer)
                il = (il + 1) % x.n_layer;
            if (dg_lora_offset(l, a, il, tg) == (size_t)-1) continue;
            size_t o = dg_lora_offset(l, a, il, tg);
            size_t ra = 4 * dg_lora_in(l, il, tg), rb = dg_lora_out(l, il, tg) * 4;
            size_t idx[2] = {o + (size_t)(tg * 7) % ra, o + ra + (size_t)(tg * 5) % rb};
            for (int k = 0; k < 2; k++) {
                size_t i = idx[k];
                double h = h_step;
                memcpy(w, w0, n * 4);
                w[i] = (float)(w0[i] + h);
                deg_lora_set_params(l, w, n);
                double lp = probe_loss(l, t, ids, lens, ad, 3, &pr, E);
                w[i] = (float)(w0[i] - h);
                deg_lora_set_params(l, w, n);
                double lm = probe_loss(l, t, ids, lens, ad, 3, &pr, E);
                double num = (lp - lm) / ((double)(float)(w0[i] + h) - (double)(float)(w0[i] - h));
                emax = fmax(emax, fabs(num - grad[i]));
                gmax = fmax(gmax, fabs(num));
                checked++;
            }
        }
    deg_lora_set_params(l, w0, n);
    double rel = emax / gmax;
    cr_log_info("%s tape gradcheck (%d params, f32 central differences h %g): max abs err "
                "%.3g, max |grad| %.3g, rel %.3g", name, checked, h_step, emax, gmax, rel);
    cr_expect_lt(rel, 2e-2);
    cr_expect_gt(gmax, 1e-3);
    /* rows that run no adapter (row 1: -1) contribute nothing; an adapter no
     * row uses gets zero gradient: check with adapter 1 switched off */
    int32_t ad2[] = {0, -1, -1};
    memset(grad2, 0, n * 4);
    cr_assert_eq(deg_lora_tape_forward(l, t, ids, lens, ad2, 3, 0, &tp), DEG_OK);
    cr_assert_eq(deg_lora_tape_backward(tp, pr.n, pr.rows, pr.pos, pr.w, grad2, n), DEG_OK);
    size_t o1 = n / 2; /* adapter 1's parameters (adapter-major, two of one size) */
    int nz = 0;
    for (size_t i = o1; i < n; i++) nz += grad2[i] != 0.0f;
    cr_expect_eq(nz, 0, "unused adapter got %d nonzero gradients", nz);
    deg_lora_tape_free(tp);

    free(w); free(w0); free(grad); free(grad2); free(pr.w);
    fixture_free(&x);
}

static void check_tape(const char *name) { check_tape_h(name, 1e-2); }

Test(lora, tape_llama) { check_tape("tiny-llama"); }
Test(lora, tape_qwen3) { check_tape("tiny-qwen3"); }
/* Hybrids: adapters on the attention and MLP projections (qwen3_5's q_proj
 * whole: q and the output gate) and on the recurrent layers' own projections
 * (lfm2 in_proj / out_proj; qwen3_5 in_proj_qkv / in_proj_z / out_proj). */
Test(lora, tape_lfm2) { check_tape("tiny-lfm2"); }
Test(lora, tape_qwen3_5) { check_tape("tiny-qwen3_5"); }
/* Gemma 4: adapters on q/k/v/o and the dense MLP at each layer's own shapes.
 * A smaller step: the loss is strongly curved in some adapter parameters
 * (kvshare, adapter 1's k_proj A on layer 0, read by layers 0 and 2 through
 * k_norm: the central difference is -0.55 at h 3e-2, 6.22 at 1e-2, 7.25 at
 * 3.3e-3, 7.365 at 1.1e-3 for an analytic 7.381, which the transformers
 * golden confirms to 3e-6). */
Test(lora, tape_gemma4) { check_tape_h("tiny-gemma4", 2e-3); }
Test(lora, tape_gemma4_kvshare) { check_tape_h("tiny-gemma4-kvshare", 2e-3); }
Test(lora, tape_gemma4_moe) { check_tape_h("tiny-gemma4-moe", 2e-3); }
Test(lora, rows_independent_hybrids)
{
    check_independent("tiny-lfm2");
    check_independent("tiny-qwen3_5");
}
Test(lora, rows_independent_gemma4)
{
    check_independent("tiny-gemma4");
    check_independent("tiny-gemma4-kvshare");
    check_independent("tiny-gemma4-moe");
}

Test(lora, tape_errors)
{
    deg_model *m = tiny_load("tiny-llama");
    deg_lora *l = random_lora(m, 1, DEG_LORA_ALL);
    deg_trunk *t = NULL, *empty = NULL;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_new(m, &empty), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, TRUNK_IDS, 4, NULL, NULL), DEG_OK);
    const int32_t bad[] = {1, 1 << 30};
    const int32_t *ids[] = {ROW_A}, *idsb[] = {bad};
    size_t lens[] = {6}, lens0[] = {0}, lensb[] = {2};
    int32_t ad[] = {0}, adb[] = {1};
    deg_lora_tape *tp = NULL;
    cr_expect_eq(deg_lora_tape_forward(l, empty, ids, lens, ad, 1, 0, &tp), DEG_ERR_STATE);
    cr_expect_eq(deg_lora_tape_forward(l, t, ids, lens0, ad, 1, 0, &tp), DEG_ERR_ARG);
    cr_expect_eq(deg_lora_tape_forward(l, t, ids, lens, adb, 1, 0, &tp), DEG_ERR_ARG);
    cr_expect_eq(deg_lora_tape_forward(l, t, idsb, lensb, ad, 1, 0, &tp), DEG_ERR_RANGE);
    cr_expect(strstr(deg_errmsg(), "row 0, token 1") != NULL, "%s", deg_errmsg());
    cr_expect_eq(deg_lora_tape_forward(l, t, ids, lens, ad, 0, 0, &tp), DEG_ERR_ARG);
    cr_expect_null(tp);
    cr_assert_eq(deg_lora_tape_forward(l, t, ids, lens, ad, 1, 0, &tp), DEG_OK);
    float h[64 * 8];
    cr_expect_eq(deg_lora_tape_hidden(tp, 1, 0, 1, h), DEG_ERR_RANGE);
    cr_expect_eq(deg_lora_tape_hidden(tp, 0, 5, 2, h), DEG_ERR_RANGE);
    size_t n = deg_lora_n_params(l);
    float *g = calloc(n, 4);
    size_t rows[] = {0}, pos[] = {6};
    float dh[64] = {0};
    cr_expect_eq(deg_lora_tape_backward(tp, 1, rows, pos, dh, g, n), DEG_ERR_RANGE);
    cr_expect_eq(deg_lora_tape_backward(tp, 1, rows, pos, dh, g, n - 1), DEG_ERR_ARG);
    free(g);
    deg_lora_tape_free(tp);
    deg_lora_tape_free(NULL);
    deg_trunk_free(t);
    deg_trunk_free(empty);
    deg_lora_free(l);
    deg_model_free(m);
}

/* ------------------------------------------------------------ golden */

static void check_golden(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/lora/%s.safetensors", TINY_GOLDENS, name);
    dg_safetensors *st = NULL;
    cr_assert_eq(dg_safetensors_open(p, &st), DEG_OK, "%s: %s", p, deg_errmsg());
    deg_model *m = tiny_load(name);
    deg_model_info mi;
    deg_model_get_info(m, &mi);
    size_t E = (size_t)mi.n_embd, P, T, R, G, NP;
    const int32_t *tids = golden_tensor(st, "trunk_ids", &P), *ids = golden_tensor(st, "ids", &T);
    const int32_t *lens = golden_tensor(st, "lens", &R), *ads = golden_tensor(st, "adapters", NULL);
    const int32_t *cfg = golden_tensor(st, "config", NULL), *grow = golden_tensor(st, "g_row", &G);
    const int32_t *gpos = golden_tensor(st, "g_pos", NULL);
    const float *params = golden_tensor(st, "params", &NP), *dh = golden_tensor(st, "dhidden", NULL);
    const float *ghid = golden_tensor(st, "hidden", NULL);
    const double *gloss = golden_tensor(st, "loss", NULL), *ggrad = golden_tensor(st, "grad", NULL);

    deg_lora_params lp = deg_lora_default_params();
    lp.rank = cfg[0];
    lp.n_adapters = cfg[1];
    lp.alpha = (float)cfg[2];
    deg_lora *l = NULL;
    cr_assert_eq(deg_lora_new(m, &lp, &l), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_lora_n_params(l), NP, "layout size %zu vs golden %zu", deg_lora_n_params(l),
                 NP);
    cr_assert_eq(deg_lora_set_params(l, params, NP), DEG_OK);
    deg_trunk *t = NULL;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, tids, P, NULL, NULL), DEG_OK);
    const int32_t **rid = malloc(R * sizeof *rid);
    size_t *rl = malloc(R * sizeof *rl);
    for (size_t r = 0, o = 0; r < R; r++) {
        rid[r] = ids + o;
        rl[r] = (size_t)lens[r];
        o += rl[r];
    }
    deg_lora_tape *tp = NULL;
    cr_assert_eq(deg_lora_tape_forward(l, t, rid, rl, ads, R, 0, &tp), DEG_OK, "%s",
                 deg_errmsg());
    float *h = malloc(T * E * 4);
    for (size_t r = 0, o = 0; r < R; r++) {
        cr_assert_eq(deg_lora_tape_hidden(tp, r, 0, rl[r], h + o * E), DEG_OK);
        o += rl[r];
    }
    double eh = 0, mh = 0;
    for (size_t i = 0; i < T * E; i++) {
        eh = fmax(eh, fabs((double)h[i] - ghid[i]));
        mh = fmax(mh, fabs((double)ghid[i]));
    }
    double loss = 0, loss_scale = 0; /* sum |terms|: the sum's own scale */
    size_t *gr = malloc(G * sizeof *gr), *gp = malloc(G * sizeof *gp);
    for (size_t g = 0; g < G; g++) {
        gr[g] = (size_t)grow[g];
        gp[g] = (size_t)gpos[g];
        size_t ti = (size_t)gpos[g];
        for (size_t r = 0; r < gr[g]; r++) ti += rl[r];
        for (size_t e = 0; e < E; e++) {
            loss += (double)dh[g * E + e] * h[ti * E + e];
            loss_scale += fabs((double)dh[g * E + e] * h[ti * E + e]);
        }
    }
    float *grad = calloc(NP, 4);
    cr_assert_eq(deg_lora_tape_backward(tp, G, gr, gp, dh, grad, NP), DEG_OK, "%s",
                 deg_errmsg());
    double eg = rel_err_fd(grad, ggrad, NP);
    size_t zero_mismatch = 0;
    /* Exactly zero on one side only, beyond rounding: f32 GELU saturates (tanh
     * = -1: gelu and its derivative exactly 0) where f64 leaves ~1e-10 (Gemma 4's
     * wide MLPs), so a zero counts against a value above 1e-8 max |grad|. */
    double gmx = 0;
    for (size_t i = 0; i < NP; i++) gmx = fmax(gmx, fabs(ggrad[i]));
    for (size_t i = 0; i < NP; i++)
        zero_mismatch += (ggrad[i] == 0.0) != (grad[i] == 0.0f) &&
                         fmax(fabs(ggrad[i]), fabs((double)grad[i])) > 1e-8 * gmx;
    cr_log_info("%s lora golden: hidden max abs err %.3g (max %.3g), loss %.8f vs %.8f, grad "
                "rel err %.3g over %zu params", name, eh, mh, loss, gloss[0], eg, NP);
    cr_expect_lt(eh / mh, 1e-5);
    /* relative to the sum of the terms' magnitudes: a loss near 0 (tiny-gemma4:
     * 0.299 from terms summing to 95 in magnitude) is as exact as its terms */
    cr_expect_lt(fabs(loss - gloss[0]) / loss_scale, 1e-6);
    cr_expect_lt(eg, 1e-4);
    cr_expect_eq(zero_mismatch, 0, "%zu parameters differ in being exactly zero", zero_mismatch);

    free(h); free(gr); free(gp); free(grad); free(rid); free(rl);
    deg_lora_tape_free(tp);
    deg_trunk_free(t);
    deg_lora_free(l);
    deg_model_free(m);
    dg_safetensors_close(st);
}

Test(lora, torch_golden_llama) { check_golden("tiny-llama"); }
Test(lora, torch_golden_qwen3) { check_golden("tiny-qwen3"); }
/* Gemma 4 (gen_gemma4_lora_goldens.py: transformers' own Gemma4ForCausalLM with
 * the adapters hooked onto its projections): per-layer shapes (full layers'
 * head_dim, no v_proj where V = K, no k/v on KV-sharing layers, double-wide
 * MLPs), windows cutting into the trunk, the routed experts beside the MLP. */
Test(lora, torch_golden_gemma4) { check_golden("tiny-gemma4"); }
Test(lora, torch_golden_gemma4_kvshare) { check_golden("tiny-gemma4-kvshare"); }
Test(lora, torch_golden_gemma4_moe) { check_golden("tiny-gemma4-moe"); }
