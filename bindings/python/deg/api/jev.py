"""POST /v1/systemone: TypeSafe Jev's System One API on one deg fill (§9.1).

Wire shapes as live Jev (jev-1.13.0): request {state, model, questions: {id:
{type: noul|choice|score, instructions: str|object|array, criteria}}}; noul
criteria {"true": ..., "false": ...} (optional), choice criteria {option:
description|null} (1..255; a list of option names is also accepted), score
criteria [level, ...] (1..10, lowest first). Answers keyed by id in request
order. Errors as live Jev: 400 {"detail": "..."} for limits and unknown models,
400 {"detail": {"error_type": "api_usage_error", "message": "Invalid
request."}} for an unknown question type or top-level field, 422 {"detail":
[{type, loc, msg, input}]} (pydantic v2 shape) for missing fields and empty
questions; unknown question keys are ignored. Probabilities are not rounded.
Extensions: question types "extract" (criteria ignored; value_type, pattern,
minLength, maxLength) and "generate" (pattern, minLength, maxLength,
max_tokens), request "options".
"""
from .openai_decisions import options_of
from .questions import ApiError, MAX_SCORE_LEVELS, VALUE_TYPES, field_results, fill_request, \
    render_text

__all__ = ["parse", "response"]

_TOP = ("state", "model", "questions", "options")
_TYPES = ("noul", "choice", "score", "extract", "generate")
MAX_CHOICES = 255
MAX_LEVELS = min(10, MAX_SCORE_LEVELS)


def _usage_error():
    return ApiError(400, {"detail": {"error_type": "api_usage_error",
                                     "message": "Invalid request."}})


def _detail(msg, status=400):
    return ApiError(status, {"detail": msg})


def _invalid(kind, loc, msg, inp):
    return ApiError(422, {"detail": [{"type": kind, "loc": ["body", *loc], "msg": msg,
                                      "input": inp}]})


def _missing(loc, inp):
    return _invalid("missing", loc, "Field required", inp)


def _question(qid, q):
    if not isinstance(q, dict):
        raise _invalid("model_attributes_type", ["questions", qid],
                       "Input should be a valid dictionary or object to extract fields from", q)
    t = q.get("type")
    if t not in _TYPES:
        raise _usage_error()
    if "instructions" not in q:
        raise _missing(["questions", qid, t, "instructions"], q)
    out = {"key": qid, "name": qid, "kind": t, "instructions": render_text(q["instructions"])}
    crit = q.get("criteria")
    if t == "noul":
        if crit is not None:
            if not isinstance(crit, dict) or any(
                    not isinstance(crit.get(k, ""), (str, type(None))) for k in ("true", "false")):
                raise _invalid("model_type", ["questions", qid, t, "criteria"],
                               "Input should be an object with string 'true' / 'false'", crit)
            out["criteria_true"], out["criteria_false"] = crit.get("true"), crit.get("false")
    elif t == "choice":
        if crit is None:
            raise _missing(["questions", qid, t, "criteria"], q)
        if isinstance(crit, list):
            crit = {str(o): None for o in crit} if all(isinstance(o, str) for o in crit) \
                else None
        if not isinstance(crit, dict) or any(not isinstance(d, (str, type(None)))
                                             for d in crit.values()):
            raise _invalid("dict_type", ["questions", qid, t, "criteria"],
                           "Input should be a valid dictionary", q.get("criteria"))
        if len(crit) > MAX_CHOICES:
            raise _detail(f"Too many choices. Must have at most {MAX_CHOICES} choices.")
        if not crit:
            raise _invalid("too_short", ["questions", qid, t, "criteria"],
                           "Dictionary should have at least 1 item after validation, not 0", {})
        out["options"] = list(crit)
        out["option_descriptions"] = [d or None for d in crit.values()]
    elif t == "score":
        if crit is None:
            raise _missing(["questions", qid, t, "criteria"], q)
        if not isinstance(crit, list) or any(not isinstance(x, str) or not x for x in crit):
            raise _invalid("list_type", ["questions", qid, t, "criteria"],
                           "Input should be a valid list of non-empty strings", crit)
        if len(crit) > MAX_LEVELS:
            raise _detail(f"Too many levels. Must have at most {MAX_LEVELS} levels.")
        if not crit:
            raise _invalid("too_short", ["questions", qid, t, "criteria"],
                           "List should have at least 1 item after validation, not 0", [])
        out["levels"] = list(crit)
        out["level_descriptions"] = [None] * len(crit)
    else:
        if t == "extract":
            vt = q.get("value_type", "string")
            if vt not in VALUE_TYPES:
                raise _invalid("enum", ["questions", qid, t, "value_type"],
                               f"Input should be one of {', '.join(VALUE_TYPES)}", vt)
            out["value_type"] = vt
        for k, nk in (("pattern", "pattern"), ("minLength", "min_length"),
                      ("maxLength", "max_length"), ("max_tokens", "max_tokens")):
            if k in q and (k != "max_tokens" or t == "generate"):
                v = q[k]
                ok = isinstance(v, str) if k == "pattern" else (
                    isinstance(v, int) and not isinstance(v, bool) and v >= (1 if k ==
                                                                             "max_tokens" else 0))
                if not ok:
                    raise _invalid("value_error", ["questions", qid, t, k],
                                   f"Invalid value for {k}", v)
                out[nk] = v
    return out


def parse(body, accepted_models):
    """Check a systemone request. Returns (questions, fill_request or None)."""
    if not isinstance(body, dict):
        raise _invalid("model_attributes_type", [], "Input should be a valid dictionary or "
                       "object to extract fields from", body)
    for k in body:
        if k not in _TOP:
            raise _usage_error()
    for k in ("state", "model", "questions"):
        if k not in body:
            raise _missing([k], body)
    model, qs = body["model"], body["questions"]
    if not isinstance(model, str):
        raise _invalid("string_type", ["model"], "Input should be a valid string", model)
    if not isinstance(qs, dict):
        raise _invalid("dict_type", ["questions"], "Input should be a valid dictionary", qs)
    if not qs:
        raise _invalid("too_short", ["questions"],
                       "Dictionary should have at least 1 item after validation, not 0", qs)
    if model not in accepted_models:
        raise _detail(f"Unknown model: {model}")
    state = body["state"]
    if state is None or state == "" or state == {} or state == []:
        raise _invalid("value_error", ["state"], "Value error, state must not be empty", state)
    questions = [_question(str(qid), q) for qid, q in qs.items()]

    def opt_error(msg, param):
        return _invalid("value_error", param.split("."), msg, body.get("options"))
    options = options_of(body.get("options"), opt_error)
    return questions, fill_request(state, questions, options)


def fill_error(questions, exc):
    """A fill's SchemaError/RequestError as Jev's 422 list."""
    errs = getattr(exc, "errors", None) or [{"loc": "", "msg": str(exc)}]
    return ApiError(422, {"detail": [{"type": "value_error",
                                      "loc": ["body"] + [p for p in e.get("loc", "").split("/")
                                                         if p],
                                      "msg": e.get("msg", ""), "input": None} for e in errs]})


def response(questions, fill_response, model_id):
    """{model, answers: {id: answer}, usage: {input_tokens, output_tokens}}."""
    answers = {}
    for q, r in zip(questions, field_results(questions, fill_response)):
        k = q["kind"]
        if k == "noul":
            a = {"type": "noul", "noul": r["p_true"]}
        elif k == "choice":
            a = {"type": "choice", "choice": r["value"], "confidence": r["confidence"],
                 "probabilities": dict(zip(q["options"], r["probs"]))}
        elif k == "score":
            a = {"type": "score", "score": r["score"], "confidence": r["confidence"],
                 "legend": {str(i): lab for i, lab in enumerate(q["levels"])},
                 "probabilities": {str(i): p for i, p in enumerate(r["probs"])}}
        else:
            a = {"type": k, **r}
        answers[q["key"]] = a
    usage = (fill_response or {}).get("usage", {})
    return {"model": model_id, "answers": answers,
            "usage": {"input_tokens": usage.get("prompt_tokens", 0),
                      "output_tokens": usage.get("generated_tokens", 0)}}
