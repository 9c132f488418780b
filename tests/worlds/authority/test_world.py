"""The authority world bound to the plugin: real pytest runs of asteria-authored-v1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli import main as cli
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.sdk.packaged import packaged_suites
from pytest_agentbench.sdk.suite import Suite, load_suite_config
from pytest_agentbench.worlds.authority.agents import CurrentStateAgent, ReferenceAgent
from pytest_agentbench.worlds.authority.bundle import read_public
from pytest_agentbench.worlds.authority.world import WORLD

SUITE_ID = "asteria-authored-v1"
SHIPPED_SUITE = packaged_suites()[SUITE_ID]
SHIPPED_ORACLE = SHIPPED_SUITE.parent.parent / "oracles" / SUITE_ID
EVENTS = f"suites/{SUITE_ID}/public_events.jsonl"
PUBLIC = read_public(SHIPPED_SUITE, f"suites/{SUITE_ID}", exclude=(SUITE_FILE,))
REFERENCE_ROWS: list[dict[str, Any]] = ReferenceAgent().trace(PUBLIC)
CURRENT_STATE_ROWS: list[dict[str, Any]] = CurrentStateAgent().trace(PUBLIC)
ACTION_IDS = [row["event_id"] for row in REFERENCE_ROWS]
CONTROL_ITEMS = ["control-reference", "control-always-deny", "control-current-state"]
WRONG_EVENT = "evt-010-authorised-comparison"


def run_with_report(
    pytester: pytest.Pytester, *args: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run pytest in ``pytester`` and return the result and its only suite's report."""
    path = pytester.path / "run.json"
    result = pytester.runpytest(f"--agentbench-report={path}", *args)
    (suite,) = json.loads(path.read_text(encoding="utf-8"))["suites"]
    return result, suite


def metric_values(suite_report: dict[str, Any]) -> dict[str, float | None]:
    return {metric["name"]: metric["value"] for metric in suite_report["metrics"]}


ENVELOPE_METRIC_FIELDS = ("name", "value", "support", "family", "support_meaning")


def cli_metrics(capsys: pytest.CaptureFixture[str], *source: str) -> list[dict[str, Any]]:
    """The full metric list ``agentbench evaluate --json`` computes for ``source``."""
    capsys.readouterr()
    assert cli.main(["evaluate", SUITE_ID, *source, "--json"]) == 0
    metrics: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["metrics"]
    return [{name: metric[name] for name in ENVELOPE_METRIC_FIELDS} for metric in metrics]


def run_metrics(suite_report: dict[str, Any]) -> list[dict[str, Any]]:
    """A run report's metrics, as far as the original's evaluation report carries them."""
    return [
        {name: metric[name] for name in ENVELOPE_METRIC_FIELDS}
        for metric in suite_report["metrics"]
    ]


def case_results(suite_report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["result"]["case_id"]: entry["result"] for entry in suite_report["cases"]}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join((row if isinstance(row, str) else canonical_json(row)) + "\n" for row in rows),
        encoding="utf-8",
    )
    return path


def test_builtin_suite_collects_readable_ids(pytester: pytest.Pytester) -> None:
    # Its id alone turns the plugin on (tests/test_plugin_idle.py) and collects its items.
    result = pytester.runpytest("--agentbench-suite", SUITE_ID, "--collect-only", "-q")
    assert [line for line in result.outlines if "::" in line] == [
        *(f"{EVENTS}::{event_id}" for event_id in ACTION_IDS),
        *(f"suites/{SUITE_ID}/suite.yaml::{name}" for name in CONTROL_ITEMS),
    ]
    assert len(ACTION_IDS) == 11


def test_builtin_suite_passes_with_the_reference_agent_which_never_receives_evaluator_data(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Serially; under ``-n 2`` the predictions test below runs the suite with its controls.

    The reference agent here records every view it is handed (otherwise it is the reference
    agent itself): no evaluator data reaches it. An xdist worker hands its adapter the same
    view (it runs the same code on the same files). The built-in reference agent taken by
    default runs the suite in its bundle layout below."""
    records = pytester.path / "records"
    records.mkdir()
    importable(pytester, recorder=RECORDER.format(records=str(records)))
    result, suite = run_with_report(
        pytester, "--agentbench-suite", SUITE_ID, "--agentbench-adapter=recorder:Recorder"
    )
    result.assert_outcomes(passed=11 + 3)
    result.stdout.fnmatch_lines([f"*= agentbench: {SUITE_ID} (authority) =*"])
    assert suite["counts"]["passed"] == 11
    values = metric_values(suite)
    assert values.pop("excess_authority_rate") == 0.0
    assert values == dict.fromkeys(values, 1.0)
    # The whole vector (supports and intervals included) equals the one computed outside
    # pytest.
    assert run_metrics(suite) == cli_metrics(capsys, "--agent", "reference")
    assert {entry["control_id"] for entry in suite["controls"]} == set(CONTROL_ITEMS)
    assert all(entry["passed"] for entry in suite["controls"])
    seen = {path.stem: path.read_text(encoding="utf-8") for path in records.iterdir()}
    assert sorted(seen) == sorted(ACTION_IDS)
    canaries = _shipped_canaries()
    # 1 evaluator digest + 7 evaluator file hashes + 11 truth, binding and label records each.
    assert len(canaries) == 1 + 7 + 3 * 11
    for text in seen.values():
        assert PUBLIC.manifest.artifact_set_digest in text
        leaked = [canary for canary in canaries if canary in text]
        assert leaked == []


def test_predictions_file_reproduces_the_agents_metrics(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """One serial session and one on two workers: failures make the metrics non-trivial."""
    rows = write_jsonl(pytester.path / "current.jsonl", CURRENT_STATE_ROWS)
    expected = cli_metrics(capsys, "--agent", "current_state")
    for distribution in ([], ["-n", "2"]):
        run = " ".join(distribution) or "serial"
        result, suite = run_with_report(
            pytester,
            "--agentbench-suite",
            SUITE_ID,
            "--agentbench-predictions",
            f"{SUITE_ID}={rows}",
            *distribution,
        )
        failed = suite["counts"]["failed"]
        assert failed > 0, run
        result.assert_outcomes(passed=11 - failed + 3, failed=failed)
        # Identical under both: the whole vector equals the one computed outside pytest.
        assert run_metrics(suite) == expected, run
        values = metric_values(suite)
        assert values["authorization_decision_f1"] == pytest.approx(1 / 3), run
        assert values["provenance_completeness"] == pytest.approx(6 / 11), run
        assert {entry["control_id"] for entry in suite["controls"]} == set(CONTROL_ITEMS), run
        assert all(entry["passed"] for entry in suite["controls"]), run


MALFORMED, INVALID = 2, 5
"""Indexes of the two predictions lines broken in one file: malformed JSON, a bad field."""


RAISES, CHATTY, OFF_BY_ONE = 1, 2, 3
"""Indexes of the events the mixed adapter fails on, each its own way (and WRONG_EVENT)."""

ADAPTERS = f"""
from pytest_agentbench.worlds.authority.agents import ReferenceAgent

IDS = {ACTION_IDS!r}


class Mixed(ReferenceAgent):
    def trace_action(self, bundle, event_id):
        if event_id == IDS[{RAISES}]:
            raise RuntimeError("the model endpoint is down")
        if event_id == IDS[{CHATTY}]:
            return "I think this one is allowed."
        if event_id == IDS[{OFF_BY_ONE}]:
            return super().trace_action(bundle, IDS[{OFF_BY_ONE} + 1])
        row = super().trace_action(bundle, event_id)
        if event_id == {WRONG_EVENT!r}:
            row["decision"] = "deny"
            row["attributed_actor_id"] = "principal-nobody"
        return row
"""


def importable(pytester: pytest.Pytester, **modules: str) -> None:
    """Write modules into ``pytester`` importable here and in xdist worker processes."""
    pytester.makepyfile(**modules)
    pytester.syspathinsert()
    # A rootdir conftest puts the rootdir on sys.path of every worker before
    # the plugin imports the adapter.
    pytester.makeconftest("")


def _a_wrong_or_failing_adapter_fails_only_those_items_each_classified(
    result: pytest.RunResult, suite: dict[str, Any]
) -> None:
    """One adapter, wrong on one event and failing on three others each its own way: every
    other case passes (7, and the 3 controls), and each failing item says why."""
    assert WRONG_EVENT not in [ACTION_IDS[i] for i in (RAISES, CHATTY, OFF_BY_ONE)]
    assert suite["counts"]["passed"] == 7
    assert all(entry["passed"] for entry in suite["controls"])
    results = case_results(suite)
    failed = {case_id for case_id, item in results.items() if item["outcome"] != "passed"}
    assert failed == {WRONG_EVENT, *(ACTION_IDS[i] for i in (RAISES, CHATTY, OFF_BY_ONE))}
    assert {name: n for name, n in suite["failure_classes"].items() if n} == {
        "agent_error": 1,
        "product_error": 2,
    }
    # Wrong, not broken: graded, two checks failing, expected and actual listed.
    wrong = results[WRONG_EVENT]
    assert (wrong["outcome"], wrong["failure_class"]) == ("failed", None)
    failed_checks = {c["name"] for c in wrong["checks"] if c["status"] != "pass"}
    assert {"authorization_decision", "attribution_integrity"} <= failed_checks
    result.stdout.fnmatch_lines(
        [
            f"_* {SUITE_ID}::{WRONG_EVENT} _*",
            "2 of 13 checks failed: authorization_decision, attribution_integrity",
            '  authorization_decision [fail]: expected "allow", got "deny"',
            '  attribution_integrity [fail]: expected "principal-comparison-service", '
            'got "principal-nobody"',
        ],
        consecutive=True,
    )
    classified = {
        RAISES: ("agent_error", "adapter raised RuntimeError: the model endpoint is down"),
        CHATTY: (
            "product_error",
            "trace_action must return a mapping or an ObservedActionTrace, got str",
        ),
        OFF_BY_ONE: (
            "product_error",
            f"row is for event {ACTION_IDS[OFF_BY_ONE + 1]!r}, not {ACTION_IDS[OFF_BY_ONE]!r}",
        ),
    }
    for index, (failure_class, reason) in classified.items():
        event = ACTION_IDS[index]
        assert results[event]["failure_class"] == failure_class, event
        assert results[event]["failure_reason"] == reason, event
        result.stdout.fnmatch_lines(
            [f"_* {SUITE_ID}::{event} _*", f"{failure_class}: {reason}"], consecutive=True
        )
        result.stdout.fnmatch_lines([f"{failure_class}: {reason}", "13 of 13 checks failed:"])
    # The adapter that raised shows its own frames between the reason and the checks, none
    # of the harness's.
    out = result.stdout.str()
    raised = out.partition("what the adapter raised")[2].partition(
        f"_ {SUITE_ID}::{ACTION_IDS[CHATTY]} _"
    )[0]
    assert "my_adapters.py" in raised
    assert "pytest_agentbench" not in raised


BUNDLE_SUITE_YAML = """\
id: asteria-bundle
version: 1.0.0
world: authority
title: Asteria in the original bundle layout
oracle: evaluator
options: {public: public}
"""


def write_bundle(root: Path, suite_yaml: str = BUNDLE_SUITE_YAML) -> Path:
    """The shipped suite in the original layout, with a suite.yaml beside its two trees."""
    bundle = root / "bundle"
    shutil.copytree(SHIPPED_SUITE, bundle / "public")
    (bundle / "public" / SUITE_FILE).unlink()
    shutil.copytree(SHIPPED_ORACLE, bundle / "evaluator")
    (bundle / "evaluator" / "controls.yaml").unlink()
    (bundle / SUITE_FILE).write_text(suite_yaml, encoding="utf-8")
    return bundle


def test_an_adapter_and_a_predictions_file_each_fail_only_their_own_cases(
    pytester: pytest.Pytester,
) -> None:
    """One session, two suites: the shipped suite by its id, answered by a mixed adapter;
    and the same suite in the original bundle layout, scored from a predictions file
    (which takes the adapter's place for that suite alone)."""
    importable(pytester, my_adapters=ADAPTERS)
    write_bundle(pytester.path)
    assert ACTION_IDS[MALFORMED] == "evt-012-quotation-request"
    rows: list[Any] = list(REFERENCE_ROWS)
    rows[MALFORMED] = '{"event_id": "evt-012-quotation-request", "decision": '
    rows[INVALID] = canonical_json({**REFERENCE_ROWS[INVALID], "decision": "perhaps"})
    path = write_jsonl(pytester.path / "rows.jsonl", rows)
    report = pytester.path / "run.json"
    result = pytester.runpytest(
        f"--agentbench-report={report}",
        "--agentbench-suite",
        SUITE_ID,
        "--agentbench-adapter=my_adapters:Mixed",
        "bundle",
        "-v",
        "--agentbench-predictions",
        f"asteria-bundle={path}",
    )
    # The bundle: without controls.yaml its two negative agents are ungraded items, and fail.
    result.assert_outcomes(passed=7 + 3 + 9, failed=4 + 2 + 2)
    suites = {suite["id"]: suite for suite in json.loads(report.read_text())["suites"]}
    _a_wrong_or_failing_adapter_fails_only_those_items_each_classified(result, suites[SUITE_ID])
    _the_original_bundle_layout_runs_unchanged_and_a_bad_predictions_line_fails_its_case(
        result, suites["asteria-bundle"]
    )


def _the_original_bundle_layout_runs_unchanged_and_a_bad_predictions_line_fails_its_case(
    result: pytest.RunResult, suite: dict[str, Any]
) -> None:
    """The shipped suite in the original bundle layout, scored from the reference agent's
    rows with two lines broken in one file (malformed JSON, a bad field): every other case
    passes on the bundle's data as on the shipped suite's, and each broken line fails only
    its own case with its own reason."""
    assert suite["counts"]["passed"] == 9
    output = result.stdout.str()
    assert f"bundle/public/public_events.jsonl::{ACTION_IDS[0]} PASSED" in output
    assert "bundle/suite.yaml::ungraded-always_deny FAILED" in output
    assert "bundle/suite.yaml::ungraded-current_state FAILED" in output
    results = case_results(suite)
    failed = {case_id for case_id, item in results.items() if item["outcome"] != "passed"}
    assert failed == {ACTION_IDS[MALFORMED], ACTION_IDS[INVALID]}
    assert {results[case_id]["failure_class"] for case_id in failed} == {"product_error"}
    assert {name: n for name, n in suite["failure_classes"].items() if n} == {"product_error": 2}
    # The broken cases are still graded (every check missing), so they count against the
    # metrics.
    (accuracy,) = [m for m in suite["metrics"] if m["name"] == "authorization_decision_accuracy"]
    assert (accuracy["value"], accuracy["support"]) == (pytest.approx(9 / 11), 11)
    reasons = {
        MALFORMED: "product_error: [[]missing_event_id[]] *: no row for "
        "'evt-012-quotation-request' (lines with no readable event_id: "
        f"[[]malformed_json[]] *rows.jsonl:{MALFORMED + 1}: *)",
        INVALID: f"product_error: [[]invalid_row[]] *rows.jsonl:{INVALID + 1}: decision: *",
    }
    for index, reason in reasons.items():
        result.stdout.fnmatch_lines(
            [f"_* asteria-bundle::{ACTION_IDS[index]} _*", reason, "13 of 13 checks failed:"],
            consecutive=True,
        )


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        pytest.param(
            "{public: 3}",
            "[invalid_field] bundle/suite.yaml: options.public: must be a folder path",
            id="not-a-path",
        ),
        pytest.param(
            "{pubilc: public}",
            "[unknown_field] bundle/suite.yaml: options.pubilc: unknown option of world kind "
            "'authority' (known: public)",
            id="misspelt",
        ),
        pytest.param(
            "{public: published}",
            "[missing_file] bundle/published: bundle folder does not exist",
            id="missing-folder",
        ),
    ],
)
def test_bad_public_option_is_a_named_collection_error(
    pytester: pytest.Pytester, options: str, refusal: str
) -> None:
    write_bundle(
        pytester.path, BUNDLE_SUITE_YAML.replace("options: {public: public}", f"options: {options}")
    )
    result = pytester.runpytest("bundle")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert refusal in output
    assert "Traceback" not in output


def test_tampered_public_file_is_a_named_collection_error(pytester: pytest.Pytester) -> None:
    suite_dir = pytester.path / "suites" / SUITE_ID
    shutil.copytree(SHIPPED_SUITE, suite_dir)
    shutil.copytree(SHIPPED_ORACLE, pytester.path / "oracles" / SUITE_ID)
    principals = suite_dir / "principals.jsonl"
    principals.write_text(principals.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    result = pytester.runpytest("suites")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert (
        f"[digest_mismatch] suites/{SUITE_ID}/principals.jsonl: "
        "sha256 differs from the one manifest.json records" in output
    )
    assert "Traceback" not in output


RECORDER = """
from pathlib import Path

from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.worlds.authority.agents import ReferenceAgent

RECORDS = Path({records!r})


class Recorder(ReferenceAgent):
    def trace_action(self, bundle, event_id):
        seen = canonical_json(bundle.model_dump(mode="json")) + canonical_json(event_id)
        (RECORDS / (event_id + ".json")).write_text(seen, encoding="utf-8")
        return super().trace_action(bundle, event_id)
"""


def _shipped_canaries() -> list[str]:
    suite = Suite(
        config=load_suite_config(SHIPPED_SUITE / SUITE_FILE, SUITE_FILE),
        root=SHIPPED_SUITE,
        display_root=f"suites/{SUITE_ID}",
    )
    suite.data = WORLD.load_suite(suite)
    return list(WORLD.leak_canaries(suite, WORLD.load_oracle(suite)))
