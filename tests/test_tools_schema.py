"""The strict argument validator: its subset, its refusals, its agreement with jsonschema."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.sdk.tools.schema import (
    SchemaViolation,
    UnsupportedSchema,
    check_tool_schema,
    compile_schema,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["query"],
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z ]+$"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 5},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "mode": {"type": "string", "enum": ["fast", "exact"]},
        "version": {"type": "integer", "const": 2},
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": 3,
            "uniqueItems": True,
        },
        "note": {"type": ["string", "null"]},
        "filter": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"flag": {"type": "boolean"}},
        },
    },
}
CHECK = compile_schema(SCHEMA)


def violation(value: Any) -> SchemaViolation:
    with pytest.raises(SchemaViolation) as caught:
        CHECK(value, ())
    return caught.value


def test_a_valid_document_passes() -> None:
    CHECK(
        {
            "query": "red fox",
            "limit": 5,
            "ratio": 0.5,
            "mode": "exact",
            "version": 2,
            "tags": ["a", "b"],
            "note": None,
            "filter": {"flag": True},
        },
        (),
    )


@pytest.mark.parametrize(
    ("value", "path", "reason"),
    [
        ([], (), "expected object, got array"),
        ({}, (), "missing required property 'query'"),
        ({"query": "a", "extra": 1}, (), "unknown property 'extra'"),
        ({"query": 3}, ("query",), "expected string, got integer"),
        ({"query": ""}, ("query",), "expected at least 1 characters, got 0"),
        ({"query": "abcdefghi"}, ("query",), "expected at most 8 characters, got 9"),
        ({"query": "ABC"}, ("query",), "does not match pattern '^[a-z ]+$'"),
        ({"query": "a", "limit": 0}, ("limit",), "0 breaks minimum 1"),
        ({"query": "a", "limit": 6}, ("limit",), "6 breaks maximum 5"),
        ({"query": "a", "limit": 2.0}, ("limit",), "expected integer, got number"),
        ({"query": "a", "limit": True}, ("limit",), "expected integer, got boolean"),
        ({"query": "a", "ratio": 1}, ("ratio",), "1 breaks exclusiveMaximum 1"),
        ({"query": "a", "ratio": 0.0}, ("ratio",), "0.0 breaks exclusiveMinimum 0"),
        ({"query": "a", "ratio": float("nan")}, ("ratio",), "expected number, got number"),
        ({"query": "a", "mode": "slow"}, ("mode",), 'must be one of ["fast","exact"]'),
        ({"query": "a", "version": 2.0}, ("version",), "expected integer, got number"),
        ({"query": "a", "version": 3}, ("version",), "must be 2"),
        ({"query": "a", "tags": []}, ("tags",), "expected at least 1 items, got 0"),
        ({"query": "a", "tags": ["a"] * 4}, ("tags",), "expected at most 3 items, got 4"),
        ({"query": "a", "tags": ["a", "a"]}, ("tags",), "items must be unique"),
        ({"query": "a", "tags": ["a", 1]}, ("tags", 1), "expected string, got integer"),
        ({"query": "a", "tags": ("a",)}, ("tags",), "expected array, got tuple"),
        ({"query": "a", "note": 1}, ("note",), "expected string or null, got integer"),
        ({"query": "a", "filter": {"flag": 1}}, ("filter", "flag"), "expected boolean"),
        ({"query": "a", "filter": {"other": 1}}, ("filter",), "unknown property 'other'"),
        ({1: "a"}, (), "missing required property 'query'"),
    ],
)
def test_every_keyword_refuses_with_a_path(value: Any, path: tuple[Any, ...], reason: str) -> None:
    refused = violation(value)
    assert refused.path == path
    assert refused.reason.startswith(reason)


def test_a_violation_renders_its_field_path() -> None:
    assert violation({"query": "a", "tags": ["a", 1]}).render() == (
        "arguments.tags[1]: expected string, got integer"
    )


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "string"}, "the root must be"),
        ({"type": "object"}, "the arguments must be a closed object"),
        ({"type": "object", "additionalProperties": True}, "the arguments must be a closed object"),
        (
            {"type": "object", "additionalProperties": {"type": "string"}},
            "the arguments must be a closed object",
        ),
        (
            {"type": "object", "additionalProperties": False, "properties": {"a": {}}},
            "parameters.properties.a.type: must be one of",
        ),
        (
            {"type": "object", "additionalProperties": False, "anyOf": []},
            "unsupported keyword 'anyOf'",
        ),
        (
            {"type": "object", "additionalProperties": False, "required": ["a"]},
            "'a' is not one of the properties",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {"a": {"type": "object", "additionalProperties": "yes"}},
            },
            "parameters.properties.a.additionalProperties: must be a boolean or a schema",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {"a": {"type": "object", "additionalProperties": {}}},
            },
            "parameters.properties.a.additionalProperties.type: must be one of",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "a": {"type": "object", "additionalProperties": False, "required": ["b"]}
                },
            },
            "parameters.properties.a.required: 'b' is not one of the properties",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {"a": {"type": "array"}},
            },
            "arrays must declare their items",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {"a": {"type": "string", "pattern": "("}},
            },
            "pattern",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {"a": {"type": "string", "minLength": -1}},
            },
            "minLength: must be a non-negative integer",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {"a": {"type": "integer", "minimum": "1"}},
            },
            "minimum: must be a number",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {"a": {"type": "string", "enum": []}},
            },
            "enum: must be a non-empty list",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {"a": {"type": "string", "properties": {}}},
            },
            "object keywords on a non-object type",
        ),
    ],
)
def test_a_schema_outside_the_subset_is_refused(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(UnsupportedSchema, match=None) as caught:
        check_tool_schema(schema)
    assert message in str(caught.value)


def test_compiling_is_cached_by_canonical_text() -> None:
    reordered = dict(reversed(list(SCHEMA.items())))
    assert compile_schema(reordered) is CHECK


json_scalars = st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=10)
json_values = st.recursive(
    json_scalars | st.floats(-10, 10, allow_nan=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
candidate_documents = st.fixed_dictionaries(
    {},
    optional={
        "query": st.text(alphabet="abc XYZ", max_size=10) | json_scalars,
        "limit": st.integers(-1, 7) | json_scalars,
        "ratio": st.floats(-0.5, 1.5, allow_nan=False) | json_scalars,
        "mode": st.sampled_from(["fast", "exact", "slow"]) | json_scalars,
        "version": st.sampled_from([2, 3]) | json_scalars,
        "tags": st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=5) | json_values,
        "note": json_scalars,
        "filter": st.dictionaries(st.sampled_from(["flag", "other"]), json_scalars, max_size=2),
        "extra": json_values,
    },
)


@settings(max_examples=150, deadline=None)
@given(candidate_documents)
def test_agrees_with_jsonschema_on_json_documents(document: dict[str, Any]) -> None:
    """Where the subset's strictness does not differ (integral floats), verdicts agree."""
    expected = jsonschema.Draft202012Validator(SCHEMA).is_valid(document)
    try:
        CHECK(document, ())
        ours = True
    except SchemaViolation:
        ours = False
    integral_floats = any(
        isinstance(document.get(key), float) and document[key].is_integer()
        for key in ("limit", "version")
    )
    if integral_floats:
        assert not ours
    else:
        assert ours == expected


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("^[a-z]+$", "ok\n", False),
        ("^[a-z]+$", "ok", True),
        ("^[$]+$", "$$", True),
        (r"^\$$", "$", True),
        (r"^\d+$", "\u0663", False),
    ],
)
def test_patterns_read_as_ecma_262(pattern: str, text: str, matches: bool) -> None:
    check = compile_schema(
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {"a": {"type": "string", "pattern": pattern}},
        }
    )
    try:
        check({"a": text}, ())
        matched = True
    except SchemaViolation:
        matched = False
    assert matched is matches


OPEN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        # Open objects, as the retrieval format's search tool declares them.
        "filters": {"type": "object"},
        "modes": {"type": "array", "items": {"type": "object"}},
        "labels": {
            "type": "object",
            "required": ["main"],
            "properties": {"main": {"type": "string"}},
            "additionalProperties": {"type": "integer", "minimum": 0},
        },
        "meta": {"type": "object", "required": ["id"], "additionalProperties": True},
    },
}
OPEN = compile_schema(OPEN_SCHEMA)


def test_open_objects_admit_any_json_members() -> None:
    check_tool_schema(OPEN_SCHEMA)
    OPEN(
        {
            "filters": {"lang": "de", "deep": {"list": [1, 2.5, None, True, {"x": []}]}},
            "modes": [{}, {"mode": "lexical"}],
            "labels": {"main": "a", "count": 3},
            "meta": {"id": 1, "other": "x"},
        },
        (),
    )


@pytest.mark.parametrize(
    ("value", "path", "reason"),
    [
        ({"filters": "de"}, ("filters",), "expected object, got string"),
        ({"filters": {"x": float("nan")}}, ("filters", "x"), "nan is not a JSON number"),
        ({"filters": {"x": [float("inf")]}}, ("filters", "x", 0), "inf is not a JSON number"),
        ({"filters": {"x": {1, 2}}}, ("filters", "x"), "expected a JSON value, got set"),
        ({"filters": {"x": ("a",)}}, ("filters", "x"), "expected a JSON value, got tuple"),
        ({"filters": {1: "a"}}, ("filters",), "property names must be strings, got 1"),
        ({"filters": {"x": {2: "a"}}}, ("filters", "x"), "property names must be strings"),
        ({"modes": [1]}, ("modes", 0), "expected object, got integer"),
        ({"modes": [{"m": object()}]}, ("modes", 0, "m"), "expected a JSON value, got object"),
        ({"labels": {"n": 1}}, ("labels",), "missing required property 'main'"),
        ({"labels": {"main": 1}}, ("labels", "main"), "expected string, got integer"),
        ({"labels": {"main": "a", "n": -1}}, ("labels", "n"), "-1 breaks minimum 0"),
        ({"labels": {"main": "a", "n": "1"}}, ("labels", "n"), "expected integer, got string"),
        ({"meta": {}}, ("meta",), "missing required property 'id'"),
        ({"other": {}}, (), "unknown property 'other'"),
    ],
)
def test_open_objects_refuse_with_a_path(value: Any, path: tuple[Any, ...], reason: str) -> None:
    with pytest.raises(SchemaViolation) as caught:
        OPEN(value, ())
    assert caught.value.path == path
    assert caught.value.reason.startswith(reason)


label_members = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3)
open_documents = st.fixed_dictionaries(
    {},
    optional={
        "filters": json_values,
        "modes": st.lists(json_values, max_size=3) | json_scalars,
        "labels": st.dictionaries(st.sampled_from(["main", "n", "m"]), label_members, max_size=3)
        | json_scalars,
        "meta": st.dictionaries(st.sampled_from(["id", "other"]), json_values, max_size=2),
        "other": json_values,
    },
)


@settings(max_examples=150, deadline=None)
@given(open_documents)
def test_open_objects_agree_with_jsonschema(document: dict[str, Any]) -> None:
    """Integer members only where integers are checked: there the subset is stricter."""
    expected = jsonschema.Draft202012Validator(OPEN_SCHEMA).is_valid(document)
    try:
        OPEN(document, ())
        ours = True
    except SchemaViolation:
        ours = False
    assert ours == expected
