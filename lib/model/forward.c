/* Batched forward over rows (see state.h): splits rows into passes, stacks
 * each pass's tokens into one [M, n_embd] matrix (so every projection is one
 * GEMM; BLIS rows are batch-invariant), runs the architecture's layer
 * (lib/model/layer.h) and gathers hidden states and logits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/run.h"
#include "base/status.h"
#include "model/arch.h"
#include "model/layer.h"
#include "model/ops.h"
#include "model/state.h"
#include "tensor/blas.h"

void (*dg_forward_probe)(int il, const float *x, size_t M, size_t E);

deg_status dg_lm_head(const deg_model *m, const float *hidden, size_t n, float *logits)
{
    size_t E = (size_t)m->hp.n_embd, V = (size_t)m->hp.n_vocab;
    dg_weight_matmul(&m->lm_head, (int64_t)n, hidden, (int64_t)E, logits, (int64_t)V);
    float c = m->final_softcap;
    if (c > 0.0f) /* transformers Gemma4ForCausalLM: tanh(logits / c) * c */
        for (size_t i = 0; i < n * V; i++) logits[i] = tanhf(logits[i] / c) * c;
    return DEG_OK;
}

deg_status dg_lm_head_backward(const deg_model *m, const float *logits, float *dlogits, size_t n,
                               float *dhidden)
{
    size_t E = (size_t)m->hp.n_embd, V = (size_t)m->hp.n_vocab;
    float c = m->final_softcap;
    if (c > 0.0f) /* d(c tanh(z / c)) / dz = 1 - tanh^2 */
        for (size_t i = 0; i < n * V; i++) {
            float t = logits[i] / c;
            dlogits[i] *= 1.0f - t * t;
        }
    return dg_weight_backward_x(&m->lm_head, (int64_t)n, dlogits, (int64_t)V, dhidden,
                                (int64_t)E, 0);
}

/* Scratch of one dg_forward call, allocated once and released as a whole. */
typedef struct dg_arena {
    float *x, *hn, *rope_cos, *rope_sin, *logits, *lhid;
    int64_t *pos;
    int32_t *ids;          /* [cap_tokens] the pass's token ids (dg_arch.begin_pass) */
    dg_seg *segs;
    struct dg_batch b;
    float *block;          /* one allocation holding the float arrays */
    size_t cap_tokens;     /* tokens per pass the arena holds */
    size_t cap_logits;     /* rows per LM-head block */
} dg_arena;

/* Sized for passes of at most P tokens and LM-head blocks of at most LR rows: the
 * forward's own arrays, then the layer pass's scratch (dg_batch_bind_scratch). */
static deg_status arena_init(dg_arena *a, const deg_model *m, size_t P, size_t LR)
{
    const dg_hparams *hp = &m->hp;
    size_t E = (size_t)hp->n_embd, D = (size_t)hp->head_dim;
    int nt = dg_num_threads();
    if (nt < 1) nt = 1;
    size_t sizes[] = {
        P * E,              /* x */
        P * E,              /* hn */
        P * (D / 2),        /* rope_cos */
        P * (D / 2),        /* rope_sin */
        LR * (size_t)hp->n_vocab, /* logits */
        LR * E,                   /* lhid */
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += (sizes[i] + 15) & ~(size_t)15;
    total += dg_batch_scratch_floats(m, P, nt, 0);
    memset(a, 0, sizeof *a);
    a->block = aligned_alloc(64, total * sizeof(float));
    a->pos = malloc(P * sizeof(int64_t));
    a->ids = malloc(P * sizeof(int32_t));
    a->segs = malloc(P * sizeof(dg_seg));
    a->cap_tokens = P;
    a->cap_logits = LR;
    if (!a->block || !a->pos || !a->ids || !a->segs) {
        free(a->block); free(a->pos); free(a->ids); free(a->segs);
        return dg_fail(DEG_ERR_NOMEM, "forward: cannot allocate %zu bytes of scratch",
                       total * sizeof(float));
    }
    float *p = a->block;
    float **dst[] = {&a->x, &a->hn, &a->rope_cos, &a->rope_sin, &a->logits, &a->lhid};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *dst[i] = p;
        p += (sizes[i] + 15) & ~(size_t)15;
    }
    dg_batch_bind_scratch(&a->b, m, P, nt, 0, p);
    a->b.rope_cos = a->rope_cos;
    a->b.rope_sin = a->rope_sin;
    a->b.segs = a->segs;
    return DEG_OK;
}

static void arena_free(dg_arena *a)
{
    free(a->block);
    free(a->pos);
    free(a->ids);
    free(a->segs);
}

/* Token t of the pass wants logits if its row asked for all logits, or it is
 * the row's last token and the row asked for the last logits. */
static float *logits_dst(const dg_seg *s, size_t i, size_t V)
{
    const dg_row *r = s->row;
    size_t ti = s->off + i;
    if (r->logits) return r->logits + ti * V;
    if (r->last_logits && ti == r->n - 1) return r->last_logits;
    return NULL;
}

/* LM head over the nl gathered rows, scattered to their destinations. */
static void flush_logits(const deg_model *m, dg_arena *a, float **dst, float **dst2, size_t nl)
{
    size_t V = (size_t)m->hp.n_vocab;
    dg_lm_head(m, a->lhid, nl, a->logits);
    for (size_t j = 0; j < nl; j++) {
        memcpy(dst[j], a->logits + j * V, sizeof(float) * V);
        if (dst2[j]) memcpy(dst2[j], a->logits + j * V, sizeof(float) * V);
    }
}

static deg_status run_pass(const deg_model *m, dg_arena *a, size_t n_segs)
{
    const dg_hparams *hp = &m->hp;
    size_t E = (size_t)hp->n_embd, V = (size_t)hp->n_vocab;
    dg_batch *b = &a->b;
    b->n_segs = n_segs;
    size_t M = 0;
    for (size_t si = 0; si < n_segs; si++) {
        dg_seg *s = &a->segs[si];
        const dg_row *r = s->row;
        s->t0 = M;
        s->pk = r->prefix ? (const float *const *)r->prefix->k : NULL;
        s->pv = r->prefix ? (const float *const *)r->prefix->v : NULL;
        s->prefix_len = r->prefix ? r->prefix->len : 0;
        s->ok = r->own->k;
        s->ov = r->own->v;
        s->own_base = 0;
        s->own_len0 = r->own->len;
        s->rec = r->own->rec;
        s->lora = r->lora;
        s->adapter = r->lora ? r->adapter : -1;
        DG_TRY(dg_state_reserve(s->row->own, s->own_len0 + s->n));
        for (size_t i = 0; i < s->n; i++) {
            int32_t id = s->row->ids[s->off + i];
            dg_weight_get_row(&m->tok_embd, id, a->x + (M + i) * E);
            a->ids[M + i] = id;
            a->pos[M + i] = (int64_t)(s->prefix_len + s->own_len0 + i);
        }
        M += s->n;
    }
    b->n_tokens = M;
    dg_rope_table(a->rope_cos, a->rope_sin, a->pos, M, hp->rope_dim, hp->rope_theta);
    if (m->arch->begin_pass) m->arch->begin_pass(m, b, a->x, a->ids, a->pos);
    if (dg_forward_probe) dg_forward_probe(-1, a->x, M, E);
    for (int il = 0; il < hp->n_layer; il++) {
        /* a call under work limits (base/run.h) stops between layers too: a
         * 256-token pass deep in a long context takes seconds. Nothing of the
         * stopped pass is kept (own->len grows only at the end). */
        deg_status st = il ? dg_run_poll() : DEG_OK;
        if (st != DEG_OK) return st;
        m->arch->forward_layer(m, il, b, a->x);
        if (dg_forward_probe) dg_forward_probe(il, a->x, M, E);
    }
    dg_rmsnorm_rows(a->hn, a->x, m->out_norm, M, E, hp->rms_eps);
    if (dg_forward_probe) dg_forward_probe(hp->n_layer, a->hn, M, E);

    /* Outputs: hidden states, then logits through the LM head in blocks of
     * DG_LOGIT_ROWS gathered rows. */
    size_t nl = 0;
    float *ldst[DG_LOGIT_ROWS], *ldst2[DG_LOGIT_ROWS];
    for (size_t si = 0; si < n_segs; si++) {
        dg_seg *s = &a->segs[si];
        const dg_row *r = s->row;
        if (r->hidden)
            memcpy(r->hidden + s->off * E, a->hn + s->t0 * E, sizeof(float) * E * s->n);
        if (r->last_hidden && s->off + s->n == r->n)
            memcpy(r->last_hidden, a->hn + (s->t0 + s->n - 1) * E, sizeof(float) * E);
        for (size_t i = 0; i < s->n; i++) {
            float *d = logits_dst(s, i, V);
            if (!d) continue;
            memcpy(a->lhid + nl * E, a->hn + (s->t0 + i) * E, sizeof(float) * E);
            ldst[nl] = d;
            /* Both all-token and last-token logits requested: copy twice. */
            ldst2[nl++] = (r->logits && r->last_logits && s->off + i == r->n - 1)
                              ? r->last_logits : NULL;
            if (nl == a->cap_logits) {
                flush_logits(m, a, ldst, ldst2, nl);
                nl = 0;
            }
        }
    }
    if (nl) flush_logits(m, a, ldst, ldst2, nl);
    for (size_t si = 0; si < n_segs; si++) a->segs[si].row->own->len += a->segs[si].n;
    return DEG_OK;
}

deg_status dg_forward(const deg_model *m, const dg_row *rows, size_t n_rows)
{
    size_t total = 0, n_logits = 0;
    for (size_t r = 0; r < n_rows; r++) {
        if (!rows[r].n) continue;
        total += rows[r].n;
        n_logits += rows[r].logits ? rows[r].n : (rows[r].last_logits ? 1 : 0);
    }
    if (total == 0) return DEG_OK;
    dg_arena a;
    DG_TRY(arena_init(&a, m, total < DG_PASS_TOKENS ? total : DG_PASS_TOKENS,
                      n_logits < DG_LOGIT_ROWS ? n_logits : DG_LOGIT_ROWS));
    deg_status st = DEG_OK;
    size_t r = 0, off = 0;
    while (st == DEG_OK) {
        size_t used = 0, n_segs = 0;
        while (r < n_rows && used < a.cap_tokens) {
            size_t left = rows[r].n - off;
            if (left == 0) { r++; off = 0; continue; }
            size_t take = left < a.cap_tokens - used ? left : a.cap_tokens - used;
            a.segs[n_segs++] = (dg_seg){.row = &rows[r], .off = off, .n = take};
            used += take;
            off += take;
            if (off == rows[r].n) { r++; off = 0; }
        }
        if (n_segs == 0) break;
        /* a call under work limits (base/run.h) stops between passes (and layers) */
        if ((st = dg_run_poll()) != DEG_OK) break;
        st = run_pass(m, &a, n_segs);
    }
    arena_free(&a);
    return st;
}
