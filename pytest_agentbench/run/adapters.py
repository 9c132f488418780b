"""Loading the system under test from a ``module:attr`` spec.

The attribute may be a class (built with no arguments), a factory (called with
no arguments) or a ready instance. Whatever it yields must satisfy the adapter
protocol of at least one registered world kind; each case then checks the
protocol of its own world and is skipped, naming the protocol, when it is lacking.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.sdk.errors import UsageError, describe_exception
from pytest_agentbench.sdk.registry import KindProtocols
from pytest_agentbench.sdk.world import World, accepted_protocols


@dataclass(frozen=True)
class ReferenceAgents:
    """The ``agentbench_adapter`` value when no adapter is configured.

    Each case then runs its own world's built-in reference agent.
    """

    def __repr__(self) -> str:
        return "<built-in reference agents>"


REFERENCE_AGENTS = ReferenceAgents()


def kind_protocols(world: World) -> KindProtocols:
    return KindProtocols(world.kind, accepted_protocols(world))


def protocol_name(world: World) -> str:
    return kind_protocols(world).names


def implements(adapter: Any, world: World) -> bool:
    return kind_protocols(world).accepts(adapter)


def _protocols_summary(kinds: Sequence[KindProtocols]) -> str:
    names = [f"{kind.names} ({kind.kind})" for kind in kinds]
    return ", ".join(names) or "no world kinds are registered"


def load_adapter(spec: str, kinds: Sequence[KindProtocols], *, limit: float = 0.0) -> Any:
    """Import, build and check the adapter named by ``spec``; refusals are usage errors.

    ``kinds`` are the protocols of every world kind the adapter may serve
    (:meth:`~pytest_agentbench.sdk.registry.WorldRegistry.adapter_protocols`). With a
    ``limit`` (seconds; 0: none), an import or constructor that has not returned by then
    is the usage error ``adapter_load_timeout``: it is left to itself in a daemon thread,
    which cannot keep the process from ending, rather than hang the session silently.
    """
    if limit <= 0:
        return _load_adapter(spec, kinds)
    outcome: list[tuple[bool, Any]] = []

    def load() -> None:
        try:
            outcome.append((True, _load_adapter(spec, kinds)))
        except BaseException as exc:  # handed to the waiting thread as it is
            outcome.append((False, exc))

    loading = threading.Thread(target=load, name="agentbench-adapter-load", daemon=True)
    loading.start()
    loading.join(limit)
    if loading.is_alive():
        raise UsageError(
            "adapter_load_timeout",
            f"importing and building adapter {spec!r} took over {limit:g}s "
            "(agentbench_adapter_load_timeout)",
            field="--agentbench-adapter",
        )
    loaded, value = outcome[0]
    if not loaded:
        raise value
    return value


def _load_adapter(spec: str, kinds: Sequence[KindProtocols]) -> Any:
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise UsageError(
            "adapter_spec", f"{spec!r} is not 'module:attr'", field="--agentbench-adapter"
        )
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise UsageError(
            "adapter_import",
            f"cannot import module {module_name!r} of adapter {spec!r}: {describe_exception(exc)}",
            field="--agentbench-adapter",
        ) from None
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UsageError(
                "adapter_attribute",
                f"module {module_name!r} has no attribute {attr_path!r} (adapter {spec!r})",
                field="--agentbench-adapter",
            ) from None
    adapter = target
    if inspect.isclass(target) or (
        callable(target) and not any(kind.accepts(target) for kind in kinds)
    ):
        try:
            adapter = target()
        except Exception as exc:
            raise UsageError(
                "adapter_build",
                f"building adapter {spec!r} failed: {describe_exception(exc)}",
                field="--agentbench-adapter",
            ) from None
    if not any(kind.accepts(adapter) for kind in kinds):
        raise UsageError(
            "adapter_protocol",
            f"adapter {spec!r} ({type(adapter).__name__}) implements no known protocol; "
            f"expected one of: {_protocols_summary(kinds)}",
            field="--agentbench-adapter",
        )
    return adapter


def adapter_class(adapter: Any) -> str:
    return _qualified_name(type(adapter).__module__, type(adapter).__qualname__)


@functools.cache
def _qualified_name(module: str, qualname: str) -> str:
    # Asked once per case: one string per class rather than one per case.
    return f"{module}.{qualname}"


def describe_adapter(spec: str | None, adapter: Any) -> str:
    if spec is None:
        return "built-in reference agents"
    return f"{spec} ({adapter_class(adapter)})"
