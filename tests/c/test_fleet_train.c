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
    "Tides rise and fall twice a day as the moon pulls the oceans toward it.",
    "A compiler turns source code into machine instructions in several passes.",
};
static const char *const NAMES[] = {"a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "f.txt",
                                    "g.txt"};
enum { ND = 5, ND_MAX = 7, P = 4 };

static void tmpdir(char *buf, size_t n) { test_tmpdir(buf, n, "fleet-train-test"); }

static void rmtree(const char *dir) { test_rmtree(dir); }

/* A fleet of the first n documents. */
static void make_fleet_n(deg_model *m, const char *dir, size_t n, int draft_ref)
{
    size_t lens[ND_MAX];
    for (size_t i = 0; i < n; i++) lens[i] = strlen(TEXTS[i]);
    deg_fleet_init_params ip = deg_fleet_init_default_params();
    ip.p = P;
    ip.draft_ref = draft_ref;
    cr_assert_eq(deg_fleet_init_ex(m, dir, NAMES, TEXTS, lens, n, &ip), DEG_OK, "%s",
                 deg_errmsg());
}

static void make_fleet(deg_model *m, const char *dir, int draft_ref)
{
    make_fleet_n(m, dir, ND, draft_ref);
}

static deg_fleet *open_fleet_ex(deg_model *m, const char *dir, size_t budget, int rotate_every,
                                float evict_fraction)
{
    deg_fleet_params fp = deg_fleet_default_params();
    fp.budget = budget;
    fp.rotate_every = rotate_every;
    fp.evict_fraction = evict_fraction;
    fp.warmup_steps = 2;
    deg_fleet *f = NULL;
    cr_assert_eq(deg_fleet_open(m, dir, &fp, &f), DEG_OK, "%s", deg_errmsg());
    return f;
}

static deg_fleet *open_fleet(deg_model *m, const char *dir, size_t budget, int rotate_every)
{
    return open_fleet_ex(m, dir, budget, rotate_every, 0.5f);
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

/* The draw by the header's rule, from the stream alone (both schedules). */
static size_t expect_draw(const deg_fleet *f, const deg_fleet_train_params *tp, size_t *parts,
                          size_t *target)
{
    size_t nd = deg_fleet_n_docs(f), cand[ND_MAX], nc = 0, tok[ND_MAX];
    int64_t steps[ND_MAX], low = INT64_MAX;
    int res[ND_MAX];
    cr_assert_leq(nd, ND_MAX);
    for (size_t i = 0; i < nd; i++) {
        deg_fleet_doc_info d;
        cr_assert_eq(deg_fleet_doc(f, i, &d), DEG_OK);
        tok[i] = d.tokens ? d.tokens : 1;
        steps[i] = d.steps;
        res[i] = d.resident;
        if (d.steps < low) low = d.steps;
    }
    for (size_t i = 0; i < nd; i++)
        if (res[i] && (tp->schedule == DEG_FLEET_SCHEDULE_LENGTH || steps[i] == low))
            cand[nc++] = i;
    cr_assert_gt(nc, 0, "no candidate");
    dg_rng r;
    dg_rng_seed(&r, tp->seed * 1000003u + (uint64_t)deg_fleet_rounds(f));
    uint64_t total = 0, acc = 0;
    for (size_t i = 0; i < nc; i++) total += tok[cand[i]];
    uint64_t u = dg_rng_below(&r, total);
    size_t t = 0;
    for (size_t i = 0; i < nc; i++)
        if (u < (acc += tok[cand[i]])) {
            t = cand[i];
            break;
        }
    size_t others[ND_MAX], m = 0, n = 1;
    for (size_t i = 0; i < nc; i++)
        if (cand[i] != t) others[m++] = cand[i];
    parts[0] = *target = t;
    if (dg_rng_uniform(&r) >= (double)tp->p_iso && tp->distract_max > 0 && m > 0) {
        size_t dm = (size_t)tp->distract_max;
        size_t k = 1 + (size_t)dg_rng_below(&r, m < dm ? m : dm);
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

/* ------------------------------------------------------------------ */
/* The UNIFORM rule (include/cartridge.h): step counts within 1 of each */
/* other after every round, in every setting.                          */
/* ------------------------------------------------------------------ */

typedef struct setting {
    size_t docs, budget;    /* budget 0 = all resident */
    int rotate_every;       /* 0 = no periodic rotation */
    float evict_fraction, p_iso;
    int distract_max, rounds;
} setting;

/* max - min of the step counts; *resident = documents in memory. */
static int64_t step_spread(const deg_fleet *f, size_t *resident, int64_t *total)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN, sum = 0;
    size_t r = 0;
    for (size_t i = 0; i < deg_fleet_n_docs(f); i++) {
        deg_fleet_doc_info d;
        cr_assert_eq(deg_fleet_doc(f, i, &d), DEG_OK);
        lo = d.steps < lo ? d.steps : lo;
        hi = d.steps > hi ? d.steps : hi;
        sum += d.steps;
        r += d.resident != 0;
    }
    if (resident) *resident = r;
    if (total) *total = sum;
    return hi - lo;
}

/* Is a resident document at the fleet's fewest steps? */
static int resident_at_fewest(const deg_fleet *f)
{
    int64_t low = INT64_MAX;
    deg_fleet_doc_info d;
    for (size_t i = 0; i < deg_fleet_n_docs(f); i++)
        if (deg_fleet_doc(f, i, &d) == DEG_OK && d.steps < low) low = d.steps;
    for (size_t i = 0; i < deg_fleet_n_docs(f); i++)
        if (deg_fleet_doc(f, i, &d) == DEG_OK && d.resident && d.steps == low) return 1;
    return 0;
}

/* One round by the header's rule, without conversations: UNIFORM rotates
 * first when no resident is at the fewest steps; the draw (checked against
 * expect_draw); deg_fleet_step over the parts (zero gradients: the step
 * counts, warm-up and rotations of a real round). Returns n_parts. */
static size_t rule_round(deg_fleet *f, const deg_fleet_train_params *tp, size_t *parts,
                         size_t *target, int *rotated)
{
    if (tp->schedule == DEG_FLEET_SCHEDULE_UNIFORM && !resident_at_fewest(f)) {
        size_t t, p[4], n;
        cr_assert_eq(deg_fleet_draw(f, tp, &t, p, 4, &n), DEG_ERR_STATE);
        cr_assert(strstr(deg_errmsg(), "rotate first") != NULL, "%s", deg_errmsg());
        cr_assert_eq(deg_fleet_rotate(f), DEG_OK, "%s", deg_errmsg());
        cr_assert(resident_at_fewest(f), "the rotation brought no least-trained document in");
        (*rotated)++;
    }
    size_t want[4], wt, n;
    size_t wn = expect_draw(f, tp, want, &wt);
    cr_assert_eq(deg_fleet_draw(f, tp, target, parts, 4, &n), DEG_OK, "%s", deg_errmsg());
    cr_assert(n == wn && *target == wt && !memcmp(parts, want, n * sizeof *parts),
              "the draw differs from the header's rule");
    cr_assert_eq(deg_fleet_step(f, parts, n), DEG_OK, "%s", deg_errmsg());
    return n;
}

static deg_fleet_train_params setting_params(const setting *s, uint64_t seed, int schedule)
{
    deg_fleet_train_params tp = small_params(seed, s->p_iso, schedule);
    tp.distract_max = s->distract_max;
    tp.accum = 1;
    return tp;
}

/* Every round of s under schedule; returns the widest spread seen after a
 * round (the fleet starts untrained: spread 0). */
static int64_t run_setting(deg_model *m, const setting *s, uint64_t seed, int schedule,
                           int *rotated, size_t *coloaded)
{
    char dir[64];
    test_tmpdir_mem(dir, sizeof dir, "fleet-rule");
    make_fleet_n(m, dir, s->docs, 0);
    deg_fleet *f = open_fleet_ex(m, dir, s->budget, s->rotate_every, s->evict_fraction);
    deg_fleet_train_params tp = setting_params(s, seed, schedule);
    size_t cap = s->budget && s->budget < s->docs ? s->budget : s->docs;
    int64_t widest = 0, total = 0, before = 0;
    for (int r = 0; r < s->rounds; r++) {
        size_t parts[4], t, resident;
        size_t n = rule_round(f, &tp, parts, &t, rotated);
        *coloaded += n > 1;
        int64_t sp = step_spread(f, &resident, &total);
        cr_assert_eq(total - before, (int64_t)n, "every part steps once");
        before = total;
        cr_assert_leq(resident, cap, "residents over the budget");
        widest = sp > widest ? sp : widest;
    }
    cr_assert_eq(deg_fleet_rounds(f), s->rounds);
    deg_fleet_free(f);
    rmtree(dir);
    return widest;
}

Test(fleet_train, uniform_rule_holds_in_every_setting, .timeout = 900)
{
    deg_model *m = tiny_load("tiny-qwen3");
    static const float PHI[] = {0.2f, 0.34f, 0.5f, 0.75f, 1.0f}, ISO[] = {0.0f, 0.3f, 0.75f,
                                                                         1.0f};
    dg_rng g;
    dg_rng_seed(&g, 2026);
    int rotated = 0, length_wide = 0;
    size_t coloaded = 0, ignored = 0;
    enum { N_SETTINGS = 200 };
    for (int k = 0; k < N_SETTINGS; k++) {
        setting s;
        if (k == 0)  /* the setting session 9 saw spread 2 in (budget 3 of 5, R = 2) */
            s = (setting){5, 3, 2, 0.5f, 0.75f, 2, 12};
        else {
            s.docs = 1 + (size_t)dg_rng_below(&g, ND_MAX);
            s.budget = (size_t)dg_rng_below(&g, s.docs + 1);
            s.rotate_every = (int)dg_rng_below(&g, 5);
            s.evict_fraction = PHI[dg_rng_below(&g, 5)];
            s.p_iso = ISO[dg_rng_below(&g, 4)];
            s.distract_max = (int)dg_rng_below(&g, 4);
            s.rounds = 1 + (int)dg_rng_below(&g, 4 * s.docs + 4);
        }
        int64_t w = run_setting(m, &s, (uint64_t)k, DEG_FLEET_SCHEDULE_UNIFORM, &rotated,
                                &coloaded);
        cr_assert_leq(w, 1, "setting %d (docs %zu, budget %zu, R %d, phi %g, p_iso %g, "
                      "distract_max %d, %d rounds): step counts %lld apart", k, s.docs,
                      s.budget, s.rotate_every, (double)s.evict_fraction, (double)s.p_iso,
                      s.distract_max, s.rounds, (long long)w);
        if (k < 40)  /* the check can fail: the spec's sampler breaks it */
            length_wide += run_setting(m, &s, (uint64_t)k, DEG_FLEET_SCHEDULE_LENGTH, &rotated,
                                       &ignored) > 1;
    }
    cr_assert_gt(rotated, 10, "the rotation before a round was never needed");
    cr_assert_gt(coloaded, 50, "too few co-loaded rounds");
    cr_assert_gt(length_wide, 5, "LENGTH kept the rule too (the check cannot fail?)");
    deg_model_free(m);
}

/* deg_fleet_train_round (conversations and all) takes the rule's rounds:
 * the same parts, rotations and step counts as rule_round on a twin fleet. */
Test(fleet_train, train_round_follows_the_uniform_rule, .timeout = 600)
{
    deg_model *m = tiny_load("tiny-qwen3");
    static const setting S[] = {{5, 3, 2, 0.5f, 0.3f, 2, 10}, {4, 2, 0, 1.0f, 0.5f, 3, 7},
                                {6, 4, 3, 0.34f, 0.0f, 2, 8}};
    for (size_t k = 0; k < sizeof S / sizeof *S; k++) {
        char real[64], twin[64];
        test_tmpdir_mem(real, sizeof real, "fleet-real");
        test_tmpdir_mem(twin, sizeof twin, "fleet-twin");
        make_fleet_n(m, real, S[k].docs, 0);
        make_fleet_n(m, twin, S[k].docs, 0);
        deg_fleet *a = open_fleet_ex(m, real, S[k].budget, S[k].rotate_every,
                                     S[k].evict_fraction);
        deg_fleet *b = open_fleet_ex(m, twin, S[k].budget, S[k].rotate_every,
                                     S[k].evict_fraction);
        deg_fleet_train_params tp = setting_params(&S[k], 40 + k, DEG_FLEET_SCHEDULE_UNIFORM);
        int rotated = 0;
        for (int r = 0; r < S[k].rounds; r++) {
            size_t pa[4], pb[4], tb;
            deg_fleet_round info;
            cr_assert_eq(deg_fleet_train_round(a, &tp, pa, 4, &info), DEG_OK, "%s",
                         deg_errmsg());
            size_t nb = rule_round(b, &tp, pb, &tb, &rotated);
            cr_assert(info.n_parts == nb && info.target == tb &&
                      !memcmp(pa, pb, nb * sizeof *pa), "setting %zu round %d", k, r);
            cr_assert_leq(step_spread(a, NULL, NULL), 1);
            for (size_t i = 0; i < S[k].docs; i++) {
                deg_fleet_doc_info da, db;
                deg_fleet_doc(a, i, &da);
                deg_fleet_doc(b, i, &db);
                cr_assert(da.steps == db.steps && da.resident == db.resident &&
                          da.since_entry == db.since_entry, "setting %zu round %d doc %zu", k,
                          r, i);
            }
        }
        cr_assert_gt(rotated, 0, "setting %zu never needed the rotation before a round", k);
        deg_fleet_free(a);
        deg_fleet_free(b);
        rmtree(real);
        rmtree(twin);
    }
    deg_model_free(m);
}

/* Draft references added to (and removed from) a fleet made without them:
 * the same bytes as a fleet made with them, steps, moments and residency
 * kept, matching cartridges left alone. */
Test(fleet_train, draft_references_set_later, .timeout = 300)
{
    deg_model *m = tiny_load("tiny-qwen3");
    char later[64], born[64];
    test_tmpdir_mem(later, sizeof later, "fleet-later");
    test_tmpdir_mem(born, sizeof born, "fleet-born");
    make_fleet(m, later, 0);
    make_fleet(m, born, 1);
    deg_fleet *a = open_fleet(m, later, 2, 0), *b = open_fleet(m, born, 2, 0);
    const size_t one[] = {0}, two[] = {1, 0};
    for (int k = 0; k < 2; k++) {  /* the same history on both: steps, an evict, an admit */
        deg_fleet *f = k ? b : a;
        cr_assert_eq(deg_fleet_step(f, one, 1), DEG_OK, "%s", deg_errmsg());
        cr_assert_eq(deg_fleet_step(f, two, 2), DEG_OK, "%s", deg_errmsg());
        cr_assert_eq(deg_fleet_evict(f, 0), DEG_OK, "%s", deg_errmsg());
        cr_assert_eq(deg_fleet_admit(f, 3), DEG_OK, "%s", deg_errmsg());
    }
    deg_fleet_doc_info before[ND], after;
    for (size_t i = 0; i < ND; i++) deg_fleet_doc(a, i, &before[i]);
    size_t changed = 99;
    deg_draft_ref *r = (deg_draft_ref *)1;
    cr_assert_eq(deg_fleet_draft_ref(a, one, 1, &r), DEG_OK);
    cr_assert_null(r);
    cr_assert_eq(deg_fleet_set_draft_refs(a, 1, &changed), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(changed, ND);
    for (size_t i = 0; i < ND; i++) {
        deg_fleet_doc(a, i, &after);
        cr_assert(after.steps == before[i].steps && after.resident == before[i].resident &&
                  after.since_entry == before[i].since_entry, "document %zu moved", i);
    }
    cr_assert_eq(deg_fleet_save(a), DEG_OK);
    cr_assert_eq(deg_fleet_save(b), DEG_OK);
    size_t na, nb;
    char *ba = fleet_bytes(later, &na), *bb = fleet_bytes(born, &nb);
    cr_assert(na == nb && !memcmp(ba, bb, na), "draft references set later differ from init's");
    free(ba);
    free(bb);
    /* a reopened fleet serves them; a second call rewrites nothing */
    deg_fleet_free(a);
    a = open_fleet(m, later, 2, 0);
    cr_assert_eq(deg_fleet_draft_ref(a, one, 1, &r), DEG_OK);
    deg_corpus *c0 = doc_corpus(m, 0);
    cr_assert(r && deg_draft_ref_len(r) == deg_corpus_len(c0) &&
              !memcmp(deg_draft_ref_ids(r), deg_corpus_ids(c0),
                      deg_corpus_len(c0) * sizeof(int32_t)));
    deg_corpus_free(c0);
    deg_draft_ref_free(r);
    cr_assert_eq(deg_fleet_set_draft_refs(a, 1, &changed), DEG_OK);
    cr_assert_eq(changed, 0);
    /* removed again: both fleets the same once more, without references */
    cr_assert_eq(deg_fleet_set_draft_refs(a, 0, &changed), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(changed, ND);
    cr_assert_eq(deg_fleet_set_draft_refs(b, 0, NULL), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_fleet_save(a), DEG_OK);
    cr_assert_eq(deg_fleet_save(b), DEG_OK);
    ba = fleet_bytes(later, &na);
    bb = fleet_bytes(born, &nb);
    cr_assert(na == nb && !memcmp(ba, bb, na), "removed references differ");
    free(ba);
    free(bb);
    r = (deg_draft_ref *)1;
    cr_assert_eq(deg_fleet_draft_ref(a, two, 2, &r), DEG_OK);
    cr_assert_null(r);
    cr_expect_eq(deg_fleet_set_draft_refs(a, 2, NULL), DEG_ERR_ARG);
    cr_expect_eq(deg_fleet_set_draft_refs(NULL, 1, NULL), DEG_ERR_ARG);
    /* a text copy that is not there any more: named, the documents before it done */
    char gone[600];
    snprintf(gone, sizeof gone, "%s/docs/0002.txt", later);
    cr_assert_eq(remove(gone), 0);
    cr_expect_eq(deg_fleet_set_draft_refs(a, 1, &changed), DEG_ERR_IO);
    cr_expect(strstr(deg_errmsg(), "document 2") != NULL, "%s", deg_errmsg());
    cr_expect_eq(changed, 2);
    deg_fleet_free(a);
    deg_fleet_free(b);
    rmtree(later);
    rmtree(born);
    deg_model_free(m);
}
