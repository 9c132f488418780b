"""Episode artefacts of a chat-model run of the operations world, through pytest.

The scripted endpoint answers every turn with a WAIT (the episodes run to their
horizon on fallbacks), reporting token usage, so every case is a model run:
its artefact is bound to its execution ledger. The same run serially and under
``-n 2`` writes byte-identical artefacts, named with their digests in the JSON
report, and each holds to its ledger under ``agentbench artifact audit``; run
without ledgers, each case's artefact is refused by name. Under
``--agentbench-isolate`` the model run's artefacts, and the reference agent's
unbound ones, are the bytes an in-process run writes: the serial model run is the
isolated one, the run under ``-n 2`` writes in pytest's processes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

# Imported here, before any in-process session: pytester drops the modules a session
# imported once it ends, so every session would import the world and its packs again.
import pytest_agentbench.worlds.operations.domains.commerce_return_refund.pack
import pytest_agentbench.worlds.operations.domains.lettings_maintenance.pack
import pytest_agentbench.worlds.operations.world  # noqa: F401
from pytest_agentbench.cli.main import main
from tests.llm_server import ScriptedLLM, answer
from tests.reports import assert_valid_report

SUITE = "operations-maintenance-v1"
GOLDENS = Path(__file__).resolve().parents[1] / "snapshots"
CHAT = "pytest_agentbench.agents.chat:ChatAgent"
REFERENCE = "pytest_agentbench.worlds.operations.agents:Reference"
WAIT = {"outcome": "WAIT", "reason": "until something happens", "fallback_after_minutes": 4320}
PRICING = {
    "scheme": "agentbench-pricing/1",
    "currency": "USD",
    "models": {"scripted-model": {"input_per_token": "0.0000025", "output_per_token": "0.00001"}},
}


class WaitingModel(ScriptedLLM):
    def message(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The assistant message answering the conversation so far: WAIT, at once."""
        return answer(json.dumps(WAIT))

    def reply(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        turns = len(body["messages"])
        message = self.message(body["messages"])
        completion = {
            "id": "chatcmpl-wait",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": 100 + turns,
                "completion_tokens": 9,
                "total_tokens": 109 + turns,
            },
        }
        return 200, json.dumps(completion), {}


def run(
    pytester: pytest.Pytester,
    tag: str,
    *args: str,
    ledger: bool = True,
    adapter: str = CHAT,
    goldens: bool = False,
) -> dict[str, Any]:
    """One session over the suite's cases; with ``goldens``, each output checked against
    the project's pinned golden, every one the same (the session passes)."""
    report = pytester.path / f"{tag}.json"
    ledger_args = [f"--agentbench-ledger={pytester.path / f'ledger-{tag}'}"] if ledger else []
    golden_args = ["-o", "agentbench_snapshot=true", "-o", f"agentbench_snapshot_dir={GOLDENS}"]
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--agentbench-suite",
        SUITE,
        f"--agentbench-adapter={adapter}",
        "-m",
        "not agentbench_control",
        f"--agentbench-report={report}",
        *ledger_args,
        *(golden_args if goldens else []),
        *args,
    )
    if goldens:
        assert result.ret == 0, result.stdout.str()[-3000:]
    document: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    assert_valid_report(document)
    return document


def artefacts(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file()
    }


@pytest.mark.inner_snapshots
def test_a_model_run_writes_the_same_bound_artefacts_serially_under_xdist_and_isolated(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Five sessions in one project (serial and isolated, xdist in-process, unledgered,
    # in-process reference with goldens, isolated reference on one variant); the xdist workers
    # and the isolated children each start an interpreter. The serial run is the isolated
    # one: its bytes equal to the in-process xdist run's show that neither isolation nor
    # xdist changes them, at one session fewer than a serial run of each kind.
    # The per-call bound covers the request too (the world's tool schemas): the answer
    # is capped at what the request leaves of it.
    pytester.makeini(
        "[pytest]\n"
        "agentbench_llm_model = scripted-model\n"
        "agentbench_llm_timeout = 5\n"
        "agentbench_llm_retry_backoff = 0\n"
        "agentbench_llm_max_tokens_per_call = 16000\n"
        "agentbench_pricing = pricing.json\n"
        "agentbench_artifacts = artifacts-serial\n"
    )
    (pytester.path / "pricing.json").write_text(json.dumps(PRICING), encoding="utf-8")
    with WaitingModel().serving() as base_url:
        monkeypatch.setenv("AGENTBENCH_LLM_BASE_URL", base_url)
        # The folder from the ini key.
        serial = run(pytester, "serial", "-n", "0", "--agentbench-isolate")
        spread = run(
            pytester,
            "spread",
            "-n",
            "2",
            f"--agentbench-artifacts={pytester.path / 'artifacts-spread'}",
        )
        unledgered = run(
            pytester,
            "unledgered",
            "-n",
            "0",
            f"--agentbench-artifacts={pytester.path / 'artifacts-unledgered'}",
            "-m",
            "",
            ledger=False,
        )
        # In pytest's process, the reference on every variant, each output checked against
        # the suite's pinned goldens (tests/html/test_plugin_html.py leaves them here);
        # isolated, one variant: the reference's unbound artefact does not depend on which.
        run(
            pytester,
            "reference",
            "-n",
            "0",
            f"--agentbench-artifacts={pytester.path / 'artifacts-reference'}",
            adapter=REFERENCE,
            goldens=True,
        )
        run(
            pytester,
            "reference-isolated",
            "-n",
            "0",
            "--agentbench-isolate",
            f"--agentbench-artifacts={pytester.path / 'artifacts-reference-isolated'}",
            "-k",
            "V2",
            adapter=REFERENCE,
        )
    # Without its ledger a model run's artefact is refused case by case, at write
    # time: each case is a named harness error (its model calls kept), and the
    # session goes on to run and count the rest, here the negative controls.
    suite = unledgered["suites"][0]
    assert suite["counts"]["error"] == 3 == suite["failure_classes"]["harness_error"]
    for case in suite["cases"]:
        assert case["result"]["failure_class"] == "harness_error"
        assert case["result"]["failure_reason"].startswith("[artifact_ledger_missing] ")
        assert case["result"]["model_calls"]["request_digests"]
        assert case["result"]["artifact"] is None
    assert len(suite["controls"]) == 11
    assert all(control["passed"] for control in suite["controls"])
    assert artefacts(pytester.path / "artifacts-unledgered") == {}
    written = artefacts(pytester.path / "artifacts-serial")
    assert sorted(written) == [
        f"{SUITE}/V1.artifact.json",
        f"{SUITE}/V2.artifact.json",
        f"{SUITE}/V3.artifact.json",
    ]
    # Isolated, the model calls come back to the case's record: the same bound bytes as
    # pytest's own processes write under xdist.
    assert serial["adapter"]["description"].endswith("in an isolated process")
    assert not spread["adapter"]["description"].endswith("in an isolated process")
    assert written == artefacts(pytester.path / "artifacts-spread"), "byte-identical"
    # And the reference agent, which reaches no provider, writes the same unbound
    # artefact in the adapter's own process as in pytest's.
    deterministic = artefacts(pytester.path / "artifacts-reference")
    assert sorted(deterministic) == sorted(written)
    v2_only = {f"{SUITE}/V2.artifact.json": deterministic[f"{SUITE}/V2.artifact.json"]}
    assert artefacts(pytester.path / "artifacts-reference-isolated") == v2_only
    for data in deterministic.values():
        assert json.loads(data)["provider_execution"] is None
    for document in (serial, spread):
        named = {
            case["result"]["case_id"]: case["result"]["artifact"]
            for case in document["suites"][0]["cases"]
        }
        assert named == {
            case_id: {
                "file": f"{SUITE}/{case_id}.artifact.json",
                "digest_sha256": hashlib.sha256(
                    written[f"{SUITE}/{case_id}.artifact.json"]
                ).hexdigest(),
            }
            for case_id in ("V1", "V2", "V3")
        }
    v2 = json.loads(written[f"{SUITE}/V2.artifact.json"])
    binding = v2["provider_execution"]
    assert binding["model"] == "scripted-model"
    assert binding["decision_call_index"] == list(range(len(v2["decisions"])))
    assert binding["provider_calls"] == len(v2["decisions"])
    artefact = pytester.path / "artifacts-spread" / SUITE / "V2.artifact.json"
    ledger = pytester.path / "ledger-serial" / SUITE / "V2.ndjson"
    capsys.readouterr()  # the pytest sessions' own output
    assert main(["artifact", "audit", str(artefact), str(ledger), "--json"]) == 0
    audited = json.loads(capsys.readouterr().out)
    assert audited["execution_ledger_digest_sha256"] == binding["execution_ledger_digest_sha256"]
    assert main(["artifact", "replay", str(artefact), "--suite", SUITE]) == 0
    assert "at 0 provider calls" in capsys.readouterr().out
