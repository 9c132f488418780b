"""The sandbox's parts: the Landlock binding, the carved read set, the plan, modes and refusals.

The red team (``tests/test_sandbox_redteam.py``) holds the whole; these check
each part where it can be seen alone, most without starting any process.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_agentbench.isolation import landlock, sandbox_plan
from pytest_agentbench.isolation.host import IsolatedAdapters, IsolationFailure
from pytest_agentbench.isolation.sandbox import SandboxPlan, promises
from pytest_agentbench.isolation.sandbox_plan import (
    KernelOffer,
    SandboxSetup,
    carve,
    clean_environment,
    configured_mode,
    endpoint_port,
    refuse_unkept,
    sweep_stale,
    workdir_prefix,
    world_oracle_folders,
)
from pytest_agentbench.sdk.errors import UsageError

LINUX_LANDLOCK = sys.platform.startswith("linux") and landlock.abi_version()[0] >= 1


def test_the_binding_lays_out_the_kernels_structures() -> None:
    assert ctypes.sizeof(landlock.RulesetAttr) == 24
    assert ctypes.sizeof(landlock.PathBeneathAttr) == 12  # packed in the kernel's header
    assert ctypes.sizeof(landlock.NetPortAttr) == 16
    assert landlock.SYSCALLS["x86_64"] == landlock.SYSCALLS["aarch64"] == (444, 445, 446)


def test_each_abi_handles_the_rights_it_knows() -> None:
    assert landlock.fs_access(0) == 0
    assert landlock.fs_access(1) == (1 << 13) - 1
    assert landlock.fs_access(2) & landlock.ACCESS_FS_REFER
    assert not landlock.fs_access(2) & landlock.ACCESS_FS_TRUNCATE
    assert landlock.fs_access(3) & landlock.ACCESS_FS_TRUNCATE
    assert not landlock.fs_access(4) & landlock.ACCESS_FS_IOCTL_DEV
    assert landlock.fs_access(5) & landlock.ACCESS_FS_IOCTL_DEV
    assert (landlock.net_access(3), landlock.net_access(4)) == (0, 3)
    assert (landlock.scopes(5), landlock.scopes(6)) == (0, 3)


def test_promises_name_what_an_older_kernel_cannot_keep() -> None:
    assert all(why is None for why in promises(7, None).values())
    abi3 = promises(3, None)
    assert abi3["network"] == "Landlock ABI 3 has no TCP rules"
    assert abi3["signals"] == "Landlock ABI 3 has no signal scoping"
    assert abi3["filesystem"] is None
    assert abi3["ptrace"] is None
    none = promises(0, "the kernel has no Landlock (landlock_create_ruleset: ENOSYS)")
    assert none["filesystem"] == (
        "Landlock is unavailable: the kernel has no Landlock (landlock_create_ruleset: ENOSYS)"
    )
    with pytest.raises(UsageError) as refused:
        refuse_unkept(KernelOffer(3, None, abi3))
    assert refused.value.code == "sandbox_unavailable"
    assert refused.value.render().startswith(
        "[sandbox_unavailable] --agentbench-sandbox: network: Landlock ABI 3 has no TCP rules; "
    )
    refuse_unkept(KernelOffer(7, None, promises(7, None)))


def test_the_mode_comes_from_the_option_then_the_environment_then_the_ini() -> None:
    assert configured_mode(None, "", {}) == "auto"
    assert configured_mode(None, "off", {}) == "off"
    assert configured_mode(None, "off", {"AGENTBENCH_SANDBOX": "strict"}) == "strict"
    assert configured_mode("auto", "off", {"AGENTBENCH_SANDBOX": "strict"}) == "auto"
    with pytest.raises(UsageError) as refused:
        configured_mode(None, "auto", {"AGENTBENCH_SANDBOX": "tight"})
    assert refused.value.code == "invalid_sandbox_mode"
    assert refused.value.location.field == "AGENTBENCH_SANDBOX"


def test_carving_grants_everything_but_the_denied_folders(tmp_path: Path) -> None:
    (tmp_path / "site" / "world" / "_data" / "oracles").mkdir(parents=True)
    (tmp_path / "site" / "world" / "_data" / "suites").mkdir()
    (tmp_path / "site" / "world" / "code.py").write_text("")
    (tmp_path / "site" / "other").mkdir()
    (tmp_path / "site" / "sneaky").symlink_to(tmp_path / "site" / "world" / "_data" / "oracles")
    denied = [tmp_path / "site" / "world" / "_data" / "oracles"]
    listed: list[Path] = []
    granted = carve([tmp_path / "site"], denied, listed)
    # The split root stays listable (how Python finds modules in it); nothing else is.
    assert listed == [tmp_path / "site"]
    assert sorted(granted) == sorted(
        [
            tmp_path / "site" / "other",
            tmp_path / "site" / "world" / "code.py",
            tmp_path / "site" / "world" / "_data" / "suites",
        ]
    )
    # Around the project: a root holding it is split, one inside it is kept.
    # (A link found while splitting that leads into the project is not granted either.)
    around = [tmp_path / "site" / "world"]
    assert carve([tmp_path / "site"], [], around=around) == [tmp_path / "site" / "other"]
    assert carve([tmp_path / "site" / "world" / "_data"], [], around=around) == [
        tmp_path / "site" / "world" / "_data"
    ]
    # A root with nothing denied beneath it is granted whole; one beneath a denied folder not.
    assert carve([tmp_path / "site" / "other"], denied) == [tmp_path / "site" / "other"]
    assert carve([denied[0]], denied) == []


def test_every_copy_of_a_worlds_package_has_its_oracles_denied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout, wheel = tmp_path / "checkout", tmp_path / "site-packages"
    for folder in (
        checkout / "acme",
        checkout / "suites" / "acme-v1",
        checkout / "oracles" / "acme-v1",
        checkout / "sealed",
        wheel / "acme" / "_data" / "oracles" / "acme-v1",
        wheel / "unrelated",
    ):
        folder.mkdir(parents=True)
    (checkout / "suites" / "acme-v1" / "suite.yaml").write_text(
        "id: acme-v1\nworld: acme\noracle: ../../oracles/acme-v1\noptions:\n  sealed: hidden\n"
    )
    (checkout / "suites" / "acme-v1" / "hidden").mkdir()
    (wheel / "oracles").mkdir()  # beside the package, as in a checkout: a copy's too
    monkeypatch.setattr(sys, "path", [str(checkout), str(wheel)])
    denied = world_oracle_folders(
        [checkout / "suites"], [checkout / "suites" / "acme-v1"], ["acme"]
    )
    assert set(denied) == {
        checkout / "oracles",
        checkout / "oracles" / "acme-v1",
        checkout / "sealed",
        checkout / "suites" / "acme-v1" / "hidden",
        wheel / "oracles",
        wheel / "acme" / "_data" / "oracles",
    }


def _setup(tmp_path: Path, **overrides: object) -> SandboxSetup:
    options: dict[str, object] = {
        "mode": "strict",
        "offer": KernelOffer.probe(),
        "denied": (tmp_path / "project" / "oracles",),
        "project": tmp_path / "project",
    }
    options.update(overrides)
    return SandboxSetup(**options)  # type: ignore[arg-type]


def test_a_plan_grants_the_adapters_own_modules_but_no_other_project_file(
    tmp_path: Path,
) -> None:
    project, workdir = tmp_path / "project", tmp_path / "work"
    (project / "oracles").mkdir(parents=True)
    (project / "agent.py").write_text("")
    (project / "notes.txt").write_text("")
    shim = workdir / "path-0"
    shim.mkdir(parents=True)
    (shim / "agent.py").symlink_to(project / "agent.py")
    (project / "prompts.txt").write_text("")
    (project / "oracles" / "truth.json").write_text("")
    # A src folder (or a virtual environment) inside the project is on sys.path as is.
    (project / "src" / "agentpkg").mkdir(parents=True)
    plan = _setup(
        tmp_path,
        connect_ports=(8443,),
        allowed=(project / "prompts.txt", project / "oracles" / "truth.json"),
    ).plan([str(shim), str(project / "src"), sys.prefix], workdir)
    assert str(project / "agent.py") in plan.read
    # A path the user allows is read; one in an oracle folder stays denied all the same.
    assert str(project / "prompts.txt") in plan.read
    assert str(project / "oracles" / "truth.json") not in plan.read
    assert {path for path in plan.read if Path(path).is_relative_to(project)} == {
        str(project / "agent.py"),
        str(project / "prompts.txt"),
        str(project / "src"),
    }
    assert str(Path(sys.prefix).resolve()) in plan.read
    assert plan.write == (str(workdir.resolve()),)
    assert plan.connect_ports == (8443,)
    assert SandboxPlan.from_message(plan.as_message()) == plan


def test_the_adapters_environment_names_no_project_and_no_harness_setting() -> None:
    cleaned = clean_environment(
        {
            "PATH": "/usr/bin",
            "PWD": "/project",
            "OLDPWD": "/",
            "AGENTBENCH_TOOLGRAMMAR_SEALED": "/sealed",
            "PYTEST_CURRENT_TEST": "t",
            "OPENAI_API_KEY": "k",
        }
    )
    assert cleaned == {"PATH": "/usr/bin", "OPENAI_API_KEY": "k"}


def test_a_model_endpoints_port() -> None:
    assert endpoint_port("http://127.0.0.1:8000/v1") == 8000
    assert endpoint_port("https://api.example.com/v1") == 443
    assert endpoint_port("http://api.example.com") == 80
    assert endpoint_port(None) is None


def test_the_sweep_removes_only_folders_whose_owner_is_gone(tmp_path: Path) -> None:
    mine = tmp_path / f"{workdir_prefix()}abc"
    dead = tmp_path / f"{sandbox_plan.WORKDIR_PREFIX}{2**22 + 7}-12345-xyz"
    reused = tmp_path / f"{sandbox_plan.WORKDIR_PREFIX}{os.getpid()}-1-xyz"
    legacy = tmp_path / f"{sandbox_plan.WORKDIR_PREFIX}q1w2e3"
    for folder in (mine, dead, reused, legacy):
        (folder / "inner").mkdir(parents=True)
    assert sorted(sweep_stale(tmp_path)) == sorted([dead, reused])
    assert mine.is_dir()
    assert legacy.is_dir()


def test_an_overrun_the_adapter_raises_is_named(tmp_path: Path) -> None:
    host = IsolatedAdapters(5.0, sandbox=_setup(tmp_path))
    try:
        assert host._sandbox_overrun("MemoryError", "") == "sandbox_memory_limit"
        assert (
            host._sandbox_overrun("OSError", "[Errno 27] File too large")
            == "sandbox_file_size_limit"
        )
        assert (
            host._sandbox_overrun("OSError", "[Errno 24] Too many open files: 'x'")
            == "sandbox_open_files_limit"
        )
        assert host._sandbox_overrun("ValueError", "bad") is None
    finally:
        host.close()


SANDBOXED = """
import os, socket, sys
from pytest_agentbench.isolation.sandbox import Limits, SandboxPlan, apply
allowed, denied, private = sys.argv[1:4]
apply(SandboxPlan(
    abi={abi}, read=(sys.prefix, sys.base_prefix, "/usr", "/lib", "/lib64", "/proc", allowed,
    {package!r}),
    listed=(), write=(private,), devices=("/dev/null",), connect_ports=(),
    limits=Limits(1 << 32, 1 << 20, 64, 64),
))
def attempt(action):
    try:
        action()
    except OSError as exc:
        return exc.errno
    return 0
print(attempt(lambda: open(os.path.join(allowed, "f")).read()),
      attempt(lambda: open(os.path.join(denied, "f")).read()),
      attempt(lambda: open(os.path.join(private, "new"), "w").write("x")),
      attempt(lambda: open(os.path.join(allowed, "new"), "w")),
      attempt(lambda: open(f"/proc/{{os.getppid()}}/mem", "rb")),
      attempt(lambda: socket.create_connection(("127.0.0.1", 9), timeout=1)),
      attempt(lambda: open(os.path.join(private, "big"), "wb").write(b"x" * (2 << 20))))
"""


@pytest.mark.skipif(not LINUX_LANDLOCK, reason="needs Landlock")
def test_a_process_applies_its_plan_to_itself(tmp_path: Path) -> None:
    allowed, denied, private = (tmp_path / name for name in ("allowed", "denied", "private"))
    for folder in (allowed, denied, private):
        folder.mkdir()
        (folder / "f").write_text("data")
    abi = landlock.abi_version()[0]
    package = str(Path(landlock.__file__).resolve().parent.parent.parent)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            SANDBOXED.format(abi=abi, package=package),
            str(allowed),
            str(denied),
            str(private),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    read_ok, read_denied, write_private, write_allowed, memory, connect, big = map(
        int, done.stdout.split()
    )
    assert (read_ok, write_private) == (0, 0)
    assert read_denied == write_allowed == memory == 13  # EACCES, root included
    assert big == 27  # EFBIG: the file size limit
    if abi >= 4:
        assert connect == 13


def test_strict_refuses_a_kernel_that_cannot_keep_every_promise(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(landlock, "abi_version", lambda: (3, None))
    result = pytester.runpytest("--agentbench-isolate", "--agentbench-sandbox=strict")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*[[]sandbox_unavailable[]] --agentbench-sandbox: network: Landlock ABI 3 has no "
            "TCP rules; signals: Landlock ABI 3 has no signal scoping; abstract_sockets: "
            "Landlock ABI 3 has no abstract UNIX socket scoping*"
        ]
    )
    monkeypatch.setenv("AGENTBENCH_SANDBOX", "sideways")
    result = pytester.runpytest("--agentbench-isolate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]invalid_sandbox_mode[]] AGENTBENCH_SANDBOX: 'sideways'*"])
    monkeypatch.delenv("AGENTBENCH_SANDBOX")
    result = pytester.runpytest("--agentbench-isolate", "-o", "agentbench_sandbox_memory_mb=lots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*[[]invalid_sandbox_limit[]] agentbench_sandbox_memory_mb: 'lots' is not a whole*"]
    )
    # In-process the sandbox is not asked for: no mode is read, the kernel is not probed.
    monkeypatch.setenv("AGENTBENCH_SANDBOX", "sideways")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


KILLED_HARNESS = """
import os, sys
from pathlib import Path
from pytest_agentbench.isolation.host import IsolatedAdapters, IsolationFailure
from pytest_agentbench.isolation.sandbox_plan import KernelOffer, SandboxSetup
setup = SandboxSetup(
    mode="auto", offer=KernelOffer.probe(), denied=(), project=Path(sys.argv[1])
)
host = IsolatedAdapters(30.0, sandbox=setup)
host._child(None)
(host._workdir / "scratch.bin").write_bytes(b"x" * 1000)
print(host._workdir, host.pid, flush=True)
os._exit(9)  # as SIGKILL would: no close(), no atexit
"""


def test_a_killed_harness_leaves_an_emptied_folder_the_next_run_sweeps(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", KILLED_HARNESS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 9, done.stderr
    workdir_text, child_text = done.stdout.split()
    workdir, child = Path(workdir_text), int(child_text)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    # The orphaned child saw its harness gone, emptied its folder and exited.
    assert not Path(f"/proc/{child}").exists()
    assert not workdir.exists() or not any(workdir.iterdir())
    if workdir.exists():
        assert workdir in sweep_stale(workdir.parent)
    assert not workdir.exists()


@pytest.mark.skipif(landlock.abi_version()[0] < 4, reason="needs Landlock's TCP rules")
def test_a_child_that_cannot_apply_its_plan_is_not_run(tmp_path: Path) -> None:
    """No adapter code runs unsandboxed: a failed step refuses the process by name."""
    host = IsolatedAdapters(5.0, sandbox=_setup(tmp_path, connect_ports=(70000,)))
    try:
        with pytest.raises(IsolationFailure) as refused:
            host._child(None)
    finally:
        host.close()
    assert refused.value.reason.startswith(
        "[sandbox_unavailable] the adapter's process could not sandbox itself: "
        "LandlockFailure: [Errno 22] landlock_add_rule: EINVAL (port 70000)"
    )


AS_ANOTHER_USER = """
import os, resource
from pytest_agentbench.isolation.sandbox import Limits, apply_limits
os.setgid(65534)
os.setuid(65534)
apply_limits(Limits(1 << 32, 1 << 20, 64, 10))
print(*resource.getrlimit(resource.RLIMIT_NPROC), *resource.getrlimit(resource.RLIMIT_AS))
"""


@pytest.mark.skipif(os.getuid() != 0, reason="switches to another user, which needs root")
def test_a_user_other_than_root_is_bound_by_its_process_limit_too() -> None:
    done = subprocess.run(
        [sys.executable, "-c", AS_ANOTHER_USER],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    soft, hard, memory_soft, memory_hard = map(int, done.stdout.split())
    # What the user runs already (this process at least), and twice the budget.
    assert soft == hard >= 1 + 2 * 10
    assert soft < 10_000
    assert memory_soft == memory_hard == 1 << 32
