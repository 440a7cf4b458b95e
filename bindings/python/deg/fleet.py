"""Cartridge fleets: one cartridge per document under a resident-memory budget
(include/cartridge.h, "Fleets"; spec cartridges.md, "The fleet").

A fleet directory holds fleet.json (the manifest), docs/NNNN.safetensors (a
document's cartridge with its Adam moments) and docs/NNNN.txt (a copy of the
document's text). At most `budget` cartridges are resident; every
`rotate_every` optimizer rounds the most-trained residents go to disk and the
least-trained absentees come in, each entrant under an lr warm-up. All writes
are atomic; reloads are memory-mapped.

    deg.Fleet.init(model, "fleet/", [("a.md", text_a), ("b.md", text_b)], p=64)
    with deg.Fleet.open(model, "fleet/", budget=2) as fleet:
        parts = [fleet.cartridge(i) for i in docs]       # resident, borrowed
        deg.cartridge.compose_backward(parts, ids, targets)
        fleet.step(docs)                                  # Adam + rotation
        fleet.save()
        trunk = fleet.trunk([2, 0])                       # serve a composition
"""
from collections import namedtuple
from os import fspath

from ._native import check, ffi, lib, path_arg
from .cartridge import Cartridge, _wrap_trunk
from .errors import ArgumentError
from .model import Model, _Handle

__all__ = ["Fleet", "FleetDoc"]

FleetDoc = namedtuple("FleetDoc", "index name text_path cartridge_path tokens steps since_entry "
                      "resident")


def _str(cdata):
    return ffi.string(cdata).decode("utf-8") if cdata != ffi.NULL else None


class _BorrowedCartridge(Cartridge):
    """A resident fleet cartridge: owned by the fleet, invalidated (closed
    without freeing) whenever the fleet may move it (step, rotate, evict,
    admit, close)."""

    def close(self):
        self._ptr = None
        self._parent = None


class Fleet(_Handle):
    """An open fleet directory for a model (which must stay open)."""

    _free = "deg_fleet_free"

    def __init__(self, model, ptr, path):
        if not isinstance(model, Model):
            raise ArgumentError("Fleet needs a deg.Model; use Fleet.open()")
        super().__init__(ptr, model)
        self.model = model
        self.path = path
        self._borrowed = []

    # ------------------------------------------------------------ creation
    @staticmethod
    def init(model, path, docs, p, draft_ref=False):
        """Create fleet directory `path` with one corpus-init cartridge of p
        rows per document (no training). docs: (name, text) pairs; text str
        or UTF-8 bytes. RangeError names a document shorter than p tokens.
        draft_ref: every cartridge stores its document's token ids as its
        draft reference (--draft-ref; served with --spec-serve)."""
        docs = list(docs)
        if not docs:
            raise ArgumentError("a fleet needs at least one document")
        names = [ffi.new("char[]", str(n).encode("utf-8")) for n, _ in docs]
        texts = [ffi.new("char[]", t.encode("utf-8") if isinstance(t, str) else bytes(t))
                 for _, t in docs]
        lens = [ffi.sizeof(t) - 1 for t in texts]
        prm = ffi.new("deg_fleet_init_params *", lib.deg_fleet_init_default_params())
        prm.p, prm.draft_ref = int(p), 1 if draft_ref else 0
        with model._use() as _p:
            check(lib.deg_fleet_init_ex(_p, path_arg(path),
                                        ffi.new("char *[]", names), ffi.new("char *[]", texts),
                                        ffi.new("size_t[]", lens), len(docs), prm))

    @staticmethod
    def params(budget=None, rotate_every=None, evict_fraction=None, warmup_steps=None,
               lr=None):
        """deg_fleet_params with the given fields changed from the defaults
        (budget 4, rotate_every 10, evict_fraction 0.5, warmup_steps 4,
        lr 2e-3)."""
        prm = lib.deg_fleet_default_params()
        if budget is not None:
            prm.budget = int(budget)
        if rotate_every is not None:
            prm.rotate_every = int(rotate_every)
        if evict_fraction is not None:
            prm.evict_fraction = float(evict_fraction)
        if warmup_steps is not None:
            prm.warmup_steps = int(warmup_steps)
        if lr is not None:
            prm.adam.lr = float(lr)
        return prm

    @classmethod
    def open(cls, model, path, **params):
        """Open a fleet (params as Fleet.params; budget=0 keeps every
        document resident)."""
        prm = ffi.new("deg_fleet_params *", cls.params(**params))
        out = ffi.new("deg_fleet **")
        with model._use() as _p:
            check(lib.deg_fleet_open(_p, path_arg(path), prm, out))
        return cls(model, out[0], fspath(path))

    # --------------------------------------------------------------- info
    def __len__(self):
        with self._use() as _p:
            return lib.deg_fleet_n_docs(_p)

    def __repr__(self):
        if self.closed:
            return "<deg.Fleet closed>"
        return f"<deg.Fleet {self.path!r} docs={len(self)} p={self.p} rounds={self.rounds}>"

    @property
    def p(self):
        with self._use() as _p:
            return lib.deg_fleet_p(_p)

    @property
    def rounds(self):
        """Optimizer rounds taken over the fleet's life."""
        with self._use() as _p:
            return lib.deg_fleet_rounds(_p)

    def doc(self, i):
        info = ffi.new("deg_fleet_doc_info *")
        with self._use() as _p:
            check(lib.deg_fleet_doc(_p, int(i), info))
        return FleetDoc(int(i), _str(info.name), _str(info.text_path),
                        _str(info.cartridge_path), info.tokens, info.steps, info.since_entry,
                        bool(info.resident))

    def docs(self):
        return [self.doc(i) for i in range(len(self))]

    def residents(self):
        return [d.index for d in self.docs() if d.resident]

    def text(self, i):
        """The document's text (the fleet's own copy)."""
        with open(self.doc(i).text_path, encoding="utf-8") as f:
            return f.read()

    def lr(self, i):
        """The lr document i's next step uses (warm-up applied)."""
        with self._use() as _p:
            return lib.deg_fleet_lr(_p, int(i))

    # ------------------------------------------------------------ training
    def cartridge(self, i):
        """The resident cartridge of document i (owned by the fleet; valid
        until the next step/rotate/evict/admit). StateError if absent."""
        out = ffi.new("deg_cartridge **")
        with self._use() as _p:
            check(lib.deg_fleet_cartridge(_p, int(i), out))
        c = _BorrowedCartridge.__new__(_BorrowedCartridge)
        _Handle.__init__(c, out[0], self)
        c.model = self.model
        self._borrowed.append(c)
        return c

    def _invalidate(self):
        for c in self._borrowed:
            c.close()
        self._borrowed = []

    def _moving(self, fn, *args):
        self._invalidate()
        with self._use() as _p:
            check(fn(_p, *args))

    def step(self, docs):
        """One optimizer round over these resident documents (their
        accumulated gradients), then rotation every rotate_every rounds."""
        docs = [int(d) for d in docs]
        self._moving(lib.deg_fleet_step, ffi.new("size_t[]", docs) if docs else ffi.NULL,
                     len(docs))

    def rotate(self):
        self._moving(lib.deg_fleet_rotate)

    def evict(self, i):
        self._moving(lib.deg_fleet_evict, int(i))

    def admit(self, i):
        self._moving(lib.deg_fleet_admit, int(i))

    def set_draft_refs(self, on=True):
        """Store every document's token ids in its cartridge as its draft
        reference (on=True; what Fleet.init(..., draft_ref=True) stores), or
        remove them (on=False), for a fleet that exists (deg fleet draft-ref;
        deg_fleet_set_draft_refs). Rows, moments, step counts and residency
        stay; cartridges that already match are not rewritten, each changed
        one is saved atomically with the manifest (a killed run leaves a
        loadable fleet; run it again to finish). Returns the number of
        cartridges rewritten."""
        n = ffi.new("size_t *")
        self._moving(lib.deg_fleet_set_draft_refs, 1 if on else 0, n)
        return n[0]

    def save(self):
        """Write every resident cartridge (with moments) and the manifest."""
        with self._use() as _p:
            check(lib.deg_fleet_save(_p))

    def close(self):
        self._invalidate()
        super().close()

    # ------------------------------------------------------------- serving
    def trunk(self, docs):
        """A deg.Trunk holding the composition of these documents' cartridges
        in order (absent ones mapped from disk): usable as any trunk, e.g.
        deg serve's prefix."""
        docs = [int(d) for d in docs]
        if not docs:
            raise ArgumentError("trunk needs at least one document")
        out = ffi.new("deg_trunk **")
        with self._use() as _p:
            check(lib.deg_fleet_trunk(_p, ffi.new("size_t[]", docs), len(docs), out))
        return _wrap_trunk(self.model, out[0])

    def draft_ref(self, docs):
        """The draft reference of the composition of these documents (their
        cartridges' stored references concatenated in order, indexed once in
        the library: deg_fleet_draft_ref), a deg.spec.DraftRef owned by the
        caller, or None when none of them has one."""
        from .spec import DraftRef
        docs = [int(d) for d in docs]
        if not docs:
            raise ArgumentError("draft_ref needs at least one document")
        out = ffi.new("deg_draft_ref **")
        with self._use() as _p:
            check(lib.deg_fleet_draft_ref(_p, ffi.new("size_t[]", docs), len(docs), out))
        return DraftRef._own(self.model, out[0]) if out[0] != ffi.NULL else None
