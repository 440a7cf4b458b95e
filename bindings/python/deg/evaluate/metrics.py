"""Metric functions of deg contract §11 (pure Python, no model).

Conventions (stated in the report too):
  * ECE: equal-width bins over [0, 1] (default 10; a confidence of exactly 1
    falls in the last bin), ECE = sum_b (n_b / N) |acc_b - conf_b|.
  * token F1: whitespace tokens, case-folded, multiset overlap (SQuAD style
    without article/punctuation stripping): 2PR / (P + R); both empty = 1.
  * null: "positive" = the leaf is null or absent. precision = TP / predicted
    null, recall = TP / gold null (None when the denominator is 0).
  * array aligned item EM: gold and predicted items matched one-to-one,
    greedily by the number of equal leaves (ties: lower gold index, then lower
    predicted index); an item counts if it equals its match exactly.
  * number / date exact match "after parsing": numbers compare as numbers
    (2 == 2.0); dates and date-times are parsed (datetime.fromisoformat, "Z"
    = UTC) and compared as dates / instants, so 10:00:00Z equals 11:00:00+01:00;
    a date-time without an offset is read as UTC (deg's assumed_offset rule).
  * latency percentiles: nearest rank (p50 of 4 values = the 2nd smallest).
"""
import datetime
import json
import math

__all__ = ["ece", "reliability", "token_f1", "repeats_a_line", "mae", "null_pr", "align_items",
           "same_value", "same_parsed", "confidence_of", "percentile", "head_kind"]


def reliability(confs, correct, n_bins=10):
    """[(lo, hi, n, mean_conf, accuracy)] per non-empty bin."""
    if n_bins < 1:
        raise ValueError("n_bins must be >= 1")
    bins = [[] for _ in range(n_bins)]
    for c, ok in zip(confs, correct):
        if not (0.0 <= c <= 1.0) or math.isnan(c):
            raise ValueError(f"confidence {c} outside [0, 1]")
        bins[min(int(c * n_bins), n_bins - 1)].append((c, 1.0 if ok else 0.0))
    out = []
    for b, items in enumerate(bins):
        if items:
            out.append((b / n_bins, (b + 1) / n_bins, len(items),
                        sum(c for c, _ in items) / len(items), sum(a for _, a in items) / len(items)))
    return out


def ece(confs, correct, n_bins=10):
    """Expected calibration error; None for no samples."""
    confs, correct = list(confs), list(correct)
    if len(confs) != len(correct):
        raise ValueError("confs and correct differ in length")
    if not confs:
        return None
    n = len(confs)
    return sum(k / n * abs(acc - conf) for _, _, k, conf, acc in reliability(confs, correct, n_bins))


def repeats_a_line(text):
    """True when a line of text (blanks trimmed, not blank) equals an earlier one: the
    loops greedy decoding of a small model falls into on x-generate fields (the
    decoding rule that ends them: lib/deg/repeats.h)."""
    seen = set()
    for line in str(text).split("\n"):
        key = line.strip(" \t\r")
        if key in seen:
            return True
        if key:
            seen.add(key)
    return False


def token_f1(pred, gold):
    p = str(pred).casefold().split() if pred is not None else []
    g = str(gold).casefold().split() if gold is not None else []
    if not p and not g:
        return 1.0
    if not p or not g:
        return 0.0
    common = {}
    for t in g:
        common[t] = common.get(t, 0) + 1
    hit = 0
    for t in p:
        if common.get(t, 0) > 0:
            common[t] -= 1
            hit += 1
    if hit == 0:
        return 0.0
    prec, rec = hit / len(p), hit / len(g)
    return 2 * prec * rec / (prec + rec)


def mae(pairs):
    pairs = list(pairs)
    return sum(abs(a - b) for a, b in pairs) / len(pairs) if pairs else None


def null_pr(pairs):
    """pairs of (pred_is_null, gold_is_null) -> (precision, recall, n_pred_null, n_gold_null)."""
    tp = fp = fn = 0
    for p, g in pairs:
        tp += p and g
        fp += p and not g
        fn += g and not p
    prec = tp / (tp + fp) if tp + fp else None
    rec = tp / (tp + fn) if tp + fn else None
    return prec, rec, tp + fp, tp + fn


def same_value(a, b):
    """JSON equality where 1 == 1.0 but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b


def _parse_when(v, fmt):
    if not isinstance(v, str):
        return None
    try:
        if fmt == "date":
            return datetime.date.fromisoformat(v)
        t = datetime.datetime.fromisoformat(v.replace("z", "Z"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=datetime.timezone.utc)


def same_parsed(mode, fmt, gold, pred):
    """Leaf equality for scoring: dates / date-times after parsing (see module
    doc), numbers numerically, everything else by same_value."""
    if mode == "extract.date" and fmt in ("date", "date-time"):
        g, p = _parse_when(gold, fmt), _parse_when(pred, fmt)
        if g is not None and p is not None:
            return g == p
    return same_value(gold, pred)


def percentile(xs, q):
    """Nearest-rank q-th percentile (0 < q <= 100) of xs; None if empty."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return xs[max(0, math.ceil(q / 100 * len(xs)) - 1)]


def head_kind(mode):
    """The calibrated head kind (contract §12.3) scoring a leaf of `mode`."""
    if mode.startswith("decide."):
        return mode.split(".", 1)[1]  # choice, score, noul
    if mode.startswith("extract."):
        return "extract"
    return None


def _leaves(v, prefix=""):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            out.update(_leaves(x, f"{prefix}/{k}"))
        return out
    if isinstance(v, list):
        out = {}
        for i, x in enumerate(v):
            out.update(_leaves(x, f"{prefix}/{i}"))
        return out
    return {prefix: v}


def align_items(gold, pred):
    """[(gold index, pred index)] one-to-one greedy matching (see module doc)."""
    gl = [_leaves(x) for x in gold]
    pl = [_leaves(x) for x in pred]
    scores = []
    for i, g in enumerate(gl):
        for j, p in enumerate(pl):
            s = sum(1 for k in g if k in p and same_value(g[k], p[k]))
            scores.append((-s, i, j))
    scores.sort()
    used_g, used_p, pairs = set(), set(), []
    for _, i, j in scores:
        if i not in used_g and j not in used_p:
            used_g.add(i)
            used_p.add(j)
            pairs.append((i, j))
    return sorted(pairs)


def confidence_of(meta):
    """The probability a meta entry gives its chosen outcome (decide: the
    chosen probability; noul: max(p, 1-p); extract: confidence), or None."""
    if not isinstance(meta, dict):
        return None
    mode = meta.get("mode", "")
    if mode == "decide.noul" and meta.get("probability") is not None:
        p = meta["probability"]
        return max(p, 1 - p)
    if mode.startswith("decide.") and meta.get("probability") is not None:
        return meta["probability"]
    if mode.startswith("extract.") and meta.get("confidence") is not None:
        return meta["confidence"]
    return None


def canonical(obj):
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False)
