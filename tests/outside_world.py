"""A world kind installed as an outside package would be, without pip.

``install_outside_world(site)`` writes into ``site`` an importable package
holding the demo world, its registration (an UNMARKED hook function, as an
author who never read about ``@hookimpl`` writes it, naming its shipped suites
through ``suite_roots``) and one shipped suite with its oracle and controls,
plus a ``*.dist-info`` folder whose ``entry_points.txt`` names the
registration: with ``site`` on ``PYTHONPATH``, ``importlib.metadata`` finds it
exactly as it finds an installed distribution.
"""

from __future__ import annotations

from pathlib import Path

from tests.demo_world import DEMO_CONTROLS, write_demo_suite

PACKAGE = "outside_arith"
KIND = "outside-demo"
SUITE_ID = "outside-suite"
ENTRY_POINT = "outside-arith"

REGISTRATION = f'''"""Registers the outside world, with no @hookimpl: pytest needs none."""

from pathlib import Path

from pytest_agentbench.sdk import LazyWorld


def pytest_agentbench_world_kinds():
    return [
        LazyWorld(
            "{KIND}",
            "{PACKAGE}.world:WORLD",
            suite_roots=[Path(__file__).parent / "suites"],
        )
    ]
'''


def install_outside_world(site: Path) -> Path:
    """Write the package and its dist-info into ``site``; returns the package folder."""
    package = site / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    source = Path(__file__).with_name("demo_world.py").read_text(encoding="utf-8")
    # Its own kind: the demo world may be registered beside it (a conftest, a test plugin).
    source += f"\n\nWORLD.kind = {KIND!r}\n"
    (package / "world.py").write_text(source, encoding="utf-8")
    (package / "registration.py").write_text(REGISTRATION, encoding="utf-8")
    write_demo_suite(
        package,
        SUITE_ID,
        controls=DEMO_CONTROLS.replace("demo-suite", SUITE_ID),
        world=KIND,
        sealed_oracle=True,
    )
    dist_info = site / f"{PACKAGE}-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {PACKAGE.replace('_', '-')}\nVersion: 0.1\n",
        encoding="utf-8",
    )
    (dist_info / "entry_points.txt").write_text(
        f"[pytest_agentbench.worlds]\n{ENTRY_POINT} = {PACKAGE}.registration\n",
        encoding="utf-8",
    )
    return package
