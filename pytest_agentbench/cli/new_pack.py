"""``agentbench new-pack NAME``: an operations domain pack to start from, as its own distribution.

The pack is a worked one, not a stub: a heating repair on a quote priced net
with VAT on top (the seed's own example of a frozen semantic event), with its
reducers, action executors, completion guard, grade, a reference agent, two
negative controls, an example OperationSpec in the original's layout and the
negative-control oracle that constrains them. Its modules are this package's
``pack_template`` (type-checked and linted with the rest); ``NAME`` names the
distribution, the package and the operation type
(``<NAME, '-' and '_' read as '.'>.synthetic``). The pack imports only
``pytest_agentbench.sdk`` and registers ``<package>.pack:PACK`` under the
entry-point group ``pytest_agentbench.operations_packs``.
"""

from __future__ import annotations

import argparse
import re
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_agentbench.cli.common import write_new_folder
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import WorldRegistry

_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
TEMPLATE_PACKAGE = "pytest_agentbench.cli.pack_template"
TEMPLATE_OPERATION_TYPE = "heating.repair.synthetic"
"""The operation type the template's modules and example name; each scaffold names its own."""
MODULES = ("__init__.py", "vocabulary.py", "operation.py", "agents.py", "grading.py", "pack.py")
EXAMPLE = ("operation.yaml", "controls.yaml")

PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "__DIST__"
version = "0.1.0"
description = "The __TYPE__ operations domain pack for pytest-agentbench."
requires-python = ">=3.11"
dependencies = ["pytest-agentbench"]

[project.entry-points."pytest_agentbench.operations_packs"]
__NAME__ = "__PKG__.pack:PACK"

[tool.setuptools.packages.find]
include = ["__PKG__*"]
"""

TEST = '''\
"""The __TYPE__ pack, installed, runs its example by path and holds its own gate."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_agentbench.cli.main import main

EXAMPLE = str(Path(__file__).resolve().parent.parent / "examples" / "__NAME__")


def test_the_pack_is_installed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list-packs"]) == 0
    assert "__TYPE__" in capsys.readouterr().out


def test_the_example_spec_reads(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate-spec", f"{EXAMPLE}/operation.yaml"]) == 0


def test_the_reference_and_every_negative_hold_the_oracle() -> None:
    assert main(["check", EXAMPLE]) == 0


def test_the_example_runs_as_a_pytest_collection(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", EXAMPLE)
    # Two variants and four controls: the reference on each, and both negatives.
    result.assert_outcomes(passed=6)
'''

CONFTEST = """\
pytest_plugins = ["pytester"]
"""


def _names(name: str) -> dict[str, str]:
    if not _NAME.match(name):
        raise AgentbenchError(
            "invalid_pack_name",
            f"{name!r} is not a pack name: lowercase letters and digits, "
            "words joined by '-' or '_', starting with a letter",
            field="NAME",
        )
    return {
        "__NAME__": name,
        "__PKG__": name.replace("-", "_"),
        "__DIST__": f"agentbench-pack-{name.replace('_', '-')}",
        "__TYPE__": f"{name.replace('-', '.').replace('_', '.')}.synthetic",
    }


def _fill(template: str, names: dict[str, str]) -> str:
    for placeholder, value in names.items():
        template = template.replace(placeholder, value)
    return template


def _template(*parts: str) -> str:
    return resources.files(TEMPLATE_PACKAGE).joinpath(*parts).read_text(encoding="utf-8")


def scaffold_files(name: str) -> dict[str, str]:
    """Every file of the distribution ``name`` scaffolds, by path relative to its folder."""
    names = _names(name)
    package, operation_type = names["__PKG__"], names["__TYPE__"]
    files = {
        "pyproject.toml": _fill(PYPROJECT, names),
        "tests/conftest.py": CONFTEST,
        "tests/test_pack.py": _fill(TEST, names),
    }
    for module in MODULES:
        text = _template(module).replace(TEMPLATE_OPERATION_TYPE, operation_type)
        files[f"{package}/{module}"] = text
    for document in EXAMPLE:
        text = _template("example", document).replace(TEMPLATE_OPERATION_TYPE, operation_type)
        files[f"examples/{name}/{document}"] = text
    return files


def write_scaffold(name: str, directory: Path) -> Path:
    """Write the distribution into ``directory/name``; ``target_exists`` if that folder exists."""
    return write_new_folder(directory / name, scaffold_files(name))


def cmd_new_pack(args: argparse.Namespace, registry: WorldRegistry) -> int:
    """Needs no suite: the scaffold is the distribution a new domain starts from."""
    root = write_scaffold(args.name, Path(args.directory))
    print(
        f"wrote {root}: install it with `pip install -e {root}`, then run "
        f"`agentbench check {root}/examples/{args.name}` and `pytest {root}`"
    )
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    new_pack = commands.add_parser(
        "new-pack", help="write a new operations domain pack, its example and its oracle"
    )
    new_pack.set_defaults(handler=cmd_new_pack)
    new_pack.add_argument("name", help="the pack's name, e.g. heating-repair")
    new_pack.add_argument(
        "-C", "--directory", default=".", help="where to create the distribution folder"
    )
