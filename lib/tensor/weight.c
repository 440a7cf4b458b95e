/* Products with typed weight matrices (see weight.h): dispatch by dtype,
 * activation-row quantization and the threading over weight rows. */
#include "tensor/weight.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "tensor/blas.h"
#include "tensor/fdot.h"
#include "tensor/qdot.h"

#define ROW_CHUNK 64   /* x rows quantized per pass (8-bit activations) */
#define N_TILE 16      /* weight rows per task */
#define BWD_TILE 64    /* weight rows dequantized per backward product */

int dg_weight_supported(dg_dtype t, int64_t cols)
{
    if (t == DG_F32) return 1;
    if (t != DG_F16 && t != DG_BF16 && t != DG_Q5_0 && t != DG_Q5_1 && !dg_dtype_is_quantized(t))
        return 0;
    return cols > 0 && cols <= DG_WEIGHT_MAX_COLS && cols % dg_dtype_block_elems(t) == 0;
}

size_t dg_weight_bytes(const dg_weight *w) { return (size_t)w->rows * w->row_bytes; }

void dg_weight_get_row(const dg_weight *w, int64_t r, float *out)
{
    /* The dtype and length were checked at load (dg_weight_supported). */
    (void)dg_dequantize(w->dtype, dg_weight_row_data(w, r), out, w->cols);
}

/* y rows [0, M) for weight rows [n0, n1). xr: the 8-bit x rows (qdot.h;
 * with scratch and M > 1 each weight row is unpacked once for all M rows,
 * dg_qdot_rows) or NULL: f32 x rows (fdot.h; scratch: dg_fdot_scratch(K, M)
 * floats). Without scratch (out of memory) the pair-at-a-time reference of
 * the same numbers. */
static void dot_tile(const dg_weight *w, int64_t M, const dg_q8_row *xr, const float *x,
                     int64_t ldx, float *y, int64_t ldy, int64_t n0, int64_t n1, void *scratch)
{
    if (xr && scratch) {
        for (int64_t n = n0; n < n1; n += DG_QDOT_ROWS_MAX) {
            int nr = n1 - n < DG_QDOT_ROWS_MAX ? (int)(n1 - n) : DG_QDOT_ROWS_MAX;
            const uint8_t *rows[DG_QDOT_ROWS_MAX];
            for (int r = 0; r < nr; r++) rows[r] = dg_weight_row_data(w, n + r);
            dg_qdot_rows(w->dtype, rows, nr, xr, M, y + n, ldy, scratch);
        }
        return;
    }
    if (!xr && scratch) {
        dg_fdot_tile(w, n0, n1, M, x, ldx, y, ldy, scratch);
        return;
    }
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = n0; n < n1; n++) {
            const uint8_t *wr = dg_weight_row_data(w, n);
            y[m * ldy + n] = xr ? dg_qdot(w->dtype, wr, &xr[m])
                                : dg_fdot_scalar(w->dtype, wr, x + m * ldx, w->cols);
        }
}

/* M rows whose quantized x rows are in q/d/s (NULL: f32 activations), through
 * the nw weights ws (same cols), outputs ys[i] (row stride ldys[i]): the
 * weights' row tiles share one parallel loop. */
static void matmul_rows(const dg_weight *const *ws, int nw, int64_t M, const float *x,
                        int64_t ldx, float *const *ys, const int64_t *ldys, int8_t *q, float *d,
                        int32_t *s)
{
    int64_t K = ws[0]->cols, nb = K / DG_QK, n8 = dg_q8_groups(nb);
    dg_q8_row xr[ROW_CHUNK];
    int nt = dg_num_threads();
    int quant = q != NULL;
    int64_t n_tiles = 0, N = 0;
    for (int i = 0; i < nw; i++) {
        n_tiles += (ws[i]->rows + N_TILE - 1) / N_TILE;
        N += ws[i]->rows;
    }
    int par = nt > 1 && M * N * K >= (1 << 16);
    /* Rows sharing weight rows (dg_qdot_rows): the x rows' interleaved
     * copies, then one unpacked-row scratch per thread (on failure the
     * row-at-a-time kernel: the same numbers). */
    size_t xb = quant ? (size_t)(M * n8) * (32 + 2 * sizeof(int32_t)) : 0;
    size_t sb = quant ? dg_qdot_rows_scratch(nb) : sizeof(float) * dg_fdot_scratch(K, M);
    uint8_t *buf = !quant || M > 1 ? malloc(xb + sb * (size_t)(par ? nt : 1)) : NULL;
    for (int64_t m = 0; quant && m < M; m++)
        xr[m] = (dg_q8_row){q + m * K, d + m * nb, s + m * nb, nb,
                            buf ? (int8_t *)buf + m * n8 * 32 : NULL,
                            buf ? (int32_t *)(buf + M * n8 * 32) + m * 2 * n8 : NULL};
#pragma omp parallel for schedule(static) num_threads(nt) if (quant && M > 4 && nt > 1)
    for (int64_t m = 0; m < (quant ? M : 0); m++) {
        dg_q8_quantize(x + m * ldx, &xr[m]);
        if (buf) dg_q8_interleave(&xr[m]);
    }
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
    for (int64_t t = 0; t < n_tiles; t++) {
        int i = 0;
        int64_t tt = t, wt;
        while (tt >= (wt = (ws[i]->rows + N_TILE - 1) / N_TILE)) tt -= wt, i++;
        int64_t n0 = tt * N_TILE, n1 = n0 + N_TILE < ws[i]->rows ? n0 + N_TILE : ws[i]->rows;
        void *sc = buf ? buf + xb + sb * (size_t)(par ? omp_get_thread_num() : 0) : NULL;
        dot_tile(ws[i], M, quant ? xr : NULL, x, ldx, ys[i], ldys[i], n0, n1, sc);
    }
    free(buf);
}

void dg_weight_matmul_multi(const dg_weight *const *ws, int nw, int64_t M, const float *x,
                            int64_t ldx, float *const *ys, const int64_t *ldys)
{
    if (M <= 0 || nw <= 0) return;
    /* All with 8-bit activations (one quantized copy of x serves them all) or
     * all with f32 activations (F16/BF16, or quantized with f32_act): one
     * pass; otherwise (F32 among them, or a mix) each alone. */
    int allq = 1, allh = 1;
    for (int i = 0; i < nw; i++) {
        int q8 = dg_weight_q8_act(ws[i]);
        allq &= q8;
        allh &= !q8 && ws[i]->dtype != DG_F32;
    }
    if ((!allq && !allh) || nw > DG_WEIGHT_MAX_MULTI) {
        for (int i = 0; i < nw; i++) dg_weight_matmul(ws[i], M, x, ldx, ys[i], ldys[i]);
        return;
    }
    if (allh) {
        /* f32 x rows need no per-row buffers: all M rows in one pass, so each
         * weight row is dequantized once per call (dg_fdot_tile). */
        matmul_rows(ws, nw, M, x, ldx, ys, ldys, NULL, NULL, NULL);
        return;
    }
    int64_t K = ws[0]->cols, nb = K / DG_QK;
    int64_t cap = M < ROW_CHUNK ? M : ROW_CHUNK;
    int8_t *q = malloc((size_t)(cap * K));
    float *d = malloc(sizeof(float) * (size_t)(cap * nb));
    int32_t *s = malloc(sizeof(int32_t) * (size_t)(cap * nb));
    float *yo[DG_WEIGHT_MAX_MULTI];
    if (!q || !d || !s) {
        /* Out of memory: one row at a time on the stack (same numbers). */
        free(q), free(d), free(s);
        int8_t q1[DG_WEIGHT_MAX_COLS];
        float d1[DG_WEIGHT_MAX_COLS / DG_QK];
        int32_t s1[DG_WEIGHT_MAX_COLS / DG_QK];
        for (int64_t m = 0; m < M; m++) {
            for (int i = 0; i < nw; i++) yo[i] = ys[i] + m * ldys[i];
            matmul_rows(ws, nw, 1, x + m * ldx, ldx, yo, ldys, q1, d1, s1);
        }
        return;
    }
    for (int64_t m0 = 0; m0 < M; m0 += cap) {
        int64_t mc = M - m0 < cap ? M - m0 : cap;
        for (int i = 0; i < nw; i++) yo[i] = ys[i] + m0 * ldys[i];
        matmul_rows(ws, nw, mc, x + m0 * ldx, ldx, yo, ldys, q, d, s);
    }
    free(q), free(d), free(s);
}

void dg_weight_matmul(const dg_weight *w, int64_t M, const float *x, int64_t ldx, float *y,
                      int64_t ldy)
{
    if (M <= 0) return;
    if (w->dtype == DG_F32) {
        dg_sgemm_nt(M, w->rows, w->cols, x, ldx, w->data, w->cols, y, ldy, 0.0f);
        return;
    }
    dg_weight_matmul_multi(&w, 1, M, x, ldx, &y, &ldy);
}

deg_status dg_weight_backward_x(const dg_weight *w, int64_t M, const float *dy, int64_t lddy,
                                float *dx, int64_t lddx, int accumulate)
{
    if (M <= 0) return DEG_OK;
    int64_t N = w->rows, K = w->cols;
    if (w->dtype == DG_F32) {
        dg_sgemm_nn(M, K, N, dy, lddy, w->data, K, dx, lddx, accumulate ? 1.0f : 0.0f);
        return DEG_OK;
    }
    float *tile = malloc(sizeof(float) * (size_t)(BWD_TILE * K));
    if (!tile)
        return dg_fail(DEG_ERR_NOMEM, "backward: cannot allocate a %d x %lld weight tile",
                       BWD_TILE, (long long)K);
    for (int64_t n0 = 0; n0 < N; n0 += BWD_TILE) {
        int64_t nn = N - n0 < BWD_TILE ? N - n0 : BWD_TILE;
        for (int64_t r = 0; r < nn; r++) dg_weight_get_row(w, n0 + r, tile + r * K);
        dg_sgemm_nn(M, K, nn, dy + n0, lddy, tile, K, dx, lddx,
                    (n0 == 0 && !accumulate) ? 0.0f : 1.0f);
    }
    free(tile);
    return DEG_OK;
}
