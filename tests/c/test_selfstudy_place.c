/* COVER chunk placement of self-study (include/cartridge.h,
 * deg_selfstudy_placement): each cycle's windows are the documented grid in
 * the documented shuffled order, one cycle of recall answers (or of seed-type
 * chunks) covers every corpus token, draws are seeded, batch-invariant and
 * random-access (deg_selfstudy_set_n_drawn), and bad placements are refused.
 * Tiny qwen3. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cartridge.h"
#include "cartridge/selfstudy_internal.h"
#include "deg.h"
#include "model/sample.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

/* Numbered sentences (a corpus of a chosen length). */
static char *numbered_text(int n)
{
    char *t = malloc((size_t)n * 40 + 1), *o = t;
    for (int i = 0; i < n; i++) o += sprintf(o, "Line %d says %d apples. ", i, 3 * i + 1);
    return t;
}

static deg_model *tiny(void)
{
    deg_model *m = NULL;
    cr_assert_eq(deg_model_load(GOLDENS "/tiny-qwen3", &m), DEG_OK, "%s", deg_errmsg());
    return m;
}

static deg_corpus *corpus_of(deg_model *m, const char *text)
{
    const char *names[1] = {"doc.txt"}, *texts[1] = {text};
    size_t lens[1] = {strlen(text)};
    deg_corpus *c = NULL;
    cr_assert_eq(deg_corpus_new(m, names, texts, lens, 1, &c), DEG_OK, "%s", deg_errmsg());
    return c;
}

static deg_selfstudy_params params(uint64_t seed, float recall)
{
    deg_selfstudy_params p = deg_selfstudy_default_params();
    p.seed = seed;
    p.chunk_min = 24;
    p.chunk_max = 48;
    p.max_q = 6;
    p.max_a = 8;
    p.recall = recall;
    p.recall_q_min = 4;
    p.recall_q_max = 6;
    return p;
}

/* Cycle c's windows in visiting order by the rule as the header states it
 * (written from the header, not from selfstudy_place.c): the grid 0, then
 * o + kW in (0, n); o = 0 in cycle 0, below(W) of the cycle's stream after;
 * a Fisher-Yates shuffle from the same stream. Returns the count. */
static size_t documented_cycle(uint64_t seed, size_t c, size_t n, size_t w, size_t *out)
{
    dg_rng r;
    dg_rng_seed(&r, (seed ^ 0x636F766572ULL) * 1000003ULL + c);
    size_t o = c ? (size_t)dg_rng_below(&r, w) : 0, k = 0;
    out[k++] = 0;
    for (size_t x = o ? o : w; x < n; x += w) out[k++] = x;
    for (size_t j = k - 1; j >= 1; j--) {
        size_t t = (size_t)dg_rng_below(&r, j + 1), v = out[j];
        out[j] = out[t];
        out[t] = v;
    }
    return k;
}

/* The first `cycles` cycles' windows, concatenated; returns the count and
 * each cycle's size in sizes[]. */
static size_t documented(uint64_t seed, size_t cycles, size_t n, size_t w, size_t *out,
                         size_t *sizes)
{
    size_t k = 0;
    for (size_t c = 0; c < cycles; c++) {
        sizes[c] = documented_cycle(seed, c, n, w, out + k);
        k += sizes[c];
    }
    return k;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* The windows of a study are the documented ones, in order, over 4 cycles;
 * every cycle's sorted starts begin at 0 and step by at most W (so windows
 * of W tokens cover the corpus); cycle 0 is exactly 0, W, 2W, ...; set_n_drawn
 * jumps anywhere, back too. */
Test(selfstudy_place, windows_are_the_documented_grid)
{
    deg_model *m = tiny();
    char *text = numbered_text(30);
    deg_corpus *c = corpus_of(m, text);
    size_t n = deg_corpus_len(c);
    float recalls[3] = {1.0f, 0.0f, 0.5f};
    size_t widths[3] = {8, 24, 8}; /* max_a; chunk_min; the smaller */
    for (int t = 0; t < 3; t++) {
        deg_selfstudy_params p = params(11 + (uint64_t)t, recalls[t]);
        deg_selfstudy *s = NULL;
        cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK, "%s", deg_errmsg());
        cr_assert_eq(dg_cover_width(&p), widths[t]);
        cr_assert_eq(deg_selfstudy_get_placement(s), DEG_SELFSTUDY_PLACE_RANDOM);
        cr_assert_eq(deg_selfstudy_set_placement(s, DEG_SELFSTUDY_PLACE_COVER), DEG_OK);
        size_t w = widths[t], want[4096], sizes[4], total = documented(p.seed, 4, n, w, want,
                                                                        sizes);
        cr_assert(total < 4096 && sizes[0] == (n + w - 1) / w, "n %zu w %zu", n, w);
        for (size_t k = 0; k < total; k++) {
            size_t got;
            cr_assert_eq(deg_selfstudy_n_drawn(s), k);
            cr_assert_eq(dg_cover_window(s, &got), DEG_OK);
            cr_assert_eq(got, want[k], "draw %zu: window %zu, documented %zu", k, got, want[k]);
            s->n_drawn++; /* what a draw does after placing */
        }
        size_t first = 0;
        for (int cy = 0; cy < 4; cy++) {
            size_t sorted[4096];
            memcpy(sorted, want + first, sizes[cy] * sizeof *sorted);
            qsort(sorted, sizes[cy], sizeof *sorted, cmp_size);
            cr_assert_eq(sorted[0], 0);
            for (size_t j = 1; j < sizes[cy]; j++)
                cr_assert(sorted[j] > sorted[j - 1] && sorted[j] - sorted[j - 1] <= w);
            cr_assert(n - sorted[sizes[cy] - 1] <= w);
            if (cy == 0)
                for (size_t j = 0; j < sizes[0]; j++) cr_assert_eq(sorted[j], j * w);
            first += sizes[cy];
        }
        /* random access, forward and back */
        size_t jumps[4] = {total - 1, 3, sizes[0] + 1, 0};
        for (int j = 0; j < 4; j++) {
            size_t got;
            cr_assert_eq(deg_selfstudy_set_n_drawn(s, jumps[j]), DEG_OK);
            cr_assert_eq(dg_cover_window(s, &got), DEG_OK);
            cr_assert_eq(got, want[jumps[j]], "jump to %zu", jumps[j]);
        }
        deg_selfstudy_free(s);
    }
    deg_selfstudy *s = NULL;
    deg_selfstudy_params p = params(1, 1.0f);
    cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK);
    cr_assert_eq(deg_selfstudy_set_placement(s, 2), DEG_ERR_ARG);
    cr_assert(strstr(deg_errmsg(), "placement 2 is neither RANDOM (0) nor COVER (1)"), "%s",
              deg_errmsg());
    cr_assert_eq(deg_selfstudy_set_placement(NULL, 1), DEG_ERR_ARG);
    cr_assert_eq(deg_selfstudy_set_n_drawn(NULL, 1), DEG_ERR_ARG);
    cr_assert_eq(deg_selfstudy_get_placement(s), DEG_SELFSTUDY_PLACE_RANDOM);
    deg_selfstudy_free(s);
    deg_corpus_free(c);
    free(text);
    deg_model_free(m);
}

/* ids[0..na) are the corpus tokens at `at`. */
static int corpus_at(const deg_corpus *c, const int32_t *ids, size_t na, size_t at)
{
    return at + na <= deg_corpus_len(c) && !memcmp(deg_corpus_ids(c) + at, ids, na * sizeof *ids);
}

/* One cycle of COVER recall conversations: answer k starts at window k, is
 * min(max_a, n - w) corpus tokens long, lies inside its chunk after its
 * prompt, and the answers together cover every corpus token; a batch of 5
 * equals 5 batches of 1, and the RANDOM stream is the one before. */
Test(selfstudy_place, one_cycle_of_recall_answers_covers_the_corpus)
{
    deg_model *m = tiny();
    char *text = numbered_text(12);
    deg_corpus *c = corpus_of(m, text);
    size_t n = deg_corpus_len(c);
    deg_selfstudy_params p = params(5, 1.0f);
    size_t want[512], sizes[1];
    size_t k0 = documented(p.seed, 1, n, 8, want, sizes);
    cr_assert(k0 >= 6 && k0 < 64, "corpus of %zu tokens", n);
    deg_selfstudy *s = NULL, *s1 = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK);
    cr_assert_eq(deg_selfstudy_new(c, &p, &s1), DEG_OK);
    cr_assert_eq(deg_selfstudy_set_placement(s, DEG_SELFSTUDY_PLACE_COVER), DEG_OK);
    cr_assert_eq(deg_selfstudy_set_placement(s1, DEG_SELFSTUDY_PLACE_COVER), DEG_OK);
    deg_selfstudy_conv *v = calloc(k0, sizeof *v), one;
    cr_assert_eq(deg_selfstudy_generate(s, k0, v), DEG_OK, "%s", deg_errmsg());
    cr_assert_eq(deg_selfstudy_n_drawn(s), k0);
    char *covered = calloc(n, 1);
    for (size_t k = 0; k < k0; k++) {
        size_t w = want[k], na = n - w < 8 ? n - w : 8;
        cr_assert_eq(v[k].kind, DEG_SELFSTUDY_RECALL);
        cr_assert_eq(v[k].n_answer, na, "conversation %zu", k);
        cr_assert(corpus_at(c, v[k].answer_ids, na, w), "conversation %zu", k);
        cr_assert(v[k].chunk_first <= w && w + na <= v[k].chunk_end &&
                  v[k].chunk_end <= n);
        cr_assert(w == 0 ? !strcmp(v[k].message, "...") : strlen(v[k].message) > 0);
        memset(covered + w, 1, na);
        if (k < 5) {
            cr_assert_eq(deg_selfstudy_generate(s1, 1, &one), DEG_OK);
            cr_assert(one.n_answer == v[k].n_answer && one.chunk_first == v[k].chunk_first &&
                      !strcmp(one.message, v[k].message) &&
                      !memcmp(one.targets, v[k].targets, one.n_targets * sizeof *one.targets),
                      "batch of %zu vs one at a time: conversation %zu", k0, k);
            deg_selfstudy_conv_clear(&one);
        }
        deg_selfstudy_conv_clear(&v[k]);
    }
    for (size_t i = 0; i < n; i++) cr_assert(covered[i], "token %zu of %zu not covered", i, n);
    /* the spec's draw, untouched: RANDOM conversations never reach the last
     * tokens here (chunks of >= 24 tokens, answers <= 8 after a prompt) */
    deg_selfstudy *r = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &r), DEG_OK);
    memset(covered, 0, n);
    for (size_t k = 0; k < 4 * k0; k++) {
        cr_assert_eq(deg_selfstudy_generate(r, 1, &one), DEG_OK);
        size_t q = 4; /* the prompt: recall_q 4..6 tokens at the chunk's start */
        while (q <= 6 && !corpus_at(c, one.answer_ids, one.n_answer, one.chunk_first + q)) q++;
        cr_assert(q <= 6 && one.n_answer == 8, "conversation %zu", k);
        memset(covered + one.chunk_first + q, 1, one.n_answer);
        deg_selfstudy_conv_clear(&one);
    }
    cr_assert(!covered[n - 1] && !covered[0], "RANDOM covered a corpus end");
    free(covered);
    free(v);
    deg_selfstudy_free(r);
    deg_selfstudy_free(s);
    deg_selfstudy_free(s1);
    deg_corpus_free(c);
    free(text);
    deg_model_free(m);
}

/* Seed-type conversations (recall 0): chunk k starts at window k (moved back
 * to end at n), and one cycle of chunks covers the corpus. */
Test(selfstudy_place, one_cycle_of_chunks_covers_the_corpus)
{
    deg_model *m = tiny();
    char *text = numbered_text(12);
    deg_corpus *c = corpus_of(m, text);
    size_t n = deg_corpus_len(c);
    deg_selfstudy_params p = params(8, 0.0f);
    size_t want[512], sizes[1];
    size_t k0 = documented(p.seed, 1, n, 24, want, sizes);
    deg_selfstudy *s = NULL;
    cr_assert_eq(deg_selfstudy_new(c, &p, &s), DEG_OK);
    cr_assert_eq(deg_selfstudy_set_placement(s, DEG_SELFSTUDY_PLACE_COVER), DEG_OK);
    deg_selfstudy_conv *v = calloc(k0, sizeof *v);
    cr_assert_eq(deg_selfstudy_generate(s, k0, v), DEG_OK, "%s", deg_errmsg());
    char *covered = calloc(n, 1);
    for (size_t k = 0; k < k0; k++) {
        size_t len = v[k].chunk_end - v[k].chunk_first;
        cr_assert(v[k].kind < DEG_SELFSTUDY_N_SEED_TYPES && len >= 24 && len <= 48);
        size_t first = want[k] < n - len ? want[k] : n - len;
        cr_assert_eq(v[k].chunk_first, first, "conversation %zu", k);
        memset(covered + v[k].chunk_first, 1, len);
        deg_selfstudy_conv_clear(&v[k]);
    }
    for (size_t i = 0; i < n; i++) cr_assert(covered[i], "token %zu of %zu not covered", i, n);
    free(covered);
    free(v);
    deg_selfstudy_free(s);
    deg_corpus_free(c);
    free(text);
    deg_model_free(m);
}
