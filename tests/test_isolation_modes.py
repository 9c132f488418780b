"""What an adapter sees and leaves behind, the same in every mode: in-process, isolated,
isolated on an xdist worker and isolated in a pool.

One project holds a suite per scenario and one adapter answers them all (the chat agent,
with an ``answer`` method for the worlds that ask for one). A recording session makes
the chat suite's cassettes; then each mode (isolated also with a pool of two processes,
``--agentbench-concurrency``) runs one session over every scenario that applies to it,
asserted scenario by scenario: cassette replay stays offline (the chat agent's settings
reach an isolated adapter, its model calls are counted in the run's totals), a view an
adapter tampers with is its case's own copy, and what an isolated adapter starts ends
with its case; and on an xdist worker a user's test asking for the adapter gets it,
loaded in its process. Under xdist one worker (``-n 1``) shows all of it: each worker has an
isolated process of its own, which answers as a serial session's does, and the
controller's sum over several workers' model totals is the same with an in-process
adapter (below). An isolated adapter's restart is not charged to the next case:
``tests/test_isolation_pool.py``, whose adapter loads slower than a case may run,
serially and in a pool.

The in-process chat agent replaying under ``-n 2`` is
``tests/test_plugin_concurrency.py``'s replayed run: its report, model totals included,
is the serial recording's, with nothing listening at the endpoint.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from tests.demo_world import write_demo_suite
from tests.llm_server import ScriptedLLM

MODES = {
    "in-process": [],
    "isolated": ["--agentbench-isolate"],
    "isolated-n1": ["--agentbench-isolate", "-n", "1"],
    "isolated-pool": ["--agentbench-isolate", "--agentbench-concurrency=2"],
}
ISOLATED_MODES = {name: args for name, args in MODES.items() if "--agentbench-isolate" in args}


def _suite_results(report: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Each suite's case results by case id, by suite id."""
    return {
        suite["id"]: {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}
        for suite in json.loads(report.read_text())["suites"]
    }


# -- the network guard ----------------------------------------------------------------

NETWORK_GUARD = """
import os
import socket

_connect = socket.socket.connect


def _refuse_non_loopback(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        if not (host.startswith("127.") or host == "::1"):
            with open(os.environ["NETWORK_GUARD_LOG"], "a") as log:
                log.write(f"{os.getpid()} {host}\\n")
            raise ConnectionRefusedError(f"network guard: {host} is not loopback")
    return _connect(self, address)


socket.socket.connect = _refuse_non_loopback
"""
"""A ``sitecustomize`` on PYTHONPATH: every process of a session (pytest, its xdist
workers, the isolated adapter's process) refuses, and logs, non-loopback connections."""

KEY_ENV = "AGENTBENCH_TEST_LLM_KEY"


def _guard_this_process(guard: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the guard does in every process a session starts, done in this one (its pytest)."""
    unguarded = socket.socket.connect
    spec = importlib.util.spec_from_file_location("network_guard", guard / "sitecustomize.py")
    assert spec is not None
    assert spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    guarded = socket.socket.connect
    socket.socket.connect = unguarded  # type: ignore[method-assign]
    monkeypatch.setattr(socket.socket, "connect", guarded)


# -- the scenarios' worlds and adapter -------------------------------------------------

SHELF_WORLD = """
from typing import Any, Protocol, runtime_checkable

from demo_world import TOOLS_WORLD, WORLD, DemoWorld
from pytest_agentbench.sdk.contracts import Outcome, Record
from pytest_agentbench.sdk.hookspecs import hookimpl
from pytest_agentbench.sdk.runner import MalformedOutput, call_adapter


class Catalog(Record):
    items: tuple[str, ...]


@runtime_checkable
class ShelfAdapter(Protocol):
    def answer(self, question: str, catalog: Catalog) -> Any: ...


class ShelfWorld(DemoWorld):
    kind = "demo-shelf"
    adapter_protocol = ShelfAdapter

    def public_view(self, suite, case):
        # Every case's own catalog, equal in every case (so its pickle is too).
        question = suite.data["questions"][case.case_id]
        return {"question": question, "catalog": Catalog(items=("a", "b"))}

    def run(self, suite, case, view, adapter):
        value = call_adapter(adapter.answer, view["question"], view["catalog"])
        if not isinstance(value, int):
            raise MalformedOutput(f"answer must be an integer, got {type(value).__name__}")
        return Outcome(output={"answer": value})


@hookimpl
def pytest_agentbench_world_kinds():
    return [WORLD, TOOLS_WORLD, ShelfWorld()]
"""

SCENARIOS = """
import os
import subprocess
import time
from pathlib import Path

from pytest_agentbench.agents.chat import ChatAgent

HERE = Path(__file__).resolve().parent


def _note(pid):
    with (HERE / "started.pid").open("a") as handle:
        handle.write(f"{pid}\\n")


def setsid_grandchild():
    _note(subprocess.Popen(["setsid", "sleep", "1000"]).pid)


def fork_back():
    # The copy returns into the adapter's process's serving loop.
    os.fork()


def fork_and_work():
    pid = os.fork()
    if pid == 0:
        while True:
            pass
    _note(pid)


def daemon():
    read, write = os.pipe()
    first = os.fork()
    if first == 0:
        os.setsid()
        second = os.fork()
        if second == 0:
            time.sleep(1000)
            os._exit(0)
        os.write(write, str(second).encode())
        os._exit(0)
    os.waitpid(first, 0)
    _note(int(os.read(read, 32)))


BEHAVIOUR = {1: setsid_grandchild, 2: fork_back, 3: fork_and_work, 4: daemon}


def tamper(question, catalog):
    if catalog.items != ("a", "b"):
        return -1  # what an earlier case did to its view
    object.__setattr__(catalog, "items", ())
    left, right = question.split("+")
    return int(left) + int(right)


class Scenarios(ChatAgent):
    # The chat agent answers the chat suite's tool sessions; ``answer`` the other suites.

    def pid(self):
        return os.getpid()

    def answer(self, question, catalog=None):
        if catalog is not None:
            return tamper(question, catalog)
        left, right = (int(part) for part in question.split("+"))
        if left in BEHAVIOUR:
            BEHAVIOUR[left]()
        return left + right
"""

USERS_TEST = """
import os


def test_a_users_test_gets_the_loaded_isolated_adapter(agentbench_adapter):
    # The first item on its worker: the adapter loaded in its own process, not a pending spec.
    assert agentbench_adapter.answer("0+5") == 5
    assert type(agentbench_adapter).__qualname__ == "Scenarios"
    assert agentbench_adapter.pid() != os.getpid()
"""
"""A user's test asking for the adapter on an xdist worker of an isolated run (run first
there: collected before the suites)."""

CHAT_SCENARIOS = ("tools", "malformed_args", "prose")
TAMPERED = {f"c{index:02d}": f"{index}+1" for index in range(6)}
SPAWNING = {f"c{index:02d}": f"{index}+0" for index in range(1, 9)}
"""Each spawning case is followed by plain ones, which must not pay for it."""
SCENARIO_ADAPTER = "--agentbench-adapter=scenarios:Scenarios"


@pytest.fixture
def project(demo: pytest.Pytester) -> pytest.Pytester:
    write_demo_suite(
        demo.path,
        "chat-suite",
        questions={q: q for q in CHAT_SCENARIOS},
        answers=dict.fromkeys(CHAT_SCENARIOS, 3),
        world="demo-tools",
    )
    write_demo_suite(demo.path, "shelf-suite", questions=TAMPERED, world="demo-shelf")
    write_demo_suite(demo.path, "spawn-suite", questions=SPAWNING)
    demo.makepyfile(shelf_world=SHELF_WORLD, scenarios=SCENARIOS, test_users=USERS_TEST)
    demo.makeconftest("from shelf_world import pytest_agentbench_world_kinds\n")
    return demo


def _session(
    project: pytest.Pytester, tag: str, suites: list[str], *args: str
) -> tuple[pytest.RunResult, dict[str, dict[str, dict[str, Any]]], Path]:
    """One session over ``suites``: its outcome, its cases by suite, and its report."""
    report = project.path / f"{tag}.json"
    result = project.runpytest(
        f"--agentbench-report={report}",
        "-m",
        "not agentbench_control",
        *args,
        *(f"suites/{suite}" for suite in suites),
    )
    return result, _suite_results(report), report


def _model_traffic(report: Path) -> dict[str, Any]:
    """The run's model totals and the chat suite's cases' model calls, without the mode and
    endpoint (a replay's differ from the recording's)."""
    document = json.loads(report.read_text())
    totals = {
        key: value
        for key, value in document["model_run"].items()
        if key not in {"mode", "base_url_host"}
    }
    (chat,) = (suite for suite in document["suites"] if suite["id"] == "chat-suite")
    return {
        "totals": totals,
        **{entry["result"]["case_id"]: entry["result"]["model_calls"] for entry in chat["cases"]},
    }


def _chat_outcomes(cases: dict[str, dict[str, Any]]) -> dict[str, tuple[Any, Any, Any]]:
    return {
        case_id: (result["outcome"], result["failure_class"], result["failure_reason"])
        for case_id, result in cases.items()
    }


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def _still_running(pids: set[int]) -> set[int]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_running(pid) for pid in pids):
        time.sleep(0.1)
    return {pid for pid in pids if _running(pid)}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.usefixtures("process_isolation_only")
def test_every_scenario_behaves_alike_in_every_mode(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Settings from the ini file, which only the pytest session reads.
    project.makeini(
        "[pytest]\n"
        "agentbench_llm_model = scripted-model\n"
        f"agentbench_llm_api_key_env = {KEY_ENV}\n"
        "agentbench_llm_max_turns = 4\n"
        "agentbench_llm_retry_backoff = 0\n"
    )
    guard = project.mkdir("guard")
    (guard / "sitecustomize.py").write_text(NETWORK_GUARD)
    log = project.path / "connections.log"
    monkeypatch.setenv("NETWORK_GUARD_LOG", str(log))
    monkeypatch.setenv(KEY_ENV, "sk-any-configured-key")
    tapes = f"--agentbench-cassettes={project.path / 'cassettes'}"
    server = ScriptedLLM()
    with server.serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        _, recording, report = _session(
            project, "record", ["chat-suite"], SCENARIO_ADAPTER, "--agentbench-timeout=60", tapes
        )
    recorded = _chat_outcomes(recording["chat-suite"])
    traffic = _model_traffic(report)
    recorded_requests = len(server.requests)
    assert recorded_requests >= len(CHAT_SCENARIOS)
    assert traffic["totals"]["calls"] == recorded_requests
    assert traffic["totals"]["input_tokens"] > 0
    assert len(list((project.path / "cassettes").glob("*.json"))) == recorded_requests
    monkeypatch.setenv("PYTHONPATH", str(guard))
    _guard_this_process(guard, monkeypatch)
    # A live endpoint that is not loopback: any request that is not replayed reaches the guard.
    monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", "http://203.0.113.7/v1")
    started = project.path / "started.pid"
    for mode, args in MODES.items():
        isolated = mode in ISOLATED_MODES
        suites = ["chat-suite", "shelf-suite", *(["spawn-suite"] if isolated else [])]
        users_test = ["test_users.py"] if "-n" in args else []
        result, cases, report = _session(
            project,
            mode,
            suites,
            SCENARIO_ADAPTER,
            "--agentbench-timeout=60",
            tapes,
            "--agentbench-cassette-mode=replay",
            *args,
            *users_test,
        )
        # Cassette replay reaches the adapter and stays offline.
        assert _chat_outcomes(cases["chat-suite"]) == recorded, mode
        assert _model_traffic(report) == traffic, mode
        assert not log.exists(), f"{mode}: {log.read_text()}"
        # A view the adapter tampers with is its case's own.
        assert {r["outcome"] for r in cases["shelf-suite"].values()} == {"passed"}, mode
        assert len(cases["shelf-suite"]) == len(TAMPERED), mode
        chat_passed = sum(outcome == "passed" for outcome, _, _ in recorded.values())
        if isolated:
            # What an isolated adapter starts ends with its case.
            assert {r["outcome"] for r in cases["spawn-suite"].values()} == {"passed"}, mode
            assert len(cases["spawn-suite"]) == len(SPAWNING), mode
            pids = {int(line) for line in started.read_text().split()}
            assert len(pids) == 3, mode
            assert _still_running(pids) == set(), f"{mode}: left running after the session"
            started.unlink()
        result.assert_outcomes(
            passed=chat_passed
            + len(TAMPERED)
            + (len(SPAWNING) if isolated else 0)
            + len(users_test),
            failed=len(recorded) - chat_passed,
        )
    assert len(server.requests) == recorded_requests, "replay sent nothing to the server"
    # The guard does catch the isolated adapter's process: live, it is refused.
    _, live, _ = _session(project, "live", ["chat-suite"], SCENARIO_ADAPTER, "--agentbench-isolate")
    assert {result["failure_class"] for result in live["chat-suite"].values()} == {"agent_error"}
    assert "203.0.113.7" in log.read_text()
