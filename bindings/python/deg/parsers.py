"""The deterministic parsers, format checks, candidate spans, validator and
constrained-decoding acceptor of the deg contract (C: lib/deg/parse.h,
validate.h, acceptor.h; rules documented there).

Texts are Python str (encoded as UTF-8) unless stated; span offsets are
code points, i.e. Python string indices. Errors raise the typed DegError of
the C status: FormatError (not a value of that kind), RangeError (well
formed but inadmissible: fractional integer, invalid calendar date),
Utf8Error, ArgumentError, SchemaError.
"""
import json
import re

from ._native import check, ffi, lib
from .errors import ArgumentError, FillError, SchemaError, StateError

__all__ = [
    "parse_number", "parse_number_json", "parse_date", "parse_datetime", "format_check",
    "FORMATS", "CANDIDATE_KINDS", "candidates", "trim_span", "validate", "validate_json", "assemble_response", "Acceptor",
]

FORMATS = ("date", "date-time", "email", "uri", "uuid")
CANDIDATE_KINDS = ("number", "integer", "date", "date-time", "email", "uri", "uuid")

_ORDERS = {None: 0, "MDY": 1, "DMY": 2}


def _bytes(text):
    if isinstance(text, bytes):
        return text
    if not isinstance(text, str):
        raise TypeError(f"expected str or bytes, got {type(text).__name__}")
    return text.encode("utf-8", "surrogatepass")


def _order(date_order):
    try:
        return _ORDERS[date_order]
    except (KeyError, TypeError):
        raise ValueError(f"date_order must be 'MDY', 'DMY' or None, not {date_order!r}") from None


def _take_string(pp):
    """Copy and free a char * returned by libdeg."""
    try:
        return ffi.string(pp[0]).decode("utf-8")
    finally:
        lib.deg_free(pp[0])


def parse_number_json(text, integer=False):
    """The number written in `text` as JSON number text ("1.234,5" -> "1234.5")."""
    b = _bytes(text)
    out = ffi.new("char **")
    check(lib.deg_parse_number(b, len(b), 1 if integer else 0, out))
    return _take_string(out)


def parse_number(text, integer=False):
    """The number written in `text` as int or float. integer=True (an integer
    leaf) rejects fractional values with RangeError."""
    return json.loads(parse_number_json(text, integer))


def parse_date(text, date_order=None):
    """The date written in `text` as "YYYY-MM-DD". date_order: "MDY", "DMY" or
    None (an ambiguous numeric date then raises FormatError)."""
    b = _bytes(text)
    out = ffi.new("char **")
    check(lib.deg_parse_date(b, len(b), _order(date_order), out))
    return _take_string(out)


def parse_datetime(text, date_order=None, default_offset="Z"):
    """The date-time written in `text` as (RFC 3339 string, assumed_offset).
    default_offset ("Z", "+HH:MM" or None) is used when no zone is written;
    assumed_offset is then True."""
    b = _bytes(text)
    out = ffi.new("char **")
    assumed = ffi.new("int *")
    off = default_offset.encode("ascii") if default_offset is not None else ffi.NULL
    check(lib.deg_parse_datetime(b, len(b), _order(date_order), off, out, assumed))
    return _take_string(out), bool(assumed[0])


def format_check(fmt, text):
    """True if `text` conforms to `fmt` (one of FORMATS)."""
    b = _bytes(text)
    ok = ffi.new("int *")
    check(lib.deg_format_check(fmt.encode("ascii"), b, len(b), ok))
    return bool(ok[0])


def candidates(kind, text):
    """Every (start, end) span (code points) a leaf of `kind` could take."""
    b = _bytes(text)
    spans = ffi.new("size_t **")
    n = ffi.new("size_t *")
    check(lib.deg_candidates(kind.encode("ascii"), b, len(b), spans, n))
    try:
        return [(spans[0][2 * i], spans[0][2 * i + 1]) for i in range(n[0])]
    finally:
        lib.deg_free(spans[0])


def trim_span(text, start, end):
    """(start, end) trimmed of whitespace and boundary punctuation."""
    b = _bytes(text)
    s = ffi.new("size_t *")
    e = ffi.new("size_t *")
    check(lib.deg_span_trim(b, len(b), start, end, s, e))
    return s[0], e[0]


def validate(schema, value):
    """Violations of the Python value `value` against the schema (a dict or
    bool, or its JSON text: the rule of deg.schema.schema_value): a list of
    {"instance", "schema", "keyword", "msg"}; [] when valid. SchemaError for
    a schema deg does not apply (a keyword compile_schema calls unsupported,
    a schema that is not an object or boolean)."""
    from .schema import schema_value
    schema = schema_value(schema)  # SchemaError for text that is not JSON
    try:
        st, vt = json.dumps(schema, allow_nan=False), json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"schema and value must be JSON values: {e}") from None
    return validate_json(st, vt)


#: deg_validate's schema errors read 'schema at "<JSON pointer>": <why>' (lib/deg/validate.c)
_SCHEMA_AT = re.compile(r'schema at "((?:[^"\\]|\\.)*)": (.*)', re.S)


def validate_json(schema_json, value_json):
    """validate() for JSON texts (str or bytes). A SchemaError's .errors is
    [{"loc": pointer into the schema, "msg": why}], as compile_schema's."""
    n = ffi.new("size_t *")
    out = ffi.new("char **")
    try:
        check(lib.deg_validate(_bytes(schema_json), _bytes(value_json), n, out))
    except SchemaError as e:
        m = _SCHEMA_AT.match(str(e))
        if m and not e.errors:
            e.errors = [{"loc": m.group(1), "msg": m.group(2)}]
        raise
    return json.loads(_take_string(out))


def assemble_response(schema, outcomes):
    """Response assembly (spec §8; lib/deg/response.h): compile `schema`
    (dict or JSON text), then build {"value", "meta", "usage", "plan"} from
    the runtime's `outcomes` ({"fields": {pointer: {"value", "meta"}},
    "arrays": {pointer: {"items", "dropped", "meta"}}, "usage":
    {"prompt_tokens"}}). A value that violates the schema raises FillError
    whose .errors lists the violations; nothing invalid is ever returned."""
    from .schema import _plan_compile  # the compiler's one entry point
    plan = _plan_compile(schema)
    try:
        out = ffi.new("char **")
        verrs = ffi.new("char **")
        ot = outcomes if isinstance(outcomes, (str, bytes)) else json.dumps(outcomes, allow_nan=False)
        status = lib.deg_response_assemble(plan, _bytes(ot), out, verrs)
        violations = json.loads(_take_string(verrs)) if verrs[0] != ffi.NULL else []
        if status == FillError.status:
            e = FillError(ffi.string(lib.deg_errmsg()).decode("utf-8", "replace"), status)
            e.errors = violations
            raise e
        check(status)
        return json.loads(_take_string(out))
    finally:
        lib.deg_plan_free(plan)


class Acceptor:
    """Constrained-decoding acceptor of a generate leaf: pattern (JSON Schema
    search semantics), min_length / max_length in code points."""

    def __init__(self, pattern=None, min_length=0, max_length=None):
        out = ffi.new("deg_acceptor **")
        pat = _bytes(pattern) if pattern is not None else ffi.NULL
        mx = (1 << (8 * ffi.sizeof("size_t"))) - 1 if max_length is None else max_length
        check(lib.deg_acceptor_new(pat, min_length, mx, out))
        self._h = ffi.gc(out[0], lib.deg_acceptor_free)

    def _handle(self):
        if self._h is None:
            raise StateError("Acceptor is closed")
        return self._h

    def prefix_ok(self, text):
        """Can this partial text (str, or bytes that may end mid-character)
        still become valid?"""
        b = _bytes(text)
        return bool(lib.deg_acceptor_prefix_ok(self._handle(), b, len(b)))

    def eos_ok(self, text):
        """May the text end here?"""
        b = _bytes(text)
        return bool(lib.deg_acceptor_eos_ok(self._handle(), b, len(b)))

    def close(self):
        h, self._h = self._h, None
        if h is not None:
            ffi.gc(h, None)  # detach the GC destructor, then free now
            lib.deg_acceptor_free(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
