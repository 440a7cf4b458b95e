#!/usr/bin/env python3
"""Fill answers, head numbers and hidden states of a checkpoint on two weight modes.

The trained heads read the trunk's final-norm hidden states; a weight mode
that keeps them (native-f32act: the f32 path's numbers up to summation order)
keeps every fill answer and probability. This runs deg.fill with the same
checkpoint over two backbones loaded with different weight modes (default f32
vs native-f32act) on datagen records and reports, per record and overall:
whether the filled values are equal, the largest |difference| of any number
in the response's meta (probabilities, confidences, margins), and the largest
|difference| of the document's hidden states (relative to their largest
|value|). Correctness only: no timings.

    .venv/bin/python bench/weights_equiv.py --records /tmp/deg-data/records.jsonl \\
        --split val --n 5 [--checkpoint DIR] [--model GGUF] [--modes f32,native-f32act]

Prints one JSON line per record, then a summary line; exit 1 if a value differs.
"""
import argparse
import itertools
import json
import sys

import deg
from deg.fetch import resolve_model_path
from deg.model import WEIGHT_MODES


def numbers(x, path=""):
    """(json pointer, float) for every number (not bool) in x."""
    if isinstance(x, bool):
        return
    if isinstance(x, (int, float)):
        yield path, float(x)
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from numbers(v, f"{path}/{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from numbers(v, f"{path}/{i}")


def meta_diff(a, b):
    """(max |a - b| over the numbers both metas hold, its pointer, numbers compared)."""
    na, nb = dict(numbers(a)), dict(numbers(b))
    worst, where, n = 0.0, None, 0
    for k in na.keys() & nb.keys():
        if "usage" in k or "seconds" in k or k.endswith("_ms"):
            continue
        n += 1
        d = abs(na[k] - nb[k])
        if d > worst:
            worst, where = d, k
    return worst, where, n


def hidden_rows(model, ids):
    """Final-norm hidden states [len(ids) * n_embd] of ids fed to a fork of an empty trunk."""
    with model.trunk() as t, t.fork() as f:
        f.feed(ids)
        return f.hidden(0, len(ids))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", required=True, help="datagen records (JSON lines)")
    ap.add_argument("--split", default="val", help="records of this split only (default val)")
    ap.add_argument("--n", type=int, default=5, help="records to run (default 5)")
    ap.add_argument("--checkpoint", default=None, help="default: the shipped checkpoint")
    ap.add_argument("--model", default=None, help="backbone (default: $DEG_MODEL or the cache)")
    ap.add_argument("--modes", default="f32,native-f32act", help="two weight modes, a,b")
    ap.add_argument("--max-tokens", type=int, default=2048,
                    help="skip records whose context is longer (default 2048)")
    args = ap.parse_args()
    modes = args.modes.split(",")
    if len(modes) != 2 or any(m not in WEIGHT_MODES for m in modes):
        ap.error(f"--modes {args.modes}: two of {', '.join(WEIGHT_MODES)}")
    path = resolve_model_path(args.model)
    models = [deg.load_model(path, weights=m) for m in modes]
    ckpts = [deg.load(args.checkpoint, model=m) for m in models]
    with open(args.records, encoding="utf-8") as fh:
        recs = (json.loads(line) for line in fh)
        recs = (r for r in recs if r.get("split") == args.split)
        recs = (r for r in recs if len(models[0].tokenize(r["context"])) <= args.max_tokens)
        chosen = list(itertools.islice(recs, args.n))
    summary = {"modes": modes, "records": 0, "values_equal": 0, "max_meta_diff": 0.0,
               "max_hidden_abs_diff": 0.0, "max_hidden_rel_diff": 0.0}
    for r in chosen:
        outs = [c.fill(r["context"], r["schema"]) for c in ckpts]  # §8 response dicts
        values = [o["value"] for o in outs]
        md, where, n_num = meta_diff(outs[0]["meta"], outs[1]["meta"])
        ids = models[0].tokenize(r["context"])
        ha, hb = (hidden_rows(m, ids) for m in models)
        hd = max(abs(x - y) for x, y in zip(ha, hb))
        hmax = max(abs(x) for x in ha)
        row = {"id": r["id"], "tokens": len(ids), "value_equal": values[0] == values[1],
               "meta_numbers": n_num, "max_meta_diff": md, "at": where,
               "max_hidden_abs_diff": hd, "max_hidden_abs": hmax,
               "max_hidden_rel_diff": hd / hmax if hmax else 0.0}
        print(json.dumps(row), flush=True)
        summary["records"] += 1
        summary["values_equal"] += row["value_equal"]
        for k in ("max_meta_diff", "max_hidden_abs_diff", "max_hidden_rel_diff"):
            summary[k] = max(summary[k], row[k])
    print(json.dumps(summary))
    return 0 if summary["values_equal"] == summary["records"] else 1


if __name__ == "__main__":
    sys.exit(main())
