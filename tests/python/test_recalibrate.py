"""deg.evaluate.recalibrate (issue 12, calibration that transfers): temperatures and the
extract Platt scaling refit from fill responses. The search recovers a known temperature
from leaves drawn under it; the written checkpoint fills the real model's values bitwise
and reports exactly the probabilities the refit temperatures predict from the old ones;
bad input fails with the file and line."""
import json
import math
import random
import shutil
from pathlib import Path

import pytest

import deg
from deg.evaluate import recalibrate as R
from deg.evaluate.metrics import confidence_of


def _sigmoid(z):
    return 1 / (1 + math.exp(-z))


def _noul_entries(T_old, T_true, n, seed):
    """Response lines of n noul leaves: raw logit l, reported p = sigmoid(l / T_old),
    right with probability sigmoid(|l| / T_true)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        l = rng.gauss(0, 4)
        p = _sigmoid(l / T_old)
        ok = rng.random() < _sigmoid(abs(l) / T_true)
        out.append({"id": f"r{i}", "response": {"meta": {"/b": {"mode": "decide.noul",
                                                                 "probability": p}}},
                    "rows": [{"pointer": "/b", "mode": "decide.noul", "correct": ok,
                              "conf": max(p, 1 - p)}]})
    return out


def test_fit_recovers_the_temperature_the_leaves_were_drawn_under():
    cal = {"choice": 1.0, "score": 1.0, "noul": 1.5, "extract": 1.0, "count": 1.0}
    for T_true in (0.8, 4.0):
        by = R.leaves(_noul_entries(1.5, T_true, 6000, 1), cal)
        assert len(by["noul"]) == 6000
        new = R.fit(by, cal)
        assert abs(math.log(new["noul"] / T_true)) < 0.1, (T_true, new["noul"])
        assert new["choice"] == 1.0 and new["score"] == 1.0  # no leaves: kept


def test_one_outcome_or_few_leaves_keep_the_calibration():
    cal = {"choice": 2.0, "score": 1.0, "noul": 1.5, "extract": 1.0, "count": 1.0}
    es = _noul_entries(1.5, 1.0, 200, 2)
    for e in es:
        e["rows"][0]["correct"] = True
    assert R.fit(R.leaves(es, cal), cal)["noul"] == 1.5  # all right: T would run to 0.05
    assert R.fit(R.leaves(_noul_entries(1.5, 1.0, 10, 3), cal), cal)["noul"] == 1.5


@pytest.fixture(scope="module")
def v_old(model, tmp_path_factory):
    """The shipped checkpoint with known temperatures (the test must not depend on
    the default's own calibration)."""
    d = tmp_path_factory.mktemp("ckpt") / "src"
    shutil.copytree(deg.default_checkpoint_path(), d)
    meta = json.loads((d / "deg.json").read_text())
    meta["calibration"].update({"choice": 1.5, "score": 4.0, "noul": 2.5})
    (d / "deg.json").write_text(json.dumps(meta, indent=1))
    return d


CTX = ("Package: frobnicator\nVersion: 2.4.1-3\nPriority: optional\nSection: utils\n"
       "Architecture: all\nEssential: no\nMaintainer: Jane Roe <jane@example.org>\n"
       "Homepage: https://frob.example.org/\nDescription: frobs widgets\n")
SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"},
    "priority": {"enum": ["required", "important", "standard", "optional", "extra"]},
    "section": {"enum": ["admin", "devel", "libs", "utils", "web"]},
    "essential": {"type": "boolean"},
    "homepage": {"type": ["string", "null"], "format": "uri"}}}


def test_refit_checkpoint_fills_the_same_values_with_the_predicted_probabilities(
        model, v_old, tmp_path):
    old = json.loads((v_old / "deg.json").read_text())
    cal = old["calibration"]
    # a fit that moves every kind: choice and noul leaves 60% right at 0.98 / 0.9
    entries = []
    for i in range(60):
        ok = i % 5 < 3
        entries.append({"id": f"r{i}", "response": {"meta": {
            "/c": {"mode": "decide.choice", "probabilities": [0.98, 0.01, 0.01]},
            "/b": {"mode": "decide.noul", "probability": 0.9},
            "/s": {"mode": "extract.span", "confidence": 0.3 + 0.6 * (i % 3) / 2}}},
            "rows": [{"pointer": "/c", "mode": "decide.choice", "correct": ok, "conf": 0.98},
                     {"pointer": "/b", "mode": "decide.noul", "correct": ok, "conf": 0.9},
                     {"pointer": "/s", "mode": "extract.span", "correct": i % 3 != 0,
                      "conf": 0.3}]})
    resp = tmp_path / "responses.jsonl"
    resp.write_text("".join(json.dumps(e) + "\n" for e in entries))
    out = tmp_path / "new"
    assert R.main([str(resp), "--ckpt", str(v_old), "--out", str(out),
                   "--json", str(tmp_path / "fit.json")]) == 0
    new = json.loads((out / "deg.json").read_text())
    nc = new["calibration"]
    # 60% right at 0.98 / 0.9: the refit reports 0.6, so choice T = 1.5 ln 98 / ln 3 = 6.26
    # and noul T = 2.5 ln 9 / ln 1.5 = 13.5; only calibration moved
    assert nc["choice"] == pytest.approx(1.5 * math.log(98) / math.log(3), rel=1e-4)
    assert nc["noul"] == pytest.approx(2.5 * math.log(9) / math.log(1.5), rel=1e-4)
    assert nc["extract_confidence"] != cal["extract_confidence"]
    assert nc["score"] == cal["score"] and nc["count"] == cal["count"]
    records = ("calibration", "recalibration", "recalibration_history")
    assert {k: v for k, v in new.items() if k not in records} == \
        {k: v for k, v in old.items() if k not in records}
    assert new["recalibration"]["records"] == 60
    # the source's own refit record moves to the history (oldest first)
    assert new["recalibration_history"] == \
        old.get("recalibration_history", []) + [old["recalibration"]]
    again = tmp_path / "again"
    assert R.main([str(resp), "--ckpt", str(out), "--out", str(again), "--kinds", "extract"]) == 0
    meta2 = json.loads((again / "deg.json").read_text())
    assert meta2["recalibration_history"][-1] == new["recalibration"]
    assert meta2["recalibration"]["kinds"] == ["extract"]
    assert json.loads((v_old / "deg.json").read_text()) == old  # the source is untouched
    fit = json.loads((tmp_path / "fit.json").read_text())
    assert fit["kinds"]["choice"]["ece_after"] < fit["kinds"]["choice"]["ece_before"]

    a = deg.load(v_old, model=model).fill(CTX, SCHEMA)
    b = deg.load(out, model=model).fill(CTX, SCHEMA)
    assert a["value"] == b["value"]
    for ptr in ("/priority", "/section"):
        pa, pb = a["meta"][ptr]["probabilities"], b["meta"][ptr]["probabilities"]
        z = [math.log(p) * cal["choice"] / nc["choice"] for p in pa]
        m = max(z)
        want = [math.exp(x - m) / sum(math.exp(y - m) for y in z) for x in z]
        # the fill softmaxes fp32 logits: agreement to fp32 rounding of logit / T
        assert max(abs(x - y) for x, y in zip(pb, want)) < 1e-5, ptr
        assert max(pb) < max(pa)
    p = a["meta"]["/essential"]["probability"]
    l = cal["noul"] * math.log(p / (1 - p))
    assert b["meta"]["/essential"]["probability"] == pytest.approx(_sigmoid(l / nc["noul"]),
                                                                   abs=1e-5)
    xa, xb = (m["confidence"] for m in (a["meta"]["/name"], b["meta"]["/name"]))
    xo, xn = cal["extract_confidence"], nc["extract_confidence"]
    lp = (math.log(xa / (1 - xa)) - xo["bias"]) / xo["scale"]
    assert xb == pytest.approx(_sigmoid(xn["scale"] * lp + xn["bias"]), abs=1e-6)
    # what ECE bins is what the fit modelled
    assert confidence_of(b["meta"]["/essential"]) == max(
        b["meta"]["/essential"]["probability"], 1 - b["meta"]["/essential"]["probability"])


def test_bad_input_says_where(v_old, tmp_path):
    bad = tmp_path / "r.jsonl"
    bad.write_text('{"id": "a", "rows": []}\nnot json\n')
    with pytest.raises(SystemExit, match=r"r\.jsonl:2: not JSON"):
        R.main([str(bad), "--ckpt", str(v_old), "--out", str(tmp_path / "o")])
    bad.write_text('{"value": 1}\n')
    with pytest.raises(SystemExit, match=r"r\.jsonl:1: not a deg.evaluate response line"):
        R.main([str(bad), "--ckpt", str(v_old), "--out", str(tmp_path / "o")])
    bad.write_text('{"id": "a", "rows": []}\n')
    with pytest.raises(SystemExit, match=r"nothing to refit: leaves per kind choice 0"):
        R.main([str(bad), "--ckpt", str(v_old), "--out", str(tmp_path / "o")])
    assert not (tmp_path / "o").exists()
    (tmp_path / "o").mkdir()
    with pytest.raises(SystemExit, match="exists"):
        R.main([str(bad), "--ckpt", str(v_old), "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit, match="RECORDS:SPLIT:N"):
        R.main([str(bad), "--ckpt", str(v_old), "--out", str(tmp_path / "p"),
                "--exclude", "x.jsonl"])
    assert not (tmp_path / "p").exists()
    shutil.rmtree(tmp_path / "o")
