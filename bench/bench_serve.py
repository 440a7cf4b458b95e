#!/usr/bin/env python3
"""Load test of `deg serve` over loopback (bounded in requests and time).

    .venv/bin/python bench/bench_serve.py [--model PATH] [--ckpt DIR]
        [--clients 16] [--requests 400] [--time-limit 900] [--max-pending 64]

1. Memory: starts `deg serve` with the checkpoint alone, then with the checkpoint
   plus two capture cartridges, and prints both RSS figures against the
   cartridges' row bytes (one model in memory: the difference should be about the
   rows).
2. Load: N concurrent clients send a fixed mix (seeded) of valid fills, invalid
   schemas, OpenAI decisions, Jev systemone calls, non-streaming chats and
   streaming chats, some of which hang up after the first delta. Prints status
   counts (every request must be answered: 200 / 4xx / 429), throughput, p50/p95
   latency per kind, the batcher's mean batch size, and the server's RSS.
3. The same valid fills back to back in-process (deg.fill) for p50/p95 and
   throughput side by side.

Timings are meaningless on a loaded machine; it is a correctness/robustness run
there (every request answered, no crash, RSS bounded).
"""
import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import httpx

import deg

CORPORA = [
    "The Zorblat 9 is a pocket synthesizer made by Quillon Instruments in 2031. It has four "
    "voices, a ribbon keyboard and a battery that lasts eleven hours. " * 12,
    "Harbor Street Bakery opens at six every morning except Mondays. Its rye loaf uses a "
    "three-day starter and sells out by nine; orders over twenty loaves need a day's notice. " * 12,
]
FILLS = [
    ("Ticket 4711 from ann@example.com, opened 5 March 2026: payouts failed for three days, "
     "please refund the $12.50 fee.",
     {"type": "object", "properties": {
         "email": {"type": ["string", "null"], "format": "email"},
         "opened": {"type": ["string", "null"], "format": "date"},
         "fee": {"type": ["number", "null"]}, "urgent": {"type": "boolean"},
         "team": {"enum": ["billing", "tech", "sales"]}}}),
    ("Order 88 from bob@example.org shipped on 1 June 2025 to Oslo; 3 chairs, total EUR 240.",
     {"type": "object", "properties": {
         "email": {"type": ["string", "null"], "format": "email"},
         "shipped": {"type": ["string", "null"], "format": "date"},
         "city": {"type": ["string", "null"]}, "total": {"type": ["number", "null"]}}}),
]
BAD_SCHEMAS = [{"type": "object", "properties": {"a": {"type": "strin"}}},
               {"type": "object", "properties": {"a": {"allOf": []}}},
               {"type": "array"}]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid, key="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def start_server(args, extra, port):
    cmd = [sys.executable, "-m", "deg.server", "--port", str(port), "--log-level", "warning",
           "--max-pending", str(args.max_pending)] + extra
    if args.model:
        cmd += ["--model", args.model]
    if args.ckpt:
        cmd += ["--ckpt", args.ckpt]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    t0 = time.monotonic()
    while time.monotonic() - t0 < 600:
        if p.poll() is not None:
            raise SystemExit("server exited: " + p.stderr.read().decode("utf-8", "replace"))
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return p, url
        except httpx.HTTPError:
            time.sleep(0.2)
    p.kill()
    raise SystemExit("server did not come up within 600 s")


def stop_server(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def make_cartridges(model_path, d, p):
    paths, rows = [], 0
    with deg.load_model(model_path) as m:
        info = m.info
        for i, text in enumerate(CORPORA):
            c = deg.Cartridge.from_corpus(m, text, p=p)
            path = os.path.join(d, f"c{i}.cartridge.safetensors")
            c.save(path, optimizer=False)
            rows += len(c) * info.n_layer * info.n_head_kv * info.head_dim * 2 * 4
            c.close()
            paths.append(path)
    return paths, rows


def plan(n, seed):
    """The request mix: (kind, payload) in a seeded order."""
    rng = random.Random(seed)
    kinds = (["fill"] * 35 + ["bad_fill"] * 10 + ["decisions"] * 15 + ["systemone"] * 10 +
             ["chat"] * 10 + ["stream"] * 12 + ["stream_hangup"] * 8)
    out = []
    for i in range(n):
        k = rng.choice(kinds)
        if k == "fill":
            ctx, schema = FILLS[i % len(FILLS)]
            out.append((k, "/v1/fill", {"context": ctx, "schema": schema}))
        elif k == "bad_fill":
            out.append((k, "/v1/fill", {"context": "x", "schema": rng.choice(BAD_SCHEMAS)}))
        elif k == "decisions":
            out.append((k, "/v1/decisions", {"model": "gpt-6-luna", "input": FILLS[0][0],
                                             "questions": [
                {"type": "predicate", "name": "urgent", "instructions": "Is it urgent?"},
                {"type": "choice", "name": "team", "instructions": "Which team?",
                 "choices": [{"value": "billing"}, {"value": "tech"}]}]}))
        elif k == "systemone":
            out.append((k, "/v1/systemone", {"model": "jev-latest", "state": FILLS[1][0],
                                             "questions": {"sev": {
                                                 "type": "score", "instructions": "Severity?",
                                                 "criteria": ["low", "mid", "high"]}}}))
        else:
            target = rng.choice(["deg-latest", "c0", "c1"])
            out.append((k, "/v1/chat/completions", {
                "model": target, "temperature": 0, "max_tokens": rng.choice([8, 16, 32]),
                "stream": k != "chat",
                "messages": [{"role": "user", "content": rng.choice([
                    "What is the Zorblat 9?", "When does the bakery open?", "Say hello."])}]}))
    return out


def _has_text(line):
    """An SSE line carrying a non-empty content delta."""
    if not line.startswith("data: {"):
        return False
    ch = json.loads(line[6:]).get("choices") or [{}]
    return bool(ch[0].get("delta", {}).get("content"))


def one(client, url, kind, path, body):
    t0 = time.monotonic()
    try:
        if kind.startswith("stream"):
            with client.stream("POST", url + path, json=body) as r:
                status = r.status_code
                for line in r.iter_lines():
                    if kind == "stream_hangup" and _has_text(line):
                        return kind, "hangup", time.monotonic() - t0
            return kind, status, time.monotonic() - t0
        r = client.post(url + path, json=body)
        return kind, r.status_code, time.monotonic() - t0
    except httpx.HTTPError as e:
        return kind, f"error:{type(e).__name__}", time.monotonic() - t0


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def load(args, url, server_pid):
    reqs = plan(args.requests, args.seed)
    results, lock, it = [], threading.Lock(), iter(reqs)
    deadline = time.monotonic() + args.time_limit
    peak = [0]

    def worker():
        with httpx.Client(timeout=args.time_limit) as c:
            while time.monotonic() < deadline:
                with lock:
                    nxt = next(it, None)
                if nxt is None:
                    return
                r = one(c, url, *nxt)
                with lock:
                    results.append(r)
                    peak[0] = max(peak[0], rss_kib(server_pid))
    t0 = time.monotonic()
    ths = [threading.Thread(target=worker) for _ in range(args.clients)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    wall = time.monotonic() - t0
    return reqs, results, wall, peak[0]


def in_process(args, n):
    with deg.load_model(args.model or deg.ckpt_backbone_path(args.ckpt)) as m, \
            deg.load(args.ckpt, model=m) as ck:
        lat = []
        t0 = time.monotonic()
        for i in range(n):
            ctx, schema = FILLS[i % len(FILLS)]
            t = time.monotonic()
            deg.fill(ctx, schema, model=ck)
            lat.append(time.monotonic() - t)
        return lat, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model")
    ap.add_argument("--ckpt")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--time-limit", type=float, default=900.0,
                    help="stop issuing requests after this many seconds")
    ap.add_argument("--max-pending", type=int, default=64)
    ap.add_argument("--cartridge-p", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rss-only", action="store_true", help="only the memory comparison")
    args = ap.parse_args()
    model_path = args.model or deg.ckpt_backbone_path(args.ckpt)
    report = {"load_average_1m": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as d:
        carts, rows = make_cartridges(model_path, d, args.cartridge_p)
        p, url = start_server(args, [], free_port())
        base = rss_kib(p.pid)
        stop_server(p)
        extra = sum((["--cartridge", c] for c in carts), [])
        p, url = start_server(args, extra, free_port())
        with_carts = rss_kib(p.pid)
        report["rss_ckpt_kib"], report["rss_ckpt_2cart_kib"] = base, with_carts
        report["cartridge_rows_kib"] = rows // 1024
        print(f"RSS: checkpoint alone {base / 1024:.1f} MiB; + 2 cartridges "
              f"{with_carts / 1024:.1f} MiB (difference {(with_carts - base) / 1024:.1f} MiB, "
              f"rows {rows / 2 ** 20:.1f} MiB)")
        if args.rss_only:
            stop_server(p)
            print(json.dumps(report))
            return 0
        try:
            reqs, results, wall, peak = load(args, url, p.pid)
            health = httpx.get(url + "/health", timeout=30).json()
            rss_after = rss_kib(p.pid)
        finally:
            stop_server(p)
    counts = {}
    for k, st, _ in results:
        counts.setdefault(k, {}).setdefault(str(st), 0)
        counts[k][str(st)] += 1
    print(f"requests: {len(results)} answered of {len(reqs)} planned "
          f"({args.clients} clients, {wall:.1f} s, {len(results) / wall:.2f} req/s)")
    for k in sorted(counts):
        lat = [t for kk, st, t in results if kk == k]
        print(f"  {k:14s} {json.dumps(counts[k])}  p50 {pct(lat, .5):.3f} s  "
              f"p95 {pct(lat, .95):.3f} s")
    lost = [r for r in results if str(r[1]).startswith("error")]
    b = health["batcher"]
    print(f"batcher: {b['fill_batches']} fill batches, mean batch size "
          f"{b['mean_batch_size']:.2f}; {b['decode_steps']} decode steps, mean decode batch "
          f"{b['mean_decode_batch']:.2f}; cancelled streams {b['chat_cancelled']}")
    print(f"server RSS: peak during load {peak / 1024:.1f} MiB, after {rss_after / 1024:.1f} "
          f"MiB; transport errors (lost requests): {len(lost)}")
    fills = [t for k, st, t in results if k == "fill" and st == 200]
    ip_lat, ip_wall = in_process(args, max(1, len(fills)))
    print(f"fills: server p50 {pct(fills, .5):.3f} s p95 {pct(fills, .95):.3f} s under the "
          f"mixed load; in-process back to back p50 {pct(ip_lat, .5):.3f} s p95 "
          f"{pct(ip_lat, .95):.3f} s, {len(ip_lat) / ip_wall:.2f} fills/s")
    report.update(answered=len(results), planned=len(reqs), wall_s=wall, counts=counts,
                  lost=len(lost), health=b, rss_peak_kib=peak, rss_after_kib=rss_after,
                  fill_p50=pct(fills, .5), fill_p95=pct(fills, .95),
                  inproc_p50=pct(ip_lat, .5), inproc_p95=pct(ip_lat, .95),
                  median_inproc=statistics.median(ip_lat))
    print(json.dumps(report))
    return 1 if lost or len(results) < len(reqs) else 0


if __name__ == "__main__":
    sys.exit(main())
