/* compareprior.h - booleans that compare a written value: "Is the type boolean?",
 * "whether section equals 8", "true when size > 100" (deg.json "key_prior":
 * {..., "compare": b}; issue 12).
 *
 * Why: users ask such booleans of labelled values the document writes ("Type:
 * boolean", "| License | MPL |", "Installed-Size: 1234"), and the noul head, not
 * reading the value, answers them near chance on kinds it never saw: v13 on the
 * development sets, 14 of dev5's 57 and 19 of dev4's 40 worded so were wrong, most
 * at a probability within 0.03 of 1/2, with the line right there.
 *
 * Predicates, read from the words (dg_key_norm) of the leaf's description, then of
 * its name (title: as the name), the first that parses:
 *   equals:  "whether K equals V", "true if [the] K is 'V'", "is [the] K V?" (K the
 *            longest run of leading words some key line names), name "K is V"
 *            ("InputTypeIsNote", "SectionIs4");
 *   greater: "is [the] K greater than T?", "true when K > T", "whether [the] K
 *            exceeds T", name "K over|above|exceeds T" (T a number; "1_5" = 1.5);
 * "the opposite of: ..." or a name starting with "not"/"no" (or "K is not V")
 * reads the inner predicate negated.
 * Judging on the key lines (keyprior.h): the lines whose key names K (dg_key_match_name,
 * number folded: exact lines when there are any, else partial ones: "Type:" for
 * "input type"; and "The K is V." statements); equals holds when one of them has the
 * value V (as words, dg_key_norm: "'boolean'" = "Boolean"; or as a truth value:
 * "RemainAfterExit=yes" is "enabled", "=no" is "off"), greater when one's leading
 * number is above T; otherwise it does not hold - unless V itself names a key line
 * ("true if the package is essential" beside "Essential:": no verdict). No such
 * line: the heads alone. A partial key or an open "is the K V?" split only ever says
 * it holds. The noul logit gets
 * +b when the predicate holds, -b when not (b/2 for partial keys; before the
 * calibration temperature, as the key prior does). */
#ifndef DG_DEG_COMPAREPRIOR_H
#define DG_DEG_COMPAREPRIOR_H

#include <stddef.h>

#include "deg/keyprior.h"
#include "deg/plan.h"

typedef enum dg_cmp_op { DG_CMP_NONE = 0, DG_CMP_EQUALS, DG_CMP_GREATER } dg_cmp_op;

typedef struct dg_cmp_pred {
    dg_cmp_op op;
    int negated;                    /* the field asks the opposite */
    char key[DG_KEY_MAX_LEN + 1];   /* normalised words of K; for an "is K V?" reading,
                                       every word of "K V" (the split is found on the lines) */
    char value[DG_KEY_MAX_LEN + 1]; /* normalised V (equals; "" when the split is open) */
    double threshold;               /* T (greater) */
} dg_cmp_pred;

/* Read a comparison from text (a name, title or description, raw bytes [s, s + n)):
 * 1 with *out, else 0 (the rule above). */
int dg_cmp_parse(const char *s, size_t n, int is_name, dg_cmp_pred *out);

/* The comparison of noul leaf f outside arrays (description first, then title, then
 * name): 1 with *out, else 0. */
int dg_cmp_pred_of(const dg_field_plan *f, dg_cmp_pred *out);

/* Predicate p judged on key lines kv of ctx (cp_byte: the byte of each code point):
 * 1 holds, 0 does not, -1 no line names K; *exact 1 when the deciding lines' keys
 * name K exactly. Negation is not applied here. */
int dg_cmp_judge(const dg_cmp_pred *p, const char *ctx, const dg_keylines *kv,
                 const size_t *cp_byte, int *exact);

/* The noul logit bonus for f (+ holds, - not, 0 when nothing tells or kp->compare is
 * 0), negation applied. */
double dg_cmp_prior(const dg_key_prior *kp, const dg_field_plan *f, const char *ctx,
                    const dg_keylines *kv, const size_t *cp_byte);

#endif
