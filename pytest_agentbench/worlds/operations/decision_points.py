"""Matched decision points: one state, one observation, one graded outcome.

A control file (the original's draft v0.3 layout: identity, denominator,
provenance, matched surface, decision points) names moments of an operation by
a *state predicate* over the observable projection, never by a position in a
run. The harness drives the episode with the reference agent until the
predicate first holds, freezes the observation the engine would hand an agent
there (the task and the records a read would serve), and grades exactly one
returned outcome against the point's closed admissible set. The driver's own
decision is discarded, so the grade belongs to the decision and not to the
variant or to how the state was reached.

Our addition to the original's format: a decision point may declare its
``separations``, the agents the set must admit and the ones it must refuse with
a named reason (ours all do; the original's carry none). The gate
(:func:`check_separations`) runs every pair on the same frozen observation and
fails by name when a pair does not separate as declared.
The original grades a reference vector only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PositiveInt, StrictBool, StrictInt, StrictStr, ValidationError

from pytest_agentbench.sdk import (
    AgentbenchError,
    JsonValue,
    Record,
    call_adapter,
    copy_json,
    loads_yaml_strict,
    pydantic_refusal,
    read_bytes,
    sha256_hex,
)
from pytest_agentbench.worlds.operations import outcomes as oc
from pytest_agentbench.worlds.operations.reads import (
    MAX_REQUESTS_PER_BATCH,
    pack_evidence_contract,
    pack_read_tool_sources,
    pack_read_tools,
    pack_tool_contract,
    read_session,
    retrieve_tool,
)
from pytest_agentbench.worlds.operations.spec import LoadedSpec
from pytest_agentbench.worlds.operations.state import ENGINE_COLLECTIONS, OperationState
from pytest_agentbench.worlds.operations.surface import decode_surface, pack_surface

SHARED_ESTIMAND = "decision_point_admissibility"
CONTROL_KEYS = frozenset({"control_id", "decision_points", "matched_surface"})
"""The keys that make a YAML document a matched decision-point control (found by content)."""
REFERENCE = "reference"
OUTCOME_KINDS = ("ACT", "WAIT", "ASK", "ESCALATE", "COMPLETE")
MAX_POINTS = 64
MAX_CLAUSES = 16

ADMISSIBLE = "ADMISSIBLE"
MALFORMED_OUTCOME = "MALFORMED_OUTCOME"
OUTCOME_KIND_NOT_ADMISSIBLE = "OUTCOME_KIND_NOT_ADMISSIBLE"
ACTION_TYPE_NOT_ADMISSIBLE = "ACTION_TYPE_NOT_ADMISSIBLE"
OUTCOME_FIELDS_NOT_ADMISSIBLE = "OUTCOME_FIELDS_NOT_ADMISSIBLE"
RefusalCode = Literal[
    "MALFORMED_OUTCOME",
    "OUTCOME_KIND_NOT_ADMISSIBLE",
    "ACTION_TYPE_NOT_ADMISSIBLE",
    "OUTCOME_FIELDS_NOT_ADMISSIBLE",
]

Op = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "not_in"]
ORDERING_OPS = frozenset({"gt", "gte", "lt", "lte"})
MEMBERSHIP_OPS = frozenset({"in", "not_in"})
ConstraintKind = Literal[
    "bound_field",
    "free_identifier",
    "one_of",
    "exact",
    "integer_range",
    "optional_integer_range",
    "string_set",
]
RECORD_KEY = "id"
"""A bound record's own key, readable as a field (records do not store their id)."""
EvidenceClass = Literal["authoritative_record", "operation_record", "actor_assertion"]
EVIDENCE_CITABILITY: Mapping[str, bool] = {
    "authoritative_record": True,
    "operation_record": True,
    "actor_assertion": False,
}
"""Whether evidence of each class may back an action (the original's rule: a claim may not)."""
Text = Annotated[StrictStr, Field(min_length=1)]


# --------------------------------------------------------------------- format


class RecordCondition(Record):
    field: StrictStr
    op: Op
    value: JsonValue = None
    value_ref: StrictStr | None = None


class QuantifiedClause(Record):
    kind: Literal["quantified"]
    collection: StrictStr
    quantifier: Literal["exists", "none", "exactly_one"]
    bind: StrictStr | None = None
    where: tuple[RecordCondition, ...] = Field(max_length=MAX_CLAUSES)


class ScalarClause(Record):
    kind: Literal["scalar"]
    path: StrictStr
    op: Op
    value: JsonValue = None
    value_ref: StrictStr | None = None
    binding: StrictStr | None = None
    binding_field: StrictStr | None = None


Clause = Annotated[QuantifiedClause | ScalarClause, Field(discriminator="kind")]


class StatePredicate(Record):
    clauses: tuple[Clause, ...] = Field(min_length=1, max_length=MAX_CLAUSES)


class Constraint(Record):
    kind: ConstraintKind
    binding: StrictStr | None = None
    field: StrictStr | None = None
    values: tuple[JsonValue, ...] = ()
    value: JsonValue = None
    minimum: StrictInt | None = None
    maximum: StrictInt | None = None
    maximum_ref: StrictStr | None = None
    must_include: tuple[StrictStr, ...] = ()
    allowed: tuple[StrictStr, ...] = ()


class AdmissibleOutcome(Record):
    outcome_id: StrictStr
    outcome_kind: Literal["ACT", "WAIT", "ASK", "ESCALATE", "COMPLETE"]
    action_type: StrictStr | None = None
    evidence_refs_policy: Literal["empty_only", "citable_only", "any"]
    rationale: StrictStr
    outcome_constraints: dict[StrictStr, Constraint] = Field(default_factory=dict)


class RefusedAgent(Record):
    agent_id: StrictStr
    reason_code: RefusalCode


class Separations(Record):
    admitted: tuple[StrictStr, ...] = Field(min_length=1)
    refused: tuple[RefusedAgent, ...] = Field(min_length=1)


class ObservableFact(Record):
    """A fact handle the decision may rest on (carried, not graded)."""

    fact_id: Text
    path: Text
    evidence_class: Text
    note: Text


class EvidenceProvenance(Record):
    """Where citable evidence at this point comes from, and who could produce it."""

    collection: Text
    evidence_class: EvidenceClass
    citable_as_evidence: StrictBool
    produced_by_actor: Text
    produced_by_authority: Text
    note: Text


class DecisionPoint(Record):
    decision_point_id: StrictStr
    scenario_id: StrictStr
    label: StrictStr
    state_predicate: StatePredicate
    observable_facts: tuple[ObservableFact, ...] = ()
    evidence_provenance: tuple[EvidenceProvenance, ...] = ()
    admissible_outcomes: tuple[AdmissibleOutcome, ...] = Field(min_length=1)
    separations: Separations | None = None


class Denominator(Record):
    semantic_scenarios: StrictInt = Field(ge=1)
    decision_points_are_independent_semantic_samples: StrictBool
    note: StrictStr


class Provenance(Record):
    authored_by: StrictStr
    independence: StrictStr
    evidence_class: StrictStr
    review_status: StrictStr
    independent_review: None = None


class ActionSchema(Record):
    required: dict[StrictStr, StrictStr]
    optional: dict[StrictStr, StrictStr]


class MatchedSurface(Record):
    """The surface the control claims to offer.

    The original also declares its observation projection, read catalogue,
    read budget (batches per invocation, requests per batch) and action payload
    contracts; they are read and carried. Our check holds the read requirements,
    the read budget (when declared) and the outcome vocabulary against the
    operation.
    """

    observation_projection_fields: tuple[StrictStr, ...] | None = None
    retrieval_catalogue: tuple[StrictStr, ...] | None = None
    retrieval_batch_budget: tuple[PositiveInt, PositiveInt] | None = None
    action_read_requirements: tuple[StrictStr, ...]
    outcome_kinds: tuple[StrictStr, ...]
    action_schemas: dict[StrictStr, ActionSchema] | None = None


class MatchedDecisionPoints(Record):
    schema_version: Literal[1]
    control_id: StrictStr
    control_version: StrictStr
    operation_id: StrictStr
    operation_type: StrictStr
    authored_against_operation_version: StrictStr
    semantic_scenario_id: StrictStr
    shared_estimand: Literal["decision_point_admissibility"]
    denominator: Denominator
    provenance: Provenance
    matched_surface: MatchedSurface
    decision_points: tuple[DecisionPoint, ...] = Field(min_length=1, max_length=MAX_POINTS)

    def for_scenario(self, scenario_id: str) -> tuple[DecisionPoint, ...]:
        return tuple(p for p in self.decision_points if p.scenario_id == scenario_id)


class LoadedControl(Record):
    control: MatchedDecisionPoints
    digest_sha256: str
    file: str


# --------------------------------------------------------------------- reader


def is_control_document(raw: JsonValue) -> bool:
    return isinstance(raw, dict) and set(raw) >= CONTROL_KEYS


def read_control_document(path: Path, display: str) -> tuple[bytes, JsonValue]:
    """The bytes of a control file (bounded) and the document they parse to."""
    data = read_bytes(path, display=display)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AgentbenchError("malformed_yaml", f"not UTF-8: {exc}", file=display) from None
    return data, loads_yaml_strict(text, file=display)


def load_matched_decision_points(path: Path, display: str, spec: LoadedSpec) -> LoadedControl:
    """Read a control file and check it against the operation it is about.

    Every refusal names the file and the field: the document's own shape
    (pydantic codes), then its claims about the operation (identity, surface,
    scenarios, collections, paths, actions, fields, agents).
    """
    data, raw = read_control_document(path, display)
    try:
        control = MatchedDecisionPoints.model_validate(raw)
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=display) from None
    _Checker(control, spec, display).check()
    return LoadedControl(control=control, digest_sha256=sha256_hex(data), file=display)


class _Checker:
    def __init__(self, control: MatchedDecisionPoints, spec: LoadedSpec, display: str) -> None:
        self.control = control
        self.spec = spec
        self.display = display
        self.pack = spec.domain
        self.collections = frozenset(self.pack.initial_state(spec.spec)) | frozenset(
            ENGINE_COLLECTIONS
        )
        self.initial = self.pack.initial_state(spec.spec)
        self.policy = spec.policy.model_dump(mode="json")

    def check(self) -> None:
        control, operation = self.control, self.spec.spec
        if control.denominator.decision_points_are_independent_semantic_samples:
            raise AgentbenchError(
                "invalid_field",
                "decision points of one semantic scenario are never independent samples",
                file=self.display,
                field="denominator.decision_points_are_independent_semantic_samples",
            )
        for name, declared, actual in (
            ("operation_id", control.operation_id, operation.operation_id),
            ("operation_type", control.operation_type, operation.operation_type),
            ("semantic_scenario_id", control.semantic_scenario_id, operation.semantic_scenario_id),
        ):
            if declared != actual:
                raise AgentbenchError(
                    "decision_point_control_mismatch",
                    f"the control names {declared!r}; the operation is {actual!r}",
                    file=self.display,
                    field=name,
                )
        self.check_surface()
        seen: set[str] = set()
        for index, point in enumerate(control.decision_points):
            where = f"decision_points[{index}]"
            if point.decision_point_id in seen:
                raise AgentbenchError(
                    "duplicate_decision_point",
                    f"{point.decision_point_id!r} is declared twice",
                    file=self.display,
                    field=f"{where}.decision_point_id",
                )
            seen.add(point.decision_point_id)
            if point.scenario_id not in operation.scenarios:
                raise AgentbenchError(
                    "unknown_decision_point_scenario",
                    f"the operation has no scenario {point.scenario_id!r}",
                    file=self.display,
                    field=f"{where}.scenario_id",
                )
            bound = self.check_predicate(point.state_predicate, f"{where}.state_predicate")
            self.check_facts(point.observable_facts, f"{where}.observable_facts")
            self.check_evidence(point.evidence_provenance, f"{where}.evidence_provenance")
            for number, outcome in enumerate(point.admissible_outcomes):
                self.check_outcome(outcome, bound, f"{where}.admissible_outcomes[{number}]")
            if point.separations is not None:
                self.check_separations(point.separations, f"{where}.separations")

    def check_facts(self, facts: Sequence[ObservableFact], where: str) -> None:
        seen: set[str] = set()
        for index, fact in enumerate(facts):
            if fact.fact_id in seen:
                raise AgentbenchError(
                    "duplicate_observable_fact",
                    f"{fact.fact_id!r} is declared twice at this decision point",
                    file=self.display,
                    field=f"{where}[{index}].fact_id",
                )
            seen.add(fact.fact_id)

    def check_evidence(self, entries: Sequence[EvidenceProvenance], where: str) -> None:
        for index, entry in enumerate(entries):
            at = f"{where}[{index}]"
            citable = EVIDENCE_CITABILITY[entry.evidence_class]
            if entry.citable_as_evidence != citable:
                raise AgentbenchError(
                    "evidence_citability_mismatch",
                    f"{entry.evidence_class} evidence is "
                    f"{'citable' if citable else 'never citable'}; the entry says otherwise",
                    file=self.display,
                    field=f"{at}.citable_as_evidence",
                )
            if entry.collection not in self.collections:
                raise AgentbenchError(
                    "unknown_decision_point_path",
                    f"the observable state has no collection {entry.collection!r}",
                    file=self.display,
                    field=f"{at}.collection",
                )

    def check_separations(self, declared: Separations, where: str) -> None:
        known = {agent.agent_id for agent in self.pack.negative_agents()} | {REFERENCE}
        named = [*declared.admitted, *(refused.agent_id for refused in declared.refused)]
        unknown = sorted(set(named) - known)
        if unknown:
            raise AgentbenchError(
                "unknown_control_agent",
                f"no built-in agent {', '.join(map(repr, unknown))} "
                f"(known: {', '.join(sorted(known))})",
                file=self.display,
                field=where,
            )
        if len(set(named)) != len(named):
            raise AgentbenchError(
                "duplicate_control", "an agent is declared twice", file=self.display, field=where
            )

    def check_surface(self) -> None:
        surface = self.control.matched_surface
        field = "matched_surface.action_read_requirements"
        try:
            decode_surface(surface.action_read_requirements)
        except AgentbenchError as exc:
            raise AgentbenchError(exc.code, exc.reason, file=self.display, field=field) from None
        live = pack_surface(self.pack)
        if tuple(surface.action_read_requirements) != live:
            raise AgentbenchError(
                "matched_surface_mismatch",
                f"declares {list(surface.action_read_requirements)}; the operation's read "
                f"contract is {list(live)}",
                file=self.display,
                field=field,
            )
        budget = (
            int(self.spec.policy.max_retrieval_batches_per_invocation),
            MAX_REQUESTS_PER_BATCH,
        )
        declared = surface.retrieval_batch_budget
        if declared is not None and tuple(declared) != budget:
            raise AgentbenchError(
                "matched_surface_mismatch",
                f"declares a read budget of {list(declared)}; the operation's is {list(budget)} "
                "(batches per invocation, requests per batch)",
                file=self.display,
                field="matched_surface.retrieval_batch_budget",
            )
        if tuple(surface.outcome_kinds) != OUTCOME_KINDS:
            raise AgentbenchError(
                "matched_surface_mismatch",
                f"outcome kinds must be {list(OUTCOME_KINDS)}",
                file=self.display,
                field="matched_surface.outcome_kinds",
            )

    def check_predicate(self, predicate: StatePredicate, where: str) -> frozenset[str]:
        bound: set[str] = set()
        for index, clause in enumerate(predicate.clauses):
            at = f"{where}.clauses[{index}]"
            if isinstance(clause, QuantifiedClause):
                if clause.collection not in self.collections:
                    raise AgentbenchError(
                        "unknown_decision_point_path",
                        f"the observable state has no collection {clause.collection!r}",
                        file=self.display,
                        field=f"{at}.collection",
                    )
                for number, condition in enumerate(clause.where):
                    self.check_comparison(
                        condition.op, condition.value, condition.value_ref, f"{at}.where[{number}]"
                    )
                if clause.bind is not None:
                    if clause.quantifier != "exactly_one":
                        raise AgentbenchError(
                            "invalid_decision_point_binding",
                            "only an exactly_one clause singles out a record to bind",
                            file=self.display,
                            field=f"{at}.bind",
                        )
                    if clause.bind in bound:
                        raise AgentbenchError(
                            "invalid_decision_point_binding",
                            f"{clause.bind!r} is bound twice",
                            file=self.display,
                            field=f"{at}.bind",
                        )
                    bound.add(clause.bind)
                continue
            self.check_path(clause.path, f"{at}.path")
            if clause.binding is not None:
                if clause.binding not in bound or clause.binding_field is None:
                    raise AgentbenchError(
                        "invalid_decision_point_binding",
                        f"no earlier clause binds {clause.binding!r} (and a field must be named)",
                        file=self.display,
                        field=f"{at}.binding",
                    )
            else:
                self.check_comparison(clause.op, clause.value, clause.value_ref, at)
        return frozenset(bound)

    def check_path(self, path: str, where: str) -> None:
        parts = path.split(".")
        if parts[0] == "policy" and len(parts) == 2 and parts[1] in self.policy:
            return
        if (
            parts[0] == "state"
            and len(parts) == 4
            and parts[1] in self.collections
            and parts[2] in self.initial.get(parts[1], {})
        ):
            return
        raise AgentbenchError(
            "unknown_decision_point_path",
            f"{path!r} is neither policy.<key> nor state.<collection>.<initial record>.<field>",
            file=self.display,
            field=where,
        )

    def check_comparison(
        self, op: str, value: JsonValue, value_ref: str | None, where: str
    ) -> None:
        if value_ref is not None:
            self.check_path(value_ref, f"{where}.value_ref")
            if op in ORDERING_OPS and value_ref.startswith("policy."):
                resolved = self.policy[value_ref.split(".")[1]]
                if isinstance(resolved, bool) or not isinstance(resolved, int):
                    raise AgentbenchError(
                        "invalid_decision_point_comparand",
                        f"{op} needs a whole number; {value_ref!r} is not one",
                        file=self.display,
                        field=f"{where}.value_ref",
                    )
            return
        if op in MEMBERSHIP_OPS and not (isinstance(value, list) and value):
            raise AgentbenchError(
                "invalid_decision_point_comparand",
                f"{op} needs a non-empty list to look in",
                file=self.display,
                field=f"{where}.value",
            )
        if op in ORDERING_OPS and (isinstance(value, bool) or not isinstance(value, int)):
            raise AgentbenchError(
                "invalid_decision_point_comparand",
                f"{op} needs a whole number",
                file=self.display,
                field=f"{where}.value",
            )

    def check_outcome(self, outcome: AdmissibleOutcome, bound: frozenset[str], where: str) -> None:
        if outcome.outcome_kind == "ACT":
            action = self.pack.action_types.get(outcome.action_type or "")
            if action is None:
                raise AgentbenchError(
                    "unknown_decision_point_action",
                    f"the operation has no action {outcome.action_type!r}",
                    file=self.display,
                    field=f"{where}.action_type",
                )
            fields = frozenset(action.required) | frozenset(action.optional)
        else:
            if outcome.action_type is not None:
                raise AgentbenchError(
                    "unknown_decision_point_action",
                    f"a {outcome.outcome_kind} names no action",
                    file=self.display,
                    field=f"{where}.action_type",
                )
            fields = _OUTCOME_FIELDS[outcome.outcome_kind]
        for name, constraint in sorted(outcome.outcome_constraints.items()):
            at = f"{where}.outcome_constraints.{name}"
            if name not in fields:
                raise AgentbenchError(
                    "unknown_decision_point_field",
                    f"{name!r} is not a field of {outcome.action_type or outcome.outcome_kind} "
                    f"({', '.join(sorted(fields))})",
                    file=self.display,
                    field=at,
                )
            self.check_constraint(constraint, bound, at)

    def check_constraint(self, constraint: Constraint, bound: frozenset[str], where: str) -> None:
        kind = constraint.kind
        if kind == "bound_field" and (constraint.binding not in bound or constraint.field is None):
            raise AgentbenchError(
                "invalid_decision_point_binding",
                f"the predicate binds no {constraint.binding!r} (and a field must be named)",
                file=self.display,
                field=f"{where}.binding",
            )
        if kind == "one_of" and not constraint.values:
            raise AgentbenchError(
                "invalid_field", "one_of needs values", file=self.display, field=f"{where}.values"
            )
        if kind == "string_set" and not set(constraint.must_include) <= set(constraint.allowed):
            raise AgentbenchError(
                "invalid_field",
                "must_include must be within allowed",
                file=self.display,
                field=f"{where}.must_include",
            )
        if constraint.maximum_ref is not None:
            if kind not in ("integer_range", "optional_integer_range"):
                raise AgentbenchError(
                    "invalid_field", "only a range has a ceiling", file=self.display, field=where
                )
            self.check_comparison("lte", None, constraint.maximum_ref, where)


_OUTCOME_FIELDS: Mapping[str, frozenset[str]] = {
    kind: frozenset(model.model_fields) - {"outcome", "evidence_refs"}
    for kind, model in (
        ("WAIT", oc.Wait),
        ("ASK", oc.Ask),
        ("ESCALATE", oc.Escalate),
        ("COMPLETE", oc.Complete),
    )
}


# ------------------------------------------------------------------ predicates


def resolve(path: str, collections: Mapping[str, Any], policy: Mapping[str, Any]) -> Any:
    parts = path.split(".")
    if parts[0] == "policy":
        return policy.get(parts[1])
    record = collections.get(parts[1], {}).get(parts[2])
    return None if record is None else record.get(parts[3])


def same_value(left: Any, right: Any) -> bool:
    """Equality that never takes a yes/no for a number (``True == 1`` in Python)."""
    if isinstance(left, bool) != isinstance(right, bool):
        return False
    return bool(left == right)


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "eq":
        return same_value(left, right)
    if op == "ne":
        return not same_value(left, right)
    if op in MEMBERSHIP_OPS:
        found = isinstance(right, list) and any(same_value(left, item) for item in right)
        return found if op == "in" else isinstance(right, list) and not found
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right)):
        return False
    low: int = left
    high: int = right
    return {"gt": low > high, "gte": low >= high, "lt": low < high, "lte": low <= high}[op]


def evaluate_predicate(
    predicate: StatePredicate, collections: Mapping[str, Any], policy: Mapping[str, Any]
) -> dict[str, dict[str, Any]] | None:
    """The records the predicate binds if it holds in this state, else None."""
    bound: dict[str, dict[str, Any]] = {}
    for clause in predicate.clauses:
        if isinstance(clause, QuantifiedClause):
            hits = []
            for key, record in sorted(collections.get(clause.collection, {}).items()):
                row = {RECORD_KEY: key, **record}
                if all(
                    _compare(
                        c.op,
                        row.get(c.field),
                        resolve(c.value_ref, collections, policy) if c.value_ref else c.value,
                    )
                    for c in clause.where
                ):
                    hits.append(row)
            held = {
                "none": not hits,
                "exists": bool(hits),
                "exactly_one": len(hits) == 1,
            }[clause.quantifier]
            if not held:
                return None
            if clause.bind is not None:
                bound[clause.bind] = hits[0]
            continue
        left = resolve(clause.path, collections, policy)
        if clause.binding is not None:
            right = bound[clause.binding].get(str(clause.binding_field))
        elif clause.value_ref is not None:
            right = resolve(clause.value_ref, collections, policy)
        else:
            right = clause.value
        if not _compare(clause.op, left, right):
            return None
    return bound


# ------------------------------------------------------------------ encounters


@dataclass(frozen=True)
class Encounter:
    """The frozen observation one decision point was reached at (detached copies)."""

    decision_point_id: str
    scenario_id: str
    minute: int
    task: dict[str, JsonValue]
    collections: dict[str, dict[str, dict[str, JsonValue]]]
    bindings: dict[str, dict[str, Any]]

    def fresh_task(self, batches: int) -> dict[str, JsonValue]:
        """The observation as the first turn of a fresh invocation: nothing read yet."""
        task = copy_json(self.task)
        task["turn_index"] = 0
        task["retrieval_batches_left"] = batches
        task["this_invocation"] = []
        return task


class Probe:
    """An agent wrapper that watches the harness's state for the points' predicates.

    It sees the state through the episode, as the harness does, and never
    changes what the wrapped agent is handed or returns. ``on_match`` hears each
    point the first time its predicate holds, with the encounter and the wrapped
    agent's returned outcome at that turn.
    """

    def __init__(
        self,
        episode: Any,
        inner: Any,
        points: Sequence[DecisionPoint],
        on_match: Callable[[DecisionPoint, Encounter, Any], None] | None = None,
    ) -> None:
        self.episode = episode
        self.inner = inner
        self.pending = list(points)
        self.on_match = on_match
        self.encounters: dict[str, Encounter] = {}
        self.policy = episode.policy.model_dump(mode="json")

    def choose(self, task: dict[str, Any], point: DecisionPoint | None) -> Any:
        """Who answers this turn (the wrapped agent here; a boundary subject overrides)."""
        return self.inner

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        # Read in place: the predicates change nothing, and a match keeps copies.
        collections = self.episode.state.observed()
        matched: list[tuple[DecisionPoint, Encounter]] = []
        for point in list(self.pending):
            bindings = evaluate_predicate(point.state_predicate, collections, self.policy)
            if bindings is None:
                continue
            self.pending.remove(point)
            encounter = Encounter(
                decision_point_id=point.decision_point_id,
                scenario_id=point.scenario_id,
                minute=int(task["minute"]),
                task=copy_json(task),
                collections=copy_json(collections),
                bindings=copy_json(bindings),
            )
            self.encounters[point.decision_point_id] = encounter
            matched.append((point, encounter))
        agent = self.choose(task, matched[0][0] if matched else None)
        raw = agent.solve(task, session)
        if self.on_match is not None:
            for point, encounter in matched:
                self.on_match(point, encounter, raw)
        return raw


class DecisionPointUnreachedError(AgentbenchError):
    pass


def reach(
    spec: LoadedSpec, scenario_id: str, points: Sequence[DecisionPoint]
) -> dict[str, Encounter]:
    """Drive ``scenario_id`` with the reference agent; each point's encounter by id.

    A point whose predicate never holds is refused by name: a decision point
    nothing reaches grades nothing.
    """
    from pytest_agentbench.worlds.operations import agents
    from pytest_agentbench.worlds.operations.episode import Episode

    episode = Episode(spec, scenario_id, None)
    probe = Probe(episode, agents.reference(), points)
    episode.agent = probe
    episode.run()
    for point in points:
        if point.decision_point_id not in probe.encounters:
            raise DecisionPointUnreachedError(
                "decision_point_unreached",
                f"{point.decision_point_id!r}: its state predicate never held in scenario "
                f"{scenario_id!r} driven by the reference agent",
                field="decision_points",
            )
    return probe.encounters


def decide_at(
    spec: LoadedSpec,
    encounter: Encounter,
    agent: Any,
    views: tuple[Callable[[Any], Any], Callable[[Any], Any]] | None = None,
) -> Any:
    """Offer ``agent`` the frozen observation with a fresh read session; one outcome back.

    ``views`` rewrite the task and the served records (the ordered snapshot's
    time removal); the grader always reads the frozen state itself.
    """
    budget = int(spec.policy.max_retrieval_batches_per_invocation)
    collections: Any = encounter.collections
    task: Any = encounter.fresh_task(budget)
    if views is not None:
        task_view, record_view = views
        task, collections = task_view(task), record_view(collections)
    state = OperationState(collections, {}, spec.policy)
    tools = pack_read_tools(spec.domain)
    session = read_session(
        retrieve_tool(
            state,
            lambda refs, whole: None,
            tools,
            pack_tool_contract(spec.domain, tools),
            sources=pack_read_tool_sources(spec.domain, tools),
            evidence=pack_evidence_contract(spec.domain),
        ),
        budget,
        {"scenario_id": encounter.scenario_id, "decision_point": encounter.decision_point_id},
    )
    try:
        return call_adapter(agent.solve, task, session)
    finally:
        session.close()


# --------------------------------------------------------------------- grading


@dataclass(frozen=True)
class Verdict:
    decision_point_id: str
    reason_code: str
    matched_outcome_id: str | None
    detail: str

    @property
    def admissible(self) -> bool:
        return self.reason_code == ADMISSIBLE


def grade_outcome(point: DecisionPoint, encounter: Encounter, raw: Any, policy: Any) -> Verdict:
    """Grade exactly one returned outcome against the point's closed admissible set."""
    policy_view = policy.model_dump(mode="json")
    try:
        outcome = oc.parse_outcome(raw)
    except oc.OutcomeRefused as refused:
        return Verdict(point.decision_point_id, MALFORMED_OUTCOME, None, str(refused))
    reasons: dict[str, str] = {}
    for candidate in point.admissible_outcomes:
        why = _candidate_problem(candidate, outcome, encounter, policy_view)
        if why is None:
            return Verdict(
                point.decision_point_id, ADMISSIBLE, candidate.outcome_id, candidate.outcome_id
            )
        reasons[candidate.outcome_id] = why
    kinds = {c.outcome_kind for c in point.admissible_outcomes}
    acts = {c.action_type for c in point.admissible_outcomes if c.outcome_kind == "ACT"}
    if outcome.outcome not in kinds:
        code = OUTCOME_KIND_NOT_ADMISSIBLE
    elif isinstance(outcome, oc.Act) and outcome.action not in acts:
        code = ACTION_TYPE_NOT_ADMISSIBLE
    else:
        code = OUTCOME_FIELDS_NOT_ADMISSIBLE
    detail = "; ".join(f"{name}: {why}" for name, why in sorted(reasons.items()))
    return Verdict(point.decision_point_id, code, None, detail)


def _candidate_problem(
    candidate: AdmissibleOutcome,
    outcome: oc.Outcome,
    encounter: Encounter,
    policy: Mapping[str, Any],
) -> str | None:
    if outcome.outcome != candidate.outcome_kind:
        return f"outcome {outcome.outcome} is not {candidate.outcome_kind}"
    body: Mapping[str, Any]
    if isinstance(outcome, oc.Act):
        if outcome.action != candidate.action_type:
            return f"action {outcome.action!r} is not {candidate.action_type!r}"
        body = outcome.payload
        unconstrained = sorted(set(body) - set(candidate.outcome_constraints))
        if unconstrained:
            return f"payload carries unconstrained field(s) {unconstrained}"
    else:
        body = oc.outcome_json(outcome)
    for name, constraint in sorted(candidate.outcome_constraints.items()):
        problem = _constraint_problem(
            constraint, body.get(name), encounter, policy, f"{candidate.outcome_kind}.{name}"
        )
        if problem is not None:
            return problem
    refs = [(ref.collection, ref.id, ref.version) for ref in getattr(outcome, "evidence_refs", ())]
    if candidate.evidence_refs_policy == "empty_only" and refs:
        return f"cites evidence {refs} where none is admissible"
    if candidate.evidence_refs_policy == "citable_only":
        unresolved = [
            ref
            for ref in refs
            if (encounter.collections.get(ref[0], {}).get(ref[1]) or {}).get("version") != ref[2]
        ]
        if unresolved:
            return f"cites {unresolved}, which resolve to no record at that version in this state"
    return None


def _constraint_problem(
    constraint: Constraint,
    value: Any,
    encounter: Encounter,
    policy: Mapping[str, Any],
    where: str,
) -> str | None:
    kind = constraint.kind
    if kind == "bound_field":
        expected = encounter.bindings[str(constraint.binding)].get(str(constraint.field))
        if value is None or not same_value(value, expected) or type(value) is not type(expected):
            return f"{where}: must carry the state's own {constraint.binding}.{constraint.field}"
        return None
    if kind == "free_identifier":
        ok = isinstance(value, str) and bool(value)
        return None if ok else f"{where}: must be a non-empty identifier"
    if kind == "one_of":
        ok = any(same_value(value, member) for member in constraint.values)
        return None if ok else f"{where}: {value!r} is not one of {list(constraint.values)}"
    if kind == "exact":
        ok = same_value(value, constraint.value)
        return None if ok else f"{where}: must be {constraint.value!r}"
    if kind == "string_set":
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            return f"{where}: must be a list of names"
        missing = sorted(set(constraint.must_include) - set(value))
        outside = sorted(set(value) - set(constraint.allowed))
        if missing or outside:
            return f"{where}: missing {missing}, outside the admissible set {outside}"
        return None
    if value is None:
        return None if kind == "optional_integer_range" else f"{where}: a whole number is needed"
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{where}: must be an integer"
    if constraint.minimum is not None and value < constraint.minimum:
        return f"{where}: below {constraint.minimum}"
    ceiling = constraint.maximum
    if constraint.maximum_ref is not None:
        ceiling = resolve(constraint.maximum_ref, encounter.collections, policy)
    if ceiling is not None and value > ceiling:
        return f"{where}: above {ceiling}"
    return None


# ------------------------------------------------------------------------ gate


@dataclass(frozen=True)
class Separation:
    decision_point_id: str
    agent_id: str
    expected: str
    actual: str

    @property
    def separated(self) -> bool:
        return self.expected == self.actual


def separations(spec: LoadedSpec, control: MatchedDecisionPoints) -> list[Separation]:
    """Every declared pair, run on the same frozen observation, with its verdict."""
    factories = {agent.agent_id: agent.factory for agent in spec.domain.negative_agents()}
    from pytest_agentbench.worlds.operations import agents

    factories[REFERENCE] = agents.reference
    results: list[Separation] = []
    for scenario_id in sorted({p.scenario_id for p in control.decision_points}):
        points = control.for_scenario(scenario_id)
        encounters = reach(spec, scenario_id, points)
        for point in points:
            if point.separations is None:
                continue
            encounter = encounters[point.decision_point_id]
            expectations = [(agent, ADMISSIBLE) for agent in point.separations.admitted] + [
                (refused.agent_id, refused.reason_code) for refused in point.separations.refused
            ]
            for agent_id, expected in expectations:
                raw = decide_at(spec, encounter, factories[agent_id]())
                verdict = grade_outcome(point, encounter, raw, spec.policy)
                results.append(
                    Separation(point.decision_point_id, agent_id, expected, verdict.reason_code)
                )
    return results


def check_separations(loaded: LoadedControl, spec: LoadedSpec) -> list[Separation]:
    """The gate: every declared pair separates, or a named refusal for the first that does not."""
    try:
        results = separations(spec, loaded.control)
    except DecisionPointUnreachedError as unreached:
        raise unreached.at(file=loaded.file) from None
    for result in results:
        if not result.separated:
            raise AgentbenchError(
                "decision_point_not_separated",
                f"{result.decision_point_id!r}: agent {result.agent_id!r} graded "
                f"{result.actual}, declared {result.expected}",
                file=loaded.file,
                field="decision_points",
            )
    return results


def find_control(root: Path, display: Callable[[Path], str]) -> Path | None:
    """The oracle folder's one matched decision-point control, found by its keys."""
    if not root.is_dir():
        return None
    found = []
    for path in sorted(p for p in root.glob("*.yaml") if p.is_file()):
        _, raw = read_control_document(path, display(path))
        if is_control_document(raw):
            found.append(path)
    if len(found) > 1:
        raise AgentbenchError(
            "ambiguous_decision_point_control",
            f"{len(found)} matched decision-point controls ({', '.join(p.name for p in found)}); "
            "keep one",
            file=display(root),
        )
    return found[0] if found else None
