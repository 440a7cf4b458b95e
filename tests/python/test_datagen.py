"""deg.datagen: determinism, splits, every record checked, gold spans found by
the runtime's candidate finder, bad records reported and skipped."""
import gzip
import json

import pytest

import deg
from deg._native import has
from deg.datagen import HELD_OUT_SOURCES, BadRecord, build, generate, split_of
from deg.datagen.doc import Doc
from deg.datagen.record import concrete

pytestmark = pytest.mark.skipif(not has("deg_candidates"), reason="libdeg has no candidate finder")

# Two stanzas in apt's Packages format (as in Debian bookworm's lists).
PACKAGES = """\
Package: coreutils
Version: 9.1-1
Installed-Size: 18062
Maintainer: Michael Stone <mstone@debian.org>
Architecture: amd64
Essential: yes
Depends: libacl1 (>= 2.2.23), libattr1 (>= 1:2.4.44), libc6 (>= 2.34), libgmp10 (>= 2:6.2.1+dfsg1)
Description: GNU core utilities
Homepage: http://gnu.org/software/coreutils
Section: utils
Priority: required

Package: python3-six
Version: 1.16.0-4
Installed-Size: 63
Maintainer: Debian Python Team <team+python@tracker.debian.org>
Architecture: all
Depends: python3:any
Description: Python 2 and 3 compatibility library
Homepage: https://github.com/benjaminp/six
Section: python
Priority: optional
"""

CHANGELOG = """\
coreutils (9.1-1) unstable; urgency=low

  * New upstream version (Closes: #1017354)
  * Corrects printf single quote behavior

 -- Michael Stone <mstone@debian.org>  Tue, 20 Sep 2022 11:27:27 -0400

coreutils (8.32-4) unstable; urgency=medium

  * Fix FTBFS on ARM64 (Closes: #966449)

 -- Michael Stone <mstone@debian.org>  Tue, 22 Sep 2020 08:17:17 -0400
"""


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("dg")
    (d / "x_Packages").write_text(PACKAGES)
    for name in ("coreutils", "sed", "grep", "tar"):
        (d / "doc" / name).mkdir(parents=True)
        with gzip.open(d / "doc" / name / "changelog.Debian.gz", "wt") as f:
            f.write(CHANGELOG.replace("coreutils", name))
    return [str(d / "x_Packages")], str(d / "doc" / "*" / "changelog.Debian.gz")


def _gen(sources, seed=3, n=20):
    pk, cl = sources
    return generate(seed, n_packages=2, n_changelogs=4, n_synthetic=n,
                    packages_paths=pk, changelog_glob=cl)


def test_deterministic(sources):
    a, sa = _gen(sources)
    b, sb = _gen(sources)
    assert json.dumps(a) == json.dumps(b) and sa == sb
    c, _ = _gen(sources, seed=4)
    assert json.dumps(a) != json.dumps(c)


def test_every_record_checked(sources):
    recs, stats = _gen(sources)
    assert len(recs) > 50
    for r in recs:
        deg.compile_schema(r["schema"])
        assert deg.validate(r["schema"], r["value"]) == []
        ctx = r["context"]
        for ptr, (s, e) in r["spans"].items():
            assert [s, e] in r["span_alternatives"][ptr]
            for a, b in r["span_alternatives"][ptr]:
                assert 0 <= a < b <= len(ctx)
        plan = deg.compile_schema(r["schema"])
        for f in plan.fields:
            if not f.mode.startswith("extract."):
                continue
            for ptr, v in concrete(f.path, r["value"]):
                if v is None:
                    assert ptr not in r["spans"]
                    continue
                s, e = r["spans"][ptr]
                text = ctx[s:e]
                if f.mode == "extract.number":
                    assert deg.parse_number(text, integer=f.type == "integer") == v
                elif f.mode == "extract.date" and f.format == "date":
                    assert deg.parse_date(text) == v
                elif f.mode == "extract.date":
                    assert deg.parse_datetime(text)[0] == v
                else:
                    assert text == v
                    if f.format:
                        assert deg.format_check(f.format, text)
                if f.mode != "extract.span" or f.format:
                    kind = {"extract.number": "integer" if f.type == "integer" else "number",
                            "extract.date": f.format}.get(f.mode, f.format)
                    assert (s, e) in deg.candidates(kind, ctx)


def test_modes_and_splits(sources):
    recs, stats = _gen(sources, n=40)
    modes = {}
    for split_modes in stats["modes"].values():
        for k, n in split_modes.items():
            modes[k] = modes.get(k, 0) + n
    for m in ("decide.choice", "decide.noul", "decide.score", "extract.number", "extract.date",
              "extract.date-time", "extract.span", "extract.span.email", "extract.span.uri",
              "array", "array.nested", "null", "generate"):
        assert modes.get(m, 0) > 0, m
    assert any("decide_probs" in r for r in recs)
    by = {}
    for r in recs:
        by.setdefault(r["split"], []).append(r)
    assert set(by) == {"train", "val", "test"}
    train_templates = {(r["source"], r["template"]) for r in by["train"] + by["val"]}
    train_docs = {(r["source"], r["doc"]) for r in by["train"] + by["val"]}
    for r in by["test"]:
        assert (r["source"], r["template"]) not in train_templates
        assert (r["source"], r["doc"]) not in train_docs
    assert not any(r["source"] in HELD_OUT_SOURCES for r in by["train"] + by["val"])
    assert split_of("event", "x") == "test"


def test_bad_records_are_reported():
    d = Doc().text("Order ").val("/id", "A-1").text(" total ").val("/total", "12.50")
    ctx, marks, regions = d.finish()
    schema = {"type": "object", "properties": {"id": {"type": "string"}, "total": {"type": "number"}}}
    ok = build(rid="x", split="train", source="s", template="t", doc="d", context=ctx, schema=schema,
               value={"id": "A-1", "total": 12.5}, marks=marks, regions=regions)
    assert ok["spans"] == {"/id": [6, 9], "/total": [16, 21]}
    cases = [
        ({"id": "A-1", "total": 99}, schema, marks, "gold_not_candidate"),   # 99 is not written
        ({"id": "B-2", "total": 12.5}, schema, marks, "mark_mismatch"),     # span text differs
        ({"id": "A-1", "total": "12.5"}, schema, marks, "invalid_gold"),    # wrong JSON type
        ({"id": "A-1", "total": 12.5}, {"type": "object", "properties": {"id": {"type": "strin"}}},
         marks, "schema_error"),
        ({"id": "A-1", "total": 12.5}, schema, {"/id": (6, 9)}, "no_mark"),
    ]
    for value, sch, mk, reason in cases:
        with pytest.raises(BadRecord) as ei:
            build(rid="x", split="train", source="s", template="t", doc="d", context=ctx,
                  schema=sch, value=value, marks=mk, regions=regions)
        assert ei.value.reason == reason
    with pytest.raises(BadRecord) as ei:
        build(rid="x", split="train", source="s", template="t", doc="d", context=ctx, schema=schema,
              value={"id": "A-1", "total": 12.5}, marks=marks, regions=regions,
              decide_probs={"/x": [0.5, 0.6]})
    assert ei.value.reason == "bad_decide_probs"


def test_item_alternatives_stay_in_item():
    d = Doc()
    for i, q in enumerate([2, 2]):
        with d.item(f"/items/{i}"):
            d.text("- qty ").val(f"/items/{i}/q", str(q)).text("\n")
    ctx, marks, regions = d.finish()
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"q": {"type": "integer"}}}}}}
    r = build(rid="x", split="train", source="s", template="t", doc="d", context=ctx, schema=schema,
              value={"items": [{"q": 2}, {"q": 2}]}, marks=marks, regions=regions)
    assert r["span_alternatives"] == {"/items/0/q": [[6, 7]], "/items/1/q": [[14, 15]]}


def test_anchor_gold():
    """§12.6 training gold: earliest unshared span per item, regions nest,
    shared spans do not locate an item, skipped instances are None."""
    from deg.datagen.record import anchor_gold
    ctx = "Name Qty | apple 3 | pear 5 | plum 5"
    schema = {"type": "object", "properties": {
        "rows": {"type": "array", "items": {"type": "object", "properties": {
            "head": {"type": "string"}, "name": {"type": "string"},
            "qty": {"type": "integer"}}}},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}}}}
    a, p, pl = ctx.index("apple"), ctx.index("pear"), ctx.index("plum")
    rec = {"context": ctx, "schema": schema, "value": {
               "rows": [{"head": "Name", "name": "apple", "qty": 3},
                        {"head": "Name", "name": "pear", "qty": 5},
                        {"head": "Name", "name": "plum", "qty": 5}], "tags": ["a"]},
           "spans": {"/rows/0/head": [0, 4], "/rows/1/head": [0, 4], "/rows/2/head": [0, 4],
                     "/rows/0/name": [a, a + 5], "/rows/1/name": [p, p + 4],
                     "/rows/2/name": [pl, pl + 4], "/rows/0/qty": [a + 6, a + 7],
                     "/rows/1/qty": [p + 5, p + 6], "/rows/2/qty": [pl + 5, pl + 6]}}
    g = anchor_gold(rec)
    assert set(g) == {"/rows"}  # tags has no extract leaf: index mode
    assert g["/rows"] == {"starts": [a, p, pl], "region": [0, len(ctx)]}
    # an item whose only span is shared still anchors at it, but then two items
    # share an anchor: the instance is left out
    rec2 = dict(rec, value={"rows": [{"head": "Name"}, {"head": "Name"}]},
                spans={"/rows/0/head": [0, 4], "/rows/1/head": [0, 4]})
    assert anchor_gold(rec2) == {"/rows": None}
    # nested: regions run from each parent anchor to the next
    schema3 = {"type": "object", "properties": {"rows": {"type": "array", "items": {
        "type": "object", "properties": {"name": {"type": "string"}, "sub": {
            "type": "array", "items": {"type": "object", "properties": {
                "q": {"type": "integer"}}}}}}}}}
    rec3 = {"context": ctx, "schema": schema3, "value": {"rows": [
                {"name": "apple", "sub": [{"q": 3}]}, {"name": "pear", "sub": []}]},
            "spans": {"/rows/0/name": [a, a + 5], "/rows/1/name": [p, p + 4],
                      "/rows/0/sub/0/q": [a + 6, a + 7]}}
    g3 = anchor_gold(rec3)
    assert g3["/rows"]["starts"] == [a, p]
    assert g3["/rows/0/sub"] == {"starts": [a + 6], "region": [a, p]}
    assert g3["/rows/1/sub"] == {"starts": [], "region": [p, len(ctx)]}


def test_cli_creates_out_dir_and_reports_uncreatable(tmp_path, capsys):
    """`python -m deg.datagen --out DIR/records.jsonl` makes DIR; an --out
    under a regular file fails at once with exit 2 and a one-line reason."""
    from deg.datagen.__main__ import main
    out = tmp_path / "new" / "sub" / "records.jsonl"
    assert main(["--out", str(out), "--packages", "0", "--changelogs", "0",
                 "--synthetic", "1"]) == 0
    assert out.exists() and (tmp_path / "new" / "sub" / "records.jsonl.stats.json").exists()
    (tmp_path / "file").write_text("x")
    assert main(["--out", str(tmp_path / "file" / "r.jsonl")]) == 2
    assert "cannot create" in capsys.readouterr().err
