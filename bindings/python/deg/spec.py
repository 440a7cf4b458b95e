"""Speculative greedy decoding (deg_forks_generate_spec, include/deg.h).

Lossless: the ids are byte-identical to greedy deg.generate_forks, whatever
the drafts (spec cartridges.md, "Batched self-study": --spec-b, --spec-serve).
Every stream drafts from suffix indexes over its own text (seed ids, e.g. its
prompt, plus what it emits) and optionally a shared DraftRef (a cartridge's
corpus: Cartridge.draft_reference); the drafts of all live streams are
verified in one ragged forward by exact argmax equality, rejected ones are
rewound (Fork.truncate). A per-stream acceptance gate turns drafting off
below 35% acceptance over 16 drafted tokens and re-probes after 32 ids.

answer() is the serving core (one question behind a trunk, e.g. a
cartridge's): `deg cartridge ask --spec-serve` uses it, a server can too.
"""
from contextlib import ExitStack
from dataclasses import dataclass

from ._native import check, ffi, lib
from .errors import ArgumentError
from .limits import run_limits
from .model import Model, _Handle, _STATE, _gen_outputs, _ids_buffer, _sample_params

__all__ = ["DraftRef", "SpecStats", "generate_forks_spec", "answer", "composed_reference"]


class DraftRef(_Handle):
    """A read-only suffix index over reference token ids (deg_draft_ref):
    built once, shareable by any number of streams and threads."""

    _free = "deg_draft_ref_free"

    def __init__(self, model, ids):
        if not isinstance(model, Model):
            raise ArgumentError("DraftRef needs a deg.Model")
        buf, n = _ids_buffer(ids)
        out = ffi.new("deg_draft_ref **")
        with model._use() as _p:
            check(lib.deg_draft_ref_new(_p, buf, n, out))
        super().__init__(out[0], model)

    def __len__(self):
        with self._use() as _p:
            return lib.deg_draft_ref_len(_p)

    def ids(self):
        """The indexed token ids (list)."""
        with self._use() as _p:
            n = lib.deg_draft_ref_len(_p)
            return list(ffi.unpack(lib.deg_draft_ref_ids(_p), n)) if n else []


class _BorrowedDraftRef(DraftRef):
    """A view of a reference owned by a cartridge (closed with it, or when
    the cartridge's reference is replaced; never freed here)."""

    def __init__(self, ptr, owner):
        _Handle.__init__(self, ptr, owner)

    def close(self):
        with _STATE:
            self._ptr = None
            self._parent = None


def composed_reference(parts):
    """The draft reference of a composition (spec "Composition"): the parts'
    stored references (Cartridge.draft_reference) concatenated in part
    order. One part with a reference gives that part's own view (no copy);
    several give a new DraftRef over the concatenation (indexed once here);
    none gives None. A draft that crosses a part boundary is only a wasted
    guess, never a different output (verification is exact)."""
    parts = list(parts)
    refs = [c.draft_reference for c in parts]
    refs = [r for r in refs if r is not None]
    if not refs:
        return None
    if len(refs) == 1:
        return refs[0]
    return DraftRef(parts[0].model, [i for r in refs for i in r.ids()])


@dataclass(frozen=True)
class SpecStats:
    """Per-stream counters (deg_spec_stats)."""
    forwards: int   # verification feeds the stream took part in
    drafted: int    # drafted tokens verified
    accepted: int   # drafted tokens kept
    gate_offs: int  # times the acceptance gate turned drafting off

    @property
    def acceptance(self):
        return self.accepted / self.drafted if self.drafted else 0.0


def _spec_params(draft_max, min_match, gate, gate_window, gate_min_acceptance, gate_reprobe):
    sp = ffi.new("deg_spec_params *", lib.deg_spec_default_params())
    sp.draft_max, sp.min_match, sp.gate = int(draft_max), int(min_match), 1 if gate else 0
    sp.gate_window, sp.gate_reprobe = int(gate_window), int(gate_reprobe)
    sp.gate_min_acceptance = float(gate_min_acceptance)
    return sp


def generate_forks_spec(forks, max_tokens, seed_ids, refs=None, stop_ids=None, draft_max=8,
                        min_match=2, gate=True, gate_window=16, gate_min_acceptance=0.35,
                        gate_reprobe=32, cancel=None, deadline_ms=None):
    """Greedy lockstep decode of forks, speculatively. seed_ids: one id list
    per fork (its text so far, e.g. the prompt its K/V holds); refs: None, one
    DraftRef (or None) for every fork, or a list with one per fork. Returns
    ([Generation], [SpecStats]); the Generations equal
    generate_forks(forks, max_tokens, 0.0, stop_ids=stop_ids)'s, and the
    forks end in the same state (every generated id but the last fed)."""
    forks = list(forks)
    n = len(forks)
    if n == 0:
        return [], []
    seed_ids = [list(s) for s in seed_ids]
    refs = list(refs) if isinstance(refs, (list, tuple)) else [refs] * n
    if len(seed_ids) != n or len(refs) != n:
        raise ArgumentError(f"{n} forks but {len(seed_ids)} seed id lists and {len(refs)} refs")
    keep = []
    params = ffi.new("deg_sample_params[]", n)
    for i in range(n):
        params[i] = _sample_params(max_tokens, 0.0, 0, 1.0, 0, stop_ids, keep)[0]
    streams = ffi.new("deg_spec_stream[]", n)
    sp = _spec_params(draft_max, min_match, gate, gate_window, gate_min_acceptance,
                      gate_reprobe)
    bufs, outs, n_out, stats = _gen_outputs(n, max_tokens)
    sstats = ffi.new("deg_spec_stats[]", n)
    lim = run_limits(cancel, deadline_ms)
    with ExitStack() as held:
        cforks = ffi.new("deg_fork *[]", [held.enter_context(f._use()) for f in forks])
        for i in range(n):
            buf, k = _ids_buffer(seed_ids[i])
            keep.append(buf)
            streams[i].seed_ids, streams[i].n_seed_ids = buf, k
            if refs[i] is not None:
                if not isinstance(refs[i], DraftRef):
                    raise ArgumentError(f"refs[{i}] must be a deg.spec.DraftRef or None")
                streams[i].ref = held.enter_context(refs[i]._use())
        check(lib.deg_forks_generate_spec(cforks, n, params, streams, sp, outs, n_out, stats,
                                          sstats, lim))
    model = forks[0].trunk.model
    gens = [model._generation(list(ffi.unpack(bufs[i], n_out[i])), stats[i]) for i in range(n)]
    return gens, [SpecStats(int(s.forwards), int(s.drafted), int(s.accepted), int(s.gate_offs))
                  for s in sstats]


def answer(trunk, prompt_ids, ref=None, max_tokens=200, stop_ids=None, **spec):
    """Serving core: a fork of trunk (e.g. a cartridge's, left open) is fed
    prompt_ids (the conversation in the chat layout) and decoded greedily
    and speculatively, drafting from the prompt, its own output and ref (a
    DraftRef, e.g. Cartridge.draft_reference, or None). Returns
    (Generation, SpecStats); the ids equal plain greedy decoding's."""
    with trunk.fork() as f:
        f.feed(prompt_ids)
        gens, st = generate_forks_spec([f], max_tokens, [prompt_ids], [ref], stop_ids=stop_ids,
                                       **spec)
    return gens[0], st[0]
