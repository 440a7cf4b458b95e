/*
 * deg_train.h - training of a checkpoint's heads (public C API): traced
 * features of the frozen backbone, head parameters, losses and gradients,
 * calibration, saving (deg contract §12.3, §12.4).
 *
 * Conventions as in deg_runtime.h (status codes, deg_errmsg(), ownership
 * notes). Parsed by the Python binding's cffi build: plain C declarations.
 */
#ifndef DEG_TRAIN_H
#define DEG_TRAIN_H

#include "deg_fill.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Training of the heads: features of the frozen backbone, head parameters, */
/* losses and gradients, calibration, saving (deg contract §12.3, §12.4).   */
/* The driver (batches, optimizer, schedule) is the caller's: deg.train.    */
/* ------------------------------------------------------------------------ */

/* Head kinds: the calibration slots of deg.json "calibration" and the loss
 * kinds of deg_train_example. */
#define DEG_HEAD_CHOICE 0  /* pointer over option lines */
#define DEG_HEAD_SCORE 1   /* pointer over level lines */
#define DEG_HEAD_NOUL 2    /* boolean: logits [w.a + b, 0] */
#define DEG_HEAD_EXTRACT 3 /* start/end pointers over the context + null */
#define DEG_HEAD_COUNT 4   /* array length classes */
#define DEG_HEAD_KINDS 5
/* Loss kinds of deg_train_example beyond the calibration slots (§12.4, §12.6;
 * anchor-mode traces, deg_features_extract_anchored). */
#define DEG_HEAD_ANCHOR 5            /* anchor BCE over an anchored instance's region */
#define DEG_HEAD_ANCHOR_COUNT 6      /* anchor_count: count CE on an anchored array */
#define DEG_HEAD_EXTRACT_ANCHORED 7  /* extract with the anchored-extract bias */
#define DEG_TRAIN_WEIGHTS 7          /* weight slots: DEG_HEAD_* 0..6 (EXTRACT_ANCHORED
                                      * uses the EXTRACT weight) */

/* One fork of a traced request: what the heads read (fp32, row-major). */
typedef struct deg_feature_fork {
    const char *pointer;   /* concrete JSON pointer of the leaf, or of the array
                            * instance for a count fork (the gold's item indices) */
    const char *mode;      /* "decide.choice" | "decide.score" | "decide.noul" |
                            * "extract.number" | "extract.date" | "extract.span" | "count"
                            * (anchor traces also "anchor" | "anchor_count") */
    int32_t index;         /* plan field index (leaf) or plan array index (count) */
    int32_t n_rows;        /* rows of hidden */
    const float *hidden;   /* [n_rows, n_embd]: choice/score: the option/level line
                            * ends in line order, then the ANSWER: row (last);
                            * other kinds: the ANSWER: row only */
    const int32_t *order;  /* choice/score: [n_rows - 1], plan outcome index of each
                            * line (plan order unless shuffled); else NULL */
    int32_t count_lo, count_hi; /* count: the head's class range [lo, hi] (minItems,
                                 * maxItems | options.max_items | 32, capped at 64) */
    int32_t count_gold;    /* count: the gold item count (not clamped); else -1 */
    int32_t n_tokens;      /* fork length in tokens */
} deg_feature_fork;

/* Anchor-mode facts of one traced fork (deg_features_extract_anchored). */
typedef struct deg_feature_anchor {
    int64_t anchor, rend;   /* a leaf inside an anchored item: the anchor token and
                             * region end (exclusive; context tokens) of the
                             * innermost anchored item, for the anchored-extract
                             * bias (§12.3); else -1 */
    int64_t r0, r1;         /* "anchor" fork: the instance's region [r0, r1) in
                             * context tokens (§12.6 regions); else -1 */
    size_t n_starts;        /* "anchor" fork: gold items (0 = an empty gold array,
                             * the hard negative) */
    const int32_t *starts;  /* "anchor" fork: [n_starts] the gold items' anchor
                             * tokens, ascending, in [r0, r1); else NULL */
} deg_feature_anchor;

/* The tokens of one traced fork: what a LoRA trainer re-runs with adapters
 * (lora.h deg_lora_tape_forward over a trunk prefilled with
 * deg_features.trunk_ids gives bitwise these hidden rows when the adapters
 * are those of the trace). */
typedef struct deg_feature_tokens {
    const int32_t *ids;    /* [n_ids] the fork's own tokens as deg_fill feeds them to a
                            * fresh fork of the trunk (n_ids = the fork's n_tokens) */
    size_t n_ids;
    const size_t *rows;    /* [n_rows of the fork] the fork token whose final-norm hidden
                            * state is each row of deg_feature_fork.hidden, in its order
                            * (choice/score: the option/level line ends, then ANSWER:) */
    int32_t head_kind;     /* the fork's DEG_HEAD_*: CHOICE, SCORE, NOUL (decide leaves),
                            * EXTRACT (extract leaves), COUNT, ANCHOR_COUNT (count fork of
                            * an anchored array), ANCHOR; deg_ckpt_lora_adapter(ckpt,
                            * head_kind) is the adapter deg_fill runs the fork with */
} deg_feature_tokens;

/* A traced request (deg_features_extract). Owned by the caller
 * (deg_features_free); every pointer inside lives as long as the struct. */
typedef struct deg_features {
    int32_t n_embd;
    size_t n_trunk_tokens;    /* trunk length (prefix + context + "\n") */
    size_t n_ctx;             /* addressable context tokens (extract pointers) */
    const float *ctx_hidden;  /* [n_ctx, n_embd] trunk hidden states c_t */
    const size_t *tok_cp;     /* [n_ctx, 2]: code point range [start, end) of the
                               * context each token covers (a token inside a
                               * multi-byte character covers what it completes) */
    size_t n_forks;
    const deg_feature_fork *forks; /* in run order (round by round) */
    /* anchor traces (deg_features_extract_anchored) only; index traces: NULL, 0 */
    const deg_feature_anchor *anchor; /* [n_forks], parallel to forks */
    size_t n_anchor_arrays;   /* anchored instances traced under their gold anchors */
    size_t n_anchor_skipped;  /* left out: gold anchors null, missing, not one per gold
                               * item, or beyond the context */
    size_t n_anchor_shared;   /* left out: two items' anchors in one token, or an
                               * anchor outside the instance's token region */
    /* the trace's tokens (LoRA training, lora.h; every trace has them) */
    const int32_t *trunk_ids; /* [n_trunk_tokens] the trunk's tokens (BOS if the model
                               * adds one, the prompt prefix, the context, "\n"):
                               * deg_trunk_prefill of them is the base trunk deg_fill reads */
    size_t ctx_first;         /* trunk token of context token 0 (ctx_hidden row 0) */
    const deg_feature_tokens *tokens; /* [n_forks], parallel to forks */
} deg_features;

/* Flags of deg_features_extract. */
#define DEG_FEATURES_CHOICE_ONLY 1u /* run only the choice leaves' forks */
#define DEG_FEATURES_ANCHORED_ONLY 2u /* deg_features_extract_anchored: run only the
                                       * "anchor" and "anchor_count" forks and the
                                       * forks inside anchored items (what an index
                                       * trace does not have) */

/* Trace one request as deg_fill would run it (same trunk, same fork texts
 * §12.1, same rounds and batches), with teacher forcing: each index-addressed
 * array has the gold value's item count (clamped to the count head's range;
 * the count forks still run and report count_gold), and nothing is decoded
 * (no generate phase). gold_json: the gold value (the request schema's
 * instance; a missing or non-array value at an array pointer counts 0 items).
 * shuffle_seed != 0 puts every choice leaf's option lines in a random order
 * (xoshiro256** seeded by (shuffle_seed, FNV-1a of the leaf pointer); §12.4
 * option-order shuffling), reported in .order; 0 = plan order. flags:
 * DEG_FEATURES_*. Index mode whatever the checkpoint's array_mode (an
 * anchor-mode checkpoint fills documents shorter than its anchor_min_tokens
 * this way, §12.6; deg_features_extract_anchored traces anchor mode).
 * Errors: as deg_fill (with *errors_json, may be NULL, owned by the caller),
 * DEG_ERR_ARG (gold not JSON, unknown flags), DEG_ERR_NOMEM. */
DEG_API deg_status deg_features_extract(deg_ckpt *ckpt, const char *request_json, size_t len,
                                        const char *gold_json, size_t gold_len,
                                        uint64_t shuffle_seed, unsigned flags,
                                        deg_features **out, char **errors_json);
DEG_API void deg_features_free(deg_features *features);

/* As deg_features_extract, but traced in anchor mode (§12.6) whatever the
 * checkpoint's array_mode and anchor_min_tokens: every array whose item
 * subtree has an extract leaf is anchored, teacher-forced with the gold
 * anchors; other arrays keep the gold counts. anchors_json (anchors_len
 * bytes): a JSON object, concrete array-instance pointer (the gold's item
 * indices) -> null | {"starts": [code point, ...]} with one start per gold
 * item in gold item order (other keys, e.g. "region", are ignored): what
 * deg.datagen.record.anchor_gold returns. Each start maps to the context
 * token holding its first byte. An anchored instance whose entry is null,
 * missing, not one start per gold item, or past the context is left out
 * (n_anchor_skipped); one whose anchors share a token or leave its token
 * region (the enclosing item's [anchor, next anchor)) is left out
 * (n_anchor_shared); a left-out instance reports no forks and has no items.
 * Forks (mode): "anchor" (one per traced anchored instance: hidden = the
 * ANSWER: row [1, E]; anchor[i] gives its region and gold start tokens;
 * count_gold = the gold item count), "anchor_count" (its count fork, unless
 * options.array_decode is "threshold" or minItems > 64: count_lo, count_hi =
 * [minItems, min(maxItems | options.max_items | 64, 64)], count_gold the gold
 * count, not clamped), and every leaf and index count as in
 * deg_features_extract; a leaf inside an anchored item has anchor[i].anchor,
 * .rend >= 0 and its pointer names its gold item. Items run in anchor
 * (document) order, as deg_fill runs them, so each fork's hidden rows are
 * bitwise what deg_fill reads when its anchors are these. flags:
 * DEG_FEATURES_CHOICE_ONLY, DEG_FEATURES_ANCHORED_ONLY (both: the choice
 * leaves inside anchored items). Errors: as deg_features_extract,
 * DEG_ERR_ARG (anchors not such an object). */
DEG_API deg_status deg_features_extract_anchored(deg_ckpt *ckpt, const char *request_json,
                                                 size_t len, const char *gold_json,
                                                 size_t gold_len, const char *anchors_json,
                                                 size_t anchors_len, uint64_t shuffle_seed,
                                                 unsigned flags, deg_features **out,
                                                 char **errors_json);

/* The head parameters as one flat fp32 vector: every head tensor of
 * heads.safetensors in the order of lib/deg/fill.h, row-major. Getting copies
 * out, setting copies in (n must equal deg_ckpt_n_params; NaN/Inf refused
 * with DEG_ERR_NUMERIC, leaving the checkpoint unchanged). */
DEG_API size_t deg_ckpt_n_params(const deg_ckpt *ckpt);
DEG_API deg_status deg_ckpt_get_params(const deg_ckpt *ckpt, float *out, size_t n);
DEG_API deg_status deg_ckpt_set_params(deg_ckpt *ckpt, const float *in, size_t n);

/* Calibration temperatures temps[DEG_HEAD_KINDS] (finite, > 0), applied by
 * deg_fill to every softmax of that head kind (§12.3). */
DEG_API deg_status deg_ckpt_get_calibration(const deg_ckpt *ckpt, double *temps);
DEG_API deg_status deg_ckpt_set_calibration(deg_ckpt *ckpt, const double *temps);

/* Write the checkpoint (current parameters and temperatures) to dir (created
 * if missing), whole: a save killed at any point leaves the previous
 * checkpoint or the new one, never a mix. deg.json names its heads by
 * "heads_sha256" (checked by deg_ckpt_load / deg_ckpt_open: heads that are
 * not the named ones are DEG_ERR_FORMAT "not whole") and its rename is the
 * commit point: the previous heads stay as heads.safetensors.prev until it
 * is done, so a load after a kill takes the previous checkpoint whole. Each
 * file is written atomically (temporary + fsync + rename). Saves into one
 * directory are serialized by an advisory lock (flock on the directory);
 * the next save, or a load while no save runs, removes the temporaries of
 * killed saves ("<file>.tmp.*") and settles .prev. Checkpoints written
 * before heads_sha256 load unchecked. extra_json (may
 * be NULL): a JSON object whose keys are added to deg.json (e.g. "training");
 * the keys deg writes itself are refused (DEG_ERR_ARG).
 * DEG_SAVE_NO_BACKBONE_PATH leaves backbone.path out of deg.json (a shipped
 * checkpoint resolves its backbone by file name). Errors: DEG_ERR_ARG,
 * DEG_ERR_IO, DEG_ERR_NOMEM. */
#define DEG_SAVE_NO_BACKBONE_PATH 1u
DEG_API deg_status deg_ckpt_save(const deg_ckpt *ckpt, const char *dir, const char *extra_json,
                                 unsigned flags);

/* One training example for one head (§12.4), over features (borrowed):
 *  CHOICE/SCORE: rows = the option/level line hiddens [n_rows, E] in line
 *    order, target [n_rows] a distribution over the lines; loss KL(t || p).
 *  NOUL: target [1] = p(true); loss KL([t, 1 - t] || softmax([w.a + b, 0])).
 *  EXTRACT: rows = the context hiddens [n_rows, E]; pos_start [n_start] /
 *    pos_end [n_end] the positive token indices in [0, n_rows] (n_rows = the
 *    null outcome); loss -log sum_pos p_start - log sum_pos p_end.
 *  COUNT: CE of `count` over the classes [lo, hi] (0 <= lo <= count <= hi
 *    <= 64); rows unused.
 *  ANCHOR (§12.4 anchor, §12.6): rows = the region's context hiddens
 *    [n_rows = r1 - r0, E] (ctx_hidden + r0 * E); pos_start [n_start] the gold
 *    item starts as row indices in [0, n_rows) (n_start = 0: an empty gold
 *    array, every token negative); loss sum_t BCE(sigmoid(l_t), [t is a
 *    start]) / (1 + distinct starts), l_t the anchor head's logit of row t.
 *  ANCHOR_COUNT: as COUNT on an anchored array's count fork, with its own
 *    weight (§12.4 anchor_count; count = min(gold count, hi)).
 *  EXTRACT_ANCHORED: as EXTRACT, with the anchored-extract bias
 *    B[start|end, inside, bucket(t - lo)] on the context logits, lo = the
 *    innermost anchored item's anchor token and hi = its region end
 *    (0 <= lo < hi <= n_rows); weighted by weights[DEG_HEAD_EXTRACT].
 * answer = the hidden state at ANSWER: [E]. */
typedef struct deg_train_example {
    int32_t kind;            /* DEG_HEAD_* */
    const float *answer;     /* [E] */
    const float *rows;       /* [n_rows, E] (CHOICE, SCORE, EXTRACT) */
    size_t n_rows;
    const double *target;    /* CHOICE/SCORE: [n_rows]; NOUL: [1] */
    const int32_t *pos_start, *pos_end; /* EXTRACT */
    size_t n_start, n_end;
    int32_t lo, hi, count;   /* COUNT */
} deg_train_example;

/* Loss and gradient of a batch at the checkpoint's current parameters, at
 * temperature 1: total = sum_i weights[kind_i] * loss_i (e.g. weights = 1 /
 * the number of decide, extract items, 0.5 / the number of count items for
 * the §12.4 sum of means). weights has DEG_HEAD_KINDS entries, or
 * DEG_TRAIN_WEIGHTS when an example has an anchor kind (ANCHOR, ANCHOR_COUNT,
 * EXTRACT_ANCHORED); the extra slots are read only then. grad [n_grad = deg_ckpt_n_params] is overwritten
 * with d total / d params in the flat layout. losses [n] (may be NULL) gets
 * each example's unweighted loss (nats). Deterministic: the same inputs give
 * the same bits whatever the thread count (each head kind accumulates its
 * examples in order). Errors: DEG_ERR_ARG (a malformed example: "example i:
 * why"), DEG_ERR_NOMEM. */
DEG_API deg_status deg_train_loss_grad(const deg_ckpt *ckpt, const deg_train_example *ex,
                                       size_t n, const double *weights, float *grad,
                                       size_t n_grad, double *losses, double *total);
/* As deg_train_loss_grad, and also d total / d the fork hidden states each
 * example reads (what deg_lora_tape_backward of lora.h takes): d_answer[i]
 * [E] w.r.t. ex[i].answer, and for CHOICE/SCORE d_rows[i] [n_rows, E] w.r.t.
 * the option/level line rows (EXTRACT/ANCHOR rows are the context trunk's
 * hidden states: frozen, no gradient, d_rows[i] untouched). Overwritten, in
 * the weighted units of total. d_answer / d_rows (or an entry) may be NULL:
 * not wanted. Same errors as deg_train_loss_grad. */
DEG_API deg_status deg_train_loss_grad_hidden(const deg_ckpt *ckpt,
                                              const deg_train_example *ex, size_t n,
                                              const double *weights, float *grad,
                                              size_t n_grad, double *losses, double *total,
                                              float *const *d_answer, float *const *d_rows);

/* Raw logits (temperature 1) of one example's head: CHOICE/SCORE [n_rows];
 * NOUL [2] = {w.a + b, 0}; EXTRACT, EXTRACT_ANCHORED (bias included) [2,
 * n_rows + 1] (start then end, the null logit last in each); COUNT,
 * ANCHOR_COUNT [hi - lo + 1]; ANCHOR [n_rows]. *n_out = that size; cap = room in
 * logits (DEG_ERR_RANGE if too small, *n_out still set). Errors: DEG_ERR_ARG,
 * DEG_ERR_RANGE, DEG_ERR_NOMEM. */
DEG_API deg_status deg_train_logits(const deg_ckpt *ckpt, const deg_train_example *ex,
                                    float *logits, size_t cap, size_t *n_out);

#ifdef __cplusplus
}
#endif

#endif /* DEG_TRAIN_H */
