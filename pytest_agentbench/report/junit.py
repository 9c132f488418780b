"""JUnit XML: suite metrics as global properties, harness errors as ``<error>`` (controller)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest
from _pytest.junitxml import LogXML, xml_key

from pytest_agentbench.report.recorder import HARNESS_ERROR

if TYPE_CHECKING:
    from pytest_agentbench.report.summary import RunSummary
    from pytest_agentbench.sdk.contracts import CaseResult


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
    element, :meth:`relabel` renames it and moves the suite's
    ``failures``/``errors`` tallies with it. Nothing else changes: the report
    stays failed, so pytest's counts and exit status are as before.

    Not a plugin of its own: the relay, which sees every report first, hands it
    the call report at the node's next report (its teardown), when junitxml has
    written the call and not yet closed the test case. A hook of its own would
    be three more hook calls per case for the rare case that fails so.
    """

    def __init__(self, xml: LogXML) -> None:
        self.xml = xml

    def relabel(self, report: pytest.TestReport) -> None:
        if report.when != "call" or not report.failed or not getattr(report, HARNESS_ERROR, False):
            return
        reporter = self.xml.node_reporter(report)
        for element in reversed(reporter.nodes):
            if element.tag == "failure":
                element.tag = "error"
                self.xml.stats["failure"] -= 1
                self.xml.stats["error"] += 1
                return


def relabel_harness_errors(config: pytest.Config) -> HarnessErrorsAsErrors | None:
    """The relabelling of harness errors where JUnit XML is written (the controller)."""
    xml = config.stash.get(xml_key, None)
    if xml is None or hasattr(config, "workerinput"):
        return None
    return HarnessErrorsAsErrors(xml)


def add_carried_cases(
    config: pytest.Config, carried: Sequence[tuple[str, CaseResult]], source: Path | None
) -> None:
    """Write the cases a resumed run took from the earlier run as JUnit test cases.

    They were deselected, so junitxml never saw them: without them the file of a
    resumed run whose taken cases failed counted no failure. Each is marked with
    the report it came from (property ``agentbench.resumed_from``).
    """
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    origin = [("agentbench.resumed_from", str(source))] if source is not None else []
    as_errors = HarnessErrorsAsErrors(xml)
    for nodeid, result in carried:
        path = nodeid.partition("::")[0]
        outcome = result.outcome.value
        reason = result.failure_reason or outcome
        longrepr: Any = None
        shown: Literal["passed", "failed", "skipped"] = "passed"
        if outcome in ("skipped", "excluded"):
            shown, longrepr = "skipped", (path, None, reason)
        elif outcome in ("failed", "error"):
            shown = "failed"
            longrepr = f"{result.failure_class or outcome}: {reason} (taken from {source})"
        call = pytest.TestReport(
            nodeid=nodeid,
            location=(path, None, nodeid.rpartition("::")[2]),
            keywords={},
            outcome=shown,
            longrepr=longrepr,
            when="call",
        )
        if outcome == "error":
            setattr(call, HARNESS_ERROR, True)
        xml.pytest_runtest_logreport(call)
        as_errors.relabel(call)
        teardown = pytest.TestReport(
            nodeid=nodeid,
            location=call.location,
            keywords={},
            outcome="passed",
            longrepr=None,
            when="teardown",
            # junitxml writes the properties the teardown report carries.
            user_properties=origin,
        )
        xml.pytest_runtest_logreport(teardown)
