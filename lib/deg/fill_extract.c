/* fill_extract.c - decoding of the extract heads (§12.3): span scores over the
 * context, grammar candidates or top token spans, the value of a span and the null
 * decision. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/utf8.h"
#include "deg/anchor.h"
#include "deg/fill_internal.h"
#include "deg/keyprior.h"
#include "deg/names.h"
#include "deg/parse.h"
#include "deg/validate.h"
#include "model/state.h"

/* Does token span [ti, tj] hold a line break between its first and last
 * non-blank code points? (Such a span is never a gold plain string in the
 * training data: 0 of 25,446 in datagen v1 + v2 train.) */
static int crosses_line(const freq *r, size_t ti, size_t tj)
{
    size_t s = r->nb_next[r->tok_cp0[ti]], e = r->nb_prev[r->tok_cp1[tj]];
    return s < e && r->nl_pre[e] != r->nl_pre[s];
}

/* Does trimmed code point span [s, e) hold a sentence end (sentences.h) before
 * its last code point (span_single_sentence; se_pre counts the ends before each
 * code point)? A period that closes the span ("activities.") is none. */
static int crosses_sentence(const freq *r, size_t s, size_t e)
{
    return s + 1 < e && r->se_pre[e - 1] != r->se_pre[s];
}

/* Does code point span [s, e) start and end at word boundaries (span_word_bounds):
 * no word character (dg_utf8_is_word) on both sides of its first or its end
 * edge? ("FindASP" of "FindASPELL", "tle" of "turtle" are not.) A word joined
 * by '-', '.' or '_' with a letter on one side is one word ("xdg-user" of
 * "xdg-user-dirs-update", "dbus-org.freedesktop.login1" of "....service",
 * "_ipcrm" of "_ipcrm_module"; a span may not start or end with the joiner
 * either; digits on both sides are not joined: "2003" of
 * "2003-2014"). Every gold plain span of the training and development data is
 * bounded so (16,922 of 16,922 in union10 + the dev sets); of v12's plain spans
 * on the dev sets, the 27 ending or starting inside such a join were all wrong. */
static uint32_t cp_at(const freq *r, size_t c)
{
    uint32_t cp = 0;
    size_t b = r->cp_byte[c];
    if (!dg_utf8_decode(r->ctx + b, r->ctx_len - b, &cp)) return 0;
    return cp;
}

static int cp_word(const freq *r, size_t c)
{
    return dg_utf8_is_word(cp_at(r, c));
}

/* Code point j (a '-', '.' or '_') joins words a = j - 1 and b = j + 1. */
static int joined(const freq *r, size_t j)
{
    if (j == 0 || j + 1 >= r->n_cp) return 0;
    uint32_t c = cp_at(r, j), x = cp_at(r, j - 1), y = cp_at(r, j + 1);
    if (c != '-' && c != '.' && c != '_') return 0;
    if (!dg_utf8_is_word(x) || !dg_utf8_is_word(y)) return 0;
    return !(x >= '0' && x <= '9' && y >= '0' && y <= '9');
}

static int word_bounded(const freq *r, size_t s, size_t e)
{
    /* a C comment's marks are no value's (deg_fill.h span_word_bounds, libdeg 0.26.0) */
    if (e - s >= 2 && ((cp_at(r, s) == '/' && cp_at(r, s + 1) == '*') ||
                       (cp_at(r, e - 2) == '*' && cp_at(r, e - 1) == '/')))
        return 0;
    if (s > 0 && cp_word(r, s - 1) && cp_word(r, s)) return 0;
    if ((s > 0 && joined(r, s - 1)) || joined(r, s)) return 0; /* "user-..." or "-user..." */
    if (e < r->n_cp && cp_word(r, e - 1) && cp_word(r, e)) return 0;
    return !((e < r->n_cp && joined(r, e)) || joined(r, e - 1));
}


/* List prior (lists.h): the first and last tokens of leaf L's own list item, when
 * L's array is anchored on its list. Returns 1 when L is a plain array's item (its
 * one leaf: the bonus goes there), 2 when L is a leaf of an object item (every
 * leaf's span stays inside the item: "Depends: libc6 (>= 2.14), zlib1g (>= 1.1)"
 * gave the second object the name "libc6 (>= 2.14), zlib1g (>= 1.1"), 0 when none.
 * *item: the list item (an index into r->lists.item); *rc: a table record's (or a
 * list item's parts') cells, one per leaf of the array (inst rec_cell,
 * dg_lists_record_cells), else NULL;
 * *cell: the one L reads (under the column that names it, else the one left; an
 * empty cell when the record lacks the column other records write), else NULL. */
static int list_item_tokens(const freq *r, const leaf *L, size_t *t, size_t *item,
                            const size_t **rc, const dg_cell **cell)
{
    *rc = NULL;
    *cell = NULL;
    if (L->inst < 0 || !r->insts[L->inst].from_list) return 0;
    const inst *I = &r->insts[L->inst];
    *item = r->lists.p[I->list1 - 1].first + I->list_idx[L->item];
    const size_t *it = r->lists.item + 2 * *item;
    t[0] = r->cp_tok[it[0]];
    t[1] = r->cp_tok[(I->name_end ? I->name_end[L->item] : it[1]) - 1];
    if (dg_lists_plain_array(r->plan, (size_t)I->array)) return 1;
    /* a list's item of one part (no cells) reads the whole item */
    if (I->rec_cell && (r->lists.p[I->list1 - 1].table ||
                        r->lists.item_cell[*item + 1] > r->lists.item_cell[*item])) {
        /* a member the record does not write reads as an empty cell: null, never
         * a sibling's value (no cell of the record is this one) */
        static const dg_cell missing = {0};
        const dg_array_plan *A = &r->plan->arrays[I->array];
        *rc = I->rec_cell + L->item * A->n_fields;
        size_t c = (*rc)[L->field - A->first_field];
        if (c == DG_CELL_MISSING) *cell = &missing;
        else if (c != SIZE_MAX) *cell = &r->lists.cell[c];
    }
    return 2;
}

/* A table record's leaf reads one cell (lists.h tables): its own (`cell`), else one
 * no leaf of the record reads (dg_lists_cell_unread over rc, nf entries). Code
 * points [*s, *e) are clipped to the first non-empty cell of record `item` they
 * overlap (a token may straddle a cell's edge: "AUD</" of "<td>AUD</td>"); 0 when
 * that cell is not the leaf's to read, so a span runs over no row ("Africa/Kinshasa
 * | -0418+01518 | Dem. Rep. ...") and takes no sibling's cell. With `whole` (a
 * headerless table's record) the span must cover the whole cell. */
static int record_span(const freq *r, size_t item, const size_t *rc, size_t nf,
                       const dg_cell *cell, int whole, size_t *s, size_t *e)
{
    const dg_lists *ls = &r->lists;
    for (size_t c = ls->item_cell[item]; c < ls->item_cell[item + 1]; c++) {
        const dg_cell *x = &ls->cell[c];
        if (x->c0 >= x->c1 || x->c1 <= *s || *e <= x->c0) continue;
        if (cell ? x != cell : !dg_lists_cell_unread(ls, rc, nf, c)) return 0;
        if (whole && (*s > x->c0 || *e < x->c1)) return 0;
        if (*s < x->c0) *s = x->c0;
        if (*e > x->c1) *e = x->c1;
        return 1;
    }
    return 0;
}

/* The LM-head start prior (deg.json / options "lm_prior" {"start": lambda}; issue 12,
 * "use what the model already knows"): bs[t] = lambda * log p_LM(id of context token t)
 * for t < nc, p_LM the backbone's own next-token distribution (its LM head, dg_lm_head,
 * as generation reads it; log-softmax in double) at the fork's last token ("ANSWER:"),
 * whose final-norm hidden state a is computed for the heads anyway. Heads over a frozen
 * backbone find the value's start ~27-31% of the time on unseen kinds, while the backbone
 * itself weighs which context tokens could come next; its own argmax is almost never the
 * value (0.000-0.024), but as a prior at lambda 0.3 it lifted a span-accuracy proxy on all
 * three development sets of smollm2-135m-v7 (dev5 0.127 -> 0.138, devwl 0.148 -> 0.169,
 * dev4 0.251 -> 0.268; bench/fill_lm_prior.py). Cost: one LM-head matvec per extract leaf.
 * A pure function of the fork row and the trunk's tokens: batch-independent. */
static deg_status lm_prior_start(const dg_ckpt *k, const freq *r, const float *a, size_t nc,
                                 float *bs)
{
    deg_model_info info;
    deg_model_get_info(k->model, &info);
    size_t V = (size_t)info.n_vocab;
    float *z = malloc(V * sizeof *z);
    if (!z) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (LM-head prior, %zu logits)", V);
    deg_status st = dg_lm_head(k->model, a, 1, z);
    if (st == DEG_OK) {
        double mx = -INFINITY, sum = 0;
        for (size_t v = 0; v < V; v++)
            if ((double)z[v] > mx) mx = (double)z[v];
        for (size_t v = 0; v < V; v++) sum += exp((double)z[v] - mx);
        double lz = mx + log(sum);
        const int32_t *ids = r->trunk_ids + r->c0;
        for (size_t t = 0; t < nc; t++)
            bs[t] = (float)(r->lm_prior * ((double)z[ids[t]] - lz));
    }
    free(z);
    return st;
}

json_t *dg_fill_leaf_schema(const dg_field_plan *f)
{
    json_t *s = json_deep_copy(f->constraints.json);
    if (f->format != DG_FORMAT_NONE)
        json_object_set_new(s, "format", json_string(dg_format_name(f->format)));
    return s;
}

typedef struct cand {
    size_t s, e;   /* code points */
    double lp;
    size_t ord;
} cand;

static int cmp_cand(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    if (a->lp > b->lp) return -1;
    if (a->lp < b->lp) return 1;
    return a->ord < b->ord ? -1 : a->ord > b->ord;
}

/* By start, longest first (then candidate order). */
static int cmp_start_longest(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    if (a->e != b->e) return a->e > b->e ? -1 : 1;
    return a->ord < b->ord ? -1 : a->ord > b->ord;
}

/* Date and date-time candidates that start together are readings of one written
 * date: the longest (with the time, seconds or zone written after) takes the best
 * score of the group and the shorter ones go. The end pointer likes the seconds'
 * token as well as the zone's, and the shorter reading then assumes the zone:
 * "2021-12-03 01:32:51 -0700" was answered 2021-12-03T01:32:51Z (datagen-v2 test,
 * 2 of 15 date misses). Returns the new count; cs is left sorted by start. */
static size_t fullest_dates(cand *cs, size_t n)
{
    qsort(cs, n, sizeof *cs, cmp_start_longest);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o > 0 && cs[o - 1].s == cs[i].s) {
            if (cs[i].lp > cs[o - 1].lp) cs[o - 1].lp = cs[i].lp;
            continue;
        }
        cs[o++] = cs[i];
    }
    return o;
}

/* The ns grammar candidates (code point pairs) scored by their first/last token's
 * start + end log-probability into cs; dates keep their fullest readings. */
static size_t grammar_cands(const freq *r, const dg_field_plan *f, const size_t *spans, size_t ns,
                            const double *lps, const double *lpe, cand *cs)
{
    size_t n_c = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t s = spans[2 * i], e = spans[2 * i + 1];
        if (e <= s || e > r->n_cp) continue;
        size_t ti = r->cp_tok[s], tj = r->cp_tok[e - 1];
        cs[n_c++] = (cand){s, e, lps[ti] + lpe[tj], i};
    }
    return f->mode == DG_MODE_DATE ? fullest_dates(cs, n_c) : n_c;
}

json_t *dg_fill_span_value(const freq *r, const dg_field_plan *f, const json_t *schema, size_t s,
                           size_t e, const char **reason, int *assumed)
{
    const char *txt = r->ctx + r->cp_byte[s];
    size_t len = r->cp_byte[e] - r->cp_byte[s];
    json_t *v = NULL;
    *assumed = 0;
    if (f->mode == DG_MODE_NUMBER) {
        char buf[128];
        if (len + 8 > sizeof buf) {
            *reason = "unparsable";
            return NULL;
        }
        if (dg_parse_number(txt, len, f->type == DG_TYPE_INTEGER, buf, sizeof buf) != DEG_OK) {
            dg_clear_error();
            *reason = "unparsable";
            return NULL;
        }
        v = json_loads(buf, JSON_DECODE_ANY, NULL);
    } else if (f->mode == DG_MODE_DATE) {
        if (f->format == DG_FORMAT_DATE_TIME) {
            size_t cap = len + 64;
            char *buf = malloc(cap);
            char off[32];
            const char *o = "Z";
            if (!r->opt.default_offset_is_z) {
                int mnt = r->opt.default_offset_minutes;
                snprintf(off, sizeof off, "%c%02d:%02d", mnt < 0 ? '-' : '+', abs(mnt) / 60,
                         abs(mnt) % 60);
                o = off;
            }
            if (buf && dg_parse_datetime(txt, len, (deg_date_order)r->opt.date_order, o, buf, cap,
                                         assumed) == DEG_OK)
                v = json_string(buf);
            else
                dg_clear_error();
            free(buf);
        } else {
            char buf[11];
            if (dg_parse_date(txt, len, (deg_date_order)r->opt.date_order, buf) == DEG_OK)
                v = json_string(buf);
            else
                dg_clear_error();
        }
        if (!v) {
            *reason = "unparsable";
            return NULL;
        }
    } else {
        v = json_stringn(txt, len);
    }
    if (!v) {
        *reason = "unparsable";
        return NULL;
    }
    json_t *errs = json_array();
    size_t ne = 0;
    if (dg_validate(schema, v, errs, &ne) != DEG_OK) {
        dg_clear_error();
        ne = 1;
    }
    if (ne) {
        const char *kw = json_string_value(json_object_get(json_array_get(errs, 0), "keyword"));
        static const char *const KW[] = {"minLength", "maxLength", "pattern", "format",
                                         "minimum", "maximum", "exclusiveMinimum",
                                         "exclusiveMaximum", "multipleOf"};
        *reason = "unparsable";
        for (size_t i = 0; kw && i < sizeof KW / sizeof KW[0]; i++)
            if (strcmp(kw, KW[i]) == 0) *reason = KW[i];
        json_decref(v);
        v = NULL;
    }
    json_decref(errs);
    return v;
}

/* The kind a plain string's name says its value is (libdeg 0.25.0): a span leaf outside
 * arrays with no format or pattern whose name's last word names a format
 * (dg_key_value_kind: "email"/"mail" an e-mail address, "url"/"uri"/"link" a URI) or is
 * "homepage"/"website" (a URI). Why: `maintainer_email` over
 * "Maintainer: Julian Seward <jseward@acm.org>" took the name, `author_email` the name
 * before the address (bench/devreal set 3); the format says it when the schema has one,
 * the name when it has none. Only with the key prior on (a checkpoint without it decodes
 * as before), and only when the context has such a candidate (dg_fill_decode_extract). */
static const char *name_kind(const dg_ckpt *k, const dg_field_plan *f)
{
    if (!k->key_prior.on || f->mode != DG_MODE_SPAN || f->format != DG_FORMAT_NONE ||
        f->constraints.pattern || f->depth_items > 0 || f->path.n == 0 ||
        !f->path.seg[f->path.n - 1])
        return NULL;
    char name[DG_KEY_MAX_LEN + 1];
    const char *seg = f->path.seg[f->path.n - 1];
    dg_key_norm(seg, strlen(seg), name, sizeof name);
    const char *w = strrchr(name, ' ');
    w = w ? w + 1 : name;
    const char *kind = dg_key_value_kind(w);
    return kind ? kind : !strcmp(w, "homepage") || !strcmp(w, "website") ? "uri" : NULL;
}

static const char *cand_kind(const dg_field_plan *f)
{
    if (f->mode == DG_MODE_NUMBER) return f->type == DG_TYPE_INTEGER ? "integer" : "number";
    if (f->mode == DG_MODE_DATE) return f->format == DG_FORMAT_DATE_TIME ? "date-time" : "date";
    if (f->format == DG_FORMAT_EMAIL) return "email";
    if (f->format == DG_FORMAT_URI) return "uri";
    if (f->format == DG_FORMAT_UUID) return "uuid";
    return NULL;
}

/* Log-softmax over the context tokens + null of logits t[0..nc) and null. */
static void log_softmax_ctx(float *lg, size_t n, double T, double *lp)
{
    double mx = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if ((double)lg[i] / T > mx) mx = (double)lg[i] / T;
    double z = 0;
    for (size_t i = 0; i < n; i++) z += exp((double)lg[i] / T - mx);
    double lz = log(z) + mx;
    for (size_t i = 0; i < n; i++) lp[i] = (double)lg[i] / T - lz;
}

/* The DG_SPAN_TOP best token spans [ti, tj], ti <= tj < ti + DG_SPAN_MAX_TOKENS, by
 * start + end log-probability (lps, lpe) into cs (a heap with the worst kept at the
 * root, by cmp_cand; not sorted); returns how many (< DG_SPAN_TOP when nc is small).
 * Spans over a line break (span_single_line) or, one_sentence, a sentence end are
 * none: a longer span from the same start holds it too. */
static size_t top_token_spans(const dg_ckpt *k, const freq *r, const double *lps,
                              const double *lpe, size_t nc, int one_sentence, cand *cs)
{
    size_t n_c = 0;
    for (size_t ti = 0; ti < nc; ti++) {
        size_t lim = ti + DG_SPAN_MAX_TOKENS < nc ? ti + DG_SPAN_MAX_TOKENS : nc;
        for (size_t tj = ti; tj < lim; tj++) {
            if (k->span_single_line && crosses_line(r, ti, tj)) break;
            if (one_sentence &&
                crosses_sentence(r, r->nb_next[r->tok_cp0[ti]], r->nb_prev[r->tok_cp1[tj]]))
                break;
            double s = lps[ti] + lpe[tj];
            cand c = {ti, tj, s, ti * DG_SPAN_MAX_TOKENS + (tj - ti)};
            if (n_c < DG_SPAN_TOP) {
                size_t x = n_c++;
                cs[x] = c;
                while (x > 0 && cmp_cand(&cs[(x - 1) / 2], &cs[x]) < 0) {
                    cand t = cs[x];
                    cs[x] = cs[(x - 1) / 2];
                    cs[(x - 1) / 2] = t;
                    x = (x - 1) / 2;
                }
            } else if (cmp_cand(&c, &cs[0]) < 0) {
                /* cs[0] is the worst kept (heap ordered by cmp: worst at root) */
                cs[0] = c;
                size_t x = 0;
                for (;;) {
                    size_t l = 2 * x + 1, rr = l + 1, w = x;
                    if (l < n_c && cmp_cand(&cs[l], &cs[w]) > 0) w = l;
                    if (rr < n_c && cmp_cand(&cs[rr], &cs[w]) > 0) w = rr;
                    if (w == x) break;
                    cand t = cs[x];
                    cs[x] = cs[w];
                    cs[w] = t;
                    x = w;
                }
            }
        }
    }
    return n_c;
}

/* The reported confidence of an outcome with log-probability lp (§12.3:
 * exp(lp)); a checkpoint with calibration.extract_confidence reports
 * sigmoid(scale * lp + bias) instead: p_start * p_end of a pointer pair is not
 * a span probability (held-out reliability: 0.01 reported, 0.25 right), and
 * Platt scaling (Platt 1999) of the log fit on development data maps it to
 * one. Decisions never read it (null vs span compares lp). */
double dg_fill_extract_confidence(const dg_ckpt *k, double lp)
{
    if (!k->has_xconf) return exp(lp);
    double z = k->xconf_scale * lp + k->xconf_bias;
    return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
}

/* The decoding priors on pointer logits l (w 0 start, 1 end; nc context tokens,
 * l[nc] the null outcome): a plain list item's bonus at its first/last token, an
 * object list item's span kept inside the item and the bonus at the first/last
 * token of the leaf's table cell (to null when the cell is written empty: "| - |",
 * JSON null), the key prior's kb, the LM start prior lm (start only). */
static void add_priors(const dg_ckpt *k, const freq *r, int w, float *l, size_t nc,
                       int list_item, const size_t *lt, const dg_cell *cell, const float *kb,
                       const float *lm)
{
    if (list_item == 1) l[lt[w]] += (float)r->list_bonus;
    for (size_t t = 0; list_item == 2 && t < nc; t++)
        if (t < lt[0] || t > lt[1]) l[t] = -INFINITY;
    if (cell) /* the cell's edge token, or null for an empty cell */
        l[cell->c1 > cell->c0 ? r->cp_tok[w ? cell->c1 - 1 : cell->c0] : nc] +=
            (float)r->list_bonus;
    if (k->key_prior.on)
        for (size_t t = 0; t < nc; t++) l[t] += kb[t];
    if (w == 0 && r->lm_prior > 0)
        for (size_t t = 0; t < nc; t++) l[t] += lm[t];
}

/* Leaf L's plain spans keep to one sentence: span_single_sentence, and L outside
 * arrays (an item's text is its list's or its anchor's: "German translation.
 * Thanks Erik" is one changelog item). */
static int one_sentence(const dg_ckpt *k, const leaf *L)
{
    return k->span_single_sentence && L->inst < 0;
}

/* Trimmed code point span [s, e) keeps to span_single_line, span_single_sentence and
 * span_word_bounds. */
static int span_rules_ok(const dg_ckpt *k, const freq *r, const leaf *L, size_t s, size_t e)
{
    if (k->span_single_line && r->nl_pre[e] != r->nl_pre[s]) return 0;
    if (one_sentence(k, L) && crosses_sentence(r, s, e)) return 0;
    return !k->span_word_bounds || word_bounded(r, s, e);
}

/* span_whole_names (names.h): plain span [*s, *e) of capitalised words grows to the
 * capitalised words next to it, inside L's list item when its array is anchored on a
 * list (item: the list item), when the grown span keeps to the span rules too. */
static void whole_name(const dg_ckpt *k, const freq *r, const leaf *L, size_t item,
                       size_t *s, size_t *e)
{
    size_t lo = 0, hi = r->ctx_len;
    if (L->inst >= 0 && r->insts[L->inst].from_list) {
        lo = r->cp_byte[r->lists.item[2 * item]];
        hi = r->cp_byte[r->lists.item[2 * item + 1]];
    }
    size_t b0 = r->cp_byte[*s], b1 = r->cp_byte[*e];
    if (b0 < lo || b1 > hi) return;
    size_t x0 = b0 - lo, x1 = b1 - lo;
    if (!dg_name_extend(r->ctx + lo, hi - lo, &x0, &x1)) return;
    size_t ns = *s - dg_utf8_count(r->ctx + lo + x0, b0 - (lo + x0));
    size_t ne = *e + dg_utf8_count(r->ctx + b1, lo + x1 - b1);
    if (!span_rules_ok(k, r, L, ns, ne)) return;
    *s = ns;
    *e = ne;
}

/* An item of a list of names (lists.h dg_lists_names_array) is its name: span [s, *e)
 * ends where the name of L's list item does (a token may run past it: "a>=" of
 * "rsa>=4.1"); 0 when the span starts there or after. */
static int name_clip(const freq *r, const leaf *L, size_t s, size_t *e)
{
    if (L->inst < 0 || !r->insts[L->inst].name_end) return 1;
    size_t end = r->insts[L->inst].name_end[L->item];
    if (*e > end) *e = end;
    return s < *e;
}

/* Code points [*s, *e) of candidate c for leaf L, or 0 when it is not to be read: a
 * token span (typed = 0) is trimmed and held to the span rules (span_single_line,
 * span_single_sentence, span_word_bounds; then span_whole_names); a table record's
 * leaf (rc: its record's cells, item: its list item) reads one cell (record_span).
 * Grammar candidates (typed) are code points already. */
static int cand_span(const dg_ckpt *k, const freq *r, const leaf *L, int typed,
                     const size_t *rc, size_t item, const dg_cell *cell, const cand *c,
                     size_t *s, size_t *e)
{
    size_t nf = L->inst >= 0 ? r->plan->arrays[r->insts[L->inst].array].n_fields : 0;
    /* a headerless table's cells are its only structure: a value is a whole cell */
    int whole = rc && r->lists.p[r->insts[L->inst].list1 - 1].table == DG_TABLE_HEADERLESS;
    *s = c->s;
    *e = c->e;
    if (typed) return rc ? record_span(r, item, rc, nf, cell, whole, s, e)
                         : dg_fill_cell_span_ok(r, *s, *e);
    size_t s0 = r->tok_cp0[c->s], e0 = r->tok_cp1[c->e];
    if (rc && !record_span(r, item, rc, nf, cell, whole, &s0, &e0)) return 0;
    if (e0 <= s0) return 0;
    if (dg_span_trim(r->ctx, r->ctx_len, s0, e0, s, e) != DEG_OK) {
        dg_clear_error();
        return 0;
    }
    if (*e <= *s || !name_clip(r, L, *s, e) || !span_rules_ok(k, r, L, *s, *e)) return 0;
    if (k->span_whole_names && !rc) whole_name(k, r, L, item, s, e);
    return rc || dg_fill_cell_span_ok(r, *s, *e);
}

/* A required, non-nullable leaf without a value: failed (its item is dropped, a
 * top-level one fails the fill) with the message saying why. */
static void fail_required(const freq *r, leaf *L, size_t n_c, const char *reason)
{
    L->failed = 1;
    char *ptr = dg_path_pointer(&r->plan->fields[L->field].path, L->idx, L->n_idx);
    if (asprintf(&L->fail_msg, "%s is required and not nullable, but no valid value was found "
                 "in the context (%zu candidate spans, %s)", ptr ? ptr : "?", n_c,
                 reason ? reason : "not_found") < 0)
        L->fail_msg = NULL;
    free(ptr);
}

/* The leaf's pointer logits lg ([2][nc + 1]: start, end) in its meta: their digest,
 * and with debug_raw the logits themselves (what tests check priors against). */
static void raw_logits(const dg_ckpt *k, leaf *L, const float *lg, size_t nc)
{
    dg_fill_raw_digest(k, L->meta, lg, 2 * (nc + 1), NULL, 0);
    for (int w = 0; w < 2 && k->debug_raw; w++) {
        json_t *x = json_array();
        for (size_t t = 0; t <= nc; t++)
            json_array_append_new(x, json_real((double)lg[(size_t)w * (nc + 1) + t]));
        json_object_set_new(L->meta, w ? "end_logits" : "start_logits", x);
    }
}

/* span_distinct (fill_distinct.c): L->alt = the value of the best valid candidate
 * of cs[0, n) (those after the chosen one, best first) whose span does not
 * overlap the chosen [bs, be), should a sibling with a better score hold that
 * span; its span [L->a0, L->a1) and log-probability L->alt_lp. A date that would
 * need an assumed offset is no alternative. Arguments as cand_span takes them. */
static void distinct_alt(const dg_ckpt *k, const freq *r, leaf *L, const json_t *schema,
                         int typed, const size_t *rc, size_t item, const dg_cell *cell,
                         int list_item, const cand *cs, size_t n, size_t bs, size_t be)
{
    const dg_field_plan *f = &r->plan->fields[L->field];
    for (size_t i = 0; i < n && !L->alt; i++) {
        size_t s, e;
        const char *why = NULL;
        int as = 0;
        if (list_item == 2 && cs[i].lp == -INFINITY) continue; /* outside its list item */
        if (!cand_span(k, r, L, typed, rc, item, cell, &cs[i], &s, &e) || (s < be && bs < e))
            continue;
        json_t *v = dg_fill_span_value(r, f, schema, s, e, &why, &as);
        if (v && as) {
            json_decref(v);
            continue;
        }
        L->alt = v;
        L->a0 = s;
        L->a1 = e;
        L->alt_lp = cs[i].lp;
    }
}

/* The code point where key line kv's value ends with its continuation lines: the lines
 * after it that open with a blank and are no key line themselves (an RFC 822 folded
 * value: DEP-5's "Copyright:" of several holders, a Description). */
static size_t folded_end(const freq *r, const dg_keyline *kv)
{
    size_t b = r->cp_byte[kv->val1], end = b;
    const char *c = r->ctx;
    while (b < r->ctx_len && c[b] != '\n') b++;
    while (b < r->ctx_len && b + 1 < r->ctx_len && (c[b + 1] == ' ' || c[b + 1] == '\t')) {
        const char *nl = memchr(c + b + 1, '\n', r->ctx_len - b - 1);
        size_t e = nl ? (size_t)(nl - c) : r->ctx_len, k0, k1, v0, v1, t = b + 1;
        while (t < e && (c[t] == ' ' || c[t] == '\t' || c[t] == '\r')) t++;
        if (t == e || dg_keyline_split(c, b + 1, e, &k0, &k1, &v0, &v1)) break;
        end = e;
        b = e;
    }
    return end > r->cp_byte[kv->val1] ? dg_utf8_count(c, end) : kv->val1;
}

/* Another address's span (libdeg 0.28.0): 1 when a nullable address leaf (its kind
 * "uri" or "email", outside arrays), which no key line of the context names
 * (dg_fill_key_bonus), has its best span [s, e) inside the value (continuation lines
 * included, folded_end) of a key line that says what else that address is for
 * (dg_key_address_purpose: "repository url", "bugs", "Copyright"): the document does not
 * write the leaf's address, it reads null. Why: an npm package.json without "homepage"
 * answered `homepage` with its repository's "git+https://...git" URL (bench/devreal sets
 * 10, 11). Limited to addresses: a key in another language names no purpose here and
 * keeps its span (the unkeyed-null rule of libdeg 0.27.0's trials lost on datagen-v2's
 * multilingual keys). */
static int other_address(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                         const char *kind, size_t s, size_t e)
{
    if (!k->key_prior.on || f->depth_items > 0 || !kind ||
        (strcmp(kind, "uri") != 0 && strcmp(kind, "email") != 0))
        return 0;
    int in = 0;
    for (size_t i = 0; i < r->kv.n; i++) {
        const dg_keyline *kv = &r->kv.p[i];
        if (dg_fill_key_bonus(k, r, f, kv) > 0) return 0;
        if (kv->val0 <= s && dg_key_address_purpose(kv->key) &&
            (e <= kv->val1 || e <= folded_end(r, kv)))
            in = 1;
    }
    return in;
}

deg_status dg_fill_decode_extract(const dg_ckpt *k, freq *r, job *j)
{
    leaf *L = &r->leaves[j->target];
    const dg_field_plan *f = &r->plan->fields[L->field];
    const int E = k->h.E;
    const float *a = j->h + (j->n_mark - 1) * (size_t)E;
    size_t nc = r->c1 - r->c0;
    deg_status st = DEG_OK;
    float q[DG_HEAD_DIM];
    float *rs = malloc(2 * (size_t)E * sizeof(float));
    float *lg = malloc(2 * (nc + 1) * sizeof(float));
    double *lp = malloc(2 * (nc + 1) * sizeof(double));
    float *kb = malloc(2 * (nc + 1) * sizeof(float));
    /* only with the prior on: the buffer is nc floats per extract leaf */
    float *lm = r->lm_prior > 0 ? malloc((nc + 1) * sizeof(float)) : NULL;
    cand *cs = NULL;
    size_t *spans = NULL, ns = 0;
    json_t *schema = dg_fill_leaf_schema(f);
    size_t anc = 0, rend = 0;
    int anchored = dg_fill_innermost_anchor(r, L->inst, L->item, &anc, &rend);
    if (!rs || !lg || !lp || !kb || (r->lm_prior > 0 && !lm) || !schema) {
        st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
        goto done;
    }
    const char *kind = cand_kind(f);
    if (kind && (st = dg_candidates(kind, r->ctx, r->ctx_len, &spans, &ns)) != DEG_OK) goto done;
    if (!kind && (kind = name_kind(k, f)) != NULL) {
        if ((st = dg_candidates(kind, r->ctx, r->ctx_len, &spans, &ns)) != DEG_OK) goto done;
        if (ns == 0) kind = NULL; /* none written: the name reads a plain span */
    }
    dg_fill_key_prior_extract(k, r, f, spans, ns, kind != NULL, kb, kb + nc + 1);
    /* lambda 0 (off) adds nothing at all: such a fill is bitwise what it was */
    if (r->lm_prior > 0 && (st = lm_prior_start(k, r, a, nc, lm)) != DEG_OK) goto done;
    size_t lt[2], item = 0;
    const dg_cell *cell;
    const size_t *rc; /* a table's record: its leaves read cells (lists.h tables) */
    int list_item = list_item_tokens(r, L, lt, &item, &rc, &cell);
    int record = rc != NULL;
    for (int w = 0; w < 2; w++) {
        float *l = lg + (size_t)w * (nc + 1);
        dg_head_extract_logits(&k->h, w, a, r->ctx_hidden, nc, rs + (size_t)w * E, q, l);
        if (anchored) dg_anchor_bias_add(&k->h, w, anc, rend, l, nc);
        add_priors(k, r, w, l, nc, list_item, lt, cell, kb + (size_t)w * (nc + 1), lm);
        log_softmax_ctx(l, nc + 1, k->temp[DG_T_EXTRACT], lp + (size_t)w * (nc + 1));
    }
    const double *lps = lp, *lpe = lp + nc + 1;
    double null_lp = lps[nc] + lpe[nc];
    size_t n_c = 0;
    if (kind) {
        cs = malloc((ns ? ns : 1) * sizeof *cs);
        if (!cs) {
            st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            goto done;
        }
        n_c = grammar_cands(r, f, spans, ns, lps, lpe, cs);
    } else {
        /* top DG_SPAN_TOP token spans i <= j < i + 128 (min-heap by score) */
        cs = malloc(DG_SPAN_TOP * sizeof *cs);
        if (!cs) {
            st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory");
            goto done;
        }
        n_c = top_token_spans(k, r, lps, lpe, nc, one_sentence(k, L), cs);
    }
    qsort(cs, n_c, sizeof *cs, cmp_cand);
    json_t *best = NULL;
    size_t bs = 0, be = 0;
    double blp = -INFINITY;
    int assumed = 0;
    const char *first_reason = NULL;
    size_t next_c = 0; /* candidates after the chosen one (span_distinct's alternative) */
    for (size_t i = 0; i < n_c && !best; i++) {
        size_t s, e;
        next_c = i + 1;
        if (list_item == 2 && cs[i].lp == -INFINITY) continue; /* outside its list item */
        if (!cand_span(k, r, L, kind != NULL, rc, item, cell, &cs[i], &s, &e))
            continue;
        const char *reason = NULL;
        int as = 0;
        json_t *v = dg_fill_span_value(r, f, schema, s, e, &reason, &as);
        if (v) {
            best = v;
            bs = s;
            be = e;
            blp = cs[i].lp;
            assumed = as;
        } else if (!first_reason) {
            first_reason = reason;
        }
    }
    if (best && k->span_distinct)
        distinct_alt(k, r, L, schema, kind != NULL, rc, item, cell, list_item, cs + next_c,
                     n_c - next_c, bs, be);
    double margin = r->opt.has_null_margin ? r->opt.null_margin : k->null_margin;
    int take_null = 0;
    const char *reason = NULL;
    if (f->on_null == DG_ON_NULL_FORBID) {
        /* item_null (deg_fill.h): an item the null head rejects is missing (§12.6 drop);
         * a list's item is written (the list is named like the array), so only a
         * table record's empty cell drops it */
        int item_null = k->item_null && L->inst >= 0 &&
                        (!list_item || (record && cell && cell->c0 == cell->c1));
        if (best && item_null && blp < null_lp + margin) {
            json_decref(best);
            best = NULL;
            first_reason = "the null head holds it absent";
        }
        if (!best) fail_required(r, L, n_c, first_reason);
    } else if (!best) {
        take_null = 1;
        reason = first_reason ? first_reason : "not_found";
    } else if (blp < null_lp + margin || other_address(k, r, f, kind, bs, be)) {
        take_null = 1;
        reason = blp < null_lp + margin ? "not_found" : "other_address";
    }
    L->meta = json_pack("{s:s}", "mode", dg_mode_name(f->mode));
    L->null_lp = null_lp;
    if (best && !take_null) {
        L->value = best;
        best = NULL;
        L->has_span = 1;
        L->s0 = bs;
        L->s1 = be;
        L->lp = blp;
        json_object_set_new(L->meta, "confidence",
                            json_real(dg_fill_extract_confidence(k, blp)));
        json_object_set_new(L->meta, "span", json_pack("[I,I]", (json_int_t)bs, (json_int_t)be));
        if (assumed) json_object_set_new(L->meta, "assumed_offset", json_true());
    } else {
        json_object_set_new(L->meta, "confidence",
                            json_real(dg_fill_extract_confidence(k, null_lp)));
        json_object_set_new(L->meta, "span", json_null());
        if (reason) json_object_set_new(L->meta, "null_reason", json_string(reason));
        if (take_null && f->on_null == DG_ON_NULL_NULL) L->value = json_null();
    }
    raw_logits(k, L, lg, nc);
    json_decref(best);
done:
    json_decref(schema);
    free(spans);
    free(cs);
    free(rs);
    free(lg);
    free(lp);
    free(kb);
    free(lm);
    return st;
}
