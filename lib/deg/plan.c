/* plan.c - fill plan: names, paths, JSON form, free. */
#include "deg/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deg/jsonptr.h"
#include "deg/plan_internal.h"
#include "deg/schema_check.h"

const char *dg_mode_name(dg_mode mode)
{
    switch (mode) {
    case DG_MODE_CHOICE: return "decide.choice";
    case DG_MODE_SCORE: return "decide.score";
    case DG_MODE_NOUL: return "decide.noul";
    case DG_MODE_NUMBER: return "extract.number";
    case DG_MODE_DATE: return "extract.date";
    case DG_MODE_SPAN: return "extract.span";
    case DG_MODE_GENERATE: return "generate";
    }
    return "?";
}

const char *dg_on_null_name(dg_on_null v)
{
    switch (v) {
    case DG_ON_NULL_NULL: return "null";
    case DG_ON_NULL_OMIT: return "omit";
    case DG_ON_NULL_FORBID: return "forbid";
    }
    return "?";
}

const char *dg_format_name(dg_format f)
{
    switch (f) {
    case DG_FORMAT_NONE: return NULL;
    case DG_FORMAT_DATE: return "date";
    case DG_FORMAT_DATE_TIME: return "date-time";
    case DG_FORMAT_EMAIL: return "email";
    case DG_FORMAT_URI: return "uri";
    case DG_FORMAT_UUID: return "uuid";
    }
    return NULL;
}

const char *dg_type_name(dg_type t)
{
    switch (t) {
    case DG_TYPE_STRING: return "string";
    case DG_TYPE_INTEGER: return "integer";
    case DG_TYPE_NUMBER: return "number";
    case DG_TYPE_BOOLEAN: return "boolean";
    case DG_TYPE_ANY: return "any";
    }
    return "?";
}

static char *pointer_of(const dg_path *path, const size_t *idx, size_t n_idx, bool display)
{
    size_t cap = 1, used = 0;
    for (size_t i = 0; i < path->n; i++)
        cap += 1 + (path->seg[i] ? dg_jsonptr_escaped_len(path->seg[i], strlen(path->seg[i])) : 24);
    char *s = malloc(cap), *p = s;
    if (!s) return NULL;
    for (size_t i = 0; i < path->n; i++) {
        *p++ = '/';
        const char *g = path->seg[i];
        if (!g) {
            if (display) *p++ = '*';
            else if (used < n_idx && idx[used] == DG_IDX_STAR) { *p++ = '*'; used++; }
            else if (used < n_idx) p += sprintf(p, "%zu", idx[used++]);
            else { free(s); return NULL; }
            continue;
        }
        p = dg_jsonptr_escape(p, g, strlen(g));
    }
    *p = '\0';
    if (!display && used != n_idx) { free(s); return NULL; }
    return s;
}

char *dg_path_display(const dg_path *path) { return pointer_of(path, NULL, 0, true); }

char *dg_path_pointer(const dg_path *path, const size_t *idx, size_t n_idx)
{
    return pointer_of(path, idx, n_idx, false);
}

json_t *dg_path_json(const dg_path *path)
{
    json_t *a = json_array();
    for (size_t i = 0; i < path->n; i++)
        json_array_append_new(a, json_string(path->seg[i] ? path->seg[i] : "*"));
    return a;
}

static json_t *jstr(const char *s) { return s ? json_string(s) : json_null(); }

static void free_path(dg_path *p)
{
    for (size_t i = 0; i < p->n; i++) free(p->seg[i]);
    free(p->seg);
}

void dg_plan_free(dg_plan *plan)
{
    if (!plan) return;
    for (size_t i = 0; i < plan->n_fields; i++) {
        dg_field_plan *f = &plan->fields[i];
        free_path(&f->path);
        free(f->pointer);
        free(f->schema_loc);
        for (size_t j = 0; j < f->n_options && f->option_descriptions; j++)
            free(f->option_descriptions[j]);
        free(f->option_descriptions);
        json_decref(f->options);
        for (size_t j = 0; j < f->n_levels && f->level_labels; j++) free(f->level_labels[j]);
        free(f->level_labels);
        free(f->level_count);
        free(f->levels);
        json_decref(f->constraints.json);
        free(f->title);
        free(f->description);
    }
    free(plan->fields);
    for (size_t i = 0; i < plan->n_arrays; i++) {
        dg_array_plan *a = &plan->arrays[i];
        free_path(&a->path);
        free(a->pointer);
        free(a->schema_loc);
        free(a->title);
        free(a->description);
    }
    free(plan->arrays);
    for (size_t i = 0; i < plan->n_objects; i++) {
        dg_object_plan *o = &plan->objects[i];
        free_path(&o->path);
        free(o->pointer);
        free(o->schema_loc);
        free(o->title);
        free(o->description);
    }
    free(plan->objects);
    json_decref(plan->schema);
    free(plan);
}

json_t *dg_plan_to_json(const dg_plan *p)
{
    json_t *fields = json_array(), *arrays = json_array(), *objects = json_array();
    for (size_t i = 0; i < p->n_fields; i++) {
        const dg_field_plan *f = &p->fields[i];
        /* The leaf's canonical spec (what its fingerprint hashes) plus where
         * it sits in this plan. */
        json_t *j = dg_field_canonical(f);
        json_object_del(j, "spec");
        json_object_set_new(j, "path", dg_path_json(&f->path));
        json_object_set_new(j, "pointer", json_string(f->pointer));
        json_object_set_new(j, "schema_loc", json_string(f->schema_loc));
        json_object_set_new(j, "array", f->array >= 0 ? json_integer(f->array) : json_null());
        json_object_set_new(j, "fingerprint", json_string(f->fingerprint));
        json_array_append_new(fields, j);
    }
    for (size_t i = 0; i < p->n_arrays; i++) {
        const dg_array_plan *a = &p->arrays[i];
        json_t *j = json_object();
        json_object_set_new(j, "path", dg_path_json(&a->path));
        json_object_set_new(j, "pointer", json_string(a->pointer));
        json_object_set_new(j, "schema_loc", json_string(a->schema_loc));
        json_object_set_new(j, "min_items", json_integer(a->min_items));
        json_object_set_new(j, "max_items", a->max_items >= 0 ? json_integer(a->max_items) : json_null());
        json_object_set_new(j, "unique_items", json_boolean(a->unique_items));
        json_object_set_new(j, "required", json_boolean(a->required));
        json_object_set_new(j, "generate", json_boolean(a->generate));
        json_object_set_new(j, "title", jstr(a->title));
        json_object_set_new(j, "description", jstr(a->description));
        json_object_set_new(j, "parent_array", a->parent_array >= 0 ? json_integer(a->parent_array) : json_null());
        json_object_set_new(j, "first_field", json_integer((json_int_t)a->first_field));
        json_object_set_new(j, "n_fields", json_integer((json_int_t)a->n_fields));
        json_object_set_new(j, "fingerprint", json_string(a->fingerprint));
        json_array_append_new(arrays, j);
    }
    for (size_t i = 0; i < p->n_objects; i++) {
        const dg_object_plan *o = &p->objects[i];
        json_t *j = json_object();
        json_object_set_new(j, "path", dg_path_json(&o->path));
        json_object_set_new(j, "pointer", json_string(o->pointer));
        json_object_set_new(j, "schema_loc", json_string(o->schema_loc));
        json_object_set_new(j, "required", json_boolean(o->required));
        json_object_set_new(j, "additional_properties", json_boolean(o->additional_properties));
        json_object_set_new(j, "n_properties", json_integer((json_int_t)o->n_properties));
        json_object_set_new(j, "parent_array", o->parent_array >= 0 ? json_integer(o->parent_array) : json_null());
        json_object_set_new(j, "first_field", json_integer((json_int_t)o->first_field));
        json_object_set_new(j, "n_fields", json_integer((json_int_t)o->n_fields));
        json_object_set_new(j, "title", jstr(o->title));
        json_object_set_new(j, "description", jstr(o->description));
        json_array_append_new(objects, j);
    }
    json_t *j = json_object();
    json_object_set_new(j, "fingerprint", json_string(p->fingerprint));
    json_object_set_new(j, "fields", fields);
    json_object_set_new(j, "arrays", arrays);
    json_object_set_new(j, "objects", objects);
    return j;
}
