"""Running one (task, lifecycle) pair against a backend and an agent.

One :class:`Harness` per fixture and process holds what the lifecycles
share: every backend's prepared index (built once, before any scored call,
for both cohorts), the warm cohort's readiness probe, and the warm-cohort
corruption rule: after a warm ``tool_timeout``, ``tool_call_failed`` or
``invalid_tool_result`` every later warm pair of that backend is a
``warm_cohort_corrupted`` harness error. The state is per process: under
pytest-xdist each worker is its own warm process with its own probe.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_agentbench.sdk import (
    AdapterFailure,
    FailureClass,
    ToolCallError,
    ToolSession,
    call_adapter,
)
from pytest_agentbench.worlds.retrieval.agent import FixtureAgent
from pytest_agentbench.worlds.retrieval.backends import TaskScope, backend_id
from pytest_agentbench.worlds.retrieval.fixture import PublicFixture
from pytest_agentbench.worlds.retrieval.jscanon import fingerprint
from pytest_agentbench.worlds.retrieval.session import refuse_earlier_refusals, tool_session
from pytest_agentbench.worlds.retrieval.trial import (
    Identity,
    Trial,
    TrialEnded,
    harness_failure_canonical,
    model_fingerprint,
)

LIFECYCLES = ("cold", "warm")
CORRUPTING = frozenset({"tool_timeout", "tool_call_failed", "invalid_tool_result"})
MAX_STEPS = 256


@dataclass(frozen=True)
class Prepared:
    index_fingerprint: str
    config_fingerprint: str
    preparation_ms: float


@dataclass(frozen=True)
class Run:
    receipt: dict[str, Any]
    """The format's receipt: ``{schemaVersion, canonical, observations}``."""
    session_receipt: dict[str, Any] | None = None
    """The core tool session's receipt (``pytest_agentbench.sdk.tools.Receipt`` as JSON)."""

    @property
    def canonical(self) -> dict[str, Any]:
        canonical: dict[str, Any] = self.receipt["canonical"]
        return canonical

    @property
    def failure(self) -> tuple[str, str | None]:
        failure = self.canonical["failure"]
        return failure["class"], failure["code"]

    @property
    def diagnostics(self) -> list[str]:
        diagnostics: list[str] = self.receipt["observations"]["diagnostics"]
        return diagnostics


def core_failure_class(failure_class: str, code: str | None) -> FailureClass | None:
    """The core's class of a trial failure.

    The format calls every mistake of the agent an agent error; the core keeps
    ``agent_error`` for an adapter that raised and calls output that breaks the
    world's contract (a disallowed tool, bad arguments, a blown budget, a
    malformed envelope) a product error.
    """
    if failure_class == "none":
        return None
    if failure_class == "agent_error" and code != "agent_raised":
        return FailureClass.PRODUCT_ERROR
    return FailureClass(failure_class)


def agent_id(agent: Any) -> str:
    value = getattr(agent, "agent_id", None)
    return value if isinstance(value, str) and value else type(agent).__name__


def is_step_agent(agent: Any) -> bool:
    return isinstance(agent, FixtureAgent)


@dataclass
class Harness:
    public: PublicFixture
    cues: Mapping[str, Sequence[str]]
    prepared: dict[int, tuple[Any, Prepared]] = field(default_factory=dict)
    scopes: dict[str, TaskScope] = field(default_factory=dict)
    probed: set[int] = field(default_factory=set)
    corrupted: set[int] = field(default_factory=set)

    def scope(self, task_id: str) -> TaskScope:
        """The task's visibility boundary (documents grouped once for every task)."""
        if not self.scopes:
            by_task: dict[str, dict[str, Any]] = {}
            for uri, doc in self.public.docs.items():
                by_task.setdefault(doc.task_id, {})[uri] = doc
            for tid, task in self.public.tasks.items():
                self.scopes[tid] = TaskScope(
                    tid,
                    task.corpus.collections,
                    by_task.get(tid, {}),
                    tuple(claim.claimKey for claim in task.claims),
                    task.budgets.maxAgentCalls,
                    task.budgets.maxModelVisibleBytes,
                )
        return self.scopes[task_id]

    def prepare(self, backend: Any) -> Prepared:
        """Build the backend's index once; cold and warm cohorts share it."""
        known = self.prepared.get(id(backend))
        if known is not None and known[0] is backend:
            return known[1]
        started = time.perf_counter()
        index = backend.prepare(self.public.docs)
        if not isinstance(index, str) or not index:
            raise ValueError("prepare() must return the index fingerprint (a non-empty string)")
        prepared = Prepared(
            index_fingerprint=index,
            config_fingerprint=fingerprint(getattr(backend, "config", {})),
            preparation_ms=(time.perf_counter() - started) * 1000,
        )
        self.prepared[id(backend)] = (backend, prepared)
        return prepared

    def run(self, task_id: str, lifecycle: str, backend: Any, agent: Any) -> Run:
        task = self.public.tasks[task_id]
        raw_task = self.public.raw_tasks[task_id]
        identity = Identity(task_id, backend_id(backend), agent_id(agent), lifecycle)
        scope = self.scope(task_id)
        try:
            prepared = self.prepare(backend)
        except Exception as exc:
            return self._harness_failure(identity, backend, None, "preparation_failed", exc)
        if lifecycle == "warm" and id(backend) in self.corrupted:
            return self._harness_failure(identity, backend, prepared, "warm_cohort_corrupted")
        started = time.perf_counter()
        try:
            self._enter_lifecycle(lifecycle, backend, raw_task, scope)
        except Exception as exc:
            if lifecycle == "warm":
                self.corrupted.add(id(backend))
            return self._harness_failure(identity, backend, prepared, "lifecycle_setup_failed", exc)
        trial = Trial(
            task=task,
            raw_task=raw_task,
            scope=scope,
            backend=backend,
            identity=identity,
            corpus_fingerprint=self.public.corpus_fingerprint,
            config_fingerprint=prepared.config_fingerprint,
            index_fingerprint=prepared.index_fingerprint,
            model=model_fingerprint(identity.agent_id, getattr(agent, "state_machine", None)),
        )
        view = dict(raw_task)
        session = tool_session(trial)
        try:
            if is_step_agent(agent):
                self._drive_steps(trial, session, agent, view)
            else:
                self._drive_solve(trial, session, agent, view)
        finally:
            session.close()
        receipt = trial.receipt((time.perf_counter() - started) * 1000)
        receipt["observations"]["timings"]["preparation"] = {
            "valueMs": round(prepared.preparation_ms, 3),
            "unavailableReason": None,
        }
        failure_class, code = trial.failure or ("none", None)
        core_class = core_failure_class(failure_class, code)
        session_receipt = session.receipt(
            trial.envelope,
            failure_class=None if core_class is None else core_class.value,
            failure_code=code,
            failure_reason="; ".join(trial.diagnostics) or None,
        ).model_dump(mode="json")
        run = Run(receipt, session_receipt)
        if lifecycle == "warm" and run.failure[1] in CORRUPTING:
            self.corrupted.add(id(backend))
        return run

    def _enter_lifecycle(
        self, lifecycle: str, backend: Any, raw_task: Mapping[str, Any], scope: Any
    ) -> None:
        if lifecycle == "cold":
            reset = getattr(backend, "reset", None)
            if callable(reset):
                reset()
        elif id(backend) not in self.probed:
            # Exactly one discarded readiness probe per warm process.
            backend.call(
                "search",
                {"query": raw_task["brief"]["goal"], "collection": scope.collections[0]},
                scope,
            )
            self.probed.add(id(backend))

    def _drive_steps(
        self, trial: Trial, session: ToolSession, agent: FixtureAgent, view: dict[str, Any]
    ) -> None:
        """A step agent's tool choices go through the same session an outer agent gets."""
        for _ in range(MAX_STEPS):
            if trial.done:
                return
            step = agent.next_step(view, trial.history, self.cues)
            if not (isinstance(step, dict) and step.get("kind") == "tool" and len(step) == 3):
                try:
                    trial.step(step)
                except TrialEnded:
                    return
                continue
            try:
                session.call(step.get("toolName", ""), step.get("arguments"))
            except ToolCallError:
                with contextlib.suppress(ToolCallError):
                    refuse_earlier_refusals(trial, session)
        trial.fail(
            "agent_error", "invalid_agent_step", f"no final envelope after {MAX_STEPS} steps"
        )

    def _drive_solve(
        self, trial: Trial, session: ToolSession, agent: Any, view: dict[str, Any]
    ) -> None:
        try:
            final = call_adapter(agent.solve, view, session)
        except AdapterFailure as failure:
            trial.fail("agent_error", "agent_raised", failure.reason)
            return
        try:
            refuse_earlier_refusals(trial, session)
        except ToolCallError:
            return
        trial.finish(final)

    def _harness_failure(
        self,
        identity: Identity,
        backend: Any,
        prepared: Prepared | None,
        code: str,
        exc: BaseException | None = None,
    ) -> Run:
        canonical = harness_failure_canonical(
            identity,
            backend,
            corpus_fingerprint=self.public.corpus_fingerprint,
            config_fingerprint=fingerprint(getattr(backend, "config", {})),
            index_fingerprint="0" * 64 if prepared is None else prepared.index_fingerprint,
            code=code,
        )
        unavailable = {"valueMs": None, "unavailableReason": "the harness failed before the trial"}
        observations = {
            "recordedAt": None,
            "timings": dict.fromkeys(
                ("preparation", "startup", "modelLoad", "tool", "driver", "endToEnd"), unavailable
            ),
            "process": {"peakRssBytes": None, "unavailableReason": "not measured in-process"},
            "tempPaths": [],
            "diagnostics": [] if exc is None else [f"{code}: {type(exc).__name__}: {exc}"],
        }
        return Run({"schemaVersion": "1.0", "canonical": canonical, "observations": observations})
