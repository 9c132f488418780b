"""A small world kind used to prove the core, registered as a third party would.

Suite folder: ``suite.yaml`` plus ``cases.jsonl`` (``{"id", "question"}`` lines,
``question`` being two integers to add, like ``"2+3"``) and ``manifest.json``
holding the ``sha256-artifact-set-v1`` digest of the public files. Oracle folder:
``answers.jsonl`` (``{"id", "answer", "canary"}``). Adapters implement
``answer(question) -> int``. The world refuses non-integer answers as malformed.

The interactive variant, kind ``demo-tools``, reads the same layout and runs
the tool-session contract: the generic :class:`~pytest_agentbench.sdk.tools.ToolAgent`
gets ``{"question"}`` and tools ``add`` and ``divide`` (budget from the suite's
``options``: ``max_calls``, ``max_bytes``) and returns ``{"answer": int}``; an
``answer(question)`` adapter still works there too (``adapter_protocols``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_agentbench.sdk.canonical import (
    artifact_set_digest,
    canonical_json,
    iter_jsonl,
    pretty_json,
    read_json,
    read_jsonl,
    sha256_hex,
    tree_files,
)
from pytest_agentbench.sdk.contracts import (
    Case,
    CaseResult,
    Check,
    CheckStatus,
    ControlAgent,
    MetricSpec,
    Outcome,
    Record,
    grade,
)
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.hookspecs import hookimpl
from pytest_agentbench.sdk.runner import MalformedOutput, call_adapter
from pytest_agentbench.sdk.suite import Suite
from pytest_agentbench.sdk.tools import (
    Budget,
    Receipt,
    ToolAgent,
    ToolCallError,
    ToolSession,
    ToolSpec,
    parse_final,
    solve_with_session,
)

CASES_FILE = "cases.jsonl"
ORACLE_SEAL = "seal.json"
MANIFEST = "manifest.json"


@runtime_checkable
class DemoAdapter(Protocol):
    def answer(self, question: str) -> Any: ...


class Reference:
    def answer(self, question: str) -> int:
        left, right = question.split("+")
        return int(left) + int(right)


class AlwaysZero:
    def answer(self, question: str) -> int:
        return 0


class SlowAdder(Reference):
    """CPU-bound reference: burns ``work`` milliseconds per case (for xdist speed-up)."""

    def __init__(self, work_ms: float = 20.0) -> None:
        self.work_ms = work_ms

    def answer(self, question: str) -> int:
        deadline = time.perf_counter() + self.work_ms / 1000
        while time.perf_counter() < deadline:
            pass
        return super().answer(question)


class DemoWorld:
    kind = "demo"
    adapter_protocol: type = DemoAdapter

    def load_suite(self, suite: Suite) -> dict[str, Any]:
        manifest_name = suite.display(MANIFEST)
        manifest = read_json(suite.root / MANIFEST, display=manifest_name)
        files = tree_files(suite.root, exclude=("suite.yaml", MANIFEST))
        actual = artifact_set_digest({rel: path.read_bytes() for rel, path in files.items()})
        if manifest.get("artifact_set_digest") != actual:
            raise AgentbenchError(
                "digest_mismatch",
                f"artifact set digest is {actual}, manifest says "
                f"{manifest.get('artifact_set_digest')}",
                file=manifest_name,
                field="artifact_set_digest",
            )
        cases: list[Case] = []
        questions: dict[str, str] = {}
        for line in read_jsonl(suite.root / CASES_FILE, display=suite.display(CASES_FILE)):
            row = line.value
            if not isinstance(row, dict) or set(row) - {"id", "question", "labels"}:
                raise AgentbenchError(
                    "invalid_row",
                    "expected {id, question[, labels]}",
                    file=suite.display(CASES_FILE),
                    line=line.line,
                )
            if not isinstance(row.get("question"), str):
                raise AgentbenchError(
                    "invalid_field",
                    "must be a string",
                    file=suite.display(CASES_FILE),
                    line=line.line,
                    field="question",
                )
            questions[row["id"]] = row["question"]
            cases.append(
                Case(
                    suite_id=suite.id,
                    case_id=row["id"],
                    file=CASES_FILE,
                    line=line.line,
                    labels=tuple(row.get("labels", ())),
                )
            )
        return {"cases": cases, "questions": questions}

    def cases(self, suite: Suite) -> Sequence[Case]:
        cases: list[Case] = suite.data["cases"]
        return cases

    def public_view(self, suite: Suite, case: Case) -> dict[str, str]:
        return {"question": suite.data["questions"][case.case_id]}

    def reference_agent(self) -> Reference:
        return Reference()

    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        value = call_adapter(adapter.answer, view["question"])
        if not isinstance(value, int) or isinstance(value, bool):
            raise MalformedOutput(f"answer must be an integer, got {type(value).__name__}")
        return Outcome(output={"answer": value})

    def load_oracle(self, suite: Suite) -> dict[str, dict[str, Any]]:
        path = suite.oracle_root / "answers.jsonl"
        sealed = suite.oracle_root / ORACLE_SEAL
        if sealed.is_file():
            # A sealed oracle (``write_demo_suite(sealed_oracle=True)``) proves it is unchanged.
            expected = read_json(sealed, display=str(sealed)).get("answers_sha256")
            if sha256_hex(path.read_bytes()) != expected:
                raise AgentbenchError(
                    "digest_mismatch",
                    f"answers.jsonl does not match the sealed digest {expected}",
                    file=str(path),
                )
        return {line.value["id"]: line.value for line in read_jsonl(path)}

    def evaluate(self, suite: Suite, case: Case, outcome: Outcome, oracle: Any) -> CaseResult:
        expected = oracle[case.case_id]["answer"]
        actual = None if outcome.output is None else outcome.output["answer"]
        present = Check(
            name="answer_present",
            status=CheckStatus.PASS if actual is not None else CheckStatus.MISSING,
            expected="an integer",
            actual=actual,
        )
        correct = Check(
            name="answer_correct",
            status=(
                CheckStatus.MISSING
                if actual is None
                else CheckStatus.PASS
                if actual == expected
                else CheckStatus.FAIL
            ),
            expected=expected,
            actual=actual,
        )
        return grade(
            case,
            [present, correct],
            measurements={
                "correct": int(actual == expected),
                "scored": 1,
                "zero": int(actual == 0),
            },
            findings=["wrong_answer"] if actual is not None and actual != expected else [],
            outcome=outcome,
        )

    def metrics(self, suite: Suite) -> Sequence[MetricSpec]:
        return [
            MetricSpec(
                name="accuracy",
                family="answers",
                numerator="correct",
                denominator="scored",
                support_meaning="scored cases",
            ),
            MetricSpec(
                name="zero_rate",
                family="answers",
                direction="lower_is_better",
                numerator="zero",
                denominator="scored",
                support_meaning="scored cases",
            ),
        ]

    def dimensions(self, suite: Suite) -> Sequence[str]:
        return ["answer_present", "answer_correct"]

    def control_agents(self, suite: Suite) -> Sequence[ControlAgent]:
        return [
            ControlAgent(agent_id="reference", role="reference", factory=Reference),
            ControlAgent(agent_id="always_zero", role="negative", factory=AlwaysZero),
        ]

    def leak_canaries(self, suite: Suite, oracle: Any) -> Sequence[str]:
        return [row["canary"] for row in oracle.values()]

    def predictions_adapter(self, suite: Suite, path: Path) -> Any:
        answers = {
            line.value["id"]: line.value["answer"]
            for line in iter_jsonl(path.read_text(encoding="utf-8"), file=str(path))
        }
        by_question = {suite.data["questions"][cid]: value for cid, value in answers.items()}

        class Predictions:
            def answer(self, question: str) -> Any:
                return by_question.get(question)

        return Predictions()


class DemoFinal(Record):
    """The final answer of ``demo-tools`` (its published schema: ``model_json_schema()``)."""

    answer: int


TASK_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["question"],
    "properties": {"question": {"type": "string"}},
}
"""The published schema of the ``demo-tools`` task view."""

OPERANDS = {
    "type": "object",
    "additionalProperties": False,
    "required": ["a", "b"],
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
}
OPERAND_LIMIT = 10**6


def add(arguments: dict[str, Any]) -> dict[str, int]:
    a, b = arguments["a"], arguments["b"]
    if max(abs(a), abs(b)) > OPERAND_LIMIT:
        raise ToolCallError("operand_too_large", f"operands are limited to {OPERAND_LIMIT}")
    return {"sum": a + b}


def divide(arguments: dict[str, Any]) -> dict[str, int]:
    # Deliberately unguarded: b == 0 is how tests provoke a handler failure.
    return {"quotient": arguments["a"] // arguments["b"]}


DEMO_TOOLS = (
    ToolSpec(name="add", description="Add two integers.", parameters=OPERANDS, handler=add),
    ToolSpec(
        name="divide", description="Integer division a // b.", parameters=OPERANDS, handler=divide
    ),
)


class ToolReference:
    """Adds the question's operands with the ``add`` tool."""

    def solve(self, task: dict[str, Any], session: ToolSession) -> dict[str, int]:
        left, right = task["question"].split("+")
        result = session.call("add", {"a": int(left), "b": int(right)})
        return {"answer": result["sum"]}


class ToolAlwaysZero:
    def solve(self, task: dict[str, Any], session: ToolSession) -> dict[str, int]:
        return {"answer": 0}


class ToolReckless(ToolReference):
    """Right answers, after an unknown tool and malformed arguments."""

    def solve(self, task: dict[str, Any], session: ToolSession) -> dict[str, int]:
        for name, arguments in (("subtract", {}), ("add", '{"a": 1}')):
            with contextlib.suppress(ToolCallError):
                session.call(name, arguments)
        return super().solve(task, session)


def accept_final(raw: Any) -> dict[str, Any]:
    final: dict[str, Any] = parse_final(raw, DemoFinal).model_dump(mode="json")
    return final


class InteractiveDemoWorld(DemoWorld):
    kind = "demo-tools"
    adapter_protocol: type = ToolAgent
    adapter_protocols: tuple[type, ...] = (ToolAgent, DemoAdapter)

    def budget(self, suite: Suite) -> Budget:
        options = suite.config.options
        return Budget(
            max_calls=options.get("max_calls", 4), max_bytes=options.get("max_bytes", 200)
        )

    def reference_agent(self) -> Any:
        return ToolReference()

    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        if not isinstance(adapter, ToolAgent):
            return super().run(suite, case, view, adapter)
        session = ToolSession(
            DEMO_TOOLS,
            self.budget(suite),
            context={"suite": suite.id, "case": case.case_id},
            final_schema=DemoFinal.model_json_schema(),
        )
        return solve_with_session(adapter, dict(view), session, accept_final)

    def evaluate(self, suite: Suite, case: Case, outcome: Outcome, oracle: Any) -> CaseResult:
        graded = super().evaluate(suite, case, outcome, oracle)
        receipt = None if outcome.receipt is None else Receipt.model_validate(outcome.receipt)
        calls = () if receipt is None else receipt.canonical.calls
        refused = sum(call.error is not None for call in calls)
        clean = Check(
            name="calls_clean",
            status=CheckStatus.PASS if refused == 0 else CheckStatus.FAIL,
            expected=0,
            actual=refused,
            detail="tool calls that ended in an error",
        )
        findings = [*graded.findings, *(["refused_call"] if refused else [])]
        return grade(
            case,
            [*graded.checks, clean],
            measurements={
                **graded.measurements,
                "calls": len(calls),
                "clean_calls": len(calls) - refused,
            },
            findings=findings,
            outcome=outcome,
        )

    def metrics(self, suite: Suite) -> Sequence[MetricSpec]:
        return [
            *super().metrics(suite),
            MetricSpec(
                name="clean_call_rate",
                family="tools",
                numerator="clean_calls",
                denominator="calls",
                support_meaning="tool calls",
            ),
        ]

    def dimensions(self, suite: Suite) -> Sequence[str]:
        return [*super().dimensions(suite), "calls_clean"]

    def control_agents(self, suite: Suite) -> Sequence[ControlAgent]:
        return [
            ControlAgent(agent_id="reference", role="reference", factory=ToolReference),
            ControlAgent(agent_id="always_zero", role="negative", factory=ToolAlwaysZero),
            ControlAgent(agent_id="reckless", role="negative", factory=ToolReckless),
        ]


WORLD = DemoWorld()
TOOLS_WORLD = InteractiveDemoWorld()


@hookimpl
def pytest_agentbench_world_kinds() -> list[DemoWorld]:
    return [WORLD, TOOLS_WORLD]


def write_demo_suite(
    base: Path,
    suite_id: str = "demo-suite",
    *,
    questions: dict[str, str] | None = None,
    answers: dict[str, int] | None = None,
    controls: str | None = None,
    extra_suite_yaml: str = "",
    world: str = "demo",
    labels: dict[str, list[str]] | None = None,
    sealed_oracle: bool = False,
) -> Path:
    """Write ``suites/<id>`` and ``oracles/<id>`` under ``base``; returns the suite folder."""
    questions = questions or {"c1": "1+1", "c2": "2+3", "c3": "10+5"}
    answers = answers or {cid: Reference().answer(q) for cid, q in questions.items()}
    suite_dir = base / "suites" / suite_id
    oracle_dir = base / "oracles" / suite_id
    suite_dir.mkdir(parents=True, exist_ok=True)
    oracle_dir.mkdir(parents=True, exist_ok=True)
    (suite_dir / "suite.yaml").write_text(
        f"id: {suite_id}\nversion: 1.0.0\nworld: {world}\ntitle: Demo {suite_id}\n"
        f"{extra_suite_yaml}",
        encoding="utf-8",
    )
    labels = labels or {}
    (suite_dir / CASES_FILE).write_text(
        "".join(
            f'{{"id": "{cid}", "question": "{q}"'
            + (f', "labels": {canonical_json(labels[cid])}' if cid in labels else "")
            + "}\n"
            for cid, q in questions.items()
        ),
        encoding="utf-8",
    )
    files = {CASES_FILE: (suite_dir / CASES_FILE).read_bytes()}
    (suite_dir / MANIFEST).write_text(
        pretty_json({"artifact_set_digest": artifact_set_digest(files)}), encoding="utf-8"
    )
    (oracle_dir / "answers.jsonl").write_text(
        "".join(
            f'{{"id": "{cid}", "answer": {value}, "canary": "CANARY-{cid}-7f3a"}}\n'
            for cid, value in answers.items()
        ),
        encoding="utf-8",
    )
    if sealed_oracle:
        digest = sha256_hex((oracle_dir / "answers.jsonl").read_bytes())
        (oracle_dir / ORACLE_SEAL).write_text(
            pretty_json({"answers_sha256": digest}), encoding="utf-8"
        )
    if controls is not None:
        (oracle_dir / "controls.yaml").write_text(controls, encoding="utf-8")
    return suite_dir


REGISTERING_CONFTEST = "from demo_world import pytest_agentbench_world_kinds\n"
"""A conftest's first line that registers this world in a pytester project (the
``demo`` fixture's whole conftest); a test's own conftest hooks follow it."""


DEMO_CONTROLS = """\
schema_version: 1
suite: demo-suite
provenance: authored by hand for the core's tests
controls:
  - id: always-zero
    agent: always_zero
    intervention: answers 0 to every question
    guarantee: answers are computed, not constant
    must_fail: [answer_correct]
    required_findings: [wrong_answer]
    must_pass: [answer_present]
    expected_metrics: {accuracy: 0.0, zero_rate: 1.0}
"""

DEMO_TOOLS_CONTROLS = """\
schema_version: 1
suite: demo-tools-suite
provenance: authored by hand for the core's tests
controls:
  - id: always-zero
    agent: always_zero
    intervention: answers 0 without calling a tool
    guarantee: answers are computed, not constant
    must_fail: [answer_correct]
    required_findings: [wrong_answer]
    must_pass: [answer_present, calls_clean]
    expected_metrics: {accuracy: 0.0, zero_rate: 1.0, clean_call_rate: null}
  - id: reckless
    agent: reckless
    intervention: calls an unknown tool and sends malformed arguments before answering
    guarantee: refused tool calls are visible to grading
    must_fail: [calls_clean]
    required_findings: [refused_call]
    must_pass: [answer_present, answer_correct]
"""
