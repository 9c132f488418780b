"""What a benchmark item's reports carry, and where they are recorded.

While a case or control item runs, its setup report gets its identity and its
call report what it produced (graded result, control verdict, adapter class),
as JSON text attributes that pytest-xdist carries to the controller. Without
xdist the identity goes straight to the recorder instead, and so does the result,
whose figures the recorder keeps; when nothing reads it whole
(``RunRecorder.whole_results``) it is never serialised.
Where reports arrive (the controller, or the only process) a failure text
becomes a :class:`FailureRepr` and the :class:`RunRecorder` records the report.

One setup hook and one report hook do all of this: a plugin that adds hook
calls per report adds them ten thousand times to a suite of that size.
"""

from __future__ import annotations

import pytest

from pytest_agentbench.plugin.collect import (
    RESULT_KEY,
    TRANSCRIPT_KEY,
    VERDICT_KEY,
    CaseItem,
    ControlItem,
    FailureRepr,
    stashed,
)
from pytest_agentbench.report.junit import HarnessErrorsAsErrors
from pytest_agentbench.report.recorder import (
    HARNESS_ERROR,
    IDENTITY_ATTR,
    TRANSCRIPT_ATTR,
    Identity,
    RunRecorder,
    attach,
)
from pytest_agentbench.run.defaults import DEFAULT_MAX_OUTPUT_BYTES
from pytest_agentbench.run.output_caps import stored_result
from pytest_agentbench.run.session import LoadedSuite
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult
from pytest_agentbench.sdk.metrics import reduced
from pytest_agentbench.sdk.suite import Suite


def wire_root(config: pytest.Config, suite: Suite) -> str:
    """The suite folder as a report names it to the process that aggregates.

    An xdist worker names it relative to its rootdir where it lies inside: a
    remote worker (``--tx socket=``/``ssh=``) runs a checkout at another path,
    and the controller finds the same folder under its own rootdir.
    """
    cache = suite.cache
    if "agentbench.wire_root" not in cache:
        root = str(suite.root)
        if hasattr(config, "workerinput") and suite.root.is_relative_to(config.rootpath):
            root = suite.root.relative_to(config.rootpath).as_posix()
        cache["agentbench.wire_root"] = root
    return str(cache["agentbench.wire_root"])


def _reduced(loaded: LoadedSuite) -> bool:
    """Whether a metric of the suite has a world reducer, which reads the results whole."""
    cache = loaded.suite.cache
    found = cache.get("agentbench.reduced")
    if found is None:
        try:
            found = cache["agentbench.reduced"] = reduced(loaded.world.metrics(loaded.suite))
        except Exception:
            # Asked here of a world, which may raise anything: the summary asks again at
            # the run's end and fails there, as it did before; until then keep the texts.
            return True
    return bool(found)


def identity_of(item: CaseItem | ControlItem) -> Identity:
    suite = item.loaded.suite
    root = wire_root(item.config, suite)
    if isinstance(item, CaseItem):
        return Identity(
            "case", suite.id, root, item.case.case_id, item.case.labels, item.trial, item.model
        )
    return Identity("control", suite.id, root, item.name)


class ReportRelay:
    """Registered in every process; records only where ``recorder`` is given."""

    def __init__(
        self,
        recorder: RunRecorder | None,
        *,
        junit_case_properties: bool,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        canonical_results: bool = False,
    ) -> None:
        self.recorder = recorder
        self.junit_case_properties = junit_case_properties
        self.max_output_bytes = max_output_bytes
        self.canonical_results = canonical_results
        """Results travel as canonical JSON (``RunRecorder.results_canonical``)."""
        self._running: CaseItem | ControlItem | None = None
        self._running_nodeid = ""
        self._identity = ""
        """The running item's identity as its setup report carries it to the controller."""
        self.junit_errors: HarnessErrorsAsErrors | None = None
        """Where JUnit XML is written: renames a harness error's ``<failure>``."""
        self._junit_pending: dict[tuple[str, object], pytest.TestReport] = {}
        """Harness-error call reports junitxml has yet to write, by (node id, worker):
        relabelled at the node's next report, once junitxml has written the call."""

    # First of all setup hooks (registered after pytest's own, so first among the
    # tryfirst ones): one that skips or fails the item must find it known here.
    # A plain hook rather than a wrapper of the whole protocol, which costs more per item.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if not isinstance(item, CaseItem | ControlItem):
            self._running = None
            return
        self._running = item
        # Node ids are properties that build their text: each report compares with this one.
        self._running_nodeid = item.nodeid
        identity = identity_of(item)
        if self.recorder is None:
            self._identity = identity.to_wire()
        else:
            # Recorded where it runs (no xdist): the report need not carry it as text.
            self.recorder.identities.setdefault(self._running_nodeid, identity)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The controller needs the identity from setup (a crash may follow) and
        # the result from the call; teardown reports carry nothing new, and only
        # a failed one has a failure text to show.
        when = report.when
        held = None
        if when != "call" and report.passed:
            if when == "teardown":
                if self._junit_pending:
                    self._relabel(report)
                return
            item = self._running
            if item is not None and report.nodeid == self._running_nodeid:
                if self.recorder is None:
                    attach(report, self._identity)
                # Otherwise the identity is recorded already, and a passed setup
                # report gives the recorder nothing else.
                return
        else:
            if self._junit_pending and when != "call":
                # A failed teardown, or the crash report of a node whose worker died.
                self._relabel(report)
            item = self._running
            if item is not None and when != "teardown" and report.nodeid == self._running_nodeid:
                if when == "call":
                    held = self._attach_call(item, report)
                elif self.recorder is None:
                    attach(report, self._identity)
        if self.recorder is not None:
            # Here rather than in the worker: under xdist the text arrives as a plain string.
            if report.failed:
                if isinstance(report.longrepr, str) and (
                    hasattr(report, IDENTITY_ATTR) or report.nodeid in self.recorder.identities
                ):
                    path, lineno, _ = report.location
                    report.longrepr = FailureRepr(report.longrepr, path=path, lineno=lineno or 0)
                if (
                    self.junit_errors is not None
                    and when == "call"
                    and getattr(report, HARNESS_ERROR, False)
                ):
                    self._junit_pending[(report.nodeid, getattr(report, "node", None))] = report
            self.recorder.record(report, held)

    def _relabel(self, report: pytest.TestReport) -> None:
        """Relabel the node's harness error, which junitxml wrote after this hook last ran."""
        call = self._junit_pending.pop((report.nodeid, getattr(report, "node", None)), None)
        if call is not None and self.junit_errors is not None:
            self.junit_errors.relabel(call)

    def relabel_pending(self) -> None:
        """Relabel the harness errors no later report of their node came to (the run's end)."""
        pending, self._junit_pending = self._junit_pending, {}
        if self.junit_errors is not None:
            for call in pending.values():
                self.junit_errors.relabel(call)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if self.recorder is not None:
            self.recorder.record_collection(report)

    def _attach_call(
        self, item: CaseItem | ControlItem, report: pytest.TestReport
    ) -> CaseResult | None:
        """Attach what the item produced; return its result when the recorder takes it as is
        (here, not under xdist), in place of its text when nothing reads it whole."""
        # Only a case item has a result, only a control item a verdict.
        case = isinstance(item, CaseItem)
        result = item.stash.get(RESULT_KEY, None) if case else None
        verdict = None if case else item.stash.get(VERDICT_KEY, None)
        events = stashed(item.stash, TRANSCRIPT_KEY)  # a plain run keeps no transcript
        if events is not None:
            del item.stash[TRANSCRIPT_KEY]
            if result is not None:
                # Only a run keeping transcripts imports their writer.
                from pytest_agentbench.report.transcripts import transcript_line

                line = transcript_line(self._running_nodeid, result, events)
                setattr(report, TRANSCRIPT_ATTR, line)
        if result is not None:
            # A finished item keeps no graded result alive: the report carries it.
            del item.stash[RESULT_KEY]
            if self.junit_case_properties:
                checks = [(f"agentbench.check.{c.name}", c.status.value) for c in result.checks]
                report.user_properties.extend(checks)
                # JUnit XML writes the properties of the teardown report, built from the item.
                item.user_properties.extend(checks)
        recorder = self.recorder
        held = None
        wired = result
        # A suite with a world reducer has its results read whole: no figures are kept.
        if result is not None and recorder is not None and not _reduced(item.loaded):
            held = result
            if not recorder.whole_results:
                wired = None  # the figures are all the run reads: no text is made
        attach(
            report,
            None,
            result=None
            if wired is None
            else stored_result(wired, self.max_output_bytes, canonical=self.canonical_results),
            verdict=None if verdict is None else verdict.model_dump_json(),
            answered_by=item.answered_by if isinstance(item, CaseItem) else None,
            harness_error=result is not None and result.outcome is CaseOutcome.ERROR,
        )
        return held
