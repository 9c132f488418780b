"""The trust boundary: what a cheating adapter reaches in-process, and isolated.

The cheater walks the caller's stack frames for the world and the suite (as
any adapter can in-process) and has the world read the oracle folder for it;
failing that it searches the whole heap for a loaded oracle or a suite
object. It logs what it found, and whether the oracle folder's path is held
by any object of its process (a string in a container, a path object).
In-process it passes every case: the documented trust boundary. Isolated it
finds nothing and fails every case it is given.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sdk.packaged import packaged_suites

SUITE_ID = "asteria-authored-v1"

CHEATER = """
import gc
import json
import os
import sys
from pathlib import Path

LOG = Path(__file__).resolve().parent / "cheat.jsonl"
ORACLE_PATH = os.environ["CHEAT_ORACLE_PATH"]


def _from_frames():
    frame = sys._getframe(1)
    while frame is not None:
        world, suite = frame.f_locals.get("world"), frame.f_locals.get("suite")
        if hasattr(world, "load_oracle") and hasattr(suite, "oracle_root"):
            return world.load_oracle(suite)
        frame = frame.f_back
    return None


def _from_heap():
    for obj in gc.get_objects():
        if isinstance(obj, dict) and "agentbench.oracle" in obj:
            return obj["agentbench.oracle"]
        if hasattr(type(obj), "oracle_root") and hasattr(obj, "data"):
            from pytest_agentbench.worlds.authority.world import WORLD
            return WORLD.load_oracle(obj)
    return None


def _strings(obj):
    if isinstance(obj, dict):
        yield from (item for pair in obj.items() for item in pair)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        yield from obj
    elif isinstance(obj, os.PathLike):
        yield os.fspath(obj)


def _oracle_path_in_heap():
    own = globals()
    return any(
        isinstance(text, str) and ORACLE_PATH in text
        for obj in gc.get_objects()
        if obj is not own
        for text in _strings(obj)
    )


def _row(oracle, event_id):
    truth, binding = oracle.truth[event_id], oracle.bindings[event_id]
    return {
        "event_id": event_id,
        "originating_principal_id": binding.originating_principal_id,
        "logical_agent_id": binding.logical_agent_id,
        "runtime_principal_id": binding.runtime_principal_id,
        "credential_subject_id": binding.credential_subject_id,
        "attributed_actor_id": binding.attributed_actor_id,
        "accountable_owner_chain": list(binding.accountable_owner_chain),
        "decision": truth.decision_at_action,
        "decision_at_audit": truth.decision_at_audit,
        "policy_version": truth.expected_policy_version,
        "delegation_chain_ids": list(truth.delegation_chain_ids),
        "evidence_refs": list(truth.required_evidence_refs),
        "reconstructable_from_retained_evidence": truth.reconstructable_at_audit,
        "side_effect": truth.expected_side_effect,
    }


class Cheater:
    def trace_action(self, bundle, event_id):
        found, oracle = "frames", _from_frames()
        if oracle is None:
            found, oracle = "heap", _from_heap()
        entry = {
            "pid": os.getpid(),
            "found": None if oracle is None else found,
            "oracle_path_in_heap": _oracle_path_in_heap(),
        }
        with LOG.open("a") as handle:
            handle.write(json.dumps(entry) + "\\n")
        return {"event_id": event_id} if oracle is None else _row(oracle, event_id)
"""


def _oracle_root() -> Path:
    return (packaged_suites()[SUITE_ID] / "../../oracles" / SUITE_ID).resolve()


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    report = pytester.path / "run.json"
    # In-process the cheater reads only the frames of the session it runs in, which can run
    # in this process; isolated, in a process of its own: an inner session in this one
    # imports the world afresh, whose views then cannot be pickled by their class's name.
    options = (
        f"--agentbench-suite={SUITE_ID}",
        "--agentbench-adapter=cheat:Cheater",
        f"--agentbench-report={report}",
        "-m",
        "not agentbench_control",
        "-p",
        "no:cacheprovider",
        *args,
    )
    if "--agentbench-isolate" in args:
        result = pytester.runpytest_subprocess(*options, timeout=240)
    else:
        result = pytester.runpytest(*options)
    return result, json.loads(report.read_text())


@pytest.fixture
def cheater(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    assert (_oracle_root() / "authority_truth.jsonl").is_file()
    monkeypatch.setenv("CHEAT_ORACLE_PATH", str(_oracle_root()))
    pytester.makepyfile(cheat=CHEATER)
    pytester.syspathinsert()
    return pytester


def _log(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    lines = (pytester.path / "cheat.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_in_process_an_adapter_can_read_the_oracle_through_one_stack_frame(
    cheater: pytest.Pytester,
) -> None:
    result, report = _run(cheater)
    result.assert_outcomes(passed=11)
    (suite,) = report["suites"]
    metrics = {metric["name"]: metric["value"] for metric in suite["metrics"]}
    assert metrics["authorization_decision_accuracy"] == 1.0
    log = _log(cheater)
    assert len(log) == 11
    assert {entry["found"] for entry in log} == {"frames"}


ISOLATED_CASES = (
    "evt-010-authorised-comparison",
    "evt-011-supplier-directory-read",
    "evt-012-quotation-request",
)
"""The isolated run's cases: a few calls in one process show what every call finds, and
each searches the whole heap twice (its cost, in a process of its own)."""


@pytest.mark.usefixtures("process_isolation_only")
def test_isolated_the_adapter_cannot_reach_the_oracle(cheater: pytest.Pytester) -> None:
    result, report = _run(cheater, "--agentbench-isolate", "-k", " or ".join(ISOLATED_CASES))
    result.assert_outcomes(failed=len(ISOLATED_CASES))
    (suite,) = report["suites"]
    metrics = {metric["name"]: metric["value"] for metric in suite["metrics"]}
    assert metrics["authorization_decision_accuracy"] == 0.0
    log = _log(cheater)
    assert len(log) == len(ISOLATED_CASES)
    # Every call ran in a process that is not pytest's, found no oracle, and holds
    # no object naming the oracle folder.
    assert {entry["found"] for entry in log} == {None}
    assert not any(entry["oracle_path_in_heap"] for entry in log)
    assert os.getpid() not in {entry["pid"] for entry in log}
