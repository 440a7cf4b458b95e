/* Self-study in the C library (include/cartridge.h "Self-study"): the
 * corpus stream, seeded and batch-invariant synthesis, conversations whose
 * targets equal an independent teacher prefill, recall spans, the group
 * gradient (packed == weighted per conversation), and a run continued from
 * its state ending bitwise equal to an uninterrupted one. Tiny qwen3. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "cartridge/selfstudy_bots.h"
#include "cartridge.h"
#include "deg.h"
#include "model/arch.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static const char TEXT[] =
    "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs. "
    "How vexingly quick daft zebras jump! Sphinx of black quartz, judge my vow. The five "
    "boxing wizards jump quickly. The quick brown fox jumps over the lazy dog. Pack my box "
    "with five dozen liquor jugs. How vexingly quick daft zebras jump! Sphinx of black "
    "quartz, judge my vow. The five boxing wizards jump quickly.\n\n"
    "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron.\n\n"
    "Is this a question about the text above?\n";

static deg_model *tiny(void)
{
    deg_model *m = NULL;
    cr_assert_eq(deg_model_load(GOLDENS "/tiny-qwen3", &m), DEG_OK, "%s", deg_errmsg());
    return m;
}

static deg_corpus *corpus1(deg_model *m)
{
    const char *names[1] = {"doc.txt"}, *texts[1] = {TEXT};
    size_t lens[1] = {strlen(TEXT)};
    deg_corpus *c = NULL;
    cr_assert_eq(deg_corpus_new(m, names, texts, lens, 1, &c), DEG_OK, "%s", deg_errmsg());
    return c;
}

static deg_selfstudy_params small(uint64_t seed)
{
    deg_selfstudy_params p = deg_selfstudy_default_params();
    p.seed = seed;
    p.chunk_min = 24;
    p.chunk_max = 48;
    p.max_q = 6;
    p.max_a = 8;
    return p;
}

static void tokenize(deg_model *m, const char *s, int32_t *ids, size_t cap, size_t *n)
{
    cr_assert_eq(deg_tokenize(m, s, strlen(s), 0, ids, cap, n), DEG_OK, "%s", deg_errmsg());
}

Test(selfstudy, lossy_utf8_is_python_replace)
{
    /* bytes.decode("utf-8", "replace") of each input (maximal subparts) */
    struct { const char *in; size_t n; const char *want; } cases[] = {
        {"a\xff" "b", 3, "a\xEF\xBF\xBD" "b"},
        {"\xe0\x80", 2, "\xEF\xBF\xBD\xEF\xBF\xBD"},     /* E0 80: two subparts */
        {"\xe2\x82", 2, "\xEF\xBF\xBD"},                 /* truncated: one */
        {"\xf0\x9f\x98x", 4, "\xEF\xBF\xBDx"},
        {"\xed\xa0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* surrogate */
        {"ok \xc3\xa9", 5, "ok \xc3\xa9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n = 0;
        char *out = dg_utf8_lossy(cases[i].in, cases[i].n, &n);
        cr_assert_str_eq(out, cases[i].want, "case %zu", i);
        cr_assert_eq(n, strlen(cases[i].want));
        free(out);
    }
}

Test(selfstudy, corpus_blocks_and_provenance)
{
    deg_model *m = tiny();
    const char *names[2] = {"a.txt", "b.txt"}, *texts[2] = {"  alpha beta\n", "gamma\n\n"};
    size_t lens[2] = {13, 7};
    deg_corpus *c = NULL;
    cr_assert_eq(deg_corpus_new(m, names, texts, lens, 2, &c), DEG_OK, "%s", deg_errmsg());
    size_t len = 0;
    const char *want = "Document: a.txt\n\nalpha beta\n\nDocument: b.txt\n\ngamma\n\n";
    cr_assert_str_eq(deg_corpus_text(c, &len), want);
    cr_assert_eq(len, strlen(want));
    int32_t a[64], b[64];
    size_t na, nb, f0, e0, f1, e1;
    tokenize(m, "Document: a.txt\n\nalpha beta\n\n", a, 64, &na);
    tokenize(m, "Document: b.txt\n\ngamma\n\n", b, 64, &nb);
    cr_assert_eq(deg_corpus_len(c), na + nb);
    cr_assert_arr_eq(deg_corpus_ids(c), a, na * sizeof(int32_t));
    cr_assert_arr_eq(deg_corpus_ids(c) + na, b, nb * sizeof(int32_t));
    const char *name = NULL;
    cr_assert_eq(deg_corpus_doc(c, 0, &name, &f0, &e0), DEG_OK);
    cr_assert_str_eq(name, "a.txt");
    cr_assert_eq(deg_corpus_doc(c, 1, NULL, &f1, &e1), DEG_OK);
    cr_assert(f0 == 0 && e0 == na && f1 == na && e1 == na + nb);
    cr_assert_eq(deg_corpus_doc(c, 2, NULL, NULL, NULL), DEG_ERR_RANGE);
    deg_corpus_free(c);
    /* one document: TEXT stripped + "\n"; bad inputs are named errors */
    const char *one[1] = {" x y \n"};
    size_t l1[1] = {6};
    cr_assert_eq(deg_corpus_new(m, names, one, l1, 1, &c), DEG_OK);
    cr_assert_str_eq(deg_corpus_text(c, NULL), "x y\n");
    deg_corpus_free(c);
    const char *blank[1] = {" \n\t"}, *bad[1] = {"ok\xff"};
    size_t l3[1] = {3};
    cr_assert_eq(deg_corpus_new(m, names, blank, l3, 1, &c), DEG_ERR_ARG);
    cr_assert(strstr(deg_errmsg(), "a.txt") && strstr(deg_errmsg(), "no text"), "%s",
              deg_errmsg());
    cr_assert_eq(deg_corpus_new(m, names, bad, l3, 1, &c), DEG_ERR_UTF8);
    cr_assert(c == NULL);
    cr_assert_eq(deg_corpus_new(m, names, one, l1, 0, &c), DEG_ERR_ARG);
    deg_model_free(m);
}

static int conv_eq(const deg_selfstudy_conv *a, const deg_selfstudy_conv *b)
{
    return a->kind == b->kind && a->chunk_first == b->chunk_first &&
           a->chunk_end == b->chunk_end && !strcmp(a->message, b->message) &&
           a->n_answer == b->n_answer && a->n_student == b->n_student &&
           a->n_targets == b->n_targets && a->n_supervised == b->n_supervised &&
           !memcmp(a->answer_ids, b->answer_ids, a->n_answer * sizeof(int32_t)) &&
           !memcmp(a->student_ids, b->student_ids, a->n_student * sizeof(int32_t)) &&
           !memcmp(a->targets, b->targets, a->n_targets * sizeof *a->targets);
}

Test(selfstudy, seeded_and_batch_invariant)
{
    deg_model *m = tiny();
    deg_corpus *c = corpus1(m);
    deg_selfstudy_params p = small(9);
    deg_selfstudy *s1 = NULL, *s2 = NULL, *s3 = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s1), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_selfstudy_new(c, &p, &s2), DEG_OK);
    deg_selfstudy_conv a[3], b[3], d[1];
    cr_assert_eq(deg_selfstudy_generate(s1, 3, a), DEG_OK, "%s", deg_errmsg());
    for (int i = 0; i < 3; i++) cr_assert_eq(deg_selfstudy_generate(s2, 1, &b[i]), DEG_OK);
    for (int i = 0; i < 3; i++) cr_assert(conv_eq(&a[i], &b[i]), "conversation %d", i);
    /* another seed, another stream */
    p.seed = 10;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s3), DEG_OK);
    cr_assert_eq(deg_selfstudy_generate(s3, 1, d), DEG_OK);
    cr_assert(!conv_eq(&a[0], &d[0]));
    deg_selfstudy_free(s3);
    for (int i = 0; i < 3; i++) {
        cr_assert(a[i].kind >= 0 && a[i].kind < DEG_SELFSTUDY_N_SEED_TYPES);
        cr_assert(a[i].chunk_end - a[i].chunk_first >= 24 &&
                  a[i].chunk_end - a[i].chunk_first <= 48);
        cr_assert(a[i].n_answer >= 1 && a[i].n_answer <= 8 && a[i].n_supervised == a[i].n_answer);
        deg_selfstudy_conv_clear(&a[i]);
        deg_selfstudy_conv_clear(&b[i]);
    }
    deg_selfstudy_conv_clear(&d[0]);
    /* bad params are named */
    p.chunk_max = 3;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s3), DEG_ERR_ARG);
    cr_assert(s3 == NULL && strstr(deg_errmsg(), "chunk_min <= chunk_max"), "%s", deg_errmsg());
    p = small(1);
    p.recall = 0.7f;
    p.passage_qa = 0.5f;
    deg_selfstudy *bad = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &bad), DEG_ERR_ARG);
    cr_assert(strstr(deg_errmsg(), "recall + passage_qa <= 1"), "%s", deg_errmsg());
    deg_selfstudy_free(s1);
    deg_selfstudy_free(s2);
    deg_corpus_free(c);
    deg_model_free(m);
}

/* The teacher's targets of conversation v recomputed by one prefill of
 * chat([system: chunk, user: message]) + answer[:-1] on a fresh trunk. */
static void check_targets(deg_model *m, const deg_corpus *c, const deg_selfstudy_conv *v)
{
    char chunk[4096], sys[8192];
    size_t len = 0;
    cr_assert_eq(deg_detokenize(m, deg_corpus_ids(c) + v->chunk_first,
                                v->chunk_end - v->chunk_first, chunk, sizeof chunk - 1, &len),
                 DEG_OK);
    chunk[len] = 0;
    snprintf(sys, sizeof sys, "The following is an excerpt of a larger text. Use it to "
             "answer.\n\n<excerpt>\n%s\n</excerpt>", chunk);
    deg_chat_message msgs[2] = {{"system", sys}, {"user", v->message}};
    int32_t ids[2048];
    size_t np = 0;
    cr_assert_eq(deg_chat_tokenize(m, msgs, 2, 1, 0, ids, 2048, &np), DEG_OK, "%s", deg_errmsg());
    memcpy(ids + np, v->answer_ids, (v->n_answer - 1) * sizeof(int32_t));
    size_t n = np + v->n_answer - 1;
    deg_model_info info;
    deg_model_get_info(m, &info);
    size_t nv = (size_t)info.n_vocab;
    float *logits = malloc(n * nv * sizeof(float));
    deg_trunk *t = NULL;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, ids, n, logits, NULL), DEG_OK);
    deg_trunk_free(t);
    /* the student sequence: chat([user: message]) + answer */
    int32_t head[512];
    size_t nh = 0;
    cr_assert_eq(deg_chat_tokenize(m, &msgs[1], 1, 1, 0, head, 512, &nh), DEG_OK);
    cr_assert_eq(v->n_student, nh + v->n_answer);
    cr_assert_arr_eq(v->student_ids, head, nh * sizeof(int32_t));
    cr_assert_arr_eq(v->student_ids + nh, v->answer_ids, v->n_answer * sizeof(int32_t));
    size_t k = 0;
    for (size_t j = 0; j < v->n_answer; j++) {
        deg_distill_target tg[20];
        size_t nt = 0;
        cr_assert_eq(deg_distill_targets_from_logits(m, logits + (np - 1 + j) * nv,
                                                     (int32_t)(nh + j), 20, 0.99f, tg, &nt),
                     DEG_OK);
        for (size_t e = 0; e < nt; e++, k++) {
            cr_assert(k < v->n_targets);
            cr_assert_eq(v->targets[k].position, tg[e].position);
            cr_assert_eq(v->targets[k].token, tg[e].token, "position %d", tg[e].position);
            cr_assert_float_eq(v->targets[k].logprob, tg[e].logprob, 1e-4);
        }
    }
    cr_assert_eq(k, v->n_targets);
    free(logits);
}

Test(selfstudy, targets_are_the_teachers)
{
    deg_model *m = tiny();
    deg_corpus *c = corpus1(m);
    deg_selfstudy_params p = small(5);
    deg_selfstudy *s = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK);
    deg_selfstudy_conv v[3];
    cr_assert_eq(deg_selfstudy_generate(s, 3, v), DEG_OK, "%s", deg_errmsg());
    for (int i = 0; i < 3; i++) {
        check_targets(m, c, &v[i]);
        deg_selfstudy_conv_clear(&v[i]);
    }
    deg_selfstudy_free(s);
    /* recall: the message is the chunk's first q tokens, the answer the
     * corpus tokens after them, the targets the teacher's over them */
    p.recall = 1.0f;
    p.recall_q_min = 4;
    p.recall_q_max = 6;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK);
    cr_assert_eq(deg_selfstudy_generate(s, 3, v), DEG_OK, "%s", deg_errmsg());
    const int32_t *ids = deg_corpus_ids(c);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(v[i].kind, DEG_SELFSTUDY_RECALL);
        size_t f = v[i].chunk_first, q = 0;
        for (size_t cand = 4; cand <= 6 && !q; cand++)
            if (!memcmp(v[i].answer_ids, ids + f + cand, v[i].n_answer * sizeof(int32_t)))
                q = cand;
        cr_assert(q, "conversation %d: the answer follows no 4..6-token prompt", i);
        size_t want = v[i].chunk_end - f - q < 8 ? v[i].chunk_end - f - q : 8;
        cr_assert_eq(v[i].n_answer, want);
        check_targets(m, c, &v[i]);
        deg_selfstudy_conv_clear(&v[i]);
    }
    deg_selfstudy_free(s);
    deg_corpus_free(c);
    deg_model_free(m);
}

/* FNV-1a 64 over bytes. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* One hash of everything a conversation holds (its targets' logprob bits too). */
static uint64_t conv_hash(uint64_t h, const deg_selfstudy_conv *v)
{
    uint64_t f[6] = {(uint64_t)v->kind, v->chunk_first, v->chunk_end, v->n_answer, v->n_student,
                     v->n_targets};
    h = fnv(h, f, sizeof f);
    h = fnv(h, v->message, strlen(v->message) + 1);
    h = fnv(h, v->answer_ids, v->n_answer * sizeof(int32_t));
    h = fnv(h, v->student_ids, v->n_student * sizeof(int32_t));
    return fnv(h, v->targets, v->n_targets * sizeof *v->targets);
}

/* conv_hash of 16 conversations of seed 21 of every kind (seed types,
 * recall, passage questions), generated in batches of per_batch. */
static uint64_t mixed_hash(deg_model *m, const deg_corpus *c, int per_batch)
{
    deg_selfstudy_params p = small(21);
    p.recall = 0.25f;
    p.passage_qa = 0.25f;
    p.recall_q_min = 4;
    p.recall_q_max = 6;
    deg_selfstudy *s = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK, "%s", deg_errmsg());
    uint64_t h = 0xcbf29ce484222325ULL;
    int kinds[3] = {0, 0, 0};
    for (int b = 0; b < 16 / per_batch; b++) {
        deg_selfstudy_conv v[16];
        cr_assert_eq(deg_selfstudy_generate(s, (size_t)per_batch, v), DEG_OK, "%s", deg_errmsg());
        for (int i = 0; i < per_batch; i++) {
            kinds[v[i].kind == DEG_SELFSTUDY_RECALL       ? 1
                  : v[i].kind == DEG_SELFSTUDY_PASSAGE_QA ? 2
                                                          : 0]++;
            h = conv_hash(h, &v[i]);
            deg_selfstudy_conv_clear(&v[i]);
        }
    }
    cr_assert(kinds[0] && kinds[1] && kinds[2], "kinds %d %d %d", kinds[0], kinds[1], kinds[2]);
    deg_selfstudy_free(s);
    return h;
}

/* The conversations of a seed are pinned: a change to how synthesis
 * computes them must leave every byte as it was unless it means to change
 * them, and then it updates the value and says why. History: b1cd93cd..
 * from a2bdac6, unchanged by the shared chunk trunk and the targets read off
 * bot B's decode (d3c8031); 8d5b6b70.. since bot A's passage prompt has
 * worked examples and question-writing kinds retry unusable questions
 * (selfstudy_questions.c). Batches of 4 and of 1 give the same bytes (bot
 * A's retries are per row). */
Test(selfstudy, pinned_conversations)
{
    deg_model *m = tiny();
    deg_corpus *c = corpus1(m);
    uint64_t h = mixed_hash(m, c, 4);
    cr_assert_eq(h, 0x8d5b6b7032045178ULL, "conversation hash %016llx", (unsigned long long)h);
    cr_assert_eq(mixed_hash(m, c, 1), h);
    deg_corpus_free(c);
    deg_model_free(m);
}

/* dg_question_usable: stand-alone questions about the document pass; meta
 * questions, questions copied from the chunk, and malformed ones do not. */
Test(selfstudy, question_filter)
{
    const char *chunk = "Why do long usernames get printed as numbers?\n\n\tThe UNIX and POSIX "
                        "standards require that user names be printed as decimal integers.";
    struct { const char *q; int ok; } cases[] = {
        {"What does ps print when a user name does not fit its column?", 1},
        {"Why do long usernames get printed as numbers?", 0},       /* the heading */
        {"why do LONG usernames get printed as numbers ?", 0},      /* the same words */
        {"POSIX standards require that user names be printed as decimal integers?", 0}, /* a run */
        {"Do the standards require that user names be printed?", 1}, /* asks about it */
        {"What is the question that the passage answers?", 0},
        {"What does the excerpt above say about users?", 0},
        {"What do you mean by usernames?", 1},                      /* short, on topic */
        {"What do you mean?", 0},                                   /* no content word */
        {"Explain the excerpt.", 0},                                /* no '?' */
        {"Why?", 0},                                                /* < 3 words */
        {"How is this text organised?", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        cr_assert_eq(dg_question_usable(cases[i].q, chunk, NULL), cases[i].ok, "case %zu: %s",
                     i, cases[i].q);
    /* with a passage as the topic: a question must share a content word with it */
    const char *passage = "The UNIX and POSIX standards require that user names be printed as "
                          "decimal integers.";
    cr_assert_eq(dg_question_usable("Which standards decide how ps shows user names?", chunk,
                                    passage), 1);
    cr_assert_eq(dg_question_usable("How many times can you delete a file?", chunk, passage), 0);
    cr_assert_eq(dg_question_usable("What does the server do when its configuration file is "
                                    "missing?", chunk, NULL), 0); /* a worked example echoed */
    cr_assert(dg_kind_writes_question(DEG_SELFSTUDY_PASSAGE_QA) &&
              dg_kind_writes_question(DEG_SELFSTUDY_VERBATIM) &&
              !dg_kind_writes_question(DEG_SELFSTUDY_SUMMARIZATION) &&
              !dg_kind_writes_question(DEG_SELFSTUDY_RECALL));
}

Test(selfstudy, passages)
{
    deg_model *m = tiny();
    deg_corpus *c = corpus1(m);
    size_t *sp = NULL, n = 0;
    cr_assert_eq(deg_selfstudy_passages(m, deg_corpus_ids(c), deg_corpus_len(c), 1000, 12, &sp,
                                        &n), DEG_OK);
    /* paragraph 1 (two pangram runs) and 2 (Greek letters); 3 is a question */
    cr_assert_eq(n, 2);
    char buf[4096];
    size_t len;
    cr_assert_eq(deg_detokenize(m, deg_corpus_ids(c) + sp[2], sp[3] - sp[2], buf, 4095, &len),
                 DEG_OK);
    buf[len] = 0;
    cr_assert_str_eq(buf, "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu "
                          "nu xi omicron.");
    cr_assert_eq(sp[0], 0);
    size_t whole = sp[1] - sp[0] + sp[3] - sp[2];
    deg_free(sp);
    /* pieces of at most 5 tokens, the fewest equal ones, covering the same tokens */
    cr_assert_eq(deg_selfstudy_passages(m, deg_corpus_ids(c), deg_corpus_len(c), 5, 12, &sp,
                                        &n), DEG_OK);
    size_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(sp[2 * i + 1] - sp[2 * i] <= 5 && sp[2 * i + 1] - sp[2 * i] >= 3);
        cr_assert(i == 0 || sp[2 * i] >= sp[2 * i - 1]);
        sum += sp[2 * i + 1] - sp[2 * i];
    }
    cr_assert_eq(sum, whole);
    deg_free(sp);
    deg_corpus_free(c);
    deg_model_free(m);
}

static size_t n_rows(deg_model *m, size_t p)
{
    deg_model_info info;
    deg_model_get_info(m, &info);
    return (size_t)info.n_layer * 2 * p * (size_t)info.n_head_kv * (size_t)info.head_dim;
}

/* Every layer's rows (keys then values), or with grads the gradients. */
static void dump(deg_model *m, const deg_cartridge *cart, int grads, float *out)
{
    deg_model_info info;
    deg_model_get_info(m, &info);
    size_t per = deg_cartridge_len(cart) * (size_t)info.n_head_kv * (size_t)info.head_dim;
    for (int il = 0; il < info.n_layer; il++) {
        float *k = out + (size_t)il * 2 * per, *v = k + per;
        cr_assert_eq(grads ? deg_cartridge_get_grads(cart, il, k, v)
                           : deg_cartridge_get_rows(cart, il, k, v), DEG_OK);
    }
}

Test(selfstudy, packed_equals_weighted_backward)
{
    deg_model *m = tiny();
    deg_corpus *c = corpus1(m);
    deg_selfstudy_params p = small(11);
    deg_selfstudy *s = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK);
    deg_selfstudy_conv v[3];
    cr_assert_eq(deg_selfstudy_generate(s, 3, v), DEG_OK, "%s", deg_errmsg());
    deg_cartridge *cart = NULL;
    cr_assert_eq(deg_cartridge_init_corpus(m, TEXT, strlen(TEXT), 12, &cart), DEG_OK);
    size_t nr = n_rows(m, 12), total = 0;
    float *gp = malloc(nr * sizeof(float)), *ge = malloc(nr * sizeof(float));
    float *ref = calloc(nr, sizeof(float)), *one = malloc(nr * sizeof(float));
    float lp = 0, le = 0;
    double lref = 0;
    cr_assert_eq(deg_selfstudy_backward(&cart, 1, v, 3, 1, 0, &lp), DEG_OK, "%s", deg_errmsg());
    dump(m, cart, 1, gp);
    deg_cartridge_zero_grads(cart);
    cr_assert_eq(deg_selfstudy_backward(&cart, 1, v, 3, 0, 0, &le), DEG_OK);
    dump(m, cart, 1, ge);
    /* the reference: sum_c (N_c / N) grad(loss_c) from unweighted backwards */
    for (int i = 0; i < 3; i++) total += v[i].n_supervised;
    for (int i = 0; i < 3; i++) {
        float l = 0;
        deg_cartridge_zero_grads(cart);
        cr_assert_eq(deg_cartridge_backward(cart, v[i].student_ids, v[i].n_student, v[i].targets,
                                            v[i].n_targets, 0, &l), DEG_OK);
        dump(m, cart, 1, one);
        double w = (double)v[i].n_supervised / (double)total;
        lref += w * l;
        for (size_t k = 0; k < nr; k++) ref[k] += (float)(w * one[k]);
    }
    cr_assert_float_eq(lp, lref, 1e-5 * lref);
    cr_assert_float_eq(le, lref, 1e-5 * lref);
    float scale = 0, dp = 0, de = 0;
    for (size_t k = 0; k < nr; k++) {
        scale = fmaxf(scale, fabsf(ref[k]));
        dp = fmaxf(dp, fabsf(gp[k] - ref[k]));
        de = fmaxf(de, fabsf(ge[k] - ref[k]));
    }
    cr_assert(scale > 0 && dp <= 1e-5f * scale && de <= 1e-5f * scale, "%g %g %g", scale, dp, de);
    /* a one-part list through the composition path is the same call */
    deg_cartridge *two[2] = {cart, cart};
    deg_cartridge_zero_grads(cart);
    cr_assert_eq(deg_selfstudy_backward(two, 2, v, 3, 1, 0, &lp), DEG_OK, "%s", deg_errmsg());
    free(gp);
    free(ge);
    free(ref);
    free(one);
    for (int i = 0; i < 3; i++) deg_selfstudy_conv_clear(&v[i]);
    deg_cartridge_free(cart);
    deg_selfstudy_free(s);
    deg_corpus_free(c);
    deg_model_free(m);
}

static deg_selfstudy_train_params train_params(void)
{
    deg_selfstudy_train_params tp = deg_selfstudy_default_train_params();
    tp.steps = 3;
    tp.epochs = 2;
    tp.accum = 2;
    tp.gen_batch = 3;
    tp.replay_seed = 5 ^ 0x2E91A7;
    tp.adam.lr = 1e-2f;
    return tp;
}

/* A run stopped after `stop` steps, its state and conversations handed to
 * a new run over a new synthesiser and the saved cartridge, ends with the
 * rows of an uninterrupted run (under COVER placement the restore also sets
 * the draw count, so the resumed run draws the windows the stopped one
 * would have). */
static void resumed_equals_uninterrupted(int stop, int32_t placement)
{
    deg_model *m = tiny();
    deg_corpus *c = corpus1(m);
    deg_selfstudy_params p = small(5);
    p.recall = 0.5f;
    deg_selfstudy_train_params tp = train_params();
    size_t nr = n_rows(m, 12);
    float *want = malloc(nr * sizeof(float)), *got = malloc(nr * sizeof(float));
    /* uninterrupted */
    deg_selfstudy *s = NULL;
    deg_cartridge *cart = NULL;
    deg_selfstudy_run *r = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK);
    cr_assert_eq(deg_selfstudy_set_placement(s, placement), DEG_OK);
    cr_assert_eq(deg_cartridge_init_corpus(m, TEXT, strlen(TEXT), 12, &cart), DEG_OK);
    cr_assert_eq(deg_selfstudy_run_new(s, cart, &tp, &r), DEG_OK, "%s", deg_errmsg());
    for (int i = 0; i < 6; i++) cr_assert_eq(deg_selfstudy_run_step(r, NULL), DEG_OK, "%s",
                                             deg_errmsg());
    cr_assert_eq(deg_selfstudy_run_step(r, NULL), DEG_ERR_STATE);
    deg_selfstudy_run_state st;
    deg_selfstudy_run_get_state(r, &st);
    cr_assert(st.step == 6 && st.trained == 12 && st.n_seen == 6 && st.n_synthesised == 6);
    cr_assert_eq(deg_cartridge_steps(cart), 6);
    dump(m, cart, 0, want);
    deg_selfstudy_run_free(r);
    deg_selfstudy_free(s);
    deg_cartridge_free(cart);
    /* stopped after `stop` steps */
    const char *path = DEG_BUILD_ROOT "/test_selfstudy_resume.safetensors";
    cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK);
    cr_assert_eq(deg_selfstudy_set_placement(s, placement), DEG_OK);
    cr_assert_eq(deg_cartridge_init_corpus(m, TEXT, strlen(TEXT), 12, &cart), DEG_OK);
    cr_assert_eq(deg_selfstudy_run_new(s, cart, &tp, &r), DEG_OK);
    for (int i = 0; i < stop; i++) cr_assert_eq(deg_selfstudy_run_step(r, NULL), DEG_OK);
    cr_assert_eq(deg_cartridge_save(cart, path, 1), DEG_OK);
    deg_selfstudy_run_get_state(r, &st);
    deg_selfstudy_conv *convs = calloc(st.n_synthesised + 1, sizeof *convs);
    for (size_t i = 0; i < st.n_synthesised; i++)
        convs[i] = *deg_selfstudy_run_conv(r, i); /* borrowed views */
    deg_selfstudy *s2 = NULL;
    deg_cartridge *cart2 = NULL;
    deg_selfstudy_run *r2 = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s2), DEG_OK);
    cr_assert_eq(deg_selfstudy_set_placement(s2, placement), DEG_OK);
    cr_assert_eq(deg_cartridge_load(m, path, &cart2), DEG_OK);
    cr_assert_eq(deg_selfstudy_run_new(s2, cart2, &tp, &r2), DEG_OK);
    cr_assert_eq(deg_selfstudy_run_restore(r2, &st, convs), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_selfstudy_n_drawn(s2), st.n_synthesised);
    cr_assert_eq(deg_selfstudy_run_restore(r2, &st, convs), DEG_ERR_STATE);
    free(convs);
    deg_selfstudy_run_free(r); /* the copies are the new run's own */
    deg_selfstudy_free(s);
    deg_cartridge_free(cart);
    for (int i = stop; i < 6; i++) cr_assert_eq(deg_selfstudy_run_step(r2, NULL), DEG_OK, "%s",
                                                deg_errmsg());
    dump(m, cart2, 0, got);
    cr_assert_arr_eq(got, want, nr * sizeof(float), "resumed after %d steps", stop);
    deg_selfstudy_run_free(r2);
    deg_selfstudy_free(s2);
    deg_cartridge_free(cart2);
    remove(path);
    free(want);
    free(got);
    deg_corpus_free(c);
    deg_model_free(m);
}

Test(selfstudy, resume_in_first_pass) { resumed_equals_uninterrupted(1, 0); }
Test(selfstudy, resume_in_replay) { resumed_equals_uninterrupted(4, 0); }
Test(selfstudy, resume_cover_in_first_pass) { resumed_equals_uninterrupted(1, 1); }
Test(selfstudy, resume_cover_in_replay) { resumed_equals_uninterrupted(4, 1); }

Test(selfstudy, restore_refuses_bad_states)
{
    deg_model *m = tiny();
    deg_corpus *c = corpus1(m);
    deg_selfstudy_params p = small(5);
    deg_selfstudy_train_params tp = train_params();
    deg_selfstudy *s = NULL;
    deg_cartridge *cart = NULL;
    deg_selfstudy_run *r = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK);
    cr_assert_eq(deg_cartridge_init_corpus(m, TEXT, strlen(TEXT), 12, &cart), DEG_OK);
    cr_assert_eq(deg_selfstudy_run_new(s, cart, &tp, &r), DEG_OK);
    deg_selfstudy_run_state st = {.step = 1, .trained = 2, .n_synthesised = 3, .n_seen = 4};
    st.rng_replay[0] = st.rng_synthesis[0] = 1;
    deg_selfstudy_conv convs[4] = {0};
    cr_assert_eq(deg_selfstudy_run_restore(r, &st, convs), DEG_ERR_ARG);
    cr_assert(strstr(deg_errmsg(), "do not fit together"), "%s", deg_errmsg());
    size_t order[2] = {0, 0};
    st = (deg_selfstudy_run_state){.step = 4, .trained = 8, .n_synthesised = 2, .n_seen = 2,
                                   .order = order, .n_order = 2};
    tp.steps = 1;
    deg_selfstudy_run_free(r);
    cr_assert_eq(deg_selfstudy_run_new(s, cart, &tp, &r), DEG_OK);
    st.step = 2;
    st.trained = 4;
    st.n_seen = 2;
    st.rng_replay[0] = st.rng_synthesis[0] = 1;
    cr_assert_eq(deg_selfstudy_run_restore(r, &st, convs), DEG_ERR_ARG);
    cr_assert(strstr(deg_errmsg(), "not a permutation"), "%s", deg_errmsg());
    tp.epochs = 0;
    deg_selfstudy_run *bad = NULL;
    cr_assert_eq(deg_selfstudy_run_new(s, cart, &tp, &bad), DEG_ERR_ARG);
    deg_selfstudy_run_free(r);
    deg_cartridge_free(cart);
    deg_selfstudy_free(s);
    deg_corpus_free(c);
    deg_model_free(m);
}

/* A model whose architecture has no layer backward (every loaded one has one
 * now, so the test gives tiny-qwen3 a copy of its descriptor under another
 * name without its backward_layer): the training run is refused with
 * DEG_ERR_UNSUPPORTED before any conversation is synthesised (the
 * synthesis stream has not moved), and so is a direct backward. */
Test(selfstudy, untrainable_model_refused_before_synthesis)
{
    deg_model *m = tiny();
    deg_corpus *c = corpus1(m);
    deg_selfstudy_params p = small(3);
    deg_selfstudy *s = NULL;
    deg_cartridge *cart = NULL;
    deg_selfstudy_run *r = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_cartridge_init_corpus(m, TEXT, strlen(TEXT), 12, &cart), DEG_OK);
    const dg_arch *real = m->arch;
    dg_arch fake = *real;
    fake.name = "untrainable";
    fake.backward_layer = NULL;
    m->arch = &fake;
    uint64_t before[4], after[4];
    deg_selfstudy_get_rng(s, before);
    deg_selfstudy_train_params tp = deg_selfstudy_default_train_params();
    cr_expect_eq(deg_selfstudy_run_new(s, cart, &tp, &r), DEG_ERR_UNSUPPORTED);
    cr_expect(strstr(deg_errmsg(), "deg_selfstudy_run_new: architecture 'untrainable' has no "
                                   "layer backward") != NULL, "%s", deg_errmsg());
    cr_expect_null(r);
    deg_selfstudy_get_rng(s, after);
    cr_expect(memcmp(before, after, sizeof before) == 0, "conversations were synthesised");
    int32_t ids[3] = {5, 6, 7};
    deg_distill_target tg = {1, 4, -0.5f};
    float loss = 0;
    cr_expect_eq(deg_cartridge_backward(cart, ids, 3, &tg, 1, 0, &loss), DEG_ERR_UNSUPPORTED);
    m->arch = real;
    /* the same model with its own descriptor trains */
    cr_assert_eq(deg_selfstudy_run_new(s, cart, &tp, &r), DEG_OK, "%s", deg_errmsg());
    deg_selfstudy_run_free(r);
    deg_selfstudy_free(s);
    deg_cartridge_free(cart);
    deg_corpus_free(c);
    deg_model_free(m);
}
