"""Re-running an episode from its decision tape.

The tape records, per (invocation, turn), the digest of what the agent was
shown, the reads it made and the outcome it returned. :class:`TapeAgent`
feeds those decisions back in order against a fresh environment and refuses
any turn whose observation differs, so a replay either reproduces the ledger
byte for byte or names where it diverged. The world uses it for the
``deterministic_replay`` dimension and to score a tape produced elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_agentbench.sdk import (
    JsonValue,
    MalformedOutput,
    ToolCallError,
    canonical_bytes,
    sha256_hex,
)
from pytest_agentbench.worlds.operations.episode import (
    EpisodeRecord,
    ledger_text,
    run_episode,
)
from pytest_agentbench.worlds.operations.outcomes import ReplayedRefusal
from pytest_agentbench.worlds.operations.spec import LoadedSpec

MISSING = "tape_decision_missing"
EXTRA = "tape_decision_extra"
MISMATCHED = "tape_decision_mismatched"


class ReplayDiverged(MalformedOutput):
    """The environment asked for a decision the tape does not hold as recorded."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"[{code}] {detail}")
        self.code = code
        self.detail = detail


class TapeAgent:
    def __init__(self, decisions: Sequence[dict[str, JsonValue]]) -> None:
        self.decisions = list(decisions)
        self.position = 0

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        where = (task["invocation_index"], task["turn_index"])
        if self.position >= len(self.decisions):
            raise ReplayDiverged(
                MISSING, f"the tape has no decision for invocation {where[0]}, turn {where[1]}"
            )
        decision = self.decisions[self.position]
        self.position += 1
        if (decision["invocation_index"], decision["turn_index"]) != where:
            raise ReplayDiverged(
                MISMATCHED,
                f"tape decision {self.position - 1} is for invocation "
                f"{decision['invocation_index']}, "
                f"turn {decision['turn_index']}; the environment is at {where[0]}, {where[1]}",
            )
        if decision["observation_digest_sha256"] != sha256_hex(canonical_bytes(task)):
            raise ReplayDiverged(
                MISMATCHED,
                f"tape decision {self.position - 1}: the observation at invocation "
                f"{where[0]}, turn {where[1]} differs from the recorded one",
            )
        for call in decision["retrievals"]:
            try:
                session.call(call["name"], call["arguments"])
            except ToolCallError:
                continue  # refused when recorded too; the observation digest checks the rest
        outcome = decision["outcome"]
        if isinstance(outcome, dict) and outcome.get("kind") == "MALFORMED":
            return ReplayedRefusal(str(outcome["code"]))
        return outcome

    def unused(self) -> int:
        return len(self.decisions) - self.position


def replay(
    loaded: LoadedSpec,
    scenario_id: str,
    decisions: Sequence[dict[str, JsonValue]],
) -> EpisodeRecord:
    agent = TapeAgent(decisions)
    record = run_episode(loaded, scenario_id, agent)
    if agent.unused():
        raise ReplayDiverged(EXTRA, f"{agent.unused()} tape decisions were never asked for")
    return record


def replay_codes(loaded: LoadedSpec, record: EpisodeRecord) -> list[str]:
    """``[]`` when the tape reproduces the ledger and final state, else ``["REPLAY_DIVERGED"]``."""
    try:
        again = replay(loaded, record.scenario_id, record.tape)
    except ReplayDiverged:
        return ["REPLAY_DIVERGED"]
    same = ledger_text(again) == ledger_text(record) and again.final_state == record.final_state
    return [] if same else ["REPLAY_DIVERGED"]
