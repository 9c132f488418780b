"""Shared helpers: the shipped OperationSpec, variations of it, and scripted agents."""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.worlds.operations.episode import EpisodeRecord, run_episode
from pytest_agentbench.worlds.operations.evaluation import ResultVector, evaluate_episode
from pytest_agentbench.worlds.operations.packs import installed_packs
from pytest_agentbench.worlds.operations.spec import LoadedSpec, parse_operation_spec

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "suites" / "operations-maintenance-v1"
SPEC_PATH = SUITE / "operation.yaml"


@cache
def _raw() -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load(SPEC_PATH.read_text(encoding="utf-8"))
    return raw


def spec_dict() -> dict[str, Any]:
    """A private copy of the shipped spec, to vary."""
    return copy.deepcopy(_raw())


def second_cycle_dict() -> dict[str, Any]:
    """The shipped spec rewritten the way the original's fixture is authored.

    The repair quote opens its own work cycle (``work_cycle_2``, child of
    ``work_cycle_1``) and everything after it correlates there; the warranty
    revisit is ``work_cycle_3``; the verification service reports its outcome
    as ``COMPLETED``, a word no closed vocabulary of ours lists.
    """
    raw = spec_dict()
    for scenario in raw["scenarios"].values():
        quoted = False
        for event in scenario["events"]:
            after_quote = quoted
            if event["type"] == "supplier_quote_received":
                quoted = True
                event["payload"]["parent_cycle_id"] = "work_cycle_1"
            renamed = {"cycle_1": "work_cycle_2" if after_quote else "work_cycle_1"}
            renamed["cycle_2"] = "work_cycle_3"
            payload = event["payload"]
            if "cycle_id" in payload:
                payload["cycle_id"] = renamed.get(payload["cycle_id"], payload["cycle_id"])
            if event["type"] == "supplier_quote_received":
                payload["cycle_id"] = "work_cycle_2"
            for timing in ("on_action", "on_event"):
                trigger = event.get(timing)
                if trigger and "cycle_id" in trigger:
                    trigger["cycle_id"] = renamed.get(trigger["cycle_id"], trigger["cycle_id"])
            if event["type"] == "work_evidence_verified":
                payload["outcome"] = "COMPLETED"
    return raw


def load(raw: dict[str, Any] | None = None) -> LoadedSpec:
    return parse_operation_spec(
        spec_dict() if raw is None else raw, "operation.yaml", installed_packs()
    )


@cache
def shipped() -> LoadedSpec:
    return load()


Decide = Callable[[dict[str, Any], Any], JsonValue]


class Scripted:
    """An agent whose every turn is ``decide(task, session)``; it keeps the tasks it saw."""

    def __init__(self, decide: Decide) -> None:
        self.decide = decide
        self.tasks: list[dict[str, Any]] = []

    def solve(self, task: dict[str, Any], session: Any) -> JsonValue:
        self.tasks.append(task)
        return self.decide(task, session)


class Reading(Scripted):
    """A scripted agent that first makes every named read, each turn: its outcomes pass
    the read gate, so what a test observes is the guard it is about."""

    def solve(self, task: dict[str, Any], session: Any) -> JsonValue:
        read_all(session)
        return super().solve(task, session)


def read_all(session: Any) -> None:
    tools = shipped().domain.read_tools  # type: ignore[attr-defined]
    session.call("retrieve", {"requests": [{"tool": name} for name in sorted(tools)]})


def wait(*wake_on: str, fallback: int | None = None) -> dict[str, JsonValue]:
    return {
        "outcome": "WAIT",
        "reason": "test",
        "wake_on": list(wake_on),
        "fallback_after_minutes": fallback,
    }


def episode(scenario: str, agent: Any, loaded: LoadedSpec | None = None) -> EpisodeRecord:
    return run_episode(loaded or shipped(), scenario, agent)


def grade(record: EpisodeRecord, loaded: LoadedSpec | None = None) -> ResultVector:
    spec = loaded or shipped()
    return evaluate_episode(record, spec.domain, spec.spec.scenarios[record.scenario_id], [])


def failing(vector: ResultVector) -> dict[str, tuple[str, ...]]:
    return {d.name: d.codes for d in vector.dimensions if d.codes}


def rows(record: EpisodeRecord, *types: str) -> list[dict[str, Any]]:
    return [row for row in record.ledger if row["record_type"] in types]


def only_events(scenario: dict[str, Any], *event_ids: str) -> dict[str, Any]:
    scenario["events"] = [e for e in scenario["events"] if e["event_id"] in event_ids]
    scenario["expected_event_rejections"] = [
        r for r in scenario["expected_event_rejections"] if r["event_id"] in event_ids
    ]
    return scenario
