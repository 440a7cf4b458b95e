/* One cartridge training step on SmolLM2-135M-Instruct (Q4_1 GGUF):
 * p = 256 corpus-init rows (doc/ARCHITECTURE.md as corpus), a 513-token
 * sequence with 512 supervised positions (20 sparse targets each), Adam.
 *
 *   ./build/bench/bench_train [model.gguf [threads]]   ("" = default model)
 *   (model default: $DEG_MODEL, else ${DEG_CACHE:-~/.cache/deg}/models/...)
 *
 * Each measurement runs in its own child process so that its peak RSS
 * (ru_maxrss from wait4, model weights included) is its own:
 *   forward    deg_cartridge_eval with the loss (no backward)
 *   step       deg_cartridge_train_step, activations kept
 *   step_ckpt  deg_cartridge_train_step with per-layer recomputation
 * Prints one JSON line: seconds and peak RSS per mode, the saved-activation
 * bytes, and the step/forward time ratios. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cartridge.h"
#include "deg.h"
#include "grad/train.h"

#define P 256
#define T 513
#define K_TOP 20

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct result {
    double seconds;
    double act_mb;
    int ok;
} result;

static void run_mode(const char *path, int mode, int fd)
{
    result r = {0};
    deg_model *m = NULL;
    if (deg_model_load(path, &m) != DEG_OK) goto out;
    FILE *f = fopen(DEG_SOURCE_ROOT "/doc/ARCHITECTURE.md", "rb");
    if (!f) goto out;
    static char corpus[1 << 20];
    size_t clen = fread(corpus, 1, sizeof corpus, f);
    fclose(f);
    deg_cartridge *c = NULL;
    if (deg_cartridge_init_corpus(m, corpus, clen, P, &c) != DEG_OK) goto out;
    deg_model_info info;
    deg_model_get_info(m, &info);
    int32_t *ids = malloc(T * sizeof *ids);
    deg_distill_target *tg = malloc((size_t)(T - 1) * K_TOP * sizeof *tg);
    size_t nt = 0;
    for (int i = 0; i < T; i++) ids[i] = (int32_t)((i * 7919 + 13) % info.n_vocab);
    for (int pos = 1; pos < T; pos++)
        for (int k = 0; k < K_TOP; k++)
            tg[nt++] = (deg_distill_target){pos, (int32_t)((pos * 31 + k * 977) % info.n_vocab),
                                             -3.0f - 0.01f * k};
    deg_adam_params ap = deg_adam_params_default();
    float loss;
    double t0 = now();
    deg_status s = mode == 0 ? deg_cartridge_eval(c, ids, T, tg, nt, &loss, NULL)
                             : deg_cartridge_train_step(c, ids, T, tg, nt, &ap, mode == 2, &loss);
    r.seconds = now() - t0;
    r.act_mb = (double)dg_train_last_activation_bytes() / 1048576.0;
    r.ok = s == DEG_OK;
    if (!r.ok) fprintf(stderr, "mode %d: %s\n", mode, deg_errmsg());
    free(ids); free(tg);
    deg_cartridge_free(c);
out:
    deg_model_free(m);
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r) _exit(3);
    _exit(r.ok ? 0 : 1);
}

int main(int argc, char **argv)
{
    char path[1024];
    const char *env = getenv("DEG_MODEL"), *cache = getenv("DEG_CACHE"), *home = getenv("HOME");
    if (argc > 1 && argv[1][0]) snprintf(path, sizeof path, "%s", argv[1]);
    else if (env && *env) snprintf(path, sizeof path, "%s", env);
    else if (cache && *cache)
        snprintf(path, sizeof path, "%s/models/SmolLM2-135M-Instruct.Q4_1.gguf", cache);
    else snprintf(path, sizeof path, "%s/.cache/deg/models/SmolLM2-135M-Instruct.Q4_1.gguf",
                  home ? home : "");
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "bench_train: model not found at %s (set DEG_MODEL)\n", path);
        return 2;
    }
    if (argc > 2) deg_set_num_threads(atoi(argv[2]));
    static const char *const names[3] = {"forward", "step", "step_ckpt"};
    result res[3];
    long rss[3];
    for (int mode = 0; mode < 3; mode++) {
        int fds[2];
        if (pipe(fds) != 0) return 1;
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            run_mode(path, mode, fds[1]);
        }
        close(fds[1]);
        memset(&res[mode], 0, sizeof res[mode]);
        if (read(fds[0], &res[mode], sizeof res[mode]) != (ssize_t)sizeof res[mode]) res[mode].ok = 0;
        close(fds[0]);
        int st;
        struct rusage ru;
        wait4(pid, &st, 0, &ru);
        rss[mode] = ru.ru_maxrss; /* KiB */
        if (!res[mode].ok) {
            fprintf(stderr, "bench_train: mode %s failed\n", names[mode]);
            return 1;
        }
    }
    printf("{\"bench\": \"train\", \"model\": \"%s\", \"p\": %d, \"tokens\": %d, "
           "\"supervised\": %d, \"targets_per_position\": %d, \"threads\": %d, "
           "\"blas_arch\": \"%s\"", path, P, T, T - 1, K_TOP, deg_set_num_threads(0),
           deg_blas_arch());
    deg_set_num_threads(argc > 2 ? atoi(argv[2]) : 0);
    for (int i = 0; i < 3; i++)
        printf(", \"%s_s\": %.3f, \"%s_peak_rss_mb\": %.1f, \"%s_activations_mb\": %.1f",
               names[i], res[i].seconds, names[i], rss[i] / 1024.0, names[i], res[i].act_mb);
    printf(", \"step_over_forward\": %.2f, \"step_ckpt_over_forward\": %.2f}\n",
           res[1].seconds / res[0].seconds, res[2].seconds / res[0].seconds);
    return 0;
}
