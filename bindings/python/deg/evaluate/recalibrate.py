"""Refit a checkpoint's calibration on fill responses (issue 12, "calibration that
transfers"; contract §12.3).

A checkpoint's temperatures are fit when it is trained, on the validation split of
its training data: layouts the heads learned. On documents of other kinds the
decide heads are far more sure than right (smollm2-135m-v12 on 100 held-out real
documents: choices reported at 0.99 were right 78% of the time, ECE choice 0.27).
This refits, from responses of deg.fill on records that include kinds the heads
never saw (python -m deg.evaluate's responses_<label>.jsonl, each line the
record's response and its scored rows), the reported probabilities only:

- choice, score, noul: one temperature each, fit by golden-section search on log T
  (deg.train.calibrate's search) minimising the NLL of each leaf being right under
  its reported confidence: the chosen outcome's probability (noul: max(p, 1 - p)),
  exactly what ECE bins (deg.evaluate.metrics.confidence_of). Decisions are
  argmaxes, which a temperature does not move, so values stay bitwise.
- extract: the Platt scaling calibration.extract_confidence {scale, bias}
  (deg.evaluate.platt) refit on lp = log p_start + log p_end, recovered from the
  reported confidence through the checkpoint's current scaling. Decisions never
  read it.

Count keeps its temperature (array counts are decisions of a sum, §12.6). A kind
with fewer than --min-leaves leaves (default 30), or whose leaves are all right or
all wrong, keeps its calibration.

The raw logits are recovered from what the responses report, under the
checkpoint's current calibration (the responses must come from that checkpoint,
or one with the same calibration): choice/score logits = T_old * log p (up to a
constant per leaf), the noul logit = T_old * logit(p), lp = (logit(c) - bias) /
scale. Probabilities at 0 or 1 in double are clamped to 1e-300 / 1 - 1e-16.

    python -m deg.evaluate.recalibrate --ckpt DIR --out NEW_DIR
        RESPONSES.jsonl [...] [--exclude RECORDS:SPLIT:N ...] [--kinds K,...]
        [--min-leaves N] [--json FIT.json]

--kinds limits the refit to some head kinds (choice, score, noul, extract); the
others keep their calibration. --exclude drops the records of a stratified subset (deg.evaluate --subset N
--subset-seed 0 of RECORDS' SPLIT) so the sets a checkpoint is chosen on stay out
of its fit. NEW_DIR gets a copy of DIR's files (heads, adapters, docs) and its
deg.json with the refit calibration and "recalibration" (what it was fit on; an earlier
refit's record moves to the list "recalibration_history");
DIR is not changed.
"""
import argparse
import json
import math
import os
import shutil
import sys

from . import platt
from ..atomic import atomic_write
from ..train.calibrate import fit as fit_temperature
from .metrics import head_kind
from .subset import stratified_subset

__all__ = ["leaves", "fit", "main"]

P_LO, P_HI = 1e-300, 1.0 - 1e-16
MIN_LEAVES = 30  # fewer leaves of a kind: its calibration is kept (a fit on a handful is noise)
KINDS = ("choice", "score", "noul", "extract")


def _clamp(p):
    return min(max(float(p), P_LO), P_HI)


def leaves(entries, calibration):
    """{kind: [leaf]} from response entries (dicts with "id", "response" {"meta"} and
    "rows") under the checkpoint calibration that produced them. A leaf is
    (raw, correct): choice/score raw = (logits [n], chosen index), noul raw = logit,
    extract raw = lp. Rows without a confidence (invalid responses, x-generate,
    arrays) are skipped, as in ECE."""
    out = {k: [] for k in KINDS}
    xc = calibration.get("extract_confidence")
    for e in entries:
        meta = ((e.get("response") or {}).get("meta")) or {}
        for r in e.get("rows", ()):
            kind = head_kind(r["mode"])
            m = meta.get(r["pointer"])
            if kind not in KINDS or r.get("conf") is None or not isinstance(m, dict):
                continue
            ok = bool(r["correct"])
            if kind in ("choice", "score"):
                ps = m.get("probabilities")
                if not ps:
                    continue
                t = float(calibration[kind])
                lg = [t * math.log(_clamp(p)) for p in ps]
                out[kind].append(((lg, max(range(len(ps)), key=lambda i: ps[i])), ok))
            elif kind == "noul":
                p = _clamp(m["probability"])
                out[kind].append((float(calibration["noul"]) * math.log(p / (1 - p)), ok))
            else:
                c = _clamp(m["confidence"])
                if xc:
                    lp = platt.invert(c, xc["scale"], xc["bias"])
                else:
                    lp = math.log(c)
                out[kind].append((lp, ok))
    return out


def _top_conf(kind, raw, T):
    """The reported confidence of a leaf at temperature T."""
    if kind == "noul":
        z = abs(raw) / T
        return 1.0 / (1.0 + math.exp(-z))
    lg, b = raw
    m = max(lg)
    s = sum(math.exp((x - m) / T) for x in lg)
    return math.exp((lg[b] - m) / T) / s


def _nll(kind, items, T):
    tot = 0.0
    for raw, ok in items:
        c = min(max(_top_conf(kind, raw, T), 1e-12), 1 - 1e-12)
        tot -= math.log(c if ok else 1 - c)
    return tot / max(len(items), 1)


def _fittable(items, min_leaves):
    """Enough leaves, right and wrong both: with one outcome only the NLL runs the
    temperature to the end of its range (all right: T -> 0.05, every confidence 1)."""
    n_ok = sum(1 for _, ok in items if ok)
    return len(items) >= min_leaves and 0 < n_ok < len(items)


def fit(by_kind, calibration, min_leaves=MIN_LEAVES, kinds=KINDS):
    """New calibration dict: of the head kinds in `kinds`, choice/score/noul
    temperatures refit on their leaves, extract_confidence refit by Platt scaling; a
    kind not in `kinds`, with fewer than min_leaves leaves or with one outcome only
    keeps its calibration."""
    new = dict(calibration)
    for kind in ("choice", "score", "noul"):
        if kind in kinds and _fittable(by_kind[kind], min_leaves):
            new[kind] = fit_temperature(kind, by_kind[kind], loss=_nll)
    xs = by_kind["extract"]
    if "extract" in kinds and _fittable(xs, min_leaves):
        sc, bi = platt.fit([math.exp(lp) for lp, _ in xs], [ok for _, ok in xs])
        new["extract_confidence"] = {"scale": sc, "bias": bi}
    return new


def _confs(kind, items, cal):
    """Each leaf's reported confidence under calibration cal."""
    if kind == "extract":
        xc = cal.get("extract_confidence")
        return [platt.apply(math.exp(lp), xc["scale"], xc["bias"]) if xc else math.exp(lp)
                for lp, _ in items]
    return [_top_conf(kind, raw, float(cal[kind])) for raw, _ in items]


def _read(paths, exclude_ids):
    entries = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    e = json.loads(line)
                except json.JSONDecodeError as ex:
                    raise SystemExit(f"{p}:{n}: not JSON ({ex.msg})")
                if not isinstance(e, dict) or "rows" not in e or "id" not in e:
                    raise SystemExit(f"{p}:{n}: not a deg.evaluate response line "
                                     "(no \"id\" / \"rows\")")
                if e["id"] not in exclude_ids:
                    entries.append(e)
    return entries


def _subset_ids(spec):
    from ..datagen import read_jsonl
    try:
        path, split, n = spec.rsplit(":", 2)
        n = int(n)
    except ValueError:
        raise SystemExit(f"--exclude {spec!r}: want RECORDS:SPLIT:N")
    recs = read_jsonl(path, split)
    if not recs:
        raise SystemExit(f"--exclude {spec!r}: no {split!r} records in {path}")
    return {r["id"] for r in stratified_subset(recs, n, 0)}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m deg.evaluate.recalibrate",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("responses", nargs="+", help="deg.evaluate responses_<label>.jsonl")
    ap.add_argument("--ckpt", required=True, help="the checkpoint the responses came from")
    ap.add_argument("--out", required=True, help="new checkpoint directory (must not exist)")
    ap.add_argument("--exclude", action="append", default=[], metavar="RECORDS:SPLIT:N",
                    help="leave out this stratified subset's records (seed 0)")
    ap.add_argument("--min-leaves", type=int, default=MIN_LEAVES,
                    help="refit a kind only with at least this many leaves (default %(default)s)")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help="head kinds to refit, comma-separated (default %(default)s)")
    ap.add_argument("--json", help="write the fit summary here")
    a = ap.parse_args(argv)
    src = os.path.join(a.ckpt, "deg.json")
    try:
        with open(src, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, json.JSONDecodeError) as ex:
        raise SystemExit(f"{src}: {ex}")
    cal = meta.get("calibration")
    if not isinstance(cal, dict) or any(not isinstance(cal.get(k), (int, float))
                                        for k in ("choice", "score", "noul")):
        raise SystemExit(f"{src}: no calibration temperatures to refit")
    if os.path.exists(a.out):
        raise SystemExit(f"{a.out}: exists (recalibrate writes a new checkpoint directory)")
    excl = set()
    for spec in a.exclude:
        excl |= _subset_ids(spec)
    entries = _read(a.responses, excl)
    by_kind = leaves(entries, cal)
    kinds = tuple(k for k in a.kinds.split(",") if k)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise SystemExit(f"--kinds {a.kinds!r}: choose from {', '.join(KINDS)}")
    new = fit(by_kind, cal, a.min_leaves, kinds)
    if new == cal:
        raise SystemExit("nothing to refit: leaves per kind " + ", ".join(
            f"{k} {len(by_kind[k])}" for k in kinds) + f" (each needs >= {a.min_leaves}, "
            "right and wrong both); no checkpoint written")
    from .metrics import ece
    summary = {"records": len(entries), "excluded": len(excl), "kinds": {}}
    for kind in KINDS:
        items = by_kind[kind]
        ok = [c for _, c in items]
        before = ece(_confs(kind, items, cal), ok) if items else None
        after = ece(_confs(kind, items, new), ok) if items else None
        summary["kinds"][kind] = {"leaves": len(items), "ece_before": before, "ece_after": after,
                                  "before": cal.get("extract_confidence" if kind == "extract"
                                                    else kind),
                                  "after": new.get("extract_confidence" if kind == "extract"
                                                   else kind)}
        print(f"{kind:8s} {len(items):5d} leaves  ECE {before if before is None else round(before, 4)}"
              f" -> {after if after is None else round(after, 4)}  ({summary['kinds'][kind]['before']}"
              f" -> {summary['kinds'][kind]['after']})")
    meta["calibration"] = new
    if "recalibration" in meta:  # an earlier refit's record stays, oldest first
        meta.setdefault("recalibration_history", []).append(meta.pop("recalibration"))
    meta["recalibration"] = {
        "from": os.path.basename(os.path.normpath(a.ckpt)),
        "responses": [os.path.join(os.path.basename(os.path.dirname(os.path.abspath(p))),
                                   os.path.basename(p)) for p in a.responses],
        "excluded_subsets": [os.path.basename(x) for x in a.exclude], "records": len(entries), "kinds": list(kinds),
        "leaves": {k: len(v) for k, v in by_kind.items()},
        "rule": "deg.evaluate.recalibrate: choice/score/noul temperatures by top-label NLL, "
                "extract_confidence by Platt scaling"}
    tmp = a.out.rstrip("/") + ".partial"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    shutil.copytree(a.ckpt, tmp)
    atomic_write(os.path.join(tmp, "deg.json"),
                 lambda fh: fh.write((json.dumps(meta, indent=1) + "\n").encode()))
    os.replace(tmp, a.out)  # whole or absent: a killed run leaves only .partial
    if a.json:
        atomic_write(a.json, lambda fh: fh.write((json.dumps(summary, indent=1) + "\n").encode()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
