"""Choosing a checkpoint's null_margin (deg contract §9) and extract confidence
calibration (deg/evaluate/platt.py) on development data.

A nullable/optional extract leaf is null when log p(best valid span) <
log p(null) + m. The margin changes nothing else (no decide field, count,
anchor or forbid leaf), so two evaluation runs of the same records give every
margin's response exactly:

- run S with options {"null_margin": -1e9}: each leaf's best valid span, its
  meta confidence = p(span);
- run N with options {"null_margin": +1e9}: the same leaves null (or omitted),
  meta confidence = p(null).

A leaf with a span in S and none in N flips at d = log p(span) - log p(null):
under margin m it is S's when d >= m, else N's (value and meta). This module
builds those responses, scores them with the evaluator (field accuracy, null
precision/recall, ECE) and prints one row per margin; the chosen margin
maximises mean field accuracy over the given sets (ties: the smallest |m|).
At the chosen margin the extract leaves' (raw confidence, right) pairs of all
sets fit Platt's {scale, bias}; each set's ECE is printed raw and calibrated by
a fit on the other sets (leave one set out), and --write-ckpt puts both
settings into a checkpoint's deg.json (atomically).

    python -m deg.evaluate --records R --split val --system deg:S --ckpt C \\
        --options '{"null_margin": -1e9}' --out D
    python -m deg.evaluate ... --system deg:N --options '{"null_margin": 1e9}' --out D
    python -m deg.evaluate.null_margin --records R --split val \\
        --pair D/results_S.json D/results_N.json --margins=-2:4:0.5
"""
import argparse
import copy
import json
import math
import os
import sys

from ..atomic import atomic_write
from ..datagen import read_jsonl
from ..train.data import resolve
from . import platt, score_response, summarize
from .__main__ import _load_results
from .metrics import ece

__all__ = ["flip_points", "at_margin", "sweep", "choose", "extract_pairs", "write_ckpt"]


def _unescape(tok):
    return tok.replace("~1", "/").replace("~0", "~")


def flip_points(resp_s, resp_n):
    """{pointer: d} for the leaves a margin can flip: a span in run S, none in
    run N. d = log p(span) - log p(null) (nats; +-inf when a probability
    underflowed to 0)."""
    ms, mn = resp_s.get("meta") or {}, resp_n.get("meta") or {}
    out = {}
    for ptr, a in ms.items():
        b = mn.get(ptr)
        if not (isinstance(a, dict) and isinstance(b, dict)):
            continue
        if not str(a.get("mode", "")).startswith("extract."):
            continue
        if a.get("span") is None or b.get("span") is not None:
            continue
        ps, pn = a.get("confidence") or 0.0, b.get("confidence") or 0.0
        ls = math.log(ps) if ps > 0 else -math.inf
        ln = math.log(pn) if pn > 0 else -math.inf
        out[ptr] = ls - ln if not (ls == ln == -math.inf) else 0.0
    return out


def at_margin(resp_s, resp_n, flips, m):
    """The response under null_margin m: S's, with every flippable leaf whose
    d < m taken from N (null, or absent when N omitted it)."""
    value = copy.deepcopy(resp_s["value"])
    meta = dict(resp_s.get("meta") or {})
    for ptr, d in flips.items():
        if d >= m:
            continue
        parent_ptr, _, last = ptr.rpartition("/")
        ok, parent = resolve(value, parent_ptr)
        found, nv = resolve(resp_n["value"], ptr)
        if not ok or not isinstance(parent, (dict, list)):
            raise ValueError(f"{ptr}: runs S and N differ in structure (not one record's pair?)")
        key = _unescape(last)
        if isinstance(parent, list):
            parent[int(key)] = nv  # an item leaf of an array of scalars: N holds null there
        elif found:
            parent[key] = nv
        else:
            parent.pop(key, None)
        meta[ptr] = resp_n["meta"][ptr]
    return dict(resp_s, value=value, meta=meta)


def sweep(records, res_s, res_n, margins, n_bins=10):
    """([(m, summary, per_record)] for each margin, n) over the n records both
    runs answered."""
    by_id = {r["id"]: r for r in records}
    pn = {p["id"]: p for p in res_n["per_record"]}
    pairs = []
    for p in res_s["per_record"]:
        q = pn.get(p["id"])
        if q is None or p.get("response") is None or q.get("response") is None:
            continue
        if p["id"] not in by_id:
            raise ValueError(f"{p['id']}: not in the records")
        rs, rn = p["response"], q["response"]
        pairs.append((by_id[p["id"]], p, rs, rn, flip_points(rs, rn)))
    out = []
    for m in margins:
        per = [score_response(rec, at_margin(rs, rn, fl, m), p["latency_s"], p.get("error"),
                              p.get("cpu_s"))
               for rec, p, rs, rn, fl in pairs]
        out.append((m, summarize(per, n_bins), per))
    return out, len(pairs)


def extract_pairs(per):
    """(raw confidence, right) of every extract leaf with a confidence."""
    return [(r["conf"], r["correct"]) for p in per for r in p["rows"]
            if r["mode"].startswith("extract.") and r["conf"] is not None]


def write_ckpt(ckpt_dir, margin, scale_bias):
    """Set deg.json's null_margin and (unless scale_bias is None)
    calibration.extract_confidence in place (atomic rename; every other key kept)."""
    path = os.path.join(ckpt_dir, "deg.json")
    with open(path, encoding="utf-8") as f:
        meta = json.load(f)
    meta["null_margin"] = margin
    if scale_bias is not None:
        cal = meta.setdefault("calibration", {})
        cal["extract_confidence"] = {"scale": scale_bias[0], "bias": scale_bias[1]}
    text = (json.dumps(meta, indent=1, ensure_ascii=False) + "\n").encode()
    atomic_write(path, lambda fh: fh.write(text))


def _raw_runs(res, path):
    """Refuse runs whose checkpoint already calibrates extract confidences
    (a fit must see the raw exp(lp) values)."""
    ck = (res.get("env") or {}).get("ckpt")
    try:
        with open(os.path.join(ck, "deg.json"), encoding="utf-8") as f:
            cal = json.load(f).get("calibration") or {}
    except (OSError, TypeError, ValueError):
        return
    if "extract_confidence" in cal:
        raise SystemExit(f"{path}: its checkpoint {ck} already has calibration.extract_confidence;"
                         " fit on runs of the checkpoint without it")


def choose(rows):
    """The margin with the highest mean field accuracy; ties: the smallest |m|."""
    return max(rows, key=lambda r: (round(r[1], 9), -abs(r[0])))[0]


def _margins(text):
    if ":" in text:
        lo, hi, step = (float(x) for x in text.split(":"))
        if step <= 0 or hi < lo or (hi - lo) / step > 1000:
            raise ValueError("--margins LO:HI:STEP needs STEP > 0, HI >= LO, at most 1000 steps")
        n = int(round((hi - lo) / step))
        return [round(lo + i * step, 9) for i in range(n + 1)]
    return [float(x) for x in text.split(",")]


def _fmt(v):
    return "n/a" if v is None else f"{v:.3f}"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m deg.evaluate.null_margin", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", action="append", required=True,
                    help="datagen records JSONL (repeatable; matched by id)")
    ap.add_argument("--split", default="val")
    ap.add_argument("--pair", nargs=2, action="append", required=True,
                    metavar=("RESULTS_S", "RESULTS_N"),
                    help="results of the same records at null_margin -1e9 and +1e9 "
                    "(results_*.json or an unfinished responses_*.jsonl; repeatable: one per set)")
    ap.add_argument("--margins", default="-2:4:0.5", help="LO:HI:STEP or a comma list (nats; write --margins=-1:2:0.5 when LO < 0)")
    ap.add_argument("--json", default=None, help="write the table as JSON here")
    ap.add_argument("--write-ckpt", default=None, metavar="DIR",
                    help="write the chosen null_margin and extract_confidence into DIR/deg.json")
    a = ap.parse_args(argv)
    try:
        margins = _margins(a.margins)
    except ValueError as e:
        ap.error(str(e))
    records = [r for path in a.records for r in read_jsonl(path, a.split)]
    table = {m: [] for m in margins}
    sets = []
    for s_path, n_path in a.pair:
        res_s, res_n = _load_results(s_path), _load_results(n_path)
        for res, want in ((res_s, -1e9), (res_n, 1e9)):
            got = (res.get("env", {}).get("options") or {}).get("null_margin")
            if got is not None and got != want:
                ap.error(f"{s_path if want < 0 else n_path}: ran with null_margin {got}, "
                         f"expected {want:g}")
        for res, path in ((res_s, s_path), (res_n, n_path)):
            _raw_runs(res, path)
        rows, n = sweep(records, res_s, res_n, margins)
        sets.append((s_path, n))
        for m, summ, per in rows:
            table[m].append((n, summ, per))
    out = []
    print("| null_margin | " + " | ".join(f"field acc ({p.split('/')[-2]}, {n})" for p, n in sets)
          + " | mean | null precision | null recall | ECE extract |")
    print("|---" * (len(sets) + 5) + "|")
    for m in margins:
        accs = [s["field_acc_mean"] for _, s, _ in table[m]]
        mean = sum(accs) / len(accs)
        npv = [s.get("null_precision") for _, s, _ in table[m]]
        nrv = [s.get("null_recall") for _, s, _ in table[m]]
        ecev = [s.get("ece_extract") for _, s, _ in table[m]]
        wsum = sum(n for n, _, _ in table[m])

        def wavg(vals):
            pairs = [(n, v) for (n, _, _), v in zip(table[m], vals) if v is not None]
            return sum(n * v for n, v in pairs) / sum(n for n, _ in pairs) if pairs and wsum else None
        row = {"margin": m, "field_accuracy": accs, "mean": mean, "null_precision": wavg(npv),
               "null_recall": wavg(nrv), "ece_extract": wavg(ecev)}
        out.append(row)
        print(f"| {m:g} | " + " | ".join(_fmt(x) for x in accs)
              + f" | {mean:.3f} | {_fmt(row['null_precision'])} | {_fmt(row['null_recall'])}"
              f" | {_fmt(row['ece_extract'])} |")
    best = choose([(r["margin"], r["mean"]) for r in out])
    print(f"\nchosen null_margin: {best:g} (highest mean field accuracy; ties: smallest |m|)")
    pairs = [extract_pairs(per) for _, _, per in table[best]]
    allp = [x for ps in pairs for x in ps]
    try:
        sb = platt.fit([c for c, _ in allp], [ok for _, ok in allp])
        print(f"extract confidence (Platt, {len(allp)} leaves): scale {sb[0]:.4f}, bias {sb[1]:.4f}")
    except ValueError as e:
        sb = None
        print(f"extract confidence: not fit ({e})")
    loo = []
    for i, ((path, _), ps) in enumerate(zip(sets, pairs)):
        rest = [x for j, q in enumerate(pairs) if j != i for x in q]
        raw = ece([c for c, _ in ps], [ok for _, ok in ps], 10)
        try:
            sc, bi = platt.fit([c for c, _ in rest], [ok for _, ok in rest])
            cal = ece([platt.apply(c, sc, bi) for c, _ in ps], [ok for _, ok in ps], 10)
        except ValueError:
            cal = None  # one set, or the others have one outcome only
        loo.append({"set": path, "n": len(ps), "ece_raw": raw, "ece_loo": cal})
        print(f"  {path}: ECE extract {_fmt(raw)} raw, {_fmt(cal)} calibrated on the other sets")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"sets": [p for p, _ in sets], "rows": out, "chosen": best,
                       "extract_confidence": sb and {"scale": sb[0], "bias": sb[1]},
                       "ece_loo": loo},
                      f, indent=1)
    if a.write_ckpt:
        write_ckpt(a.write_ckpt, best, sb)
        print(f"wrote null_margin {best:g}" + (" and calibration.extract_confidence" if sb else "")
              + f" to {os.path.join(a.write_ckpt, 'deg.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
