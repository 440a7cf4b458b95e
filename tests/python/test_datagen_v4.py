"""deg.datagen v4 (issue 12): the six new kinds (mimetype, mimemap, script,
completion, cmakemod, distro) on small committed fixtures
(tests/python/fixtures/datagen4, written for these tests; gold read by hand),
short renderings, absent lists (gold []), structure booleans, every record
checked (deg's validator, python-jsonschema, gold spans), the guard, the
test-only kind, and the v2 / v3 records of a v4 run byte for byte the v3 run's."""
import json
import os
import random

import pytest

from deg._native import has
from deg.datagen import guard

pytestmark = pytest.mark.skipif(not has("deg_candidates"), reason="libdeg has no candidate finder")

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "datagen4")
FIX3 = os.path.join(os.path.dirname(__file__), "fixtures", "datagen3")
ROOTS = {"mimetype": f"{FIX}/mime/packages", "mimemap": f"{FIX}/etc", "script": f"{FIX}/bin",
         "completion": f"{FIX}/completions", "cmakemod": f"{FIX}/cmake/Modules",
         "distro": f"{FIX}/distro-info"}
# v3 kinds with lists some documents lack (absent lists of a kind's own keys)
ROOTS3 = {"unit": f"{FIX3}/units", "npm": f"{FIX3}/node_modules", "pymodule": f"{FIX3}/pystd"}


def _gen(roots=None, seed=0, per_doc=(2, 2), v4=True, n=10):
    from deg.datagen.v2 import generate_v2
    roots = roots or dict(ROOTS, **ROOTS3)
    return generate_v2(seed, {k: n for k in roots}, roots=roots, records_per_doc=per_doc, v4=v4)


@pytest.fixture(scope="module")
def recs():
    return _gen()


@pytest.fixture(scope="module")
def many():
    """A run where every document gets a short record and absent lists are made
    until every array is empty (or the documents run out): many extra records."""
    from deg.datagen import v4
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(v4, "SHORT_SHARE", 1.0)
        mp.setattr(v4, "EMPTY_SHARE", 1.0)
        return _gen(seed=5)


def _ents(kind, roots=ROOTS):
    from deg.datagen.v2 import KINDS
    mod = KINDS[kind]
    return mod.entities(mod.find(roots[kind]), random.Random(0), 10)


def _facts(kind):
    return {e.doc: {f.key: (f.value if f.kind != "objects" else
                            [{k: x.value for k, x in it.items()} for it in f.items]) for f in e.facts}
            for e in _ents(kind)}


GOLD = {  # (kind, doc) -> facts read by hand from the fixture text
    ("mimetype", "application/x-frob"): {
        "type": "application/x-frob", "media": "application", "comment": "Frob widget archive",
        "acronym": "FWA", "expanded": "Frob Widget Archive", "icon": "package-x-generic",
        "globs": ["*.frob", "*.fwa"], "parents": ["application/zip"], "aliases": "absent",
        "magic": True},
    ("mimetype", "text/x-frobscript"): {"media": "text", "comment": "Frob script", "globs": ["*.fs"],
                                        "aliases": ["text/x-frob"], "magic": False, "acronym": "absent"},
    ("mimetype", "image/x-frob-icon"): {"globs": ["*.fic", "*.fico"], "parents": "absent"},
    ("script", "frob-clean"): {
        "name": "frob-clean", "shebang": "/bin/sh", "interpreter": "sh", "env": False, "strict": True,
        "first_year": 2019, "last_year": 2023, "holder": "Ana Lopez", "email": "ana@example.net",
        "licence": "GPL", "permissive": False, "options": ["--dry-run", "--keep-days"]},
    ("script", "frobstat"): {
        "shebang": "/usr/bin/env", "interpreter": "python3", "env": True, "strict": "absent",
        "url": "https://frob.example.org/stat", "options": ["--json"], "first_year": "absent"},
    ("completion", "frob"): {
        "commands": ["frob", "frobctl"], "function": "_frob", "functions": ["_frob"],
        "options": ["--workspace", "--verbose", "--help"], "init": True},
    ("completion", "frobstat"): {"commands": ["frobstat"], "function": "_frobstat_module",
                                 "options": ["--json"], "init": False},
    ("cmakemod", "FindFrob"): {
        "module": "FindFrob", "summary": "Find the Frob widget cache library", "since": "3.21",
        "url": "https://cmake.org/licensing", "targets": ["Frob::Frob", "Frob::Widget"],
        "variables": ["FROB_FOUND", "FROB_VERSION"], "find": True, "deprecated": False},
    ("cmakemod", "FrobUtils"): {"module": "FrobUtils", "since": "absent", "find": False,
                                "deprecated": True, "targets": "absent"},
}


@pytest.mark.parametrize("kind", sorted({k for k, _ in GOLD}))
def test_kind_gold_from_source(kind):
    got = _facts(kind)
    want = {d: g for (k, d), g in GOLD.items() if k == kind}
    assert set(want) <= set(got)
    for doc, g in want.items():
        assert {k: got[doc].get(k, "absent") for k in g} == g, doc


def test_mimemap_windows():
    """Windows of consecutive entries, never overlapping; each entry's
    extensions; a type written without extensions has none."""
    ents = _ents("mimemap")
    assert ents
    seen = []
    for e in ents:
        f = {x.key: x for x in e.facts}
        seen += f["types"].value
        for it in f["entries"].items:
            line = next(ln for ln in e.raw.split("\n") if ln.split()[:1] == [it["type"].value])
            assert it["exts"].value == line.split()[1:] if "exts" in it else line.split() == [it["type"].value]
        assert f["extensions"].value == [x for ln in e.raw.split("\n") for x in ln.split()[1:]]
    assert len(seen) == len(set(seen))


def test_distro_windows():
    """Rows under the header; the last row's empty eol is gold null; LTS."""
    ents = {e.doc: {f.key: f.value for f in e.facts} for e in _ents("distro")}
    assert ents
    for doc, f in ents.items():
        assert f["distribution"] == "ubuntu"
    one = ents.get("ubuntu.csv@1")
    assert one is not None and one["codenames"][:2] == ["Dapper Drake", "Edgy Eft"]
    assert one["first_version"] == "6.06 LTS" and one["first_release"] == "2006-06-01"
    assert one["lts"] is True
    last = [f for f in ents.values() if f["codenames"][-1] == "Gutsy Gibbon"]
    assert last and all(f["last_eol"] is None for f in last)
    edgy = [f for f in ents.values() if f["codenames"][-1] == "Edgy Eft"]
    assert all(f["last_eol"] == "2008-04-25" for f in edgy)


def test_every_record_checked(recs):
    from test_datagen_v2 import _check_record
    records, stats = recs
    assert not stats["missing"]
    assert {r["source"] for r in records} == set(ROOTS) | set(ROOTS3)
    for r in records:
        _check_record(r)
    assert stats["bad"].get("withheld-value-written", 0) < len(records) // 10


def test_distro_is_test_only(recs):
    from deg.datagen.v2 import TEST_ONLY_KINDS, V4_PER_KIND, KINDS
    assert "distro" in TEST_ONLY_KINDS and set(V4_PER_KIND) <= set(KINDS)
    records, _ = recs
    assert {r["split"] for r in records if r["source"] == "distro"} == {"test"}


def test_short_records(many):
    """Short records: at most MAX_LINES lines and MAX_CHARS characters, every
    asked value written (checked as every record) unless the record says it is
    withheld; one-line ones among them; one per document that has a short fact."""
    from test_datagen_v2 import _check_record
    from deg.datagen.short import FORMS, MAX_CHARS, MAX_LINES
    records, stats = many
    short = [r for r in records if r["template"].startswith("short-")]
    for r in short:
        _check_record(r)
        assert len(r["context"]) <= MAX_CHARS and r["context"].count("\n") < MAX_LINES, r["context"]
        assert [k for k, v in r["value"].items() if v not in (None, [])], r["id"]
        if "withheld" in r:
            assert r["value"].get(r["withheld"][1:]) is None
    docs = {(r["source"], r["doc"]) for r in records}
    failed = [x for x in stats["bad_examples"] if x["id"].endswith("/short")]
    assert len(stats["bad_examples"]) < 20 and len(failed) <= len(docs) // 5
    assert len(short) == len(docs) - len(failed)
    assert {r["template"].split("-")[1] for r in short} >= set(FORMS) - {"bare"}
    assert len([r for r in short if "\n" not in r["context"]]) >= len(short) // 2
    assert len([r for r in short if "withheld" in r]) >= len(short) // 10


def test_render_short_forms():
    """Every form writes each value once, marked where it stands, in at most
    MAX_LINES lines; `bare` (values only) only when the value types differ."""
    from deg.datagen.facts import Fact
    from deg.datagen.short import FORMS, MAX_LINES, render_short
    facts = [Fact("order", "int", 4711, surface="4711", label={"en": "Order"}),
             Fact("email", "email", "ann@example.com", label={"en": "E-mail"}),
             Fact("shipped", "date", "2026-03-02", label={"en": "Shipped"})]
    ptrs = {"order": "/order", "email": "/email", "shipped": "/shipped"}
    seen = {}
    for i in range(200):
        d, form = render_short(facts, ptrs, "en", random.Random(i), title="Order")
        ctx, marks, _ = d.finish()
        seen.setdefault(form, ctx)
        assert ctx.count("\n") < MAX_LINES and set(marks) == set(ptrs.values())
        assert ctx[slice(*marks["/email"])] == "ann@example.com" and ctx[slice(*marks["/order"])] == "4711"
        if form == "bare":
            assert "E-mail" not in ctx and "Shipped" not in ctx
    assert set(seen) == set(FORMS)
    spans = [Fact("a", "span", "x1", label={"en": "A"}), Fact("b", "span", "y2", label={"en": "B"})]
    assert {render_short(spans, {}, "en", random.Random(i))[1] for i in range(100)} == set(FORMS) - {"bare"}


def test_short_share(recs):
    """SHORT_SHARE of each kind's documents (the first in a seeded hash order)."""
    from deg.datagen.v4 import SHORT_SHARE
    records, stats = recs
    docs = {}
    for r in records:
        docs.setdefault(r["source"], set()).add(r["doc"])
    for kind, ds in docs.items():
        n = sum(1 for r in records if r["source"] == kind and r["template"].startswith("short-"))
        assert n <= round(SHORT_SHARE * len(ds))
    want = sum(round(SHORT_SHARE * len(ds)) for ds in docs.values())
    got = sum(1 for r in records if r["template"].startswith("short-"))
    assert want - stats["bad"].get("short-nothing-to-say", 0) <= got <= want and got >= 2


def _nolist(records):
    return [r for r in records if "/nolist" in r["id"]]


def test_absent_lists(many):
    """Every absent-list record asks for a list (or an array of objects) with gold []: one the document
    does not have while another document of its kind has it ("missing", any
    layout), or one of its own lists left out of a rendering ("withheld": none
    of its items is in the text)."""
    from test_datagen_v2 import _check_record
    from deg.datagen.v2 import _texts
    records, _ = many
    nol = _nolist(records)
    assert len(nol) >= 10
    assert {r["absent_list"]["how"] for r in nol} == {"missing", "withheld"}
    ents = {(k, e.doc): {f.key: f for f in e.facts}
            for k, roots in ((k, ROOTS if k in ROOTS else ROOTS3) for k in set(ROOTS) | set(ROOTS3))
            for e in _ents(k, roots)}
    for r in nol:
        _check_record(r)
        assert r["value"][r["withheld"][1:]] == []
        key, how = r["absent_list"]["key"], r["absent_list"]["how"]
        own = ents[(r["source"], r["doc"])].get(key)
        if how == "missing":
            assert own is None or not own.value
            assert any(f.get(key) is not None and f[key].value for (k, _), f in ents.items()
                       if k == r["source"])
        else:
            assert r["template"] != "raw" and own.value
            assert not [x for x in _texts(own) if len(x) >= 3 and x in r["context"]], r["id"]
    assert any(r["template"] == "raw" for r in nol)  # a raw text that lacks the list
    objs = [r for r in nol if ents[(r["source"], r["doc"])].get(r["absent_list"]["key"]) is not None
            and ents[(r["source"], r["doc"])][r["absent_list"]["key"]].kind == "objects"]
    assert objs  # arrays of objects too (an empty array of items)


def test_empty_array_share(recs):
    """Per kind, absent-list records are added until EMPTY_SHARE of its top-level
    arrays are empty, and not one more (or until its documents run out)."""
    from deg.datagen.v4 import EMPTY_SHARE, arrays_of
    records, _ = recs
    for kind in {r["source"] for r in records}:
        rs = [r for r in records if r["source"] == kind]
        n, z = sum(arrays_of(r)[0] for r in rs), sum(arrays_of(r)[1] for r in rs)
        nol = _nolist(rs)
        if not nol:
            continue
        last = arrays_of(nol[-1])
        assert z - last[1] < EMPTY_SHARE * (n - last[0]), kind  # short before the last one
        docs = {r["doc"] for r in rs}
        assert z >= EMPTY_SHARE * n or len(nol) >= len(docs) - 2, kind


def test_structure_booleans(recs):
    """Structure booleans: gold from the document's lists (more than one item /
    any), true about as often as false, never written by a rendering."""
    from deg.datagen.v4 import report_v4
    records, _ = recs
    vals = []
    for r in records:
        for p in r.get("structure", ()):
            v = r["value"][p[1:]]
            assert isinstance(v, bool)
            vals.append(v)
    assert len(vals) >= 20
    assert 0.35 <= sum(vals) / len(vals) <= 0.65
    assert any("structure booleans" in ln for ln in report_v4(records))


def test_structure_facts_gold():
    from deg.datagen.facts import Fact
    from deg.datagen.kinds import Entity
    from deg.datagen.v4 import structure_facts
    ents = [Entity(f"d{i}", "t", [Fact("tags", "list", [f"t{j}" for j in range(i % 3)] or None),
                                  Fact("name", "span", f"n{i}")]) for i in range(60)]
    out = structure_facts(ents, "s")
    assert [e.doc for e in out] == [e.doc for e in ents]
    both = [0, 0]
    for e in out:
        f = {x.key: x.value for x in e.facts}
        n = len(f["tags"] or [])
        if "struct:any:tags" in f:
            assert f["struct:any:tags"] == (n > 0)
            both[f["struct:any:tags"]] += 1
        if "struct:several:tags" in f:
            assert n > 0 and f["struct:several:tags"] == (n > 1)
    assert both[0] and both[1] and abs(both[0] - both[1]) <= 12
    from deg.datagen.v2 import writes
    assert not [x for e in out for x in e.facts if x.key.startswith("struct:") and writes(x)]


def test_v3_records_unchanged_in_v4_run():
    """A v4 run holds the v3 run's records of every v2 / v3 kind, byte for byte,
    in order (its extra records come after each kind's own)."""
    from test_datagen_v2 import ROOTS as V2_ROOTS
    both = dict(V2_ROOTS, **ROOTS3)
    v3, _ = _gen(both, seed=1, per_doc=(1, 2), v4=False)
    v4, _ = _gen(dict(both, **ROOTS), seed=1, per_doc=(1, 2), v4=True)
    extra = ("/short", "/nolist")
    kept = [r for r in v4 if r["source"] in both and not any(x in r["id"] for x in extra)]
    assert json.dumps(kept, sort_keys=True) == json.dumps(v3, sort_keys=True)
    assert len(v4) > len(kept)


def test_deterministic():
    a, _ = _gen(seed=3, per_doc=(1, 2))
    b, _ = _gen(seed=3, per_doc=(1, 2))
    assert json.dumps(a) == json.dumps(b)


def test_walkers_skip_reserved_files():
    """Every v4 kind's find() lists no reserved file (the fixtures hold a
    DEP-5-like `copyright` file and a .dist-info/METADATA next to the sources)."""
    from deg.datagen.v2 import KINDS
    for kind, root in ROOTS.items():
        got = KINDS[kind].find(root)
        assert got, kind
        assert not [p for p in got if guard.is_reserved(p)], kind
    assert os.path.exists(f"{FIX}/bin/copyright") and os.path.exists(f"{FIX}/completions/copyright")
    assert os.path.exists(f"{FIX}/bin/frob-1.0.dist-info/METADATA")


def test_no_v4_kind_reads_reserved_files(monkeypatch):
    seen = []
    real = guard.check_path

    def spy(path):
        seen.append(str(path))
        return real(path)
    monkeypatch.setattr(guard, "check_path", spy)
    records, _ = _gen(ROOTS, per_doc=(1, 1))
    assert records and len(seen) >= 8
    assert not [p for p in seen if os.path.basename(p) in ("copyright", "METADATA") or ".dist-info" in p]
    assert not [r for r in records if "leaked" in r["context"].lower()]


def test_cli_v4(tmp_path, capsys):
    from deg.datagen.__main__ import main
    from deg.datagen.v2 import DEFAULT_PER_KIND, V3_PER_KIND, V4_PER_KIND
    out = tmp_path / "records.jsonl"
    args = ["--v4", "--out", str(out), "--packages", "0", "--changelogs", "0", "--synthetic", "1"]
    args += [x for k in sorted({**DEFAULT_PER_KIND, **V3_PER_KIND, **V4_PER_KIND})
             for x in ("--kind", f"{k}=0")]
    assert main(args) == 0
    got = capsys.readouterr().out
    assert "records per split" in got and "v4 train: short" in got
    assert out.read_text().count("\n") >= 3


def test_fixtures_are_small():
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(FIX) for f in fs)
    assert total < 6000
