/* cartridge_testutil.h - helpers the cartridge suites share (test_cartridge.c on
 * llama/qwen3, test_cartridge_hybrid.c on lfm2/qwen3_5): the equivalence gate, the
 * torch/transformers golden's common tensors, a temporary file path, and the
 * save -> load -> one more step on both check of a resumed cartridge. */
#ifndef DEG_TESTS_CARTRIDGE_TESTUTIL_H
#define DEG_TESTS_CARTRIDGE_TESTUTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cartridge.h"
#include "deg.h"
#include "format/safetensors.h"
#include "tiny_model.h"

/* The equivalence gate on tiny model name: an untrained cartridge of a prefix
 * captured from the model (deg_cartridge_init_tokens) gives bitwise the logits of
 * the real prefill of prefix + suffix, through the training forward
 * (deg_cartridge_eval) and through serving (a fork of deg_trunk_from_cartridge). */
static inline void cart_equivalence_gate(const char *name)
{
    deg_model *m = tiny_load(name);
    geo g = geometry(m);
    enum { P = 9, S = 7 };
    int32_t all[P + S];
    for (int i = 0; i < P + S; i++) all[i] = (int32_t)((i * 37 + 11) % (int)g.V);
    /* Real prefill of prefix + suffix. */
    deg_trunk *t = NULL;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    float *ref = malloc((P + S) * g.V * 4), *lg = malloc(S * g.V * 4);
    cr_assert_eq(deg_trunk_prefill(t, all, P + S, ref, NULL), DEG_OK);
    /* Untrained cartridge of the prefix: training forward ... */
    deg_cartridge *c = NULL;
    cr_assert_eq(deg_cartridge_init_tokens(m, all, P, &c), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_cartridge_eval(c, all + P, S, NULL, 0, NULL, lg), DEG_OK, "%s",
                 deg_errmsg());
    cr_expect(memcmp(lg, ref + P * g.V, S * g.V * 4) == 0,
              "%s: logits behind the cartridge differ from the real prefill", name);
    /* ... and serving: a fork of the trunk written from the cartridge. */
    deg_trunk *ct = NULL;
    deg_fork *f = NULL;
    cr_assert_eq(deg_trunk_from_cartridge(c, &ct), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_trunk_len(ct), P);
    cr_assert_eq(deg_fork_new(ct, &f), DEG_OK);
    cr_assert_eq(deg_fork_feed(f, all + P, S, lg), DEG_OK);
    cr_expect(memcmp(lg, ref + P * g.V, S * g.V * 4) == 0,
              "%s: fork behind deg_trunk_from_cartridge differs from the real prefill", name);
    deg_fork_free(f);
    deg_trunk_free(ct);
    deg_trunk_free(t);
    deg_cartridge_free(c);
    free(ref);
    free(lg);
    deg_model_free(m);
}

/* The tensors every cartridge golden holds (tests/goldens/gen_cartridge_goldens.py,
 * gen_hybrid_train_goldens.py), borrowed from the open file st: the prefix and the
 * sequence, the distillation targets (tg: malloc'd, free it), the captured K/V rows
 * of the attention layers [n_attn, P, row], logits [T, V], loss, and the gradients
 * into the rows. */
typedef struct cart_golden {
    dg_safetensors *st;
    const int32_t *prefix, *ids;
    size_t P, T, NT;
    deg_distill_target *tg;
    const float *rk, *rv, *logits;
    const double *loss, *gk, *gv;
} cart_golden;

static inline cart_golden cart_golden_open(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/cartridge/%s.safetensors", TINY_GOLDENS, name);
    cart_golden G = {0};
    cr_assert_eq(dg_safetensors_open(p, &G.st), DEG_OK, "%s: %s", p, deg_errmsg());
    G.prefix = golden_tensor(G.st, "prefix_ids", &G.P);
    G.ids = golden_tensor(G.st, "ids", &G.T);
    const int32_t *tpos = golden_tensor(G.st, "tgt_pos", &G.NT);
    const int32_t *ttok = golden_tensor(G.st, "tgt_tok", NULL);
    const float *tlp = golden_tensor(G.st, "tgt_lp", NULL);
    G.rk = golden_tensor(G.st, "rows_k", NULL);
    G.rv = golden_tensor(G.st, "rows_v", NULL);
    G.logits = golden_tensor(G.st, "logits", NULL);
    G.loss = golden_tensor(G.st, "loss", NULL);
    G.gk = golden_tensor(G.st, "grad_k", NULL);
    G.gv = golden_tensor(G.st, "grad_v", NULL);
    G.tg = malloc(G.NT * sizeof *G.tg);
    cr_assert_not_null(G.tg);
    for (size_t i = 0; i < G.NT; i++) G.tg[i] = (deg_distill_target){tpos[i], ttok[i], tlp[i]};
    return G;
}

static inline void cart_golden_close(cart_golden *G)
{
    free(G->tg);
    dg_safetensors_close(G->st);
}

/* $TMPDIR (else /tmp)/<prefix>_<pid>_<name>, malloc'd. */
static inline char *cart_tmp_path(const char *prefix, const char *name)
{
    char *p = NULL;
    const char *base = getenv("TMPDIR");
    if (asprintf(&p, "%s/%s_%d_%s", base && *base ? base : "/tmp", prefix, (int)getpid(),
                 name) < 0)
        abort();
    return p;
}

/* Resume: one more training step on c and on d (c saved with its optimizer state
 * and loaded back) gives identical rows, and on a hybrid's recurrent layers
 * identical states (the Adam moments were restored). len: the cartridge's rows. */
static inline void cart_expect_resumed(deg_cartridge *c, deg_cartridge *d, const int32_t *ids,
                                       size_t n_ids, const deg_distill_target *tg, size_t n_tg,
                                       const deg_adam_params *ap, int L, size_t row, size_t len)
{
    cr_assert_eq(deg_cartridge_train_step(c, ids, n_ids, tg, n_tg, ap, 0, NULL), DEG_OK);
    cr_assert_eq(deg_cartridge_train_step(d, ids, n_ids, tg, n_tg, ap, 0, NULL), DEG_OK);
    for (int il = 0; il < L; il++) {
        size_t n = deg_cartridge_state_len(c, il);
        if (!n) n = len * row;
        float *a = malloc(n * 4), *b = malloc(n * 4);
        if (deg_cartridge_state_len(c, il)) {
            deg_cartridge_get_state(c, il, a);
            deg_cartridge_get_state(d, il, b);
        } else {
            deg_cartridge_get_rows(c, il, a, NULL);
            deg_cartridge_get_rows(d, il, b, NULL);
        }
        cr_expect(memcmp(a, b, n * 4) == 0, "resumed training differs (layer %d)", il);
        free(a);
        free(b);
    }
}

#endif
