"""Temporary pytest projects for ``overhead.py``: the plugin's side and bare pytest's side.

* an empty project (no suites, no tests): what the plugin costs a pytest run
  that has nothing to do with agent benchmarks;
* the plugin's project: a ``conftest.py`` registering the demo world of
  ``tests/demo_world.py`` (as a third party would), one suite of N trivial
  ``"i+j"`` cases and a controls manifest with one negative control limited to
  one case, so ``suite.yaml`` is collected too (N + 1 items);
* bare pytest's project: the same N cases in one JSONL file at the same path
  (``suites/<id>/cases.jsonl``, so both collect the same directory nodes),
  yielded as plain ``pytest.Item`` s doing the same addition by a 30-line
  ``conftest.py``, run with ``-p no:agentbench``;
* busy-work projects for xdist: the demo world's CPU-bound ``SlowAdder``
  adapter, and the same spinning as plain parametrized test functions.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEMO_WORLD = REPO / "tests" / "demo_world.py"
SUITE_ID = "bench-suite"

PLUGIN_CONFTEST = "from demo_world import pytest_agentbench_world_kinds  # noqa: F401\n"

# One control restricted to one case keeps the suite realistic (suite.yaml is
# collected and yields a control item) without doubling the work.
BENCH_CONTROLS = f"""\
schema_version: 1
suite: {SUITE_ID}
controls:
  - id: always-zero
    agent: always_zero
    cases: [b1]
    intervention: answers 0
    guarantee: answers are computed
    must_fail: [answer_correct]
    required_findings: [wrong_answer]
    must_pass: [answer_present]
"""

BARE_CONFTEST = """\
import json

import pytest


class SumItem(pytest.Item):
    def __init__(self, *, row, **kwargs):
        super().__init__(**kwargs)
        self.row = row

    def runtest(self):
        left, right = self.row["question"].split("+")
        assert int(left) + int(right) == self.row["answer"]

    def reportinfo(self):
        return self.path, None, self.name


class JsonlFile(pytest.File):
    def collect(self):
        for line in self.path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            yield SumItem.from_parent(self, name=row["id"], row=row)


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".jsonl":
        return JsonlFile.from_parent(parent, path=file_path)
    return None
"""

SLOW_ADAPTER = """\
from demo_world import SlowAdder


def build():
    return SlowAdder(work_ms={work_ms})
"""

SPIN_TESTS = """\
import time

import pytest


@pytest.mark.parametrize("index", range({cases}))
def test_spin(index):
    deadline = time.perf_counter() + {work_ms} / 1000
    while time.perf_counter() < deadline:
        pass
"""


def questions(count: int) -> dict[str, str]:
    return {f"b{index}": f"{index}+{(index * 7) % 1000}" for index in range(count)}


def _expected_sum(question: str) -> int:
    left, right = question.split("+")
    return int(left) + int(right)


def _demo_world() -> Any:
    """tests/demo_world.py as a module, without putting tests/ on ``sys.path``."""
    spec = importlib.util.spec_from_file_location("agentbench_bench_demo_world", DEMO_WORLD)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_empty_project(base: Path) -> None:
    """No suites and no tests; a ``pytest.ini`` so the project is its own rootdir."""
    (base / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")


UNRELATED_TESTS = """\
def test_one():
    assert 1 + 1 == 2


def test_two():
    assert "a" < "b"
"""


def write_unrelated_project(base: Path) -> None:
    """A project with two trivial tests and no suite: what an unrelated test suite looks like.

    Its test file is collected, so the plugin's collection-time check for suite
    folders is part of what is measured.
    """
    write_empty_project(base)
    (base / "test_unrelated.py").write_text(UNRELATED_TESTS, encoding="utf-8")


def write_plugin_project(base: Path, count: int, *, adapter_work_ms: float | None = None) -> None:
    """A project whose conftest registers the demo world, with one demo suite of ``count`` cases."""
    write_empty_project(base)
    shutil.copyfile(DEMO_WORLD, base / "demo_world.py")
    (base / "conftest.py").write_text(PLUGIN_CONFTEST, encoding="utf-8")
    if adapter_work_ms is not None:
        (base / "slow_adapter.py").write_text(
            SLOW_ADAPTER.format(work_ms=adapter_work_ms), encoding="utf-8"
        )
    _demo_world().write_demo_suite(
        base, SUITE_ID, questions=questions(count), controls=BENCH_CONTROLS
    )


def write_bare_project(base: Path, count: int) -> None:
    """The same cases as one JSONL file collected by a minimal conftest."""
    write_empty_project(base)
    (base / "conftest.py").write_text(BARE_CONFTEST, encoding="utf-8")
    folder = base / "suites" / SUITE_ID
    folder.mkdir(parents=True)
    lines = [
        f'{{"id": "{case_id}", "question": "{question}", "answer": {_expected_sum(question)}}}\n'
        for case_id, question in questions(count).items()
    ]
    (folder / "cases.jsonl").write_text("".join(lines), encoding="utf-8")


def write_spin_project(base: Path, cases: int, work_ms: float) -> None:
    """``cases`` plain test functions, each spinning ``work_ms`` as ``SlowAdder`` does."""
    write_empty_project(base)
    (base / "test_spin.py").write_text(
        SPIN_TESTS.format(cases=cases, work_ms=work_ms), encoding="utf-8"
    )
