/* The stages of a self-study batch: prompts, bot A (sampled), bot B
 * (greedy), the teacher pass with top-k targets. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "cartridge/selfstudy_bots.h"
#include "model/arch.h"
#include "model/chat.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/state.h"

/* Bot A's prompt for a passage-question conversation. */
#define PASSAGE_PROMPT_HEAD "Here is a passage:\n\n<passage>\n"
#define PASSAGE_PROMPT_TAIL                                                              \
    "\n</passage>\n\nWrite the question that this passage answers, as someone who has "  \
    "not read it would ask it. Output only the question."

deg_status dg_batch_alloc(dg_batch *b, size_t n)
{
    b->n = n;
    b->plans = calloc(n, sizeof *b->plans);
    b->system = calloc(n, sizeof *b->system);
    b->prompt_a = calloc(n, sizeof *b->prompt_a);
    b->message = calloc(n, sizeof *b->message);
    b->answer = calloc(n, sizeof *b->answer);
    b->n_answer = calloc(n, sizeof *b->n_answer);
    b->trunk = calloc(n, sizeof *b->trunk);
    b->last = calloc(n, sizeof *b->last);
    b->chunk = calloc(n, sizeof *b->chunk);
    b->chunk_ids = calloc(n, sizeof *b->chunk_ids);
    b->n_chunk = calloc(n, sizeof *b->n_chunk);
    b->targets = calloc(n, sizeof *b->targets);
    b->n_targets = calloc(n, sizeof *b->n_targets);
    b->passage = calloc(n, sizeof *b->passage);
    if (!b->plans || !b->system || !b->prompt_a || !b->message || !b->answer || !b->n_answer ||
        !b->trunk || !b->last || !b->chunk || !b->chunk_ids || !b->n_chunk || !b->targets ||
        !b->n_targets || !b->passage) {
        dg_batch_free(b);
        return dg_fail(DEG_ERR_NOMEM, "deg_selfstudy_generate: out of memory");
    }
    return DEG_OK;
}

void dg_batch_free(dg_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        if (b->system) free(b->system[i]);
        if (b->prompt_a) free(b->prompt_a[i]);
        if (b->message) free(b->message[i]);
        if (b->answer) free(b->answer[i]);
        if (b->trunk) deg_trunk_free(b->trunk[i]);
        if (b->last) free(b->last[i]);
        if (b->chunk) deg_trunk_free(b->chunk[i]);
        if (b->chunk_ids) free(b->chunk_ids[i]);
        if (b->targets) free(b->targets[i]);
        if (b->passage) free(b->passage[i]);
    }
    free(b->plans);
    free(b->system);
    free(b->prompt_a);
    free(b->message);
    free(b->answer);
    free(b->n_answer);
    free(b->trunk);
    free(b->last);
    free(b->chunk);
    free(b->chunk_ids);
    free(b->n_chunk);
    free(b->targets);
    free(b->n_targets);
    free(b->passage);
    memset(b, 0, sizeof *b);
}

static deg_status oom(void) { return dg_fail(DEG_ERR_NOMEM, "deg_selfstudy_generate: out of memory"); }

/* Remove every "<think>" span (through the next "</think>", or to the end)
 * from s in place. */
static void strip_think(char *s)
{
    char *p;
    while ((p = strstr(s, "<think>")) != NULL) {
        char *e = strstr(p + 7, "</think>");
        if (!e) {
            *p = 0;
            return;
        }
        memmove(p, e + 8, strlen(e + 8) + 1);
    }
}

/* s without leading/trailing ASCII whitespace (in place); returns s. */
static char *strip_in_place(char *s, int left_only)
{
    size_t a, b, n = strlen(s);
    dg_strip(s, n, &a, &b);
    if (left_only) b = n;
    memmove(s, s + a, b - a);
    s[b - a] = 0;
    return s;
}

static int is_stop(const deg_selfstudy *s, int32_t id)
{
    for (size_t k = 0; k < s->n_stop; k++)
        if (s->stop[k] == id) return 1;
    return 0;
}

/* The decoded text of ids without stop tokens (lossy UTF-8). */
static deg_status text_of(const deg_selfstudy *s, const int32_t *ids, size_t n, char **out)
{
    int32_t *kept = malloc((n + 1) * sizeof *kept);
    if (!kept) return oom();
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!is_stop(s, ids[i])) kept[k++] = ids[i];
    deg_status st = dg_detokenize_lossy(s->model, kept, k, out);
    free(kept);
    return st;
}

/* The chunk's system message (its sources named when there are several). */
static deg_status chunk_system(const deg_selfstudy *s, const dg_plan *pl, char **out)
{
    const deg_corpus *c = s->corpus;
    char *chunk = NULL;
    DG_TRY(dg_detokenize_lossy(s->model, c->ids + pl->first, pl->end - pl->first, &chunk));
    dg_strbuf b = {0};
    dg_sb_puts(&b, "The following is an excerpt");
    if (c->n_docs > 1) {
        const char *sep = " from ";
        for (size_t d = 0; d < c->n_docs; d++)
            if (c->first[d] < pl->end && pl->first < c->first[d + 1]) {
                dg_sb_puts(&b, sep);
                dg_sb_puts(&b, c->names[d]);
                sep = ", ";
            }
    }
    dg_sb_puts(&b, " of a larger text. Use it to answer.\n\n<excerpt>\n");
    dg_sb_puts(&b, chunk);
    dg_sb_puts(&b, "\n</excerpt>");
    free(chunk);
    if (b.oom) {
        free(b.p);
        return oom();
    }
    *out = b.p;
    return DEG_OK;
}

/* Bot A's user message for a passage (malloc'd). */
static deg_status passage_prompt(const char *passage, char **out)
{
    dg_strbuf pr = {0};
    dg_sb_puts(&pr, PASSAGE_PROMPT_HEAD);
    dg_sb_puts(&pr, passage);
    dg_sb_puts(&pr, PASSAGE_PROMPT_TAIL);
    if (pr.oom) {
        free(pr.p);
        return oom();
    }
    *out = pr.p;
    return DEG_OK;
}

/* The passage (whitespace runs as one space) as bot A's prompt and the answer. */
static deg_status passage(deg_selfstudy *s, dg_batch *b, size_t i)
{
    const dg_plan *pl = &b->plans[i];
    char *raw = NULL;
    DG_TRY(dg_detokenize_lossy(s->model, s->corpus->ids + pl->pa, pl->pb - pl->pa, &raw));
    size_t o = 0;
    for (size_t k = 0; raw[k];) { /* whitespace runs -> one space, no edges */
        size_t a = k;
        while (raw[k] && strchr(" \t\n\r\v\f", raw[k])) k++;
        if (k > a && o > 0 && raw[k]) raw[o++] = ' ';
        while (raw[k] && !strchr(" \t\n\r\v\f", raw[k])) raw[o++] = raw[k++];
    }
    raw[o] = 0;
    int32_t *ids = NULL;
    size_t n = 0;
    deg_status st = passage_prompt(raw, &b->prompt_a[i]);
    if (st == DEG_OK) st = dg_model_tokenize(s->model, raw, o, 0, &ids, &n);
    b->passage[i] = raw;
    if (st != DEG_OK) return st;
    b->answer[i] = ids;
    b->n_answer[i] = n < (size_t)s->p.max_a ? n : (size_t)s->p.max_a;
    return DEG_OK;
}

/* Recall: the prompt is q corpus tokens, the answer the tokens after it
 * ("..." asks when the prompt is empty or blank: COVER's window at 0). */
static deg_status recall(deg_selfstudy *s, dg_batch *b, size_t i)
{
    const dg_plan *pl = &b->plans[i];
    const int32_t *ids = s->corpus->ids;
    if (pl->q) DG_TRY(dg_detokenize_lossy(s->model, ids + pl->at, pl->q, &b->message[i]));
    if (!b->message[i] || !*strip_in_place(b->message[i], 0)) {
        free(b->message[i]);
        if (!(b->message[i] = strdup("..."))) return oom();
    }
    size_t a = pl->at + pl->q, e = a + (size_t)s->p.max_a;
    if (e > pl->end) e = pl->end;
    size_t n = e > a ? e - a : 0;
    b->answer[i] = malloc((n + 1) * sizeof(int32_t));
    if (!b->answer[i]) return oom();
    memcpy(b->answer[i], ids + a, n * sizeof(int32_t));
    b->n_answer[i] = n;
    return DEG_OK;
}

deg_status dg_selfstudy_prompts(deg_selfstudy *s, dg_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const dg_plan *pl = &b->plans[i];
        DG_TRY(chunk_system(s, pl, &b->system[i]));
        if (pl->kind == DEG_SELFSTUDY_RECALL) {
            DG_TRY(recall(s, b, i));
        } else if (pl->kind == DEG_SELFSTUDY_PASSAGE_QA) {
            DG_TRY(passage(s, b, i));
        } else if (!(b->prompt_a[i] = strdup(deg_selfstudy_seed_prompt(pl->kind, pl->prompt)))) {
            return oom();
        }
    }
    return DEG_OK;
}

/* The rows of one lockstep decode: per row a prompt trunk and a fork. */
typedef struct rows {
    size_t n;
    size_t *idx;          /* conversation index of each row */
    deg_trunk **trunk;    /* owned unless moved to the batch */
    deg_fork **fork;
    int32_t **prompt;     /* the prompt's ids */
    size_t *n_prompt;
    int32_t **out;        /* decoded ids */
    size_t *n_out;
    uint64_t attempt;     /* bot A's attempt (0: the first; a retry's seeds differ) */
} rows;

static void rows_free(rows *r)
{
    for (size_t k = 0; k < r->n; k++) {
        if (r->fork) deg_fork_free(r->fork[k]);
        if (r->trunk) deg_trunk_free(r->trunk[k]);
        if (r->prompt) free(r->prompt[k]);
        if (r->out) free(r->out[k]);
    }
    free(r->idx);
    free(r->trunk);
    free(r->fork);
    free(r->prompt);
    free(r->n_prompt);
    free(r->out);
    free(r->n_out);
    memset(r, 0, sizeof *r);
}

/* Conversation i's chunk trunk: chat([system]) prefilled. */
static deg_status chunk_trunk(deg_selfstudy *s, dg_batch *b, size_t i)
{
    deg_chat_message msg = {"system", b->system[i]};
    DG_TRY(dg_model_chat_tokenize(s->model, "deg_selfstudy_generate", &msg, 1, 0, 0,
                                  &b->chunk_ids[i], &b->n_chunk[i]));
    DG_TRY(deg_trunk_new(s->model, &b->chunk[i]));
    return deg_trunk_prefill(b->chunk[i], b->chunk_ids[i], b->n_chunk[i], NULL, NULL);
}

/* Conversation i's trunk of prompt ids[0..n) (*out, owned by the caller):
 * when the prompt starts with the chunk trunk's ids, that trunk (cloned, or
 * taken from the batch when take) extended by the rest of the prompt, else a
 * fresh prefill; the state is bitwise the same either way (dg_trunk_clone).
 * last (may be NULL): the logits after the prompt. */
static deg_status prompt_trunk(deg_selfstudy *s, dg_batch *b, size_t i, const int32_t *ids,
                               size_t n, int take, float *last, deg_trunk **out)
{
    size_t nc = b->n_chunk[i];
    if (b->chunk[i] && nc < n && !memcmp(ids, b->chunk_ids[i], nc * sizeof *ids)) {
        if (take) {
            *out = b->chunk[i];
            b->chunk[i] = NULL;
        } else {
            DG_TRY(dg_trunk_clone(b->chunk[i], out));
        }
        ids += nc;
        n -= nc;
    } else {
        DG_TRY(deg_trunk_new(s->model, out));
    }
    return deg_trunk_prefill(*out, ids, n, NULL, last);
}

/* The chat of conversation i's prompt with user message user: [system,
 * user], and for bot A's passage question (fewshot) the worked examples as
 * turns between them (dg_fewshot_passage). *ex (may stay NULL) holds the
 * examples' user messages; free them with the ids. */
static deg_status prompt_ids(deg_selfstudy *s, dg_batch *b, size_t i, char *user, int fewshot,
                             int32_t **ids, size_t *n)
{
    deg_chat_message msgs[2 + 2 * DG_FEWSHOT_EXAMPLES];
    char *ex[DG_FEWSHOT_EXAMPLES] = {0};
    size_t m = 0;
    deg_status st = DEG_OK;
    msgs[m++] = (deg_chat_message){"system", b->system[i]};
    if (fewshot && b->plans[i].kind == DEG_SELFSTUDY_PASSAGE_QA)
        for (size_t j = 0; st == DEG_OK && j < DG_FEWSHOT_EXAMPLES; j++) {
            st = passage_prompt(dg_fewshot_passage(j), &ex[j]);
            msgs[m++] = (deg_chat_message){"user", ex[j]};
            msgs[m++] = (deg_chat_message){"assistant", dg_fewshot_question(j)};
        }
    msgs[m++] = (deg_chat_message){"user", user};
    if (st == DEG_OK)
        st = dg_model_chat_tokenize(s->model, "deg_selfstudy_generate", msgs, m, 1, 0, ids, n);
    for (size_t j = 0; j < DG_FEWSHOT_EXAMPLES; j++) free(ex[j]);
    return st;
}

/* Rows for the conversations with want(b, i), each prefilled with
 * chat([system, user: user[i]]) through prompt_trunk; share: bot A's rows,
 * which first prefill their chunk trunk and clone it (later prompts take it).
 * keep_last: the last logits go to b->last. Decode buffers of max_tokens ids. */
static deg_status rows_open(deg_selfstudy *s, dg_batch *b, int (*want)(const dg_batch *, size_t),
                            char **user, int keep_last, int share, size_t max_tokens, rows *r)
{
    memset(r, 0, sizeof *r);
    size_t n = b->n;
    r->idx = calloc(n, sizeof *r->idx);
    r->trunk = calloc(n, sizeof *r->trunk);
    r->fork = calloc(n, sizeof *r->fork);
    r->prompt = calloc(n, sizeof *r->prompt);
    r->n_prompt = calloc(n, sizeof *r->n_prompt);
    r->out = calloc(n, sizeof *r->out);
    r->n_out = calloc(n, sizeof *r->n_out);
    if (!r->idx || !r->trunk || !r->fork || !r->prompt || !r->n_prompt || !r->out || !r->n_out)
        return oom();
    size_t nv = (size_t)s->model->hp.n_vocab;
    for (size_t i = 0; i < n; i++) {
        if (!want(b, i)) continue;
        size_t k = r->n++;
        r->idx[k] = i;
        DG_TRY(prompt_ids(s, b, i, user[i], share, &r->prompt[k], &r->n_prompt[k]));
        if (share) DG_TRY(chunk_trunk(s, b, i));
        float *last = NULL;
        if (keep_last && !(last = b->last[i] = malloc(nv * sizeof(float)))) return oom();
        DG_TRY(prompt_trunk(s, b, i, r->prompt[k], r->n_prompt[k], !share, last, &r->trunk[k]));
        DG_TRY(deg_fork_new(r->trunk[k], &r->fork[k]));
        if (max_tokens && !(r->out[k] = malloc(max_tokens * sizeof(int32_t)))) return oom();
    }
    return DEG_OK;
}

typedef struct seen_ctx {
    deg_selfstudy *s;
    dg_batch *b;
    const rows *r;
} seen_ctx;

/* dg_logits_seen of bot B's decode: row k's logits before its answer token j
 * are the teacher's row for answer position j; its targets are appended to
 * the conversation's b->targets (position j, made absolute by make_conv). */
static deg_status seen_targets(void *ud, size_t k, size_t j, const float *logits)
{
    seen_ctx *c = ud;
    deg_selfstudy *s = c->s;
    dg_batch *b = c->b;
    size_t i = c->r->idx[k], got = 0;
    if (!b->targets[i] &&
        !(b->targets[i] = malloc((size_t)s->p.max_a * (size_t)s->p.top_k * sizeof **b->targets)))
        return oom();
    DG_TRY(deg_distill_targets_from_logits(s->model, logits, (int32_t)j, s->p.top_k,
                                           s->p.min_mass, b->targets[i] + b->n_targets[i],
                                           &got));
    b->n_targets[i] += got;
    return DEG_OK;
}

/* One lockstep decode of the rows (temperature 0 = greedy; spec: through
 * deg_forks_generate_spec, each stream drafting from its prompt; targets:
 * the teacher's targets are read off the decode, seen_targets). */
static deg_status rows_decode(deg_selfstudy *s, dg_batch *b, rows *r, float temperature,
                              int32_t max_tokens, int spec, int targets)
{
    deg_sample_params *pp = calloc(r->n, sizeof *pp);
    deg_spec_stream *ss = spec ? calloc(r->n, sizeof *ss) : NULL;
    deg_spec_stats *sst = spec ? calloc(r->n, sizeof *sst) : NULL;
    deg_status st = DEG_OK;
    if (!pp || (spec && (!ss || !sst))) st = oom();
    for (size_t k = 0; st == DEG_OK && k < r->n; k++) {
        pp[k] = deg_sample_params_default();
        pp[k].temperature = temperature;
        pp[k].seed = b->plans[r->idx[k]].seed_a; /* attempt t > 0: another 63-bit seed */
        if (r->attempt) pp[k].seed = (pp[k].seed ^ (0x9E3779B97F4A7C15ULL * r->attempt)) >> 1;
        pp[k].max_tokens = max_tokens;
        pp[k].stop_ids = s->stop;
        pp[k].n_stop_ids = s->n_stop;
        if (spec) ss[k] = (deg_spec_stream){r->prompt[k], r->n_prompt[k], NULL};
    }
    if (st == DEG_OK && spec) {
        st = deg_forks_generate_spec(r->fork, r->n, pp, ss, NULL, r->out, r->n_out, NULL, sst,
                                     NULL);
        for (size_t k = 0; st == DEG_OK && k < r->n; k++) {
            s->timing.drafted += sst[k].drafted;
            s->timing.accepted += sst[k].accepted;
        }
    } else if (st == DEG_OK && targets) {
        seen_ctx c = {s, b, r};
        st = dg_forks_generate_seen(r->fork, r->n, pp, r->out, r->n_out, seen_targets, &c);
    } else if (st == DEG_OK) {
        st = deg_forks_generate(r->fork, r->n, pp, r->out, r->n_out, NULL);
    }
    free(pp);
    free(ss);
    free(sst);
    return st;
}

static int wants_a(const dg_batch *b, size_t i) { return b->prompt_a[i] != NULL; }

/* Conversation r->idx[k]'s message from bot A's decode of row k. */
static deg_status a_message(deg_selfstudy *s, dg_batch *b, const rows *r, size_t k)
{
    size_t i = r->idx[k];
    free(b->message[i]);
    b->message[i] = NULL;
    DG_TRY(text_of(s, r->out[k], r->n_out[k], &b->message[i]));
    strip_think(b->message[i]);
    if (!*strip_in_place(b->message[i], 0)) {
        free(b->message[i]);
        if (!(b->message[i] = strdup("Explain the excerpt."))) return oom();
    }
    return DEG_OK;
}

/* Bot A's attempt t over the rows of r whose question is not usable
 * (dg_question_usable): each gets a new fork of its prompt trunk and
 * decodes again with attempt t's seed; *more = 0 when no row needed it. */
static deg_status a_retry(deg_selfstudy *s, dg_batch *b, rows *r, uint64_t t, int *more)
{
    rows sub = {.attempt = t};
    size_t *pick = calloc(r->n + 1, sizeof *pick);
    sub.idx = calloc(r->n + 1, sizeof *sub.idx);
    sub.fork = calloc(r->n + 1, sizeof *sub.fork);
    sub.prompt = calloc(r->n + 1, sizeof *sub.prompt);
    sub.n_prompt = calloc(r->n + 1, sizeof *sub.n_prompt);
    sub.out = calloc(r->n + 1, sizeof *sub.out);
    sub.n_out = calloc(r->n + 1, sizeof *sub.n_out);
    deg_status st = pick && sub.idx && sub.fork && sub.prompt && sub.n_prompt && sub.out &&
                    sub.n_out ? DEG_OK : oom();
    for (size_t k = 0; st == DEG_OK && k < r->n; k++) {
        size_t i = r->idx[k];
        if (!dg_kind_writes_question(b->plans[i].kind)) continue;
        int ok = dg_question_usable(b->message[i], b->system[i], b->passage[i]);
        if (ok < 0) st = oom();
        if (ok) continue;
        deg_fork_free(r->fork[k]);
        r->fork[k] = NULL;
        if (st == DEG_OK) st = deg_fork_new(r->trunk[k], &r->fork[k]);
        size_t j = sub.n++;
        pick[j] = k;
        sub.idx[j] = i;
        sub.fork[j] = r->fork[k];
        sub.prompt[j] = r->prompt[k];
        sub.n_prompt[j] = r->n_prompt[k];
        sub.out[j] = r->out[k];
    }
    *more = sub.n > 0;
    if (st == DEG_OK && sub.n) st = rows_decode(s, b, &sub, s->p.temperature_a, s->p.max_q, 0, 0);
    for (size_t j = 0; st == DEG_OK && j < sub.n; j++) {
        r->n_out[pick[j]] = sub.n_out[j];
        st = a_message(s, b, r, pick[j]);
    }
    free(pick);
    free(sub.idx);
    free(sub.fork);
    free(sub.prompt);
    free(sub.n_prompt);
    free(sub.out);
    free(sub.n_out);
    return st;
}

deg_status dg_selfstudy_bot_a(deg_selfstudy *s, dg_batch *b)
{
    rows r;
    deg_status st = rows_open(s, b, wants_a, b->prompt_a, 0, 1, (size_t)s->p.max_q, &r);
    if (st == DEG_OK && r.n) st = rows_decode(s, b, &r, s->p.temperature_a, s->p.max_q, 0, 0);
    for (size_t k = 0; st == DEG_OK && k < r.n; k++) st = a_message(s, b, &r, k);
    int more = 1;
    for (uint64_t t = 1; st == DEG_OK && more && t < DG_QUESTION_TRIES; t++)
        st = a_retry(s, b, &r, t, &more);
    rows_free(&r);
    return st;
}

static int wants_b(const dg_batch *b, size_t i)
{
    return b->plans[i].kind < DEG_SELFSTUDY_N_SEED_TYPES;
}

/* Bot B's answer ids: think spans stripped and the rest re-tokenized, the
 * stop tokens it emitted kept after it; *same = 1 when they are the decoded
 * ids unchanged. */
static deg_status answer_of(deg_selfstudy *s, const int32_t *ids, size_t n, int32_t **out,
                            size_t *n_out, int *same)
{
    char *text = NULL;
    DG_TRY(text_of(s, ids, n, &text));
    *same = !strstr(text, "<think>");
    if (*same) {
        free(text);
        if (!(*out = malloc((n + 1) * sizeof(int32_t)))) return oom();
        memcpy(*out, ids, n * sizeof(int32_t));
        *n_out = n;
        return DEG_OK;
    }
    strip_think(text);
    strip_in_place(text, 1);
    int32_t *t = NULL;
    size_t nt = 0;
    deg_status st = dg_model_tokenize(s->model, text, strlen(text), 0, &t, &nt);
    free(text);
    if (st != DEG_OK) return st;
    int32_t *all = realloc(t, (nt + n + 1) * sizeof(int32_t));
    if (!all) {
        free(t);
        return oom();
    }
    for (size_t i = 0; i < n; i++)
        if (is_stop(s, ids[i])) all[nt++] = ids[i];
    *out = all;
    *n_out = nt;
    return DEG_OK;
}

deg_status dg_selfstudy_bot_b(deg_selfstudy *s, dg_batch *b)
{
    rows r;
    int spec = s->p.spec_b;
    deg_status st = rows_open(s, b, wants_b, b->message, 1, 0, (size_t)s->p.max_a, &r);
    if (st == DEG_OK && r.n) st = rows_decode(s, b, &r, 0.0f, s->p.max_a, spec, !spec);
    for (size_t k = 0; st == DEG_OK && k < r.n; k++) {
        size_t i = r.idx[k];
        int same = 0;
        st = answer_of(s, r.out[k], r.n_out[k], &b->answer[i], &b->n_answer[i], &same);
        if (st == DEG_OK && !same) { /* think spans stripped: the teacher pass scores it */
            free(b->targets[i]);
            b->targets[i] = NULL;
            b->n_targets[i] = 0;
        }
    }
    for (size_t k = 0; k < r.n; k++) { /* the teacher pass reuses the prompt trunks it needs */
        deg_fork_free(r.fork[k]);
        r.fork[k] = NULL;
        if (!b->targets[r.idx[k]]) {
            b->trunk[r.idx[k]] = r.trunk[k];
            r.trunk[k] = NULL;
        }
    }
    rows_free(&r);
    return st;
}

static int wants_teacher_prompt(const dg_batch *b, size_t i)
{
    return b->trunk[i] == NULL && b->targets[i] == NULL;
}

/* Conversation i from its answer, the student prompt and its targets: read
 * off bot B's decode (b->targets[i]) or from the teacher's logits rows
 * (rows[j - 1] for answer position j >= 1, b->last[i] for j = 0). */
static deg_status make_conv(deg_selfstudy *s, dg_batch *b, size_t i, const float *rows,
                            deg_selfstudy_conv *c)
{
    size_t nv = (size_t)s->model->hp.n_vocab, na = b->n_answer[i];
    memset(c, 0, sizeof *c);
    deg_chat_message msg = {"user", b->message[i]};
    int32_t *prompt = NULL;
    size_t np = 0;
    DG_TRY(dg_model_chat_tokenize(s->model, "deg_selfstudy_generate", &msg, 1, 1, 0, &prompt,
                                  &np));
    c->kind = b->plans[i].kind;
    c->chunk_first = b->plans[i].first;
    c->chunk_end = b->plans[i].end;
    c->message = b->message[i];
    b->message[i] = NULL;
    c->answer_ids = b->answer[i];
    b->answer[i] = NULL;
    c->n_answer = c->n_supervised = na;
    c->student_ids = realloc(prompt, (np + na + 1) * sizeof(int32_t));
    c->targets = malloc((na * (size_t)s->p.top_k + 1) * sizeof *c->targets);
    if (!c->student_ids || !c->targets) {
        if (!c->student_ids) free(prompt);
        deg_selfstudy_conv_clear(c);
        return oom();
    }
    memcpy(c->student_ids + np, c->answer_ids, na * sizeof(int32_t));
    c->n_student = np + na;
    if (b->targets[i]) {
        for (size_t e = 0; e < b->n_targets[i]; e++) {
            c->targets[e] = b->targets[i][e];
            c->targets[e].position += (int32_t)np;
        }
        c->n_targets = b->n_targets[i];
        return DEG_OK;
    }
    for (size_t j = 0; j < na; j++) {
        const float *row = j == 0 ? b->last[i] : rows + (j - 1) * nv;
        size_t k = 0;
        deg_status st = deg_distill_targets_from_logits(s->model, row, (int32_t)(np + j),
                                                        s->p.top_k, s->p.min_mass,
                                                        c->targets + c->n_targets, &k);
        if (st != DEG_OK) {
            deg_selfstudy_conv_clear(c);
            return st;
        }
        c->n_targets += k;
    }
    return DEG_OK;
}

deg_status dg_selfstudy_teach(deg_selfstudy *s, dg_batch *b, deg_selfstudy_conv *out)
{
    rows r;
    deg_status st = rows_open(s, b, wants_teacher_prompt, b->message, 1, 0, 0, &r);
    for (size_t k = 0; k < r.n; k++) { /* every conversation now has a prompt trunk */
        deg_fork_free(r.fork[k]);
        r.fork[k] = NULL;
        b->trunk[r.idx[k]] = r.trunk[k];
        r.trunk[k] = NULL;
    }
    rows_free(&r);
    if (st != DEG_OK) return st;
    size_t n = b->n, nv = (size_t)s->model->hp.n_vocab, nfeed = 0;
    deg_fork **forks = calloc(n, sizeof *forks); /* rows fed: those without targets */
    const int32_t **ids = calloc(n, sizeof *ids);
    size_t *nf = calloc(n, sizeof *nf);
    float **logits = calloc(n, sizeof *logits);   /* per conversation */
    float **fl = calloc(n, sizeof *fl);           /* per fed row */
    st = forks && ids && nf && logits && fl ? DEG_OK : oom();
    for (size_t i = 0; st == DEG_OK && i < n; i++) {
        if (b->targets[i]) continue;
        size_t k = nfeed++;
        ids[k] = b->answer[i];
        nf[k] = b->n_answer[i] > 1 ? b->n_answer[i] - 1 : 0;
        if (nf[k] && !(fl[k] = logits[i] = malloc(nf[k] * nv * sizeof(float)))) st = oom();
        if (st == DEG_OK) st = deg_fork_new(b->trunk[i], &forks[k]);
    }
    if (st == DEG_OK && nfeed) st = deg_forks_feed(forks, nfeed, ids, nf, fl);
    size_t made = 0;
    for (; st == DEG_OK && made < n; made++)
        st = make_conv(s, b, made, logits[made], &out[made]);
    if (st != DEG_OK)
        for (size_t i = 0; i < made; i++) deg_selfstudy_conv_clear(&out[i]);
    for (size_t i = 0; forks && i < n; i++) deg_fork_free(forks[i]);
    for (size_t i = 0; logits && i < n; i++) free(logits[i]);
    free(forks);
    free(ids);
    free(nf);
    free(logits);
    free(fl);
    return st;
}
