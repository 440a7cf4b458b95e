"""deg.evaluate: metric functions on hand-computed examples, and the harness
on datagen-style records with an oracle, a wrong and a failing system."""
import pytest

from deg._native import has
from deg.evaluate import determinism, evaluate, oracle_system, score_record
from deg.evaluate.metrics import (align_items, ece, mae, null_pr, reliability, repeats_a_line,
                                 same_value, token_f1)
from deg.evaluate.report import markdown


def test_ece_hand_computed():
    confs, ok = [0.95, 0.85, 0.3, 0.25], [True, False, True, False]
    # 10 bins: each in its own bin: (.05 + .85 + .7 + .25) / 4
    assert ece(confs, ok, 10) == pytest.approx(0.4625)
    # 2 bins: [.95,.85] conf .9 acc .5; [.3,.25] conf .275 acc .5 -> (.4*2 + .225*2) / 4
    assert ece(confs, ok, 2) == pytest.approx(0.3125)
    assert ece([1.0], [True], 10) == 0.0  # confidence 1 lands in the last bin
    assert ece([], [], 10) is None
    assert reliability([0.05, 0.07, 1.0], [True, False, True], 10) == [
        (0.0, 0.1, 2, pytest.approx(0.06), 0.5), (0.9, 1.0, 1, 1.0, 1.0)]
    with pytest.raises(ValueError):
        ece([1.5], [True])


def test_token_f1_and_others():
    assert token_f1("the cat sat", "the cat") == pytest.approx(0.8)
    assert token_f1("The Cat", "the cat") == 1.0
    assert token_f1(None, "x") == 0.0 and token_f1("", "") == 1.0
    assert token_f1("a a b", "a b b") == pytest.approx(2 / 3)
    assert mae([(1, 3), (4, 4)]) == 1.0 and mae([]) is None
    assert null_pr([(True, True), (True, False), (False, True), (False, False), (True, True)]) == (
        pytest.approx(2 / 3), pytest.approx(2 / 3), 3, 3)
    assert same_value(1, 1.0) and not same_value(True, 1) and not same_value([1], [1, 2])
    assert align_items([{"a": 1, "b": 2}, {"a": 3, "b": 4}], [{"a": 3, "b": 4}, {"a": 1, "b": 9}]) == [
        (0, 1), (1, 0)]


REC = {
    "id": "r1", "split": "test",
    "context": "Order A-1 on 2024-03-05: 2 x lamp, 1 x mug. Priority high. Contact bo@example.com",
    "schema": {"type": "object", "properties": {
        "id": {"type": "string"}, "date": {"type": "string", "format": "date"},
        "priority": {"enum": ["low", "high"]}, "gift": {"type": "boolean"},
        "stars": {"type": "integer", "minimum": 1, "maximum": 5},
        "coupon": {"type": ["string", "null"]},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "n": {"type": "integer"}, "what": {"type": "string"}}}}}},
    "value": {"id": "A-1", "date": "2024-03-05", "priority": "high", "gift": False, "stars": 4,
              "coupon": None, "items": [{"n": 2, "what": "lamp"}, {"n": 1, "what": "mug"}]},
}


@pytest.mark.skipif(not has("deg_plan_compile"), reason="libdeg has no schema compiler")
def test_score_record_and_summary():
    pred = {"id": "A-1 on", "date": "2024-03-05", "priority": "low", "gift": False, "stars": 2,
            "coupon": "X", "items": [{"n": 1, "what": "mug"}]}
    rows, arrays = score_record(REC, pred, {}, True)
    got = {r["pointer"]: r["correct"] for r in rows}
    assert got["/id"] is False and got["/date"] is True and got["/priority"] is False
    assert got["/gift"] is True and got["/coupon"] is False
    # positional: gold item 0 (2, lamp) vs predicted item 0 (1, mug)
    assert got["/items/0/n"] is False and got["/items/1/n"] is False
    assert arrays == [{"pointer": "/items", "gold_n": 2, "pred_n": 1, "count_ok": False,
                       "aligned_em": 1, "nested": False}]
    res = evaluate([REC], lambda c, s: {"value": pred, "usage": {"generated_tokens": 7}}, name="x")
    s = res["summary"]
    assert s["validity"] == 1.0 and s["choice_em"] == 0.0 and s["noul_acc"] == 1.0
    assert s["score_mae"] == 2.0
    # span leaves with a gold value: /id ("A-1 on" vs "A-1": P 1/2, R 1), /items/0/what
    # (mug vs lamp: 0), /items/1/what (missing: 0); /coupon's gold is null
    assert s["span_f1"] == pytest.approx((2 / 3 + 0 + 0) / 3) and s["span_em"] == 0.0
    # predicted null: /items/1/n and /items/1/what (both have gold values); gold null: /coupon
    assert (s["null_precision"], s["null_recall"], s["null_pred_n"], s["null_gold_n"]) == (0.0, 0.0, 2, 1)
    assert s["array_item_em_aligned"] == 0.5 and s["generated_tokens_mean"] == 7
    assert "| choice exact match | 0.000 |" in markdown([res])


@pytest.mark.skipif(not has("deg_plan_compile"), reason="libdeg has no schema compiler")
def test_generate_text_metrics():
    # x-generate leaves: word F1 against the gold text and the share of values that
    # repeat a line (blanks trimmed; blank lines never count)
    assert repeats_a_line("ARCH(1)\n\nARCH(1)") and repeats_a_line("a\nb\n  a\t")
    assert not repeats_a_line("a\n\n\nb") and not repeats_a_line("ab\nabc")
    rec = {"id": "g", "split": "test", "context": "x", "value": {"s": "print machine name"},
           "schema": {"type": "object", "properties": {
               "s": {"type": "string", "x-generate": True, "maxLength": 120}}}}
    two = [rec, dict(rec, id="h")]
    texts = iter(["print the machine name", "ARCH(1)\n\nARCH(1)"])
    s = evaluate(two, lambda c, sc: {"value": {"s": next(texts)}}, name="g")["summary"]
    assert s["generate_n"] == 2 and s["generate_repeat"] == 0.5
    assert s["generate_f1"] == pytest.approx((2 * 0.75 * 1 / 1.75 + 0) / 2)


@pytest.mark.skipif(not has("deg_plan_compile"), reason="libdeg has no schema compiler")
def test_invalid_and_failing_systems():
    def boom(c, s):
        raise RuntimeError("no")
    res = evaluate([REC], boom, name="boom")
    assert res["summary"]["validity"] == 0.0 and res["summary"]["errors"] == 1
    assert res["summary"]["invalid_no_object_n"] == 0 and res["summary"]["invalid_schema_n"] == 0
    bad = evaluate([REC], lambda c, s: {"value": {"priority": "medium"}}, name="bad")
    assert bad["summary"]["validity"] == 0.0 and bad["summary"]["choice_em"] == 0.0
    assert bad["summary"]["invalid_schema_n"] == 1
    cut = evaluate([REC], lambda c, s: {"value": None, "usage": {"generated_tokens": 9}}, name="cut")
    assert cut["summary"]["invalid_no_object_n"] == 1 and cut["summary"]["invalid_schema_n"] == 0
    ok = evaluate([REC], oracle_system([REC]), name="oracle")["summary"]
    assert ok["validity"] == 1.0 and ok["choice_em"] == 1.0 and ok["ece_decide"] == 0.0
    det = determinism([REC], oracle_system([REC]))
    assert det == {"records": 1, "repeat_equal": 1, "permutation_equal": 1, "split_equal": 1,
                   "repeats": 10, "permutations": 5}
    calls = []

    def flaky(c, s):  # differs on every call: no determinism
        calls.append(1)
        r = oracle_system([REC])(c, s)
        r["meta"]["/priority"] = {"mode": "decide.choice", "probability": 1 / len(calls)}
        return r
    det = determinism([REC], flaky)
    assert det["repeat_equal"] == 0 and det["permutation_equal"] == 0

    def split_fails(c, s):  # raises on one-property schemas only: split != merged
        if len(s["properties"]) == 1:
            raise RuntimeError("no")
        return oracle_system([REC])(c, s)
    det = determinism([REC], split_fails, repeats=2, permutations=1)
    assert (det["repeat_equal"], det["permutation_equal"], det["split_equal"]) == (1, 1, 0)


def test_parsed_equality_and_percentiles():
    from deg.evaluate.metrics import head_kind, percentile, same_parsed
    assert same_parsed("extract.date", "date-time", "2024-03-05T10:00:00Z", "2024-03-05T11:00:00+01:00")
    assert same_parsed("extract.date", "date-time", "2024-03-05T10:00:00Z", "2024-03-05T10:00:00")
    assert not same_parsed("extract.date", "date-time", "2024-03-05T10:00:00Z", "2024-03-05T10:00:01Z")
    assert same_parsed("extract.date", "date", "2024-03-05", "2024-03-05")
    assert not same_parsed("extract.date", "date", "2024-03-05", "2024-03-06")
    assert not same_parsed("extract.date", "date", "2024-03-05", "5 March 2024")  # unparsed: as strings
    assert same_parsed("extract.number", None, 2, 2.0) and not same_parsed("extract.number", None, 2, "2")
    assert percentile([4, 1, 3, 2], 50) == 2 and percentile([4, 1, 3, 2], 90) == 4
    assert percentile([5], 50) == 5 and percentile([], 50) is None
    assert percentile(list(range(1, 11)), 90) == 9
    assert [head_kind(m) for m in ("decide.choice", "decide.noul", "extract.date", "generate")] == [
        "choice", "noul", "extract", None]


def _recs(strata):
    out = []
    for (src, tpl), n in strata.items():
        out += [{"id": f"{src}/{k}/{tpl}", "source": src, "template": tpl} for k in range(n)]
    return out


def test_stratified_subset():
    from deg.evaluate.subset import strata_counts, stratified_subset
    recs = _recs({("ev", "a"): 200, ("li", "c"): 200, ("deb", "e"): 22, ("inv", "r"): 23,
                  ("ord", "e"): 21, ("pkg", "c"): 32})
    s = stratified_subset(recs, 150, seed=0)
    assert len(s) == 150
    # one each, then 144 split proportionally to (199, 199, 21, 22, 20, 31) of 492
    assert strata_counts(s) == {"deb/e": 7, "ev/a": 59, "inv/r": 8, "li/c": 59, "ord/e": 7,
                                "pkg/c": 10}
    assert [r["id"] for r in s] == [r["id"] for r in recs if r in s]  # input order kept
    assert s == stratified_subset(recs, 150, seed=0) and s != stratified_subset(recs, 150, seed=1)
    tiny = stratified_subset(recs, 6, seed=3)
    assert len(tiny) == 6 and len(strata_counts(tiny)) == 6  # every stratum appears
    assert len(stratified_subset(recs, 3, seed=0)) == 3
    assert stratified_subset(recs, None) == recs and stratified_subset(recs, 10_000) == recs
    with pytest.raises(ValueError):
        stratified_subset(recs, 0)
    from deg.evaluate.subset import run_order
    assert run_order(s, 0) == run_order(s, 0) and sorted(map(str, run_order(s, 0))) == sorted(
        map(str, s)) and run_order(s, 0) != s


@pytest.mark.skipif(not has("deg_plan_compile"), reason="libdeg has no schema compiler")
def test_rescore_ratios_and_cli(tmp_path):
    import json
    from deg.evaluate import rescore
    from deg.evaluate.__main__ import main
    from deg.evaluate.report import markdown

    def fake(gen, lat):
        def run(c, s):
            r = oracle_system([REC])(c, s)
            r["usage"]["generated_tokens"] = gen
            return r
        return run
    res = evaluate([REC], fake(10, 0), name="d")
    assert res["per_record"][0]["cpu_s"] >= 0
    again = rescore(json.loads(json.dumps(res)), [REC])
    assert again["summary"] == res["summary"]
    res["system"] = "deg"
    b = evaluate([REC], fake(40, 0), name="b")
    b["system"] = "baseline"
    b["summary"]["choice_em"] = 0.5
    text = markdown([res, b])
    assert "| generated tokens / response | 0.250 (met) | <= 0.3 |" in text
    assert "| validity 100% | met | = 1 |" in text
    assert "| choice exact match, deg - baseline | +0.500 (ahead) | > 0 |" in text
    # the CLI: an oracle run, then the same run merged back from its results file
    rec_file = tmp_path / "r.jsonl"
    rec_file.write_text(json.dumps(REC) + "\n")
    out = tmp_path / "out"
    assert main(["--records", str(rec_file), "--subset", "1", "--system", "oracle:o1",
                 "--out", str(out)]) == 0
    first = json.loads((out / "results_o1.json").read_text())
    assert first["data"]["ids"] == ["r1"] and first["env"]["system"] == "oracle"
    assert len((out / "responses_o1.jsonl").read_text().splitlines()) == 1
    assert main(["--records", str(rec_file), "--merge", str(out / "results_o1.json"),
                 "--out", str(tmp_path / "merged")]) == 0
    report = (tmp_path / "merged" / "report.md").read_text()
    assert "| choice exact match | 1.000 |" in report and "- o1: system `oracle`" in report
    # an unfinished run (responses log only) merges over the records both answered
    rec2 = dict(REC, id="r2", context=REC["context"] + " Thanks.")
    rec_file.write_text(json.dumps(REC) + "\n" + json.dumps(rec2) + "\n")
    assert main(["--records", str(rec_file), "--system", "oracle:o2", "--out", str(out)]) == 0
    log = out / "responses_o2.jsonl"
    log.write_text("".join(x + "\n" for x in log.read_text().splitlines()
                           if json.loads(x)["id"] == "r2"))  # only r2 finished
    assert main(["--records", str(rec_file), "--merge", str(out / "results_o1.json"),
                 "--merge", str(log), "--out", str(tmp_path / "partial")]) == 0
    report = (tmp_path / "partial" / "report.md").read_text()
    assert "PARTIAL: 1 of 2 records" in report and "| records | 0 | 0 |" in report
    # --resume runs only what the log lacks
    assert main(["--records", str(rec_file), "--system", "oracle:o2", "--resume",
                 "--out", str(out)]) == 0
    res = json.loads((out / "results_o2.json").read_text())
    assert [p["id"] for p in res["per_record"]] == ["r1", "r2"]
    assert res["env"]["resumed_records"] == 1 and res["summary"]["validity"] == 1.0
    assert len(log.read_text().splitlines()) == 2
    # a log two runs appended to (each record twice) merges as one entry per record
    log.write_text(log.read_text() * 2)
    assert main(["--records", str(rec_file), "--merge", str(log), "--out", str(tmp_path / "dup")]) == 0
    assert "| records | 2 |" in (tmp_path / "dup" / "report.md").read_text()
    # --max-minutes 0: no record starts; the results say so and --resume goes on
    assert main(["--records", str(rec_file), "--system", "oracle:o4", "--max-minutes", "0",
                 "--out", str(out)]) == 0
    res = json.loads((out / "results_o4.json").read_text())
    assert res["per_record"] == [] and res["env"]["partial"].startswith("0 of 2 records")


def test_options_reach_the_fill(tmp_path, model_path):
    """--options are the deg system's request options: a huge negative
    null_margin makes the nullable e-mail the text's only e-mail, a huge
    positive one null; the results record them; bad --options are usage errors."""
    import json
    from deg.evaluate.__main__ import main
    import deg
    rec = {"id": "e1", "split": "test", "context": "Order 4711 from ann@example.com",
           "schema": {"type": "object", "properties": {
               "email": {"type": ["string", "null"], "format": "email"}}, "required": ["email"]},
           "value": {"email": "ann@example.com"}}
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(rec) + "\n")
    ck = str(deg.default_checkpoint_path())
    got = {}
    for label, opts in (("plain", None), ("found", '{"null_margin": -1e6}'),
                        ("nullish", '{"null_margin": 1e6}')):
        argv = ["--records", str(f), "--system", f"deg:{label}", "--ckpt", ck, "--model",
                str(model_path), "--out", str(tmp_path / "o")]
        assert main(argv + (["--options", opts] if opts else [])) == 0
        res = json.loads((tmp_path / "o" / f"results_{label}.json").read_text())
        got[label] = res["per_record"][0]["response"]["value"]["email"]
        assert res["env"].get("options") == (json.loads(opts) if opts else None)
    assert got["found"] == "ann@example.com" and got["nullish"] is None
    for bad in ("{nope", "[1]"):
        with pytest.raises(SystemExit) as e:
            main(["--records", str(f), "--system", "deg", "--options", bad, "--out", str(tmp_path)])
        assert e.value.code == 2
