"""What a process of a run with benchmarks imports, and which records it builds.

Every xdist worker, inner test session and ``agentbench`` command pays for the
modules the plugin imports when it turns on. The report layer (summary, JSON
report, baseline comparison, terminal lines, model provenance), the execution
ledger and the tool-session records are imported where they are used: at the
session's end where results arrive, under ``--agentbench-ledger``, in a
tool-session world. Records most processes never validate are built on first
use (``BUILT_ON_FIRST_USE``). Imports are checked in a subprocess: the test
process itself has imported everything.
"""

from __future__ import annotations

import json

import pytest

from pytest_agentbench.isolation.forwarding import FORWARDED
from pytest_agentbench.plugin import REWRITTEN_PACKAGE
from pytest_agentbench.plugin.activation import PLUGINS
from tests.demo_world import REGISTERING_CONFTEST, write_demo_suite
from tests.shared_sessions import run_probe

FINISH_MODULES = (
    "pytest_agentbench.plugin.finish",
    "pytest_agentbench.report.summary",
    "pytest_agentbench.report.outputs",
    "pytest_agentbench.report.terminal",
    "pytest_agentbench.report.comparison_lines",
)
"""Imported at the session's end by the process results arrive in."""

MODEL_MODULES = (
    "pytest_agentbench.agents.settings",
    "pytest_agentbench.agents.budget",
    "pytest_agentbench.agents.limits",
    "pytest_agentbench.agents.providers",
    "pytest_agentbench.agents.provenance",
    "pytest_agentbench.report.model_run",
)
"""The chat-model client's settings, budgets, rate limits and provenance: imported only by
a process of a run that configures a chat model (or a model matrix), or whose adapter
builds the client itself."""

ON_REQUEST_MODULES = (
    "pytest_agentbench.report.json_report",
    "pytest_agentbench.report.baseline",
    "pytest_agentbench.scoring.comparison",
    "pytest_agentbench.scoring.kappa",
    "pytest_agentbench.scoring.stats",
    "pytest_agentbench.report.judged_summary",
    "pytest_agentbench.sdk.ledger",
    "pytest_agentbench.run.case_ledger",
    "pytest_agentbench.agents.matrix",
    "pytest_agentbench.report.transcripts",
    "pytest_agentbench.plugin.golden",
    "syrupy.extensions.json",
)
"""Imported only by a run asking for them: a report, a baseline, judges, a ledger, a model
matrix, repeated cases (the statistics), transcripts, golden outputs."""

TOOL_MODULES = ("pytest_agentbench.sdk.tools",)
BUILT_IN_KINDS = ("authority", "evidence_binding", "operations", "retrieval", "toolgrammar")
"""Imported by a tool-session world (the demo world of the run below is one)."""

BUILT_ON_FIRST_USE = (
    "pytest_agentbench.run.output_caps:ReceiptTruncation",
    "pytest_agentbench.run.output_caps:TruncatedReceipt",
    "pytest_agentbench.scoring.gates:Gate",
    "pytest_agentbench.scoring.gates:GateVerdict",
    "pytest_agentbench.scoring.matrix:ModelPair",
    "pytest_agentbench.scoring.matrix:ModelRow",
    "pytest_agentbench.scoring.matrix:SuiteMatrix",
    "pytest_agentbench.scoring.trials:Trial",
    "pytest_agentbench.scoring.trials:TrialFigure",
    "pytest_agentbench.scoring.trials:TrialSummary",
    "pytest_agentbench.sdk.contracts:RecordedOutput",
    "pytest_agentbench.sdk.controls:ControlSpec",
)
"""Records of modules every benchmark process imports that a plain run never validates."""

LATER_BUILT_ON_FIRST_USE = (
    *(
        f"pytest_agentbench.sdk.tools.receipt:{name}"
        for name in (
            "CallObservation",
            "EpisodeReceipt",
            "EpisodeReceiptCanonical",
            "EpisodeReceiptObservations",
            "InvocationReceipt",
            "Receipt",
            "ReceiptCall",
            "ReceiptCanonical",
            "ReceiptObservations",
            "ReceiptTotals",
        )
    ),
    "pytest_agentbench.report.summary:CaseEntry",
)
"""Records of the tool-session and summary modules (imported by a tool world, at the end)
that a run of a world without tool sessions, writing no report, never validates."""


def _loaded(module_prefixes: tuple[str, ...], modules: list[str]) -> list[str]:
    return sorted(
        name
        for name in modules
        if any(name == prefix or name.startswith(prefix + ".") for prefix in module_prefixes)
    )


def test_turning_the_plugin_on_and_loading_worlds_imports_no_report_or_ledger_module() -> None:
    probe = (
        "import importlib, json, sys\n"
        f"for name in {PLUGINS!r}:\n"
        "    importlib.import_module(name)\n"
        "built = []\n"
        f"for spec in {BUILT_ON_FIRST_USE!r}:\n"
        "    module, name = spec.split(':')\n"
        "    if getattr(sys.modules[module], name).__pydantic_complete__:\n"
        "        built.append(spec)\n"
        "modules = sorted(sys.modules)\n"
        f"for kind in {BUILT_IN_KINDS!r}:\n"
        "    importlib.import_module(f'pytest_agentbench.worlds.{kind}.world')\n"
        "worlds = sorted(sys.modules)\n"
        f"for name in {FINISH_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        f"for spec in {LATER_BUILT_ON_FIRST_USE!r}:\n"
        "    module, name = spec.split(':')\n"
        "    if getattr(sys.modules[module], name).__pydantic_complete__:\n"
        "        built.append(spec)\n"
        "ended = sorted(sys.modules)\n"
        "found = {'modules': modules, 'built': built, 'worlds': worlds, 'ended': ended}\n"
        "print(json.dumps(found))\n"
    )
    found = run_probe(probe)
    assert "pytest_agentbench.plugin.hooks" in found["modules"]
    assert (
        _loaded(
            FINISH_MODULES + ON_REQUEST_MODULES + MODEL_MODULES + TOOL_MODULES, found["modules"]
        )
        == []
    )
    assert found["built"] == []
    # A world imports the tool-session records it runs on, and no more of the run's.
    assert _loaded(FINISH_MODULES + ON_REQUEST_MODULES + MODEL_MODULES, found["worlds"]) == []
    # Nor does a run's end, unless the run drove a chat model.
    assert _loaded(MODEL_MODULES, found["ended"]) == []


# Writes, in every process, which of the modules above it imported, and which of the
# plugin's modules pytest's assertion rewriting loaded.
IMPORT_PROBE = """
import json, sys
from _pytest.assertion.rewrite import AssertionRewritingHook

WATCHED = {watched!r}


def pytest_sessionfinish(session):
    config = session.config
    worker = getattr(config, "workerinput", {{}}).get("workerid", "main")
    loaded = sorted(
        name for name in sys.modules
        if any(name == prefix or name.startswith(prefix + ".") for prefix in WATCHED)
    )
    rewritten = sorted(
        name for name, module in sys.modules.items()
        if name.startswith("pytest_agentbench")
        and isinstance(getattr(module, "__loader__", None), AssertionRewritingHook)
    )
    with open(f"probe-{{worker}}.json", "w") as handle:
        json.dump({{"loaded": loaded, "rewritten": rewritten}}, handle)
"""


def test_only_the_controller_imports_the_report_layer_at_the_end(demo: pytest.Pytester) -> None:
    watched = FINISH_MODULES + ON_REQUEST_MODULES + MODEL_MODULES
    demo.makeconftest(REGISTERING_CONFTEST + IMPORT_PROBE.format(watched=watched))
    write_demo_suite(demo.path)
    # One worker shows what a worker imports; the controller is a process of its own.
    result = demo.runpytest_subprocess("-n", "1")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*= agentbench: demo-suite (demo) =*", "*accuracy*"])
    probes = {
        path.stem.removeprefix("probe-"): json.loads(path.read_text(encoding="utf-8"))
        for path in demo.path.glob("probe-*.json")
    }
    assert {process: probe["loaded"] for process, probe in probes.items()} == {
        # The probe's sessionfinish runs after the plugin's, which imported them. A run
        # that configures no chat model imports none of the client's modules, in any process.
        "main": sorted(FINISH_MODULES),
        "gw0": [],
    }
    # pytest rewrites the asserts of the package owning a pytest11 entry point, from source,
    # in every process that cannot cache bytecode: that is the entry point's one module, not
    # the plugin's package. The conformance kit's stay rewritten. A run without
    # --agentbench-conformance imports the kit's pytest plugin and none of its checks.
    for process, probe in probes.items():
        assert probe["rewritten"] == [
            REWRITTEN_PACKAGE,
            f"{REWRITTEN_PACKAGE}.plugin",
            "pytest_agentbench_entry",
        ], process


def test_a_run_log_without_a_chat_model_imports_none_of_the_client(
    demo: pytest.Pytester,
) -> None:
    demo.makeconftest(REGISTERING_CONFTEST + IMPORT_PROBE.format(watched=MODEL_MODULES))
    write_demo_suite(demo.path)
    result = demo.runpytest_subprocess("--agentbench-log", "run.log.ndjson")
    result.assert_outcomes(passed=3, failed=1)
    start = json.loads((demo.path / "run.log.ndjson").read_text(encoding="utf-8").splitlines()[0])
    assert start["event"] == "start"
    assert start["model"] is None
    assert json.loads((demo.path / "probe-main.json").read_text(encoding="utf-8"))["loaded"] == []


@pytest.mark.parametrize(
    "outputs",
    [
        ("--agentbench-report", "run.json"),
        ("--agentbench-report", "run.json", "--junitxml", "run.xml"),
    ],
    ids=["report", "report-and-junitxml"],
)
def test_a_report_without_a_chat_model_imports_none_of_the_client(
    demo: pytest.Pytester, outputs: tuple[str, ...]
) -> None:
    # The report's model-traffic records live apart from the client that makes them.
    demo.makeconftest(REGISTERING_CONFTEST + IMPORT_PROBE.format(watched=MODEL_MODULES))
    write_demo_suite(demo.path)
    result = demo.runpytest_subprocess(*outputs)
    result.assert_outcomes(passed=3, failed=1)
    report = json.loads((demo.path / "run.json").read_text(encoding="utf-8"))
    assert report["model_run"] is None
    assert json.loads((demo.path / "probe-main.json").read_text(encoding="utf-8"))["loaded"] == []


def test_episode_artifacts_import_the_client_and_the_ledger_only_for_a_model_run() -> None:
    # --agentbench-artifacts without a chat model binds no case to a ledger.
    probe = (
        "import json, sys\n"
        "import pytest_agentbench.run.episode_artifacts\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    found = run_probe(probe)
    assert _loaded((*MODEL_MODULES, "pytest_agentbench.sdk.ledger"), found) == []


def test_an_agentbench_command_imports_its_own_module_alone() -> None:
    probe = (
        "import contextlib, io, json, sys\n"
        "from pytest_agentbench.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    status = main(['list'])\n"
        "print(json.dumps({'status': status, 'modules': sorted(sys.modules)}))\n"
    )
    found = run_probe(probe)
    assert found["status"] == 0
    commands = sorted(
        name for name in found["modules"] if name.startswith("pytest_agentbench.cli.")
    )
    assert commands == [
        "pytest_agentbench.cli.common",
        "pytest_agentbench.cli.list_suites",
        "pytest_agentbench.cli.main",
    ]
    assert _loaded(FINISH_MODULES + ON_REQUEST_MODULES, found["modules"]) == []


def test_an_isolated_adapter_process_imports_no_pytest() -> None:
    # What an isolated adapter's process imports before and while serving calls: its
    # start-up is charged to the adapter (agentbench_isolate_startup_timeout).
    served_from = (
        "pytest_agentbench.isolation.child",
        "pytest_agentbench.isolation.remote_session",
        "pytest_agentbench.sdk.runner",
        "pytest_agentbench.sdk.tools",
        *(module for module, _getter, _setter in FORWARDED),
    )
    probe = (
        "import importlib, json, sys\n"
        f"for name in {served_from!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    found = run_probe(probe)
    assert _loaded(("pytest", "_pytest", "xdist", "httpx"), found) == []
