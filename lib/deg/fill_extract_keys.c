/* fill_extract_keys.c - the key prior's start/end bonuses of an extract leaf
 * (fill_internal.h dg_fill_key_prior_extract; keyprior.h): the values of the key lines
 * naming it, a number's whole written form and the end its name asks for, labelled
 * grammar candidates, a date written as one day, licence names. Split from
 * fill_extract.c (libdeg 0.26.0), which calls it once per extract leaf. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/utf8.h"
#include "deg/fill_internal.h"
#include "deg/keyprior.h"
#include "deg/licenseprior.h"
#include "deg/parse.h"

/* The day (YYYY-MM-DD, into day[11]) grammar candidate c of date leaf f writes, by
 * the leaf's own parser (a date-time's written date, its offset kept); 0 when c
 * does not parse (a partial reading, an ambiguous numeric date). */
static int cand_day(const freq *r, const dg_field_plan *f, size_t s, size_t e, char *day)
{
    const char *txt = r->ctx + r->cp_byte[s];
    size_t len = r->cp_byte[e] - r->cp_byte[s];
    char buf[96];
    int assumed, ok;
    if (f->format == DG_FORMAT_DATE_TIME)
        ok = len + 64 <= sizeof buf && dg_parse_datetime(txt, len, (deg_date_order)r->opt.date_order,
                                                         "Z", buf, sizeof buf, &assumed) == DEG_OK;
    else
        ok = dg_parse_date(txt, len, (deg_date_order)r->opt.date_order, buf) == DEG_OK;
    if (!ok) {
        dg_clear_error();
        return 0;
    }
    memcpy(day, buf, 10);
    day[10] = 0;
    return 1;
}

/* Date sole (key_prior.sole, libdeg 0.22.0): 1 when the context's ns candidates of
 * date leaf f (outside arrays) write one day and no other: every written date (the
 * readings starting at one code point) has a reading that parses, all to that day.
 * Why: a log's "[2024-04-06 22:18:00 -0500] NEW ticket=..." lines left `created` null
 * (the null head had no label to go by); on datagen-v2's train and val splits a date
 * leaf whose document writes one day is that day in 763 of 820 cases (null in the
 * rest, all nullable or optional leaves: the bonus leans, the heads still judge). */
static int one_day(const freq *r, const dg_field_plan *f, const size_t *spans, size_t ns)
{
    char first[11] = "", day[11];
    for (size_t c = 0; c < ns; c++) {
        size_t s = spans[2 * c], e = spans[2 * c + 1];
        if (e <= s || e > r->n_cp) return 0;
        if (cand_day(r, f, s, e, day)) {
            if (first[0] && strcmp(first, day) != 0) return 0;
            memcpy(first, day, sizeof day);
            continue;
        }
        int read = 0; /* another reading of the same written date parses */
        for (size_t d = 0; d < ns && !read; d++)
            read = d != c && spans[2 * d] == s && spans[2 * d + 1] <= r->n_cp &&
                   spans[2 * d + 1] > s && cand_day(r, f, s, spans[2 * d + 1], day);
        if (!read) return 0;
    }
    return first[0] != 0;
}

/* Number candidate c (spans sorted by start, then end) is the bare form of an earlier
 * candidate inside the key's value (from code point v0) that ends where it does: "900"
 * inside "-900", "1,234.56" inside "$1,234.56". The key prior's bonus goes to the whole
 * written number only: "OOMScoreAdjust=-900" read 900 when both forms had it (a new
 * user's check of libdeg 0.25.0). */
static int signed_form_before(const size_t *spans, size_t c, size_t v0)
{
    for (size_t c2 = c; c2-- > 0 && spans[2 * c2] >= v0;)
        if (spans[2 * c2 + 1] == spans[2 * c + 1] && spans[2 * c2] < spans[2 * c]) return 1;
    return 0;
}

/* Number candidate [s, e) (code points) as a double: 1 with *v, else 0. */
static int cand_number(const freq *r, size_t s, size_t e, double *v)
{
    size_t b0 = r->cp_byte[s], b1 = r->cp_byte[e];
    char out[80];
    if (b1 - b0 > 64) return 0;
    if (dg_parse_number(r->ctx + b0, b1 - b0, 0, out, sizeof out) != DEG_OK) {
        dg_clear_error(); /* not the fill's error: the candidate is just not read */
        return 0;
    }
    *v = strtod(out, NULL);
    return 1;
}

/* The end of the numbers a name asks for (dg_key_name_extreme): its side (-1 least, 1
 * greatest, 0 none), the key bonus it is read under and the value. */
typedef struct end_value {
    int end;
    float bonus;
    double value;
} end_value;

/* Fills *ev for number field f when its name asks for an end: among the number
 * candidates inside key values (a number's whole written form), those under the
 * largest bonus; their least or greatest value. Only the candidates of that value keep
 * that bonus (dg_fill_key_prior_extract); lines of a smaller bonus are left as they were. */
static void end_of_keys(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                        const size_t *spans, size_t ns, end_value *ev)
{
    int end = dg_key_name_extreme(f);
    if (!end) return;
    for (size_t i = 0; i < r->kv.n; i++) {
        const dg_keyline *kv = &r->kv.p[i];
        float bonus = (float)dg_fill_key_bonus(k, r, f, kv);
        if (bonus <= 0 || bonus < ev->bonus) continue;
        for (size_t c = 0; c < ns; c++) {
            size_t s = spans[2 * c], e = spans[2 * c + 1];
            double v;
            if (e <= s || s < kv->val0 || e > kv->val1 || signed_form_before(spans, c, kv->val0) ||
                !cand_number(r, s, e, &v))
                continue;
            if (bonus > ev->bonus || (end < 0 ? v < ev->value : v > ev->value)) {
                ev->end = end;
                ev->bonus = bonus;
                ev->value = v;
            }
        }
    }
}

/* Licence names (licenseprior.h; libdeg 0.26.0): a plain string leaf named like a licence
 * itself (dg_license_name_field) gives each licence name the context writes, as an identifier
 * (dg_license end: "MIT", "GPL-2.0+", "GNU General Public License"), outside another
 * key's value, key_prior.exact at its first and last token, when no key line names
 * the leaf (a key states the licence; the heads read its value). Why: a header stating
 * "Licensed under the MIT license" (expat.h) or "under the terms of the MIT license"
 * (jansson.h) has no "License:" line, and `license` read "stdlib.h" from an #include
 * (bench/devreal set 5); at key_prior.phrase (8) the heads kept "stdlib.h". */
static void license_names(const dg_ckpt *k, const freq *r, const dg_field_plan *f, float *bs,
                          float *be)
{
    float bonus = (float)k->key_prior.exact;
    if (!(bonus > 0) || !dg_license_name_field(f)) return;
    for (size_t i = 0; i < r->kv.n; i++)
        if (dg_fill_key_bonus(k, r, f, &r->kv.p[i]) > 0) return; /* a key states it */
    dg_license w[DG_LICENSES_READ];
    size_t nw = dg_license_written(r->ctx, r->ctx_len, w, DG_LICENSES_READ);
    for (size_t j = 0; j < nw; j++) {
        if (w[j].end <= w[j].at || !dg_fill_in_block(r, f, w[j].at) ||
            dg_fill_under_other_key(k, r, f, w[j].at))
            continue;
        size_t c0 = dg_utf8_count(r->ctx, w[j].at), c1 = dg_utf8_count(r->ctx, w[j].end);
        if (c1 <= c0 || c1 > r->n_cp) continue;
        size_t ts = r->cp_tok[c0], te = r->cp_tok[c1 - 1];
        if (bs[ts] < bonus) bs[ts] = bonus;
        if (be[te] < bonus) be[te] = bonus;
    }
}

/* fill_internal.h */
void dg_fill_key_prior_extract(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                               const size_t *spans, size_t ns, int typed, float *bs, float *be)
{
    size_t nc = r->c1 - r->c0;
    memset(bs, 0, nc * sizeof *bs);
    memset(be, 0, nc * sizeof *be);
    if (!k->key_prior.on) return;
    end_value ev = {0, 0, 0.0};
    if (typed && f->mode == DG_MODE_NUMBER) end_of_keys(k, r, f, spans, ns, &ev);
    for (size_t i = 0; i < r->kv.n; i++) {
        const dg_keyline *kv = &r->kv.p[i];
        float bonus = (float)dg_fill_key_bonus(k, r, f, kv);
        if (bonus <= 0) continue;
        if (!typed) {
            size_t ts = r->cp_tok[kv->val0], te = r->cp_tok[kv->val1 - 1];
            if (bs[ts] < bonus) bs[ts] = bonus;
            if (be[te] < bonus) be[te] = bonus;
            continue;
        }
        for (size_t c = 0; c < ns; c++) {
            size_t s = spans[2 * c], e = spans[2 * c + 1];
            if (e <= s || s < kv->val0 || e > kv->val1) continue;
            if (f->mode == DG_MODE_NUMBER && signed_form_before(spans, c, kv->val0)) continue;
            double v;
            if (ev.end && bonus == ev.bonus && (!cand_number(r, s, e, &v) || v != ev.value))
                continue;
            size_t ts = r->cp_tok[s], te = r->cp_tok[e - 1];
            if (bs[ts] < bonus) bs[ts] = bonus;
            if (be[te] < bonus) be[te] = bonus;
        }
    }
    if (!typed) license_names(k, r, f, bs, be);
    float phrase = (float)k->key_prior.phrase;
    char unit[DG_KEY_MAX_LEN + 1];
    if (typed && phrase > 0) dg_key_name_unit(f, unit, sizeof unit);
    for (size_t c = 0; typed && phrase > 0 && c < ns; c++) {
        size_t s = spans[2 * c], e = spans[2 * c + 1];
        if (e <= s || e > r->n_cp) continue;
        if (!dg_key_phrase_before(f, r->ctx, r->cp_byte[s]) &&
            !dg_key_unit_after(unit, r->ctx, r->ctx_len, r->cp_byte[e]))
            continue;
        size_t ts = r->cp_tok[s], te = r->cp_tok[e - 1];
        if (bs[ts] < phrase) bs[ts] = phrase;
        if (be[te] < phrase) be[te] = phrase;
    }
    float sole = (float)k->key_prior.sole;
    if (!(typed && sole > 0 && f->mode == DG_MODE_DATE && f->depth_items == 0 &&
          one_day(r, f, spans, ns)))
        return;
    for (size_t c = 0; c < ns; c++) {
        size_t ts = r->cp_tok[spans[2 * c]], te = r->cp_tok[spans[2 * c + 1] - 1];
        if (bs[ts] < sole) bs[ts] = sole;
        if (be[te] < sole) be[te] = sole;
    }
}
