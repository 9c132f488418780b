"""Session outputs: gates, JUnit properties and the JSON run report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.report.json_report import SCHEMA_PATH, schema_text
from pytest_agentbench.sdk.canonical import artifact_set_digest, tree_files
from tests.conftest import XDIST_ARGS
from tests.demo_world import DEMO_CONTROLS, write_demo_suite
from tests.reports import assert_valid_report, normalised


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "run.json"
    result = pytester.runpytest(f"--agentbench-report={path}", *args)
    return result, json.loads(path.read_text())


def global_properties(junit: Path) -> dict[str, str]:
    root = ET.parse(junit).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None
    properties = suite.find("properties")
    assert properties is not None
    return {prop.get("name", ""): prop.get("value", "") for prop in properties.iter("property")}


def test_suite_gate_fails_the_session_although_every_item_passed(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path, extra_suite_yaml="gates: ['zero_rate >= 0.5', 'accuracy >= 0.9']\n")
    junit = demo.path / "junit.xml"
    result, report = run(demo, f"--junitxml={junit}")
    result.assert_outcomes(passed=3, failed=1)
    failing_only = demo.runpytest(f"--junitxml={junit}", "-m", "not agentbench_control")
    failing_only.assert_outcomes(passed=3)
    assert failing_only.ret == pytest.ExitCode.TESTS_FAILED
    failing_only.stdout.fnmatch_lines(
        [
            "gates: 1/2 passed",
            "  FAIL demo-suite:zero_rate>=0.5 (suites/demo-suite/suite.yaml): 0.0000 fails >= 0.5",
            "  ok   demo-suite:accuracy>=0.9 (suites/demo-suite/suite.yaml): "
            "1.0000 satisfies >= 0.9",
        ]
    )
    properties = global_properties(junit)
    assert properties["agentbench.demo-suite.gate.zero_rate>=0.5"] == "fail: 0.0000 fails >= 0.5"
    assert properties["agentbench.demo-suite.gate.accuracy>=0.9"] == "pass"
    verdicts = {verdict["gate"]["metric"]: verdict for verdict in report["gates"]}
    assert verdicts["zero_rate"]["passed"] is False
    assert verdicts["zero_rate"]["value"] == 0.0
    assert verdicts["accuracy"]["passed"] is True
    assert report["suites"][0]["gates"] == report["gates"]


@pytest.mark.parametrize(
    ("gates", "passes"),
    [
        pytest.param(
            ["demo-suite:accuracy>=1", "demo-suite:zero_rate<=0", "demo-suite:accuracy==1.0"],
            True,
            id="passing",
        ),
        pytest.param(
            [
                "demo-suite:accuracy>=1.01",
                "demo-suite: zero_rate <= -0.1",
                "demo-suite:accuracy==0.5",
            ],
            False,
            id="failing",
        ),
    ],
)
def test_command_line_gate_operators(demo: pytest.Pytester, gates: list[str], passes: bool) -> None:
    # Gates of one outcome side by side: every one of them decides the session alike.
    write_demo_suite(demo.path)
    given = [f"--agentbench-gate={gate}" for gate in gates]
    result, report = run(demo, *given, "-m", "not agentbench_control", "-q")
    result.assert_outcomes(passed=3)
    expected = pytest.ExitCode.OK if passes else pytest.ExitCode.TESTS_FAILED
    assert result.ret == expected
    assert len(report["gates"]) == len(gates)
    for gate, verdict in zip(gates, report["gates"], strict=True):
        assert verdict["passed"] is passes, gate
        assert verdict["gate"]["source"] == "--agentbench-gate", gate
    if not passes:
        failed = [line for line in result.outlines if line.startswith("agentbench   FAILED gate ")]
        assert len(failed) == len(gates), failed
        result.stdout.fnmatch_lines(["agentbench   FAILED gate demo-suite:*: * fails *"])


def test_gate_naming_an_unknown_suite_fails_with_the_reason_and_an_unknown_metric_first(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path)
    result, report = run(demo, "--agentbench-gate=elsewhere:accuracy>=0.5")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    reasons = {verdict["gate"]["suite"]: verdict["reason"] for verdict in report["gates"]}
    assert reasons == {"elsewhere": "suite did not run"}
    result.stdout.fnmatch_lines(
        ["agentbench FAILED gate elsewhere:accuracy>=0.5: suite did not run"]
    )
    # A metric the suite does not report is known once it is collected: refused then,
    # before any case runs (issue 43), rather than after the whole run.
    refused = demo.runpytest("--agentbench-gate=demo-suite:precision>=0.5")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        [
            "ERROR: [[]gate_unknown_metric[]] --agentbench-gate: 'demo-suite:precision>=0.5': "
            "suite 'demo-suite' reports no metric 'precision' (it reports: accuracy, zero_rate)"
        ]
    )
    assert "passed" not in refused.stdout.str()


@pytest.mark.parametrize("gate", ["accuracy>=0.5", "demo-suite:accuracy>>0.5", "demo-suite:"])
def test_malformed_gate_is_a_usage_error(demo: pytest.Pytester, gate: str) -> None:
    write_demo_suite(demo.path)
    result = demo.runpytest(f"--agentbench-gate={gate}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: ?invalid_gate? --agentbench-gate: *"])


def test_junit_global_properties_carry_the_metrics_and_a_quiet_summary_is_one_line(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path, controls=DEMO_CONTROLS)
    junit = demo.path / "junit.xml"
    result = demo.runpytest(f"--junitxml={junit}", "-q")
    result.assert_outcomes(passed=4)
    # A quiet run's summary is one line per suite.
    result.stdout.fnmatch_lines(["agentbench demo-suite: 3 passed; controls 1/1"])
    assert "agentbench: demo-suite (demo)" not in result.stdout.str()
    assert global_properties(junit) == {
        "agentbench.demo-suite.accuracy": "1.0",
        "agentbench.demo-suite.zero_rate": "0.0",
        "agentbench.demo-suite.control.control-always-zero": "pass",
    }
    for case in ET.parse(junit).getroot().iter("testcase"):
        assert case.find("properties") is None


WRONG_BUT_ON_C3 = "class Agent:\n    def answer(self, question):\n        return 15\n"


def check_report_content(report: dict[str, Any], root: Path) -> None:
    """The run report of WRONG_BUT_ON_C3 on the demo suite with its control."""
    suite_dir = root / "suites" / "demo-suite"
    assert_valid_report(report)
    assert report["schema_version"] == "agentbench-run-report/3"
    assert report["exit_status"] == 1
    assert set(report["environment"]) == {"python", "pytest", "plugin", "platform", "git_commit"}
    assert report["environment"]["pytest"] == pytest.__version__
    assert report["adapter"] == {
        "spec": "agents:Agent",
        "description": "agents:Agent (agents.Agent)",
    }
    (suite,) = report["suites"]
    assert (suite["id"], suite["world"], suite["version"]) == ("demo-suite", "demo", "1.0.0")
    assert suite["answered_by"] == ["agents.Agent"]
    assert suite["coverage"] == {
        "total": 3,
        "selected": 3,
        "run": 3,
        "missing": 0,
        "complete": True,
    }
    public = {rel: path.read_bytes() for rel, path in tree_files(suite_dir).items()}
    oracle_dir = root / "oracles" / "demo-suite"
    oracle = {rel: path.read_bytes() for rel, path in tree_files(oracle_dir).items()}
    assert suite["digests"] == {
        "public": artifact_set_digest(public),
        "oracle": artifact_set_digest(oracle),
    }
    assert suite["counts"] == {"passed": 1, "failed": 2, "error": 0, "skipped": 0, "excluded": 0}
    metrics = {metric["name"]: metric for metric in suite["metrics"]}
    assert metrics["accuracy"]["value"] == pytest.approx(1 / 3)
    assert (metrics["accuracy"]["numerator"], metrics["accuracy"]["denominator"]) == (1, 3)
    (control,) = suite["controls"]
    assert control["control_id"] == "control-always-zero"
    assert control["passed"] is True
    assert [entry["nodeid"] for entry in suite["cases"]] == [
        f"suites/demo-suite/cases.jsonl::{cid}" for cid in ("c1", "c2", "c3")
    ]
    c3 = suite["cases"][2]["result"]
    assert (c3["outcome"], c3["measurements"]) == ("passed", {"correct": 1, "scored": 1, "zero": 0})
    assert all(entry["duration_s"] >= 0.0 for entry in suite["cases"])
    assert report["gates"] == []


def test_shipped_schema_is_the_generated_one() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text()


def test_terminal_section_names_adapter_metrics_and_support_and_the_report_is_canonical(
    demo: pytest.Pytester,
) -> None:
    write_demo_suite(demo.path)
    path = demo.path / "out" / "run.json"
    log = demo.path / "logs" / "run.ndjson"
    result = demo.runpytest(f"--agentbench-report={path}", f"--agentbench-log={log}")
    # A run with no model logs only where --agentbench-log says, in a folder it makes.
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert not path.with_name("run.json.log.ndjson").exists()
    assert [(e["event"], e.get("outcome")) for e in events] == [
        ("start", None),
        *[("case", "passed")] * 3,
        ("end", None),
    ]
    assert events[0]["model"] is None
    assert all(e["model_calls"] is None for e in events[1:-1]), "no model, no traffic"
    # The undeclared control fails the run: its log still ends, with that status.
    assert (events[-1]["exit_status"], events[-1]["cost"]) == (1, None)
    assert result.ret == 1
    # The JSON report (in a folder the run makes) is canonical JSON.
    text = path.read_text()
    value = json.loads(text)
    assert (
        text == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    )
    result.stdout.fnmatch_lines(
        [
            "*= agentbench: demo-suite (demo) =*",
            "adapter: built-in reference agents (cases answered by demo_world.Reference)",
            "cases: 3 passed, 0 failed, 0 error, 0 skipped",
            "answers:",
            "  accuracy   1.0000  support 3 95% ?0.4385, 1.0000? higher is better",
            "  zero_rate  0.0000  support 3 95% ?0.0000, 0.5615? lower is better",
        ]
    )
    # Every report says how far the adapter was trusted: here it shared pytest's process.
    assert value["trust"] == {
        "isolation": "in_process",
        "landlock_abi": None,
        "promises": [],
        "sandbox": None,
    }
    result.stdout.fnmatch_lines(
        ["agentbench trust: in-process (the adapter shares the harness's process; no sandbox)"]
    )


def test_xdist_reports_equal_a_serial_run(demo: pytest.Pytester) -> None:
    """JSON report, JUnit metrics and per-case check properties are aggregated from the
    workers: one -n 2 run equals a serial run of the same project, and both are as expected
    (the report's content and schema; per-case check properties, asked for by the ini key,
    which test_junit_global_properties_carry_the_metrics_and_a_quiet_summary_is_one_line
    shows absent unless asked)."""
    write_demo_suite(demo.path, controls=DEMO_CONTROLS)
    demo.makepyfile(agents=WRONG_BUT_ON_C3)
    demo.makeini("[pytest]\nagentbench_junit_case_properties = true\n")
    runs = {}
    for mode in ("no-xdist", "n2"):
        junit = demo.path / f"{mode}.xml"
        result, report = run(
            demo, "--agentbench-adapter=agents:Agent", f"--junitxml={junit}", *XDIST_ARGS[mode]
        )
        result.assert_outcomes(passed=2, failed=2)
        check_report_content(report, demo.path)
        per_case = {
            case.get("name", ""): {
                prop.get("name", ""): prop.get("value", "") for prop in case.iter("property")
            }
            for case in ET.parse(junit).getroot().iter("testcase")
        }
        runs[mode] = (normalised(report), global_properties(junit), per_case)
    serial_report, serial_properties, serial_per_case = runs["no-xdist"]
    n2_report, n2_properties, n2_per_case = runs["n2"]
    assert n2_report == serial_report
    assert (
        n2_properties
        == serial_properties
        == {
            "agentbench.demo-suite.accuracy": str(1 / 3),
            "agentbench.demo-suite.zero_rate": "0.0",
            "agentbench.demo-suite.control.control-always-zero": "pass",
        }
    )
    wrong = {
        "agentbench.check.answer_present": "pass",
        "agentbench.check.answer_correct": "fail",
    }
    right = {**wrong, "agentbench.check.answer_correct": "pass"}
    assert n2_per_case == serial_per_case
    assert {name: n2_per_case[name] for name in ("c1", "c2", "c3")} == {
        "c1": wrong,
        "c2": wrong,
        "c3": right,
    }
