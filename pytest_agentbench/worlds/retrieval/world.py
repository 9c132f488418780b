"""The ``retrieval`` world kind bound to the plugin core.

A suite is a fixture in the original's layout: ``manifest.json``, ``tasks/``,
``corpus/`` and the oracles (``oracles/`` inside the folder for a fixture
published by the original project; the suite's oracle folder for the
project's own). One case per task and lifecycle (``<taskId>-cold``,
``<taskId>-warm``). Two plug points: an outer agent (``solve(task,
session)``) served by the suite's built-in backend, or a retrieval backend
driven by the built-in fixture agent.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk import (
    SUITE_FILE,
    AgentbenchError,
    Case,
    CaseResult,
    Check,
    CheckStatus,
    ControlAgent,
    JsonValue,
    MalformedOutput,
    MetricSpec,
    Outcome,
    Suite,
    SuiteConfig,
    ToolAgent,
    grade,
    loads_strict,
    read_text,
)
from pytest_agentbench.worlds.retrieval import controls, fixture, judged, metrics
from pytest_agentbench.worlds.retrieval.agent import FixtureAgent, gno_cues, load_cues
from pytest_agentbench.worlds.retrieval.backends import BUILTIN_BACKENDS
from pytest_agentbench.worlds.retrieval.harness import LIFECYCLES, Harness, core_failure_class
from pytest_agentbench.worlds.retrieval.jscanon import sha256_bytes
from pytest_agentbench.worlds.retrieval.models import Oracle
from pytest_agentbench.worlds.retrieval.promotion import promote_reports
from pytest_agentbench.worlds.retrieval.protocol import RetrievalBackend
from pytest_agentbench.worlds.retrieval.report import read_report, rescore
from pytest_agentbench.worlds.retrieval.scoring import IDENTITY_FIELDS, score_receipt

CUES_FILE = "fixture-agent.cues.json"
OPTIONS = ("backend", "cues", "cues_sha256", "lifecycles")
_CASE = re.compile(r"^(t[0-9a-f]{7})-(cold|warm)$")


@dataclass(frozen=True)
class LoadedRetrieval:
    public: fixture.PublicFixture
    cues: Mapping[str, Sequence[str]]
    backend: str
    cases: tuple[Case, ...]


def _data(suite: Suite) -> LoadedRetrieval:
    data: LoadedRetrieval = suite.data
    return data


def _option_error(suite: Suite, name: str, reason: str) -> AgentbenchError:
    return AgentbenchError(
        "invalid_field", reason, file=suite.display(SUITE_FILE), field=f"options.{name}"
    )


def _options(suite: Suite) -> tuple[str, str | None, str | None, tuple[str, ...]]:
    options = suite.config.options
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise AgentbenchError(
            "unknown_field",
            f"unknown option of world kind 'retrieval' (known: {', '.join(OPTIONS)})",
            file=suite.display(SUITE_FILE),
            field=f"options.{unknown[0]}",
        )
    backend = options.get("backend", "lexical")
    if backend not in BUILTIN_BACKENDS:
        raise _option_error(suite, "backend", f"must be one of {', '.join(BUILTIN_BACKENDS)}")
    cues = options.get("cues")
    pin = options.get("cues_sha256")
    if cues is not None and not isinstance(cues, str):
        raise _option_error(suite, "cues", "must be a file name")
    if (cues is None) != (pin is None) or (pin is not None and not isinstance(pin, str)):
        raise _option_error(suite, "cues_sha256", "a cue file and its sha256 come together")
    lifecycles = options.get("lifecycles", list(LIFECYCLES))
    if (
        not isinstance(lifecycles, list)
        or not lifecycles
        or len(set(lifecycles)) != len(lifecycles)
        or not set(lifecycles) <= set(LIFECYCLES)
    ):
        raise _option_error(suite, "lifecycles", "a non-empty list of cold and warm")
    assert isinstance(backend, str)
    return backend, cues, pin if isinstance(pin, str) else None, tuple(lifecycles)


def _cues(suite: Suite, name: str | None, pin: str | None) -> Mapping[str, Sequence[str]]:
    if name is None:
        return gno_cues()
    path = suite.root / name
    display = suite.display(name)
    if not path.is_file():
        raise AgentbenchError("missing_fixture_file", "the cue file is missing", file=display)
    actual = sha256_bytes(path.read_bytes())
    if actual != pin:
        raise AgentbenchError(
            "fixture_hash_mismatch",
            f"sha256 {actual[:12]}… differs from options.cues_sha256",
            file=display,
        )
    return load_cues(path, display)


def recognise_fixture(folder: Path) -> SuiteConfig | None:
    """A folder in the original's published layout (manifest with its schema, tasks, oracles)."""
    manifest_path = folder / fixture.MANIFEST
    if not (
        manifest_path.is_file()
        and (folder / "tasks").is_dir()
        and (folder / "corpus").is_dir()
        and (folder / fixture.ORACLE_DIR).is_dir()
    ):
        return None
    try:
        manifest = loads_strict(read_text(manifest_path))
    except AgentbenchError:
        return None
    if not (
        isinstance(manifest, dict)
        and manifest.get("schemaVersion") == "1.0"
        and isinstance(manifest.get("files"), list)
        and isinstance(manifest.get("corpusFingerprint"), str)
        and isinstance(manifest.get("fixtureVersion"), str)
        and all(
            isinstance(entry, dict) and entry.get("kind") in ("task", "oracle", "corpus")
            for entry in manifest["files"]
        )
    ):
        return None
    name = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in folder.name.lower())
    return SuiteConfig(
        id=name.strip("-._") or "retrieval-fixture",
        version=manifest["fixtureVersion"],
        world="retrieval",
        title=f"agentic-retrieval@1 fixture {folder.name}",
        oracle=fixture.ORACLE_DIR,
    )


def identity_of(record: Mapping[str, Any]) -> str:
    return "/".join(str(record.get(name)) for name in IDENTITY_FIELDS)


class PredictionsAdapter:
    """Receipts produced elsewhere: an original-format ``report.json``'s ``receipts``."""

    def __init__(self, path: Path) -> None:
        report = read_report(path)
        self.path = path
        self.receipts: dict[tuple[str, str], dict[str, Any]] = {}
        for receipt in report["receipts"]:
            canonical = receipt["canonical"]
            self.receipts.setdefault((canonical["taskId"], canonical["lifecycle"]), canonical)

    def receipt_for(self, task_id: str, lifecycle: str) -> dict[str, Any]:
        found = self.receipts.get((task_id, lifecycle))
        if found is None:
            raise MalformedOutput(
                f"[missing_receipt] {self.path}: no receipt for {task_id} ({lifecycle})"
            )
        return found


class RetrievalWorld:
    kind = "retrieval"
    adapter_protocol = ToolAgent
    adapter_protocols = (ToolAgent, RetrievalBackend)

    def recognise(self, folder: Path) -> SuiteConfig | None:
        return recognise_fixture(folder)

    def load_suite(self, suite: Suite) -> LoadedRetrieval:
        backend, cue_name, pin, lifecycles = _options(suite)
        extra = [cue_name] if cue_name else []
        public = fixture.load_public(suite.root, suite.display_root, extra_files=extra)
        cues = _cues(suite, cue_name, pin)
        cases = tuple(
            Case(
                suite_id=suite.id,
                case_id=f"{task_id}-{lifecycle}",
                file=f"tasks/{task_id}.json",
                title=task.brief.goal,
                labels=(task.category, lifecycle),
            )
            for task_id, task in public.tasks.items()
            for lifecycle in lifecycles
        )
        return LoadedRetrieval(public=public, cues=cues, backend=backend, cases=cases)

    def cases(self, suite: Suite) -> Sequence[Case]:
        return _data(suite).cases

    def public_view(self, suite: Suite, case: Case) -> dict[str, Any]:
        task_id, _ = self._pair(case)
        return dict(_data(suite).public.raw_tasks[task_id])

    def judged_view(self, name: str, suite: Suite, case_id: str, output: JsonValue) -> JsonValue:
        """A document for judges (``agentbench judge``): see :mod:`.judged`."""
        return judged.judged_view(name, output)

    def reference_agent(self) -> FixtureAgent:
        return FixtureAgent()

    def harness(self, suite: Suite) -> Harness:
        data = _data(suite)
        if "retrieval.harness" not in suite.cache:
            suite.cache["retrieval.harness"] = Harness(data.public, data.cues)
            suite.cache["retrieval.backend"] = BUILTIN_BACKENDS[data.backend]()
        harness: Harness = suite.cache["retrieval.harness"]
        return harness

    @staticmethod
    def _pair(case: Case) -> tuple[str, str]:
        match = _CASE.match(case.case_id)
        assert match is not None, case.case_id
        return match.group(1), match.group(2)

    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        task_id, lifecycle = self._pair(case)
        if isinstance(adapter, PredictionsAdapter):
            return Outcome(output={"receipt": adapter.receipt_for(task_id, lifecycle)})
        harness = self.harness(suite)
        if isinstance(adapter, RetrievalBackend) and not isinstance(adapter, ToolAgent):
            backend, agent = adapter, FixtureAgent()
        else:
            backend, agent = suite.cache["retrieval.backend"], adapter
        run = harness.run(task_id, lifecycle, backend, agent)
        failure_class, code = run.failure
        core_class = core_failure_class(failure_class, code)
        if core_class is None:
            return Outcome(output={"receipt": run.canonical}, receipt=run.session_receipt)
        detail = "; ".join(run.diagnostics)
        return Outcome(
            output={"receipt": run.canonical},
            receipt=run.session_receipt,
            failure_class=core_class,
            failure_reason=f"{failure_class}: {code}" + (f" ({detail})" if detail else ""),
        )

    def load_oracle(self, suite: Suite) -> dict[str, Oracle]:
        return fixture.load_hidden(_data(suite).public, suite.oracle_root, _oracle_display(suite))

    def evaluate(self, suite: Suite, case: Case, outcome: Outcome, oracle: Any) -> CaseResult:
        task_id, lifecycle = self._pair(case)
        task = _data(suite).public.tasks[task_id]
        oracles: Mapping[str, Oracle] = oracle
        receipt = None if not isinstance(outcome.output, dict) else outcome.output.get("receipt")
        if receipt is None:
            checks = [
                Check(name=name, status=CheckStatus.MISSING, detail="no receipt")
                for name in metrics.DIMENSIONS
            ]
            return grade(
                case,
                checks,
                measurements=metrics.unscored_measurements(lifecycle),
                outcome=outcome,
            )
        score = score_receipt(receipt, task, oracles[task_id])
        return grade(
            case,
            metrics.checks(score, oracles[task_id], receipt["failure"]["class"]),
            measurements=metrics.measurements(score, receipt, oracles[task_id], lifecycle),
            findings=metrics.findings(score, receipt),
            outcome=outcome,
        )

    def metrics(self, suite: Suite) -> Sequence[MetricSpec]:
        return metrics.METRIC_SPECS

    def dimensions(self, suite: Suite) -> Sequence[str]:
        return metrics.DIMENSIONS

    def control_agents(self, suite: Suite) -> Sequence[ControlAgent]:
        return [
            ControlAgent(
                agent_id="reference",
                role="reference",
                description="fixture-agent-v1 over the suite's built-in backend",
                factory=FixtureAgent,
            ),
            ControlAgent(
                agent_id="no_citations",
                role="negative",
                description="answers like the fixture agent but cites nothing",
                factory=controls.NoCitationAgent,
            ),
            ControlAgent(
                agent_id="cite_everything",
                role="negative",
                description="cites every line it was shown, forbidden evidence included",
                factory=controls.CiteEverythingAgent,
            ),
            ControlAgent(
                agent_id="never_stops",
                role="negative",
                description="searches again and again until the call budget ends the trial",
                factory=controls.NeverStopsAgent,
            ),
            ControlAgent(
                agent_id="always_abstains",
                role="negative",
                description="searches, then abstains on every task",
                factory=controls.AlwaysAbstainAgent,
            ),
        ]

    def leak_canaries(self, suite: Suite, oracle: Any) -> Sequence[str]:
        oracles: Mapping[str, Oracle] = oracle
        return [canary for item in oracles.values() for canary in item.leakCanaries]

    def predictions_adapter(self, suite: Suite, path: Path) -> PredictionsAdapter:
        return PredictionsAdapter(path)

    def rescore_report(self, suite: Suite, path: Path) -> tuple[list[Any], list[str]]:
        """Score records of an original-format report's receipts, and the ones that differ
        from the report's committed scores (by receipt identity)."""
        report = read_report(path)
        oracles = self.load_oracle(suite)
        records = rescore(report, _data(suite).public, oracles, str(path))
        committed = report["scores"]
        differing = [
            identity_of(record)
            for index, record in enumerate(records)
            if index >= len(committed) or committed[index] != record
        ]
        if len(committed) != len(records):
            differing.append(f"{len(committed)} committed scores for {len(records)} receipts")
        return records, differing

    def promote_reports(
        self,
        suite: Suite,
        baseline: Path,
        candidate: Path,
        *,
        baseline_adapter: str,
        candidate_adapter: str,
    ) -> dict[str, Any]:
        """The promotion gate between two original-format reports (section 8)."""
        return promote_reports(
            read_report(baseline),
            read_report(candidate),
            baseline_adapter=baseline_adapter,
            candidate_adapter=candidate_adapter,
        )


def _oracle_display(suite: Suite) -> str:
    relative = os.path.relpath(suite.oracle_root, suite.root)
    return posixpath.normpath(posixpath.join(suite.display_root, Path(relative).as_posix()))


WORLD = RetrievalWorld()
