/* batch.c - the scratch of one layer pass (dg_batch, layer.h), sized and laid out in
 * one place for the inference forward (forward.c) and the training forward
 * (lib/grad/train.c), so a layer that needs more scratch changes one table. */
#include "model/arch.h"
#include "model/layer.h"

enum { N_PARTS = 10 };

/* Floats of each part for M tokens: xn, q, k, v, att, gate, up, tmp, scores, rbuf.
 * A pass that saves activations (training) has q, k, v and up in its saved set. */
static void part_sizes(const deg_model *m, size_t M, int n_threads, int saves,
                       size_t sz[N_PARTS])
{
    const dg_hparams *hp = &m->hp;
    size_t E = (size_t)hp->n_embd, F = (size_t)hp->n_ff;
    size_t QD = m->max_qd, KD = m->max_kd; /* the widest layer's (per-layer geometry) */
    size_t i = 0;
    sz[i++] = M * E;                                        /* xn */
    sz[i++] = saves ? 0 : M * QD;                           /* q */
    sz[i++] = saves ? 0 : M * KD;                           /* k */
    sz[i++] = saves ? 0 : M * KD;                           /* v */
    sz[i++] = M * QD;                                       /* att */
    sz[i++] = M * F;                                        /* gate */
    sz[i++] = saves ? 0 : M * F;                            /* up */
    sz[i++] = M * E;                                        /* tmp */
    sz[i++] = (size_t)n_threads * dg_attention_scratch(m);  /* scores */
    sz[i++] = M * m->scratch_per_token;                     /* rbuf */
}

/* Parts start at multiples of 16 floats (64 bytes from a 64-byte aligned block). */
static size_t rounded(size_t n) { return (n + 15) & ~(size_t)15; }

size_t dg_batch_scratch_floats(const deg_model *m, size_t M, int n_threads, int saves)
{
    size_t sz[N_PARTS], total = 0;
    part_sizes(m, M, n_threads, saves, sz);
    for (size_t i = 0; i < N_PARTS; i++) total += rounded(sz[i]);
    return total;
}

void dg_batch_bind_scratch(dg_batch *b, const deg_model *m, size_t M, int n_threads,
                           int saves, float *block)
{
    size_t sz[N_PARTS];
    part_sizes(m, M, n_threads, saves, sz);
    float **dst[N_PARTS] = {&b->xn, &b->q,   &b->k,   &b->v,      &b->att,
                            &b->gate, &b->up, &b->tmp, &b->scores, &b->rbuf};
    for (size_t i = 0; i < N_PARTS; i++) {
        *dst[i] = sz[i] ? block : NULL;
        block += rounded(sz[i]);
    }
    b->n_threads = n_threads;
}
