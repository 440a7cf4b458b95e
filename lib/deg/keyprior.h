/* keyprior.h - the document-key prior of fill decoding: "Key: value" lines of the
 * context whose key names a field.
 *
 * Why: heads over a frozen 135M backbone learn the layouts they were trained on;
 * on an unseen layout the start/end pointers wander (issue 12: "Name: blinker"
 * answered with a code block, 0.05 of `name` fields right on held-out
 * documents). Most documents users fill from state their facts as labelled
 * lines (RFC 822 headers, DEP-5, METADATA, INI, "| key | value |" tables,
 * forms), and the field's own name says which label to read. The prior adds a
 * logit bonus, before the softmax and the calibration temperature, to the
 * outcomes a matching line supports:
 *   extract: the start logit of the value's first token and the end logit of
 *            its last token (typed fields: of each grammar candidate inside
 *            the value);
 *   choice:  the options whose text occurs in the value as a whole word;
 *   noul:    +/- for a value whose first word reads yes or no (dg_key_yes_no:
 *            yes/true/y/1, no/false/n/0 and datagen's seven languages).
 * The bonus is `exact` when the normalised key equals the field's name or title
 * and `partial` when one's words contain the other's, or when the key is the word for
 * the field's format ("url"/"uri" for a uri field, "email"/"mail" for an email field:
 * a POM's <url> for `homepage`; libdeg 0.24.0) (deg.json "key_prior").
 * Leaves inside arrays get none (their lines repeat per item; anchors own them).
 * The heads stay the judges: a bonus shifts, it does not decide alone, and a
 * checkpoint without "key_prior" decodes exactly as before.
 *
 * Lines: split at "\n"; a line is "[markup] key SEP value [markup]" with SEP the
 * first of ':' '=' '|' TAB after a key of 1..DG_KEY_MAX_WORDS words (letters,
 * digits, non-ASCII, '-', '_', '.', '/', '(', ')', spaces; at most DG_KEY_MAX_LEN
 * bytes; not "scheme://": a URL is no key),
 * markup = leading spaces, '-', '*', '#', '|', '>' and trailing '|' '*'. Value =
 * the rest, trimmed of spaces and trailing ',' ';' and of one pair of
 * enclosing quotes (KEY="value"); empty values are skipped.
 * Directive lines "KEY value" with no separator (ssh_config, login.defs, Apache:
 * KEY one token, a value of at most 6 words not ending in sentence punctuation,
 * "# comment" and ';' left out) are key lines when a block holds 3 or more of them
 * (a block runs over blank, comment, bare flag and key lines; libdeg 0.23.0,
 * keyprior.c).
 * An HTML row on one line, `[<tr>]<th>key</th> <td>value</td>[</tr>]` (tags in
 * any case) whose cells hold no markup, is a key line too (libdeg 0.17.0: the
 * html layouts of datagen-v2, never in training; a cell holding a list is
 * lists.c's).
 * JSON members `"key": value` (dg_json_member_split) are key lines too: the key
 * is the quoted text (key bytes only), SEP its ':'; a value opening an object or
 * array, or `null`, is empty (package.json, composer.json, API responses).
 * XML leaf elements `<key>value</key>` (the text on the start tag's line, no markup in
 * it) are key lines too, each key's shallowest elements only (keyline_xml.c: a POM's
 * own <version>, not its dependencies').
 * Offsets are code points of the context (the unit of §8 spans). */
#ifndef DG_DEG_KEYPRIOR_H
#define DG_DEG_KEYPRIOR_H

#include <stddef.h>

#include <jansson.h>

#include "deg.h"
#include "deg/plan.h"

#define DG_KEY_MAX_LEN 64
#define DG_KEY_MAX_WORDS 6

typedef struct dg_keyline {
    size_t val0, val1;          /* value, code points [val0, val1) of the context */
    char key[DG_KEY_MAX_LEN + 1]; /* normalised key: lowercase words joined by ' ' */
    int exact_only;             /* a qualified key ("parent version"): read by an exact
                                 * name only (dg_key_bonus), never a partial one */
    size_t json_depth;          /* a JSON member's open levels (1: the top object's), 0
                                 * for other lines (dg_keylines_scan) */
} dg_keyline;

typedef struct dg_keylines {
    dg_keyline *p;                   /* owned; free with dg_keylines_free */
    size_t n;
} dg_keylines;

/* Bonus sizes in logit units (deg.json "key_prior": {"exact": x, "partial": y}). */
typedef struct dg_key_prior {
    int on;
    double exact, partial;
    double phrase; /* grammar candidates and choice options labelled in running text
                    * (dg_key_phrase_before, fill_decide.c); 0 = off */
    double description; /* keys the field's description names (dg_key_in_description); 0 = off */
    double score; /* score leaves reading a written number or label (scoreprior.h); 0 = off */
    double compare; /* booleans comparing a written value (compareprior.h); 0 = off */
    double sole; /* the one choice option, or the one day, the document writes
                  * (fill_decide.c, fill_extract.c); 0 = off */
} dg_key_prior;

/* deg.json "key_prior" v (NULL/null = off) into *out; jpath names deg.json in
 * errors. Errors: DEG_ERR_FORMAT (not {"exact": x, "partial": y[, "phrase": z]
 * [, "description": d][, "score": s][, "compare": c][, "sole": o]}, numbers in
 * [0, DG_PRIOR_MAX]). */
deg_status dg_key_prior_load(const json_t *v, const char *jpath, dg_key_prior *out);

/* A JSON member `"key":` opening line [b, e) (after spaces/tabs; the key a
 * string of at most DG_KEY_MAX_LEN bytes without escapes): 1 with the key's bytes
 * [*key0, *key1) and the byte of its ':' in *colon, else 0. Shared by key lines
 * and the JSON lists of lists.c. */
int dg_json_member_split(const char *s, size_t b, size_t e, size_t *key0, size_t *key1,
                         size_t *colon);

/* Split line [b, e) (bytes of ctx) as "[markup] key SEP value [markup]" (the rule
 * above): 1 with the key's bytes [*key0, *key1) and the value's [*val0, *val1)
 * (empty when the line ends after SEP: "choices:" opening a bullet list), else 0. */
int dg_keyline_split(const char *ctx, size_t b, size_t e, size_t *key0, size_t *key1,
                     size_t *val0, size_t *val1);

/* Scan the context (valid UTF-8, len bytes) for key/value lines.
 * Errors: DEG_ERR_NOMEM. */
deg_status dg_keylines_scan(const char *ctx, size_t len, dg_keylines *out);
void dg_keylines_free(dg_keylines *ix);

/* Append the key line whose key is key[0, key_len) (normalised by dg_key_norm; an empty
 * normalised key appends nothing) and whose value is bytes [v0, v1) of ctx, where byte
 * b is code point cp of the context (b <= v0). An empty value appends nothing. Returns
 * 0 or -1 on out of memory (*cap: ix->p's capacity). */
int dg_keylines_add(const char *ctx, size_t b, size_t cp, const char *key, size_t key_len,
                    size_t v0, size_t v1, dg_keylines *ix, size_t *cap);

/* Append as dg_keylines_add, counting code points on from a cursor: byte *b, code point
 * *cp (start at 0, 0; values appended in document order, *b <= v0), moved to v0 when a line
 * is appended. Appenders of many lines (keyline_forms.c, keyline_xml.c) count each byte of
 * the context once. Returns 0 or -1 on out of memory. */
int dg_keylines_add_on(const char *ctx, size_t *b, size_t *cp, const char *key, size_t key_len,
                       size_t v0, size_t v1, dg_keylines *ix, size_t *cap);

/* Append as dg_keylines_add_on the qualified key line "PARENT KEY" (parent[0, pl), a
 * blank, key[0, kl)) for exact names only (dg_keyline.exact_only): an XML element under
 * its parent element (keyline_xml.c), a JSON member under the object a member opened
 * (keyprior.c). A key too long to join appends nothing. Returns 0 or -1 on out of memory. */
int dg_keylines_add_qualified(const char *ctx, size_t *b, size_t *cp, const char *parent,
                              size_t pl, const char *key, size_t kl, size_t v0, size_t v1,
                              dg_keylines *ix, size_t *cap);

/* The key lines of well-known forms that write no "Key: value" (keyline_forms.c): the
 * first Debian changelog entry's header (package, version, distribution, urgency) and
 * trailer (maintainer, date); appended to ix (capacity *cap). Returns 0 or -1 on out of
 * memory. Called by dg_keylines_scan. */
int dg_keylines_forms(const char *ctx, size_t len, dg_keylines *ix, size_t *cap);

/* JSON nesting seen by the key line scan (keyline_json.c; libdeg 0.26.0): per open object
 * or array, the key of the member that opened it ("author": {), or none (an array, an
 * anonymous object, one opened deeper than DG_JSON_DEPTH). */
#define DG_JSON_DEPTH 32
typedef struct dg_json_nest {
    size_t k0[DG_JSON_DEPTH], k1[DG_JSON_DEPTH];
    size_t n; /* open levels (those past DG_JSON_DEPTH have no key) */
} dg_json_nest;

/* Line [b, e) of s: close the levels its leading '}' / ']' close, open one when it ends
 * with '{' or '['. */
void dg_json_nest_line(dg_json_nest *J, const char *s, size_t b, size_t e);

/* Append "PARENT KEY" (exact-only) for a JSON member line (key bytes [k0, k1), value
 * [v0, v1), line start byte b = code point cp) inside an object a member opened; 0, or
 * -1 on out of memory (dg_keylines_add_qualified). */
int dg_json_parent_key(const char *ctx, const dg_json_nest *J, size_t b, size_t cp,
                       size_t k0, size_t k1, size_t v0, size_t v1, dg_keylines *ix, size_t *cap);

/* Of JSON members named alike keep only the least nested (reorders ix by key: sort it
 * back by position after). */
void dg_keylines_json_least_nested(dg_keylines *ix);

/* Mark JSON members below the document's top members exact-only (after the sort by
 * position). */
void dg_keylines_json_nested_exact(dg_keylines *ix);

/* XML leaf elements `<key>value</key>` on one line as key lines, each key's shallowest
 * only (keyline_xml.c; libdeg 0.24.0); appended to ix (capacity *cap). Returns 0 or -1
 * on out of memory. Called by dg_keylines_forms. */
int dg_keylines_xml(const char *ctx, size_t len, dg_keylines *ix, size_t *cap);

/* At byte i of s (len bytes; s[i] == '<'), a leaf element on one line: `<name ...>text
 * </name>`, not self-closing, its text holding no markup or line break and not blank
 * (keyline_xml.c). 1 with the end of its name (prefix included) in *n1, its text trimmed
 * of blanks in [*v0, *v1) and the byte after its end tag in *after; else 0. Shared by the
 * XML key lines and the XML lists (lists_xml.c). */
int dg_xml_leaf_at(const char *s, size_t len, size_t i, size_t *n1, size_t *v0, size_t *v1,
                   size_t *after);

/* Is name s[0, n) one of HTML's own tags (case-insensitive: "td", "li", "title", ...)?
 * An element of these is markup: no XML key line (but <title>), no XML list item
 * (lists_xml.c). */
int dg_html_tag(const char *s, size_t n);

/* Normalise text into lowercase words joined by ' ' (camelCase and any byte
 * other than an ASCII letter/digit or non-ASCII split words; ASCII lowercased; stop words "the", "a", "an", "of" dropped),
 * writing at most cap - 1 bytes + NUL. Returns the length. */
size_t dg_key_norm(const char *s, size_t n, char *out, size_t cap);

/* Match strength of a key for field f: 2 exact, 1 partial, 0 none. Fields
 * inside arrays never match. */
int dg_key_match(const dg_field_plan *f, const char *key);

/* Match strength of a normalised key for a name (a property name) or title:
 * 2 exact, 1 partial (also by the key vocabulary, dg_key_vocab_match), 0 none.
 * plural: compare with number folded in words of >= 4 bytes ("formats" = "format", "aliases" = "alias", "dependencies" =
 * "dependency"; a past participle of >= 6 bytes folds with its verb: "released" =
 * "release", "opened" = "opens", not before "by": "wanted by" != "wants"; the list
 * and count priors, lists.h, countprior.h). */
int dg_key_match_name(const char *seg, const char *title, const char *key, int plural);

/* dg_key_match_name by the words as written only (no vocabulary): what
 * dg_key_vocab_match compares its rewritten words with. */
int dg_key_match_written(const char *seg, const char *title, const char *key, int plural);

/* Partial matches by the vocabulary of document keys (keyvocab.c; libdeg 0.25.0): other
 * words for one fact ("Requires:" / "Depends:" for `dependencies`, "Build-Depends:" for
 * `build_dependencies`, "Package:" for `name`, "licence"), a key's trailing digits
 * ("Source0"), and a name ending in what its
 * value is read without it (`maintainer_email` = "maintainer"): 1 when the rewritten
 * words are the same (any order, number folded), else 0. dg_key_match_name falls back to
 * it (as 1: partial) when the words as written do not match. */
int dg_key_vocab_match(const char *seg, const char *title, const char *key);

/* The format a word names when a field's name ends in it (keyvocab.c): "url", "uri",
 * "link" -> "uri", "email", "mail" -> "email" (dg_candidates kinds), else NULL. Read by
 * the vocabulary (a name read without that word) and by the extract decoder (a plain
 * string named so reads that kind's candidates, fill_extract.c name_kind). */
const char *dg_key_value_kind(const char *word);

/* 1 when normalised key `key` has a word the key vocabulary reads as "dependency"
 * (keyvocab.c CANON: "Requires", "Depends", "Requires.private", "install_requires",
 * "Build-Depends"). */
int dg_key_dependency_key(const char *key);

/* 1 when every word of normalised key `key` (at least one) says what an address is for
 * (keyvocab.c ADDRESS_PURPOSE: "repository url", "bugs", "Vcs-Git", "Copyright"): a key
 * whose URL or e-mail address is no homepage or contact unless the field's name says so
 * (fill_extract.c other_purpose). */
int dg_key_address_purpose(const char *key);

/* Bytes [s, s + n) as one yes/no word: 1 yes, 0 no, -1 neither. ASCII case
 * folded; yes/no, y/n, true/false, 1/0 and the words of datagen's seven
 * languages (ja/nein, oui/non, vrai/faux, si (also accented)/no, sim/nao, wahr/falsch,
 * waar/onwaar/nee, verdadero/vero/verdadeiro/falso). Shared by the key prior's
 * noul lines and the count prior's stated predicates (countprior.h). */
int dg_key_yes_no(const char *s, size_t n);

/* Prose labels of typed values: 1 when the words of the clause right before byte
 * b of ctx (back to a newline or one of . ; : ! ? , ( | TAB, at most DG_KEY_MAX_LEN
 * bytes), optionally without one trailing linking word (on at in by is was are
 * were to from since until for be date), end with exactly field f's name or
 * title words ("Available from October 13, 2027" for available_from; "created
 * on 2024-04-06" for created; "the due date 2025-01-09" for due_date). Only
 * for grammar candidates (dates, numbers, e-mails, URIs): their extent is the
 * candidate's, so a label in running text is enough; fields inside arrays never
 * match (dg_key_match). */
int dg_key_phrase_before(const dg_field_plan *f, const char *ctx, size_t b);

/* The same for a leaf named seg (title may be NULL) wherever it is: the choice phrase
 * rule (fill_decide.c) reads an array item's leaf inside its item's region. */
int dg_key_phrase_before_name(const char *seg, const char *title, const char *ctx, size_t b);

/* Units in names: the unit word field f's name ends in, into unit[cap] (cap >
 * DG_KEY_MAX_LEN), when f is a number or integer outside arrays whose normalised
 * name has at least two words and ends in a word of 1..5 bytes holding a letter
 * ("area_m2", "price_eur", "timeout_ms", "size_bytes"); returns its length, else 0
 * (unit = ""). Computed once per field; dg_key_unit_after tests each number. */
size_t dg_key_name_unit(const dg_field_plan *f, char *unit, size_t cap);

/* 1 when unit (dg_key_name_unit, non-empty) follows byte e of ctx[0, len) (the end
 * of a number) as a whole word, after at most one space, ASCII case folded,
 * '\xc2\xb2' / '\xc2\xb3' read as 2 / 3 ("107 m2", "86 m\xc2\xb2", "68.50 EUR",
 * "250ms"). The name says the unit its number is written with: a number in
 * running text followed by it is the field's (libdeg 0.18.0; the key-line rules
 * need a label before the value). */
int dg_key_unit_after(const char *unit, const char *ctx, size_t len, size_t e);

/* Ends in names (keyvocab.c; libdeg 0.26.0): -1 when number or integer field f outside
 * arrays has a name or title word asking for the least of the numbers its keys state
 * (earliest, oldest, minimum, min, lowest, smallest, least, fewest), 1 for the greatest
 * (latest, newest, maximum, max, highest, largest, greatest, most), else 0. Why: a
 * header's notices state many years ("Copyright (c) 1997-2000 ...", "Copyright (c)
 * 2016-2022 ..."); every one is a "copyright year" key's value, and `earliest_year` read
 * 2000 and `latest_year` 1997 from expat.h (bench/devreal set 5). The extract decoder
 * gives the key bonus to that end's candidates only (fill_extract.c key_prior_extract). */
int dg_key_name_extreme(const dg_field_plan *f);

#define DG_KEY_DESC_MAX 512 /* bytes of a normalised description read for key names */

/* 1 when normalised key `key` (>= 4 bytes) is a run of whole words of field f's
 * normalised description (its first DG_KEY_DESC_MAX bytes) not right after "non" or
 * "not": "the unit's description" names a "Description=" line, "the command it
 * runs (Exec=)" an "Exec=" line, "a permissive (non-copyleft) licence" no
 * "Copyleft:" line. Fields inside arrays never match. */
int dg_key_in_description(const dg_field_plan *f, const char *key);

/* The parts of a field's description that can name a key, normalised
 * (dg_key_norm) into out (cap bytes, NUL-terminated) joined by " , " (no key
 * holds ','): its leading noun phrase (its words up to the first ',', ';',
 * ':', '.', '(' or preposition: in of for from with on at by to per into under
 * over about; possessives such as "country's" left out) and each parenthesised,
 * quoted or backquoted part (of its first DG_KEY_DESC_MAX bytes). "names of the
 * required packages (Requires-Dist)" -> "names , requires dist";
 * "documentation references, in order" -> "documentation references". The list
 * prior (lists.c) names lists only so: a list anchors a whole array, and any
 * word of a description ("the country's time zones" -> "Country:", "the months
 * in the locale's language" -> "Language:") named wrong lists (datagen-v2 test).
 * Returns the length written (0: no description). */
size_t dg_key_desc_names(const char *description, char *out, size_t cap);

/* 1 when normalised key `key` (>= 4 bytes) is a run of whole words of
 * normalised text `text` (as dg_key_desc_names writes). */
int dg_key_words_in(const char *text, const char *key);

/* The bonus of line `kv` for field f under prior p (0 when off or no match):
 * exact / partial by name or title (dg_key_match), else `description` when the
 * description names the key. */
double dg_key_bonus(const dg_key_prior *p, const dg_field_plan *f, const dg_keyline *kv);

#endif
