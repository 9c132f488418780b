"""The one way a run writes its files: whole or not at all, never through a link.

Every file the plugin writes (the JSON report and its progress journal, the HTML
page, ``--agentbench-record`` and ``--agentbench-receipts`` files, episode
artefacts) is written here:

- each folder on the way is opened from the root with ``O_DIRECTORY |
  O_NOFOLLOW`` relative to its parent's descriptor (missing ones created), so a
  folder swapped for a symbolic link during the run cannot redirect a write;
- the bytes go to a temporary file created (``O_EXCL | O_NOFOLLOW``) in the
  destination's own folder, are fsynced, and the temporary file is renamed onto
  the destination (a link there is replaced, never followed); a failure midway
  removes the temporary file and leaves whatever was there before;
- a file name derived from an id (a case id, a suite id) is percent-encoded and
  bounded (:func:`id_file_name`): an absolute or ``../`` id cannot leave its
  folder and one of any length fits a file name.

Any ``OSError`` becomes the :class:`AgentbenchError` ``output_unwritable``
naming the file and the errno (ENOSPC, EACCES, EISDIR, ENAMETOOLONG...). What
can be known before a run (a report path that is a folder, a folder that cannot
be created or written) is checked by :func:`check_output_file` and
:func:`check_output_folder`, and a report path is held by one run at a time
(:class:`OutputLock`, ``output_in_use``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TextIO
from urllib.parse import quote

from pytest_agentbench.sdk.errors import AgentbenchError

UNWRITABLE = "output_unwritable"
IN_USE = "output_in_use"
MAX_NAME_BYTES = 255
"""The longest file name (in bytes) the usual filesystems accept."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIGEST_CHARS = 16


def id_file_name(identifier: str, suffix: str = "") -> str:
    """A file name for ``identifier``: percent-encoded, at most 255 bytes with ``suffix``.

    Every byte but ASCII letters, digits and ``_.-~`` is encoded (``/`` included), and
    so is a leading dot, so the name is never ``.``, ``..`` or hidden. A name too long
    keeps its start and ends in ``~`` and 16 hex digits of the id's SHA-256: two ids
    never share a name unless they share that start and that digest.
    """
    encoded = quote(identifier.encode("utf-8", "surrogatepass"), safe="")
    if encoded.startswith("."):
        encoded = "%2E" + encoded[1:]
    if len(encoded) + len(suffix) <= MAX_NAME_BYTES:
        return encoded + suffix
    digest = hashlib.sha256(identifier.encode("utf-8", "surrogatepass")).hexdigest()
    keep = MAX_NAME_BYTES - len(suffix) - 1 - _DIGEST_CHARS
    start = encoded[:keep]
    # Never cut an escape in half: "%4" would read as another character.
    cut = start.rfind("%", max(0, len(start) - 2))
    if cut != -1:
        start = start[:cut]
    return f"{start}~{digest[:_DIGEST_CHARS]}{suffix}"


def unwritable(exc: OSError, path: str | Path, doing: str = "") -> AgentbenchError:
    """The refusal of an ``OSError`` met writing ``path``: its reason and errno by name."""
    name = errno.errorcode.get(exc.errno or 0, "")
    reason = exc.strerror or str(exc) or type(exc).__name__
    shown = f"{reason} ({name})" if name else reason
    return AgentbenchError(UNWRITABLE, f"{doing}{shown}", file=str(path))


def open_folder(folder: Path) -> int:
    """A descriptor of ``folder`` (created with its missing parents), no link followed.

    Raises ``OSError``: ELOOP or ENOTDIR where a component is a link or not a folder.
    """
    parts = Path(os.path.abspath(folder)).parts
    fd = os.open(parts[0], _DIR_FLAGS)
    try:
        for part in parts[1:]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                # Another process (an xdist worker) may create the same folder meanwhile.
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _name_of(path: Path) -> str:
    name = path.name
    if not name or name in (".", ".."):
        raise OSError(errno.EISDIR, "a file path must end in a file name", str(path))
    if len(os.fsencode(name)) > MAX_NAME_BYTES:
        raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), str(path))
    return name


def _temporary(folder_fd: int) -> tuple[str, int]:
    name = f".agentbench-{secrets.token_hex(8)}.tmp"
    return name, os.open(name, _NEW_FILE_FLAGS, 0o644, dir_fd=folder_fd)


@contextlib.contextmanager
def writing(path: Path, *, replace: bool = True, code: str = UNWRITABLE) -> Iterator[BinaryIO]:
    """A binary stream whose bytes become the file ``path`` whole once the block ends.

    ``replace=False`` refuses a file already at ``path`` (``EEXIST``): it is never
    overwritten. Any ``OSError`` is the :class:`AgentbenchError` ``code``; an exception
    from the block leaves nothing behind (and whatever ``path`` held before).
    """
    try:
        name = _name_of(path)
        folder_fd = open_folder(path.parent)
    except OSError as exc:
        raise _renamed(unwritable(exc, path), code) from None
    temporary = None
    try:
        temporary, fd = _temporary(folder_fd)
        with os.fdopen(fd, "wb") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        if replace:
            os.rename(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        else:
            # link() never replaces: an existing file stays as it was (EEXIST).
            os.link(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            os.unlink(temporary, dir_fd=folder_fd)
        temporary = None
        os.fsync(folder_fd)
    except OSError as exc:
        raise _renamed(unwritable(exc, path), code) from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder_fd)
        os.close(folder_fd)


@contextlib.contextmanager
def writing_text(path: Path, *, code: str = UNWRITABLE) -> Iterator[TextIO]:
    """:func:`writing` as UTF-8 text."""
    with writing(path, code=code) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        yield text
        text.flush()
        text.detach()


def write_file(path: Path, data: bytes | str, *, code: str = UNWRITABLE) -> None:
    """``data`` (text as UTF-8) as the whole of the file ``path``, replacing what was there."""
    with writing(path, code=code) as stream:
        stream.write(data.encode("utf-8") if isinstance(data, str) else data)


def write_new_file(path: Path, data: bytes, code: str) -> None:
    """``data`` as a new file at ``path``: never an existing file overwritten."""
    with writing(path, replace=False, code=code) as stream:
        stream.write(data)


def _renamed(error: AgentbenchError, code: str) -> AgentbenchError:
    if code == error.code:
        return error
    return AgentbenchError(code, error.reason, file=error.location.file)


def _probe(folder: Path) -> None:
    """Create and remove an empty file in ``folder`` (created if missing): can it be written,
    and has its filesystem a block left for what will be?"""
    fd = open_folder(folder)
    try:
        name, probe = _temporary(fd)
        os.close(probe)
        os.unlink(name, dir_fd=fd)
        if os.statvfs(fd).f_bavail == 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder))
    finally:
        os.close(fd)


def check_output_file(path: Path, field: str) -> None:
    """Refuse, before a run, a file path it could not write (``output_unwritable``)."""
    try:
        _name_of(path)
        if path.is_dir():
            raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        _probe(path.parent)
    except OSError as exc:
        raise AgentbenchError(
            UNWRITABLE, unwritable(exc, path).reason, file=str(path), field=field
        ) from None


def check_output_folder(path: Path, field: str) -> None:
    """Refuse, before a run, a folder it could not write in (``output_unwritable``)."""
    try:
        _probe(path)
    except OSError as exc:
        raise AgentbenchError(
            UNWRITABLE, unwritable(exc, path).reason, file=str(path), field=field
        ) from None


class OutputLock:
    """``PATH.lock`` held (``flock``) while a run writes ``PATH``: a second run is refused.

    The kernel lets go of the lock when its process ends, however it ends: a run
    killed with ``kill -9`` holds nothing.
    """

    def __init__(self, path: Path, field: str) -> None:
        self.path = path.with_name(path.name + ".lock")
        while True:
            try:
                folder_fd = open_folder(self.path.parent)
                try:
                    fd = os.open(
                        self.path.name,
                        os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                        0o644,
                        dir_fd=folder_fd,
                    )
                finally:
                    os.close(folder_fd)
            except OSError as exc:
                raise AgentbenchError(
                    UNWRITABLE, unwritable(exc, self.path).reason, file=str(path), field=field
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.read(fd, 32).decode("ascii", "replace").strip() or "another process"
                os.close(fd)
                raise AgentbenchError(
                    IN_USE,
                    f"another run (process {holder}) is writing this report; "
                    "give this run a report path of its own",
                    file=str(path),
                    field=field,
                ) from None
            # The holder before us may have removed the file as we opened it: a lock on
            # a file no longer at the path keeps no one out, so take the new one.
            try:
                same = os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        self.fd = fd

    def release(self) -> None:
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self.fd)
        self.fd = -1
