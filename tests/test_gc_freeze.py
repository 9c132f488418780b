"""A benchmark run keeps the garbage collector off its collected tree, and gives it back.

The adapter below reports, from inside each case, how many objects the
collector has frozen; the outer process checks what is frozen once a run ends.
Suites and oracles load with automatic collection paused.
"""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.run import gc_freeze
from pytest_agentbench.run.session import SuiteLoader, oracle_of
from pytest_agentbench.sdk.registry import WorldRegistry
from pytest_agentbench.sdk.suite import Suite
from tests.demo_world import REGISTERING_CONFTEST, write_demo_suite
from tests.layout_world import RivalWorld, write_layout_folder

PROBE_AGENT = """
import gc, json, os


class FreezeProbe:
    def answer(self, question):
        with open(f"frozen-{os.getpid()}.jsonl", "a") as handle:
            handle.write(json.dumps(gc.get_freeze_count()) + "\\n")
        left, right = question.split("+")
        return int(left) + int(right)
"""


def _frozen_counts(project: pytest.Pytester) -> list[int]:
    return [
        json.loads(line)
        for path in sorted(project.path.glob("frozen-*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


# Without xdist, as a worker runs the same freeze; that a worker keeps its tree frozen to
# its end is test_only_a_process_that_outlives_its_session_is_given_the_tree_back's.
def test_cases_run_with_the_collected_tree_frozen(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    demo.makepyfile(probe_agent=PROBE_AGENT)
    frozen_before = gc.get_freeze_count()

    result = demo.runpytest(
        "--agentbench-adapter=probe_agent:FreezeProbe",
        "-m",
        "not agentbench_control",
        "suites",
    )

    result.assert_outcomes(passed=3)
    counts = _frozen_counts(demo)
    assert len(counts) == 3
    assert all(count > frozen_before for count in counts)
    # The in-process session has given back what it froze.
    assert gc.get_freeze_count() == frozen_before


FULL_COLLECTION_PROBE = """
import gc, json, os, weakref


class Cycle:
    def __init__(self):
        self.me = self


class CollectingProbe:
    def answer(self, question):
        # A garbage cycle, then a full collection with something new still alive.
        dead = Cycle()
        gone = weakref.ref(dead)
        del dead
        alive = Cycle()
        before = gc.get_freeze_count()
        gc.collect()
        record = {
            "before": before,
            "after": gc.get_freeze_count(),
            "garbage_freed": gone() is None,
        }
        del alive
        with open(f"collected-{os.getpid()}.jsonl", "a") as handle:
            handle.write(json.dumps(record) + "\\n")
        left, right = question.split("+")
        return int(left) + int(right)
"""


def test_what_a_full_collection_in_the_run_leaves_alive_is_frozen(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    demo.makepyfile(probe_agent=FULL_COLLECTION_PROBE)
    frozen_before = gc.get_freeze_count()

    result = demo.runpytest(
        "--agentbench-adapter=probe_agent:CollectingProbe", "-m", "not agentbench_control", "suites"
    )

    result.assert_outcomes(passed=3)
    records = [
        json.loads(line)
        for path in demo.path.glob("collected-*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    assert len(records) == 3
    # Each full collection froze its survivors (the case's own objects among them)
    # and freed the garbage cycle first.
    assert all(record["after"] > record["before"] for record in records)
    assert all(record["garbage_freed"] for record in records)
    # The in-process session gave everything back and stopped freezing.
    assert gc.get_freeze_count() == frozen_before
    assert gc_freeze._freeze_survivors not in gc.callbacks


LOAD_PROBE = """
import gc, json, os


def pytest_collection_modifyitems(items):
    # Before collection ends: only what loading the suite froze is frozen.
    with open(f"frozen-{os.getpid()}.jsonl", "a") as handle:
        handle.write(json.dumps(gc.get_freeze_count()) + "\\n")
"""


def test_loading_a_suite_freezes_its_cases_before_the_items_are_made(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    demo.makeconftest(REGISTERING_CONFTEST + LOAD_PROBE)
    frozen_before = gc.get_freeze_count()

    result = demo.runpytest("-m", "not agentbench_control", "suites")

    result.assert_outcomes(passed=3)
    counts = _frozen_counts(demo)
    assert counts
    assert all(count > frozen_before for count in counts)
    assert gc.get_freeze_count() == frozen_before


def test_a_run_without_suites_freezes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import gc

        def test_nothing_frozen():
            assert gc.get_freeze_count() == 0
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("worker", "command_line"),
    [(False, False), (True, False), (False, True)],
    ids=["in-process", "xdist-worker", "command-line"],
)
def test_only_a_process_that_outlives_its_session_is_given_the_tree_back(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, worker: bool, command_line: bool
) -> None:
    # This test runs inside a session started from the command line itself.
    monkeypatch.setattr(gc_freeze, "_started_from_command_line", lambda: command_line)
    config = pytester.parseconfig()
    if worker:
        config.workerinput = {"workerid": "gw0"}  # type: ignore[attr-defined]
    gc_freeze.arrange_thaw(config)
    try:
        gc_freeze.freeze_alive(config)
        config._ensure_unconfigure()
        # A worker's process and a command-line run end with the session; the
        # interpreter's last collection then skips the frozen tree.
        assert (gc.get_freeze_count() > 0) is (worker or command_line)
    finally:
        gc.unfreeze()


EXIT_PROBE = """
import atexit, gc


def _report():
    # After the session, before the interpreter's last collection.
    with open("frozen-at-exit.txt", "w") as handle:
        handle.write(str(gc.get_freeze_count()))


atexit.register(_report)
"""


def test_a_run_from_the_command_line_keeps_the_tree_frozen_to_the_end(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path)
    demo.makeconftest(REGISTERING_CONFTEST + EXIT_PROBE)

    # runpytest_subprocess starts ``python -m pytest``: pytest.console_main.
    result = demo.runpytest_subprocess("-m", "not agentbench_control", "suites")

    result.assert_outcomes(passed=3)
    assert int((demo.path / "frozen-at-exit.txt").read_text(encoding="utf-8")) > 0


def test_an_interpreter_without_gc_freeze_runs_unfrozen(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(gc, "freeze")
    config = pytester.parseconfig()
    gc_freeze.arrange_thaw(config)
    frozen_before = gc.get_freeze_count()
    gc_freeze.freeze_alive(config)
    assert gc.get_freeze_count() == frozen_before
    config._ensure_unconfigure()


def test_the_collector_is_paused_inside_the_block_and_resumed_after() -> None:
    assert gc.isenabled()
    with gc_freeze.collector_paused():
        assert not gc.isenabled()
        with gc_freeze.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block found it paused and leaves it so
    assert gc.isenabled()
    with pytest.raises(ValueError, match="load failed"), gc_freeze.collector_paused():
        raise ValueError("load failed")
    assert gc.isenabled()


class _Node:
    partner: _Node


def test_garbage_cycles_made_in_the_block_are_freed_as_it_ends() -> None:
    with gc_freeze.collector_paused():
        first, second = _Node(), _Node()
        first.partner, second.partner = second, first
        gone = weakref.ref(first)
        del first, second
        assert gone() is not None  # a cycle: reference counting cannot free it
    assert gone() is None


def test_a_collector_the_user_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with gc_freeze.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


class _CollectorWitness(RivalWorld):
    """Notes whether the collector runs while the suite and its oracle load."""

    def __init__(self) -> None:
        self.seen: dict[str, bool] = {}

    def load_suite(self, suite: Suite) -> dict[str, Any]:
        self.seen["load_suite"] = gc.isenabled()
        return super().load_suite(suite)

    def load_oracle(self, suite: Suite) -> dict[str, dict[str, Any]]:
        self.seen["load_oracle"] = gc.isenabled()
        return super().load_oracle(suite)


def test_a_suite_and_its_oracle_load_with_the_collector_paused(tmp_path: Path) -> None:
    world = _CollectorWitness()
    loaded = SuiteLoader(WorldRegistry([world]), tmp_path).load(write_layout_folder(tmp_path))
    oracle_of(loaded)
    assert world.seen == {"load_suite": False, "load_oracle": False}
    assert gc.isenabled()
