/* plan_internal.h - helpers between the plan's own files (plan*.c). */
#ifndef DG_DEG_PLAN_INTERNAL_H
#define DG_DEG_PLAN_INTERNAL_H

#include "deg/plan.h"

/* Display pointer of a path ("*" for item steps). malloc'd, NULL on OOM. */
char *dg_path_display(const dg_path *path);
/* The path as JSON: names, "*" for item steps (new reference). */
json_t *dg_path_json(const dg_path *path);
/* Canonical specs (new references) of a leaf and of an array's count decision. */
json_t *dg_field_canonical(const dg_field_plan *f);
json_t *dg_array_canonical(const dg_plan *p, const dg_array_plan *a);
/* Fill every fingerprint of a built plan. */
deg_status dg_plan_fingerprints(dg_plan *plan);

#endif
