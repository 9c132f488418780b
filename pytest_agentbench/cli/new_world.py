"""``agentbench new-world NAME``: a world package to start from, passing the conformance kit.

The package adds two integers per case (``{"id", "a", "b"}``; the oracle holds
the sum), with a reference agent, one negative control and its controls
manifest, one shipped suite and a test that runs the conformance kit. The
templates are strings here; ``NAME`` fills in the kind, the package and the
suite id, and the digests the suite's manifest and the oracle's checksums
record are computed while writing.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.common import write_new_folder
from pytest_agentbench.sdk.canonical import artifact_set_digest, pretty_json, sha256_hex
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry

_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")

CASES = (("c1", 1, 2), ("c2", 20, 22), ("c3", -5, 12))
"""The shipped suite's cases: id, a, b (no sum is 0, which the negative control answers)."""

PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "__DIST__"
version = "0.1.0"
description = "The __KIND__ world kind for pytest-agentbench."
requires-python = ">=3.11"
dependencies = ["pytest-agentbench"]

[project.entry-points."pytest_agentbench.worlds"]
__KIND__ = "__PKG__.registration"

[tool.setuptools.packages.find]
include = ["__PKG__*"]

[tool.setuptools.package-data]
__PKG__ = ["suites/*/*", "oracles/*/*"]
"""

INIT = '''\
"""The __KIND__ world kind: each case asks for the sum of two integers."""
'''

REGISTRATION = '''\
"""Registers the __KIND__ world kind (entry point ``pytest_agentbench.worlds``).

Importing this module imports neither the world nor pydantic: every pytest run
in an environment where the package is installed imports it.
"""

from __future__ import annotations

from pathlib import Path

from pytest_agentbench.sdk import LazyWorld, hookimpl

WORLD = LazyWorld(
    "__KIND__",
    "__PKG__.world:WORLD",
    adapter_protocols=("__PKG__.world:AddsNumbers",),
    suite_roots=(Path(__file__).parent / "suites",),
)


@hookimpl
def pytest_agentbench_world_kinds() -> list[LazyWorld]:
    return [WORLD]
'''

WORLD = '''\
"""The __KIND__ world: each case asks an adapter for the sum of two integers.

Suite folder: ``suite.yaml``, ``cases.jsonl`` (``{"id", "a", "b"}`` lines) and
``manifest.json`` holding the ``sha256-artifact-set-v1`` digest of the public
files. Oracle folder: ``answers.jsonl`` (``{"id", "sum", "canary"}`` lines),
``checksums.json`` (the sha256 of ``answers.jsonl``) and ``controls.yaml``.
Adapters implement ``add(a, b) -> int``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

from pytest_agentbench.sdk import (
    SUITE_FILE,
    AgentbenchError,
    BaseWorld,
    Case,
    CaseResult,
    Check,
    CheckStatus,
    ControlAgent,
    MalformedOutput,
    MetricSpec,
    Outcome,
    Suite,
    artifact_set_digest,
    call_adapter,
    grade,
    read_json,
    read_jsonl,
    sha256_hex,
    tree_files,
)

CASES_FILE = "cases.jsonl"
MANIFEST_FILE = "manifest.json"
ANSWERS_FILE = "answers.jsonl"
CHECKSUMS_FILE = "checksums.json"


@runtime_checkable
class AddsNumbers(Protocol):
    """What an adapter of this world implements."""

    def add(self, a: int, b: int) -> Any: ...


class Adder:
    """The reference agent: always right."""

    def add(self, a: int, b: int) -> int:
        return a + b


class AlwaysZero:
    """A negative control: answers 0, so the correctness check must fail."""

    def add(self, a: int, b: int) -> int:
        return 0


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class SumSuite(NamedTuple):
    """A loaded suite: its cases in file order, and each case's two operands."""

    cases: list[Case]
    operands: dict[str, tuple[int, int]]


class SumWorld(BaseWorld):
    kind = "__KIND__"
    adapter_protocol = AddsNumbers

    def load_suite(self, suite: Suite) -> SumSuite:
        manifest_name = suite.display(MANIFEST_FILE)
        manifest = read_json(suite.root / MANIFEST_FILE, display=manifest_name)
        files = tree_files(suite.root, exclude=(SUITE_FILE, MANIFEST_FILE))
        actual = artifact_set_digest({rel: path.read_bytes() for rel, path in files.items()})
        if not isinstance(manifest, dict) or manifest.get("artifact_set_digest") != actual:
            raise AgentbenchError(
                "digest_mismatch",
                f"the public files' digest is {actual}, which the manifest does not hold",
                file=manifest_name,
                field="artifact_set_digest",
            )
        loaded = SumSuite(cases=[], operands={})
        for line in read_jsonl(suite.root / CASES_FILE, display=suite.display(CASES_FILE)):
            row = line.value
            if (
                not isinstance(row, dict)
                or set(row) != {"id", "a", "b"}
                or not isinstance(row["id"], str)
                or not (_is_int(row["a"]) and _is_int(row["b"]))
            ):
                raise AgentbenchError(
                    "invalid_row",
                    "expected {id: string, a: integer, b: integer}",
                    file=suite.display(CASES_FILE),
                    line=line.line,
                )
            case_id: str = row["id"]
            loaded.cases.append(
                Case(suite_id=suite.id, case_id=case_id, file=CASES_FILE, line=line.line)
            )
            loaded.operands[case_id] = (row["a"], row["b"])
        return loaded

    def cases(self, suite: Suite) -> Sequence[Case]:
        loaded: SumSuite = suite.data
        return loaded.cases

    def public_view(self, suite: Suite, case: Case) -> dict[str, int]:
        loaded: SumSuite = suite.data
        a, b = loaded.operands[case.case_id]
        return {"a": a, "b": b}

    def reference_agent(self) -> Adder:
        return Adder()

    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        value = call_adapter(adapter.add, view["a"], view["b"])
        if not _is_int(value):
            raise MalformedOutput(f"the sum must be an integer, got {type(value).__name__}")
        return Outcome(output={"sum": value})

    def load_oracle(self, suite: Suite) -> dict[str, dict[str, Any]]:
        answers = suite.oracle_root / ANSWERS_FILE
        checksums_name = str(suite.oracle_root / CHECKSUMS_FILE)
        checksums = read_json(suite.oracle_root / CHECKSUMS_FILE, display=checksums_name)
        expected = checksums.get(ANSWERS_FILE) if isinstance(checksums, dict) else None
        if sha256_hex(answers.read_bytes()) != expected:
            raise AgentbenchError(
                "digest_mismatch",
                f"{ANSWERS_FILE} does not match its recorded sha256",
                file=checksums_name,
                field=ANSWERS_FILE,
            )
        oracle: dict[str, dict[str, Any]] = {}
        for line in read_jsonl(answers):
            row = line.value
            if not isinstance(row, dict) or not _is_int(row.get("sum")):
                raise AgentbenchError(
                    "invalid_row", "expected {id, sum, canary}", file=str(answers), line=line.line
                )
            oracle[row["id"]] = row
        return oracle

    def evaluate(self, suite: Suite, case: Case, outcome: Outcome, oracle: Any) -> CaseResult:
        expected = oracle[case.case_id]["sum"]
        output = outcome.output if isinstance(outcome.output, dict) else {}
        actual = output.get("sum")
        if actual is None:
            checks = [
                Check(name="sum_present", status=CheckStatus.MISSING, expected="an integer"),
                Check(name="sum_correct", status=CheckStatus.MISSING, expected=expected),
            ]
        else:
            correct = CheckStatus.PASS if actual == expected else CheckStatus.FAIL
            checks = [
                Check(name="sum_present", status=CheckStatus.PASS, actual=actual),
                Check(name="sum_correct", status=correct, expected=expected, actual=actual),
            ]
        right = actual == expected
        return grade(
            case,
            checks,
            measurements={"correct": int(right), "graded": 1},
            findings=() if right else ("wrong_sum",),
            outcome=outcome,
        )

    def metrics(self, suite: Suite) -> Sequence[MetricSpec]:
        return [
            MetricSpec(
                name="accuracy",
                family="answers",
                support_meaning="cases graded",
                numerator="correct",
                denominator="graded",
            )
        ]

    def dimensions(self, suite: Suite) -> Sequence[str]:
        return ["sum_present", "sum_correct"]

    def control_agents(self, suite: Suite) -> Sequence[ControlAgent]:
        return [
            ControlAgent(agent_id="adder", role="reference", factory=Adder),
            ControlAgent(
                agent_id="always_zero",
                role="negative",
                description="answers 0 to every case",
                factory=AlwaysZero,
            ),
        ]

    def leak_canaries(self, suite: Suite, oracle: Any) -> Sequence[str]:
        return [row["canary"] for row in oracle.values()]


WORLD = SumWorld()
'''

SUITE_YAML = """\
id: __SUITE__
version: 1.0.0
world: __KIND__
title: Sums of two integers
"""

CONTROLS_YAML = """\
schema_version: 1
suite: __SUITE__
provenance: written by agentbench new-world
controls:
  - id: always-zero
    agent: always_zero
    intervention: answers 0 to every case
    guarantee: sums are computed, not constant
    must_fail: [sum_correct]
    required_findings: [wrong_sum]
    must_pass: [sum_present]
    expected_metrics: {accuracy: 0.0}
"""

TEST = '''\
"""The __KIND__ world keeps the contract the pytest-agentbench core relies on."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_agentbench.testing import CHECK_NAMES, check_world

SUITE_ID = "__SUITE__"


@pytest.mark.parametrize("check", CHECK_NAMES)
def test_the_world_passes_the_conformance_kit(check: str, tmp_path: Path) -> None:
    report = check_world(SUITE_ID, checks=[check], workdir=tmp_path)
    assert report.passed, report.render()
'''


def _names(name: str) -> dict[str, str]:
    if not _NAME.match(name):
        raise AgentbenchError(
            "invalid_world_name",
            f"{name!r} is not a world name: lowercase letters and digits, "
            "words joined by '-' or '_', starting with a letter",
            field="NAME",
        )
    kind = name.replace("_", "-")
    return {
        "__KIND__": kind,
        "__PKG__": name.replace("-", "_"),
        "__DIST__": f"agentbench-{kind}",
        "__SUITE__": f"{kind}-v1",
    }


def _fill(template: str, names: dict[str, str]) -> str:
    for placeholder, value in names.items():
        template = template.replace(placeholder, value)
    return template


def scaffold_files(name: str) -> dict[str, str]:
    """Every file of the package ``name`` scaffolds, by path relative to its folder."""
    names = _names(name)
    package, suite_id = names["__PKG__"], names["__SUITE__"]
    cases = "".join(f'{{"id": "{case_id}", "a": {a}, "b": {b}}}\n' for case_id, a, b in CASES)
    answers = "".join(
        f'{{"id": "{case_id}", "sum": {a + b}, "canary": "CANARY-{suite_id}-{case_id}"}}\n'
        for case_id, a, b in CASES
    )
    manifest = {"artifact_set_digest": artifact_set_digest({"cases.jsonl": cases.encode()})}
    checksums = {"answers.jsonl": sha256_hex(answers.encode())}
    suite, oracle = f"{package}/suites/{suite_id}", f"{package}/oracles/{suite_id}"
    return {
        "pyproject.toml": _fill(PYPROJECT, names),
        f"{package}/__init__.py": _fill(INIT, names),
        f"{package}/registration.py": _fill(REGISTRATION, names),
        f"{package}/world.py": _fill(WORLD, names),
        f"{suite}/suite.yaml": _fill(SUITE_YAML, names),
        f"{suite}/cases.jsonl": cases,
        f"{suite}/manifest.json": pretty_json(manifest),
        f"{oracle}/answers.jsonl": answers,
        f"{oracle}/checksums.json": pretty_json(checksums),
        f"{oracle}/controls.yaml": _fill(CONTROLS_YAML, names),
        f"tests/test_{package}.py": _fill(TEST, names),
    }


def write_scaffold(name: str, directory: Path) -> Path:
    """Write the package into ``directory/name``; ``target_exists`` if that folder exists."""
    return write_new_folder(directory / name, scaffold_files(name))


def cmd_new_world(args: argparse.Namespace, registry: WorldRegistry) -> int:
    """Needs no world: the scaffold is the package a new world starts from."""
    root = write_scaffold(args.name, Path(args.directory))
    print(f"wrote {root}: install it with `pip install -e {root}`, then run `pytest {root}`")
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    new_world = commands.add_parser(
        "new-world", help="write a new world package that passes the conformance kit"
    )
    new_world.set_defaults(handler=cmd_new_world)
    new_world.add_argument("name", help="the world kind, e.g. arith")
    new_world.add_argument(
        "-C", "--directory", default=".", help="where to create the package folder"
    )
