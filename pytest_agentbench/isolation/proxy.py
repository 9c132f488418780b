"""What the harness holds in place of an isolated adapter.

A :class:`RemoteAdapter` has one method per public method of the adapter in
the child, and its class carries the adapter class's module and name. Worlds
call it exactly as they would call the adapter (protocol checks, the
``answered_by`` class of reports and the header see the real class), and each
call crosses to the child.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.registry import KindProtocols
from pytest_agentbench.sdk.tools import ToolSession


class AdapterHost(Protocol):
    """Where a stand-in's calls go: a lone host (:mod:`.host`) or a pool of them (:mod:`.pool`)."""

    def call(
        self, handle: int, method: str, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> JsonValue: ...


class RemoteAdapter:
    """Base of the harness-side stand-ins; see :func:`remote_class`."""

    def __init__(self, host: AdapterHost, handle: int) -> None:
        self._host = host
        self._handle = handle

    def __repr__(self) -> str:
        kind = type(self)
        return f"<isolated {kind.__module__}.{kind.__qualname__}>"

    def __reduce__(self) -> Any:
        raise TypeError("an isolated adapter's stand-in cannot be pickled")


def _remote_method(name: str) -> Callable[..., JsonValue]:
    def method(self: RemoteAdapter, *args: Any, **kwargs: Any) -> JsonValue:
        return self._host.call(self._handle, name, args, kwargs)

    method.__name__ = method.__qualname__ = name
    return method


@functools.cache
def remote_class(module: str, qualname: str, methods: tuple[str, ...]) -> type[RemoteAdapter]:
    """The stand-in class of a remote adapter class with these public methods."""
    namespace: dict[str, Any] = {name: _remote_method(name) for name in methods}
    namespace.update(__module__=module, __qualname__=qualname)
    return type(qualname.rpartition(".")[2], (RemoteAdapter,), namespace)


def methods_of(shape: Mapping[str, bool]) -> tuple[str, ...]:
    return tuple(sorted(name for name, is_callable in shape.items() if is_callable))


def satisfies(shape: Mapping[str, bool], kind: KindProtocols) -> bool:
    """Whether an object with these public members meets one of ``kind``'s adapter protocols.

    Asked of a stand-in carrying the members, so the check is the runtime
    protocol check itself rather than a copy of it.
    """
    stand_in = type("Shape", (), dict.fromkeys(shape, _present))()
    return kind.accepts(stand_in)


def _present(*_args: Any) -> None:
    """The value of each member of a shape stand-in."""


@dataclass(frozen=True)
class PendingAdapter:
    """An ``--agentbench-adapter`` spec not yet loaded in this process's child.

    An xdist worker holds this until its first case: the controller has
    already checked the spec, and the worker starts its child only when a case
    needs it.
    """

    spec: str
    kinds: Sequence[KindProtocols]

    def __repr__(self) -> str:
        return f"<isolated adapter {self.spec}, not yet started>"


def session_spec(session: ToolSession) -> dict[str, Any]:
    """What the child's stand-in session is built from (pickled, so the records stay records)."""
    return {
        "tools": tuple(tool.describe() for tool in session.tools),
        "budget": session.budget,
        "final_schema": session.final_schema,
    }


def session_state(session: ToolSession) -> dict[str, JsonValue]:
    """The counters the stand-in reads live from the harness's session."""
    return {
        "calls_used": session.calls_used,
        "bytes_used": session.bytes_used,
        "closed": session.closed,
    }
