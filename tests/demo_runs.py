"""Scaffolding for pytester sessions over a demo suite that compare JSON run reports."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.demo_world import write_demo_suite


def demo_project(
    demo: pytest.Pytester, questions: dict[str, str], adapters: str
) -> pytest.Pytester:
    """A demo suite of ``questions`` beside the user adapters module ``my_adapters``."""
    write_demo_suite(demo.path, questions=questions)
    demo.makepyfile(my_adapters=adapters)
    return demo


def run_cases(
    pytester: pytest.Pytester, report: str, *args: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run the cases alone (no controls), writing and returning the JSON report ``report``."""
    path = pytester.path / report
    result = pytester.runpytest(
        f"--agentbench-report={path}",
        "-p",
        "no:cacheprovider",
        "-m",
        "not agentbench_control",
        *args,
    )
    return result, json.loads(path.read_text())
