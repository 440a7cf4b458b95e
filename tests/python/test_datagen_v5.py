"""deg.datagen v5 (issue 12): the seven new kinds (vimrt, charmap, cmakedoc,
ompihelp; dev-only debconf, docbase, keyfile) on small committed fixtures
(tests/python/fixtures/datagen5, written for these tests; gold read by hand),
every record checked (deg's validator, python-jsonschema, gold spans verbatim,
absent values absent from the text), booleans balanced, the dev-only split and
the dev5 file, the guard by path and by content, and the v2 / v3 / v4 records of
a v5 run byte for byte the v4 run's."""
import gzip
import json
import os
import random
import shutil

import pytest

from deg._native import has
from deg.datagen import guard

pytestmark = pytest.mark.skipif(not has("deg_candidates"), reason="libdeg has no candidate finder")

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "datagen5")
FIX4 = os.path.join(os.path.dirname(__file__), "fixtures", "datagen4")
ROOTS = {"vimrt": f"{FIX}/vim", "cmakedoc": f"{FIX}/cmake/Help", "ompihelp": f"{FIX}/openmpi",
         "debconf": f"{FIX}/debconf", "docbase": f"{FIX}/doc-base", "keyfile": f"{FIX}/keyfile"}


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    """ROOTS plus charmap's: the fixture tables gzipped as glibc ships them."""
    d = tmp_path_factory.mktemp("charmaps")
    for f in os.listdir(f"{FIX}/charmaps"):
        src = os.path.join(FIX, "charmaps", f)
        if f.endswith(".txt"):
            with open(src, "rb") as a, gzip.open(d / (f[:-4] + ".gz"), "wb") as b:
                shutil.copyfileobj(a, b)
        else:
            shutil.copy(src, d / f)  # the reserved `copyright` file stays itself
    return dict(ROOTS, charmap=str(d))


def _gen(roots, seed=0, per_doc=(2, 2), v4=True, n=10):
    from deg.datagen.v2 import generate_v2
    return generate_v2(seed, {k: n for k in roots}, roots=roots, records_per_doc=per_doc, v4=v4)


@pytest.fixture(scope="module")
def recs(roots):
    return _gen(roots)


def _ents(kind, roots):
    from deg.datagen.v2 import KINDS
    mod = KINDS[kind]
    return mod.entities(mod.find(roots[kind]), random.Random(0), 10)


def _facts(kind, roots):
    return {e.doc: {f.key: f.value for f in e.facts} for e in _ents(kind, roots)}


GOLD = {  # (kind, doc) -> facts read by hand from the fixture text; "absent": no such fact
    ("debconf", "frob/enable-cache"): {
        "template": "frob/enable-cache", "owner": "frob", "qtype": "boolean", "default": "true",
        "question": "Enable the frob widget cache", "has_default": True, "choices": "absent"},
    ("debconf", "frob/backend"): {
        "qtype": "select", "choices": ["sqlite", "postgres", "none"], "default": "sqlite",
        "question": "Storage backend"},
    ("debconf", "frob/admin-name"): {"qtype": "string", "default": None, "has_default": False,
                                     "question": "Administrator name"},
    ("docbase", "frob-manual"): {
        "document": "frob-manual", "title": "The Frob Widget Manual", "author": "Ana Lopez",
        "section": "Programming", "abstract": "How to build and cache frob widgets",
        "formats": ["HTML", "text"], "index": "/usr/share/doc/frob/html/index.html",
        "files": ["/usr/share/doc/frob/html/*.html", "/usr/share/doc/frob/manual.txt.gz"],
        "html": True},
    ("docbase", "frob-notes"): {"author": None, "section": "Help", "formats": ["info"], "html": False,
                                "abstract": "absent", "files": ["/usr/share/info/frob-notes.info*"]},
    ("keyfile", "keyfile/frob.desktop"): {
        "format": "desktop entry", "section": "Desktop Entry", "name": "Frob",
        "comment": "Edit frob widgets", "exec": "frob --edit %F", "program": "frob",
        "terminal": False, "type": "Application", "icon": "frob", "generic": None,
        "categories": ["Development", "Graphics"], "mimetypes": ["application/x-frob", "text/x-frobscript"],
        "keys": ["Name", "Comment", "Exec", "Terminal", "Type", "Icon", "Categories", "MimeType"],
        "commented": True},
    ("keyfile", "keyfile/org.example.Frob.service"): {
        "format": "D-Bus service", "section": "D-BUS Service", "name": "org.example.Frob",
        "exec": "/usr/libexec/frobd --session", "program": "/usr/libexec/frobd",
        "unit": "frobd.service", "user": None, "terminal": "absent", "commented": False},
    ("keyfile", "keyfile/os-release"): {
        "format": "os-release", "section": "absent", "pretty": "Frob OS 3 (widget)", "name": "Frob OS",
        "version": "3", "id": "frobos", "like": ["debian", "ubuntu"], "home": "https://frob.example.org/",
        "codename": None, "support": None},
    ("vimrt", "syntax/frob"): {
        "kind": "syntax file", "language": "Frob, Frobscript", "languages": ["Frob", "Frobscript"],
        "maintainer": "Ana Lopez", "email": "ana@example.net", "previous": "Bo Chen",
        "has_previous": True, "changed": "2023 Mar 14", "changed_on": "2023-03-14",
        "url": "https://frob.example.org/vim", "guard": True,
        "labels": ["Language", "Maintainer", "Previous Maintainer", "Last Change", "URL"]},
    ("vimrt", "ftplugin/frob"): {
        "kind": "filetype plugin", "language": "Frob", "languages": "absent", "maintainer": "Ana Lopez",
        "email": "absent", "previous": None, "has_previous": False, "changed_on": "2021-07-02",
        "license": "Vim License", "guard": False},
    ("vimrt", "compiler/frobc"): {
        "kind": "compiler plugin", "language": "Frob Compiler", "maintainer": "Bo Chen",
        "email": "bo@example.org", "changed": "2019 Nov 3", "changed_on": "2019-11-03", "guard": False},
    ("charmap", "FROB-8"): {
        "name": "FROB-8", "comment_char": "%", "escape_char": "/", "mb_max": 2, "multibyte": True,
        "aliases": ["FROB8", "CP-FROB"], "version": "1.1",
        "source": "Frob Consortium <charsets@frob.example.org>", "email": "charsets@frob.example.org"},
    ("charmap", "TINY-1"): {"mb_max": "absent", "multibyte": False, "aliases": "absent",
                            "version": None, "source": None},
    ("ompihelp", "help-frob"): {
        "first_year": 2004, "last_year": 2015, "holder": "The Frob University",
        "about": "Open MPI's frob transport", "first_topic": "no widgets", "placeholders": True,
        "several_holders": True},
    ("ompihelp", "help-plain"): {"first_year": "absent", "about": None, "topics": ["first topic"],
                                 "placeholders": False, "several_holders": False},
    ("cmakedoc", "command/frob_add"): {
        "name": "frob_add", "category": "command", "since": "3.20",
        "summary": "Add a frob widget to a target", "refs": ["frob_remove", "FROB_DIR"], "code": True,
        "introduced": "absent"},
    ("cmakedoc", "policy/CMP9001"): {
        "category": "policy", "since": None, "introduced": "3.25", "deprecated": True,
        "refs": ["cmake_policy"], "code": False},
    ("cmakedoc", "variable/FROB_DIR"): {"category": "variable", "summary": "Where the frob widgets live",
                                        "refs": ["frob_add"], "deprecated": "absent"},
}


@pytest.mark.parametrize("kind", sorted({k for k, _ in GOLD}))
def test_kind_gold_from_source(kind, roots):
    got = _facts(kind, roots)
    want = {d: g for (k, d), g in GOLD.items() if k == kind}
    assert set(want) <= set(got), sorted(got)
    for doc, g in want.items():
        assert {k: got[doc].get(k, "absent") for k in g} == g, doc


def test_charmap_window(roots):
    """The window is 3..8 consecutive table lines under CHARMAP; its names and
    the first line's bytes are the facts."""
    for e in _ents("charmap", roots):
        f = {x.key: x.value for x in e.facts}
        head, _, win = e.raw.partition("CHARMAP\n")
        lines = win.strip("\n").split("\n")
        assert 3 <= len(lines) <= 8 and "<code_set_name>" in head
        assert f["chars"] == [ln.split(None, 2)[2] for ln in lines]
        assert f["first_char"] == f["chars"][0] and f["first_bytes"] == lines[0].split()[1]


def test_every_record_checked(recs):
    """Gold valid under deg's validator and python-jsonschema, every span the
    text's own characters, every value the schema asks and the text lacks null,
    omitted or [] (test_datagen_v2._check_record), for every kind."""
    from test_datagen_v2 import _check_record
    records, stats = recs
    assert not stats["missing"]
    assert {r["source"] for r in records} == set(ROOTS) | {"charmap"}
    for r in records:
        _check_record(r)
    assert stats["bad"].get("withheld-value-written", 0) < len(records) // 10


# fact key -> the text that would write it (a null fact's document must not hold it)
ABSENT_MARK = {("debconf", "default"): "\nDefault:", ("docbase", "author"): "\nAuthor:",
               ("keyfile", "user"): "\nUser=", ("keyfile", "generic"): "\nGenericName=",
               ("keyfile", "comment"): "\nComment=", ("keyfile", "codename"): "VERSION_CODENAME=",
               ("keyfile", "support"): "SUPPORT_URL=", ("vimrt", "previous"): "revious",
               ("charmap", "version"): "version:", ("charmap", "source"): "source:",
               ("ompihelp", "about"): "help file for", ("cmakedoc", "since"): "versionadded",
               ("cmakedoc", "introduced"): "introduced in"}


def test_absent_values_are_absent(roots, recs):
    """A fact the document does not have (value null: a debconf Default, a D-Bus
    User=, a charmap's version, ...) is not written in its text; every kind has
    such facts, and records ask them with gold null or the key omitted."""
    from deg.datagen.v2 import KINDS
    seen = set()
    for kind in roots:
        for e in _ents(kind, roots):
            for f in e.facts:
                if f.value is None and f.kind not in ("bool", "enum"):
                    assert (kind, f.key) in ABSENT_MARK, (kind, f.key)
                    assert ABSENT_MARK[(kind, f.key)] not in e.raw, (kind, e.doc, f.key)
                    seen.add(kind)
    assert seen == set(KINDS) & set(roots)
    records, _ = recs
    asked = sum(1 for r in records for k, sp in r["schema"]["properties"].items()
                if r["value"].get(k) is None and sp.get("type") != "array")
    assert asked >= len(records) // 4


def test_booleans_balanced(recs):
    records, stats = recs
    t = f = 0
    for k, (a, b) in stats["booleans_by_source"].items():
        t, f = t + a, f + b
    assert t + f >= 40 and 0.35 <= t / (t + f) <= 0.65


def test_dev_only_kinds(recs, tmp_path):
    """debconf, docbase and keyfile are dev-only: every record in `val`, none in
    train or test; the other new kinds split by document; write_subsets writes
    the dev5 records and the new kinds' train records."""
    from deg.datagen import read_jsonl
    from deg.datagen.v2 import DEV5_KINDS, KINDS, TEST_ONLY_KINDS, V5_PER_KIND, VAL_ONLY_KINDS
    from deg.datagen.v5 import DEV5_FILE, TRAIN_FILE, report_v5, write_subsets
    assert set(V5_PER_KIND) <= set(KINDS) and set(DEV5_KINDS) <= set(V5_PER_KIND)
    assert len(DEV5_KINDS) >= 3 and set(DEV5_KINDS) <= set(VAL_ONLY_KINDS)
    assert not set(DEV5_KINDS) & set(TEST_ONLY_KINDS)
    records, _ = recs
    assert {r["split"] for r in records if r["source"] in DEV5_KINDS} == {"val"}
    write_subsets(records, str(tmp_path))
    dev5 = read_jsonl(str(tmp_path / DEV5_FILE))
    train = read_jsonl(str(tmp_path / TRAIN_FILE))
    assert dev5 == [r for r in records if r["source"] in DEV5_KINDS]
    assert {r["source"] for r in dev5} == set(DEV5_KINDS)
    assert train and {r["split"] for r in train} == {"train"}
    assert not {r["source"] for r in train} & set(DEV5_KINDS)
    assert any(ln.startswith("dev5: ") for ln in report_v5(records))


def test_v4_records_unchanged_in_v5_run(roots):
    """A v5 run holds the v4 run's records of every v2 / v3 / v4 kind, byte for
    byte, in order."""
    from test_datagen_v2 import ROOTS as V2_ROOTS
    from test_datagen_v4 import ROOTS as V4_ROOTS, ROOTS3
    old = dict(V2_ROOTS, **ROOTS3, **V4_ROOTS)
    v4, _ = _gen(old, seed=1, per_doc=(1, 2))
    v5, _ = _gen(dict(old, **roots), seed=1, per_doc=(1, 2))
    kept = [r for r in v5 if r["source"] in old]
    assert json.dumps(kept, sort_keys=True) == json.dumps(v4, sort_keys=True)
    assert len(v5) > len(kept)


def test_deterministic(roots):
    a, _ = _gen(roots, seed=3, per_doc=(1, 2))
    b, _ = _gen(roots, seed=3, per_doc=(1, 2))
    assert json.dumps(a) == json.dumps(b)


def test_guard_refuses_reserved_content(tmp_path):
    """is_reserved_text: a DEP-5 file (its Format: URL, Upstream-Name:, a Files: +
    Copyright: stanza) or Python core metadata (Metadata-Version:) whatever the
    file's name; read_text(content=True) refuses it, plain text passes."""
    assert guard.is_reserved_text(open(f"{FIX}/debconf/leak.templates").read())
    assert guard.is_reserved_text(open(f"{FIX}/doc-base/leak").read())
    assert guard.is_reserved_text("Format: http://dep.debian.net/deps/dep5\nUpstream-Name: x\n")
    assert guard.is_reserved_text("Metadata-Version: 2.1\nName: blinker\n")
    assert guard.is_reserved_text("Files: debian/*\n  foo/*\nCopyright: 2001 A\nLicense: GPL-2\n")
    for ok in ("Template: a/b\nType: string\n", "Document: x\nFormat: HTML\nFiles: /a\n",
               "[Desktop Entry]\nName=x\n", "Copyright: 2001 A\n"):
        assert not guard.is_reserved_text(ok), ok
    p = tmp_path / "harmless-name.txt"
    p.write_text("Metadata-Version: 2.1\nName: leaked\n")
    assert guard.read_text(p).startswith("Metadata-Version")
    with pytest.raises(guard.ReservedSourceError):
        guard.read_text(p, content=True)


def test_new_kinds_skip_reserved_files(roots, monkeypatch):
    """No v5 kind lists a reserved path (the fixtures hold `copyright` DEP-5
    files and a .dist-info/METADATA next to the sources) nor reads a file that
    is reserved by its content (leak.templates, doc-base/leak, leak.desktop:
    otherwise well-formed documents of their kind). Without the content check
    they would be read: the check is what keeps them out."""
    from deg.datagen.v2 import KINDS
    seen = []
    real = guard.check_path

    def spy(path):
        seen.append(str(path))
        return real(path)
    monkeypatch.setattr(guard, "check_path", spy)
    for kind, root in roots.items():
        got = KINDS[kind].find(root)
        assert got and not [p for p in got if guard.is_reserved(p)], kind
    records, _ = _gen(roots, per_doc=(1, 1))
    assert records and not [r for r in records if "leaked" in r["context"].lower()]
    assert not [p for p in seen if os.path.basename(p) in ("copyright", "METADATA") or ".dist-info" in p]
    assert os.path.exists(f"{FIX}/doc-base/copyright") and os.path.exists(f"{FIX}/keyfile/frob-1.0.dist-info/METADATA")
    monkeypatch.setattr(guard, "is_reserved_text", lambda text: False)
    leaked = {k: [e.doc for e in _ents(k, roots) if "leak" in (e.raw or "").lower()]
              for k in ("debconf", "docbase", "keyfile")}
    assert all(leaked.values()), leaked


def test_real_dev_kinds_have_documents():
    """On this machine (when their sources exist) the dev-only kinds' readers find
    no reserved path and make documents of what they find."""
    from deg.datagen.v2 import DEV5_KINDS, KINDS
    found = made = 0
    for kind in DEV5_KINDS:
        paths = KINDS[kind].find()
        assert not [p for p in paths if guard.is_reserved(p)], kind
        found += len(paths)
        made += len(KINDS[kind].entities(paths, random.Random(0), 3)) if paths else 0
    assert made or not found


def test_cli_v5(tmp_path, capsys, roots, monkeypatch):
    from deg.datagen import read_jsonl
    from deg.datagen.__main__ import main
    from deg.datagen.v2 import DEFAULT_PER_KIND, KINDS, V3_PER_KIND, V4_PER_KIND
    for kind in roots:  # the fixtures instead of this machine's files
        mod = KINDS[kind]
        monkeypatch.setattr(mod, "find", lambda root=None, _f=mod.find, _r=roots[kind]: _f(_r))
    out = tmp_path / "records.jsonl"
    args = ["--v5", "--out", str(out), "--packages", "0", "--changelogs", "0", "--synthetic", "0"]
    args += [x for k in sorted({**DEFAULT_PER_KIND, **V3_PER_KIND, **V4_PER_KIND})
             for x in ("--kind", f"{k}=0")]
    assert main(args) == 0
    got = capsys.readouterr().out
    assert "v5 debconf" in got and "dev5: " in got
    dev5 = read_jsonl(str(tmp_path / "dev5.jsonl"))
    assert dev5 and {r["split"] for r in dev5} == {"val"}
    assert dev5 == [r for r in read_jsonl(str(out)) if r["source"] in ("debconf", "docbase", "keyfile")]


def test_fixtures_are_small():
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(FIX) for f in fs)
    assert total < 9000
