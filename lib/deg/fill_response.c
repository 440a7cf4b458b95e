/* fill_response.c - a fill's §8 response from its decoded leaves and arrays
 * (deg/response.h validates it) and the JSON text of responses and error lists. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "deg/fill_internal.h"
#include "deg/request.h"
#include "deg/response.h"
#include "model/arch.h"

/* §12.1: there is no context cap, so a trunk longer than the backbone's
 * trained positions (n_ctx_train) is read whole, with RoPE positions beyond
 * the trained range (no truncation; the spec is silent on a warning). The
 * response says so under the root pointer "" of meta:
 * {"mode": "document", "warnings": ["..."]}. */
static void context_warning(const dg_ckpt *k, const freq *r, json_t *out)
{
    int32_t nt = k->model->hp.n_ctx_train;
    size_t n = deg_trunk_len(r->trunk);
    if (nt <= 0 || n <= (size_t)nt) return;
    char msg[256];
    snprintf(msg, sizeof msg, "context: %zu prompt tokens exceed the backbone's %d trained "
             "positions; read whole (no truncation), positions beyond %d are untrained", n,
             (int)nt, (int)nt);
    json_t *meta = json_object_get(out, "meta");
    if (meta)
        json_object_set_new(meta, "", json_pack("{s:s, s:[s]}", "mode", "document", "warnings",
                                                msg));
}

deg_status dg_fill_assemble(const dg_ckpt *k, freq *r, json_t **response)
{
    json_t *fields = json_object(), *arrays = json_object();
    for (size_t li = 0; li < r->n_leaves; li++) {
        const leaf *L = &r->leaves[li];
        if (L->inst >= 0 && !dg_fill_reachable(r, L->inst, L->item)) continue;
        if (!L->meta) continue;
        char *p = dg_fill_leaf_pointer(r, L);
        json_t *e = json_object();
        if (L->value) json_object_set(e, "value", L->value);
        json_object_set(e, "meta", L->meta);
        json_object_set_new(fields, p, e);
        free(p);
    }
    for (size_t ii = 0; ii < r->n_insts; ii++) {
        const inst *I = &r->insts[ii];
        if (I->parent >= 0 && !dg_fill_reachable(r, I->parent, I->parent_item)) continue;
        size_t idx[64];
        size_t n = dg_fill_new_chain(r, I->parent, I->parent_item, idx);
        char *p = dg_path_pointer(&r->plan->arrays[I->array].path, idx, n);
        json_t *e = json_pack("{s:I}", "items", (json_int_t)I->n_alive);
        if (I->n_items > I->n_alive)
            json_object_set_new(e, "dropped", json_integer((json_int_t)(I->n_items - I->n_alive)));
        if (I->anchored) {
            /* where each surviving item starts: code point offset of its anchor token */
            json_t *an = json_array();
            for (int64_t t = 0; t < I->n_items; t++)
                if (I->alive[t])
                    json_array_append_new(an, json_integer((json_int_t)r->tok_cp0[I->anchor[t]]));
            json_t *em = json_pack("{s:s, s:o}", "array_mode", "anchor", "anchors", an);
            /* list prior (lists.h): the anchors are the items of the list under this key */
            if (em && I->list_absent) json_object_set_new(em, "list_absent", json_true());
            if (em && I->from_list) {
                const dg_list *L = &r->lists.p[I->list1 - 1];
                json_object_set_new(em, "list_key", json_string(L->key));
                if (L->table) json_object_set_new(em, "list_table", json_true());
                if (I->table_col) /* the column each free property read (fill_columns.c) */
                    json_object_set(em, "list_columns", I->table_col);
            }
            if (I->raw) json_object_update(em, I->raw);
            json_object_set_new(e, "meta", em);
        }
        json_object_set_new(arrays, p, e);
        free(p);
    }
    json_t *outcomes = json_pack("{s:o, s:o, s:{s:I}}", "fields", fields, "arrays", arrays,
                                 "usage", "prompt_tokens", (json_int_t)deg_trunk_len(r->trunk));
    json_t *errors = NULL;
    json_t *resp = NULL;
    deg_status st = dg_response_assemble(r->plan, outcomes, &resp, &errors);
    json_decref(outcomes);
    if (st == DEG_ERR_FILL && errors) {
        if (!r->errors) r->errors = json_array();
        json_array_extend(r->errors, errors);
    }
    json_decref(errors);
    if (st != DEG_OK) return st;
    json_t *out = json_pack("{s:s}", "model", deg_request_model(r->rq));
    json_object_update(out, resp);
    json_decref(resp);
    context_warning(k, r, out);
    if (k->debug_raw) {
        json_object_set_new(out, "timing",
                            json_pack("{s:f, s:f, s:f, s:I, s:I}", "prefill_s", r->t_prefill,
                                      "forks_s", r->t_forks, "generate_s", r->t_generate,
                                      "fork_rows", (json_int_t)r->fork_rows, "fork_tokens",
                                      (json_int_t)r->fork_tokens));
    }
    *response = out;
    return DEG_OK;
}

char *dg_fill_dump(json_t *v)
{
    return v ? json_dumps(v, JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_ENSURE_ASCII * 0 |
                                 JSON_REAL_PRECISION(17))
             : NULL;
}
