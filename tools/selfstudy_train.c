/* deg-selfstudy-train: self-study training of a cartridge from C alone
 * (include/cartridge.h "Self-study"), the C side of the C-vs-Python
 * artifact check (tests/python/test_selfstudy_c.py) and an example of the
 * API. Usage:
 *   deg-selfstudy-train MODEL OUT.safetensors [--p N] [--steps N] [--epochs N]
 *       [--accum N] [--gen-batch N] [--seed N] [--lr X] [--chunk-min N]
 *       [--chunk-max N] [--max-q N] [--max-a N] [--recall X] [--passage-qa X]
 *       [--pack 0|1] [--placement random|cover] FILE...
 * Defaults are deg.selfstudy.train's. Each FILE is one document, named by
 * its path as given. The cartridge (corpus init, p rows) is saved with its
 * Adam moments after the last step. Exit 0 on success, 1 with the library's
 * message on stderr otherwise, 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cartridge.h"
#include "deg.h"
#include "tool_args.h"

#define PROG "deg-selfstudy-train"

static int fail(const char *what)
{
    fprintf(stderr, PROG ": %s: %s\n", what, deg_errmsg());
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
    const char *placement = "random";
    const tool_opt opts[] = {
        {"p", TOOL_SIZE, &p},
        {"steps", TOOL_I32, &tp.steps},
        {"epochs", TOOL_I32, &tp.epochs},
        {"accum", TOOL_I32, &tp.accum},
        {"gen-batch", TOOL_I32, &tp.gen_batch},
        {"seed", TOOL_U64, &sp.seed},
        {"lr", TOOL_F32, &tp.adam.lr},
        {"chunk-min", TOOL_I32, &sp.chunk_min},
        {"chunk-max", TOOL_I32, &sp.chunk_max},
        {"max-q", TOOL_I32, &sp.max_q},
        {"max-a", TOOL_I32, &sp.max_a},
        {"recall", TOOL_F32, &sp.recall},
        {"passage-qa", TOOL_F32, &sp.passage_qa},
        {"pack", TOOL_I32, &tp.pack},
        {"placement", TOOL_STR, &placement},
    };
    int i = 3;
    if (tool_read_opts(PROG, argc, argv, &i, opts, sizeof opts / sizeof opts[0])) return 2;
    tp.replay_seed = sp.seed ^ 0x2E91A7u; /* deg.selfstudy.train's replay stream */
    int cover = !strcmp(placement, "cover");
    if (!cover && strcmp(placement, "random")) {
        fprintf(stderr, PROG ": --placement '%s' is neither random nor cover\n", placement);
        return 2;
    }
    size_t n_docs = (size_t)(argc - i);
    if (n_docs == 0) {
        fprintf(stderr, PROG ": no corpus files\n");
        return 2;
    }
    char *const *names = argv + i;
    char **texts;
    size_t *lens;
    if (tool_read_docs(PROG, names, n_docs, &texts, &lens)) return 1;
    deg_model *model = NULL;
    deg_corpus *corpus = NULL;
    deg_selfstudy *study = NULL;
    deg_cartridge *cart = NULL;
    deg_selfstudy_run *run = NULL;
    if (deg_model_load(argv[1], &model) != DEG_OK) return fail(argv[1]);
    if (deg_corpus_new(model, (const char *const *)names, (const char *const *)texts, lens, n_docs,
                       &corpus) != DEG_OK)
        return fail("corpus");
    size_t text_len = 0;
    const char *text = deg_corpus_text(corpus, &text_len);
    if (deg_cartridge_init_corpus(model, text, text_len, p, &cart) != DEG_OK)
        return fail("init");
    if (deg_selfstudy_new(corpus, &sp, &study) != DEG_OK ||
        deg_selfstudy_set_placement(study, cover ? DEG_SELFSTUDY_PLACE_COVER
                                                 : DEG_SELFSTUDY_PLACE_RANDOM) != DEG_OK)
        return fail("selfstudy");
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
    tool_free_docs(texts, lens, n_docs);
    return 0;
}
