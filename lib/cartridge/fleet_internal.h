/* Private layout of deg_fleet (include/cartridge.h, "Fleets"), shared by
 * lib/cartridge/fleet.c (directory, manifest) and fleet_budget.c (the
 * resident budget, rotation, optimizer rounds, serving). */
#ifndef DG_FLEET_INTERNAL_H
#define DG_FLEET_INTERNAL_H

#include "cartridge/cartridge_internal.h"

/* A fleet document's text copy is at most this large (the guard against
 * reading something else as a document). */
#define DG_FLEET_TEXT_MAX ((size_t)1 << 30)

typedef struct dg_fleet_doc {
    char *name;            /* source path (manifest) */
    char *cart_rel, *text_rel;   /* "docs/NNNN.safetensors", "docs/NNNN.txt" */
    char *cart_path, *text_path; /* dir + "/" + rel */
    size_t tokens;
    int64_t steps;         /* the cartridge file's adam_steps; live when resident */
    int64_t since_entry;
    deg_cartridge *c;      /* NULL when on disk */
    char sha[65];          /* SHA-256 of the cartridge file the manifest names; "" unknown */
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

/* One whole fleet save (fleet.c; base/prevsave.h protocol): under the fleet
 * directory's lock, settle what killed saves left, write the cartridge (with
 * moments) of every resident doc i with save[i] != 0 (save may be NULL;
 * save_all: every resident), keeping the old files as .prev, then fleet.json (naming every
 * cartridge by SHA-256; its rename commits), then drop the .prev files. A
 * concurrent writer's save is serialized by the lock; the last one wins,
 * each whole. */
deg_status dg_fleet_commit(deg_fleet *f, const int *save, int save_all);
/* Least-trained absentee (ties to the lower id), skipping skip[i] != 0
 * (skip may be NULL); f->n if none. */
size_t dg_fleet_least_trained_absent(const deg_fleet *f, const int *skip);
/* Map doc's cartridge into memory (no manifest write); warm-up restarts. */
deg_status dg_fleet_load(deg_fleet *f, size_t doc);
/* Set c's draft reference to the document's ids (deg_corpus_new over that
 * one document: the stream self-study draws from) unless it holds exactly
 * them already; *changed (may be NULL) = 1 if it was set (fleet_draft.c). */
deg_status dg_fleet_doc_draft_ref(const deg_model *m, deg_cartridge *c, const char *name,
                                  const char *text, size_t len, int *changed);
/* Number of resident documents. */
size_t dg_fleet_n_resident(const deg_fleet *f);

#endif
