"""Fleet workflows over deg.Fleet (spec cartridges.md, "Mixed-visibility joint
self-study" and "Cartridge-RAG selection"): self-study rounds over the
resident documents, the embedding index built through the serving model
itself, top-k selection, and answers behind the selected cartridges composed.

Index recipe (the contract: index chunks and queries embed identically,
EMBED_RECIPE is stored in the index): the MEAN of the model's final-norm
hidden states over the text's tokens (deg Fork.hidden), L2-normalised.
Selection: cosine top-k over chunks, deduplicated to documents in best-chunk
order (ties to the lower chunk index). A measured divergence from the spec's
recipe (topic-instruction suffix, last hidden state, centroid centring, from
26B-model measurements): on SmolLM2-135M and the six documents of
bench/fleet_demo.py the spec's recipe put the home document first for 3/12
hand-written questions (8/12 without the centring), mean pooling for 10/12
(bench/README.md).
"""
import os
import random
import time
from collections import namedtuple
from pathlib import Path

from . import cartridges as cs
from .errors import ArgumentError, DegIOError, FormatError, StateError

__all__ = ["train", "build_index", "load_index", "doc_scores", "select", "ask", "embed_ids",
           "EMBED_RECIPE"]

EMBED_RECIPE = "mean-final-norm/1"
INDEX_FILE = "index.npz"

RoundInfo = namedtuple("RoundInfo", "round target parts loss conversations seconds")


# --------------------------------------------------------------------------
# Mixed-visibility joint self-study
# --------------------------------------------------------------------------

def _doc_corpus(fleet, i):
    return cs.Corpus(fleet.model, [(fleet.doc(i).name, fleet.text(i))])


SCHEDULES = ("length", "uniform")


def _pick_parts(fleet, res, rng, schedule, p_iso, distract_max):
    """One round's target and co-loaded parts among the residents res.
    "length" (the spec's sampler): the target is drawn proportional to its
    token count, distractors uniformly. "uniform": the draw is restricted to
    the least-trained residents and the distractors are the least-trained
    other residents (ties broken by the same rng), so that with the
    rotation the per-document step counts stay within +-1 (the spec's
    sampler reaches that only for some seeds: a long resident is drawn
    again and again, and every co-loaded distractor steps too)."""
    steps = {i: fleet.doc(i).steps for i in res}
    cand = res
    if schedule == "uniform":
        low = min(steps.values())
        cand = [i for i in res if steps[i] == low]
    target = rng.choices(cand, weights=[max(fleet.doc(i).tokens, 1) for i in cand])[0]
    parts = [target]
    others = [i for i in res if i != target]
    if rng.random() >= p_iso and others and distract_max > 0:
        k = rng.randint(1, min(distract_max, len(others)))
        if schedule == "uniform":
            parts += sorted(others, key=lambda i: (steps[i], rng.random()))[:k]
        else:
            parts += rng.sample(others, k)
        rng.shuffle(parts)
    return target, parts


def train(fleet, rounds, accum=4, p_iso=0.75, distract_max=2, seed=0, pack=True,
          checkpoint=False, progress=None, save_every=1, schedule="length", **study):
    """rounds optimizer rounds of mixed-visibility self-study over fleet.
    Each round samples a target among the RESIDENT documents proportional
    to its token count (schedule "uniform": among the least-trained
    residents, see _pick_parts); with probability p_iso its cartridge is the
    only prefix, else 1..distract_max other residents co-load in shuffled
    order.
    accum conversations about the target (bot A asks about a chunk of the
    target document, bot B answers with the chunk in context: deg.cartridges
    SelfStudy, seeded per document from seed) train behind the composed
    prefix in one packed backward, and every co-loaded cartridge's optimizer
    steps (deg.Fleet.step, which also rotates the residents). The fleet is
    saved every save_every rounds and at the end. study: SelfStudy options
    (chunk_min, chunk_max, max_q, max_a). progress(RoundInfo) per round.
    Returns the list of RoundInfo."""
    if rounds < 0 or accum < 1 or not (0.0 <= p_iso <= 1.0) or distract_max < 0:
        raise ArgumentError(f"need rounds >= 0, accum >= 1, 0 <= p_iso <= 1, distract_max "
                            f">= 0 (got {rounds}, {accum}, {p_iso}, {distract_max})")
    if schedule not in SCHEDULES:
        raise ArgumentError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    rng = random.Random(seed)
    studies, out = {}, []
    t0 = time.perf_counter()
    for r in range(rounds):
        res = fleet.residents()
        if not res:
            raise StateError("fleet: no resident documents")
        target, parts = _pick_parts(fleet, res, rng, schedule, p_iso, distract_max)
        if target not in studies:
            studies[target] = cs.SelfStudy(fleet.model, _doc_corpus(fleet, target),
                                           seed=seed * 1000003 + target, **study)
        convs = studies[target].generate(accum)
        carts = [fleet.cartridge(i) for i in parts]
        for c in carts:
            c.zero_grads()
        if pack:
            loss = cs.packed_backward(carts, convs, checkpoint)
        else:
            loss = cs.group_backward(carts, convs, checkpoint)
        fleet.step(parts)
        if save_every and ((r + 1) % save_every == 0 or r + 1 == rounds):
            fleet.save()
        info = RoundInfo(fleet.rounds, target, parts, loss, accum,
                         time.perf_counter() - t0)
        out.append(info)
        if progress:
            progress(info)
    return out


# --------------------------------------------------------------------------
# Embedding index
# --------------------------------------------------------------------------

def embed_ids(model, ids):
    """The recipe's embedding of token ids: the mean of the final-norm hidden
    states of every token, L2-normalised (numpy f32 [n_embd]; the mean is
    accumulated in f64 in token order)."""
    np = _np()
    ids = list(ids)
    if not ids:
        raise ArgumentError("embedding: no tokens (empty text)")
    t = model.trunk()
    try:
        f = t.fork()
        f.feed(ids)
        h = np.frombuffer(f.hidden(0, len(ids)), dtype=np.float32).reshape(len(ids), -1)
        f.close()
    finally:
        t.close()
    v = h.astype(np.float64).mean(axis=0)
    norm = float(np.linalg.norm(v))
    if not norm > 0:
        raise ArgumentError("embedding: zero hidden state")
    return (v / norm).astype(np.float32)


def _np():
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        raise StateError("the fleet index needs numpy (pip install numpy)") from None
    return np


def build_index(fleet, chunk=256, progress=None):
    """Embed every document of fleet in chunks of `chunk` tokens through the
    model and write DIR/index.npz atomically (rows [n_chunks, n_embd] f32
    L2-normalised, doc [n_chunks] i64, chunk, the recipe name, the document
    count). progress(done, total) per chunk. Returns the number of chunks."""
    np = _np()
    if chunk < 1:
        raise ArgumentError(f"chunk must be >= 1 token, got {chunk}")
    model = fleet.model
    spans = []
    for i in range(len(fleet)):
        ids = model.tokenize(fleet.text(i))
        for s in range(0, max(len(ids), 1), chunk):
            if ids[s:s + chunk]:
                spans.append((i, ids[s:s + chunk]))
    rows, docs = [], []
    for n, (i, ids) in enumerate(spans):
        rows.append(embed_ids(model, ids))
        docs.append(i)
        if progress:
            progress(n + 1, len(spans))
    rows = np.stack(rows).astype(np.float32)
    path = Path(fleet.path) / INDEX_FILE
    tmp = path.with_name(f"{INDEX_FILE}.tmp.{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, rows=rows, doc=np.array(docs, dtype=np.int64),
                     chunk=np.array(chunk, dtype=np.int64), recipe=np.array(EMBED_RECIPE),
                     n_docs=np.array(len(fleet), dtype=np.int64))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return len(docs)


Index = namedtuple("Index", "rows doc chunk")


def load_index(fleet):
    """The fleet's index (DegIOError if `deg fleet index` has not run;
    FormatError if it was built with another recipe or document count)."""
    np = _np()
    path = Path(fleet.path) / INDEX_FILE
    try:
        z = np.load(path)
    except OSError as e:
        raise DegIOError(f"fleet index {os.fspath(path)!r}: {e.strerror or e}; build it with "
                         "`deg fleet index DIR`") from None
    if "recipe" not in z or str(z["recipe"]) != EMBED_RECIPE or \
            int(z["n_docs"]) != len(fleet):
        raise FormatError(f"fleet index {os.fspath(path)!r} is stale (other recipe or "
                          "document count): rebuild it with `deg fleet index DIR`")
    return Index(z["rows"], z["doc"], int(z["chunk"]))


def doc_scores(fleet, query, index=None):
    """Every document's score for query (text): the cosine of its best chunk
    (numpy f64 [n_docs]; -inf for a document without chunks)."""
    np = _np()
    index = index or load_index(fleet)
    q = embed_ids(fleet.model, fleet.model.tokenize(query))
    best = np.full(len(fleet), -np.inf)
    np.maximum.at(best, index.doc, (index.rows @ q).astype(np.float64))
    return best


def select(fleet, query, k=1, index=None):
    """The k documents best matching query (text), best first: a list of
    (doc index, cosine of its best chunk); ties go to the lower document
    (the best chunk of each document decides, as a chunk top-k deduplicated
    to documents in best-chunk order)."""
    np = _np()
    if k < 1:
        raise ArgumentError(f"k must be >= 1, got {k}")
    best = doc_scores(fleet, query, index)
    order = np.argsort(-best, kind="stable")
    return [(int(d), float(best[d])) for d in order[:k] if np.isfinite(best[d])]


def ask(fleet, question, k=1, oracle=None, max_tokens=200, index=None):
    """Answer question behind the composed cartridges of the selected
    documents (oracle: a document name or index bypassing retrieval).
    Returns (selected [(doc, score)], answer)."""
    if oracle is not None:
        names = [d.name for d in fleet.docs()]
        if isinstance(oracle, int) or str(oracle).isdigit():
            sel = [(int(oracle), None)]
        elif oracle in names:
            sel = [(names.index(oracle), None)]
        else:
            raise ArgumentError(f"--oracle {oracle!r}: no such document (the fleet has " +
                                ", ".join(map(repr, names)) + ")")
        if not 0 <= sel[0][0] < len(fleet):
            raise ArgumentError(f"--oracle {oracle}: document index outside [0, {len(fleet)})")
    else:
        sel = select(fleet, question, k, index)
    trunk = fleet.trunk([d for d, _ in sel])
    return sel, cs.ask(fleet.model, question, trunk=trunk, max_tokens=max_tokens)
