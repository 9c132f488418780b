"""A scripted ToolAgent for the ``demo-tools`` world: each question names what it does.

Every outcome of the tool-session contract is provoked by one question, so
one suite exercises them all in a real pytest run.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from pytest_agentbench.sdk.tools import ToolCallError, ToolSession

BUDGET_OPTIONS = "options: {max_calls: 14, max_bytes: 100}\n"
"""The suite budget the scripts are written against: 11 ``add`` results fill 99 bytes."""


def _add(session: ToolSession, a: int = 1, b: int = 2) -> Any:
    return session.call("add", {"a": a, "b": b})


def _ok(session: ToolSession) -> Any:
    return {"answer": _add(session)["sum"]}


def _ignoring(session: ToolSession, name: str, arguments: Any) -> None:
    with contextlib.suppress(ToolCallError):
        session.call(name, arguments)


def _calls(session: ToolSession) -> Any:
    for _ in range(15):
        _ignoring(session, "add", {"a": 1})
    return {"answer": 3}


def _bytes(session: ToolSession) -> Any:
    for _ in range(12):
        _ignoring(session, "add", {"a": 1, "b": 2})
    return {"answer": 3}


def _unknown(session: ToolSession) -> Any:
    _ignoring(session, "subtract", {"a": 1, "b": 2})
    return _ok(session)


def _invalid(session: ToolSession) -> Any:
    _ignoring(session, "add", '{"a": 1, "a": 2, "b": 1}')
    return _ok(session)


def _refusal(session: ToolSession) -> Any:
    _ignoring(session, "add", {"a": 10**7, "b": 1})
    return _ok(session)


def _handler(session: ToolSession) -> Any:
    _ignoring(session, "divide", {"a": 1, "b": 0})
    return _ok(session)


def _closed(session: ToolSession) -> Any:
    answer = _ok(session)
    session.close()
    _ignoring(session, "add", {"a": 1, "b": 2})
    return answer


def _raise(session: ToolSession) -> Any:
    _add(session)
    raise RuntimeError("scripted failure")


def _malformed(session: ToolSession) -> Any:
    return {"answer": str(_add(session)["sum"])}


def _timeout(session: ToolSession) -> Any:
    _add(session)
    time.sleep(30)
    return {"answer": 3}


SCRIPTS = {
    "ok": _ok,
    "calls": _calls,
    "bytes": _bytes,
    "unknown": _unknown,
    "invalid": _invalid,
    "refusal": _refusal,
    "handler": _handler,
    "closed": _closed,
    "raise": _raise,
    "malformed": _malformed,
    "timeout": _timeout,
}


class Scripted:
    def solve(self, task: dict[str, Any], session: ToolSession) -> Any:
        return SCRIPTS[task["question"]](session)
