"""The Python wrappers of the parsers, candidates, trimmer and acceptor
(the full tables are the C suites tests/c/test_parse.c, test_spans.c,
test_acceptor.c; these check the binding: types, offsets, errors, ownership)."""
import pytest

import deg
from deg._native import has

pytestmark = pytest.mark.skipif(not has("deg_parse_number"), reason="libdeg has no parsers")


@pytest.mark.parametrize("text,integer,want", [
    ("1,234", False, 1234), ("1.234,56", False, 1234.56), ("-$5", False, -5), ("45 %", False, 45),
    ("2.00", True, 2), ("1 234 567", False, 1234567), ("6.02e23", False, 6.02e23),
])
def test_parse_number(text, integer, want):
    got = deg.parse_number(text, integer=integer)
    assert got == want and type(got) is type(want)


def test_parse_number_json_keeps_digits():
    assert deg.parse_number_json("0.10") == "0.1"
    assert deg.parse_number_json("123456789012345678901234567890") == "123456789012345678901234567890"


def test_parse_errors_are_typed():
    with pytest.raises(deg.RangeError):
        deg.parse_number("2.5", integer=True)
    with pytest.raises(deg.FormatError):
        deg.parse_number("(1,234)")
    with pytest.raises(deg.FormatError, match="ambiguous"):
        deg.parse_date("03/05/2026")
    with pytest.raises(deg.RangeError):
        deg.parse_date("2025-02-29")
    with pytest.raises(deg.Utf8Error):
        deg.parse_date(b"\xff")
    with pytest.raises(ValueError):
        deg.parse_date("03/05/2026", date_order="YMD")


def test_dates():
    assert deg.parse_date("03/05/2026", "MDY") == "2026-03-05"
    assert deg.parse_date("03/05/2026", "DMY") == "2026-05-03"
    assert deg.parse_date("Thursday, March 5th, 2026") == "2026-03-05"
    assert deg.parse_datetime("5 March 2026 14:30 CET") == ("2026-03-05T14:30:00+01:00", False)
    assert deg.parse_datetime("2026-03-05 14:30", default_offset="-05:00") == \
        ("2026-03-05T14:30:00-05:00", True)
    with pytest.raises(deg.FormatError):
        deg.parse_datetime("2026-03-05 14:30", default_offset=None)


def test_candidates_and_trim_use_code_points():
    text = "Café prices: €1.234,50 on 5 März 2026, mail rené@x.fr or joe@x.fr."
    spans = deg.candidates("number", text)
    assert "€1.234,50" in [text[a:b] for a, b in spans]
    assert [text[a:b] for a, b in deg.candidates("date", text)] == ["5 März 2026"]
    assert [text[a:b] for a, b in deg.candidates("email", text)] == ["joe@x.fr"]
    s = text.index("(") if "(" in text else text.index("joe") - 1
    a, b = deg.trim_span(text, s, len(text))
    assert text[a:b] == "joe@x.fr"
    with pytest.raises(deg.ArgumentError):
        deg.candidates("colour", text)


def test_validate():
    schema = {"type": "object", "properties": {"d": {"type": "string", "format": "date"}},
              "required": ["d", "e"]}
    errs = deg.validate(schema, {"d": "2025-02-29"})
    assert [(e["instance"], e["keyword"]) for e in errs] == [("/d", "format"), ("", "required")]
    assert deg.validate(schema, {"d": "2024-02-29", "e": 1}) == []
    with pytest.raises(deg.FormatError, match="line 1"):
        deg.validate_json("{", "1")


def test_acceptor():
    with deg.Acceptor(r"^[A-Z]{3}-\d{4}$", 8, 8) as acc:
        assert acc.prefix_ok("ABC-1")
        assert not acc.prefix_ok("abc")
        assert not acc.eos_ok("ABC-1")
        assert acc.eos_ok("ABC-1234")
    acc = deg.Acceptor(max_length=2)
    assert acc.prefix_ok("éé") and not acc.prefix_ok("ééé")
    assert acc.prefix_ok("é".encode()[:1])  # a token ending mid-character
    with pytest.raises(deg.SchemaError):
        deg.Acceptor("(")


SCHEMA = {
    "type": "object",
    "properties": {
        "due": {"type": ["string", "null"], "format": "date"},
        "total": {"type": "number", "minimum": 0},
        "items": {"type": "array", "items": {"type": "string"}, "x-generate": True},
    },
    "required": ["total", "items"],
}


@pytest.mark.skipif(not has("deg_response_assemble"), reason="libdeg has no deg_response_assemble")
def test_assemble_response():
    out = deg.assemble_response(SCHEMA, {
        "fields": {"/total": {"value": 12.5, "meta": {"mode": "extract.number", "span": [3, 8]}},
                   "/items/0": {"value": "a", "meta": {"mode": "generate", "generated_tokens": 2}},
                   "/due": {"value": None, "meta": {"mode": "extract.date", "span": None,
                                                     "null_reason": "not_found"}}},
        "arrays": {"/items": {"items": 1}},
        "usage": {"prompt_tokens": 9}})
    assert list(out["value"]) == ["due", "total", "items"]          # schema order
    assert out["value"] == {"due": None, "total": 12.5, "items": ["a"]}
    assert out["meta"]["/items"] == {"mode": "array", "items": 1}
    assert out["usage"] == {"prompt_tokens": 9, "generated_tokens": 2}
    assert out["plan"] == deg.compile_schema(SCHEMA).fingerprint
    with pytest.raises(deg.FillError) as ei:
        deg.assemble_response(SCHEMA, {"fields": {"/total": {"value": -1}, "/due": {"value": "2025-02-29"}},
                                       "arrays": {"/items": {"items": 0}}})
    assert {(e["instance"], e["keyword"]) for e in ei.value.errors} == {("/total", "minimum"),
                                                                         ("/due", "format")}
