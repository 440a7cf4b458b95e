/* fill.h - the deg.fill runtime (deg contract §7, §8, §10, §12.1-§12.3, §12.6),
 * internal side. Public API: the "Fill runtime" section of include/deg.h.
 *
 * Pieces:
 *  - ckpt.c: the checkpoint (a directory: deg.json + heads.safetensors), the
 *    backbone reference (file name + SHA-256), random head initialisation.
 *  - heads.c: the fp32 heads of §12.3 and their decoding rules.
 *  - fill.c and fill_*.c: trunk + forks (§12.1), rounds of fork batches,
 *    arrays (§12.6), the generate phase (§7.3), response assembly
 *    (fill_internal.h lists the files).
 *
 * Head shapes (E = the backbone's n_embd, D = DG_HEAD_DIM), all fp32,
 * Linear layout [out, in]:
 *   choice.q, choice.k [D, E]; choice.u [E]          (pointer over option lines)
 *   score.q,  score.k  [D, E]; score.u  [E]          (pointer over level lines)
 *   noul.w [E]; noul.b [1]                           (logits [w.a + b, 0])
 *   extract.qs, .ks, .qe, .ke [D, E]; extract.null_w [E]; extract.null_b [1]
 *   count.w [DG_COUNT_MAX + 1, E]; count.b [DG_COUNT_MAX + 1]
 *   anchor.q, anchor.k [D, E]; anchor.u [E]; anchor.b [1] (starts at -6)
 *   anchor.bias [2 (start|end), 2 (inside), DG_ANCHOR_BUCKETS] (zero at start)
 */
#ifndef DG_DEG_FILL_H
#define DG_DEG_FILL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "deg.h"
#include "deg/countprior.h"
#include "deg/keyprior.h"
#include "deg/mentions.h"
#include "model/chat.h"
#include "lora.h"

#define DG_HEAD_DIM 256
#define DG_COUNT_MAX 64
/* Trained range of the count head when neither maxItems nor options.max_items
 * caps an index-addressed array (§4). */
#define DG_COUNT_DEFAULT_CAP 32
/* Buckets of the anchored-extract bias (§12.3): 14 edges -256 -64 -16 -4 0 1 2 4 ... 256
 * make 15 buckets (dg_anchor_bucket in anchor.h). */
#define DG_ANCHOR_BUCKETS 15
/* Plain-string spans: at most this many tokens long, this many candidates (§12.3). */
#define DG_SPAN_MAX_TOKENS 128
#define DG_SPAN_TOP 32
/* Generate: candidates tried per step (§12.3). */
#define DG_GEN_TOP 256
/* Checkpoint format version written to deg.json "format". */
#define DG_CKPT_FORMAT "deg-ckpt-v1"

/* Calibration temperature slots (§12.3). */
enum { DG_T_CHOICE = 0, DG_T_SCORE, DG_T_NOUL, DG_T_EXTRACT, DG_T_COUNT, DG_T_N };

typedef struct dg_heads {
    int E;
    const float *choice_q, *choice_k, *choice_u;
    const float *score_q, *score_k, *score_u;
    const float *noul_w, *noul_b;
    const float *ext_qs, *ext_ks, *ext_qe, *ext_ke, *ext_null_w, *ext_null_b;
    const float *count_w, *count_b;
    const float *anchor_q, *anchor_k, *anchor_u, *anchor_b, *anchor_bias;
} dg_heads;

struct deg_ckpt {
    deg_model *model;
    int own_model;
    dg_heads h;
    float *store;             /* every head tensor, one buffer */
    size_t n_store;
    float temp[DG_T_N];
    char *array_mode;         /* "index" or "anchor" */
    int64_t anchor_min_tokens;
    char *chat_layout;        /* deg.json "chat_layout": dg_chat_layout_lookup's names */
    dg_chat_layout layout;    /* its layout (dg_chat_layout_lookup: the one name mapping) */
    char *backbone_file, *backbone_sha256;
    char *backbone_path;      /* the resolved backbone (absolute when resolvable) */
    size_t fork_budget_bytes; /* fork batch memory budget */
    double null_margin;       /* options.null_margin when a request's is null (§9):
                               * params', else deg.json's, else 0 */
    dg_key_prior key_prior;   /* deg.json "key_prior" (keyprior.h); off when absent */
    /* deg.json "lm_prior": {"start": lambda} (finite, >= 0); has_lm_prior 0 when
     * absent/null. The extract start pointer gets lambda * the backbone's own
     * LM-head log-probability of each context token at the fork's ANSWER:
     * (fill_extract.c); a request's options.lm_prior overrides it. */
    int has_lm_prior;
    double lm_prior_start;
    /* deg.json "list_prior": {"bonus": b, "by_anchor": bool} (b finite, >= 0);
     * has_list_prior 0 when absent/null. A top-level array of plain strings named
     * like a key of the context (or, by_anchor, whose anchor head's best token is
     * in a list's item) takes that list as its anchors, and each item's span gets
     * +b at its list item (lists.h); options.list_prior overrides it. */
    int has_list_prior;
    double list_prior_bonus;
    int list_prior_by_anchor; /* list_prior.by_anchor (default false) */
    int span_single_line;     /* deg.json "span_single_line": plain spans within one line */
    int span_word_bounds;     /* deg.json "span_word_bounds": plain spans start and end at
                               * word boundaries (dg_utf8_is_word) */
    int span_single_sentence; /* deg.json "span_single_sentence": plain spans outside arrays
                               * hold no sentence end (sentences.h) */
    int span_distinct;        /* deg.json "span_distinct": no two extract leaves of one
                               * object keep the same span (fill_distinct.c) */
    dg_count_prior count_prior; /* deg.json "count_prior" (countprior.h); off when absent */
    dg_mention_prior mention_prior; /* deg.json "mention_prior" (mentions.h); off when absent */
    int item_null;            /* deg.json "item_null": an array item whose required leaf the
                               * null head rejects (by the null margin) is dropped, not
                               * filled with the best span (fill_extract.c) */
    int generate_stop_repeat; /* deg.json "generate_stop_repeat": an x-generate value ends
                               * before its first repeated line (repeats.h) */
    int span_whole_names;     /* deg.json "span_whole_names": a plain span of capitalised
                               * words takes the capitalised words next to it (names.h) */
    /* deg.json calibration.extract_confidence {scale, bias}: an extract leaf's
     * reported confidence is sigmoid(scale * lp + bias), lp = the chosen
     * outcome's log p_start + log p_end (Platt scaling of the log-confidence,
     * fit on development data); has_xconf 0 = exp(lp) as §12.3 writes it. */
    int has_xconf;
    double xconf_scale, xconf_bias;
    int debug_raw;            /* meta gets "raw": sha256 of the field's raw head outputs */
    int32_t stop_id, eos_id;  /* generate stops: <|im_end|> (chat layouts) and EOS; -1 = none */
    deg_lora *lora;           /* adapters of the fork rows (§12.7) or NULL (ckpt_lora.c) */
    int32_t lora_selector;    /* DEG_LORA_SELECT_* */
};
typedef struct deg_ckpt dg_ckpt;

/* SHA-256 hex of a backbone: the file for GGUF; for an HF directory, the
 * hash of "name\0sha256(file)\n" over config.json then the *.safetensors
 * files in name order. Errors: DEG_ERR_IO. */
deg_status dg_backbone_sha256(const char *path, char out[65]);

/* ---- adapters (ckpt_lora.c) --------------------------------------------- */

/* Read deg.json["lora"] (if any) and dir/adapters.safetensors into k->lora.
 * Errors: DEG_ERR_FORMAT (bad "lora" entry, missing tensor), DEG_ERR_MISMATCH
 * (shape), DEG_ERR_NUMERIC (NaN/Inf), DEG_ERR_IO, DEG_ERR_NOMEM. */
/* The adapters file of a checkpoint with LoRA (deg.json "lora"). */
#define DG_CKPT_ADAPTERS_FILE "adapters.safetensors"
deg_status dg_ckpt_lora_load(dg_ckpt *k, json_t *meta, const char *dir, const char *jpath);
/* With adapters: write dir/adapters.safetensors (atomically) and set
 * meta["lora"]; without: nothing. */
deg_status dg_ckpt_lora_save(const dg_ckpt *k, json_t *meta, const char *dir);

/* ---- heads (heads.c) ---------------------------------------------------- */

/* y[D] = W[D,E] x[E] (fixed-order fp32 dot; batch-invariant). */
void dg_head_proj(const float *W, int D, int E, const float *x, float *y);
/* r[E] = W[D,E]^T q[D] (fixed order: for each e, d ascending): the key
 * projection moved to the query side (extract and anchor heads). */
void dg_head_proj_t(const float *W, int D, int E, const float *q, float *r);
float dg_head_dot(const float *a, const float *b, int n);

/* Pointer head (choice/score): logits[n] over option hiddens opts[n, E]. */
void dg_head_pointer(const dg_heads *h, int score, const float *a, const float *opts, size_t n,
                     float *logits);
/* Extract pointer logits [nc + 1] (start w = 0 / end w = 1; null last) of
 * answer a [E] over ctx [nc, E], in fill_extract.c's order; r [E] scratch, q [D]
 * receives Q a (may be NULL). */
void dg_head_extract_logits(const dg_heads *h, int w, const float *a, const float *ctx,
                            size_t nc, float *r, float *q, float *logits);
/* Softmax of logits[n] / T into p[n] (double), also log-probs lp (may be NULL). */
void dg_softmax(const float *logits, size_t n, double T, double *p, double *lp);
/* Index of the first maximum. */
size_t dg_argmax_d(const double *p, size_t n);
/* jev v1 confidence (count * peak - 1) / (count - 1); 1 for count <= 1. */
double dg_confidence(double peak, size_t count);

/* ---- training trace (fill_trace.c; used by deg/features.c) --------------- */

/* dg_fill_trace runs one request's trunk and fork rounds exactly as deg_fill
 * does (same fork texts, same round batching), except that
 *  - array counts come from the hooks (teacher forcing: the gold item count,
 *    clamped to the count head's range [lo, hi]); the count forks still run;
 *  - with an anchors hook the trace runs in anchor mode (§12.6) whatever the
 *    checkpoint's array_mode and anchor_min_tokens: every array whose item
 *    subtree has an extract leaf is anchored, its anchor fork (and, unless
 *    options.array_decode is threshold, its count fork) runs, and its items
 *    are the hook's gold anchors (teacher forcing) instead of decoded ones;
 *  - a choice leaf's option lines may be put in another order (shuffle hook;
 *    §12.4 option-order shuffling);
 *  - forks the want hook declines are not run (their rounds still expand);
 *  - no decoding, no drops, no generate phase: every fork that ran is
 *    reported with the hidden rows the heads read. */
enum { DG_TRACE_LEAF = 0, DG_TRACE_COUNT = 1, DG_TRACE_ANCHOR = 2 };

typedef struct dg_trace_fork {
    int kind;                 /* DG_TRACE_LEAF | DG_TRACE_COUNT | DG_TRACE_ANCHOR */
    size_t index;             /* plan field (leaf) or plan array (count, anchor) */
    int mode;                 /* leaf: its dg_mode (plan.h); count, anchor: -1 */
    const char *pointer;      /* concrete pointer (the gold's item indices) */
    int anchored;             /* count: the count fork of an anchored array (lo, hi
                               * are then §12.6's count_peaks range) */
    int64_t anchor, rend;     /* leaf inside an anchored item: the innermost anchored
                               * item's anchor token and region end; else -1 */
    size_t r0, r1;            /* anchor: the instance's region [r0, r1) (context tokens) */
    const size_t *starts;     /* anchor: gold item anchor tokens, ascending [n_starts] */
    size_t n_starts;
    const float *hidden;      /* [n_rows, E]: option/level line ends, then ANSWER: last */
    size_t n_rows;
    const size_t *order;      /* choice leaf: plan outcome of each option line; NULL = plan order */
    int64_t lo, hi;           /* count: the head's class range */
    size_t n_tokens;          /* fork length in tokens */
    const int32_t *ids;       /* [n_tokens] the fork's own tokens as run_jobs feeds them */
    const size_t *marks;      /* [n_rows] the fork token of each hidden row */
    int32_t head_kind;        /* DEG_HEAD_* of the fork (choice/score/noul/extract from the
                               * leaf's mode, count, anchor_count, anchor): what
                               * deg_ckpt_lora_adapter maps to the fork's adapter */
} dg_trace_fork;

typedef struct dg_trace_hooks {
    void *ud;
    /* gold item count of the array instance at `pointer` (plan array `array`) */
    deg_status (*count)(void *ud, size_t array, const char *pointer, int64_t *n);
    /* run this fork? mode: the leaf's dg_mode, -1 for a count (NULL = all) */
    int (*want)(void *ud, int kind, size_t index, int mode);
    /* a choice leaf with n >= 2 options: return 1 and fill order[n] with a
     * permutation (line -> plan outcome), or 0 for plan order (NULL = never) */
    int (*shuffle)(void *ud, const char *pointer, size_t n, size_t *order);
    /* the trunk: context token hidden states [nc, E] and their code point
     * ranges [tok_cp0[t], tok_cp1[t]); the trunk's tokens trunk_ids[n_trunk]
     * (context token t is trunk token c0 + t) */
    deg_status (*trunk)(void *ud, const float *ctx_hidden, size_t nc, const size_t *tok_cp0,
                        const size_t *tok_cp1, const int32_t *trunk_ids, size_t n_trunk,
                        size_t c0);
    deg_status (*fork)(void *ud, const dg_trace_fork *f);
    /* anchor mode (NULL = index trace): the gold item anchors of the anchored
     * instance at `pointer` (plan array `array`) with region [r0, r1) (context
     * tokens); cp_tok[n_cp + 1] maps a code point to the context token holding
     * its first byte. Set *n = the gold item count and *starts (malloc'd, the
     * trace frees it) to their anchor tokens in gold item order: distinct, in
     * [r0, r1). *n = -1 leaves the instance out of the trace (no item forks;
     * its anchor and count forks are not reported). */
    deg_status (*anchors)(void *ud, size_t array, const char *pointer, size_t r0, size_t r1,
                          const size_t *cp_tok, size_t n_cp, int64_t *n, size_t **starts);
    /* anchor mode: run only the anchor forks, anchored arrays' count forks and
     * the forks inside anchored items (before the want hook) */
    int anchored_only;
} dg_trace_hooks;

/* Errors: as deg_fill for the request (with *errors_json the {loc, msg}
 * list, may be NULL, owned by the caller), the hooks' statuses, DEG_ERR_NOMEM. */
deg_status dg_fill_trace(dg_ckpt *k, const char *request, size_t len, const dg_trace_hooks *h,
                         char **errors_json);

#endif
