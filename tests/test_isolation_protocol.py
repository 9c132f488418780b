"""The wire format of isolation: what crosses each way, and how failures are described."""

from __future__ import annotations

import json
import math
import types
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.isolation.protocol import (
    MAX_TEXT,
    describe_raised,
    json_message,
    json_text,
    pickle_for_child,
    shape,
    unpickle_from_parent,
)
from pytest_agentbench.sdk.canonical import loads_strict
from pytest_agentbench.sdk.contracts import Check, CheckStatus

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(JSON)
def test_json_values_cross_to_the_harness_unchanged(value: Any) -> None:
    message = json_message("returned", {"call": 3}, json_text(value))
    decoded = loads_strict(message.decode("utf-8"))
    assert decoded == {"op": "returned", "call": 3, "value": value}


def test_views_cross_to_the_child_with_their_types() -> None:
    frozen = types.MappingProxyType({"a": (1, 2), "b": types.MappingProxyType({"c": 3})})
    record = Check(name="x", status=CheckStatus.PASS, expected=[1])
    rebuilt = unpickle_from_parent(pickle_for_child({"frozen": frozen, "record": record}))
    assert type(rebuilt["frozen"]) is types.MappingProxyType
    assert type(rebuilt["frozen"]["b"]) is types.MappingProxyType
    assert rebuilt["frozen"]["a"] == (1, 2)
    assert rebuilt["record"] == record


def test_records_and_mappings_are_sent_as_json() -> None:
    class Pairs(Mapping[str, int]):
        def __getitem__(self, key: str) -> int:
            return {"k": 1}[key]

        def __len__(self) -> int:
            return 1

        def __iter__(self) -> Iterator[str]:
            return iter(["k"])

    value = {"check": Check(name="x", status=CheckStatus.FAIL), "pairs": Pairs(), "t": (1, 2)}
    assert json.loads(json_text(value)) == {
        "check": {
            "name": "x",
            "status": "fail",
            "expected": None,
            "actual": None,
            "detail": None,
            "expected_fault": None,
        },
        "pairs": {"k": 1},
        "t": [1, 2],
    }


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({1, 2}, TypeError),
        (object(), TypeError),
        (math.nan, ValueError),
        ({"x": math.inf}, ValueError),
    ],
)
def test_what_json_cannot_hold_is_refused(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        json_text(value)


def test_described_exceptions_survive_a_raising_str_and_long_text() -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert describe_raised(Unprintable()) == ("Unprintable", "<str() raised RuntimeError>")
    assert describe_raised(ValueError("first\nsecond")) == ("ValueError", "first")
    assert describe_raised(KeyboardInterrupt()) == ("KeyboardInterrupt", "")
    _, text = describe_raised(ValueError("x" * (MAX_TEXT + 10)))
    assert text == "x" * MAX_TEXT + f"... [{MAX_TEXT + 10} characters]"


def test_shape_names_public_members_and_which_are_callable() -> None:
    class Adapter:
        kind = "demo"

        def answer(self, question: str) -> int:
            return 0

        def _private(self) -> None:
            pass

        @property
        def broken(self) -> int:
            raise RuntimeError("no")

    assert shape(Adapter()) == {"kind": False, "answer": True}
