"""deg.fill through the Python package, on the tiny random models (random heads):
validity by construction on 200+ generated (schema, context) pairs, checked with
python-jsonschema and deg.validate; FillError only as the contract specifies;
fill_many equals fill; the CLI; the real model (SmolLM2, skipped when absent)."""
import json
import random
import re
from pathlib import Path

import jsonschema
import pytest

import deg
from conftest import ROOT, needs, run_cli

pytestmark = needs("deg_fill", "deg_ckpt_load")

GOLDENS = ROOT / "tests" / "goldens"


@pytest.fixture(scope="module", params=["tiny-llama", "tiny-qwen3"])
def ckpt(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("ck-" + request.param)
    deg.create_random_checkpoint(GOLDENS / request.param, d, seed=17)
    with deg.load(d) as ck:
        yield ck


WORDS = ["order", "invoice", "customer", "late", "refund", "red", "chair", "lamp", "the",
         "and", "ACME", "Corp", "shipping", "billing", "angry", "happy", "total", "paid"]


def random_context(rng):
    parts = []
    for _ in range(rng.randint(3, 30)):
        k = rng.random()
        if k < 0.55:
            parts.append(rng.choice(WORDS))
        elif k < 0.7:
            parts.append(str(rng.choice([rng.randint(0, 9999), round(rng.uniform(0, 999), 2)])))
        elif k < 0.78:
            parts.append(f"{rng.randint(1, 28)} {rng.choice(['March', 'June', 'Dec'])} "
                         f"{rng.randint(1990, 2030)}")
        elif k < 0.84:
            parts.append(f"{rng.choice(WORDS).lower()}@example.com")
        elif k < 0.88:
            parts.append("https://example.org/" + rng.choice(WORDS))
        elif k < 0.92:
            parts.append(f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T10:3{rng.randint(0, 9)}:00Z")
        else:
            parts.append(rng.choice([",", ".", ";", "\n"]))
    return " ".join(parts)


def random_leaf(rng, depth, allow_generate=True):
    kinds = ["enum", "bool", "bool_null", "score", "score_null", "number", "number_null",
             "integer", "date", "datetime_null", "email_null", "uri", "string", "string_max",
             "string_pattern_null", "oneof"]
    if allow_generate:
        kinds += ["gen", "gen_len"]
    if depth < 2:
        kinds += ["array_obj", "array_enum", "array_gen"]
    k = rng.choice(kinds)
    if k == "enum":
        return {"enum": rng.sample(["a", "b", "c", 1, 2, True, None], rng.randint(2, 4))}
    if k == "bool":
        return {"type": "boolean", "description": "is it urgent?"}
    if k == "bool_null":
        return {"type": ["boolean", "null"]}
    if k == "score":
        return {"type": "integer", "minimum": 0, "maximum": rng.randint(1, 10)}
    if k == "score_null":
        return {"type": ["integer", "null"], "minimum": 1, "maximum": 5,
                "x-levels": {"1": "low", "5": "high"}}
    if k == "number":
        return {"type": "number", "minimum": 0}
    if k == "number_null":
        return {"type": ["number", "null"], "maximum": 5000}
    if k == "integer":
        return {"type": "integer"}
    if k == "date":
        return {"type": "string", "format": "date", "title": "when"}
    if k == "datetime_null":
        return {"type": ["string", "null"], "format": "date-time"}
    if k == "email_null":
        return {"type": ["string", "null"], "format": "email"}
    if k == "uri":
        return {"type": "string", "format": "uri"}
    if k == "string":
        return {"type": "string"}
    if k == "string_max":
        return {"type": "string", "maxLength": rng.randint(1, 20), "minLength": 1}
    if k == "string_pattern_null":
        return {"type": ["string", "null"], "pattern": "^[A-Za-z]+$"}
    if k == "oneof":
        return {"oneOf": [{"const": "x", "description": "the x"}, {"const": "y"}]}
    if k == "gen":
        return {"type": "string", "x-generate": True, "maxLength": rng.randint(1, 30)}
    if k == "gen_len":
        return {"type": "string", "x-generate": True, "minLength": 1, "maxLength": 12,
                "x-max-tokens": rng.randint(4, 12)}
    if k == "array_obj":
        props = {f"f{i}": random_leaf(rng, depth + 1) for i in range(rng.randint(1, 3))}
        req = [p for p in props if rng.random() < 0.5]
        a = {"type": "array", "items": {"type": "object", "properties": props, "required": req},
             "maxItems": rng.randint(1, 3)}
        if rng.random() < 0.3:
            a["minItems"] = 1
        return a
    if k == "array_enum":
        return {"type": "array", "items": {"enum": ["p", "q"]}, "maxItems": 3}
    return {"type": "array", "items": {"type": "string", "x-generate": True, "maxLength": 10},
            "maxItems": 2}


def random_schema(rng):
    props = {f"k{i}": random_leaf(rng, 0) for i in range(rng.randint(1, 6))}
    req = [p for p in props if rng.random() < 0.5]
    return {"type": "object", "properties": props, "required": req}


FILL_ERROR = re.compile(r"required and not nullable|minItems|x-generate|beyond the count head")


def test_validity_by_construction(ckpt):
    rng = random.Random(1234)
    n_ok = n_fill_error = 0
    for case in range(110):
        schema = random_schema(rng)
        context = random_context(rng)
        options = {"max_new_tokens": 6}
        try:
            resp = deg.fill(context, schema, model=ckpt, options=options)
        except deg.FillError as e:
            assert FILL_ERROR.search(str(e)), f"case {case}: unexpected FillError {e}"
            n_fill_error += 1
            continue
        n_ok += 1
        value = resp["value"]
        jsonschema.Draft202012Validator(schema).validate(value)
        assert deg.validate(schema, value) == [], case
        assert set(resp) == {"model", "value", "meta", "usage", "plan"}
        gen = sum(m.get("generated_tokens", 0) for m in resp["meta"].values())
        assert resp["usage"]["generated_tokens"] == gen
        for ptr, m in resp["meta"].items():
            if m["mode"].startswith("extract") and m.get("span"):
                s, e = m["span"]
                assert 0 <= s < e <= len(context)
    assert n_ok >= 60, (n_ok, n_fill_error)


@pytest.fixture(scope="module", params=["tiny-llama", "tiny-qwen3"])
def anchor_ckpt(request, tmp_path_factory):
    """An anchor-mode checkpoint (§12.6): random heads, anchor.b at its -6 start
    (threshold then fills minItems; count_peaks follows the random count head)."""
    d = tmp_path_factory.mktemp("ck-anchor-" + request.param)
    deg.create_random_checkpoint(GOLDENS / request.param, d, seed=23, array_mode="anchor")
    assert json.loads((d / "deg.json").read_text())["array_mode"] == "anchor"
    with deg.load(d) as ck:
        yield ck


def test_validity_anchor_mode(anchor_ckpt):
    """Anchor mode: every response validates, or fails with a specified FillError."""
    rng = random.Random(4321)
    n_ok = n_anchored = 0
    for case in range(120):
        schema = random_schema(rng)
        context = random_context(rng)
        options = {"max_new_tokens": 6,
                   "array_decode": rng.choice(["threshold", "count_peaks", "hybrid"])}
        try:
            resp = deg.fill(context, schema, model=anchor_ckpt, options=options)
        except deg.FillError as e:
            assert FILL_ERROR.search(str(e)), f"case {case}: unexpected FillError {e}"
            continue
        n_ok += 1
        jsonschema.Draft202012Validator(schema).validate(resp["value"])
        assert deg.validate(schema, resp["value"]) == [], case
        for ptr, m in resp["meta"].items():
            if m.get("array_mode") == "anchor":
                n_anchored += 1
                assert len(m["anchors"]) == m["items"]
                assert m["anchors"] == sorted(m["anchors"])
                assert all(0 <= a < len(context) for a in m["anchors"])
    assert n_ok >= 60 and n_anchored >= 10, (n_ok, n_anchored)


def test_fill_many_equals_fill(ckpt):
    rng = random.Random(99)
    jobs = []
    for _ in range(4):
        jobs.append({"context": random_context(rng),
                     "schema": {"type": "object", "properties": {
                         "a": {"type": "boolean"}, "b": {"enum": ["x", "y", "z"]},
                         "n": {"type": ["number", "null"]}, "s": {"type": "string"}}}})
    jobs.append({"context": "", "schema": jobs[0]["schema"]})
    many = deg.fill_many(jobs, model=ckpt)
    assert isinstance(many[-1], deg.RequestError)
    for j, r in zip(jobs[:-1], many[:-1]):
        assert r == deg.fill(j["context"], j["schema"], model=ckpt)


def test_errors_typed(ckpt):
    with pytest.raises(deg.SchemaError) as e:
        deg.fill("x", {"type": "object", "properties": {"a": {"type": "string", "x-genrate": True}}},
                 model=ckpt)
    assert e.value.errors and e.value.errors[0]["loc"].startswith("/schema")
    with pytest.raises(deg.RequestError):
        deg.fill("x", {"type": "object"}, model=ckpt, options={"nope": 1})
    with pytest.raises(deg.RequestError):
        deg.fill(5, {"type": "object"}, model=ckpt)
    with pytest.raises(deg.FillError) as e:
        deg.fill("no digits", {"type": "object", "properties": {"n": {"type": "number"}},
                               "required": ["n"]}, model=ckpt)
    assert "/n" in str(e.value)


def test_mismatch(tmp_path):
    deg.create_random_checkpoint(GOLDENS / "tiny-llama", tmp_path, seed=1)
    with pytest.raises(deg.MismatchError):
        deg.load(tmp_path, model_path=GOLDENS / "tiny-qwen3")
    meta = json.loads((tmp_path / "deg.json").read_text())
    assert meta["format"] == "deg-ckpt-v1" and len(meta["backbone"]["sha256"]) == 64
    assert meta["heads"]["choice.q"] == [256, 64]


def test_cli(tmp_path):
    ck = tmp_path / "ck"
    (tmp_path / "ctx.txt").write_text("Invoice 17 paid on 5 March 2026.")
    (tmp_path / "schema.json").write_text(json.dumps(
        {"type": "object", "properties": {"paid": {"type": "boolean"},
                                          "when": {"type": ["string", "null"], "format": "date"}}}))
    res = run_cli("fill", "--ckpt", ck, "--create-random", GOLDENS / "tiny-llama",
                  "--context", tmp_path / "ctx.txt", "--schema", tmp_path / "schema.json")
    out = json.loads(res.stdout)
    assert isinstance(out["value"]["paid"], bool)
    (tmp_path / "bad.json").write_text(json.dumps({"type": "object", "properties": {"a": {"allOf": []}}}))
    res = run_cli("fill", "--ckpt", ck, "--context", tmp_path / "ctx.txt", "--schema",
                  tmp_path / "bad.json", check=False)
    assert res.returncode == 2 and "allOf" in res.stderr


def test_cli_bad_input_files(tmp_path):
    """Unreadable or malformed input files: one clear line, exit 2, no traceback."""
    ctx, schema = tmp_path / "ctx.txt", tmp_path / "schema.json"
    ctx.write_text("Invoice 17.")
    schema.write_text('{"type": "object", "properties": {}}')
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9")
    (tmp_path / "notjson.json").write_text("{oops")
    cases = [
        (["--context", tmp_path / "missing.txt", "--schema", schema], "missing.txt"),
        (["--context", ctx, "--schema", tmp_path / "missing.json"], "missing.json"),
        (["--context", ctx, "--schema", tmp_path / "notjson.json"],
         "--schema is not valid JSON"),
        (["--context", tmp_path / "latin1.txt", "--schema", schema], "not UTF-8 text (byte 3)"),
        (["--context", ctx, "--schema", schema, "--options", "{oops"],
         "--options is not valid JSON"),
        (["--context", ctx, "--json-context", "--schema", schema],
         "--context is not valid JSON"),
    ]
    for extra, expect in cases:
        res = run_cli("fill", "--ckpt", tmp_path / "no-ckpt", *extra, check=False)
        assert res.returncode == 2, (extra, res.stderr)
        assert expect in res.stderr and "Traceback" not in res.stderr, (extra, res.stderr)


def test_real_model_generate_constraints(model_path, tmp_path):
    """SmolLM2 with random heads: patterns, lengths and x-max-tokens respected."""
    deg.create_random_checkpoint(model_path, tmp_path, seed=5)
    schema = {"type": "object", "properties": {
        "code": {"type": "string", "x-generate": True, "pattern": "^[A-Z]{3}-[0-9]{3}$"},
        "date": {"type": "string", "x-generate": True, "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "mail": {"type": "string", "x-generate": True,
                 "pattern": "^[a-z]{1,8}@[a-z]{1,8}\\.com$", "maxLength": 30},
        "short": {"type": "string", "x-generate": True, "minLength": 5, "maxLength": 20},
        "tiny": {"type": "string", "x-generate": True, "x-max-tokens": 3}},
        "required": ["code", "date", "mail", "short", "tiny"]}
    with deg.load(tmp_path) as ck:
        r = deg.fill("Ticket from bob@acme.com about order ABC-123 on 2026-03-05.", schema,
                     model=ck, options={"max_new_tokens": 24})
        v = r["value"]
        assert re.search(r"^[A-Z]{3}-[0-9]{3}$", v["code"])
        assert re.search(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", v["date"])
        assert re.search(r"^[a-z]{1,8}@[a-z]{1,8}\.com$", v["mail"]) and len(v["mail"]) <= 30
        assert 5 <= len(v["short"]) <= 20
        assert r["meta"]["/tiny"]["generated_tokens"] <= 4
        # the same field alone decodes the same text
        alone = deg.fill("Ticket from bob@acme.com about order ABC-123 on 2026-03-05.",
                         {"type": "object", "properties": {"code": schema["properties"]["code"]}},
                         model=ck, options={"max_new_tokens": 24})
        assert alone["value"]["code"] == v["code"]
        with pytest.raises(deg.FillError, match="budget of 2 tokens"):
            deg.fill("x y z", {"type": "object", "properties": {
                "t": {"type": "string", "x-generate": True, "minLength": 40, "x-max-tokens": 2}}},
                model=ck)
