"""The world kinds known to this process, gathered through the pluggy hook.

Importing this module and building a registry of lazy worlds imports neither
pydantic nor any world: the plugin asks it for layout markers in every pytest
run that collects files, benchmarks or not. For the same reason its records
are named tuples, a tenth of the cost of frozen dataclasses to make.
"""

from __future__ import annotations

import inspect
import os
import weakref
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import EntryPoint
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple

import pluggy

from pytest_agentbench.sdk import hookspecs
from pytest_agentbench.sdk.entry_point_cache import installed_reading
from pytest_agentbench.sdk.errors import AgentbenchError, describe_exception
from pytest_agentbench.sdk.hookspecs import PLUGIN_PREFIX
from pytest_agentbench.sdk.layout import CONTAINING, SUITE_FILE

if TYPE_CHECKING:
    from pytest_agentbench.sdk.suite import SuiteConfig
    from pytest_agentbench.sdk.world import World

MarkerSets = tuple[tuple[str, ...], ...]


_SCANNED: weakref.WeakSet[pluggy.PluginManager] = weakref.WeakSet()
"""Plugin managers whose entry-point worlds are registered (the scan is asked for twice
in a run that collection turns on: for layout markers, then by the benchmark plugin)."""


HOOK_PREFIX = "pytest_agentbench_"


class WorldPluginManager(pluggy.PluginManager):
    """The hooks of world kinds, read outside pytest exactly as pytest reads them.

    pytest's own plugin manager takes an unmarked function named ``pytest_*``
    as a hook implementation; a bare pluggy manager would silently ignore it,
    and the ``agentbench`` command would then know no world that pytest runs.
    """

    def __init__(self) -> None:
        super().__init__("pytest")
        self.add_hookspecs(hookspecs)

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        opts = super().parse_hookimpl_opts(plugin, name)
        unmarked = opts is None and name.startswith(HOOK_PREFIX)
        if unmarked and inspect.isroutine(getattr(plugin, name)):
            return pluggy.HookimplOpts(
                wrapper=False,
                hookwrapper=False,
                optionalhook=False,
                tryfirst=False,
                trylast=False,
                specname=None,
            )
        return opts


_BROKEN: weakref.WeakKeyDictionary[pluggy.PluginManager, dict[str, str]] = (
    weakref.WeakKeyDictionary()
)
"""Per plugin manager: each world plugin that did not load, by name, and what it raised."""


def load_entry_point_worlds(pluginmanager: pluggy.PluginManager) -> None:
    """Register every module named under the ``pytest_agentbench.worlds`` entry-point group.

    An entry point that does not import (or register) is noted as broken rather than
    raised: one stale installed world must not break every pytest session of the
    environment, nor the other worlds' suites (:attr:`WorldRegistry.broken`).
    """
    if pluginmanager in _SCANNED:
        return
    broken = _BROKEN.setdefault(pluginmanager, {})
    for entry_point in installed_reading(pluginmanager).group_entry_points(
        hookspecs.ENTRY_POINT_GROUP
    ):
        name = f"{PLUGIN_PREFIX}{entry_point.name}"
        if pluginmanager.get_plugin(name) is None and not pluginmanager.is_blocked(name):
            try:
                pluginmanager.register(entry_point.load(), name=name)
            except Exception as exc:
                broken[entry_point.name] = (
                    f"entry point {entry_point.value} raised {describe_exception(exc)}"
                )
    _SCANNED.add(pluginmanager)


def installed_registry(*plugins: object) -> WorldRegistry:
    """Every installed world kind (entry points), and ``plugins``, read as pytest reads them."""
    manager = WorldPluginManager()
    load_entry_point_worlds(manager)
    for plugin in plugins:
        manager.register(plugin)
    return WorldRegistry.from_hook(manager)


class LazyWorld:
    """A world kind registered by name, its module imported when first needed.

    ``target`` is ``"module:attribute"`` naming the World object. A session
    that runs no suite of the kind never imports it. ``layout_markers`` are the
    marker sets of the published layouts the world recognises (see
    :class:`~pytest_agentbench.sdk.world.RecognisesLayout`): the module is imported
    to recognise a folder only when the folder holds every file of one set.
    ``adapter_protocols`` name, as ``"module:attribute"``, the protocols the
    world accepts (its ``adapter_protocol`` first, as
    :func:`~pytest_agentbench.sdk.world.accepted_protocols` lists them), so that
    an ``--agentbench-adapter`` is checked against every kind by importing
    those modules only; a world that declares none is imported for the check.
    ``rubric_roots`` are absolute folders of the judge rubrics (``*.yaml``) the
    world ships for every suite of its kind (``agentbench judge``).
    ``suite_roots`` are absolute folders holding the suites the world ships,
    one ``<suite-id>/suite.yaml`` each (with the oracle, by default, at
    ``../../oracles/<suite-id>``): ``--agentbench-suite ID``, ``agentbench list``
    and the conformance kit find them there. A registration module names them
    from its own location, e.g. ``Path(__file__).parent / "suites"``.
    """

    def __init__(
        self,
        kind: str,
        target: str,
        *,
        layout_markers: Sequence[Sequence[str]] = (),
        adapter_protocols: Sequence[str] = (),
        suite_roots: Sequence[str | os.PathLike[str]] = (),
        rubric_roots: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        self.kind = kind
        self.target = target
        self.layout_markers = checked_markers(kind, layout_markers)
        self.adapter_protocols = checked_protocol_targets(kind, adapter_protocols)
        self.suite_roots = checked_suite_roots(kind, suite_roots)
        self.rubric_roots = checked_suite_roots(kind, rubric_roots, field="rubric_roots")
        self._world: World | None = None
        self._protocols: tuple[type, ...] | None = None

    def resolve(self, *, file: str | None = None) -> World:
        """The World object; ``world_load_failed`` if it does not import as registered."""
        if self._world is None:
            world: World = _load(self.kind, self.target, file=file, field="world")
            if getattr(world, "kind", None) != self.kind:
                raise AgentbenchError(
                    "world_load_failed",
                    f"{self.target} is not world kind {self.kind!r}, which it is registered as",
                    file=file,
                    field="world",
                )
            if self.adapter_protocols:
                self._check_declared_protocols(world, file=file)
            self._world = world
        return self._world

    def _check_declared_protocols(self, world: World, *, file: str | None) -> None:
        """The declared protocols are the world's own: else adapters are judged twice, apart."""
        declared, accepted = self.protocols(), _accepted_protocols(world)
        # Compared by name: a module imported afresh (pytester restores sys.modules
        # after an in-process run) makes a new class object of the same protocol.
        if _qualified(declared) != _qualified(accepted):
            names = [" or ".join(p.__name__ for p in found) for found in (declared, accepted)]
            raise AgentbenchError(
                "world_load_failed",
                f"world kind {self.kind!r} is registered accepting {names[0]} but "
                f"{self.target} accepts {names[1]}",
                file=file,
                field="adapter_protocols",
            )

    def protocols(self) -> tuple[type, ...]:
        """The declared adapter protocols, importing their modules but not the world's.

        ``world_load_failed`` if one does not import or is not a class.
        """
        if self._protocols is None:
            if self.adapter_protocols:
                self._protocols = tuple(self._protocol(target) for target in self.adapter_protocols)
            else:
                self._protocols = _accepted_protocols(self.resolve())
        return self._protocols

    def _protocol(self, target: str) -> type:
        protocol = _load(self.kind, target, file=None, field="adapter_protocols")
        if not isinstance(protocol, type):
            raise AgentbenchError(
                "world_load_failed",
                f"world kind {self.kind!r}: adapter protocol {target} is not a class",
                field="adapter_protocols",
            )
        return protocol


def _accepted_protocols(world: World) -> tuple[type, ...]:
    # Imported here: pytest_agentbench.sdk.world imports the contracts (pydantic), and
    # the registry is built in runs that have nothing to do with benchmarks.
    from pytest_agentbench.sdk.world import accepted_protocols

    return accepted_protocols(world)


def _qualified(protocols: tuple[type, ...]) -> list[str]:
    return [f"{protocol.__module__}.{protocol.__qualname__}" for protocol in protocols]


def _load(kind: str, target: str, *, file: str | None, field: str) -> Any:
    """The object ``target`` ("module:attr") names; ``world_load_failed`` if it does not import."""
    # The entry-point machinery already parses and imports "module:attr".
    entry_point = EntryPoint(name=kind, value=target, group=hookspecs.ENTRY_POINT_GROUP)
    try:
        return entry_point.load()
    except Exception as exc:
        raise AgentbenchError(
            "world_load_failed",
            f"world kind {kind!r}: importing {target} raised {describe_exception(exc)}",
            file=file,
            field=field,
        ) from None


def checked_kinds(provided: Any) -> list[World | LazyWorld]:
    """What a world plugin's hook returned, as a list of worlds (each with a string ``kind``)."""
    worlds = list(provided)
    for world in worlds:
        if not isinstance(getattr(world, "kind", None), str):
            raise TypeError(f"{world!r} is not a world (it has no kind)")
    return worlds


def checked_protocol_targets(kind: str, targets: Sequence[str]) -> tuple[str, ...]:
    """Protocol targets as a tuple, each a ``"module:attribute"`` string."""
    if isinstance(targets, str) or not all(_is_target(target) for target in targets):
        raise AgentbenchError(
            "invalid_adapter_protocols",
            f"world kind {kind!r}: adapter protocols are a sequence of 'module:attribute' strings",
            field="adapter_protocols",
        )
    return tuple(targets)


def _is_target(target: object) -> bool:
    """Whether ``target`` is a dotted module path, a colon and a dotted attribute path."""
    if not isinstance(target, str):
        return False
    module, sep, attribute = target.partition(":")
    names = [*module.split("."), *attribute.split(".")]
    return bool(sep) and all(name.isidentifier() for name in names)


def checked_suite_roots(
    kind: str, roots: Sequence[str | os.PathLike[str]], *, field: str = "suite_roots"
) -> tuple[Path, ...]:
    """Suite (or rubric) roots as absolute paths; a relative one would depend on the working
    directory."""
    if isinstance(roots, (str, os.PathLike)):
        roots = (roots,)
    checked = []
    for root in roots:
        if not isinstance(root, (str, os.PathLike)) or not Path(root).is_absolute():
            raise AgentbenchError(
                "invalid_suite_roots",
                f"world kind {kind!r}: {field} entry {root!r} is not an absolute path "
                "(name it from the registration module, e.g. Path(__file__).parent / 'suites')",
                field=field,
            )
        checked.append(Path(root))
    return tuple(checked)


def checked_markers(kind: str, marker_sets: Sequence[Sequence[str]]) -> MarkerSets:
    """Marker sets as tuples; each path relative, inside the folder, and each set non-empty."""
    if any(isinstance(markers, str) for markers in marker_sets):
        raise AgentbenchError(
            "invalid_layout_markers",
            f"world kind {kind!r}: layout markers are a sequence of marker sets, "
            "each a sequence of paths",
        )
    checked = tuple(tuple(markers) for markers in marker_sets)
    for markers in checked:
        if not markers:
            raise AgentbenchError(
                "invalid_layout_markers",
                f"world kind {kind!r}: a marker set must be a non-empty sequence of paths",
            )
        for marker in markers:
            named = marker.partition(CONTAINING)[0]
            path = PurePosixPath(named)
            if not named or path.is_absolute() or ".." in path.parts or "\\" in named:
                raise AgentbenchError(
                    "invalid_layout_markers",
                    f"world kind {kind!r}: marker {marker!r} is not a relative path in the folder",
                )
    return checked


class KindProtocols(NamedTuple):
    """The adapter protocols one world kind accepts, its primary one first."""

    kind: str
    protocols: tuple[type, ...]

    @property
    def names(self) -> str:
        return " or ".join(protocol.__name__ for protocol in self.protocols)

    def accepts(self, adapter: object) -> bool:
        return any(isinstance(adapter, protocol) for protocol in self.protocols)


class Recognition(NamedTuple):
    """A folder a world claimed as its original's layout."""

    config: SuiteConfig
    anchor: str
    """The marker file (relative to the folder) that carries the suite's collector."""


_SNIFF_BYTES = 65536


def marker_files(folder: Path, marker: str) -> list[str]:
    """The files of ``folder`` a marker names: itself, or every match of a file-name pattern.

    A marker holding ``*``, ``?`` or ``[`` is a pattern over the names of the
    folder's own files (``*.yaml``), for layouts recognised by content rather
    than by a fixed file name. ``"*.yaml containing kind: scenarios:"`` keeps
    only files with a line starting with each of the words after
    ``containing`` in their first 64 KiB: a cheap look at the text, so a folder
    of unrelated data files neither imports the world nor gets parsed.
    """
    pattern, _, needles = marker.partition(CONTAINING)
    if not any(char in pattern for char in "*?["):
        found = [pattern] if (folder / pattern).is_file() else []
    else:
        found = sorted(path.name for path in folder.glob(pattern) if path.is_file())
    wanted = needles.split()
    return [name for name in found if not wanted or _starts_lines(folder / name, wanted)]


def _starts_lines(path: Path, wanted: list[str]) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    lines = head.splitlines()
    return all(any(line.startswith(word) for line in lines) for word in wanted)


def _matching_set(folder: Path, marker_sets: MarkerSets) -> tuple[str, ...] | None:
    """The first set every marker of which names a file, its patterns resolved to their first."""
    for markers in marker_sets:
        found = [marker_files(folder, marker) for marker in markers]
        if all(found):
            return tuple(files[0] for files in found)
    return None


def _shown_from(error: AgentbenchError, folder: Path, display: str) -> AgentbenchError:
    """``error``, a file in ``folder`` it names shown as the folder is (relative, usually)."""
    named = error.location.file
    if named is None:
        return error
    try:
        inside = Path(named).relative_to(folder)
    except ValueError:
        return error
    return AgentbenchError(
        error.code,
        error.reason,
        file=f"{display}/{inside.as_posix()}",
        line=error.location.line,
        field=error.location.field,
    )


class WorldRegistry:
    """World kinds by name; a kind registered twice is refused."""

    def __init__(
        self, worlds: Iterable[World | LazyWorld], *, broken: Mapping[str, str] | None = None
    ) -> None:
        self._worlds: dict[str, World | LazyWorld] = {}
        self._suites: dict[str, Path] | None = None
        self.broken: dict[str, str] = dict(broken or {})
        """World plugins that did not load, by name (an entry point's, usually the kind it
        registers), and what they raised: the suites of those kinds alone are refused."""
        for world in worlds:
            if world.kind in self._worlds and self._worlds[world.kind] is not world:
                raise AgentbenchError(
                    "duplicate_world_kind", f"world kind {world.kind!r} is registered twice"
                )
            self._worlds[world.kind] = world

    @classmethod
    def from_hook(cls, pluginmanager: pluggy.PluginManager) -> WorldRegistry:
        """Every registered plugin's world kinds; a plugin whose hook raises is noted broken."""
        broken = dict(_BROKEN.get(pluginmanager, {}))
        worlds: list[World | LazyWorld] = []
        # Each plugin's hook on its own (in pluggy's order), so one that raises costs
        # only its own kinds.
        for hookimpl in reversed(pluginmanager.hook.pytest_agentbench_world_kinds.get_hookimpls()):
            try:
                provided = checked_kinds(hookimpl.function())
            except Exception as exc:
                name = hookimpl.plugin_name.removeprefix(PLUGIN_PREFIX)
                broken[name] = f"its pytest_agentbench_world_kinds raised {describe_exception(exc)}"
                continue
            worlds.extend(provided)
        return cls(worlds, broken=broken)

    def get(self, kind: str, *, file: str | None = None) -> World:
        try:
            world = self._worlds[kind]
        except KeyError:
            if kind in self.broken:
                raise AgentbenchError(
                    "world_broken",
                    f"world kind {kind!r} did not load: {self.broken[kind]}",
                    file=file,
                    field="world",
                ) from None
            known = ", ".join(sorted(self._worlds)) or "none"
            broken = (
                f"; world plugins that did not load: {', '.join(sorted(self.broken))}"
                if self.broken
                else ""
            )
            raise AgentbenchError(
                "unknown_world_kind",
                f"world kind {kind!r} is not registered (known: {known}){broken}",
                file=file,
                field="world",
            ) from None
        return world.resolve(file=file) if isinstance(world, LazyWorld) else world

    def kinds(self) -> list[str]:
        return sorted(self._worlds)

    def packages(self) -> list[str]:
        """The top-level packages the registered worlds live in (none imported to say so)."""
        names = set()
        for entry in self._worlds.values():
            module = entry.target if isinstance(entry, LazyWorld) else type(entry).__module__
            names.add(module.partition(":")[0].partition(".")[0])
        return sorted(names)

    def adapter_protocols(self) -> list[KindProtocols]:
        """Every kind's accepted adapter protocols, importing no world that declares its own.

        A kind whose protocols do not load is left out and noted in :attr:`broken`: an
        adapter is judged against the others, and that kind's suites are refused as they
        load (``world_load_failed``), not the whole run.
        """
        found = []
        for kind in self.kinds():
            entry = self._worlds[kind]
            try:
                protocols = (
                    entry.protocols()
                    if isinstance(entry, LazyWorld)
                    else _accepted_protocols(entry)
                )
            except AgentbenchError as exc:
                self.broken.setdefault(kind, exc.reason)
                continue
            found.append(KindProtocols(kind, protocols))
        return found

    def marker_sets(self, kind: str) -> MarkerSets:
        """The layout marker sets a kind declares (none: it is never asked to recognise)."""
        entry = self._worlds[kind]
        if isinstance(entry, LazyWorld):
            return entry.layout_markers
        return checked_markers(kind, getattr(entry, "layout_markers", ()))

    def suite_roots(self, kind: str) -> tuple[Path, ...]:
        """The folders of suites a kind ships (none: it ships no suite runnable by id)."""
        entry = self._worlds[kind]
        if isinstance(entry, LazyWorld):
            return entry.suite_roots
        return checked_suite_roots(kind, getattr(entry, "suite_roots", ()))

    def rubric_roots(self, kind: str) -> tuple[Path, ...]:
        """The folders of judge rubrics a kind ships for all its suites (none: it ships none)."""
        entry = self._worlds.get(kind)
        if entry is None:
            return ()
        if isinstance(entry, LazyWorld):
            return entry.rubric_roots
        return checked_suite_roots(kind, getattr(entry, "rubric_roots", ()), field="rubric_roots")

    def suites(self) -> dict[str, Path]:
        """Suite id (its folder name) -> suite folder, for every suite a registered kind ships.

        Kinds may share a root (the built-in worlds do); one id in two different
        folders is refused as ``duplicate_suite_id``, naming both.
        """
        if self._suites is None:
            found: dict[str, Path] = {}
            roots = dict.fromkeys(root for kind in self.kinds() for root in self.suite_roots(kind))
            for root in roots:
                for path in sorted(root.glob(f"*/{SUITE_FILE}")) if root.is_dir() else ():
                    folder = path.parent
                    if found.setdefault(folder.name, folder) != folder:
                        raise AgentbenchError(
                            "duplicate_suite_id",
                            f"suite id {folder.name!r} is shipped twice: "
                            f"{found[folder.name]} and {folder}",
                            field="suite_roots",
                        )
            self._suites = found
        return self._suites

    def first_marker(self, folder: Path) -> str | None:
        """The first marker file of the first kind whose marker set ``folder`` holds."""
        for kind in self.kinds():
            markers = _matching_set(folder, self.marker_sets(kind))
            if markers is not None:
                return markers[0]
        return None

    def recognise(self, folder: Path, *, display: str | None = None) -> Recognition | None:
        """The one world kind that claims ``folder`` as its original's layout, if any.

        Every world whose marker files are all present is asked; a folder two
        kinds claim is refused as ``ambiguous_layout`` rather than given to
        whichever registered first.
        """
        from pytest_agentbench.sdk.suite import SuiteConfig
        from pytest_agentbench.sdk.world import RecognisesLayout

        display = display or folder.as_posix()
        claims: dict[str, Recognition] = {}
        for kind in self.kinds():
            markers = _matching_set(folder, self.marker_sets(kind))
            if markers is None:
                continue
            world = self.get(kind, file=display)
            if not isinstance(world, RecognisesLayout):
                raise AgentbenchError(
                    "world_load_failed",
                    f"world kind {kind!r} declares layout markers but has no recognise method",
                    file=display,
                )
            try:
                config = world.recognise(folder)
            except AgentbenchError as exc:
                raise _shown_from(exc, folder, display) from None
            except Exception as exc:
                raise AgentbenchError(
                    "world_load_failed",
                    f"world kind {kind!r}: recognising the folder raised {describe_exception(exc)}",
                    file=display,
                ) from None
            if config is None:
                continue
            if not isinstance(config, SuiteConfig) or config.world != kind:
                raise AgentbenchError(
                    "world_load_failed",
                    f"world kind {kind!r} claimed the folder with something other than "
                    "a SuiteConfig of its own kind",
                    file=display,
                )
            # A layout recognised by content names its own anchor (the file a
            # pattern marker matched first need not be the one that carries it).
            chosen = getattr(world, "layout_anchor", None)
            anchor = chosen(folder, config) if callable(chosen) else markers[0]
            claims[kind] = Recognition(config=config, anchor=anchor)
        if len(claims) > 1:
            raise AgentbenchError(
                "ambiguous_layout",
                f"claimed as their original layout by world kinds {', '.join(claims)}; "
                "add a suite.yaml naming the world",
                file=display,
            )
        return next(iter(claims.values()), None)
