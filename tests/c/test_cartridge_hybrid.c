/* Cartridges on the hybrid backbones (tiny random lfm2 and qwen3_5): K/V rows
 * on the attention layers plus a trainable initial state on the recurrent
 * layers (include/cartridge.h). The equivalence gate (an untrained captured
 * cartridge is bitwise the real prefill, through the training forward and
 * through a served trunk), state gradients against finite differences,
 * training lowers the loss and moves the states, save/load with resume, and
 * the refusals (rows of a recurrent layer, state of an attention layer,
 * composition). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cartridge.h"
#include "deg.h"
#include "format/safetensors.h"
#include "cartridge_testutil.h"
#include "tiny_model.h"

static const char *const HYBRIDS[] = {"tiny-lfm2", "tiny-qwen3_5"};

/* First recurrent and first attention layer. */
static void layer_kinds(const deg_cartridge *c, int L, int *rec, int *att)
{
    *rec = *att = -1;
    for (int il = L - 1; il >= 0; il--) {
        if (deg_cartridge_state_len(c, il)) *rec = il;
        else *att = il;
    }
    cr_assert(*rec >= 0 && *att >= 0);
}

Test(cartridge_hybrid, equivalence_gate)
{
    for (int mi = 0; mi < 2; mi++) cart_equivalence_gate(HYBRIDS[mi]);
}

/* The transformers golden (tests/goldens/gen_hybrid_train_goldens.py: the
 * prefill's cache entries as autograd leaves): capture, logits and loss
 * behind the cartridge, gradients into the K/V rows and the states. */
static void check_golden(const char *name)
{
    cart_golden G = cart_golden_open(name);
    dg_safetensors *st = G.st;
    deg_model *m = tiny_load(name);
    geo g = geometry(m);
    size_t P = G.P, T = G.T, NT = G.NT;
    const int32_t *prefix = G.prefix, *ids = G.ids;
    const float *rk = G.rk, *rv = G.rv, *glog = G.logits;
    const double *gloss = G.loss, *gk = G.gk, *gv = G.gv;
    deg_distill_target *tg = G.tg;
    deg_cartridge *c = NULL;
    cr_assert_eq(deg_cartridge_init_tokens(m, prefix, P, &c), DEG_OK, "%s", deg_errmsg());
    size_t n = P * g.row;
    float *k = malloc(n * 4), *v = malloc(n * 4);
    double e_cap = 0;
    char key[64];
    /* Capture vs transformers' cache; then the golden's exact values. */
    for (int il = 0, ia = 0; il < g.L; il++) {
        size_t ns = deg_cartridge_state_len(c, il);
        if (!ns) {
            deg_cartridge_get_rows(c, il, k, v);
            e_cap = fmax(e_cap, fmax(rel_err_ff(k, rk + ia * n, n), rel_err_ff(v, rv + ia * n, n)));
            deg_cartridge_set_rows(c, il, rk + ia * n, rv + ia * n);
            ia++;
            continue;
        }
        snprintf(key, sizeof key, "state.%d", il);
        size_t gn;
        const float *gs = golden_tensor(st, key, &gn);
        cr_assert_eq(gn, ns, "%s: %s has %zu floats, the layer's state %zu", name, key, gn, ns);
        float *s = malloc(ns * 4);
        deg_cartridge_get_state(c, il, s);
        e_cap = fmax(e_cap, rel_err_ff(s, gs, ns));
        deg_cartridge_set_state(c, il, gs);
        free(s);
    }
    float *logits = malloc(T * g.V * 4), loss = 0, loss2 = 0;
    cr_assert_eq(deg_cartridge_eval(c, ids, T, tg, NT, &loss, logits), DEG_OK, "%s",
                 deg_errmsg());
    double el = rel_err_ff(logits, glog, T * g.V), eloss = fabs(loss - gloss[0]) / fabs(gloss[0]);
    cr_assert_eq(deg_cartridge_backward(c, ids, T, tg, NT, 0, &loss2), DEG_OK, "%s",
                 deg_errmsg());
    double e_rows = 0, e_state = 0;
    for (int il = 0, ia = 0; il < g.L; il++) {
        size_t ns = deg_cartridge_state_len(c, il);
        if (!ns) { /* row 0 is frozen in deg: rows 1.. */
            deg_cartridge_get_grads(c, il, k, v);
            e_rows = fmax(e_rows, rel_err_fd(k + g.row, gk + ia * n + g.row, n - g.row));
            e_rows = fmax(e_rows, rel_err_fd(v + g.row, gv + ia * n + g.row, n - g.row));
            ia++;
            continue;
        }
        snprintf(key, sizeof key, "grad_state.%d", il);
        const double *gs = golden_tensor(st, key, NULL);
        float *ds = malloc(ns * 4);
        deg_cartridge_get_state_grads(c, il, ds);
        e_state = fmax(e_state, rel_err_fd(ds, gs, ns));
        free(ds);
    }
    cr_log_info("%s vs transformers: capture rel err %.3g, logits %.3g, loss %.7f vs %.7f, "
                "grad rows %.3g, grad states %.3g", name, e_cap, el, (double)loss, gloss[0],
                e_rows, e_state);
    cr_expect_lt(e_cap, 1e-4);
    cr_expect_lt(el, 1e-4);
    cr_expect_lt(eloss, 1e-4);
    cr_expect_lt(e_rows, 1e-4);
    cr_expect_lt(e_state, 1e-4);
    free(k); free(v); free(logits);
    deg_cartridge_free(c);
    deg_model_free(m);
    cart_golden_close(&G);
}

Test(cartridge_hybrid, transformers_golden_lfm2) { check_golden("tiny-lfm2"); }
Test(cartridge_hybrid, transformers_golden_qwen3_5) { check_golden("tiny-qwen3_5"); }

static const int32_t IDS[6] = {5, 77, 300, 12, 9, 401};
static const deg_distill_target TG[] = {{1, 40, -0.5f}, {2, 41, -1.5f}, {3, 7, -0.1f},
                                        {4, 500, -0.7f}, {5, 3, -0.2f}};
#define NTG (sizeof TG / sizeof TG[0])

Test(cartridge_hybrid, state_gradcheck_and_training)
{
    for (int mi = 0; mi < 2; mi++) {
        deg_model *m = tiny_load(HYBRIDS[mi]);
        geo g = geometry(m);
        int32_t pre[8];
        for (int i = 0; i < 8; i++) pre[i] = (int32_t)((i * 53 + 7) % (int)g.V);
        deg_cartridge *c = NULL;
        cr_assert_eq(deg_cartridge_init_tokens(m, pre, 8, &c), DEG_OK);
        int rec, att;
        layer_kinds(c, g.L, &rec, &att);
        float l0 = 0;
        cr_assert_eq(deg_cartridge_backward(c, IDS, 6, TG, NTG, 0, &l0), DEG_OK, "%s",
                     deg_errmsg());
        size_t n = deg_cartridge_state_len(c, rec);
        float *s = malloc(n * 4), *ds = malloc(n * 4);
        cr_assert_eq(deg_cartridge_get_state(c, rec, s), DEG_OK);
        cr_assert_eq(deg_cartridge_get_state_grads(c, rec, ds), DEG_OK);
        double gm = 0, worst = 0;
        size_t imax = 0;
        for (size_t i = 0; i < n; i++)
            if (fabs(ds[i]) > gm) gm = fabs(ds[i]), imax = i;
        cr_assert_gt(gm, 0);
        for (int q = 0; q < 6; q++) {
            size_t i = q ? (size_t)(q * 7919 + 3) % n : imax;
            float x0 = s[i], h = 1e-2f, lp, lm;
            s[i] = x0 + h; deg_cartridge_set_state(c, rec, s);
            deg_cartridge_eval(c, IDS, 6, TG, NTG, &lp, NULL);
            s[i] = x0 - h; deg_cartridge_set_state(c, rec, s);
            deg_cartridge_eval(c, IDS, 6, TG, NTG, &lm, NULL);
            s[i] = x0; deg_cartridge_set_state(c, rec, s);
            worst = fmax(worst, fabs(((double)lp - lm) / (2.0 * h) - ds[i]) / gm);
        }
        cr_log_info("%s: state gradient (layer %d) vs central differences: max rel err %.3g",
                    HYBRIDS[mi], rec, worst);
        cr_expect_lt(worst, 2e-2);
        /* Training steps lower the loss on the batch and move the state. */
        deg_adam_params ap = deg_adam_params_default();
        ap.lr = 1e-2f;
        float l = 0;
        for (int i = 0; i < 8; i++)
            cr_assert_eq(deg_cartridge_train_step(c, IDS, 6, TG, NTG, &ap, i & 1, &l), DEG_OK,
                         "%s", deg_errmsg());
        cr_assert_eq(deg_cartridge_eval(c, IDS, 6, TG, NTG, &l, NULL), DEG_OK);
        cr_log_info("%s: loss %.5f -> %.5f after 8 steps", HYBRIDS[mi], (double)l0, (double)l);
        cr_expect_lt(l, l0 - 1e-3);
        float *s2 = malloc(n * 4);
        deg_cartridge_get_state(c, rec, s2);
        cr_expect(memcmp(s, s2, n * 4) != 0, "%s: training left the state unchanged",
                  HYBRIDS[mi]);
        free(s); free(ds); free(s2);
        deg_cartridge_free(c);
        deg_model_free(m);
    }
}

Test(cartridge_hybrid, save_load_resume_and_refusals)
{
    deg_model *m = tiny_load("tiny-lfm2");
    geo g = geometry(m);
    deg_cartridge *c = NULL;
    int32_t pre[6] = {1, 2, 3, 4, 5, 6};
    cr_assert_eq(deg_cartridge_init_tokens(m, pre, 6, &c), DEG_OK);
    int rec, att;
    layer_kinds(c, g.L, &rec, &att);
    deg_adam_params ap = deg_adam_params_default();
    ap.lr = 1e-2f;
    for (int i = 0; i < 3; i++)
        cr_assert_eq(deg_cartridge_train_step(c, IDS, 6, TG, NTG, &ap, 0, NULL), DEG_OK);
    char *path = cart_tmp_path("degcarth", "rt.safetensors");
    cr_assert_eq(deg_cartridge_save(c, path, 1), DEG_OK, "%s", deg_errmsg());
    deg_cartridge *d = NULL;
    cr_assert_eq(deg_cartridge_load(m, path, &d), DEG_OK, "%s", deg_errmsg());
    cr_expect_eq(deg_cartridge_steps(d), 3);
    cart_expect_resumed(c, d, IDS, 6, TG, NTG, &ap, g.L, g.row, 6);
    dg_safetensors *st = NULL;
    cr_assert_eq(dg_safetensors_open(path, &st), DEG_OK);
    char name[64];
    snprintf(name, sizeof name, "layers.%d.state", rec);
    const dg_tensor_view *tv = dg_safetensors_find(st, name);
    cr_assert_not_null(tv, "%s", name);
    cr_expect(tv->n_dims == 1 && (size_t)tv->shape[0] == deg_cartridge_state_len(c, rec));
    snprintf(name, sizeof name, "layers.%d.keys", rec);
    cr_expect_null(dg_safetensors_find(st, name), "a recurrent layer saved K/V rows");
    dg_safetensors_close(st);
    /* A cartridge of the other hybrid does not load here. */
    deg_model *q = tiny_load("tiny-qwen3_5");
    deg_cartridge *e = NULL;
    cr_expect_eq(deg_cartridge_load(q, path, &e), DEG_ERR_MISMATCH);
    cr_expect_null(e);
    deg_model_free(q);
    unlink(path);
    free(path);

    /* Refusals, each naming the reason. */
    float buf[8];
    cr_expect_eq(deg_cartridge_get_rows(c, rec, buf, NULL), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "recurrent") != NULL, "%s", deg_errmsg());
    cr_expect_eq(deg_cartridge_get_state(c, att, buf), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "attention layer") != NULL, "%s", deg_errmsg());
    cr_expect_eq(deg_cartridge_state_len(c, att), 0);
    cr_expect_eq(deg_cartridge_get_state(c, g.L, buf), DEG_ERR_RANGE);
    const deg_cartridge *two[2] = {c, d};
    deg_trunk *t = NULL;
    cr_expect_eq(deg_trunk_from_cartridges(two, 2, &t), DEG_ERR_UNSUPPORTED);
    cr_expect(strstr(deg_errmsg(), "recurrent") != NULL, "%s", deg_errmsg());
    cr_expect_null(t);
    deg_cartridge_free(c);
    deg_cartridge_free(d);
    deg_model_free(m);
}
