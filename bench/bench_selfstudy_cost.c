/* Self-study synthesis cost on a real model: CPU seconds per conversation
 * split into generation (prompts, bot A, bot B) and teacher, and one hash of
 * every byte of the conversations (so two builds can be shown to synthesise
 * the same conversations). Public API only: link it against any libdeg of the
 * same ABI to compare builds.
 *
 *   bench_selfstudy_cost MODEL CORPUS.txt [n 8] [gen_batch 4] [recall 0]
 *                        [passage_qa 0] [seed 7] [threads 1] [messages]
 *
 * With "messages", each conversation's kind and user message go to stderr
 * (one per line), e.g. to judge bot A's questions by hand.
 *
 * Chunks 128-256 tokens, bot A <= 40 tokens, answers <= 96 (deg.selfstudy.RECIPE).
 * Prints one JSON line. CPU seconds are the process's (all threads). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cartridge.h"
#include "deg.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (s && fread(s, 1, (size_t)len, f) != (size_t)len) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s) s[len] = 0;
    *n = s ? (size_t)len : 0;
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL CORPUS [n gen_batch recall passage_qa seed threads]\n",
                argv[0]);
        return 2;
    }
    size_t n = argc > 3 ? (size_t)atoi(argv[3]) : 8, gb = argc > 4 ? (size_t)atoi(argv[4]) : 4;
    deg_selfstudy_params p = deg_selfstudy_default_params();
    p.recall = argc > 5 ? (float)atof(argv[5]) : 0.0f;
    p.passage_qa = argc > 6 ? (float)atof(argv[6]) : 0.0f;
    p.seed = argc > 7 ? (uint64_t)atoll(argv[7]) : 7;
    deg_set_num_threads(argc > 8 ? atoi(argv[8]) : 1);
    int messages = argc > 9 && !strcmp(argv[9], "messages");
    p.chunk_min = 128;
    p.chunk_max = 256;
    p.max_q = 40;
    p.max_a = 96;
    size_t len = 0;
    char *text = slurp(argv[2], &len);
    if (!text || gb == 0) {
        fprintf(stderr, "cannot read %s (or gen_batch 0)\n", argv[2]);
        return 1;
    }
    deg_model *m = NULL;
    deg_corpus *c = NULL;
    deg_selfstudy *s = NULL;
    const char *names[1] = {argv[2]}, *texts[1] = {text};
    if (deg_model_load(argv[1], &m) != DEG_OK || deg_corpus_new(m, names, texts, &len, 1, &c) ||
        deg_selfstudy_new(c, &p, &s)) {
        fprintf(stderr, "%s\n", deg_errmsg());
        return 1;
    }
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t supervised = 0, kinds[3] = {0, 0, 0};
    deg_selfstudy_conv *v = calloc(gb, sizeof *v);
    for (size_t done = 0; done < n;) {
        size_t k = n - done < gb ? n - done : gb;
        if (deg_selfstudy_generate(s, k, v) != DEG_OK) {
            fprintf(stderr, "%s\n", deg_errmsg());
            return 1;
        }
        for (size_t i = 0; i < k; i++) {
            uint64_t f[6] = {(uint64_t)v[i].kind, v[i].chunk_first, v[i].chunk_end,
                             v[i].n_answer, v[i].n_student, v[i].n_targets};
            h = fnv(h, f, sizeof f);
            h = fnv(h, v[i].message, strlen(v[i].message) + 1);
            h = fnv(h, v[i].answer_ids, v[i].n_answer * sizeof(int32_t));
            h = fnv(h, v[i].student_ids, v[i].n_student * sizeof(int32_t));
            h = fnv(h, v[i].targets, v[i].n_targets * sizeof *v[i].targets);
            supervised += v[i].n_supervised;
            if (messages)
                fprintf(stderr, "%s\t%s\n", deg_selfstudy_kind_name(v[i].kind), v[i].message);
            kinds[v[i].kind == DEG_SELFSTUDY_RECALL       ? 1
                  : v[i].kind == DEG_SELFSTUDY_PASSAGE_QA ? 2
                                                          : 0]++;
            deg_selfstudy_conv_clear(&v[i]);
        }
        done += k;
    }
    deg_selfstudy_timing t = deg_selfstudy_get_timing(s);
    printf("{\"conversations\": %zu, \"seed_types\": %zu, \"recall\": %zu, \"passage_qa\": %zu, "
           "\"supervised\": %zu, \"generate_cpu\": %.2f, \"teacher_cpu\": %.2f, "
           "\"generate_cpu_per_conv\": %.3f, \"teacher_cpu_per_conv\": %.3f, "
           "\"generate_wall\": %.2f, \"teacher_wall\": %.2f, \"hash\": \"%016llx\"}\n",
           n, kinds[0], kinds[1], kinds[2], supervised, t.generate_cpu, t.teacher_cpu,
           t.generate_cpu / (double)n, t.teacher_cpu / (double)n, t.generate, t.teacher,
           (unsigned long long)h);
    free(v);
    deg_selfstudy_free(s);
    deg_corpus_free(c);
    deg_model_free(m);
    free(text);
    return 0;
}
