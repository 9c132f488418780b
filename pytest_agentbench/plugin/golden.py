"""The syrupy extension that pins golden outputs (:mod:`~pytest_agentbench.plugin.snapshots`).

A module of its own so that only a run pinning golden outputs imports syrupy's
JSON extension: :func:`~pytest_agentbench.plugin.snapshots.assert_golden` imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from syrupy.extensions.json import JSONSnapshotExtension

from pytest_agentbench.plugin.snapshots import CONTROL_NAMES, CONTROLS_STEM, SNAPSHOT_DIR_KEY
from pytest_agentbench.sdk.files import MAX_NAME_BYTES

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation

    from pytest_agentbench.run.session import LoadedSuite

_NAME_PROBLEMS = "agentbench.golden_name_problems"
"""``Suite.cache`` key: :meth:`GoldenOutputExtension.name_problems`."""


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
