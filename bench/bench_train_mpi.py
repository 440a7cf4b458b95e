#!/usr/bin/env python3
"""Data-parallel deg.train speed: records/s of one process vs `mpirun -np N`, for
feature extraction (the backbone traces, into a fresh cache each) and for head
training (epochs over the warm cache), with a check that both runs wrote the
same heads.safetensors bitwise.

  python bench/bench_train_mpi.py --data /tmp/deg-data/records.jsonl \\
      [--model M] [--ranks 2] [--max-records 64] [--max-val-records 16] \\
      [--epochs 2] [--batch 8] [--threads 1] [--work DIR] [--mpirun-args="..."]

Not a test; run on an otherwise idle machine with at least --ranks x --threads
cores (each rank runs --threads libdeg threads, like the single process).
Feature records/s = records traced (train + val) / wall seconds of the
`--features-only` run (process start included); training records/s = train
records x epochs / the trainer's own train_seconds (train-report.json: the
optimizer loop and the per-epoch val loss). Prints a table and a JSON line.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time


def run(cmd, ranks, mpirun_args):
    """Wall seconds of `python -m deg.train CMD` (under mpirun when ranks > 1)."""
    argv = [sys.executable, "-m", "deg.train", *cmd]
    env = dict(os.environ)
    if ranks > 1:
        argv = ["mpirun", "-np", str(ranks), *shlex.split(mpirun_args), *argv]
        if os.geteuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    t0 = time.perf_counter()
    res = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        sys.exit(f"bench_train_mpi: {' '.join(argv)} exited {res.returncode}:\n{res.stderr}")
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="datagen records (JSONL)")
    ap.add_argument("--model", default=os.environ.get("DEG_MODEL"),
                    help="backbone (default $DEG_MODEL, else the default model)")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--max-records", type=int, default=64)
    ap.add_argument("--max-val-records", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1, help="libdeg threads per process")
    ap.add_argument("--work", help="work directory (default: a temporary one, removed)")
    ap.add_argument("--mpirun-args", default="",
                    help="extra mpirun options (one string; write --mpirun-args=--oversubscribe)")
    a = ap.parse_args()
    if a.model is None:
        import deg
        a.model = str(deg.default_model_path())
    work = a.work or tempfile.mkdtemp(prefix="deg-bench-mpi-")
    os.makedirs(work, exist_ok=True)
    common = ["--data", a.data, "--model", a.model, "--max-records", str(a.max_records),
              "--max-val-records", str(a.max_val_records), "--epochs", str(a.epochs),
              "--batch", str(a.batch), "--threads", str(a.threads), "--variants", "0",
              "--no-progress"]
    rows = {}
    try:
        for name, n in (("single", 1), (f"mpi{a.ranks}", a.ranks)):
            out, cache = os.path.join(work, name), os.path.join(work, name + "-cache")
            for d in (out, cache):
                shutil.rmtree(d, ignore_errors=True)
            feat_wall = run(common + ["--out", out, "--cache", cache, "--features-only"], n,
                            a.mpirun_args)
            with open(os.path.join(out, "train-report.json")) as fh:
                rep = json.load(fh)
            recs = rep["records"]["train_used"] + rep["records"]["val_used"]
            shutil.rmtree(out)
            run(common + ["--out", out, "--cache", cache], n, a.mpirun_args)
            with open(os.path.join(out, "train-report.json")) as fh:
                rep = json.load(fh)
            with open(os.path.join(out, "heads.safetensors"), "rb") as fh:
                heads = fh.read()
            train = rep["records"]["train_used"]
            rows[name] = {"ranks": n, "feature_records": recs, "feature_wall_s": feat_wall,
                          "feature_records_per_s": recs / feat_wall,
                          "train_records": train, "train_s": rep["train_seconds"],
                          "train_records_per_s": train * a.epochs / max(rep["train_seconds"], 1e-9),
                          "heads": heads}
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    same = rows["single"].pop("heads") == rows[f"mpi{a.ranks}"].pop("heads")
    for name, r in rows.items():
        print(f"{name:>8}: features {r['feature_records_per_s']:.2f} records/s "
              f"({r['feature_records']} in {r['feature_wall_s']:.1f} s), training "
              f"{r['train_records_per_s']:.1f} records/s ({r['train_records']} x {a.epochs} "
              f"epochs in {r['train_s']:.1f} s)")
    print(f"heads.safetensors bitwise equal: {same}; load average {os.getloadavg()[0]:.2f}")
    print(json.dumps({"bench": "train_mpi", "model": a.model, "threads": a.threads,
                      "batch": a.batch, "epochs": a.epochs, "bitwise_equal": same,
                      "loadavg_1min": os.getloadavg()[0], "rows": rows}))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
