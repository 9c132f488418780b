"""Collection of suites as pytest items, and named refusals of broken suites."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_agentbench.sdk.canonical import artifact_set_digest, pretty_json
from tests.demo_world import write_demo_suite


def reseal(suite_dir: Path) -> None:
    """Rewrite the demo manifest so an edited case file passes the digest check."""
    cases = (suite_dir / "cases.jsonl").read_bytes()
    digest = artifact_set_digest({"cases.jsonl": cases})
    (suite_dir / "manifest.json").write_text(pretty_json({"artifact_set_digest": digest}))


def collected_ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line and not line.startswith(" ")]


def test_one_item_per_case_with_readable_ids_in_the_files_order_stably(
    demo: pytest.Pytester,
) -> None:
    questions = {f"case-{index}": f"{index}+1" for index in (7, 3, 9, 1, 5)}
    write_demo_suite(demo.path, questions={"first": "1+1", "second": "2+2", "third": "3+3"})
    write_demo_suite(demo.path, "ordered-suite", questions=questions)
    first = collected_ids(demo.runpytest("--collect-only", "-q"))
    second = collected_ids(demo.runpytest("--collect-only", "-q"))
    assert first == second
    assert [item for item in first if item.startswith("suites/demo-suite/")] == [
        "suites/demo-suite/cases.jsonl::first",
        "suites/demo-suite/cases.jsonl::second",
        "suites/demo-suite/cases.jsonl::third",
        "suites/demo-suite/suite.yaml::ungraded-always_zero",
    ]
    ordered = [item for item in first if item.startswith("suites/ordered-suite/cases.jsonl::")]
    assert [item.rpartition("::")[2] for item in ordered] == list(questions)


def test_markers_select_by_suite_and_kind(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path, "alpha-suite")
    write_demo_suite(demo.path, "beta-suite", questions={"only": "4+4"})
    demo.makepyfile(test_plain="def test_plain():\n    pass\n")
    alpha = demo.runpytest("--strict-markers", "-m", "alpha-suite", "-q")
    alpha.assert_outcomes(passed=3, failed=1, deselected=3)
    assert "suites/alpha-suite/suite.yaml::ungraded-always_zero" in alpha.stdout.str()
    everything = demo.runpytest("--strict-markers", "-m", "agentbench", "-q")
    everything.assert_outcomes(passed=4, failed=2, deselected=1)
    plain = demo.runpytest("--strict-markers", "-m", "not agentbench", "-q")
    plain.assert_outcomes(passed=1, deselected=6)


def selected_cases(result: pytest.RunResult) -> set[str]:
    return set(re.findall(r"cases\.jsonl::(c\d)", result.stdout.str()))


LABELS = {"c1": ["tier_T4", "cluster:pair"], "c2": ["cluster:pair"], "c3": ["tier_T1"]}
STRICT = ["--strict-markers", "-W", "error::pytest.PytestUnknownMarkWarning"]


def test_a_colon_label_is_no_marker(demo: pytest.Pytester) -> None:
    # Identifier labels select by -m and other labels by -k: the runs of
    # test_workers_select_by_label_and_name_a_broken_suite.
    write_demo_suite(demo.path, labels=LABELS)
    # A colon label was never a marker name: ``-m`` cannot select by it.
    assert "cluster" not in demo.runpytest("--markers").stdout.str()


BROKEN_SUITE_YAML = "id: broken-suite\nversion: 1.0.0\nworld: demo\ntitle: Broken\nowner: nobody\n"
BROKEN_SUITE_REFUSAL = "[unknown_field] suites/broken-suite/suite.yaml: owner: unknown field"


@pytest.mark.parametrize(
    "xdist_args", [pytest.param([], id="no-xdist"), pytest.param(["-n", "2"], id="n2")]
)
def test_workers_select_by_label_and_name_a_broken_suite(
    demo: pytest.Pytester, xdist_args: list[str]
) -> None:
    """Serially and under xdist, where the workers collect, mark and deselect: one project
    holds the suite marker under --strict-markers, identifier labels (markers) selected by
    ``-m`` and other labels (keywords) by ``-k``, and a broken suite, a named collection
    error while the others still run."""
    write_demo_suite(demo.path, "good-suite")
    write_demo_suite(demo.path, "marked-suite", labels=LABELS)
    write_demo_suite(demo.path, "keyed-suite", labels=LABELS)
    broken = write_demo_suite(demo.path, "broken-suite")
    (broken / "suite.yaml").write_text(BROKEN_SUITE_YAML)
    report = demo.path / "run.json"
    result = demo.runpytest(
        *STRICT,
        *xdist_args,
        "-v",
        f"--agentbench-report={report}",
        # Each selection applies to its own suite: -m picks marked-suite's cases by label,
        # -k keyed-suite's; good-suite (its control too) passes both by its suite marker.
        "-m",
        "good-suite or keyed-suite or tier_T4 or tier_T1",
        "-k",
        "good-suite or marked-suite or cluster:pair",
    )
    output = result.stdout.str()
    assert set(re.findall(r"marked-suite/cases\.jsonl::(c\d)", output)) == {"c1", "c3"}
    assert set(re.findall(r"keyed-suite/cases\.jsonl::(c\d)", output)) == {"c1", "c2"}
    assert "good-suite/suite.yaml::ungraded-always_zero" in output
    # Under xdist the workers deselect, so the count is in the passed items alone.
    result.assert_outcomes(passed=3 + 2 + 2, failed=1, errors=1, warnings=0)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert BROKEN_SUITE_REFUSAL in output
    assert "Traceback" not in output
    assert "Interrupted" not in output
    run = json.loads(report.read_text())
    suites = {suite["id"]: suite for suite in run["suites"]}
    assert sorted(suites) == ["good-suite", "keyed-suite", "marked-suite"]
    assert suites["good-suite"]["counts"]["passed"] == 3
    assert run["problems"] == [BROKEN_SUITE_REFUSAL]
    result.stdout.fnmatch_lines(
        ["agentbench ?unknown_field? suites/broken-suite/suite.yaml: owner: unknown field"]
    )


def test_a_run_whose_only_suite_is_refused_still_writes_its_report(
    demo: pytest.Pytester,
) -> None:
    suite_dir = write_demo_suite(demo.path)
    (suite_dir / "suite.yaml").write_text("id: demo-suite\nworld: demo\ntitle: No version\n")
    report = demo.path / "run.json"
    result = demo.runpytest(f"--agentbench-report={report}")
    result.assert_outcomes(errors=1)
    run = json.loads(report.read_text())
    assert run["suites"] == []
    assert run["exit_status"] == pytest.ExitCode.TESTS_FAILED
    assert run["problems"] == [
        "[missing_field] suites/demo-suite/suite.yaml: version: required field is missing"
    ]


SUITE_HEAD = "id: {suite}\nversion: 1.0.0\nworld: demo\ntitle: Demo\n"

BAD_SUITE_YAML = {
    "malformed-yaml": (
        SUITE_HEAD + "gates: [accuracy >= 0.5\n",
        "[malformed_yaml] suites/{suite}/suite.yaml:6:",
    ),
    "duplicate-key": (
        SUITE_HEAD + "title: Again\n",
        "[duplicate_key] suites/{suite}/suite.yaml:5: duplicate key 'title'",
    ),
    "unknown-field": (
        SUITE_HEAD + "colour: blue\n",
        "[unknown_field] suites/{suite}/suite.yaml: colour: unknown field",
    ),
    "wrong-type": (SUITE_HEAD + "gates: 3\n", "[invalid_field] suites/{suite}/suite.yaml: gates:"),
    "malformed-gate": (
        SUITE_HEAD + "gates: ['accuracy >= 0.5', 'accuracy > 0.5']\n",
        "[invalid_gate] suites/{suite}/suite.yaml: gates[1]: 'accuracy > 0.5' is not",
    ),
    "unknown-world-kind": (
        SUITE_HEAD.replace("world: demo", "world: weather"),
        "[unknown_world_kind] suites/{suite}/suite.yaml: world: world kind 'weather' "
        "is not registered (known: ",
    ),
}
"""A suite.yaml broken each way (``{suite}`` its folder and id), and how it is refused."""

BAD_CASE_LINES = {
    "malformed-line": (
        '{{"id": "c1", "question": "1+1"}}\n{{"id": "c2", "question": \n',
        "[malformed_json] suites/{suite}/cases.jsonl:2:",
    ),
    "duplicate-json-key": (
        '{{"id": "c1", "question": "1+1"}}\n{{"id": "c2", "question": "2+2", "question": "3+3"}}\n',
        "[duplicate_key] suites/{suite}/cases.jsonl:2: question: key 'question' appears "
        "more than once",
    ),
    # Case ids that would collide as pytest node ids.
    "duplicate-id": (
        '{{"id": "c1", "question": "1+1"}}\n{{"id": "c2", "question": "2+2"}}\n'
        '{{"id": "c1", "question": "3+3"}}\n',
        "[duplicate_case_id] suites/{suite}/cases.jsonl:3: case id 'c1' appears more "
        "than once (first at line 1)",
    ),
    "id-with-separator": (
        '{{"id": "c1", "question": "1+1"}}\n{{"id": "c::2", "question": "2+2"}}\n',
        "[invalid_case_id] suites/{suite}/cases.jsonl:2: case id 'c::2' is empty or contains '::'",
    ),
}
"""A cases.jsonl broken each way (resealed, so that its lines are what is refused)."""


def test_each_bad_suite_yaml_case_line_or_tampered_case_is_refused_by_name(
    demo: pytest.Pytester,
) -> None:
    # One session, a broken suite each (folder and id named after the way it is broken):
    # each is refused on its own, by name, with no traceback.
    expected: dict[str, str] = {}
    for suite, (suite_yaml, refusal) in BAD_SUITE_YAML.items():
        suite_dir = write_demo_suite(demo.path, suite)
        (suite_dir / "suite.yaml").write_text(suite_yaml.format(suite=suite))
        expected[suite] = refusal.format(suite=suite)
    for suite, (cases_jsonl, refusal) in BAD_CASE_LINES.items():
        suite_dir = write_demo_suite(demo.path, suite)
        (suite_dir / "cases.jsonl").write_text(cases_jsonl.format(suite=suite))
        reseal(suite_dir)
        expected[suite] = refusal.format(suite=suite)
    tampered = write_demo_suite(demo.path, "tampered")
    cases = tampered / "cases.jsonl"
    cases.write_text(cases.read_text().replace("10+5", "10+6"))
    expected["tampered"] = "[digest_mismatch] suites/tampered/manifest.json: artifact_set_digest:"
    result = demo.runpytest()
    result.assert_outcomes(errors=len(expected))
    output = result.stdout.str()
    for suite, refusal in expected.items():
        assert refusal in output, suite
    assert "Traceback" not in output


def test_two_folders_with_one_suite_id_are_not_merged(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path / "copy", "twin", questions={"c1": "5+5", "c9": "1+0"})
    write_demo_suite(demo.path, "twin")
    report = demo.path / "run.json"
    result = demo.runpytest(f"--agentbench-report={report}", "-m", "not agentbench_control")
    # Neither folder wins: both are refused, each naming the other.
    result.assert_outcomes(errors=2)
    refusals = [
        "[duplicate_suite_id] copy/suites/twin/suite.yaml: id: suite id 'twin' is also "
        "declared by suites/twin: every folder declaring it is refused",
        "[duplicate_suite_id] suites/twin/suite.yaml: id: suite id 'twin' is also "
        "declared by copy/suites/twin: every folder declaring it is refused",
    ]
    for refusal in refusals:
        assert refusal in result.stdout.str()
    run = json.loads(report.read_text())
    assert run["suites"] == []
    assert sorted(run["problems"]) == refusals


def test_one_case_can_be_run_by_its_node_id(demo: pytest.Pytester) -> None:
    write_demo_suite(demo.path)
    result = demo.runpytest("suites/demo-suite/cases.jsonl::c2", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["suites/demo-suite/cases.jsonl::c2 PASSED*"])


def test_case_file_of_a_broken_suite_named_on_the_command_line_reports_it(
    demo: pytest.Pytester,
) -> None:
    suite_dir = write_demo_suite(demo.path)
    cases = suite_dir / "cases.jsonl"
    cases.write_text(cases.read_text() + '{"id": "c4", "question": "1+2"}\n')
    result = demo.runpytest("suites/demo-suite/cases.jsonl")
    result.assert_outcomes(errors=1)
    assert "[digest_mismatch]" in result.stdout.str()


def test_cases_made_with_the_same_fields_share_one_fields_set(demo: pytest.Pytester) -> None:
    # pydantic keeps a set of the field names each record was made with (728 bytes for
    # a case made with five): collection gives equal ones one object, cases unchanged.
    write_demo_suite(demo.path, questions={f"c{index}": f"{index}+1" for index in range(6)})
    items, _ = demo.inline_genitems("-p", "no:cacheprovider")
    cases = [item.case for item in items if hasattr(item, "case")]
    assert len(cases) == 6
    assert len({id(case.model_fields_set) for case in cases}) == 1
    first, second = cases[0], cases[1]
    assert first.model_fields_set == {"suite_id", "case_id", "file", "line", "labels"}
    # The record reads, compares and copies as one made alone does.
    alone = type(first)(**first.model_dump(exclude_unset=True))
    assert alone == first
    assert alone.model_dump(exclude_unset=True) == first.model_dump(exclude_unset=True)
    titled = first.model_copy(update={"title": "a title"})
    assert "title" in titled.model_fields_set
    assert "title" not in second.model_fields_set
    assert "title" not in first.model_dump(exclude_unset=True)
