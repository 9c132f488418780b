"""Diagnostic projections of one scenario, graded at its matched decision points.

The same scenario presented four ways, as the original defines them, each
graded by one evaluator (:func:`decision_points.grade_outcome`, one outcome per
decision point) so their vectors are comparable:

- ``full``: the lifecycle as the case runs it; each point is graded at the
  first turn its predicate holds in the agent's own episode (``UNREACHED``
  where the agent never brings the operation there).
- ``static``: the point's frozen observation (reached by the reference driver),
  a fresh invocation with nothing read yet, one outcome; no future state.
- ``boundary_only``: the reference drives the episode and the agent owns only
  the invocation at the point; the rest of the run is the reference's. As in
  the original, an outcome is admissible there only if the world's engine also
  accepts it at that state (``ENGINE_REJECTED`` where the grader admits it and
  the engine refuses it).
- ``ordered_snapshot``: ``static`` with time removed from what the agent is
  handed and served (instants and minutes dropped, ``now`` pinned to the
  scenario's first point), keeping the order of the business facts. It is not
  the stateful time-removed arm, which the original has not implemented either.

These are diagnostic surfaces, not a confirmatory comparison: every vector
reads one semantic scenario, so its points and its projections are one
statistical unit, never independent samples.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_agentbench.sdk import (
    AdapterFailure,
    AgentbenchError,
    JsonValue,
    ToolHarnessError,
    copy_json,
)
from pytest_agentbench.worlds.operations import agents
from pytest_agentbench.worlds.operations.decision_points import (
    ADMISSIBLE,
    DecisionPoint,
    Encounter,
    Probe,
    decide_at,
    grade_outcome,
    reach,
)
from pytest_agentbench.worlds.operations.spec import LoadedSpec

FULL, STATIC, BOUNDARY, ORDERED = "full", "static", "boundary_only", "ordered_snapshot"
UNREACHED = "UNREACHED"
ERROR = "ERROR"
ENGINE_REJECTED = "ENGINE_REJECTED"
_ENGINE_ACCEPTS = frozenset({"effect_accepted", "wait_declared"})
_ENGINE_REFUSES = frozenset({"action_rejected", "wait_refused"})
_NEXT_TURN = frozenset({"agent_outcome", "agent_invoked", "invocation_ended"})
CAVEAT = (
    "diagnostic surfaces, not a confirmatory comparison; stateful time-removed is not "
    "implemented, as in the original"
)
_TIME_KEYS = frozenset({"now", "minute", "at"})

Statuses = dict[str, str]
"""Decision point id -> ADMISSIBLE, a refusal code, ENGINE_REJECTED, UNREACHED or ERROR."""


class FullRecorder:
    """Grades the agent's own lifecycle at each point (the ``full`` projection)."""

    def __init__(self, spec: LoadedSpec, points: Sequence[DecisionPoint]) -> None:
        self.spec = spec
        self.points = tuple(points)
        self.statuses: Statuses = {}

    def wrap(self, episode: Any, adapter: Any) -> Probe:
        return Probe(episode, adapter, self.points, on_match=self._grade)

    def _grade(self, point: DecisionPoint, encounter: Encounter, raw: Any) -> None:
        verdict = grade_outcome(point, encounter, raw, self.spec.policy)
        self.statuses[point.decision_point_id] = verdict.reason_code

    def vector(self) -> Statuses:
        return {
            p.decision_point_id: self.statuses.get(p.decision_point_id, UNREACHED)
            for p in self.points
        }


def run_projections(
    spec: LoadedSpec,
    scenario_id: str,
    points: Sequence[DecisionPoint],
    adapter: Any,
    arms: Sequence[str],
) -> dict[str, Statuses]:
    """The non-full projections' vectors for ``adapter`` on ``scenario_id``."""
    vectors: dict[str, Statuses] = {}
    encounters = reach(spec, scenario_id, points) if {STATIC, ORDERED} & set(arms) else {}
    if STATIC in arms:
        vectors[STATIC] = {
            p.decision_point_id: _local(spec, p, encounters[p.decision_point_id], adapter, None)
            for p in points
        }
    if BOUNDARY in arms:
        vectors[BOUNDARY] = {
            p.decision_point_id: _boundary(spec, scenario_id, p, adapter) for p in points
        }
    if ORDERED in arms:
        anchor = encounters[points[0].decision_point_id].task["now"]
        vectors[ORDERED] = {
            p.decision_point_id: _local(
                spec, p, encounters[p.decision_point_id], adapter, _ordered(anchor)
            )
            for p in points
        }
    return vectors


def _local(
    spec: LoadedSpec,
    point: DecisionPoint,
    encounter: Encounter,
    adapter: Any,
    views: tuple[Callable[[Any], Any], Callable[[Any], Any]] | None,
) -> str:
    try:
        raw = decide_at(spec, encounter, adapter, views)
    except (AdapterFailure, ToolHarnessError):
        return ERROR
    return grade_outcome(point, encounter, raw, spec.policy).reason_code


class _BoundaryProbe(Probe):
    """The reference everywhere but the invocation at the point, which the agent owns."""

    def __init__(self, episode: Any, subject: Any, point: DecisionPoint, spec: LoadedSpec) -> None:
        super().__init__(episode, agents.reference(), [point], on_match=self._grade)
        self.subject = subject
        self.spec = spec
        self.owned: int | None = None
        self.status = UNREACHED
        self.graded_from: int | None = None

    def choose(self, task: dict[str, Any], point: DecisionPoint | None) -> Any:
        if point is not None:
            self.owned = int(task["invocation_index"])
        return self.subject if self.owned == task["invocation_index"] else self.inner

    def _grade(self, point: DecisionPoint, encounter: Encounter, raw: Any) -> None:
        self.status = grade_outcome(point, encounter, raw, self.spec.policy).reason_code
        # The engine records its handling of this outcome from here on.
        self.graded_from = len(self.episode.ledger)

    def settled(self) -> str:
        """The graded status, admissible only where the engine accepted the outcome."""
        if self.status != ADMISSIBLE or self.graded_from is None:
            return self.status
        handled: set[str] = set()
        # The first row is the graded turn's own ``agent_outcome``; the engine's
        # handling of it runs until the next turn or invocation begins.
        for row in self.episode.ledger[self.graded_from + 1 :]:
            if row["record_type"] in _NEXT_TURN:
                break
            handled.add(str(row["record_type"]))
        if handled & _ENGINE_REFUSES:
            return ENGINE_REJECTED
        # An outcome the engine never got to decide (the run failed first) is not
        # established either way.
        return self.status if handled & _ENGINE_ACCEPTS else ERROR


def _boundary(spec: LoadedSpec, scenario_id: str, point: DecisionPoint, adapter: Any) -> str:
    from pytest_agentbench.worlds.operations.episode import Episode

    episode = Episode(spec, scenario_id, None)
    probe = _BoundaryProbe(episode, adapter, point, spec)
    episode.agent = probe
    try:
        episode.run()
    except (AdapterFailure, ToolHarnessError, AgentbenchError):
        # The graded outcome (if the point was reached) stands; a failure after it
        # belongs to the turns the projection does not grade.
        return probe.settled() if probe.status != UNREACHED else ERROR
    return probe.settled()


def _ordered(anchor: JsonValue) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    def task_view(task: Any) -> Any:
        view = _without_time(task)
        view["now"] = anchor
        return view

    return task_view, _without_time


def _without_time(value: Any) -> Any:
    """``value`` without instants: keys ``now``, ``minute``, ``at``, ``*_minute``, ``*_at``."""
    if isinstance(value, Mapping):
        return {
            key: _without_time(item)
            for key, item in value.items()
            if key not in _TIME_KEYS and not key.endswith(("_minute", "_at"))
        }
    if isinstance(value, list):
        return [_without_time(item) for item in value]
    return copy_json(value)


def measurements(vectors: Mapping[str, Statuses]) -> dict[str, int]:
    """Per projection: points graded and points admissible (the clustered metric's ratio)."""
    counts: dict[str, int] = {}
    for arm, vector in vectors.items():
        counts[f"projection_{arm}_points"] = len(vector)
        counts[f"projection_{arm}_admissible"] = sum(s == "ADMISSIBLE" for s in vector.values())
    return counts
