"""python -m deg.evaluate --records R.jsonl --split test --system deg --system baseline --out DIR

Systems: `deg` (deg.fill with --ckpt/--model), `baseline` (deg.baseline:
llama.cpp grammar-constrained JSON, --model GGUF), `oracle` (echoes the gold,
checks the harness). Writes DIR/report.md, DIR/results.json and, with
matplotlib installed, DIR/reliability_<system>_<kind>.png.
"""
import argparse
import json
import os
import sys

from ..datagen import read_jsonl
from . import determinism, evaluate, oracle_system
from .report import markdown, plot_reliability


def make_system(name, args, records):
    if name == "oracle":
        return oracle_system(records)
    if name == "baseline":
        from ..baseline import BaselineSystem
        return BaselineSystem(args.model, n_threads=args.threads, n_ctx=args.n_ctx)
    if name == "deg":
        import tempfile
        import deg
        if not hasattr(deg, "fill"):
            raise SystemExit("deg.fill is not available in this build (fill runtime, issue 4)")
        ckpt_dir = args.ckpt
        if ckpt_dir is None:  # untrained heads: tokens, latency, validity only
            ckpt_dir = deg.create_random_checkpoint(args.model or deg.default_model_path(),
                                                    tempfile.mkdtemp(prefix="deg-random-ckpt-"))
            args.notes.append("deg ran a RANDOM-heads checkpoint (no --ckpt): its accuracy "
                              "and ECE mean nothing; validity, tokens and latency do")
        ckpt = deg.load(ckpt_dir, model_path=args.model)

        def run(context, schema):
            return deg.fill(context, schema, model=ckpt)
        return run
    raise SystemExit(f"unknown system {name!r} (deg, baseline, oracle)")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m deg.evaluate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", required=True)
    ap.add_argument("--split", default="test")
    ap.add_argument("--system", action="append", default=None)
    ap.add_argument("--model", default=None, help="GGUF model (deg and baseline)")
    ap.add_argument("--ckpt", default=None, help="deg checkpoint directory")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--bins", type=int, default=10, help="ECE bins (equal width)")
    ap.add_argument("--determinism", type=int, default=0,
                    help="records for the determinism checks (10 repeats, 5 permutations, split)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    recs = read_jsonl(a.records, a.split)[:a.limit]
    if not recs:
        raise SystemExit(f"no {a.split!r} records in {a.records}")
    os.makedirs(a.out, exist_ok=True)
    a.notes = []
    results = []
    for name in a.system or ["oracle"]:
        system = make_system(name, a, recs)
        try:
            from tqdm import tqdm
            bar = tqdm(total=len(recs), desc=name, file=sys.stderr)
            prog = lambda k: bar.update(1)  # noqa: E731
        except ImportError:
            bar, prog = None, None
        res = evaluate(recs, system, name=name, n_bins=a.bins, progress=prog)
        if bar:
            bar.close()
        if a.determinism:
            res["determinism"] = determinism(recs[:a.determinism], system)
        results.append(res)
    plots, why = plot_reliability(results, a.out)
    notes = [f"records: {a.records} split {a.split}"] + a.notes + ([why] if why else [])
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(markdown(results, notes=notes))
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(markdown(results, notes=notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
