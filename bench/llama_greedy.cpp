// llama.cpp's greedy answer and top-5 next-token logits for one prompt, to
// compare deg's weight modes with llama.cpp on the same GGUF (issue 15: the
// chat sanity question on SmolLM2 Q4_1 is a near-tie that 8-bit activations
// flip, in llama.cpp as in deg's native mode; doc/ARCHITECTURE.md "Numerics").
// Not built by meson (llama.cpp is not a dependency). Build against the
// llama.cpp build vs_llamacpp.py uses (bench/README.md), e.g. with
// L=/work/llamacpp and S=$L/llama_cpp_python-0.3.36/vendor/llama.cpp:
//   g++ -O2 -std=c++17 -I $S/include -I $S/ggml/include -o /tmp/llama_greedy
//     bench/llama_greedy.cpp $L/build/src/libllama.a $L/build/ggml/src/libggml.a
//     $L/build/ggml/src/libggml-cpu.a $L/build/ggml/src/libggml-base.a -fopenmp -lpthread -ldl
//   printf '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by
//     Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n
//     <|im_start|>assistant\n' > /tmp/prompt.txt        (one line in the shell)
//   /tmp/llama_greedy MODEL.gguf /tmp/prompt.txt
// (that text is deg_chat_format's for the question: the same 37 ids).
// Prints the prompt ids and the top-5 logits (stderr), then the greedy
// answer of at most 48 tokens, stopping at id 2 (<|im_end|>).
#include "llama.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL.gguf PROMPT_FILE\n", argv[0]);
        return 2;
    }
    std::string prompt;
    FILE *pf = fopen(argv[2], "rb");
    if (!pf) {
        fprintf(stderr, "%s: cannot open\n", argv[2]);
        return 2;
    }
    for (int c; (c = fgetc(pf)) != EOF;) prompt += (char)c;
    fclose(pf);
    llama_backend_init();
    llama_model *m = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!m) return 1;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512, cp.n_batch = 512, cp.n_threads = 2, cp.n_threads_batch = 2;
    llama_context *ctx = llama_init_from_model(m, cp);
    const llama_vocab *v = llama_model_get_vocab(m);
    std::vector<llama_token> toks(512);
    int n = llama_tokenize(v, prompt.data(), (int)prompt.size(), toks.data(), (int)toks.size(),
                           false, true);
    if (n < 0) return 1;
    toks.resize(n);
    fprintf(stderr, "%d ids:", n);
    for (llama_token t : toks) fprintf(stderr, " %d", t);
    fprintf(stderr, "\n");
    const int V = llama_vocab_n_tokens(v);
    if (llama_decode(ctx, llama_batch_get_one(toks.data(), n))) return 1;
    std::string out;
    for (int step = 0; step < 48; step++) {
        const float *l = llama_get_logits_ith(ctx, -1);
        std::vector<int> idx(V);
        for (int i = 0; i < V; i++) idx[i] = i;
        std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(),
                          [&](int a, int b) { return l[a] > l[b]; });
        char buf[256];
        for (int k = 0; step == 0 && k < 5; k++) {
            int len = llama_token_to_piece(v, idx[k], buf, sizeof buf - 1, 0, true);
            buf[len > 0 ? len : 0] = 0;
            fprintf(stderr, "top%d id %d '%s' %.3f\n", k, idx[k], buf, l[idx[k]]);
        }
        llama_token t = idx[0];
        int len = llama_token_to_piece(v, t, buf, sizeof buf - 1, 0, true);
        buf[len > 0 ? len : 0] = 0;
        out += buf;
        if (t == 2 || llama_decode(ctx, llama_batch_get_one(&t, 1))) break;
    }
    printf("%s\n", out.c_str());
    llama_free(ctx);
    llama_model_free(m);
    return 0;
}
