"""Calibration (§12.3): one temperature per head kind (choice, score, noul,
extract) fit by NLL on val, decide heads against the one-hot filled value;
count keeps T = 1. The search is a fixed golden-section on log T in
[log 0.05, log 20], so it is deterministic."""
import math

import numpy as np


def _lse(x):
    m = np.max(x)
    return m + math.log(float(np.sum(np.exp(x - m))))


def nll(kind, items, T):
    """Mean NLL at temperature T of items: decide (logits, gold line) or extract
    (logits [2, n+1], pos_start, pos_end)."""
    tot = 0.0
    for it in items:
        if kind == 3:
            lg, ps, pe = it
            n = lg.shape[0] // 2
            for l, pos in ((lg[:n] / T, ps), (lg[n:] / T, pe)):
                l = l.astype(np.float64)
                tot += _lse(l) - _lse(l[pos])
        else:
            lg, g = it
            l = lg.astype(np.float64) / T
            tot += _lse(l) - l[g]
    return tot / max(len(items), 1)


def fit(kind, items, lo=0.05, hi=20.0, iters=60, loss=None):
    """The temperature in [lo, hi] minimising loss(kind, items, T) (default nll)."""
    if not items:
        return 1.0
    nll_ = loss or nll
    a, b = math.log(lo), math.log(hi)
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = nll_(kind, items, math.exp(c)), nll_(kind, items, math.exp(d))
    for _ in range(iters):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = nll_(kind, items, math.exp(c))
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = nll_(kind, items, math.exp(d))
    return float(math.exp((a + b) / 2))
