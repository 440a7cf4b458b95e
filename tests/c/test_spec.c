/* Speculative greedy decoding (deg_forks_generate_spec, lib/model/spec.c) on
 * the tiny random models of tests/goldens: the suffix automata against brute
 * force, fork rewinds, the acceptance gate, outputs byte-identical to
 * deg_forks_generate (ids, stop flags, and the forks' state afterwards,
 * bitwise) under oracle, random and self drafts, batches of ragged rows,
 * gate on and off; the cartridge's draft reference through save/load. The
 * real SmolLM2 arm is tests/python/test_spec.py. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cartridge.h"
#include "deg.h"
#include "format/safetensors.h"
#include "model/draft.h"
#include "model/sample.h"
#include "model/spec_gate.h"
#include "tiny_model.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* ------------------------------------------------------------ automata */

/* Longest suffix of t[0..n) that also ends at an earlier index e < n - 1. */
static size_t brute_self(const int32_t *t, size_t n)
{
    size_t best = 0;
    for (size_t e = 0; e + 1 < n; e++) {
        size_t l = 0;
        while (l <= e && t[e - l] == t[n - 1 - l]) l++;
        if (l > best) best = l;
    }
    return best;
}

/* Longest suffix of t[0..n) occurring anywhere in r[0..nr). */
static size_t brute_match(const int32_t *r, size_t nr, const int32_t *t, size_t n)
{
    size_t best = 0;
    for (size_t e = 0; e < nr; e++) {
        size_t l = 0;
        while (l <= e && l < n && r[e - l] == t[n - 1 - l]) l++;
        if (l > best) best = l;
    }
    return best;
}

Test(spec, suffix_automaton_against_brute_force)
{
    for (int trial = 0; trial < 40; trial++) {
        uint32_t alpha = 2 + (uint32_t)trial % 5;
        size_t n = 30 + (size_t)rnd(120);
        int32_t *t = malloc(n * sizeof *t), *r = malloc(n * sizeof *r);
        for (size_t i = 0; i < n; i++) t[i] = (int32_t)rnd(alpha), r[i] = (int32_t)rnd(alpha);
        dg_sam self, ref;
        cr_assert_eq(dg_sam_init(&self, 0), DEG_OK);
        cr_assert_eq(dg_sam_init(&ref, n), DEG_OK);
        for (size_t i = 0; i < n; i++) cr_assert_eq(dg_sam_extend(&ref, r[i]), DEG_OK);
        dg_sam_match mt = {0, 0};
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(dg_sam_extend(&self, t[i]), DEG_OK);
            dg_sam_match_step(&ref, &mt, t[i]);
            size_t first, avail, match;
            dg_sam_self_continuation(&self, &first, &avail, &match);
            cr_assert_eq(match, brute_self(t, i + 1), "trial %d, i %zu", trial, i);
            if (match) {
                cr_assert_eq(avail, i + 1 - first);
                /* the match really precedes first: t[first-match..first) is the suffix */
                cr_assert(first >= match && first < i + 1);
                cr_assert_eq(memcmp(t + first - match, t + i + 1 - match, match * sizeof *t), 0);
            }
            cr_assert_eq(mt.len, brute_match(r, n, t, i + 1), "trial %d, i %zu", trial, i);
            dg_sam_ref_continuation(&ref, &mt, &first, &avail, &match);
            if (avail) {
                cr_assert(match >= 1 && match <= mt.len && first >= match);
                cr_assert_eq(avail, n - first);
                cr_assert_eq(memcmp(r + first - match, t + i + 1 - match, match * sizeof *t), 0);
            }
        }
        dg_sam_free(&self);
        dg_sam_free(&ref);
        free(t);
        free(r);
    }
}

/* --------------------------------------------------------------- rewinds */

Test(spec, fork_truncate_rewinds_bitwise)
{
    deg_model *m = tiny_load("tiny-qwen3");
    deg_model_info mi;
    cr_assert_eq(deg_model_get_info(m, &mi), DEG_OK);
    size_t V = (size_t)mi.n_vocab;
    const int32_t prompt[5] = {1, 17, 300, 45, 2}, a[6] = {5, 6, 7, 8, 9, 10},
                  b[3] = {99, 98, 97};
    deg_trunk *t;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, prompt, 5, NULL, NULL), DEG_OK);
    deg_fork *x, *y;
    cr_assert_eq(deg_fork_new(t, &x), DEG_OK);
    cr_assert_eq(deg_fork_new(t, &y), DEG_OK);
    float *lx = malloc(3 * V * sizeof *lx), *ly = malloc(3 * V * sizeof *ly);
    float *l1 = malloc(V * sizeof *l1), *l2 = malloc(V * sizeof *l2);
    /* x: a[0..6), rewind to 2, then b; y: a[0..2) then b */
    cr_assert_eq(deg_fork_feed(x, a, 6, NULL), DEG_OK);
    cr_assert_eq(deg_fork_truncate(x, 7), DEG_ERR_RANGE);
    cr_assert_eq(deg_fork_truncate(x, 2), DEG_OK);
    cr_assert_eq(deg_fork_len(x), 2);
    cr_assert_eq(deg_fork_feed(y, a, 2, NULL), DEG_OK);
    cr_assert_eq(deg_fork_logits(x, l1), DEG_OK);
    cr_assert_eq(deg_fork_logits(y, l2), DEG_OK);
    cr_assert_eq(memcmp(l1, l2, V * sizeof *l1), 0, "logits after a rewind");
    cr_assert_eq(deg_fork_feed(x, b, 3, lx), DEG_OK);
    cr_assert_eq(deg_fork_feed(y, b, 3, ly), DEG_OK);
    cr_assert_eq(memcmp(lx, ly, 3 * V * sizeof *lx), 0, "feeding after a rewind");
    /* rewind to the trunk: its last logits */
    cr_assert_eq(deg_fork_truncate(x, 0), DEG_OK);
    cr_assert_eq(deg_fork_logits(x, l1), DEG_OK);
    float *last = malloc(V * sizeof *last);
    deg_trunk *t2;
    cr_assert_eq(deg_trunk_new(m, &t2), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t2, prompt, 5, NULL, last), DEG_OK);
    cr_assert_eq(memcmp(l1, last, V * sizeof *l1), 0);
    cr_assert_eq(deg_fork_truncate(NULL, 0), DEG_ERR_ARG);
    deg_fork_free(x);
    deg_fork_free(y);
    deg_trunk_free(t);
    deg_trunk_free(t2);
    free(lx); free(ly); free(l1); free(l2); free(last);
    deg_model_free(m);
}

/* ----------------------------------------------------------------- gate */

Test(spec, gate_off_below_threshold_and_reprobe)
{
    deg_spec_params sp = deg_spec_default_params();
    cr_assert_eq(sp.gate_window, 16);
    cr_assert_float_eq(sp.gate_min_acceptance, 0.35f, 1e-7);
    cr_assert_eq(sp.gate_reprobe, 32);
    dg_spec_gate g;
    memset(&g, 0, sizeof g);
    /* 15 outcomes: never judged, however bad */
    for (int i = 0; i < 15; i++) dg_spec_gate_record(&g, &sp, 0);
    cr_assert_eq(dg_spec_gate_check(&g, &sp), 0);
    /* 6 kept of the last 16 = 37.5%: stays on */
    memset(&g, 0, sizeof g);
    for (int i = 0; i < 16; i++) dg_spec_gate_record(&g, &sp, i % 3 == 0); /* 0,3,..,15: 6 */
    cr_assert_eq(dg_spec_gate_check(&g, &sp), 0);
    /* one more miss pushes out a kept one (index 0): 5/16 = 31%: off */
    dg_spec_gate_record(&g, &sp, 0);
    cr_assert_eq(dg_spec_gate_check(&g, &sp), 1);
    cr_assert(g.off);
    cr_assert_eq(dg_spec_gate_check(&g, &sp), 0, "turns off once");
    /* re-probe after 32 ids decoded off, with an empty window */
    dg_spec_gate_idle(&g, &sp, 31);
    cr_assert(g.off);
    dg_spec_gate_idle(&g, &sp, 1);
    cr_assert(!g.off);
    cr_assert_eq(g.n, 0);
    /* gate disabled: never off */
    sp.gate = 0;
    for (int i = 0; i < 40; i++) dg_spec_gate_record(&g, &sp, 0);
    cr_assert_eq(dg_spec_gate_check(&g, &sp), 0);
}

/* ------------------------------------------------- byte-identical output */

#define NR 4
static const int32_t own[NR][3] = {{0}, {28, 253}, {330}, {506, 314, 101}};
static const size_t n_own[NR] = {0, 2, 1, 3};
static const int32_t prompt9[9] = {1, 17, 300, 45, 2, 99, 256, 7, 411};

typedef struct run_out {
    int32_t ids[NR][96];
    size_t n[NR];
    int32_t stopped[NR];
    size_t fork_len[NR];
    float *logits; /* [NR, V] after the run (deg_fork_logits) */
} run_out;

/* Forks of one trunk over prompt9, row r with own tokens own[r]; plain or
 * speculative decode; spec NULL = plain. */
static void run(deg_model *m, const deg_sample_params *p, const deg_spec_stream *streams,
                const deg_spec_params *spec, run_out *o, deg_spec_stats *ss, size_t V)
{
    deg_trunk *t;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, prompt9, 9, NULL, NULL), DEG_OK);
    deg_fork *f[NR];
    int32_t *outs[NR];
    deg_gen_stats st[NR];
    for (int r = 0; r < NR; r++) {
        cr_assert_eq(deg_fork_new(t, &f[r]), DEG_OK);
        cr_assert_eq(deg_fork_feed(f[r], own[r], n_own[r], NULL), DEG_OK);
        outs[r] = o->ids[r];
    }
    deg_status s = spec || streams
                       ? deg_forks_generate_spec(f, NR, p, streams, spec, outs, o->n, st, ss, NULL)
                       : deg_forks_generate(f, NR, p, outs, o->n, st);
    cr_assert_eq(s, DEG_OK, "%s", deg_errmsg());
    o->logits = malloc(NR * V * sizeof *o->logits);
    for (int r = 0; r < NR; r++) {
        o->stopped[r] = st[r].stopped;
        cr_assert_eq(st[r].generated_tokens, o->n[r]);
        o->fork_len[r] = deg_fork_len(f[r]);
        cr_assert_eq(deg_fork_logits(f[r], o->logits + r * V), DEG_OK);
        deg_fork_free(f[r]);
    }
    deg_trunk_free(t);
}

static void assert_same(const run_out *a, const run_out *b, size_t V, const char *what)
{
    for (int r = 0; r < NR; r++) {
        cr_assert_eq(a->n[r], b->n[r], "%s: row %d: %zu vs %zu ids", what, r, a->n[r], b->n[r]);
        cr_assert_eq(memcmp(a->ids[r], b->ids[r], a->n[r] * sizeof(int32_t)), 0,
                     "%s: row %d ids differ", what, r);
        cr_assert_eq(a->stopped[r], b->stopped[r], "%s: row %d", what, r);
        cr_assert_eq(a->fork_len[r], b->fork_len[r], "%s: row %d fork length", what, r);
    }
    cr_assert_eq(memcmp(a->logits, b->logits, NR * V * sizeof(float)), 0,
                 "%s: fork logits afterwards differ", what);
}

static void check_identical(const char *model)
{
    deg_model *m = tiny_load(model);
    deg_model_info mi;
    cr_assert_eq(deg_model_get_info(m, &mi), DEG_OK);
    size_t V = (size_t)mi.n_vocab;
    deg_sample_params p[NR];
    static const int32_t maxt[NR] = {80, 33, 96, 7};
    const int32_t stop1 = 7;
    for (int r = 0; r < NR; r++) {
        p[r] = deg_sample_params_default();
        p[r].max_tokens = maxt[r];
        if (r == 2) { p[r].stop_ids = &stop1; p[r].n_stop_ids = 1; }
        if (r == 1) { p[r].stop_ids = &stop1; p[r].n_stop_ids = 0; } /* no stop at all */
    }
    run_out plain;
    run(m, p, NULL, NULL, &plain, NULL, V);

    /* references: the oracle (each row's own plain output), random ids, none */
    deg_draft_ref *oracle[NR], *random = NULL;
    int32_t rids[300];
    for (int i = 0; i < 300; i++) rids[i] = (int32_t)rnd((uint32_t)V);
    cr_assert_eq(deg_draft_ref_new(m, rids, 300, &random), DEG_OK);
    int32_t seeds[NR][16];
    deg_spec_stream oracle_s[NR], random_s[NR], self_s[NR];
    for (int r = 0; r < NR; r++) {
        cr_assert_eq(deg_draft_ref_new(m, plain.ids[r], plain.n[r], &oracle[r]), DEG_OK);
        memcpy(seeds[r], prompt9, sizeof prompt9);
        memcpy(seeds[r] + 9, own[r], n_own[r] * sizeof(int32_t));
        self_s[r] = (deg_spec_stream){seeds[r], 9 + n_own[r], NULL};
        oracle_s[r] = (deg_spec_stream){seeds[r], 9 + n_own[r], oracle[r]};
        random_s[r] = (deg_spec_stream){seeds[r], 9 + n_own[r], random};
    }
    const deg_spec_stream *cases[3] = {oracle_s, random_s, self_s};
    const char *names[3] = {"oracle", "random", "self"};
    size_t acc_total[3] = {0}, rej_total[3] = {0};
    /* (draft_max, gate, min_match): short and long drafts, gate on and off
     * (kept few: the suite also runs under the sanitizers) */
    static const int cfg[4][3] = {{1, 0, 1}, {3, 1, 2}, {8, 0, 1}, {8, 1, 2}};
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 4; k++) {
            deg_spec_params sp = deg_spec_default_params();
            sp.draft_max = cfg[k][0];
            sp.gate = cfg[k][1];
            sp.min_match = cfg[k][2];
            run_out o;
            deg_spec_stats ss[NR];
            run(m, p, cases[c], &sp, &o, ss, V);
            char what[128];
            snprintf(what, sizeof what, "%s %s: draft_max %d gate %d min_match %d", model,
                     names[c], cfg[k][0], cfg[k][1], cfg[k][2]);
            assert_same(&plain, &o, V, what);
            for (int r = 0; r < NR; r++) {
                cr_assert(ss[r].accepted <= ss[r].drafted);
                acc_total[c] += ss[r].accepted;
                rej_total[c] += ss[r].drafted - ss[r].accepted;
            }
            free(o.logits);
        }
    /* the oracle accepts (and so saves forwards); random drafts get rejected,
     * so both the accept and the rewind paths ran */
    cr_assert_gt(acc_total[0], 50, "%s: oracle accepted %zu", model, acc_total[0]);
    cr_assert_gt(rej_total[1], 50, "%s: random rejected %zu", model, rej_total[1]);
    for (int r = 0; r < NR; r++) deg_draft_ref_free(oracle[r]);
    deg_draft_ref_free(random);
    free(plain.logits);
    deg_model_free(m);
}

Test(spec, identical_to_plain_greedy_llama, .timeout = 600) { check_identical("tiny-llama"); }
Test(spec, identical_to_plain_greedy_qwen3, .timeout = 600) { check_identical("tiny-qwen3"); }

/* Oracle drafts: every draft accepted, so a row of n ids needs about
 * n / (draft_max + 1) feeds; random drafts with the gate: it turns off. */
Test(spec, oracle_saves_forwards_and_gate_turns_off)
{
    deg_model *m = tiny_load("tiny-llama");
    deg_model_info mi;
    cr_assert_eq(deg_model_get_info(m, &mi), DEG_OK);
    size_t V = (size_t)mi.n_vocab;
    deg_sample_params p[NR];
    for (int r = 0; r < NR; r++) {
        p[r] = deg_sample_params_default();
        p[r].max_tokens = 90;
        p[r].stop_ids = prompt9; /* no stop */
        p[r].n_stop_ids = 0;
    }
    run_out plain;
    run(m, p, NULL, NULL, &plain, NULL, V);
    deg_draft_ref *refs[NR];
    deg_spec_stream s[NR];
    for (int r = 0; r < NR; r++) {
        cr_assert_eq(plain.n[r], 90);
        cr_assert_eq(deg_draft_ref_new(m, plain.ids[r], 90, &refs[r]), DEG_OK);
        s[r] = (deg_spec_stream){NULL, 0, refs[r]};
    }
    deg_spec_params sp = deg_spec_default_params();
    sp.min_match = 1;
    run_out o;
    deg_spec_stats ss[NR];
    run(m, p, s, &sp, &o, ss, V);
    assert_same(&plain, &o, V, "oracle");
    for (int r = 0; r < NR; r++) {
        cr_assert_eq(ss[r].accepted, ss[r].drafted, "row %d", r);
        cr_assert_leq(ss[r].forwards, 90 / 9 + 2, "row %d: %zu feeds", r, ss[r].forwards);
        cr_assert_eq(ss[r].gate_offs, 0);
    }
    free(o.logits);
    /* always-wrong drafts: a reference whose every continuation differs from
     * the row's next id (ids shifted by one) */
    for (int r = 0; r < NR; r++) {
        int32_t bad[180];
        for (int i = 0; i < 90; i++) {
            bad[2 * i] = plain.ids[r][i];
            bad[2 * i + 1] = (plain.ids[r][i + 1 < 90 ? i + 1 : 0] + 1) % (int32_t)V;
        }
        deg_draft_ref_free(refs[r]);
        cr_assert_eq(deg_draft_ref_new(m, bad, 180, &refs[r]), DEG_OK);
        s[r] = (deg_spec_stream){NULL, 0, refs[r]};
    }
    sp.draft_max = 1;
    run(m, p, s, &sp, &o, ss, V);
    assert_same(&plain, &o, V, "wrong drafts, gate on");
    size_t drafted_on = 0, drafted_off = 0, offs = 0;
    for (int r = 0; r < NR; r++) drafted_on += ss[r].drafted, offs += ss[r].gate_offs;
    free(o.logits);
    sp.gate = 0;
    run(m, p, s, &sp, &o, ss, V);
    assert_same(&plain, &o, V, "wrong drafts, gate off");
    for (int r = 0; r < NR; r++) drafted_off += ss[r].drafted;
    free(o.logits);
    cr_assert_gt(offs, 0, "the gate never turned off");
    cr_assert_lt(drafted_on, drafted_off, "gate on drafted %zu, off %zu", drafted_on,
                 drafted_off);
    for (int r = 0; r < NR; r++) deg_draft_ref_free(refs[r]);
    free(plain.logits);
    deg_model_free(m);
}

Test(spec, bad_input)
{
    deg_model *m = tiny_load("tiny-llama");
    deg_trunk *t;
    deg_fork *f;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, prompt9, 9, NULL, NULL), DEG_OK);
    cr_assert_eq(deg_fork_new(t, &f), DEG_OK);
    deg_sample_params p = deg_sample_params_default();
    p.max_tokens = 4;
    int32_t buf[4], *outs[1] = {buf};
    size_t n;
    deg_spec_stream s = {prompt9, 9, NULL};
    deg_spec_params sp = deg_spec_default_params();
    p.temperature = 0.5f;
    cr_assert_eq(deg_forks_generate_spec(&f, 1, &p, &s, NULL, outs, &n, NULL, NULL, NULL),
                 DEG_ERR_ARG);
    cr_assert(strstr(deg_errmsg(), "greedy only"), "%s", deg_errmsg());
    p.temperature = 0;
    sp.draft_max = 0;
    cr_assert_eq(deg_forks_generate_spec(&f, 1, &p, &s, &sp, outs, &n, NULL, NULL, NULL),
                 DEG_ERR_ARG);
    sp = deg_spec_default_params();
    sp.gate_window = 65;
    cr_assert_eq(deg_forks_generate_spec(&f, 1, &p, &s, &sp, outs, &n, NULL, NULL, NULL),
                 DEG_ERR_ARG);
    const int32_t bad[2] = {1, 1 << 30};
    s = (deg_spec_stream){bad, 2, NULL};
    cr_assert_eq(deg_forks_generate_spec(&f, 1, &p, &s, NULL, outs, &n, NULL, NULL, NULL),
                 DEG_ERR_RANGE);
    s = (deg_spec_stream){NULL, 3, NULL};
    cr_assert_eq(deg_forks_generate_spec(&f, 1, &p, &s, NULL, outs, &n, NULL, NULL, NULL),
                 DEG_ERR_ARG);
    cr_assert_eq(deg_forks_generate_spec(&f, 1, &p, NULL, NULL, outs, &n, NULL, NULL, NULL),
                 DEG_ERR_ARG);
    deg_draft_ref *r = NULL;
    cr_assert_eq(deg_draft_ref_new(m, bad, 2, &r), DEG_ERR_RANGE);
    cr_assert_null(r);
    cr_assert_eq(deg_draft_ref_new(m, NULL, 2, &r), DEG_ERR_ARG);
    cr_assert_eq(deg_draft_ref_len(NULL), 0);
    deg_fork_free(f);
    deg_trunk_free(t);
    deg_model_free(m);
}

/* ------------------------------------------------- cartridge draft reference */

static void tmp_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "/tmp/deg-spec-%d-%s.safetensors", (int)getpid(), name);
}

Test(spec, cartridge_draft_ref_roundtrip)
{
    deg_model *m = tiny_load("tiny-qwen3");
    const int32_t pre[4] = {1, 17, 300, 45};
    int32_t corpus[200];
    for (int i = 0; i < 200; i++) corpus[i] = (int32_t)rnd(500);
    deg_cartridge *c = NULL, *d = NULL;
    cr_assert_eq(deg_cartridge_init_tokens(m, pre, 4, &c), DEG_OK);
    cr_assert_null(deg_cartridge_draft_ref(c));
    char old[256], with[256], bad[256];
    tmp_path(old, sizeof old, "old");
    tmp_path(with, sizeof with, "with");
    tmp_path(bad, sizeof bad, "bad");
    cr_assert_eq(deg_cartridge_save(c, old, 1), DEG_OK);
    cr_assert_eq(deg_cartridge_set_draft_ref(c, corpus, 200), DEG_OK);
    cr_assert_eq(deg_draft_ref_len(deg_cartridge_draft_ref(c)), 200);
    cr_assert_eq(deg_cartridge_save(c, with, 1), DEG_OK);
    /* the file holds the I64 entry */
    dg_safetensors *st;
    cr_assert_eq(dg_safetensors_open(with, &st), DEG_OK);
    const dg_tensor_view *tv = dg_safetensors_find(st, "draft_reference");
    cr_assert_not_null(tv);
    cr_assert_eq(tv->dtype, DG_I64);
    cr_assert_eq(tv->n_dims, 1);
    cr_assert_eq(tv->shape[0], 200);
    int64_t v;
    memcpy(&v, (const char *)tv->data + 8 * 7, 8);
    cr_assert_eq(v, corpus[7]);
    /* a copy with an id outside the vocabulary is refused (FORMAT) */
    dg_st_writer *w;
    cr_assert_eq(dg_st_writer_new(&w), DEG_OK);
    int64_t *badids = malloc(200 * sizeof *badids);
    for (size_t i = 0; i < dg_safetensors_n_tensors(st); i++) {
        const dg_tensor_view *x = dg_safetensors_tensor(st, i);
        const void *data = x->data;
        if (strcmp(x->name, "draft_reference") == 0) {
            memcpy(badids, x->data, 200 * sizeof *badids);
            badids[3] = 1 << 30;
            data = badids;
        }
        cr_assert_eq(dg_st_writer_add(w, x->name, x->dtype, x->n_dims, x->shape, data), DEG_OK);
    }
    static const char *keys[] = {"format", "frozen_prefix", "adam_steps", "arch", "n_layer",
                                 "n_head_kv", "head_dim", "n_embd", "n_vocab", "rope_theta",
                                 "weights_fingerprint"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_assert_eq(dg_st_writer_meta(w, keys[i], dg_safetensors_meta(st, keys[i])), DEG_OK);
    cr_assert_eq(dg_st_writer_commit(w, bad), DEG_OK);
    dg_st_writer_free(w);
    free(badids);
    dg_safetensors_close(st);
    cr_assert_eq(deg_cartridge_load(m, bad, &d), DEG_ERR_FORMAT);
    cr_assert(strstr(deg_errmsg(), "draft_reference[3]"), "%s", deg_errmsg());
    /* round trip: the same ids, the index rebuilt; an old file has none */
    cr_assert_eq(deg_cartridge_load(m, with, &d), DEG_OK, "%s", deg_errmsg());
    const deg_draft_ref *r = deg_cartridge_draft_ref(d);
    cr_assert_eq(deg_draft_ref_len(r), 200);
    cr_assert_eq(memcmp(deg_draft_ref_ids(r), corpus, sizeof corpus), 0);
    deg_cartridge_free(d);
    cr_assert_eq(deg_cartridge_load(m, old, &d), DEG_OK, "%s", deg_errmsg());
    cr_assert_null(deg_cartridge_draft_ref(d));
    deg_cartridge_free(d);
    /* removing it */
    cr_assert_eq(deg_cartridge_set_draft_ref(c, NULL, 0), DEG_OK);
    cr_assert_null(deg_cartridge_draft_ref(c));
    const int32_t oob[1] = {-1};
    cr_assert_eq(deg_cartridge_set_draft_ref(c, oob, 1), DEG_ERR_RANGE);
    deg_cartridge_free(c);
    unlink(old);
    unlink(with);
    unlink(bad);
    deg_model_free(m);
}

/* Step-wise streams (deg_spec_state, deg_forks_spec_step): the ids a stream
 * emits over its rounds are greedy decoding's, whether each call may emit
 * all it can (then the counters equal deg_forks_generate_spec's) or is cut
 * short by max_ids; the fork afterwards holds every id but the last. */
/* Plain rows riding along (ride != 0): NRIDE forks fed their argmax id in
 * the same deg_forks_spec_step_ex pass; their twins are fed the same ids by
 * deg_forks_feed alone; the logits must agree bitwise after every call. */
enum { NRIDE = 2 };

typedef struct riders {
    deg_fork *f[NRIDE], *twin[NRIDE];
    int32_t next[NRIDE];
    size_t n_ids[NRIDE];
    const int32_t *ids[NRIDE];
    float *a, *b;
} riders;

static void riders_new(riders *rd, deg_trunk *t, size_t V)
{
    rd->a = malloc(V * sizeof *rd->a);
    rd->b = malloc(V * sizeof *rd->b);
    for (int j = 0; j < NRIDE; j++) {
        cr_assert_eq(deg_fork_new(t, &rd->f[j]), DEG_OK);
        cr_assert_eq(deg_fork_new(t, &rd->twin[j]), DEG_OK);
        rd->next[j] = (int32_t)(40 + 7 * j);
        rd->ids[j] = &rd->next[j];
        rd->n_ids[j] = 1;
    }
}

/* After a pass: each rider's logits = its twin's fed alone; next ids. */
static void riders_check(riders *rd, size_t V, int call)
{
    rd->n_ids[1] = (size_t)(call % 3 != 2);  /* rider 1 sits out now and then */
    for (int j = 0; j < NRIDE; j++) {
        cr_assert_eq(deg_fork_len(rd->f[j]), deg_fork_len(rd->twin[j]));
        cr_assert_eq(deg_fork_logits(rd->f[j], rd->a), DEG_OK);
        cr_assert_eq(deg_fork_logits(rd->twin[j], rd->b), DEG_OK);
        cr_assert_eq(memcmp(rd->a, rd->b, V * sizeof *rd->a), 0, "rider %d, call %d", j, call);
        rd->next[j] = dg_sample_argmax(rd->a, (int32_t)V);
    }
}

static void riders_feed_twins(riders *rd)
{
    cr_assert_eq(deg_forks_feed(rd->twin, NRIDE, rd->ids, rd->n_ids, NULL), DEG_OK);
}

static void riders_free(riders *rd)
{
    for (int j = 0; j < NRIDE; j++) {
        deg_fork_free(rd->f[j]);
        deg_fork_free(rd->twin[j]);
    }
    free(rd->a);
    free(rd->b);
}

static void stepwise(deg_model *m, const deg_sample_params *p, deg_draft_ref *const *refs,
                     int cap_cycle, run_out *o, deg_spec_stats *ss, size_t V, int ride)
{
    deg_trunk *t;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, prompt9, 9, NULL, NULL), DEG_OK);
    deg_fork *f[NR];
    deg_spec_state *s[NR];
    int live[NR];
    riders rd;
    if (ride) riders_new(&rd, t, V);
    deg_feed_rows plain = {rd.f, NRIDE, rd.ids, rd.n_ids};
    for (int r = 0; r < NR; r++) {
        cr_assert_eq(deg_fork_new(t, &f[r]), DEG_OK);
        cr_assert_eq(deg_fork_feed(f[r], own[r], n_own[r], NULL), DEG_OK);
        /* the first id from the fork's logits, as the serving loop samples it */
        float *lg = malloc(V * sizeof *lg);
        cr_assert_eq(deg_fork_logits(f[r], lg), DEG_OK);
        int32_t first = dg_sample_argmax(lg, (int32_t)V);
        free(lg);
        int32_t text[16];
        memcpy(text, prompt9, sizeof prompt9);
        memcpy(text + 9, own[r], n_own[r] * sizeof(int32_t));
        text[9 + n_own[r]] = first;
        cr_assert_eq(deg_spec_state_new(m, text, 10 + n_own[r], refs[r], NULL, p[r].stop_ids,
                                        p[r].n_stop_ids, &s[r]), DEG_OK, "%s", deg_errmsg());
        o->ids[r][0] = first;
        o->n[r] = 1;
        int32_t dstops[2];
        size_t nd = 0;
        cr_assert_eq(deg_model_stop_ids(m, dstops, 2, &nd), DEG_OK);
        const int32_t *stops = p[r].stop_ids ? p[r].stop_ids : dstops;
        size_t n_stops = p[r].stop_ids ? p[r].n_stop_ids : nd, is_stop = 0;
        for (size_t k = 0; k < n_stops; k++) is_stop |= first == stops[k];
        o->stopped[r] = (int32_t)is_stop;
        live[r] = !is_stop && p[r].max_tokens > 1;
    }
    for (int call = 0;; call++) {
        deg_fork *bf[NR];
        deg_spec_state *bs[NR];
        int32_t cap[NR], *outs[NR], buf[NR][16];
        size_t n_out[NR], nb = 0;
        int rows[NR];
        for (int r = 0; r < NR; r++) {
            if (!live[r]) continue;
            int32_t left = p[r].max_tokens - (int32_t)o->n[r];
            cap[nb] = cap_cycle ? (left < 1 + call % cap_cycle ? left : 1 + call % cap_cycle)
                                : left;
            bf[nb] = f[r], bs[nb] = s[r], outs[nb] = buf[r], rows[nb] = r;
            nb++;
        }
        if (!nb) break;
        if (ride) {
            riders_feed_twins(&rd);
            cr_assert_eq(deg_forks_spec_step_ex(bf, nb, bs, cap, outs, n_out, &plain), DEG_OK,
                         "%s", deg_errmsg());
            riders_check(&rd, V, call);
        } else {
            cr_assert_eq(deg_forks_spec_step(bf, nb, bs, cap, outs, n_out), DEG_OK, "%s",
                         deg_errmsg());
        }
        for (size_t b = 0; b < nb; b++) {
            int r = rows[b];
            cr_assert(n_out[b] >= 1 && n_out[b] <= (size_t)cap[b]);
            memcpy(o->ids[r] + o->n[r], buf[r], n_out[b] * sizeof(int32_t));
            o->n[r] += n_out[b];
            if (deg_spec_state_done(s[r])) o->stopped[r] = 1;
            if (deg_spec_state_done(s[r]) || o->n[r] >= (size_t)p[r].max_tokens) live[r] = 0;
        }
    }
    o->logits = malloc(NR * V * sizeof *o->logits);
    for (int r = 0; r < NR; r++) {
        ss[r] = deg_spec_state_stats(s[r]);
        o->fork_len[r] = deg_fork_len(f[r]);
        cr_assert_eq(deg_fork_logits(f[r], o->logits + r * V), DEG_OK);
        deg_spec_state_free(s[r]);
        deg_fork_free(f[r]);
    }
    if (ride) riders_free(&rd);
    deg_trunk_free(t);
}

Test(spec, stepwise_streams_equal_greedy, .timeout = 600)
{
    deg_model *m = tiny_load("tiny-qwen3");
    deg_model_info mi;
    cr_assert_eq(deg_model_get_info(m, &mi), DEG_OK);
    size_t V = (size_t)mi.n_vocab;
    deg_sample_params p[NR];
    static const int32_t maxt[NR] = {60, 33, 64, 7};
    const int32_t stop1 = 7;
    for (int r = 0; r < NR; r++) {
        p[r] = deg_sample_params_default();
        p[r].max_tokens = maxt[r];
        if (r == 2) { p[r].stop_ids = &stop1; p[r].n_stop_ids = 1; }
        if (r == 1) { p[r].stop_ids = &stop1; p[r].n_stop_ids = 0; }
    }
    run_out plain;
    run(m, p, NULL, NULL, &plain, NULL, V);
    /* oracle references: half of each row's own output, then junk, so that
     * drafts are both kept and rejected */
    deg_draft_ref *refs[NR];
    deg_spec_stream streams[NR];
    int32_t seeds[NR][16];
    for (int r = 0; r < NR; r++) {
        int32_t ids[200];
        size_t n = plain.n[r] / 2;
        memcpy(ids, plain.ids[r], n * sizeof(int32_t));
        for (size_t i = 0; i < 40; i++) ids[n + i] = (int32_t)rnd((uint32_t)V);
        memcpy(ids + n + 40, plain.ids[r] + n, (plain.n[r] - n) * sizeof(int32_t));
        for (size_t i = 0; i < plain.n[r] - n; i += 5) ids[n + 40 + i] = (int32_t)rnd((uint32_t)V);
        cr_assert_eq(deg_draft_ref_new(m, ids, plain.n[r] + 40, &refs[r]), DEG_OK);
        memcpy(seeds[r], prompt9, sizeof prompt9);
        memcpy(seeds[r] + 9, own[r], n_own[r] * sizeof(int32_t));
        streams[r] = (deg_spec_stream){seeds[r], 9 + n_own[r], refs[r]};
    }
    run_out whole, step, capped;
    deg_spec_stats sw[NR], ss[NR], sc[NR];
    run(m, p, streams, NULL, &whole, sw, V);
    assert_same(&plain, &whole, V, "deg_forks_generate_spec");
    stepwise(m, p, refs, 0, &step, ss, V, 0);
    assert_same(&plain, &step, V, "stepwise");
    stepwise(m, p, refs, 3, &capped, sc, V, 0);
    assert_same(&plain, &capped, V, "stepwise, max_ids 1..3");
    /* plain rows in the same pass (deg_forks_spec_step_ex): nothing changes */
    run_out ridden;
    deg_spec_stats sr[NR];
    stepwise(m, p, refs, 0, &ridden, sr, V, 1);
    assert_same(&plain, &ridden, V, "stepwise with plain rows riding");
    size_t acc = 0, rej = 0;
    for (int r = 0; r < NR; r++) {
        cr_assert_eq(ss[r].drafted, sw[r].drafted, "row %d", r);
        cr_assert_eq(ss[r].accepted, sw[r].accepted, "row %d", r);
        cr_assert_eq(ss[r].forwards, sw[r].forwards, "row %d", r);
        cr_assert(sr[r].drafted == ss[r].drafted && sr[r].accepted == ss[r].accepted &&
                  sr[r].forwards == ss[r].forwards, "row %d with riders", r);
        acc += ss[r].accepted;
        rej += ss[r].drafted - ss[r].accepted;
    }
    cr_assert_gt(acc, 10, "accepted %zu", acc);
    cr_assert_gt(rej, 3, "rejected %zu", rej);
    /* bad input: a done state, max_ids 0, a state listed twice */
    deg_spec_state *s = NULL;
    int32_t text[2] = {5, 7}, out[16], *outs[2] = {out, out}, cap[2] = {0, 1};
    size_t n_out[2];
    cr_expect_eq(deg_spec_state_new(m, text, 0, NULL, NULL, NULL, 0, &s), DEG_ERR_ARG);
    text[1] = (int32_t)V;
    cr_expect_eq(deg_spec_state_new(m, text, 2, NULL, NULL, NULL, 0, &s), DEG_ERR_RANGE);
    text[1] = 7;
    cr_assert_eq(deg_spec_state_new(m, text, 2, NULL, NULL, &stop1, 1, &s), DEG_OK);
    deg_trunk *t;
    deg_fork *fk;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_fork_new(t, &fk), DEG_OK);
    cr_assert_eq(deg_fork_feed(fk, text, 1, NULL), DEG_OK);
    deg_fork *fks[2] = {fk, fk};
    deg_spec_state *sts[2] = {s, s};
    cr_expect_eq(deg_forks_spec_step(fks, 1, sts, cap, outs, n_out), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "max_ids") != NULL, "%s", deg_errmsg());
    cap[0] = 1;
    cr_expect_eq(deg_forks_spec_step(fks, 2, sts, cap, outs, n_out), DEG_ERR_ARG);
    /* plain rows: a fork that is also speculative, a NULL fork; alone they are fed */
    const int32_t *pid[1] = {text};
    size_t pn[1] = {1};
    deg_feed_rows pr = {fks, 1, pid, pn};
    cr_expect_eq(deg_forks_spec_step_ex(fks, 1, sts, cap, outs, n_out, &pr), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "also speculative") != NULL, "%s", deg_errmsg());
    deg_fork *nul[1] = {NULL};
    pr.forks = nul;
    cr_expect_eq(deg_forks_spec_step_ex(NULL, 0, NULL, NULL, NULL, NULL, &pr), DEG_ERR_ARG);
    pr.forks = fks;
    size_t len0 = deg_fork_len(fk);
    cr_assert_eq(deg_forks_spec_step_ex(NULL, 0, NULL, NULL, NULL, NULL, &pr), DEG_OK, "%s",
                 deg_errmsg());
    cr_assert_eq(deg_fork_len(fk), len0 + 1);
    deg_spec_state_free(s);
    deg_fork_free(fk);
    deg_trunk_free(t);
    for (int r = 0; r < NR; r++) deg_draft_ref_free(refs[r]);
    free(plain.logits);
    free(whole.logits);
    free(step.logits);
    free(capped.logits);
    free(ridden.logits);
    deg_model_free(m);
}
