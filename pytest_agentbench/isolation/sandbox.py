"""The kernel sandbox an isolated adapter process puts itself in (standard library only).

The harness decides what the process may touch (:class:`SandboxPlan`, built by
:mod:`.sandbox_plan`) and hands it over in the first message; the process
applies it to itself (:func:`apply`) before it imports or builds any adapter,
and only then starts its own threads (Landlock restricts the calling thread
and what it starts later). What it applies, in order:

- ``PR_SET_NO_NEW_PRIVS``: nothing it executes gains privileges;
- resource limits: address space, file size, open files, no core dumps, and
  processes (``RLIMIT_NPROC`` counts per user and does not bind root: the
  harness also counts the process tree while a call runs);
- every capability dropped (a root harness's child keeps uid 0 but cannot
  raise its limits back or bypass file permissions);
- a Landlock ruleset: read and execute only beneath the plan's read paths,
  everything only beneath its private temp folder, TCP connect only to the
  plan's ports (ABI 4+), no signals or abstract sockets outside its domain
  (ABI 6+); ptrace and ``/proc/<pid>/mem`` of any process outside its domain
  are refused by Landlock itself, for root too.

Which of these promises the kernel can keep is :func:`promises`' answer; the
run's trust block reports it.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from pytest_agentbench.isolation import landlock

MODES: Final = ("auto", "strict", "off")

PROMISES: Final = (
    "filesystem",
    "network",
    "ptrace",
    "signals",
    "abstract_sockets",
    "no_new_privs",
    "limits",
    "environment",
)
"""Every promise of the sandbox, in the order the trust block lists them."""

READ_ACCESS: Final = (
    landlock.ACCESS_FS_READ_FILE | landlock.ACCESS_FS_READ_DIR | landlock.ACCESS_FS_EXECUTE
)
DEVICE_ACCESS: Final = (
    landlock.ACCESS_FS_READ_FILE | landlock.ACCESS_FS_WRITE_FILE | landlock.ACCESS_FS_TRUNCATE
)

PR_SET_NO_NEW_PRIVS: Final = 38
PR_CAPBSET_DROP: Final = 24
CAP_LAST_CAP_FILE: Final = "/proc/sys/kernel/cap_last_cap"
LINUX_CAPABILITY_VERSION_3: Final = 0x20080522


MCP_PORT_ENV: Final = "AGENTBENCH_MCP_PORT"
"""Set in a sandboxed process whose plan grants a port to listen on (read by the agent command)."""


@dataclass(frozen=True)
class Limits:
    """The resource limits of a sandboxed adapter process."""

    memory_bytes: int
    """``RLIMIT_AS``: address space."""
    file_bytes: int
    """``RLIMIT_FSIZE``: largest file it may write."""
    open_files: int
    """``RLIMIT_NOFILE``."""
    processes: int
    """Processes and threads of its tree (the harness's watchdog; ``RLIMIT_NPROC`` as well)."""


@dataclass(frozen=True)
class SandboxPlan:
    """What one adapter process may touch; made by the harness, applied by the process."""

    abi: int
    """The Landlock ABI to use (0: none; the plan then applies what needs no Landlock)."""
    read: tuple[str, ...]
    """Read and execute beneath each."""
    listed: tuple[str, ...]
    """List beneath each (folders split around a denied one: names, never contents)."""
    write: tuple[str, ...]
    """Every filesystem right beneath each: the private temp folder."""
    devices: tuple[str, ...]
    """Device files it may read and write (``/dev/null``)."""
    connect_ports: tuple[int, ...]
    """TCP ports it may connect to: the live model endpoint's, or none."""
    limits: Limits
    bind_ports: tuple[int, ...] = ()
    """TCP ports it may listen on (and connect to): an agent command's MCP server's, or none."""

    def as_message(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> SandboxPlan:
        return cls(
            abi=int(message["abi"]),
            read=tuple(message["read"]),
            listed=tuple(message["listed"]),
            write=tuple(message["write"]),
            devices=tuple(message["devices"]),
            connect_ports=tuple(int(port) for port in message["connect_ports"]),
            limits=Limits(**message["limits"]),
            bind_ports=tuple(int(port) for port in message.get("bind_ports", ())),
        )


def promises(abi: int, missing: str | None) -> dict[str, str | None]:
    """Each promise and why it cannot be kept here (None: it holds) for Landlock ABI ``abi``.

    ``missing`` says why there is no Landlock at all when ``abi`` is 0.
    """
    linux = sys.platform.startswith("linux")
    no_landlock = f"Landlock is unavailable: {missing or 'ABI 0'}"
    not_linux = f"not available on {sys.platform}"
    return {
        "filesystem": None if abi >= 1 else no_landlock,
        "network": None
        if abi >= 4
        else (f"Landlock ABI {abi} has no TCP rules" if abi else no_landlock),
        "ptrace": None if abi >= 1 else no_landlock,
        "signals": None
        if abi >= 6
        else (f"Landlock ABI {abi} has no signal scoping" if abi else no_landlock),
        "abstract_sockets": None
        if abi >= 6
        else (f"Landlock ABI {abi} has no abstract UNIX socket scoping" if abi else no_landlock),
        "no_new_privs": None if linux else not_linux,
        "limits": None if linux else not_linux,
        "environment": None if linux else not_linux,
    }


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if int(libc.prctl(option, value, 0, 0, 0)) < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl({option}): {os.strerror(code)}")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> None:
    """Empty this process's capability sets and bounding set (a no-op for a process with none)."""
    libc = ctypes.CDLL(None, use_errno=True)
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if int(libc.capget(ctypes.byref(header), data)) < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"capget: {os.strerror(code)}")
    if not any(item.effective or item.permitted for item in data):
        return
    try:
        with open(CAP_LAST_CAP_FILE, encoding="ascii") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 63
    for capability in range(last + 1):
        # Needs CAP_SETPCAP, which a process holding any capability here (root) has.
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    empty = (_CapData * 2)()
    if int(libc.capset(ctypes.byref(header), empty)) < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"capset: {os.strerror(code)}")


def _lower(limit: int, value: int) -> None:
    import resource  # POSIX only: imported where the sandbox is applied, on Linux

    _, hard = resource.getrlimit(limit)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(limit, (value, value))


def _user_tasks() -> int:
    """How many tasks (threads) this process's user runs now: ``RLIMIT_NPROC`` counts them all."""
    uid, count = os.getuid(), 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                continue
    return count


def apply_limits(limits: Limits) -> None:
    """Set the resource limits (soft and hard) of this process and its future children."""
    import resource

    _lower(resource.RLIMIT_AS, limits.memory_bytes)
    _lower(resource.RLIMIT_FSIZE, limits.file_bytes)
    _lower(resource.RLIMIT_NOFILE, limits.open_files)
    _lower(resource.RLIMIT_CORE, 0)
    if os.getuid() != 0:
        # Per user: what the user already runs counts too, and other processes of the
        # user may start meanwhile (hence twice the budget). Root is never bound by it:
        # the harness's count of the tree is the bound that always holds.
        _lower(resource.RLIMIT_NPROC, _user_tasks() + 2 * limits.processes)


def apply(plan: SandboxPlan) -> int:
    """Put this process in the sandbox ``plan`` describes; return the Landlock rules added.

    Raises OSError (a :class:`~.landlock.LandlockFailure` for Landlock's steps)
    when a step fails: the process must not go on unsandboxed.
    """
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    apply_limits(plan.limits)
    drop_capabilities()
    if plan.abi < 1:
        return 0
    ruleset = landlock.Ruleset(
        landlock.fs_access(plan.abi), landlock.net_access(plan.abi), landlock.scopes(plan.abi)
    )
    try:
        for path in plan.read:
            _allow(ruleset, path, READ_ACCESS)
        for path in plan.listed:
            _allow(ruleset, path, landlock.ACCESS_FS_READ_DIR)
        for path in plan.devices:
            _allow(ruleset, path, DEVICE_ACCESS)
        for path in plan.write:
            _allow(ruleset, path, landlock.fs_access(plan.abi))
        if plan.abi >= 4:
            ruleset.allow_connect((*plan.connect_ports, *plan.bind_ports))
            ruleset.allow_bind(plan.bind_ports)
    except BaseException:
        ruleset.close()
        raise
    rules = ruleset.rules
    ruleset.restrict_self()
    return rules


def _allow(ruleset: landlock.Ruleset, path: str, access: int) -> None:
    try:
        ruleset.allow_path(path, access)
    except landlock.LandlockFailure as exc:
        # A path gone since the harness listed it grants nothing: skip it.
        if exc.step != "open" or exc.errno not in {2, 20}:
            raise
