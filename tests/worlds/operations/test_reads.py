"""The read tool: named reads over collections, and the budget of 6 batches of 8."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.sdk import (
    AgentbenchError,
    JsonValue,
    ReadRecordContract,
    ReadToolSource,
    ToolCallError,
    canonical_bytes,
    public_record_version,
    sha256_hex,
)
from pytest_agentbench.worlds.operations.domains.commerce_return_refund.pack import (
    ReturnRefundPack,
)
from pytest_agentbench.worlds.operations.domains.lettings_maintenance import negatives
from pytest_agentbench.worlds.operations.domains.lettings_maintenance.pack import MaintenancePack
from pytest_agentbench.worlds.operations.reads import (
    MAX_REQUESTS_PER_BATCH,
    pack_evidence_contract,
    pack_read_record_contract,
    pack_read_tool_sources,
    pack_read_tools,
    pack_tool_contract,
    read_session,
    retrieve_tool,
)
from pytest_agentbench.worlds.operations.state import ENGINE_COLLECTIONS, OperationState

from .helpers import Scripted, episode, rows, shipped, wait

ORIGINAL_READS = (
    "get_case_record",
    "list_authoritative_records",
    "list_billing",
    "list_checkpoints",
    "list_communications",
    "list_obligations",
    "list_quotes",
    "list_recent_events",
)


def _state() -> OperationState:
    loaded = shipped()
    state = OperationState(
        loaded.domain.initial_state(loaded.spec), loaded.spec.hidden_state, loaded.policy
    )
    state.put("invoices", "invoice_1", {"amount_minor": 100, "version": 1})
    state.put("payments", "payment_1", {"invoice_id": "invoice_1", "version": 2})
    state.take_writes()
    return state


def _refusal(session: Any, requests: list[dict[str, JsonValue]]) -> str:
    with pytest.raises(ToolCallError) as refused:
        session.call("retrieve", {"requests": requests})
    return refused.value.code


def test_named_reads_serve_their_collections_and_bad_requests_are_refused_by_name() -> None:
    state = _state()
    logged: list[list[dict[str, JsonValue]]] = []
    tools = pack_read_tools(MaintenancePack(), frozenset(state.collections()))
    session = read_session(
        retrieve_tool(state, lambda refs, whole: logged.append(refs), tools), 20, {}
    )
    assert tuple(tools) == ORIGINAL_READS
    by_tool = session.call("retrieve", {"requests": [{"tool": "list_billing"}]})
    by_name = session.call(
        "retrieve", {"requests": [{"collection": "invoices"}, {"collection": "payments"}]}
    )
    assert by_tool == by_name
    assert [(r["collection"], r["id"]) for r in by_tool["records"]] == [
        ("invoices", "invoice_1"),
        ("payments", "payment_1"),
    ]
    eight = [{"collection": "operation"}] * MAX_REQUESTS_PER_BATCH
    assert len(session.call("retrieve", {"requests": eight})["records"]) == 8
    served_before = len(logged)
    codes = [
        _refusal(session, [*eight, {"collection": "operation"}]),
        _refusal(session, [{"tool": "list_everything"}]),
        _refusal(session, [{"tool": "list_billing", "id": "invoice_1"}]),
        _refusal(session, [{"tool": "list_billing", "collection": "invoices"}]),
        _refusal(session, [{"collection": "operation"}, {}]),
        _refusal(session, [{"collection": "ledgers"}]),
    ]
    assert codes == [
        "read_batch_too_large",
        "unknown_read_tool",
        "invalid_read_request",
        "invalid_read_request",
        "invalid_read_request",
        "unknown_collection",
    ]
    # A refused batch serves nothing, not even its valid requests.
    assert len(logged) == served_before


def test_every_domain_collection_is_served_by_exactly_one_named_read() -> None:
    for pack in (MaintenancePack(), ReturnRefundPack()):
        tools = pack_read_tools(pack)
        served = [c for collections in tools.values() for c in collections]
        assert len(served) == len(set(served)), pack.operation_type
        assert set(tools) == set(pack.read_tools)
    state = _state()
    maintenance = pack_read_tools(MaintenancePack(), frozenset(state.collections()))
    served = {c for collections in maintenance.values() for c in collections}
    assert served == set(state.collections()) - (set(ENGINE_COLLECTIONS) - {"communications"})


class _Pack:
    def __init__(self, read_tools: object) -> None:
        self.read_tools = read_tools


@pytest.mark.parametrize(
    "declared",
    [
        {"a": ("quotes",), "b": ("quotes",)},
        {"a": ("ledgers",)},
        {"a": ()},
        {"a": ["quotes"]},
        {"": ("quotes",)},
        ["quotes"],
    ],
)
def test_a_bad_read_tool_table_is_refused_by_name(declared: object) -> None:
    with pytest.raises(AgentbenchError) as refused:
        pack_read_tools(_Pack(declared), frozenset({"quotes", "invoices"}))
    assert refused.value.code == "invalid_read_tools"


def test_a_pack_without_named_reads_reads_by_collection_only() -> None:
    assert pack_read_tools(object()) == {}
    # The everything-reading control restates the cap (a pack imports only the sdk).
    assert negatives.READ_BATCH == MAX_REQUESTS_PER_BATCH


def test_six_batches_of_at_most_eight_requests_per_invocation() -> None:
    seen: list[str] = []

    def decide(task: dict[str, Any], session: Any) -> Any:
        if task["invocation_index"] == 1 and task["turn_index"] == 0:
            for _ in range(7):
                try:
                    session.call("retrieve", {"requests": [{"tool": n} for n in ORIGINAL_READS]})
                except ToolCallError as refused:
                    seen.append(refused.code)
        return wait(fallback=50_000)

    record = episode("V1", Scripted(decide))
    assert seen == ["budget_exhausted"]
    served = [row for row in rows(record, "retrieval") if row["invocation_index"] == 1]
    assert len(served) == 6


def test_an_outcome_is_refused_until_its_named_reads_are_made_in_the_window() -> None:
    visit = {"visit_type": "DIAGNOSTIC", "cycle_id": "cycle_1"}
    act = {"outcome": "ACT", "action": "request_supplier_visit", "payload": visit}
    steps: list[tuple[list[dict[str, JsonValue]], dict[str, Any]]] = [
        ([], act),  # nothing read
        ([{"collection": "cycles", "id": "cycle_1"}], act),  # one record is not the read
        ([{"collection": c} for c in ("operation", "issues", "cycles")], act),  # visits unread
        ([{"collection": "visits"}], act),  # get_case_record now whole: accepted
        ([], act),  # its own accepted effect closed the window: the read is stale now
        ([{"tool": "get_case_record"}], {"outcome": "COMPLETE", "reason": "r"}),
    ]

    def decide(task: dict[str, Any], session: Any) -> Any:
        if task["invocation_index"] != 1 or task["turn_index"] >= len(steps):
            return wait(fallback=50_000)
        requests, outcome = steps[task["turn_index"]]
        if requests:
            session.call("retrieve", {"requests": requests})
        return {"evidence_refs": [], **outcome}

    record = episode("V1", Scripted(decide))
    first = rows(record, "action_rejected", "effect_accepted")[:6]
    assert [row.get("code", "accepted") for row in first] == [
        "ACTION_WITHOUT_RETRIEVAL",
        "ACTION_WITHOUT_RETRIEVAL",
        "ACTION_WITHOUT_RETRIEVAL",
        "accepted",
        "STALE_RETRIEVED_RECORD",
        "ACTION_WITHOUT_RETRIEVAL",
    ]
    assert "get_case_record" in first[0]["reason"]
    # The contract is disclosed to the agent in the tool's description.
    pack = MaintenancePack()
    tools = pack_read_tools(pack)
    described = retrieve_tool(_state(), lambda r, w: None, tools, pack_tool_contract(pack, tools))
    assert "send_message: get_case_record, list_communications" in described.description
    # So are the records an action must cite, with the code it is refused with otherwise.
    evidence = pack_evidence_contract(pack)
    cited = retrieve_tool(_state(), lambda r, w: None, tools, evidence=evidence).description
    assert (
        "request_payment (MISSING_AUTHORITY_EVIDENCE): invoices/{invoice_id}, every evidence "
        "record whose cycle_id is that of invoices/{invoice_id}."
    ) in cited
    assert "the quotes record that checkpoints/{approval_checkpoint_id} binds" in cited
    assert "must also cite" not in described.description
    assert (
        "ACTION_WITHOUT_RETRIEVAL"
        not in retrieve_tool(_state(), lambda r, w: None, tools).description
    )
    assert first[5]["reason"].startswith(
        "complete requires the reads list_billing, list_checkpoints, list_obligations"
    )


class _Contract:
    def __init__(self, read_contract: object) -> None:
        self.action_types = {"act": None}
        self.read_tools = {"list_quotes": ("quotes",)}
        self.read_contract = read_contract


@pytest.mark.parametrize(
    "declared",
    [{"other": ()}, {"act": ("list_billing",)}, {"act": ["list_quotes"]}, ["act"]],
)
def test_a_bad_read_contract_is_refused_by_name(declared: object) -> None:
    pack = _Contract(declared)
    with pytest.raises(AgentbenchError) as refused:
        pack_tool_contract(pack, pack_read_tools(pack))
    assert refused.value.code == "invalid_read_contract"
    good = _Contract({"complete": ("list_quotes",)})
    assert pack_tool_contract(good, pack_read_tools(good)) == {"complete": ("list_quotes",)}


def test_each_served_record_says_which_service_answered_with_what_authority() -> None:
    state = _state()
    pack = MaintenancePack()
    tools = pack_read_tools(pack, frozenset(state.collections()))
    sources = pack_read_tool_sources(pack, tools)
    session = read_session(retrieve_tool(state, lambda r, w: None, tools, sources=sources), 20, {})
    requests: list[JsonValue] = [
        {"tool": "list_billing"},
        {"collection": "payments"},
        {"tool": "list_authoritative_records"},
        {"collection": "operation"},
        {"collection": "schedules"},
    ]
    state.put("evidence", "evidence_1", {"cycle_id": "cycle_1"})
    state.put("schedules", "work_1", {"status": "created"})
    served = session.call("retrieve", {"requests": requests})
    described = [
        (r["collection"], r.get("tool"), r.get("source"), r.get("authority"), r.get("schema_id"))
        for r in served["records"]
    ]
    billing = ("list_billing", "billing_service", "system_of_record", "maintenance.list_billing.v1")
    assert described == [
        ("invoices", *billing),
        ("payments", *billing),
        ("payments", *billing),  # by collection: the same record, the same source
        (
            "evidence",
            "list_authoritative_records",
            "verification_service",
            "authoritative_verification",
            "maintenance.list_authoritative_records.v1",
        ),
        (
            "operation",
            "get_case_record",
            "case_service",
            "system_of_record",
            "maintenance.get_case_record.v2",
        ),
        ("schedules", None, None, None, None),  # the engine's own: no named read serves it
    ]
    # The eight named reads, as the original publishes them.
    assert {name: source.authority for name, source in sources.items()} == {
        "get_case_record": "system_of_record",
        "list_authoritative_records": "authoritative_verification",
        "list_billing": "system_of_record",
        "list_checkpoints": "system_of_record",
        "list_communications": "communication",
        "list_obligations": "system_of_record",
        "list_quotes": "system_of_record",
        "list_recent_events": "actor_claim",
    }


def test_each_served_record_names_its_record_version_and_instant_as_the_original() -> None:
    state = _state()
    pack = MaintenancePack()
    tools = pack_read_tools(pack, frozenset(state.collections()))
    sources = pack_read_tool_sources(pack, tools)
    contract = pack_read_record_contract(pack, sources)
    assert contract is not None
    assert contract.as_list() == [
        "maintenance_case",
        "maintenance retrieval record",
        "canonical-json-sha256-prefix-v1",
        16,
    ]
    clock = {"now": "2027-01-01T00:00:00Z"}
    session = read_session(
        retrieve_tool(
            state,
            lambda r, w: None,
            tools,
            sources=sources,
            record_contract=contract,
            as_of=lambda: clock["now"],
        ),
        20,
        {},
    )

    def serve(requests: list[JsonValue]) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = session.call("retrieve", {"requests": requests})["records"]
        return records

    billing = {"invoices": state.records("invoices"), "payments": state.records("payments")}
    expected = sha256_hex(canonical_bytes(billing))[:16]
    first = serve([{"tool": "list_billing"}, {"collection": "payments", "id": "payment_1"}])
    assert [(r["record_id"], r["record_version"], r["as_of"]) for r in first] == [
        ("billing_service:maintenance_case", expected, "2027-01-01T00:00:00Z")
    ] * 3
    # The same content is the same version at a later instant; a change anywhere in the
    # read's projection moves it, for every record of that read; other reads keep theirs.
    clock["now"] = "2027-01-02T00:00:00Z"
    assert {r["record_version"] for r in serve([{"tool": "list_billing"}])} == {expected}
    quotes = serve([{"tool": "list_quotes"}])
    state.put("payments", "payment_2", {"invoice_id": "invoice_1", "version": 1})
    moved = serve([{"tool": "list_billing"}, {"tool": "list_quotes"}])
    assert {r["record_version"] for r in moved if r["tool"] == "list_billing"} == {
        public_record_version({**billing, "payments": state.records("payments")}, 16)
    }
    assert expected not in {r["record_version"] for r in moved}
    assert [r["record_version"] for r in moved if r["tool"] == "list_quotes"] == [
        r["record_version"] for r in quotes
    ]
    assert {r["as_of"] for r in moved} == {"2027-01-02T00:00:00Z"}
    # The engine's own collections and a pack without the contract carry none of it.
    state.put("schedules", "work_1", {"status": "created"})
    (schedule,) = serve([{"collection": "schedules"}])
    assert "record_version" not in schedule
    bare = read_session(retrieve_tool(state, lambda r, w: None, tools, sources=sources), 5, {})
    assert (
        "record_id"
        not in bare.call("retrieve", {"requests": [{"tool": "list_billing"}]})["records"][0]
    )


class _Stamped:
    def __init__(self, contract: object, sources: bool = True) -> None:
        self.read_tools = {"list_quotes": ("quotes",)}
        if sources:
            self.read_tool_sources = {
                "list_quotes": ReadToolSource("quoting_service", "system_of_record", "q.v1")
            }
        self.read_record_contract = contract


@pytest.mark.parametrize(
    "pack",
    [
        _Stamped(("case", "label", 16)),
        _Stamped(ReadRecordContract("", "label")),
        _Stamped(ReadRecordContract("case", "label", 0)),
        _Stamped(ReadRecordContract("case", "label", 65)),
        _Stamped(ReadRecordContract("case", "label"), sources=False),
    ],
)
def test_a_bad_read_record_contract_is_refused_by_name(pack: _Stamped) -> None:
    tools = pack_read_tools(pack)
    with pytest.raises(AgentbenchError) as refused:
        pack_read_record_contract(pack, pack_read_tool_sources(pack, tools))
    assert refused.value.code == "invalid_read_tools"
    assert "read_record_contract" in str(refused.value)


def test_an_episode_stamps_each_read_at_the_simulated_instant_it_was_served() -> None:
    seen: list[tuple[str, set[str]]] = []

    def decide(task: dict[str, Any], session: Any) -> Any:
        served = session.call("retrieve", {"requests": [{"tool": "get_case_record"}]})
        seen.append((str(task["now"]), {r["as_of"] for r in served["records"]}))
        return wait(fallback=600)

    episode("V1", Scripted(decide))
    assert len(seen) > 2
    assert all(stamped == {now} for now, stamped in seen)
    assert len({now for now, _ in seen}) == len(seen)
