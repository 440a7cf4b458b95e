/* TEMPORARY until core's lib/tensor/blas.h lands. */
#include <blis.h>
#include <omp.h>
#include "model/tmp_blas.h"
void dg_sgemm_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                 int64_t ldb, float *C, int64_t ldc)
{
    static int init;
    if (!init) { bli_thread_set_num_threads(omp_get_max_threads()); init = 1; }
    float one = 1.0f, zero = 0.0f;
    bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, M, N, K, &one, (float *)A, lda, 1, (float *)B,
              ldb, 1, &zero, C, ldc, 1);
}
