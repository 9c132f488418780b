"""The plugin is inert in a run without benchmarks, and whole in a run with them.

The entry-point module registers options, markers and fixtures only; the
rest is turned on when the run sets an option, collects a suite file or a
recognised layout, or a test requests a plugin fixture. (A packaged suite named alone:
tests/worlds/authority/test_world.py's collection of asteria-authored-v1 by its id.) Under xdist the
controller follows the workers' decision. Runs whose imports are checked run
in a subprocess: the test process itself has imported everything.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_agentbench.plugin import census
from pytest_agentbench.plugin import facade as plugin
from pytest_agentbench.plugin import options as plugin_options
from pytest_agentbench.report import recorder
from tests.demo_world import REGISTERING_CONFTEST, write_demo_suite
from tests.layout_world import write_layout_folder
from tests.shared_sessions import run_probe

DISTRIBUTIONS = [pytest.param([], id="no-xdist"), pytest.param(["-n", "1"], id="n1")]
"""Serially and under xdist, where the controller follows the workers' decision: ``-n 0`` is
the serial path again, and one worker shows the split between controller and worker as well
as two would (no test here aggregates across workers)."""

HEAVY_PREFIXES = ("pydantic", "yaml", "pytest_agentbench.report", "pytest_agentbench.worlds")

# Writes, in every process, which heavy modules it imported and whether the
# plugin was loaded at all (a blocked plugin would make the check vacuous).
IMPORT_PROBE = """
import json, sys

HEAVY = (
    "pydantic", "yaml", "pytest_agentbench.report", "pytest_agentbench.sdk.contracts",
    "pytest_agentbench.run.session", "pytest_agentbench.plugin.collect",
    "pytest_agentbench.plugin.hooks",
)
WORLD_DECLARATIONS = ("pytest_agentbench.worlds",)


def world_module(name):
    # A world's registration declares it (kind, markers) and imports nothing of it.
    parts = name.split(".")
    return name.startswith("pytest_agentbench.worlds.") and len(parts) > 3 and (
        parts[3] != "registration"
    )


def pytest_sessionfinish(session):
    config = session.config
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    heavy = sorted(
        name for name in sys.modules if name.startswith(HEAVY) or world_module(name)
    )
    registrations = sorted(
        name for name in sys.modules
        if name.startswith("pytest_agentbench.worlds.") and name.endswith(".registration")
    )
    probe = {
        "loaded": config.pluginmanager.hasplugin("agentbench"),
        "heavy": heavy,
        "registrations": registrations,
        "registry": "pytest_agentbench.sdk.registry" in sys.modules,
    }
    with open(f"probe-{worker}.json", "w") as handle:
        json.dump(probe, handle)
"""


def _probes(project: pytest.Pytester) -> dict[str, dict[str, object]]:
    return {
        path.stem.removeprefix("probe-"): json.loads(path.read_text(encoding="utf-8"))
        for path in project.path.glob("probe-*.json")
    }


def _expected_processes(xdist_args: list[str]) -> set[str]:
    return {"main", "gw0"} if xdist_args == ["-n", "1"] else {"main"}


def test_importing_the_plugin_imports_no_model_world_or_report_module() -> None:
    code = (
        "import json, sys\n"
        "import pytest_agentbench.plugin.facade\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    modules = run_probe(code)
    assert "pytest_agentbench.plugin.facade" in modules
    assert [name for name in modules if name.startswith(HEAVY_PREFIXES)] == []


def test_a_run_whose_folders_hold_no_marker_name_imports_no_world_registry(
    pytester: pytest.Pytester,
) -> None:
    # Every pytest process of an environment with the plugin looks for suite folders; a
    # folder listing none of a layout's first names is passed over without the registry.
    pytester.makeconftest(IMPORT_PROBE)
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    probe: dict[str, object] = {}
    for _ in range(3):  # the first run may be the one that remembers the layouts
        pytester.runpytest_subprocess().assert_outcomes(passed=1)
        probe = _probes(pytester)["main"]
        if probe["registrations"] == []:
            break
    assert (probe["registrations"], probe["registry"]) == ([], False)


def test_the_report_attributes_the_facade_watches_are_the_recorders() -> None:
    assert plugin.IDENTITY_ATTR == recorder.IDENTITY_ATTR
    assert plugin.REFUSAL_ATTR == recorder.REFUSAL
    assert plugin.CENSUS_KEY == census.WORKEROUTPUT_KEY


@pytest.mark.parametrize("xdist_args", DISTRIBUTIONS)
def test_a_run_without_suites_imports_nothing_heavy_and_says_nothing(
    pytester: pytest.Pytester, xdist_args: list[str]
) -> None:
    # Data files a recognised layout could hold, near and deeper: no world is asked of them
    # beyond its registration.
    pytester.makeconftest(IMPORT_PROBE)
    pytester.makepyfile(test_plain="def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "notes.yaml").write_text("a: 1\n", encoding="utf-8")
    (pytester.path / "sub" / "deeper").mkdir(parents=True)
    (pytester.path / "sub" / "deeper" / "notes.json").write_text("{}", encoding="utf-8")
    result = pytester.runpytest_subprocess(*xdist_args)
    result.assert_outcomes(passed=2)
    said = [line for line in result.outlines if "agentbench" in line]
    assert [line for line in said if not line.startswith("plugins:")] == []
    probes = _probes(pytester)
    assert set(probes) == _expected_processes(xdist_args)
    for process, probe in probes.items():
        assert (probe["loaded"], probe["heavy"]) == (True, []), process
    # The collecting process learns the installed worlds' layouts and loads nothing of a
    # world itself (heavy above): from their registrations, or (once a process has written
    # bytecode beside them and remembered what they declare) without importing even those.
    # The cache is the environment's: a concurrent test process with another sys.path (an
    # installed wheel's) may replace it between two runs, so each run is given three tries.
    collecting = "gw0" if xdist_args else "main"
    for extra in ([], ["-p", "no:agentbench-world-operations"]):
        imported = []
        for _ in range(3):
            again = pytester.runpytest_subprocess(*xdist_args, *extra)
            again.assert_outcomes(passed=2)
            imported = _probes(pytester)[collecting]["registrations"]
            if imported == []:
                break
        # With a world blocked too: it is not among the remembered layouts.
        assert imported == [], extra


def test_a_suite_collected_by_path_turns_the_plugin_on(demo: pytest.Pytester) -> None:
    # Serially. Under xdist the controller, which collects nothing, learns of a suite
    # collected by path from its workers' benchmark items: every -n 2 run of a suite folder
    # shows it in the controller's summary (tests/test_report_preload.py's, for one).
    write_demo_suite(demo.path)
    demo.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = demo.runpytest()
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*= agentbench: demo-suite (demo) =*", "*accuracy*"])


@pytest.mark.parametrize("xdist_args", DISTRIBUTIONS)
def test_a_refused_suite_alone_turns_the_controller_on(
    demo: pytest.Pytester, xdist_args: list[str]
) -> None:
    folder = write_demo_suite(demo.path)
    (folder / "suite.yaml").write_text("id: demo-suite\nworld: demo\n", encoding="utf-8")
    demo.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = demo.runpytest(*xdist_args)
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["agentbench [[]missing_field[]] suites/demo-suite/suite.yaml: version*"]
    )


def test_a_recognised_layout_collected_by_path_turns_the_plugin_on(
    pytester: pytest.Pytester,
) -> None:
    # Serially: recognising a layout is the collecting process's own decision, the same
    # code in an xdist worker. The controller follows a worker's benchmark item whatever
    # turned the worker on (facade.WorkerReports): the suite collected by path under -n 1.
    pytester.makepyfile(layout_world=Path(sys.modules["tests.layout_world"].__file__).read_text())
    pytester.makeconftest("from layout_world import pytest_agentbench_world_kinds  # noqa: F401\n")
    pytester.syspathinsert()
    write_layout_folder(pytester.path)
    result = pytester.runpytest("published")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*= agentbench: published-demo (layout) =*"])


def test_a_plugin_fixture_turns_the_plugin_on_in_a_project_without_suites(
    demo: pytest.Pytester,
) -> None:
    demo.makepyfile(
        test_fixture="""
def test_adapter(agentbench_adapter, agentbench_trial):
    assert repr(agentbench_adapter) == "<built-in reference agents>"
    assert (agentbench_trial.index, agentbench_trial.count) == (1, 1)
"""
    )
    demo.runpytest().assert_outcomes(passed=1)


def test_help_lists_every_option_and_ini_key(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    text = result.stdout.str()
    options = [
        "adapter", "suite", "timeout", "report", "html", "receipts", "gate", "controls",
        "allow-partial", "predictions", "snapshot", "isolate", "ledger", "max-output-bytes",
        "cassettes", "cassette-mode", "baseline", "alpha", "max-regression",
        "baseline-allow-changed", "repeat", "record", "replay-outputs", "resume",
    ]  # fmt: skip
    ini_keys = [
        "ledger", "adapter", "max_output_bytes", "timeout", "snapshot", "snapshot_dir",
        "isolate", "oracle_roots", "junit_case_properties", "llm_base_url", "llm_model",
        "llm_api_key_env", "llm_temperature", "llm_max_turns", "llm_seed", "llm_timeout",
        "llm_max_retries", "llm_retry_backoff", "llm_fence_results", "cassettes",
        "cassette_mode", "repeat",
    ]  # fmt: skip
    for option in options:
        assert f"--agentbench-{option}" in text, option
    for key in ini_keys:
        assert f"  agentbench_{key} (" in text, key
    assert "agent benchmarks (pytest-agentbench):" in text


IN_USE = {
    "nothing": ([], "", None),
    "option": (["--agentbench-repeat", "2"], "", "--agentbench-repeat"),
    "given": (["--agentbench-timeout", "300"], "", "--agentbench-timeout"),
    "ini": ([], "agentbench_snapshot = true\n", "agentbench_snapshot"),
    "ini-default": ([], "agentbench_timeout = 300\n", None),
    "override": (["-o", "agentbench_llm_model=m"], "", "agentbench_llm_model"),
}
"""Settings given each way, by name, and the first setting of ours ``in_use`` names."""


def test_in_use_names_the_first_setting_of_ours(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One test configuring each way in turn: a configuration costs little once the first
    # has imported what it needs, a test of its own each far more. Parsed, not configured:
    # in_use reads only what the command line and the ini file gave (configuring every
    # plugin besides cost four times as much).
    for _, env_key in plugin_options.SOURCES.values():
        monkeypatch.delenv(env_key, raising=False)
    for name, (args, ini, expected) in IN_USE.items():
        pytester.makeini(f"[pytest]\n{ini}")
        config = pytester.parseconfig(*args)
        assert plugin_options.in_use(config) == expected, name


def test_a_chat_agent_environment_variable_is_a_setting(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTBENCH_LLM_TEMPERATURE", "hot")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest()
    # Resolved at configure time, as before the plugin was lazy: a usage error.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "AGENTBENCH_LLM_TEMPERATURE" in result.stderr.str()


@pytest.mark.parametrize("xdist_args", DISTRIBUTIONS)
def test_a_broken_world_registration_met_while_collecting_is_a_usage_error(
    demo: pytest.Pytester, xdist_args: list[str]
) -> None:
    demo.makeconftest(
        REGISTERING_CONFTEST + "from pytest_agentbench.sdk.hookspecs import hookimpl\n\n"
        "class Twice:\n"
        "    @hookimpl\n"
        "    def pytest_agentbench_world_kinds(self):\n"
        "        from demo_world import DemoWorld\n"
        "        return [DemoWorld()]\n\n"
        "def pytest_configure(config):\n"
        "    config.pluginmanager.register(Twice())\n"
    )
    write_demo_suite(demo.path)
    result = demo.runpytest(*xdist_args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "[duplicate_world_kind] world kind 'demo' is registered twice" in result.stderr.str()


def test_a_conftest_world_naming_an_installed_kind_is_refused_with_layouts_remembered(
    demo: pytest.Pytester,
) -> None:
    # The first run remembers the installed worlds' layouts; the second, whose conftest.py
    # registers a kind an installed world has, is refused as it was when every run
    # imported the registrations.
    demo.makepyfile(test_plain="def test_plain():\n    pass\n")
    demo.runpytest_subprocess().assert_outcomes(passed=1)
    demo.makeconftest(
        REGISTERING_CONFTEST + "from pytest_agentbench.sdk.hookspecs import hookimpl\n\n"
        "class Clash:\n"
        "    @hookimpl\n"
        "    def pytest_agentbench_world_kinds(self):\n"
        "        from demo_world import DemoWorld\n"
        "        world = DemoWorld()\n"
        "        world.kind = 'toolgrammar'\n"
        "        return [world]\n\n"
        "def pytest_configure(config):\n"
        "    config.pluginmanager.register(Clash())\n"
    )
    result = demo.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "[duplicate_world_kind] world kind 'toolgrammar'" in result.stderr.str()
