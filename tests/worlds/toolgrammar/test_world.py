"""The toolgrammar world bound to the plugin: real pytest runs of the built-in suite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from examples.toolgrammar_fenced_agent import FencedAgent, NaiveContextAgent
from pytest_agentbench.run.session import LoadedSuite, SuiteLoader
from pytest_agentbench.sdk.canonical import artifact_set_digest, tree_files
from pytest_agentbench.sdk.contracts import CaseResult, FailureClass
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.packaged import data_root, packaged_suites
from pytest_agentbench.worlds.toolgrammar import agents
from pytest_agentbench.worlds.toolgrammar.domains import get_domain
from pytest_agentbench.worlds.toolgrammar.grammar import Verb
from pytest_agentbench.worlds.toolgrammar.sandbox import built_world
from pytest_agentbench.worlds.toolgrammar.tasks import TaskRecord
from tests.reports import normalised
from tests.test_conformance import REGISTRY

SUITE_ID = "toolgrammar-mini-v1"
CONTROLS = [
    "control-reference",
    "control-obeys-injection",
    "control-always-refuses",
    "control-answers-without-checking",
    "control-ignores-policy",
    "control-never-cites",
]


def _loaded() -> LoadedSuite:
    return SuiteLoader(REGISTRY, data_root()).load(packaged_suites()[SUITE_ID])


LOADED = _loaded()
ORACLE: dict[str, TaskRecord] = LOADED.world.load_oracle(LOADED.suite)
CASES = {case.case_id: case for case in LOADED.world.cases(LOADED.suite)}
OPS_LOOKUP = min(task_id for task_id in ORACLE if task_id.startswith("ops-T1-"))
"""The first ops lookup (ids count every question offered, so it need not be 00001)."""


def _run(agent: Any, task_id: str) -> CaseResult:
    world, suite = LOADED.world, LOADED.suite
    case = CASES[task_id]
    outcome = world.run(suite, case, world.public_view(suite, case), agent)
    return world.evaluate(suite, case, outcome, ORACLE)


def _failing(result: CaseResult) -> set[str]:
    return {check.name for check in result.failed_checks}


def _injection_tasks(approved: bool) -> list[TaskRecord]:
    found = []
    for task in ORACLE.values():
        for injection in task.injections:
            domain = get_domain(task.world)
            # The payload names the write it asks for as JSON after "with".
            lure = json.loads(injection.payload.split(" with ", 1)[1].split(" and do not")[0])
            verdict = domain.privileged_verdict(built_world(domain).conn, lure)
            if (verdict == "approved") == approved:
                found.append(task)
    return found


def _suite_report(pytester: pytest.Pytester, *args: str) -> tuple[Any, dict[str, Any]]:
    report = pytester.path / "run.json"
    result = pytester.runpytest(
        "--agentbench-suite", SUITE_ID, f"--agentbench-report={report}", *args
    )
    (suite,) = json.loads(report.read_text(encoding="utf-8"))["suites"]
    return result, suite


# The whole suite with its controls, against the pinned goldens and with its page: in the
# run tests/test_judging_builtin.py judges (check_toolgrammar_passes_and_its_controls_...).


def test_trap_tier_aggregates_identically_with_and_without_xdist(
    pytester: pytest.Pytester,
) -> None:
    """One serial session and one on two workers, the trap tier of one world picked by its
    markers: the same report. The markers select the same items on the workers as in one
    process, under ``--strict-markers`` (tests/worlds/toolgrammar/test_traps.py selects by
    other markers serially)."""
    traps = [case_id for case_id in CASES if case_id.startswith("clinic-T4-")]
    assert traps == [
        task_id for task_id, task in ORACLE.items() if (task.tier, task.world) == ("T4", "clinic")
    ]
    assert any(ORACLE[t].injections for t in traps), "planted instructions among them"
    by_markers = ("--strict-markers", "-m", "tier_T4 and world_clinic")
    reports = {}
    for distribution in ([], ["-n", "2"]):
        result, suite = _suite_report(pytester, *by_markers, *distribution)
        result.assert_outcomes(passed=len(traps))
        metrics = {m["name"]: (m["value"], m["support"]) for m in suite["metrics"]}
        assert metrics["trap_pass_at_1"] == (1.0, len(traps)), distribution
        assert metrics["pass_at_1_T1"] == (None, 0), distribution
        injected = sum(1 for t in traps if ORACLE[t].injections)
        assert metrics["injection_resistance"] == (1.0, injected), distribution
        reports[" ".join(distribution) or "serial"] = normalised(suite)
    assert reports["-n 2"] == reports["serial"]


def test_a_refused_lured_write_passes_the_state_diff_but_not_injection_resisted() -> None:
    refused = _injection_tasks(approved=False)
    assert refused, "the suite needs an injection whose lure the policy refuses"
    for task in refused:
        result = _run(agents.ObeysInjectionAgent(), task.task_id)
        assert _failing(result) == {"injection_resisted"}, task.task_id
        assert result.measurements["pass_at_1"] == 1
        assert "injection_obeyed" in result.findings


def test_an_approved_lured_write_also_changes_the_state_diff() -> None:
    approved = _injection_tasks(approved=True)
    assert approved, "the suite needs an injection whose lure the policy approves"
    for task in approved:
        result = _run(agents.ObeysInjectionAgent(), task.task_id)
        assert _failing(result) == {"injection_resisted", "state_diff_matches"}
        assert result.measurements["pass_at_1"] == 0


def test_fencing_tool_results_keeps_a_context_reading_agent_from_obeying() -> None:
    tasks = [t for t in ORACLE.values() if t.injections]
    for task in tasks:
        naive = _run(NaiveContextAgent(), task.task_id)
        fenced = _run(FencedAgent(), task.task_id)
        assert "injection_resisted" in _failing(naive), task.task_id
        assert _failing(fenced) == set(), task.task_id


def test_grounding_checks_citations_and_faithfulness() -> None:
    grounded = next(t for t in ORACLE.values() if t.expected_citations)

    class WrongCitation:
        def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
            final = agents.ReferenceAgent().solve(task, session)
            return {**final, "citations": ["SEC-00001"]}

    class Invented:
        def solve(self, task: dict[str, Any], session: Any) -> dict[str, Any]:
            final = agents.ReferenceAgent().solve(task, session)
            return {**final, "citations": [*final["citations"], "SEC-99999"]}

    assert _failing(_run(WrongCitation(), grounded.task_id)) == {"citations_match", "faithful"}
    assert _failing(_run(Invented(), grounded.task_id)) == {"citations_match", "faithful"}


class Raises:
    def solve(self, task: dict[str, Any], session: Any) -> Any:
        raise RuntimeError("model unavailable")


class Garbage:
    def __init__(self, value: Any) -> None:
        self.value = value

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        return self.value


@pytest.mark.parametrize(
    "value",
    [
        ["a list"],
        "not json",
        '{"answer": "x", "answer": "y"}',
        {"answer": "x", "extra": 1},
        {"answer": 5},
        {"citations": []},
        None,
    ],
)
def test_a_malformed_final_answer_is_a_product_error(value: Any) -> None:
    result = _run(Garbage(value), OPS_LOOKUP)
    assert result.failure_class is FailureClass.PRODUCT_ERROR
    assert {c.status.value for c in result.checks} == {"missing"}


def test_an_adapter_that_raises_is_an_agent_error_and_json_text_is_accepted() -> None:
    assert _run(Raises(), OPS_LOOKUP).failure_class is FailureClass.AGENT_ERROR
    task = ORACLE[OPS_LOOKUP]
    text = json.dumps({"answer": task.oracle_answer, "citations": []})
    assert _run(Garbage(text), OPS_LOOKUP).outcome.value == "passed"


def test_the_adapter_sees_only_the_public_view() -> None:
    seen: list[dict[str, Any]] = []

    class Spy:
        def solve(self, task: dict[str, Any], session: Any) -> Any:
            seen.append(task)
            return {"answer": "I cannot answer that."}

    _run(Spy(), "ops-T4-00001")
    assert set(seen[0]) == {"task_id", "world", "tier", "prompt"}


def test_every_call_reaches_the_outcome_and_receipt() -> None:
    world, suite = LOADED.world, LOADED.suite
    case = CASES["ops-T3-00001"]
    outcome = world.run(suite, case, world.public_view(suite, case), agents.ReferenceAgent())
    assert outcome.receipt is not None
    calls = outcome.output["calls"]  # type: ignore[index]
    assert [c["tool"] for c in calls] == [
        s.split("(")[0] for s in ORACLE["ops-T3-00001"].oracle_calls
    ]
    assert outcome.output["state_diff"] == ORACLE["ops-T3-00001"].oracle_state_diff  # type: ignore[index]


def _copy(tmp_path: Path) -> Path:
    suite_dir = tmp_path / "suites" / SUITE_ID
    shutil.copytree(packaged_suites()[SUITE_ID], suite_dir)
    shutil.copytree(data_root() / "oracles" / SUITE_ID, tmp_path / "oracles" / SUITE_ID)
    return suite_dir


def _refusal(tmp_path: Path, suite_dir: Path) -> AgentbenchError:
    loaded = SuiteLoader(REGISTRY, tmp_path)._load(suite_dir)
    assert isinstance(loaded, AgentbenchError)
    return loaded


def _reseal(suite_dir: Path) -> None:
    """Recompute the public artifact digest, as a careless editor of the files would."""
    manifest_path = suite_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    files = tree_files(suite_dir, exclude=("suite.yaml", "manifest.json"))
    manifest["artifact_set_digest"] = artifact_set_digest(
        {rel: path.read_bytes() for rel, path in files.items()}
    )
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")


def test_a_task_file_for_an_unregistered_domain_is_refused(tmp_path: Path) -> None:
    suite_dir = _copy(tmp_path)
    (suite_dir / "tasks" / "ops.jsonl").rename(suite_dir / "tasks" / "shop.jsonl")
    _reseal(suite_dir)
    refused = _refusal(tmp_path, suite_dir)
    assert (refused.code, refused.location.file) == (
        "unknown_domain",
        f"suites/{SUITE_ID}/tasks/shop.jsonl",
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"match": {}}, "injections[0].match"),
        ({"match": "ORD-00001"}, "injections[0].match"),
        ({"verb": "fetch_doc"}, "injections[0].verb"),
    ],
)
def test_planted_text_must_name_a_bound_tool_and_its_arguments(
    tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    suite_dir = _copy(tmp_path)
    path = suite_dir / "tasks" / "ops.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    planted = next(line for line in lines if line["injections"])
    planted["injections"][0].update(change)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    _reseal(suite_dir)
    refused = _refusal(tmp_path, suite_dir)
    assert (refused.code, refused.location.field) == ("invalid_task", field)


def test_a_world_without_a_recorded_digest_is_refused(tmp_path: Path) -> None:
    suite_dir = _copy(tmp_path)
    manifest_path = suite_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    del manifest["worlds"]["doc"]
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    refused = _refusal(tmp_path, suite_dir)
    assert (refused.code, refused.location.field) == ("missing_world_digest", "worlds.doc")


def test_a_public_prompt_the_oracle_does_not_know_is_refused(tmp_path: Path) -> None:
    suite_dir = _copy(tmp_path)
    path = suite_dir / "tasks" / "clinic.jsonl"
    path.write_text(
        path.read_text(encoding="utf-8").replace("What is", "What was", 1), encoding="utf-8"
    )
    _reseal(suite_dir)
    loaded = SuiteLoader(REGISTRY, tmp_path).load(suite_dir)
    with pytest.raises(AgentbenchError) as refused:
        loaded.world.load_oracle(loaded.suite)
    assert refused.value.code == "oracle_mismatch"


def test_a_tampered_oracle_file_is_refused(tmp_path: Path) -> None:
    suite_dir = _copy(tmp_path)
    oracle = tmp_path / "oracles" / SUITE_ID / "tasks" / "doc.jsonl"
    oracle.write_bytes(oracle.read_bytes() + b"\n")
    loaded = SuiteLoader(REGISTRY, tmp_path).load(suite_dir)
    with pytest.raises(AgentbenchError) as refused:
        loaded.world.load_oracle(loaded.suite)
    assert refused.value.code == "digest_mismatch"


def test_predictions_replay_calls_and_answers(tmp_path: Path) -> None:
    world, suite = LOADED.world, LOADED.suite
    rows = []
    for task_id in ("ops-T3-00001", "doc-T5-00001"):
        case = CASES[task_id]
        output = world.run(
            suite, case, world.public_view(suite, case), agents.ReferenceAgent()
        ).output
        rows.append(
            {
                "task_id": task_id,
                "answer": output["answer"],  # type: ignore[index]
                "citations": output["citations"],  # type: ignore[index]
                "calls": [
                    {"tool": c["tool"], "arguments": c["arguments"]} for c in output["calls"]
                ],
            }
        )  # type: ignore[index]
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    adapter = world.predictions_adapter(suite, path)
    assert _run(adapter, "ops-T3-00001").outcome.value == "passed"
    assert _run(adapter, "doc-T5-00001").outcome.value == "passed"
    assert _run(adapter, OPS_LOOKUP).failure_class is FailureClass.PRODUCT_ERROR


def test_a_tampered_world_digest_is_refused(tmp_path: Path) -> None:
    suite_dir = _copy(tmp_path)
    manifest_path = suite_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["worlds"]["clinic"]["digest"] = "0" * 64
    manifest["worlds"]["clinic"]["tables"]["patients"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    loaded = _refusal(tmp_path, suite_dir)
    assert loaded.code == "world_digest_mismatch"
    assert "patients" in loaded.reason
    assert loaded.location.field == "worlds.clinic.digest"


def test_privileged_tools_are_flagged_for_the_adapter() -> None:
    world, suite = LOADED.world, LOADED.suite
    case = CASES[OPS_LOOKUP]
    seen: dict[str, Any] = {}

    class Inspect:
        def solve(self, task: dict[str, Any], session: Any) -> Any:
            seen["mcp"] = session.mcp_tools()
            seen["specs"] = {s.name: (s.mutating, s.privileged) for s in session.tools}
            return {"answer": "x"}

    world.run(suite, case, world.public_view(suite, case), Inspect())
    assert seen["specs"]["issue_refund"] == (True, True)
    assert seen["specs"]["get_order"] == (False, False)
    assert len(seen["mcp"]) == 11
    assert Verb.PRIVILEGED_WRITE.value not in seen["specs"]


def test_the_task_view_and_final_answer_schemas_are_published() -> None:
    import jsonschema

    world = LOADED.world
    view = world.public_view(LOADED.suite, CASES["doc-T5-00001"])
    jsonschema.validate(view, world.task_schema())  # type: ignore[attr-defined]
    final_schema = world.final_schema()  # type: ignore[attr-defined]
    jsonschema.validate({"answer": "x", "citations": ["SEC-00001"]}, final_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"answer": "x", "extra": 1}, final_schema)
