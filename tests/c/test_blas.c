/* BLIS set-up and products: kernel-set selection, thread count, runtime
 * info, correctness against a double-precision reference, and bitwise batch
 * invariance of rows (the runtime's fork batching relies on it). Criterion
 * runs each test in its own process, so each sees a fresh BLIS. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "deg.h"
#include "tensor/blas.h"

static void fill(float *x, size_t n, unsigned seed)
{
    uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5);
    }
}

Test(blas, auto_arch_is_not_generic_with_avx2)
{
    unsetenv("BLIS_ARCH_TYPE");
    const char *arch = deg_blas_arch();
    cr_log_info("BLIS kernel set: %s (%s), row chunk %lld", arch, dg_blas_arch_source(),
                (long long)dg_blas_row_chunk());
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        cr_skip_test("CPU without AVX2/FMA");
    cr_assert_str_neq(arch, "generic");
    cr_assert_str_eq(dg_blas_arch_source(), "auto");
    /* the chosen id was exported for BLIS */
    cr_assert_not_null(getenv("BLIS_ARCH_TYPE"));
    if (__builtin_cpu_is("amd") && __builtin_cpu_supports("avx2")) {
        unsigned eax = 0, ebx, ecx, edx;
        __get_cpuid(1, &eax, &ebx, &ecx, &edx);
        unsigned fam = ((eax >> 8) & 0xF) + (((eax >> 8) & 0xF) == 0xF ? (eax >> 20) & 0xFF : 0);
        if (fam >= 0x19) cr_assert_str_eq(arch, "zen3");
    }
#endif
}

Test(blas, user_choice_by_name_is_kept)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        cr_skip_test("CPU without AVX2/FMA");
    /* BLIS 0.9 would read "haswell" as id 0 (skx); libdeg maps the name. */
    setenv("BLIS_ARCH_TYPE", "haswell", 1);
    cr_assert_str_eq(deg_blas_arch(), "haswell");
    cr_assert_str_eq(dg_blas_arch_source(), "env");
#else
    cr_skip_test("x86-64 only");
#endif
}

Test(blas, user_choice_by_id_is_kept)
{
    setenv("BLIS_ARCH_TYPE", "25", 1); /* 25 = generic in BLIS 0.9 */
    cr_assert_str_eq(deg_blas_arch(), "generic");
    cr_assert_str_eq(dg_blas_arch_source(), "env");
    /* products work on every kernel set (no row chunking here) */
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 1, 0, 1, 0}, c[4];
    dg_sgemm_nt(2, 2, 3, a, 3, b, 3, c, 2, 0.0f);
    cr_assert(c[0] == 4 && c[1] == 2 && c[2] == 10 && c[3] == 5, "%g %g %g %g", c[0], c[1], c[2], c[3]);
}

Test(blas, runtime_info_and_threads)
{
    const char *info = deg_runtime_info();
    json_error_t err;
    json_t *j = json_loads(info, 0, &err);
    cr_assert_not_null(j, "not JSON: %s (%s)", info, err.text);
    cr_assert_str_eq(json_string_value(json_object_get(j, "version")), deg_version());
    cr_assert_str_eq(json_string_value(json_object_get(j, "blas_arch")), deg_blas_arch());
    const char *src = json_string_value(json_object_get(j, "blas_arch_source"));
    cr_assert(src && (!strcmp(src, "auto") || !strcmp(src, "env") || !strcmp(src, "blis")));
    cr_assert_eq(json_integer_value(json_object_get(j, "threads")), dg_num_threads());
    json_decref(j);
    int def = dg_num_threads();
    cr_assert(def >= 1);
    cr_assert_eq(deg_set_num_threads(1), def);
    cr_assert_eq(dg_num_threads(), 1);
    cr_assert(strstr(deg_runtime_info(), "\"threads\":1"));
    cr_assert_eq(deg_set_num_threads(0), 1);
    cr_assert_eq(dg_num_threads(), def);
}

/* C = A . B^T against a double reference. */
Test(blas, sgemm_nt_and_nn_correct)
{
    const int M = 37, N = 53, K = 71;
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * N * K);
    float *C = malloc(sizeof(float) * M * N), *Bt = malloc(sizeof(float) * K * N);
    fill(A, (size_t)M * K, 1);
    fill(B, (size_t)N * K, 2);
    for (int i = 0; i < M * N; i++) C[i] = NAN; /* beta = 0 must not read C */
    dg_sgemm_nt(M, N, K, A, K, B, K, C, N, 0.0f);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double r = 0;
            for (int k = 0; k < K; k++) r += (double)A[i * K + k] * B[j * K + k];
            cr_assert(fabs(C[i * N + j] - r) <= 1e-5, "C[%d,%d] = %g, want %g", i, j, C[i * N + j], r);
        }
    /* beta = 1 accumulates; NN with B transposed gives the same numbers */
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) Bt[k * N + j] = B[j * K + k];
    float *D = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * N; i++) D[i] = 1.0f;
    dg_sgemm_nn(M, N, K, A, K, Bt, N, D, N, 1.0f);
    for (int i = 0; i < M * N; i++) cr_assert(fabsf(D[i] - (C[i] + 1.0f)) <= 1e-5f);
    free(A), free(B), free(C), free(Bt), free(D);
}

/* Each row of C must be bitwise the same whatever M is: compare every M
 * against the rows computed one at a time. */
static void check_invariance(int N, int K, int threads)
{
    deg_set_num_threads(threads);
    const int Ms[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 33, 100, 255, 511, 512, 700};
    const int Mmax = 700;
    float *A = malloc(sizeof(float) * Mmax * K), *B = malloc(sizeof(float) * N * K);
    float *ref = malloc(sizeof(float) * Mmax * N), *C = malloc(sizeof(float) * Mmax * N);
    fill(A, (size_t)Mmax * K, 3);
    fill(B, (size_t)N * K, 4);
    for (int i = 0; i < Mmax; i++) dg_sgemm_nt(1, N, K, A + (size_t)i * K, K, B, K, ref + (size_t)i * N, N, 0.0f);
    for (size_t t = 0; t < sizeof Ms / sizeof Ms[0]; t++) {
        int M = Ms[t];
        dg_sgemm_nt(M, N, K, A, K, B, K, C, N, 0.0f);
        for (int i = 0; i < M; i++)
            cr_assert_eq(memcmp(C + (size_t)i * N, ref + (size_t)i * N, sizeof(float) * N), 0,
                         "%s, N=%d K=%d threads=%d: row %d differs in a batch of M=%d", deg_blas_arch(), N,
                         K, threads, i, M);
    }
    free(A), free(B), free(ref), free(C);
}

Test(blas, rows_bitwise_invariant_in_M_1_thread)
{
    check_invariance(576, 576, 1);
    check_invariance(192, 576, 1);
    check_invariance(576, 1536, 1);
    check_invariance(64, 64, 1);
}

Test(blas, rows_bitwise_invariant_in_M_2_threads)
{
    check_invariance(1536, 576, 2);
    check_invariance(576, 576, 2);
}

Test(blas, rows_invariant_across_thread_counts)
{
    const int M = 16, N = 1536, K = 576;
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * N * K);
    float *C1 = malloc(sizeof(float) * M * N), *C2 = malloc(sizeof(float) * M * N);
    fill(A, (size_t)M * K, 5);
    fill(B, (size_t)N * K, 6);
    deg_set_num_threads(1);
    dg_sgemm_nt(M, N, K, A, K, B, K, C1, N, 0.0f);
    deg_set_num_threads(2);
    dg_sgemm_nt(M, N, K, A, K, B, K, C2, N, 0.0f);
    cr_assert_eq(memcmp(C1, C2, sizeof(float) * M * N), 0);
    free(A), free(B), free(C1), free(C2);
}
