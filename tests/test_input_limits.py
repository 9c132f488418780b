"""The readers' bounds inside a pytest run: ini settings, refusals by name.

A refusal is made, and named, by the collecting process: serially here, the same code in an
xdist worker (tests/test_plugin_idle.py shows the controller turned on by a refused suite)."""

from __future__ import annotations

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.sdk.canonical import artifact_set_digest, pretty_json
from tests.demo_world import write_demo_suite


def _billion_laughs(levels: int, width: int) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def _deep_case_suite(demo: pytest.Pytester) -> None:
    folder = write_demo_suite(demo.path, "deep-suite")
    cases = folder / "cases.jsonl"
    deep = '{"id": "c4", "question": "1+1", "labels": ' + "[" * 30 + "]" * 30 + "}\n"
    cases.write_text(cases.read_text() + deep)
    (folder / "manifest.json").write_text(
        pretty_json(
            {"artifact_set_digest": artifact_set_digest({"cases.jsonl": cases.read_bytes()})}
        )
    )


def test_oversized_deep_and_alias_bombed_suites_are_refused_by_name(
    demo: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    write_demo_suite(demo.path)
    write_demo_suite(demo.path, "bomb-suite", extra_suite_yaml=_billion_laughs(9, 9))
    write_demo_suite(demo.path, "big-suite", questions={f"q{i}": f"{i}+1" for i in range(200)})
    _deep_case_suite(demo)
    demo.makeini("[pytest]\nagentbench_max_input_bytes = 4000\nagentbench_max_input_depth = 20\n")
    result = demo.runpytest("-p", "no:cacheprovider", "-m", "not agentbench_control")
    result.assert_outcomes(passed=3, errors=3)
    result.stdout.fnmatch_lines_random(
        [
            "*[[]input_too_large[]] suites/big-suite/cases.jsonl: the file exceeds the limit "
            "of 4000 bytes (agentbench_max_input_bytes)",
            "*[[]yaml_alias_limit[]] suites/bomb-suite/suite.yaml:10: aliases expand past "
            "the limit of 10000 (agentbench_max_yaml_aliases)",
            "*[[]input_too_deep[]] suites/deep-suite/cases.jsonl:4: nested deeper than 20 "
            "levels (agentbench_max_input_depth)",
        ]
    )
    # The agentbench command applies the defaults: the bomb is refused there too.
    capsys.readouterr()
    assert main(["evaluate", "suites/bomb-suite", "--agent", "reference"]) != 0
    said = capsys.readouterr()
    assert "[yaml_alias_limit] suites/bomb-suite/suite.yaml:10: " in said.out + said.err


@pytest.mark.parametrize(
    "setting",
    ["agentbench_max_input_bytes", "agentbench_max_input_depth", "agentbench_max_yaml_aliases"],
)
def test_an_input_limit_that_is_not_a_positive_whole_number_is_a_usage_error(
    demo: pytest.Pytester, setting: str
) -> None:
    write_demo_suite(demo.path)
    for value in ("0", "-3", "lots", "1.5"):
        demo.makeini(f"[pytest]\n{setting} = {value}\n")
        result = demo.runpytest("-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*[[]invalid_input_limit[]] {setting}: *"])
