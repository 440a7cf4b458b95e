"""Fleet workflows over deg.Fleet (spec cartridges.md, "Mixed-visibility joint
self-study" and "Cartridge-RAG selection"): self-study rounds over the
resident documents, the embedding index built through the serving model
itself, top-k selection, and answers behind the selected cartridges composed.

Index recipe (the contract: index chunks and queries score identically;
EMBED_RECIPE is stored in the index and an index of another recipe is
refused). Documents are cut into chunks of --embed-chunk tokens. Dense half:
a chunk (or query) embeds as the MEAN of the model's final-norm hidden
states over its tokens (deg Fork.hidden), L2-normalised, then centred on
the chunks' centroid and re-normalised (the spec's all-but-the-top
correction; the centroid is persisted in the index and centres queries
too). Lexical half: Okapi BM25 (deg.bm25) over the chunks' words. A
document's score is its best chunk's centred cosine plus LEXICAL_WEIGHT
times its best chunk's BM25 over the query's best BM25; selection is the
top-k documents by that score (a chunk top-k deduplicated to documents in
best-chunk order).

Divergences from the spec's recipe (topic-instruction suffix, LAST hidden
state, centroid centring; measured there on 26B models): mean pooling and
the lexical half. Each measured on SmolLM2-135M and bench/fleet_demo.py's
six documents, the recipe chosen on its question set A only (most hits,
then the widest smallest relative margin; bench/fleet_retrieval.py,
bench/README.md "Fleet retrieval"): the suffix + last hidden state put the
home document first for 3/12 (8/12 without centring), mean pooling for
10/12, mean pooling + centring for 6/12, the fused score 12/12 (widest
margin among recipes keeping the model's embedding: centred, weight 0.8).
On the held-out sets it finds 12/12 (B) and 18/18 (C), where mean pooling
alone finds 6/12 and 12/18.
"""
import os
import time
from collections import namedtuple
from pathlib import Path

from . import selfstudy as cs
from ._native import check, ffi, lib
from .bm25 import BM25
from .errors import ArgumentError, DegIOError, FormatError, StateError

__all__ = ["train", "train_params", "draw", "build_index", "load_index", "doc_scores", "select", "ask", "embed_ids",
           "EMBED_RECIPE", "LEXICAL_WEIGHT"]

EMBED_RECIPE = "mean-final-norm+centred+bm25/2"
LEXICAL_WEIGHT = 0.8  # the BM25 half's weight against the centred cosine (chosen on set A)
INDEX_FILE = "index.npz"
DEFAULT_CHUNK = 256  # tokens per index chunk (deg fleet index --embed-chunk)

RoundInfo = namedtuple("RoundInfo", "round target parts loss conversations seconds")


# --------------------------------------------------------------------------
# Mixed-visibility joint self-study
# --------------------------------------------------------------------------

SCHEDULES = ("length", "uniform")


def train_params(accum=4, p_iso=0.75, distract_max=2, seed=0, pack=True, checkpoint=False,
                 schedule="length", **study):
    """The deg_fleet_train_params of train()'s settings (study: SelfStudy's
    synthesis keywords)."""
    if accum < 1 or not (0.0 <= p_iso <= 1.0) or distract_max < 0:
        raise ArgumentError(f"need accum >= 1, 0 <= p_iso <= 1, distract_max >= 0 (got "
                            f"{accum}, {p_iso}, {distract_max})")
    if schedule not in SCHEDULES:
        raise ArgumentError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    tp = lib.deg_fleet_default_train_params()
    tp.accum, tp.p_iso, tp.distract_max = accum, p_iso, distract_max
    tp.schedule = (lib.DEG_FLEET_SCHEDULE_UNIFORM if schedule == "uniform"
                   else lib.DEG_FLEET_SCHEDULE_LENGTH)
    tp.seed = seed & 0xFFFFFFFFFFFFFFFF
    tp.pack, tp.checkpoint = 1 if pack else 0, 1 if checkpoint else 0
    tp.study = cs.study_params(**study)
    return tp


def draw(fleet, **kw):
    """(target, parts) of the fleet's next round (deg_fleet_draw; kw as
    train's settings), without training."""
    tp = ffi.new("deg_fleet_train_params *", train_params(**kw))
    cap = 1 + tp.distract_max
    target, parts, n = ffi.new("size_t *"), ffi.new("size_t[]", cap), ffi.new("size_t *")
    with fleet._use() as _p:
        check(lib.deg_fleet_draw(_p, tp, target, parts, cap, n))
    return target[0], list(parts[0:n[0]])


def train(fleet, rounds, accum=4, p_iso=0.75, distract_max=2, seed=0, pack=True,
          checkpoint=False, progress=None, save_every=1, schedule="length", **study):
    """rounds optimizer rounds of mixed-visibility self-study over fleet
    (deg_fleet_train_round; include/cartridge.h, "Mixed-visibility joint
    self-study over a fleet"). Each round draws a target among the RESIDENT
    documents proportional to its token count; with probability p_iso its
    cartridge is the only prefix, else 1..distract_max other residents
    co-load in shuffled order. schedule "uniform": only documents at the
    fleet's fewest steps take part (target and distractors), and when all
    of those are on disk the fleet rotates before the round, so the
    per-document step counts stay within 1 of each other after every round
    in every setting (the spec's length sampler reaches that only for some
    seeds); co-loaded rounds become rarer near the end of each level.
    accum conversations about the target (bot A asks about a chunk of the
    target document, bot B answers with the chunk in context: deg_selfstudy
    over that document, seeded per round from seed) train behind the
    composed prefix in one packed backward, and every co-loaded cartridge's
    optimizer steps (deg_fleet_step, which also rotates the residents). The
    fleet is saved every save_every rounds and at the end. study: SelfStudy
    options (chunk_min, chunk_max, max_q, max_a, ...). progress(RoundInfo)
    per round. Returns the list of RoundInfo.

    Resumable and host-independent: a round's draws (target, parts, the
    conversations) come from the library's xoshiro256** streams seeded by
    seed and the fleet's round number (fleet.rounds, saved with the fleet)
    alone, so train(f, 4) and train(f, 2) twice (with the fleet closed and
    reopened in between, or a killed run resumed from its last save) give
    the same artifact bytes, and so does a C host (tools/deg-fleet-train)."""
    if rounds < 0:
        raise ArgumentError(f"need rounds >= 0 (got {rounds})")
    tp = ffi.new("deg_fleet_train_params *",
                 train_params(accum, p_iso, distract_max, seed, pack, checkpoint, schedule,
                              **study))
    cap = 1 + distract_max
    parts, info = ffi.new("size_t[]", cap), ffi.new("deg_fleet_round *")
    out = []
    t0 = time.perf_counter()
    for r in range(rounds):
        fleet._moving(lib.deg_fleet_train_round, tp, parts, cap, info)
        if save_every and ((r + 1) % save_every == 0 or r + 1 == rounds):
            fleet.save()
        ri = RoundInfo(info.round, info.target, list(parts[0:info.n_parts]), info.loss, accum,
                       time.perf_counter() - t0)
        out.append(ri)
        if progress:
            progress(ri)
    return out


# --------------------------------------------------------------------------
# Retrieval index
# --------------------------------------------------------------------------

def embed_ids(model, ids):
    """The recipe's raw embedding of token ids: the mean of the final-norm
    hidden states of every token, L2-normalised (numpy f32 [n_embd]; the
    mean is accumulated in f64 in token order)."""
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


def _centre(np, v, centroid):
    """v (rows or one vector) minus the centroid, L2-normalised (f32)."""
    v = v.astype(np.float64) - centroid.astype(np.float64)
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return (v / np.maximum(norm, 1e-12)).astype(np.float32)


def _chunks(fleet, chunk):
    """[(doc, token ids, text)] of every document cut at `chunk` tokens."""
    model, out = fleet.model, []
    for i in range(len(fleet)):
        ids = model.tokenize(fleet.text(i))
        for s in range(0, len(ids), chunk):
            part = ids[s:s + chunk]
            # a cut may split a UTF-8 sequence; the lexical words are ASCII
            out.append((i, part, model.detokenize_bytes(part).decode("utf-8", "replace")))
    return out


def build_index(fleet, chunk=DEFAULT_CHUNK, progress=None):
    """Embed every document of fleet in chunks of `chunk` tokens through the
    model and write DIR/index.npz atomically: rows [n_chunks, n_embd] f32
    (embed_ids, then centred on the chunks' centroid and re-normalised),
    centroid [n_embd] f32 (the mean of the embed_ids rows; it centres
    queries too), doc [n_chunks] i64, the chunk texts (the lexical half's
    collection), chunk, the recipe name and the document count.
    progress(done, total) per chunk. Returns the number of chunks."""
    np = _np()
    if chunk < 1:
        raise ArgumentError(f"chunk must be >= 1 token, got {chunk}")
    spans = _chunks(fleet, chunk)
    rows = []
    for n, (_, ids, _) in enumerate(spans):
        rows.append(embed_ids(fleet.model, ids))
        if progress:
            progress(n + 1, len(spans))
    if not rows:
        raise ArgumentError("fleet index: the documents hold no tokens")
    rows = np.stack(rows)
    centroid = rows.astype(np.float64).mean(axis=0).astype(np.float32)
    path = Path(fleet.path) / INDEX_FILE
    tmp = path.with_name(f"{INDEX_FILE}.tmp.{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, rows=_centre(np, rows, centroid), centroid=centroid,
                     doc=np.array([d for d, _, _ in spans], dtype=np.int64),
                     texts=np.array([t for _, _, t in spans]),
                     chunk=np.array(chunk, dtype=np.int64), recipe=np.array(EMBED_RECIPE),
                     n_docs=np.array(len(fleet), dtype=np.int64))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return len(spans)


Index = namedtuple("Index", "rows doc chunk centroid texts lexical")


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
    texts = [str(t) for t in z["texts"]]
    return Index(z["rows"], z["doc"], int(z["chunk"]), z["centroid"], texts, BM25(texts))


def doc_scores(fleet, query, index=None):
    """Every document's score for query (text), numpy f64 [n_docs] (-inf for
    a document without chunks): the centred cosine of its best chunk plus
    LEXICAL_WEIGHT times its best chunk's BM25 score over the query's best
    BM25 score (0 when no chunk shares a word with the query)."""
    np = _np()
    index = index or load_index(fleet)
    q = _centre(np, embed_ids(fleet.model, fleet.model.tokenize(query)), index.centroid)
    dense = np.full(len(fleet), -np.inf)
    np.maximum.at(dense, index.doc, (index.rows @ q).astype(np.float64))
    lex = np.zeros(len(fleet))
    np.maximum.at(lex, index.doc, np.array(index.lexical.scores(query), dtype=np.float64))
    top = lex.max()
    return dense + (LEXICAL_WEIGHT * lex / top if top > 0 else 0.0)


def select(fleet, query, k=1, index=None):
    """The k documents best matching query (text), best first: a list of
    (doc index, score: doc_scores); ties go to the lower document (the
    best chunk of each document decides, as a chunk top-k deduplicated to
    documents in best-chunk order)."""
    np = _np()
    if k < 1:
        raise ArgumentError(f"k must be >= 1, got {k}")
    best = doc_scores(fleet, query, index)
    order = np.argsort(-best, kind="stable")
    return [(int(d), float(best[d])) for d in order[:k] if np.isfinite(best[d])]


def ask(fleet, question, k=1, oracle=None, max_tokens=200, index=None, spec=False,
        spec_stats=None):
    """Answer question behind the composed cartridges of the selected
    documents (oracle: a document name or index bypassing retrieval).
    spec=True decodes speculatively (--spec-serve; the same text), drafting
    from the prompt, the answer and the selected documents' stored draft
    references (deg.Fleet.draft_ref); spec_stats (a list) receives its
    SpecStats. Returns (selected [(doc, score)], answer)."""
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
    docs = [d for d, _ in sel]
    ref = fleet.draft_ref(docs) if spec else None
    trunk = fleet.trunk(docs)
    try:
        return sel, cs.ask(fleet.model, question, trunk=trunk, max_tokens=max_tokens,
                           spec=spec, draft_ref=ref, spec_stats=spec_stats)
    finally:
        if ref is not None:
            ref.close()
