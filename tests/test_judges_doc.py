"""docs/judges.md's "Running it" commands run offline as written, and print what it shows.

Both forms (``pytest`` then ``agentbench judge``, and ``pytest`` judging in one go)
replay the shipped sample cassettes: the environment names an endpoint no one
listens on, so a call that reached for it would fail the command.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

# Imported here, before the in-process session: pytester drops the modules a session
# imported once it ends, so judging the run would import the retrieval world again.
import pytest_agentbench.worlds.retrieval.world  # noqa: F401
from pytest_agentbench.cli.main import main
from tests.test_readme import INSTALL_AND_RUN_SUITES, command_lines

DOC = Path(__file__).resolve().parent.parent / "docs" / "judges.md"


def running_it() -> tuple[list[list[str]], list[str]]:
    """The section's commands (continuations joined) before "Either way", and the
    terminal lines it shows after."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Running it\n") : text.index("Under pytest the JSON run report")]
    commands_part, shown_part = section.split("Either way", 1)
    joined = "\n".join(command_lines(commands_part)).replace("\\\n", " ")
    commands = [shlex.split(line) for line in joined.splitlines()]
    return commands, command_lines(shown_part)


def test_the_running_it_commands_run_offline_as_written(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    commands, shown = running_it()
    assert [command[:2] for command in commands] == [
        ["pytest", "--agentbench-suite"],
        ["agentbench", "judge"],
        ["pytest", "--agentbench-suite"],
    ]
    assert shown[0].startswith("judged diagnostics")
    monkeypatch.chdir(pytester.path)
    for name in ("AGENTBENCH_LLM_MODEL", "AGENTBENCH_CASSETTES", "AGENTBENCH_CASSETTE_MODE"):
        monkeypatch.delenv(name, raising=False)
    # Nothing listens on port 9: a judge call sent there would fail.
    monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    judgments = pytester.path / "run.judgments.json"
    outputs: list[str] = []
    for command in commands:
        if command[0] == "pytest":
            judgments.unlink(missing_ok=True)
            result = pytester.runpytest("-p", "no:cacheprovider", *command[1:])
            assert result.ret == 0, command
            outputs.append("\n".join(result.outlines))
        else:
            capsys.readouterr()
            assert main(command[1:]) == 0, command
            outputs.append(capsys.readouterr().out)
        if command[-1] != "--agentbench-report=run.json":
            # A judging command: its judgments beside the report, and the doc's lines.
            assert judgments.is_file(), command
            printed = [line.strip() for line in outputs[-1].splitlines()]
            for line in shown:
                assert line in printed, (command, line)
            assert "not a real model" in outputs[-1]
    document = json.loads(judgments.read_text())
    assert len(document["items"]) == 48
    # The one-go form also gave the report its judged member.
    report = json.loads((pytester.path / "run.json").read_text())
    assert [rubric["name"] for rubric in report["judged"]["rubrics"]] == [
        "retrieval.claims-supported"
    ]


def test_the_readmes_first_command_judges_from_the_samples_without_a_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's first command judges every built-in suite from the samples: the
    retrieval suite is judged above, the commerce one in tests/test_judging_builtin.py,
    and the maintenance one here (its cassettes are the ones a run of the README's
    command would miss were they not shipped)."""
    assert INSTALL_AND_RUN_SUITES.endswith(" --agentbench-judge-samples")
    monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--agentbench-suite", "operations-maintenance-v1",
        "-m", "not agentbench_control", "--agentbench-report=run-report.json",
        "--agentbench-judge-samples",
    )  # fmt: skip
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*not a real model*", "*operations.messages-sent: *"])
    report = json.loads((pytester.path / "run-report.json").read_text())
    (rubric,) = report["judged"]["rubrics"]
    # The case whose output the report does not keep is counted, never skipped silently.
    assert (rubric["name"], rubric["items"], rubric["unjudged"]) == (
        "operations.messages-sent", 2, {"not_recorded": 1},
    )  # fmt: skip
