"""The harness's side of isolation, driven directly: calls, failures, restarts, tool calls."""

from __future__ import annotations

import importlib
import json
import os
import secrets
import sys
import threading
import time
import traceback
import types
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.agents.budget import Tally
from pytest_agentbench.agents.provenance import ModelRun, configure_run
from pytest_agentbench.agents.settings import ChatSettings, configure
from pytest_agentbench.isolation import forwarding, processes
from pytest_agentbench.isolation.channel import AdapterProcess
from pytest_agentbench.isolation.forwarding import forwarded_settings
from pytest_agentbench.isolation.host import SHARED_VIEWS, IsolatedAdapters, namespace_available
from pytest_agentbench.isolation.pool import IsolatedPool
from pytest_agentbench.run.adapters import adapter_class, implements, kind_protocols
from pytest_agentbench.sdk.contracts import FailureClass
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError
from pytest_agentbench.sdk.runner import AdapterFailure, CaseTimeout, MalformedOutput
from pytest_agentbench.sdk.tools import Budget, ToolSession, ToolSpec
from tests.demo_world import WORLD

PROBE = """
import gc
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection


class Probe:
    def __init__(self):
        self.last = None
        self.session = None

    def answer(self, question):
        left, right = question.split("+")
        return int(left) + int(right)

    def add(self, a, b=0):
        return a + b

    def pid(self):
        return os.getpid()

    def live_probes(self):
        return sum(isinstance(o, Probe) for o in gc.get_objects())

    def same_view(self, view):
        same, self.last = view is self.last, view
        return {"same": same, "size": len(view)}

    def tamper(self, view, again):
        seen = view.get("tampered", False)
        view["tampered"] = True
        return {"seen": seen, "same_in_call": view is again}

    def fork_back(self):
        # The forked copy returns into the child's serving loop, as a careless fork would.
        os.fork()
        return "forked"

    def fork_and_work(self):
        pid = os.fork()
        if pid == 0:
            time.sleep(1000)
            os._exit(0)
        return pid

    def setsid_grandchild(self):
        return subprocess.Popen(["setsid", "sleep", "1000"]).pid

    def daemon(self):
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
        return int(os.read(read, 32))

    def setsid_and_exit(self, path):
        with open(path, "w") as handle:
            handle.write(str(subprocess.Popen(["setsid", "sleep", "1000"]).pid))
        os._exit(3)

    def setsid_and_hang(self, mark, stubborn=True):
        # Its environment marks the grandchild: other tests' processes sleep 1000 s too.
        subprocess.Popen(["setsid", "sleep", "1000"], env={**os.environ, "PROBE_MARK": mark})
        if stubborn:
            self.stubborn_hang()
        time.sleep(1000)

    def where(self):
        import importlib.util

        return {
            "cwd": os.getcwd(),
            "path": sys.path,
            "oracles": importlib.util.find_spec("probe_oracles") is not None,
            "pythonpath": os.environ.get("PYTHONPATH"),
        }

    def chat_settings(self):
        from pytest_agentbench.agents.settings import configured_settings

        return configured_settings().model_dump(mode="json")

    def budget_tally(self):
        from pytest_agentbench.agents.provenance import current_run
        from pytest_agentbench.agents.settings import configured_settings

        run = current_run(configured_settings())
        guard = run.guard
        reservation = guard.reserve()
        guard.settle(reservation, 7, 3)
        run.limiter.release(run.limiter.acquire(10), 10)  # one request in the run's minute
        return str(guard.tally.path)

    def read_parent_memory(self):
        parent = os.getppid()
        try:
            with open(f"/proc/{parent}/maps") as maps:
                start = int(maps.readline().split("-")[0], 16)
            with open(f"/proc/{parent}/mem", "rb") as memory:
                memory.seek(start)
                memory.read(16)
        except OSError as exc:
            return type(exc).__name__
        return "read"

    def echo(self, value):
        return value

    def raise_value(self):
        raise ValueError("bad value\\nsecond line")

    def crash(self):
        os._exit(7)

    def hang(self):
        time.sleep(1000)

    def call_tools_forever(self, session):
        # A loop of tool calls, each a round trip to the harness, until interrupted.
        while True:
            try:
                session.call("add", {"a": 1, "b": 1})
            except Exception:
                pass

    def stubborn_hang(self):
        # Hangs through the harness's interrupt at the case limit (and anything else a
        # signal raises), as a process that will not unwind: only a kill ends it.
        while True:
            try:
                time.sleep(1000)
            except BaseException:
                pass

    def ignore_term_and_hang(self):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        self.stubborn_hang()

    def unencodable(self):
        return {1, 2}

    def garble(self):
        connection = next(o for o in gc.get_objects() if isinstance(o, Connection))
        connection.send_bytes(b"\\xff not json")
        time.sleep(1000)

    # The contract is imported per method: the cases with a 0.5 s limit load this
    # module in the child within it, on a loaded machine.
    def solve(self, task, session):
        from pytest_agentbench.sdk.tools import ToolCallError, ToolDescriptor

        self.session = session
        out = {
            "tools": [tool.name for tool in session.tools],
            "openai": session.openai_tools()[0]["function"]["name"],
            "sum": session.call("add", {"a": task["a"], "b": 2}),
            "text_arguments": session.call("add", '{"a": 1, "b": 1}'),
            "errors": [],
        }
        for name, arguments in [
            ("nope", {}),
            ("add", None),
            ("boom", {}),
            ("add", {"a": 0, "b": 0}),
        ]:
            try:
                session.call(name, arguments)
            except ToolCallError as exc:
                out["errors"].append([exc.code, exc.location.field])
        out["descriptors"] = all(isinstance(tool, ToolDescriptor) for tool in session.tools)
        return out

    def parallel(self, task, session):
        with ThreadPoolExecutor(4) as pool:
            return sorted(pool.map(lambda a: session.call("add", {"a": a, "b": 1}), range(6)))

    def session_view(self, task, session):
        from pytest_agentbench.sdk.tools import Budget, ToolCallError

        seen = {
            "budget": session.budget == Budget(max_calls=5),
            "final_schema": session.final_schema,
            "before": [session.calls_used, session.closed],
        }
        session.call("add", {"a": 1, "b": 2})
        seen["after_call"] = [session.calls_used, session.closed]
        session.close()
        seen["after_close"] = [session.calls_used, session.closed]
        try:
            session.call("add", {"a": 1, "b": 2})
        except ToolCallError as exc:
            seen["refused"] = exc.code
        return seen

    def not_json(self, task, session):
        from pytest_agentbench.sdk.tools import ToolCallError

        refused = []
        for name, arguments in [
            (object(), {"a": 1, "b": 1}),
            ("add", {"a": (1,), "b": 1}),
            ("add", {"a": {1}, "b": 1}),
            ("add", {"a": float("nan"), "b": 1}),
            ("add", [("a", 1), ("b", 1)]),
        ]:
            try:
                session.call(name, arguments)
            except ToolCallError as exc:
                refused.append([exc.code, exc.location.field])
        return refused

    def contract_loaded(self):
        import sys

        return "pytest_agentbench.sdk.tools" in sys.modules

    def exports(self, task, session):
        return {"openai_tools": session.openai_tools(), "mcp_tools": session.mcp_tools()}

    def late_call(self):
        from pytest_agentbench.sdk.tools import ToolCallError

        try:
            self.session.call("add", {"a": 1, "b": 1})
        except ToolCallError as exc:
            return exc.code
        return "answered"


class Resident(Probe):
    # Starts a helper when rebuilt: the adapter's own, kept while the process lives.

    def __init__(self):
        super().__init__()
        self.helper = None

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.helper = subprocess.Popen(["sleep", "1000"]).pid

    def helper_pid(self):
        return self.helper


class SlowStart(Probe):
    # Takes ``delay`` seconds to be rebuilt in the child.

    def __init__(self, delay):
        super().__init__()
        self.delay = delay

    def __setstate__(self, state):
        time.sleep(state["delay"])
        self.__dict__.update(state)


def build_probe():
    return Probe()


def broken_factory():
    raise RuntimeError("no probe today")


class NoProtocol:
    def unrelated(self):
        return None
"""


def _boom(arguments: dict[str, Any]) -> Any:
    raise RuntimeError("handler bug")


ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
EMPTY_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}


def tool_session(max_calls: int, **options: Any) -> ToolSession:
    return ToolSession(
        [
            ToolSpec(
                name="add",
                description="adds",
                parameters=ADD_SCHEMA,
                handler=lambda args: args["a"] + args["b"],
            ),
            ToolSpec(name="boom", description="fails", parameters=EMPTY_SCHEMA, handler=_boom),
        ],
        Budget(max_calls=max_calls),
        **options,
    )


def outcomes(session: ToolSession) -> list[tuple[str, str | None, str | None]]:
    """Each recorded call: name, canonical arguments, error code."""
    return [(call.name, call.arguments_json, call.error) for call in session.calls]


@pytest.fixture(scope="module")
def probe_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = str(tmp_path_factory.mktemp("probe"))
    (Path(folder) / "isolation_probe.py").write_text(PROBE, encoding="utf-8")
    sys.path.insert(0, folder)
    importlib.invalidate_caches()
    try:
        yield importlib.import_module("isolation_probe")
    finally:
        sys.path.remove(folder)


@pytest.fixture
def host() -> Iterator[IsolatedAdapters]:
    """A host of its own: for a test that counts starts, or ends or replaces the process."""
    isolated = IsolatedAdapters(timeout=5)
    yield isolated
    isolated.close()


@pytest.fixture(scope="module")
def shared_host(probe_module: Any) -> Iterator[IsolatedAdapters]:
    """One process for the tests that leave it running: each would otherwise pay a start
    (and the tool contract's import) of its own. Each test builds adapters of its own."""
    isolated = IsolatedAdapters(timeout=5)
    yield isolated
    isolated.close()


def _gone(pid: int) -> bool:
    """Whether ``pid`` ends within a few seconds (a zombie has ended: it runs nothing)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        entry = processes.process_table().get(pid)
        if entry is None or entry.zombie:
            return True
        time.sleep(0.05)
    return False


def test_a_remote_adapter_answers_like_the_adapter(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    assert probe.answer("2+3") == 5
    assert probe.add(2, b=5) == 7
    assert adapter_class(probe) == "isolation_probe.Probe"
    assert implements(probe, WORLD)
    assert probe.pid() != os.getpid()


def test_a_view_is_sent_once_and_each_call_gets_its_own_copy(
    shared_host: IsolatedAdapters, probe_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[int] = []
    send = AdapterProcess.send

    def counting(process: AdapterProcess, message: dict[str, Any]) -> None:
        if message["op"] == "call":
            sent.append(len(message["blobs"]))
        send(process, message)

    monkeypatch.setattr(AdapterProcess, "send", counting)
    probe = shared_host.remote(probe_module.Probe())
    view = {"events": list(range(100))}
    # What a call does to its copy is not seen by the next; within one call a
    # value passed twice is one object, as in-process.
    assert probe.tamper(view, view) == {"seen": False, "same_in_call": True}
    assert probe.tamper(view, view) == {"seen": False, "same_in_call": True}
    assert probe.same_view(view) == {"same": False, "size": 1}
    assert probe.same_view(view) == {"same": False, "size": 1}
    assert sent == [1, 0, 0, 0], "the view crossed the pipe once"
    # Many other values later, the child has forgotten it and is sent it again.
    for index in range(40):
        probe.same_view({"other": index})
    sent.clear()
    assert probe.same_view(view) == {"same": False, "size": 1}
    assert sent == [1]


def test_a_mutable_view_changed_in_the_harness_is_sent_again(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    view: dict[str, Any] = {"turn": 1}
    assert probe.echo(view) == {"turn": 1}
    view["turn"] = 2
    assert probe.echo(view) == {"turn": 2}


def test_an_exception_fails_the_call_and_keeps_the_process(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    pid = probe.pid()
    with pytest.raises(AdapterFailure) as raised:
        probe.raise_value()
    assert raised.value.reason == "adapter raised ValueError: bad value"
    assert raised.value.failure_class is FailureClass.AGENT_ERROR
    assert probe.pid() == pid


def test_a_crash_fails_the_call_and_the_next_call_gets_a_new_process(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
    pid = probe.pid()
    with pytest.raises(AdapterFailure, match="exited with status 7 during the call"):
        probe.crash()
    assert host.remote(probe).pid() != pid
    assert host.starts == 2


def a_hang_that_will_not_unwind_is_a_timeout_and_the_process_is_killed(
    probe_module: Any,
) -> None:
    # No alarm is armed here: a call may take the limit and CALL_SLACK (a second), which
    # is what a hang waits and what the calls that answer have. This hang swallows the
    # interrupt: after the grace, the kill path.
    host = IsolatedAdapters(timeout=0.2)
    try:
        probe = host.remote(probe_module.Probe())
        pid = probe.pid()
        started = time.monotonic()
        with pytest.raises(CaseTimeout):
            probe.stubborn_hang()
        # Bounded far below the 1000 s hang, far above a loaded machine's slowest kill.
        assert time.monotonic() - started < 60
        assert _gone(pid)
        assert host.remote(probe).answer("1+1") == 2
    finally:
        host.close()


def a_process_ignoring_sigterm_is_killed_after_the_grace(probe_module: Any) -> None:
    host = IsolatedAdapters(timeout=0.2, grace=0.2)
    try:
        probe = host.remote(probe_module.Probe())
        pid = probe.pid()
        with pytest.raises(CaseTimeout):
            probe.ignore_term_and_hang()
        assert _gone(pid)
    finally:
        host.close()


def test_output_json_cannot_hold_is_a_product_error(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    with pytest.raises(MalformedOutput, match="TypeError: a set has no JSON order") as raised:
        probe.unencodable()
    assert raised.value.failure_class is FailureClass.PRODUCT_ERROR


def test_a_garbled_message_fails_the_call_and_replaces_the_process(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
    pid = probe.pid()
    with pytest.raises(AdapterFailure, match="the adapter's process sent a message that is not"):
        probe.garble()
    assert _gone(pid)


def test_adapters_made_per_case_are_not_all_kept(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    for _ in range(SHARED_VIEWS + 8):
        probe = shared_host.remote(probe_module.Probe())
        assert probe.add(1) == 1
    assert probe.live_probes() == SHARED_VIEWS


def test_an_adapter_that_cannot_be_pickled_is_refused(shared_host: IsolatedAdapters) -> None:
    class Local:
        def answer(self, question: str) -> int:
            return 0

    with pytest.raises(AgentbenchError) as refused:
        shared_host.remote(Local())
    assert refused.value.code == "isolation_unpicklable_adapter"


def test_a_view_that_cannot_be_pickled_is_a_harness_error(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    with pytest.raises(AdapterFailure, match="isolation_unpicklable_view") as raised:
        probe.same_view(lambda: None)
    assert raised.value.failure_class is FailureClass.HARNESS_ERROR


def test_a_spec_is_loaded_in_the_child_only(host: IsolatedAdapters, tmp_path: Path) -> None:
    (tmp_path / "child_only_probe.py").write_text(PROBE, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        for spec in ("child_only_probe:Probe", "child_only_probe:build_probe"):
            probe = host.load_spec(spec, [kind_protocols(WORLD)])
            assert adapter_class(probe) == "child_only_probe.Probe"
            assert probe.answer("4+4") == 8
        assert "child_only_probe" not in sys.modules
    finally:
        sys.path.remove(str(tmp_path))


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ("no_colon", "adapter_spec"),
        ("no_such_module_here:Agent", "adapter_import"),
        ("isolation_probe:Missing", "adapter_attribute"),
        ("isolation_probe:broken_factory", "adapter_build"),
        ("isolation_probe:NoProtocol", "adapter_protocol"),
    ],
)
def test_bad_specs_are_the_usage_errors_of_in_process_loading(
    shared_host: IsolatedAdapters, probe_module: Any, spec: str, code: str
) -> None:
    with pytest.raises(UsageError) as refused:
        shared_host.load_spec(spec, [kind_protocols(WORLD)])
    assert refused.value.code == code


def test_tool_calls_are_answered_by_the_harness_session(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    # Every call is admitted against the budget, refused or not: the sixth is one too many.
    session = tool_session(max_calls=5)
    assert probe.solve({"a": 40}, session) == {
        "tools": ["add", "boom"],
        "openai": "add",
        "sum": 42,
        "text_arguments": 2,
        "errors": [
            ["unknown_tool", None],
            ["invalid_arguments", "arguments"],
            ["handler_failed", None],
            ["budget_exhausted", None],
        ],
        "descriptors": True,
    }
    assert outcomes(session) == [
        ("add", '{"a":40,"b":2}', None),
        ("add", '{"a":1,"b":1}', None),
        ("nope", "{}", "unknown_tool"),
        ("add", "{}", "invalid_arguments"),
        ("boom", "{}", "handler_failed"),
        ("add", None, "budget_exhausted"),
    ]
    # A session kept past the end of its call is closed; the harness is not asked.
    assert probe.late_call() == "session_closed"
    assert len(session.calls) == 6


def test_the_session_stand_in_closes_and_reads_the_harness_session(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    session = tool_session(max_calls=5, final_schema={"type": "object"})
    assert probe.session_view({}, session) == {
        "budget": True,
        "final_schema": {"type": "object"},
        "before": [0, False],
        "after_call": [1, False],
        "after_close": [1, True],
        "refused": "session_closed",
    }
    assert session.closed
    assert outcomes(session) == [
        ("add", '{"a":1,"b":2}', None),
        ("add", None, "session_closed"),
    ]


def test_the_stand_in_exports_what_the_session_exports(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    session = tool_session(max_calls=1)
    assert probe.exports({}, session) == {
        "openai_tools": session.openai_tools(),
        "mcp_tools": session.mcp_tools(),
    }


def test_arguments_json_cannot_carry_are_refused_as_in_process(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    in_process = probe_module.Probe().not_json({}, tool_session(max_calls=9))
    session = tool_session(max_calls=9)
    isolated = shared_host.remote(probe_module.Probe()).not_json({}, session)
    assert [code for code, _ in isolated] == ["unknown_tool", *["invalid_arguments"] * 4]
    assert isolated == [list(refusal) for refusal in in_process]
    assert session.calls == ()


def test_the_child_loads_the_tool_contract_only_for_a_session(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
    assert probe.answer("1+1") == 2
    assert probe.contract_loaded() is False
    probe.exports({}, tool_session(max_calls=1))
    assert probe.contract_loaded() is True


def test_tool_calls_from_the_adapters_threads_are_served_one_at_a_time(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    session = tool_session(max_calls=10)
    assert probe.parallel({}, session) == [1, 2, 3, 4, 5, 6]
    assert len(session.calls) == 6


def test_a_fork_returning_into_the_child_does_not_answer_for_it(
    shared_host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    pid = probe.pid()
    starts = shared_host.starts
    for _ in range(3):
        assert probe.fork_back() == "forked"
        # The next call is answered by the child, not a stray copy, and nothing is charged to it.
        assert probe.answer("2+3") == 5
    assert probe.pid() == pid
    assert shared_host.starts == starts, "the process was never replaced"


@pytest.mark.parametrize("method", ["fork_and_work", "setsid_grandchild", "daemon"])
def test_what_a_call_starts_ends_with_the_call(
    shared_host: IsolatedAdapters, probe_module: Any, method: str
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    pid = probe.pid()
    starts = shared_host.starts
    started = getattr(probe, method)()
    assert _gone(started), f"{method} left {started} running after its call"
    assert probe.answer("1+1") == 2
    assert probe.pid() == pid
    assert shared_host.starts == starts, "the process was never replaced"


def test_what_the_adapter_starts_when_built_lives_with_the_process(probe_module: Any) -> None:
    host = IsolatedAdapters(timeout=5)
    probe = host.remote(probe_module.Resident())
    helper = probe.helper_pid()
    assert probe.answer("1+1") == 2
    os.kill(helper, 0)  # still running after two calls
    host.close()
    assert _gone(helper)


def _marked(mark: str, before: Mapping[int, Any]) -> set[int]:
    """The probe's marked ``sleep 1000`` processes in a session of their own, started since."""
    return {
        entry.pid
        for entry in processes.process_table().values()
        if entry.pid not in before
        and entry.session != os.getsid(0)
        and _is_sleep(entry.pid)
        and f"PROBE_MARK={mark}".encode() in _environment(entry.pid)
    }


def a_hang_that_will_not_unwind_ends_the_whole_tree_setsid_included(probe_module: Any) -> None:
    host = IsolatedAdapters(timeout=0.2)
    probe = host.remote(probe_module.Probe())
    child = probe.pid()
    table_before = processes.process_table()
    mark = secrets.token_hex(8)
    with pytest.raises(CaseTimeout):
        probe.setsid_and_hang(mark)
    assert _gone(child)
    leftovers = _marked(mark, table_before)
    host.close()
    assert not leftovers


def an_interrupted_hang_keeps_its_process_ends_what_it_started_and_answers_next(
    probe_module: Any,
) -> None:
    # A hang that unwinds when interrupted (as in-process at the case limit): the process
    # stays, the grandchild its call started in a session of its own is ended with the
    # call, and the next call is answered by the same process, never restarted.
    host = IsolatedAdapters(timeout=0.2)
    try:
        probe = host.remote(probe_module.Probe())
        child = probe.pid()
        table_before = processes.process_table()
        mark = secrets.token_hex(8)
        with pytest.raises(CaseTimeout):
            probe.setsid_and_hang(mark, stubborn=False)
        started = _marked(mark, table_before)
        assert all(_gone(pid) for pid in started), "what the call started ended with it"
        assert probe.pid() == child
        assert probe.answer("2+2") == 4
        assert host.starts == 1, "the process was never replaced"
        with pytest.raises(CaseTimeout):
            probe.hang()
        assert (probe.pid(), host.starts) == (child, 1)
    finally:
        host.close()


def test_what_a_dead_child_left_behind_is_found_and_ended(
    shared_host: IsolatedAdapters, probe_module: Any, tmp_path: Path
) -> None:
    probe = shared_host.remote(probe_module.Probe())
    with pytest.raises(AdapterFailure, match="exited with status 3"):
        probe.setsid_and_exit(str(tmp_path / "orphan.pid"))
    # The orphan left the child's session and lost its parent: its environment names it.
    assert _gone(int((tmp_path / "orphan.pid").read_text()))
    assert probe.answer("1+1") == 2


def _environment(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return []


def _is_sleep(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"1000"]
    except OSError:
        return False


def start_up_has_its_own_limit_and_an_overrun_is_reported_once(probe_module: Any) -> None:
    # Rebuilding takes longer than the case limit: not charged to the case.
    host = IsolatedAdapters(timeout=0.2, startup_timeout=60)
    try:
        probe = host.remote(probe_module.SlowStart(0.3))
        assert probe.answer("2+2") == 4
        with pytest.raises(CaseTimeout):
            probe.stubborn_hang()
        # The restart after the timeout is the start-up's time again, not this call's.
        host.remote(probe)
        assert probe.answer("2+3") == 5
    finally:
        host.close()
    # The process starts under a generous allowance (a loaded machine may be slow to start an
    # interpreter); once it runs, the allowance times only loading an adapter into it, which
    # must overrun it: a short one, far shorter than the load.
    host = IsolatedAdapters(timeout=30, startup_timeout=60)
    try:
        assert host.remote(probe_module.Probe()).answer("1+1") == 2
        host.startup_timeout = 0.3
        probe = host.remote(probe_module.SlowStart(600))
        with pytest.raises(AdapterFailure) as first:
            probe.answer("1+1")
        assert first.value.failure_class is FailureClass.AGENT_ERROR
        assert first.value.reason == (
            "[isolation_startup_timeout] loading the adapter in its isolated process took over "
            "0.3s (agentbench_isolate_startup_timeout; the case limit does not apply to start-up)"
        )
        starts = host.starts
        for _ in range(2):
            host.remote(probe)
            with pytest.raises(AdapterFailure) as later:
                probe.answer("1+1")
            assert later.value.failure_class is FailureClass.AGENT_ERROR
            assert later.value.reason.endswith("earlier in this process; not tried again")
        assert host.starts == starts, "an overrun start-up is not tried again"
    finally:
        host.close()


def a_loop_of_tool_calls_is_interrupted_between_two_and_keeps_its_process(
    probe_module: Any,
) -> None:
    # The interrupt is held while a tool call crosses (a message cut in half would garble
    # the connection) and raised as it returns; a tool call in flight at the limit is
    # refused by the harness, the case being over.
    host = IsolatedAdapters(timeout=0.2)
    try:
        probe = host.remote(probe_module.Probe())
        child = probe.pid()
        session = tool_session(max_calls=10**6)
        with pytest.raises(CaseTimeout):
            probe.call_tools_forever(session)
        assert session.calls, "the loop reached the harness"
        assert probe.answer("1+2") == 3
        assert (probe.pid(), host.starts) == (child, 1)
    finally:
        host.close()


WAITING_SCENARIOS = (
    a_hang_that_will_not_unwind_is_a_timeout_and_the_process_is_killed,
    a_process_ignoring_sigterm_is_killed_after_the_grace,
    a_hang_that_will_not_unwind_ends_the_whole_tree_setsid_included,
    an_interrupted_hang_keeps_its_process_ends_what_it_started_and_answers_next,
    a_loop_of_tool_calls_is_interrupted_between_two_and_keeps_its_process,
    start_up_has_its_own_limit_and_an_overrun_is_reported_once,
)
"""Each waits out a limit (a call's, a kill's grace, a start-up's) with a host of its own."""


def test_hangs_kills_and_start_ups_are_each_bounded_by_their_own_limit(
    probe_module: Any,
) -> None:
    # The scenarios share nothing but the probe's module: they run at once, so that their
    # waits overlap; each one's failure is reported by its name.
    with ThreadPoolExecutor(len(WAITING_SCENARIOS)) as pool:
        started = {
            scenario.__name__: pool.submit(scenario, probe_module) for scenario in WAITING_SCENARIOS
        }
    failed = [
        f"{name}:\n{''.join(traceback.format_exception(error))}"
        for name, future in started.items()
        if (error := future.exception()) is not None
    ]
    assert not failed, "\n\n".join(failed)


def test_the_child_works_outside_the_project_with_no_path_to_its_suites(
    probe_module: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The adapter's module imported from the project, first on the path.
    (tmp_path / "isolation_probe.py").write_text(PROBE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "probe_oracles" / "demo").mkdir(parents=True)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    host = IsolatedAdapters(timeout=5, protected=[tmp_path])
    try:
        probe = host.remote(probe_module.Probe())
        seen = probe.where()
        assert not Path(seen["cwd"]).resolve().is_relative_to(tmp_path.resolve())
        assert str(tmp_path) not in seen["path"]
        assert seen["pythonpath"] == os.environ.get("PYTHONPATH"), "as pytest has it"
        assert not seen["oracles"], "a folder of the project imports as a namespace package"
        assert not any((Path(entry) / "probe_oracles").exists() for entry in seen["path"])
        shims = [Path(entry) for entry in seen["path"] if (Path(entry) / "pkg").exists()]
        # The adapter's module and the package still import from there (beside the
        # bytecode cache the child may write).
        assert [
            sorted(p.name for p in shim.iterdir() if p.name != "__pycache__") for shim in shims
        ] == [["isolation_probe.py", "pkg"]]
    finally:
        host.close()
    assert not Path(seen["cwd"]).exists(), "the child's folder goes with the session"


def test_pytest_is_not_dumpable_while_a_child_runs(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    before = processes.dumpable()
    if before is None:
        pytest.skip("no prctl on this platform")
    probe = host.remote(probe_module.Probe())
    probe.answer("1+1")
    assert processes.dumpable() is False
    host.close()
    assert processes.dumpable() is before


def test_in_a_user_namespace_the_child_cannot_read_pytests_memory(probe_module: Any) -> None:
    unavailable = namespace_available()
    if unavailable is not None:
        pytest.skip(unavailable)
    host = IsolatedAdapters(timeout=5, namespace=True)
    try:
        probe = host.remote(probe_module.Probe())
        assert probe.answer("1+2") == 3
        assert probe.read_parent_memory() == "PermissionError"
    finally:
        host.close()


def test_the_sessions_settings_reach_the_child_whole(probe_module: Any, tmp_path: Path) -> None:
    resolved = ChatSettings(
        base_url="http://127.0.0.1:9/v1",
        model="scripted-model",
        max_turns=3,
        cassettes=tmp_path / "tapes",
        cassette_mode="replay",
    )
    configure(resolved)
    try:
        host = IsolatedAdapters(timeout=5, settings=forwarded_settings())
    finally:
        configure(None)
    try:
        probe = host.remote(probe_module.Probe())
        assert probe.chat_settings() == resolved.model_dump(mode="json")
    finally:
        host.close()


def test_every_adapter_process_reserves_from_the_runs_budget_tally(
    probe_module: Any, tmp_path: Path
) -> None:
    resolved = ChatSettings(
        base_url="http://127.0.0.1:9/v1",
        model="m",
        max_calls=10,
        max_tokens_per_call=50,
        requests_per_minute=100,
    )
    tally = Tally(tmp_path / "tally.json")
    configure(resolved)
    configure_run(ModelRun(resolved, tally=tally, window=tmp_path / "window.json"))
    try:
        pool = IsolatedPool(2, 5, settings=forwarded_settings())
    finally:
        configure_run(None)
        configure(None)
    try:
        probe = pool.remote(probe_module.Probe())
        # Two cases at once, each in a process of its own, then one in a fresh process.
        barrier = threading.Barrier(2)

        def case() -> str:
            with pool.serving(probe):
                barrier.wait(timeout=60)
                return str(probe.budget_tally())

        with ThreadPoolExecutor(2) as executor:
            paths = list(executor.map(lambda _: case(), range(2)))
        assert len(pool.pids) == 2
        for host in pool.hosts:
            host.close()
        with pool.serving(probe):
            paths.append(str(probe.budget_tally()))
    finally:
        pool.close()
    assert paths == [str(tally.path)] * 3
    with tally.transaction() as state:
        assert (state["calls"], state["tokens"]) == (3, 30)
    # and every one of them sent within the run's minute, not one of its own
    minute = json.loads((tmp_path / "window.json").read_text())
    assert [tokens for _, _, tokens in minute] == [10, 10, 10]
    assert len({key.split("-")[0] for key, _, _ in minute}) == 3, "three processes"


def test_settings_that_cannot_be_handed_over_refuse_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    holder = types.ModuleType("unpicklable_settings")
    holder.__dict__.update(current=lambda: lambda: None, install=lambda value: None)
    monkeypatch.setitem(sys.modules, holder.__name__, holder)
    monkeypatch.setattr(forwarding, "FORWARDED", ((holder.__name__, "current", "install"),))
    with pytest.raises(UsageError) as refused:
        forwarding.forwarded_settings()
    assert refused.value.code == "isolation_unforwardable_settings"


def test_close_ends_the_process(probe_module: Any) -> None:
    host = IsolatedAdapters(timeout=5)
    probe = host.remote(probe_module.Probe())
    pid = probe.pid()
    host.close()
    assert _gone(pid)
    assert host.pid is None
    # A closed host starts a fresh child (in a fresh folder) when used again.
    assert probe.answer("1+1") == 2
    assert probe.pid() not in {pid, os.getpid()}
    host.close()
