from __future__ import annotations

import sys
import types

import pytest

from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.registry import LazyWorld, WorldRegistry
from tests.demo_world import DemoWorld


def _module_holding(world: object) -> types.ModuleType:
    module = types.ModuleType("agentbench_lazy_probe")
    module.__dict__["WORLD"] = world
    return module


def test_a_registry_refuses_a_kind_registered_twice() -> None:
    with pytest.raises(AgentbenchError) as refused:
        WorldRegistry([DemoWorld(), DemoWorld()])
    assert refused.value.code == "duplicate_world_kind"


def test_an_unknown_kind_names_the_known_ones() -> None:
    with pytest.raises(AgentbenchError) as refused:
        WorldRegistry([DemoWorld()]).get("nope", file="suites/x/suite.yaml")
    assert refused.value.code == "unknown_world_kind"
    assert "known: demo" in refused.value.render()


def test_a_lazy_world_is_listed_by_kind_without_importing_its_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "agentbench_lazy_probe", raising=False)
    registry = WorldRegistry([LazyWorld("probe", "agentbench_lazy_probe:WORLD")])
    assert registry.kinds() == ["probe"]
    assert "agentbench_lazy_probe" not in sys.modules


def test_a_lazy_world_resolves_to_the_object_it_names_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = DemoWorld()
    monkeypatch.setitem(sys.modules, "agentbench_lazy_probe", _module_holding(world))
    lazy = LazyWorld("demo", "agentbench_lazy_probe:WORLD")
    registry = WorldRegistry([lazy])
    assert registry.get("demo") is world
    monkeypatch.delitem(sys.modules, "agentbench_lazy_probe")
    assert registry.worlds() == [world]


def test_a_lazy_world_that_does_not_import_is_a_named_refusal() -> None:
    registry = WorldRegistry([LazyWorld("ghost", "agentbench_no_such_module:WORLD")])
    with pytest.raises(AgentbenchError) as refused:
        registry.get("ghost", file="suites/g/suite.yaml")
    assert refused.value.code == "world_load_failed"
    assert refused.value.render().startswith("[world_load_failed] suites/g/suite.yaml: world: ")
    assert "ModuleNotFoundError" in refused.value.render()


def test_a_lazy_world_of_another_kind_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agentbench_lazy_probe", _module_holding(DemoWorld()))
    registry = WorldRegistry([LazyWorld("other", "agentbench_lazy_probe:WORLD")])
    with pytest.raises(AgentbenchError) as refused:
        registry.get("other")
    assert refused.value.code == "world_load_failed"
    assert "not world kind 'other'" in str(refused.value)


def test_the_authority_world_registers_lazily() -> None:
    from pytest_agentbench.worlds.authority import registration

    (world,) = registration.pytest_agentbench_world_kinds()
    assert isinstance(world, LazyWorld)
    assert world.kind == "authority"
    assert world.resolve().kind == "authority"
