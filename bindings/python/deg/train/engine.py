"""The heads of a loaded checkpoint as a flat fp32 vector, and the libdeg calls
that train them (deg.h "Training"): batch loss + gradient, raw logits,
calibration temperatures, atomic save."""

import numpy as np

from .._native import check, ffi, lib

KINDS = ("choice", "score", "noul", "extract", "count")
# loss kinds of deg_train_example (deg.h DEG_HEAD_*): the calibration kinds, then
# the anchor-mode ones
LOSS_KINDS = KINDS + ("anchor", "anchor_count", "extract_anchored")


class Heads:
    """Training view of a deg.Checkpoint (borrowed; the checkpoint owns the heads)."""

    def __init__(self, ckpt):
        self.ckpt = ckpt
        with ckpt._use() as _p:
            self.n = int(lib.deg_ckpt_n_params(_p))

    def get(self):
        out = np.empty(self.n, dtype=np.float32)
        with self.ckpt._use() as _p:
            check(lib.deg_ckpt_get_params(_p, ffi.from_buffer("float[]", out), self.n))
        return out

    def set(self, params):
        p = np.ascontiguousarray(params, dtype=np.float32)
        if p.shape != (self.n,):
            raise ValueError(f"params: shape {p.shape}, expected ({self.n},)")
        with self.ckpt._use() as _p:
            check(lib.deg_ckpt_set_params(_p, ffi.from_buffer("float[]", p), self.n))

    def get_temperatures(self):
        t = ffi.new("double[]", len(KINDS))
        with self.ckpt._use() as _p:
            check(lib.deg_ckpt_get_calibration(_p, t))
        return {k: float(t[i]) for i, k in enumerate(KINDS)}

    def set_temperatures(self, temps):
        t = ffi.new("double[]", [float(temps.get(k, 1.0)) for k in KINDS])
        with self.ckpt._use() as _p:
            check(lib.deg_ckpt_set_calibration(_p, t))

    def save(self, directory, extra=None, backbone_path=True):
        """The checkpoint with these heads (deg.Checkpoint.save)."""
        self.ckpt.save(directory, extra=extra, backbone_path=backbone_path)

    @staticmethod
    def _c_examples(examples):
        arr = ffi.new("deg_train_example[]", len(examples))
        keep = [arr]
        for i, x in enumerate(examples):
            e = arr[i]
            e.kind = x.kind
            a = ffi.from_buffer("float[]", x.answer)
            keep.append(a)
            e.answer = a
            if x.rows is not None:
                r = ffi.from_buffer("float[]", x.rows)
                keep.append(r)
                e.rows = r
                e.n_rows = x.rows.shape[0]
            if x.target is not None:
                t = ffi.from_buffer("double[]", x.target)
                keep.append(t)
                e.target = t
            if x.pos_start is not None and len(x.pos_start):
                s = ffi.from_buffer("int32_t[]", x.pos_start)
                keep.append(s)
                e.pos_start, e.n_start = s, len(x.pos_start)
            if x.pos_end is not None and len(x.pos_end):
                en = ffi.from_buffer("int32_t[]", x.pos_end)
                keep.append(en)
                e.pos_end, e.n_end = en, len(x.pos_end)
            e.lo, e.hi, e.count = x.lo, x.hi, x.count
        return arr, keep

    def loss_grad(self, examples, weights):
        """(weighted total loss, flat gradient f32, per-example losses f64)."""
        arr, keep = self._c_examples(examples)
        grad = np.empty(self.n, dtype=np.float32)
        losses = np.empty(max(len(examples), 1), dtype=np.float64)
        w = ffi.new("double[]", [float(x) for x in weights])
        tot = ffi.new("double *")
        with self.ckpt._use() as _p:
            check(lib.deg_train_loss_grad(_p, arr, len(examples), w,
                                          ffi.from_buffer("float[]", grad), self.n,
                                          ffi.from_buffer("double[]", losses), tot))
        del keep
        return float(tot[0]), grad, losses[:len(examples)]

    def loss_grad_hidden(self, examples, weights):
        """As loss_grad, plus d total / d the fork hidden rows each example reads
        (deg_train_loss_grad_hidden): (total, head gradient, per-example losses,
        d_answer [per example: [E] f32], d_rows [per example: [n_rows, E] f32 for
        CHOICE/SCORE, else None])."""
        arr, keep = self._c_examples(examples)
        grad = np.empty(self.n, dtype=np.float32)
        losses = np.empty(max(len(examples), 1), dtype=np.float64)
        w = ffi.new("double[]", [float(x) for x in weights])
        tot = ffi.new("double *")
        n = len(examples)
        d_ans = [np.empty(x.answer.shape[0], dtype=np.float32) for x in examples]
        d_rows = [np.empty(x.rows.shape, dtype=np.float32)
                  if x.kind in (lib.DEG_HEAD_CHOICE, lib.DEG_HEAD_SCORE) else None
                  for x in examples]
        pa = ffi.new("float *[]", [ffi.from_buffer("float[]", a) for a in d_ans] or 1)
        pr = ffi.new("float *[]", [ffi.from_buffer("float[]", r) if r is not None else ffi.NULL
                                   for r in d_rows] or 1)
        with self.ckpt._use() as _p:
            check(lib.deg_train_loss_grad_hidden(_p, arr, n, w, ffi.from_buffer("float[]", grad),
                                                 self.n, ffi.from_buffer("double[]", losses),
                                                 tot, pa, pr))
        del keep
        return float(tot[0]), grad, losses[:n], d_ans, d_rows

    def logits(self, x):
        """Raw logits of one example (deg_train_logits layout)."""
        arr, keep = self._c_examples([x])
        n = ffi.new("size_t *")
        if x.kind in (lib.DEG_HEAD_EXTRACT, lib.DEG_HEAD_EXTRACT_ANCHORED):
            cap = 2 * (x.rows.shape[0] + 1)
        elif x.kind in (lib.DEG_HEAD_CHOICE, lib.DEG_HEAD_SCORE, lib.DEG_HEAD_ANCHOR):
            cap = x.rows.shape[0]
        elif x.kind == lib.DEG_HEAD_NOUL:
            cap = 2
        else:
            cap = x.hi - x.lo + 1
        out = np.empty(cap, dtype=np.float32)
        with self.ckpt._use() as _p:
            check(lib.deg_train_logits(_p, arr, ffi.from_buffer("float[]", out),
                                       cap, n))
        del keep
        return out[:n[0]]
