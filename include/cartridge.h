/*
 * cartridge.h - cartridges: trained K/V prefixes (public C API of libdeg).
 *
 * A cartridge compresses a corpus into the KV cache of a virtual p-token
 * prefix (Cartridges, arXiv 2506.06266; semantics in the project's spec
 * cartridges.md, "Semantics"). Per layer it holds a [p, n_head_kv, head_dim]
 * key block and value block in the exact space of KV-cache rows: keys after
 * the q/k norm (qwen3) and RoPE at positions 0..p-1, never rotated again.
 * Real tokens behind it sit at RoPE positions p, p+1, ...; attention is
 * end-aligned causal (every token sees the whole cartridge).
 *
 * Rows [0, frozen_prefix) are constants (default 1: the attention-sink
 * freeze, paper App. A.1); the other rows are trained by backprop through
 * the frozen model from a sparse distillation loss, with Adam.
 *
 * Hybrid models (lfm2, qwen3_5: recurrent layers beside attention layers):
 * the attention layers hold K/V rows as above; a recurrent layer holds no
 * rows but a state: the fixed-size block (short-conv tail; Gated DeltaNet
 * state S and conv tail, f32) its layer starts the cartridge's readers from,
 * i.e. its state after the virtual prefix. A captured cartridge's states are
 * the prefill's (so the equivalence gate holds exactly); they are trained
 * with the rows (every float trainable: no frozen part) by the same loss and
 * Adam. Composition of several cartridges is refused on hybrids (a recurrent
 * state summarises one whole prefix; two cannot be concatenated).
 *
 * Conventions as in deg.h (status codes, deg_errmsg(), ownership notes).
 * A cartridge borrows its model (the model must outlive it) and is used by
 * one thread at a time.
 */
#ifndef DEG_CARTRIDGE_H
#define DEG_CARTRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct deg_cartridge deg_cartridge;

/* Initialise from the model's own K/V (capture, the paper's winning init):
 * the corpus text (UTF-8, len bytes) is wrapped as a system message in the
 * model's chat layout (deg_chat_format; ChatML: "<|im_start|>system\n"
 * corpus "<|im_end|>\n"; models without a layout: the raw corpus),
 * tokenized (special tokens parsed in the layout's parts only, never in the
 * corpus), and the first p tokens are prefilled on a fresh trunk; their K/V
 * rows become the cartridge. With zero training steps the
 * cartridge is exactly that prefill (the equivalence gate).
 * Errors: DEG_ERR_ARG (NULL, p = 0), DEG_ERR_RANGE (p larger than the
 * wrapped corpus' token count; the message gives both), DEG_ERR_UTF8,
 * DEG_ERR_NOMEM. *out owned by the caller (deg_cartridge_free). */
DEG_API deg_status deg_cartridge_init_corpus(const deg_model *model, const char *text,
                                             size_t len, size_t p, deg_cartridge **out);

/* Capture the K/V rows of the given p token ids (no wrapping). Errors as
 * above; DEG_ERR_RANGE for an id outside [0, n_vocab). */
DEG_API deg_status deg_cartridge_init_tokens(const deg_model *model, const int32_t *ids,
                                             size_t p, deg_cartridge **out);

/* Random-vector init (comparison baseline): every K and V entry drawn from a
 * normal distribution N(0, 1) from a xoshiro256** stream seeded by seed. */
DEG_API deg_status deg_cartridge_init_random_vectors(const deg_model *model, size_t p,
                                                     uint64_t seed, deg_cartridge **out);

/* Random-text init (comparison baseline): capture of p token ids drawn
 * uniformly from [0, n_vocab) with the seeded stream. */
DEG_API deg_status deg_cartridge_init_random_text(const deg_model *model, size_t p,
                                                  uint64_t seed, deg_cartridge **out);

DEG_API void deg_cartridge_free(deg_cartridge *cartridge);

/* Number of prefix rows p (0 for NULL). */
DEG_API size_t deg_cartridge_len(const deg_cartridge *cartridge);
/* Frozen rows [0, n). Default 1. DEG_ERR_RANGE if n > p. */
DEG_API deg_status deg_cartridge_set_frozen_prefix(deg_cartridge *cartridge, size_t n);
DEG_API size_t deg_cartridge_frozen_prefix(const deg_cartridge *cartridge);
/* Adam steps taken so far. */
DEG_API int64_t deg_cartridge_steps(const deg_cartridge *cartridge);

/* Floats per K/V row of layer il: the layer's n_head_kv * head_dim (Gemma 4's
 * full-attention layers have their own, so a layer's rows are p times this,
 * not p * deg_model_info's n_head_kv * head_dim); 0 for a recurrent layer, a
 * layer that reads another layer's K/V (Gemma 4 KV sharing), a bad layer or
 * NULL. */
DEG_API size_t deg_cartridge_row_len(const deg_cartridge *cartridge, int32_t layer);
/* Copy layer il's rows out: keys and values, each [p, n_head_kv, head_dim]
 * f32 of the layer (p * deg_cartridge_row_len floats; either may be NULL).
 * DEG_ERR_RANGE for a bad layer. */
DEG_API deg_status deg_cartridge_get_rows(const deg_cartridge *cartridge, int32_t layer,
                                          float *keys, float *values);
/* Overwrite layer il's rows (both [p, n_head_kv, head_dim] f32; either may
 * be NULL = unchanged). Non-finite values are accepted here and reported by
 * the next training step or save (DEG_ERR_NUMERIC). */
DEG_API deg_status deg_cartridge_set_rows(deg_cartridge *cartridge, int32_t layer,
                                          const float *keys, const float *values);
/* The rows functions refuse a hybrid's recurrent layer (DEG_ERR_ARG); its
 * state is read and written with these. Floats in layer il's state (0 for an
 * attention layer; 0 for NULL or a bad layer). */
DEG_API size_t deg_cartridge_state_len(const deg_cartridge *cartridge, int32_t layer);
/* Copy layer il's state out / in (deg_cartridge_state_len floats, f32), or its
 * accumulated gradient out. DEG_ERR_RANGE for a bad layer, DEG_ERR_ARG for
 * NULL or an attention layer (no state). */
DEG_API deg_status deg_cartridge_get_state(const deg_cartridge *cartridge, int32_t layer,
                                           float *state);
DEG_API deg_status deg_cartridge_set_state(deg_cartridge *cartridge, int32_t layer,
                                           const float *state);
DEG_API deg_status deg_cartridge_get_state_grads(const deg_cartridge *cartridge, int32_t layer,
                                                 float *dstate);

/* One sparse teacher target: the teacher gives token `token` at token index
 * `position` of the sequence (1 <= position < n_ids) log-probability
 * `logprob` (natural log). The student's prediction is read from its logits
 * row position - 1. A position may carry several entries (top-k). */
typedef struct deg_distill_target {
    int32_t position;
    int32_t token;
    float logprob;
} deg_distill_target;

/* Build targets from a teacher's full logits row: the top-k tokens by
 * logprob (ties to the lower id), stopping once their cumulative
 * probability reaches min_mass (the tail is dropped, NOT renormalised; the
 * reference uses k = 20, min_mass = 0.99). logits: [n_vocab] f32 (borrowed).
 * Writes at most k entries to out and their count to *n_out. */
DEG_API deg_status deg_distill_targets_from_logits(const deg_model *model, const float *logits,
                                                   int32_t position, int32_t k, float min_mass,
                                                   deg_distill_target *out, size_t *n_out);

/* Forward behind the cartridge: token ids [n_ids] at RoPE positions p...
 * If targets are given (n_targets > 0), *loss receives the distillation loss
 *   loss = (1/N) sum_entries -exp(logprob) * log softmax(logits[position-1])[token]
 * with N the number of distinct supervised positions (spec "Objective":
 * mean over supervised tokens of the teacher top-k cross-entropy). If
 * logits != NULL it receives [n_ids, n_vocab] f32 (tests and gates; the
 * training path never materialises it). loss may be NULL.
 * Errors: DEG_ERR_ARG, DEG_ERR_RANGE (bad id, position outside [1, n_ids),
 * token outside the vocabulary, non-finite logprob), DEG_ERR_NOMEM. */
DEG_API deg_status deg_cartridge_eval(const deg_cartridge *cartridge, const int32_t *ids,
                                      size_t n_ids, const deg_distill_target *targets,
                                      size_t n_targets, float *loss, float *logits);

/* Forward + loss + backward: adds dLoss/dRows into the cartridge's gradient
 * buffers (all rows, frozen ones included, so the gradient is inspectable;
 * Adam ignores frozen rows). checkpoint != 0 recomputes each layer in the
 * backward instead of keeping its activations (bitwise-equal gradients, less
 * memory). n_targets must be > 0. *loss may be NULL. */
DEG_API deg_status deg_cartridge_backward(deg_cartridge *cartridge, const int32_t *ids,
                                          size_t n_ids, const deg_distill_target *targets,
                                          size_t n_targets, int checkpoint, float *loss);
/* Packed form of deg_cartridge_backward (spec "Batched self-study"): ids
 * holds n_segs conversations back to back, segment s of seg_lens[s] > 0
 * tokens (sum = n_ids). Every segment sits at RoPE positions p... and
 * attends to the cartridge and causally to itself only, so each segment's
 * activations are those of its own unpacked run. Target positions index the
 * packed ids; a target may not sit at a segment's first token. The loss is
 * the mean over ALL segments' distinct supervised positions (one packed
 * batch), its gradient is accumulated. Errors: as deg_cartridge_backward;
 * DEG_ERR_ARG for bad segment lengths, DEG_ERR_RANGE for a target at a
 * segment start. */
DEG_API deg_status deg_cartridge_backward_packed(deg_cartridge *cartridge, const int32_t *ids,
                                                 size_t n_ids, const size_t *seg_lens,
                                                 size_t n_segs,
                                                 const deg_distill_target *targets,
                                                 size_t n_targets, int checkpoint, float *loss);
/* Copy the accumulated gradients of layer il (as deg_cartridge_get_rows). */
DEG_API deg_status deg_cartridge_get_grads(const deg_cartridge *cartridge, int32_t layer,
                                           float *dkeys, float *dvalues);
DEG_API void deg_cartridge_zero_grads(deg_cartridge *cartridge);

/* Adam (Kingma & Ba; PyTorch's torch.optim.Adam update with bias
 * correction), applied to the trainable rows [frozen_prefix, p) only. */
typedef struct deg_adam_params {
    float lr;            /* default 2e-3 (the spec's CLI default; paper 2e-2) */
    float beta1;         /* 0.9 */
    float beta2;         /* 0.999 */
    float eps;           /* 1e-8 */
    float weight_decay;  /* 0 (L2 added to the gradient, as torch Adam) */
} deg_adam_params;
DEG_API deg_adam_params deg_adam_params_default(void);

/* One Adam step from the accumulated gradients, then zero them. If a
 * gradient or an updated row would be non-finite, nothing is changed and
 * DEG_ERR_NUMERIC is returned (the gradients are zeroed). */
DEG_API deg_status deg_cartridge_adam_step(deg_cartridge *cartridge,
                                           const deg_adam_params *params);

/* The same update over a caller's fp32 vectors (the Python trainer's AdamW,
 * deg.train.optim, steps heads and LoRA adapters with it): params, grad, m
 * (first moments), v (second moments) are n floats each; m and v start at 0
 * and are updated in place with params. step = this step's number (1 for the
 * first). lr_each = n per-element rates, or NULL for hp->lr everywhere.
 * decoupled = 1: AdamW (torch.optim.AdamW: params *= 1 - lr * weight_decay
 * before the step); 0: Adam with L2 (weight_decay * params added to the
 * gradient, as torch.optim.Adam and deg_cartridge_adam_step). The rule, in
 * fp32 with the bias corrections in double, is the one in lib/grad/adam.h.
 * Errors: DEG_ERR_ARG (NULL vector, step < 1, hp out of range as for
 * deg_cartridge_adam_step, a negative or non-finite rate); DEG_ERR_NUMERIC
 * when an element would become non-finite (nothing is changed). */
DEG_API deg_status deg_adam_update(float *params, const float *grad, float *m, float *v,
                                   size_t n, int64_t step, const float *lr_each,
                                   const deg_adam_params *hp, int decoupled);

/* The training step of self-study: zero gradients, backward (as above), Adam
 * step. *loss (may be NULL) = the loss before the step. */
DEG_API deg_status deg_cartridge_train_step(deg_cartridge *cartridge, const int32_t *ids,
                                            size_t n_ids, const deg_distill_target *targets,
                                            size_t n_targets, const deg_adam_params *params,
                                            int checkpoint, float *loss);

/* Save as safetensors (atomic write): tensors "layers.<i>.keys" and
 * "layers.<i>.values" [p, n_head_kv, head_dim] F32, and with_optimizer != 0
 * the Adam moments "adam.m.layers.<i>.keys" ... "adam.v.layers.<i>.values";
 * with a draft reference (deg_cartridge_set_draft_ref) the I64 tensor
 * "draft_reference" [n] of its token ids;
 * metadata "format" = "deg-cartridge/1", "frozen_prefix", "adam_steps",
 * and the model identity (arch, n_layer, n_head_kv, head_dim, n_embd,
 * n_vocab, rope_theta, weights_fingerprint: SHA-256 over the
 * hyper-parameters and a fixed sample of the weights). The header alone
 * gives the geometry. The file is replaced atomically (temporary + fsync +
 * rename: a killed save leaves the previous file); saves in one directory
 * are serialized by an advisory lock on it, and the next save, or a load
 * while no save runs, removes the temporaries of killed saves
 * ("<path>.tmp.*"). Counts in the metadata (frozen_prefix, adam_steps) are
 * plain decimal digits (at most 18) on load: anything else is DEG_ERR_FORMAT.
 * Errors: DEG_ERR_NUMERIC (non-finite rows: nothing is written), DEG_ERR_IO. */
DEG_API deg_status deg_cartridge_save(const deg_cartridge *cartridge, const char *path,
                                      int with_optimizer);

/* Load a saved cartridge for model (moments and the draft reference, with
 * its index built, restored when present).
 * Errors: DEG_ERR_IO, DEG_ERR_FORMAT (not a cartridge file, corrupt or
 * inconsistent tensors), DEG_ERR_MISMATCH (saved for another model: the
 * differing field is named), DEG_ERR_NUMERIC (non-finite rows). */
DEG_API deg_status deg_cartridge_load(const deg_model *model, const char *path,
                                      deg_cartridge **out);

/* Draft reference (spec cartridges.md, "--spec-serve", "--draft-ref"): the
 * corpus token ids stored IN the artifact, the reference speculative
 * serving drafts from (deg_forks_generate_spec). Set replaces it (ids in
 * [0, n_vocab), copied; n_ids = 0 removes it) and builds its suffix index
 * once; deg_cartridge_save writes it as the frozen I64 tensor
 * "draft_reference" [n] (8 bytes a token) and deg_cartridge_load rebuilds
 * the index at load, so nothing is built per answer. Files without it load
 * as before (no reference). Errors: as deg_draft_ref_new. */
DEG_API deg_status deg_cartridge_set_draft_ref(deg_cartridge *cartridge, const int32_t *ids,
                                               size_t n_ids);
/* The cartridge's reference (borrowed: valid until it is replaced or the
 * cartridge freed; read-only, shareable between threads) or NULL. */
DEG_API const deg_draft_ref *deg_cartridge_draft_ref(const deg_cartridge *cartridge);
/* The draft reference of a composition (spec "Composition"; serving with
 * --spec-serve): the references of parts[0..n_parts) that have one,
 * concatenated in part order and indexed once (a draft crossing a part
 * boundary is only a wasted guess: verification is exact). *out = NULL
 * (DEG_OK) when no part has one; else a new reference owned by the caller
 * (deg_draft_ref_free), independent of the parts. Errors: as
 * deg_cartridge_compose_check, DEG_ERR_RANGE (more than 2^30 ids in all),
 * DEG_ERR_NOMEM. */
DEG_API deg_status deg_cartridge_compose_draft_ref(const deg_cartridge *const *parts,
                                                   size_t n_parts, deg_draft_ref **out);

/* Serving: a new trunk whose K/V rows are the cartridge's (rows 0..p-1);
 * forks of it decode at positions p... exactly as in training. The trunk is
 * owned by the caller (deg_trunk_free) and independent of the cartridge. */
DEG_API deg_status deg_trunk_from_cartridge(const deg_cartridge *cartridge, deg_trunk **out);

/* ---------------------------------------------------------------------
 * Composition (spec cartridges.md, "Composition"): n_parts cartridges
 * serve and train as ONE prefix by concatenation — part 0's rows, then
 * part 1's, ... (composed p = the sum of the parts' p). Every part keeps the
 * rotations it was trained at (post-RoPE keys are frozen vectors; attention
 * only takes dot products against them, so overlapping nominal positions
 * across parts are harmless); real tokens sit at RoPE positions p_composed...
 * A one-part composition is bitwise the single cartridge.
 *
 * Geometry: every part must belong to the same model handle, or to a model
 * with the same layer count, K/V row width and weights fingerprint
 * (otherwise DEG_ERR_MISMATCH naming the part and the field). parts is an
 * array of n_parts borrowed pointers; a part may be listed more than once.
 * --------------------------------------------------------------------- */

/* DEG_OK if parts compose. Errors: DEG_ERR_ARG (NULL array or part,
 * n_parts = 0), DEG_ERR_MISMATCH. */
DEG_API deg_status deg_cartridge_compose_check(const deg_cartridge *const *parts,
                                               size_t n_parts);
/* Composed prefix rows: the sum of the parts' p (NULL parts count 0). */
DEG_API size_t deg_cartridge_compose_len(const deg_cartridge *const *parts, size_t n_parts);

/* Serving: a new trunk holding the composed prefix (rows 0..P-1); forks
 * decode at positions P... Its K/V are bitwise the concatenation of the
 * parts' rows. Owned by the caller (deg_trunk_free), independent of the
 * parts. Errors: as deg_cartridge_compose_check, DEG_ERR_NOMEM. */
DEG_API deg_status deg_trunk_from_cartridges(const deg_cartridge *const *parts, size_t n_parts,
                                             deg_trunk **out);

/* deg_cartridge_eval behind the composed prefix (same arguments after the
 * parts; same errors plus the composition's). */
DEG_API deg_status deg_cartridge_compose_eval(const deg_cartridge *const *parts, size_t n_parts,
                                              const int32_t *ids, size_t n_ids,
                                              const deg_distill_target *targets,
                                              size_t n_targets, float *loss, float *logits);

/* Composed training: ONE forward/backward behind the concatenated prefix
 * whose gradient is added (+=) into every part's gradient buffers (each
 * part receives the block of its own rows; frozen rows too, inspectable;
 * each part's deg_cartridge_adam_step then updates its trainable rows
 * only, so every part's sink stays frozen). seg_lens == NULL: one sequence
 * (as deg_cartridge_backward); else n_segs packed segments (as
 * deg_cartridge_backward_packed). Errors: as those and
 * deg_cartridge_compose_check. On error no part's gradient changes. */
DEG_API deg_status deg_cartridge_compose_backward(deg_cartridge *const *parts, size_t n_parts,
                                                  const int32_t *ids, size_t n_ids,
                                                  const size_t *seg_lens, size_t n_segs,
                                                  const deg_distill_target *targets,
                                                  size_t n_targets, int checkpoint,
                                                  float *loss);

/* ---------------------------------------------------------------------
 * Fleets (spec cartridges.md, "The fleet"; Cartridges at Scale, arXiv
 * 2606.04557): one cartridge per document in a fleet directory, at most
 * `budget` of them RESIDENT (rows + Adam moments in memory), the rest on
 * disk. Layout of DIR:
 *   fleet.json               manifest (format "deg-fleet/1"): p, optimizer
 *                            rounds, the model's weights fingerprint, and per
 *                            document its name (source path), file names,
 *                            token count, Adam step count, steps since it
 *                            last became resident, and whether it is resident
 *   docs/NNNN.safetensors    the document's cartridge WITH its Adam moments
 *                            (deg_cartridge_save format; one file = rows +
 *                            optimizer state, so they cannot disagree)
 *   docs/NNNN.txt            a copy of the document's text (self-study and
 *                            the retrieval index read it from here)
 * Every file is written atomically (temp file + fsync + rename, cartridges
 * first, the manifest last) and a save is whole: fleet.json names each
 * cartridge file by SHA-256 ("sha256") and its rename commits the save; the
 * cartridges a save replaces are kept as docs/NNNN.safetensors.prev until
 * then, so a writer killed at any point leaves the fleet of the last
 * completed save, never a mix of two (deg_fleet_open puts .prev files back
 * and removes leftover temp files). Saves of a fleet (deg_fleet_save,
 * evict, admit, rotate) hold an flock on DIR: concurrent writers, in one
 * process or several, are serialized and the last save wins whole
 * (tests/c/test_fleet.c: 32 rounds of two writers killed with SIGKILL). A
 * document's step count is read from its cartridge file, the artifact of
 * record. Reloads map the file (no whole-file heap copy). A fleet handle is
 * used by one thread at a time.
 * --------------------------------------------------------------------- */
typedef struct deg_fleet deg_fleet;

typedef struct deg_fleet_params {
    size_t budget;          /* max resident cartridges; default 4; 0 = all */
    int32_t rotate_every;   /* R: rotate after every R optimizer rounds
                               (deg_fleet_step calls); default 10; 0 = never */
    float evict_fraction;   /* phi in (0, 1]: each rotation evicts
                               ceil(phi * residents); default 0.5 */
    int32_t warmup_steps;   /* per-entrant lr warm-up: a document's k-th
                               step since it became resident (k = 1, 2, ...)
                               uses lr * min(1, k / warmup_steps); default 4,
                               0 = none */
    deg_adam_params adam;   /* deg_adam_params_default() */
} deg_fleet_params;
DEG_API deg_fleet_params deg_fleet_default_params(void);

/* Create fleet directory dir (created if missing; DEG_ERR_STATE if it
 * already holds a fleet.json) with one corpus-init cartridge of p rows per
 * document (deg_cartridge_init_corpus: no training) and frozen_prefix 1.
 * names[i] (the source path, NUL-terminated UTF-8) and texts[i]
 * (lens[i] bytes UTF-8) for i < n_docs; all borrowed. Errors: DEG_ERR_ARG,
 * DEG_ERR_RANGE (a document shorter than p tokens: named), DEG_ERR_UTF8,
 * DEG_ERR_IO, DEG_ERR_NOMEM. On error the manifest is not written (the
 * directory is not a fleet). */
DEG_API deg_status deg_fleet_init(const deg_model *model, const char *dir,
                                  const char *const *names, const char *const *texts,
                                  const size_t *lens, size_t n_docs, size_t p);

/* Open a fleet for model (which must outlive it). The residents are the
 * manifest's (up to budget, lower ids first), topped up with the least
 * trained absentees (ties to the lower id). params NULL = defaults.
 * Errors: DEG_ERR_IO, DEG_ERR_FORMAT (bad manifest: the field is named),
 * DEG_ERR_MISMATCH (saved for another model), DEG_ERR_ARG (bad params). */
DEG_API deg_status deg_fleet_open(const deg_model *model, const char *dir,
                                  const deg_fleet_params *params, deg_fleet **out);
/* Free the handle WITHOUT saving (deg_fleet_save first to keep training). */
DEG_API void deg_fleet_free(deg_fleet *fleet);

/* Number of documents (0 for NULL). */
DEG_API size_t deg_fleet_n_docs(const deg_fleet *fleet);
/* Cartridge rows p of every document. */
DEG_API size_t deg_fleet_p(const deg_fleet *fleet);
/* Optimizer rounds taken (deg_fleet_step calls, over the fleet's life). */
DEG_API int64_t deg_fleet_rounds(const deg_fleet *fleet);

typedef struct deg_fleet_doc_info {
    const char *name;       /* source path given to deg_fleet_init (borrowed) */
    const char *text_path;  /* DIR/docs/NNNN.txt (borrowed) */
    const char *cartridge_path; /* DIR/docs/NNNN.safetensors (borrowed) */
    size_t tokens;          /* the document's token count (deg_tokenize) */
    int64_t steps;          /* Adam steps of its cartridge */
    int64_t since_entry;    /* steps since it last became resident */
    int resident;           /* 1 if its cartridge is in memory */
} deg_fleet_doc_info;
/* Borrowed strings valid until the handle is freed. DEG_ERR_RANGE for a bad
 * doc index. */
DEG_API deg_status deg_fleet_doc(const deg_fleet *fleet, size_t doc, deg_fleet_doc_info *out);

/* The resident cartridge of doc (borrowed: owned by the fleet, valid until
 * it is evicted or the fleet freed) for deg_cartridge_compose_backward.
 * DEG_ERR_STATE if the document is not resident. */
DEG_API deg_status deg_fleet_cartridge(deg_fleet *fleet, size_t doc, deg_cartridge **out);

/* The lr doc's next step would use (warm-up applied). */
DEG_API float deg_fleet_lr(const deg_fleet *fleet, size_t doc);

/* One optimizer round: an Adam step (each under its own warm-up lr) on the
 * n resident documents docs[] whose gradients the caller accumulated
 * (deg_cartridge_compose_backward over deg_fleet_cartridge pointers), then,
 * every rotate_every rounds, deg_fleet_rotate. docs must be distinct and
 * resident (DEG_ERR_ARG / DEG_ERR_STATE, nothing stepped). DEG_ERR_NUMERIC
 * from a part: the parts before it have stepped, it and the rest have not
 * (their gradients are zeroed). */
DEG_API deg_status deg_fleet_step(deg_fleet *fleet, const size_t *docs, size_t n);

/* The rotation policy (the paper's uniform-coverage rule): evict the
 * ceil(evict_fraction * residents) MOST-trained residents (steps, ties to
 * the lower id) to disk, then admit the LEAST-trained absentees (ties to the
 * lower id; not the ones just evicted) until budget residents; entrants
 * restart their warm-up. Nothing to do when every document is resident.
 * Writes the evicted cartridges and the manifest. */
DEG_API deg_status deg_fleet_rotate(deg_fleet *fleet);

/* Move one document to disk (its cartridge and moments saved, memory freed)
 * or into memory (mapped reload; DEG_ERR_STATE over budget). An evict/admit
 * cycle continues training bit-identically (rows and moments roundtrip
 * exactly; only the warm-up restarts). Both write the manifest. */
DEG_API deg_status deg_fleet_evict(deg_fleet *fleet, size_t doc);
DEG_API deg_status deg_fleet_admit(deg_fleet *fleet, size_t doc);

/* Save every resident cartridge (with moments) and the manifest. */
DEG_API deg_status deg_fleet_save(deg_fleet *fleet);

/* Serving: a new trunk holding the composition of docs[0..n) in that order
 * (deg_trunk_from_cartridges): residents from memory, absentees mapped from
 * disk for the copy. Owned by the caller. DEG_ERR_RANGE for a bad index. */
DEG_API deg_status deg_fleet_trunk(const deg_fleet *fleet, const size_t *docs, size_t n,
                                   deg_trunk **out);

/* Serving with --spec-serve: the draft reference of the composition of
 * docs[0..n) (deg_cartridge_compose_draft_ref over the documents' cartridges:
 * residents from memory, absentees mapped from disk). *out = NULL (DEG_OK)
 * when no document has one; else owned by the caller (deg_draft_ref_free).
 * Errors: as deg_fleet_trunk. */
DEG_API deg_status deg_fleet_draft_ref(const deg_fleet *fleet, const size_t *docs, size_t n,
                                       deg_draft_ref **out);

/* Fleet creation options (deg_fleet_init_ex). */
typedef struct deg_fleet_init_params {
    size_t p;               /* cartridge rows per document; default 256 */
    int32_t draft_ref;      /* 1: every cartridge stores its document's token ids
                               as its draft reference (deg_cartridge_set_draft_ref:
                               the ids of deg_corpus_new over that one document,
                               the stream self-study draws from), for serving
                               with --spec-serve; default 0 */
} deg_fleet_init_params;
DEG_API deg_fleet_init_params deg_fleet_init_default_params(void);
/* deg_fleet_init with options (deg_fleet_init(..., p) = this with p and the
 * other fields at their defaults). Errors: as deg_fleet_init; params NULL:
 * DEG_ERR_ARG. */
DEG_API deg_status deg_fleet_init_ex(const deg_model *model, const char *dir,
                                     const char *const *names, const char *const *texts,
                                     const size_t *lens, size_t n_docs,
                                     const deg_fleet_init_params *params);

/* Draft references for a fleet that exists (deg fleet draft-ref): on = 1
 * stores in every document's cartridge its document's token ids, as
 * deg_fleet_init_ex with draft_ref = 1 would have (the ids of deg_corpus_new
 * over its text copy DIR/docs/NNNN.txt); on = 0 removes them. Rows, Adam
 * moments, step counts and residency stay as they were. A cartridge that
 * already holds exactly that (the ids, or none) is not rewritten; each
 * changed one is written as a whole fleet save (atomic, with the manifest),
 * one document at a time: an absentee is mapped for it (one cartridge over
 * the budget meanwhile) and freed again. A run killed part-way leaves a
 * loadable fleet with some documents done; running it again finishes (the
 * done ones are skipped). *n_changed (may be NULL): cartridges rewritten.
 * Errors: DEG_ERR_ARG (NULL fleet, on not 0/1), those of reading a text
 * copy (DEG_ERR_IO; DEG_ERR_UTF8) and of the save (DEG_ERR_IO): the document
 * is named; the documents before it are done. */
DEG_API deg_status deg_fleet_set_draft_refs(deg_fleet *fleet, int on, size_t *n_changed);


/* ---------------------------------------------------------------------
 * Self-study (spec cartridges.md, "Self-study", "Batched self-study";
 * Cartridges, arXiv 2506.06266, Algorithm 1 with k = 1): the conversation
 * engine that turns a corpus into distillation data, and the training run
 * over it. Every random choice comes from one xoshiro256** stream
 * (lib/model/sample.h) seeded by the caller, bot A samples from its own
 * per-conversation stream drawn from it, bot B is greedy, and every batch
 * is bitwise batch-invariant: the same seed and settings give the same
 * conversations, and the same run the same artifact bytes, from any host
 * (C or the Python package, which calls these functions).
 * --------------------------------------------------------------------- */

/* A corpus: one or more documents as one provenance-tagged token stream.
 * Document i's block is its text with leading and trailing ASCII whitespace
 * removed; with several documents the block is "Document: NAME\n\n" TEXT
 * "\n\n" (chunks and the in-context arm say where text comes from), with
 * one document TEXT "\n". The blocks are tokenized one by one
 * (deg_tokenize, no special tokens) and concatenated. */
typedef struct deg_corpus deg_corpus;

/* names[i] (NUL-terminated UTF-8) and texts[i] (lens[i] bytes UTF-8) for
 * i < n_docs, all borrowed (copied). Errors: DEG_ERR_ARG (NULL, n_docs = 0,
 * a document with no text once stripped: named), DEG_ERR_UTF8 (named),
 * DEG_ERR_UNSUPPORTED (a byte the vocabulary has no token for), DEG_ERR_NOMEM.
 * The corpus borrows model (must outlive it); owned by the caller. */
DEG_API deg_status deg_corpus_new(const deg_model *model, const char *const *names,
                                  const char *const *texts, const size_t *lens, size_t n_docs,
                                  deg_corpus **out);
DEG_API void deg_corpus_free(deg_corpus *corpus);
/* Token count, and the ids (borrowed, valid while the corpus lives). */
DEG_API size_t deg_corpus_len(const deg_corpus *corpus);
DEG_API const int32_t *deg_corpus_ids(const deg_corpus *corpus);
/* The concatenated blocks (NUL-terminated, borrowed; *len may be NULL):
 * the text deg_cartridge_init_corpus captures and the in-context arm shows. */
DEG_API const char *deg_corpus_text(const deg_corpus *corpus, size_t *len);
DEG_API size_t deg_corpus_n_docs(const deg_corpus *corpus);
/* Document i: its name (borrowed) and token span [*first, *end) in the
 * stream (any output may be NULL). DEG_ERR_RANGE for a bad index. */
DEG_API deg_status deg_corpus_doc(const deg_corpus *corpus, size_t i, const char **name,
                                  size_t *first, size_t *end);

/* Conversation kinds: the seven seed-prompt types (form only, never
 * content: the chunk is the sole content selector), then the two kinds
 * that skip bot B. */
typedef enum deg_selfstudy_kind {
    DEG_SELFSTUDY_STRUCTURING = 0,
    DEG_SELFSTUDY_SUMMARIZATION,
    DEG_SELFSTUDY_QUESTION,
    DEG_SELFSTUDY_USE_CASE,
    DEG_SELFSTUDY_CREATIVE,
    DEG_SELFSTUDY_MECHANISM,
    DEG_SELFSTUDY_VERBATIM,
    DEG_SELFSTUDY_N_SEED_TYPES,          /* 7 */
    DEG_SELFSTUDY_RECALL = DEG_SELFSTUDY_N_SEED_TYPES, /* corpus recall (.recall below) */
    DEG_SELFSTUDY_PASSAGE_QA             /* passage question (.passage_qa below) */
} deg_selfstudy_kind;

/* Name of a kind ("structuring" ... "verbatim", "recall", "passage_qa") or
 * NULL. The seed prompts of seed type kind: count, and prompt j (static
 * strings; NULL out of range). */
DEG_API const char *deg_selfstudy_kind_name(int32_t kind);
DEG_API size_t deg_selfstudy_n_seed_prompts(int32_t kind);
DEG_API const char *deg_selfstudy_seed_prompt(int32_t kind, size_t j);

typedef struct deg_selfstudy_params {
    uint64_t seed;          /* the stream's seed; default 0 */
    int32_t chunk_min;      /* chunk length in tokens, uniform in [chunk_min, */
    int32_t chunk_max;      /*   chunk_max] (capped at the corpus); 256, 512 */
    int32_t max_q;          /* bot A's message, max tokens; 64 */
    int32_t max_a;          /* the answer, max tokens; 160 */
    int32_t top_k;          /* teacher targets per position; 20 */
    float min_mass;         /* ... up to this probability mass; 0.99 */
    float temperature_a;    /* bot A's sampling temperature; 0.6 */
    float recall;           /* fraction of corpus-recall conversations; 0 */
    int32_t recall_q_min;   /* a recall prompt's tokens, uniform in */
    int32_t recall_q_max;   /*   [recall_q_min, recall_q_max]; 16, 48 */
    float passage_qa;       /* fraction of passage-question conversations; 0;
                               recall + passage_qa <= 1 */
    int32_t spec_b;         /* 1: bot B decodes speculatively (same ids); 0 */
} deg_selfstudy_params;
DEG_API deg_selfstudy_params deg_selfstudy_default_params(void);

/* One conversation. Every array is owned by the conversation
 * (deg_selfstudy_conv_clear frees them) when it comes from this library;
 * conversations a caller builds (e.g. read back from a file) are only read
 * by the functions taking them. */
typedef struct deg_selfstudy_conv {
    int32_t kind;                   /* deg_selfstudy_kind */
    size_t chunk_first, chunk_end;  /* the chunk's token span in the corpus */
    char *message;                  /* the user message (NUL-terminated UTF-8) */
    int32_t *answer_ids;            /* the answer's ids (bot B's decode, its stop
                                       token included; or corpus text) */
    size_t n_answer;
    int32_t *student_ids;           /* chat([user: message]) + answer_ids */
    size_t n_student;
    deg_distill_target *targets;    /* the teacher's top-k at every answer
                                       position (positions index student_ids) */
    size_t n_targets;
    size_t n_supervised;            /* supervised positions = n_answer */
} deg_selfstudy_conv;
DEG_API void deg_selfstudy_conv_clear(deg_selfstudy_conv *conv);

/* A synthesiser: one corpus, one settings block, one seeded stream. The
 * conversation of a draw (spec cartridges.md "Self-study"):
 *  1. chunk length L = min(uniform [chunk_min, chunk_max], corpus tokens),
 *     start uniform in [0, n - L] (RANDOM placement; COVER draws no start
 *     and places the chunk after these draws: deg_selfstudy_placement); a
 *     seed type uniform over the seven, one
 *     of its prompts uniform; bot A's 63-bit sampling seed; then, only when
 *     recall or passage_qa > 0, one uniform u: u < recall is a recall
 *     conversation (prompt length uniform in [recall_q_min, recall_q_max],
 *     at most L/2), u < recall + passage_qa a passage question (a passage
 *     drawn uniformly from deg_selfstudy_passages, the chunk placed around
 *     it; a recall conversation when the corpus has no passage);
 *  2. bot A (temperature_a) writes a message seeing the chunk in its system
 *     message ("The following is an excerpt[ from NAMES] of a larger text.
 *     Use it to answer.\n\n<excerpt>\nCHUNK\n</excerpt>") and the seed
 *     prompt (passage questions: the passage prompt, after two worked
 *     examples given as earlier turns); "<think>" spans and surrounding
 *     whitespace removed, "Explain the excerpt." if empty; for the kinds
 *     that write a question (passage, question, mechanism, verbatim) a
 *     question that is meta (passage, excerpt, question, above, text),
 *     copied whole from the chunk, without '?' or outside 3..40 words is
 *     written again with another seed derived from bot A's, at most 3
 *     attempts in all, the last kept (lib/cartridge/selfstudy_questions.c);
 *  3. bot B (greedy) answers with the chunk in context (think spans
 *     stripped and the rest re-tokenized); recall: the prompt is a corpus
 *     span and the answer the max_a tokens after it; passage: the passage's
 *     words (whitespace runs as one space) are the answer;
 *  4. the teacher pass: each answer teacher-forced behind chunk + message,
 *     top_k targets up to min_mass per answer position;
 *  5. the student sequence: chat([user: message]) + answer (no chunk).
 * Texts cut from token spans decode with U+FFFD for ill-formed UTF-8.
 * Chat ids: deg_chat_tokenize; stops: deg_model_stop_ids. The corpus is
 * borrowed (must outlive the synthesiser). Errors: DEG_ERR_ARG (NULL, bad
 * params: the field named), DEG_ERR_UNSUPPORTED (no chat layout),
 * DEG_ERR_NOMEM. Owned by the caller. One thread at a time. */
typedef struct deg_selfstudy deg_selfstudy;
DEG_API deg_status deg_selfstudy_new(const deg_corpus *corpus, const deg_selfstudy_params *params,
                                     deg_selfstudy **out);
DEG_API void deg_selfstudy_free(deg_selfstudy *study);

/* n conversations as one lockstep batch (bot A's rows in one
 * deg_forks_generate call, then bot B's, whose greedy logits give its
 * answers' targets, then one deg_forks_feed teacher pass for the recall,
 * passage and think-stripped answers; a chunk is prefilled once for bot A
 * and reused by the prompt after it): out[0..n) receives them (clear each with deg_selfstudy_conv_clear).
 * A batch of n equals n batches of one (batch invariance). On error
 * nothing is written to out and the stream has still advanced. Errors: as
 * the generation and feed calls, DEG_ERR_NOMEM. */
DEG_API deg_status deg_selfstudy_generate(deg_selfstudy *study, size_t n,
                                          deg_selfstudy_conv *out);

/* The stream's state (4 words), to snapshot and restore a run. */
DEG_API void deg_selfstudy_get_rng(const deg_selfstudy *study, uint64_t state[4]);
DEG_API deg_status deg_selfstudy_set_rng(deg_selfstudy *study, const uint64_t state[4]);

/* Where a draw places its chunk. RANDOM is the spec's (cartridges.md
 * "Self-study", paper Algorithm 1): the chunk start uniform in [0, n - L]
 * (step 1 above). It never places a recall answer in a corpus's last
 * L - q - max_a tokens and leaves the rest to chance: after 16, 48 and 96
 * recall conversations of 128-256-token chunks (answers <= 96 tokens), 41 %,
 * 79 % and 92 % of a 1,902-token document's human-written reference
 * answers lay whole inside some recall answer (xz-history, simulated by
 * bench/cartridge_qa_coverage.py --simulate; issue 13).
 * COVER (deg's, issue 13) tiles the corpus in cycles: a cycle is a grid of
 * windows of W tokens (W = max_a when recall = 1, chunk_min when recall =
 * 0, the smaller of the two otherwise) starting at 0, o, o + W, o + 2W, ...
 * (< n), with o = 0 in cycle 0 and o uniform in [0, W) in cycle c >= 1,
 * visited in a shuffled order; draw k (deg_selfstudy_n_drawn before it)
 * takes the next window of the cycle it falls in. The cycle's offset and
 * order come from a stream seeded by (seed ^ 0x636F766572) * 1000003 + c
 * (one dg_rng_below(W) draw when c >= 1, then a Fisher-Yates shuffle: for
 * j = K-1 down to 1 swap j with below(j + 1)), so draw k depends only on
 * the seed, k and the corpus length. The draw of step 1 skips the chunk
 * start; the other draws are as above, then with window start w:
 *  - recall: the answer starts at w (min(max_a, n - w) tokens, so every
 *    window is inside its answer), the prompt is the q' = min(q, w) tokens
 *    before it, the chunk is L' = max(L, q' + answer) tokens starting at the
 *    prompt, moved back to end at n when it would pass the end;
 *  - seed types: the chunk starts at min(w, n - L);
 *  - passage questions: placed around their passage as under RANDOM (the
 *    window goes unused).
 * So after K draws of one cycle (K = ceil(n / W) in cycle 0) every corpus
 * token is inside a recall answer (recall = 1) or a chunk (recall = 0).
 * The placement may change between draws; it defaults to RANDOM. Errors
 * (set): DEG_ERR_ARG (NULL, an unknown placement). */
typedef enum deg_selfstudy_placement {
    DEG_SELFSTUDY_PLACE_RANDOM = 0,
    DEG_SELFSTUDY_PLACE_COVER = 1
} deg_selfstudy_placement;
DEG_API deg_status deg_selfstudy_set_placement(deg_selfstudy *study, int32_t placement);
DEG_API int32_t deg_selfstudy_get_placement(const deg_selfstudy *study);
/* Conversations drawn so far (both placements count): with the stream's
 * state (deg_selfstudy_get_rng), what a snapshot needs to continue a COVER
 * stream. deg_selfstudy_run_restore sets it (the count at deg_selfstudy_run_new
 * plus the state's n_synthesised). Errors (set): DEG_ERR_ARG (NULL). */
DEG_API size_t deg_selfstudy_n_drawn(const deg_selfstudy *study);
DEG_API deg_status deg_selfstudy_set_n_drawn(deg_selfstudy *study, size_t n);

/* Where the synthesiser's time went (seconds since it was made; wall and
 * CPU of the whole process) and speculative-decoding counts (--spec-b). */
typedef struct deg_selfstudy_timing {
    double generate, teacher, generate_cpu, teacher_cpu;
    size_t drafted, accepted;
} deg_selfstudy_timing;
DEG_API deg_selfstudy_timing deg_selfstudy_get_timing(const deg_selfstudy *study);

/* The answer passages of a token stream ids[0..n_ids) (e.g. a corpus'), as
 * token spans: its
 * paragraphs (split at lines holding only spaces and tabs) of at least
 * min_words whitespace-separated words that do not end with '?' (an FAQ
 * heading answers nothing), each cut into the fewest equal pieces of at
 * most max_tokens tokens. A span holds the tokens overlapping the
 * paragraph's bytes from its first to its last non-blank byte. *spans
 * (pairs first, end: 2 * *n_spans entries) is owned by the caller
 * (deg_free); NULL when there are none. Errors: DEG_ERR_ARG, DEG_ERR_RANGE
 * (an id outside the vocabulary), DEG_ERR_NOMEM. */
DEG_API deg_status deg_selfstudy_passages(const deg_model *model, const int32_t *ids,
                                          size_t n_ids, int32_t max_tokens, int32_t min_words,
                                          size_t **spans, size_t *n_spans);

/* The group gradient of self-study: the gradient of the packed loss (the
 * mean over all the conversations' supervised positions) added (+=) into
 * the gradient buffers of parts[0..n_parts) (one cartridge, or a
 * composition: deg_cartridge_compose_backward). pack != 0: one packed
 * forward/backward (deg_cartridge_backward_packed); 0: one backward per
 * conversation with its targets weighted by its share of the positions
 * (logprob + log(N_c / N)), the same gradient up to f32 roundoff in flat
 * memory. Conversations without targets are skipped. *loss (may be NULL)
 * = the group's loss (0 when no conversation has targets). Errors: as the
 * backward calls. */
DEG_API deg_status deg_selfstudy_backward(deg_cartridge *const *parts, size_t n_parts,
                                          const deg_selfstudy_conv *convs, size_t n, int pack,
                                          int checkpoint, float *loss);

/* A training run (the spec's self-study loop): optimizer step s (1-based)
 * of pass 1 (s <= steps) trains on the next accum synthesised
 * conversations (synthesised gen_batch at a time; leftovers wait in a
 * queue); every later pass replays the first pass's conversations in a new
 * order (a Fisher-Yates shuffle from the replay stream, seeded by
 * replay_seed, drawn at the pass's first step). A step = zero gradients,
 * deg_selfstudy_backward, deg_cartridge_adam_step. steps * epochs steps in
 * all. */
typedef struct deg_selfstudy_train_params {
    int32_t steps;          /* optimizer steps per pass, >= 0; default 8 */
    int32_t epochs;         /* passes, >= 1; 1 */
    int32_t accum;          /* conversations per step, >= 1; 4 */
    int32_t gen_batch;      /* conversations per synthesis batch; 0 = accum */
    int32_t pack;           /* 1: packed backward; 0: per conversation */
    int32_t checkpoint;     /* 1: recompute activations in the backward; 0 */
    uint64_t replay_seed;   /* the replay stream's seed (deg.selfstudy uses
                               seed ^ 0x2E91A7); 0x2E91A7 */
    deg_adam_params adam;   /* deg_adam_params_default() */
} deg_selfstudy_train_params;
DEG_API deg_selfstudy_train_params deg_selfstudy_default_train_params(void);

/* The run borrows study and cartridge (both must outlive it). params NULL
 * = defaults. Errors: DEG_ERR_ARG (NULL, bad params named), DEG_ERR_MISMATCH
 * (the cartridge belongs to another model than the corpus),
 * DEG_ERR_UNSUPPORTED (the model's architecture cannot be trained: refused
 * here, before any conversation is synthesised). */
typedef struct deg_selfstudy_run deg_selfstudy_run;
DEG_API deg_status deg_selfstudy_run_new(deg_selfstudy *study, deg_cartridge *cartridge,
                                         const deg_selfstudy_train_params *params,
                                         deg_selfstudy_run **out);
DEG_API void deg_selfstudy_run_free(deg_selfstudy_run *run);

/* The next optimizer step. *loss (may be NULL) = the group's loss before
 * the step. DEG_ERR_STATE when all steps * epochs steps are done; other
 * errors as the synthesis, backward and Adam calls (the step is not
 * counted; conversations it synthesised stay queued). */
DEG_API deg_status deg_selfstudy_run_step(deg_selfstudy_run *run, float *loss);

/* The run's state after its last step: enough, with the cartridge's rows
 * and Adam moments (deg_cartridge_save), to continue it bitwise. */
typedef struct deg_selfstudy_run_state {
    int64_t step;               /* steps taken (the cartridge's Adam steps
                                   since the run started at step 0) */
    int64_t trained;            /* conversations trained on, replays included */
    size_t n_synthesised;       /* conversations synthesised (trained + queued) */
    size_t n_seen;              /* of which trained on in pass 1 */
    uint64_t rng_synthesis[4];  /* deg_selfstudy_get_rng */
    uint64_t rng_replay[4];
    const size_t *order;        /* the current pass's replay order: n_order
                                   indices into the first n_seen conversations
                                   (borrowed from the run; NULL in pass 1) */
    size_t n_order;
} deg_selfstudy_run_state;
DEG_API void deg_selfstudy_run_get_state(const deg_selfstudy_run *run,
                                         deg_selfstudy_run_state *out);
/* Conversation i < n_synthesised, in synthesis order (borrowed from the
 * run, valid until it is freed), or NULL. */
DEG_API const deg_selfstudy_conv *deg_selfstudy_run_conv(const deg_selfstudy_run *run,
                                                         size_t i);
/* Continue a run from a state and its n_synthesised conversations (copied;
 * e.g. read back from a snapshot): the study's stream, its draw count
 * (deg_selfstudy_set_n_drawn: the count at deg_selfstudy_run_new +
 * n_synthesised) and the replay stream are set, the step count and queue
 * restored. Call on a new run before its
 * first step. Errors: DEG_ERR_ARG (counts that do not fit together, an
 * order that is not a permutation of [0, n_seen)), DEG_ERR_STATE (the run
 * has stepped), DEG_ERR_NOMEM. */
DEG_API deg_status deg_selfstudy_run_restore(deg_selfstudy_run *run,
                                             const deg_selfstudy_run_state *state,
                                             const deg_selfstudy_conv *convs);

/* ---------------------------------------------------------------------
 * Mixed-visibility joint self-study over a fleet (spec cartridges.md,
 * "Mixed-visibility joint self-study"): one optimizer round = a draw of the
 * target document and its co-loaded parts among the RESIDENT documents,
 * accum self-study conversations about the target (deg_selfstudy over that
 * document alone), one backward behind the composed prefix of the parts
 * (deg_selfstudy_backward), and deg_fleet_step over every part (which also
 * rotates the residents every rotate_every rounds).
 *
 * Every draw of round r (the fleet's round count before it, deg_fleet_rounds,
 * saved with the fleet) comes from a xoshiro256** stream (lib/model/sample.h)
 * seeded by round_seed(seed, r) = seed * 1000003 + r (mod 2^64), and the
 * round's conversations from a deg_selfstudy seeded by
 * round_seed(round_seed(seed, r), target + 1): a round depends only on the
 * seed, the round number and the fleet's state, so a run stopped after any
 * save and continued from it gives the same artifact bytes as one run, from
 * any host (C or Python's deg.fleets.train, which calls these functions).
 * The draw, in stream order:
 *  1. the candidates (ascending ids): LENGTH: the residents; UNIFORM: the
 *     residents whose Adam steps equal the fleet's FEWEST (over every
 *     document, absentees included);
 *  2. the target: candidate i with probability tokens_i / sum of tokens
 *     (tokens counted at least 1): one dg_rng_below(sum) draw, the first
 *     candidate whose running sum exceeds it;
 *  3. one uniform u in [0, 1): when u >= p_iso, distract_max > 0 and other
 *     candidates exist (m of them, id order), the round is co-loaded:
 *     k = 1 + below(min(distract_max, m)) distractors, the first k of the
 *     other candidates after a partial Fisher-Yates shuffle (k draws:
 *     position j swaps with j + below(m - j)); then the parts (target +
 *     distractors) are shuffled by Fisher-Yates (for j = n-1 down to 1: swap
 *     j with below(j + 1)). Otherwise the target is the only part (isolated
 *     visibility).
 *
 * The UNIFORM rule: a round steps only documents at the fleet's fewest
 * steps, so a fleet whose step counts are within 1 of each other stays so
 * after every round, under every budget, rotation period, evict fraction,
 * p_iso and distract_max (a fleet trained wider apart under LENGTH
 * narrows: no document moves further from the fewest). Its costs: a round
 * co-loads only distractors at that level (fewer co-loaded rounds than
 * p_iso says near the end of a level; isolated when it is the last one),
 * and when every document at that level is on disk, deg_fleet_train_round
 * rotates (deg_fleet_rotate: evict the most-trained, admit the least-
 * trained) before the draw, also between the rotate_every rotations and
 * with rotate_every = 0. tests/c/test_fleet_train.c checks the rule after
 * every round over 200 (documents, budget, rotation, evict fraction,
 * visibility, rounds) settings.
 * --------------------------------------------------------------------- */
typedef enum deg_fleet_schedule {
    DEG_FLEET_SCHEDULE_LENGTH = 0,  /* the spec's: target proportional to length */
    DEG_FLEET_SCHEDULE_UNIFORM = 1  /* only documents at the fleet's fewest steps take
                                       part (target and distractors; rotating first when
                                       none is resident): per-document step counts stay
                                       within 1 of each other */
} deg_fleet_schedule;

typedef struct deg_fleet_train_params {
    int32_t accum;          /* conversations per round, >= 1; default 4 */
    float p_iso;            /* probability of isolated visibility, [0, 1]; 0.75 */
    int32_t distract_max;   /* max distractors, >= 0; 2 */
    int32_t schedule;       /* deg_fleet_schedule; LENGTH */
    uint64_t seed;          /* the run's seed; 0 */
    int32_t pack;           /* 1: packed backward (deg_selfstudy_backward); 1 */
    int32_t checkpoint;     /* 1: recompute activations in the backward; 0 */
    deg_selfstudy_params study; /* synthesis settings (deg_selfstudy_default_params();
                                   its seed is ignored: derived per round) */
} deg_fleet_train_params;
DEG_API deg_fleet_train_params deg_fleet_default_train_params(void);

/* The draw of the fleet's next round (deg_fleet_rounds): *target and the
 * parts in prefix order, parts[0..*n_parts) (cap >= 1 + distract_max
 * entries), the target among them. Changes nothing. Errors: DEG_ERR_ARG
 * (NULL, bad params named, cap too small), DEG_ERR_STATE (no resident
 * document; UNIFORM: no resident at the fleet's fewest steps, which
 * deg_fleet_train_round settles by rotating first). */
DEG_API deg_status deg_fleet_draw(const deg_fleet *fleet, const deg_fleet_train_params *params,
                                  size_t *target, size_t *parts, size_t cap, size_t *n_parts);

/* What a round did. */
typedef struct deg_fleet_round {
    int64_t round;          /* deg_fleet_rounds after the round */
    size_t target;
    size_t n_parts;         /* parts co-loaded (the target included) */
    float loss;             /* the group's loss before the step */
} deg_fleet_round;

/* One round (UNIFORM: a rotation first when no resident is at the fleet's
 * fewest steps; the draw, conversations, backward, deg_fleet_step). parts (may
 * be NULL; else cap >= 1 + distract_max) receives the parts in prefix order.
 * The fleet is not saved (deg_fleet_save). The target's text is read from
 * its copy in the fleet (docs/NNNN.txt). Errors: as deg_fleet_draw, the
 * corpus, synthesis, backward and step calls (DEG_ERR_UTF8 for a text that
 * is not UTF-8: named), DEG_ERR_UNSUPPORTED for a model whose architecture
 * cannot be trained (before any conversation is synthesised, the rule of
 * deg_selfstudy_run_new); on an error before the step nothing is stepped and
 * the round is not counted. */
DEG_API deg_status deg_fleet_train_round(deg_fleet *fleet, const deg_fleet_train_params *params,
                                         size_t *parts, size_t cap, deg_fleet_round *out);

#ifdef __cplusplus
}
#endif

#endif /* DEG_CARTRIDGE_H */
