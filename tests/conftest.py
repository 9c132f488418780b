from __future__ import annotations

from pathlib import Path

import pytest

from tests.demo_world import REGISTERING_CONFTEST

DEMO_SOURCE = Path(__file__).with_name("demo_world.py")

XDIST_ARGS: dict[str, list[str]] = {"no-xdist": [], "n0": ["-n", "0"], "n2": ["-n", "2"]}
"""The distributions every integration test runs under, by id."""
XDIST_MODES = [pytest.param(args, id=name) for name, args in XDIST_ARGS.items()]


@pytest.fixture
def demo(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester project where the demo world is registered from a conftest plugin."""
    pytester.makepyfile(demo_world=DEMO_SOURCE.read_text(encoding="utf-8"))
    pytester.makeconftest(REGISTERING_CONFTEST)
    pytester.syspathinsert()
    return pytester


@pytest.fixture(params=XDIST_MODES)
def xdist_args(request: pytest.FixtureRequest) -> list[str]:
    args: list[str] = request.param
    return args
