"""Checking ``--agentbench-adapter`` imports no world the run has no suite of.

The adapter is checked at configure time in every pytest process (the only
one, the xdist controller and each worker) against every registered kind's
protocols; the built-in kinds declare theirs in their registrations, so the
check imports those small modules, not the worlds. Runs whose imports are
checked run in a subprocess: the test process itself has imported everything.
"""

from __future__ import annotations

import json

import pytest

from tests.demo_world import REGISTERING_CONFTEST, write_demo_suite

BUILT_IN_KINDS = ("authority", "evidence_binding", "operations", "retrieval", "toolgrammar")

# Writes, in every process, which built-in world modules it imported, whether
# the HTML report's modules were (asked for by --agentbench-html only) and
# whether the benchmark half of the plugin ran (else the check would be vacuous).
WORLD_PROBE = """
import json, sys

WORLD_MODULES = tuple(f"pytest_agentbench.worlds.{{kind}}.world" for kind in {kinds!r})


def pytest_sessionfinish(session):
    config = session.config
    worker = getattr(config, "workerinput", {{}}).get("workerid", "main")
    probe = {{
        "active": "pytest_agentbench.plugin.hooks" in sys.modules,
        "worlds": sorted(name for name in sys.modules if name in WORLD_MODULES),
        "html": "pytest_agentbench.report.html" in sys.modules,
    }}
    with open(f"probe-{{worker}}.json", "w") as handle:
        json.dump(probe, handle)
"""

NO_PROTOCOL = "class Nothing:\n    def reply(self, question):\n        return 0\n"


def _probe_run(demo: pytest.Pytester, *args: str) -> dict[str, dict[str, object]]:
    demo.makeconftest(REGISTERING_CONFTEST + WORLD_PROBE.format(kinds=BUILT_IN_KINDS))
    write_demo_suite(demo.path)
    result = demo.runpytest_subprocess("--agentbench-adapter", "demo_world:Reference", *args)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*adapter demo_world:Reference (demo_world.Reference)*"])
    return {
        path.stem.removeprefix("probe-"): json.loads(path.read_text(encoding="utf-8"))
        for path in demo.path.glob("probe-*.json")
    }


def test_a_demo_run_with_an_adapter_imports_no_built_in_world(demo: pytest.Pytester) -> None:
    probes = _probe_run(demo)
    assert set(probes) == {"main"}
    for process, probe in probes.items():
        assert probe == {"active": True, "worlds": [], "html": False}, process


# Under xdist, the controller and a worker: every worker is configured alike (one stands
# for them all, a second would only cost its start-up), and a worker checks the adapter
# as the only process of a run without xdist does; the controller of an isolated run is
# where isolation's own set-up differs.
def test_an_isolated_adapter_is_checked_without_importing_a_built_in_world(
    demo: pytest.Pytester,
) -> None:
    probes = _probe_run(demo, "--agentbench-isolate", "-n", "1")
    assert set(probes) == {"main", "gw0"}
    for process, probe in probes.items():
        assert probe == {"active": True, "worlds": [], "html": False}, process


# The refusal comes from the configure hook every process runs, before any worker starts.
@pytest.mark.parametrize("isolate", [[], ["--agentbench-isolate"]], ids=["in-process", "isolated"])
def test_an_adapter_of_no_known_protocol_is_refused_naming_every_kind(
    demo: pytest.Pytester, isolate: list[str]
) -> None:
    demo.makepyfile(no_protocol=NO_PROTOCOL)
    write_demo_suite(demo.path)
    result = demo.runpytest("--agentbench-adapter", "no_protocol:Nothing", *isolate)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    refusal = result.stderr.str()
    assert "[adapter_protocol]" in refusal
    assert "'no_protocol:Nothing' (Nothing) implements no known protocol" in refusal
    expected = (
        "expected one of: AuthorityAdapter (authority), DemoAdapter (demo), "
        "ToolAgent or DemoAdapter (demo-tools), EvidenceBindingAdapter (evidence-binding), "
        "ToolAgent (operations), ToolAgent or RetrievalBackend (retrieval), "
        "ToolAgent (toolgrammar)"
    )
    assert expected in refusal
