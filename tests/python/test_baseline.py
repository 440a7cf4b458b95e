"""deg.baseline: the llama.cpp constrained-decoding baseline (optional: skips
without llama-cpp-python or the model)."""
import pytest

from deg.baseline import available, grammar_schema, prompt_messages

SCHEMA = {"type": "object", "properties": {
    "package": {"type": "string"}, "priority": {"enum": ["required", "optional"]},
    "summary": {"type": "string", "x-generate": True, "maxLength": 40}},
    "required": ["package", "priority"]}


def test_prompt_and_grammar_schema():
    assert grammar_schema(SCHEMA)["properties"]["summary"] == {"type": "string", "maxLength": 40}
    m = prompt_messages("Package: sed", SCHEMA)
    assert m[0]["role"] == "system" and m[1]["content"].startswith("Package: sed\n\nJSON schema:\n")
    assert "x-generate" not in m[1]["content"]


def test_baseline_on_smollm2(model_path):
    ok, why = available()
    if not ok:
        pytest.skip(why)
    from deg.baseline import BaselineSystem
    import deg
    sys_ = BaselineSystem(model_path, n_threads=2, n_ctx=1024, max_tokens=64)
    r = sys_("Package: sed\nPriority: required\nDescription: GNU stream editor", SCHEMA)
    assert deg.validate(SCHEMA, r["value"]) == [], r["raw"]
    assert r["usage"]["generated_tokens"] > 0 and r["usage"]["prompt_tokens"] > 10
    assert sys_("Package: sed\nPriority: required\nDescription: GNU stream editor", SCHEMA) == r
