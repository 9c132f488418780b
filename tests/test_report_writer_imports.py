"""What writing the run report imports and builds: the writer, not the reader.

Every run given ``--agentbench-report`` imports the JSON report module at its end;
the streaming reader (:mod:`pytest_agentbench.report.stream`) is for the commands
and options that read a report back (``agentbench html``, ``rescore``, a baseline,
a resume), and its event records cost a writing run their definition for nothing.
Checked in a fresh interpreter: the test process itself has imported everything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.report import json_report
from pytest_agentbench.report.transcripts import TranscriptFile
from pytest_agentbench.report.trust import Trust, TrustPromise
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


def test_writing_a_report_builds_no_validator_for_the_whole_report(tmp_path: Path) -> None:
    # Its head members are dumped by their own records: the report's validator (with the
    # comparison, model and judged records it covers) is built only where one is read.
    built = run_probe(
        "import io, json\n"
        "from pathlib import Path\n"
        "from pytest_agentbench.report import json_report\n"
        "from pytest_agentbench.report.case_store import CaseStore\n"
        "from pytest_agentbench.report.summary import RunSummary\n"
        "out = io.StringIO()\n"
        "json_report.stream_report(out, RunSummary(suites=(), gates=(), problems=('p',)),\n"
        f"    CaseStore(), {{}}, rootpath=Path({str(tmp_path)!r}), adapter_spec=None,\n"
        "    adapter_description='d', exit_status=1)\n"
        "document = json.loads(out.getvalue())\n"
        "print(json.dumps([json_report.RunReport.__pydantic_complete__,\n"
        "    document['problems'], document['judged'], document['schema_version']]))\n"
    )
    assert built == [False, ["p"], None, "agentbench-run-report/3"]


def test_the_report_members_are_those_the_whole_model_dumps(tmp_path: Path) -> None:
    members: dict[str, Any] = {
        "environment": json_report.environment(tmp_path),
        "adapter": json_report.AdapterIdentity(spec="agents:Agent", description="mine"),
        "exit_status": 1,
        "gates": (),
        "problems": ("a suite was refused",),
        "trust": Trust(
            isolation="isolated",
            sandbox="auto",
            landlock_abi=0,
            promises=(
                TrustPromise(name="network", held=True),
                TrustPromise(name="filesystem", held=False, reason="no Landlock"),
            ),
        ),
        "transcripts": (
            TranscriptFile(
                suite_id="s", file="r.transcripts/s.ndjson", digest_sha256="0" * 64, cases=2
            ),
        ),
    }
    whole = json_report.RunReport(suites=(), **members).model_dump(mode="json")
    del whole["suites"]
    assert json_report._report_members(**members) == whole
    with pytest.raises(TypeError, match="not members of the run report"):
        json_report._report_members(**members, exit_code=1)
    with pytest.raises(TypeError, match=r"missing \['environment'\]"):
        json_report._report_members(**{k: v for k, v in members.items() if k != "environment"})
    # A member of a kind not dumped alone: the whole record dumps every member.
    as_float = json_report._report_members(**{**members, "exit_status": 1.0})
    assert as_float == whole
