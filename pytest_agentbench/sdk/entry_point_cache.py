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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from importlib.machinery import PathFinder
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

CACHE_FOLDER = Path(__file__).parent / "__pycache__"
CACHE_FORMAT = 2
"""2: the folders as listed by ``os`` (1 named them as ``importlib.metadata`` did)."""

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


def _read(path: Path, fingerprint: Fingerprint, group: str) -> list[tuple[str, str]] | None:
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("format") != CACHE_FORMAT:
        return None
    if kept.get("fingerprint") != fingerprint:
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


def _write(path: Path, fingerprint: Fingerprint, group: str, named: list[tuple[str, str]]) -> None:
    if sys.dont_write_bytecode:
        return
    document = {
        "format": CACHE_FORMAT,
        "fingerprint": fingerprint,
        "groups": {group: [list(row) for row in named]},
    }
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


def group_entry_points(group: str) -> list[EntryPoint]:
    """The installed entry points of ``group``, by name, read from the cache when it holds."""
    fingerprint = _fingerprint()
    if fingerprint is None:
        return sorted(entry_points(group=group), key=lambda ep: ep.name)
    path = cache_file()
    named = _read(path, fingerprint, group)
    if named is None:
        ordered = sorted(entry_points(group=group), key=lambda ep: ep.name)
        named = [(ep.name, ep.value) for ep in ordered]
        _write(path, fingerprint, group, named)
    return [EntryPoint(name, value, group) for name, value in named]
