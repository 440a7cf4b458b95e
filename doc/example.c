/*
 * example.c - the libdeg C API in one program: load a model, render a chat
 * message, tokenize it, generate a short greedy answer, print it.
 *
 *   cc example.c $(pkg-config --cflags --libs deg) -o example
 *   ./example MODEL.gguf ["question"]      (or set DEG_MODEL)
 *
 * Exit status: 0 ok, 1 a deg call failed (its message is printed),
 * 2 usage, 77 no model given (a "skip" for the test harness).
 */
#include <deg.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, deg_status st)
{
    fprintf(stderr, "example: %s failed: %s: %s\n", what, deg_status_name(st), deg_errmsg());
    return 1;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : getenv("DEG_MODEL");
    const char *question = argc > 2 ? argv[2] : "What is the capital of France?";
    if (argc > 3) {
        fprintf(stderr, "usage: %s [MODEL] [QUESTION]\n", argv[0]);
        return 2;
    }
    printf("libdeg %s (header %s)\n", deg_version(), DEG_VERSION_STRING);
    if (!path || !*path) {
        fprintf(stderr, "example: no model: pass a GGUF path or set DEG_MODEL\n");
        return 77;
    }

    deg_model *model = NULL;
    char *prompt = NULL, *text = NULL;
    int32_t *ids = NULL, *out = NULL;
    int rc = 1;
    deg_status st;

    if ((st = deg_model_load(path, &model)) != DEG_OK) return fail("deg_model_load", st);
    deg_model_info info;
    if ((st = deg_model_get_info(model, &info)) != DEG_OK) {
        rc = fail("deg_model_get_info", st);
        goto done;
    }
    printf("model: %s, %d layers, vocab %d\n", info.arch, info.n_layer, info.n_vocab);

    /* The chat layout (ChatML for SmolLM2) ends with the assistant header. */
    deg_chat_message msg = {"user", question};
    if ((st = deg_chat_format(model, &msg, 1, 1, &prompt)) != DEG_OK) {
        rc = fail("deg_chat_format", st);
        goto done;
    }

    /* Ask for the count first (cap 0 -> DEG_ERR_RANGE with *n_ids set). */
    size_t n_ids = 0, len = strlen(prompt);
    st = deg_tokenize(model, prompt, len, 1, NULL, 0, &n_ids);
    if (st != DEG_OK && st != DEG_ERR_RANGE) {
        rc = fail("deg_tokenize", st);
        goto done;
    }
    ids = malloc((n_ids ? n_ids : 1) * sizeof *ids);
    if (!ids || (st = deg_tokenize(model, prompt, len, 1, ids, n_ids, &n_ids)) != DEG_OK) {
        rc = ids ? fail("deg_tokenize", st) : 1;
        goto done;
    }

    deg_sample_params params = deg_sample_params_default(); /* greedy, model's EOS */
    params.max_tokens = 32;
    out = malloc((size_t)params.max_tokens * sizeof *out);
    size_t n_out = 0;
    deg_gen_stats stats;
    if (!out || (st = deg_generate(model, ids, n_ids, &params, out, (size_t)params.max_tokens,
                                   &n_out, &stats)) != DEG_OK) {
        rc = out ? fail("deg_generate", st) : 1;
        goto done;
    }
    if (stats.stopped && n_out > 0) n_out--; /* drop the stop token */

    /* Decode into a buffer; grow it once if the text did not fit. */
    size_t cap = 256, n_text = 0;
    text = malloc(cap + 1);
    if (!text) goto done;
    st = deg_detokenize(model, out, n_out, text, cap, &n_text);
    if (st == DEG_ERR_RANGE && n_text > cap) {
        char *bigger = realloc(text, n_text + 1);
        if (!bigger) goto done;
        text = bigger;
        cap = n_text;
        st = deg_detokenize(model, out, n_out, text, cap, &n_text);
    }
    if (st != DEG_OK) {
        rc = fail("deg_detokenize", st);
        goto done;
    }
    text[n_text] = '\0';
    printf("Q: %s\nA: %s\n", question, text);
    printf("prefill %zu tokens, decode %zu tokens\n", stats.prompt_tokens,
           stats.generated_tokens);
    rc = 0;

done:
    free(text);
    free(out);
    free(ids);
    deg_free(prompt);
    deg_model_free(model);
    return rc;
}
