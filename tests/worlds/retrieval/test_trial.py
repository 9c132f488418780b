"""The per-step delivery rules, the final envelope's parsing, and receipts (sections 3, 4, 6)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pytest_agentbench.worlds.retrieval import tools
from pytest_agentbench.worlds.retrieval.agent import FixtureAgent
from pytest_agentbench.worlds.retrieval.backends import BackendError, LexicalBackend, TaskScope
from pytest_agentbench.worlds.retrieval.envelope import parse_final
from pytest_agentbench.worlds.retrieval.harness import Harness
from pytest_agentbench.worlds.retrieval.jscanon import canonical, fingerprint
from tests.worlds.retrieval.conftest import Small


class Scripted(FixtureAgent):
    """Plays a fixed list of steps."""

    agent_id = "scripted"

    def __init__(self, steps: list[Any]) -> None:
        super().__init__()
        self.steps = steps

    def next_step(
        self,
        task: Mapping[str, Any],
        history: Sequence[Mapping[str, Any]],
        cues: Mapping[str, Sequence[str]] | None = None,
    ) -> Any:
        return self.steps.pop(0) if self.steps else {"kind": "final", "envelope": {}}


def search(**extra: Any) -> dict[str, Any]:
    return {"kind": "tool", "toolName": "search", "arguments": {"query": "error", **extra}}


def run(small: Small, steps: list[Any], backend: Any = None, task: str = "t0000001") -> Any:
    harness = Harness(small.public, small.harness.cues)
    return harness.run(task, "cold", backend or small.backend, Scripted(steps)).canonical


def test_a_receipt_rerun_is_byte_identical(small: Small) -> None:
    first = Harness(small.public, small.harness.cues).run(
        "t0000001", "cold", LexicalBackend(), FixtureAgent()
    )
    second = Harness(small.public, small.harness.cues).run(
        "t0000001", "cold", LexicalBackend(), FixtureAgent()
    )
    assert canonical(first.canonical) == canonical(second.canonical)
    assert first.receipt["observations"]["timings"]["endToEnd"]["valueMs"] is not None
    assert set(first.receipt) == {"schemaVersion", "canonical", "observations"}
    # The original's closed canonical partition: exactly these fields.
    assert set(first.canonical) == {
        "schemaVersion",
        "taskId",
        "adapterId",
        "trialId",
        "seed",
        "lifecycle",
        "agentId",
        "capabilities",
        "calls",
        "agentCalls",
        "backendInvocations",
        "modelVisibleUtf8Bytes",
        "measuredTokens",
        "finalEnvelope",
        "stopReason",
        "failure",
        "fingerprints",
    }


def test_call_budget_records_one_undelivered_call_with_a_synthetic_result(small: Small) -> None:
    receipt = run(small, [search(), search(), search(), search()])
    assert receipt["agentCalls"] == 4
    last = receipt["calls"][-1]
    assert last["deliveredToAgent"] is False
    assert last["failureCode"] == "agent_call_budget_exceeded"
    assert last["result"] == tools.synthetic_error("search", "agent_call_budget_exceeded")
    assert last["modelVisibleUtf8Bytes"] == 0
    assert receipt["failure"] == {
        "class": "agent_error",
        "code": "agent_call_budget_exceeded",
        "redactedMessage": None,
    }
    assert (receipt["finalEnvelope"], receipt["stopReason"]) == (None, "error")


def test_bytes_are_the_utf8_length_of_the_canonical_projection(small: Small) -> None:
    receipt = run(small, [search()])
    call = receipt["calls"][0]
    projected = tools.projection(call["result"])
    assert "backendSourceHash" not in canonical(projected)
    assert call["modelVisibleUtf8Bytes"] == len(canonical(projected).encode())
    assert receipt["modelVisibleUtf8Bytes"] == call["modelVisibleUtf8Bytes"]


def test_byte_budget_withholds_the_result_but_records_it(small: Small) -> None:
    backend = LexicalBackend()
    harness = Harness(small.public, small.harness.cues)
    task = small.public.tasks["t0000001"]
    tight = task.model_copy(
        update={"budgets": task.budgets.model_copy(update={"maxModelVisibleBytes": 50})}
    )
    harness.public = type(small.public)(
        **{**small.public.__dict__, "tasks": {**small.public.tasks, "t0000001": tight}}
    )
    receipt = harness.run("t0000001", "cold", backend, Scripted([search()])).canonical
    (call,) = receipt["calls"]
    assert (call["deliveredToAgent"], call["failureCode"]) == (
        False,
        "context_byte_budget_exceeded",
    )
    assert call["result"]["status"] == "ok"  # the valid result is kept
    assert receipt["failure"]["class"] == "agent_error"


class Raising(LexicalBackend):
    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        self.exc = exc

    def call(self, tool: str, arguments: Mapping[str, Any], scope: TaskScope) -> dict[str, Any]:
        raise self.exc


class Garbage(LexicalBackend):
    def __init__(self, mutate: Any) -> None:
        super().__init__()
        self.mutate = mutate

    def call(self, tool: str, arguments: Mapping[str, Any], scope: TaskScope) -> Any:
        result = super().call(tool, arguments, scope)
        return self.mutate(result)


def _first_item(result: dict[str, Any], **change: Any) -> dict[str, Any]:
    result["evidence"][0].update(change)
    return result


@pytest.mark.parametrize(
    ("backend", "failure"),
    [
        (Raising(RuntimeError("boom")), ("product_error", "tool_call_failed")),
        (Raising(TimeoutError()), ("product_error", "tool_timeout")),
        (
            Raising(BackendError("index_gone", "gone", "harness_error")),
            ("harness_error", "index_gone"),
        ),
        (Garbage(lambda r: "not a result"), ("harness_error", "invalid_tool_result")),
        (Garbage(lambda r: {**r, "extra": 1}), ("harness_error", "invalid_tool_result")),
        (Garbage(lambda r: {**r, "errorCode": "x"}), ("harness_error", "invalid_tool_result")),
        (
            Garbage(lambda r: _first_item(r, text="forged")),
            ("harness_error", "invalid_tool_result"),
        ),
        (
            Garbage(lambda r: _first_item(r, backendHashUnavailableReason=None)),
            ("harness_error", "invalid_tool_result"),
        ),
        (
            Garbage(lambda r: _first_item(r, sourceHash="0" * 64)),
            ("harness_error", "invalid_tool_result"),
        ),
        (
            Garbage(lambda r: _first_item(r, uri="gno://c002/计划.md")),
            ("product_error", "foreign_result"),
        ),
    ],
)
def test_backend_failures_are_classified_and_undelivered(
    small: Small, backend: Any, failure: tuple[str, str]
) -> None:
    backend.prepare(small.public.docs)
    receipt = run(small, [search()], backend)
    (call,) = receipt["calls"]
    assert call["deliveredToAgent"] is False
    assert (receipt["failure"]["class"], receipt["failure"]["code"]) == failure
    assert call["failureCode"] == failure[1]


@pytest.mark.parametrize(
    ("step", "code"),
    [
        ({"kind": "tool", "toolName": "delete", "arguments": {}}, "disallowed_tool"),
        ({"kind": "tool", "toolName": "search", "arguments": {"query": 1}}, "invalid_agent_action"),
        ({"kind": "tool", "toolName": "search", "arguments": {"q": "x"}}, "invalid_agent_action"),
        (
            {"kind": "tool", "toolName": "get", "arguments": {"uri": "x", "fromLine": 0}},
            "invalid_agent_action",
        ),
        (
            {"kind": "tool", "toolName": "multi_get", "arguments": {"uris": []}},
            "invalid_agent_action",
        ),
        ({"kind": "think"}, "invalid_agent_step"),
        ("search", "invalid_agent_step"),
        ({"kind": "final", "envelope": {}, "note": "x"}, "invalid_agent_step"),
    ],
)
def test_invalid_steps_are_agent_errors_without_a_recorded_call(
    small: Small, step: Any, code: str
) -> None:
    receipt = run(small, [step])
    assert receipt["calls"] == []
    assert (receipt["failure"]["class"], receipt["failure"]["code"]) == ("agent_error", code)


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"query": "x", "collection": "c002"}, "foreign_collection"),
        ({"query": "x", "collection": "c999"}, "foreign_collection"),
    ],
)
def test_foreign_collections_are_refused_before_the_backend(
    small: Small, arguments: dict[str, Any], code: str
) -> None:
    receipt = run(small, [{"kind": "tool", "toolName": "search", "arguments": arguments}])
    assert receipt["calls"][0]["backendInvocations"] == 0
    assert receipt["failure"]["code"] == code


def test_foreign_uris_are_refused_before_the_backend(small: Small) -> None:
    step = {"kind": "tool", "toolName": "multi_get", "arguments": {"uris": ["gno://c002/计划.md"]}}
    receipt = run(small, [step])
    assert receipt["failure"]["code"] == "foreign_uri"


def test_a_single_collection_search_is_scoped_automatically(small: Small) -> None:
    receipt = run(small, [search()])
    assert receipt["calls"][0]["deliveredToAgent"] is True


def test_fingerprints_and_capabilities(small: Small) -> None:
    receipt = small.receipt("t0000001")
    prints = receipt["fingerprints"]
    assert prints["corpus"] == small.public.corpus_fingerprint
    assert prints["tools"] == tools.TOOLS_FINGERPRINT == fingerprint(tools.tool_definitions())
    assert prints["model"] == fingerprint(
        {"agent": "fixture-agent-v1", "stateMachine": "search-read-final-v1"}
    )
    assert prints["config"] == fingerprint(small.backend.config)
    assert receipt["capabilities"]["backendHashes"] == "unsupported"
    assert receipt["capabilities"]["measuredTokens"] == "unavailable"


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        '{"schemaVersion": "1.0", "claims": [], "gaps": [], "abstained": true, '
        '"stopReason": "abstained", "abstained": true}',
        '{"schemaVersion": "1.0", "claims": [], /* c */ "gaps": [], "abstained": true, '
        '"stopReason": "abstained"}',
        '{"schemaVersion": "1.0", "claims": [], "gaps": [], "abstained": true, '
        '"stopReason": "abstained",}',
        '{"schemaVersion": "1.0"} {"x": 1}',
        "The answer is INC-1.",
        '{"schemaVersion":"1.0","claims":[{"claimKey":"a","value":{"type":"string","value":"x",'
        '"value":"y"},"citations":[]}],"gaps":[],"abstained":false,"stopReason":"complete"}',
    ],
)
def test_raw_model_text_must_be_exactly_one_strict_json_value(small: Small, raw: str) -> None:
    parsed = parse_final(raw, small.public.tasks["t0000003"])
    assert parsed.failure_code == "malformed_agent_json"
    assert parsed.envelope is None


def _envelope(claims: list[Any], gaps: list[Any], *, abstained: bool = False) -> dict[str, Any]:
    return {
        "schemaVersion": "1.0",
        "claims": claims,
        "gaps": gaps,
        "abstained": abstained,
        "stopReason": "abstained" if abstained else "complete",
    }


CITE = {
    "uri": "gno://c001/gateway.md",
    "sourceHash": "a" * 64,
    "startLine": 3,
    "endLine": 3,
    "spanHash": "b" * 64,
    "sourceHashProvenance": "harness_observed",
    "spanHashProvenance": "harness_observed",
}
GOOD = {
    "claimKey": "errorIdentifier",
    "value": {"type": "identifier", "value": "E-1"},
    "citations": [CITE],
}


@pytest.mark.parametrize(
    ("envelope", "message"),
    [
        (_envelope([GOOD, GOOD], []), "duplicate_claim:errorIdentifier"),
        (_envelope([GOOD, {**GOOD, "claimKey": "other"}], []), "extra_claim:other"),
        (
            _envelope([{**GOOD, "value": {"type": "string", "value": "E-1"}}], []),
            "type_mismatch:errorIdentifier",
        ),
        (_envelope([{**GOOD, "citations": []}], []), "uncited_required_claim:errorIdentifier"),
        (
            _envelope([{**GOOD, "citations": [{**CITE, "endLine": 2}]}], []),
            "invalid_evidence_range:errorIdentifier",
        ),
        (
            _envelope(
                [],
                [{"claimKey": "errorIdentifier", "reason": "missing_evidence"}] * 2,
                abstained=True,
            ),
            "duplicate_gap:errorIdentifier",
        ),
        (_envelope([GOOD], [{"claimKey": "zzz", "reason": "missing_evidence"}]), "extra_gap:zzz"),
        (_envelope([], [], abstained=True), "missing_required_claim:errorIdentifier"),
    ],
)
def test_semantic_checks_refuse_the_envelope(
    small: Small, envelope: dict[str, Any], message: str
) -> None:
    parsed = parse_final(envelope, small.public.tasks["t0000001"])
    assert parsed.failure_code == "invalid_final_envelope"
    assert parsed.message is not None
    assert message in parsed.message


@pytest.mark.parametrize(
    "broken",
    [
        {**_envelope([GOOD], []), "answer": "prose"},
        _envelope([{**GOOD, "value": {"type": "date", "value": "2026-02-30"}}], []),
        _envelope([{**GOOD, "value": {"type": "string[]", "value": ["a", "a"]}}], []),
        _envelope([{**GOOD, "value": {"type": "identifier", "value": ""}}], []),
        _envelope([{**GOOD, "value": {"type": "number", "value": "3"}}], []),
        {**_envelope([GOOD], []), "stopReason": "done"},
        _envelope([GOOD], [{"claimKey": "x", "reason": "unknown"}]),
    ],
)
def test_schema_failures_refuse_the_envelope(small: Small, broken: dict[str, Any]) -> None:
    parsed = parse_final(broken, small.public.tasks["t0000001"])
    assert parsed.failure_code == "invalid_final_envelope"


def test_a_valid_envelope_passes(small: Small) -> None:
    parsed = parse_final(_envelope([GOOD], []), small.public.tasks["t0000001"])
    assert parsed.failure_code is None
    assert parsed.envelope == _envelope([GOOD], [])


OPEN_ARGUMENTS = {
    "filters": {"lang": "de", "nested": {"tags": ["a", 1, None], "score": 0.5}},
    "queryModes": [{"mode": "lexical", "weight": 2}, {}],
}


def test_filters_and_query_modes_are_open_objects_as_the_format_declares(small: Small) -> None:
    receipt = run(small, [search(**OPEN_ARGUMENTS)])
    (call,) = receipt["calls"]
    assert call["deliveredToAgent"] is True
    assert {key: call["arguments"][key] for key in OPEN_ARGUMENTS} == OPEN_ARGUMENTS


@pytest.mark.parametrize(
    "extra",
    [{"filters": "de"}, {"filters": ["de"]}, {"queryModes": ["lexical"]}, {"queryModes": {}}],
)
def test_filters_and_query_modes_must_still_be_objects(small: Small, extra: Any) -> None:
    receipt = run(small, [search(**extra)])
    assert receipt["calls"] == []
    assert receipt["failure"]["code"] == "invalid_agent_action"


def test_a_limit_of_one_point_zero_is_the_integer_one_as_in_the_formats_draft_07(
    small: Small,
) -> None:
    receipt = run(small, [search(limit=1.0)])
    (call,) = receipt["calls"]
    assert call["deliveredToAgent"] is True
    assert call["arguments"]["limit"] == 1
    assert receipt["failure"] is None or receipt["failure"]["code"] != "invalid_agent_action"


class ReadsTools:
    """An outer agent that keeps the session's tool declarations and abstains."""

    def __init__(self) -> None:
        self.declared: list[dict[str, Any]] = []

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        self.declared = session.mcp_tools()
        session.call("search", {"query": "error", **OPEN_ARGUMENTS})
        return {}


def test_an_outer_agent_is_shown_the_formats_exact_schemas(small: Small) -> None:
    agent = ReadsTools()
    result = Harness(small.public, small.harness.cues).run("t0000001", "cold", small.backend, agent)
    assert result.canonical["calls"][0]["deliveredToAgent"] is True
    declared = sorted(agent.declared, key=lambda tool: tool["name"])
    assert {tool["name"]: tool["inputSchema"] for tool in declared} == tools.INPUT_SCHEMAS
    fields = ("name", "description", "inputSchema")
    shown = [{key: tool[key] for key in fields} for tool in declared]
    assert fingerprint(shown) == tools.TOOLS_FINGERPRINT
