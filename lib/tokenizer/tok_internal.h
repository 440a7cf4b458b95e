/* Private layout of dg_tokenizer, shared by the loaders (tokenizer.json,
 * GGUF), the builder, the pre-tokenizer and the encoder. Nothing here is
 * visible outside lib/tokenizer.
 *
 * Model: byte-level BPE as in Hugging Face `tokenizers` (models/bpe) with the
 * GPT-2 byte-to-unicode alphabet. Token strings in tokenizer.json / GGUF are
 * spelled in that alphabet ("Ġthe" = " the"); we store every token as its raw
 * bytes and run BPE on token ids, never on spelled strings. */
#ifndef DG_TOKENIZER_TOK_INTERNAL_H
#define DG_TOKENIZER_TOK_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "deg.h"
#include "tokenizer/tokenizer.h"

#define DG_TOK_NO_RANK UINT32_MAX

/* Per-id flags. */
enum {
    DG_TOKF_PRESENT = 1, /* the id has a token string */
    DG_TOKF_ADDED = 2,   /* an added token (matched whole in the text) */
    DG_TOKF_SPECIAL = 4, /* an added token marked special (control) */
};

typedef struct dg_tok_entry {
    uint32_t off;  /* into dg_tokenizer.bytes */
    uint32_t len;
    uint8_t flags;
} dg_tok_entry;

/* An added token (tokenizer.json "added_tokens", GGUF control/user-defined
 * tokens). content is matched verbatim in the input text. */
typedef struct dg_tok_added {
    uint32_t off;  /* content into dg_tokenizer.added_bytes */
    uint32_t len;
    int32_t id;
    uint8_t special, lstrip, rstrip, single_word, normalized;
} dg_tok_added;

typedef enum dg_pre_kind {
    DG_PRE_SPLIT,       /* Split / Digits / ByteLevel's GPT-2 regex */
    DG_PRE_PREFIX_SPACE /* ByteLevel add_prefix_space */
} dg_pre_kind;

/* tokenizers SplitDelimiterBehavior. */
typedef enum dg_split_behavior {
    DG_SPLIT_REMOVED,
    DG_SPLIT_ISOLATED,
    DG_SPLIT_MERGED_PREV,
    DG_SPLIT_MERGED_NEXT,
    DG_SPLIT_CONTIGUOUS
} dg_split_behavior;

typedef struct dg_pre_step {
    dg_pre_kind kind;
    dg_split_behavior behavior;
    int invert;
    pcre2_code *re;
} dg_pre_step;

typedef enum dg_tok_normalizer { DG_NORM_NONE = 0, DG_NORM_NFC = 1 } dg_tok_normalizer;

typedef struct dg_merge_slot {
    uint64_t key;   /* (left id << 32) | right id; UINT64_MAX = empty */
    uint32_t rank;
    int32_t id;     /* id of the merged token */
} dg_merge_slot;

struct dg_tokenizer {
    int32_t n_vocab;          /* max id + 1 over vocab and added tokens */
    dg_tok_entry *tok;        /* [n_vocab] (cap tok_cap while building) */
    size_t tok_cap;
    char *bytes;              /* raw bytes of every token (decode form) */
    size_t bytes_len, bytes_cap;

    /* raw bytes -> id of the BPE-reachable vocabulary; open addressing,
     * -1 = empty. */
    int32_t *vhash;
    size_t vhash_mask;
    uint8_t *reachable;       /* [n_vocab] 1 if spelled in the byte alphabet */

    dg_merge_slot *merges;
    size_t merge_mask;
    size_t n_merges;

    /* Id of the single-byte token of each byte, -1 if the vocabulary has
     * none (SmolLM2 lacks e.g. 0x04 and 0xF5..0xFF). tokenizers silently
     * drops such bytes; we refuse the text instead (DEG_ERR_UNSUPPORTED). */
    int32_t byte_id[256];
    int missing_bytes;        /* some byte_id is -1 */

    dg_tok_added *added;
    size_t n_added, added_cap;
    char *added_bytes;
    size_t added_bytes_len, added_bytes_cap;
    /* Added tokens indexed by first byte, longest first (for leftmost-
     * longest matching): added_order[added_first[b] .. added_first[b+1]). */
    uint32_t *added_order;
    uint32_t added_first[257];

    pcre2_code *word_re;      /* \w, for single_word added tokens (else NULL) */

    dg_pre_step *pre;
    size_t n_pre, cap_pre;
    dg_tok_normalizer normalizer;
    int ignore_merges;

    int32_t bos, eos, pad;
    int add_bos;
};

/* ---- builder (build.c) ------------------------------------------------ */

/* New empty tokenizer (bos/eos/pad = -1). */
deg_status dg_tokb_new(dg_tokenizer **out);
/* Map a spelled token string (GPT-2 alphabet) to raw bytes: if every
 * character is in the byte alphabet, the bytes it spells; otherwise the
 * string's own UTF-8 (the rule of tokenizers' ByteLevel decoder). out needs
 * room for len bytes. Returns the raw length; *spelled = 1 if the alphabet
 * applied. */
size_t dg_tok_unspell(const char *s, size_t len, char *out, int *spelled);
/* Append the GPT-2 spelling of raw bytes (for diagnostics): out needs
 * 2*len+1 bytes; NUL-terminated. */
void dg_tok_spell(const char *raw, size_t len, char *out);
/* Set token id to raw bytes. reachable: BPE can produce it (spelled in the
 * byte alphabet). A later reachable entry with the same bytes wins the
 * bytes->id lookup, as in a Python dict built in order. */
deg_status dg_tokb_set_token(dg_tokenizer *t, int32_t id, const char *raw, size_t len,
                             int reachable);
/* Call after all vocabulary tokens are set: builds the lookup hash and the
 * byte table. */
deg_status dg_tokb_vocab_done(dg_tokenizer *t);
/* Merge rank `rank` of two spelled strings. DEG_ERR_FORMAT if a part or the
 * merged string is not in the vocabulary (as tokenizers' BPE builder). A
 * later duplicate pair overrides the earlier one. */
deg_status dg_tokb_add_merge(dg_tokenizer *t, const char *a, size_t alen, const char *b,
                             size_t blen, uint32_t rank);
/* Added token: content (verbatim text) with its flags. Sets the id's decode
 * bytes to unspell(content) and flags ADDED (+SPECIAL). */
deg_status dg_tokb_add_added(dg_tokenizer *t, int32_t id, const char *content, size_t len,
                             int special, int lstrip, int rstrip, int single_word,
                             int normalized);
/* Pre-tokenizer steps. */
deg_status dg_tokb_pre_regex(dg_tokenizer *t, const char *pattern, size_t len, int literal,
                             dg_split_behavior behavior, int invert);
deg_status dg_tokb_pre_bytelevel(dg_tokenizer *t, int add_prefix_space, int use_regex);
deg_status dg_tokb_pre_digits(dg_tokenizer *t, int individual);
/* Final checks and indexes (added-token matcher). */
deg_status dg_tokb_finish(dg_tokenizer *t);
/* Id of a spelled vocabulary string, -1 if absent. */
int32_t dg_tok_lookup_spelled(const dg_tokenizer *t, const char *s, size_t len);
/* Id of raw bytes in the BPE vocabulary, -1 if absent. */
int32_t dg_tok_lookup_raw(const dg_tokenizer *t, const char *s, size_t len);

/* ---- BPE (bpe.c) ------------------------------------------------------- */

typedef struct dg_bpe_scratch dg_bpe_scratch;
void dg_bpe_scratch_free(dg_bpe_scratch *s);
/* Append the BPE ids of one pre-token word (raw bytes, len >= 1) to *out
 * (growable: *out, *n, *cap). */
deg_status dg_bpe_word(const dg_tokenizer *t, dg_bpe_scratch **scratch, const char *w,
                       size_t len, int32_t **out, size_t *n, size_t *cap);

/* ---- NFC (nfc.c) ------------------------------------------------------------ */

/* 1 if NFC could change valid UTF-8 s[0..len) (it has a code point that
 * decomposes, has a non-zero combining class or composes with a neighbour). */
int dg_tok_nfc_needed(const char *s, size_t len);
/* NFC of valid UTF-8 s[0..len) into *buf (growable, *cap bytes). */
deg_status dg_tok_nfc(const char *s, size_t len, char **buf, size_t *cap, size_t *out_len);

/* GPT-2 pre-tokenizer regex (tokenizers' ByteLevel use_regex = true). */
extern const char dg_tok_gpt2_regex[];
/* Llama-3 and Qwen2 split regexes (transformers' GGUF converter and the
 * models' tokenizer.json). */
extern const char dg_tok_llama3_regex[];
extern const char dg_tok_qwen2_regex[];
extern const char dg_tok_qwen35_regex[];

#endif
