#!/usr/bin/env python3
"""Train one self-study variant and score it on a human-written Q&A set (issue 13).

  python bench/cartridge_qa_study.py --qa bench/qa/procps-faq.json --p 64 \\
      --conversations 16 --accum 4 --lr 2e-3 --recall 0.5 [--answers] [--json OUT] \\
      [--state DIR --eval-epochs 2,4]

Prints one line per scored set: the variant's settings, its NLL per
reference token (all items and the items beyond the first p tokens), the
control arms (bare, untrained corpus init, whole document in context;
computed once per (set, p) and cached next to --cache), gap closures, and
the training cost in CPU seconds split into generation / teacher /
training. --qa may be given more than once: the cartridge is trained on
the first set's source document and scored on every set (all must come
from the same document, e.g. an FAQ's extracted and paraphrased sets).
--load CART scores a saved cartridge instead of training one.
--mismatched scores every reference after the next item's question (a
control: what a cartridge gains whatever is asked is the document's
wording, not which answer goes with which question). With --state
the run is resumable (deg.cartridge_resume: run the same command again
after a kill); --eval-epochs scores the cartridge after each listed number
of passes (one line each; the last is --epochs). The runs of
bench/README.md "Human-written Q&A" are calls of this script
(bench/cartridge_qa_runs.py lists them).
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qa", required=True, action="append",
                    help="deg-qa/1 file; repeat to score several sets of one document")
    ap.add_argument("--load", help="score this saved cartridge (no training)")
    ap.add_argument("--mismatched", action="store_true",
                    help="ask each reference behind the next item's question (a control)")
    ap.add_argument("--model", default=os.environ.get("DEG_MODEL"))
    ap.add_argument("--p", type=int, default=64)
    ap.add_argument("--conversations", type=int, default=16)
    ap.add_argument("--budget", type=float, default=0,
                    help="coverage as the spec defines it (deg.selfstudy.budget_plan: "
                         "conversations x mean chunk / corpus tokens; overrides "
                         "--conversations)")
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--gen-batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--recall", type=float, default=0.0)
    ap.add_argument("--passage-qa", type=float, default=0.0,
                    help="fraction of passage-question conversations (SelfStudy passage_qa)")
    ap.add_argument("--placement", choices=["random", "cover"], default="random",
                    help="chunk placement (SelfStudy placement)")
    ap.add_argument("--chunk-min", type=int, default=128)
    ap.add_argument("--chunk-max", type=int, default=256)
    ap.add_argument("--max-q", type=int, default=40)
    ap.add_argument("--max-a", type=int, default=96)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--answers", action="store_true", help="also greedy answers (64 tokens)")
    ap.add_argument("--no-control-answers", action="store_true",
                    help="with --answers: greedy answers of the trained arm only (the control "
                         "arms' decodes are the costly part; their correctness is then '-')")
    ap.add_argument("--json", help="append the result (one JSON line) here")
    ap.add_argument("--save", help="save the trained cartridge here")
    ap.add_argument("--cache", default="/tmp/deg-qa-controls")
    ap.add_argument("--state", help="resumable snapshot directory (deg.cartridge_resume)")
    ap.add_argument("--eval-epochs", default="",
                    help="comma-separated pass counts to score at (default: --epochs only)")
    ap.add_argument("--items", default="",
                    help="comma-separated item ids: score only these (e.g. side-by-side "
                         "answers of a few questions; controls then cached per item list)")
    ap.add_argument("--weights", choices=["f32", "native", "native-f32act"],
                    help="weight mode (deg.load_model; default $DEG_WEIGHTS or native-f32act)")
    ap.add_argument("--deadline", type=float, default=0,
                    help="with --state: stop after the optimizer step that ends past this "
                         "time (seconds since the epoch; its snapshot is saved) by raising "
                         "TimeLimit; the same command continues the run")
    a = ap.parse_args(argv)

    import deg
    from deg import selfstudy as cs
    from deg import cartridge_qa as qa
    model = deg.load_model(a.model or deg.default_model_path(), weights=a.weights)
    sets = [qa.load_qa(f) for f in a.qa]
    if a.mismatched:
        sets = [(dict(m, name=m["name"] + "-mismatched"),
                 [it._replace(question=items[(i + 1) % len(items)].question)
                  for i, it in enumerate(items)]) for m, items in sets]
    if a.items:
        keep = a.items.split(",")
        sets = [(dict(m, name=m["name"] + "-items" + "_".join(keep)),
                 [it for it in items if str(it.id) in keep]) for m, items in sets]
        for f, (m, items) in zip(a.qa, sets):
            if len(items) != len(keep):
                ap.error(f"--items {a.items}: {f} has {len(items)} of them")
    src = sets[0][0].get("source_sha256")
    for f, (m, _) in zip(a.qa, sets):
        if m.get("source_sha256") != src:
            ap.error(f"--qa {f}: not the same source document as {a.qa[0]}")
    corpus = cs.Corpus(model, [qa.qa_corpus(sets[0][0])])
    if a.load:
        cart = deg.Cartridge.load(model, a.load)
        a.p = len(cart)
    max_tok = 64 if a.answers and not a.no_control_answers else 0
    # control arms, once per (set, p, answers)
    Path(a.cache).mkdir(parents=True, exist_ok=True)
    bases = []
    for meta, items in sets:
        cf = Path(a.cache) / f"{meta['name']}-p{a.p}-t{max_tok}.json"
        if cf.exists():
            base = json.loads(cf.read_text())
        else:
            base = qa.qa_evaluate(model, corpus, items, p=a.p, max_tokens=max_tok,
                                  arms=("bare", "untrained", "in_context"))
            cf.write_text(json.dumps(base))
        bases.append(base)
    if a.load:
        results = []
        for (meta, items), base in zip(sets, bases):
            got = qa.qa_evaluate(model, corpus, items, trained=cart,
                                 max_tokens=64 if a.answers else 0, arms=("trained",))
            out = {"set": meta["name"], "p": a.p, "corpus_tokens": len(corpus),
                   "loaded": a.load, **_arms(base, got, a.answers)}
            print(json.dumps({k: v for k, v in out.items() if k != "items"}), flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(out) + "\n")
            results.append(out)
        return results
    n_conv = a.conversations
    if a.budget:
        n_conv = cs.budget_plan(len(corpus), a.budget, a.chunk_min, a.chunk_max, a.accum,
                                a.max_a).conversations
    steps = -(-n_conv // a.accum)
    marks = sorted({int(x) for x in a.eval_epochs.split(",") if x} | {a.epochs})
    if len(marks) > 1 and not a.state:
        ap.error("--eval-epochs needs --state (each mark continues the same run)")
    results = []
    for ep in marks:
        answers = a.answers and ep == marks[-1]
        for out in run_one(a, model, corpus, sets, bases, steps, ep, answers):
            print(json.dumps({k: v for k, v in out.items() if k != "items"}), flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(out) + "\n")
            results.append(out)
    return results


class TimeLimit(Exception):
    """--deadline passed: the run stopped after a saved step."""


def run_one(a, model, corpus, sets, bases, steps, epochs, answers):
    """Train (or resume, with --state) to `epochs` passes and score on every
    set; one result dict per set."""
    from deg import selfstudy as cs
    from deg import cartridge_qa as qa
    t0 = time.process_time()
    def progress(step, info):
        if a.deadline and time.time() > a.deadline:
            raise TimeLimit(f"stopped after step {step} (past --deadline); {a.state} continues")

    rep = cs.train(model, corpus, p=a.p, progress=progress if a.state else None, steps=steps, accum=a.accum, gen_batch=a.gen_batch,
                   lr=a.lr, seed=a.seed, chunk_min=a.chunk_min, chunk_max=a.chunk_max,
                   max_q=a.max_q, max_a=a.max_a, epochs=epochs, recall=a.recall,
                   passage_qa=a.passage_qa, placement=a.placement, save=a.save,
                   state=a.state)
    cpu_sitting = time.process_time() - t0
    t = rep.timing
    run = {"p": a.p, "corpus_tokens": len(corpus),
           "conversations": rep.conversations, "steps": rep.steps, "accum": a.accum,
           "lr": a.lr, "epochs": epochs, "recall": a.recall,
           "passage_qa": a.passage_qa, "placement": a.placement,
           "chunk": [a.chunk_min, a.chunk_max],
           "max_a": a.max_a, "seed": a.seed, "budget": a.budget,
           "cpu_total": round(t["generate_cpu"] + t["teacher_cpu"] + t["train_cpu"], 1),
           "cpu_sitting": round(cpu_sitting, 1),
           "cpu": {k: round(t[k], 1) for k in ("generate_cpu", "teacher_cpu", "train_cpu")},
           "supervised_tokens": rep.supervised,
           "coverage": round(rep.supervised / len(corpus), 2),
           "loss_first": rep.losses[0] if rep.losses else None,
           "loss_last": rep.losses[-1] if rep.losses else None}
    outs = []
    for (meta, items), base in zip(sets, bases):
        got = qa.qa_evaluate(model, corpus, items, trained=rep.cartridge,
                             max_tokens=64 if answers else 0, arms=("trained",))
        outs.append({"set": meta["name"], **run, **_arms(base, got, answers)})
    return outs


def _arms(base, got, answers):
    """The four arms' aggregates and gap closures (controls from base, the
    trained arm from got), and per item (NLL; answers with answers)."""
    out = {}
    for part in ("all", "beyond_init"):
        arms = dict(base[part]["arms"])
        arms.update(got[part]["arms"])
        b, i = arms["bare"]["nll"], arms["in_context"]["nll"]
        out[part] = {k: round(v["nll"], 4) for k, v in arms.items()}
        out[part]["gap_untrained"] = round((b - arms["untrained"]["nll"]) / (b - i), 3)
        out[part]["gap_trained"] = round((b - arms["trained"]["nll"]) / (b - i), 3)
        out[part]["kv_rows"] = {k: round(v["kv_rows"], 1) for k, v in arms.items()}
        if answers:
            out[part]["correct"] = {k: v.get("correct") for k, v in arms.items()}
    out["items"] = [dict(x, answers=dict(x.get("answers", {}), **y["answers"]),
                         correct=dict(x.get("correct", {}), **y["correct"]),
                         nll=dict(x["nll"], **y["nll"])) if answers else
                    dict(x, nll=dict(x["nll"], **y["nll"]))
                    for x, y in zip(base["items"], got["items"])]
    return out


if __name__ == "__main__":
    main()
