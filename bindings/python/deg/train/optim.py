"""AdamW (decoupled weight decay) with linear warmup then cosine decay to 10%
of the peak learning rate (§12.4), in numpy fp32: the same inputs give the
same bits."""
import math

import numpy as np


def lr_at(step, total, peak, warmup):
    """Learning rate of optimizer step `step` (0-based) of `total`."""
    if warmup > 0 and step < warmup:
        return peak * (step + 1) / warmup
    span = max(total - warmup, 1)
    prog = min(max(step - warmup, 0) / span, 1.0)
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * prog)))


class AdamW:
    def __init__(self, n, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01):
        self.m = np.zeros(n, dtype=np.float32)
        self.v = np.zeros(n, dtype=np.float32)
        self.t = 0
        self.b1, self.b2, self.eps, self.wd = beta1, beta2, eps, weight_decay

    def step(self, params, grad, lr):
        """Update params (fp32, in place) with grad; returns params. lr: a number,
        or a float32 array [n] of per-parameter rates (LoRA: the heads' and the
        adapters' own; each element is the same fp32 arithmetic as a number)."""
        self.t += 1
        b1, b2 = np.float32(self.b1), np.float32(self.b2)
        self.m *= b1
        self.m += (np.float32(1) - b1) * grad
        self.v *= b2
        self.v += (np.float32(1) - b2) * grad * grad
        c1 = np.float32(1.0 - self.b1 ** self.t)
        c2 = np.float32(1.0 - self.b2 ** self.t)
        upd = (self.m / c1) / (np.sqrt(self.v / c2) + np.float32(self.eps))
        params -= np.float32(lr) * (upd + np.float32(self.wd) * params)
        return params

    def state(self):
        return {"m": self.m, "v": self.v, "t": np.array(self.t, dtype=np.int64)}

    def load(self, st):
        self.m = np.array(st["m"], dtype=np.float32)
        self.v = np.array(st["v"], dtype=np.float32)
        self.t = int(st["t"])
