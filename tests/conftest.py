from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import httpcore  # noqa: F401  (kept in sys.modules: see below)
import pytest

from tests.demo_world import REGISTERING_CONFTEST

# httpx imports httpcore only when its first transport is made, and pytester's in-process
# sessions drop every module first imported during them. A client first made inside such a
# session left httpx holding the dropped httpcore's exception map, so a later client's
# httpcore.ReadTimeout reached the chat agent unmapped ("adapter raised ReadTimeout") and
# four chat-agent tests failed whenever an in-process session (test_live_progress's) ran
# first in the same worker. Imported here, httpcore outlives every session.

# These machines (and CI) set PYTHONDONTWRITEBYTECODE: every process this suite starts,
# its own xdist workers (spawned after this file loads) included, would then compile the
# plugin's modules and pytest would rewrite their asserts again, about a CPU-second per
# process on a fresh clone. The suite's processes write and reuse bytecode caches instead.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# The suite's own processes (the controller and its workers, which host most pytester
# sessions) allocate heavily and keep what they import: with the default thresholds the
# cyclic collector took 8 to 9% of a worker's CPU, re-scanning long-lived objects (20,000
# young objects and fewer older passes: about 5.5%).
gc.set_threshold(20_000, 50, 50)

DEMO_SOURCE = Path(__file__).with_name("demo_world.py")

XDIST_ARGS: dict[str, list[str]] = {"no-xdist": [], "n0": ["-n", "0"], "n2": ["-n", "2"]}
"""The distributions every integration test runs under, by id."""
XDIST_MODES = [pytest.param(args, id=name) for name, args in XDIST_ARGS.items()]

INNER_SESSION_OPTIONS = "-p no:hypothesispytest -p no:anyio"
"""Given to every pytest session a test starts (pytester's, in or out of process, and their
xdist workers): hypothesis's plugin costs each new process over a second of CPU at start-up,
anyio's (installed with httpx) about a third of one, and no inner session uses either."""

WITHOUT_SYRUPY = "-p no:syrupy"
"""Also given to those sessions, but for a test marked ``inner_snapshots``: syrupy's plugin
costs each new process about 0.06 CPU-s (8% of a three-case session), and only the sessions
that pin golden outputs use it."""


def _lean_inner_sessions(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    # The outer session read PYTEST_ADDOPTS at its start; only sessions started now see this.
    options = INNER_SESSION_OPTIONS
    if request.node.get_closest_marker("inner_snapshots") is None:
        options = f"{options} {WITHOUT_SYRUPY}"
    existing = os.environ.get("PYTEST_ADDOPTS", "")
    monkeypatch.setenv("PYTEST_ADDOPTS", f"{existing} {options}".strip())


@pytest.fixture(autouse=True)
def lean_subprocess_sessions(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Sessions a test starts itself (``subprocess``, ``pip``-installed packages)."""
    _lean_inner_sessions(monkeypatch, request)


@pytest.fixture
def pytester(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> pytest.Pytester:
    """pytester's own, after it cleared ``PYTEST_ADDOPTS``: its sessions start lean too."""
    _lean_inner_sessions(monkeypatch, request)
    return pytester


@pytest.fixture
def process_isolation_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Isolated sessions of this test run with the sandbox off (``AGENTBENCH_SANDBOX``).

    For tests of process isolation itself whose probe adapters record what they
    saw in files of the project, which the sandbox forbids them to write; the
    sandbox's own promises are held by ``tests/test_sandbox_redteam.py``.
    """
    monkeypatch.setenv("AGENTBENCH_SANDBOX", "off")


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
