/* scoreprior.h - scores the document writes as a number or a level's label
 * (deg.json "key_prior": {..., "score": b}; issue 12).
 *
 * Why: a bounded integer field (decide.score: "bedrooms" 0..10, "severity_level"
 * with x-levels, a quantity band "600 to 749") is judged by the score head, a
 * pointer over the levels. When the document writes the value itself ("5-bedroom
 * flat", "Severity: 4", "| SocketMode | 0600 |"), reading it is an extraction, not
 * a judgement: v13's heads gave bedrooms 10 for "5-bedroom flat" and 8 for
 * "4-bedroom flat" (datagen-v2 test listings, all 6 wrong). The key prior
 * (keyprior.h) already reads labelled lines for choices and booleans; this is its
 * rule for scores.
 *
 * Evidence, for a score leaf outside arrays (dg_key_match: never inside one):
 *   - a key line (keyprior.h) whose key names the field exactly: its name or title
 *     (dg_key_match == 2), or its name without a trailing scale word ("level",
 *     "band", "bucket", "scale", "tier", "class": "severity_level" reads
 *     "Severity:"), at the key prior's exact bonus, else one the leaf's description
 *     names (dg_key_in_description: "installed size, banded" reads "Installed-Size:")
 *     at its description bonus; its value's leading number, else a level whose
 *     x-levels label is written in the value as whole words ("Severity: outage");
 *   - a number in running text labelled before it (dg_key_phrase_before: "rating
 *     of 4") or followed by the field's name, number folded ("5-bedroom flat",
 *     "3 bedrooms", "6 seats"; dg_score_named_after).
 * A number N names the level whose x-levels count range holds N when every level
 * has one (plan.h level_count: quantity bands; the fraction dropped), else the
 * level whose value is N (an integral N). Each level gets the largest bonus of
 * its evidence: a key line its bonus (above), a phrase `score`. The head
 * stays the judge where nothing is written; `score` 0 / absent = off, and a
 * checkpoint without it decodes exactly as before. */
#ifndef DG_DEG_SCOREPRIOR_H
#define DG_DEG_SCOREPRIOR_H

#include <stddef.h>

#include "deg/keyprior.h"
#include "deg/plan.h"

/* The level (index into f->levels) a number written as bytes [s, s + n) names (the
 * rule above), or -1 (not a number, negative, or no level). */
int dg_score_level_of_number(const dg_field_plan *f, const char *s, size_t n);

/* The level whose non-numeric x-levels label is written as whole words in
 * [s, s + n) (ASCII case folded; the longest label when several are), or -1. */
int dg_score_level_of_label(const dg_field_plan *f, const char *s, size_t n);

/* 1 when the words right after byte e of ctx (len bytes) - after one '-' or blanks,
 * up to a line or clause mark - begin with field f's name or title, number folded
 * ("5-bedroom flat" for bedrooms), else 0. Fields inside arrays never match. */
int dg_score_named_after(const dg_field_plan *f, const char *ctx, size_t len, size_t e);

/* Add the rule's bonuses x temp for score leaf f to its level logits lg[f->n_levels]
 * (raw logits, to be divided by temp, the score head's calibration temperature):
 * kv the context's key lines (values in code points: cp_byte maps them to bytes),
 * ctx the context (len bytes). Returns the level that got the largest bonus, -1
 * when none did. No-op (-1) unless kp->on and kp->score > 0.
 * Why x temp: the bonus is in calibrated logit units. The temperature is fit on
 * the heads' logits, where a written level is rare, and shrank a written level's
 * bonus of 8 to 1.8 (v13: temp 4.46): on the val records of datagen v2-v5 with a
 * score leaf the written level was the gold one 19 times of 19, but won the argmax
 * 16 times, at mean probability 0.73 (test100: 6 of 6 right at 0.2-0.4). A level the
 * document writes is read, not judged (libdeg 0.18.0). */
int dg_score_prior(const dg_key_prior *kp, const dg_field_plan *f, const char *ctx, size_t len,
                   const dg_keylines *kv, const size_t *cp_byte, double temp, float *lg);

#endif
