"""Per-process state of an agentbench run: options, world kinds, suites, the adapter."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_agentbench.run.adapters import (
    REFERENCE_AGENTS,
    adapter_class,
    implements,
    protocol_name,
)
from pytest_agentbench.run.gc_freeze import collector_paused
from pytest_agentbench.run.leaks import find_leak, visible_text
from pytest_agentbench.run.options import Options
from pytest_agentbench.scoring.gates import parse_gate
from pytest_agentbench.sdk.canonical import JsonValue
from pytest_agentbench.sdk.contracts import (
    Case,
    CaseResult,
    FailureClass,
    Outcome,
    excluded,
    harness_error,
)
from pytest_agentbench.sdk.errors import (
    AgentbenchError,
    cap_text,
    describe_exception,
    has_surrogates,
)
from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.sdk.registry import Recognition, WorldRegistry
from pytest_agentbench.sdk.runner import run_case
from pytest_agentbench.sdk.suite import Suite, SuiteConfig, load_suite_config
from pytest_agentbench.sdk.world import World

if TYPE_CHECKING:
    # Imported where isolation is asked for: subprocess and multiprocessing cost start-up.
    from pytest_agentbench.agents.case_calls import CaseCalls, CaseScope
    from pytest_agentbench.agents.provenance import ModelRun
    from pytest_agentbench.isolation.host import IsolatedAdapters
    from pytest_agentbench.isolation.pool import IsolatedPool
    from pytest_agentbench.run.case_ledger import CaseLedger
    from pytest_agentbench.run.episode_artifacts import ArtifactItem


ORACLE_ROOTS_HINT: Final = "list it in the ini setting agentbench_oracle_roots to allow it"
"""How a refusal of an oracle outside the project says to allow its folder."""


@dataclass
class LoadedSuite:
    suite: Suite
    world: World


class SuiteLoader:
    """Finds and loads suites once per process; a broken suite's refusal is remembered.

    A suite folder holds a ``suite.yaml``, or is a folder a registered world
    recognises as its original's published layout (``suite.yaml`` wins).
    """

    def __init__(
        self,
        registry: WorldRegistry,
        rootpath: Path,
        oracle_roots: Sequence[Path] = (),
        *,
        on_load: Callable[[], None] | None = None,
        roots_hint: str = ORACLE_ROOTS_HINT,
    ) -> None:
        self.registry = registry
        self.rootpath = rootpath
        self.oracle_roots = tuple(root.resolve() for root in oracle_roots)
        """Folders outside the project an oracle may also lie in (``agentbench_oracle_roots``)."""
        self.named: list[Path] = []
        """Folders the user named on the command line: each trusted as the oracle of the
        suites at or below it (a published layout keeps its oracle inside its own folder)."""
        self.roots_hint = roots_hint
        """How an ``oracle_outside_project`` refusal says to allow a folder (the ini
        setting; the ``agentbench`` command adds its ``--oracle-root``)."""
        self._loaded: dict[Path, LoadedSuite | AgentbenchError] = {}
        self._roots: dict[Path, Path | None] = {}
        self._claims: dict[str, dict[Path, str]] = {}
        """Per suite id, every folder declaring it and the file naming it (for refusals)."""
        self._late: set[Path] = set()
        """Folders loaded before a second folder claimed their id: refused after the fact."""
        self._recognised: dict[Path, Recognition | AgentbenchError | None] = {}
        self.on_load = on_load
        """Called once after each suite loads (the run freezes what loading made)."""

    def trust_named(self, folder: Path) -> None:
        """Trust ``folder``, named on the command line, as the oracle of suites inside it."""
        resolved = folder.resolve()
        if resolved not in self.named:
            self.named.append(resolved)

    def display_root(self, root: Path, suite_id: str | None = None) -> str:
        """How messages name a suite folder: relative to the rootdir, else its real path."""
        try:
            return root.relative_to(self.rootpath).as_posix()
        except ValueError:
            return root.as_posix()

    def recognition(self, folder: Path) -> Recognition | None:
        """The world's claim on a folder without ``suite.yaml`` (an ambiguous claim raises)."""
        if folder not in self._recognised:
            try:
                claim: Recognition | AgentbenchError | None = self.registry.recognise(
                    folder, display=self.display_root(folder)
                )
            except AgentbenchError as exc:
                claim = exc
            self._recognised[folder] = claim
        found = self._recognised[folder]
        if isinstance(found, AgentbenchError):
            raise found
        return found

    def is_suite_folder(self, folder: Path) -> bool:
        """``suite.yaml`` or a recognised layout; a refused claim counts, to be reported."""
        if (folder / SUITE_FILE).is_file():
            return True
        try:
            return self.recognition(folder) is not None
        except AgentbenchError:
            return True

    def anchor(self, root: Path) -> str:
        """The file of a suite folder that carries its collector: ``suite.yaml`` or a marker."""
        if (root / SUITE_FILE).is_file():
            return SUITE_FILE
        try:
            recognition = self.recognition(root)
        except AgentbenchError:
            # The refused claim is reported on the marker that caused it to be asked.
            return self.registry.first_marker(root) or SUITE_FILE
        return SUITE_FILE if recognition is None else recognition.anchor

    def suite_root_of(self, directory: Path) -> Path | None:
        """The nearest suite folder at or above ``directory``."""
        chain: list[Path] = []
        current: Path | None = directory
        found: Path | None = None
        while current is not None:
            if current in self._roots:
                found = self._roots[current]
                break
            chain.append(current)
            if self.is_suite_folder(current):
                found = current
                break
            current = current.parent if current.parent != current else None
        for visited in chain:
            self._roots[visited] = found
        return found

    def load(self, root: Path) -> LoadedSuite:
        root = root.resolve()
        cached = self._loaded.get(root)
        if cached is None:
            with collector_paused():
                cached = self._load(root)
            self._loaded[root] = cached
            if self.on_load is not None and isinstance(cached, LoadedSuite):
                self.on_load()
        if isinstance(cached, AgentbenchError):
            raise cached
        return cached

    def _config(self, root: Path, display: str) -> tuple[SuiteConfig, str]:
        """The suite's declaration and the file refusals about it name."""
        if (root / SUITE_FILE).is_file():
            source = f"{display}/{SUITE_FILE}"
            return load_suite_config(root / SUITE_FILE, source), SUITE_FILE
        recognition = self.recognition(root)
        if recognition is None:
            raise AgentbenchError(
                "unknown_suite",
                "holds no suite.yaml and no registered world recognises it as its layout",
                file=display,
            )
        return recognition.config, recognition.anchor

    def _load(self, root: Path) -> LoadedSuite | AgentbenchError:
        display = self.display_root(root)
        source = f"{display}/{SUITE_FILE}"
        try:
            config, anchor = self._config(root, display)
            display = self.display_root(root, config.id)
            source = f"{display}/{anchor}"
            self._claim(config.id, root, source)
            check_gates(config, source)
            world = self.registry.get(config.world, file=source)
            suite = Suite(config=config, root=root, display_root=display)
            named = [folder for folder in self.named if root.is_relative_to(folder)]
            check_oracle_location(
                suite,
                (self.rootpath, *self.oracle_roots, *named),
                suite_roots=[
                    root
                    for kind in self.registry.kinds()
                    for root in self.registry.suite_roots(kind)
                ],
                source=source,
                hint=self.roots_hint,
            )
            suite.data = world.load_suite(suite)
            check_case_ids(suite, world.cases(suite))
        except AgentbenchError as exc:
            return exc
        except Exception as exc:
            return AgentbenchError(
                "world_load_failed",
                f"loading the suite raised {describe_exception(exc)}",
                file=source,
            )
        return LoadedSuite(suite=suite, world=world)

    def _claim(self, suite_id: str, root: Path, source: str) -> None:
        """Refuse every folder of a suite id more than one folder declares.

        Results are grouped by suite id: two folders would merge into one suite.
        Neither is preferred (which one is found first depends on the command
        line's order), so each is refused, naming the others; a folder loaded
        before the clash was known is listed in :meth:`late_refusals`.
        """
        claims = self._claims.setdefault(suite_id, {})
        claims[root] = source
        if len(claims) == 1:
            return
        for claimant, claimant_source in claims.items():
            others = sorted(self.display_root(other) for other in claims if other != claimant)
            error = AgentbenchError(
                "duplicate_suite_id",
                f"suite id {suite_id!r} is also declared by {', '.join(others)}: "
                "every folder declaring it is refused",
                file=claimant_source,
                field="id",
            )
            if claimant == root:
                raise error
            earlier = self._loaded.get(claimant)
            if isinstance(earlier, LoadedSuite):
                self._late.add(claimant)
            if earlier is None or claimant in self._late:
                self._loaded[claimant] = error

    def late_refusals(self) -> dict[Path, AgentbenchError]:
        """Folders refused after they loaded (their items may be collected), with the refusal."""
        refusals: dict[Path, AgentbenchError] = {}
        for root in sorted(self._late):
            error = self._loaded[root]
            assert isinstance(error, AgentbenchError)
            refusals[root] = error
        return refusals

    def loaded(self) -> list[LoadedSuite]:
        return [value for value in self._loaded.values() if isinstance(value, LoadedSuite)]


def check_oracle_location(
    suite: Suite,
    allowed: Sequence[Path],
    *,
    suite_roots: Sequence[Path] = (),
    source: str | None = None,
    hint: str = ORACLE_ROOTS_HINT,
) -> None:
    """Refuse an oracle folder, or a link inside it, that leads outside the project.

    The project is named explicitly: the pytest rootdir (for the ``agentbench``
    command, the working folder), the folders of ``agentbench_oracle_roots`` and
    a folder named on the command line that holds the suite, all given in
    ``allowed``; a suite a world ships (under one of its
    ``suite_roots``) may also keep its oracle beside that root, where the
    package keeps its ``oracles/``. Anything else (``oracle: /etc``, a ``..`` path
    climbing out, a symlinked file inside the oracle folder pointing at
    ``/etc/passwd``) would be read and hashed in full.
    """
    bases = tuple(base.resolve() for base in allowed)
    shipped_in = [root.resolve() for root in suite_roots]
    home = suite.root.resolve()
    bases = (*bases, *(root.parent for root in shipped_in if home.is_relative_to(root)))
    oracle = suite.oracle_root
    named = source if source is not None else suite.display(SUITE_FILE)
    if not any(oracle.is_relative_to(base) for base in bases):
        raise AgentbenchError(
            "oracle_outside_project",
            f"{oracle} is outside the project ({hint})",
            file=named,
            field="oracle",
        )
    leaving = _link_leaving(oracle, bases, named)
    if leaving is not None:
        link, target = leaving
        raise AgentbenchError(
            "oracle_outside_project",
            f"{link} in the oracle folder links to {target}, outside the project ({hint})",
            file=named,
            field="oracle",
        )


def _link_leaving(folder: Path, bases: Sequence[Path], display: str) -> tuple[Path, Path] | None:
    """The first symlink below ``folder`` whose target lies outside every base, and its target."""
    for directory, folders, files in os.walk(folder):
        for name in sorted((*folders, *files)):
            path = Path(directory) / name
            if not path.is_symlink():
                continue
            try:
                target = path.resolve()
            except (OSError, RuntimeError):  # a loop: Python 3.11 raises RuntimeError
                raise AgentbenchError(
                    "unreadable_file",
                    f"{path}: a symlink loop, which no read can follow",
                    file=display,
                    field="oracle",
                ) from None
            if not any(target.is_relative_to(base) for base in bases):
                return path, target
    return None


def check_gates(config: SuiteConfig, display: str) -> None:
    """Refuse a malformed gate when the suite loads, not after every case has run."""
    for index, text in enumerate(config.gates):
        try:
            parse_gate(text, suite=config.id, source=display)
        except AgentbenchError as exc:
            raise AgentbenchError(
                exc.code, exc.reason, file=display, field=f"gates[{index}]"
            ) from None


def check_case_ids(suite: Suite, cases: Sequence[Case]) -> None:
    """Refuse case ids that cannot be told apart as pytest node ids.

    Results are keyed by node id, so a repeated id would silently hide a case. An id
    is shown in terminals and names files: a control character (a terminal escape), a
    bidirectional override or a lone surrogate is refused, and so are two ids that are
    one text in two Unicode normalisations (NFC and NFD), which look alike everywhere
    and share a file name where the filesystem normalises names.
    """
    first_seen: dict[str, Case] = {}
    for case in cases:
        if has_surrogates(case.case_id):
            raise AgentbenchError(
                "invalid_case_id",
                f"case id {case.case_id!r} holds a lone surrogate, which is not Unicode text "
                "(no report, file name or terminal takes it)",
                file=suite.display(case.file),
                line=case.line,
            )
        case_id = case.case_id
        if not case_id or "::" in case_id:
            raise AgentbenchError(
                "invalid_case_id",
                f"case id {case_id!r} is empty or contains '::'",
                file=suite.display(case.file),
                line=case.line,
            )
        unsafe = None if case_id.isprintable() else _UNSAFE_IN_ID.search(case_id)
        if unsafe is not None:
            raise AgentbenchError(
                "invalid_case_id",
                f"case id {case_id!a} holds {unsafe.group()!a} (a control character, "
                "bidirectional override or lone surrogate)",
                file=suite.display(case.file),
                line=case.line,
            )
        key = case_id if case_id.isascii() else unicodedata.normalize("NFC", case_id)
        earlier = first_seen.setdefault(key, case)
        if earlier is not case:
            where = "" if earlier.line is None else f" (first at line {earlier.line})"
            twin = (
                ""
                if earlier.case_id == case_id
                else f" as {earlier.case_id!r} in another Unicode normalisation"
            )
            raise AgentbenchError(
                "duplicate_case_id",
                f"case id {case_id!r} appears more than once{twin}{where}",
                file=suite.display(case.file),
                line=case.line,
            )


_UNSAFE_IN_ID = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""What a case id may not hold: C0 and C1 controls, bidirectional overrides and isolates,
lone surrogates (``str.isprintable`` rules out a superset, checked first)."""


@dataclass
class AgentbenchState:
    options: Options
    registry: WorldRegistry
    loader: SuiteLoader
    adapter: Any = REFERENCE_AGENTS
    adapter_description: str = "built-in reference agents"
    isolation: IsolatedAdapters | IsolatedPool | None = None
    """The adapter process of ``--agentbench-isolate`` (a pool of them with
    ``--agentbench-concurrency``); case adapters then run there."""
    items_collected: int = 0
    """Case items collected so far in this process, held against ``--agentbench-max-items``."""
    settled_transcript: list[JsonValue] | None = None
    """The transcript of the case this process settled last (under ``--agentbench-report``),
    until its item takes it (:meth:`take_transcript`)."""
    _reference: dict[str, Any] = field(default_factory=dict)
    _predictions: dict[str, Any] = field(default_factory=dict)
    _protocol_checks: dict[tuple[int, str], tuple[Any, bool]] = field(default_factory=dict)
    _resolved: dict[int, tuple[LoadedSuite, Any, Any]] = field(default_factory=dict)
    """The adapter each suite's cases last resolved to, by the suite: (suite, given, adapter).
    One entry a suite, replaced when the adapter given changes (a fixture's per test)."""

    def reference_agent(self, world: World) -> Any:
        if world.kind not in self._reference:
            self._reference[world.kind] = world.reference_agent()
        return self._reference[world.kind]

    def adapter_for(self, loaded: LoadedSuite, given: Any) -> Any:
        """The adapter for a case of ``loaded``: predictions file, reference agent or ``given``."""
        known = self._resolved.get(id(loaded))
        if known is not None and known[0] is loaded and known[1] is given:
            # Resolved alike for every case of the suite, but for an isolated adapter,
            # whose stand-in is asked for each case (see below).
            return known[2]
        suite, world = loaded.suite, loaded.world
        path = self.options.predictions.get(suite.id)
        if path is not None:
            if suite.id not in self._predictions:
                try:
                    self._predictions[suite.id] = world.predictions_adapter(suite, path)
                except AgentbenchError as exc:
                    pytest.fail(exc.render(), pytrace=False)
            self._resolved[id(loaded)] = (loaded, given, self._predictions[suite.id])
            return self._predictions[suite.id]
        adapter = self.reference_agent(world) if given is REFERENCE_AGENTS else given
        if self.isolation is not None:
            try:
                adapter = self.isolation.remote(adapter)
            except AgentbenchError as exc:
                pytest.fail(exc.render(), pytrace=False)
        if not self._implements(adapter, world):
            pytest.skip(
                f"adapter {type(adapter).__name__} lacks the {protocol_name(world)} protocol "
                f"of world kind {world.kind!r}"
            )
        if self.isolation is None:
            self._resolved[id(loaded)] = (loaded, given, adapter)
        return adapter

    def _implements(self, adapter: Any, world: World) -> bool:
        # A runtime-checkable Protocol isinstance costs tens of microseconds per
        # case; the adapter is usually one object for the whole session.
        key = (id(adapter), world.kind)
        known = self._protocol_checks.get(key)
        if known is None or known[0] is not adapter:
            known = (adapter, implements(adapter, world))
            self._protocol_checks[key] = known
        return known[1]

    def oracle(self, loaded: LoadedSuite) -> Any:
        return oracle_of(loaded)

    def execute(
        self, loaded: LoadedSuite, case: Case, view: Any, adapter: Any, *, ledger: bool = False
    ) -> tuple[Outcome, CaseResult]:
        """Run and grade one case; the oracle is loaded only after the output exists.

        With ``ledger`` (a case item of the run) and ``--agentbench-ledger``, the
        case writes its execution ledger; a ledger that cannot be written makes
        the case a harness error under the ledger's code. What the adapter saw
        is serialised before it runs and searched for the world's leak canaries
        once the oracle is loaded: a canary there is a ``harness_leak``.
        """
        seen = visible_text(view)
        options = self.options
        opened: CaseLedger | None = None
        if ledger and options.ledger_dir is not None:
            # Asked only here: a model class's ``isinstance`` is an ABC check.
            refused_or_opened = self.open_ledger(loaded, case, adapter)
            if isinstance(refused_or_opened, CaseResult):
                return Outcome(failure_class=FailureClass.HARNESS_ERROR), refused_or_opened
            opened = refused_or_opened
        outcome, calls = self.run(loaded, case, view, adapter, opened)
        return self.settle(
            loaded,
            case,
            outcome,
            opened,
            seen=seen,
            calls=calls,
            item=artifact_item_here(adapter_class(adapter), case.case_id)
            if ledger and options.artifacts_dir is not None
            else None,
        )

    def open_ledger(
        self, loaded: LoadedSuite, case: Case, adapter: Any
    ) -> CaseLedger | CaseResult | None:
        """The case's ledger under ``--agentbench-ledger``, or the harness error refusing it."""
        folder = self.options.ledger_dir
        if folder is None:
            return None
        # Imported only under --agentbench-ledger: the ledger's row models cost
        # every other run their import.
        from pytest_agentbench.run.case_ledger import open_case_ledger

        try:
            return open_case_ledger(folder, loaded.suite, case, adapter_class(adapter))
        except AgentbenchError as exc:
            return harness_error(case.suite_id, case.case_id, cap_text(exc.render()), case.labels)

    @cached_property
    def _case_scope(self) -> type[CaseScope]:
        """The scope collecting a case's model calls, imported when the first case runs.

        Not at start-up (a run that runs no case never needs it), and not by an import
        statement per case either: on Python 3.11 ``from module import name`` asks the
        module for a ``__path__`` first, which a plain module answers by making and
        dropping an AttributeError, several microseconds a case.
        """
        from pytest_agentbench.agents.case_calls import CaseScope

        return CaseScope

    def run(
        self,
        loaded: LoadedSuite,
        case: Case,
        view: Any,
        adapter: Any,
        case_ledger: CaseLedger | None,
    ) -> tuple[Outcome, CaseCalls]:
        """The world's run of one case, ungraded, and the model calls it made.

        What runs ahead under concurrency: it reads no oracle and writes nothing
        of the item's, so it may run on another thread while earlier items are
        graded. The calls are collected on the thread that makes them; a call
        the budget refused makes the case excluded, not the agent's failure.
        Isolated, the case holds its adapter process for the whole run.
        """
        isolation, served = self.isolation, adapter
        if case_ledger is not None:
            from pytest_agentbench.run.case_ledger import ledgered

            adapter = ledgered(adapter, case_ledger)
        world, suite, timeout = loaded.world, loaded.suite, self.options.timeout
        with self._case_scope(self.options.report_path is not None) as calls:
            if isolation is None:
                outcome = run_case(world, suite, case, view, adapter, timeout=timeout)
            else:
                with isolation.serving(served):
                    outcome = run_case(world, suite, case, view, adapter, timeout=timeout)
            # ``calls`` is the scope's own: only a refused call makes the outcome an exclusion.
            if calls.refusal is not None:
                from pytest_agentbench.agents.provenance import excluded_if_refused

                outcome = excluded_if_refused(outcome)
            return outcome, calls

    def settle(
        self,
        loaded: LoadedSuite,
        case: Case,
        outcome: Outcome,
        case_ledger: CaseLedger | None,
        *,
        seen: str,
        calls: CaseCalls | None,
        item: ArtifactItem | None = None,
    ) -> tuple[Outcome, CaseResult]:
        """Finish the case's ledger, grade its outcome and write its episode artefact.

        ``seen`` is the view as the adapter received it (:func:`visible_text`);
        ``calls`` the model calls of its run (none for a run given up on);
        ``item`` names the adapter and the item of a case item of the run for its
        episode artefact (``None`` for a control's or a command's run, which writes none).
        """
        if self.options.report_path is not None:
            events = None if calls is None else calls.transcript.record()
            self.settled_transcript = events or None
        if case_ledger is not None:
            case_ledger.finish(outcome)
            if case_ledger.failure is not None:
                reason = cap_text(case_ledger.failure.render())
                refused = harness_error(case.suite_id, case.case_id, reason, case.labels)
                if calls is not None:
                    refused = _with_model_calls(calls, refused)
                return Outcome(
                    failure_class=FailureClass.HARNESS_ERROR, failure_reason=reason
                ), refused
        result = self.graded_unleaked(loaded, case, outcome, seen)
        if calls is not None and calls.used:
            result = _with_model_calls(calls, result)
        if self.options.artifacts_dir is not None and item is not None:
            result = self.with_artifact(
                loaded, case, outcome, result, case_ledger=case_ledger, item=item
            )
        return outcome, result

    def take_transcript(self) -> list[JsonValue] | None:
        """The transcript of the case settled last, once: its item relays it."""
        events, self.settled_transcript = self.settled_transcript, None
        return events

    def with_artifact(
        self,
        loaded: LoadedSuite,
        case: Case,
        outcome: Outcome,
        result: CaseResult,
        *,
        case_ledger: CaseLedger | None,
        item: ArtifactItem,
    ) -> CaseResult:
        """The result with its artefact's file and digest, or the harness error refusing it."""
        from pytest_agentbench.run.episode_artifacts import (
            model_run_of_case,
            write_episode_artifact,
        )

        assert self.options.artifacts_dir is not None
        model_run = None
        if model_run_of_case(result.model_calls):  # the client that made them imported it
            from pytest_agentbench.agents.provenance import configured_run

            model_run = configured_run()
        try:
            written = write_episode_artifact(
                self.options.artifacts_dir,
                loaded.world,
                loaded.suite,
                case,
                outcome=outcome,
                result=result,
                case_ledger=case_ledger,
                model_run=model_run,
                item=item,
            )
        except AgentbenchError as exc:
            refused = harness_error(
                case.suite_id, case.case_id, cap_text(exc.render()), case.labels
            )
            return refused.model_copy(update={"model_calls": result.model_calls})
        if written is None:
            return result
        return result.model_copy(update={"artifact": written})

    def grade(self, loaded: LoadedSuite, case: Case, outcome: Outcome) -> CaseResult:
        return grade_outcome(loaded, case, outcome)

    def graded_unleaked(
        self, loaded: LoadedSuite, case: Case, outcome: Outcome, seen: str
    ) -> CaseResult:
        """The graded case, or a ``harness_leak`` harness error if the adapter saw a canary."""
        result = grade_outcome(loaded, case, outcome)
        if "agentbench.oracle" not in loaded.suite.cache:
            return result  # the oracle did not load: the grade already says why
        oracle = loaded.suite.cache["agentbench.oracle"]
        leak = find_leak(loaded.world, loaded.suite, case, seen, outcome, oracle=oracle)
        if leak is None:
            return result
        return harness_error(case.suite_id, case.case_id, cap_text(leak.render()), case.labels)


def _with_model_calls(calls: CaseCalls, result: CaseResult) -> CaseResult:
    """The result with the model calls of its case (imported only where a case used any)."""
    from pytest_agentbench.agents.provenance import attach_model_calls

    return attach_model_calls(calls, result)


def artifact_item_here(agent_id: str, case_id: str) -> ArtifactItem:
    """The artefact item of the case running on this thread (its trial, if repeated)."""
    from pytest_agentbench.run.episode_artifacts import artifact_item
    from pytest_agentbench.scoring.matrix import current_model
    from pytest_agentbench.scoring.trials import current_trial

    trial = current_trial()
    return artifact_item(
        agent_id,
        case_id,
        None if trial is None else (trial.index, trial.count),
        current_model(),
    )


def oracle_of(loaded: LoadedSuite) -> Any:
    """The suite's oracle, loaded once per process (and only once an output exists)."""
    cache = loaded.suite.cache
    if "agentbench.oracle" not in cache:
        with collector_paused():
            cache["agentbench.oracle"] = loaded.world.load_oracle(loaded.suite)
    return cache["agentbench.oracle"]


def grade_outcome(loaded: LoadedSuite, case: Case, outcome: Outcome) -> CaseResult:
    """Grade one outcome; a failure of the oracle or the evaluator is a harness error."""
    if outcome.exclusion is not None:
        return excluded(case, outcome)
    try:
        result = loaded.world.evaluate(loaded.suite, case, outcome, oracle_of(loaded))
    except Exception as exc:
        reason = (
            exc.render()
            if isinstance(exc, AgentbenchError)
            else (f"evaluation raised {describe_exception(exc)}")
        )
        return harness_error(case.suite_id, case.case_id, cap_text(reason), case.labels)
    if outcome.failure_traceback and result.failure_class is FailureClass.AGENT_ERROR:
        # A world that builds its result without ``grade`` still reports the adapter's traceback.
        result = result.model_copy(update={"failure_traceback": outcome.failure_traceback})
    return result


STATE_KEY = pytest.StashKey[AgentbenchState]()
RUN_KEY: pytest.StashKey[ModelRun] = pytest.StashKey()
"""The process's model run (rate limiter, budget guard, pricing), set when the run is configured."""


def get_state(config: pytest.Config) -> AgentbenchState:
    return config.stash[STATE_KEY]
