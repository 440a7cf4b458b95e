/* Cartridges on the tiny random models: the torch golden
 * (tests/goldens/gen_cartridge_goldens.py: capture, logits, loss, K/V row
 * gradients, one Adam step), the equivalence gate (an untrained cartridge is
 * bitwise a real prefill), an end-to-end finite-difference gradcheck,
 * checkpointing, a learning check, persistence, serving and bad input. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cartridge.h"
#include "deg.h"
#include "format/safetensors.h"
#include "model/arch.h"
#include "cartridge_testutil.h"
#include "tiny_model.h"

/* ------------------------------------------------------------- golden */

static void check_golden(const char *name)
{
    cart_golden G = cart_golden_open(name);
    deg_model *m = tiny_load(name);
    geo g = geometry(m);
    size_t P = G.P, T = G.T, NT = G.NT;
    const int32_t *prefix = G.prefix, *ids = G.ids;
    const float *rk = G.rk, *rv = G.rv, *glog = G.logits;
    const double *gloss = G.loss, *gk = G.gk, *gv = G.gv;
    deg_distill_target *tg = G.tg;
    const float *ak = golden_tensor(G.st, "adam_k", NULL), *av = golden_tensor(G.st, "adam_v", NULL);

    /* Capture against torch's own K/V of the prefix. */
    deg_cartridge *c = NULL;
    cr_assert_eq(deg_cartridge_init_tokens(m, prefix, P, &c), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_cartridge_len(c), P);
    cr_assert_eq(deg_cartridge_frozen_prefix(c), 1);
    size_t n = P * g.row;
    float *k = malloc(n * 4), *v = malloc(n * 4), *k2 = malloc(n * 4), *v2 = malloc(n * 4);
    double ek = 0, ev = 0;
    for (int il = 0; il < g.L; il++) {
        deg_cartridge_get_rows(c, il, k, v);
        double a = rel_err_ff(k, rk + il * n, n), b = rel_err_ff(v, rv + il * n, n);
        if (a > ek) ek = a;
        if (b > ev) ev = b;
        deg_cartridge_set_rows(c, il, rk + il * n, rv + il * n); /* exact golden rows */
    }
    cr_log_info("%s golden: capture rel err K %.3g V %.3g", name, ek, ev);
    cr_expect_lt(ek, 1e-4);
    cr_expect_lt(ev, 1e-4);

    /* Forward logits and loss. */
    float *logits = malloc(T * g.V * 4), loss = 0, loss2 = 0;
    cr_assert_eq(deg_cartridge_eval(c, ids, T, tg, NT, &loss, logits), DEG_OK, "%s",
                 deg_errmsg());
    double el = rel_err_ff(logits, glog, T * g.V);
    double eloss = fabs(loss - gloss[0]) / fabs(gloss[0]);
    cr_log_info("%s golden: logits rel err %.3g, loss %.7f vs %.7f (rel %.3g)", name, el,
                (double)loss, gloss[0], eloss);
    cr_expect_lt(el, 1e-4);
    cr_expect_lt(eloss, 1e-4);

    /* Gradients into the trainable rows (row 0 frozen in torch: compare rows 1..). */
    cr_assert_eq(deg_cartridge_backward(c, ids, T, tg, NT, 0, &loss2), DEG_OK, "%s",
                 deg_errmsg());
    cr_expect_eq(loss, loss2, "eval and backward losses differ");
    double egk = 0, egv = 0;
    for (int il = 0; il < g.L; il++) {
        deg_cartridge_get_grads(c, il, k, v);
        double a = rel_err_fd(k + g.row, gk + il * n + g.row, n - g.row);
        double b = rel_err_fd(v + g.row, gv + il * n + g.row, n - g.row);
        if (a > egk) egk = a;
        if (b > egv) egv = b;
    }
    cr_log_info("%s golden: grad rel err K %.3g V %.3g", name, egk, egv);
    cr_expect_lt(egk, 1e-4);
    cr_expect_lt(egv, 1e-4);

    /* Checkpointing: bitwise-equal gradients. */
    float **sk = malloc(g.L * sizeof *sk), **sv = malloc(g.L * sizeof *sv);
    for (int il = 0; il < g.L; il++) {
        sk[il] = malloc(n * 4); sv[il] = malloc(n * 4);
        deg_cartridge_get_grads(c, il, sk[il], sv[il]);
    }
    deg_cartridge_zero_grads(c);
    cr_assert_eq(deg_cartridge_backward(c, ids, T, tg, NT, 1, &loss2), DEG_OK);
    for (int il = 0; il < g.L; il++) {
        deg_cartridge_get_grads(c, il, k2, v2);
        cr_expect(memcmp(k2, sk[il], n * 4) == 0 && memcmp(v2, sv[il], n * 4) == 0,
                  "checkpointed gradients differ (layer %d)", il);
    }

    /* One Adam step vs torch.optim.Adam (lr 1e-2): elements whose gradient
     * is not ~0 (where sign noise would make Adam's first step arbitrary). */
    deg_adam_params ap = deg_adam_params_default();
    ap.lr = 1e-2f;
    cr_assert_eq(deg_cartridge_adam_step(c, &ap), DEG_OK, "%s", deg_errmsg());
    double ea = 0;
    for (int il = 0; il < g.L; il++) {
        deg_cartridge_get_rows(c, il, k, v);
        cr_expect(memcmp(k, rk + il * n, g.row * 4) == 0 && memcmp(v, rv + il * n, g.row * 4) == 0,
                  "sink row changed by Adam (layer %d)", il);
        double gmax = 0;
        for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fmax(fabs(gk[il * n + i]), fabs(gv[il * n + i])));
        for (size_t i = 0; i < n; i++) {
            if (fabs(gk[il * n + i]) > 1e-3 * gmax) ea = fmax(ea, fabs(k[i] - ak[il * n + i]));
            if (fabs(gv[il * n + i]) > 1e-3 * gmax) ea = fmax(ea, fabs(v[i] - av[il * n + i]));
        }
    }
    cr_log_info("%s golden: Adam step max abs err %.3g (lr 1e-2)", name, ea);
    cr_expect_lt(ea, 1e-5);
    cr_expect_eq(deg_cartridge_steps(c), 1);

    for (int il = 0; il < g.L; il++) { free(sk[il]); free(sv[il]); }
    free(sk); free(sv); free(k); free(v); free(k2); free(v2); free(logits);
    deg_cartridge_free(c);
    deg_model_free(m);
    cart_golden_close(&G);
}

Test(cartridge, torch_golden_llama) { check_golden("tiny-llama"); }
Test(cartridge, torch_golden_qwen3) { check_golden("tiny-qwen3"); }

/* ----------------------------------------------------- equivalence gate */

static const char *const TINY[] = {"tiny-llama", "tiny-llama-tied", "tiny-qwen3",
                                   "tiny-qwen3-untied"};

Test(cartridge, equivalence_gate_tiny)
{
    for (size_t mi = 0; mi < 4; mi++) cart_equivalence_gate(TINY[mi]);
}

/* --------------------------------------- end-to-end finite differences */

Test(cartridge, gradcheck_end_to_end)
{
    /* f32 central differences of the loss through the whole model into
     * prefix rows (kv_seq > q_seq, GQA 4/2, duplicate target positions). */
    for (int mi = 0; mi < 2; mi++) {
        deg_model *m = tiny_load(mi ? "tiny-qwen3" : "tiny-llama");
        geo g = geometry(m);
        enum { P = 8, T = 5 };
        deg_cartridge *c = NULL;
        cr_assert_eq(deg_cartridge_init_random_vectors(m, P, 7, &c), DEG_OK);
        int32_t ids[T] = {5, 77, 300, 12, 9};
        deg_distill_target tg[] = {{1, 40, -0.5f}, {1, 41, -1.5f}, {3, 7, -0.1f},
                                   {3, 7, -2.0f}, {4, 500, -0.7f}};
        size_t NT = sizeof tg / sizeof tg[0];
        float l0;
        cr_assert_eq(deg_cartridge_backward(c, ids, T, tg, NT, 0, &l0), DEG_OK);
        size_t n = P * g.row;
        float *k = malloc(n * 4), *v = malloc(n * 4), *dk = malloc(n * 4), *dv = malloc(n * 4);
        double worst = 0;
        for (int il = 0; il < g.L; il++) {
            deg_cartridge_get_grads(c, il, dk, dv);
            double gm = 0;
            for (size_t i = 0; i < n; i++) gm = fmax(gm, fmax(fabs(dk[i]), fabs(dv[i])));
            for (int probe = 0; probe < 12; probe++) {
                int isv = probe & 1;
                size_t i = (size_t)(probe * 97 + il * 31) % n;
                deg_cartridge_get_rows(c, il, k, v);
                float *x = isv ? v : k;
                float x0 = x[i], h = 1e-2f, lp, lm;
                x[i] = x0 + h; deg_cartridge_set_rows(c, il, k, v);
                deg_cartridge_eval(c, ids, T, tg, NT, &lp, NULL);
                x[i] = x0 - h; deg_cartridge_set_rows(c, il, k, v);
                deg_cartridge_eval(c, ids, T, tg, NT, &lm, NULL);
                x[i] = x0; deg_cartridge_set_rows(c, il, k, v);
                double num = ((double)lp - lm) / (2.0 * h);
                double ana = isv ? dv[i] : dk[i];
                double e = fabs(num - ana) / gm;
                if (e > worst) worst = e;
            }
        }
        cr_log_info("gradcheck end-to-end %s: max |fd - analytic| / max|grad| = %.3g",
                    mi ? "qwen3" : "llama", worst);
        cr_expect_lt(worst, 2e-2);
        free(k); free(v); free(dk); free(dv);
        deg_cartridge_free(c);
        deg_model_free(m);
    }
}

/* ----------------------------------------------------- learning check */

/* Teacher targets: the same model with `corpus` really in context; for
 * each sequence, top-20 / 0.99 targets at positions 1..n-1. */
static size_t teacher(deg_model *m, const int32_t *corpus, size_t nc, const int32_t *ids,
                      size_t n, deg_distill_target *out)
{
    geo g = geometry(m);
    int32_t *all = malloc((nc + n) * 4);
    memcpy(all, corpus, nc * 4);
    memcpy(all + nc, ids, n * 4);
    float *lg = malloc((nc + n) * g.V * 4);
    deg_trunk *t = NULL;
    deg_trunk_new(m, &t);
    cr_assert_eq(deg_trunk_prefill(t, all, nc + n, lg, NULL), DEG_OK);
    size_t k = 0;
    for (size_t pos = 1; pos < n; pos++) {
        size_t got = 0;
        cr_assert_eq(deg_distill_targets_from_logits(m, lg + (nc + pos - 1) * g.V, (int32_t)pos,
                                                     20, 0.99f, out + k, &got), DEG_OK);
        cr_assert(got >= 1 && got <= 20);
        k += got;
    }
    deg_trunk_free(t);
    free(all); free(lg);
    return k;
}

/* Mean loss over the last nh sequences (held out from training). */
static float heldout(const deg_cartridge *c, int32_t (*seqs)[10], deg_distill_target **tg,
                     const size_t *ntg, int ns, int nh)
{
    double s = 0;
    for (int i = ns - nh; i < ns; i++) {
        float l;
        cr_assert_eq(deg_cartridge_eval(c, seqs[i], 10, tg[i], ntg[i], &l, NULL), DEG_OK);
        s += l;
    }
    return (float)(s / nh);
}

Test(cartridge, learning_check, .timeout = 300)
{
    deg_model *m = tiny_load("tiny-qwen3");
    geo g = geometry(m);
    enum { NC = 24, P = 8, N = 10, NS = 16, NH = 3 };
    int32_t corpus[NC], seqs[NS][N];
    for (int i = 0; i < NC; i++) corpus[i] = (int32_t)((i * 53 + 7) % (int)g.V);
    for (int s = 0; s < NS; s++)
        for (int i = 0; i < N; i++) seqs[s][i] = (int32_t)((s * 131 + i * 29 + 3) % (int)g.V);
    deg_distill_target *tg[NS];
    size_t ntg[NS];
    for (int s = 0; s < NS; s++) {
        tg[s] = malloc(N * 20 * sizeof **tg);
        ntg[s] = teacher(m, corpus, NC, seqs[s], N, tg[s]);
    }
    /* Snapshot of every weight the model computes with. */
    const dg_hparams *hp = &m->hp;
    size_t E = (size_t)hp->n_embd, V = (size_t)hp->n_vocab;
    uint64_t before = 0, after = 0;
#define HASH(acc, p, nf) do { const uint8_t *b_ = (const uint8_t *)(p); \
        for (size_t i_ = 0; i_ < (nf) * 4; i_++) acc = (acc ^ b_[i_]) * 1099511628211ull; } while (0)
    for (int pass = 0; pass < 2; pass++) {
        uint64_t h = 1469598103934665603ull;
        HASH(h, m->tok_embd.data, V * E); HASH(h, m->lm_head.data, V * E); HASH(h, m->out_norm, E);
        for (int il = 0; il < hp->n_layer; il++) {
            const dg_layer *L = &m->layers[il];
            size_t QD = (size_t)hp->n_head * hp->head_dim, KD = (size_t)hp->n_head_kv * hp->head_dim;
            HASH(h, L->wq.data, QD * E); HASH(h, L->wk.data, KD * E); HASH(h, L->wv.data, KD * E);
            HASH(h, L->wo.data, E * QD); HASH(h, L->w_gate.data, (size_t)hp->n_ff * E);
            HASH(h, L->w_up.data, (size_t)hp->n_ff * E); HASH(h, L->w_down.data, (size_t)hp->n_ff * E);
            HASH(h, L->attn_norm, E); HASH(h, L->ffn_norm, E);
            HASH(h, L->q_norm, (size_t)hp->head_dim); HASH(h, L->k_norm, (size_t)hp->head_dim);
        }
        if (pass == 0) {
            before = h;
            /* train below, then hash again */
            deg_cartridge *c = NULL;
            cr_assert_eq(deg_cartridge_init_tokens(m, corpus, P, &c), DEG_OK);
            size_t n = P * g.row;
            float *k0 = malloc(n * 4), *v0 = malloc(n * 4), *k = malloc(n * 4), *v = malloc(n * 4);
            float held0, held1, l;
            held0 = heldout(c, seqs, tg, ntg, NS, NH);
            float **sink_k = malloc(g.L * sizeof(float *)), **sink_v = malloc(g.L * sizeof(float *));
            for (int il = 0; il < g.L; il++) {
                sink_k[il] = malloc(g.row * 4); sink_v[il] = malloc(g.row * 4);
                deg_cartridge_get_rows(c, il, k0, v0);
                memcpy(sink_k[il], k0, g.row * 4); memcpy(sink_v[il], v0, g.row * 4);
            }
            deg_adam_params ap = deg_adam_params_default();
            ap.lr = 3e-3f;
            float first = 0, last = 0;
            for (int step = 0; step < 300; step++) {
                int s = step % (NS - NH);
                cr_assert_eq(deg_cartridge_train_step(c, seqs[s], N, tg[s], ntg[s], &ap, step & 1,
                                                      &l), DEG_OK, "%s", deg_errmsg());
                if (step < NS - NH) first += l;
                if (step >= 300 - (NS - NH)) last += l;
            }
            held1 = heldout(c, seqs, tg, ntg, NS, NH);
            cr_log_info("learning check (tiny-qwen3, p=%d, 300 Adam steps lr 3e-3): train loss "
                        "%.4f -> %.4f, held-out %.4f -> %.4f", P, first / (NS - NH),
                        last / (NS - NH), (double)held0, (double)held1);
            cr_expect_lt(last, first, "training loss did not go down");
            cr_expect_lt(held1, held0, "held-out loss did not go down");
            for (int il = 0; il < g.L; il++) {
                deg_cartridge_get_rows(c, il, k, v);
                cr_expect(memcmp(k, sink_k[il], g.row * 4) == 0 &&
                          memcmp(v, sink_v[il], g.row * 4) == 0, "sink row changed (layer %d)", il);
                free(sink_k[il]); free(sink_v[il]);
            }
            cr_expect_eq(deg_cartridge_steps(c), 300);
            free(sink_k); free(sink_v); free(k0); free(v0); free(k); free(v);
            deg_cartridge_free(c);
        } else {
            after = h;
        }
    }
    cr_expect_eq(before, after, "model weights changed during training");
    for (int s = 0; s < NS; s++) free(tg[s]);
    deg_model_free(m);
}

/* ---------------------------------------------------------- persistence */

static char *tmpfile_path(const char *name) { return cart_tmp_path("degcart", name); }

Test(cartridge, save_load_roundtrip_and_resume)
{
    deg_model *m = tiny_load("tiny-llama");
    geo g = geometry(m);
    deg_cartridge *c = NULL;
    int32_t pre[6] = {1, 2, 3, 4, 5, 6}, ids[5] = {9, 8, 7, 6, 5};
    deg_distill_target tg[] = {{2, 10, -0.3f}, {4, 11, -1.0f}};
    cr_assert_eq(deg_cartridge_init_tokens(m, pre, 6, &c), DEG_OK);
    cr_assert_eq(deg_cartridge_set_frozen_prefix(c, 2), DEG_OK);
    deg_adam_params ap = deg_adam_params_default();
    ap.lr = 1e-2f;
    for (int i = 0; i < 3; i++)
        cr_assert_eq(deg_cartridge_train_step(c, ids, 5, tg, 2, &ap, 0, NULL), DEG_OK);
    char *path = tmpfile_path("rt.safetensors");
    cr_assert_eq(deg_cartridge_save(c, path, 1), DEG_OK, "%s", deg_errmsg());
    deg_cartridge *d = NULL;
    cr_assert_eq(deg_cartridge_load(m, path, &d), DEG_OK, "%s", deg_errmsg());
    cr_expect_eq(deg_cartridge_len(d), 6);
    cr_expect_eq(deg_cartridge_frozen_prefix(d), 2);
    cr_expect_eq(deg_cartridge_steps(d), 3);
    /* Resume: one more step on both gives identical rows (moments restored). */
    cart_expect_resumed(c, d, ids, 5, tg, 2, &ap, g.L, g.row, 6);
    /* Header alone: geometry and identity readable with a plain reader. */
    dg_safetensors *st = NULL;
    cr_assert_eq(dg_safetensors_open(path, &st), DEG_OK);
    cr_expect_str_eq(dg_safetensors_meta(st, "format"), "deg-cartridge/1");
    cr_expect_str_eq(dg_safetensors_meta(st, "arch"), "llama");
    const dg_tensor_view *tv = dg_safetensors_find(st, "layers.1.values");
    cr_assert_not_null(tv);
    cr_expect(tv->n_dims == 3 && tv->shape[0] == 6);
    dg_safetensors_close(st);
    /* Without optimizer state: loads, moments zero. */
    cr_assert_eq(deg_cartridge_save(c, path, 0), DEG_OK);
    deg_cartridge *e = NULL;
    cr_assert_eq(deg_cartridge_load(m, path, &e), DEG_OK, "%s", deg_errmsg());
    deg_cartridge_free(e);
    /* Against another model: mismatch. */
    deg_model *q = tiny_load("tiny-llama-tied");
    cr_expect_eq(deg_cartridge_load(q, path, &e), DEG_ERR_MISMATCH);
    cr_expect(strstr(deg_errmsg(), "another model") != NULL, "%s", deg_errmsg());
    cr_expect_null(e);
    deg_model *q3 = tiny_load("tiny-qwen3");
    cr_expect_eq(deg_cartridge_load(q3, path, &e), DEG_ERR_MISMATCH);
    cr_expect(strstr(deg_errmsg(), "arch") != NULL, "%s", deg_errmsg());
    deg_model_free(q3);
    deg_model_free(q);
    unlink(path);
    free(path);
    deg_cartridge_free(c);
    deg_cartridge_free(d);
    deg_model_free(m);
}

Test(cartridge, corrupt_files)
{
    deg_model *m = tiny_load("tiny-llama");
    deg_cartridge *c = NULL;
    int32_t pre[4] = {1, 2, 3, 4};
    cr_assert_eq(deg_cartridge_init_tokens(m, pre, 4, &c), DEG_OK);
    char *path = tmpfile_path("corrupt.safetensors");
    cr_assert_eq(deg_cartridge_save(c, path, 1), DEG_OK);
    /* Truncated file. */
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)sz);
    cr_assert_eq(fread(buf, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    f = fopen(path, "wb");
    fwrite(buf, 1, (size_t)sz / 2, f);
    fclose(f);
    deg_cartridge *d = NULL;
    deg_status s = deg_cartridge_load(m, path, &d);
    cr_expect_eq(s, DEG_ERR_FORMAT, "truncated: %s (%s)", deg_status_name(s), deg_errmsg());
    cr_expect_null(d);
    /* Garbage. */
    f = fopen(path, "wb");
    fputs("this is not a safetensors file at all", f);
    fclose(f);
    s = deg_cartridge_load(m, path, &d);
    cr_expect_eq(s, DEG_ERR_FORMAT, "garbage: %s (%s)", deg_status_name(s), deg_errmsg());
    /* A valid safetensors file that is not a cartridge. */
    char mp[512];
    snprintf(mp, sizeof mp, "%s/tiny-llama/model.safetensors", TINY_GOLDENS);
    s = deg_cartridge_load(m, mp, &d);
    cr_expect_eq(s, DEG_ERR_FORMAT, "model file: %s (%s)", deg_status_name(s), deg_errmsg());
    cr_expect(strstr(deg_errmsg(), "not a deg cartridge") != NULL, "%s", deg_errmsg());
    /* Missing file. */
    unlink(path);
    s = deg_cartridge_load(m, path, &d);
    cr_expect_eq(s, DEG_ERR_IO, "missing: %s (%s)", deg_status_name(s), deg_errmsg());
    free(buf); free(path);
    deg_cartridge_free(c);
    deg_model_free(m);
}

/* Rewrite path with metadata key = value (the header re-serialized, data
 * bytes unchanged: safetensors offsets are relative to the data start). */
static void set_meta(const char *path, const char *key, const char *value)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    uint64_t hl = 0;
    cr_assert_eq(fread(&hl, 8, 1, f), 1);
    char *h = calloc(1, hl + 1);
    cr_assert_eq(fread(h, 1, hl, f), hl);
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    size_t dl = (size_t)end - 8 - hl;
    char *data = malloc(dl ? dl : 1);
    fseek(f, (long)(8 + hl), SEEK_SET);
    cr_assert_eq(fread(data, 1, dl, f), dl);
    fclose(f);
    json_t *j = json_loads(h, 0, NULL);
    cr_assert(j);
    json_object_set_new(json_object_get(j, "__metadata__"), key, json_string(value));
    char *t = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t tl = strlen(t), pad = (8 - tl % 8) % 8;
    uint64_t nl = tl + pad;
    f = fopen(path, "wb");
    fwrite(&nl, 8, 1, f);
    fwrite(t, 1, tl, f);
    for (size_t i = 0; i < pad; i++) fputc(' ', f);
    fwrite(data, 1, dl, f);
    fclose(f);
    free(t);
    json_decref(j);
    free(h);
    free(data);
}

/* Issue 19 item 7: adam_steps / frozen_prefix are digits only and fit int64
 * with room for the next step (2^63 used to clamp to INT64_MAX, overflow in
 * the optimizer, and blame "gradient 0"; " 3" and "+3" were accepted). */
Test(cartridge, step_metadata_strict)
{
    deg_model *m = tiny_load("tiny-llama");
    deg_cartridge *c = NULL;
    int32_t pre[4] = {1, 2, 3, 4};
    cr_assert_eq(deg_cartridge_init_tokens(m, pre, 4, &c), DEG_OK);
    char *path = tmpfile_path("steps.safetensors");
    cr_assert_eq(deg_cartridge_save(c, path, 1), DEG_OK);
    deg_cartridge_free(c);
    const char *bad[] = {"9223372036854775808", "9223372036854775807", "1000000000000000000",
                         " 3", "+3", "-1", "3 ", "0x10", "", "1e3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        set_meta(path, "adam_steps", bad[i]);
        deg_cartridge *d = NULL;
        deg_status s = deg_cartridge_load(m, path, &d);
        cr_expect_eq(s, DEG_ERR_FORMAT, "adam_steps \"%s\": %s", bad[i], deg_status_name(s));
        cr_expect(strstr(deg_errmsg(), "\"adam_steps\"") &&
                      strstr(deg_errmsg(), "is not a decimal integer >= 0 of at most 18 digits"),
                  "%s", deg_errmsg());
        cr_expect_null(d);
        deg_cartridge_free(d);
    }
    set_meta(path, "adam_steps", "999999999999999999");
    cr_assert_eq(deg_cartridge_load(m, path, &c), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_cartridge_steps(c), 999999999999999999LL);
    deg_cartridge_free(c);
    set_meta(path, "adam_steps", "12");
    set_meta(path, "frozen_prefix", "+1");
    cr_assert_eq(deg_cartridge_load(m, path, &c), DEG_ERR_FORMAT);
    set_meta(path, "frozen_prefix", "2");
    cr_assert_eq(deg_cartridge_load(m, path, &c), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_cartridge_steps(c), 12);
    cr_assert_eq(deg_cartridge_frozen_prefix(c), 2);
    deg_cartridge_free(c);
    unlink(path);
    free(path);
    deg_model_free(m);
}

/* ------------------------------------------------------------ bad input */

Test(cartridge, bad_input)
{
    deg_model *m = tiny_load("tiny-llama");
    geo g = geometry(m);
    deg_cartridge *c = NULL;
    int32_t ids[4] = {1, 2, 3, 4};
    cr_expect_eq(deg_cartridge_init_tokens(m, ids, 0, &c), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "p = 0") != NULL, "%s", deg_errmsg());
    cr_expect_eq(deg_cartridge_init_corpus(m, "hi", 2, 0, &c), DEG_ERR_ARG);
    deg_status s = deg_cartridge_init_corpus(m, "a short corpus", 14, 500, &c);
    cr_expect_eq(s, DEG_ERR_RANGE, "%s", deg_errmsg());
    cr_expect(strstr(deg_errmsg(), "larger than the corpus") != NULL, "%s", deg_errmsg());
    cr_expect_null(c);
    cr_expect_eq(deg_cartridge_init_corpus(m, "\xff\xfe bad", 6, 2, &c), DEG_ERR_UTF8);
    int32_t bad[2] = {1, 99999};
    cr_expect_eq(deg_cartridge_init_tokens(m, bad, 2, &c), DEG_ERR_RANGE);
    cr_expect_eq(deg_cartridge_init_tokens(NULL, ids, 2, &c), DEG_ERR_ARG);

    cr_assert_eq(deg_cartridge_init_corpus(m, "The quick brown fox jumps over the lazy dog.",
                                           44, 5, &c), DEG_OK, "%s", deg_errmsg());
    cr_expect_eq(deg_cartridge_set_frozen_prefix(c, 6), DEG_ERR_RANGE);
    deg_distill_target t0[] = {{0, 1, -0.1f}};
    cr_expect_eq(deg_cartridge_backward(c, ids, 4, t0, 1, 0, NULL), DEG_ERR_RANGE);
    deg_distill_target t1[] = {{4, 1, -0.1f}};
    cr_expect_eq(deg_cartridge_backward(c, ids, 4, t1, 1, 0, NULL), DEG_ERR_RANGE);
    deg_distill_target t2[] = {{2, -1, -0.1f}};
    cr_expect_eq(deg_cartridge_backward(c, ids, 4, t2, 1, 0, NULL), DEG_ERR_RANGE);
    deg_distill_target t3[] = {{2, 1, NAN}};
    cr_expect_eq(deg_cartridge_backward(c, ids, 4, t3, 1, 0, NULL), DEG_ERR_RANGE);
    cr_expect_eq(deg_cartridge_backward(c, ids, 4, NULL, 0, 0, NULL), DEG_ERR_ARG);
    cr_expect_eq(deg_cartridge_get_rows(c, 99, NULL, NULL), DEG_ERR_RANGE);

    /* NaN in a trainable row: the step reports it, nothing is saved. */
    size_t n = 5 * g.row;
    float *k = malloc(n * 4);
    deg_cartridge_get_rows(c, 1, k, NULL);
    float keep = k[g.row * 2 + 3];
    k[g.row * 2 + 3] = NAN;
    deg_cartridge_set_rows(c, 1, k, NULL);
    deg_distill_target ok[] = {{2, 1, -0.1f}};
    deg_adam_params ap = deg_adam_params_default();
    s = deg_cartridge_train_step(c, ids, 4, ok, 1, &ap, 0, NULL);
    cr_expect_eq(s, DEG_ERR_NUMERIC, "%s: %s", deg_status_name(s), deg_errmsg());
    char *path = tmpfile_path("nan.safetensors");
    unlink(path);
    cr_expect_eq(deg_cartridge_save(c, path, 1), DEG_ERR_NUMERIC);
    cr_expect_neq(access(path, F_OK), 0, "a NaN cartridge was written");
    /* An exploding step (huge lr): refused, rows unchanged. */
    k[g.row * 2 + 3] = keep;
    deg_cartridge_set_rows(c, 1, k, NULL);
    ap.lr = INFINITY;
    cr_expect_eq(deg_cartridge_train_step(c, ids, 4, ok, 1, &ap, 0, NULL), DEG_ERR_ARG);
    ap.lr = 3e38f;
    s = deg_cartridge_train_step(c, ids, 4, ok, 1, &ap, 0, NULL);
    cr_expect_eq(s, DEG_ERR_NUMERIC, "%s: %s", deg_status_name(s), deg_errmsg());
    float *k2 = malloc(n * 4);
    deg_cartridge_get_rows(c, 1, k2, NULL);
    cr_expect(memcmp(k, k2, n * 4) == 0, "a failed step changed the rows");
    cr_expect_eq(deg_cartridge_steps(c), 0);
    cr_expect_eq(deg_cartridge_save(c, path, 1), DEG_OK, "%s", deg_errmsg());
    unlink(path);
    free(path); free(k); free(k2);
    deg_cartridge_free(c);
    deg_cartridge_free(NULL);
    deg_model_free(m);
}

Test(cartridge, targets_from_logits)
{
    deg_model *m = tiny_load("tiny-llama");
    geo g = geometry(m);
    float *lg = calloc(g.V, 4);
    /* Three dominant tokens: 0.6, 0.3, 0.0999..., the tail tiny. */
    for (size_t j = 0; j < g.V; j++) lg[j] = -30.0f;
    lg[7] = logf(0.6f); lg[3] = logf(0.3f); lg[100] = logf(0.0995f);
    deg_distill_target out[20];
    size_t n = 0;
    cr_assert_eq(deg_distill_targets_from_logits(m, lg, 5, 20, 0.99f, out, &n), DEG_OK);
    cr_expect_eq(n, 3, "got %zu entries", n);
    cr_expect_eq(out[0].token, 7);
    cr_expect_eq(out[1].token, 3);
    cr_expect_eq(out[2].token, 100);
    cr_expect_eq(out[0].position, 5);
    double mass = 0;
    for (size_t i = 0; i < n; i++) mass += exp(out[i].logprob);
    cr_expect(mass < 1.0 && mass >= 0.99, "mass %g (not renormalised)", mass);
    /* k caps the count. */
    cr_assert_eq(deg_distill_targets_from_logits(m, lg, 5, 2, 0.99f, out, &n), DEG_OK);
    cr_expect_eq(n, 2);
    free(lg);
    deg_model_free(m);
}

typedef struct ref_lp {
    float lp;
    int32_t id;
} ref_lp;

static int ref_cmp(const void *a, const void *b)
{
    const ref_lp *x = a, *y = b;
    if (x->lp != y->lp) return x->lp > y->lp ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

/* The top-k selection equals a full sort by (logprob desc, id asc), entry
 * for entry and bit for bit: random rows, rows of ties (a flat row, a few
 * equal maxima), k up to past the vocabulary. The reference is the rule
 * written out: every logprob, qsort, the head until min_mass. */
Test(cartridge, targets_top_k_is_the_sorted_head)
{
    deg_model *m = tiny_load("tiny-llama");
    geo g = geometry(m);
    float *lg = calloc(g.V, 4);
    ref_lp *all = malloc(g.V * sizeof *all);
    deg_distill_target *out = malloc((g.V + 8) * sizeof *out);
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int row = 0; row < 24; row++) {
        for (size_t j = 0; j < g.V; j++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            float u = (float)(x >> 40) / (float)(1u << 24);
            lg[j] = row % 4 == 0 ? 1.0f                            /* flat: all tied */
                  : row % 4 == 1 ? (float)((x >> 40) % 3)          /* three levels, many ties */
                                 : 8.0f * u * u * u - 4.0f;        /* spread */
        }
        double mx = -INFINITY, s = 0;
        for (size_t j = 0; j < g.V; j++) mx = lg[j] > mx ? lg[j] : mx;
        for (size_t j = 0; j < g.V; j++) s += exp((double)lg[j] - mx);
        double lse = mx + log(s);
        for (size_t j = 0; j < g.V; j++) all[j] = (ref_lp){(float)((double)lg[j] - lse), (int32_t)j};
        qsort(all, g.V, sizeof *all, ref_cmp);
        int32_t ks[4] = {1, 5, 20, (int32_t)g.V + 3};
        float masses[2] = {0.5f, 1.0f};
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 2; b++) {
                size_t n = 0, want = 0;
                double mass = 0;
                while (want < (size_t)ks[a] && want < g.V && mass < (double)masses[b])
                    mass += exp((double)all[want++].lp);
                cr_assert_eq(deg_distill_targets_from_logits(m, lg, 3, ks[a], masses[b], out, &n),
                             DEG_OK);
                cr_assert_eq(n, want, "row %d k %d: %zu entries, want %zu", row, ks[a], n, want);
                for (size_t e = 0; e < n; e++) {
                    cr_assert_eq(out[e].token, all[e].id, "row %d k %d entry %zu", row, ks[a], e);
                    cr_assert(!memcmp(&out[e].logprob, &all[e].lp, sizeof(float)));
                    cr_assert_eq(out[e].position, 3);
                }
            }
    }
    free(lg);
    free(all);
    free(out);
    deg_model_free(m);
}

Test(cartridge, random_inits)
{
    deg_model *m = tiny_load("tiny-qwen3");
    geo g = geometry(m);
    deg_cartridge *a = NULL, *b = NULL;
    cr_assert_eq(deg_cartridge_init_random_vectors(m, 4, 1, &a), DEG_OK);
    cr_assert_eq(deg_cartridge_init_random_text(m, 4, 1, &b), DEG_OK);
    size_t n = 4 * g.row;
    float *k = malloc(n * 4);
    double s = 0, s2 = 0;
    deg_cartridge_get_rows(a, 0, k, NULL);
    for (size_t i = 0; i < n; i++) { s += k[i]; s2 += (double)k[i] * k[i]; }
    cr_expect(fabs(s / n) < 0.2 && fabs(s2 / n - 1.0) < 0.3, "not ~N(0,1): mean %g var %g",
              s / n, s2 / n);
    int32_t ids[3] = {4, 5, 6};
    float lg[3 * 512];
    cr_expect_eq(deg_cartridge_eval(b, ids, 3, NULL, 0, NULL, lg), DEG_OK);
    free(k);
    deg_cartridge_free(a);
    deg_cartridge_free(b);
    deg_model_free(m);
}
