"""Issue 19 items 6, 8, 9 through the Python package: decimal-exact
multipleOf (validate and fill), deg.validate's verdicts (what compile_schema
calls unsupported is refused, non-schemas are refused, a schema given as JSON
text is read as text), and the Python surface's edges (one rule for schema
arguments, typed deg errors for bytes paths, negative integers, tokenize(5))."""
import os

import pytest

import deg
from conftest import ROOT

GOLDENS = ROOT / "tests" / "goldens"


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    d = tmp_path_factory.mktemp("ck-hard")
    deg.create_random_checkpoint(GOLDENS / "tiny-llama", d, seed=7)
    with deg.load(d) as ck:
        yield ck


# ---- item 6 -------------------------------------------------------------------

@pytest.mark.parametrize("value,step,ok", [
    (4.02, 0.01, True), (19.99, 0.01, True), (0.3, 0.1, True), (1.15, 0.05, True),
    (4.025, 0.01, False), (1.16, 0.05, False), (7, 0.5, True), (10, 3, False)])
def test_multiple_of_decimal(value, step, ok):
    assert (deg.validate({"multipleOf": step}, value) == []) is ok


def test_fill_price_multiple_of_cent(ckpt):
    """"Total price: 4.02 USD." with multipleOf 0.01: the one number in the text
    is a valid value (it used to be refused: a required field gave FillError)."""
    schema = {"type": "object", "properties": {"total": {"type": "number", "multipleOf": 0.01}},
              "required": ["total"]}
    r = deg.fill("Total price: 4.02 USD.", schema, model=ckpt)
    assert r["value"] == {"total": 4.02}


def test_score_levels_decimal_step():
    """Score levels use the same rule (binary division drops 3: 3 / 0.1 =
    30.000000000000004)."""
    plan = deg.compile_schema({"type": "object", "properties": {"s": {
        "type": "integer", "minimum": 0, "maximum": 3, "multipleOf": 0.1}}})
    assert plan.to_dict()["fields"][0]["levels"] == [0, 1, 2, 3]


# ---- item 8 -------------------------------------------------------------------

@pytest.mark.parametrize("schema,where", [
    ({"allOf": [{"minimum": 10}]}, 'unsupported keyword "allOf"'),
    ({"not": {"type": "integer"}}, 'unsupported keyword "not"'),
    ({"type": "object", "minProperties": 3}, 'unsupported keyword "minProperties"'),
    ({"properties": {"a": {"if": {"type": "integer"}}}}, '"/properties/a/if"'),
    (5, "not integer"), ([{"type": "integer"}], "not array"), (None, "not null"),
])
def test_validate_refuses_what_it_does_not_apply(schema, where):
    with pytest.raises(deg.SchemaError, match=where.replace("(", r"\(")) as e:
        deg.validate(schema, 5)
    # located like compile_schema's errors: [{"loc": pointer into the schema, "msg"}]
    assert len(e.value.errors) == 1 and e.value.errors[0]["msg"] in str(e.value)
    if isinstance(schema, dict):
        kw = where.split('"')[1] if where.startswith("unsupported") else None
        loc = e.value.errors[0]["loc"]
        assert loc == ("/" + kw if kw else where.strip('"')), loc
    if isinstance(schema, dict):  # compile_schema refuses the same keywords
        with pytest.raises(deg.SchemaError):
            deg.compile_schema({"type": "object", "properties": {"x": schema}})


def test_validate_schema_text():
    assert deg.validate('{"type": "integer", "maximum": 3}', 5) != []
    assert deg.validate(b'{"type": "integer"}', 5) == []
    with pytest.raises(deg.SchemaError, match="schema text is not JSON"):
        deg.validate("{not json", 5)
    assert deg.validate({"const": 5}, 5) == [] and deg.validate({"const": 5}, 6) != []


# ---- item 9 -------------------------------------------------------------------

def test_schema_argument_one_rule(ckpt):
    schema = {"type": "object", "properties": {"a": {"type": "boolean"}}}
    import json
    as_text = json.dumps(schema)
    want = deg.fill("x yes", schema, model=ckpt)
    assert deg.fill("x yes", as_text, model=ckpt) == want
    assert deg.fill("x yes", as_text.encode(), model=ckpt) == want
    assert deg.fill_many([{"context": "x yes", "schema": as_text}], model=ckpt) == [want]
    assert deg.compile_schema(as_text).fingerprint == deg.compile_schema(schema).fingerprint
    with pytest.raises(deg.SchemaError, match="schema text is not JSON"):
        deg.fill("x", "{oops", model=ckpt)


def test_bytes_paths(tmp_path):
    m = deg.load_model(os.fsencode(GOLDENS / "tiny-llama"))
    m.close()
    d = tmp_path / "ck"
    deg.create_random_checkpoint(os.fsencode(GOLDENS / "tiny-llama"), os.fsencode(d), seed=1)
    with deg.load(os.fsencode(d)) as ck:
        assert ck.fill("x", {"type": "object", "properties": {"a": {"type": "boolean"}}})
    for bad in (5, None, 3.5):
        with pytest.raises(deg.ArgumentError, match="must be a path"):
            deg.load_model(bad)
    with pytest.raises(deg.ArgumentError, match="NUL"):
        deg.load_model("a\0b")


def test_bad_numbers_are_typed(ckpt, tmp_path):
    m = deg.load_model(GOLDENS / "tiny-llama")
    with pytest.raises(deg.ArgumentError, match="seed"):
        m.generate([1, 2], max_tokens=2, seed=-1)
    with pytest.raises(deg.ArgumentError, match="top_k"):
        m.generate([1, 2], max_tokens=2, top_k=-1)
    with pytest.raises(deg.ArgumentError):
        m.generate([1, 2 ** 40], max_tokens=2)
    with pytest.raises(deg.ArgumentError):
        ckpt.set_fork_budget(-1)
    with pytest.raises(deg.ArgumentError):
        deg.create_random_checkpoint(GOLDENS / "tiny-llama", tmp_path / "c", seed=-1)
    with m.trunk([1, 2]) as t:
        with pytest.raises(deg.ArgumentError):
            t.fork().hidden(-1, 1)
    with pytest.raises(deg.ArgumentError, match="text must be str or bytes"):
        m.tokenize(5)
    assert m.tokenize(b"ab") == m.tokenize("ab")
    m.close()


# ---- item 5 -------------------------------------------------------------------

def test_tokenize_drop_missing_bytes_matches_hf(model):
    """SmolLM2's missing bytes: refused by default, dropped as HF tokenizers
    drops them with drop_missing_bytes=True (goldens from HF tokenizers,
    tests/goldens/gen_tokenizer_dropped.py)."""
    import json
    g = json.loads((GOLDENS / "tokenizer" / "dropped_bytes.json").read_text())
    for c in g["cases"]:
        assert model.tokenize(c["text"], drop_missing_bytes=True) == c["ids"], c["text"]
        if any(b in g["missing_bytes"] for b in c["text"].encode("utf-8")):
            with pytest.raises(deg.UnsupportedError, match="DEG_TOKENIZE_DROP_MISSING_BYTES"):
                model.tokenize(c["text"])


def test_fill_values_keep_nul_bytes_verbatim():
    """A NUL inside a document stays a NUL in the value (reported as coming
    out as a space): every plain string value is the text at its span,
    verbatim (deg-contract.md §8), through the C response JSON and json.loads."""
    text = "Ship to: ACME\x00Corp Ltd\nCompany: Big\x00Box Inc\nTotal: $12.50\n"
    schema = {"type": "object", "properties": {
        "company": {"type": ["string", "null"]}, "ship_to": {"type": ["string", "null"]}}}
    with deg.load() as ck:
        r = ck.fill(text, schema)
    held = 0
    for name, v in r["value"].items():
        if v is None:
            continue
        s, e = r["meta"]["/" + name]["span"]
        assert v == text[s:e], (name, v, text[s:e])
        held += "\x00" in v
    assert held >= 1, r["value"]


def test_fill_reads_documents_with_control_bytes(model_path):
    """A group separator (barcode / EDI text) or a plane-4 character no longer
    rejects the document; spans still point at the original text."""
    text = ("Order number: 4711\x1dShip to: ACME Corp\x1dDate: 5 March 2026\x1d"
            "Total: $12.50 \U00040000 paid\x04")
    schema = {"type": "object", "properties": {
        "order": {"type": ["integer", "null"]},
        "date": {"type": ["string", "null"], "format": "date"},
        "total": {"type": ["number", "null"]},
        "company": {"type": ["string", "null"]}}}
    with deg.load() as ck:
        r = ck.fill(text, schema)
    assert set(r["value"]) == {"order", "date", "total", "company"}
    checked = 0
    for name, v in r["value"].items():
        m = r["meta"]["/" + name]
        if v is None or not m.get("span"):
            continue
        s, e = m["span"]  # code points of the original text
        piece = text[s:e]
        if name in ("order", "total"):
            assert deg.parse_number(piece) == v, (name, piece, v)
        elif name == "date":
            assert deg.parse_date(piece) == v, (name, piece, v)
        else:
            assert piece == v, (name, piece, v)
        checked += 1
    assert checked >= 1, r


# ---- item 2 (saves) through Python --------------------------------------------

def test_checkpoint_save_is_the_documented_python_way(ckpt, tmp_path):
    """deg.Checkpoint.save writes the checkpoint whole (deg_ckpt_save: the
    directory is replaced as a whole, kill-tested in tests/c/test_saves.c); the
    saved checkpoint loads and fills bitwise as the one saved, extra keys land in
    deg.json, deg's own keys are refused, and Checkpoint.fill passes its limits."""
    import json
    doc, schema = "Order 4711, total $12.50, urgent.", {
        "type": "object", "properties": {"urgent": {"type": "boolean"},
                                         "total": {"type": ["number", "null"]}}}
    d = tmp_path / "saved"
    ckpt.save(d, extra={"training": {"note": "copy"}})
    assert json.loads((d / "deg.json").read_text())["training"] == {"note": "copy"}
    assert sorted(p.name for p in d.iterdir() if ".tmp." in p.name) == []
    with deg.load(d) as again:
        assert again.fill(doc, schema) == ckpt.fill(doc, schema)
    ckpt.save(d)  # over an existing checkpoint
    with deg.load(d) as again:
        assert again.fill(doc, schema)["value"] == ckpt.fill(doc, schema)["value"]
    with pytest.raises(deg.ArgumentError):
        ckpt.save(tmp_path / "bad", extra={"heads_sha256": "x"})
    with pytest.raises(deg.LimitError, match="max_fork_tokens 3: "):
        ckpt.fill(doc, schema, limits={"max_fork_tokens": 3})
