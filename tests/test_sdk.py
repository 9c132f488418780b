"""The public SDK module: what it exports, what importing it costs, who may import past it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_agentbench
from pytest_agentbench import sdk
from tests.shared_sessions import run_probe

SDK_SOURCE = Path(sdk.__file__)
WORLDS_ROOT = Path(pytest_agentbench.__file__).parent / "worlds"


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _type_checking_imports(tree: ast.Module) -> dict[str, str]:
    """Name -> module of every import in the facade's ``if TYPE_CHECKING:`` block."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.dump(statement)
                assert statement.module is not None
                for alias in statement.names:
                    name = alias.asname or alias.name
                    assert name not in found, f"{name} imported twice"
                    found[name] = statement.module
    return found


def _assigned_literal(tree: ast.Module, name: str) -> object:
    for node in tree.body:
        targets = (
            [node.target]
            if isinstance(node, ast.AnnAssign)
            else (node.targets if isinstance(node, ast.Assign) else [])
        )
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            assert node.value is not None
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} is not assigned in {SDK_SOURCE}")


def test_every_exported_name_resolves_to_the_object_in_its_module() -> None:
    import importlib

    for name in sdk.__all__:
        module = importlib.import_module(sdk._EXPORTS[name])
        # The facade's resolver, not the attribute it cached: pytester's inline runs drop the
        # modules first imported during them, so a name an earlier test resolved there was
        # cached from a module object this import replaces.
        assert sdk.__getattr__(name) is getattr(module, name), name
        assert hasattr(sdk, name), name


def test_exports_all_and_the_type_checking_imports_name_the_same_things() -> None:
    tree = ast.parse(SDK_SOURCE.read_text(encoding="utf-8"))
    exports = _assigned_literal(tree, "_EXPORTS")
    listed = _assigned_literal(tree, "__all__")
    assert isinstance(exports, dict)
    assert isinstance(listed, list)
    assert len(listed) == len(set(listed)), "a name listed twice in __all__"
    assert sorted(listed) == sorted(exports)
    assert _type_checking_imports(tree) == exports
    assert exports == sdk._EXPORTS
    assert listed == sdk.__all__


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = sdk.no_such_name  # type: ignore[attr-defined]
    assert set(sdk.__all__) <= set(dir(sdk))


def test_a_registration_imports_no_pydantic() -> None:
    """What a world's registration module needs from the SDK costs no pydantic or world."""
    probe = (
        "import json, sys\n"
        "from pytest_agentbench.sdk import hookimpl, LazyWorld, SUITE_FILE\n"
        "LazyWorld('probe', 'probe_module:WORLD', suite_roots=['/abs'])\n"
        "heavy = sorted(n for n in sys.modules if n.split('.')[0] in ('pydantic', 'yaml')\n"
        "    or n.startswith(('pytest_agentbench.worlds.', 'pytest_agentbench.sdk.contracts')))\n"
        "print(json.dumps(heavy))\n"
    )
    assert run_probe(probe) == []


def _imported_modules(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """(line, module) of every import anywhere in the tree: nested, local or TYPE_CHECKING."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # A relative import stays inside the module's own package.
                found.append((node.lineno, package))
            elif node.module is not None:
                found.extend(
                    (node.lineno, f"{node.module}.{alias.name}")
                    if node.module == "pytest_agentbench"
                    else (node.lineno, node.module)
                    for alias in node.names
                )
    return found


def _allowed(module: str, kind: str) -> bool:
    own = f"pytest_agentbench.worlds.{kind}"
    if not (module == "pytest_agentbench" or module.startswith("pytest_agentbench.")):
        return True
    return module in {"pytest_agentbench.sdk", own} or module.startswith(f"{own}.")


WORLD_KINDS = sorted(
    path.name for path in WORLDS_ROOT.iterdir() if (path / "__init__.py").is_file()
)


@pytest.mark.parametrize("kind", WORLD_KINDS)
def test_a_built_in_world_imports_only_the_sdk_and_its_own_package(kind: str) -> None:
    sources = sorted((WORLDS_ROOT / kind).rglob("*.py"))
    assert sources
    crossing = []
    for source in sources:
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
        for line, module in _imported_modules(tree, f"pytest_agentbench.worlds.{kind}"):
            if not _allowed(module, kind):
                crossing.append(f"{source.relative_to(WORLDS_ROOT)}:{line}: {module}")
    assert not crossing, "\n".join(crossing)


def test_the_import_walk_sees_local_and_type_checking_imports() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pytest_agentbench.run.session import LoadedSuite\n"
        "def f():\n"
        "    import pytest_agentbench.report.terminal\n"
        "    from pytest_agentbench import sdk, tools\n"
        "from . import models\n"
    )
    modules = [module for _, module in _imported_modules(tree, "pytest_agentbench.worlds.x")]
    assert [module for module in modules if not _allowed(module, "x")] == [
        "pytest_agentbench.run.session",
        "pytest_agentbench.report.terminal",
        "pytest_agentbench.tools",
    ]
