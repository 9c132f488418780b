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
(:mod:`~pytest_agentbench.plugin.golden`) therefore never offers syrupy the
golden file of an item that still exists in the suite: only files no current
item can claim are candidates for "unused".
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.layout import SUITE_FILE

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
    # Imported here: a run that pins no golden output imports no syrupy extension.
    from pytest_agentbench.plugin.golden import GoldenOutputExtension

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
