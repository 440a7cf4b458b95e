/* parse.h - deterministic parsers of the deg contract (spec §3, §9, §12.3):
 * numbers and dates copied from text, format checks, candidate spans, span
 * trimming.
 *
 * Every rule here only NORMALIZES what is written: no digit, day, month,
 * year or century is ever invented (spec §3 "Extracted values are always
 * copied from the context"). Text that can only be read by guessing is
 * rejected (DEG_ERR_FORMAT, or DEG_ERR_RANGE for a well-formed value the
 * leaf cannot hold), and the caller turns that into null/omit/FillError per
 * the leaf's on_null.
 *
 * All inputs are UTF-8 byte ranges [s, s+n) (not NUL-terminated); invalid
 * UTF-8 is DEG_ERR_UTF8 with the byte offset. Offsets in spans are Unicode
 * code points (spec §8 meta.span). Pure functions: no locale, clock or
 * global state; thread-safe.
 *
 * ---- Number rule (dg_parse_number) ----------------------------------------
 *  Accepted around the digits, at most one of each, in any usual order:
 *   - a sign: '+', '-', U+2212 MINUS SIGN (before or after a currency mark:
 *     "-$5", "$-5");
 *   - a currency mark, prefix or suffix, optional space: $ € £ ¥ ₹ ₩ ₽ ₺ ₪
 *     ₫ ₱ ₴ ₦ ¢ ₿, US$ A$ C$ NZ$ HK$ S$ R$, or an upper-case ISO 4217 code
 *     of the table in parse_number.c (USD EUR GBP JPY CHF ...);
 *   - a percent sign '%' after the digits (optional space: "5 %"). The value
 *     is the number written (45% -> 45): converting it would compute a
 *     number that is not in the text.
 *  Not accepted: parentheses (accounting negatives "(1,234)" are ambiguous
 *  with prose parentheses, so reading them as a minus would invent a sign;
 *  the candidate finder offers the digits inside), two-digit-year-like
 *  guesses, words ("five"), non-ASCII digits, NaN/Infinity, "5." or "1e".
 *  Separators between digit groups: ',' '.' space U+00A0 U+202F U+2009
 *  apostrophe U+2019. The decimal separator is decided as follows:
 *   - all separators of one kind:
 *       space / apostrophe: thousands;
 *       '.' once: DECIMAL point ("1.234" = 1.234; English reading);
 *       '.' twice or more: thousands ("1.234.567");
 *       ',' once: THOUSANDS when exactly 3 digits follow and the leading
 *         group is 1..3 digits not starting with 0 ("1,234" = 1234,
 *         "12,345" = 12345), otherwise a DECIMAL comma ("1,5" = 1.5,
 *         "0,123" = 0.123, "1,2345" = 1.2345);
 *       ',' twice or more: thousands (also Indian lakh grouping 1,23,456);
 *   - mixed kinds: the LAST separator is the decimal one and must occur once
 *     and be ',' or '.'; all others are one thousands kind ("1.234,56",
 *     "1,234.56", "1 234,56", "1'234.56").
 *  Thousands groups: a leading group of 1..3 digits (no leading 0 unless it
 *  is the only digit before a decimal part), then groups of exactly 3.
 *  A leading decimal separator (".5", ",5") reads as 0.5. An exponent
 *  ("6.02e23", "1E-3") is accepted only with '.' and no grouping.
 *  Output: the JSON number text. Integers are exact (digits as written,
 *  leading zeros dropped). A number written with a decimal part keeps its
 *  digits (trailing fraction zeros dropped, at least one kept: "2.50" ->
 *  "2.5", "2.00" -> "2.0", as Python writes float("2.00")); an exponent is
 *  kept ("6.02e23"). integer_only: the value must be integral (fraction
 *  digits all zero, or an exponent that leaves none) and fit int64 (the
 *  range a JSON integer holds in jansson), else DEG_ERR_RANGE; "2.00" gives
 *  "2". Negative zero is written "0" / "0.0".
 *
 * ---- Date rule (dg_parse_date, dg_parse_datetime) -------------------------
 *  Dates (an optional leading English weekday, which must then match):
 *   - YYYY-MM-DD, YYYY/MM/DD, YYYY.MM.DD (year first: unambiguous);
 *   - YYYY Mon D, YYYY Month D, YYYY Mon. D, YYYY Mon Dth (vim runtime
 *     headers' "Last Change: 2023 Mar 14"), YYYY-Mon-DD, YYYY/Mon/DD (same
 *     separator twice); never date_order (the month is a word). After a
 *     space the month must be capitalized ("by 2030 may 5 teams" is prose);
 *     the month word must not run into the day ("2023 Mar14" is rejected);
 *   - A/B/YYYY, A-B-YYYY, A.B.YYYY (same separator twice): numeric, read by
 *     date_order: MDY, DMY, or DEG_DATE_ANY = parses only when exactly one
 *     of the two readings is a valid calendar date (or both are the same
 *     date, e.g. 05/05/2026);
 *   - D Month YYYY, D Month, YYYY, Dth of Month YYYY, D. Month YYYY,
 *     D-Mon-YYYY, D/Mon/YYYY; Month D, YYYY, Month Dth YYYY, Mon. D YYYY.
 *     Month names: English full names and 3-letter abbreviations (+ "Sept"),
 *     plus German, French and Spanish full names; case-insensitive.
 *  Every number and month word must end where the form does: "2023 Mar 145",
 *  "2023 Marching 5", "2023 Mar 14x" are not dates (and not candidates).
 *  Years must have 4 digits (two-digit years would invent a century);
 *  a date without a day ("March 2026") is rejected; invalid calendar dates
 *  (Feb 30, 2025-02-29, month 13) are rejected.
 *  Times: H:MM, H:MM:SS, H:MM:SS.fraction (24 h), or 12-hour with AM/PM
 *  (am, pm, a.m., p.m.; "2 PM", "2:30pm"; hour 1..12, 12 AM = 00). The time
 *  follows the date after 'T', spaces, ", ", " at " or " @ ", or precedes it
 *  followed by " on " / ", " / " ". Zones: Z, +HH:MM, +HHMM, +HH, U+2212
 *  minus, UTC/GMT (alone or with an offset: "UTC+2", "GMT-05:30"), and the
 *  fixed-offset abbreviations EST EDT CST CDT MST MDT PST PDT CET CEST EET
 *  EEST WET WEST JST AEST AEDT (ambiguous ones like IST/BST are rejected).
 *  RFC 2822 mail dates ("Tue, 14 Mar 2023 10:00:00 +0100") are the weekday,
 *  D Mon YYYY, time and +HHMM forms above. Not read: ctime / date(1) output
 *  ("Tue Mar 14 10:00:00 CEST 2023": the year after the time), ISO 8601
 *  basic "20230314" (a number as often as a date), week and ordinal dates.
 *  Output date: "YYYY-MM-DD". Output date-time (RFC 3339):
 *  "YYYY-MM-DDTHH:MM:SS[.fraction]OFFSET", seconds ":00" when not written,
 *  fraction as written, OFFSET "Z" for Z/UTC/GMT and otherwise "+HH:MM".
 *  A date-time without a zone gets default_offset ("Z" or "+HH:MM"; NULL =
 *  reject) and *assumed_offset = 1. dg_parse_datetime rejects a date with no
 *  time (midnight would be invented); dg_parse_date accepts a date-time text
 *  and returns its written date (no zone conversion).
 */
#ifndef DG_DEG_PARSE_H
#define DG_DEG_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"

/* ---- UTF-8 helpers (shared by parse.c, validate.c, acceptor.c) --------- */

/* Decode the code point at s[*i] (i < n), advancing *i. Returns the code
 * point, or -1 for an invalid or truncated sequence (then *i is unchanged). */
int32_t dg_parse_utf8_next(const char *s, size_t n, size_t *i);

/* DEG_OK if [s, s+n) is valid UTF-8 (no surrogates, no overlongs), else
 * DEG_ERR_UTF8 naming `what` and the byte offset. Sets *n_cp (may be NULL)
 * to the number of code points. */
deg_status dg_parse_utf8_check(const char *s, size_t n, const char *what, size_t *n_cp);

/* 1 if cp is Unicode White_Space. */
int dg_parse_is_space(int32_t cp);

/* 1 if y-m-d is a proleptic Gregorian calendar date with 1 <= y <= 9999. */
int dg_parse_valid_date(int y, int m, int d);

/* ---- Parsers ------------------------------------------------------------ */

/* The number in [s, s+n) (surrounding whitespace allowed) as JSON number
 * text, NUL-terminated, in out[cap] (cap >= n + 8 always suffices).
 * Errors: DEG_ERR_FORMAT (not a number written per the rule above; message
 * says why), DEG_ERR_RANGE (integer_only and fractional or beyond int64),
 * DEG_ERR_UTF8, DEG_ERR_ARG (cap too small). */
deg_status dg_parse_number(const char *s, size_t n, int integer_only, char *out,
                           size_t cap);

/* The date in [s, s+n) as "YYYY-MM-DD" in out[11]. */
deg_status dg_parse_date(const char *s, size_t n, deg_date_order order, char out[11]);

/* The date-time in [s, s+n) as RFC 3339 in out[cap] (cap >= 64 suffices
 * unless the written fraction is long: cap >= n + 32 always does).
 * default_offset: "Z" or "+HH:MM"/"-HH:MM", or NULL. *assumed_offset (may be
 * NULL) = 1 when default_offset was used. Errors: DEG_ERR_FORMAT,
 * DEG_ERR_RANGE (invalid calendar date or time), DEG_ERR_ARG (bad
 * default_offset), DEG_ERR_UTF8. */
deg_status dg_parse_datetime(const char *s, size_t n, deg_date_order order,
                             const char *default_offset, char *out, size_t cap,
                             int *assumed_offset);

/* ---- Format checks (spec §3, §5 formats; used by the validator) -------- */

/* 1 = [s, s+n) conforms to format, 0 = it does not (including invalid
 * UTF-8), -1 = format is not one deg checks (date, date-time, email, uri,
 * uuid). Rules:
 *  date:      RFC 3339 full-date, a valid calendar date.
 *  date-time: RFC 3339 date-time: full-date "T"|"t" partial-time
 *             (fraction allowed) + "Z"|"z"|+HH:MM; hours 00-23, minutes
 *             00-59, seconds 00-59, or 60 when the time converted to UTC is
 *             23:59:60 (leap second).
 *  email:     RFC 5321 Mailbox, ASCII: dot-atom or quoted-string local part
 *             (<= 64 octets), '@', a hostname of LDH labels (1..63, no
 *             leading/trailing '-', <= 253 octets) or an address literal
 *             [IPv4] / [IPv6:...]. No comments, no folding whitespace.
 *  uri:       RFC 3986 "URI" (scheme ":" hier-part ["?" query]
 *             ["#" fragment]), ASCII only, IPv6 literals checked.
 *  uuid:      RFC 4122 text form 8-4-4-4-12 hex digits, either case. */
int dg_format_check(const char *format, const char *s, size_t n);
/* 1 if s[0..n) is an RFC 3986 §4.1 URI-reference (a URI as the uri format reads it, or
 * a relative reference: "//" authority, a path, a query, a fragment, or nothing), else
 * 0. The meta-schemas' "uri-reference" format of $id and $ref. */
int dg_uri_reference_check(const char *s, size_t n);

/* ---- Candidate spans and the span trimmer (spec §12.3) ----------------- */

/* Every span [start, end) (code points into [s, s+n)) that a leaf of kind
 * ("number", "integer", "date", "date-time", "email", "uri", "uuid") could
 * take, sorted by (start, end), without duplicates. *spans is malloc'd
 * (free()), 2 size_t per span. The regexes are in spans.c (the same ones
 * datagen uses to locate gold spans):
 *  number/integer: a digit run with thousands groups, a decimal part or an
 *    exponent, not glued to letters, ':' (times) or another digit group;
 *    each occurrence is offered bare, with its sign, with a currency mark
 *    before and with a percent/currency mark after, so the pointer can pick
 *    any of the forms the number parser reads;
 *  date: every date style of the date rule, with and without a leading
 *    weekday; date-time: date + time (+ zone), weekday forms, time-first
 *    forms;
 *  email / uri / uuid: a permissive match, trimmed (dg_span_trim) and kept
 *    only if it passes dg_format_check; uri needs "scheme://" or one of
 *    mailto: urn: tel: news: sip: sips: geo: magnet: data: doi:.
 * Number and date spans are syntactic: the decoder parses each with the
 * leaf's options (date_order) and constraints. */
deg_status dg_candidates(const char *kind, const char *s, size_t n, size_t **spans,
                         size_t *n_spans);

/* Trim [start, end) (code points) of whitespace and boundary punctuation a
 * token carried in; writes the trimmed span (possibly empty, then
 * *out_start == *out_end). Rule (applied repeatedly at both ends):
 *  - Unicode whitespace and control characters are removed;
 *  - leading , ; : ! ? . and trailing , ; : ! ? are removed (a leading "." kept before a
 *    digit, or starting a relative path "./" or "../");
 *  - a trailing '.' is removed unless the last word is an abbreviation of
 *    1-2 letter pieces each ending in '.' ("U.S.", "e.g.", "Ph.D." keep it;
 *    "Inc." and "done." lose it);
 *  - quotes " ' ` « » “ ” „ ‘ ’ at either end are removed, except a trailing
 *    ' or ’ right after an 's' when the span holds no opening quote of it
 *    (the possessive "students'");
 *  - an opening bracket ( [ { at the start is removed unless its matching
 *    closer is inside the span; a closing bracket ) ] } at the end is
 *    removed unless its opener is inside the span ("f(x)" and "(555) 123"
 *    keep theirs);
 *  - list bullets (- * • · – —) at the start are removed when whitespace
 *    follows them ("- item"), so a sign "-5" is kept. */
deg_status dg_span_trim(const char *s, size_t n, size_t start, size_t end,
                        size_t *out_start, size_t *out_end);

#endif
