"""ToolSession: validation, budgets, every outcome code, records, exports and receipts."""

from __future__ import annotations

import json
import pickle
from typing import Any

import jsonschema
import pydantic
import pytest

from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.tools import (
    BUDGET_EXHAUSTED,
    HANDLER_FAILED,
    INVALID_ARGUMENTS,
    SESSION_CLOSED,
    UNKNOWN_TOOL,
    Budget,
    Receipt,
    ToolCallError,
    ToolDescriptor,
    ToolHarnessError,
    ToolSession,
    ToolSessionLike,
    ToolSpec,
)
from pytest_agentbench.sdk.tools.receipt import SCHEMA_PATH, canonical_digest, schema_text

ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["a", "b"],
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
}
STATE: dict[str, Any] = {}


def add(arguments: dict[str, Any]) -> Any:
    return {"sum": arguments["a"] + arguments["b"]}


def refuse(arguments: dict[str, Any]) -> Any:
    raise ToolCallError("policy_refused", "refunds need a manager")


def crash(arguments: dict[str, Any]) -> Any:
    raise RuntimeError("database on fire")


def garbage(arguments: dict[str, Any]) -> Any:
    return {"value": object()}


def echo(arguments: dict[str, Any]) -> Any:
    return arguments["text"]


EMPTY = {"type": "object", "additionalProperties": False, "properties": {}}
TEXT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["text"],
    "properties": {"text": {"type": "string"}},
}


def tools() -> list[ToolSpec]:
    return [
        ToolSpec(name="add", description="Add two integers.", parameters=ADD_SCHEMA, handler=add),
        ToolSpec(
            name="refund",
            description="Refund an order.",
            parameters=EMPTY,
            mutating=True,
            privileged=True,
            handler=refuse,
        ),
        ToolSpec(name="crash", description="Fails.", parameters=EMPTY, handler=crash),
        ToolSpec(name="garbage", description="Not JSON.", parameters=EMPTY, handler=garbage),
        ToolSpec(name="echo", description="Echo text.", parameters=TEXT, handler=echo),
    ]


class Ticks:
    """A fake clock: every reading is one millisecond later."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


def session(budget: Budget | None = None) -> ToolSession:
    return ToolSession(tools(), budget, context={"case": "c1"}, clock=Ticks())


def refused(session: ToolSession, name: Any, arguments: Any) -> ToolCallError:
    with pytest.raises(ToolCallError) as caught:
        session.call(name, arguments)
    return caught.value


def test_a_call_returns_the_result_and_records_it() -> None:
    s = session()
    assert s.call("add", {"a": 2, "b": 3}) == {"sum": 5}
    assert s.call("add", '{"b": 1, "a": 1}') == {"sum": 2}
    first, second = s.calls
    assert (first.index, first.name, first.error, first.delivered) == (0, "add", None, True)
    assert first.arguments_json == '{"a":2,"b":3}'
    assert first.result_json == '{"sum":5}'
    assert first.model_visible_bytes == len(b'{"sum":5}')
    assert second.arguments == {"a": 1, "b": 1}
    assert s.bytes_used == 2 * len(b'{"sum":5}')
    assert s.calls_used == 2


def test_bytes_are_utf8_of_the_canonical_json_delivered() -> None:
    s = session()
    assert s.call("echo", {"text": "é€😀"}) == "é€😀"
    assert s.calls[0].model_visible_bytes == len('"é€😀"'.encode())


@pytest.mark.parametrize(
    ("name", "arguments", "code", "field"),
    [
        ("nope", {}, UNKNOWN_TOOL, None),
        (3, {}, UNKNOWN_TOOL, None),
        ("add", {"a": 1}, INVALID_ARGUMENTS, "arguments"),
        ("add", {"a": 1, "b": "2"}, INVALID_ARGUMENTS, "arguments.b"),
        ("add", {"a": 1, "b": 2, "c": 3}, INVALID_ARGUMENTS, "arguments"),
        ("add", '{"a": 1, "a": 2, "b": 3}', INVALID_ARGUMENTS, "arguments.a"),
        ("add", '{"a": 1, "b": NaN}', INVALID_ARGUMENTS, "arguments"),
        ("add", "not json", INVALID_ARGUMENTS, "arguments"),
        ("add", "[1, 2]", INVALID_ARGUMENTS, "arguments"),
        ("add", 12, INVALID_ARGUMENTS, None),
        ("add", {"a": 1, "b": float("inf")}, INVALID_ARGUMENTS, "arguments.b"),
    ],
)
def test_session_refusals_are_named_and_not_delivered(
    name: Any, arguments: Any, code: str, field: str | None
) -> None:
    s = session()
    error = refused(s, name, arguments)
    assert error.code == code
    assert error.location.field == field
    (record,) = s.calls
    assert (record.error, record.delivered, record.model_visible_bytes) == (code, False, 0)
    assert record.result_json is None
    assert record.message == error.reason


def test_a_number_without_a_fraction_is_an_integer_as_in_json() -> None:
    s = session()
    assert s.call("add", '{"a": 1.0, "b": 2e0}') == {"sum": 3}
    assert s.call("add", {"a": -4.0, "b": 1}) == {"sum": -3}
    first, second = s.calls
    assert first.arguments_json == '{"a":1,"b":2}'
    assert type(second.arguments["a"]) is int
    assert refused(s, "add", '{"a": 1.5, "b": 2}').code == "invalid_arguments"
    assert refused(s, "add", {"a": 2.0**60, "b": 1}).code == "invalid_arguments"


def test_arguments_are_recorded_whenever_they_parse() -> None:
    s = session()
    refused(s, "nope", {"x": 1})
    refused(s, "add", '{"b": 2, "a": "1"}')
    refused(s, "add", {"a": 1, "b": {1, 2}})
    assert [call.arguments for call in s.calls] == [{"x": 1}, {"a": "1", "b": 2}, None]


def test_unparseable_arguments_keep_their_raw_text() -> None:
    s = session()
    refused(s, "add", '{"a": 1,')
    assert s.calls[0].raw_arguments == '{"a": 1,'
    assert s.calls[0].arguments_json is None


def test_a_world_refusal_is_delivered_with_its_own_code() -> None:
    s = session()
    error = refused(s, "refund", {})
    assert (error.code, error.reason) == ("policy_refused", "refunds need a manager")
    (record,) = s.calls
    assert record.delivered
    assert record.error == "policy_refused"
    assert record.result == {
        "error": {"code": "policy_refused", "message": "refunds need a manager"}
    }
    assert record.model_visible_bytes == len(canonical_json(record.result).encode())
    assert s.harness_failure is None


@pytest.mark.parametrize("tool", ["crash", "garbage"])
def test_a_failing_handler_is_a_harness_error(tool: str) -> None:
    s = session()
    error = refused(s, tool, {})
    assert error.code == HANDLER_FAILED
    assert s.harness_failure is s.calls[0]
    assert not s.calls[0].delivered
    with pytest.raises(ToolHarnessError, match=f"tool '{tool}' failed at call 0"):
        s.raise_for_harness_failure()


def test_a_closed_session_refuses_every_call() -> None:
    s = session()
    s.call("add", {"a": 1, "b": 1})
    s.close()
    assert s.closed
    assert refused(s, "add", {"a": 1, "b": 1}).code == SESSION_CLOSED
    assert refused(s, "nope", {}).code == SESSION_CLOSED
    assert [call.error for call in s.calls] == [None, SESSION_CLOSED, SESSION_CLOSED]
    assert s.calls_used == 1


def test_the_call_budget_counts_every_admitted_call_whatever_its_outcome() -> None:
    s = session(Budget(max_calls=3))
    s.call("add", {"a": 1, "b": 1})
    refused(s, "nope", {})
    refused(s, "add", {})
    error = refused(s, "add", {"a": 1, "b": 1})
    assert error.code == BUDGET_EXHAUSTED
    assert s.calls_used == 3
    assert [call.error for call in s.calls] == [
        None,
        UNKNOWN_TOOL,
        INVALID_ARGUMENTS,
        BUDGET_EXHAUSTED,
    ]


def test_a_zero_call_budget_admits_nothing() -> None:
    ran: list[Any] = []
    spec = ToolSpec(name="t", description="", parameters=EMPTY, handler=ran.append)
    s = ToolSession([spec], Budget(max_calls=0))
    assert refused(s, "t", {}).code == BUDGET_EXHAUSTED
    assert ran == []


def test_an_answer_over_the_byte_budget_is_withheld_after_the_handler_ran() -> None:
    size = len(b'{"sum":2}')
    s = session(Budget(max_bytes=2 * size + 3))
    s.call("add", {"a": 1, "b": 1})
    s.call("add", {"a": 1, "b": 1})
    error = refused(s, "add", {"a": 1, "b": 1})
    assert error.code == BUDGET_EXHAUSTED
    withheld = s.calls[-1]
    assert not withheld.delivered
    assert withheld.model_visible_bytes == 0
    assert withheld.result == {"sum": 2}, "the withheld answer is kept for the record"
    assert s.bytes_used == 2 * size
    # A smaller answer still fits the 3 bytes left.
    assert s.call("echo", {"text": "a"}) == "a"
    assert s.bytes_used == 2 * size + 3


def test_a_spent_byte_budget_refuses_before_the_handler() -> None:
    ran: list[Any] = []

    def record(arguments: dict[str, Any]) -> Any:
        ran.append(arguments)
        return "xx"

    spec = ToolSpec(name="t", description="", parameters=EMPTY, handler=record)
    s = ToolSession([spec], Budget(max_bytes=4))
    assert s.call("t", {}) == "xx"
    assert refused(s, "t", {}).code == BUDGET_EXHAUSTED
    assert len(ran) == 1


def test_neither_side_can_change_what_was_recorded() -> None:
    shared = {"items": [1]}
    spec = ToolSpec(name="t", description="", parameters=EMPTY, handler=lambda _: shared)
    s = ToolSession([spec])
    arguments: dict[str, Any] = {}
    result = s.call("t", arguments)
    result["items"].append(2)
    assert shared == {"items": [1]}, "the adapter got a copy, not the world's state"
    shared["items"].append(3)
    assert s.calls[0].result == {"items": [1]}


def test_the_handler_gets_its_own_copy_of_the_arguments() -> None:
    def mutate(arguments: dict[str, Any]) -> Any:
        arguments["text"] = "changed"
        return None

    spec = ToolSpec(name="t", description="", parameters=TEXT, handler=mutate)
    s = ToolSession([spec])
    given = {"text": "original"}
    s.call("t", given)
    assert given == {"text": "original"}
    assert s.calls[0].arguments == {"text": "original"}


def test_two_tools_with_one_name_are_refused() -> None:
    spec = tools()[0]
    with pytest.raises(AgentbenchError) as caught:
        ToolSession([spec, spec.model_copy()])
    assert caught.value.code == "duplicate_tool"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "has space"),
        ("name", "x" * 65),
        ("parameters", {"type": "object"}),
        ("parameters", {"type": "object", "additionalProperties": False, "x": float("nan")}),
    ],
)
def test_a_malformed_spec_is_refused(field: str, value: Any) -> None:
    fields: dict[str, Any] = {"name": "t", "description": "", "parameters": EMPTY, "handler": add}
    fields[field] = value
    with pytest.raises(pydantic.ValidationError):
        ToolSpec(**fields)


def test_a_spec_keeps_its_own_copy_of_the_schema() -> None:
    schema = json.loads(json.dumps(ADD_SCHEMA))
    spec = ToolSpec(name="t", description="", parameters=schema, handler=add)
    schema["properties"]["a"]["type"] = "string"
    assert spec.parameters["properties"]["a"]["type"] == "integer"
    assert ToolSession([spec]).call("t", {"a": 1, "b": 2}) == {"sum": 3}


def test_exports_in_openai_and_mcp_shapes() -> None:
    s = session()
    openai = s.openai_tools()
    assert openai[0] == {
        "type": "function",
        "function": {"name": "add", "description": "Add two integers.", "parameters": ADD_SCHEMA},
    }
    mcp = s.mcp_tools()
    assert mcp[0] == {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": ADD_SCHEMA,
        "annotations": {"readOnlyHint": True},
    }
    assert mcp[1]["annotations"] == {"readOnlyHint": False}
    openai[0]["function"]["parameters"]["type"] = "changed"
    assert s.tools[0].parameters["type"] == "object"


def test_a_descriptor_is_a_spec_without_its_handler() -> None:
    spec = tools()[1]
    descriptor = spec.describe()
    assert type(descriptor) is ToolDescriptor
    assert descriptor.model_dump() == spec.model_dump()
    assert "handler" not in spec.model_dump()


def test_a_tool_call_error_survives_pickling() -> None:
    error = ToolCallError(INVALID_ARGUMENTS, "bad", field="arguments.a")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.code, copy.reason, copy.location.field) == (
        "invalid_arguments",
        "bad",
        "arguments.a",
    )
    assert copy.render() == "[invalid_arguments] arguments.a: bad"


def play(s: ToolSession) -> Receipt:
    s.call("add", {"a": 1, "b": 2})
    for name, arguments in [("refund", {}), ("nope", {}), ("add", "{")]:
        with pytest.raises(ToolCallError):
            s.call(name, arguments)
    return s.receipt({"answer": 3})


def test_the_receipt_digest_ignores_observations_only() -> None:
    first = play(session())
    slow = ToolSession(tools(), None, context={"case": "c1"}, clock=lambda: 5.0)
    second = play(slow)
    assert first.observations != second.observations
    assert first.digest == second.digest
    third = play(ToolSession(tools(), None, context={"case": "c2"}))
    assert third.digest != first.digest
    canonical = first.canonical
    assert canonical.totals.model_dump() == {
        "calls": 4,
        "delivered": 2,
        "model_visible_bytes": first.canonical.calls[0].model_visible_bytes
        + first.canonical.calls[1].model_visible_bytes,
        "errors": {INVALID_ARGUMENTS: 1, UNKNOWN_TOOL: 1, "policy_refused": 1},
    }
    assert [c.error for c in canonical.calls] == [
        None,
        "policy_refused",
        UNKNOWN_TOOL,
        INVALID_ARGUMENTS,
    ]
    assert canonical.final == {"answer": 3}
    assert canonical.tools[1].mutating


def test_a_receipt_round_trips_and_refuses_tampering() -> None:
    receipt = play(session())
    dumped = receipt.model_dump(mode="json")
    assert Receipt.model_validate(dumped) == receipt
    assert Receipt.model_validate_json(receipt.model_dump_json()).digest == receipt.digest
    dumped["canonical"]["final"] = {"answer": 4}
    with pytest.raises(pydantic.ValidationError, match="canonical partition hashes to"):
        Receipt.model_validate(dumped)


@pytest.mark.parametrize(
    "final",
    [None, {"answer": 'naïve \u2028 "quoted" \\ tab\t'}, [1, 2.5, {"b": 1, "a": [True]}], "😀"],
)
def test_a_built_receipt_carries_the_digest_its_reading_recomputes(final: Any) -> None:
    """Receipt.build puts the digest together from each tool's cached canonical text and
    each call's recorded arguments and result, whatever the call's outcome."""
    unicode_tool = ToolSpec(
        name="gruss",
        description='Ünïcode "quotes" and \\ slashes \u2028',
        parameters={**TEXT, "description": "é"},
        handler=echo,
    )
    built = ToolSession(
        [*tools(), unicode_tool], Budget(max_calls=9), context={"case": "ç", "seed": 7}
    )
    built.call("add", {"a": 1, "b": 2})
    built.call("echo", {"text": "żółw"})
    built.call("gruss", {"text": "ß"})
    refused(built, "add", '{"a": 1,')
    refused(built, "add", {"a": "one", "b": 2})
    refused(built, "refund", {})
    refused(built, "crash", {})
    refused(built, "missing", {"x": [1.5, None]})
    withheld = ToolSession(tools(), Budget(max_bytes=3))
    refused(withheld, "echo", {"text": "more than three bytes"})
    for receipt in (
        withheld.receipt(),
        built.receipt(final),
        built.receipt(final, failure_class="wrong_answer", failure_code="x", failure_reason="y"),
        Receipt.build(tools=[tool.describe() for tool in tools()], budget=Budget(), calls=[]),
    ):
        assert receipt.digest == canonical_digest(receipt.canonical)
        assert Receipt.model_validate(receipt.model_dump(mode="json")).digest == receipt.digest


def test_the_receipt_digest_is_a_fixed_value() -> None:
    """Pinned: a change to the receipt's canonical form must be deliberate."""
    receipt = play(session())
    assert receipt.digest == ("74e4e2c1816872237252b663b300a2f15b3dc5b5fdfadcef63c456e6e6e65fcf"), (
        receipt.digest
    )


def test_the_shipped_receipt_schema_is_current_and_validates_receipts() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text()
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.validate(play(session()).model_dump(mode="json"), schema)


def one_decision(spec: ToolSpec, arguments: dict[str, Any], s: ToolSession) -> None:
    if spec.mutating and any(
        c.delivered and c.name == spec.name and c.error is None for c in s.calls
    ):
        raise ToolCallError("decision_already_made", "one decision per invocation")


def test_a_world_guard_refuses_before_the_handler_and_is_not_delivered() -> None:
    ran: list[Any] = []

    def decide(arguments: dict[str, Any]) -> Any:
        ran.append(arguments)
        return "ok"

    spec = ToolSpec(name="decide", description="", parameters=EMPTY, mutating=True, handler=decide)
    s = ToolSession([spec, tools()[0]], guard=one_decision)
    assert s.call("decide", {}) == "ok"
    assert s.call("add", {"a": 1, "b": 1}) == {"sum": 2}
    error = refused(s, "decide", {})
    assert error.code == "decision_already_made"
    assert len(ran) == 1
    assert (s.calls[-1].delivered, s.calls[-1].model_visible_bytes) == (False, 0)
    assert s.harness_failure is None


def test_a_failing_guard_is_a_harness_error() -> None:
    def broken(spec: ToolSpec, arguments: dict[str, Any], s: ToolSession) -> None:
        raise LookupError("no policy table")

    s = ToolSession(tools(), guard=broken)
    assert refused(s, "add", {"a": 1, "b": 1}).code == HANDLER_FAILED
    assert s.harness_failure is s.calls[0]


def test_a_session_is_what_adapters_may_rely_on() -> None:
    assert isinstance(session(), ToolSessionLike)


OPEN_FILTERS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"filters": {"type": "object"}},
}


def test_an_open_object_takes_json_members_and_refuses_the_rest() -> None:
    spec = ToolSpec(name="find", description="Find.", parameters=OPEN_FILTERS, handler=echo_all)
    session = ToolSession([spec])
    assert session.call("find", '{"filters": {"lang": "de", "n": [1]}}') == {
        "filters": {"lang": "de", "n": [1]}
    }
    for filters in ({"x": {1, 2}}, {"x": float("nan")}, {3: "a"}):
        with pytest.raises(ToolCallError) as refused:
            session.call("find", {"filters": filters})
        assert refused.value.code == INVALID_ARGUMENTS
        assert (refused.value.location.field or "").startswith("arguments.filters")
    assert [call.error for call in session.calls] == [None, *[INVALID_ARGUMENTS] * 3]
    assert session.calls[1].arguments_json is None


def test_the_arguments_themselves_must_be_a_closed_object() -> None:
    with pytest.raises(pydantic.ValidationError, match="must be a closed object"):
        ToolDescriptor(name="find", description="Find.", parameters={"type": "object"})


def echo_all(arguments: dict[str, Any]) -> Any:
    return arguments
