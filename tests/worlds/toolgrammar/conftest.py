from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_agentbench.worlds.toolgrammar.domains import get_domain, register, unregister
from pytest_agentbench.worlds.toolgrammar.sandbox import Sandbox, built_world


@pytest.fixture
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """A fresh sandbox of the world named by the test's ``world`` parameter (default ops)."""
    name = getattr(request, "param", "ops")
    box = Sandbox(built_world(get_domain(name)))
    yield box
    box.close()


@pytest.fixture
def lab() -> Iterator[str]:
    """The test-only ``lab`` domain, registered for the test and removed after."""
    register("lab", "tests.worlds.toolgrammar.lab_domain:DOMAIN")
    yield "lab"
    unregister("lab")
