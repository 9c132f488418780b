"""Where the built-in suites live: in the wheel, or in a source checkout."""

from __future__ import annotations

from pathlib import Path

from pytest_agentbench.sdk.layout import SUITE_FILE

_PACKAGE = Path(__file__).resolve().parent.parent


def data_root() -> Path:
    """The folder holding ``suites/`` and ``oracles/``.

    A wheel carries them as package data under ``_data``; an editable install
    or a source checkout reads the repository's top-level folders.
    """
    bundled = _PACKAGE / "_data"
    return bundled if (bundled / "suites").is_dir() else _PACKAGE.parent


SUITE_FOLDERS = ("suites", "suites-full")
"""``suites/`` is what the README's main command collects; ``suites-full/`` holds
built-in suites too large for it, run by id (``--agentbench-suite``)."""


def suites_dir() -> Path:
    return data_root() / "suites"


def packaged_suite_roots() -> tuple[Path, ...]:
    """The folders of the built-in suites, which the built-in worlds declare as ``suite_roots``."""
    return tuple(data_root() / folder for folder in SUITE_FOLDERS)


def packaged_suites() -> dict[str, Path]:
    """Suite id (its folder name) -> suite folder, for every built-in suite."""
    return {
        path.parent.name: path.parent
        for root in packaged_suite_roots()
        for path in sorted(root.glob(f"*/{SUITE_FILE}"))
    }
