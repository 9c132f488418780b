"""Recording an episode with its execution ledger, and replaying it from its tape."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.canonical import canonical_bytes, sha256_hex
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger import Attempt, Tokens, UsageReport, audit_ledger
from pytest_agentbench.sdk.runner import AdapterFailure
from pytest_agentbench.worlds.operations.agents import Reference
from pytest_agentbench.worlds.operations.execution import record_episode, replay_episode
from tests.worlds.operations.helpers import shipped


@cache
def recorded_v1(tmp: str) -> dict[str, Any]:
    paths = record_episode(shipped(), "V1", "reference", Reference(), Path(tmp))
    episode: dict[str, Any] = json.loads(paths.episode.read_text(encoding="utf-8"))
    return episode


@pytest.fixture(scope="module")
def episode(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return recorded_v1(str(tmp_path_factory.mktemp("v1")))


def ledger_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_a_recorded_episode_has_one_call_row_per_decision_and_replays(
    episode: dict[str, Any], tmp_path: Path
) -> None:
    decisions = episode["decision_tape"]["decisions"]
    ledger = episode["execution_ledger"]
    assert episode["result_vector"]["reliable"] is True
    assert episode["replay_codes"] == []
    lines = replay_episode(shipped(), episode, "V1.episode.json")
    assert lines[0] == (
        f"reproduced V1: {len(decisions)} decisions, {len(episode['ledger'])} ledger rows, "
        "final state equal"
    )
    again = record_episode(shipped(), "V1", "reference", Reference(), tmp_path)
    rows = ledger_rows(again.ledger)
    assert again.ledger_digest == ledger["digest_sha256"], "reruns are byte-identical"
    calls = [row["call"] for row in rows if row["row_kind"] == "call"]
    assert [(c["invocation_index"], c["turn_index"]) for c in calls] == [
        (d["invocation_index"], d["turn_index"]) for d in decisions
    ]
    assert [c["observation_digest_sha256"] for c in calls] == [
        d["observation_digest_sha256"] for d in decisions
    ]
    assert not any("attempts" in c or "request_digest_sha256" in c for c in calls)


class Reporting(Reference):
    """The reference agent, reporting model usage as a chat adapter would."""

    def __init__(self) -> None:
        super().__init__()
        self.answered = 0

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        self.answered += 1
        return super().solve(task, session)

    def drain_usage(self) -> UsageReport | None:
        if self.answered % 2:
            return None
        return UsageReport(
            request_digest_sha256=f"{self.answered:064x}",
            attempts=(
                Attempt(attempt_index=1, outcome="response", tokens=Tokens(input=10, output=2)),
            ),
        )


def test_usage_is_carried_where_the_adapter_reports_it(tmp_path: Path) -> None:
    paths = record_episode(shipped(), "V3", "reporting", Reporting(), tmp_path)
    rows = ledger_rows(paths.ledger)
    calls = [row["call"] for row in rows if row["row_kind"] == "call"]
    reported = [c for c in calls if "attempts" in c]
    assert len(reported) == len(calls) // 2
    assert all(c["attempts"][0]["tokens"] == {"input": 10, "output": 2} for c in reported)
    assert rows[-1]["terminal"]["totals"]["input_tokens"] == 10 * len(reported)
    assert audit_ledger(paths.ledger).terminal_kind == "scored"


class Crashes(Reference):
    def __init__(self) -> None:
        super().__init__()
        self.turns = 0

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        self.turns += 1
        if self.turns == 3:
            raise RuntimeError("provider unavailable")
        return super().solve(task, session)


def test_an_adapter_that_raises_leaves_an_aborted_ledger_not_a_scored_one(
    tmp_path: Path,
) -> None:
    with pytest.raises(AgentbenchError) as failed:
        record_episode(shipped(), "V1", "crashes", Crashes(), tmp_path)
    # One named line saying what the failure left, the adapter's failure its cause.
    assert failed.value.code == "adapter_failed"
    assert isinstance(failed.value.__cause__, AdapterFailure)
    reading = audit_ledger(tmp_path / "V1.ledger.ndjson")
    assert failed.value.reason == (
        "adapter raised RuntimeError: provider unavailable; no episode; "
        f"ledger {tmp_path / 'V1.ledger.ndjson'} sha256:{reading.digest} (aborted)"
    )
    assert reading.terminal_kind == "aborted"
    rows = [json.loads(json.dumps(row)) for row in reading.rows]
    assert rows[-2]["call"]["decision"] is None
    assert rows[-1]["terminal"]["totals"]["decisions"] == 2
    assert not (tmp_path / "V1.episode.json").exists(), "no episode artefact for an aborted run"


def _retape(episode: dict[str, Any]) -> None:
    tape = episode["decision_tape"]
    tape["decisions_digest_sha256"] = sha256_hex(canonical_bytes(tape["decisions"]))


def _drop_last(e: dict[str, Any]) -> None:
    e["decision_tape"]["decisions"].pop()
    _retape(e)


def _add_extra(e: dict[str, Any]) -> None:
    decisions = e["decision_tape"]["decisions"]
    decisions.append({**decisions[-1], "turn_index": decisions[-1]["turn_index"] + 1})
    _retape(e)


def _swap_turn(e: dict[str, Any]) -> None:
    e["decision_tape"]["decisions"][0]["turn_index"] = 1
    _retape(e)


def _other_outcome(e: dict[str, Any]) -> None:
    first = e["decision_tape"]["decisions"][1]
    first["outcome"] = {**first["outcome"], "reason": "edited"}
    _retape(e)


def _unretaped(e: dict[str, Any]) -> None:
    e["decision_tape"]["decisions"].pop()


def _state(e: dict[str, Any]) -> None:
    e["final_state"]["observable"]["operation"]["operation"]["status"] = "EDITED"


def _events(e: dict[str, Any]) -> None:
    e["ledger"][0]["minute"] = 1


def _vector(e: dict[str, Any]) -> None:
    e["result_vector"]["reliable"] = False


def _spec(e: dict[str, Any]) -> None:
    e["spec_digest_sha256"] = "0" * 64


def _older_engine(e: dict[str, Any]) -> None:
    # An episode of engine 1.0.0: its retrieval rows kept no served records.
    e["engine_version"] = "1.0.0"
    for row in e["ledger"]:
        if row["record_type"] == "retrieval":
            row["records"] = [
                {k: r[k] for k in ("collection", "id", "version")} for r in row["records"]
            ]


@pytest.mark.parametrize(
    ("tamper", "code"),
    [
        (_drop_last, "tape_decision_missing"),
        (_add_extra, "tape_decision_extra"),
        (_swap_turn, "tape_decision_mismatched"),
        (_other_outcome, "replay_events_diverged"),
        (_unretaped, "tape_digest_mismatch"),
        (_state, "replay_state_diverged"),
        (_events, "replay_events_diverged"),
        (_vector, "replay_result_diverged"),
        (_spec, "replay_spec_mismatch"),
        (_older_engine, "replay_engine_mismatch"),
    ],
)
def test_replay_refuses_by_name(
    episode: dict[str, Any], tamper: Callable[[dict[str, Any]], None], code: str
) -> None:
    tampered = copy.deepcopy(episode)
    tamper(tampered)
    with pytest.raises(AgentbenchError) as refused:
        replay_episode(shipped(), tampered, "V1.episode.json")
    assert refused.value.code == code
