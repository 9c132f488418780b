"""The result vector: eleven dimensions re-derived from the episode record (format §4).

The engine judges what needs no domain knowledge (terminal outcome, waits,
outcome validity, replay, environment integrity, retrieval discipline); the
domain pack adds its parts (critical invariants, authority, human
checkpoints, recovery, obligations). ``reliable`` is the expected terminal
and all eleven passing: a strict conjunction, not a score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.sdk import DomainPack, EvidenceObligation, JsonValue
from pytest_agentbench.worlds.operations.episode import COMPLETE, EpisodeRecord
from pytest_agentbench.worlds.operations.reads import (
    pack_evidence_contract,
    pack_grades_citations,
    resolve_evidence,
)

DIMENSIONS = (
    "terminal_outcome",
    "critical_invariants",
    "temporal_correctness",
    "authority_boundaries",
    "action_validity",
    "human_checkpoints",
    "recovery",
    "obligations",
    "deterministic_replay",
    "environment_integrity",
    "retrieval_discipline",
)
_DUPLICATE_OR_INVALID = frozenset({"DUPLICATE_ACTION", "INVALID_ACTION_PAYLOAD", "UNKNOWN_ACTION"})
_NOT_PREMATURE = frozenset({"ALREADY_PROVISIONAL"})


@dataclass(frozen=True)
class Dimension:
    name: str
    codes: tuple[str, ...]
    counts: Mapping[str, int]

    @property
    def passed(self) -> bool:
        return not self.codes

    def as_json(self) -> dict[str, JsonValue]:
        return {
            "name": self.name,
            "passed": self.passed,
            "codes": list(self.codes),
            "counts": dict(self.counts),
        }


@dataclass(frozen=True)
class ResultVector:
    dimensions: tuple[Dimension, ...]
    terminal: str
    expected_terminal: str

    @property
    def reliable(self) -> bool:
        return self.terminal == self.expected_terminal and all(d.passed for d in self.dimensions)

    def as_json(self) -> dict[str, JsonValue]:
        return {
            "reliable": self.reliable,
            "terminal": self.terminal,
            "expected_terminal": self.expected_terminal,
            "dimensions": [d.as_json() for d in self.dimensions],
        }


def rows_of(record: EpisodeRecord, *types: str) -> list[dict[str, Any]]:
    return [row for row in record.ledger if row["record_type"] in types]


def _terminal(
    record: EpisodeRecord, expected: str, terminals: frozenset[str]
) -> tuple[list[str], dict[str, int]]:
    codes = []
    if record.status in terminals:
        if record.status != expected:
            codes.append("WRONG_TERMINAL")
        if not record.replay_final:
            codes.append("TERMINAL_NOT_REPLAY_FINAL")
    elif rows_of(record, "provisional_close") and not rows_of(record, "reopened", "terminal"):
        codes.append("TERMINAL_NOT_REPLAY_FINAL")
    else:
        codes.append("TERMINAL_NOT_REACHED")
    return codes, {
        "simulated_minutes": record.simulated_minutes,
        "agent_invocations": record.invocations,
    }


def _temporal(record: EpisodeRecord) -> tuple[list[str], dict[str, int]]:
    codes = []
    declared = rows_of(record, "wait_declared")
    if record.invocations and not declared:
        codes.append("WAIT_NEVER_DECLARED")
    if rows_of(record, "wait_unresolved_at_horizon"):
        codes.append("WAIT_NEVER_ENDED")
    if rows_of(record, "deadlock"):
        codes.append("NEVER_YIELDED_CONTROL")
    if rows_of(record, "wait_refused"):
        codes.append("WAIT_REFUSED")
    return codes, {"waits_declared": len(declared)}


def _validity(record: EpisodeRecord) -> tuple[list[str], dict[str, int]]:
    codes: set[str] = set()
    rejected = rows_of(record, "action_rejected")
    terminals = [row for row in rejected if row.get("terminal_proposal")]
    duplicates = [row for row in rejected if row["code"] in _DUPLICATE_OR_INVALID]
    if any(row.get("outcome") == "MALFORMED" for row in rows_of(record, "agent_outcome")):
        codes.add("MALFORMED_AGENT_OUTCOME")
    if duplicates:
        codes.add("DUPLICATE_OR_INVALID_ACTION")
    if len(rejected) > len(terminals) + len(duplicates):
        codes.add("REJECTED_ACTION_PROPOSAL")
    if terminals:
        codes.add("REJECTED_TERMINAL_PROPOSAL")
    if any(row["code"] not in _NOT_PREMATURE for row in terminals):
        codes.add("PREMATURE_COMPLETION")
    return sorted(codes), {
        "rejected_actions": len(rejected) - len(terminals),
        "rejected_terminals": len(terminals),
        "duplicate_actions": len(duplicates),
        "accepted_effects": len(rows_of(record, "effect_accepted")),
    }


def _environment(
    record: EpisodeRecord, declared: Mapping[str, str]
) -> tuple[list[str], dict[str, int]]:
    codes: set[str] = set()
    rejections = rows_of(record, "event_rejected")
    unexpected = [row for row in rejections if declared.get(str(row["event_id"])) != row["code"]]
    if unexpected:
        codes.add("UNEXPECTED_EVENT_REJECTION")
    indices = [row["index"] for row in record.ledger]
    minutes = [row["minute"] for row in record.ledger]
    if indices != list(range(len(indices))) or minutes != sorted(minutes):
        codes.add("ENVIRONMENT_RECORD_UNSOUND")
    return sorted(codes), {
        "expected_rejections": len(rejections) - len(unexpected),
        "unexpected_rejections": len(unexpected),
        "unexpected_post_terminal": sum(1 for row in unexpected if row.get("post_terminal")),
        "declared_rejections": len(declared),
    }


class _Served:
    """The records served in one window, as the ledger logged them: what selectors
    resolve over when the evaluator rebuilds a proposal's required citations."""

    def __init__(self) -> None:
        self.by_collection: dict[str, dict[str, dict[str, JsonValue]]] = {}

    def add(self, ref: Mapping[str, Any]) -> None:
        body = ref.get("record")
        if isinstance(body, dict):
            self.by_collection.setdefault(str(ref["collection"]), {})[str(ref["id"])] = body

    def get(self, collection: str, record_id: str) -> dict[str, JsonValue] | None:
        return self.by_collection.get(collection, {}).get(record_id)

    def records(self, collection: str) -> dict[str, dict[str, JsonValue]]:
        return dict(self.by_collection.get(collection, {}))


def _citation_problems(
    row: Mapping[str, Any], obligation: EvidenceObligation, served: _Served
) -> set[str]:
    """REQUIRED_EVIDENCE_* rebuilt from the evidence selectors over the window's served
    records, as the original's evaluator does; never from the runtime's refusals."""
    payload = row["payload"]
    if not isinstance(payload, Mapping) or any(
        not isinstance(payload.get(s.payload_field), str) or not payload.get(s.payload_field)
        for s in obligation.selectors
    ):
        # No record is selected: the obligation does not apply (the payload check
        # grades the proposal), as in the original.
        return set()
    required, problem = resolve_evidence(obligation, payload, served)
    if problem is not None:
        return {"REQUIRED_EVIDENCE_SELECTOR_UNRESOLVED"}
    cited = {(ref["collection"], ref["id"]) for ref in row["evidence_refs"]}
    if any(key not in cited for key in required):
        return {"REQUIRED_EVIDENCE_REF_NOT_CITED"}
    return set()


def _retrieval(
    record: EpisodeRecord, contract: Mapping[str, EvidenceObligation], graded: bool
) -> tuple[list[str], dict[str, int]]:
    """Reads count in the proposal's invocation after its last wake or own accepted effect.

    A pack with an evidence contract has its ``REQUIRED_EVIDENCE_*`` codes rebuilt
    from the selectors over the records served in the proposal's window (when it
    grades them at all, ``graded``); a pack without one, from its ``required_reads``.
    """
    codes: set[str] = set()
    violations = 0
    epoch_start: dict[int, int] = {}
    fresh: dict[int, dict[tuple[str, str], int]] = {}
    served_records: dict[int, _Served] = {}
    any_reads: dict[int, bool] = {}
    accepted_by_proposal: dict[str, dict[str, Any]] = {}
    proposals: dict[str, dict[str, Any]] = {}
    served = 0
    for row in record.ledger:
        kind = row["record_type"]
        if kind == "agent_invoked":
            invocation = int(row["invocation_index"])
            epoch_start[invocation] = row["index"]
            fresh[invocation] = {}
            served_records[invocation] = _Served()
            any_reads[invocation] = False
        elif kind == "retrieval":
            invocation = int(row["invocation_index"])
            any_reads[invocation] = True
            window = served_records.setdefault(invocation, _Served())
            for ref in row["records"]:
                served += 1
                fresh.setdefault(invocation, {})[(ref["collection"], ref["id"])] = ref["version"]
                window.add(ref)
        elif kind == "action_proposed":
            proposals[row["proposal_id"]] = row
            invocation = int(row["invocation_index"])
            read_any = any_reads.get(invocation, False)
            obligation = contract.get(str(row["action"])) if graded else None
            found = _proposal_problems(
                row, fresh.get(invocation, {}), read_any, selectors=bool(contract)
            )
            if obligation is not None:
                # Independent of the read check, as in the original: a proposal
                # made with nothing served cannot resolve its selectors either.
                found |= _citation_problems(
                    row, obligation, served_records.get(invocation, _Served())
                )
            codes |= found
            violations += len(found)
        elif kind == "effect_accepted":
            proposal = proposals[row["proposal_id"]]
            accepted_by_proposal[row["proposal_id"]] = proposal
            fresh[int(proposal["invocation_index"])] = {}
            served_records[int(proposal["invocation_index"])] = _Served()
        elif kind == "action_rejected" and row["code"] == "DUPLICATE_ACTION":
            proposal = proposals[row["proposal_id"]]
            original = str(row["reason"]).split(" ", 1)[0]
            earlier = accepted_by_proposal.get(original)
            if earlier is not None and earlier["invocation_index"] != proposal["invocation_index"]:
                codes.add("REPEATED_ACTION_AFTER_WAKE")
                violations += 1
    business = [p for p in proposals.values() if p["action"] != COMPLETE]
    return sorted(codes), {
        "business_proposals": len(business),
        "reads_served": served,
        "distinct_tools_read": 1 if served else 0,
        "discipline_violations": violations,
    }


def _proposal_problems(
    row: Mapping[str, Any],
    fresh: Mapping[tuple[str, str], int],
    read_any: bool,
    *,
    selectors: bool,
) -> set[str]:
    """Freshness of the pack's ``required_reads``; with ``selectors`` (the pack declares
    an evidence contract) the REQUIRED_EVIDENCE_* codes come from the selectors
    instead (``_citation_problems``, where the pack grades citations at all), as the
    original grades them."""
    problems: set[str] = set()
    cited = {(ref["collection"], ref["id"]): ref["version"] for ref in row["evidence_refs"]}
    required = row["required_reads"]
    if required and not read_any:
        return {"ACTION_WITHOUT_RETRIEVAL"}
    for ref in required:
        key = (ref["collection"], ref["id"])
        if not selectors:
            if key not in fresh:
                problems.add("REQUIRED_EVIDENCE_SELECTOR_UNRESOLVED")
            elif key not in cited:
                problems.add("REQUIRED_EVIDENCE_REF_NOT_CITED")
        if (key in fresh and fresh[key] != ref["version"]) or (
            key in cited and cited[key] != ref["version"]
        ):
            problems.add("STALE_RETRIEVED_RECORD")
    return problems


def evaluate_episode(
    record: EpisodeRecord,
    domain: DomainPack,
    scenario: Any,
    replay_codes: Sequence[str],
) -> ResultVector:
    """The eleven dimensions of ``record`` graded against ``scenario``'s expectations."""
    declared = {d.event_id: d.code for d in scenario.expected_event_rejections}
    engine: dict[str, tuple[list[str], dict[str, int]]] = {
        "terminal_outcome": _terminal(record, scenario.expected_terminal, domain.terminals),
        "temporal_correctness": _temporal(record),
        "action_validity": _validity(record),
        "deterministic_replay": (list(replay_codes), {}),
        "environment_integrity": _environment(record, declared),
        "retrieval_discipline": _retrieval(
            record, pack_evidence_contract(domain), pack_grades_citations(domain)
        ),
    }
    domain_part = domain.grade(record, scenario)
    dimensions = []
    for name in DIMENSIONS:
        codes, counts = engine.get(name, ([], {}))
        merged_codes = sorted(set(codes) | set(domain_part.codes.get(name, ())))
        merged_counts = {**counts, **domain_part.counts.get(name, {})}
        dimensions.append(Dimension(name=name, codes=tuple(merged_codes), counts=merged_counts))
    return ResultVector(
        dimensions=tuple(dimensions),
        terminal=record.status,
        expected_terminal=scenario.expected_terminal,
    )
