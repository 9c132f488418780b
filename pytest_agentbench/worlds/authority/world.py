"""The ``authority`` world kind bound to the plugin core.

One case per public action event. The adapter receives the public bundle (and
the event id) and returns one observed-action row; the evaluator tree is read
only when the first row has been produced. Each case's checks are the thirteen
per-action dimensions of the scorer; the twenty metrics aggregate from their
measurements.
"""

from __future__ import annotations

import os
import posixpath
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk import (
    CONTROLS_FILE,
    SUITE_FILE,
    AgentbenchError,
    Case,
    CaseResult,
    ControlAgent,
    JsonValue,
    MalformedOutput,
    MetricSpec,
    MetricValue,
    Outcome,
    Suite,
    SuiteConfig,
    call_adapter,
    canonical_json,
    copy_model,
    decode_lines_lenient,
    describe_exception,
    loads_strict,
    read_bytes,
    read_text,
    undecodable_line,
)
from pytest_agentbench.worlds.authority import agents, builder, bundle, layout, report, scoring
from pytest_agentbench.worlds.authority.models import (
    AuthorityTruth,
    CanonicalBinding,
    CaseLabel,
    EvaluatorBundle,
    PublicBundle,
)
from pytest_agentbench.worlds.authority.protocol import AuthorityAdapter
from pytest_agentbench.worlds.authority.trace import (
    ObservedActionTrace,
    parse_row,
    row_json,
    trace_lines,
)
from pytest_agentbench.worlds.authority.validate import ValidationReport, validate_trace

EVENTS_FILE = "public_events.jsonl"


@dataclass(frozen=True)
class LoadedAuthority:
    bundle: PublicBundle
    public_root: Path
    public_display: str
    cases: tuple[Case, ...]


@dataclass(frozen=True)
class Oracle:
    evaluator: EvaluatorBundle
    truth: Mapping[str, AuthorityTruth]
    bindings: Mapping[str, CanonicalBinding]
    labels: Mapping[str, CaseLabel]


def _public_root(suite: Suite) -> Path:
    # ``public`` is the world's only option: a misspelt one would otherwise fall
    # back to the suite folder and surface as a baffling missing manifest.
    unknown = sorted(set(suite.config.options) - {"public"})
    if unknown:
        raise AgentbenchError(
            "unknown_field",
            "unknown option of world kind 'authority' (known: public)",
            file=suite.display(SUITE_FILE),
            field=f"options.{unknown[0]}",
        )
    relative = suite.config.options.get("public", ".")
    if not isinstance(relative, str):
        raise AgentbenchError(
            "invalid_field",
            "must be a folder path",
            file=suite.display(SUITE_FILE),
            field="options.public",
        )
    return (suite.root / relative).resolve()


def oracle_display(suite: Suite) -> str:
    """The oracle folder as refusals name it (``oracles/<id>`` for the usual layout).

    A folder that the suite's displayed path cannot reach is shown as it is.
    """
    relative = os.path.relpath(suite.oracle_root, suite.root)
    shown = posixpath.normpath(posixpath.join(suite.display_root, Path(relative).as_posix()))
    return str(suite.oracle_root) if shown.startswith("..") else shown


def _data(suite: Suite) -> LoadedAuthority:
    data: LoadedAuthority = suite.data
    return data


def _action_lines(public_root: Path) -> dict[str, int]:
    """Line number of every event id in the events file (for item locations)."""
    lines: dict[str, int] = {}
    text = read_text(public_root / EVENTS_FILE)
    for number, line in trace_lines(text):
        value = loads_strict(line)
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            lines[value["id"]] = number
    return lines


class PredictionsAdapter:
    """Answers from a predictions JSONL produced elsewhere; a bad line fails only its case.

    The rule is the validator's (``agentbench validate``), applied per line: a
    line with bytes that are not UTF-8, bad JSON or a bad row fails the case its
    ``event_id`` names; a line naming no action event of the suite, or none at
    all, is listed in :attr:`refused_lines`, which fail the run.
    """

    def __init__(self, path: Path, case_ids: Sequence[str] = ()) -> None:
        self.path = path
        self.rows: dict[str, ObservedActionTrace] = {}
        self.problems: dict[str, str] = {}
        self.unattributed: list[str] = []
        """Refusals of lines with no readable event_id (each may be a missing event's row)."""
        self.refused_lines: list[str] = []
        """Refusals of lines that belong to no case: no event_id, or an unknown one."""
        known = set(case_ids)
        text = decode_lines_lenient(read_bytes(path))
        for number, line in trace_lines(text):
            try:
                undecodable = undecodable_line(line, file=str(path), number=number)
                if undecodable is not None:
                    raise undecodable
                value = loads_strict(line, file=str(path), line=number)
                row = parse_row(value, file=str(path), line=number)
            except AgentbenchError as exc:
                event_id = _recoverable_event_id(line)
                if event_id is None:
                    self.unattributed.append(exc.render())
                    self.refused_lines.append(exc.render())
                else:
                    self.problems[event_id] = exc.render()
                    self._check_known(event_id, known, number)
                continue
            if row.event_id in self.rows:
                self.problems[row.event_id] = AgentbenchError(
                    "duplicate_event_id",
                    f"event {row.event_id!r} has more than one row",
                    file=str(path),
                    line=number,
                ).render()
            self.rows[row.event_id] = row
            self._check_known(row.event_id, known, number)

    def _check_known(self, event_id: str, known: set[str], number: int) -> None:
        if known and event_id not in known:
            self.refused_lines.append(
                AgentbenchError(
                    "unexpected_event_id",
                    f"{event_id!r} is not an action event of the suite",
                    file=str(self.path),
                    line=number,
                    field="event_id",
                ).render()
            )

    def trace_action(self, bundle: PublicBundle, event_id: str) -> ObservedActionTrace:
        if event_id in self.problems:
            raise MalformedOutput(self.problems[event_id])
        if event_id not in self.rows:
            unread = "; ".join(self.unattributed)
            hint = f" (lines with no readable event_id: {unread})" if unread else ""
            raise MalformedOutput(f"[missing_event_id] {self.path}: no row for {event_id!r}{hint}")
        return self.rows[event_id]


def _adapter_row(raw: Any) -> ObservedActionTrace:
    """The adapter's answer as a validated row; anything unreadable is its product error.

    Reading the answer runs the adapter's code too (a mapping's iteration, a
    model built with ``model_construct`` that skipped validation), so every
    failure here is the adapter's, never the harness's.
    """
    if not isinstance(raw, ObservedActionTrace | Mapping):
        raise MalformedOutput(
            "trace_action must return a mapping or an ObservedActionTrace, "
            f"got {type(raw).__name__}"
        )
    try:
        if isinstance(raw, ObservedActionTrace):
            # Revalidated: a model built with model_construct holds whatever it was
            # given, and serialising such values only warns.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return parse_row(row_json(raw))
        return parse_row(dict(raw))
    except AgentbenchError as exc:
        raise MalformedOutput(exc.render()) from None
    except Exception as exc:
        reason = f"the returned row could not be read: {describe_exception(exc)}"
        raise MalformedOutput(reason) from None


def _recoverable_event_id(line: str) -> str | None:
    try:
        value = loads_strict(line)
    except AgentbenchError:
        return None
    event_id = value.get("event_id") if isinstance(value, dict) else None
    return event_id if isinstance(event_id, str) else None


class AuthorityWorld:
    kind = "authority"
    adapter_protocol = AuthorityAdapter
    layout_markers = layout.LAYOUT_MARKERS

    def recognise(self, folder: Path) -> SuiteConfig | None:
        """The original's ``public/`` + ``evaluator/`` bundle folder, run with no suite.yaml."""
        return layout.recognise(folder)

    def load_suite(self, suite: Suite) -> LoadedAuthority:
        public_root = _public_root(suite)
        display = (
            suite.display_root
            if public_root == suite.root
            else suite.display(public_root.relative_to(suite.root).as_posix())
        )
        exclude = (SUITE_FILE,) if public_root == suite.root else ()
        public = bundle.read_public(public_root, display, exclude=exclude)
        lines = _action_lines(public_root)
        events_file = (public_root / EVENTS_FILE).relative_to(suite.root).as_posix()
        cases = tuple(
            Case(
                suite_id=suite.id,
                case_id=event.id,
                file=events_file,
                line=lines.get(event.id),
            )
            for event in public.events
            if event.payload.event_type == "action_attempted"
        )
        return LoadedAuthority(
            bundle=public, public_root=public_root, public_display=display, cases=cases
        )

    def cases(self, suite: Suite) -> Sequence[Case]:
        return _data(suite).cases

    def public_view(self, suite: Suite, case: Case) -> PublicBundle:
        # A fresh copy per case: a frozen model still yields to object.__setattr__
        # and its dicts to item assignment, and one case's change must not reach
        # the next case, the controls or the oracle's digest binding.
        return copy_model(_data(suite).bundle)

    def reference_agent(self) -> agents.ReferenceAgent:
        return agents.ReferenceAgent()

    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        raw = call_adapter(adapter.trace_action, view, case.case_id)
        row = _adapter_row(raw)
        if row.event_id != case.case_id:
            raise MalformedOutput(f"row is for event {row.event_id!r}, not {case.case_id!r}")
        return Outcome(output=row_json(row))

    def load_oracle(self, suite: Suite) -> Oracle:
        data = _data(suite)
        evaluator = bundle.read_evaluator(
            suite.oracle_root,
            oracle_display(suite),
            public_digest=data.bundle.manifest.artifact_set_digest,
            exclude=(CONTROLS_FILE,),
        )
        return Oracle(
            evaluator=evaluator,
            truth={record.action_event_id: record for record in evaluator.truth},
            bindings={b.action_event_id: b for b in evaluator.bindings.bindings},
            labels={label.action_event_id: label for label in evaluator.cases},
        )

    def evaluate(self, suite: Suite, case: Case, outcome: Outcome, oracle: Any) -> CaseResult:
        assert isinstance(oracle, Oracle)
        row = None if outcome.output is None else ObservedActionTrace.model_validate(outcome.output)
        truth = oracle.truth.get(case.case_id)
        binding = oracle.bindings.get(case.case_id)
        if truth is None or binding is None:
            raise AgentbenchError(
                "missing_truth", f"the evaluator has no truth or binding for {case.case_id!r}"
            )
        return scoring.grade_action(
            case, row, truth, binding, oracle.labels.get(case.case_id), outcome=outcome
        )

    def metrics(self, suite: Suite) -> Sequence[MetricSpec]:
        return scoring.METRIC_SPECS

    def dimensions(self, suite: Suite) -> Sequence[str]:
        return scoring.CHECK_NAMES

    def control_agents(self, suite: Suite) -> Sequence[ControlAgent]:
        return [
            ControlAgent(
                agent_id="reference",
                role="reference",
                description="replay-correct: action-time state for decisions, public data only",
                factory=agents.ReferenceAgent,
            ),
            ControlAgent(
                agent_id="always_deny",
                role="negative",
                description="denies everything and records nothing else",
                factory=agents.AlwaysDenyAgent,
            ),
            ControlAgent(
                agent_id="current_state",
                role="negative",
                description="uses audit-time state for historical actions (final-state check)",
                factory=agents.CurrentStateAgent,
            ),
        ]

    def leak_canaries(self, suite: Suite, oracle: Any) -> Sequence[str]:
        assert isinstance(oracle, Oracle)
        checksums = oracle.evaluator.checksums
        records = (*oracle.truth.values(), *oracle.bindings.values(), *oracle.labels.values())
        return [
            checksums.evaluator_artifact_set_digest,
            *checksums.evaluator_artifacts.values(),
            *(canonical_json(record.model_dump(mode="json")) for record in records),
        ]

    def predictions_adapter(self, suite: Suite, path: Path) -> PredictionsAdapter:
        return PredictionsAdapter(path, [case.case_id for case in _data(suite).cases])

    def derive_differences(self, suite: Suite) -> list[str]:
        """Differences between the shipped truth and truth replayed from public data."""
        oracle = self.load_oracle(suite)
        return builder.derive_differences(_data(suite).bundle, oracle.evaluator)

    def verify_warnings(self, suite: Suite) -> list[str]:
        """What verify accepts but reports: tool schema paths the bundle does not hold."""
        data = _data(suite)
        return bundle.missing_tool_schemas(data.bundle, data.public_display)

    def evaluation_report(
        self, suite: Suite, results: Sequence[CaseResult], metrics: Sequence[MetricValue]
    ) -> dict[str, JsonValue]:
        """The original's evaluation report (``agentbench evaluate --json``)."""
        evaluator = self.load_oracle(suite).evaluator
        return report.evaluation_report(_data(suite).bundle, evaluator, results, metrics)

    def validate_predictions(
        self, suite: Suite, text: str, path: Path | None = None
    ) -> ValidationReport:
        return validate_trace(text, [case.case_id for case in _data(suite).cases])


WORLD = AuthorityWorld()
