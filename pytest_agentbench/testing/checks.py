"""The conformance checks: what every world kind owes the core, asked of one suite.

Each check takes a :class:`SuiteUnderTest` and returns quietly, raises
:class:`ConformanceFailure` saying what the world got wrong, or raises
:class:`NotApplicable` when the suite's world lacks what the check is about
(a world with no tool sessions has no receipts). Checks never touch the suite
in place: what they load or tamper with is a copy in their work folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_agentbench.run.control_run import declared_controls, run_control
from pytest_agentbench.run.leaks import LEAK_CODE, adapter_visible, suite_canaries
from pytest_agentbench.run.options import Options
from pytest_agentbench.run.session import AgentbenchState, LoadedSuite, SuiteLoader
from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, loads_strict, tree_files
from pytest_agentbench.sdk.contracts import CaseResult
from pytest_agentbench.sdk.controls_oracle import suite_control_oracle
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.layout import CONTROLS_FILE, SUITE_FILE
from pytest_agentbench.sdk.registry import WorldRegistry, installed_registry
from pytest_agentbench.sdk.tool_agent import ToolAgent
from pytest_agentbench.sdk.world import accepted_protocols

CASE_TIMEOUT = 60.0
"""Seconds each case of a check may take: the built-in agents are deterministic and quick."""

RECEIPT_CASES = 3
"""How many cases the receipt check runs twice (receipts are per case, alike in shape)."""

VOLATILE_REPORT_KEYS = frozenset({"duration_s", "observations"})
"""Run-report fields that differ between two runs on the same inputs: each case's
duration, and the timings a tool-session receipt keeps outside its digest."""


class ConformanceFailure(AssertionError):
    """The world breaks the contract; the message says how."""


class NotApplicable(Exception):
    """The check asks about something the suite's world does not have."""


def _fail_unless(condition: bool, message: str) -> None:
    if not condition:
        raise ConformanceFailure(message)


class SuiteUnderTest:
    """One suite a world kind ships, and a work folder for the copies the checks make.

    ``suite`` is a suite id some registered world ships (``suite_roots``) or a
    suite folder. ``registry`` defaults to every installed world kind.
    ``plugins`` are modules the xdist check's pytest subprocesses load with
    ``-p`` (a world registered by a conftest or a test plugin rather than an
    entry point).
    """

    def __init__(
        self,
        suite: str | os.PathLike[str],
        *,
        registry: WorldRegistry | None = None,
        workdir: Path,
        plugins: Sequence[str] = (),
    ) -> None:
        self.registry = registry if registry is not None else installed_registry()
        self.workdir = workdir
        self.plugins = tuple(plugins)
        self.source = self._folder(suite)
        loaded = self.load(self.source)
        self.suite_id = loaded.suite.id
        self.kind = loaded.world.kind
        self.oracle_relative = os.path.relpath(loaded.suite.oracle_root, self.source)
        self._copies = 0
        self._reference: list[CaseResult] | None = None

    def _folder(self, suite: str | os.PathLike[str]) -> Path:
        shipped = self.registry.suites().get(os.fspath(suite))
        folder = (Path(suite) if shipped is None else shipped).resolve()
        if not folder.is_dir():
            known = ", ".join(sorted(self.registry.suites())) or "none"
            raise AgentbenchError(
                "unknown_suite",
                f"{os.fspath(suite)!r} is neither a shipped suite ({known}) nor a suite folder",
            )
        return folder

    def load(self, folder: Path | None = None) -> LoadedSuite:
        """A fresh load (new loader, new suite cache) of ``folder``, by default the suite."""
        folder = self.source if folder is None else folder
        return SuiteLoader(self.registry, folder.parent.parent).load(folder)

    def copy(self) -> Path:
        """A fresh copy of the suite folder, its oracle at the same relative place."""
        self._copies += 1
        base = self.workdir / f"copy-{self._copies}"
        suite_dir = base / "suites" / self.source.name
        shutil.copytree(self.source, suite_dir)
        oracle_source = (self.source / self.oracle_relative).resolve()
        oracle_copy = (suite_dir / self.oracle_relative).resolve()
        if oracle_source.is_dir() and not oracle_source.is_relative_to(self.source):
            _fail_unless(
                oracle_copy.is_relative_to(base),
                f"the oracle {oracle_source} does not sit beside the suite's folder",
            )
            shutil.copytree(oracle_source, oracle_copy)
        return suite_dir

    def reference_results(self) -> list[CaseResult]:
        """The reference agent's graded results from a fresh load, run once per suite under
        test: the checks that read them share the run (a rerun check makes its own second)."""
        if self._reference is None:
            self._reference = _reference_results(self)
        return self._reference

    def state(self) -> AgentbenchState:
        """A run's state over the registry, as ``agentbench evaluate`` builds it."""
        options = Options(
            adapter_spec=None,
            timeout=CASE_TIMEOUT,
            predictions={},
            controls_only=False,
            snapshot=False,
            snapshot_dir=self.workdir / "snapshots",
            report_path=None,
            gates=(),
            junit_case_properties=False,
        )
        return AgentbenchState(
            options=options,
            registry=self.registry,
            loader=SuiteLoader(self.registry, self.source.parent.parent),
        )


def _views(loaded: LoadedSuite) -> list[str]:
    world, suite = loaded.world, loaded.suite
    return [
        canonical_json(adapter_visible(world.public_view(suite, case)))
        for case in world.cases(suite)
    ]


def _reference_results(target: SuiteUnderTest) -> list[CaseResult]:
    loaded = target.load()
    state = target.state()
    world, suite = loaded.world, loaded.suite
    agent = world.reference_agent()
    return [
        state.execute(loaded, case, world.public_view(suite, case), agent)[1]
        for case in world.cases(suite)
    ]


def check_deterministic_cases(target: SuiteUnderTest) -> None:
    """Two loads give the same non-empty list of unique cases, each naming a file it has."""
    first, second = target.load(), target.load()
    cases = list(first.world.cases(first.suite))
    ids = [case.case_id for case in cases]
    _fail_unless(bool(ids), "the suite has no cases: it checks nothing")
    _fail_unless(len(ids) == len(set(ids)), "case ids are not unique")
    again = [case.model_dump(mode="json") for case in second.world.cases(second.suite)]
    _fail_unless(
        canonical_json([case.model_dump(mode="json") for case in cases]) == canonical_json(again),
        "two loads of the suite give different cases or a different order",
    )
    for case in cases:
        _fail_unless(
            case.suite_id == first.suite.id, f"{case.case_id}: suite_id is not the suite's"
        )
        _fail_unless(
            (first.suite.root / case.file).is_file(), f"{case.case_id}: no file {case.file}"
        )


def _without_observations(value: JsonValue) -> JsonValue:
    if isinstance(value, dict):
        return {k: _without_observations(v) for k, v in value.items() if k != "observations"}
    if isinstance(value, list):
        return [_without_observations(item) for item in value]
    return value


def _comparable(result: CaseResult) -> str:
    """A result's canonical JSON, its receipt's observations (timings) left out.

    A receipt's ``observations`` are outside its digest by design: they say
    how the run went (latencies), not what it computed.
    """
    data = result.model_dump(mode="json")
    data["receipt"] = _without_observations(data.get("receipt"))
    return canonical_json(data)


def check_byte_identical_reruns(target: SuiteUnderTest) -> None:
    """Public views, and the reference agent's graded results, are byte-identical twice over."""
    _fail_unless(
        _views(target.load()) == _views(target.load()),
        "two loads hand the adapter different public views",
    )
    first, second = target.reference_results(), _reference_results(target)
    differing = [
        one.case_id
        for one, again in zip(first, second, strict=True)
        if _comparable(one) != _comparable(again)
    ]
    _fail_unless(not differing, f"the reference agent's results differ on a rerun: {differing}")


def check_no_leak_canary(target: SuiteUnderTest) -> None:
    """The world names leak canaries, and none shows in a case, a view or a tool result."""
    loaded = target.load()
    world, suite = loaded.world, loaded.suite
    canaries = suite_canaries(world, suite, world.load_oracle(suite))
    _fail_unless(
        bool(canaries.canaries),
        "the world names no leak canaries: nothing shows that its oracle stays hidden",
    )
    cases = [canonical_json(case.model_dump(mode="json")) for case in world.cases(suite)]
    for text in [*cases, *_views(loaded)]:
        leaked = canaries.first_in(text)
        _fail_unless(leaked is None, f"oracle canaries visible to the adapter: {[leaked]}")
    leaks = [
        result.failure_reason
        for result in target.reference_results()
        if result.failure_reason and result.failure_reason.startswith(f"[{LEAK_CODE}]")
    ]
    _fail_unless(not leaks, f"the reference run reached an oracle canary: {leaks[:1]}")


_RECORDING: list[list[Path]] = []
"""The open file lists of the ``files_opened`` blocks under way (innermost last)."""


def _record_open(event: str, args: tuple[Any, ...]) -> None:
    if _RECORDING and event == "open" and isinstance(args[0], (str, os.PathLike)):
        _RECORDING[-1].append(Path(os.fsdecode(args[0])).resolve())


_HOOKED: list[bool] = []


@contextmanager
def files_opened() -> Iterator[list[Path]]:
    """The files opened while the block runs (an audit hook, installed once per process)."""
    if not _HOOKED:
        # An audit hook cannot be removed: it records only inside this block.
        sys.addaudithook(_record_open)
        _HOOKED.append(True)
    opened: list[Path] = []
    _RECORDING.append(opened)
    try:
        yield opened
    finally:
        _RECORDING.pop()


def _flipped(path: Path) -> bytes:
    """The file's bytes with one bit of its middle byte flipped (an empty file gains a byte)."""
    data = bytearray(path.read_bytes())
    if not data:
        return b"\n"
    middle = len(data) // 2
    data[middle] ^= 0x01
    return bytes(data)


def _refused(load: Callable[[], object], what: str) -> None:
    try:
        load()
    except AgentbenchError as refusal:
        _fail_unless(bool(refusal.code), f"{what}: refused without a code")
        _fail_unless(refusal.location.file is not None, f"{what}: the refusal names no file")
        return
    raise ConformanceFailure(f"{what} was accepted")


def check_tamper_refusals(target: SuiteUnderTest) -> None:
    """A byte flipped in any public artifact, or in an oracle file the world reads, is refused."""
    suite_dir = target.copy()
    loaded = target.load(suite_dir)
    oracle_root = loaded.suite.oracle_root
    public = [
        path
        for rel, path in tree_files(suite_dir).items()
        if rel != SUITE_FILE and not path.is_relative_to(oracle_root)
    ]
    _fail_unless(bool(public), "the suite has no public artifact")
    for path in public:
        original = path.read_bytes()
        path.write_bytes(_flipped(path))
        _refused(
            lambda: target.load(suite_dir), f"{path.relative_to(suite_dir)} with a byte flipped"
        )
        path.write_bytes(original)
    fresh = target.load(suite_dir)
    with files_opened() as opened:
        fresh.world.load_oracle(fresh.suite)
    # The evaluator truth is what load_oracle reads; a control manifest or a
    # baseline kept beside it is read by other paths, which check it themselves.
    read = sorted({path for path in opened if path.is_relative_to(oracle_root) and path.is_file()})
    # A world may derive its truth from the public artifacts alone (the operations
    # world derives each scenario's expected fault from the spec): then the flips
    # above already covered everything load_oracle depends on.
    for path in read:
        original = path.read_bytes()
        path.write_bytes(_flipped(path))

        def load_oracle() -> object:
            again = target.load(suite_dir)
            return again.world.load_oracle(again.suite)

        _refused(load_oracle, f"oracle file {path.relative_to(oracle_root)} with a byte flipped")
        path.write_bytes(original)


def check_negative_controls(target: SuiteUnderTest) -> None:
    """Every negative agent is declared in the controls manifest and fails as it says."""
    loaded = target.load()
    world, suite = loaded.world, loaded.suite
    dimensions = list(world.dimensions(suite))
    oracle = suite_control_oracle(world, suite, dimensions, str)
    if oracle is None:
        raise ConformanceFailure(f"the suite has no control oracle and no {CONTROLS_FILE}")
    negative = {a.agent_id for a in world.control_agents(suite) if a.role == "negative"}
    _fail_unless(bool(negative), "the world offers no negative agent to prove its evaluator")
    controls = declared_controls(loaded, oracle)
    undeclared = sorted(negative - {control.agent for control in controls})
    _fail_unless(not undeclared, f"negative agents no control declares: {undeclared}")
    state = target.state()
    for control in controls:
        classified = set(control.must_fail) | set(control.must_pass)
        _fail_unless(
            classified == set(dimensions),
            f"control {control.id!r} does not classify every dimension "
            f"(unclassified: {sorted(set(dimensions) - classified)})",
        )
        verdict, _ = run_control(state, loaded, control)
        _fail_unless(verdict.passed, f"control {control.id!r}: {verdict.summary()}")


def _interactive(loaded: LoadedSuite) -> Any:
    if ToolAgent not in accepted_protocols(loaded.world):
        raise NotApplicable(f"world kind {loaded.world.kind!r} has no tool sessions")
    agent = loaded.world.reference_agent()
    if not isinstance(agent, ToolAgent):
        raise NotApplicable(f"the reference agent of {loaded.world.kind!r} is not a ToolAgent")
    return agent


def check_interactive_receipts(target: SuiteUnderTest) -> None:
    """A tool-session world's cases carry receipts whose canonical parts rerun byte for byte."""
    # Imported only by this check: the receipt's models would cost every benchmark
    # process (each xdist worker) their import, conformance run or not.
    from pytest_agentbench.sdk.tools import load_receipt, session_receipts

    _interactive(target.load())

    def receipts() -> list[str]:
        loaded = target.load()
        world, suite = loaded.world, loaded.suite
        agent = _interactive(loaded)
        state = target.state()
        texts = []
        for case in list(world.cases(suite))[:RECEIPT_CASES]:
            outcome, _ = state.execute(loaded, case, world.public_view(suite, case), agent)
            if outcome.receipt is None:
                raise ConformanceFailure(f"{case.case_id}: the case has no receipt")
            try:
                receipt = load_receipt(outcome.receipt)
            except ValueError as exc:
                raise ConformanceFailure(
                    f"{case.case_id}: the receipt does not load: {exc}"
                ) from None
            _fail_unless(
                bool(session_receipts(receipt)), f"{case.case_id}: the receipt holds no session"
            )
            texts.append(canonical_json(receipt.canonical.model_dump(mode="json")))
            texts.append(receipt.digest)
        return texts

    _fail_unless(receipts() == receipts(), "receipts differ between two runs of the same cases")


def _normalised(value: JsonValue) -> JsonValue:
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items() if k not in VOLATILE_REPORT_KEYS}
    if isinstance(value, list):
        return [_normalised(item) for item in value]
    return value


def _report_of(target: SuiteUnderTest, suite_dir: Path, name: str, *args: str) -> JsonValue:
    # One report name in a folder per run: what a report names beside itself (its
    # transcripts folder) is then the same in both.
    report = target.workdir / name / "report.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    plugins = [arg for plugin in target.plugins for arg in ("-p", plugin)]
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *plugins,
        f"--agentbench-suite={suite_dir}",
        f"--agentbench-report={report}",
        f"--basetemp={target.workdir / f'{name}-tmp'}",
        *args,
    ]
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        command,
        cwd=suite_dir.parent.parent,
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    if not report.is_file():
        raise ConformanceFailure(
            f"pytest {' '.join(args) or '(serial)'} wrote no report "
            f"(exit {done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    document = _normalised(loads_strict(report.read_text(encoding="utf-8")))
    suites = document.get("suites") if isinstance(document, dict) else None
    if isinstance(suites, list):
        for suite in suites:
            if isinstance(suite, dict) and isinstance(suite.get("cases"), list):
                # Workers finish cases in their own order; each case is one entry.
                suite["cases"].sort(key=canonical_json)
    return document


def check_xdist_equality(target: SuiteUnderTest) -> None:
    """The JSON run report of a serial run equals that of a run on two xdist workers."""
    suite_dir = target.copy()
    serial = _report_of(target, suite_dir, "serial")
    distributed = _report_of(target, suite_dir, "xdist", "-n", "2")
    if serial != distributed:
        first = canonical_json(serial)
        second = canonical_json(distributed)
        at = next(
            (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
            min(len(first), len(second)),
        )
        raise ConformanceFailure(
            "the serial and -n 2 run reports differ, first at "
            f"...{first[max(0, at - 80) : at + 80]}... vs ...{second[max(0, at - 80) : at + 80]}..."
        )


CHECKS: dict[str, Callable[[SuiteUnderTest], None]] = {
    "deterministic_cases": check_deterministic_cases,
    "byte_identical_reruns": check_byte_identical_reruns,
    "no_leak_canary": check_no_leak_canary,
    "tamper_refusals": check_tamper_refusals,
    "negative_controls": check_negative_controls,
    "interactive_receipts": check_interactive_receipts,
    "xdist_equality": check_xdist_equality,
}
"""Every check, by the name reports give it, in the order they run."""


@contextmanager
def work_folder(parent: Path | None = None) -> Iterator[Path]:
    """A fresh folder for one check's copies and reports, removed afterwards."""
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="agentbench-conformance-", dir=parent) as folder:
        yield Path(folder)
