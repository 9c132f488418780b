"""The world bound to the core: recognise, both plug points, lifecycles, pytest runs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.worlds.retrieval.agent import FixtureAgent, gno_cues
from pytest_agentbench.worlds.retrieval.backends import LexicalBackend, TaskScope
from pytest_agentbench.worlds.retrieval.harness import Harness
from pytest_agentbench.worlds.retrieval.world import WORLD
from tests.html.test_plugin_html import assert_page_drawn_from
from tests.worlds.retrieval.conftest import Small
from tests.worlds.retrieval.helpers import write_small

SUITE_YAML = "id: small-retrieval\nversion: '1'\nworld: retrieval\ntitle: Small\noracle: oracles\n"


def test_recognise_claims_the_original_layout_only(tmp_path: Path) -> None:
    root = write_small(tmp_path / "My Fixture")
    config = WORLD.recognise(root)
    assert config is not None
    assert (config.world, config.oracle, config.id, config.version) == (
        "retrieval",
        "oracles",
        "my-fixture",
        "test-1",
    )
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["schemaVersion"] = "2.0"
    (root / "manifest.json").write_text(json.dumps(manifest))
    assert WORLD.recognise(root) is None
    (root / "manifest.json").write_text("{not json")
    assert WORLD.recognise(root) is None
    other = write_small(tmp_path / "no-oracles")
    shutil.rmtree(other / "oracles")
    assert WORLD.recognise(other) is None
    assert WORLD.recognise(tmp_path / "missing") is None


class Flaky(LexicalBackend):
    """Fails every call after the first ``ok`` ones."""

    adapter_id = "flaky"

    def __init__(self, ok: int) -> None:
        super().__init__()
        self.ok = ok

    def call(self, tool: str, arguments: Mapping[str, Any], scope: TaskScope) -> dict[str, Any]:
        self.ok -= 1
        if self.ok < 0:
            raise RuntimeError("backend crashed")
        return super().call(tool, arguments, scope)


def test_a_failed_warm_call_corrupts_the_rest_of_the_warm_cohort_only(small: Small) -> None:
    harness = Harness(small.public, gno_cues())
    backend = Flaky(ok=1)  # the readiness probe uses it up
    first = harness.run("t0000001", "warm", backend, FixtureAgent())
    assert first.failure == ("product_error", "tool_call_failed")
    second = harness.run("t0000002", "warm", backend, FixtureAgent())
    assert second.failure == ("harness_error", "warm_cohort_corrupted")
    assert second.canonical["calls"] == []
    assert second.canonical["fingerprints"]["prompt"] == "0" * 64
    assert second.canonical["fingerprints"]["model"] == "0" * 64
    cold = harness.run("t0000002", "cold", backend, FixtureAgent())
    assert cold.failure == ("product_error", "tool_call_failed")


def test_an_agent_error_does_not_corrupt_the_warm_cohort(small: Small) -> None:
    harness = Harness(small.public, gno_cues())
    backend = LexicalBackend()

    class Abstains(FixtureAgent):
        def next_step(self, task: Any, history: Any, cues: Any = None) -> Any:
            return {"kind": "final", "envelope": "not json"}

    assert harness.run("t0000001", "warm", backend, Abstains()).failure == (
        "agent_error",
        "malformed_agent_json",
    )
    assert harness.run("t0000002", "warm", backend, FixtureAgent()).failure == ("none", None)


def test_cold_and_warm_share_one_prepared_index(small: Small) -> None:
    harness = Harness(small.public, gno_cues())
    backend = LexicalBackend()
    cold = harness.run("t0000001", "cold", backend, FixtureAgent()).canonical
    warm = harness.run("t0000001", "warm", backend, FixtureAgent()).canonical
    assert cold["fingerprints"] == warm["fingerprints"]
    assert {**cold, "lifecycle": "warm"} == warm


OUTER = '''
import json

class Outer:
    """An outer agent: reads one line by hand and answers as JSON text."""
    agent_id = "outer-test"

    def solve(self, task, session):
        names = sorted(spec.name for spec in session.tools)
        assert names == sorted(task["allowedTools"]), names
        assert session.openai_tools()[0]["type"] == "function"
        hits = session.call("search", {"query": "identifier codename 发布代号"})
        claims, gaps = [], []
        for claim in task["claims"]:
            gaps.append({"claimKey": claim["claimKey"], "reason": "missing_evidence"})
        if task["claims"][0]["claimKey"] == "errorIdentifier":
            line = next(e for e in hits["evidence"] if "ERR-GW-12" in e["text"])
            cite = {k: line[k] for k in ("uri", "sourceHash", "startLine", "endLine",
                    "spanHash", "sourceHashProvenance", "spanHashProvenance")}
            claims = [{"claimKey": "errorIdentifier",
                       "value": {"type": "identifier", "value": "ERR-GW-12"},
                       "citations": [cite]}]
            gaps = []
        return json.dumps({"schemaVersion": "1.0", "claims": claims, "gaps": gaps,
                           "abstained": not claims,
                           "stopReason": "complete" if claims else "abstained"})


class Raises:
    def solve(self, task, session):
        raise RuntimeError("model unavailable")


class BadArguments:
    def solve(self, task, session):
        try:
            session.call("search", {"query": "x", "limit": 0})
        except Exception:
            pass
        return session.call("search", {"query": "x"})
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    root = write_small(pytester.path / "suites" / "small")
    (root / SUITE_FILE).write_text(SUITE_YAML)
    pytester.makepyfile(outer=OUTER)
    pytester.syspathinsert()
    return pytester


def _report(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "run.json"
    # A published fixture has no controls manifest: its negative agents would be ungraded.
    result = pytester.runpytest(
        "suites", f"--agentbench-report={path}", "-m", "not agentbench_control", *args
    )
    (suite,) = json.loads(path.read_text())["suites"]
    return result, suite


def _assert_receipts_match_an_in_process_run(suite: dict[str, Any], small: Small) -> None:
    assert suite["counts"]["passed"] == 6
    metrics = {m["name"]: m for m in suite["metrics"]}
    assert (metrics["success_rate"]["value"], metrics["success_rate"]["support"]) == (1.0, 6)
    assert metrics["success_rate_cold"]["support"] == 3
    assert metrics["correct_abstention_rate"]["support"] == 2
    harness = Harness(small.public, gno_cues())
    backend = LexicalBackend()
    expected = {
        f"{task}-{life}": harness.run(task, life, backend, FixtureAgent()).session_receipt
        for life in ("cold", "warm")
        for task in small.public.tasks
    }
    received = {entry["result"]["case_id"]: entry["result"]["receipt"] for entry in suite["cases"]}
    assert {k: v["digest"] for k, v in received.items()} == {
        k: v["digest"] for k, v in expected.items() if v is not None
    }
    assert received["t0000001-cold"]["canonical"]["context"]["agentId"] == "fixture-agent-v1"


def test_the_fixture_agent_passes_and_receipts_match_an_in_process_run(
    project: pytest.Pytester, small: Small
) -> None:
    """Serially; on two workers in the run of the packaged suite below."""
    result, suite = _report(project)
    result.assert_outcomes(passed=6)
    _assert_receipts_match_an_in_process_run(suite, small)


ADAPTER_CONFTEST = """
import pytest
from {module} import {name}


@pytest.fixture
def agentbench_adapter():
    return {name}()
"""
"""A suite folder's own adapter: a conftest there applies to that suite's cases alone."""

ADAPTERS = {
    "bundle": ("pytest_agentbench.worlds.retrieval.backends", "CapsuleBackend"),
    "outer": ("outer", "Outer"),
    "raises": ("outer", "Raises"),
    "bad-arguments": ("outer", "BadArguments"),
}
"""Suite id -> the adapter its folder's conftest gives it."""


def test_other_adapters_side_by_side(pytester: pytest.Pytester) -> None:
    """One session, the small fixture once per adapter (each suite its own):
    - bundle: the fixture agent passes over the bundle backend;
    - outer: an outer agent runs through a tool session;
    - raises / bad-arguments: faulty outer agents fail with the format's code."""
    for suite_id, (module, name) in ADAPTERS.items():
        # The conftest beside the fixture folder: the folder itself holds its files alone.
        folder = pytester.path / "suites" / suite_id
        root = write_small(folder / "small")
        (root / SUITE_FILE).write_text(SUITE_YAML.replace("small-retrieval", suite_id))
        (folder / "conftest.py").write_text(ADAPTER_CONFTEST.format(module=module, name=name))
    pytester.makepyfile(outer=OUTER)
    pytester.syspathinsert()
    path = pytester.path / "run.json"
    result = pytester.runpytest(
        "suites", f"--agentbench-report={path}", "-m", "not agentbench_control"
    )
    result.assert_outcomes(passed=6 + 4, failed=2 + 6 + 6)
    suites = {suite["id"]: suite for suite in json.loads(path.read_text())["suites"]}

    # The fixture agent passes over the bundle backend.
    receipts = [entry["result"]["receipt"]["canonical"] for entry in suites["bundle"]["cases"]]
    assert {e["result"]["outcome"] for e in suites["bundle"]["cases"]} == {"passed"}
    assert {r["context"]["adapterId"] for r in receipts} == {"capsule"}
    assert {r["totals"]["calls"] for r in receipts} == {1}

    # An outer agent runs through a tool session.
    cases = suites["outer"]["cases"]
    failed = {e["result"]["case_id"] for e in cases if e["result"]["outcome"] == "failed"}
    assert failed == {"t0000002-cold", "t0000002-warm"}  # it abstains on an answerable task
    entry = next(e for e in cases if e["result"]["case_id"] == "t0000001-cold")
    receipt = entry["result"]["receipt"]["canonical"]
    assert (receipt["context"]["agentId"], receipt["context"]["adapterId"]) == (
        "outer-test",
        "lexical",
    )
    assert receipt["calls"][0]["arguments"] == {"query": "identifier codename 发布代号"}
    assert receipt["final"]["claims"][0]["value"]["value"] == "ERR-GW-12"

    # Faulty outer agents fail with the format's code (for the core, output that breaks
    # the world's contract is a product error).
    faulty = {
        "raises": ("agent_error", "agent_raised"),
        "bad-arguments": ("product_error", "invalid_agent_action"),
    }
    for suite_id, (failure_class, code) in faulty.items():
        assert len(suites[suite_id]["cases"]) == 6, suite_id
        for entry in suites[suite_id]["cases"]:
            assert entry["result"]["outcome"] == "failed", suite_id
            assert entry["result"]["failure_class"] == failure_class, suite_id
            receipt = entry["result"]["receipt"]["canonical"]
            assert (receipt["failure_class"], receipt["failure_code"]) == (failure_class, code)


def test_a_report_in_the_original_format_scores_as_predictions(
    project: pytest.Pytester, small: Small
) -> None:
    from pytest_agentbench.worlds.retrieval.report import run_matrix

    root = project.path / "suites" / "small"
    public, oracles = small.public, small.oracles
    report = run_matrix(public, oracles, gno_cues(), [LexicalBackend()])
    path = project.path / "report.json"
    path.write_text(json.dumps(report))
    del root
    result = project.runpytest(
        "suites", f"--agentbench-predictions=small-retrieval={path}", "-m", "not agentbench_control"
    )
    result.assert_outcomes(passed=6)


@pytest.mark.inner_snapshots
def test_on_two_workers_the_packaged_suite_with_its_controls_and_the_fixture_agents_receipts(
    project: pytest.Pytester, small: Small
) -> None:
    """One -n 2 session, two suites side by side. The packaged suite with its controls:
    every output is also checked against the project's pinned goldens, and the HTML page
    against the report (for tests/html/test_plugin_html.py, which leaves the suite to this
    run). The small fixture (no controls manifest, so its cases alone; no goldens, which
    fails none of them): receipts made on two workers, cold and warm cohorts split between
    them, match an in-process run's."""
    path, page = project.path / "run.json", project.path / "run.html"
    goldens = Path(__file__).resolve().parents[3] / "snapshots"
    result = project.runpytest(
        "suites",
        "--agentbench-suite",
        "retrieval-fixture-v1",
        "-m",
        "not agentbench_control or retrieval-fixture-v1",
        f"--agentbench-report={path}",
        "-o",
        "agentbench_snapshot=true",
        "-o",
        f"agentbench_snapshot_dir={goldens}",
        f"--agentbench-html={page}",
        "-n",
        "2",
    )
    assert_page_drawn_from(page, path)
    result.assert_outcomes(passed=53 + 6)
    suites = {suite["id"]: suite for suite in json.loads(path.read_text())["suites"]}
    packaged = suites["retrieval-fixture-v1"]
    assert packaged["counts"]["passed"] == 48
    assert [c["passed"] for c in packaged["controls"]] == [True] * 5
    assert not (goldens / "small-retrieval").exists()
    _assert_receipts_match_an_in_process_run(suites["small-retrieval"], small)


@pytest.fixture
def published(pytester: pytest.Pytester) -> Path:
    """A fixture folder as the original project publishes it: no suite.yaml."""
    return write_small(pytester.path / "published")


def test_a_published_fixture_runs_by_path_with_no_suite_yaml(
    pytester: pytest.Pytester, published: Path
) -> None:
    result = pytester.runpytest("published", "-m", "not agentbench_control", "-q")
    result.assert_outcomes(passed=6)
    assert not (published / SUITE_FILE).exists()


def test_the_cli_verifies_and_evaluates_a_published_fixture_by_path(
    published: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_agentbench.cli.main import main

    monkeypatch.chdir(published.parent)
    assert main(["verify", "published"]) == 0
    assert "ok: published" in capsys.readouterr().out
    assert main(["evaluate", "published", "--agent", "reference", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["cases"].values()) == {"passed"}
    # A report in the original's format beside it, re-scored against its oracles.
    from pytest_agentbench.worlds.retrieval import fixture
    from pytest_agentbench.worlds.retrieval.report import run_matrix

    public = fixture.load_public(published, "published")
    oracles = fixture.load_hidden(public, published / "oracles", "published/oracles")
    report = run_matrix(public, oracles, gno_cues(), [LexicalBackend()])
    target = published / "baseline" / "fixture-agent" / "report.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(report))
    assert main(["verify", "published"]) == 0  # baseline/ is not hashed
    capsys.readouterr()
    assert main(["rescore", str(target), "--suite", "published", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == report["scores"]


def _crlf(root: Path) -> None:
    from tests.worlds.retrieval.helpers import rewrite_manifest_hash

    path = root / "corpus" / "t0000001" / "c001" / "gateway.md"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    rewrite_manifest_hash(root, "corpus/t0000001/c001/gateway.md")


def _tampered(root: Path) -> None:
    path = root / "tasks" / "t0000002.json"
    path.write_bytes(path.read_bytes() + b" ")


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_crlf, "[corpus_not_canonical] published/corpus/t0000001/c001/gateway.md"),
        (_tampered, "[fixture_hash_mismatch] published/tasks/t0000002.json: sha256"),
    ],
)
def test_a_broken_published_fixture_is_refused_by_name(
    pytester: pytest.Pytester,
    published: Path,
    *,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tamper: Any,
    message: str,
) -> None:
    from pytest_agentbench.cli.main import main

    tamper(published)
    result = pytester.runpytest("published", "-q")
    assert result.ret != 0
    assert message in result.stdout.str()
    monkeypatch.chdir(published.parent)
    assert main(["verify", "published"]) == 1
    assert message in capsys.readouterr().err


def test_a_leaked_canary_fails_every_case_as_a_harness_error(
    pytester: pytest.Pytester, published: Path
) -> None:
    from tests.worlds.retrieval.helpers import edit_json, rewrite_manifest_hash

    canary = "canary-abstention-0001"
    edit_json(published / "tasks" / "t0000003.json", lambda t: t["brief"].update(goal=canary))
    rewrite_manifest_hash(published, "tasks/t0000003.json")
    result = pytester.runpytest("published", "-m", "not agentbench_control", "-q")
    result.assert_outcomes(failed=6)
    assert "agentbench published: 6 error" in result.stdout.str()
    assert "[leak_canary_visible] published/oracles/t0000003.json" in result.stdout.str()
