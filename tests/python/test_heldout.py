"""The held-out evaluation harness (issue 12): gold parsing of DEP-5 / core
metadata, the document chooser, field scoring and the per-field chat baseline's
question and answer parser, on synthetic fixtures (tests/python/fixtures/heldout)."""
import json
import os
import shutil
from pathlib import Path

import pytest

from deg._native import has

pytest.importorskip("debian", reason="python-debian (.ci/deps-pip.txt) is not installed")

from deg.evaluate import evaluate, field_rows  # noqa: E402
from deg.evaluate.heldout import build, main as heldout_main  # noqa: E402
from deg.evaluate.heldout_gold import (DEP5_SCHEMA, METADATA_SCHEMA, GoldError, gold_dep5,  # noqa: E402
                                       gold_metadata, is_dep5)
from deg.evaluate.report import markdown  # noqa: E402

FIX = Path(__file__).parent / "fixtures" / "heldout"
needs_plan = pytest.mark.skipif(not has("deg_plan_compile"), reason="libdeg has no schema compiler")


def text(name):
    return (FIX / name).read_text(encoding="utf-8")


def test_gold_dep5():
    assert gold_dep5(text("dep5-several.copyright")) == {
        "upstream_name": "Quuxtool",
        "source_url": "https://quux.example.org/releases/",  # first URL, trailing "," dropped
        "contact_email": "jane@quux.example.org",
        "earliest_year": 2008,  # min over every paragraph's Copyright, ranges included
        "license": "GPL-2+",  # "gpl-2+" matched case-insensitively, spelled as the enum
        "several_files_paragraphs": True}
    assert gold_dep5(text("dep5-single.copyright")) == {
        "upstream_name": None, "source_url": None, "contact_email": None, "earliest_year": None,
        "license": "other", "several_files_paragraphs": False}
    assert is_dep5(text("dep5-single.copyright"))  # http, no trailing slash: still 1.0
    assert not is_dep5(text("not-dep5.copyright"))
    with pytest.raises(GoldError, match="Format header"):
        gold_dep5(text("not-dep5.copyright"))
    with pytest.raises(GoldError, match="Files: \\*"):
        gold_dep5(text("dep5-nostar.copyright"))


def test_gold_metadata():
    assert gold_metadata(text("widget-METADATA")) == {
        "name": "Widget_Kit",  # as written (not normalised); the body's "Name:" is not a header
        "version": "3.0.0rc1",
        "author_email": "ada@widget.example.com",  # the first address of Author-email
        "homepage": "https://widget.example.com",  # no Home-page: Project-URL "Homepage"
        "dependencies": ["requests", "Typing_Extensions", "pytest"],  # extras included, each once
        "typed": True,
        "development_status": "4 - Beta"}
    assert gold_metadata(text("tiny-PKG-INFO")) == {
        "name": "tiny", "version": "0.1", "author_email": None, "homepage": None,  # UNKNOWN
        "dependencies": [], "typed": False, "development_status": None}
    with pytest.raises(GoldError, match="Name or Version"):
        gold_metadata("Metadata-Version: 2.1\nName: x\n")
    with pytest.raises(GoldError, match="Requires-Dist"):
        gold_metadata("Name: x\nVersion: 1\nRequires-Dist: ???\n")


def _tree(tmp_path):
    docs = tmp_path / "doc"
    for d, f in [("a", "dep5-several.copyright"), ("b", "dep5-several.copyright"),
                 ("c", "dep5-single.copyright"), ("d", "not-dep5.copyright"),
                 ("e", "dep5-nostar.copyright")]:
        (docs / d).mkdir(parents=True)
        shutil.copy(FIX / f, docs / d / "copyright")
    site = tmp_path / "site"
    (site / "Widget_Kit-3.0.0rc1.dist-info").mkdir(parents=True)
    shutil.copy(FIX / "widget-METADATA", site / "Widget_Kit-3.0.0rc1.dist-info" / "METADATA")
    (site / "tiny-0.1.egg-info").mkdir()
    shutil.copy(FIX / "tiny-PKG-INFO", site / "tiny-0.1.egg-info" / "PKG-INFO")
    (site / "broken-1.dist-info").mkdir()
    (site / "broken-1.dist-info" / "METADATA").write_bytes(b"Name: broken\nVersion: \xff\n")
    return str(docs / "*" / "copyright"), [str(site)]


def words(t):
    return len(t.split())


@needs_plan
def test_build_chooses_deterministically(tmp_path):
    pattern, roots = _tree(tmp_path)
    recs, man = build(per_kind=5, seed=0, max_tokens=10_000, copyright_glob=pattern, roots=roots,
                      count_tokens=words)
    assert [r["id"] for r in recs] == ["dep5/a", "dep5/c", "pymetadata/Widget_Kit-3.0.0rc1.dist-info",
                                       "pymetadata/tiny-0.1.egg-info"]
    assert man["kinds"] == {"dep5": {"files": 5, "dep5": 4, "kept": 2, "chosen": 2},
                            "pymetadata": {"files": 3, "kept": 2, "chosen": 2}}
    assert man["dropped"] == {"dep5: duplicate bytes": 1, "dep5: gold: no 'Files: *' paragraph": 1,
                              "pymetadata: unreadable or not UTF-8": 1}
    r = recs[0]
    assert r["context"] == text("dep5-several.copyright")  # the file as is
    assert r["split"] == "heldout" and r["schema"] == DEP5_SCHEMA and r["value"]["earliest_year"] == 2008
    assert recs[2]["schema"] == METADATA_SCHEMA
    # a seeded sample of the kept, in path order; the same call gives the same records
    one, _ = build(per_kind=1, seed=3, max_tokens=10_000, copyright_glob=pattern, roots=roots,
                   count_tokens=words)
    again, _ = build(per_kind=1, seed=3, max_tokens=10_000, copyright_glob=pattern, roots=roots,
                     count_tokens=words)
    assert [r["id"] for r in one] == [r["id"] for r in again] and len(one) == 2
    # documents over the token bound are left out, never cut
    short, man = build(per_kind=5, seed=0, max_tokens=40, copyright_glob=pattern, roots=roots,
                       count_tokens=words)
    assert [r["id"] for r in short] == ["dep5/c", "pymetadata/tiny-0.1.egg-info"]
    assert man["dropped"]["pymetadata: over 40 tokens"] == 1


@needs_plan
def test_heldout_cli_writes_records_and_manifest(tmp_path, monkeypatch):
    pattern, roots = _tree(tmp_path)
    import deg.evaluate.heldout as h
    real = h.build
    monkeypatch.setattr(h, "build", lambda *a, **k: real(*a, count_tokens=words, **k))
    out = tmp_path / "h.jsonl"
    assert heldout_main(["--out", str(out), "--per-kind", "1", "--copyright-glob", pattern,
                         "--site-packages", roots[0]]) == 0
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    man = json.loads((tmp_path / "h.jsonl.manifest.json").read_text())
    assert len(recs) == 2 and [c["id"] for c in man["chosen"]] == [r["id"] for r in recs]
    assert man["site_packages"] == roots and not os.path.exists(str(out) + ".tmp")
    with pytest.raises(SystemExit, match="not a directory"):
        heldout_main(["--out", str(out), "--site-packages", str(tmp_path / "nope")])


@needs_plan
def test_field_rows_and_summary():
    rec = {"id": "m/1", "source": "pymetadata", "schema": METADATA_SCHEMA,
           "value": gold_metadata(text("widget-METADATA"))}
    pred = dict(rec["value"], name="widget_kit", homepage=None,
                dependencies=["pytest", "requests", "Typing_Extensions"])  # other order: right
    got = {f["field"]: f["correct"] for f in field_rows(rec, pred, True)}
    assert got == {"pymetadata/name": False, "pymetadata/version": True,  # case-sensitive
                   "pymetadata/author_email": True, "pymetadata/homepage": False,
                   "pymetadata/dependencies": True, "pymetadata/typed": True,
                   "pymetadata/development_status": True}
    bad = field_rows(rec, pred, False)  # invalid: all missed; as given, as if valid
    assert not any(f["correct"] for f in bad)
    assert {f["field"]: f["correct_as_given"] for f in bad} == got
    short = dict(pred, dependencies=["pytest", "requests"])
    assert not {f["field"]: f["correct"] for f in field_rows(rec, short, True)}["pymetadata/dependencies"]
    tiny = {"id": "m/2", "source": "pymetadata", "schema": METADATA_SCHEMA,
            "value": gold_metadata(text("tiny-PKG-INFO"))}
    answers = {"m/1": pred, "m/2": dict(tiny["value"], typed=True)}
    by_ctx = {"c1": "m/1", "c2": "m/2"}
    recs = [dict(rec, context="c1"), dict(tiny, context="c2")]
    res = evaluate(recs, lambda c, s: {"value": answers[by_ctx[c]]}, name="x")
    s = res["summary"]
    assert s["field_n"] == 14 and s["field_acc_mean"] == pytest.approx(11 / 14)
    assert s["field_acc"]["pymetadata/typed"] == {"n": 2, "acc": 0.5, "acc_as_given": 0.5,
                                                  "majority": 0.5}
    assert s["field_acc"]["pymetadata/name"]["acc"] == 0.5
    assert s["validity_jsonschema"] == 1.0
    md = markdown([res], per_field=True, examples=1)
    assert "| pymetadata/typed | 2 | 0.500 | 0.500 |" in md
    assert '- pymetadata/name, `m/1`: "Widget_Kit" -> "widget_kit"' in md
    # against the chat baseline: deg - chat per accuracy row, no issue-6 ratio targets
    chat = dict(evaluate(recs, lambda c, s: {"value": answers["m/2"] if c == "c2" else
                                             dict(answers["m/1"], typed=False)}, name="c"),
                system="chat")
    md = markdown([dict(res, system="deg"), chat], per_field=True)
    assert "Ratios against `c`" in md and "(met)" not in md and "(missed)" not in md
    assert "| mean field accuracy, deg - baseline | +0.071 (ahead) | > 0 |" in md
