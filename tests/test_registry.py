from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.registry import KindProtocols, LazyWorld, WorldRegistry
from pytest_agentbench.sdk.tools import ToolAgent
from tests.demo_world import DemoAdapter, DemoWorld, InteractiveDemoWorld, Reference
from tests.outside_world import KIND, PACKAGE, SUITE_ID, install_outside_world

DEMO_ADAPTER = "tests.demo_world:DemoAdapter"


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
    assert registry.get("demo") is world


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


# --- adapter protocols -------------------------------------------------------------


def test_declared_protocols_are_given_without_importing_the_world(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "agentbench_lazy_probe", raising=False)
    lazy = LazyWorld(
        "probe",
        "agentbench_lazy_probe:WORLD",
        adapter_protocols=("pytest_agentbench.sdk.tools:ToolAgent", DEMO_ADAPTER),
    )
    (kind,) = WorldRegistry([lazy]).adapter_protocols()
    assert kind == KindProtocols("probe", (ToolAgent, DemoAdapter))
    assert kind.names == "ToolAgent or DemoAdapter"
    assert kind.accepts(Reference())
    assert not kind.accepts(object())
    assert "agentbench_lazy_probe" not in sys.modules


def test_a_lazy_world_declaring_no_protocols_is_imported_for_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "agentbench_lazy_probe", _module_holding(DemoWorld()))
    registry = WorldRegistry([LazyWorld("demo", "agentbench_lazy_probe:WORLD")])
    assert registry.adapter_protocols() == [KindProtocols("demo", (DemoAdapter,))]


def test_a_world_registered_as_an_object_gives_every_protocol_it_accepts() -> None:
    registry = WorldRegistry([InteractiveDemoWorld(), DemoWorld()])
    assert registry.adapter_protocols() == [
        KindProtocols("demo", (DemoAdapter,)),
        KindProtocols("demo-tools", (ToolAgent, DemoAdapter)),
    ]


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        pytest.param("agentbench_no_such_module:Adapter", "ModuleNotFoundError", id="module"),
        pytest.param("tests.demo_world:NoSuchAdapter", "AttributeError", id="attribute"),
        pytest.param("tests.demo_world:WORLD", "is not a class", id="not-a-class"),
    ],
)
def test_a_declared_protocol_that_does_not_load_is_a_named_refusal(
    target: str, reason: str
) -> None:
    registry = WorldRegistry(
        [LazyWorld("probe", "tests.demo_world:WORLD", adapter_protocols=(target,))]
    )
    with pytest.raises(AgentbenchError) as refused:
        registry.adapter_protocols()
    assert refused.value.code == "world_load_failed"
    assert refused.value.location.field == "adapter_protocols"
    assert "world kind 'probe'" in refused.value.reason
    assert reason in refused.value.reason


@pytest.mark.parametrize(
    "targets",
    [
        pytest.param(DEMO_ADAPTER, id="bare-string"),
        pytest.param(("DemoAdapter",), id="no-module"),
        pytest.param(("tests.demo_world:",), id="no-attribute"),
        pytest.param((DemoAdapter,), id="a-class"),
    ],
)
def test_malformed_protocol_declarations_are_refused(targets: object) -> None:
    with pytest.raises(AgentbenchError) as refused:
        LazyWorld("x", "x:WORLD", adapter_protocols=targets)  # type: ignore[arg-type]
    assert refused.value.code == "invalid_adapter_protocols"
    assert "world kind 'x'" in refused.value.reason


def test_a_world_accepting_other_protocols_than_its_registration_declares_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "agentbench_lazy_probe", _module_holding(DemoWorld()))
    lazy = LazyWorld(
        "demo",
        "agentbench_lazy_probe:WORLD",
        adapter_protocols=("pytest_agentbench.sdk.tools:ToolAgent",),
    )
    with pytest.raises(AgentbenchError) as refused:
        WorldRegistry([lazy]).get("demo", file="suites/d/suite.yaml")
    assert refused.value.code == "world_load_failed"
    assert refused.value.render() == (
        "[world_load_failed] suites/d/suite.yaml: adapter_protocols: world kind 'demo' is "
        "registered accepting ToolAgent but agentbench_lazy_probe:WORLD accepts DemoAdapter"
    )


def test_a_world_accepting_what_its_registration_declares_resolves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = InteractiveDemoWorld()
    monkeypatch.setitem(sys.modules, "agentbench_lazy_probe", _module_holding(world))
    lazy = LazyWorld(
        "demo-tools",
        "agentbench_lazy_probe:WORLD",
        adapter_protocols=("pytest_agentbench.sdk.tools:ToolAgent", DEMO_ADAPTER),
    )
    assert WorldRegistry([lazy]).get("demo-tools") is world


def test_a_relative_suite_root_is_refused_by_name() -> None:
    with pytest.raises(AgentbenchError) as refused:
        LazyWorld("probe", "agentbench_lazy_probe:WORLD", suite_roots=["suites"])
    assert refused.value.code == "invalid_suite_roots"
    assert refused.value.location.field == "suite_roots"
    assert "'suites'" in refused.value.reason


def test_one_suite_id_shipped_from_two_roots_is_refused_naming_both(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    for root in (first, second):
        (root / "same-id").mkdir(parents=True)
        (root / "same-id" / "suite.yaml").write_text("id: same-id\n", encoding="utf-8")
    (second / "other").mkdir()
    (second / "other" / "suite.yaml").write_text("id: other\n", encoding="utf-8")
    registry = WorldRegistry(
        [
            LazyWorld("a", "agentbench_lazy_probe:A", suite_roots=[first]),
            LazyWorld("b", "agentbench_lazy_probe:B", suite_roots=[second]),
        ]
    )
    with pytest.raises(AgentbenchError) as refused:
        registry.suites()
    assert refused.value.code == "duplicate_suite_id"
    assert str(first / "same-id") in refused.value.reason
    assert str(second / "same-id") in refused.value.reason
    # Two kinds sharing one root ship each suite once.
    shared = WorldRegistry(
        [
            LazyWorld("a", "agentbench_lazy_probe:A", suite_roots=[second]),
            LazyWorld("b", "agentbench_lazy_probe:B", suite_roots=[second]),
        ]
    )
    assert shared.suites() == {"other": second / "other", "same-id": second / "same-id"}


@pytest.fixture
def outside_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An unmarked outside world, found by entry point here and by every subprocess of the
    test (and forgotten by this process afterwards)."""
    site = tmp_path / "site"
    install_outside_world(site)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), *sys.path]))
    monkeypatch.syspath_prepend(str(site))
    before = set(sys.modules)
    yield site
    for name in set(sys.modules) - before:
        if name.split(".")[0] == PACKAGE:
            del sys.modules[name]


def _agentbench(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The ``agentbench`` command in this process: what it finds by entry point is what a
    process of its own would find on the same path (pytest's run below is one)."""
    capsys.readouterr()
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_an_unmarked_entry_point_world_ships_suites_the_cli_and_pytest_run_by_id(
    outside_site: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _agentbench(capsys, "list")
    assert status == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert [SUITE_ID, KIND, "3 cases", f"Demo {SUITE_ID}"] in rows
    status, out, err = _agentbench(capsys, "verify", SUITE_ID)
    assert status == 0, err
    assert out.startswith(f"ok: {SUITE_ID}:")
    result = pytester.runpytest_subprocess(
        f"--agentbench-suite={SUITE_ID}", "-p", "no:cacheprovider", "-q"
    )
    # Three cases and the one declared negative control, from the package's own folder.
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([f"agentbench {SUITE_ID}: 3 passed; controls 1/1"])
