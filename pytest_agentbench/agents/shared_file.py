"""One JSON value the processes of a run share through a file, changed under an exclusive lock.

The budget tally and the rate limits' minute are such files: every xdist worker
and isolated adapter process of a run reads, changes and writes one back under
``flock``. The change is made by code a case limit interrupts with an
asynchronous exception (a SIGALRM handler on the main thread, an exception set
on a pool's thread), which can land between any two lines. Truncating the file
and then writing it lets such an exception leave it empty: the run's budget
spent and its minute's requests forgotten, so the next reader admits what the
limits exist to refuse. So the new text is encoded first, written over the old
in one ``pwrite`` and only then cut to its length; a reader takes the first
JSON value in the file, so an exception between the two leaves the new value
readable (followed by the old one's tail), and one anywhere before leaves the
old value whole.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Locked:
    """The file's value while the lock is held; ``None`` for a file not written yet."""

    value: Any


@contextlib.contextmanager
def locked_json(path: Path) -> Iterator[Locked]:
    """The file's value to read and change; written back when the block ends without error."""
    # A file object, not a bare descriptor, owns the descriptor: should an interrupt
    # skip the close, collecting the object still closes it, and so releases the lock.
    with os.fdopen(
        os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600), "r+b", buffering=0
    ) as stream:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX)
        locked = Locked(first_value(stream.readall()))
        yield locked
        encoded = json.dumps(locked.value, sort_keys=True).encode("utf-8")
        os.pwrite(stream.fileno(), encoded, 0)
        os.ftruncate(stream.fileno(), len(encoded))
    # Closing the file releases the lock.


def first_value(data: bytes) -> Any:
    """The first JSON value of a shared file (what follows it is a longer old value's tail)."""
    if not data:
        return None
    value, _ = json.JSONDecoder().raw_decode(data.decode("utf-8"))
    return value
