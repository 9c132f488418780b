"""JUnit XML: suite metrics as global properties, harness errors as ``<error>`` (controller)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from _pytest.junitxml import LogXML, xml_key

from pytest_agentbench.report.recorder import HARNESS_ERROR

if TYPE_CHECKING:
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


class HarnessErrorsAsErrors:
    """Writes a harness-error case as a JUnit ``<error>``, not a ``<failure>``.

    pytest's junitxml decides by the report's phase alone: whatever fails in
    the call is a ``<failure>``. A harness error (our machinery, not the agent)
    is the run report's ``error``, so once junitxml has written the call's
    element (this hook runs after it), the element is renamed and the suite's
    ``failures``/``errors`` tallies moved with it. Nothing else changes: the
    report stays failed, so pytest's counts and exit status are as before.
    """

    def __init__(self, xml: LogXML) -> None:
        self.xml = xml

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" or not report.failed or not getattr(report, HARNESS_ERROR, False):
            return
        reporter = self.xml.node_reporter(report)
        for element in reversed(reporter.nodes):
            if element.tag == "failure":
                element.tag = "error"
                self.xml.stats["failure"] -= 1
                self.xml.stats["error"] += 1
                return


def relabel_harness_errors(config: pytest.Config) -> None:
    """Register :class:`HarnessErrorsAsErrors` where JUnit XML is written (the controller)."""
    xml = config.stash.get(xml_key, None)
    if xml is not None and not hasattr(config, "workerinput"):
        config.pluginmanager.register(HarnessErrorsAsErrors(xml), "agentbench-junit-errors")
