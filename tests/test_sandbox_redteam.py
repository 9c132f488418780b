"""The red team: adapters that go looking for the oracle, the network and the harness.

One adapter runs every reading attack in each case of the packaged authority
suite (the oracle of which lies in the plugin's own data folder) and reports
each attack's outcome in the failure it raises, on one line; three cases
instead run a fork bomb, a memory bomb and a daemon meant to outlive the
case. The project runs once per mode of running (serial, ``-n 2``, the
isolated pool) under ``--agentbench-sandbox=strict``, where every attack must
be held: nothing read, nothing reached, nothing left running, the bombs
ended with their named codes, and the suite scores nothing. The same
adapter under ``off`` shows that the attacks are real: there they breach
(docs/writing-a-world.md lists each outcome).
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.isolation import landlock
from pytest_agentbench.sdk.packaged import data_root, packaged_suites
from tests.outside_world import PACKAGE, install_outside_world

SUITE_ID = "asteria-authored-v1"
FORK_BOMB_CASE = "evt-010-authorised-comparison"
MEMORY_BOMB_CASE = "evt-011-supplier-directory-read"
DAEMON_CASE = "evt-012-quotation-request"

READING_ATTACKS = (
    "packaged_resources",
    "outside_world_oracle",
    "site_packages_walk",
    "sealed_folder",
    "proc_mem",
    "proc_environ",
    "proc_fd",
    "proc_cwd",
    "proc_root",
    "sibling_adapters",
    "inherited_fds",
    "run_outputs",
    "tmp_symlink",
    "loopback_socket",
    "abstract_socket",
    "bind_port",
    "write_oracle",
    "shell",
    "ptrace_attach",
    "signal_harness",
    "environment",
)

REDTEAM = r'''
import ctypes
import importlib.resources
import os
import signal
import site
import socket
import subprocess
import sys
import time
from pathlib import Path

ORACLE_FILE = Path(os.environ["REDTEAM_ORACLE"])


class Found(Exception):
    """An attack got through: what it got."""


def _read(path):
    with open(path, "rb") as handle:
        data = handle.read(64)
    if data:
        raise Found(f"read {path}")


def _raise(error):
    raise error


def _read_any(folder, limit=50):
    for root, _, files in os.walk(folder, onerror=_raise):
        for name in files[:limit]:
            _read(os.path.join(root, name))


def packaged_resources():
    from pytest_agentbench.sdk.packaged import data_root

    _read(data_root() / "oracles" / ORACLE_FILE.parent.name / ORACLE_FILE.name)
    packaged = importlib.resources.files("pytest_agentbench").joinpath("_data", "oracles")
    if packaged.is_dir():
        for suite in packaged.iterdir():
            for item in suite.iterdir():
                if item.read_bytes():
                    raise Found(f"read {item}")
    return "nothing readable"


def outside_world_oracle():
    # A world installed as a package outside the project ships its oracle beside its suites.
    package = importlib.resources.files(os.environ["REDTEAM_OUTSIDE"])
    _read_any(str(package.joinpath("oracles")))
    return "nothing readable"


def site_packages_walk():
    entries = [*sys.path, *site.getsitepackages()]
    for entry in entries:
        base = Path(entry or ".")
        for candidate in [base / "oracles", base / "sealed", *base.glob("*/_data/oracles")]:
            if candidate.is_dir():
                _read_any(candidate)
    return "nothing readable"


def sealed_folder():
    from pytest_agentbench.sdk.packaged import data_root

    _read_any(data_root() / "sealed")
    return "nothing readable"


def proc_mem():
    parent = os.getppid()
    with open(f"/proc/{parent}/maps") as handle:
        first = handle.readline()
    start = int(first.split("-")[0], 16)
    with open(f"/proc/{parent}/mem", "rb") as memory:
        memory.seek(start)
        if memory.read(16):
            raise Found("read the harness's memory")
    return "unreachable"


def proc_environ():
    _read(f"/proc/{os.getppid()}/environ")
    return "unreachable"


def proc_fd():
    folder = f"/proc/{os.getppid()}/fd"
    for name in os.listdir(folder):
        try:
            target = os.readlink(f"{folder}/{name}")
        except OSError:
            target = None
        if target is not None:
            raise Found(f"fd {name} -> {target}")
        try:
            _read(f"{folder}/{name}")
        except (IsADirectoryError, OSError) as exc:
            if isinstance(exc, Found):
                raise
    return "unreachable"


def proc_cwd():
    names = os.listdir(f"/proc/{os.getppid()}/cwd")
    raise Found(f"listed the harness's folder: {len(names)} entries")


def proc_root():
    _read(f"/proc/{os.getppid()}/root{ORACLE_FILE}")
    return "unreachable"


def sibling_adapters():
    # Other adapter processes (another case's, a pool's, the template that forks them).
    me, found = os.getpid(), 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                command = handle.read()
        except OSError:
            continue
        if b"pytest_agentbench.isolation." not in command:
            continue
        found += 1
        _read(f"/proc/{name}/environ")
    return f"{found} found, none readable"


def inherited_fds():
    # Standard output and error may be files of the harness's (pytest's own output),
    # opened for writing: reading them, directly or reopened by name, must fail.
    named = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if not target.startswith("/") or target.startswith(("/dev/", "/proc/")):
            continue
        named += 1
        for read in (
            lambda: os.pread(int(name), 64, 0),
            lambda: open(f"/proc/self/fd/{name}", "rb").read(64),
        ):
            try:
                data = read()
            except OSError:
                continue
            if data:
                raise Found(f"read fd {name} ({target})")
    return f"{named} named, none readable"


def run_outputs():
    for path in os.environ["REDTEAM_OUTPUTS"].split(os.pathsep):
        _read(path)
    return "nothing readable"


def tmp_symlink():
    planted = Path("/tmp") / f"agentbench-redteam-{os.getpid()}"
    try:
        planted.symlink_to(ORACLE_FILE)
    except OSError:
        planted = Path(os.environ.get("TMPDIR", "/tmp")) / f"link-{os.getpid()}"
        planted.symlink_to(ORACLE_FILE)
    try:
        _read(planted)
    finally:
        planted.unlink()
    return "link made, target unreadable"


def loopback_socket():
    port = int(os.environ["REDTEAM_PORT"])
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        raise Found(f"connected to 127.0.0.1:{port}")


def abstract_socket():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(2)
        client.connect("\0" + os.environ["REDTEAM_ABSTRACT"])
        raise Found("connected to an abstract socket outside the sandbox")


def bind_port():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        raise Found(f"listening on {server.getsockname()[1]}")


def write_oracle():
    planted = ORACLE_FILE.parent / "planted.txt"
    with open(planted, "w") as handle:
        handle.write("x")
    planted.unlink()
    raise Found(f"wrote {planted}")


def shell():
    done = subprocess.run(
        ["/bin/sh", "-c", f"cat {ORACLE_FILE}"], capture_output=True, timeout=30
    )
    if done.stdout:
        raise Found("the shell read the oracle")
    if os.system(f"cat {ORACLE_FILE} > /dev/null 2>&1") == 0:
        raise Found("os.system read the oracle")
    return "the shell is sandboxed too"


def ptrace_attach():
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getppid()
    if libc.ptrace(16, parent, None, None) == 0:  # PTRACE_ATTACH
        libc.ptrace(17, parent, None, None)  # PTRACE_DETACH
        raise Found("attached to the harness")
    return f"errno {ctypes.get_errno()}"


def signal_harness():
    os.kill(os.getppid(), 0)
    raise Found("may signal the harness")


def environment():
    leaks = [name for name in os.environ if name == "PWD" or name.startswith("PYTEST_")]
    leaks += [
        name for name in os.environ
        if name.startswith("AGENTBENCH_") and name != "AGENTBENCH_ISOLATED_TREE"
    ]
    if leaks:
        raise Found(f"inherited {sorted(leaks)}")
    return "clean"


ATTACKS = [
    packaged_resources, outside_world_oracle, site_packages_walk, sealed_folder, proc_mem,
    proc_environ, proc_fd, proc_cwd, proc_root, sibling_adapters, inherited_fds, run_outputs,
    tmp_symlink, loopback_socket, abstract_socket, bind_port, write_oracle, shell,
    ptrace_attach, signal_harness, environment,
]


def _outcome(attack):
    if attack.__name__ in os.environ.get("REDTEAM_SKIP", "").split(","):
        return "skipped"
    try:
        detail = attack()
    except Found as found:
        return f"breached({str(found)[:60]})"
    except BaseException as exc:
        return f"held({type(exc).__name__} {getattr(exc, 'errno', '')})"
    return f"held({detail})"


def _fork_bomb():
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.01)


def _memory_bomb():
    hoard = []
    for _ in range(64):
        # bytes(n) is calloc'ed: fresh pages from the kernel, never touched, so the bomb
        # spends address space, not the machine's memory (bytearray(n) would write them).
        hoard.append(bytes(256 << 20))
    return len(hoard)


def _daemon():
    read_end, write_end = os.pipe()
    if os.fork() == 0:
        os.setsid()
        grandchild = os.fork()
        if grandchild == 0:
            os.close(read_end)
            os.write(write_end, str(os.getpid()).encode())
            os.close(write_end)
            time.sleep(600)
        os._exit(0)
    os.close(write_end)
    pid = int(os.read(read_end, 32))
    os.close(read_end)
    return pid


class RedTeam:
    def trace_action(self, bundle, event_id):
        extra = ""
        if os.environ.get("REDTEAM_BOMBS") == "1":
            if event_id == "FORK_BOMB_CASE":
                _fork_bomb()
            if event_id == "MEMORY_BOMB_CASE":
                _memory_bomb()
                raise RuntimeError("64 blocks of 256 MiB were allocated")
        # The attacks first: the daemon is this process's own descendant, in its own
        # sandbox, which sibling_adapters would otherwise find and read as a sibling.
        outcomes = " ".join(f"{attack.__name__}={_outcome(attack)}" for attack in ATTACKS)
        if os.environ.get("REDTEAM_BOMBS") == "1" and event_id == "DAEMON_CASE":
            extra = f" daemon={_daemon()}"
        raise RuntimeError(f"attacks: {outcomes}{extra}")
'''

OUTCOME = re.compile(r"(\w+)=(held|breached|skipped)")
REFUSED_BY_THE_KERNEL = re.compile(r"(\w+)=held\(PermissionError 13\)")
"""An attack the kernel refused (EACCES) rather than one that found nothing to take."""
KERNEL_REFUSED = {
    "packaged_resources",
    "outside_world_oracle",
    "site_packages_walk",
    "sealed_folder",
    "run_outputs",
}
"""The reads of an oracle or a run's output: each must meet a refusal, not an absence."""


def _oracle_file() -> Path:
    return (packaged_suites()[SUITE_ID] / "../../oracles" / SUITE_ID).resolve() / (
        "expected_decisions.jsonl"
    )


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback port standing for the harness's (or any local service's)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


@pytest.fixture
def abstract_listener() -> Iterator[str]:
    """An abstract UNIX socket made outside any sandbox (as a harness's IPC could be)."""
    name = f"agentbench-redteam-{os.getpid()}-{os.urandom(4).hex()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind("\0" + name)
        server.listen()
        yield name


@pytest.fixture
def redteam(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    listener: int,
    abstract_listener: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> pytest.Pytester:
    if landlock.abi_version()[0] < 6 or not sys.platform.startswith("linux"):
        pytest.skip("strict sandboxing needs Landlock ABI 6")
    assert _oracle_file().is_file()
    pytester.makepyfile(
        redteam=REDTEAM.replace('"FORK_BOMB_CASE"', repr(FORK_BOMB_CASE))
        .replace('"MEMORY_BOMB_CASE"', repr(MEMORY_BOMB_CASE))
        .replace('"DAEMON_CASE"', repr(DAEMON_CASE))
    )
    cassette = pytester.path / "cassettes" / "request.json"
    cassette.parent.mkdir()
    cassette.write_text('{"answer": "from an earlier run"}')
    old_report = pytester.path / "old-run.json"
    old_report.write_text('{"suites": []}')
    journal = pytester.path / "old-run.json.progress"
    journal.write_text("{}\n")
    monkeypatch.setenv("REDTEAM_ORACLE", str(_oracle_file()))
    monkeypatch.setenv("REDTEAM_PORT", str(listener))
    monkeypatch.setenv("REDTEAM_ABSTRACT", abstract_listener)
    monkeypatch.setenv(
        "REDTEAM_OUTPUTS", os.pathsep.join(str(path) for path in (cassette, old_report, journal))
    )
    monkeypatch.setenv("REDTEAM_BOMBS", "1")
    # An outside world installed outside the project, as pip would: its packaged oracle too.
    site = tmp_path_factory.mktemp("site")
    assert (install_outside_world(site) / "oracles").is_dir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("REDTEAM_OUTSIDE", PACKAGE)
    return pytester


def _run(pytester: pytest.Pytester, mode: str, *args: str) -> dict[str, Any]:
    report = pytester.path / "run.json"
    pytester.runpytest_subprocess(
        f"--agentbench-suite={SUITE_ID}",
        "--agentbench-adapter=redteam:RedTeam",
        "--agentbench-isolate",
        f"--agentbench-sandbox={mode}",
        f"--agentbench-report={report}",
        "--agentbench-timeout=60",
        "-m",
        "not agentbench_control",
        "-p",
        "no:cacheprovider",
        *args,
        timeout=240,
    )
    document: dict[str, Any] = json.loads(report.read_text())
    return document


def _cases(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (suite,) = report["suites"]
    return {entry["result"]["case_id"]: entry["result"] for entry in suite["cases"]}


def _pid_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rpartition(b")")[2].split()[0]
    except OSError:
        return True
    return state == b"Z"


def _assert_held(report: dict[str, Any]) -> None:
    trust = report["trust"]
    assert trust["sandbox"] == "strict"
    assert all(promise["held"] for promise in trust["promises"]), trust
    (suite,) = report["suites"]
    metrics = {metric["name"]: metric["value"] for metric in suite["metrics"]}
    assert metrics["authorization_decision_accuracy"] == 0.0
    cases = _cases(report)
    assert len(cases) == 11
    problems = []
    for case_id, result in sorted(cases.items()):
        reason = result["failure_reason"] or ""
        if result["failure_class"] != "agent_error":
            problems.append(f"{case_id}: {result['failure_class']} {reason[:200]}")
            continue
        if case_id == FORK_BOMB_CASE:
            if not reason.startswith("[sandbox_process_limit]"):
                problems.append(f"fork bomb: {reason[:200]}")
            continue
        if case_id == MEMORY_BOMB_CASE:
            if not reason.startswith("[sandbox_memory_limit]"):
                problems.append(f"memory bomb: {reason[:200]}")
            continue
        outcomes = dict(OUTCOME.findall(reason))
        if set(outcomes) != set(READING_ATTACKS):
            problems.append(f"{case_id}: attacks reported {sorted(outcomes)}: {reason[:300]}")
        refused = set(REFUSED_BY_THE_KERNEL.findall(reason))
        if not refused >= KERNEL_REFUSED:
            problems.append(f"{case_id}: the oracle reads were not refused by the kernel: {reason}")
        breached = [name for name, status in outcomes.items() if status != "held"]
        if breached:
            problems.append(f"{case_id}: {breached} not held: {reason}")
        if case_id == DAEMON_CASE:
            daemon = re.search(r"daemon=(\d+)", reason)
            if daemon is None or not _pid_gone(int(daemon.group(1))):
                problems.append(f"the daemon outlived its case: {reason[-80:]}")
    assert not problems, "\n".join(problems)


def test_strict_holds_every_attack_serially(redteam: pytest.Pytester) -> None:
    _assert_held(_run(redteam, "strict"))


def test_strict_holds_every_attack_under_xdist(redteam: pytest.Pytester) -> None:
    _assert_held(_run(redteam, "strict", "-n", "2"))


def test_strict_holds_every_attack_in_the_isolated_pool(redteam: pytest.Pytester) -> None:
    # The pool's processes forked by a template process (the default, as in the serial and
    # -n 2 runs), each sandboxing itself after the fork.
    _assert_held(_run(redteam, "strict", "--agentbench-concurrency=2"))


def test_off_the_same_attacks_breach(
    redteam: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain process isolation: the attacks are real.

    Left out here: the bombs (nothing would bound them), writing into the
    oracle folder (it would succeed, into the repository's own oracle) and
    ptrace (as root it would stop the harness it attaches to).
    """
    monkeypatch.setenv("REDTEAM_BOMBS", "0")
    monkeypatch.setenv("REDTEAM_SKIP", "write_oracle,ptrace_attach")
    report = _run(redteam, "off")
    assert report["trust"]["sandbox"] == "off"
    assert not any(promise["held"] for promise in report["trust"]["promises"])
    for result in _cases(report).values():
        outcomes = dict(OUTCOME.findall(result["failure_reason"]))
        breached = {name for name, status in outcomes.items() if status == "breached"}
        # What the kernel alone stops: nothing here is stopped by process isolation.
        expected = {
            "packaged_resources",
            "outside_world_oracle",
            "site_packages_walk",
            "sealed_folder",
            "proc_cwd",
            "run_outputs",
            "tmp_symlink",
            "loopback_socket",
            "abstract_socket",
            "bind_port",
            "shell",
            "signal_harness",
            "environment",
        }
        if os.getuid() == 0:
            expected |= {"proc_mem", "proc_environ", "proc_fd", "proc_root"}
        assert expected <= breached, (sorted(expected - breached), result["failure_reason"])


def test_packaged_data_lies_where_the_attacks_look() -> None:
    """The attacks aim at the real oracle: the plugin's own data folder holds it."""
    assert _oracle_file().is_relative_to(data_root())
