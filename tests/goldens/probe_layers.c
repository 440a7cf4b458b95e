/* Measurement probe (not a test): deg's logits and per-layer hidden states of
 * one token sequence, as raw f32 files, for tests/goldens/measure_f64.py to
 * compare with transformers' f32 and f64 forwards.
 *
 *   probe_layers MODEL MODE IDS OUT [N]
 *     IDS  raw int32 token ids
 *     MODE prefill: one trunk prefill of all ids; OUT.logits [n, V] and
 *                   OUT.layers [n_layer + 2, n, E] (after the embeddings,
 *                   after each layer, after the final norm)
 *          decode:  one id per trunk prefill call; OUT.logits [n, V]
 *          fork:    trunk = the first N ids, one fork fed the rest;
 *                   OUT.logits [n - N, V]
 *          chunked: prefill in chunks of N ids; OUT.logits [n, V]
 * Built with the tests (tests/meson.build: build-tests/tests/probe_layers),
 * against the static library for the internal dg_forward_probe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deg.h"
#include "model/state.h"

static float *layers;
static size_t n_tok, n_embd, n_layer, done; /* done: tokens of the passes before */

/* A pass's rows [done, done + M) at each probe point; one prefill call makes
 * passes of consecutive tokens. */
static void probe(int il, const float *x, size_t M, size_t E)
{
    if (done + M > n_tok || E != n_embd) {
        fprintf(stderr, "probe: pass of %zu tokens after %zu, want %zu\n", M, done, n_tok);
        exit(1);
    }
    for (size_t i = 0; i < M; i++)
        memcpy(layers + ((size_t)(il + 1) * n_tok + done + i) * E, x + i * E, sizeof(float) * E);
    if ((size_t)il == n_layer) done += M;
}

static void write_file(const char *prefix, const char *ext, const float *p, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s.%s", prefix, ext);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, sizeof(float), n, f) != n || fclose(f)) {
        fprintf(stderr, "probe: cannot write %s\n", path);
        exit(1);
    }
}

static void ok(deg_status s, const char *what)
{
    if (s != DEG_OK) {
        fprintf(stderr, "probe: %s: %s\n", what, deg_errmsg());
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: probe_layers MODEL prefill|decode|fork|chunked IDS OUT [N]\n");
        return 2;
    }
    const char *mode = argv[2];
    size_t N = argc > 5 ? (size_t)atol(argv[5]) : 0;
    FILE *f = fopen(argv[3], "rb");
    if (!f) return fprintf(stderr, "probe: cannot read %s\n", argv[3]), 1;
    int32_t ids[4096], extra;
    size_t n = fread(ids, sizeof(int32_t), 4096, f);
    int more = fread(&extra, 1, 1, f) == 1;
    fclose(f);
    if (n == 0 || more || (strcmp(mode, "prefill") && strcmp(mode, "decode") && N == 0) ||
        (!strcmp(mode, "fork") && N >= n))
        return fprintf(stderr, "probe: %s: want 1..4096 ids (and N: 0 < N < ids for fork, "
                       "N > 0 for chunked)\n", argv[3]), 2;
    deg_model *m;
    ok(deg_model_load(argv[1], &m), argv[1]);
    deg_model_info info;
    ok(deg_model_get_info(m, &info), "info");
    size_t V = (size_t)info.n_vocab, E = (size_t)info.n_embd, L = (size_t)info.n_layer;
    float *logits = calloc(n * V, sizeof(float));
    deg_trunk *t;
    ok(deg_trunk_new(m, &t), "trunk");
    if (!strcmp(mode, "prefill")) {
        n_tok = n;
        n_embd = E;
        n_layer = L;
        layers = calloc((L + 2) * n * E, sizeof(float));
        dg_forward_probe = probe;
        ok(deg_trunk_prefill(t, ids, n, logits, NULL), "prefill");
        dg_forward_probe = NULL;
        write_file(argv[4], "layers", layers, (L + 2) * n * E);
        write_file(argv[4], "logits", logits, n * V);
    } else if (!strcmp(mode, "decode")) {
        for (size_t i = 0; i < n; i++) ok(deg_trunk_prefill(t, ids + i, 1, NULL, logits + i * V), "decode");
        write_file(argv[4], "logits", logits, n * V);
    } else if (!strcmp(mode, "fork")) {
        deg_fork *fk;
        ok(deg_trunk_prefill(t, ids, N, NULL, NULL), "trunk prefill");
        ok(deg_fork_new(t, &fk), "fork");
        ok(deg_fork_feed(fk, ids + N, n - N, logits), "fork feed");
        write_file(argv[4], "logits", logits, (n - N) * V);
        deg_fork_free(fk);
    } else if (!strcmp(mode, "chunked")) {
        for (size_t i = 0; i < n; i += N) {
            size_t c = n - i < N ? n - i : N;
            ok(deg_trunk_prefill(t, ids + i, c, logits + i * V, NULL), "chunk");
        }
        write_file(argv[4], "logits", logits, n * V);
    } else {
        return fprintf(stderr, "probe: unknown mode %s\n", mode), 2;
    }
    deg_trunk_free(t);
    deg_model_free(m);
    free(logits);
    free(layers);
    return 0;
}
