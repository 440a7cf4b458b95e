#!/usr/bin/env python3
"""The issue-13 runs: train and score each listed variant on the human Q&A sets, resumably; print the table.

  nice -n 10 python bench/cartridge_qa_runs.py --work /tmp/deg-qa-runs [--only NAME...] \
      [--time-limit SECONDS]
  python bench/cartridge_qa_runs.py --work /tmp/deg-qa-runs --table    # table only

Every run is a call of bench/cartridge_qa_study.py with a fixed seed and a
--state directory under --work, so killing this script and starting it
again continues where the last optimizer step left off (the results are
bitwise those of an uninterrupted run: deg.cartridge_resume); scores already
in --work/NAME.jsonl are not recomputed. --time-limit stops after the
optimizer step that ends past it (its snapshot saved; runs not started are
skipped), so a sitting ends on time and the same command continues. Runs go in the order listed
(shortest corpus first). The table gives, per run and scored pass count:
NLL per reference token of the bare model, the untrained corpus-init
control (same p), the trained cartridge and the whole document in context;
gap closures (bare -> in context) of the control and the trained
cartridge, over all items and over the items beyond the control's rows;
greedy answers judged correct (key-fact rule; last pass only); KV prefix
rows vs the in-context prompt; coverage (supervised answer tokens per
corpus token); and training CPU seconds (generation + teacher + training,
all sittings). bench/README.md "Human-written Q&A" quotes it.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: name -> cartridge_qa_study.py options. Shared: seed 7, chunks 128-256,
#: bot-A messages <= 40 and answers <= 96 tokens, generation batch 8. The
#: control arms' greedy answers are not decoded (--no-control-answers: the
#: in-context arm's decodes cost more than a pass of training); their
#: correctness on procps-faq is in bench/README.md.
RUNS = {
    # procps FAQ, p 64: 16 recall conversations (coverage ~1.2, what a sitting
    # at ~8 % of a core affords), lr 2e-2, 4 passes of 8 steps
    "procps-recall-lr2e-2-c16": dict(qa="procps-faq", p=64, conversations=16, recall=1.0,
                                     lr=2e-2, accum=2, epochs=4, eval_epochs=[1, 4]),
    # the same 16 conversations' budget with passage-question conversations
    # (SelfStudy passage_qa): half recall + half passage questions, and all
    # passage questions
    "procps-mix-lr2e-2-c16": dict(qa="procps-faq", p=64, conversations=16, recall=0.5,
                                  passage_qa=0.5, lr=2e-2, accum=2, epochs=4,
                                  eval_epochs=[1, 4]),
    "procps-passage-lr2e-2-c16": dict(qa="procps-faq", p=64, conversations=16, recall=0.0,
                                      passage_qa=1.0, lr=2e-2, accum=2, epochs=4,
                                      eval_epochs=[1, 4]),
    # procps FAQ (1,190 tokens), p 64 = 18.6x fewer rows than the document
    "procps-recall-lr2e-2": dict(qa="procps-faq", p=64, budget=10, recall=1.0, lr=2e-2,
                                 accum=2, epochs=4, eval_epochs=[1, 2, 4]),
    # xz FAQ, p 64
    "xz-recall-lr2e-2": dict(qa="xz-faq", p=64, budget=10, recall=1.0, lr=2e-2, accum=2,
                             epochs=4, eval_epochs=[2, 4]),
    # zlib FAQ, p 64
    "zlib-recall-lr2e-2": dict(qa="zlib-faq", p=64, budget=10, recall=1.0, lr=2e-2, accum=2,
                               epochs=4, eval_epochs=[2, 4]),
    # session 10: trained on the FAQ, scored on the extracted set and on the
    # hand-paraphrased one (-para: measures reading, not copying the
    # heading); NLL only (no greedy decodes: CPU)
    # coverage vs passes: 48 recall conversations (3x the c16 run's), 1-4 passes
    "procps-recall-lr2e-2-c48": dict(qa=["procps-faq", "procps-faq-para"], p=64,
                                     conversations=48, recall=1.0, lr=2e-2, accum=2,
                                     epochs=4, eval_epochs=[1, 2, 4], answers=False),
    # the third document: xz FAQ (2,802 tokens; p 64 = 43.8x fewer rows)
    "xzfaq-recall-lr2e-2-c24": dict(qa=["xz-faq", "xz-faq-para"], p=64, conversations=24,
                                    recall=1.0, lr=2e-2, accum=2, epochs=8,
                                    eval_epochs=[4, 8], answers=False),
    # the same coverage lever on xz-history (recall only)
    "xzh-recall-lr2e-2-c48": dict(qa="xz-history", p=64, conversations=48, recall=1.0,
                                  lr=2e-2, accum=2, epochs=4, eval_epochs=[1, 2, 4],
                                  answers=False),
    # lr 4e-2, and recall answers up to 192 tokens (twice the supervised
    # tokens per chunk prefill), against procps-recall-lr2e-2-c16
    "procps-recall-lr4e-2-c16": dict(qa=["procps-faq", "procps-faq-para"], p=64,
                                     conversations=16, recall=1.0, lr=4e-2, accum=2,
                                     epochs=4, eval_epochs=[1, 2, 4], answers=False),
    "procps-recall-lr2e-2-c16-a192": dict(qa=["procps-faq", "procps-faq-para"], p=64,
                                          conversations=16, recall=1.0, lr=2e-2, accum=2,
                                          max_a=192, epochs=4, eval_epochs=[1, 2, 4],
                                          answers=False),
    # xz-history (session 9's run: recall 0.5 + passage questions 0.5),
    # continued from 4 to 16 passes
    "xzh-mix-lr2e-2-c16": dict(qa="xz-history", p=64, conversations=16, recall=0.5,
                               passage_qa=0.5, lr=2e-2, accum=2, epochs=16,
                               eval_epochs=[1, 4, 8, 12, 16], answers=False),
    # session 11: cover placement (deg_selfstudy_placement: every token inside
    # a recall answer once per cycle of ceil(n / max_a) conversations),
    # answers <= 192 tokens, budget 4 = 4 x n / 192 conversations (~4 cycles;
    # the mean chunk is 192 too), on the three documents
    "procps-cover-a192-b4": dict(qa=["procps-faq", "procps-faq-para"], p=64, budget=4,
                                 recall=1.0, placement="cover", max_a=192, lr=2e-2, accum=2,
                                 epochs=4, eval_epochs=[1, 2, 4], answers=False),
    "xzh-cover-a192-b4": dict(qa="xz-history", p=64, budget=4, recall=1.0, placement="cover",
                              max_a=192, lr=2e-2, accum=2, epochs=4, eval_epochs=[1, 2, 4],
                              answers=False),
    "xzfaq-cover-a192-b4": dict(qa=["xz-faq", "xz-faq-para"], p=64, budget=4, recall=1.0,
                                placement="cover", max_a=192, lr=2e-2, accum=2, epochs=4,
                                eval_epochs=[1, 2, 4], answers=False),
    # passes beyond the recipe's 4: a copy of procps-cover-a192-b4's state
    # continued to 8 passes (cp -r WORK/procps-cover-a192-b4 WORK/NAME first)
    "procps-cover-a192-b4-p8": dict(qa=["procps-faq", "procps-faq-para"], p=64, budget=4,
                                    recall=1.0, placement="cover", max_a=192, lr=2e-2,
                                    accum=2, epochs=8, eval_epochs=[6, 8], answers=False),
    # issue 15: one small configuration on the default weight mode and on f32
    # (same document, settings, seed): closure and the trained NLLs' max |delta|
    "procps-cover-a192-c8-native": dict(qa="procps-faq", p=64, conversations=8, recall=1.0,
                                        placement="cover", max_a=192, lr=2e-2, accum=2,
                                        epochs=1, eval_epochs=[1], answers=False,
                                        weights="native-f32act"),
    "procps-cover-a192-c8-f32": dict(qa="procps-faq", p=64, conversations=8, recall=1.0,
                                     placement="cover", max_a=192, lr=2e-2, accum=2,
                                     epochs=1, eval_epochs=[1], answers=False, weights="f32"),
    # issue 15, session 12: the same small configuration on the 8-bit-activation
    # mode, and the --budget recipe of procps-cover-a192-b4 on it (that run is f32)
    "procps-cover-a192-c8-native8": dict(qa="procps-faq", p=64, conversations=8, recall=1.0,
                                         placement="cover", max_a=192, lr=2e-2, accum=2,
                                         epochs=1, eval_epochs=[1], answers=False,
                                         weights="native"),
    "procps-cover-a192-b4-native8": dict(qa=["procps-faq", "procps-faq-para"], p=64,
                                         budget=4, recall=1.0, placement="cover", max_a=192,
                                         lr=2e-2, accum=2, epochs=4, eval_epochs=[1, 2, 4],
                                         answers=False, weights="native"),
}


def _sets(run):
    """The run's Q&A set names: it trains on the first one's document."""
    return [run["qa"]] if isinstance(run["qa"], str) else list(run["qa"])


def _argv(name, run, work, todo, model, deadline=0):
    size = (["--budget", run["budget"]] if "budget" in run
            else ["--conversations", run["conversations"]])
    qa = [x for s in _sets(run) for x in ("--qa", str(HERE / "qa" / f"{s}.json"))]
    a = [*qa, "--p", run["p"], *size,
         "--recall", run["recall"], "--passage-qa", run.get("passage_qa", 0), "--lr", run["lr"],
         "--accum", run["accum"], "--epochs", max(todo), "--eval-epochs",
         ",".join(map(str, todo)), "--seed", run.get("seed", 7),
         "--state", work / name, "--save", work / f"{name}.safetensors",
         "--json", work / f"{name}.jsonl",
         "--cache", work / ("controls" if run.get("weights", "f32") == "f32"
                            else f"controls-{run['weights']}")]
    if run.get("answers", True):
        a += ["--answers", "--no-control-answers"]
    for k in ("chunk_min", "chunk_max", "max_q", "max_a", "placement", "weights"):
        if k in run:
            a += ["--" + k.replace("_", "-"), run[k]]
    if model:
        a += ["--model", model]
    if deadline:
        a += ["--deadline", deadline]
    return [str(x) for x in a]


def _done(work, name):
    """{(set, passes): result} of the run's scores so far."""
    f = work / f"{name}.jsonl"
    if not f.exists():
        return {}
    return {(r["set"], r["epochs"]): r for r in map(json.loads, f.read_text().splitlines())}


def _todo(work, name, run):
    """Pass counts still to score (on any of the run's sets)."""
    done = _done(work, name)
    return [e for e in sorted(set(run["eval_epochs"]) | {run["epochs"]})
            if any((s, e) not in done for s in _sets(run))]


def table(work, names):
    rows = ["| run | set | passes | p (fewer rows) | bare | control | trained | in context | "
            "closure control / trained | beyond p: control / trained | correct b/c/t/i | "
            "coverage | CPU-s |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in names:
        order = {s: i for i, s in enumerate(_sets(RUNS[name]))}
        for (qs, ep), r in sorted(_done(work, name).items(),
                                  key=lambda kv: (order.get(kv[0][0], 99), kv[0][1])):
            al, be = r["all"], r["beyond_init"]
            kv = al["kv_rows"]
            ratio = (kv["in_context"] - kv["bare"]) / r["p"]
            corr = al.get("correct")
            c = "/".join("-" if corr.get(k) is None else str(corr[k])
                         for k in ("bare", "untrained", "trained", "in_context")) if corr else ""
            rows.append(f"| {name} | {qs} | {ep} | {r['p']} ({ratio:.1f}x) | {al['bare']:.3f} | "
                        f"{al['untrained']:.3f} | {al['trained']:.3f} | {al['in_context']:.3f} | "
                        f"{al['gap_untrained']:.3f} / {al['gap_trained']:.3f} | "
                        f"{be['gap_untrained']:.3f} / {be['gap_trained']:.3f} | {c} | "
                        f"{r['coverage']} | {r['cpu_total']:.0f} |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--only", nargs="+", choices=sorted(RUNS))
    ap.add_argument("--table", action="store_true", help="print the table, train nothing")
    ap.add_argument("--model", default=os.environ.get("DEG_MODEL"))
    ap.add_argument("--time-limit", type=float, default=0,
                    help="seconds: stop after the optimizer step that ends past it (its "
                         "snapshot saved); the same command continues")
    a = ap.parse_args()
    names = a.only or list(RUNS)
    a.work.mkdir(parents=True, exist_ok=True)
    if not a.table:
        sys.path.insert(0, str(HERE))
        import cartridge_qa_study
        deadline = time.time() + a.time_limit if a.time_limit else 0
        for name in names:
            run = RUNS[name]
            todo = _todo(a.work, name, run)
            if todo and deadline and time.time() > deadline:
                print(f"== {name}: not started (--time-limit)", file=sys.stderr, flush=True)
            elif todo:
                print(f"== {name}: passes {todo}", file=sys.stderr, flush=True)
                try:
                    cartridge_qa_study.main(_argv(name, run, a.work, todo, a.model, deadline))
                except cartridge_qa_study.TimeLimit as e:
                    print(f"== {name}: {e}", file=sys.stderr, flush=True)
    print(table(a.work, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
