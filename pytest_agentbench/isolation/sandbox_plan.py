"""The harness's side of the sandbox: the mode, what the kernel offers, and each process's plan.

Landlock grants access beneath folders; it cannot carve an exception out of a
grant. So the read set is chosen so that no folder the adapter must not see
lies beneath any grant: a root that holds one (site-packages holding a
world's ``_data/oracles``, a source checkout on ``sys.path`` holding
``oracles/``) is granted entry by entry, descending only along the way to what
is denied (:func:`carve`).

Denied, always: the oracle and sealed folders of every suite every registered
world ships (as each suite names them, and by the conventions ``oracles/``,
``sealed/`` and ``_data/oracles`` beside the suites, in every copy of the
world's package on ``sys.path``), the ini's ``agentbench_oracle_roots``, and
the run's outputs (report, HTML, ledger, receipts, artefacts, judge cache).
The project itself is no read root: only the modules and packages of it that
the child imports (its ``sys.path`` links, see :func:`~.host.child_path`),
folders of ``sys.path`` inside it (a virtual environment, a ``src`` folder)
and the paths the user allows are read.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from pytest_agentbench.isolation import landlock
from pytest_agentbench.isolation.sandbox import Limits, SandboxPlan, promises
from pytest_agentbench.sdk.errors import UsageError

SANDBOX_ENV = "AGENTBENCH_SANDBOX"
"""The environment variable naming the mode (between the command line and the ini key)."""

SYSTEM_READ = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/proc")
"""System folders every process reads: shared libraries, the shell, certificates, ``/proc/self``.

``/proc`` of any other process stays closed by Landlock's ptrace rule (its
``mem``, ``environ``, ``fd``, ``cwd`` and ``root``)."""

SYSTEM_FILES = ("/dev/urandom", "/dev/random", "/dev/zero", "/sys/devices/system/cpu")
DEVICES = ("/dev/null",)

DEFAULT_MEMORY_MB = 4096
DEFAULT_FILE_MB = 1024
DEFAULT_OPEN_FILES = 1024
DEFAULT_PROCESSES = 128

WORKDIR_PREFIX = "agentbench-isolated-"
"""Private temp folders: ``agentbench-isolated-<pid>-<start time>-<random>``."""

_ORACLE_KEY = re.compile(
    r"^[ \t]*(?:oracle|sealed)\s*:\s*['\"]?([^'\"#\n]+?)['\"]?\s*(?:#.*)?$", re.M
)


def parse_mode(value: object, source: str) -> str:
    text = str(value).strip().lower()
    if text not in ("auto", "strict", "off"):
        raise UsageError(
            "invalid_sandbox_mode", f"{value!r} is not one of auto, strict, off", field=source
        )
    return text


def configured_mode(option: str | None, ini: str, environ: Mapping[str, str]) -> str:
    """The sandbox mode: ``--agentbench-sandbox``, else ``AGENTBENCH_SANDBOX``, else the ini."""
    if option is not None:
        return parse_mode(option, "--agentbench-sandbox")
    if environ.get(SANDBOX_ENV):
        return parse_mode(environ[SANDBOX_ENV], SANDBOX_ENV)
    return parse_mode(ini or "auto", "agentbench_sandbox")


@dataclass(frozen=True)
class KernelOffer:
    """What this kernel offers the sandbox: the Landlock ABI and each promise's standing."""

    abi: int
    missing: str | None
    standing: dict[str, str | None] = field(default_factory=dict)
    """Promise -> why it cannot be kept (None: it holds)."""

    @classmethod
    def probe(cls) -> KernelOffer:
        abi, missing = landlock.abi_version()
        return cls(abi, missing, promises(abi, missing))

    def unkept(self) -> list[str]:
        return [f"{name}: {why}" for name, why in self.standing.items() if why is not None]


def refuse_unkept(offer: KernelOffer) -> None:
    """``strict``: refuse the run, naming every promise this kernel cannot keep."""
    unkept = offer.unkept()
    if unkept:
        raise UsageError("sandbox_unavailable", "; ".join(unkept), field="--agentbench-sandbox")


def _ancestors(path: str) -> Iterator[str]:
    """``path`` and every folder above it (absolute, normalised paths)."""
    while True:
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def carve(
    roots: Iterable[Path],
    denied: Sequence[Path],
    listed: list[Path] | None = None,
    *,
    around: Sequence[Path] = (),
) -> list[Path]:
    """Paths to grant so that everything beneath ``roots`` is reachable except ``denied``.

    A root holding a denied folder is replaced by its entries, recursively,
    along the way to it; a root beneath a denied folder is dropped. A root
    holding one of the folders ``around`` (the project) is split around it the
    same way, but a root beneath one is kept: a virtual environment or a
    ``src`` folder on ``sys.path`` inside the project is code the adapter
    imports. Symbolic links are resolved first (Landlock grants the target).
    Each root so split is added to ``listed``: it must stay listable (Python
    finds modules and distributions by listing ``sys.path`` folders), which
    Landlock can grant only with every folder beneath it, so the names in a
    denied folder there can be listed, never read.
    """
    blocked = {os.path.realpath(path) for path in denied}
    skipped = {os.path.realpath(path) for path in around} - blocked
    # Every folder above a denied one must be split rather than granted whole.
    split = {above for path in blocked | skipped for above in _ancestors(path)}
    split -= blocked | skipped
    granted: list[str] = []
    seen: set[str] = set()

    def visit(path: str, *, root: bool = False) -> None:
        path = os.path.realpath(path)
        if path in seen or path in skipped or any(above in blocked for above in _ancestors(path)):
            return
        if not root and any(above in skipped for above in _ancestors(path)):
            # Reached by splitting a root (a link into the project): not the project's code.
            return
        seen.add(path)
        if path not in split:
            if os.path.lexists(path):
                granted.append(path)
            return
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return
        for name in names:
            visit(os.path.join(path, name))

    for root in roots:
        resolved = os.path.realpath(root)
        if listed is not None and resolved in split and resolved not in seen:
            listed.append(Path(resolved))
        visit(resolved, root=True)
    # A grant beneath another is redundant.
    kept: set[str] = set()
    for path in sorted(granted, key=len):
        if not any(above in kept for above in _ancestors(path)):
            kept.add(path)
    return [Path(path) for path in sorted(kept)]


def _declared_oracle_folders(suite: Path) -> list[Path]:
    """The oracle and sealed folders a ``suite.yaml`` names at its top level, and the default."""
    found = [suite.parent.parent / "oracles" / suite.name]
    try:
        text = (suite / "suite.yaml").read_text(encoding="utf-8")
    except OSError:
        return found
    found += [suite / match.strip() for match in _ORACLE_KEY.findall(text)]
    return found


def world_oracle_folders(
    suite_roots: Iterable[Path], suites: Iterable[Path], packages: Iterable[str]
) -> list[Path]:
    """Every oracle and sealed folder of the registered worlds' shipped suites, in every copy.

    ``suite_roots`` are the folders the worlds ship suites in, ``suites`` each
    suite folder, ``packages`` the top-level packages the worlds live in: the
    same relative folders are denied in every copy of those packages found on
    ``sys.path`` (an editable checkout and a leftover wheel, say).
    """
    names = set(packages)
    folders: list[Path] = []
    for root in suite_roots:
        for convention in ("oracles", "sealed"):
            folders.append(root.parent / convention)
    for suite in suites:
        folders += _declared_oracle_folders(suite)
    entries: list[Path] = []
    for text in sys.path:
        try:
            entries.append(Path(text or os.getcwd()).resolve())
        except OSError:
            continue
    holders = [entry for entry in entries if any((entry / name).is_dir() for name in names)]
    copies: list[Path] = []
    for folder in folders:
        for holder in holders:
            if folder.resolve().is_relative_to(holder):
                relative = folder.resolve().relative_to(holder)
                copies += [other / relative for other in holders]
    for entry in entries:
        for name in names:
            # A wheel's package data, whatever the registered copy's layout.
            copies += [entry / name / "_data" / "oracles", entry / name / "_data" / "sealed"]
    return sorted({path.resolve() for path in [*folders, *copies] if path.exists()})


def _interpreter_roots() -> list[Path]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.add(str(Path(os.path.realpath(sys.executable)).parent))
    return [Path(root) for root in sorted(roots)]


@dataclass
class SandboxSetup:
    """One run's sandbox, shared by every adapter process the run starts."""

    mode: str
    offer: KernelOffer
    denied: tuple[Path, ...]
    """Folders no grant may reach."""
    project: Path
    """The project: a read root holding it is split around it; only what the child imports
    from it (its ``sys.path`` links, folders of ``sys.path`` inside it) is granted."""
    allowed: tuple[Path, ...] = ()
    """Paths the user allows (``--agentbench-sandbox-allow``), read only."""
    read_write: tuple[Path, ...] = ()
    """Folders the adapter's own plugin machinery writes (the shared budget tally, cassettes
    being recorded)."""
    read_only: tuple[Path, ...] = ()
    """Folders it reads though they are not code (cassettes being replayed)."""
    connect_ports: tuple[int, ...] = ()
    mcp_http: bool = False
    """An agent command reaches its MCP server over HTTP: each process gets a port to
    listen on (see :func:`free_loopback_port`)."""
    limits: Limits = field(
        default_factory=lambda: Limits(
            DEFAULT_MEMORY_MB << 20, DEFAULT_FILE_MB << 20, DEFAULT_OPEN_FILES, DEFAULT_PROCESSES
        )
    )
    _base: list[Path] | None = None
    _carved_entries: dict[tuple[str, ...], list[Path]] = field(default_factory=dict)
    """The carved grants of each ``sys.path`` the run's processes had (most share one)."""
    _listed: list[Path] = field(default_factory=list)
    """Split roots, listable only (see :func:`carve`)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    """A pool's hosts plan their children on the threads of their cases."""

    def _base_read(self) -> list[Path]:
        """The static read grants: interpreter, libraries, system folders (carved once)."""
        if self._base is None:
            roots = [*_interpreter_roots(), *map(Path, SYSTEM_READ)]
            self._base = carve(roots, self.denied, self._listed, around=(self.project,))
        return self._base

    def _carved(self, entries: Sequence[Path]) -> list[Path]:
        key = tuple(map(str, entries))
        if key not in self._carved_entries:
            self._carved_entries[key] = carve(
                entries, self.denied, self._listed, around=(self.project,)
            )
        return self._carved_entries[key]

    def plan(self, child_sys_path: Sequence[str], workdir: Path) -> SandboxPlan:
        """The plan of one adapter process whose ``sys.path`` is ``child_sys_path``."""
        with self._lock:
            return self._plan(child_sys_path, workdir)

    def _plan(self, child_sys_path: Sequence[str], workdir: Path) -> SandboxPlan:
        workdir = workdir.resolve()
        linked: list[Path] = []
        entries: list[Path] = []
        for entry in child_sys_path:
            path = Path(entry)
            if path.is_relative_to(workdir):
                # A sys.path shim: grant what it links (the adapter's modules in the project).
                try:
                    linked += [member.resolve() for member in path.iterdir()]
                except OSError:
                    continue
            else:
                entries.append(path)
        read = [
            *self._base_read(),
            *self._carved(entries),
            *carve([*linked, *self.allowed, *self.read_only], self.denied),
            *(Path(path) for path in SYSTEM_FILES if Path(path).exists()),
        ]
        write = [workdir, *(path for path in self.read_write if path.exists())]
        return SandboxPlan(
            abi=self.offer.abi,
            read=tuple(dict.fromkeys(str(path) for path in read)),
            listed=tuple(dict.fromkeys(str(path) for path in self._listed)),
            write=tuple(str(path) for path in write),
            devices=tuple(path for path in DEVICES if Path(path).exists()),
            connect_ports=self.connect_ports,
            limits=self.limits,
            bind_ports=(free_loopback_port(),) if self.mcp_http else (),
        )


def free_loopback_port() -> int:
    """A loopback TCP port free now, for one adapter process's MCP server.

    Landlock names ports, not sockets, so the harness picks the port and the
    sandboxed process may bind that one only (a process serves one case at a
    time, so one port serves all its cases in turn). Another process could take
    it in between: the case then fails as ``agent_transport_unavailable``.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def endpoint_port(base_url: str | None) -> int | None:
    """The TCP port of a model endpoint URL (the scheme's default when it names none)."""
    if not base_url:
        return None
    parts = urlsplit(base_url)
    try:
        port = parts.port
    except ValueError:
        return None
    if port is not None:
        return port
    return {"http": 80, "https": 443}.get(parts.scheme)


def clean_environment(environment: dict[str, str]) -> dict[str, str]:
    """The adapter's environment: no ``PWD``/``OLDPWD`` naming the project, no ``AGENTBENCH_*``
    or ``PYTEST_*`` (settings are handed over whole, never through the environment)."""
    return {
        name: value
        for name, value in environment.items()
        if name not in ("PWD", "OLDPWD")
        and not name.startswith("AGENTBENCH_")
        and not name.startswith("PYTEST_")
    }


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().decode("utf-8", "replace").rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def workdir_prefix() -> str:
    """The private temp folder's name prefix, naming this process and its start time."""
    pid = os.getpid()
    return f"{WORKDIR_PREFIX}{pid}-{_start_time(pid) or 0}-"


def sweep_stale(folder: Path | None = None) -> list[Path]:
    """Remove private temp folders of ours whose owning process is gone (a killed run's).

    Only folders named by :func:`workdir_prefix`, owned by this user, whose
    pid is dead or now names a process started at another time.
    """
    folder = Path(tempfile.gettempdir()) if folder is None else folder
    removed = []
    pattern = re.compile(rf"^{re.escape(WORKDIR_PREFIX)}(\d+)-(\d+)-")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        match = pattern.match(name)
        if match is None:
            continue
        path = folder / name
        try:
            if path.lstat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        pid, started = int(match.group(1)), match.group(2)
        if _start_time(pid) == started:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
