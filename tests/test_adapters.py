from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.run.adapters import (
    REFERENCE_AGENTS,
    AdapterFolders,
    describe_adapter,
    implements,
    kind_protocols,
    load_adapter,
    protocol_name,
)
from pytest_agentbench.sdk.errors import UsageError
from pytest_agentbench.sdk.world import World
from tests.demo_world import WORLD as DEMO_WORLD
from tests.demo_world import Reference

WORLD: World = DEMO_WORLD
KINDS = [kind_protocols(WORLD)]

MODULE = "agentbench_test_adapters_module"


class BuildCounter(Reference):
    built = 0

    def __init__(self) -> None:
        BuildCounter.built += 1


class CallableAdapter(Reference):
    """Implements the protocol and is callable: must be used as is, never called."""

    def __call__(self) -> Any:
        raise AssertionError("a ready adapter must not be called")


class BrokenConstructor(Reference):
    def __init__(self) -> None:
        raise RuntimeError("no API key")


class NoAnswer:
    def reply(self, question: str) -> int:
        return 0


def factory() -> Reference:
    return Reference()


def failing_factory() -> Reference:
    raise ValueError("config missing")


def wrong_factory() -> NoAnswer:
    return NoAnswer()


class Holder:
    instance = Reference()


READY = Reference()


@pytest.fixture(autouse=True)
def adapter_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType(MODULE)
    for name, value in {
        "BuildCounter": BuildCounter,
        "CallableAdapter": CallableAdapter,
        "callable_ready": CallableAdapter(),
        "BrokenConstructor": BrokenConstructor,
        "NoAnswer": NoAnswer,
        "no_answer": NoAnswer(),
        "factory": factory,
        "failing_factory": failing_factory,
        "wrong_factory": wrong_factory,
        "Holder": Holder,
        "READY": READY,
    }.items():
        setattr(module, name, value)
    monkeypatch.setitem(sys.modules, MODULE, module)
    return module


def refusal(spec: str, code: str) -> UsageError:
    with pytest.raises(UsageError) as caught:
        load_adapter(spec, KINDS)
    error = caught.value
    assert error.code == code
    assert error.location.field == "--agentbench-adapter"
    assert "\n" not in error.render()
    return error


# --- accepted forms --------------------------------------------------------------


def test_a_class_is_built_with_no_arguments() -> None:
    before = BuildCounter.built
    adapter = load_adapter(f"{MODULE}:BuildCounter", KINDS)
    assert isinstance(adapter, BuildCounter)
    assert BuildCounter.built == before + 1
    assert adapter.answer("2+3") == 5


def test_a_factory_is_called_with_no_arguments() -> None:
    adapter = load_adapter(f"{MODULE}:factory", KINDS)
    assert type(adapter) is Reference


def test_an_instance_is_used_as_is() -> None:
    assert load_adapter(f"{MODULE}:READY", KINDS) is READY


def test_a_callable_instance_that_implements_the_protocol_is_not_called() -> None:
    module = sys.modules[MODULE]
    assert load_adapter(f"{MODULE}:callable_ready", KINDS) is module.callable_ready


def test_a_dotted_attribute_path_is_followed() -> None:
    assert load_adapter(f"{MODULE}:Holder.instance", KINDS) is Holder.instance


def test_a_module_imported_from_the_path_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agentbench_file_adapter.py").write_text(
        "class Agent:\n    def answer(self, question):\n        return 7\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "agentbench_file_adapter", raising=False)
    adapter = load_adapter("agentbench_file_adapter:Agent", KINDS)
    assert adapter.answer("1+1") == 7


# --- refusals --------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["no_colon", f"{MODULE}:", ":READY", ""])
def test_a_spec_without_module_and_attribute_is_refused(spec: str) -> None:
    error = refusal(spec, "adapter_spec")
    assert f"{spec!r} is not 'module:attr'" in error.reason


def test_a_module_that_does_not_exist_is_refused() -> None:
    error = refusal("agentbench_no_such_module_xyz:Agent", "adapter_import")
    assert "'agentbench_no_such_module_xyz'" in error.reason
    assert "ModuleNotFoundError" in error.reason


def test_a_module_that_fails_to_import_is_refused_with_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agentbench_broken_adapter.py").write_text(
        "raise RuntimeError('missing dependency')\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    error = refusal("agentbench_broken_adapter:Agent", "adapter_import")
    assert "RuntimeError: missing dependency" in error.reason


def test_a_missing_attribute_is_refused() -> None:
    error = refusal(f"{MODULE}:Missing", "adapter_attribute")
    assert f"module {MODULE!r} has no attribute 'Missing'" in error.reason


def test_a_missing_nested_attribute_is_refused_with_the_whole_path() -> None:
    error = refusal(f"{MODULE}:Holder.missing", "adapter_attribute")
    assert "'Holder.missing'" in error.reason


def test_a_constructor_that_raises_is_refused_with_the_cause() -> None:
    error = refusal(f"{MODULE}:BrokenConstructor", "adapter_build")
    assert "RuntimeError: no API key" in error.reason


def test_a_factory_that_raises_is_refused_with_the_cause() -> None:
    error = refusal(f"{MODULE}:failing_factory", "adapter_build")
    assert "ValueError: config missing" in error.reason


@pytest.mark.parametrize("attr", ["no_answer", "NoAnswer", "wrong_factory"])
def test_an_object_without_a_known_protocol_is_refused(attr: str) -> None:
    error = refusal(f"{MODULE}:{attr}", "adapter_protocol")
    assert "(NoAnswer) implements no known protocol" in error.reason
    assert "expected one of: DemoAdapter (demo)" in error.reason


def test_with_no_world_kinds_every_adapter_is_refused() -> None:
    with pytest.raises(UsageError) as caught:
        load_adapter(f"{MODULE}:READY", [])
    assert caught.value.code == "adapter_protocol"
    assert "no world kinds are registered" in caught.value.reason


# --- helpers ---------------------------------------------------------------------


def test_implements_checks_the_world_protocol() -> None:
    assert implements(Reference(), WORLD)
    assert not implements(NoAnswer(), WORLD)
    assert protocol_name(WORLD) == "DemoAdapter"


def test_describe_adapter_names_the_spec_and_the_class() -> None:
    assert describe_adapter(None, REFERENCE_AGENTS) == "built-in reference agents"
    assert describe_adapter("m:READY", READY) == "m:READY (tests.demo_world.Reference)"
    assert repr(REFERENCE_AGENTS) == "<built-in reference agents>"


# --- where the module is looked for --------------------------------------------------


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AdapterFolders:
    """An invocation folder inside a rootdir, each holding modules of their own."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    rootdir, invocation = tmp_path / "project", tmp_path / "project" / "work"
    invocation.mkdir(parents=True)
    for folder, origin in ((rootdir, "rootdir"), (invocation, "invocation")):
        for name in ("agentbench_both_places", f"agentbench_{origin}_only"):
            (folder / f"{name}.py").write_text(
                f"ORIGIN = {origin!r}\n"
                "class Agent:\n    def answer(self, question):\n        return 1\n",
                encoding="utf-8",
            )
            monkeypatch.delitem(sys.modules, name, raising=False)
    return AdapterFolders(invocation, rootdir)


def test_the_invocation_folder_comes_first_then_the_rootdir(folders: AdapterFolders) -> None:
    invocation, rootdir = folders.folders()
    assert folders.put_on_path("agentbench_both_places.sub") == invocation
    assert sys.path[0] == str(invocation)
    assert folders.put_on_path("agentbench_rootdir_only") == rootdir
    assert sys.path[:2] == [str(rootdir), str(invocation)]
    assert folders.put_on_path("agentbench_rootdir_only") == rootdir
    assert sys.path[:2] == [str(rootdir), str(invocation)], "not put on the path twice"
    assert folders.put_on_path("agentbench_in_neither_place") is None
    assert folders.put_on_path("pytest") is None, "an imported module stays as it is"
    assert "agentbench_both_places" not in sys.modules, "searching imports nothing"


def test_load_adapter_imports_from_the_folders_with_their_precedence(
    folders: AdapterFolders,
) -> None:
    load_adapter("agentbench_both_places:Agent", KINDS, folders)
    assert sys.modules["agentbench_both_places"].ORIGIN == "invocation"
    load_adapter("agentbench_rootdir_only:Agent", KINDS, folders)
    assert sys.modules["agentbench_rootdir_only"].ORIGIN == "rootdir"


def test_a_module_found_nowhere_is_refused_naming_the_folders(folders: AdapterFolders) -> None:
    invocation, rootdir = folders.folders()
    with pytest.raises(UsageError) as caught:
        load_adapter("agentbench_in_neither_place.sub:Agent", KINDS, folders)
    assert caught.value.code == "adapter_import"
    assert caught.value.reason.endswith(
        "ModuleNotFoundError: No module named 'agentbench_in_neither_place'; searched the "
        f"invocation folder {invocation}, the rootdir {rootdir} and sys.path"
    )
    assert AdapterFolders(rootdir, rootdir).describe() == (
        f"the invocation folder and rootdir {rootdir} and sys.path"
    )
    assert (
        AdapterFolders(invocation).describe() == f"the invocation folder {invocation} and sys.path"
    )


def test_a_module_that_is_found_but_fails_is_refused_without_the_folders(
    folders: AdapterFolders,
) -> None:
    invocation, _ = folders.folders()
    (invocation / "agentbench_needs_more.py").write_text(
        "import agentbench_missing_dependency\n", encoding="utf-8"
    )
    with pytest.raises(UsageError) as caught:
        load_adapter("agentbench_needs_more:Agent", KINDS, folders)
    assert caught.value.reason.endswith("No module named 'agentbench_missing_dependency'")
