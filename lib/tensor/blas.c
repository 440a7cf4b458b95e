/* BLIS set-up (kernel set, threads) and the f32 products. See blas.h for
 * the rules and why. */
#include "tensor/blas.h"

#include <blis.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const char *g_arch = "unknown";
static const char *g_source = "blis";
static int64_t g_chunk = INT64_MAX;
static int g_sup = 1;
static atomic_int g_threads;

/* ---- kernel-set choice --------------------------------------------------- */

static int arch_id_by_name(const char *name)
{
    for (int i = 0; i < (int)BLIS_NUM_ARCHS; i++) {
        const char *s = bli_arch_string((arch_t)i);
        if (s && strcasecmp(s, name) == 0) return i;
    }
    return -1;
}

/* Does this BLIS build accept id? Tried in a child process because BLIS
 * aborts on an id whose kernels it was built without. 1 yes, 0 no, -1 the
 * probe itself failed. */
static int probe_arch(int id)
{
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", id);
        setenv("BLIS_ARCH_TYPE", buf, 1);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 2); /* BLIS prints before aborting */
        bli_init();
        _exit((int)bli_arch_query_id() == id ? 0 : 1);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Candidate kernel sets for this CPU, best first; returns the count. */
static int candidates(const char **out)
{
    int n = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    unsigned eax = 0, ebx, ecx, edx, family = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
        family = (eax >> 8) & 0xF;
        if (family == 0xF) family += (eax >> 20) & 0xFF;
    }
    if (!avx2) return 0; /* nothing better than what BLIS picks itself */
    if (__builtin_cpu_is("amd")) {
        if (family >= 0x19) out[n++] = "zen3";
        if (family >= 0x17) out[n++] = "zen2";
        out[n++] = "haswell";
    } else if (__builtin_cpu_is("intel") && avx512) {
        out[n++] = "skx";
        out[n++] = "haswell";
    } else {
        out[n++] = "haswell";
    }
#else
    (void)out;
#endif
    return n;
}

static void choose_arch(void)
{
    const char *env = getenv("BLIS_ARCH_TYPE");
    if (env && *env) {
        g_source = "env";
        /* BLIS 0.9 reads the variable with atoi: map a name to its id. */
        const char *p = env;
        if (*p == '-') p++;
        int numeric = *p != '\0';
        for (; *p; p++)
            if (!isdigit((unsigned char)*p)) numeric = 0;
        if (!numeric) {
            int id = arch_id_by_name(env);
            if (id >= 0) {
                char buf[16];
                snprintf(buf, sizeof buf, "%d", id);
                setenv("BLIS_ARCH_TYPE", buf, 1);
            }
        }
        return;
    }
    const char *cand[4];
    int n = candidates(cand);
    for (int i = 0; i < n; i++) {
        int id = arch_id_by_name(cand[i]);
        if (id < 0 || probe_arch(id) != 1) continue;
        char buf[16];
        snprintf(buf, sizeof buf, "%d", id);
        setenv("BLIS_ARCH_TYPE", buf, 1);
        g_source = "auto";
        return;
    }
    g_source = "blis";
}

static int default_threads(void)
{
    const char *e = getenv("DEG_NUM_THREADS");
    if (e && *e) {
        long v = strtol(e, NULL, 10);
        if (v > 0 && v <= 1024) return (int)v;
    }
    return dg_cpu_count();
}

int dg_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void blas_init_once(void)
{
    choose_arch();
    bli_init();
    arch_t id = bli_arch_query_id();
    g_arch = bli_arch_string(id);
    if (strcmp(g_source, "auto") == 0) {
        /* Someone may have initialised BLIS before us: then our choice did
         * not take and BLIS's stands. */
        const char *want = getenv("BLIS_ARCH_TYPE");
        if (!want || atoi(want) != (int)id) g_source = "blis";
    }
    /* Batch invariance: stay on one code path whatever M is. */
    cntx_t *cntx = bli_gks_query_cntx();
    dim_t mt = bli_cntx_get_l3_sup_thresh_dt(BLIS_FLOAT, BLIS_MT, cntx);
    if (mt <= 0) {
        g_chunk = INT64_MAX; /* sup never chosen by M: packed path only */
    } else if (mt > 64) {
        g_chunk = (int64_t)mt - 1; /* every chunk stays below MT: sup path */
    } else {
        g_sup = 0; /* tiny threshold: packed path for everything */
        g_chunk = INT64_MAX;
    }
    int t = default_threads();
    atomic_store(&g_threads, t);
    bli_thread_set_num_threads(t);
    omp_set_num_threads(t);
}

void dg_blas_init(void) { pthread_once(&g_once, blas_init_once); }

const char *dg_blas_arch(void)
{
    dg_blas_init();
    return g_arch;
}

const char *dg_blas_arch_source(void)
{
    dg_blas_init();
    return g_source;
}

int64_t dg_blas_row_chunk(void)
{
    dg_blas_init();
    return g_chunk;
}

int dg_num_threads(void)
{
    dg_blas_init();
    return atomic_load(&g_threads);
}

/* ---- public settings ------------------------------------------------------ */

const char *deg_blas_arch(void) { return dg_blas_arch(); }

int deg_set_num_threads(int n)
{
    dg_blas_init();
    if (n <= 0) n = default_threads();
    int prev = atomic_exchange(&g_threads, n);
    bli_thread_set_num_threads(n);
    omp_set_num_threads(n);
    return prev;
}

const char *deg_runtime_info(void)
{
    static _Thread_local char buf[256];
    dg_blas_init();
    snprintf(buf, sizeof buf,
             "{\"version\":\"%s\",\"blas\":\"BLIS %s\",\"blas_arch\":\"%s\","
             "\"blas_arch_source\":\"%s\",\"threads\":%d,\"cpus\":%d}",
             deg_version(), bli_info_get_version_str(), g_arch, g_source,
             atomic_load(&g_threads), dg_cpu_count());
    return buf;
}

/* ---- products -------------------------------------------------------------- */

/* C[M,N] = A[M,K] . op(B) + beta C, op(B) = B^T ([N,K] rows) or B ([K,N]
 * rows), in row chunks of g_chunk (see blas.h). */
static void sgemm(trans_t tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                  const float *B, int64_t ldb, float *C, int64_t ldc, float beta)
{
    if (M <= 0 || N <= 0) return;
    dg_blas_init();
    float one = 1.0f;
    rntm_t rntm;
    bli_rntm_init_from_global(&rntm);
    bli_rntm_set_l3_sup(g_sup ? TRUE : FALSE, &rntm);
    /* Equal chunks (512 rows -> 2 x 256, not 511 + 1): any size below the
     * threshold gives the same row results. */
    int64_t n_chunks = M <= g_chunk ? 1 : (M - 1) / g_chunk + 1;
    int64_t rows = (M + n_chunks - 1) / n_chunks;
    for (int64_t m0 = 0; m0 < M; m0 += rows) {
        int64_t m = M - m0 < rows ? M - m0 : rows;
        bli_sgemm_ex(BLIS_NO_TRANSPOSE, tb, (dim_t)m, (dim_t)N, (dim_t)K, &one,
                     (float *)(A + m0 * lda), (inc_t)lda, 1, (float *)B, (inc_t)ldb, 1, &beta,
                     C + m0 * ldc, (inc_t)ldc, 1, NULL, &rntm);
    }
}

void dg_sgemm_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                 int64_t ldb, float *C, int64_t ldc, float beta)
{
    sgemm(BLIS_TRANSPOSE, M, N, K, A, lda, B, ldb, C, ldc, beta);
}

void dg_sgemm_nn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                 int64_t ldb, float *C, int64_t ldc, float beta)
{
    sgemm(BLIS_NO_TRANSPOSE, M, N, K, A, lda, B, ldb, C, ldc, beta);
}
