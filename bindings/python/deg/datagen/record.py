"""One datagen record: checks and gold spans (deg contract §12.3, §12.4, §12.6).

Record (one JSON line):
    {"id", "split": "train"|"val"|"test", "source", "template", "doc",
     "context": str, "schema": {...}, "value": {...},
     "spans": {pointer: [s, e]},                 # primary gold span (code points)
     "span_alternatives": {pointer: [[s, e], ...]},  # every span that gives the value
     "decide_probs": {pointer: [p per plan option/level]}}  # only where known

Pointers are concrete RFC 6901 pointers of extract leaves with a value.
Typed leaves (numbers, dates, date-times, email/uri/uuid) take their spans
from the runtime's candidate finder (deg.candidates), keeping candidates
whose parse equals the gold value; plain strings take every verbatim
occurrence. Alternatives of a leaf inside an array item are limited to that
item's text, so a repeated number ("2") elsewhere is not a positive for it.
A record whose gold cannot be located that way is bad (BadRecord).
"""
from ..errors import DegError, SchemaError
from ..parsers import candidates, parse_date, parse_datetime, parse_number, trim_span, validate
from ..schema import compile_schema


class BadRecord(Exception):
    """A record that must not be trained on; .reason is a short count key."""

    def __init__(self, reason, detail=""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def _kind(field):
    if field.mode == "extract.number":
        return "integer" if field.type == "integer" else "number"
    if field.mode == "extract.date":
        return field.format
    if field.mode == "extract.span" and field.format in ("email", "uri", "uuid"):
        return field.format
    return None  # plain verbatim string


def _parsed(kind, text):
    try:
        if kind in ("number", "integer"):
            return parse_number(text, integer=(kind == "integer"))
        if kind == "date":
            return parse_date(text)
        if kind == "date-time":
            return parse_datetime(text)[0]
    except DegError:
        return None
    return text  # email / uri / uuid: verbatim


def _same(kind, a, b):
    if a is None:
        return False
    if kind in ("number", "integer"):
        return isinstance(a, (int, float)) and not isinstance(a, bool) and a == b
    return a == b


def concrete(path, value):
    """Every (pointer, leaf value) of plan path `path` ("*" = each item)
    present in `value`; an omitted key yields nothing, null yields None."""
    out = []

    def walk(v, i, ptr):
        if i == len(path):
            out.append((ptr, v))
            return
        p = path[i]
        if p == "*":
            if isinstance(v, list):
                for k, item in enumerate(v):
                    walk(item, i + 1, f"{ptr}/{k}")
        elif isinstance(v, dict) and p in v:
            walk(v[p], i + 1, f"{ptr}/{p.replace('~', '~0').replace('/', '~1')}")

    walk(value, 0, "")
    return out


def _region(pointer, regions, n):
    """The innermost enclosing item region of `pointer`, else the context."""
    best = (0, n)
    parts = pointer.split("/")
    for k in range(len(parts) - 1, 0, -1):
        pre = "/".join(parts[:k])
        if pre in regions:
            return regions[pre]
    return best


def build(*, rid, split, source, template, doc, context, schema, value, marks, regions,
          decide_probs=None):
    """The checked record dict, or raise BadRecord."""
    if not isinstance(context, str) or not context:
        raise BadRecord("malformed", "empty context")
    try:
        plan = compile_schema(schema)
    except SchemaError as e:
        raise BadRecord("schema_error", str(e)) from None
    errs = validate(schema, value)
    if errs:
        raise BadRecord("invalid_gold", errs[0]["msg"])
    cand_cache = {}
    spans, alts = {}, {}
    for f in plan.fields:
        if not f.mode.startswith("extract."):
            continue
        kind = _kind(f)
        for ptr, v in concrete(f.path, value):
            if v is None:
                continue
            if ptr not in marks:
                raise BadRecord("no_mark", ptr)
            ms, me = marks[ptr]
            rs, re_ = _region(ptr, regions, len(context))
            if kind is None:
                if context[ms:me] != v:
                    raise BadRecord("mark_mismatch", ptr)
                if trim_span(context, ms, me) != (ms, me):
                    raise BadRecord("untrimmed_gold", ptr)
                occ, i = [], context.find(v, rs)
                while i >= 0 and i + len(v) <= re_:
                    occ.append([i, i + len(v)])
                    i = context.find(v, i + 1)
                primary = [ms, me]
            else:
                if kind not in cand_cache:
                    cand_cache[kind] = [(s, e, _parsed(kind, context[s:e]))
                                        for s, e in candidates(kind, context)]
                match = [(s, e) for s, e, pv in cand_cache[kind] if _same(kind, pv, v)]
                over = [c for c in match if c[0] < me and ms < c[1]]
                if not over:
                    raise BadRecord("gold_not_candidate", f"{ptr} {context[ms:me]!r}")
                # the candidate the writer wrote: exact mark, else the longest overlap
                over.sort(key=lambda c: (c != (ms, me), -(c[1] - c[0]), c[0]))
                primary = list(over[0])
                occ = [list(c) for c in match if rs <= c[0] and c[1] <= re_]
            if primary not in occ:
                occ.append(primary)
            spans[ptr] = primary
            alts[ptr] = sorted(occ)
    rec = {"id": rid, "split": split, "source": source, "template": template, "doc": doc,
           "context": context, "schema": schema, "value": value,
           "spans": spans, "span_alternatives": alts}
    if decide_probs:
        for ptr, probs in decide_probs.items():
            if abs(sum(probs) - 1.0) > 1e-6 or min(probs) < 0:
                raise BadRecord("bad_decide_probs", ptr)
        rec["decide_probs"] = decide_probs
    return rec


def modes_of(rec):
    """Counts of the record's leaf modes (concrete leaves with a value; absent
    nullable leaves count as 'null'; arrays count 'array' and nested 'array.nested')."""
    plan = compile_schema(rec["schema"])
    out = {}

    def add(k):
        out[k] = out.get(k, 0) + 1

    for f in plan.fields:
        for ptr, v in concrete(f.path, rec["value"]):
            if v is None:
                add("null")
            else:
                key = f.mode
                if f.mode == "extract.span" and f.format:
                    key = f"extract.span.{f.format}"
                if f.mode == "extract.date" and f.format == "date-time":
                    key = "extract.date-time"
                add(key)
    for a in plan.arrays:
        n = len(concrete(a.path, rec["value"]))
        if n:
            add("array.nested" if a.parent_array is not None else "array")
    return out


def anchor_gold(rec):
    """Anchor-mode training gold of a record (deg contract §12.6 "Training gold").

    Returns {array instance pointer: {"starts": [code point, ...], "region": [s, e]}
    or None} for every present instance of an array whose item subtree has an
    extract leaf. An item's anchor is the start of its earliest span (a leaf's
    `spans` entry, else its first `span_alternatives` entry) that no sibling item
    shares, else of its earliest span. None = left out of training (counted as
    `anchor_skipped_arrays`): an item without any span, anchors that are not
    distinct, an anchor outside the region, or an enclosing instance that is
    itself left out. An empty array trains with no positives (the hard negative).
    Regions: a top-level array's is the whole context; an item's runs from its
    anchor to the next sibling anchor (the last one's to its parent's region end),
    and a nested array's region is its parent item's. Anchors are code points: the
    trainer maps each to the context token holding it and must also skip an
    instance whose anchors share a token."""
    plan = compile_schema(rec["schema"])
    value, n = rec["value"], len(rec["context"])
    spans, alts = rec.get("spans", {}), rec.get("span_alternatives", {})
    fields = list(plan.fields)

    def leaf_span(ptr):
        s = spans.get(ptr) or (alts.get(ptr) or [None])[0]
        return tuple(s) if s else None

    out, item_region = {}, {}
    for a in plan.arrays:  # parents come before their nested arrays
        sub = fields[a.first_field:a.first_field + a.n_fields]
        if not any(f.mode.startswith("extract.") for f in sub):
            continue
        leaf_spans = [(ptr, leaf_span(ptr)) for f in sub if f.mode.startswith("extract.")
                      for ptr, v in concrete(f.path, value) if v is not None]
        for ptr, items in concrete(a.path, value):
            if not isinstance(items, list):
                continue
            parent = ptr.rsplit("/", 1)[0]
            if a.parent_array is None:
                region = (0, n)
            elif parent in item_region and item_region[parent] is not None:
                region = item_region[parent]
            else:
                out[ptr] = None
                continue
            per_item = []
            for i in range(len(items)):
                pre = f"{ptr}/{i}"
                per_item.append(sorted({sp for p, sp in leaf_spans if sp is not None and
                                        (p == pre or p.startswith(pre + "/"))}))
            seen = {}
            for ss in per_item:
                for sp in ss:
                    seen[sp] = seen.get(sp, 0) + 1
            starts = []
            for ss in per_item:
                own = [sp for sp in ss if seen[sp] == 1]
                pick = (own or ss or [None])[0]
                starts.append(None if pick is None else pick[0])
            ok = (all(s is not None for s in starts) and len(set(starts)) == len(starts)
                  and all(region[0] <= s < region[1] for s in starts))
            out[ptr] = {"starts": starts, "region": list(region)} if ok else None
            order = sorted(range(len(items)), key=lambda i: starts[i]) if ok else []
            for k, i in enumerate(order):
                end = starts[order[k + 1]] if k + 1 < len(order) else region[1]
                item_region[f"{ptr}/{i}"] = (starts[i], end)
            if not ok:
                for i in range(len(items)):
                    item_region[f"{ptr}/{i}"] = None
    return out


def count_record(stats, rec):
    """Count a record into a run's stats: records per split, per split:source,
    per source:layout ("templates"), modes per split (modes_of) and the boolean
    (decide.noul) gold as [true, false] per split ("booleans") and per source
    ("booleans_by_source")."""
    split, src = rec["split"], rec["source"]
    for name, key in (("records", split), ("sources", f"{split}:{src}"),
                      ("templates", f"{src}:{rec['template'].split('-')[0]}")):
        d = stats.setdefault(name, {})
        d[key] = d.get(key, 0) + 1
    m = stats.setdefault("modes", {}).setdefault(split, {})
    for k, n in modes_of(rec).items():
        m[k] = m.get(k, 0) + n
    b = stats.setdefault("booleans", {}).setdefault(split, [0, 0])
    bs = stats.setdefault("booleans_by_source", {}).setdefault(src, [0, 0])
    plan = compile_schema(rec["schema"])
    for f in plan.fields:
        if f.mode == "decide.noul":
            for _, v in concrete(f.path, rec["value"]):
                if isinstance(v, bool):
                    b[0 if v else 1] += 1
                    bs[0 if v else 1] += 1
