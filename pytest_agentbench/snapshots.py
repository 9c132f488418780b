"""Golden outputs pinned with syrupy under ``snapshots/<suite-id>/``.

Each case's canonical adapter output (and each control's metric report) is one
JSON snapshot file. The folder below the suite id is the stem of the file the
item came from, which is how syrupy relates a snapshot to its items when it
reports and deletes unused snapshots.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from pytest_agentbench.canonical import JsonValue

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation

SNAPSHOT_DIR_KEY = pytest.StashKey[Path]()
# syrupy colours its diff per character; failure text (and JUnit messages) must stay plain.
_ANSI_STYLE = re.compile(r"\x1b\[[0-9;]*m")


class GoldenMismatch(Exception):
    def __init__(self, diff: str) -> None:
        super().__init__(diff)
        self.diff = diff


class GoldenOutputExtension(JSONSnapshotExtension):
    """JSON snapshots in the configured top-level folder, one sub-folder per suite."""

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        item = test_location.item
        root = item.config.stash[SNAPSHOT_DIR_KEY]
        # Only agentbench items pin golden outputs; each carries its loaded suite.
        loaded = getattr(item, "loaded", None)
        assert loaded is not None, f"{item.nodeid} is not an agentbench item"
        return str(root / loaded.suite.id / test_location.basename)


def assert_golden(request: pytest.FixtureRequest, data: JsonValue) -> None:
    """Compare ``data`` with the pinned snapshot; ``--snapshot-update`` re-pins it."""
    snapshot: Any = request.getfixturevalue("snapshot")
    golden = snapshot.use_extension(GoldenOutputExtension)
    if not golden == data:  # noqa: SIM201 - syrupy records the assertion in __eq__
        diff = "\n".join(golden.get_assert_diff())
        raise GoldenMismatch(_ANSI_STYLE.sub("", diff))
