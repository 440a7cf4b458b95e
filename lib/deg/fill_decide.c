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
#include "deg/licenseprior.h"
#include "deg/mentions.h"
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

/* Does the word [w, w + n) start at byte i of s as a whole word (case-insensitive; no
 * letter or digit right before or after it inside [lo, hi))? */
static int word_at(const char *s, size_t lo, size_t hi, size_t i, const char *w, size_t n)
{
    return n && i + n <= hi && strncasecmp(s + i, w, n) == 0 &&
           !(i > lo && isalnum((unsigned char)s[i - 1])) &&
           !(i + n < hi && isalnum((unsigned char)s[i + n]));
}

/* The text a choice option is written as in a document: a string's own, an integer's
 * digits (into buf); NULL for other options (booleans, null, numbers with a fraction). */
static const char *option_text(const json_t *v, char *buf, size_t cap)
{
    if (json_is_string(v)) return json_string_value(v);
    if (!json_is_integer(v)) return NULL;
    snprintf(buf, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return buf;
}

/* Bytes [*b, *e) of the value of line kv. */
static void kv_bytes(const freq *r, const dg_keyline *kv, size_t *b, size_t *e)
{
    *b = r->cp_byte[kv->val0];
    *e = r->cp_byte[kv->val1];
}

/* Does a licence identifier go on past [i, i + n) of s[b, e): "+", or '-' and a letter or
 * digit ("GPL-3.0" of "GPL-3.0-or-later", "BSD" of "BSD-3-Clause")? */
static int license_goes_on(const char *s, size_t b, size_t e, size_t i, size_t n)
{
    size_t j = i + n;
    return (j < e && s[j] == '+') ||
           (j + 1 < e && s[j] == '-' && isalnum((unsigned char)s[j + 1])) ||
           (i >= b + 2 && s[i - 1] == '-' && isalnum((unsigned char)s[i - 2]));
}

/* Is option o of f written in value [b, e) of s as a whole word (case-insensitive) that
 * is not part of a longer option's occurrence ("GPL-2" in "GPL-2+" is GPL-2+'s) nor, for
 * a licence leaf, of a longer identifier (license_goes_on)? */
static int option_named(const dg_field_plan *f, size_t o, const char *s, size_t b, size_t e)
{
    char buf[32], buf2[32];
    const char *t = option_text(json_array_get(f->options, o), buf, sizeof buf);
    size_t n = t ? strlen(t) : 0;
    int lic = dg_license_field(f);
    for (size_t i = b; n && i + n <= e; i++) {
        if (!word_at(s, b, e, i, t, n) || (lic && license_goes_on(s, b, e, i, n))) continue;
        int covered = 0;
        for (size_t p = 0; p < f->n_options && !covered; p++) {
            const char *u = p == o ? NULL : option_text(json_array_get(f->options, p), buf2,
                                                        sizeof buf2);
            size_t m = u ? strlen(u) : 0;
            if (m <= n) continue;
            for (size_t j = i + n - b > m ? i + n - m : b; j <= i && !covered; j++)
                covered = word_at(s, b, e, j, u, m);
        }
        if (!covered) return 1;
    }
    return 0;
}

/* The option "other" (case-insensitive) of f, or SIZE_MAX. */
static size_t other_option(const dg_field_plan *f)
{
    for (size_t o = 0; o < f->n_options; o++) {
        const json_t *v = json_array_get(f->options, o);
        if (json_is_string(v) && strcasecmp(json_string_value(v), "other") == 0) return o;
    }
    return SIZE_MAX;
}

/* Option licence o (option i of f) as the options mean it: an option that states no "or
 * later" when another option is its "or later" twin means "only" ("GPL-2" next to "GPL-2+",
 * DEP-5's and SPDX's reading; libdeg 0.28.0: before, a written "GPL-2+" gave both the
 * bonus and the heads chose). */
static void option_twin_only(const dg_field_plan *f, size_t i, dg_license *o)
{
    dg_license t;
    for (size_t p = 0; p < f->n_options && o->later < 0; p++) {
        const json_t *v = json_array_get(f->options, p);
        if (p != i && json_is_string(v) &&
            dg_license_parse(json_string_value(v), json_string_length(v), &t) &&
            t.family == o->family && t.major == o->major &&
            (t.minor < 0 ? 0 : t.minor) == (o->minor < 0 ? 0 : o->minor) && t.later == 1)
            o->later = 0;
    }
}

/* The licences written in value bytes [b, e) of a key line of the context
 * (licenseprior.h; read from the line's start, as its key says "licence"), into w (at
 * most cap): how many. */
static size_t value_licenses(const freq *r, size_t b, size_t e, dg_license *w, size_t cap)
{
    size_t l = b, n = 0;
    while (l > 0 && r->ctx[l - 1] != '\n') l--;
    dg_license all[8];
    size_t na = dg_license_written(r->ctx + l, e - l, all, 8);
    for (size_t i = 0; i < na && n < cap; i++)
        if (all[i].at + l >= b) w[n++] = all[i];
    return n;
}

/* For licence leaf f: 1 when value [b, e) states several licences ("GPL-2+ or
 * Artistic", "(MIT OR CC0-1.0)"); else 0, and with named (may be NULL) set for the options
 * that name the one licence it states, by any spelling ("GPL-3.0+" for
 * "GPL-3.0-or-later", option_twin_only). */
static int value_license_kind(const freq *r, const dg_field_plan *f, size_t b, size_t e,
                              unsigned char *named)
{
    dg_license w[8], o;
    size_t nw = dg_license_field(f) ? value_licenses(r, b, e, w, 8) : 0;
    for (size_t i = 1; i < nw; i++)
        if (!dg_license_same(&w[0], &w[i])) return 1;
    for (size_t i = 0; i < f->n_options && nw && named; i++) {
        const json_t *v = json_array_get(f->options, i);
        if (!json_is_string(v) ||
            !dg_license_parse(json_string_value(v), json_string_length(v), &o))
            continue;
        option_twin_only(f, i, &o);
        if (dg_license_same(&o, &w[0])) named[i] = 1;
    }
    return 0;
}

/* Choice: each option named in a matching line's value (option_named; for a licence leaf
 * whose value names no option as written, each option that is the licence it states,
 * value_license_kind) gets that line's bonus (the largest over lines). A leaf with an
 * option "other" gives the bonus to "other" instead when the value names none of its
 * options or several at once, or states several licences ("BlueOak-1.0.0", "GPL-2+ or
 * Artistic", "(MIT OR CC0-1.0)": none of the options is the value; libdeg 0.28.0). */
static void key_prior_choice(const dg_ckpt *k, const freq *r, const dg_field_plan *f, float *lg)
{
    if (!k->key_prior.on) return;
    size_t no = f->n_options ? f->n_options : 1, other = other_option(f);
    float *best = calloc(no, sizeof *best);
    unsigned char *named = calloc(no, 1);
    if (!best || !named) { /* the prior is advisory: without memory the heads decide alone */
        free(best);
        free(named);
        return;
    }
    /* lines outer, so the field/key match is computed once per line, not per option */
    for (size_t i = 0; i < r->kv.n; i++) {
        float bonus = (float)dg_fill_key_bonus(k, r, f, &r->kv.p[i]);
        if (bonus <= 0) continue;
        size_t b, e, nn = 0, by_name = 0;
        kv_bytes(r, &r->kv.p[i], &b, &e);
        for (size_t o = 0; o < f->n_options; o++)
            nn += named[o] = (unsigned char)option_named(f, o, r->ctx, b, e);
        /* a licence the value states by another spelling names the options that are it */
        int several = value_license_kind(r, f, b, e, nn == 0 ? named : NULL);
        for (size_t o = 0; o < f->n_options && nn == 0; o++) by_name += named[o];
        if (other != SIZE_MAX && (several || (nn != 1 && by_name == 0))) {
            if (bonus > best[other]) best[other] = bonus;
            continue;
        }
        for (size_t o = 0; o < f->n_options; o++)
            if (named[o] && bonus > best[o]) best[o] = bonus;
    }
    for (size_t o = 0; o < f->n_options; o++) lg[o] += best[o];
    free(best);
    free(named);
}

/* Field f's block [b[0], b[1]) (bytes; freq.block), NULL with the key prior off. */
static const size_t *field_block(const freq *r, const dg_field_plan *f)
{
    return r->block ? r->block + 2 * (size_t)(f - r->plan->fields) : NULL;
}

/* The bytes [*b0, *b1) a choice leaf's written options are looked for in: the context
 * (or the block its description points at, locator.h) for a leaf outside arrays, its
 * item's region for a leaf of an anchored array item; 0 for other array leaves (key
 * lines and words repeat per item there). */
static int choice_scope(const freq *r, const leaf *L, const dg_field_plan *f, size_t *b0,
                        size_t *b1)
{
    *b0 = 0;
    *b1 = r->ctx_len;
    const size_t *blk = field_block(r, f);
    if (f->depth_items == 0 && blk) { /* the block its description points at */
        *b0 = blk[0];
        *b1 = blk[1];
    }
    if (f->depth_items == 0) return 1;
    size_t anc, rend;
    if (!dg_fill_innermost_anchor(r, L->inst, L->item, &anc, &rend)) return 0;
    *b0 = r->cp_byte[r->tok_cp0[anc]];
    *b1 = rend < r->c1 - r->c0 ? r->cp_byte[r->tok_cp0[rend]] : r->ctx_len;
    return 1;
}

/* Choice phrase (key_prior.phrase, libdeg 0.20.0): an option written as a whole word
 * right after the leaf's name or title in running text, maybe with one linking word
 * between (dg_key_phrase_before_name: "urgency was high", "priority is urgent"), gets
 * `phrase` (once per option). The scope is the context for a leaf outside arrays, its
 * item's region for a leaf of an anchored item (where key lines are not read: they
 * repeat per item); other array leaves get none. Why: a changelog entry written as
 * "* 1.0.8-4 went out on ...; urgency was high." left urgency to the head, which
 * answered "medium" for it (test100); the typed candidates of key_prior.phrase read
 * such labels since libdeg 0.10.0. */
static void phrase_prior_choice(const dg_ckpt *k, const freq *r, const leaf *L,
                                const dg_field_plan *f, float *lg)
{
    if (!k->key_prior.on || !(k->key_prior.phrase > 0) || f->path.n == 0 ||
        !f->path.seg[f->path.n - 1])
        return;
    size_t b0, b1;
    if (!choice_scope(r, L, f, &b0, &b1)) return;
    for (size_t o = 0; o < f->n_options; o++) {
        char buf[32];
        const char *t = option_text(json_array_get(f->options, o), buf, sizeof buf);
        size_t n = t ? strlen(t) : 0;
        for (size_t i = b0; n && i + n <= b1; i++) {
            if (!word_at(r->ctx, 0, r->ctx_len, i, t, n)) continue;
            if (dg_key_phrase_before_name(f->path.seg[f->path.n - 1], f->title, r->ctx, i)) {
                lg[o] += (float)k->key_prior.phrase;
                break;
            }
        }
    }
}

/* Does the whole word [i, i + n) of s sit in a URL or an e-mail address (the run of
 * non-blank bytes around it holds "://", '@' or "www.")? */
static int in_address(const char *s, size_t len, size_t i, size_t n)
{
    size_t t0 = i, t1 = i + n;
    while (t0 > 0 && !isspace((unsigned char)s[t0 - 1])) t0--;
    while (t1 < len && !isspace((unsigned char)s[t1])) t1++;
    for (size_t j = t0; j < t1; j++)
        if (s[j] == '@' || (j + 3 <= t1 && memcmp(s + j, "://", 3) == 0) ||
            (j + 4 <= t1 && strncasecmp(s + j, "www.", 4) == 0))
            return 1;
    return 0;
}

/* Is the word at byte i of s negated by the word before it ("no", "not", "non",
 * "without", "never"; "non-X" too)? */
static int after_negation(const char *s, size_t i)
{
    static const char *const cue[] = {"no", "not", "non", "without", "never"};
    size_t e = i;
    while (e > 0 && (s[e - 1] == ' ' || s[e - 1] == '-')) e--;
    if (e == i) return 0;
    size_t b = e;
    while (b > 0 && isalpha((unsigned char)s[b - 1])) b--;
    for (size_t c = 0; c < sizeof cue / sizeof *cue; c++)
        if (e - b == strlen(cue[c]) && strncasecmp(s + b, cue[c], e - b) == 0) return 1;
    return 0;
}

/* fill_internal.h; the key prior's line index is in document order. */
int dg_fill_in_block(const freq *r, const dg_field_plan *f, size_t i)
{
    const size_t *b = field_block(r, f);
    return !b || (i >= b[0] && i < b[1]);
}

double dg_fill_key_bonus(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                         const dg_keyline *kv)
{
    if (!dg_fill_in_block(r, f, r->cp_byte[kv->val0])) return 0.0;
    return dg_key_bonus(&k->key_prior, f, kv);
}

int dg_fill_under_other_key(const dg_ckpt *k, const freq *r, const dg_field_plan *f, size_t i)
{
    if (f->depth_items > 0) return 0;
    int other = 0;
    for (size_t l = 0; l < r->kv.n; l++) {
        size_t b, e;
        kv_bytes(r, &r->kv.p[l], &b, &e);
        if (b > i) break; /* key lines are in document order (dg_keylines_scan) */
        if (i >= e) continue;
        if (i == b || dg_key_bonus(&k->key_prior, f, &r->kv.p[l]) > 0 ||
            dg_key_match(f, r->kv.p[l].key) > 0)
            return 0;
        other = 1;
    }
    return other;
}

/* Does byte i lie in the value of a line naming licence leaf f (dg_fill_key_bonus) that
 * states several licences (value_license_kind)? */
static int in_several_licenses(const dg_ckpt *k, const freq *r, const dg_field_plan *f, size_t i)
{
    for (size_t l = 0; l < r->kv.n; l++) {
        size_t b, e;
        kv_bytes(r, &r->kv.p[l], &b, &e);
        if (i >= b && i < e && dg_fill_key_bonus(k, r, f, &r->kv.p[l]) > 0)
            return value_license_kind(r, f, b, e, NULL) > 0;
    }
    return 0;
}

/* Is option w (n bytes) written in [b0, b1) as the sole rule reads it: a whole word
 * (case-insensitive; for a licence leaf not part of a longer identifier,
 * license_goes_on, nor, when an option is "other", one of several licences a value
 * naming the leaf states: key_prior_choice gave that value to "other"), outside URLs and
 * e-mail addresses, not negated, not in another key's value? */
static int sole_written(const dg_ckpt *k, const freq *r, const dg_field_plan *f, size_t b0,
                        size_t b1, const char *w, size_t n)
{
    const char *s = r->ctx;
    int lic = dg_license_field(f), other = lic && other_option(f) != SIZE_MAX;
    for (size_t i = b0; n && i + n <= b1; i++)
        if (word_at(s, b0, b1, i, w, n) && !(lic && license_goes_on(s, b0, b1, i, n)) &&
            !in_address(s, r->ctx_len, i, n) &&
            !after_negation(s, i) && !dg_fill_under_other_key(k, r, f, i) &&
            !(other && in_several_licenses(k, r, f, i)))
            return 1;
    return 0;
}

/* Choice sole (key_prior.sole, libdeg 0.22.0): when exactly one of a leaf's string
 * options is written (sole_written) in its scope (choice_scope), that option gets
 * `sole`. Why: an announcement "Join us for Rust Workshop in ..." left kind to the
 * head, which has no layout to go by in prose; on datagen-v2's train and val splits
 * the one option written is the gold value in 558 of 560 such leaves. Two options
 * written (or an option inside another: "high", "very high") give no bonus. Since
 * libdeg 0.23.0 a word in a URL or e-mail address, after a negation or in another
 * key's value is not written: on real documents (a new user's check, 0.22.0) bc's
 * licence read BSD at p 0.999998 from "OS: UNIX (BSD, ...)" and "no workshop this
 * week" read workshop. */
static void sole_prior_choice(const dg_ckpt *k, const freq *r, const leaf *L,
                              const dg_field_plan *f, float *lg)
{
    size_t b0, b1, n_written = 0, which = 0;
    if (!k->key_prior.on || !(k->key_prior.sole > 0) || !choice_scope(r, L, f, &b0, &b1))
        return;
    for (size_t o = 0; o < f->n_options && n_written < 2; o++) {
        const json_t *v = json_array_get(f->options, o);
        if (!json_is_string(v) || !json_string_length(v)) continue;
        if (sole_written(k, r, f, b0, b1, json_string_value(v), json_string_length(v))) {
            n_written++;
            which = o;
        }
    }
    if (n_written == 1) lg[which] += (float)k->key_prior.sole;
}

/* Choice licence (licenseprior.h, at key_prior.sole; libdeg 0.24.0): each option of a
 * licence leaf outside arrays naming a licence the context states gets `sole`; a name
 * inside another key's value (under_other_key: "OS: UNIX (BSD, Linux)") or outside the
 * leaf's block (locator.h) states none, nor, when an option is "other", one of several
 * in a value naming the leaf (key_prior_choice gave that value to "other"). */
static void license_prior_choice(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                                 float *lg)
{
    if (!k->key_prior.on || !(k->key_prior.sole > 0) || !dg_license_field(f)) return;
    dg_license w[DG_LICENSES_READ], o;
    size_t nw = dg_license_written(r->ctx, r->ctx_len, w, DG_LICENSES_READ), n = 0;
    int other = other_option(f) != SIZE_MAX;
    for (size_t j = 0; j < nw; j++) /* the licences that state the leaf's */
        if (dg_fill_in_block(r, f, w[j].at) && !dg_fill_under_other_key(k, r, f, w[j].at) &&
            !(other && in_several_licenses(k, r, f, w[j].at)))
            w[n++] = w[j];
    for (size_t i = 0; i < f->n_options && n; i++) {
        const json_t *v = json_array_get(f->options, i);
        if (!json_is_string(v) ||
            !dg_license_parse(json_string_value(v), json_string_length(v), &o))
            continue;
        option_twin_only(f, i, &o);
        for (size_t j = 0; j < n; j++)
            if (dg_license_same(&o, &w[j])) {
                lg[i] += (float)k->key_prior.sole;
                break;
            }
    }
}

/* noul: + the bonus of a matching line whose value's first word reads yes, - for no
 * (dg_key_yes_no: yes/true/y/1 and datagen's seven languages). */
static double key_prior_noul(const dg_ckpt *k, const freq *r, const dg_field_plan *f)
{
    if (!k->key_prior.on) return 0.0;
    double out = 0;
    for (size_t i = 0; i < r->kv.n; i++) {
        double bonus = dg_fill_key_bonus(k, r, f, &r->kv.p[i]);
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
 * *li: the list that told (-1: none); *on: the prior applied (meta says so);
 * *any_untold: an "any X" predicate ("has X") none told. */
static double count_prior_noul(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                               int *li, int *on, int *any_untold)
{
    dg_count_pred p[3];
    size_t np = k->count_prior.on ? dg_count_preds_of(f, p) : 0;
    int v = -1;
    *li = -1;
    *on = 0;
    *any_untold = 0;
    for (size_t i = 0; i < np && v < 0; i++)
        v = dg_count_judge(&r->lists, r->ctx, r->cp_byte, &p[i], li);
    double w = v >= 0 ? k->count_prior.bonus : k->count_prior.absent;
    if (np == 0 || w <= 0) return 0.0;
    *any_untold = v < 0 && p[0].op == DG_COUNT_ANY;
    if (v < 0) v = dg_count_holds(p[0].op, 0);
    *on = 1;
    return v ? w : -w;
}

/* The mention prior's noul term (mentions.h) for a leaf no other prior judged:
 * +/-bonus for a stated verdict, -absent (+absent negated) when nothing names the
 * subject. *v: the verdict (DG_MENTION_NONE: none applied). */
static double mention_prior_noul(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                                 dg_mention *v)
{
    int negated;
    *v = k->mention_prior.on ? dg_mention_judge(f, r->ctx, r->ctx_len, &negated)
                             : DG_MENTION_NONE;
    switch (*v) {
    case DG_MENTION_HOLDS: return k->mention_prior.bonus;
    case DG_MENTION_NOT: return -k->mention_prior.bonus;
    case DG_MENTION_ABSENT: return negated ? k->mention_prior.absent : -k->mention_prior.absent;
    default: return 0.0;
    }
}

static const char *mention_name(dg_mention v)
{
    return v == DG_MENTION_HOLDS ? "holds" : v == DG_MENTION_NOT ? "does_not_hold" : "absent";
}

/* A choice over exactly {true, false, null} (a nullable boolean, §3): *t, *fl, *nu
 * = the options' indices. */
static int nullable_boolean(const dg_field_plan *f, size_t *t, size_t *fl, size_t *nu)
{
    if (f->mode != DG_MODE_CHOICE || f->n_options != 3) return 0;
    int seen = 0;
    for (size_t o = 0; o < 3; o++) {
        json_t *v = json_array_get(f->options, o);
        if (json_is_true(v)) *t = o, seen |= 1;
        else if (json_is_false(v)) *fl = o, seen |= 2;
        else if (json_is_null(v)) *nu = o, seen |= 4;
    }
    return seen == 7;
}

/* Does f compare a value it names ("category_is_audio", "size over 100";
 * compareprior.h)? Such a field asks what the document writes for K, not whether
 * it mentions K and V: no mention verdict (an open "is the K V?" is no comparison). */
static int is_comparison(const dg_field_plan *f)
{
    dg_cmp_pred p;
    return dg_cmp_pred_of(f, &p) && (p.op == DG_CMP_GREATER || p.value[0]);
}

/* The noul evidence of leaf f without its head: the key prior's yes/no line, the
 * comparison prior, the count prior (a "has X" it found no list for: the mention
 * prior's verdict on running text instead, when it has one), and when none of them
 * judged it and it is no comparison, the mention prior (*v its verdict). *li /
 * *counted as count_prior_noul. */
static double noul_evidence(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                            int *li, int *counted, dg_mention *v)
{
    int untold;
    double l = key_prior_noul(k, r, f);
    l += dg_cmp_prior(&k->key_prior, f, r->ctx, &r->kv, r->cp_byte);
    double c = count_prior_noul(k, r, f, li, counted, &untold);
    *v = DG_MENTION_NONE;
    if (untold && k->mention_prior.on && !is_comparison(f)) {
        /* "has X" with no list of X and no "Has X:" line: the count prior's answer is
         * the closed-world 0 items; a sentence that says X holds (or not) tells more
         * ("Sunny flat with a balcony." for has_balcony; libdeg 0.21.0). Running text
         * only: "RemainAfterExit=on" is no statement about After= */
        dg_mention m = dg_mention_judge_prose(f, r->ctx, r->ctx_len, NULL);
        if (m == DG_MENTION_HOLDS || m == DG_MENTION_NOT) {
            c = m == DG_MENTION_HOLDS ? k->mention_prior.bonus : -k->mention_prior.bonus;
            *v = m;
        }
    }
    l += c;
    if (l == 0 && !*counted && !is_comparison(f)) l = mention_prior_noul(k, r, f, v);
    return l;
}

/* A nullable boolean with the mention prior on: outcome logits from the evidence
 * alone (mentions.h; the choice head never saw this option set): the stated side
 * gets |l|, null gets `absent` when nothing names the subject. 0 when no evidence
 * (the head decides), else 1 with lg filled and *v the mention verdict. */
static int nullable_boolean_evidence(const dg_ckpt *k, const freq *r, const dg_field_plan *f,
                                     float *lg, int *li, int *counted, dg_mention *v)
{
    size_t t = 0, fl = 0, nu = 0;
    *v = DG_MENTION_NONE;
    *li = -1;
    *counted = 0;
    if (!k->mention_prior.on || f->depth_items > 0 || !nullable_boolean(f, &t, &fl, &nu))
        return 0;
    dg_mention m;
    double l = noul_evidence(k, r, f, li, counted, &m);
    if (m == DG_MENTION_ABSENT) l = 0; /* not stated: null, not the closed-world false */
    if (l == 0 && m != DG_MENTION_ABSENT) return 0;
    lg[t] = l > 0 ? (float)l : 0.0f;
    lg[fl] = l < 0 ? (float)-l : 0.0f;
    lg[nu] = m == DG_MENTION_ABSENT ? (float)k->mention_prior.absent : 0.0f;
    *v = m;
    return 1;
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
        dg_mention mv;
        l += (float)noul_evidence(k, r, f, &li, &counted, &mv);
        float lg[2] = {l, 0.0f};
        double p[2];
        dg_softmax(lg, 2, k->temp[DG_T_NOUL], p, NULL);
        L->value = json_boolean(p[0] >= 0.5);
        L->meta = json_pack("{s:s, s:f}", "mode", "decide.noul", "probability", p[0]);
        if (counted) count_meta(L->meta, r, li);
        if (L->meta && mv != DG_MENTION_NONE)
            json_object_set_new(L->meta, "mention", json_string(mention_name(mv)));
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
    int li = -1, counted = 0, written = -1, evidence = 0;
    dg_mention mv = DG_MENTION_NONE;
    if (!score) {
        evidence = nullable_boolean_evidence(k, r, f, lg, &li, &counted, &mv);
        if (!evidence) {
            key_prior_choice(k, r, f, lg);
            phrase_prior_choice(k, r, L, f, lg);
            sole_prior_choice(k, r, L, f, lg);
            license_prior_choice(k, r, f, lg);
        }
    } else {
        count_prior_score(k, r, f, lg, &li, &counted);
        written = dg_score_prior(&k->key_prior, f, r->ctx, r->ctx_len, &r->kv, r->cp_byte,
                                 k->temp[DG_T_SCORE], lg);
    }
    /* the evidence logits of a nullable boolean are in noul units (mentions.h) */
    dg_softmax(lg, n, k->temp[score ? DG_T_SCORE : evidence ? DG_T_NOUL : DG_T_CHOICE], p, NULL);
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
        if (L->meta && evidence) {
            json_object_set_new(L->meta, "head", json_false());
            if (counted) count_meta(L->meta, r, li);
            if (mv != DG_MENTION_NONE)
                json_object_set_new(L->meta, "mention", json_string(mention_name(mv)));
        }
    }
    dg_fill_raw_digest(k, L->meta, lg, n, NULL, 0);
    free(lg);
    free(p);
    return DEG_OK;
}
