/* Fleet directories (include/cartridge.h, "Fleets"): creation with
 * corpus-init cartridges, the fleet.json manifest, opening, document info. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/prevsave.h"
#include "base/status.h"
#include "cartridge/fleet_internal.h"
#include "format/safetensors.h"
#include "model/arch.h"

#define FLEET_FORMAT "deg-fleet/1"
#define MANIFEST "fleet.json"
#define MANIFEST_MAX (64u << 20)

deg_fleet_params deg_fleet_default_params(void)
{
    return (deg_fleet_params){.budget = 4, .rotate_every = 10, .evict_fraction = 0.5f,
                              .warmup_steps = 4, .adam = deg_adam_params_default()};
}

static char *dupstr(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

static void doc_clear(dg_fleet_doc *d)
{
    free(d->name); free(d->cart_rel); free(d->text_rel); free(d->cart_path);
    free(d->text_path);
    deg_cartridge_free(d->c);
    memset(d, 0, sizeof *d);
}

/* Names and paths of document i (name borrowed, copied). */
static deg_status doc_names(dg_fleet_doc *d, const char *dir, size_t i, const char *name)
{
    char rel[64];
    d->name = dupstr(name);
    snprintf(rel, sizeof rel, "docs/%04zu.safetensors", i);
    d->cart_rel = dupstr(rel);
    snprintf(rel, sizeof rel, "docs/%04zu.txt", i);
    d->text_rel = dupstr(rel);
    d->cart_path = d->cart_rel ? dg_path_join(dir, d->cart_rel) : NULL;
    d->text_path = d->text_rel ? dg_path_join(dir, d->text_rel) : NULL;
    if (!d->name || !d->cart_path || !d->text_path)
        return dg_fail(DEG_ERR_NOMEM, "fleet: out of memory");
    return DEG_OK;
}

size_t dg_fleet_n_resident(const deg_fleet *f)
{
    size_t r = 0;
    for (size_t i = 0; i < f->n; i++) r += f->docs[i].c != NULL;
    return r;
}

/* Write fleet.json atomically from the handle's state; sha[i] (may be
 * NULL or "") names doc i's cartridge file. */
static deg_status write_manifest(const deg_fleet *f, const char *const *sha)
{
    char fp[65];
    dg_model_fingerprint(f->model, fp);
    json_t *docs = json_array();
    for (size_t i = 0; docs && i < f->n; i++) {
        const dg_fleet_doc *d = &f->docs[i];
        json_t *jd = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:b}", "name", d->name,
                               "cartridge", d->cart_rel, "text", d->text_rel, "tokens",
                               (json_int_t)d->tokens, "steps", (json_int_t)d->steps,
                               "since_entry", (json_int_t)d->since_entry, "resident",
                               d->c != NULL);
        if (jd && sha[i] && sha[i][0]) json_object_set_new(jd, "sha256", json_string(sha[i]));
        json_array_append_new(docs, jd);
    }
    json_t *root = docs ? json_pack("{s:s, s:I, s:I, s:s, s:o}", "format", FLEET_FORMAT, "p",
                                    (json_int_t)f->p, "rounds", (json_int_t)f->rounds,
                                    "weights_fingerprint", fp, "documents", docs)
                        : NULL;
    char *text = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
    json_decref(root);
    if (!text) return dg_fail(DEG_ERR_NOMEM, "fleet: cannot render the manifest");
    char *path = dg_path_join(f->dir, MANIFEST);
    dg_chunk ch[2] = {{text, strlen(text)}, {"\n", 1}};
    deg_status st = path ? dg_write_atomic(path, ch, 2) : dg_fail(DEG_ERR_NOMEM, "fleet: oom");
    free(text);
    free(path);
    return st;
}

/* The SHA-256 fleet.json on disk names for each of f's documents (borrowed
 * from *root, which the caller json_decref's; NULL entries when absent or
 * when the manifest is missing or unreadable). */
static const char **disk_shas(const deg_fleet *f, json_t **root)
{
    const char **sha = calloc(f->n ? f->n : 1, sizeof *sha);
    char *mp = dg_path_join(f->dir, MANIFEST);
    *root = mp ? json_load_file(mp, 0, NULL) : NULL;
    free(mp);
    json_t *docs = json_object_get(*root, "documents");
    for (size_t i = 0; sha && i < f->n && i < json_array_size(docs); i++)
        sha[i] = json_string_value(json_object_get(json_array_get(docs, i), "sha256"));
    return sha;
}

/* With the fleet's lock held: put back each cartridge's .prev when it is the
 * version want[i] names (a save killed before its manifest), else drop it.
 * Errors: DEG_ERR_FORMAT when neither version is the named one. */
static deg_status settle_docs(const deg_fleet *f, const char *const *want)
{
    for (size_t i = 0; i < f->n; i++) {
        const char *path = f->docs[i].cart_path;
        char *prev = dg_prev_path(path);
        if (!prev) return dg_fail(DEG_ERR_NOMEM, "fleet: out of memory");
        int has_prev = access(prev, F_OK) == 0, use_prev = 0;
        free(prev);
        if (!has_prev) continue;
        if (want[i]) DG_TRY(dg_prev_pick(path, want[i], "fleet " MANIFEST, &use_prev));
        dg_prev_settle(path, use_prev);
    }
    return DEG_OK;
}

deg_status dg_fleet_commit(deg_fleet *f, const int *save, int save_all)
{
    int lock = dg_dir_lock(f->dir, 1);
    json_t *root = NULL;
    const char **sha = disk_shas(f, &root);
    deg_status st = sha ? settle_docs(f, sha) : dg_fail(DEG_ERR_NOMEM, "fleet: out of memory");
    size_t i = 0;
    for (; st == DEG_OK && i < f->n; i++) {
        dg_fleet_doc *d = &f->docs[i];
        if (!sha[i]) sha[i] = d->sha; /* manifests before whole saves */
        if (!d->c || !(save_all || (save && save[i]))) continue;
        st = dg_prev_keep(d->cart_path);
        if (st == DEG_OK) st = deg_cartridge_save(d->c, d->cart_path, 1);
        if (st == DEG_OK) st = dg_file_sha256(d->cart_path, d->sha);
        if (st != DEG_OK) st = dg_fail_context(st, "fleet document %zu (%s)", i, d->name);
        d->steps = d->c->steps;
        sha[i] = d->sha;
    }
    if (st == DEG_OK) st = write_manifest(f, sha);
    for (size_t j = 0; st == DEG_OK && j < f->n; j++) {
        if (f->docs[j].c && (save_all || (save && save[j]))) dg_prev_drop(f->docs[j].cart_path);
        else if (sha[j] && sha[j] != f->docs[j].sha) snprintf(f->docs[j].sha, 65, "%s", sha[j]);
    }
    free(sha);
    json_decref(root);
    dg_dir_unlock(lock);
    return st;
}

static deg_status make_dir(const char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST) {
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return DEG_OK;
        return dg_fail(DEG_ERR_IO, "fleet: %s exists and is not a directory", path);
    }
    return dg_fail(DEG_ERR_IO, "fleet: cannot create directory %s: %s", path, strerror(errno));
}

static void fleet_free_docs(deg_fleet *f)
{
    for (size_t i = 0; f->docs && i < f->n; i++) doc_clear(&f->docs[i]);
    free(f->docs);
    free(f->dir);
}

void deg_fleet_free(deg_fleet *f)
{
    if (!f) return;
    fleet_free_docs(f);
    free(f);
}

static deg_status init_doc(deg_fleet *f, size_t i, const char *name, const char *text,
                           size_t len, int draft_ref)
{
    dg_fleet_doc *d = &f->docs[i];
    DG_TRY(doc_names(d, f->dir, i, name));
    size_t n_tok = 0;
    deg_status st = deg_tokenize(f->model, text, len, 0, NULL, 0, &n_tok);
    if (st != DEG_OK && st != DEG_ERR_RANGE)
        return dg_fail_context(st, "deg_fleet_init: document %zu (%s)", i, name);
    d->tokens = n_tok;
    dg_chunk ch = {text, len};
    DG_TRY(dg_write_atomic(d->text_path, &ch, 1));
    deg_cartridge *c = NULL;
    st = deg_cartridge_init_corpus(f->model, text, len, f->p, &c);
    if (st == DEG_OK && draft_ref) st = dg_fleet_doc_draft_ref(f->model, c, name, text, len, NULL);
    if (st != DEG_OK) {
        deg_cartridge_free(c);
        return dg_fail_context(st, "deg_fleet_init: document %zu (%s)", i, name);
    }
    st = deg_cartridge_save(c, d->cart_path, 1);
    deg_cartridge_free(c);
    if (st == DEG_OK) st = dg_file_sha256(d->cart_path, d->sha);
    return st;
}

deg_fleet_init_params deg_fleet_init_default_params(void)
{
    return (deg_fleet_init_params){.p = 256, .draft_ref = 0};
}

deg_status deg_fleet_init(const deg_model *m, const char *dir, const char *const *names,
                          const char *const *texts, const size_t *lens, size_t n_docs,
                          size_t p)
{
    deg_fleet_init_params prm = deg_fleet_init_default_params();
    prm.p = p;
    return deg_fleet_init_ex(m, dir, names, texts, lens, n_docs, &prm);
}

deg_status deg_fleet_init_ex(const deg_model *m, const char *dir, const char *const *names,
                             const char *const *texts, const size_t *lens, size_t n_docs,
                             const deg_fleet_init_params *prm)
{
    const char *w = "deg_fleet_init";
    if (!prm) return dg_fail(DEG_ERR_ARG, "%s: params is NULL", w);
    if (prm->draft_ref != 0 && prm->draft_ref != 1)
        return dg_fail(DEG_ERR_ARG, "%s: draft_ref %d must be 0 or 1", w, (int)prm->draft_ref);
    size_t p = prm->p;
    if (!m || !dir || !names || !texts || !lens)
        return dg_fail(DEG_ERR_ARG, "%s: NULL argument", w);
    if (n_docs == 0 || p == 0)
        return dg_fail(DEG_ERR_ARG, "%s: need at least one document and p >= 1 (got %zu, %zu)",
                       w, n_docs, p);
    for (size_t i = 0; i < n_docs; i++)
        if (!names[i] || (!texts[i] && lens[i]))
            return dg_fail(DEG_ERR_ARG, "%s: document %zu: NULL name or text", w, i);
    DG_TRY(make_dir(dir));
    deg_fleet f = {.model = m, .p = p, .n = n_docs};
    f.dir = dupstr(dir);
    f.docs = calloc(n_docs, sizeof *f.docs);
    char *mp = dg_path_join(dir, MANIFEST), *docs_dir = dg_path_join(dir, "docs");
    deg_status st = (f.dir && f.docs && mp && docs_dir)
                        ? DEG_OK : dg_fail(DEG_ERR_NOMEM, "%s: out of memory", w);
    if (st == DEG_OK && access(mp, F_OK) == 0)
        st = dg_fail(DEG_ERR_STATE, "%s: %s already holds a fleet (%s)", w, dir, MANIFEST);
    if (st == DEG_OK) st = make_dir(docs_dir);
    for (size_t i = 0; st == DEG_OK && i < n_docs; i++)
        st = init_doc(&f, i, names[i], texts[i], lens[i], prm->draft_ref);
    const char **sha = st == DEG_OK ? calloc(n_docs, sizeof *sha) : NULL;
    if (st == DEG_OK && !sha) st = dg_fail(DEG_ERR_NOMEM, "%s: out of memory", w);
    for (size_t i = 0; sha && i < n_docs; i++) sha[i] = f.docs[i].sha;
    if (st == DEG_OK) st = write_manifest(&f, sha);
    free(sha);
    free(mp);
    free(docs_dir);
    fleet_free_docs(&f);
    return st;
}

/* ------------------------------------------------------------- open */

/* Remove temp files a killed writer left ("<name>.tmp.XXXXXX", the
 * dg_write_atomic pattern) in dir. */
static void remove_stale_temps(const char *dir)
{
    DIR *dd = opendir(dir);
    if (!dd) return;
    struct dirent *e;
    while ((e = readdir(dd)) != NULL) {
        const char *t = strstr(e->d_name, ".tmp.");
        if (!t || strlen(t) != 11) continue;
        char *p = dg_path_join(dir, e->d_name);
        if (p) unlink(p);
        free(p);
    }
    closedir(dd);
}

static deg_status bad(const char *path, const char *what)
{
    return dg_fail(DEG_ERR_FORMAT, "deg_fleet_open %s: %s", path, what);
}

/* The Adam step count recorded in a cartridge file's header. */
static deg_status file_steps(const char *path, int64_t *out)
{
    dg_safetensors *st = NULL;
    deg_status s = dg_safetensors_open(path, &st);
    if (s != DEG_OK) return dg_fail_context(s, "deg_fleet_open");
    const char *v = dg_safetensors_meta(st, "adam_steps");
    char *end = NULL;
    long long x = v ? strtoll(v, &end, 10) : -1;
    s = (!v || !*v || *end || x < 0) ? bad(path, "metadata adam_steps missing") : DEG_OK;
    *out = x;
    dg_safetensors_close(st);
    return s;
}

static deg_status read_doc(deg_fleet *f, json_t *jd, size_t i, const char *mp, int *resident)
{
    const char *name = json_string_value(json_object_get(jd, "name"));
    const char *cart = json_string_value(json_object_get(jd, "cartridge"));
    const char *text = json_string_value(json_object_get(jd, "text"));
    json_t *tok = json_object_get(jd, "tokens"), *se = json_object_get(jd, "since_entry");
    if (!name || !cart || !text || !json_is_integer(tok) || json_integer_value(tok) < 0 ||
        !json_is_integer(se) || json_integer_value(se) < 0)
        return dg_fail(DEG_ERR_FORMAT, "deg_fleet_open %s: documents[%zu] needs name, "
                       "cartridge, text (strings), tokens and since_entry (integers >= 0)", mp,
                       i);
    dg_fleet_doc *d = &f->docs[i];
    DG_TRY(doc_names(d, f->dir, i, name));
    if (strcmp(cart, d->cart_rel) != 0 || strcmp(text, d->text_rel) != 0)
        return dg_fail(DEG_ERR_FORMAT, "deg_fleet_open %s: documents[%zu] files are %s, %s; "
                       "expected %s, %s", mp, i, cart, text, d->cart_rel, d->text_rel);
    d->tokens = (size_t)json_integer_value(tok);
    d->since_entry = json_integer_value(se);
    *resident = json_is_true(json_object_get(jd, "resident"));
    json_t *sha = json_object_get(jd, "sha256");
    if (sha && (!json_is_string(sha) || strlen(json_string_value(sha)) != 64))
        return dg_fail(DEG_ERR_FORMAT, "deg_fleet_open %s: documents[%zu].sha256 must be 64 "
                       "hex digits", mp, i);
    if (sha) snprintf(d->sha, sizeof d->sha, "%s", json_string_value(sha));
    return DEG_OK;
}

static deg_status check_params(const deg_fleet_params *p)
{
    if (p->rotate_every < 0 || !(p->evict_fraction > 0.0f && p->evict_fraction <= 1.0f) ||
        p->warmup_steps < 0)
        return dg_fail(DEG_ERR_ARG, "deg_fleet_open: need rotate_every >= 0, evict_fraction "
                       "in (0, 1], warmup_steps >= 0 (got %d, %g, %d)", (int)p->rotate_every,
                       (double)p->evict_fraction, (int)p->warmup_steps);
    return DEG_OK;
}

static deg_status open_manifest(deg_fleet *f, int **resident)
{
    char *mp = dg_path_join(f->dir, MANIFEST);
    if (!mp) return dg_fail(DEG_ERR_NOMEM, "deg_fleet_open: out of memory");
    char *text = NULL;
    deg_status st = dg_read_file(mp, MANIFEST_MAX, &text, NULL);
    json_error_t err;
    json_t *root = st == DEG_OK ? json_loads(text, 0, &err) : NULL;
    free(text);
    if (st == DEG_OK && !root)
        st = dg_fail(DEG_ERR_FORMAT, "deg_fleet_open %s: not JSON (line %d: %s)", mp, err.line,
                     err.text);
    const char *fmt = json_string_value(json_object_get(root, "format"));
    json_t *jp = json_object_get(root, "p"), *jr = json_object_get(root, "rounds");
    json_t *docs = json_object_get(root, "documents");
    const char *fp = json_string_value(json_object_get(root, "weights_fingerprint"));
    char mine[65];
    if (st == DEG_OK && (!fmt || strcmp(fmt, FLEET_FORMAT) != 0))
        st = bad(mp, "format is not \"" FLEET_FORMAT "\"");
    if (st == DEG_OK && (!json_is_integer(jp) || json_integer_value(jp) < 1 ||
                         !json_is_integer(jr) || json_integer_value(jr) < 0 || !fp ||
                         !json_is_array(docs) || json_array_size(docs) == 0))
        st = bad(mp, "needs p >= 1, rounds >= 0, weights_fingerprint and a non-empty "
                 "documents array");
    if (st == DEG_OK) {
        dg_model_fingerprint(f->model, mine);
        if (strcmp(fp, mine) != 0)
            st = dg_fail(DEG_ERR_MISMATCH, "deg_fleet_open %s: saved for another model "
                         "(weights_fingerprint %.12s..., the loaded model %.12s...)", mp, fp,
                         mine);
    }
    if (st == DEG_OK) {
        f->p = (size_t)json_integer_value(jp);
        f->rounds = json_integer_value(jr);
        f->n = json_array_size(docs);
        f->docs = calloc(f->n, sizeof *f->docs);
        *resident = calloc(f->n, sizeof **resident);
        if (!f->docs || !*resident) st = dg_fail(DEG_ERR_NOMEM, "deg_fleet_open: oom");
    }
    for (size_t i = 0; st == DEG_OK && i < f->n; i++)
        st = read_doc(f, json_array_get(docs, i), i, mp, &(*resident)[i]);
    json_decref(root);
    free(mp);
    return st;
}

/* Least-trained absentee (ties to the lower id), excluding skip[i] != 0;
 * f->n if none. */
size_t dg_fleet_least_trained_absent(const deg_fleet *f, const int *skip)
{
    size_t best = f->n;
    for (size_t i = 0; i < f->n; i++)
        if (!f->docs[i].c && !(skip && skip[i]) &&
            (best == f->n || f->docs[i].steps < f->docs[best].steps))
            best = i;
    return best;
}

deg_status deg_fleet_open(const deg_model *m, const char *dir, const deg_fleet_params *prm,
                          deg_fleet **out)
{
    if (!m || !dir || !out) return dg_fail(DEG_ERR_ARG, "deg_fleet_open: NULL argument");
    *out = NULL;
    deg_fleet_params p = prm ? *prm : deg_fleet_default_params();
    DG_TRY(check_params(&p));
    deg_fleet *f = calloc(1, sizeof *f);
    if (!f) return dg_fail(DEG_ERR_NOMEM, "deg_fleet_open: out of memory");
    f->model = m;
    f->prm = p;
    f->dir = dupstr(dir);
    char *docs_dir = dg_path_join(dir, "docs");
    int *resident = NULL;
    deg_status st = f->dir && docs_dir ? DEG_OK : dg_fail(DEG_ERR_NOMEM, "fleet: oom");
    if (st == DEG_OK) {
        /* waits for a save in progress; then no save runs while killed
         * saves' leftovers are settled */
        int lock = dg_dir_lock(dir, 1);
        remove_stale_temps(dir);
        remove_stale_temps(docs_dir);
        st = open_manifest(f, &resident);
        if (st == DEG_OK) {
            const char **want = calloc(f->n, sizeof *want);
            for (size_t i = 0; want && i < f->n; i++)
                want[i] = f->docs[i].sha[0] ? f->docs[i].sha : NULL;
            st = want ? settle_docs(f, want) : dg_fail(DEG_ERR_NOMEM, "fleet: oom");
            free(want);
        }
        dg_dir_unlock(lock);
    }
    for (size_t i = 0; st == DEG_OK && i < f->n; i++)
        st = file_steps(f->docs[i].cart_path, &f->docs[i].steps);
    size_t budget = f->prm.budget ? f->prm.budget : f->n;
    for (size_t i = 0; st == DEG_OK && i < f->n && dg_fleet_n_resident(f) < budget; i++)
        if (resident[i]) {
            /* Residents stay resident: their warm-up progress carries on. */
            int64_t se = f->docs[i].since_entry;
            st = dg_fleet_load(f, i);
            f->docs[i].since_entry = se;
        }
    while (st == DEG_OK && dg_fleet_n_resident(f) < budget) {
        size_t j = dg_fleet_least_trained_absent(f, NULL);
        if (j == f->n) break;
        st = dg_fleet_load(f, j);
    }
    free(docs_dir);
    free(resident);
    if (st != DEG_OK) {
        deg_fleet_free(f);
        return st;
    }
    *out = f;
    return DEG_OK;
}

size_t deg_fleet_n_docs(const deg_fleet *f) { return f ? f->n : 0; }
size_t deg_fleet_p(const deg_fleet *f) { return f ? f->p : 0; }
int64_t deg_fleet_rounds(const deg_fleet *f) { return f ? f->rounds : 0; }

deg_status deg_fleet_doc(const deg_fleet *f, size_t doc, deg_fleet_doc_info *out)
{
    if (!f || !out) return dg_fail(DEG_ERR_ARG, "deg_fleet_doc: NULL argument");
    if (doc >= f->n)
        return dg_fail(DEG_ERR_RANGE, "deg_fleet_doc: document %zu outside [0, %zu)", doc, f->n);
    const dg_fleet_doc *d = &f->docs[doc];
    *out = (deg_fleet_doc_info){d->name, d->text_path, d->cart_path, d->tokens,
                                d->c ? d->c->steps : d->steps, d->since_entry, d->c != NULL};
    return DEG_OK;
}
