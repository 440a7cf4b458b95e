"""Decoding rules of the fill runtime on the real SmolLM2 and the shipped checkpoint
(issue 12), each on a short document of a layout or wording the heads get wrong alone:
JSON members are key lines of the key prior (lib/deg/keyprior.h), a key the field's
description names is read (key_prior.description), plain spans end at word boundaries
(deg.json span_word_bounds), plain spans outside arrays keep to one sentence (deg.json
span_single_sentence), no two fields of one object keep the same span (deg.json
span_distinct), booleans compare written values and scores read written numbers, also
from one-line HTML rows (key_prior.compare / .score, libdeg 0.17.0), a date labelled in
prose is read (key_prior.phrase), a number is read before the unit its field's name
ends in (key_prior.phrase, libdeg 0.18.0), a headerless TSV paragraph's rows are an
object array's records (list_prior, libdeg 0.18.0), and a date-time reads the zone written after it
(fill_extract.c fullest_dates), a property named with a past participle takes the table
column named with its verb ("ReleasedOn" = "release", libdeg 0.19.0), and x-generate text
ends before its first repeated line (deg.json generate_stop_repeat, libdeg 0.19.0), and a
plain span of capitalised words grows to the whole name (deg.json span_whole_names, libdeg
0.19.0), and a boolean reads the clause that names its subject, negated or not, and a
nullable boolean nothing states is null (deg.json mention_prior, libdeg 0.20.0), and a data
file's rows (TAB- or space-aligned, a trailing '#' comment left out) and numbered INI
sections are records whose properties each read one column, the same on every row
(list_prior, libdeg 0.21.0), and "Key value" directive lines and a Debian changelog's
first entry header are key lines, a row one cell short parts its name and number, and the
sole option is not read in a URL, after a negation or in another key's value (libdeg
0.23.0). Each test
also runs the same checkpoint without the rule
(a copy of its directory with the setting removed) where that is a setting, so it can
fail: the heads alone give another value. The date rule is no setting: libdeg 0.9.0
answered 2021-12-03T01:32:51Z (assumed_offset) and read the package's author and license
from the repository URL."""
import json
import shutil

import deg

# a real npm manifest (this machine's /usr/lib/node_modules/npm/node_modules/eastasianwidth)
PACKAGE_JSON = """{
  "name": "eastasianwidth",
  "version": "0.2.0",
  "description": "Get East Asian Width from a character.",
  "main": "eastasianwidth.js",
  "files": [
    "eastasianwidth.js"
  ],
  "scripts": {
    "test": "mocha"
  },
  "repository": "git://github.com/komagata/eastasianwidth.git",
  "author": "Masaki Komagata",
  "license": "MIT",
  "devDependencies": {
    "mocha": "~1.9.0"
  }
}
"""
PACKAGE_SCHEMA = {"type": "object", "required": ["name", "version", "author", "license"],
                  "properties": {"name": {"type": "string"}, "version": {"type": "string"},
                                 "author": {"type": "string"}, "license": {"type": "string"},
                                 "main": {"type": ["string", "null"]}}}
PACKAGE_WANT = {"name": "eastasianwidth", "version": "0.2.0", "author": "Masaki Komagata",
                "license": "MIT", "main": "eastasianwidth.js"}

# the head of this machine's /usr/share/cmake-3.25/Modules/FindASPELL.cmake (the datagen v4
# cmakemod kind, which union10 leaves out: a development-set document)
FIND_ASPELL = (
    "# Distributed under the OSI-approved BSD 3-Clause License.  See accompanying\n"
    "# file Copyright.txt or https://cmake.org/licensing for details.\n\n"
    "#[=======================================================================[.rst:\n"
    "FindASPELL\n----------\n\nTry to find ASPELL\n\nOnce done this will define\n\n::\n\n"
    "  ASPELL_FOUND - system has ASPELL\n"
    "  ASPELL_EXECUTABLE - the ASPELL executable\n"
    "  ASPELL_INCLUDE_DIR - the ASPELL include directory\n"
    "  ASPELL_LIBRARIES - The libraries needed to use ASPELL\n"
    "  ASPELL_DEFINITIONS - Compiler switches required for using ASPELL\n"
    "#]=======================================================================]")
FIND_SCHEMA = {"type": "object", "properties": {
    "has_imported_targets": {"type": "boolean", "title": "Has imported targets",
                             "description": "are any targets given?"},
    "synopsis": {"type": "string", "description": "the first line of the module's description"},
    "module": {"type": "string"},
    "url": {"type": "string", "format": "uri", "description": "the first URL in the file"}}}

CHANGES = ("Subject: changes in bzip2\n\nHi all, here is what changed recently:\n\n"
           "* 1.0.8-5 went out on 2021-12-03 01:32:51 -0700; urgency was medium. "
           "Uploader: foka@debian.org\n  * Make tests cross-test-friendly\n")


# /usr/lib/systemd/system/apt-daily.service (apt 2.6)
UNIT = ("[Unit]\nDescription=Daily apt download activities\nDocumentation=man:apt(8)\n"
        "ConditionACPower=true\nAfter=network.target network-online.target "
        "systemd-networkd.service NetworkManager.service connman.service\n\n[Service]\n"
        "Type=oneshot\nExecStartPre=-/usr/lib/apt/apt-helper wait-online\n"
        "ExecStart=/usr/lib/apt/apt.systemd.daily update\n")
UNIT_SCHEMA = {"type": "object", "required": ["summary", "command"], "properties": {
    "summary": {"type": "string", "description": "the unit's description"},
    "command": {"type": "string", "description": "what ExecStart runs"},
    "kind": {"type": ["string", "null"], "description": "the service type"},
    "manual": {"type": ["string", "null"], "description": "its documentation"}}}


# /usr/share/dbus-1/system-services/org.freedesktop.timedate1.service (systemd 252) as
# datagen's prose rendering writes a key file (dev5's keyfile kind: a development-set layout)
PROSE_SERVICE = ("The name is org.freedesktop.timedate1. The exec is /bin/false. The user is "
                 "root. The systemd service is dbus-org.freedesktop.timedate1.service.\n")
PROSE_SCHEMA = {"type": "object", "properties": {
    "systemd_unit": {"type": "string"}, "bus_name": {"type": "string"},
    "runs_as": {"type": "string"}}}


def sentence_ends(text):
    """Sentence ends in text by lib/deg/sentences.h's rule, for ASCII text."""
    n = 0
    for i, c in enumerate(text):
        if c not in ".!?" or i + 1 >= len(text) or text[i + 1] != " ":
            continue
        j = i + 1
        while j < len(text) and text[j] == " ":
            j += 1
        if j < len(text) and text[j].isupper():
            k = i
            while k > 0 and text[k - 1].isalpha():
                k -= 1
            w = text[k:i]
            n += not (len(w) == 1 or (2 <= len(w) <= 3 and w[0].isupper() and w[1:].islower()))
    return n


def without(tmp_path, setting, sub=None):
    """A copy of the default checkpoint's directory without deg.json[setting]
    (or without deg.json[setting][sub]; sub may be a tuple of such keys)."""
    src = deg.default_checkpoint_path()
    dst = tmp_path / "ckpt"
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dst)
    meta = json.loads((dst / "deg.json").read_text())
    holder = meta if sub is None else meta[setting]
    for key in (setting,) if sub is None else (sub,) if isinstance(sub, str) else sub:
        assert key in holder, key
        del holder[key]
    (dst / "deg.json").write_text(json.dumps(meta))
    return str(dst)


def read_and_alone(model, tmp_path, doc, schema, setting, sub=None):
    """doc filled with the default checkpoint, and with it without the setting a rule sits
    under (`without`): a test of the rule can fail, as the heads alone give another value."""
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    bare = deg.load(without(tmp_path, setting, sub), model=model)
    return ck.fill(doc, schema), bare.fill(doc, schema)


def test_json_members_are_key_lines(model, tmp_path):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    got = ck.fill(PACKAGE_JSON, PACKAGE_SCHEMA)["value"]
    assert got == PACKAGE_WANT
    heads = deg.load(without(tmp_path, "key_prior"), model=model)
    alone = heads.fill(PACKAGE_JSON, PACKAGE_SCHEMA)["value"]
    assert alone != PACKAGE_WANT, "the heads alone read every member"


def test_keys_named_in_descriptions(model, tmp_path):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    got = ck.fill(UNIT, UNIT_SCHEMA)["value"]
    assert got == {"summary": "Daily apt download activities",
                   "command": "/usr/lib/apt/apt.systemd.daily update", "kind": "oneshot",
                   "manual": "man:apt(8)"}
    names = deg.load(without(tmp_path, "key_prior", "description"), model=model)
    alone = names.fill(UNIT, UNIT_SCHEMA)["value"]
    # by name alone no key matches summary/command/manual: other lines' values
    assert alone["summary"] != got["summary"] and alone["command"] != got["command"]


def test_plain_spans_end_at_word_boundaries(model, tmp_path):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    got = ck.fill(FIND_ASPELL, FIND_SCHEMA)["value"]
    assert got["module"] == "FindASPELL"
    cut = deg.load(without(tmp_path, "span_word_bounds"), model=model)
    alone = cut.fill(FIND_ASPELL, FIND_SCHEMA)["value"]["module"]
    # the pointers alone end inside "FindASPELL" (v11's heads: inside "xdg-user-dirs-update" of
    # an INI rendering, which v12's end after "xdg-user", a word boundary)
    assert alone != got["module"] and alone and "FindASPELL".startswith(alone)


def test_plain_spans_keep_to_one_sentence(model, tmp_path):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    got = ck.fill(PROSE_SERVICE, PROSE_SCHEMA)["value"]
    assert got["systemd_unit"] == "dbus-org.freedesktop.timedate1.service"
    for v in got.values():
        assert v in PROSE_SERVICE and sentence_ends(v) == 0, v
    runs_on = deg.load(without(tmp_path, "span_single_sentence"), model=model)
    alone = runs_on.fill(PROSE_SERVICE, PROSE_SCHEMA)["value"]
    # the end pointers alone run on over the next sentences ("/bin/false. The user is root. ...")
    assert sum(sentence_ends(v) for v in alone.values()) >= 3, alone


# this machine's /usr/share/zoneinfo/zone1970.tab rows for Kazakhstan (three of five), written
# as a "Time zones:" block of indented items with "; Coordinates: " parts
ZONES = ("Country code:\tKZ\nCountry:\tKazakhstan\nTime zones:\n"
         "  Asia/Almaty; Coordinates: +4315+07657\n"
         "  Asia/Qyzylorda; Coordinates: +4448+06528\n"
         "  Asia/Aqtobe; Coordinates: +5017+05710\n"
         "Several zones:\tYes\n")
ZONES_SCHEMA = {"type": "object", "required": ["zones"], "properties": {
    "code": {"type": "string", "description": "ISO 3166 alpha-2 code"},
    "zones": {"type": "array", "description": "the country's time zones, in file order",
              "items": {"type": "object", "required": ["zone"], "properties": {
                  "zone": {"type": "string"}, "coordinates": {"type": "string"},
                  "area": {"type": "string"}}}},
    "country": {"type": "string", "description": "the country's name"}}}


# two roles one person holds: the heads read her name for a third field too
PEOPLE = "Maintainer: Ana Kowalski\nUploader: Ana Kowalski\n"
PEOPLE_SCHEMA = {"type": "object", "properties": {"people": {"type": "object", "properties": {
    "maintainer": {"type": ["string", "null"]}, "uploader": {"type": ["string", "null"]},
    "author": {"type": ["string", "null"]}}}}}


def test_spans_stay_with_one_field(model, tmp_path):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    r = ck.fill(ZONES, ZONES_SCHEMA)
    # the indented lines are the list's items, their "; Coordinates:" parts its cells;
    # the two properties no key names take the one unnamed column: zone, and area none
    # (fill_columns.c, libdeg 0.21.0)
    assert r["value"] == {"code": "KZ", "country": "Kazakhstan", "zones": [
        {"zone": "Asia/Almaty", "coordinates": "+4315+07657"},
        {"zone": "Asia/Qyzylorda", "coordinates": "+4448+06528"},
        {"zone": "Asia/Aqtobe", "coordinates": "+5017+05710"}]}
    assert r["meta"]["/zones"]["list_columns"] == {"zone": 0, "area": None}
    # no two fields of one object keep the same span: the author's would be the maintainer's
    r = ck.fill(PEOPLE, PEOPLE_SCHEMA)
    assert r["value"]["people"] == {"maintainer": "Ana Kowalski", "uploader": "Ana Kowalski",
                                    "author": None}
    m = r["meta"]["/people/author"]
    assert m["span"] is None and m["span_taken_by"] == "/people/maintainer", m
    shared = deg.load(without(tmp_path, "span_distinct"), model=model)
    alone = shared.fill(PEOPLE, PEOPLE_SCHEMA)["value"]["people"]
    # the heads alone read the maintainer's span for the author too
    assert alone["author"] == alone["maintainer"] == "Ana Kowalski", alone


# a plain array no list names: the count head's ITEM forks read one span
GUESTS = "Open Data Day in Porto on September 09, 2024. Speakers are Ana Kowalski and Hugo Novak."
GUESTS_SCHEMA = {"type": "object", "properties": {"guests": {"type": "array",
                                                           "items": {"type": "string"}}}}


def test_items_hold_distinct_spans(model, tmp_path):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    r = ck.fill(GUESTS, GUESTS_SCHEMA)
    items = r["value"]["guests"]
    assert len(items) == len(set(items)) and r["meta"]["/guests"]["dropped"] >= 1
    shared = deg.load(without(tmp_path, "span_distinct"), model=model)
    alone = shared.fill(GUESTS, GUESTS_SCHEMA)["value"]["guests"]
    # the count head's second "ITEM 2 of" fork reads the first item's span again
    assert len(alone) > len(set(alone)), alone


def test_date_time_keeps_its_written_zone(model):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    schema = {"type": "object", "required": ["released"], "properties": {
        "released": {"type": "string", "format": "date-time",
                     "description": "when 1.0.8-5 went out"}}}
    r = ck.fill(CHANGES, schema)
    assert r["value"]["released"] == "2021-12-03T01:32:51-07:00"
    assert not r["meta"]["/released"].get("assumed_offset")


# this machine's `dpkg -s libjansson4` (head)
DPKG_JANSSON = ("Package: libjansson4\n"
                "Status: install ok installed\n"
                "Priority: optional\n"
                "Section: libs\n"
                "Installed-Size: 101\n"
                "Maintainer: Alessandro Ghedini <ghedo@debian.org>\n"
                "Architecture: amd64\n"
                "Multi-Arch: same\n"
                "Source: jansson\n"
                "Version: 2.14-2\n")
COMPARE_SCHEMA = {"type": "object", "properties": {
    "q1": {"type": "boolean", "description": "whether section equals libs"},
    "q2": {"type": "boolean", "description": "true if the priority is 'required'"},
    "q4": {"type": "boolean", "description": "Is the source jansson?"},
    "q3": {"type": "boolean", "description": "true when installed size > 1000"},
    "not_architecture_is_amd64": {"type": "boolean"},
    "installed_size_band": {"type": "integer", "minimum": 0, "maximum": 3, "x-levels": {
        "0": "0 to 49", "1": "50 to 99", "2": "100 to 499", "3": "500 or more"}}}}
COMPARE_WANT = {"q1": True, "q2": False, "q3": False, "q4": True,
                "not_architecture_is_amd64": False, "installed_size_band": 2}


def html_rows(text):
    """The key lines of text as one-line HTML table rows (datagen-v2's html layout)."""
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>\n"
                   for k, v in (line.split(": ", 1) for line in text.splitlines()))
    return f"<html><body>\n<table>\n{rows}</table>\n</body></html>\n"


def test_booleans_compare_written_values(model, tmp_path):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    for doc in (DPKG_JANSSON, html_rows(DPKG_JANSSON)):
        got = ck.fill(doc, COMPARE_SCHEMA)
        assert got["value"] == COMPARE_WANT, doc
        assert got["meta"]["/installed_size_band"]["written_level"] == 2
    heads = deg.load(without(tmp_path, "key_prior", "compare"), model=model)
    alone = heads.fill(DPKG_JANSSON, COMPARE_SCHEMA)["value"]
    assert alone != COMPARE_WANT, "the heads alone answered every comparison"


LISTING = ("Sunny 4-bedroom flat in Ghent for 1,326 per month, 86 m2. Pets welcome.\n"
           "Available from October 13, 2027. Write to farid.dubois@mail.example.org.\n")
LISTING_SCHEMA = {"type": "object", "properties": {
    "bedrooms": {"type": "integer", "minimum": 0, "maximum": 10},
    "available_from": {"type": "string", "format": "date"}}}


def test_scores_and_dates_written_in_prose(model, tmp_path):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    got = ck.fill(LISTING, LISTING_SCHEMA)
    assert got["value"] == {"bedrooms": 4, "available_from": "2027-10-13"}
    assert got["meta"]["/bedrooms"]["written_level"] == 4
    # without the rules the heads give another number of bedrooms, and no date
    scores = deg.load(without(tmp_path / "s", "key_prior", "score"), model=model)
    assert scores.fill(LISTING, LISTING_SCHEMA)["value"]["bedrooms"] != 4
    # (the listing writes one date: key_prior.sole alone reads it too, libdeg 0.22.0)
    phrase = deg.load(without(tmp_path / "p", "key_prior", ("phrase", "sole")), model=model)
    assert phrase.fill(LISTING, LISTING_SCHEMA)["value"].get("available_from") != "2027-10-13"


def test_numbers_read_the_unit_their_name_ends_in(model, tmp_path):
    # "area_m2" says its number is written "86 m2" (keyprior.h dg_key_unit_after,
    # libdeg 0.18.0; the datagen-v2 listings answered null for all 6 on test100)
    schema = {"type": "object", "properties": {"area_m2": {"type": ["number", "null"]}}}
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    assert ck.fill(LISTING, schema)["value"] == {"area_m2": 86}
    # the rule rides on key_prior.phrase: without it the heads answer null
    phrase = deg.load(without(tmp_path / "p", "key_prior", "phrase"), model=model)
    assert phrase.fill(LISTING, schema)["value"].get("area_m2") is None


ZONE_TAB = "NI\t+1209-08617\tAmerica/Managua\n\n# iso3166.tab\nNI\tNicaragua\n"
ZONE_TAB_SCHEMA = {"type": "object", "properties": {"zones": {
    "type": "array", "items": {"type": "object", "properties": {
        "zone": {"type": "string"}, "position": {"type": "string"}}, "required": ["zone"]}}}}


def test_headerless_tsv_rows_are_records(model, tmp_path):
    # a zone.tab paragraph (lists.h headerless TSV, libdeg 0.18.0): one object per
    # row, each value a whole cell of it
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    got = ck.fill(ZONE_TAB, ZONE_TAB_SCHEMA)
    zones = got["value"]["zones"]
    assert len(zones) == 1 and got["meta"]["/zones"]["list_table"] is True
    assert set(zones[0].values()) <= {"NI", "+1209-08617", "America/Managua"}
    # without the list prior the heads read outside the row (the country's name)
    bare = deg.load(without(tmp_path / "l", "list_prior"), model=model)
    alone = bare.fill(ZONE_TAB, ZONE_TAB_SCHEMA)["value"].get("zones", [])
    assert not all(set(z.values()) <= {"NI", "+1209-08617", "America/Managua"} for z in alone)



# the head of this machine's /usr/share/distro-info/debian.csv (distro-info-data)
DEBIAN_CSV = ("version,codename,series,created,release,eol,eol-lts,eol-elts\n"
              "1.1,Buzz,buzz,1993-08-16,1996-06-17,1997-06-05\n"
              "1.2,Rex,rex,1996-06-17,1996-12-12,1998-06-05\n"
              "1.3,Bo,bo,1996-12-12,1997-06-05,1999-03-09\n")
RELEASES_SCHEMA = {"type": "object", "properties": {"Rows": {"type": "array", "items": {
    "type": "object", "required": ["version"], "properties": {
        "ReleasedOn": {"type": ["string", "null"], "format": "date"},
        "version": {"type": "string"}}}}}}


def test_past_participles_name_their_verbs_column(model):
    # "ReleasedOn" folds "released" with the column "release" (keyprior.c fold_word,
    # libdeg 0.19.0; the C test countprior::number_folding fails without it). 0.18.0
    # matched no column and the heads took the "created" date for 2 of 4 rows of
    # datagen-v2's test release table.
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    rows = ck.fill(DEBIAN_CSV, RELEASES_SCHEMA)["value"]["Rows"]
    assert rows == [{"ReleasedOn": "1996-06-17", "version": "1.1"},
                    {"ReleasedOn": "1996-12-12", "version": "1.2"},
                    {"ReleasedOn": "1997-06-05", "version": "1.3"}]


# arch(1) of GNU coreutils 9.1 as man renders it on this machine (a datagen-v2 val document)
ARCH_MAN = (
    "ARCH(1)                       User Commands      ARCH(1)\n\nNAME\n       arch - print "
    "machine hardware name (same as uname -m)\n\nSYNOPSIS\n       arch [OPTION]...\n\n\n"
    "DESCRIPTION\n       Print machine architecture.\n\n       --help\n              display "
    "this help and exit\n\n       --version\n              output version information and "
    "exit\n\n\nAUTHOR\n       Written by David MacKenzie and Karel Zak.\n\n\nREPORTING BUGS\n"
    "       GNU coreutils online help: <https://www.gnu.org/software/coreutils/>\n\n       "
    "Report any translation bugs to <https://translationproject.org/team/>\n\n\nCOPYRIGHT\n"
    "       Copyright  2022 Free Software Foundation, Inc. License GPLv3+: GNU GPL version 3 "
    "or later <https://gnu.org/licenses/gpl.html>.\n\n       This is free software: you are "
    "free to change and redistribute it. There is NO WARRANTY, to the extent permitted by "
    "law.\n\n\nSEE ALSO\n       uname(1), uname(2)\n\n       Full documentation "
    "<https://www.gnu.org/software/coreutils/arch>\n\n       or available locally via: info "
    "'(coreutils) arch invocation'\n\n\nGNU coreutils 9.1        September 2022        "
    "ARCH(1)\n")
ARCH_SCHEMA = {"type": "object", "required": ["options"], "properties": {
    "options": {"type": "array", "items": {"type": "object", "required": ["longFlag"],
                "properties": {"flag": {"type": "string"}, "longFlag": {"type": "string"},
                               "help": {"type": "string"}}}},
    "commandName": {"type": "string", "title": "Command"},
    "price": {"type": ["number", "null"]},
    "shortSummary": {"type": "string", "x-generate": True, "maxLength": 120,
                     "description": "a one-line summary of what the command does"}}}


def repeats_a_line(text):
    """Some complete line (blanks trimmed, not blank) equals an earlier one."""
    lines = [x.strip() for x in text.split("\n")[:-1]]
    return any(x and x in lines[:i] for i, x in enumerate(lines))


def test_generated_text_ends_before_a_repeated_line(model, tmp_path):
    # lib/deg/repeats.h: greedy decoding loops on "ARCH(1)\n\n"; the value ends
    # before the first repeat, and meta says why
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    got = ck.fill(ARCH_MAN, ARCH_SCHEMA)
    assert got["value"]["shortSummary"] == "ARCH(1)"
    assert got["meta"]["/shortSummary"]["stopped"] == "repeated_line"
    loose = deg.load(without(tmp_path, "generate_stop_repeat"), model=model)
    alone = loose.fill(ARCH_MAN, ARCH_SCHEMA)
    assert repeats_a_line(alone["value"]["shortSummary"])
    assert "stopped" not in alone["meta"]["/shortSummary"]
    # only the generate row reads the rule
    assert {k: v for k, v in alone["value"].items() if k != "shortSummary"} == \
        {k: v for k, v in got["value"].items() if k != "shortSummary"}


# an announcement in datagen-v2's programmatic "event" layout (a kind held out for test)
EVENT = ("Join us for Open Data Day in Porto on September 09, 2024 10:30. Tickets cost 30.21 "
         "EUR. Speaker: Bruno Eriksen <bruno.eriksen@example.com>. Speaker: Hugo Novak. "
         "Speaker: Ana Kowalski <ana.kowalski@shop.example.net>.")
# (e-mail addresses in angle brackets: written "Name (address)", the item's parts are
# cells since libdeg 0.21.0, and the name is read whole without span_whole_names)
EVENT_SCHEMA = {"type": "object", "properties": {"speakers": {"type": "array", "items": {
    "type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "email": {"type": ["string", "null"], "format": "email"}}}}}}


def test_names_are_not_cut(model, tmp_path):
    # lib/deg/names.h: the pointers stop inside "Bruno Eriksen"; the span grows to
    # the capitalised words next to it, inside its item
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    names = [s["name"] for s in ck.fill(EVENT, EVENT_SCHEMA)["value"]["speakers"]]
    assert names == ["Bruno Eriksen", "Hugo Novak", "Ana Kowalski"]
    cut = deg.load(without(tmp_path, "span_whole_names"), model=model)
    alone = [s["name"] for s in cut.fill(EVENT, EVENT_SCHEMA)["value"]["speakers"]]
    assert alone == ["Bruno", "Hugo", "Ana Kowalski"]


# a guesthouse notice in the wording of the hand-written development set of stated booleans
# (lib/deg/mentions.h): none of datagen's kinds
HOTEL = ("Seaview Guesthouse, Brighton. Rooms from 70 GBP a night. Breakfast is not included "
         "(served for 9 GBP). No parking on site. Dogs welcome. Entry is free!")
HOTEL_SCHEMA = {"type": "object", "properties": {
    "breakfast_included": {"type": "boolean"},
    "parking_available": {"type": ["boolean", "null"]},
    "wifi": {"type": ["boolean", "null"]},
    "not_free": {"type": "boolean", "description": "the opposite of: free"}}}


def test_stated_booleans(model, tmp_path):
    # lib/deg/mentions.h: a clause naming the field's subject says yes unless negated;
    # a nullable boolean nothing states is null, on the evidence alone
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    got = ck.fill(HOTEL, HOTEL_SCHEMA)
    assert got["value"] == {"breakfast_included": False, "parking_available": False,
                            "wifi": None, "not_free": False}
    meta = got["meta"]
    assert meta["/breakfast_included"]["mention"] == "does_not_hold"
    assert meta["/not_free"]["mention"] == "does_not_hold"  # "free" holds
    assert meta["/wifi"]["mention"] == "absent" and meta["/wifi"]["head"] is False
    assert meta["/parking_available"]["mode"] == "decide.choice"
    assert abs(sum(meta["/parking_available"]["probabilities"]) - 1) < 1e-9
    # without the setting the heads answer every one of them wrong (all true)
    alone = deg.load(without(tmp_path, "mention_prior"), model=model).fill(HOTEL, HOTEL_SCHEMA)
    assert alone["value"] == {"breakfast_included": True, "parking_available": True,
                              "wifi": True, "not_free": True}
    assert "mention" not in alone["meta"]["/breakfast_included"]


# the head of this machine's /etc/protocols (netbase): TAB-separated rows, each with a
# trailing '#' comment
PROTOCOLS = ("ip\t0\tIP\t\t# internet protocol, pseudo protocol number\n"
             "hopopt\t0\tHOPOPT\t\t# IPv6 Hop-by-Hop Option [RFC1883]\n"
             "icmp\t1\tICMP\t\t# internet control message protocol\n"
             "igmp\t2\tIGMP\t\t# Internet Group Management\n"
             "ggp\t3\tGGP\t\t# gateway-gateway protocol\n"
             "ipencap\t4\tIP-ENCAP\t# IP encapsulated in IP (officially ``IP'')\n")
PROTOCOLS_SHORT_ROW = "idpr-cmtp 38\tIDPR-CMTP\t# IDPR Control Message Transport\n"
PROTOCOLS_SCHEMA = {"type": "object", "properties": {"protocols": {"type": "array", "items": {
    "type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "number": {"type": "integer"},
        "alias": {"type": ["string", "null"]}}}}}}
PROTOCOLS_WANT = [{"name": n, "number": k, "alias": a} for n, k, a in (
    ("ip", 0, "IP"), ("hopopt", 0, "HOPOPT"), ("icmp", 1, "ICMP"), ("igmp", 2, "IGMP"),
    ("ggp", 3, "GGP"), ("ipencap", 4, "IP-ENCAP"))]

# numbered INI sections, keys named unlike two of the properties (host / server,
# path / directory)
MIRRORS_INI = ("[mirror.1]\nhost = deb.debian.org\npath = /debian\ncountry = any\n\n"
               "[mirror.2]\nhost = ftp.de.debian.org\npath = /debian\ncountry = DE\n\n"
               "[mirror.3]\nhost = ftp.fr.debian.org\npath = /debian\ncountry = FR\n")
MIRRORS_SCHEMA = {"type": "object", "properties": {"mirrors": {"type": "array", "items": {
    "type": "object", "required": ["server"], "properties": {
        "server": {"type": "string"}, "country": {"type": "string"},
        "directory": {"type": "string"}}}}}}
MIRRORS_WANT = [{"server": h, "country": c, "directory": "/debian"} for h, c in (
    ("deb.debian.org", "any"), ("ftp.de.debian.org", "DE"), ("ftp.fr.debian.org", "FR"))]


def test_data_file_columns(model, tmp_path):
    # a data file's rows and numbered INI sections are records; the properties no
    # column name reads take one column each, the same on every row (fill_columns.c)
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    got = ck.fill(PROTOCOLS, PROTOCOLS_SCHEMA)
    assert got["value"]["protocols"] == PROTOCOLS_WANT
    assert got["meta"]["/protocols"]["list_columns"] == {"name": 0, "number": 1, "alias": 2}
    got = ck.fill(MIRRORS_INI, MIRRORS_SCHEMA)
    assert got["value"]["mirrors"] == MIRRORS_WANT
    assert got["meta"]["/mirrors"]["list_key"] == "mirror"
    assert got["meta"]["/mirrors"]["list_columns"] == {"server": "host", "directory": "path"}
    # a row one cell short whose name and number one blank parts (libdeg 0.23.0)
    got = ck.fill(PROTOCOLS + PROTOCOLS_SHORT_ROW, PROTOCOLS_SCHEMA)["value"]["protocols"]
    assert got[-1] == {"name": "idpr-cmtp", "number": 38, "alias": "IDPR-CMTP"}
    # without the list prior the heads read one protocol and no mirror
    bare = deg.load(without(tmp_path / "l", "list_prior"), model=model)
    assert bare.fill(PROTOCOLS, PROTOCOLS_SCHEMA)["value"].get("protocols") != PROTOCOLS_WANT
    assert bare.fill(MIRRORS_INI, MIRRORS_SCHEMA)["value"].get("mirrors") != MIRRORS_WANT


# a list of records whose parts are labelled ("Port: 43"), under a key no array is
# named like, and the same records as an HTML list of em-dash parts (libdeg 0.22.0)
SERVICES_KV = ("First port: 43\nServices:\n- whois; Port: 43; Protocol: tcp\n"
               "- tacacs; Port: 49; Protocol: udp\n- domain; Port: 53; Protocol: tcp\n")
SERVICES_HTML = ("<table>\n<tr><th>Services</th><td><ol><li>whois &mdash; 43 &mdash; tcp</li>"
                 "<li>tacacs &mdash; 49 &mdash; udp</li><li>domain &mdash; 53 &mdash; tcp</li>"
                 "</ol></td></tr>\n<tr><th>First port</th><td>43</td></tr>\n</table>\n")
ENTRIES_SCHEMA = {"type": "object", "properties": {"entries": {"type": "array", "items": {
    "type": "object", "required": ["service"], "properties": {
        "service": {"type": "string"}, "port": {"type": "integer"},
        "protocol": {"type": "string"}}}}}}
ENTRIES_WANT = [{"service": "whois", "port": 43, "protocol": "tcp"},
                {"service": "tacacs", "port": 49, "protocol": "udp"},
                {"service": "domain", "port": 53, "protocol": "tcp"}]


def test_lists_of_records(model, tmp_path):
    # an object array takes the list whose items' labelled parts name its properties,
    # else the text's only list of records (lists.c dg_lists_match)
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    got = ck.fill(SERVICES_KV, ENTRIES_SCHEMA)
    assert got["value"]["entries"] == ENTRIES_WANT
    assert got["meta"]["/entries"]["list_key"] == "services"
    got = ck.fill(SERVICES_HTML, ENTRIES_SCHEMA)
    assert got["meta"]["/entries"]["list_key"] == "services"
    assert [e["port"] for e in got["value"]["entries"]] == [43, 49, 53]
    bare = deg.load(without(tmp_path / "l", "list_prior"), model=model)
    assert bare.fill(SERVICES_KV, ENTRIES_SCHEMA)["value"].get("entries") != ENTRIES_WANT


MEETUP = "Spring Meetup in Lyon, 3 May 2026. Free entry."
MEETUP_SCHEMA = {"type": "object", "properties": {
    "kind": {"enum": ["concert", "workshop", "meetup", "fair", "sport", "other"]}}}
TICKET_LOG = ("[2024-04-06 22:18:00 -0500] NEW ticket=48213 cat=billing sev=3/5\n"
              "[2024-04-06 22:18:00 -0500] reporter=ann@example.org\n"
              "[2024-04-06 22:18:00 -0500] RESOLVED\n")
TICKET_SCHEMA = {"type": "object", "properties": {
    "created": {"type": "string", "format": "date-time"}}}


def test_the_one_option_and_the_one_day_written(model, tmp_path):
    # key_prior.sole (libdeg 0.22.0): the only option written as a word, the only day
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    assert ck.fill(MEETUP, MEETUP_SCHEMA)["value"]["kind"] == "meetup"
    assert ck.fill(TICKET_LOG, TICKET_SCHEMA)["value"] == {"created": "2024-04-06T22:18:00-05:00"}
    bare = deg.load(without(tmp_path / "s", "key_prior", "sole"), model=model)
    assert bare.fill(MEETUP, MEETUP_SCHEMA)["value"]["kind"] != "meetup"
    assert bare.fill(TICKET_LOG, TICKET_SCHEMA)["value"] == {}


# this machine's /etc/ssh/ssh_config (Debian 12): settings written "Key value" with no
# separator, most of them commented out
SSH_CONFIG = """# This is the ssh client system-wide configuration file.  See
# ssh_config(5) for more information.

Include /etc/ssh/ssh_config.d/*.conf

Host *
#   ForwardAgent no
#   PasswordAuthentication yes
#   Port 22
#   Cipher 3des
#   ProxyCommand ssh -q -W %h:%p gateway.example.com
    SendEnv LANG LC_*
    HashKnownHosts yes
    GSSAPIAuthentication yes
"""
SSH_SCHEMA = {"type": "object", "properties": {
    "hash_known_hosts": {"type": "boolean"}, "gssapi_authentication": {"type": "boolean"},
    "send_env": {"type": "string"}, "include": {"type": "string"}}}
SSH_WANT = {"hash_known_hosts": True, "gssapi_authentication": True, "send_env": "LANG LC_*",
            "include": "/etc/ssh/ssh_config.d/*.conf"}


def key_lines_read(model, tmp_path, doc, schema, want):
    """The default checkpoint reads `want` from doc; without its key prior it does not."""
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    assert ck.fill(doc, schema)["value"] == want
    bare = deg.load(without(tmp_path, "key_prior"), model=model)
    assert bare.fill(doc, schema)["value"] != want


def test_directive_lines(model, tmp_path):
    # "Key value" lines in a block of three or more are key lines (libdeg 0.23.0)
    key_lines_read(model, tmp_path, SSH_CONFIG, SSH_SCHEMA, SSH_WANT)


# a choice whose one written option is in a URL, after a negation or in another key's
# value gets no sole bonus (libdeg 0.23.0): the fill is the fill without key_prior.sole;
# the plain sentence gets it. (A field named like a licence would also read the licence
# prior of libdeg 0.24.0, at the same setting: test_metadata_rules.py.)
LICENSE_SCHEMA = {"type": "object", "properties": {
    "terms": {"enum": ["GPL", "BSD", "MIT", "Apache"]}}}


def test_the_one_option_read_as_written(model, tmp_path):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    bare = deg.load(without(tmp_path, "key_prior", "sole"), model=model)
    for doc in ("Name: bc\nOS: UNIX (BSD, Linux)\nLicense: GNU GPLv3+\n",
                "A calculator. It is not BSD licensed.\n",
                "A calculator. Source: https://example.org/bsd/bc.tar.gz\n"):
        assert ck.fill(doc, LICENSE_SCHEMA) == bare.fill(doc, LICENSE_SCHEMA), doc
    doc = "A calculator. It is BSD licensed.\n"
    got, alone = ck.fill(doc, LICENSE_SCHEMA), bare.fill(doc, LICENSE_SCHEMA)
    assert got["value"]["terms"] == "BSD"
    assert got["meta"]["/terms"]["probability"] > alone["meta"]["/terms"]["probability"]


# the head of this machine's /usr/share/doc/bc/changelog.Debian.gz
BC_CHANGELOG = """bc (1.07.1-3) unstable; urgency=medium

  [ Ondřej Nový ]
  * d/copyright: Use https protocol in Format field
  * d/changelog: Remove trailing whitespaces

  [ Ryan Kavanagh ]
  * bump standards version to 4.6.0
  * update homepage (Closes: #970615)

 -- Ryan Kavanagh <rak@debian.org>  Sat, 07 Aug 2021 10:32:14 -0400

bc (1.07.1-2) unstable; urgency=medium

  * Upload to unstable.

 -- Ryan Kavanagh <rak@debian.org>  Sun, 13 Oct 2019 21:19:51 -0400
"""
BC_SCHEMA = {"type": "object", "properties": {
    "package": {"type": "string"}, "version": {"type": "string"},
    "distribution": {"type": "string"},
    "urgency": {"enum": ["low", "medium", "high", "emergency", "critical"]}}}
BC_WANT = {"package": "bc", "version": "1.07.1-3", "distribution": "unstable",
           "urgency": "medium"}


def test_changelog_entry_header(model, tmp_path):
    # the first entry's header is key lines (keyline_forms.c, libdeg 0.23.0)
    key_lines_read(model, tmp_path, BC_CHANGELOG, BC_SCHEMA, BC_WANT)
