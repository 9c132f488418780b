"""Judged diagnostics at the end of a benchmark run: ``--agentbench-judge-cache DIR``.

With a JSON run report (``--agentbench-report``), the report's cases are put to
the rubrics' panels once the report is written, through the session's chat-model
settings (so ``--agentbench-cassettes`` applies), and the judgments and labels
files land beside the report. Judging runs in the controlling process only, on
the finished report, so a run under ``-n 2`` is judged exactly as a serial one.
The run's exit status, outcomes, metrics and gates are decided before and are
never changed by it: a judged gate is enforced by ``agentbench judge``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError

SECTION = "agentbench judged diagnostics"


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    folder = config.getoption("agentbench_judge_cache", None)
    if folder is None or hasattr(config, "workerinput"):
        return
    report = config.getoption("agentbench_report", None)
    terminalreporter.section(SECTION)
    if report is None or not Path(report).is_file():
        terminalreporter.write_line("not judged: judging reads the --agentbench-report file")
        return
    calibration = config.getoption("agentbench_judge_calibration", None)
    # Imported here: every benchmark run registers this plugin, few of them judge.
    from pytest_agentbench.agents.settings import configured_settings
    from pytest_agentbench.cli.judge import judge_beside
    from pytest_agentbench.judging.panel import JudgeCache
    from pytest_agentbench.sdk.registry import installed_registry

    try:
        lines, _ = judge_beside(
            Path(report),
            registry=installed_registry(),
            settings=configured_settings(),
            cache=JudgeCache(Path(folder)),
            calibration=None if calibration is None else Path(calibration),
        )
    except AgentbenchError as exc:
        lines = [f"not judged: {exc.render()}"]
    for line in lines:
        terminalreporter.write_line(line)
