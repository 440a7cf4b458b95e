#!/usr/bin/env python3
"""deg against llama.cpp on the same GGUF and thread count, in one run.

Runs deg's bench_runtime (each weight mode of --weights: native = 8-bit
activations, libdeg's default; native-f32act = native weights with f32
activations; f32 = dequantized at load) and
llama.cpp's llama-bench (and llama-batched-bench for decode at batch 8, when
present) alternately, `--runs` times each (the order rotates every run), and
prints the median of each figure for each engine and the ratios deg /
llama.cpp:

  prefill P tokens [tok/s]   for each P in --prefill (default 512,4096,32768;
                             past SmolLM2's 8,192 trained positions the
                             figure is speed only: RoPE runs on, both engines)
  decode batch 1 [tok/s]     D = --decode tokens (default 128: llama-bench's
                             tg128) after a --context-token prompt (default
                             512; llama-bench -d, its depth)
  decode batch 8 [tok/s]     8 sequences decoded together (tokens of all 8),
                             after the same context (llama-batched-bench)
  resident after load [MiB]  deg: RSS growth over load + a 1-token forward;
                             shown against the GGUF file size

Same model file, same thread count (--threads), llama.cpp on its defaults
otherwise (CPU build, its flash-attention setting as llama-bench reports it).

Long prefills (32768: llama-bench sizes its context to -p + -n, deg's trunk has
no length cap; both warn past the 8,192 trained positions and run on) take
minutes: time grows as a P + b P^2 (the attention). The prefills run shortest
first; before each one over 4x the longest measured so far, the script fits a
and b per engine on the two longest measured lengths and prints the estimate
for that length and for all --runs. Every benchmark command is bounded by
--timeout seconds (default 3600): a figure that times out is reported as
missing and not retried in later runs.

Where llama.cpp comes from: --llama-bin DIR or $DEG_LLAMA_CPP_BIN, a directory
holding llama-bench (a CMake build dir's bin/ or the build dir itself). Without
one the script says how to get one and exits 2; `--build-llama DIR` builds it
there from the llama-cpp-python sdist on PyPI (it vendors llama.cpp; `pip
download` + CMake, CPU only, GGML_NATIVE) -- keep DIR outside the repository;
the build takes an hour or more at -j 1 on a busy 2-core machine.
deg: --deg-bench (default build/bench/bench_runtime, else build-tests/bench/bench_runtime); --no-llama measures
deg alone.

Not a test: timings mean something only on an otherwise idle machine (the
load average around each run is printed). Example:

  OMP_WAIT_POLICY=passive DEG_LLAMA_CPP_BIN=/work/llamacpp/build/bin \\
    python3 bench/vs_llamacpp.py \\
      --model ~/.cache/deg/models/SmolLM2-135M-Instruct.Q4_1.gguf --threads 2
Quick end-to-end check (meaningless numbers):
  ... --runs 1 --prefill 64 --context 64 --decode 8
bench/README.md keeps the measured tables.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tarfile

LLAMA_BENCH, LLAMA_BATCHED = "llama-bench", "llama-batched-bench"


def die(msg):
    print("vs_llamacpp: " + msg, file=sys.stderr)
    sys.exit(2)


TIMEOUT_S = 3600.0  # --timeout


def sh(cmd, timeout=None, **kw):
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE, timeout=timeout,
                          **kw).stdout


def llama_dir(d):
    """d, or d/bin, when it holds llama-bench; else None."""
    for c in (d, os.path.join(d, "bin")):
        if os.access(os.path.join(c, LLAMA_BENCH), os.X_OK):
            return c
    return None


def build_llama(dest, jobs):
    """llama-bench and llama-batched-bench built under dest from the
    llama-cpp-python sdist (downloaded with pip). Returns the bin dir."""
    dest = os.path.abspath(os.path.expanduser(dest))
    os.makedirs(dest, exist_ok=True)
    sdists = glob.glob(os.path.join(dest, "llama_cpp_python-*.tar.gz"))
    if not sdists:
        # --no-binary for this package only: with ":all:" pip also builds the
        # sdist's build requirements (CMake itself) from source.
        sh([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
            "llama-cpp-python", "-d", dest, "llama-cpp-python"])
        sdists = glob.glob(os.path.join(dest, "llama_cpp_python-*.tar.gz"))
    sdist = sorted(sdists)[-1]
    top = sdist[: -len(".tar.gz")]
    if not os.path.isdir(top):
        with tarfile.open(sdist) as t:
            t.extractall(dest, filter="data")
    src = os.path.join(top, "vendor", "llama.cpp")
    bdir = os.path.join(dest, "build")
    sh(["cmake", "-S", src, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON",
        "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_APP=OFF",
        "-DBUILD_SHARED_LIBS=OFF"])
    sh(["nice", "-n", "19", "cmake", "--build", bdir, "-j", str(jobs), "--target",
        LLAMA_BENCH, LLAMA_BATCHED])
    return llama_dir(bdir)


def find_llama(args):
    if args.build_llama:
        return build_llama(args.build_llama, args.jobs)
    for src, d in (("--llama-bin", args.llama_bin),
                   ("$DEG_LLAMA_CPP_BIN", os.environ.get("DEG_LLAMA_CPP_BIN"))):
        if d:
            found = llama_dir(os.path.expanduser(d))
            if not found:
                die(f"{src} = {d}: no executable {LLAMA_BENCH} there (nor in {d}/bin)")
            return found
    die("llama.cpp's llama-bench not found: pass --llama-bin DIR or set DEG_LLAMA_CPP_BIN=DIR "
        "(a llama.cpp build's bin/), or build one outside the repository with --build-llama "
        "DIR (llama-cpp-python sdist + CMake, CPU only; an hour or more on a busy machine), "
        "or measure deg alone with --no-llama")


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_deg(args, weights, prompt, decode, batch):
    """bench_runtime's JSON; decode 0: the prefill alone."""
    out = sh([args.deg_bench, "--model", args.model, "--prompt", str(prompt), "--decode",
              str(decode), "--batch", str(batch), "--threads", str(args.threads), "--reps", "1",
              "--weights", weights, "--no-reference"], timeout=TIMEOUT_S)
    return json.loads([l for l in out.splitlines() if l.startswith("{")][-1])


def run_llama_bench(bindir, args, extra):
    out = sh([os.path.join(bindir, LLAMA_BENCH), "-m", args.model, "-t", str(args.threads),
              "-r", "1", "-o", "json"] + extra, timeout=TIMEOUT_S)
    rows = json.loads(out)
    return rows[-1]


def fit_prefill(points):
    """(a, b) of seconds(P) = a P + b P^2 through the two longest measured
    (P, seconds) points (b >= 0; one point: b = 0). None without points."""
    pts = sorted(points.items())
    if not pts:
        return None
    if len(pts) == 1:
        (p, t), = pts
        return t / p, 0.0
    (p1, t1), (p2, t2) = pts[-2:]
    b = max(0.0, (t2 / p2 - t1 / p1) / (p2 - p1))
    return t2 / p2 - b * p2, b


def estimate(p, secs, runs_left):
    """Print the estimated seconds of a p-token prefill per engine (from the
    measured prefills in secs: engine -> {P: seconds}) and of the runs left."""
    per, total = [], 0.0
    for who, pts in sorted(secs.items()):
        ab = fit_prefill(pts)
        if ab:
            t = ab[0] * p + ab[1] * p * p
            per.append(f"{who} ~{t / 60:.1f} min")
            total += t
    if per:
        print(f"vs_llamacpp: estimate for the {p}-token prefill (a P + b P^2 through the two "
              f"longest measured), engines measured so far: {', '.join(per)}; theirs ~"
              f"{total * runs_left / 60:.0f} min over the {runs_left} run(s) (each command "
              f"capped at {TIMEOUT_S:.0f} s, --timeout)", file=sys.stderr, flush=True)


def run_llama_batched(bindir, args, batch):
    ctx = (args.context + args.decode) * batch + 64
    out = sh([os.path.join(bindir, LLAMA_BATCHED), "-m", args.model, "-t", str(args.threads),
              "-c", str(ctx), "-b", "2048", "-ub", "512", "-npp", str(args.context),
              "-ntg", str(args.decode), "-npl", str(batch), "--output-format", "jsonl"],
             stderr=subprocess.DEVNULL)
    row = [json.loads(l) for l in out.splitlines() if l.startswith("{")][-1]
    return row["speed_tg"]


WEIGHT_MODES = ("native", "native-f32act", "f32")


def bounded(what, fn, notes):
    """fn(), or None when it ran past --timeout (what is then skipped in
    later runs)."""
    if what in notes["timed_out"]:
        return None
    try:
        return fn()
    except subprocess.TimeoutExpired:
        print(f"vs_llamacpp: {what}: over --timeout {TIMEOUT_S:.0f} s, stopped; reported as "
              "missing", file=sys.stderr, flush=True)
        notes["timed_out"].add(what)
        return None


def one_run(args, bindir, order, prefills, add, notes, runs_left):
    """One measurement of every figure for every engine, engines in `order`;
    prefills shortest first, each engine's seconds kept in notes["secs"] for
    the estimates."""
    batched = bindir and os.access(os.path.join(bindir, LLAMA_BATCHED), os.X_OK)
    secs = notes["secs"]
    for who in order:
        notes["load"].append(loadavg())
        done = secs.setdefault(who, {})
        if who.startswith("deg"):
            w = who.split()[1]
            j = bounded(f"{who} decode", lambda: run_deg(args, w, args.context, args.decode, 8),
                        notes)
            if j:
                add(f"decode batch 1 [tok/s]", who, j["decode_b1_tok_s"])
                add(f"decode batch 8 [tok/s]", who, j["decode_bn_tok_s"])
                notes.setdefault("rss " + w, []).append(j["load_rss_mib"])
                notes["kernel"] = j.get("qkernel", "?")
            for p in prefills:
                if done and p > 4 * max(done) and runs_left == args.runs:
                    estimate(p, secs, runs_left)
                jp = j if j and p == args.context else bounded(
                    f"{who} prefill {p}", lambda: run_deg(args, w, p, 0, 1), notes)
                if jp:
                    add(f"prefill {p} tokens [tok/s]", who, jp["prefill_tok_s"])
                    done[p] = p / jp["prefill_tok_s"]
        else:
            for p in prefills:
                if done and p > 4 * max(done) and runs_left == args.runs:
                    estimate(p, secs, runs_left)
                r = bounded(f"{who} prefill {p}",
                            lambda: run_llama_bench(bindir, args, ["-p", str(p), "-n", "0"]), notes)
                if r:
                    add(f"prefill {p} tokens [tok/s]", who, r["avg_ts"])
                    done[p] = p / r["avg_ts"]
                    notes["llama"] = {k: r.get(k) for k in ("build_commit", "cpu_info",
                                                             "flash_attn", "type_k", "n_batch",
                                                             "n_ubatch")}
            r = bounded(f"{who} decode", lambda: run_llama_bench(
                bindir, args, ["-p", "0", "-n", str(args.decode), "-d", str(args.context)]), notes)
            if r:
                add(f"decode batch 1 [tok/s]", who, r["avg_ts"])
            if batched:
                v = bounded(f"{who} decode batch 8", lambda: run_llama_batched(bindir, args, 8),
                            notes)
                if v is not None:
                    add(f"decode batch 8 [tok/s]", who, v)
        notes["load"].append(loadavg())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prefill", default="512,4096,32768",
                    help="comma-separated prompt lengths")
    ap.add_argument("--context", type=int, default=512, help="prompt before decode")
    ap.add_argument("--decode", type=int, default=128)
    ap.add_argument("--weights", default=",".join(WEIGHT_MODES),
                    help="comma-separated deg weight modes (" + ", ".join(WEIGHT_MODES)
                    + "; native is libdeg's default)")
    ap.add_argument("--deg-bench", help="bench_runtime to run (default: build/bench/bench_runtime, "
                    "else build-tests/bench/bench_runtime, which ./scripts/run-tests builds)")
    ap.add_argument("--llama-bin", help="dir holding llama-bench (else $DEG_LLAMA_CPP_BIN)")
    ap.add_argument("--build-llama", metavar="DIR",
                    help="build llama-bench under DIR from the llama-cpp-python sdist first")
    ap.add_argument("--jobs", type=int, default=1, help="build parallelism for llama.cpp")
    ap.add_argument("--no-llama", action="store_true", help="deg alone")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S,
                    help="seconds any one benchmark command may take (then: missing)")
    args = ap.parse_args()
    globals()["TIMEOUT_S"] = args.timeout
    if not os.path.isfile(args.model):
        die(f"--model {args.model}: no such file")
    if args.deg_bench is None:
        args.deg_bench = next((p for p in ("build/bench/bench_runtime",
                                           "build-tests/bench/bench_runtime")
                               if os.access(p, os.X_OK)), "build/bench/bench_runtime")
    if not os.access(args.deg_bench, os.X_OK):
        die(f"--deg-bench {args.deg_bench}: not an executable (build deg first: "
            "meson setup build && ninja -C build)")
    if args.runs < 1 or args.decode < 2 or args.context < 1 or args.timeout <= 0:
        die("--runs >= 1, --decode >= 2, --context >= 1, --timeout > 0")
    modes = [w for w in args.weights.split(",") if w]
    bad = [w for w in modes if w not in WEIGHT_MODES]
    if bad or not modes:
        die(f"--weights {args.weights}: expected some of {', '.join(WEIGHT_MODES)}")
    bindir = None if args.no_llama else find_llama(args)
    degs = ["deg " + w for w in modes]
    engines = degs + ([] if args.no_llama else ["llama.cpp"])
    try:
        prefills = sorted({int(p) for p in args.prefill.split(",") if p})
    except ValueError:
        die(f"--prefill {args.prefill}: expected comma-separated token counts")
    if not prefills or prefills[0] < 1:
        die(f"--prefill {args.prefill}: expected token counts >= 1")
    rows = {}  # measure -> engine -> values
    notes = {"load": [], "secs": {}, "timed_out": set()}

    def add(name, who, v):
        rows.setdefault(name, {}).setdefault(who, []).append(v)

    for r in range(args.runs):
        k = r % len(engines)
        order = engines[k:] + engines[:k]  # rotate who goes first
        one_run(args, bindir, order, prefills, add, notes, args.runs - r)

    size_mib = os.path.getsize(args.model) / 1048576.0
    print(f"\nmodel {args.model} ({size_mib:.1f} MiB), threads {args.threads}, "
          f"{args.runs} alternating runs (medians), context {args.context}, decode "
          f"{args.decode}, deg quantized kernel {notes.get('kernel')}, load average "
          f"{min(notes['load']):.2f}..{max(notes['load']):.2f}")
    print(f"llama.cpp: {bindir} {notes.get('llama')}")
    fmt = lambda v, p: f"{v:9.{p}f}" if v is not None else f"{'-':>9s}"
    short = {"f32": "f32", "native": "native", "native-f32act": "f32act"}
    heads = [short[w] for w in modes]
    print(f"{'measure':28s} " + " ".join(f"{h:>9s}" for h in heads) + f" {'llama.cpp':>9s} "
          + " ".join(f"{h + '/ll':>9s}" for h in heads))
    summary = {}
    for name, per in rows.items():
        med = {who: statistics.median(v) for who, v in per.items()}
        ll = med.get("llama.cpp")
        fig = {"llama_cpp": ll}
        for w, who in zip(modes, degs):
            fig["deg_" + w] = med.get(who)  # None: timed out (--timeout)
            fig["ratio_" + w] = med[who] / ll if ll and who in med else None
        summary[name] = fig
        print(f"{name:28s} " + " ".join(fmt(med.get(who), 1) for who in degs) + f" {fmt(ll, 1)} "
              + " ".join(fmt(fig["ratio_" + w], 2) for w in modes))
    rss = {w: statistics.median(notes["rss " + w]) if notes.get("rss " + w) else None
           for w in modes}
    print(f"{'resident after load [MiB]':28s} " + " ".join(fmt(rss[w], 1) for w in modes)
          + f" {'file':>4s}{size_mib:5.1f} "
          + " ".join(fmt(rss[w] / size_mib if rss[w] else None, 2) for w in modes)
          + "  (ratios: to the file size)")
    if notes["timed_out"]:
        print("timed out (over --timeout, missing above): " + ", ".join(sorted(notes["timed_out"])))
    summary["resident_after_load_mib"] = rss
    summary["file_mib"] = size_mib
    print(json.dumps({"bench": "vs_llamacpp", "threads": args.threads, "runs": args.runs,
                      "context": args.context, "decode": args.decode,
                      "load_min_max": [min(notes["load"]), max(notes["load"])],
                      "timed_out": sorted(notes["timed_out"]), "figures": summary}))


if __name__ == "__main__":
    main()
