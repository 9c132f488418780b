"""Where the built-in suites live: in the wheel, or in a source checkout."""

from __future__ import annotations

from pathlib import Path

from pytest_agentbench.suite import SUITE_FILE

_PACKAGE = Path(__file__).resolve().parent


def data_root() -> Path:
    """The folder holding ``suites/`` and ``oracles/``.

    A wheel carries them as package data under ``_data``; an editable install
    or a source checkout reads the repository's top-level folders.
    """
    bundled = _PACKAGE / "_data"
    return bundled if (bundled / "suites").is_dir() else _PACKAGE.parent


def suites_dir() -> Path:
    return data_root() / "suites"


def packaged_suites() -> dict[str, Path]:
    """Suite id (its folder name) -> suite folder, for every built-in suite."""
    root = suites_dir()
    if not root.is_dir():
        return {}
    return {path.parent.name: path.parent for path in sorted(root.glob(f"*/{SUITE_FILE}"))}
