"""The ``evidence-binding`` world kind bound to the plugin core.

One case per public action. The adapter receives the lineage's public payload
and the action's id and returns its selection: observation ids (Asteria) or
observation rows (Enterprise). The evaluator side is read only once the first
selection exists. A suite names its lineage in ``options: {lineage: ...}``;
:meth:`EvidenceBindingWorld.recognise` also claims a candidate folder in
either original layout, by the content of its root manifest.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk import (
    SUITE_FILE,
    AgentbenchError,
    Case,
    CaseResult,
    ControlAgent,
    JsonValue,
    MalformedOutput,
    MetricSpec,
    Outcome,
    Suite,
    SuiteConfig,
    call_adapter,
    loads_strict,
    read_bytes,
)
from pytest_agentbench.worlds.evidence_binding.agents import EvidenceAgent
from pytest_agentbench.worlds.evidence_binding.artifacts import (
    EVALUATOR_DIR,
    PUBLIC_DIR,
    ROOT_MANIFEST,
    SCHEMA_VERSION,
    CandidateTree,
    record_bytes,
)
from pytest_agentbench.worlds.evidence_binding.baselines import baseline_bytes
from pytest_agentbench.worlds.evidence_binding.lineages import (
    LINEAGES,
    Lineage,
    Loaded,
    Truth,
    canaries,
    refusal_for,
)
from pytest_agentbench.worlds.evidence_binding.protocol import EvidenceBindingAdapter
from pytest_agentbench.worlds.evidence_binding.registration import LAYOUT_MARKERS
from pytest_agentbench.worlds.evidence_binding.submissions import (
    SubmissionReport,
    is_asteria_pair,
    read_asteria_pair,
)

KIND = "evidence-binding"
_SUITE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def lineage_of(suite: Suite) -> Lineage:
    unknown = sorted(set(suite.config.options) - {"lineage"})
    if unknown:
        raise AgentbenchError(
            "unknown_field",
            f"unknown option of world kind {KIND!r} (known: lineage)",
            file=suite.display(SUITE_FILE),
            field=f"options.{unknown[0]}",
        )
    name = suite.config.options.get("lineage")
    if not isinstance(name, str) or name not in LINEAGES:
        raise AgentbenchError(
            "invalid_field",
            f"must be one of {', '.join(sorted(LINEAGES))}",
            file=suite.display(SUITE_FILE),
            field="options.lineage",
        )
    return LINEAGES[name]


def _tree(suite: Suite) -> CandidateTree:
    relative = Path(os.path.relpath(suite.oracle_root, suite.root)).as_posix()
    oracle_display = posixpath.normpath(posixpath.join(suite.display_root or ".", relative))
    return CandidateTree(
        root=suite.root,
        evaluator_root=suite.oracle_root,
        display_root=suite.display_root,
        evaluator_display=oracle_display,
    )


def _loaded(suite: Suite) -> Loaded:
    loaded: Loaded = suite.data
    return loaded


def truth_of(suite: Suite) -> Truth:
    """The verified evaluator side, read once per suite."""
    if "truth" not in suite.cache:
        suite.cache["truth"] = lineage_of(suite).read_evaluator(_tree(suite), _loaded(suite))
    truth: Truth = suite.cache["truth"]
    return truth


class PredictionsAdapter:
    """Answers from a lineage submission file; a problem fails only the cases it concerns."""

    def __init__(self, answers: dict[str, JsonValue], report: SubmissionReport, file: str) -> None:
        self.answers = answers
        self.document = refusal_for([p for p in report.diagnostics if p.action_id is None], file)
        self.per_action: dict[str, str] = {}
        for problem in report.diagnostics:
            if problem.action_id is not None:
                earlier = self.per_action.get(problem.action_id)
                rendered = refusal_for([problem], file)
                self.per_action[problem.action_id] = (
                    rendered if earlier is None else f"{earlier}; {rendered}"
                )
        self.file = file

    def select_evidence(self, public: Any, action_id: str) -> Any:
        if self.document:
            raise MalformedOutput(self.document)
        if action_id in self.per_action:
            raise MalformedOutput(self.per_action[action_id])
        if action_id not in self.answers:
            raise MalformedOutput(f"[missing_action] {self.file}: no row for {action_id!r}")
        return self.answers[action_id]


class EvidenceBindingWorld:
    kind = KIND
    adapter_protocol = EvidenceBindingAdapter
    layout_markers = LAYOUT_MARKERS

    def load_suite(self, suite: Suite) -> Loaded:
        return lineage_of(suite).read_public(_tree(suite))

    def cases(self, suite: Suite) -> Sequence[Case]:
        cached = suite.cache.get("cases")
        if cached is None:
            loaded = _loaded(suite)
            cached = tuple(
                Case(
                    suite_id=suite.id,
                    case_id=case_id,
                    file=loaded.payload_file,
                    title=title,
                    labels=(lineage_of(suite).name,),
                )
                for case_id, title in lineage_of(suite).case_ids(loaded)
            )
            suite.cache["cases"] = cached
        cases: tuple[Case, ...] = cached
        return cases

    def public_view(self, suite: Suite, case: Case) -> Any:
        return _loaded(suite).public

    def reference_agent(self) -> EvidenceAgent:
        return EvidenceAgent("reference")

    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        raw = call_adapter(adapter.select_evidence, view, case.case_id)
        return Outcome(output=lineage_of(suite).output(_loaded(suite), case.case_id, raw))

    def load_oracle(self, suite: Suite) -> Truth:
        return truth_of(suite)

    def evaluate(self, suite: Suite, case: Case, outcome: Outcome, oracle: Any) -> CaseResult:
        assert isinstance(oracle, Truth)
        return lineage_of(suite).grade(_loaded(suite), oracle, case, outcome)

    def metrics(self, suite: Suite) -> Sequence[MetricSpec]:
        return lineage_of(suite).metric_specs()

    def dimensions(self, suite: Suite) -> Sequence[str]:
        return lineage_of(suite).checks

    def control_agents(self, suite: Suite) -> Sequence[ControlAgent]:
        agents = [
            ControlAgent(
                agent_id="reference",
                role="reference",
                description="public only: each requirement's one same-action (kind, handle) match",
                factory=EvidenceAgent,
            )
        ]
        agents.extend(
            ControlAgent(
                agent_id=mode,
                role="negative",
                description=f"the reference with the original's {mode!r} baseline perturbation",
                factory=_factory(suite, mode),
            )
            for mode in lineage_of(suite).modes
        )
        return agents

    def leak_canaries(self, suite: Suite, oracle: Any) -> Sequence[str]:
        assert isinstance(oracle, Truth)
        return canaries(oracle)

    def predictions_adapter(self, suite: Suite, path: Path) -> PredictionsAdapter:
        lineage = lineage_of(suite)
        if lineage.name == "asteria" and is_asteria_pair(path):
            text, problems = read_asteria_pair(path.parent, display=str(path.parent))
            if problems:
                return PredictionsAdapter(
                    {}, SubmissionReport(diagnostics=tuple(problems)), str(path)
                )
        else:
            try:
                text = read_bytes(path, display=str(path)).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise AgentbenchError("unreadable_predictions", str(exc), file=str(path)) from None
        answers, report = lineage.check_submission(_loaded(suite), text, str(path))
        return PredictionsAdapter(answers, report, str(path))

    def validate_predictions(
        self, suite: Suite, text: str, path: Path | None = None
    ) -> SubmissionReport:
        """Every problem of a submission; an Asteria pair's manifest is read beside ``path``."""
        lineage = lineage_of(suite)
        if lineage.name == "asteria" and path is not None and is_asteria_pair(path):
            text, problems = read_asteria_pair(path.parent, display=str(path.parent))
            if problems:
                return SubmissionReport(diagnostics=tuple(problems))
        return lineage.check_submission(_loaded(suite), text, "predictions")[1]

    def baseline_records(self, suite: Suite) -> bytes:
        """The lineage's baseline-records file for this candidate (§4)."""
        return baseline_bytes(lineage_of(suite).baselines(_loaded(suite), truth_of(suite)))

    def measurement_scope(self, suite: Suite) -> JsonValue:
        """The lineage's scope statement, as its reports carry it (offline artifacts only)."""
        return lineage_of(suite).scope(_loaded(suite))

    def lineage_report(self, suite: Suite, agent_id: str) -> bytes:
        """The lineage's own scoring report (§4) of a built-in agent's whole submission."""
        loaded = _loaded(suite)
        agent = lineage_of(suite).agent(agent_id, lambda: truth_of(suite))
        answers = {
            case.case_id: agent.select_evidence(loaded.public, case.case_id)
            for case in self.cases(suite)
        }
        return record_bytes(lineage_of(suite).report(loaded, truth_of(suite), answers))

    def recognise(self, folder: Path) -> SuiteConfig | None:
        """A candidate in either original layout, told apart by its root manifest's content."""
        try:
            text = read_bytes(folder / ROOT_MANIFEST).decode("utf-8")
            manifest = loads_strict(text)
        except UnicodeDecodeError:
            return None
        except AgentbenchError as exc:
            # Recognising needs the identity only: the loader names these, by path.
            if exc.code not in ("duplicate_key", "non_finite_number"):
                return None
            manifest = json.loads(text)
        if not isinstance(manifest, dict) or manifest.get("schema_version") != SCHEMA_VERSION:
            return None
        if (
            manifest.get("visibility") == "root"
            and "evaluator_artifact_set_digest" in manifest
            and (folder / PUBLIC_DIR / ROOT_MANIFEST).is_file()
        ):
            lineage = "asteria"
        elif (
            manifest.get("checksum_file") == "SHA256SUMS"
            and "public_inventory" in manifest
            and (folder / "SHA256SUMS").is_file()
        ):
            lineage = "enterprise"
        else:
            return None
        benchmark_id = manifest.get("benchmark_id")
        name = benchmark_id if isinstance(benchmark_id, str) else folder.name
        suite_id = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._") or "candidate"
        if not _SUITE_ID.match(suite_id):
            suite_id = "candidate"
        return SuiteConfig(
            id=suite_id,
            version=SCHEMA_VERSION,
            world=KIND,
            title=f"{name} (C08 v2, {lineage})",
            oracle=EVALUATOR_DIR,
            options={"lineage": lineage},
        )


def _factory(suite: Suite, mode: str) -> Any:
    def build() -> EvidenceAgent:
        return lineage_of(suite).agent(mode, lambda: truth_of(suite))

    return build


WORLD = EvidenceBindingWorld()
