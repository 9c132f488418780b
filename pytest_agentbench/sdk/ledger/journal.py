"""Reading OperateBench's execution journals (its ``ledger_version`` 2 and 3), every refusal named.

Our own ledger (:mod:`.rows`) carries less per row than OperateBench's; the
journals OperateBench publishes (its reference bundle is a ``ledger_version`` 2
journal) are a different row layout under the same chain: per-call instants and
token bounds, per-attempt ``response_received``, reservation and settlement, a
header ``controls`` block with the run's pinned rates, and totals with
``fault_counts``. This module reads that layout, independently of its writer:
the exact field set of every record, each version's own closed vocabularies
(version 3 owns three more provider faults than version 2), the attempt
sequence a retry policy allows, and every amount re-derived from the row's own
token counts and the header's rates. The names of fields and the closed
vocabularies are the format's; the checks and their wording are ours.

A journal is detected by its rows, never by its name: version 2, or version 3
with a header that has a ``controls`` block (our own version 3 header has none).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation, localcontext
from pathlib import Path
from typing import Any

from pytest_agentbench.sdk.canonical import canonical_bytes, loads_strict, read_bytes, sha256_hex
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger.rows import row_digest

JOURNAL_VERSIONS = (2, 3)
GENESIS = "0" * 64

_FAULTS_2 = (
    "provider_authentication",
    "provider_configuration",
    "provider_network_error",
    "provider_rate_limited",
    "provider_request_rejected",
    "provider_response_invalid",
    "provider_server_error",
    "provider_timeout",
)
# Version 3 adds the three classifications of a provider's HTTP 400.
_FAULTS_3 = tuple(
    sorted(
        (
            *_FAULTS_2,
            "provider_bad_request_unclassified",
            "provider_invalid_request_or_spend_limit",
            "provider_spend_limit",
        )
    )
)
FAULTS: Mapping[int, tuple[str, ...]] = {2: _FAULTS_2, 3: _FAULTS_3}
"""Each version's own provider-fault vocabulary (an attempt's ``fault``, the totals' keys)."""
RETRYABLE: Mapping[int, tuple[str, ...]] = {
    2: (
        "provider_network_error",
        "provider_rate_limited",
        "provider_server_error",
        "provider_timeout",
    ),
    3: (
        "provider_network_error",
        "provider_rate_limited",
        "provider_server_error",
        "provider_timeout",
    ),
}
OUTCOMES = ("fault", "response", "unclassified_error")
SETTLEMENTS = ("forfeited", "measured")
TURN_ENDS = (
    "backoff_unaffordable",
    "cost_cap_exhausted",
    "deadline_exceeded",
    "fault_not_retryable",
    "pre_dispatch_refused",
    "response",
    "retries_exhausted",
    "unclassified_error",
)
_EARLY_ENDS = (
    "backoff_unaffordable",
    "cost_cap_exhausted",
    "deadline_exceeded",
    "pre_dispatch_refused",
)
_STOPS = ("completed", "max_tokens")
_ABORTED = "execution_aborted"
_CONTROL_EXCLUSIONS = ("provider_budget", "provider_deadline")
EXCLUSION_CODES = (
    _ABORTED,
    *_CONTROL_EXCLUSIONS,
    *_FAULTS_3,
    "provider_protocol",
    "provider_transport",
)
# The one detail each terminal kind states: fixed by the format, so no other text
# reaches a durable row through the one field that reads like prose.
TERMINAL_DETAILS: Mapping[str, str] = {
    "scored": "",
    "excluded": "execution stopped at the provider boundary",
    "aborted": "execution did not reach a terminal state and was abandoned",
}
"""The fixed ``exclusion_detail`` of each terminal kind (the journal writer states it)."""

ROW_FIELDS = (
    "ledger_version",
    "row_index",
    "row_kind",
    "previous_row_digest_sha256",
    "row_digest_sha256",
)
HEADER_FIELDS = (
    "execution_run_id",
    "operation_instance_id",
    "operation_id",
    "spec_digest_sha256",
    "scenario_id",
    "agent_id",
    "agent_kind",
    "engine_version",
    "intended_artifact_version",
    "started_at",
    "provider",
    "controls",
)
PROVIDER_FIELDS = (
    "provider",
    "api",
    "model",
    "base_url",
    "implementation",
    "request_mapping",
    "protocol_version",
    "sdk",
    "sdk_version",
    "settings",
    "settings_digest_sha256",
)
CONTROLS_FIELDS = (
    "max_provider_calls",
    "max_attempts_per_call",
    "expected_provider_calls",
    "token_hard_cap",
    "max_output_tokens",
    "cost_cap_usd",
    "cost_cap_policy",
    "turn_deadline_seconds",
    "wall_clock_deadline_seconds",
    "pricing",
    "pricing_digest_sha256",
)
CALL_FIELDS = (
    "call_index",
    "invocation_index",
    "turn_index",
    "request_digest_sha256",
    "prompt_digest_sha256",
    "observation_digest_sha256",
    "payload_digest_sha256",
    "wire_request_digest_sha256",
    "wire_request_bytes",
    "wire_request_method",
    "wire_request_url",
    "input_token_upper_bound",
    "started_at",
    "ended_at",
    "turn_latency_seconds",
    "terminal_reason",
    "attempts",
    "decision",
)
ATTEMPT_FIELDS = (
    "attempt_index",
    "outcome",
    "fault",
    "http_status",
    "latency_seconds",
    "response_received",
    "usage_reported",
    "cost_reservation_usd",
    "cost_settlement",
    "cost_measured_usd",
    "cost_forfeited_usd",
    "input_tokens",
    "output_tokens",
    "response_model",
    "response_id_digest_sha256",
    "response_stop_classification",
    "response_normalized_digest_sha256",
)
DECISION_FIELDS = ("kind", "decision_digest_sha256", "classification_code")
TERMINAL_FIELDS = ("kind", "ended_at", "exclusion_code", "exclusion_detail", "totals")
TOTALS_FIELDS = (
    "provider_calls",
    "attempts",
    "input_tokens",
    "output_tokens",
    "measured_cost_usd",
    "forfeited_reservation_usd",
    "reserved_usd",
    "fault_counts",
)

_MAX_TEXT = 256
_TOKEN = re.compile(r"\A[A-Za-z0-9._:@/+-]{1,256}\Z")
_DIGEST = re.compile(r"\A[0-9a-f]{64}\Z")
_RUN_ID = re.compile(r"\Aexec_[0-9a-f]{32}\Z")
_INSTANCE_ID = re.compile(r"\Aopinst_[0-9a-f]{32}\Z")
_URL = re.compile(r"\Ahttps://[A-Za-z0-9.-]+(?::\d+)?(?:/[A-Za-z0-9._~/-]*)?\Z")
_INSTANT = "%Y-%m-%dT%H:%M:%SZ"
# Credential-shaped text, refused in any key or value at any depth: a second net
# under the field checks, so a field nobody validated still meets one.
_SECRETS = (
    re.compile(r"(?i)authoriz"),
    re.compile(r"(?i)\bbearer\b"),
    re.compile(r"(?i)api[\s_-]?key"),
    re.compile(r"(?i)\b(?:secret|passwd|password)\b"),
    re.compile(r"sk-[A-Za-z0-9_-]{8,}"),
)
_TOKENS_PER_RATE_UNIT = Decimal(1_000_000)


def is_journal_row(row: object) -> bool:
    """Whether a parsed first row is one of OperateBench's journal layout (not our own ledger)."""
    if not isinstance(row, dict):
        return False
    version = row.get("ledger_version")
    header = row.get("header")
    return version == 2 or (version == 3 and isinstance(header, dict) and "controls" in header)


@dataclass(frozen=True)
class JournalReading:
    """What a journal proves: complete only with a verified terminal row."""

    version: int
    rows_verified: int
    truncated_tail: bool
    terminal_kind: str | None
    exclusion_code: str | None
    digest: str | None
    """The terminal row's digest (covers every row); ``None`` while incomplete."""
    totals: dict[str, Any]
    """Re-derived from the call rows, never read."""

    @property
    def status(self) -> str:
        return "incomplete" if self.terminal_kind is None else "complete"


class _Reader:
    """One journal's checks; ``line`` is the 1-based line every refusal names."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.line = 0
        self.version = 3

    def refuse(self, code: str, reason: str) -> AgentbenchError:
        return AgentbenchError(code, reason, file=str(self.path), line=self.line or None)

    # -- values ---------------------------------------------------------------

    def exact(self, payload: Mapping[str, Any], names: Sequence[str], where: str) -> None:
        missing = sorted(set(names) - set(payload))
        unknown = sorted(set(payload) - set(names))
        if missing or unknown:
            parts = ([f"missing {missing}"] if missing else []) + (
                [f"unknown {unknown} (not of ledger_version {self.version})"] if unknown else []
            )
            raise self.refuse("journal_fields_mismatch", f"{where}: " + "; ".join(parts))

    def invalid(self, where: str, what: str) -> AgentbenchError:
        return self.refuse("journal_value_invalid", f"{where}: {what}")

    def obj(self, value: object, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.invalid(where, "expected a JSON object")
        return value

    def token(self, value: object, where: str, *, optional: bool = False) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str) or not _TOKEN.match(value):
            raise self.invalid(where, "expected an identifier without whitespace")

    def digest(self, value: object, where: str, *, optional: bool = False) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str) or not _DIGEST.match(value):
            raise self.invalid(where, "expected a 64-character lowercase SHA-256 digest")

    def count(self, value: object, where: str, *, minimum: int = 0, optional: bool = False) -> None:
        if value is None and optional:
            return
        # bool is an int subclass: the type test is exact on purpose.
        if type(value) is not int or value < minimum:
            raise self.invalid(where, f"expected an integer of at least {minimum}, got {value!r}")

    def flag(self, value: object, where: str) -> None:
        if type(value) is not bool:
            raise self.invalid(where, f"expected true or false, got {value!r}")

    def seconds(self, value: object, where: str) -> None:
        if value is None:
            return
        # A bool is an int subclass, and no number of seconds.
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise self.invalid(where, "expected a non-negative number of seconds or null")

    def member(
        self, value: object, allowed: Sequence[str], where: str, *, optional: bool = False
    ) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str) or value not in allowed:
            raise self.invalid(where, f"{value!r} is not one of {list(allowed)}")

    def instant(self, value: object, where: str) -> datetime:
        if isinstance(value, str):
            try:
                return datetime.strptime(value, _INSTANT)
            except ValueError:
                pass
        raise self.invalid(
            where, f"expected an instant of the form 2035-01-02T03:04:05Z, got {value!r}"
        )

    def amount(self, value: object, where: str, *, optional: bool = False) -> None:
        """An exact USD amount as a string, in its one canonical rendering."""
        if value is None and optional:
            return
        parsed = self.decimal(value, where)
        if parsed < 0 or usd_text(parsed) != value:
            raise self.invalid(where, f"{value!r} is not a canonical non-negative USD amount")

    def decimal(self, value: object, where: str) -> Decimal:
        if not isinstance(value, str):
            raise self.invalid(
                where, "an amount or rate is an exact decimal string, not a JSON number"
            )
        try:
            parsed = Decimal(value)
        except InvalidOperation:
            raise self.invalid(where, f"{value!r} is not a decimal") from None
        if not parsed.is_finite():
            raise self.invalid(where, "an amount or rate is finite")
        return parsed

    def scan(self, value: object, where: str, depth: int = 0) -> None:
        if depth > 32:
            raise self.invalid(where, "nested too deeply")
        if isinstance(value, str):
            if len(value) > _MAX_TEXT:
                raise self.refuse(
                    "journal_secret_material",
                    f"{where}: {len(value)} characters against a bound of {_MAX_TEXT}",
                )
            if any(pattern.search(value) for pattern in _SECRETS):
                raise self.refuse(
                    "journal_secret_material", f"{where}: credential-shaped text (not quoted here)"
                )
        elif isinstance(value, dict):
            for key, item in value.items():
                self.scan(key, f"{where}.{key}", depth + 1)
                self.scan(item, f"{where}.{key}", depth + 1)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.scan(item, f"{where}[{index}]", depth + 1)

    # -- records --------------------------------------------------------------

    def header(self, payload: object) -> dict[str, Any]:
        header = self.obj(payload, "header")
        self.exact(header, HEADER_FIELDS, "header")
        if not isinstance(header["execution_run_id"], str) or not _RUN_ID.match(
            header["execution_run_id"]
        ):
            raise self.invalid(
                "header.execution_run_id", "expected exec_ and 32 lowercase hex digits"
            )
        if not isinstance(header["operation_instance_id"], str) or not _INSTANCE_ID.match(
            header["operation_instance_id"]
        ):
            raise self.invalid(
                "header.operation_instance_id", "expected opinst_ and 32 lowercase hex digits"
            )
        for name in ("operation_id", "scenario_id", "agent_id", "agent_kind"):
            self.token(header[name], f"header.{name}")
        self.digest(header["spec_digest_sha256"], "header.spec_digest_sha256")
        self.instant(header["started_at"], "header.started_at")
        # An empty (or null) engine version is defaulted by the original's reader, not refused.
        if header["engine_version"]:
            self.token(header["engine_version"], "header.engine_version")
        if (
            type(header["intended_artifact_version"]) is not int
            or header["intended_artifact_version"] != 8
        ):
            raise self.invalid(
                "header.intended_artifact_version", "a journal is evidence for artefact 8"
            )
        self.provider(self.obj(header["provider"], "header.provider"))
        self.controls(self.obj(header["controls"], "header.controls"))
        return header

    def provider(self, provider: dict[str, Any]) -> None:
        self.exact(provider, PROVIDER_FIELDS, "header.provider")
        for name in PROVIDER_FIELDS:
            if name not in ("base_url", "settings", "settings_digest_sha256"):
                self.token(provider[name], f"header.provider.{name}")
        if not isinstance(provider["base_url"], str) or not _URL.match(provider["base_url"]):
            raise self.invalid(
                "header.provider.base_url", "expected a bare https scheme, host and path"
            )
        settings = self.obj(provider["settings"], "header.provider.settings")
        self.digest(provider["settings_digest_sha256"], "header.provider.settings_digest_sha256")
        if _sha256(settings) != provider["settings_digest_sha256"]:
            raise self.refuse(
                "journal_digest_mismatch",
                "header.provider.settings_digest_sha256 is not the digest of its settings",
            )

    def controls(self, controls: dict[str, Any]) -> None:
        self.exact(controls, CONTROLS_FIELDS, "header.controls")
        for name in (
            "max_provider_calls",
            "max_attempts_per_call",
            "expected_provider_calls",
            "token_hard_cap",
            "max_output_tokens",
        ):
            self.count(controls[name], f"header.controls.{name}", minimum=1)
        # A cap is typed by a person: any rendering of a positive amount reads.
        if self.decimal(controls["cost_cap_usd"], "header.controls.cost_cap_usd") <= 0:
            raise self.invalid("header.controls.cost_cap_usd", "a cost cap is positive")
        self.member(
            controls["cost_cap_policy"],
            ("refuse_before_dispatch",),
            "header.controls.cost_cap_policy",
        )
        self.seconds(controls["turn_deadline_seconds"], "header.controls.turn_deadline_seconds")
        self.seconds(
            controls["wall_clock_deadline_seconds"], "header.controls.wall_clock_deadline_seconds"
        )
        if controls["expected_provider_calls"] > controls["max_provider_calls"]:
            raise self.invalid(
                "header.controls.expected_provider_calls", "exceeds max_provider_calls"
            )
        pricing = self.obj(controls["pricing"], "header.controls.pricing")
        for name in ("input_usd_per_mtok", "output_usd_per_mtok"):
            if self.decimal(pricing.get(name), f"header.controls.pricing.{name}") < 0:
                raise self.invalid(f"header.controls.pricing.{name}", "a rate is non-negative")
        self.digest(controls["pricing_digest_sha256"], "header.controls.pricing_digest_sha256")
        if _sha256(pricing) != controls["pricing_digest_sha256"]:
            raise self.refuse(
                "journal_digest_mismatch",
                "header.controls.pricing_digest_sha256 is not the digest of its rate table",
            )

    def attempt(self, attempt: dict[str, Any], where: str) -> None:
        self.exact(attempt, ATTEMPT_FIELDS, where)
        self.count(attempt["attempt_index"], f"{where}.attempt_index", minimum=1)
        self.member(attempt["outcome"], OUTCOMES, f"{where}.outcome")
        fault = attempt["fault"]
        self.token(fault, f"{where}.fault", optional=True)
        self.count(attempt["http_status"], f"{where}.http_status", minimum=100, optional=True)
        self.seconds(attempt["latency_seconds"], f"{where}.latency_seconds")
        self.flag(attempt["response_received"], f"{where}.response_received")
        self.flag(attempt["usage_reported"], f"{where}.usage_reported")
        for name in ("cost_reservation_usd", "cost_measured_usd", "cost_forfeited_usd"):
            self.amount(attempt[name], f"{where}.{name}", optional=True)
        self.member(
            attempt["cost_settlement"], SETTLEMENTS, f"{where}.cost_settlement", optional=True
        )
        self.count(attempt["input_tokens"], f"{where}.input_tokens", optional=True)
        self.count(attempt["output_tokens"], f"{where}.output_tokens", optional=True)
        self.token(attempt["response_model"], f"{where}.response_model", optional=True)
        self.digest(
            attempt["response_id_digest_sha256"],
            f"{where}.response_id_digest_sha256",
            optional=True,
        )
        self.member(
            attempt["response_stop_classification"],
            _STOPS,
            f"{where}.response_stop_classification",
            optional=True,
        )
        self.digest(
            attempt["response_normalized_digest_sha256"],
            f"{where}.response_normalized_digest_sha256",
            optional=True,
        )
        if fault is not None and fault not in FAULTS[self.version]:
            raise self.refuse(
                "journal_fault_unknown",
                f"{where}.fault: {fault!r} is not a fault of ledger_version {self.version}",
            )
        self.attempt_coherent(attempt, where)

    def attempt_coherent(self, attempt: dict[str, Any], where: str) -> None:
        outcome, received = attempt["outcome"], attempt["response_received"]
        settlement, usage = attempt["cost_settlement"], attempt["usage_reported"]
        problems = (
            (
                (attempt["fault"] is None) == (outcome == "fault"),
                "names a fault exactly when it faulted",
            ),
            (outcome == "response" and not received, "answered without receiving a response"),
            (usage and not received, "reports usage for a response it never received"),
            (
                (attempt["cost_reservation_usd"] is None) != (settlement is None),
                "states a reservation and its settlement together or not at all",
            ),
            (
                (settlement == "measured") != (attempt["cost_measured_usd"] is not None),
                "states a measured cost exactly when it settled as measured",
            ),
            (
                (settlement == "forfeited") != (attempt["cost_forfeited_usd"] is not None),
                "states a forfeited reservation exactly when it settled as forfeited",
            ),
            (settlement == "measured" and not usage, "settles as measured with no usage reported"),
            (
                usage
                != (attempt["input_tokens"] is not None and attempt["output_tokens"] is not None),
                "reports usage exactly when both token counts are stated",
            ),
            (
                outcome != "response"
                and any(
                    attempt[name] is not None
                    for name in (
                        "response_model",
                        "response_id_digest_sha256",
                        "response_stop_classification",
                        "response_normalized_digest_sha256",
                    )
                ),
                "carries response evidence without a response outcome",
            ),
            (
                self.version == 3 and attempt["http_status"] is not None and not received,
                "states an HTTP status (version 3: response evidence) without response_received",
            ),
        )
        for broken, what in problems:
            if broken:
                raise self.refuse("journal_call_incoherent", f"{where}: {what}")

    def call(
        self, payload: object, controls: dict[str, Any], previous: dict[str, Any] | None
    ) -> dict[str, Any]:
        call = self.obj(payload, "call")
        self.exact(call, CALL_FIELDS, "call")
        where = f"call {call['call_index']!r}"
        attempts = call["attempts"]
        if not isinstance(attempts, list):
            raise self.invalid(f"{where}.attempts", "expected an array")
        for index, attempt in enumerate(attempts):
            self.attempt(
                self.obj(attempt, f"{where}.attempts[{index}]"), f"{where}.attempts[{index}]"
            )
        decision = call["decision"]
        if decision is not None:
            decision = self.obj(decision, f"{where}.decision")
            self.exact(decision, DECISION_FIELDS, f"{where}.decision")
            self.token(decision["kind"], f"{where}.decision.kind")
            self.digest(
                decision["decision_digest_sha256"], f"{where}.decision.decision_digest_sha256"
            )
            self.token(
                decision["classification_code"],
                f"{where}.decision.classification_code",
                optional=True,
            )
        for name in ("call_index", "invocation_index", "turn_index", "input_token_upper_bound"):
            self.count(call[name], f"{where}.{name}")
        for name in (
            "request_digest_sha256",
            "prompt_digest_sha256",
            "observation_digest_sha256",
            "payload_digest_sha256",
        ):
            self.digest(call[name], f"{where}.{name}")
        self.digest(
            call["wire_request_digest_sha256"], f"{where}.wire_request_digest_sha256", optional=True
        )
        self.count(call["wire_request_bytes"], f"{where}.wire_request_bytes", optional=True)
        self.member(
            call["wire_request_method"], ("POST",), f"{where}.wire_request_method", optional=True
        )
        url = call["wire_request_url"]
        if url is not None and (not isinstance(url, str) or not _URL.match(url)):
            raise self.invalid(
                f"{where}.wire_request_url", "expected a bare https scheme, host and path"
            )
        started = self.instant(call["started_at"], f"{where}.started_at")
        if self.instant(call["ended_at"], f"{where}.ended_at") < started:
            raise self.invalid(where, "ended before it started")
        self.seconds(call["turn_latency_seconds"], f"{where}.turn_latency_seconds")
        self.member(call["terminal_reason"], TURN_ENDS, f"{where}.terminal_reason", optional=True)
        if not attempts:
            raise self.refuse(
                "journal_call_incoherent", f"{where}: a recorded call made at least one attempt"
            )
        if [a["attempt_index"] for a in attempts] != list(range(1, len(attempts) + 1)):
            raise self.refuse(
                "journal_call_incoherent", f"{where}: attempts are not contiguous from 1"
            )
        wire = [
            call[name]
            for name in (
                "wire_request_digest_sha256",
                "wire_request_bytes",
                "wire_request_method",
                "wire_request_url",
            )
        ]
        if None in wire and any(value is not None for value in wire):
            raise self.refuse(
                "journal_call_incoherent",
                f"{where}: the wire request is stated whole or not at all",
            )
        last = attempts[-1]
        if decision is not None and (
            last["outcome"] != "response" or last["response_normalized_digest_sha256"] is None
        ):
            raise self.refuse(
                "journal_call_incoherent",
                f"{where}: a decision without an answer (and its digest) behind it",
            )
        for attempt in attempts[:-1]:
            if attempt["outcome"] != "fault" or attempt["fault"] not in RETRYABLE[self.version]:
                raise self.refuse(
                    "journal_call_incoherent",
                    f"{where}: attempt {attempt['attempt_index']} ended the turn "
                    f"({attempt['outcome']}, {attempt['fault']}) and a later attempt follows it",
                )
        reason = call["terminal_reason"]
        if reason is not None and (
            (last["outcome"] == "response") != (reason == "response")
            or (last["outcome"] == "unclassified_error") != (reason == "unclassified_error")
        ):
            raise self.refuse(
                "journal_call_incoherent",
                f"{where}: terminal_reason {reason!r} after a last attempt of {last['outcome']}",
            )
        self.admissible(call, controls, previous, where)
        self.amounts(call, controls, where)
        return call

    def admissible(
        self,
        call: dict[str, Any],
        controls: dict[str, Any],
        previous: dict[str, Any] | None,
        where: str,
    ) -> None:
        attempts = len(call["attempts"])
        problems = (
            (
                call["call_index"] >= controls["max_provider_calls"],
                f"past max_provider_calls {controls['max_provider_calls']}",
            ),
            (
                attempts > controls["max_attempts_per_call"],
                f"{attempts} attempts, max_attempts_per_call {controls['max_attempts_per_call']}",
            ),
            (
                call["terminal_reason"] == "retries_exhausted"
                and attempts != controls["max_attempts_per_call"],
                f"retries_exhausted after {attempts} of {controls['max_attempts_per_call']}",
            ),
            (
                previous is not None
                and (call["invocation_index"], call["turn_index"])
                <= (previous["invocation_index"], previous["turn_index"]),
                "(invocation_index, turn_index) does not strictly increase",
            ),
        )
        for broken, what in problems:
            if broken:
                raise self.refuse("journal_call_inadmissible", f"{where}: {what}")

    def amounts(self, call: dict[str, Any], controls: dict[str, Any], where: str) -> None:
        """Every amount re-derived: a reservation from the call's input bound and the output
        ceiling, a measured cost from the reported counts, a forfeit as the whole reservation."""
        reservation = priced(
            controls, call["input_token_upper_bound"], controls["max_output_tokens"]
        )
        for attempt in call["attempts"]:
            here = f"{where} attempt {attempt['attempt_index']}"
            stated = attempt["cost_reservation_usd"]
            if stated is not None and stated != reservation:
                raise self.refuse(
                    "journal_amount_mismatch",
                    f"{here}: cost_reservation_usd {stated} where the call's input bound and the "
                    f"output ceiling at the pinned rates come to {reservation}",
                )
            if attempt["cost_settlement"] == "measured":
                measured = priced(controls, attempt["input_tokens"], attempt["output_tokens"])
                if attempt["cost_measured_usd"] != measured:
                    raise self.refuse(
                        "journal_amount_mismatch",
                        f"{here}: cost_measured_usd {attempt['cost_measured_usd']}, its counts "
                        f"come to {measured}",
                    )
            if (
                attempt["cost_settlement"] == "forfeited"
                and attempt["cost_forfeited_usd"] != stated
            ):
                raise self.refuse(
                    "journal_amount_mismatch",
                    f"{here}: forfeits {attempt['cost_forfeited_usd']} of a {stated} reservation "
                    "(a forfeit is the whole reservation)",
                )

    def terminal(self, payload: object, calls: list[dict[str, Any]]) -> dict[str, Any]:
        terminal = self.obj(payload, "terminal")
        self.exact(terminal, TERMINAL_FIELDS, "terminal")
        kind, code = terminal["kind"], terminal["exclusion_code"]
        self.member(kind, tuple(TERMINAL_DETAILS), "terminal.kind")
        self.instant(terminal["ended_at"], "terminal.ended_at")
        totals = self.obj(terminal["totals"], "terminal.totals")
        self.exact(totals, TOTALS_FIELDS, "terminal.totals")
        for name in ("provider_calls", "attempts", "input_tokens", "output_tokens"):
            self.count(totals[name], f"terminal.totals.{name}")
        for name in ("measured_cost_usd", "forfeited_reservation_usd", "reserved_usd"):
            self.amount(totals[name], f"terminal.totals.{name}")
        for fault, count in self.obj(
            totals["fault_counts"], "terminal.totals.fault_counts"
        ).items():
            self.token(fault, "terminal.totals.fault_counts")
            self.count(count, f"terminal.totals.fault_counts.{fault}", minimum=1)
            if fault not in FAULTS[self.version]:
                raise self.refuse(
                    "journal_fault_unknown",
                    f"terminal.totals.fault_counts: {fault!r} not of ledger_version {self.version}",
                )
        if (kind == "scored") == (code is not None) or (kind == "aborted" and code != _ABORTED):
            raise self.invalid(
                "terminal.exclusion_code", f"{code!r} does not go with a {kind} terminal"
            )
        self.member(code, EXCLUSION_CODES, "terminal.exclusion_code", optional=True)
        # An empty detail is defaulted to the kind's own by the original's reader.
        if terminal["exclusion_detail"] and terminal["exclusion_detail"] != TERMINAL_DETAILS[kind]:
            raise self.invalid(
                "terminal.exclusion_detail", f"not the fixed detail of a {kind} terminal"
            )
        self.terminal_admissible(kind, code, calls)
        derived = totals_of(calls)
        if totals != derived:
            wrong = sorted(name for name in TOTALS_FIELDS if totals[name] != derived[name])
            raise self.refuse(
                "journal_totals_mismatch",
                f"terminal.totals {wrong} do not follow from the call rows",
            )
        return terminal

    def terminal_admissible(self, kind: str, code: object, calls: list[dict[str, Any]]) -> None:
        attempts = [attempt for call in calls for attempt in call["attempts"]]
        faulted = any(
            a["fault"] is not None or a["outcome"] == "unclassified_error" for a in attempts
        )
        if kind == "scored":
            if faulted or any(call["decision"] is None for call in calls):
                raise self.refuse(
                    "journal_terminal_inadmissible",
                    "a scored terminal over a call that faulted or produced no decision",
                )
        elif kind == "excluded":
            if code == _ABORTED:
                raise self.refuse(
                    "journal_terminal_inadmissible",
                    f"an excluded terminal never states {_ABORTED!r}",
                )
            witnessed = (
                code in _CONTROL_EXCLUSIONS
                or not calls
                or faulted
                or any(call["terminal_reason"] in _EARLY_ENDS for call in calls)
            )
            if not witnessed:
                raise self.refuse(
                    "journal_terminal_inadmissible",
                    f"excluded under {code!r} with no fault and no turn stopped before dispatch",
                )


def usd_text(amount: Decimal) -> str:
    """The format's one rendering of an amount: fixed point, no trailing fractional zeros."""
    text = format(amount, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def priced(controls: Mapping[str, Any], input_tokens: int, output_tokens: int) -> str:
    """Tokens at the header's pinned per-million rates, exactly."""
    pricing = controls["pricing"]
    with localcontext() as context:
        context.prec = 60
        amount = (
            Decimal(input_tokens) * Decimal(pricing["input_usd_per_mtok"])
            + Decimal(output_tokens) * Decimal(pricing["output_usd_per_mtok"])
        ) / _TOKENS_PER_RATE_UNIT
    return usd_text(amount)


def _total(amounts: Sequence[str]) -> str:
    with localcontext() as context:
        context.prec = 60
        return usd_text(sum((Decimal(amount) for amount in amounts), Decimal(0)))


def totals_of(calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The totals the call rows add up to; three amounts, never summed into one."""
    attempts = [attempt for call in calls for attempt in call["attempts"]]
    faults: dict[str, int] = {}
    for attempt in attempts:
        if attempt["fault"] is not None:
            faults[attempt["fault"]] = faults.get(attempt["fault"], 0) + 1

    def amounts(name: str) -> list[str]:
        return [a[name] for a in attempts if a[name] is not None]

    return {
        "provider_calls": len(calls),
        "attempts": len(attempts),
        "input_tokens": sum(a["input_tokens"] or 0 for a in attempts),
        "output_tokens": sum(a["output_tokens"] or 0 for a in attempts),
        "measured_cost_usd": _total(amounts("cost_measured_usd")),
        "forfeited_reservation_usd": _total(amounts("cost_forfeited_usd")),
        "reserved_usd": _total(amounts("cost_reservation_usd")),
        "fault_counts": dict(sorted(faults.items())),
    }


def _sha256(value: Any) -> str:
    return sha256_hex(canonical_bytes(value))


journal_row_digest = row_digest
"""SHA-256 of the canonical JSON of the row without its own digest: the same chain as
our own ledger's, so the same function."""


def read_ledger_bytes(path: Path) -> bytes:
    """A ledger or journal file's bytes; one that cannot be read is ``ledger_unreadable``."""
    try:
        return read_bytes(path)
    except AgentbenchError as exc:
        if exc.code not in ("missing_file", "unreadable_file"):
            raise
        raise AgentbenchError("ledger_unreadable", exc.reason, file=str(path)) from None


def read_journal(path: Path, data: bytes | None = None) -> JournalReading:
    """Verify a journal row by row; a verified prefix without a terminal row reads incomplete."""
    if data is None:
        data = read_ledger_bytes(path)
    reader = _Reader(path)
    lines = data.split(b"\n")
    trailing = data.endswith(b"\n")
    if trailing:
        lines = lines[:-1]
    header: dict[str, Any] | None = None
    calls: list[dict[str, Any]] = []
    terminal: dict[str, Any] | None = None
    version: int | None = None
    previous = GENESIS
    truncated = False
    for index, raw in enumerate(lines):
        reader.line = index + 1
        if terminal is not None and raw:
            raise reader.refuse("journal_row_after_terminal", "a row follows the terminal row")
        row = _decode(raw, reader)
        if row is None:
            # Only a final fragment with no newline that some bytes could complete
            # into one JSON object is a row cut short; it is kept out of the chain
            # and the journal reads as incomplete. Anything else is malformed.
            if index == len(lines) - 1 and not trailing and cut_short(raw):
                truncated = True
                break
            raise reader.refuse("journal_row_malformed", "not one UTF-8 JSON object")
        version, digest = _envelope(reader, row, index, version, previous)
        kind = row["row_kind"]
        if kind == "header":
            if index != 0:
                raise reader.refuse("journal_header_misplaced", "a journal has one header, first")
            header = reader.header(row["header"])
        elif header is None:
            raise reader.refuse("journal_header_misplaced", f"a {kind} row precedes the header")
        elif kind == "call":
            call = reader.call(row["call"], header["controls"], calls[-1] if calls else None)
            if call["call_index"] != len(calls):
                raise reader.refuse(
                    "journal_call_inadmissible",
                    f"call_index {call['call_index']}, expected {len(calls)}",
                )
            calls.append(call)
        else:
            terminal = reader.terminal(row["terminal"], calls)
        previous = digest
    if header is None or version is None:
        reader.line = 0
        raise reader.refuse("journal_header_misplaced", "no verified header row")
    return JournalReading(
        version=version,
        rows_verified=1 + len(calls) + (terminal is not None),
        truncated_tail=truncated,
        terminal_kind=None if terminal is None else str(terminal["kind"]),
        exclusion_code=None if terminal is None else terminal["exclusion_code"],
        digest=None if terminal is None else previous,
        totals=totals_of(calls),
    )


def _envelope(
    reader: _Reader, row: dict[str, Any], index: int, version: int | None, previous: str
) -> tuple[int, str]:
    """The row's version and digest, once its envelope, place and chain check out."""
    stated = row.get("ledger_version")
    if type(stated) is not int or stated not in JOURNAL_VERSIONS:
        raise reader.refuse(
            "journal_version_unsupported",
            f"ledger_version {stated!r}; journals of {list(JOURNAL_VERSIONS)} are read",
        )
    if version is None:
        reader.version = stated
    elif stated != version:
        raise reader.refuse(
            "journal_version_mixed",
            f"ledger_version {stated} in a journal that began as {version}",
        )
    kind = row.get("row_kind")
    reader.exact(row, (*ROW_FIELDS, str(kind)), "row")
    reader.member(kind, ("call", "header", "terminal"), "row.row_kind")
    reader.scan(row, "row")
    if row["row_index"] != index:
        raise reader.refuse(
            "journal_row_index_mismatch",
            f"row_index {row['row_index']!r} at position {index}: a gap, repeat or swap",
        )
    if row["previous_row_digest_sha256"] != previous:
        raise reader.refuse(
            "journal_chain_broken", "previous_row_digest_sha256 is not the row before's"
        )
    try:
        digest = journal_row_digest(row)
    except AgentbenchError:
        raise reader.refuse("journal_value_invalid", "the row has no canonical form") from None
    if digest != row["row_digest_sha256"]:
        raise reader.refuse("journal_row_edited", "the row does not hash to its row_digest_sha256")
    return stated, digest


_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_PREFIX = re.compile(
    r"-?|-?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?[eE][+-]?[0-9]*"
)
_LITERALS = {"t": "true", "f": "false", "n": "null"}


def cut_short(fragment: bytes) -> bool:
    """Whether bytes can be extended (never edited) into exactly one JSON object."""
    try:
        text = fragment.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Only a code point cut at the very end; a stand-in non-ASCII character is
        # legal exactly where the cut one would be (inside a string).
        if exc.end != len(fragment) or exc.reason != "unexpected end of data":
            return False
        text = fragment[: exc.start].decode("utf-8", "replace") + "\u0080"
    return _object_prefix(text)


def _object_prefix(text: str) -> bool:
    """A pushdown scan of ``text`` as a strict prefix of one JSON object."""
    if not text.startswith("{"):
        return text == ""
    stack = ["}"]
    expect = "key_or_end"  # key_or_end, key, colon, value, value_or_end, comma_or_end
    position = 1
    while position < len(text):
        char = text[position]
        if char in " \t\r\n":
            position += 1
            continue
        if not stack:
            return False  # bytes after the object closed
        if expect in ("value", "value_or_end") and char not in "{[]":
            end = _scalar_end(text, position)
        elif expect in ("key_or_end", "key") and char == '"':
            end = _string_end(text, position + 1)
        else:
            expect = _structural(char, expect, stack)
            if not expect:
                return False
            position += 1
            continue
        if end is None:
            return True  # the text ends inside a scalar that can still be completed
        if end < 0:
            return False
        expect = "colon" if expect in ("key_or_end", "key") else "comma_or_end"
        position = end
    # A whole object parses, so reaching here with it closed means no completion helps.
    return bool(stack)


def _structural(char: str, expect: str, stack: list[str]) -> str:
    """The next expectation after a structural character; ``""`` where it is not one."""
    if expect == "colon":
        return "value" if char == ":" else ""
    if expect in ("value", "value_or_end"):
        if char == "]" and expect == "value_or_end":
            stack.pop()
            return "comma_or_end"
        if char in "{[":
            stack.append("}" if char == "{" else "]")
            return "key_or_end" if char == "{" else "value_or_end"
        return ""
    if expect == "key_or_end" and char == "}":
        stack.pop()
        return "comma_or_end"
    if expect == "comma_or_end":
        if char == ",":
            return "key" if stack[-1] == "}" else "value"
        if char == stack[-1]:
            stack.pop()
            return "comma_or_end"
    return ""


def _scalar_end(text: str, position: int) -> int | None:
    """Where a value's string, literal or number ends: ``None`` if the text ends inside
    one that can still be completed, ``-1`` if it is not one."""
    char = text[position]
    if char == '"':
        return _string_end(text, position + 1)
    if char in "tfn":
        word = _LITERALS[char]
        piece = text[position : position + len(word)]
        if not word.startswith(piece):
            return -1
        return None if len(piece) < len(word) else position + len(word)
    match = re.match(r"[-+0-9.eE]+", text[position:])
    token = match.group(0) if match else ""
    if not token:
        return -1
    if position + len(token) == len(text):
        return None if _NUMBER_PREFIX.fullmatch(token) else -1
    return position + len(token) if _NUMBER.fullmatch(token) else -1


def _string_end(text: str, position: int) -> int | None:
    """The index after a string's closing quote; ``None`` if the text ends inside a
    valid string, ``-1`` if the string is invalid."""
    while position < len(text):
        char = text[position]
        if char == '"':
            return position + 1
        if char == "\\":
            escape = text[position + 1 : position + 2]
            if escape == "":
                return None
            if escape == "u":
                digits = text[position + 2 : position + 6]
                if any(d not in "0123456789abcdefABCDEF" for d in digits):
                    return -1
                if len(digits) < 4:
                    return None
                position += 6
                continue
            if escape not in '"\\/bfnrt':
                return -1
            position += 2
            continue
        if ord(char) < 0x20:
            return -1
        position += 1
    return None


def _decode(raw: bytes, reader: _Reader) -> dict[str, Any] | None:
    """The row, or ``None`` for bytes that are not one JSON value (maybe a cut-short row)."""
    try:
        row = loads_strict(raw.decode("utf-8"), file=str(reader.path), line=reader.line)
    except UnicodeDecodeError:
        return None
    except AgentbenchError as exc:
        if exc.code == "duplicate_key":
            raise reader.refuse("journal_row_malformed", "a duplicate object key") from None
        if exc.code == "non_finite_number":
            raise reader.refuse("journal_value_invalid", "a non-finite number") from None
        if exc.code == "malformed_json":
            return None
        raise
    if not isinstance(row, dict):
        raise reader.refuse("journal_row_malformed", "a row is a JSON object")
    return row


def audit_journal(path: Path, data: bytes | None = None) -> JournalReading:
    """A complete, verified journal, or the refusal; one without a terminal row is refused."""
    reading = read_journal(path, data)
    if reading.terminal_kind is None:
        raise AgentbenchError(
            "journal_incomplete",
            f"{reading.rows_verified} verified rows and no terminal row"
            + (" (the last line is cut short)" if reading.truncated_tail else ""),
            file=str(path),
        )
    return reading
