"""One trial: the per-step delivery rules (section 3) and the trajectory receipt (section 6).

A :class:`Trial` sits between an agent and a backend. Every tool choice goes
through :meth:`Trial.tool_call`, which applies the delivery rules in order
(call budget, backend failure, result shape, task visibility, byte budget) and
records the call; the agent's history holds delivered calls only, each with
the model-visible projection. :meth:`Trial.finish` parses the final envelope.
:meth:`Trial.canonical` is the receipt's canonical partition: a rerun of
unchanged inputs gives the same bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_agentbench.worlds.retrieval import tools
from pytest_agentbench.worlds.retrieval.backends import BackendError, TaskScope
from pytest_agentbench.worlds.retrieval.envelope import parse_final
from pytest_agentbench.worlds.retrieval.jscanon import fingerprint
from pytest_agentbench.worlds.retrieval.models import URI, Task
from pytest_agentbench.worlds.retrieval.spans import span_hash

SCHEMA_VERSION = "1.0"
ZERO_FINGERPRINT = "0" * 64
RUNNER = "agentic-runner-v1"
TRIAL_ID = "fixture-01"
SEED = 0
PROMPT_TEXT = (
    "You answer a retrieval task with tools. Search the task's collections, read the exact "
    "source lines you rely on, and stop with one final JSON envelope: "
    '{"schemaVersion":"1.0","claims":[{"claimKey","value":{"type","value"},"citations":[...]}],'
    '"gaps":[{"claimKey","reason"}],"abstained":bool,"stopReason"}. Cite every claim with the '
    "exact coordinates of evidence you were shown; record a gap instead of guessing. The "
    "envelope has no prose field."
)


class TrialEnded(Exception):
    """The trial ended on a failure; the agent may not call again."""

    def __init__(self, failure_class: str, code: str) -> None:
        super().__init__(f"{failure_class}: {code}")
        self.failure_class = failure_class
        self.code = code


@dataclass(frozen=True)
class Identity:
    task_id: str
    adapter_id: str
    agent_id: str
    lifecycle: str
    trial_id: str = TRIAL_ID
    seed: int | None = SEED

    def as_json(self) -> dict[str, Any]:
        return {
            "taskId": self.task_id,
            "adapterId": self.adapter_id,
            "trialId": self.trial_id,
            "seed": self.seed,
            "lifecycle": self.lifecycle,
            "agentId": self.agent_id,
        }


def prompt_fingerprint(task: Mapping[str, Any]) -> str:
    return fingerprint({"system": PROMPT_TEXT, "brief": task["brief"], "claims": task["claims"]})


def model_fingerprint(agent_id: str, state_machine: str | None) -> str:
    spec: dict[str, Any] = {"agent": agent_id}
    if state_machine is not None:
        spec["stateMachine"] = state_machine
    return fingerprint(spec)


# The runtime is the runner's identity: receipts are compared across machines,
# so the platform goes to the observations, not into the canonical partition.
RUNTIME_FINGERPRINT = fingerprint({"runner": RUNNER, "runtime": "pytest-agentbench"})


def capabilities(backend: Any) -> dict[str, Any]:
    hashes = bool(getattr(backend, "backend_hashes", False))
    return {
        "backendInvocationAccounting": callable(getattr(backend, "invocations", None)),
        "startupTiming": False,
        "modelLoadTiming": False,
        "toolTiming": True,
        "tools": {"search": "supported", "get": "supported", "multi_get": "supported"},
        "exactLineSpans": "supported",
        "measuredTokens": "unavailable",
        "backendHashes": "supported" if hashes else "unsupported",
        "lifecycle": {"cold": "supported", "warm": "supported"},
    }


@dataclass
class Trial:
    task: Task
    raw_task: Mapping[str, Any]
    scope: TaskScope
    backend: Any
    identity: Identity
    corpus_fingerprint: str
    config_fingerprint: str
    index_fingerprint: str
    model: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    delivered_bytes: int = 0
    failure: tuple[str, str] | None = None
    envelope: dict[str, Any] | None = None
    done: bool = False
    diagnostics: list[str] = field(default_factory=list)
    tool_ms: float = 0.0
    clock: Callable[[], float] = time.perf_counter

    # -- steps ---------------------------------------------------------------

    def fail(self, failure_class: str, code: str, message: str | None = None) -> TrialEnded:
        if not self.done:
            self.failure = (failure_class, code)
            self.done = True
            if message:
                self.diagnostics.append(f"{code}: {message}")
        return TrialEnded(failure_class, code)

    def step(self, step: Any) -> None:
        """One step of a step-driven agent: ``{kind: tool|final, ...}``."""
        if self.done:
            return
        if not isinstance(step, dict) or step.get("kind") not in ("tool", "final"):
            raise self.fail("agent_error", "invalid_agent_step", "a step is {kind: tool|final}")
        if step["kind"] == "final":
            if set(step) != {"kind", "envelope"}:
                raise self.fail("agent_error", "invalid_agent_step", "a final step has envelope")
            self.finish(step["envelope"])
            return
        if set(step) != {"kind", "toolName", "arguments"}:
            raise self.fail(
                "agent_error", "invalid_agent_step", "a tool step has toolName and arguments"
            )
        self.tool_call(step["toolName"], step["arguments"])

    def tool_call(self, name: Any, arguments: Any) -> dict[str, Any]:
        """Apply the delivery rules to one tool choice; the projection if delivered."""
        if self.done:
            code = self.failure[1] if self.failure else "trial_finished"
            raise TrialEnded(self.failure[0] if self.failure else "agent_error", code)
        if not isinstance(name, str) or name not in self.task.allowedTools:
            raise self.fail("agent_error", "disallowed_tool", f"{name!r} is not allowed")
        if name not in tools.INPUT_SCHEMAS:
            raise self.fail("agent_error", "invalid_agent_step", f"{name!r} is not a tool")
        problem = tools.schema_problem(tools.INPUT_SCHEMAS[name], arguments)
        if problem is not None:
            raise self.fail("agent_error", "invalid_agent_action", problem)
        if len(self.calls) >= self.task.budgets.maxAgentCalls:
            return self._undelivered(name, arguments, "agent_error", "agent_call_budget_exceeded")
        refusal = self._outside_scope(name, arguments)
        if refusal is not None:
            return self._undelivered(name, arguments, "agent_error", refusal)
        started = self.clock()
        try:
            result = self.backend.call(name, dict(arguments), self.scope)
        except BackendError as exc:
            return self._undelivered(name, arguments, exc.failure_class, exc.code, exc=exc)
        except TimeoutError as exc:
            return self._undelivered(name, arguments, "product_error", "tool_timeout", exc=exc)
        except Exception as exc:
            return self._undelivered(name, arguments, "product_error", "tool_call_failed", exc=exc)
        finally:
            self.tool_ms += (self.clock() - started) * 1000
        invocations = self._invocations(name)
        problem = tools.result_problem(result)
        if problem is None:
            problem = self._unobserved(result)
        if problem is not None:
            self.diagnostics.append(f"invalid_tool_result: {problem}")
            return self._undelivered(
                name, arguments, "harness_error", "invalid_tool_result", invocations=invocations
            )
        foreign = [e["uri"] for e in result["evidence"] if e["uri"] not in self.scope.docs]
        if foreign:
            self.diagnostics.append(f"foreign_result: {foreign[0]}")
            return self._undelivered(
                name, arguments, "product_error", "foreign_result", invocations=invocations
            )
        projected = tools.projection(result)
        size = tools.visible_bytes(projected)
        if self.delivered_bytes + size > self.task.budgets.maxModelVisibleBytes:
            return self._undelivered(
                name,
                arguments,
                "agent_error",
                "context_byte_budget_exceeded",
                result=result,
                invocations=invocations,
            )
        self.delivered_bytes += size
        self.calls.append(
            self._record(
                name,
                arguments=arguments,
                result=result,
                delivered=True,
                failure_code=None,
                size=size,
                invocations=invocations,
            )
        )
        self.history.append(
            {
                "callIndex": len(self.calls) - 1,
                "toolName": name,
                "arguments": arguments,
                "result": projected,
            }
        )
        return projected

    def finish(self, raw: Any) -> None:
        if self.done:
            return
        parsed = parse_final(raw, self.task)
        self.done = True
        if parsed.failure_code is not None:
            self.failure = ("agent_error", parsed.failure_code)
            self.diagnostics.append(f"{parsed.failure_code}: {parsed.message}")
            return
        self.envelope = parsed.envelope

    # -- helpers -------------------------------------------------------------

    def _invocations(self, name: str) -> int:
        counter = getattr(self.backend, "invocations", None)
        return int(counter(name)) if callable(counter) else 0

    def _outside_scope(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        """The task visibility boundary, enforced before the backend sees the call."""
        if name == "search":
            collection = arguments.get("collection")
            if collection is None:
                return None if len(self.scope.collections) == 1 else "collection_required"
            return None if collection in self.scope.collections else "foreign_collection"
        uris = [arguments["uri"]] if name == "get" else list(arguments["uris"])
        for uri in uris:
            match = URI.match(uri)
            if match is None or match.group(1) not in self.scope.collections:
                return "foreign_uri"
        return None

    def _unobserved(self, result: Mapping[str, Any]) -> str | None:
        """Evidence must be exact fixture bytes: source hash and span of the snapshot."""
        for index, entry in enumerate(result["evidence"]):
            doc = self.scope.docs.get(entry["uri"])
            if doc is None:
                continue  # a foreign result, refused next
            if entry["sourceHash"] != doc.source_hash:
                return f"evidence[{index}].sourceHash is not the snapshot's"
            if (
                span_hash(list(doc.lines), entry["startLine"], entry["endLine"])
                != entry["spanHash"]
            ):
                return (
                    f"evidence[{index}] text is not lines {entry['startLine']}-{entry['endLine']}"
                )
        return None

    def _record(
        self,
        name: str,
        *,
        arguments: Any,
        result: Mapping[str, Any],
        delivered: bool,
        failure_code: str | None,
        size: int,
        invocations: int,
    ) -> dict[str, Any]:
        return {
            "callIndex": len(self.calls),
            "toolName": name,
            "arguments": arguments,
            "result": dict(result),
            "deliveredToAgent": delivered,
            "failureCode": failure_code,
            "modelVisibleUtf8Bytes": size,
            "measuredTokens": None,
            "tokenizerFingerprint": None,
            "backendInvocations": invocations,
        }

    def _undelivered(
        self,
        name: str,
        arguments: Any,
        failure_class: str,
        code: str,
        *,
        result: Mapping[str, Any] | None = None,
        invocations: int = 0,
        exc: BaseException | None = None,
    ) -> dict[str, Any]:
        recorded = result if result is not None else tools.synthetic_error(name, code)
        self.calls.append(
            self._record(
                name,
                arguments=arguments,
                result=recorded,
                delivered=False,
                failure_code=code,
                size=0,
                invocations=invocations,
            )
        )
        raise self.fail(
            failure_class, code, None if exc is None else f"{type(exc).__name__}: {exc}"
        )

    # -- receipt -------------------------------------------------------------

    def canonical(self) -> dict[str, Any]:
        failure_class, code = self.failure or ("none", None)
        envelope = self.envelope
        return {
            "schemaVersion": SCHEMA_VERSION,
            **self.identity.as_json(),
            "capabilities": capabilities(self.backend),
            "calls": self.calls,
            "agentCalls": len(self.calls),
            "backendInvocations": sum(c["backendInvocations"] for c in self.calls),
            "modelVisibleUtf8Bytes": sum(c["modelVisibleUtf8Bytes"] for c in self.calls),
            "measuredTokens": None,
            "finalEnvelope": envelope,
            "stopReason": "error" if envelope is None else envelope["stopReason"],
            "failure": {"class": failure_class, "code": code, "redactedMessage": None},
            "fingerprints": {
                "corpus": self.corpus_fingerprint,
                "prompt": prompt_fingerprint(self.raw_task),
                "tools": tools.TOOLS_FINGERPRINT,
                "model": self.model,
                "runtime": RUNTIME_FINGERPRINT,
                "config": self.config_fingerprint,
                "index": self.index_fingerprint,
            },
        }

    def observations(self, end_to_end_ms: float) -> dict[str, Any]:
        unavailable = {"valueMs": None, "unavailableReason": "not measured by this runner"}
        return {
            "recordedAt": None,
            "timings": {
                "preparation": {"valueMs": None, "unavailableReason": "recorded per preparation"},
                "startup": unavailable,
                "modelLoad": {"valueMs": None, "unavailableReason": "no model is loaded"},
                "tool": {"valueMs": round(self.tool_ms, 3), "unavailableReason": None},
                "driver": {
                    "valueMs": round(max(0.0, end_to_end_ms - self.tool_ms), 3),
                    "unavailableReason": None,
                },
                "endToEnd": {"valueMs": round(end_to_end_ms, 3), "unavailableReason": None},
            },
            "process": {"peakRssBytes": None, "unavailableReason": "not measured in-process"},
            "tempPaths": [],
            "diagnostics": list(self.diagnostics),
        }

    def receipt(self, end_to_end_ms: float) -> dict[str, Any]:
        return {
            "schemaVersion": SCHEMA_VERSION,
            "canonical": self.canonical(),
            "observations": self.observations(end_to_end_ms),
        }


def harness_failure_canonical(
    identity: Identity,
    backend: Any,
    *,
    corpus_fingerprint: str,
    config_fingerprint: str,
    index_fingerprint: str,
    code: str,
) -> dict[str, Any]:
    """A harness-failure receipt: no calls, null envelope, zero prompt/model fingerprints."""
    return {
        "schemaVersion": SCHEMA_VERSION,
        **identity.as_json(),
        "capabilities": capabilities(backend),
        "calls": [],
        "agentCalls": 0,
        "backendInvocations": 0,
        "modelVisibleUtf8Bytes": 0,
        "measuredTokens": None,
        "finalEnvelope": None,
        "stopReason": "error",
        "failure": {"class": "harness_error", "code": code, "redactedMessage": None},
        "fingerprints": {
            "corpus": corpus_fingerprint,
            "prompt": ZERO_FINGERPRINT,
            "tools": tools.TOOLS_FINGERPRINT,
            "model": ZERO_FINGERPRINT,
            "runtime": RUNTIME_FINGERPRINT,
            "config": config_fingerprint,
            "index": index_fingerprint,
        },
    }
