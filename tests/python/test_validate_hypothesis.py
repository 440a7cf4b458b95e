"""deg's validator (C) against python-jsonschema's Draft202012Validator
(with multipleOf on decimal values, as deg and the JSON Schema spec define it).

Random schemas over the keywords the contract supports and random values
(hypothesis, derandomized so CI runs the same cases) are validated by both;
the validity must agree case by case, and so must the set of (instance
pointer, keyword) violations when the schema has no false subschema. jsonschema gets a FormatChecker whose date, date-time, email,
uri and uuid checks are independent Python implementations of the rules in
lib/deg/parse.h (uri: the rfc3987 package's RFC 3986 grammar when installed).
"""
import datetime
import decimal
import ipaddress
import json
import re

import pytest

jsonschema = pytest.importorskip("jsonschema")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import deg  # noqa: E402
from deg._native import has  # noqa: E402

decimal.getcontext().prec = 800  # exact for any double's repr (and 2^63 integers)
Decimal = decimal.Decimal

pytestmark = pytest.mark.skipif(not has("deg_validate"), reason="libdeg has no deg_validate")

# ---- reference format checks (Python, independent of the C code) ----------

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_DT = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))",
                 re.ASCII)


def ref_date(s):
    m = _DATE.fullmatch(s)
    if not m:
        return False
    try:
        datetime.date(*map(int, m.groups()))
    except ValueError:
        return False
    return True


def ref_date_time(s):
    m = _DT.fullmatch(s)
    if not m or not ref_date(m.group(1)):
        return False
    h, mi, sec = int(m.group(2)), int(m.group(3)), int(m.group(4))
    off = 0
    if m.group(6):
        oh, om = int(m.group(7)), int(m.group(8))
        if oh > 23 or om > 59:
            return False
        off = (oh * 60 + om) * (-1 if m.group(6) == "-" else 1)
    if h > 23 or mi > 59 or sec > 60:
        return False
    if sec == 60:  # leap second: only 23:59:60 UTC
        return (h * 60 + mi - off) % 1440 == 23 * 60 + 59
    return True


_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LOCAL = re.compile(rf"{_ATEXT}(?:\.{_ATEXT})*|\"(?:[^\"\\]|\\.)*\"", re.ASCII | re.S)
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", re.ASCII)


def ref_email(s):
    if any(ord(c) >= 0x80 or ord(c) < 0x20 for c in s) or "@" not in s:
        return False
    local, _, domain = s.rpartition("@")
    if not _LOCAL.fullmatch(local) or len(local.encode()) > 64:
        return False
    if domain.startswith("[") and domain.endswith("]"):
        lit = domain[1:-1]
        try:
            if lit.startswith("IPv6:"):
                ipaddress.IPv6Address(lit[5:])
            else:
                if not re.fullmatch(r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}", lit):
                    return False
            return True
        except ValueError:
            return False
    if not domain or len(domain) > 253:
        return False
    return all(_LABEL.fullmatch(p) for p in domain.split("."))


try:
    import rfc3987
except ImportError:  # pragma: no cover
    rfc3987 = None


def ref_uri(s):
    if any(ord(c) >= 0x80 or ord(c) <= 0x20 for c in s):
        return False
    if rfc3987 is None:
        pytest.skip("rfc3987 is not installed")
    m = rfc3987.match(s, rule="URI")
    if not m or m.end() != len(s):
        return False
    host = re.match(r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?\[([0-9A-Fa-f:.]+)\]", s)
    if host:
        try:
            ipaddress.IPv6Address(host.group(1))
        except ValueError:
            return False
    return True


def ref_uuid(s):
    return re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
                        s) is not None


REF_FORMATS = {"date": ref_date, "date-time": ref_date_time, "email": ref_email, "uri": ref_uri,
               "uuid": ref_uuid}


def format_checker():
    fc = jsonschema.FormatChecker(formats=())
    for name, fn in REF_FORMATS.items():
        # formats apply to strings only
        fc.checks(name)(lambda x, fn=fn: not isinstance(x, str) or fn(x))
    return fc


FC = format_checker()

# ---- strategies ------------------------------------------------------------

ALPHABET = "abcxyzAZ019 _-.@:/é\u0661"
texts = st.text(alphabet=ALPHABET, max_size=8)
format_samples = st.sampled_from([
    "2026-03-05", "2025-02-29", "2024-02-29", "2026-13-01", "2026-3-5",
    "1998-12-31T23:59:60Z", "1998-12-31T22:59:60Z", "2026-03-05T14:30:00+01:00",
    "2026-03-05t14:30:00.5z", "2026-03-05T14:30", "joe@example.com", "a.b@x-y.org",
    "joe@[127.0.0.1]", "\"j b\"@x.com", "joe@-x.com", "http://x.org/a?b#c", "urn:a:b",
    "mailto:joe@x.com", "http://[::1]/", "http://[::zz]/", "//x.org", "abc",
    "123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000", "",
])
strings = st.one_of(texts, format_samples)
ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
small_ints = st.integers(min_value=-20, max_value=20)
floats = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64),
                   st.sampled_from([0.0, -0.0, 0.1, 0.3, 0.07, 2.0, 2.5, 1e16, 7.5, -3.0]))
scalars = st.one_of(st.none(), st.booleans(), small_ints, ints, floats, strings)
keys = st.sampled_from(["a", "b", "c", "a/b", "m~n"])
values = st.recursive(scalars, lambda ch: st.one_of(st.lists(ch, max_size=4),
                                                    st.dictionaries(keys, ch, max_size=4)),
                      max_leaves=10)

TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]
PATTERNS = ["^a", "b$", "^[a-c]+$", "\\d", "^\\w+$", "x|y", "^.{2,3}$", "é", "[0-9]{2}", "^$"]
bounds = st.one_of(small_ints, st.sampled_from([0.5, 1.5, -2.5, 0.1, 2.0, 1e16]))
multiples = st.sampled_from([2, 3, 0.5, 0.25, 0.1, 0.01, 1.5, 7])


def leaf_schemas():
    kw = st.fixed_dictionaries({}, optional={
        "type": st.one_of(st.sampled_from(TYPES),
                          st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)),
        "enum": st.lists(scalars, min_size=1, max_size=4),
        "const": scalars,
        "minLength": st.integers(0, 5), "maxLength": st.integers(0, 5),
        "pattern": st.sampled_from(PATTERNS),
        "format": st.sampled_from(list(REF_FORMATS) + ["ipv4"]),
        "minimum": bounds, "maximum": bounds, "exclusiveMinimum": bounds,
        "exclusiveMaximum": bounds, "multipleOf": multiples,
        "minItems": st.integers(0, 3), "maxItems": st.integers(0, 3),
        "uniqueItems": st.booleans(),
        "title": st.just("t"), "description": st.just("d"),
    })
    return st.one_of(kw, st.booleans())


def compound(ch):
    return st.one_of(
        st.fixed_dictionaries({"type": st.just("object"),
                               "properties": st.dictionaries(keys, ch, max_size=3)},
                              optional={"required": st.lists(keys, max_size=3, unique=True),
                                        "additionalProperties": st.one_of(st.booleans(), ch)}),
        st.fixed_dictionaries({"type": st.just("array"), "items": ch},
                              optional={"minItems": st.integers(0, 3), "maxItems": st.integers(0, 3),
                                        "uniqueItems": st.booleans()}),
        st.fixed_dictionaries({"anyOf": st.lists(ch, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"oneOf": st.lists(ch, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"$ref": st.just("#/$defs/d")}),
    )


schemas = st.recursive(leaf_schemas(), compound, max_leaves=6)
DEF = st.one_of(leaf_schemas(), st.just({"type": "string", "format": "date"}))


def pointer(path):
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _decimal(x):
    return Decimal(int(x)) if isinstance(x, int) else Decimal(repr(x))


def _multiple_of(validator, dB, instance, schema):
    """multipleOf on the decimal values (the JSON Schema spec; deg issue 19):
    jsonschema divides binary doubles (4.02 / 0.01 = 401.99999999999994 fails)."""
    if not validator.is_type(instance, "number"):
        return
    if _decimal(instance) % _decimal(dB) != 0:
        yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {dB}")


RefValidator = jsonschema.validators.extend(jsonschema.Draft202012Validator,
                                            {"multipleOf": _multiple_of})


def ref_errors(schema, value):
    v = RefValidator(schema, format_checker=FC)
    out = set()
    for e in v.iter_errors(value):
        kw = e.validator if e.validator is not None else "false"
        out.add((pointer(e.absolute_path), kw))
    return out


def deg_errors(schema, value):
    out = set()
    for e in deg.validate(schema, value):
        inst = e["instance"]
        if e["keyword"] == "additionalProperties" and e["schema"].endswith("/additionalProperties"):
            # deg reports each extra property; jsonschema one error at the object
            inst = inst.rsplit("/", 1)[0]
        out.add((inst, e["keyword"]))
    return out


@settings(max_examples=1500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(schema=schemas, d=DEF, value=values)
def test_validator_agrees_with_jsonschema(schema, d, value):
    if isinstance(schema, dict):
        schema = dict(schema, **{"$defs": {"d": d}})
    want = ref_errors(schema, value)
    got = deg_errors(schema, value)
    assert (not got) == (not want), (schema, value, got, want)
    # Where each violation is reported also agrees, except under a false
    # subschema (jsonschema reports it at the parent keyword, e.g. one
    # "items" error at the array; deg reports "false" at each item).
    if "false" not in json.dumps(schema):
        assert got == want, (schema, value, got, want)


# ---- format checks: C vs the Python references ------------------------------

FORMAT_CASES = [
    ("date", s) for s in ["2026-03-05", "2024-02-29", "2025-02-29", "2026-04-31", "0000-01-01",
                          "2026-3-5", "2026-03-05\n", "\u0662\u0660\u0662\u0666-03-05"]
] + [
    ("date-time", s) for s in ["1963-06-19T08:30:06.283185Z", "1963-06-19t08:30:06z",
                               "1937-01-01T12:00:27.87+00:20", "1990-12-31T15:59:60-24:00",
                               "1998-12-31T23:59:60Z", "1998-12-31T15:59:60.123-08:00",
                               "1998-12-31T23:58:60Z", "2026-03-05T14:30:00", "2026-03-05T14:30Z",
                               "2026-03-05 14:30:00Z", "2026-03-05T14:30:00.Z", "2026-03-05T14:30:00Z\n"]
] + [
    ("email", s) for s in ["joe.bloggs@example.com", "2962", "a+b@x.co.uk", "\"joe bloggs\"@example.com",
                           "joe@[127.0.0.1]", "joe@[IPv6:::1]", "joe@[300.0.0.1]", ".joe@x.com",
                           "joe.@x.com", "jo..e@x.com", "joe@-x.com", "joe@x..com", "joe@localhost",
                           "jöe@x.com", "a@b@c", "joe@x.com."]
] + [
    ("uri", s) for s in ["http://foo.bar/?baz=qux#quux", "http://foo.com/blah_(wikipedia)_blah#cite-1",
                         "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com", "ldap://[2001:db8::7]/c=GB",
                         "mailto:John.Doe@example.com", "urn:oasis:names:docbook:4.1.2", "tel:+1-816-555-1212",
                         "//foo.bar/", "/abc", "abc", "http:// x.com", "http://[2001:db8::zz]/",
                         "http://x.com/%zz", "http://x.com/é", "a:", "1http://x", "http://x.com/a b"]
] + [
    ("uuid", s) for s in ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000",
                          "123e4567e89b12d3a456426614174000", "{123e4567-e89b-12d3-a456-426614174000}",
                          "123e4567-e89b-12d3-a456-42661417400g"]
]


@pytest.mark.parametrize("fmt,text", FORMAT_CASES)
def test_format_check_matches_reference(fmt, text):
    assert deg.format_check(fmt, text) == REF_FORMATS[fmt](text)


def test_date_time_agrees_with_rfc3339_validator():
    rv = pytest.importorskip("rfc3339_validator")
    for fmt, s in FORMAT_CASES:
        # rfc3339-validator has no leap seconds and lets "$" match before "\n"
        if fmt == "date-time" and ":60" not in s and not s.endswith("\n"):
            assert deg.format_check(fmt, s) == rv.validate_rfc3339(s.upper()), s
