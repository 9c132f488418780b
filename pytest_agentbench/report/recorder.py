"""Controller-side collection of graded cases from test reports.

The worker attaches the item's identity to its setup report and the graded
result to its call report, each as one JSON text attribute: pytest-xdist
carries them, and the reports pytest keeps until the end of the run hold no
extra containers for the garbage collector to walk.
The controller keeps the last result per node id, so ``--dist each`` and reruns
never double-count, and a node whose worker crashed is recorded as a
``harness_error`` rather than silently dropped. Once recorded, both texts
leave the report (pytest keeps every report until the run ends): the identity
for :attr:`RunRecorder.identities`, the result for a :class:`CaseStore` on
disk, so memory does not hold every case's record until the run ends.
A case graded in the recording process itself has its result handed to
:meth:`RunRecorder.record` as is, which keeps its figures (the summary decodes no
text for them); in a run where nothing reads a result whole
(:attr:`RunRecorder.whole_results`) it travels as no text at all.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest

from pytest_agentbench.report.case_store import CaseStore
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult, FailureClass, harness_error
from pytest_agentbench.sdk.controls import ControlVerdict

if TYPE_CHECKING:
    from pytest_agentbench.plugin.crash_witness import CrashWitness
    from pytest_agentbench.report.live_progress import LiveProgress
    from pytest_agentbench.report.run_log import RunLog
    from pytest_agentbench.report.transcripts import TranscriptSink

IDENTITY_ATTR = "agentbench_identity"
RESULT_ATTR = "agentbench_result"
VERDICT_ATTR = "agentbench_verdict"
ANSWERED_BY_ATTR = "agentbench_answered_by"
TRANSCRIPT_ATTR = "agentbench_transcript"
"""Attribute of a case's call report: its transcript line (``report.transcripts``)."""
HARNESS_ERROR = "agentbench_harness_error"
"""Attribute of a failed call report whose case is a harness error (JUnit writes ``<error>``)."""
REFUSAL = "agentbench_refusal"
"""Attribute of a collection report carrying a suite refusal (JSON-safe, crosses xdist)."""
CRASH_REASON = "worker crashed while running it"
ADAPTER_CRASH_REASON = "worker crashed inside the adapter call"


class Identity(NamedTuple):
    kind: str
    """``case`` or ``control``."""
    suite_id: str
    suite_root: str
    item_id: str
    labels: tuple[str, ...] = ()
    trial: int | None = None
    """The trial index under ``--agentbench-repeat`` (``item_id`` is the case id)."""
    model: str | None = None
    """The matrix model of the item; sent only when set, so a run of one model's wire is
    as before."""

    def to_wire(self) -> str:
        wire = [self.kind, self.suite_id, self.suite_root, self.item_id, self.labels, self.trial]
        if self.model is not None:
            wire.append(self.model)
        return json.dumps(wire)

    @classmethod
    def from_wire(cls, text: str, shared: dict[Any, Any] | None = None) -> Identity:
        """Parse ``to_wire`` text; values already in ``shared`` are reused, new ones added.

        Thousands of identities repeat one kind, suite id, folder and label set:
        sharing them keeps one copy of each rather than one per case.
        """
        kind, suite_id, suite_root, item_id, labels, trial, *model = json.loads(text)
        labels = tuple(labels)
        if shared is not None:
            kind = shared.setdefault(kind, kind)
            suite_id = shared.setdefault(suite_id, suite_id)
            suite_root = shared.setdefault(suite_root, suite_root)
            labels = shared.setdefault(labels, labels)
        return cls(kind, suite_id, suite_root, item_id, labels, trial, *model)


def attach(
    report: pytest.TestReport,
    identity: str | None,
    *,
    result: str | None = None,
    verdict: str | None = None,
    answered_by: str | None = None,
    harness_error: bool = False,
) -> None:
    """Attach an item's identity (``Identity.to_wire``) and, from the call, what it produced.

    The setup report carries the identity; the call report needs none, since the
    controller has it from the setup report by then.
    """
    # One test per attribute, not a loop over pairs: this runs for every report of a run.
    if identity is not None:
        setattr(report, IDENTITY_ATTR, identity)
    if result is not None:
        setattr(report, RESULT_ATTR, result)
    if verdict is not None:
        setattr(report, VERDICT_ATTR, verdict)
    if answered_by is not None:
        setattr(report, ANSWERED_BY_ATTR, answered_by)
    if harness_error:
        setattr(report, HARNESS_ERROR, True)


def _first_line(report: pytest.TestReport) -> str:
    text = str(report.longrepr or "").strip().splitlines()
    return text[-1] if text else report.outcome


@dataclass
class RecordedControl:
    suite_id: str
    nodeid: str
    verdict: ControlVerdict | None
    reason: str | None = None


@dataclass
class RunRecorder:
    identities: dict[str, Identity] = field(default_factory=dict)
    graded: CaseStore = field(default_factory=CaseStore)
    """Per case node id: the result as the JSON text it travelled in, or one made here.

    Text is parsed only when the run is summarised, one result at a time:
    thousands of retained model graphs would otherwise make every garbage
    collection of the run slower, and hold every case's record in memory.
    """
    controls: dict[str, RecordedControl] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    crashed: list[str] = field(default_factory=list)
    refusals: dict[str, str] = field(default_factory=dict)
    """Refused suites by collector node id: reported, never silently absent."""
    answered_by: dict[str, set[str]] = field(default_factory=dict)
    """Adapter classes that ran each suite's cases."""
    crash_witness: CrashWitness | None = None
    """Tells whether a crashed xdist worker died inside the adapter call."""
    crashed_in_adapter: set[str] = field(default_factory=set)
    """Node ids whose worker died inside the adapter call: graded as ``agent_error``."""
    selected: dict[str, set[str]] = field(default_factory=dict)
    """Per suite folder, the node ids of the case items the run selected (the census)."""
    whole_results: bool = True
    """Whether something reads the results whole (a report, the run log, the journal, a
    baseline comparison ...). Cleared at the session's start of a run where nothing does:
    a result graded here then keeps only its figures (``CaseStore.put_figures``); one that
    arrives as text (from an xdist worker) is stored as it came."""
    results_canonical: bool = False
    """The result texts reports carry are canonical JSON (``stored_result``), as every
    process of a run writing a JSON or HTML report makes them: the report copies them."""
    transcripts: TranscriptSink | None = None
    """Where cases' transcripts go as they arrive (under ``--agentbench-report``)."""
    log: RunLog | None = None
    """The run log each case's event goes to as it arrives (see :mod:`.run_log`)."""
    progress: LiveProgress | None = None
    """The live progress line each case counts in as it arrives (see :mod:`.live_progress`)."""
    rootpath: Path | None = None
    """Where the suite folders xdist workers name relative to their rootdir lie here."""
    journal: Callable[[str], None] | None = None
    """Called with a case's node id once a report has stored its graded result (the
    progress journal, ``Rerun.journal_case``): a plugin hook of its own would be three
    more hook calls per case, and the controller reads each report's node id again."""
    _shared: dict[Any, Any] = field(default_factory=dict)
    """One copy of each value many identities repeat (see ``Identity.from_wire``)."""

    def local_root(self, root: str) -> str:
        """A suite folder as a worker named it (:func:`.relay.wire_root`), as a path here.

        A remote worker runs a checkout at another path: it names the folder
        relative to its rootdir, and the same folder lies under this rootdir.
        """
        if os.path.isabs(root) or self.rootpath is None:
            return root
        key = ("agentbench.local_root", root)
        found = self._shared.get(key)
        if found is None:
            found = self._shared[key] = str((self.rootpath / root).resolve())
        return str(found)

    @property
    def cases(self) -> dict[str, CaseResult]:
        """Every graded case, parsed: for small runs and tests; the run reads one at a time."""
        return {nodeid: self.graded[nodeid] for nodeid in self.graded}

    def record_collection(self, report: pytest.CollectReport) -> None:
        refusal: str | None = getattr(report, REFUSAL, None)
        if report.failed and refusal is not None:
            self.refusals[report.nodeid] = refusal

    def record(self, report: pytest.TestReport, result: CaseResult | None = None) -> None:
        """Record ``report``; ``result``: a call report's graded result, handed over as is
        (graded in this process): the store keeps its figures, beside the report's text of
        it when :attr:`whole_results`, else instead of one."""
        nodeid = report.nodeid  # a property building the text: read once per report
        identity = self.identities.get(nodeid)
        wire: str | None = getattr(report, IDENTITY_ATTR, None)
        if wire is not None:
            # pytest keeps the report until the run ends; the identity is kept here.
            delattr(report, IDENTITY_ATTR)
            if identity is None:
                identity = Identity.from_wire(wire, self._shared)
                if not os.path.isabs(identity.suite_root):
                    identity = identity._replace(suite_root=self.local_root(identity.suite_root))
                self.identities[nodeid] = identity
        when = report.when
        # pytest-xdist reports a node whose worker died with when="???".
        if str(when) == "???":
            self.crashed.append(nodeid)
            if self.crash_witness is not None and self.crash_witness.crashed_in_adapter_call(
                report
            ):
                self.crashed_in_adapter.add(nodeid)
            if identity is not None:
                self.store_crash(identity, nodeid)
                self._log(identity, nodeid)
                if self.journal is not None:
                    self.journal(nodeid)
            return
        if identity is None:
            return
        if when == "setup" and not report.passed:
            if report.skipped:
                self._store_skip(identity, report, nodeid)
            else:
                self._store_failure(identity, nodeid, f"setup failed: {_first_line(report)}")
            self._log(identity, nodeid)
            if self.journal is not None:
                self.journal(nodeid)
        elif when == "call":
            self._store_call(identity, report, nodeid, result)
            # Asked here, once a case: a run with neither a log nor a progress line calls nothing.
            if self.log is not None or self.progress is not None:
                self._log(identity, nodeid)
            if self.journal is not None:
                self.journal(nodeid)

    def _log(self, identity: Identity, nodeid: str) -> None:
        """The case's event in the run log and its count in the progress line, as its
        result was just stored."""
        if self.log is None and self.progress is None:
            return
        if identity.kind == "case" and nodeid in self.graded:
            result = json.loads(self.graded.text(nodeid))
            if self.log is not None:
                self.log.case(nodeid, result)
            if self.progress is not None:
                self.progress.case(result)

    def _store_call(
        self,
        identity: Identity,
        report: pytest.TestReport,
        nodeid: str,
        held: CaseResult | None = None,
    ) -> None:
        self.durations[nodeid] = report.duration
        answered_by: str | None = getattr(report, ANSWERED_BY_ATTR, None)
        if answered_by is not None:
            known = self.answered_by.get(identity.suite_id)
            if known is None:
                self.answered_by[identity.suite_id] = {answered_by}
            else:
                known.add(answered_by)
        result: str | None = getattr(report, RESULT_ATTR, None)
        # Only a control's call report carries a verdict.
        verdict: str | None = (
            getattr(report, VERDICT_ATTR, None) if identity.kind == "control" else None
        )
        if result is not None:
            # pytest keeps the report until the run ends; the store keeps the result.
            delattr(report, RESULT_ATTR)
        transcript: str | None = getattr(report, TRANSCRIPT_ATTR, None)
        if transcript is not None:
            delattr(report, TRANSCRIPT_ATTR)
            if self.transcripts is not None and identity.kind == "case":
                self.transcripts.put(identity.suite_id, transcript)
        if report.skipped and result is None and held is None:
            self._store_skip(identity, report, nodeid)
        elif identity.kind == "case" and result is not None:
            self.graded.put(
                nodeid, identity.suite_id, result, canonical=self.results_canonical, figures=held
            )
        elif identity.kind == "case" and held is not None:
            self.graded.put_figures(nodeid, held)
        elif identity.kind == "control" and verdict is not None:
            self.controls[nodeid] = RecordedControl(
                identity.suite_id, nodeid, ControlVerdict.model_validate_json(verdict)
            )
        else:
            self._store_failure(identity, nodeid, _first_line(report))

    def _store_skip(self, identity: Identity, report: pytest.TestReport, nodeid: str) -> None:
        if identity.kind == "case":
            self.graded[nodeid] = CaseResult(
                suite_id=identity.suite_id,
                case_id=identity.item_id,
                outcome=CaseOutcome.SKIPPED,
                labels=identity.labels,
                failure_reason=_skip_reason(report),
                trial=identity.trial,
                model=identity.model,
            )

    def store_crash(self, identity: Identity, nodeid: str) -> None:
        """A node whose worker died: the agent's failure when it died in the adapter call.

        Such a case is regraded with every check missing when the run is
        summarised, so it counts against the metrics like any agent error.
        """
        if nodeid not in self.crashed_in_adapter:
            self._store_failure(identity, nodeid, CRASH_REASON)
        elif identity.kind == "case":
            self.graded[nodeid] = CaseResult(
                suite_id=identity.suite_id,
                case_id=identity.item_id,
                outcome=CaseOutcome.FAILED,
                labels=identity.labels,
                failure_class=FailureClass.AGENT_ERROR,
                failure_reason=ADAPTER_CRASH_REASON,
                model=identity.model,
            )
        else:
            self.controls[nodeid] = RecordedControl(
                identity.suite_id, nodeid, None, ADAPTER_CRASH_REASON
            )

    def _store_failure(self, identity: Identity, nodeid: str, reason: str) -> None:
        if identity.kind == "case":
            self.graded[nodeid] = harness_error(
                identity.suite_id, identity.item_id, reason, identity.labels
            ).model_copy(update={"trial": identity.trial, "model": identity.model})
        else:
            self.controls[nodeid] = RecordedControl(identity.suite_id, nodeid, None, reason)

    def suite_roots(self) -> dict[str, str]:
        """Suite id -> folder of every suite that reported an item."""
        roots: dict[str, str] = {}
        for identity in self.identities.values():
            roots.setdefault(identity.suite_id, identity.suite_root)
        return roots


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return _first_line(report)
