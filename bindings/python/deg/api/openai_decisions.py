"""POST /v1/decisions: the OpenAI Decisions API on one deg fill (§9.1).

Request shapes follow openai-python's types/decision_create_params.py (model,
input, questions, safety_identifier; prompt_cache_key / prompt_cache_options
accepted and ignored: deg's fill reads the input once per request), responses
its types/decision.py. Errors are 400 {"error": {message, type:
"invalid_request_error", param, code}}; deg never returns a refusal answer.
Extensions: question types "extract" and "generate", request "options".
"""
from .questions import (ApiError, FILL_OPTIONS, MAX_SCORE_LEVELS, VALUE_TYPES, field_results,
                        fill_request, pointer, render_text)

__all__ = ["parse", "response", "error", "fill_error", "options_of"]

_TOP = ("model", "input", "questions", "safety_identifier", "prompt_cache_key",
        "prompt_cache_options", "options")
_Q_KEYS = {
    "predicate": ("type", "name", "instructions"),
    "choice": ("type", "name", "instructions", "choices"),
    "score": ("type", "name", "instructions", "levels"),
    "extract": ("type", "name", "instructions", "value_type", "pattern", "minLength",
                "maxLength"),
    "generate": ("type", "name", "instructions", "pattern", "minLength", "maxLength",
                 "max_tokens"),
}
MAX_QUESTIONS = 400
MAX_CHOICES = 255


def error(message, param=None, code=None, status=400):
    return ApiError(status, {"error": {"message": message, "type": "invalid_request_error",
                                       "param": param, "code": code}})


def _text_parts(parts, param, allow_json=True):
    """Text of a string or a list of input_text / input_json parts."""
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list) or not parts:
        raise error(f"{param} must be a string or a non-empty array of parts", param)
    out = []
    for i, p in enumerate(parts):
        where = f"{param}[{i}]"
        t = p.get("type") if isinstance(p, dict) else None
        if t == "input_text" and isinstance(p.get("text"), str):
            out.append(p["text"])
        elif t == "input_json" and allow_json and "data" in p:
            out.append(render_text(p["data"]))
        elif t == "input_image":
            raise error(f"{where}: input_image is not supported: this model reads text only",
                        where, "unsupported_content")
        else:
            raise error(f"{where}: expected an input_text part with a string 'text'"
                        + (" or an input_json part" if allow_json else ""), where)
    return "\n".join(out)


def _input_text(inp):
    """The context: a string verbatim; messages as their text (one message: its text;
    several: 'role: text' blocks separated by blank lines)."""
    if isinstance(inp, str):
        if not inp:
            raise error("input must not be empty", "input")
        return inp
    if not isinstance(inp, list) or not inp:
        raise error("input must be a string or a non-empty array of messages", "input")
    blocks = []
    for i, m in enumerate(inp):
        where = f"input[{i}]"
        if not isinstance(m, dict) or m.get("role") not in ("user", "developer", "system",
                                                              "assistant"):
            t = m.get("type") if isinstance(m, dict) else None
            raise error(f"{where}: only messages (role user, developer, system, assistant) "
                        f"are supported, got {t or type(m).__name__}", where,
                        "unsupported_content")
        c = m.get("content")
        if m["role"] == "assistant" and isinstance(c, list):
            c = [{"type": "input_text", "text": p.get("text")}
                 if isinstance(p, dict) and p.get("type") == "output_text" else p for p in c]
        blocks.append((m["role"], _text_parts(c, f"{where}.content")))
    if len(blocks) == 1:
        return blocks[0][1]
    return "\n\n".join(f"{r}: {t}" for r, t in blocks)


def _question(q, i, names):
    where = f"questions[{i}]"
    if not isinstance(q, dict):
        raise error(f"{where} must be an object", where)
    t = q.get("type")
    if t not in _Q_KEYS:
        raise error(f"{where}.type must be one of 'predicate', 'choice', 'score' "
                    f"(deg: 'extract', 'generate'), got {t!r}", f"{where}.type")
    for k in q:
        if k not in _Q_KEYS[t]:
            raise error(f"{where}: unknown parameter '{k}' for a {t} question",
                        f"{where}.{k}", "unknown_parameter")
    name = q.get("name")
    if name is not None and not isinstance(name, str):
        raise error(f"{where}.name must be a string", f"{where}.name")
    if name is not None:
        if name in names:
            raise error(f"{where}.name '{name}' is not unique", f"{where}.name")
        names.add(name)
    if "instructions" not in q:
        raise error(f"{where}.instructions is required", f"{where}.instructions",
                    "missing_required_parameter")
    out = {"name": name, "kind": {"predicate": "noul"}.get(t, t),
           "instructions": _text_parts(q["instructions"], f"{where}.instructions")}
    if t == "choice":
        ch = q.get("choices")
        if not isinstance(ch, list) or not 1 <= len(ch) <= MAX_CHOICES:
            raise error(f"{where}.choices must be an array of 1..{MAX_CHOICES} choices",
                        f"{where}.choices")
        seen = set()
        out["options"], out["option_descriptions"] = [], []
        for j, c in enumerate(ch):
            v = c.get("value") if isinstance(c, dict) else None
            if not isinstance(v, (str, bool)) or set(c) - {"value", "description"} or \
                    not isinstance(c.get("description", ""), str):
                raise error(f"{where}.choices[{j}] must be {{value: string | boolean, "
                            "description?: string}", f"{where}.choices[{j}]")
            if (type(v), v) in seen:
                raise error(f"{where}.choices[{j}]: value {v!r} is not unique (values are "
                            "typed: \"true\" and true differ)", f"{where}.choices[{j}]")
            seen.add((type(v), v))
            out["options"].append(v)
            out["option_descriptions"].append(c.get("description") or None)
    elif t == "score":
        lv = q.get("levels")
        if not isinstance(lv, list) or not 1 <= len(lv) <= MAX_SCORE_LEVELS:
            raise error(f"{where}.levels must be an array of 1..{MAX_SCORE_LEVELS} levels",
                        f"{where}.levels")
        out["levels"], out["level_descriptions"] = [], []
        for j, lev in enumerate(lv):
            if not isinstance(lev, dict) or not isinstance(lev.get("label"), str) or \
                    not lev["label"] or set(lev) - {"label", "description"} or \
                    not isinstance(lev.get("description", ""), str):
                raise error(f"{where}.levels[{j}] must be {{label: non-empty string, "
                            "description?: string}", f"{where}.levels[{j}]")
            out["levels"].append(lev["label"])
            out["level_descriptions"].append(lev.get("description") or None)
    elif t in ("extract", "generate"):
        if t == "extract":
            vt = q.get("value_type", "string")
            if vt not in VALUE_TYPES:
                raise error(f"{where}.value_type must be one of {', '.join(VALUE_TYPES)}",
                            f"{where}.value_type")
            out["value_type"] = vt
        for k, ok in (("pattern", lambda v: isinstance(v, str)),
                      ("minLength", lambda v: _nonneg_int(v)),
                      ("maxLength", lambda v: _nonneg_int(v)),
                      ("max_tokens", lambda v: _nonneg_int(v) and v >= 1)):
            if k in q:
                if not ok(q[k]):
                    raise error(f"{where}.{k} has an invalid value {q[k]!r}", f"{where}.{k}")
                out[{"minLength": "min_length", "maxLength": "max_length"}.get(k, k)] = q[k]
    return out


def _nonneg_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _keys(questions):
    """Property keys: the name, else question_<i+1> (made unique against the names)."""
    used = {q["name"] for q in questions if q["name"] is not None}
    for i, q in enumerate(questions):
        k = q["name"]
        if k is None:
            k, n = f"question_{i + 1}", 1
            while k in used:
                n += 1
                k = f"question_{i + 1}_{n}"
            used.add(k)
        q["key"] = k


def options_of(opts, error_fn, param="options"):
    """The decision request's options: only FILL_OPTIONS (values checked by the fill)."""
    if opts is None:
        return None
    if not isinstance(opts, dict):
        raise error_fn(f"{param} must be an object", param)
    for k in opts:
        if k not in FILL_OPTIONS:
            raise error_fn(f"{param}.{k}: unknown option (accepted: {', '.join(FILL_OPTIONS)})",
                           f"{param}.{k}")
    return dict(opts)


def parse(body, accepted_models):
    """Check a decisions request. Returns (questions, fill_request or None)."""
    if not isinstance(body, dict):
        raise error("the request body must be a JSON object")
    for k in body:
        if k not in _TOP:
            raise error(f"Unrecognized request argument supplied: {k}", k, "unknown_parameter")
    for k in ("model", "input", "questions"):
        if k not in body:
            raise error(f"Missing required parameter: '{k}'.", k, "missing_required_parameter")
    model = body["model"]
    if not isinstance(model, str) or model not in accepted_models:
        raise error(f"The model `{model}` does not exist or you do not have access to it "
                    f"(accepted: {', '.join(accepted_models)}).", "model", "model_not_found")
    si = body.get("safety_identifier")
    if si is not None and not isinstance(si, str):
        raise error("safety_identifier must be a string", "safety_identifier")
    context = _input_text(body["input"])
    qs = body["questions"]
    if not isinstance(qs, list) or not 1 <= len(qs) <= MAX_QUESTIONS:
        raise error(f"questions must be an array of 1..{MAX_QUESTIONS} questions", "questions")
    names = set()
    questions = [_question(q, i, names) for i, q in enumerate(qs)]
    _keys(questions)
    options = options_of(body.get("options"), error)
    return questions, fill_request(context, questions, options)


def fill_error(questions, exc):
    """A fill's SchemaError/RequestError as the 400 of this API (param = the question)."""
    errs = getattr(exc, "errors", None) or []
    loc = errs[0].get("loc", "") if errs else ""
    msg = errs[0].get("msg", str(exc)) if errs else str(exc)
    param = None
    for i, q in enumerate(questions):
        if loc.startswith("/schema/properties" + pointer(q["key"])):
            param = f"questions[{i}]"
            break
    if param is None and loc.startswith("/options"):
        param = "options" + loc[len("/options"):].replace("/", ".")
    return error(f"{param + ': ' if param else ''}{msg}", param)


def response(questions, fill_response, model_id):
    """The Decision object: {answers, model, usage} in question order."""
    answers = []
    for q, r in zip(questions, field_results(questions, fill_response)):
        k, name = q["kind"], q["name"]
        if k == "noul":
            a = {"type": "predicate", "name": name, "probability": r["p_true"]}
        elif k == "choice":
            a = {"type": "choice", "name": name, "choice": r["value"],
                 "probabilities": [{"value": v, "probability": p}
                                   for v, p in zip(q["options"], r["probs"])],
                 "confidence": r["confidence"]}
        elif k == "score":
            a = {"type": "score", "name": name, "score": r["score"],
                 "probabilities": [{"value": i, "label": lab, "probability": p}
                                   for i, (lab, p) in enumerate(zip(q["levels"], r["probs"]))],
                 "confidence": r["confidence"]}
        elif k == "extract":
            a = {"type": "extract", "name": name, **r}
        else:
            a = {"type": "generate", "name": name, **r}
        answers.append(a)
    usage = (fill_response or {}).get("usage", {})
    inp, outp = usage.get("prompt_tokens", 0), usage.get("generated_tokens", 0)
    return {"answers": answers, "model": model_id,
            "usage": {"input_tokens": inp,
                      "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
                      "output_tokens": outp,
                      "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": inp + outp}}
