"""The two lineages' submission files, read strictly, and their shape check.

The original has no C08 v2 validator: its scorer raises bare exceptions. Each
of them is named here by a stable code, and :func:`validate_submission`
reports every problem it finds (with the line of the row concerned) instead
of stopping at the first, using public data only:

==========================  ================================================================
``malformed_json``          not JSON (also ``duplicate_key``, ``non_finite_number``)
``invalid_submission``      JSON, but a field is missing, unknown, mistyped, blank or not
                            ``synthetic: true``
``noncanonical_order``      Asteria rows, or the ids in a row, are not sorted
``duplicate_action_id``     Asteria: an action has more than one row
``duplicate_observation_id``  an id repeats within an Asteria row, or an Enterprise row id repeats
``missing_action``          Asteria: a public action has no row
``unknown_action``          a row names an action the public payload does not have
``sequence_mismatch``       Enterprise: ``sequence`` does not run 0..n-1 in list order
``public_digest_mismatch``  the submission binds a different public input
``benchmark_mismatch``      Asteria: another benchmark id
``noncanonical_json``       Enterprise: the bytes are not the canonical form
``manifest_binding_mismatch``  an Asteria pair's manifest does not bind its submission
==========================  ================================================================

An Enterprise ``submission.json`` is read as the original's loader reads it:
its bytes must be canonical JSON (``noncanonical_json``: sorted keys, compact
separators, raw UTF-8, ``"synthetic": true`` written out, one final newline),
and a row's ids need one character at least (a blank ``" "`` is accepted, as
there). An Enterprise observation with a wrong tenant or an unknown
``evidence_id`` is scored, not refused.

An Asteria submission may also come as a pair: ``c08-asteria-submission.json``
with a ``manifest.json`` beside it, alone in their folder. The manifest follows
the non-frozen contract (``visibility: "submission"``, no ``seed``; a frozen
manifest fails it). The pair is read as governed JSON, so it also refuses
``inventory_mismatch``, an invalid or noncanonical file, and
``manifest_binding_mismatch`` (the descriptor or set digest differs from the
submission's bytes).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from pytest_agentbench.sdk import (
    AgentbenchError,
    JsonValue,
    Record,
    canonical_json,
    field_path,
    loads_strict,
)
from pytest_agentbench.worlds.evidence_binding.artifacts import (
    Governed,
    Hex64,
    NonBlank,
    canonical_file_bytes,
    parse_governed,
    path_bound_digest,
    record_bytes,
    sha256_bytes,
)
from pytest_agentbench.worlds.evidence_binding.asteria import AsteriaPublic
from pytest_agentbench.worlds.evidence_binding.enterprise import EnterprisePublic

SchemaVersion = Literal["2.0.0"]


class AsteriaRow(Governed):
    action_event_id: NonBlank
    retained_observation_ids: tuple[NonBlank, ...]


class AsteriaSubmission(Governed):
    schema_version: SchemaVersion
    benchmark_id: NonBlank
    public_input_digest: Hex64
    rows: tuple[AsteriaRow, ...] = Field(min_length=1)


class SubmissionDescriptor(Governed):
    path: NonBlank
    byte_size: Annotated[int, Field(ge=0)]
    sha256: Hex64


class SubmissionManifest(Governed):
    """``c08-asteria-manifest-v2``, the non-frozen manifest of submission pairs."""

    schema_version: SchemaVersion
    benchmark_id: NonBlank
    visibility: Literal["public", "evaluator", "submission"]
    artifact_set_digest: Hex64
    artifacts: tuple[SubmissionDescriptor]


NonEmpty = Annotated[str, Field(min_length=1)]
"""The original's Enterprise rule for a row's ids: one character at least, blank allowed."""


class SubmittedObservation(Governed):
    observation_id: NonEmpty
    sequence: Annotated[int, Field(ge=0)]
    action_id: NonEmpty
    tenant_id: NonEmpty
    evidence_id: NonEmpty


class EnterpriseSubmission(Governed):
    schema_version: SchemaVersion
    public_input_digest: Hex64
    observations: tuple[SubmittedObservation, ...]


class Problem(Record):
    code: str
    message: str
    field: str | None = None
    action_id: str | None = None
    """The action the problem belongs to; ``None`` for the whole document."""
    line: int | None = None

    def render(self) -> str:
        where = "document" if self.line is None else f"line {self.line}"
        at = f" {self.field}:" if self.field else ""
        return f"{where}: error [{self.code}]{at} {self.message}"


class SubmissionReport(Record):
    """Every problem of a submission; valid when there is none."""

    diagnostics: tuple[Problem, ...]

    @property
    def valid(self) -> bool:
        return not self.diagnostics

    def render_lines(self) -> list[str]:
        verdict = "valid" if self.valid else "invalid"
        return [
            *(p.render() for p in self.diagnostics),
            f"{verdict}: {len(self.diagnostics)} error(s)",
        ]

    def json_text(self) -> str:
        return canonical_json(
            {
                "valid": self.valid,
                "errors": len(self.diagnostics),
                "diagnostics": [p.model_dump(mode="json") for p in self.diagnostics],
            }
        )


def _line_of(text: str, needle: str | None) -> int | None:
    """The line where ``needle`` (a JSON string) first appears in ``text``."""
    if not needle:
        return None
    at = text.find(canonical_json(needle))
    return None if at < 0 else text.count("\n", 0, at) + 1


def _shape_problems(
    exc: ValidationError, value: JsonValue, rows_key: str, id_key: str
) -> list[Problem]:
    problems = []
    for error in exc.errors():
        location = tuple(error["loc"])
        action = None
        if len(location) >= 2 and location[0] == rows_key and isinstance(location[1], int):
            rows = value.get(rows_key) if isinstance(value, dict) else None
            row = rows[location[1]] if isinstance(rows, list) else None
            candidate = row.get(id_key) if isinstance(row, dict) else None
            action = candidate if isinstance(candidate, str) else None
        message = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
        problems.append(
            Problem(
                code="invalid_submission",
                message=message,
                field=field_path(location) or "<root>",
                action_id=action,
            )
        )
    return problems


def _parse(text: str, file: str) -> JsonValue:
    try:
        return loads_strict(text, file=file)
    except AgentbenchError as exc:
        raise _Unreadable(
            Problem(
                code=exc.code, message=exc.reason, field=exc.location.field, line=exc.location.line
            )
        ) from None


class _Unreadable(Exception):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def asteria_problems(
    submission: AsteriaSubmission, public: AsteriaPublic, public_input_digest: str
) -> list[Problem]:
    problems: list[Problem] = []
    if submission.benchmark_id != public.benchmark_id:
        problems.append(
            Problem(
                code="benchmark_mismatch",
                field="benchmark_id",
                message=f"submission is for {submission.benchmark_id!r}, not "
                f"{public.benchmark_id!r}",
            )
        )
    if submission.public_input_digest != public_input_digest:
        problems.append(
            Problem(
                code="public_digest_mismatch",
                field="public_input_digest",
                message="submission/public digest binding differs",
            )
        )
    seen: set[str] = set()
    previous: str | None = None
    for index, row in enumerate(submission.rows):
        action = row.action_event_id
        if action in seen:
            problems.append(
                Problem(
                    code="duplicate_action_id",
                    field=f"rows[{index}]",
                    action_id=action,
                    message="submission action ids must be unique",
                )
            )
        elif previous is not None and action < previous:
            problems.append(
                Problem(
                    code="noncanonical_order",
                    field=f"rows[{index}]",
                    action_id=action,
                    message="rows must be in canonical order (sorted by action_event_id)",
                )
            )
        seen.add(action)
        previous = action
        ids = row.retained_observation_ids
        if len(set(ids)) != len(ids):
            problems.append(
                Problem(
                    code="duplicate_observation_id",
                    action_id=action,
                    field=f"rows[{index}].retained_observation_ids",
                    message="observation ids within a row must be unique",
                )
            )
        elif list(ids) != sorted(ids):
            problems.append(
                Problem(
                    code="noncanonical_order",
                    action_id=action,
                    field=f"rows[{index}].retained_observation_ids",
                    message="observation ids within a row must be sorted",
                )
            )
    actions = [a.action_event_id for a in public.actions]
    missing = sorted(set(actions) - seen)
    for index, row in enumerate(submission.rows):
        if row.action_event_id not in actions:
            problems.append(
                Problem(
                    code="unknown_action",
                    field=f"rows[{index}].action_event_id",
                    action_id=row.action_event_id,
                    message="submission must cover each public action once; "
                    f"unknown={row.action_event_id}",
                )
            )
    problems.extend(
        Problem(
            code="missing_action",
            action_id=action,
            field="rows",
            message=f"submission must cover each public action once; missing={action}",
        )
        for action in missing
    )
    return problems


def enterprise_problems(
    submission: EnterpriseSubmission, public: EnterprisePublic, public_input_digest: str
) -> list[Problem]:
    problems: list[Problem] = []
    if submission.public_input_digest != public_input_digest:
        problems.append(
            Problem(
                code="public_digest_mismatch",
                field="public_input_digest",
                message="submission binds a different public input",
            )
        )
    actions = public.action_by_id
    seen: set[str] = set()
    for index, row in enumerate(submission.observations):
        where = f"observations[{index}]"
        if row.sequence != index:
            problems.append(
                Problem(
                    code="sequence_mismatch",
                    field=f"{where}.sequence",
                    action_id=row.action_id,
                    message=f"sequence must run 0..n-1; expected {index}",
                )
            )
        if row.observation_id in seen:
            problems.append(
                Problem(
                    code="duplicate_observation_id",
                    action_id=row.action_id,
                    field=f"{where}.observation_id",
                    message=f"observation_id {row.observation_id!r} repeats",
                )
            )
        seen.add(row.observation_id)
        if row.action_id not in actions:
            problems.append(
                Problem(
                    code="unknown_action",
                    field=f"{where}.action_id",
                    action_id=row.action_id,
                    message=f"references an unknown action {row.action_id!r}",
                )
            )
    return problems


def _located(problems: Sequence[Problem], text: str) -> tuple[Problem, ...]:
    return tuple(
        p if p.line is not None else p.model_copy(update={"line": _line_of(text, p.action_id)})
        for p in problems
    )


def check_asteria(
    text: str, public: AsteriaPublic, public_input_digest: str, *, file: str
) -> tuple[AsteriaSubmission | None, SubmissionReport]:
    """The submission (when its shape is valid) and every problem found."""
    try:
        value = _parse(text, file)
    except _Unreadable as exc:
        return None, SubmissionReport(diagnostics=(exc.problem,))
    try:
        submission = AsteriaSubmission.model_validate_json(text)
    except ValidationError as exc:
        problems = _shape_problems(exc, value, "rows", "action_event_id")
        return None, SubmissionReport(diagnostics=_located(problems, text))
    problems = asteria_problems(submission, public, public_input_digest)
    return submission, SubmissionReport(diagnostics=_located(problems, text))


NONCANONICAL = Problem(
    code="noncanonical_json",
    message="not canonical JSON: sorted keys, ',' and ':' separators, raw UTF-8, every "
    'default ("synthetic": true) written out, one final newline',
)
"""The Enterprise loader's refusal of any other bytes, before and after the model."""


def check_enterprise(
    text: str, public: EnterprisePublic, public_input_digest: str, *, file: str
) -> tuple[EnterpriseSubmission | None, SubmissionReport]:
    """As the original's loader reads ``submission.json``: canonical bytes, then the model,
    then the model's own canonical bytes (defaults written out), then the public rules."""
    try:
        value = _parse(text, file)
    except _Unreadable as exc:
        return None, SubmissionReport(diagnostics=(exc.problem,))
    try:
        canonical = canonical_file_bytes(value) == text.encode("utf-8")
    except UnicodeEncodeError:  # a byte that is not UTF-8 (read leniently) is never canonical
        canonical = False
    if not canonical:
        return None, SubmissionReport(diagnostics=(NONCANONICAL,))
    try:
        submission = EnterpriseSubmission.model_validate_json(text)
    except ValidationError as exc:
        problems = _shape_problems(exc, value, "observations", "action_id")
        return None, SubmissionReport(diagnostics=_located(problems, text))
    if record_bytes(submission) != text.encode("utf-8"):
        return None, SubmissionReport(diagnostics=(NONCANONICAL,))
    problems = enterprise_problems(submission, public, public_input_digest)
    return submission, SubmissionReport(diagnostics=_located(problems, text))


ASTERIA_SUBMISSION = "c08-asteria-submission.json"
PAIR_MANIFEST = "manifest.json"


def is_asteria_pair(path: Path) -> bool:
    """A submission file named as the original names it, with a manifest beside it."""
    return path.name == ASTERIA_SUBMISSION and (path.parent / PAIR_MANIFEST).is_file()


def read_asteria_pair(folder: Path, *, display: str) -> tuple[str, list[Problem]]:
    """The submission text of a pair folder, and the pair's own problems (if any)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        return "", [Problem(code="unreadable_predictions", message=str(exc.strerror))]
    expected = sorted([ASTERIA_SUBMISSION, PAIR_MANIFEST])
    if names != expected:
        return "", [
            Problem(
                code="inventory_mismatch",
                message=f"inventory differs: a pair is exactly {', '.join(expected)}; "
                f"found {', '.join(names) or 'nothing'}",
            )
        ]
    data = (folder / ASTERIA_SUBMISSION).read_bytes()
    try:
        manifest = parse_governed(
            (folder / PAIR_MANIFEST).read_bytes(),
            SubmissionManifest,
            file=f"{display}/{PAIR_MANIFEST}",
        )
        submission = parse_governed(data, AsteriaSubmission, file=f"{display}/{ASTERIA_SUBMISSION}")
    except AgentbenchError as exc:
        code = "invalid_submission" if exc.code in _SHAPE_CODES else exc.code
        return "", [Problem(code=code, message=exc.render())]
    descriptor = manifest.artifacts[0]
    digest = sha256_bytes(data)
    if (
        manifest.visibility != "submission"
        or manifest.benchmark_id != submission.benchmark_id
        or (descriptor.path, descriptor.byte_size, descriptor.sha256)
        != (ASTERIA_SUBMISSION, len(data), digest)
        or manifest.artifact_set_digest != path_bound_digest({ASTERIA_SUBMISSION: digest})
    ):
        return "", [
            Problem(
                code="manifest_binding_mismatch",
                message=f"{display}/{PAIR_MANIFEST}: manifest binding differs from the "
                "submission (visibility, benchmark id, descriptor or set digest)",
            )
        ]
    return data.decode("utf-8"), []


_SHAPE_CODES = frozenset({"invalid_field", "unknown_field", "missing_field"})
