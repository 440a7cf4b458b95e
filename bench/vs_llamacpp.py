#!/usr/bin/env python3
"""deg against llama.cpp on the same GGUF and thread count, in one run.

Runs deg's bench_runtime (native weights by default) and llama.cpp's
llama-bench / llama-batched-bench alternately, `--runs` times each, and prints
the median of each figure and the ratio deg / llama.cpp:

  prefill P tokens [tok/s]   for each P in --prefill (default 512,4096)
  decode batch 1 [tok/s]     after a --context-token prompt (default 512)
  decode batch 8 [tok/s]     8 sequences decoded together (tokens of all 8)
  resident after load [MiB]  deg: RSS growth over load + a 1-token forward;
                             shown against the GGUF file size

llama.cpp: --llama-bin DIR (holding llama-bench and llama-batched-bench),
else $LLAMA_CPP_BIN, else on PATH, else built from the llama-cpp-python
sdist on PyPI (it vendors llama.cpp; `pip download` + CMake, CPU only) into
--cache (default ~/.cache/deg/llama.cpp).  deg: --deg-bench (default
build/bench/bench_runtime).

Not a test: timings mean something only on an otherwise idle machine (the
load average of each run is printed). Example:

  OMP_WAIT_POLICY=passive python3 bench/vs_llamacpp.py \\
      --model ~/.cache/deg/models/SmolLM2-135M-Instruct.Q4_1.gguf --threads 2
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile


def sh(cmd, **kw):
    print("+ " + " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE, **kw).stdout


def find_llama(args):
    for d in [args.llama_bin, os.environ.get("LLAMA_CPP_BIN")]:
        if d and os.path.exists(os.path.join(d, "llama-bench")):
            return d
    exe = shutil.which("llama-bench")
    if exe and shutil.which("llama-batched-bench"):
        return os.path.dirname(exe)
    cache = os.path.expanduser(args.cache)
    built = os.path.join(cache, "build", "bin")
    if os.path.exists(os.path.join(built, "llama-batched-bench")):
        return built
    os.makedirs(cache, exist_ok=True)
    sdists = glob.glob(os.path.join(cache, "llama_cpp_python-*.tar.gz"))
    if not sdists:
        sh([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
            "-d", cache, "llama-cpp-python"])
        sdists = glob.glob(os.path.join(cache, "llama_cpp_python-*.tar.gz"))
    src = os.path.join(cache, "src")
    if not os.path.isdir(src):
        with tarfile.open(sorted(sdists)[-1]) as t:
            t.extractall(src, filter="data")
    top = glob.glob(os.path.join(src, "llama_cpp_python-*", "vendor", "llama.cpp"))[0]
    bdir = os.path.join(cache, "build")
    sh(["cmake", "-S", top, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON",
        "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_SERVER=OFF",
        "-DBUILD_SHARED_LIBS=OFF"])
    sh(["cmake", "--build", bdir, "-j", str(args.jobs), "--target", "llama-bench",
        "llama-batched-bench"])
    return built


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_deg(args, prompt, batch):
    out = sh([args.deg_bench, "--model", args.model, "--prompt", str(prompt), "--decode",
              str(args.decode), "--batch", str(batch), "--threads", str(args.threads),
              "--reps", "1", "--weights", args.weights])
    return json.loads([l for l in out.splitlines() if l.startswith("{")][-1])


def run_llama_prefill(bindir, args, prompt):
    out = sh([os.path.join(bindir, "llama-bench"), "-m", args.model, "-t", str(args.threads),
              "-p", str(prompt), "-n", "0", "-r", "1", "-o", "json"])
    return json.loads(out)[0]["avg_ts"]


def run_llama_decode(bindir, args, batch):
    ctx = (args.context + args.decode) * batch + 64
    out = sh([os.path.join(bindir, "llama-batched-bench"), "-m", args.model, "-t",
              str(args.threads), "-c", str(ctx), "-b", "2048", "-ub", "512",
              "-npp", str(args.context), "-ntg", str(args.decode), "-npl", str(batch),
              "--output-format", "jsonl"])
    row = [json.loads(l) for l in out.splitlines() if l.startswith("{")][-1]
    return row["speed_tg"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prefill", default="512,4096", help="comma-separated prompt lengths")
    ap.add_argument("--context", type=int, default=512, help="prompt before decode")
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--weights", default="native", choices=["native", "f32"])
    ap.add_argument("--deg-bench", default="build/bench/bench_runtime")
    ap.add_argument("--llama-bin")
    ap.add_argument("--cache", default="~/.cache/deg/llama.cpp")
    ap.add_argument("--jobs", type=int, default=2, help="build parallelism for llama.cpp")
    args = ap.parse_args()
    bindir = find_llama(args)
    prefills = [int(p) for p in args.prefill.split(",") if p]
    rows = {}  # measure -> (deg values, llama values)

    def add(name, d, l):
        rows.setdefault(name, ([], []))
        rows[name][0].append(d)
        rows[name][1].append(l)

    loads, rss = [], []
    for r in range(args.runs):
        deg_first = r % 2 == 0  # alternate who goes first
        for p in prefills:
            pair = {}
            for who in (["deg", "llama"] if deg_first else ["llama", "deg"]):
                loads.append(loadavg())
                if who == "deg":
                    j = run_deg(args, p, 1)
                    pair[who] = j["prefill_tok_s"]
                    rss.append(j["load_rss_mib"])
                else:
                    pair[who] = run_llama_prefill(bindir, args, p)
            add(f"prefill {p} tokens [tok/s]", pair["deg"], pair["llama"])
        for b in (1, 8):
            pair = {}
            for who in (["deg", "llama"] if deg_first else ["llama", "deg"]):
                loads.append(loadavg())
                if who == "deg":
                    j = run_deg(args, args.context, b)
                    pair[who] = j["decode_b1_tok_s"] if b == 1 else j["decode_bn_tok_s"]
                else:
                    pair[who] = run_llama_decode(bindir, args, b)
            add(f"decode batch {b} [tok/s]", pair["deg"], pair["llama"])

    size_mib = os.path.getsize(args.model) / 1048576.0
    print(f"model {args.model} ({size_mib:.1f} MiB), threads {args.threads}, "
          f"deg weights {args.weights}, {args.runs} alternating runs, "
          f"load average {min(loads):.2f}..{max(loads):.2f}")
    print(f"{'measure':32s} {'deg':>10s} {'llama.cpp':>10s} {'ratio':>7s}")
    summary = {}
    for name, (d, l) in rows.items():
        md, ml = statistics.median(d), statistics.median(l)
        summary[name] = {"deg": md, "llama_cpp": ml, "ratio": md / ml}
        print(f"{name:32s} {md:10.1f} {ml:10.1f} {md / ml:7.2f}")
    mr = statistics.median(rss)
    print(f"{'resident after load [MiB]':32s} {mr:10.1f} {'file':>5s} {size_mib:4.1f} "
          f"{mr / size_mib:7.2f}")
    summary["resident_after_load_mib"] = mr
    summary["file_mib"] = size_mib
    print(json.dumps({"bench": "vs_llamacpp", "threads": args.threads, "runs": args.runs,
                      "weights": args.weights, "figures": summary}))


if __name__ == "__main__":
    main()
