"""Recorded adapter outputs: keeping them, re-scoring them, resuming a run from them.

A case's :class:`~pytest_agentbench.sdk.contracts.RecordedOutput` holds the adapter's
outcome with the digests of the case (its record and public view), the suite's
public folder and its oracle, and the adapter's identity. It travels in the
case result, so the JSON run report keeps it; ``--agentbench-record DIR`` also
writes one file per case. Re-scoring grades a recorded outcome again without
calling the adapter; a case whose digest changed since is refused by name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from json.encoder import encode_basestring
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from pytest_agentbench.sdk.canonical import canonical_json, pretty_json, read_json, sha256_hex
from pytest_agentbench.sdk.contracts import (
    Case,
    CaseResult,
    FailureClass,
    Outcome,
    RecordedOutput,
    harness_error,
)
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import id_file_name, write_file
from pytest_agentbench.sdk.metrics import GRADED
from pytest_agentbench.sdk.suite import Suite, pydantic_refusal, suite_digests

if TYPE_CHECKING:
    from pytest_agentbench.report.json_report import RunReport

RecordKey = tuple[str, str, int | None]
"""(suite id, case id, trial)."""


_NOT_DIGESTED = frozenset({"file", "line"})
"""Where the case is written down, not what it asks: moving it keeps its recorded outputs."""


def case_digest(case: Case, view: Any) -> str:
    """sha256 of the case record and the public view: what the adapter answered.

    The canonical JSON of ``{"case": case.model_dump(mode="json", exclude=file and
    line), "view": the view made JSON-able}`` (tests/test_case_digest.py pins it).
    """
    # The record's field values as they stand: Case's fields are strings, an int, None
    # and a tuple of strings, which canonical JSON writes as model_dump's JSON mode
    # does (a tuple as a list), so the bytes are the same without calling pydantic's
    # serializer, about a fifth of the digest's cost in a run. A world's subclass may
    # add computed fields or serializers its field values do not show: it is dumped.
    seen = to_jsonable_python(view, fallback=repr)
    written = _written_case(case) if type(case) is Case else None
    if written is not None:
        # A view with a non-finite number is refused below, naming its path in the payload.
        with contextlib.suppress(AgentbenchError):
            return sha256_hex(f'{{"case":{written},"view":{canonical_json(seen)}}}'.encode())
    if type(case) is Case:
        # A copy less the two (every Case holds both): a comprehension asking each field
        # whether it is one of them cost six times the bytecodes.
        record = dict(case.__dict__)
        for name in _NOT_DIGESTED:
            del record[name]
    else:
        record = case.model_dump(mode="json", exclude=set(_NOT_DIGESTED))
    return sha256_hex(canonical_json({"case": record, "view": seen}).encode("utf-8"))


def _written_case(case: Case) -> str | None:
    """The canonical JSON of a Case's fields but its file and line, written in their sorted
    order (half the encoder's time); ``None`` where a field holds a value of another type
    than declared (an unvalidated copy), which the encoder writes as it stands."""
    fields = case.__dict__
    cluster, title, labels = fields["cluster"], fields["title"], fields["labels"]
    if type(labels) is not tuple:
        return None
    try:
        return (
            f'{{"case_id":{encode_basestring(fields["case_id"])},'
            f'"cluster":{"null" if cluster is None else encode_basestring(cluster)},'
            f'"labels":[{",".join(map(encode_basestring, labels))}],'
            f'"suite_id":{encode_basestring(fields["suite_id"])},'
            f'"title":{"null" if title is None else encode_basestring(title)}}}'
        )
    except TypeError:
        return None


def suite_digest_pair(suite: Suite) -> tuple[str | None, str | None]:
    """The suite's public and oracle digests, computed once per process."""
    cached: tuple[str | None, str | None] | None = suite.cache.get("agentbench.digests")
    if cached is None:
        digests = suite_digests(suite)
        cached = suite.cache["agentbench.digests"] = (digests["public"], digests["oracle"])
    return cached


def record(
    result: CaseResult, outcome: Outcome, *, case: Case, view: Any, suite: Suite, adapter: str
) -> CaseResult:
    public, oracle = suite_digest_pair(suite)
    # The receipt is already the result's own: recording it twice would double the report.
    kept = outcome.model_copy(update={"receipt": None}) if outcome.receipt else outcome
    recorded = RecordedOutput(
        outcome=kept,
        case_digest=case_digest(case, view),
        suite_digest=public,
        oracle_digest=oracle,
        adapter=adapter,
    )
    if type(result) is not CaseResult:
        return result.model_copy(update={"recorded": recorded})
    # What ``model_copy(update=...)`` does for a record with neither extra nor private
    # attributes, without its three generic ``copy.copy`` calls (a third of this).
    copied = CaseResult.__new__(CaseResult)
    values = dict(result.__dict__)
    values["recorded"] = recorded
    object.__setattr__(copied, "__dict__", values)
    object.__setattr__(copied, "__pydantic_extra__", None)
    object.__setattr__(
        copied, "__pydantic_fields_set__", {*result.__pydantic_fields_set__, "recorded"}
    )
    object.__setattr__(copied, "__pydantic_private__", None)
    return copied


def recorded_outcome(result: CaseResult) -> Outcome:
    assert result.recorded is not None
    outcome = result.recorded.outcome
    if outcome.receipt is None and result.receipt is not None:
        outcome = outcome.model_copy(update={"receipt": result.receipt})
    return outcome


def record_file(directory: Path, result: CaseResult) -> Path:
    """``DIR/<suite id>/<case id>[model=M][trial-N].json``, ids percent-encoded and bounded."""
    trial = "" if result.trial is None else f"[trial-{result.trial}]"
    model = "" if result.model is None else f"[model={result.model}]"
    return (
        directory
        / id_file_name(result.suite_id)
        / id_file_name(result.case_id, f"{model}{trial}.json")
    )


def write_records(
    results: Iterable[CaseResult], directory: Path
) -> tuple[list[Path], list[AgentbenchError]]:
    """One file per recorded case: the whole case result, recorded outcome included.

    A file that cannot be written is skipped and its refusal returned: the others
    are still written.
    """
    written = []
    failed = []
    for result in results:
        if result.recorded is None:
            continue
        path = record_file(directory, result)
        try:
            write_file(path, pretty_json(result.model_dump(mode="json")))
        except AgentbenchError as exc:
            failed.append(exc)
            continue
        written.append(path)
    return written, failed


def _from_report(path: Path) -> list[CaseResult]:
    # Imported only to re-score a report: its models cost every other run their import.
    from pytest_agentbench.report.json_report import RunReport
    from pytest_agentbench.report.stream import read_report_document

    document = read_report_document(path)
    try:
        report = RunReport.model_validate(document)
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=str(path)) from None
    return [entry.result for suite in report.suites for entry in suite.cases]


def stream_results(path: Path, on_result: Callable[[CaseResult], None]) -> RunReport:
    """The run report at ``path`` validated as :func:`load_results` validates it, but a
    case entry at a time: each entry's result is handed to ``on_result`` in file order
    and dropped. The report comes back with its suites' ``cases`` empty.

    A report wrong in its head or a suite's fields is refused for that first; else
    for its first wrong case entry (the whole-model read names the first wrong field
    in the models' field order: the two differ only for a report wrong in both)."""
    from pytest_agentbench.report.json_report import RunReport
    from pytest_agentbench.report.stream import CaseEntry as Streamed
    from pytest_agentbench.report.stream import (
        HeadField,
        NotAnObject,
        SuitesBegin,
        iter_report,
    )
    from pytest_agentbench.report.summary import CaseEntry

    head: Any = {}
    suites: list[Any] = []
    refusal: AgentbenchError | None = None
    numbers: dict[int, int] = {}
    for event in iter_report(path):
        if isinstance(event, NotAnObject):
            head = event.value
        elif isinstance(event, HeadField):
            head[event.key] = event.value
        elif isinstance(event, SuitesBegin):
            head["suites"] = suites
        elif isinstance(event, Streamed):
            number = numbers.get(event.suite, 0)
            numbers[event.suite] = number + 1
            if refusal is not None:
                continue
            try:
                entry = CaseEntry.model_validate(event.value)
            except ValidationError as exc:
                within = ("suites", event.suite, "cases", number)
                refusal = pydantic_refusal(exc, file=str(path), within=within)
                continue
            on_result(entry.result)
        else:
            value = event.value
            if event.cases_streamed and isinstance(value, dict):
                value = {**value, "cases": []}
            suites.append(value)
    try:
        report = RunReport.model_validate(head)
    except ValidationError as exc:
        raise pydantic_refusal(exc, file=str(path)) from None
    if refusal is not None:
        raise refusal
    return report


def _from_folder(folder: Path) -> list[CaseResult]:
    results = []
    for path in sorted(folder.glob("*/*.json")):
        try:
            results.append(CaseResult.model_validate(read_json(path)))
        except ValidationError as exc:
            raise pydantic_refusal(exc, file=str(path)) from None
    return results


def load_results(path: Path, *, field: str) -> list[CaseResult]:
    """Every case result of a run report or a record folder, recorded output or not."""
    if path.is_dir():
        return _from_folder(path)
    if path.is_file():
        return _from_report(path)
    raise AgentbenchError(
        "invalid_recording", "no such report or folder", file=str(path), field=field
    )


def load_records(path: Path, *, field: str) -> dict[RecordKey, CaseResult]:
    """Recorded results by (suite, case, trial), from a run report or a record folder."""
    results = load_results(path, field=field)
    recorded = {(r.suite_id, r.case_id, r.trial): r for r in results if r.recorded is not None}
    if not recorded:
        raise AgentbenchError(
            "invalid_recording",
            "holds no recorded outputs (--agentbench-report and --agentbench-record keep them)",
            file=str(path),
            field=field,
        )
    return recorded


def replay_refusal(
    recorded: CaseResult | None, *, case: Case, view: Any, suite: Suite
) -> CaseResult | None:
    """A harness error naming why ``recorded`` cannot be re-scored for ``case``; else ``None``."""
    if recorded is None or recorded.recorded is None:
        reason = "[replay_missing_output] no recorded output for this case"
    elif recorded.recorded.case_digest != case_digest(case, view):
        reason = (
            "[replay_case_changed] the case or its public view changed since its output was "
            f"recorded (case digest {recorded.recorded.case_digest[:12]}...)"
        )
    else:
        return None
    return harness_error(case.suite_id, case.case_id, reason, case.labels)


def oracle_changes(
    results: Iterable[CaseResult], oracle_now: Mapping[str, str | None]
) -> list[str]:
    """One note per suite whose recorded outputs were scored under another oracle."""
    notes = []
    seen: set[str] = set()
    for result in results:
        if result.recorded is None or result.suite_id in seen:
            continue
        now = oracle_now.get(result.suite_id)
        if result.suite_id in oracle_now and result.recorded.oracle_digest != now:
            seen.add(result.suite_id)
            notes.append(
                f"[oracle_changed] suite {result.suite_id!r}: outputs recorded under oracle "
                f"digest {result.recorded.oracle_digest}, re-scored under {now}"
            )
    return notes


def resumable(result: CaseResult) -> bool:
    """A graded result worth keeping: not an agent error or a harness error, which run again."""
    return result.outcome in GRADED and result.failure_class not in (
        FailureClass.AGENT_ERROR,
        FailureClass.HARNESS_ERROR,
    )
