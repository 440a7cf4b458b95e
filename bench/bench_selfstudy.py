#!/usr/bin/env python3
"""Self-study speed: s/conversation sequential (gen-batch 1) vs batched
(gen-batch 4, 8), split into generation (bot A + bot B lockstep decodes),
teacher pass and training step (one packed forward/backward and Adam step
per --accum conversations, as `deg cartridge train`; --no-pack: one backward
per conversation).

  PYTHONPATH=bindings/python python bench/bench_selfstudy.py \\
      [--model M] [--corpus FILE] [--conversations 8] [--batches 1,4,8]

Not a test; run on an otherwise idle machine. Prints wall seconds and CPU
seconds (the process, all threads: the stable figure on a shared machine) per
conversation for each batch size, and a JSON line at the end.
"""
import argparse
import json
import os
import subprocess
import time

import deg
from deg import selfstudy as cs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.environ.get("DEG_MODEL") or None)
    ap.add_argument("--corpus", default=None, help="default: the zlib FAQ from /usr/share/doc")
    ap.add_argument("--conversations", type=int, default=8)
    ap.add_argument("--batches", default="1,4,8")
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--p", type=int, default=256)
    ap.add_argument("--chunk-min", type=int, default=192)
    ap.add_argument("--chunk-max", type=int, default=384)
    ap.add_argument("--max-q", type=int, default=40)
    ap.add_argument("--max-a", type=int, default=96)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--no-pack", action="store_true",
                    help="per-conversation backwards instead of one packed backward")
    a = ap.parse_args()
    if a.threads:
        deg.set_num_threads(a.threads)
    model = deg.load_model(a.model or deg.default_model_path())
    if a.corpus is None:
        a.corpus = "/tmp/deg-bench-zlib-faq.txt"
        with open(a.corpus, "w") as f:
            f.write(subprocess.run(["zcat", "/usr/share/doc/zlib1g-dev/FAQ.gz"],
                                   capture_output=True, text=True, check=True).stdout)
    corpus = cs.load_corpus(model, [a.corpus])
    rows = []
    for gb in [int(x) for x in a.batches.split(",")]:
        study = cs.SelfStudy(model, corpus, seed=1, chunk_min=a.chunk_min,
                             chunk_max=a.chunk_max, max_q=a.max_q, max_a=a.max_a)
        convs = []
        while len(convs) < a.conversations:
            convs += study.generate(min(gb, a.conversations - len(convs)))
        cart = deg.Cartridge.from_corpus(model, corpus.text, a.p)
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, len(convs), a.accum):
            cart.zero_grads()
            if a.no_pack:
                cs.group_backward(cart, convs[i:i + a.accum])
            else:
                cs.packed_backward(cart, convs[i:i + a.accum])
            cart.adam_step()
        train, train_cpu = time.perf_counter() - t0, time.process_time() - c0
        n = len(convs)
        tm = study.timing
        r = {"gen_batch": gb, "conversations": n,
             "answer_tokens": sum(c.n_supervised for c in convs),
             "loadavg_1min": os.getloadavg()[0]}
        for unit, g, t, tr in (("s", tm["generate"], tm["teacher"], train),
                               ("cpu_s", tm["generate_cpu"], tm["teacher_cpu"], train_cpu)):
            r[f"generate_{unit}_per_conv"] = g / n
            r[f"teacher_{unit}_per_conv"] = t / n
            r[f"train_{unit}_per_conv"] = tr / n
            r[f"{unit}_per_conv"] = (g + t + tr) / n
        rows.append(r)
        for unit, name in (("s", "s"), ("cpu_s", "CPU-s")):
            print(f"gen-batch {gb}: {r[f'{unit}_per_conv']:.2f} {name}/conversation "
                  f"(generation {r[f'generate_{unit}_per_conv']:.2f}, teacher "
                  f"{r[f'teacher_{unit}_per_conv']:.2f}, training "
                  f"{r[f'train_{unit}_per_conv']:.2f}; {r['answer_tokens']} answer tokens; "
                  f"load {r['loadavg_1min']:.1f})", flush=True)
    load = os.getloadavg()[0]
    wait = os.environ.get("OMP_WAIT_POLICY", "(unset)")
    print(f"load average {load:.2f} (1 min), OMP_WAIT_POLICY {wait}")
    print(json.dumps({"bench": "selfstudy", "model": model.path, "loadavg_1min": load,
                      "omp_wait_policy": wait, "pack": not a.no_pack, "rows": rows}))


if __name__ == "__main__":
    main()
