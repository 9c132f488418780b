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


# The controller refuses to load one suite its workers loaded (it changed in between).
REFUSED_ON_THE_CONTROLLER = """
from pytest_agentbench.sdk.errors import AgentbenchError


def _refused_on_the_controller(self, suite):
    if ROLE[0] == "controller" and suite.id == "workers-only":
        raise AgentbenchError("digest_mismatch", "changed since collection", file="manifest.json")
    return _logged_load(self, suite)


demo_world.DemoWorld.load_suite = _refused_on_the_controller
"""


def _controller_events(project: pytest.Pytester) -> list[str]:
    lines = (project.path / "events.log").read_text(encoding="utf-8").splitlines()
    return [line.split(" ", 1)[1] for line in lines if line.startswith("controller ")]


def _assert_loaded_once_before_finishing(
    project: pytest.Pytester, result: pytest.RunResult
) -> None:
    events = _controller_events(project)
    assert events[-1] == "sessionfinish"
    assert sorted(events[:-1]) == ["load first", "load second"]
    result.stdout.fnmatch_lines(
        ["*agentbench: first (demo)*", "cases: 3 passed*", "*agentbench: second (demo)*"]
    )


def test_each_suite_is_loaded_once_before_the_session_finishes_serially(
    demo: pytest.Pytester,
) -> None:
    # Without xdist the one process loads while collecting (``-n 0`` takes the same path).
    write_demo_suite(demo.path, "first")
    write_demo_suite(demo.path, "second")
    demo.makeconftest(REGISTERING_CONFTEST + EVENT_LOG)

    result = demo.runpytest("-m", "not agentbench_control", "suites")

    result.assert_outcomes(passed=6)
    _assert_loaded_once_before_finishing(demo, result)


def test_under_xdist_each_suite_is_loaded_once_and_one_the_controller_cannot_load_is_reported(
    demo: pytest.Pytester,
) -> None:
    # Under xdist the controller loads as a suite's first case reports, once although both
    # workers report its cases; a suite it cannot load (beside the others, in one session)
    # is still reported.
    write_demo_suite(demo.path, "first")
    write_demo_suite(demo.path, "second")
    write_demo_suite(demo.path, "workers-only")
    demo.makeconftest(REGISTERING_CONFTEST + EVENT_LOG + REFUSED_ON_THE_CONTROLLER)

    result = demo.runpytest("-n", "2", "-m", "not agentbench_control", "suites")

    result.assert_outcomes(passed=9)
    _assert_loaded_once_before_finishing(demo, result)
    result.stdout.fnmatch_lines(["*[[]digest_mismatch[]] manifest.json: changed since collection*"])
