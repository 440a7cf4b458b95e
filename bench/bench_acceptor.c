/* Acceptor cost per candidate check (spec §12.3 generate: the generator
 * asks prefix_ok for every candidate token, up to 256 per step).
 *
 * For each pattern: a valid target text is "generated" one code point at a
 * time; at every step, 64 candidate continuations (the next character plus
 * 63 others drawn from a fixed alphabet) are checked with prefix_ok, and
 * eos_ok 64 times. Reports ns per prefix_ok and per eos_ok check (best of 5
 * rounds).
 * Usage: bench_acceptor [reps] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deg.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    const char *name, *pattern, *target;
    size_t min_len, max_len;
} bcase;

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    static const bcase cases[] = {
        {"order_code", "^[A-Z]{3}-\\d{4}$", "ABC-1234", 8, 8},
        {"iso_date", "^\\d{4}-\\d{2}-\\d{2}$", "2026-03-05", 10, 10},
        {"email", "^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$", "joe.bloggs@example.com", 6, 254},
        {"sentence", "^[A-Z][^\\n]*[.!?]$", "Thanks for your order, it ships on Monday.", 10, 200},
        {"search_word", "\\b(?:urgent|asap)\\b", "Please handle this asap, thanks.", 0, 200},
        {"no_pattern", NULL, "Free text reply of moderate length for the user.", 1, 500},
    };
    const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .-@_!?,";
    printf("{\"bench\": \"acceptor\", \"reps\": %d, \"cases\": [", reps);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const bcase *b = &cases[c];
        deg_acceptor *acc;
        if (deg_acceptor_new(b->pattern, b->min_len, b->max_len, &acc) != DEG_OK) {
            fprintf(stderr, "%s: %s\n", b->name, deg_errmsg());
            return 1;
        }
        size_t tl = strlen(b->target);
        char buf[512];
        long accepted = 0;
        /* 5 rounds of reps walks; the best round is reported (the machine
         * is shared, so the minimum is the least disturbed measurement) */
        double best_prefix = 1e30, best_eos = 1e30;
        for (int round = 0; round < 5; round++) {
            long n_prefix = 0, n_eos = 0;
            double t_prefix = 0, t_eos = 0;
            for (int r = 0; r < reps; r++) {
                for (size_t i = 0; i < tl; i++) {
                    memcpy(buf, b->target, i);
                    double t0 = now();
                    for (int k = 0; k < 64; k++) {
                        buf[i] = k == 0 ? b->target[i] : alphabet[(k * 7 + i) % (sizeof alphabet - 1)];
                        accepted += deg_acceptor_prefix_ok(acc, buf, i + 1);
                    }
                    double t1 = now();
                    for (int k = 0; k < 64; k++) accepted += deg_acceptor_eos_ok(acc, b->target, i + 1);
                    double t2 = now();
                    t_prefix += t1 - t0;
                    t_eos += t2 - t1;
                    n_prefix += 64;
                    n_eos += 64;
                }
            }
            if (1e9 * t_prefix / (double)n_prefix < best_prefix) best_prefix = 1e9 * t_prefix / (double)n_prefix;
            if (1e9 * t_eos / (double)n_eos < best_eos) best_eos = 1e9 * t_eos / (double)n_eos;
        }
        printf("%s{\"name\": \"%s\", \"pattern\": \"%s\", \"text_chars\": %zu, \"prefix_ok_ns\": %.1f, "
               "\"eos_ok_ns\": %.1f, \"accepted\": %ld}",
               c ? ", " : "", b->name, b->pattern ? "(see source)" : "none", tl, best_prefix, best_eos,
               accepted);
        deg_acceptor_free(acc);
    }
    printf("]}\n");
    return 0;
}
