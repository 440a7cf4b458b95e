/* Bot A as a question writer: the few-shot turns before a passage question
 * and the rule that rejects an unusable question (meta, copied, malformed). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cartridge/selfstudy_bots.h"

/* Two worked examples shown to bot A before its passage (as earlier chat
 * turns: a 135M instruct model follows turns better than instructions).
 * Invented text on no document deg evaluates on, so they teach the form of
 * a question (stand-alone, about the passage's fact, not about "the
 * passage") and nothing a cartridge could be scored on. */
static const char *const EXAMPLE_PASSAGES[DG_FEWSHOT_EXAMPLES] = {
    "The backup job runs every night at 02:00 and keeps the last seven archives; older "
    "archives are deleted automatically.",
    "If the configuration file is missing, the server starts with its built-in defaults and "
    "writes a warning to the log instead of refusing to start.",
};
static const char *const EXAMPLE_QUESTIONS[DG_FEWSHOT_EXAMPLES] = {
    "How many backup archives are kept, and what happens to the older ones?",
    "What does the server do when its configuration file is missing?",
};

const char *dg_fewshot_passage(size_t j) { return EXAMPLE_PASSAGES[j]; }
const char *dg_fewshot_question(size_t j) { return EXAMPLE_QUESTIONS[j]; }

int dg_kind_writes_question(int32_t kind)
{
    return kind == DEG_SELFSTUDY_PASSAGE_QA || kind == DEG_SELFSTUDY_QUESTION ||
           kind == DEG_SELFSTUDY_MECHANISM || kind == DEG_SELFSTUDY_VERBATIM;
}

/* The lower-cased ASCII alphanumeric words of s, NUL-separated in *buf
 * (malloc'd); their count, or -1 out of memory. */
static long words_of(const char *s, char **buf)
{
    size_t n = strlen(s);
    char *w = malloc(2 * n + 2), *o = w;
    if (!w) return -1;
    long count = 0;
    for (size_t i = 0; i < n;) {
        if (!isalnum((unsigned char)s[i])) {
            i++;
            continue;
        }
        while (i < n && isalnum((unsigned char)s[i])) *o++ = (char)tolower((unsigned char)s[i++]);
        *o++ = 0;
        count++;
    }
    *o = 0;
    *buf = w;
    return count;
}

/* Words that make a question about the conversation instead of the document
 * (seen from SmolLM2-135M as bot A: "What is the question that the passage
 * answers?", "What does the excerpt above say?"). */
static const char *const META[] = {"passage", "excerpt", "question", "above", "text"};

/* 1 if the nq words at q (NUL-separated) occur as a run in the nc words at c. */
static int run_in(const char *q, long nq, const char *c, long nc)
{
    for (long i = 0; i + nq <= nc; i++) {
        const char *a = q, *b = c;
        long k = 0;
        while (k < nq && !strcmp(a, b)) {
            a += strlen(a) + 1;
            b += strlen(b) + 1;
            k++;
        }
        if (k == nq) return 1;
        c += strlen(c) + 1;
    }
    return 0;
}

/* Words that carry no topic (content words are the other words of >= 4
 * characters). */
static const char *const FUNCTION_WORDS[] = {
    "what", "which", "does", "that", "this", "with", "from", "have", "when", "where", "there",
    "their", "about", "would", "should", "could", "into", "your", "they", "them", "been",
    "were", "will", "more", "most", "many", "much", "some", "such", "than", "then", "also",
    "only", "other", "each", "very", "make", "made", "like", "used", "uses", "using",
    "doing", "done", "these", "those", "between", "difference", "happens", "happen", "best",
    "whom", "whose", "mean", "means", "purpose", "kind", "type", "ways"};

static int content_word(const char *w)
{
    if (strlen(w) < 4) return 0;
    for (size_t k = 0; k < sizeof FUNCTION_WORDS / sizeof *FUNCTION_WORDS; k++)
        if (!strcmp(w, FUNCTION_WORDS[k])) return 0;
    return 1;
}

/* 1 if one of the nq words at q is a content word among the nt words at t. */
static int shares_content(const char *q, long nq, const char *t, long nt)
{
    for (long i = 0; i < nq; i++, q += strlen(q) + 1) {
        if (!content_word(q)) continue;
        const char *w = t;
        for (long j = 0; j < nt; j++, w += strlen(w) + 1)
            if (!strcmp(q, w)) return 1;
    }
    return 0;
}

/* 1 if the question is one of the worked examples' (bot A echoing them). */
static int is_example(const char *q, long nq)
{
    for (size_t j = 0; j < DG_FEWSHOT_EXAMPLES; j++) {
        char *e = NULL;
        long ne = words_of(EXAMPLE_QUESTIONS[j], &e);
        int same = ne == nq && run_in(q, nq, e, ne);
        free(e);
        if (same) return 1;
    }
    return 0;
}

int dg_question_usable(const char *question, const char *chunk, const char *topic)
{
    if (!strchr(question, '?')) return 0;
    char *q = NULL, *c = NULL;
    char *t = NULL;
    long nq = words_of(question, &q), nc = nq >= 0 ? words_of(chunk, &c) : -1;
    long nt = nc >= 0 ? words_of(topic ? topic : chunk, &t) : -1;
    if (nq < 0 || nc < 0 || nt < 0) {
        free(q);
        free(c);
        return -1;
    }
    int ok = nq >= 3 && nq <= 40;
    const char *w = q;
    for (long i = 0; ok && i < nq; i++, w += strlen(w) + 1)
        for (size_t m = 0; m < sizeof META / sizeof *META; m++)
            if (!strcmp(w, META[m])) ok = 0;
    if (ok && run_in(q, nq, c, nc)) ok = 0; /* copied from the chunk: a heading, a sentence */
    if (ok && (is_example(q, nq) || !shares_content(q, nq, t, nt))) ok = 0;
    free(q);
    free(c);
    free(t);
    return ok;
}
