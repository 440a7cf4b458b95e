/* sgemm throughput: C[M,N] = A[M,K] . B[N,K]^T through dg_sgemm_nt (the
 * batch-invariant, row-chunked product the runtime uses) and through one
 * plain bli_sgemm call (the reference BLIS figure).
 *
 *   ./build/bench/bench_sgemm [M N K [threads [reps]]]     (default 512 512 512)
 *   BLIS_ARCH_TYPE=25 ./build/bench/bench_sgemm             (generic kernels)
 *
 * Prints one JSON line: shape, threads, kernel set and how it was chosen,
 * best-of-reps GFLOP/s for both. */
#include <blis.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "deg.h"
#include "tensor/blas.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    long M = argc > 3 ? atol(argv[1]) : 512, N = argc > 3 ? atol(argv[2]) : 512;
    long K = argc > 3 ? atol(argv[3]) : 512;
    int threads = argc > 4 ? atoi(argv[4]) : 0;
    int reps = argc > 5 ? atoi(argv[5]) : 10;
    if (M <= 0 || N <= 0 || K <= 0 || reps <= 0) {
        fprintf(stderr, "usage: %s [M N K [threads [reps]]]\n", argv[0]);
        return 2;
    }
    deg_set_num_threads(threads);
    float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(N * K));
    float *C = malloc(sizeof(float) * (size_t)(M * N));
    if (!A || !B || !C) return 1;
    for (long i = 0; i < M * K; i++) A[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (long i = 0; i < N * K; i++) B[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    double flop = 2.0 * (double)M * (double)N * (double)K, best_dg = 1e30, best_ref = 1e30;
    float one = 1.0f, zero = 0.0f;
    for (int r = 0; r <= reps; r++) { /* r == 0 warms up */
        double t = now();
        dg_sgemm_nt(M, N, K, A, K, B, K, C, N, 0.0f);
        t = now() - t;
        if (r && t < best_dg) best_dg = t;
        t = now();
        bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, M, N, K, &one, A, K, 1, B, K, 1, &zero, C, N, 1);
        t = now() - t;
        if (r && t < best_ref) best_ref = t;
    }
    printf("{\"bench\":\"sgemm_nt\",\"M\":%ld,\"N\":%ld,\"K\":%ld,\"threads\":%d,\"blas_arch\":\"%s\","
           "\"blas_arch_source\":\"%s\",\"row_chunk\":%lld,\"dg_sgemm_gflops\":%.1f,"
           "\"bli_sgemm_gflops\":%.1f}\n",
           M, N, K, dg_num_threads(), dg_blas_arch(), dg_blas_arch_source(),
           (long long)(dg_blas_row_chunk() == INT64_MAX ? -1 : dg_blas_row_chunk()), flop / best_dg / 1e9,
           flop / best_ref / 1e9);
    free(A);
    free(B);
    free(C);
    return 0;
}
