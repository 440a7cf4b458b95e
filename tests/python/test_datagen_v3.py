"""deg.datagen v3 (issue 12): the new document kinds (unit, pkgconfig, npm,
cheader, pymodule, perlpod, info, gettext) on small committed fixtures
(tests/python/fixtures/datagen3, written for these tests; the gettext
catalogue is built here), gold read by hand from the fixtures, every record
checked (deg's validator, python-jsonschema, gold spans), the guard (package
metadata directories never walked), held-out kinds, and v2's records
unchanged byte for byte."""
import gettext
import hashlib
import io
import json
import os
import random
import struct

import pytest

from deg._native import has
from deg.datagen import guard

pytestmark = pytest.mark.skipif(not has("deg_candidates"), reason="libdeg has no candidate finder")

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "datagen3")
ROOTS = {"unit": f"{FIX}/units", "pkgconfig": f"{FIX}/pkgconfig", "npm": f"{FIX}/node_modules",
         "cheader": f"{FIX}/include", "pymodule": f"{FIX}/pystd", "perlpod": f"{FIX}/perl",
         "info": f"{FIX}/info", "gnulog": f"{FIX}/doc"}
PO_HEADER = ("Project-Id-Version: frob 2.4.1\nReport-Msgid-Bugs-To: frob-i18n@example.org\n"
             "POT-Creation-Date: 2024-03-01 10:00+0100\nPO-Revision-Date: 2024-03-05 12:34+0100\n"
             "Last-Translator: Ana Lopez <ana@example.net>\nLanguage-Team: German <de@li.example.org>\n"
             "Language: de\nMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n"
             "Content-Transfer-Encoding: 8bit\nPlural-Forms: nplurals=2; plural=(n != 1);\n")


def write_mo(path, header, pairs=(("Widget", "Widget"), ("cache", "Zwischenspeicher"))):
    """A GNU .mo catalogue (little-endian, revision 0) holding the header entry
    and `pairs`, originals sorted as the format requires."""
    entries = sorted([("", header)] + list(pairs))
    ids = [k.encode() for k, _ in entries]
    strs = [v.encode() for _, v in entries]
    n = len(entries)
    o, t = 28, 28 + 8 * n
    data_at = t + 8 * n
    otab, ttab, blob = b"", b"", b""
    for s in ids:
        otab += struct.pack("<2I", len(s), data_at + len(blob))
        blob += s + b"\0"
    for s in strs:
        ttab += struct.pack("<2I", len(s), data_at + len(blob))
        blob += s + b"\0"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<7I", 0x950412de, 0, n, o, t, 0, 0) + otab + ttab + blob)


@pytest.fixture(scope="module", autouse=True)
def _gnulog_from_the_start():
    """gnulog leaves a file's first 3000 characters to the news kind; the fixture
    ChangeLog is shorter, so its windows start at its first entry here."""
    from deg.datagen.kinds import gnu
    skip, gnu.GNULOG.SKIP = gnu.GNULOG.SKIP, 0
    yield
    gnu.GNULOG.SKIP = skip


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    loc = tmp_path_factory.mktemp("locale")
    write_mo(str(loc / "de" / "LC_MESSAGES" / "frob.mo"), PO_HEADER)
    write_mo(str(loc / "fr" / "LC_MESSAGES" / "gadget.mo"),
             "Project-Id-Version: gadget\nLanguage: fr\nContent-Type: text/plain; charset=ISO-8859-1\n")
    return dict(ROOTS, gettext=str(loc))


def _gen(roots, seed=0, kinds=None, per_doc=(3, 3), withhold=0.0):
    from deg.datagen.v2 import generate_v2
    kinds = kinds or sorted(roots)
    return generate_v2(seed, {k: 10 for k in kinds}, roots={k: roots[k] for k in kinds},
                       records_per_doc=per_doc, withhold=withhold)


def _facts(kind, roots):
    from deg.datagen.v2 import KINDS
    mod = KINDS[kind]
    return {e.doc: {f.key: (f.value if f.kind != "objects" else
                            [{k: x.value for k, x in it.items()} for it in f.items]) for f in e.facts}
            for e in mod.entities(mod.find(roots[kind]), random.Random(0), 10)}


GOLD = {  # (kind, doc) -> facts read by hand from the fixture text
    ("unit", "frobd.service"): {
        "name": "frobd.service", "unit_type": "service", "description": "Frob widget cache daemon",
        "exec_start": "/usr/sbin/frobd --foreground", "user": "frob", "service_type": "notify",
        "restart": "on-failure", "docs": ["man:frobd(8)", "https://frob.example.org/docs"],
        "after": ["network.target", "local-fs.target"], "wants": ["network-online.target"],
        "wanted_by": ["multi-user.target"], "installable": True,
        "sections": [{"name": "Unit", "keys": ["Description", "Documentation", "After", "Wants"]},
                     {"name": "Service", "keys": ["Type", "ExecStart", "Restart", "User"]},
                     {"name": "Install", "keys": ["WantedBy"]}]},
    ("unit", "frob-clean.timer"): {"unit_type": "timer", "calendar": "weekly", "installable": False,
                                   "default_deps": False},
    ("pkgconfig", "frob.pc"): {
        "module": "frob", "name": "Frob", "description": "Widget cache library", "version": "2.4.1",
        "url": "https://frob.example.org/", "libs": "-L${libdir} -lfrob", "prefix": "/usr",
        "requires": ["glib-2.0", "zlib"], "requires_private": ["libffi"], "has_requires": True},
    ("pkgconfig", "frobproto.pc"): {"url": None, "version": "1.0", "has_requires": False},
    ("npm", "frob@2.4.1"): {
        "name": "frob", "license": "MIT", "author": "Ana Lopez", "author_email": "ana@example.net",
        "keywords": ["cache", "widget"], "repository": "https://github.com/frob/frob.git",
        "node": ">=18", "has_deps": True,
        "dependencies": [{"package": "debug", "range": "^4.3.4"}, {"package": "ms", "range": "2.1.2"}]},
    ("npm", "frob_widget@0.3.0"): {"name": "@frob/widget", "license": "WTFPL", "author": "Bo Berg",
                                   "author_email": "bo@example.org", "module_type": "module",
                                   "has_deps": False},
    ("cheader", "frob.h"): {
        "first_year": 2009, "last_year": 2021, "holder": "Ana Lopez", "licence": "LGPL",
        "permissive": False, "email": "ana@example.net", "guard": "FROB_H", "version": "2.4.1",
        "includes": ["stddef.h", "frob/widget.h"]},
    ("cheader", "frob/widget.h"): {"first_year": 2018, "holder": "The Frob Project", "licence": "MIT",
                                   "permissive": True, "guard": "FROB_WIDGET_H"},
    ("pymodule", "frobmod.py"): {
        "summary": "Widget cache helpers for frob workspaces", "version": "2.4.1",
        "email": "ana@example.net", "imports": ["os", "sys", "re", "collections"],
        "all": ["rebuild", "count"], "first_year": 2003, "package": False, "has_all": True},
    ("pymodule", "frobpkg/__init__.py"): {"version": None, "package": True, "has_all": False,
                                          "imports": ["__future__", "json"]},
    ("perlpod", "Frob::Widget"): {
        "module": "Frob::Widget", "summary": "cache widgets of a frob workspace", "version": "1.07",
        "author": "Ana Lopez", "email": "ana@example.net", "first_year": 2012, "licence": "Perl",
        "see_also": ["Frob", "Frob::Cache"], "synopsis": True,
        "headings": ["NAME", "VERSION", "SYNOPSIS", "SEE ALSO", "AUTHOR", "COPYRIGHT AND LICENSE"]},
    ("info", "frob.info#Top"): {
        "manual": "frob.info", "node": "Top", "next": "Invoking", "prev": None, "up": "(dir)",
        "title": "Frob", "menu_names": ["Invoking", "Cache Files"], "has_menu": True,
        "menu": [{"node": "Invoking", "desc": "How to run frob"},
                 {"node": "Cache Files", "desc": "Where widgets are kept"}]},
    ("info", "frob.info#Invoking"): {"prev": "Top", "number": "1", "title": "Invoking frob",
                                     "has_menu": False},
    ("gnulog", "frob@0"): {
        "date": "2024-03-05", "author": "Ana Lopez", "email": "ana@example.net", "one_author": False,
        "entries": [{"date": "2024-03-05", "author": "Ana Lopez", "email": "ana@example.net",
                     "files": ["NEWS"]},
                    {"date": "2024-02-28", "author": "Bo Berg", "email": "bo@example.org",
                     "files": ["src/cache.c", "src/cache.h", "tests/cache-drop"]},
                    {"date": "2024-02-20", "author": "Ana Lopez", "email": "ana@example.net"}]},
    ("gettext", "frob@de"): {
        "project": "frob", "version": "2.4.1", "bugs": "frob-i18n@example.org", "created": "2024-03-01",
        "revised": "2024-03-05", "translator": "Ana Lopez", "translator_email": "ana@example.net",
        "team": "German", "language": "de", "charset": "UTF-8", "nplurals": 2, "plurals": True},
    ("gettext", "gadget@fr"): {"project": "gadget", "version": None, "charset": "ISO-8859-1",
                               "plurals": False},
}


@pytest.mark.parametrize("kind", sorted({k for k, _ in GOLD}))
def test_kind_gold_from_source(kind, roots):
    got = _facts(kind, roots)
    want = {d: g for (k, d), g in GOLD.items() if k == kind}
    assert set(got) == set(want)
    for doc, g in want.items():
        assert {k: got[doc].get(k, "absent") for k in g} == g, doc


def test_every_record_checked(roots):
    from test_datagen_v2 import _check_record
    records, stats = _gen(roots)
    assert stats["bad"] == {} and not stats["missing"]
    assert {r["source"] for r in records} == set(roots)
    for r in records:
        _check_record(r)
    # raw records are the fixture text itself (the unit file under its `# path` line)
    unit = [r for r in records if r["source"] == "unit" and r["template"] == "raw"]
    assert unit and all(r["context"].split("\n", 1)[1] == open(f"{FIX}/units/{r['doc']}").read()
                        for r in unit)
    nulls = [r for r in records if None in r["value"].values()]
    assert nulls  # absent facts (no URL, no Prev node, no version) asked with gold null


def test_unit_sections_are_nested_arrays(roots):
    """A unit's sections (name + the keys it sets) are an array of objects holding
    an array: asked of the raw layout only, gold = the file's sections, checked."""
    from test_datagen_v2 import _check_record
    from deg.datagen.record import modes_of
    records, _ = _gen(roots, kinds=["unit"], per_doc=(16, 16))
    nested = [r for r in records if modes_of(r).get("array.nested")]
    assert len(nested) >= 2 and all(r["template"] == "raw" for r in nested)
    want = {d: [(x["name"], x.get("keys")) for x in g["sections"]]
            for (k, d), g in GOLD.items() if k == "unit" and "sections" in g}
    seen = 0
    for r in nested:
        _check_record(r)
        for k, v in r["value"].items():
            if isinstance(v, list) and v and isinstance(v[0], dict) and r["doc"] in want:
                got = [(next(x for x in it.values() if isinstance(x, str)),
                        next((x for x in it.values() if isinstance(x, list)), None)) for it in v]
                assert got == want[r["doc"]]
                seen += 1
    assert seen >= 1


def test_gnulog_leaves_the_file_start_to_news(tmp_path):
    """Entries in a ChangeLog's first 3000 characters (the news kind's excerpt) are
    never a gnulog document; later ones are."""
    from deg.datagen.kinds import gnu
    kind = gnu._GnuLog()
    assert kind.SKIP == 3000
    assert kind.entities(kind.find(f"{FIX}/doc"), random.Random(0), 5) == []
    old = open(f"{FIX}/doc/frob/ChangeLog").read()
    early = "".join(f"2023-01-{d:02d}  Old Timer  <old@example.org>\n\n\t* x.c: Change {d}.\n\n"
                    for d in range(1, 29))
    early += "\t" + "Older entries are in ChangeLog.1 and the version control history.\n\t" * 40 + "\n"
    assert 500 < early.rfind("Old Timer") < 3000 < len(early)
    (tmp_path / "frob").mkdir()
    (tmp_path / "frob" / "ChangeLog").write_text(early + old)
    ents = kind.entities(kind.find(str(tmp_path)), random.Random(0), 5)
    assert ents and all("Old Timer" not in e.raw for e in ents)


def test_withheld_records_checked(roots):
    from test_datagen_v2 import _check_record
    records, _ = _gen(roots, seed=2, withhold=1.0)
    held = [r for r in records if "withheld" in r]
    assert len(held) >= 5
    for r in held:
        _check_record(r)


def test_held_out_kinds(roots):
    from deg.datagen.v2 import TEST_ONLY_KINDS, VAL_ONLY_KINDS, V3_PER_KIND, KINDS
    assert {"info", "perlpod"} <= set(TEST_ONLY_KINDS) and "unit" in VAL_ONLY_KINDS
    assert set(V3_PER_KIND) <= set(KINDS)
    records, _ = _gen(roots)
    for r in records:
        if r["source"] in ("info", "perlpod"):
            assert r["split"] == "test"
        elif r["source"] == "unit":
            assert r["split"] == "val"


@pytest.mark.parametrize("line,want", [
    ("Copyright (c) 2012 Martin Sustrik  All rights reserved.", (2012, None, "Martin Sustrik")),
    ("Copyright 2016 The OpenSSL Project Authors. All Rights Reserved.",
     (2016, None, "The OpenSSL Project Authors")),
    (" * Copyright 2018-2020,2024 Free Software Foundation, Inc.                  *",
     (2018, 2024, "Free Software Foundation, Inc")),
    ("Copyright (C) 1999, 2000 by\n * Someone", (1999, 2000, None)),
    ("Copyright 2008 Texas Instruments Incorporated - http://www.ti.com/",
     (2008, None, "Texas Instruments Incorporated"))])
def test_copyright_line(line, want):
    """Years and holder of real header notices (the holder without "All rights
    reserved", a comment box's padding or a trailing URL); spans verbatim."""
    from deg.datagen.kinds.source import copyright_facts
    got = {f.key: f for f in copyright_facts(line)}
    assert tuple(got[k].value if k in got else None for k in ("first_year", "last_year", "holder")) == want
    for f in got.values():
        assert line[f.pos[0]:f.pos[1]] == str(f.value)


def test_bool_facts_balanced_per_key():
    """balance_bool_facts: a boolean true for 1 document in 10 ends up asked of about
    as many false documents as true ones (all true ones kept); a constant boolean is
    never asked; other facts stay; the same seed gives the same documents."""
    from deg.datagen.facts import Fact
    from deg.datagen.kinds import Entity
    from deg.datagen.v2 import balance_bool_facts
    ents = [Entity(f"d{i}", "t", [Fact("name", "span", f"n{i}"),
                                  Fact("pkg", "bool", i % 10 == 0), Fact("const", "bool", True)])
            for i in range(400)]
    out = balance_bool_facts(ents, "s")
    vals = [f.value for e in out for f in e.facts if f.key == "pkg"]
    assert vals.count(True) == 40 and 25 <= vals.count(False) <= 55
    assert not [f for e in out for f in e.facts if f.key == "const"]
    assert [[f.value for f in e.facts if f.key == "name"] for e in out] == [[f"n{i}"] for i in range(400)]
    again = balance_bool_facts(ents, "s")
    assert [[f.key for f in e.facts] for e in again] == [[f.key for f in e.facts] for e in out]
    even = [Entity(f"d{i}", "t", [Fact("b", "bool", i % 2 == 0)]) for i in range(10)]
    assert balance_bool_facts(even, "s") == even


def test_mo_header_matches_gettext(roots):
    """deg's .mo reader against the stdlib's GNUTranslations on the same file."""
    from deg.datagen.kinds.gnu import mo_header
    p = os.path.join(roots["gettext"], "de", "LC_MESSAGES", "frob.mo")
    data = open(p, "rb").read()
    head = mo_header(data)
    assert head == PO_HEADER
    t = gettext.GNUTranslations(io.BytesIO(data))
    assert t.gettext("cache") == "Zwischenspeicher"
    info = t.info()
    for ln in head.strip().split("\n"):
        k, _, v = ln.partition(": ")
        assert info[k.lower()] == v
    assert mo_header(data[:40]) is None and mo_header(b"\0" * 64) is None


def test_walk_never_enters_package_metadata(tmp_path):
    for p in ("site/frob-1.0.dist-info/METADATA", "site/frob.egg-info/PKG-INFO",
              "site/frob.egg-info/x.py", "site/frob/mod.py", "site/frob/copyright",
              "doc/frob/copyright", "doc/frob/README.h"):
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text("x\n")
    got = [os.path.relpath(p, tmp_path) for p in guard.walk(str(tmp_path), (".py", ".h", "METADATA",
                                                                           "PKG-INFO", "copyright"))]
    assert got == ["doc/frob/README.h", "site/frob/mod.py"]
    with pytest.raises(guard.ReservedSourceError):
        guard.read_bytes(str(tmp_path / "site/frob-1.0.dist-info/METADATA"))


def test_no_v3_kind_reads_reserved_files(roots, monkeypatch):
    """The fixtures hold a DEP-5-like copyright file and .dist-info/METADATA next
    to the sources; a whole run reads files through the guard, never those."""
    seen = []
    real = guard.check_path

    def spy(path):
        seen.append(str(path))
        return real(path)
    monkeypatch.setattr(guard, "check_path", spy)
    records, _ = _gen(roots, per_doc=(1, 1))
    assert records and len(seen) >= 10
    assert not [p for p in seen if os.path.basename(p) in ("copyright", "METADATA")
                or ".dist-info" in p or "site-packages" in p]
    assert not [r for r in records if "leaked" in r["context"].lower() or "Leaked" in r["context"]]


# datagen v2's records on its fixtures (tests/python/fixtures/datagen, read from
# tests/python/fixtures with relative roots so that doc ids do not depend on where the
# checkout is; seed 0, 10 documents a kind, 1..2 records a document): count and sha256 of
# json.dumps(records, sort_keys=True), computed with main before the v3 kinds were added.
V2_SHA = {0.0: (36, "0233eda5e925c35f858f9905ccf7db2ae5942544059c508d410a3005f14a1048"),
          0.5: (35, "d54f38deee8bdcb295635113205434de57254fe2cd32a8372b92c3e36141eb4c")}


@pytest.mark.parametrize("withhold", sorted(V2_SHA))
def test_v2_records_unchanged(withhold, monkeypatch):
    from deg.datagen.v2 import generate_v2
    from test_datagen_v2 import ROOTS as V2_ROOTS
    monkeypatch.chdir(os.path.dirname(FIX))
    rel = {k: ([os.path.relpath(x) for x in v] if isinstance(v, list) else os.path.relpath(v))
           for k, v in V2_ROOTS.items()}
    assert rel["manpage"] == "datagen/man"
    recs, _ = generate_v2(0, {k: 10 for k in rel}, roots=rel, records_per_doc=(1, 2),
                          withhold=withhold)
    assert (len(recs), hashlib.sha256(json.dumps(recs, sort_keys=True).encode()).hexdigest()) == \
        V2_SHA[withhold]


def test_v3_run_holds_the_v2_records(roots):
    from deg.datagen.v2 import generate_v2
    from test_datagen_v2 import ROOTS as V2_ROOTS
    both = dict(V2_ROOTS, **roots)
    v2, _ = generate_v2(1, {k: 10 for k in V2_ROOTS}, roots=V2_ROOTS)
    v3, _ = generate_v2(1, {k: 10 for k in both}, roots=both)
    assert [r for r in v3 if r["source"] in V2_ROOTS] == v2
    assert len(v3) > len(v2)


def test_deterministic(roots):
    a, _ = _gen(roots, seed=3, per_doc=(1, 2))
    b, _ = _gen(roots, seed=3, per_doc=(1, 2))
    assert json.dumps(a) == json.dumps(b)


def test_cli_v3(tmp_path, capsys):
    from deg.datagen.__main__ import main
    from deg.datagen.v2 import DEFAULT_PER_KIND, V3_PER_KIND
    out = tmp_path / "records.jsonl"
    args = ["--v3", "--out", str(out), "--packages", "0", "--changelogs", "0", "--synthetic", "1"]
    args += [x for k in sorted({**DEFAULT_PER_KIND, **V3_PER_KIND}) for x in ("--kind", f"{k}=0")]
    assert main(args) == 0
    assert "records per split" in capsys.readouterr().out
    assert out.read_text().count("\n") >= 3


def test_fixtures_are_small():
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(FIX) for f in fs)
    assert total < 8000
