"""deg.fill: schema fill with a deg checkpoint (deg contract §7-§10, §12).

    ckpt = deg.load("path/to/checkpoint")          # deg.json + heads.safetensors
    resp = deg.fill("Order 4711 ...", {"type": "object", ...}, model=ckpt)
    resp = deg.fill("Order 4711 ...", schema)      # the shipped checkpoint (SmolLM2-135M)
    resp["value"], resp["meta"], resp["usage"], resp["plan"]

The work is done by libdeg (deg_fill / deg_fill_many); this module converts
types and raises typed errors: RequestError / SchemaError (with .errors, the
422-style list of {"loc", "msg"}), FillError (with .errors: the reasons or
validator violations), MismatchError (checkpoint made for another backbone).
"""
from __future__ import annotations

import json
import os
import threading
from os import fspath
from typing import Any, Dict, List, Mapping, NoReturn, Optional, Sequence, Tuple, Union

from ._types import JSONValue, StrPath

from ._native import check, ffi, lib, path_arg
from .errors import ArgumentError, FillError, RequestError, SchemaError
from .limits import limits_of, run_limits
from .schema import schema_value
from .limits import CancelToken
from .model import Model, _Handle

__all__ = ["Checkpoint", "load", "ckpt_backbone_path", "create_random_checkpoint", "fill",
           "fill_many",
           "default_checkpoint_path", "DEFAULT_CHECKPOINT"]

_OK = 0

Response = Dict[str, Any]
"""A §8 fill response: {"model", "value", "meta", "usage", "plan"}."""
Job = Union[bytes, bytearray, Mapping[str, Any]]
"""A fill_many job: a request's JSON text, or {"context", "schema"[, "options",
"model", "cancel"]}, or {"request": bytes[, "cancel"]}."""

# The shipped checkpoint (trained heads for SmolLM2-135M-Instruct Q4_1, issue 6):
# checkpoints/<name>/ in the source tree, deg/checkpoints/<name>/ in the wheel.
DEFAULT_CHECKPOINT = "smollm2-135m-v13"


def default_checkpoint_path() -> str:
    """The checkpoint used when none is given: $DEG_CHECKPOINT, else the shipped one
    inside the installed package, else the source tree's checkpoints/ directory.
    Its backbone resolves by file name from ${DEG_CACHE:-~/.cache/deg}/models
    (`deg fetch-model` puts it there)."""
    env = os.environ.get("DEG_CHECKPOINT")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for c in (os.path.join(here, "checkpoints", DEFAULT_CHECKPOINT),
              os.path.join(here, "..", "..", "..", "checkpoints", DEFAULT_CHECKPOINT)):
        if os.path.isfile(os.path.join(c, "deg.json")):
            return os.path.normpath(c)
    raise ArgumentError(f"no checkpoint given and the shipped checkpoint "
                        f"'{DEFAULT_CHECKPOINT}' is not installed; pass model=<checkpoint "
                        "directory> or set DEG_CHECKPOINT")


_default: Optional[Checkpoint] = None
_default_lock = threading.Lock()


def _default_checkpoint() -> Checkpoint:
    global _default
    if _default is None or _default.closed:
        _default = load(default_checkpoint_path())
    return _default


def _take(ptr: Any) -> Optional[str]:
    if ptr[0] == ffi.NULL:
        return None
    try:
        return ffi.string(ptr[0]).decode("utf-8")
    finally:
        lib.deg_free(ptr[0])


def _raise(status: int, errors: List[Dict[str, Any]], message: str) -> NoReturn:
    for cls in (SchemaError, RequestError, FillError):
        if status == cls.status:
            if cls is SchemaError:
                raise SchemaError(message, status, errors=errors)
            e = cls(message, status)
            e.errors = errors
            raise e
    from .errors import raise_for_status
    raise_for_status(status, message)
    raise AssertionError("raise_for_status returned")  # pragma: no cover


class Checkpoint(_Handle):
    """A loaded deg checkpoint. close() or `with` frees it.

    model: a deg.Model already loaded (the checkpoint runs over it and never
    frees it; closing the model first closes the checkpoint), so one process
    holds one copy of the weights for any number of checkpoints and
    cartridges. None: the checkpoint loads and owns its backbone (model_path,
    else resolved as deg.ckpt_backbone_path). null_margin: the default of a
    request's options.null_margin when that is null (a server's
    --null-margin; None = the checkpoint's deg.json "null_margin", else 0).
    fork_budget: bytes per fork batch (None = 256 MiB).
    """

    _free = "deg_ckpt_free"

    def __init__(self, path: StrPath, model_path: Optional[StrPath] = None, debug: bool = False,
                 model: Optional[Model] = None, null_margin: Optional[float] = None,
                 fork_budget: Optional[int] = None) -> None:
        p = ffi.new("deg_ckpt_params *", lib.deg_ckpt_default_params())
        keep: List[Any] = []
        if model is not None:
            if not isinstance(model, Model):
                raise ArgumentError(f"model must be a deg.Model, got {type(model).__name__}")
            if model_path is not None:
                raise ArgumentError("give model or model_path, not both")
            p.model = model._live()
        elif model_path is not None:
            keep.append(ffi.new("char[]", path_arg(model_path)))
            p.model_path = keep[-1]
        if null_margin is not None:
            p.has_null_margin, p.null_margin = 1, float(null_margin)
        if fork_budget is not None:
            if isinstance(fork_budget, bool) or not isinstance(fork_budget, int) or fork_budget < 0:
                raise ArgumentError(f"fork_budget must be an integer >= 1 MiB, got {fork_budget!r}")
            p.fork_budget_bytes = fork_budget
        out = ffi.new("deg_ckpt **")
        check(lib.deg_ckpt_open(path_arg(path), p, out))
        _Handle.__init__(self, out[0], model)
        self.path = fspath(path)
        self.model = model
        if debug:
            check(lib.deg_ckpt_set_debug(self._ptr, 1))

    def set_fork_budget(self, nbytes: int) -> None:
        """Memory budget of one fork batch (bytes, >= 1 MiB)."""
        with self._use() as _p:
            check(lib.deg_ckpt_set_fork_budget(_p, int(nbytes)))

    def fill(self, context: JSONValue, schema: JSONValue, model: str = "deg-latest",
             options: Optional[Mapping[str, Any]] = None,
             cancel: Optional[CancelToken] = None,
         limits: Optional[Mapping[str, int]] = None) -> Response:
        return fill(context, schema, model=self, options=options, model_name=model,
                    cancel=cancel, limits=limits)

    def save(self, directory: StrPath, extra: Optional[Mapping[str, Any]] = None,
             backbone_path: bool = True) -> None:
        """Save this checkpoint (deg.json, heads.safetensors, its calibration and
        LoRA adapters) into `directory` (deg_ckpt_save). A save killed at any
        point leaves the previous checkpoint loadable by deg, never a mix of
        two saves; until deg's next save or load repairs the directory (and
        removes the temporaries), its raw files can be of two saves (the
        previous heads in heads.safetensors.prev), so read it through deg. extra: keys added to deg.json
        (e.g. {"training": {...}}; deg's own keys raise ArgumentError).
        backbone_path=False leaves the backbone's path out of deg.json (it is
        then resolved by file name, as for a shipped checkpoint)."""
        ex = json.dumps(extra).encode() if extra is not None else ffi.NULL
        flags = 0 if backbone_path else lib.DEG_SAVE_NO_BACKBONE_PATH
        with self._use() as p:
            check(lib.deg_ckpt_save(p, path_arg(directory), ex, flags))


def load(checkpoint: Optional[StrPath] = None, model_path: Optional[StrPath] = None,
         debug: bool = False, model: Optional[Model] = None,
         null_margin: Optional[float] = None) -> Checkpoint:
    """Load a checkpoint directory (None = the shipped one, default_checkpoint_path()).
    model_path: the backbone file/directory (default: the path recorded in
    deg.json, next to the checkpoint, or the deg model cache); or model: an
    already loaded deg.Model to run over (shared, not copied). A backbone whose
    SHA-256 differs raises MismatchError. null_margin: see Checkpoint."""
    if checkpoint is None:
        checkpoint = default_checkpoint_path()
    return Checkpoint(checkpoint, model_path=model_path, debug=debug, model=model,
                      null_margin=null_margin)


def ckpt_backbone_path(checkpoint: Optional[StrPath] = None) -> Optional[str]:
    """The backbone path a checkpoint directory resolves to without a model path
    (recorded path, next to the checkpoint, or the deg model cache); not hashed.
    None = the shipped checkpoint. Raises DegIOError when it is not found."""
    if checkpoint is None:
        checkpoint = default_checkpoint_path()
    out = ffi.new("char **")
    check(lib.deg_ckpt_backbone_path(path_arg(checkpoint), out))
    return _take(out)


def create_random_checkpoint(model_path: StrPath, directory: StrPath, seed: int = 0,
                             array_mode: str = "index",
                             anchor_min_tokens: int = 0) -> Union[str, bytes]:
    """Write a fresh checkpoint (random heads) for the backbone at model_path.
    array_mode "index" or "anchor" (§12.6) and anchor_min_tokens go to deg.json."""
    if array_mode not in ("index", "anchor"):
        raise ArgumentError('array_mode must be "index" or "anchor"')
    if not isinstance(anchor_min_tokens, int) or anchor_min_tokens < 0:
        raise ArgumentError("anchor_min_tokens must be an integer >= 0")
    check(lib.deg_ckpt_create_random(path_arg(model_path), int(seed),
                                     path_arg(directory)))
    if array_mode != "index" or anchor_min_tokens:
        path = os.path.join(os.fsdecode(directory), "deg.json")
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
        meta["array_mode"], meta["anchor_min_tokens"] = array_mode, anchor_min_tokens
        tmp = f"{path}.tmp.{os.getpid()}"  # whole or not at all (a reader never sees half)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    return fspath(directory)


def _request(context: JSONValue, schema: JSONValue, options: Optional[Mapping[str, Any]],
             model_name: Optional[str]) -> bytes:
    req: Dict[str, Any] = {"context": context, "schema": schema_value(schema)}
    if model_name is not None:
        req["model"] = model_name
    if options is not None:
        req["options"] = options
    try:
        return json.dumps(req, ensure_ascii=False, allow_nan=False).encode("utf-8",
                                                                           "surrogatepass")
    except (TypeError, ValueError) as e:
        raise RequestError(f"request is not JSON: {e}") from None


def _ckpt(model: Union[Checkpoint, StrPath]) -> Tuple[Checkpoint, bool]:
    if isinstance(model, Checkpoint):
        return model, False
    return load(model), True


def fill(context: JSONValue, schema: JSONValue,
         model: Union[Checkpoint, StrPath, None] = None,
         options: Optional[Mapping[str, Any]] = None, model_name: Optional[str] = "deg-latest",
         cancel: Optional[CancelToken] = None,
         limits: Optional[Mapping[str, int]] = None) -> Response:
    """Fill `schema` from `context` (str, or a JSON object/array rendered as
    json.dumps does). model: a Checkpoint (deg.load) or a checkpoint path.
    Returns the §8 response dict {"model", "value", "meta", "usage", "plan"}.
    model None = the shipped checkpoint (default_checkpoint_path()), loaded once
    per process.
    Work limits (LimitError when reached): limits = {"deadline_ms",
    "max_fields", "max_fork_tokens"}, each None/absent = libdeg's default
    (deg.limits.DEFAULT_DEADLINE_MS = 10 minutes, DEFAULT_MAX_FIELDS,
    DEFAULT_MAX_FORK_TOKENS), 0 = no limit, n >= 1 = n (e.g. limits=
    {"deadline_ms": 0} for a fill that may run longer than 10 minutes); the
    request options of the same names can only
    tighten them. cancel = a deg.CancelToken (CancelledError once another
    thread calls its cancel())."""
    if model is None:
        with _default_lock:
            return fill(context, schema, model=_default_checkpoint(), options=options,
                        model_name=model_name, cancel=cancel, limits=limits)
    ck, owned = _ckpt(model)
    try:
        text = _request(context, schema, options, model_name)
        resp = ffi.new("char **")
        errs = ffi.new("char **")
        lim = run_limits(cancel, **limits_of(limits))
        with ck._use() as ptr:
            status = lib.deg_fill_ex(ptr, text, len(text), lim, resp, errs)
        r, e = _take(resp), _take(errs)
        if status != _OK:
            _raise(status, json.loads(e) if e else [],
                   ffi.string(lib.deg_errmsg()).decode("utf-8", "replace"))
        assert r is not None  # DEG_OK always carries the response
        return json.loads(r)
    finally:
        if owned:
            ck.close()


def _job_text(j: Job) -> bytes:
    if isinstance(j, (bytes, bytearray)):
        return bytes(j)
    if "request" in j:
        return bytes(j["request"])
    return _request(j["context"], j["schema"], j.get("options"), j.get("model", "deg-latest"))


def fill_many(jobs: Sequence[Job], model: Union[Checkpoint, StrPath, None] = None
              ) -> List[Union[Response, Exception]]:
    """Fill several requests with their fork rows in the same batches. jobs:
    dicts {"context", "schema"[, "options", "model", "cancel", "limits"]} ("cancel":
    a deg.CancelToken for that job alone; "limits": as deg.fill's; the default
    deadline is per job: n jobs left at it get n x 10 minutes), a request's JSON
    text as bytes, or {"request": bytes[, "cancel", "limits"]} (bytes are checked whole by
    libdeg: missing or unknown fields are RequestErrors). Returns a list with, per job, the response
    dict or the exception it raised (not raised)."""
    if model is None:
        with _default_lock:
            return fill_many(jobs, model=_default_checkpoint())
    ck, owned = _ckpt(model)
    try:
        texts = [_job_text(j) for j in jobs]
        n = len(texts)
        if n == 0:
            return []
        bufs = [ffi.new("char[]", t) for t in texts]
        reqs = ffi.new("const char *[]", bufs)
        lens = ffi.new("size_t[]", [len(t) for t in texts])
        resps = ffi.new("char *[]", n)
        errs = ffi.new("char *[]", n)
        sts = ffi.new("deg_status[]", n)
        lims = ffi.new("deg_run_limits[]", n)
        for i, j in enumerate(jobs):
            d = j if isinstance(j, dict) else {}
            lims[i] = run_limits(d.get("cancel"), **limits_of(d.get("limits")))[0]
        with ck._use() as ptr:
            status = lib.deg_fill_many_ex(ptr, n, reqs, lens, lims, resps, errs, sts)
        msg = ffi.string(lib.deg_errmsg()).decode("utf-8", "replace")
        out: List[Union[Response, Exception]] = []
        for i in range(n):
            r = _take(ffi.addressof(resps, i))
            e = _take(ffi.addressof(errs, i))
            if sts[i] == _OK:
                assert r is not None
                out.append(json.loads(r))
            else:
                errors = json.loads(e) if e else []
                m = errors[0]["msg"] if errors and "msg" in errors[0] else msg
                try:
                    _raise(sts[i], errors, m)
                except Exception as exc:  # noqa: BLE001 - returned per job
                    out.append(exc)
        if status != _OK and all(not isinstance(o, Exception) for o in out):
            check(status)
        return out
    finally:
        if owned:
            ck.close()
