"""Schema compiler, fill plan, context rendering and request checks (deg contract §3-§9).

    plan = deg.compile_schema({"type": "object", "properties": {...}})
    for f in plan.fields: print(f.pointer, f.mode, f.options or f.levels)

compile_schema is pure: the same schema always gives the same plan and fingerprints,
and the input is never modified. An invalid schema raises deg.SchemaError whose
`.errors` lists every problem as {"loc": <JSON pointer into the schema>, "msg": ...}.
The work is done by libdeg (deg_plan_compile); this module only converts types.
"""
from __future__ import annotations

import json
import math
from typing import Any, Dict, Iterator, List, NoReturn, Optional, Tuple

from ._types import JSONValue

from ._native import check, ffi, lib
from .errors import RequestError, SchemaError

__all__ = ["FieldPlan", "ArrayPlan", "FillPlan", "compile_schema", "render_context",
           "parse_options", "parse_request", "Request"]


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


class _View:
    """Read-only attribute view over one dict of the plan's JSON form."""
    __slots__ = ("_d",)
    _tuples: Tuple[str, ...] = ()

    def __init__(self, d: Dict[str, Any]) -> None:
        object.__setattr__(self, "_d", d)

    def __getattr__(self, name: str) -> Any:
        d = object.__getattribute__(self, "_d")
        if name not in d:
            raise AttributeError(name)
        v = d[name]
        if name in self._tuples:
            return _freeze(v)
        if isinstance(v, dict):
            return dict(v)  # a copy: the view stays read-only
        return v

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __dir__(self) -> List[str]:
        return sorted(set(object.__getattribute__(self, "_d")) | {"to_dict"})

    def to_dict(self) -> Dict[str, Any]:
        """The attributes as a new dict (JSON types: lists, not tuples)."""
        return json.loads(json.dumps(object.__getattribute__(self, "_d")))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _View) and type(self) is type(other) and \
            self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.fingerprint)


class FieldPlan(_View):
    """One leaf: path (tuple; "*" = each item), pointer, mode ("decide.choice",
    "decide.score", "decide.noul", "extract.number", "extract.date", "extract.span",
    "generate"), type, options / option_descriptions (choice), levels / level_labels
    (score), null_outcome, format, constraints, required, nullable, on_null
    ("null" | "omit" | "forbid"), title, description, max_tokens (x-max-tokens or
    None), array (index of the innermost enclosing array or None), schema_loc and
    fingerprint (sha256 hex of the leaf's canonical spec)."""
    __slots__ = ()
    _tuples = ("path", "options", "option_descriptions", "levels", "level_labels")

    def __repr__(self) -> str:
        return f"FieldPlan({self.pointer!r}, {self.mode!r})"


class ArrayPlan(_View):
    """One array node: path, pointer, min_items, max_items (None = no maxItems),
    unique_items, required, generate, title, description, parent_array, first_field and
    n_fields (its item leaves are fields[first_field:first_field + n_fields]),
    fingerprint (its count decision's canonical spec)."""
    __slots__ = ()
    _tuples = ("path",)

    def __repr__(self) -> str:
        return f"ArrayPlan({self.pointer!r})"


class FillPlan:
    """The compiled schema (read-only): .fields, .arrays, .objects, .fingerprint."""
    __slots__ = ("_d", "fields", "arrays", "objects")

    _d: Dict[str, Any]
    fields: Tuple[FieldPlan, ...]
    arrays: Tuple[ArrayPlan, ...]
    objects: Tuple[_View, ...]

    def __init__(self, d: Dict[str, Any]) -> None:
        object.__setattr__(self, "_d", d)
        object.__setattr__(self, "fields", tuple(FieldPlan(f) for f in d["fields"]))
        object.__setattr__(self, "arrays", tuple(ArrayPlan(a) for a in d["arrays"]))
        object.__setattr__(self, "objects", tuple(_View(o) for o in d["objects"]))

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError("FillPlan is read-only")

    @property
    def fingerprint(self) -> str:
        """FillPlan.fingerprint (§6): sha256 hex over the set of parallel-phase leaf
        fingerprints and the ordered list of generate fingerprints."""
        return self._d["fingerprint"]

    def field(self, pointer: str) -> FieldPlan:
        """The leaf whose display pointer is `pointer` ("/a/*/b")."""
        for f in self.fields:
            if f.pointer == pointer:
                return f
        raise KeyError(pointer)

    def to_dict(self) -> Dict[str, Any]:
        return json.loads(json.dumps(self._d))

    def __len__(self) -> int:
        return len(self.fields)

    def __iter__(self) -> Iterator[FieldPlan]:
        return iter(self.fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FillPlan) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        return f"FillPlan({len(self.fields)} fields, fingerprint={self.fingerprint[:12]}...)"


def _text(value: Any, what: str) -> bytes:
    """JSON text (bytes) of a dict/list value, or the str/bytes as given."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8",
                                                                             "surrogatepass")
    except (TypeError, ValueError) as e:
        raise SchemaError(f"{what} is not JSON: {e}", errors=[{"loc": "", "msg": str(e)}]) \
            if what == "schema" else RequestError(f"{what} is not JSON: {e}")


def schema_value(schema: JSONValue) -> JSONValue:
    """The one rule for schema arguments (compile_schema, fill, fill_many,
    validate, assemble_response): a JSON Schema as a Python value (dict or
    bool) or as its JSON text (str or bytes). Returns the Python value;
    SchemaError when the text is not JSON (line and column)."""
    if not isinstance(schema, (str, bytes, bytearray)):
        return schema
    try:
        return json.loads(schema)
    except ValueError as e:
        msg = f"schema text is not JSON: {e}"
        raise SchemaError(msg, errors=[{"loc": "", "msg": msg}]) from None


def _take_errors(errs_ptr: Any) -> List[Dict[str, Any]]:
    if errs_ptr[0] == ffi.NULL:
        return []
    try:
        return json.loads(ffi.string(errs_ptr[0]).decode("utf-8"))
    finally:
        lib.deg_free(errs_ptr[0])


def _errmsg() -> str:
    return ffi.string(lib.deg_errmsg()).decode("utf-8", "replace")


def _raise_listed(status: int, errors: List[Dict[str, Any]]) -> NoReturn:
    msg = _errmsg()
    if status == SchemaError.status:
        raise SchemaError(msg, status, errors=errors)
    if status == RequestError.status:
        e = RequestError(msg, status)
        e.errors = errors
        raise e
    check(status)
    raise AssertionError(f"status {status} is not an error")  # pragma: no cover


def _plan_compile(schema: JSONValue) -> Any:
    """deg_plan_compile of a JSON Schema (dict, or JSON text as str/bytes): the native
    plan (a cdata deg_plan *; the caller frees it with lib.deg_plan_free). Raises
    SchemaError (with .errors) when deg cannot fill it (§5)."""
    text = _text(schema, "schema")
    out = ffi.new("deg_plan **")
    errs = ffi.new("char **")
    status = lib.deg_plan_compile(text, len(text), out, errs)
    errors = _take_errors(errs)
    if status != 0:
        _raise_listed(status, errors)
    return out[0]


def compile_schema(schema: JSONValue) -> FillPlan:
    """Compile a JSON Schema (dict, or JSON text as str/bytes) into a FillPlan.
    Raises SchemaError (with .errors) when deg cannot fill it (§5)."""
    plan = _plan_compile(schema)
    try:
        js = ffi.new("char **")
        check(lib.deg_plan_to_json(plan, js))
        try:
            d = json.loads(ffi.string(js[0]).decode("utf-8"))
        finally:
            lib.deg_free(js[0])
    finally:
        lib.deg_plan_free(plan)
    return FillPlan(d)


def render_context(context: JSONValue) -> str:
    """The context as the model reads it (§7.1): a str verbatim; any other JSON value
    as json.dumps(value, ensure_ascii=False) writes it (rendered by libdeg)."""
    if isinstance(context, str):
        text = json.dumps(context, ensure_ascii=False).encode("utf-8", "surrogatepass")
    else:
        if isinstance(context, float) and not math.isfinite(context):
            raise RequestError("context: NaN/Infinity are not JSON")
        text = _text(context, "context")
    out = ffi.new("char **")
    n = ffi.new("size_t *")
    check(lib.deg_context_render(text, len(text), out, n))
    try:
        return ffi.unpack(out[0], n[0]).decode("utf-8")
    finally:
        lib.deg_free(out[0])


_DATE_ORDER: Dict[int, Optional[str]] = {0: None, 1: "MDY", 2: "DMY"}
_ARRAY_DECODE = {0: "count_peaks", 1: "threshold", 2: "hybrid"}


def _options_dict(o: Any) -> Dict[str, Any]:
    if o.default_offset_is_z:
        off = "Z"
    else:
        m = o.default_offset_minutes
        off = f"{'-' if m < 0 else '+'}{abs(m) // 60:02d}:{abs(m) % 60:02d}"
    return {"max_new_tokens": o.max_new_tokens,
            "max_items": None if o.max_items < 0 else o.max_items,
            "date_order": _DATE_ORDER[o.date_order], "default_offset": off,
            "temperature": o.temperature, "seed": o.seed if o.has_seed else None,
            "array_decode": _ARRAY_DECODE[o.array_decode],
            "null_margin": o.null_margin if o.has_null_margin else None}


def parse_options(options: JSONValue) -> Dict[str, Any]:
    """Check fill options (§9) and return them with the defaults filled in. Raises
    RequestError (with .errors, locs relative to the options object)."""
    text = _text(options, "options")
    o = ffi.new("deg_fill_options *")
    errs = ffi.new("char **")
    status = lib.deg_fill_options_parse(text, len(text), o, errs)
    errors = _take_errors(errs)
    if status != 0:
        _raise_listed(status, errors)
    return _options_dict(o[0])


class Request:
    """A checked fill request: .model, .context (rendered text), .options (dict with
    defaults), .plan (FillPlan)."""
    __slots__ = ("model", "context", "options", "plan")
    model: str
    context: str
    options: Dict[str, Any]
    plan: FillPlan

    def __repr__(self) -> str:
        return f"Request(model={self.model!r}, {len(self.plan)} fields)"


def parse_request(request: JSONValue) -> Request:
    """Check a fill request {context, schema, model, options} (§9). Raises
    RequestError / SchemaError with .errors (locs into the request)."""
    text = _text(request, "request")
    out = ffi.new("deg_request **")
    errs = ffi.new("char **")
    status = lib.deg_request_parse(text, len(text), out, errs)
    errors = _take_errors(errs)
    if status != 0:
        _raise_listed(status, errors)
    r = out[0]
    try:
        req = Request()
        req.model = ffi.string(lib.deg_request_model(r)).decode("utf-8")
        n = ffi.new("size_t *")
        p = lib.deg_request_context(r, n)
        req.context = ffi.unpack(p, n[0]).decode("utf-8")
        req.options = _options_dict(lib.deg_request_options(r))
        js = ffi.new("char **")
        check(lib.deg_plan_to_json(lib.deg_request_plan(r), js))
        try:
            req.plan = FillPlan(json.loads(ffi.string(js[0]).decode("utf-8")))
        finally:
            lib.deg_free(js[0])
        return req
    finally:
        lib.deg_request_free(r)
