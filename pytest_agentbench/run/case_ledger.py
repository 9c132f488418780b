"""``--agentbench-ledger DIR``: every case of a pytest run writes its execution ledger.

World-free. The adapter a world receives is wrapped (outside the isolation
proxy, when there is one) by a stand-in with the adapter's public methods;
each call becomes one call row: the method, the digest of the arguments the
adapter received and the digest of its answer or of what it raised, plus the
model usage the adapter reports through ``drain_usage()``. The ledger is
opened before the case runs and ends with its terminal row: ``scored`` when
the adapter's calls completed, ``aborted`` when a call raised or the world
failed, ``excluded`` with ``case_timeout`` when the case limit interrupted it.
Each case's ledger is written by the process that runs the case, at
``DIR/<suite id>/<case id>.ndjson`` (ids percent-encoded where they are not
plain file names). Tool calls are not rows: they are in the case's receipt.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable
from pathlib import Path
from types import CoroutineType
from typing import Any

from pydantic import BaseModel, ValidationError

from pytest_agentbench import __version__
from pytest_agentbench.scoring.matrix import current_model, model_item_name
from pytest_agentbench.scoring.trials import current_trial, item_name
from pytest_agentbench.sdk.canonical import JsonValue, canonical_bytes, sha256_hex
from pytest_agentbench.sdk.contracts import Case, FailureClass, Outcome
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.files import id_file_name
from pytest_agentbench.sdk.ledger import CallPayload, Decision, HeaderPayload, LedgerWriter
from pytest_agentbench.sdk.ledger.usage import UsageReport
from pytest_agentbench.sdk.runner import CaseTimeout, alarm_held, awaited
from pytest_agentbench.sdk.suite import Suite, suite_digests

LEDGER_SUFFIX = ".ndjson"
TIMEOUT_EXCLUSION = "case_timeout"
_UNUSED_ATTRIBUTES = frozenset({"drain_usage"})
"""Consumed by the ledger itself, never handed to the world."""


def ledger_path(folder: Path, suite_id: str, case_id: str) -> Path:
    return folder / id_file_name(suite_id) / id_file_name(case_id, LEDGER_SUFFIX)


def evidence(value: Any) -> JsonValue:
    """What a digest is taken of: JSON as is, records dumped, any other object by its type.

    Never ``repr``: it may carry a memory address, and the digest must be the
    same on every rerun.
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, dict):
        return {str(key): evidence(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [evidence(item) for item in value]
    if isinstance(value, BaseModel):
        return evidence(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return evidence(dataclasses.asdict(value))
    kind = type(value)
    return {"$object": f"{kind.__module__}.{kind.__qualname__}"}


def digest_of(value: Any) -> str:
    return sha256_hex(canonical_bytes(evidence(value)))


def error_evidence(exc: BaseException) -> JsonValue:
    kind = type(exc)
    try:
        message = str(exc)
    except BaseException:  # an adapter's exception may not render; its type still does
        message = ""
    return {"type": f"{kind.__module__}.{kind.__qualname__}", "message": message}


class CaseLedger:
    """The ledger of one case; call rows come from its :class:`LedgerProxy`."""

    def __init__(self, writer: LedgerWriter) -> None:
        self.writer = writer
        self.failure: AgentbenchError | None = None
        self.raised = False
        self.timed_out = False
        self._lock = threading.Lock()
        self._invocations = 0

    def record(
        self,
        adapter: Any,
        method: str,
        received: JsonValue,
        answer: Any,
        error: BaseException | None,
    ) -> None:
        with self._lock:
            if self.failure is not None or self.writer.finished:
                return  # a leaked thread answering after the case ended is not the case's
            if isinstance(error, CaseTimeout):
                self.timed_out = True
            elif error is not None:
                self.raised = True
            self._invocations += 1
            usage = _drain_usage(adapter)
            payload = CallPayload(
                call_index=len(self.writer.calls),
                invocation_index=self._invocations,
                turn_index=0,
                observation_digest_sha256=sha256_hex(canonical_bytes(received)),
                decision=None
                if error is not None
                else Decision(kind="returned", decision_digest_sha256=digest_of(answer)),
                error_digest_sha256=None
                if error is None
                else sha256_hex(canonical_bytes(error_evidence(error))),
                method=method,
                request_digest_sha256=None if usage is None else usage.request_digest_sha256,
                wire_digest_sha256=None if usage is None else usage.wire_digest_sha256,
                attempts=None if usage is None or not usage.attempts else usage.attempts,
            )
            try:
                with alarm_held():
                    self.writer.call(payload)
            except AgentbenchError as exc:
                self.failure = exc

    def finish(self, outcome: Outcome) -> None:
        """The terminal row; a failure to write it is kept in :attr:`failure`."""
        with self._lock:
            if self.failure is not None:
                self.writer.close()
                return
            if outcome.exclusion is not None:
                kind, code = "excluded", outcome.exclusion
            elif self.timed_out:
                kind, code = "excluded", TIMEOUT_EXCLUSION
            elif self.raised or outcome.failure_class is FailureClass.HARNESS_ERROR:
                kind, code = "aborted", None
            else:
                kind, code = "scored", None
            try:
                with alarm_held():
                    self.writer.finish(kind, code)
            except AgentbenchError as exc:
                self.failure = exc
                self.writer.close()


def _drain_usage(adapter: Any) -> UsageReport | None:
    drain = getattr(adapter, "drain_usage", None)
    if not callable(drain):
        return None
    try:
        report = drain()
        if report is None or isinstance(report, UsageReport):
            return report
        return UsageReport.model_validate(report)  # an isolated adapter answers with JSON
    except (ValidationError, Exception):
        return None  # usage the adapter cannot report is absent, never invented


class LedgerProxy:
    """Base of the stand-ins that record each call of the adapter they wrap."""

    def __init__(self, adapter: Any, ledger: CaseLedger) -> None:
        self._adapter = adapter
        self._ledger = ledger

    @property
    def __class__(self) -> type[Any]:
        # A world may dispatch on the adapter's class (``isinstance(agent, FixtureAgent)``);
        # isinstance consults ``__class__``, so the stand-in passes for what it wraps.
        return type(self._adapter)

    @__class__.setter
    def __class__(self, value: type[Any]) -> None:
        # object's ``__class__`` is writable, so the override declares a setter; the
        # stand-in's class is its adapter's and cannot be reassigned.
        raise AttributeError("a ledger proxy's class is its adapter's")

    def __getattr__(self, name: str) -> Any:
        # Non-method members of the adapter (a protocol may declare data members).
        return getattr(self._adapter, name)

    def __repr__(self) -> str:
        return f"<ledgered {self._adapter!r}>"


def _recorded_method(name: str) -> Callable[..., Any]:
    def method(self: LedgerProxy, *args: Any, **kwargs: Any) -> Any:
        received = {"method": name, "args": evidence(args), "kwargs": evidence(kwargs)}
        try:
            answer = getattr(self._adapter, name)(*args, **kwargs)
            if isinstance(answer, CoroutineType):
                # An ``async def`` method: the row records what it answers, not the coroutine.
                answer = awaited(answer)
        except BaseException as exc:
            self._ledger.record(self._adapter, name, received, None, exc)
            raise
        self._ledger.record(self._adapter, name, received, answer, None)
        return answer

    method.__name__ = method.__qualname__ = name
    return method


_PROXY_CLASSES: dict[tuple[type, tuple[str, ...]], type[LedgerProxy]] = {}


def public_methods(adapter: Any) -> tuple[str, ...]:
    return tuple(
        sorted(
            name
            for name in dir(adapter)
            if not name.startswith("_")
            and name not in _UNUSED_ATTRIBUTES
            and callable(getattr(adapter, name, None))
        )
    )


def ledgered(adapter: Any, ledger: CaseLedger) -> LedgerProxy:
    """A stand-in with ``adapter``'s public methods (so protocol checks see them)."""
    kind = type(adapter)
    methods = public_methods(adapter)
    proxy_class = _PROXY_CLASSES.get((kind, methods))
    if proxy_class is None:
        namespace: dict[str, Any] = {name: _recorded_method(name) for name in methods}
        namespace.update(__module__=kind.__module__, __qualname__=kind.__qualname__)
        proxy_class = type(kind.__name__, (LedgerProxy,), namespace)
        _PROXY_CLASSES[(kind, methods)] = proxy_class
    return proxy_class(adapter, ledger)


def _suite_digest(suite: Suite) -> str:
    """The suite's public artifact digest (once per process), else its declaration's."""
    cache = suite.cache
    if "agentbench.ledger_digest" not in cache:
        public = suite_digests(suite)["public"]
        cache["agentbench.ledger_digest"] = public or digest_of(
            suite.config.model_dump(mode="json")
        )
    return str(cache["agentbench.ledger_digest"])


def open_case_ledger(folder: Path, suite: Suite, case: Case, agent_id: str) -> CaseLedger:
    """Create the case's ledger with its header row; a refusal names the ledger's code."""
    spec_digest = _suite_digest(suite)
    # Under --agentbench-repeat every trial of a case is its own item with its own ledger.
    trial = current_trial()
    # Under a model matrix each model's run of the case is an item with a ledger of its own.
    name = model_item_name(
        item_name(case.case_id, trial.index if trial and trial.count > 1 else None),
        current_model(),
    )
    seed = {"suite": suite.id, "spec": spec_digest, "case": name, "agent": agent_id}
    from pytest_agentbench.agents.provenance import configured_run
    from pytest_agentbench.run.episode_artifacts import provider_header

    run = configured_run()
    header = HeaderPayload(
        execution_run_id="exec_" + sha256_hex(canonical_bytes(seed))[:32],
        operation_id=suite.id,
        spec_digest_sha256=spec_digest,
        scenario_id=name,
        agent_id=agent_id,
        engine_version=f"pytest-agentbench {__version__}",
        provider=None if run is None or not run.settings.model else provider_header(run),
    )
    with alarm_held():
        return CaseLedger(LedgerWriter(ledger_path(folder, suite.id, name), header))
