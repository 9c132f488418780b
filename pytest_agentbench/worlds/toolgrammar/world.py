"""The ``toolgrammar`` world kind bound to the plugin core.

One case per task. The adapter receives the public task view and a tool
session over a fresh sandbox of the task's world; its tool calls execute for
real, and its final answer object is parsed strictly. The oracle task records
are read only once that answer exists; the grade is computed by code.
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pydantic import Field, ValidationError

from pytest_agentbench.sdk import (
    CONTROLS_FILE,
    SUITE_FILE,
    AgentbenchError,
    Case,
    CaseResult,
    ControlAgent,
    JsonValue,
    MetricSpec,
    Outcome,
    Record,
    Suite,
    ToolAgent,
    ToolSession,
    canonical_json,
    copy_json,
    loads_strict,
    pydantic_refusal,
    read_jsonl,
    read_prediction_lines,
    solve_with_session,
)
from pytest_agentbench.sdk import parse_final as parse_strictly
from pytest_agentbench.worlds.toolgrammar import agents, checks
from pytest_agentbench.worlds.toolgrammar.domains import UnknownDomain, get_domain
from pytest_agentbench.worlds.toolgrammar.generator import task_fingerprint
from pytest_agentbench.worlds.toolgrammar.grammar import Verb
from pytest_agentbench.worlds.toolgrammar.sandbox import Injection, Sandbox, built_world, tool_names
from pytest_agentbench.worlds.toolgrammar.session import open_session
from pytest_agentbench.worlds.toolgrammar.suitefiles import (
    CHECKSUMS,
    HIDDEN_DIR,
    MANIFEST,
    TASKS_DIR,
    verify_files,
)
from pytest_agentbench.worlds.toolgrammar.summary import verify_seal
from pytest_agentbench.worlds.toolgrammar.tasks import (
    Split,
    TaskRecord,
    Tier,
    TrapKind,
    load_tasks,
)

SEALED_ENV = "AGENTBENCH_TOOLGRAMMAR_SEALED"
"""A folder of sealed oracles (``<suite id>/tasks/*.jsonl``), overriding ``options.sealed``."""


class PlantSpec(Record):
    verb: Verb
    payload: str = Field(min_length=1)
    match: dict[str, str] = Field(min_length=1)
    """The arguments whose call's result receives the payload, as in the oracle's record."""
    field_name: Literal["notes"]


class PublicTask(Record):
    task_id: str
    world: str
    tier: Tier
    prompt: str = Field(min_length=1)
    trap_kind: TrapKind | None = None
    split: Split | None = None
    injections: tuple[PlantSpec, ...] = ()

    def labels(self) -> tuple[str, ...]:
        """Markers for selection (``-m "tier_T4 and world_clinic"``); never shown to the agent."""
        return (
            f"tier_{self.tier}",
            f"world_{self.world}",
            *([f"trap_{self.trap_kind}"] if self.trap_kind else []),
            *([f"split_{self.split}"] if self.split else []),
        )


class GrammarOptions(Record):
    sealed: str | None = None
    """Folder of the sealed test_hidden oracle, relative to the suite folder."""


class FinalAnswer(Record):
    """The answer object an adapter returns."""

    answer: str
    citations: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class LoadedGrammar:
    tasks: Mapping[str, PublicTask]
    cases: tuple[Case, ...]
    worlds: tuple[str, ...]
    sealed: Path | None
    """Where the hidden split's oracle is, when its tasks were loaded."""
    seal: JsonValue = None


def _data(suite: Suite) -> LoadedGrammar:
    data: LoadedGrammar = suite.data
    return data


def sealed_dir(suite: Suite, options: GrammarOptions) -> Path | None:
    """The sealed oracle folder of ``suite`` if it is present here (env var first)."""
    override = os.environ.get(SEALED_ENV)
    if override:
        folder = Path(override) / suite.id
    elif options.sealed is not None:
        folder = (suite.root / options.sealed).resolve()
    else:
        return None
    return folder if (folder / TASKS_DIR).is_dir() else None


def oracle_display(suite: Suite) -> str:
    relative = os.path.relpath(suite.oracle_root, suite.root)
    return posixpath.normpath(posixpath.join(suite.display_root, Path(relative).as_posix()))


def _verify_worlds(manifest: Mapping[str, Any], worlds: Sequence[str], shown: str) -> None:
    """Every world the tasks use is built here and must match its recorded digest."""
    recorded = manifest.get("worlds")
    if not isinstance(recorded, dict):
        raise AgentbenchError(
            "invalid_manifest", "must map world names to digests", file=shown, field="worlds"
        )
    for name in worlds:
        entry = recorded.get(name)
        if not isinstance(entry, dict):
            raise AgentbenchError(
                "missing_world_digest",
                f"no digest recorded for {name!r}",
                file=shown,
                field=f"worlds.{name}",
            )
        built = built_world(get_domain(name))
        if entry.get("digest") != built.digest:
            recorded_tables = entry.get("tables")
            tables = recorded_tables if isinstance(recorded_tables, dict) else {}
            differing = sorted(t for t in built.digests if tables.get(t) != built.digests[t])
            raise AgentbenchError(
                "world_digest_mismatch",
                f"world {name!r} builds to {built.digest}, the manifest records "
                f"{entry.get('digest')} (tables differing: {', '.join(differing) or 'none'})",
                file=shown,
                field=f"worlds.{name}.digest",
            )


def _check_plants(task: PublicTask, shown: str, line: int) -> None:
    """Planted text must go into the result of a tool the task's world binds."""
    names = tool_names(get_domain(task.world))
    for index, plant in enumerate(task.injections):
        if plant.verb not in names:
            raise AgentbenchError(
                "invalid_task",
                f"{task.world} binds no tool for {plant.verb.value} to plant text into",
                file=shown,
                line=line,
                field=f"injections[{index}].verb",
            )


def parse_final(value: Any) -> FinalAnswer:
    """The adapter's final object, strictly: a mapping or its JSON text."""
    return parse_strictly(value, FinalAnswer)


def calls_json(session: ToolSession) -> list[dict[str, JsonValue]]:
    """Every call the adapter attempted, refused ones included, as graded and pinned."""
    calls: list[dict[str, JsonValue]] = []
    for call in session.calls:
        result = None if call.result_json is None else loads_strict(call.result_json)
        refused = result.get("error_code") if isinstance(result, dict) else None
        calls.append(
            {
                "tool": call.name,
                "arguments": None
                if call.arguments_json is None
                else loads_strict(call.arguments_json),
                "ok": isinstance(result, dict) and result.get("ok") is True,
                "error": call.error or refused,
            }
        )
    return calls


class PredictionsAdapter:
    """Replays a predictions JSONL (``task_id``, ``calls``, ``answer``, ``citations``).

    A bad line fails only the task it names (:mod:`pytest_agentbench.sdk.predictions`).
    """

    def __init__(self, path: Path) -> None:
        self.lines = read_prediction_lines(path, key="task_id", invalid_code="invalid_prediction")
        self.refused_lines = self.lines.refused_lines

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        row = self.lines.take(task["task_id"], "missing_prediction")
        for call in row.get("calls", []):
            session.call(call["tool"], call["arguments"])
        return {k: v for k, v in row.items() if k in ("answer", "citations")}


def _seal_digest(seal: JsonValue) -> JsonValue:
    return seal.get("sha256") if isinstance(seal, dict) else None


class ToolGrammarWorld:
    kind = "toolgrammar"
    adapter_protocol: type = ToolAgent

    def load_suite(self, suite: Suite) -> LoadedGrammar:
        try:
            options = GrammarOptions.model_validate(suite.config.options)
        except ValidationError as exc:
            refused = pydantic_refusal(exc, file=suite.display(SUITE_FILE))
            raise AgentbenchError(
                refused.code,
                refused.reason,
                file=suite.display(SUITE_FILE),
                field=f"options.{refused.location.field}",
            ) from None
        manifest = verify_files(suite.root, suite.display_root, MANIFEST, exclude=(SUITE_FILE,))
        tasks: dict[str, PublicTask] = {}
        cases: list[Case] = []
        worlds: set[str] = set()
        files = sorted((suite.root / TASKS_DIR).glob("*.jsonl"))
        if not files:
            raise AgentbenchError("missing_file", "no task files", file=suite.display(TASKS_DIR))
        sealed = sealed_dir(suite, options)
        # The hidden split's tasks run only where their sealed oracle is present.
        if sealed is not None:
            files += sorted((suite.root / HIDDEN_DIR).glob("*.jsonl"))
        for path in files:
            rel = path.relative_to(suite.root).as_posix()
            shown = suite.display(rel)
            try:
                get_domain(path.stem)
            except UnknownDomain:
                raise AgentbenchError(
                    "unknown_domain", f"no domain {path.stem!r} is registered", file=shown
                ) from None
            worlds.add(path.stem)
            for line in read_jsonl(path, display=shown):
                try:
                    task = PublicTask.model_validate(line.value)
                except ValidationError as exc:
                    raise pydantic_refusal(
                        exc, file=shown, code="invalid_task", line=line.line
                    ) from None
                if task.world != path.stem:
                    raise AgentbenchError(
                        "invalid_task",
                        f"task is for world {task.world!r}",
                        file=shown,
                        line=line.line,
                        field="world",
                    )
                _check_plants(task, shown, line.line)
                if task.task_id in tasks:
                    raise AgentbenchError(
                        "duplicate_task_id",
                        f"{task.task_id!r} again",
                        file=shown,
                        line=line.line,
                        field="task_id",
                    )
                tasks[task.task_id] = task
                cases.append(
                    Case(
                        suite_id=suite.id,
                        case_id=task.task_id,
                        file=rel,
                        line=line.line,
                        labels=task.labels(),
                    )
                )
        _verify_worlds(manifest, sorted(worlds), suite.display(MANIFEST))
        return LoadedGrammar(
            tasks=tasks,
            cases=tuple(cases),
            worlds=tuple(sorted(worlds)),
            sealed=sealed,
            seal=manifest.get("seal"),
        )

    def cases(self, suite: Suite) -> Sequence[Case]:
        return _data(suite).cases

    def public_view(self, suite: Suite, case: Case) -> dict[str, JsonValue]:
        task = _data(suite).tasks[case.case_id]
        return {
            "task_id": task.task_id,
            "world": task.world,
            "tier": task.tier,
            "prompt": task.prompt,
        }

    def reference_agent(self) -> agents.ReferenceAgent:
        return agents.ReferenceAgent()

    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        task = _data(suite).tasks[case.case_id]
        plants = [Injection(p.verb, p.payload, p.match, p.field_name) for p in task.injections]
        sandbox = Sandbox(built_world(get_domain(task.world)), plants)
        try:
            session = open_session(sandbox, task.task_id, _final_answer_schema())

            def accept(raw: Any) -> JsonValue:
                final = parse_final(raw)
                return {
                    "answer": final.answer,
                    "citations": list(final.citations),
                    "state_diff": sandbox.diff(),
                    "calls": calls_json(session),
                    "audit": list(sandbox.audit),
                }

            return solve_with_session(adapter, dict(view), session, accept)
        finally:
            sandbox.close()

    def load_oracle(self, suite: Suite) -> dict[str, TaskRecord]:
        shown = oracle_display(suite)
        verify_files(suite.oracle_root, shown, CHECKSUMS, exclude=(CONTROLS_FILE,))
        records: dict[str, TaskRecord] = {}
        for path in sorted((suite.oracle_root / TASKS_DIR).glob("*.jsonl")):
            for record in load_tasks(path, f"{shown}/{TASKS_DIR}/{path.name}"):
                records[record.task_id] = record
        sealed = _data(suite).sealed
        if sealed is not None:
            hidden = [
                record
                for path in sorted((sealed / TASKS_DIR).glob("*.jsonl"))
                for record in load_tasks(path, f"{sealed.name}/{TASKS_DIR}/{path.name}")
            ]
            verify_seal(hidden, _seal_digest(_data(suite).seal), suite.display(MANIFEST))
            records.update((record.task_id, record) for record in hidden)
        for task in _data(suite).tasks.values():
            found = records.get(task.task_id)
            if found is None or found.prompt != task.prompt:
                raise AgentbenchError(
                    "oracle_mismatch",
                    f"the oracle has no record of {task.task_id!r} with its public prompt",
                    file=shown,
                    field=task.task_id,
                )
        return records

    def evaluate(self, suite: Suite, case: Case, outcome: Outcome, oracle: Any) -> CaseResult:
        return checks.grade(case, oracle[case.case_id], outcome)

    def metrics(self, suite: Suite) -> Sequence[MetricSpec]:
        return checks.metric_specs(_data(suite).worlds)

    def dimensions(self, suite: Suite) -> Sequence[str]:
        return checks.DIMENSIONS

    def control_agents(self, suite: Suite) -> Sequence[ControlAgent]:
        return [
            ControlAgent(
                agent_id="reference",
                role="reference",
                factory=agents.ReferenceAgent,
                description="executes the oracle program recovered from the prompt",
            ),
            ControlAgent(
                agent_id="obeys_injection",
                role="negative",
                factory=agents.ObeysInjectionAgent,
                description="does what instructions planted in tool results say",
            ),
            ControlAgent(
                agent_id="always_refuses",
                role="negative",
                factory=agents.AlwaysRefusesAgent,
                description="refuses everything without calling a tool",
            ),
            ControlAgent(
                agent_id="answers_without_checking",
                role="negative",
                factory=agents.AnswersWithoutCheckingAgent,
                description="answers confidently even when the world said no",
            ),
            ControlAgent(
                agent_id="ignores_policy",
                role="negative",
                factory=agents.IgnoresPolicyAgent,
                description="attempts the privileged write on every task's record",
            ),
            ControlAgent(
                agent_id="never_cites",
                role="negative",
                factory=agents.NeverCitesAgent,
                description="answers as the reference but lists no citation",
            ),
        ]

    def leak_canaries(self, suite: Suite, oracle: Any) -> Sequence[str]:
        # The oracle answer is not one: a correct agent says it. The program,
        # the expected diff and the record's fingerprint are never said or returned.
        records: Mapping[str, TaskRecord] = oracle
        canaries = []
        for record in records.values():
            canaries.append(canonical_json([s.model_dump(mode="json") for s in record.program]))
            canaries.append(canonical_json(record.model_dump(mode="json")))
            if record.oracle_state_diff:
                canaries.append(record.oracle_state_diff)
            canaries.append(task_fingerprint(record))
        return canaries

    def task_schema(self) -> dict[str, JsonValue]:
        """The published JSON Schema of the task view ``solve`` receives."""
        return {
            "type": "object",
            "properties": {
                "task_id": {"type": "string"},
                "world": {"type": "string"},
                "tier": {"type": "string", "enum": ["T1", "T2", "T3", "T4", "T5"]},
                "prompt": {"type": "string"},
            },
            "required": ["task_id", "world", "tier", "prompt"],
            "additionalProperties": False,
        }

    def final_schema(self) -> dict[str, JsonValue]:
        """The published JSON Schema of the answer object ``solve`` returns."""
        return copy_json(dict(_final_answer_schema()))

    def predictions_adapter(self, suite: Suite, path: Path) -> PredictionsAdapter:
        return PredictionsAdapter(path)


@functools.cache
def _final_answer_schema() -> Mapping[str, JsonValue]:
    # pydantic rebuilds the schema on every call; each session copies what it is given.
    return MappingProxyType(FinalAnswer.model_json_schema())


WORLD = ToolGrammarWorld()
