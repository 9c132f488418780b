"""A small typed binding of Linux Landlock's three system calls (``ctypes``, standard library only).

Landlock lets an unprivileged process restrict itself and its future children:
which file hierarchies it may read, write or execute (ABI 1+, with ``REFER``
from 2, ``TRUNCATE`` from 3, ``IOCTL_DEV`` from 5), which TCP ports it may
bind or connect to (ABI 4+), and, from ABI 6, that it may neither signal
processes outside its domain nor connect to their abstract UNIX sockets. A
restricted process can never ptrace or read the memory of a process outside
its domain, whatever its capabilities (ABI 1+).

The system-call numbers are the same on x86_64 and aarch64 (the generic
table); the binding refuses other machines rather than guess.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
import sys
from collections.abc import Iterable
from typing import Any, Final

SYSCALLS: Final[dict[str, tuple[int, int, int]]] = {
    "x86_64": (444, 445, 446),
    "aarch64": (444, 445, 446),
}
"""Machine -> (landlock_create_ruleset, landlock_add_rule, landlock_restrict_self)."""

CREATE_RULESET_VERSION: Final = 1 << 0
RULE_PATH_BENEATH: Final = 1
RULE_NET_PORT: Final = 2

ACCESS_FS_EXECUTE: Final = 1 << 0
ACCESS_FS_WRITE_FILE: Final = 1 << 1
ACCESS_FS_READ_FILE: Final = 1 << 2
ACCESS_FS_READ_DIR: Final = 1 << 3
ACCESS_FS_REMOVE_DIR: Final = 1 << 4
ACCESS_FS_REMOVE_FILE: Final = 1 << 5
ACCESS_FS_MAKE_CHAR: Final = 1 << 6
ACCESS_FS_MAKE_DIR: Final = 1 << 7
ACCESS_FS_MAKE_REG: Final = 1 << 8
ACCESS_FS_MAKE_SOCK: Final = 1 << 9
ACCESS_FS_MAKE_FIFO: Final = 1 << 10
ACCESS_FS_MAKE_BLOCK: Final = 1 << 11
ACCESS_FS_MAKE_SYM: Final = 1 << 12
ACCESS_FS_REFER: Final = 1 << 13
ACCESS_FS_TRUNCATE: Final = 1 << 14
ACCESS_FS_IOCTL_DEV: Final = 1 << 15

ACCESS_NET_BIND_TCP: Final = 1 << 0
ACCESS_NET_CONNECT_TCP: Final = 1 << 1

SCOPE_ABSTRACT_UNIX_SOCKET: Final = 1 << 0
SCOPE_SIGNAL: Final = 1 << 1

FS_FILE_ACCESS: Final = (
    ACCESS_FS_EXECUTE
    | ACCESS_FS_WRITE_FILE
    | ACCESS_FS_READ_FILE
    | ACCESS_FS_TRUNCATE
    | ACCESS_FS_IOCTL_DEV
)
"""The rights a rule on a file (not a folder) may carry; the kernel refuses others there."""


def fs_access(abi: int) -> int:
    """Every filesystem right Landlock ABI ``abi`` knows (0 below ABI 1)."""
    if abi < 1:
        return 0
    rights = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= ACCESS_FS_REFER
    if abi >= 3:
        rights |= ACCESS_FS_TRUNCATE
    if abi >= 5:
        rights |= ACCESS_FS_IOCTL_DEV
    return rights


def net_access(abi: int) -> int:
    """Every network right ABI ``abi`` knows: TCP bind and connect from ABI 4."""
    return ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP if abi >= 4 else 0


def scopes(abi: int) -> int:
    """Every scope ABI ``abi`` knows: signals and abstract UNIX sockets from ABI 6."""
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the kernel's header: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class LandlockFailure(OSError):
    """A Landlock system call failed; ``step`` names it."""

    def __init__(self, step: str, code: int, detail: str = "") -> None:
        name = errno.errorcode.get(code, str(code))
        super().__init__(code, f"{step}: {name}{f' ({detail})' if detail else ''}")
        self.step = step


@functools.cache
def _syscall_function() -> Any:
    function = ctypes.CDLL(None, use_errno=True).syscall
    function.restype = ctypes.c_long
    return function


def _numbers() -> tuple[int, int, int] | None:
    if not sys.platform.startswith("linux"):
        return None
    return SYSCALLS.get(os.uname().machine)


def _syscall(number: int, *args: object) -> int:
    result = int(_syscall_function()(ctypes.c_long(number), *args))
    if result < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return result


def abi_version() -> tuple[int, str | None]:
    """The kernel's Landlock ABI and, when it is 0, why there is none."""
    numbers = _numbers()
    if numbers is None:
        machine = os.uname().machine if hasattr(os, "uname") else ""
        return 0, f"no Landlock binding for {sys.platform} {machine}".rstrip()
    try:
        version = _syscall(
            numbers[0],
            ctypes.c_void_p(None),
            ctypes.c_size_t(0),
            ctypes.c_uint32(CREATE_RULESET_VERSION),
        )
    except OSError as exc:
        if exc.errno == errno.ENOSYS:
            return 0, "the kernel has no Landlock (landlock_create_ruleset: ENOSYS)"
        if exc.errno == errno.EOPNOTSUPP:
            return 0, "Landlock is built in but disabled at boot (EOPNOTSUPP)"
        return 0, f"landlock_create_ruleset: {errno.errorcode.get(exc.errno or 0, exc.errno)}"
    return version, None


class Ruleset:
    """A Landlock ruleset being built; :meth:`restrict_self` enforces it on this thread."""

    def __init__(self, handled_fs: int, handled_net: int = 0, scoped: int = 0) -> None:
        numbers = _numbers()
        if numbers is None:
            raise LandlockFailure("landlock_create_ruleset", errno.ENOSYS, "unsupported machine")
        self._create, self._add, self._restrict = numbers
        self.handled_fs = handled_fs
        self.handled_net = handled_net
        attr = RulesetAttr(handled_fs, handled_net, scoped)
        try:
            self.fd = _syscall(
                self._create,
                ctypes.byref(attr),
                ctypes.c_size_t(ctypes.sizeof(attr)),
                ctypes.c_uint32(0),
            )
        except OSError as exc:
            raise LandlockFailure("landlock_create_ruleset", exc.errno or 0) from None
        self.rules = 0

    def allow_path(self, path: str, access: int) -> None:
        """Allow ``access`` beneath ``path`` (a file takes only :data:`FS_FILE_ACCESS`)."""
        try:
            parent = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError as exc:
            raise LandlockFailure("open", exc.errno or 0, path) from None
        try:
            if not stat.S_ISDIR(os.fstat(parent).st_mode):
                access &= FS_FILE_ACCESS
            attr = PathBeneathAttr(access & self.handled_fs, parent)
            self._add_rule(RULE_PATH_BENEATH, ctypes.byref(attr), path)
        finally:
            os.close(parent)

    def allow_connect(self, ports: Iterable[int]) -> None:
        """Allow TCP connections to each of ``ports`` (any address: Landlock rules name ports)."""
        for port in ports:
            attr = NetPortAttr(ACCESS_NET_CONNECT_TCP, port)
            self._add_rule(RULE_NET_PORT, ctypes.byref(attr), f"port {port}")

    def allow_bind(self, ports: Iterable[int]) -> None:
        """Allow binding a TCP socket to each of ``ports`` (the MCP server's loopback port)."""
        for port in ports:
            attr = NetPortAttr(ACCESS_NET_BIND_TCP, port)
            self._add_rule(RULE_NET_PORT, ctypes.byref(attr), f"bind port {port}")

    def _add_rule(self, kind: int, attr: object, what: str) -> None:
        try:
            _syscall(self._add, ctypes.c_int(self.fd), ctypes.c_int(kind), attr, ctypes.c_uint32(0))
        except OSError as exc:
            raise LandlockFailure("landlock_add_rule", exc.errno or 0, what) from None
        self.rules += 1

    def restrict_self(self) -> None:
        """Enforce the ruleset on the calling thread and its future children; needs no_new_privs."""
        try:
            _syscall(self._restrict, ctypes.c_int(self.fd), ctypes.c_uint32(0))
        except OSError as exc:
            raise LandlockFailure("landlock_restrict_self", exc.errno or 0) from None
        finally:
            self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
