"""Does the LM head know where an extract value starts? A probe of issue 12's "use what the model
already knows": the backbone's own next-token logits, read where an answer would begin, as a prior
for the extract start pointer.

    python bench/fill_lm_prior.py --ckpt DIR --records FILE [--split val] [--n 80] --out PREFIX
    python bench/fill_lm_prior.py --report PREFIX [PREFIX ...]

For every extract leaf whose gold value is a span of the context, over the record's own trunk
(deg_features_extract: the fill's trunk tokens and fork tokens, gold counts):
  answer    the fill's extract fork (FIELD / KIND / ... / "ANSWER:"), the LM logits after its last
            token, read at the context tokens' ids;
  question  a fork in the instruct model's chat turn: "QUESTION: What is the <field name, words>
            (<description>)? Answer with the exact text from the context only." + the end of
            the user turn and the start of the assistant turn (the model's chat layout); a
            context token scores the larger of its id and the id of its text without the
            leading space (an answer's first token has none);
  heads     the checkpoint's start/end logits (deg_train_logits, no key prior).
The report prints, per set and mode: start accuracy of each LM prior alone (argmax over the
context tokens), of the start head alone, and exact-span accuracy of argmax over (s, e), e in
[s, s + 32), of start + lambda * log_softmax(LM logits) + end, for a grid of lambda (a proxy: the
fill's decoding also has the key prior, grammar candidates and trimming). Resumable: one JSON
line per record in PREFIX.jsonl.

Measured (session 11, smollm2-135m-v7, libdeg 0.6.0 native-f32act, one thread; datagen dev sets, no
evaluation-reserved kinds; dev5 = 80 records of kinds no training saw, devwl and dev4 = 60 each):

| | dev5 | devwl | dev4 |
|---|---|---|---|
| extract leaves with a gold span | 260 | 237 | 287 |
| start head alone: argmax = gold start | 0.265 | 0.300 | 0.310 |
| answer fork's LM alone | 0.000 | 0.000 | 0.024 |
| question fork's LM alone | 0.042 | 0.025 | 0.066 |
| span proxy, heads only | 0.127 | 0.148 | 0.251 |
| + answer-fork prior, lambda 0.3 | 0.138 | 0.169 | 0.268 |
| + question-fork prior, best lambda | 0.127 (0) | 0.177 (0.5) | 0.251 (0) |

The LM's own argmax almost never lands on the value (at ANSWER: it predicts "\n", " The", " yes";
asked in its chat turn, greedy answers are mostly "The 12 is ..."): SmolLM2-135M does not copy the
value in either layout. As a prior it is weak but consistent: the answer fork at lambda 0.3 adds
0.011-0.021 to the span proxy on all three sets (larger lambdas lower it); the question fork helps
on one set and costs a fork per leaf.

In the fill since session 12 (deg.json / options "lm_prior" {"start": lambda}, the answer fork's
prior, lib/deg/fill_extract.c). Full deg.fill path (session 12, v7, libdeg 0.7.0, DEG_WEIGHTS=native,
one thread; this session's dev sets, checkpoints/smollm2-135m-v8/TRAINING.md: dev5 subset 80, dev4
and devwl subsets 60, none of v7's training union), mean field accuracy:

| lambda | dev5 | dev4 | devwl | mean | span EM (mean) | ECE extract (mean) |
|---|---|---|---|---|---|---|
| 0 (v7) | 0.4940 | 0.5270 | 0.5327 | 0.5179 | 0.253 | 0.099 |
| 0.2 | 0.4964 | 0.5236 | 0.5327 | 0.5176 | 0.254 | 0.094 |
| 0.3 | 0.4988 | 0.5270 | 0.5357 | 0.5205 | 0.259 | 0.094 |
| 0.5 | 0.4940 | 0.5304 | 0.5387 | 0.5210 | 0.254 | 0.104 |

lambda 0.3 is better than none on the mean and on dev5, by little (12 extract leaves wrong -> right,
7 right -> wrong of 1,343): checkpoints/smollm2-135m-v8 = v7 + lm_prior 0.3. The prior lowers every
context token and not null, so nulls rise with lambda. Cost: one LM-head matvec per extract leaf,
2.3-2.6 ms CPU (native; 10 ms native-f32act).
"""
import argparse
import json
import os
import re
import sys
from collections import defaultdict

import numpy as np

LAMBDAS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5)
SPAN_MAX = 32


def words(pointer):
    """The leaf's property name as words ("InputTypeIsNote" -> "Input Type Is Note")."""
    parts = [p for p in pointer.split("/")[1:] if not p.isdigit()]
    name = parts[-1] if parts else "value"
    name = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    return re.sub(r"[_\-.]+", " ", name).strip()


def leaf_schema(schema, pointer):
    s = schema
    for tok in pointer.split("/")[1:]:
        s = s.get("items", {}) if tok.isdigit() else (s.get("properties") or {}).get(tok, {})
    return s


def log_softmax(x):
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def best_span(start, end):
    best, bs, be = -np.inf, 0, 0
    for a in np.argsort(-start)[:SPAN_MAX]:
        e = a + int(np.argmax(end[a:a + SPAN_MAX]))
        if start[a] + end[e] > best:
            best, bs, be = start[a] + end[e], int(a), e
    return bs, be


def trace(args):
    import deg
    from deg.train import data as D, features as F
    from deg.train.engine import Heads

    deg.set_num_threads(1)
    m = deg.load_model(deg.ckpt_backbone_path(args.ckpt))
    ck = deg.load(args.ckpt, model=m)  # one copy of the weights for the traces and the forks
    heads = Heads(ck)
    user = m.chat_format([{"role": "user", "content": "@@Q@@"}])
    turn_end = user[user.index("@@Q@@") + 5:]  # end of the user turn + assistant start
    nospace = {}  # token id -> id of its text without the leading space (or itself)

    def bare(i):
        if i not in nospace:
            t = m.detokenize_bytes([i])
            try:  # a byte-level token may hold part of a character: keep its own id
                ids = m.tokenize(t[1:]) if t[:1] == b" " and len(t) > 1 else [i]
            except deg.DegError:
                ids = [i]
            nospace[i] = ids[0] if len(ids) == 1 else i
        return nospace[i]

    recs = [json.loads(x) for x in open(args.records)]
    recs = [r for r in recs if r.get("split") == args.split][:args.n]
    path = args.out + ".jsonl"
    done = set()
    if os.path.exists(path):
        done = {json.loads(x)["id"] for x in open(path)}
    with open(path, "a") as fo:
        for k, rec in enumerate(recs):
            if rec["id"] in done:
                continue
            try:
                plan = D.check_record(rec)
                feats = F.extract(ck, rec, tokens=True)
                exs = {x.pointer: x for x in D.examples_of(rec, plan, feats)
                       if x.kind == D.EXTRACT and x.pos_start is not None and len(x.pos_start)}
            except Exception as e:  # a record the trainer would skip: say why, go on
                fo.write(json.dumps({"id": rec["id"], "skipped": str(e)[:200]}) + "\n")
                continue
            ctx_ids = feats.trunk_ids[feats.ctx_first:feats.ctx_first + feats.ctx.shape[0]]
            alt = np.array([bare(int(i)) for i in ctx_ids])
            items = []
            with m.trunk([int(i) for i in feats.trunk_ids]) as tr:
                for f in feats.forks:
                    x = exs.get(f["pointer"])
                    if x is None:
                        continue
                    lg = heads.logits(x)
                    n = x.rows.shape[0]
                    with tr.fork() as fk:
                        fk.feed([int(i) for i in f["ids"]])
                        la = np.frombuffer(fk.logits(), dtype=np.float32)
                    desc = leaf_schema(rec["schema"], f["pointer"]).get("description")
                    q = f"QUESTION: What is the {words(f['pointer'])}"
                    q += f" ({desc})" if desc else ""
                    q += "? Answer with the exact text from the context only." + turn_end
                    with tr.fork() as fk:
                        fk.feed(m.tokenize(q, special=True))
                        lq = np.frombuffer(fk.logits(), dtype=np.float32)
                    la_n, lq_n = log_softmax(la.astype(np.float64)), log_softmax(lq.astype(np.float64))
                    items.append({"pointer": f["pointer"], "mode": f["mode"],
                                  "ps": [int(v) for v in x.pos_start],
                                  "pe": [int(v) for v in x.pos_end],
                                  "start": lg[:n].tolist(), "end": lg[n + 1:2 * n + 1].tolist(),
                                  "answer": la_n[ctx_ids].tolist(),
                                  "question": np.maximum(lq_n[ctx_ids], lq_n[alt]).tolist()})
            fo.write(json.dumps({"id": rec["id"], "items": items}) + "\n")
            fo.flush()
            print(f"{k + 1}/{len(recs)} {rec['id']}: {len(items)} leaves", file=sys.stderr)


def report(prefixes):
    for prefix in prefixes:
        acc, n = defaultdict(lambda: np.zeros(3 + 2 * len(LAMBDAS))), defaultdict(int)
        for line in open(prefix + ".jsonl"):
            for it in json.loads(line).get("items", []):
                st, en = np.array(it["start"]), np.array(it["end"])
                ps, pe = set(it["ps"]), set(it["pe"])
                row = [float(int(np.argmax(it[w])) in ps) for w in ("answer", "question")]
                row.append(float(int(np.argmax(st)) in ps))
                for w in ("answer", "question"):
                    lm = np.array(it[w])
                    for lam in LAMBDAS:
                        s, e = best_span(st + lam * lm, en)
                        row.append(float(s in ps and e in pe))
                for key in (it["mode"], "all"):
                    acc[key] += row
                    n[key] += 1
        print(f"== {prefix}")
        print("start accuracy: LM answer fork / LM question fork / start head; then span proxy "
              "with the answer-fork prior, then with the question-fork prior, lambda = "
              + " ".join(str(x) for x in LAMBDAS))
        for key in sorted(acc):
            a = acc[key] / n[key]
            k = len(LAMBDAS)
            print(f"{key:16s} n={n[key]:4d}  " + " ".join(f"{v:.3f}" for v in a[:3]) + "  |  "
                  + " ".join(f"{v:.3f}" for v in a[3:3 + k]) + "  |  "
                  + " ".join(f"{v:.3f}" for v in a[3 + k:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt")
    ap.add_argument("--records")
    ap.add_argument("--split", default="val")
    ap.add_argument("--n", type=int, default=80)
    ap.add_argument("--out")
    ap.add_argument("--report", nargs="+")
    args = ap.parse_args()
    if args.report:
        report(args.report)
    elif args.ckpt and args.records and args.out:
        trace(args)
    else:
        ap.error("--ckpt, --records and --out (trace), or --report PREFIX ...")


if __name__ == "__main__":
    main()
