"""The episode artefact (contract 8) and its three readers, each refusal by name.

A model run is stood in for by the reference agent reporting model usage the
way the chat agent does (``drain_usage``): one request per decision, one of
them retried after a fault, one whose answer reported no token counts. Its
ledger is written by the world's ledger agent, and the binding is derived from
that ledger exactly as a pytest run derives it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli.main import main
from pytest_agentbench.run.case_ledger import CaseLedger
from pytest_agentbench.run.episode_artifacts import (
    ArtifactItem,
    artifact_item,
    artifact_path,
    write_episode_artifact,
)
from pytest_agentbench.sdk.canonical import canonical_bytes, canonical_json, sha256_hex
from pytest_agentbench.sdk.contracts import Case, CaseOutcome, CaseResult, FailureClass, Outcome
from pytest_agentbench.sdk.episode_artifacts import EpisodeBinding
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger import (
    Attempt,
    CallPayload,
    HeaderPayload,
    LedgerWriter,
    Tokens,
    UsageReport,
    audit_ledger,
)
from pytest_agentbench.sdk.ledger.binding import bound_calls, derive_provider_execution
from pytest_agentbench.worlds.operations import artifact
from pytest_agentbench.worlds.operations.agents import Reference
from pytest_agentbench.worlds.operations.episode import run_episode
from pytest_agentbench.worlds.operations.execution import LedgerAgent, run_id
from pytest_agentbench.worlds.operations.replay import replay_codes
from tests.worlds.operations.helpers import SUITE, shipped

IN_RATE, OUT_RATE, BOUND = "0.0000025", "0.00001", 1000
PROVIDER = {
    "provider": "openai-compatible",
    "api": "chat.completions",
    "model": "scripted-model",
    "settings_digest_sha256": "a" * 64,
    "max_tokens_per_call": BOUND,
    "pricing_digest_sha256": "b" * 64,
    "input_per_token": IN_RATE,
    "output_per_token": OUT_RATE,
}
RETRIED, UNREPORTED = 1, 2
"""The decision whose request was retried after a fault, and the one that reported no usage."""


class ModelLike(Reference):
    """The reference agent's decisions, with the model usage a chat agent would report."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.pending: UsageReport | None = None

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        answer = super().solve(task, session)
        request = sha256_hex(canonical_bytes({"request": task}))
        attempts: list[Attempt] = []
        if self.calls == RETRIED:
            attempts.append(
                Attempt(
                    attempt_index=1,
                    outcome="fault",
                    fault="http_429",
                    request_digest_sha256=request,
                )
            )
        tokens = None if self.calls == UNREPORTED else Tokens(input=100 + self.calls, output=7)
        attempts.append(
            Attempt(
                attempt_index=len(attempts) + 1,
                outcome="response",
                tokens=tokens,
                request_digest_sha256=request,
            )
        )
        self.pending = UsageReport(request_digest_sha256=request, attempts=tuple(attempts))
        self.calls += 1
        return answer

    def drain_usage(self) -> UsageReport | None:
        report, self.pending = self.pending, None
        return report


@dataclass
class Bundle:
    document: dict[str, Any]
    journal: Path
    folder: Path

    def write(self, document: dict[str, Any], name: str = "edited.artifact.json") -> Path:
        path = self.folder / name
        path.write_text(canonical_json(document) + "\n", encoding="utf-8")
        return path


def record_model_run(folder: Path, scenario: str = "V1") -> Bundle:
    loaded = shipped()
    journal = folder / f"{scenario}.ledger.ndjson"
    header = HeaderPayload(
        execution_run_id=run_id(loaded, scenario, "model"),
        operation_id=loaded.spec.operation_id,
        spec_digest_sha256=loaded.digest,
        scenario_id=scenario,
        agent_id="model",
        engine_version="test",
        provider=PROVIDER,
    )
    writer = LedgerWriter(journal, header)
    record = run_episode(loaded, scenario, LedgerAgent(ModelLike(), writer))
    digest = writer.finish("scored")
    calls = writer.calls
    binding = EpisodeBinding(
        agent_id="model",
        model="scripted-model",
        max_output_tokens=BOUND,
        calls=bound_calls(calls),
        provider_execution=derive_provider_execution(header, calls, digest, display="ledger"),
    )
    output = record.as_json()
    output["replay_codes"] = replay_codes(loaded, record)
    return Bundle(artifact.build_artifact(loaded, output, binding), journal, folder)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    return record_model_run(tmp_path_factory.mktemp("bundle"))


@pytest.fixture
def bundle(recorded: Bundle, tmp_path: Path) -> Bundle:
    """A private copy: each test may tamper with the document and the journal."""
    journal = tmp_path / recorded.journal.name
    journal.write_bytes(recorded.journal.read_bytes())
    return Bundle(copy.deepcopy(recorded.document), journal, tmp_path)


def deterministic_document() -> dict[str, Any]:
    loaded = shipped()
    record = run_episode(loaded, "V2", Reference())
    output = record.as_json()
    output["replay_codes"] = replay_codes(loaded, record)
    return artifact.build_artifact(loaded, output, EpisodeBinding(agent_id="reference"))


def code_of(action: Callable[[], object]) -> str:
    with pytest.raises(AgentbenchError) as refused:
        action()
    return refused.value.code


def test_a_model_run_is_bound_to_its_ledger_with_every_amount_derived_from_the_rows(
    recorded: Bundle,
) -> None:
    document = recorded.document
    assert set(document) == set(artifact.FIELDS_BY_VERSION[8])
    binding = document["provider_execution"]
    decisions = len(document["decisions"])
    reading = audit_ledger(recorded.journal)
    rate_in, rate_out = Decimal(IN_RATE), Decimal(OUT_RATE)
    measured = sum(
        (rate_in * (100 + n) + rate_out * 7 for n in range(decisions) if n != UNREPORTED),
        Decimal(0),
    )
    assert binding == {
        "execution_run_id": run_id(shipped(), "V1", "model"),
        "execution_ledger_version": 3,
        "execution_ledger_digest_sha256": reading.digest,
        "provider": "openai-compatible",
        "api": "chat.completions",
        "model": "scripted-model",
        "settings_digest_sha256": "a" * 64,
        "pricing_digest_sha256": "b" * 64,
        "provider_calls": decisions,
        "attempts": decisions + 1,
        "measured_cost_usd": format(measured.normalize(), "f"),
        "forfeited_reservation_usd": format((rate_out * BOUND).normalize(), "f"),
        "input_tokens": sum(100 + n for n in range(decisions) if n != UNREPORTED),
        "output_tokens": 7 * (decisions - 1),
        "decision_call_index": list(range(decisions)),
    }
    text = canonical_json(binding)
    assert str(recorded.folder) not in text, "no path"
    assert "http" not in text, "no endpoint"
    execution = document["agent_execution"]
    assert execution["outcome_source"] == "model"
    assert execution["transport_calls"] == decisions
    assert execution["retry_count"] == 1
    assert len(execution["attempts"]) == decisions
    assert artifact.validate_artifact(document, "a.json") == 8


def test_a_run_that_reached_no_provider_binds_nothing_and_is_not_audited(
    tmp_path: Path,
) -> None:
    document = deterministic_document()
    assert document["provider_execution"] is None
    assert document["agent_execution"]["attempts"] == []
    assert artifact.validate_artifact(document, "d.json") == 8
    journal = tmp_path / "none.ndjson"
    assert code_of(lambda: artifact.audit_artifact(document, journal, "d")) == (
        "artifact_audit_unbound"
    )
    relabelled = copy.deepcopy(document)
    relabelled["agent_kind"] = "model"
    assert code_of(lambda: artifact.validate_artifact(relabelled, "d")) == (
        "artifact_execution_incoherent"
    )
    bound = copy.deepcopy(document)
    bound["provider_execution"] = record_model_run(tmp_path).document["provider_execution"]
    assert code_of(lambda: artifact.validate_artifact(bound, "d")) == "artifact_binding_unexpected"


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = document
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return edit


def _drop(name: str) -> Callable[[dict[str, Any]], None]:
    return lambda document: document.pop(name)


def _retape(document: dict[str, Any]) -> None:
    document["decisions"].pop()
    document["decisions_digest_sha256"] = artifact.digest(document["decisions"])


VALIDATE_TAMPERS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "version": (_set("artifact_version", 9), "artifact_version_unsupported"),
    "unknown field": (_set("provenance", "x"), "artifact_fields_mismatch"),
    "missing field": (_drop("operation_instance_id"), "artifact_fields_mismatch"),
    "operation": (_set("operation.extra", 1), "artifact_fields_mismatch"),
    "scenario": (_set("scenario_id", "V9"), "artifact_identity_mismatch"),
    "semantic scenario": (_set("semantic_scenario_id", "other"), "artifact_identity_mismatch"),
    "final state": (_set("final_state.version", -1), "artifact_digest_mismatch"),
    "trajectory": (_set("trajectory.0.index", 99), "artifact_digest_mismatch"),
    "result vector": (_set("evaluation.dimensions", []), "artifact_evaluation_mismatch"),
    "tape": (_set("decisions.0.turn_index", 5), "artifact_tape_digest_mismatch"),
    "tape cardinality": (_retape, "artifact_execution_incoherent"),
    "execution record": (_set("agent_execution.retry", 0), "artifact_fields_mismatch"),
    "protocol": (_set("agent_execution.protocol_version", "v0"), "artifact_execution_incoherent"),
    "attempt turn": (
        _set("agent_execution.attempts.0.turn_index", 3),
        "artifact_execution_incoherent",
    ),
    "attempt class": (
        _set("agent_execution.attempts.0.outcome", "classified"),
        "artifact_execution_incoherent",
    ),
    "excluded": (_set("agent_execution.excluded", True), "artifact_excluded_execution"),
    "source": (_set("agent_execution.outcome_source", "oracle"), "artifact_execution_incoherent"),
    "binding missing": (_set("provider_execution", None), "artifact_binding_missing"),
    "binding field": (_set("provider_execution.endpoint", "http://x"), "artifact_binding_invalid"),
    "binding amount": (
        _set("provider_execution.measured_cost_usd", "1e-3"),
        "artifact_binding_invalid",
    ),
    "binding count": (_set("provider_execution.attempts", -1), "artifact_binding_invalid"),
    "binding model": (_set("provider_execution.model", "other"), "artifact_binding_incoherent"),
    "call index": (
        _set("provider_execution.decision_call_index.1", 0),
        "artifact_call_index_mismatch",
    ),
    "call count": (_set("provider_execution.provider_calls", 1), "artifact_binding_incoherent"),
}


@pytest.mark.parametrize("tamper", sorted(VALIDATE_TAMPERS))
def test_validate_names_each_tampered_field_class(recorded: Bundle, tamper: str) -> None:
    edit, code = VALIDATE_TAMPERS[tamper]
    document = copy.deepcopy(recorded.document)
    edit(document)
    assert code_of(lambda: artifact.validate_artifact(document, "a.json")) == code


def older_contract(document: dict[str, Any], version: int) -> dict[str, Any]:
    """The document as contract ``version`` wrote it: its own fields and result vector."""
    older: dict[str, Any] = {
        name: copy.deepcopy(document[name]) for name in artifact.FIELDS_BY_VERSION[version]
    }
    older["artifact_version"] = version
    dimensions = artifact.DIMENSIONS_BY_VERSION[version]
    older["evaluation"]["dimensions"] = [
        d for d in older["evaluation"]["dimensions"] if d["name"] in dimensions
    ]
    return older


def test_contracts_one_to_seven_are_read_under_their_own_field_sets_and_never_replayed(
    recorded: Bundle,
) -> None:
    for version in range(1, 8):
        older = older_contract(recorded.document, version)
        assert artifact.validate_artifact(older, f"v{version}.json") == version
        assert code_of(partial(artifact.replay_artifact, shipped(), older, "o")) == (
            "artifact_not_reproducible"
        )
        if version < 7:
            widened = {**older, "provider_execution": None}
            assert code_of(partial(artifact.validate_artifact, widened, "o")) == (
                "artifact_fields_mismatch"
            ), f"contract {version} does not gain a later field by being read"
    current_vector = older_contract(recorded.document, 1)
    current_vector["evaluation"] = recorded.document["evaluation"]
    assert code_of(lambda: artifact.validate_artifact(current_vector, "v1")) == (
        "artifact_evaluation_mismatch"
    ), "a v1 record cannot claim the dimensions later contracts grade"


def test_replay_reproduces_from_the_tape_at_zero_provider_calls(recorded: Bundle) -> None:
    summary = artifact.replay_artifact(shipped(), recorded.document, "a.json")
    assert summary["provider_calls"] == 0
    assert summary["carried_forward"] == [
        "agent_id",
        "agent_kind",
        "agent_execution",
        "provider_execution",
    ]
    assert "provider_execution" not in summary["compared"]
    assert summary["provider_attested"] is False


def test_replay_refuses_every_connection_while_it_runs() -> None:
    import socket

    transport = artifact.RefusingTransport()
    with transport.installed(), pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", 9))
    assert transport.attempts == 1
    assert socket.create_connection is not transport.refuse, "restored afterwards"


def _retaped(edit: Callable[[list[dict[str, Any]]], None]) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        edit(document["decisions"])
        document["decisions_digest_sha256"] = artifact.digest(document["decisions"])

    return change


def _redigest(name: str, source: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        document[source] = value
        document[name] = artifact.digest(value)

    return change


def _observation(decisions: list[dict[str, Any]]) -> None:
    decisions[0]["observation_digest_sha256"] = "0" * 64


def _extra(decisions: list[dict[str, Any]]) -> None:
    decisions.append(copy.deepcopy(decisions[-1]))


REPLAY_TAMPERS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "observation": (_retaped(_observation), "tape_decision_mismatched"),
    "final state": (
        _redigest("final_state_digest_sha256", "final_state", {"observable": {}, "version": 0}),
        "artifact_replay_diverged",
    ),
    "trajectory": (
        _redigest("trajectory_digest_sha256", "trajectory", []),
        "artifact_replay_diverged",
    ),
    "status": (_set("status", "operational_horizon_exhausted"), "artifact_replay_diverged"),
    "spec": (_set("operation.spec_digest_sha256", "c" * 64), "artifact_spec_mismatch"),
}


@pytest.mark.parametrize("tamper", sorted(REPLAY_TAMPERS))
def test_replay_names_each_divergence(recorded: Bundle, tamper: str) -> None:
    edit, code = REPLAY_TAMPERS[tamper]
    document = copy.deepcopy(recorded.document)
    edit(document)
    assert code_of(lambda: artifact.replay_artifact(shipped(), document, "a.json")) == code


def test_replay_refuses_a_tape_with_decisions_nobody_asked_for(recorded: Bundle) -> None:
    document = copy.deepcopy(recorded.document)
    _retaped(_extra)(document)
    document["agent_execution"]["attempts"].append(
        copy.deepcopy(document["agent_execution"]["attempts"][-1])
    )
    document["provider_execution"]["decision_call_index"].append(len(document["decisions"]) - 1)
    document["provider_execution"]["provider_calls"] += 1
    document["provider_execution"]["attempts"] += 1
    document["agent_execution"]["transport_calls"] += 1
    assert artifact.validate_artifact(document, "a") == 8
    assert code_of(lambda: artifact.replay_artifact(shipped(), document, "a")) in {
        "tape_decision_extra",
        "tape_decision_mismatched",
    }


def test_audit_holds_the_binding_to_the_journal(bundle: Bundle) -> None:
    summary = artifact.audit_artifact(bundle.document, bundle.journal, "a.json")
    assert summary["ok"] is True
    assert summary["provider_attested"] is False
    assert summary["execution_ledger_digest_sha256"] == audit_ledger(bundle.journal).digest


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_bytes(
        b"".join((json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n").encode() for r in rows)
    )


def _edit_journal_row(bundle: Bundle) -> None:
    rows = _rows(bundle.journal)
    rows[1]["call"]["turn_index"] += 1
    _write_rows(bundle.journal, rows)


def _cut_terminal(bundle: Bundle) -> None:
    _write_rows(bundle.journal, _rows(bundle.journal)[:-1])


def _aborted(bundle: Bundle) -> None:
    journal = bundle.folder / "aborted.ndjson"
    header = HeaderPayload.model_validate(_rows(bundle.journal)[0]["header"])
    writer = LedgerWriter(journal, header)
    for row in _rows(bundle.journal)[1:-1]:
        writer.call(CallPayload.model_validate(row["call"]))
    writer.finish("aborted")
    bundle.journal = journal


def _other_journal(bundle: Bundle) -> None:
    bundle.journal = record_model_run(bundle.folder / "other", "V3").journal


def _binding(name: str, value: Any) -> Callable[[Bundle], None]:
    def edit(bundle: Bundle) -> None:
        bundle.document["provider_execution"][name] = value

    return edit


def _attempt(name: str, value: Any) -> Callable[[Bundle], None]:
    def edit(bundle: Bundle) -> None:
        bundle.document["agent_execution"]["attempts"][3][name] = value

    return edit


def _both_models(bundle: Bundle) -> None:
    bundle.document["provider_execution"]["model"] = "other-model"
    bundle.document["agent_execution"]["model"] = "other-model"


def _output_ceiling(bundle: Bundle) -> None:
    bundle.document["agent_execution"]["max_output_tokens"] = BOUND + 1


AUDIT_TAMPERS: dict[str, tuple[Callable[[Bundle], None], str]] = {
    "journal row edited": (_edit_journal_row, "ledger_row_edited"),
    "journal incomplete": (_cut_terminal, "ledger_incomplete"),
    "journal not scored": (_aborted, "artifact_ledger_not_scored"),
    "another run's journal": (_other_journal, "artifact_run_mismatch"),
    "ledger contract": (
        _binding("execution_ledger_version", 2),
        "artifact_ledger_version_mismatch",
    ),
    "run identity": (_binding("execution_run_id", "exec_" + "0" * 32), "artifact_run_mismatch"),
    "model": (_both_models, "artifact_identity_mismatch"),
    "settings": (_binding("settings_digest_sha256", "c" * 64), "artifact_identity_mismatch"),
    "pricing": (_binding("pricing_digest_sha256", "c" * 64), "artifact_identity_mismatch"),
    "output ceiling": (_output_ceiling, "artifact_identity_mismatch"),
    "tokens": (_binding("input_tokens", 1), "artifact_totals_mismatch"),
    "cost": (_binding("measured_cost_usd", "0.5"), "artifact_totals_mismatch"),
    "forfeited": (_binding("forfeited_reservation_usd", "0"), "artifact_totals_mismatch"),
    "request digest": (_attempt("request_digest_sha256", "d" * 64), "artifact_call_mismatch"),
    "decision digest": (_attempt("decision_digest_sha256", "d" * 64), "artifact_call_mismatch"),
    "journal digest": (
        _binding("execution_ledger_digest_sha256", "e" * 64),
        "artifact_ledger_digest_mismatch",
    ),
}


@pytest.mark.parametrize("tamper", sorted(AUDIT_TAMPERS))
def test_audit_names_each_disagreement(bundle: Bundle, tamper: str) -> None:
    edit, code = AUDIT_TAMPERS[tamper]
    edit(bundle)
    assert code_of(lambda: artifact.audit_artifact(bundle.document, bundle.journal, "a")) == code


def test_the_three_commands_state_their_claims_and_refuse_by_code(
    bundle: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bundle.write(bundle.document, "V1.artifact.json")
    assert main(["artifact", "validate", str(path), "--json"]) == 0
    validated = json.loads(capsys.readouterr().out)
    assert validated["claim"] == "coherence"
    assert validated["ledger_opened"] is False
    assert "not provider attestation" in validated["note"]
    assert main(["artifact", "replay", str(path), "--suite", str(SUITE)]) == 0
    out = capsys.readouterr().out
    assert "at 0 provider calls" in out
    assert "carried forward: agent_id" in out
    assert main(["artifact", "audit", str(path), str(bundle.journal), "--json"]) == 0
    audited = json.loads(capsys.readouterr().out)
    assert audited["claim"] == "agreement"
    assert audited["provider_attested"] is False
    bundle.document["provider_execution"]["input_tokens"] += 1
    tampered = bundle.write(bundle.document)
    assert main(["artifact", "audit", str(tampered), str(bundle.journal)]) == 1
    assert "[artifact_totals_mismatch]" in capsys.readouterr().err


def _case(case_id: str = "V1") -> Case:
    return Case(
        suite_id="operations-maintenance-v1", case_id=case_id, file="operation.yaml", line=None
    )


class _World:
    kind = "operations"

    def episode_artifact(self, *args: Any) -> dict[str, Any]:
        raise AssertionError("a refused model run never reaches the world")


def test_a_model_run_without_a_complete_scored_ledger_writes_no_artefact(
    tmp_path: Path,
) -> None:
    from types import SimpleNamespace

    from pytest_agentbench.agents.provenance import ModelRun
    from pytest_agentbench.agents.settings import ChatSettings

    run = ModelRun(ChatSettings(model="scripted-model"))
    suite = SimpleNamespace(id="operations-maintenance-v1")
    outcome = Outcome(output={"episode": True})
    result = CaseResult(suite_id=suite.id, case_id="V1", outcome=CaseOutcome.PASSED)

    def write(case_ledger: CaseLedger | None) -> object:
        return write_episode_artifact(
            tmp_path / "arts",
            _World(),  # type: ignore[arg-type]
            suite,  # type: ignore[arg-type]
            _case(),
            outcome=outcome,
            result=result,
            case_ledger=case_ledger,
            model_run=run,
            item=ArtifactItem(agent_id="model", name="V1"),
        )

    assert code_of(lambda: write(None)) == "artifact_ledger_missing"
    header = HeaderPayload(
        execution_run_id="exec_" + "1" * 32,
        operation_id="o",
        spec_digest_sha256="2" * 64,
        scenario_id="V1",
        agent_id="model",
        engine_version="test",
        provider=PROVIDER,
    )
    unfinished = CaseLedger(LedgerWriter(tmp_path / "open.ndjson", header))
    assert code_of(lambda: write(unfinished)) == "artifact_ledger_incomplete"
    unfinished.writer.close()
    aborted = CaseLedger(LedgerWriter(tmp_path / "aborted.ndjson", header))
    aborted.writer.finish("aborted")
    assert code_of(lambda: write(aborted)) == "artifact_ledger_not_scored"
    unpriced = CaseLedger(
        LedgerWriter(
            tmp_path / "unpriced.ndjson", header.model_copy(update={"provider": {"model": "m"}})
        )
    )
    unpriced.writer.finish("scored")
    assert code_of(lambda: write(unpriced)) == "artifact_binding_unpriced"
    assert not (tmp_path / "arts").exists(), "no artefact, not even an empty one"
    raised = Outcome(failure_class=FailureClass.AGENT_ERROR, failure_reason="the model raised")
    assert (
        write_episode_artifact(
            tmp_path / "arts",
            _World(),  # type: ignore[arg-type]
            suite,  # type: ignore[arg-type]
            _case(),
            outcome=raised,
            result=result,
            case_ledger=aborted,
            model_run=run,
            item=ArtifactItem(agent_id="model", name="V1"),
        )
        is None
    ), "an episode that never produced output is not recorded, and not refused either"


def test_each_trial_of_a_repeated_case_has_its_own_artefact_as_it_has_its_own_ledger() -> None:
    assert artifact_item("a", "V1", None).name == "V1"
    assert artifact_item("a", "V1", (None, 1)).name == "V1"
    assert artifact_item("a", "V1", (2, 3)).name == "V1[trial-2]"
    assert artifact_path(Path("out"), "s", "V1[trial-2]") == Path(
        "out/s/V1%5Btrial-2%5D.artifact.json"
    )
