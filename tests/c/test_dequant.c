/* Dequantization and f16/bf16 conversions against gguf-py / numpy goldens
 * (tests/goldens/gen_dequant.py). All comparisons are BITWISE: both sides do
 * the same f32 operations in the same order (see lib/tensor/dequant.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "core_testutil.h"
#include "tensor/dtype.h"

#define GOLD DEG_SOURCE_ROOT "/tests/goldens/dequant/"

static void check_type(const char *name, dg_dtype t)
{
    size_t nraw, nf;
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, GOLD "%s.raw", name);
    snprintf(p2, sizeof p2, GOLD "%s.f32", name);
    uint8_t *raw = tu_read(p1, &nraw);
    float *want = (float *)tu_read(p2, &nf);
    cr_assert_not_null(raw, "missing golden %s", p1);
    cr_assert_not_null(want, "missing golden %s", p2);
    int64_t n = (int64_t)(nf / 4);
    cr_assert_eq(dg_dtype_row_bytes(t, n, NULL), nraw, "%s: raw size", name);
    float *got = malloc(nf);
    cr_assert_eq(dg_dequantize(t, raw, got, n), DEG_OK, "%s", deg_errmsg());
    for (int64_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &got[i], 4);
        memcpy(&b, &want[i], 4);
        cr_assert_eq(a, b, "%s[%lld]: got %a (0x%08x), gguf-py %a (0x%08x)", name, (long long)i,
                     got[i], a, want[i], b);
    }
    /* misaligned source must give the same result */
    uint8_t *shifted = malloc(nraw + 1);
    memcpy(shifted + 1, raw, nraw);
    cr_assert_eq(dg_dequantize(t, shifted + 1, got, n), DEG_OK);
    cr_assert_eq(memcmp(got, want, nf), 0, "%s: misaligned source differs", name);
    free(shifted);
    free(got);
    free(raw);
    free(want);
}

Test(dequant, q8_0_bitwise) { check_type("Q8_0", DG_Q8_0); }
Test(dequant, q4_0_bitwise) { check_type("Q4_0", DG_Q4_0); }
Test(dequant, q4_1_bitwise) { check_type("Q4_1", DG_Q4_1); }
Test(dequant, q5_0_bitwise) { check_type("Q5_0", DG_Q5_0); }
Test(dequant, q5_1_bitwise) { check_type("Q5_1", DG_Q5_1); }
Test(dequant, q4_k_bitwise) { check_type("Q4_K", DG_Q4_K); }
Test(dequant, q6_k_bitwise) { check_type("Q6_K", DG_Q6_K); }
Test(dequant, f16_bitwise_incl_subnormal_inf_nan) { check_type("F16", DG_F16); }
Test(dequant, bf16_bitwise) { check_type("BF16", DG_BF16); }

Test(dequant, f32_to_f16_and_bf16_round_to_nearest_even)
{
    size_t nx, nh, nb;
    float *x = (float *)tu_read(GOLD "f32_in.f32", &nx);
    uint16_t *h = (uint16_t *)tu_read(GOLD "f32_to_f16.u16", &nh);
    uint16_t *b = (uint16_t *)tu_read(GOLD "f32_to_bf16.u16", &nb);
    cr_assert(x && h && b);
    cr_assert_eq(nx / 4, nh / 2);
    for (size_t i = 0; i < nx / 4; i++) {
        cr_assert_eq(dg_f32_to_f16(x[i]), h[i], "f16(%a): got 0x%04x numpy 0x%04x", x[i],
                     dg_f32_to_f16(x[i]), h[i]);
        cr_assert_eq(dg_f32_to_bf16(x[i]), b[i], "bf16(%a): got 0x%04x gguf-py 0x%04x", x[i],
                     dg_f32_to_bf16(x[i]), b[i]);
    }
    free(x);
    free(h);
    free(b);
}

Test(dequant, f16_roundtrip_every_finite_half)
{
    for (uint32_t u = 0; u < 65536; u++) {
        float f = dg_f16_to_f32((uint16_t)u);
        if (isnan(f)) {
            cr_assert(isnan(dg_f16_to_f32(dg_f32_to_f16(f))));
            continue;
        }
        cr_assert_eq(dg_f32_to_f16(f), (uint16_t)u, "half 0x%04x", u);
    }
}

Test(dequant, sizes_names_and_errors)
{
    cr_assert_eq(dg_dtype_block_bytes(DG_Q4_K), 144);
    cr_assert_eq(dg_dtype_block_bytes(DG_Q6_K), 210);
    cr_assert_eq(dg_dtype_block_elems(DG_Q4_1), 32);
    cr_assert_str_eq(dg_dtype_name(DG_BF16), "bf16");
    int ok;
    cr_assert_eq(dg_dtype_row_bytes(DG_Q4_0, 64, &ok), 36);
    cr_assert_eq(ok, 1);
    dg_dtype_row_bytes(DG_Q4_0, 48, &ok);
    cr_assert_eq(ok, 0);
    float out[32];
    uint8_t zero[64] = {0};
    cr_assert_eq(dg_dequantize(DG_Q4_0, zero, out, 31), DEG_ERR_ARG);
    cr_assert_eq(dg_dequantize(DG_I32, zero, out, 4), DEG_ERR_UNSUPPORTED);
    cr_assert(strstr(deg_errmsg(), "i32"), "%s", deg_errmsg());
}
