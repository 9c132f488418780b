"""The final envelope: strict parsing and the semantic checks (format page section 4)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.sdk import AgentbenchError, loads_strict
from pytest_agentbench.worlds.retrieval.envelope_schema import schema_message
from pytest_agentbench.worlds.retrieval.models import Task


@dataclass(frozen=True)
class Parsed:
    envelope: dict[str, Any] | None
    """The envelope as JSON, when it parsed, validated and passed every semantic check."""
    failure_code: str | None
    """``malformed_agent_json`` or ``invalid_final_envelope`` (agent errors)."""
    message: str | None = None


def parse_raw(raw: Any) -> Any:
    """Raw model text must be exactly one JSON value; a dict is taken as already parsed."""
    if isinstance(raw, str | bytes):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            raise AgentbenchError("malformed_agent_json", "empty output")
        try:
            return loads_strict(text)
        except AgentbenchError as exc:
            where = f" at {exc.location.field}" if exc.location.field else ""
            raise AgentbenchError("malformed_agent_json", f"{exc.reason}{where}") from None
    return raw


def semantic_issues(envelope: Mapping[str, Any], task: Task) -> list[str]:
    """Every semantic issue as ``code:claimKey``, in a fixed order."""
    public = {claim.claimKey: claim for claim in task.claims}
    issues: list[str] = []
    claimed: set[str] = set()
    for claim in envelope["claims"]:
        key = claim["claimKey"]
        if key in claimed:
            issues.append(f"duplicate_claim:{key}")
        claimed.add(key)
        declared = public.get(key)
        if declared is None:
            issues.append(f"extra_claim:{key}")
            continue
        if claim["value"]["type"] != declared.valueType:
            issues.append(f"type_mismatch:{key}")
        if declared.required and not claim["citations"]:
            issues.append(f"uncited_required_claim:{key}")
        if any(c["endLine"] < c["startLine"] for c in claim["citations"]):
            issues.append(f"invalid_evidence_range:{key}")
    gapped: set[str] = set()
    for gap in envelope["gaps"]:
        key = gap["claimKey"]
        if key in gapped:
            issues.append(f"duplicate_gap:{key}")
        gapped.add(key)
        if key not in public:
            issues.append(f"extra_gap:{key}")
    for key, declared in public.items():
        if declared.required and key not in claimed and key not in gapped:
            issues.append(f"missing_required_claim:{key}")
    return issues


def parse_final(raw: Any, task: Task) -> Parsed:
    """What the runner does with an agent's final output."""
    try:
        value = parse_raw(raw)
    except AgentbenchError as exc:
        return Parsed(None, "malformed_agent_json", exc.reason)
    message = schema_message(value)
    if message is not None:
        return Parsed(None, "invalid_final_envelope", message)
    issues = semantic_issues(value, task)
    if issues:
        return Parsed(None, "invalid_final_envelope", ", ".join(issues))
    return Parsed(_plain_json(value), None)


def _plain_json(value: Any) -> Any:
    """A copy with JSON's containers only, so the receipt never aliases the agent's data."""
    if isinstance(value, dict):
        return {key: _plain_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_json(item) for item in value]
    return value
