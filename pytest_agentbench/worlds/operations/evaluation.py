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

from pytest_agentbench.sdk import DomainPack, JsonValue
from pytest_agentbench.worlds.operations.episode import COMPLETE, EpisodeRecord

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


def _retrieval(record: EpisodeRecord) -> tuple[list[str], dict[str, int]]:
    """Reads count in the proposal's invocation after its last wake or own accepted effect."""
    codes: set[str] = set()
    violations = 0
    epoch_start: dict[int, int] = {}
    fresh: dict[int, dict[tuple[str, str], int]] = {}
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
            any_reads[invocation] = False
        elif kind == "retrieval":
            invocation = int(row["invocation_index"])
            any_reads[invocation] = True
            for ref in row["records"]:
                served += 1
                fresh.setdefault(invocation, {})[(ref["collection"], ref["id"])] = ref["version"]
        elif kind == "action_proposed":
            proposals[row["proposal_id"]] = row
            found = _proposal_problems(
                row,
                fresh.get(int(row["invocation_index"]), {}),
                any_reads.get(int(row["invocation_index"]), False),
            )
            codes |= found
            violations += len(found)
        elif kind == "effect_accepted":
            proposal = proposals[row["proposal_id"]]
            accepted_by_proposal[row["proposal_id"]] = proposal
            fresh[int(proposal["invocation_index"])] = {}
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
    row: Mapping[str, Any], fresh: Mapping[tuple[str, str], int], read_any: bool
) -> set[str]:
    problems: set[str] = set()
    cited = {(ref["collection"], ref["id"]): ref["version"] for ref in row["evidence_refs"]}
    required = row["required_reads"]
    if required and not read_any:
        return {"ACTION_WITHOUT_RETRIEVAL"}
    for ref in required:
        key = (ref["collection"], ref["id"])
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
        "retrieval_discipline": _retrieval(record),
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
