#!/usr/bin/env python3
"""Per Q&A item: how much of its reference the training conversations supervised, against its gap closure (issue 13).

  python bench/cartridge_qa_coverage.py --qa bench/qa/procps-faq.json \\
      --conversations STATE/conversations.jsonl --result RUN.jsonl
  python bench/cartridge_qa_coverage.py --qa bench/qa/procps-faq.json --simulate 16,48 \\
      [--max-a 96 --chunk-min 128 --chunk-max 256 --trials 200]

STATE is a run's --state directory (deg.cartridge_resume: one synthesised
conversation per line), RUN.jsonl the per-item scores cartridge_qa_study.py
wrote for that run's cartridge (the last line of the set). An answer
(`answer_ids`, detokenized) is located in the source document with any
whitespace; an item's coverage is the share of its reference's characters
inside some located answer. Prints each item's coverage, NLL per arm and
gap closure ((bare - trained) / (bare - in context)), and the closures of
the items covered >= 50 % and < 50 % (NLL per reference token over each
group, as the aggregates): whether what a cartridge lacks is
what its conversations never supervised.
"""
import argparse
import json
import os
import random
import re


def located(text, words):
    """(start, end) of words in text with any whitespace between them, or None."""
    if not words:
        return None
    m = re.search(r"\s+".join(re.escape(w) for w in words), text)
    return (m.start(), m.end()) if m else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qa", required=True)
    ap.add_argument("--conversations")
    ap.add_argument("--result")
    ap.add_argument("--simulate", help="comma-separated conversation counts")
    ap.add_argument("--max-a", type=int, default=96)
    ap.add_argument("--chunk-min", type=int, default=128)
    ap.add_argument("--chunk-max", type=int, default=256)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--model", default=os.environ.get("DEG_MODEL"))
    a = ap.parse_args(argv)
    if not a.simulate and not (a.conversations and a.result):
        ap.error("give --conversations and --result, or --simulate")

    import deg
    from deg import cartridge_qa as qa
    model = deg.load_model(a.model or deg.default_model_path())
    meta, items = qa.load_qa(a.qa)
    _, text = qa.qa_corpus(meta)
    if a.simulate:
        return simulate(model, text, items, a)
    covered = bytearray(len(text))
    n = found = 0
    with open(a.conversations) as f:
        for line in f:
            c = json.loads(line)
            n += 1
            span = located(text, model.detokenize(c["answer_ids"], errors="replace").split())
            if span:
                found += 1
                covered[span[0]:span[1]] = b"\1" * (span[1] - span[0])
    print(f"{meta['name']}: {n} conversations, {found} answers located; "
          f"{sum(covered) / len(text):.2f} of the document's characters supervised")
    res = [json.loads(x) for x in open(a.result)]
    res = [r for r in res if r.get("set") == meta["name"] and "items" in r]
    if not res:
        ap.error(f"{a.result}: no per-item scores of {meta['name']}")
    rows = []
    for it, r in zip(items, res[-1]["items"]):
        start = max(0, (it.offset or 0) - 5)
        span = located(text[start:], it.answer.split())
        cov = (sum(covered[start + span[0]:start + span[1]]) / (span[1] - span[0])
               if span else float("nan"))
        v = r["nll"]
        gap = (v["bare"] - v["trained"]) / (v["bare"] - v["in_context"])
        rows.append((cov, gap, v, it.id, r["tokens"]))
    print("| item | coverage | bare | control | trained | in context | closure |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for cov, gap, v, i, _ in sorted(rows, key=lambda r: (r[0], r[1])):
        print(f"| {i} | {cov:.2f} | {v['bare']:.3f} | {v['untrained']:.3f} | "
              f"{v['trained']:.3f} | {v['in_context']:.3f} | {gap:.3f} |")
    for name, part in (("covered >= 50 %", [r for r in rows if r[0] >= 0.5]),
                       ("covered < 50 %", [r for r in rows if not r[0] >= 0.5])):
        if part:  # closure of the group's NLL per reference token, as the aggregates
            nll = {k: sum(t * v[k] for _, _, v, _, t in part) / sum(t for *_, t in part)
                   for k in ("bare", "untrained", "trained", "in_context")}
            gap = nll["bare"] - nll["in_context"]
            print(f"{name}: {len(part)} items; closure control "
                  f"{(nll['bare'] - nll['untrained']) / gap:.3f}, trained "
                  f"{(nll['bare'] - nll['trained']) / gap:.3f}")


def simulate(model, text, items, a):
    """Expected supervised shares of N uniform recall conversations (see --simulate)."""
    n = len(model.tokenize(text))
    refs = []
    for it in items:
        start = max(0, (it.offset or 0) - 5)
        span = located(text[start:], it.answer.split())
        if span:
            refs.append((len(model.tokenize(text[:start + span[0]])),
                         len(model.tokenize(text[:start + span[1]]))))
    print(f"{len(refs)} of {len(items)} references located; corpus {n} tokens; chunks "
          f"{a.chunk_min}-{a.chunk_max}, answers <= {a.max_a}, {a.trials} trials")
    for count in (int(x) for x in a.simulate.split(",")):
        doc = whole = 0.0
        for t in range(a.trials):
            rng, cov = random.Random(t), bytearray(n)
            for _ in range(count):
                size = min(rng.randint(a.chunk_min, a.chunk_max), n)
                first = rng.randint(0, n - size)
                q = min(rng.randint(16, 48), max(1, size // 2))
                s, e = first + q, min(first + q + a.max_a, first + size)
                cov[s:e] = b"\1" * max(0, e - s)
            doc += sum(cov) / n
            whole += sum(all(cov[s:e]) for s, e in refs) / len(refs)
        print(f"{count} conversations: {doc / a.trials:.2f} of the document's tokens, "
              f"{whole / a.trials:.2f} of the references whole")


if __name__ == "__main__":
    main()
