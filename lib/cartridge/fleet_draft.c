/* Fleet draft references (include/cartridge.h, "Fleets"): a document's
 * token ids stored in its cartridge for speculative serving, at creation
 * (deg_fleet_init_ex) or later (deg_fleet_set_draft_refs). */
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/status.h"
#include "cartridge/fleet_internal.h"

/* Does c's draft reference hold exactly ids[0..n) (n = 0: none)? */
static int same_ref(const deg_cartridge *c, const int32_t *ids, size_t n)
{
    const deg_draft_ref *r = deg_cartridge_draft_ref(c);
    return deg_draft_ref_len(r) == n &&
           (n == 0 || memcmp(deg_draft_ref_ids(r), ids, n * sizeof *ids) == 0);
}

deg_status dg_fleet_doc_draft_ref(const deg_model *m, deg_cartridge *c, const char *name,
                                  const char *text, size_t len, int *changed)
{
    deg_corpus *corpus = NULL;
    DG_TRY(deg_corpus_new(m, &name, &text, &len, 1, &corpus));
    const int32_t *ids = deg_corpus_ids(corpus);
    size_t n = deg_corpus_len(corpus);
    deg_status st = DEG_OK;
    int differs = !same_ref(c, ids, n);
    if (differs) st = deg_cartridge_set_draft_ref(c, ids, n);
    deg_corpus_free(corpus);
    if (changed) *changed = st == DEG_OK && differs;
    return st;
}

/* Document i's reference set (on) or dropped; *changed = 1 if its
 * cartridge was rewritten. */
static deg_status doc_set(deg_fleet *f, size_t i, int on, int *changed)
{
    dg_fleet_doc *d = &f->docs[i];
    int resident = d->c != NULL;
    int64_t since = d->since_entry;
    *changed = 0;
    if (!resident) {
        DG_TRY(dg_fleet_load(f, i));
        d->since_entry = since;  /* not an entry: its warm-up count stays */
    }
    deg_status st = DEG_OK;
    if (on) {
        char *text = NULL;
        size_t len = 0;
        st = dg_read_file(d->text_path, DG_FLEET_TEXT_MAX, &text, &len);
        if (st == DEG_OK) st = dg_fleet_doc_draft_ref(f->model, d->c, d->name, text, len, changed);
        free(text);
    } else if (deg_cartridge_draft_ref(d->c)) {
        st = deg_cartridge_set_draft_ref(d->c, NULL, 0);
        *changed = st == DEG_OK;
    }
    if (st == DEG_OK && *changed) {
        if (resident) {
            int *save = calloc(f->n, sizeof *save);
            if (!save) return dg_fail(DEG_ERR_NOMEM, "out of memory");
            save[i] = 1;
            st = dg_fleet_commit(f, save, 0);
            free(save);
        } else {
            st = deg_fleet_evict(f, i);  /* saves it, frees it, writes the manifest */
        }
    }
    if (!resident && d->c) {  /* unchanged or failed: back to disk as it was */
        deg_cartridge_free(d->c);
        d->c = NULL;
        d->since_entry = since;
    }
    return st;
}

deg_status deg_fleet_set_draft_refs(deg_fleet *f, int on, size_t *n_changed)
{
    const char *w = "deg_fleet_set_draft_refs";
    if (n_changed) *n_changed = 0;
    if (!f) return dg_fail(DEG_ERR_ARG, "%s: fleet is NULL", w);
    if (on != 0 && on != 1) return dg_fail(DEG_ERR_ARG, "%s: on %d must be 0 or 1", w, on);
    for (size_t i = 0; i < f->n; i++) {
        int changed = 0;
        deg_status st = doc_set(f, i, on, &changed);
        if (st != DEG_OK)
            return dg_fail_context(st, "%s: document %zu (%s)", w, i, f->docs[i].name);
        if (n_changed) *n_changed += (size_t)changed;
    }
    return DEG_OK;
}
