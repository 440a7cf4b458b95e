/*
 * deg.h - the public C API of libdeg.
 *
 * libdeg runs small transformer language models on the CPU for two jobs:
 * schema fill (a JSON value always valid against a JSON Schema, read from a
 * document in one pass) and cartridges (trained KV prefixes).
 *
 * Conventions (see doc/ARCHITECTURE.md):
 *  - Every fallible call returns a deg_status: DEG_OK (0) or a negative error
 *    kind. The human-readable message of the last failure on the calling
 *    thread is returned by deg_errmsg(); it stays valid until the next failing
 *    call on that thread.
 *  - Handles are opaque. Each *_new / *_load has a matching *_free that
 *    accepts NULL.
 *  - Ownership is stated per pointer: "borrowed" = the caller keeps it and it
 *    must stay valid for the duration stated; "owned by the caller" = release
 *    with the named free function.
 *  - Threads: a deg_model is immutable after load and may be shared across
 *    threads. A trunk or fork is used by one thread at a time.
 *  - Closing: a *_free must not run while any call on that handle (or on a
 *    handle that depends on it: forks of a trunk, trunks of a model, ...)
 *    runs in another thread; that is a use after free. To close a handle in
 *    use, stop the call (a deg_cancel token, see "Work limits and
 *    cancellation"), wait for it to return, then free. The Python binding
 *    enforces this: close() while a call on the handle or a child runs
 *    raises StateError and frees nothing.
 *  - Token ids are int32_t; lengths and counts are size_t; floats are IEEE
 *    binary32 (f32) unless stated otherwise.
 *
 * This header is also parsed by the Python binding's cffi build: keep
 * declarations plain C (no macros inside declarations besides DEG_API).
 */
#ifndef DEG_H
#define DEG_H

#include <stddef.h>
#include <stdint.h>

#include "deg_version.h"

#if defined(DEG_BUILDING)
#define DEG_API __attribute__((visibility("default")))
#else
#define DEG_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Status, messages, version, library settings                              */
/* ------------------------------------------------------------------------ */

typedef enum deg_status {
    DEG_OK = 0,
    DEG_ERR_ARG = -1,         /* invalid argument (NULL handle, bad size, ...) */
    DEG_ERR_IO = -2,          /* file not found, unreadable, write failed */
    DEG_ERR_FORMAT = -3,      /* malformed file: bad magic, truncated, corrupt */
    DEG_ERR_UNSUPPORTED = -4, /* valid but unsupported: dtype, architecture, ... */
    DEG_ERR_NOMEM = -5,       /* allocation failed or memory budget exceeded */
    DEG_ERR_UTF8 = -6,        /* input text is not valid UTF-8 */
    DEG_ERR_RANGE = -7,       /* index, length or value out of range */
    DEG_ERR_SCHEMA = -8,      /* the JSON Schema is invalid (see deg_schema_errors) */
    DEG_ERR_REQUEST = -9,     /* a fill request or its options are invalid */
    DEG_ERR_FILL = -10,       /* a fill could not produce a valid value (FillError) */
    DEG_ERR_STATE = -11,      /* call not valid in the handle's current state */
    DEG_ERR_MISMATCH = -12,   /* artifact does not match the model */
    DEG_ERR_NUMERIC = -13,    /* NaN/Inf detected */
    DEG_ERR_INTERNAL = -14,   /* a bug in libdeg: please report */
    DEG_ERR_CANCELLED = -15,  /* the call's deg_cancel token was set (another thread) */
    DEG_ERR_LIMIT = -16       /* a work limit was reached: the deadline passed, or the
                                 field / fork-token cap of a fill (deg_run_limits,
                                 request options) would be exceeded */
} deg_status;

/* Message of the last failing call on this thread ("" if none). Borrowed:
 * valid until the next failing deg call on the same thread. */
DEG_API const char *deg_errmsg(void);

/* Static name of a status code, e.g. "DEG_ERR_FORMAT". Never NULL. */
DEG_API const char *deg_status_name(deg_status status);

/* Run-time version string "MAJOR.MINOR.PATCH" (static). Compare with
 * DEG_VERSION_STRING to detect a header/library mismatch. */
DEG_API const char *deg_version(void);

/* A one-line JSON description of the runtime: library version, the BLIS
 * kernel set in use ("skx", "zen3", "haswell", "generic", ...), how it was
 * chosen ("env" = BLIS_ARCH_TYPE set by the user, "auto" = selected by
 * libdeg from the CPU's features, "blis" = BLIS's own choice, kept when no
 * better set applies or BLIS was initialised before libdeg), and the thread
 * count. Example: {"version":"0.1.0","blas":"BLIS 0.9.0","blas_arch":"zen3",
 * "blas_arch_source":"auto","threads":2,"cpus":2}. Static (per-thread)
 * storage, valid until the next call on the same thread. */
DEG_API const char *deg_runtime_info(void);

/* Name of the BLIS kernel set in use (static string). Calling this, or any
 * call that computes, initialises BLIS: libdeg picks the fast kernel set for
 * the CPU unless BLIS_ARCH_TYPE is already set in the environment. */
DEG_API const char *deg_blas_arch(void);

/* Number of threads used by compute kernels (default: the machine's cores).
 * n <= 0 restores the default. Returns the previous value. */
DEG_API int deg_set_num_threads(int n);

/* Free memory that libdeg allocated and handed to the caller (strings from
 * deg_chat_format, ...). NULL is accepted. */
DEG_API void deg_free(void *ptr);

/* ------------------------------------------------------------------------ */
/* Work limits and cancellation                                             */
/* ------------------------------------------------------------------------ */

/* A cancel token: a flag one thread sets while another runs a call that was
 * given the token (deg_fill_ex, deg_fill_many_ex, deg_forks_generate_ex,
 * deg_generate_ex). The running call polls it between units of work: every
 * layer of every forward pass (prefill chunks of at most 256 tokens, fork
 * batches), between fill rounds and fork batches, and every decode step; once
 * it sees the flag it frees what it made and returns DEG_ERR_CANCELLED
 * ("cancelled during <phase>"). Latency = one unit of work: one layer of a
 * 256-token pass (its attention grows with the context: about 1/30 of a pass
 * on SmolLM2) or one decode step of the batch. A token may be shared by many calls and reused after
 * deg_cancel_reset. deg_cancel_set / _reset / _is_set are thread-safe
 * (atomic) and async-signal-safe. The token must outlive the calls using it. */
typedef struct deg_cancel deg_cancel;
DEG_API deg_status deg_cancel_new(deg_cancel **out);
DEG_API void deg_cancel_free(deg_cancel *cancel);
DEG_API void deg_cancel_set(deg_cancel *cancel);
DEG_API void deg_cancel_reset(deg_cancel *cancel);
DEG_API int deg_cancel_is_set(const deg_cancel *cancel);

/* Limits of one call (params struct; start from deg_run_limits_default()).
 * 0 = no limit in every field.
 *  - deadline_ms: wall-clock budget from the call's start (CLOCK_MONOTONIC),
 *    polled where the cancel token is; past it the call returns
 *    DEG_ERR_LIMIT ("deadline of N ms passed during <phase>").
 *  - max_fields (fill only): cap on instantiated fields of one request, i.e.
 *    leaves created for every array item plus array instances (the work of a
 *    fill grows with it: one fork per instantiated field). Exceeding it is
 *    DEG_ERR_LIMIT before the forks run.
 *  - max_fork_tokens (fill only): cap on the tokens one request feeds to
 *    forks (every fork's prompt tokens plus generated tokens), checked before
 *    each round / decode step runs: DEG_ERR_LIMIT.
 * Fill requests may also set "deadline_ms", "max_fields", "max_fork_tokens"
 * in their options (§9 extension); the tighter of the two applies. */
typedef struct deg_run_limits {
    deg_cancel *cancel;       /* borrowed; NULL = not cancellable */
    int64_t deadline_ms;      /* >= 0 */
    int64_t max_fields;       /* >= 0 */
    int64_t max_fork_tokens;  /* >= 0 */
} deg_run_limits;

/* Defaults: no token, no deadline, no caps. */
DEG_API deg_run_limits deg_run_limits_default(void);

/* ------------------------------------------------------------------------ */
/* Model                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct deg_model deg_model;

/* Architecture hyper-parameters and special tokens of a loaded model. */
typedef struct deg_model_info {
    const char *arch;       /* "llama", "qwen3" (static string) */
    const char *name;       /* model name from the file's metadata, or "" */
    int32_t n_vocab;        /* vocabulary size = logits row length */
    int32_t n_embd;         /* hidden size */
    int32_t n_layer;
    int32_t n_head;         /* query heads */
    int32_t n_head_kv;      /* key/value heads (GQA groups = n_head / n_head_kv) */
    int32_t head_dim;
    int32_t n_ff;           /* MLP intermediate size */
    int32_t n_ctx_train;    /* context length the model was trained with */
    float rope_theta;
    float rms_eps;
    int32_t tied_lm_head;   /* 1 if the LM head is the token embedding */
    int32_t bos_id;         /* -1 if none */
    int32_t eos_id;         /* end of turn / end of text; -1 if none */
    const char *chat_layout;/* "chatml", "qwen3" (ChatML, thinking off), "none" */
    size_t weight_bytes;    /* bytes of weights as held for compute */
} deg_model_info;

/* Load a model from a GGUF file or a Hugging Face model directory
 * (config.json + *.safetensors [+ model.safetensors.index.json] +
 * tokenizer.json [+ tokenizer_config.json]). The file(s) are memory-mapped.
 * On success *out is owned by the caller (deg_model_free).
 * Errors: DEG_ERR_IO, DEG_ERR_FORMAT, DEG_ERR_UNSUPPORTED (architecture or
 * dtype), DEG_ERR_NOMEM. */
DEG_API deg_status deg_model_load(const char *path, deg_model **out);

/* How a model holds its weight matrices (deg_model_params.weights).
 *   DEG_WEIGHTS_F32: dequantized to f32 at load (about 4 bytes a weight
 *     resident); products are f32 BLIS GEMMs: the numerics of transformers'
 *     f32 reference (the goldens).
 *   DEG_WEIGHTS_NATIVE: kept in the file's dtype (Q4_0, Q4_1, Q8_0, Q4_K,
 *     Q6_K, F16, BF16), borrowed from the mapped file (resident weights ~
 *     the file size); products quantize each activation row to 8 bits per
 *     block of 32 and use integer block dot products (F16/BF16: f32 dots).
 *     Logits differ from the f32 path by the activation rounding (bounded in
 *     lib/tensor/qdot.h); every row is still bitwise independent of the other
 *     rows and of the thread count. f32 tensors stay f32.
 *   DEG_WEIGHTS_DEFAULT: the environment variable DEG_WEIGHTS ("f32" or
 *     "native") if set, else DEG_WEIGHTS_F32. */
#define DEG_WEIGHTS_DEFAULT 0
#define DEG_WEIGHTS_F32 1
#define DEG_WEIGHTS_NATIVE 2

/* Loading options of deg_model_load_with_params (llama.h style: start from
 * deg_model_default_params()). */
typedef struct deg_model_params {
    int32_t weights;   /* DEG_WEIGHTS_* (default DEG_WEIGHTS_DEFAULT) */
} deg_model_params;

DEG_API deg_model_params deg_model_default_params(void);
/* deg_model_load with params (NULL = defaults). Errors: as deg_model_load;
 * DEG_ERR_ARG for an unknown weights value or DEG_WEIGHTS set to something
 * other than "f32" / "native". */
DEG_API deg_status deg_model_load_with_params(const char *path, const deg_model_params *params,
                                              deg_model **out);
DEG_API void deg_model_free(deg_model *model);
/* Fill *info; the strings are borrowed from the model (valid until free). */
DEG_API deg_status deg_model_get_info(const deg_model *model, deg_model_info *info);

/* ------------------------------------------------------------------------ */
/* Tokenizer                                                                */
/* ------------------------------------------------------------------------ */

/* Encode UTF-8 text [text, text+len) to token ids (the ids of Hugging Face
 * `tokenizers` for the model's tokenizer). With parse_special != 0,
 * special/added tokens written in the text (e.g. "<|im_start|>") become their
 * ids; otherwise special tokens are encoded as plain text (non-special added
 * tokens such as Qwen3's "<think>" still match, as in HF tokenizers and
 * llama.cpp). No BOS is added. With an NFC normalizer (Qwen2/3
 * tokenizer.json) the text is NFC-normalized first.
 * Writes at most cap ids to ids (may be NULL when cap == 0) and the full
 * count to *n_ids; if the count exceeds cap, returns DEG_ERR_RANGE and the
 * caller retries with a larger buffer. Errors: DEG_ERR_UTF8 (with the byte
 * offset in the message), DEG_ERR_UNSUPPORTED for a byte the vocabulary has
 * no token for (SmolLM2: e.g. 0x04; HF tokenizers drops it:
 * deg_tokenize_ex with DEG_TOKENIZE_DROP_MISSING_BYTES does the same). */
DEG_API deg_status deg_tokenize(const deg_model *model, const char *text, size_t len,
                                int parse_special, int32_t *ids, size_t cap,
                                size_t *n_ids);

/* deg_tokenize with flags:
 *  - DEG_TOKENIZE_SPECIAL: parse_special = 1.
 *  - DEG_TOKENIZE_DROP_MISSING_BYTES: a byte the vocabulary has no token for
 *    (SmolLM2: 0x04, 0x06, 0x13, 0x14, 0x16, 0x1d, the UTF-8 lead bytes
 *    0xc0 0xc1 0xf1 0xf2 0xf5..0xff) is dropped, as Hugging Face tokenizers
 *    does (BPE without unk_token: the byte's neighbours in its pre-token
 *    become adjacent and may merge), so the ids equal HF's; without the flag
 *    such a byte is DEG_ERR_UNSUPPORTED (the byte and its offset named).
 *    The tokens' bytes are then the text minus the dropped bytes, in order:
 *    deg.fill reads contexts this way and maps its spans back to the
 *    original text's code points (a dropped character belongs to no token).
 * Errors as deg_tokenize, DEG_ERR_ARG for unknown flags. */
#define DEG_TOKENIZE_SPECIAL 1u
#define DEG_TOKENIZE_DROP_MISSING_BYTES 2u
DEG_API deg_status deg_tokenize_ex(const deg_model *model, const char *text, size_t len,
                                   unsigned flags, int32_t *ids, size_t cap, size_t *n_ids);

/* Decode ids to UTF-8 bytes (byte-exact inverse of deg_tokenize for text
 * without special tokens). Writes at most cap bytes (no NUL terminator) and
 * the full length to *len; DEG_ERR_RANGE if it did not fit. A partial UTF-8
 * sequence at the end is returned as is (a token may end mid-character).
 * Special tokens decode to their text ("<|im_end|>"); ids inside the
 * model's n_vocab that have no token (padding rows) decode to nothing.
 * Errors: DEG_ERR_RANGE for an id outside [0, n_vocab). */
DEG_API deg_status deg_detokenize(const deg_model *model, const int32_t *ids, size_t n_ids,
                                  char *buf, size_t cap, size_t *len);

/* One chat message; both strings borrowed, NUL-terminated UTF-8. */
typedef struct deg_chat_message {
    const char *role;    /* "system", "user", "assistant" */
    const char *content;
} deg_chat_message;

/* Render messages in the model's chat layout (ChatML for SmolLM2 and Qwen3,
 * thinking disabled for Qwen3), ending with the assistant turn header when
 * add_generation_prompt != 0: the same text as the model's own chat template
 * through transformers' apply_chat_template (SmolLM2's default system
 * message included when messages[0] is not a system message; Qwen3's empty
 * think block after the assistant header). The layout comes from the
 * model's metadata (deg_model_info.chat_layout, else its chat template).
 * *out is a NUL-terminated string owned by the caller (deg_free). To feed a
 * model, use deg_chat_tokenize (contents stay plain text). Errors: DEG_ERR_ARG (no messages, NULL strings,
 * role other than system/user/assistant), DEG_ERR_UNSUPPORTED (no known
 * chat layout for this model), DEG_ERR_NOMEM. */
DEG_API deg_status deg_chat_format(const deg_model *model, const deg_chat_message *messages,
                                   size_t n_messages, int add_generation_prompt, char **out);

/* The token ids of a chat in the model's chat layout: deg_chat_format's
 * text, tokenized with special tokens ("<|im_start|>") parsed in the layout
 * and never inside message contents, so a message holding "<|im_end|>"
 * cannot end its turn early or forge another. When no content holds
 * special-token text, the ids are those of Hugging Face's
 * apply_chat_template(..., tokenize=True) (tests/goldens/chat_ids.json).
 * The one chat tokenization of the library: generation, deg serve, the
 * baseline, self-study and the CLI all use it. flags: 0 or
 * DEG_TOKENIZE_DROP_MISSING_BYTES. Output contract as deg_tokenize (at most
 * cap ids, full count in *n_ids, DEG_ERR_RANGE if it did not fit). Errors
 * as deg_chat_format and deg_tokenize. */
DEG_API deg_status deg_chat_tokenize(const deg_model *model, const deg_chat_message *messages,
                                     size_t n_messages, int add_generation_prompt,
                                     unsigned flags, int32_t *ids, size_t cap, size_t *n_ids);

/* The library's ONE stop-token rule (generation's default stop_ids, the end
 * of a fill answer, self-study's bots): the model's EOS, and for models with
 * a chat layout also "<|im_end|>" (end of an assistant turn) when it is
 * another token. Writes at most cap ids (EOS first) and the count to *n_ids
 * (at most 2). Errors: DEG_ERR_ARG, DEG_ERR_RANGE (cap too small). */
DEG_API deg_status deg_model_stop_ids(const deg_model *model, int32_t *ids, size_t cap,
                                      size_t *n_ids);

/* ------------------------------------------------------------------------ */
/* Trunk and fork                                                           */
/* ------------------------------------------------------------------------ */

/* A trunk is a prefilled prefix state: per layer the K/V rows of its tokens
 * (keys after RoPE). A fork is a continuation of a trunk: it attends to the
 * trunk's rows by reference (no copy) and causally to its own tokens. Many
 * forks of one trunk run as rows of one batch; a row's numbers do not depend
 * on the other rows (bitwise). A trunk must outlive its forks and must not be
 * extended (deg_trunk_prefill) while forks of it exist (DEG_ERR_STATE). */
typedef struct deg_trunk deg_trunk;
typedef struct deg_fork deg_fork;

/* New empty trunk of model (borrowed; must outlive the trunk). */
DEG_API deg_status deg_trunk_new(const deg_model *model, deg_trunk **out);
DEG_API void deg_trunk_free(deg_trunk *trunk);

/* Append n_ids tokens to the trunk (prefill), in chunks of bounded scratch
 * memory. If logits != NULL it receives [n_ids, n_vocab] f32 logits of the
 * appended tokens (row i = logits after token i); if last_logits != NULL it
 * receives [n_vocab] of the last token only. Errors: DEG_ERR_RANGE (id out of
 * range), DEG_ERR_STATE (forks exist), DEG_ERR_NOMEM. */
DEG_API deg_status deg_trunk_prefill(deg_trunk *trunk, const int32_t *ids, size_t n_ids,
                                     float *logits, float *last_logits);
/* Number of tokens (KV rows) in the trunk. */
DEG_API size_t deg_trunk_len(const deg_trunk *trunk);

/* New fork of trunk (borrowed; must outlive the fork), with no own tokens. */
DEG_API deg_status deg_fork_new(deg_trunk *trunk, deg_fork **out);
DEG_API void deg_fork_free(deg_fork *fork);
/* Own tokens fed so far (the fork's total length is trunk len + this). */
DEG_API size_t deg_fork_len(const deg_fork *fork);

/* Feed tokens to several forks as rows of one batch. Fork i receives
 * n_ids[i] tokens ids[i][0..n_ids[i]) (n_ids[i] may be 0: the row sits out).
 * Forks may belong to different trunks of the same model. If logits != NULL,
 * logits[i] (may be NULL per row) receives [n_ids[i], n_vocab] f32.
 * Each row's results are bitwise identical whatever the other rows are. */
DEG_API deg_status deg_forks_feed(deg_fork *const *forks, size_t n_forks,
                                  const int32_t *const *ids, const size_t *n_ids,
                                  float *const *logits);
/* Rewind a fork to its first n own tokens (n <= deg_fork_len): the K/V
 * rows and hidden states of the later ones are dropped, as if they had never
 * been fed (feeding them again gives bitwise the same numbers; speculative
 * decoding's rejected drafts). DEG_ERR_RANGE if n > deg_fork_len;
 * DEG_ERR_UNSUPPORTED for a model with recurrent layers (their state is
 * updated in place, §12.2). */
DEG_API deg_status deg_fork_truncate(deg_fork *fork, size_t n);
/* Single-fork convenience form of deg_forks_feed. */
DEG_API deg_status deg_fork_feed(deg_fork *fork, const int32_t *ids, size_t n_ids,
                                 float *logits);
/* Logits [n_vocab] after the fork's last token (its trunk's last token when
 * it has none). DEG_ERR_STATE if neither exists. */
DEG_API deg_status deg_fork_logits(const deg_fork *fork, float *logits);
/* Final-norm hidden states [n, n_embd] of the fork's own tokens
 * [first, first + n), for heads. DEG_ERR_RANGE outside the fed tokens. */
DEG_API deg_status deg_fork_hidden(const deg_fork *fork, size_t first, size_t n,
                                   float *hidden);

/* ------------------------------------------------------------------------ */
/* Generation                                                               */
/* ------------------------------------------------------------------------ */

/* Sampling rule (lib/model/sample.h): temperature, then top-k, then top-p
 * (nucleus over the top-k survivors, after temperature), then one uniform
 * draw from the row's xoshiro256** stream seeded with seed; candidates are
 * ordered by (logit descending, id ascending), so ties are deterministic.
 * Same model, prompt, params and seed -> same ids. */
typedef struct deg_sample_params {
    float temperature;      /* 0 = greedy (argmax, ties to the lowest id); else > 0 */
    int32_t top_k;          /* 0 = off; else keep the top_k most likely ids */
    float top_p;            /* in (0, 1]; 1 = off; nucleus over the top-k survivors */
    uint64_t seed;          /* stream seed when temperature > 0 */
    int32_t max_tokens;     /* > 0 */
    const int32_t *stop_ids;/* borrowed; NULL = the model's EOS, plus <|im_end|> for
                               ChatML-layout models; non-NULL = exactly these
                               n_stop_ids ids (0 = no stop token) */
    size_t n_stop_ids;
} deg_sample_params;

/* Defaults: greedy, top_k 0, top_p 1, seed 0, max_tokens 256, default stops. */
DEG_API deg_sample_params deg_sample_params_default(void);

typedef struct deg_gen_stats {
    size_t prompt_tokens;     /* tokens before the first generated one (trunk + fork) */
    size_t generated_tokens;  /* including the stop token, if one was hit */
    double prefill_seconds;   /* deg_generate's prompt prefill (0 for forks) */
    double decode_seconds;    /* wall time of the decode steps the row took part in */
    int32_t stopped;          /* 1 = stop token, 0 = max_tokens reached */
} deg_gen_stats;

/* Decode several forks together in lockstep (finished rows retire). Fork i
 * continues from its current state (its logits as deg_fork_logits gives
 * them); the sampled ids (stop token included) go to out_ids[i], which must
 * hold params[i].max_tokens ids, and their count to n_out[i]; stats may be
 * NULL or an array of n_forks. Each row samples from its own stream seeded
 * by params[i].seed, so a row's ids do not depend on the other rows
 * (bitwise). Every generated id but the last is fed to its fork: to continue
 * a fork afterwards, feed it its last id first. All forks must belong to one
 * model and be distinct. On failure n_out[i] counts the ids produced so far.
 * Errors: DEG_ERR_ARG (NULL pointers, bad params, max_tokens <= 0),
 * DEG_ERR_STATE (a fork and its trunk hold no token), DEG_ERR_NUMERIC
 * (NaN/inf logits), DEG_ERR_NOMEM. */
DEG_API deg_status deg_forks_generate(deg_fork *const *forks, size_t n_forks,
                                      const deg_sample_params *params,
                                      int32_t *const *out_ids, size_t *n_out,
                                      deg_gen_stats *stats);

/* Convenience: prefill prompt ids (n_prompt >= 1) on a fresh trunk, then
 * decode one fork. out_ids receives up to params->max_tokens ids; cap must
 * be >= params->max_tokens (else DEG_ERR_ARG). stats may be NULL. Errors as
 * deg_trunk_prefill and deg_forks_generate. */
DEG_API deg_status deg_generate(const deg_model *model, const int32_t *prompt, size_t n_prompt,
                                const deg_sample_params *params, int32_t *out_ids,
                                size_t cap, size_t *n_out, deg_gen_stats *stats);

/* As deg_forks_generate / deg_generate, under limits (may be NULL = none):
 * limits->cancel and ->deadline_ms are polled before every decode step and
 * between the prefill passes of deg_generate_ex (max_fields and
 * max_fork_tokens do not apply). A stopped call returns DEG_ERR_CANCELLED or
 * DEG_ERR_LIMIT; n_out[i] / *n_out then count the ids produced so far (they
 * are valid output of the unstopped run). */
DEG_API deg_status deg_forks_generate_ex(deg_fork *const *forks, size_t n_forks,
                                         const deg_sample_params *params,
                                         int32_t *const *out_ids, size_t *n_out,
                                         deg_gen_stats *stats, const deg_run_limits *limits);
DEG_API deg_status deg_generate_ex(const deg_model *model, const int32_t *prompt,
                                   size_t n_prompt, const deg_sample_params *params,
                                   int32_t *out_ids, size_t cap, size_t *n_out,
                                   deg_gen_stats *stats, const deg_run_limits *limits);

/* ------------------------------------------------------------------------ */
/* Speculative decoding (greedy)                                            */
/* ------------------------------------------------------------------------ */

/* Lossless speculative greedy decoding (spec cartridges.md, "Batched
 * self-study": --spec-b, --spec-serve). Each stream drafts up to draft_max
 * tokens from suffix indexes (lib/model/draft.h): its OWN text (seed ids,
 * e.g. its prompt, then every id it emits) and optionally a shared reference
 * (deg_draft_ref: e.g. a cartridge's corpus). The draft is the continuation
 * of the longest suffix of the stream's text found in either (the reference
 * on a tie), if at least min_match long. Every live stream then feeds
 * [last emitted id ++ draft] as one row of a single deg_forks_feed (ragged
 * rows, one weight pass), and the drafts are verified by exact argmax
 * equality, row by row: drafted token j is kept while it equals the argmax
 * of the logits after the tokens before it; at the first mismatch the
 * argmax is emitted instead and the fork is rewound past the rejected
 * drafts (deg_fork_truncate). Rows of one feed are bitwise those of
 * one-token feeds (rows and tokens are batch-invariant: state.h, BLIS row
 * invariance, per-row attention), so the ids are byte-identical to
 * deg_forks_generate with temperature 0, whatever the drafts, the gate or
 * the other streams. Models with recurrent layers cannot rewind a fork: on
 * them nothing is drafted (plain greedy decoding, the same ids).
 *
 * Acceptance gate (per stream; on by default): once gate_window drafted
 * tokens have been verified since drafting (re)started, drafting turns off
 * whenever the acceptance over the last gate_window drafted tokens (kept /
 * drafted; every drafted token counts, the ones after a rejection as not
 * kept) is below gate_min_acceptance; after gate_reprobe ids decoded with
 * drafting off it turns back on with an empty window (the spec's lean gate:
 * 35% over 16 drafted tokens, 32-token re-probe). */
typedef struct deg_draft_ref deg_draft_ref;

/* Index ids[0..n_ids) (ids in [0, n_vocab) of model, which is only read
 * here) as a draft reference: a suffix automaton built once (linear time;
 * about 60 bytes a token), read-only afterwards, so one reference may serve
 * many threads at once. Errors: DEG_ERR_ARG, DEG_ERR_RANGE (bad id, more
 * than 2^30 ids), DEG_ERR_NOMEM. Owned by the caller (deg_draft_ref_free). */
DEG_API deg_status deg_draft_ref_new(const deg_model *model, const int32_t *ids, size_t n_ids,
                                     deg_draft_ref **out);
DEG_API void deg_draft_ref_free(deg_draft_ref *ref);
/* Number of indexed ids (0 for NULL); the ids themselves (borrowed, valid
 * until the reference is freed; NULL when empty). */
DEG_API size_t deg_draft_ref_len(const deg_draft_ref *ref);
DEG_API const int32_t *deg_draft_ref_ids(const deg_draft_ref *ref);

typedef struct deg_spec_params {
    int32_t draft_max;          /* max drafted tokens per verification; default 8, >= 1 */
    int32_t min_match;          /* min suffix match length to draft; default 2, >= 1 */
    int32_t gate;               /* 1 = acceptance gate on (default), 0 = always draft */
    int32_t gate_window;        /* drafted tokens the acceptance is taken over; 16, 1..64 */
    float gate_min_acceptance;  /* off below this acceptance; 0.35, in [0, 1] */
    int32_t gate_reprobe;       /* ids decoded with drafting off before it turns back on;
                                   32, >= 1 */
} deg_spec_params;
DEG_API deg_spec_params deg_spec_default_params(void);

/* Per-stream input: seed_ids[0..n_seed_ids) (borrowed; may be empty) is the
 * stream's text so far (typically its prompt, whose K/V the fork already
 * holds: seeds its own index); ref (borrowed, may be NULL) its reference. */
typedef struct deg_spec_stream {
    const int32_t *seed_ids;
    size_t n_seed_ids;
    const deg_draft_ref *ref;
} deg_spec_stream;

typedef struct deg_spec_stats {
    size_t forwards;        /* feeds the stream took part in */
    size_t drafted;         /* drafted tokens verified */
    size_t accepted;        /* drafted tokens kept */
    size_t gate_offs;       /* times the gate turned drafting off */
} deg_spec_stats;

/* As deg_forks_generate_ex, speculatively. params[i] must be greedy
 * (temperature 0; DEG_ERR_ARG otherwise). streams: n_forks entries. spec
 * NULL = defaults. spec_stats: NULL or n_forks entries. The outputs
 * (out_ids, n_out, stats other than timing, the forks' state afterwards:
 * every generated id but the last fed) are those of deg_forks_generate_ex.
 * Limits are polled before every verification feed. Errors: as
 * deg_forks_generate_ex; DEG_ERR_ARG for bad spec params or a NULL
 * seed_ids with n_seed_ids > 0; DEG_ERR_RANGE for a seed id outside the
 * vocabulary. */
DEG_API deg_status deg_forks_generate_spec(deg_fork *const *forks, size_t n_forks,
                                           const deg_sample_params *params,
                                           const deg_spec_stream *streams,
                                           const deg_spec_params *spec, int32_t *const *out_ids,
                                           size_t *n_out, deg_gen_stats *stats,
                                           deg_spec_stats *spec_stats,
                                           const deg_run_limits *limits);

/* ------------------------------------------------------------------------ */
/* Schema fill: contract (schema compiler, fill plan, parsers, validator)   */
/* Section owned by the deg contract (issue 3).                             */
/* ------------------------------------------------------------------------ */

/* @@DEG_SCHEMA_API@@ (compiler, plan, request/options, context rendering) */

/* A fill plan: the compiled form of a JSON Schema (deg contract §3-§6). Immutable;
 * may be shared across threads. */
typedef struct deg_plan deg_plan;

/* Compile the JSON Schema text [schema_json, +len) (UTF-8 JSON) into a fill plan.
 * Pure: the same text always gives the same plan and fingerprints.
 * On success *out is owned by the caller (deg_plan_free).
 * Errors:
 *  - DEG_ERR_SCHEMA: the schema is invalid for deg (§5) or is not JSON / not UTF-8.
 *    If errors_json != NULL, *errors_json receives every problem found as a JSON
 *    array [{"loc": "<JSON pointer into the schema>", "msg": "..."}, ...], a
 *    NUL-terminated string owned by the caller (deg_free). Malformed JSON gives one
 *    entry with loc "" and the line and column in msg. deg_errmsg() names the count
 *    and the first problem.
 *  - DEG_ERR_ARG (NULL arguments), DEG_ERR_NOMEM.
 * Limits (each an error, never a crash): nesting depth 64 subschemas, 20000 plan
 * nodes, enums of 2..255 values, patterns up to 65536 bytes. */
DEG_API deg_status deg_plan_compile(const char *schema_json, size_t len, deg_plan **out,
                                    char **errors_json);
DEG_API void deg_plan_free(deg_plan *plan);

/* The plan as JSON (format in doc/ARCHITECTURE.md, "Fill plan JSON"): fields, arrays,
 * objects and fingerprints. *out is a NUL-terminated string owned by the caller
 * (deg_free). */
DEG_API deg_status deg_plan_to_json(const deg_plan *plan, char **out);

/* FillPlan.fingerprint: 64 lowercase hex chars, borrowed from the plan. */
DEG_API const char *deg_plan_fingerprint(const deg_plan *plan);

/* Number of leaves (fields) in the plan. */
DEG_API size_t deg_plan_num_fields(const deg_plan *plan);

/* Render a context for reading (§7.1). context_json is JSON text: a JSON string gives
 * its content verbatim; any other JSON value is serialized as Python's
 * json.dumps(value, ensure_ascii=False) does (", " / ": " separators, the given key
 * order, Python float repr). *out is NUL-terminated UTF-8 owned by the caller
 * (deg_free); *out_len (may be NULL) gets its byte length (a string context may
 * contain NUL). Integers of any length are written exactly. Errors: DEG_ERR_REQUEST
 * (malformed JSON, with line and column; NUL in an object key), DEG_ERR_UTF8,
 * DEG_ERR_NOMEM. */
DEG_API deg_status deg_context_render(const char *context_json, size_t len, char **out,
                                      size_t *out_len);

/* Fill options (§9 `options`); deg_fill_options_default() gives the defaults. */

typedef enum deg_array_decode {
    DEG_ARRAY_DECODE_COUNT_PEAKS = 0, /* default */
    DEG_ARRAY_DECODE_THRESHOLD = 1,
    DEG_ARRAY_DECODE_HYBRID = 2
} deg_array_decode;

typedef struct deg_fill_options {
    int32_t max_new_tokens;     /* >= 1; default 256 (per generate field) */
    int64_t max_items;          /* >= 1, or -1 = null (no cap; default) */
    int32_t date_order;         /* a deg_date_order (parsers section): DEG_DATE_ANY
                                   (= null, default), DEG_DATE_MDY, DEG_DATE_DMY */
    int32_t default_offset_minutes; /* "Z" = 0 (default); "+05:30" = 330 */
    int32_t default_offset_is_z;    /* 1 when written "Z" */
    double temperature;         /* >= 0; 0 = greedy (default) */
    int32_t has_seed;           /* 0 = seed null (default) */
    uint64_t seed;
    deg_array_decode array_decode;
    int32_t has_null_margin;    /* 0 = null: the server's default (default) */
    double null_margin;         /* finite, nats */
} deg_fill_options;

DEG_API deg_fill_options deg_fill_options_default(void);

/* Parse an `options` object (JSON text) over the defaults. Unknown options and wrong
 * types are errors: DEG_ERR_REQUEST with *errors_json (may be NULL) as for
 * deg_plan_compile, locs relative to the options object ("/seed"). */
DEG_API deg_status deg_fill_options_parse(const char *options_json, size_t len,
                                          deg_fill_options *out, char **errors_json);

/* A parsed fill request {context, schema, model, options} (§9). */
typedef struct deg_request deg_request;

/* Parse and check a request: every field and option type-checked, unknown fields and
 * options rejected, the schema compiled, the context rendered. *out is owned by the
 * caller (deg_request_free). On DEG_ERR_REQUEST (envelope/options problems, with or
 * without schema problems) or DEG_ERR_SCHEMA (only schema problems), *errors_json
 * (may be NULL) receives all problems as for deg_plan_compile, locs pointing into the
 * request ("/options/seed", "/schema/properties/a/type"). */
DEG_API deg_status deg_request_parse(const char *request_json, size_t len,
                                     deg_request **out, char **errors_json);
DEG_API void deg_request_free(deg_request *request);
/* Borrowed from the request (valid until deg_request_free). */
DEG_API const deg_plan *deg_request_plan(const deg_request *request);
DEG_API const char *deg_request_context(const deg_request *request, size_t *len);
DEG_API const char *deg_request_model(const deg_request *request); /* "deg-latest" if absent */
DEG_API deg_fill_options deg_request_options(const deg_request *request);

/* @@DEG_PARSE_API@@ (parsers, format checks, candidates, validator, acceptor) */

/* Deterministic parsers of the contract (spec §3, §9, §12.3). They only
 * normalize what is written and never invent digits or dates; the exact
 * rules (separators, ambiguous "1,234", date styles, zones) are documented
 * in lib/deg/parse.h. Inputs are UTF-8 byte ranges (not NUL-terminated);
 * span offsets are Unicode code points. Strings returned through char **
 * are NUL-terminated and owned by the caller (deg_free).
 * Common errors: DEG_ERR_ARG (NULL pointer), DEG_ERR_UTF8 (invalid UTF-8,
 * with the byte offset), DEG_ERR_FORMAT (the text is not a value of that
 * kind; the message says why), DEG_ERR_RANGE (well-formed but not
 * admissible: fractional value for an integer, beyond int64, invalid
 * calendar date). */

/* options.date_order (spec §9). ANY = null: an ambiguous numeric date
 * parses only when exactly one reading is a valid calendar date. */
typedef enum deg_date_order {
    DEG_DATE_ANY = 0,
    DEG_DATE_MDY = 1,
    DEG_DATE_DMY = 2
} deg_date_order;

/* A number copied from text ("1,234.5", "1.234,56", "-$5", "45 %", "EUR 3")
 * -> JSON number text in *out_json ("1234.5"). integer_only != 0 for an
 * integer leaf: fractional values are DEG_ERR_RANGE. */
DEG_API deg_status deg_parse_number(const char *text, size_t len, int integer_only,
                                    char **out_json);

/* A date ("5 March 2026", "03/05/2026", "2026-03-05") -> "YYYY-MM-DD" in
 * *out_iso. */
DEG_API deg_status deg_parse_date(const char *text, size_t len, deg_date_order order,
                                  char **out_iso);

/* A date-time ("March 5, 2026 2:30 PM EST") -> RFC 3339 in *out_rfc3339.
 * default_offset ("Z", "+HH:MM", or NULL = a zone must be written) is used
 * when the text has no zone; then *assumed_offset = 1 (may be NULL). */
DEG_API deg_status deg_parse_datetime(const char *text, size_t len, deg_date_order order,
                                      const char *default_offset, char **out_rfc3339,
                                      int *assumed_offset);

/* Format check of the validator: *ok = 1 if text conforms to format
 * ("date", "date-time", "email", "uri", "uuid"), else 0 (invalid UTF-8 is
 * 0). DEG_ERR_ARG for any other format name. */
DEG_API deg_status deg_format_check(const char *format, const char *text, size_t len,
                                    int *ok);

/* Every candidate span a typed leaf could take in the rendered context:
 * kind = "number", "integer", "date", "date-time", "email", "uri" or
 * "uuid". *spans (owned by the caller, deg_free; NULL when none) holds
 * 2 * *n_spans size_t: start0, end0, start1, end1, ... ([start, end) in code
 * points), sorted, no duplicates. */
DEG_API deg_status deg_candidates(const char *kind, const char *text, size_t len,
                                  size_t **spans, size_t *n_spans);

/* Trim [start, end) (code points, end <= length of text) of whitespace and
 * boundary punctuation a token carried in (rule in lib/deg/parse.h). The
 * result may be empty (*out_start == *out_end). DEG_ERR_RANGE if the span
 * is out of bounds. */
DEG_API deg_status deg_span_trim(const char *text, size_t len, size_t start, size_t end,
                                 size_t *out_start, size_t *out_end);

/* Validate a JSON value against a JSON Schema (both NUL-terminated JSON
 * texts), with the keywords the contract supports (lib/deg/validate.h) and
 * the format checks above. DEG_OK when both documents could be read, valid
 * or not: *n_errors = the number of violations and, if errors_json != NULL,
 * *errors_json (owned by the caller, deg_free) = a JSON array of
 * {"instance": <RFC 6901 pointer into the value>, "schema": <pointer into
 * the schema>, "keyword": "...", "msg": "..."} in document order ("[]" when
 * valid). Errors: DEG_ERR_FORMAT (a document is not JSON: line and column
 * in the message), DEG_ERR_SCHEMA (the schema is not a JSON object or
 * boolean, or a subschema is not; a keyword deg does not apply, those
 * deg_plan_compile lists as unsupported (allOf, not, if/then/else,
 * minProperties, prefixItems, ...; const is applied), with its location;
 * a keyword value the validator cannot use: bad pattern, unresolvable or
 * endlessly recursive $ref). Unknown keywords are ignored, as JSON Schema
 * says. */
DEG_API deg_status deg_validate(const char *schema_json, const char *value_json,
                                size_t *n_errors, char **errors_json);

/* Response assembly (spec §8; details in lib/deg/response.h). outcomes_json
 * is the runtime's per-node results:
 *   {"fields": {"<concrete pointer>": {"value": V, "meta": {...}}, ...},
 *    "arrays": {"<concrete pointer>": {"items": n, "dropped": d, "meta": {...}}},
 *    "usage": {"prompt_tokens": n}}
 * (concrete pointer = the leaf's RFC 6901 pointer with integer item indices;
 * a field without "value" is an omitted key). On DEG_OK *response_json =
 * {"value", "meta", "usage", "plan"} as Python's json.dumps writes it, the
 * value checked against the input schema. DEG_ERR_FILL (FillError) when
 * the value violates the schema: no response, and *errors_json (may be
 * NULL) = the violations as deg_validate lists them. DEG_ERR_ARG for
 * malformed outcomes or an outcome no plan node takes. Strings are owned
 * by the caller (deg_free). */
DEG_API deg_status deg_response_assemble(const deg_plan *plan, const char *outcomes_json,
                                         char **response_json, char **errors_json);

/* Constrained-decoding acceptor of a generate leaf (spec §4, §12.3): the
 * leaf's pattern (NUL-terminated, NULL = none; JSON Schema SEARCH semantics,
 * PCRE2 with UTF and UCP), minLength and maxLength in code points
 * (max_length = SIZE_MAX: none). Compiled once (JIT when available); one
 * acceptor is used by one thread at a time (it owns its match data).
 * Errors: DEG_ERR_SCHEMA (pattern does not compile: PCRE2 message and
 * offset), DEG_ERR_RANGE (min_length > max_length). *out owned by the
 * caller (deg_acceptor_free). */
typedef struct deg_acceptor deg_acceptor;
DEG_API deg_status deg_acceptor_new(const char *pattern, size_t min_length,
                                    size_t max_length, deg_acceptor **out);
DEG_API void deg_acceptor_free(deg_acceptor *acc);
/* 1 if the partial text [text, text+len) can still become valid: at most
 * max_length code points and a partial (or complete) match of the pattern
 * searched anywhere, i.e. of (?s:.*?)(?:pattern) anchored at the start. A
 * truncated UTF-8 sequence at the end (a token ending mid-character) is
 * allowed and counts as one more code point. 0 otherwise (also for invalid
 * UTF-8). It does not look ahead at the length budget: a prefix whose
 * shortest completion exceeds max_length is still 1. */
DEG_API int deg_acceptor_prefix_ok(deg_acceptor *acc, const char *text, size_t len);
/* 1 if end-of-text is admissible after [text, text+len): complete valid
 * UTF-8, min_length <= code points <= max_length, and the pattern matches
 * somewhere. */
DEG_API int deg_acceptor_eos_ok(deg_acceptor *acc, const char *text, size_t len);


/* ------------------------------------------------------------------------ */
/* Fill runtime (deg.fill, issue 4): checkpoint, forks, heads, arrays,      */
/* generate phase (deg contract §7, §8, §10, §12.1-§12.3, §12.6).           */
/* ------------------------------------------------------------------------ */

/* @@DEG_FILL_API@@ */

/* A deg checkpoint: a directory holding
 *  - deg.json: {"format": "deg-ckpt-v1", "backbone": {"file", "sha256", "arch",
 *    "path"}, "head_dim": 256, "heads": {name: shape}, "calibration": {"choice",
 *    "score", "noul", "extract", "count": temperature}, "array_mode": "index" |
 *    "anchor", "anchor_min_tokens", "chat_layout": "chatml" | "qwen3" | "none",
 *    "key_prior": null | {"exact": x, "partial": y} (optional; see below),
 *    "span_single_line": bool (optional, default false),
 *    optional "lora": LoRA adapters of the fork rows, see lora.h};
 *  - heads.safetensors: the fp32 heads of §12.3 (names and shapes in
 *    lib/deg/fill.h).
 * The backbone is referenced by file name + SHA-256 (of the GGUF file, or of
 * config.json and the *.safetensors files of an HF directory). A checkpoint
 * loaded by deg_ckpt_load owns its model; deg_ckpt_open can run it over an
 * already loaded model instead (deg_ckpt_params.model). Not thread-safe: one
 * fill at a time per handle.
 *
 * Arrays (§12.6): "index" mode sizes every array with the count head and
 * addresses items as "ITEM i of"; "anchor" mode (for contexts of at least
 * anchor_min_tokens tokens; 0 = always) anchors every array whose items hold
 * an extract leaf: the anchor head marks where items start in the array's
 * region, options.array_decode picks the rule (threshold / count_peaks
 * (default) / hybrid), item forks carry locators instead of ordinals, and
 * the array's meta gets "array_mode": "anchor" and "anchors" (code-point
 * offsets where the surviving items start). A top-level region with fewer
 * usable positions than minItems is a FillError; a nested one drops its
 * enclosing item (reported as "dropped" like any drop).
 *
 * Key prior (deg.json "key_prior", absent = off; lib/deg/keyprior.h): a
 * context line "Key: value" (also "key = value", "| key | value |",
 * "**Key:** value") whose normalised key equals the leaf's property name or
 * title adds `exact` (words of one within the other's: `partial`) logit units,
 * before the calibration temperature, to the outcomes the value supports: the
 * extract start/end of the value (typed fields: of each grammar candidate in
 * it), a choice option written in the value, noul true/false for a yes/no
 * value. Leaves inside arrays get none.
 *
 * span_single_line: plain-string spans (no format) never hold a line break
 * between their first and last non-blank characters (no gold plain span of
 * the datagen v1/v2 training data does; off, an unsure end pointer runs
 * over the next lines). */
typedef struct deg_ckpt deg_ckpt;

/* Write a fresh checkpoint to dir (created if missing; files replaced) for the
 * backbone at model_path, heads initialised uniformly in +-1/sqrt(n_embd) from
 * xoshiro256** streams seeded by (seed, tensor), biases 0, anchor.b = -6,
 * calibration temperatures 1, array_mode "index". What training starts from.
 * Errors: as deg_model_load, DEG_ERR_IO (dir), DEG_ERR_NOMEM. */
DEG_API deg_status deg_ckpt_create_random(const char *model_path, uint64_t seed, const char *dir);

/* Load a checkpoint. model_path NULL = resolve the backbone: the path
 * recorded in deg.json, else deg.json's file name next to the checkpoint,
 * else in ${DEG_CACHE:-~/.cache/deg}/models. Errors: DEG_ERR_IO (missing
 * files, backbone not found), DEG_ERR_FORMAT (bad deg.json / tensors),
 * DEG_ERR_MISMATCH (the backbone's SHA-256 differs from deg.json's, or a head
 * tensor's shape does not fit the backbone), DEG_ERR_NUMERIC (NaN/Inf heads),
 * DEG_ERR_NOMEM. *out owned by the caller (deg_ckpt_free). */
DEG_API deg_status deg_ckpt_load(const char *dir, const char *model_path, deg_ckpt **out);
DEG_API void deg_ckpt_free(deg_ckpt *ckpt);

/* Loading options of deg_ckpt_open, in the llama.h style: start from
 * deg_ckpt_default_params() and set what you need (fields added later get
 * defaults there, so callers keep working). */
typedef struct deg_ckpt_params {
    /* The backbone to run on, already loaded (borrowed). NULL (default): the
     * checkpoint loads its own backbone (model_path, else resolved as
     * deg_ckpt_load does) and frees it in deg_ckpt_free. Non-NULL: the
     * checkpoint runs on this model and never frees it; the caller keeps the
     * model alive until deg_ckpt_free of every checkpoint opened over it
     * (the rule of trunks and cartridges), so one process holds one copy of
     * the weights for any number of checkpoints, cartridges and trunks. The
     * file or directory the model was loaded from must be the checkpoint's
     * backbone (its SHA-256 is checked: DEG_ERR_MISMATCH). A model is
     * immutable, so checkpoints over one model may fill on different threads;
     * one checkpoint still runs one fill at a time. */
    const deg_model *model;
    /* Backbone file/directory when model is NULL (borrowed, read during the
     * call); NULL = resolve from deg.json (deg_ckpt_backbone_path). */
    const char *model_path;
    /* Default of options.null_margin (§9: "null = the server's
     * --null-margin"): with has_null_margin = 1, requests whose null_margin
     * is null use this value (finite, nats); 0 (default): they use 0. */
    int32_t has_null_margin;
    double null_margin;
    /* Fork batch memory budget in bytes (deg_ckpt_set_fork_budget);
     * 0 = the default 256 MiB, else >= 1 MiB. */
    size_t fork_budget_bytes;
} deg_ckpt_params;

/* Defaults: model NULL, model_path NULL, no null_margin default (0),
 * fork_budget_bytes 0 (256 MiB). */
DEG_API deg_ckpt_params deg_ckpt_default_params(void);

/* Load the checkpoint in dir with params (NULL = deg_ckpt_default_params()).
 * deg_ckpt_load(dir, path, out) is deg_ckpt_open with model_path = path.
 * Errors: as deg_ckpt_load; DEG_ERR_ARG (non-finite null_margin,
 * fork_budget_bytes in (0, 1 MiB)); DEG_ERR_MISMATCH when params->model was
 * loaded from another backbone. *out owned by the caller (deg_ckpt_free,
 * which frees the model only if the checkpoint loaded it). */
DEG_API deg_status deg_ckpt_open(const char *dir, const deg_ckpt_params *params,
                                 deg_ckpt **out);

/* The backbone path the checkpoint in dir resolves to without a model_path:
 * the path recorded in deg.json, else deg.json's file name next to the
 * checkpoint, else in ${DEG_CACHE:-~/.cache/deg}/models (the first that
 * exists; not hashed here). *out is NUL-terminated, owned by the caller
 * (deg_free). Errors: DEG_ERR_IO (deg.json unreadable, backbone not found),
 * DEG_ERR_FORMAT (bad deg.json), DEG_ERR_NOMEM. */
DEG_API deg_status deg_ckpt_backbone_path(const char *dir, char **out);
/* The checkpoint's backbone (borrowed, valid until deg_ckpt_free). */
DEG_API const deg_model *deg_ckpt_model(const deg_ckpt *ckpt);
/* Memory budget of one fork batch in bytes (default 256 MiB; >= 1 MiB): fork
 * rows are grouped into deg_forks_feed batches of at most this many bytes of
 * K/V + hidden states (a single larger fork still runs alone). */
DEG_API deg_status deg_ckpt_set_fork_budget(deg_ckpt *ckpt, size_t bytes);
/* Debug/test switch: with on != 0 every field's meta gets "raw" (SHA-256 hex
 * of the field's raw fp32 head outputs), every generate field's meta
 * "token_ids" (the tokens it decoded, the stop token left out) and
 * "dropped_bytes" (bytes of a final character cut by the last token, dropped
 * from the value: deg contract §12.3), and the response gets "timing"
 * {prefill_s, forks_s, generate_s, fork_rows, fork_tokens}. */
DEG_API deg_status deg_ckpt_set_debug(deg_ckpt *ckpt, int on);

/* Fill one request (§9 JSON: {"context", "schema", "model", "options"}) and
 * return the §8 response JSON ({"model", "value", "meta", "usage", "plan"})
 * in *response_json (owned by the caller, deg_free). On failure
 * *errors_json (may be NULL; owned by the caller) is a JSON array of
 * {"loc", "msg"} (request/schema problems: the 422 list; fill problems:
 * FillError reasons or validator violations). Errors: DEG_ERR_REQUEST
 * (malformed request, unknown fields/options, empty context, temperature > 0
 * without seed), DEG_ERR_SCHEMA (invalid schema), DEG_ERR_FILL (FillError: a
 * required non-nullable value not in the context, minItems not met, a
 * generate constraint that cannot be met within the budget), DEG_ERR_UTF8,
 * DEG_ERR_NOMEM.
 * Long contexts (§12.1): no cap; the trunk is prefilled in 256-token passes
 * (scratch bounded by the pass, plus one score row of the context length per
 * thread), so peak memory = weights + context K/V + context hidden states +
 * one fork batch (bench/bench_fill measures it). A trunk longer than the
 * backbone's trained positions (n_ctx_train) is read whole, never truncated,
 * and the response says so: meta[""] = {"mode": "document", "warnings":
 * ["context: N prompt tokens exceed the backbone's T trained positions; ..."]}
 * (the spec is silent; "" is the document's own pointer).
 * Values: a plain string is the context's text at its span, verbatim (control
 * characters inside it, NUL included, are kept: the response JSON writes
 * \u0000; only its ends are trimmed, deg_span_trim); a generate value never
 * ends inside a UTF-8 character (a character the token budget cut is dropped:
 * contract §12.3). */
DEG_API deg_status deg_fill(deg_ckpt *ckpt, const char *request_json, size_t len,
                            char **response_json, char **errors_json);

/* Fill n requests with their fork rows in the same batches; each request's
 * result equals deg_fill's (bitwise, §10). responses[i] / errors[i] (errors
 * may be NULL) / statuses[i] per request. Returns DEG_OK if every request
 * succeeded, else the first failing request's status (a runtime failure such
 * as DEG_ERR_NOMEM fails all). */
DEG_API deg_status deg_fill_many(deg_ckpt *ckpt, size_t n, const char *const *requests,
                                 const size_t *lens, char **responses, char **errors,
                                 deg_status *statuses);

/* deg_fill / deg_fill_many under work limits (deg_run_limits; NULL = none).
 * deg_fill_many_ex takes one limits struct per request (limits may be NULL,
 * and so may limits[i].cancel): a request that is cancelled or reaches a
 * limit fails alone with DEG_ERR_CANCELLED / DEG_ERR_LIMIT (statuses[i],
 * errors[i] = [{"loc": "", "msg": why}]) and its forks stop running; the
 * others go on and their results are unchanged (bitwise, §10). The request's
 * options "deadline_ms" / "max_fields" / "max_fork_tokens" (integers >= 1 or
 * null) apply too, the tighter value winning. Checked: before the trunk
 * prefill and between the layers of its 256-token passes, between fill
 * rounds and fork batches (a batch whose requests have all stopped is cut
 * at its next layer), before every generate decode step. */
DEG_API deg_status deg_fill_ex(deg_ckpt *ckpt, const char *request_json, size_t len,
                               const deg_run_limits *limits, char **response_json,
                               char **errors_json);
DEG_API deg_status deg_fill_many_ex(deg_ckpt *ckpt, size_t n, const char *const *requests,
                                    const size_t *lens, const deg_run_limits *limits,
                                    char **responses, char **errors, deg_status *statuses);

/* ------------------------------------------------------------------------ */
/* Training (deg.train, issue 6): features of the frozen backbone, head     */
/* parameters, losses and gradients, calibration, saving (deg contract      */
/* §12.3, §12.4). The Python driver is bindings/python/deg/train/.          */
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

#endif /* DEG_H */
