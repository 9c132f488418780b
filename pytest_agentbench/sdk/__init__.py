"""The public SDK: everything a world kind imports from the core, from one module.

    from pytest_agentbench.sdk import BaseWorld, Case, CaseResult, Check, LazyWorld, hookimpl

This module is the versioned contract between the core and world packages.
Within a minor version (0.x) names are only added; a name is removed or changes
meaning only in a new minor version, listed in the changelog section of the
README. Anything imported from elsewhere in ``pytest_agentbench`` is internal
and may move without notice; the built-in worlds import only from here (a test
keeps them to it).

Names resolve lazily, on first use: the plugin loads in every pytest run, and
a world's registration imports ``hookimpl`` and ``LazyWorld`` from here without
importing pydantic, a world or a report module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "World": "pytest_agentbench.sdk.world",
    "RecognisesLayout": "pytest_agentbench.sdk.world",
    "accepted_protocols": "pytest_agentbench.sdk.world",
    "BaseWorld": "pytest_agentbench.sdk.base",
    "DeclaresScope": "pytest_agentbench.sdk.capabilities",
    "DerivesTruth": "pytest_agentbench.sdk.capabilities",
    "PromotesReports": "pytest_agentbench.sdk.capabilities",
    "ProvidesControlOracle": "pytest_agentbench.sdk.capabilities",
    "RecordsEpisodes": "pytest_agentbench.sdk.capabilities",
    "RescoresReports": "pytest_agentbench.sdk.capabilities",
    "ValidatesPredictions": "pytest_agentbench.sdk.capabilities",
    "WarnsOnVerify": "pytest_agentbench.sdk.capabilities",
    "WritesBaselines": "pytest_agentbench.sdk.capabilities",
    "Case": "pytest_agentbench.sdk.contracts",
    "CaseResult": "pytest_agentbench.sdk.contracts",
    "Check": "pytest_agentbench.sdk.contracts",
    "CheckStatus": "pytest_agentbench.sdk.contracts",
    "ControlAgent": "pytest_agentbench.sdk.contracts",
    "Direction": "pytest_agentbench.sdk.contracts",
    "FailureClass": "pytest_agentbench.sdk.contracts",
    "MetricSpec": "pytest_agentbench.sdk.contracts",
    "MetricValue": "pytest_agentbench.sdk.contracts",
    "Outcome": "pytest_agentbench.sdk.contracts",
    "Record": "pytest_agentbench.sdk.contracts",
    "BUILT_ON_FIRST_USE": "pytest_agentbench.sdk.contracts",
    "Reducer": "pytest_agentbench.sdk.contracts",
    "grade": "pytest_agentbench.sdk.contracts",
    "CONTROLS_FILE": "pytest_agentbench.sdk.layout",
    "SUITE_FILE": "pytest_agentbench.sdk.layout",
    "Suite": "pytest_agentbench.sdk.suite",
    "SuiteConfig": "pytest_agentbench.sdk.suite",
    "pydantic_refusal": "pytest_agentbench.sdk.suite",
    "AgentbenchError": "pytest_agentbench.sdk.errors",
    "field_path": "pytest_agentbench.sdk.errors",
    "AdapterFailure": "pytest_agentbench.sdk.runner",
    "CaseTimeout": "pytest_agentbench.sdk.runner",
    "MalformedOutput": "pytest_agentbench.sdk.runner",
    "call_adapter": "pytest_agentbench.sdk.runner",
    "cap_text": "pytest_agentbench.sdk.errors",
    "describe_exception": "pytest_agentbench.sdk.errors",
    "hookimpl": "pytest_agentbench.sdk.hookspecs",
    "LazyWorld": "pytest_agentbench.sdk.registry",
    "JsonValue": "pytest_agentbench.sdk.canonical",
    "artifact_set_digest": "pytest_agentbench.sdk.canonical",
    "artifact_set_digest_from_hashes": "pytest_agentbench.sdk.canonical",
    "artifact_set_digest_of_files": "pytest_agentbench.sdk.canonical",
    "file_sha256": "pytest_agentbench.sdk.canonical",
    "canonical_bytes": "pytest_agentbench.sdk.canonical",
    "canonical_json": "pytest_agentbench.sdk.canonical",
    "decode_lines_lenient": "pytest_agentbench.sdk.canonical",
    "iter_jsonl": "pytest_agentbench.sdk.canonical",
    "loads_strict": "pytest_agentbench.sdk.canonical",
    "loads_yaml_strict": "pytest_agentbench.sdk.canonical",
    "pretty_json": "pytest_agentbench.sdk.canonical",
    "read_bytes": "pytest_agentbench.sdk.canonical",
    "read_json": "pytest_agentbench.sdk.canonical",
    "read_jsonl": "pytest_agentbench.sdk.canonical",
    "read_yaml": "pytest_agentbench.sdk.canonical",
    "sha256_hex": "pytest_agentbench.sdk.canonical",
    "tree_files": "pytest_agentbench.sdk.canonical",
    "undecodable_line": "pytest_agentbench.sdk.canonical",
    "read_text": "pytest_agentbench.sdk.canonical",
    "copy_json": "pytest_agentbench.sdk.copying",
    "copy_model": "pytest_agentbench.sdk.copying",
    "PredictionDocument": "pytest_agentbench.sdk.predictions",
    "PredictionLines": "pytest_agentbench.sdk.predictions",
    "read_prediction_document": "pytest_agentbench.sdk.predictions",
    "read_prediction_lines": "pytest_agentbench.sdk.predictions",
    "Budget": "pytest_agentbench.tools",
    "EpisodeReceipt": "pytest_agentbench.tools",
    "HANDLER_FAILED": "pytest_agentbench.tools",
    "INVALID_ARGUMENTS": "pytest_agentbench.tools",
    "Receipt": "pytest_agentbench.tools",
    "ToolAgent": "pytest_agentbench.tools",
    "ToolCallError": "pytest_agentbench.tools",
    "ToolCallRecord": "pytest_agentbench.tools",
    "ToolHarnessError": "pytest_agentbench.tools",
    "ToolSession": "pytest_agentbench.tools",
    "ToolSpec": "pytest_agentbench.tools",
    "UNKNOWN_TOOL": "pytest_agentbench.tools",
    "parse_final": "pytest_agentbench.tools",
    "solve_with_session": "pytest_agentbench.tools",
    "ADAPTER_FAILED": "pytest_agentbench.tools.agent",
    "MALFORMED_FINAL": "pytest_agentbench.tools.agent",
    "TIMED_OUT": "pytest_agentbench.tools.agent",
    "SchemaViolation": "pytest_agentbench.tools.schema",
    "compile_schema": "pytest_agentbench.tools.schema",
    "CallPayload": "pytest_agentbench.ledger",
    "Decision": "pytest_agentbench.ledger",
    "HeaderPayload": "pytest_agentbench.ledger",
    "LedgerWriter": "pytest_agentbench.ledger",
    "ReportsUsage": "pytest_agentbench.ledger",
    "open_no_follow": "pytest_agentbench.ledger.writer",
    "write_new_file": "pytest_agentbench.sdk.files",
    "write_file": "pytest_agentbench.sdk.files",
    "id_file_name": "pytest_agentbench.sdk.files",
    "LEDGER_VERSION": "pytest_agentbench.ledger",
    "audit_ledger": "pytest_agentbench.ledger",
    "derive_provider_execution": "pytest_agentbench.ledger.binding",
    "PROVIDER_EXECUTION_FIELDS": "pytest_agentbench.sdk.episode_artifacts",
    "BoundCall": "pytest_agentbench.sdk.episode_artifacts",
    "EpisodeBinding": "pytest_agentbench.sdk.episode_artifacts",
    "ProviderExecution": "pytest_agentbench.sdk.episode_artifacts",
    "WritesEpisodeArtifacts": "pytest_agentbench.sdk.episode_artifacts",
    "ControlManifest": "pytest_agentbench.run.controls",
    "ControlSpec": "pytest_agentbench.run.controls",
    "ControlOracle": "pytest_agentbench.run.controls_oracle",
    "OracleIdentity": "pytest_agentbench.run.controls_oracle",
    "data_root": "pytest_agentbench.run.packaged",
    "packaged_suite_roots": "pytest_agentbench.run.packaged",
    "aggregate": "pytest_agentbench.scoring.metrics",
    "PROJECTIONS": "pytest_agentbench.sdk.projections",
    "selected_projections": "pytest_agentbench.sdk.projections",
}

__all__ = [
    "ADAPTER_FAILED",
    "BUILT_ON_FIRST_USE",
    "CONTROLS_FILE",
    "HANDLER_FAILED",
    "INVALID_ARGUMENTS",
    "LEDGER_VERSION",
    "MALFORMED_FINAL",
    "PROJECTIONS",
    "PROVIDER_EXECUTION_FIELDS",
    "SUITE_FILE",
    "TIMED_OUT",
    "UNKNOWN_TOOL",
    "AdapterFailure",
    "AgentbenchError",
    "BaseWorld",
    "BoundCall",
    "Budget",
    "CallPayload",
    "Case",
    "CaseResult",
    "CaseTimeout",
    "Check",
    "CheckStatus",
    "ControlAgent",
    "ControlManifest",
    "ControlOracle",
    "ControlSpec",
    "Decision",
    "DeclaresScope",
    "DerivesTruth",
    "Direction",
    "EpisodeBinding",
    "EpisodeReceipt",
    "FailureClass",
    "HeaderPayload",
    "JsonValue",
    "LazyWorld",
    "LedgerWriter",
    "MalformedOutput",
    "MetricSpec",
    "MetricValue",
    "OracleIdentity",
    "Outcome",
    "PredictionDocument",
    "PredictionLines",
    "PromotesReports",
    "ProviderExecution",
    "ProvidesControlOracle",
    "Receipt",
    "RecognisesLayout",
    "Record",
    "RecordsEpisodes",
    "Reducer",
    "ReportsUsage",
    "RescoresReports",
    "SchemaViolation",
    "Suite",
    "SuiteConfig",
    "ToolAgent",
    "ToolCallError",
    "ToolCallRecord",
    "ToolHarnessError",
    "ToolSession",
    "ToolSpec",
    "ValidatesPredictions",
    "WarnsOnVerify",
    "World",
    "WritesBaselines",
    "WritesEpisodeArtifacts",
    "accepted_protocols",
    "aggregate",
    "artifact_set_digest",
    "artifact_set_digest_from_hashes",
    "artifact_set_digest_of_files",
    "audit_ledger",
    "call_adapter",
    "canonical_bytes",
    "canonical_json",
    "cap_text",
    "compile_schema",
    "copy_json",
    "copy_model",
    "data_root",
    "decode_lines_lenient",
    "derive_provider_execution",
    "describe_exception",
    "field_path",
    "file_sha256",
    "grade",
    "hookimpl",
    "id_file_name",
    "iter_jsonl",
    "loads_strict",
    "loads_yaml_strict",
    "open_no_follow",
    "packaged_suite_roots",
    "parse_final",
    "pretty_json",
    "pydantic_refusal",
    "read_bytes",
    "read_json",
    "read_jsonl",
    "read_prediction_document",
    "read_prediction_lines",
    "read_text",
    "read_yaml",
    "selected_projections",
    "sha256_hex",
    "solve_with_session",
    "tree_files",
    "undecodable_line",
    "write_file",
    "write_new_file",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from pytest_agentbench.ledger import (
        LEDGER_VERSION,
        CallPayload,
        Decision,
        HeaderPayload,
        LedgerWriter,
        ReportsUsage,
        audit_ledger,
    )
    from pytest_agentbench.ledger.binding import derive_provider_execution
    from pytest_agentbench.ledger.writer import open_no_follow
    from pytest_agentbench.run.controls import ControlManifest, ControlSpec
    from pytest_agentbench.run.controls_oracle import ControlOracle, OracleIdentity
    from pytest_agentbench.run.packaged import data_root, packaged_suite_roots
    from pytest_agentbench.scoring.metrics import aggregate
    from pytest_agentbench.sdk.base import BaseWorld
    from pytest_agentbench.sdk.canonical import (
        JsonValue,
        artifact_set_digest,
        artifact_set_digest_of_files,
        canonical_bytes,
        canonical_json,
        decode_lines_lenient,
        file_sha256,
        iter_jsonl,
        loads_strict,
        loads_yaml_strict,
        pretty_json,
        read_bytes,
        read_json,
        read_jsonl,
        read_text,
        read_yaml,
        sha256_hex,
        tree_files,
        undecodable_line,
    )
    from pytest_agentbench.sdk.canonical import (
        artifact_set_digest_from_hashes as artifact_set_digest_from_hashes,
    )
    from pytest_agentbench.sdk.capabilities import (
        DeclaresScope,
        DerivesTruth,
        PromotesReports,
        ProvidesControlOracle,
        RecordsEpisodes,
        RescoresReports,
        ValidatesPredictions,
        WarnsOnVerify,
        WritesBaselines,
    )
    from pytest_agentbench.sdk.contracts import (
        BUILT_ON_FIRST_USE,
        Case,
        CaseResult,
        Check,
        CheckStatus,
        ControlAgent,
        Direction,
        FailureClass,
        MetricSpec,
        MetricValue,
        Outcome,
        Record,
        Reducer,
        grade,
    )
    from pytest_agentbench.sdk.copying import copy_json, copy_model
    from pytest_agentbench.sdk.episode_artifacts import (
        PROVIDER_EXECUTION_FIELDS,
        BoundCall,
        EpisodeBinding,
        ProviderExecution,
        WritesEpisodeArtifacts,
    )
    from pytest_agentbench.sdk.errors import (
        AgentbenchError,
        cap_text,
        describe_exception,
        field_path,
    )
    from pytest_agentbench.sdk.files import id_file_name, write_file, write_new_file
    from pytest_agentbench.sdk.hookspecs import hookimpl
    from pytest_agentbench.sdk.layout import CONTROLS_FILE, SUITE_FILE
    from pytest_agentbench.sdk.predictions import (
        PredictionDocument,
        PredictionLines,
        read_prediction_document,
        read_prediction_lines,
    )
    from pytest_agentbench.sdk.projections import PROJECTIONS, selected_projections
    from pytest_agentbench.sdk.registry import LazyWorld
    from pytest_agentbench.sdk.runner import (
        AdapterFailure,
        CaseTimeout,
        MalformedOutput,
        call_adapter,
    )
    from pytest_agentbench.sdk.suite import Suite, SuiteConfig, pydantic_refusal
    from pytest_agentbench.sdk.world import RecognisesLayout, World, accepted_protocols
    from pytest_agentbench.tools import (
        HANDLER_FAILED,
        INVALID_ARGUMENTS,
        UNKNOWN_TOOL,
        Budget,
        EpisodeReceipt,
        Receipt,
        ToolAgent,
        ToolCallError,
        ToolCallRecord,
        ToolHarnessError,
        ToolSession,
        ToolSpec,
        parse_final,
        solve_with_session,
    )
    from pytest_agentbench.tools.agent import ADAPTER_FAILED, MALFORMED_FINAL, TIMED_OUT
    from pytest_agentbench.tools.schema import SchemaViolation, compile_schema
