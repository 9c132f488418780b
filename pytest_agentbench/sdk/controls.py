"""Negative-control manifests and their verdicts.

A manifest (``controls.yaml`` in a suite's oracle folder) is authored by hand,
separately from the agents it constrains: this module imports no agent and no
evaluator, and nothing writes the manifest. Each control names a built-in agent
and declares the exact set of dimensions that must fail, the finding codes that
make the failure the intended one, and the set that must still pass; the two
sets must cover every dimension exactly once, so an extra failure has nowhere
to hide.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import Field, FiniteFloat, ValidationError, model_validator

from pytest_agentbench.sdk.canonical import read_yaml
from pytest_agentbench.sdk.contracts import (
    BUILT_ON_FIRST_USE,
    CaseOutcome,
    CaseResult,
    MetricValue,
    Record,
)
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.layout import CONTROLS_FILE
from pytest_agentbench.sdk.suite import pydantic_refusal


class ControlSpec(Record):
    model_config = BUILT_ON_FIRST_USE

    id: str
    agent: str
    """The built-in agent id the world offers (``ControlAgent.agent_id``)."""
    cases: tuple[str, ...] | None = None
    """Case ids the control runs on; ``None`` means every case of the suite."""
    scenario: str | None = None
    intervention: str
    guarantee: str
    """The guarantee the intervention attacks."""
    must_fail: tuple[str, ...]
    required_findings: tuple[str, ...] = ()
    must_pass: tuple[str, ...]
    expected_metrics: dict[str, FiniteFloat | None] = Field(default_factory=dict)
    tolerance: FiniteFloat = Field(default=5e-5, ge=0)
    expected_fault: str | None = None
    """The declared fault the run must produce (an authored fault of the case): every
    failing check must be that fault, named by its id."""
    refused: str | None = None
    """The control's own input was refused (its code, file, field and reason): the control
    fails naming it and runs nothing; the suite's cases and other controls still run."""

    @model_validator(mode="after")
    def _disjoint(self) -> ControlSpec:
        overlap = sorted(set(self.must_fail) & set(self.must_pass))
        if overlap:
            raise ValueError(f"dimensions both failing and passing: {', '.join(overlap)}")
        return self


class ControlManifest(Record):
    schema_version: int
    suite: str
    provenance: str = ""
    controls: tuple[ControlSpec, ...]

    @model_validator(mode="after")
    def _unique_ids(self) -> ControlManifest:
        ids = [control.id for control in self.controls]
        duplicates = sorted({cid for cid in ids if ids.count(cid) > 1})
        if duplicates:
            raise ValueError(f"duplicate control ids: {', '.join(duplicates)}")
        return self


def load_manifest(
    path: Path, display: str, *, suite_id: str, dimensions: Sequence[str]
) -> ControlManifest:
    """Read and check a manifest against the world's dimension list."""
    raw = read_yaml(path, display=display)
    try:
        manifest = ControlManifest.model_validate(raw)
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=display) from None
    if manifest.suite != suite_id:
        raise AgentbenchError(
            "control_suite_mismatch",
            f"manifest is for suite {manifest.suite!r}, not {suite_id!r}",
            file=display,
            field="suite",
        )
    known = set(dimensions)
    for index, control in enumerate(manifest.controls):
        declared = set(control.must_fail) | set(control.must_pass)
        unknown = sorted(declared - known)
        uncovered = [dim for dim in dimensions if dim not in declared]
        if unknown or uncovered:
            problems = []
            if unknown:
                problems.append(f"unknown dimensions {', '.join(unknown)}")
            if uncovered:
                problems.append(f"dimensions in neither set: {', '.join(uncovered)}")
            raise AgentbenchError(
                "control_coverage",
                f"control {control.id!r}: " + "; ".join(problems),
                file=display,
                field=f"controls[{index}]",
            )
    return manifest


class ControlVerdict(Record):
    control_id: str
    agent: str
    passed: bool
    failing_dimensions: tuple[str, ...]
    unexpected_failures: tuple[str, ...] = ()
    """Dimensions declared as must-pass that failed."""
    unexpected_passes: tuple[str, ...] = ()
    """Dimensions declared as must-fail that passed."""
    missing_findings: tuple[str, ...] = ()
    metric_mismatches: tuple[str, ...] = ()
    harness_errors: tuple[str, ...] = ()
    ungraded: bool = False
    """A built-in negative agent no manifest entry constrains."""
    expected_fault: str | None = None
    """The declared fault the control required, by id (reported whether or not it held)."""
    fault_mismatches: tuple[str, ...] = ()
    """Failing checks that are not the declared fault (the world did not name it on them)."""
    refused: str | None = None
    """The control's input was refused, by name; nothing ran."""

    def summary(self) -> str:
        if self.refused is not None:
            return f"control {self.control_id!r}: its input was refused: {self.refused}"
        if self.ungraded:
            return (
                f"ungraded: negative agent {self.agent!r} has no control declared in "
                f"{CONTROLS_FILE}"
            )
        if self.passed and not self.failing_dimensions:
            return f"control {self.control_id!r} passed every dimension, as declared"
        if self.passed and self.expected_fault is not None:
            failing = ", ".join(self.failing_dimensions)
            return (
                f"control {self.control_id!r} failed exactly as its declared fault "
                f"{self.expected_fault} ({failing})"
            )
        if self.passed:
            failing = ", ".join(self.failing_dimensions)
            return f"control {self.control_id!r} failed exactly as declared ({failing})"
        reasons = []
        if self.harness_errors:
            reasons.append(f"harness errors on {', '.join(self.harness_errors)}")
        if self.unexpected_failures:
            reasons.append(f"must-pass dimensions failed: {', '.join(self.unexpected_failures)}")
        if self.unexpected_passes:
            reasons.append(f"must-fail dimensions passed: {', '.join(self.unexpected_passes)}")
        if self.fault_mismatches:
            reasons.append(
                f"not the declared fault {self.expected_fault}: {', '.join(self.fault_mismatches)}"
            )
        if self.missing_findings:
            reasons.append(f"required findings absent: {', '.join(self.missing_findings)}")
        if self.metric_mismatches:
            reasons.append("metrics off: " + "; ".join(self.metric_mismatches))
        return f"control {self.control_id!r} did not fail as declared: " + " | ".join(reasons)


def judge_control(
    control: ControlSpec, results: Sequence[CaseResult], metrics: Mapping[str, MetricValue]
) -> ControlVerdict:
    failing = sorted(
        {check.name for result in results for check in result.checks if not check.passed}
    )
    findings = {code for result in results for code in result.findings}
    mismatches = []
    for name, expected in sorted(control.expected_metrics.items()):
        metric = metrics.get(name)
        actual = None if metric is None else metric.value
        if metric is None:
            mismatches.append(f"{name}: not reported")
        elif expected is None or actual is None:
            if expected != actual:
                mismatches.append(f"{name}: expected {expected}, got {actual}")
        elif abs(actual - expected) > control.tolerance:
            mismatches.append(f"{name}: expected {expected:.4f}, got {actual:.4f}")
    verdict = ControlVerdict(
        control_id=control.id,
        agent=control.agent,
        passed=False,
        failing_dimensions=tuple(failing),
        unexpected_failures=tuple(dim for dim in failing if dim in control.must_pass),
        unexpected_passes=tuple(dim for dim in control.must_fail if dim not in failing),
        missing_findings=tuple(code for code in control.required_findings if code not in findings),
        metric_mismatches=tuple(mismatches),
        harness_errors=tuple(r.case_id for r in results if r.outcome is CaseOutcome.ERROR),
        expected_fault=control.expected_fault,
        fault_mismatches=_fault_mismatches(control, results),
    )
    ok = not (
        verdict.fault_mismatches
        or verdict.unexpected_failures
        or verdict.unexpected_passes
        or verdict.missing_findings
        or verdict.metric_mismatches
        or verdict.harness_errors
    )
    return verdict.model_copy(update={"passed": ok})


def _fault_mismatches(control: ControlSpec, results: Sequence[CaseResult]) -> tuple[str, ...]:
    if control.expected_fault is None:
        return ()
    return tuple(
        sorted(
            {
                check.name
                for result in results
                for check in result.checks
                if not check.passed and check.expected_fault != control.expected_fault
            }
        )
    )


def refused_verdict(control: ControlSpec) -> ControlVerdict:
    """A control whose own input was refused: it fails, naming the refusal, and runs nothing."""
    return ControlVerdict(
        control_id=control.id,
        agent=control.agent,
        passed=False,
        failing_dimensions=(),
        refused=control.refused,
    )
