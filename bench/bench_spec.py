#!/usr/bin/env python3
"""Speculative decoding on cartridges, both modes, measured in one run:

  --spec-serve: tokens/s of corpus-grounded answers behind a cartridge, plain
    vs speculative (drafts from the draft_reference stored in the artifact,
    index built at load); the answers must be byte-identical.
  --spec-b: s/conversation of self-study synthesis (bot A + bot B decodes +
    teacher pass), plain bot B vs speculative bot B, same seed; the
    conversations must be identical.

The corpus is a real document nobody here wrote (default: man-db's FAQ from
/usr/share/doc); the cartridge is the corpus-init capture of the WHOLE
wrapped document (p = its token count, the spec's "full-docs cartridge"), so
behind it the model answers as with the document in context: corpus-grounded
answers without a training run. The questions were written from the document
by hand. Arms alternate (plain, spec, plain, spec, ...) so slow phases of a
shared machine hit both; wall and CPU seconds (of the process, all threads:
the stable figure on a shared machine) and the load average are printed.

  OMP_WAIT_POLICY=passive .venv/bin/python bench/bench_spec.py [--model M] [--doc PATH] [--max-tokens 160]
      [--conversations 4] [--repeats 1]
"""
import argparse
import os
import sys
import tempfile
import time

import deg
from deg import selfstudy as cs
from deg.cartridge import Cartridge
from deg.spec import answer

QUESTIONS = [
    "Why use man-db instead of man? Answer with the document's own sentences.",
    "What does the document say about security and code quality? Quote it.",
    "Quote what the document says about performance and the 'man -K' full-text search.",
    "What does the document say about maintenance and releases since 2008?",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=os.environ.get("DEG_MODEL") or str(deg.default_model_path()))
    ap.add_argument("--doc", default="/usr/share/doc/man-db/FAQ")
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--conversations", type=int, default=4,
                    help="self-study conversations per arm (one lockstep batch)")
    ap.add_argument("--repeats", type=int, default=1, help="alternations of the two arms")
    ap.add_argument("--questions", type=int, default=len(QUESTIONS))
    ap.add_argument("--max-q", type=int, default=64, help="self-study bot A tokens")
    ap.add_argument("--max-a", type=int, default=160, help="self-study bot B tokens")
    ap.add_argument("--chunk", type=int, nargs=2, default=[256, 512], metavar=("MIN", "MAX"),
                    help="self-study chunk tokens")
    ap.add_argument("--no-spec-b", action="store_true", help="serving arms only")
    args = ap.parse_args()

    model = deg.load_model(args.model)
    corpus = cs.load_corpus(model, [args.doc])
    wrapped = cs.chat_ids(model, [{"role": "system", "content": corpus.text}],
                          add_generation_prompt=False)
    p = len(wrapped)
    # the artifact carries the corpus ids; the index is built at load
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "c.safetensors")
        c0 = Cartridge.from_corpus(model, corpus.text, p)
        c0.set_draft_reference(corpus.ids)
        c0.save(path)
        c0.close()
        t0 = time.perf_counter()
        cart = Cartridge.load(model, path)
        t_load = time.perf_counter() - t0
    ref = cart.draft_reference
    print(f"model {os.path.basename(args.model)}; corpus {args.doc}: {len(corpus)} tokens; "
          f"full-doc cartridge p = {p}; draft_reference {len(ref)} ids (load incl. index "
          f"{t_load * 1000:.0f} ms); threads {deg.runtime_info().get('threads', '?')}")

    # --- serving ---------------------------------------------------------
    load0 = os.getloadavg()
    tok = {False: 0, True: 0}
    sec = {False: 0.0, True: 0.0}
    cpu = {False: 0.0, True: 0.0}
    drafted = accepted = 0
    identical = True
    for r in range(args.repeats):
        for q in QUESTIONS[:args.questions]:
            out = {}
            for spec in (False, True):
                trunk = cart.trunk()
                ids = cs.chat_ids(model, [{"role": "user", "content": q}])
                c0 = time.process_time()
                if spec:
                    gen, st = answer(trunk, ids, ref, args.max_tokens, model.stop_ids())
                    drafted += st.drafted
                    accepted += st.accepted
                else:
                    with trunk.fork() as f:
                        f.feed(ids)
                        gen = f.generate(args.max_tokens, 0.0, stop_ids=model.stop_ids())
                cpu[spec] += time.process_time() - c0
                trunk.close()
                out[spec] = gen.ids
                tok[spec] += len(gen.ids)
                sec[spec] += gen.stats.decode_seconds
            identical &= out[False] == out[True]
            if r == 0:
                text = model.detokenize([i for i in out[True] if i not in model.stop_ids()],
                                        errors="replace")
                print(f"  Q: {q}\n  A ({len(out[True])} tokens): {text[:200]!r}...")
    print(f"--spec-serve: plain {tok[False] / sec[False]:.1f} tok/s, speculative "
          f"{tok[True] / sec[True]:.1f} tok/s ({tok[True]} tokens each, decode seconds "
          f"{sec[False]:.1f} vs {sec[True]:.1f}); acceptance {accepted}/{drafted} "
          f"({100 * accepted / max(drafted, 1):.0f}%); answers identical: {identical}")
    print(f"  CPU seconds of the process (all threads; prompt feed + decode): plain "
          f"{cpu[False]:.1f}, speculative {cpu[True]:.1f}: {tok[False] / cpu[False]:.1f} vs "
          f"{tok[True] / cpu[True]:.1f} tok per CPU-s; load average {load0[0]:.1f} -> "
          f"{os.getloadavg()[0]:.1f}")

    if args.no_spec_b:
        return 0 if identical else 1
    # --- self-study --------------------------------------------------------
    spc = {False: [], True: []}
    spc_cpu = {False: 0.0, True: 0.0}
    same = True
    counts = None
    for r in range(args.repeats):
        convs = {}
        for spec in (False, True):
            st = cs.SelfStudy(model, corpus, seed=11 + r, spec_b=spec, max_q=args.max_q,
                              max_a=args.max_a, chunk_min=args.chunk[0],
                              chunk_max=args.chunk[1])
            t0, c0 = time.perf_counter(), time.process_time()
            convs[spec] = st.generate(args.conversations)
            spc[spec].append((time.perf_counter() - t0) / args.conversations)
            spc_cpu[spec] += (time.process_time() - c0) / args.conversations / args.repeats
            if spec:
                counts = st.spec_counts
        same &= convs[False] == convs[True]
    mean = {k: sum(v) / len(v) for k, v in spc.items()}
    print(f"--spec-b: plain {mean[False]:.2f} s/conversation, speculative {mean[True]:.2f} "
          f"s/conversation ({args.conversations} conversations per lockstep batch, "
          f"{args.repeats} repeat(s)); bot B acceptance {counts['accepted']}/{counts['drafted']} "
          f"({100 * counts['accepted'] / max(counts['drafted'], 1):.0f}%, last repeat); "
          f"conversations identical: {same}")
    print(f"  CPU s/conversation: plain {spc_cpu[False]:.2f}, speculative {spc_cpu[True]:.2f}; "
          f"load average now {os.getloadavg()[0]:.1f}")
    return 0 if identical and same else 1


if __name__ == "__main__":
    sys.exit(main())
