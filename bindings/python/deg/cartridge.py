"""Cartridges: trained K/V prefixes (include/cartridge.h).

A Cartridge holds per layer a [p, n_head_kv, head_dim] key and value block
in KV-cache space (the layer's geometry: row_len(layer) floats a row); rows [0, frozen_prefix) are constants (default 1, the
attention-sink freeze), the rest are trained through the frozen model by
sparse top-k distillation with Adam. Serving: cartridge.trunk() gives a
deg.Trunk whose forks decode at positions p... exactly as in training.

Targets are (position, token, logprob) triples: the teacher's log-probability
of `token` at token index `position` of the sequence; the student reads its
prediction from logits row position - 1.
"""
from array import array
from collections import namedtuple
from os import fspath

from ._native import check, ffi, lib, path_arg
from .errors import ArgumentError
from .model import Model, Trunk, _Handle, _floats, _ids_buffer

__all__ = ["Cartridge", "DistillTarget", "targets_from_logits", "compose_trunk",
           "compose_eval", "compose_backward", "compose_len"]

DistillTarget = namedtuple("DistillTarget", "position token logprob")


def _targets_buffer(targets):
    targets = [DistillTarget(*t) for t in targets]
    if not targets:
        return ffi.NULL, 0
    buf = ffi.new("deg_distill_target[]", len(targets))
    try:
        for i, t in enumerate(targets):
            buf[i].position = int(t.position)
            buf[i].token = int(t.token)
            buf[i].logprob = float(t.logprob)
    except OverflowError as e:
        raise ArgumentError(f"target {i}: position/token out of range: {e}") from None
    return buf, len(targets)


def targets_from_logits(model, logits, position, k=20, min_mass=0.99):
    """Sparse targets from a teacher's logits row ([n_vocab] floats): the
    top-k tokens until their probability mass reaches min_mass (tail dropped,
    not renormalised). Returns a list of DistillTarget."""
    nv = model.info.n_vocab
    row = array("f", logits)
    if len(row) != nv:
        raise ArgumentError(f"logits has {len(row)} values, the model's vocabulary {nv}")
    out = ffi.new("deg_distill_target[]", int(k))
    n = ffi.new("size_t *")
    with model._use() as _p:
        check(lib.deg_distill_targets_from_logits(_p, ffi.from_buffer("float[]", row),
                                                  int(position), int(k), float(min_mass), out, n))
    return [DistillTarget(out[i].position, out[i].token, out[i].logprob) for i in range(n[0])]


def _parts(parts, writable=False):
    """(deg_cartridge *[] cdata, count, model) for a sequence of Cartridges."""
    parts = list(parts)
    if not parts:
        raise ArgumentError("a composition needs at least one cartridge")
    for i, c in enumerate(parts):
        if not isinstance(c, Cartridge):
            raise ArgumentError(f"part {i} is {type(c).__name__}, not a deg.Cartridge")
    buf = ffi.new("deg_cartridge *[]", [c._live() for c in parts])
    return buf, len(parts), parts[0].model


def compose_len(parts):
    """Rows of the composed prefix (the sum of the parts' p)."""
    return sum(len(c) for c in parts)


def compose_trunk(parts):
    """A deg.Trunk holding the parts' rows back to back (spec "Composition"):
    each part keeps the rotations it was trained at, real tokens decode at
    the composed p. Bitwise the concatenated K/V prefix. Raises MismatchError
    for parts of different models."""
    buf, n, model = _parts(parts)
    out = ffi.new("deg_trunk **")
    check(lib.deg_trunk_from_cartridges(buf, n, out))
    return _wrap_trunk(model, out[0])


def compose_eval(parts, ids, targets=(), logits=False):
    """Cartridge.eval behind the composition of parts (same results)."""
    buf, n, model = _parts(parts)
    ib, ni = _ids_buffer(ids)
    tb, nt = _targets_buffer(targets)
    loss = ffi.new("float *")
    out, lp = (_floats(ni * model.info.n_vocab) if logits else (None, ffi.NULL))
    check(lib.deg_cartridge_compose_eval(buf, n, ib, ni, tb, nt, loss if nt else ffi.NULL, lp))
    val = loss[0] if nt else None
    return (val, out) if logits else val


def compose_backward(parts, ids, targets, seg_lens=None, checkpoint=False):
    """One forward/backward behind the composition; every part's gradient
    receives the block of its own rows (then step each part's optimizer:
    sinks stay frozen). seg_lens: packed segments (as
    deg_cartridge_backward_packed) or None. Returns the loss."""
    buf, n, _ = _parts(parts)
    ib, ni = _ids_buffer(ids)
    tb, nt = _targets_buffer(targets)
    if seg_lens is None:
        sb, ns = ffi.NULL, 0
    else:
        seg_lens = [int(x) for x in seg_lens]
        sb, ns = ffi.new("size_t[]", seg_lens), len(seg_lens)
    loss = ffi.new("float *")
    check(lib.deg_cartridge_compose_backward(buf, n, ib, ni, sb, ns, tb, nt,
                                             1 if checkpoint else 0, loss))
    return loss[0]


def _wrap_trunk(model, ptr):
    t = Trunk.__new__(Trunk)
    _Handle.__init__(t, ptr, model)
    t.model = model
    return t


class Cartridge(_Handle):
    """Trainable prefix rows for a model (which must stay open)."""

    _free = "deg_cartridge_free"

    def __init__(self, model, ptr):
        if not isinstance(model, Model):
            raise ArgumentError("Cartridge needs a deg.Model; use Cartridge.from_corpus(), "
                                ".from_tokens(), .random_vectors(), .random_text() or .load()")
        super().__init__(ptr, model)
        self.model = model

    # ------------------------------------------------------------ creation
    @classmethod
    def _make(cls, model, fn, *args):
        out = ffi.new("deg_cartridge **")
        with model._use() as _p:
            check(fn(_p, *args, out))
        return cls(model, out[0])

    @classmethod
    def from_corpus(cls, model, text, p):
        """Capture the model's own K/V of the first p tokens of `text` wrapped
        as a system message (the untrained cartridge equals that prefill)."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        return cls._make(model, lib.deg_cartridge_init_corpus, data, len(data), int(p))

    @classmethod
    def from_tokens(cls, model, ids):
        """Capture the K/V rows of these token ids (p = len(ids))."""
        buf, n = _ids_buffer(ids)
        return cls._make(model, lib.deg_cartridge_init_tokens, buf, n)

    @classmethod
    def random_vectors(cls, model, p, seed=0):
        """Rows drawn from N(0, 1) (comparison baseline)."""
        return cls._make(model, lib.deg_cartridge_init_random_vectors, int(p), int(seed))

    @classmethod
    def random_text(cls, model, p, seed=0):
        """Capture of p uniformly random token ids (comparison baseline)."""
        return cls._make(model, lib.deg_cartridge_init_random_text, int(p), int(seed))

    @classmethod
    def load(cls, model, path):
        """Load a saved cartridge (MismatchError if saved for another model)."""
        out = ffi.new("deg_cartridge **")
        with model._use() as _p:
            check(lib.deg_cartridge_load(_p, path_arg(path), out))
        return cls(model, out[0])

    def save(self, path, optimizer=True):
        """Write safetensors atomically (NumericError if rows are not finite)."""
        with self._use() as _p:
            check(lib.deg_cartridge_save(_p, path_arg(path), 1 if optimizer else 0))

    # ---------------------------------------------------------- properties
    def __len__(self):
        with self._use() as _p:
            return lib.deg_cartridge_len(_p)

    def __repr__(self):
        if self.closed:
            return "<deg.Cartridge closed>"
        return (f"<deg.Cartridge p={len(self)} frozen_prefix={self.frozen_prefix} "
                f"steps={self.steps}>")

    @property
    def frozen_prefix(self):
        with self._use() as _p:
            return lib.deg_cartridge_frozen_prefix(_p)

    @frozen_prefix.setter
    def frozen_prefix(self, n):
        with self._use() as _p:
            check(lib.deg_cartridge_set_frozen_prefix(_p, int(n)))

    @property
    def steps(self):
        """Adam steps taken."""
        with self._use() as _p:
            return lib.deg_cartridge_steps(_p)

    @property
    def draft_reference(self):
        """The corpus token ids stored in the artifact for speculative serving
        (a deg.spec.DraftRef view, index built at load/set), or None."""
        from .spec import _BorrowedDraftRef
        with self._use() as _p:
            ptr = lib.deg_cartridge_draft_ref(_p)
        if ptr == ffi.NULL:
            return None
        view = getattr(self, "_draft_view", None)
        if view is None or view.closed or view._ptr != ptr:
            view = self._draft_view = _BorrowedDraftRef(ptr, self)
        return view

    def set_draft_reference(self, ids):
        """Store ids (e.g. the corpus token ids; None or [] removes them) as
        the draft reference saved with the cartridge (spec --draft-ref: the
        I64 "draft_reference" entry)."""
        view = getattr(self, "_draft_view", None)
        if view is not None and view._in_use():
            from .errors import StateError
            raise StateError("the cartridge's draft reference is in use by a running call")
        buf, n = _ids_buffer(list(ids) if ids is not None else [])
        with self._use() as _p:
            check(lib.deg_cartridge_set_draft_ref(_p, buf, n))
        if view is not None:
            view.close()
        self._draft_view = None

    def row_len(self, layer):
        """Floats per K/V row of a layer: its n_head_kv * head_dim (Gemma 4's
        full-attention layers have their own geometry); 0 for a recurrent layer
        or one that reads another layer's K/V."""
        with self._use() as _p:
            return int(lib.deg_cartridge_row_len(_p, int(layer)))

    def _row_floats(self, layer):
        return len(self) * self.row_len(layer)

    def rows(self, layer):
        """(keys, values) of a layer: array('f') of p * row_len(layer)."""
        n = self._row_floats(layer)
        k, kp = _floats(n)
        v, vp = _floats(n)
        with self._use() as _p:
            check(lib.deg_cartridge_get_rows(_p, int(layer), kp, vp))
        return k, v

    def set_rows(self, layer, keys=None, values=None):
        n = self._row_floats(layer)
        bufs = []
        for x in (keys, values):
            if x is None:
                bufs.append(ffi.NULL)
                continue
            a = array("f", x)
            if len(a) != n:
                raise ArgumentError(f"rows need {n} floats, got {len(a)}")
            bufs.append(ffi.from_buffer("float[]", a))
        with self._use() as _p:
            check(lib.deg_cartridge_set_rows(_p, int(layer), bufs[0], bufs[1]))

    def grads(self, layer):
        """Accumulated (dkeys, dvalues) of a layer."""
        n = self._row_floats(layer)
        k, kp = _floats(n)
        v, vp = _floats(n)
        with self._use() as _p:
            check(lib.deg_cartridge_get_grads(_p, int(layer), kp, vp))
        return k, v

    # ------------------------------------------------- hybrid recurrent states
    def state_len(self, layer):
        """Floats of a recurrent layer's state (0 for an attention layer).
        On hybrids (lfm2, qwen3_5) a recurrent layer holds this state instead
        of K/V rows: the block its layer starts the cartridge's readers from."""
        with self._use() as _p:
            return int(lib.deg_cartridge_state_len(_p, int(layer)))

    def state(self, layer):
        """A recurrent layer's state: array('f') of state_len(layer) floats."""
        a, ap = _floats(self.state_len(layer))
        with self._use() as _p:
            check(lib.deg_cartridge_get_state(_p, int(layer), ap))
        return a

    def set_state(self, layer, values):
        n = self.state_len(layer)
        a = array("f", values)
        if len(a) != n:
            raise ArgumentError(f"layer {layer}'s state needs {n} floats, got {len(a)}")
        with self._use() as _p:
            check(lib.deg_cartridge_set_state(_p, int(layer), ffi.from_buffer("float[]", a)))

    def state_grads(self, layer):
        """Accumulated gradient of a recurrent layer's state."""
        a, ap = _floats(self.state_len(layer))
        with self._use() as _p:
            check(lib.deg_cartridge_get_state_grads(_p, int(layer), ap))
        return a

    # ------------------------------------------------------------ training
    def eval(self, ids, targets=(), logits=False):
        """Forward behind the cartridge. Returns the loss (None without
        targets), or (loss, logits array('f') [len(ids) * n_vocab]) with
        logits=True."""
        buf, n = _ids_buffer(ids)
        tb, nt = _targets_buffer(targets)
        loss = ffi.new("float *")
        out, lp = (_floats(n * self.model.info.n_vocab) if logits else (None, ffi.NULL))
        with self._use() as _p:
            check(lib.deg_cartridge_eval(_p, buf, n, tb, nt, loss if nt else ffi.NULL, lp))
        val = loss[0] if nt else None
        return (val, out) if logits else val

    def backward(self, ids, targets, checkpoint=False):
        """Add dLoss/drows to the gradients; returns the loss."""
        buf, n = _ids_buffer(ids)
        tb, nt = _targets_buffer(targets)
        loss = ffi.new("float *")
        with self._use() as _p:
            check(lib.deg_cartridge_backward(_p, buf, n, tb, nt, 1 if checkpoint else 0,
                                             loss))
        return loss[0]

    def zero_grads(self):
        with self._use() as _p:
            lib.deg_cartridge_zero_grads(_p)

    @staticmethod
    def _adam(lr, betas, eps, weight_decay):
        p = lib.deg_adam_params_default()
        if lr is not None:
            p.lr = lr
        if betas is not None:
            p.beta1, p.beta2 = betas
        if eps is not None:
            p.eps = eps
        p.weight_decay = weight_decay
        return ffi.new("deg_adam_params *", p)

    def adam_step(self, lr=None, betas=None, eps=None, weight_decay=0.0):
        with self._use() as _p:
            check(lib.deg_cartridge_adam_step(_p, self._adam(lr, betas, eps, weight_decay)))

    def train_step(self, ids, targets, lr=None, betas=None, eps=None, weight_decay=0.0,
                   checkpoint=False):
        """Zero grads, forward + loss + backward, one Adam step over the
        trainable rows. Returns the loss before the step. Defaults: lr 2e-3,
        betas (0.9, 0.999), eps 1e-8, no weight decay."""
        buf, n = _ids_buffer(ids)
        tb, nt = _targets_buffer(targets)
        loss = ffi.new("float *")
        with self._use() as _p:
            check(lib.deg_cartridge_train_step(_p, buf, n, tb, nt,
                                               self._adam(lr, betas, eps, weight_decay),
                                               1 if checkpoint else 0, loss))
        return loss[0]

    # ------------------------------------------------------------- serving
    def trunk(self):
        """A new deg.Trunk holding the rows (independent of the cartridge)."""
        out = ffi.new("deg_trunk **")
        with self._use() as _p:
            check(lib.deg_trunk_from_cartridge(_p, out))
        return _wrap_trunk(self.model, out[0])
