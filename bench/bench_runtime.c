/* bench_runtime: prefill and decode speed of libdeg on a real model, with
 * two references measured in the same run (see bench/README.md):
 *
 *  - prefill: model FLOP/s over a prompt of P tokens (default 512) against
 *    a plain BLIS sgemm on the model's projection shapes with M = P
 *    (C[M,N] = A[M,K] W[N,K]^T, the layout of a Linear layer);
 *  - decode: weight bytes read per second (deg_model_info.weight_bytes per
 *    decode step) against a memory-read benchmark (a parallel sum over a
 *    buffer 8x larger than the last-level cache, same thread count).
 *
 * Usage: bench_runtime --model PATH [--prompt 512] [--decode 64]
 *                      [--batch 8] [--threads N] [--reps 2]
 *                      [--weights f32|native|native-f32act]
 *                                               (deg_model_params.weights;
 *                                                default: $DEG_WEIGHTS, else native)
 *                      [--no-reference]         (skip the sgemm and memory
 *                                                references: bench/vs_llamacpp.py)
 * --batch 1 measures batch-1 decode once (the batch-B figure is the same run);
 * --decode 0 measures the prefill alone (decode figures null: the long
 * prefills of bench/vs_llamacpp.py, where the decode's own P-token prefill
 * would double the time).
 * Not a test: it prints a table and exits 0 unless something failed.
 */
#include <blis.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "deg.h"
#include "tensor/blas.h"
#include "tensor/qdot.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, deg_status s)
{
    fprintf(stderr, "bench_runtime: %s: %s: %s\n", what, deg_status_name(s), deg_errmsg());
    exit(1);
}

#define CHECK(what, expr)                    \
    do {                                     \
        deg_status s_ = (expr);              \
        if (s_ != DEG_OK) die((what), s_);   \
    } while (0)

/* ---- references ---------------------------------------------------------- */

/* Best-of-reps seconds for C[M,N] = A[M,K] W[N,K]^T: one plain bli_sgemm
 * call (lib = 0) or libdeg's dg_sgemm_nt (lib = 1: the batch-invariant
 * row-chunked products the model runs on). */
static double time_sgemm(int M, int N, int K, int reps, int lib)
{
    float *a = malloc(sizeof(float) * (size_t)M * K);
    float *w = malloc(sizeof(float) * (size_t)N * K);
    float *c = malloc(sizeof(float) * (size_t)M * N);
    if (!a || !w || !c) {
        fprintf(stderr, "bench_runtime: out of memory for sgemm %dx%dx%d\n", M, N, K);
        exit(1);
    }
    for (size_t i = 0; i < (size_t)M * K; i++) a[i] = (float)((i * 13) % 17) * 0.01f - 0.08f;
    for (size_t i = 0; i < (size_t)N * K; i++) w[i] = (float)((i * 7) % 19) * 0.01f - 0.09f;
    float one = 1.0f, zero = 0.0f;
    double best = INFINITY;
    for (int r = 0; r < reps + 1; r++) { /* first run warms up (packing buffers) */
        double t0 = now();
        if (lib)
            dg_sgemm_nt(M, N, K, a, K, w, K, c, N, 0.0f);
        else
            bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, M, N, K, &one, a, K, 1, w, K, 1, &zero,
                      c, N, 1);
        double t = now() - t0;
        if (r > 0 && t < best) best = t;
    }
    free(a);
    free(w);
    free(c);
    return best;
}

/* Bytes per second of a parallel read (sum) of a large buffer. */
static double mem_read_bandwidth(size_t bytes, int threads, int reps)
{
    size_t n = bytes / sizeof(float);
    float *buf = malloc(n * sizeof(float));
    if (!buf) {
        fprintf(stderr, "bench_runtime: out of memory for the memory benchmark\n");
        exit(1);
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 1023) * 1e-3f;
    double best = INFINITY;
    volatile float sink = 0.0f;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        float total = 0.0f;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
        for (size_t blk = 0; blk < n / 64; blk++) {
            const float *p = buf + blk * 64;
            float acc[16] = {0};
            for (int j = 0; j < 64; j += 16)
                for (int l = 0; l < 16; l++) acc[l] += p[j + l];
            float s = 0.0f;
            for (int l = 0; l < 16; l++) s += acc[l];
            total += s;
        }
        double t = now() - t0;
        sink += total;
        if (t < best) best = t;
    }
    (void)sink;
    free(buf);
    return (double)(n / 64 * 64) * sizeof(float) / best;
}

/* Resident set size of this process now, MiB (/proc/self/statm). */
static double rss_now_mib(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return (double)res * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

static const char *weights_name(int w)
{
    if (w == DEG_WEIGHTS_F32) return "f32";
    if (w == DEG_WEIGHTS_NATIVE) return "native";
    if (w == DEG_WEIGHTS_NATIVE_F32ACT) return "native-f32act";
    const char *e = getenv("DEG_WEIGHTS");
    return e && *e ? e : "native";
}

/* ---- model runs -------------------------------------------------------- */

/* P prompt ids: a fixed pseudo-random walk over ordinary (non-special) ids.
 * Speed does not depend on which ids they are; no stop token is used. */
static int32_t *make_prompt(const deg_model_info *mi, size_t P)
{
    int32_t *ids = malloc(sizeof(int32_t) * P);
    if (!ids) {
        fprintf(stderr, "bench_runtime: out of memory\n");
        exit(1);
    }
    int32_t lo = mi->n_vocab > 2048 ? 1000 : 0, span = mi->n_vocab - lo;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < P; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = lo + (int32_t)((x >> 33) % (uint64_t)span);
    }
    return ids;
}

static double best_prefill(const deg_model *m, const int32_t *ids, size_t P, int reps)
{
    double best = INFINITY;
    for (int r = 0; r < reps; r++) {
        deg_trunk *t;
        CHECK("trunk_new", deg_trunk_new(m, &t));
        double t0 = now();
        CHECK("trunk_prefill", deg_trunk_prefill(t, ids, P, NULL, NULL));
        double dt = now() - t0;
        deg_trunk_free(t);
        if (dt < best) best = dt;
    }
    return best;
}

/* Decode D tokens on B forks of one trunk (prefilled with ctx ids), greedy,
 * no stop token. Returns best seconds per decode step. */
static double best_decode(const deg_model *m, const int32_t *ids, size_t ctx, int B, int D,
                          int reps)
{
    deg_trunk *t;
    CHECK("trunk_new", deg_trunk_new(m, &t));
    CHECK("trunk_prefill", deg_trunk_prefill(t, ids, ctx, NULL, NULL));
    double best = INFINITY;
    int32_t no_stop = 0;
    for (int r = 0; r < reps; r++) {
        deg_fork **forks = calloc((size_t)B, sizeof *forks);
        int32_t **out = calloc((size_t)B, sizeof *out);
        size_t *n_out = calloc((size_t)B, sizeof *n_out);
        deg_sample_params *p = calloc((size_t)B, sizeof *p);
        for (int i = 0; i < B; i++) {
            CHECK("fork_new", deg_fork_new(t, &forks[i]));
            out[i] = malloc(sizeof(int32_t) * (size_t)D);
            p[i] = deg_sample_params_default();
            p[i].max_tokens = D;
            p[i].stop_ids = &no_stop;
            p[i].n_stop_ids = 0;
        }
        double t0 = now();
        CHECK("forks_generate", deg_forks_generate(forks, (size_t)B, p, out, n_out, NULL));
        double dt = now() - t0;
        /* D sampled ids take D - 1 feed steps plus the first logits */
        double per_step = dt / (double)D;
        if (per_step < best) best = per_step;
        for (int i = 0; i < B; i++) {
            deg_fork_free(forks[i]);
            free(out[i]);
        }
        free(forks);
        free(out);
        free(n_out);
        free(p);
    }
    deg_trunk_free(t);
    return best;
}

int main(int argc, char **argv)
{
    const char *model_path = NULL;
    int P = 512, D = 64, B = 8, threads = 0, reps = 2, weights = DEG_WEIGHTS_DEFAULT;
    int refs = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--model") && v) model_path = argv[++i];
        else if (!strcmp(a, "--prompt") && v) P = atoi(argv[++i]);
        else if (!strcmp(a, "--decode") && v) D = atoi(argv[++i]);
        else if (!strcmp(a, "--batch") && v) B = atoi(argv[++i]);
        else if (!strcmp(a, "--threads") && v) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && v) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--no-reference")) refs = 0;
        else if (!strcmp(a, "--weights") && v &&
                 (!strcmp(v, "f32") || !strcmp(v, "native") || !strcmp(v, "native-f32act"))) {
            weights = !strcmp(v, "f32")      ? DEG_WEIGHTS_F32
                      : !strcmp(v, "native") ? DEG_WEIGHTS_NATIVE
                                             : DEG_WEIGHTS_NATIVE_F32ACT;
            i++;
        }
        else {
            fprintf(stderr,
                    "usage: %s --model PATH [--prompt 512] [--decode 64] [--batch 8] "
                    "[--threads N] [--reps 2] [--weights f32|native|native-f32act] [--no-reference]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!model_path || P < 1 || D < 0 || D == 1 || B < 1 || reps < 1) {
        fprintf(stderr,
                "%s: --model PATH is required; prompt >= 1, decode 0 (none) or >= 2, batch >= 1\n",
                argv[0]);
        return 2;
    }

    const char *arch = deg_blas_arch(); /* initialises BLIS on the fast kernel set */
    if (threads > 0) deg_set_num_threads(threads);
    else threads = deg_set_num_threads(0); /* keeps the default and returns it */
    bli_thread_set_num_threads(threads);    /* the sgemm reference runs as wide */

    deg_model *m;
    double tl = now();
    double rss0 = rss_now_mib();
    deg_model_params mp = deg_model_default_params();
    mp.weights = weights;
    CHECK("model_load", deg_model_load_with_params(model_path, &mp, &m));
    tl = now() - tl;
    deg_model_info mi;
    CHECK("model_get_info", deg_model_get_info(m, &mi));
    int32_t *ids = make_prompt(&mi, (size_t)P);
    /* Resident after load with every weight touched once (a 1-token
     * forward with its logits: its KV cache and scratch are a few KiB). */
    double load_rss_mib;
    {
        deg_trunk *t1;
        CHECK("trunk_new", deg_trunk_new(m, &t1));
        float *lg = malloc(sizeof(float) * (size_t)mi.n_vocab); /* LM head reads every row */
        if (!lg) die("logits", DEG_ERR_NOMEM);
        CHECK("trunk_prefill", deg_trunk_prefill(t1, ids, 1, NULL, lg));
        free(lg);
        load_rss_mib = rss_now_mib() - rss0;
        deg_trunk_free(t1);
    }

    /* ---- prefill ---- */
    deg_trunk *warm;
    CHECK("trunk_new", deg_trunk_new(m, &warm));
    CHECK("warm-up prefill", deg_trunk_prefill(warm, ids, P < 64 ? (size_t)P : 64, NULL, NULL));
    deg_trunk_free(warm);
    double t_prefill = best_prefill(m, ids, (size_t)P, reps);

    const double E = mi.n_embd, Hq = (double)mi.n_head * mi.head_dim,
                 Hkv = (double)mi.n_head_kv * mi.head_dim, F = mi.n_ff, L = mi.n_layer;
    const double Mt = P;
    /* linear layers: q, k, v, o, gate, up, down */
    const int shapes[7][2] = {{(int)Hq, (int)E},  {(int)Hkv, (int)E}, {(int)Hkv, (int)E},
                              {(int)E, (int)Hq},  {(int)F, (int)E},   {(int)F, (int)E},
                              {(int)E, (int)F}};
    double lin_flop = 0.0;
    for (int s = 0; s < 7; s++) lin_flop += 2.0 * Mt * shapes[s][0] * shapes[s][1];
    lin_flop *= L;
    /* causal attention: QK^T and PV over (i + 1) keys for query i */
    double attn_flop = L * 2.0 * 2.0 * mi.n_head * mi.head_dim * (Mt * (Mt + 1) / 2.0);
    double head_flop = 2.0 * E * mi.n_vocab; /* LM head, last token */
    double prefill_flop = lin_flop + attn_flop + head_flop;
    double prefill_flops = prefill_flop / t_prefill;

    /* sgemm reference: the same projection shapes, M = P */
    double ref_time = 0.0, lib_time = 0.0, ref_flop = 0.0;
    for (int s = 0; s < 7 && refs; s++) {
        ref_time += time_sgemm(P, shapes[s][0], shapes[s][1], 3 * reps, 0);
        lib_time += time_sgemm(P, shapes[s][0], shapes[s][1], 3 * reps, 1);
        ref_flop += 2.0 * Mt * shapes[s][0] * shapes[s][1];
    }
    double ref_flops = ref_flop / ref_time, lib_flops = ref_flop / lib_time;

    /* ---- decode ---- */
    size_t ctx = (size_t)P;
    double step1 = D ? best_decode(m, ids, ctx, 1, D, reps) : NAN;
    double stepB = D && B > 1 ? best_decode(m, ids, ctx, B, D, reps) : step1;
    double mem_bw = refs ? mem_read_bandwidth((size_t)256 << 20, threads, 3) : NAN;
    double dec_bw1 = (double)mi.weight_bytes / step1;
    double dec_bwB = (double)mi.weight_bytes / stepB;

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss_mib = ru.ru_maxrss / 1024.0;
    double load1 = 0.0;
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf", &load1) != 1) load1 = 0.0;
        fclose(la);
    }

    printf("deg %s  model %s (%s, %d layers, n_embd %d, vocab %d)\n", deg_version(),
           model_path, mi.arch, mi.n_layer, mi.n_embd, mi.n_vocab);
    const char *wait = getenv("OMP_WAIT_POLICY");
    printf("BLIS kernel set %s | threads %d | OMP_WAIT_POLICY %s | load average (1 min) at "
           "end %.2f | model load %.2f s\n",
           arch, threads, wait ? wait : "(unset)", load1, tl);
    printf("weights held for compute: %.1f MiB (%s; quantized kernel %s)\n\n",
           mi.weight_bytes / 1048576.0, weights_name(weights), dg_qdot_kernel());
    printf("%-34s %14s %14s %10s %8s\n", "measure", "value", "reference", "fraction", "target");
    printf("%-34s %14s %14s %10s %8s\n", "----------------------------------", "--------------",
           "--------------", "----------", "--------");
    printf("prefill %-5d tokens     [tok/s]    %14.1f %14s %10s %8s\n", P, P / t_prefill, "",
           "", "");
    printf("prefill FLOP/s vs bli_sgemm [GFLOP/s]  %14.2f %14.2f %9.0f%% %7s\n",
           prefill_flops * 1e-9, ref_flops * 1e-9, 100.0 * prefill_flops / ref_flops, ">=50%");
    printf("prefill FLOP/s vs dg_sgemm [GFLOP/s]  %14.2f %14.2f %9.0f%% %7s\n",
           prefill_flops * 1e-9, lib_flops * 1e-9, 100.0 * prefill_flops / lib_flops, "");
    printf("decode batch 1           [tok/s]    %14.1f %14s %10s %8s\n", 1.0 / step1, "", "", "");
    printf("decode batch %-2d          [tok/s]    %14.1f %14s %10s %8s\n", B, B / stepB, "", "",
           "");
    printf("decode b1 weight read    [GB/s]     %14.2f %14.2f %9.0f%% %7s\n", dec_bw1 * 1e-9,
           mem_bw * 1e-9, 100.0 * dec_bw1 / mem_bw, ">=40%");
    printf("decode b%-2d weight read   [GB/s]     %14.2f %14.2f %9.0f%% %7s\n", B, dec_bwB * 1e-9,
           mem_bw * 1e-9, 100.0 * dec_bwB / mem_bw, "");
    printf("peak RSS                 [MiB]      %14.1f\n", rss_mib);
    printf("resident after load + 1 token [MiB] %11.1f\n", load_rss_mib);
    printf("\nprefill FLOPs/pass: linear %.3g + attention %.3g + LM head %.3g; "
           "reference: BLIS sgemm NT on the %d x (N, K) projection shapes.\n",
           lin_flop, attn_flop, head_flop, P);
    printf("decode: context %zu, %d greedy tokens per fork, no stop token; memory reference: "
           "parallel sum over 256 MiB.\n",
           ctx, D);

    /* one JSON line, as the other bench programs print (skipped references: null) */
    char js[8][32];
    const double jv[8] = {ref_flops * 1e-9, lib_flops * 1e-9, prefill_flops / ref_flops,
                          mem_bw * 1e-9, dec_bw1 / mem_bw, 1.0 / step1, B / stepB,
                          dec_bw1 * 1e-9};
    for (int i = 0; i < 8; i++) {
        if (isfinite(jv[i])) snprintf(js[i], sizeof js[i], "%.3f", jv[i]);
        else snprintf(js[i], sizeof js[i], "null");
    }
    printf("{\"bench\":\"runtime\",\"blas_arch\":\"%s\",\"threads\":%d,\"loadavg1\":%.2f,"
           "\"prompt\":%d,\"prefill_tok_s\":%.2f,\"prefill_gflop_s\":%.3f,"
           "\"sgemm_gflop_s\":%s,\"dg_sgemm_gflop_s\":%s,\"prefill_vs_sgemm\":%s,"
           "\"decode_b1_tok_s\":%s,\"batch\":%d,\"decode_bn_tok_s\":%s,"
           "\"decode_b1_gb_s\":%s,\"mem_read_gb_s\":%s,\"decode_vs_mem\":%s,"
           "\"peak_rss_mib\":%.1f,\"weight_bytes\":%zu,\"weights\":\"%s\","
           "\"qkernel\":\"%s\",\"load_rss_mib\":%.1f}\n",
           arch, threads, load1, P, P / t_prefill, prefill_flops * 1e-9, js[0], js[1], js[2],
           js[5], B, js[6], js[7], js[3], js[4], rss_mib, mi.weight_bytes,
           weights_name(weights), dg_qdot_kernel(), load_rss_mib);

    free(ids);
    deg_model_free(m);
    return 0;
}
