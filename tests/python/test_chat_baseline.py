"""The per-field chat baseline (deg.baseline.chat): questions, the answer parser
and the value assembly with a scripted model; one real-model check that the
trunk + fork path answers exactly what Model.generate does."""
import pytest

import deg
from deg._native import has
from deg.baseline.chat import (ChatBaselineSystem, assemble, list_question, parse_answer,
                               parse_list, question_for)

pytestmark = pytest.mark.skipif(not has("deg_plan_compile"), reason="libdeg has no schema compiler")

SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "upstream_name": {"type": ["string", "null"], "description": "name of the upstream project"},
        "year": {"type": ["integer", "null"]},
        "price": {"type": "number"},
        "ok": {"type": "boolean", "description": "is it ok?"},
        "kind": {"enum": ["a", "b-plus", None]},
        "stars": {"type": "integer", "minimum": 1, "maximum": 5, "x-levels": {"1": "bad", "5": "great"}},
        "when": {"type": "string", "format": "date"},
        "mail": {"type": ["string", "null"], "format": "email"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "people": {"type": "array", "maxItems": 3, "items": {
            "type": "object", "properties": {"name": {"type": "string"},
                                             "age": {"type": "integer", "minimum": 0}},
            "required": ["name"]}},
        "note": {"type": "string"},
    },
    "required": ["title", "upstream_name", "year", "ok", "kind", "stars"],
}


def fields():
    return {f.pointer: f for f in deg.compile_schema(SCHEMA).fields}


def test_questions():
    f = fields()
    assert question_for(f["/upstream_name"], "upstream_name") == (
        "What is the upstream name (name of the upstream project)? Answer with the value only, "
        "as written in the document. If the document does not say, answer none.")
    assert question_for(f["/ok"], "ok") == "Is it ok? Answer yes or no."
    assert question_for(f["/kind"], "kind") == (
        "What is the kind? Choose one of: a, b-plus, none. Answer with the option only.")
    assert question_for(f["/stars"], "stars") == (
        "What is the stars? Answer with a whole number from 1 to 5 (1 = bad, 5 = great).")
    assert question_for(f["/mail"], "mail").startswith("What is the mail? Answer with the e-mail address only")
    assert question_for(f["/title"], "title", "In item 2 of the x: ") == (
        "In item 2 of the x: What is the title? Answer with the value only, as written in the document.")
    a = deg.compile_schema(SCHEMA).arrays[0]
    assert list_question("tags", a) == ("List every tags. Answer with one per line and nothing "
                                        "else; answer none if there is none.")


def test_parse_answer():
    f = fields()
    cases = [
        ("/title", 'The title is "Kit 2".', "Kit 2"),               # the quoted part
        ("/title", "The version of the kit is 1.6.5.", "1.6.5"),   # lead-in and "." removed
        ("/title", "Title: Kit", "Kit"),
        ("/title", "  Kit\nmore text", "Kit"),                     # first line
        ("/upstream_name", "None.", None),
        ("/year", "The earliest year mentioned is 2019.", 2019),
        ("/year", "about two thousand", None),
        ("/price", "It costs 1,234.50 EUR", 1234.5),
        ("/ok", "Yes, it is.", True), ("/ok", "no", False), ("/ok", "maybe", None),
        ("/kind", "B-PLUS", "b-plus"), ("/kind", "The kind is b-plus.", "b-plus"),
        ("/kind", "c", None), ("/kind", "a or b-plus", "b-plus"),   # the longest option named
        ("/stars", "I'd say 4 stars", 4), ("/stars", "9", None),
        ("/when", "It was on May 5, 2020.", "2020-05-05"),
        ("/mail", "Write to <jo@x.example.org>.", "jo@x.example.org"),
        ("/mail", "The document does not say", None),
    ]
    for ptr, ans, want in cases:
        got = parse_answer(f[ptr], ans)
        assert got == want and type(got) is type(want), (ptr, ans, got)
    # the null option "none" is a chosen value, not "no answer"
    assert parse_answer(f["/kind"], "none") is not None
    assert parse_list(f["/tags/*"], "The tags are:\n1. red\n- blue\n* red\nnone\n\ngreen", 8) == \
        ["red", "blue", "green"]
    assert parse_list(f["/tags/*"], "a\nb\nc", 2) == ["a", "b"]


def test_assemble_with_scripted_answers():
    answers = {
        "title": 'It is "Kit"', "upstream name": "none", "year": "2001", "price": "no idea",
        "Is it ok?": "Yes", "kind": "none", "stars": "5", "when": "unknown", "mail": "none",
        "List every tags": "x\ny", "How many people": "There are 7 people.",
        "In item 1 of the people: What is the name?": "Ann",
        "In item 1 of the people: What is the age?": "40",
        "In item 2 of the people: What is the name?": "Bo",
        "In item 2 of the people: What is the age?": "-3",   # fails minimum 0: no value, omitted
        "In item 3 of the people: What is the name?": "none",  # required, no value: null
        "In item 3 of the people: What is the age?": "none",
        "note": "none",
    }
    asked = []

    def ask(q, max_tokens=None):
        asked.append((q, max_tokens))
        for k in sorted(answers, key=len, reverse=True):
            if k in q:
                return answers[k]
        raise AssertionError(f"unexpected question {q!r}")
    value, raw = assemble(SCHEMA, ask, max_items=8, max_list_tokens=77)
    assert value == {"title": "Kit", "upstream_name": None, "year": 2001, "ok": True, "kind": None,
                     "stars": 5, "mail": None, "tags": ["x", "y"],
                     "people": [{"name": "Ann", "age": 40}, {"name": "Bo"}, {"name": None}]}
    # price / when / note: optional, no value -> left out; people: 7 clamped to maxItems 3
    assert raw["/people"] == "There are 7 people." and raw["/people/1/age"] == "-3"
    assert [m for q, m in asked if q.startswith("List every")] == [77]
    assert len(asked) == 10 + 1 + 1 + 3 * 2  # 10 top-level leaves, tags, count, 3 items x 2 leaves
    assert deg.validate(SCHEMA, value)  # item 3's required name is null: the response is invalid


def test_trunk_fork_answers_equal_generate(model_path):
    sys_ = ChatBaselineSystem(model_path, max_answer_tokens=12)
    doc = "Package: quux\nVersion: 1.2-3\nMaintainer: Jane Roe <jane@example.org>\n"
    schema = {"type": "object", "properties": {"version": {"type": "string"},
                                               "maintainer_email": {"type": "string", "format": "email"}}}
    out = sys_(doc, schema)
    f = {x.pointer: x for x in deg.compile_schema(schema).fields}
    for ptr, key in (("/version", "version"), ("/maintainer_email", "maintainer_email")):
        g = sys_.model.generate([{"role": "user", "content": f"{doc}\n\n{question_for(f[ptr], key)}"}],
                                max_tokens=12)
        assert out["raw"][ptr] == g.text
    assert out["usage"]["generated_tokens"] > 0 and out["meta"] == {}
