"""OpenAI chat completions on deg: request checks and the response/SSE chunk shapes
(openai-python types/chat/chat_completion.py, chat_completion_chunk.py).

Supported: model, messages (system/developer/user/assistant; content a string or
text parts), max_tokens / max_completion_tokens, temperature (default 1 as in the
OpenAI API; 0 = greedy), top_p, seed, stop (a string or up to 4), stream,
stream_options.include_usage, n = 1, user. Other parameters are refused with 400
unless given their no-op default (presence/frequency_penalty 0, logprobs false).
"""
import os
import time
import uuid

from ..api.questions import ApiError

__all__ = ["parse", "completion", "chunk", "openai_error"]

_KNOWN = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p",
          "seed", "stop", "stream", "stream_options", "n", "user", "presence_penalty",
          "frequency_penalty", "logprobs", "parallel_tool_calls", "store", "metadata"}
_NOOP = {"presence_penalty": (0, 0.0, None), "frequency_penalty": (0, 0.0, None),
         "logprobs": (False, None), "parallel_tool_calls": (None, True, False),
         "store": (None, False), "metadata": (None,)}
MAX_STOPS = 4


def openai_error(message, param=None, code=None, status=400, etype="invalid_request_error",
                 **extra):
    """The error body of every deg route but Jev's (openai-python _exceptions.py reads
    body["error"]); extra: added fields (deg_error, errors on /v1/fill)."""
    return ApiError(status, {"error": {"message": message, "type": etype, "param": param,
                                       "code": code, **extra}})


def _num(body, k, lo, hi, lo_open=False):
    v = body.get(k)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
            (lo < v if lo_open else lo <= v) and v <= hi):
        raise openai_error(f"{k} must be a number in {'(' if lo_open else '['}{lo}, {hi}], "
                           f"got {v!r}", k, "invalid_value")
    return float(v)


def _content(c, where):
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        out = []
        for i, p in enumerate(c):
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str):
                out.append(p["text"])
            else:
                raise openai_error(f"{where}[{i}]: only text parts are supported (this model "
                                   "reads text only)", f"{where}[{i}]", "unsupported_content")
        return "".join(out)
    raise openai_error(f"{where} must be a string or an array of text parts", where)


def parse(body, targets):
    """Check a chat request. targets: {model name: chat target}. Returns a dict
    {target, model, messages, max_tokens, temperature, top_p, seed, stops, stream,
    include_usage}."""
    if not isinstance(body, dict):
        raise openai_error("the request body must be a JSON object")
    for k in body:
        if k not in _KNOWN:
            raise openai_error(f"Unrecognized request argument supplied: {k}", k,
                               "unknown_parameter")
        if k in _NOOP and body[k] not in _NOOP[k]:
            raise openai_error(f"{k}={body[k]!r} is not supported by this server", k,
                               "unsupported_value")
    for k in ("model", "messages"):
        if k not in body:
            raise openai_error(f"Missing required parameter: '{k}'.", k,
                               "missing_required_parameter")
    model = body["model"]
    if not isinstance(model, str) or model not in targets:
        raise openai_error(f"The model `{model}` does not exist or you do not have access to "
                           f"it (served: {', '.join(targets)}).", "model", "model_not_found")
    msgs = body["messages"]
    if not isinstance(msgs, list) or not msgs:
        raise openai_error("messages must be a non-empty array", "messages")
    messages = []
    for i, m in enumerate(msgs):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("system", "developer", "user", "assistant"):
            raise openai_error(f"messages[{i}].role must be system, developer, user or "
                               f"assistant (tools are not supported), got {role!r}",
                               f"messages[{i}].role")
        if "content" not in m or m["content"] is None:
            raise openai_error(f"messages[{i}].content is required", f"messages[{i}].content")
        messages.append({"role": "system" if role == "developer" else role,
                         "content": _content(m["content"], f"messages[{i}].content")})
    mt = body.get("max_completion_tokens", body.get("max_tokens"))
    if mt is not None and (isinstance(mt, bool) or not isinstance(mt, int) or mt < 1):
        raise openai_error(f"max_tokens must be an integer >= 1, got {mt!r}", "max_tokens",
                           "invalid_value")
    temperature = _num(body, "temperature", 0, 2)
    top_p = _num(body, "top_p", 0, 1, lo_open=True)
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise openai_error("seed must be an integer", "seed", "invalid_value")
    n = body.get("n", 1)
    if n not in (1, None):
        raise openai_error("n must be 1 (one choice per request)", "n", "unsupported_value")
    stop = body.get("stop")
    stops = [stop] if isinstance(stop, str) else (stop or [])
    if not isinstance(stops, list) or len(stops) > MAX_STOPS or \
            any(not isinstance(s, str) or not s for s in stops):
        raise openai_error(f"stop must be a non-empty string or up to {MAX_STOPS} of them",
                           "stop", "invalid_value")
    so = body.get("stream_options") or {}
    if not isinstance(so, dict) or set(so) - {"include_usage", "include_obfuscation"}:
        raise openai_error("stream_options accepts include_usage", "stream_options")
    return {"target": targets[model], "model": model, "messages": messages, "max_tokens": mt,
            "temperature": 1.0 if temperature is None else temperature,
            "top_p": 1.0 if top_p is None else top_p,
            "seed": seed if seed is not None else int.from_bytes(os.urandom(8), "little"),
            "stops": stops, "stream": bool(body.get("stream")),
            "include_usage": bool(so.get("include_usage"))}


def new_id():
    return "chatcmpl-" + uuid.uuid4().hex


def usage(done):
    p, c = done["prompt_tokens"], done["completion_tokens"]
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c,
            "prompt_tokens_details": {"cached_tokens": done["cached_tokens"]},
            "completion_tokens_details": {"reasoning_tokens": 0}}


def completion(cid, model, text, done, fleet=None):
    """The chat.completion object; fleet ({selected, selection}, --fleet targets):
    the documents behind the answer, as the extra field "fleet"."""
    c = {"id": cid, "object": "chat.completion", "created": int(time.time()), "model": model,
         "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                      "finish_reason": done["finish_reason"], "logprobs": None}],
         "usage": usage(done), "system_fingerprint": None}
    if fleet is not None:
        c["fleet"] = fleet
    return c


def chunk(cid, model, delta=None, finish_reason=None, usage_=None, fleet=None):
    c = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
         "model": model, "system_fingerprint": None,
         "choices": [] if usage_ is not None else
         [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason, "logprobs": None}]}
    if usage_ is not None:
        c["usage"] = usage_
    if fleet is not None:
        c["fleet"] = fleet
    return c
