"""The documentation runs and is complete.

Every fenced code block whose info string is ``python runnable`` in README.md
and under docs/ is executed as a script in a fresh folder, saved under the
file name the text around it gives (``my_agent.py``: the example imports
itself by that name) and must exit 0. docs/reference.md must name every
option and ini key the plugin registers, every ``AGENTBENCH_*`` environment
variable the package reads and every error code it raises, so that a new one
without a documentation entry fails here.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.plugin.options import add_options

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pytest_agentbench"
REFERENCE = ROOT / "docs" / "reference.md"
RUNNABLE = re.compile(r"^```python runnable[^\n]*\n(?P<code>.*?)^```", re.MULTILINE | re.DOTALL)
SAVED_AS = re.compile(r"Save it as\s+`(?P<name>[\w.]+\.py)`")
CODE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
ENVIRONMENT_VARIABLE = re.compile(r"^AGENTBENCH_[A-Z0-9_]+$")
ERROR_SUFFIXES = ("Error", "Miss")
"""Callables whose first string argument is a stable code: AgentbenchError and its
subclasses, UsageError, ChatAgentError, ToolCallError, BackendError, CassetteMiss ..."""
CODE_KEYWORDS = ("code", "failure_code")


def documentation_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def runnable_blocks() -> list[tuple[str, str, str]]:
    """(page and index, file name, code) of every runnable block."""
    blocks: list[tuple[str, str, str]] = []
    for page in documentation_pages():
        text = page.read_text(encoding="utf-8")
        for index, block in enumerate(RUNNABLE.finditer(text)):
            named = list(SAVED_AS.finditer(text, 0, block.start()))
            name = named[-1]["name"] if named else "snippet.py"
            blocks.append((f"{page.relative_to(ROOT)}#{index}", name, block["code"]))
    return blocks


def test_the_readme_has_a_runnable_example() -> None:
    assert any(where.startswith("README.md#") for where, _, _ in runnable_blocks())


@pytest.mark.parametrize(
    ("name", "code"),
    [pytest.param(name, code, id=where) for where, name, code in runnable_blocks()],
)
def test_runnable_block_runs(name: str, code: str, tmp_path: Path) -> None:
    (tmp_path / name).write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]


class _RecordingParser:
    """Stands in for pytest's parser: notes every option and ini key registered."""

    def __init__(self) -> None:
        self.options: list[str] = []
        self.ini_keys: list[str] = []

    def getgroup(self, name: str, description: str = "") -> _RecordingParser:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.extend(names)

    def addini(self, name: str, help: str, **kwargs: Any) -> None:
        self.ini_keys.append(name)


def registered() -> _RecordingParser:
    parser = _RecordingParser()
    add_options(parser)  # type: ignore[arg-type]
    return parser


@functools.cache
def package_sources() -> tuple[str, ...]:
    """Every module of the package, read once for all the checks that search the code.

    Searched as text, not parsed: parsing the whole package costs seconds, and a literal
    right after an opening parenthesis or a keyword's ``=`` is what a call holds (in a
    comment or a docstring too, which only asks more of the reference).
    """
    return tuple(path.read_text(encoding="utf-8") for path in sorted(PACKAGE.rglob("*.py")))


RAISED_CODE = re.compile(
    r"""\b\w*(?:Error|Miss)\(\s*(["'])([^"'\\\n]*)\1"""
    r"""|\b(?:code|failure_code)=(["'])([^"'\\\n]*)\3"""
)
"""A string literal opening an ``*Error(...)``/``*Miss(...)`` call, or given as ``code=``
or ``failure_code=``."""
QUOTED_ENVIRONMENT_VARIABLE = re.compile(r"""(?<=["'])AGENTBENCH_[A-Z0-9_]+(?=["'])""")


def raised_codes() -> set[str]:
    """First string arguments of every *Error(...) / *Miss(...) call in the package, and
    every literal passed as ``code=`` or ``failure_code=`` (diagnostics, receipts)."""
    codes: set[str] = set()
    for source in package_sources():
        for match in RAISED_CODE.finditer(source):
            code = match.group(2) if match.group(2) is not None else match.group(4)
            if CODE.match(code):
                codes.add(code)
    return codes


def environment_variables() -> set[str]:
    names = {
        name for source in package_sources() for name in QUOTED_ENVIRONMENT_VARIABLE.findall(source)
    }
    assert all(ENVIRONMENT_VARIABLE.match(name) for name in names)
    return names


def undocumented(names: set[str] | list[str]) -> list[str]:
    reference = REFERENCE.read_text(encoding="utf-8")
    return sorted(name for name in names if f"`{name}" not in reference)


def test_every_option_and_ini_key_is_in_the_reference() -> None:
    parser = registered()
    assert len(parser.options) > 20
    assert "agentbench_timeout" in parser.ini_keys
    assert undocumented(parser.options) == []
    assert undocumented(parser.ini_keys) == []


def test_every_environment_variable_is_in_the_reference() -> None:
    names = environment_variables()
    assert "AGENTBENCH_LLM_MODEL" in names
    assert undocumented(names) == []


def test_every_raised_error_code_is_in_the_reference() -> None:
    codes = raised_codes()
    assert {"adapter_import", "llm_timeout", "cassette_miss", "ledger_exists"} <= codes
    assert undocumented(codes) == []


def test_the_check_reports_what_is_missing() -> None:
    assert undocumented({"agentbench_not_a_code", "adapter_import"}) == ["agentbench_not_a_code"]
