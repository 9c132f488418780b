"""Candidates in the original layouts, with no suite.yaml: pytest PATH and every command."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_agentbench.cli import main as cli
from pytest_agentbench.sdk.packaged import packaged_suites
from pytest_agentbench.worlds.evidence_binding import baselines, registration
from pytest_agentbench.worlds.evidence_binding.agents import EvidenceAgent
from pytest_agentbench.worlds.evidence_binding.asteria_reader import read_public
from pytest_agentbench.worlds.evidence_binding.world import WORLD
from tests.worlds.evidence_binding import test_asteria_reader, test_enterprise_reader
from tests.worlds.evidence_binding.candidates import (
    asteria_files,
    authority_suite,
    enterprise_files,
    tree,
    write,
)

LINEAGES = {"asteria": asteria_files, "enterprise": enterprise_files}
PAYLOAD = {"asteria": "public/c08-asteria-public.json", "enterprise": "public/public-input.json"}
ACTIONS = {"asteria": 4, "enterprise": 3}


def test_the_registration_declares_the_markers_the_world_checks() -> None:
    assert registration.WORLD.layout_markers == registration.LAYOUT_MARKERS
    assert WORLD.layout_markers == registration.LAYOUT_MARKERS


def test_pytest_runs_a_published_candidate_of_each_lineage_by_path(
    pytester: pytest.Pytester,
) -> None:
    # One session, a candidate of each lineage side by side. Serially: under xdist a worker
    # recognises a folder by the same code and the controller reports the suite from its
    # items, the same for every world (tests/test_recognise.py).
    for lineage, build in LINEAGES.items():
        write(build(), pytester.path / lineage / "published")
    report = pytester.path / "run.json"
    result = pytester.runpytest(*LINEAGES, f"--agentbench-report={report}", "-v")
    # The original layout has no controls manifest: the cases run, no control items.
    result.assert_outcomes(passed=sum(ACTIONS[lineage] for lineage in LINEAGES))
    suites = {suite["id"]: suite for suite in json.loads(report.read_text())["suites"]}
    assert sorted(suites) == sorted(f"{lineage}-tiny" for lineage in LINEAGES)
    for lineage in LINEAGES:
        result.stdout.fnmatch_lines([f"*{lineage}/published/{PAYLOAD[lineage]}::*"])
        assert suites[f"{lineage}-tiny"]["counts"]["passed"] == ACTIONS[lineage], lineage


def test_the_suite_option_takes_a_candidate_path(pytester: pytest.Pytester) -> None:
    write(enterprise_files(), pytester.path / "somewhere" / "published")
    result = pytester.runpytest("--agentbench-suite", "somewhere/published")
    result.assert_outcomes(passed=3)


def _broken_candidates() -> dict[str, tuple[dict[str, bytes], str]]:
    """Folder name -> (files, the refusal pytest must show for it); each its own benchmark id."""
    ap, ep = PAYLOAD["asteria"], PAYLOAD["enterprise"]

    def a(name: str) -> dict[str, bytes]:
        return asteria_files(benchmark_id=name)

    def e(name: str) -> dict[str, bytes]:
        return enterprise_files(benchmark_id=name)

    tampered_a, tampered_e = a("a-tampered"), e("e-tampered")
    return {
        "a-tampered": (
            {**tampered_a, ap: tampered_a[ap].replace(b'"resource-', b'"resourcE-', 1)},
            "[[]descriptor_mismatch[]] a-tampered/public/manifest.json",
        ),
        "a-noncanonical": (
            {**a("a-noncanonical"), ap: a("a-noncanonical")[ap] + b"\n"},
            f"[[]noncanonical_json[]] a-noncanonical/{ap}",
        ),
        "a-distractor": (
            test_asteria_reader.reseal_asteria(
                a("a-distractor"),
                public=test_asteria_reader._drop_distractor,
                benchmark_id="a-distractor",
            ),
            f"[[]missing_distractor[]] a-distractor/{ap}",
        ),
        "e-tampered": (
            {**tampered_e, ep: tampered_e[ep].replace(b'"resource-', b'"resourcE-', 1)},
            "[[]checksum_mismatch[]] e-tampered/SHA256SUMS: digest differs for " + ep,
        ),
        "e-noncanonical": (
            test_enterprise_reader.resum(
                {**e("e-noncanonical"), ep: e("e-noncanonical")[ep] + b"\n"}
            ),
            f"[[]noncanonical_json[]] e-noncanonical/{ep}",
        ),
        "e-distractor": (
            test_enterprise_reader.reseal_enterprise(
                e("e-distractor"),
                public=test_enterprise_reader._stricter_distractor,
                benchmark_id="e-distractor",
            ),
            f"[[]missing_distractor[]] e-distractor/{ep}",
        ),
    }


def test_pytest_names_each_broken_candidate_and_runs_the_good_one(
    pytester: pytest.Pytester,
) -> None:
    broken = _broken_candidates()
    for name, (files, _) in broken.items():
        write(files, pytester.path / name)
    write(enterprise_files(), pytester.path / "good")
    result = pytester.runpytest(*broken, "good")
    result.assert_outcomes(passed=3, errors=len(broken))
    for _, expected in broken.values():
        result.stdout.fnmatch_lines([f"*{expected}*"])


def _cli_refusals() -> list[object]:
    cases = []
    for lineage, module in (
        ("asteria", test_asteria_reader),
        ("enterprise", test_enterprise_reader),
    ):
        table = module.REFUSED_FILES if lineage == "asteria" else module.REFUSED
        for name, build, code, file in table:
            cases.append(pytest.param((build, code, file), id=f"{lineage}-{name}"))
    return cases


@pytest.mark.parametrize("refusal", _cli_refusals())
def test_verify_names_every_refusal_of_a_candidate_by_path(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    refusal: tuple[Callable[[], dict[str, bytes]], str, str],
) -> None:
    build, code, file = refusal
    files = build()
    write(files, tmp_path / "c")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["verify", "c"]) == 1
    error = capsys.readouterr().err.strip()
    if "public/manifest.json" not in files and "SHA256SUMS" not in files:
        # Without its marker files the folder is no candidate at all.
        assert error.startswith("agentbench: [unknown_suite]")
    else:
        assert error.startswith(f"agentbench: [{code}] {file}"), error


@pytest.mark.parametrize("lineage", list(LINEAGES))
def test_every_command_works_on_a_candidate_by_path(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    lineage: str,
) -> None:
    # Six Asteria actions, so that the evaluator designates a target for every mode.
    write(LINEAGES[lineage](actions=6), tmp_path / "c")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["verify", "c"]) == 0
    assert capsys.readouterr().out.startswith(f"ok: {lineage}-tiny:")
    assert cli.main(["evaluate", "c", "--agent", "missing", "--json"]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    assert sorted(evaluated["cases"].values()).count("failed") == 1
    assert cli.main(["baselines", "c", "-o", "records.json"]) == 0
    records = json.loads((tmp_path / "records.json").read_text())
    assert records["benchmark_id"] == f"{lineage}-tiny"
    assert cli.main(["derive", "c"]) == 1
    assert "[unsupported_command]" in capsys.readouterr().err


def test_validate_and_evaluate_a_submission_of_a_candidate_by_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write(asteria_files(), tmp_path / "c")
    candidate = read_public(tree(root))
    target = candidate.public.actions[0].action_event_id
    submission = baselines.asteria_submission(
        candidate.public,
        candidate.public_input_digest,
        EvidenceAgent("extra", asteria_target=target),
    )
    (tmp_path / "s.json").write_text(submission.model_dump_json())
    monkeypatch.chdir(tmp_path)
    assert cli.main(["validate", "c", "--predictions", "s.json"]) == 0
    capsys.readouterr()
    assert cli.main(["evaluate", "c", "--predictions", "s.json", "--json"]) == 0
    metrics = {m["name"]: m["value"] for m in json.loads(capsys.readouterr().out)["metrics"]}
    assert metrics["extra_evidence_free"] == pytest.approx(3 / 4)
    assert metrics["exact_evidence_match"] == pytest.approx(3 / 4)


def _ambiguous(folder: Path) -> Path:
    """An Enterprise candidate that also holds an authority v1 bundle's two trees."""
    write(enterprise_files(), folder)
    authority = packaged_suites()[authority_suite()]
    for source in authority.rglob("*"):
        if source.is_file() and source.name != "suite.yaml":
            target = folder / "public" / source.relative_to(authority)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    oracle = authority.parent.parent / "oracles" / authority.name
    shutil.copy(oracle / "checksums.json", folder / "evaluator" / "checksums.json")
    return folder


def test_a_folder_two_worlds_claim_is_refused_as_ambiguous(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _ambiguous(pytester.path / "both")
    monkeypatch.chdir(pytester.path)
    assert cli.main(["verify", "both"]) == 1
    error = capsys.readouterr().err
    assert "[ambiguous_layout]" in error
    assert "authority" in error
    assert "evidence-binding" in error
    result = pytester.runpytest("both")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*[[]ambiguous_layout[]]*"])


@pytest.mark.parametrize("lineage", list(LINEAGES))
def test_evaluate_states_the_offline_scope(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    lineage: str,
) -> None:
    write(LINEAGES[lineage](), tmp_path / "c")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["evaluate", "c", "--agent", "reference", "--json"]) == 0
    scope = json.loads(capsys.readouterr().out)["measurement_scope"]
    assert scope["offline_artifacts_only"] is True
    assert ("does_not_prove" in scope) == (lineage == "asteria")
    assert ("limitations" in scope) == (lineage == "enterprise")
    assert cli.main(["evaluate", "c", "--agent", "reference"]) == 0
    assert '"offline_artifacts_only":true' in capsys.readouterr().out


@pytest.mark.parametrize("lineage", list(LINEAGES))
def test_only_this_world_claims_a_c08_candidate(tmp_path: Path, lineage: str) -> None:
    from pytest_agentbench.worlds.authority.world import WORLD as AUTHORITY
    from tests.test_conformance import REGISTRY

    folder = write(LINEAGES[lineage](), tmp_path / "c")
    assert AUTHORITY.recognise(folder) is None
    recognition = REGISTRY.recognise(folder)
    assert recognition is not None
    assert (recognition.config.world, recognition.anchor) == ("evidence-binding", "manifest.json")
