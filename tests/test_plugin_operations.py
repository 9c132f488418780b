"""The operations world in real pytest sessions: packaged suite, user agents, an original folder."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

# Imported here, before any in-process session: pytester drops the modules a session
# imported once it ends, so every session would import the world and its packs again.
import pytest_agentbench.worlds.operations.domains.commerce_return_refund.pack
import pytest_agentbench.worlds.operations.domains.lettings_maintenance.pack
import pytest_agentbench.worlds.operations.world  # noqa: F401
from pytest_agentbench.report.receipts import receipt_path
from pytest_agentbench.sdk.ledger import read_ledger
from pytest_agentbench.sdk.tools import EpisodeReceipt, load_receipt
from tests.reports import assert_valid_report
from tests.test_plugin_ledger import audit, calls_of

SUITE = "operations-maintenance-v1"
ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "suites" / SUITE / "operation.yaml"
ORACLE = ROOT / "oracles" / SUITE / "maintenance_negative_controls_v0_5.yaml"
GATE = (
    "reference-V1",
    "reference-V2",
    "reference-V3",
    "complete_early",
    "always_act",
    "always_wait",
    "always_escalate",
    "ignore_new_events",
    "trust_actor_claim",
    "stale_after_wake",
    "duplicate_after_wake",
)


def run_report(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "run.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--agentbench-report={path}", *args)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert_valid_report(document)
    (suite,) = document["suites"]
    return result, suite


def summary(suite: dict[str, Any]) -> dict[str, Any]:
    cases = {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}
    return {
        "metrics": {m["name"]: (m["value"], m["support"]) for m in suite["metrics"]},
        "outcomes": {case_id: result["outcome"] for case_id, result in sorted(cases.items())},
        "failed_checks": {
            case_id: sorted(c["name"] for c in result["checks"] if c["status"] != "pass")
            for case_id, result in sorted(cases.items())
        },
    }


TOOL_AGENTS = """
class Garbage:
    def solve(self, task, session):
        return {"outcome": "ACT", "action": "request_supplier_visit", "payload": {}, "extra": 1}


class Raises:
    def solve(self, task, session):
        raise RuntimeError("provider unavailable")


class Lazy:
    def solve(self, task, session):
        session.call("retrieve", {"requests": [{"collection": "operation"}]})
        return {"outcome": "WAIT", "reason": "later", "wake_on": ["customer_issue_reported"]}
"""


@pytest.mark.parametrize(
    ("agent", "expected", "label"),
    [
        (
            "Garbage",
            {"terminal_outcome", "action_validity"},
            "cluster:pab-recurring-kitchen-leak",
        ),
        (
            "Lazy",
            {"terminal_outcome", "temporal_correctness", "human_checkpoints"},
            "operation:pab",
        ),
    ],
)
def test_a_users_tool_agent_is_graded_on_its_trajectory(
    pytester: pytest.Pytester, agent: str, expected: set[str], label: str
) -> None:
    """The variants are picked by a label that is no marker name, which still selects with
    ``-k`` (selection is collection's): the three variants, the gate left out."""
    pytester.makepyfile(tool_agents=TOOL_AGENTS)
    pytester.syspathinsert()
    receipts = pytester.path / "receipts"
    result, suite = run_report(
        pytester,
        "--agentbench-suite",
        SUITE,
        f"--agentbench-adapter=tool_agents:{agent}",
        f"--agentbench-receipts={receipts}",
        "--strict-markers",
        "-k",
        label,
    )
    result.assert_outcomes(failed=3, deselected=11, warnings=0)
    assert [entry["nodeid"] for entry in suite["cases"]] == [
        f"suites/{SUITE}/operation.yaml::{variant}" for variant in ("V1", "V2", "V3")
    ]
    for case_id, failed in summary(suite)["failed_checks"].items():
        assert expected <= set(failed), case_id
        assert "reliable" in failed
    for entry in suite["cases"]:
        case = entry["result"]
        # A schema-breaking outcome fails the case as the agent's product, still graded.
        assert case["failure_class"] == ("product_error" if agent == "Garbage" else None)
        written = json.loads(receipt_path(receipts, SUITE, case["case_id"]).read_text())
        assert written == case["receipt"]
        receipt = load_receipt(written)
        assert isinstance(receipt, EpisodeReceipt)
        assert len(receipt.receipts) >= 1
        assert receipt.canonical.totals.calls == (
            0 if agent == "Garbage" else len(receipt.receipts)
        )


def test_folders_in_the_originals_layout_run_by_path_with_their_oracle_or_none(
    pytester: pytest.Pytester,
) -> None:
    """Two folders in one session: a spec with its control oracle, and a later spec alone."""
    # Authored the way the original's fixture is (a quote opening work_cycle_2,
    # an outcome word no vocabulary of ours lists), under a file name of its
    # own, beside the control oracle and nothing else: no suite.yaml, no
    # expected-faults file. V2's exact fault is derived from the spec.
    from tests.worlds.operations.helpers import second_cycle_dict

    folder = pytester.path / "examples" / "operatebench"
    folder.mkdir(parents=True)
    (folder / "recurring_leak_second_cycle_v0_6.yaml").write_text(
        yaml.safe_dump(second_cycle_dict(), sort_keys=False), encoding="utf-8"
    )
    shutil.copyfile(ORACLE, folder / ORACLE.name)
    # Operation 0.7.0, under a name of its own (and an id of its own beside the first) and
    # with no oracle: V2's failed transfer notice goes out again on the secondary channel,
    # so V2 is reliable.
    recovery = second_cycle_dict()
    recovery["operation_version"] = "0.7.0"
    recovery["operation_id"] = "pab-maintenance-leak-recovery"
    (pytester.path / "recovery").mkdir()
    (pytester.path / "recovery" / "leak_delivery_recovery_v0_7.yaml").write_text(
        yaml.safe_dump(recovery, sort_keys=False), encoding="utf-8"
    )
    path = pytester.path / "run.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--agentbench-report={path}", "examples", "recovery", "-v"
    )
    document = json.loads(path.read_text(encoding="utf-8"))
    assert_valid_report(document)
    result.assert_outcomes(passed=3 + len(GATE) + 3)
    suites = {suite["id"]: suite for suite in document["suites"]}
    assert sorted(suites) == ["pab-maintenance-leak-recovery", "pab-maintenance-recurring-leak"]
    assert "examples/operatebench/recurring_leak_second_cycle_v0_6.yaml::V1" in result.stdout.str()
    suite = suites["pab-maintenance-recurring-leak"]
    found = summary(suite)
    assert found["outcomes"] == {"V1": "passed", "V2": "passed", "V3": "passed"}
    v2 = next(e["result"] for e in suite["cases"] if e["result"]["case_id"] == "V2")
    assert set(v2["findings"]) == {
        "OBLIGATION_MESSAGE_NOT_ESTABLISHED",
        "REQUIRED_NOTIFICATION_UNDELIVERED",
    }
    assert v2["measurements"]["reliable"] == 0
    recovered = suites["pab-maintenance-leak-recovery"]
    assert summary(recovered)["outcomes"] == {"V1": "passed", "V2": "passed", "V3": "passed"}
    assert recovered["controls"] == []
    v2 = next(e["result"] for e in recovered["cases"] if e["result"]["case_id"] == "V2")
    assert (v2["measurements"]["reliable"], v2["findings"]) == (1, [])
    # The same folder under --agentbench-suite gives the same items (run above).
    again = pytester.runpytest(
        "-p", "no:cacheprovider", "--agentbench-suite", str(folder), "--collect-only", "-q"
    )
    assert again.ret == 0
    items = [line.rpartition("::")[2] for line in again.outlines if "::" in line]
    assert items == re.findall(r"^examples/\S+::(\S+) PASSED", result.stdout.str(), re.M)
    assert len(items) == 3 + len(GATE)


# The commerce suite, run by name with its controls, against the pinned goldens and with
# its page: in the run tests/test_judging_builtin.py judges.


def test_a_decision_tape_is_scored_as_predictions_beside_an_agent_that_raises(
    pytester: pytest.Pytester,
) -> None:
    """One session, two suites: the maintenance suite scored from a decision tape, the
    commerce suite run by a user's agent that raises (the adapter of every suite that has no
    predictions): each of its cases an agent error, every one counted."""
    from pytest_agentbench.worlds.operations.agents import Reference
    from pytest_agentbench.worlds.operations.episode import run_episode
    from tests.worlds.operations.helpers import shipped

    pytester.makepyfile(tool_agents=TOOL_AGENTS)
    pytester.syspathinsert()
    record = run_episode(shipped(), "V1", Reference()).as_json()
    tapes = pytester.path / "tapes.json"
    tapes.write_text(json.dumps({"V1": record["decision_tape"]}), encoding="utf-8")
    path = pytester.path / "run.json"
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        f"--agentbench-report={path}",
        "--agentbench-suite",
        SUITE,
        "--agentbench-suite",
        "operations-commerce-v1",
        f"--agentbench-predictions={SUITE}={tapes}",
        "--agentbench-adapter=tool_agents:Raises",
        "-m",
        "not agentbench_control",
    )
    document = json.loads(path.read_text(encoding="utf-8"))
    assert_valid_report(document)
    result.assert_outcomes(passed=1, failed=2 + 3)
    suites = {suite["id"]: suite for suite in document["suites"]}
    outcomes = {e["result"]["case_id"]: e["result"] for e in suites[SUITE]["cases"]}
    assert outcomes["V1"]["outcome"] == "passed"
    assert outcomes["V2"]["failure_class"] == "product_error"
    assert "missing_tape" in outcomes["V2"]["failure_reason"]
    raised = suites["operations-commerce-v1"]
    assert raised["counts"]["failed"] == len(raised["cases"]) == 3
    for entry in raised["cases"]:
        assert entry["result"]["failure_class"] == "agent_error"
        assert "provider unavailable" in entry["result"]["failure_reason"]


def check_one_audited_ledger_per_case(folder: Path, suite: dict[str, Any], run: str) -> None:
    """Each case of the suite wrote one execution ledger, which audits, ends scored and
    holds the adapter's calls in order."""
    written = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    cases = [entry["result"]["case_id"] for entry in suite["cases"]]
    assert written == sorted(f"{case_id}.ndjson" for case_id in cases), run
    for case_id in cases:
        path = folder / f"{case_id}.ndjson"
        assert audit(path).startswith(f"ok: {path}"), run
        reading = read_ledger(path)
        assert reading.terminal_kind == "scored", run
        header = reading.rows[0]["header"]
        assert isinstance(header, dict)
        assert header["scenario_id"] == case_id, run
        calls = calls_of(path)
        assert calls, run
        assert all(call["method"] == "solve" for call in calls), run
        assert [call["invocation_index"] for call in calls] == list(range(1, len(calls) + 1))


VARIANTS_RUN = (
    # The variants' labels ``cluster:<id>`` and ``operation:<id>`` cannot be marker
    # names; they must not be offered to pytest as markers (an unknown-mark warning,
    # an error under --strict-markers), on the controller or on a worker.
    "--strict-markers",
    "-W",
    "error::pytest.PytestUnknownMarkWarning",
    "--agentbench-projection",
    "full,static",
    "--agentbench-projection",
    "boundary_only,ordered_snapshot",
    # V1's episode record is larger than the default cap on a kept output.
    "--agentbench-max-output-bytes=0",
    "-v",
)
"""Options of the sessions that run the maintenance suite's three variants, its eleven-check
control gate and four diagnostic projections (one evaluator, the semantic scenario as unit,
the caveat in the report), serially and on two workers, because the claim is that they
agree: tests/html/test_plugin_html.py runs them beside the built-in suites it runs anyway,
each with ``--agentbench-ledger``, and checks them with the functions below."""
ARMS = ("full", "static", "boundary_only", "ordered_snapshot")


def variants_seen(
    result: pytest.RunResult, suite: dict[str, Any], ledger: Path, run: str
) -> tuple[Any, ...]:
    """What one run of :data:`VARIANTS_RUN` shows of the maintenance suite, checked so far
    as one run can be, for comparison with another run; its ledgers each audited."""
    out = result.stdout.str()
    assert "PytestUnknownMarkWarning" not in out, run
    assert f"suites/{SUITE}/operation.yaml::V2" in out, f"{run}: readable item ids"
    for control in GATE:
        item = re.escape(f"suites/{SUITE}/suite.yaml::control-{control}")
        assert re.search(rf"PASSED {item}\s|{item} PASSED", out), f"{run}: {control}"
    assert "diagnostic projections (diagnostic surfaces, not a confirmatory comparison" in out
    assert "stateful time-removed is not implemented" in out, run
    cases = {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}
    outputs = {
        case_id: result["recorded"]["outcome"]["output"]
        for case_id, result in sorted(cases.items())
    }
    vectors = {
        case_id: output["projections"]
        for case_id, output in outputs.items()
        if "projections" in output
    }
    metrics = {
        m["name"]: (m["value"], m["support"], m["family"])
        for m in suite["metrics"]
        if m["name"].startswith("decision_point_admissibility_")
    }
    labels = {entry["result"]["case_id"]: entry["result"]["labels"] for entry in suite["cases"]}
    assert all(
        "cluster:pab-recurring-kitchen-leak" in case_labels for case_labels in labels.values()
    ), run
    controls = {entry["control_id"]: entry["passed"] for entry in suite["controls"]}
    check_one_audited_ledger_per_case(ledger / SUITE, suite, run)
    written = {
        path.relative_to(ledger / SUITE).as_posix(): path.read_bytes()
        for path in sorted((ledger / SUITE).rglob("*"))
        if path.is_file()
    }
    return vectors, metrics, summary(suite), controls, written


def check_variants_controls_and_projections(seen: tuple[Any, ...]) -> None:
    """The serial run's figures (the run under -n 2 equal to them)."""
    vectors, metrics, found, controls, _ = seen
    assert found["outcomes"] == {"V1": "passed", "V2": "passed", "V3": "passed"}
    assert found["metrics"]["reliable_operation_rate"] == (pytest.approx(2 / 3), 1), (
        "three variants, one unit"
    )
    assert found["metrics"]["operation_completion_rate"] == (1.0, 1)
    assert found["metrics"]["recovery_rate"] == (pytest.approx(0.5), 1)
    assert found["metrics"]["human_load"] == (pytest.approx(5 / 3), 1)
    assert controls == {f"control-{control}": True for control in GATE}
    # V2 has no decision point of its own; V1 has two, V3 one, each graded in every projection.
    assert sorted(vectors) == ["V1", "V3"]
    for vector in vectors.values():
        assert sorted(vector) == sorted(ARMS)
        assert {s for arm in vector.values() for s in arm.values()} == {"ADMISSIBLE"}
    assert sorted(metrics) == sorted(f"decision_point_admissibility_{arm}" for arm in ARMS)
    # One semantic scenario behind three points and four projections: support 1.
    assert {value[:2] for value in metrics.values()} == {(1.0, 1)}
    # Reported in the order asked for: the lifecycle first, then the diagnostic surfaces.
    assert list(metrics) == [f"decision_point_admissibility_{arm}" for arm in ARMS]
