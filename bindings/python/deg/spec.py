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

__all__ = ["DraftRef", "SpecStats", "SpecState", "spec_step", "generate_forks_spec", "answer",
           "composed_reference"]


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

    @classmethod
    def _own(cls, model, ptr):
        """Wrap a reference the library made for the caller (freed with it)."""
        r = cls.__new__(cls)
        _Handle.__init__(r, ptr, model)
        return r

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
    order and indexed once by the library (deg_cartridge_compose_draft_ref):
    a new DraftRef, or None when no part has one. A draft that crosses a
    part boundary is only a wasted guess, never a different output
    (verification is exact)."""
    from contextlib import ExitStack
    parts = list(parts)
    if not parts:
        raise ArgumentError("composed_reference needs at least one cartridge")
    out = ffi.new("deg_draft_ref **")
    with ExitStack() as held:
        ptrs = ffi.new("deg_cartridge *[]", [held.enter_context(c._use()) for c in parts])
        check(lib.deg_cartridge_compose_draft_ref(ptrs, len(parts), out))
    return DraftRef._own(parts[0].model, out[0]) if out[0] != ffi.NULL else None


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


class SpecState(_Handle):
    """One greedy stream decoded speculatively a round at a time
    (deg_spec_state; serving loops that must see every id as it comes, e.g.
    deg serve --spec-serve). text: the stream's ids so far, whose LAST id is
    the carry (emitted, not yet fed: the fork holds the ids before it); ref:
    a DraftRef or None (closing it closes the state first); stop_ids: None =
    the model's stops. Keyword settings as generate_forks_spec's."""

    _free = "deg_spec_state_free"

    def __init__(self, model, text, ref=None, stop_ids=None, draft_max=8, min_match=2,
                 gate=True, gate_window=16, gate_min_acceptance=0.35, gate_reprobe=32):
        if not isinstance(model, Model):
            raise ArgumentError("SpecState needs a deg.Model")
        if ref is not None and not isinstance(ref, DraftRef):
            raise ArgumentError("ref must be a deg.spec.DraftRef or None")
        buf, n = _ids_buffer(text)
        sp = _spec_params(draft_max, min_match, gate, gate_window, gate_min_acceptance,
                          gate_reprobe)
        stops = ffi.NULL if stop_ids is None else ffi.new("int32_t[]", list(stop_ids) or [0])
        out = ffi.new("deg_spec_state **")
        with ExitStack() as held:
            mp = held.enter_context(model._use())
            rp = held.enter_context(ref._use()) if ref is not None else ffi.NULL
            check(lib.deg_spec_state_new(mp, buf, n, rp, sp, stops,
                                         0 if stop_ids is None else len(stop_ids), out))
        super().__init__(out[0], ref if ref is not None else model)
        self.draft_max = int(draft_max)

    @property
    def stats(self):
        """SpecStats over every round so far."""
        with self._use() as _p:
            s = lib.deg_spec_state_stats(_p)
        return SpecStats(int(s.forwards), int(s.drafted), int(s.accepted), int(s.gate_offs))

    @property
    def done(self):
        """True once the stream emitted a stop id."""
        with self._use() as _p:
            return bool(lib.deg_spec_state_done(_p))


def spec_step(forks, states, max_ids, plain=None):
    """One round of speculative decoding for each (fork, SpecState) pair in
    one ragged feed (deg_forks_spec_step): returns, per stream, the 1 ..
    draft_max + 1 ids it emitted (at most max_ids[i]; ending at a stop id);
    the last one is the new carry (not fed), the fork holds the others.
    plain: (fork, ids) pairs fed in the same weight pass
    (deg_forks_spec_step_ex; e.g. sampled streams' pending ids), their logits
    kept in the fork as after deg.feed_forks."""
    forks, states = list(forks), list(states)
    plain = [(f, list(ids)) for f, ids in (plain or [])]
    n = len(forks)
    if n == 0 and not plain:
        return []
    if len(states) != n or len(max_ids) != n:
        raise ArgumentError(f"{n} forks but {len(states)} states and {len(max_ids)} max_ids")
    bufs = [ffi.new("int32_t[]", st.draft_max + 1) for st in states]
    n_out = ffi.new("size_t[]", max(n, 1))
    keep = [_ids_buffer(ids)[0] for _, ids in plain]
    with ExitStack() as held:
        cf = ffi.new("deg_fork *[]", [held.enter_context(f._use()) for f in forks])
        cs = ffi.new("deg_spec_state *[]", [held.enter_context(s._use()) for s in states])
        rows = ffi.NULL
        if plain:
            pf = ffi.new("deg_fork *[]", [held.enter_context(f._use()) for f, _ in plain])
            pi = ffi.new("int32_t *[]", keep)
            pn = ffi.new("size_t[]", [len(ids) for _, ids in plain])
            rows = ffi.new("deg_feed_rows *", {"forks": pf, "n": len(plain), "ids": pi,
                                               "n_ids": pn})
        check(lib.deg_forks_spec_step_ex(cf, n, cs,
                                         ffi.new("int32_t[]", [int(m) for m in max_ids] or [0]),
                                         ffi.new("int32_t *[]", bufs or [ffi.NULL]), n_out,
                                         rows))
    return [list(ffi.unpack(bufs[i], n_out[i])) for i in range(n)]


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
