#!/usr/bin/env python3
"""Write tests/goldens/schema_cases.json: the table-driven schema compiler suite.

The expectations below are written by hand from the deg contract
(/work/shared/spec/deg-contract.md §2-§6), not produced by deg: for each case either
the expected plan (a subset of each field's attributes, in schema order, and of each
array node) or the expected error list (every problem as {loc, msg}; msg is a
substring of deg's message, loc must match exactly, and the count must match).

Each case also records python-jsonschema's own verdict on whether the schema is a
valid JSON Schema for its draft (validator_for(schema).check_schema): the C test
checks that deg rejects every schema python-jsonschema rejects (§5 last bullet).

Run: /tmp/venv/bin/python tests/goldens/gen_schema_cases.py
"""
import importlib.metadata
import json
from pathlib import Path

import jsonschema
from jsonschema.validators import validator_for

OUT = Path(__file__).resolve().parent / "schema_cases.json"
CASES = []


def root(props, required=None, **kw):
    s = {"type": "object", "properties": props}
    if required is not None:
        s["required"] = required
    s.update(kw)
    return s


def plan(name, schema, fields, arrays=None):
    c = {"name": name, "schema": schema, "fields": fields}
    if arrays is not None:
        c["arrays"] = arrays
    CASES.append(c)


def err(name, schema, *errors):
    CASES.append({"name": name, "schema": schema,
                  "errors": [{"loc": l, "msg": m} for l, m in errors]})


def one(name, sub, expect, required=False):
    """A root with one property "a"; expect = the field's expected attributes."""
    plan(name, root({"a": sub}, ["a"] if required else None), [dict({"pointer": "/a"}, **expect)])


def one_err(name, sub, *errors):
    err(name, root({"a": sub}), *[("/properties/a" + l, m) for l, m in errors])


# ---------------------------------------------------------------- §3 rows
one("enum_strings", {"enum": ["billing", "tech", "sales"]},
    {"mode": "decide.choice", "type": "string", "options": ["billing", "tech", "sales"],
     "option_descriptions": [None, None, None], "nullable": False})
one("enum_mixed_scalars_with_null", {"enum": [1, "a", True, None, 2.5]},
    {"mode": "decide.choice", "type": "any", "options": [1, "a", True, None, 2.5],
     "nullable": True, "on_null": "null"})
one("enum_integers_typed", {"type": "integer", "enum": [1, 2, 3]},
    {"mode": "decide.choice", "type": "integer", "options": [1, 2, 3]})
one("enum_numbers_int_and_real", {"enum": [1, 2.5]}, {"mode": "decide.choice", "type": "number"})
one("enum_booleans", {"enum": [True, False]}, {"mode": "decide.choice", "type": "boolean"})
one("enum_two_values_min", {"enum": ["a", "b"]}, {"mode": "decide.choice", "options": ["a", "b"]})
one("enum_255_values_max", {"enum": [f"v{i}" for i in range(255)]}, {"mode": "decide.choice"})
one("enum_typed_nullable", {"type": ["string", "null"], "enum": ["a", "b", None]},
    {"mode": "decide.choice", "options": ["a", "b", None], "nullable": True})
one("enum_null_only_nullable_via_value", {"type": "string", "enum": ["x", "y"]},
    {"nullable": False, "on_null": "omit"})
one("enum_required_forbid", {"enum": ["x", "y"]}, {"required": True, "on_null": "forbid"},
    required=True)
one("oneOf_const_descriptions",
    {"oneOf": [{"const": "refund", "description": "money back"},
               {"const": "replace", "description": "send a new one"},
               {"const": "none"}]},
    {"mode": "decide.choice", "options": ["refund", "replace", "none"],
     "option_descriptions": ["money back", "send a new one", None]})
one("anyOf_enum_branches",
    {"anyOf": [{"enum": ["a", "b"], "description": "first"}, {"enum": ["c"], "description": "second"}]},
    {"mode": "decide.choice", "options": ["a", "b", "c"],
     "option_descriptions": ["first", "first", "second"]})
one("anyOf_const_typed_branches",
    {"anyOf": [{"type": "integer", "const": 1}, {"type": "integer", "const": 2}]},
    {"mode": "decide.choice", "options": [1, 2], "type": "integer"})
one("oneOf_const_plus_null_branch",
    {"oneOf": [{"const": "yes"}, {"const": "no"}, {"type": "null", "description": "unknown"}]},
    {"mode": "decide.choice", "options": ["yes", "no", None],
     "option_descriptions": [None, None, "unknown"], "nullable": True})
one("oneOf_title_kept_as_instructions",
    {"title": "Pick", "description": "Pick one", "oneOf": [{"const": 1}, {"const": 2}]},
    {"title": "Pick", "description": "Pick one"})
one("nullable_anyOf_around_choice",
    {"anyOf": [{"oneOf": [{"const": "a", "description": "A"}, {"const": "b"}]}, {"type": "null"}]},
    {"mode": "decide.choice", "options": ["a", "b", None], "option_descriptions": ["A", None, None],
     "nullable": True})
one("nullable_anyOf_around_enum", {"anyOf": [{"enum": [1, 2]}, {"type": "null"}]},
    {"mode": "decide.choice", "options": [1, 2, None], "nullable": True})
one("boolean_noul", {"type": "boolean"}, {"mode": "decide.noul", "type": "boolean", "options": None})
one("boolean_nullable_choice", {"type": ["boolean", "null"]},
    {"mode": "decide.choice", "options": [True, False, None], "nullable": True, "type": "boolean"})
one("boolean_nullable_reversed_order", {"type": ["null", "boolean"]},
    {"mode": "decide.choice", "options": [True, False, None]})
one("boolean_nullable_anyOf", {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
    {"mode": "decide.choice", "options": [True, False, None], "nullable": True})
one("boolean_required_noul", {"type": "boolean"}, {"mode": "decide.noul", "required": True,
                                                   "on_null": "forbid"}, required=True)
one("integer_1_to_5_score", {"type": "integer", "minimum": 1, "maximum": 5},
    {"mode": "decide.score", "levels": [1, 2, 3, 4, 5], "level_labels": [None] * 5,
     "null_outcome": False, "options": None})
one("integer_0_to_10_score_11_levels", {"type": "integer", "minimum": 0, "maximum": 10},
    {"mode": "decide.score", "levels": list(range(11))})
one("integer_0_to_11_is_number", {"type": "integer", "minimum": 0, "maximum": 11},
    {"mode": "extract.number", "levels": None, "type": "integer"})
one("integer_0_to_100_step_25", {"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 25},
    {"mode": "decide.score", "levels": [0, 25, 50, 75, 100]})
one("integer_0_to_100_step_10", {"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 10},
    {"mode": "decide.score", "levels": list(range(0, 101, 10))})
one("integer_0_to_100_step_5_number", {"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 5},
    {"mode": "extract.number"})
one("integer_exclusive_bounds", {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 4},
    {"mode": "decide.score", "levels": [1, 2, 3]})
one("integer_exclusive_and_inclusive", {"type": "integer", "minimum": 0, "exclusiveMinimum": 1,
                                        "maximum": 3},
    {"mode": "decide.score", "levels": [2, 3]})
one("integer_fractional_bounds", {"type": "integer", "minimum": 0.5, "maximum": 3.5},
    {"mode": "decide.score", "levels": [1, 2, 3]})
one("integer_multipleOf_half", {"type": "integer", "minimum": 0, "maximum": 3, "multipleOf": 0.5},
    {"mode": "decide.score", "levels": [0, 1, 2, 3]})
one("integer_multipleOf_1_5", {"type": "integer", "minimum": 0, "maximum": 9, "multipleOf": 1.5},
    {"mode": "decide.score", "levels": [0, 3, 6, 9]})
one("integer_negative_levels", {"type": "integer", "minimum": -2, "maximum": 2},
    {"mode": "decide.score", "levels": [-2, -1, 0, 1, 2]})
one("integer_two_levels", {"type": "integer", "minimum": 0, "maximum": 1},
    {"mode": "decide.score", "levels": [0, 1]})
one("integer_only_minimum_number", {"type": "integer", "minimum": 1}, {"mode": "extract.number"})
one("integer_only_maximum_number", {"type": "integer", "maximum": 5}, {"mode": "extract.number"})
one("integer_unbounded_number", {"type": "integer"}, {"mode": "extract.number", "type": "integer"})
one("integer_wide_range_number", {"type": "integer", "minimum": 0, "maximum": 1000000000},
    {"mode": "extract.number"})
one("integer_wide_range_big_step_score",
    {"type": "integer", "minimum": 0, "maximum": 1000000000, "multipleOf": 250000000},
    {"mode": "decide.score", "levels": [0, 250000000, 500000000, 750000000, 1000000000]})
one("number_bounded_is_number", {"type": "number", "minimum": 1, "maximum": 5},
    {"mode": "extract.number", "type": "number", "constraints": {"minimum": 1, "maximum": 5}})
one("number_plain", {"type": "number"}, {"mode": "extract.number", "constraints": {}})
one("number_constraints_kept",
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1.5, "multipleOf": 0.25},
    {"constraints": {"exclusiveMinimum": 0, "exclusiveMaximum": 1.5, "multipleOf": 0.25}})
one("integer_score_nullable", {"type": ["integer", "null"], "minimum": 1, "maximum": 3},
    {"mode": "decide.score", "levels": [1, 2, 3], "null_outcome": True, "nullable": True,
     "on_null": "null"})
one("integer_score_nullable_oneOf",
    {"oneOf": [{"type": "null"}, {"type": "integer", "minimum": 1, "maximum": 3}]},
    {"mode": "decide.score", "null_outcome": True, "nullable": True})
one("integer_number_nullable", {"type": ["integer", "null"]},
    {"mode": "extract.number", "nullable": True, "on_null": "null", "null_outcome": False})
one("x_levels_labels",
    {"type": "integer", "minimum": 0, "maximum": 2, "x-levels": {"0": "calm", "2": "furious"}},
    {"mode": "decide.score", "levels": [0, 1, 2], "level_labels": ["calm", None, "furious"]})
one("x_levels_all_labeled",
    {"type": "integer", "minimum": 1, "maximum": 2, "x-levels": {"1": "no", "2": "yes"}},
    {"level_labels": ["no", "yes"]})
one("string_date", {"type": "string", "format": "date"},
    {"mode": "extract.date", "format": "date", "type": "string"})
one("string_date_time", {"type": "string", "format": "date-time"},
    {"mode": "extract.date", "format": "date-time"})
one("string_email", {"type": "string", "format": "email"}, {"mode": "extract.span", "format": "email"})
one("string_uri", {"type": "string", "format": "uri"}, {"mode": "extract.span", "format": "uri"})
one("string_uuid", {"type": "string", "format": "uuid"}, {"mode": "extract.span", "format": "uuid"})
one("string_span", {"type": "string"}, {"mode": "extract.span", "format": None, "constraints": {}})
one("string_span_constraints", {"type": "string", "minLength": 2, "maxLength": 8, "pattern": "^[A-Z]+-\\d+$"},
    {"mode": "extract.span", "constraints": {"minLength": 2, "maxLength": 8, "pattern": "^[A-Z]+-\\d+$"}})
one("string_nullable_span", {"type": ["string", "null"]},
    {"mode": "extract.span", "nullable": True, "on_null": "null"})
one("string_nullable_anyOf", {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
    {"mode": "extract.date", "nullable": True, "on_null": "null"})
one("string_optional_omit", {"type": "string"}, {"required": False, "nullable": False, "on_null": "omit"})
one("string_required_forbid", {"type": "string"}, {"required": True, "on_null": "forbid"}, required=True)
one("string_required_nullable_null", {"type": ["string", "null"]},
    {"required": True, "nullable": True, "on_null": "null"}, required=True)
one("number_required_forbid", {"type": "number"}, {"on_null": "forbid"}, required=True)
one("date_required_nullable", {"type": ["string", "null"], "format": "date"},
    {"mode": "extract.date", "on_null": "null"}, required=True)
one("title_description_kept", {"type": "string", "title": "Order id", "description": "The order number"},
    {"title": "Order id", "description": "The order number"})
one("annotations_allowed",
    {"type": "string", "default": "x", "examples": ["a"], "$comment": "c", "readOnly": True,
     "writeOnly": False, "deprecated": False, "$anchor": "orderId"},
    {"mode": "extract.span"})
one("string_generate", {"type": "string", "x-generate": True},
    {"mode": "generate", "type": "string", "max_tokens": None})
one("string_generate_constraints",
    {"type": "string", "x-generate": True, "minLength": 10, "maxLength": 200, "pattern": "^[A-Z]"},
    {"mode": "generate", "constraints": {"minLength": 10, "maxLength": 200, "pattern": "^[A-Z]"}})
one("string_generate_max_tokens", {"type": "string", "x-generate": True, "x-max-tokens": 40},
    {"mode": "generate", "max_tokens": 40})
one("string_generate_false_is_span", {"type": "string", "x-generate": False}, {"mode": "extract.span"})
one("string_generate_required", {"type": "string", "x-generate": True},
    {"mode": "generate", "on_null": "forbid"}, required=True)

# arrays
plan("array_of_strings", root({"tags": {"type": "array", "items": {"type": "string"}}}),
     [{"pointer": "/tags/*", "path": ["tags", "*"], "mode": "extract.span", "required": True,
       "on_null": "forbid", "array": 0}],
     [{"pointer": "/tags", "min_items": 0, "max_items": None, "unique_items": False,
       "first_field": 0, "n_fields": 1, "generate": False}])
plan("array_bounds", root({"t": {"type": "array", "items": {"type": "integer"}, "minItems": 1,
                                 "maxItems": 5, "uniqueItems": True}}),
     [{"pointer": "/t/*", "mode": "extract.number"}],
     [{"min_items": 1, "max_items": 5, "unique_items": True}])
plan("array_of_objects",
     root({"line_items": {"type": "array", "items": root(
         {"name": {"type": "string"}, "qty": {"type": "integer"},
          "kind": {"enum": ["a", "b"]}}, ["name"])}}),
     [{"pointer": "/line_items/*/name", "path": ["line_items", "*", "name"], "mode": "extract.span",
       "required": True, "on_null": "forbid"},
      {"pointer": "/line_items/*/qty", "mode": "extract.number", "required": False, "on_null": "omit"},
      {"pointer": "/line_items/*/kind", "mode": "decide.choice"}],
     [{"pointer": "/line_items", "first_field": 0, "n_fields": 3}])
plan("array_nested",
     root({"m": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}}),
     [{"pointer": "/m/*/*", "path": ["m", "*", "*"], "array": 1}],
     [{"pointer": "/m", "parent_array": None}, {"pointer": "/m/*", "parent_array": 0}])
plan("array_of_enum_items", root({"c": {"type": "array", "items": {"enum": ["r", "g", "b"]}}}),
     [{"pointer": "/c/*", "mode": "decide.choice", "options": ["r", "g", "b"]}])
plan("array_item_nullable", root({"c": {"type": "array", "items": {"type": ["string", "null"]}}}),
     [{"pointer": "/c/*", "nullable": True, "on_null": "null"}])
plan("array_generate", root({"ideas": {"type": "array", "x-generate": True, "x-max-tokens": 16,
                                       "items": {"type": "string", "maxLength": 80}}}),
     [{"pointer": "/ideas/*", "mode": "generate", "max_tokens": 16,
       "constraints": {"maxLength": 80}}],
     [{"pointer": "/ideas", "generate": True}])
plan("array_generate_item_budget_wins",
     root({"ideas": {"type": "array", "x-generate": True, "x-max-tokens": 16,
                     "items": {"type": "string", "x-max-tokens": 8}}}),
     [{"pointer": "/ideas/*", "mode": "generate", "max_tokens": 8}])
plan("array_items_generate_flag",
     root({"ideas": {"type": "array", "items": {"type": "string", "x-generate": True}}}),
     [{"pointer": "/ideas/*", "mode": "generate"}], [{"generate": False}])
plan("array_title_description",
     root({"l": {"type": "array", "title": "Lines", "description": "Each line",
                 "items": {"type": "string", "title": "Line"}}}),
     [{"title": "Line", "description": None}], [{"title": "Lines", "description": "Each line"}])
plan("array_optional_and_required",
     root({"a": {"type": "array", "items": {"type": "string"}},
           "b": {"type": "array", "items": {"type": "string"}}}, ["b"]),
     [{"pointer": "/a/*"}, {"pointer": "/b/*"}], [{"required": False}, {"required": True}])

# objects
plan("object_order_kept",
     root({"z": {"type": "string"}, "a": {"type": "boolean"}, "m": {"type": "number"}}),
     [{"pointer": "/z"}, {"pointer": "/a"}, {"pointer": "/m"}])
plan("object_nested_depth_first",
     root({"a": root({"b": {"type": "string"}, "c": root({"d": {"type": "boolean"}})}),
           "e": {"type": "number"}}),
     [{"pointer": "/a/b"}, {"pointer": "/a/c/d", "path": ["a", "c", "d"]}, {"pointer": "/e"}])
plan("object_required_nested",
     root({"a": root({"b": {"type": "string"}}, ["b"])}),
     [{"pointer": "/a/b", "required": True, "on_null": "forbid"}])
plan("object_additional_false", root({"a": {"type": "string"}}, additionalProperties=False),
     [{"pointer": "/a"}])
plan("object_additional_true", root({"a": {"type": "string"}}, additionalProperties=True),
     [{"pointer": "/a"}])
plan("object_empty_properties", root({}), [])
plan("object_no_properties", {"type": "object"}, [])
plan("key_escaping", root({"a/b": {"type": "string"}, "c~d": {"type": "string"}}),
     [{"pointer": "/a~1b", "path": ["a/b"]}, {"pointer": "/c~0d", "path": ["c~d"]}])
plan("key_star_literal", root({"*": {"type": "string"}}), [{"pointer": "/*", "path": ["*"]}])
plan("key_unicode", root({"prénom": {"type": "string"}}), [{"pointer": "/prénom"}])
plan("mixed_example",
     root({"department": {"enum": ["billing", "tech"]}, "urgent": {"type": "boolean"},
           "anger": {"type": "integer", "minimum": 0, "maximum": 4},
           "order_id": {"type": "string"}, "due": {"type": ["string", "null"], "format": "date"},
           "reply": {"type": "string", "x-generate": True}}, ["department", "order_id"]),
     [{"pointer": "/department", "mode": "decide.choice"},
      {"pointer": "/urgent", "mode": "decide.noul"},
      {"pointer": "/anger", "mode": "decide.score"},
      {"pointer": "/order_id", "mode": "extract.span", "on_null": "forbid"},
      {"pointer": "/due", "mode": "extract.date", "on_null": "null"},
      {"pointer": "/reply", "mode": "generate", "on_null": "omit"}])

# $ref
plan("ref_defs", dict(root({"a": {"$ref": "#/$defs/D"}}), **{"$defs": {"D": {"type": "boolean"}}}),
     [{"pointer": "/a", "mode": "decide.noul", "schema_loc": "/$defs/D"}])
plan("ref_definitions",
     dict(root({"a": {"$ref": "#/definitions/D"}}), definitions={"D": {"enum": [1, 2]}}),
     [{"pointer": "/a", "mode": "decide.choice", "options": [1, 2]}])
plan("ref_sibling_annotations_override",
     dict(root({"a": {"$ref": "#/$defs/D", "title": "Mine", "description": "used here"}}),
          **{"$defs": {"D": {"type": "string", "title": "Theirs", "description": "generic"}}}),
     [{"title": "Mine", "description": "used here", "mode": "extract.span"}])
plan("ref_target_annotations_kept",
     dict(root({"a": {"$ref": "#/$defs/D"}}),
          **{"$defs": {"D": {"type": "string", "title": "Theirs"}}}),
     [{"title": "Theirs"}])
plan("ref_chain",
     dict(root({"a": {"$ref": "#/$defs/A", "title": "outer"}}),
          **{"$defs": {"A": {"$ref": "#/$defs/B", "title": "middle", "description": "mid"},
                       "B": {"type": "string", "title": "inner"}}}),
     [{"title": "outer", "description": "mid"}])
plan("ref_to_property", root({"a": {"type": "integer", "minimum": 1, "maximum": 3},
                              "b": {"$ref": "#/properties/a"}}),
     [{"pointer": "/a", "mode": "decide.score"}, {"pointer": "/b", "mode": "decide.score"}])
plan("ref_pointer_escapes",
     dict(root({"a": {"$ref": "#/$defs/x~1y"}, "b": {"$ref": "#/$defs/m~0n"},
                "c": {"$ref": "#/$defs/p%25q"}}),
          **{"$defs": {"x/y": {"type": "string"}, "m~n": {"type": "boolean"},
                       "p%q": {"type": "number"}}}),
     [{"mode": "extract.span"}, {"mode": "decide.noul"}, {"mode": "extract.number"}])
plan("ref_object", dict(root({"addr": {"$ref": "#/$defs/Addr"}}),
                        **{"$defs": {"Addr": root({"city": {"type": "string"}}, ["city"])}}),
     [{"pointer": "/addr/city", "required": True, "schema_loc": "/$defs/Addr/properties/city"}])
plan("ref_used_twice", dict(root({"a": {"$ref": "#/$defs/S"}, "b": {"$ref": "#/$defs/S"}}),
                            **{"$defs": {"S": {"type": "string"}}}),
     [{"pointer": "/a"}, {"pointer": "/b"}])
plan("ref_in_items", dict(root({"l": {"type": "array", "items": {"$ref": "#/$defs/I"}}}),
                          **{"$defs": {"I": root({"n": {"type": "string"}})}}),
     [{"pointer": "/l/*/n"}])
plan("ref_nullable_anyOf", dict(root({"a": {"anyOf": [{"$ref": "#/$defs/D"}, {"type": "null"}]}}),
                                **{"$defs": {"D": {"type": "string", "format": "email"}}}),
     [{"mode": "extract.span", "format": "email", "nullable": True, "on_null": "null"}])
plan("ref_root_object", {"$ref": "#/$defs/R", "$defs": {"R": root({"x": {"type": "boolean"}})}},
     [{"pointer": "/x", "mode": "decide.noul"}])
plan("ref_x_levels_sibling",
     dict(root({"a": {"$ref": "#/$defs/S", "x-levels": {"1": "low"}}}),
          **{"$defs": {"S": {"type": "integer", "minimum": 1, "maximum": 3}}}),
     [{"mode": "decide.score", "level_labels": ["low", None, None]}])
plan("ref_x_max_tokens_sibling",
     dict(root({"a": {"$ref": "#/$defs/G", "x-max-tokens": 12}}),
          **{"$defs": {"G": {"type": "string", "x-generate": True}}}),
     [{"mode": "generate", "max_tokens": 12}])
plan("unused_defs_ok", dict(root({"a": {"type": "string"}}),
                            **{"$defs": {"Tree": root({"kids": {"type": "array",
                                                                "items": {"$ref": "#/$defs/Tree"}}})}}),
     [{"pointer": "/a"}])
plan("draft7_schema", dict(root({"a": {"type": "number", "exclusiveMinimum": 0}}),
                           **{"$schema": "http://json-schema.org/draft-07/schema#"}),
     [{"constraints": {"exclusiveMinimum": 0}}])
plan("draft4_boolean_exclusive",
     dict(root({"a": {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 3}}),
          **{"$schema": "http://json-schema.org/draft-04/schema#"}),
     [{"mode": "decide.score", "levels": [1, 2, 3], "constraints": {"exclusiveMinimum": 0, "maximum": 3}}])
plan("draft2019_schema", dict(root({"a": {"type": "string"}}),
                              **{"$schema": "https://json-schema.org/draft/2019-09/schema"}),
     [{"mode": "extract.span"}])
plan("draft2020_explicit", dict(root({"a": {"type": "string"}}),
                                **{"$schema": "https://json-schema.org/draft/2020-12/schema"}),
     [{"mode": "extract.span"}])
plan("draft6_integral_real_lengths", dict(root({"a": {"type": "string", "maxLength": 5.0}}),
                                          **{"$schema": "http://json-schema.org/draft-06/schema#"}),
     [{"mode": "extract.span"}])
plan("root_annotations", dict(root({"a": {"type": "string"}}), title="T", description="D",
                              **{"$id": "https://example.com/s", "$comment": "x"}),
     [{"pointer": "/a"}])

# ---------------------------------------------------------------- §5 errors
for kw, val in [("allOf", [{"type": "string"}]), ("not", {"type": "integer"}),
                ("if", {"minLength": 1}), ("then", {}), ("else", {}), ("const", "x"),
                ("dependentSchemas", {}), ("dependentRequired", {}), ("dependencies", {}),
                ("patternProperties", {}), ("propertyNames", {}),
                ("unevaluatedProperties", False), ("minProperties", 1), ("maxProperties", 2),
                ("unevaluatedItems", False), ("prefixItems", [{}]), ("additionalItems", False),
                ("contains", {}), ("minContains", 1), ("maxContains", 2),
                ("$dynamicRef", "#x"), ("$dynamicAnchor", "x"), ("$recursiveRef", "#"),
                ("$recursiveAnchor", True), ("contentEncoding", "base64"),
                ("contentMediaType", "text/plain"), ("contentSchema", {})]:
    msg = "const is not supported" if kw == "const" else f'unsupported keyword "{kw}"'
    one_err(f"unsupported_{kw.lstrip('$')}", {"type": "string", kw: val}, (f"/{kw}", msg))
one_err("tuple_items", {"type": "array", "items": [{"type": "string"}]},
        ("/items", "tuple"))
one_err("anyOf_mixed_types", {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        ("/anyOf", "anyOf is supported only as"))
one_err("oneOf_three_way", {"oneOf": [{"type": "string"}, {"type": "null"}, {"type": "number"}]},
        ("/oneOf", "oneOf is supported only as"))
one_err("anyOf_and_oneOf", {"anyOf": [{"const": 1}, {"const": 2}], "oneOf": [{"const": 1}, {"const": 3}]},
        ("/oneOf", "not both"))
one_err("anyOf_sibling_keyword", {"anyOf": [{"type": "string"}, {"type": "null"}], "maxLength": 3},
        ("/maxLength", "only annotations may sit beside"))
one_err("anyOf_choice_duplicate", {"anyOf": [{"const": "a"}, {"const": "a"}]},
        ("/anyOf", "same value twice"))
one_err("anyOf_choice_one_option", {"anyOf": [{"const": "a"}]}, ("/anyOf", "give 1 options"))
one_err("anyOf_const_type_mismatch", {"anyOf": [{"type": "integer", "const": "a"}, {"const": 2}]},
        ("/anyOf/0/const", "does not match"))
one_err("union_type", {"type": ["string", "integer"]}, ("/type", "[X, \"null\"]"))
one_err("union_type_three", {"type": ["string", "integer", "null"]}, ("/type", "[X, \"null\"]"))
one_err("null_type_alone", {"type": "null"}, ("/type", "nothing to fill"))
one_err("format_unsupported", {"type": "string", "format": "ipv4"}, ("/format", "not supported"))
one_err("format_hostname", {"type": "string", "format": "hostname"}, ("/format", "not supported"))
one_err("ref_remote", {"$ref": "other.json#/x"}, ("/$ref", "not local"))
one_err("ref_http", {"$ref": "https://example.com/s.json"}, ("/$ref", "not local"))
one_err("ref_anchor_fragment", {"$ref": "#foo"}, ("/$ref", "plain-name"))
one_err("ref_missing_target", {"$ref": "#/$defs/nope"}, ("/$ref", "points to nothing"))
one_err("ref_bad_escape", {"$ref": "#/properties/a~2"}, ("/$ref", "bad JSON pointer escape"))
# a $ref is a URI reference (RFC 3986): '%' starts %XX, a space or '#' is percent-encoded,
# and only a fragment starting with "/" as written is a JSON pointer ("#%2F..." is not)
one_err("ref_bad_percent_escape", {"$ref": "#/$defs/a%p"}, ("/$ref", "bad percent-encoding"))
one_err("ref_fragment_space", {"$ref": "#/$defs/a b"}, ("/$ref", "not a URI reference"))
one_err("ref_encoded_slash_first", {"$ref": "#%2Fproperties%2Fb"}, ("/$ref", "plain-name"))
err("ref_array_index_leading_zero",
    root({"a": {"$ref": "#/properties/b/anyOf/00"},
          "b": {"anyOf": [{"type": "string"}, {"type": "null"}]}}),
    ("/properties/a/$ref", "not an array index"))
err("ref_sibling_keyword",
    dict(root({"a": {"$ref": "#/$defs/S", "maxLength": 3}}), **{"$defs": {"S": {"type": "string"}}}),
    ("/properties/a/maxLength", "siblings may only be annotations"))
err("ref_to_non_schema", root({"a": {"$ref": "#/required/0"}}, ["a"]),
    ("/properties/a/$ref", "not a schema"))
err("ref_recursive_root", root({"a": {"$ref": "#"}}), ("/properties/a/$ref", "recursive $ref"))
err("ref_recursive_mutual",
    dict(root({"a": {"$ref": "#/$defs/A"}}),
         **{"$defs": {"A": root({"b": {"$ref": "#/$defs/B"}}), "B": root({"a": {"$ref": "#/$defs/A"}})}}),
    ("/$defs/B/properties/a/$ref", "recursive $ref"))
err("ref_recursive_self_items",
    dict(root({"t": {"$ref": "#/$defs/T"}}),
         **{"$defs": {"T": root({"kids": {"type": "array", "items": {"$ref": "#/$defs/T"}}})}}),
    ("/$defs/T/properties/kids/items/$ref", "recursive $ref"))
one_err("unknown_keyword", {"type": "string", "maxLen": 3}, ("/maxLen", 'unknown keyword "maxLen"'))
one_err("unknown_keyword_foo", {"type": "string", "foo": 1}, ("/foo", "unknown keyword"))
one_err("unknown_x_typo", {"type": "string", "x-genrate": True}, ("/x-genrate", "unknown extension"))
one_err("unknown_x_other", {"type": "string", "x-foo": 1}, ("/x-foo", "unknown extension"))
for name, sub, kw in [("maxLength_on_integer", {"type": "integer", "maxLength": 3}, "maxLength"),
                      ("minLength_on_number", {"type": "number", "minLength": 1}, "minLength"),
                      ("pattern_on_boolean", {"type": "boolean", "pattern": "a"}, "pattern"),
                      ("format_on_integer", {"type": "integer", "format": "date"}, "format"),
                      ("minimum_on_string", {"type": "string", "minimum": 1}, "minimum"),
                      ("multipleOf_on_string", {"type": "string", "multipleOf": 2}, "multipleOf"),
                      ("items_on_string", {"type": "string", "items": {"type": "string"}}, "items"),
                      ("minItems_on_object", {"type": "object", "minItems": 1}, "minItems"),
                      ("uniqueItems_on_string", {"type": "string", "uniqueItems": True}, "uniqueItems"),
                      ("properties_on_string", {"type": "string", "properties": {}}, "properties"),
                      ("required_on_array", {"type": "array", "items": {"type": "string"},
                                             "required": ["a"]}, "required"),
                      ("additionalProperties_on_integer", {"type": "integer", "additionalProperties": False},
                       "additionalProperties"),
                      ("exclusiveMaximum_on_boolean", {"type": "boolean", "exclusiveMaximum": 3},
                       "exclusiveMaximum")]:
    one_err(name, sub, ("/" + kw, "does not apply to type"))
one_err("maxLength_on_enum", {"enum": ["a", "b"], "maxLength": 3}, ("/maxLength", "does not apply to an enum"))
one_err("enum_duplicate", {"enum": ["a", "b", "a"]}, ("/enum/2", "same value twice"))
one_err("enum_duplicate_numeric", {"enum": [1, 1.0]}, ("/enum/1", "same value twice"))
one_err("enum_wrong_type", {"type": "string", "enum": ["a", 2]}, ("/enum/1", "does not match"))
one_err("enum_null_not_in_type", {"type": "string", "enum": ["a", "b", None]}, ("/enum/2", "does not match"))
one_err("enum_integer_type_real", {"type": "integer", "enum": [1, 2.5]}, ("/enum/1", "does not match"))
one_err("enum_one_value", {"enum": ["only"]}, ("/enum", "1 value"))
one_err("enum_empty", {"enum": []}, ("/enum", "0 values"))
one_err("enum_256_values", {"enum": list(range(256))}, ("/enum", "256 values"))
one_err("enum_object_value", {"enum": [{"a": 1}, "b"]}, ("/enum/0", "must be scalars"))
one_err("enum_array_value", {"enum": [[1], "b"]}, ("/enum/0", "must be scalars"))
one_err("integer_range_one_value", {"type": "integer", "minimum": 3, "maximum": 3}, ("", "only one value"))
one_err("integer_range_empty", {"type": "integer", "minimum": 5, "maximum": 3}, ("", "no values"))
one_err("integer_range_exclusive_empty", {"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2},
        ("", "no values"))
one_err("integer_range_multiple_one", {"type": "integer", "minimum": 1, "maximum": 9, "multipleOf": 5},
        ("", "only one value"))
one_err("integer_range_fraction_empty", {"type": "integer", "minimum": 0.2, "maximum": 0.8}, ("", "no values"))
one_err("number_min_gt_max", {"type": "number", "minimum": 5, "maximum": 1}, ("", "admit no value"))
one_err("number_exclusive_equal", {"type": "number", "exclusiveMinimum": 2, "maximum": 2}, ("", "admit no value"))
one_err("number_exclusive_both_equal", {"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 1},
        ("", "admit no value"))
one_err("number_no_multiple", {"type": "number", "minimum": 0.1, "maximum": 0.9, "multipleOf": 1},
        ("", "no multiple"))
one_err("pattern_unclosed_group", {"type": "string", "pattern": "(abc"}, ("/pattern", "invalid pattern"))
one_err("pattern_bad_class", {"type": "string", "pattern": "[a-"}, ("/pattern", "at offset"))
one_err("pattern_bad_quantifier", {"type": "string", "pattern": "a{2,1}"}, ("/pattern", "invalid pattern"))
one_err("pattern_nothing_to_repeat", {"type": "string", "pattern": "*a"}, ("/pattern", "at offset 0"))
one_err("minLength_gt_maxLength", {"type": "string", "minLength": 5, "maxLength": 2}, ("/minLength", "admits no string"))
one_err("minItems_gt_maxItems", {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 1},
        ("/minItems", "admits no array"))
one_err("array_without_items", {"type": "array"}, ("", "needs an \"items\""))
one_err("nullable_object", {"type": ["object", "null"], "properties": {}}, ("/type", "nullable objects"))
one_err("nullable_array", {"type": ["array", "null"], "items": {"type": "string"}}, ("/type", "nullable arrays"))
one_err("nullable_object_anyOf", {"anyOf": [{"type": "object"}, {"type": "null"}]},
        ("/anyOf/0", "nullable objects"))
one_err("nullable_array_anyOf", {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        ("/anyOf/0", "nullable arrays"))
one_err("additionalProperties_schema", {"type": "object", "additionalProperties": {"type": "string"}},
        ("/additionalProperties", "true or false"))
one_err("additionalProperties_empty_schema", {"type": "object", "additionalProperties": {}},
        ("/additionalProperties", "true or false"))
err("required_not_in_properties", root({"a": {"type": "string"}}, ["a", "b"]), ("/required/1", '"b" is not in properties'))
err("required_without_properties", {"type": "object", "required": ["x"]}, ("/required/0", "not in properties"))
err("root_string", {"type": "string"}, ("", "root schema must be type: object"))
err("root_array", {"type": "array", "items": {"type": "string"}}, ("", "root schema must be type: object"))
err("root_nullable_object", {"type": ["object", "null"], "properties": {}},
    ("/type", "nullable objects"), ("", "root schema must be type: object"))
err("root_no_type", {"properties": {"a": {"type": "string"}}}, ("", "root schema must be type: object"))
err("root_enum", {"enum": [1, 2]}, ("", "root schema must be type: object"))
err("root_true", True, ("", "root schema must be type: object"))
err("root_list", [], ("", "root schema must be type: object"))
err("root_ref_to_string", {"$ref": "#/$defs/S", "$defs": {"S": {"type": "string"}}},
    ("", "root schema must be type: object"))
one_err("missing_type", {"description": "no type"}, ("", "missing \"type\""))
one_err("boolean_subschema_true", True, ("", "boolean schema (true)"))
one_err("boolean_subschema_false", False, ("", "boolean schema (false)"))

# x-generate misuse (§2, §5)
for name, sub, loc in [("gen_on_enum", {"enum": ["a", "b"], "x-generate": True}, "/x-generate"),
                       ("gen_on_boolean", {"type": "boolean", "x-generate": True}, "/x-generate"),
                       ("gen_on_integer", {"type": "integer", "x-generate": True}, "/x-generate"),
                       ("gen_on_number", {"type": "number", "x-generate": True}, "/x-generate"),
                       ("gen_on_object", {"type": "object", "x-generate": True}, "/x-generate"),
                       ("gen_on_string_enum", {"type": "string", "enum": ["a", "b"], "x-generate": True},
                        "/x-generate"),
                       ("gen_on_string_format", {"type": "string", "format": "date", "x-generate": True},
                        "/x-generate"),
                       ("gen_on_nullable_string", {"type": ["string", "null"], "x-generate": True},
                        "/x-generate"),
                       ("gen_on_array_of_integers", {"type": "array", "x-generate": True,
                                                     "items": {"type": "integer"}}, "/x-generate"),
                       ("gen_on_array_of_enum", {"type": "array", "x-generate": True,
                                                 "items": {"type": "string", "enum": ["a", "b"]}}, "/x-generate"),
                       ("gen_on_array_of_format", {"type": "array", "x-generate": True,
                                                   "items": {"type": "string", "format": "uri"}}, "/x-generate"),
                       ("gen_on_array_of_objects", {"type": "array", "x-generate": True,
                                                    "items": root({"a": {"type": "string"}})}, "/x-generate"),
                       ("gen_on_oneOf", {"oneOf": [{"const": 1}, {"const": 2}], "x-generate": True},
                        "/x-generate")]:
    one_err(name, sub, (loc, "x-generate"))
one_err("gen_not_boolean", {"type": "string", "x-generate": "yes"}, ("/x-generate", "true or false"))
one_err("max_tokens_without_generate", {"type": "string", "x-max-tokens": 10},
        ("/x-max-tokens", "only where x-generate"))
one_err("max_tokens_on_array_without_generate", {"type": "array", "items": {"type": "string"}, "x-max-tokens": 10},
        ("/x-max-tokens", "only where x-generate"))
one_err("max_tokens_zero", {"type": "string", "x-generate": True, "x-max-tokens": 0},
        ("/x-max-tokens", "integer >= 1"))
one_err("max_tokens_string", {"type": "string", "x-generate": True, "x-max-tokens": "10"},
        ("/x-max-tokens", "integer >= 1"))
one_err("levels_on_number", {"type": "number", "x-levels": {"1": "a"}}, ("/x-levels", "only to an integer score"))
one_err("levels_on_wide_integer", {"type": "integer", "minimum": 0, "maximum": 50, "x-levels": {"1": "a"}},
        ("/x-levels", "only to an integer score"))
one_err("levels_on_string", {"type": "string", "x-levels": {"1": "a"}}, ("/x-levels", "only to an integer score"))
one_err("levels_key_not_level", {"type": "integer", "minimum": 1, "maximum": 3, "x-levels": {"4": "a"}},
        ("/x-levels/4", "not one of the field's levels"))
one_err("levels_key_not_number", {"type": "integer", "minimum": 1, "maximum": 3, "x-levels": {"one": "a"}},
        ("/x-levels/one", "not one of the field's levels"))
one_err("levels_key_noncanonical", {"type": "integer", "minimum": 1, "maximum": 3, "x-levels": {"01": "a"}},
        ("/x-levels/01", "not one of the field's levels"))
one_err("levels_empty_label", {"type": "integer", "minimum": 1, "maximum": 3, "x-levels": {"1": ""}},
        ("/x-levels/1", "non-empty string"))
one_err("levels_not_object", {"type": "integer", "minimum": 1, "maximum": 3, "x-levels": ["a"]},
        ("/x-levels", "must be an object"))

# not valid JSON Schema (meta-schema value types)
for name, sub, loc, msg in [
        ("meta_minimum_string", {"type": "number", "minimum": "3"}, "/minimum", "must be a number"),
        ("meta_maximum_bool", {"type": "number", "maximum": True}, "/maximum", "must be a number"),
        ("meta_exclusiveMinimum_bool_2020", {"type": "number", "exclusiveMinimum": True},
         "/exclusiveMinimum", "must be a number"),
        ("meta_minLength_negative", {"type": "string", "minLength": -1}, "/minLength", "non-negative integer"),
        ("meta_maxLength_fraction", {"type": "string", "maxLength": 1.5}, "/maxLength", "non-negative integer"),
        ("meta_maxLength_string", {"type": "string", "maxLength": "5"}, "/maxLength", "non-negative integer"),
        ("meta_minItems_negative", {"type": "array", "items": {"type": "string"}, "minItems": -2},
         "/minItems", "non-negative integer"),
        ("meta_enum_not_array", {"enum": "abc"}, "/enum", "must be an array"),
        ("meta_type_unknown", {"type": "strin"}, "/type", "type must be one of"),
        ("meta_type_empty_array", {"type": []}, "/type", "type must be one of"),
        ("meta_type_duplicate", {"type": ["string", "string"]}, "/type", "type must be one of"),
        ("meta_type_number_value", {"type": 3}, "/type", "type must be one of"),
        ("meta_uniqueItems_string", {"type": "array", "items": {"type": "string"}, "uniqueItems": "yes"},
         "/uniqueItems", "must be a boolean"),
        ("meta_title_number", {"type": "string", "title": 5}, "/title", "must be a string"),
        ("meta_description_array", {"type": "string", "description": []}, "/description", "must be a string"),
        ("meta_comment_number", {"type": "string", "$comment": 1}, "/$comment", "must be a string"),
        ("meta_format_number", {"type": "string", "format": 5}, "/format", "must be a string"),
        ("meta_pattern_number", {"type": "string", "pattern": 5}, "/pattern", "must be a string"),
        ("meta_multipleOf_zero", {"type": "number", "multipleOf": 0}, "/multipleOf", "greater than 0"),
        ("meta_multipleOf_negative", {"type": "number", "multipleOf": -1}, "/multipleOf", "greater than 0"),
        ("meta_readOnly_string", {"type": "string", "readOnly": "no"}, "/readOnly", "must be a boolean"),
        ("meta_deprecated_number", {"type": "string", "deprecated": 1}, "/deprecated", "must be a boolean"),
        ("meta_examples_string", {"type": "string", "examples": "x"}, "/examples", "must be an array"),
        ("meta_anchor_bad", {"type": "string", "$anchor": "1bad"}, "/$anchor", "$anchor must match"),
        ("meta_ref_number", {"$ref": 5}, "/$ref", "must be a string"),
        ("meta_anyOf_empty", {"anyOf": []}, "/anyOf", "non-empty array"),
        ("meta_anyOf_not_array", {"anyOf": {"type": "string"}}, "/anyOf", "non-empty array"),
        ("meta_items_string", {"type": "array", "items": "x"}, "/items", "must be a schema"),
        ("meta_properties_array", {"type": "object", "properties": []}, "/properties", "must be an object"),
        ("meta_property_value_string", {"type": "object", "properties": {"x": "string"}},
         "/properties/x", "must be an object or a boolean"),
        ("meta_additionalProperties_string", {"type": "object", "additionalProperties": "no"},
         "/additionalProperties", "must be a schema"),
        ("meta_required_string", {"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"},
         "/required", "array of strings"),
        ("meta_required_numbers", {"type": "object", "properties": {}, "required": [1]},
         "/required", "array of strings"),
        ("meta_required_duplicate", {"type": "object", "properties": {"a": {"type": "string"}},
                                     "required": ["a", "a"]}, "/required/1", "twice"),
        ("meta_defs_array", {"type": "string", "$defs": []}, "/$defs", "must be an object"),
        ("meta_levels_label_number", {"type": "integer", "minimum": 1, "maximum": 2, "x-levels": {"1": 5}},
         "/x-levels/1", "non-empty string")]:
    one_err(name, sub, (loc, msg))
err("meta_schema_unknown_uri", dict(root({"a": {"type": "string"}}), **{"$schema": "https://example.com/s"}),
    ("/$schema", "unknown $schema"))
err("meta_schema_draft3", dict(root({"a": {"type": "string"}}), **{"$schema": "http://json-schema.org/draft-03/schema#"}),
    ("/$schema", "unknown $schema"))
err("meta_schema_not_string", dict(root({"a": {"type": "string"}}), **{"$schema": 7}),
    ("/$schema", "must be a string"))
err("draft4_numeric_exclusive",
    dict(root({"a": {"type": "number", "exclusiveMinimum": 1}}), **{"$schema": "http://json-schema.org/draft-04/schema#"}),
    ("/properties/a/exclusiveMinimum", "boolean in draft-04"))
err("draft4_exclusive_without_minimum",
    dict(root({"a": {"type": "number", "exclusiveMinimum": True}}), **{"$schema": "http://json-schema.org/draft-04/schema#"}),
    ("/properties/a/exclusiveMinimum", "needs minimum"))
err("draft4_integral_real_not_integer",
    dict(root({"a": {"type": "string", "maxLength": 5.0}}), **{"$schema": "http://json-schema.org/draft-04/schema#"}),
    ("/properties/a/maxLength", "non-negative integer"))
err("draft4_required_empty",
    dict(root({"a": {"type": "string"}}, []), **{"$schema": "http://json-schema.org/draft-04/schema#"}),
    ("/required", "non-empty in draft-04"))
err("draft4_boolean_subschema",
    dict(root({"l": {"type": "array", "items": True}}), **{"$schema": "http://json-schema.org/draft-04/schema#"}),
    ("/properties/l/items", "boolean schemas came with draft-06"),
    ("/properties/l/items", "boolean schema (true) is not supported here"))
err("id_not_uri_reference", dict(root({"a": {"type": "string"}}), **{"$id": ":"}),
    ("/$id", "not a URI reference"))
err("id_fragment_2020", dict(root({"a": {"type": "string"}}), **{"$id": "https://example.com/s#x"}),
    ("/$id", "has a fragment"))
err("draft2019_tuple_items",
    dict(root({"a": {"type": "array", "items": [{"type": "string"}]}}),
         **{"$schema": "https://json-schema.org/draft/2019-09/schema"}),
    ("/properties/a/items", "tuple"))
err("draft7_tuple_items",
    dict(root({"a": {"type": "array", "items": [{"type": "string"}]}}),
         **{"$schema": "http://json-schema.org/draft-07/schema#"}),
    ("/properties/a/items", "tuple"))

# several problems at once, each with its loc
err("several_errors_flat",
    root({"a": {"type": "integer", "maxLength": 3},
          "b": {"type": "string", "format": "ipv4"},
          "c": {"enum": ["x", "x"]},
          "d": {"type": "string", "pattern": "("},
          "e": {"type": "string", "x-genrate": True}}, ["a", "zz"]),
    ("/properties/a/maxLength", "does not apply"), ("/properties/b/format", "not supported"),
    ("/properties/c/enum/1", "same value twice"), ("/properties/d/pattern", "invalid pattern"),
    ("/properties/e/x-genrate", "unknown extension"), ("/required/1", "not in properties"))
err("several_errors_nested",
    root({"o": root({"i": {"type": "integer", "minimum": 4, "maximum": 4},
                     "l": {"type": "array", "items": {"type": "boolean", "x-generate": True}}}),
          "n": {"type": "number", "minimum": "0"}}),
    ("/properties/o/properties/i", "only one value"),
    ("/properties/o/properties/l/items/x-generate", "x-generate"),
    ("/properties/n/minimum", "must be a number"))
err("several_errors_defs_and_root",
    dict(root({"a": {"$ref": "#/$defs/A"}, "b": {"allOf": []}}),
         **{"$defs": {"A": {"type": "string", "minimum": 1}, "Unused": {"not": {}}}}),
    ("/properties/b/allOf", "unsupported"), ("/$defs/A/minimum", "does not apply"),
    ("/$defs/Unused/not", "unsupported"), ("/properties/b", "missing \"type\""))
err("several_errors_same_node",
    root({"a": {"type": "string", "minLength": -1, "maxLength": "x", "foo": 1, "const": "a"}}),
    ("/properties/a/minLength", "non-negative"), ("/properties/a/maxLength", "non-negative"),
    ("/properties/a/foo", "unknown keyword"), ("/properties/a/const", "const is not supported"))
err("several_errors_in_array_items",
    root({"l": {"type": "array", "items": root({"x": {"type": "null"}, "y": {"enum": [1]}})}}),
    ("/properties/l/items/properties/x/type", "nothing to fill"),
    ("/properties/l/items/properties/y/enum", "1 value"))
err("several_errors_ref_used_twice_reported_once",
    dict(root({"a": {"$ref": "#/$defs/B"}, "b": {"$ref": "#/$defs/B"}}),
         **{"$defs": {"B": {"type": "string", "format": "ipv6"}}}),
    ("/$defs/B/format", "not supported"))


def jsonschema_valid(schema):
    try:
        cls = jsonschema.Draft202012Validator
        if isinstance(schema, dict) and isinstance(schema.get("$schema"), str):
            cls = validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        return True
    except jsonschema.exceptions.SchemaError:
        return False


def main():
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    for c in CASES:
        c["jsonschema_valid"] = jsonschema_valid(c["schema"])
        # Where python-jsonschema rejects the document, deg must reject it too.
        if not c["jsonschema_valid"]:
            assert "errors" in c, f"{c['name']}: invalid JSON Schema but a plan is expected"
    OUT.write_text(json.dumps({
        "about": "deg schema compiler cases; written by tests/goldens/gen_schema_cases.py "
                 "(expectations by hand from the deg contract; jsonschema_valid from "
                 f"python-jsonschema {importlib.metadata.version('jsonschema')} check_schema)",
        "cases": CASES}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(CASES)} cases -> {OUT}")


if __name__ == "__main__":
    main()
