"""``--agentbench-isolate`` in pytest sessions: which adapters run isolated, and refusals.

A user's test asking for the adapter on an xdist worker of an isolated run is one of
``tests/test_isolation_modes.py``'s isolated xdist session's items.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from pytest_agentbench.isolation.host import namespace_available
from tests.demo_world import REGISTERING_CONFTEST, write_demo_suite

AGENTS = """
import os
from pathlib import Path

LOG = Path(__file__).resolve().parent / "pids.txt"


class Recording:
    def answer(self, question):
        with LOG.open("a") as handle:
            handle.write(f"{os.getpid()}\\n")
        left, right = question.split("+")
        return int(left) + int(right)


class Printing(Recording):
    def answer(self, question):
        print("PRINTED-BY-THE-ADAPTER")
        return super().answer(question)


class Holding(Recording):
    def __init__(self):
        self.callback = lambda: None
"""


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    write_demo_suite(demo.path)
    demo.makepyfile(agents=AGENTS)
    return demo


def _pids(pytester: pytest.Pytester) -> set[int]:
    return {int(line) for line in (pytester.path / "pids.txt").read_text().split()}


def _suite_report(pytester: pytest.Pytester) -> dict[str, Any]:
    report = json.loads((pytester.path / "run.json").read_text())
    (suite,) = report["suites"]
    suite_report: dict[str, Any] = suite
    return suite_report


@pytest.mark.usefixtures("process_isolation_only")
def test_the_configured_adapter_runs_in_another_process_its_output_on_stderr(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As most users run it: the adapter's prints buffered, which the adapter process must
    # write out before it ends (once, it left them in a buffer it never flushed).
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    # A session of its own (its real stderr is what is read), whose conftest notes
    # pytest's process. Under xdist too: tests/test_fault_matrix_isolated.py runs without
    # xdist and on an xdist worker.
    project.makeconftest(
        REGISTERING_CONFTEST + "import os\n"
        "from pathlib import Path\n\n"
        "Path(__file__).with_name('pytest-pid.txt').write_text(str(os.getpid()))\n"
    )
    result = project.runpytest_subprocess(
        "--agentbench-adapter=agents:Printing",
        "--agentbench-isolate",
        f"--agentbench-report={project.path / 'run.json'}",
        "-m",
        "not agentbench_control",
        "-p",
        "no:cacheprovider",
        timeout=120,
    )
    result.assert_outcomes(passed=3)
    # One adapter process answered every case, and it is not pytest's.
    (pid,) = _pids(project)
    assert pid != int((project.path / "pytest-pid.txt").read_text())
    assert _suite_report(project)["answered_by"] == ["agents.Printing"]
    result.stdout.fnmatch_lines(
        ["agentbench: adapter agents:Printing (agents.Printing), in an isolated process;*"]
    )
    # What it prints goes to pytest's stderr, never into the terminal report.
    assert "PRINTED-BY-THE-ADAPTER" not in result.stdout.str()
    assert result.stderr.str().count("PRINTED-BY-THE-ADAPTER") == 3


def test_ini_setting_and_reference_agents(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nagentbench_isolate = true\n")
    result = project.runpytest("-m", "not agentbench_control")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["agentbench: adapter built-in reference agents, in an isolated process;*"]
    )


@pytest.mark.usefixtures("process_isolation_only")
def test_a_conftest_adapter_that_pickles_runs_isolated(project: pytest.Pytester) -> None:
    project.makeconftest(
        REGISTERING_CONFTEST + "import pytest\n"
        "from agents import Recording\n\n"
        "@pytest.fixture(scope='session')\n"
        "def agentbench_adapter():\n"
        "    return Recording()\n"
    )
    result = project.runpytest("--agentbench-isolate", "-m", "not agentbench_control")
    result.assert_outcomes(passed=3)
    assert os.getpid() not in _pids(project)


def test_a_conftest_adapter_that_cannot_be_pickled_is_refused(project: pytest.Pytester) -> None:
    project.makeconftest(
        REGISTERING_CONFTEST + "import pytest\n"
        "from agents import Holding\n\n"
        "@pytest.fixture(scope='session')\n"
        "def agentbench_adapter():\n"
        "    return Holding()\n"
    )
    result = project.runpytest("--agentbench-isolate", "-m", "not agentbench_control")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*[[]isolation_unpicklable_adapter[]] agentbench_adapter: adapter agents.Holding "
            "cannot be sent to its isolated process*"
        ]
    )
    assert not (project.path / "pids.txt").exists()


def test_a_bad_spec_is_a_usage_error_when_isolated(project: pytest.Pytester) -> None:
    result = project.runpytest("--agentbench-adapter=agents:Missing", "--agentbench-isolate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*[[]adapter_attribute[]] --agentbench-adapter: module 'agents' has no attribute*"]
    )


@pytest.mark.usefixtures("process_isolation_only")
def test_the_namespace_mode_runs_the_adapter_in_a_user_namespace_of_its_own(
    project: pytest.Pytester,
) -> None:
    unavailable = namespace_available()
    if unavailable is not None:
        pytest.skip(unavailable)
    project.makepyfile(
        namespaced="import os\n"
        "from pathlib import Path\n\n"
        "class Namespaced:\n"
        "    def answer(self, question):\n"
        "        Path(__file__).resolve().with_name('ns.txt').write_text(\n"
        "            os.readlink('/proc/self/ns/user'))\n"
        "        left, right = question.split('+')\n"
        "        return int(left) + int(right)\n"
    )
    project.makeini("[pytest]\nagentbench_isolate_namespace = true\n")
    result = project.runpytest(
        "--agentbench-adapter=namespaced:Namespaced",
        "--agentbench-isolate",
        "-m",
        "not agentbench_control",
    )
    result.assert_outcomes(passed=3)
    assert (project.path / "ns.txt").read_text() != os.readlink("/proc/self/ns/user")


def test_an_invalid_start_up_allowance_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nagentbench_isolate_startup_timeout = soon\n")
    result = project.runpytest("--agentbench-isolate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]invalid_timeout[]] agentbench_isolate_startup_timeout:*"])
