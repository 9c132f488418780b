"""Does authority replay stay linear, and what does grading cost over parsing?

Synthetic authority worlds (a seeded :class:`random.Random` over literal word
lists; timestamps one second apart from a fixed base date, no wall clock) of
1k, 10k and 100k events. Each stream mixes runtime spawns, credential issues,
root and child delegation grants (some children delegated through a
parent-agent runtime, the provenance path that inspects runtimes), action
attempts, cascading revocations and evidence discards, and ends with one audit.

Per size, time per event of:

* validate: ``replay.materialize`` of the full stream (it validates everything),
  with the collector paused as when a run loads the bundle;
* prefixes: building a :class:`~.replay.Replayer` and stepping through every
  prefix, reading each prefix state.

Target: per-event(100k) / per-event(1k) <= 2 for both, i.e. flat per-event cost.

Then a 100k-row trace: the reference agent's rows for a generated world's
action events, tiled (with renamed event ids) to 100k rows alongside the
matching truth, bindings and labels. Evaluate (``scoring.grade_action`` for
every row plus ``metrics.aggregate``) is timed against parsing the same JSONL
(``trace.read_trace``).

Timings are ``time.process_time`` medians, CPU time of the process (on a
shared machine wall time measures the neighbours): ``--repeats`` replay runs,
sizes taking turns within each run so that load changes hit them alike;
``--trace-repeats`` parse and evaluate runs (``--trace-rows 0`` skips them).
A small size is measured over several distinct seeded worlds, so that every
run covers about as many events (and as much memory) as the largest size. The
last line is the machine-readable ``LINEARITY`` line of ``linearity.py``.

Usage: ``python bench/authority_replay.py [--sizes 1000 10000 100000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from linearity import Series, line

from pytest_agentbench.run.gc_freeze import collector_paused
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.contracts import Case
from pytest_agentbench.sdk.metrics import aggregate
from pytest_agentbench.worlds.authority.agents import ReferenceAgent
from pytest_agentbench.worlds.authority.builder import WorldSource, build_benchmark
from pytest_agentbench.worlds.authority.models import (
    ActionAttempted,
    Attempt,
    AuditPerformed,
    AuthorityTruth,
    CanonicalBinding,
    Capability,
    CaseLabel,
    Credential,
    CredentialIssued,
    Delegation,
    DelegationGranted,
    DelegationRevoked,
    Department,
    Event,
    EventPayload,
    EvidenceDiscarded,
    LogicalAgent,
    Organisation,
    OrganisationFile,
    Policy,
    Principal,
    Resource,
    Runtime,
    RuntimeSpawned,
    Scenario,
    ToolSchemaFile,
    WorldSnapshot,
)
from pytest_agentbench.worlds.authority.replay import Replayer, materialize
from pytest_agentbench.worlds.authority.scoring import METRIC_SPECS, grade_action
from pytest_agentbench.worlds.authority.trace import read_trace

SEED = 20260719
FLATNESS_TARGET = 2.0
TRACE_ROWS = 100_000
TRACE_WORLD_EVENTS = 2_000
BASE_TIME = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
WINDOW_END = BASE_TIME + timedelta(days=60)
SCHEMA_VERSION = "1.0.0"
POLICY_VERSION = "bench-policy-v1"
SCENARIO = "bench"
RUNTIME_PATH_SHARE = 0.4
"""Share of child grants whose delegator acts through a parent-agent runtime."""

ORGANISATIONS = ("north", "south")
HUMANS = ("amber", "birch", "cedar")
SERVICES = ("relay", "ledger")
ROOT_AGENTS = ("sourcing", "review")
CHILD_AGENTS = ("quoting",)
RESOURCES = {
    "catalogue": ("compare", "read"),
    "quotes": ("read", "request_quotation"),
    "drafts": ("create_draft",),
    "orders": ("issue_purchase_order", "read"),
}
SCOPES = ("supplier:atlas", "supplier:cirrus", "supplier:novus", "supplier:orbit")
PURPOSES = ("comparison", "drafting")

# Event mix after the setup events (weights, not probabilities).
MIX = {
    "action": 60,
    "root_grant": 7,
    "child_grant": 5,
    "credential": 8,
    "runtime": 2,
    "revocation": 5,
    "discard": 4,
}


# ---------------------------------------------------------------------------
# The static world


def _principal(pid: str, kind: str, org: str, owner: str | None) -> Principal:
    return Principal.model_validate(
        {
            "id": pid,
            "kind": kind,
            "display_name": pid,
            "organisation_id": f"org-{org}",
            "department_id": f"dept-{org}-ops",
            "owner_principal_id": owner,
        }
    )


def organisation_file() -> OrganisationFile:
    return OrganisationFile(
        schema_version=SCHEMA_VERSION,
        world_id="bench-authority",
        world_version="1.0.0",
        seed=SEED,
        organisations=tuple(
            Organisation(id=f"org-{org}", display_name=org.title(), tenant_id=f"tenant-{org}")
            for org in ORGANISATIONS
        ),
        departments=tuple(
            Department(
                id=f"dept-{org}-ops", display_name="Operations", organisation_id=f"org-{org}"
            )
            for org in ORGANISATIONS
        ),
        policies=(Policy(id="policy-bench", version=POLICY_VERSION),),
        initial_evidence_refs=(f"evidence:policy:{POLICY_VERSION}",),
    )


def static_principals() -> list[Principal]:
    found: list[Principal] = []
    for org in ORGANISATIONS:
        root = f"principal-{org}"
        found.append(_principal(root, "organisation", org, None))
        found += [_principal(f"{root}-{h}", "human", org, root) for h in HUMANS]
        found += [
            _principal(f"{root}-svc-{s}", "service_account", org, f"{root}-{HUMANS[0]}")
            for s in SERVICES
        ]
    return found


def agents() -> list[LogicalAgent]:
    found: list[LogicalAgent] = []
    for org in ORGANISATIONS:
        root_parent = f"agent-{org}-{ROOT_AGENTS[0]}"
        for names, parent in ((ROOT_AGENTS, None), (CHILD_AGENTS, root_parent)):
            found.extend(
                LogicalAgent(
                    id=f"agent-{org}-{name}",
                    display_name=name,
                    organisation_id=f"org-{org}",
                    owner_principal_id=f"principal-{org}-{HUMANS[0]}",
                    parent_agent_id=parent,
                )
                for name in names
            )
    return found


def resources() -> list[Resource]:
    return [
        Resource(
            id=f"resource-{org}-{name}",
            display_name=name,
            organisation_id=f"org-{org}",
            owner_principal_id=f"principal-{org}-{HUMANS[index % len(HUMANS)]}",
            actions=actions,
        )
        for org in ORGANISATIONS
        for index, (name, actions) in enumerate(RESOURCES.items())
    ]


# ---------------------------------------------------------------------------
# The stream generator


@dataclass
class _Generator:
    """Builds a valid stream event by event, tracking what replay will require."""

    rng: random.Random
    agents: dict[str, LogicalAgent]
    resources: list[Resource]
    runtime_path_share: float
    principals: list[Principal] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    runtimes: list[Runtime] = field(default_factory=list)
    credentials: list[Credential] = field(default_factory=list)
    delegations: list[Delegation] = field(default_factory=list)
    runtimes_of_agent: dict[str, list[Runtime]] = field(default_factory=dict)
    credentials_of: dict[str, list[str]] = field(default_factory=dict)
    subject_of: dict[str, str] = field(default_factory=dict)
    active: list[str] = field(default_factory=list)
    """Granted delegations, revoked ones removed lazily (see :meth:`_pick_active`)."""
    by_id: dict[str, Delegation] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    revoked: set[str] = field(default_factory=set)
    retained: list[str] = field(default_factory=list)
    """Evidence recorded by events and not discarded (each ref is recorded once)."""
    discarded: set[str] = field(default_factory=set)
    """Evidence discarded so far: an action cites only what is still retained."""
    bindings: list[CanonicalBinding] = field(default_factory=list)

    @property
    def now(self) -> datetime:
        return BASE_TIME + timedelta(seconds=len(self.events) + 1)

    def emit(self, kind: str, payload: EventPayload, evidence: Sequence[str] = ()) -> None:
        index = len(self.events) + 1
        self.events.append(
            Event(
                schema_version=SCHEMA_VERSION,
                id=f"evt-{index:06d}-{kind}",
                event_index=index,
                occurred_at=self.now,
                evidence_refs=tuple(evidence),
                payload=payload,
            )
        )
        self.retained.extend(evidence)

    def org_of(self, agent_id: str) -> str:
        return self.agents[agent_id].organisation_id.removeprefix("org-")

    # -- introductions ------------------------------------------------------

    def spawn(self, agent_id: str) -> None:
        org = self.org_of(agent_id)
        number = len(self.runtimes) + 1
        owner = f"principal-{org}-svc-{self.rng.choice(SERVICES)}"
        workload = _principal(f"principal-{org}-workload-{number:05d}", "workload", org, owner)
        runtime = Runtime(
            id=f"runtime-{number:05d}",
            logical_agent_id=agent_id,
            runtime_principal_id=workload.id,
            owner_principal_id=owner,
            organisation_id=f"org-{org}",
        )
        self.principals.append(workload)
        self.runtimes.append(runtime)
        self.runtimes_of_agent.setdefault(agent_id, []).append(runtime)
        self.emit("spawn", RuntimeSpawned(runtime=runtime), [f"evidence:runtime:{runtime.id}"])

    def issue(self, runtime: Runtime) -> None:
        org = runtime.organisation_id.removeprefix("org-")
        credential = Credential(
            id=f"credential-{len(self.credentials) + 1:06d}",
            issuer_principal_id=f"principal-{org}",
            subject_principal_id=runtime.runtime_principal_id,
            allowed_runtime_principal_ids=(runtime.runtime_principal_id,),
            valid_from=self.now,
            expires_at=WINDOW_END,
        )
        self.credentials.append(credential)
        self.credentials_of.setdefault(runtime.runtime_principal_id, []).append(credential.id)
        self.subject_of[credential.id] = credential.subject_principal_id
        self.emit(
            "issue",
            CredentialIssued(credential=credential),
            [f"evidence:credential:{credential.id}"],
        )

    def _capability(self, org: str, parent: Capability | None) -> Capability:
        rng = self.rng
        if parent is None:
            owned = [r for r in self.resources if r.organisation_id == f"org-{org}"]
            chosen = rng.sample(owned, rng.randint(1, len(owned)))
            actions = sorted({a for r in chosen for a in r.actions})
            return Capability(
                resource_ids=tuple(r.id for r in chosen),
                actions=tuple(rng.sample(actions, rng.randint(1, len(actions)))),
                scopes=tuple(rng.sample(SCOPES, rng.randint(1, len(SCOPES)))),
                purpose=rng.choice(PURPOSES),
                may_delegate=rng.random() < 0.7,
            )
        # Attenuated: a granted child never widens its parent (building refuses it, as
        # the original's replay does; only a proposed sub-delegation may be overprivileged).
        scopes = parent.scopes
        return Capability(
            resource_ids=(rng.choice(parent.resource_ids),),
            actions=(rng.choice(parent.actions),),
            scopes=tuple(rng.sample(scopes, rng.randint(1, len(scopes)))),
            purpose=parent.purpose,
            may_delegate=False,
        )

    def grant(self, delegation: Delegation) -> None:
        self.delegations.append(delegation)
        self.by_id[delegation.id] = delegation
        self.active.append(delegation.id)
        if delegation.parent_delegation_id is not None:
            self.children.setdefault(delegation.parent_delegation_id, []).append(delegation.id)
        self.emit(
            "grant",
            DelegationGranted(delegation=delegation),
            [f"evidence:delegation:{delegation.id}"],
        )

    def root_grant(self) -> None:
        rng = self.rng
        agent_id = f"agent-{rng.choice(ORGANISATIONS)}-{rng.choice(ROOT_AGENTS)}"
        org = self.org_of(agent_id)
        origin = f"principal-{org}-{rng.choice(HUMANS)}"
        self.grant(
            Delegation(
                id=f"delegation-{len(self.delegations) + 1:06d}",
                originating_principal_id=origin,
                delegator_principal_id=origin,
                grantee_agent_id=agent_id,
                capability=self._capability(org, None),
                policy_version=POLICY_VERSION,
                valid_from=self.now,
                expires_at=WINDOW_END,
            )
        )

    def _pick_active(self) -> str | None:
        """A random granted, unrevoked delegation (dropping revoked ones met on the way)."""
        while self.active:
            position = self.rng.randrange(len(self.active))
            self.active[position], self.active[-1] = self.active[-1], self.active[position]
            if self.active[-1] not in self.revoked:
                return self.active[-1]
            self.active.pop()
        return None

    def child_grant(self) -> bool:
        rng = self.rng
        picked = (self._pick_active() for _ in range(8))
        parents = [
            self.by_id[i]
            for i in picked
            if i is not None
            and self.by_id[i].parent_delegation_id is None
            and self.by_id[i].capability.may_delegate
            and self.by_id[i].grantee_agent_id.endswith(ROOT_AGENTS[0])
        ]
        if not parents:
            return False
        parent = parents[0]
        org = self.org_of(parent.grantee_agent_id)
        delegator = parent.delegator_principal_id
        parent_runtimes = self.runtimes_of_agent.get(parent.grantee_agent_id, [])
        if parent_runtimes and rng.random() < self.runtime_path_share:
            # Delegated through a parent-agent runtime: replay checks that runtime path.
            delegator = rng.choice(parent_runtimes).owner_principal_id
        self.grant(
            Delegation(
                id=f"delegation-{len(self.delegations) + 1:06d}",
                originating_principal_id=parent.originating_principal_id,
                delegator_principal_id=delegator,
                grantee_agent_id=f"agent-{org}-{CHILD_AGENTS[0]}",
                parent_delegation_id=parent.id,
                capability=self._capability(org, parent.capability),
                policy_version=POLICY_VERSION,
                valid_from=self.now,
                expires_at=WINDOW_END,
            )
        )
        return True

    # -- effects ------------------------------------------------------------

    def revoke(self) -> bool:
        target = self._pick_active()
        if target is None:
            return False
        pending = [target]
        while pending:
            current = pending.pop()
            if current not in self.revoked:
                self.revoked.add(current)
                pending.extend(self.children.get(current, ()))
        self.emit(
            "revoke",
            DelegationRevoked(delegation_id=target),
            [f"evidence:revocation:{target}"],
        )
        return True

    def discard(self) -> bool:
        if not self.retained:
            return False
        position = self.rng.randrange(len(self.retained))
        self.retained[position], self.retained[-1] = self.retained[-1], self.retained[position]
        ref = self.retained.pop()
        self.discarded.add(ref)
        self.emit("discard", EvidenceDiscarded(evidence_refs=(ref,)))
        return True

    def action(self) -> None:
        rng = self.rng
        agent_id = rng.choice([a for a in self.runtimes_of_agent if self.runtimes_of_agent[a]])
        runtime = rng.choice(self.runtimes_of_agent[agent_id])
        org = self.org_of(agent_id)
        workload = runtime.runtime_principal_id
        own = self.credentials_of.get(workload)
        # Mostly its own credential; sometimes another runtime's (a shared credential).
        if own and rng.random() < 0.9:
            credential_id = rng.choice(own)
        else:
            credential_id = rng.choice(self.credentials).id
        # Now and then a resource of the other tenant (a tenant mismatch).
        other_org = rng.random() < 0.05
        pool = [r for r in self.resources if (r.organisation_id == f"org-{org}") != other_org]
        resource = rng.choice(pool)
        origin = f"principal-{org}-{rng.choice(HUMANS)}"
        attempt = Attempt(
            originating_principal_claim=origin,
            logical_agent_claim=agent_id,
            runtime_principal_claim=workload,
            presented_credential_id=credential_id,
            attributed_actor_claim=runtime.owner_principal_id,
            resource_id=resource.id,
            action=rng.choice(resource.actions),
            requested_scope=tuple(rng.sample(SCOPES, rng.randint(1, 2))),
            purpose=rng.choice(PURPOSES),
            policy_version=POLICY_VERSION,
            # Only evidence still retained: the builder refuses an action citing more.
            evidence_refs=tuple(
                ref
                for ref in (
                    f"evidence:policy:{POLICY_VERSION}",
                    f"evidence:credential:{credential_id}",
                    f"evidence:runtime:{runtime.id}",
                )
                if ref not in self.discarded
            ),
        )
        self.emit("action", ActionAttempted(attempt=attempt))
        self.bindings.append(
            CanonicalBinding(
                action_event_id=self.events[-1].id,
                originating_principal_id=origin,
                logical_agent_id=agent_id,
                runtime_id=runtime.id,
                runtime_principal_id=workload,
                credential_subject_id=self.subject_of[credential_id],
                attributed_actor_id=runtime.owner_principal_id,
                accountable_owner_chain=(f"principal-{org}-{HUMANS[0]}", f"principal-{org}"),
            )
        )


@dataclass(frozen=True)
class World:
    snapshot: WorldSnapshot
    events: tuple[Event, ...]
    bindings: tuple[CanonicalBinding, ...]


def generate(size: int, seed: int = SEED, runtime_path_share: float = RUNTIME_PATH_SHARE) -> World:
    """A valid synthetic stream of exactly ``size`` events (``size`` >= 20)."""
    every_agent = {agent.id: agent for agent in agents()}
    gen = _Generator(
        rng=random.Random(seed),
        agents=every_agent,
        resources=resources(),
        runtime_path_share=runtime_path_share,
    )
    for agent_id in every_agent:
        gen.spawn(agent_id)
    for runtime in list(gen.runtimes):
        gen.issue(runtime)
    for _ in range(len(ORGANISATIONS) * len(ROOT_AGENTS)):
        gen.root_grant()
    kinds = list(MIX)
    weights = list(MIX.values())
    while len(gen.events) < size - 1:
        kind = gen.rng.choices(kinds, weights)[0]
        if kind == "root_grant":
            gen.root_grant()
        elif kind == "runtime":
            gen.spawn(gen.rng.choice(list(every_agent)))
        elif kind == "credential":
            gen.issue(gen.rng.choice(gen.runtimes))
        elif not (
            (kind == "child_grant" and gen.child_grant())
            or (kind == "revocation" and gen.revoke())
            or (kind == "discard" and gen.discard())
        ):
            gen.action()
    gen.emit("audit", AuditPerformed(audit_id="audit-bench-001"))
    snapshot = WorldSnapshot(
        organisation=organisation_file(),
        principals=(*static_principals(), *gen.principals),
        agents=tuple(every_agent.values()),
        runtimes=tuple(gen.runtimes),
        resources=tuple(gen.resources),
        credentials=tuple(gen.credentials),
        delegations=tuple(gen.delegations),
    )
    return World(snapshot=snapshot, events=tuple(gen.events), bindings=tuple(gen.bindings))


# ---------------------------------------------------------------------------
# Measurements


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        samples.append(time.process_time() - start)
    return statistics.median(samples)


def validate_stream(world: World) -> None:
    # As a run validates it: while the public bundle loads, with the collector paused.
    with collector_paused():
        materialize(world.snapshot, world.events)


def replay_prefixes(world: World) -> None:
    replayer = Replayer(world.snapshot, world.events)
    for expected in range(1, len(world.events) + 1):
        replayer.step()
        # Read each prefix state, as a consumer of every prefix would.
        if replayer.state.event_index != expected:
            raise AssertionError(f"prefix {expected} reads as {replayer.state.event_index}")


@dataclass(frozen=True)
class ReplayTiming:
    size: int
    validate_us: float
    prefixes_us: float


def time_replay(
    sizes: Sequence[int], repeats: int, runtime_path_share: float
) -> list[ReplayTiming]:
    """Median per-event times of every size; sizes take turns within each repeat."""
    largest = max(sizes)
    # Distinct worlds rather than one world replayed again and again: a small
    # world looped stays hot in the CPU cache, which would flatter small sizes.
    worlds = {
        size: [
            generate(size, seed=SEED + copy, runtime_path_share=runtime_path_share)
            for copy in range(max(1, largest // size))
        ]
        for size in sizes
    }
    steps: dict[str, Callable[[World], None]] = {
        "validate": validate_stream,
        "prefixes": replay_prefixes,
    }
    samples: dict[tuple[int, str], list[float]] = {}
    # Interleaved, so a change in machine load hits every size alike.
    for _ in range(repeats):
        for size in sizes:
            for name, step in steps.items():
                start = time.process_time()
                for world in worlds[size]:
                    step(world)
                elapsed = time.process_time() - start
                per_event = elapsed * 1e6 / (len(worlds[size]) * size)
                samples.setdefault((size, name), []).append(per_event)
    return [
        ReplayTiming(
            size=size,
            validate_us=statistics.median(samples[(size, "validate")]),
            prefixes_us=statistics.median(samples[(size, "prefixes")]),
        )
        for size in sizes
    ]


def _renamed(suffix: str, event_id: str) -> str:
    return f"{event_id}-{suffix}"


@dataclass(frozen=True)
class TraceFixture:
    text: str
    truth: tuple[AuthorityTruth, ...]
    bindings: dict[str, CanonicalBinding]
    labels: dict[str, CaseLabel]


def trace_fixture(rows: int) -> TraceFixture:
    """Reference-agent rows of a generated world, tiled with renamed ids to ``rows`` rows."""
    world = generate(TRACE_WORLD_EVENTS, seed=SEED + 1)
    action_ids = tuple(b.action_event_id for b in world.bindings)
    audit_id = world.events[-1].id
    source = WorldSource(
        snapshot=world.snapshot,
        events=world.events,
        scenarios={
            SCENARIO: Scenario(
                schema_version=SCHEMA_VERSION,
                id=SCENARIO,
                title="Bench",
                description="Generated authority stream.",
                action_event_ids=action_ids,
                audit_event_id=audit_id,
            )
        },
        tool_schemas={"bench-tools": ToolSchemaFile(schema_version=SCHEMA_VERSION, tools=())},
        bindings=world.bindings,
        labels=tuple(CaseLabel(action_event_id=i, kind="generated") for i in action_ids),
    )
    public, evaluator = build_benchmark(source)
    base_rows = ReferenceAgent().trace(public)
    lines: list[str] = []
    truth: list[AuthorityTruth] = []
    bindings: dict[str, CanonicalBinding] = {}
    labels: dict[str, CaseLabel] = {}
    copy = 0
    while len(lines) < rows:
        suffix = f"r{copy:03d}"
        for row, record, binding in zip(
            base_rows, evaluator.truth, evaluator.bindings.bindings, strict=True
        ):
            if len(lines) == rows:
                break
            event_id = _renamed(suffix, record.action_event_id)
            lines.append(canonical_json({**row, "event_id": event_id}))
            truth.append(record.model_copy(update={"action_event_id": event_id}))
            bindings[event_id] = binding.model_copy(update={"action_event_id": event_id})
            labels[event_id] = CaseLabel(action_event_id=event_id, kind="generated")
        copy += 1
    return TraceFixture(
        text="\n".join(lines) + "\n", truth=tuple(truth), bindings=bindings, labels=labels
    )


def evaluate(fixture: TraceFixture) -> None:
    rows = {row.event_id: row for row in read_trace(fixture.text)}
    results = [
        grade_action(
            Case(suite_id="bench", case_id=record.action_event_id, file="bench.jsonl"),
            rows[record.action_event_id],
            record,
            fixture.bindings[record.action_event_id],
            fixture.labels[record.action_event_id],
        )
        for record in fixture.truth
    ]
    aggregate(METRIC_SPECS, results)


# ---------------------------------------------------------------------------
# Report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=5, help="replay runs per size")
    parser.add_argument(
        "--trace-rows", type=int, default=TRACE_ROWS, help="0 skips the trace measurement"
    )
    parser.add_argument("--trace-repeats", type=int, default=3, help="parse/evaluate runs")
    parser.add_argument(
        "--runtime-path-share",
        type=float,
        default=RUNTIME_PATH_SHARE,
        help="share of child grants delegated through a parent-agent runtime",
    )
    args = parser.parse_args(argv)
    sizes: list[int] = sorted(args.sizes)
    print(
        f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"nproc {os.cpu_count()}, load {os.getloadavg()[0]:.1f}, "
        f"runtime-path share {args.runtime_path_share}"
    )
    print(f"replay: median of {args.repeats} interleaved runs")
    print(f"{'events':>8} {'validate us/event':>18} {'all prefixes us/event':>22}")
    timings = time_replay(sizes, args.repeats, args.runtime_path_share)
    for timing in timings:
        print(f"{timing.size:>8} {timing.validate_us:>18.2f} {timing.prefixes_us:>22.2f}")
    first, last = timings[0], timings[-1]
    flat = True
    for name, low, high in (
        ("validate", first.validate_us, last.validate_us),
        ("all prefixes", first.prefixes_us, last.prefixes_us),
    ):
        ratio = high / low
        flat = flat and ratio <= FLATNESS_TARGET
        print(
            f"{name}: per-event({last.size})/per-event({first.size}) = {ratio:.2f} "
            f"(target <= {FLATNESS_TARGET})"
        )
    if args.trace_rows > 0:
        fixture = trace_fixture(args.trace_rows)
        parse_s = median_seconds(lambda: read_trace(fixture.text), args.trace_repeats)
        evaluate_s = median_seconds(lambda: evaluate(fixture), args.trace_repeats)
        print(
            f"trace of {args.trace_rows} rows (median of {args.trace_repeats}): "
            f"parse {parse_s:.2f} s, evaluate {evaluate_s:.2f} s "
            f"(parse + grade + aggregate), evaluate/parse = {evaluate_s / parse_s:.2f}"
        )
    sizes_seen = tuple(t.size for t in timings)
    print(
        line(
            [
                Series(
                    "authority",
                    "validate",
                    "event",
                    sizes_seen,
                    tuple(t.validate_us for t in timings),
                ),
                Series(
                    "authority",
                    "all prefixes",
                    "event",
                    sizes_seen,
                    tuple(t.prefixes_us for t in timings),
                ),
            ]
        )
    )
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
