"""AdamW (decoupled weight decay) with linear warmup then cosine decay to 10%
of the peak learning rate (§12.4). The update is libdeg's one Adam
(deg_adam_update: torch.optim.AdamW's arithmetic in fp32), the same code that
steps cartridges: the same inputs give the same bits. Its rule, sources
(Kingma & Ba; Loshchilov & Hutter) and the trainer's hyper-parameters are
written once, in lib/grad/adam.h."""
import math

import numpy as np

from .._native import check, ffi, lib


def lr_at(step, total, peak, warmup):
    """Learning rate of optimizer step `step` (0-based) of `total`."""
    if warmup > 0 and step < warmup:
        return peak * (step + 1) / warmup
    span = max(total - warmup, 1)
    prog = min(max(step - warmup, 0) / span, 1.0)
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * prog)))


class AdamW:
    """AdamW over one fp32 parameter vector of n elements. State: first and
    second moments m, v (float32 [n]) and the step count t (steps taken)."""

    def __init__(self, n, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01):
        self.m = np.zeros(n, dtype=np.float32)
        self.v = np.zeros(n, dtype=np.float32)
        self.t = 0
        self.b1, self.b2, self.eps, self.wd = beta1, beta2, eps, weight_decay

    def step(self, params, grad, lr):
        """Update params (float32 [n], C-contiguous, in place) with grad;
        returns params. lr: a number, or a float32 array [n] of per-parameter
        rates (LoRA: the heads' and the adapters' own). NumericError (nothing
        changed) if an element would become non-finite."""
        n = self.m.size
        for name, a in (("params", params), ("grad", grad)):
            if not (isinstance(a, np.ndarray) and a.dtype == np.float32 and a.shape == (n,)
                    and a.flags.c_contiguous):
                raise ValueError(f"AdamW.step: {name} must be a contiguous float32 array of "
                                 f"shape ({n},)")
        hp = lib.deg_adam_params_default()
        hp.beta1, hp.beta2, hp.eps, hp.weight_decay = self.b1, self.b2, self.eps, self.wd
        lr_each = ffi.NULL
        if np.ndim(lr) == 0:
            hp.lr = float(lr)
        else:
            lr = np.ascontiguousarray(lr, dtype=np.float32)
            if lr.shape != (n,):
                raise ValueError(f"AdamW.step: lr must be a number or shape ({n},)")
            lr_each = ffi.from_buffer("float[]", lr)
        check(lib.deg_adam_update(ffi.from_buffer("float[]", params),
                                  ffi.from_buffer("float[]", grad),
                                  ffi.from_buffer("float[]", self.m),
                                  ffi.from_buffer("float[]", self.v), n, self.t + 1, lr_each,
                                  ffi.new("deg_adam_params *", hp), 1))
        self.t += 1
        return params

    def state(self):
        return {"m": self.m, "v": self.v, "t": np.array(self.t, dtype=np.int64)}

    def load(self, st):
        self.m = np.array(st["m"], dtype=np.float32)
        self.v = np.array(st["v"], dtype=np.float32)
        self.t = int(st["t"])
