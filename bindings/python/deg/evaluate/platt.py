"""Platt scaling of extract confidences (deg.json calibration.extract_confidence).

An extract leaf's confidence exp(lp), lp = log p_start + log p_end of the
chosen outcome, is not a span probability (held-out v6: leaves reported at
0.01 were right 25% of the time). A checkpoint may carry {scale, bias}: the
runtime then reports sigmoid(scale * lp + bias) (lib/deg/fill_extract.c);
decisions never read it. fit() is Platt's method (Platt 1999: logistic
regression of the outcome on one score, here lp) by Newton's method with a
small ridge, deterministic.
"""
import math

__all__ = ["fit", "apply", "invert"]


def _lp(conf):
    return math.log(conf) if conf > 0 else -745.0  # exp underflows below ~-745


def apply(conf, scale, bias):
    """The calibrated confidence of a raw (exp(lp)) one."""
    z = scale * _lp(conf) + bias
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def invert(conf, scale, bias):
    """lp = log of the raw confidence that apply() maps to `conf` (0 < conf < 1):
    (logit(conf) - bias) / scale; recalibrate reads raw scores back from
    reported confidences with it."""
    if not 0.0 < conf < 1.0 or scale == 0:
        raise ValueError(f"invert needs 0 < conf < 1 and scale != 0, got {conf!r}, {scale!r}")
    return (math.log(conf / (1.0 - conf)) - bias) / scale


def _nll(xs, ys, a, b, ridge):
    t = ridge * (a * a + b * b) / 2
    for x, y in zip(xs, ys):
        z = a * x + b
        # log(1 + e^z) - y z, stable for either sign of z
        t += (z if z > 0 else 0.0) + math.log1p(math.exp(-abs(z))) - y * z
    return t


def fit(confs, correct, iters=100, ridge=1e-6):
    """(scale, bias) maximising the likelihood of correct[i] under
    sigmoid(scale * log confs[i] + bias); confs are raw exp(lp) values.
    Newton steps halved until the loss falls (lp spans tens of nats, so full
    steps overshoot). Needs both outcomes (else ValueError: nothing to fit)."""
    xs = [_lp(c) for c in confs]
    ys = [1.0 if c else 0.0 for c in correct]
    if not xs or all(ys) or not any(ys):
        raise ValueError("Platt scaling needs right and wrong outcomes among the leaves")
    a, b = 1.0, 0.0
    f = _nll(xs, ys, a, b, ridge)
    for _ in range(iters):
        ga, gb, haa, hab, hbb = ridge * a, ridge * b, ridge, 0.0, ridge
        for x, y in zip(xs, ys):
            z = a * x + b
            p = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
            w = p * (1.0 - p)
            ga += (p - y) * x
            gb += p - y
            haa += w * x * x
            hab += w * x
            hbb += w
        det = haa * hbb - hab * hab
        if det <= 0:
            break
        da = (hbb * ga - hab * gb) / det
        db = (haa * gb - hab * ga) / det
        step = 1.0
        while step > 1e-10:
            na, nb = a - step * da, b - step * db
            nf = _nll(xs, ys, na, nb, ridge)
            if nf <= f:
                break
            step /= 2
        else:
            break
        done = f - nf < 1e-12 * max(1.0, abs(f))
        a, b, f = na, nb, nf
        if done:
            break
    return a, b
