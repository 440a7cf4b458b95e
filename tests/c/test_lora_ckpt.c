/* LoRA adapters of a fill checkpoint (include/lora.h "checkpoints", §12.7) on
 * the tiny random qwen3 with random heads: a checkpoint without adapters and
 * one with B = 0 adapters fill the same bytes; the selector runs decide rows
 * with "decide" and extract rows with "extract" (the raw head digests of one
 * kind move only when its adapter does); save + load round trip (same fill
 * bytes); bad deg.json["lora"] entries and adapter files. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_fixture.h"
#include "core_testutil.h"
#include "deg.h"
#include "lora.h"
#include "model/lora_internal.h"
#include "tiny_model.h"

static const char *REQ =
    "{\"context\": \"Order 4711 from ACME Corp, placed by jane.doe@example.com. The customer is "
    "angry about the late delivery and wants a refund.\", \"schema\": {\"type\": \"object\", "
    "\"properties\": {\"department\": {\"enum\": [\"billing\", \"shipping\", \"other\"]}, "
    "\"urgent\": {\"type\": \"boolean\"}, \"email\": {\"type\": [\"string\", \"null\"], "
    "\"format\": \"email\"}, \"company\": {\"type\": \"string\", \"maxLength\": 40}}, "
    "\"required\": [\"department\", \"urgent\", \"email\", \"company\"]}}";

/* The response without its wall-clock "timing" member. */
static char *fill_text(deg_ckpt *k)
{
    char *resp = NULL, *errs = NULL;
    cr_assert_eq(deg_fill(k, REQ, strlen(REQ), &resp, &errs), DEG_OK, "fill: %s", deg_errmsg());
    deg_free(errs);
    json_t *v = json_loads(resp, 0, NULL);
    cr_assert_not_null(json_object_get(v, "timing"));
    json_object_del(v, "timing");
    char *t = json_dumps(v, JSON_PRESERVE_ORDER | JSON_COMPACT);
    json_decref(v);
    deg_free(resp);
    return t;
}

/* The raw head digest of field name in a response. */
static char *raw_of(const char *resp, const char *name)
{
    json_t *v = json_loads(resp, 0, NULL);
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", name);
    json_t *raw = json_object_get(json_object_get(json_object_get(v, "meta"), ptr), "raw");
    cr_assert(json_is_string(raw), "no raw digest for %s in %s", name, resp);
    char *s = strdup(json_string_value(raw));
    json_decref(v);
    return s;
}

static int same_raw(const char *a, const char *b, const char *name)
{
    char *x = raw_of(a, name), *y = raw_of(b, name);
    int same = strcmp(x, y) == 0;
    free(x);
    free(y);
    return same;
}

/* Random values into adapter a's parameters (its A and B of every layer). */
static void randomize_adapter(deg_lora *l, int a)
{
    size_t n = deg_lora_n_params(l);
    float *w = malloc(n * 4);
    cr_assert_eq(deg_lora_get_params(l, w, n), DEG_OK);
    uint64_t s = 12345 + (uint64_t)a;
    size_t o0 = dg_lora_offset(l, a, 0, 0), o1 = a + 1 < l->p.n_adapters
                                                     ? dg_lora_offset(l, a + 1, 0, 0) : n;
    for (size_t i = o0; i < o1; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        w[i] = (float)(((double)(s >> 11) / 9007199254740992.0 - 0.5) * 0.4);
    }
    cr_assert_eq(deg_lora_set_params(l, w, n), DEG_OK);
    free(w);
}

Test(lora_ckpt, selector_fill_and_round_trip)
{
    char *dir = tu_mkdtemp(), *dir2 = tu_mkdtemp();
    char model[512];
    snprintf(model, sizeof model, "%s/tiny-qwen3", TINY_GOLDENS);
    deg_ckpt *k = tu_random_ckpt(model, 3, dir, NULL, -1);
    cr_expect_null(deg_ckpt_get_lora(k));
    cr_expect_eq(deg_ckpt_lora_adapter(k, DEG_HEAD_CHOICE), -1);
    char *base = fill_text(k);

    deg_lora_params p = deg_lora_default_params();
    p.rank = 4;
    cr_expect_eq(deg_ckpt_add_lora(k, &p, 7), DEG_ERR_ARG);
    cr_assert_eq(deg_ckpt_add_lora(k, &p, DEG_LORA_SELECT_KIND), DEG_OK, "%s", deg_errmsg());
    deg_lora *l = deg_ckpt_get_lora(k);
    cr_assert_not_null(l);
    cr_expect_eq(deg_lora_get_config(l).n_adapters, 2);
    cr_expect_eq(deg_ckpt_lora_adapter(k, DEG_HEAD_CHOICE), 0);
    cr_expect_eq(deg_ckpt_lora_adapter(k, DEG_HEAD_NOUL), 0);
    cr_expect_eq(deg_ckpt_lora_adapter(k, DEG_HEAD_EXTRACT), 1);
    cr_expect_eq(deg_ckpt_lora_adapter(k, DEG_HEAD_COUNT), 1);
    cr_expect_eq(deg_ckpt_lora_adapter(k, DEG_HEAD_ANCHOR), 1);
    cr_expect_eq(deg_ckpt_lora_adapter(k, 99), -1);

    /* B = 0: the same bytes as without adapters. */
    char *zero = fill_text(k);
    cr_expect_str_eq(zero, base, "B = 0 adapters changed the fill");

    /* Only "decide" trained: decide fields move, extract fields do not. */
    randomize_adapter(l, 0);
    char *dec = fill_text(k);
    cr_expect(!same_raw(dec, base, "department") && !same_raw(dec, base, "urgent"),
              "the decide adapter did not reach the decide rows");
    cr_expect(same_raw(dec, base, "email") && same_raw(dec, base, "company"),
              "the decide adapter reached extract rows");
    /* Then "extract" too: extract fields move. */
    randomize_adapter(l, 1);
    char *both = fill_text(k);
    cr_expect(same_raw(both, dec, "department") && same_raw(both, dec, "urgent"),
              "the extract adapter reached decide rows");
    cr_expect(!same_raw(both, dec, "email"), "the extract adapter did not reach extract rows");

    /* Save, reload: same adapters, same bytes. */
    cr_assert_eq(deg_ckpt_save(k, dir2, NULL, 0), DEG_OK, "%s", deg_errmsg());
    cr_expect_eq(deg_ckpt_save(k, dir2, "{\"lora\": 1}", 0), DEG_ERR_ARG);
    deg_ckpt *k2 = NULL;
    cr_assert_eq(deg_ckpt_load(dir2, model, &k2), DEG_OK, "%s", deg_errmsg());
    deg_ckpt_set_debug(k2, 1);
    deg_lora *l2 = deg_ckpt_get_lora(k2);
    cr_assert_not_null(l2);
    size_t n = deg_lora_n_params(l);
    cr_assert_eq(deg_lora_n_params(l2), n);
    float *a = malloc(n * 4), *b = malloc(n * 4);
    deg_lora_get_params(l, a, n);
    deg_lora_get_params(l2, b, n);
    cr_expect(memcmp(a, b, n * 4) == 0, "adapters changed by save + load");
    deg_lora_params p2 = deg_lora_get_config(l2);
    cr_expect(p2.rank == 4 && p2.alpha == 16.0f && p2.targets == DEG_LORA_ALL);
    char *again = fill_text(k2);
    cr_expect_str_eq(again, both, "reloaded adapters fill other bytes");
    char js[512];
    snprintf(js, sizeof js, "%s/deg.json", dir2);
    json_t *meta = json_load_file(js, 0, NULL);
    json_t *e = json_object_get(meta, "lora");
    cr_expect_str_eq(json_string_value(json_object_get(e, "selector")), "kind");
    cr_expect_str_eq(json_string_value(json_object_get(e, "context")), "base");
    cr_expect_eq(json_array_size(json_object_get(e, "targets")), 7);
    json_decref(meta);

    free(a); free(b);
    free(base); free(zero); free(dec); free(both); free(again);
    deg_ckpt_free(k);
    deg_ckpt_free(k2);
    tu_rmrf(dir);
    tu_rmrf(dir2);
    free(dir);
    free(dir2);
}

/* A hybrid's recurrent-projection adapters (rec_in / rec_z / rec_out) in a
 * checkpoint: they change the fill, and save + load keeps the targets (named
 * in deg.json), the parameters and the filled bytes. */
Test(lora_ckpt, hybrid_recurrent_targets_round_trip)
{
    const char *names[] = {"tiny-lfm2", "tiny-qwen3_5"};
    for (int mi = 0; mi < 2; mi++) {
        char *dir = tu_mkdtemp(), *dir2 = tu_mkdtemp();
        char model[512];
        snprintf(model, sizeof model, "%s/%s", TINY_GOLDENS, names[mi]);
        deg_ckpt *k = tu_random_ckpt(model, 3, dir, NULL, -1);
        char *base = fill_text(k);
        deg_lora_params p = deg_lora_default_params();
        p.rank = 4;
        p.targets = DEG_LORA_ALL_RECURRENT;
        cr_assert_eq(deg_ckpt_add_lora(k, &p, DEG_LORA_SELECT_SHARED), DEG_OK, "%s",
                     deg_errmsg());
        deg_lora *l = deg_ckpt_get_lora(k);
        size_t n = deg_lora_n_params(l);
        float *a = malloc(n * 4), *b = malloc(n * 4);
        for (size_t i = 0; i < n; i++) a[i] = (float)(((double)((i * 2654435761u) % 1000) - 500) * 4e-4);
        cr_assert_eq(deg_lora_set_params(l, a, n), DEG_OK);
        char *adapted = fill_text(k);
        cr_expect(strcmp(adapted, base) != 0, "%s: recurrent adapters left the fill unchanged",
                  names[mi]);
        cr_assert_eq(deg_ckpt_save(k, dir2, NULL, 0), DEG_OK, "%s", deg_errmsg());
        deg_ckpt *k2 = NULL;
        cr_assert_eq(deg_ckpt_load(dir2, model, &k2), DEG_OK, "%s", deg_errmsg());
        deg_ckpt_set_debug(k2, 1);
        deg_lora *l2 = deg_ckpt_get_lora(k2);
        cr_assert_eq(deg_lora_n_params(l2), n);
        cr_expect_eq(deg_lora_get_config(l2).targets, (uint32_t)DEG_LORA_ALL_RECURRENT);
        deg_lora_get_params(l2, b, n);
        cr_expect(memcmp(a, b, n * 4) == 0, "%s: adapters changed by save + load", names[mi]);
        char *again = fill_text(k2);
        cr_expect_str_eq(again, adapted, "%s: reloaded adapters fill other bytes", names[mi]);
        char js[512];
        snprintf(js, sizeof js, "%s/deg.json", dir2);
        json_t *meta = json_load_file(js, 0, NULL);
        json_t *tg = json_object_get(json_object_get(meta, "lora"), "targets");
        cr_expect_eq(json_array_size(tg), 3);
        cr_expect_str_eq(json_string_value(json_array_get(tg, 0)), "rec_in");
        json_decref(meta);
        free(a); free(b); free(base); free(adapted); free(again);
        deg_ckpt_free(k);
        deg_ckpt_free(k2);
        tu_rmrf(dir);
        tu_rmrf(dir2);
        free(dir);
        free(dir2);
    }
}

/* deg.json["lora"] edited by f, then loaded: expect status want and a message
 * containing what. */
static void bad_entry(const char *dir, const char *model, void (*f)(json_t *e), deg_status want,
                      const char *what)
{
    char js[512];
    snprintf(js, sizeof js, "%s/deg.json", dir);
    json_t *meta = json_load_file(js, 0, NULL);
    json_t *saved = json_deep_copy(meta);
    f(json_object_get(meta, "lora"));
    cr_assert_eq(json_dump_file(meta, js, JSON_INDENT(1)), 0);
    deg_ckpt *k = NULL;
    deg_status s = deg_ckpt_load(dir, model, &k);
    cr_expect_eq(s, want, "%s: got %s (%s)", what, deg_status_name(s), deg_errmsg());
    cr_expect(strstr(deg_errmsg(), what) != NULL, "message '%s' lacks '%s'", deg_errmsg(), what);
    cr_expect_null(k);
    cr_assert_eq(json_dump_file(saved, js, JSON_INDENT(1)), 0);
    json_decref(meta);
    json_decref(saved);
}
static void set_selector(json_t *e) { json_object_set_new(e, "selector", json_string("rows")); }
static void set_context(json_t *e) { json_object_set_new(e, "context", json_string("adapted")); }
static void set_rank(json_t *e) { json_object_set_new(e, "rank", json_integer(8)); }
static void set_target(json_t *e) { json_array_append_new(json_object_get(e, "targets"), json_string("qkv")); }
static void set_names(json_t *e) { json_array_set_new(json_object_get(e, "adapters"), 0, json_string("x")); }
static void drop_targets(json_t *e) { json_object_del(e, "targets"); }

Test(lora_ckpt, bad_entries)
{
    char *dir = tu_mkdtemp();
    char model[512];
    snprintf(model, sizeof model, "%s/tiny-llama", TINY_GOLDENS);
    deg_ckpt *k = tu_random_ckpt(model, 5, dir, NULL, -1);
    deg_lora_params p = deg_lora_default_params();
    p.rank = 2;
    p.targets = DEG_LORA_Q | DEG_LORA_DOWN;
    cr_assert_eq(deg_ckpt_add_lora(k, &p, DEG_LORA_SELECT_SHARED), DEG_OK);
    cr_expect_eq(deg_ckpt_lora_adapter(k, DEG_HEAD_EXTRACT), 0);
    cr_expect_eq(deg_ckpt_lora_adapter(k, DEG_HEAD_SCORE), 0);
    cr_assert_eq(deg_ckpt_save(k, dir, NULL, 0), DEG_OK, "%s", deg_errmsg());
    deg_ckpt_free(k);
    cr_assert_eq(deg_ckpt_load(dir, model, &k), DEG_OK, "%s", deg_errmsg());
    cr_expect_eq(deg_lora_get_config(deg_ckpt_get_lora(k)).targets,
                 (uint32_t)(DEG_LORA_Q | DEG_LORA_DOWN));
    deg_ckpt_free(k);

    bad_entry(dir, model, set_selector, DEG_ERR_FORMAT, "selector");
    bad_entry(dir, model, set_context, DEG_ERR_UNSUPPORTED, "context");
    bad_entry(dir, model, set_rank, DEG_ERR_MISMATCH, "must be F32 [8,");
    bad_entry(dir, model, set_target, DEG_ERR_FORMAT, "targets[2]");
    bad_entry(dir, model, set_names, DEG_ERR_FORMAT, "adapters[0]");
    bad_entry(dir, model, drop_targets, DEG_ERR_FORMAT, "\"targets\"");

    /* the adapter file missing */
    char sp[512];
    snprintf(sp, sizeof sp, "%s/adapters.safetensors", dir);
    cr_assert_eq(unlink(sp), 0);
    k = NULL;
    cr_expect_eq(deg_ckpt_load(dir, model, &k), DEG_ERR_IO, "%s", deg_errmsg());
    cr_expect_null(k);
    tu_rmrf(dir);
    free(dir);
}

/* The trace's tokens (deg_features.trunk_ids, .tokens) re-run by the LoRA
 * tape: a trunk prefilled with trunk_ids and every fork's ids with the adapter
 * deg_ckpt_lora_adapter gives its head kind give bitwise the traced hidden
 * rows at tokens[i].rows (trained adapters on both kinds: the trace runs the
 * forks as deg_fill does, with their adapters). */
Test(lora_ckpt, trace_tokens_rerun_by_the_tape)
{
    static const char *req =
        "{\"context\": \"Order 4711 from ACME Corp, placed by jane.doe@example.com. Tags: red, "
        "blue.\", \"schema\": {\"type\": \"object\", \"properties\": {\"department\": {\"enum\": "
        "[\"billing\", \"shipping\", \"other\"]}, \"urgent\": {\"type\": \"boolean\"}, \"email\": "
        "{\"type\": [\"string\", \"null\"], \"format\": \"email\"}, \"tags\": {\"type\": "
        "\"array\", \"items\": {\"type\": \"string\"}}}}}";
    static const char *gold = "{\"department\": \"billing\", \"urgent\": true, \"email\": "
                              "\"jane.doe@example.com\", \"tags\": [\"red\", \"blue\"]}";
    char *dir = tu_mkdtemp();
    char model[512];
    snprintf(model, sizeof model, "%s/tiny-qwen3", TINY_GOLDENS);
    deg_ckpt *k = tu_random_ckpt(model, 3, dir, NULL, -1);
    deg_lora_params p = deg_lora_default_params();
    p.rank = 4;
    cr_assert_eq(deg_ckpt_add_lora(k, &p, DEG_LORA_SELECT_KIND), DEG_OK, "%s", deg_errmsg());
    deg_lora *l = deg_ckpt_get_lora(k);
    randomize_adapter(l, 0);
    randomize_adapter(l, 1);
    deg_features *f = NULL;
    cr_assert_eq(deg_features_extract(k, req, strlen(req), gold, strlen(gold), 0, 0, &f, NULL),
                 DEG_OK, "%s", deg_errmsg());
    /* 3 leaves + the tags count; then 2 items */
    cr_assert_eq(f->n_forks, 6, "forks %zu", f->n_forks);
    cr_assert_not_null(f->trunk_ids);
    cr_assert_not_null(f->tokens);
    cr_assert(f->ctx_first >= 1 && f->ctx_first + f->n_ctx < f->n_trunk_tokens);
    const deg_model *m = deg_ckpt_model(k);
    deg_trunk *t = NULL;
    cr_assert_eq(deg_trunk_new(m, &t), DEG_OK);
    cr_assert_eq(deg_trunk_prefill(t, f->trunk_ids, f->n_trunk_tokens, NULL, NULL), DEG_OK);
    const int32_t *ids[6];
    size_t n_ids[6];
    int32_t ad[6];
    int kinds_seen[DEG_TRAIN_WEIGHTS + 1] = {0};
    for (size_t i = 0; i < 6; i++) {
        const deg_feature_tokens *tk = &f->tokens[i];
        cr_assert_eq(tk->n_ids, (size_t)f->forks[i].n_tokens);
        ids[i] = tk->ids;
        n_ids[i] = tk->n_ids;
        ad[i] = deg_ckpt_lora_adapter(k, tk->head_kind);
        kinds_seen[tk->head_kind]++;
        const char *mode = f->forks[i].mode;
        int want = strcmp(mode, "decide.choice") == 0 ? DEG_HEAD_CHOICE
                   : strcmp(mode, "decide.noul") == 0 ? DEG_HEAD_NOUL
                   : strcmp(mode, "count") == 0       ? DEG_HEAD_COUNT
                                                      : DEG_HEAD_EXTRACT;
        cr_expect_eq(tk->head_kind, want, "fork %zu (%s): head kind %d", i, mode, tk->head_kind);
    }
    cr_expect(kinds_seen[DEG_HEAD_CHOICE] == 1 && kinds_seen[DEG_HEAD_NOUL] == 1 &&
              kinds_seen[DEG_HEAD_COUNT] == 1 && kinds_seen[DEG_HEAD_EXTRACT] == 3);
    deg_lora_tape *tape = NULL;
    cr_assert_eq(deg_lora_tape_forward(l, t, ids, n_ids, ad, 6, 1, &tape), DEG_OK, "%s",
                 deg_errmsg());
    size_t E = (size_t)f->n_embd;
    float *h = malloc(E * sizeof(float));
    for (size_t i = 0; i < 6; i++) {
        const deg_feature_fork *fk = &f->forks[i];
        for (int32_t r = 0; r < fk->n_rows; r++) {
            size_t pos = f->tokens[i].rows[r];
            cr_assert(pos < f->tokens[i].n_ids);
            cr_assert_eq(deg_lora_tape_hidden(tape, i, pos, 1, h), DEG_OK, "%s", deg_errmsg());
            cr_expect(memcmp(h, fk->hidden + (size_t)r * E, E * sizeof(float)) == 0,
                      "fork %zu (%s) row %d: the tape differs from the trace", i, fk->pointer, r);
        }
    }
    /* the ANSWER: row is the fork's last token */
    cr_expect_eq(f->tokens[0].rows[f->forks[0].n_rows - 1], f->tokens[0].n_ids - 1);
    free(h);
    deg_lora_tape_free(tape);
    deg_trunk_free(t);
    deg_features_free(f);
    deg_ckpt_free(k);
    tu_rmrf(dir);
    free(dir);
}
