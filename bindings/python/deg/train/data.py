"""Datagen records for head training: reading, checking, subsampling, targets (§12.4).

A record is skipped (never trained on) and counted under one reason when it is
  malformed            not a JSON object with context/schema/value/split of the right types
  schema_error         its schema does not compile
  invalid_gold         its gold value is not valid under its schema
  gold_not_in_context  an extract leaf's gold span (or alternative) lies outside
                       the context, does not spell the value (plain strings), or is missing
  features_error       the runtime refused the request (reported with the message)
"""
import json
import random
from collections import Counter, OrderedDict

import numpy as np

from ..errors import DegError
from ..parsers import validate
from .._native import lib
from ..schema import compile_schema

# loss kinds of deg_train_example (deg.h DEG_HEAD_*)
KIND = {"decide.choice": lib.DEG_HEAD_CHOICE, "decide.score": lib.DEG_HEAD_SCORE,
        "decide.noul": lib.DEG_HEAD_NOUL, "count": lib.DEG_HEAD_COUNT}
EXTRACT = lib.DEG_HEAD_EXTRACT
ANCHOR, ANCHOR_COUNT = lib.DEG_HEAD_ANCHOR, lib.DEG_HEAD_ANCHOR_COUNT
EXTRACT_ANCHORED = lib.DEG_HEAD_EXTRACT_ANCHORED


class BadRecord(Exception):
    def __init__(self, reason, detail=""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def resolve(value, pointer):
    """(found, value) at RFC 6901 pointer in value."""
    if pointer == "":
        return True, value
    v = value
    for tok in pointer.split("/")[1:]:
        tok = tok.replace("~1", "/").replace("~0", "~")
        if isinstance(v, dict):
            if tok not in v:
                return False, None
            v = v[tok]
        elif isinstance(v, list):
            if not tok.isdigit() or int(tok) >= len(v):
                return False, None
            v = v[int(tok)]
        else:
            return False, None
    return True, v


def _key(v):
    return json.dumps(v, sort_keys=True, ensure_ascii=False)


def check_record(rec):
    """The compiled plan of a good record, else raise BadRecord."""
    if not isinstance(rec, dict):
        raise BadRecord("malformed", "not an object")
    for k, t in (("context", str), ("schema", dict), ("split", str), ("id", str)):
        if not isinstance(rec.get(k), t):
            raise BadRecord("malformed", f"'{k}' missing or not a {t.__name__}")
    if "value" not in rec or not rec["context"]:
        raise BadRecord("malformed", "no value or empty context")
    try:
        plan = compile_schema(rec["schema"])
    except DegError as e:
        raise BadRecord("schema_error", str(e)) from None
    errs = validate(rec["schema"], rec["value"])
    if errs:
        raise BadRecord("invalid_gold", errs[0].get("msg", ""))
    n = len(rec["context"])
    alts = rec.get("span_alternatives") or {}
    spans = rec.get("spans") or {}
    if not isinstance(alts, dict) or not isinstance(spans, dict):
        raise BadRecord("malformed", "spans / span_alternatives are not objects")
    for ptr, lst in alts.items():
        for se in list(lst) + ([spans[ptr]] if ptr in spans else []):
            if (not isinstance(se, list) or len(se) != 2 or not all(isinstance(x, int) for x in se)
                    or not 0 <= se[0] < se[1] <= n):
                raise BadRecord("gold_not_in_context", f"{ptr} span {se!r}")
    return plan


def gold_spans(rec, pointer, field, gold):
    """The gold's [s, e) code point spans (every alternative) or raise BadRecord."""
    lst = (rec.get("span_alternatives") or {}).get(pointer) or []
    if not lst and pointer in (rec.get("spans") or {}):
        lst = [rec["spans"][pointer]]
    if not lst:
        raise BadRecord("gold_not_in_context", f"{pointer}: no span for {gold!r}")
    if field.mode == "extract.span" and not field.format:
        for s, e in lst:
            if rec["context"][s:e] != gold:
                raise BadRecord("gold_not_in_context", f"{pointer}: span [{s}, {e}) is "
                                f"{rec['context'][s:e]!r}, not {gold!r}")
    return lst


def _target_decide(rec, field, pointer, gold, order):
    """Target over the fork's lines (line i shows plan outcome order[i])."""
    probs = (rec.get("decide_probs") or {}).get(pointer)
    if field.mode == "decide.choice":
        keys = [_key(o) for o in field.options]
        n = len(keys)
        if probs is not None and len(probs) == n:
            t = np.asarray(probs, dtype=np.float64)
        else:
            if _key(gold) not in keys:
                raise BadRecord("invalid_gold", f"{pointer}: {gold!r} is not an option")
            t = np.zeros(n)
            t[keys.index(_key(gold))] = 1.0
    else:
        levels = list(field.levels)
        n = len(levels) + (1 if field.null_outcome else 0)
        if probs is not None and len(probs) == n:
            t = np.asarray(probs, dtype=np.float64)
        else:
            t = np.zeros(n)
            if gold is None and field.null_outcome:
                t[-1] = 1.0
            elif isinstance(gold, int) and not isinstance(gold, bool) and gold in levels:
                t[levels.index(gold)] = 1.0
            else:
                raise BadRecord("invalid_gold", f"{pointer}: {gold!r} is not a level")
    t = t / t.sum()
    if order is not None:
        t = t[np.asarray(order)]
    return t


def token_of(tok_cp, cp):
    """The context token covering code point cp."""
    ends = tok_cp[:, 1]
    t = int(np.searchsorted(ends, cp, side="right"))
    if t >= len(ends) or tok_cp[t, 0] > cp:
        # a code point inside a multi-byte token completes in the next token
        while t < len(ends) and ends[t] <= cp:
            t += 1
    return t


class Example:
    """One head example over cached features (numpy views). fork: the index, in the
    fork list it was made from, of the fork whose hidden rows it reads (answer =
    the fork's last row, CHOICE/SCORE rows = the others): where the LoRA trainer
    sends the head losses' dL/dhidden."""
    __slots__ = ("kind", "answer", "rows", "target", "pos_start", "pos_end", "lo", "hi",
                 "count", "pointer", "gold_line", "fork")

    def __init__(self, kind, answer, pointer, rows=None, target=None, pos_start=None,
                 pos_end=None, lo=0, hi=0, count=0, gold_line=-1):
        self.kind, self.answer, self.pointer = kind, answer, pointer
        self.rows, self.target = rows, target
        self.pos_start, self.pos_end = pos_start, pos_end
        self.lo, self.hi, self.count = lo, hi, count
        self.gold_line = gold_line
        self.fork = -1


def forks_of(feats, choice_variant=None):
    """The record's forks (base features), with the choice forks of a shuffled
    variant replacing the base's when given."""
    forks = feats.forks
    if choice_variant is not None:
        alt = {f["pointer"]: f for f in choice_variant.forks if f["mode"] == "decide.choice"}
        forks = [alt.get(f["pointer"], f) if f["mode"] == "decide.choice" else f for f in forks]
    return forks


def examples_of(rec, plan, feats, choice_variant=None):
    """Examples of a record from its features (base) and optionally the choice forks
    of a shuffled variant replacing the base's. Raises BadRecord."""
    return _examples(rec, plan, feats, forks_of(feats, choice_variant))


def fork_examples(rec, plan, feats, forks):
    """Examples of a record over the given fork list (features' context rows;
    each example's .fork indexes forks). Raises BadRecord."""
    return _examples(rec, plan, feats, forks)


def anchor_examples_of(rec, plan, feats, anchor_count=False):
    """Anchor-mode examples of a record from its anchor trace (§12.4, §12.6): the
    anchor BCE of every traced anchored instance (its region's rows, the gold
    starts), with anchor_count the CE of its count fork (target = the gold count,
    capped at the top class), and every fork inside an anchored item (extract
    leaves with the anchored-extract bias; decide leaves and index counts as
    usual). Forks outside every anchored item are left out: the index trace
    trains them. Raises BadRecord."""
    inside = tuple(f["pointer"] + "/" for f in feats.forks if f["mode"] == "anchor")
    out = []
    for fi, f in enumerate(feats.forks):
        n0 = len(out)
        _anchor_fork_examples(rec, plan, feats, f, inside, anchor_count, out)
        for x in out[n0:]:
            x.fork = fi
    return out


def _anchor_fork_examples(rec, plan, feats, f, inside, anchor_count, out):
    """Append the anchor-mode examples of one fork to out."""
    if f["mode"] == "anchor":
        r0, r1 = f["r0"], f["r1"]
        out.append(Example(ANCHOR, f["hidden"][-1], f["pointer"], rows=feats.ctx[r0:r1],
                           pos_start=(np.asarray(f["starts"], dtype=np.int64) - r0).astype(np.int32)))
    elif f["mode"] == "anchor_count":
        if anchor_count:
            lo, hi = f["count_lo"], f["count_hi"]
            c = min(max(f["count_gold"], lo), hi)
            out.append(Example(ANCHOR_COUNT, f["hidden"][-1], f["pointer"], lo=lo, hi=hi,
                               count=c))
    elif f["pointer"].startswith(inside):
        out.extend(_examples(rec, plan, feats, [f]))


def _examples(rec, plan, feats, forks):
    fields = plan.fields
    out = []
    for fi, f in enumerate(forks):
        n0 = len(out)
        _fork_examples(rec, fields, feats, f, out)
        for x in out[n0:]:
            x.fork = fi
    return out


def _fork_examples(rec, fields, feats, f, out):
    """Append the examples of one fork to out."""
    ctx = feats.ctx
    nc = ctx.shape[0]
    h = f["hidden"]
    answer = h[-1]
    mode = f["mode"]
    if mode == "count":
        lo, hi = f["count_lo"], f["count_hi"]
        c = min(max(f["count_gold"], lo), hi)
        out.append(Example(4, answer, f["pointer"], lo=lo, hi=hi, count=c))
        return
    field = fields[f["index"]]
    found, gold = resolve(rec["value"], f["pointer"])
    if mode in ("decide.choice", "decide.score"):
        if not found:
            return  # an omitted decide value has no target
        t = _target_decide(rec, field, f["pointer"], gold, f["order"])
        out.append(Example(KIND[mode], answer, f["pointer"], rows=h[:-1], target=t,
                           gold_line=int(np.argmax(t))))
    elif mode == "decide.noul":
        if not found or not isinstance(gold, bool):
            return
        probs = (rec.get("decide_probs") or {}).get(f["pointer"])
        p = float(probs[0]) if probs is not None and len(probs) == 2 else float(gold)
        out.append(Example(2, answer, f["pointer"], target=np.array([p]),
                           gold_line=0 if gold else 1))
    else:
        if not found or gold is None:
            ps = pe = np.array([nc], dtype=np.int32)  # the null outcome
        else:
            spans = gold_spans(rec, f["pointer"], field, gold)
            ps = sorted({token_of(feats.tok_cp, s) for s, e in spans})
            pe = sorted({token_of(feats.tok_cp, e - 1) for s, e in spans})
            if max(ps + pe) >= nc:
                raise BadRecord("gold_not_in_context", f"{f['pointer']}: span beyond the "
                                "context tokens")
            ps = np.asarray(ps, dtype=np.int32)
            pe = np.asarray(pe, dtype=np.int32)
        if f.get("anchor", -1) >= 0:  # inside an anchored item: the bias
            out.append(Example(EXTRACT_ANCHORED, answer, f["pointer"], rows=ctx,
                               pos_start=ps, pos_end=pe, lo=f["anchor"], hi=f["rend"]))
        else:
            out.append(Example(EXTRACT, answer, f["pointer"], rows=ctx, pos_start=ps,
                               pos_end=pe))


def read_records(path):
    """(records by split, bad Counter, bad examples) from a datagen JSONL file;
    malformed lines are counted, never raised."""
    by_split = {"train": [], "val": [], "test": []}
    bad, bad_ex = Counter(), []
    with open(path, encoding="utf-8") as fh:
        for ln, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                bad["malformed"] += 1
                bad_ex.append({"line": ln, "why": f"malformed: {e}"})
                continue
            if not isinstance(rec, dict) or rec.get("split") not in by_split:
                bad["malformed"] += 1
                bad_ex.append({"line": ln, "why": "malformed: no split"})
                continue
            by_split[rec["split"]].append(rec)
    return by_split, bad, bad_ex


def subsample(records, n, seed):
    """n records (all when n is None), stratified: a seeded shuffle, then round robin
    over (source, template) groups in first-seen order, so any prefix is balanced."""
    recs = list(records)
    random.Random(seed).shuffle(recs)
    if n is None or n >= len(recs):
        return recs
    groups = OrderedDict()
    for r in recs:
        groups.setdefault((r.get("source"), r.get("template")), []).append(r)
    out, lists = [], list(groups.values())
    i = 0
    while len(out) < n:
        progressed = False
        for g in lists:
            if i < len(g) and len(out) < n:
                out.append(g[i])
                progressed = True
        if not progressed:
            break
        i += 1
    return out
