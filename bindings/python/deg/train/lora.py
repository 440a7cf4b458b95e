"""LoRA training through the fork path (deg contract §12.7; include/lora.h): one record's loss and gradients w.r.t. the heads and the adapters.

The context trunk is read by the base weights (`--lora-context base`): a step
prefills the record's trunk tokens (no gradient), runs every fork that has a
head example with the adapter its head kind selects (deg_lora_tape_forward,
the same layer code as deg_fill), takes the final-norm hidden states at the
rows the heads read (ANSWER:, option / level line ends), computes the §12.4
head losses with their gradients w.r.t. the head parameters and those hidden
states (deg_train_loss_grad_hidden), and runs the tape backward into the
adapter parameters (deg_lora_tape_backward). Extract, count and anchor heads
also read the context trunk's hidden states: frozen, no gradient.

The record's tokens come from a token trace (features.extract(tokens=True)):
the trunk's tokens and each fork's own tokens exactly as deg_fill feeds them,
so with the adapters of the trace the hidden rows here are bitwise those the
trace (and deg_fill) read (tests/python/test_train_lora.py).
"""
import time

import numpy as np

from .._native import check, ffi, lib
from . import data, features

SELECTORS = {"kind": lib.DEG_LORA_SELECT_KIND, "shared": lib.DEG_LORA_SELECT_SHARED}
TARGETS = {"q": lib.DEG_LORA_Q, "k": lib.DEG_LORA_K, "v": lib.DEG_LORA_V, "o": lib.DEG_LORA_O,
           "gate": lib.DEG_LORA_GATE, "up": lib.DEG_LORA_UP, "down": lib.DEG_LORA_DOWN,
           # a hybrid's recurrent layers' own projections (include/lora.h DEG_LORA_REC_*)
           "rec_in": lib.DEG_LORA_REC_IN, "rec_z": lib.DEG_LORA_REC_Z,
           "rec_out": lib.DEG_LORA_REC_OUT}


def parse_targets(text):
    """DEG_LORA_* bits of "all" (the attention and MLP projections) or a comma list
    of q,k,v,o,gate,up,down,rec_in,rec_z,rec_out; ValueError naming what is wrong."""
    if text.strip() == "all":
        return lib.DEG_LORA_ALL
    bits = 0
    for t in text.split(","):
        t = t.strip()
        if t not in TARGETS:
            raise ValueError(f"unknown LoRA target {t!r} (known: all, {', '.join(TARGETS)})")
        bits |= TARGETS[t]
    return bits


def target_names(bits):
    return [n for n, b in TARGETS.items() if bits & b]


def add(ckpt, rank, alpha, targets, selector, seed=0):
    """Give ckpt fresh adapters (B = 0: its outputs are unchanged until trained)."""
    prm = lib.deg_lora_default_params()
    prm.rank, prm.alpha, prm.targets, prm.seed = rank, alpha, targets, seed
    with ckpt._use() as p:
        check(lib.deg_ckpt_add_lora(p, ffi.new("deg_lora_params *", prm), SELECTORS[selector]))


class Adapters:
    """Training view of a checkpoint's adapters (deg_ckpt_get_lora; borrowed: valid
    while the checkpoint is open and no other adapters are added)."""

    def __init__(self, ckpt):
        self.ckpt = ckpt
        with ckpt._use() as p:
            self.ptr = lib.deg_ckpt_get_lora(p)
        if self.ptr == ffi.NULL:
            raise ValueError("the checkpoint has no LoRA adapters")
        self.n = int(lib.deg_lora_n_params(self.ptr))
        c = lib.deg_lora_get_config(self.ptr)
        self.config = {"rank": int(c.rank), "alpha": float(c.alpha), "targets": int(c.targets),
                       "n_adapters": int(c.n_adapters)}

    def get(self):
        out = np.empty(self.n, dtype=np.float32)
        with self.ckpt._use():
            check(lib.deg_lora_get_params(self.ptr, ffi.from_buffer("float[]", out), self.n))
        return out

    def set(self, params):
        p = np.ascontiguousarray(params, dtype=np.float32)
        if p.shape != (self.n,):
            raise ValueError(f"adapter params: shape {p.shape}, expected ({self.n},)")
        with self.ckpt._use():
            check(lib.deg_lora_set_params(self.ptr, ffi.from_buffer("float[]", p), self.n))

    def adapter_of(self, head_kind):
        """The adapter index deg_fill gives forks of head_kind (-1 = the base model)."""
        with self.ckpt._use() as p:
            return int(lib.deg_ckpt_lora_adapter(p, head_kind))

    def select(self, fork, head_kind):
        """Run the fork's future rows with the adapter deg_fill gives forks of
        head_kind (deg_fork_set_adapter; the fork must be of this checkpoint's
        model; tokens already fed keep their K/V)."""
        a = self.adapter_of(head_kind)
        with self.ckpt._use(), fork._use() as f:
            check(lib.deg_fork_set_adapter(f, self.ptr, a))


class Tape:
    """The record's base trunk and a LoRA tape over some of its forks (context
    manager: frees both). forks: token-trace fork dicts ("ids", "head_kind").
    times: CPU seconds (time.process_time, all threads) of "prefill", "forward",
    "backward", added to as they run."""

    def __init__(self, adapters, trunk_ids, forks, checkpoint=True, times=None):
        self.adapters = adapters
        self.trunk = self.tape = None
        self.times = times if times is not None else {}
        for k in ("prefill", "forward", "backward"):
            self.times.setdefault(k, 0.0)
        with adapters.ckpt._use() as p:
            model = lib.deg_ckpt_model(p)
        self.E = int(_n_embd(model))
        t = ffi.new("deg_trunk **")
        check(lib.deg_trunk_new(model, t))
        self.trunk = t[0]
        try:
            tid = np.ascontiguousarray(trunk_ids, dtype=np.int32)
            t0 = time.process_time()
            check(lib.deg_trunk_prefill(self.trunk, ffi.from_buffer("int32_t[]", tid), len(tid),
                                        ffi.NULL, ffi.NULL))
            t1 = time.process_time()
            self.times["prefill"] += t1 - t0
            ids = [np.ascontiguousarray(f["ids"], dtype=np.int32) for f in forks]
            bufs = [ffi.from_buffer("int32_t[]", a) for a in ids]
            ptrs = ffi.new("int32_t *[]", bufs)
            nids = ffi.new("size_t[]", [len(a) for a in ids])
            ads = ffi.new("int32_t[]", [adapters.adapter_of(f["head_kind"]) for f in forks])
            out = ffi.new("deg_lora_tape **")
            with adapters.ckpt._use():
                check(lib.deg_lora_tape_forward(adapters.ptr, self.trunk, ptrs, nids, ads,
                                                len(forks), 1 if checkpoint else 0, out))
            self.tape = out[0]
            self.times["forward"] += time.process_time() - t1
        except BaseException:
            self.close()
            raise

    def hidden(self, row, positions):
        """Final-norm hidden states [len(positions), E] f32 of row's tokens."""
        h = np.empty((len(positions), self.E), dtype=np.float32)
        for i, pos in enumerate(positions):
            check(lib.deg_lora_tape_hidden(self.tape, row, int(pos), 1,
                                           ffi.from_buffer("float[]", h[i])))
        return h

    def backward(self, rows, pos, dhidden, grad):
        """Accumulate (+=) dL/d adapters into grad [adapters.n] f32 from dL/dhidden
        dhidden [len(rows), E] at (rows[g], pos[g])."""
        d = np.ascontiguousarray(dhidden, dtype=np.float32)
        t0 = time.process_time()
        with self.adapters.ckpt._use():
            check(lib.deg_lora_tape_backward(
                self.tape, len(rows), ffi.new("size_t[]", [int(r) for r in rows]),
                ffi.new("size_t[]", [int(p) for p in pos]), ffi.from_buffer("float[]", d),
                ffi.from_buffer("float[]", grad), len(grad)))
        self.times["backward"] += time.process_time() - t0

    def close(self):
        if self.tape is not None:
            lib.deg_lora_tape_free(self.tape)
            self.tape = None
        if self.trunk is not None:
            lib.deg_trunk_free(self.trunk)
            self.trunk = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _n_embd(model):
    info = ffi.new("deg_model_info *")
    check(lib.deg_model_get_info(model, info))
    return info.n_embd


def record_forks(rec, plan, base, variant=None, anchor=None, anchor_count=False):
    """(forks, build) of a record: every fork it trains (base's, with a shuffled
    variant's choice forks in place of base's when given, then those of its
    anchor-mode token trace when given) and build(forks) -> its examples over
    such a list (hidden rows replaced), each example's .fork indexing it."""
    forks = list(data.forks_of(base, variant))
    n1 = len(forks)
    if anchor is not None:
        if not np.array_equal(anchor.trunk_ids, base.trunk_ids):
            raise ValueError(f"record {rec.get('id')}: the anchor trace has another trunk")
        forks += anchor.forks

    def build(fs):
        exs = data.fork_examples(rec, plan, base, fs[:n1])
        if anchor is not None:
            view = features.Features(anchor.ctx, anchor.tok_cp, fs[n1:], anchor.n_trunk_tokens,
                                     anchor.anchor_counts, anchor.trunk_ids, anchor.ctx_first)
            ax = data.anchor_examples_of(rec, plan, view, anchor_count)
            for x in ax:
                x.fork += n1
            exs += ax
        return exs
    return forks, build


def forward(adapters, rec, plan, base, variant=None, checkpoint=True, anchor=None,
            anchor_count=False):
    """(examples, forks) of a record with its forks re-run under the current
    adapters (the forks that have no example are not run). Tests and evaluation."""
    forks, build = record_forks(rec, plan, base, variant, anchor, anchor_count)
    exs0 = build(forks)
    used = sorted({x.fork for x in exs0})
    if not used:
        return exs0, forks
    with Tape(adapters, base.trunk_ids, [forks[u] for u in used], checkpoint) as tape:
        new = list(forks)
        for ti, u in enumerate(used):
            new[u] = dict(forks[u], hidden=tape.hidden(ti, forks[u]["rows"]))
    return build(new), new


def record_loss_grad(heads, adapters, rec, plan, base, variant, weights, checkpoint=True,
                     times=None, anchor=None, anchor_count=False):
    """One record's (weighted loss, head gradient [heads.n], adapter gradient
    [adapters.n], per-example losses, examples) under the batch weights, with the
    current heads and adapters. base: the record's token trace; variant: a
    shuffled token trace whose choice forks replace base's, or None; anchor: its
    anchor-mode token trace (deg.train --anchor) or None, anchor_count: with the
    anchor_count examples. times: a dict given CPU seconds "prefill", "forward",
    "backward" (Tape), "heads" and fork "tokens" / "rows" run."""
    forks, build = record_forks(rec, plan, base, variant, anchor, anchor_count)
    exs0 = build(forks)
    g_lora = np.zeros(adapters.n, dtype=np.float32)
    if not exs0:
        return 0.0, np.zeros(heads.n, dtype=np.float32), g_lora, np.zeros(0), exs0
    used = sorted({x.fork for x in exs0})
    slot = {u: i for i, u in enumerate(used)}
    if times is not None:
        times["tokens"] = times.get("tokens", 0) + sum(len(forks[u]["ids"]) for u in used)
        times["rows"] = times.get("rows", 0) + len(used)
    with Tape(adapters, base.trunk_ids, [forks[u] for u in used], checkpoint, times) as tape:
        new = list(forks)
        for u in used:
            new[u] = dict(forks[u], hidden=tape.hidden(slot[u], forks[u]["rows"]))
        exs = build(new)
        t0 = time.process_time()
        tot, g_heads, losses, d_ans, d_rows = heads.loss_grad_hidden(exs, weights)
        tape.times["heads"] = tape.times.get("heads", 0.0) + time.process_time() - t0
        rows, pos, dh = [], [], []
        for x, da, dr in zip(exs, d_ans, d_rows):
            r, marks = slot[x.fork], forks[x.fork]["rows"]
            rows.append(r)
            pos.append(marks[-1])  # ANSWER:
            dh.append(da)
            if dr is not None:  # CHOICE / SCORE: the option / level line ends
                for j in range(dr.shape[0]):
                    rows.append(r)
                    pos.append(marks[j])
                    dh.append(dr[j])
        tape.backward(rows, pos, np.stack(dh), g_lora)
    return tot, g_heads, g_lora, losses, exs
