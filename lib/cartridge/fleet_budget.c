/* The fleet's resident budget (include/cartridge.h, "Fleets"): loading and
 * evicting cartridges, optimizer rounds with per-entrant lr warm-up, the
 * rotation policy, saving, and serving compositions of fleet documents. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "cartridge/fleet_internal.h"

static deg_status check_doc(const deg_fleet *f, size_t doc, const char *w)
{
    if (!f) return dg_fail(DEG_ERR_ARG, "%s: NULL fleet", w);
    if (doc >= f->n)
        return dg_fail(DEG_ERR_RANGE, "%s: document %zu outside [0, %zu)", w, doc, f->n);
    return DEG_OK;
}

static size_t budget(const deg_fleet *f) { return f->prm.budget ? f->prm.budget : f->n; }

deg_status dg_fleet_load(deg_fleet *f, size_t doc)
{
    dg_fleet_doc *d = &f->docs[doc];
    if (d->c) return DEG_OK;
    deg_cartridge *c = NULL;
    deg_status st = deg_cartridge_load(f->model, d->cart_path, &c);
    if (st != DEG_OK) return dg_fail_context(st, "fleet document %zu (%s)", doc, d->name);
    if (c->p != f->p) {
        deg_cartridge_free(c);
        return dg_fail(DEG_ERR_FORMAT, "fleet document %zu (%s): %s has p = %zu, the fleet "
                       "p = %zu", doc, d->name, d->cart_path, c->p, f->p);
    }
    d->c = c;
    d->steps = c->steps;
    d->since_entry = 0;
    return DEG_OK;
}

/* Free doc's cartridge (saved by dg_fleet_commit first). */
static void unload(deg_fleet *f, size_t doc)
{
    dg_fleet_doc *d = &f->docs[doc];
    d->steps = d->c->steps;
    deg_cartridge_free(d->c);
    d->c = NULL;
}

deg_status deg_fleet_evict(deg_fleet *f, size_t doc)
{
    DG_TRY(check_doc(f, doc, "deg_fleet_evict"));
    if (!f->docs[doc].c) return DEG_OK;
    int *save = calloc(f->n, sizeof *save);
    if (!save) return dg_fail(DEG_ERR_NOMEM, "deg_fleet_evict: out of memory");
    save[doc] = 1;
    deg_status st = dg_fleet_commit(f, save, 0);
    free(save);
    if (st != DEG_OK) return dg_fail_context(st, "deg_fleet_evict");
    unload(f, doc);
    return dg_fleet_commit(f, NULL, 0);
}

deg_status deg_fleet_admit(deg_fleet *f, size_t doc)
{
    DG_TRY(check_doc(f, doc, "deg_fleet_admit"));
    if (f->docs[doc].c) return DEG_OK;
    if (dg_fleet_n_resident(f) >= budget(f))
        return dg_fail(DEG_ERR_STATE, "deg_fleet_admit: %zu documents resident = the budget; "
                       "evict one first", dg_fleet_n_resident(f));
    DG_TRY(dg_fleet_load(f, doc));
    return dg_fleet_commit(f, NULL, 0);
}

deg_status deg_fleet_cartridge(deg_fleet *f, size_t doc, deg_cartridge **out)
{
    DG_TRY(check_doc(f, doc, "deg_fleet_cartridge"));
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_fleet_cartridge: out is NULL");
    *out = f->docs[doc].c;
    if (!*out)
        return dg_fail(DEG_ERR_STATE, "deg_fleet_cartridge: document %zu (%s) is not resident",
                       doc, f->docs[doc].name);
    return DEG_OK;
}

float deg_fleet_lr(const deg_fleet *f, size_t doc)
{
    if (!f || doc >= f->n) return 0.0f;
    float lr = f->prm.adam.lr;
    int64_t k = f->docs[doc].since_entry + 1, w = f->prm.warmup_steps;
    return (w > 0 && k < w) ? lr * (float)k / (float)w : lr;
}

deg_status deg_fleet_step(deg_fleet *f, const size_t *docs, size_t n)
{
    const char *w = "deg_fleet_step";
    if (!f || (n && !docs)) return dg_fail(DEG_ERR_ARG, "%s: NULL argument", w);
    for (size_t i = 0; i < n; i++) {
        DG_TRY(check_doc(f, docs[i], w));
        if (!f->docs[docs[i]].c)
            return dg_fail(DEG_ERR_STATE, "%s: document %zu is not resident", w, docs[i]);
        for (size_t j = 0; j < i; j++)
            if (docs[j] == docs[i])
                return dg_fail(DEG_ERR_ARG, "%s: document %zu listed twice", w, docs[i]);
    }
    for (size_t i = 0; i < n; i++) {
        dg_fleet_doc *d = &f->docs[docs[i]];
        deg_adam_params a = f->prm.adam;
        a.lr = deg_fleet_lr(f, docs[i]);
        deg_status st = deg_cartridge_adam_step(d->c, &a);
        if (st != DEG_OK) {
            for (size_t j = i + 1; j < n; j++) deg_cartridge_zero_grads(f->docs[docs[j]].c);
            return dg_fail_context(st, "%s: document %zu (%s)", w, docs[i], d->name);
        }
        d->steps = d->c->steps;
        d->since_entry++;
    }
    f->rounds++;
    if (f->prm.rotate_every > 0 && f->rounds % f->prm.rotate_every == 0)
        return deg_fleet_rotate(f);
    return DEG_OK;
}

deg_status deg_fleet_rotate(deg_fleet *f)
{
    if (!f) return dg_fail(DEG_ERR_ARG, "deg_fleet_rotate: NULL fleet");
    size_t r = dg_fleet_n_resident(f), absent = f->n - r;
    if (absent == 0) return DEG_OK;
    size_t k = (size_t)ceil((double)f->prm.evict_fraction * (double)r);
    if (k > absent) k = absent;
    int *evicted = calloc(f->n, sizeof *evicted);
    if (!evicted) return dg_fail(DEG_ERR_NOMEM, "deg_fleet_rotate: out of memory");
    deg_status st = DEG_OK;
    /* The k most-trained residents (ties to the lower id) go to disk. */
    for (size_t e = 0; e < k; e++) {
        size_t best = f->n;
        for (size_t i = 0; i < f->n; i++)
            if (f->docs[i].c && !evicted[i] &&
                (best == f->n || f->docs[i].c->steps > f->docs[best].c->steps))
                best = i;
        evicted[best] = 1;
    }
    st = dg_fleet_commit(f, evicted, 0);
    for (size_t i = 0; st == DEG_OK && i < f->n; i++)
        if (evicted[i]) unload(f, i);
    /* The least-trained absentees come in. */
    while (st == DEG_OK && dg_fleet_n_resident(f) < budget(f)) {
        size_t j = dg_fleet_least_trained_absent(f, evicted);
        if (j == f->n) break;
        st = dg_fleet_load(f, j);
    }
    free(evicted);
    if (st == DEG_OK) st = dg_fleet_commit(f, NULL, 0);
    return st;
}

deg_status deg_fleet_save(deg_fleet *f)
{
    if (!f) return dg_fail(DEG_ERR_ARG, "deg_fleet_save: NULL fleet");
    return dg_fleet_commit(f, NULL, 1);
}

/* The cartridges of docs[0..n) for serving: residents borrowed, absentees
 * loaded (mapped) into tmp[i] (freed by the caller); w names the caller. */
static deg_status gather(const deg_fleet *f, const size_t *docs, size_t n,
                         const deg_cartridge **parts, deg_cartridge **tmp, const char *w)
{
    for (size_t i = 0; i < n; i++) {
        const dg_fleet_doc *d = &f->docs[docs[i]];
        if (d->c) {
            parts[i] = d->c;
            continue;
        }
        deg_status st = deg_cartridge_load(f->model, d->cart_path, &tmp[i]);
        if (st != DEG_OK) return dg_fail_context(st, "%s: document %zu (%s)", w, docs[i], d->name);
        parts[i] = tmp[i];
    }
    return DEG_OK;
}

/* deg_fleet_trunk (want_trunk) or deg_fleet_draft_ref over docs[0..n). */
static deg_status serve_parts(const deg_fleet *f, const size_t *docs, size_t n, int want_trunk,
                              void *out, const char *w)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "%s: out is NULL", w);
    if (want_trunk) *(deg_trunk **)out = NULL;
    else *(deg_draft_ref **)out = NULL;
    if (!f || !docs || n == 0)
        return dg_fail(DEG_ERR_ARG, "%s: need a fleet and at least one document", w);
    for (size_t i = 0; i < n; i++) DG_TRY(check_doc(f, docs[i], w));
    const deg_cartridge **parts = calloc(n, sizeof *parts);
    deg_cartridge **tmp = calloc(n, sizeof *tmp);
    deg_status st = parts && tmp ? DEG_OK : dg_fail(DEG_ERR_NOMEM, "%s: out of memory", w);
    if (st == DEG_OK) st = gather(f, docs, n, parts, tmp, w);
    if (st == DEG_OK)
        st = want_trunk ? deg_trunk_from_cartridges(parts, n, out)
                        : deg_cartridge_compose_draft_ref(parts, n, out);
    for (size_t i = 0; tmp && i < n; i++) deg_cartridge_free(tmp[i]);
    free(tmp);
    free(parts);
    return st;
}

deg_status deg_fleet_trunk(const deg_fleet *f, const size_t *docs, size_t n, deg_trunk **out)
{
    return serve_parts(f, docs, n, 1, out, "deg_fleet_trunk");
}

deg_status deg_fleet_draft_ref(const deg_fleet *f, const size_t *docs, size_t n,
                               deg_draft_ref **out)
{
    return serve_parts(f, docs, n, 0, out, "deg_fleet_draft_ref");
}
