"""The episode artefact (contract 8), and the three readers that make three different claims.

One canonical JSON document per episode: what was run (operation, scenario,
agent), the events as delivered, the trajectory, the final state, the result
vector, the decision tape with the execution record of how its decisions were
produced, and ``provider_execution``, the binding to the execution ledger that
witnessed a model run (``null`` for a run that reached no provider).

- :func:`validate_artifact` establishes *coherence*: every field at every level
  has its exact field set, type, range and form (as the original's reader holds
  it), the evaluation's verdicts follow from its own findings, and the binding,
  the execution record, the tape and the identity describe one run (one attempt
  record per decision, the exact contiguous decision -> call index mapping). It
  never opens the ledger, so it says nothing about what the ledger holds.
- :func:`replay_artifact` establishes *reproduction*: the episode is re-executed
  with every network connection refused, at zero provider calls, and the rebuilt
  document must equal this one. A deterministic record of a built-in agent is
  reproduced by running the agent it names; a model record (or one of an adapter
  this build does not ship) from its own tape, with what a rerun from a tape
  cannot produce (the agent's identity, its execution record and the binding)
  carried forward and named in ``carried_forward``.
- :func:`audit_artifact` establishes *agreement* with one journal: its chain
  verifies and ends ``scored``, its totals re-derived from its rows are the
  binding's, and call by call it holds the request and decision digests the
  artefact records.

None of them is attestation of what a provider answered: both documents are
written locally, and a content digest cannot tell a provider that answered
from one never asked. Contracts 1 to 7 are read under their own field sets
and result vectors; only contract 8 is written and reproduced.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_agentbench.sdk import (
    LEDGER_VERSION,
    PROVIDER_EXECUTION_FIELDS,
    AgentbenchError,
    CallPayload,
    ControlAgent,
    EpisodeBinding,
    HeaderPayload,
    JsonValue,
    ProviderExecution,
    audit_ledger,
    canonical_bytes,
    derive_provider_execution,
    sha256_hex,
)
from pytest_agentbench.worlds.operations import outcomes as oc
from pytest_agentbench.worlds.operations.agents import control_agents
from pytest_agentbench.worlds.operations.episode import (
    DEADLOCK,
    ENGINE_VERSION,
    HORIZON,
    MALFORMED,
    episode_from_json,
    run_episode,
)
from pytest_agentbench.worlds.operations.evaluation import DIMENSIONS, evaluate_episode
from pytest_agentbench.worlds.operations.packs import installed_packs
from pytest_agentbench.worlds.operations.replay import ReplayDiverged, replay, replay_codes
from pytest_agentbench.worlds.operations.spec import LoadedSpec, render_time

ARTIFACT_VERSION = 8
SUPPORTED_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8)
REPRODUCIBLE_VERSIONS = (ARTIFACT_VERSION,)
PROTOCOL_VERSION = "pytest-agentbench.chat-completions.v1"
"""How the chat agent turns a task into requests (``agents/chat.py``)."""
SOURCE_MODEL = "model"
SOURCE_DETERMINISTIC = "deterministic"
KIND_MODEL = "model"
KIND_IN_PROCESS = "in_process"
MALFORMED_KIND = "MALFORMED"
OUTCOME_KINDS = frozenset({"ACT", "WAIT", "ASK", "ESCALATE", "COMPLETE"})
EVENT_RECORDS = frozenset({"event_accepted", "event_rejected"})

NOTE = (
    "Content digests over canonical UTF-8 JSON: two records with the same digest carry "
    "the same content. They are not tamper-evidence and attest nothing a provider said."
)

_FIELDS_V1 = (
    "artifact_version",
    "engine_version",
    "operation",
    "scenario_id",
    "semantic_scenario_id",
    "scenario_label",
    "agent_id",
    "agent_kind",
    "expected_terminal",
    "status",
    "terminal_outcome",
    "replay_final",
    "started_at",
    "ended_at",
    "simulated_minutes",
    "agent_invocations",
    "events",
    "trajectory",
    "final_state",
    "final_state_digest_sha256",
    "trajectory_digest_sha256",
    "evaluation",
    "note",
)
_FIELDS_V2 = (*_FIELDS_V1, "decisions", "decisions_digest_sha256", "agent_execution")
_FIELDS_V4 = (*_FIELDS_V2, "operation_instance_id")
_FIELDS_V7 = (*_FIELDS_V4, "provider_execution")
FIELDS_BY_VERSION: Mapping[int, tuple[str, ...]] = {
    1: _FIELDS_V1,
    2: _FIELDS_V2,
    3: _FIELDS_V2,
    4: _FIELDS_V4,
    5: _FIELDS_V4,
    6: _FIELDS_V4,
    7: _FIELDS_V7,
    8: _FIELDS_V7,
}
"""Each contract's exact top-level field set (contracts 3, 5 and 6 moved meaning, not shape)."""
DIMENSIONS_BY_VERSION: Mapping[int, tuple[str, ...]] = {
    1: DIMENSIONS[:9],
    **dict.fromkeys((2, 3, 4, 5), DIMENSIONS[:10]),
    **dict.fromkeys((6, 7, 8), DIMENSIONS),
}
"""The result vector each contract graded: environment_integrity from 2, retrieval from 6."""
EXECUTION_FIELDS = (
    "outcome_source",
    "model",
    "protocol_version",
    "max_output_tokens",
    "transport_calls",
    "retry_count",
    "attempts",
    "excluded",
    "exclusion_code",
    "exclusion_detail",
)
ATTEMPT_FIELDS = (
    "invocation_index",
    "turn_index",
    "request_digest_sha256",
    "outcome",
    "fault",
    "decision_digest_sha256",
)
OPERATION_FIELDS = (
    "operation_id",
    "operation_type",
    "operation_version",
    "semantic_scenario_id",
    "privacy_status",
    "spec_digest_sha256",
    "scenario_ids",
)
CARRIED_FORWARD = ("agent_id", "agent_kind", "agent_execution", "provider_execution")
"""What a rerun from the tape cannot produce, so a replay carries it forward unchanged."""


def digest(value: JsonValue) -> str:
    return sha256_hex(canonical_bytes(value))


def decision_kind(outcome: JsonValue) -> str | None:
    if not isinstance(outcome, dict):
        return None
    kind = outcome.get("outcome", outcome.get("kind"))
    return kind if isinstance(kind, str) else None


def _attempt_class(kind: str | None) -> str:
    return "classified" if kind == MALFORMED_KIND else "decided"


# --- writing ---------------------------------------------------------------------------


def _evaluation(vector: Any) -> dict[str, JsonValue]:
    dimensions: list[JsonValue] = [
        {
            "name": dimension.name,
            "ok": dimension.passed,
            "findings": [{"code": code, "detail": "", "at": None} for code in dimension.codes],
            "counts": dict(dimension.counts),
            "note": None,
        }
        for dimension in vector.dimensions
    ]
    return {
        "terminal_outcome": vector.terminal,
        "legitimate_completion": vector.terminal == vector.expected_terminal,
        "reliable": vector.reliable,
        "failed_dimensions": [d.name for d in vector.dimensions if not d.passed],
        "finding_codes": sorted({code for d in vector.dimensions for code in d.codes}),
        "dimensions": dimensions,
    }


def _execution(binding: EpisodeBinding, tape: Sequence[JsonValue]) -> dict[str, JsonValue]:
    if binding.provider_execution is None:
        return {
            "outcome_source": SOURCE_DETERMINISTIC,
            "model": None,
            "protocol_version": None,
            "max_output_tokens": None,
            "transport_calls": 0,
            "retry_count": 0,
            "attempts": [],
            "excluded": False,
            "exclusion_code": None,
            "exclusion_detail": None,
        }
    if len(binding.calls) != len(tape):
        raise AgentbenchError(
            "artifact_ledger_mismatch",
            f"the ledger records {len(binding.calls)} calls for {len(tape)} decisions",
            field="provider_execution.decision_call_index",
        )
    attempts: list[JsonValue] = []
    for call, decision in zip(binding.calls, tape, strict=True):
        assert isinstance(decision, dict)
        attempts.append(
            {
                "invocation_index": decision["invocation_index"],
                "turn_index": decision["turn_index"],
                "request_digest_sha256": call.request_digest_sha256,
                "outcome": _attempt_class(decision_kind(decision["outcome"])),
                "fault": None,
                "decision_digest_sha256": call.decision_digest_sha256,
            }
        )
    execution = binding.provider_execution
    return {
        "outcome_source": SOURCE_MODEL,
        "model": binding.model,
        "protocol_version": PROTOCOL_VERSION,
        "max_output_tokens": binding.max_output_tokens,
        "transport_calls": execution.provider_calls,
        "retry_count": execution.attempts - execution.provider_calls,
        "attempts": attempts,
        "excluded": False,
        "exclusion_code": None,
        "exclusion_detail": None,
    }


def build_artifact(
    loaded: LoadedSpec, output: Mapping[str, Any], binding: EpisodeBinding
) -> dict[str, JsonValue]:
    """The contract-8 document of one episode record and the run that produced it."""
    record = episode_from_json(output)
    spec = loaded.spec
    scenario = spec.scenarios[record.scenario_id]
    codes = [str(code) for code in output.get("replay_codes", ["REPLAY_NOT_CHECKED"])]
    vector = evaluate_episode(record, loaded.domain, scenario, codes)
    start = loaded.start(record.scenario_id)
    tape: list[JsonValue] = list(record.tape)
    trajectory: list[JsonValue] = list(record.ledger)
    model_run = binding.provider_execution is not None
    return {
        "artifact_version": ARTIFACT_VERSION,
        "engine_version": ENGINE_VERSION,
        "operation": {
            "operation_id": spec.operation_id,
            "operation_type": spec.operation_type,
            "operation_version": spec.operation_version,
            "semantic_scenario_id": spec.semantic_scenario_id,
            "privacy_status": spec.privacy_status,
            "spec_digest_sha256": loaded.digest,
            "scenario_ids": sorted(spec.scenarios),
        },
        "scenario_id": record.scenario_id,
        "semantic_scenario_id": spec.semantic_scenario_id,
        "scenario_label": scenario.label,
        "agent_id": binding.agent_id,
        "agent_kind": KIND_MODEL if model_run else KIND_IN_PROCESS,
        "expected_terminal": scenario.expected_terminal,
        "status": record.status,
        "terminal_outcome": record.status if record.status in loaded.domain.terminals else None,
        "replay_final": record.replay_final,
        "started_at": render_time(start, 0),
        "ended_at": render_time(start, record.simulated_minutes),
        "simulated_minutes": record.simulated_minutes,
        "agent_invocations": record.invocations,
        "events": [
            row
            for row in trajectory
            if isinstance(row, dict) and row.get("record_type") in EVENT_RECORDS
        ],
        "trajectory": trajectory,
        "final_state": record.final_state,
        "final_state_digest_sha256": digest(record.final_state),
        "trajectory_digest_sha256": digest(trajectory),
        "evaluation": _evaluation(vector),
        "note": NOTE,
        "decisions": tape,
        "decisions_digest_sha256": digest(tape),
        "agent_execution": _execution(binding, tape),
        "operation_instance_id": "opi_"
        + digest({"spec": loaded.digest, "scenario": record.scenario_id})[:32],
        "provider_execution": None
        if binding.provider_execution is None
        else binding.provider_execution.model_dump(mode="json"),
    }


# --- validate: coherence of one document -----------------------------------------------


def _refuse(code: str, reason: str, display: str, field: str | None = None) -> AgentbenchError:
    return AgentbenchError(code, reason, file=display, field=field)


def _exact_fields(value: Any, fields: Sequence[str], code: str, display: str, where: str) -> None:
    if not isinstance(value, dict):
        raise _refuse(code, "expected an object", display, where or None)
    missing = [name for name in fields if name not in value]
    extra = sorted(set(value) - set(fields))
    if missing or extra:
        what = f"missing {missing[0]!r}" if missing else f"unknown field {extra[0]!r}"
        field = f"{where}.{(missing or extra)[0]}" if where else (missing or extra)[0]
        raise _refuse(code, f"{what}: this contract's field set is exact", display, field)


def validate_artifact(document: Any, display: str) -> int:
    """Refuse, by name, a document whose parts do not describe one run; its version if they do."""
    if not isinstance(document, dict):
        raise _refuse("artifact_invalid", "an episode artefact is a JSON object", display)
    version = document.get("artifact_version")
    if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
        raise _refuse(
            "artifact_version_unsupported",
            f"artifact_version {version!r}; this build reads {list(SUPPORTED_VERSIONS)}",
            display,
            "artifact_version",
        )
    _exact_fields(document, FIELDS_BY_VERSION[version], "artifact_fields_mismatch", display, "")
    _exact_fields(
        document["operation"], OPERATION_FIELDS, "artifact_fields_mismatch", display, "operation"
    )
    _check_shape(document, version, display)
    _check_identity(document, display)
    _check_evaluation(document, version, display)
    if version >= 2:
        _check_tape(document, display)
        _check_execution(document, display)
    if version >= 7:
        _check_binding(document, display)
    return int(version)


def _check_identity(document: dict[str, Any], display: str) -> None:
    operation = document["operation"]
    _exact_fields(operation, OPERATION_FIELDS, "artifact_fields_mismatch", display, "operation")
    scenarios = operation["scenario_ids"]
    if not isinstance(scenarios, list) or document["scenario_id"] not in scenarios:
        raise _refuse(
            "artifact_identity_mismatch",
            "the scenario is not one of the operation's",
            display,
            "scenario_id",
        )
    if document["semantic_scenario_id"] != operation["semantic_scenario_id"]:
        raise _refuse(
            "artifact_identity_mismatch",
            "the semantic scenario is not the operation's",
            display,
            "semantic_scenario_id",
        )
    for name, content in (
        ("final_state_digest_sha256", document["final_state"]),
        ("trajectory_digest_sha256", document["trajectory"]),
    ):
        if document[name] != digest(content):
            raise _refuse(
                "artifact_digest_mismatch", "not the digest of what it names", display, name
            )


def _check_evaluation(document: dict[str, Any], version: int, display: str) -> None:
    """The result vector's shape, and every verdict in it derived from its own findings."""
    shape = _Shape(display)
    evaluation = shape.exact(document["evaluation"], EVALUATION_FIELDS, "evaluation")
    dimensions = shape.objects(evaluation["dimensions"], "evaluation.dimensions")
    names = [d.get("name") for d in dimensions]
    expected = list(DIMENSIONS_BY_VERSION[version])
    if names != expected:
        raise _refuse(
            "artifact_evaluation_mismatch",
            f"contract {version} grades {expected}, the document states {names}",
            display,
            "evaluation.dimensions",
        )
    codes: set[str] = set()
    failed = []
    for position, dimension in enumerate(dimensions):
        where = f"evaluation.dimensions[{position}]"
        shape.exact(dimension, DIMENSION_FIELDS, where)
        ok = shape.flag(dimension["ok"], f"{where}.ok")
        findings = shape.objects(dimension["findings"], f"{where}.findings")
        for index, finding in enumerate(findings):
            at = f"{where}.findings[{index}]"
            shape.exact(finding, FINDING_FIELDS, at)
            codes.add(shape.text(finding["code"], f"{at}.code"))
            shape.string(finding["detail"], f"{at}.detail")
            if finding["at"] is not None:
                shape.instant(finding["at"], f"{at}.at")
        for name, value in shape.mapping(dimension["counts"], f"{where}.counts").items():
            shape.count(value, f"{where}.counts.{name}")
        if dimension["note"] is not None:
            shape.string(dimension["note"], f"{where}.note")
        if ok == bool(findings):
            raise _refuse(
                "artifact_evaluation_incoherent",
                "a dimension passes exactly when it has no finding",
                display,
                f"{where}.ok",
            )
        if not ok:
            failed.append(dimension["name"])
    terminal = evaluation["terminal_outcome"]
    legitimate = terminal == document["expected_terminal"]
    derived: dict[str, JsonValue] = {
        "terminal_outcome": document["status"],
        "legitimate_completion": legitimate,
        "reliable": legitimate and not failed,
        "failed_dimensions": list(failed),
        "finding_codes": sorted(codes),
    }
    for name, value in derived.items():
        if evaluation[name] != value:
            raise _refuse(
                "artifact_evaluation_incoherent",
                f"states {evaluation[name]!r}; its own dimensions and status give {value!r}",
                display,
                f"evaluation.{name}",
            )


def _check_tape(document: dict[str, Any], display: str) -> None:
    decisions = document["decisions"]
    if not isinstance(decisions, list) or not all(isinstance(d, dict) for d in decisions):
        raise _refuse("artifact_tape_invalid", "decisions is a list of objects", display)
    if document["decisions_digest_sha256"] != digest(decisions):
        raise _refuse(
            "artifact_tape_digest_mismatch",
            "the decisions are not those the tape's digest names",
            display,
            "decisions_digest_sha256",
        )


def _check_execution(document: dict[str, Any], display: str) -> None:
    execution = document["agent_execution"]
    where = "agent_execution"
    _exact_fields(execution, EXECUTION_FIELDS, "artifact_fields_mismatch", display, where)
    if execution["excluded"] is not False or execution["exclusion_code"] is not None:
        raise _refuse(
            "artifact_excluded_execution",
            "an execution excluded at the provider boundary has no episode artefact",
            display,
            f"{where}.excluded",
        )
    source = execution["outcome_source"]
    decisions = document["decisions"]
    attempts = execution["attempts"]
    if source == SOURCE_MODEL:
        if document["agent_kind"] != KIND_MODEL or not isinstance(execution["model"], str):
            raise _refuse(
                "artifact_execution_incoherent",
                "a model execution names its model and is run by a model agent",
                display,
                f"{where}.model",
            )
        if execution["protocol_version"] != PROTOCOL_VERSION:
            raise _refuse(
                "artifact_execution_incoherent",
                f"protocol {execution['protocol_version']!r} is not one this build speaks",
                display,
                f"{where}.protocol_version",
            )
        if not isinstance(attempts, list) or len(attempts) != len(decisions):
            raise _refuse(
                "artifact_execution_incoherent",
                "one attempt record per recorded decision",
                display,
                f"{where}.attempts",
            )
        for position, (attempt, decision) in enumerate(zip(attempts, decisions, strict=True)):
            _check_attempt(attempt, decision, display, f"{where}.attempts[{position}]")
    elif source == SOURCE_DETERMINISTIC:
        if (
            document["agent_kind"] == KIND_MODEL
            or execution["model"] is not None
            or execution["protocol_version"] is not None
            or attempts != []
            or execution["transport_calls"] != 0
        ):
            raise _refuse(
                "artifact_execution_incoherent",
                "an in-process execution names no model, protocol, call or attempt",
                display,
                where,
            )
    else:
        raise _refuse(
            "artifact_execution_incoherent",
            f"unknown outcome_source {source!r}",
            display,
            f"{where}.outcome_source",
        )


def _check_attempt(attempt: Any, decision: dict[str, Any], display: str, where: str) -> None:
    _exact_fields(attempt, ATTEMPT_FIELDS, "artifact_fields_mismatch", display, where)
    if (attempt["invocation_index"], attempt["turn_index"]) != (
        decision.get("invocation_index"),
        decision.get("turn_index"),
    ):
        raise _refuse(
            "artifact_execution_incoherent",
            "the attempt is not at its decision's invocation and turn",
            display,
            where,
        )
    if attempt["outcome"] != _attempt_class(decision_kind(decision.get("outcome"))):
        raise _refuse(
            "artifact_execution_incoherent",
            f"an attempt {attempt['outcome']!r} beside a "
            f"{decision_kind(decision.get('outcome'))!r} decision",
            display,
            f"{where}.outcome",
        )


def _check_binding(document: dict[str, Any], display: str) -> None:
    binding = document["provider_execution"]
    execution = document["agent_execution"]
    model_run = execution["outcome_source"] == SOURCE_MODEL
    if binding is None:
        if model_run:
            raise _refuse(
                "artifact_binding_missing",
                "a run whose decisions came from a model is bound to its ledger",
                display,
                "provider_execution",
            )
        return
    if not model_run:
        raise _refuse(
            "artifact_binding_unexpected",
            "a run that reached no provider has no provider binding",
            display,
            "provider_execution",
        )
    _exact_fields(
        binding,
        PROVIDER_EXECUTION_FIELDS,
        "artifact_binding_invalid",
        display,
        "provider_execution",
    )
    try:
        bound = ProviderExecution.model_validate(binding)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise _refuse(
            "artifact_binding_invalid", first["msg"], display, f"provider_execution.{where}"
        ) from None
    if bound.model != execution["model"]:
        raise _refuse(
            "artifact_binding_incoherent",
            "the binding and the execution record name different models",
            display,
            "provider_execution.model",
        )
    count = len(document["decisions"])
    if list(bound.decision_call_index) != list(range(count)):
        raise _refuse(
            "artifact_call_index_mismatch",
            f"{count} decisions map onto calls {list(bound.decision_call_index)}, "
            f"not exactly 0..{count - 1}",
            display,
            "provider_execution.decision_call_index",
        )
    if (
        bound.provider_calls < count
        or bound.attempts < bound.provider_calls
        or execution["transport_calls"] != bound.provider_calls
        or execution["retry_count"] != bound.attempts - bound.provider_calls
    ):
        raise _refuse(
            "artifact_binding_incoherent",
            "calls and attempts do not cover the decisions and the execution record",
            display,
            "provider_execution.provider_calls",
        )


# --- the shape: every field's type, range and form -------------------------------------

RECORD_TYPES = frozenset(
    {
        "action_proposed",
        "action_rejected",
        "agent_invoked",
        "agent_outcome",
        "conditional_scheduled",
        "deadlock",
        "effect_accepted",
        "episode_started",
        "event_accepted",
        "event_rejected",
        "external_request",
        "horizon_exhausted",
        "invocation_ended",
        "provisional_close",
        "reopened",
        "retrieval",
        "side_effect",
        "side_effect_failed",
        "state_transition",
        "terminal",
        "wait_declared",
        "wait_ended",
        "wait_refused",
        "wait_unresolved_at_horizon",
    }
)
"""Every record type the engine writes: a row of any other type describes no run of this build."""
ROW_ENVELOPE = ("index", "at", "minute", "record_type")
DELIVERY_FIELDS = ("event_id", "type", "actor", "payload", "triggers_agent")
EVENT_ROW_FIELDS: Mapping[str, tuple[str, ...]] = {
    "event_accepted": (*ROW_ENVELOPE, *DELIVERY_FIELDS, "authored", "record_class"),
    "event_rejected": (*ROW_ENVELOPE, *DELIVERY_FIELDS, "code", "reason", "post_terminal"),
}
"""The exact body of a delivered event, accepted or rejected."""
RECORD_CLASSES = frozenset({"semantic_trigger", "audit"})
EVALUATION_FIELDS = (
    "terminal_outcome",
    "legitimate_completion",
    "reliable",
    "failed_dimensions",
    "finding_codes",
    "dimensions",
)
DIMENSION_FIELDS = ("name", "ok", "findings", "counts", "note")
FINDING_FIELDS = ("code", "detail", "at")
DECISION_FIELDS = (
    "invocation_index",
    "turn_index",
    "observation_digest_sha256",
    "retrievals",
    "outcome",
)
FINAL_STATE_FIELDS = ("observable", "version")
ENGINE_VERSIONS = (ENGINE_VERSION,)
"""The engines whose records this build describes (it has written only its own)."""
EXECUTION_STATUSES = frozenset({DEADLOCK, HORIZON, MALFORMED})
"""How an episode ends when it reaches no business terminal."""
_DIGEST = re.compile(r"[0-9a-f]{64}")
_ENGINE = re.compile(r"\d+\.\d+\.\d+")
_INSTANCE = re.compile(r"opi_[0-9a-f]{32}")
_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
SHAPE = "artifact_shape_invalid"


class _Shape:
    """Holds one document's fields to their type, range and form; each refusal names the field."""

    def __init__(self, display: str) -> None:
        self.display = display

    def refuse(self, where: str, reason: str) -> AgentbenchError:
        return _refuse(SHAPE, reason, self.display, where)

    def exact(self, value: Any, fields: Sequence[str], where: str) -> dict[str, Any]:
        _exact_fields(value, fields, "artifact_fields_mismatch", self.display, where)
        assert isinstance(value, dict)
        return value

    def text(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.refuse(where, f"expected a non-empty string, got {_kind(value)}")
        return value

    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise self.refuse(where, f"expected a string, got {_kind(value)}")
        return value

    def optional_text(self, value: Any, where: str) -> str | None:
        return None if value is None else self.text(value, where)

    def count(self, value: Any, where: str, minimum: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.refuse(where, f"expected an integer, got {_kind(value)}")
        if value < minimum:
            raise self.refuse(where, f"expected an integer >= {minimum}, got {value}")
        return value

    def optional_count(self, value: Any, where: str, minimum: int = 0) -> int | None:
        return None if value is None else self.count(value, where, minimum)

    def flag(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            raise self.refuse(where, f"expected true or false, got {_kind(value)}")
        return value

    def form(self, value: Any, pattern: re.Pattern[str], what: str, where: str) -> str:
        if not isinstance(value, str) or pattern.fullmatch(value) is None:
            raise self.refuse(where, f"expected {what}, got {value!r}"[:200])
        return value

    def digest(self, value: Any, where: str) -> str:
        return self.form(value, _DIGEST, "a lowercase hex SHA-256 digest", where)

    def instant(self, value: Any, where: str) -> datetime:
        text = self.form(value, _INSTANT, "an instant YYYY-MM-DDTHH:MM:SSZ", where)
        try:
            return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            raise self.refuse(where, f"{text!r} is not a calendar instant") from None

    def one_of(self, value: Any, allowed: Iterable[str], where: str) -> str:
        known = sorted(allowed)
        if not isinstance(value, str) or value not in known:
            raise self.refuse(where, f"{value!r} is not one of {known}"[:300])
        return value

    def objects(self, value: Any, where: str) -> list[dict[str, Any]]:
        if not isinstance(value, list):
            raise self.refuse(where, f"expected a list, got {_kind(value)}")
        for position, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.refuse(f"{where}[{position}]", f"expected an object, got {_kind(item)}")
        return value

    def mapping(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.refuse(where, f"expected an object, got {_kind(value)}")
        return value

    def texts(self, value: Any, where: str) -> list[str]:
        if not isinstance(value, list):
            raise self.refuse(where, f"expected a list, got {_kind(value)}")
        return [self.text(item, f"{where}[{position}]") for position, item in enumerate(value)]


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _check_shape(document: dict[str, Any], version: int, display: str) -> None:
    """The original's reader holds every field to its type, range and form; so does this one."""
    shape = _Shape(display)
    engine = shape.form(document["engine_version"], _ENGINE, "a version N.N.N", "engine_version")
    if engine not in ENGINE_VERSIONS:
        raise _refuse(
            "artifact_engine_unknown",
            f"engine {engine!r}; this build describes records of {list(ENGINE_VERSIONS)}",
            display,
            "engine_version",
        )
    operation = document["operation"]
    pack = _pack(shape.text(operation.get("operation_type"), "operation.operation_type"), display)
    for name in ("operation_id", "operation_version", "semantic_scenario_id", "privacy_status"):
        shape.text(operation[name], f"operation.{name}")
    shape.digest(operation["spec_digest_sha256"], "operation.spec_digest_sha256")
    scenarios = shape.texts(operation["scenario_ids"], "operation.scenario_ids")
    if scenarios != sorted(set(scenarios)):
        raise shape.refuse("operation.scenario_ids", "expected sorted, unique scenario ids")
    for name in ("scenario_id", "semantic_scenario_id", "scenario_label", "agent_id"):
        shape.text(document[name], name)
    terminals = set(pack.terminals)
    shape.one_of(document["agent_kind"], (KIND_MODEL, KIND_IN_PROCESS), "agent_kind")
    shape.one_of(document["expected_terminal"], terminals, "expected_terminal")
    status = shape.one_of(document["status"], terminals | EXECUTION_STATUSES, "status")
    if document["terminal_outcome"] != (status if status in terminals else None):
        raise _refuse(
            "artifact_status_incoherent",
            f"status {status!r} ends in terminal_outcome "
            f"{status if status in terminals else None!r}",
            display,
            "terminal_outcome",
        )
    if shape.flag(document["replay_final"], "replay_final") and status not in terminals:
        raise _refuse(
            "artifact_status_incoherent",
            "only a business terminal is replay-final",
            display,
            "replay_final",
        )
    minutes = shape.count(document["simulated_minutes"], "simulated_minutes")
    shape.count(document["agent_invocations"], "agent_invocations")
    started = shape.instant(document["started_at"], "started_at")
    ended = shape.instant(document["ended_at"], "ended_at")
    if ended - started != timedelta(minutes=minutes):
        raise _refuse(
            "artifact_status_incoherent",
            f"{minutes} simulated minutes do not separate started_at and ended_at",
            display,
            "ended_at",
        )
    if document["note"] != NOTE:
        raise shape.refuse("note", "not the note this contract carries")
    _check_trajectory(shape, document, started, display)
    state = shape.exact(document["final_state"], FINAL_STATE_FIELDS, "final_state")
    shape.mapping(state["observable"], "final_state.observable")
    shape.count(state["version"], "final_state.version")
    shape.digest(document["final_state_digest_sha256"], "final_state_digest_sha256")
    shape.digest(document["trajectory_digest_sha256"], "trajectory_digest_sha256")
    if version >= 2:
        _check_decisions(shape, document)
        _check_execution_shape(shape, document["agent_execution"])
    if version >= 4:
        shape.form(
            document["operation_instance_id"],
            _INSTANCE,
            "opi_ and 32 hex digits",
            "operation_instance_id",
        )


def _pack(operation_type: str, display: str) -> Any:
    pack = installed_packs().get(operation_type)
    if pack is None:
        raise _refuse(
            "artifact_operation_unknown",
            f"no installed domain pack reads operations of type {operation_type!r}",
            display,
            "operation.operation_type",
        )
    return pack


def _check_trajectory(
    shape: _Shape, document: dict[str, Any], started: datetime, display: str
) -> None:
    rows = shape.objects(document["trajectory"], "trajectory")
    last = 0
    for position, row in enumerate(rows):
        where = f"trajectory[{position}]"
        for name in ROW_ENVELOPE:
            if name not in row:
                raise _refuse(
                    "artifact_fields_mismatch", f"missing {name!r}", display, f"{where}.{name}"
                )
        if shape.count(row["index"], f"{where}.index") != position:
            raise shape.refuse(f"{where}.index", f"row {position} states index {row['index']}")
        minute = shape.count(row["minute"], f"{where}.minute")
        if minute < last:
            raise shape.refuse(f"{where}.minute", "the simulated clock never runs backwards")
        last = minute
        if shape.instant(row["at"], f"{where}.at") != started + timedelta(minutes=minute):
            raise shape.refuse(f"{where}.at", f"not the instant of minute {minute}")
        kind = shape.one_of(row["record_type"], RECORD_TYPES, f"{where}.record_type")
        if kind in EVENT_ROW_FIELDS:
            _check_event_row(shape, row, kind, where)
    events = shape.objects(document["events"], "events")
    delivered = [row for row in rows if row["record_type"] in EVENT_ROW_FIELDS]
    if events != delivered:
        raise _refuse(
            "artifact_events_mismatch",
            "the events are not the trajectory's delivered events",
            display,
            "events",
        )


def _check_event_row(shape: _Shape, row: dict[str, Any], kind: str, where: str) -> None:
    shape.exact(row, EVENT_ROW_FIELDS[kind], where)
    for name in ("event_id", "type", "actor"):
        shape.text(row[name], f"{where}.{name}")
    shape.mapping(row["payload"], f"{where}.payload")
    shape.flag(row["triggers_agent"], f"{where}.triggers_agent")
    if kind == "event_accepted":
        shape.flag(row["authored"], f"{where}.authored")
        shape.one_of(row["record_class"], RECORD_CLASSES, f"{where}.record_class")
    else:
        shape.text(row["code"], f"{where}.code")
        shape.string(row["reason"], f"{where}.reason")
        shape.flag(row["post_terminal"], f"{where}.post_terminal")


def _check_decisions(shape: _Shape, document: dict[str, Any]) -> None:
    shape.digest(document["decisions_digest_sha256"], "decisions_digest_sha256")
    previous = (0, -1)
    for position, decision in enumerate(shape.objects(document["decisions"], "decisions")):
        where = f"decisions[{position}]"
        shape.exact(decision, DECISION_FIELDS, where)
        at = (
            shape.count(decision["invocation_index"], f"{where}.invocation_index", 1),
            shape.count(decision["turn_index"], f"{where}.turn_index"),
        )
        if at <= previous:
            raise shape.refuse(where, "(invocation, turn) strictly increases along the tape")
        previous = at
        shape.digest(decision["observation_digest_sha256"], f"{where}.observation_digest_sha256")
        for index, call in enumerate(shape.objects(decision["retrievals"], f"{where}.retrievals")):
            _check_retrieval(shape, call, f"{where}.retrievals[{index}]")
        _check_outcome(shape, decision["outcome"], f"{where}.outcome")


def _check_retrieval(shape: _Shape, call: dict[str, Any], where: str) -> None:
    # The arguments are the agent's, as it sent them (a refused call's may be any JSON).
    shape.exact(call, ("name", "arguments"), where)
    shape.text(call["name"], f"{where}.name")


def _check_outcome(shape: _Shape, outcome: Any, where: str) -> None:
    """A recorded decision is exactly what the engine writes for its kind, and nothing more."""
    body = shape.mapping(outcome, where)
    if body.get("kind") == MALFORMED_KIND:
        shape.exact(body, ("kind", "code"), where)
        shape.text(body["code"], f"{where}.code")
        return
    try:
        parsed = oc.parse_outcome(body)
    except oc.OutcomeRefused as refused:
        raise shape.refuse(where, f"not a decision this build records: {refused}") from None
    if oc.outcome_json(parsed) != body:
        raise shape.refuse(where, "not in the exact form this build records a decision")


def _check_execution_shape(shape: _Shape, execution: dict[str, Any]) -> None:
    where = "agent_execution"
    shape.optional_text(execution["model"], f"{where}.model")
    shape.optional_text(execution["protocol_version"], f"{where}.protocol_version")
    shape.optional_count(execution["max_output_tokens"], f"{where}.max_output_tokens", 1)
    shape.count(execution["transport_calls"], f"{where}.transport_calls")
    shape.count(execution["retry_count"], f"{where}.retry_count")
    shape.flag(execution["excluded"], f"{where}.excluded")
    shape.optional_text(execution["exclusion_code"], f"{where}.exclusion_code")
    if execution["exclusion_detail"] is not None:
        shape.string(execution["exclusion_detail"], f"{where}.exclusion_detail")
    for position, attempt in enumerate(shape.objects(execution["attempts"], f"{where}.attempts")):
        at = f"{where}.attempts[{position}]"
        shape.exact(attempt, ATTEMPT_FIELDS, at)
        shape.count(attempt["invocation_index"], f"{at}.invocation_index", 1)
        shape.count(attempt["turn_index"], f"{at}.turn_index")
        if attempt["request_digest_sha256"] is not None:
            shape.digest(attempt["request_digest_sha256"], f"{at}.request_digest_sha256")
        shape.one_of(attempt["outcome"], ("decided", "classified"), f"{at}.outcome")
        if attempt["fault"] is not None:
            raise shape.refuse(f"{at}.fault", "an attempt that answered carries no fault")
        shape.digest(attempt["decision_digest_sha256"], f"{at}.decision_digest_sha256")


# --- replay: reproduction from the tape -----------------------------------------------


class RefusingTransport:
    """Every network connection of the process is refused while a replay runs; each is counted."""

    def __init__(self) -> None:
        self.attempts = 0

    def refuse(self, *args: Any, **kwargs: Any) -> Any:
        self.attempts += 1
        raise ConnectionRefusedError("a replay reaches no provider")

    @contextmanager
    def installed(self) -> Iterator[RefusingTransport]:
        connect, create = socket.socket.connect, socket.create_connection
        socket.socket.connect = self.refuse  # type: ignore[method-assign]
        socket.create_connection = self.refuse
        try:
            yield self
        finally:
            socket.socket.connect = connect  # type: ignore[method-assign]
            socket.create_connection = create


def replay_artifact(loaded: LoadedSpec, document: Any, display: str) -> dict[str, JsonValue]:
    """Re-execute the episode from its tape and require the rebuilt document to equal this one."""
    version = validate_artifact(document, display)
    if version not in REPRODUCIBLE_VERSIONS:
        raise _refuse(
            "artifact_not_reproducible",
            f"contract {version} is read, not reproduced: this build reproduces "
            f"{list(REPRODUCIBLE_VERSIONS)}",
            display,
            "artifact_version",
        )
    if document["operation"]["spec_digest_sha256"] != loaded.digest:
        raise _refuse(
            "artifact_spec_mismatch",
            "the artefact was run against another OperationSpec",
            display,
            "operation.spec_digest_sha256",
        )
    agent = _named_agent(loaded, document)
    transport = RefusingTransport()
    with transport.installed():
        if agent is None:
            try:
                again = replay(loaded, document["scenario_id"], document["decisions"])
            except ReplayDiverged as diverged:
                raise _refuse(diverged.code, diverged.detail, display, "decisions") from None
        else:
            again = run_episode(loaded, document["scenario_id"], agent.factory())
        output = again.as_json()
        output["replay_codes"] = replay_codes(loaded, again)
    if transport.attempts:
        raise _refuse(
            "artifact_replay_reached_network",
            f"the replay tried {transport.attempts} connections",
            display,
        )
    rebuilt = build_artifact(loaded, output, EpisodeBinding(agent_id=str(document["agent_id"])))
    carried = CARRIED_FORWARD if agent is None else ()
    for name in carried:
        rebuilt[name] = document[name]
    diverged_fields = [
        name for name in FIELDS_BY_VERSION[version] if rebuilt[name] != document[name]
    ]
    if diverged_fields:
        how = "the rerun of the named agent" if agent is not None else "the rerun from the tape"
        raise _refuse(
            "artifact_replay_diverged",
            f"{how} differs in {', '.join(diverged_fields)}",
            display,
            diverged_fields[0],
        )
    return {
        "ok": True,
        "claim": "reproduction",
        "scenario_id": document["scenario_id"],
        "decisions": len(document["decisions"]),
        "provider_calls": transport.attempts,
        "re_executed": None if agent is None else agent.agent_id,
        "compared": [name for name in FIELDS_BY_VERSION[version] if name not in carried],
        "carried_forward": list(carried),
        "provider_attested": False,
    }


def _named_agent(loaded: LoadedSpec, document: dict[str, Any]) -> ControlAgent | None:
    """The built-in agent an in-process artefact names, to be run again; None for a tape replay.

    As the original's reader does, a deterministic record is reproduced by running the
    agent it names (so relabelling the agent is a divergence, not a carried field). A
    model record, and an in-process record of an adapter this build does not ship, are
    replayed from their tape, with the agent's identity carried forward and named.
    """
    if document["agent_execution"]["outcome_source"] != SOURCE_DETERMINISTIC:
        return None
    agents = {agent.agent_id: agent for agent in control_agents(loaded.domain)}
    return agents.get(str(document["agent_id"]))


# --- audit: agreement with the journal --------------------------------------------------


def audit_artifact(document: Any, journal: Path, display: str) -> dict[str, JsonValue]:
    """Hold the artefact's binding to one journal, call by call; every refusal by name."""
    version = validate_artifact(document, display)
    binding = document.get("provider_execution") if version >= 7 else None
    if binding is None:
        raise _refuse(
            "artifact_audit_unbound",
            "the artefact binds no execution ledger: there is no bundle to audit",
            display,
            "provider_execution",
        )
    bound = ProviderExecution.model_validate(binding)
    reading = audit_ledger(journal)
    terminal = reading.rows[-1]["terminal"]
    kind = terminal.get("kind") if isinstance(terminal, dict) else None
    if kind != "scored":
        raise _refuse(
            "artifact_ledger_not_scored",
            f"the journal ends {kind!r}; only a scored run is bound to an artefact",
            str(journal),
        )
    header = HeaderPayload.model_validate(reading.rows[0]["header"])
    calls = [CallPayload.model_validate(row["call"]) for row in reading.rows[1:-1]]
    assert reading.digest is not None
    derived = derive_provider_execution(header, calls, reading.digest, display=str(journal))
    _audit_identity(document, bound, derived, header, display)
    _audit_totals(bound, derived, display)
    _audit_calls(document, bound, calls, display)
    if bound.execution_ledger_digest_sha256 != reading.digest:
        raise _refuse(
            "artifact_ledger_digest_mismatch",
            "the journal's digest is not the one the binding states",
            display,
            "provider_execution.execution_ledger_digest_sha256",
        )
    summary: dict[str, JsonValue] = {"ok": True, "claim": "agreement", "provider_attested": False}
    summary.update(bound.model_dump(mode="json"))
    return summary


def _audit_identity(
    document: dict[str, Any],
    bound: ProviderExecution,
    derived: ProviderExecution,
    header: HeaderPayload,
    display: str,
) -> None:
    if bound.execution_ledger_version != LEDGER_VERSION:
        raise _refuse(
            "artifact_ledger_version_mismatch",
            f"the binding names ledger contract {bound.execution_ledger_version}, the "
            f"journal is contract {LEDGER_VERSION}",
            display,
            "provider_execution.execution_ledger_version",
        )
    if bound.execution_run_id != derived.execution_run_id:
        raise _refuse(
            "artifact_run_mismatch",
            "the artefact and the journal name two execution runs",
            display,
            "provider_execution.execution_run_id",
        )
    provider = header.provider or {}
    stated = document["agent_execution"]["max_output_tokens"]
    for name in ("provider", "api", "model", "settings_digest_sha256", "pricing_digest_sha256"):
        if getattr(bound, name) != getattr(derived, name):
            raise _refuse(
                "artifact_identity_mismatch",
                f"the artefact binds {name} {getattr(bound, name)!r}, the journal records "
                f"{getattr(derived, name)!r}",
                display,
                f"provider_execution.{name}",
            )
    if stated != provider.get("max_tokens_per_call"):
        raise _refuse(
            "artifact_identity_mismatch",
            "the artefact and the journal state different output ceilings",
            display,
            "agent_execution.max_output_tokens",
        )


def _audit_totals(bound: ProviderExecution, derived: ProviderExecution, display: str) -> None:
    for name in (
        "provider_calls",
        "attempts",
        "input_tokens",
        "output_tokens",
        "measured_cost_usd",
        "forfeited_reservation_usd",
    ):
        if getattr(bound, name) != getattr(derived, name):
            raise _refuse(
                "artifact_totals_mismatch",
                f"the artefact binds {name} {getattr(bound, name)!r}; the journal's rows come "
                f"to {getattr(derived, name)!r}",
                display,
                f"provider_execution.{name}",
            )


def _audit_calls(
    document: dict[str, Any], bound: ProviderExecution, calls: list[CallPayload], display: str
) -> None:
    attempts = document["agent_execution"]["attempts"]
    if len(calls) != len(bound.decision_call_index):
        raise _refuse(
            "artifact_call_mismatch",
            f"the journal records {len(calls)} calls and the artefact maps "
            f"{len(bound.decision_call_index)} decisions onto them",
            display,
            "provider_execution.decision_call_index",
        )
    for position, index in enumerate(bound.decision_call_index):
        call, attempt = calls[index], attempts[position]
        where = f"agent_execution.attempts[{position}]"
        if call.request_digest_sha256 != attempt["request_digest_sha256"]:
            raise _refuse(
                "artifact_call_mismatch",
                f"journal call {index} hashed another request",
                display,
                f"{where}.request_digest_sha256",
            )
        if call.decision is None or (
            call.decision.decision_digest_sha256 != attempt["decision_digest_sha256"]
        ):
            raise _refuse(
                "artifact_call_mismatch",
                f"journal call {index} records another decision",
                display,
                f"{where}.decision_digest_sha256",
            )
