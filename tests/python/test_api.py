"""deg.api without a model: the §9.1 question table (field schemas that compile to
the intended modes), the request checks and error bodies of the OpenAI Decisions
and Jev systemone shapes, and the response mapping from a fill response."""
import pytest

import deg
from deg.api import ApiError, ModelNames
from deg.api import jev, openai_decisions

NAMES = ModelNames("/x/checkpoints/smollm2-135m-v2")


def test_model_names():
    assert NAMES.id == "deg-smollm2-135m-v2"
    assert NAMES.aliases == ("deg-smollm2-135m-v2", "deg-latest", "deg")
    assert "gpt-6-luna" in NAMES.decisions and "gpt-6-luna" not in NAMES.systemone
    assert {"jev-latest", "jev-preview", "clef-flash"} <= set(NAMES.systemone)


def test_decisions_schema_compiles_to_the_table_modes():
    qs, req = openai_decisions.parse({"model": "gpt-6-luna", "input": "text", "questions": [
        {"type": "predicate", "name": "p", "instructions": "Is it?"},
        {"type": "choice", "name": "c", "instructions": "Which?",
         "choices": [{"value": "a", "description": "first"}, {"value": True}]},
        {"type": "choice", "instructions": "Plain?", "choices": [{"value": "x"}, {"value": "y"}]},
        {"type": "score", "name": "s", "instructions": "How much?",
         "levels": [{"label": "low"}, {"label": "high", "description": "a lot"}]},
        {"type": "extract", "name": "e", "instructions": "E-mail", "value_type": "email"},
        {"type": "generate", "name": "g", "instructions": "Reply", "max_tokens": 7,
         "maxLength": 80},
        {"type": "choice", "name": "one", "instructions": "x", "choices": [{"value": "k"}]},
    ], "options": {"temperature": 0.5, "seed": 3}}, NAMES.decisions)
    schema = req["schema"]
    assert list(schema["properties"]) == ["p", "c", "question_3", "s", "e", "g"]
    assert "one" not in schema["properties"], "a one-option choice needs no model"
    assert schema["properties"]["c"]["oneOf"] == [{"const": "a", "description": "first"},
                                                  {"const": True}]
    assert schema["properties"]["question_3"]["enum"] == ["x", "y"]
    assert schema["properties"]["s"]["x-levels"] == {"0": "low", "1": "high: a lot"}
    assert schema["properties"]["g"]["x-max-tokens"] == 7
    assert req["options"] == {"temperature": 0.5, "seed": 3}
    plan = deg.compile_schema(schema)
    modes = {f.pointer: f.mode for f in plan.fields}
    assert modes == {"/p": "decide.noul", "/c": "decide.choice", "/question_3": "decide.choice",
                     "/s": "decide.score", "/e": "extract.span", "/g": "generate"}


def test_decisions_response_mapping():
    qs, req = openai_decisions.parse({"model": "deg-latest", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "hello"},
                                     {"type": "input_json", "data": {"a": 1}}]}],
        "questions": [
            {"type": "predicate", "instructions": "?"},
            {"type": "score", "name": "s", "instructions": "?",
             "levels": [{"label": "lo"}, {"label": "hi"}]}]}, NAMES.decisions)
    assert req["context"] == 'hello\n{"a": 1}'
    fill = {"value": {"question_1": True, "s": 1},
            "meta": {"/question_1": {"mode": "decide.noul", "probability": 0.75},
                     "/s": {"mode": "decide.score", "probability": 0.6, "confidence": 0.2,
                            "probabilities": [0.4, 0.6], "expected": 0.6}},
            "usage": {"prompt_tokens": 11, "generated_tokens": 0}}
    r = openai_decisions.response(qs, fill, NAMES.id)
    assert r["answers"][0] == {"type": "predicate", "name": None, "probability": 0.75}
    assert r["answers"][1] == {"type": "score", "name": "s", "score": 0.6, "confidence": 0.2,
                               "probabilities": [{"value": 0, "label": "lo", "probability": 0.4},
                                                 {"value": 1, "label": "hi",
                                                  "probability": 0.6}]}
    assert r["usage"] == {"input_tokens": 11, "input_tokens_details": {
        "cache_write_tokens": 0, "cached_tokens": 0}, "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 11}


@pytest.mark.parametrize("body,param", [
    ({"model": "gpt-6-luna", "input": "x"}, "questions"),
    ({"model": "gpt-5", "input": "x", "questions": [{"type": "predicate",
                                                     "instructions": "?"}]}, "model"),
    ({"model": "gpt-6-luna", "input": "x", "questions": [{"type": "rank",
                                                          "instructions": "?"}]},
     "questions[0].type"),
    ({"model": "gpt-6-luna", "input": "x", "questions": [
        {"type": "choice", "instructions": "?", "choices": [{"value": 1}]}]},
     "questions[0].choices[0]"),
    ({"model": "gpt-6-luna", "input": "x", "questions": [
        {"type": "score", "instructions": "?", "levels": [{"label": str(i)} for i in range(12)]}]},
     "questions[0].levels"),
    ({"model": "gpt-6-luna", "input": "x", "questions": [
        {"type": "predicate", "instructions": "?"}], "options": {"top_k": 3}}, "options.top_k"),
    ({"model": "gpt-6-luna", "input": [{"type": "function_call", "name": "f",
                                        "arguments": "{}", "call_id": "c"}],
      "questions": [{"type": "predicate", "instructions": "?"}]}, "input[0]"),
    ({"model": "gpt-6-luna", "input": "x", "questions": [{"type": "predicate",
                                                          "instructions": "?"}] * 401},
     "questions"),
])
def test_decisions_errors(body, param):
    with pytest.raises(ApiError) as e:
        openai_decisions.parse(body, NAMES.decisions)
    assert e.value.http_status == 400
    err = e.value.body["error"]
    assert err["type"] == "invalid_request_error" and err["param"] == param
    assert set(err) == {"message", "type", "param", "code"}


def test_jev_schema_and_response():
    qs, req = jev.parse({"state": {"t": "x"}, "model": "clef-flash", "questions": {
        "n": {"type": "noul", "instructions": {"question": "Is `t` ok?"},
              "criteria": {"true": "yes it is", "false": "no"}, "ignored": 1},
        "c": {"type": "choice", "instructions": "?", "criteria": ["a", "b"]},
        "s": {"type": "score", "instructions": "?", "criteria": ["lo", "mid", "hi"]}}},
        NAMES.systemone)
    p = req["schema"]["properties"]
    assert p["n"]["description"] == '{"question": "Is `t` ok?"}\nYes means: yes it is\nNo means: no'
    assert p["c"] == {"enum": ["a", "b"], "description": "?"}
    assert p["s"]["maximum"] == 2 and p["s"]["x-levels"] == {"0": "lo", "1": "mid", "2": "hi"}
    assert req["context"] == {"t": "x"}
    fill = {"value": {"n": False, "c": "b", "s": 2},
            "meta": {"/n": {"probability": 0.25},
                     "/c": {"probabilities": [0.1, 0.9], "confidence": 0.8},
                     "/s": {"probabilities": [0.1, 0.2, 0.7], "confidence": 0.55,
                            "expected": 1.6}},
            "usage": {"prompt_tokens": 9, "generated_tokens": 0}}
    r = jev.response(qs, fill, NAMES.id)
    assert r == {"model": NAMES.id, "usage": {"input_tokens": 9, "output_tokens": 0},
                 "answers": {
                     "n": {"type": "noul", "noul": 0.25},
                     "c": {"type": "choice", "choice": "b", "confidence": 0.8,
                           "probabilities": {"a": 0.1, "b": 0.9}},
                     "s": {"type": "score", "score": 1.6, "confidence": 0.55,
                           "legend": {"0": "lo", "1": "mid", "2": "hi"},
                           "probabilities": {"0": 0.1, "1": 0.2, "2": 0.7}}}}


def test_jev_errors():
    ok = {"a": {"type": "noul", "instructions": "?"}}

    def err(body):
        with pytest.raises(ApiError) as e:
            jev.parse(body, NAMES.systemone)
        return e.value.http_status, e.value.body
    usage = {"detail": {"error_type": "api_usage_error", "message": "Invalid request."}}
    assert err({"state": "x", "model": "jev-latest", "questions": ok, "x": 1}) == (400, usage)
    assert err({"state": "x", "model": "jev-latest",
                "questions": {"a": {"type": "yesno", "instructions": "?"}}}) == (400, usage)
    assert err({"state": "x", "model": "gpt-6-luna", "questions": ok}) == (
        400, {"detail": "Unknown model: gpt-6-luna"})
    assert err({"state": "x", "model": "jev-latest", "questions": {"c": {
        "type": "choice", "instructions": "?", "criteria": {str(i): None for i in range(256)}}}}) \
        == (400, {"detail": "Too many choices. Must have at most 255 choices."})
    assert err({"state": "x", "model": "jev-latest", "questions": {"s": {
        "type": "score", "instructions": "?", "criteria": [str(i) for i in range(11)]}}}) \
        == (400, {"detail": "Too many levels. Must have at most 10 levels."})
    st, b = err({"model": "jev-latest", "questions": ok})
    assert st == 422 and b["detail"] == [{"type": "missing", "loc": ["body", "state"],
                                          "msg": "Field required",
                                          "input": {"model": "jev-latest", "questions": ok}}]
    st, b = err({"state": "x", "model": "jev-latest", "questions": {}})
    assert st == 422 and b["detail"][0]["type"] == "too_short"
    st, b = err({"state": "x", "model": "jev-latest", "questions": {"a": {"type": "noul"}}})
    assert st == 422 and b["detail"][0]["loc"] == ["body", "questions", "a", "noul",
                                                   "instructions"]


def test_model_free_requests_need_no_fill():
    qs, req = jev.parse({"state": "x", "model": "jev-latest", "questions": {
        "c": {"type": "choice", "instructions": "?", "criteria": {"only": None}}}},
        NAMES.systemone)
    assert req is None
    r = jev.response(qs, None, NAMES.id)
    assert r["answers"]["c"] == {"type": "choice", "choice": "only", "confidence": 1.0,
                                 "probabilities": {"only": 1.0}}
    assert r["usage"] == {"input_tokens": 0, "output_tokens": 0}
