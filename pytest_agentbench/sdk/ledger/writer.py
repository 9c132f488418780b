"""Appending to an execution ledger: whole rows, durable, or not at all.

The file is created without following a symbolic link in any component:
every directory is opened from the root with ``O_DIRECTORY | O_NOFOLLOW``
relative to the descriptor of its parent, and the file itself is created
(``O_EXCL | O_NOFOLLOW``) against the descriptor of the directory that was
checked, so a component swapped for a link cannot redirect the evidence.
Each row is written whole (short writes looped over) and fsynced; a write or
fsync that fails truncates the file back to where the row began and poisons
the writer, so nothing, not even a terminal row, is appended past a failure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.sdk.contracts import Record
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import open_folder, write_new_file
from pytest_agentbench.sdk.ledger.rows import (
    GENESIS,
    CallPayload,
    HeaderPayload,
    TerminalPayload,
    encode_row,
    make_row,
    totals_of,
    with_reservations,
)

__all__ = ["LedgerIO", "LedgerWriter", "open_no_follow", "write_new_file"]

_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class LedgerIO:
    """The two system calls a row depends on; tests substitute failing ones."""

    write: Callable[[int, bytes], int] = os.write
    fsync: Callable[[int], None] = os.fsync


def open_no_follow(path: Path) -> int:
    """Create ``path`` (missing directories too) without following any symbolic link."""
    absolute = Path(os.path.abspath(path))
    if len(absolute.parts) < 2:
        raise AgentbenchError("ledger_unsafe_path", "a ledger needs a file name", file=str(path))
    folder = -1
    try:
        folder = open_folder(absolute.parent)
        return os.open(absolute.name, _FILE_FLAGS, 0o644, dir_fd=folder)
    except FileExistsError:
        raise AgentbenchError(
            "ledger_exists", "a ledger is never overwritten or appended to", file=str(path)
        ) from None
    except OSError as exc:
        # ELOOP / ENOTDIR: a component is a symbolic link or not a directory.
        raise AgentbenchError(
            "ledger_unsafe_path",
            f"cannot create the ledger without following links: {exc.strerror}",
            file=str(path),
        ) from None
    finally:
        if folder >= 0:
            os.close(folder)


class LedgerWriter:
    """Opened before the adapter's first call; one header, call rows, one terminal row."""

    def __init__(self, path: Path, header: HeaderPayload, io: LedgerIO | None = None) -> None:
        self.path = path
        self.header = header
        self.io = io or LedgerIO()
        self.fd = open_no_follow(path)
        self.offset = 0
        self.index = 0
        self.previous = GENESIS
        self.poisoned = False
        self.finished = False
        self.calls: list[CallPayload] = []
        try:
            self._append("header", header)
        except AgentbenchError:
            self.close()
            raise

    def call(self, payload: CallPayload) -> None:
        payload = with_reservations(self.header, payload)
        self._append("call", payload)
        self.calls.append(payload)

    def finish(self, kind: str, exclusion_code: str | None = None) -> str:
        """The terminal row, totals derived from the rows written; its digest is the ledger's."""
        if kind == "scored" and any(call.decision is None for call in self.calls):
            raise AgentbenchError(
                "ledger_terminal_unsupported",
                "a scored terminal over a call that produced no decision",
                file=str(self.path),
            )
        terminal = TerminalPayload.model_validate(
            {
                "kind": kind,
                "exclusion_code": exclusion_code,
                "totals": totals_of(self.calls, self.header),
            }
        )
        digest = self._append("terminal", terminal)
        self.finished = True
        self.close()
        return digest

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _append(self, kind: str, payload: Record) -> str:
        if self.poisoned:
            raise AgentbenchError(
                "ledger_poisoned", "an earlier row failed to write", file=str(self.path)
            )
        if self.finished or self.fd < 0:
            raise AgentbenchError(
                "ledger_closed", "the ledger has its terminal row", file=str(self.path)
            )
        row = make_row(self.index, kind, self.previous, payload)
        data = encode_row(row)
        try:
            written = 0
            while written < len(data):
                written += self.io.write(self.fd, data[written:])
            self.io.fsync(self.fd)
        except OSError as exc:
            self.poisoned = True
            # The verified prefix is all that survives; it reads as incomplete.
            try:
                os.ftruncate(self.fd, self.offset)
                os.lseek(self.fd, self.offset, os.SEEK_SET)
            except OSError:
                pass  # poisoned either way; the reader refuses a partial last row

            raise AgentbenchError(
                "ledger_write_failed",
                f"row {self.index} ({kind}) not durable: {exc.strerror or exc}",
                file=str(self.path),
            ) from None
        self.offset += len(data)
        self.index += 1
        self.previous = str(row["row_digest_sha256"])
        return self.previous
