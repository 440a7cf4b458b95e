/*
 * deg_fill.h - schema fill with a checkpoint (public C API): checkpoints,
 * deg_fill / deg_fill_many (deg contract §7, §8, §10, §12.1-§12.3, §12.6).
 *
 * Conventions as in deg_runtime.h (status codes, deg_errmsg(), ownership
 * notes). Parsed by the Python binding's cffi build: plain C declarations.
 */
#ifndef DEG_FILL_H
#define DEG_FILL_H

#include "deg_schema.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Fill runtime: checkpoint, forks, heads, arrays,                          */
/* generate phase (deg contract §7, §8, §10, §12.1-§12.3, §12.6).           */
/* ------------------------------------------------------------------------ */

/* A deg checkpoint: a directory holding
 *  - deg.json: {"format": "deg-ckpt-v1", "backbone": {"file", "sha256", "arch",
 *    "path"}, "head_dim": 256, "heads": {name: shape}, "calibration": {"choice",
 *    "score", "noul", "extract", "count": temperature}, "array_mode": "index" |
 *    "anchor", "anchor_min_tokens", "chat_layout": "chatml" | "qwen3" | "none",
 *    "key_prior": null | {"exact": x, "partial": y[, "phrase": z][, "description": d]
 *    [, "score": s][, "compare": c][, "sole": o]} (optional; see below),
 *    "lm_prior": null | {"start": lambda} (optional; see below),
 *    "list_prior": null | {"bonus": b, "by_anchor": bool} (optional; see below),
 *    "count_prior": null | {"bonus": b[, "absent": a]} (optional; see below),
 *    "mention_prior": null | {"bonus": b, "absent": a} (optional; libdeg 0.20.0; see
 *    below),
 *    "span_single_line": bool (optional, default false),
 *    "span_word_bounds": bool (optional, default false),
 *    "span_single_sentence": bool (optional, default false; libdeg 0.15.0),
 *    "span_distinct": bool (optional, default false; libdeg 0.16.0),
 *    "item_null": bool (optional, default false),
 *    "generate_stop_repeat": bool (optional, default false; libdeg 0.19.0),
 *    "span_whole_names": bool (optional, default false; libdeg 0.19.0),
 *    optional "lora": LoRA adapters of the fork rows, see lora.h};
 *  - heads.safetensors: the fp32 heads of §12.3 (names and shapes in
 *    lib/deg/fill.h).
 * The backbone is referenced by file name + SHA-256 (of the GGUF file, or of
 * config.json and the *.safetensors files of an HF directory). A checkpoint
 * loaded by deg_ckpt_load owns its model; deg_ckpt_open can run it over an
 * already loaded model instead (deg_ckpt_params.model). Not thread-safe: one
 * fill at a time per handle.
 *
 * Arrays (§12.6): "index" mode sizes every array with the count head and
 * addresses items as "ITEM i of"; "anchor" mode (for contexts of at least
 * anchor_min_tokens tokens; 0 = always) anchors every array whose items hold
 * an extract leaf: the anchor head marks where items start in the array's
 * region, options.array_decode picks the rule (threshold / count_peaks
 * (default) / hybrid), item forks carry locators instead of ordinals, and
 * the array's meta gets "array_mode": "anchor" and "anchors" (code-point
 * offsets where the surviving items start). A top-level region with fewer
 * usable positions than minItems is a FillError; a nested one drops its
 * enclosing item (reported as "dropped" like any drop).
 *
 * Key prior (deg.json "key_prior", absent = off; lib/deg/keyprior.h): a
 * context line "Key: value" (also "key = value", "| key | value |",
 * "**Key:** value", an HTML row "<tr><th>Key</th><td>value</td></tr>" on one
 * line without markup in its cells: libdeg 0.17.0) whose normalised key equals the leaf's property name or
 * title adds `exact` (words of one within the other's: `partial`) logit units,
 * before the calibration temperature, to the outcomes the value supports: the
 * extract start/end of the value (typed fields: of each grammar candidate in
 * it; a number's whole written form, sign or currency mark included, libdeg 0.25.0),
 * a choice option written in the value, noul true/false for a value whose
 * first word is yes/no (yes/true/y/1, no/false/n/0, ja/nein, oui/non, si/no,
 * sim/nao, ...); JSON members `"key": value` are such lines too, and so are
 * (libdeg 0.23.0) "Key value" directive lines in a block of three or more
 * (ssh_config, sshd_config) and the first Debian changelog entry's header and
 * trailer (keys package, version, distribution, urgency, maintainer, date), and
 * (libdeg 0.24.0) XML leaf elements "<key>value</key>" on one line (each key's least
 * nested only: a POM's own <version>) and copyright notices ("Copyright (c) 2005 Foo
 * Bar": keys "copyright year", "copyright holder"); a uri field also matches a key
 * "url"/"uri", an email field "email"/"mail" (partial); (libdeg 0.25.0) names and keys
 * also match partially by the key vocabulary of package formats (lib/deg/keyvocab.c: the
 * same words after rewriting: "Depends:", "Requires:" for `dependencies`,
 * "Build-Depends:" for `build_dependencies`, "Package:" for `name`, "URL:" for
 * `homepage`, "licence", a numbered key "Source0:", and a name ending in "email"/"url"
 * without that word: `maintainer_email` = "Maintainer"), and a plain
 * string span leaf outside arrays whose name ends in "email"/"mail" (or
 * "url"/"uri"/"homepage"/"website") reads the e-mail (URI) candidates of the context as
 * an email (uri) field does, when the context has one. (libdeg 0.26.0) A key line may
 * sit in a C or shell comment ("/" "* SPDX-License-Identifier: MIT *" "/", "// Key: v":
 * the marks are no part of key or value); copyright notices also read "Portions
 * Copyright ..." and the holder-first "Copyright (C) Sun Microsystems 2008", and only the
 * first notice's holder is a key line; a JSON member inside an object a member opens is
 * also the key "PARENT KEY" (exact names only), and of JSON members named alike only the
 * least nested are key lines; the vocabulary pairs `contact` with "Author"/"Maintainer"
 * (`contact_email` = "Author-email") and reads "SPDX-License-Identifier" as "license
 * id"; a number leaf
 * outside arrays whose name or title has an end word (earliest, oldest, minimum, min,
 * lowest, smallest, least, fewest / latest, newest, maximum, max, highest, largest,
 * greatest, most) matches its keys partially without that word (`earliest_year` =
 * "copyright year") and, of the number candidates under its largest key bonus, only those
 * of the least (greatest) value keep that bonus (keyprior.h dg_key_name_extreme); a plain
 * string leaf outside arrays named like a licence (a word starting "licen") with no key
 * line naming it gives `exact` to each licence name the context writes outside another
 * key's value ("Licensed under the MIT license": "MIT"; lib/deg/licenseprior.h).
 * (libdeg 0.27.0) A JSON member below the document's top members is read by its exact
 * name (or, for a key of 2+ words, by the vocabulary: `contact_email` = "author email"),
 * and otherwise partially only when the leaf's name holds all its words
 * (`bug_tracker_url` for "bugs url"), never by a part of it; "Web site" reads as
 * "website".
 * (libdeg 0.28.0) A leaf outside arrays whose description quotes the line opening a
 * paragraph or section of the context ("license of the main files (Files: *)",
 * "version of gzip (Package: gzip)", "[testenv:docs]"; one line of the context only)
 * reads key lines, written options and licences in that block only (it runs to the
 * next blank line, a section to the next "[" line; lib/deg/locator.h). A choice option
 * written inside a longer option's word in a value ("GPL-2" in "GPL-2+") is not
 * written there; when the options hold "other", a value naming none of them (nor,
 * for a licence, an option's licence by another spelling) or several, or stating
 * several licences ("BlueOak-1.0.0", "GPL-2+ or Artistic"), gives its bonus to
 * "other"; a licence option without "or later" next to its "or later" twin means
 * "only". A nullable uri or email leaf outside arrays that no key line names, whose
 * best span lies in the value of a key that says what else its address is for
 * ("repository url", "bugs", "Vcs-Git", "Copyright"), is null (meta "null_reason":
 * "other_address").
 * `phrase` (default 0 =
 * off) is added to the start/end of a grammar candidate (date, number, e-mail,
 * URI) that running text labels with the leaf's name: the clause right before
 * it ends with the name's words, maybe plus one linking word ("Available from
 * October 13, 2027" for available_from), or, for a number leaf whose name ends
 * in a unit word of <= 5 bytes, that is followed by the unit ("86 m2" for
 * area_m2, "68.50 EUR" for price_eur; libdeg 0.18.0); and to a choice option
 * written as a whole word right after the leaf's name, maybe past one linking word
 * ("urgency was high"), in the context for a leaf outside arrays, in its item's
 * region for a leaf of an anchored array item (libdeg 0.20.0). `description` (default 0 = off) is
 * the bonus of a line whose key the leaf's description names as whole words
 * (keys of >= 4 bytes; "the command it runs (Exec=)" names "Exec=") when its
 * name and title do not match. `score` (default 0 = off; libdeg 0.17.0) reads
 * a score the document writes (lib/deg/scoreprior.h): a line naming the leaf
 * exactly (or one its description names, at `description`) gives the level of
 * its value's leading number (the level whose
 * x-levels count range holds it, for quantity bands) or of an x-levels label
 * written in it `exact`, a number labelled in running text ("rating of 4") or
 * followed by the leaf's name ("5-bedroom flat") `score`; meta "written_level"
 * names the level that got the largest bonus. These score bonuses are in
 * calibrated logit units, added after the score temperature (libdeg 0.18.0: a
 * written level is read, not judged; 19 of 19 right on val). `compare` (default 0 = off;
 * libdeg 0.17.0) judges a boolean that compares a written value
 * (lib/deg/compareprior.h: "whether type equals note", "Is the type boolean?",
 * "true when size > 100", "the opposite of: ..."): +c / -c to the noul logit
 * when the lines naming its key (or a "The type is select." statement) say the
 * comparison holds / does not (c/2 for a partial key, which only ever says it
 * holds). `sole` (default 0 = off; libdeg 0.22.0) leans to the one value a
 * document writes: a choice leaf gets it on the only string option written as a
 * whole word (case-insensitive) in its scope (the context, or an anchored item's
 * region; two options written give none; since libdeg 0.23.0 a word in a URL or
 * e-mail address, after a negation or, outside arrays, inside (not first in)
 * another key's value is not written), a date or date-time leaf outside
 * arrays on every candidate when all its candidates parse to one day (datagen-v2
 * train and val: that option is the gold value in 558 of 560 leaves, that day in
 * 763 of 820); and (libdeg 0.24.0) a choice leaf outside arrays whose name says
 * licence ("license", "licence_id") gets it on each option naming a licence the
 * document states by a name or by its text ("GPL-2+" = "GPL-2.0-or-later", "Expat" =
 * "MIT", the MIT text = "MIT"; lib/deg/licenseprior.h). Numbers in [0, 1e6]. Other
 * leaves inside arrays get none.
 *
 * LM-head start prior (deg.json "lm_prior", absent = off; a request's
 * options.lm_prior, null = the checkpoint's, overrides it): an extract
 * leaf's start pointer logit of each context token gets lambda * log p of
 * that token under the backbone's own next-token distribution after the
 * leaf's fork (its LM head at "ANSWER:"), before the calibration
 * temperature. lambda 0 decodes exactly as without it.
 *
 * List prior (deg.json "list_prior", absent = off; a request's
 * options.list_prior, null = the checkpoint's, {"bonus": 0} = off, overrides
 * it; lib/deg/lists.h, anchor-mode checkpoints): a top-level array of plain
 * strings (no format, no pattern), or of objects with a string leaf and no
 * nested array, whose property name or title names a list of the context, or
 * whose description names its key in parentheses or quotes ("names of the
 * required packages (Requires-Dist)") or in its leading noun phrase
 * ("documentation references, in order"), is anchored at any document length with one anchor per
 * list item (at most maxItems / options.max_items). Lists: bullet lines under
 * "key:", a "key: a, b and c" / "key=a;b" value, blank-separated identifiers
 * ("After=a.target b.service"), repeated "key: x" lines, "Key: value"
 * sentences of a prose line, a JSON member "key": [...] (or, for a plain
 * array, "key": {...}: its members' keys, libdeg 0.24.0), an HTML row
 * <th>key</th><td><li>..</td>, XML element lines <name a="v"/> (one item
 * each; a block element alone on its line is its first "...name"/"...title"
 * child's text, else its last "...id" child's: a POM's <dependency> is its
 * artifactId, libdeg 0.24.0), a value folded over the indented lines below it
 * ("Build-Depends: a,\n b": RFC 822) and a `key = ['a', "b"]` array (TOML, Python; both
 * libdeg 0.25.0). Names match with number folded ("aliases" = "Alias:") and by the key
 * vocabulary (keyvocab.c: "Build-Depends:" for build_dependencies). A plain array's item extract start/end logit
 * at its list item's first/last token gets +b before the calibration
 * temperature; an object's leaves are read by the heads inside its list
 * item's text. Tables (pipe/Markdown/ASCII grid, HTML <th> header rows,
 * CSV/TSV with a header line, JSON arrays of objects, YAML "- key: value"
 * records; an HTML cell's text may sit inside one inline element such as
 * <code> or <a>) anchor an array of objects when a column names one of its
 * properties (name or title; the table naming the most wins, before any list
 * by name alone): one object per record, and each leaf whose property a column
 * names gets +b at its cell's first/last token, or on null when the cell is
 * written empty ("-", "", JSON null) or, in a JSON/YAML record (or a short
 * row), not written while other records write that column (libdeg 0.14.0:
 * never another member of the record); the meta then also has "list_table":
 * true ("list_key" is the table's caption, "" when none). Also tables (libdeg
 * 0.21.0): numbered INI sections ("[services.1]" ... each section's "key = value"
 * lines one record, key "services") and TOML's "[[services]]"; headerless tables
 * (no column names): a paragraph of TAB-separated rows of 3+ parts, or of rows
 * aligned in columns by TABs or 2+ spaces ("uucp   540/tcp   uucpd  # comment":
 * a trailing '#' comment left out, "540/tcp" two cells; '#' lines skipped), taken
 * by its caption's name or as the text's only headerless table; each value is one
 * whole cell. Properties no column names (every one in a headerless table) take
 * the free columns the heads' pooled choices over all records point to, one column
 * each, the same in every record, required properties on columns every record
 * writes (lib/deg/fill_columns.c); the meta then has "list_columns": {property:
 * column} (a headerless column's 0-based position, a named column's key, null:
 * none, read as null). A field outside a headerless table's records reads inside one
 * cell of it or no part of it (never across a column gap). With "by_anchor": true a plain array no
 * key names is anchored too and takes the list holding the anchor head's best
 * token, if any. Under uniqueItems a repeated item text is anchored once; a list
 * shorter than minItems is not used (the heads' anchors are). The array's meta
 * then has "list_key" (the list's normalised key). Since libdeg 0.27.0 an array
 * asking for names (the word "name" or "names" in its name, title or description)
 * reads the name each item opens with ("libc6" of "libc6 (>= 2.29)", PEP 508 and
 * Debian relations), each name once; a file's requirement lines ("six",
 * "PyYAML>=3.10") are a list under "requirements"; and a dependency array no list
 * matches, in a document of 3+ key lines, is [] with meta "list_absent": true
 * (lib/deg/lists.h dg_lists_names_array, dg_lists_dependencies_unwritten). Item values stay spans read
 * by the item forks. lm_prior.start and list_prior.bonus are numbers in
 * [0, 1e6] (larger weights only overflow the fp32 logits).
 *
 * Count prior (deg.json "count_prior", absent = off; lib/deg/countprior.h): a
 * boolean outside arrays (top level or in nested objects) whose property
 * name, title or description reads as a
 * count over a noun ("withoutAfter", "HasRequires", "single-files",
 * "MoreThanOneExtensions", "does it list any requires?", "true if at most one
 * item of formats is listed": none / any / at most one / several) is judged
 * on the lists of the context (as the list prior reads them): a key that is
 * itself such a predicate over the noun with a yes/no value ("Has magic: ja",
 * yes/no in en de fr es it pt nl) bounds the count, else the list the noun
 * names is counted. The noul logit gets +b when the count satisfies the
 * predicate and -b when not, before the calibration temperature; when no
 * list tells, +/-a as for 0 items (a default 0 = off). The leaf's meta then
 * has "list_key" (the list's normalised key; null when no list told, then
 * "list_items" is 0 without meaning an empty list) and "list_items" (its
 * item count; an array's own "items" is its length). b, a: numbers in
 * [0, 1e6]. A partial name match can count the wrong list: "mime types"
 * takes a "Type=Application" line of a .desktop file that writes no
 * MimeType= (kept: on the development sets partial matches were right 12
 * of 15 times).
 * Count scales (libdeg 0.14.0): an integer score outside arrays every level of which
 * x-levels labels with a count range ("0 to 19", "20 to 39", "40 or more";
 * "7", "2-3", "20+", "at least 3", "more than 5", "none" / "zero" for 0;
 * ": description" may follow)
 * and whose name, title or description says what it counts ("number of X",
 * "num X", "count of X", "how many X", "X count") is judged on the same lists:
 * the level whose range holds the count of the list X names gets +b (no list so
 * named: the heads alone; a is for booleans only); meta "list_key" /
 * "list_items" as above whenever a list was counted (also when no level's
 * range holds its count, a gap between ranges: then the heads alone). Ranges
 * are written low to high ("19 to 0" is no range); levels may list them in
 * any order, overlapping ranges give the count to the lowest such level.
 *
 * span_single_line: plain-string spans (no format) never hold a line break
 * between their first and last non-blank characters (no gold plain span of
 * the datagen v1/v2 training data does; off, an unsure end pointer runs
 * over the next lines).
 *
 * span_word_bounds: a plain-string span starts and ends at word boundaries: no
 * letter or digit on both sides of an edge (scripts written without spaces,
 * CJK and Thai, bound at every character; lib/base/utf8.h dg_utf8_is_word),
 * and words joined by '-', '.' or '_' with a letter on one side are one word
 * ("xdg-user" cuts "xdg-user-dirs-update"; "2003" of "2003-2014" does not).
 * Every gold plain span of the training and development data is; off, an
 * unsure pointer cuts words ("FindASP" of "FindASPELL"). Since libdeg 0.26.0
 * no such span starts with a C comment's opening or ends with its close
 * ("GPL-2.0 WITH Linux-syscall-note *" "/" of a header's SPDX line).
 *
 * span_single_sentence (libdeg 0.15.0): a plain-string leaf outside arrays
 * never reads across a sentence end: a '.', '!' or '?' followed by blanks and a
 * capital letter (Latin-1, Greek, Cyrillic), a '.' after an initial ("A.") or
 * a capitalised word of at most 3 letters ("Dem.", "Mr.") being none
 * (lib/deg/sentences.h). On prose the end pointer of an unsure short field
 * ran on over the next sentences ("Graz for 3,325 per month. 150 m2. Sorry,
 * no pets." for a city). Array items keep their list's or anchor's extent
 * ("German translation. Thanks Erik" is one changelog item). Gold plain
 * leaves outside arrays that hold a sentence end are rare (14 of 5,230 in
 * union10: first lines of docstrings, "Split a pathname.  Returns ...").
 *
 * span_distinct (libdeg 0.16.0): no two extract leaves of one object (the top
 * level, or one array item) keep the same span. Per object, leaves claim their
 * spans by their span's log-probability (ties: schema order); a leaf whose span
 * is claimed (meta "span_taken_by": the claiming leaf's pointer) takes the best
 * other valid span not overlapping its own when no leaf of the object holds it
 * and it beats its null outcome by the null margin, else it is null (or its key
 * left out, for an optional non-nullable field; "null_reason": "not_found"). A
 * required non-nullable leaf has no null: it takes any free other span, else it
 * keeps the span and an optional holder gives it up instead.
 * Why: an unsure leaf took the span a sibling reads ("curl" as a package's name,
 * homepage and section; a time zone's name as its zone and area); such leaves
 * were right 21 times in 213 on the development sets (v13). Items too: two items
 * of one array whose required leaf of one field reads the same span are one
 * item read twice, and the later is dropped (meta "dropped"; 5 of 183 such
 * items were right).
 *
 * item_null: an array item's required, non-nullable extract leaf whose best
 * span the null head rejects by the null margin (as a nullable leaf's would
 * be null) is missing, and its item is dropped (§12.6; the array's meta says
 * "dropped": n): no item is made from a span the heads hold absent. Off, such
 * a leaf takes its best span. Items of a list the array is named for (lists.h)
 * are written, so only a table record's empty cell drops them (libdeg 0.16.0).
 *
 * generate_stop_repeat (libdeg 0.19.0): an x-generate value ends before the first
 * line that repeats an earlier line of it, or a line of its own prompt (the
 * KNOWN VALUES block and its WRITE/TITLE/DESCRIPTION/LIMITS/VALUE header) once
 * it has a line that is none (blanks trimmed, blank lines never count; the
 * blanks and line breaks before the cut are dropped too), when the text before
 * it meets minLength and the pattern (else decoding goes on as without the
 * rule). Its meta says "stopped": "repeated_line"; generated_tokens still
 * counts every token decoded. Why: greedy decoding of a small model loops on
 * short fields ("RENICE(1)\n\nRENICE(1)\n\n...") and echoes its prompt
 * ("LIMITS: maxLength 200;"); lib/deg/repeats.h has the measurement.
 *
 * span_whole_names (libdeg 0.19.0): a plain-string span whose text is capitalised
 * words joined by single spaces grows over the capitalised words next to it
 * ("Bruno" of "Bruno Eriksen (bruno@...)" -> "Bruno Eriksen", "A. Murdock" ->
 * "Ian A. Murdock"), never over a sentence end, at most 6 words, inside its list
 * item, not in table cells, and only when the grown span keeps to the span rules
 * above (else the span stays). Why and the rule's details: lib/deg/names.h.
 *
 * Mention prior (deg.json "mention_prior", absent = off; libdeg 0.20.0;
 * lib/deg/mentions.h has the rule, its word lists and the measurement behind it):
 * a boolean outside arrays whose name (else title) names a subject
 * ("breakfast_included": breakfast; "pets_allowed": pets; "not_free" or a
 * description "the opposite of: free": free, negated) is judged on the clauses of
 * the context (split at . ! ? ; : , ( ) [ ] | = TAB, line breaks, " - " and "but"): a
 * clause holding every subject word (plural folded) says it holds, or does not when it
 * is negated (no, not, non, none, never, without, nor, cannot, neither, false, "n't",
 * or the prefix un-/non- on the subject word: "Unfurnished"), or, when it is a label,
 * what the yes/no word of its value says ("has_html: false"); clauses that disagree give
 * no verdict; no such clause: absent. It applies only where the key prior's yes/no
 * line, the comparison prior and the count prior all say nothing, and not to a field
 * that compares a value it names ("category_is_audio") or counts ("OneTimezone":
 * a subject with a quantity word has none). A boolean's logit
 * gets +b (holds), -b (does not), -a (absent; +a for a negated field), before the
 * calibration temperature; its meta has "mention": "holds" | "does_not_hold" |
 * "absent". A nullable boolean (["boolean", "null"], or a choice over exactly true,
 * false and null, in any order) with any such evidence is decided on the evidence
 * alone, the choice head dropped (meta "head": false; it was never trained on that
 * option set): logits b on the stated side (or the other priors' noul term), a on null
 * when absent, 0 elsewhere, at the noul temperature; without evidence the head
 * decides as before. English words only. b, a: numbers in [0, 1e6].
 * Since 0.21.0 a "has X" boolean (the count prior's "any X") that no list of X and no
 * "Has X: yes/no" line tells about takes the verdict of the clauses of running text
 * naming X instead of the count prior's 0-items answer (+/-b, meta "mention"; labels
 * and "key=value" values are no such clauses: "RemainAfterExit=on" says nothing of
 * After=); none: the count prior's answer. */
typedef struct deg_ckpt deg_ckpt;

/* Write a fresh checkpoint to dir (created if missing; files replaced) for the
 * backbone at model_path, heads initialised uniformly in +-1/sqrt(n_embd) from
 * xoshiro256** streams seeded by (seed, tensor), biases 0, anchor.b = -6,
 * calibration temperatures 1, array_mode "index". What training starts from.
 * Errors: as deg_model_load, DEG_ERR_IO (dir), DEG_ERR_NOMEM. */
DEG_API deg_status deg_ckpt_create_random(const char *model_path, uint64_t seed, const char *dir);

/* Load a checkpoint. model_path NULL = resolve the backbone: the path
 * recorded in deg.json, else deg.json's file name next to the checkpoint,
 * else in ${DEG_CACHE:-~/.cache/deg}/models. Errors: DEG_ERR_IO (missing
 * files, backbone not found), DEG_ERR_FORMAT (bad deg.json / tensors),
 * DEG_ERR_MISMATCH (the backbone's SHA-256 differs from deg.json's, or a head
 * tensor's shape does not fit the backbone), DEG_ERR_NUMERIC (NaN/Inf heads),
 * DEG_ERR_NOMEM. *out owned by the caller (deg_ckpt_free). */
DEG_API deg_status deg_ckpt_load(const char *dir, const char *model_path, deg_ckpt **out);
DEG_API void deg_ckpt_free(deg_ckpt *ckpt);

/* Loading options of deg_ckpt_open, in the llama.h style: start from
 * deg_ckpt_default_params() and set what you need (fields added later get
 * defaults there, so callers keep working). */
typedef struct deg_ckpt_params {
    /* The backbone to run on, already loaded (borrowed). NULL (default): the
     * checkpoint loads its own backbone (model_path, else resolved as
     * deg_ckpt_load does) and frees it in deg_ckpt_free. Non-NULL: the
     * checkpoint runs on this model and never frees it; the caller keeps the
     * model alive until deg_ckpt_free of every checkpoint opened over it
     * (the rule of trunks and cartridges), so one process holds one copy of
     * the weights for any number of checkpoints, cartridges and trunks. The
     * file or directory the model was loaded from must be the checkpoint's
     * backbone (its SHA-256 is checked: DEG_ERR_MISMATCH). A model is
     * immutable, so checkpoints over one model may fill on different threads;
     * one checkpoint still runs one fill at a time. */
    const deg_model *model;
    /* Backbone file/directory when model is NULL (borrowed, read during the
     * call); NULL = resolve from deg.json (deg_ckpt_backbone_path). */
    const char *model_path;
    /* Default of options.null_margin (§9: "null = the server's
     * --null-margin"): with has_null_margin = 1, requests whose null_margin
     * is null use this value (finite, nats); 0 (default): they use the
     * checkpoint's deg.json "null_margin" (0 when absent). */
    int32_t has_null_margin;
    double null_margin;
    /* Fork batch memory budget in bytes (deg_ckpt_set_fork_budget);
     * 0 = the default 256 MiB, else >= 1 MiB. */
    size_t fork_budget_bytes;
} deg_ckpt_params;

/* Defaults: model NULL, model_path NULL, no null_margin default (deg.json's),
 * fork_budget_bytes 0 (256 MiB). */
DEG_API deg_ckpt_params deg_ckpt_default_params(void);

/* Load the checkpoint in dir with params (NULL = deg_ckpt_default_params()).
 * deg_ckpt_load(dir, path, out) is deg_ckpt_open with model_path = path.
 * Errors: as deg_ckpt_load; DEG_ERR_ARG (non-finite null_margin,
 * fork_budget_bytes in (0, 1 MiB)); DEG_ERR_MISMATCH when params->model was
 * loaded from another backbone. *out owned by the caller (deg_ckpt_free,
 * which frees the model only if the checkpoint loaded it). */
DEG_API deg_status deg_ckpt_open(const char *dir, const deg_ckpt_params *params,
                                 deg_ckpt **out);

/* The backbone path the checkpoint in dir resolves to without a model_path:
 * the path recorded in deg.json, else deg.json's file name next to the
 * checkpoint, else in ${DEG_CACHE:-~/.cache/deg}/models (the first that
 * exists; not hashed here). *out is NUL-terminated, owned by the caller
 * (deg_free). Errors: DEG_ERR_IO (deg.json unreadable, backbone not found),
 * DEG_ERR_FORMAT (bad deg.json), DEG_ERR_NOMEM. */
DEG_API deg_status deg_ckpt_backbone_path(const char *dir, char **out);
/* The checkpoint's backbone (borrowed, valid until deg_ckpt_free). */
DEG_API const deg_model *deg_ckpt_model(const deg_ckpt *ckpt);
/* Memory budget of one fork batch in bytes (default 256 MiB; >= 1 MiB): fork
 * rows are grouped into deg_forks_feed batches of at most this many bytes of
 * K/V + hidden states (a single larger fork still runs alone). */
DEG_API deg_status deg_ckpt_set_fork_budget(deg_ckpt *ckpt, size_t bytes);
/* Debug/test switch: with on != 0 every field's meta gets "raw" (SHA-256 hex
 * of the field's raw fp32 head outputs), every generate field's meta
 * "token_ids" (the tokens it decoded, the stop token left out) and
 * "dropped_bytes" (bytes of a final character cut by the last token, dropped
 * from the value: deg contract §12.3), every extract field's meta
 * "start_logits" and "end_logits" (the pointers' logits over the context
 * tokens, then null's, after the priors and before the temperature), and the
 * response gets "timing"
 * {prefill_s, forks_s, generate_s, fork_rows, fork_tokens}. */
DEG_API deg_status deg_ckpt_set_debug(deg_ckpt *ckpt, int on);

/* Fill one request (§9 JSON: {"context", "schema", "model", "options"}) and
 * return the §8 response JSON ({"model", "value", "meta", "usage", "plan"})
 * in *response_json (owned by the caller, deg_free). On failure
 * *errors_json (may be NULL; owned by the caller) is a JSON array of
 * {"loc", "msg"} (request/schema problems: the 422 list; fill problems:
 * FillError reasons or validator violations). Errors: DEG_ERR_REQUEST
 * (malformed request, unknown fields/options, empty or blank-only context, temperature > 0
 * without seed), DEG_ERR_SCHEMA (invalid schema), DEG_ERR_FILL (FillError: a
 * required non-nullable value not in the context, minItems not met, a
 * generate constraint that cannot be met within the budget), DEG_ERR_UTF8,
 * DEG_ERR_NOMEM.
 * Long contexts (§12.1): no cap; the trunk is prefilled in 256-token passes
 * (scratch bounded by the pass, plus one score row of the context length per
 * thread), so peak memory = weights + context K/V + context hidden states +
 * one fork batch (bench/bench_fill measures it). A trunk longer than the
 * backbone's trained positions (n_ctx_train) is read whole, never truncated,
 * and the response says so: meta[""] = {"mode": "document", "warnings":
 * ["context: N prompt tokens exceed the backbone's T trained positions; ..."]}
 * (the spec is silent; "" is the document's own pointer).
 * Values: a plain string is the context's text at its span, verbatim (control
 * characters inside it, NUL included, are kept: the response JSON writes
 * \u0000; only its ends are trimmed, deg_span_trim); a generate value never
 * ends inside a UTF-8 character (a character the token budget cut is dropped:
 * contract §12.3). */
DEG_API deg_status deg_fill(deg_ckpt *ckpt, const char *request_json, size_t len,
                            char **response_json, char **errors_json);

/* Fill n requests with their fork rows in the same batches; each request's
 * result equals deg_fill's (bitwise, §10). responses[i] / errors[i] (errors
 * may be NULL) / statuses[i] per request. Returns DEG_OK if every request
 * succeeded, else the first failing request's status (a runtime failure such
 * as DEG_ERR_NOMEM fails all). */
DEG_API deg_status deg_fill_many(deg_ckpt *ckpt, size_t n, const char *const *requests,
                                 const size_t *lens, char **responses, char **errors,
                                 deg_status *statuses);

/* deg_fill / deg_fill_many under work limits (deg_run_limits; NULL = the
 * defaults, DEG_DEFAULT_MAX_FIELDS / DEG_DEFAULT_MAX_FORK_TOKENS, which
 * deg_fill and deg_fill_many run under too; a cap of 0 in a given struct
 * lifts it). deg_fill_many_ex takes one limits struct per request (limits
 * may be NULL, and so may limits[i].cancel): a request that is cancelled or reaches a
 * limit fails alone with DEG_ERR_CANCELLED / DEG_ERR_LIMIT (statuses[i],
 * errors[i] = [{"loc": "", "msg": why}]) and its forks stop running; the
 * others go on and their results are unchanged (bitwise, §10). The request's
 * options "deadline_ms" / "max_fields" / "max_fork_tokens" (integers >= 1 or
 * null) apply too, the tighter value winning. Checked: before the trunk
 * prefill (max_fields against the schema's own field count) and between the layers of its 256-token passes, between fill
 * rounds and fork batches (a batch whose requests have all stopped is cut
 * at its next layer), before every generate decode step. */
DEG_API deg_status deg_fill_ex(deg_ckpt *ckpt, const char *request_json, size_t len,
                               const deg_run_limits *limits, char **response_json,
                               char **errors_json);
DEG_API deg_status deg_fill_many_ex(deg_ckpt *ckpt, size_t n, const char *const *requests,
                                    const size_t *lens, const deg_run_limits *limits,
                                    char **responses, char **errors, deg_status *statuses);

#ifdef __cplusplus
}
#endif

#endif /* DEG_FILL_H */
