"""Golden outputs pinned with syrupy under ``snapshots/<suite-id>/``.

Each case's canonical adapter output (and each control's metric report) is one
JSON snapshot file. The folder below the suite id is the stem of the file the
item came from, which is how syrupy relates a snapshot to its items when it
reports and deletes unused snapshots.

syrupy matches snapshot names to items by their leading Python identifier, and
every case id such as ``evt-010-...`` reduces to ``evt``; nor does it relate a
node id given on the command line to a snapshot folder outside the suite. So a
partial run (node ids, ``--deselect``, ``--lf``) would call every other case's
golden file unused, and ``--snapshot-update`` would delete it. The extension
therefore never offers syrupy the golden file of an item that still exists in
the suite: only files no current item can claim are candidates for "unused".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.layout import SUITE_FILE

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation

    from pytest_agentbench.run.session import LoadedSuite

SNAPSHOT_DIR_KEY = pytest.StashKey[Path]()
CONTROL_NAMES = "agentbench.control_names"
"""``Suite.cache`` key: the suite's control item names, set when ``suite.yaml`` is collected."""
CONTROLS_STEM = Path(SUITE_FILE).stem
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

    def owns_snapshot_collection(self, *, filepath: str, test_location: PyTestLocation) -> bool:
        if not super().owns_snapshot_collection(filepath=filepath, test_location=test_location):
            return False
        loaded = getattr(test_location.item, "loaded", None)
        if loaded is None:
            return True
        root = test_location.item.config.stash[SNAPSHOT_DIR_KEY] / loaded.suite.id
        return Path(filepath) not in self._current_files(root, loaded)

    @classmethod
    def _current_files(cls, root: Path, loaded: LoadedSuite) -> frozenset[Path]:
        """The golden files of every item the suite has now, selected or not."""
        suite = loaded.suite
        key = f"agentbench.golden_files:{root}"
        cached: frozenset[Path] | None = suite.cache.get(key)
        if cached is not None:
            return cached
        names: list[tuple[str, str]] = [
            (Path(case.file).stem, case.case_id) for case in loaded.world.cases(suite)
        ]
        control_names = suite.cache.get(CONTROL_NAMES)
        files = {
            root / stem / f"{cls._file_stem(name)}.{cls.file_extension}" for stem, name in names
        }
        if control_names is None:
            # suite.yaml was not collected: no control is in scope, so none of its
            # golden files can be judged unused.
            files.update((root / CONTROLS_STEM).glob(f"*.{cls.file_extension}"))
        else:
            files.update(
                root / CONTROLS_STEM / f"{cls._file_stem(name)}.{cls.file_extension}"
                for name in control_names
            )
        result = frozenset(files)
        suite.cache[key] = result
        return result

    @classmethod
    def _file_stem(cls, name: str) -> str:
        # The name syrupy gives a single-file snapshot of an item called ``name``.
        return cls._sanitize_filename(name)[: cls._max_stem_length()]


def assert_golden(request: pytest.FixtureRequest, data: JsonValue) -> None:
    """Compare ``data`` with the pinned snapshot; ``--snapshot-update`` re-pins it."""
    snapshot: Any = request.getfixturevalue("snapshot")
    golden = snapshot.use_extension(GoldenOutputExtension)
    if not golden == data:  # noqa: SIM201 - syrupy records the assertion in __eq__
        diff = "\n".join(golden.get_assert_diff())
        raise GoldenMismatch(_ANSI_STYLE.sub("", diff))
