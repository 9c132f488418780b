"""The JSON run report: schema-versioned canonical JSON with a shipped JSON Schema."""

from __future__ import annotations

import functools
import io
import json
import math
import platform
import subprocess
import sys
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, Literal, TextIO

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from pytest_agentbench import __version__
from pytest_agentbench.agents.provenance_records import CaseModelCalls, RunProvenance
from pytest_agentbench.report.case_store import CaseStore
from pytest_agentbench.report.judged_summary import JudgedSummary
from pytest_agentbench.report.summary import RunSummary, SuiteSummary
from pytest_agentbench.report.transcripts import TranscriptFile
from pytest_agentbench.report.trust import Trust
from pytest_agentbench.run.output_caps import TruncatedReceipt
from pytest_agentbench.scoring.comparison import Comparison
from pytest_agentbench.scoring.gates import GateVerdict
from pytest_agentbench.sdk.canonical import canonical_json, pretty_json
from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import write_file, writing_text
from pytest_agentbench.sdk.suite import pydantic_refusal
from pytest_agentbench.sdk.tools.receipt import AnyReceipt

SCHEMA_PATH = Path(__file__).with_name("run_report.schema.json")


class Environment(Record):
    model_config = BUILT_ON_FIRST_USE

    python: str
    pytest: str
    plugin: str
    platform: str
    git_commit: str | None


class AdapterIdentity(Record):
    model_config = BUILT_ON_FIRST_USE

    spec: str | None
    """The ``--agentbench-adapter`` value; ``None`` for the built-in reference agents."""
    description: str


class RunReport(Record):
    model_config = BUILT_ON_FIRST_USE

    # Version 2 adds each suite's ``coverage``, ``metric_definitions`` and ``trials``,
    # a case's ``trial``, ``cluster`` and ``recorded``, and the run's ``comparison``:
    # all optional, so a version 1 report still reads (without them), and so does a
    # version 2 report written before the trials and comparison fields existed.
    # Version 3 adds the run's ``model_run`` (provenance of the chat model behind it),
    # a case's ``exclusion`` and ``model_calls`` and the ``excluded`` outcome; later,
    # the optional ``judged`` (a version 3 report without it still reads).
    schema_version: Literal[
        "agentbench-run-report/1", "agentbench-run-report/2", "agentbench-run-report/3"
    ] = "agentbench-run-report/3"
    environment: Environment
    adapter: AdapterIdentity
    exit_status: int
    suites: tuple[SuiteSummary, ...]
    gates: tuple[GateVerdict, ...]
    problems: tuple[str, ...] = ()
    comparison: Comparison | None = None
    """The paired comparison against ``--agentbench-baseline``; ``None`` without one."""
    model_run: RunProvenance | None = None
    """The chat model behind the run, its settings, pricing and traffic; ``None`` when no
    model is configured."""
    trust: Trust | None = None
    """How the adapter was kept from the oracle: in-process, isolated, sandboxed, and which
    of the sandbox's promises held; ``None`` in a report written before it existed."""
    transcripts: tuple[TranscriptFile, ...] = ()
    """Each suite's transcripts file (``<report>.transcripts/<suite>.ndjson``) with its
    digest: the model calls, tool calls and final answer of every case that had them."""
    judged: JudgedSummary | None = None
    """Judged diagnostics (``--agentbench-judge-cache``), added once the report is judged:
    beside the outcomes, metrics and gates, which never read them; ``None`` when not judged."""


def git_commit(directory: Path) -> str | None:
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = completed.stdout.strip()
    return commit if completed.returncode == 0 and commit else None


def environment(rootpath: Path) -> Environment:
    return Environment(
        python=platform.python_version(),
        pytest=pytest.__version__,
        plugin=__version__,
        platform=f"{sys.platform}-{platform.machine()}",
        git_commit=git_commit(rootpath),
    )


def stream_report(
    out: TextIO,
    summary: RunSummary,
    store: CaseStore,
    durations: Mapping[str, float],
    *,
    rootpath: Path,
    adapter_spec: str | None,
    adapter_description: str,
    exit_status: int,
    comparison: Comparison | None = None,
    model_run: RunProvenance | None = None,
    trust: Trust | None = None,
    transcripts: tuple[TranscriptFile, ...] = (),
) -> None:
    """Write the run report to ``out``: the canonical JSON of a :class:`RunReport`.

    The bytes are exactly those of ``canonical_json(report.model_dump(mode="json"))``
    for the report holding every case, but that report is never built: each
    suite's case entries are read from ``store`` and written one at a time, so a
    run of 100,000 cases needs memory for one case's record, not for all of them.
    """
    head = _report_members(
        environment=environment(rootpath),
        adapter=AdapterIdentity(spec=adapter_spec, description=adapter_description),
        exit_status=exit_status,
        gates=summary.gates,
        problems=summary.problems,
        comparison=comparison,
        model_run=model_run,
        trust=trust,
        transcripts=transcripts,
    )
    stored = store.by_suite()

    def write_suites() -> None:
        for index, suite in enumerate(summary.suites):
            if index:
                out.write(",")
            fields = suite.model_copy(update={"cases": ()}).model_dump(mode="json")
            nodeids = stored.get(suite.id, [])
            cases = functools.partial(_write_cases, out, nodeids, store, durations)
            _write_object(out, fields, "cases", cases)

    _write_object(out, head, "suites", write_suites)
    out.write("\n")


def _report_members(**given: Any) -> dict[str, Any]:
    """The run report's members but ``suites``, as ``RunReport(**given).model_dump(mode="json")``
    holds them, with its defaults for what ``given`` lacks.

    Each member is dumped by its own record's serialiser, already built (the records were
    validated when made): a run that writes a report builds no validator for the report
    as a whole, whose comparison, model and judged records it mostly leaves empty (4 ms
    of CPU at the end of every such run). The members are RunReport's own, so a field
    added to it is written without a change here; a member of another kind than those
    dumped alone (a float, a mapping) has the whole record dump them all.
    """
    fields = RunReport.model_fields
    unknown = set(given) - set(fields)
    missing = {name for name, field in fields.items() if field.is_required()} - {*given, "suites"}
    if unknown or missing:
        raise TypeError(
            f"not members of the run report: {sorted(unknown)}; missing {sorted(missing)}"
        )
    values = {
        name: given[name] if name in given else field.get_default(call_default_factory=True)
        for name, field in fields.items()
        if name != "suites"
    }
    if all(map(_dumped_alone, values.values())):
        return {name: _member(value) for name, value in values.items()}
    whole: dict[str, Any] = RunReport(suites=(), **values).model_dump(mode="json")
    del whole["suites"]
    return whole


def _dumped_alone(value: Any) -> bool:
    """Whether ``value`` dumps alone as a record holding it would: a record, a tuple of
    them, or a string, whole number, boolean or ``None``."""
    if isinstance(value, tuple):
        return all(map(_dumped_alone, value))
    return value is None or isinstance(value, BaseModel | str | int)


def _member(value: Any) -> Any:
    """``value`` (:func:`_dumped_alone`) in JSON mode."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, tuple):
        return [_member(item) for item in value]
    return value


def _write_cases(
    out: TextIO, nodeids: list[str], store: CaseStore, durations: Mapping[str, float]
) -> None:
    write, text_of, durations_get = out.write, store.canonical_text, durations.get
    separator = ""
    for nodeid in nodeids:
        duration = durations_get(nodeid)
        # canonical_json of a finite float is its repr, and of a string the encoder's
        # string form: asked directly, a case costs two encoder calls fewer.
        number = (
            float.__repr__(duration)
            if type(duration) is float and math.isfinite(duration)
            else canonical_json(duration)
        )
        # canonical_json of {"duration_s", "nodeid", "result"}: the keys in order, one write.
        write(
            f'{separator}{{"duration_s":{number},"nodeid":{encode_basestring(nodeid)},'
            f'"result":{text_of(nodeid)}}}'
        )
        separator = ","


def _write_object(
    out: TextIO, fields: dict[str, Any], listed: str, write_list: Callable[[], None]
) -> None:
    """Canonical JSON of ``fields`` plus the key ``listed``, whose list ``write_list`` writes."""
    out.write("{")
    for index, key in enumerate(sorted({*fields, listed})):
        if index:
            out.write(",")
        out.write(canonical_json(key))
        out.write(":")
        if key == listed:
            out.write("[")
            write_list()
            out.write("]")
        else:
            out.write(canonical_json(fields[key]))
    out.write("}")


def write_report(
    path: Path,
    summary: RunSummary,
    store: CaseStore,
    durations: Mapping[str, float],
    **identity: Any,
) -> None:
    """:func:`stream_report` into the file ``path``, whole or not at all (``output_unwritable``)."""
    with writing_text(path) as out:
        stream_report(out, summary, store, durations, **identity)


def add_judged(path: Path, judged: JudgedSummary) -> None:
    """Give the report at ``path`` its ``judged`` member; every other byte's meaning is kept.

    The report is canonical JSON, so re-encoding the document with the member
    added writes what the report would have been had it been judged first.
    """
    document = json.loads(path.read_text(encoding="utf-8"))
    document["judged"] = judged.model_dump(mode="json")
    write_file(path, canonical_json(document) + "\n")


def report_document(
    summary: RunSummary, store: CaseStore, durations: Mapping[str, float], **identity: Any
) -> dict[str, Any]:
    """The run report as one document, for a consumer that needs all of it (the HTML page)."""
    text = io.StringIO()
    stream_report(text, summary, store, durations, **identity)
    document: dict[str, Any] = json.loads(text.getvalue())
    return document


def schema_text() -> str:
    """The JSON Schema of the run report, as shipped beside this module."""
    return pretty_json(_with_receipt_schema(RunReport.model_json_schema()))


def _with_receipt_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # contracts cannot import the tools package (it builds on contracts), so a
    # case result holds its receipt as JSON; the published schema still says
    # exactly what that JSON is: a session's receipt, or an episode's.
    receipts = TypeAdapter(AnyReceipt).json_schema()
    definitions = schema["$defs"]
    clashes = set(definitions) & set(receipts["$defs"])
    assert not clashes, f"run report and receipt schemas both define {sorted(clashes)}"
    definitions.update(receipts["$defs"])
    truncated = TruncatedReceipt.model_json_schema()
    definitions.update(truncated.pop("$defs", {}))
    definitions["TruncatedReceipt"] = truncated
    definitions["CaseResult"]["properties"]["receipt"] = {
        "anyOf": [
            {"$ref": "#/$defs/Receipt"},
            {"$ref": "#/$defs/EpisodeReceipt"},
            {"$ref": "#/$defs/TruncatedReceipt"},
            {"type": "null"},
        ],
        "default": None,
        "description": (
            "The case's tool-session receipt (interactive worlds); an episode receipt "
            "when the world opened one session per invocation; above "
            "agentbench_max_output_bytes, its digest and the marked start of its JSON."
        ),
    }
    model_calls = CaseModelCalls.model_json_schema()
    definitions.update(model_calls.pop("$defs", {}))
    definitions["CaseModelCalls"] = model_calls
    definitions["CaseResult"]["properties"]["model_calls"] = {
        "anyOf": [{"$ref": "#/$defs/CaseModelCalls"}, {"type": "null"}],
        "default": None,
        "description": (
            "The case's model traffic: calls, attempts, tokens, cost, each call's request "
            "digest, the call index of each decision, every wait and a budget refusal."
        ),
    }
    definitions["CaseResult"]["properties"]["artifact"] = {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "file": {"type": "string"},
                    "digest_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                },
                "required": ["file", "digest_sha256"],
                "additionalProperties": False,
            },
            {"type": "null"},
        ],
        "default": None,
        "description": (
            "Under --agentbench-artifacts: the case's episode artefact, its file relative "
            "to the artefacts folder and the SHA-256 of its bytes."
        ),
    }
    return schema


if __name__ == "__main__":  # regenerate the shipped schema
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")


def read_report(
    path: str, *, max_bytes: int | None = None, option: str = "--max-report-bytes"
) -> RunReport:
    """A JSON run report (``--agentbench-report``), streamed and validated.

    Each value is bounded by the input limits, the file only by ``max_bytes``
    (``report_too_large``, naming ``option``).
    """
    if not Path(path).is_file():
        # A folder, or a device such as /dev/zero that would be read forever.
        raise AgentbenchError("unreadable_file", "not a regular file (a run report)", file=path)
    # Imported here: a run that writes its report reads none, and the reader's
    # event records cost that run 3 ms of CPU to define.
    from pytest_agentbench.report.stream import read_report_document

    document = read_report_document(Path(path), max_bytes=max_bytes, option=option)
    try:
        return RunReport.model_validate(document)
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=path) from None
