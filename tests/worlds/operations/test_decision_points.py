"""Matched decision points: the reader's refusals, the grader, the separation gate, projections."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from pytest_agentbench.sdk import AgentbenchError
from pytest_agentbench.sdk.canonical import InputLimits, set_input_limits
from pytest_agentbench.sdk.projections import (
    restore_projections,
    select_projections,
    selected_projections,
)
from pytest_agentbench.worlds.operations import agents
from pytest_agentbench.worlds.operations import decision_points as dp
from pytest_agentbench.worlds.operations.packs import installed_packs
from pytest_agentbench.worlds.operations.projections import (
    BOUNDARY,
    ORDERED,
    STATIC,
    UNREACHED,
    FullRecorder,
    run_projections,
)
from pytest_agentbench.worlds.operations.spec import LoadedSpec, load_operation_spec

ROOT = Path(__file__).resolve().parents[3]
MAINTENANCE = "operations-maintenance-v1"
COMMERCE = "operations-commerce-v1"
CONTROL = "matched_decision_points_v0_1.yaml"
FIRST = "priced_repair_above_threshold_unapproved"


def _spec(suite: str) -> LoadedSpec:
    path = ROOT / "suites" / suite / "operation.yaml"
    return load_operation_spec(path, path.name, installed_packs())


@pytest.fixture(scope="module")
def maintenance() -> LoadedSpec:
    return _spec(MAINTENANCE)


@functools.cache
def _shipped_document() -> dict[str, Any]:
    """The shipped control, parsed once: some forty tests each change a copy of it."""
    loaded: dict[str, Any] = yaml.safe_load(
        (ROOT / "oracles" / MAINTENANCE / CONTROL).read_text(encoding="utf-8")
    )
    return loaded


def _document() -> dict[str, Any]:
    return copy.deepcopy(_shipped_document())


# libyaml's emitter where PyYAML has it, several times faster than the pure-Python one: the
# file is only the test's way to hand the loader a changed document.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _load(tmp_path: Path, spec: LoadedSpec, document: Any) -> dp.LoadedControl:
    path = tmp_path / "control.yaml"
    path.write_text(yaml.dump(document, Dumper=_DUMPER, sort_keys=False), encoding="utf-8")
    return dp.load_matched_decision_points(path, "control.yaml", spec)


def _point(doc: dict[str, Any], index: int = 0) -> dict[str, Any]:
    point: dict[str, Any] = doc["decision_points"][index]
    return point


Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _duplicate_point(doc: dict[str, Any]) -> None:
    doc["decision_points"].append(copy.deepcopy(doc["decision_points"][0]))


def _drop(path: str) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return mutate


# Our own entries in the original's per-point and surface layout (carried, not graded).
FACTS = [
    {
        "fact_id": "quote_amount",
        "path": "state.quotes.*.amount_minor",
        "evidence_class": "operation_record",
        "note": "What the repair would cost, in pence.",
    },
    {
        "fact_id": "threshold",
        "path": "policy.approval_threshold_minor",
        "evidence_class": "policy",
        "note": "Above this a person decides.",
    },
]
EVIDENCE = [
    {
        "collection": "quotes",
        "evidence_class": "operation_record",
        "citable_as_evidence": True,
        "produced_by_actor": "contractor",
        "produced_by_authority": "submit_quote",
        "note": "The quote as the contractor sent it.",
    },
    {
        "collection": "communications",
        "evidence_class": "actor_assertion",
        "citable_as_evidence": False,
        "produced_by_actor": "tenant",
        "produced_by_authority": "send_message",
        "note": "What the tenant says about the leak: a claim.",
    },
]
SURFACE_EXTRAS = {
    "observation_projection_fields": ["minute", "task", "records"],
    "retrieval_catalogue": ["retrieve:operation_store:system_of_record"],
    "retrieval_batch_budget": [6, 8],
    "action_schemas": {"request_approval": {"required": {"quote_id": "string"}, "optional": {}}},
}


def _with_evidence(doc: dict[str, Any]) -> None:
    _point(doc)["observable_facts"] = copy.deepcopy(FACTS)
    _point(doc)["evidence_provenance"] = copy.deepcopy(EVIDENCE)
    doc["matched_surface"].update(copy.deepcopy(SURFACE_EXTRAS))


def _then(*mutations: Mutation) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        for mutation in mutations:
            mutation(doc)

    return mutate


P = "decision_points.0"
CLAUSES = f"{P}.state_predicate.clauses"
ACT = f"{P}.admissible_outcomes.0"

REFUSALS: list[tuple[str, Mutation, str, str]] = [
    ("unknown key", _set("extra", 1), "unknown_field", "extra"),
    ("missing key", _drop("control_id"), "missing_field", "control_id"),
    ("schema version", _set("schema_version", 2), "invalid_field", "schema_version"),
    (
        "independent review claimed",
        _set("provenance.independent_review", "approved"),
        "invalid_field",
        "provenance.independent_review",
    ),
    (
        "points counted as independent",
        _set("denominator.decision_points_are_independent_semantic_samples", True),
        "invalid_field",
        "denominator.decision_points_are_independent_semantic_samples",
    ),
    (
        "another operation",
        _set("operation_id", "other"),
        "decision_point_control_mismatch",
        "operation_id",
    ),
    (
        "another scenario family",
        _set("semantic_scenario_id", "other"),
        "decision_point_control_mismatch",
        "semantic_scenario_id",
    ),
    (
        "surface drifted",
        _set("matched_surface.action_read_requirements.0", "authorise_supplier_work:quotes"),
        "matched_surface_mismatch",
        "matched_surface.action_read_requirements",
    ),
    (
        "surface not canonical",
        _set("matched_surface.action_read_requirements.0", "authorise_supplier_work:quotes,%zz"),
        "invalid_matched_surface",
        "matched_surface.action_read_requirements",
    ),
    (
        "outcome kinds",
        _set("matched_surface.outcome_kinds", ["WAIT", "ACT", "ASK", "ESCALATE", "COMPLETE"]),
        "matched_surface_mismatch",
        "matched_surface.outcome_kinds",
    ),
    ("no points", _set("decision_points", []), "invalid_field", "decision_points"),
    (
        "duplicate point",
        _duplicate_point,
        "duplicate_decision_point",
        "decision_points[3].decision_point_id",
    ),
    (
        "unknown scenario",
        _set(f"{P}.scenario_id", "V9"),
        "unknown_decision_point_scenario",
        "decision_points[0].scenario_id",
    ),
    (
        "unknown collection",
        _set(f"{CLAUSES}.0.collection", "estimates"),
        "unknown_decision_point_path",
        "decision_points[0].state_predicate.clauses[0].collection",
    ),
    (
        "unknown policy handle",
        _set(f"{CLAUSES}.0.where.1.value_ref", "policy.approval_ceiling"),
        "unknown_decision_point_path",
        "decision_points[0].state_predicate.clauses[0].where[1].value_ref",
    ),
    (
        "ordering against a word",
        _set(f"{CLAUSES}.0.where.1", {"field": "amount_minor", "op": "gt", "value": "many"}),
        "invalid_decision_point_comparand",
        "decision_points[0].state_predicate.clauses[0].where[1].value",
    ),
    (
        "membership in a scalar",
        _set(f"{CLAUSES}.0.where.0", {"field": "status", "op": "in", "value": "AWAITING"}),
        "invalid_decision_point_comparand",
        "decision_points[0].state_predicate.clauses[0].where[0].value",
    ),
    (
        "unknown operator",
        _set(f"{CLAUSES}.0.where.0.op", "like"),
        "invalid_field",
        "decision_points[0].state_predicate.clauses[0].quantified.where[0].op",
    ),
    (
        "binding from a none clause",
        _set(f"{CLAUSES}.1.bind", "nothing"),
        "invalid_decision_point_binding",
        "decision_points[0].state_predicate.clauses[1].bind",
    ),
    (
        "scalar against an unbound record",
        _set(f"{CLAUSES}.2.binding", "ghost"),
        "invalid_decision_point_binding",
        "decision_points[0].state_predicate.clauses[2].binding",
    ),
    (
        "unknown scalar path",
        _set(f"{CLAUSES}.2.path", "state.operation.elsewhere.current_cycle"),
        "unknown_decision_point_path",
        "decision_points[0].state_predicate.clauses[2].path",
    ),
    (
        "unknown action",
        _set(f"{ACT}.action_type", "approve_quote"),
        "unknown_decision_point_action",
        "decision_points[0].admissible_outcomes[0].action_type",
    ),
    (
        "a wait naming an action",
        _set("decision_points.1.admissible_outcomes.0.action_type", "request_payment"),
        "unknown_decision_point_action",
        "decision_points[1].admissible_outcomes[0].action_type",
    ),
    (
        "unknown payload field",
        _set(f"{ACT}.outcome_constraints.price", {"kind": "exact", "value": 1}),
        "unknown_decision_point_field",
        "decision_points[0].admissible_outcomes[0].outcome_constraints.price",
    ),
    (
        "constraint bound to nothing",
        _set(f"{ACT}.outcome_constraints.quote_id.binding", "ghost"),
        "invalid_decision_point_binding",
        "decision_points[0].admissible_outcomes[0].outcome_constraints.quote_id.binding",
    ),
    (
        "unknown constraint kind",
        _set(f"{ACT}.outcome_constraints.quote_id.kind", "close_enough"),
        "invalid_field",
        "decision_points[0].admissible_outcomes[0].outcome_constraints.quote_id.kind",
    ),
    (
        "empty admissible set",
        _set(f"{P}.admissible_outcomes", []),
        "invalid_field",
        "decision_points[0].admissible_outcomes",
    ),
    (
        "unknown agent",
        _set(f"{P}.separations.admitted", ["reference", "oracle_peeker"]),
        "unknown_control_agent",
        "decision_points[0].separations",
    ),
    (
        "agent on both sides",
        _set(f"{P}.separations.admitted", ["reference", "always_wait"]),
        "duplicate_control",
        "decision_points[0].separations",
    ),
    (
        "fact without a note",
        _then(_with_evidence, _drop(f"{P}.observable_facts.0.note")),
        "missing_field",
        "decision_points[0].observable_facts[0].note",
    ),
    (
        "fact with an empty id",
        _then(_with_evidence, _set(f"{P}.observable_facts.0.fact_id", "")),
        "invalid_field",
        "decision_points[0].observable_facts[0].fact_id",
    ),
    (
        "fact declared twice",
        _then(_with_evidence, _set(f"{P}.observable_facts.1.fact_id", "quote_amount")),
        "duplicate_observable_fact",
        "decision_points[0].observable_facts[1].fact_id",
    ),
    (
        "fact with an unknown key",
        _then(_with_evidence, _set(f"{P}.observable_facts.0.weight", 2)),
        "unknown_field",
        "decision_points[0].observable_facts[0].weight",
    ),
    (
        "evidence of an unknown class",
        _then(_with_evidence, _set(f"{P}.evidence_provenance.0.evidence_class", "rumour")),
        "invalid_field",
        "decision_points[0].evidence_provenance[0].evidence_class",
    ),
    (
        "a claim called citable",
        _then(_with_evidence, _set(f"{P}.evidence_provenance.1.citable_as_evidence", True)),
        "evidence_citability_mismatch",
        "decision_points[0].evidence_provenance[1].citable_as_evidence",
    ),
    (
        "citability as a word",
        _then(_with_evidence, _set(f"{P}.evidence_provenance.0.citable_as_evidence", "yes")),
        "invalid_field",
        "decision_points[0].evidence_provenance[0].citable_as_evidence",
    ),
    (
        "evidence from an unknown collection",
        _then(_with_evidence, _set(f"{P}.evidence_provenance.0.collection", "estimates")),
        "unknown_decision_point_path",
        "decision_points[0].evidence_provenance[0].collection",
    ),
    (
        "evidence without its actor",
        _then(_with_evidence, _drop(f"{P}.evidence_provenance.0.produced_by_actor")),
        "missing_field",
        "decision_points[0].evidence_provenance[0].produced_by_actor",
    ),
    (
        "read budget of zero batches",
        _then(_with_evidence, _set("matched_surface.retrieval_batch_budget", [0, 5])),
        "invalid_field",
        "matched_surface.retrieval_batch_budget[0]",
    ),
    (
        "read budget other than the operation's 6 batches of 8",
        _then(_with_evidence, _set("matched_surface.retrieval_batch_budget", [6, 20])),
        "matched_surface_mismatch",
        "matched_surface.retrieval_batch_budget",
    ),
    (
        "action schema with an unknown key",
        _then(_with_evidence, _set("matched_surface.action_schemas.request_approval.extra", {})),
        "unknown_field",
        "matched_surface.action_schemas.request_approval.extra",
    ),
    (
        "unknown reason code",
        _set(f"{P}.separations.refused.0.reason_code", "WRONG"),
        "invalid_field",
        "decision_points[0].separations.refused[0].reason_code",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "code", "field"),
    [pytest.param(m, c, f, id=name) for name, m, c, f in REFUSALS],
)
def test_every_bad_control_is_refused_by_code_file_and_field(
    tmp_path: Path, maintenance: LoadedSpec, mutate: Mutation, code: str, field: str
) -> None:
    document = _document()
    mutate(document)
    with pytest.raises(AgentbenchError) as refused:
        _load(tmp_path, maintenance, document)
    assert refused.value.code == code
    assert refused.value.location.file == "control.yaml"
    assert refused.value.location.field == field


def test_the_originals_evidence_blocks_read_and_are_carried(
    tmp_path: Path, maintenance: LoadedSpec
) -> None:
    document = _document()
    _with_evidence(document)
    del _point(document, 1)["separations"]
    control = _load(tmp_path, maintenance, document).control
    first, second = control.decision_points[0], control.decision_points[1]
    assert [fact.fact_id for fact in first.observable_facts] == ["quote_amount", "threshold"]
    assert first.observable_facts[1].evidence_class == "policy"
    assert [(e.collection, e.citable_as_evidence) for e in first.evidence_provenance] == [
        ("quotes", True),
        ("communications", False),
    ]
    assert first.evidence_provenance[1].produced_by_actor == "tenant"
    surface = control.matched_surface
    assert surface.retrieval_batch_budget == (6, 8)
    assert surface.retrieval_catalogue == ("retrieve:operation_store:system_of_record",)
    assert surface.observation_projection_fields == ("minute", "task", "records")
    assert surface.action_schemas is not None
    assert dict(surface.action_schemas["request_approval"].required) == {"quote_id": "string"}
    # The original declares no separations; a point without them reads and has no pairs.
    assert (second.separations, second.observable_facts, second.evidence_provenance) == (
        None,
        (),
        (),
    )
    with pytest.raises(ValidationError):
        first.observable_facts[0].__setattr__("note", "changed")


def test_unreadable_controls_are_refused_by_the_bounded_readers(
    tmp_path: Path, maintenance: LoadedSpec
) -> None:
    path = tmp_path / "control.yaml"
    for text, code in (
        ("control_id: a\ncontrol_id: b\n", "duplicate_key"),
        ("control_id: [\n", "malformed_yaml"),
        ("- just\n- a list\n", "invalid_field"),
    ):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(AgentbenchError) as refused:
            dp.load_matched_decision_points(path, "control.yaml", maintenance)
        assert (refused.value.code, refused.value.location.file) == (code, "control.yaml")
    path.write_bytes(b"control_id: \xff\n")
    with pytest.raises(AgentbenchError, match="not UTF-8"):
        dp.load_matched_decision_points(path, "control.yaml", maintenance)
    path.write_text(yaml.safe_dump(_document()), encoding="utf-8")
    previous = set_input_limits(InputLimits(max_bytes=64))
    try:
        with pytest.raises(AgentbenchError) as refused:
            dp.load_matched_decision_points(path, "control.yaml", maintenance)
    finally:
        set_input_limits(previous)
    assert refused.value.code == "input_too_large"


def test_both_built_in_controls_separate_every_declared_pair() -> None:
    for suite, pairs in ((MAINTENANCE, 14), (COMMERCE, 5)):
        spec = _spec(suite)
        path = ROOT / "oracles" / suite / CONTROL
        loaded = dp.load_matched_decision_points(path, path.name, spec)
        results = dp.check_separations(loaded, spec)
        assert len(results) == pairs
        assert all(result.separated for result in results)


def test_a_pair_that_does_not_separate_fails_the_gate_by_name(
    tmp_path: Path, maintenance: LoadedSpec
) -> None:
    document = _document()
    # always_act asks for the approval exactly as the reference does: it is not refused here.
    _point(document)["separations"]["refused"].append(
        {"agent_id": "always_act", "reason_code": "OUTCOME_KIND_NOT_ADMISSIBLE"}
    )
    _point(document)["separations"]["admitted"] = ["reference"]
    with pytest.raises(AgentbenchError) as refused:
        dp.check_separations(_load(tmp_path, maintenance, document), maintenance)
    assert refused.value.code == "decision_point_not_separated"
    assert "'always_act' graded ADMISSIBLE, declared OUTCOME_KIND_NOT_ADMISSIBLE" in str(
        refused.value
    )
    document = _document()
    _point(document)["state_predicate"]["clauses"][0]["where"][0]["value"] = "NEVER_SEEN"
    with pytest.raises(AgentbenchError) as refused:
        dp.check_separations(_load(tmp_path, maintenance, document), maintenance)
    assert refused.value.code == "decision_point_unreached"
    assert refused.value.location.file == "control.yaml"


def _first_encounter(spec: LoadedSpec) -> tuple[dp.DecisionPoint, dp.Encounter]:
    path = ROOT / "oracles" / MAINTENANCE / CONTROL
    control = dp.load_matched_decision_points(path, path.name, spec).control
    point = control.for_scenario("V1")[0]
    return point, dp.reach(spec, "V1", [point])[point.decision_point_id]


def test_the_grader_takes_one_outcome_and_names_why_it_is_not_admissible(
    maintenance: LoadedSpec,
) -> None:
    point, encounter = _first_encounter(maintenance)
    quote = encounter.bindings["quote_on_the_table"]
    payload = {
        "quote_id": quote["id"],
        "quote_version": quote["quote_version"],
        "amount_minor": quote["amount_minor"],
        "currency": quote["currency"],
        "scope_digest": quote["scope_digest"],
        "cycle_id": quote["cycle_id"],
    }
    ref = {"collection": "quotes", "id": quote["id"], "version": quote["version"]}

    def code(outcome: Any) -> str:
        return dp.grade_outcome(point, encounter, outcome, maintenance.policy).reason_code

    act = {"outcome": "ACT", "action": "request_approval", "evidence_refs": [ref]}
    assert code({**act, "payload": payload}) == "ADMISSIBLE"
    assert code({**act, "payload": {**payload, "deadline_after_minutes": 60}}) == "ADMISSIBLE"
    assert code({"outcome": "SLEEP"}) == "MALFORMED_OUTCOME"
    assert code({"outcome": "WAIT", "reason": "x", "wake_on": ["a"]}) == (
        "OUTCOME_KIND_NOT_ADMISSIBLE"
    )
    assert code({**act, "action": "request_payment", "payload": payload}) == (
        "ACTION_TYPE_NOT_ADMISSIBLE"
    )
    for wrong in (
        {**payload, "amount_minor": quote["amount_minor"] - 1},
        {**payload, "quote_version": True},  # a yes/no is not a version
        {**payload, "note": "please"},
        {**payload, "deadline_after_minutes": 10**6},
    ):
        assert code({**act, "payload": wrong}) == "OUTCOME_FIELDS_NOT_ADMISSIBLE"
    stale = {**ref, "version": quote["version"] + 1}
    assert code({**act, "payload": payload, "evidence_refs": [stale]}) == (
        "OUTCOME_FIELDS_NOT_ADMISSIBLE"
    )


class _Spy:
    """Answers like the reference and keeps every task it was handed."""

    def __init__(self) -> None:
        self.inner = agents.reference()
        self.tasks: list[dict[str, Any]] = []
        self.served: list[Any] = []

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        self.tasks.append(copy.deepcopy(task))
        raw = self.inner.solve(task, session)
        self.served.extend(call.result for call in session.calls)
        return raw


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for item in value.values() for k in _keys(item)}
    if isinstance(value, list):
        return {k for item in value for k in _keys(item)}
    return set()


def test_projections_grade_the_same_points_and_present_them_as_declared(
    maintenance: LoadedSpec,
) -> None:
    path = ROOT / "oracles" / MAINTENANCE / CONTROL
    control = dp.load_matched_decision_points(path, path.name, maintenance).control
    points = control.for_scenario("V1")
    ids = [p.decision_point_id for p in points]
    arms = (STATIC, BOUNDARY, ORDERED)
    vectors = run_projections(maintenance, "V1", points, agents.reference(), arms)
    assert vectors == {arm: dict.fromkeys(ids, "ADMISSIBLE") for arm in arms}
    waiting = next(a for a in maintenance.domain.negative_agents() if a.agent_id == "always_wait")
    vectors = run_projections(maintenance, "V1", points, waiting.factory(), (STATIC,))
    assert vectors[STATIC][FIRST] == "OUTCOME_KIND_NOT_ADMISSIBLE"
    # The ordered snapshot hands over no instant: now is the first point's, nothing else is timed.
    spy = _Spy()
    run_projections(maintenance, "V1", points, spy, (ORDERED,))
    anchor = spy.tasks[0]["now"]
    for task in spy.tasks:
        assert task["now"] == anchor
        assert not {k for k in _keys(task) if k in ("minute", "at") or k.endswith("_minute")}
    assert spy.served
    assert not {k for k in _keys(spy.served) if k.endswith("_minute")}
    # Static: a fresh invocation at each point, nothing read yet.
    spy = _Spy()
    run_projections(maintenance, "V1", points, spy, (STATIC,))
    assert [t["turn_index"] for t in spy.tasks] == [0, 0]
    assert [t["this_invocation"] for t in spy.tasks] == [[], []]
    assert spy.tasks[0]["now"] != spy.tasks[1]["now"]
    # Boundary-only: the agent owns the invocations at the points, the reference the rest.
    spy = _Spy()
    run_projections(maintenance, "V1", points, spy, (BOUNDARY,))
    assert {t["invocation_index"] for t in spy.tasks} == {4, 5}


def test_boundary_only_admits_only_what_the_engine_accepts_at_the_point(
    maintenance: LoadedSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_agentbench.sdk import ActionOutcome, Rejection

    path = ROOT / "oracles" / MAINTENANCE / CONTROL
    points = dp.load_matched_decision_points(path, path.name, maintenance).control
    first = points.for_scenario("V1")[:1]
    accepted = run_projections(maintenance, "V1", first, agents.reference(), (BOUNDARY, STATIC))
    assert accepted == {STATIC: {FIRST: "ADMISSIBLE"}, BOUNDARY: {FIRST: "ADMISSIBLE"}}
    # The grader admits the reference's outcome (static, above); an engine that
    # refuses it at that state makes it inadmissible under the boundary projection.
    domain = type(maintenance.domain)
    engine_decides = domain.decide_action

    def refuse_approvals(self: Any, state: Any, action: str, payload: Any) -> Any:
        if action == "request_approval":
            return ActionOutcome(rejection=Rejection("STALE_QUOTE", "refused"))
        return engine_decides(self, state, action, payload)

    monkeypatch.setattr(domain, "decide_action", refuse_approvals)
    refused = run_projections(maintenance, "V1", first, agents.reference(), (BOUNDARY,))
    assert refused == {BOUNDARY: {FIRST: "ENGINE_REJECTED"}}


def test_the_full_projection_reads_the_agents_own_lifecycle(maintenance: LoadedSpec) -> None:
    from pytest_agentbench.worlds.operations.episode import Episode

    path = ROOT / "oracles" / MAINTENANCE / CONTROL
    control = dp.load_matched_decision_points(path, path.name, maintenance).control
    points = control.for_scenario("V1")
    vectors = {}
    for name, agent in (
        ("reference", agents.reference()),
        (
            "always_wait",
            next(
                a for a in maintenance.domain.negative_agents() if a.agent_id == "always_wait"
            ).factory(),
        ),
    ):
        recorder = FullRecorder(maintenance, points)
        episode = Episode(maintenance, "V1", agent)
        episode.agent = recorder.wrap(episode, agent)
        episode.run()
        vectors[name] = recorder.vector()
    assert set(vectors["reference"].values()) == {"ADMISSIBLE"}
    # Waiting forever never brings a quote to the table: the point is not reached.
    assert vectors["always_wait"][FIRST] == UNREACHED


def test_a_run_selects_projections_by_name_and_restores_the_previous_selection() -> None:
    previous = select_projections(["static,full", "ordered_snapshot"])
    try:
        assert selected_projections() == ("full", "static", "ordered_snapshot")
        with pytest.raises(AgentbenchError) as refused:
            select_projections(["time_removed"])
        assert refused.value.code == "invalid_projection"
    finally:
        restore_projections(previous)
    assert selected_projections() == previous


def _container_ids(value: Any) -> set[int]:
    if isinstance(value, dict):
        return {id(value)}.union(*(_container_ids(item) for item in value.values()))
    if isinstance(value, list):
        return {id(value)}.union(*(_container_ids(item) for item in value))
    return set()


def test_an_encounter_shares_nothing_with_the_state_the_probe_read_in_place(
    maintenance: LoadedSpec,
) -> None:
    from pytest_agentbench.worlds.operations.episode import Episode

    path = ROOT / "oracles" / MAINTENANCE / CONTROL
    points = dp.load_matched_decision_points(path, path.name, maintenance).control.for_scenario(
        "V1"
    )
    episode = Episode(maintenance, "V1", None)
    probe = dp.Probe(episode, agents.reference(), points)
    episode.agent = probe
    episode.run()
    assert sorted(probe.encounters) == sorted(p.decision_point_id for p in points)
    live = _container_ids(episode.state.observed())
    for encounter in probe.encounters.values():
        kept = [encounter.task, encounter.collections, encounter.bindings]
        assert not live & set().union(*map(_container_ids, kept))
        # The encounter's copies are apart from one another as well.
        assert not _container_ids(encounter.collections) & _container_ids(encounter.bindings)
