/* fill_decide.c - decoding of the decide heads (choice, score, noul; §12.3) with the
 * key prior (keyprior.h), and the debug digest of raw head outputs. */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/status.h"
#include "deg/compareprior.h"
#include "deg/countprior.h"
#include "deg/fill_internal.h"
#include "deg/keyprior.h"
#include "deg/scoreprior.h"

void dg_fill_raw_digest(const dg_ckpt *k, json_t *meta, const float *a, size_t n, const float *b,
                        size_t nb)
{
    if (!k->debug_raw) return;
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, n * sizeof(float), (const uint8_t *)a);
    if (b) sha256_update(&c, nb * sizeof(float), (const uint8_t *)b);
    uint8_t d[32];
    sha256_digest(&c, 32, d);
    char h[65];
    for (int i = 0; i < 32; i++) sprintf(h + 2 * i, "%02x", d[i]);
    json_object_set_new(meta, "raw", json_string(h));
}

static json_t *probs_json(const double *p, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_real(p[i]));
    return a;
}

/* Is the word [w, w + n) a whole-word, case-insensitive occurrence in [s, s + len)? */
static int has_word_ci(const char *s, size_t len, const char *w, size_t n)
{
    if (n == 0 || n > len) return 0;
    for (size_t i = 0; i + n <= len; i++) {
        if (strncasecmp(s + i, w, n) != 0) continue;
        int lb = i == 0 || !isalnum((unsigned char)s[i - 1]);
        int rb = i + n == len || !isalnum((unsigned char)s[i + n]);
        if (lb && rb) return 1;
    }
    return 0;
}

/* Bytes [*b, *e) of the value of line kv. */
static void kv_bytes(const freq *r, const dg_keyline *kv, size_t *b, size_t *e)
{
    *b = r->cp_byte[kv->val0];
    *e = r->cp_byte[kv->val1];
}

/* Choice: each option whose text is a whole word of a matching line's value
 * gets that line's bonus (the largest over lines). */
static void key_prior_choice(const dg_ckpt *k, const freq *r, const dg_field_plan *f, float *lg)
{
    if (!k->key_prior.on) return;
    float *best = calloc(f->n_options ? f->n_options : 1, sizeof *best);
    if (!best) return;  /* the prior is advisory: without memory the heads decide alone */
    /* lines outer, so the field/key match is computed once per line, not per option */
    for (size_t i = 0; i < r->kv.n; i++) {
        float bonus = (float)dg_key_bonus(&k->key_prior, f, &r->kv.p[i]);
        if (bonus <= 0) continue;
        size_t b, e;
        kv_bytes(r, &r->kv.p[i], &b, &e);
        for (size_t o = 0; o < f->n_options; o++) {
            json_t *v = json_array_get(f->options, o);
            char buf[32];
            const char *t = NULL;
            if (json_is_string(v)) t = json_string_value(v);
            else if (json_is_integer(v)) {
                snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                t = buf;
            }
            if (t && t[0] && bonus > best[o] && has_word_ci(r->ctx + b, e - b, t, strlen(t)))
                best[o] = bonus;
        }
    }
    for (size_t o = 0; o < f->n_options; o++) lg[o] += best[o];
    free(best);
}

/* noul: + the bonus of a matching line whose value's first word reads yes, - for no
 * (dg_key_yes_no: yes/true/y/1 and datagen's seven languages). */
static double key_prior_noul(const dg_ckpt *k, const freq *r, const dg_field_plan *f)
{
    if (!k->key_prior.on) return 0.0;
    double out = 0;
    for (size_t i = 0; i < r->kv.n; i++) {
        double bonus = dg_key_bonus(&k->key_prior, f, &r->kv.p[i]);
        if (bonus <= fabs(out)) continue;
        size_t b, e;
        kv_bytes(r, &r->kv.p[i], &b, &e);
        size_t w = b; /* the first word: letters, digits, non-ASCII (accented si, nao) */
        while (w < e && (isalnum((unsigned char)r->ctx[w]) || (unsigned char)r->ctx[w] >= 0x80))
            w++;
        int t = dg_key_yes_no(r->ctx + b, w - b);
        if (t >= 0) out = t ? bonus : -bonus;
    }
    return out;
}

/* noul: the count prior (countprior.h): +bonus when the lists of the context say the
 * field's predicate holds, -bonus when not, as for 0 items +/-absent when none tells.
 * *li: the list that told (-1: none); *on: the prior applied (meta says so). */
static double count_prior_noul(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                               int *li, int *on)
{
    dg_count_pred p[3];
    size_t np = k->count_prior.on ? dg_count_preds_of(f, p) : 0;
    int v = -1;
    *li = -1;
    *on = 0;
    for (size_t i = 0; i < np && v < 0; i++)
        v = dg_count_judge(&r->lists, r->ctx, r->cp_byte, &p[i], li);
    double w = v >= 0 ? k->count_prior.bonus : k->count_prior.absent;
    if (np == 0 || w <= 0) return 0.0;
    if (v < 0) v = dg_count_holds(p[0].op, 0);
    *on = 1;
    return v ? w : -w;
}

/* score: the count prior over a count scale (countprior.h): +bonus to the level
 * holding the counted list's items (no list named, or no level's range holds its
 * count: the heads alone, no `absent`). *li / *on as count_prior_noul; *on = 1
 * whenever a list was counted, so meta shows the count a gap between ranges left
 * to the heads. */
static void count_prior_score(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                              float *lg, int *li, int *on)
{
    size_t count;
    *li = -1;
    *on = 0;
    if (!k->count_prior.on || k->count_prior.bonus <= 0) return;
    int lv = dg_count_scale_judge(&r->lists, f, li, &count);
    *on = *li >= 0;
    if (lv >= 0) lg[lv] += (float)k->count_prior.bonus;
}

/* Meta of a leaf the count prior judged: the list that told ("list_key"; null and
 * "list_items" 0 when none is named). */
static void count_meta(json_t *meta, const freq *r, int li)
{
    if (!meta) return;
    const dg_list *C = li >= 0 ? &r->lists.p[li] : NULL;
    json_object_set_new(meta, "list_key", C ? json_string(C->key) : json_null());
    json_object_set_new(meta, "list_items", json_integer(C ? (json_int_t)C->n : 0));
}

deg_status dg_fill_decode_decide(const dg_ckpt *k, freq *r, job *j)
{
    leaf *L = &r->leaves[j->target];
    const dg_field_plan *f = &r->plan->fields[L->field];
    const float *a = j->h + (j->n_mark - 1) * (size_t)k->h.E;
    if (f->mode == DG_MODE_NOUL) {
        float l = dg_head_dot(k->h.noul_w, a, k->h.E) + k->h.noul_b[0];
        int li, counted;
        l += (float)key_prior_noul(k, r, f);
        l += (float)dg_cmp_prior(&k->key_prior, f, r->ctx, &r->kv, r->cp_byte);
        l += (float)count_prior_noul(k, r, f, &li, &counted);
        float lg[2] = {l, 0.0f};
        double p[2];
        dg_softmax(lg, 2, k->temp[DG_T_NOUL], p, NULL);
        L->value = json_boolean(p[0] >= 0.5);
        L->meta = json_pack("{s:s, s:f}", "mode", "decide.noul", "probability", p[0]);
        if (counted) count_meta(L->meta, r, li);
        dg_fill_raw_digest(k, L->meta, lg, 1, NULL, 0);
        return DEG_OK;
    }
    int score = f->mode == DG_MODE_SCORE;
    size_t n = score ? f->n_levels + (f->null_outcome ? 1 : 0) : f->n_options;
    float *lg = malloc(n * sizeof(float));
    double *p = malloc(n * sizeof(double));
    if (!lg || !p) {
        free(lg);
        free(p);
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
    }
    dg_head_pointer(&k->h, score, a, j->h, n, lg);
    int li = -1, counted = 0, written = -1;
    if (!score) key_prior_choice(k, r, f, lg);
    else {
        count_prior_score(k, r, f, lg, &li, &counted);
        written = dg_score_prior(&k->key_prior, f, r->ctx, r->ctx_len, &r->kv, r->cp_byte,
                                 k->temp[DG_T_SCORE], lg);
    }
    dg_softmax(lg, n, k->temp[score ? DG_T_SCORE : DG_T_CHOICE], p, NULL);
    size_t b = dg_argmax_d(p, n);
    L->meta = json_pack("{s:s, s:f, s:f, s:o}", "mode", dg_mode_name(f->mode), "probability",
                        p[b], "confidence", dg_confidence(p[b], n), "probabilities",
                        probs_json(p, n));
    if (score) {
        double z = 0, e = 0;
        for (size_t i = 0; i < f->n_levels; i++) {
            z += p[i];
            e += p[i] * (double)f->levels[i];
        }
        json_object_set_new(L->meta, "expected", z > 0 ? json_real(e / z) : json_null());
        L->value = b < f->n_levels ? json_integer((json_int_t)f->levels[b]) : json_null();
        if (counted) count_meta(L->meta, r, li);
        if (written >= 0) /* the level the document writes (scoreprior.h) */
            json_object_set_new(L->meta, "written_level",
                                json_integer((json_int_t)f->levels[written]));
    } else {
        L->value = json_deep_copy(json_array_get(f->options, b));
    }
    dg_fill_raw_digest(k, L->meta, lg, n, NULL, 0);
    free(lg);
    free(p);
    return DEG_OK;
}
