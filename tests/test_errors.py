from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentbench.sdk.errors import (
    AgentbenchError,
    ErrorLocation,
    UsageError,
    describe_exception,
    escape_surrogates,
    escape_surrogates_json,
    field_path,
    first_surrogate_path,
)


@pytest.mark.parametrize(
    ("location", "rendered"),
    [
        (ErrorLocation(), ""),
        (ErrorLocation(file="suite.yaml"), "suite.yaml"),
        (ErrorLocation(file="cases.jsonl", line=4), "cases.jsonl:4"),
        (ErrorLocation(file="suite.yaml", field="gates[1]"), "suite.yaml: gates[1]"),
        (ErrorLocation(file="c.jsonl", line=2, field="question"), "c.jsonl:2: question"),
        (ErrorLocation(field="--agentbench-adapter"), "--agentbench-adapter"),
    ],
)
def test_location_renders_file_line_and_field(location: ErrorLocation, rendered: str) -> None:
    assert location.render() == rendered


def test_refusal_renders_code_location_and_reason_on_one_line() -> None:
    error = AgentbenchError("duplicate_key", "key 'id' appears twice", file="c.jsonl", line=3)
    assert error.render() == "[duplicate_key] c.jsonl:3: key 'id' appears twice"
    assert str(error) == error.render()
    assert "\n" not in error.render()


def test_refusal_without_location_renders_code_and_reason() -> None:
    assert AgentbenchError("boom", "it broke").render() == "[boom] it broke"


def test_refusal_accepts_a_path_and_stores_it_as_text() -> None:
    error = AgentbenchError("missing_file", "absent", file=Path("a") / "b.json")
    assert error.location.file == "a/b.json"


def test_empty_field_is_no_field() -> None:
    error = AgentbenchError("x", "y", file="f", field="")
    assert error.location.field is None
    assert error.render() == "[x] f: y"


def test_at_fills_only_the_missing_parts_of_the_location() -> None:
    located = AgentbenchError("bad", "reason", field="a.b").at(file="f.json", line=9, field="zzz")
    assert located.code == "bad"
    assert located.reason == "reason"
    assert located.location == ErrorLocation(file="f.json", line=9, field="a.b")


def test_at_keeps_an_existing_file_and_line() -> None:
    original = AgentbenchError("bad", "reason", file="inner.json", line=2)
    located = original.at(file="outer.json", line=50)
    assert located.render() == "[bad] inner.json:2: reason"


def test_usage_error_is_a_refusal() -> None:
    error = UsageError("adapter_spec", "not module:attr", field="--agentbench-adapter")
    assert isinstance(error, AgentbenchError)
    assert error.render() == "[adapter_spec] --agentbench-adapter: not module:attr"


@pytest.mark.parametrize(
    ("parts", "rendered"),
    [
        ((), ""),
        (("id",), "id"),
        (("controls", 0, "must_fail"), "controls[0].must_fail"),
        ((2, "x"), "[2].x"),
        (("a", 1, 2, "b"), "a[1][2].b"),
    ],
)
def test_field_path_renders_like_pydantic_locations(
    parts: tuple[int | str, ...], rendered: str
) -> None:
    assert field_path(parts) == rendered


def test_lone_surrogates_are_escaped_and_located() -> None:
    assert escape_surrogates("a\udc80b\ud800") == "a\\udc80b\\ud800"
    assert escape_surrogates("plain \U0001f600") == "plain \U0001f600"
    assert describe_exception(ValueError("bad \udc80")) == "ValueError: bad \\udc80"
    assert escape_surrogates_json({"k\udc80": ["\ud800", 1]}) == {"k\\udc80": ["\\ud800", 1]}
    assert first_surrogate_path({"a": [1, {"b": "x\udc80"}]}) == "a[1].b"
    assert first_surrogate_path("\udc80") == "<root>"
    assert first_surrogate_path({"a": ["fine"]}) is None
