"""deg.evaluate.null_margin: every margin's response rebuilt from the two
extreme runs (hand-computed flip points), scored, and the chosen margin."""
import json
import math

import pytest

from deg._native import has
from deg.evaluate import evaluate
from deg.evaluate.null_margin import at_margin, choose, flip_points, main, sweep

pytestmark = pytest.mark.skipif(not has("deg_plan_compile"), reason="libdeg has no schema compiler")

REC = {
    "id": "r1", "split": "val", "source": "t",
    "context": "Order A-1. Ref R-7.",
    "schema": {"type": "object", "required": ["id"], "properties": {
        "id": {"type": "string"},
        "coupon": {"type": ["string", "null"]},
        "ref": {"type": "string"}}},
    "value": {"id": "A-1", "coupon": None, "ref": "R-7"},
}
SPAN = {"value": {"id": "A-1", "coupon": "Order", "ref": "R-7"},
        "meta": {"/id": {"mode": "extract.span", "confidence": 0.9, "span": [6, 9]},
                 "/coupon": {"mode": "extract.span", "confidence": 0.2, "span": [0, 5]},
                 "/ref": {"mode": "extract.span", "confidence": 0.4, "span": [15, 18]}},
        "usage": {"prompt_tokens": 10, "generated_tokens": 0}}
NULL = {"value": {"id": "A-1", "coupon": None},
        "meta": {"/id": {"mode": "extract.span", "confidence": 0.9, "span": [6, 9]},
                 "/coupon": {"mode": "extract.span", "confidence": 0.5, "span": None,
                             "null_reason": "not_found"},
                 "/ref": {"mode": "extract.span", "confidence": 0.6, "span": None,
                          "null_reason": "not_found"}},
        "usage": {"prompt_tokens": 10, "generated_tokens": 0}}


def test_flip_points_and_responses():
    fl = flip_points(SPAN, NULL)
    assert set(fl) == {"/coupon", "/ref"}  # /id has a span in both runs: a margin never moves it
    assert fl["/coupon"] == pytest.approx(math.log(0.2 / 0.5))
    assert fl["/ref"] == pytest.approx(math.log(0.4 / 0.6))
    assert at_margin(SPAN, NULL, fl, -1.0)["value"] == SPAN["value"]
    mid = at_margin(SPAN, NULL, fl, -0.5)  # coupon flips (d -0.92 < -0.5), ref stays (-0.41)
    assert mid["value"] == {"id": "A-1", "coupon": None, "ref": "R-7"}
    assert mid["meta"]["/coupon"]["span"] is None and mid["meta"]["/ref"]["span"] == [15, 18]
    assert at_margin(SPAN, NULL, fl, 0.0)["value"] == {"id": "A-1", "coupon": None}  # ref omitted
    assert SPAN["value"]["coupon"] == "Order"  # the run's response is not modified


def test_sweep_scores_each_margin_and_chooses(tmp_path):
    rs = evaluate([REC], lambda c, s: SPAN, name="S")
    rn = evaluate([REC], lambda c, s: NULL, name="N")
    rows, n = sweep([REC], rs, rn, [-1.0, -0.5, 0.0])
    assert n == 1
    acc = {m: s["field_acc_mean"] for m, s, _ in rows}
    assert acc == {-1.0: pytest.approx(2 / 3), -0.5: 1.0, 0.0: pytest.approx(2 / 3)}
    assert choose([(m, a) for m, a in acc.items()]) == -0.5
    assert choose([(-1.0, 0.5), (0.5, 0.5), (2.0, 0.4)]) == 0.5  # tie: the smaller |m|
    # the CLI on result files; a run made at another margin is refused
    rs["env"], rn["env"] = {"options": {"null_margin": -1e9}}, {"options": {"null_margin": 1e9}}
    (tmp_path / "d").mkdir()
    for name, res in (("S", rs), ("N", rn)):
        (tmp_path / "d" / f"results_{name}.json").write_text(json.dumps(res))
    (tmp_path / "r.jsonl").write_text(json.dumps(REC) + "\n")
    out = tmp_path / "t.json"
    assert main(["--records", str(tmp_path / "r.jsonl"), "--pair", str(tmp_path / "d/results_S.json"),
                 str(tmp_path / "d/results_N.json"), "--margins=-1:0:0.5", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["chosen"] == -0.5 and [r["margin"] for r in got["rows"]] == [-1.0, -0.5, 0.0]
    assert got["extract_confidence"] is None  # every leaf right at -0.5: nothing to fit
    with pytest.raises(SystemExit):
        main(["--records", str(tmp_path / "r.jsonl"), "--pair", str(tmp_path / "d/results_N.json"),
              str(tmp_path / "d/results_S.json")])


def test_platt_fit_recovers_known_scaling():
    from deg.evaluate import platt
    # 1000 leaves at each log-confidence; right ones in the share sigmoid(0.8 lp + 2.5)
    confs, right = [], []
    for lp in (-12.0, -8.0, -5.0, -3.0, -2.0, -1.0, -0.5, -0.1):
        k = round(1000 / (1 + math.exp(-(0.8 * lp + 2.5))))
        confs += [math.exp(lp)] * 1000
        right += [True] * k + [False] * (1000 - k)
    a, b = platt.fit(confs, right)
    assert a == pytest.approx(0.8, abs=0.01) and b == pytest.approx(2.5, abs=0.03)
    assert platt.apply(math.exp(-2.0), 0.8, 2.5) == pytest.approx(1 / (1 + math.exp(-0.9)))
    assert platt.apply(0.0, 1.0, 0.0) == pytest.approx(0.0, abs=1e-300)  # an underflowed exp(lp)
    # invert: logit(1 / (1 + e^-0.9)) = 0.9, (0.9 - 2.5) / 0.8 = -2
    assert platt.invert(1 / (1 + math.exp(-0.9)), 0.8, 2.5) == pytest.approx(-2.0)
    with pytest.raises(ValueError):
        platt.invert(1.0, 0.8, 2.5)
    with pytest.raises(ValueError):
        platt.fit([0.1, 0.5], [True, True])


def test_write_ckpt_keeps_other_keys(tmp_path):
    from deg.evaluate.null_margin import write_ckpt
    (tmp_path / "deg.json").write_text(json.dumps(
        {"format": "deg-ckpt-v1", "calibration": {"choice": 1.5}, "key_prior": {"exact": 16}}))
    write_ckpt(str(tmp_path), 0.5, (0.91, 2.6))
    got = json.loads((tmp_path / "deg.json").read_text())
    assert got == {"format": "deg-ckpt-v1", "null_margin": 0.5, "key_prior": {"exact": 16},
                   "calibration": {"choice": 1.5, "extract_confidence": {"scale": 0.91, "bias": 2.6}}}
    assert [p.name for p in tmp_path.iterdir()] == ["deg.json"]  # no temporary file left
