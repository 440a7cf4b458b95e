/* Fleet training and fleet draft references on the tiny qwen3
 * (include/cartridge.h, "Mixed-visibility joint self-study over a fleet",
 * deg_fleet_init_ex, deg_fleet_draft_ref, deg_cartridge_compose_draft_ref):
 * the draw re-derived here from its documented rule and stream, rounds that
 * step every co-loaded part, a run stopped and resumed from its save giving
 * the same artifact bytes as one run, and the composed draft references. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cartridge.h"
#include "deg.h"
#include "model/arch.h"
#include "model/sample.h"
#include "tiny_model.h"
#include "tmpdir.h"

static const char *const TEXTS[] = {
    "The lighthouse keeper logs the weather every evening at six, then trims the lamp.",
    "Sourdough needs a starter fed with flour and water each day.",
    "A binary search halves the interval at every comparison it makes until one is left.",
    "Glaciers carve valleys shaped like the letter U over millennia.",
    "The violin has four strings tuned in perfect fifths: G, D, A, E, from low to high.",
};
static const char *const NAMES[] = {"a.txt", "b.txt", "c.txt", "d.txt", "e.txt"};
enum { ND = 5, P = 4 };

static void tmpdir(char *buf, size_t n) { test_tmpdir(buf, n, "fleet-train-test"); }

static void rmtree(const char *dir) { test_rmtree(dir); }

static void make_fleet(deg_model *m, const char *dir, int draft_ref)
{
    size_t lens[ND];
    for (size_t i = 0; i < ND; i++) lens[i] = strlen(TEXTS[i]);
    deg_fleet_init_params ip = deg_fleet_init_default_params();
    ip.p = P;
    ip.draft_ref = draft_ref;
    cr_assert_eq(deg_fleet_init_ex(m, dir, NAMES, TEXTS, lens, ND, &ip), DEG_OK, "%s",
                 deg_errmsg());
}

static deg_fleet *open_fleet(deg_model *m, const char *dir, size_t budget, int rotate_every)
{
    deg_fleet_params fp = deg_fleet_default_params();
    fp.budget = budget;
    fp.rotate_every = rotate_every;
    fp.warmup_steps = 2;
    deg_fleet *f = NULL;
    cr_assert_eq(deg_fleet_open(m, dir, &fp, &f), DEG_OK, "%s", deg_errmsg());
    return f;
}

static deg_fleet_train_params small_params(uint64_t seed, float p_iso, int schedule)
{
    deg_fleet_train_params tp = deg_fleet_default_train_params();
    tp.accum = 2;
    tp.p_iso = p_iso;
    tp.distract_max = 2;
    tp.schedule = schedule;
    tp.seed = seed;
    tp.study.chunk_min = 6;
    tp.study.chunk_max = 12;
    tp.study.max_q = 4;
    tp.study.max_a = 4;
    return tp;
}

/* The LENGTH draw by the header's rule, from the stream alone. */
static size_t expect_draw(const deg_fleet *f, const deg_fleet_train_params *tp, size_t *parts,
                          size_t *target)
{
    size_t res[ND], nr = 0, tok[ND];
    for (size_t i = 0; i < ND; i++) {
        deg_fleet_doc_info d;
        cr_assert_eq(deg_fleet_doc(f, i, &d), DEG_OK);
        tok[i] = d.tokens ? d.tokens : 1;
        if (d.resident) res[nr++] = i;
    }
    dg_rng r;
    dg_rng_seed(&r, tp->seed * 1000003u + (uint64_t)deg_fleet_rounds(f));
    uint64_t total = 0, acc = 0;
    for (size_t i = 0; i < nr; i++) total += tok[res[i]];
    uint64_t u = dg_rng_below(&r, total);
    size_t t = 0;
    for (size_t i = 0; i < nr; i++)
        if (u < (acc += tok[res[i]])) {
            t = res[i];
            break;
        }
    size_t others[ND], m = 0, n = 1;
    for (size_t i = 0; i < nr; i++)
        if (res[i] != t) others[m++] = res[i];
    parts[0] = *target = t;
    if (dg_rng_uniform(&r) >= (double)tp->p_iso && m > 0) {
        size_t k = 1 + (size_t)dg_rng_below(&r, m < 2 ? m : 2);
        for (size_t j = 0; j < k; j++) {
            size_t s = j + (size_t)dg_rng_below(&r, m - j), x = others[j];
            others[j] = others[s];
            others[s] = x;
            parts[1 + j] = others[j];
        }
        n = 1 + k;
        for (size_t j = n - 1; j > 0; j--) {
            size_t s = (size_t)dg_rng_below(&r, j + 1), x = parts[j];
            parts[j] = parts[s];
            parts[s] = x;
        }
    }
    return n;
}

Test(fleet_train, draw_follows_the_documented_rule)
{
    deg_model *m = tiny_load("tiny-qwen3");
    char dir[64];
    tmpdir(dir, sizeof dir);
    make_fleet(m, dir, 0);
    deg_fleet *f = open_fleet(m, dir, 4, 0);
    int coloaded = 0, isolated = 0, targets[ND] = {0};
    for (uint64_t seed = 0; seed < 40; seed++) {
        deg_fleet_train_params tp = small_params(seed, 0.5f, DEG_FLEET_SCHEDULE_LENGTH);
        size_t t, parts[3], n, want[3], again[3], t2, n2;
        cr_assert_eq(deg_fleet_draw(f, &tp, &t, parts, 3, &n), DEG_OK, "%s", deg_errmsg());
        size_t wt, wn = expect_draw(f, &tp, want, &wt);
        cr_assert_eq(n, wn, "seed %llu", (unsigned long long)seed);
        cr_assert_eq(memcmp(parts, want, n * sizeof *parts), 0, "seed %llu",
                     (unsigned long long)seed);
        cr_assert_eq(t, wt, "seed %llu", (unsigned long long)seed);
        int has_t = 0;
        for (size_t j = 0; j < n; j++) {
            deg_fleet_doc_info d;
            deg_fleet_doc(f, parts[j], &d);
            cr_assert(d.resident, "part %zu is not resident", parts[j]);
            has_t |= parts[j] == t;
            for (size_t k = 0; k < j; k++) cr_assert_neq(parts[k], parts[j]);
        }
        cr_assert(has_t);
        cr_assert_eq(deg_fleet_draw(f, &tp, &t2, again, 3, &n2), DEG_OK);
        cr_assert(t2 == t && n2 == n && !memcmp(again, parts, n * sizeof *parts));
        coloaded += n > 1;
        isolated += n == 1;
        targets[t]++;
    }
    cr_assert_gt(coloaded, 5);
    cr_assert_gt(isolated, 5);
    cr_assert_eq(targets[4], 0, "document 4 is not resident (budget 4)");
    /* p_iso = 1: always isolated; 0: always co-loaded. */
    deg_fleet_train_params tp = small_params(3, 1.0f, DEG_FLEET_SCHEDULE_LENGTH);
    size_t t, parts[3], n;
    cr_assert_eq(deg_fleet_draw(f, &tp, &t, parts, 3, &n), DEG_OK);
    cr_assert_eq(n, 1);
    tp.p_iso = 0.0f;
    cr_assert_eq(deg_fleet_draw(f, &tp, &t, parts, 3, &n), DEG_OK);
    cr_assert_geq(n, 2);
    /* bad input */
    cr_expect_eq(deg_fleet_draw(f, &tp, &t, parts, 2, &n), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "distract_max") != NULL, "%s", deg_errmsg());
    tp.schedule = 7;
    cr_expect_eq(deg_fleet_draw(f, &tp, &t, parts, 3, &n), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "schedule") != NULL, "%s", deg_errmsg());
    tp = small_params(3, 1.5f, DEG_FLEET_SCHEDULE_LENGTH);
    cr_expect_eq(deg_fleet_train_round(f, &tp, NULL, 0, NULL), DEG_ERR_ARG);
    cr_expect(strstr(deg_errmsg(), "p_iso") != NULL, "%s", deg_errmsg());
    cr_expect_eq(deg_fleet_rounds(f), 0);
    deg_fleet_free(f);
    rmtree(dir);
    deg_model_free(m);
}

/* Concatenated contents of the fleet's manifest and cartridges. */
static char *fleet_bytes(const char *dir, size_t *n)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cat '%s/fleet.json' '%s'/docs/*.safetensors", dir, dir);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    while ((got = fread(buf + len, 1, cap - len, p)) > 0)
        if ((len += got) == cap) buf = realloc(buf, cap *= 2);
    pclose(p);
    *n = len;
    return buf;
}

static void run_rounds(deg_fleet *f, const deg_fleet_train_params *tp, int rounds,
                       size_t *coloaded, int64_t *stepped)
{
    for (int r = 0; r < rounds; r++) {
        size_t parts[3];
        deg_fleet_round info;
        int64_t before = 0, after = 0;
        for (size_t i = 0; i < ND; i++) {
            deg_fleet_doc_info d;
            deg_fleet_doc(f, i, &d);
            before += d.steps;
        }
        cr_assert_eq(deg_fleet_train_round(f, tp, parts, 3, &info), DEG_OK, "%s",
                     deg_errmsg());
        for (size_t i = 0; i < ND; i++) {
            deg_fleet_doc_info d;
            deg_fleet_doc(f, i, &d);
            after += d.steps;
        }
        cr_assert_eq(after - before, (int64_t)info.n_parts, "every co-loaded part steps");
        cr_assert(info.loss > 0.0f && info.loss < 100.0f, "loss %g", (double)info.loss);
        cr_assert_eq(info.round, deg_fleet_rounds(f));
        *coloaded += info.n_parts > 1;
        *stepped += after - before;
        cr_assert_eq(deg_fleet_save(f), DEG_OK, "%s", deg_errmsg());
    }
}

Test(fleet_train, rounds_step_every_part_and_resume_bit_identically, .timeout = 600)
{
    deg_model *m = tiny_load("tiny-qwen3");
    char one[64], two[64];
    tmpdir(one, sizeof one);
    tmpdir(two, sizeof two);
    make_fleet(m, one, 0);
    make_fleet(m, two, 0);
    deg_fleet_train_params tp = small_params(11, 0.4f, DEG_FLEET_SCHEDULE_UNIFORM);
    size_t co1 = 0, co2 = 0;
    int64_t st1 = 0, st2 = 0;
    deg_fleet *f = open_fleet(m, one, 3, 2);
    run_rounds(f, &tp, 6, &co1, &st1);
    deg_fleet_free(f);
    f = open_fleet(m, two, 3, 2);
    run_rounds(f, &tp, 3, &co2, &st2);
    deg_fleet_free(f);
    f = open_fleet(m, two, 3, 2);
    cr_assert_eq(deg_fleet_rounds(f), 3);
    run_rounds(f, &tp, 3, &co2, &st2);
    deg_fleet_free(f);
    cr_assert_gt(co1, 0, "no co-loaded round");
    cr_assert_eq(co1, co2);
    cr_assert_eq(st1, st2);
    size_t n1, n2;
    char *b1 = fleet_bytes(one, &n1), *b2 = fleet_bytes(two, &n2);
    cr_assert_gt(n1, 1000);
    cr_assert(n1 == n2 && memcmp(b1, b2, n1) == 0, "resumed fleet differs");
    free(b1);
    free(b2);
    rmtree(one);
    rmtree(two);
    deg_model_free(m);
}

/* A model whose architecture cannot train (tiny-qwen3 under a copy of its
 * descriptor without backward_layer, as test_selfstudy's): the round is
 * refused by the check self-study makes (dg_train_check, named for the
 * round), before any conversation is synthesised for it (the message is not
 * the backward's "training: ..."), nothing counted; the real descriptor
 * trains. */
Test(fleet_train, untrainable_model_refused_before_synthesis)
{
    deg_model *m = tiny_load("tiny-qwen3");
    char dir[64];
    tmpdir(dir, sizeof dir);
    make_fleet(m, dir, 0);
    deg_fleet *f = open_fleet(m, dir, 3, 2);
    deg_fleet_train_params tp = small_params(5, 1.0f, DEG_FLEET_SCHEDULE_LENGTH);
    const dg_arch *real = m->arch;
    dg_arch fake = *real;
    fake.name = "untrainable";
    fake.backward_layer = NULL;
    m->arch = &fake;
    deg_fleet_round info;
    cr_expect_eq(deg_fleet_train_round(f, &tp, NULL, 0, &info), DEG_ERR_UNSUPPORTED);
    cr_expect(strstr(deg_errmsg(), "deg_fleet_train_round: architecture 'untrainable' has no "
                                   "layer backward") != NULL, "%s", deg_errmsg());
    cr_expect_eq(deg_fleet_rounds(f), 0);
    m->arch = real;
    cr_assert_eq(deg_fleet_train_round(f, &tp, NULL, 0, &info), DEG_OK, "%s", deg_errmsg());
    cr_expect_eq(deg_fleet_rounds(f), 1);
    deg_fleet_free(f);
    rmtree(dir);
    deg_model_free(m);
}

/* The ids of document i as a one-document corpus. */
static deg_corpus *doc_corpus(deg_model *m, size_t i)
{
    deg_corpus *c = NULL;
    size_t len = strlen(TEXTS[i]);
    cr_assert_eq(deg_corpus_new(m, &NAMES[i], &TEXTS[i], &len, 1, &c), DEG_OK);
    return c;
}

Test(fleet_train, draft_references)
{
    deg_model *m = tiny_load("tiny-qwen3");
    char dir[64], plain[64];
    tmpdir(dir, sizeof dir);
    tmpdir(plain, sizeof plain);
    make_fleet(m, dir, 1);
    make_fleet(m, plain, 0);
    deg_fleet *f = open_fleet(m, dir, 1, 0);  /* only document 0 resident */
    size_t docs[3] = {3, 0, 1};
    deg_draft_ref *r = NULL;
    cr_assert_eq(deg_fleet_draft_ref(f, docs, 3, &r), DEG_OK, "%s", deg_errmsg());
    cr_assert_not_null(r);
    size_t at = 0;
    for (int k = 0; k < 3; k++) {
        deg_corpus *c = doc_corpus(m, docs[k]);
        size_t n = deg_corpus_len(c);
        cr_assert_leq(at + n, deg_draft_ref_len(r));
        cr_assert_eq(memcmp(deg_draft_ref_ids(r) + at, deg_corpus_ids(c), n * sizeof(int32_t)),
                     0, "part %d", k);
        at += n;
        deg_corpus_free(c);
    }
    cr_assert_eq(at, deg_draft_ref_len(r));
    deg_draft_ref_free(r);
    /* the resident's cartridge carries it; a composition with parts
     * without one takes only the others' */
    deg_cartridge *c0 = NULL, *bare = NULL;
    cr_assert_eq(deg_fleet_cartridge(f, 0, &c0), DEG_OK);
    cr_assert_eq(deg_cartridge_init_random_vectors(m, P, 1, &bare), DEG_OK);
    const deg_cartridge *parts[3] = {bare, c0, bare};
    cr_assert_eq(deg_cartridge_compose_draft_ref(parts, 3, &r), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_draft_ref_len(r), deg_draft_ref_len(deg_cartridge_draft_ref(c0)));
    cr_assert_eq(memcmp(deg_draft_ref_ids(r), deg_draft_ref_ids(deg_cartridge_draft_ref(c0)),
                        deg_draft_ref_len(r) * sizeof(int32_t)), 0);
    deg_draft_ref_free(r);
    parts[1] = bare;
    r = (deg_draft_ref *)1;
    cr_assert_eq(deg_cartridge_compose_draft_ref(parts, 2, &r), DEG_OK);
    cr_assert_null(r);
    cr_expect_eq(deg_cartridge_compose_draft_ref(parts, 0, &r), DEG_ERR_ARG);
    deg_model *q = tiny_load("tiny-llama");
    deg_cartridge *other = NULL;
    cr_assert_eq(deg_cartridge_init_random_vectors(q, P, 1, &other), DEG_OK);
    parts[1] = other;
    cr_expect_eq(deg_cartridge_compose_draft_ref(parts, 2, &r), DEG_ERR_MISMATCH, "%s",
                 deg_errmsg());
    deg_cartridge_free(other);
    deg_model_free(q);
    deg_cartridge_free(bare);
    size_t bad = 9;
    cr_expect_eq(deg_fleet_draft_ref(f, &bad, 1, &r), DEG_ERR_RANGE);
    deg_fleet_free(f);
    /* a fleet made without --draft-ref has none */
    f = open_fleet(m, plain, 1, 0);
    r = (deg_draft_ref *)1;
    cr_assert_eq(deg_fleet_draft_ref(f, docs, 3, &r), DEG_OK, "%s", deg_errmsg());
    cr_assert_null(r);
    deg_fleet_free(f);
    rmtree(dir);
    rmtree(plain);
    deg_model_free(m);
}
