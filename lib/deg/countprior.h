/* countprior.h - the count prior of fill decoding: booleans that ask how many
 * items a list of the document has (deg.json "count_prior"; issue 12).
 *
 * Why: many booleans users ask are counts over a list the document writes: "does
 * it list any requires?", "true if at most one item of formats is listed",
 * "withoutAfter", "MoreThanOneExtensions", "has_default". On kinds the noul head
 * never saw it is close to chance (v13 on the development sets: 0.57 of the 339
 * booleans worded so right), while the list prior (lists.h) already reads the
 * lists such a boolean counts. When the name (or title, or description) of a
 * noul leaf outside arrays (top level or nested objects) reads as a count predicate over a noun phrase and a list of the
 * context is named by that phrase, the prior adds +bonus to the noul logit when
 * the list's item count satisfies the predicate (or a line states it does) and
 * -bonus when not (before the calibration temperature, as the key prior does).
 * With no list so named, `absent` (0 = off) is added as for a count of 0. The head stays the
 * judge: a bonus shifts, it does not decide alone; a checkpoint without
 * "count_prior" decodes exactly as before. Tables (lists.h, libdeg 0.13.0) are
 * not counted: their rows were not measured as counts, and a key/value grid's
 * rows are key lines the count already reads.
 *
 * Predicates (words of dg_key_norm, so camelCase/snake_case names read as words):
 *   none:        "no X", "without X", "has no X", "lists no X", "sets no X",
 *                "lacks X" (libdeg 0.17.0)
 *   any:         "any X", "has X", "have X", "with X", "X given", "X listed"
 *   at most one: "at most one [item[s]] X", "single X", "only one X"
 *   several:     "more than one [item[s]] X", "several X", "multiple X", "many X"
 * X: the 1..3 words after the quantifier, up to is/are/listed/given/set/present/
 * in/on/for/to/or/and; a predicate holding "not" is none of these (its sense is
 * not a count).
 * Judging it on the lists of the context (lists.h):
 *   stated: a key that is itself a predicate over X (exact, plurals folded) with
 *     one yes/no item ("Has magic: ja", "| Has html | Yes |", "has_comments":
 *     true; yes/no in datagen's seven languages) bounds the count: "Has magic:
 *     ja" makes noMagic false, "Has aliases: no" makes single_aliases true;
 *   counted: else the list whose key matches X as a name does (dg_key_match_name,
 *     plurals folded; exact before partial, a partial key having fewer words
 *     than X: "Variables:" for "result variables", never "RemainAfterExit=" for
 *     "after"; ties to the list with more items, then the first: <dependency>
 *     elements, not their <dependencies> container) counts its items (a partial
 *     key can be the wrong list: "Type=" for "mime types" when no MimeType= is
 *     written; on the development sets partial keys were right 12 of 15 times);
 *   heading: else, for "any" / "none" over "X section", a heading line naming X
 *     (the line's words alone, markup # * [ ] = and a trailing ':' aside: a man
 *     page's "OPTIONS", a unit's "[Install]", "## Options") says one is there
 *     (libdeg 0.17.0; on the development sets 5 of 5 such judgements right; a list
 *     named by X still counts first);
 *   else no list tells (`absent`). */
#ifndef DG_DEG_COUNTPRIOR_H
#define DG_DEG_COUNTPRIOR_H

#include <stddef.h>

#include <jansson.h>

#include "deg/keyprior.h"
#include "deg/lists.h"
#include "deg/plan.h"

typedef enum dg_count_op {
    DG_COUNT_NONE_OP = 0, /* not a count predicate */
    DG_COUNT_ZERO,        /* no items */
    DG_COUNT_ANY,         /* >= 1 item */
    DG_COUNT_AT_MOST_ONE, /* <= 1 item */
    DG_COUNT_SEVERAL      /* >= 2 items */
} dg_count_op;

typedef struct dg_count_pred {
    dg_count_op op;
    char noun[DG_KEY_MAX_LEN + 1]; /* normalised words (dg_key_norm) of what is counted */
} dg_count_pred;

/* deg.json "count_prior": {"bonus": b, "absent": a}, logit units in [0, 1e6];
 * on 0 when absent/null. */
typedef struct dg_count_prior {
    int on;
    double bonus, absent;
} dg_count_prior;

/* deg.json "count_prior" v (NULL/null = off) into *out; jpath names deg.json in
 * errors. Errors: DEG_ERR_FORMAT (not {"bonus": b[, "absent": a]}, numbers in
 * [0, DG_PRIOR_MAX]). */
deg_status dg_count_prior_load(const json_t *v, const char *jpath, dg_count_prior *out);

/* Read a count predicate from normalised words `text` (dg_key_norm output):
 * DG_COUNT_NONE_OP when it holds none (the rule above). */
dg_count_op dg_count_parse_words(const char *text, char *noun, size_t cap);

/* The count predicates of field f, a noul leaf outside arrays: those its name, its title
 * and its description read as, in that order, into out. Returns how many (0: f is
 * no count). A field is judged by the first that a list tells ("anyParentTypes"
 * described "does it list any sub class of?" counts "<sub-class-of .../>"
 * elements). */
size_t dg_count_preds_of(const dg_field_plan *f, dg_count_pred out[3]);

/* 1 when n items satisfy op. */
int dg_count_holds(dg_count_op op, size_t n);

/* Predicate p judged on the lists ls of the context ctx (NUL-terminated; cp_byte:
 * byte offset of each code point): 1 holds, 0 does not, -1 no list tells (the rule
 * above); *li the list that told, else -1 (also when a heading told). */
int dg_count_judge(const dg_lists *ls, const char *ctx, const size_t *cp_byte,
                   const dg_count_pred *p, int *li);

/* Count scales (libdeg 0.14.0): a score leaf outside arrays every level of which is
 * labelled with a count range in x-levels ("0 to 19", "20 to 39", "40 or more";
 * "7", "2-3", "20+", "at least 3", "more than 5", "none"/"zero"; a ':' and a description may
 * follow) and whose name, title or description names what it counts ("number of X",
 * "num X", "count of X", "how many X", "X count"; X as for predicates, also ended by
 * the scale's words: level band bucket scale class tier bin range group as falls
 * within per which) is judged on the same lists: the level whose range holds the
 * item count of the list counted for X (the `counted` rule above) gets +bonus; with
 * no list so named the heads answer alone (`absent` is for booleans only: a scale's
 * "number of entries / mappings / suffixes" mostly counts unlabelled lines, and the
 * level of 0 was right 11 of 26 times, the heads 13). Datagen's "number of targets as
 * a band on a 0-2 scale" with levels "0 to 19" / "20 to 39" / "40 or more": on the
 * development sets' 57 score leaves v13's heads were right 25 times, 40 with the
 * prior (a list told for 27, all right; the heads had 12 of them).
 * Ranges are parsed once, at plan compile (plan.h level_count,
 * dg_level_count_range).
 * The nouns of f (up to one per source: name, title, description) into out;
 * returns how many (0: f is no count scale). */
size_t dg_count_scale_nouns(const dg_field_plan *f, char out[3][DG_KEY_MAX_LEN + 1]);

/* Count scale f judged on lists ls: the index (into f->levels) of the first level
 * whose range holds the count, or -1 (f no count scale, no list named, or no level
 * holds the count); *li the list counted (-1: none; set also when no level holds
 * its count), *count its items (0 when none). */
int dg_count_scale_judge(const dg_lists *ls, const dg_field_plan *f, int *li, size_t *count);

/* 1 when some noul leaf of P outside arrays reads as a count predicate, or some score
 * leaf is a count scale. */
int dg_count_wanted(const dg_plan *P);

#endif
