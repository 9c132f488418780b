"""The layers import one way: the contract DESIGN.md states, read from the source.

Every ``import`` of the package's own modules is found by reading each file's
syntax tree, wherever it stands (a function-level import is an import all the
same); only imports under ``if TYPE_CHECKING:`` are left out, since they never
run. A folder may import its own modules and any folder of a lower layer; a
world imports only the SDK. The SDK's lazy re-exports count as imports too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_agentbench"

LAYERS: dict[str, int] = {
    "": 0,  # pytest_agentbench/__init__.py: the version, nothing else
    "sdk": 0,
    "scoring": 1,
    "agents": 2,
    "run": 3,
    "isolation": 4,
    "testing": 4,
    "report": 5,
    "judging": 6,
    "plugin": 7,
    "cli": 8,
}
"""Folder -> floor, ground first. A folder imports only its own floor's folder or lower ones;
folders on one floor do not import each other."""

WORLDS = "worlds"


def folder_of(module: str) -> str:
    """``pytest_agentbench.run.session`` -> ``run``; a world -> ``worlds.<kind>``."""
    parts = module.split(".")[1:]
    if not parts or (parts[0] not in LAYERS and parts[0] != WORLDS):
        # The package itself, or a name of its __init__ (``__version__``); a folder missing
        # from the contract is caught by test_every_folder_of_the_package_is_in_the_contract.
        return ""
    if parts[0] == WORLDS and len(parts) > 1:
        return f"{WORLDS}.{parts[1]}"
    return parts[0]


def module_name(path: Path) -> tuple[str, str]:
    """(module, the package relative imports start from)."""
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for statement in node.body for child in ast.walk(statement))
    return skipped


def imports_of(path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported module of ours) for every import ``path`` can run."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    _, package = module_name(path)
    skipped = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                # ``from pytest_agentbench import plugin`` imports the folder ``plugin``.
                yield node.lineno, f"{source}.{alias.name}" if source.count(".") < 1 else source
    if path.name == "__init__.py" and path.parent.name == "sdk":
        # The SDK's names resolve lazily, each from the module its table names.
        for node in ast.walk(tree):
            if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "_EXPORTS":
                assert isinstance(node.value, ast.Dict)
                for value in node.value.values:
                    assert isinstance(value, ast.Constant)
                    yield value.lineno, str(value.value)


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module, _ = module_name(path)
        here = folder_of(module)
        for line, target in imports_of(path):
            if target != "pytest_agentbench" and not target.startswith("pytest_agentbench."):
                continue
            there = folder_of(target)
            if there == here:
                continue
            where = f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
            if here.startswith(f"{WORLDS}.") or here == WORLDS:
                if there != "sdk":
                    found.append(f"{where}: a world imports only pytest_agentbench.sdk")
                continue
            if there.startswith(f"{WORLDS}.") or there == WORLDS:
                found.append(f"{where}: the core imports no world")
                continue
            if here not in LAYERS or there not in LAYERS:
                found.append(f"{where}: folder not in the layers contract")
            elif LAYERS[there] >= LAYERS[here]:
                found.append(
                    f"{where}: {here} (floor {LAYERS[here]}) may not import {there} "
                    f"(floor {LAYERS[there]})"
                )
    return found


def test_every_folder_of_the_package_is_in_the_contract() -> None:
    folders = {
        entry.name
        for entry in PACKAGE.iterdir()
        if entry.is_dir() and (entry / "__init__.py").is_file()
    }
    assert folders - {WORLDS} == set(LAYERS) - {""}


def test_the_layers_import_one_way() -> None:
    assert violations() == []


@pytest.mark.parametrize(
    ("importer", "source", "expected"),
    [
        ("run/session.py", "from pytest_agentbench.plugin.collect import CaseItem", "may not"),
        ("sdk/base.py", "import pytest_agentbench.scoring.stats", "may not"),
        ("worlds/retrieval/x.py", "from pytest_agentbench.run import session", "only"),
        ("cli/x.py", "from pytest_agentbench.worlds.operations import artifact", "no world"),
        ("report/x.py", "from ..plugin import collect", "may not"),
    ],
)
def test_the_contract_catches_an_upward_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, importer: str, source: str, expected: str
) -> None:
    """The check can fail: each planted import is named, with why."""
    package = tmp_path / "pytest_agentbench"
    target = package / importer
    target.parent.mkdir(parents=True)
    target.write_text(f"def late() -> None:\n    {source}\n", encoding="utf-8")
    monkeypatch.setattr(f"{__name__}.PACKAGE", package)
    (found,) = violations()
    assert expected in found
    assert found.startswith(f"pytest_agentbench/{importer}:2 imports")


def test_type_checking_imports_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "pytest_agentbench"
    (package / "run").mkdir(parents=True)
    (package / "run" / "x.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pytest_agentbench.plugin.collect import CaseItem\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(f"{__name__}.PACKAGE", package)
    assert violations() == []
