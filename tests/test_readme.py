"""The README's two set-up commands are its first two command lines, and CI runs the second
(then the check of the built package)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTALL_AND_RUN_SUITES = (
    "python -m pip install . ./entry && python -m pytest suites --agentbench-report=run-report.json"
    " --agentbench-judge-samples"
)
INSTALL_AND_RUN_TESTS = 'python -m pip install -e ".[test]" ./entry && python -m pytest -n 2'


def command_lines(markdown: str) -> list[str]:
    """Lines of indented (four-space) code blocks, in order, outside fenced blocks."""
    lines: list[str] = []
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("    ") and line.strip():
            lines.append(line.strip())
    return lines


def test_the_first_two_command_lines_are_the_set_up_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert command_lines(readme)[:2] == [INSTALL_AND_RUN_SUITES, INSTALL_AND_RUN_TESTS]


def test_ci_runs_the_readme_test_command_then_the_wheel_check() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip("\n").splitlines()
    assert script[-1] == f"{INSTALL_AND_RUN_TESTS} && .ci/wheel-check"
    # The check builds with build and twine, which CI installs from the project's extras.
    assert 'install --quiet -e ".[test,docs,release]" ./entry' in "\n".join(script)


def test_readme_is_one_short_page() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


def test_command_lines_skip_fenced_blocks() -> None:
    text = "intro\n\n```python\n    x = 1\n```\n\n    first\n    second\n"
    assert command_lines(text) == ["first", "second"]
