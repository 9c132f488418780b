"""The agent's read tool: RETRIEVE batches over the observable projection.

One call of ``retrieve`` is one batch; the invocation's :class:`ToolSession`
allows at most ``max_retrieval_batches_per_invocation`` of them, and a batch
holds at most :data:`MAX_REQUESTS_PER_BATCH` requests (the original's budget is
6 batches of 8). Each served record is logged with its version, so the
evaluator can tell a fresh read from a stale one and a cited record from an
uncited one. The hidden state is not reachable from here.

A request names either one collection (optionally one record of it) or one of
the pack's named read tools. The original publishes a finite vocabulary of
named reads, each a whole projection of a fixed set of roots; a pack declares
its own as ``read_tools`` (tool name to the collections it serves), and a tool
request serves every record of those collections. The tools are a grouping
over the same records, not a second store: a record read through a tool is the
record read by its collection, with the same version and the same citation, so
published files and controls that read by collection keep running.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pytest_agentbench.sdk import (
    AUTHORITIES,
    AgentbenchError,
    BoundVersion,
    Budget,
    EvidenceContract,
    EvidenceObligation,
    EvidenceSelector,
    JsonValue,
    LinkedEvidence,
    PayloadRecord,
    ReadRecordContract,
    ReadToolSource,
    ToolCallError,
    ToolSession,
    ToolSpec,
    copy_json,
    public_record_version,
)
from pytest_agentbench.worlds.operations.state import OperationState

RETRIEVE = "retrieve"
COMPLETE_OUTCOME = "complete"
"""The outcome key of the agent's COMPLETE, for the read contract, the episode and the
surface alike (one spelling, so they cannot drift apart)."""
MAX_REQUESTS_PER_BATCH = 8
"""Requests one batch may hold, as in the original (a read tool counts as one)."""

ReadTools = Mapping[str, tuple[str, ...]]

RETRIEVE_PARAMETERS: dict[str, JsonValue] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["requests"],
    "properties": {
        "requests": {
            # No maxItems here: an oversized batch is refused by the world with
            # its own stable code (read_batch_too_large), not the generic
            # invalid_arguments of the schema check.
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "collection": {"type": "string"},
                    "id": {"type": "string"},
                    "tool": {"type": "string"},
                },
            },
        }
    },
}


def retrieve_description(
    tools: ReadTools,
    contract: Mapping[str, tuple[str, ...]] | None = None,
    evidence: EvidenceContract | None = None,
) -> str:
    """What ``retrieve`` says to an agent: the request forms, the budget, the tools, the
    reads each outcome requires and the records each action must cite (disclosed, as the
    original publishes them, rather than discovered by refusal)."""
    text = (
        "Read records of the operation's business system. Each request names a "
        "collection and optionally a record id (all records of the collection when "
        'omitted), or a named read tool ({"tool": name}: every record of the '
        f"collections it serves). At most {MAX_REQUESTS_PER_BATCH} requests a call. "
        "Returns each record with its current version; cite records as "
        "{collection, id, version} in evidence_refs."
    )
    if tools:
        listed = "; ".join(f"{name}: {', '.join(tools[name])}" for name in sorted(tools))
        text += f" Read tools: {listed}."
    if contract:
        needs = "; ".join(
            f"{outcome}: {', '.join(required)}"
            for outcome, required in contract.items()
            if required
        )
        text += (
            " Each outcome is refused unless these reads were made in this invocation "
            f"since your last accepted action: {needs} (ACTED_ON_CLAIM_WITHOUT_RECORD when "
            "it cites what the waking event asserted without an authoritative read it "
            "needs, STALE_RETRIEVED_RECORD when a read was made before a wake or an "
            "accepted action and not again, ACTION_WITHOUT_RETRIEVAL otherwise)."
        )
    if evidence:
        cites = "; ".join(
            f"{action} ({obligation.code}): "
            + ", ".join(describe_selector(selector) for selector in obligation.selectors)
            for action, obligation in evidence.items()
        )
        text += f" These actions must also cite the records their payload selects: {cites}."
    return text


def pack_read_tools(pack: object, collections: frozenset[str] | None = None) -> ReadTools:
    """The pack's named reads (``read_tools``; none when it declares none), checked.

    Each tool must serve at least one collection and no collection may be served
    by two tools (which read established a record would be ambiguous); with
    ``collections`` given, every served collection must be one of them.
    """
    declared = getattr(pack, "read_tools", None)
    if declared is None:
        return {}
    if not isinstance(declared, Mapping):
        raise _invalid_tools("read_tools must map tool names to collections")
    tools: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {}
    for name, served in declared.items():
        if not isinstance(name, str) or not name:
            raise _invalid_tools(f"tool name {name!r} is not a non-empty string")
        if (
            not isinstance(served, tuple)
            or not served
            or not all(isinstance(c, str) and c for c in served)
        ):
            raise _invalid_tools(f"tool {name!r} must serve a non-empty tuple of collections")
        for collection in served:
            if collection in owner:
                raise _invalid_tools(
                    f"collection {collection!r} is served by {owner[collection]!r} and {name!r}"
                )
            if collections is not None and collection not in collections:
                raise _invalid_tools(f"tool {name!r} serves unknown collection {collection!r}")
            owner[collection] = name
        tools[name] = tuple(sorted(served))
    return dict(sorted(tools.items()))


def _invalid_tools(reason: str, field: str = "read_tools") -> AgentbenchError:
    return AgentbenchError("invalid_read_tools", reason, field=field)


def pack_tool_contract(pack: object, tools: ReadTools) -> dict[str, tuple[str, ...]] | None:
    """The named reads each outcome key requires (``read_contract``), or None if undeclared.

    Keys are the pack's actions and ``complete``; every read named must be one
    of ``tools``. An outcome key the table leaves out requires no named read.
    """
    declared = getattr(pack, "read_contract", None)
    if declared is None:
        return None
    if not isinstance(declared, Mapping):
        raise _invalid_contract("read_contract must map outcome keys to read tools")
    outcomes = {*getattr(pack, "action_types", {}), COMPLETE_OUTCOME}
    contract: dict[str, tuple[str, ...]] = {}
    for outcome, required in declared.items():
        if outcome not in outcomes:
            raise _invalid_contract(f"read_contract names unknown outcome {outcome!r}")
        if not isinstance(required, tuple) or not all(isinstance(t, str) for t in required):
            raise _invalid_contract(f"outcome {outcome!r} must require a tuple of read tools")
        unknown = sorted(set(required) - set(tools))
        if unknown:
            raise _invalid_contract(f"outcome {outcome!r} requires unknown read(s) {unknown}")
        contract[outcome] = tuple(sorted(set(required)))
    return dict(sorted(contract.items()))


def _invalid_contract(reason: str) -> AgentbenchError:
    return AgentbenchError("invalid_read_contract", reason, field="read_contract")


def tools_covered(tools: ReadTools, whole: set[str]) -> set[str]:
    """The named reads made when the collections in ``whole`` were each read whole."""
    return {name for name, served in tools.items() if set(served) <= whole}


Served = Callable[[list[dict[str, JsonValue]], list[str]], None]
"""Hears each served batch: its record refs, and the collections it read whole."""


def _requested(
    request: Mapping[str, Any], known: list[str], tools: ReadTools, position: int
) -> list[tuple[str, str | None]]:
    """The (collection, id or None for all) pairs one request asks for."""
    tool = request.get("tool")
    collection = request.get("collection")
    if (tool is None) == (collection is None):
        raise ToolCallError(
            "invalid_read_request",
            f"request {position} must name exactly one of 'collection' or 'tool'",
            field=f"arguments.requests[{position}]",
        )
    if tool is not None:
        if "id" in request:
            # A named read is a whole projection, as the original's are: an id
            # would be a parameter the tool silently ignores.
            raise ToolCallError(
                "invalid_read_request",
                f"request {position}: a read tool takes no 'id'",
                field=f"arguments.requests[{position}].id",
            )
        if tool not in tools:
            names = ", ".join(tools) or "none"
            raise ToolCallError(
                "unknown_read_tool",
                f"no read tool {tool!r} ({names})",
                field=f"arguments.requests[{position}].tool",
            )
        return [(name, None) for name in tools[tool]]
    if collection not in known:
        names = ", ".join(known)
        raise ToolCallError("unknown_collection", f"no collection {collection!r} ({names})")
    return [(collection, request.get("id"))]


def retrieve_tool(
    state: OperationState,
    served: Served,
    tools: ReadTools,
    contract: Mapping[str, tuple[str, ...]] | None = None,
    *,
    sources: Mapping[str, ReadToolSource] | None = None,
    evidence: EvidenceContract | None = None,
    record_contract: ReadRecordContract | None = None,
    as_of: Callable[[], str] | None = None,
    kept: frozenset[str] = frozenset(),
) -> ToolSpec:
    """``retrieve`` over the projection of ``state``; ``served`` hears what it served.

    With ``sources``, each served record of a collection a named read serves carries
    that read's ``tool``, ``source``, ``authority`` and ``schema_id`` (the original's
    ``ToolResult`` fields), however it was requested: the record is the same record.
    With ``record_contract`` and ``as_of`` too, it carries the rest of the original's
    answer: ``record_id`` (the service's record), ``record_version`` (the digest of the
    read's whole projection as the batch found it) and ``as_of`` (the simulated instant).
    ``served`` hears each record's contents too when its collection is in ``kept``.
    """
    described: dict[str, dict[str, JsonValue]] = {
        collection: {
            "tool": tool,
            "source": sources[tool].source,
            "authority": sources[tool].authority,
            "schema_id": sources[tool].schema_id,
        }
        for tool, served_collections in tools.items()
        if sources is not None and tool in sources
        for collection in served_collections
    }

    def handler(arguments: dict[str, Any]) -> JsonValue:
        requests = arguments["requests"]
        if len(requests) > MAX_REQUESTS_PER_BATCH:
            raise ToolCallError(
                "read_batch_too_large",
                f"{len(requests)} requests in one batch, at most {MAX_REQUESTS_PER_BATCH}",
                field="arguments.requests",
            )
        known = state.collections()
        # Every request is checked before anything is served: a batch is
        # answered whole or refused whole, never half-logged.
        wanted_all = [
            pair
            for position, request in enumerate(requests)
            for pair in _requested(request, known, tools, position)
        ]
        records: list[dict[str, JsonValue]] = []
        missing: list[dict[str, JsonValue]] = []
        for collection, wanted in wanted_all:
            if wanted is None:
                chosen = state.records(collection)
            else:
                single = state.get(collection, wanted)
                chosen = {} if single is None else {wanted: single}
            for record_id in sorted(chosen) if wanted is None else [wanted]:
                record = chosen.get(record_id)
                if record is None:
                    missing.append({"collection": collection, "id": record_id})
                    continue
                records.append(
                    {
                        "collection": collection,
                        "id": record_id,
                        "version": record["version"],
                        **described.get(collection, {}),
                        "record": record,
                    }
                )
        if record_contract is not None and as_of is not None:
            _stamp(records, tools, state, record_contract, as_of())
        whole = sorted({collection for collection, wanted in wanted_all if wanted is None})
        # The ledger keeps the contents of each served record the evaluator's
        # selectors resolve over (``kept``), so it can rebuild what a proposal had
        # to cite from what the agent saw in its window, as the original does from
        # its logged records; the rest stay references, to bound the ledger.
        served(
            [
                {
                    **{k: r[k] for k in ("collection", "id", "version")},
                    **({"record": copy_json(r["record"])} if r["collection"] in kept else {}),
                }
                for r in records
            ],
            whole,
        )
        return {"records": records, "missing": missing}

    return ToolSpec(
        name=RETRIEVE,
        description=retrieve_description(tools, contract, evidence),
        parameters=RETRIEVE_PARAMETERS,
        handler=handler,
    )


def _stamp(
    records: list[dict[str, JsonValue]],
    tools: ReadTools,
    state: OperationState,
    contract: ReadRecordContract,
    instant: str,
) -> None:
    """Give each record a named read serves that read's record id, version and instant.

    The version is of the read's whole projection, computed once per read and batch
    from the state the batch was served from, so records of one read in one batch
    cannot disagree about it.
    """
    versions: dict[str, str] = {}
    for record in records:
        tool = record.get("tool")
        source = record.get("source")
        if not isinstance(tool, str) or not isinstance(source, str):
            continue
        if tool not in versions:
            projection = {name: state.records(name) for name in tools[tool]}
            versions[tool] = public_record_version(projection, contract.version_length)
        record["record_id"] = contract.record_id(source)
        record["record_version"] = versions[tool]
        record["as_of"] = instant


def pack_read_record_contract(
    pack: object, sources: Mapping[str, ReadToolSource]
) -> ReadRecordContract | None:
    """The pack's ``read_record_contract`` (none when undeclared), checked: a record id is
    named by its read's source, so it needs ``read_tool_sources``."""
    declared = getattr(pack, "read_record_contract", None)
    if declared is None:
        return None
    field = "read_record_contract"
    if not sources:
        raise _invalid_tools("a read_record_contract needs read_tool_sources", field)
    if (
        not isinstance(declared, ReadRecordContract)
        or not all(
            isinstance(text, str) and text
            for text in (declared.identity_suffix, declared.version_context)
        )
        or not isinstance(declared.version_length, int)
        or isinstance(declared.version_length, bool)
        or not 1 <= declared.version_length <= 64
    ):
        raise _invalid_tools(
            "read_record_contract must be a ReadRecordContract with a suffix, a context "
            "and a version length of 1 to 64 hex characters",
            field,
        )
    return declared


def read_session(tool: ToolSpec, max_batches: int, context: dict[str, JsonValue]) -> ToolSession:
    """The session of one invocation: the read tools and the RETRIEVE batch budget."""
    return ToolSession([tool], Budget(max_calls=max_batches), context=context)


# --- evidence selectors (declared with the SDK's types) ---------------------------


def describe_selector(selector: EvidenceSelector) -> str:
    """One selector as an agent is told it, e.g. ``checkpoints/{approval_checkpoint_id}``."""
    if isinstance(selector, PayloadRecord):
        return f"{selector.collection}/{{{selector.payload_field}}}"
    chosen = f"{selector.selected}/{{{selector.payload_field}}}"
    if isinstance(selector, LinkedEvidence):
        return f"every {selector.evidence} record whose {selector.link_field} is that of {chosen}"
    return (
        f"the {selector.target} record that {chosen} binds "
        f"({selector.id_field}, at its {selector.version_field})"
    )


def _selector_collections(selector: EvidenceSelector) -> tuple[str, ...]:
    if isinstance(selector, PayloadRecord):
        return (selector.collection,)
    if isinstance(selector, LinkedEvidence):
        return (selector.selected, selector.links, selector.evidence)
    return (selector.selected, selector.target)


def pack_evidence_contract(
    pack: object, collections: frozenset[str] | None = None
) -> dict[str, EvidenceObligation]:
    """The pack's ``evidence_contract`` (none when undeclared), checked.

    Each key is one of the pack's actions; each obligation has a non-empty
    code and at least one selector of the closed set, no two alike, each
    selecting by a payload field the action declares and (with
    ``collections`` given) naming only known collections.
    """
    declared = getattr(pack, "evidence_contract", None)
    if declared is None:
        return {}
    if not isinstance(declared, Mapping):
        raise _invalid_evidence("evidence_contract must map actions to obligations")
    actions = getattr(pack, "action_types", {})
    contract: dict[str, EvidenceObligation] = {}
    for outcome, obligation in declared.items():
        if outcome not in actions:
            raise _invalid_evidence(f"evidence_contract names unknown action {outcome!r}")
        if (
            not isinstance(obligation, EvidenceObligation)
            or not isinstance(obligation.code, str)
            or not obligation.code
            or not isinstance(obligation.selectors, tuple)
            or not obligation.selectors
        ):
            raise _invalid_evidence(f"{outcome!r} needs an EvidenceObligation with a code")
        action = actions[outcome]
        fields = {*getattr(action, "required", {}), *getattr(action, "optional", {})}
        if len(set(obligation.selectors)) != len(obligation.selectors):
            raise _invalid_evidence(f"{outcome!r} lists a selector twice")
        for selector in obligation.selectors:
            if not isinstance(selector, (PayloadRecord, LinkedEvidence, BoundVersion)):
                raise _invalid_evidence(f"{outcome!r} has an unknown selector {selector!r}")
            if selector.payload_field not in fields:
                raise _invalid_evidence(
                    f"{outcome!r} selects by {selector.payload_field!r}, not a payload field"
                )
            unknown = [
                name
                for name in _selector_collections(selector)
                if collections is not None and name not in collections
            ]
            if unknown:
                raise _invalid_evidence(f"{outcome!r} names unknown collection(s) {unknown}")
        contract[outcome] = obligation
    return dict(sorted(contract.items()))


def graded_collections(contract: EvidenceContract, graded: bool) -> frozenset[str]:
    """The collections the evaluator's selectors resolve over: those whose served
    records the ledger keeps with their contents (none when citations are not graded)."""
    if not graded:
        return frozenset()
    return frozenset(
        name
        for obligation in contract.values()
        for selector in obligation.selectors
        for name in _selector_collections(selector)
    )


def pack_grades_citations(pack: object) -> bool:
    """Whether the evaluator grades ``REQUIRED_EVIDENCE_*`` from the pack's selectors
    (``evidence_citations_graded``, true unless the pack says otherwise).

    Some of the original's evaluators rebuild each proposal's required citations
    from its selectors; others grade retrieval from the read gate alone, and a
    pack matching one of those declares false.
    """
    declared = getattr(pack, "evidence_citations_graded", True)
    if not isinstance(declared, bool):
        raise AgentbenchError(
            "invalid_evidence_contract",
            "evidence_citations_graded must be true or false",
            field="evidence_citations_graded",
        )
    return declared


def _invalid_evidence(reason: str) -> AgentbenchError:
    return AgentbenchError("invalid_evidence_contract", reason, field="evidence_contract")


class RecordLookup(Protocol):
    """Where selectors find records: the live state (the runtime's gate) or the
    records served in one window (the evaluator's reconstruction)."""

    def get(self, collection: str, record_id: str) -> dict[str, JsonValue] | None: ...

    def records(self, collection: str) -> dict[str, dict[str, JsonValue]]: ...


def resolve_evidence(
    obligation: EvidenceObligation, payload: Mapping[str, Any], state: RecordLookup
) -> tuple[list[tuple[str, str]], str | None]:
    """The (collection, id) records ``payload`` obliges a citation of, or why they cannot be named.

    The runtime resolves against the current state (what the record says now is
    what the proposal must rest on); the evaluator resolves against the records
    served in the proposal's window, so the grade does not trust the gate.
    """
    required: list[tuple[str, str]] = []
    for selector in obligation.selectors:
        chosen = payload.get(selector.payload_field)
        if not isinstance(chosen, str):
            return [], f"payload field {selector.payload_field!r} selects no record"
        if isinstance(selector, PayloadRecord):
            if state.get(selector.collection, chosen) is None:
                return [], f"no {selector.collection} record {chosen!r}"
            required.append((selector.collection, chosen))
        elif isinstance(selector, LinkedEvidence):
            record = state.get(selector.selected, chosen)
            if record is None:
                return [], f"no {selector.selected} record {chosen!r}"
            link = record.get(selector.link_field)
            if not isinstance(link, str) or state.get(selector.links, link) is None:
                return [], f"the {selector.links} record of {chosen!r} is missing"
            evidence = sorted(
                key
                for key, item in state.records(selector.evidence).items()
                if item.get(selector.link_field) == link
            )
            if not evidence:
                return [], f"no {selector.evidence} record for {link!r}"
            required.extend((selector.evidence, key) for key in evidence)
        else:
            record = state.get(selector.selected, chosen)
            if record is None:
                return [], f"no {selector.selected} record {chosen!r}"
            bound = record.get(selector.id_field)
            version = record.get(selector.version_field)
            if (
                not isinstance(bound, str)
                or not isinstance(version, int)
                or isinstance(version, bool)
            ):
                return [], f"{selector.selected} record {chosen!r} binds no record version"
            target = state.get(selector.target, bound)
            if target is None or target.get(selector.version_field) != version:
                return [], f"{selector.target} record {bound!r} v{version} is not current"
            required.append((selector.target, bound))
    return required, None


def evidence_refusal(
    obligation: EvidenceObligation,
    payload: Mapping[str, Any],
    cited: set[tuple[str, str]],
    state: OperationState,
) -> tuple[str, str] | None:
    """(code, reason) when the proposal does not cite every record its payload selects."""
    required, problem = resolve_evidence(obligation, payload, state)
    missing = [f"{c}/{i}" for c, i in required if (c, i) not in cited]
    if problem is None and not missing:
        return None
    detail = problem or f"missing {', '.join(missing)}"
    return obligation.code, f"required evidence did not resolve completely: {detail}"


# --- where a named read comes from -----------------------------------------------


def pack_read_tool_sources(pack: object, tools: ReadTools) -> dict[str, ReadToolSource]:
    """The pack's ``read_tool_sources`` (none when undeclared): one per named read, checked."""
    declared = getattr(pack, "read_tool_sources", None)
    if declared is None:
        return {}
    if not isinstance(declared, Mapping) or set(declared) != set(tools):
        raise _invalid_tools(
            "read_tool_sources must describe every read tool, and only them", "read_tool_sources"
        )
    sources: dict[str, ReadToolSource] = {}
    for name, described in sorted(declared.items()):
        if (
            not isinstance(described, ReadToolSource)
            or not all(
                isinstance(text, str) and text
                for text in (described.source, described.authority, described.schema_id)
            )
            or described.authority not in AUTHORITIES
        ):
            raise _invalid_tools(
                f"tool {name!r} needs a ReadToolSource with an authority of {AUTHORITIES}",
                "read_tool_sources",
            )
        sources[name] = described
    return sources


def pack_role_authority(pack: object) -> dict[str, str]:
    """The authority class of each actor role's events (``role_authority``; a role it does
    not name asserts claims, as in the original)."""
    declared = getattr(pack, "role_authority", None)
    if declared is None:
        return {}
    if not isinstance(declared, Mapping) or not all(
        isinstance(role, str) and authority in AUTHORITIES for role, authority in declared.items()
    ):
        raise _invalid_tools(
            f"role_authority must map roles to one of {AUTHORITIES}", "role_authority"
        )
    return dict(sorted(declared.items()))
