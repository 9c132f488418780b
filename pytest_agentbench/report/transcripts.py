"""The transcripts of a run: one NDJSON file per suite beside the JSON report.

A case whose adapter used a tool session or the chat client has a transcript
(:mod:`pytest_agentbench.sdk.transcript`): its item sends it on with its result,
and where results arrive (the controller under xdist) each is appended to its
suite's file under ``<report>.transcripts/`` as it comes, so an interrupted run
keeps what it did. When the run ends each file is rewritten in node id order,
one case per line (the last a re-run sent), and the report names it with the
sha256 of its bytes: the same run writes the same bytes serially, under
``-n 2``, with an isolated adapter and from cassettes. A resumed run takes the
lines of the cases it carries over from the run it resumes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Set
from pathlib import Path
from typing import IO, Annotated, Final

from pydantic import Field, StrictStr

from pytest_agentbench.report.progress import PROGRESS_SUFFIX
from pytest_agentbench.report.transcript_folder import transcripts_folder
from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, sha256_hex
from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, CaseResult, Record

TRANSCRIPT_SCHEME: Final = "agentbench-transcript/1"
EARLIER_SUFFIX: Final = ".earlier"
"""An earlier run's file, set aside until this run's end (a resume may take lines from it)."""
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class TranscriptFile(Record):
    """One suite's transcripts file, as the run report names it."""

    model_config = BUILT_ON_FIRST_USE

    suite_id: StrictStr
    file: StrictStr
    """Relative to the report's folder, ``/``-separated."""
    digest_sha256: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
    cases: Annotated[int, Field(ge=0)]
    """Lines of the file: the cases with a transcript."""


def suite_file_name(suite_id: str) -> str:
    """The suite's file name: its id when that is a plain file name, else a digest of it."""
    if _PLAIN_NAME.fullmatch(suite_id) and not suite_id.endswith("."):
        return f"{suite_id}.ndjson"
    return f"suite-{sha256_hex(suite_id.encode('utf-8'))[:16]}.ndjson"


def transcript_line(nodeid: str, result: CaseResult, events: list[JsonValue]) -> str:
    """A case's line of its suite's file (canonical JSON, no newline)."""
    return canonical_json(
        {
            "scheme": TRANSCRIPT_SCHEME,
            "nodeid": nodeid,
            "suite_id": result.suite_id,
            "case_id": result.case_id,
            "trial": result.trial,
            "outcome": result.outcome.value,
            "failure_class": None if result.failure_class is None else result.failure_class.value,
            "events": events,
        }
    )


class TranscriptSink:
    """Streams the transcripts of a run into their suites' files as cases finish."""

    def __init__(self, report_path: Path) -> None:
        self.report_dir = report_path.parent
        self.folder = transcripts_folder(report_path)
        self._open: dict[str, IO[str]] = {}

    def start(self) -> None:
        """No file of an earlier run may pass for this run's: each is set aside (a resumed
        run takes the lines of the cases it carries over, :meth:`carry`), then removed.

        Called once the run holds its report path's lock: a second run refused for it
        must leave the first run's files alone."""
        if self.folder.is_dir():
            for stale in self.folder.glob("*.ndjson"):
                stale.replace(self.folder / f".{stale.name}{EARLIER_SUFFIX}")

    def carry(self, resumed_from: Path, nodeids: Set[str]) -> None:
        """Take the lines of ``nodeids`` from the transcripts of the run resumed from
        (``resumed_from``: its report, or the progress journal beside it)."""
        report = resumed_from.with_name(resumed_from.name.removesuffix(PROGRESS_SUFFIX))
        folder = transcripts_folder(report.resolve())
        if folder == self.folder.resolve():
            files = sorted(folder.glob(f".*.ndjson{EARLIER_SUFFIX}"))
        else:
            files = sorted(folder.glob("*.ndjson")) if folder.is_dir() else []
        for path in files:
            with path.open(encoding="utf-8") as lines:
                for line in lines:
                    entry = json.loads(line)
                    if entry.get("nodeid") in nodeids and isinstance(entry.get("suite_id"), str):
                        self.put(entry["suite_id"], line.rstrip("\n"))

    def put(self, suite_id: str, line: str) -> None:
        stream = self._open.get(suite_id)
        if stream is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / suite_file_name(suite_id)
            stream = self._open[suite_id] = path.open("a", encoding="utf-8")
        stream.write(line)
        stream.write("\n")
        stream.flush()

    def finish(self) -> tuple[TranscriptFile, ...]:
        """Rewrite each file in node id order, one line per case; what the report names."""
        written: list[TranscriptFile] = []
        for suite_id in sorted(self._open):
            self._open[suite_id].close()
            path = self.folder / suite_file_name(suite_id)
            by_node: dict[str, str] = {}
            with path.open(encoding="utf-8") as lines:
                for line in lines:
                    by_node[json.loads(line)["nodeid"]] = line
            data = "".join(by_node[nodeid] for nodeid in sorted(by_node)).encode("utf-8")
            temporary = path.with_name(f".{path.name}.tmp")
            temporary.write_bytes(data)
            os.replace(temporary, path)
            written.append(
                TranscriptFile(
                    suite_id=suite_id,
                    file=path.relative_to(self.report_dir).as_posix(),
                    digest_sha256=sha256_hex(data),
                    cases=len(by_node),
                )
            )
        self._open.clear()
        for earlier in self.folder.glob(f".*.ndjson{EARLIER_SUFFIX}"):
            earlier.unlink()
        return tuple(written)
