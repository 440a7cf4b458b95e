/* f32 matrix products on BLIS, and the library's thread count.
 *
 * Kernel set. Debian's BLIS 0.9 picks its kernels from cpuid and falls back
 * to the slow "generic" set on CPUs it does not know; it also parses
 * BLIS_ARCH_TYPE with atoi, so a name like "zen3" silently means id 0
 * ("skx"). Before the first BLIS call (dg_blas_init, run once) libdeg:
 *   - if BLIS_ARCH_TYPE is set: keeps the user's choice (source "env"),
 *     translating a kernel-set name to BLIS's numeric id;
 *   - else picks from the CPU's features (source "auto"): AMD family >= 19h
 *     with AVX2+FMA -> zen3 (measured on Zen 4: as fast as skx for large
 *     products, 3-10x faster for the few-row products of decode), AMD 17h ->
 *     zen2, Intel with AVX-512 F/DQ/BW/VL -> skx, other AVX2+FMA -> haswell.
 *     A candidate counts only if blis.h lists it among the build's
 *     sub-configurations (BLIS_CONFIG_<NAME>; BLIS aborts the process on an
 *     id its build lacks); the first that does is exported as
 *     BLIS_ARCH_TYPE. Nothing is forked: a fork in a threaded host can
 *     deadlock on a lock another thread held;
 *   - if no candidate works, BLIS's own choice stays (source "blis").
 * The kernel set actually running is read back with bli_arch_query_id.
 *
 * Batch invariance. Row i of C depends only on row i of A and on B: BLIS
 * never splits K across threads, and each product stays on one code path.
 * BLIS switches between its "sup" (small/unpacked) kernels and the packed
 * kernels depending on M (threshold MT of the kernel set, 512 for zen3), and
 * the two sum in different orders; so M is processed in chunks below MT.
 * If MT is tiny the sup path is switched off instead. Tested in
 * tests/c/test_blas.c for M = 1..16 and larger M, 1 and 2 threads. */
#ifndef DG_TENSOR_BLAS_H
#define DG_TENSOR_BLAS_H

#include <stdint.h>

#include "deg.h"

/* Initialise BLIS once (thread-safe; every function below calls it). */
void dg_blas_init(void);

/* Static name of the kernel set in use ("zen3", "skx", "generic", ...). */
const char *dg_blas_arch(void);
/* How it was chosen: "env", "auto" or "blis" (see above). */
const char *dg_blas_arch_source(void);
/* Rows per BLIS call used to keep products batch-invariant (INT64_MAX if
 * no chunking is needed), and whether the sup path is in use. */
int64_t dg_blas_row_chunk(void);

/* Threads for compute kernels (BLIS and OpenMP regions). OpenMP regions in
 * libdeg must pass num_threads(dg_num_threads()): omp_set_num_threads only
 * affects the calling thread. Default: DEG_NUM_THREADS if set, else the
 * CPUs this process may run on. */
int dg_num_threads(void);
/* Number of CPUs available to this process (affinity mask). */
int dg_cpu_count(void);

/* C[M,N] = A[M,K] . B[N,K]^T + beta * C   (B row-major [N,K], e.g. a
 * Linear weight [out, in]; lda, ldb, ldc are row strides in elements).
 * With beta == 0, C is not read (may hold NaN). */
void dg_sgemm_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                 int64_t ldb, float *C, int64_t ldc, float beta);

/* C[M,N] = A[M,K] . B[K,N] + beta * C   (B row-major [K,N], e.g. attention
 * probabilities times V rows). */
void dg_sgemm_nn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                 int64_t ldb, float *C, int64_t ldc, float beta);

#endif
