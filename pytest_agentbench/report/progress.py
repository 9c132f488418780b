"""The progress journal of a run, and what ``--agentbench-resume`` may take from a run.

A run that writes a report (``--agentbench-report PATH``) also appends every
graded case to ``PATH.progress`` as it arrives, one canonical JSON line each,
written at once (synced when the run ends): a run killed with ``kill -9`` leaves
that journal, and ``--agentbench-resume`` accepts it (or the report path it was written for), so
a killed run resumes. The journal's first line binds it to its run: the
adapter's identity and the trials per case.

Whatever it comes from, a resume is checked before anything is taken from it
(:func:`check_resume`), and any mismatch is refused by name
(``resume_mismatch``): another adapter, another ``--agentbench-repeat``, a suite
or oracle whose digest changed, a case the suite does not have, a case twice,
or a case whose recorded outcome is not what its recorded output grades to
today (a report edited from failed to passed).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from pathlib import Path

from pydantic import ValidationError

from pytest_agentbench.report.recording import (
    case_digest,
    recorded_outcome,
    resumable,
    suite_digest_pair,
)
from pytest_agentbench.run.session import AgentbenchState, LoadedSuite
from pytest_agentbench.sdk.canonical import (
    canonical_json,
    input_limits,
    loads_strict,
    read_bytes,
    unreadable,
)
from pytest_agentbench.sdk.contracts import Case, CaseResult
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import open_folder, unwritable

PROGRESS_SCHEMA = "agentbench-progress/1"
PROGRESS_SUFFIX = ".progress"


def progress_path(report_path: Path) -> Path:
    return report_path.with_name(report_path.name + PROGRESS_SUFFIX)


@dataclass
class ResumeSource:
    """An earlier run as far as resuming needs it: a run report or a progress journal."""

    path: Path
    adapter_spec: str | None
    adapter_description: str
    entries: list[tuple[str, CaseResult]]
    """(node id, case result) of every case the earlier run reported."""
    repeat: int | None = None
    """The journal's trials per case; a report's are read from its cases' trials."""
    digests: dict[str, dict[str, str | None]] = field(default_factory=dict)
    """A report's suite digests by suite id; a journal's cases carry their own."""

    def suite_entries(self) -> dict[str, list[tuple[str, CaseResult]]]:
        by_suite: dict[str, list[tuple[str, CaseResult]]] = {}
        for nodeid, result in self.entries:
            by_suite.setdefault(result.suite_id, []).append((nodeid, result))
        return by_suite


def _mismatch(source: ResumeSource, reason: str) -> AgentbenchError:
    return AgentbenchError(
        "resume_mismatch", reason, file=str(source.path), field="--agentbench-resume"
    )


def read_resume_source(path: Path, *, max_bytes: int | None = None) -> ResumeSource:
    """A run report, a progress journal, or a report path whose run was killed (its journal).

    A report over ``max_bytes`` (``agentbench_max_report_bytes``) is ``report_too_large``.
    """
    journal = progress_path(path)
    if not path.exists() and journal.is_file():
        path = journal
    if _is_journal(path):
        return _read_journal(path)
    # Imported only to resume from a report: its models cost every other run their import.
    from pytest_agentbench.report.baseline import read_run_report

    report = read_run_report(
        path, field="--agentbench-resume", max_bytes=max_bytes, option="agentbench_max_report_bytes"
    )
    return ResumeSource(
        path=path,
        adapter_spec=report.adapter.spec,
        adapter_description=report.adapter.description,
        entries=[(entry.nodeid, entry.result) for suite in report.suites for entry in suite.cases],
        digests={suite.id: dict(suite.digests) for suite in report.suites},
    )


def _is_journal(path: Path) -> bool:
    if not path.is_file():
        return False
    # At most the size limit of the first line: a journal's header is short, a report any size.
    limit = input_limits().max_bytes
    try:
        with path.open("rb") as handle:
            first = handle.readline(limit + 1).split(b"\n", 1)[0]
    except OSError as exc:
        raise unreadable(exc, str(path)) from None
    return b'"schema_version":"' + PROGRESS_SCHEMA.encode() + b'"' in first


def _read_journal(path: Path) -> ResumeSource:
    text = read_bytes(path).decode("utf-8", "replace")
    # Every line is written whole with its newline: a killed run may have torn its last
    # one, and only that one is dropped.
    rows = [line for line in text.split("\n")[:-1] if line.strip()]
    if not rows:
        raise AgentbenchError(
            "invalid_rerun",
            "an empty progress journal",
            file=str(path),
            field="--agentbench-resume",
        )
    header = loads_strict(rows[0], file=str(path), line=1)
    if not isinstance(header, dict) or header.get("schema_version") != PROGRESS_SCHEMA:
        raise AgentbenchError(
            "invalid_rerun",
            f"neither a run report nor a progress journal ({PROGRESS_SCHEMA})",
            file=str(path),
            field="--agentbench-resume",
        )
    entries = []
    for number, row in enumerate(rows[1:], start=2):
        value = loads_strict(row, file=str(path), line=number)
        try:
            entries.append((str(value["nodeid"]), CaseResult.model_validate(value["result"])))
        except (KeyError, TypeError, ValidationError):
            raise AgentbenchError(
                "invalid_rerun", "not a progress line", file=str(path), line=number
            ) from None
    return ResumeSource(
        path=path,
        adapter_spec=header.get("adapter_spec"),
        adapter_description=str(header.get("adapter_description")),
        entries=entries,
        repeat=int(header["repeat"]) if isinstance(header.get("repeat"), int) else None,
    )


class ProgressJournal:
    """Appends each graded case to the journal as it is graded, so a killed run can resume.

    The journal is written as every file of a run is (:mod:`pytest_agentbench.sdk.files`):
    its header and the lines a resumed run carries over go to a temporary file in its
    folder, renamed onto ``PATH.progress`` once fsynced, so an earlier journal is
    replaced only whole and only by a run that took what it holds (``replaces``). A
    journal already there otherwise is a killed run's, kept for ``--agentbench-resume``:
    the run is refused (``progress_journal_exists``) rather than destroy it. A line that
    cannot be written is cut off again and raised (``output_unwritable``): what is left
    reads as the journal of a run killed there.
    """

    def __init__(
        self,
        path: Path,
        *,
        adapter_spec: str | None,
        adapter_description: str,
        repeat: int,
        carried: Iterable[tuple[str, CaseResult]] = (),
        replaces: bool = False,
    ) -> None:
        self.path = path
        self.offset = 0
        self._header_bytes = -1
        try:
            self._folder = open_folder(path.parent)
        except OSError as exc:
            raise unwritable(exc, path) from None
        self._fd = -1
        try:
            if not replaces and _exists(path.name, self._folder):
                raise AgentbenchError(
                    "progress_journal_exists",
                    "a killed run's progress journal is here: resume it with "
                    f"--agentbench-resume {path}, or remove it to start afresh",
                    file=str(path),
                    field="--agentbench-report",
                )
            header = {
                "schema_version": PROGRESS_SCHEMA,
                "adapter_spec": adapter_spec,
                "adapter_description": adapter_description,
                "repeat": repeat,
            }
            lines = [canonical_json(header)]
            self._header_bytes = len(lines[0].encode("utf-8")) + 1
            # A resumed run's journal starts with what it took over: killed again, it
            # resumes whole.
            lines += [_line(nodeid, result) for nodeid, result in carried]
            data = "".join(line + "\n" for line in lines).encode("utf-8")
            temporary = f".agentbench-{secrets.token_hex(8)}.tmp"
            try:
                self._fd = os.open(temporary, _NEW_FILE, 0o644, dir_fd=self._folder)
                _write_all(self._fd, data)
                os.fsync(self._fd)
                os.rename(temporary, path.name, src_dir_fd=self._folder, dst_dir_fd=self._folder)
                os.fsync(self._folder)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=self._folder)
                raise unwritable(exc, path) from None
            self.offset = len(data)
        except BaseException:
            self._close_fds()
            raise

    def append(self, nodeid: str, result_text: str) -> None:
        """Journal ``nodeid``'s graded result, given as its canonical JSON (as the run's
        case store holds it: no second dump of the record)."""
        # _line_of_text's line, built here: this runs once a case.
        data = f'{{"nodeid":{encode_basestring(nodeid)},"result":{result_text}}}\n'.encode()
        try:
            # Written, not synced: once written the kernel holds the line, so a run killed
            # (even with kill -9) leaves it; only a machine that stops can lose the last
            # lines, whose cases a resume runs again. A sync per case cost more than the
            # case (issue 41: the every-output run's largest per-case cost).
            written = os.write(self._fd, data)
            if written < len(data):
                _write_all(self._fd, data[written:])
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self.offset)
            raise unwritable(exc, self.path, "the journal stops here: ") from None
        self.offset += len(data)

    def close(self, *, remove: bool) -> None:
        """Remove the journal (its report was written), else sync it and keep it.

        A journal holding its header alone (a run refused before any case, or one
        that took and ran nothing) has nothing to resume, and is removed too.
        """
        if self._folder >= 0:
            if remove or self.offset == self._header_bytes:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path.name, dir_fd=self._folder)
            elif self._fd >= 0:
                with contextlib.suppress(OSError):
                    os.fsync(self._fd)
        self._close_fds()

    def _close_fds(self) -> None:
        for fd in (self._fd, self._folder):
            if fd >= 0:
                os.close(fd)
        self._fd = self._folder = -1


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _line(nodeid: str, result: CaseResult) -> str:
    return _line_of_text(nodeid, canonical_json(result.model_dump(mode="json")))


def _line_of_text(nodeid: str, result_text: str) -> str:
    # canonical_json({"nodeid": ..., "result": ...}): the keys in order, the result as is.
    return f'{{"nodeid":{canonical_json(nodeid)},"result":{result_text}}}'


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _exists(name: str, folder: int) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def check_resume(
    source: ResumeSource,
    state: AgentbenchState,
    locate: Callable[[str, Sequence[str]], LoadedSuite | None],
) -> list[tuple[str, CaseResult]]:
    """Refuse a resume that does not belong to this run; return the entries it may take."""
    adapter = (state.options.adapter_spec, state.adapter_description)
    if (source.adapter_spec, source.adapter_description) != adapter:
        raise _mismatch(
            source,
            f"recorded with adapter {source.adapter_description!r}, "
            f"this run uses {state.adapter_description!r}",
        )
    repeat = state.options.repeat
    if source.repeat is not None and source.repeat != repeat:
        raise _mismatch(
            source, f"recorded under --agentbench-repeat {source.repeat}, this run has {repeat}"
        )
    taken: list[tuple[str, CaseResult]] = []
    for suite_id, entries in source.suite_entries().items():
        loaded = locate(suite_id, [nodeid for nodeid, _ in entries])
        if loaded is None:
            continue
        taken.extend(_check_suite(source, loaded, entries, state))
    return taken


def _check_suite(
    source: ResumeSource,
    loaded: LoadedSuite,
    entries: list[tuple[str, CaseResult]],
    state: AgentbenchState,
) -> list[tuple[str, CaseResult]]:
    suite = loaded.suite
    public, oracle = suite_digest_pair(suite)
    recorded = source.digests.get(suite.id)
    if recorded is not None:
        for part, now in (("public", public), ("oracle", oracle)):
            if recorded.get(part) != now:
                raise _mismatch(
                    source,
                    f"suite {suite.id!r}: its {part} digest {recorded.get(part)} is now {now}",
                )
    cases = {case.case_id: case for case in loaded.world.cases(suite)}
    repeat = state.options.repeat
    seen: set[tuple[str, int | None]] = set()
    taken = []
    for nodeid, result in entries:
        name = f"suite {suite.id!r}, case {result.case_id!r}"
        if result.case_id not in cases:
            raise _mismatch(source, f"{name} is not in the suite")
        trial = result.trial
        if (repeat == 1) != (trial is None) or (trial is not None and not 1 <= trial <= repeat):
            raise _mismatch(
                source,
                f"{name} is trial {trial} of a run with another --agentbench-repeat "
                f"(this run has {repeat})",
            )
        if (result.case_id, trial) in seen:
            raise _mismatch(source, f"{name} (trial {trial}) is reported twice")
        seen.add((result.case_id, trial))
        if not resumable(result):
            continue
        _check_result(source, loaded, cases[result.case_id], result, state)
        taken.append((nodeid, result))
    return taken


def _check_result(
    source: ResumeSource,
    loaded: LoadedSuite,
    case: Case,
    result: CaseResult,
    state: AgentbenchState,
) -> None:
    """A taken result must be what its recorded output grades to, against today's suite."""
    suite = loaded.suite
    name = f"suite {suite.id!r}, case {result.case_id!r}"
    output = result.recorded
    if output is None:
        raise _mismatch(source, f"{name}: {result.outcome} with no recorded output to check")
    if output.case_digest != case_digest(case, loaded.world.public_view(suite, case)):
        raise _mismatch(source, f"{name}: the case changed since its output was recorded")
    if (output.suite_digest, output.oracle_digest) != suite_digest_pair(suite):
        raise _mismatch(source, f"{name}: recorded under another suite or oracle digest")
    graded = state.grade(loaded, case, recorded_outcome(result))
    if (graded.outcome, graded.failure_class) != (result.outcome, result.failure_class):
        raise _mismatch(
            source,
            f"{name}: reported {result.outcome}, but its recorded output grades {graded.outcome}",
        )
