"""The installed world entry points, remembered between processes.

Every pytest process of an environment with the plugin installed asks which
world kinds the installed distributions name (to learn their layout markers),
benchmarks or not. ``importlib.metadata.entry_points`` answers by reading and
parsing every distribution's ``entry_points.txt``: about 5 ms of CPU in an
environment of 130 distributions, more than half the idle plugin's budget.

The answer depends only on those files, so it is kept beside this module's
bytecode (``__pycache__``, written under the same rule as bytecode: not when
``sys.dont_write_bytecode`` is set) with a fingerprint of them: every
distribution's folder (each ``*.dist-info`` and ``*.egg-info`` of each
``sys.path`` folder, as the path finder lists them) and its
``entry_points.txt``'s modification time and size. Listing the folders and
stating one file each costs a tenth of reading them (listed with ``os``, not
through ``importlib.metadata.distributions``, whose distribution objects cost
three times as much), and an install, an upgrade, an uninstall, a reordered
``sys.path`` or an edited ``entry_points.txt`` all change the fingerprint.
Distributions that another finder could provide (a custom meta-path finder, a
zip archive or an egg folder on ``sys.path``) are not fingerprinted: then
nothing is cached and the entry points are read as before. A cache that is
missing, unreadable or stale is read past, never trusted.

A pytest session asks twice (the suite finder for the layouts, then the benchmark
plugin for the entry points): it holds one :class:`InstalledReading`, which takes the
fingerprint and reads the kept document once for both.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import weakref
from collections.abc import Sequence
from importlib.machinery import PathFinder
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    import pluggy

CACHE_FOLDER = Path(__file__).parent / "__pycache__"
CACHE_FORMAT = 3
"""2: the folders as listed by ``os`` (1 named them as ``importlib.metadata`` did);
3: with the worlds' layout markers (:func:`kept_layouts`)."""

Fingerprint = list[list[object]]

_METADATA_SUFFIXES = (".dist-info", ".egg-info")


def _fingerprint() -> Fingerprint | None:
    """Each distribution's folder and its ``entry_points.txt``'s mtime and size, or None."""
    for finder in sys.meta_path:
        if getattr(finder, "find_distributions", None) is not None and finder is not PathFinder:
            return None
    rows: Fingerprint = []
    for entry in sys.path:
        root = entry or "."
        try:
            names = os.listdir(root)
        except NotADirectoryError:
            return None  # a zip archive: its distributions are not files of their own
        except OSError:
            continue  # missing or unreadable: the path finder finds nothing there either
        if root.lower().endswith(".egg"):
            return None  # an egg's EGG-INFO is found by another rule
        for name in names:
            if not name.lower().endswith(_METADATA_SUFFIXES):
                continue
            # A string join: a Path per distribution would double the fingerprint's cost.
            folder = f"{entry}{os.sep}{name}" if entry else name
            try:
                stat = os.stat(f"{folder}{os.sep}entry_points.txt")
            except OSError:
                rows.append([folder, None, None])
            else:
                rows.append([folder, stat.st_mtime_ns, stat.st_size])
    return rows


def cache_file() -> Path:
    """This environment's cache file (one per ``sys.prefix``: an editable install is shared)."""
    digest = hashlib.sha256(sys.prefix.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return CACHE_FOLDER / f"entry-points-{digest}.json"


def _document(path: Path, fingerprint: Fingerprint) -> dict[str, Any] | None:
    """The kept document when it is this format's and its fingerprint is ``fingerprint``."""
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("format") != CACHE_FORMAT:
        return None
    if kept.get("fingerprint") != fingerprint:
        return None
    return kept


def _rows(kept: dict[str, Any] | None, group: str) -> list[tuple[str, str]] | None:
    """The kept (name, value) rows of ``group``'s entry points, or None when not kept."""
    if kept is None:
        return None
    named = kept.get("groups", {}).get(group) if isinstance(kept.get("groups"), dict) else None
    if not isinstance(named, list):
        return None
    if not all(
        isinstance(row, list) and len(row) == 2 and all(isinstance(part, str) for part in row)
        for row in named
    ):
        return None
    return [(row[0], row[1]) for row in named]


def _write(path: Path, fingerprint: Fingerprint, member: str, group: str, value: object) -> None:
    """Keep ``value`` as ``member[group]``, beside what the document already holds for the
    same fingerprint."""
    if sys.dont_write_bytecode:
        return
    document = _document(path, fingerprint) or {"format": CACHE_FORMAT, "fingerprint": fingerprint}
    if not isinstance(document.get(member), dict):
        document[member] = {}
    document[member][group] = value
    scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(exist_ok=True)
        scratch.write_text(json.dumps(document, sort_keys=True), encoding="utf-8")
        # Atomic: an xdist worker reading concurrently sees the old file or the new one.
        os.replace(scratch, path)
    except OSError:
        # A read-only installation: every process reads the entry points itself.
        with contextlib.suppress(OSError):
            scratch.unlink()


Layouts = dict[str, dict[str, list[list[str]]]]
"""Per entry point name: each world kind its module registers and that kind's layout
marker sets."""


def _file_row(path: str) -> list[object] | None:
    """``[path, mtime_ns, size]``, as a fingerprint row tells a change; None if not stat-able."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [path, stat.st_mtime_ns, stat.st_size]


def _package_file(module_name: str) -> str | None:
    """The file of the imported top-level package of ``module_name``: which copy of it runs."""
    package = sys.modules.get(module_name.partition(".")[0])
    file = getattr(package, "__file__", None)
    return file if isinstance(file, str) else None


class InstalledReading:
    """The installation as one reader sees it: its fingerprint taken, and the kept document
    read, once however often it is asked (for the entry points, for the layouts). A reader
    that must see a change made since (an installation, an edited registration) takes a
    new reading.

    What the reader writes is merged with the document then on disk, as every writer's is.
    """

    def __init__(self) -> None:
        self.fingerprint = _fingerprint()
        self._kept: dict[str, Any] | None = None
        self._read = False

    def document(self) -> dict[str, Any] | None:
        """The kept document of this fingerprint, read on first use; None when not kept."""
        if not self._read and self.fingerprint is not None:
            self._kept = _document(cache_file(), self.fingerprint)
            self._read = True
        return self._kept

    def group_entry_points(self, group: str) -> list[EntryPoint]:
        """The installed entry points of ``group``, by name, read from the cache when it
        holds."""
        fingerprint = self.fingerprint
        if fingerprint is None:
            return sorted(entry_points(group=group), key=lambda ep: ep.name)
        named = _rows(self.document(), group)
        if named is None:
            ordered = sorted(entry_points(group=group), key=lambda ep: ep.name)
            named = [(ep.name, ep.value) for ep in ordered]
            _write(cache_file(), fingerprint, "groups", group, [list(row) for row in named])
            self._read = False  # the document changed: read again when next asked
        return [EntryPoint(name, value, group) for name, value in named]

    def keep_layouts(self, group: str, layouts: Layouts, modules: Sequence[ModuleType]) -> None:
        """Remember what the entry points of ``group`` registered (``layouts``), read from
        ``modules``: valid while the entry points, those modules' files and the files of
        their top-level packages (which copy of the code is imported) stay as they are.

        The registration modules must declare their layout markers from their own text
        (literals), as the built-in worlds do: a marker computed from another file is not
        seen to change.
        """
        fingerprint = self.fingerprint
        if fingerprint is None:
            return
        sources = []
        packages = []
        for module in modules:
            file = getattr(module, "__file__", None)
            row = _file_row(file) if isinstance(file, str) else None
            package = _package_file(module.__name__)
            if row is None or package is None:
                return  # a module without a file of its own: nothing to tell a change by
            sources.append(row)
            packages.append([module.__name__, package])
        kept = {"entry_points": layouts, "sources": sources, "packages": packages}
        _write(cache_file(), fingerprint, "layouts", group, kept)
        self._read = False  # the document changed: read again when next asked

    def kept_layouts(self, group: str) -> Layouts | None:
        """What :meth:`keep_layouts` remembered for ``group``, or ``None`` when it did not or
        anything it was read from changed since (then the entry points are loaded)."""
        document = self.document()
        layouts = document.get("layouts") if document is not None else None
        kept = layouts.get(group) if isinstance(layouts, dict) else None
        if not isinstance(kept, dict):
            return None
        sources, packages = kept.get("sources"), kept.get("packages")
        if not isinstance(sources, list) or not isinstance(packages, list):
            return None
        for row in sources:
            if not (isinstance(row, list) and row and isinstance(row[0], str)):
                return None
            if _file_row(row[0]) != row:
                return None
        for row in packages:
            if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], str)):
                return None
            if _package_file(row[0]) != row[1]:
                return None
        entries = kept.get("entry_points")
        return entries if _is_layouts(entries) else None


_READINGS: weakref.WeakKeyDictionary[pluggy.PluginManager, InstalledReading] = (
    weakref.WeakKeyDictionary()
)


def installed_reading(pluginmanager: pluggy.PluginManager) -> InstalledReading:
    """The installation as ``pluginmanager``'s session reads it: its fingerprint taken and
    its kept document read once, for the layout markers and for the entry points alike."""
    reading = _READINGS.get(pluginmanager)
    if reading is None:
        reading = _READINGS[pluginmanager] = InstalledReading()
    return reading


def _is_layouts(value: object) -> TypeGuard[Layouts]:
    """Whether a kept value has the shape of :data:`Layouts` (a hand-edited cache may not)."""
    if not isinstance(value, dict):
        return False
    for kinds in value.values():
        if not isinstance(kinds, dict):
            return False
        for kind, sets in kinds.items():
            if not isinstance(kind, str) or not isinstance(sets, list):
                return False
            for markers in sets:
                if not isinstance(markers, list) or not all(isinstance(m, str) for m in markers):
                    return False
    return True
