/* deg_cartridge_backward_packed: packed segments give the gradient of the
 * packed loss, equal to the token-weighted sum of unpacked backwards (f32
 * roundoff: the loss sums in another order); one segment is bitwise the
 * unpacked backward; bad segments and targets are errors. Tiny models. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cartridge.h"
#include "deg.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static deg_model *load(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, GOLDENS "/%s", name);
    deg_model *m = NULL;
    cr_assert_eq(deg_model_load(p, &m), DEG_OK, "load %s: %s", p, deg_errmsg());
    return m;
}

static deg_cartridge *make(deg_model *m)
{
    deg_cartridge *c = NULL;
    cr_assert_eq(deg_cartridge_init_random_vectors(m, 6, 3, &c), DEG_OK, "%s", deg_errmsg());
    return c;
}

/* Segment a: 7 tokens, segment b: 5 tokens. Targets at local positions
 * (two entries each) shifted by the segment's offset. */
static const int32_t IDS[12] = {5, 17, 33, 2, 99, 41, 7, 250, 12, 3, 77, 64};
static const size_t SEG[2] = {7, 5};

static size_t targets(deg_distill_target *t, size_t off, size_t n, float lw)
{
    size_t k = 0;
    for (size_t j = 1; j < n; j += 2) {
        t[k++] = (deg_distill_target){(int32_t)(off + j), (int32_t)(10 + j), logf(0.6f) + lw};
        t[k++] = (deg_distill_target){(int32_t)(off + j), (int32_t)(90 + j), logf(0.3f) + lw};
    }
    return k;
}

static void grads(deg_cartridge *c, int nl, size_t nrow, float *out)
{
    for (int il = 0; il < nl; il++)
        cr_assert_eq(deg_cartridge_get_grads(c, il, out + (size_t)il * 2 * nrow,
                                             out + ((size_t)il * 2 + 1) * nrow), DEG_OK);
}

static void check_model(const char *name)
{
    deg_model *m = load(name);
    deg_model_info info;
    deg_model_get_info(m, &info);
    size_t nrow = 6 * (size_t)info.n_head_kv * (size_t)info.head_dim;
    size_t ng = (size_t)info.n_layer * 2 * nrow;
    float *gp = malloc(ng * sizeof(float)), *gf = malloc(ng * sizeof(float));
    deg_distill_target tp[16], tf[8];
    /* distinct supervised positions: a has 3 (1, 3, 5), b has 2 (1, 3) */
    size_t na = targets(tp, 0, SEG[0], 0.0f);
    size_t nt = na + targets(tp + na, SEG[0], SEG[1], 0.0f);
    deg_cartridge *c = make(m);
    float lp = 0, la = 0, lb = 0;
    cr_assert_eq(deg_cartridge_backward_packed(c, IDS, 12, SEG, 2, tp, nt, 0, &lp), DEG_OK,
                 "%s", deg_errmsg());
    grads(c, info.n_layer, nrow, gp);
    deg_cartridge_zero_grads(c);
    size_t n = targets(tf, 0, SEG[0], logf(3.0f / 5.0f));
    cr_assert_eq(deg_cartridge_backward(c, IDS, SEG[0], tf, n, 0, &la), DEG_OK, "%s",
                 deg_errmsg());
    n = targets(tf, 0, SEG[1], logf(2.0f / 5.0f));
    cr_assert_eq(deg_cartridge_backward(c, IDS + SEG[0], SEG[1], tf, n, 0, &lb), DEG_OK);
    grads(c, info.n_layer, nrow, gf);
    cr_assert_float_eq(lp, la + lb, 1e-5 * fabsf(lp), "%s: packed loss %g vs %g", name, lp,
                       la + lb);
    float scale = 0, err = 0;
    for (size_t i = 0; i < ng; i++) {
        scale = fmaxf(scale, fabsf(gf[i]));
        err = fmaxf(err, fabsf(gp[i] - gf[i]));
    }
    cr_assert(scale > 0);
    cr_assert(err <= 1e-5f * scale, "%s: packed vs flat gradient max err %g (scale %g)", name,
              (double)err, (double)scale);

    /* checkpointed packed == packed, bitwise */
    deg_cartridge_zero_grads(c);
    cr_assert_eq(deg_cartridge_backward_packed(c, IDS, 12, SEG, 2, tp, nt, 1, NULL), DEG_OK);
    grads(c, info.n_layer, nrow, gf);
    cr_assert(memcmp(gp, gf, ng * sizeof(float)) == 0, "%s: checkpoint changed the gradient",
              name);

    /* one segment == the unpacked backward, bitwise */
    size_t one = 12;
    deg_cartridge_zero_grads(c);
    cr_assert_eq(deg_cartridge_backward_packed(c, IDS, 12, &one, 1, tp, nt, 0, &lp), DEG_OK);
    grads(c, info.n_layer, nrow, gp);
    deg_cartridge_zero_grads(c);
    cr_assert_eq(deg_cartridge_backward(c, IDS, 12, tp, nt, 0, &la), DEG_OK);
    grads(c, info.n_layer, nrow, gf);
    cr_assert(lp == la && memcmp(gp, gf, ng * sizeof(float)) == 0,
              "%s: one packed segment differs from the unpacked backward", name);
    deg_cartridge_free(c);
    free(gp);
    free(gf);
    deg_model_free(m);
}

Test(cartridge_packed, equals_weighted_flat_qwen3) { check_model("tiny-qwen3"); }
Test(cartridge_packed, equals_weighted_flat_llama) { check_model("tiny-llama"); }

Test(cartridge_packed, bad_input)
{
    deg_model *m = load("tiny-qwen3");
    deg_cartridge *c = make(m);
    deg_distill_target t[16];
    size_t nt = targets(t, 0, 12, 0.0f);
    size_t bad_sum[2] = {7, 4}, zero[2] = {12, 0};
    cr_assert_eq(deg_cartridge_backward_packed(c, IDS, 12, bad_sum, 2, t, nt, 0, NULL),
                 DEG_ERR_ARG);
    cr_assert(strstr(deg_errmsg(), "sum to 11"), "%s", deg_errmsg());
    cr_assert_eq(deg_cartridge_backward_packed(c, IDS, 12, zero, 2, t, nt, 0, NULL),
                 DEG_ERR_ARG);
    cr_assert_eq(deg_cartridge_backward_packed(c, IDS, 12, SEG, 2, NULL, 0, 0, NULL),
                 DEG_ERR_ARG);
    /* position 7 = first token of segment b */
    deg_distill_target at_start = {7, 3, -0.5f};
    cr_assert_eq(deg_cartridge_backward_packed(c, IDS, 12, SEG, 2, &at_start, 1, 0, NULL),
                 DEG_ERR_RANGE);
    cr_assert(strstr(deg_errmsg(), "segment 1"), "%s", deg_errmsg());
    deg_distill_target past = {12, 3, -0.5f};
    cr_assert_eq(deg_cartridge_backward_packed(c, IDS, 12, SEG, 2, &past, 1, 0, NULL),
                 DEG_ERR_RANGE);
    int32_t bad_ids[12];
    memcpy(bad_ids, IDS, sizeof bad_ids);
    bad_ids[4] = 1 << 20;
    cr_assert_eq(deg_cartridge_backward_packed(c, bad_ids, 12, SEG, 2, t, nt, 0, NULL),
                 DEG_ERR_RANGE);
    deg_cartridge_free(c);
    deg_model_free(m);
}
