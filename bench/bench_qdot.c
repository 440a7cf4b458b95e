/* Quantized-weight product speed per dtype: one activation row (decode,
 * M = 1) or a batch against a weight of SmolLM2-135M's MLP shapes, through
 * dg_weight_matmul (the dispatched kernel) and through the portable scalar
 * dot (dg_qdot_scalar / dg_fdot_scalar), single thread, best of reps
 * (the K-quants only on the 1536-wide shape: their blocks are 256 wide);
 * with M > 1 also against the one-row SIMD kernel called per (row, weight
 * row) pair (dg_qdot), which dg_weight_matmul's multi-row kernel
 * (dg_qdot_rows) replaces for batches.
 *
 *   ./build/bench/bench_qdot [M [reps]]            (default M = 1, reps 200;
 *                                                   M 1..1024: a prefill pass is 256
 *                                                   rows; the scalar and one-row
 *                                                   references only for M <= 64)
 *   ./build/bench/bench_qdot M reps rows            (fewer weight rows than the
 *                                                   model's: short calls, so best-of
 *                                                   finds unpreempted ones under load)
 *   DEG_QKERNEL=avx2 ./build/bench/bench_qdot       (cap the kernel set)
 *
 * Best-of-reps of a short call is a fair comparison of two kernels even on
 * a busy machine (a repetition that was not preempted), absolute figures
 * are not. Prints one JSON line per (dtype, shape): ns per weight row and
 * row-dot, weight GB/s, the kernel and the scalar speed-up, and ns per
 * row-dot of the same weights with f32 activations (fdot.h; F16: the same
 * figure). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deg.h"
#include "tensor/fdot.h"
#include "tensor/qdot.h"
#include "tensor/weight.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Random valid blocks: f16 scales of a sane size in every block. */
static uint8_t *make_weight(dg_dtype t, int64_t rows, int64_t cols, dg_weight *w)
{
    int ok;
    size_t rb = dg_dtype_row_bytes(t, cols, &ok), bb = dg_dtype_block_bytes(t);
    uint8_t *d = malloc(rb * (size_t)rows);
    if (!ok || !d) return NULL;
    uint32_t s = 12345;
    for (size_t i = 0; i < rb * (size_t)rows; i++) d[i] = (uint8_t)((s = s * 1103515245u + 12345u) >> 16);
    uint16_t h = dg_f32_to_f16(0.01f);
    int64_t nb = rows * cols / dg_dtype_block_elems(t);
    for (int64_t b = 0; b < nb && t != DG_F16; b++) {
        uint8_t *p = d + (size_t)b * bb;
        size_t at = t == DG_Q6_K ? 208 : 0;
        memcpy(p + at, &h, 2);
        if (t == DG_Q4_1 || t == DG_Q4_K) memcpy(p + 2, &h, 2);
    }
    *w = (dg_weight){.dtype = t, .rows = rows, .cols = cols, .data = d, .row_bytes = rb};
    return d;
}

int main(int argc, char **argv)
{
    int64_t M = argc > 1 ? atol(argv[1]) : 1;
    int reps = argc > 2 ? atoi(argv[2]) : 200;
    int64_t rows = argc > 3 ? atol(argv[3]) : 0; /* weight rows of both shapes (0: the model's) */
    if (M < 1 || M > 1024 || reps < 1 || rows < 0) {
        fprintf(stderr, "usage: %s [M (1..1024) [reps [rows]]]\n", argv[0]);
        return 2;
    }
    deg_set_num_threads(1);
    const dg_dtype types[] = {DG_Q4_0, DG_Q4_1, DG_Q8_0, DG_Q4_K, DG_Q6_K, DG_F16};
    const int64_t shapes[][2] = {{1536, 576}, {576, 1536}}; /* [rows, cols]: up, down */
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (int si = 0; si < 2; si++) {
            dg_dtype t = types[ti];
            int64_t N = rows ? rows : shapes[si][0], K = shapes[si][1], nb = K / 32;
            if (!dg_weight_supported(t, K)) continue; /* K-quants: 256-element blocks */
            dg_weight w;
            uint8_t *data = make_weight(t, N, K, &w);
            float *x = malloc(sizeof(float) * (size_t)(M * K)), *y = malloc(sizeof(float) * (size_t)(M * N));
            int8_t *q = malloc((size_t)K);
            float *d = malloc(sizeof(float) * (size_t)nb);
            int32_t *s = malloc(sizeof(int32_t) * (size_t)nb);
            if (!data || !x || !y || !q || !d || !s) return 1;
            for (int64_t i = 0; i < M * K; i++) x[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
            double best = INFINITY, best_ref = INFINITY, best_row = INFINITY, best_fa = INFINITY;
            volatile float sink = 0.0f;
            dg_q8_row r = {q, d, s, nb};
            for (int rep = 0; rep < reps; rep++) {
                double t0 = now();
                dg_weight_matmul(&w, M, x, K, y, N);
                double t1 = now();
                if (t1 - t0 < best) best = t1 - t0;
                sink += y[0];
                if (t != DG_F16) { /* the same weights with f32 activations (fdot.h) */
                    w.f32_act = 1;
                    t0 = now();
                    dg_weight_matmul(&w, M, x, K, y, N);
                    t1 = now();
                    w.f32_act = 0;
                    if (t1 - t0 < best_fa) best_fa = t1 - t0;
                }
                if (t != DG_F16 && M > 1 && M <= 64) { /* the one-row SIMD kernel per pair */
                    t0 = now();
                    for (int64_t m = 0; m < M; m++) {
                        dg_q8_quantize(x + m * K, &r);
                        for (int64_t n = 0; n < N; n++) sink += dg_qdot(t, dg_weight_row_data(&w, n), &r);
                    }
                    t1 = now();
                    if (t1 - t0 < best_row) best_row = t1 - t0;
                }
                /* the scalar reference: fewer reps, and only for M <= 64 (prefill-sized
                 * M takes seconds per rep) */
                if (rep >= reps / 10 + 1 || M > 64) continue;
                t0 = now();
                for (int64_t m = 0; m < M; m++) {
                    if (t != DG_F16) dg_q8_quantize(x + m * K, &r);
                    for (int64_t n = 0; n < N; n++)
                        sink += t != DG_F16 ? dg_qdot_scalar(t, dg_weight_row_data(&w, n), &r)
                                            : dg_fdot_scalar(t, dg_weight_row_data(&w, n), x + m * K, K);
                }
                t1 = now();
                if (t1 - t0 < best_ref) best_ref = t1 - t0;
            }
            char ref[32] = "null", spd[32] = "null";
            if (isfinite(best_ref)) {
                snprintf(ref, sizeof ref, "%.2f", 1e9 * best_ref / (double)(M * N));
                snprintf(spd, sizeof spd, "%.2f", best_ref / best);
            }
            printf("{\"bench\":\"qdot\",\"dtype\":\"%s\",\"kernel\":\"%s\",\"M\":%lld,\"rows\":%lld,"
                   "\"cols\":%lld,\"ns_per_row_dot\":%.2f,\"weight_gb_s\":%.2f,"
                   "\"scalar_ns_per_row_dot\":%s,\"speedup_vs_scalar\":%s,"
                   "\"speedup_vs_one_row_kernel\":%.2f,\"f32act_ns_per_row_dot\":%.2f}\n",
                   dg_dtype_name(t), dg_qdot_kernel(), (long long)M, (long long)N, (long long)K,
                   1e9 * best / (double)(M * N), (double)dg_weight_bytes(&w) * 1e-9 * (double)M / best,
                   ref, spd, isfinite(best_row) ? best_row / best : 1.0,
                   1e9 * (isfinite(best_fa) ? best_fa : best) / (double)(M * N));
            free(data), free(x), free(y), free(q), free(d), free(s);
        }
    return 0;
}
