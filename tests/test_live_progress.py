"""The live progress line of a model run (``report/live_progress.py``).

Unit tests drive :class:`LiveProgress` with an injected clock (no wall clock);
pytester runs of the chat agent against the scripted loopback model check the line
serially and under ``-n 2`` (the controller's aggregate of the workers' cases),
with ``--agentbench-progress-every 0`` (a line after every case), its absence
under ``-q``, the refusal of a bad value, and the redrawn line on a terminal.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.report.live_progress import LiveProgress, duration_text
from pytest_agentbench.run.options import parse_progress_every
from tests.chat_projects import CHAT_RUN_ARGS, write_chat_project
from tests.demo_world import write_demo_suite
from tests.llm_server import ScriptedLLM


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _result(outcome: str, calls: int, tokens: tuple[int, int], cost: str | None) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "model_calls": {
            "calls": calls,
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "cost": cost,
        },
    }


def _progress(
    clock: Clock, *, redraw: bool, every: float, total: int = 4
) -> tuple[LiveProgress, list[str], list[str]]:
    drawn: list[str] = []
    lines: list[str] = []
    progress = LiveProgress(
        lambda: total,
        redraw=redraw,
        every=every,
        rewrite=drawn.append,
        write_line=lines.append,
        currency="USD",
        clock=clock,
    )
    return progress, drawn, lines


def test_plain_lines_come_at_most_every_n_seconds_and_at_the_last_case() -> None:
    clock = Clock()
    progress, drawn, lines = _progress(clock, redraw=False, every=30)
    clock.now += 10
    progress.case(_result("passed", 2, (100, 20), "0.001"))
    progress.show()
    assert lines == [], "10 s in: not due"
    clock.now += 20
    progress.case(_result("failed", 3, (200, 30), "0.002"))
    progress.show()
    assert lines == [
        "agentbench: 2/4 cases (1 failed, 1 passed), 5 calls, 350 tokens, cost 0.003 USD, "
        "4.0 cases/min, about 30s left"
    ]
    clock.now += 5
    progress.case(_result("passed", 1, (10, 5), None))
    progress.show()
    assert len(lines) == 1, "5 s after the last line: not due"
    clock.now += 1
    progress.case({"outcome": "skipped", "model_calls": None})
    progress.show()
    assert lines[1] == (
        "agentbench: 4/4 cases (1 failed, 2 passed, 1 skipped), 6 calls, 365 tokens, "
        "cost 0.003 USD, 6.7 cases/min, done"
    ), "the last case always shows its line, however soon"
    progress.finish()
    assert drawn == []
    assert len(lines) == 2, "a plain line needs no ending"


def test_every_zero_shows_a_line_after_every_case_and_unpriced_runs_show_no_cost() -> None:
    clock = Clock()
    progress, _, lines = _progress(clock, redraw=False, every=0, total=3)
    progress.currency = None
    progress.case(_result("passed", 1, (1, 1), None))
    progress.show()
    assert lines == [
        "agentbench: 1/3 cases (1 passed), 1 calls, 2 tokens, cost -, rate -, time left -"
    ], "no time has passed: no rate to tell"
    clock.now += 30
    progress.case(_result("passed", 1, (1, 1), None))
    progress.show()
    assert lines[-1].endswith("cost -, 4.0 cases/min, about 15s left")


def test_a_redrawn_line_is_drawn_after_every_case_and_ended_once() -> None:
    clock = Clock()
    progress, drawn, lines = _progress(clock, redraw=True, every=30, total=2)
    clock.now += 1
    progress.case(_result("passed", 1, (5, 5), "1"))
    progress.show()
    clock.now += 1
    progress.case(_result("passed", 1, (5, 5), "1"))
    progress.show()
    assert drawn == [
        "agentbench: 1/2 cases (1 passed), 1 calls, 10 tokens, cost 1 USD, "
        "60.0 cases/min, about 1s left",
        "agentbench: 2/2 cases (2 passed), 2 calls, 20 tokens, cost 2 USD, 60.0 cases/min, done",
    ]
    assert lines == []
    progress.finish()
    progress.finish()
    assert lines == [""], "one newline ends the drawn line"


def test_the_rate_is_the_last_minutes_not_the_whole_runs() -> None:
    clock = Clock()
    progress, _, _ = _progress(clock, redraw=False, every=1e9, total=100)
    for _ in range(10):
        clock.now += 60  # a slow start: one case a minute for ten minutes
        progress.case(_result("passed", 1, (1, 1), None))
        progress.show()
    for _ in range(30):
        clock.now += 2  # then one every two seconds
        progress.case(_result("passed", 1, (1, 1), None))
        progress.show()
    assert progress.rate_per_minute(clock.now) == pytest.approx(30.0)
    assert "about 2m00s left" in progress.line(clock.now), "60 left at 30 a minute"


def test_durations_and_the_option_values() -> None:
    assert [duration_text(s) for s in (0, 45.4, 195, 3600 + 125)] == ["0s", "45s", "3m15s", "1h02m"]
    assert parse_progress_every(" 2.5 ") == 2.5
    assert parse_progress_every(0) == 0
    for bad in ("-1", "soon", "nan", "inf", ""):
        with pytest.raises(ValueError, match="seconds"):
            parse_progress_every(bad)


# "control-c4" is a case (its id only starts as a control item is named): counted in the total
# the -n 2 controller shows before the workers finish.
QUESTIONS = {"c1": "tools", "c2": "tools", "c3": "malformed_args", "control-c4": "tools"}
PRICING = {
    "scheme": "agentbench-pricing/1",
    "currency": "USD",
    "models": {"scripted-model": {"input_per_token": "0.001", "output_per_token": "0.002"}},
}
FAKE_TTY = """
import pytest

class Yes:
    # pytest's isatty is read as a bool and called as a method.
    def __bool__(self):
        return True

    def __call__(self):
        return True

@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    # pytester's output is no terminal: this run's reporter is told it is one.
    config.pluginmanager.get_plugin("terminalreporter").isatty = Yes()
"""
LINE = re.compile(
    r"agentbench: (\d)/4 cases \(([^)]*)\), (\d+) calls, (\d+) tokens, cost ([0-9.]+) USD, "
)


def _lines(text: str) -> list[re.Match[str]]:
    return [m for m in (LINE.search(part) for part in re.split(r"[\r\n]", text)) if m]


def test_live_progress_in_pytest_runs(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_chat_project(demo, QUESTIONS, "agentbench_pricing = pricing.json")
    (demo.path / "pricing.json").write_text(json.dumps(PRICING), encoding="utf-8")
    demo.makepyfile(fake_tty=FAKE_TTY)
    args = (*CHAT_RUN_ARGS, "--agentbench-cassette-mode=off")
    with ScriptedLLM().serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        report = demo.path / "serial.json"
        serial = demo.runpytest(
            *args, "--agentbench-progress-every=0", f"--agentbench-report={report}"
        )
        spread = demo.runpytest(*args, "-n", "2", "--agentbench-progress-every", "0")
        quiet = demo.runpytest(*args, "-q", "--agentbench-progress-every=0")
        slow = demo.runpytest(*args, "--agentbench-progress-every=86400")
        tty = demo.runpytest(*args, "-p", "fake_tty", "--agentbench-progress-every=86400")
        bad = demo.runpytest(*args, "--agentbench-progress-every=-5")
    for result in (serial, spread, quiet, slow, tty):
        result.assert_outcomes(passed=3, failed=1)
    model_run = json.loads(report.read_text())["model_run"]
    totals = (
        "4",
        "1 failed, 3 passed",
        str(model_run["calls"]),
        str(model_run["input_tokens"] + model_run["output_tokens"]),
        model_run["cost"],
    )
    # Serially, a plain line after each case, the last one the run's totals.
    serial_lines = _lines(serial.stdout.str())
    assert [m[1] for m in serial_lines] == ["1", "2", "3", "4"]
    assert serial_lines[-1].groups() == totals
    assert all(line.startswith("agentbench: ") for line in serial.outlines if "/4 cases" in line)
    # Under -n 2 the controller counts every worker's cases: the same totals at the end.
    spread_lines = _lines(spread.stdout.str())
    assert [m[1] for m in spread_lines] == ["1", "2", "3", "4"]
    assert spread_lines[-1].groups() == totals
    assert _lines(quiet.stdout.str()) == [], "-q: no progress line"
    # Not due before the last case: one line, the last.
    assert [m.groups() for m in _lines(slow.stdout.str())] == [totals]
    # On a terminal: the line redrawn in place (pytester splits its output at each \r)
    # after every case, however long --agentbench-progress-every, and no dots.
    drawn = _lines(tty.stdout.str())
    assert [m[1] for m in drawn] == ["1", "2", "3", "4"]
    assert drawn[-1].groups() == totals
    assert not any(re.search(r"cases\.jsonl *[.F]", line) for line in tty.outlines)
    assert any(re.search(r"cases\.jsonl *[.F]", line) for line in serial.outlines)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*invalid_progress_every*--agentbench-progress-every*-5*"])


def test_a_steady_pace_gives_its_own_rate_whatever_the_spacing() -> None:
    clock = Clock()
    progress, _, _ = _progress(clock, redraw=False, every=1e9, total=25)
    for _ in range(4):
        clock.now += 45  # a case every 45 s: 4/3 a minute, not 1 or 2 by a minute's count
        progress.case(_result("failed", 1, (1, 1), None))
    assert progress.rate_per_minute(clock.now) == pytest.approx(4 / 3)
    assert "about 15m45s left" in progress.line(clock.now), "21 left at 45 s each"


def test_the_workers_case_count_is_told_by_the_file_not_the_case_id(tmp_path: Path) -> None:
    """Under xdist the controller's total until the census: a case whose id starts with
    ``control-`` is a case (its suite names its file for cases), the suite file's items
    are its controls, and what lies in no suite is no case."""
    from pytest_agentbench.plugin.hooks import _case_item_count
    from pytest_agentbench.run.session import SuiteLoader
    from pytest_agentbench.sdk.registry import WorldRegistry
    from tests import layout_world

    write_demo_suite(tmp_path, "plain", questions={"c1": "1+1", "control-c2": "2+2"})
    published = layout_world.write_layout_folder(tmp_path / "recognised")
    loader = SuiteLoader(WorldRegistry([layout_world.WORLD]), tmp_path)
    anchor = loader.anchor(published)
    assert anchor == layout_world.LAYOUT_FILE
    marker = published.relative_to(tmp_path) / anchor
    ids = [
        "suites/plain/suite.yaml::control-wrong-answer",
        "suites/plain/suite.yaml::ungraded-zero",
        "suites/plain/cases.jsonl::c1",
        "suites/plain/cases.jsonl::control-c2",
        "suites/plain/cases.jsonl::control-c2[model=a][trial-2]",
        "tests/test_other.py::test_control-x",
        f"{marker.as_posix()}::control-wrong-answer",
        f"{marker.as_posix()}::p1",
    ]
    assert _case_item_count(loader, tmp_path, ids) == 4
