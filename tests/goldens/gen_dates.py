#!/usr/bin/env python3
"""Goldens for deg's date parser and date candidate finder (lib/deg/parse.c,
lib/deg/spans.c): the date / date-time that Python's standard library reads
from texts in the forms real offline documents write, an implementation
independent of deg's.

Each text is read with datetime.strptime and the explicit formats of its form
(C locale month names; a text no format reads is not a date: "2023 Feb 30",
"2023 Mar 145", "2023 Marching 5"); RFC 2822 mail dates with
email.utils.parsedate_to_datetime. Forms (counts from this machine's
/usr/share/vim "Last Change:" lines, Debian changelog trailers, man pages):
  new:      YYYY Mon D, YYYY Month D, YYYY Mon. D, YYYY Mon Dth (vim headers:
            770 of 1,113), YYYY-Mon-DD, YYYY/Mon/DD
  existing: YYYY-MM-DD, YYYY/MM/DD, YYYY.MM.DD, D Mon YYYY, D-Mon-YYYY,
            Mon D, YYYY, Mon D YYYY, Dth Mon YYYY, D. Mon YYYY,
            Wdy, D Mon YYYY (RFC 2822), YYYY-MM-DD HH:MM:SS +HHMM
Candidates: each valid date text (and each boundary text) set in a
vim-header context; the expected spans are where the text was put (code
points) when it is a date (and, after a weekday, the date without it), none
when the form's boundary is broken. Texts
that break no boundary but name no calendar date ("2023 Feb 30") are not
listed there: the finder proposes them and the parser refuses them (parse.h).

Usage: python tests/goldens/gen_dates.py (standard library only).
Writes tests/goldens/dates/dates.json.
"""
import datetime
import email.utils
import json
import locale
import os

WEEKDAYS = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
HERE = os.path.dirname(os.path.abspath(__file__))

NEW = ["%Y %b %d", "%Y %B %d", "%Y %b. %d", "%Y %B %dst", "%Y %B %dnd", "%Y %B %drd",
       "%Y %B %dth", "%Y %b %dst", "%Y %b %dnd", "%Y %b %drd", "%Y %b %dth",
       "%Y-%b-%d", "%Y/%b/%d"]
OLD = ["%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d", "%d %b %Y", "%d %B %Y", "%d-%b-%Y",
       "%b %d, %Y", "%B %d, %Y", "%b %d %Y", "%dth %b %Y", "%d. %b %Y", "%a, %d %b %Y"]

# (text, is it a new form, is its boundary intact: candidates expected when a date)
DATES = [
    ("2023 Mar 14", True, True), ("2023 Mar 5", True, True), ("2023 March 14", True, True),
    ("2023 Sep 30", True, True), ("2022 Dec 31", True, True), ("2024 Jan 1", True, True),
    ("2023 Mar. 14", True, True), ("2023 Mar  14", True, True), ("2023 March 14th", True, True),
    ("2023 Mar 1st", True, True), ("2023 May 22nd", True, True), ("2021 Jun 3rd", True, True),
    ("2024 Feb 29", True, True), ("2000 Feb 29", True, True), ("2023 MAR 14", True, True),
    ("2023-Mar-14", True, True), ("2023-mar-14", True, True), ("2023/Mar/14", True, True),
    ("2024-Feb-29", True, True), ("2023-Oct-02", True, True), ("1999-Dec-31", True, True),
    # not calendar dates
    ("2023 Feb 29", True, True), ("2023 Feb 30", True, True), ("1900 Feb 29", True, True),
    ("2023 Apr 31", True, True), ("2023 Mar 0", True, True), ("2023-Feb-30", True, True),
    ("2023-Jun-31", True, True),
    # broken boundaries: a digit right after, a longer word, a letter after
    ("2023 Mar 145", True, False), ("2023 Marching 5", True, False), ("2023 Mar 14x", True, False),
    ("2023 Mar14", True, False), ("2023-Mar-145", True, False), ("2023-Mar14", True, False),
    ("2023 Mayday 5", True, False), ("2023-Mar/14", True, False),
    # forms deg read before (survey regressions)
    ("2023-03-14", False, True), ("2023/03/14", False, True), ("2023.03.14", False, True),
    ("14 Mar 2023", False, True), ("14 March 2023", False, True), ("14-Mar-2023", False, True),
    ("Mar 14, 2023", False, True), ("March 4, 2023", False, True), ("Mar 14 2023", False, True),
    ("14th Mar 2023", False, True), ("14. Mar 2023", False, True), ("Tue, 14 Mar 2023", False, True),
]

# (text, default_offset): date-times; RFC 2822 ones read by the e-mail parser
DATETIMES = [
    ("Tue, 14 Mar 2023 10:00:00 +0100", None), ("Fri, 02 Jun 2023 09:30:15 -0700", None),
    ("Sun, 01 Jan 2023 00:00:00 +0000", None), ("Mon, 3 Apr 2023 23:59:59 +0530", None),
    ("2023-03-14 10:00:00 +0100", None), ("2023 Mar 14 10:00", "Z"),
    ("2023-Mar-14 10:00:00 +0200", None), ("2023 Mar 14 25:00", "Z"),
]


def read_date(text, new):
    for f in NEW if new else OLD:
        try:
            return datetime.datetime.strptime(text, f).date().isoformat()
        except ValueError:
            pass
    return None


def rfc3339(dt, assumed_z):
    if dt.tzinfo is None:
        return dt.strftime("%Y-%m-%dT%H:%M:%S") + "Z" if assumed_z else None
    off = dt.utcoffset()
    m = int(off.total_seconds() // 60)
    sign = "-" if m < 0 else "+"
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + f"{sign}{abs(m) // 60:02d}:{abs(m) % 60:02d}"


def read_datetime(text, default_offset):
    if text[:3].isalpha() and "," in text[:5]:
        try:
            return rfc3339(email.utils.parsedate_to_datetime(text), False)
        except (TypeError, ValueError):
            return None
    for f in ["%Y-%m-%d %H:%M:%S %z", "%Y-%b-%d %H:%M:%S %z", "%Y %b %d %H:%M"]:
        try:
            return rfc3339(datetime.datetime.strptime(text, f), default_offset == "Z")
        except ValueError:
            pass
    return None


def main():
    locale.setlocale(locale.LC_TIME, "C")
    dates, cands = [], []
    for text, new, intact in DATES:
        iso = read_date(text, new)
        dates.append({"text": text, "date": iso})
        if iso is not None or not intact:
            pre = '" Last Change:\t'
            ctx = pre + text + '\n" Maintainer:\tBram <bram@vim.org>\n'
            start = len(pre)  # code points (the prefix is ASCII)
            spans = [[start, start + len(text)]] if iso and intact else []
            if spans and text[:3] in WEEKDAYS:
                # the finder also offers the date without its weekday
                spans.append([start + text.index(" ") + 1, start + len(text)])
            cands.append({"kind": "date", "context": ctx, "spans": spans})
    dts = [{"text": t, "default_offset": o, "date_time": read_datetime(t, o)}
           for t, o in DATETIMES]
    out = {"source": "tests/goldens/gen_dates.py (Python datetime.strptime, email.utils)",
           "dates": dates, "date_times": dts, "candidates": cands}
    os.makedirs(os.path.join(HERE, "dates"), exist_ok=True)
    with open(os.path.join(HERE, "dates", "dates.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(dates)} dates ({sum(d['date'] is not None for d in dates)} valid), "
          f"{len(dts)} date-times, {len(cands)} candidate contexts")


if __name__ == "__main__":
    main()
