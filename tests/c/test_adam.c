/* The one Adam update (lib/grad/adam.h, public deg_adam_update): torch.optim.Adam /
 * AdamW arithmetic against an independent double-precision transcription of
 * torch/optim/adam.py, bitwise properties, and the error contract. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "cartridge.h"
#include "deg.h"
#include "grad/adam.h"

enum { N = 6, STEPS = 5 };

/* torch's _single_tensor_adam in double (the reference; no fp32 rounding). */
static void ref_step(double *w, const double *g, double *m, double *v, int t, double lr,
                     double b1, double b2, double eps, double wd, int decoupled)
{
    for (int i = 0; i < N; i++) {
        double gi = g[i];
        if (decoupled) w[i] *= 1 - lr * wd;
        else gi += wd * w[i];
        m[i] = b1 * m[i] + (1 - b1) * gi;
        v[i] = b2 * v[i] + (1 - b2) * gi * gi;
        double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
        w[i] -= lr / bc1 * m[i] / (sqrt(v[i]) / sqrt(bc2) + eps);
    }
}

Test(adam, matches_torch_rule_over_steps)
{
    for (int decoupled = 0; decoupled < 2; decoupled++) {
        float w[N] = {1.0f, -2.0f, 0.5f, 3.0f, -0.25f, 0.0f}, m[N] = {0}, v[N] = {0};
        double wr[N], mr[N] = {0}, vr[N] = {0};
        for (int i = 0; i < N; i++) wr[i] = w[i];
        deg_adam_params hp = deg_adam_params_default();
        hp.lr = 0.05f;
        hp.weight_decay = 0.1f;
        for (int t = 1; t <= STEPS; t++) {
            float g[N];
            double gr[N];
            for (int i = 0; i < N; i++) gr[i] = g[i] = (float)(0.3 * sin(1.7 * i + t) - 0.1 * i);
            cr_assert_eq(deg_adam_update(w, g, m, v, N, t, NULL, &hp, decoupled), DEG_OK, "%s",
                         deg_errmsg());
            ref_step(wr, gr, mr, vr, t, hp.lr, hp.beta1, hp.beta2, hp.eps, hp.weight_decay,
                     decoupled);
        }
        for (int i = 0; i < N; i++) {
            cr_expect(fabs(w[i] - wr[i]) <= 1e-6 * (1 + fabs(wr[i])), "decoupled %d w[%d] %.9g vs %.9g",
                      decoupled, i, w[i], wr[i]);
            cr_expect(fabs(m[i] - mr[i]) <= 1e-6 * (1 + fabs(mr[i])), "m[%d]", i);
            cr_expect(fabs(v[i] - vr[i]) <= 1e-6 * (1 + fabs(vr[i])), "v[%d]", i);
        }
    }
}

/* Adam's first step moves each weight by lr against its gradient's sign; with
 * weight_decay 0 Adam and AdamW are the same bits; per-element rates equal to the
 * scalar give the scalar's bits; AdamW decays a weight with zero gradient. */
Test(adam, bitwise_properties)
{
    float g[N] = {0.5f, -0.5f, 2.0f, -1e-3f, 7.0f, 0.0f};
    deg_adam_params hp = deg_adam_params_default();
    hp.lr = 0.1f;
    float wa[N] = {1, 1, 1, 1, 1, 1}, wb[N], wc[N], ma[N] = {0}, va[N] = {0}, mb[N] = {0},
          vb[N] = {0}, mc[N] = {0}, vc[N] = {0}, lr[N];
    memcpy(wb, wa, sizeof wa);
    memcpy(wc, wa, sizeof wa);
    for (int i = 0; i < N; i++) lr[i] = hp.lr;
    cr_assert_eq(deg_adam_update(wa, g, ma, va, N, 1, NULL, &hp, 0), DEG_OK);
    cr_assert_eq(deg_adam_update(wb, g, mb, vb, N, 1, NULL, &hp, 1), DEG_OK);
    cr_assert_eq(deg_adam_update(wc, g, mc, vc, N, 1, lr, &hp, 1), DEG_OK);
    cr_expect(memcmp(wa, wb, sizeof wa) == 0 && memcmp(wb, wc, sizeof wb) == 0);
    cr_expect(memcmp(ma, mc, sizeof ma) == 0 && memcmp(va, vc, sizeof va) == 0);
    for (int i = 0; i < 5; i++)
        cr_expect(fabsf(wa[i] - (g[i] > 0 ? 0.9f : 1.1f)) < 1e-5f, "w[%d] = %.9g", i, wa[i]);
    cr_expect_eq(wa[5], 1.0f);
    hp.weight_decay = 0.5f;
    float wd[1] = {2.0f}, g0[1] = {0}, m0[1] = {0}, v0[1] = {0};
    cr_assert_eq(deg_adam_update(wd, g0, m0, v0, 1, 1, NULL, &hp, 1), DEG_OK);
    cr_expect_eq(wd[0], 2.0f * (float)(1.0 - 0.1f * 0.5f)); /* 1.9: m = 0, decay only */
}

Test(adam, errors_change_nothing)
{
    deg_adam_params hp = deg_adam_params_default();
    float w[2] = {1, 2}, g[2] = {0.5f, FLT_MAX}, m[2] = {0}, v[2] = {0};
    cr_expect_eq(deg_adam_update(w, g, m, v, 2, 1, NULL, &hp, 1), DEG_ERR_NUMERIC);
    cr_expect(strstr(deg_errmsg(), "element 1") != NULL, "%s", deg_errmsg());
    cr_expect(w[0] == 1 && w[1] == 2 && m[0] == 0 && v[0] == 0 && m[1] == 0 && v[1] == 0);
    g[1] = 0.5f;
    cr_expect_eq(deg_adam_update(w, g, m, v, 2, 0, NULL, &hp, 1), DEG_ERR_ARG);
    float lr[2] = {0.1f, -1.0f};
    cr_expect_eq(deg_adam_update(w, g, m, v, 2, 1, lr, &hp, 1), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "lr_each[1]") != NULL, "%s", deg_errmsg());
    hp.beta2 = 1.0f;
    cr_expect_eq(deg_adam_update(w, g, m, v, 2, 1, NULL, &hp, 1), DEG_ERR_ARG);
    cr_expect_eq(deg_adam_update(NULL, g, m, v, 2, 1, NULL, &hp, 1), DEG_ERR_ARG);
    cr_expect(w[0] == 1 && w[1] == 2 && m[0] == 0 && v[0] == 0);
}

/* The internal kernel's check pass names the first bad element and writes nothing. */
Test(adam, check_pass_writes_nothing)
{
    dg_adam_rule r = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8f, .weight_decay = 0};
    float w[3] = {1, 1, 1}, g[3] = {1, INFINITY, 1}, m[3] = {0}, v[3] = {0};
    cr_expect_eq(dg_adam_update(w, g, m, v, 3, 0.1f, NULL, 1, &r, false), 1);
    cr_expect(w[0] == 1 && m[0] == 0 && v[0] == 0);
    g[1] = 1;
    cr_expect_eq(dg_adam_update(w, g, m, v, 3, 0.1f, NULL, 1, &r, false), SIZE_MAX);
    cr_expect_eq(dg_adam_update(w, g, m, v, 3, 0.1f, NULL, 1, &r, true), SIZE_MAX);
    cr_expect(w[0] < 1 && m[0] > 0 && v[0] > 0);
}
