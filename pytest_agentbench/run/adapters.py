"""Loading the system under test from a ``module:attr`` spec.

The attribute may be a class (built with no arguments), a factory (called with
no arguments) or a ready instance. Whatever it yields must satisfy the adapter
protocol of at least one registered world kind; each case then checks the
protocol of its own world and is skipped, naming the protocol, when it is lacking.

The module is found where ``python -m pytest`` would find it, and in the rootdir:
see :class:`AdapterFolders`.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import inspect
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
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


@dataclass(frozen=True)
class AdapterFolders:
    """Where an adapter's module is looked for before ``sys.path``, first to last.

    ``python -m pytest`` puts the invocation folder first on ``sys.path``, where the
    ``pytest`` command puts its own script's folder: a user's ``my_agent.py`` beside
    them imports under the one and not the other. The adapter's module is therefore
    looked for in the invocation folder, then in the rootdir (where the project's
    ``pytest.ini`` or ``pyproject.toml`` lies), then on ``sys.path``; a module already
    imported is used as it is. The folder it is found in is put first on ``sys.path``,
    as ``python -m`` would, so that the module's own imports of its neighbours work,
    and so that an isolated adapter's process and xdist's workers, which start from
    this process's ``sys.path`` or look again the same way, find it too.
    """

    invocation: Path
    rootdir: Path | None = None

    def folders(self) -> tuple[Path, ...]:
        found: list[Path] = []
        for folder in (self.invocation, self.rootdir):
            if folder is not None and folder.resolve() not in found:
                found.append(folder.resolve())
        return tuple(found)

    def describe(self) -> str:
        """The folders searched, for an error message: ``the invocation folder /a, ...``."""
        invocation = self.invocation.resolve()
        if self.rootdir is None:
            places = f"the invocation folder {invocation}"
        elif self.rootdir.resolve() == invocation:
            places = f"the invocation folder and rootdir {invocation}"
        else:
            places = f"the invocation folder {invocation}, the rootdir {self.rootdir.resolve()}"
        return f"{places} and sys.path"

    def put_on_path(self, module_name: str) -> Path | None:
        """Put the folder holding ``module_name``'s top-level package first on ``sys.path``.

        Nothing is imported: only the folders are searched. Returns the folder, or
        None when the module is already imported or lies in none of them (then
        ``sys.path`` alone decides).
        """
        top = module_name.partition(".")[0]
        if not top or top in sys.modules:
            return None
        for folder in self.folders():
            if importlib.machinery.PathFinder.find_spec(top, [str(folder)]) is not None:
                if not sys.path or sys.path[0] != str(folder):
                    sys.path.insert(0, str(folder))
                    importlib.invalidate_caches()
                return folder
        return None

    def not_found_hint(self, module_name: str) -> str:
        """``; searched ...`` when ``module_name``'s top-level package is found nowhere, else ''.

        Asks the import system's finders (no module is imported), so it holds for an
        isolated adapter too, whose process starts from this process's ``sys.path``.
        """
        top = module_name.partition(".")[0]
        if top in sys.modules or importlib.util.find_spec(top) is not None:
            return ""
        return f"; searched {self.describe()}"


def load_adapter(
    spec: str,
    kinds: Sequence[KindProtocols],
    folders: AdapterFolders | None = None,
    *,
    limit: float = 0.0,
) -> Any:
    """Import, build and check the adapter named by ``spec``; refusals are usage errors.

    ``kinds`` are the protocols of every world kind the adapter may serve
    (:meth:`~pytest_agentbench.sdk.registry.WorldRegistry.adapter_protocols`).
    ``folders``: where the module is looked for before ``sys.path``
    (:class:`AdapterFolders`); None looks on ``sys.path`` alone. With a
    ``limit`` (seconds; 0: none), an import or constructor that has not returned by then
    is the usage error ``adapter_load_timeout``: it is left to itself in a daemon thread,
    which cannot keep the process from ending, rather than hang the session silently.
    """
    if limit <= 0:
        return _load_adapter(spec, kinds, folders)
    outcome: list[tuple[bool, Any]] = []

    def load() -> None:
        try:
            outcome.append((True, _load_adapter(spec, kinds, folders)))
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


def _load_adapter(spec: str, kinds: Sequence[KindProtocols], folders: AdapterFolders | None) -> Any:
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise UsageError(
            "adapter_spec", f"{spec!r} is not 'module:attr'", field="--agentbench-adapter"
        )
    if folders is not None:
        folders.put_on_path(module_name)
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:
        hint = folders.not_found_hint(module_name) if folders is not None else ""
        raise UsageError(
            "adapter_import",
            f"cannot import module {module_name!r} of adapter {spec!r}: "
            f"{describe_exception(exc)}{hint}",
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
