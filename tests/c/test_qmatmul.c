/* Typed-weight products (lib/tensor/weight.h, qdot.h) for every weight
 * dtype: the dispatched kernel (AVX2 / AVX-512 VNNI where the CPU has them)
 * bitwise equal to the portable scalar reference, including odd shapes and
 * block tails; a row's result bitwise the same alone, batched (1..16, 100
 * rows) and at 1..3 threads; accuracy against a double product of the
 * dequantized weights within the bound qdot.h derives; the backward
 * dX = dY . W against a double reference; row maps; several weights in one
 * dg_weight_matmul_multi call bitwise equal to separate calls. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "deg.h"
#include "tensor/fdot.h"
#include "tensor/qdot.h"
#include "tensor/weight.h"

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t s = rng_state;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return rng_state = s;
}
static float frand(void) { return (float)((double)(rnd() >> 11) / 9007199254740992.0 - 0.5); }

static void put_f16(uint8_t *p, float v)
{
    uint16_t h = dg_f32_to_f16(v);
    memcpy(p, &h, 2);
}

/* Random but valid blocks of dtype t for rows x cols (scales small, positive). */
static uint8_t *make_weight(dg_dtype t, int64_t rows, int64_t cols, dg_weight *w)
{
    int ok;
    size_t rb = dg_dtype_row_bytes(t, cols, &ok);
    cr_assert(ok);
    uint8_t *d = malloc(rb * (size_t)rows);
    for (size_t i = 0; i < rb * (size_t)rows; i++) d[i] = (uint8_t)rnd();
    int64_t be = dg_dtype_block_elems(t), nb = rows * cols / be;
    size_t bb = dg_dtype_block_bytes(t);
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *p = d + (size_t)b * bb;
        float sc = 0.001f + 0.02f * (frand() + 0.5f);
        switch (t) {
        case DG_Q8_0: case DG_Q4_0: put_f16(p, sc); break;
        case DG_Q4_1: put_f16(p, sc); put_f16(p + 2, -8.0f * sc * (frand() + 0.5f)); break;
        case DG_Q5_0: put_f16(p, sc); break;
        case DG_Q5_1: put_f16(p, sc); put_f16(p + 2, -16.0f * sc * (frand() + 0.5f)); break;
        case DG_Q4_K: put_f16(p, sc / 16); put_f16(p + 2, sc / 32); break;
        case DG_Q6_K: put_f16(p + 208, sc / 64); break;
        case DG_F16: put_f16(p, frand() * 0.2f); break;
        case DG_BF16: { uint16_t h = dg_f32_to_bf16(frand() * 0.2f); memcpy(p, &h, 2); break; }
        default: break;
        }
    }
    *w = (dg_weight){.dtype = t, .rows = rows, .cols = cols, .data = d, .row_bytes = rb};
    return d;
}

/* Q5_0 / Q5_1 last (f32 activations only, like F16/BF16): the earlier
 * dtypes keep their random data. */
static const dg_dtype all_types[] = {DG_Q4_0, DG_Q4_1, DG_Q8_0, DG_Q4_K, DG_Q6_K,
                                     DG_F16,  DG_BF16, DG_Q5_0, DG_Q5_1};
#define N_TYPES (sizeof all_types / sizeof all_types[0])

static void fill_x(float *x, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) x[i] = frand() * scale;
    if (n > 5) x[3] = 0.0f; /* zeros and an all-zero block below */
}

static int64_t cols_for(dg_dtype t, int i)
{
    static const int64_t small[] = {32, 96, 256, 288, 544, 576};
    static const int64_t kq[] = {256, 768, 2304};
    if (t == DG_Q4_K || t == DG_Q6_K) return kq[i % 3];
    if (t == DG_F16 || t == DG_BF16) return small[i % 6] + (i % 2 ? 5 : 0); /* tails */
    return small[i % 6];
}

Test(qmatmul, kernel_bitwise_equals_scalar_reference)
{
    cr_log_info("quantized kernel: %s", dg_qdot_kernel());
    rng_state = 0x1234567;
    for (int fa = 0; fa < 2; fa++) /* 8-bit activations, then f32 ones (fdot.h) */
    for (size_t ti = 0; ti < N_TYPES; ti++)
        for (int ci = 0; ci < 6; ci++) {
            dg_dtype t = all_types[ti];
            int64_t K = cols_for(t, ci), N = 1 + ci * 7, M = 1 + ci + (ci == 5 ? 4 : 0);
            dg_weight w;
            uint8_t *data = make_weight(t, N, K, &w);
            w.f32_act = fa;
            float *x = malloc(sizeof(float) * (size_t)(M * K)), *y = malloc(sizeof(float) * (size_t)(M * N));
            fill_x(x, (size_t)(M * K), 4.0f);
            if (K >= 64) memset(x + 32, 0, 32 * sizeof(float));
            dg_weight_matmul(&w, M, x, K, y, N);
            int64_t nb = K / 32;
            int8_t *q = malloc((size_t)K);
            float *d = malloc(sizeof(float) * (size_t)(nb + 1));
            int32_t *s = malloc(sizeof(int32_t) * (size_t)(nb + 1));
            dg_q8_row r = {q, d, s, nb};
            for (int64_t m = 0; m < M; m++) {
                int quant = dg_weight_q8_act(&w);
                if (quant) dg_q8_quantize(x + m * K, &r);
                for (int64_t n = 0; n < N; n++) {
                    const uint8_t *wr = dg_weight_row_data(&w, n);
                    float e = quant ? dg_qdot_scalar(t, wr, &r) : dg_fdot_scalar(t, wr, x + m * K, K);
                    cr_assert(memcmp(&e, &y[m * N + n], 4) == 0,
                              "%s%s K=%lld row %lld col %lld: kernel %.9g vs scalar %.9g",
                              dg_dtype_name(t), fa ? " f32_act" : "", (long long)K, (long long)m,
                              (long long)n, (double)y[m * N + n], (double)e);
                }
            }
            free(q), free(d), free(s), free(x), free(y), free(data);
        }
}

/* The multi-row kernel (dg_qdot_rows: 1..3 weight rows per call, each
 * unpacked once for M x rows; prefill and batched decode) bitwise equal to
 * the scalar reference per pair: every quantized dtype, rows of 1..8, 17 and 18 blocks (the
 * masked last group holds 1..7 blocks), M = 1..9 and 64, large and zero
 * activations, strided output. */
Test(qmatmul, kernel_bitwise_rows_equal_scalar_reference)
{
    rng_state = 0x5EED;
    const dg_dtype qtypes[] = {DG_Q4_0, DG_Q4_1, DG_Q8_0, DG_Q4_K, DG_Q6_K};
    const int64_t Ms[] = {1, 2, 3, 5, 8, 9, 64};
    for (size_t ti = 0; ti < 5; ti++)
        for (int ki = 0; ki < 10; ki++) {
            dg_dtype t = qtypes[ti];
            int kq = t == DG_Q4_K || t == DG_Q6_K;
            static const int64_t nbs[10] = {1, 2, 3, 4, 5, 6, 7, 8, 17, 18}; /* 18: 576 wide */
            int64_t K = kq ? 256 * (1 + ki % 3) : 32 * nbs[ki], nb = K / 32;
            const int64_t N = 3, Mmax = 64, ldy = 5; /* ldy > N: y + 1 + r stays in a row */
            dg_weight w;
            uint8_t *data = make_weight(t, N, K, &w);
            float *x = malloc(sizeof(float) * (size_t)(Mmax * K));
            fill_x(x, (size_t)(Mmax * K), ki % 2 ? 4.0f : 3000.0f);
            memset(x + K, 0, sizeof(float) * (size_t)K); /* row 1 all zero */
            int8_t *q = malloc((size_t)(Mmax * K));
            float *d = malloc(sizeof(float) * (size_t)(Mmax * nb));
            int32_t *s = malloc(sizeof(int32_t) * (size_t)(Mmax * nb));
            int64_t n8 = dg_q8_groups(nb);
            int8_t *qt = malloc((size_t)(Mmax * n8 * 32));
            int32_t *hs = malloc(sizeof(int32_t) * (size_t)(Mmax * 2 * n8));
            dg_q8_row xr[64];
            for (int64_t m = 0; m < Mmax; m++) {
                xr[m] = (dg_q8_row){q + m * K, d + m * nb, s + m * nb, nb, qt + m * n8 * 32,
                                    hs + m * 2 * n8};
                dg_q8_quantize(x + m * K, &xr[m]);
                dg_q8_interleave(&xr[m]);
            }
            void *scratch = malloc(dg_qdot_rows_scratch(nb) + 3);
            float *y = malloc(sizeof(float) * (size_t)(Mmax * ldy));
            /* 1..N weight rows per call, starting at each row */
            for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
                for (int64_t n = 0; n < N; n++)
                    for (int nr = 1; n + nr <= N; nr++) {
                        int64_t M = Ms[mi];
                        const uint8_t *wr[3];
                        for (int r = 0; r < nr; r++) wr[r] = dg_weight_row_data(&w, n + r);
                        /* an odd scratch address: the kernel aligns it itself */
                        dg_qdot_rows(t, wr, nr, xr, M, y + 1, ldy, (uint8_t *)scratch + 3);
                        for (int64_t m = 0; m < M; m++)
                            for (int r = 0; r < nr; r++) {
                                float e = dg_qdot_scalar(t, wr[r], &xr[m]);
                                cr_assert(memcmp(&e, &y[m * ldy + 1 + r], 4) == 0,
                                          "%s K=%lld M=%lld rows %d: x row %lld weight row %lld: "
                                          "rows kernel %.9g vs scalar %.9g (%s)",
                                          dg_dtype_name(t), (long long)K, (long long)M, nr,
                                          (long long)m, (long long)(n + r),
                                          (double)y[m * ldy + 1 + r], (double)e,
                                          dg_qdot_kernel());
                            }
                    }
            free(scratch), free(y), free(q), free(d), free(s), free(qt), free(hs), free(x), free(data);
        }
}

/* f32 activations at prefill sizes (fdot.h: a panel of 16 weight rows
 * dequantized once for all M x rows, the x rows in L2-sized blocks, 8 or 4
 * panel rows per register-blocked pass): every pair bitwise the scalar
 * reference, with M past one x block (80 rows at 576 columns, 28 at 1536,
 * 68 at 677) and N past one panel with a tail; F16 at 677 columns (not a
 * multiple of 8: the lane-tail path); strided x and y. */
Test(qmatmul, f32act_prefill_panels_bitwise_equal_scalar_reference)
{
    rng_state = 0xF32A;
    const struct { dg_dtype t; int64_t K; } cases[] = {
        {DG_Q4_1, 576}, {DG_Q8_0, 576}, {DG_Q4_K, 1536}, {DG_Q6_K, 768}, {DG_Q5_0, 1536},
        {DG_F16, 677}, {DG_BF16, 96}};
    const int64_t M = 171, N = 37, ldx_pad = 3, ldy = N + 2;
    for (int threads = 1; threads <= 2; threads++) {
        deg_set_num_threads(threads);
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            dg_dtype t = cases[ci].t;
            int64_t K = cases[ci].K, ldx = K + ldx_pad;
            dg_weight w;
            uint8_t *data = make_weight(t, N, K, &w);
            w.f32_act = 1;
            float *x = malloc(sizeof(float) * (size_t)(M * ldx));
            float *y = malloc(sizeof(float) * (size_t)(M * ldy));
            fill_x(x, (size_t)(M * ldx), 3.0f);
            dg_weight_matmul(&w, M, x, ldx, y, ldy);
            for (int64_t m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++) {
                    float e = dg_fdot_scalar(t, dg_weight_row_data(&w, n), x + m * ldx, K);
                    cr_assert(memcmp(&e, &y[m * ldy + n], 4) == 0,
                              "%s K=%lld, %d threads, row %lld col %lld: %.9g vs scalar %.9g",
                              dg_dtype_name(t), (long long)K, threads, (long long)m,
                              (long long)n, (double)y[m * ldy + n], (double)e);
                }
            free(x), free(y), free(data);
        }
    }
    deg_set_num_threads(0);
}

/* Every row computed alone, in batches of 1..16 and 100 (> the 64-row
 * quantization chunk), at 1, 2 and 3 threads: bitwise the same. */
Test(qmatmul, rows_bitwise_invariant_to_batch_and_threads)
{
    rng_state = 0xBEEF;
    const int64_t M = 100;
    for (int fa = 0; fa < 2; fa++)
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        dg_dtype t = all_types[ti];
        int64_t K = cols_for(t, 5), N = 67;
        dg_weight w;
        uint8_t *data = make_weight(t, N, K, &w);
        w.f32_act = fa;
        float *x = malloc(sizeof(float) * (size_t)(M * K));
        float *alone = malloc(sizeof(float) * (size_t)(M * N)), *y = malloc(sizeof(float) * (size_t)(M * N));
        fill_x(x, (size_t)(M * K), 3.0f);
        deg_set_num_threads(1);
        for (int64_t m = 0; m < M; m++) dg_weight_matmul(&w, 1, x + m * K, K, alone + m * N, N);
        for (int threads = 1; threads <= 3; threads++) {
            deg_set_num_threads(threads);
            for (int64_t bs = 1; bs <= 17; bs++) {
                int64_t b = bs == 17 ? M : bs;
                for (int64_t m0 = 0; m0 < M; m0 += b) {
                    int64_t mb = M - m0 < b ? M - m0 : b;
                    dg_weight_matmul(&w, mb, x + m0 * K, K, y + m0 * N, N);
                }
                cr_assert(memcmp(y, alone, sizeof(float) * (size_t)(M * N)) == 0,
                          "%s%s: batch %lld, %d threads differs from rows alone",
                          dg_dtype_name(t), fa ? " f32_act" : "", (long long)b, threads);
            }
        }
        deg_set_num_threads(0);
        free(x), free(alone), free(y), free(data);
    }
}

/* Against the double product of the dequantized weights with the exact x.
 * 8-bit activations: within sum_b d_b/2 * sum_{i in b} |w_i| (activation
 * rounding, qdot.h) plus 1e-5 * sum |w_i x_i| (f32 arithmetic). f32
 * activations (fdot.h): within gamma_(K/8 + 4) * sum |w_i x_i|, the
 * rigorous bound of its f32 arithmetic (a product and K/8 adds per lane, 3
 * in the final sum; gamma_n = n u / (1 - n u), u = 2^-24), no activation
 * term. Not looser: a kernel that skipped a block or misread a nibble breaks
 * either. */
Test(qmatmul, accuracy_within_the_activation_rounding_bound)
{
    rng_state = 0xACC;
    for (int fa = 0; fa < 2; fa++)
    for (size_t ti = 0; ti < N_TYPES; ti++)
        for (int ci = 0; ci < 6; ci++) {
            dg_dtype t = all_types[ti];
            int64_t K = cols_for(t, ci), N = 9, M = 3;
            dg_weight w;
            uint8_t *data = make_weight(t, N, K, &w);
            w.f32_act = fa;
            float *x = malloc(sizeof(float) * (size_t)(M * K)), *y = malloc(sizeof(float) * (size_t)(M * N));
            float *wf = malloc(sizeof(float) * (size_t)K);
            fill_x(x, (size_t)(M * K), 2.0f);
            dg_weight_matmul(&w, M, x, K, y, N);
            double worst = 0.0;
            for (int64_t n = 0; n < N; n++) {
                dg_weight_get_row(&w, n, wf);
                for (int64_t m = 0; m < M; m++) {
                    const float *xr = x + m * K;
                    double ref = 0.0, absprod = 0.0, bound = 0.0;
                    for (int64_t i = 0; i < K; i++) {
                        ref += (double)wf[i] * xr[i];
                        absprod += fabs((double)wf[i] * xr[i]);
                    }
                    if (dg_weight_q8_act(&w))
                        for (int64_t b = 0; b < K / 32; b++) {
                            double amax = 0.0, wsum = 0.0;
                            for (int i = 0; i < 32; i++) {
                                amax = fmax(amax, fabs(xr[b * 32 + i]));
                                wsum += fabs(wf[b * 32 + i]);
                            }
                            bound += (double)(float)(amax / 127.0) / 2.0 * wsum;
                        }
                    double nu = (double)(K / 8 + 4) * 0x1p-24;
                    bound += (dg_weight_q8_act(&w) ? 1e-5 : nu / (1.0 - nu)) * absprod + 1e-30;
                    double err = fabs((double)y[m * N + n] - ref);
                    cr_assert(err <= bound, "%s K=%lld: |%.9g - %.9g| = %.3g > bound %.3g",
                              dg_dtype_name(t), (long long)K, (double)y[m * N + n], ref, err, bound);
                    if (err / bound > worst) worst = err / bound;
                }
            }
            free(x), free(y), free(wf), free(data);
        }
}

/* dX = dY . W: against a double reference (f32 rounding of sums over rows),
 * accumulate adds, and a row's dX is bitwise the same alone or batched. */
Test(qmatmul, backward_x_matches_reference_and_is_row_invariant)
{
    rng_state = 0xBAC;
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        dg_dtype t = all_types[ti];
        int64_t K = cols_for(t, 2), N = 130, M = 7; /* N: two full 64-row tiles and a tail */
        dg_weight w;
        uint8_t *data = make_weight(t, N, K, &w);
        float *dy = malloc(sizeof(float) * (size_t)(M * N)), *dx = malloc(sizeof(float) * (size_t)(M * K));
        float *dx1 = malloc(sizeof(float) * (size_t)K), *wf = malloc(sizeof(float) * (size_t)(N * K));
        fill_x(dy, (size_t)(M * N), 1.0f);
        for (int64_t n = 0; n < N; n++) dg_weight_get_row(&w, n, wf + n * K);
        cr_assert_eq(dg_weight_backward_x(&w, M, dy, N, dx, K, 0), DEG_OK);
        for (int64_t m = 0; m < M; m++)
            for (int64_t k = 0; k < K; k++) {
                double ref = 0.0, mag = 0.0;
                for (int64_t n = 0; n < N; n++) {
                    ref += (double)dy[m * N + n] * wf[n * K + k];
                    mag += fabs((double)dy[m * N + n] * wf[n * K + k]);
                }
                cr_assert(fabs(dx[m * K + k] - ref) <= 1e-5 * mag + 1e-30, "%s dx[%lld][%lld]",
                          dg_dtype_name(t), (long long)m, (long long)k);
            }
        for (int64_t m = 0; m < M; m++) {
            cr_assert_eq(dg_weight_backward_x(&w, 1, dy + m * N, N, dx1, K, 0), DEG_OK);
            cr_assert(memcmp(dx1, dx + m * K, sizeof(float) * (size_t)K) == 0,
                      "%s: row %lld alone differs", dg_dtype_name(t), (long long)m);
            float before = dx1[0];
            cr_assert_eq(dg_weight_backward_x(&w, 1, dy + m * N, N, dx1, K, 1), DEG_OK);
            cr_assert_float_eq(dx1[0], before * 2.0f, 1e-5f * fabsf(before) + 1e-30f);
        }
        free(dy), free(dx), free(dx1), free(wf), free(data);
    }
}

/* A row map (llama.cpp's q/k head interleave undone without copying):
 * products, rows and the backward read logical row r from stored row map[r]. */
Test(qmatmul, row_map_reorders_rows)
{
    rng_state = 0x3A9;
    int64_t N = 8, K = 64;
    dg_weight w;
    uint8_t *data = make_weight(DG_Q4_1, N, K, &w);
    dg_weight wm = w;
    int32_t map[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    wm.row_map = map;
    float x[64], y[8], ym[8], r0[64], r1[64];
    fill_x(x, 64, 1.0f);
    dg_weight_matmul(&w, 1, x, K, y, N);
    dg_weight_matmul(&wm, 1, x, K, ym, N);
    for (int n = 0; n < 8; n++) cr_assert(memcmp(&ym[n], &y[map[n]], 4) == 0);
    dg_weight_get_row(&wm, 1, r0);
    dg_weight_get_row(&w, 2, r1);
    cr_assert(memcmp(r0, r1, sizeof r0) == 0);
    free(data);
}

/* The 8-bit activation rows: q in [-127, 127], d = max|x| / 127, block sums,
 * reconstruction within d / 2. */
Test(qmatmul, activation_quantization)
{
    rng_state = 0x51;
    float x[96];
    fill_x(x, 96, 10.0f);
    memset(x + 32, 0, 32 * sizeof(float));
    int8_t q[96];
    float d[3];
    int32_t s[3];
    dg_q8_row r = {q, d, s, 3};
    dg_q8_quantize(x, &r);
    cr_assert_eq(d[1], 0.0f);
    for (int b = 0; b < 3; b++) {
        float amax = 0.0f;
        int32_t sum = 0;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b * 32 + i]));
        cr_assert_eq(d[b], amax / 127.0f);
        for (int i = 0; i < 32; i++) {
            cr_assert(q[b * 32 + i] >= -127 && q[b * 32 + i] <= 127);
            cr_assert(fabsf((float)q[b * 32 + i] * d[b] - x[b * 32 + i]) <= d[b] * 0.5001f);
            sum += q[b * 32 + i];
        }
        cr_assert_eq(s[b], sum);
    }
}

/* dg_q8_quantize (AVX2 where the kernel set has it) bitwise the portable
 * reference, block by block: random rows at several scales, an all-zero
 * block, exact ties (max 127 so d = 1: x = k + 0.5 rounds to even), -0,
 * denormals, a value at the +-127 clamp, and blocks with a NaN, +inf or
 * -inf (the reference's own code). */
Test(qmatmul, activation_quantization_simd_equals_reference)
{
    rng_state = 0x9A17;
    enum { NB = 12 };
    float x[NB * 32];
    fill_x(x, NB * 32, 3.0f);
    for (int i = 32; i < 64; i++) x[i] = 0.0f;                        /* block 1: zeros */
    for (int i = 0; i < 32; i++) x[64 + i] = (float)(i - 16) + 0.5f;  /* block 2: ties */
    x[64] = 127.0f;
    for (int i = 0; i < 32; i++) x[96 + i] = i % 2 ? -0.0f : 1e-40f;  /* 3: -0, denormals */
    for (int i = 0; i < 32; i++) x[128 + i] = 1e30f * frand();        /* 4: large */
    x[160 + 5] = NAN;                                                  /* 5: NaN */
    x[192 + 7] = INFINITY;                                             /* 6: +inf */
    x[224 + 31] = -INFINITY;                                           /* 7: -inf */
    for (int i = 0; i < 32; i++) x[256 + i] = 1e-3f * frand();        /* 8: small */
    for (int i = 0; i < 32; i++) x[288 + i] = (float)(i % 3) - 1.0f;  /* 9: -1, 0, 1 */
    int8_t q[2][NB * 32];
    float d[2][NB];
    int32_t s[2][NB];
    dg_q8_row a = {q[0], d[0], s[0], NB}, b = {q[1], d[1], s[1], NB};
    dg_q8_quantize(x, &a);
    dg_q8_quantize_scalar(x, &b);
    for (int k = 0; k < NB; k++) {
        cr_assert(memcmp(&d[0][k], &d[1][k], 4) == 0, "block %d: d %g vs %g (%s)", k,
                  (double)d[0][k], (double)d[1][k], dg_qdot_kernel());
        cr_assert_eq(s[0][k], s[1][k], "block %d: sum (%s)", k, dg_qdot_kernel());
        cr_assert(memcmp(q[0] + 32 * k, q[1] + 32 * k, 32) == 0, "block %d: q (%s)", k,
                  dg_qdot_kernel());
    }
    /* NaN products quantize to 0: a NaN x; the +inf block's d is inf, so
     * 1 / d = 0 and every x * 0 is 0 but inf * 0, NaN */
    cr_assert_eq(q[1][160 + 5], 0);
    cr_assert(isinf(d[1][6]));
    cr_assert_eq(q[1][192 + 7], 0);
    cr_assert_eq(q[1][64 + 18], 2);  /* x = 2.5 -> 2 (to even) */
    cr_assert_eq(q[1][64 + 19], 4);  /* 3.5 -> 4 */
}

/* q/k/v- and gate/up-style groups (one shared quantized x, one parallel
 * loop) against one dg_weight_matmul per weight: bitwise, for batches
 * 1, 5 and 70 (> the 64-row chunk) at 1 and 2 threads; all-quantized with
 * mixed dtypes, all-16-bit, and a mix with F16 (each alone). */
Test(qmatmul, multi_equals_separate_products)
{
    rng_state = 0x3117;
    /* groups 3 and 4: quantized weights with f32 activations (fdot.h), alone
     * (one pass with the F16 one) and mixed with 8-bit ones (separately) */
    const dg_dtype groups[5][3] = {{DG_Q4_1, DG_Q8_0, DG_Q4_0}, {DG_F16, DG_BF16, DG_F16},
                                   {DG_Q4_1, DG_F16, DG_Q8_0}, {DG_Q4_1, DG_F16, DG_Q8_0},
                                   {DG_Q4_1, DG_Q4_1, DG_Q4_0}};
    const int f32_act[5][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {1, 0, 1}, {1, 0, 1}};
    const int64_t K = 288, rows[3] = {7, 67, 16}, Ms[3] = {1, 5, 70};
    for (int gi = 0; gi < 5; gi++) {
        dg_weight w[3];
        uint8_t *data[3];
        for (int i = 0; i < 3; i++) {
            data[i] = make_weight(groups[gi][i], rows[i], K, &w[i]);
            w[i].f32_act = f32_act[gi][i];
        }
        const dg_weight *ws[3] = {&w[0], &w[1], &w[2]};
        float *x = malloc(sizeof(float) * (size_t)(70 * K));
        fill_x(x, (size_t)(70 * K), 3.0f);
        for (int mi = 0; mi < 3; mi++)
            for (int threads = 1; threads <= 2; threads++) {
                deg_set_num_threads(threads);
                int64_t M = Ms[mi], ld[3];
                float *ys[3], *ref[3];
                for (int i = 0; i < 3; i++) {
                    ld[i] = rows[i] + 3; /* a row stride wider than the row */
                    ys[i] = malloc(sizeof(float) * (size_t)(M * ld[i]));
                    ref[i] = malloc(sizeof(float) * (size_t)(M * ld[i]));
                    memset(ys[i], 0, sizeof(float) * (size_t)(M * ld[i]));
                    memset(ref[i], 0, sizeof(float) * (size_t)(M * ld[i]));
                    dg_weight_matmul(&w[i], M, x, K, ref[i], ld[i]);
                }
                dg_weight_matmul_multi(ws, 3, M, x, K, ys, ld);
                for (int i = 0; i < 3; i++) {
                    cr_assert(memcmp(ys[i], ref[i], sizeof(float) * (size_t)(M * ld[i])) == 0,
                              "group %d weight %d (%s) M=%lld threads %d: multi != separate", gi,
                              i, dg_dtype_name(groups[gi][i]), (long long)M, threads);
                    free(ys[i]), free(ref[i]);
                }
            }
        deg_set_num_threads(0);
        free(x);
        for (int i = 0; i < 3; i++) free(data[i]);
    }
}
