/* deg-fleet-train: mixed-visibility fleet training from C alone
 * (include/cartridge.h, "Fleets" and "Mixed-visibility joint self-study over
 * a fleet"), the C side of the C-vs-Python fleet check
 * (tests/python/test_fleet_c.py) and an example of the API. Usage:
 *   deg-fleet-train MODEL DIR [--p N] [--rounds N] [--budget N]
 *       [--rotate-every N] [--evict-fraction X] [--warmup N] [--lr X]
 *       [--accum N] [--p-iso X] [--distract-max N] [--schedule length|uniform]
 *       [--seed N] [--pack 0|1] [--chunk-min N] [--chunk-max N] [--max-q N]
 *       [--max-a N] [FILE...]
 * With FILEs, DIR is created first (deg_fleet_init: one corpus-init
 * cartridge of p rows per FILE, named by its path as given); then the fleet
 * is opened and trained for --rounds rounds, saved after every round (as
 * deg.fleets.train's save_every = 1). Defaults are deg fleet train's. One
 * line per round: "round R target T parts A,B loss X". Exit 0 on success,
 * 1 with the library's message on stderr otherwise, 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cartridge.h"
#include "deg.h"
#include "read_file.h"

static int fail(const char *what)
{
    fprintf(stderr, "deg-fleet-train: %s: %s\n", what, deg_errmsg());
    return 1;
}

/* One --key value pair into the settings; 0 if the key is unknown. */
static int option(const char *k, const char *v, size_t *p, int *rounds, deg_fleet_params *fp,
                  deg_fleet_train_params *tp)
{
    if (!strcmp(k, "p")) *p = strtoull(v, NULL, 10);
    else if (!strcmp(k, "rounds")) *rounds = atoi(v);
    else if (!strcmp(k, "budget")) fp->budget = strtoull(v, NULL, 10);
    else if (!strcmp(k, "rotate-every")) fp->rotate_every = atoi(v);
    else if (!strcmp(k, "evict-fraction")) fp->evict_fraction = strtof(v, NULL);
    else if (!strcmp(k, "warmup")) fp->warmup_steps = atoi(v);
    else if (!strcmp(k, "lr")) fp->adam.lr = strtof(v, NULL);
    else if (!strcmp(k, "accum")) tp->accum = atoi(v);
    else if (!strcmp(k, "p-iso")) tp->p_iso = strtof(v, NULL);
    else if (!strcmp(k, "distract-max")) tp->distract_max = atoi(v);
    else if (!strcmp(k, "schedule"))
        tp->schedule = !strcmp(v, "uniform") ? DEG_FLEET_SCHEDULE_UNIFORM
                                             : !strcmp(v, "length") ? DEG_FLEET_SCHEDULE_LENGTH : -1;
    else if (!strcmp(k, "seed")) tp->seed = strtoull(v, NULL, 10);
    else if (!strcmp(k, "pack")) tp->pack = atoi(v);
    else if (!strcmp(k, "chunk-min")) tp->study.chunk_min = atoi(v);
    else if (!strcmp(k, "chunk-max")) tp->study.chunk_max = atoi(v);
    else if (!strcmp(k, "max-q")) tp->study.max_q = atoi(v);
    else if (!strcmp(k, "max-a")) tp->study.max_a = atoi(v);
    else return 0;
    return 1;
}

static int init_fleet(const deg_model *model, const char *dir, size_t p, char **files, size_t n)
{
    char **texts = calloc(n, sizeof *texts);
    size_t *lens = calloc(n, sizeof *lens);
    int rc = 0;
    for (size_t d = 0; d < n && rc == 0; d++)
        if (!(texts[d] = read_file(files[d], &lens[d]))) {
            fprintf(stderr, "deg-fleet-train: cannot read %s\n", files[d]);
            rc = 1;
        }
    if (rc == 0 && deg_fleet_init(model, dir, (const char *const *)files,
                                  (const char *const *)texts, lens, n, p) != DEG_OK)
        rc = fail("init");
    for (size_t d = 0; d < n; d++) free(texts[d]);
    free(texts);
    free(lens);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: deg-fleet-train MODEL DIR [options] [FILE...]\n");
        return 2;
    }
    deg_fleet_params fp = deg_fleet_default_params();
    deg_fleet_train_params tp = deg_fleet_default_train_params();
    size_t p = 256;
    int rounds = 0, i = 3;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2)
        if (!option(argv[i] + 2, argv[i + 1], &p, &rounds, &fp, &tp)) {
            fprintf(stderr, "deg-fleet-train: unknown option %s\n", argv[i]);
            return 2;
        }
    deg_model *model = NULL;
    if (deg_model_load(argv[1], &model) != DEG_OK) return fail(argv[1]);
    if (i < argc && init_fleet(model, argv[2], p, argv + i, (size_t)(argc - i)) != 0) return 1;
    deg_fleet *fleet = NULL;
    if (deg_fleet_open(model, argv[2], &fp, &fleet) != DEG_OK) return fail(argv[2]);
    size_t *parts = calloc(1 + (size_t)(tp.distract_max > 0 ? tp.distract_max : 0),
                           sizeof *parts);
    for (int r = 0; r < rounds; r++) {
        deg_fleet_round info;
        if (deg_fleet_train_round(fleet, &tp, parts, 1 + (size_t)tp.distract_max, &info) !=
            DEG_OK)
            return fail("round");
        if (deg_fleet_save(fleet) != DEG_OK) return fail("save");
        printf("round %lld target %zu parts ", (long long)info.round, info.target);
        for (size_t j = 0; j < info.n_parts; j++) printf(j ? ",%zu" : "%zu", parts[j]);
        printf(" loss %.6f\n", (double)info.loss);
    }
    free(parts);
    deg_fleet_free(fleet);
    deg_model_free(model);
    return 0;
}
