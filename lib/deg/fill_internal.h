/* fill_internal.h - the state and steps shared by the deg.fill runtime's own files
 * (lib/deg/fill*.c); the runtime's outside is fill.h and include/deg_fill.h.
 *
 * Files (each a step of deg_fill, see the overview in fill.c):
 *   fill.c           entry points (deg_fill*, request preparation, the fill's round
 *                    callbacks, checks after the rounds)
 *   fill_state.c     per-request state: token lists, instances, leaves, jobs, failures,
 *                    work limits
 *   fill_trunk.c     the context trunk (§12.1) and its token <-> code point maps
 *   fill_forks.c     fork texts (§12.1) and the expansion of a round's jobs
 *   fill_rounds.c    fork batches and the one round loop (fill and trace)
 *   fill_decide.c    decide-head decoding (choice, score, noul) + key prior
 *   fill_extract.c   extract-head decoding (spans, candidates, null decision)
 *   fill_extract_keys.c  the key prior's start/end bonuses of an extract leaf
 *   fill_arrays.c    counts, anchors (§12.6), drops, renumbered pointers
 *   fill_columns.c   the column each free property of a table's records reads, and
 *                    the headerless cells spans outside them keep to
 *   fill_generate.c  the generate phase (§7.3)
 *   fill_response.c  response assembly (§8)
 *   fill_trace.c     the training trace (dg_fill_trace)
 */
#ifndef DG_DEG_FILL_INTERNAL_H
#define DG_DEG_FILL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/run.h"
#include "deg.h"
#include "deg/fill.h"
#include "deg/keyprior.h"
#include "deg/lists.h"
#include "deg/plan.h"
#include "model/chat.h"

/* Growable int32 token list. */
typedef struct ivec {
    int32_t *p;
    size_t n, cap;
} ivec;

typedef struct inst {       /* one array instance */
    int array;              /* plan->arrays index */
    int parent;             /* enclosing instance, -1 = top level */
    size_t parent_item;
    size_t *idx;            /* original item indices of the enclosing items, outermost first */
    size_t n_idx;
    int64_t n_items;        /* decided count */
    char *alive;            /* [n_items] */
    size_t *newidx;         /* [n_items] index after dropping */
    int64_t n_alive;
    /* §12.6 anchor mode: the items are the anchors found in the region */
    int anchored;
    int list1;              /* list prior: 1 + the matched list of r->lists, 0 = none */
    int from_list;          /* the anchors are the list's items: item i = list item list_idx[i] */
    size_t *list_idx;       /* [n_items] when from_list */
    size_t *name_end;       /* [n_items] when from_list on a list of names (lists.h
                             * dg_lists_names_array): the code point item i's name ends at */
    size_t *rec_cell;       /* [n_items * n_fields] when from_list on a table: the cell
                             * each leaf of item i reads (dg_lists_record_cells), once
                             * per record rather than per span candidate */
    int columns_set;        /* a table's free columns chosen (fill_columns.c) */
    json_t *table_col;      /* then {property: column} for the free properties, or NULL */
    int list_probe;         /* by_anchor: no list by name; the anchor head's best token may pick one */
    int list_absent;        /* no list by name, none written (lists.h
                             * dg_lists_dependencies_unwritten): no items */
    size_t r0, r1;          /* region: context tokens [r0, r1) (every instance has one) */
    size_t *anchor;         /* [n_items] anchor tokens, ascending */
    float *alog;            /* [r1 - r0] anchor logits, until resolved */
    float clog[DG_COUNT_MAX + 1]; /* count fork logits (count_peaks / hybrid) */
    int has_clog;
    json_t *raw;            /* debug: digest of the anchor (+ count) logits */
    size_t *gold_idx;       /* trace, anchored: gold item index of each anchor (anchor order) */
    int trace_out;          /* trace: left out (the anchors hook said so) */
} inst;

typedef struct leaf {
    size_t field;
    int inst;               /* innermost enclosing instance, -1 */
    size_t item;
    size_t *idx;            /* original indices, outermost first */
    size_t n_idx;
    json_t *value;          /* NULL = key omitted */
    json_t *meta;
    int failed;             /* forbid leaf without a valid value */
    char *fail_msg;
    /* an extract leaf's span (span_distinct, fill_distinct.c): has_span when its
     * value is span [s0, s1) (code points) with log-probability lp; null_lp the
     * null outcome's; alt (owned, NULL = none) the value of the best other valid
     * span [a0, a1) not overlapping it, log-probability alt_lp */
    int has_span;
    size_t s0, s1, a0, a1;
    double lp, null_lp, alt_lp;
    json_t *alt;
} leaf;

enum { JOB_LEAF = 0, JOB_COUNT = 1, JOB_GEN = 2, JOB_ANCHOR = 3 };

typedef struct job {
    int kind;
    size_t req;
    size_t target;          /* leaf index (LEAF/GEN) or instance index (COUNT) */
    ivec ids;
    size_t *mark;           /* own-token positions whose hidden states are kept */
    size_t n_mark, cap_mark;
    float *h;               /* [n_mark, E] */
    size_t *order;          /* choice leaf under a trace: plan outcome of each option line */
} job;

typedef struct jobs {
    job *p;
    size_t n, cap;
} jobs;

typedef struct freq {
    deg_status st;
    json_t *errors;         /* problems list for the caller (request/schema/fill) */
    deg_request *rq;
    const dg_plan *plan;
    const char *ctx;
    size_t ctx_len;
    deg_fill_options opt;
    deg_trunk *trunk;
    size_t c0, c1;          /* context tokens are trunk rows [c0, c1) */
    int anchor_on;          /* anchor-mode checkpoint and >= anchor_min_tokens (§12.6) */
    int anchor_heads;       /* anchor-mode checkpoint (its arrays can anchor at any length) */
    float *ctx_hidden;      /* [c1 - c0, E] */
    /* single-line spans (span_single_line): per code point cp, the newlines
     * before it, the first non-blank code point >= cp and one past the last
     * non-blank code point < cp ([n_cp + 1] each) */
    size_t *nl_pre, *nb_next, *nb_prev;
    /* single-sentence spans (span_single_sentence): per code point cp, the
     * sentence ends (sentences.h) at code points < cp ([n_cp + 1]) */
    size_t *se_pre;
    dg_keylines kv;         /* key/value lines of the context (key prior on) */
    size_t *block;          /* key prior on: [2 * plan->n_fields] bytes [b0, b1) of the
                             * block each field's description points at (locator.h), the
                             * whole context when it points at none; else NULL */
    double list_bonus;      /* list prior (lists.h): options.list_prior's, else deg.json's;
                             * 0 = off */
    int list_by_anchor;     /* list prior: unnamed plain arrays anchor and may take the
                             * list under the anchor head's best token */
    dg_lists lists;         /* lists of the context (list prior on) */
    uint32_t *hl_cell;      /* [n_cp] or NULL (no headerless table): 1 + the headerless
                             * table cell holding code point cp, UINT32_MAX between a
                             * row's cells, 0 elsewhere (dg_fill_cell_map) */
    size_t *tok_cp0, *tok_cp1; /* per context token: code point range it covers */
    size_t *cp_tok;         /* per code point: the context token holding its first byte */
    size_t *cp_byte;        /* per code point: byte offset (n_cp + 1 entries) */
    size_t n_cp;
    inst *insts;
    size_t n_insts, cap_insts;
    leaf *leaves;
    size_t n_leaves, cap_leaves;
    size_t generated_tokens;
    double t_prefill, t_forks, t_generate;
    size_t fork_rows, fork_tokens;
    const dg_trace_hooks *trace; /* training trace (dg_fill_trace), else NULL */
    double lm_prior;        /* weight of the LM-head start prior (fill_extract.c):
                             * options.lm_prior's, else deg.json's; 0 = off */
    int32_t *trunk_ids;     /* the trunk's tokens [deg_trunk_len]; kept under a
                             * trace (it reports them) or lm_prior > 0 (it reads
                             * the context tokens' ids), else NULL */
    dg_limits lim;          /* work limits (deg_fill_many_ex + request options) */
    size_t due;             /* fork tokens of the round about to run (max_fork_tokens) */
    size_t gen_fed;         /* generate phase: prompt + decoded tokens fed to forks */
    char *known_text;       /* generate phase: the KNOWN VALUES block's text (repeats.h) */
} freq;

/* Poll hook of one fork batch (dg_run_push): the batch stops between its
 * passes once every request in it has stopped. */
typedef struct batch_poll {
    freq *reqs;
    const job *J;
    const size_t *sel;
    size_t n;
    int stopped;
} batch_poll;

/* What a caller of dg_fill_rounds does with a round's jobs: deg_fill / deg_fill_many
 * decode them (fill_round), the training trace reports them (trace_round). A
 * callback records a request's own failure in the request and returns only
 * errors that stop every request (out of memory, internal, the trace's hooks). */
typedef struct round_ops {
    /* Move the jobs to run to the front of J, in order; returns their count
     * (NULL: run every job). */
    size_t (*select)(const freq *reqs, jobs *J);
    /* Job j of the round (ran: it was run), in job order; may queue next-round jobs. */
    deg_status (*decoded)(const dg_ckpt *k, freq *reqs, job *j, int ran, jobs *next);
    /* Once the round's jobs have run, before any is decoded (NULL: nothing): what
     * one job's decoding needs from its siblings' rows. */
    deg_status (*prepare)(const dg_ckpt *k, freq *reqs, const job *J, size_t n);
    /* Each anchor job, once every job of the round is decoded. */
    deg_status (*anchors)(const dg_ckpt *k, freq *reqs, job *j, jobs *next);
    /* Each job again after the anchors (NULL: nothing). */
    deg_status (*after)(const dg_ckpt *k, freq *reqs, job *j, int ran);
    /* 1: stop once request 0 has failed (the trace's single request). */
    int stop_on_failure;
} round_ops;

/* ---- per-request state (fill_state.c) ------------------------------------- */

/* Tokenize text (special != 0: special tokens parsed) onto v. Bytes the
 * vocabulary lacks are dropped as HF tokenizers drops them (issue 19 item 5);
 * dg_fill_trunk maps the context's tokens back to the original bytes.
 * Errors: the tokenizer's, DEG_ERR_NOMEM. */
deg_status dg_fill_tok(ivec *v, const deg_model *m, const char *text, size_t len, int special);
/* Append one token. Errors: DEG_ERR_NOMEM. */
deg_status dg_fill_push(ivec *v, int32_t id);
/* Record deg_errmsg() as r's failure (status st, at loc) unless r already failed. */
void dg_fill_fail(freq *r, deg_status st, const char *loc);
/* Work limits (base/run.h): a request that is cancelled, past its deadline or
 * over a cap fails alone with DEG_ERR_CANCELLED / DEG_ERR_LIMIT. Returns 1 if
 * the request has stopped (for any reason). */
int dg_fill_stopped(freq *r, const char *phase);
/* max_fields against the fields the schema instantiates at the least, before
 * any work (the prefill included): every field once per item its enclosing
 * arrays' minItems require (an array's item fields at least once: each count
 * fork lists every field of its item) + one instance per array and enclosing
 * item. A schema over the cap would cost minutes of attention before the
 * per-item check (issue 19: 500 item fields x minItems 10 ran 167 s before
 * it). The request fails alone (DEG_ERR_LIMIT). */
void dg_fill_plan_fields_check(freq *r);
/* While a fork-token cap is set, a fork of n tokens (what + ptr names it, e.g.
 * "the count fork of " "/items"; when: appended to the message, "" or ",
 * checked before the prefill") may not exceed DEG_MAX_FORK_LEN tokens
 * (deg_runtime.h). Returns 1 if the request has stopped. */
int dg_fill_fork_len_check(freq *r, size_t n, const char *what, const char *ptr,
                           const char *when);
/* The same for job j's fork. */
int dg_fill_fork_len_stopped(freq *r, const job *j);
/* A new array instance (index) / leaf (index) of r; -1 when out of memory. */
int dg_fill_add_inst(freq *r, int array, int parent, size_t parent_item);
long dg_fill_add_leaf(freq *r, size_t field, int in, size_t item);
/* Free everything r holds (r itself is the caller's). */
void dg_fill_clear(freq *r);
/* A new zeroed job at the end of J; NULL when out of memory. */
job *dg_fill_job_add(jobs *J, int kind, size_t req, size_t target);
void dg_fill_jobs_free(jobs *J);

/* ---- trunk (fill_trunk.c) ------------------------------------------------- */

/* The chat layout of the fill prompt: the checkpoint's (deg.json chat_layout, mapped by
 * dg_chat_layout_lookup at load). */
dg_chat_layout dg_fill_layout(const dg_ckpt *k);
/* Tokenize and prefill r's trunk; fills the code point tables and ctx_hidden. */
deg_status dg_fill_trunk(const dg_ckpt *k, freq *r);
/* The single-line tables nl_pre, nb_next, nb_prev (span_single_line). */
deg_status dg_fill_line_tables(freq *r);
/* The sentence-end table se_pre (span_single_sentence). */
deg_status dg_fill_sentence_table(freq *r);

/* ---- forks (fill_forks.c) ------------------------------------------------- */

/* While a fork-token cap is set, the first round's forks (every top-level
 * field's fork and array's count fork: their texts are known from the plan)
 * against DEG_MAX_FORK_LEN each and max_fork_tokens in total, before the
 * prefill: a wide item's count fork was refused only after a long document's
 * prefill (issue 19). The request fails alone (DEG_ERR_LIMIT). */
void dg_fill_first_round_check(freq *r, const deg_model *m);

/* Create the round's jobs for the items of instance `in` (its leaves and nested
 * count / anchor forks), or for the top level when in < 0. */
deg_status dg_fill_expand(freq *r, size_t ri, jobs *J, const deg_model *m, int in);
/* The x-generate fork text of leaf L (WRITE ... VALUE:, closing the user turn). */
deg_status dg_fill_gen_job(job *j, const dg_ckpt *k, const freq *r, const leaf *L);

/* ---- rounds (fill_rounds.c) ----------------------------------------------- */

/* dg_run_push hook of a batch_poll: DEG_ERR_CANCELLED once every request stopped. */
deg_status dg_fill_batch_poll(void *ctx);
/* THE round loop (§12.1); see fill_rounds.c. *J is freed. */
deg_status dg_fill_rounds(const dg_ckpt *k, freq *reqs, jobs *J, const round_ops *ops);

/* ---- decoding (fill_decide.c, fill_extract.c, fill_arrays.c) -------------- */

/* debug_raw: meta["raw"] = sha256 hex of a[n] (+ b[nb]) as fp32 bytes. */
void dg_fill_raw_digest(const dg_ckpt *k, json_t *meta, const float *a, size_t n,
                        const float *b, size_t nb);
deg_status dg_fill_decode_decide(const dg_ckpt *k, freq *r, job *j);
deg_status dg_fill_decode_extract(const dg_ckpt *k, freq *r, job *j);
/* A leaf's own constraints (+ format) as a schema (new reference; NULL on OOM): the
 * extract candidate filter and the CONSTRAINTS line of its fork (sorted keys). */
json_t *dg_fill_leaf_schema(const dg_field_plan *f);
/* The value of code points [s, e) for leaf f (schema: dg_fill_leaf_schema's), or
 * NULL with *reason set; *assumed: a date read with an assumed offset. */
json_t *dg_fill_span_value(const freq *r, const dg_field_plan *f, const json_t *schema, size_t s,
                           size_t e, const char **reason, int *assumed);
/* Headerless tables (fill_columns.c): the column each extract property of a headerless
 * table's records reads, chosen from the heads' pooled choices over the round's jobs J[n]
 * (their rows run), written into the instance's rec_cell. Errors: DEG_ERR_NOMEM. */
deg_status dg_fill_table_columns(const dg_ckpt *k, freq *reqs, const job *J, size_t n);
/* r->hl_cell from r->lists (fill_columns.c): left NULL without a headerless table.
 * Errors: DEG_ERR_NOMEM. */
deg_status dg_fill_cell_map(freq *r);
/* Code points [s, e) may be a value read outside a table's records: they hold no
 * part of a headerless table row, or lie inside one cell of one (a data row's values
 * are in its cells: "first service" is never "dcap   22125/tcp"; "fch" of the cell
 * "fch fchk" is an extension). */
int dg_fill_cell_span_ok(const freq *r, size_t s, size_t e);
deg_status dg_fill_decode_anchor(const dg_ckpt *k, freq *r, job *j);
void dg_fill_decode_anchor_count(const dg_ckpt *k, freq *r, job *j);
deg_status dg_fill_decode_count(const dg_ckpt *k, freq *r, job *j);
/* Items of an anchored instance from its anchor (and count) logits (§12.6). */
deg_status dg_fill_resolve_anchors(const dg_ckpt *k, freq *r, int in);

/* ---- arrays (fill_arrays.c) ----------------------------------------------- */

/* End (exclusive) of anchored item `item`'s region (§12.6). */
size_t dg_fill_item_end(const inst *I, size_t item);
/* Anchor token and region end of the innermost anchored item enclosing item
 * `item` of instance `in`; 0 if none. */
int dg_fill_innermost_anchor(const freq *r, int in, size_t item, size_t *anchor, size_t *rend);
/* An anchored array's item cap: maxItems, else options.max_items, else -1 (none). */
int64_t dg_fill_anchor_cap(const freq *r, const dg_array_plan *a);
/* Classes [*lo, *hi] of the count head for instance I (§12.3 count). */
deg_status dg_fill_count_range(const freq *r, const inst *I, int64_t *lo, int64_t *hi);
/* I has n items, all alive. */
deg_status dg_fill_set_count(inst *I, int64_t n);
/* Drop items whose required values are missing (§12.6), innermost first; renumber. */
void dg_fill_drops(freq *r);

/* span_distinct (deg.json; fill_distinct.c): no two extract leaves of one object
 * (the top level, or one array item) keep the same span (after dg_fill_drops), and
 * no two items of one array instance hold the same span in one required leaf
 * (before it: the later item fails and is dropped). Errors: DEG_ERR_NOMEM. */
deg_status dg_fill_distinct_spans(const dg_ckpt *k, freq *r);
deg_status dg_fill_distinct_items(const dg_ckpt *k, freq *r);

/* Byte i (of the context) is inside, not at the start of, the value of a key line whose key is not the
 * leaf's, and of no key line that is: 1. ("OS: UNIX (BSD, ...)" names an operating system,
 * not the licence; but "Delivery: express (1-2 days)" states `shipping` under another
 * name: datagen-v2 test order-4.) A key naming the leaf in part is its own, and a value
 * may be read under two keys: a POM's <license><name> is "name" and "license name" (a new
 * user's check of 0.24.0). Leaves outside arrays only: an array item's key lines are its
 * own record's ("ftp-data<TAB>20/tcp", a data file's row, reads as the key line "ftp
 * data").
 * (fill_decide.c: the choice rules; fill_extract_keys.c: licence names in spans.) */
int dg_fill_under_other_key(const dg_ckpt *k, const freq *r, const dg_field_plan *f, size_t i);

/* Does byte i of the context lie in the block field f's description points at
 * (locator.h; the whole context when none; fill_decide.c)? */
int dg_fill_in_block(const freq *r, const dg_field_plan *f, size_t i);

/* The key prior's bonus of key line kv for field f (dg_key_bonus), 0 for a line outside
 * f's block (dg_fill_in_block; fill_decide.c). Every key prior reads lines through it. */
double dg_fill_key_bonus(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                         const dg_keyline *kv);

/* The key prior of an extract leaf (fill_extract_keys.c): per context token (nc =
 * c1 - c0), the start (bs) and end (be) bonus: the value of a matching line (plain strings), or each grammar candidate [s, e) inside it
 * (typed fields; spans = ns candidate pairs; a number's whole written form only,
 * signed_form_before; under the largest bonus only the end a name asks for,
 * end_of_keys), and a grammar candidate labelled in
 * running text (dg_key_phrase_before) or followed by the unit its name ends in
 * (dg_key_unit_after), at key_prior.phrase; every candidate of a date leaf outside
 * arrays whose candidates write one day (one_day), at key_prior.sole. Largest bonus per
 * token. bs, be: nc floats each, overwritten. Also the licence names of a plain
 * string named like a licence (license_names). */
void dg_fill_key_prior_extract(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                               const size_t *spans, size_t ns, int typed, float *bs, float *be);

/* An extract outcome's reported confidence from its log-probability (fill_extract.c). */
double dg_fill_extract_confidence(const dg_ckpt *k, double lp);
/* 1 if every enclosing item of instance `in` (and item `item` of it) survived. */
int dg_fill_reachable(const freq *r, int in, size_t item);
/* New (renumbered) indices of the chain ending at item `item` of `in`; its length. */
size_t dg_fill_new_chain(const freq *r, int in, size_t item, size_t *out);
/* The response pointer of leaf L (renumbered indices); malloc'd, NULL on OOM. */
char *dg_fill_leaf_pointer(const freq *r, const leaf *L);

/* ---- generate, response, entry, trace ------------------------------------- */

/* Generate phase for every request (§7.3). */
deg_status dg_fill_generate(const dg_ckpt *k, freq *reqs, size_t n_req);
/* r's §8 response (a new reference in *response). */
deg_status dg_fill_assemble(const dg_ckpt *k, freq *r, json_t **response);
/* Compact JSON text of v (malloc'd), NULL for NULL / out of memory. */
char *dg_fill_dump(json_t *v);
/* Parse a request into r and build its trunk; failures are recorded in r. */
void dg_fill_prepare(const dg_ckpt *k, freq *r, const char *text, size_t len);
/* Under a trace with a shuffle hook: the option line order of a choice leaf's fork. */
deg_status dg_fill_trace_order(job *j, const freq *r, const leaf *L, size_t n);

#endif
