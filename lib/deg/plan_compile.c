/* plan_compile.c - schema -> fill plan (deg contract §3, §4, §6): pass 2 (build).
 *
 * Walks from the root through properties (in schema order), array items and local
 * $refs, and turns every leaf into a dg_field_plan by the §3 table. Pass 1
 * (schema_check.c) has already checked each subschema's own keywords; this pass adds
 * the checks that depend on where a subschema is used. The input is never modified:
 * $ref sibling annotations are applied through an overlay stack, not by copying. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/grow.h"
#include "base/status.h"
#include "deg/plan.h"
#include "deg/plan_internal.h"
#include "deg/schema_check.h"

/* A $ref node or a nullable anyOf/oneOf node whose annotations override its target. */
typedef struct overlay {
    const json_t *node;
    const char *loc;
} overlay;

typedef struct build {
    const json_t *root;
    dg_draft draft;
    dg_errlist *errs;
    dg_plan *plan;
    size_t cap_fields, cap_arrays, cap_objects;
    size_t n_nodes;
    bool too_big;
    /* current path */
    char *seg[DG_SCHEMA_MAX_DEPTH + 8];
    size_t n_seg;
    /* ancestors (for recursive $ref) */
    const json_t *anc[DG_SCHEMA_MAX_DEPTH + 8];
    size_t n_anc;
    overlay ov[DG_SCHEMA_MAX_DEPTH + 8];
    size_t n_ov;
    bool oom;
} build;

/* Per-use context of a subschema. */
typedef struct use {
    bool required;
    bool nullable;           /* from an enclosing nullable anyOf/oneOf */
    int32_t parent_array;
    bool gen_from_array;     /* item of an x-generate array */
    const json_t *gen_array_max_tokens;
    bool is_root;
    int depth;
} use;

static const json_t *lookup(build *B, const json_t *node, const char *key, const char **loc,
                            const char *node_loc)
{
    for (size_t i = 0; i < B->n_ov; i++) {
        const json_t *v = json_object_get(B->ov[i].node, key);
        if (v) {
            if (loc) *loc = B->ov[i].loc;
            return v;
        }
    }
    if (loc) *loc = node_loc;
    return json_object_get(node, key);
}

static char *xstrdup(build *B, const char *s)
{
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) B->oom = true;
    return d;
}

static bool grow(build *B, void **p, size_t *cap, size_t n, size_t elem)
{
    size_t old = *cap;
    if (dg_grow(p, cap, n + 1, elem) != DEG_OK) {
        B->oom = true;
        return false;
    }
    memset((char *)*p + old * elem, 0, (*cap - old) * elem);
    return true;
}

static bool count_node(build *B, const char *loc)
{
    if (++B->n_nodes > DG_SCHEMA_MAX_NODES) {
        if (!B->too_big)
            dg_err_add(B->errs, loc, "the schema expands to more than %d fields, arrays and "
                       "objects (deg's limit)", DG_SCHEMA_MAX_NODES);
        B->too_big = true;
        return false;
    }
    return true;
}

static void set_path(build *B, dg_path *path, char **pointer)
{
    path->n = B->n_seg;
    path->seg = calloc(B->n_seg ? B->n_seg : 1, sizeof(char *));
    if (!path->seg) {
        B->oom = true;
        return;
    }
    for (size_t i = 0; i < B->n_seg; i++) path->seg[i] = B->seg[i] ? xstrdup(B, B->seg[i]) : NULL;
    *pointer = dg_path_display(path);
    if (!*pointer) B->oom = true;
}

static char *ann_string(build *B, const json_t *node, const char *key, const char *loc)
{
    const json_t *v = lookup(B, node, key, NULL, loc);
    return json_is_string(v) ? xstrdup(B, json_string_value(v)) : NULL;
}

static void fill_constraints(build *B, const json_t *node, dg_constraints *c)
{
    c->min_length = c->max_length = -1;
    c->json = json_object();
    static const char *const keys[] = {"minLength", "maxLength", "pattern", "minimum",
                                       "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                       "multipleOf", NULL};
    for (int i = 0; keys[i]; i++) {
        json_t *v = json_object_get(node, keys[i]);
        if (!v || json_is_boolean(v)) continue; /* draft-04 boolean exclusives: below */
        json_object_set_new(c->json, keys[i], json_deep_copy(v));
    }
    if (B->draft == DG_DRAFT4) {
        if (json_is_true(json_object_get(node, "exclusiveMinimum")) &&
            json_object_get(node, "minimum")) {
            json_object_set(c->json, "exclusiveMinimum", json_object_get(c->json, "minimum"));
            json_object_del(c->json, "minimum");
        }
        if (json_is_true(json_object_get(node, "exclusiveMaximum")) &&
            json_object_get(node, "maximum")) {
            json_object_set(c->json, "exclusiveMaximum", json_object_get(c->json, "maximum"));
            json_object_del(c->json, "maximum");
        }
    }
    int64_t x;
    if (dg_json_is_integer(json_object_get(c->json, "minLength"), B->draft, &x)) c->min_length = x;
    if (dg_json_is_integer(json_object_get(c->json, "maxLength"), B->draft, &x)) c->max_length = x;
    json_t *p = json_object_get(c->json, "pattern");
    c->pattern = json_is_string(p) ? json_string_value(p) : NULL;
#define NUM(kw, has, val)                                   \
    do {                                                    \
        json_t *v_ = json_object_get(c->json, kw);          \
        if (dg_json_is_number(v_)) {                        \
            c->has = true;                                  \
            c->val = dg_json_number(v_);                    \
        }                                                   \
    } while (0)
    NUM("minimum", has_minimum, minimum);
    NUM("maximum", has_maximum, maximum);
    NUM("exclusiveMinimum", has_exclusive_minimum, exclusive_minimum);
    NUM("exclusiveMaximum", has_exclusive_maximum, exclusive_maximum);
    NUM("multipleOf", has_multiple_of, multiple_of);
#undef NUM
}

static dg_format format_of(const json_t *node)
{
    json_t *f = json_object_get(node, "format");
    if (!json_is_string(f)) return DG_FORMAT_NONE;
    const char *s = json_string_value(f);
    if (!strcmp(s, "date")) return DG_FORMAT_DATE;
    if (!strcmp(s, "date-time")) return DG_FORMAT_DATE_TIME;
    if (!strcmp(s, "email")) return DG_FORMAT_EMAIL;
    if (!strcmp(s, "uri")) return DG_FORMAT_URI;
    if (!strcmp(s, "uuid")) return DG_FORMAT_UUID;
    return DG_FORMAT_NONE;
}

static dg_type type_from_name(const char *s)
{
    if (!strcmp(s, "string")) return DG_TYPE_STRING;
    if (!strcmp(s, "integer")) return DG_TYPE_INTEGER;
    if (!strcmp(s, "number")) return DG_TYPE_NUMBER;
    if (!strcmp(s, "boolean")) return DG_TYPE_BOOLEAN;
    return DG_TYPE_ANY;
}

static dg_type type_of_value(const json_t *v)
{
    if (json_is_string(v)) return DG_TYPE_STRING;
    if (json_is_integer(v)) return DG_TYPE_INTEGER;
    if (json_is_real(v)) return DG_TYPE_NUMBER;
    if (json_is_boolean(v)) return DG_TYPE_BOOLEAN;
    return DG_TYPE_ANY;
}

/* New leaf at the current path with the common fields filled. */
static dg_field_plan *new_leaf(build *B, const json_t *node, const char *loc, const use *u,
                               dg_mode mode, bool nullable)
{
    dg_plan *P = B->plan;
    if (!count_node(B, loc)) return NULL;
    if (!grow(B, (void **)&P->fields, &B->cap_fields, P->n_fields, sizeof *P->fields))
        return NULL;
    dg_field_plan *f = &P->fields[P->n_fields++];
    set_path(B, &f->path, &f->pointer);
    f->schema_loc = xstrdup(B, loc);
    f->mode = mode;
    f->required = u->required;
    f->nullable = nullable;
    f->on_null = nullable ? DG_ON_NULL_NULL : u->required ? DG_ON_NULL_FORBID : DG_ON_NULL_OMIT;
    f->title = ann_string(B, node, "title", loc);
    f->description = ann_string(B, node, "description", loc);
    f->array = u->parent_array;
    for (size_t i = 0; i < B->n_seg; i++) f->depth_items += B->seg[i] == NULL;
    f->format = format_of(node);
    fill_constraints(B, node, &f->constraints);
    return f;
}

static void set_options(build *B, dg_field_plan *f, json_t *options, json_t *descs)
{
    f->options = options;
    f->n_options = json_array_size(options);
    f->option_descriptions = calloc(f->n_options ? f->n_options : 1, sizeof(char *));
    if (!f->option_descriptions) {
        B->oom = true;
        return;
    }
    for (size_t i = 0; i < f->n_options; i++) {
        json_t *d = descs ? json_array_get(descs, i) : NULL;
        f->option_descriptions[i] = json_is_string(d) ? xstrdup(B, json_string_value(d)) : NULL;
    }
    /* JSON type of the options: one type, integer+number -> number, else any. */
    dg_type t = DG_TYPE_ANY;
    bool first = true;
    for (size_t i = 0; i < f->n_options; i++) {
        json_t *o = json_array_get(options, i);
        if (json_is_null(o)) continue;
        dg_type ot = type_of_value(o);
        if (first) t = ot;
        else if (t != ot) {
            bool num = (t == DG_TYPE_INTEGER || t == DG_TYPE_NUMBER) &&
                       (ot == DG_TYPE_INTEGER || ot == DG_TYPE_NUMBER);
            t = num ? DG_TYPE_NUMBER : DG_TYPE_ANY;
        }
        first = false;
    }
    if (f->type == DG_TYPE_ANY) f->type = t;
}

/* x-max-tokens / x-levels / x-generate placement (pass 2: they depend on the mode). */
static void check_x_max_tokens(build *B, const json_t *node, const char *loc, bool generate,
                               dg_field_plan *f, const use *u)
{
    const char *xl;
    const json_t *mt = lookup(B, node, "x-max-tokens", &xl, loc);
    if (!mt && u->gen_array_max_tokens) mt = u->gen_array_max_tokens;
    if (!mt) return;
    if (!generate) {
        char *kl = dg_loc_key(xl, "x-max-tokens");
        dg_err_add(B->errs, kl, "x-max-tokens applies only where x-generate is true");
        free(kl);
        return;
    }
    if (f && json_is_integer(mt) && json_integer_value(mt) >= 1 &&
        json_integer_value(mt) <= INT32_MAX)
        f->max_tokens = (int32_t)json_integer_value(mt);
}

int dg_level_count_range(const char *s, size_t *lo, size_t *hi)
{
    static const struct {
        const char *prefix;
        int exclusive; /* "more than 5": the count is 6 or more */
    } OPEN[] = {{"at least ", 0}, {"more than ", 1}, {"over ", 1}, {">= ", 0}, {"> ", 1}};
    static const char *const TO[] = {"to ", "-", "\xe2\x80\x93", ".."};
    static const char *const MORE[] = {"or more", "and more", "or above", "and above", "+"};
    static const char *const ZERO[] = {"none", "zero", "no", "nothing"};
    int open = 0, exclusive = 0;
    while (*s == ' ') s++;
    for (size_t k = 0; k < sizeof ZERO / sizeof ZERO[0]; k++) {
        size_t n = strlen(ZERO[k]);
        const char *r = s + n;
        if (strncasecmp(s, ZERO[k], n)) continue;
        while (*r == ' ') r++;
        if (*r == 0 || *r == ':') { /* "none", "Zero: nothing listed" */
            *lo = *hi = 0;
            return 1;
        }
    }
    for (size_t k = 0; k < sizeof OPEN / sizeof OPEN[0] && !open; k++)
        if (!strncasecmp(s, OPEN[k].prefix, strlen(OPEN[k].prefix))) {
            open = 1;
            exclusive = OPEN[k].exclusive;
            s += strlen(OPEN[k].prefix);
        }
    size_t n = 0, d = 0;
    for (; *s >= '0' && *s <= '9' && d < 9; s++, d++) n = n * 10 + (size_t)(*s - '0');
    if (d == 0 || (*s >= '0' && *s <= '9')) return 0;
    *lo = exclusive ? n + 1 : n;
    *hi = open ? SIZE_MAX : n;
    while (*s == ' ') s++;
    if (!open) {
        for (size_t k = 0; k < sizeof TO / sizeof TO[0]; k++) {
            if (strncmp(s, TO[k], strlen(TO[k]))) continue;
            s += strlen(TO[k]);
            while (*s == ' ') s++;
            size_t m = 0, e = 0;
            for (; *s >= '0' && *s <= '9' && e < 9; s++, e++) m = m * 10 + (size_t)(*s - '0');
            if (e == 0 || m < n || (*s >= '0' && *s <= '9')) return 0;
            *hi = m;
            break;
        }
        for (size_t k = 0; k < sizeof MORE / sizeof MORE[0] && *hi == n; k++)
            if (!strncasecmp(s, MORE[k], strlen(MORE[k]))) {
                *hi = SIZE_MAX;
                s += strlen(MORE[k]);
            }
    }
    while (*s == ' ') s++;
    return *s == 0 || *s == ':';
}

/* f->level_count when every level of score f is labelled with a count range. */
static void count_ranges(build *B, dg_field_plan *f)
{
    size_t r[DG_SCORE_MAX_LEVELS][2];
    for (size_t i = 0; i < f->n_levels; i++)
        if (i >= DG_SCORE_MAX_LEVELS || !f->level_labels[i] ||
            !dg_level_count_range(f->level_labels[i], &r[i][0], &r[i][1]))
            return;
    f->level_count = malloc(f->n_levels * sizeof *f->level_count);
    if (!f->level_count) B->oom = true;
    else memcpy(f->level_count, r, f->n_levels * sizeof *f->level_count);
}

static void check_x_levels(build *B, const json_t *node, const char *loc, dg_field_plan *f)
{
    const char *xl;
    const json_t *lv = lookup(B, node, "x-levels", &xl, loc);
    if (!lv) return;
    char *kl = dg_loc_key(xl, "x-levels");
    if (!f || f->mode != DG_MODE_SCORE) {
        dg_err_add(B->errs, kl, "x-levels applies only to an integer score field (bounds "
                   "admitting 2..%d values)", DG_SCORE_MAX_LEVELS);
        free(kl);
        return;
    }
    if (json_is_object(lv)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)lv, k, v)
        {
            char *end;
            long long x = strtoll(k, &end, 10);
            char canon[32];
            snprintf(canon, sizeof canon, "%lld", x);
            size_t i = 0;
            bool ok = *k && *end == '\0' && !strcmp(canon, k);
            for (; ok && i < f->n_levels; i++)
                if (f->levels[i] == x) break;
            if (!ok || i == f->n_levels) {
                char *ll = dg_loc_key(kl, k);
                dg_err_add(B->errs, ll, "x-levels key \"%.100s\" is not one of the field's "
                           "levels", k);
                free(ll);
                continue;
            }
            if (json_is_string(v) && json_string_length(v) > 0)
                f->level_labels[i] = xstrdup(B, json_string_value(v));
        }
        if (f->level_labels) count_ranges(B, f);
    }
    free(kl);
}

static bool x_generate(const json_t *node)
{
    return json_is_true(json_object_get(node, "x-generate"));
}

static void gen_misuse(build *B, const json_t *node, const char *loc, const char *what)
{
    if (!x_generate(node)) return;
    char *kl = dg_loc_key(loc, "x-generate");
    dg_err_add(B->errs, kl, "x-generate applies only to type string (no enum, no format) or "
               "an array of plain strings, not %s", what);
    free(kl);
}

static void build_node(build *B, const json_t *node, const char *loc, use u);

static void build_choice_leaf(build *B, const json_t *node, const char *loc, const use *u,
                              json_t *options, json_t *descs, bool nullable, const char *tname)
{
    dg_field_plan *f = new_leaf(B, node, loc, u, DG_MODE_CHOICE, nullable);
    if (!f) {
        json_decref(options);
        return;
    }
    f->type = tname ? type_from_name(tname) : DG_TYPE_ANY;
    set_options(B, f, options, descs);
    check_x_max_tokens(B, node, loc, false, f, u);
    check_x_levels(B, node, loc, f);
}

static void build_object(build *B, const json_t *node, const char *loc, const use *u)
{
    dg_plan *P = B->plan;
    if (!count_node(B, loc)) return;
    if (!grow(B, (void **)&P->objects, &B->cap_objects, P->n_objects, sizeof *P->objects))
        return;
    size_t oi = P->n_objects++;
    dg_object_plan *o = &P->objects[oi];
    set_path(B, &o->path, &o->pointer);
    o->schema_loc = xstrdup(B, loc);
    o->required = u->required;
    o->parent_array = u->parent_array;
    o->title = ann_string(B, node, "title", loc);
    o->description = ann_string(B, node, "description", loc);
    o->additional_properties = !json_is_false(json_object_get(node, "additionalProperties"));
    o->first_field = P->n_fields;
    json_t *props = json_object_get(node, "properties");
    json_t *req = json_object_get(node, "required");
    char *pl = dg_loc_key(loc, "properties");
    /* Overlays belong to this object, not to its properties. */
    size_t saved_ov = B->n_ov;
    B->n_ov = 0;
    overlay saved[DG_SCHEMA_MAX_DEPTH + 8];
    memcpy(saved, B->ov, saved_ov * sizeof *saved);
    const char *k;
    json_t *v;
    size_t n_props = 0;
    json_object_foreach(props, k, v)
    {
        if (B->too_big || B->oom) break;
        bool required = false;
        for (size_t i = 0; i < json_array_size(req); i++)
            if (json_is_string(json_array_get(req, i)) &&
                !strcmp(json_string_value(json_array_get(req, i)), k))
                required = true;
        char *cl = dg_loc_key(pl, k);
        B->seg[B->n_seg++] = (char *)k;
        use cu = {.required = required, .parent_array = u->parent_array, .depth = u->depth + 1};
        build_node(B, v, cl, cu);
        B->n_seg--;
        free(cl);
        n_props++;
    }
    memcpy(B->ov, saved, saved_ov * sizeof *saved);
    B->n_ov = saved_ov;
    free(pl);
    o = &P->objects[oi]; /* fields/arrays may have grown, objects too */
    o->n_properties = n_props;
    o->n_fields = P->n_fields - o->first_field;
}

/* The resolved schema behind items (through $refs), for the x-generate rule. */
static const json_t *resolve_items(build *B, const json_t *items)
{
    for (int hops = 0; json_is_object(items) && hops < DG_SCHEMA_MAX_DEPTH; hops++) {
        json_t *r = json_object_get(items, "$ref");
        if (!json_is_string(r)) return items;
        char why[256], *tl = NULL;
        items = dg_ref_resolve(B->root, json_string_value(r), &tl, why, sizeof why);
        free(tl);
    }
    return items;
}

static void build_array(build *B, const json_t *node, const char *loc, const use *u)
{
    dg_plan *P = B->plan;
    if (!count_node(B, loc)) return;
    if (!grow(B, (void **)&P->arrays, &B->cap_arrays, P->n_arrays, sizeof *P->arrays)) return;
    size_t ai = P->n_arrays++;
    dg_array_plan *a = &P->arrays[ai];
    set_path(B, &a->path, &a->pointer);
    a->schema_loc = xstrdup(B, loc);
    a->required = u->required;
    a->parent_array = u->parent_array;
    a->title = ann_string(B, node, "title", loc);
    a->description = ann_string(B, node, "description", loc);
    int64_t x;
    a->min_items = dg_json_is_integer(json_object_get(node, "minItems"), B->draft, &x) ? x : 0;
    a->max_items = dg_json_is_integer(json_object_get(node, "maxItems"), B->draft, &x) ? x : -1;
    a->unique_items = json_is_true(json_object_get(node, "uniqueItems"));
    a->first_field = P->n_fields;

    json_t *items = json_object_get(node, "items");
    const json_t *mt = lookup(B, node, "x-max-tokens", NULL, loc);
    bool gen = x_generate(node);
    if (gen) {
        const json_t *it = resolve_items(B, items);
        dg_typeinfo t = json_is_object(it) ? dg_type_info(it) : (dg_typeinfo){0};
        bool plain = t.valid && t.base && !strcmp(t.base, "string") && !t.nullable &&
                     !json_object_get(it, "enum") && !json_object_get(it, "format") &&
                     !json_object_get(it, "anyOf") && !json_object_get(it, "oneOf");
        if (!plain) {
            char *kl = dg_loc_key(loc, "x-generate");
            dg_err_add(B->errs, kl, "x-generate on an array needs items of plain type string "
                       "(no enum, no format, not nullable)");
            free(kl);
            gen = false;
        }
    } else if (mt) {
        const char *xl;
        lookup(B, node, "x-max-tokens", &xl, loc);
        char *kl = dg_loc_key(xl, "x-max-tokens");
        dg_err_add(B->errs, kl, "x-max-tokens applies only where x-generate is true");
        free(kl);
    }
    a->generate = gen;
    if (!items) return; /* reported by pass 1 */

    size_t saved_ov = B->n_ov;
    overlay saved[DG_SCHEMA_MAX_DEPTH + 8];
    memcpy(saved, B->ov, saved_ov * sizeof *saved);
    B->n_ov = 0;
    char *il = dg_loc_key(loc, "items");
    B->seg[B->n_seg++] = NULL;
    use cu = {.required = true, .parent_array = (int32_t)ai, .gen_from_array = gen,
              .gen_array_max_tokens = gen ? mt : NULL, .depth = u->depth + 1};
    build_node(B, items, il, cu);
    B->n_seg--;
    free(il);
    memcpy(B->ov, saved, saved_ov * sizeof *saved);
    B->n_ov = saved_ov;
    a = &P->arrays[ai];
    a->n_fields = P->n_fields - a->first_field;
}

static void build_scalar(build *B, const json_t *node, const char *loc, const use *u,
                         const char *base, bool nullable)
{
    if (!strcmp(base, "boolean")) {
        gen_misuse(B, node, loc, "boolean");
        if (nullable) {
            json_t *opts = json_pack("[b,b,n]", 1, 0);
            build_choice_leaf(B, node, loc, u, opts, NULL, true, "boolean");
        } else {
            dg_field_plan *f = new_leaf(B, node, loc, u, DG_MODE_NOUL, false);
            if (f) f->type = DG_TYPE_BOOLEAN;
            check_x_max_tokens(B, node, loc, false, f, u);
            check_x_levels(B, node, loc, f);
        }
        return;
    }
    if (!strcmp(base, "integer") || !strcmp(base, "number")) {
        gen_misuse(B, node, loc, base);
        bool is_int = !strcmp(base, "integer");
        dg_bounds b = dg_bounds_of(node, B->draft);
        int64_t lv[DG_SCORE_MAX_LEVELS + 1];
        int64_t n = 0;
        if (is_int && b.has_lo && b.has_hi) n = dg_integer_levels(&b, lv, DG_SCORE_MAX_LEVELS);
        bool score = n >= 2 && n <= DG_SCORE_MAX_LEVELS;
        dg_field_plan *f = new_leaf(B, node, loc, u, score ? DG_MODE_SCORE : DG_MODE_NUMBER,
                                    nullable);
        if (!f) return;
        f->type = is_int ? DG_TYPE_INTEGER : DG_TYPE_NUMBER;
        if (score) {
            f->n_levels = (size_t)n;
            f->levels = malloc((size_t)n * sizeof *f->levels);
            f->level_labels = calloc((size_t)n, sizeof(char *));
            if (!f->levels || !f->level_labels) B->oom = true;
            else memcpy(f->levels, lv, (size_t)n * sizeof *lv);
            f->null_outcome = nullable;
        }
        check_x_max_tokens(B, node, loc, false, f, u);
        check_x_levels(B, node, loc, f);
        return;
    }
    if (!strcmp(base, "string")) {
        bool gen = x_generate(node) || u->gen_from_array;
        if (x_generate(node) && (json_object_get(node, "format") || nullable)) {
            char *kl = dg_loc_key(loc, "x-generate");
            dg_err_add(B->errs, kl, "x-generate applies only to a plain type string: not with "
                       "format%s", nullable ? ", not nullable" : "");
            free(kl);
            gen = false;
        }
        dg_format fmt = format_of(node);
        dg_mode m = gen ? DG_MODE_GENERATE
                        : (fmt == DG_FORMAT_DATE || fmt == DG_FORMAT_DATE_TIME) ? DG_MODE_DATE
                                                                                : DG_MODE_SPAN;
        dg_field_plan *f = new_leaf(B, node, loc, u, m, nullable);
        if (!f) return;
        f->type = DG_TYPE_STRING;
        check_x_max_tokens(B, node, loc, gen, f, u);
        check_x_levels(B, node, loc, f);
        return;
    }
}

static bool is_ancestor(build *B, const json_t *n)
{
    for (size_t i = 0; i < B->n_anc; i++)
        if (B->anc[i] == n) return true;
    return false;
}

/* A node with $ref: build its target with this node as an overlay (its annotations
 * win), unless the target is not a schema or contains this node. */
static void build_ref(build *B, const json_t *node, const char *loc, use u, const json_t *ref)
{
    if (!json_is_string(ref)) return;
    char why[512], *tloc = NULL;
    const json_t *target = dg_ref_resolve(B->root, json_string_value(ref), &tloc, why,
                                          sizeof why);
    if (!target) return; /* reported by pass 1 */
    if (!json_is_object(target) && !json_is_boolean(target)) {
        char *rl = dg_loc_key(loc, "$ref");
        dg_err_add(B->errs, rl, "$ref \"%.200s\" points to a JSON value that is not a "
                   "schema", json_string_value(ref));
        free(rl);
        free(tloc);
        return;
    }
    if (is_ancestor(B, target)) {
        char *rl = dg_loc_key(loc, "$ref");
        dg_err_add(B->errs, rl, "recursive $ref: \"%.200s\" refers to a schema that "
                   "contains this one", json_string_value(ref));
        free(rl);
        free(tloc);
        return;
    }
    B->ov[B->n_ov++] = (overlay){node, loc};
    use cu = u;
    cu.depth++;
    build_node(B, target, tloc, cu);
    B->n_ov--;
    free(tloc);
}

/* A choice node (anyOf/oneOf of const/enum branches, keyword bkw): its options (null
 * for a null branch) with their branch descriptions. */
static void build_choice_branches(build *B, const json_t *node, const char *loc, use u,
                                  const char *bkw)
{
    json_t *br = json_object_get(node, bkw);
    json_t *opts = json_array(), *descs = json_array();
    bool nul = false;
    for (size_t i = 0; i < json_array_size(br); i++) {
        json_t *b = json_array_get(br, i);
        json_t *d = json_object_get(b, "description");
        json_t *dv = json_is_string(d) ? d : json_null();
        if (dg_branch_is_null(b)) {
            json_array_append_new(opts, json_null());
            json_array_append(descs, dv);
            nul = true;
        } else if (json_object_get(b, "const")) {
            json_array_append(opts, json_object_get(b, "const"));
            json_array_append(descs, dv);
        } else {
            json_t *e = json_object_get(b, "enum");
            for (size_t j = 0; j < json_array_size(e); j++) {
                json_array_append(opts, json_array_get(e, j));
                json_array_append(descs, dv);
                nul = nul || json_is_null(json_array_get(e, j));
            }
        }
    }
    if (u.nullable && !nul) { /* [choice, {type: null}] behind a nullable anyOf */
        json_array_append_new(opts, json_null());
        json_array_append_new(descs, json_null());
    }
    build_choice_leaf(B, node, loc, &u, opts, descs, nul || u.nullable, NULL);
    json_decref(descs);
}

static void build_node(build *B, const json_t *node, const char *loc, use u)
{
    if (B->too_big || B->oom) return;
    if (u.depth > DG_SCHEMA_MAX_DEPTH) {
        dg_err_add(B->errs, loc, "schema nested deeper than %d levels (deg's limit)",
                   DG_SCHEMA_MAX_DEPTH);
        return;
    }
    if (json_is_boolean(node)) {
        dg_err_add(B->errs, loc, "boolean schema (%s) is not supported here: deg needs a "
                   "typed schema for every field", json_is_true(node) ? "true" : "false");
        return;
    }
    if (!json_is_object(node)) return; /* pass 1 reported the non-schema value */
    B->anc[B->n_anc++] = node;

    json_t *ref = json_object_get(node, "$ref");
    const char *bkw;
    size_t xi = 0;
    dg_branch_form form;
    dg_typeinfo t;
    json_t *en;

    if (ref) {
        build_ref(B, node, loc, u, ref);
        goto out;
    }

    form = dg_branch_form_of(node, &bkw, &xi);
    if (form == DG_FORM_INVALID) goto out; /* reported by pass 1 */
    if (form == DG_FORM_NULLABLE) {
        json_t *br = json_object_get(node, bkw);
        char *bl = dg_loc_key(loc, bkw), *il = dg_loc_index(bl, xi);
        B->ov[B->n_ov++] = (overlay){node, loc};
        use cu = u;
        cu.nullable = true;
        cu.depth++;
        build_node(B, json_array_get(br, xi), il, cu);
        B->n_ov--;
        free(il);
        free(bl);
        goto out;
    }
    if (u.is_root) {
        t = dg_type_info(node);
        if (!(t.valid && t.base && !strcmp(t.base, "object") && !t.nullable)) {
            dg_err_add(B->errs, "", "the root schema must be type: object");
            goto out;
        }
    }
    if (form == DG_FORM_CHOICE) {
        build_choice_branches(B, node, loc, u, bkw);
        goto out;
    }

    t = dg_type_info(node);
    en = json_object_get(node, "enum");
    if (t.present && !t.valid) goto out; /* reported by pass 1 */
    if (en) {
        if (!json_is_array(en)) goto out;
        gen_misuse(B, node, loc, "an enum field");
        bool nul = u.nullable;
        for (size_t i = 0; i < json_array_size(en); i++) nul = nul || json_is_null(json_array_get(en, i));
        json_t *opts = json_deep_copy(en);
        if (u.nullable) {
            bool has_null = false;
            for (size_t i = 0; i < json_array_size(opts); i++)
                has_null = has_null || json_is_null(json_array_get(opts, i));
            if (!has_null) json_array_append_new(opts, json_null());
        }
        build_choice_leaf(B, node, loc, &u, opts, NULL, nul, t.base);
        goto out;
    }
    if (!t.present) {
        dg_err_add(B->errs, loc, "missing \"type\": deg needs each field's JSON type (or an "
                   "enum, or anyOf/oneOf options)");
        goto out;
    }
    if (!t.base) goto out; /* "null" alone: pass 1 */
    bool nullable = t.nullable || u.nullable;
    if (!strcmp(t.base, "object")) {
        gen_misuse(B, node, loc, "object");
        if (nullable) {
            if (!t.nullable)
                dg_err_add(B->errs, loc, "nullable objects are not supported");
            goto out;
        }
        build_object(B, node, loc, &u);
    } else if (!strcmp(t.base, "array")) {
        if (nullable) {
            if (!t.nullable)
                dg_err_add(B->errs, loc, "nullable arrays are not supported");
            goto out;
        }
        build_array(B, node, loc, &u);
    } else {
        build_scalar(B, node, loc, &u, t.base, nullable);
    }
out:
    B->n_anc--;
}

deg_status dg_plan_compile(const json_t *schema, dg_plan **out, json_t **errors)
{
    *out = NULL;
    if (errors) *errors = NULL;
    if (!schema) return dg_fail(DEG_ERR_ARG, "dg_plan_compile: schema is NULL");
    dg_errlist E = {json_array(), false};
    dg_plan *P = calloc(1, sizeof *P);
    if (!E.list || !P) {
        json_decref(E.list);
        free(P);
        return dg_fail(DEG_ERR_NOMEM, "compile schema: out of memory");
    }
    dg_draft draft = DG_DRAFT2020;
    if (!json_is_object(schema)) {
        dg_err_add(&E, "", "the root schema must be type: object (got a JSON %s)",
                   json_is_array(schema) ? "array" : json_is_boolean(schema) ? "boolean"
                                                                            : "scalar");
    } else {
        dg_schema_draft(schema, &draft, &E);
        dg_schema_lint(schema, draft, &E);
        build B = {.root = schema, .draft = draft, .errs = &E, .plan = P};
        use u = {.required = true, .parent_array = -1, .is_root = true};
        build_node(&B, schema, "", u);
        if (B.oom) {
            dg_plan_free(P);
            json_decref(E.list);
            return dg_fail(DEG_ERR_NOMEM, "compile schema: out of memory");
        }
    }
    if (json_array_size(E.list) > 0) {
        dg_err_dedupe(&E);
        json_t *e0 = json_array_get(E.list, 0);
        deg_status s = dg_fail(DEG_ERR_SCHEMA, "invalid schema: %zu problem%s; first at \"%s\": %s",
                               json_array_size(E.list), json_array_size(E.list) == 1 ? "" : "s",
                               json_string_value(json_object_get(e0, "loc")),
                               json_string_value(json_object_get(e0, "msg")));
        if (errors) *errors = E.list;
        else json_decref(E.list);
        dg_plan_free(P);
        return s;
    }
    json_decref(E.list);
    P->schema = json_incref((json_t *)schema);
    deg_status s = dg_plan_fingerprints(P);
    if (s != DEG_OK) {
        dg_plan_free(P);
        return s;
    }
    *out = P;
    return DEG_OK;
}
