/* fill_rounds.c - running forks: a round's jobs as fork batches under the memory
 * budget and work limits, and the one round loop that deg_fill and the training trace
 * both drive (§12.1). */
#include <stdint.h>
#include <stdlib.h>

#include "base/run.h"
#include "base/status.h"
#include "deg/fill_internal.h"
#include "model/arch.h"
#include "model/state.h"

static size_t fork_token_bytes(const deg_model *m)
{
    return (size_t)m->hp.n_layer * 2 * m->max_kd * /* the widest layer's K/V row */
               sizeof(float) +
           2 * (size_t)m->hp.n_embd * sizeof(float) + 1024;
}

/* The head kind a job's fork row serves, for the adapter selector (§12.7). */
static int32_t job_head_kind(const freq *reqs, const job *j)
{
    if (j->kind == JOB_GEN) return -1; /* x-generate rows: the base model */
    if (j->kind == JOB_COUNT) return DEG_HEAD_COUNT;
    if (j->kind == JOB_ANCHOR) return DEG_HEAD_ANCHOR;
    const freq *r = &reqs[j->req];
    dg_mode mode = r->plan->fields[r->leaves[j->target].field].mode;
    return dg_mode_is_decide(mode) ? DEG_HEAD_CHOICE : DEG_HEAD_EXTRACT;
}

deg_status dg_fill_batch_poll(void *ctx)
{
    batch_poll *b = ctx;
    for (size_t q = 0; q < b->n; q++) {
        freq *r = &b->reqs[b->J[b->sel[q]].req];
        if (r->st == DEG_OK && !dg_limits_hit(&r->lim)) return DEG_OK;
    }
    b->stopped = 1;
    return DEG_ERR_CANCELLED;
}

/* Run jobs [0, n) as rows of batches sized from the memory budget, each row
 * with the adapter its kind selects; keep the marked hidden rows. Jobs of
 * stopped requests (failed, cancelled, over a limit: dg_fill_stopped) are
 * skipped; their h stays NULL. */
static deg_status run_jobs(const dg_ckpt *k, freq *reqs, job *J, size_t n)
{
    const deg_model *m = k->model;
    size_t E = (size_t)m->hp.n_embd;
    size_t per_tok = fork_token_bytes(m);
    deg_status st = DEG_OK;
    /* the round's fork tokens count against max_fork_tokens before it runs */
    for (size_t q = 0; q < n; q++) reqs[J[q].req].due += J[q].ids.n;
    for (size_t q = 0; q < n; q++) dg_fill_stopped(&reqs[J[q].req], "the fork rounds");
    for (size_t q = 0; q < n; q++) dg_fill_fork_len_stopped(&reqs[J[q].req], &J[q]);
    for (size_t q = 0; q < n; q++) reqs[J[q].req].due = 0;
    deg_fork **forks = calloc(n ? n : 1, sizeof *forks);
    const int32_t **ids = calloc(n ? n : 1, sizeof *ids);
    size_t *ns = calloc(n ? n : 1, sizeof *ns);
    size_t *sel = calloc(n ? n : 1, sizeof *sel);
    if (!forks || !ids || !ns || !sel) st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    size_t i = 0;
    while (i < n && st == DEG_OK) {
        size_t nb = 0, bytes = 0;
        for (; i < n && (nb == 0 || bytes + J[i].ids.n * per_tok <= k->fork_budget_bytes); i++) {
            if (dg_fill_stopped(&reqs[J[i].req], "the fork rounds")) continue;
            bytes += J[i].ids.n * per_tok;
            sel[nb++] = i;
        }
        if (nb == 0) break;
        for (size_t q = 0; q < nb && st == DEG_OK; q++) {
            job *j = &J[sel[q]];
            st = deg_fork_new(reqs[j->req].trunk, &forks[q]);
            if (st == DEG_OK && k->lora)
                st = deg_fork_set_adapter(forks[q], k->lora,
                                          deg_ckpt_lora_adapter(k, job_head_kind(reqs, j)));
            ids[q] = j->ids.p;
            ns[q] = j->ids.n;
        }
        double t0 = dg_now();
        batch_poll bp = {reqs, J, sel, nb, 0};
        dg_poll prev = dg_run_push(dg_fill_batch_poll, &bp);
        if (st == DEG_OK) st = deg_forks_feed(forks, nb, ids, ns, NULL);
        dg_run_pop(prev);
        double dt = dg_now() - t0;
        if (bp.stopped) {
            /* every request of the batch stopped: each fails with its reason */
            for (size_t q = 0; q < nb; q++) dg_fill_stopped(&reqs[J[sel[q]].req], "the fork rounds");
            st = DEG_OK;
        }
        for (size_t q = 0; q < nb && st == DEG_OK && !bp.stopped; q++) {
            job *j = &J[sel[q]];
            reqs[j->req].t_forks += dt * (double)ns[q] / (double)(bytes / per_tok);
            reqs[j->req].fork_rows++;
            reqs[j->req].fork_tokens += ns[q];
            j->h = malloc(j->n_mark * E * sizeof(float));
            if (!j->h) st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            for (size_t t = 0; t < j->n_mark && st == DEG_OK; t++)
                st = deg_fork_hidden(forks[q], j->mark[t], 1, j->h + t * E);
        }
        for (size_t q = 0; q < nb; q++) {
            deg_fork_free(forks[q]);
            forks[q] = NULL;
        }
    }
    free(forks);
    free(ids);
    free(ns);
    free(sel);
    return st;
}

/* THE round loop (§12.1): from the jobs of round 0 in *J, while jobs remain: run
 * the selected jobs as fork batches (run_jobs), hand them to ops->prepare, each job
 * to ops->decoded, each anchor job to ops->anchors, each job to ops->after, and go
 * on with the jobs they queued. *J is freed. */
deg_status dg_fill_rounds(const dg_ckpt *k, freq *reqs, jobs *J, const round_ops *ops)
{
    deg_status st = DEG_OK;
    while (st == DEG_OK && J->n && !(ops->stop_on_failure && reqs[0].st != DEG_OK)) {
        size_t nrun = ops->select ? ops->select(reqs, J) : J->n;
        st = run_jobs(k, reqs, J->p, nrun);
        jobs next = {0};
        if (st == DEG_OK && ops->prepare) st = ops->prepare(k, reqs, J->p, nrun);
        for (size_t q = 0; q < J->n && st == DEG_OK; q++)
            st = ops->decoded(k, reqs, &J->p[q], q < nrun, &next);
        for (size_t q = 0; q < J->n && st == DEG_OK; q++)
            if (J->p[q].kind == JOB_ANCHOR) st = ops->anchors(k, reqs, &J->p[q], &next);
        for (size_t q = 0; q < J->n && st == DEG_OK && ops->after; q++)
            st = ops->after(k, reqs, &J->p[q], q < nrun);
        dg_fill_jobs_free(J);
        *J = next;
    }
    dg_fill_jobs_free(J);
    return st;
}
