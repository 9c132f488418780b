from __future__ import annotations

import pytest

from pytest_agentbench.scoring.gates import Gate, judge, parse_gate
from pytest_agentbench.sdk.contracts import MetricValue
from pytest_agentbench.sdk.errors import AgentbenchError


def metric(name: str, value: float | None) -> MetricValue:
    return MetricValue(
        name=name,
        family="answers",
        direction="higher_is_better",
        value=value,
        support=0 if value is None else 10,
        support_meaning="scored cases",
    )


# --- parsing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "suite", "metric_name", "op", "threshold"),
    [
        ("demo-suite:accuracy>=0.9", "demo-suite", "accuracy", ">=", 0.9),
        ("demo-suite:zero_rate<=0.05", "demo-suite", "zero_rate", "<=", 0.05),
        ("demo-suite:accuracy==1", "demo-suite", "accuracy", "==", 1.0),
        ("  demo-suite : accuracy  >=  0.75  ", "demo-suite", "accuracy", ">=", 0.75),
        ("s1.v2_x:family.metric_2>=1e-3", "s1.v2_x", "family.metric_2", ">=", 0.001),
        ("s:delta>=-0.5", "s", "delta", ">=", -0.5),
        ("s:delta<=+2.5E+1", "s", "delta", "<=", 25.0),
    ],
)
def test_parse_gate_accepts_every_form(
    text: str, suite: str, metric_name: str, op: str, threshold: float
) -> None:
    gate = parse_gate(text, suite=None, source="--agentbench-gate")
    assert (gate.suite, gate.metric, gate.op, gate.threshold) == (suite, metric_name, op, threshold)
    assert gate.source == "--agentbench-gate"


def test_parse_gate_takes_the_suite_from_the_declaring_suite() -> None:
    gate = parse_gate("accuracy >= 0.9", suite="demo-suite", source="suite.yaml")
    assert gate.suite == "demo-suite"
    assert gate.text == "demo-suite:accuracy>=0.9"


def test_parse_gate_accepts_the_declaring_suite_named_explicitly() -> None:
    gate = parse_gate("demo-suite:accuracy>=0.9", suite="demo-suite", source="suite.yaml")
    assert gate.suite == "demo-suite"


@pytest.mark.parametrize(
    "text",
    [
        "s:accuracy>0.9",
        "s:accuracy<0.9",
        "s:accuracy!=0.9",
        "s:accuracy=>0.9",
        "s:accuracy=0.9",
        "s:accuracy>=",
        "s:>=0.9",
        "s:accuracy>=.9",
        "s:accuracy>=0.9.1",
        "s:accuracy>=nan",
        "s:accuracy>=0.9 extra",
        "Suite:accuracy>=0.9",
        "s:1accuracy>=0.9",
        "",
    ],
)
def test_parse_gate_refuses_malformed_text(text: str) -> None:
    with pytest.raises(AgentbenchError) as caught:
        parse_gate(text, suite=None, source="--agentbench-gate")
    assert caught.value.code == "invalid_gate"
    assert caught.value.location.field == "--agentbench-gate"
    assert repr(text) in caught.value.reason


def test_parse_gate_refuses_a_gate_naming_no_suite_from_the_command_line() -> None:
    with pytest.raises(AgentbenchError) as caught:
        parse_gate("accuracy>=0.9", suite=None, source="--agentbench-gate")
    assert caught.value.code == "invalid_gate"
    assert "names no suite" in caught.value.reason


def test_parse_gate_refuses_a_suite_gate_naming_another_suite() -> None:
    with pytest.raises(AgentbenchError) as caught:
        parse_gate("other:accuracy>=0.9", suite="demo-suite", source="suite.yaml: gates[0]")
    assert caught.value.code == "invalid_gate"
    assert "'other'" in caught.value.reason
    assert "'demo-suite'" in caught.value.reason
    assert caught.value.location.field == "suite.yaml: gates[0]"


# --- judging ---------------------------------------------------------------------


def gate(op: str, threshold: float, name: str = "accuracy") -> Gate:
    return parse_gate(f"s:{name}{op}{threshold}", suite=None, source="test")


@pytest.mark.parametrize(
    ("op", "threshold", "value", "passed"),
    [
        (">=", 0.9, 0.9, True),
        (">=", 0.9, 0.95, True),
        (">=", 0.9, 0.8999, False),
        ("<=", 0.1, 0.1, True),
        ("<=", 0.1, 0.2, False),
        ("==", 0.5, 0.5, True),
        ("==", 0.5, 0.5 + 1e-12, True),
        ("==", 0.5, 0.5001, False),
    ],
)
def test_judge_compares_the_metric_value(
    op: str, threshold: float, value: float, passed: bool
) -> None:
    verdict = judge(gate(op, threshold), {"accuracy": metric("accuracy", value)})
    assert verdict.passed is passed
    assert verdict.value == value
    assert ("satisfies" if passed else "fails") in verdict.reason


def test_judge_reports_a_null_metric_as_not_computable_and_fails() -> None:
    verdict = judge(gate(">=", 0.0), {"accuracy": metric("accuracy", None)})
    assert verdict.passed is False
    assert verdict.value is None
    assert verdict.reason == "not computable (null)"


def test_judge_null_fails_even_an_upper_bound() -> None:
    assert judge(gate("<=", 1.0), {"accuracy": metric("accuracy", None)}).passed is False


def test_judge_reports_an_unknown_metric_with_the_known_ones() -> None:
    metrics = {"zero_rate": metric("zero_rate", 0.0), "accuracy": metric("accuracy", 1.0)}
    verdict = judge(gate(">=", 0.5, name="precision"), metrics)
    assert verdict.passed is False
    assert verdict.reason == "unknown metric (known: accuracy, zero_rate)"


def test_judge_fails_a_gate_on_a_suite_that_did_not_run() -> None:
    verdict = judge(gate(">=", 0.5), None)
    assert verdict.passed is False
    assert verdict.reason == "suite did not run"


@pytest.mark.parametrize("text", ["s:latency<=1e400", "s:accuracy>=-1e999"])
def test_parse_gate_refuses_a_threshold_that_overflows_to_infinity(text: str) -> None:
    # An infinite bound is a gate that can never fail (or never pass).
    with pytest.raises(AgentbenchError) as caught:
        parse_gate(text, suite=None, source="--agentbench-gate")
    assert caught.value.code == "invalid_gate"
