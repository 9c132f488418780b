"""The harness's side of isolation, driven directly: calls, failures, restarts, tool calls."""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.isolation.host import SHARED_VIEWS, IsolatedAdapters
from pytest_agentbench.run.adapters import adapter_class, implements, kind_protocols
from pytest_agentbench.sdk.contracts import FailureClass
from pytest_agentbench.sdk.errors import AgentbenchError, UsageError
from pytest_agentbench.sdk.runner import AdapterFailure, CaseTimeout, MalformedOutput
from pytest_agentbench.tools import Budget, ToolSession, ToolSpec
from tests.demo_world import WORLD

PROBE = """
import gc
import os
import signal
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

    def echo(self, value):
        return value

    def raise_value(self):
        raise ValueError("bad value\\nsecond line")

    def crash(self):
        os._exit(7)

    def hang(self):
        time.sleep(1000)

    def ignore_term_and_hang(self):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(1000)

    def unencodable(self):
        return {1, 2}

    def garble(self):
        connection = next(o for o in gc.get_objects() if isinstance(o, Connection))
        connection.send_bytes(b"\\xff not json")
        time.sleep(1000)

    # The contract is imported per method: the cases with a 0.5 s limit load this
    # module in the child within it, on a loaded machine.
    def solve(self, task, session):
        from pytest_agentbench.tools import ToolCallError, ToolDescriptor

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
        from pytest_agentbench.tools import Budget, ToolCallError

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
        from pytest_agentbench.tools import ToolCallError

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

        return "pytest_agentbench.tools" in sys.modules

    def exports(self, task, session):
        return {"openai_tools": session.openai_tools(), "mcp_tools": session.mcp_tools()}

    def late_call(self):
        from pytest_agentbench.tools import ToolCallError

        try:
            self.session.call("add", {"a": 1, "b": 1})
        except ToolCallError as exc:
            return exc.code
        return "answered"


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


@pytest.fixture
def probe_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    (tmp_path / "isolation_probe.py").write_text(PROBE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module("isolation_probe")


@pytest.fixture
def host() -> Iterator[IsolatedAdapters]:
    isolated = IsolatedAdapters(timeout=5)
    yield isolated
    isolated.close()


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_remote_adapter_answers_like_the_adapter(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
    assert probe.answer("2+3") == 5
    assert probe.add(2, b=5) == 7
    assert adapter_class(probe) == "isolation_probe.Probe"
    assert implements(probe, WORLD)
    assert probe.pid() != os.getpid()


def test_a_view_is_sent_once_and_stays_one_object_in_the_child(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
    view = {"events": list(range(100))}
    assert probe.same_view(view) == {"same": False, "size": 1}
    assert probe.same_view(view) == {"same": True, "size": 1}
    # Many other values later, the child has forgotten it and is sent it again.
    for index in range(40):
        probe.same_view({"other": index})
    assert probe.same_view(view) == {"same": False, "size": 1}


def test_a_mutable_view_changed_in_the_harness_is_sent_again(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
    view: dict[str, Any] = {"turn": 1}
    assert probe.echo(view) == {"turn": 1}
    view["turn"] = 2
    assert probe.echo(view) == {"turn": 2}


def test_an_exception_fails_the_call_and_keeps_the_process(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
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


def test_a_hang_is_a_timeout_and_the_process_is_killed(probe_module: Any) -> None:
    host = IsolatedAdapters(timeout=0.5)
    try:
        probe = host.remote(probe_module.Probe())
        pid = probe.pid()
        started = time.monotonic()
        with pytest.raises(CaseTimeout):
            probe.hang()
        assert time.monotonic() - started < 3
        assert _gone(pid)
        assert host.remote(probe).answer("1+1") == 2
    finally:
        host.close()


def test_a_process_ignoring_sigterm_is_killed_after_the_grace(probe_module: Any) -> None:
    host = IsolatedAdapters(timeout=0.5, grace=0.2)
    try:
        probe = host.remote(probe_module.Probe())
        pid = probe.pid()
        with pytest.raises(CaseTimeout):
            probe.ignore_term_and_hang()
        assert _gone(pid)
    finally:
        host.close()


def test_output_json_cannot_hold_is_a_product_error(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
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


def test_adapters_made_per_case_are_not_all_kept(host: IsolatedAdapters, probe_module: Any) -> None:
    for _ in range(SHARED_VIEWS + 8):
        probe = host.remote(probe_module.Probe())
        assert probe.add(1) == 1
    assert probe.live_probes() == SHARED_VIEWS


def test_an_adapter_that_cannot_be_pickled_is_refused(host: IsolatedAdapters) -> None:
    class Local:
        def answer(self, question: str) -> int:
            return 0

    with pytest.raises(AgentbenchError) as refused:
        host.remote(Local())
    assert refused.value.code == "isolation_unpicklable_adapter"


def test_a_view_that_cannot_be_pickled_is_a_harness_error(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
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
    host: IsolatedAdapters, probe_module: Any, spec: str, code: str
) -> None:
    with pytest.raises(UsageError) as refused:
        host.load_spec(spec, [kind_protocols(WORLD)])
    assert refused.value.code == code


def test_tool_calls_are_answered_by_the_harness_session(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
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
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
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
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
    session = tool_session(max_calls=1)
    assert probe.exports({}, session) == {
        "openai_tools": session.openai_tools(),
        "mcp_tools": session.mcp_tools(),
    }


def test_arguments_json_cannot_carry_are_refused_as_in_process(
    host: IsolatedAdapters, probe_module: Any
) -> None:
    in_process = probe_module.Probe().not_json({}, tool_session(max_calls=9))
    session = tool_session(max_calls=9)
    isolated = host.remote(probe_module.Probe()).not_json({}, session)
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
    host: IsolatedAdapters, probe_module: Any
) -> None:
    probe = host.remote(probe_module.Probe())
    session = tool_session(max_calls=10)
    assert probe.parallel({}, session) == [1, 2, 3, 4, 5, 6]
    assert len(session.calls) == 6


def test_close_ends_the_process(probe_module: Any) -> None:
    host = IsolatedAdapters(timeout=5)
    probe = host.remote(probe_module.Probe())
    pid = probe.pid()
    host.close()
    assert _gone(pid)
    assert host.pid is None
