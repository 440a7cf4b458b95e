"""Questions -> one fill schema, and a fill response -> per-question results (§9.1).

Both decision APIs (OpenAI Decisions, Jev systemone) turn a request into ONE fill:
every question is a property of one object schema (key = question name / id), so
the input is read once, decide/extract questions are independent fields, and
generate questions run last. This module holds that table and the reverse
mapping; decisions.py and systemone.py hold the wire shapes.

A question here is a dict {"key", "kind", "instructions", ...}:
  kind "noul"    + criteria_true / criteria_false (Jev, optional)
  kind "choice"  + options [values], option_descriptions [str | None]
  kind "score"   + levels [label], level_descriptions [str | None]
  kind "extract" + value_type, pattern, min_length, max_length
  kind "generate"+ pattern, min_length, max_length, max_tokens
"""
import json

from ..errors import DegError

__all__ = ["ApiError", "render_text", "build_schema", "fill_request", "field_results", "pointer",
           "VALUE_TYPES", "FILL_OPTIONS", "MAX_SCORE_LEVELS"]

#: extract value_type -> (JSON type, format) (§9.1 table: `format` from value_type).
VALUE_TYPES = {
    "string": ("string", None), "number": ("number", None), "integer": ("integer", None),
    "date": ("string", "date"), "date-time": ("string", "date-time"),
    "email": ("string", "email"), "uri": ("string", "uri"), "uuid": ("string", "uuid"),
}
#: Fill options a decision request may carry (§9.1 "Extensions", §9 array_decode and
#: null_margin "also accepted in the decision APIs' options").
FILL_OPTIONS = ("temperature", "seed", "date_order", "default_offset", "array_decode",
                "null_margin")
#: An integer is a score only when its bounds admit 2..11 values (§3), so a score
#: question has at most 11 levels (1 level is answered without the model).
MAX_SCORE_LEVELS = 11


class ApiError(DegError):
    """An HTTP error with the exact body its API specifies: .http_status and .body
    (the dict the route returns), .headers (extra response headers)."""

    def __init__(self, status, body, headers=None):
        super().__init__(f"HTTP {status}: {json.dumps(body, ensure_ascii=False)[:300]}")
        self.http_status = status
        self.body = body
        self.headers = headers or {}


def render_text(value):
    """A question's instructions or a JSON input part as the model reads it: a string
    verbatim, anything else as deg renders contexts (json.dumps, ', '/': ',
    ensure_ascii=False; §7.1)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def pointer(key):
    """RFC 6901 pointer of a top-level property."""
    return "/" + key.replace("~", "~0").replace("/", "~1")


def _field(q):
    kind, desc = q["kind"], q["instructions"]
    if kind == "noul":
        lines = [desc]
        if q.get("criteria_true"):
            lines.append("Yes means: " + q["criteria_true"])
        if q.get("criteria_false"):
            lines.append("No means: " + q["criteria_false"])
        return {"type": "boolean", "description": "\n".join(lines)}
    if kind == "choice":
        descs = q["option_descriptions"]
        if any(d for d in descs):
            branches = []
            for v, d in zip(q["options"], descs):
                b = {"const": v}
                if d:
                    b["description"] = d
                branches.append(b)
            return {"oneOf": branches, "description": desc}
        return {"enum": list(q["options"]), "description": desc}
    if kind == "score":
        labels = {}
        for i, (lab, d) in enumerate(zip(q["levels"], q["level_descriptions"])):
            labels[str(i)] = f"{lab}: {d}" if d else lab
        return {"type": "integer", "minimum": 0, "maximum": len(q["levels"]) - 1,
                "description": desc, "x-levels": labels}
    if kind == "extract":
        jt, fmt = VALUE_TYPES[q["value_type"]]
        f = {"type": [jt, "null"], "description": desc}
        if fmt:
            f["format"] = fmt
        for k, sk in (("pattern", "pattern"), ("min_length", "minLength"),
                      ("max_length", "maxLength")):
            if q.get(k) is not None:
                f[sk] = q[k]
        return f
    if kind == "generate":
        f = {"type": "string", "x-generate": True, "description": desc}
        for k, sk in (("pattern", "pattern"), ("min_length", "minLength"),
                      ("max_length", "maxLength"), ("max_tokens", "x-max-tokens")):
            if q.get(k) is not None:
                f[sk] = q[k]
        return f
    raise ValueError(f"unknown question kind {kind!r}")


def _model_free(q):
    """A one-option choice or one-level score: answered with probability 1 without
    the model (§9.1; an integer range of one value is not a score field)."""
    return (q["kind"] == "choice" and len(q["options"]) == 1) or \
        (q["kind"] == "score" and len(q["levels"]) == 1)


def build_schema(questions):
    """The one fill schema of a request's questions (None when every question is
    model-free). Every property is required: a decide question always has a value,
    an extract question is nullable (a miss is null), a generate one always runs."""
    props = {}
    for q in questions:
        if not _model_free(q):
            props[q["key"]] = _field(q)
    if not props:
        return None
    return {"type": "object", "properties": props, "required": list(props)}


def fill_request(context, questions, options):
    """The fill request {context, schema[, options]} of a decision request, or None
    when every question is answered without the model."""
    schema = build_schema(questions)
    if schema is None:
        return None
    req = {"context": context, "schema": schema}
    if options is not None:
        req["options"] = options
    return req


def field_results(questions, response):
    """Per question (in order) a dict of what the fill decided for it:
      noul: p_true; choice: value, probs [p per option], confidence;
      score: score (expected level index), probs, confidence;
      extract: value, span, confidence, null_reason?; generate: text, output_tokens.
    response: the §8 fill response (None when build_schema gave None)."""
    out = []
    for q in questions:
        kind = q["kind"]
        if _model_free(q):
            out.append({"value": q["options"][0], "probs": [1.0], "confidence": 1.0}
                       if kind == "choice" else
                       {"score": 0.0, "probs": [1.0], "confidence": 1.0})
            continue
        value = response["value"].get(q["key"])
        meta = response["meta"].get(pointer(q["key"]), {})
        if kind == "noul":
            out.append({"p_true": meta["probability"]})
        elif kind in ("choice", "score"):
            r = {"probs": list(meta["probabilities"]), "confidence": meta["confidence"]}
            if kind == "choice":
                r["value"] = value
            else:
                r["score"] = meta["expected"]
            out.append(r)
        elif kind == "extract":
            r = {"value": value, "span": meta.get("span"),
                 "confidence": meta.get("confidence")}
            if "null_reason" in meta:
                r["null_reason"] = meta["null_reason"]
            out.append(r)
        else:
            out.append({"text": value, "output_tokens": meta.get("generated_tokens", 0)})
    return out
