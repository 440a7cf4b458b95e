#!/usr/bin/env python3
"""LoRA training step cost (deg.train --lora-rank, deg/train/lora.py) against the forward-only feature extraction of the same records.

  python bench/bench_train_lora.py --data /tmp/dg2/records.jsonl \\
      [--ckpt checkpoints/smollm2-135m-v4] [--records 4] [--split train] [--rank 8] \\
      [--threads 1] [--checkpointing on|off] [--seed 0]

For each of --records records (a stratified sample of --split, as deg.train
--max-records picks them):
  forward  deg_features_extract with tokens (what deg.train traces once per
           record: trunk prefill + every fork of the record, no gradient);
  LoRA     one record's lora.record_loss_grad with fresh rank --rank adapters
           (B = 0; the cost does not depend on the values): trunk prefill, tape
           forward of the forks that have head examples, head losses, tape
           backward into the adapters; split into prefill / fork forward /
           heads / backward.
CPU seconds are time.process_time (all threads of the process); with
--threads 1 they are the work, whatever else runs on the machine (wall time
is printed too, and is meaningless under load). records/s and fork tokens/s
are per CPU second; the ratio is forward records/s over LoRA records/s (how
many times a LoRA step costs the forward pass). Peak RSS is the process's
ru_maxrss. Not a test; prints a table and a JSON line.
"""
import argparse
import json
import os
import resource
import sys
import time

import numpy as np

import deg
from deg.train import data, features, lora
from deg.train.cli import weights_of
from deg.train.engine import Heads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--ckpt", default=os.path.join(ROOT, "checkpoints", "smollm2-135m-v4"))
    p.add_argument("--model", help="backbone path (default: the checkpoint's)")
    p.add_argument("--records", type=int, default=4)
    p.add_argument("--split", default="train")
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--alpha", type=float, default=16.0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--checkpointing", choices=("on", "off"), default="on")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    from deg._native import lib
    lib.deg_set_num_threads(a.threads)
    by_split, _, _ = data.read_records(a.data)
    recs = []
    for rec in data.subsample(by_split[a.split], None, a.seed):
        try:
            recs.append((rec, data.check_record(rec)))
        except data.BadRecord:
            continue
        if len(recs) == a.records:
            break
    ck = deg.load(a.ckpt, model_path=a.model) if a.model else deg.load(a.ckpt)
    load1 = os.getloadavg()[0]
    fwd = {"cpu": 0.0, "wall": 0.0, "fork_tokens": 0, "trunk_tokens": 0, "forks": 0}
    bases = []
    for rec, plan in recs:
        t0, w0 = time.process_time(), time.perf_counter()
        f = features.extract(ck, rec, tokens=True)
        fwd["cpu"] += time.process_time() - t0
        fwd["wall"] += time.perf_counter() - w0
        fwd["fork_tokens"] += sum(len(k["ids"]) for k in f.forks)
        fwd["forks"] += len(f.forks)
        fwd["trunk_tokens"] += f.n_trunk_tokens
        bases.append(f)
    lora.add(ck, a.rank, a.alpha, lora.parse_targets("all"), "kind", a.seed)
    ad = lora.Adapters(ck)
    heads = Heads(ck)
    times = {}
    wall = 0.0
    per_record = []
    for (rec, plan), base in zip(recs, bases):
        w = weights_of(data.examples_of(rec, plan, base))
        t = {}
        w0 = time.perf_counter()
        lora.record_loss_grad(heads, ad, rec, plan, base, None, w, a.checkpointing == "on", t)
        wall += time.perf_counter() - w0
        per_record.append({k: round(v, 3) for k, v in t.items()})
        for k, v in t.items():
            times[k] = times.get(k, 0) + v
    n = len(recs)
    lcpu = sum(times.get(k, 0.0) for k in ("prefill", "forward", "heads", "backward"))
    out = {
        "records": n, "threads": a.threads, "rank": a.rank, "checkpointing": a.checkpointing,
        "adapter_params": ad.n, "load1_at_start": round(load1, 1),
        "forward_cpu_s": round(fwd["cpu"], 2), "forward_wall_s": round(fwd["wall"], 2),
        "forward_records_per_cpu_s": round(n / fwd["cpu"], 4),
        "forward_fork_tokens": fwd["fork_tokens"], "forward_forks": fwd["forks"],
        "forward_fork_tokens_per_cpu_s": round(fwd["fork_tokens"] / fwd["cpu"], 1),
        "trunk_tokens": fwd["trunk_tokens"],
        "lora_cpu_s": round(lcpu, 2), "lora_wall_s": round(wall, 2),
        "lora_records_per_cpu_s": round(n / lcpu, 4),
        "lora_fork_tokens": times.get("tokens", 0), "lora_forks": times.get("rows", 0),
        "lora_fork_tokens_per_cpu_s": round(times.get("tokens", 0) / lcpu, 1),
        "lora_split_cpu_s": {k: round(times.get(k, 0.0), 2)
                             for k in ("prefill", "forward", "heads", "backward")},
        "lora_cost_over_forward": round(lcpu / fwd["cpu"], 2),
        "per_record": per_record,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(f"{n} records ({a.split}), {a.threads} thread(s), load {load1:.1f} at start")
    print(f"forward-only trace : {out['forward_records_per_cpu_s']:.4f} records/CPU-s, "
          f"{out['forward_fork_tokens_per_cpu_s']:.0f} fork tokens/CPU-s "
          f"({fwd['fork_tokens']} fork tokens in {fwd['forks']} forks, {fwd['cpu']:.1f} CPU-s)")
    print(f"LoRA step (rank {a.rank}): {out['lora_records_per_cpu_s']:.4f} records/CPU-s, "
          f"{out['lora_fork_tokens_per_cpu_s']:.0f} fork tokens/CPU-s "
          f"({out['lora_fork_tokens']} fork tokens in {out['lora_forks']} forks, {lcpu:.1f} CPU-s)")
    s = out["lora_split_cpu_s"]
    print(f"LoRA CPU-s split   : prefill {s['prefill']}, fork forward {s['forward']}, heads "
          f"{s['heads']}, backward {s['backward']}")
    print(f"LoRA step / forward: {out['lora_cost_over_forward']}x CPU; peak RSS "
          f"{out['peak_rss_mb']} MB")
    print(json.dumps(out))
    ck.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
