"""Suite metrics as JUnit global properties, written by the controller (xdist-safe)."""

from __future__ import annotations

import pytest
from _pytest.junitxml import xml_key

from pytest_agentbench.report.summary import RunSummary


def global_properties(summary: RunSummary) -> list[tuple[str, str]]:
    properties: list[tuple[str, str]] = []
    for suite in summary.suites:
        prefix = f"agentbench.{suite.id}"
        for metric in suite.metrics:
            value = "null" if metric.value is None else repr(metric.value)
            properties.append((f"{prefix}.{metric.name}", value))
        for gate in suite.gates:
            properties.append(
                (
                    f"{prefix}.gate.{gate.gate.metric}{gate.gate.op}{gate.gate.threshold:g}",
                    "pass" if gate.passed else f"fail: {gate.reason}",
                )
            )
        for control in suite.controls:
            properties.append(
                (f"{prefix}.control.{control.control_id}", "pass" if control.passed else "fail")
            )
    ran = {suite.id for suite in summary.suites}
    for gate in summary.gates:
        if gate.gate.suite not in ran:
            properties.append(
                (
                    f"agentbench.{gate.gate.suite}.gate.{gate.gate.metric}"
                    f"{gate.gate.op}{gate.gate.threshold:g}",
                    f"fail: {gate.reason}",
                )
            )
    return properties


def add_global_properties(config: pytest.Config, summary: RunSummary) -> None:
    add_properties(config, global_properties(summary))


def add_properties(config: pytest.Config, properties: list[tuple[str, str]]) -> None:
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    for name, value in properties:
        xml.add_global_property(name, value)
