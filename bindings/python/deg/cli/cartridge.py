"""`deg cartridge train|ask|eval|equiv|compose`: self-study cartridges from the command line.

  deg cartridge train --model M --corpus PATH... --p 256 --steps N --accum 4 \\
      --lr 2e-3 --seed S --save OUT [--spec-b] [--draft-ref]
  deg cartridge ask --load OUT --ask "..." [--corpus PATH...] [--spec-serve]
  deg cartridge eval --load OUT --corpus PATH... [--n-eval 8]
  deg cartridge equiv --corpus PATH... [--p 256 --suffix-max 128]
  deg cartridge compose --load A B... --ask "..." [--spec-serve]
      (answer behind A's rows, then B's, ...)

Spec: cartridges.md (demo run-book). The model defaults to $DEG_MODEL or the
fetched default (deg.default_model_path()).
"""
import os
import sys
import time

from ..errors import ArgumentError


def _model(args):
    from ..fetch import default_model_path
    from ..model import Model
    from ..runtime import set_num_threads
    if args.threads:
        set_num_threads(args.threads)
    path = args.model or os.environ.get("DEG_MODEL") or default_model_path()
    return Model(path)


def _common(p, model=True):
    if model:
        p.add_argument("--model", help="GGUF file or HF directory (default: $DEG_MODEL or "
                                       "the fetched default model)")
    p.add_argument("--threads", type=int, default=0, help="compute threads (default: all)")


def _study_opts(p, recipe=False):
    """Synthesis options; with recipe=True they default to None (filled by
    _fill_defaults from the --budget recipe or the plain defaults)."""
    d = (lambda v: None) if recipe else (lambda v: v)
    p.add_argument("--chunk-min", type=int, default=d(256), help="chunk tokens, min (256)")
    p.add_argument("--chunk-max", type=int, default=d(512), help="chunk tokens, max (512)")
    p.add_argument("--max-q", type=int, default=d(64), help="bot A message tokens (64)")
    p.add_argument("--max-a", type=int, default=d(160), help="bot B answer tokens (160)")


def _fill_defaults(args, corpus_tokens):
    """Options left unset take the --budget recipe's value (deg.selfstudy.RECIPE)
    or deg.selfstudy.train's default; --budget also picks --steps from the
    corpus length."""
    import inspect
    from .. import selfstudy as cs
    plain = {k: v.default for k, v in inspect.signature(cs.train).parameters.items()}
    if args.budget is True:  # --budget without a value (argparse's const)
        args.budget = cs.RECIPE_BUDGET
    base = cs.RECIPE if args.budget else plain
    for k in cs.RECIPE:
        if getattr(args, k) is None:
            setattr(args, k, base[k])
    if args.budget:
        if args.steps is not None:
            raise ArgumentError("--budget picks --steps from the corpus length; give one of them")
        args.plan = cs.budget_plan(corpus_tokens, args.budget, args.chunk_min, args.chunk_max,
                                   args.accum, args.max_a)
        args.steps = args.plan.steps
    elif args.steps is None:
        args.steps = plain["steps"]


def cmd_train(args):
    from .. import selfstudy as cs
    model = _model(args)
    corpus = cs.load_corpus(model, args.corpus)
    _fill_defaults(args, len(corpus))
    bar = None
    try:
        from tqdm import tqdm
        bar = tqdm(total=args.steps * args.epochs, unit="step", file=sys.stderr, dynamic_ncols=True,
                   disable=args.quiet)
    except ImportError:
        pass
    last = {}

    def progress(step, info):
        last.update(info)
        post = {"loss": f"{info['loss']:.4f}",
                "conv/s": f"{info['conversations'] / max(info['seconds'], 1e-9):.3f}"}
        if args.epochs > 1:
            post["epoch"] = info["epoch"]
        if "heldout" in info:
            post["heldout"] = f"{info['heldout']:.4f}"
        if bar is not None:
            bar.set_postfix(post, refresh=False)
            bar.update(1)
        elif not args.quiet:
            print(f"step {step}/{args.steps * args.epochs} " + " ".join(f"{k} {v}" for k, v in post.items()),
                  file=sys.stderr, flush=True)

    ratio = f" ({len(corpus) / args.p:.1f}x fewer KV rows than the corpus)" if args.p > 0 else ""
    print(f"corpus: {len(corpus.documents)} document(s), {len(corpus)} tokens; p = {args.p}{ratio}",
          file=sys.stderr)
    if args.budget:
        b = args.plan
        print(f"budget {args.budget:g}: {args.steps} steps x {args.accum} conversations, "
              f"{args.epochs} passes, lr {args.lr:g}, recall {args.recall:g}, "
              f"passage-qa {args.passage_qa:g}, placement {args.placement}, answers <= "
              f"{args.max_a}; coverage {b.coverage:.2f} = {b.conversations} "
              f"conversations x mean chunk {b.mean_chunk:g} / {len(corpus)} corpus tokens "
              f"(<= {b.supervised_per_token:.2f} supervised tokens per corpus token)",
              file=sys.stderr)
    try:
        rep = cs.train(model, corpus, p=args.p, steps=args.steps, accum=args.accum,
                       gen_batch=args.gen_batch, lr=args.lr, seed=args.seed, save=args.save,
                       chunk_min=args.chunk_min, chunk_max=args.chunk_max, max_q=args.max_q,
                       max_a=args.max_a, eval_every=args.eval_every, n_eval=args.n_eval,
                       pack=not args.no_pack, checkpoint=args.checkpoint, init=args.init,
                       progress=progress, epochs=args.epochs, recall=args.recall,
                       passage_qa=args.passage_qa, placement=args.placement,
                       state=args.state, spec_b=args.spec_b, draft_ref=args.draft_ref)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        msg = f"; the last saved cartridge is {args.save}" if args.save else ""
        if args.state:
            msg += f"; --state {args.state} resumes it"
        print(f"interrupted after {last.get('conversations', 0)} conversations "
              f"({last.get('synthesised', 0)} synthesised){msg}",
              file=sys.stderr)
        return 130
    if bar is not None:
        bar.close()
    t = rep.timing
    ep = f" ({args.epochs} passes)" if args.epochs > 1 else ""
    print(f"trained: {rep.conversations} conversations{ep}, {rep.steps} steps, "
          f"{rep.seconds:.1f} s ({rep.seconds_per_conversation:.2f} s/conversation: "
          f"generation {t['generate']:.1f} s, teacher {t['teacher']:.1f} s, "
          f"training {t['train']:.1f} s)")
    cpu = t["generate_cpu"] + t["teacher_cpu"] + t["train_cpu"]
    print(f"CPU: {cpu:.2f} CPU-s = {cpu / max(len(corpus), 1):.4f} per corpus token "
          f"(generation {t['generate_cpu']:.2f}, teacher {t['teacher_cpu']:.2f}, "
          f"training {t['train_cpu']:.2f}; this sitting, all threads)")
    if rep.heldout:
        print("held-out distill loss: " +
              ", ".join(f"step {s}: {v:.4f}" for s, v in rep.heldout))
    if args.save:
        print(f"saved {args.save}")
    return 0


def _draft_source(model, carts, corpus):
    """--spec-serve's reference: the artifacts' (built at load; several
    composed parts' concatenated, deg.spec.composed_reference), else the
    --corpus token ids (indexed here), else none (prompt + own output only)."""
    from ..spec import DraftRef, composed_reference
    ref = composed_reference(carts)
    if ref is not None:
        return ref, "the artifact's draft_reference" if len(carts) == 1 else \
            f"the parts' draft_references ({len(ref)} ids)"
    if corpus is not None:
        return DraftRef(model, corpus.ids), "--corpus"
    return None, "none (the prompt and the answer only)"


def cmd_ask(args):
    from .. import selfstudy as cs
    from ..cartridge import Cartridge
    model = _model(args)
    cart = Cartridge.load(model, args.load)
    corpus = cs.load_corpus(model, args.corpus) if args.corpus else None
    ref, src, sst = None, None, []
    if args.spec_serve:
        ref, src = _draft_source(model, [cart], corpus)
    t0 = time.perf_counter()
    answer = cs.ask(model, args.ask, cartridge=cart, max_tokens=args.max_tokens,
                    spec=args.spec_serve, draft_ref=ref, spec_stats=sst)
    t1 = time.perf_counter()
    print(f"[cartridge, {len(cart)} rows]\n{answer}")
    print(f"\n[bare model]\n{cs.ask(model, args.ask, max_tokens=args.max_tokens)}")
    if corpus is not None:
        print(f"\n[corpus in context, {len(corpus)} tokens]\n"
              f"{cs.ask(model, args.ask, corpus=corpus, max_tokens=args.max_tokens)}")
    print(f"\n(cartridge answer in {t1 - t0:.2f} s)", file=sys.stderr)
    _spec_report(src, sst)
    return 0


def _spec_report(src, sst):
    """--spec-serve's line on stderr: the draft source and the counters."""
    if sst:
        st = sst[0]
        print(f"(--spec-serve: drafts from {src}; {st.accepted}/{st.drafted} drafted tokens "
              f"accepted ({100 * st.acceptance:.0f}%), {st.forwards} forwards, gate off "
              f"{st.gate_offs}x)", file=sys.stderr)


def cmd_eval_qa(args):
    """Human-written Q&A: bare / untrained control / trained / in context."""
    import json
    from .. import selfstudy as cs
    from .. import cartridge_qa as qa
    from ..cartridge import Cartridge
    model = _model(args)
    meta, items = qa.load_qa(args.qa)
    if args.json and not os.path.isdir(os.path.dirname(os.path.abspath(args.json))):
        raise ArgumentError(f"--json {args.json!r}: its directory does not exist")
    if args.limit:
        items = items[:args.limit]
    if args.corpus:
        corpus = cs.load_corpus(model, args.corpus)
    else:
        corpus = cs.Corpus(model, [qa.qa_corpus(meta)])
    cart = Cartridge.load(model, args.load) if args.load else None
    if cart is None and not args.p:
        raise ArgumentError("eval --qa needs --load (the trained cartridge) or --p (the "
                            "control's rows, trained arm skipped)")
    arms = [a for a in qa.ARMS if not (args.no_icl and a == "in_context")]
    rep = qa.qa_evaluate(model, corpus, items, trained=cart, p=args.p or None,
                         max_tokens=args.max_tokens, arms=arms)
    rep["qa"] = str(args.qa)
    rep["cartridge"] = args.load
    if args.json:
        from ..atomic import atomic_write
        atomic_write(args.json, lambda fh: fh.write(json.dumps(rep, indent=1).encode()))
    print(qa.format_table(rep, f"{meta.get('name', args.qa)}: corpus {rep['corpus_tokens']} "
                                f"tokens, p = {rep['p']}"))
    return 0


def cmd_eval(args):
    from .. import selfstudy as cs
    from ..cartridge import Cartridge
    if args.qa:
        return cmd_eval_qa(args)
    if not args.load or not args.corpus:
        raise ArgumentError("eval needs --load and --corpus (or --qa FILE)")
    model = _model(args)
    cart = Cartridge.load(model, args.load)
    corpus = cs.load_corpus(model, args.corpus)
    convs = cs.heldout_set(model, corpus, args.seed, args.n_eval,
                           cache=False if args.no_cache else None, chunk_min=args.chunk_min,
                           chunk_max=args.chunk_max, max_q=args.max_q, max_a=args.max_a)
    ev = cs.evaluate(cart, corpus, convs, icl=not args.no_icl)
    print(f"held-out: {len(convs)} questions, {ev.n_tokens} answer tokens (NLL per token)")
    print(f"  bare model        NLL {ev.nll_bare:.4f}   KV rows {ev.rows_bare:.0f}")
    print(f"  cartridge         NLL {ev.nll_cartridge:.4f}   KV rows {ev.rows_cartridge:.0f}")
    if args.untrained:  # the control: what training added to the corpus-init rows
        init = Cartridge.from_corpus(model, corpus.text, len(cart))
        nu = cs.nll_cartridge(init, convs)
        gap = ("" if args.no_icl else
               f"   gap closure {(ev.nll_bare - nu) / (ev.nll_bare - ev.nll_icl):.3f}")
        print(f"  untrained init    NLL {nu:.4f}   KV rows {ev.rows_cartridge:.0f}{gap}")
    if args.no_icl:
        print("  corpus in context skipped (--no-icl)")
        print(f"  gap closure skipped (needs the corpus-in-context arm); "
              f"held-out distill loss {ev.distill_loss:.4f}")
        return 0
    print(f"  corpus in context NLL {ev.nll_icl:.4f}   KV rows {ev.rows_icl:.0f}")
    print(f"  gap closure {ev.gap_closure:.3f}; cartridge/ICL KV rows "
          f"{ev.rows_cartridge / ev.rows_icl:.3f}; held-out distill loss {ev.distill_loss:.4f}")
    return 0


def cmd_compose(args):
    """Answer behind several saved cartridges composed by concatenation."""
    from .. import selfstudy as cs
    from ..cartridge import Cartridge, compose_len
    model = _model(args)
    parts = [Cartridge.load(model, path) for path in args.load]
    rows = compose_len(parts)
    ref, src, sst = None, None, []
    if args.spec_serve:
        ref, src = _draft_source(model, parts, None)
    answer = cs.ask(model, args.ask, cartridge=parts, max_tokens=args.max_tokens,
                    spec=args.spec_serve, draft_ref=ref, spec_stats=sst)
    print(f"[{len(parts)} cartridges composed, {rows} rows]\n{answer}")
    _spec_report(src, sst)
    return 0


def _equiv_gate(model, trunk, prefix, suffix):
    """The equivalence gate of `cartridge equiv` and `fleet equiv`: the suffix's logits
    behind trunk (the path under test) vs behind a real prefill of the prefix ids.
    Returns (max |delta logit|, number of suffix rows whose greedy token agrees)."""
    def logits_behind(t):
        f = t.fork()
        try:
            return f.feed(suffix, logits="all")
        finally:
            f.close()
    got = logits_behind(trunk)
    ref_t = model.trunk(prefix)
    try:
        ref = logits_behind(ref_t)
    finally:
        ref_t.close()
    nv, n = model.info.n_vocab, len(suffix)
    dmax = max(abs(a - b) for a, b in zip(got, ref))
    agree = sum(max(range(nv), key=lambda j: got[i * nv + j]) ==
                max(range(nv), key=lambda j: ref[i * nv + j]) for i in range(n))
    return dmax, agree


def cmd_equiv(args):
    """Zero-training gate: a corpus-init cartridge vs the real prefill of the
    same tokens, on a suffix of the corpus."""
    from .. import selfstudy as cs
    from ..cartridge import Cartridge
    model = _model(args)
    corpus = cs.load_corpus(model, args.corpus)
    wrapped = cs.chat_ids(model, [{"role": "system", "content": corpus.text}],
                          add_generation_prompt=False)
    n_suf = min(args.suffix_max, len(wrapped) - args.p)
    if n_suf < 1:
        raise ArgumentError(f"corpus has {len(wrapped)} tokens wrapped; the gate needs more "
                            f"than p = {args.p}")
    cart = Cartridge.from_corpus(model, corpus.text, args.p)
    # cartridge serving path vs a real prefill of the same prefix
    t = cart.trunk()
    try:
        dmax, agree = _equiv_gate(model, t, wrapped[:args.p], wrapped[args.p:args.p + n_suf])
    finally:
        t.close()
    print(f"equiv: p = {args.p}, suffix {n_suf}: max |delta logit| = {dmax:g}, "
          f"greedy {agree}/{n_suf}")
    return 0 if dmax <= args.tolerance and agree == n_suf else 1


def register(sub):
    p = sub.add_parser("cartridge", help="train, evaluate and serve cartridges (self-study)")
    s = p.add_subparsers(dest="cartridge_command", metavar="SUBCOMMAND")
    s.required = True

    t = s.add_parser("train", help="self-study training of a cartridge")
    _common(t)
    t.add_argument("--corpus", nargs="+", required=True, help="text files or directories")
    t.add_argument("--p", type=int, default=256, help="cartridge rows (256)")
    t.add_argument("--steps", type=int, default=None,
                   help="optimizer steps per pass; steps x accum conversations are "
                        "synthesised (8)")
    t.add_argument("--budget", type=float, nargs="?", const=True, default=0,
                   help="the issue-13 recipe: a coverage target as the spec defines it "
                        "(conversations x mean chunk length / corpus tokens; without a value "
                        "the recipe's, deg.selfstudy.RECIPE_BUDGET = 4): picks --steps from "
                        "the corpus length (deg.selfstudy.budget_plan) and defaults every "
                        "option below that is not given to deg.selfstudy.RECIPE (recall-only "
                        "conversations, cover placement, answers <= 192 tokens, lr 2e-2, "
                        "accum 2, 4 passes)")
    t.add_argument("--epochs", type=int, default=None,
                   help="passes over the synthesised conversations (1)")
    t.add_argument("--accum", type=int, default=None, help="conversations per step (4)")
    t.add_argument("--recall", type=float, default=None,
                   help="fraction of corpus-recall conversations: a corpus span asks, the "
                        "text that follows it answers, no decoding (0)")
    t.add_argument("--passage-qa", type=float, default=None,
                   help="fraction of passage-question conversations: bot A asks the question "
                        "a passage of the corpus answers, the passage's own words answer "
                        "(0; recall + passage-qa <= 1)")
    t.add_argument("--placement", choices=["random", "cover"], default=None,
                   help="chunk placement: random (the spec's uniform chunk start) or cover "
                        "(shuffled cycles of windows tiling the corpus, a recall answer per "
                        "window: every token supervised once conversations >= corpus "
                        "tokens / max-a) (random)")
    t.add_argument("--gen-batch", type=int, default=0,
                   help="conversations synthesised per lockstep batch (default: --accum)")
    t.add_argument("--lr", type=float, default=None, help="Adam learning rate (2e-3)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--save", help="output .safetensors (written atomically after each step)")
    t.add_argument("--state", help="directory of resumable snapshots (after each step): "
                                   "run again with the same DIR and options to continue a "
                                   "killed run, or with more --epochs to extend a finished one")
    t.add_argument("--eval-every", type=int, default=0,
                   help="held-out distill loss every K steps (0 = off)")
    t.add_argument("--n-eval", type=int, default=4, help="held-out conversations (4)")
    t.add_argument("--no-pack", action="store_true",
                   help="one backward per conversation (flat memory, same gradient) "
                        "instead of one packed backward per group")
    t.add_argument("--checkpoint", action="store_true", help="recompute layers in backward")
    t.add_argument("--init", default="corpus", choices=["corpus", "random-text"])
    t.add_argument("--quiet", action="store_true")
    t.add_argument("--spec-b", action="store_true",
                   help="decode bot B speculatively (drafts from its own prompt; the same "
                        "conversations, byte for byte)")
    t.add_argument("--draft-ref", action="store_true",
                   help="store the corpus token ids in the artifact (I64 draft_reference, 8 "
                        "bytes/token) for ask --spec-serve")
    _study_opts(t, recipe=True)
    t.set_defaults(func=cmd_train)

    a = s.add_parser("ask", help="answer behind a cartridge, bare, and with the corpus")
    _common(a)
    a.add_argument("--load", required=True)
    a.add_argument("--ask", required=True)
    a.add_argument("--corpus", nargs="+")
    a.add_argument("--max-tokens", type=int, default=200)
    a.add_argument("--spec-serve", action="store_true",
                   help="decode the cartridge answer speculatively (the same answer): drafts "
                        "from the artifact's draft_reference (train --draft-ref), else from "
                        "--corpus")
    a.set_defaults(func=cmd_ask)

    e = s.add_parser("eval", help="held-out NLL: bare vs cartridge vs corpus in context")
    _common(e)
    e.add_argument("--load", help="the trained cartridge")
    e.add_argument("--corpus", nargs="+",
                   help="text files or directories (with --qa: default the Q&A file's source)")
    e.add_argument("--qa", help="human-written Q&A file (deg-qa/1, bench/qa/): score the "
                                "references under bare / untrained control / trained / in "
                                "context, NLL and key-fact correctness")
    e.add_argument("--p", type=int, default=0,
                   help="with --qa and no --load: the control's rows")
    e.add_argument("--max-tokens", type=int, default=64,
                   help="with --qa: greedy answer tokens per question (0 = NLL only)")
    e.add_argument("--limit", type=int, default=0, help="with --qa: first N items only")
    e.add_argument("--json", help="with --qa: write the full report (per item) here")
    e.add_argument("--n-eval", type=int, default=8)
    e.add_argument("--seed", type=int, default=0x5EED0000)
    e.add_argument("--no-icl", action="store_true",
                   help="skip the corpus-in-context arm (its prefill is the costly one)")
    e.add_argument("--untrained", action="store_true",
                   help="also score the untrained corpus-init cartridge of the same p "
                        "(the control: what training added)")
    e.add_argument("--no-cache", action="store_true",
                   help="synthesise the held-out set again instead of reusing the cached one "
                        "(<deg cache>/heldout, keyed by corpus, model, seed and settings)")
    _study_opts(e)
    e.set_defaults(func=cmd_eval)

    c = s.add_parser("compose", help="answer behind several cartridges composed")
    _common(c)
    c.add_argument("--load", nargs="+", required=True,
                   help="saved cartridges, composed in this order")
    c.add_argument("--ask", required=True)
    c.add_argument("--max-tokens", type=int, default=200)
    c.add_argument("--spec-serve", action="store_true",
                   help="decode speculatively (the same answer), drafting from the parts' "
                        "draft_references concatenated in part order")
    c.set_defaults(func=cmd_compose)

    q = s.add_parser("equiv", help="zero-training gate (untrained cartridge == prefill)")
    _common(q)
    q.add_argument("--corpus", nargs="+", required=True)
    q.add_argument("--p", type=int, default=256)
    q.add_argument("--suffix-max", type=int, default=128)
    q.add_argument("--tolerance", type=float, default=0.0)
    q.set_defaults(func=cmd_equiv)
