"""Recording an episode with its execution ledger, and replaying a recorded episode.

:func:`record_episode` opens the ledger before the adapter's first call,
writes one call row per answer (usage only where the adapter reports it)
and a terminal row, and writes the episode record beside it: ledger,
decision tape, final state and result vector. A model run given a
:class:`JournalSetup` (its provider and controls) is also written in
OperateBench's journal layout beside it (``.journal.ndjson``), its instants
the episode's simulated clock. :func:`replay_episode`
re-executes an episode record from its tape alone and refuses, by name, a
missing, extra or mismatched decision and any difference in state, event
sequence or result vector.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk import (
    ADAPTER_FAILED,
    JOURNAL_SUFFIX,
    AdapterFailure,
    AgentbenchError,
    CallPayload,
    Decision,
    HeaderPayload,
    JournalCall,
    JournalSetup,
    JsonValue,
    LedgerWriter,
    ReportsUsage,
    canonical_bytes,
    canonical_json,
    journal_bytes,
    sha256_hex,
    write_journal,
    write_new_file,
)
from pytest_agentbench.worlds.operations.episode import (
    ENGINE_VERSION,
    EpisodeRecord,
    episode_from_json,
    ledger_text,
    run_episode,
)
from pytest_agentbench.worlds.operations.evaluation import evaluate_episode
from pytest_agentbench.worlds.operations.replay import ReplayDiverged, replay, replay_codes
from pytest_agentbench.worlds.operations.spec import LoadedSpec, render_time

EPISODE_SUFFIX = ".episode.json"
LEDGER_SUFFIX = ".ledger.ndjson"


def _decision(answer: Any) -> Decision:
    try:
        data = canonical_bytes(answer)
    except (TypeError, ValueError):
        data = repr(answer).encode("utf-8")
        kind = "MALFORMED"
    else:
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        kind = outcome if isinstance(outcome, str) else "MALFORMED"
    return Decision(kind=kind, decision_digest_sha256=sha256_hex(data))


class LedgerAgent:
    """The adapter, with every answer (or failure to answer) written to the ledger first."""

    def __init__(self, adapter: Any, writer: LedgerWriter) -> None:
        self.adapter = adapter
        self.writer = writer
        self.instants: list[str] = []
        """Each call's simulated instant (the task's ``now``), for the journal layout."""

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        decision: Decision | None = None
        self.instants.append(str(task["now"]))
        try:
            answer = self.adapter.solve(task, session)
            decision = _decision(answer)
        finally:
            usage = self.adapter.drain_usage() if isinstance(self.adapter, ReportsUsage) else None
            self.writer.call(
                CallPayload(
                    call_index=len(self.writer.calls),
                    invocation_index=task["invocation_index"],
                    turn_index=task["turn_index"],
                    observation_digest_sha256=sha256_hex(canonical_bytes(task)),
                    decision=decision,
                    request_digest_sha256=None if usage is None else usage.request_digest_sha256,
                    wire_digest_sha256=None if usage is None else usage.wire_digest_sha256,
                    attempts=None if usage is None else usage.attempts,
                )
            )
        return answer


@dataclass(frozen=True)
class Recorded:
    episode: Path
    ledger: Path
    ledger_digest: str
    journal: Path | None = None
    journal_digest: str | None = None
    journal_refused: AgentbenchError | None = None
    """Why no journal was written where one was asked for (ledger and episode kept)."""


def run_id(loaded: LoadedSpec, scenario_id: str, agent_id: str) -> str:
    """Derived, not drawn: a rerun of the same agent on the same spec is byte-identical."""
    seed = {"spec": loaded.digest, "scenario": scenario_id, "agent": agent_id}
    return "exec_" + sha256_hex(canonical_bytes(seed))[:32]


def _journal(
    out: Path,
    agent: LedgerAgent,
    setup: JournalSetup,
    *,
    started_at: str,
    ended_at: str,
    kind: str,
    record: EpisodeRecord | None = None,
) -> tuple[Path, str]:
    writer = agent.writer
    path = out / f"{writer.header.scenario_id}{JOURNAL_SUFFIX}"
    # A malformed answer's refusal code, from the episode's own agent_outcome row.
    codes = {
        (row.get("invocation_index"), row.get("turn_index")): str(row["code"])
        for row in (record.ledger if record is not None else ())
        if row.get("record_type") == "agent_outcome" and "code" in row
    }
    calls = [
        JournalCall(call, at, codes.get((call.invocation_index, call.turn_index)))
        for call, at in zip(writer.calls, agent.instants, strict=True)
    ]
    data = journal_bytes(
        writer.header,
        setup,
        calls,
        started_at=started_at,
        ended_at=ended_at,
        kind=kind,
        display=str(path),
    )
    return path, write_journal(path, data)


def record_episode(
    loaded: LoadedSpec,
    scenario_id: str,
    agent_id: str,
    adapter: Any,
    out: Path,
    *,
    journal: JournalSetup | None = None,
) -> Recorded:
    ledger_path = out / f"{scenario_id}{LEDGER_SUFFIX}"
    writer = LedgerWriter(
        ledger_path,
        HeaderPayload(
            execution_run_id=run_id(loaded, scenario_id, agent_id),
            operation_id=loaded.spec.operation_id,
            spec_digest_sha256=loaded.digest,
            scenario_id=scenario_id,
            agent_id=agent_id,
            engine_version=ENGINE_VERSION,
        ),
    )
    agent = LedgerAgent(adapter, writer)
    # The journal's instants are the simulated clock's, rendered as the original renders
    # its wall-clock ones: a rerun writes the same bytes.
    start = loaded.start(scenario_id)
    started_at = render_time(start, 0)
    try:
        record = run_episode(loaded, scenario_id, agent)
    except BaseException as exc:
        written: list[str] = []
        if not writer.poisoned:
            written.append(f"ledger {ledger_path} sha256:{writer.finish('aborted')} (aborted)")
            if journal is not None:
                try:
                    ended = agent.instants[-1] if agent.instants else started_at
                    path, journal_digest = _journal(
                        out, agent, journal, started_at=started_at, ended_at=ended, kind="aborted"
                    )
                    written.append(f"journal {path} sha256:{journal_digest} (aborted)")
                except AgentbenchError as refused:
                    written.append(f"no journal: {refused.render()}")
                    exc.add_note(f"no journal written: {refused}")
        writer.close()
        if isinstance(exc, AdapterFailure):
            # The adapter's failure, with what it left: one line, never a traceback.
            kept = "; ".join(written) or "nothing written"
            raise AgentbenchError(
                ADAPTER_FAILED, f"{exc.reason}; no episode; {kept}", file=str(ledger_path)
            ) from exc
        raise
    episode = record.as_json()
    episode["replay_codes"] = replay_codes(loaded, record)
    scenario = loaded.spec.scenarios[scenario_id]
    vector = evaluate_episode(record, loaded.domain, scenario, episode["replay_codes"])
    episode["result_vector"] = vector.as_json()
    digest = writer.finish("scored")
    episode["execution_ledger"] = {"file": ledger_path.name, "digest_sha256": digest}
    episode_path = out / f"{scenario_id}{EPISODE_SUFFIX}"
    write_new_file(
        episode_path, (canonical_json(episode) + "\n").encode("utf-8"), "episode_write_failed"
    )
    recorded_journal: tuple[Path | None, str | None] = (None, None)
    journal_refused: AgentbenchError | None = None
    if journal is not None:
        # Last: a run the original's rules cannot state is refused with ledger and episode kept.
        ended_at = render_time(start, record.simulated_minutes)
        try:
            recorded_journal = _journal(
                out,
                agent,
                journal,
                started_at=started_at,
                ended_at=ended_at,
                kind="scored",
                record=record,
            )
        except AgentbenchError as exc:
            journal_refused = exc
    return Recorded(
        episode=episode_path,
        ledger=ledger_path,
        ledger_digest=digest,
        journal=recorded_journal[0],
        journal_digest=recorded_journal[1],
        journal_refused=journal_refused,
    )


def replay_episode(loaded: LoadedSpec, episode: Mapping[str, Any], display: str) -> list[str]:
    """Re-execute ``episode`` from its tape; the lines that say what was reproduced."""
    record = episode_from_json(episode)
    engine = episode.get("engine_version")
    if engine != ENGINE_VERSION:
        # An older engine's ledger differs by construction (since 1.1.0 a retrieval
        # row carries the records it served, which the evaluator grades from), so it
        # is refused by name rather than reported as a diverged replay.
        raise AgentbenchError(
            "replay_engine_mismatch",
            f"the episode was recorded by engine {engine!r}; this build replays {ENGINE_VERSION}",
            file=display,
            field="engine_version",
        )
    if record.spec_digest != loaded.digest:
        raise AgentbenchError(
            "replay_spec_mismatch",
            "the episode was run against another OperationSpec",
            file=display,
            field="spec_digest_sha256",
        )
    tape = episode["decision_tape"]
    if tape.get("decisions_digest_sha256") != sha256_hex(canonical_bytes(list(record.tape))):
        raise AgentbenchError(
            "tape_digest_mismatch",
            "the decisions do not match the tape's digest",
            file=display,
            field="decision_tape.decisions_digest_sha256",
        )
    if record.scenario_id not in loaded.spec.scenarios:
        raise AgentbenchError(
            "unknown_reference", "no such scenario", file=display, field="scenario_id"
        )
    try:
        again = replay(loaded, record.scenario_id, record.tape)
    except ReplayDiverged as diverged:
        raise AgentbenchError(diverged.code, diverged.detail, file=display) from None
    if again.final_state != record.final_state:
        raise AgentbenchError(
            "replay_state_diverged", "the final state differs", file=display, field="final_state"
        )
    if ledger_text(again) != ledger_text(record):
        raise AgentbenchError(
            "replay_events_diverged", "the event sequence differs", file=display, field="ledger"
        )
    scenario = loaded.spec.scenarios[record.scenario_id]
    codes: list[JsonValue] = list(episode.get("replay_codes", []))
    vector = evaluate_episode(again, loaded.domain, scenario, [str(c) for c in codes]).as_json()
    recorded = episode.get("result_vector")
    if recorded is not None and recorded != vector:
        raise AgentbenchError(
            "replay_result_diverged",
            "the result vector differs",
            file=display,
            field="result_vector",
        )
    return [
        f"reproduced {record.scenario_id}: {len(record.tape)} decisions, "
        f"{len(record.ledger)} ledger rows, final state equal",
        f"result vector {'equal' if recorded is not None else 're-derived'}: "
        f"reliable={vector['reliable']}, terminal {vector['terminal']}",
    ]
