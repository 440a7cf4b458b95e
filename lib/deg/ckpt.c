/* Checkpoint directory (fill.h): deg.json + heads.safetensors, the backbone
 * reference and random head initialisation. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/grow.h"
#include "base/prevsave.h"
#include "base/status.h"
#include "deg/fill.h"
#include "deg/request.h"
#include "format/safetensors.h"
#include "model/chat.h"
#include "model/model.h"
#include "model/sample.h"

/* ---- backbone hash ------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

deg_status dg_backbone_sha256(const char *path, char out[65])
{
    struct stat sb;
    if (stat(path, &sb) != 0) return dg_fail(DEG_ERR_IO, "%s: %s", path, strerror(errno));
    uint8_t d[SHA256_DIGEST_SIZE];
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    if (!S_ISDIR(sb.st_mode)) {
        DG_TRY(dg_sha256_file_update(path, &ctx));
        sha256_digest(&ctx, sizeof d, d);
        dg_hex(d, sizeof d, out);
        return DEG_OK;
    }
    DIR *dir = opendir(path);
    if (!dir) return dg_fail(DEG_ERR_IO, "%s: cannot list: %s", path, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    deg_status st = DEG_OK;
    while ((e = readdir(dir))) {
        size_t l = strlen(e->d_name);
        if (l < 12 || strcmp(e->d_name + l - 12, ".safetensors") != 0) continue;
        if ((st = DG_GROW(names, cap, n + 1)) != DEG_OK) {
            dg_fail_context(st, "backbone hash");
            break;
        }
        names[n] = strdup(e->d_name);
        if (!names[n]) { st = dg_fail(DEG_ERR_NOMEM, "backbone hash: out of memory"); break; }
        n++;
    }
    closedir(dir);
    if (st == DEG_OK) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; st == DEG_OK && i <= n; i++) {
        const char *name = i == 0 ? "config.json" : names[i - 1];
        char *p = dg_path_join(path, name);
        if (!p) { st = dg_fail(DEG_ERR_NOMEM, "backbone hash: out of memory"); break; }
        struct sha256_ctx fc;
        sha256_init(&fc);
        st = dg_sha256_file_update(p, &fc);
        free(p);
        if (st != DEG_OK) break;
        uint8_t fd[SHA256_DIGEST_SIZE];
        char fh[65];
        sha256_digest(&fc, sizeof fd, fd);
        dg_hex(fd, sizeof fd, fh);
        sha256_update(&ctx, strlen(name) + 1, (const uint8_t *)name);
        sha256_update(&ctx, 64, (const uint8_t *)fh);
        sha256_update(&ctx, 1, (const uint8_t *)"\n");
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    if (st != DEG_OK) return st;
    sha256_digest(&ctx, sizeof d, d);
    dg_hex(d, sizeof d, out);
    return DEG_OK;
}

/* ---- head tensor table -------------------------------------------------- */

enum { INIT_UNIFORM, INIT_ZERO, INIT_ANCHOR_B };

typedef struct tdesc {
    const char *name;
    int rows, cols;          /* rows 0 = 1-D [cols]; symbolic sizes resolved below */
    int init;
    size_t off;              /* filled at layout */
} tdesc;

#define R_D (-1)
#define R_COUNT (-2)
#define C_E (-1)
#define C_BUCKET (-3)

static const tdesc TABLE[] = {
    {"choice.q", R_D, C_E, INIT_UNIFORM, 0},     {"choice.k", R_D, C_E, INIT_UNIFORM, 0},
    {"choice.u", 0, C_E, INIT_UNIFORM, 0},       {"score.q", R_D, C_E, INIT_UNIFORM, 0},
    {"score.k", R_D, C_E, INIT_UNIFORM, 0},      {"score.u", 0, C_E, INIT_UNIFORM, 0},
    {"noul.w", 0, C_E, INIT_UNIFORM, 0},         {"noul.b", 0, 1, INIT_ZERO, 0},
    {"extract.qs", R_D, C_E, INIT_UNIFORM, 0},   {"extract.ks", R_D, C_E, INIT_UNIFORM, 0},
    {"extract.qe", R_D, C_E, INIT_UNIFORM, 0},   {"extract.ke", R_D, C_E, INIT_UNIFORM, 0},
    {"extract.null_w", 0, C_E, INIT_UNIFORM, 0}, {"extract.null_b", 0, 1, INIT_ZERO, 0},
    {"count.w", R_COUNT, C_E, INIT_UNIFORM, 0},  {"count.b", 0, DG_COUNT_MAX + 1, INIT_ZERO, 0},
    {"anchor.q", R_D, C_E, INIT_UNIFORM, 0},     {"anchor.k", R_D, C_E, INIT_UNIFORM, 0},
    {"anchor.u", 0, C_E, INIT_UNIFORM, 0},       {"anchor.b", 0, 1, INIT_ANCHOR_B, 0},
    {"anchor.bias", 4, C_BUCKET, INIT_ZERO, 0},
};
#define N_TABLE (sizeof TABLE / sizeof TABLE[0])

static void dims(const tdesc *t, int E, int64_t *r, int64_t *c)
{
    *r = t->rows == R_D ? DG_HEAD_DIM : t->rows == R_COUNT ? DG_COUNT_MAX + 1 : t->rows;
    *c = t->cols == C_E ? E : t->cols == C_BUCKET ? DG_ANCHOR_BUCKETS : t->cols;
}

static size_t numel(const tdesc *t, int E)
{
    int64_t r, c;
    dims(t, E, &r, &c);
    return (size_t)(r ? r : 1) * (size_t)c;
}

static void bind_heads(dg_ckpt *k, const size_t *off)
{
    const float *p[N_TABLE];
    for (size_t i = 0; i < N_TABLE; i++) p[i] = k->store + off[i];
    dg_heads *h = &k->h;
    h->choice_q = p[0]; h->choice_k = p[1]; h->choice_u = p[2];
    h->score_q = p[3]; h->score_k = p[4]; h->score_u = p[5];
    h->noul_w = p[6]; h->noul_b = p[7];
    h->ext_qs = p[8]; h->ext_ks = p[9]; h->ext_qe = p[10]; h->ext_ke = p[11];
    h->ext_null_w = p[12]; h->ext_null_b = p[13];
    h->count_w = p[14]; h->count_b = p[15];
    h->anchor_q = p[16]; h->anchor_k = p[17]; h->anchor_u = p[18]; h->anchor_b = p[19];
    h->anchor_bias = p[20];
}

static deg_status alloc_store(dg_ckpt *k, int E, size_t *off)
{
    size_t total = 0;
    for (size_t i = 0; i < N_TABLE; i++) {
        off[i] = total;
        total += numel(&TABLE[i], E);
    }
    k->store = calloc(total, sizeof(float));
    if (!k->store) return dg_fail(DEG_ERR_NOMEM, "checkpoint: out of memory for heads");
    k->n_store = total;
    k->h.E = E;
    bind_heads(k, off);
    return DEG_OK;
}

/* Uniform(-1/sqrt(E), 1/sqrt(E)) from xoshiro256** streams seeded by
 * (seed, tensor index): a tensor's values do not depend on the others. */
static void init_random(dg_ckpt *k, const size_t *off, uint64_t seed)
{
    int E = k->h.E;
    float a = 1.0f / sqrtf((float)E);
    for (size_t i = 0; i < N_TABLE; i++) {
        float *p = k->store + off[i];
        size_t n = numel(&TABLE[i], E);
        dg_rng rng;
        dg_rng_seed(&rng, seed * 0x9E3779B97F4A7C15ull + i + 1);
        for (size_t j = 0; j < n; j++) {
            switch (TABLE[i].init) {
            case INIT_UNIFORM: p[j] = (float)((2.0 * dg_rng_uniform(&rng) - 1.0) * a); break;
            case INIT_ANCHOR_B: p[j] = -6.0f; break;
            default: p[j] = 0.0f;
            }
        }
    }
}

static const char *TEMP_NAMES[DG_T_N] = {"choice", "score", "noul", "extract", "count"};

static const char *base_name(const char *path)
{
    size_t l = strlen(path);
    while (l > 1 && path[l - 1] == '/') l--;
    const char *s = path + l;
    while (s > path && s[-1] != '/') s--;
    return s;
}

void deg_ckpt_free(deg_ckpt *k)
{
    if (!k) return;
    if (k->own_model) deg_model_free(k->model);
    deg_lora_free(k->lora);
    free(k->store);
    free(k->array_mode);
    free(k->chat_layout);
    free(k->backbone_file);
    free(k->backbone_sha256);
    free(k->backbone_path);
    free(k);
}

/* deg.json "lm_prior" / "list_prior": absent/null = off, else {"<field>": x}, a
 * number in [0, DG_PRIOR_MAX] (lm_prior.start: the weight of the LM-head start prior,
 * fill_extract.c; list_prior.bonus: the list prior's logit bonus, lists.h, with
 * an optional boolean "by_anchor" into *flag, NULL = not allowed).
 * Errors: DEG_ERR_FORMAT. */
static deg_status weight_prior_load(const json_t *v, const char *jpath, const char *name,
                                    const char *field, int *has, double *out, int *flag)
{
    *has = 0;
    *out = 0.0;
    if (flag) *flag = 0;
    if (!v || json_is_null(v)) return DEG_OK;
    json_t *s = json_object_get(v, field);
    json_t *f = flag ? json_object_get(v, "by_anchor") : NULL;
    if (!json_is_object(v) || !json_is_number(s) || (f && !json_is_boolean(f)) ||
        json_object_size(v) != 1 + (f != NULL))
        return dg_fail(DEG_ERR_FORMAT, "%s: %s must be null or {\"%s\": number%s}", jpath,
                       name, field, flag ? " [, \"by_anchor\": boolean]" : "");
    if (f) *flag = json_is_true(f);
    double x = json_number_value(s);
    if (!(x >= 0 && x <= DG_PRIOR_MAX))
        return dg_fail(DEG_ERR_FORMAT, "%s: %s.%s must be a number in [0, %g], got %g", jpath,
                       name, field, DG_PRIOR_MAX, x);
    *has = 1;
    *out = x;
    return DEG_OK;
}

/* The checkpoint's layout name of a model: the model's own layout
 * (dg_chat_layout_of_model), named by the library's one mapping (model/chat.h). */
static const char *model_chat_layout(const deg_model *m)
{
    return dg_chat_layout_name(dg_chat_layout_of_model(m));
}

/* Write heads.safetensors (the store, tensors in TABLE layout), the adapters
 * of k (if any: adapters.safetensors, meta["lora"]), then deg.json (meta) into
 * dir. Whole saves (issue 19, base/prevsave.h): deg.json names the heads
 * ("heads_sha256") and the adapters (lora.sha256) by SHA-256 and its rename is
 * the one commit point; under the directory's save lock the current heads and
 * adapters are kept as .prev until the new deg.json is in place. A save killed
 * before deg.json leaves the old deg.json, new files and their .prev (the old
 * ones): the loader takes the versions deg.json names, and the next save or
 * load puts them back. Temporaries of killed saves are removed by the next
 * save or load. */
#define PREV_NAME "heads.safetensors.prev"

/* With the directory lock held: remove killed saves' temporaries and put
 * back the .prev files deg.json names (or drop them when it names the
 * current ones). Best effort: a file neither version matches is left for the
 * loader to refuse. */
static void settle_dir(const char *jpath, const char *spath, const char *apath)
{
    dg_remove_stale_temps(jpath);
    dg_remove_stale_temps(spath);
    dg_remove_stale_temps(apath);
    json_t *meta = json_load_file(jpath, 0, NULL);
    const char *want[2] = {json_string_value(json_object_get(meta, "heads_sha256")),
                           json_string_value(json_object_get(json_object_get(meta, "lora"),
                                                             "sha256"))};
    const char *path[2] = {spath, apath};
    for (int i = 0; i < 2; i++) {
        char *prev = dg_prev_path(path[i]);
        int use_prev = 0;
        if (prev && access(prev, F_OK) == 0 &&
            (!want[i] || dg_prev_pick(path[i], want[i], jpath, &use_prev) == DEG_OK))
            dg_prev_settle(path[i], use_prev);
        free(prev);
    }
    dg_clear_error();
    json_decref(meta);
}

static deg_status write_files(const float *store, const size_t *off, int E, json_t *meta,
                              const char *dir, const dg_ckpt *k)
{
    char *jpath = dg_path_join(dir, "deg.json"), *spath = dg_path_join(dir, "heads.safetensors");
    char *apath = dg_path_join(dir, DG_CKPT_ADAPTERS_FILE);
    char *text = NULL;
    dg_st_writer *w = NULL;
    deg_status st = DEG_OK;
    int lock = -1;
    if (!jpath || !spath || !apath) {
        st = dg_fail(DEG_ERR_NOMEM, "checkpoint write: out of memory");
        goto done;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        st = dg_fail(DEG_ERR_IO, "%s: cannot create checkpoint directory: %s", dir,
                     strerror(errno));
        goto done;
    }
    lock = dg_dir_lock(dir, 1);
    settle_dir(jpath, spath, apath);
    if ((st = dg_prev_keep(spath)) != DEG_OK || (st = dg_prev_keep(apath)) != DEG_OK) goto done;
    if ((st = dg_st_writer_new(&w)) != DEG_OK) goto done;
    for (size_t i = 0; i < N_TABLE && st == DEG_OK; i++) {
        int64_t shape[2];
        dims(&TABLE[i], E, &shape[0], &shape[1]);
        if (shape[0]) st = dg_st_writer_add(w, TABLE[i].name, DG_F32, 2, shape, store + off[i]);
        else st = dg_st_writer_add(w, TABLE[i].name, DG_F32, 1, &shape[1], store + off[i]);
    }
    if (st == DEG_OK) st = dg_st_writer_meta(w, "format", DG_CKPT_FORMAT);
    if (st == DEG_OK) st = dg_st_writer_commit(w, spath);
    if (st == DEG_OK && k) st = dg_ckpt_lora_save(k, meta, dir);
    char sha[65];
    if (st == DEG_OK) st = dg_file_sha256(spath, sha);
    if (st == DEG_OK) {
        json_object_set_new(meta, "heads_sha256", json_string(sha));
        text = json_dumps(meta, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (!text) st = dg_fail(DEG_ERR_NOMEM, "checkpoint write: out of memory");
    }
    if (st == DEG_OK) {
        dg_chunk c[2] = {{text, strlen(text)}, {"\n", 1}};
        st = dg_write_atomic(jpath, c, 2);
    }
    if (st == DEG_OK) {
        dg_prev_drop(spath);
        dg_prev_drop(apath);
    }
done:
    dg_dir_unlock(lock);
    dg_st_writer_free(w);
    free(text);
    free(jpath);
    free(spath);
    free(apath);
    return st;
}

/* After a load: with no save running, settle what killed saves left. */
static void tidy_dir(const char *dir, const char *jpath, const char *spath)
{
    int lock = dg_dir_lock(dir, 0);
    if (lock < 0) return;
    char *apath = dg_path_join(dir, DG_CKPT_ADAPTERS_FILE);
    if (apath) settle_dir(jpath, spath, apath);
    free(apath);
    dg_dir_unlock(lock);
}

static char *trimmed_dir_name(const char *path)
{
    const char *b = base_name(path);
    size_t l = strlen(b);
    while (l > 0 && b[l - 1] == '/') l--;
    char *s = malloc(l + 1);
    if (s) {
        memcpy(s, b, l);
        s[l] = 0;
    }
    return s;
}

deg_status deg_ckpt_create_random(const char *model_path, uint64_t seed, const char *dir)
{
    if (!model_path || !dir) return dg_fail(DEG_ERR_ARG, "deg_ckpt_create_random: NULL argument");
    deg_model *m = NULL;
    DG_TRY(deg_model_load(model_path, &m));
    deg_status st = DEG_OK;
    dg_ckpt k;
    memset(&k, 0, sizeof k);
    size_t off[N_TABLE];
    char sha[65];
    json_t *meta = NULL;
    char *fname = NULL;
    deg_model_info info;
    deg_model_get_info(m, &info);
    if ((st = alloc_store(&k, info.n_embd, off)) != DEG_OK) goto done;
    init_random(&k, off, seed);
    if ((st = dg_backbone_sha256(model_path, sha)) != DEG_OK) goto done;
    fname = trimmed_dir_name(model_path);
    char abs[4096];
    const char *absp = realpath(model_path, abs) ? abs : model_path;
    json_t *temps = json_object();
    for (int i = 0; i < DG_T_N; i++) json_object_set_new(temps, TEMP_NAMES[i], json_real(1.0));
    json_t *heads = json_object();
    for (size_t i = 0; i < N_TABLE; i++) {
        int64_t r, c;
        dims(&TABLE[i], info.n_embd, &r, &c);
        json_object_set_new(heads, TABLE[i].name,
                            r ? json_pack("[I,I]", (json_int_t)r, (json_int_t)c)
                              : json_pack("[I]", (json_int_t)c));
    }
    meta = json_pack("{s:s, s:{s:s, s:s, s:s, s:s}, s:i, s:o, s:o, s:s, s:i, s:s, s:I}",
                     "format", DG_CKPT_FORMAT, "backbone", "file", fname ? fname : "",
                     "sha256", sha, "arch", info.arch, "path", absp, "head_dim", DG_HEAD_DIM,
                     "heads", heads, "calibration", temps, "array_mode", "index",
                     "anchor_min_tokens", 0, "chat_layout", model_chat_layout(m), "init_seed",
                     (json_int_t)seed);
    if (!meta || !fname) {
        st = dg_fail(DEG_ERR_NOMEM, "deg_ckpt_create_random: out of memory");
        goto done;
    }
    st = write_files(k.store, off, info.n_embd, meta, dir, NULL);
done:
    json_decref(meta);
    free(fname);
    free(k.store);
    deg_model_free(m);
    return st;
}

static char *dup_str(const char *s) { return s ? strdup(s) : NULL; }

/* Read dir's deg.json: *meta (owned by the caller) and its backbone fields
 * (borrowed from *meta; *bpath may be NULL). */
static deg_status read_meta(const char *jpath, json_t **meta, const char **bfile,
                            const char **bsha, const char **bpath)
{
    json_error_t err;
    *meta = json_load_file(jpath, 0, &err);
    if (!*meta) {
        /* jansson reports line -1 when the file could not be opened at all */
        if (err.line <= 0) return dg_fail(DEG_ERR_IO, "%s: %s", jpath, err.text);
        return dg_fail(DEG_ERR_FORMAT, "%s: %s (line %d, column %d)", jpath, err.text, err.line,
                       err.column);
    }
    const char *fmt = json_string_value(json_object_get(*meta, "format"));
    if (!fmt || strcmp(fmt, DG_CKPT_FORMAT) != 0)
        return dg_fail(DEG_ERR_FORMAT, "%s: \"format\" is %s, expected \"%s\"", jpath,
                       fmt ? fmt : "missing", DG_CKPT_FORMAT);
    json_t *bb = json_object_get(*meta, "backbone");
    *bfile = json_string_value(json_object_get(bb, "file"));
    *bsha = json_string_value(json_object_get(bb, "sha256"));
    *bpath = json_string_value(json_object_get(bb, "path"));
    if (!*bfile || !*bsha || strlen(*bsha) != 64)
        return dg_fail(DEG_ERR_FORMAT, "%s: \"backbone\" needs \"file\" and \"sha256\"", jpath);
    return DEG_OK;
}

/* The backbone of the checkpoint in dir: the path recorded in deg.json, else
 * the file name next to the checkpoint, else ${DEG_CACHE:-~/.cache/deg}/models
 * (the first that exists). *out owned by the caller (free). */
static deg_status resolve_backbone(const char *dir, const char *jpath, const char *bfile,
                                   const char *bpath, char **out)
{
    const char *cands[3] = {bpath, NULL, NULL};
    char *c1 = dg_path_join(dir, bfile), *c2 = NULL;
    const char *cache = getenv("DEG_CACHE");
    const char *home = getenv("HOME");
    if (cache) {
        char *m = dg_path_join(cache, "models");
        c2 = m ? dg_path_join(m, bfile) : NULL;
        free(m);
    } else if (home) {
        char *m = dg_path_join(home, ".cache/deg/models");
        c2 = m ? dg_path_join(m, bfile) : NULL;
        free(m);
    }
    cands[1] = c1;
    cands[2] = c2;
    struct stat sb;
    *out = NULL;
    for (int i = 0; i < 3 && !*out; i++)
        if (cands[i] && stat(cands[i], &sb) == 0) *out = strdup(cands[i]);
    free(c1);
    free(c2);
    if (!*out)
        return dg_fail(DEG_ERR_IO, "%s: backbone '%s' not found (recorded path, next to "
                       "the checkpoint, or the deg model cache); pass the model path", jpath,
                       bfile);
    return DEG_OK;
}

deg_status deg_ckpt_backbone_path(const char *dir, char **out)
{
    if (!dir || !out) return dg_fail(DEG_ERR_ARG, "deg_ckpt_backbone_path: NULL argument");
    *out = NULL;
    char *jpath = dg_path_join(dir, "deg.json");
    if (!jpath) return dg_fail(DEG_ERR_NOMEM, "deg_ckpt_backbone_path: out of memory");
    json_t *meta = NULL;
    const char *bfile, *bsha, *bpath;
    deg_status st = read_meta(jpath, &meta, &bfile, &bsha, &bpath);
    if (st == DEG_OK) st = resolve_backbone(dir, jpath, bfile, bpath, out);
    json_decref(meta);
    free(jpath);
    return st;
}

deg_ckpt_params deg_ckpt_default_params(void)
{
    deg_ckpt_params p;
    memset(&p, 0, sizeof p);
    p.model = NULL;
    p.model_path = NULL;
    p.has_null_margin = 0;
    p.null_margin = 0.0;
    p.fork_budget_bytes = 0;
    return p;
}

deg_status deg_ckpt_load(const char *dir, const char *model_path, deg_ckpt **out)
{
    deg_ckpt_params p = deg_ckpt_default_params();
    p.model_path = model_path;
    return deg_ckpt_open(dir, &p, out);
}

/* The head tensors into k->store (offsets off[]): from heads.safetensors (spath),
 * or its previous generation (ppath) when deg.json's heads_sha256 names that one
 * (dg_prev_pick). Checks dtype, shape and finiteness of every tensor. */
static deg_status load_heads(dg_ckpt *k, const json_t *meta, const char *spath,
                             const char *ppath, const char *jpath, int n_embd,
                             const size_t *off)
{
    const char *hpath = spath;
    int use_prev = 0;
    json_t *hs = json_object_get(meta, "heads_sha256");
    if (hs && !json_is_string(hs))
        return dg_fail(DEG_ERR_FORMAT, "%s: heads_sha256 must be 64 hex digits", jpath);
    DG_TRY(dg_prev_pick(spath, json_string_value(hs), jpath, &use_prev));
    if (use_prev) hpath = ppath;
    dg_safetensors *sf = NULL;
    DG_TRY(dg_safetensors_open(hpath, &sf));
    deg_status st = DEG_OK;
    for (size_t i = 0; i < N_TABLE && st == DEG_OK; i++) {
        const dg_tensor_view *t = dg_safetensors_find(sf, TABLE[i].name);
        int64_t r, c;
        dims(&TABLE[i], n_embd, &r, &c);
        int nd = r ? 2 : 1;
        if (!t || t->dtype != DG_F32 || t->n_dims != nd ||
            (nd == 2 ? (t->shape[0] != r || t->shape[1] != c) : t->shape[0] != c)) {
            st = dg_fail(t ? DEG_ERR_MISMATCH : DEG_ERR_FORMAT,
                         "%s: head tensor '%s' %s (expected F32 [%lld%s%lld])", hpath,
                         TABLE[i].name, t ? "has the wrong dtype or shape" : "is missing",
                         (long long)(r ? r : c), r ? ", " : "", (long long)(r ? c : 0));
            break;
        }
        memcpy(k->store + off[i], t->data, numel(&TABLE[i], n_embd) * sizeof(float));
        for (size_t j = 0; j < numel(&TABLE[i], n_embd); j++)
            if (!isfinite(k->store[off[i] + j])) {
                st = dg_fail(DEG_ERR_NUMERIC, "%s: head tensor '%s' holds NaN/Inf", hpath,
                             TABLE[i].name);
                break;
            }
    }
    dg_safetensors_close(sf);
    return st;
}

/* *on = deg.json boolean `name` (absent = 0). Errors: DEG_ERR_FORMAT (not a boolean). */
static deg_status read_flag(const json_t *meta, const char *name, const char *jpath, int *on)
{
    json_t *v = json_object_get(meta, name);
    if (v && !json_is_boolean(v))
        return dg_fail(DEG_ERR_FORMAT, "%s: %s must be true or false", jpath, name);
    *on = json_is_true(v);
    return DEG_OK;
}

/* deg.json's decoding settings: calibration temperatures and
 * extract_confidence, array_mode, anchor_min_tokens, key_prior, lm_prior, list_prior,
 * count_prior, mention_prior, span_single_line, span_word_bounds, span_single_sentence, span_distinct,
 * item_null, generate_stop_repeat, span_whole_names, null_margin. Errors: DEG_ERR_FORMAT. */
static deg_status read_decoding(dg_ckpt *k, const json_t *meta, const char *jpath)
{
    json_t *cal = json_object_get(meta, "calibration");
    for (int i = 0; i < DG_T_N; i++) {
        json_t *v = json_object_get(cal, TEMP_NAMES[i]);
        double T = v ? json_number_value(v) : 1.0;
        if (v && (!json_is_number(v) || !(T > 0) || !isfinite(T)))
            return dg_fail(DEG_ERR_FORMAT, "%s: calibration.%s must be a number > 0", jpath,
                           TEMP_NAMES[i]);
        k->temp[i] = (float)T;
    }
    json_t *xc = json_object_get(cal, "extract_confidence");
    if (xc) {
        json_t *sc = json_object_get(xc, "scale"), *bi = json_object_get(xc, "bias");
        if (!json_is_object(xc) || !json_is_number(sc) || !json_is_number(bi) ||
            !isfinite(json_number_value(sc)) || !isfinite(json_number_value(bi)) ||
            json_object_size(xc) != 2)
            return dg_fail(DEG_ERR_FORMAT, "%s: calibration.extract_confidence must be "
                           "{\"scale\": finite number, \"bias\": finite number}", jpath);
        k->has_xconf = 1;
        k->xconf_scale = json_number_value(sc);
        k->xconf_bias = json_number_value(bi);
    }
    const char *am = json_string_value(json_object_get(meta, "array_mode"));
    if (am && strcmp(am, "index") != 0 && strcmp(am, "anchor") != 0)
        return dg_fail(DEG_ERR_FORMAT, "%s: array_mode must be \"index\" or \"anchor\"", jpath);
    json_t *amt = json_object_get(meta, "anchor_min_tokens");
    if (amt && !json_is_null(amt) && (!json_is_integer(amt) || json_integer_value(amt) < 0))
        return dg_fail(DEG_ERR_FORMAT, "%s: anchor_min_tokens must be an integer >= 0", jpath);
    k->array_mode = strdup(am ? am : "index");
    k->anchor_min_tokens = json_integer_value(json_object_get(meta, "anchor_min_tokens"));
    DG_TRY(dg_key_prior_load(json_object_get(meta, "key_prior"), jpath, &k->key_prior));
    DG_TRY(weight_prior_load(json_object_get(meta, "lm_prior"), jpath, "lm_prior", "start",
                             &k->has_lm_prior, &k->lm_prior_start, NULL));
    DG_TRY(weight_prior_load(json_object_get(meta, "list_prior"), jpath, "list_prior", "bonus",
                             &k->has_list_prior, &k->list_prior_bonus,
                             &k->list_prior_by_anchor));
    DG_TRY(dg_count_prior_load(json_object_get(meta, "count_prior"), jpath, &k->count_prior));
    DG_TRY(dg_mention_prior_load(json_object_get(meta, "mention_prior"), jpath, &k->mention_prior));
    DG_TRY(read_flag(meta, "span_single_line", jpath, &k->span_single_line));
    DG_TRY(read_flag(meta, "span_word_bounds", jpath, &k->span_word_bounds));
    DG_TRY(read_flag(meta, "span_single_sentence", jpath, &k->span_single_sentence));
    DG_TRY(read_flag(meta, "span_distinct", jpath, &k->span_distinct));
    DG_TRY(read_flag(meta, "item_null", jpath, &k->item_null));
    DG_TRY(read_flag(meta, "generate_stop_repeat", jpath, &k->generate_stop_repeat));
    DG_TRY(read_flag(meta, "span_whole_names", jpath, &k->span_whole_names));
    /* The checkpoint's own null_margin (nats, absent = 0): the margin its
     * trainer chose on development data (the reference ships one per model,
     * contract §9); a server's --null-margin and a request's option override it. */
    json_t *nm = json_object_get(meta, "null_margin");
    if (nm && (!json_is_number(nm) || !isfinite(json_number_value(nm))))
        return dg_fail(DEG_ERR_FORMAT, "%s: null_margin must be a finite number (nats)", jpath);
    k->null_margin = nm ? json_number_value(nm) : 0.0;
    return DEG_OK;
}

deg_status deg_ckpt_open(const char *dir, const deg_ckpt_params *params, deg_ckpt **out)
{
    if (!dir || !out) return dg_fail(DEG_ERR_ARG, "deg_ckpt_open: NULL argument");
    *out = NULL;
    deg_ckpt_params P = params ? *params : deg_ckpt_default_params();
    if (P.has_null_margin && !isfinite(P.null_margin))
        return dg_fail(DEG_ERR_ARG, "deg_ckpt_open: null_margin must be finite");
    if (P.fork_budget_bytes != 0 && P.fork_budget_bytes < ((size_t)1 << 20))
        return dg_fail(DEG_ERR_ARG, "deg_ckpt_open: fork_budget_bytes must be 0 (default) or "
                       ">= 1 MiB");
    char *jpath = dg_path_join(dir, "deg.json"), *spath = dg_path_join(dir, "heads.safetensors");
    char *ppath = dg_path_join(dir, PREV_NAME);
    json_t *meta = NULL;
    deg_status st = DEG_OK;
    dg_ckpt *k = calloc(1, sizeof *k);
    char *resolved = NULL;
    if (!jpath || !spath || !ppath || !k) {
        st = dg_fail(DEG_ERR_NOMEM, "deg_ckpt_open: out of memory");
        goto fail;
    }
    const char *bfile, *bsha, *bpath;
    if ((st = read_meta(jpath, &meta, &bfile, &bsha, &bpath)) != DEG_OK) goto fail;
    /* The backbone: the given model (its source is hashed), the given path, or
     * resolved from deg.json. */
    if (P.model) resolved = strdup(dg_model_path(P.model));
    else if (P.model_path) resolved = strdup(P.model_path);
    else if ((st = resolve_backbone(dir, jpath, bfile, bpath, &resolved)) != DEG_OK) goto fail;
    if (!resolved) {
        st = dg_fail(DEG_ERR_NOMEM, "deg_ckpt_open: out of memory");
        goto fail;
    }
    char sha[65];
    if ((st = dg_backbone_sha256(resolved, sha)) != DEG_OK) goto fail;
    if (strcmp(sha, bsha) != 0) {
        st = dg_fail(DEG_ERR_MISMATCH, "%s: backbone %s has SHA-256 %s, the checkpoint was made "
                     "for '%s' with %s", dir, resolved, sha, bfile, bsha);
        goto fail;
    }
    if (P.model) {
        k->model = (deg_model *)P.model; /* borrowed: never freed by deg_ckpt_free */
        k->own_model = 0;
    } else {
        if ((st = deg_model_load(resolved, &k->model)) != DEG_OK) goto fail;
        k->own_model = 1;
    }
    deg_model_info info;
    deg_model_get_info(k->model, &info);
    size_t off[N_TABLE];
    if ((st = alloc_store(k, info.n_embd, off)) != DEG_OK) goto fail;
    if ((st = load_heads(k, meta, spath, ppath, jpath, info.n_embd, off)) != DEG_OK) goto fail;
    if ((st = read_decoding(k, meta, jpath)) != DEG_OK) goto fail;
    const char *cl = json_string_value(json_object_get(meta, "chat_layout"));
    if (!cl) cl = model_chat_layout(k->model);
    if (!dg_chat_layout_lookup(cl, &k->layout)) {
        st = dg_fail(DEG_ERR_FORMAT, "%s: chat_layout \"%s\" is not a chat layout (one of "
                     "none, chatml, qwen3, lfm2, gemma4)", jpath, cl);
        goto fail;
    }
    k->chat_layout = strdup(cl);
    k->backbone_file = dup_str(bfile);
    k->backbone_sha256 = dup_str(bsha);
    {
        char abs[4096];
        k->backbone_path = dup_str(realpath(resolved, abs) ? abs : resolved);
    }
    k->fork_budget_bytes = P.fork_budget_bytes ? P.fork_budget_bytes : (size_t)256 << 20;
    if (P.has_null_margin) k->null_margin = P.null_margin; /* else deg.json's (read_decoding) */
    {
        /* The library's stop rule (lib/model/chat.h) under the checkpoint's
         * layout: EOS, and the end-of-turn token when it is another one. */
        int32_t stops[DG_CHAT_MAX_STOPS];
        size_t ns = dg_chat_stop_ids(k->model, k->layout, stops);
        k->eos_id = info.eos_id;
        k->stop_id = ns > (info.eos_id >= 0 ? 1u : 0u) ? stops[ns - 1] : info.eos_id;
    }
    if ((st = dg_ckpt_lora_load(k, meta, dir, jpath)) != DEG_OK) goto fail;
    if (!k->array_mode || !k->chat_layout || !k->backbone_file || !k->backbone_sha256 ||
        !k->backbone_path) {
        st = dg_fail(DEG_ERR_NOMEM, "deg_ckpt_load: out of memory");
        goto fail;
    }
    tidy_dir(dir, jpath, spath);
    json_decref(meta);
    free(jpath);
    free(spath);
    free(ppath);
    free(resolved);
    *out = k;
    return DEG_OK;
fail:
    json_decref(meta);
    free(jpath);
    free(spath);
    free(ppath);
    free(resolved);
    deg_ckpt_free(k);
    return st;
}

const deg_model *deg_ckpt_model(const deg_ckpt *ckpt) { return ckpt ? ckpt->model : NULL; }

deg_status deg_ckpt_set_fork_budget(deg_ckpt *ckpt, size_t bytes)
{
    if (!ckpt || bytes < ((size_t)1 << 20))
        return dg_fail(DEG_ERR_ARG, "deg_ckpt_set_fork_budget: need a checkpoint and >= 1 MiB");
    ckpt->fork_budget_bytes = bytes;
    return DEG_OK;
}

/* ---- training side: parameters, calibration, save (deg.h "Training") ---- */

size_t deg_ckpt_n_params(const deg_ckpt *ckpt) { return ckpt ? ckpt->n_store : 0; }

deg_status deg_ckpt_get_params(const deg_ckpt *ckpt, float *out, size_t n)
{
    if (!ckpt || !out) return dg_fail(DEG_ERR_ARG, "deg_ckpt_get_params: NULL argument");
    if (n != ckpt->n_store)
        return dg_fail(DEG_ERR_ARG, "deg_ckpt_get_params: n is %zu, the checkpoint has %zu "
                       "parameters", n, ckpt->n_store);
    memcpy(out, ckpt->store, n * sizeof(float));
    return DEG_OK;
}

deg_status deg_ckpt_set_params(deg_ckpt *ckpt, const float *in, size_t n)
{
    if (!ckpt || !in) return dg_fail(DEG_ERR_ARG, "deg_ckpt_set_params: NULL argument");
    if (n != ckpt->n_store)
        return dg_fail(DEG_ERR_ARG, "deg_ckpt_set_params: n is %zu, the checkpoint has %zu "
                       "parameters", n, ckpt->n_store);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(in[i]))
            return dg_fail(DEG_ERR_NUMERIC, "deg_ckpt_set_params: parameter %zu is NaN/Inf "
                           "(the checkpoint is unchanged)", i);
    memcpy(ckpt->store, in, n * sizeof(float));
    return DEG_OK;
}

deg_status deg_ckpt_get_calibration(const deg_ckpt *ckpt, double *temps)
{
    if (!ckpt || !temps) return dg_fail(DEG_ERR_ARG, "deg_ckpt_get_calibration: NULL argument");
    for (int i = 0; i < DG_T_N; i++) temps[i] = ckpt->temp[i];
    return DEG_OK;
}

deg_status deg_ckpt_set_calibration(deg_ckpt *ckpt, const double *temps)
{
    if (!ckpt || !temps) return dg_fail(DEG_ERR_ARG, "deg_ckpt_set_calibration: NULL argument");
    for (int i = 0; i < DG_T_N; i++)
        if (!(temps[i] > 0) || !isfinite(temps[i]) || !isfinite((float)temps[i]))
            return dg_fail(DEG_ERR_ARG, "deg_ckpt_set_calibration: temperature %s must be a "
                           "finite number > 0", TEMP_NAMES[i]);
    for (int i = 0; i < DG_T_N; i++) ckpt->temp[i] = (float)temps[i];
    return DEG_OK;
}

static const char *const RESERVED[] = {"format", "backbone", "head_dim", "heads", "calibration",
                                       "array_mode", "anchor_min_tokens", "chat_layout",
                                       "key_prior", "lm_prior", "list_prior", "count_prior",
                                       "mention_prior",
                                       "span_single_line", "span_word_bounds",
                                       "span_single_sentence", "span_distinct", "item_null",
                                       "generate_stop_repeat", "span_whole_names", "lora",
                                       "heads_sha256"};

deg_status deg_ckpt_save(const deg_ckpt *ckpt, const char *dir, const char *extra_json,
                         unsigned flags)
{
    if (!ckpt || !dir) return dg_fail(DEG_ERR_ARG, "deg_ckpt_save: NULL argument");
    if (flags & ~(unsigned)DEG_SAVE_NO_BACKBONE_PATH)
        return dg_fail(DEG_ERR_ARG, "deg_ckpt_save: unknown flags 0x%x", flags);
    json_t *extra = NULL;
    if (extra_json) {
        json_error_t e;
        extra = json_loads(extra_json, 0, &e);
        if (!json_is_object(extra)) {
            json_decref(extra);
            return dg_fail(DEG_ERR_ARG, "deg_ckpt_save: extra_json is not a JSON object (%s)",
                           e.text);
        }
        for (size_t i = 0; i < sizeof RESERVED / sizeof RESERVED[0]; i++)
            if (json_object_get(extra, RESERVED[i])) {
                json_decref(extra);
                return dg_fail(DEG_ERR_ARG, "deg_ckpt_save: extra_json may not set \"%s\" "
                               "(written from the checkpoint itself)", RESERVED[i]);
            }
    }
    deg_model_info info;
    deg_model_get_info(ckpt->model, &info);
    size_t off[N_TABLE], total = 0;
    for (size_t i = 0; i < N_TABLE; i++) {
        off[i] = total;
        total += numel(&TABLE[i], ckpt->h.E);
    }
    if (total != ckpt->n_store) {
        json_decref(extra);
        return dg_fail(DEG_ERR_INTERNAL, "deg_ckpt_save: head layout mismatch");
    }
    json_t *temps = json_object();
    for (int i = 0; i < DG_T_N; i++)
        json_object_set_new(temps, TEMP_NAMES[i], json_real((double)ckpt->temp[i]));
    json_t *heads = json_object();
    for (size_t i = 0; i < N_TABLE; i++) {
        int64_t r, c;
        dims(&TABLE[i], ckpt->h.E, &r, &c);
        json_object_set_new(heads, TABLE[i].name,
                            r ? json_pack("[I,I]", (json_int_t)r, (json_int_t)c)
                              : json_pack("[I]", (json_int_t)c));
    }
    json_t *bb = json_pack("{s:s, s:s, s:s}", "file", ckpt->backbone_file, "sha256",
                           ckpt->backbone_sha256, "arch", info.arch);
    if (bb && !(flags & DEG_SAVE_NO_BACKBONE_PATH) && ckpt->backbone_path)
        json_object_set_new(bb, "path", json_string(ckpt->backbone_path));
    json_t *meta = json_pack("{s:s, s:o, s:i, s:o, s:o, s:s, s:I, s:s}", "format",
                             DG_CKPT_FORMAT, "backbone", bb, "head_dim", DG_HEAD_DIM, "heads",
                             heads, "calibration", temps, "array_mode", ckpt->array_mode,
                             "anchor_min_tokens", (json_int_t)ckpt->anchor_min_tokens,
                             "chat_layout", ckpt->chat_layout);
    if (meta && ckpt->key_prior.on) {
        json_t *kp = json_pack("{s:f, s:f}", "exact", ckpt->key_prior.exact, "partial",
                               ckpt->key_prior.partial);
        if (kp && ckpt->key_prior.phrase > 0)
            json_object_set_new(kp, "phrase", json_real(ckpt->key_prior.phrase));
        if (kp && ckpt->key_prior.description > 0)
            json_object_set_new(kp, "description", json_real(ckpt->key_prior.description));
        if (kp && ckpt->key_prior.score > 0)
            json_object_set_new(kp, "score", json_real(ckpt->key_prior.score));
        if (kp && ckpt->key_prior.compare > 0)
            json_object_set_new(kp, "compare", json_real(ckpt->key_prior.compare));
        if (kp && ckpt->key_prior.sole > 0)
            json_object_set_new(kp, "sole", json_real(ckpt->key_prior.sole));
        json_object_set_new(meta, "key_prior", kp);
    }
    if (meta && ckpt->has_lm_prior)
        json_object_set_new(meta, "lm_prior", json_pack("{s:f}", "start", ckpt->lm_prior_start));
    if (meta && ckpt->has_list_prior)
        json_object_set_new(meta, "list_prior",
                            json_pack("{s:f, s:b}", "bonus", ckpt->list_prior_bonus, "by_anchor",
                                      ckpt->list_prior_by_anchor));
    if (meta && ckpt->count_prior.on)
        json_object_set_new(meta, "count_prior",
                            json_pack("{s:f, s:f}", "bonus", ckpt->count_prior.bonus, "absent",
                                      ckpt->count_prior.absent));
    if (meta && ckpt->mention_prior.on)
        json_object_set_new(meta, "mention_prior",
                            json_pack("{s:f, s:f}", "bonus", ckpt->mention_prior.bonus, "absent",
                                      ckpt->mention_prior.absent));
    if (meta && ckpt->span_single_line)
        json_object_set_new(meta, "span_single_line", json_true());
    if (meta && ckpt->span_word_bounds)
        json_object_set_new(meta, "span_word_bounds", json_true());
    if (meta && ckpt->span_single_sentence)
        json_object_set_new(meta, "span_single_sentence", json_true());
    if (meta && ckpt->span_distinct) json_object_set_new(meta, "span_distinct", json_true());
    if (meta && ckpt->item_null) json_object_set_new(meta, "item_null", json_true());
    if (meta && ckpt->generate_stop_repeat)
        json_object_set_new(meta, "generate_stop_repeat", json_true());
    if (meta && ckpt->span_whole_names) json_object_set_new(meta, "span_whole_names", json_true());
    deg_status st;
    if (!meta) st = dg_fail(DEG_ERR_NOMEM, "deg_ckpt_save: out of memory");
    else {
        if (extra) json_object_update(meta, extra);
        st = write_files(ckpt->store, off, ckpt->h.E, meta, dir, ckpt);
    }
    json_decref(meta);
    json_decref(extra);
    return st;
}
