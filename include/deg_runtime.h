/*
 * deg_runtime.h - the runtime of libdeg (public C API): status codes and
 * messages, version and settings, work limits and cancellation, models,
 * tokenizers and chat layouts, trunks and forks, generation.
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
#ifndef DEG_RUNTIME_H
#define DEG_RUNTIME_H

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
 * count. Example: {"version":"0.2.0","blas":"BLIS 0.9.0","blas_arch":"zen3",
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

/* Default limits (the work one call can cause is bounded unless the caller
 * lifts a limit). deg_run_limits_default() holds them, and every call
 * given no limits (deg_fill, deg_fill_many, deg_generate, deg_forks_generate,
 * the *_ex forms with limits NULL) runs under them.
 *  - DEG_DEFAULT_DEADLINE_MS, 600,000 ms = 10 min per request: the one
 *    measure that bounds every phase (context prefill, fork rounds, generate)
 *    whatever the model and the machine. The caps below alone allow hours: a
 *    fill of 2^20 fork tokens is ~1 h of SmolLM2-135M on one core, and a
 *    context's prefill grows with the square of its length (a 30,000-token
 *    context did not finish in 290 s). A normal fill is far below it: 20
 *    fields over a 4,000-token context took 29 s on 2 idle cores (bench/README
 *    "bench_fill"), so 10 min leaves ~20x for a loaded machine. In
 *    deg_fill_many_ex a request whose deadline_ms is the default gets it
 *    times the call's number of requests (they share the call's passes).
 *    A deadline_ms equal to this value counts as the default.
 *  - DEG_DEFAULT_MAX_FIELDS 4096 instantiated fields and
 *    DEG_DEFAULT_MAX_FORK_TOKENS 2^20 fork tokens (256 per field at the
 *    field cap): deterministic caps, checked before the work they count (an
 *    array item of 3,002 fields x 5 items, within every schema limit, ran
 *    116 s on a 2-layer tiny model, hours on SmolLM2).
 *  - DEG_MAX_FORK_LEN: the most tokens ONE fork may hold while a fork-token
 *    cap is set (a fork's attention work grows with the square of its
 *    length: an item of 4,000 fields makes a count fork of ~32k tokens,
 *    minutes of CPU in one fork); 8192 = SmolLM2's trained context.
 * A limit's DEG_ERR_LIMIT message names it, says whether it is the default,
 * the caller's or the request's, and how to lift it ("; to lift it: " + the
 * C field and the Python keyword). */
#define DEG_DEFAULT_DEADLINE_MS 600000
#define DEG_DEFAULT_MAX_FIELDS 4096
#define DEG_DEFAULT_MAX_FORK_TOKENS 1048576
#define DEG_MAX_FORK_LEN 8192

/* Limits of one call (params struct; start from deg_run_limits_default()).
 * 0 = no limit in every field (set explicitly: the defaults have caps).
 *  - deadline_ms: wall-clock budget from the call's start (CLOCK_MONOTONIC),
 *    polled where the cancel token is; past it the call returns
 *    DEG_ERR_LIMIT ("deadline of N ms passed during <phase>; to lift it: ...").
 *  - max_fields (fill only): cap on instantiated fields of one request, i.e.
 *    leaves created for every array item plus array instances (the work of a
 *    fill grows with it: one fork per instantiated field). Checked before
 *    any work (the prefill included) against the fields the schema
 *    instantiates at the least: every field once per item its enclosing
 *    arrays' minItems require (an array's item fields at least once: a count
 *    fork lists every field of its item) + one instance per array and
 *    enclosing item; then per item as items are instantiated; exceeding it
 *    is DEG_ERR_LIMIT before the forks of that item run.
 *  - max_fork_tokens (fill only): cap on the tokens one request feeds to
 *    forks (every fork's prompt tokens plus generated tokens), checked before
 *    the prefill against the first round's forks (every top-level field's
 *    fork and array's count fork: their texts are known from the schema),
 *    then before each round / decode step runs: DEG_ERR_LIMIT. While it is
 *    set (not 0), a single fork's prompt may not exceed DEG_MAX_FORK_LEN
 *    tokens either (checked at the same points; 0 lifts both).
 * Fill requests may also set "deadline_ms", "max_fields", "max_fork_tokens"
 * in their options (§9 extension); the tighter of the two applies. */
typedef struct deg_run_limits {
    deg_cancel *cancel;       /* borrowed; NULL = not cancellable */
    int64_t deadline_ms;      /* >= 0 */
    int64_t max_fields;       /* >= 0 */
    int64_t max_fork_tokens;  /* >= 0 */
} deg_run_limits;

/* Defaults: no token, deadline_ms DEG_DEFAULT_DEADLINE_MS, max_fields
 * DEG_DEFAULT_MAX_FIELDS, max_fork_tokens DEG_DEFAULT_MAX_FORK_TOKENS (set a
 * field to 0 for no limit). A call given no limits (NULL) runs under these
 * defaults. */
DEG_API deg_run_limits deg_run_limits_default(void);

/* ------------------------------------------------------------------------ */
/* Model                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct deg_model deg_model;

/* Architecture hyper-parameters and special tokens of a loaded model. */
typedef struct deg_model_info {
    const char *arch;       /* "llama", "qwen3", "lfm2", "qwen3_5_text", "gemma4_text"
                               (static string) */
    const char *name;       /* model name from the file's metadata, or "" */
    int32_t n_vocab;        /* vocabulary size = logits row length */
    int32_t n_embd;         /* hidden size */
    int32_t n_layer;
    int32_t n_head;         /* query heads */
    int32_t n_head_kv;      /* key/value heads (GQA groups = n_head / n_head_kv) */
    int32_t head_dim;       /* n_head_kv and head_dim are the model's default layer's;
                               Gemma 4's full-attention layers have their own (a
                               cartridge layer's row: deg_cartridge_row_len) */
    /* n_ff: Gemma 4's KV-sharing layers may be twice as wide (use_double_wide_mlp) */
    int32_t n_ff;           /* MLP intermediate size */
    int32_t n_ctx_train;    /* context length the model was trained with */
    float rope_theta;       /* RoPE base of the default layer (Gemma 4: the sliding ones) */
    float rms_eps;
    int32_t tied_lm_head;   /* 1 if the LM head is the token embedding */
    int32_t bos_id;         /* -1 if none */
    int32_t eos_id;         /* end of turn / end of text; -1 if none */
    const char *chat_layout;/* "chatml", "qwen3" (ChatML, thinking off), "lfm2" (ChatML
                               after <|startoftext|>), "gemma4" (<|turn> turns, thinking
                               off), "none" */
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
 *     f32 reference (the goldens; the tests comparing against them load f32).
 *   DEG_WEIGHTS_NATIVE: kept in the file's dtype (Q4_0, Q4_1, Q8_0, Q4_K,
 *     Q6_K, Q5_0, Q5_1, F16, BF16), borrowed from the mapped file (resident
 *     weights ~ the file size); products quantize each activation row to 8
 *     bits per block of 32 and use integer block dot products (F16, BF16,
 *     Q5_0, Q5_1: f32 dots): llama.cpp's numerics.
 *     Logits differ from the f32 path by the activation rounding (bounded in
 *     lib/tensor/qdot.h; SmolLM2 Q4_1: max |dlogit| 2.46 over the golden
 *     prompts, and like llama.cpp on the same file it flips near-ties); every
 *     row is still bitwise independent of the other rows and of the thread
 *     count. f32 tensors stay f32.
 *     The default (issue 15): about twice native-f32act's decode speed on
 *     one thread, with the fill's held-out accuracy and the cartridge gap
 *     closure unchanged (doc/ARCHITECTURE.md, "Numerics", has the figures).
 *   DEG_WEIGHTS_NATIVE_F32ACT: weights kept as with DEG_WEIGHTS_NATIVE
 *     (resident ~ the file size), activations kept in f32 (weight-only
 *     quantization): each product dequantizes a few weight rows at a time
 *     to the exact values DEG_WEIGHTS_F32 holds and takes f32 dots
 *     (lib/tensor/fdot.h), so logits are the f32 path's up to f32 summation
 *     order (SmolLM2 Q4_1: max |dlogit| vs f32 6.1e-5 over the golden
 *     prompts; no activation rounding); rows bitwise independent as above.
 *     The f32 answers at the quantized file's memory.
 *   DEG_WEIGHTS_DEFAULT: the environment variable DEG_WEIGHTS ("f32",
 *     "native" or "native-f32act") if set and not empty, else
 *     DEG_WEIGHTS_NATIVE. f32 tensors (e.g. an f32 safetensors
 *     directory) stay f32 in every mode. */
#define DEG_WEIGHTS_DEFAULT 0
#define DEG_WEIGHTS_F32 1
#define DEG_WEIGHTS_NATIVE 2
#define DEG_WEIGHTS_NATIVE_F32ACT 3

/* Loading options of deg_model_load_with_params (llama.h style: start from
 * deg_model_default_params()). */
typedef struct deg_model_params {
    int32_t weights;   /* DEG_WEIGHTS_* (default DEG_WEIGHTS_DEFAULT) */
} deg_model_params;

DEG_API deg_model_params deg_model_default_params(void);
/* deg_model_load with params (NULL = defaults). Errors: as deg_model_load;
 * DEG_ERR_ARG for an unknown weights value or DEG_WEIGHTS set to something
 * other than "f32" / "native" / "native-f32act". */
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
 * thinking disabled for Qwen3; LFM2's ChatML after <|startoftext|>), ending with the assistant turn header when
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

/* As deg_forks_generate / deg_generate, under limits (may be NULL: the
 * defaults, i.e. no token and the default deadline DEG_DEFAULT_DEADLINE_MS;
 * deg_forks_generate / deg_generate run under the same defaults):
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

/* Step-wise speculative streams, for serving loops that decode a step at a
 * time and must see every id as it comes (deg serve --spec-serve: its chat
 * engine decodes all streams in lockstep and checks stop strings between
 * steps). A deg_spec_state carries one greedy stream's draft sources (its
 * own text's index, its matching statistics in ref) and its acceptance gate
 * from call to call; each deg_forks_spec_step is ONE round of
 * deg_forks_generate_spec (draft, one ragged feed, exact argmax
 * verification, rewind), so the ids a stream emits over its calls are those
 * of greedy decoding, byte for byte.
 *
 * text[0..n_text) (n_text >= 1; copied) is the stream's text so far; its
 * LAST id is the CARRY: emitted, not yet fed, and the fork's K/V end right
 * before it (e.g. the prompt fed, the first id picked from its logits).
 * ref: borrowed (must outlive the state), may be NULL. spec NULL = defaults.
 * stop_ids as deg_sample_params' (NULL = the model's stops; else exactly
 * these n_stop_ids, copied). Errors: DEG_ERR_ARG, DEG_ERR_RANGE (an id
 * outside the vocabulary), DEG_ERR_NOMEM. Owned by the caller. */
typedef struct deg_spec_state deg_spec_state;
DEG_API deg_status deg_spec_state_new(const deg_model *model, const int32_t *text, size_t n_text,
                                      const deg_draft_ref *ref, const deg_spec_params *spec,
                                      const int32_t *stop_ids, size_t n_stop_ids,
                                      deg_spec_state **out);
DEG_API void deg_spec_state_free(deg_spec_state *state);
/* The state's counters over all its calls. */
DEG_API deg_spec_stats deg_spec_state_stats(const deg_spec_state *state);
/* 1 once the stream emitted a stop id (or for NULL); then it takes no step. */
DEG_API int deg_spec_state_done(const deg_spec_state *state);

/* One round for n streams (forks[i] with states[i]; all states with the
 * same spec params): each feeds [carry ++ draft] as one row of a single
 * deg_forks_feed and emits into out_ids[i] (room for draft_max + 1 ids)
 * *n_out[i] >= 1 ids: the kept drafts and the argmax after them, stopping
 * after a stop id or at max_ids[i] (>= 1) ids. The last emitted id is the
 * new carry; the fork then holds the old carry and every emitted id but the
 * last (rejected drafts rewound). After a stop id the state is done.
 * Errors: DEG_ERR_ARG (NULL, max_ids < 1, a fork or state listed twice,
 * states with different spec params), DEG_ERR_MISMATCH (a state of another
 * model), DEG_ERR_STATE (a done state), and those of deg_forks_feed (then
 * the forks' and states' contents are unspecified: free them). */
DEG_API deg_status deg_forks_spec_step(deg_fork *const *forks, size_t n,
                                       deg_spec_state *const *states, const int32_t *max_ids,
                                       int32_t *const *out_ids, size_t *n_out);

/* Plain rows riding in a speculative round's weight pass
 * (deg_forks_spec_step_ex): fork forks[j] (j < n) is fed ids[j][0..n_ids[j])
 * (n_ids[j] may be 0) as one more row of the round's single
 * deg_forks_feed; no logits are returned here, the fork keeps its last row
 * as after deg_forks_feed (deg_fork_logits, or deg_forks_generate_ex with
 * max_tokens 1, which samples without another feed). All borrowed. */
typedef struct deg_feed_rows {
    deg_fork *const *forks;
    size_t n;
    const int32_t *const *ids;
    const size_t *n_ids;
} deg_feed_rows;

/* deg_forks_spec_step plus plain rows (may be NULL = none) in the same
 * weight pass: a serving step with sampled streams (their pending id fed
 * here, then sampled) and speculative streams costs one pass over the
 * weights, not two. Every row's numbers are those of separate calls
 * (deg_forks_feed rows are independent, bitwise). n may be 0 (then only
 * the plain rows are fed). Errors: as deg_forks_spec_step; DEG_ERR_ARG
 * also for a plain row's NULL fork or ids, or a fork listed twice (among
 * the plain rows or the speculative ones). */
DEG_API deg_status deg_forks_spec_step_ex(deg_fork *const *forks, size_t n,
                                          deg_spec_state *const *states, const int32_t *max_ids,
                                          int32_t *const *out_ids, size_t *n_out,
                                          const deg_feed_rows *plain);

#ifdef __cplusplus
}
#endif

#endif /* DEG_RUNTIME_H */
