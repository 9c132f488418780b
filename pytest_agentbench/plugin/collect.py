"""Suites as pytest collectors; cases and negative controls as test items.

``suite.yaml`` becomes a :class:`SuiteFile` (it reports a broken suite once and
carries the suite's control items); each file a world names as holding cases
becomes a :class:`CaseFile` whose items are :class:`CaseItem` s. Where fixtures
could matter (a user's ``conftest.py`` overriding ``agentbench_adapter`` or
``agentbench_world``, an autouse fixture, golden outputs through syrupy) a case
is a ``pytest.Function`` with real fixture resolution; elsewhere it runs the
same code without the fixture machinery.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from _pytest._code.code import ExceptionInfo, ReprFileLocation, TerminalRepr
from _pytest._io import TerminalWriter

from pytest_agentbench.plugin import fixtures
from pytest_agentbench.plugin.model_options import MATRIX_KEY
from pytest_agentbench.plugin.rerun import RERUN_KEY
from pytest_agentbench.plugin.snapshots import CONTROL_NAMES, GoldenMismatch, assert_golden
from pytest_agentbench.report.recorder import REFUSAL as REFUSAL_ATTR
from pytest_agentbench.run.adapters import adapter_class
from pytest_agentbench.run.concurrency import PREFETCHER_KEY
from pytest_agentbench.run.control_run import (
    declared_controls,
    run_control,
    ungraded_agents,
    ungraded_verdict,
)
from pytest_agentbench.run.session import AgentbenchState, LoadedSuite, get_state
from pytest_agentbench.scoring.matrix import enter_model, leave_model, model_item_name
from pytest_agentbench.scoring.trials import enter_trial, item_name, leave_trial
from pytest_agentbench.sdk import tracebacks
from pytest_agentbench.sdk.canonical import JsonValue, canonical_json
from pytest_agentbench.sdk.contracts import (
    Case,
    CaseOutcome,
    CaseResult,
    Check,
    CheckStatus,
    FailureClass,
    Outcome,
)
from pytest_agentbench.sdk.controls import ControlSpec, ControlVerdict
from pytest_agentbench.sdk.controls_oracle import suite_control_oracle
from pytest_agentbench.sdk.errors import (
    AgentbenchError,
    cap_text,
    escape_surrogates,
    escape_surrogates_json,
)
from pytest_agentbench.sdk.layout import SUITE_FILE
from pytest_agentbench.sdk.suite import Suite

_Stashed = TypeVar("_Stashed")


def stashed(stash: pytest.Stash, key: pytest.StashKey[_Stashed]) -> _Stashed | None:
    """``stash.get(key, None)``, asked with ``in`` first: ``Stash.get`` of a missing key
    raises and catches a KeyError, microseconds a case for what a plain run never sets."""
    return stash[key] if key in stash else None  # noqa: SIM401


RESULT_KEY = pytest.StashKey[CaseResult]()
TRANSCRIPT_KEY = pytest.StashKey[list[JsonValue]]()
"""A case item's transcript events, until the relay sends them on with its result."""
VERDICT_KEY = pytest.StashKey[ControlVerdict]()


class SuiteCollectionError(Exception):
    """A suite refused at collection; rendered as its one-line refusal."""

    def __init__(self, error: AgentbenchError) -> None:
        super().__init__(error.render())
        self.error = error


class CaseFailed(Exception):
    def __init__(self, result: CaseResult, golden_diff: str | None = None) -> None:
        super().__init__(result.case_id)
        self.result = result
        self.golden_diff = golden_diff


class ControlFailed(Exception):
    def __init__(self, verdict: ControlVerdict) -> None:
        super().__init__(verdict.summary())
        self.verdict = verdict


def _render_value(value: Any) -> str:
    text = canonical_json(escape_surrogates_json(value))
    return text if len(text) <= 240 else text[:237] + "..."


def failure_text(result: CaseResult, golden_diff: str | None = None) -> str:
    """The failure text of a case: a short first line, then every failed check."""
    failed = result.failed_checks
    if result.failure_class is not None:
        head = f"{result.failure_class.value}: {result.failure_reason}"
    else:
        names = ", ".join(check.name for check in failed[:4])
        more = f" (+{len(failed) - 4} more)" if len(failed) > 4 else ""
        head = f"{len(failed)} of {len(result.checks)} checks failed: {names}{more}"
    lines = [head]
    if result.failure_traceback:
        lines.append(traceback_heading())
        lines.extend(f"  {line}" for line in result.failure_traceback.splitlines())
    if result.failure_class is not None and failed:
        lines.append(f"{len(failed)} of {len(result.checks)} checks failed:")
    for check in failed:
        if check.status is CheckStatus.MISSING:
            lines.append(f"  {check.name}: {_not_graded(check, result.failure_class)}")
            continue
        compared = f"expected {_render_value(check.expected)}, got {_render_value(check.actual)}"
        if check.expected is None and check.actual is None and check.detail:
            # A check with no values (the golden output) explains itself in its detail.
            verdict = check.detail
        else:
            verdict = compared + (f" ({check.detail})" if check.detail else "")
        lines.append(f"  {check.name} [{check.status.value}]: {verdict}")
    if golden_diff:
        lines.append("golden output changed (re-pin with --snapshot-update):")
        lines.extend(f"  {line}" for line in golden_diff.splitlines())
    # The terminal and the JUnit file write this text: neither takes a lone surrogate.
    return escape_surrogates("\n".join(lines))


_UNGRADED_BECAUSE = {
    FailureClass.PRODUCT_ERROR: "the output was refused",
    FailureClass.AGENT_ERROR: "the adapter failed",
    FailureClass.HARNESS_ERROR: "the harness failed",
}


def _not_graded(check: Check, failure_class: FailureClass | None) -> str:
    """A check the output gave no value for: why it was not graded, and what it expected.

    "expected null, got null" said nothing; the reason is the check's detail, else the
    case's failure (whose reason heads the text), else the value's absence.
    """
    if check.detail:
        reason = check.detail
    elif failure_class is not None:
        reason = f"{_UNGRADED_BECAUSE[failure_class]} ({failure_class.value})"
    else:
        reason = "the output carries no value for it"
    text = f"not graded: {reason}"
    if check.expected is not None:
        text += f" (expected {_render_value(check.expected)})"
    if check.actual is not None:
        text += f" (got {_render_value(check.actual)})"
    return text


def traceback_heading() -> str:
    if tracebacks.FULL_TRACEBACKS:
        return "what the adapter raised:"
    return "what the adapter raised (its own frames; --tb=long shows all):"


class FailureRepr(TerminalRepr):
    """A failure text whose first line is its crash message.

    pytest takes the JUnit ``message`` attribute and the short-summary reason
    from ``reprcrash``; for a plain string it would use the whole text.
    """

    def __init__(self, text: str, *, path: str, lineno: int) -> None:
        self.text = text
        first_line = text.splitlines()[0] if text else ""
        self.reprcrash = ReprFileLocation(path=path, lineno=lineno, message=first_line)

    def toterminal(self, tw: TerminalWriter) -> None:
        for line in self.text.splitlines():
            tw.line(line)


def _control_test(request: pytest.FixtureRequest) -> None:
    """The body of every negative-control item."""
    node = request.node
    assert isinstance(node, ControlItem)
    node.execute(request)


def _register_suite_marker(config: pytest.Config, suite_id: str) -> None:
    """Declare the suite-id marker so ``--strict-markers`` accepts it."""
    known: set[str] = config.stash.setdefault(_SUITE_MARKERS_KEY, set())
    if suite_id not in known:
        known.add(suite_id)
        config.addinivalue_line("markers", f"{suite_id}: items of agentbench suite {suite_id}")


def _register_label_marker(config: pytest.Config, label: str) -> None:
    """Declare a world's case label as a marker so ``--strict-markers`` accepts it."""
    known: set[str] = config.stash.setdefault(_LABEL_MARKERS_KEY, set())
    if label not in known:
        known.add(label)
        config.addinivalue_line("markers", f"{label}: agentbench cases labelled {label}")


_SUITE_MARKERS_KEY = pytest.StashKey[set[str]]()
_LABEL_MARKERS_KEY = pytest.StashKey[set[str]]()
SUITE_NODEIDS_KEY = pytest.StashKey[dict[Path, str]]()
"""The node id of each suite folder's ``suite.yaml`` (or marker) collector, by resolved folder."""
REFUSED_KEY = pytest.StashKey[dict[str, str]]()
"""Rendered suite refusals by the node id of the collector that reported them."""


def refusal_text(collector: pytest.Collector, error: AgentbenchError) -> str:
    """Render a suite refusal, remembering it so the session can run the other suites."""
    text = error.render()
    collector.config.stash.setdefault(REFUSED_KEY, {})[collector.nodeid] = text
    return text


class CaseItem(pytest.Item):
    """One benchmark case; :class:`FixtureCaseItem` and :class:`DirectCaseItem` run it."""

    loaded: LoadedSuite
    case: Case
    trial: int | None = None
    """1-based trial index under ``--agentbench-repeat``; ``None`` for a single trial."""
    trial_count: int = 1
    model: str | None = None
    """The matrix model the item runs its case with (``case[model=NAME]``); ``None``
    outside a matrix. Set once the item is made (a class default otherwise)."""
    answered_by: str | None = None
    """The adapter class that answered (or ``recorded outputs``), once the case ran.

    An attribute set when the item is made rather than a stash entry added when
    it runs: a sixth stash entry would double every item's stash table.
    """
    runs_ahead: bool = False
    """Whether ``--agentbench-concurrency`` may run the case before its turn: its
    adapter and view are the plugin's own and no fixture needs setting up first."""

    def _bind_case(self, loaded: LoadedSuite, case: Case, trial: int | None, count: int) -> None:
        # The markers ``agentbench`` and the suite id sit on the case file, which
        # every case item inherits them from: one set per file rather than per case.
        # A world's labels (tiers, kinds) differ per case, so they are the item's own.
        self.loaded = loaded
        self.case = case
        self.trial = trial
        self.trial_count = count
        self.answered_by = None
        for label in case.labels:
            if label.isidentifier():
                _register_label_marker(self.config, label)
                self.add_marker(label)
            else:
                # pytest reads a marker name only up to a colon (``cluster:<id>``), so
                # such a label could never be registered; it stays a ``-k`` keyword.
                self.extra_keyword_matches.add(label)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = None if self.case.line is None else self.case.line - 1
        return self.path, line, f"{self.loaded.suite.id}::{self.name}"

    def execute(
        self,
        request: pytest.FixtureRequest | None,
        view: Any,
        given_adapter: Any,
        state: AgentbenchState | None = None,
    ) -> None:
        """Run, grade and relay the case; ``state``: the run's, when the caller has it."""
        if state is None:
            state = get_state(self.config)
        rerun = stashed(self.config.stash, RERUN_KEY)
        outcome: Outcome | None
        if rerun is not None and rerun.replay is not None:
            self.answered_by = "recorded outputs"
            outcome, result = rerun.replay_case(state, self.loaded, self.case, view, self.trial)
        elif (job := self._run_ahead()) is not None:
            view = job.view
            self.answered_by = adapter_class(job.adapter)
            outcome, result = job.result()
            self._keep_transcript(state)
        else:
            adapter = state.adapter_for(self.loaded, given_adapter)
            self.answered_by = adapter_class(adapter)
            token = enter_trial(
                self.loaded.suite.id, self.case.case_id, self.trial, self.trial_count
            )
            model_token = enter_model(self.model)
            try:
                outcome, result = state.execute(self.loaded, self.case, view, adapter, ledger=True)
            finally:
                leave_model(model_token)
                leave_trial(token)
            self._keep_transcript(state)
        if self.trial is not None or self.case.cluster is not None:
            result = result.model_copy(update={"trial": self.trial, "cluster": self.case.cluster})
        if self.model is not None:
            result = result.model_copy(update={"model": self.model})
        if rerun is not None:
            result = rerun.keep_output(
                result,
                outcome,
                case=self.case,
                view=view,
                suite=self.loaded.suite,
                adapter=state.adapter_description,
            )
        golden_diff = None
        if (
            request is not None
            and state.options.snapshot
            and outcome is not None
            and outcome.failure_class is None
        ):
            try:
                assert_golden(request, outcome.output)
            except GoldenMismatch as mismatch:
                # The whole output is pinned; what the reports repeat of the diff is capped.
                limit = state.options.max_output_bytes
                golden_diff = cap_text(mismatch.diff, limit) if limit else mismatch.diff
                result = result.model_copy(
                    update={
                        "outcome": CaseOutcome.FAILED
                        if result.outcome is CaseOutcome.PASSED
                        else result.outcome,
                        "checks": (
                            *result.checks,
                            Check(
                                name="golden_output",
                                status=CheckStatus.FAIL,
                                detail=mismatch.detail,
                            ),
                        ),
                    }
                )
        self.stash[RESULT_KEY] = result
        if result.outcome is CaseOutcome.EXCLUDED:
            # Not the agent's failure: the item is skipped, its result still reported.
            pytest.skip(f"excluded: {result.failure_reason}")
        if result.outcome is not CaseOutcome.PASSED:
            raise CaseFailed(result, golden_diff)

    def _keep_transcript(self, state: AgentbenchState) -> None:
        """Stash the case's transcript for the relay (the report's sidecar file)."""
        # Asked first: only a run writing a report settles transcripts.
        if state.settled_transcript is not None:
            events = state.take_transcript()
            if events:
                self.stash[TRANSCRIPT_KEY] = events

    def _run_ahead(self) -> Any:
        """The case's run started ahead of its turn (a ``CaseJob``), if it was."""
        if not self.runs_ahead:
            return None
        prefetcher = stashed(self.config.stash, PREFETCHER_KEY)
        return None if prefetcher is None else prefetcher.take(self)  # None: no concurrency

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, CaseFailed):
            return failure_text(excinfo.value.result, excinfo.value.golden_diff)
        return super().repr_failure(excinfo)


class FixtureCaseItem(CaseItem, pytest.Function):
    """A case whose adapter (and, when overridden, world) arrive through fixtures.

    Its body requests ``agentbench_adapter``; when something overrides
    ``agentbench_world`` or golden outputs need the ``snapshot`` fixture, it
    requests ``agentbench_world`` and ``request`` too, and otherwise computes the
    world's public view directly, exactly as the plugin's own fixture would.
    """

    def __init__(
        self,
        *,
        loaded: LoadedSuite,
        case: Case,
        resolve_world: bool,
        trial: int | None = None,
        trial_count: int = 1,
        **kwargs: Any,
    ) -> None:
        body = self._run_resolved if resolve_world else self._run
        super().__init__(callobj=body, **kwargs)
        self._bind_case(loaded, case, trial, trial_count)

    def _run(self, agentbench_adapter: Any) -> None:
        view = self.loaded.world.public_view(self.loaded.suite, self.case)
        self.execute(None, view, agentbench_adapter)

    def _run_resolved(
        self, request: pytest.FixtureRequest, agentbench_world: Any, agentbench_adapter: Any
    ) -> None:
        self.execute(request, agentbench_world, agentbench_adapter)

    def _prunetraceback(self, excinfo: ExceptionInfo[BaseException]) -> None:
        return None


class DirectCaseItem(CaseItem):
    """A case run without pytest's fixture machinery.

    Used only where fixture resolution could not change anything: the
    plugin's own ``agentbench_adapter`` and ``agentbench_world`` are the ones in
    force, no other autouse fixture applies and no golden output is pinned. It
    then takes the same adapter and view the fixtures would give, at a fraction
    of the per-item cost, and may always run ahead under ``--agentbench-concurrency``.
    """

    runs_ahead = True

    def __init__(
        self,
        *,
        loaded: LoadedSuite,
        case: Case,
        trial: int | None = None,
        trial_count: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._bind_case(loaded, case, trial, trial_count)

    def runtest(self) -> None:
        loaded = self.loaded
        view = loaded.world.public_view(loaded.suite, self.case)
        state = get_state(self.config)
        self.execute(None, view, state.adapter, state)


class ControlItem(pytest.Function):
    """A negative (or reference) control: passes only when it fails exactly as declared."""

    def __init__(
        self, *, loaded: LoadedSuite, control: ControlSpec | None, agent_id: str, **kwargs: Any
    ) -> None:
        super().__init__(callobj=_control_test, **kwargs)
        self.loaded = loaded
        self.control = control
        self.agent_id = agent_id
        _register_suite_marker(self.config, loaded.suite.id)
        self.add_marker("agentbench")
        self.add_marker("agentbench_control")
        self.add_marker(loaded.suite.id)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.loaded.suite.id}::{self.name}"

    def _prunetraceback(self, excinfo: ExceptionInfo[BaseException]) -> None:
        return None

    def execute(self, request: pytest.FixtureRequest) -> None:
        if self.control is None:
            verdict = ungraded_verdict(self.name, self.agent_id)
            self.stash[VERDICT_KEY] = verdict
            raise ControlFailed(verdict)
        state = get_state(self.config)
        verdict, metrics = run_control(state, self.loaded, self.control)
        self.stash[VERDICT_KEY] = verdict
        if state.options.snapshot:
            report = {m.name: m.value for m in metrics}
            try:
                assert_golden(request, report)
            except GoldenMismatch as mismatch:
                raise ControlFailed(
                    verdict.model_copy(
                        update={
                            "passed": False,
                            "metric_mismatches": (
                                *verdict.metric_mismatches,
                                "golden metric report changed:\n" + mismatch.diff,
                            ),
                        }
                    )
                ) from None
        if not verdict.passed:
            raise ControlFailed(verdict)

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, ControlFailed):
            return excinfo.value.verdict.summary()
        return super().repr_failure(excinfo)


def _display(config: pytest.Config, path: Path) -> str:
    """``path`` as refusals name it: relative to the rootdir where possible."""
    try:
        return path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return str(path)


def _nodeid_for(parent: pytest.Collector, root: Path, path: Path) -> str | None:
    """Readable ``suites/<folder>/<file>`` ids for suites outside the rootdir (packaged ones).

    Only node ids are shortened so: messages name such a suite by its real path.
    """
    try:
        path.relative_to(parent.config.rootpath)
    except ValueError:
        return f"suites/{root.name}/{path.relative_to(root).as_posix()}"
    return None


class _SuiteCollector(pytest.File):
    """A file of a suite: a refused suite renders as its one-line refusal."""

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, SuiteCollectionError):
            return refusal_text(self, excinfo.value.error)
        return super().repr_failure(excinfo)

    def _case_items(self, loaded: LoadedSuite) -> Iterator[CaseItem]:
        """The case items of the cases the world places in this file."""
        suite = loaded.suite
        relative = self.path.relative_to(suite.root).as_posix()
        cases = [case for case in loaded.world.cases(suite) if case.file == relative]
        _share_fields_sets(suite, cases)
        state = get_state(self.config)
        options = state.options
        snapshot, count = options.snapshot, options.repeat
        models: list[str | None] = [
            entry.name for entry in self.config.stash.get(MATRIX_KEY, ())
        ] or [None]
        # Every item is held until the run ends: a run of millions exhausts memory first.
        total = state.items_collected + len(cases) * count * len(models)
        if total > options.max_items:
            raise SuiteCollectionError(
                AgentbenchError(
                    "too_many_items",
                    f"{len(cases)} cases x {count} trials"
                    + (f" x {len(models)} models" if len(models) > 1 else "")
                    + f" would make {total} case items in "
                    f"this run, over the limit of {options.max_items} "
                    "(raise it with --agentbench-max-items N)",
                    file=suite.display(relative),
                    field="--agentbench-repeat" if count > 1 else None,
                )
            )
        state.items_collected = total
        trials: list[int | None] = [None] if count == 1 else list(range(1, count + 1))
        inert = self._fixtures_are_inert()
        if not snapshot and inert:
            for case in cases:
                for model in models:
                    for trial in trials:
                        direct = DirectCaseItem.from_parent(
                            self,
                            name=model_item_name(item_name(case.case_id, trial), model),
                            loaded=loaded,
                            case=case,
                            trial=trial,
                            trial_count=count,
                        )
                        direct.model = model
                        yield direct
            return
        resolve_world = snapshot or not self._own_fixture("agentbench_world")
        # Every item of this file has the same body and parent, hence the same
        # fixture closure: pytest computes it once, as for a parametrized test.
        fixtureinfo = None
        for case in cases:
            for model in models:
                for trial in trials:
                    item = FixtureCaseItem.from_parent(
                        self,
                        name=model_item_name(item_name(case.case_id, trial), model),
                        loaded=loaded,
                        case=case,
                        resolve_world=resolve_world,
                        fixtureinfo=fixtureinfo,
                        trial=trial,
                        trial_count=count,
                    )
                    item.model = model
                    fixtureinfo = item._fixtureinfo
                    if inert:  # only the golden output needs fixtures, and only after the run
                        item.runs_ahead = True
                    yield item

    def _own_fixture(self, name: str) -> bool:
        """Whether ``name`` resolves, for this file, to the plugin's own fixture."""
        definitions = self.session._fixturemanager.getfixturedefs(name, self)
        if not definitions:
            return False
        return definitions[-1].func.__module__ == fixtures.__name__

    def _fixtures_are_inert(self) -> bool:
        """Whether resolving fixtures for this file's cases could change nothing."""
        if not (self._own_fixture("agentbench_adapter") and self._own_fixture("agentbench_world")):
            return False
        autouse = set(self.session._fixturemanager._getautousenames(self))
        # syrupy's session fixture only patches PyCharm's diff viewer, and only
        # when asked to; any other autouse fixture must run for every case.
        if not getattr(self.config.option, "patch_pycharm_diff", False):
            autouse.discard("_syrupy_apply_ide_patches")
        return not autouse


_FIELDS_SETS = "agentbench.fields_sets"
"""``suite.cache`` key: one copy of each distinct set of field names its cases were given."""


def _share_fields_sets(suite: Suite, cases: Sequence[Case]) -> None:
    """Give the cases that were made with the same fields one shared fields set.

    pydantic keeps, per instance, the set of the field names the constructor was given
    (``model_fields_set``): a case made with five of its fields holds a set of 728 bytes,
    more than the rest of the record, and every case item keeps its case until the run
    ends. A frozen record never changes that set in place (``model_copy`` copies it), so
    equal sets can be one object; the cases themselves are unchanged.
    """
    shared: dict[frozenset[str], set[str]] = suite.cache.setdefault(_FIELDS_SETS, {})
    for case in cases:
        names = case.__pydantic_fields_set__
        same = shared.setdefault(frozenset(names), names)
        if same is not names:
            object.__setattr__(case, "__pydantic_fields_set__", same)


class SuiteFile(_SuiteCollector):
    """``suite.yaml``: loads and verifies the suite, yields its control items.

    For a folder a world recognises as its original's layout, the marker file
    the world named plays this part (``recognised``). That layout has no place
    for a controls manifest: without one in the oracle folder, such a folder
    runs its cases and reports no ungraded negative agents.
    """

    def __init__(self, *, suite_root: Path | None = None, recognised: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.suite_root = self.path.parent if suite_root is None else suite_root
        self.recognised = recognised

    def collect(self) -> Iterator[pytest.Item]:
        state = get_state(self.config)
        nodeids = self.config.stash.setdefault(SUITE_NODEIDS_KEY, {})
        nodeids[self.suite_root.resolve()] = self.nodeid
        try:
            loaded = state.loader.load(self.suite_root)
            controls = self._controls(loaded)
        except AgentbenchError as exc:
            raise SuiteCollectionError(exc) from None
        yield from controls
        if self.recognised:
            # A one-file layout: the marker file holds the cases too, and no
            # other collector is made for it.
            _register_suite_marker(self.config, loaded.suite.id)
            for item in self._case_items(loaded):
                item.add_marker("agentbench")
                item.add_marker(loaded.suite.id)
                yield item

    def _controls(self, loaded: LoadedSuite) -> list[ControlItem]:
        oracle = suite_control_oracle(
            loaded.world,
            loaded.suite,
            loaded.world.dimensions(loaded.suite),
            lambda path: _display(self.config, path),
        )
        if oracle is None and self.recognised:
            return []
        declared = declared_controls(loaded, oracle)
        items = [
            ControlItem.from_parent(
                self,
                name=f"control-{control.id}",
                loaded=loaded,
                control=control,
                agent_id=control.agent,
            )
            for control in declared
        ]
        items.extend(
            ControlItem.from_parent(
                self, name=f"ungraded-{agent_id}", loaded=loaded, control=None, agent_id=agent_id
            )
            for agent_id in ungraded_agents(loaded, declared)
        )
        loaded.suite.cache[CONTROL_NAMES] = tuple(item.name for item in items)
        return items


class CaseFile(_SuiteCollector):
    """A file a world names as holding cases."""

    def __init__(
        self, *, loaded: LoadedSuite | None, error: AgentbenchError | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.loaded = loaded
        self.error = error
        if loaded is not None:
            _register_suite_marker(self.config, loaded.suite.id)
            self.add_marker("agentbench")
            self.add_marker(loaded.suite.id)

    def collect(self) -> Iterator[CaseItem]:
        if self.loaded is None:
            assert self.error is not None
            raise SuiteCollectionError(self.error)
        yield from self._case_items(self.loaded)


def collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """The ``pytest_collect_file`` logic: suite.yaml and case files only."""
    state = get_state(parent.config)
    if file_path.name == SUITE_FILE:
        folder = file_path.parent
        nodeid = _nodeid_for(parent, folder, file_path)
        return SuiteFile.from_parent(parent, path=file_path, nodeid=nodeid)
    root = state.loader.suite_root_of(file_path.parent)
    if root is None:
        return None
    anchor = state.loader.anchor(root)
    if anchor != SUITE_FILE and file_path == root / anchor:
        nodeid = _nodeid_for(parent, root, file_path)
        return SuiteFile.from_parent(
            parent, path=file_path, nodeid=nodeid, suite_root=root, recognised=True
        )
    try:
        loaded = state.loader.load(root)
    except AgentbenchError as exc:
        # suite.yaml reports the refusal; a case file named on the command line
        # reports it too, so running one file of a broken suite is not silent.
        if parent.session.isinitpath(file_path):
            return CaseFile.from_parent(parent, path=file_path, loaded=None, error=exc)
        return None
    suite = loaded.suite
    # Asked for every file in the suite folder: the set is built once per suite.
    if "agentbench.case_files" not in suite.cache:
        suite.cache["agentbench.case_files"] = frozenset(
            case.file for case in loaded.world.cases(suite)
        )
    case_files: frozenset[str] = suite.cache["agentbench.case_files"]
    if file_path.relative_to(suite.root).as_posix() not in case_files:
        return None
    nodeid = _nodeid_for(parent, suite.root, file_path)
    return CaseFile.from_parent(parent, path=file_path, loaded=loaded, nodeid=nodeid)


def refuse_late(session: pytest.Session, items: list[pytest.Item]) -> None:
    """Drop the items of suites refused after they were collected, reporting each refusal.

    A duplicate suite id is found when the second folder loads, after the first
    folder's items exist. The first folder is refused too (see
    ``SuiteLoader._claim``): its items leave the run and its refusal is
    reported as a collection error of its ``suite.yaml``, exactly as the other
    folder's is, in every process (xdist workers agree, so the report is one).
    """
    late = get_state(session.config).loader.late_refusals()
    if not late:
        return
    nodeids = session.config.stash.get(SUITE_NODEIDS_KEY, {})
    items[:] = [
        item
        for item in items
        if not (
            isinstance(item, CaseItem | ControlItem) and item.loaded.suite.root.resolve() in late
        )
    ]
    for root, error in late.items():
        nodeid = nodeids.get(root) or f"{_display(session.config, root)}/{SUITE_FILE}"
        text = error.render()
        session.config.stash.setdefault(REFUSED_KEY, {})[nodeid] = text
        report = pytest.CollectReport(nodeid, "failed", text, [])
        setattr(report, REFUSAL_ATTR, text)
        session.config.hook.pytest_collectreport(report=report)
