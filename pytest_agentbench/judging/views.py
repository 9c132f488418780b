"""Judged views: the document a world builds of a case for its judges to read.

A rubric judges what its content shows. A case's recorded output often holds
references rather than what they refer to (a citation's line numbers and
hashes, a message's fixture id), so a rubric may name a ``view`` its world
builds of the case: the retrieval world's ``claims-with-cited-lines`` puts the
cited lines' text beside each claim, the operations world's ``messages-sent``
puts each message's text beside its recipient and the case's outcome.

A world offers views with a method (no import of this module needed)::

    def judged_view(self, name: str, suite: Suite, case_id: str, output: JsonValue) -> JsonValue

raising ``unknown_judged_view`` for a name it does not build. The suite is
loaded by the world's own ``load_suite`` from its folder's ``suite.yaml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.sdk.registry import WorldRegistry
from pytest_agentbench.sdk.suite import Suite, load_suite_config
from pytest_agentbench.sdk.world import World


def load_folder_suite(world: World, folder: Path) -> Suite:
    """The suite in ``folder`` (its ``suite.yaml``), loaded by its world, as a run loads it."""
    display = str(folder)
    config = load_suite_config(folder / SUITE_FILE, f"{display}/{SUITE_FILE}")
    suite = Suite(config=config, root=folder, display_root=display)
    suite.data = world.load_suite(suite)
    return suite


@runtime_checkable
class BuildsJudgedViews(Protocol):
    def judged_view(self, name: str, suite: Suite, case_id: str, output: JsonValue) -> JsonValue:
        """The named view of the case's output; ``unknown_judged_view`` for another name."""
        ...


class SuiteViews:
    """The judged views of one suite's cases, its world and loaded suite found once."""

    def __init__(self, registry: WorldRegistry, kind: str, folder: Path | None) -> None:
        self.registry = registry
        self.kind = kind
        self.folder = folder
        self._loaded: tuple[BuildsJudgedViews, Suite] | None = None

    def view(self, name: str, case_id: str, output: JsonValue, *, rubric_file: str) -> JsonValue:
        world, suite = self._load(rubric_file)
        return world.judged_view(name, suite, case_id, output)

    def _load(self, rubric_file: str) -> tuple[BuildsJudgedViews, Suite]:
        if self._loaded is None:
            world = self.registry.get(self.kind, file=rubric_file)
            if not isinstance(world, BuildsJudgedViews):
                raise AgentbenchError(
                    "unknown_judged_view",
                    f"world kind {self.kind!r} builds no judged views",
                    file=rubric_file,
                    field="rubric.view",
                )
            if self.folder is None or not (self.folder / SUITE_FILE).is_file():
                raise AgentbenchError(
                    "judged_view_unavailable",
                    "the rubric judges a view its world builds from the suite, and the "
                    "suite's folder (with its suite.yaml) is not found: run from the project "
                    "folder that holds suites/<suite-id>",
                    file=rubric_file,
                    field="rubric.view",
                )
            self._loaded = (world, load_folder_suite(world, self.folder))
        return self._loaded
