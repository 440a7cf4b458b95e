/* bench_fill: deg.fill latency and peak RSS on SmolLM2 with random heads, a
 * 20-field schema (6 choice, 3 score, 3 noul, 6 extract, 2 generate with
 * x-max-tokens 16) over ~500- and ~4,000-token contexts, split into prefill /
 * fork pass / generate, with the fork pass's cost per field.
 *
 * Usage: bench_fill [MODEL] (default $DEG_MODEL, else
 * ${DEG_CACHE:-~/.cache/deg}/models/SmolLM2-135M-Instruct.Q4_1.gguf).
 * Prints one JSON line per context size. Peak RSS is the process high-water
 * mark (getrusage), so the 500-token line is measured first. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "deg.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *SCHEMA =
    "{\"type\": \"object\", \"properties\": {"
    "\"department\": {\"enum\": [\"billing\", \"shipping\", \"returns\", \"other\"]},"
    "\"channel\": {\"enum\": [\"email\", \"phone\", \"chat\"]},"
    "\"language\": {\"enum\": [\"en\", \"de\", \"fr\", \"es\"]},"
    "\"product\": {\"enum\": [\"chair\", \"lamp\", \"table\", \"sofa\", \"bed\"]},"
    "\"tone\": {\"oneOf\": [{\"const\": \"calm\", \"description\": \"polite\"}, "
    "{\"const\": \"upset\", \"description\": \"complaining\"}]},"
    "\"priority\": {\"enum\": [\"low\", \"normal\", \"high\"]},"
    "\"anger\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 4},"
    "\"satisfaction\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 5},"
    "\"effort\": {\"type\": [\"integer\", \"null\"], \"minimum\": 0, \"maximum\": 3},"
    "\"urgent\": {\"type\": \"boolean\"},"
    "\"refund\": {\"type\": \"boolean\"},"
    "\"repeat\": {\"type\": \"boolean\"},"
    "\"order_id\": {\"type\": [\"string\", \"null\"], \"pattern\": \"^[0-9]+$\"},"
    "\"total\": {\"type\": [\"number\", \"null\"]},"
    "\"placed\": {\"type\": [\"string\", \"null\"], \"format\": \"date\"},"
    "\"email\": {\"type\": [\"string\", \"null\"], \"format\": \"email\"},"
    "\"customer\": {\"type\": [\"string\", \"null\"], \"maxLength\": 60},"
    "\"city\": {\"type\": [\"string\", \"null\"]},"
    "\"summary\": {\"type\": \"string\", \"x-generate\": true, \"x-max-tokens\": 16},"
    "\"reply\": {\"type\": \"string\", \"x-generate\": true, \"x-max-tokens\": 16}"
    "}}";

static const char *SENTENCES[] = {
    "Order 4711 was placed on 5 March 2026 by Jane Doe from Lyon. ",
    "She paid $1,234.50 and wrote from jane.doe@example.com about the delivery. ",
    "The red chair arrived two weeks late and one leg was broken. ",
    "Our agent answered by phone and promised a replacement within ten days. ",
    "The customer asked again whether a refund would be possible instead. ",
    "Previous tickets mention a lamp that was returned in January. ",
};

static char *make_context(const deg_model *m, size_t target_tokens, size_t *n_tokens)
{
    size_t cap = target_tokens * 8 + 256, len = 0;
    char *s = malloc(cap);
    size_t n = 0;
    for (size_t i = 0;; i++) {
        const char *t = SENTENCES[i % 6];
        size_t l = strlen(t);
        if (len + l + 1 > cap) break;
        memcpy(s + len, t, l);
        len += l;
        s[len] = 0;
        if (i % 6 == 5) {
            dg_tokenizer_encode(dg_model_tokenizer(m), s, len, 0, NULL, 0, &n); /* count only */
            if (n >= target_tokens) break;
        }
    }
    *n_tokens = n;
    return s;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : getenv("DEG_MODEL");
    char buf[1024];
    if (!path) {
        const char *cache = getenv("DEG_CACHE");
        if (cache) snprintf(buf, sizeof buf, "%s/models/SmolLM2-135M-Instruct.Q4_1.gguf", cache);
        else snprintf(buf, sizeof buf, "%s/.cache/deg/models/SmolLM2-135M-Instruct.Q4_1.gguf",
                      getenv("HOME") ? getenv("HOME") : ".");
        path = buf;
    }
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "bench_fill: model not found: %s (set DEG_MODEL)\n", path);
        return 77;
    }
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/bench_fill_ckpt_%d", (int)getpid());
    if (deg_ckpt_create_random(path, 1, dir) != DEG_OK) {
        fprintf(stderr, "bench_fill: %s\n", deg_errmsg());
        return 1;
    }
    deg_ckpt *k = NULL;
    if (deg_ckpt_load(dir, path, &k) != DEG_OK) {
        fprintf(stderr, "bench_fill: %s\n", deg_errmsg());
        return 1;
    }
    deg_ckpt_set_debug(k, 1);
    const deg_model *m = deg_ckpt_model(k);
    size_t targets[2] = {500, 4000};
    for (int c = 0; c < 2; c++) {
        size_t nt = 0;
        char *ctx = make_context(m, targets[c], &nt);
        json_t *req = json_pack("{s:s, s:o, s:{s:i}}", "context", ctx, "schema",
                                json_loads(SCHEMA, 0, NULL), "options", "max_new_tokens", 16);
        char *rt = json_dumps(req, 0);
        char *resp = NULL, *errs = NULL;
        double t0 = now_s();
        deg_status st = deg_fill(k, rt, strlen(rt), &resp, &errs);
        double dt = now_s() - t0;
        if (st != DEG_OK) {
            fprintf(stderr, "bench_fill: %s (%s)\n", deg_errmsg(), errs ? errs : "");
            return 1;
        }
        json_t *r = json_loads(resp, 0, NULL);
        json_t *tm = json_object_get(r, "timing");
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double forks = json_real_value(json_object_get(tm, "forks_s"));
        json_int_t rows = json_integer_value(json_object_get(tm, "fork_rows"));
        printf("{\"bench\": \"fill\", \"model\": \"%s\", \"fields\": 20, \"context_tokens\": %zu, "
               "\"prompt_tokens\": %lld, \"latency_s\": %.3f, \"prefill_s\": %.3f, "
               "\"fork_pass_s\": %.3f, \"fork_rows\": %lld, \"fork_tokens\": %lld, "
               "\"fork_pass_per_field_ms\": %.2f, \"generate_s\": %.3f, \"generated_tokens\": %lld, "
               "\"heads_and_decode_s\": %.3f, \"peak_rss_mb\": %.1f}\n",
               path, nt,
               (long long)json_integer_value(json_object_get(json_object_get(r, "usage"), "prompt_tokens")),
               dt, json_real_value(json_object_get(tm, "prefill_s")), forks, (long long)rows,
               (long long)json_integer_value(json_object_get(tm, "fork_tokens")),
               rows ? 1000.0 * forks / (double)rows : 0.0,
               json_real_value(json_object_get(tm, "generate_s")),
               (long long)json_integer_value(json_object_get(json_object_get(r, "usage"), "generated_tokens")),
               dt - json_real_value(json_object_get(tm, "prefill_s")) - forks -
                   json_real_value(json_object_get(tm, "generate_s")),
               (double)ru.ru_maxrss / 1024.0);
        fflush(stdout);
        json_decref(r);
        json_decref(req);
        free(rt);
        deg_free(resp);
        deg_free(errs);
        free(ctx);
    }
    deg_ckpt_free(k);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return 0;
}
