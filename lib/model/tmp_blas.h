/* TEMPORARY until core's lib/tensor/blas.h lands: C[M,N] = A[M,K] . B[N,K]^T. */
#ifndef DG_MODEL_TMP_BLAS_H
#define DG_MODEL_TMP_BLAS_H
#include <stdint.h>
void dg_sgemm_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                 int64_t ldb, float *C, int64_t ldc);
#endif
