/* The standard pre-norm decoder layer (llama, qwen3), forward: one code path
 * for inference (forks, prefill) and training (saves activations when the
 * batch asks). Its backward is lib/model/layer_std_bwd.c. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "model/arch.h"
#include "model/layer.h"
#include "model/lora_internal.h"
#include "model/ops.h"
#include "tensor/blas.h"

/* y[M, ldy] = x[M, ldx] . W^T (typed weight, tensor/weight.h). */
static void mm_nt(size_t M, const float *x, size_t ldx, const dg_weight *w, float *y, size_t ldy)
{
    dg_weight_matmul(w, (int64_t)M, x, (int64_t)ldx, y, (int64_t)ldy);
}

void dg_rmsnorm_rows(float *out, const float *x, const float *w, size_t n, size_t dim,
                     float eps)
{
#pragma omp parallel for schedule(static) if (n > 16) num_threads(dg_num_threads())
    for (size_t i = 0; i < n; i++) dg_rmsnorm(out + i * dim, x + i * dim, w, 1, dim, eps);
}

void dg_segs_rec_reset(const dg_batch *b, int il, const float *rec0, size_t n)
{
    for (size_t si = 0; si < b->n_segs; si++) {
        float *r = b->segs[si].rec[il];
        if (rec0) memcpy(r, rec0, sizeof(float) * n);
        else memset(r, 0, sizeof(float) * n);
    }
}

void dg_lora_add_segs(const dg_batch *b, int il, int t, const float *x, size_t ldx, float *y,
                      size_t ldy)
{
    size_t n_ad = 0;
    for (size_t si = 0; si < b->n_segs; si++) n_ad += b->segs[si].adapter >= 0;
    if (!n_ad) return;
#pragma omp parallel for schedule(dynamic, 1) if (b->n_tokens > 8) num_threads(dg_num_threads())
    for (size_t si = 0; si < b->n_segs; si++) {
        const dg_seg *s = &b->segs[si];
        const float *A = s->adapter >= 0 ? dg_lora_A(s->lora, s->adapter, il, t) : NULL;
        if (!A) continue;
        const deg_lora *l = s->lora;
        size_t in = dg_lora_in(l, il, t);
        dg_lora_rows(y + s->t0 * ldy, ldy, x + s->t0 * ldx, ldx, s->n, A,
                     A + (size_t)l->p.rank * in, l->p.rank, in, dg_lora_out(l, il, t), l->scale);
    }
}

/* Attention tasks: per segment, per KV head, per chunk of at most
 * DG_ATTN_MAX_GROUP of the query heads sharing it, per block of
 * DG_ATTN_ROWS query rows (dg_attend_group_win, ops.h: each K/V tile read
 * once per task, one pass with the online softmax; a (row, head)'s bits do
 * not depend on the task split). The geometry is the layer's (dg_layer:
 * n_head_kv, head_dim, window, attn_scale, kv_src). */
typedef struct attn_tasks {
    int chunk_heads, n_chunks; /* query heads per chunk, chunks per KV head */
    size_t per_block;          /* tasks per row block: n_head_kv * n_chunks */
} attn_tasks;

static attn_tasks attn_split(int n_head, int n_head_kv)
{
    int G = n_head / n_head_kv;
    attn_tasks at;
    at.n_chunks = (G + DG_ATTN_MAX_GROUP - 1) / DG_ATTN_MAX_GROUP;
    at.chunk_heads = (G + at.n_chunks - 1) / at.n_chunks;
    at.per_block = (size_t)n_head_kv * (size_t)at.n_chunks;
    return at;
}

static void attend_task(const dg_seg *s, const dg_layer *L, int n_head, const float *q,
                        float *out, float *stats, const attn_tasks *at, size_t t, float *scratch)
{
    int n_head_kv = L->n_head_kv, D = L->head_dim, G = n_head / n_head_kv, il = L->kv_src;
    size_t blk = t / at->per_block, rest = t % at->per_block;
    int kvh = (int)(rest / (size_t)at->n_chunks), c = (int)(rest % (size_t)at->n_chunks);
    int h0 = kvh * G + c * at->chunk_heads;
    int gh = G - c * at->chunk_heads < at->chunk_heads ? G - c * at->chunk_heads : at->chunk_heads;
    size_t i0 = blk * DG_ATTN_ROWS, nr = s->n - i0 < DG_ATTN_ROWS ? s->n - i0 : DG_ATTN_ROWS;
    size_t g = (size_t)kvh * (size_t)D;
    size_t kvrow = L->kv_row, qrow = (size_t)n_head * D;
    size_t off = (s->t0 + i0) * qrow + (size_t)h0 * D;
    const float *kp = s->pk ? s->pk[il] : NULL, *vp = s->pv ? s->pv[il] : NULL;
    const float *ko = s->ok[il] + s->own_base * kvrow, *vo = s->ov[il] + s->own_base * kvrow;
    float scale = L->attn_scale > 0.0f ? L->attn_scale : 1.0f / sqrtf((float)D);
    dg_attend_group_win(out + off, qrow,
                        stats ? stats + ((s->t0 + i0) * (size_t)n_head + (size_t)h0) * 2 : NULL,
                        2 * (size_t)n_head, q + off, qrow, kp ? kp + g : NULL,
                        vp ? vp + g : NULL, s->prefix_len, ko + g, vo + g, s->own_len0 + i0,
                        nr, kvrow, D, gh, scale, (size_t)L->window, scratch);
}

size_t dg_attention_scratch(const deg_model *m)
{
    const dg_hparams *hp = &m->hp;
    size_t best = dg_attend_group_scratch(hp->head_dim,
                                          attn_split(hp->n_head, hp->n_head_kv).chunk_heads);
    for (int il = 0; m->layers && il < hp->n_layer; il++) {
        const dg_layer *L = &m->layers[il];
        if (!L->head_dim) continue;
        size_t n = dg_attend_group_scratch(L->head_dim,
                                           attn_split(hp->n_head, L->n_head_kv).chunk_heads);
        if (n > best) best = n;
    }
    return best;
}

void dg_attention_segs(const deg_model *m, int il, dg_batch *b, const float *q, float *stats)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    size_t D = (size_t)L->head_dim;
    attn_tasks at = attn_split(hp->n_head, L->n_head_kv);
    size_t n_tasks = 0;
    for (size_t si = 0; si < b->n_segs; si++)
        n_tasks += (b->segs[si].n + DG_ATTN_ROWS - 1) / DG_ATTN_ROWS * at.per_block;
    /* Threads only when there is enough work to pay for a parallel region
     * (a decode step of one short row is cheaper serial); each task's
     * arithmetic is the same either way. */
    size_t work = 0;
    for (size_t si = 0; si < b->n_segs; si++)
        work += b->segs[si].n * (b->segs[si].prefix_len + b->segs[si].own_len0 + b->segs[si].n);
    work *= (size_t)hp->n_head * D;
    int par = work >= 65536 && b->n_threads > 1;
    size_t per_thread = dg_attention_scratch(m);
#pragma omp parallel for schedule(dynamic, 1) num_threads(b->n_threads) if (par)
    for (size_t t = 0; t < n_tasks; t++) {
        size_t si = 0, tt = t, nt;
        while (tt >= (nt = (b->segs[si].n + DG_ATTN_ROWS - 1) / DG_ATTN_ROWS * at.per_block))
            tt -= nt, si++;
        float *scratch = b->scores + (size_t)omp_get_thread_num() * per_thread;
        attend_task(&b->segs[si], L, hp->n_head, q, b->att, stats, &at, tt, scratch);
    }
}

void dg_kv_append_segs(const dg_batch *b, int il, const float *k, const float *v, size_t KD)
{
    for (size_t si = 0; si < b->n_segs; si++) {
        const dg_seg *s = &b->segs[si];
        float *ko = s->ok[il] + (s->own_base + s->own_len0) * KD;
        float *vo = s->ov[il] + (s->own_base + s->own_len0) * KD;
        if (ko != k + s->t0 * KD) memcpy(ko, k + s->t0 * KD, sizeof(float) * KD * s->n);
        if (vo != v + s->t0 * KD) memcpy(vo, v + s->t0 * KD, sizeof(float) * KD * s->n);
    }
}

void dg_forward_std_layer(const deg_model *m, int il, dg_batch *b, float *x)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    dg_layer_acts *sv = b->save;
    size_t M = b->n_tokens, E = (size_t)hp->n_embd, D = (size_t)hp->head_dim;
    size_t QD = (size_t)hp->n_head * D, KD = (size_t)hp->n_head_kv * D;
    float *q = sv ? sv->q : b->q, *k = sv ? sv->k : b->k, *v = sv ? sv->v : b->v;
    float *q_pre = sv && L->q_norm ? sv->q_pre : q, *k_pre = sv && L->k_norm ? sv->k_pre : k;
    if (sv) memcpy(sv->x_in, x, sizeof(float) * M * E);

    /* --- attention ------------------------------------------------------ */
    dg_rmsnorm_rows(b->xn, x, L->attn_norm, M, E, hp->rms_eps);
    {
        const dg_weight *ws[3] = {&L->wq, &L->wk, &L->wv};
        float *ys[3] = {q_pre, k_pre, v};
        const int64_t ld[3] = {(int64_t)QD, (int64_t)KD, (int64_t)KD};
        dg_weight_matmul_multi(ws, 3, (int64_t)M, b->xn, (int64_t)E, ys, ld);
    }
    dg_lora_add_segs(b, il, DG_LORA_Q, b->xn, E, q_pre, QD);
    dg_lora_add_segs(b, il, DG_LORA_K, b->xn, E, k_pre, KD);
    dg_lora_add_segs(b, il, DG_LORA_V, b->xn, E, v, KD);
    if (L->q_norm) dg_rmsnorm_rows(q, q_pre, L->q_norm, M * hp->n_head, D, hp->rms_eps);
    if (L->k_norm) dg_rmsnorm_rows(k, k_pre, L->k_norm, M * hp->n_head_kv, D, hp->rms_eps);
    dg_rope_apply_partial(q, b->rope_cos, b->rope_sin, M, hp->n_head, (int)D, hp->rope_dim);
    dg_rope_apply_partial(k, b->rope_cos, b->rope_sin, M, hp->n_head_kv, (int)D, hp->rope_dim);

    dg_kv_append_segs(b, il, k, v, KD);
    dg_attention_segs(m, il, b, q, sv ? sv->stats : NULL);
    if (sv && sv->att) memcpy(sv->att, b->att, sizeof(float) * M * QD);
    mm_nt(M, b->att, QD, &L->wo, b->tmp, E);
    dg_lora_add_segs(b, il, DG_LORA_O, b->att, QD, b->tmp, E);
    for (size_t i = 0; i < M * E; i++) x[i] += b->tmp[i];
    if (sv) memcpy(sv->x_mid, x, sizeof(float) * M * E);
    dg_forward_mlp(m, il, b, x);
}

void dg_forward_mlp(const deg_model *m, int il, dg_batch *b, float *x)
{
    const dg_hparams *hp = &m->hp;
    const dg_layer *L = &m->layers[il];
    dg_layer_acts *sv = b->save;
    size_t M = b->n_tokens, E = (size_t)hp->n_embd, F = (size_t)hp->n_ff;
    float *gate = sv ? sv->gate : b->gate, *up = sv ? sv->up : b->up;
    dg_rmsnorm_rows(b->xn, x, L->ffn_norm, M, E, hp->rms_eps);
    {
        const dg_weight *ws[2] = {&L->w_gate, &L->w_up};
        float *ys[2] = {gate, up};
        const int64_t ld[2] = {(int64_t)F, (int64_t)F};
        dg_weight_matmul_multi(ws, 2, (int64_t)M, b->xn, (int64_t)E, ys, ld);
    }
    dg_lora_add_segs(b, il, DG_LORA_GATE, b->xn, E, gate, F);
    dg_lora_add_segs(b, il, DG_LORA_UP, b->xn, E, up, F);
    /* SwiGLU into b->gate (in place in inference; training keeps gate). */
    if (gate != b->gate) memcpy(b->gate, gate, sizeof(float) * M * F);
#pragma omp parallel for schedule(static) if (M > 4) num_threads(dg_num_threads())
    for (size_t i = 0; i < M; i++) dg_swiglu(b->gate + i * F, up + i * F, F);
    mm_nt(M, b->gate, F, &L->w_down, b->tmp, E);
    dg_lora_add_segs(b, il, DG_LORA_DOWN, b->gate, F, b->tmp, E);
    for (size_t i = 0; i < M * E; i++) x[i] += b->tmp[i];
}
