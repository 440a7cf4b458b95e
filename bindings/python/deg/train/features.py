"""Frozen-backbone features of a datagen record (deg contract §12.4), cached on disk.

libdeg's deg_features_extract runs the record's request through the runtime's own
trunk and forks (same fork texts and batching as deg.fill) with the gold item
counts, and returns what the heads read. The backbone does not change while the
heads train, so each record is traced once and its features are reused every
epoch. Option-order shuffling changes the choice forks' text, so a record also
gets `variants` fixed shuffled copies of its choice forks (seeded), picked at
random during training instead of re-running the backbone every epoch.

Cache layout: one file per (record, variant) named by the SHA-256 of
(format, backbone SHA-256, request, gold, variant seed), an uncompressed .npz
written atomically, so an interrupted extraction resumes where it stopped.

Anchor mode (§12.6, `deg.train --anchor`): a record with anchored arrays also
gets one anchor-mode trace (deg_features_extract_anchored, teacher-forced with
deg.datagen.record.anchor_gold; DEG_FEATURES_ANCHORED_ONLY: only the anchor
forks, anchored counts and forks inside anchored items, the rest is the index
trace's), cached in the same directory under the
SHA-256 of (ANCHOR_CACHE_FORMAT, backbone SHA-256, request, gold, anchors JSON
with sorted keys); its forks carry the anchor facts (`anchor`, `rend`, `r0`,
`r1`, `starts`) and the file's meta the left-out counts (`anchor_counts`).
Index-mode entries (CACHE_FORMAT) are unchanged.

LoRA training (`deg.train --lora-rank`, deg/train/lora.py) re-runs each record's
forks with adapters every step, so its traces also keep the tokens
(deg_features trunk_ids / tokens): `trunk_ids` [n_trunk] int32, `ctx_first`, and
per fork `ids` [n_tokens] int32, `rows` (the fork token of each hidden row) and
`head_kind` (DEG_HEAD_*: selects the fork's adapter). They are cached under
LORA_CACHE_FORMAT (anchor traces: LORA_ANCHOR_CACHE_FORMAT), other keys than
the frozen-feature entries, which stay as they are.
"""
import hashlib
import json
import os
import tempfile

import numpy as np

from .._native import check, ffi, lib

CACHE_FORMAT = "deg-features-v1"
LORA_CACHE_FORMAT = "deg-features-tokens-v1"
ANCHOR_CACHE_FORMAT = "deg-features-anchor-v1"
LORA_ANCHOR_CACHE_FORMAT = "deg-features-anchor-tokens-v1"
CHOICE_ONLY = lib.DEG_FEATURES_CHOICE_ONLY
ANCHORED_ONLY = lib.DEG_FEATURES_ANCHORED_ONLY


class Features:
    """One traced (record, variant): ctx [n_ctx, E] f32, tok_cp [n_ctx, 2] i64,
    forks: list of dicts {pointer, mode, index, hidden [n_rows, E] f32, order
    (int32 array or None), count_lo, count_hi, count_gold, n_tokens}."""

    __slots__ = ("ctx", "tok_cp", "forks", "n_trunk_tokens", "anchor_counts", "trunk_ids",
                 "ctx_first")

    def __init__(self, ctx, tok_cp, forks, n_trunk_tokens, anchor_counts=None, trunk_ids=None,
                 ctx_first=None):
        self.ctx, self.tok_cp, self.forks, self.n_trunk_tokens = ctx, tok_cp, forks, n_trunk_tokens
        # anchor traces: {"arrays", "skipped", "shared"} (deg_features n_anchor_*); else None
        self.anchor_counts = anchor_counts
        # token traces (tokens=True): the trunk's tokens and the trunk row of context
        # token 0; the forks then carry "ids", "rows", "head_kind"; else None
        self.trunk_ids, self.ctx_first = trunk_ids, ctx_first

    def save(self, path):
        hid = [f["hidden"] for f in self.forks]
        rows = np.array([h.shape[0] for h in hid], dtype=np.int64)
        meta = [{k: (v.tolist() if isinstance(v, np.ndarray) else v)
                 for k, v in f.items() if k not in ("hidden", "ids")} for f in self.forks]
        E = self.ctx.shape[1]
        head = {"forks": meta, "n_trunk_tokens": self.n_trunk_tokens}
        if self.anchor_counts is not None:
            head["anchor_counts"] = self.anchor_counts
        toks = {}
        if self.trunk_ids is not None:
            head["ctx_first"] = self.ctx_first
            ids = [f["ids"] for f in self.forks]
            toks = {"trunk_ids": self.trunk_ids,
                    "fork_nids": np.array([len(x) for x in ids], dtype=np.int64),
                    "fork_ids": np.concatenate(ids) if ids else np.zeros(0, np.int32)}
        d = os.path.dirname(path) or "."
        fd, tmp = tempfile.mkstemp(prefix=".feat-", suffix=".npz", dir=d)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, ctx=self.ctx, tok_cp=self.tok_cp, rows=rows,
                         hidden=np.concatenate(hid) if hid else np.zeros((0, E), np.float32),
                         meta=np.frombuffer(json.dumps(head).encode(), dtype=np.uint8), **toks)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path):
        with np.load(path) as z:
            meta = json.loads(bytes(z["meta"]).decode())
            hidden, rows = z["hidden"], z["rows"]
            tokens = "trunk_ids" in z.files
            if tokens:
                fids, nids = z["fork_ids"], z["fork_nids"]
            forks, off, toff = [], 0, 0
            for i, (m, n) in enumerate(zip(meta["forks"], rows)):
                f = dict(m)
                f["hidden"] = hidden[off:off + n]
                if f.get("order") is not None:
                    f["order"] = np.asarray(f["order"], dtype=np.int32)
                if tokens:
                    f["ids"] = fids[toff:toff + nids[i]]
                    toff += int(nids[i])
                forks.append(f)
                off += int(n)
            return cls(z["ctx"], z["tok_cp"], forks, meta["n_trunk_tokens"],
                       meta.get("anchor_counts"), z["trunk_ids"] if tokens else None,
                       meta.get("ctx_first"))


def request_of(rec):
    return json.dumps({"context": rec["context"], "schema": rec["schema"]},
                      ensure_ascii=False).encode("utf-8")


def gold_of(rec):
    return json.dumps(rec["value"], ensure_ascii=False).encode("utf-8")


def anchors_of(gold_anchors):
    """The anchors JSON (bytes, sorted keys) of anchor_gold's result."""
    return json.dumps(gold_anchors, sort_keys=True).encode("utf-8")


def extract(ckpt, rec, shuffle_seed=0, choice_only=False, anchors=None, tokens=False):
    """Trace one record (deg_features_extract, or deg_features_extract_anchored when
    anchors, the anchors JSON bytes, is given) and copy the result into numpy;
    tokens: also the trace's tokens (module docstring)."""
    req, gold = request_of(rec), gold_of(rec)
    out = ffi.new("deg_features **")
    errs = ffi.new("char **")
    flags = CHOICE_ONLY if choice_only else 0
    if anchors is None:
        with ckpt._use() as _p:
            st = lib.deg_features_extract(_p, req, len(req), gold, len(gold),
                                          int(shuffle_seed), flags, out, errs)
    else:
        with ckpt._use() as _p:
            st = lib.deg_features_extract_anchored(_p, req, len(req), gold, len(gold),
                                                   anchors, len(anchors), int(shuffle_seed),
                                                   flags | ANCHORED_ONLY, out, errs)
    if errs[0] != ffi.NULL:
        lib.deg_free(errs[0])
    check(st)
    f = out[0]
    try:
        E = f.n_embd
        nc = f.n_ctx
        if choice_only:  # a shuffled variant: only its choice forks are used
            nc = 0
        ctx = np.frombuffer(ffi.buffer(f.ctx_hidden, nc * E * 4), dtype=np.float32).reshape(nc, E).copy()
        tok_cp = np.frombuffer(ffi.buffer(f.tok_cp, nc * 2 * ffi.sizeof("size_t")),
                               dtype=np.uintp).reshape(nc, 2).astype(np.int64)
        forks = []
        for i in range(f.n_forks):
            k = f.forks[i]
            n = k.n_rows
            h = np.frombuffer(ffi.buffer(k.hidden, n * E * 4), dtype=np.float32).reshape(n, E).copy()
            order = None
            if k.order != ffi.NULL:
                order = np.frombuffer(ffi.buffer(k.order, (n - 1) * 4), dtype=np.int32).copy()
            fd = {"pointer": ffi.string(k.pointer).decode("utf-8"),
                  "mode": ffi.string(k.mode).decode(), "index": int(k.index),
                  "hidden": h, "order": order, "count_lo": int(k.count_lo),
                  "count_hi": int(k.count_hi), "count_gold": int(k.count_gold),
                  "n_tokens": int(k.n_tokens)}
            if tokens:
                t = f.tokens[i]
                fd["ids"] = np.frombuffer(ffi.buffer(t.ids, t.n_ids * 4), dtype=np.int32).copy()
                fd["rows"] = [int(t.rows[j]) for j in range(n)]
                fd["head_kind"] = int(t.head_kind)
            if anchors is not None:
                a = f.anchor[i]
                fd.update({"anchor": int(a.anchor), "rend": int(a.rend), "r0": int(a.r0),
                           "r1": int(a.r1),
                           "starts": [int(a.starts[j]) for j in range(a.n_starts)]})
            forks.append(fd)
        counts = None
        if anchors is not None:
            counts = {"arrays": int(f.n_anchor_arrays), "skipped": int(f.n_anchor_skipped),
                      "shared": int(f.n_anchor_shared)}
        trunk_ids = ctx_first = None
        if tokens:
            trunk_ids = np.frombuffer(ffi.buffer(f.trunk_ids, f.n_trunk_tokens * 4),
                                      dtype=np.int32).copy()
            ctx_first = int(f.ctx_first)
        return Features(ctx, tok_cp, forks, int(f.n_trunk_tokens), counts, trunk_ids, ctx_first)
    finally:
        lib.deg_features_free(f)


def variant_seed(rec, v):
    """Shuffle seed of variant v >= 1 of a record (0 = plan order)."""
    if v == 0:
        return 0
    h = hashlib.sha256(f"{rec['id']}\0{v}".encode()).digest()
    return int.from_bytes(h[:8], "little") or 1


def _cache_file(cache_dir, prefix, parts):
    """cache_dir/<prefix><first 32 hex of SHA-256 over the \\0-terminated parts>.npz"""
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
        h.update(b"\0")
    return os.path.join(cache_dir, prefix + h.hexdigest()[:32] + ".npz")


def cache_path(cache_dir, backbone_sha, rec, v, tokens=False):
    fmt = LORA_CACHE_FORMAT if tokens else CACHE_FORMAT
    return _cache_file(cache_dir, "", (fmt.encode(), backbone_sha.encode(),
                                       request_of(rec), gold_of(rec),
                                       str(variant_seed(rec, v)).encode()))


def anchor_cache_path(cache_dir, backbone_sha, rec, anchors, tokens=False):
    fmt = LORA_ANCHOR_CACHE_FORMAT if tokens else ANCHOR_CACHE_FORMAT
    return _cache_file(cache_dir, "a-", (fmt.encode(), backbone_sha.encode(),
                                         request_of(rec), gold_of(rec), anchors))


def _cached(path, trace):
    """(Features, hit): loaded from path, else trace() stored there (path None: no cache)."""
    if path and os.path.exists(path):
        return Features.load(path), True
    f = trace()
    if path:
        f.save(path)
    return f, False


def get_anchored(ckpt, backbone_sha, cache_dir, rec, gold_anchors, tokens=False):
    """Anchor-mode features of a record under its gold anchors (anchor_gold's
    result), from the cache, traced and stored if missing (tokens: a token trace,
    as get)."""
    anchors = anchors_of(gold_anchors)
    path = anchor_cache_path(cache_dir, backbone_sha, rec, anchors, tokens) if cache_dir else None
    return _cached(path, lambda: extract(ckpt, rec, anchors=anchors, tokens=tokens))


def get(ckpt, backbone_sha, cache_dir, rec, v, tokens=False):
    """Features of (record, variant v) from the cache, traced and stored if missing;
    tokens: a token trace (LoRA training; its own cache entries). A token trace's
    fork hidden rows are those of the checkpoint's adapters when it was traced:
    the LoRA trainer reads only its tokens, context rows and structure."""
    path = cache_path(cache_dir, backbone_sha, rec, v, tokens) if cache_dir else None
    return _cached(path, lambda: extract(ckpt, rec, variant_seed(rec, v), choice_only=v > 0,
                                         tokens=tokens))
