/* plan_fingerprint.c - FieldPlan / FillPlan fingerprints (deg contract §6, §7.2).
 *
 * A leaf's canonical spec is everything its outcome may depend on (§7.2: the field's
 * key path, its own annotations, its options/levels/constraints) and nothing else: no
 * position, no siblings, no schema location. It is the JSON object
 *
 *   {"spec": "deg-field-v1", "path": [name | null (= each item), ...],
 *    "mode", "type", "options" | null, "option_descriptions" | null,
 *    "levels" | null, "level_labels" | null, "null_outcome", "format" | null,
 *    "constraints": {keyword: value as written}, "required", "nullable", "on_null",
 *    "title" | null, "description" | null, "max_tokens" | null}
 *
 * serialized as Python's json.dumps(spec, sort_keys=True, separators=(",", ":"),
 * ensure_ascii=False) writes it (dg_json_render), UTF-8; the fingerprint is the
 * lowercase hex SHA-256 of those bytes. An array's count decision is also a
 * parallel-phase outcome, so each array node has a canonical spec too:
 *
 *   {"spec": "deg-array-v1", "path", "min_items", "max_items" | null, "unique_items",
 *    "required", "generate", "title" | null, "description" | null,
 *    "item_fields": [the item leaves' paths]}
 *
 * FillPlan.fingerprint = SHA-256 of {"spec": "deg-plan-v1", "parallel": the sorted
 * distinct fingerprints of every decide/extract leaf and array node, "generate": the
 * generate leaves' fingerprints in schema order} serialized the same way. So
 * reordering decide/extract properties keeps it; reordering generate fields changes it.
 * SHA-256 comes from GNU Nettle.
 */
#include <nettle/sha2.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "deg/plan.h"
#include "deg/plan_internal.h"
#include "deg/render.h"

static json_t *jstr(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *path_canonical(const dg_path *p)
{
    json_t *a = json_array();
    for (size_t i = 0; i < p->n; i++)
        json_array_append_new(a, p->seg[i] ? json_string(p->seg[i]) : json_null());
    return a;
}

json_t *dg_field_canonical(const dg_field_plan *f)
{
    json_t *j = json_object();
    json_object_set_new(j, "spec", json_string("deg-field-v1"));
    json_object_set_new(j, "path", path_canonical(&f->path));
    json_object_set_new(j, "mode", json_string(dg_mode_name(f->mode)));
    json_object_set_new(j, "type", json_string(dg_type_name(f->type)));
    if (f->mode == DG_MODE_CHOICE) {
        json_object_set(j, "options", f->options);
        json_t *d = json_array();
        for (size_t k = 0; k < f->n_options; k++)
            json_array_append_new(d, jstr(f->option_descriptions[k]));
        json_object_set_new(j, "option_descriptions", d);
    } else {
        json_object_set_new(j, "options", json_null());
        json_object_set_new(j, "option_descriptions", json_null());
    }
    if (f->mode == DG_MODE_SCORE) {
        json_t *l = json_array(), *lab = json_array();
        for (size_t k = 0; k < f->n_levels; k++) {
            json_array_append_new(l, json_integer(f->levels[k]));
            json_array_append_new(lab, jstr(f->level_labels[k]));
        }
        json_object_set_new(j, "levels", l);
        json_object_set_new(j, "level_labels", lab);
    } else {
        json_object_set_new(j, "levels", json_null());
        json_object_set_new(j, "level_labels", json_null());
    }
    json_object_set_new(j, "null_outcome", json_boolean(f->null_outcome));
    json_object_set_new(j, "format", jstr(dg_format_name(f->format)));
    json_object_set(j, "constraints", f->constraints.json);
    json_object_set_new(j, "required", json_boolean(f->required));
    json_object_set_new(j, "nullable", json_boolean(f->nullable));
    json_object_set_new(j, "on_null", json_string(dg_on_null_name(f->on_null)));
    json_object_set_new(j, "title", jstr(f->title));
    json_object_set_new(j, "description", jstr(f->description));
    json_object_set_new(j, "max_tokens", f->max_tokens ? json_integer(f->max_tokens) : json_null());
    return j;
}

json_t *dg_array_canonical(const dg_plan *p, const dg_array_plan *a)
{
    json_t *j = json_object();
    json_object_set_new(j, "spec", json_string("deg-array-v1"));
    json_object_set_new(j, "path", path_canonical(&a->path));
    json_object_set_new(j, "min_items", json_integer(a->min_items));
    json_object_set_new(j, "max_items", a->max_items >= 0 ? json_integer(a->max_items) : json_null());
    json_object_set_new(j, "unique_items", json_boolean(a->unique_items));
    json_object_set_new(j, "required", json_boolean(a->required));
    json_object_set_new(j, "generate", json_boolean(a->generate));
    json_object_set_new(j, "title", jstr(a->title));
    json_object_set_new(j, "description", jstr(a->description));
    json_t *items = json_array();
    for (size_t i = a->first_field; i < a->first_field + a->n_fields; i++)
        json_array_append_new(items, path_canonical(&p->fields[i].path));
    json_object_set_new(j, "item_fields", items);
    return j;
}

/* sha256 hex of the canonical serialization of spec (consumed). */
static deg_status digest(json_t *spec, char hex[65])
{
    if (!spec) return dg_fail(DEG_ERR_NOMEM, "fingerprint: out of memory");
    char *text = dg_json_render(spec, DG_RENDER_SORT_KEYS | DG_RENDER_COMPACT);
    json_decref(spec);
    if (!text) return dg_fail_context(DEG_ERR_NOMEM, "fingerprint");
    struct sha256_ctx ctx;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(text), (const uint8_t *)text);
    sha256_digest(&ctx, sizeof d, d);
    free(text);
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
        hex[2 * i] = hx[d[i] >> 4];
        hex[2 * i + 1] = hx[d[i] & 15];
    }
    hex[64] = '\0';
    return DEG_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

deg_status dg_plan_fingerprints(dg_plan *p)
{
    for (size_t i = 0; i < p->n_fields; i++)
        DG_TRY(digest(dg_field_canonical(&p->fields[i]), p->fields[i].fingerprint));
    for (size_t i = 0; i < p->n_arrays; i++)
        DG_TRY(digest(dg_array_canonical(p, &p->arrays[i]), p->arrays[i].fingerprint));

    size_t n = p->n_fields + p->n_arrays, np = 0;
    const char **par = malloc((n ? n : 1) * sizeof *par);
    if (!par) return dg_fail(DEG_ERR_NOMEM, "fingerprint: out of memory");
    json_t *gen = json_array();
    for (size_t i = 0; i < p->n_fields; i++) {
        if (p->fields[i].mode == DG_MODE_GENERATE)
            json_array_append_new(gen, json_string(p->fields[i].fingerprint));
        else
            par[np++] = p->fields[i].fingerprint;
    }
    for (size_t i = 0; i < p->n_arrays; i++) par[np++] = p->arrays[i].fingerprint;
    qsort(par, np, sizeof *par, cmp_str);
    json_t *pj = json_array();
    for (size_t i = 0; i < np; i++)
        if (i == 0 || strcmp(par[i], par[i - 1]))
            json_array_append_new(pj, json_string(par[i]));
    free(par);
    json_t *spec = json_pack("{s:s,s:o,s:o}", "spec", "deg-plan-v1", "parallel", pj,
                             "generate", gen);
    return digest(spec, p->fingerprint);
}
