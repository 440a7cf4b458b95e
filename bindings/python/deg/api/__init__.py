"""deg.api: the decision APIs of the deg contract §9.1 (OpenAI Decisions, Jev
systemone), each request answered by ONE deg fill. Used by deg.server and
usable in-process:

    ck = deg.load()
    deg.api.decisions({"model": "gpt-6-luna", "input": "...", "questions": [...]}, ck)
    deg.api.systemone({"model": "jev-latest", "state": "...", "questions": {...}}, ck)

Errors raise ApiError(status, body) with the exact body the API specifies.
"""
import os

from ..errors import (ArgumentError, FillError, LimitError, RangeError, RequestError,
                      SchemaError, UnsupportedError, Utf8Error)
from . import openai_decisions as _decisions
from . import jev as _systemone
from .questions import ApiError  # noqa: F401

__all__ = ["ApiError", "ModelNames", "decisions", "systemone", "run"]

#: deg errors a request's content causes: answered as the API's invalid-request error.
# LimitError: the request's own options (deadline_ms, max_fields, max_fork_tokens) stopped it.
INPUT_ERRORS = (Utf8Error, UnsupportedError, RangeError, ArgumentError, LimitError)

#: Names existing clients send (§9.1): OpenAI Decisions, and Jev's aliases.
OPENAI_DECISION_MODELS = ("gpt-6-luna",)
JEV_MODELS = ("jev-latest", "jev-preview", "clef-flash")


class ModelNames:
    """The model id of a checkpoint ("deg-" + its directory name) and the names
    each route accepts: deg aliases (the id, "deg", "deg-latest") plus the
    external names of §9.1. Responses carry the id."""

    def __init__(self, checkpoint_path):
        base = os.path.basename(os.path.normpath(str(checkpoint_path)))
        self.id = base if base.startswith("deg") else f"deg-{base}"
        self.aliases = tuple(dict.fromkeys((self.id, "deg-latest", "deg")))
        self.decisions = self.aliases + OPENAI_DECISION_MODELS
        self.systemone = self.aliases + JEV_MODELS


def run(api, body, fill, model_id, accepted):
    """One decision request in-process: api = deg.api.decisions / .systemone module,
    fill(request dict) -> §8 response (raises deg errors)."""
    questions, req = api.parse(body, accepted)
    resp = None
    if req is not None:
        req["model"] = model_id
        try:
            resp = fill(req)
        except (SchemaError, RequestError) as e:
            raise api.fill_error(questions, e) from None
        except FillError as e:
            raise fill_failed(api, e) from None
        except INPUT_ERRORS as e:  # the content itself (a byte without a token, ...)
            raise api.fill_error(questions, e) from None
    return api.response(questions, resp, model_id)


def fill_failed(api, exc):
    """A FillError (no valid value could be produced) as a 500 of the API's shape."""
    if api is _decisions:
        return ApiError(500, {"error": {"message": f"fill failed: {exc}", "type": "server_error",
                                        "param": None, "code": "fill_error"}})
    return ApiError(500, {"detail": f"fill failed: {exc}"})


def _fill_fn(checkpoint):
    from ..fill import fill as _fill

    def f(req):  # checkpoint None: deg.fill's shipped default (loaded once, locked)
        return _fill(req["context"], req["schema"], model=checkpoint,
                     options=req.get("options"), model_name=req.get("model", "deg-latest"))
    return f


def _names(checkpoint):
    from ..fill import default_checkpoint_path
    return ModelNames(checkpoint.path if checkpoint is not None else default_checkpoint_path())


def decisions(body, checkpoint=None):
    """POST /v1/decisions in-process (checkpoint: a deg.Checkpoint; None = the shipped one).
    Returns the Decision dict; raises ApiError with the route's status and body."""
    names = _names(checkpoint)
    return run(_decisions, body, _fill_fn(checkpoint), names.id, names.decisions)


def systemone(body, checkpoint=None):
    """POST /v1/systemone in-process (checkpoint: a deg.Checkpoint; None = the shipped one).
    Returns the Jev response dict; raises ApiError with the route's status and body."""
    names = _names(checkpoint)
    return run(_systemone, body, _fill_fn(checkpoint), names.id, names.systemone)
