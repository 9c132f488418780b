"""Under xdist the controller loads each suite while its cases run, not after the last one.

The ``controller`` of the event log is the process that is not a worker: the
only one without xdist.
"""

from __future__ import annotations

import pytest

from tests.demo_world import REGISTERING_CONFTEST, write_demo_suite

# Logs, per process role, when the demo world loads a suite and when the session
# starts finishing (around every plugin's hook, so before the summary).
EVENT_LOG = """
import os

import pytest

import demo_world

_load_suite = demo_world.DemoWorld.load_suite
ROLE = ["?"]


def pytest_configure(config):
    ROLE[0] = getattr(config, "workerinput", {}).get("workerid", "controller")


def _log(event):
    with open("events.log", "a") as handle:
        handle.write(f"{ROLE[0]} {event}\\n")


def _logged_load(self, suite):
    _log("load " + suite.id)
    return _load_suite(self, suite)


demo_world.DemoWorld.load_suite = _logged_load


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session):
    _log("sessionfinish")
    return (yield)
"""


def _controller_events(project: pytest.Pytester) -> list[str]:
    lines = (project.path / "events.log").read_text(encoding="utf-8").splitlines()
    return [line.split(" ", 1)[1] for line in lines if line.startswith("controller ")]


def test_each_suite_is_loaded_once_before_the_session_finishes(
    demo: pytest.Pytester, xdist_args: list[str]
) -> None:
    # Without xdist the one process loads while collecting; under it, the controller
    # loads as the suite's first case reports.
    write_demo_suite(demo.path, "first")
    write_demo_suite(demo.path, "second")
    demo.makeconftest(REGISTERING_CONFTEST + EVENT_LOG)

    result = demo.runpytest("-m", "not agentbench_control", "suites", *xdist_args)

    result.assert_outcomes(passed=6)
    events = _controller_events(demo)
    assert events[-1] == "sessionfinish"
    assert sorted(events[:-1]) == ["load first", "load second"]
    result.stdout.fnmatch_lines(
        ["*agentbench: first (demo)*", "cases: 3 passed*", "*agentbench: second (demo)*"]
    )


def test_a_suite_the_controller_cannot_load_is_still_reported(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path, "workers-only")
    demo.makeconftest(
        REGISTERING_CONFTEST
        + EVENT_LOG
        + """
from pytest_agentbench.sdk.errors import AgentbenchError


def _refused_on_the_controller(self, suite):
    if ROLE[0] == "controller":
        raise AgentbenchError("digest_mismatch", "changed since collection", file="manifest.json")
    return _logged_load(self, suite)


demo_world.DemoWorld.load_suite = _refused_on_the_controller
"""
    )

    result = demo.runpytest("-n", "2", "-m", "not agentbench_control", "suites")

    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*[[]digest_mismatch[]] manifest.json: changed since collection*"])
