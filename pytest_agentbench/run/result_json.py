"""A case result's canonical JSON, written from its fields.

``canonical_json(result.model_dump(mode="json"))`` is what a run writing a JSON
report carries and stores for every case: pydantic builds a dict of every record
of the result, and the C encoder then sorts and writes them, about two thirds of
that time. The records' keys are known, so their sorted order is written here
once, as text; only the values whose shape is open (``JsonValue`` fields and
objects) are made JSON-able by pydantic's own serializer for their declared type
and encoded. The bytes are the same (tests/test_result_json.py compares them).

Any result this does not know the exact shape of (a subclass of a record, a field
holding a value of another type than declared, as an unvalidated copy can) gets
``None`` here, and its caller the pydantic dump.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import SchemaSerializer

from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.contracts import CaseResult, Check, Outcome, RecordedOutput


@functools.cache
def _serializers() -> tuple[SchemaSerializer, SchemaSerializer]:
    """The serializers of a field declared ``JsonValue`` and ``dict[str, JsonValue]`` in a
    record with the default configuration: what ``model_dump(mode="json")`` applies to
    such a field (a non-finite float becomes null, a tuple a list, a key a string ...).

    Built on first use: a run that writes no canonical result needs neither.
    """
    return TypeAdapter(Any).serializer, TypeAdapter(dict[str, Any]).serializer


def _value(value: Any) -> str:
    """A ``JsonValue`` field's JSON: scalars written as the encoder would write them."""
    kind = type(value)
    if value is None:
        return "null"
    if kind is str:
        return encode_basestring(value)
    if kind is int:
        return int.__repr__(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    return canonical_json(_serializers()[0].to_python(value, mode="json"))


def _object(value: dict[str, Any] | None) -> str:
    """A ``dict[str, JsonValue] | None`` field's JSON."""
    if value is None:
        return "null"
    if type(value) is not dict:
        raise TypeError("not a dict")
    return canonical_json(_serializers()[1].to_python(value, mode="json"))


def _enum(value: Any) -> str:
    """An optional enum field's JSON: its value (a plain string fails, as it should)."""
    return "null" if value is None else encode_basestring(value.value)


def _strings(values: tuple[str, ...]) -> str:
    if type(values) is not tuple:
        raise TypeError("not a tuple")
    return "[" + ",".join(map(encode_basestring, values)) + "]"


def _counts(counts: Mapping[str, int]) -> str:
    # Keys other than strings would be sorted before the dump makes them strings.
    if type(counts) is not dict or not all(
        type(key) is str and type(count) is int for key, count in counts.items()
    ):
        raise TypeError("not counts by name")
    return canonical_json(counts)


def _checks(checks: tuple[Check, ...]) -> str:
    if type(checks) is not tuple:
        raise TypeError("not a tuple")
    return "[" + ",".join(map(_check, checks)) + "]"


def _check(check: Check) -> str:
    if type(check) is not Check:
        raise TypeError("not a Check")
    fields = check.__dict__
    detail, fault = fields["detail"], fields["expected_fault"]
    # Optional strings written in place rather than by a helper: a call per field
    # cost a twentieth of writing the result's text.
    return (
        f'{{"actual":{_value(fields["actual"])},'
        f'"detail":{"null" if detail is None else encode_basestring(detail)},'
        f'"expected":{_value(fields["expected"])},'
        f'"expected_fault":{"null" if fault is None else encode_basestring(fault)},'
        f'"name":{encode_basestring(fields["name"])},'
        f'"status":{encode_basestring(fields["status"].value)}}}'
    )


def _outcome(outcome: Outcome) -> str:
    if type(outcome) is not Outcome:
        raise TypeError("not an Outcome")
    fields = outcome.__dict__
    exclusion, reason = fields["exclusion"], fields["failure_reason"]
    traceback, transcript = fields["failure_traceback"], fields["transcript"]
    return (
        f'{{"exclusion":{"null" if exclusion is None else encode_basestring(exclusion)},'
        f'"failure_class":{_enum(fields["failure_class"])},'
        f'"failure_reason":{"null" if reason is None else encode_basestring(reason)},'
        f'"failure_traceback":{"null" if traceback is None else encode_basestring(traceback)},'
        f'"output":{_value(fields["output"])},"receipt":{_object(fields["receipt"])},'
        f'"transcript":{"null" if transcript is None else encode_basestring(transcript)}}}'
    )


def _recorded(recorded: RecordedOutput | None) -> str:
    if recorded is None:
        return "null"
    if type(recorded) is not RecordedOutput:
        raise TypeError("not a RecordedOutput")
    fields = recorded.__dict__
    oracle, suite = fields["oracle_digest"], fields["suite_digest"]
    return (
        f'{{"adapter":{encode_basestring(fields["adapter"])},'
        f'"case_digest":{encode_basestring(fields["case_digest"])},'
        f'"oracle_digest":{"null" if oracle is None else encode_basestring(oracle)},'
        f'"outcome":{_outcome(fields["outcome"])},'
        f'"suite_digest":{"null" if suite is None else encode_basestring(suite)}}}'
    )


def _trial(trial: int | None) -> str:
    if trial is None:
        return "null"
    if type(trial) is not int:
        raise TypeError("not an int")
    return int.__repr__(trial)


def written_result_json(result: CaseResult) -> str | None:
    """``canonical_json(result.model_dump(mode="json"))``, written from the fields;
    ``None`` for a result of a shape this does not know (then dump it)."""
    if type(result) is not CaseResult:
        return None
    fields = result.__dict__
    model, cluster, exclusion = fields["model"], fields["cluster"], fields["exclusion"]
    reason, traceback = fields["failure_reason"], fields["failure_traceback"]
    try:
        # The keys in sorted order; ``model`` is left out when None (its exclude_if).
        return (
            f'{{"artifact":{_object(fields["artifact"])},'
            f'"case_id":{encode_basestring(fields["case_id"])},'
            f'"checks":{_checks(fields["checks"])},'
            f'"cluster":{"null" if cluster is None else encode_basestring(cluster)},'
            f'"exclusion":{"null" if exclusion is None else encode_basestring(exclusion)},'
            f'"failure_class":{_enum(fields["failure_class"])},'
            f'"failure_reason":{"null" if reason is None else encode_basestring(reason)},'
            f'"failure_traceback":{"null" if traceback is None else encode_basestring(traceback)},'
            f'"findings":{_strings(fields["findings"])},"labels":{_strings(fields["labels"])},'
            f'"measurements":{_counts(fields["measurements"])},'
            + ("" if model is None else f'"model":{encode_basestring(model)},')
            + f'"model_calls":{_object(fields["model_calls"])},'
            f'"outcome":{encode_basestring(fields["outcome"].value)},'
            f'"receipt":{_object(fields["receipt"])},"recorded":{_recorded(fields["recorded"])},'
            f'"suite_id":{encode_basestring(fields["suite_id"])},"trial":{_trial(fields["trial"])}}}'
        )
    except (TypeError, AttributeError, ValueError):
        # A value of another type than declared, or one pydantic refuses: the dump
        # writes (or refuses) it as it always did.
        return None
