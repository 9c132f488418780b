"""The benchmark builder: trust-boundary refusals, determinism, writing, recomputation.

The worlds here are the Asteria source with one deliberate defect each, so
every refusal is exercised against an otherwise well-formed world.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.worlds.authority import asteria
from pytest_agentbench.worlds.authority.builder import (
    WorldSource,
    build_benchmark,
    derive_differences,
    write_bundle,
)
from pytest_agentbench.worlds.authority.models import (
    ActionAttempted,
    CanonicalBinding,
    CaseLabel,
    Credential,
    CredentialIssued,
    Delegation,
    DelegationGranted,
    DelegationRevoked,
    Event,
    Runtime,
    RuntimeSpawned,
)


@pytest.fixture(scope="module")
def source() -> WorldSource:
    return asteria.asteria_source()


def _rebind(source: WorldSource, event_id: str, **changes: object) -> WorldSource:
    bindings = tuple(
        binding.model_copy(update=changes) if binding.action_event_id == event_id else binding
        for binding in source.bindings
    )
    return source.model_copy(update={"bindings": bindings})


def _replace_delegation(source: WorldSource, delegation_id: str, **changes: object) -> WorldSource:
    """Change a delegation in the public file and in the event that grants it, consistently."""

    def changed(delegation: Delegation) -> Delegation:
        return (
            delegation.model_copy(update=changes) if delegation.id == delegation_id else delegation
        )

    snapshot = source.snapshot.model_copy(
        update={"delegations": tuple(changed(d) for d in source.snapshot.delegations)}
    )
    events = tuple(
        event.model_copy(
            update={"payload": DelegationGranted(delegation=changed(event.payload.delegation))}
        )
        if isinstance(event.payload, DelegationGranted)
        else event
        for event in source.events
    )
    return source.model_copy(update={"snapshot": snapshot, "events": events})


def _replace_runtime(source: WorldSource, runtime_id: str, **changes: object) -> WorldSource:
    def changed(runtime: Runtime) -> Runtime:
        return runtime.model_copy(update=changes) if runtime.id == runtime_id else runtime

    snapshot = source.snapshot.model_copy(
        update={"runtimes": tuple(changed(r) for r in source.snapshot.runtimes)}
    )
    events = tuple(
        event.model_copy(update={"payload": RuntimeSpawned(runtime=changed(event.payload.runtime))})
        if isinstance(event.payload, RuntimeSpawned)
        else event
        for event in source.events
    )
    return source.model_copy(update={"snapshot": snapshot, "events": events})


def _refusal(source: WorldSource) -> AgentbenchError:
    with pytest.raises(AgentbenchError) as caught:
        build_benchmark(source)
    return caught.value


# ---------------------------------------------------------------------------
# Trust boundary


def test_runtime_principal_that_is_not_the_runtimes_is_refused(source: WorldSource) -> None:
    bad = _rebind(
        source, "evt-010-authorised-comparison", runtime_principal_id=asteria.PROCUREMENT_WORKLOAD
    )
    error = _refusal(bad)
    assert error.code == "invalid_runtime_ownership"
    assert error.location.file == "canonical_bindings.json"
    assert error.location.field == "bindings[0].runtime_principal_id"


def test_runtime_owned_outside_its_principals_chain_is_refused(source: WorldSource) -> None:
    bad = _replace_runtime(source, asteria.PROCUREMENT_RUNTIME, owner_principal_id=asteria.FINANCE)
    error = _refusal(bad)
    assert error.code == "invalid_runtime_ownership"
    assert error.location.field is not None
    assert error.location.field.endswith(".runtime_id")


def test_orion_runtime_bound_to_an_asteria_agent_is_a_false_join(source: WorldSource) -> None:
    bad = _rebind(source, "evt-017-orion-supplier-read", logical_agent_id=asteria.PROCUREMENT_AGENT)
    error = _refusal(bad)
    assert error.code == "false_runtime_agent_join"
    assert error.location.field == "bindings[7].runtime_id"


def test_credential_subject_must_be_the_presented_credentials(source: WorldSource) -> None:
    # The shared-credential attempt presents the procurement credential.
    bad = _rebind(
        source,
        "evt-016-partial-comparison",
        credential_subject_id=asteria.COMPARISON_WORKLOAD,
    )
    error = _refusal(bad)
    assert error.code == "credential_subject_mismatch"
    assert error.location.field == "bindings[6].credential_subject_id"


@pytest.mark.parametrize(
    "chain",
    [
        (asteria.MANAGER,),
        (asteria.ASTERIA, asteria.MANAGER),
        (asteria.COMPARISON_SERVICE, asteria.MANAGER, asteria.ASTERIA),
    ],
)
def test_fabricated_owner_chain_is_refused_not_repaired(
    source: WorldSource, chain: tuple[str, ...]
) -> None:
    bad = _rebind(source, "evt-010-authorised-comparison", accountable_owner_chain=chain)
    error = _refusal(bad)
    assert error.code == "fabricated_owner_chain"
    assert error.location.field == "bindings[0].accountable_owner_chain"


def test_attributed_actor_off_both_identity_paths_is_refused(source: WorldSource) -> None:
    bad = _rebind(source, "evt-010-authorised-comparison", attributed_actor_id=asteria.FINANCE)
    error = _refusal(bad)
    assert error.code == "unrelated_attributed_actor"
    assert error.location.field == "bindings[0].attributed_actor_id"


def test_attributed_actor_on_the_credential_path_is_accepted(source: WorldSource) -> None:
    # The shared-credential attempt: the procurement service owns the credential subject.
    ok = _rebind(
        source,
        "evt-016-partial-comparison",
        attributed_actor_id=asteria.PROCUREMENT_SERVICE,
    )
    _, evaluator = build_benchmark(ok)
    binding = evaluator.bindings.bindings[6]
    assert binding.attributed_actor_id == asteria.PROCUREMENT_SERVICE


def _move_after(source: WorldSource, moved: int, after: int) -> WorldSource:
    """The stream with event ``moved`` (1-based) placed just after event ``after``.

    Every other event keeps its time; the moved one takes the time half a minute
    after ``after`` (so each record stays inside its own validity), and indices
    are renumbered.
    """
    events = list(source.events)
    event = events.pop(moved - 1)
    anchor = next(
        position for position, e in enumerate(events) if e.id == source.events[after - 1].id
    )
    timed = event.model_copy(
        update={"occurred_at": events[anchor].occurred_at + timedelta(seconds=30)}
    )
    events.insert(anchor + 1, timed)
    renumbered = tuple(
        e.model_copy(update={"event_index": index}) for index, e in enumerate(events, start=1)
    )
    return source.model_copy(update={"events": renumbered})


def _change_attempt(source: WorldSource, event_id: str, **changes: object) -> WorldSource:
    def changed(event: Event) -> Event:
        if event.id != event_id or not isinstance(event.payload, ActionAttempted):
            return event
        attempt = event.payload.attempt.model_copy(update=changes)
        return event.model_copy(update={"payload": ActionAttempted(attempt=attempt)})

    return source.model_copy(update={"events": tuple(changed(e) for e in source.events)})


FIRST = "evt-010-authorised-comparison"  # index 10, through the comparison runtime (index 2)


def _malformed_worlds(source: WorldSource) -> dict[str, tuple[WorldSource, str, str, str]]:
    """The original builder's refusals our builder once let through: world, code, file, field."""
    second_audit = source.events[-1].model_copy(
        update={
            "id": "evt-025-second-audit",
            "event_index": 25,
            "occurred_at": asteria.at_minute(25),
        }
    )
    without_runtime_evidence = _change_attempt(
        source, FIRST, evidence_refs=(f"evidence:policy:{asteria.POLICY_VERSION}",)
    )
    return {
        "binding agent is not the runtime's agent (same tenant)": (
            _rebind(source, FIRST, logical_agent_id=asteria.PROCUREMENT_AGENT),
            "false_runtime_agent_join",
            "canonical_bindings.json",
            "bindings[0].runtime_id",
        ),
        "binding origin in another organisation than the agent": (
            _rebind(source, FIRST, originating_principal_id=asteria.ORION),
            "cross_tenant_origin",
            "canonical_bindings.json",
            "bindings[0].originating_principal_id",
        ),
        "two audit events": (
            source.model_copy(update={"events": (*source.events, second_audit)}),
            "extra_audit_event",
            "public_events.jsonl",
            "[24].payload",
        ),
        "credential presented before its issuance": (
            _move_after(source, 5, 10),
            "credential_not_yet_issued",
            "public_events.jsonl",
            "[8].payload.attempt.presented_credential_id",
        ),
        "action citing runtime evidence spawned later": (
            _move_after(source, 2, 10),
            "evidence_unavailable_at_action",
            "public_events.jsonl",
            "[8].payload.attempt.evidence_refs",
        ),
        "action citing unknown evidence": (
            _change_attempt(source, FIRST, evidence_refs=("evidence:ghost:1",)),
            "evidence_unavailable_at_action",
            "public_events.jsonl",
            "[9].payload.attempt.evidence_refs",
        ),
        "attempted action the resource does not offer": (
            _change_attempt(source, FIRST, action="issue_purchase_order"),
            "unknown_resource_action",
            "public_events.jsonl",
            "[9].payload.attempt.action",
        ),
        "unknown resource": (
            _change_attempt(source, FIRST, resource_id="resource-ghost"),
            "unknown_resource_action",
            "public_events.jsonl",
            "[9].payload.attempt.resource_id",
        ),
        "binding runtime spawned after the action": (
            _move_after(without_runtime_evidence, 2, 10),
            "runtime_not_yet_spawned",
            "canonical_bindings.json",
            "bindings[0].runtime_id",
        ),
    }


def test_the_original_builders_refusals_are_refused_by_name(source: WorldSource) -> None:
    """Each is refused by build_agentic_benchmark (its replay, projection or integrity rule)."""
    found = {}
    for name, (world, *_expected) in _malformed_worlds(source).items():
        error = _refusal(world)
        found[name] = (error.code, error.location.file, error.location.field)
    assert found == {
        name: tuple(expected) for name, (_, *expected) in _malformed_worlds(source).items()
    }


def _replace_credential(source: WorldSource, credential_id: str, **changes: object) -> WorldSource:
    def changed(credential: Credential) -> Credential:
        if credential.id != credential_id:
            return credential
        return credential.model_copy(update=changes)

    snapshot = source.snapshot.model_copy(
        update={"credentials": tuple(changed(c) for c in source.snapshot.credentials)}
    )
    events = tuple(
        event.model_copy(
            update={"payload": CredentialIssued(credential=changed(event.payload.credential))}
        )
        if isinstance(event.payload, CredentialIssued)
        else event
        for event in source.events
    )
    return source.model_copy(update={"snapshot": snapshot, "events": events})


def test_the_original_replays_introduction_rules_are_refused_by_name(
    source: WorldSource,
) -> None:
    """Grants and issues inside their validity, child grants attenuated, one revocation each."""
    child = next(d for d in source.snapshot.delegations if d.id == asteria.COMPARISON_CHILD)
    wider = child.capability.model_copy(update={"purpose": asteria.DRAFT_PURPOSE})
    discard_event = source.events[22]
    revoked_twice = discard_event.model_copy(
        update={"payload": DelegationRevoked(delegation_id=asteria.COMPARISON_CHILD)}
    )
    worlds = {
        "grant before its validity": _replace_delegation(
            source, asteria.DRAFT_GRANT, valid_from=asteria.at_minute(10)
        ),
        "issue before its validity": _replace_credential(
            source, asteria.PROCUREMENT_CREDENTIAL, valid_from=asteria.at_minute(5)
        ),
        "child wider than its parent": _replace_delegation(
            source, asteria.COMPARISON_CHILD, capability=wider
        ),
        "revocation of a delegation its parent's revocation revoked": source.model_copy(
            update={"events": (*source.events[:22], revoked_twice, *source.events[23:])}
        ),
    }
    found = {}
    for name, world in worlds.items():
        error = _refusal(world)
        found[name] = (error.code, error.location.file, error.location.field)
    assert found == {
        "grant before its validity": (
            "introduced_outside_validity",
            "public_events.jsonl",
            "[8].payload.delegation",
        ),
        "issue before its validity": (
            "introduced_outside_validity",
            "public_events.jsonl",
            "[3].payload.credential",
        ),
        "child wider than its parent": (
            "child_not_attenuated",
            "public_events.jsonl",
            "[7].payload.delegation",
        ),
        "revocation of a delegation its parent's revocation revoked": (
            "revocation_of_inactive_delegation",
            "public_events.jsonl",
            "[22].payload.delegation_id",
        ),
    }


def test_policies_must_differ_in_version_and_in_id(source: WorldSource) -> None:
    """The original refuses a shared version and accepts a shared id; we refuse both."""
    organisation = source.snapshot.organisation
    (policy,) = organisation.policies
    for twin, field in (
        (policy.model_copy(update={"id": "policy-twin"}), "policies[1].version"),
        (policy.model_copy(update={"version": "asteria-policy-v2"}), "policies[1].id"),
    ):
        changed = organisation.model_copy(update={"policies": (policy, twin)})
        snapshot = source.snapshot.model_copy(update={"organisation": changed})
        error = _refusal(source.model_copy(update={"snapshot": snapshot}))
        assert (error.code, error.location.file, error.location.field) == (
            "duplicate_id",
            "organisation.json",
            field,
        )


def test_derive_refuses_shipped_records_of_a_world_the_builder_refuses(
    source: WorldSource,
) -> None:
    public, evaluator = build_benchmark(source)
    late = _move_after(source, 5, 10)
    moved = public.model_copy(update={"events": late.events})
    with pytest.raises(AgentbenchError) as caught:
        derive_differences(moved, evaluator)
    assert caught.value.code == "credential_not_yet_issued"


def test_binding_naming_an_unknown_agent_is_refused(source: WorldSource) -> None:
    bad = _rebind(source, "evt-010-authorised-comparison", logical_agent_id="agent-ghost")
    error = _refusal(bad)
    assert error.code == "unknown_reference"
    assert error.location.field == "bindings[0].logical_agent_id"


def test_unrelated_root_delegator_is_refused(source: WorldSource) -> None:
    # Finance is neither the contract grant's origin nor on the archive owner's chain.
    bad = _replace_delegation(
        source, asteria.CONTRACT_GRANT, delegator_principal_id=asteria.FINANCE
    )
    assert _refusal(bad).code == "unrelated_root_delegator"


def test_unrelated_child_delegator_is_refused(source: WorldSource) -> None:
    bad = _replace_delegation(
        source, asteria.COMPARISON_CHILD, delegator_principal_id=asteria.LEGAL
    )
    assert _refusal(bad).code == "unrelated_child_delegator"


def test_duplicate_binding_is_refused(source: WorldSource) -> None:
    bad = source.model_copy(update={"bindings": (*source.bindings, source.bindings[3])})
    error = _refusal(bad)
    assert error.code == "duplicate_evaluator_key"
    assert error.location.file == "canonical_bindings.json"


def test_missing_binding_is_refused(source: WorldSource) -> None:
    bad = source.model_copy(update={"bindings": source.bindings[1:]})
    error = _refusal(bad)
    assert error.code == "missing_evaluator_key"
    assert "evt-010-authorised-comparison" in error.reason


def test_binding_for_a_non_action_event_is_refused(source: WorldSource) -> None:
    stray = source.bindings[0].model_copy(
        update={"action_event_id": "evt-019-revoke-procurement-task"}
    )
    bad = source.model_copy(update={"bindings": (*source.bindings, stray)})
    assert _refusal(bad).code == "unexpected_evaluator_key"


def test_duplicate_and_missing_case_labels_are_refused(source: WorldSource) -> None:
    doubled = source.model_copy(update={"labels": (*source.labels, source.labels[0])})
    error = _refusal(doubled)
    assert (error.code, error.location.file) == ("duplicate_evaluator_key", "cases.jsonl")
    missing = source.model_copy(update={"labels": source.labels[:-1]})
    error = _refusal(missing)
    assert (error.code, error.location.file) == ("missing_evaluator_key", "cases.jsonl")


def test_case_labels_are_open_strings(source: WorldSource) -> None:
    relabelled = tuple(
        CaseLabel(action_event_id=label.action_event_id, kind="custom_kind")
        if label.action_event_id == "evt-013-purchase-order-issue"
        else label
        for label in source.labels
    )
    _, evaluator = build_benchmark(source.model_copy(update={"labels": relabelled}))
    assert evaluator.cases[3].kind == "custom_kind"


def test_well_formed_denials_stay_scoreable(source: WorldSource) -> None:
    _, evaluator = build_benchmark(source)
    reasons = {row.action_event_id: row.failure_reasons_at_action for row in evaluator.truth}
    # A valid credential from a runtime it does not permit is wrong_runtime, as in
    # the original; credential_invalid is for unknown, foreign or expired ones.
    assert reasons["evt-016-partial-comparison"] == ("wrong_runtime",)
    # A truthful external runtime reaching another tenant's resource.
    assert "tenant_mismatch" in reasons["evt-017-orion-supplier-read"]
    # A runtime presenting a same-tenant credential that does not permit it.
    assert reasons["evt-015-draft-preparation"] == ("wrong_runtime",)
    # An incorrect public attribution claim does not change the authority truth.
    assert reasons["evt-011-supplier-directory-read"] == ()


def test_bindings_and_labels_are_written_in_event_order(source: WorldSource) -> None:
    shuffled = source.model_copy(
        update={"bindings": source.bindings[::-1], "labels": source.labels[::-1]}
    )
    _, reference = build_benchmark(source)
    _, evaluator = build_benchmark(shuffled)
    assert evaluator == reference


# ---------------------------------------------------------------------------
# Determinism and writing


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_building_twice_writes_identical_bytes(source: WorldSource, tmp_path: Path) -> None:
    for name in ("first", "second"):
        public, evaluator = build_benchmark(asteria.asteria_source())
        write_bundle(tmp_path / name / "public", tmp_path / name / "evaluator", public, evaluator)
    first, second = _tree_bytes(tmp_path / "first"), _tree_bytes(tmp_path / "second")
    assert first == second
    assert "public/manifest.json" in first
    assert "evaluator/checksums.json" in first


def test_write_bundle_keeps_hand_written_files_and_refuses_stale_ones(
    source: WorldSource, tmp_path: Path
) -> None:
    public, evaluator = build_benchmark(source)
    public_root, evaluator_root = tmp_path / "suite", tmp_path / "oracle"
    public_root.mkdir()
    (public_root / "suite.yaml").write_text("id: x\n", encoding="utf-8")
    write_bundle(public_root, evaluator_root, public, evaluator)
    (evaluator_root / "controls.yaml").write_text("controls: []\n", encoding="utf-8")
    write_bundle(public_root, evaluator_root, public, evaluator)
    assert (public_root / "suite.yaml").read_text(encoding="utf-8") == "id: x\n"
    (public_root / "scenarios" / "old-scenario.json").write_text("{}\n", encoding="utf-8")
    with pytest.raises(AgentbenchError) as caught:
        write_bundle(public_root, evaluator_root, public, evaluator)
    assert caught.value.code == "stale_file"
    assert caught.value.location.file is not None
    assert caught.value.location.file.endswith("old-scenario.json")


def test_evaluator_checksums_bind_the_public_digest(source: WorldSource) -> None:
    public, evaluator = build_benchmark(source)
    assert evaluator.checksums.public_artifact_set_digest == public.manifest.artifact_set_digest


def test_evidence_epochs_carry_action_index_and_audit_event(source: WorldSource) -> None:
    _, evaluator = build_benchmark(source)
    epochs = {epoch.action_event_id: epoch for epoch in evaluator.evidence_epochs}
    assert epochs["evt-010-authorised-comparison"].action_event_index == 10
    assert epochs["evt-021-draft-recommendation"].action_event_index == 21
    assert {epoch.audit_event_id for epoch in epochs.values()} == {asteria.AUDIT_EVENT_ID}


# ---------------------------------------------------------------------------
# Recomputation


def test_derive_differences_is_empty_for_a_built_bundle(source: WorldSource) -> None:
    public, evaluator = build_benchmark(source)
    assert derive_differences(public, evaluator) == []


def test_derive_differences_finds_a_tampered_truth_row(source: WorldSource) -> None:
    public, evaluator = build_benchmark(source)
    truth = list(evaluator.truth)
    truth[0] = truth[0].model_copy(update={"decision_at_audit": "allow"})
    tampered = evaluator.model_copy(update={"truth": tuple(truth)})
    assert derive_differences(public, tampered) == [
        "authority_truth.jsonl: evt-010-authorised-comparison: decision_at_audit "
        "shipped 'allow', derived 'deny'"
    ]


def test_derive_differences_finds_missing_and_stray_projection_rows(source: WorldSource) -> None:
    public, evaluator = build_benchmark(source)
    stray = evaluator.expected_side_effects[0].model_copy(update={"action_event_id": "evt-999"})
    tampered = evaluator.model_copy(
        update={"expected_side_effects": (*evaluator.expected_side_effects[1:], stray)}
    )
    assert derive_differences(public, tampered) == [
        "expected_side_effects.jsonl: evt-010-authorised-comparison: no shipped row",
        "expected_side_effects.jsonl: evt-999: shipped row is not an action event of the stream",
    ]


def test_derive_differences_follows_the_shipped_bindings(source: WorldSource) -> None:
    # A well-formed binding edited after the build changes the recomputed truth.
    public, evaluator = build_benchmark(source)
    rebound: list[CanonicalBinding] = list(evaluator.bindings.bindings)
    rebound[0] = rebound[0].model_copy(update={"originating_principal_id": asteria.LEGAL})
    tampered = evaluator.model_copy(
        update={"bindings": evaluator.bindings.model_copy(update={"bindings": tuple(rebound)})}
    )
    differences = derive_differences(public, tampered)
    assert (
        "authority_truth.jsonl: evt-010-authorised-comparison: decision_at_action "
        "shipped 'allow', derived 'deny'"
    ) in differences


def test_derive_differences_refuses_shipped_bindings_that_break_the_boundary(
    source: WorldSource,
) -> None:
    public, evaluator = build_benchmark(source)
    rebound = list(evaluator.bindings.bindings)
    rebound[0] = rebound[0].model_copy(update={"accountable_owner_chain": (asteria.ASTERIA,)})
    tampered = evaluator.model_copy(
        update={"bindings": evaluator.bindings.model_copy(update={"bindings": tuple(rebound)})}
    )
    with pytest.raises(AgentbenchError) as caught:
        derive_differences(public, tampered)
    assert caught.value.code == "fabricated_owner_chain"
