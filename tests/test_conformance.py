"""What every world kind owes the core, checked against each of its suites.

Runs the conformance kit (:mod:`pytest_agentbench.testing`) and the deeper
interactive checks for every world kind the project registers itself (under
``pytest_agentbench.worlds.``) plus the demo worlds of the core's own tests, on
each packaged suite of that kind (a demo world on a suite written into
``tmp_path``). An installed outside world answers to its own tests, through
the same kit: it is not checked here, and cannot make this file fail.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import shutil
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from pytest_agentbench.run.session import LoadedSuite, SuiteLoader
from pytest_agentbench.sdk import hookspecs
from pytest_agentbench.sdk.canonical import canonical_json
from pytest_agentbench.sdk.contracts import Case, CaseResult, FailureClass, Outcome
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.sdk.packaged import data_root, packaged_suites
from pytest_agentbench.sdk.registry import (
    LazyWorld,
    WorldRegistry,
    _qualified,
    installed_registry,
)
from pytest_agentbench.sdk.runner import run_case
from pytest_agentbench.sdk.suite import Suite, load_suite_config
from pytest_agentbench.sdk.tools import (
    AnyReceipt,
    Receipt,
    ToolAgent,
    ToolCallError,
    ToolSession,
    load_receipt,
    session_receipts,
)
from pytest_agentbench.sdk.world import accepted_protocols
from pytest_agentbench.testing import CHECK_NAMES, SuiteUnderTest, run_check
from tests import demo_world

DEMO = "demo"
DEMO_TOOLS = "demo-tools"
DEMO_KINDS = (DEMO, DEMO_TOOLS)


def build_registry() -> WorldRegistry:
    return installed_registry(demo_world)


REGISTRY = build_registry()


class Target(NamedTuple):
    kind: str
    suite_id: str
    """A packaged suite id, or ``""`` for the demo suite written per test."""


def _packaged_by_kind() -> dict[str, list[str]]:
    by_kind: dict[str, list[str]] = {}
    for suite_id, root in sorted(packaged_suites().items()):
        # suites-full/ holds the same world kinds at scale; their small suites stand for them.
        if root.parent.name != "suites":
            continue
        config = load_suite_config(root / SUITE_FILE, f"suites/{suite_id}/{SUITE_FILE}")
        by_kind.setdefault(config.world, []).append(suite_id)
    return by_kind


def _own_kinds() -> list[str]:
    """Kinds registered by the project itself, under ``pytest_agentbench.worlds.``."""
    own = []
    for entry_point in entry_points(group=hookspecs.ENTRY_POINT_GROUP):
        if entry_point.value.startswith("pytest_agentbench.worlds."):
            own.extend(world.kind for world in entry_point.load().pytest_agentbench_world_kinds())
    return sorted(own)


PACKAGED = _packaged_by_kind()
OWN_KINDS = _own_kinds()
TARGETS = [Target(DEMO, ""), Target(DEMO_TOOLS, "")] + [
    Target(kind, suite_id) for kind in OWN_KINDS for suite_id in PACKAGED.get(kind, [])
]


@pytest.fixture(params=TARGETS, ids=[f"{t.kind}:{t.suite_id or 'written'}" for t in TARGETS])
def target(request: pytest.FixtureRequest) -> Target:
    chosen: Target = request.param
    return chosen


def place_suite(target: Target, base: Path, *, sealed_oracle: bool = False) -> tuple[Path, Path]:
    """(rootpath, suite folder): the written demo suite, or a copy of a packaged one.

    Copies keep the suite's oracle at the same relative place, so tampering
    with them never touches the shipped files.
    """
    if target.kind == DEMO:
        return base, demo_world.write_demo_suite(
            base, controls=demo_world.DEMO_CONTROLS, sealed_oracle=sealed_oracle
        )
    if target.kind == DEMO_TOOLS:
        return base, demo_world.write_demo_suite(
            base,
            "demo-tools-suite",
            controls=demo_world.DEMO_TOOLS_CONTROLS,
            world=DEMO_TOOLS,
            sealed_oracle=sealed_oracle,
        )
    source = packaged_suites()[target.suite_id]
    source_oracle = packaged_oracle_root(target.suite_id)
    suite_dir = base / "suites" / target.suite_id
    shutil.copytree(source, suite_dir)
    oracle_rel = os.path.relpath(source_oracle, source)
    oracle_dir = (suite_dir / oracle_rel).resolve()
    assert oracle_dir.is_relative_to(base), "the oracle must sit beside the suites folder"
    if source_oracle.is_dir():
        shutil.copytree(source_oracle, oracle_dir)
    return base, suite_dir


@functools.cache
def packaged_oracle_root(suite_id: str) -> Path:
    """Where a packaged suite's oracle sits: read from the shipped suite, which no test
    changes, once per suite rather than once per copy (a load parses the whole suite)."""
    return FreshLoader(data_root()).load(packaged_suites()[suite_id]).suite.oracle_root


class FreshLoader:
    """A fresh loader each time, so nothing is served from a previous load's cache."""

    def __init__(self, rootpath: Path) -> None:
        self.rootpath = rootpath

    def load(self, suite_dir: Path) -> LoadedSuite:
        return SuiteLoader(REGISTRY, self.rootpath).load(suite_dir)


@pytest.fixture
def placed(target: Target, tmp_path: Path) -> tuple[Path, Path]:
    return place_suite(target, tmp_path)


def test_registry_holds_the_demo_world_and_every_entry_point_world() -> None:
    assert set(DEMO_KINDS) <= set(REGISTRY.kinds())
    for kind in REGISTRY.kinds():
        world = REGISTRY.get(kind)
        assert world.kind == kind
        assert isinstance(world.adapter_protocol, type)


def test_every_own_world_kind_ships_a_suite() -> None:
    """Only the project's own kinds: an installed outside world answers to its own tests."""
    assert OWN_KINDS
    missing = [kind for kind in OWN_KINDS if kind not in PACKAGED]
    assert not missing, f"world kinds with no packaged suite to check: {missing}"


# xdist equality runs two pytest sessions per suite (a serial one and one on two workers,
# 5 CPU-seconds): it is asked of the interactive demo world alone, whose suite a pytest run
# loads through ``-p tests.demo_world`` and whose receipts carry the timings the check must
# set aside. Whole reports of the authority and evidence-binding suites are compared under
# -n 2 by tests/html/test_plugin_html.py, the other worlds' suites by their own tests, and
# the plain demo world's metrics by tests/test_plugin_xdist.py.
KNOWN_GAPS = {
    ("toolgrammar", "tamper_refusals"): (
        "manifest.json records each world's per-table digests, which the world reads only "
        "to word a world_digest_mismatch: a changed table digest beside an intact world "
        "digest is accepted"
    ),
}
"""Checks a built-in world is known to fail, each why (strict: fixing it fails the xfail)."""

KIT_CASES = [
    pytest.param(
        target,
        check,
        id=f"{target.kind}:{target.suite_id or 'written'}:{check}",
        marks=[pytest.mark.xfail(reason=KNOWN_GAPS[target.kind, check], strict=True)]
        if (target.kind, check) in KNOWN_GAPS
        else [],
    )
    for target in TARGETS
    for check in CHECK_NAMES
    if check != "xdist_equality" or target.kind == DEMO_TOOLS
]


@pytest.fixture(scope="module")
def suites_under_test(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[Target], SuiteUnderTest]:
    """One suite under test per target, shared by its checks as ``check_world`` shares one
    among a suite's checks: the reference run two checks read is made once per target.
    (No check changes the suite in place: what it tampers with is a copy.)"""
    made: dict[Target, SuiteUnderTest] = {}

    def under_test(target: Target) -> SuiteUnderTest:
        if target not in made:
            base = tmp_path_factory.mktemp(f"kit-{target.kind}")
            _, suite_dir = place_suite(target, base / "placed", sealed_oracle=True)
            made[target] = SuiteUnderTest(
                suite_dir, registry=REGISTRY, workdir=base / "kit", plugins=("tests.demo_world",)
            )
        return made[target]

    return under_test


@pytest.mark.parametrize(("target", "check"), KIT_CASES)
def test_the_world_passes_the_conformance_kit(
    target: Target, check: str, suites_under_test: Callable[[Target], SuiteUnderTest]
) -> None:
    outcome = run_check(check, suites_under_test(target))
    if outcome.status == "not_applicable":
        pytest.skip(outcome.detail)
    assert outcome.status == "passed", outcome.detail


def test_an_unexpected_public_file_is_refused(placed: tuple[Path, Path]) -> None:
    rootpath, suite_dir = placed
    (suite_dir / "answers_for_the_agent.jsonl").write_text('{"id": "x"}\n')
    with pytest.raises(AgentbenchError) as refused:
        FreshLoader(rootpath).load(suite_dir)
    assert refused.value.code


# Interactive worlds: every world that accepts the generic ToolAgent protocol.


class Probe:
    """A generic ToolAgent that records what it was handed."""

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.tasks: list[Any] = []
        self.sessions: list[ToolSession] = []

    def solve(self, task: dict[str, Any], session: ToolSession) -> Any:
        self.tasks.append(task)
        self.sessions.append(session)
        with contextlib.suppress(ToolCallError):
            session.call("no-such-tool-in-any-world", {})
        if self.behaviour == "raise":
            raise RuntimeError("probe gives up")
        return {"probe": object()}


def placed_if_interactive(target: Target, tmp_path: Path) -> tuple[Path, Path]:
    """The target's suite placed, if its registered world kind is interactive: a suite of
    a kind that is not is neither copied nor loaded."""
    if ToolAgent not in accepted_protocols(REGISTRY.get(target.kind)):
        pytest.skip(f"world kind {target.kind!r} is not interactive")
    return place_suite(target, tmp_path)


def interactive(target: Target, placed: tuple[Path, Path]) -> LoadedSuite:
    rootpath, suite_dir = placed
    loaded = FreshLoader(rootpath).load(suite_dir)
    assert ToolAgent in accepted_protocols(loaded.world), f"{target.kind} is interactive"
    return loaded


class Recording:
    """Wraps a ToolAgent, recording the sessions it is handed."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.sessions: list[ToolSession] = []

    def solve(self, task: dict[str, Any], session: ToolSession) -> Any:
        self.sessions.append(session)
        return self.agent.solve(task, session)


def grade_outcome(loaded: LoadedSuite, outcome: Outcome) -> CaseResult:
    world, suite = loaded.world, loaded.suite
    case = world.cases(suite)[0]
    return world.evaluate(suite, case, outcome, world.load_oracle(suite))


def run_probe(loaded: LoadedSuite, behaviour: str) -> tuple[Probe, Outcome]:
    world, suite = loaded.world, loaded.suite
    case = world.cases(suite)[0]
    probe = Probe(behaviour)
    outcome = run_case(world, suite, case, world.public_view(suite, case), probe, timeout=60)
    return probe, outcome


def case_receipts(outcome: Outcome) -> tuple[AnyReceipt, tuple[Receipt, ...]]:
    """The case's receipt (digests checked) and the session receipts it stands for, in order."""
    assert outcome.receipt is not None, "an interactive case carries its receipt"
    receipt = load_receipt(outcome.receipt)
    return receipt, session_receipts(receipt)


def distinct_sessions(probe: Probe) -> list[ToolSession]:
    """The sessions the probe was handed, each once, in the order it first saw them.

    A world may open one session per case, or one per invocation and call
    ``solve`` several times within it (issue 9); never one session for two cases.
    """
    seen: dict[int, ToolSession] = {}
    for session in probe.sessions:
        seen.setdefault(id(session), session)
    return list(seen.values())


def assert_garbage_is_a_product_error(loaded: LoadedSuite) -> None:
    probe, outcome = run_probe(loaded, "garbage")
    # The first answer already breaks the final schema: nothing more is asked of the agent.
    (task,) = probe.tasks
    assert isinstance(task, dict)
    canonical_json(task)
    (session,) = distinct_sessions(probe)
    assert isinstance(session, ToolSession)
    assert session.closed, "the world closes the session once the adapter returns"
    assert session.tools, "an interactive world offers tools"
    assert [tool["function"]["name"] for tool in session.openai_tools()] == [
        tool["name"] for tool in session.mcp_tools()
    ]
    assert outcome.failure_class is FailureClass.PRODUCT_ERROR, outcome.failure_reason
    receipt, (issued,) = case_receipts(outcome)
    assert receipt.canonical.failure_class == FailureClass.PRODUCT_ERROR.value
    assert issued.canonical.calls[0].error == "unknown_tool"
    assert len(issued.canonical.calls) == len(session.calls)
    # Out of its outcome alone, the run report keeps exactly the same receipt.
    assert grade_outcome(loaded, outcome).receipt == outcome.receipt


def assert_a_failing_agent_keeps_its_receipt(loaded: LoadedSuite) -> None:
    probe, outcome = run_probe(loaded, "raise")
    assert outcome.failure_class is FailureClass.AGENT_ERROR
    receipt, issued = case_receipts(outcome)
    assert receipt.canonical.failure_class == "agent_error"
    assert receipt.canonical.totals.calls >= 1
    sessions = distinct_sessions(probe)
    assert all(session.closed for session in sessions)
    assert len(issued) == len(sessions), "one receipt per session handed out"
    assert sum(r.canonical.totals.calls for r in issued) == receipt.canonical.totals.calls


def test_an_interactive_world_hands_a_json_task_and_a_tool_session(
    target: Target, tmp_path: Path
) -> None:
    placed = placed_if_interactive(target, tmp_path)
    assert_garbage_is_a_product_error(interactive(target, placed))


def test_every_session_of_an_interactive_case_is_closed_and_receipted(
    target: Target, tmp_path: Path
) -> None:
    """The reference agent may run through several invocations: one receipt per session.

    (Wrapped, an agent may lose what its world recognises it by and fail the
    case; every session it was handed is still closed and receipted.)
    """
    placed = placed_if_interactive(target, tmp_path)
    loaded = interactive(target, placed)
    world, suite = loaded.world, loaded.suite
    if not isinstance(world.reference_agent(), ToolAgent):
        pytest.skip(f"the reference agent of {target.kind!r} is not a ToolAgent")
    probe = Recording(world.reference_agent())
    case = world.cases(suite)[0]
    outcome = run_case(world, suite, case, world.public_view(suite, case), probe, timeout=60)
    sessions = distinct_sessions(probe)
    assert sessions
    assert all(session.closed for session in sessions)
    _, issued = case_receipts(outcome)
    assert [len(r.canonical.calls) for r in issued] == [len(s.calls) for s in sessions]
    assert [r.canonical.context for r in issued] == [
        s.receipt().canonical.context for s in sessions
    ]


def test_an_interactive_world_keeps_the_receipt_of_a_failing_agent(
    target: Target, tmp_path: Path
) -> None:
    placed = placed_if_interactive(target, tmp_path)
    assert_a_failing_agent_keeps_its_receipt(interactive(target, placed))


class SpendsTheTurn(demo_world.InteractiveDemoWorld):
    """Breaks the contract: a malformed final answer is kept as a graded output."""

    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        outcome = super().run(suite, case, view, adapter)
        if outcome.failure_class is FailureClass.PRODUCT_ERROR:
            return Outcome(output={"answer": None}, receipt=outcome.receipt)
        return outcome


class LeavesTheSessionOpen(demo_world.InteractiveDemoWorld):
    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        session = ToolSession(demo_world.DEMO_TOOLS, self.budget(suite))
        try:
            raw = adapter.solve(dict(view), session)
        except Exception as exc:
            return Outcome(failure_class=FailureClass.AGENT_ERROR, failure_reason=str(exc))
        receipt = session.receipt(failure_class="product_error").model_dump(mode="json")
        return Outcome(
            failure_class=FailureClass.PRODUCT_ERROR, failure_reason=repr(raw), receipt=receipt
        )


class ReceiptsOnlyTheLastInvocation(demo_world.InteractiveDemoWorld):
    """Two invocations, two sessions, but the case carries the second one's receipt only."""

    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        first = ToolSession(demo_world.DEMO_TOOLS, self.budget(suite))
        with contextlib.suppress(Exception):
            adapter.solve(dict(view), first)
        first.close()
        return super().run(suite, case, view, adapter)


@pytest.mark.parametrize(
    ("broken", "check"),
    [
        (SpendsTheTurn, assert_garbage_is_a_product_error),
        (LeavesTheSessionOpen, assert_garbage_is_a_product_error),
        (LeavesTheSessionOpen, assert_a_failing_agent_keeps_its_receipt),
        (ReceiptsOnlyTheLastInvocation, assert_a_failing_agent_keeps_its_receipt),
    ],
    ids=["spends-the-turn", "open-session", "open-session-no-receipt", "one-receipt-of-two"],
)
def test_the_interactive_checks_fail_a_world_that_breaks_the_contract(
    tmp_path: Path, broken: type[demo_world.InteractiveDemoWorld], check: Any
) -> None:
    placed = place_suite(Target(DEMO_TOOLS, ""), tmp_path)
    loaded = interactive(Target(DEMO_TOOLS, ""), placed)
    check(loaded)  # the demo world keeps the contract
    with pytest.raises(AssertionError):
        check(dataclasses.replace(loaded, world=broken()))


def test_reference_receipts_leak_nothing(target: Target, tmp_path: Path) -> None:
    """No oracle canary in what the reference agent's tools returned. That the receipts are
    byte-identical on a rerun from a fresh load is the kit's ``byte_identical_reruns``
    (every case's result, its receipt included, above)."""
    placed = placed_if_interactive(target, tmp_path)
    loaded = interactive(target, placed)
    world, suite = loaded.world, loaded.suite
    agent = world.reference_agent()
    if not isinstance(agent, ToolAgent):
        pytest.skip(f"the reference agent of {target.kind!r} is not a ToolAgent")
    texts = []
    for case in world.cases(suite)[:3]:
        outcome = run_case(world, suite, case, world.public_view(suite, case), agent, timeout=60)
        receipt, _ = case_receipts(outcome)
        texts.append(canonical_json(receipt.canonical.model_dump(mode="json")))
    oracle = world.load_oracle(suite)
    canaries = [c for c in world.leak_canaries(suite, oracle) if c]
    for text in texts:
        assert not [c for c in canaries if c in text], "a tool result carried oracle data"


def test_every_built_in_registration_declares_the_protocols_its_world_accepts() -> None:
    """Spelt out in the registration so that checking an adapter imports no world: they agree."""
    registrations = sorted(
        entry_points(group=hookspecs.ENTRY_POINT_GROUP), key=lambda entry: entry.name
    )
    assert registrations
    for entry_point in registrations:
        for lazy in entry_point.load().pytest_agentbench_world_kinds():
            assert isinstance(lazy, LazyWorld), lazy.kind
            assert lazy.adapter_protocols, lazy.kind
            # By name, as the registry compares them: a module imported again after an
            # in-process pytester run holds new class objects.
            declared_here = _qualified(lazy.protocols())
            assert declared_here == _qualified(accepted_protocols(lazy.resolve())), lazy.kind
    declared = {kind.kind: _qualified(kind.protocols) for kind in REGISTRY.adapter_protocols()}
    assert declared == {
        kind: _qualified(accepted_protocols(REGISTRY.get(kind))) for kind in REGISTRY.kinds()
    }


def test_a_world_declaring_layout_markers_can_recognise(tmp_path: Path) -> None:
    """Markers promise a recognise method; an empty folder is claimed by no world."""
    for kind in REGISTRY.kinds():
        markers = REGISTRY.marker_sets(kind)
        if not markers:
            continue
        world = REGISTRY.get(kind)
        assert callable(getattr(world, "recognise", None)), kind
        assert getattr(world, "layout_markers", markers) == markers, kind
        for marker_set in markers:
            for marker in marker_set:
                (tmp_path / kind / marker).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / kind / marker).write_text("{}", encoding="utf-8")
        # Every marker present but no content that makes the layout its own.
        assert REGISTRY.recognise(tmp_path / kind) is None, kind
    assert REGISTRY.recognise(tmp_path) is None
