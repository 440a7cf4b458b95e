/* mentions.h - the mention prior: is a boolean field's subject written in a clause of
 * the context, and is that clause negated? (deg.json "mention_prior": {"bonus": b,
 * "absent": a}; issue 12).
 *
 * Why: on documents it was not trained on, v13's noul head answers plain statements at
 * chance. On 22 short hand-written development documents of seven kinds (job posts,
 * hotels, car ads, products, events, courses, bug reports; none of datagen's kinds)
 * with 45 stated booleans ("Breakfast included.", "No parking on site.", "Pets are not
 * allowed."), it got 22 right, every probability within 0.3 of 1/2; and a nullable
 * boolean (`["boolean","null"]`, a choice over true/false/null the choice head never saw
 * in training) got 19 of 66 right at confidences near 1. A field's name says what to
 * look for ("breakfast_included", "pets_allowed", "has_patch"), and a clause that names
 * it says yes unless it is negated.
 *
 * The rule. Subject: the normalised words (dg_key_norm) of the field's name, after a
 * leading "not"/"no" (the field is negated), or of its description's text after "the
 * opposite of[:]" (negated; datagen's and users' wording, as compareprior.h reads it);
 * without the linking words is, has, have, are, was, were, be, been, does, do, can, any,
 * its, it, for, to, in, on, at, by, with, there, this, that, and, or, if, whether,
 * should, and without predicate words a clause need not repeat (allowed, included,
 * available, required, possible, supported, enabled, present, provided, offered,
 * accepted, welcome, needed, permitted, given: "Sorry, no pets." names pets_allowed).
 * The name's subject, else the title's (a name like "p1" titled "Pets allowed").
 * No subject word left, one shorter than 3 bytes, one with a digit, a negation word
 * inside the name ("licenseNotMentioned"), a quantity word (one, two, three, single,
 * multiple, several, many, more, most, less, least, each, every, all, both, only, sole:
 * "OneTimezone" counts, the count prior's question; test100's zone files read "absent"
 * for it, wrongly), or more than DG_MENTION_MAX_WORDS: no verdict.
 * Clauses: the context split at . ! ? ; : , ( ) [ ] | = TAB LF, at " - " and at the word
 * "but". A clause names the subject when each subject word is one of its words (ASCII
 * case folded, number folded as the key prior folds names: "prerequisite" =
 * "prerequisites"), or that word after a prefix "un" or "non" ("Unfurnished", which
 * negates). A naming clause is negated by that prefix or by one of its words no, not, non,
 * none, never, without, nor, cannot, neither, false, or a word ending "n't" (also with
 * U+2019); otherwise it says the subject holds. A naming clause that is a label (it
 * ends at ':', '=', '|' or TAB) whose value starts with a yes/no word (dg_key_yes_no:
 * "has_html: false", "| Has comments | oui |") says what that word says. Every naming
 * clause must agree, else no
 * verdict. No clause names the subject: absent (the property is not stated).
 * A negated field reads the verdict negated.
 *
 * Use (fill_decide.c), only for leaves outside arrays, only when neither the key
 * prior's yes/no line, the comparison prior nor the count prior judged the leaf, and
 * not for a field that compares a value it names ("category_is_audio", "K over T":
 * compareprior.h; it asks what the document writes for K; on a development set such
 * fields went 3 right -> wrong when "absent" read them):
 *   noul: +bonus when it holds, -bonus when not, -absent when absent (+absent for a
 *         negated field: "the opposite of: free" with no word of "free" reads true);
 *   a choice over exactly {true, false, null} (a nullable boolean): its outcome logits
 *         are the evidence alone, the head's are dropped (it was never trained on that
 *         option set): the key/comparison/count priors' noul term, else +bonus on the
 *         stated side, or +absent on null when absent; no evidence: the head decides.
 *         The softmax uses the noul temperature, the unit of these weights.
 * English words only. */
#ifndef DG_DEG_MENTIONS_H
#define DG_DEG_MENTIONS_H

#include <stddef.h>

#include <jansson.h>

#include "deg.h"
#include "deg/plan.h"

#define DG_MENTION_MAX_WORDS 4

/* deg.json "mention_prior": {"bonus": b, "absent": a}, logit units in [0, 1e6];
 * on 0 when absent/null. */
typedef struct dg_mention_prior {
    int on;
    double bonus, absent;
} dg_mention_prior;

typedef enum dg_mention {
    DG_MENTION_NONE = -2,   /* no subject, or naming clauses disagree */
    DG_MENTION_ABSENT = -1, /* no clause names the subject */
    DG_MENTION_NOT = 0,     /* the (negation-applied) property does not hold */
    DG_MENTION_HOLDS = 1    /* it holds */
} dg_mention;

/* deg.json "mention_prior" v (NULL/null = off) into *out; jpath names deg.json in
 * errors. Errors: DEG_ERR_FORMAT (not {"bonus": b, "absent": a}, numbers in
 * [0, DG_PRIOR_MAX]). */
deg_status dg_mention_prior_load(const json_t *v, const char *jpath, dg_mention_prior *out);

/* The verdict for leaf f (fields inside arrays: DG_MENTION_NONE) on context bytes
 * [ctx, ctx + len) by the rule above; *negated (may be NULL) = the field is negated
 * (ABSENT then means "holds" for its value). O(len x subject words). */
dg_mention dg_mention_judge(const dg_field_plan *f, const char *ctx, size_t len, int *negated);

/* dg_mention_judge over the clauses of running text only (libdeg 0.21.0): a label
 * ("Balcony:", "| Has comments |") or a "key=value" value is no clause. Used for a
 * "has X" boolean the count prior found no list for (fill_decide.c). */
dg_mention dg_mention_judge_prose(const dg_field_plan *f, const char *ctx, size_t len,
                                  int *negated);

/* The verdict of a field named by raw name (and description, may be NULL): the same
 * rule without a plan (tests and tools). */
dg_mention dg_mention_judge_name(const char *name, const char *description, const char *ctx,
                                 size_t len, int *negated);

#endif
