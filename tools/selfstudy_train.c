/* deg-selfstudy-train: self-study training of a cartridge from C alone
 * (include/cartridge.h "Self-study"), the C side of the C-vs-Python
 * artifact check (tests/python/test_selfstudy_c.py) and an example of the
 * API. Usage:
 *   deg-selfstudy-train MODEL OUT.safetensors [--p N] [--steps N] [--epochs N]
 *       [--accum N] [--gen-batch N] [--seed N] [--lr X] [--chunk-min N]
 *       [--chunk-max N] [--max-q N] [--max-a N] [--recall X] [--passage-qa X]
 *       [--pack 0|1] FILE...
 * Defaults are deg.selfstudy.train's. Each FILE is one document, named by
 * its path as given. The cartridge (corpus init, p rows) is saved with its
 * Adam moments after the last step. Exit 0 on success, 1 with the library's
 * message on stderr otherwise, 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cartridge.h"
#include "deg.h"
#include "read_file.h"

static int fail(const char *what)
{
    fprintf(stderr, "deg-selfstudy-train: %s: %s\n", what, deg_errmsg());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: deg-selfstudy-train MODEL OUT [options] FILE...\n");
        return 2;
    }
    deg_selfstudy_params sp = deg_selfstudy_default_params();
    deg_selfstudy_train_params tp = deg_selfstudy_default_train_params();
    size_t p = 256;
    int i = 3;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        const char *k = argv[i] + 2, *v = argv[i + 1];
        if (!strcmp(k, "p")) p = strtoull(v, NULL, 10);
        else if (!strcmp(k, "steps")) tp.steps = atoi(v);
        else if (!strcmp(k, "epochs")) tp.epochs = atoi(v);
        else if (!strcmp(k, "accum")) tp.accum = atoi(v);
        else if (!strcmp(k, "gen-batch")) tp.gen_batch = atoi(v);
        else if (!strcmp(k, "seed")) sp.seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "lr")) tp.adam.lr = strtof(v, NULL);
        else if (!strcmp(k, "chunk-min")) sp.chunk_min = atoi(v);
        else if (!strcmp(k, "chunk-max")) sp.chunk_max = atoi(v);
        else if (!strcmp(k, "max-q")) sp.max_q = atoi(v);
        else if (!strcmp(k, "max-a")) sp.max_a = atoi(v);
        else if (!strcmp(k, "recall")) sp.recall = strtof(v, NULL);
        else if (!strcmp(k, "passage-qa")) sp.passage_qa = strtof(v, NULL);
        else if (!strcmp(k, "pack")) tp.pack = atoi(v);
        else {
            fprintf(stderr, "deg-selfstudy-train: unknown option --%s\n", k);
            return 2;
        }
    }
    tp.replay_seed = sp.seed ^ 0x2E91A7u; /* deg.selfstudy.train's replay stream */
    size_t n_docs = (size_t)(argc - i);
    if (n_docs == 0) {
        fprintf(stderr, "deg-selfstudy-train: no corpus files\n");
        return 2;
    }
    const char **names = calloc(n_docs, sizeof *names);
    char **texts = calloc(n_docs, sizeof *texts);
    size_t *lens = calloc(n_docs, sizeof *lens);
    for (size_t d = 0; d < n_docs; d++) {
        names[d] = argv[i + (int)d];
        if (!(texts[d] = read_file(names[d], &lens[d]))) {
            fprintf(stderr, "deg-selfstudy-train: cannot read %s\n", names[d]);
            return 1;
        }
    }
    deg_model *model = NULL;
    deg_corpus *corpus = NULL;
    deg_selfstudy *study = NULL;
    deg_cartridge *cart = NULL;
    deg_selfstudy_run *run = NULL;
    if (deg_model_load(argv[1], &model) != DEG_OK) return fail(argv[1]);
    if (deg_corpus_new(model, names, (const char *const *)texts, lens, n_docs, &corpus) != DEG_OK)
        return fail("corpus");
    size_t text_len = 0;
    const char *text = deg_corpus_text(corpus, &text_len);
    if (deg_cartridge_init_corpus(model, text, text_len, p, &cart) != DEG_OK)
        return fail("init");
    if (deg_selfstudy_new(corpus, &sp, &study) != DEG_OK) return fail("selfstudy");
    if (deg_selfstudy_run_new(study, cart, &tp, &run) != DEG_OK) return fail("run");
    for (int32_t s = 0; s < tp.steps * tp.epochs; s++) {
        float loss = 0.0f;
        if (deg_selfstudy_run_step(run, &loss) != DEG_OK) return fail("step");
        printf("step %d loss %.6f\n", s + 1, (double)loss);
    }
    if (deg_cartridge_save(cart, argv[2], 1) != DEG_OK) return fail(argv[2]);
    deg_selfstudy_run_free(run);
    deg_selfstudy_free(study);
    deg_cartridge_free(cart);
    deg_corpus_free(corpus);
    deg_model_free(model);
    for (size_t d = 0; d < n_docs; d++) free(texts[d]);
    free(texts);
    free(names);
    free(lens);
    return 0;
}
