/* The stages of one self-study batch (selfstudy_bots.c): prompts, bot A,
 * bot B, the teacher pass; deg_selfstudy_generate runs them in order. */
#ifndef DG_SELFSTUDY_BOTS_H
#define DG_SELFSTUDY_BOTS_H

#include "cartridge/selfstudy_internal.h"

/* One conversation's draws. */
typedef struct dg_plan {
    size_t first, end;  /* the chunk's token span */
    int32_t kind;       /* deg_selfstudy_kind */
    size_t prompt;      /* seed prompt index (seed types) */
    uint64_t seed_a;    /* bot A's sampling seed */
    size_t q;           /* recall: prompt tokens */
    size_t at;          /* recall: the prompt's first token (the chunk's under
                           RANDOM placement) */
    size_t pa, pb;      /* passage_qa: the passage's token span */
} dg_plan;

/* A batch in flight; every array has n entries, all owned. */
typedef struct dg_batch {
    size_t n;
    dg_plan *plans;
    char **system;        /* the chunk's system message */
    char **prompt_a;      /* bot A's user message, NULL when bot A does not run */
    char **message;       /* the conversation's user message */
    int32_t **answer;     /* the answer ids */
    size_t *n_answer;
    deg_trunk **trunk;    /* prompt trunks of [system, user: message] (bot B, teacher) */
    float **last;         /* [n_vocab] logits after each prompt trunk */
    /* The chunk's trunk: chat([system]) prefilled once when bot A runs, then
     * cloned for bot A's prompt and taken by bot B's or the teacher's (whose
     * prompts start with the same ids); NULL when none is kept. */
    deg_trunk **chunk;
    int32_t **chunk_ids;
    size_t *n_chunk;
    /* The teacher's targets read off bot B's greedy decode (its logits before
     * each answer token are the teacher's rows: same context, rows
     * batch-invariant), positions 0-based in the answer; NULL: the teacher
     * pass computes them. */
    deg_distill_target **targets;
    size_t *n_targets;
    char **passage;       /* passage questions: the passage's text (its topic) */
} dg_batch;

/* Bot A as a question writer (selfstudy_questions.c). A passage question's
 * prompt follows DG_FEWSHOT_EXAMPLES worked examples given as earlier turns
 * (user: the passage prompt of dg_fewshot_passage(j); assistant:
 * dg_fewshot_question(j)). */
#define DG_FEWSHOT_EXAMPLES 2
const char *dg_fewshot_passage(size_t j);
const char *dg_fewshot_question(size_t j);
/* 1 for the kinds whose bot A message is a question (passage questions and
 * the question, mechanism and verbatim seed types): its message must pass
 * dg_question_usable, else bot A writes it again (DG_QUESTION_TRIES in all). */
int dg_kind_writes_question(int32_t kind);
#define DG_QUESTION_TRIES 3
/* 1 if question is usable as a stand-alone question about the document: it
 * has a '?', 3..40 words, no word that makes it about the conversation
 * (passage, excerpt, question, above, text), its words are not a run of
 * chunk's words (a heading or sentence copied from the chunk bot A saw), it
 * is not a worked example's question, and it shares a content word (>= 4
 * characters, not a function word) with topic (the passage; NULL: the chunk),
 * so it asks about what the text talks about. Words are ASCII alphanumeric
 * runs, lower-cased. 0 if not, -1 out of memory. */
int dg_question_usable(const char *question, const char *chunk, const char *topic);

deg_status dg_batch_alloc(dg_batch *b, size_t n);
void dg_batch_free(dg_batch *b);

/* Chunk texts, system messages, bot A's prompts; recall and passage answers. */
deg_status dg_selfstudy_prompts(deg_selfstudy *s, dg_batch *b);
/* Bot A's messages (one lockstep sampled decode). */
deg_status dg_selfstudy_bot_a(deg_selfstudy *s, dg_batch *b);
/* Bot B's answers to the seed-type conversations (one lockstep greedy
 * decode; prompt trunks kept for the teacher). */
deg_status dg_selfstudy_bot_b(deg_selfstudy *s, dg_batch *b);
/* The teacher pass and the conversations (out[0..n), on error none). */
deg_status dg_selfstudy_teach(deg_selfstudy *s, dg_batch *b, deg_selfstudy_conv *out);

#endif
