#!/usr/bin/env python3
"""Fleet speculation, both modes, measured in one run (issue 17):

  --spec-serve: tokens/s of `deg fleet ask` (deg.fleets.ask, the CLI's path)
    and of `deg serve --fleet DIR` (greedy chat completions over loopback, one
    request at a time) without and with --spec-serve, on the same questions;
    the answers must be identical.
  --spec-b: seconds per conversation of `deg fleet train` rounds
    (deg.fleets.train) without and with --spec-b, each from the same
    untrained fleet and seed; the two fleets must end byte-identical.

The fleet: bench/fleet_demo.py's six Debian-shipped documents (nobody here
wrote them; --docs picks others), p 64, every cartridge with its document's
draft reference (`deg fleet init --draft-ref`; a DIR made without them gets
them from Fleet.set_draft_refs = `deg fleet draft-ref`). The questions:
fleet_demo.py's hand-written ones whose home document is in the fleet. Arms
alternate (plain, spec, plain, spec, ...) so slow phases of a shared machine
hit both; every figure comes with wall and CPU seconds (of the process doing
the work, all threads: the stable figure on a shared machine), the
spec/plain ratio and the load average. Bounded: --questions, --max-tokens,
--rounds, --accum, and --time-limit (no new arm starts after it; what was
measured is printed).

  OMP_WAIT_POLICY=passive .venv/bin/python bench/bench_fleet_spec.py --out /tmp/fleet-spec \\
      [--questions 6] [--max-tokens 96] [--rounds 2] [--accum 2] [--repeats 1] \\
      [--skip-ask] [--skip-serve] [--skip-train] [--time-limit 3600]

A short check (two documents, one question, minutes even under load):
  ... --docs /usr/share/doc/base-passwd/README /usr/share/doc/bc/README --p 32 \\
      --questions 1 --max-tokens 16 --rounds 1 --accum 1 --embed-chunk 512
"""
import argparse
import filecmp
import os
import shutil
import sys
import time

import httpx

import deg
from deg import fleets
from deg import selfstudy as cs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_serve import free_port, start_server, stop_server  # noqa: E402
from fleet_demo import DOCS, SETS  # noqa: E402


def _load():
    return "load %.1f" % os.getloadavg()[0]


def _cpu_of(pid):
    """CPU seconds (user + system, all threads) of process pid so far."""
    with open(f"/proc/{pid}/stat") as f:
        w = f.read().rsplit(")", 1)[1].split()
    return (int(w[11]) + int(w[12])) / os.sysconf("SC_CLK_TCK")


class Clock:
    """--time-limit: True once no new arm may start."""

    def __init__(self, limit):
        self.t0, self.limit = time.monotonic(), limit

    def over(self):
        return self.limit and time.monotonic() - self.t0 > self.limit


def ratio(spec, plain):
    return f"{spec / plain:.2f}x" if plain > 0 else "n/a"


def make_fleet(model, a, docs):
    """DIR as the bench needs it: the documents, draft references, an index."""
    if not os.path.exists(os.path.join(a.out, "fleet.json")):
        t = time.perf_counter()
        deg.Fleet.init(model, a.out, [(p, cs._read_document(p)) for p in docs], a.p,
                       draft_ref=True)
        print(f"init: {len(docs)} documents, p = {a.p}, draft references "
              f"({time.perf_counter() - t:.0f} s, {_load()})", flush=True)
    with deg.Fleet.open(model, a.out, budget=1) as f:
        names = [d.name for d in f.docs()]
        if names != list(docs):
            raise SystemExit(f"{a.out} holds other documents ({names}); use another --out")
        n = f.set_draft_refs()
        if n:
            print(f"draft references added to {n} cartridges (deg fleet draft-ref)")
        try:
            fleets.load_index(f)
        except (deg.DegIOError, deg.FormatError):
            t = time.perf_counter()
            k = fleets.build_index(f, chunk=a.embed_chunk)
            print(f"index: {k} chunks in {time.perf_counter() - t:.0f} s ({_load()})",
                  flush=True)


def questions(docs, n):
    """(home index in docs, question) of the hand-written sets, first n."""
    out = []
    for _, qs, _ in SETS:
        for home, q, _ in qs:
            if DOCS[home] in docs:
                out.append((docs.index(DOCS[home]), q))
    if not out:
        raise SystemExit("no hand-written question has its home document in --docs")
    # one question per document first, so a short run spreads over the fleet
    first = {}
    for h, q in out:
        first.setdefault(h, (h, q))
    rest = [x for x in out if x not in first.values()]
    return (list(first.values()) + rest)[:n]


def bench_ask(model, a, qs, clock):
    """deg fleet ask, plain vs --spec-serve, alternating per question."""
    tok, cpu, wall = {False: 0, True: 0}, {False: 0.0, True: 0.0}, {False: 0.0, True: 0.0}
    drafted = accepted = 0
    same = True
    with deg.Fleet.open(model, a.out, budget=1) as f:
        idx = fleets.load_index(f)
        for r in range(a.repeats):
            for home, q in qs:
                if clock.over():
                    break
                out = {}
                for spec in (False, True):
                    st = []
                    c0, t0 = time.process_time(), time.perf_counter()
                    sel, ans = fleets.ask(f, q, k=1, index=idx, max_tokens=a.max_tokens,
                                          spec=spec, spec_stats=st)
                    wall[spec] += time.perf_counter() - t0
                    cpu[spec] += time.process_time() - c0
                    out[spec] = ans
                    tok[spec] += len(model.tokenize(ans))
                    if spec:
                        drafted, accepted = drafted + st[0].drafted, accepted + st[0].accepted
                same &= out[False] == out[True]
                if r == 0:
                    print(f"  ask: home {home} selected {sel[0][0]}: {q[:50]!r} -> "
                          f"{out[True][:70]!r}", flush=True)
    if not tok[False]:
        print("deg fleet ask: nothing measured (time limit)")
        return True
    print(f"deg fleet ask --spec-serve: plain {tok[False] / wall[False]:.2f} tok/s, speculative "
          f"{tok[True] / wall[True]:.2f} tok/s wall ({ratio(tok[True] / wall[True], tok[False] / wall[False])}); "
          f"per CPU-s {tok[False] / cpu[False]:.2f} vs {tok[True] / cpu[True]:.2f} "
          f"({ratio(tok[True] / cpu[True], tok[False] / cpu[False])}); {tok[True]} answer tokens "
          f"each (retrieval + prefill + decode), drafts kept {accepted}/{drafted}; answers "
          f"identical: {same} ({_load()})", flush=True)
    return same


def bench_serve(a, qs, clock):
    """deg serve --fleet, plain vs --spec-serve: the same greedy chats, one at
    a time; tokens/s from usage.completion_tokens over each request's wall
    time, CPU from the server process."""
    res = {}
    for spec in (False, True):
        extra = ["--fleet", f"fleet={a.out}"] + (["--spec-serve"] if spec else [])
        srv, url = start_server(argparse.Namespace(max_pending=16, model=a.model, ckpt=None),
                                extra, free_port())
        try:
            tok, wall, texts = 0, 0.0, []
            c0 = _cpu_of(srv.pid)
            for r in range(a.repeats):
                for _, q in qs:
                    if clock.over():
                        break
                    t0 = time.perf_counter()
                    resp = httpx.post(url + "/v1/chat/completions", timeout=3600, json={
                        "model": "fleet", "temperature": 0, "max_tokens": a.max_tokens,
                        # a new conversation each time: no cached follow-up K/V
                        "messages": [{"role": "system", "content": f"run {r}"},
                                     {"role": "user", "content": q}]})
                    wall += time.perf_counter() - t0
                    body = resp.json()
                    if resp.status_code != 200:
                        raise SystemExit(f"deg serve: HTTP {resp.status_code}: {body}")
                    tok += body["usage"]["completion_tokens"]
                    texts.append(body["choices"][0]["message"]["content"])
            cpu = _cpu_of(srv.pid) - c0
            health = httpx.get(url + "/health", timeout=60).json()
        finally:
            stop_server(srv)
        res[spec] = (tok, wall, cpu, texts, health)
    (t0, w0, c0, x0, _), (t1, w1, c1, x1, h1) = res[False], res[True]
    if not t0 or not t1:
        print("deg serve: nothing measured (time limit)")
        return True
    same = x0 == x1
    eng = h1.get("batcher", h1)
    print(f"deg serve --fleet --spec-serve: plain {t0 / w0:.2f} tok/s, speculative "
          f"{t1 / w1:.2f} tok/s wall ({ratio(t1 / w1, t0 / w0)}); per server CPU-s "
          f"{t0 / c0:.2f} vs {t1 / c1:.2f} ({ratio(t1 / c1, t0 / c0)}); {t1} completion "
          f"tokens; server counters {dict((k, eng.get(k)) for k in ('spec_streams', 'spec_drafted', 'spec_accepted', 'spec_gate_offs'))}; "
          f"answers identical: {same} ({_load()})", flush=True)
    return same


def bench_train(model, a, docs, clock):
    """deg fleet train rounds, plain vs --spec-b, each from a copy of the
    untrained fleet; s/conversation and the fleets' bytes."""
    base = os.path.join(a.out, "train")
    src = os.path.join(base, "untrained")
    if not os.path.exists(os.path.join(src, "fleet.json")):
        os.makedirs(base, exist_ok=True)
        deg.Fleet.init(model, src, [(p, cs._read_document(p)) for p in docs], a.p)
    sec, cpu, conv = {False: 0.0, True: 0.0}, {False: 0.0, True: 0.0}, {False: 0, True: 0}
    same = True
    for r in range(a.repeats):
        dirs = {}
        for spec in (False, True):
            if clock.over():
                break
            d = os.path.join(base, f"{'spec' if spec else 'plain'}{r}")
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(src, d)
            dirs[spec] = d
            with deg.Fleet.open(model, d, budget=a.budget, rotate_every=2) as f:
                c0, t0 = time.process_time(), time.perf_counter()
                fleets.train(f, a.rounds, accum=a.accum, seed=7 + r, schedule="uniform",
                             chunk_min=128, chunk_max=256, max_q=32, max_a=a.max_a,
                             spec_b=spec)
                sec[spec] += time.perf_counter() - t0
                cpu[spec] += time.process_time() - c0
                conv[spec] += a.rounds * a.accum
        if len(dirs) == 2:
            names = sorted(os.listdir(os.path.join(dirs[False], "docs")))
            same &= filecmp.cmp(os.path.join(dirs[False], "fleet.json"),
                                os.path.join(dirs[True], "fleet.json"), shallow=False)
            for n in names:
                same &= filecmp.cmp(os.path.join(dirs[False], "docs", n),
                                    os.path.join(dirs[True], "docs", n), shallow=False)
    if not conv[True]:
        print("deg fleet train: nothing measured (time limit)")
        return True
    s0, s1 = sec[False] / conv[False], sec[True] / conv[True]
    p0, p1 = cpu[False] / conv[False], cpu[True] / conv[True]
    print(f"deg fleet train --spec-b: plain {s0:.2f} s/conversation, speculative {s1:.2f} "
          f"s/conversation wall ({ratio(s0, s1)} speed-up); CPU {p0:.2f} vs {p1:.2f} "
          f"s/conversation ({ratio(p0, p1)}); {conv[True]} conversations each (rounds x accum, "
          f"incl. teacher pass and step); fleets byte-identical: {same} ({_load()})",
          flush=True)
    return same


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=os.environ.get("DEG_MODEL") or str(deg.default_model_path()))
    ap.add_argument("--out", required=True, help="fleet directory (created; reused by reruns)")
    ap.add_argument("--docs", nargs="+", default=DOCS)
    ap.add_argument("--p", type=int, default=64)
    ap.add_argument("--embed-chunk", type=int, default=fleets.DEFAULT_CHUNK)
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--repeats", type=int, default=1, help="alternations of the arms")
    ap.add_argument("--rounds", type=int, default=2, help="fleet training rounds per arm")
    ap.add_argument("--accum", type=int, default=2, help="conversations per round")
    ap.add_argument("--max-a", type=int, default=96, help="bot B answer tokens")
    ap.add_argument("--budget", type=int, default=4)
    ap.add_argument("--skip-ask", action="store_true")
    ap.add_argument("--skip-serve", action="store_true")
    ap.add_argument("--skip-train", action="store_true")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="seconds after which no new arm starts (0 = none)")
    a = ap.parse_args()
    docs = list(a.docs)
    clock = Clock(a.time_limit)
    model = deg.load_model(a.model)
    print(f"model {os.path.basename(a.model)}; threads {deg.runtime_info().get('threads', '?')}; "
          f"{len(docs)} documents; start ({_load()})", flush=True)
    make_fleet(model, a, docs)
    qs = questions(docs, a.questions)
    ok = True
    if not a.skip_ask:
        ok &= bench_ask(model, a, qs, clock)
    if not a.skip_serve:
        ok &= bench_serve(a, qs, clock)
    if not a.skip_train:
        ok &= bench_train(model, a, docs, clock)
    print(f"total {time.monotonic() - clock.t0:.0f} s ({_load()})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
