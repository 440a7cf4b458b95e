/* bench_fill: deg.fill latency and peak RSS with random heads, a 20-field
 * schema (6 choice, 3 score, 3 noul, 6 extract, 2 generate with
 * x-max-tokens 16) over contexts of the given sizes, split into prefill /
 * fork pass / generate, with the fork pass's cost per field, and the peak
 * memory of each fill against the bound of §12.1 (weights + context K/V +
 * hidden states + one fork batch + bounded scratch).
 *
 * Usage: bench_fill [MODEL] [--sizes 500,4000,...] [--budget-mb N]
 * MODEL: a GGUF file or HF directory (default $DEG_MODEL, else
 * ${DEG_CACHE:-~/.cache/deg}/models/SmolLM2-135M-Instruct.Q4_1.gguf).
 * Prints one JSON line per context size; cpu_s = user + system CPU time of
 * the fill (all threads), a figure less sensitive to a busy machine than
 * the wall-clock split. Peak RSS per fill: the kernel's
 * high-water mark is reset before each fill (/proc/self/clear_refs "5") and
 * read after it (VmHWM); "rss_before_mb" is the resident set before the
 * fill (weights, tokenizer, the request text), "peak_over_base_mb" the
 * growth during the fill, "bound_mb" what §12.1 allows on top of the base:
 *   K/V      prompt_tokens x n_layer x 2 x n_head_kv x head_dim x 4 B
 *   hidden   prompt_tokens x n_embd x 4 B (context rows, kept for the heads)
 *   forks    one fork batch: min(budget, fork tokens x (n_layer x 2 x
 *            n_head_kv x head_dim + 2 x n_embd) x 4 B) (deg_ckpt_set_fork_budget)
 *   scratch  one 256-token pass (activations, FFN, per-thread score rows of
 *            the context length), 32 LM-head rows, the code-point tables
 *            (24 B per context byte) and 4 copies of the request text;
 *   slack    8 MiB for the allocator's free lists and thread buffers (the
 *            base is read after a warm-up fill, but heap trimming between
 *            fills moves it by a few MiB). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "deg.h"
#include "model/arch.h"
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

/* Sentences repeated until the context has at least target_tokens tokens:
 * the token count of one 6-sentence block sets the length, then the whole
 * text is counted once more and grown if short. */
static char *make_context(const deg_model *m, size_t target_tokens, size_t *n_tokens)
{
    const dg_tokenizer *tk = dg_model_tokenizer(m);
    size_t block = 0, per = 0;
    for (int i = 0; i < 6; i++) block += strlen(SENTENCES[i]);
    char one[1024] = "";
    for (int i = 0; i < 6; i++) strcat(one, SENTENCES[i]);
    dg_tokenizer_encode(tk, one, block, 0, NULL, 0, &per); /* count only */
    size_t reps = per ? (target_tokens + per - 1) / per : 1;
    for (;;) {
        size_t len = reps * block;
        char *s = malloc(len + 1);
        for (size_t r = 0; r < reps; r++) memcpy(s + r * block, one, block);
        s[len] = 0;
        size_t n = 0;
        dg_tokenizer_encode(tk, s, len, 0, NULL, 0, &n);
        if (n >= target_tokens || reps > 1000000) {
            *n_tokens = n;
            return s;
        }
        free(s);
        reps += (target_tokens - n) / (per ? per : 1) + 1;
    }
}

static double status_mb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    double v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') v = atof(line + kl + 1) / 1024.0;
    fclose(f);
    return v;
}

static void reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    const char *path = getenv("DEG_MODEL");
    size_t targets[16] = {500, 4000};
    int n_targets = 2;
    size_t budget_mb = 256;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            n_targets = 0;
            for (char *t = strtok(argv[++i], ","); t && n_targets < 16; t = strtok(NULL, ","))
                targets[n_targets++] = (size_t)strtoull(t, NULL, 10);
        } else if (strcmp(argv[i], "--budget-mb") == 0 && i + 1 < argc) {
            budget_mb = (size_t)strtoull(argv[++i], NULL, 10);
        } else {
            path = argv[i];
        }
    }
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
    deg_ckpt_set_fork_budget(k, budget_mb << 20);
    const deg_model *m = deg_ckpt_model(k);
    const dg_hparams *hp = &m->hp;
    {
        /* warm-up fill (not reported): thread pools, BLAS buffers and the
         * first heap growth belong to the base, not to a fill's peak */
        json_t *req = json_pack("{s:s, s:o, s:{s:i}}", "context", SENTENCES[0], "schema",
                                json_loads(SCHEMA, 0, NULL), "options", "max_new_tokens", 16);
        char *rt = json_dumps(req, 0);
        char *resp = NULL, *errs = NULL;
        deg_fill(k, rt, strlen(rt), &resp, &errs);
        deg_free(resp);
        deg_free(errs);
        free(rt);
        json_decref(req);
    }
    for (int c = 0; c < n_targets; c++) {
        size_t nt = 0;
        char *ctx = make_context(m, targets[c], &nt);
        json_t *req = json_pack("{s:s, s:o, s:{s:i}}", "context", ctx, "schema",
                                json_loads(SCHEMA, 0, NULL), "options", "max_new_tokens", 16);
        char *rt = json_dumps(req, 0);
        char *resp = NULL, *errs = NULL;
        double base = status_mb("VmRSS");
        reset_peak();
        struct rusage ru0, ru1;
        getrusage(RUSAGE_SELF, &ru0);
        double t0 = now_s();
        /* a measurement: no deadline (a long context on a busy machine may
         * take more than the default 10 min); the default caps stay */
        deg_run_limits lim = deg_run_limits_default();
        lim.deadline_ms = 0;
        deg_status st = deg_fill_ex(k, rt, strlen(rt), &lim, &resp, &errs);
        double dt = now_s() - t0;
        getrusage(RUSAGE_SELF, &ru1);
        double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                     1e-6 * (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) +
                     (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                     1e-6 * (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec);
        double peak = status_mb("VmHWM");
        if (st != DEG_OK) {
            fprintf(stderr, "bench_fill: %s (%s)\n", deg_errmsg(), errs ? errs : "");
            return 1;
        }
        json_t *r = json_loads(resp, 0, NULL);
        json_t *tm = json_object_get(r, "timing");
        double forks = json_real_value(json_object_get(tm, "forks_s"));
        json_int_t rows = json_integer_value(json_object_get(tm, "fork_rows"));
        json_int_t pt = json_integer_value(json_object_get(json_object_get(r, "usage"), "prompt_tokens"));
        double MB = 1024.0 * 1024.0;
        double kv = (double)pt * hp->n_layer * 2.0 * hp->n_head_kv * hp->head_dim * 4 / MB;
        double hid = (double)pt * hp->n_embd * 4 / MB;
        double QD = (double)hp->n_head * hp->head_dim, KD = (double)hp->n_head_kv * hp->head_dim;
        double scratch = (256.0 * (2.0 * hp->n_embd + 2 * QD + 2 * KD + 2.0 * hp->n_ff) * 4 +
                          2.0 * (double)pt * 4 + 32.0 * hp->n_vocab * 4 + 24.0 * strlen(ctx) +
                          4.0 * strlen(rt)) / MB;
        double ftok = (double)json_integer_value(json_object_get(tm, "fork_tokens"));
        double fork_mb = ftok * ((double)hp->n_layer * 2 * KD + 2.0 * hp->n_embd) * 4 / MB;
        if (fork_mb > (double)budget_mb) fork_mb = (double)budget_mb;
        double bound = kv + hid + fork_mb + scratch + 8.0;
        json_t *warn = json_object_get(json_object_get(json_object_get(r, "meta"), ""), "warnings");
        printf("{\"bench\": \"fill\", \"model\": \"%s\", \"fields\": 20, \"context_tokens\": %zu, "
               "\"prompt_tokens\": %lld, \"latency_s\": %.3f, \"cpu_s\": %.3f, \"prefill_s\": %.3f, "
               "\"fork_pass_s\": %.3f, \"fork_rows\": %lld, \"fork_tokens\": %lld, "
               "\"fork_pass_per_field_ms\": %.2f, \"generate_s\": %.3f, \"generated_tokens\": %lld, "
               "\"heads_and_decode_s\": %.3f, \"rss_before_mb\": %.1f, \"peak_rss_mb\": %.1f, "
               "\"peak_over_base_mb\": %.1f, \"bound_mb\": %.1f, \"kv_mb\": %.1f, "
               "\"hidden_mb\": %.1f, \"fork_batch_mb\": %.1f, \"scratch_mb\": %.1f, "
               "\"within_bound\": %s, \"beyond_trained_positions\": %s}\n",
               path, nt, (long long)pt, dt, cpu, json_real_value(json_object_get(tm, "prefill_s")),
               forks, (long long)rows, (long long)json_integer_value(json_object_get(tm, "fork_tokens")),
               rows ? 1000.0 * forks / (double)rows : 0.0,
               json_real_value(json_object_get(tm, "generate_s")),
               (long long)json_integer_value(json_object_get(json_object_get(r, "usage"), "generated_tokens")),
               dt - json_real_value(json_object_get(tm, "prefill_s")) - forks -
                   json_real_value(json_object_get(tm, "generate_s")),
               base, peak, peak - base, bound, kv, hid, fork_mb, scratch,
               peak - base <= bound ? "true" : "false", warn ? "true" : "false");
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
