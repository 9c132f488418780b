"""Re-record the shipped sample panels' cassettes from a run report of the built-in suites.

    python -m pytest -p no:cacheprovider -m "not agentbench_control" \\
        --agentbench-suite retrieval-fixture-v1 --agentbench-suite operations-commerce-v1 \\
        --agentbench-suite operations-maintenance-v1 --agentbench-report=run.json
    python -m tests.record_sample_judgments run.json

Needed only when a built-in world's recorded output changes (then the replay in
tests/test_judging_builtin.py and tests/test_judges_doc.py misses). They are what
``--agentbench-judge-samples`` and ``agentbench judge --samples`` replay. The answers
come from the scripted loopback judges (tests/judge_server.py), not from a model.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from pytest_agentbench.cli.main import main
from tests.judge_server import ScriptedJudges

SAMPLE_CASSETTES = (
    Path(__file__).resolve().parent.parent / "pytest_agentbench" / "judging" / "sample_cassettes"
)


def record(report: str) -> int:
    shutil.rmtree(SAMPLE_CASSETTES, ignore_errors=True)
    with ScriptedJudges().serving() as base_url:
        os.environ["AGENTBENCH_LLM_BASE_URL"] = base_url
        return main(
            ["judge", report, "--cassettes", str(SAMPLE_CASSETTES), "--cassette-mode", "record"]
        )


if __name__ == "__main__":
    sys.exit(record(sys.argv[1]))
