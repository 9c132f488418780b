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
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import MAX_NAME_BYTES
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
    def __init__(self, diff: str, detail: str = "differs from the pinned snapshot") -> None:
        super().__init__(diff)
        self.diff = diff
        self.detail = detail


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
    def name_problems(cls, loaded: LoadedSuite) -> dict[str, str]:
        """Case ids whose golden file is not theirs alone, or whose name no filesystem takes.

        syrupy drops the characters a file name cannot hold and cuts the name at 255
        characters: ``a/b`` and ``ab`` would share one golden file, each case passing
        against the other's output, and a long name in a script of several bytes per
        character fails as it is written. Each such id, with the refusal's reason.
        """
        suite = loaded.suite
        cached: dict[str, str] | None = suite.cache.get(_NAME_PROBLEMS)
        if cached is not None:
            return cached
        problems: dict[str, str] = {}
        owners: dict[tuple[str, str], str] = {}
        for case in loaded.world.cases(suite):
            name = f"{cls._file_stem(case.case_id)}.{cls.file_extension}"
            size = len(name.encode("utf-8", "surrogatepass"))
            if size > MAX_NAME_BYTES:
                problems[case.case_id] = (
                    f"case id {case.case_id!r}: its golden file name is {size} bytes, "
                    f"over {MAX_NAME_BYTES}"
                )
            owner = owners.setdefault((Path(case.file).stem, name), case.case_id)
            if owner != case.case_id:
                problems[owner] = problems[case.case_id] = (
                    f"case ids {owner!r} and {case.case_id!r} share the golden file {name!r}"
                )
        suite.cache[_NAME_PROBLEMS] = problems
        return problems

    @classmethod
    def _file_stem(cls, name: str) -> str:
        # The name syrupy gives a single-file snapshot of an item called ``name``.
        return cls._sanitize_filename(name)[: cls._max_stem_length()]


_NAME_PROBLEMS = "agentbench.golden_name_problems"
"""``Suite.cache`` key: :meth:`GoldenOutputExtension.name_problems`."""
_UNPINNED = pytest.StashKey[dict[str, bool]]()


def _unpinned(request: pytest.FixtureRequest) -> bool:
    """True when the item's suite has no golden file at all and none is being recorded.

    Such a suite (a built-in one run by id, say) has nothing to compare with, so
    its items are graded on their own checks; the fact is said once per suite and
    process, not once per item.
    """
    config = request.config
    loaded = getattr(request.node, "loaded", None)
    if loaded is None or config.getoption("update_snapshots", default=False):
        return False
    suite_id = loaded.suite.id
    known = config.stash.setdefault(_UNPINNED, {})
    if suite_id not in known:
        root = config.stash[SNAPSHOT_DIR_KEY] / suite_id
        known[suite_id] = not root.is_dir() or next(root.rglob("*.json"), None) is None
        if known[suite_id]:
            warnings.warn(
                pytest.PytestWarning(
                    f"agentbench: suite {suite_id!r} has no golden outputs under {root}; its "
                    "items were graded without them. Record them with --snapshot-update, or "
                    "turn snapshot mode off for this run with -o agentbench_snapshot=false."
                ),
                stacklevel=1,
            )
    return known[suite_id]


def assert_golden(request: pytest.FixtureRequest, data: JsonValue) -> None:
    """Compare ``data`` with the pinned snapshot; ``--snapshot-update`` re-pins it.

    A suite with no golden file at all is not compared (see :func:`_unpinned`).
    """
    loaded = getattr(request.node, "loaded", None)
    case = getattr(request.node, "case", None)
    if loaded is not None and case is not None:
        problem = GoldenOutputExtension.name_problems(loaded).get(case.case_id)
        if problem is not None:
            refusal = AgentbenchError(
                "unusable_snapshot_name", problem, file=loaded.suite.display(case.file)
            ).render()
            raise GoldenMismatch(refusal, detail=refusal)
    if _unpinned(request):
        return
    snapshot: Any = request.getfixturevalue("snapshot")
    golden = snapshot.use_extension(GoldenOutputExtension)
    if not golden == data:  # noqa: SIM201 - syrupy records the assertion in __eq__
        diff = "\n".join(golden.get_assert_diff())
        raise GoldenMismatch(_ANSI_STYLE.sub("", diff))
