/* Private layout of deg_fleet (include/cartridge.h, "Fleets"), shared by
 * lib/cartridge/fleet.c (directory, manifest) and fleet_budget.c (the
 * resident budget, rotation, optimizer rounds, serving). */
#ifndef DG_FLEET_INTERNAL_H
#define DG_FLEET_INTERNAL_H

#include "cartridge/cartridge_internal.h"

typedef struct dg_fleet_doc {
    char *name;            /* source path (manifest) */
    char *cart_rel, *text_rel;   /* "docs/NNNN.safetensors", "docs/NNNN.txt" */
    char *cart_path, *text_path; /* dir + "/" + rel */
    size_t tokens;
    int64_t steps;         /* the cartridge file's adam_steps; live when resident */
    int64_t since_entry;
    deg_cartridge *c;      /* NULL when on disk */
} dg_fleet_doc;

struct deg_fleet {
    const deg_model *model;   /* borrowed */
    char *dir;
    deg_fleet_params prm;
    size_t p;
    int64_t rounds;
    size_t n;
    dg_fleet_doc *docs;
};

/* Write fleet.json atomically from the handle's state (fleet.c). */
deg_status dg_fleet_write_manifest(const deg_fleet *f);
/* Least-trained absentee (ties to the lower id), skipping skip[i] != 0
 * (skip may be NULL); f->n if none. */
size_t dg_fleet_least_trained_absent(const deg_fleet *f, const int *skip);
/* Map doc's cartridge into memory (no manifest write); warm-up restarts. */
deg_status dg_fleet_load(deg_fleet *f, size_t doc);
/* Number of resident documents. */
size_t dg_fleet_n_resident(const deg_fleet *f);

#endif
