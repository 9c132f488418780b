from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.worlds.retrieval import fixture
from pytest_agentbench.worlds.retrieval.agent import FixtureAgent, gno_cues
from pytest_agentbench.worlds.retrieval.backends import LexicalBackend
from pytest_agentbench.worlds.retrieval.harness import Harness
from pytest_agentbench.worlds.retrieval.models import Oracle
from tests.worlds.retrieval.helpers import write_small


class Small:
    """The three-task fixture, loaded, with a harness over the lexical backend."""

    def __init__(self, root: Path) -> None:
        self.root = write_small(root)
        self.public = fixture.load_public(self.root, "fx")
        self.oracles: dict[str, Oracle] = fixture.load_hidden(
            self.public, self.root / "oracles", "fx/oracles"
        )
        self.harness = Harness(self.public, gno_cues())
        self.backend = LexicalBackend()

    def receipt(self, task_id: str, agent: Any = None, lifecycle: str = "cold") -> dict[str, Any]:
        run = self.harness.run(task_id, lifecycle, self.backend, agent or FixtureAgent())
        return copy.deepcopy(run.canonical)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Small:
    return Small(tmp_path_factory.mktemp("small") / "fx")


@pytest.fixture
def make_receipt(small: Small) -> Callable[..., dict[str, Any]]:
    return small.receipt
