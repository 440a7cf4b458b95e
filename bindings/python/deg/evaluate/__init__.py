"""deg evaluation (deg contract §11): any system mapping (context, schema)
to a §8-style response is scored on datagen records.

    from deg.evaluate import evaluate, oracle_system
    res = evaluate(records, oracle_system(records), name="oracle")

A system is a callable system(context, schema) -> {"value": ..., "meta":
{pointer: {...}} (may be empty), "usage": {"prompt_tokens", "generated_tokens"}}.
An exception or a schema-invalid value counts as an invalid response (its
leaves score as misses). Leaf metrics are positional (pointer by pointer);
arrays also get count accuracy and order-insensitive aligned item EM.

Each per-record entry keeps the raw response (value, meta, usage) and its
latency, so rescore(result, records) recomputes every metric with the current
metric code without running the system again (python -m deg.evaluate --merge).
"""
import random
import time

from ..parsers import validate
from ..schema import compile_schema
from ..datagen.record import concrete
from .metrics import (align_items, canonical, confidence_of, ece, head_kind, mae, null_pr,
                      percentile, reliability, repeats_a_line, same_parsed, same_value,
                      token_f1)

__all__ = ["evaluate", "score_record", "score_response", "field_rows", "field_summary", "rescore",
           "summarize", "determinism",
           "oracle_system", "HEAD_KINDS"]

HEAD_KINDS = ("choice", "score", "noul", "extract")  # §12.3 kinds with a per-leaf confidence

_MISSING = object()


def _mode_key(f):
    if f.mode == "extract.span" and f.format in ("email", "uri", "uuid"):
        return "extract.span"  # verbatim spans; format only filters
    return f.mode


def score_record(rec, value, meta, valid):
    """Per-leaf rows and per-array rows for one record's predicted value."""
    plan = compile_schema(rec["schema"])
    gold = rec["value"]
    rows, arrays = [], []
    for f in plan.fields:
        fmt = getattr(f, "format", None)
        gl = dict(concrete(f.path, gold))
        pl = dict(concrete(f.path, value)) if valid else {}
        for ptr in list(gl) + [p for p in pl if p not in gl]:
            g = gl.get(ptr, _MISSING)
            p = pl.get(ptr, _MISSING)
            g_null = g is _MISSING or g is None
            p_null = p is _MISSING or p is None
            row = {"pointer": ptr, "mode": _mode_key(f), "gold": None if g is _MISSING else g,
                   "pred": None if p is _MISSING else p, "gold_null": g_null, "pred_null": p_null,
                   "nullable": f.nullable or not f.required, "in_array": f.array is not None,
                   "correct": (g_null and p_null)
                   or (not g_null and not p_null and same_parsed(f.mode, fmt, g, p)),
                   "conf": confidence_of(meta.get(ptr)) if valid and meta else None}
            if f.mode in ("extract.span", "generate") and not g_null:
                row["f1"] = token_f1(None if p_null else p, g)
            if f.mode == "generate" and isinstance(p, str):
                row["repeat"] = repeats_a_line(p)
            rows.append(row)
    for a in plan.arrays:
        gl = dict(concrete(a.path, gold))
        pl = dict(concrete(a.path, value)) if valid else {}
        for ptr, g in gl.items():
            p = pl.get(ptr) or []
            g = g or []
            pairs = align_items(g, p)
            em = sum(1 for i, j in pairs if same_value(g[i], p[j]))
            arrays.append({"pointer": ptr, "gold_n": len(g), "pred_n": len(p),
                           "count_ok": len(g) == len(p), "aligned_em": em,
                           "nested": a.parent_array is not None})
    return rows, arrays


def _same_field(mode, fmt, g, p):
    """Whole-field equality: null/absent on both sides, arrays as multisets of
    items (same_value), scalars as the leaf scorer compares them."""
    g_null, p_null = g is _MISSING or g is None, p is _MISSING or p is None
    if g_null or p_null:
        return g_null and p_null
    if isinstance(g, list) and isinstance(p, list):
        return len(g) == len(p) and all(same_value(g[i], p[j]) for i, j in align_items(g, p))
    if isinstance(g, (list, dict)) or isinstance(p, (list, dict)):
        return same_value(g, p)
    return same_parsed(mode, fmt, g, p)


def field_rows(rec, value, valid):
    """One row per top-level property of the schema but x-generate ones:
    {"field": "<source>/<key>", "correct", "gold", "pred"}; the field is right
    when its whole value is (see _same_field). An invalid response misses every
    field ("correct"); "correct_as_given" scores its fields as they are (an
    object the schema rejects, e.g. a required field left null)."""
    plan = compile_schema(rec["schema"])
    top = {f.path[0]: f for f in plan.fields if len(f.path) == 1}
    out = []
    for key, sub in rec["schema"].get("properties", {}).items():
        if isinstance(sub, dict) and sub.get("x-generate"):
            continue
        f = top.get(key)
        g = rec["value"].get(key, _MISSING)
        p = value.get(key, _MISSING) if isinstance(value, dict) else _MISSING
        ok = _same_field(f.mode if f else None, getattr(f, "format", None), g, p)
        out.append({"field": f"{rec.get('source', '?')}/{key}", "correct": bool(valid and ok),
                    "correct_as_given": bool(ok),
                    "gold": None if g is _MISSING else g, "pred": None if p is _MISSING else p})
    return out


def score_response(rec, resp, latency_s, error=None, cpu_s=None):
    """One per-record entry: validity, usage, latency, scored rows, and the
    raw response (value, meta, usage; None when the system raised)."""
    value = resp.get("value") if isinstance(resp, dict) else None
    valid = isinstance(value, dict) and validate(rec["schema"], value) == []
    meta = (resp or {}).get("meta") or {}
    usage = (resp or {}).get("usage") or {}
    rows, arrays = score_record(rec, value if valid else {}, meta, valid)
    pt, gt = usage.get("prompt_tokens"), usage.get("generated_tokens")
    return {"id": rec["id"], "valid": valid, "error": error, "latency_s": latency_s, "cpu_s": cpu_s,
            "prompt_tokens": pt, "generated_tokens": gt,
            "total_tokens": pt + gt if pt is not None and gt is not None else None,
            "response": None if resp is None else dict(
                {"value": value, "meta": meta, "usage": usage},
                **({"raw": resp["raw"]} if resp.get("raw") is not None else {})),
            "rows": rows, "arrays": arrays, "fields": field_rows(rec, value, valid),
            "valid_jsonschema": _jsonschema_valid(rec["schema"], value)}


def _jsonschema_valid(schema, value):
    """python-jsonschema's verdict (Draft 2020-12, format checks on; x-* keywords
    are ignored by it), None when jsonschema is not installed."""
    try:
        import jsonschema
    except ImportError:
        return None
    if not isinstance(value, dict):
        return False
    cls = jsonschema.Draft202012Validator
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(value)


def evaluate(records, system, name="system", n_bins=10, progress=None, on_record=None,
             deadline=None):
    """Run `system` on each record; {"name", "n_bins", "per_record": [...], "summary"}.
    on_record(entry) is called after each record (e.g. to append it to a log). With
    `deadline` (a time.time() value) no record starts after it: per_record is then
    a prefix of `records`."""
    per = []
    for k, rec in enumerate(records):
        if deadline is not None and time.time() >= deadline:
            break
        t0, c0 = time.perf_counter(), time.process_time()
        err = None
        try:
            resp = system(rec["context"], rec["schema"])
        except Exception as e:  # a failing system is measured, not fatal
            resp, err = None, f"{type(e).__name__}: {e}"
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if isinstance(resp, dict):
            resp = {k2: resp.get(k2) for k2 in ("value", "meta", "usage", "raw")}
        per.append(score_response(rec, resp, dt, err, dc))
        if on_record:
            on_record(per[-1])
        if progress:
            progress(k + 1)
    return {"name": name, "n_bins": n_bins, "per_record": per, "summary": summarize(per, n_bins)}


def rescore(result, records, n_bins=None):
    """`result` (an evaluate() dict, e.g. read back from results JSON) scored
    again from its stored responses; records: the datagen records (any
    superset; matched by id)."""
    by_id = {r["id"]: r for r in records}
    missing = [p["id"] for p in result["per_record"] if p["id"] not in by_id]
    if missing:
        raise ValueError(f"{len(missing)} result ids are not in the records (first: {missing[0]})")
    n_bins = n_bins or result.get("n_bins", 10)
    per = [score_response(by_id[p["id"]], p.get("response"), p["latency_s"], p.get("error"),
                          p.get("cpu_s"))
           for p in result["per_record"]]
    out = dict(result, n_bins=n_bins, per_record=per, summary=summarize(per, n_bins))
    return out


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def summarize(per, n_bins=10):
    rows = [r for p in per for r in p["rows"]]
    arrs = [a for p in per for a in p["arrays"]]
    lat = [p["latency_s"] for p in per]
    s = {"records": len(per), "validity": _mean([1.0 if p["valid"] else 0.0 for p in per]),
         "valid_n": sum(1 for p in per if p["valid"]),
         "errors": sum(1 for p in per if p["error"]),
         # invalid responses: no JSON object at all (e.g. cut at the token cap) vs
         # an object the schema rejects
         "invalid_no_object_n": sum(1 for p in per if not p["valid"] and not p["error"] and not
                                    isinstance((p.get("response") or {}).get("value"), dict)),
         "invalid_schema_n": sum(1 for p in per if not p["valid"] and
                                 isinstance((p.get("response") or {}).get("value"), dict)),
         "latency_s_mean": _mean(lat), "latency_s_p50": percentile(lat, 50),
         "latency_s_p90": percentile(lat, 90), "latency_s_total": sum(lat),
         # CPU seconds of the process (all its threads) per response: the work,
         # less sensitive than wall time to other jobs on a shared machine
         "cpu_s_mean": _mean([p.get("cpu_s") for p in per]),
         "cpu_s_n": sum(1 for p in per if p.get("cpu_s") is not None),
         "prompt_tokens_mean": _mean([p["prompt_tokens"] for p in per]),
         "generated_tokens_mean": _mean([p["generated_tokens"] for p in per]),
         "total_tokens_mean": _mean([p.get("total_tokens") for p in per]),
         # over schema-valid responses only (a runaway, truncated answer is long and slow)
         "generated_tokens_mean_valid": _mean([p["generated_tokens"] for p in per if p["valid"]]),
         "latency_s_mean_valid": _mean([p["latency_s"] for p in per if p["valid"]])}
    js = [p.get("valid_jsonschema") for p in per if p.get("valid_jsonschema") is not None]
    s["validity_jsonschema"] = _mean([1.0 if v else 0.0 for v in js])
    s.update(field_summary(per))
    by = lambda m: [r for r in rows if r["mode"] == m and not r["gold_null"]]  # noqa: E731
    ch = by("decide.choice")
    s["choice_em"] = _mean([1.0 if r["correct"] else 0.0 for r in ch])
    s["choice_n"] = len(ch)
    sc = [r for r in by("decide.score") if isinstance(r["pred"], (int, float))
          and not isinstance(r["pred"], bool)]
    s["score_mae"] = mae((r["pred"], r["gold"]) for r in sc)
    s["score_em"] = _mean([1.0 if r["correct"] else 0.0 for r in by("decide.score")])
    s["score_n"] = len(by("decide.score"))
    nl = by("decide.noul")
    s["noul_acc"] = _mean([1.0 if r["correct"] else 0.0 for r in nl])
    s["noul_n"] = len(nl)
    sp = by("extract.span")
    s["span_em"] = _mean([1.0 if r["correct"] else 0.0 for r in sp])
    s["span_f1"] = _mean([r.get("f1") for r in sp])
    s["span_n"] = len(sp)
    gen = by("generate")  # x-generate text: word overlap with the gold text, loops
    s["generate_f1"] = _mean([r.get("f1") for r in gen])
    s["generate_repeat"] = _mean([1.0 if r.get("repeat") else 0.0 for r in gen
                                  if "repeat" in r])
    s["generate_n"] = len(gen)
    for m, key in (("extract.number", "number"), ("extract.date", "date")):
        xs = by(m)
        s[f"{key}_em"] = _mean([1.0 if r["correct"] else 0.0 for r in xs])
        s[f"{key}_n"] = len(xs)
    ex = [r for r in rows if r["mode"].startswith("extract.") and r["nullable"]]
    prec, rec, npn, ngn = null_pr((r["pred_null"], r["gold_null"]) for r in ex)
    s.update(null_precision=prec, null_recall=rec, null_pred_n=npn, null_gold_n=ngn)
    s["array_count_acc"] = _mean([1.0 if a["count_ok"] else 0.0 for a in arrs])
    s["array_n"] = len(arrs)
    gold_items = sum(a["gold_n"] for a in arrs)
    s["array_item_em_aligned"] = sum(a["aligned_em"] for a in arrs) / gold_items if gold_items else None
    # Calibration: every leaf with a confidence (gold null included: "null" is
    # an outcome the extract head scores too), pooled per decide / extract and
    # per §12.3 head kind.
    s["ece_bins"] = n_bins
    s["reliability"] = {}
    groups = [("decide", lambda r: r["mode"].startswith("decide.")),
              ("extract", lambda r: r["mode"].startswith("extract."))]
    groups += [(k, lambda r, k=k: head_kind(r["mode"]) == k) for k in HEAD_KINDS if k != "extract"]
    for kind, pred in groups:
        xs = [r for r in rows if pred(r) and r["conf"] is not None]
        s[f"ece_{kind}"] = ece([r["conf"] for r in xs], [r["correct"] for r in xs], n_bins)
        s[f"ece_{kind}_n"] = len(xs)
        if kind != "decide":  # one diagram per head kind
            s["reliability"][kind] = reliability([r["conf"] for r in xs],
                                                 [r["correct"] for r in xs], n_bins)
    return s


def field_summary(per):
    """Field accuracy: "field_acc_mean" over every (record, field) pair, its
    mean over fields ("field_acc_macro"), over every pair with invalid
    responses' fields scored as given ("field_acc_as_given"), and per field
    {"n", "acc", "acc_as_given", "majority"} (majority: the share of the field's most common gold value,
    what always answering it would score)."""
    by = {}
    for p in per:
        for f in p.get("fields") or []:
            by.setdefault(f["field"], []).append(f)
    table = {}
    for k in sorted(by):
        xs = by[k]
        counts = {}
        for f in xs:
            c = canonical(f["gold"])
            counts[c] = counts.get(c, 0) + 1
        table[k] = {"n": len(xs), "acc": sum(f["correct"] for f in xs) / len(xs),
                    "acc_as_given": sum(bool(f.get("correct_as_given")) for f in xs) / len(xs),
                    "majority": max(counts.values()) / len(xs)}
    allf = [f for xs in by.values() for f in xs]
    return {"field_acc_mean": _mean([1.0 if f["correct"] else 0.0 for f in allf]),
            "field_acc_as_given": _mean([1.0 if f.get("correct_as_given") else 0.0 for f in allf]),
            "field_acc_macro": _mean([t["acc"] for t in table.values()]),
            "field_n": len(allf), "field_acc": table}


def _parallel_outcomes(resp, plan):
    """{pointer: canonical(value, meta)} of decide/extract leaves only."""
    out = {}
    meta = resp.get("meta") or {}
    if not isinstance(resp.get("value"), dict):  # failed or not an object: never equal
        return {"#invalid": canonical([resp.get("value"), meta])}
    for f in plan.fields:
        if f.mode == "generate":
            continue
        for ptr, v in concrete(f.path, resp["value"]):
            out[ptr] = canonical([v, meta.get(ptr)])
    return out


def _no_raise(system):
    """system whose exceptions become a response {"value": None, "meta": {"error": ...}}
    (so a failure compares like any other outcome)."""
    def run(context, schema):
        try:
            return system(context, schema)
        except Exception as e:
            return {"value": None, "meta": {"error": f"{type(e).__name__}: {e}"}}
    return run


def determinism(records, system, repeats=10, permutations=5, seed=0):
    """Bitwise checks of §10/§11 on `records`: repeated calls give the same
    response; permuting top-level properties and splitting the schema into
    one-property schemas keep every decide/extract outcome. Returns counts."""
    out = {"records": 0, "repeat_equal": 0, "permutation_equal": 0, "split_equal": 0,
           "repeats": repeats, "permutations": permutations}
    rng = random.Random(seed)
    system = _no_raise(system)
    for rec in records:
        schema, ctx = rec["schema"], rec["context"]
        plan = compile_schema(schema)
        first = system(ctx, schema)
        base = canonical([first.get("value"), first.get("meta")])
        out["records"] += 1
        out["repeat_equal"] += all(canonical([r.get("value"), r.get("meta")]) == base
                                   for r in (system(ctx, schema) for _ in range(repeats - 1)))
        ref = _parallel_outcomes(first, plan)
        keys = list(schema["properties"])
        ok = True
        for _ in range(permutations):
            perm = keys[:]
            rng.shuffle(perm)
            s2 = dict(schema, properties={k: schema["properties"][k] for k in perm})
            r2 = system(ctx, s2)
            ok &= _parallel_outcomes(r2, compile_schema(s2)) == ref
        out["permutation_equal"] += ok
        ok = True
        for k in keys:
            s3 = {"type": "object", "properties": {k: schema["properties"][k]}}
            if k in schema.get("required", []):
                s3["required"] = [k]
            r3 = system(ctx, s3)
            got = _parallel_outcomes(r3, compile_schema(s3))
            ok &= all(ref.get(p) == v for p, v in got.items())
        out["split_equal"] += ok
    return out


def oracle_system(records):
    """A system answering each record's gold value (meta: probability 1) —
    the harness's own check; not a baseline."""
    gold = {r["context"]: r for r in records}

    def run(context, schema):
        rec = gold[context]
        plan = compile_schema(schema)
        value = {k: v for k, v in rec["value"].items() if k in schema["properties"]}
        meta = {}
        for f in plan.fields:
            for ptr, _ in concrete(f.path, value):
                if f.mode.startswith("decide."):
                    meta[ptr] = {"mode": f.mode, "probability": 1.0}
                elif f.mode.startswith("extract."):
                    meta[ptr] = {"mode": f.mode, "confidence": 1.0}
        return {"value": value, "meta": meta, "usage": {"prompt_tokens": len(context.split()),
                                                        "generated_tokens": 0}}
    return run

