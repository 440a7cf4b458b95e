/* deg-fleet-train: mixed-visibility fleet training from C alone
 * (include/cartridge.h, "Fleets" and "Mixed-visibility joint self-study over
 * a fleet"), the C side of the C-vs-Python fleet check
 * (tests/python/test_fleet_c.py) and an example of the API. Usage:
 *   deg-fleet-train MODEL DIR [--p N] [--rounds N] [--budget N]
 *       [--rotate-every N] [--evict-fraction X] [--warmup N] [--lr X]
 *       [--accum N] [--p-iso X] [--distract-max N] [--schedule length|uniform]
 *       [--seed N] [--pack 0|1] [--chunk-min N] [--chunk-max N] [--max-q N]
 *       [--max-a N] [--spec-b 0|1] [FILE...]
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
#include "tool_args.h"

#define PROG "deg-fleet-train"

static int fail(const char *what)
{
    fprintf(stderr, PROG ": %s: %s\n", what, deg_errmsg());
    return 1;
}

static int init_fleet(const deg_model *model, const char *dir, size_t p, char **files, size_t n)
{
    char **texts;
    size_t *lens;
    if (tool_read_docs(PROG, files, n, &texts, &lens)) return 1;
    int rc = 0;
    if (deg_fleet_init(model, dir, (const char *const *)files, (const char *const *)texts, lens,
                       n, p) != DEG_OK)
        rc = fail("init");
    tool_free_docs(texts, lens, n);
    return rc;
}

/* The schedule's name as deg_fleet_schedule; -1 when it names none. */
static int32_t schedule_of(const char *name)
{
    if (!strcmp(name, "uniform")) return DEG_FLEET_SCHEDULE_UNIFORM;
    if (!strcmp(name, "length")) return DEG_FLEET_SCHEDULE_LENGTH;
    return -1;
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
    int32_t rounds = 0;
    const char *schedule = NULL; /* the default params' unless given */
    const tool_opt opts[] = {
        {"p", TOOL_SIZE, &p},
        {"rounds", TOOL_I32, &rounds},
        {"budget", TOOL_SIZE, &fp.budget},
        {"rotate-every", TOOL_I32, &fp.rotate_every},
        {"evict-fraction", TOOL_F32, &fp.evict_fraction},
        {"warmup", TOOL_I32, &fp.warmup_steps},
        {"lr", TOOL_F32, &fp.adam.lr},
        {"accum", TOOL_I32, &tp.accum},
        {"p-iso", TOOL_F32, &tp.p_iso},
        {"distract-max", TOOL_I32, &tp.distract_max},
        {"schedule", TOOL_STR, &schedule},
        {"seed", TOOL_U64, &tp.seed},
        {"pack", TOOL_I32, &tp.pack},
        {"chunk-min", TOOL_I32, &tp.study.chunk_min},
        {"chunk-max", TOOL_I32, &tp.study.chunk_max},
        {"max-q", TOOL_I32, &tp.study.max_q},
        {"max-a", TOOL_I32, &tp.study.max_a},
        {"spec-b", TOOL_I32, &tp.study.spec_b},
    };
    int i = 3;
    if (tool_read_opts(PROG, argc, argv, &i, opts, sizeof opts / sizeof opts[0])) return 2;
    if (schedule && (tp.schedule = schedule_of(schedule)) < 0) {
        fprintf(stderr, PROG ": --schedule '%s' is not length or uniform\n", schedule);
        return 2;
    }
    deg_model *model = NULL;
    if (deg_model_load(argv[1], &model) != DEG_OK) return fail(argv[1]);
    if (i < argc && init_fleet(model, argv[2], p, argv + i, (size_t)(argc - i)) != 0) return 1;
    deg_fleet *fleet = NULL;
    if (deg_fleet_open(model, argv[2], &fp, &fleet) != DEG_OK) return fail(argv[2]);
    size_t *parts = calloc(1 + (size_t)(tp.distract_max > 0 ? tp.distract_max : 0),
                           sizeof *parts);
    for (int32_t r = 0; r < rounds; r++) {
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
