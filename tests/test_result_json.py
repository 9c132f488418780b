"""A case result's canonical JSON written from its fields is the pydantic dump's, byte for byte."""

from __future__ import annotations

import datetime
import enum
from typing import Any

import pytest

from pytest_agentbench.run.output_caps import stored_result
from pytest_agentbench.run.result_json import written_result_json
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.contracts import (
    CaseOutcome,
    CaseResult,
    Check,
    CheckStatus,
    FailureClass,
    Outcome,
    RecordedOutput,
)


class Colour(enum.Enum):
    RED = "red"


def dumped(result: CaseResult) -> str:
    return canonical_json(result.model_dump(mode="json"))


def plain_result() -> CaseResult:
    """A demo world's passed case with its recorded output."""
    return CaseResult(
        suite_id="bench-suite",
        case_id="b0",
        outcome=CaseOutcome.PASSED,
        checks=(
            Check(name="answer_present", status=CheckStatus.PASS, expected="an integer", actual=0),
            Check(name="answer_correct", status=CheckStatus.PASS, expected=0, actual=0),
        ),
        measurements={"zero": 1, "correct": 1, "scored": 1},
        recorded=RecordedOutput(
            outcome=Outcome(output={"answer": 0}),
            case_digest="c" * 64,
            suite_digest="s" * 64,
            oracle_digest=None,
            adapter="built-in reference agents",
        ),
    )


def every_field_result(value: Any) -> CaseResult:
    """A result with every field set, ``value`` in each place a JSON value goes."""
    return CaseResult(
        suite_id='suite \u00e9\u2028"quoted"',
        case_id="case\n\t\x01\U0001f600",
        outcome=CaseOutcome.FAILED,
        checks=(
            Check(
                name="c",
                status=CheckStatus.FAIL,
                expected=value,
                actual={"nested": [value, {"b": 1, "a": value}]},
                detail="why",
                expected_fault="fault-1",
            ),
            Check(name="m", status=CheckStatus.MISSING),
        ),
        measurements={"b": 2, "a": -1, "z\u00e9": 10**30},
        labels=("tier_T4", "cluster:x"),
        failure_class=FailureClass.PRODUCT_ERROR,
        failure_reason="bad",
        failure_traceback="Traceback ...",
        findings=("f2", "f1"),
        receipt={"digest": "d", "calls": [value], "z": {"k": value}},
        trial=3,
        cluster="k",
        recorded=RecordedOutput(
            outcome=Outcome(
                output=value,
                failure_class=FailureClass.AGENT_ERROR,
                failure_reason="r",
                failure_traceback="t",
                transcript="log",
                receipt={"x": value},
                exclusion="budget_exceeded_calls",
            ),
            case_digest="c",
            suite_digest=None,
            oracle_digest="o",
            adapter="a",
        ),
        exclusion="budget_exceeded_calls",
        model_calls={"calls": 2, "cost": 0.5, "list": [value]},
        artifact={"file": "f.json", "digest_sha256": "x"},
        model="model-a",
    )


VALUES = [
    None,
    True,
    False,
    0,
    -(10**40),
    1.5e-7,
    1e16,
    -0.0,
    float("inf"),
    float("nan"),
    "text \u00e9 \x7f \x00 \\ /",
    [1, "a", None, [], {}],
    (1, (2, 3)),
    {"b": 1, "a": {"d": [1.25], "c": None}},
    {1: "int key", 10: "sorted as text", 9: "after 10"},
    {None: 1, True: 2, 2.5: 3},
    CheckStatus.PASS,
    Colour.RED,
    b"bytes",
    datetime.date(2026, 12, 7),
    {"set": frozenset({1})},
]


def test_a_plain_result_is_written_as_its_dump() -> None:
    result = plain_result()
    assert written_result_json(result) == dumped(result)


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_every_field_with_any_json_value_is_written_as_its_dump(value: Any) -> None:
    result = every_field_result(value)
    assert written_result_json(result) == dumped(result)


def test_a_model_left_unset_is_left_out_as_the_dump_leaves_it() -> None:
    result = every_field_result(1).model_copy(update={"model": None})
    written = written_result_json(result)
    assert written == dumped(result)
    assert written is not None
    assert '"model"' not in written


@pytest.mark.parametrize(
    "update",
    [
        {"labels": ["a"]},
        {"findings": ("a", 1)},
        {"measurements": {1: 2}},
        {"measurements": {"a": True}},
        {"trial": True},
        {"outcome": "passed"},
        {"receipt": [1]},
        {"checks": [Check(name="c", status=CheckStatus.PASS)]},
    ],
    ids=repr,
)
def test_a_field_holding_another_type_than_declared_is_left_to_the_dump(
    update: dict[str, Any],
) -> None:
    # Only an unvalidated copy can hold one: the dump writes it (and warns) as before.
    result = plain_result().model_copy(update=update)
    assert written_result_json(result) is None


def test_a_subclass_of_a_record_is_left_to_the_dump() -> None:
    class Extended(CaseResult):
        extra: int = 1

    assert written_result_json(Extended(suite_id="s", case_id="c", outcome="passed")) is None


def test_the_stored_canonical_text_is_the_dump() -> None:
    result = every_field_result({"a": 1})
    assert stored_result(result, 0, canonical=True) == dumped(result)
    assert stored_result(result, 100, canonical=True) == dumped(
        CaseResult.model_validate_json(stored_result(result, 100))
    )
