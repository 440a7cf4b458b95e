/* Schema compile time (deg contract §6: compile_schema is run once per request
 * unless its plan is cached by fingerprint).
 *
 * A realistic 50-leaf support-ticket schema: enums, oneOf options with
 * descriptions, booleans, score scales with x-levels, numbers, dates, formatted and
 * patterned strings, a $ref'd address object, an array of line-item objects, nullable
 * fields and x-generate text. Reports the mean wall time of deg_plan_compile (JSON
 * text in, plan with fingerprints out), of the compile from parsed JSON alone, and of
 * deg_plan_to_json. Usage: bench_schema [reps] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "deg.h"
#include "deg/plan.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU time of this process: on a shared, oversubscribed machine the wall time
 * mostly measures the other processes. */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static char *build_schema(void)
{
    json_t *props = json_object(), *defs = json_object();
    char name[64];
    json_object_set_new(defs, "Address", json_pack(
        "{s:s,s:{s:{s:s},s:{s:s},s:{s:s,s:s},s:{s:[s,s]}},s:[s]}", "type", "object",
        "properties", "street", "type", "string", "city", "type", "string", "zip", "type",
        "string", "pattern", "^[0-9]{5}$", "country", "type", "string", "null",
        "required", "city"));
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "department_%d", i);
        json_object_set_new(props, name, json_pack("{s:s,s:[s,s,s,s]}", "description",
            "Which team handles the ticket", "enum", "billing", "tech", "sales", "other"));
    }
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "resolution_%d", i);
        json_object_set_new(props, name, json_pack("{s:[{s:s,s:s},{s:s,s:s},{s:s,s:s}]}",
            "oneOf", "const", "refund", "description", "money back", "const", "replace",
            "description", "send a new one", "const", "none", "description", "no action"));
    }
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "flag_%d", i);
        json_object_set_new(props, name, json_pack("{s:s,s:s}", "type", i % 2 ? "boolean" : "boolean",
                                                   "description", "Is the customer asking for it?"));
    }
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "score_%d", i);
        json_object_set_new(props, name, json_pack("{s:s,s:i,s:i,s:{s:s,s:s}}", "type", "integer",
            "minimum", 0, "maximum", 4, "x-levels", "0", "calm", "4", "furious"));
    }
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "amount_%d", i);
        json_object_set_new(props, name, json_pack("{s:[s,s],s:i}", "type", "number", "null",
                                                   "minimum", 0));
    }
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "date_%d", i);
        json_object_set_new(props, name, json_pack("{s:s,s:s}", "type", "string", "format",
                                                   i % 2 ? "date-time" : "date"));
    }
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "text_%d", i);
        json_object_set_new(props, name, json_pack("{s:s,s:s,s:i,s:s}", "type", "string",
            "format", i % 3 == 0 ? "email" : i % 3 == 1 ? "uri" : "uuid", "maxLength", 200,
            "title", "Identifier"));
    }
    json_object_set_new(props, "order_id", json_pack("{s:s,s:s}", "type", "string", "pattern",
                                                     "^[A-Z]{2}-[0-9]{4,8}$"));
    json_object_set_new(props, "ship_to", json_pack("{s:s,s:s}", "$ref", "#/$defs/Address",
                                                    "description", "Where to ship"));
    json_object_set_new(props, "bill_to", json_pack("{s:s}", "$ref", "#/$defs/Address"));
    json_object_set_new(props, "line_items", json_pack(
        "{s:s,s:i,s:{s:s,s:{s:{s:s},s:{s:s,s:i,s:i},s:{s:s}},s:[s]}}", "type", "array",
        "maxItems", 20, "items", "type", "object", "properties", "name", "type", "string",
        "qty", "type", "integer", "minimum", 1, "maximum", 99, "price", "type", "number",
        "required", "name"));
    json_object_set_new(props, "summary", json_pack("{s:s,s:b,s:i,s:i}", "type", "string",
        "x-generate", 1, "maxLength", 300, "x-max-tokens", 80));
    json_object_set_new(props, "reply", json_pack("{s:s,s:b,s:i}", "type", "string",
        "x-generate", 1, "minLength", 20));
    json_object_set_new(props, "tags", json_pack("{s:s,s:b,s:{s:s}}", "type", "array",
        "x-generate", 1, "items", "type", "string"));
    json_t *schema = json_pack("{s:s,s:o,s:[s,s],s:o}", "type", "object", "properties", props,
                               "required", "order_id", "department_0", "$defs", defs);
    char *text = json_dumps(schema, JSON_COMPACT);
    json_decref(schema);
    return text;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 2000;
    if (reps < 1) reps = 1;
    char *text = build_schema();
    size_t len = strlen(text);
    deg_plan *plan = NULL;
    char *errs = NULL;
    if (deg_plan_compile(text, len, &plan, &errs) != DEG_OK) {
        fprintf(stderr, "bench schema does not compile: %s\n", errs ? errs : deg_errmsg());
        return 1;
    }
    size_t n_fields = deg_plan_num_fields(plan);
    deg_plan_free(plan);

    double t0 = now(), c0 = cpu_now();
    for (int i = 0; i < reps; i++) {
        deg_plan_compile(text, len, &plan, NULL);
        deg_plan_free(plan);
    }
    double t_text = (now() - t0) / reps, c_text = (cpu_now() - c0) / reps;

    json_t *parsed = json_loads(text, 0, NULL);
    t0 = now();
    for (int i = 0; i < reps; i++) {
        dg_plan *p = NULL;
        dg_plan_compile(parsed, &p, NULL);
        dg_plan_free(p);
    }
    double t_parsed = (now() - t0) / reps;

    deg_plan_compile(text, len, &plan, NULL);
    t0 = now();
    for (int i = 0; i < reps; i++) {
        char *js = NULL;
        deg_plan_to_json(plan, &js);
        deg_free(js);
    }
    double t_json = (now() - t0) / reps;
    deg_plan_free(plan);
    json_decref(parsed);

    printf("{\"bench\": \"schema_compile\", \"leaves\": %zu, \"schema_bytes\": %zu, "
           "\"reps\": %d, \"compile_text_us\": %.1f, \"compile_text_cpu_us\": %.1f, "
           "\"compile_parsed_us\": %.1f, \"plan_to_json_us\": %.1f}\n",
           n_fields, len, reps, t_text * 1e6, c_text * 1e6, t_parsed * 1e6, t_json * 1e6);
    free(text);
    return 0;
}
