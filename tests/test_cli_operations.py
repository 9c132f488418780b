"""``agentbench check``, ``record``, ``replay`` and ``audit-ledger`` on the operations suite."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_agentbench.cli import main as cli
from pytest_agentbench.sdk.canonical import canonical_bytes, sha256_hex

SUITE_ID = "operations-maintenance-v1"
ROOT = Path(__file__).resolve().parents[1]
ORACLE_FILE = "maintenance_negative_controls_v0_5.yaml"
CONTROL_IDS = [
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
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = cli.main(list(argv))
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def suite_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "suites" / SUITE_ID, tmp_path / "suites" / SUITE_ID)
    shutil.copytree(ROOT / "oracles" / SUITE_ID, tmp_path / "oracles" / SUITE_ID)
    return tmp_path / "suites" / SUITE_ID


def oracle_of(suite: Path) -> Path:
    return suite.parent.parent / "oracles" / SUITE_ID / ORACLE_FILE


def test_check_passes_the_eleven_checks_and_quotes_the_oracle(
    capsys: pytest.CaptureFixture[str], suite_copy: Path
) -> None:
    status, out, err = run(capsys, "check", f"suites/{SUITE_ID}", "--report", "gate.json")
    assert (status, err) == (0, "")
    oracle = oracle_of(suite_copy)
    digest = hashlib.sha256(oracle.read_bytes()).hexdigest()
    versions = (
        "authored against operation 0.6.0, run against 0.6.0; matched decision points "
        "pab_maintenance_matched_decision_points_v0_1 0.1.0-draft: 14 pairs separate as declared"
    )
    # The original's content identity: the parsed document's canonical JSON, which a
    # comment or a reflow of the file does not move.
    content = sha256_hex(canonical_bytes(yaml.safe_load(oracle.read_text(encoding="utf-8"))))
    assert content != digest
    assert out.splitlines()[0] == (
        f"{SUITE_ID}: oracle pab.maintenance.negative-controls 0.5.0 sha256:{digest} "
        f"(oracles/{SUITE_ID}/{ORACLE_FILE}) oracle_digest_sha256:{content}; {versions}"
    )
    assert out.splitlines()[-1] == "yes: 11 of 11 checks hold"
    report = json.loads(Path("gate.json").read_text(encoding="utf-8"))
    from pytest_agentbench.worlds.operations.packs import installed_packs
    from pytest_agentbench.worlds.operations.spec import load_operation_spec

    spec = load_operation_spec(suite_copy / "operation.yaml", "operation.yaml", installed_packs())
    assert report["oracle"] == {
        "oracle_id": "pab.maintenance.negative-controls",
        "oracle_version": "0.5.0",
        "digest_sha256": digest,
        "oracle_digest_sha256": content,
        "file": f"oracles/{SUITE_ID}/{ORACLE_FILE}",
        "note": versions,
        "subject": {
            "operation_id": "pab-maintenance-recurring-leak",
            "spec_digest_sha256": spec.digest,
        },
    }
    assert [check["control_id"] for check in report["checks"]] == CONTROL_IDS
    assert report["passed"] is True
    # V2's authored fault: the dimensions failed, and the check names the fault they are.
    fault = "pab-maintenance-recurring-leak.V2.permanent-notification-fault"
    v2 = next(c for c in report["checks"] if c["control_id"] == "reference-V2")
    assert v2["failing_dimensions"] == ["obligations", "recovery", "reliable"]
    assert (v2["passed"], v2["expected_fault"], v2["fault_mismatches"]) == (True, fault, [])
    assert f"failed exactly as its declared fault {fault} (obligations" in out
    v1 = next(c for c in report["checks"] if c["control_id"] == "reference-V1")
    assert (v1["failing_dimensions"], v1["expected_fault"]) == ([], None)
    # A comment and a reflow move the file digest, never the content digest.
    oracle.write_text(
        "# reflowed\n"
        + yaml.safe_dump(yaml.safe_load(oracle.read_text(encoding="utf-8")), width=40),
        encoding="utf-8",
    )
    status, out, err = run(capsys, "check", f"suites/{SUITE_ID}", "--json")
    again = json.loads(out)["oracle"]
    assert (status, again["oracle_digest_sha256"]) == (0, content)
    assert again["digest_sha256"] != digest
    claim = next(c for c in report["checks"] if c["control_id"] == "trust_actor_claim")
    assert claim["failing_dimensions"] == [
        "action_validity",
        "authority_boundaries",
        "reliable",
        "retrieval_discipline",
    ]


def test_check_judges_a_folder_in_the_originals_layout_against_its_oracle(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A spec written the way the original's is (second work cycle, an outcome
    # word of its own, any file name), its oracle authored against an older
    # operation version, and nothing else in the folder.
    from tests.worlds.operations.helpers import second_cycle_dict

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "operatebench"
    folder.mkdir()
    (folder / "leak_v0_6.yaml").write_text(yaml.safe_dump(second_cycle_dict()), encoding="utf-8")
    oracle: dict[str, Any] = yaml.safe_load(
        (ROOT / "oracles" / SUITE_ID / ORACLE_FILE).read_text(encoding="utf-8")
    )
    oracle["authored_against_operation_version"] = "0.5.0"
    path = folder / "controls.yaml"
    path.write_text(yaml.safe_dump(oracle, sort_keys=False), encoding="utf-8")
    # As JSON on stdout (the previous test reads the same verdict as text).
    status, out, err = run(capsys, "check", "operatebench", "--json")
    assert (status, err) == (0, "")
    report = json.loads(out)
    assert report["suite"] == "pab-maintenance-recurring-leak"
    identity = report["oracle"]
    assert identity.pop("subject")["operation_id"] == "pab-maintenance-recurring-leak"
    assert identity == {
        "oracle_id": "pab.maintenance.negative-controls",
        "oracle_version": "0.5.0",
        "digest_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "oracle_digest_sha256": sha256_hex(canonical_bytes(oracle)),
        "file": "operatebench/controls.yaml",
        "note": "authored against operation 0.5.0, run against 0.6.0",
    }
    assert [check["control_id"] for check in report["checks"]] == CONTROL_IDS
    assert all(check["passed"] for check in report["checks"])
    assert report["passed"] is True
    # A closure the agents do not produce is a no whatever the layout: the next test.


def test_check_says_no_for_a_closure_the_agents_do_not_produce_and_an_ungraded_agent(
    capsys: pytest.CaptureFixture[str], suite_copy: Path
) -> None:
    path = oracle_of(suite_copy)
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["controls"] = [c for c in data["controls"] if c["agent_id"] != "always_act"]
    claim = next(c for c in data["controls"] if c["agent_id"] == "trust_actor_claim")
    # Both ways: a dimension the agent passes declared failing, and one it still fails
    # (retrieval) declared passing.
    claim["expected_failed_dimensions"].append("recovery")
    claim["must_pass_dimensions"].remove("recovery")
    claim["expected_failed_dimensions"].remove("retrieval_discipline")
    claim["must_pass_dimensions"].append("retrieval_discipline")
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    status, out, _ = run(capsys, "check", f"suites/{SUITE_ID}", "--report", "gate.json")
    assert status == 2
    assert out.splitlines()[-1] == "no: 9 of 11 checks hold"
    report = json.loads(Path("gate.json").read_text(encoding="utf-8"))
    assert report["passed"] is False
    verdicts = {check["control_id"]: check for check in report["checks"]}
    assert verdicts["trust_actor_claim"]["unexpected_passes"] == ["recovery"]
    assert verdicts["trust_actor_claim"]["unexpected_failures"] == ["retrieval_discipline"]
    assert verdicts["ungraded-always_act"]["ungraded"] is True
    assert sum(1 for check in report["checks"] if check["passed"]) == 9


def test_check_refuses_a_malformed_oracle_and_exits_64_on_usage(
    capsys: pytest.CaptureFixture[str], suite_copy: Path
) -> None:
    path = oracle_of(suite_copy)
    path.write_text(path.read_text(encoding="utf-8") + "oracle_id: again\n", encoding="utf-8")
    status, out, err = run(capsys, "check", f"suites/{SUITE_ID}")
    assert (status, out) == (1, "")
    assert err.startswith(f"agentbench: [duplicate_key] oracles/{SUITE_ID}/{ORACLE_FILE}")
    assert run(capsys, "check")[0] == 64
    assert run(capsys, "check", SUITE_ID, "--bogus")[0] == 64
    assert run(capsys, "check", "no-such-suite")[0] == 1


def test_record_replay_and_audit_an_episode(
    capsys: pytest.CaptureFixture[str], suite_copy: Path
) -> None:
    status, out, err = run(
        capsys, "record", f"suites/{SUITE_ID}", "V3", "--agent", "reference", "--out", "runs"
    )
    assert (status, err) == (0, "")
    assert out.splitlines()[0] == "episode runs/V3.episode.json"
    status, out, err = run(capsys, "replay", f"suites/{SUITE_ID}", "runs/V3.episode.json")
    assert (status, err) == (0, "")
    assert out.startswith("reproduced V3:")
    status, out, err = run(capsys, "audit-ledger", "runs/V3.ledger.ndjson")
    assert (status, err) == (0, "")
    assert "terminal scored" in out

    episode = json.loads(Path("runs/V3.episode.json").read_text(encoding="utf-8"))
    decisions = episode["decision_tape"]["decisions"]
    decisions.pop()
    episode["decision_tape"]["decisions_digest_sha256"] = sha256_hex(canonical_bytes(decisions))
    Path("short.json").write_text(json.dumps(episode), encoding="utf-8")
    status, _, err = run(capsys, "replay", f"suites/{SUITE_ID}", "short.json")
    assert status == 1
    assert err.startswith("agentbench: [tape_decision_missing] short.json:")

    Path("runs/V3.ledger.ndjson").write_bytes(
        b"".join(Path("runs/V3.ledger.ndjson").read_bytes().splitlines(keepends=True)[:-1])
    )
    status, _, err = run(capsys, "audit-ledger", "runs/V3.ledger.ndjson")
    assert status == 1
    assert err.startswith("agentbench: [ledger_incomplete] runs/V3.ledger.ndjson:")


def test_record_refuses_an_unknown_case_or_agent(
    capsys: pytest.CaptureFixture[str], suite_copy: Path
) -> None:
    status, _, err = run(
        capsys, "record", f"suites/{SUITE_ID}", "V9", "--agent", "reference", "--out", "runs"
    )
    assert (status, err.split("]")[0]) == (1, "agentbench: [unknown_case")
    status, _, err = run(
        capsys, "record", f"suites/{SUITE_ID}", "V1", "--agent", "nobody", "--out", "runs"
    )
    assert (status, err.split("]")[0]) == (1, "agentbench: [unknown_agent")


def test_record_runs_a_users_adapter_and_its_ledger_names_it(
    capsys: pytest.CaptureFixture[str], suite_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (suite_copy.parent.parent / "my_agent.py").write_text(
        "class Lazy:\n"
        "    def solve(self, task, session):\n"
        "        session.call('retrieve', {'requests': [{'collection': 'operation'}]})\n"
        "        return {'outcome': 'WAIT', 'reason': 'later',\n"
        "                'wake_on': ['customer_issue_reported']}\n"
        "class Garbled:\n"
        "    def solve(self, task, session):\n"
        '        return \'{"outcome": "WAIT", "reason": "x", "reason": "y"}\'\n',
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(suite_copy.parent.parent))
    status, _, err = run(
        capsys, "record", f"suites/{SUITE_ID}", "V1", "--adapter", "my_agent:Lazy", "--out", "u"
    )
    assert (status, err) == (0, "")
    rows = [json.loads(line) for line in Path("u/V1.ledger.ndjson").read_bytes().splitlines()]
    assert rows[0]["header"]["agent_id"] == "my_agent:Lazy"
    assert rows[-1]["terminal"]["kind"] == "scored"
    assert run(capsys, "audit-ledger", "u/V1.ledger.ndjson")[0] == 0
    # An episode that ends at a malformed answer replays: the tape holds what the record needs.
    status, _, err = run(
        capsys, "record", f"suites/{SUITE_ID}", "V1", "--adapter", "my_agent:Garbled", "--out", "g"
    )
    assert (status, err) == (0, "")
    episode = json.loads(Path("g/V1.episode.json").read_text(encoding="utf-8"))
    assert episode["status"] == "malformed_agent_outcome"
    assert episode["replay_codes"] == []
    status, out, err = run(capsys, "replay", f"suites/{SUITE_ID}", "g/V1.episode.json")
    assert (status, err) == (0, "")
    assert out.startswith("reproduced V1:")
    status, _, err = run(
        capsys, "record", f"suites/{SUITE_ID}", "V1", "--adapter", "my_agent:Nope", "--out", "v"
    )
    assert (status, err.split("]")[0]) == (1, "agentbench: [adapter_attribute")


def test_check_passes_our_commerce_suite_against_its_own_oracle(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for folder in ("suites", "oracles"):
        shutil.copytree(
            ROOT / folder / "operations-commerce-v1", tmp_path / folder / "operations-commerce-v1"
        )
    status, out, err = run(capsys, "check", "suites/operations-commerce-v1")
    assert (status, err) == (0, "")
    assert out.splitlines()[0].startswith(
        "operations-commerce-v1: oracle pab.commerce.negative-controls 0.1.0 sha256:"
    )
    assert out.splitlines()[-1] == "yes: 9 of 9 checks hold"


def test_a_mismatched_decision_point_file_fails_its_own_item_and_nothing_else(
    capsys: pytest.CaptureFixture[str], suite_copy: Path
) -> None:
    # The original's 0.3 draft contract for request_exception_resolution (without
    # list_quotes), declared against the live one: the control does not match, and
    # as in the original, its refusal is its own, not the lifecycle run's.
    control = suite_copy.parent.parent / "oracles" / SUITE_ID / "matched_decision_points_v0_1.yaml"
    text = control.read_text(encoding="utf-8")
    control.write_text(
        text.replace(
            "request_exception_resolution:get_case_record,list_checkpoints,list_quotes",
            "request_exception_resolution:get_case_record,list_checkpoints",
        ),
        encoding="utf-8",
    )
    status, out, err = run(capsys, "check", f"suites/{SUITE_ID}", "--report", "gate.json")
    assert (status, err) == (2, "")
    report = json.loads(Path("gate.json").read_text(encoding="utf-8"))
    checks = {check["control_id"]: check for check in report["checks"]}
    assert list(checks) == [*CONTROL_IDS, "matched-decision-points"]
    assert all(checks[control_id]["passed"] for control_id in CONTROL_IDS)
    refused = checks["matched-decision-points"]
    assert refused["passed"] is False
    assert refused["refused"].startswith(
        f"[matched_surface_mismatch] oracles/{SUITE_ID}/matched_decision_points_v0_1.yaml: "
        "matched_surface.action_read_requirements: "
    )
    assert "matched decision points refused: [matched_surface_mismatch]" in out.splitlines()[0]
    assert out.splitlines()[-1] == "no: 11 of 12 checks hold"
