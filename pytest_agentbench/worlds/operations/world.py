"""The ``operations`` world kind bound to the plugin core.

One case per scenario (variant) of the suite's OperationSpec, labelled with
its semantic scenario as cluster key. Running a case runs one episode: the
adapter's ``solve(task, session)`` is invoked per trigger with the observable
projection and the read tools, never with the spec, the hidden state or the
expectations. The episode is then replayed from its own decision tape. Only
after that are the expectations read and the eleven dimensions (and
``reliable``) graded from the episode record the run produced.

The original's published folders are recognised by content, whatever their
file names: a YAML file whose header is an OperationSpec is the suite, a YAML
file whose keys are a control oracle's is its oracle. What a variant's
authored faults must produce is derived from the spec by its domain pack; no
side file declares it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.sdk import (
    ADAPTER_FAILED,
    HANDLER_FAILED,
    MALFORMED_FINAL,
    PROJECTIONS,
    SUITE_FILE,
    TIMED_OUT,
    AdapterFailure,
    AgentbenchError,
    Case,
    CaseResult,
    CaseTimeout,
    Check,
    CheckStatus,
    ControlAgent,
    ControlOracle,
    DomainPack,
    EpisodeBinding,
    EpisodeReceipt,
    ExpectedFault,
    FailureClass,
    JsonValue,
    MalformedOutput,
    MetricSpec,
    OracleIdentity,
    Outcome,
    Suite,
    SuiteConfig,
    ToolAgent,
    ToolHarnessError,
    artifact_set_digest_of_files,
    canonical_json,
    cap_text,
    grade,
    loads_yaml_strict,
    marker_files,
    read_json,
    read_prediction_document,
    read_text,
    selected_projections,
    tree_files,
)
from pytest_agentbench.worlds.operations import agents, judged
from pytest_agentbench.worlds.operations.control_oracle import (
    is_oracle_document,
    load_control_oracle,
    read_oracle_document,
)
from pytest_agentbench.worlds.operations.decision_points import (
    DecisionPoint,
    LoadedControl,
    check_separations,
    find_control,
    load_matched_decision_points,
)
from pytest_agentbench.worlds.operations.episode import (
    MALFORMED,
    Episode,
    EpisodeRecord,
    episode_from_json,
)
from pytest_agentbench.worlds.operations.evaluation import (
    DIMENSIONS,
    ResultVector,
    evaluate_episode,
)
from pytest_agentbench.worlds.operations.gate import (
    bind_control_oracle,
    gate_manifest,
    refused_control,
)
from pytest_agentbench.worlds.operations.metrics import (
    CLUSTER_PREFIX,
    METRIC_SPECS,
    projection_specs,
)
from pytest_agentbench.worlds.operations.packs import installed_packs
from pytest_agentbench.worlds.operations.projections import (
    FULL,
    FullRecorder,
    run_projections,
)
from pytest_agentbench.worlds.operations.projections import (
    measurements as projection_measurements,
)
from pytest_agentbench.worlds.operations.replay import TapeAgent, replay_codes
from pytest_agentbench.worlds.operations.spec import LoadedSpec, load_operation_spec

if TYPE_CHECKING:
    # Only a recording with a journal builds one (``agentbench record --journal``).
    from pytest_agentbench.sdk import JournalSetup

RELIABLE = "reliable"
CHECK_NAMES = (*DIMENSIONS, RELIABLE)
_OPTIONS = frozenset({"spec", "manifest", "projections"})
LAYOUT_MARKER = "*.yaml containing schema_version: operation_type: scenarios:"
"""The original's folders are recognised by the content of their YAML files, not by name."""
_YAML = "*.yaml"
_SPEC_KEYS = frozenset({"schema_version", "operation_id", "operation_type", "scenarios"})


@dataclass(frozen=True)
class LoadedOperations:
    spec: LoadedSpec
    cases: tuple[Case, ...]
    projections: tuple[str, ...] = ()
    """Diagnostic projections the suite asks for on every run (``options.projections``)."""


@dataclass(frozen=True)
class Oracle:
    faults: Mapping[str, ExpectedFault]
    """The exact outcome each faulted variant must produce, derived from the spec by its pack."""


def _data(suite: Suite) -> LoadedOperations:
    data: LoadedOperations = suite.data
    return data


def _option(suite: Suite, name: str) -> str | None:
    value = suite.config.options.get(name)
    if value is not None and not isinstance(value, str):
        raise AgentbenchError(
            "invalid_field",
            "must be a file name",
            file=suite.display(SUITE_FILE),
            field=f"options.{name}",
        )
    return value


def _verify_manifest(suite: Suite, manifest_name: str) -> None:
    display = suite.display(manifest_name)
    manifest = read_json(suite.root / manifest_name, display=display)
    files = tree_files(suite.root, exclude=(SUITE_FILE, manifest_name))
    actual = artifact_set_digest_of_files(files, display=suite.display)
    declared = manifest.get("artifact_set_digest") if isinstance(manifest, dict) else None
    if declared != actual:
        raise AgentbenchError(
            "digest_mismatch",
            f"artifact set digest is {actual}, manifest says {declared}",
            file=display,
            field="artifact_set_digest",
        )


def _scenario_lines(path: Path) -> dict[str, int]:
    """Line of each scenario key under ``scenarios:`` (for item locations)."""
    lines: dict[str, int] = {}
    inside = False
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if line.startswith("scenarios:"):
            inside = True
        elif (
            inside
            and line.startswith("  ")
            and not line.startswith("   ")
            and line.rstrip().endswith(":")
        ):
            lines[line.strip()[:-1].strip("'\"")] = number
        elif inside and line and not line.startswith(" "):
            inside = False
    return lines


class OperationsWorld:
    kind = "operations"
    adapter_protocol: type = ToolAgent

    def load_suite(self, suite: Suite) -> LoadedOperations:
        unknown = sorted(set(suite.config.options) - _OPTIONS)
        if unknown:
            raise AgentbenchError(
                "unknown_field",
                "unknown option of world kind 'operations' (known: manifest, projections, spec)",
                file=suite.display(SUITE_FILE),
                field=f"options.{unknown[0]}",
            )
        spec_name = _option(suite, "spec")
        if spec_name is None:
            raise AgentbenchError(
                "missing_field",
                "the OperationSpec file is required",
                file=suite.display(SUITE_FILE),
                field="options.spec",
            )
        manifest = _option(suite, "manifest")
        if manifest is not None:
            _verify_manifest(suite, manifest)
        path = suite.root / spec_name
        loaded = load_operation_spec(path, suite.display(spec_name), installed_packs())
        lines = _scenario_lines(path)
        spec = loaded.spec
        cases = tuple(
            Case(
                suite_id=suite.id,
                case_id=scenario_id,
                file=spec_name,
                line=lines.get(scenario_id),
                title=None,
                cluster=spec.semantic_scenario_id,
                labels=(
                    f"{CLUSTER_PREFIX}{spec.semantic_scenario_id}",
                    f"operation:{spec.operation_id}",
                ),
            )
            for scenario_id in sorted(spec.scenarios)
        )
        return LoadedOperations(spec=loaded, cases=cases, projections=_suite_projections(suite))

    def cases(self, suite: Suite) -> Sequence[Case]:
        return _data(suite).cases

    def public_view(self, suite: Suite, case: Case) -> dict[str, JsonValue]:
        """The operation as known before any event: no events, hidden state or expectations."""
        loaded = _data(suite).spec
        spec = loaded.spec
        return {
            "operation_id": spec.operation_id,
            "operation_type": spec.operation_type,
            "operation_version": spec.operation_version,
            "scenario_id": case.case_id,
            "actors": {
                actor_id: {"role": actor.role} for actor_id, actor in sorted(spec.actors.items())
            },
            "policy": loaded.policy.model_dump(mode="json"),
            "message_fixtures": dict(sorted(spec.message_fixtures.items())),
            "actions": sorted(loaded.domain.action_types),
            "event_types": sorted(loaded.domain.event_types),
        }

    def judged_view(self, name: str, suite: Suite, case_id: str, output: JsonValue) -> JsonValue:
        """A document for judges (``agentbench judge``): see :mod:`.judged`."""
        return judged.judged_view(name, _data(suite).spec.spec, output)

    def reference_agent(self) -> Any:
        return agents.reference()

    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        """Run the episode; the outcome carries one episode receipt over every invocation's session.

        A malformed outcome stops the episode and fails the case as a product
        error, with the episode still graded; an adapter that raises (or a
        tool handler that fails) leaves no episode to grade, only the receipt.
        """
        loaded = _data(suite).spec
        episode = Episode(loaded, case.case_id, adapter)
        arms = _arms(suite)
        points = _decision_points(suite, case.case_id) if arms else ()
        full = FullRecorder(loaded, points) if FULL in arms and points else None
        if full is not None:
            episode.agent = full.wrap(episode, adapter)
        context: dict[str, JsonValue] = {"suite": suite.id, "case": case.case_id}
        try:
            record = episode.run()
        except AdapterFailure as failure:
            reason = cap_text(failure.reason)
            receipt = EpisodeReceipt.build(
                episode.receipts,
                failure_class=failure.failure_class.value,
                failure_code=ADAPTER_FAILED,
                failure_reason=reason,
                context=context,
            )
            return Outcome(
                failure_class=failure.failure_class,
                failure_reason=reason,
                receipt=receipt.model_dump(mode="json"),
            )
        except ToolHarnessError as failed:
            receipt = EpisodeReceipt.build(
                episode.receipts,
                failure_class=FailureClass.HARNESS_ERROR.value,
                failure_code=HANDLER_FAILED,
                failure_reason=str(failed),
                context=context,
            )
            return Outcome(
                failure_class=FailureClass.HARNESS_ERROR,
                failure_reason=str(failed),
                receipt=receipt.model_dump(mode="json"),
            )
        except CaseTimeout as timeout:
            timeout.receipt = EpisodeReceipt.build(
                episode.receipts,
                failure_class=FailureClass.AGENT_ERROR.value,
                failure_code=TIMED_OUT,
                context=context,
            ).model_dump(mode="json")
            raise
        output = record.as_json()
        output["replay_codes"] = replay_codes(loaded, record)
        if points:
            vectors = run_projections(loaded, case.case_id, points, adapter, arms)
            if full is not None:
                vectors[FULL] = full.vector()
            output["projections"] = {arm: dict(vectors[arm]) for arm in arms if arm in vectors}
        if record.status != MALFORMED:
            receipt = EpisodeReceipt.build(episode.receipts, context=context)
            return Outcome(output=output, receipt=receipt.model_dump(mode="json"))
        reason = cap_text(f"malformed agent outcome at {episode.refusal}")
        receipt = EpisodeReceipt.build(
            episode.receipts,
            failure_class=FailureClass.PRODUCT_ERROR.value,
            failure_code=MALFORMED_FINAL,
            failure_reason=reason,
            context=context,
        )
        return Outcome(
            output=output,
            failure_class=FailureClass.PRODUCT_ERROR,
            failure_reason=reason,
            receipt=receipt.model_dump(mode="json"),
        )

    def load_oracle(self, suite: Suite) -> Oracle:
        loaded = _data(suite).spec
        faults = {
            scenario_id: fault
            for scenario_id in loaded.spec.scenarios
            if (fault := loaded.domain.expected_fault(loaded.spec, scenario_id)) is not None
        }
        return Oracle(faults=faults)

    def evaluate(self, suite: Suite, case: Case, outcome: Outcome, oracle: Any) -> CaseResult:
        assert isinstance(oracle, Oracle)
        loaded = _data(suite).spec
        scenario = loaded.spec.scenarios[case.case_id]
        fault = oracle.faults.get(case.case_id)
        if outcome.output is None:
            checks = [
                Check(name=name, status=CheckStatus.MISSING, expected=_expected(name, fault))
                for name in CHECK_NAMES
            ]
            return grade(case, checks, measurements={"eligible": 1}, outcome=outcome)
        record = episode_from_json(outcome.output)
        # An episode record that arrives without its replay verdict was never replayed here.
        replay = outcome.output.get("replay_codes", ["REPLAY_NOT_CHECKED"])
        vector = evaluate_episode(record, loaded.domain, scenario, replay)
        projections = outcome.output.get("projections", {})
        return grade(
            case,
            _checks(vector, fault),
            measurements={
                **measurements(vector, record, loaded.domain.terminals),
                **projection_measurements(projections),
            },
            findings=[code for d in vector.dimensions for code in d.codes],
            outcome=outcome,
        )

    def metrics(self, suite: Suite) -> Sequence[MetricSpec]:
        arms = _arms(suite)
        if not arms or _matched_control(suite) is None:
            return METRIC_SPECS
        return (*METRIC_SPECS, *projection_specs(arms))

    def dimensions(self, suite: Suite) -> Sequence[str]:
        return CHECK_NAMES

    def control_agents(self, suite: Suite) -> Sequence[ControlAgent]:
        return agents.control_agents(_data(suite).spec.domain)

    def control_oracle(self, suite: Suite, display: Callable[[Path], str]) -> ControlOracle | None:
        """The gate: the reference on every variant, then each control the oracle declares.

        The oracle is the one YAML file of the oracle folder whose keys are a
        control oracle's, read through the spec's pack's ``oracle_model``.
        """
        spec = _data(suite).spec
        path = _find_oracle(suite, display)
        matched = _matched_control_read(suite, display)
        if path is None:
            if isinstance(matched, AgentbenchError):
                # With no gate to hold it, a refused control would vanish: refuse the suite.
                raise matched
            return None
        loaded = load_control_oracle(path, display(path), spec.domain.oracle_model)
        versions = bind_control_oracle(loaded, spec)
        manifest = gate_manifest(suite.id, loaded.oracle, spec)
        if isinstance(matched, LoadedControl):
            pairs = check_separations(matched, spec)
            versions += (
                f"; matched decision points {matched.control.control_id} "
                f"{matched.control.control_version}: {len(pairs)} pairs separate as declared"
            )
        elif matched is not None:
            versions += f"; matched decision points refused: [{matched.code}]"
            manifest = manifest.model_copy(
                update={"controls": (*manifest.controls, refused_control(matched))}
            )
        return ControlOracle(
            identity=OracleIdentity(
                oracle_id=loaded.oracle.oracle_id,
                oracle_version=loaded.oracle.oracle_version,
                digest_sha256=loaded.digest_sha256,
                file=loaded.file,
                note=versions,
                oracle_digest_sha256=loaded.oracle_digest_sha256,
                subject={
                    "operation_id": spec.spec.operation_id,
                    "spec_digest_sha256": spec.digest,
                },
            ),
            manifest=manifest,
        )

    def record_episode(
        self,
        suite: Suite,
        case_id: str,
        agent_id: str,
        adapter: Any,
        out: Path,
        *,
        journal: JournalSetup | None = None,
    ) -> list[str]:
        """Run one case with its execution ledger; write ledger and episode record to ``out``.

        With ``journal`` (a model run's provider and controls) the episode is also written
        in OperateBench's journal layout beside them; a run that layout cannot state is
        refused by the journal writer's code, naming the ledger and episode still written.
        """
        # Imported by the commands that record or replay an episode, and for an episode
        # artefact: they write or read an execution ledger, whose modules a run
        # without one never needs.
        from pytest_agentbench.worlds.operations import execution

        loaded = _data(suite).spec
        _known_scenario(loaded, case_id)
        recorded = execution.record_episode(
            loaded, case_id, agent_id, adapter, out, journal=journal
        )
        lines = [
            f"episode {recorded.episode}",
            f"ledger {recorded.ledger} sha256:{recorded.ledger_digest}",
        ]
        refused = recorded.journal_refused
        if refused is not None:
            kept = "; ".join(lines)
            raise AgentbenchError(
                refused.code,
                f"{refused.reason}; no journal written ({kept})",
                file=refused.location.file,
                field=refused.location.field,
            )
        if recorded.journal is not None:
            lines.append(f"journal {recorded.journal} sha256:{recorded.journal_digest}")
        return lines

    def episode_artifact(
        self,
        suite: Suite,
        case: Case,
        outcome: Outcome,
        result: CaseResult,
        binding: EpisodeBinding,
    ) -> dict[str, JsonValue] | None:
        """The case's contract-8 episode artefact; ``None`` when no episode ran."""
        if outcome.output is None:
            return None
        from pytest_agentbench.worlds.operations import artifact

        return artifact.build_artifact(_data(suite).spec, outcome.output, binding)

    def validate_artifact(self, document: JsonValue, display: str) -> int:
        """Coherence of one episode artefact (``agentbench artifact validate``)."""
        from pytest_agentbench.worlds.operations import artifact

        return artifact.validate_artifact(document, display)

    def replay_artifact(
        self, suite: Suite, document: JsonValue, display: str
    ) -> dict[str, JsonValue]:
        """Reproduction of an episode artefact on ``suite`` (``agentbench artifact replay``)."""
        from pytest_agentbench.worlds.operations import artifact

        return artifact.replay_artifact(_data(suite).spec, document, display)

    def audit_artifact(
        self, document: JsonValue, journal: Path, display: str
    ) -> dict[str, JsonValue]:
        """Agreement of an artefact with its execution ledger (``agentbench artifact audit``)."""
        from pytest_agentbench.worlds.operations import artifact

        return artifact.audit_artifact(document, journal, display)

    def domain_packs(self) -> Mapping[str, DomainPack]:
        """Every installed domain pack by operation type (``agentbench list-packs``)."""
        return installed_packs()

    def check_spec_file(self, path: Path, display: str) -> dict[str, JsonValue]:
        """An OperationSpec read statically against the packs (``agentbench validate-spec``)."""
        loaded = load_operation_spec(path, display, installed_packs())
        spec = loaded.spec
        return {
            "operation_id": spec.operation_id,
            "operation_type": spec.operation_type,
            "operation_version": spec.operation_version,
            "pack_version": str(loaded.domain.pack_version),
            "scenarios": sorted(spec.scenarios),
            "spec_digest_sha256": loaded.digest,
        }

    def replay_episode(self, suite: Suite, path: Path) -> list[str]:
        """Re-execute a recorded episode from its decision tape, with no adapter."""
        episode = read_json(path, display=str(path))
        if not isinstance(episode, dict):
            raise AgentbenchError("invalid_episode_record", "expected an object", file=str(path))
        from pytest_agentbench.worlds.operations import execution

        return execution.replay_episode(_data(suite).spec, episode, str(path))

    def leak_canaries(self, suite: Suite, oracle: Any) -> Sequence[str]:
        assert isinstance(oracle, Oracle)
        spec = _data(suite).spec.spec
        # A bare number (minutes, a count) would match any digest or byte count, so
        # a hidden scalar is watched for by its key, which names nothing public.
        hidden = [
            canonical_json(value) if isinstance(value, str | dict | list) else canonical_json(key)
            for key, value in spec.hidden_state.items()
        ]
        declared = [d.reason for s in spec.scenarios.values() for d in s.expected_event_rejections]
        return [*hidden, *declared]

    def predictions_adapter(self, suite: Suite, path: Path) -> TapeAgents:
        return TapeAgents(path)

    def recognise(self, folder: Path) -> SuiteConfig | None:
        """The original's published folder: one YAML file whose header is an OperationSpec.

        Judged by content, whatever the file is called: only the header is
        read here (schema version, operation id and type, the scenarios
        mapping); the full strict load happens when the suite loads, so a
        broken spec, or one of a type no installed pack provides, is refused
        by name then rather than silently not collected.
        """
        # A file whose lines declare the spec's keys is a spec: one its reader refuses
        # (a duplicate key, a syntax error, an alias bomb) is refused by name, not
        # passed over as "not a spec", which left the folder silently uncollected.
        declared = set(marker_files(folder, LAYOUT_MARKER))
        specs = [
            (name, raw)
            for name in _yaml_files(folder)
            if (raw := _spec_header(folder / name, declared=name in declared)) is not None
        ]
        if not specs:
            return None
        if len(specs) > 1:
            raise AgentbenchError(
                "ambiguous_layout",
                f"{len(specs)} OperationSpecs in one folder "
                f"({', '.join(name for name, _ in specs)}); add a suite.yaml naming one",
                file=folder.as_posix(),
            )
        name, raw = specs[0]
        slug = "".join(
            c if c.isalnum() or c in "._-" else "-" for c in str(raw["operation_id"]).lower()
        )
        return SuiteConfig(
            id=slug.strip("-._") or "operation",
            version=str(raw.get("operation_version", "0")),
            world=self.kind,
            title=str(raw["operation_id"]),
            oracle="oracles" if (folder / "oracles").is_dir() else ".",
            options={"spec": name},
        )

    def layout_anchor(self, folder: Path, config: SuiteConfig) -> str:
        """The spec file carries the suite's collector, whatever sorts first in the folder."""
        return str(config.options["spec"])


def _yaml_files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob(_YAML) if path.is_file())


def _spec_header(path: Path, *, declared: bool) -> dict[str, Any] | None:
    """The parsed file if it is shaped like an OperationSpec, else None (it may be anything).

    A file that ``declared`` itself one (:data:`LAYOUT_MARKER`) and does not read
    raises the reader's refusal, located at the file.
    """
    try:
        raw = loads_yaml_strict(read_text(path))
    except AgentbenchError as exc:
        if declared:
            raise exc.at(file=path.as_posix()) from None
        return None
    if (
        isinstance(raw, dict)
        and set(raw) >= _SPEC_KEYS
        and raw["schema_version"] == 1
        and isinstance(raw["operation_type"], str)
        and isinstance(raw["scenarios"], dict)
        and isinstance(raw["operation_id"], str)
    ):
        return raw
    return None


def _find_oracle(suite: Suite, display: Callable[[Path], str]) -> Path | None:
    """The oracle folder's one control-oracle document, found by its keys; None if it has none."""
    root = suite.oracle_root
    if not root.is_dir():
        return None
    spec_file = (suite.root / str(suite.config.options.get("spec", ""))).resolve()
    found = []
    for name in _yaml_files(root):
        path = root / name
        if path.resolve() == spec_file:
            continue
        _, raw = read_oracle_document(path, display(path))
        if is_oracle_document(raw):
            found.append(path)
    if len(found) > 1:
        raise AgentbenchError(
            "ambiguous_control_oracle",
            f"{len(found)} control oracles ({', '.join(p.name for p in found)}); keep one",
            file=display(root),
        )
    return found[0] if found else None


def _matched_control(
    suite: Suite, display: Callable[[Path], str] | None = None
) -> LoadedControl | None:
    """The oracle folder's matched decision-point control, if there is one and it reads."""
    matched = _matched_control_read(suite, display)
    return matched if isinstance(matched, LoadedControl) else None


def _matched_control_read(
    suite: Suite, display: Callable[[Path], str] | None = None
) -> LoadedControl | AgentbenchError | None:
    """The oracle folder's matched decision-point control, read once per suite.

    A control that does not read (or does not match the live operation) is its
    refusal, kept rather than raised: as in the original, the control is an input
    of its own, and its refusal fails its own item, not the lifecycle run.
    """
    key = "operations.matched_decision_points"
    if key not in suite.cache:
        shown = display or (lambda path: suite.display(os.path.relpath(path, suite.root)))
        path = find_control(suite.oracle_root, shown)
        read: LoadedControl | AgentbenchError | None = None
        if path is not None:
            try:
                read = load_matched_decision_points(path, shown(path), _data(suite).spec)
            except AgentbenchError as refused:
                read = refused
        suite.cache[key] = read
    matched: LoadedControl | AgentbenchError | None = suite.cache[key]
    return matched


def _suite_projections(suite: Suite) -> tuple[str, ...]:
    value = suite.config.options.get("projections", [])
    if not isinstance(value, list) or not set(map(str, value)) <= set(PROJECTIONS):
        raise AgentbenchError(
            "invalid_field",
            f"must be a list of projections ({', '.join(PROJECTIONS)})",
            file=suite.display(SUITE_FILE),
            field="options.projections",
        )
    return tuple(name for name in PROJECTIONS if name in value)


def _arms(suite: Suite) -> tuple[str, ...]:
    """The run's projections and the suite's own, in report order."""
    wanted = set(selected_projections()) | set(_data(suite).projections)
    return tuple(name for name in PROJECTIONS if name in wanted)


def _decision_points(suite: Suite, scenario_id: str) -> tuple[DecisionPoint, ...]:
    matched = _matched_control(suite)
    return () if matched is None else matched.control.for_scenario(scenario_id)


def _known_scenario(loaded: LoadedSpec, case_id: str) -> None:
    if case_id not in loaded.spec.scenarios:
        raise AgentbenchError(
            "unknown_case",
            f"no scenario {case_id!r} (known: {', '.join(sorted(loaded.spec.scenarios))})",
            field="CASE",
        )


def _expected(name: str, fault: ExpectedFault | None) -> JsonValue:
    if name == RELIABLE:
        return fault is None
    if fault is not None and name in fault.failed_dimensions:
        return sorted(fault.finding_codes)
    return []


def _checks(vector: ResultVector, fault: ExpectedFault | None) -> list[Check]:
    """Each dimension's own verdict; a failure that is the variant's declared fault says so.

    A dimension that failed is reported as failed. Where the variant declares an
    authored fault (the original's reference expectation), a failure that is
    exactly that fault carries its id: the dimension failed, as it had to, and
    the item passes. ``reliable`` is false on such a variant; it carries the
    fault's id only when the whole outcome is the declared one (terminal, the
    failing set and the finding codes, each exactly).
    """
    declared = set() if fault is None else set(fault.failed_dimensions)
    fault_codes = set() if fault is None else set(fault.finding_codes)
    exact = fault is not None and _is_declared_fault(vector, fault)
    checks = []
    for dimension in vector.dimensions:
        codes = set(dimension.codes)
        expected_fault = (
            fault.id
            if fault is not None and codes and dimension.name in declared and codes <= fault_codes
            else None
        )
        checks.append(
            Check(
                name=dimension.name,
                status=CheckStatus.FAIL if codes else CheckStatus.PASS,
                expected=_expected(dimension.name, fault),
                actual=sorted(codes),
                detail=_dimension_detail(dimension.name, codes, declared, dimension.counts),
                expected_fault=expected_fault,
            )
        )
    if vector.reliable:
        detail = None
    elif fault is None:
        detail = f"terminal {vector.terminal}, expected {vector.expected_terminal}"
    else:
        verdict = "is" if exact else "is not"
        detail = f"the outcome {verdict} the declared fault {fault.id}: {fault.rationale}"
    checks.append(
        Check(
            name=RELIABLE,
            status=CheckStatus.PASS if vector.reliable else CheckStatus.FAIL,
            expected=fault is None,
            actual=vector.reliable,
            detail=detail,
            expected_fault=fault.id if exact and fault is not None else None,
        )
    )
    return checks


def _is_declared_fault(vector: ResultVector, fault: ExpectedFault) -> bool:
    """The original's reference expectation: terminal, failing set and codes, each exact."""
    failing = {d.name for d in vector.dimensions if d.codes}
    produced = {code for d in vector.dimensions for code in d.codes}
    return (
        not vector.reliable
        and vector.terminal == fault.expected_terminal
        and failing == set(fault.failed_dimensions)
        and produced == set(fault.finding_codes)
    )


def _dimension_detail(
    name: str, codes: set[str], declared: set[str], counts: Mapping[str, int]
) -> str | None:
    if name in declared and not codes:
        return "the declared fault should fail this dimension; it passed"
    return canonical_json(dict(counts)) if codes else None


def measurements(
    vector: ResultVector, record: EpisodeRecord, terminals: frozenset[str]
) -> dict[str, int]:
    dims = {d.name: d for d in vector.dimensions}
    counts = {name: dict(d.counts) for name, d in dims.items()}
    human = counts["human_checkpoints"]
    validity = counts["action_validity"]
    needed = int(
        counts["recovery"].get("reopens", 0) > 0
        or any(row["record_type"] == "side_effect_failed" for row in record.ledger)
    )
    return {
        "eligible": 1,
        "reliable": int(vector.reliable),
        "critical_violation": int(not dims["critical_invariants"].passed),
        "legitimate_terminal": int(vector.terminal in terminals),
        "temporal_correct": int(dims["temporal_correctness"].passed),
        "unnecessary_touches": human.get("touch_unnecessary_escalation", 0)
        + int("UNNECESSARY_CHECKPOINT" in dims["human_checkpoints"].codes),
        "missed_escalations": human.get("touch_missed_escalation", 0),
        "duplicate_or_invalid": validity.get("duplicate_actions", 0)
        + validity.get("rejected_actions", 0),
        "proposals": counts["retrieval_discipline"].get("business_proposals", 0),
        "sla_breaches": counts["obligations"].get("breached", 0),
        "recovery_needed": needed,
        "recovered": int(needed and dims["recovery"].passed),
        "human_touches": human.get("human_touches", 0),
    }


class TapeAgents:
    """Scores decision tapes produced elsewhere: a JSON object ``{scenario_id: decision tape}``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # A tape the file cannot give fails its own case (sdk/predictions.py).
        self.tapes = read_prediction_document(
            path, invalid_code="invalid_predictions", expected="{scenario_id: decision tape}"
        )
        self._agents: dict[int, TapeAgent] = {}

    def solve(self, task: dict[str, Any], session: Any) -> Any:
        scenario = task.get("scenario_id")
        tape = self.tapes.take(str(scenario))
        if not isinstance(tape, dict) or not isinstance(tape.get("decisions"), list):
            raise MalformedOutput(f"[missing_tape] {self.path}: no decision tape for {scenario!r}")
        if task["invocation_index"] == 1 and task["turn_index"] == 0:
            self._agents[id(tape)] = TapeAgent(tape["decisions"])
        return self._agents[id(tape)].solve(task, session)


WORLD = OperationsWorld()
