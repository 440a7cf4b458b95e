"""`deg fleet init|train|index|ask|status|equiv`: per-document cartridge fleets.

  deg fleet init DIR --docs FILE... --p N [--draft-ref]   corpus-init cartridges, no training
  deg fleet draft-ref DIR [--remove]             store (remove) the documents' draft references
  deg fleet train DIR --rounds N [--budget B --rotate-every R --accum A --p-iso 0.75 --spec-b]
  deg fleet index DIR [--embed-chunk 256]        the retrieval index (through the model)
  deg fleet ask DIR --ask Q [--k 1] [--oracle NAME] [--json] [--max-tokens N] [--spec-serve]
  deg fleet status DIR
  deg fleet equiv --docs A B --p N               the two-part composition gate

Spec: cartridges.md, "Cartridges at Scale". The model defaults to $DEG_MODEL or
the fetched default (deg.default_model_path()).
"""
import json
import os
import sys

from ..errors import ArgumentError
from .cartridge import _common, _equiv_gate, _model, _study_opts


def _bar(total, unit, quiet):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return None
    return tqdm(total=total, unit=unit, file=sys.stderr, dynamic_ncols=True, disable=quiet)


def cmd_init(args):
    from .. import selfstudy as cs
    from ..fleet import Fleet
    model = _model(args)
    docs = []
    for path in args.docs:
        text = cs._read_document(path)
        if not text.strip():
            raise ArgumentError(f"--docs: {path!r} holds no text")
        docs.append((path, text))
    Fleet.init(model, args.dir, docs, args.p, draft_ref=args.draft_ref)
    print(f"fleet {args.dir}: {len(docs)} documents, p = {args.p} (corpus-init, untrained"
          + (", draft references stored)" if args.draft_ref else ")"))
    return 0


def _open(args, model=None, **kw):
    from ..fleet import Fleet
    return Fleet.open(model or _model(args), args.dir, **kw)


def cmd_train(args):
    from .. import fleets
    fleet = _open(args, budget=args.budget, rotate_every=args.rotate_every,
                  evict_fraction=args.evict_fraction, warmup_steps=args.warmup, lr=args.lr)
    bar = _bar(args.rounds, "round", args.quiet)

    def progress(info):
        if bar is not None:
            bar.set_postfix(loss=f"{info.loss:.4f}", target=info.target, parts=len(info.parts))
            bar.update(1)

    try:
        fleets.train(fleet, args.rounds, accum=args.accum, p_iso=args.p_iso,
                     distract_max=args.distract_max, seed=args.seed, progress=progress,
                     schedule=args.schedule,
                     chunk_min=args.chunk_min, chunk_max=args.chunk_max, max_q=args.max_q,
                     max_a=args.max_a, spec_b=args.spec_b)
    finally:
        if bar is not None:
            bar.close()
    _print_status(fleet)
    fleet.close()
    return 0


def _print_status(fleet, resident=None):
    """resident: the R column per document (default: resident in this process)."""
    print(f"fleet {fleet.path}: {len(fleet)} documents, p = {fleet.p}, {fleet.rounds} rounds")
    for d in fleet.docs():
        r = resident[d.index] if resident is not None else d.resident
        print(f"  [{d.index}] {'R' if r else ' '} steps {d.steps:5d}  tokens "
              f"{d.tokens:7d}  {d.name}")


def cmd_draft_ref(args):
    fleet = _open(args, budget=1)  # absentees are mapped one at a time
    n = fleet.set_draft_refs(on=not args.remove)
    what = "removed from" if args.remove else "stored in"
    print(f"fleet {args.dir}: draft references {what} {n} of {len(fleet)} cartridges "
          f"({len(fleet) - n} already {'without' if args.remove else 'with'} them)")
    fleet.close()
    return 0


def cmd_status(args):
    fleet = _open(args, budget=1)  # maps one cartridge: R is read from the manifest
    with open(os.path.join(args.dir, "fleet.json"), encoding="utf-8") as f:
        saved = [bool(d.get("resident")) for d in json.load(f)["documents"]]
    _print_status(fleet, saved)
    return 0


def cmd_index(args):
    from .. import fleets
    fleet = _open(args, budget=1)
    bar = _bar(None, "chunk", args.quiet)

    def progress(done, total):
        if bar is not None:
            bar.total = total
            bar.update(1)

    try:
        n = fleets.build_index(fleet, chunk=args.embed_chunk, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    print(f"index: {n} chunks of <= {args.embed_chunk} tokens over {len(fleet)} documents")
    return 0


def cmd_ask(args):
    from .. import fleets
    fleet = _open(args, budget=1)  # serving maps the selected cartridges
    sst = []
    sel, answer = fleets.ask(fleet, args.ask, k=args.k, oracle=args.oracle,
                             max_tokens=args.max_tokens, spec=args.spec_serve, spec_stats=sst)
    names = [fleet.doc(d).name for d, _ in sel]
    if args.spec_serve:
        st = sst[0]
        print(f"(--spec-serve: drafts from the selected documents' draft_references; "
              f"{st.accepted}/{st.drafted} drafted tokens accepted, {st.forwards} forwards, "
              f"{st.gate_offs} gate offs)", file=sys.stderr)
    if args.json:
        print(json.dumps({"selected": names,
                          "scores": [s for _, s in sel],
                          "prefix_rows": fleet.p * len(sel), "answer": answer}))
    else:
        for (d, s), n in zip(sel, names):
            print(f"[selected] {n}" + (f" (score {s:.3f})" if s is not None else " (oracle)"))
        print(answer)
    return 0


def cmd_equiv(args):
    """Two-part composition gate: parts A (rows 0..p-1) and B (rows p..2p-1)
    split from one capture of the two documents' concatenation, composed,
    vs the real prefill of the same 2p tokens, on the next tokens."""
    from .. import selfstudy as cs
    from ..cartridge import Cartridge, compose_trunk
    model = _model(args)
    corpus = cs.load_corpus(model, args.docs)
    wrapped = cs.chat_ids(model, [{"role": "system", "content": corpus.text}],
                          add_generation_prompt=False)
    p = args.p
    n_suf = min(args.suffix_max, len(wrapped) - 2 * p)
    if n_suf < 1:
        raise ArgumentError(f"the documents have {len(wrapped)} tokens wrapped; the gate needs "
                            f"more than 2p = {2 * p}")
    whole = Cartridge.from_tokens(model, wrapped[:2 * p])
    parts = [Cartridge.random_vectors(model, p), Cartridge.random_vectors(model, p)]
    for il in range(model.info.n_layer):
        row = whole.row_len(il)
        if not row:  # a recurrent layer (the composition below refuses the model, naming
            continue  # why) or a Gemma 4 layer reading another layer's K/V
        k, v = whole.rows(il)
        for j, part in enumerate(parts):
            part.set_rows(il, k[j * p * row:(j + 1) * p * row], v[j * p * row:(j + 1) * p * row])
    t = compose_trunk(parts)
    try:
        dmax, agree = _equiv_gate(model, t, wrapped[:2 * p], wrapped[2 * p:2 * p + n_suf])
    finally:
        t.close()
    print(f"equiv (2 parts x p = {p}, {2 * p} composed rows, suffix {n_suf}): "
          f"max |delta logit| = {dmax:g}, greedy agreement {agree}/{n_suf}")
    return 0 if dmax <= args.tolerance and agree == n_suf else 1


def register(sub):
    p = sub.add_parser("fleet", help="per-document cartridge fleets: init, train, index, ask")
    s = p.add_subparsers(dest="fleet_command", metavar="SUBCOMMAND")
    s.required = True

    i = s.add_parser("init", help="create a fleet: one corpus-init cartridge per document")
    _common(i)
    i.add_argument("dir")
    i.add_argument("--docs", nargs="+", required=True, help="text files, one per document")
    i.add_argument("--p", type=int, required=True, help="cartridge rows per document")
    i.add_argument("--draft-ref", action="store_true",
                   help="store each document's token ids in its cartridge (I64 "
                        "draft_reference, 8 bytes/token) for ask / deg serve --spec-serve")
    i.set_defaults(func=cmd_init)

    r = s.add_parser("draft-ref", help="store each document's token ids in its cartridge "
                     "(as init --draft-ref) for ask / deg serve --spec-serve")
    _common(r)
    r.add_argument("dir")
    r.add_argument("--remove", action="store_true", help="remove the draft references instead")
    r.set_defaults(func=cmd_draft_ref)

    t = s.add_parser("train", help="mixed-visibility joint self-study under a resident budget")
    _common(t)
    t.add_argument("dir")
    t.add_argument("--rounds", type=int, required=True, help="optimizer rounds")
    t.add_argument("--accum", type=int, default=4, help="conversations per round (4)")
    t.add_argument("--budget", type=int, default=4, help="resident cartridges (4; 0 = all)")
    t.add_argument("--rotate-every", type=int, default=10, help="R: rotation period (10)")
    t.add_argument("--evict-fraction", type=float, default=0.5, help="phi (0.5)")
    t.add_argument("--warmup", type=int, default=4, help="per-entrant lr warm-up steps (4)")
    t.add_argument("--lr", type=float, default=2e-3, help="Adam learning rate (2e-3)")
    t.add_argument("--p-iso", type=float, default=0.75,
                   help="probability a round trains the target alone (0.75)")
    t.add_argument("--distract-max", type=int, default=2, help="max distractors (2)")
    t.add_argument("--schedule", choices=["length", "uniform"], default="length",
                   help="target draw: proportional to length over the residents (the spec's, "
                        "default) or only documents at the fleet's fewest steps, distractors "
                        "too, rotating early when none is resident (step counts within 1)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--spec-b", action="store_true",
                   help="bot B decodes speculatively (the same conversations and fleet bytes)")
    t.add_argument("--quiet", action="store_true")
    _study_opts(t)
    t.set_defaults(func=cmd_train)

    x = s.add_parser("index", help="build the retrieval index through the model")
    _common(x)
    x.add_argument("dir")
    x.add_argument("--embed-chunk", type=int, default=256, help="tokens per chunk (256)")
    x.add_argument("--quiet", action="store_true")
    x.set_defaults(func=cmd_index)

    a = s.add_parser("ask", help="retrieve, compose and answer")
    _common(a)
    a.add_argument("dir")
    a.add_argument("--ask", required=True)
    a.add_argument("--k", type=int, default=1, help="documents to compose (1)")
    a.add_argument("--oracle", help="document name or index (bypasses retrieval)")
    a.add_argument("--json", action="store_true",
                   help="one JSON object: selected (file paths, best first), answer")
    a.add_argument("--max-tokens", type=int, default=200)
    a.add_argument("--spec-serve", action="store_true",
                   help="decode speculatively (the same answer), drafting from the selected "
                        "documents' draft references (init --draft-ref)")
    a.set_defaults(func=cmd_ask)

    st = s.add_parser("status", help="documents, step counts, residency")
    _common(st)
    st.add_argument("dir")
    st.set_defaults(func=cmd_status)

    q = s.add_parser("equiv", help="two-part composition gate (== the real prefill)")
    _common(q)
    q.add_argument("--docs", nargs="+", required=True)
    q.add_argument("--p", type=int, default=256)
    q.add_argument("--suffix-max", type=int, default=128)
    q.add_argument("--tolerance", type=float, default=0.0)
    q.set_defaults(func=cmd_equiv)
