"""Records shared by the core and every world kind.

These are the only types that cross the boundary between the core and a world:
a world turns its own data into :class:`Case` items, drives an adapter into an
:class:`Outcome`, and grades it into a :class:`CaseResult` of named
:class:`Check` assertions and integer measurements that :mod:`metrics`
aggregates according to the world's :class:`MetricSpec` list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from pytest_agentbench.sdk.canonical import JsonValue


class Record(BaseModel):
    """Base for immutable records: unknown fields refused, instances frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


BUILT_ON_FIRST_USE = ConfigDict(defer_build=True)
"""``model_config`` of a record most processes never validate: its validator is built
on first use rather than at import. Building it later costs what building it at
import does, so only a record that stays unused in most processes should defer."""


class CheckStatus(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    MISSING = "missing"
    """The adapter's output did not carry the value; graded as not passing."""


class Check(Record):
    """One named assertion of a case: its verdict with expected and actual values."""

    name: str
    status: CheckStatus
    expected: JsonValue = None
    actual: JsonValue = None
    detail: str | None = None
    expected_fault: str | None = None
    """The id of the declared, expected fault this check's failure is (an authored
    fault the variant must produce): the check is reported as failed, as it did,
    and does not fail its case. Only a ``fail`` check carries one."""

    @property
    def passed(self) -> bool:
        return self.status is CheckStatus.PASS

    # A field validator, not a model one: a model's after-validator runs again for
    # every check a CaseResult is given (twice a case, for nothing); this one runs
    # only where a fault is given, and ``status``, declared before it, is known.
    @field_validator("expected_fault")
    @classmethod
    def _fault_only_on_failure(cls, fault: str | None, info: ValidationInfo) -> str | None:
        if fault is not None and info.data.get("status", CheckStatus.FAIL) is not CheckStatus.FAIL:
            raise ValueError("only a failed check can be a declared fault")
        return fault

    @property
    def met(self) -> bool:
        """Passed, or failed exactly as a declared fault: the case is not failed by it."""
        return self.passed or (self.status is CheckStatus.FAIL and self.expected_fault is not None)


class FailureClass(StrEnum):
    AGENT_ERROR = "agent_error"
    """The adapter raised, or ran past the per-case timeout."""
    PRODUCT_ERROR = "product_error"
    """The adapter returned, but its output breaks the world's output contract."""
    HARNESS_ERROR = "harness_error"
    """The evaluation machinery failed (world, oracle, crashed worker): not the agent's fault."""


class CaseOutcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    """Harness error: the case was attempted but could not be graded."""
    SKIPPED = "skipped"
    EXCLUDED = "excluded"
    """Not run to the end for a reason outside the agent (a budget ceiling): counted by
    its exclusion code, never graded, never the agent's failure."""


class Case(Record):
    """One benchmark case: a test item."""

    suite_id: str
    case_id: str
    file: str
    """Path of the file holding the case, relative to the suite folder (POSIX)."""
    line: int | None = None
    title: str | None = None
    labels: tuple[str, ...] = ()
    """Open labels (case kinds, tiers): each that is a Python identifier (``tier_T4``,
    ``world_clinic``) is also a registered marker on the case's item, so ``-m`` selects by
    it; any other (``cluster:<id>``) is a ``-k`` keyword only."""
    cluster: str | None = None
    """The semantic scenario this case is a variant of: one statistical unit with its
    siblings. ``None``: the case is its own unit."""


class Outcome(Record):
    """What running a case produced, before any oracle is consulted."""

    output: JsonValue = None
    """The adapter's output in canonical JSON form (pinned by golden snapshots)."""
    failure_class: FailureClass | None = None
    failure_reason: str | None = None
    failure_traceback: str | None = None
    """What the adapter raised, as traceback text (its own frames; all under ``--tb=long``)."""
    transcript: str | None = None
    receipt: dict[str, JsonValue] | None = None
    """An interactive world's tool-session receipt as JSON: ``tools.Receipt``, or
    ``tools.EpisodeReceipt`` when the case opened one session per invocation."""
    exclusion: str | None = None
    """The code that excluded the case (``budget_exceeded_calls`` ...); then it is not graded."""


class RecordedOutput(Record):
    """A case's adapter outcome as recorded for re-scoring, with what it was produced from."""

    model_config = BUILT_ON_FIRST_USE

    outcome: Outcome
    case_digest: str
    """sha256 of the case and the public view the adapter was given."""
    suite_digest: str | None
    oracle_digest: str | None
    adapter: str
    """The adapter's identity: ``--agentbench-adapter`` and its description."""


class CaseResult(Record):
    """A graded case. JSON-safe: it travels inside the pytest report."""

    suite_id: str
    case_id: str
    outcome: CaseOutcome
    checks: tuple[Check, ...] = ()
    measurements: Mapping[str, int] = Field(default_factory=dict)
    """Integer counts that metric numerators and denominators sum over cases."""
    labels: tuple[str, ...] = ()
    failure_class: FailureClass | None = None
    failure_reason: str | None = None
    failure_traceback: str | None = None
    """The adapter's traceback of an agent error (:attr:`Outcome.failure_traceback`)."""
    findings: tuple[str, ...] = ()
    """Finding codes the evaluator raised (negative controls require some of them)."""
    receipt: dict[str, JsonValue] | None = None
    """The outcome's tool-session receipt, carried into the JSON run report."""
    trial: int | None = None
    """1-based trial index under ``--agentbench-repeat``; ``None`` in a run of one trial."""
    cluster: str | None = None
    """The case's cluster key (``Case.cluster``); ``None``: the case is its own unit."""
    recorded: RecordedOutput | None = None
    """The adapter's outcome, kept under ``--agentbench-record`` / ``--agentbench-report``
    so the run can be re-scored without the agent."""
    exclusion: str | None = None
    """Why an ``excluded`` case was not graded: a stable code."""
    model_calls: dict[str, JsonValue] | None = None
    """The case's model traffic (``agents.provenance_records.CaseModelCalls`` as JSON): calls,
    attempts, tokens, cost, request digests and the call index of each decision."""
    artifact: dict[str, JsonValue] | None = None
    """Under ``--agentbench-artifacts``: the case's episode artefact, ``{file, digest_sha256}``
    (``file`` relative to the artefacts folder)."""
    model: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The matrix model that answered (``--agentbench-model`` repeated); ``None`` outside a
    matrix, and then left out of the result's JSON, so a run of one model reads as before.
    (``exclude_if`` rather than a wrapping serializer: that doubled the cost of a dump.)"""

    @property
    def unit(self) -> str:
        """The statistical unit: the cluster, else the case."""
        return self.case_id if self.cluster is None else self.cluster

    @property
    def failed_checks(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if not check.met)


def grade(
    case: Case,
    checks: Iterable[Check],
    *,
    measurements: Mapping[str, int] | None = None,
    findings: Sequence[str] = (),
    outcome: Outcome | None = None,
) -> CaseResult:
    """Build a CaseResult whose outcome follows from its checks and failure class."""
    given = tuple(checks)
    fields: dict[str, Any] = {
        "suite_id": case.suite_id,
        "case_id": case.case_id,
        "checks": given,
        "labels": case.labels,
    }
    if measurements:
        # Validation makes the record's own dict of it: no copy needed here.
        fields["measurements"] = measurements
    failure_class = None if outcome is None else outcome.failure_class
    if failure_class is FailureClass.HARNESS_ERROR:
        verdict = CaseOutcome.ERROR
    elif failure_class is not None:
        verdict = CaseOutcome.FAILED
    else:
        verdict = CaseOutcome.PASSED
        passed = CheckStatus.PASS
        for check in given:
            # A passed check is met: its two properties are asked only of the others.
            if check.status is not passed and not check.met:
                verdict = CaseOutcome.FAILED
                break
    fields["outcome"] = verdict
    # A field whose value would be its default is left to it: a graded case has
    # most of them, and each one given is one more for the validator to check.
    if outcome is not None:
        if failure_class is not None:
            fields["failure_class"] = failure_class
        if outcome.failure_reason is not None:
            fields["failure_reason"] = outcome.failure_reason
        if outcome.failure_traceback is not None:
            fields["failure_traceback"] = outcome.failure_traceback
        if outcome.receipt is not None:
            fields["receipt"] = outcome.receipt
    if findings:
        fields["findings"] = tuple(sorted(set(findings)))
    if case.cluster is not None:
        fields["cluster"] = case.cluster
    # The model's validator given the dict, as ``model_validate`` does, rather than
    # ``CaseResult(**fields)``: the same validation without unpacking the fields into
    # keywords and packing them again, nor ``model_validate``'s keyword defaults.
    result: CaseResult = CaseResult.__pydantic_validator__.validate_python(fields)
    return result


def excluded(case: Case, outcome: Outcome) -> CaseResult:
    """A case stopped by ``outcome.exclusion``: counted and named, never graded."""
    return CaseResult(
        suite_id=case.suite_id,
        case_id=case.case_id,
        outcome=CaseOutcome.EXCLUDED,
        labels=case.labels,
        failure_reason=outcome.failure_reason,
        receipt=outcome.receipt,
        cluster=case.cluster,
        exclusion=outcome.exclusion,
    )


def harness_error(
    suite_id: str, case_id: str, reason: str, labels: tuple[str, ...] = ()
) -> CaseResult:
    """An attempted case the harness could not grade: counted, never scored."""
    return CaseResult(
        suite_id=suite_id,
        case_id=case_id,
        outcome=CaseOutcome.ERROR,
        labels=labels,
        failure_class=FailureClass.HARNESS_ERROR,
        failure_reason=reason,
    )


Direction = Literal["higher_is_better", "lower_is_better"]


class MetricValue(Record):
    """One aggregated metric. ``value`` is ``None`` when it cannot be computed."""

    name: str
    family: str
    direction: Direction
    value: float | None
    support: int
    support_meaning: str
    numerator: int | None = None
    denominator: int | None = None
    interval: tuple[float, float] | None = None
    """95% Wilson score interval for rates; ``None`` where not a rate or not computable."""


Reducer = Callable[[Sequence[CaseResult], Mapping[str, MetricValue]], tuple[float | None, int]]
"""A world-provided reduction: (cases, metrics computed so far) -> (value, support)."""


class MetricSpec(Record):
    """How case results aggregate into one metric.

    A rate names an integer ``numerator`` and ``denominator`` measurement key,
    summed over the graded cases; its value is ``None`` when the denominator is
    zero, never 0.0. Anything else supplies a ``reducer``, which runs after every
    rate so it may derive from them (F1 from precision and recall).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    name: str
    family: str
    direction: Direction = "higher_is_better"
    support_meaning: str
    description: str = ""
    numerator: str | None = None
    denominator: str | None = None
    reducer: Reducer | None = Field(default=None, exclude=True)


class ControlAgent(Record):
    """A built-in deterministic agent a world offers as a reference or negative control."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    agent_id: str
    role: Literal["reference", "negative"]
    description: str = ""
    factory: Callable[[], Any] = Field(exclude=True)
