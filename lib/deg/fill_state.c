/* fill_state.c - per-request state of deg.fill (fill_internal.h): token lists, array
 * instances and leaves, jobs, a request's failure and its work limits. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/run.h"
#include "base/status.h"
#include "deg/fill_internal.h"
#include "deg/keyprior.h"
#include "deg/request.h"
#include "model/model.h"
#include "model/state.h"

/* Room for extra more ids on v (doubling from 64). */
static deg_status ivec_reserve(ivec *v, size_t extra)
{
    deg_status st = DG_GROW(v->p, v->cap, v->n + extra);
    return st == DEG_OK ? st : dg_fail_context(st, "fill (tokens)");
}

/* Tokenize text (special != 0: special tokens parsed) onto v. Bytes the
 * vocabulary lacks are dropped as HF tokenizers drops them (issue 19 item 5:
 * one control byte used to reject a whole document); dg_fill_trunk maps the
 * context's tokens back to the original bytes. */
deg_status dg_fill_tok(ivec *v, const deg_model *m, const char *text, size_t len, int special)
{
    size_t n = 0;
    int32_t *ids = NULL;
    unsigned fl = (special ? DEG_TOKENIZE_SPECIAL : 0u) | DEG_TOKENIZE_DROP_MISSING_BYTES;
    DG_TRY(dg_model_tokenize(m, text, len, fl, &ids, &n));
    deg_status st = ivec_reserve(v, n);
    if (st == DEG_OK && n) memcpy(v->p + v->n, ids, n * sizeof *ids);
    if (st == DEG_OK) v->n += n;
    free(ids);
    return st;
}

deg_status dg_fill_push(ivec *v, int32_t id)
{
    DG_TRY(ivec_reserve(v, 1));
    v->p[v->n++] = id;
    return DEG_OK;
}

void dg_fill_fail(freq *r, deg_status st, const char *loc)
{
    if (r->st != DEG_OK) return;
    r->st = st;
    if (!r->errors) r->errors = json_array();
    json_array_append_new(r->errors, json_pack("{s:s, s:s}", "loc", loc ? loc : "",
                                               "msg", deg_errmsg()));
}

/* Work limits (base/run.h): a request that is cancelled, past its deadline
 * or over a cap fails alone with DEG_ERR_CANCELLED / DEG_ERR_LIMIT. Returns 1
 * if the request has stopped (for any reason). */
int dg_fill_stopped(freq *r, const char *phase)
{
    if (r->st != DEG_OK) return 1;
    deg_status st = dg_limits_check(&r->lim, phase);
    size_t nf = r->n_leaves + r->n_insts;
    if (st == DEG_OK && r->lim.max_fields && (int64_t)nf > r->lim.max_fields)
        st = dg_fail(DEG_ERR_LIMIT, "max_fields %lld: the schema instantiates %zu fields "
                     "(leaves of every item + array instances) during %s%s",
                     (long long)r->lim.max_fields, nf, phase,
                     dg_limit_hint(&r->lim, DG_LIMIT_FIELDS));
    if (st == DEG_OK && r->lim.max_fork_tokens &&
        (int64_t)(r->fork_tokens + r->gen_fed + r->due) > r->lim.max_fork_tokens)
        st = dg_fail(DEG_ERR_LIMIT, "max_fork_tokens %lld: %zu fork tokens needed during %s%s",
                     (long long)r->lim.max_fork_tokens, r->fork_tokens + r->gen_fed + r->due,
                     phase, dg_limit_hint(&r->lim, DG_LIMIT_FORK_TOKENS));
    if (st != DEG_OK) dg_fill_fail(r, st, "");
    return st != DEG_OK;
}

/* a * b, saturated at UINT64_MAX */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* Items of one instance of array ai at the least, times the instances of it
 * (the items of its enclosing arrays): each array's minItems, at least 1 (a
 * count fork lists every item field even when no item is taken). */
static uint64_t min_items_total(const dg_plan *P, int32_t ai)
{
    uint64_t n = 1;
    for (; ai >= 0; ai = P->arrays[ai].parent_array) {
        int64_t m = P->arrays[ai].min_items;
        n = mul_sat(n, m > 1 ? (uint64_t)m : 1);
    }
    return n;
}

static uint64_t plan_min_fields(const dg_plan *P)
{
    uint64_t nf = 0;
    for (size_t i = 0; i < P->n_fields; i++) {
        uint64_t t = min_items_total(P, P->fields[i].array);
        nf = nf > UINT64_MAX - t ? UINT64_MAX : nf + t;
    }
    for (size_t i = 0; i < P->n_arrays; i++) {
        uint64_t t = min_items_total(P, P->arrays[i].parent_array);
        nf = nf > UINT64_MAX - t ? UINT64_MAX : nf + t;
    }
    return nf;
}

void dg_fill_plan_fields_check(freq *r)
{
    uint64_t nf = plan_min_fields(r->plan);
    if (!r->lim.max_fields || nf <= (uint64_t)r->lim.max_fields) return;
    dg_fail(DEG_ERR_LIMIT, "max_fields %lld: the schema instantiates at least %llu fields "
            "(every field once per item its enclosing arrays' minItems require, + one "
            "instance per array and enclosing item), checked before the prefill%s",
            (long long)r->lim.max_fields, (unsigned long long)nf,
            dg_limit_hint(&r->lim, DG_LIMIT_FIELDS));
    dg_fill_fail(r, DEG_ERR_LIMIT, "");
}

int dg_fill_fork_len_check(freq *r, size_t n, const char *what, const char *ptr,
                           const char *when)
{
    if (r->st != DEG_OK) return 1;
    if (!r->lim.max_fork_tokens || n <= DEG_MAX_FORK_LEN) return 0;
    const char *why = r->lim.fork_tokens_from == DG_FROM_REQUEST
                          ? "; in force because the request's options.max_fork_tokens is set"
                          : DG_LIMIT_HINT_MARK "set max_fork_tokens to 0, which lifts both "
                            "fork-token caps (deg_run_limits.max_fork_tokens (C), deg.fill("
                            "limits={\"max_fork_tokens\": 0}) (Python))";
    dg_fail(DEG_ERR_LIMIT, "DEG_MAX_FORK_LEN %d: one fork of %zu tokens (%s%s) is over the cap "
            "of a single fork (a fork's attention grows with the square of its length); this "
            "cap is in force while a total fork-token cap is (max_fork_tokens %lld)%s%s",
            DEG_MAX_FORK_LEN, n, what, ptr, (long long)r->lim.max_fork_tokens, when, why);
    dg_fill_fail(r, DEG_ERR_LIMIT, "");
    return 1;
}

int dg_fill_fork_len_stopped(freq *r, const job *j)
{
    int array = j->kind == JOB_COUNT || j->kind == JOB_ANCHOR;
    const char *what = j->kind == JOB_COUNT ? "the count fork of " :
                       j->kind == JOB_ANCHOR ? "the anchor fork of " : "the fork of field ";
    const char *ptr = array ? r->plan->arrays[r->insts[j->target].array].pointer
                            : r->plan->fields[r->leaves[j->target].field].pointer;
    return dg_fill_fork_len_check(r, j->ids.n, what, ptr, "");
}


/* Original indices of item `item` of instance `in` and its enclosing items, outermost
 * first (none when in < 0): malloc'd in *idx (at least one slot), count in *n. */
static int item_chain(const freq *r, int in, size_t item, size_t **idx, size_t *n)
{
    *n = in >= 0 ? r->insts[in].n_idx + 1 : 0;
    *idx = calloc(*n ? *n : 1, sizeof(size_t));
    if (!*idx) return 0;
    if (in >= 0) {
        memcpy(*idx, r->insts[in].idx, r->insts[in].n_idx * sizeof(size_t));
        (*idx)[*n - 1] = item;
    }
    return 1;
}

int dg_fill_add_inst(freq *r, int array, int parent, size_t parent_item)
{
    if (DG_GROW(r->insts, r->cap_insts, r->n_insts + 1) != DEG_OK) return -1;
    inst *I = &r->insts[r->n_insts];
    memset(I, 0, sizeof *I);
    I->array = array;
    I->parent = parent;
    I->parent_item = parent_item;
    if (!item_chain(r, parent, parent_item, &I->idx, &I->n_idx)) return -1;
    return (int)r->n_insts++;
}

long dg_fill_add_leaf(freq *r, size_t field, int in, size_t item)
{
    if (DG_GROW(r->leaves, r->cap_leaves, r->n_leaves + 1) != DEG_OK) return -1;
    leaf *L = &r->leaves[r->n_leaves];
    memset(L, 0, sizeof *L);
    L->field = field;
    L->inst = in;
    L->item = item;
    if (!item_chain(r, in, item, &L->idx, &L->n_idx)) return -1;
    return (long)r->n_leaves++;
}

void dg_fill_clear(freq *r)
{
    for (size_t i = 0; i < r->n_insts; i++) {
        free(r->insts[i].idx);
        free(r->insts[i].alive);
        free(r->insts[i].newidx);
        free(r->insts[i].anchor);
        free(r->insts[i].list_idx);
        free(r->insts[i].name_end);
        free(r->insts[i].rec_cell);
        json_decref(r->insts[i].table_col);
        free(r->insts[i].alog);
        free(r->insts[i].gold_idx);
        json_decref(r->insts[i].raw);
    }
    free(r->insts);
    for (size_t i = 0; i < r->n_leaves; i++) {
        free(r->leaves[i].idx);
        json_decref(r->leaves[i].value);
        json_decref(r->leaves[i].meta);
        json_decref(r->leaves[i].alt);
        free(r->leaves[i].fail_msg);
    }
    free(r->leaves);
    deg_trunk_free(r->trunk);
    free(r->ctx_hidden);
    free(r->trunk_ids);
    free(r->tok_cp0);
    free(r->tok_cp1);
    free(r->cp_tok);
    free(r->cp_byte);
    dg_keylines_free(&r->kv);
    free(r->block);
    free(r->known_text);
    dg_lists_free(&r->lists);
    free(r->nl_pre);
    free(r->nb_next);
    free(r->nb_prev);
    free(r->se_pre);
    free(r->hl_cell);
    deg_request_free(r->rq);
    json_decref(r->errors);
}

job *dg_fill_job_add(jobs *J, int kind, size_t req, size_t target)
{
    if (DG_GROW(J->p, J->cap, J->n + 1) != DEG_OK) return NULL;
    job *j = &J->p[J->n++];
    memset(j, 0, sizeof *j);
    j->kind = kind;
    j->req = req;
    j->target = target;
    return j;
}

void dg_fill_jobs_free(jobs *J)
{
    for (size_t i = 0; i < J->n; i++) {
        free(J->p[i].ids.p);
        free(J->p[i].mark);
        free(J->p[i].h);
        free(J->p[i].order);
    }
    free(J->p);
    memset(J, 0, sizeof *J);
}
