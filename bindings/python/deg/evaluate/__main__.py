"""python -m deg.evaluate --records R.jsonl [--split test] [--subset N --subset-seed S]
                          --system deg|baseline|chat|oracle[:LABEL] ... [--merge RESULTS.json ...]
                          --out DIR

Runs each --system on the same records and writes, in DIR:
  results_<label>.json   per-record responses (value, meta, usage), latency,
                         scored rows, summary, and the run's environment
                         (command, threads, load average, checkpoint, model)
  responses_<label>.jsonl  the same per-record entries, appended as they finish
  report.md              all systems side by side (+ deg/baseline ratios)
  reliability_<label>_<kind>.png  one reliability diagram per head kind
                         (choice, score, noul, extract; needs matplotlib)

Systems: `deg` (deg.fill; --ckpt DIR, or a RANDOM-heads checkpoint when absent),
`baseline` (deg.baseline: llama.cpp grammar-constrained greedy JSON of the same
GGUF), `chat` (deg.baseline.chat: one greedy chat question per leaf field, the
same model through deg's runtime), `oracle` (echoes the gold: checks the harness). A LABEL names the
column (default: the system name), e.g. --system deg:deg-v1.

--merge adds results of earlier runs (results_<label>.json, or the
responses_<label>.jsonl of an unfinished run: its records so far) to the report:
they are rescored from their stored responses with the current metric code,
so deg and the baseline can run at different times on the same subset.
--per-field adds field accuracy per top-level field (+ --examples N failures
each); the held-out real documents (python -m deg.evaluate.heldout, records
of split "heldout") are reported that way (scripts/eval-heldout).

--subset N picks a fixed stratified subset of the split: strata are
(source, template), each gets a share proportional to its size (at least 1),
records drawn with --subset-seed (deg.evaluate.subset). Same file, split, N
and seed -> same subset; its ids are stored in the results. Records run in a
seeded random order, so a run cut short is still a random sample of the
subset; --resume continues it (the responses log keeps what was answered).
"""
import argparse
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import time

from ..datagen import read_jsonl
from . import determinism, evaluate, oracle_system, rescore
from .report import markdown, plot_reliability
from .subset import run_order, strata_counts, stratified_subset


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _git_commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def make_system(name, args, records, env):
    """(callable system, env additions) for system `name`."""
    if name == "oracle":
        return oracle_system(records)
    if name == "baseline":
        from ..baseline import BaselineSystem
        sys_ = BaselineSystem(args.model, n_threads=args.threads, n_ctx=args.n_ctx,
                              max_tokens=args.max_tokens)
        env["model"] = sys_.model_path
        env["llama_cpp_python"] = sys_.llama_cpp_version
        env["max_tokens"] = args.max_tokens
        return sys_
    if name == "chat":
        from ..baseline.chat import ChatBaselineSystem
        sys_ = ChatBaselineSystem(args.model, n_threads=args.threads, max_items=args.chat_max_items)
        env["model"] = sys_.model_path
        env["max_answer_tokens"] = sys_.max_answer_tokens
        env["max_list_tokens"] = sys_.max_list_tokens
        env["max_items"] = sys_.max_items
        return sys_
    if name == "deg":
        import tempfile
        import deg
        if not hasattr(deg, "fill"):
            raise SystemExit("deg.fill is not available in this build (fill runtime, issue 4)")
        deg.set_num_threads(args.threads)
        model = args.model or deg.default_model_path()
        ckpt_dir = args.ckpt
        if ckpt_dir is None:  # untrained heads: tokens, latency, validity only
            ckpt_dir = deg.create_random_checkpoint(model, tempfile.mkdtemp(prefix="deg-random-ckpt-"))
            env["random_heads"] = True
            args.notes.append("deg ran a RANDOM-heads checkpoint (no --ckpt): its accuracy "
                              "and ECE mean nothing; validity, tokens and latency do")
        env["ckpt"] = os.path.abspath(ckpt_dir)
        heads = os.path.join(ckpt_dir, "heads.safetensors")
        if os.path.exists(heads):
            env["heads_sha256"] = _sha256(heads)
        env["model"] = os.path.abspath(str(model))
        env["deg_version"] = deg.version() if callable(getattr(deg, "version", None)) else None
        ckpt = deg.load(ckpt_dir, model_path=args.model)

        def run(context, schema):
            # a measurement of accuracy, not of this machine's speed: no default
            # 10-minute deadline (a long document on a loaded machine may need
            # more); the default field / fork-token caps stay
            return deg.fill(context, schema, model=ckpt, options=args.options,
                            limits={"deadline_ms": 0})
        if args.options:
            env["options"] = args.options
        return run
    raise SystemExit(f"unknown system {name!r} (deg, baseline, chat, oracle)")


def run_one(spec, a, recs):
    subset = recs
    name, _, label = spec.partition(":")
    label = label or name
    env = {"system": name, "label": label, "threads": a.threads, "host": platform.node(),
           "nproc": os.cpu_count(), "command": "python -m deg.evaluate " + " ".join(shlex.quote(x) for x in a.argv),
           "git_commit": _git_commit(), "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "loadavg_start": os.getloadavg(),
           "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}
    system = make_system(name, a, recs, env)
    with open(os.path.join(a.out, f"run_{label}.json"), "w") as f:  # for partial merges
        json.dump({"name": label, "system": name, "n_bins": a.bins, "env": env, "data": a.data},
                  f, indent=1, ensure_ascii=False)
    log_path = os.path.join(a.out, f"responses_{label}.jsonl")
    done = {}
    if a.resume and os.path.exists(log_path):  # keep the records an earlier run answered
        wanted = {r["id"] for r in recs}
        with open(log_path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    e = json.loads(line)
                    if e["id"] in wanted:
                        done[e["id"]] = e
        env["resumed_records"] = len(done)
    todo = [r for r in run_order(recs, a.subset_seed) if r["id"] not in done]
    log = open(log_path, "a" if a.resume else "w", encoding="utf-8")

    def on_record(entry):
        log.write(json.dumps(entry, ensure_ascii=False) + "\n")
        log.flush()
    try:
        from tqdm import tqdm
        bar = tqdm(total=len(todo), desc=label, file=sys.stderr)
        prog = lambda k: bar.update(1)  # noqa: E731
    except ImportError:
        bar, prog = None, None
    t0 = time.time()
    deadline = time.time() + 60 * a.max_minutes if a.max_minutes is not None else None
    res = evaluate(todo, system, name=label, n_bins=a.bins, progress=prog, on_record=on_record,
                   deadline=deadline)
    log.close()
    if len(res["per_record"]) < len(todo):
        env["partial"] = (f"{len(done) + len(res['per_record'])} of {len(recs)} records "
                          f"(--max-minutes {a.max_minutes}; --resume continues)")
        recs = [r for r in recs if r["id"] in done or r["id"] in
                {p["id"] for p in res["per_record"]}]
    if done:
        new = {p["id"]: p for p in res["per_record"]}
        res["per_record"] = [done.get(r["id"]) or new[r["id"]] for r in recs]
        res = rescore(res, recs, a.bins)
    if bar:
        bar.close()
    env["wall_s"] = time.time() - t0
    env["loadavg_end"] = os.getloadavg()
    res["system"], res["env"], res["data"] = name, env, a.data
    path = os.path.join(a.out, f"results_{label}.json")
    with open(path, "w") as f:  # again below, with the determinism counts
        json.dump(res, f, indent=1, ensure_ascii=False)
    if a.determinism:
        # the shortest records: the checks call the system 15 + fields times each
        det = sorted(subset, key=lambda r: (len(r["context"]), r["id"]))[:a.determinism]
        t1 = time.time()
        res["determinism"] = determinism(det, system)
        res["determinism"]["ids"] = [r["id"] for r in det]
        env["determinism_wall_s"] = time.time() - t1
    with open(path, "w") as f:
        json.dump(res, f, indent=1, ensure_ascii=False)
    return res


def _load_results(path):
    """A results_<label>.json, or the responses_<label>.jsonl of a run that has
    not finished (with its run_<label>.json): the records answered so far."""
    if not path.endswith(".jsonl"):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    head = os.path.join(os.path.dirname(path),
                        "run_" + os.path.basename(path)[len("responses_"):-len(".jsonl")] + ".json")
    with open(head, encoding="utf-8") as f:
        res = json.load(f)
    with open(path, encoding="utf-8") as f:
        by_id = {}  # two runs appending to one log (resumed twice) write a record twice: keep one
        for line in f:
            if line.strip():
                e = json.loads(line)
                by_id.setdefault(e["id"], e)
        res["per_record"] = list(by_id.values())
    res["partial"] = True
    res["env"]["partial"] = f"{len(res['per_record'])} of {res['data']['n']} records (run not finished)"
    res["data"] = dict(res["data"], ids=[p["id"] for p in res["per_record"]])
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m deg.evaluate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", required=True, help="datagen records JSONL")
    ap.add_argument("--split", default="test")
    ap.add_argument("--subset", type=int, default=None,
                    help="stratified subset size (default: the whole split)")
    ap.add_argument("--subset-seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=None, help="first N records (after --subset)")
    ap.add_argument("--system", action="append", default=None, metavar="NAME[:LABEL]")
    ap.add_argument("--merge", action="append", default=[], metavar="RESULTS.json",
                    help="earlier results to rescore and add to the report (repeatable)")
    ap.add_argument("--model", default=None, help="GGUF model (deg and baseline)")
    ap.add_argument("--ckpt", default=None, help="deg checkpoint directory")
    ap.add_argument("--resume", action="store_true",
                    help="keep the records already in OUT/responses_<label>.jsonl, run the rest")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="start no record after this many minutes (then --resume continues)")
    ap.add_argument("--bins", type=int, default=10, help="ECE bins (equal width)")
    ap.add_argument("--determinism", type=int, default=0,
                    help="shortest N records get the determinism checks "
                         "(10 repeats, 5 field permutations, split vs merged)")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads per system")
    ap.add_argument("--n-ctx", type=int, default=4096, help="baseline context size")
    ap.add_argument("--max-tokens", type=int, default=1024, help="baseline generation cap")
    ap.add_argument("--chat-max-items", type=int, default=8,
                    help="chat baseline: most items it asks about per array")
    ap.add_argument("--per-field", action="store_true",
                    help="add the per-field accuracy table (top-level fields)")
    ap.add_argument("--examples", type=int, default=0,
                    help="with --per-field: up to N failures per field and system")
    ap.add_argument("--options", default=None, metavar="JSON",
                    help="request options for the deg system (§9 `options`, e.g. "
                    "'{\"null_margin\": 1, \"array_decode\": \"threshold\"}'); stored in "
                    "the results' env")
    ap.add_argument("--title", default="deg evaluation")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.options is not None:
        try:
            a.options = json.loads(a.options)
        except ValueError as e:
            ap.error(f"--options is not JSON: {e}")
        if not isinstance(a.options, dict):
            ap.error("--options must be a JSON object (the request's options)")
    a.argv = list(sys.argv[1:] if argv is None else argv)
    if not a.system and not a.merge:
        a.system = ["oracle"]
    split = read_jsonl(a.records, a.split)
    if not split:
        raise SystemExit(f"no {a.split!r} records in {a.records}")
    recs = stratified_subset(split, a.subset, a.subset_seed)[:a.limit]
    os.makedirs(a.out, exist_ok=True)
    a.notes = []
    a.data = {"records": os.path.abspath(a.records), "records_sha256": _sha256(a.records),
              "split": a.split, "split_n": len(split), "subset": a.subset,
              "subset_seed": a.subset_seed, "limit": a.limit, "n": len(recs),
              "strata": strata_counts(recs), "ids": [r["id"] for r in recs]}
    results = []
    for path in a.merge:
        old = _load_results(path)
        results.append(rescore(old, split, a.bins))
    for spec in a.system or []:
        results.append(run_one(spec, a, recs))
    # Columns compare on the same records: those every system answered.
    common = set.intersection(*(set(p["id"] for p in r["per_record"]) for r in results))
    if any(len(r["per_record"]) != len(common) for r in results):
        a.notes.append(f"the columns ran on different records: every metric is over the "
                       f"{len(common)} records all of them answered ("
                       + ", ".join(f"{r['name']} {len(r['per_record'])}" for r in results) + ")")
        results = [rescore(dict(r, per_record=[p for p in r["per_record"] if p["id"] in common]),
                           split, a.bins) for r in results]
        a.data = dict(a.data, n=len(common), strata=strata_counts(
            [r for r in split if r["id"] in common]))
    plots, why = plot_reliability(results, a.out)
    d = a.data
    notes = [f"records: {d['records']} (sha256 {d['records_sha256'][:16]}), split {d['split']} "
             f"({d['split_n']} records); subset {d['n']} records"
             + (f" (stratified, --subset {d['subset']} --subset-seed {d['subset_seed']})"
                if d["subset"] else "")
             + "; strata " + ", ".join(f"{k} {v}" for k, v in d["strata"].items())] + a.notes
    notes += [why] if why else []
    text = markdown(results, title=a.title, notes=notes, per_field=a.per_field, examples=a.examples)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
