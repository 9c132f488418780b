"""Release gates: ``metric >= value`` thresholds that can fail a session."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Literal, cast

from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, MetricValue, Record
from pytest_agentbench.sdk.errors import AgentbenchError

Comparison = Literal[">=", "<=", "=="]
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": lambda a, b: abs(a - b) <= 1e-9,
}
_GATE = re.compile(
    r"^\s*(?:(?P<suite>[a-z0-9][a-z0-9._-]*)\s*:\s*)?(?P<metric>[A-Za-z_][A-Za-z0-9_.]*)"
    r"\s*(?P<op>>=|<=|==)\s*(?P<value>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$"
)


class Gate(Record):
    model_config = BUILT_ON_FIRST_USE

    suite: str
    metric: str
    op: Comparison
    threshold: float
    source: str
    """Where it was declared: ``suite.yaml`` or ``--agentbench-gate``."""

    @property
    def text(self) -> str:
        return f"{self.suite}:{self.metric}{self.op}{self.threshold:g}"


class GateVerdict(Record):
    model_config = BUILT_ON_FIRST_USE

    gate: Gate
    passed: bool
    value: float | None
    reason: str


def parse_gate(text: str, *, suite: str | None, source: str) -> Gate:
    """Parse ``[suite:]metric(>=|<=|==)value``; ``suite`` fills a missing prefix."""
    match = _GATE.match(text)
    if match is None:
        raise AgentbenchError(
            "invalid_gate",
            f"{text!r} is not 'suite:metric>=value' (operators: >=, <=, ==)",
            field=source,
        )
    named_suite = match.group("suite") or suite
    if named_suite is None:
        raise AgentbenchError(
            "invalid_gate", f"{text!r} names no suite ('suite:metric>=value')", field=source
        )
    if suite is not None and named_suite != suite:
        raise AgentbenchError(
            "invalid_gate", f"{text!r} names suite {named_suite!r}, not {suite!r}", field=source
        )
    threshold = float(match.group("value"))
    if not math.isfinite(threshold):
        raise AgentbenchError(
            "invalid_gate", f"{text!r}: the threshold is not a finite number", field=source
        )
    return Gate(
        suite=named_suite,
        metric=match.group("metric"),
        op=cast(Comparison, match.group("op")),
        threshold=threshold,
        source=source,
    )


def judge(gate: Gate, metrics: Mapping[str, MetricValue] | None) -> GateVerdict:
    if metrics is None:
        return GateVerdict(gate=gate, passed=False, value=None, reason="suite did not run")
    metric = metrics.get(gate.metric)
    if metric is None:
        known = ", ".join(sorted(metrics))
        return GateVerdict(
            gate=gate, passed=False, value=None, reason=f"unknown metric (known: {known})"
        )
    if metric.value is None:
        return GateVerdict(gate=gate, passed=False, value=None, reason="not computable (null)")
    passed = _COMPARE[gate.op](metric.value, gate.threshold)
    relation = "satisfies" if passed else "fails"
    return GateVerdict(
        gate=gate,
        passed=passed,
        value=metric.value,
        reason=f"{metric.value:.4f} {relation} {gate.op} {gate.threshold:g}",
    )
