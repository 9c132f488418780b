"""The fault matrix of issue 43's files and bounds: what a run writes, and what it reads.

One project per mode (serial, ``-n 2``, isolated, isolated pool) holds every
scenario whose handling could differ by where cases run and where results are
written: case ids that would leave the record folder or overflow a file name,
case ids refused for terminal escapes or NFC/NFD twins, a disk that fills while
the progress journal and the record files are written, and a run sent SIGTERM
while a case still runs (that case's adapter waits for the signal). The serial
run also meets a second run on its report path. Each run is one session, checked
by named scenarios that are all reported together; what needs a session of its
own (a usage error before the run, a hung adapter) follows, serially unless the
mode matters.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli.main import main as cli_main
from pytest_agentbench.sdk.canonical import (
    InputLimits,
    artifact_set_digest,
    canonical_json,
    file_sha256,
    pretty_json,
    set_input_limits,
)
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import (
    MAX_NAME_BYTES,
    OutputLock,
    id_file_name,
    write_file,
    write_new_file,
    writing,
)
from tests.conftest import DEMO_SOURCE
from tests.demo_world import REGISTERING_CONFTEST
from tests.shared_sessions import run_session

OUTER_LIMIT = 120.0
"""The test's own limit on a session: generous, never what is tested."""

FULL_DISK_CONFTEST = """
import errno
import os

from pathlib import Path

HERE = Path(__file__).resolve().parent
_fsync = os.fsync
_write = os.write
_journal_lines = [0]


def _target(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def _full_disk_write(fd, data):
    # A disk that fills as the run goes: the journal takes its header and one line
    # (it is written, not synced, line by line) ...
    if _target(fd).endswith("run.json.progress"):
        _journal_lines[0] += 1
        if _journal_lines[0] > 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return _write(fd, data)


def _full_disk_fsync(fd):
    # ... and no record file of the suite "full" can be made durable.
    if "/records/full/" in _target(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return _fsync(fd)


os.write = _full_disk_write
os.fsync = _full_disk_fsync


def pytest_runtest_logreport(report):
    # Where results arrive (the only process, or the xdist controller): how many
    # cases have finished, for the test that waits to send SIGTERM.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if report.when == "call" and "blocker" not in report.nodeid:
        with open(HERE / "finished.txt", "a") as handle:
            handle.write(report.nodeid + "\\n")
"""

AGENT = """
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


ARGUMENT = "x" * (17 * 1024 * 1024)


class Agent:
    def solve(self, task, session):
        # Tool arguments over the readers' 16 MiB, as JSON text and as a mapping.
        if task["question"] == "5+1":
            session.call("add", '{"a": 5, "b": 1, "pad": "' + ARGUMENT + '"}')
        else:
            session.call("add", {"a": 5, "b": 2, "pad": ARGUMENT})
        return {"answer": 0}

    def answer(self, question):
        if question == "99+1":
            # Waits for the run's SIGTERM (the test's limit ends it otherwise).
            (HERE / "reached").touch()
            for _ in range(2400):
                time.sleep(0.05)
        left, right = question.split("+")
        return int(left) + int(right)
"""

NFC = unicodedata.normalize("NFC", "caf\u00e9")
NFD = unicodedata.normalize("NFD", NFC)
LONG_ASCII = "x" * 300
LONG_UTF8 = "\u00fc" * 200  # 400 bytes of UTF-8
IDS = {
    "../../escaped": "1+1",
    "PLACEHOLDER-ABSOLUTE": "1+2",
    LONG_ASCII: "1+3",
    LONG_UTF8: "1+4",
    "plain": "1+5",
}
"""The absolute id is the project's sibling folder ``elsewhere``, made per run."""
FINISHED_BEFORE_SIGTERM = len(IDS) + 3 + 2
"""Every case but the blocker: the five ids, the suite "full" and the two tool calls."""

MODES = {
    "serial": [],
    "n2": ["-n", "2"],
    # The blocker signals that it runs by a file in the project, which the kernel sandbox
    # forbids; the sandbox's own promises are held by tests/test_sandbox_redteam.py.
    "isolated": ["--agentbench-isolate", "--agentbench-sandbox=off"],
    "pool": ["--agentbench-isolate", "--agentbench-concurrency=2", "--agentbench-sandbox=off"],
}


@pytest.fixture(autouse=True)
def not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """An inner run must not inherit the outer worker's identity."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


def write_suite(
    base: Path, suite_id: str, questions: dict[str, str], *, world: str = "demo", extra: str = ""
) -> None:
    """A demo suite whose case ids may hold anything JSON can: each line is encoded JSON."""
    suite_dir, oracle_dir = base / "suites" / suite_id, base / "oracles" / suite_id
    suite_dir.mkdir(parents=True)
    oracle_dir.mkdir(parents=True)
    (suite_dir / "suite.yaml").write_text(
        f"id: {suite_id}\nversion: 1.0.0\nworld: {world}\ntitle: Demo {suite_id}\n{extra}",
        encoding="utf-8",
    )
    cases = "".join(
        canonical_json({"id": cid, "question": q}) + "\n" for cid, q in questions.items()
    )
    (suite_dir / "cases.jsonl").write_text(cases, encoding="utf-8")
    digest = artifact_set_digest({"cases.jsonl": cases.encode("utf-8")})
    (suite_dir / "manifest.json").write_text(
        pretty_json({"artifact_set_digest": digest}), encoding="utf-8"
    )
    answers = "".join(
        canonical_json({"id": cid, "answer": sum(map(int, q.split("+"))), "canary": f"C-{n}"})
        + "\n"
        for n, (cid, q) in enumerate(questions.items())
    )
    (oracle_dir / "answers.jsonl").write_text(answers, encoding="utf-8")


class FilesRun:
    """One run of the project, ended by SIGTERM once every case but the blocker finished."""

    def __init__(self, mode: str, root: Path) -> None:
        self.mode = mode
        self.base = root / mode / "project"
        self.elsewhere = root / mode / "elsewhere"
        self.base.mkdir(parents=True)
        self.elsewhere.mkdir()
        self.absolute_id = str(self.elsewhere / "escaped-absolutely")
        self._build()
        self.report_path = self.base / "out" / "run.json"
        self.journal = self.base / "out" / "run.json.progress"
        self.second: pytest.RunResult | None = None
        self.journal_during_second: tuple[bytes, bytes] | None = None
        self._run()
        self.report: dict[str, Any] = json.loads(self.report_path.read_text(encoding="utf-8"))

    def _build(self) -> None:
        (self.base / "demo_world.py").write_text(DEMO_SOURCE.read_text(encoding="utf-8"))
        (self.base / "conftest.py").write_text(REGISTERING_CONFTEST + FULL_DISK_CONFTEST)
        (self.base / "files_agent.py").write_text(AGENT)
        ids = {
            (self.absolute_id if cid == "PLACEHOLDER-ABSOLUTE" else cid): q
            for cid, q in IDS.items()
        }
        write_suite(self.base, "ids", ids)
        write_suite(self.base, "full", {"f1": "2+1", "f2": "2+2", "f3": "2+3"})
        write_suite(self.base, "escapes", {"ok": "3+1", "red\x1b[31mtext": "3+2"})
        write_suite(self.base, "twins", {NFC: "4+1", NFD: "4+2"})
        write_suite(
            self.base,
            "tools",
            {"text": "5+1", "mapping": "5+2"},
            world="demo-tools",
            extra="options:\n  max_bytes: 100000000\n",
        )
        # Last in collection order: serially every other case has run when it blocks.
        write_suite(self.base, "zz-blocker", {"waits": "99+1"})

    def _command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "suites",
            "--agentbench-adapter=files_agent:Agent",
            "--agentbench-report=out/run.json",
            "--agentbench-log=out/run.log.ndjson",
            "--agentbench-record=records",
            "--agentbench-timeout=100",
            "--junitxml=junit.xml",
            "-m",
            "not agentbench_control",
            "-rA",
            *MODES[self.mode],
        ]

    def _run(self) -> None:
        out = (self.base / "stdout.txt").open("w")
        process = subprocess.Popen(
            self._command(), cwd=self.base, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + OUTER_LIMIT
            while not self._ready():
                assert process.poll() is None, "the run ended before it was sent SIGTERM"
                assert time.monotonic() < deadline, "the cases never finished"
                time.sleep(0.05)
            if self.mode == "serial":
                before = self.journal.read_bytes()
                self.second = run_session(
                    self.base, "suites", "--agentbench-report=out/run.json", timeout=OUTER_LIMIT
                )
                self.journal_during_second = (before, self.journal.read_bytes())
            process.send_signal(signal.SIGTERM)
            self.returncode = process.wait(timeout=OUTER_LIMIT)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            out.close()
        self.output = (self.base / "stdout.txt").read_text(encoding="utf-8")

    def _ready(self) -> bool:
        finished = self.base / "finished.txt"
        if not (self.base / "reached").exists() or not finished.exists():
            return False
        return len(finished.read_text(encoding="utf-8").splitlines()) >= FINISHED_BEFORE_SIGTERM

    def suite(self, suite_id: str) -> dict[str, Any]:
        (suite,) = [s for s in self.report["suites"] if s["id"] == suite_id]
        return suite

    def problems(self, code: str) -> list[str]:
        return sorted(p for p in self.report["problems"] if p.startswith(f"[{code}]"))


def check_sigterm_ends_the_run_with_the_report_of_what_ran(run: FilesRun) -> None:
    assert run.returncode == pytest.ExitCode.INTERRUPTED, run.output[-3000:]
    assert "INTERNALERROR" not in run.output
    assert "SIGTERM received" in run.output
    blocker = [s for s in run.report["suites"] if s["id"] == "zz-blocker"]
    # Under xdist the controller may not have heard what a worker collected yet: a suite
    # none of whose cases finished may then be missing from the report of an interrupted run.
    assert len(blocker) == 1 or run.mode == "n2"
    for suite in blocker:
        assert suite["counts"]["passed"] + suite["counts"]["failed"] == 0
        assert suite["coverage"]["complete"] is False
    assert (run.base / "junit.xml").is_file()
    assert run.report["exit_status"] == pytest.ExitCode.INTERRUPTED
    # The run log keeps each case that finished, and ends saying the run was interrupted.
    start, *cases, end = (
        json.loads(line) for line in (run.base / "out/run.log.ndjson").read_text().splitlines()
    )
    assert (start["event"], end["event"]) == ("start", "end")
    assert (end["exit_status"], end["interrupted"], end["cases"]) == (2, True, len(cases))
    reported = {case["nodeid"] for suite in run.report["suites"] for case in suite["cases"]}
    assert {case["nodeid"] for case in cases} == reported


def check_case_ids_never_leave_the_record_folder(run: FilesRun) -> None:
    suite = run.suite("ids")
    assert suite["counts"]["passed"] == len(IDS)
    assert list(run.elsewhere.iterdir()) == []
    assert not (run.base.parent / "escaped.json").exists()
    assert not (run.base / "escaped.json").exists()
    names = sorted(path.name for path in (run.base / "records" / "ids").iterdir())
    assert len(names) == len(IDS)
    assert all(len(name.encode()) <= MAX_NAME_BYTES for name in names)
    assert "%2E.%2F..%2Fescaped.json" in names
    assert f"{id_file_name(run.absolute_id)}.json" in names
    # The report keeps every id whole.
    ids = {entry["result"]["case_id"] for entry in suite["cases"]}
    assert {LONG_ASCII, LONG_UTF8, run.absolute_id, "../../escaped"} <= ids


def check_a_full_disk_costs_the_files_it_hits_not_the_run(run: FilesRun) -> None:
    # Every case still ran and the report, JUnit and the other records were written.
    assert run.suite("full")["counts"]["passed"] == 3
    journal, records = run.problems("output_unwritable")
    assert "run.json.progress" in journal
    assert "No space left on device (ENOSPC)" in journal
    assert "/records/full/" in records
    assert records.endswith("(and 2 more files not written)")
    assert not (run.base / "records" / "full").exists() or not any(
        path.suffix == ".json" for path in (run.base / "records" / "full").iterdir()
    )
    # No temporary file is left behind anywhere.
    assert not list(run.base.rglob(".agentbench-*.tmp"))


def check_the_report_path_is_released_and_its_journal_removed(run: FilesRun) -> None:
    assert not run.journal.exists(), "the report was written: the journal has nothing more"
    assert not (run.base / "out" / "run.json.lock").exists()


def check_unsafe_case_ids_are_refused_by_name(run: FilesRun) -> None:
    (escape,) = run.problems("invalid_case_id")
    assert "'red\\x1b[31mtext' holds '\\x1b'" in escape
    assert "\x1b" not in run.output
    (twin,) = run.problems("duplicate_case_id")
    assert "in another Unicode normalisation" in twin
    assert {s["id"] for s in run.report["suites"]}.isdisjoint({"escapes", "twins"})


def check_a_second_run_on_the_path_is_refused_and_destroys_nothing(run: FilesRun) -> None:
    if run.second is None:
        return
    assert run.second.ret == pytest.ExitCode.USAGE_ERROR
    run.second.stderr.fnmatch_lines(["*[[]output_in_use[]]*run.json: --agentbench-report: *"])
    assert run.journal_during_second is not None
    before, after = run.journal_during_second
    assert after == before


def check_an_oversized_tool_argument_is_refused_alike_in_every_mode(run: FilesRun) -> None:
    cases = {entry["result"]["case_id"]: entry["result"] for entry in run.suite("tools")["cases"]}
    characters = {"text": 17825819, "mapping": 17825814}
    for case_id, size in characters.items():
        case = cases[case_id]
        assert (case["outcome"], case["failure_class"]) == ("failed", "agent_error")
        assert case["failure_reason"] == (
            "adapter raised ToolCallError: [invalid_arguments] arguments: arguments of "
            f"{size} characters exceed the limit of 16777216 (agentbench_max_input_bytes)"
        )


CHECKS: list[Callable[[FilesRun], None]] = [
    check_an_oversized_tool_argument_is_refused_alike_in_every_mode,
    check_sigterm_ends_the_run_with_the_report_of_what_ran,
    check_case_ids_never_leave_the_record_folder,
    check_a_full_disk_costs_the_files_it_hits_not_the_run,
    check_the_report_path_is_released_and_its_journal_removed,
    check_unsafe_case_ids_are_refused_by_name,
    check_a_second_run_on_the_path_is_refused_and_destroys_nothing,
]


@pytest.mark.parametrize("mode", list(MODES))
def test_the_files_matrix(mode: str, tmp_path: Path) -> None:
    run = FilesRun(mode, tmp_path)
    failed = []
    for check in CHECKS:
        try:
            check(run)
        except AssertionError as exc:
            failed.append(f"{check.__name__}: {exc}")
    assert not failed, "\n".join(failed) + "\n" + run.output[-4000:]


# --- Sessions of their own --------------------------------------------------------


HANGING = """
import time


class HangsInConstructor:
    def __init__(self):
        time.sleep(1000)

    def answer(self, question):
        return 0
"""


def test_an_adapter_that_hangs_loading_is_a_named_usage_error(tmp_path: Path) -> None:
    (tmp_path / "demo_world.py").write_text(DEMO_SOURCE.read_text(encoding="utf-8"))
    (tmp_path / "conftest.py").write_text(REGISTERING_CONFTEST)
    (tmp_path / "hanging.py").write_text(HANGING)
    (tmp_path / "hangs_at_import.py").write_text(
        "import time\ntime.sleep(1000)\n\n\nclass Agent:\n    pass\n"
    )
    write_suite(tmp_path, "hangs", {"c1": "1+1"})
    sessions = {
        "constructor, serial": ["--agentbench-adapter=hanging:HangsInConstructor"],
        "import, serial": ["--agentbench-adapter=hangs_at_import:Agent"],
        "constructor, n1": ["--agentbench-adapter=hanging:HangsInConstructor", "-n", "1"],
    }
    with ThreadPoolExecutor(len(sessions)) as pool:
        futures = {
            name: pool.submit(
                run_session,
                tmp_path,
                "suites",
                "-o",
                "agentbench_adapter_load_timeout=0.5",
                *args,
                timeout=60,
            )
            for name, args in sessions.items()
        }
    for name, future in futures.items():
        result = future.result()
        assert result.ret == pytest.ExitCode.USAGE_ERROR, name
        result.stderr.fnmatch_lines(
            [
                "*[[]adapter_load_timeout[]] --agentbench-adapter: *0.5s "
                "(agentbench_adapter_load_timeout)"
            ]
        )


def test_outputs_a_run_cannot_write_are_refused_before_it_runs(
    demo: pytest.Pytester,
) -> None:
    write_suite(demo.path, "demo", {"c1": "1+1"})
    (demo.path / "a-folder").mkdir()
    (demo.path / "a-file").write_text("")
    refusals = {
        "--agentbench-report=a-folder": "a-folder: --agentbench-report: Is a directory (EISDIR)",
        "--agentbench-html=a-folder": "a-folder: --agentbench-html: Is a directory (EISDIR)",
        "--agentbench-report=a-file/run.json": "--agentbench-report: Not a directory (ENOTDIR)",
        f"--agentbench-report={'n' * 300}.json": "File name too long (ENAMETOOLONG)",
        "--agentbench-record=a-file": "a-file: --agentbench-record: Not a directory (ENOTDIR)",
        "--agentbench-receipts=a-file/x": "--agentbench-receipts: Not a directory (ENOTDIR)",
    }
    for option, reason in refusals.items():
        result = demo.runpytest(option)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, option
        result.stderr.fnmatch_lines([f"ERROR: [[]output_unwritable[]] *{reason}"])
        assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


def test_a_killed_runs_journal_is_kept_until_a_run_resumes_from_it(
    demo: pytest.Pytester,
) -> None:
    write_suite(demo.path, "demo", {"c1": "1+1", "c2": "1+2"})
    first = demo.runpytest("--agentbench-report=run.json", "-m", "not agentbench_control")
    assert first.ret == pytest.ExitCode.OK
    # What kill -9 leaves: the journal of the run, its report never written.
    report = json.loads((demo.path / "run.json").read_text(encoding="utf-8"))
    journal = demo.path / "run.json.progress"
    header = {
        "schema_version": "agentbench-progress/1",
        "adapter_spec": None,
        "adapter_description": report["adapter"]["description"],
        "repeat": 1,
    }
    entry = report["suites"][0]["cases"][0]
    killed = (
        canonical_json(header)
        + "\n"
        + canonical_json({k: entry[k] for k in ("nodeid", "result")})
        + "\n"
    )
    journal.write_text(killed, encoding="utf-8")
    (demo.path / "run.json").unlink()
    refused = demo.runpytest("--agentbench-report=run.json")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*[[]progress_journal_exists[]]*run.json.progress*"])
    assert journal.read_text(encoding="utf-8") == killed
    resumed = demo.runpytest(
        "--agentbench-report=run.json",
        "--agentbench-resume=run.json",
        "-m",
        "not agentbench_control",
    )
    assert resumed.ret == pytest.ExitCode.OK
    resumed.assert_outcomes(passed=1)
    assert not journal.exists()


def test_case_items_are_capped_with_an_option_to_raise_the_cap(demo: pytest.Pytester) -> None:
    write_suite(demo.path, "demo", {"c1": "1+1", "c2": "1+2"})
    refused = demo.runpytest(
        "--agentbench-repeat=1000", "--agentbench-max-items=1500", "--co", "-q"
    )
    refused.stdout.fnmatch_lines(
        [
            "*[[]too_many_items[]] suites/demo/cases.jsonl: --agentbench-repeat: 2 cases x 1000 "
            "trials would make 2000 case items in this run, over the limit of 1500 *"
        ]
    )
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    allowed = demo.runpytest(
        "--agentbench-repeat=3", "--agentbench-max-items=6", "-m", "not agentbench_control"
    )
    allowed.assert_outcomes(passed=6)
    bad = demo.runpytest("-o", "agentbench_max_items=0")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*[[]invalid_max_items[]] agentbench_max_items: *"])


@pytest.mark.parametrize("value", ["inf", "nan", "-1"])
def test_an_infinite_or_negative_llm_timeout_is_refused_at_start(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    write_suite(demo.path, "demo", {"c1": "1+1"})
    monkeypatch.setenv("AGENTBENCH_LLM_TIMEOUT", value)
    result = demo.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: [[]invalid_llm_setting[]] AGENTBENCH_LLM_TIMEOUT: timeout_s: *'{value}'*"]
    )


def test_rescore_of_a_report_over_a_limit_names_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "big.json"
    with report.open("w", encoding="utf-8") as out:
        out.write('{"padding": "')
        out.write("x" * (16 * 1024 * 1024))
        out.write('", "schema_version": "agentbench-run-report/1"}')
    # No whole-file limit by default: one value over the readers' limit is refused by name.
    code = cli_main(["rescore", str(report)])
    err = capsys.readouterr().err
    assert code != 0
    assert f"[input_too_large] {report}:1: padding: " in err
    assert "unrecognised_report" not in err
    code = cli_main(["rescore", "--max-report-bytes", "1000", str(report)])
    err = capsys.readouterr().err
    assert code != 0
    assert f"[report_too_large] {report}: " in err
    assert "over the limit of 1000 bytes (--max-report-bytes)" in err


# --- The writer and the bounded digest on their own ---------------------------------


def test_id_file_names_are_encoded_bounded_and_distinct() -> None:
    assert id_file_name("a/b") == "a%2Fb"
    assert id_file_name("..") == "%2E."
    assert id_file_name(".hidden") == "%2Ehidden"
    assert id_file_name("/etc/passwd", ".json") == "%2Fetc%2Fpasswd.json"
    assert id_file_name(NFC) != id_file_name(NFD)
    long_names = {id_file_name("%" * 300 + str(n), ".json") for n in range(3)}
    assert len(long_names) == 3
    for name in long_names:
        assert len(name.encode()) <= MAX_NAME_BYTES
        assert name.endswith(".json")
        # An escape is never cut in half before the digest.
        assert "%~" not in name
        assert "%2~" not in name
    assert id_file_name("bad\udcffbyte") == "bad%ED%B3%BFbyte"


def test_a_write_is_whole_or_leaves_what_was_there(tmp_path: Path) -> None:
    path = tmp_path / "made" / "here.json"
    write_file(path, "first\n")

    def stop_midway() -> None:
        with writing(path) as stream:
            stream.write(b"half of the sec")
            raise RuntimeError("the writer stops midway")

    with pytest.raises(RuntimeError):
        stop_midway()
    assert path.read_text() == "first\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["here.json"]
    # A link at the destination is replaced, never written through.
    target = tmp_path / "target.txt"
    target.write_text("untouched")
    link = tmp_path / "made" / "link.json"
    link.symlink_to(target)
    write_file(link, "mine")
    assert target.read_text() == "untouched"
    assert not link.is_symlink()
    assert link.read_text() == "mine"
    # No folder on the way is followed either.
    (tmp_path / "linked").symlink_to(tmp_path / "made")
    with pytest.raises(AgentbenchError) as linked:
        write_file(tmp_path / "linked" / "other.json", "x")
    assert linked.value.code == "output_unwritable"
    assert "(ELOOP)" in linked.value.reason or "(ENOTDIR)" in linked.value.reason
    with pytest.raises(AgentbenchError) as again:
        write_new_file(path, b"never", "artifact_write_failed")
    assert (again.value.code, path.read_text()) == ("artifact_write_failed", "first\n")


def test_a_failed_fsync_leaves_no_file_and_names_the_errno(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(AgentbenchError) as refused:
        write_file(tmp_path / "report.json", "{}")
    assert refused.value.render() == (
        f"[output_unwritable] {tmp_path / 'report.json'}: No space left on device (ENOSPC)"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_report_path_is_held_by_one_run(tmp_path: Path) -> None:
    report = tmp_path / "run.json"
    held = OutputLock(report, "--agentbench-report")
    with pytest.raises(AgentbenchError) as refused:
        OutputLock(report, "--agentbench-report")
    assert refused.value.code == "output_in_use"
    assert f"process {os.getpid()}" in refused.value.reason
    held.release()
    OutputLock(report, "--agentbench-report").release()
    assert list(tmp_path.iterdir()) == []


def test_a_digest_refuses_an_oversized_file_before_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "stray.bin"
    with path.open("wb") as out:
        out.truncate(1 << 30)  # a sparse gigabyte: reading it whole would cost one
    previous = set_input_limits(InputLimits(max_bytes=1024))
    try:
        with pytest.raises(AgentbenchError) as refused:
            file_sha256(path, display="suites/x/stray.bin")
    finally:
        set_input_limits(previous)
    assert refused.value.code == "input_too_large"
    assert f"({1 << 30} bytes)" in refused.value.reason
    small = tmp_path / "small.txt"
    small.write_bytes(b"abc")
    assert file_sha256(small) == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


@pytest.mark.inner_snapshots
def test_case_ids_that_would_share_a_golden_file_are_refused(demo: pytest.Pytester) -> None:
    # syrupy drops "/" from a file name: both would pin, and pass against, one file.
    write_suite(demo.path, "demo", {"a/b": "1+1", "ab": "1+2", "plain": "1+3"})
    result = demo.runpytest(
        "--agentbench-snapshot", "--snapshot-update", "-m", "not agentbench_control", "-rA"
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*[[]unusable_snapshot_name[]] suites/demo/cases.jsonl: case ids 'a/b' and 'ab' "
            "share the golden file 'ab.json'*"
        ]
    )
    assert sorted(p.name for p in (demo.path / "snapshots" / "demo" / "cases").iterdir()) == [
        "plain.json"
    ]


def test_a_stray_gigabyte_in_a_tool_grammar_suite_is_refused_unread(tmp_path: Path) -> None:
    from pytest_agentbench.worlds.toolgrammar.suitefiles import (
        MANIFEST,
        SCHEMA_VERSION,
        verify_files,
    )

    (tmp_path / MANIFEST).write_text(
        json.dumps({"schema_version": SCHEMA_VERSION, "artifact_set_digest": "0" * 64})
    )
    (tmp_path / "tasks.jsonl").write_text("{}\n")
    with (tmp_path / "stray.bin").open("wb") as out:
        out.truncate(1 << 30)
    with pytest.raises(AgentbenchError) as refused:
        verify_files(tmp_path, "suites/tg", MANIFEST, exclude=("suite.yaml",))
    assert refused.value.render() == (
        f"[input_too_large] suites/tg/stray.bin: the file ({1 << 30} bytes) exceeds the "
        "limit of 16777216 bytes (agentbench_max_input_bytes)"
    )


def test_the_page_of_a_report_over_the_input_limit_is_still_drawn(demo: pytest.Pytester) -> None:
    write_suite(demo.path, "demo", {f"c{n}": f"1+{n}" for n in range(12)})
    result = demo.runpytest(
        "-o",
        "agentbench_max_input_bytes=4000",
        "--agentbench-report=run.json",
        "--agentbench-html=run.html",
        "-m",
        "not agentbench_control",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert (demo.path / "run.json").stat().st_size > 4000
    page = (demo.path / "run.html").read_text(encoding="utf-8")
    assert "c11" in page


def test_a_full_disk_known_before_the_run_is_a_usage_error(
    demo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_suite(demo.path, "demo", {"c1": "1+1"})
    real = os.statvfs

    def full(path: Any) -> Any:
        found = real(path)
        values = list(found)
        values[4] = 0  # f_bavail: no block left for an unprivileged writer
        return os.statvfs_result(values)

    monkeypatch.setattr(os, "statvfs", full)
    result = demo.runpytest("--agentbench-report=out/run.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: [[]output_unwritable[]] *out/run.json: --agentbench-report: "
            "No space left on device (ENOSPC)"
        ]
    )
