"""What writing the run report imports: the writer, not the reader.

Every run given ``--agentbench-report`` imports the JSON report module at its end;
the streaming reader (:mod:`pytest_agentbench.report.stream`) is for the commands
and options that read a report back (``agentbench html``, ``rescore``, a baseline,
a resume), and its event records cost a writing run their definition for nothing.
Checked in a fresh interpreter: the test process itself has imported everything.
"""

from __future__ import annotations

from pathlib import Path

from pytest_agentbench.report import json_report
from tests.shared_sessions import run_probe

READER = "pytest_agentbench.report.stream"


def test_the_report_writer_imports_no_report_reader() -> None:
    loaded = run_probe(
        "import json, sys\n"
        "import pytest_agentbench.report.json_report\n"
        f"print(json.dumps({READER!r} in sys.modules))\n"
    )
    assert loaded is False


def test_reading_a_report_still_streams_it(tmp_path: Path) -> None:
    # The reader is imported where a report is read: read_report works unchanged.
    path = tmp_path / "r.json"
    path.write_text(
        '{"adapter":{"description":"d","spec":null},"environment":{"git_commit":null,'
        '"platform":"p","plugin":"0","pytest":"9","python":"3"},"exit_status":0,'
        '"gates":[],"suites":[]}\n',
        encoding="utf-8",
    )
    report = json_report.read_report(str(path))
    assert report.exit_status == 0
    assert report.suites == ()
