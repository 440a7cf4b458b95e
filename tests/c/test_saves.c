/* Whole saves under kill -9 (issue 19 items 2, 3): a child process saves a
 * checkpoint (or a cartridge) in a loop, each save with different numbers;
 * the parent SIGKILLs it at a random moment, 35 times. After every kill the
 * artifact loads, all its parts come from one save (heads and deg.json
 * calibration; every cartridge layer), and after the load no temporary of a
 * killed save is left in the directory. Plus the torn states made by hand:
 * new heads with the old deg.json and no earlier heads kept is refused
 * (FormatError), with the earlier heads kept it loads the earlier save. The
 * same for a checkpoint with LoRA adapters (adapters.safetensors). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cartridge.h"
#include "deg.h"
#include "lora.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"
#define KILLS 35

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

static void dir_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/saves-test-%d-%s", DEG_BUILD_ROOT, (int)getpid(), name);
}

/* Entries of dir other than "." and ".."; *extra gets those not in keep. */
static int count_extra(const char *dir, const char *const *keep, size_t n_keep, char *names,
                       size_t cap)
{
    DIR *d = opendir(dir);
    cr_assert(d, "%s", dir);
    int extra = 0;
    names[0] = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int ok = 0;
        for (size_t i = 0; i < n_keep; i++) ok |= !strcmp(e->d_name, keep[i]);
        if (!ok) {
            extra++;
            strncat(names, e->d_name, cap - strlen(names) - 2);
            strncat(names, " ", cap - strlen(names) - 1);
        }
    }
    closedir(d);
    return extra;
}

static void set_all(deg_ckpt *k, float v)
{
    size_t n = deg_ckpt_n_params(k);
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = v;
    cr_assert_eq(deg_ckpt_set_params(k, p, n), DEG_OK);
    deg_lora *l = deg_ckpt_get_lora(k);
    if (l) {
        size_t nl = deg_lora_n_params(l);
        float *q = malloc(nl * sizeof *q);
        for (size_t i = 0; i < nl; i++) q[i] = v;
        cr_assert_eq(deg_lora_set_params(l, q, nl), DEG_OK);
        free(q);
    }
    double t[DEG_HEAD_KINDS];
    for (int i = 0; i < DEG_HEAD_KINDS; i++) t[i] = v;
    cr_assert_eq(deg_ckpt_set_calibration(k, t), DEG_OK);
    free(p);
}

/* The save every part of k came from (params and temperatures agree). */
static float one_save(deg_ckpt *k)
{
    size_t n = deg_ckpt_n_params(k);
    float *p = malloc(n * sizeof *p);
    cr_assert_eq(deg_ckpt_get_params(k, p, n), DEG_OK);
    for (size_t i = 1; i < n; i++) cr_assert_eq(p[i], p[0], "params from several saves");
    double t[DEG_HEAD_KINDS];
    cr_assert_eq(deg_ckpt_get_calibration(k, t), DEG_OK);
    for (int i = 0; i < DEG_HEAD_KINDS; i++)
        cr_assert_eq((float)t[i], p[0], "calibration %g from another save than heads %g", t[i],
                     p[0]);
    deg_lora *l = deg_ckpt_get_lora(k);
    if (l) {
        size_t nl = deg_lora_n_params(l);
        float *q = malloc(nl * sizeof *q);
        cr_assert_eq(deg_lora_get_params(l, q, nl), DEG_OK);
        for (size_t i = 0; i < nl; i++)
            cr_assert_eq(q[i], p[0], "adapters %g from another save than heads %g", q[i], p[0]);
        free(q);
    }
    float v = p[0];
    free(p);
    return v;
}

static void save_loop(const char *dir, int round, int ready_fd)
{
    deg_ckpt *k = NULL;
    if (deg_ckpt_load(dir, NULL, &k) != DEG_OK) _exit(2);
    if (write(ready_fd, "r", 1) != 1) _exit(3);
    for (int i = 1;; i++) {
        set_all(k, (float)(round * 100000 + i));
        if (deg_ckpt_save(k, dir, "{\"training\": {\"note\": \"kill test\"}}", 0) != DEG_OK)
            _exit(4);
    }
}

/* Fork a saver, wait until it runs, kill it after 0..max_ms ms. */
static void run_and_kill(void (*loop)(const char *, int, int), const char *dir, int round,
                         unsigned max_us)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        loop(dir, round, fds[1]);
        _exit(0);
    }
    close(fds[1]);
    char c;
    cr_assert_eq(read(fds[0], &c, 1), 1, "the saver died before it started");
    close(fds[0]);
    usleep(rnd(max_us));
    kill(pid, SIGKILL);
    int wst = 0;
    waitpid(pid, &wst, 0);
    cr_assert(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL, "saver exited on its own (%d)", wst);
}

/* KILLS kill -9 during checkpoint saves (with_lora: a checkpoint with
 * LoRA adapters, adapters.safetensors saved with the heads). */
static void checkpoint_kills(const char *name, int with_lora)
{
    char dir[512], model[512];
    dir_of(dir, sizeof dir, name);
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    cr_assert_eq(deg_ckpt_create_random(model, 1, dir), DEG_OK, "%s", deg_errmsg());
    deg_ckpt *k0 = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k0), DEG_OK);
    if (with_lora) {
        deg_lora_params lp = deg_lora_default_params();
        lp.rank = 2;
        cr_assert_eq(deg_ckpt_add_lora(k0, &lp, DEG_LORA_SELECT_KIND), DEG_OK, "%s",
                     deg_errmsg());
    }
    set_all(k0, 1.0f); /* every part says "save 1" */
    cr_assert_eq(deg_ckpt_save(k0, dir, NULL, 0), DEG_OK);
    deg_ckpt_free(k0);
    static const char *const keep[] = {"deg.json", "heads.safetensors", "adapters.safetensors"};
    size_t n_keep = with_lora ? 3 : 2;
    int left_before = 0;
    float last = -1;
    int distinct = 0;
    for (int round = 1; round <= KILLS; round++) {
        run_and_kill(save_loop, dir, round, 200000);
        char names[1024];
        left_before += count_extra(dir, keep, n_keep, names, sizeof names) > 0;
        deg_ckpt *k = NULL;
        deg_status s = deg_ckpt_load(dir, NULL, &k);
        cr_assert_eq(s, DEG_OK, "kill %d: %s", round, deg_errmsg());
        cr_assert_eq(deg_ckpt_get_lora(k) != NULL, with_lora, "kill %d: adapters", round);
        float v = one_save(k);
        distinct += v != last;
        last = v;
        deg_ckpt_free(k);
        int extra = count_extra(dir, keep, n_keep, names, sizeof names);
        cr_assert_eq(extra, 0, "kill %d: left after the load: %s", round, names);
    }
    cr_log_info("%s: %d kills, %d left temporaries or .prev behind (removed by the next "
                "load), %d distinct saves seen", name, KILLS, left_before, distinct);
    cr_assert(distinct > 1, "the saver never completed a save: the test kills too early");
}

Test(saves, checkpoint_kill9, .timeout = 900) { checkpoint_kills("ckpt", 0); }

Test(saves, checkpoint_with_adapters_kill9, .timeout = 900) { checkpoint_kills("ckpt-lora", 1); }

/* Torn states made by hand. */
Test(saves, checkpoint_torn_by_hand)
{
    char a[512], b[512], model[512], path[1200], cmd[4200];
    dir_of(a, sizeof a, "torn-a");
    dir_of(b, sizeof b, "torn-b");
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    cr_assert_eq(deg_ckpt_create_random(model, 1, a), DEG_OK);
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(a, NULL, &k), DEG_OK);
    set_all(k, 7);
    cr_assert_eq(deg_ckpt_save(k, a, NULL, 0), DEG_OK);
    set_all(k, 8);
    cr_assert_eq(deg_ckpt_save(k, b, NULL, 0), DEG_OK);
    deg_ckpt_free(k);
    /* deg.json names its heads */
    snprintf(path, sizeof path, "%s/deg.json", a);
    json_t *meta = json_load_file(path, 0, NULL);
    cr_assert(json_is_string(json_object_get(meta, "heads_sha256")));
    json_decref(meta);
    /* killed after the heads rename, before deg.json: .prev holds A's heads */
    snprintf(cmd, sizeof cmd, "ln %s/heads.safetensors %s/heads.safetensors.prev && "
             "cp %s/heads.safetensors %s/heads.safetensors.tmp.x && "
             "mv %s/heads.safetensors.tmp.x %s/heads.safetensors && "
             "echo junk > %s/deg.json.tmp.AbC123", a, a, b, a, a, a, a);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(deg_ckpt_load(a, NULL, &k), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(one_save(k), 7.0f);
    deg_ckpt_free(k);
    static const char *const keep[] = {"deg.json", "heads.safetensors"};
    char names[1024];
    cr_assert_eq(count_extra(a, keep, 2, names, sizeof names), 0, "left: %s", names);
    cr_assert_eq(deg_ckpt_load(a, NULL, &k), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(one_save(k), 7.0f);
    deg_ckpt_free(k);
    /* B's heads with A's deg.json and nothing kept: refused */
    snprintf(cmd, sizeof cmd, "cp %s/heads.safetensors %s/heads.safetensors", b, a);
    cr_assert_eq(system(cmd), 0);
    deg_status s = deg_ckpt_load(a, NULL, &k);
    cr_assert_eq(s, DEG_ERR_FORMAT, "%s", deg_status_name(s));
    cr_assert(strstr(deg_errmsg(), "is not whole"), "%s", deg_errmsg());
    /* heads_sha256 is reserved */
    cr_assert_eq(deg_ckpt_load(b, NULL, &k), DEG_OK);
    cr_assert_eq(deg_ckpt_save(k, b, "{\"heads_sha256\": \"x\"}", 0), DEG_ERR_ARG);
    deg_ckpt_free(k);
}

static void cart_loop(const char *path, int round, int ready_fd)
{
    char model[512];
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    deg_model *m = NULL;
    deg_cartridge *c = NULL;
    if (deg_model_load(model, &m) != DEG_OK) _exit(2);
    if (deg_cartridge_load(m, path, &c) != DEG_OK) _exit(2);
    deg_model_info info;
    deg_model_get_info(m, &info);
    size_t n = deg_cartridge_len(c) * (size_t)info.n_head_kv * (size_t)info.head_dim;
    float *rows = malloc(n * sizeof *rows);
    if (write(ready_fd, "r", 1) != 1) _exit(3);
    for (int i = 1;; i++) {
        for (size_t j = 0; j < n; j++) rows[j] = (float)(round * 100000 + i);
        for (int l = 0; l < info.n_layer; l++)
            if (deg_cartridge_set_rows(c, l, rows, rows) != DEG_OK) _exit(4);
        if (deg_cartridge_save(c, path, 1) != DEG_OK) _exit(4);
    }
}

Test(saves, cartridge_kill9, .timeout = 900)
{
    char dir[512], model[512], path[600];
    dir_of(dir, sizeof dir, "cart");
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/c.safetensors", dir);
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    deg_model *m = NULL;
    cr_assert_eq(deg_model_load(model, &m), DEG_OK);
    deg_cartridge *c = NULL;
    cr_assert_eq(deg_cartridge_init_random_vectors(m, 128, 3, &c), DEG_OK);
    deg_model_info info;
    deg_model_get_info(m, &info);
    size_t n = 128 * (size_t)info.n_head_kv * (size_t)info.head_dim;
    float *k = malloc(n * sizeof *k), *v = malloc(n * sizeof *v);
    for (size_t j = 0; j < n; j++) k[j] = 1.0f; /* every layer says "save 1" */
    for (int l = 0; l < info.n_layer; l++) cr_assert_eq(deg_cartridge_set_rows(c, l, k, k), DEG_OK);
    cr_assert_eq(deg_cartridge_save(c, path, 1), DEG_OK, "%s", deg_errmsg());
    deg_cartridge_free(c);
    static const char *const keep[] = {"c.safetensors"};
    int left_before = 0;
    for (int round = 1; round <= KILLS; round++) {
        run_and_kill(cart_loop, path, round, 40000);
        char names[1024];
        left_before += count_extra(dir, keep, 1, names, sizeof names) > 0;
        deg_status s = deg_cartridge_load(m, path, &c);
        cr_assert_eq(s, DEG_OK, "kill %d: %s", round, deg_errmsg());
        float first = -1;
        for (int l = 0; l < info.n_layer; l++) {
            cr_assert_eq(deg_cartridge_get_rows(c, l, k, v), DEG_OK);
            if (l == 0) first = k[0];
            for (size_t j = 0; j < n; j++)
                cr_assert(k[j] == first && v[j] == first, "kill %d: layers from several saves",
                          round);
        }
        deg_cartridge_free(c);
        cr_assert_eq(count_extra(dir, keep, 1, names, sizeof names), 0,
                     "kill %d: left after the load: %s", round, names);
    }
    cr_log_info("cartridge: %d kills, %d left temporaries behind (removed by the next load)",
                KILLS, left_before);
    free(k);
    free(v);
    deg_model_free(m);
}
