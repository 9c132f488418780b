"""``agentbench audit REPORT LEDGER_DIR``: hold a run report to the ledgers its cases wrote.

Each case of the report must have its ledger (``--agentbench-ledger``) in
LEDGER_DIR, verified row by row with a terminal row (the ledger's own
refusals keep their codes); what the report says of the case's model traffic
must be what the rows say, re-derived from the rows and never read off the
terminal row: attempts, tokens, the sequence of request digests, and for each
adapter call its index, request digest and decision digest. An excluded case
must end in an excluded terminal under the same code. The run's totals must
be the sum of the cases', and with ``--pricing FILE`` the table must be the
one the report names and each case's cost what its rows' tokens cost. A
ledger in the folder that no case of the report names is refused too.

The judges' calls have ledgers too (``%judges/<rubric>.ndjson``, written when
a run with ``--agentbench-ledger`` is judged): each rubric's traffic in the
judgments file beside the report (``<report>.judgments.json``) must be what
its ledger's rows say, a refused call a row with no decision, and a ledger
with refusals must end excluded under the first one's code.
A ``mixed`` run (cassette mode ``auto``) states how many requests cassettes answered and
how many were recorded, the run and each case: no ledger tells a replayed answer from a
recorded one, but every answered request is one or the other, so each case's two counts
must add up to its rows' requests less those the case limit cut off, the run's must be the
sum of its cases', and the run log beside the report (when there is one) must state the
same mode and totals; a run of any other mode states no counts (``audit_mode_mismatch``).
Every refusal has its own code; the first found is reported.
"""

from __future__ import annotations

import argparse
import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_agentbench.agents.budget import PricingTable, read_pricing
from pytest_agentbench.agents.provenance_records import CaseModelCalls, RunProvenance
from pytest_agentbench.agents.providers import provider_of_label
from pytest_agentbench.agents.usage import CUT_OFF
from pytest_agentbench.cli.report_limit import MAX_REPORT_BYTES, add_max_report_bytes
from pytest_agentbench.judging.documents import judgments_path, read_judgments
from pytest_agentbench.report.judged_summary import JudgeTraffic, judge_ledger_name
from pytest_agentbench.report.run_log import SOURCE_COUNTS, default_log_path
from pytest_agentbench.report.stream import (
    CaseEntry,
    HeadField,
    SuiteEnd,
    SuitesBegin,
    iter_report,
)
from pytest_agentbench.run.case_ledger import LEDGER_SUFFIX, TIMEOUT_EXCLUSION, ledger_path
from pytest_agentbench.sdk.canonical import decimal_text
from pytest_agentbench.sdk.contracts import CaseOutcome, CaseResult, FailureClass
from pytest_agentbench.sdk.errors import AgentbenchError
from pytest_agentbench.sdk.ledger import CallPayload, HeaderPayload, TerminalPayload, audit_ledger
from pytest_agentbench.sdk.ledger.rows import Attempt


def add_parser(commands: Any) -> None:
    audit = commands.add_parser(
        "audit", help="hold a JSON run report to the execution ledgers of its cases"
    )
    audit.set_defaults(handler=cmd_audit)
    audit.add_argument("report", help="a JSON run report written with --agentbench-report")
    audit.add_argument(
        "ledger_dir", help="the folder the run's --agentbench-ledger wrote the cases' ledgers to"
    )
    audit.add_argument("--pricing", help="the pricing table the report names, to re-derive cost")
    add_max_report_bytes(audit)


def cmd_audit(args: argparse.Namespace, registry: Any) -> int:
    pricing = None if args.pricing is None else read_pricing(Path(args.pricing))
    try:
        totals = audit_report(
            Path(args.report), Path(args.ledger_dir), pricing, max_bytes=args.max_report_bytes
        )
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        # A report or ledger edited into a shape no check above foresaw is still a refusal
        # with a code, never a traceback.
        raise _refuse(
            "audit_unreadable",
            f"the report or a ledger does not read as one ({type(exc).__name__}: {exc})",
            Path(args.report),
        ) from None
    held = (
        f"{args.report} holds to {args.ledger_dir}: {totals.cases} cases, "
        f"{totals.calls} calls, {totals.attempts} attempts, "
        f"{totals.input_tokens} + {totals.output_tokens} tokens"
        + (f"; {totals.judge_calls} judge calls" if totals.judge_calls else "")
        + (
            f"; mixed: {totals.cassette_hits} cassette hits, {totals.recorded} recorded"
            if totals.mixed
            else ""
        )
        + ("; not bound by any ledger: " + ", ".join(UNBOUND) if totals.model_run else "")
    )
    if totals.unpriced_costs:
        # An "ok" here would vouch for costs nothing checked (one edited went unnoticed).
        error = _refuse(
            "audit_costs_unchecked",
            f"the report states {', '.join(totals.unpriced_costs)}, which only --pricing "
            f"FILE (the table the report names) can check; everything else {held}",
            Path(args.report),
        )
        print(f"agentbench: {error.render()}", file=sys.stderr)
        return 1
    print(f"ok: {held}")
    return 0


class CaseTotals:
    """What one case's ledger rows say, re-derived from them."""

    def __init__(self, calls: list[CallPayload]) -> None:
        attempts: list[Attempt] = [a for call in calls for a in call.attempts or ()]
        self.attempts = len(attempts)
        self.input_tokens = sum(a.tokens.input or 0 for a in attempts if a.tokens is not None)
        self.output_tokens = sum(a.tokens.output or 0 for a in attempts if a.tokens is not None)
        self.requests = _runs([a.request_digest_sha256 for a in attempts])
        self.cut_off = sum(1 for a in attempts if a.fault == CUT_OFF)
        """Requests the case limit cut off before their answer: neither replayed nor recorded."""
        self.calls = calls

    def cost(self, pricing: PricingTable, model: str, where: Path) -> Decimal:
        price = pricing.models.get(model)
        if price is None:
            raise _refuse(
                "audit_pricing_model_missing",
                f"the pricing table has no price for model {model!r} the report names",
                where,
            )
        return price.cost(self.input_tokens, self.output_tokens)


class RunTotals:
    def __init__(self) -> None:
        self.cases = self.calls = self.attempts = self.input_tokens = self.output_tokens = 0
        self.judge_calls = 0
        self.cassette_hits = self.recorded = 0
        self.mixed = False
        self.cost = Decimal(0)
        self.unpriced_costs: list[str] = []
        """What states a cost the audit could not check (no pricing table): one entry each
        for the cases, the judges and the run."""
        self.model_run = False


def _runs(digests: list[str | None]) -> list[str | None]:
    """Consecutive attempts of one request share its digest: one entry per request."""
    runs: list[str | None] = []
    for digest in digests:
        if not runs or runs[-1] != digest:
            runs.append(digest)
    return runs


def _refuse(code: str, reason: str, where: Path) -> AgentbenchError:
    return AgentbenchError(code, reason, file=str(where))


def _read_report(
    path: Path, max_bytes: int | None = None
) -> tuple[list[tuple[str, CaseResult]], RunProvenance | None]:
    """The report's cases and model run, read as a stream: one case entry at a time."""
    if not path.is_file():
        raise AgentbenchError(
            "unreadable_file", "not a regular file (a run report)", file=str(path)
        )
    cases: list[tuple[str, CaseResult]] = []
    model_run: RunProvenance | None = None
    has_suites = False
    try:
        for event in iter_report(path, max_bytes=max_bytes, option=MAX_REPORT_BYTES):
            if isinstance(event, HeadField):
                if event.key == "model_run" and event.value is not None:
                    model_run = RunProvenance.model_validate(event.value)
            elif isinstance(event, SuitesBegin):
                has_suites = True
            elif isinstance(event, CaseEntry):
                entry = event.value
                cases.append((str(entry["nodeid"]), CaseResult.model_validate(entry["result"])))
            elif isinstance(event, SuiteEnd) and not event.cases_streamed:
                # A suite that is not an object, or whose cases are not a list, reads
                # (or fails) as it did when the report was read whole.
                for entry in event.value.get("cases", []):
                    nodeid, result = str(entry["nodeid"]), entry["result"]
                    cases.append((nodeid, CaseResult.model_validate(result)))
    except (ValidationError, KeyError, TypeError) as exc:
        raise _refuse(
            "audit_report_invalid", f"a case or model_run does not read: {exc}", path
        ) from None
    if not has_suites:
        raise _refuse("audit_report_invalid", "not a JSON run report", path)
    return cases, model_run


def audit_report(
    report: Path, folder: Path, pricing: PricingTable | None, *, max_bytes: int | None = None
) -> RunTotals:
    """Every case of ``report`` against its ledger in ``folder``; the first refusal is raised."""
    cases, model_run = _read_report(report, max_bytes)
    if pricing is not None and (model_run is None or model_run.pricing_digest != pricing.digest):
        raise _refuse(
            "audit_pricing_mismatch", "the pricing table is not the one the report names", report
        )
    totals = RunTotals()
    audited: set[Path] = set()
    for nodeid, result in cases:
        if result.outcome is CaseOutcome.SKIPPED:
            continue  # never run: no ledger was opened for it
        path = ledger_path(folder, result.suite_id, nodeid.rpartition("::")[2])
        if not path.is_file():
            raise _refuse("audit_ledger_missing", f"no ledger for case {nodeid}", path)
        audited.add(path)
        case, stated_calls = _audit_case(path, nodeid, result, model_run, pricing)
        totals.cases += 1
        totals.calls += len(case.requests)
        totals.attempts += case.attempts
        totals.input_tokens += case.input_tokens
        totals.output_tokens += case.output_tokens
        if stated_calls is not None:
            totals.cassette_hits += stated_calls.cassette_hits or 0
            totals.recorded += stated_calls.recorded or 0
        if pricing is not None and model_run is not None:
            totals.cost += case.cost(pricing, model_run.model, report)
    judged_costs = 0
    for path, traffic in _judge_traffic(report, folder):
        audited.add(path)
        judged_costs += traffic.cost is not None
        judged = _audit_judges(path, traffic, pricing)
        totals.judge_calls += judged.sent
    unreported = sorted(set(folder.rglob(f"*{LEDGER_SUFFIX}")) - audited)
    if unreported:
        raise _refuse(
            "audit_ledger_unreported", "a ledger no case of the report names", unreported[0]
        )
    if model_run is not None:
        _check_run(report, model_run, totals, pricing is not None)
        _check_mixed_run(report, model_run, totals)
        totals.model_run = True
    if pricing is None:
        totals.unpriced_costs = _stated_costs(cases, model_run, judged_costs)
    return totals


def _stated_costs(
    cases: list[tuple[str, CaseResult]], model_run: RunProvenance | None, judged: int
) -> list[str]:
    """What of the report states a cost: the cases' (how many), the judges', the run's."""
    stated = []
    priced_cases = sum(
        1
        for _, result in cases
        if result.model_calls is not None
        and CaseModelCalls.model_validate(result.model_calls).cost is not None
    )
    if priced_cases:
        stated.append(f"the cost of {priced_cases} case{'s' if priced_cases != 1 else ''}")
    if judged:
        stated.append("the judges' cost")
    if model_run is not None and model_run.cost is not None:
        stated.append(f"the run's cost {model_run.cost}")
    return stated


def _audit_case(
    path: Path,
    nodeid: str,
    result: CaseResult,
    model_run: RunProvenance | None,
    pricing: PricingTable | None,
) -> tuple[CaseTotals, CaseModelCalls | None]:
    """The case's rows re-derived, and its model calls as the report states them (checked
    against the rows; ``None`` when it states none)."""
    reading = audit_ledger(path)
    calls = [CallPayload.model_validate(row["call"]) for row in reading.rows if "call" in row]
    terminal = TerminalPayload.model_validate(reading.rows[-1]["terminal"])
    header = HeaderPayload.model_validate(reading.rows[0]["header"])
    _check_header(path, nodeid, header, model_run, pricing)
    excluded = result.outcome is CaseOutcome.EXCLUDED
    # The case limit ends the ledger excluded (case_timeout); the report fails the case.
    timed_out = (
        result.outcome is CaseOutcome.FAILED
        and result.failure_class is FailureClass.AGENT_ERROR
        and (terminal.kind, terminal.exclusion_code) == ("excluded", TIMEOUT_EXCLUSION)
    )
    if not timed_out and (
        excluded != (terminal.kind == "excluded")
        or (excluded and terminal.exclusion_code != result.exclusion)
    ):
        raise _refuse(
            "audit_terminal_mismatch",
            f"case {nodeid} is {result.outcome.value} ({result.exclusion}), its ledger ends "
            f"{terminal.kind} ({terminal.exclusion_code})",
            path,
        )
    derived = CaseTotals(calls)
    if result.model_calls is None:
        if derived.attempts:
            raise _refuse(
                "audit_totals_mismatch", f"case {nodeid} reports no model calls; its rows do", path
            )
        return derived, None
    stated = CaseModelCalls.model_validate(result.model_calls)
    if (stated.attempts, stated.input_tokens, stated.output_tokens) != (
        derived.attempts,
        derived.input_tokens,
        derived.output_tokens,
    ):
        raise _refuse(
            "audit_totals_mismatch",
            f"case {nodeid}: the report's attempts and tokens are not those of its rows",
            path,
        )
    if _runs(list(stated.request_digests)) != derived.requests:
        raise _refuse(
            "audit_request_mismatch",
            f"case {nodeid}: the report's request digests are not its rows'",
            path,
        )
    _check_decisions(path, nodeid, stated, calls)
    _check_sources(path, nodeid, stated, derived, model_run)
    if pricing is not None and model_run is not None:
        cost = decimal_text(derived.cost(pricing, model_run.model, path))
        if stated.cost != cost:
            raise _refuse(
                "audit_cost_mismatch",
                f"case {nodeid}: cost {stated.cost}, its rows' tokens cost {cost}",
                path,
            )
    return derived, stated


HEADER_BINDS: tuple[tuple[str, str], ...] = (
    ("provider", "provider"),
    ("model", "model"),
    ("settings_digest_sha256", "settings_digest"),
    ("pricing_digest_sha256", "pricing_digest"),
)
"""``(ledger header provider field, report model_run field)``: what each header binds.

Not the endpoint's host nor the cassette mode: a case's ledger is the same whichever
endpoint answered and whether it was recorded or replayed (a replay reproduces the
recording's ledgers byte for byte), so no ledger can vouch for them; ``cmd_audit`` says
so rather than pass them as checked. Nor the settings in clear that change no request (the
endpoint's path, the rate limits): the rest are held to the digest the headers bind."""
UNBOUND = (
    "base_url_host",
    "mode",
    "settings.base_url_path",
    "settings.max_connections",
    "settings.requests_per_minute",
    "settings.tokens_per_minute",
)


def _check_header(
    path: Path,
    nodeid: str,
    header: HeaderPayload,
    model_run: RunProvenance | None,
    pricing: PricingTable | None,
) -> None:
    """The report's model run is the one every case's ledger header recorded, field by field."""
    provider = header.provider
    if (provider is None) != (model_run is None):
        raise _refuse(
            "audit_header_mismatch",
            f"case {nodeid}: "
            + (
                "the report names a model run, its ledger header none"
                if provider is None
                else "its ledger header names a model run, the report none"
            ),
            path,
        )
    if provider is None or model_run is None:
        return
    stated = model_run.model_dump(mode="json")
    for field, reported in HEADER_BINDS:
        if field not in provider and field == "pricing_digest_sha256":
            recorded = None  # a run without a pricing table's price records none
        else:
            recorded = provider.get(field)
        if recorded != stated[reported]:
            raise _refuse(
                "audit_header_mismatch",
                f"case {nodeid}: the report's model_run.{reported} is {stated[reported]!r}, "
                f"its ledger header's provider.{field} {recorded!r}",
                path,
            )
    if pricing is not None:
        price = pricing.models.get(model_run.model)
        rates = (provider.get("input_per_token"), provider.get("output_per_token"))
        if price is None or rates != (price.input_per_token, price.output_per_token):
            raise _refuse(
                "audit_header_mismatch",
                f"case {nodeid}: the pricing table's rates for {model_run.model!r} are not "
                "those its ledger header recorded",
                path,
            )


def _check_decisions(
    path: Path, nodeid: str, stated: CaseModelCalls, calls: list[CallPayload]
) -> None:
    if len(stated.decisions) != len(calls):
        raise _refuse(
            "audit_decision_mismatch",
            f"case {nodeid}: {len(stated.decisions)} decisions reported, {len(calls)} call rows",
            path,
        )
    for decision, call in zip(stated.decisions, calls, strict=True):
        recorded = None if call.decision is None else call.decision.decision_digest_sha256
        if (decision.call_index, decision.decision_digest_sha256) != (call.call_index, recorded):
            raise _refuse(
                "audit_decision_mismatch",
                f"case {nodeid}: decision of call {call.call_index} is not the row's",
                path,
            )
        if decision.request_digest_sha256 != call.request_digest_sha256:
            raise _refuse(
                "audit_request_mismatch",
                f"case {nodeid}: request behind call {call.call_index} is not the row's",
                path,
            )


class JudgeTotals(CaseTotals):
    """What a rubric's judge ledger says: sent calls (with attempts), refused (no decision)."""

    def __init__(self, calls: list[CallPayload]) -> None:
        super().__init__(calls)
        self.sent = sum(1 for call in calls if call.decision is not None)
        self.refused = len(calls) - self.sent
        self.models = list(dict.fromkeys(call.method or "" for call in calls))

    def judge_cost(self, pricing: PricingTable) -> Decimal:
        cost = Decimal(0)
        for call in self.calls:
            for attempt in call.attempts or ():
                if attempt.tokens is not None and call.method in pricing.models:
                    price = pricing.models[call.method]
                    cost += price.cost(attempt.tokens.input or 0, attempt.tokens.output or 0)
        return cost


def _judge_traffic(report: Path, folder: Path) -> list[tuple[Path, JudgeTraffic]]:
    """Each judged rubric's ledger in ``folder`` and the traffic the judgments file states."""
    beside = judgments_path(report)
    if not beside.is_file():
        return []
    document = read_judgments(beside)
    found: list[tuple[Path, JudgeTraffic]] = []
    for name, entry in sorted(document.rubrics.items()):
        traffic = entry.traffic
        if traffic is None or traffic.ledger is None:
            continue
        if traffic.ledger != judge_ledger_name(name):
            raise _refuse(
                "audit_judge_mismatch",
                f"rubric {name}'s ledger is named {traffic.ledger!r}, "
                f"not {judge_ledger_name(name)!r}",
                beside,
            )
        found.append((folder / traffic.ledger, traffic))
    return found


def _audit_judges(path: Path, traffic: JudgeTraffic, pricing: PricingTable | None) -> JudgeTotals:
    if not path.is_file():
        raise _refuse("audit_ledger_missing", "no ledger for the judges' calls", path)
    reading = audit_ledger(path)
    calls = [CallPayload.model_validate(row["call"]) for row in reading.rows if "call" in row]
    terminal = TerminalPayload.model_validate(reading.rows[-1]["terminal"])
    derived = JudgeTotals(calls)
    stated = (
        traffic.calls,
        traffic.attempts,
        traffic.input_tokens,
        traffic.output_tokens,
        traffic.refused,
        list(traffic.models),
    )
    rows = (
        derived.sent,
        derived.attempts,
        derived.input_tokens,
        derived.output_tokens,
        derived.refused,
        derived.models,
    )
    if stated != rows:
        raise _refuse(
            "audit_judge_mismatch",
            f"the judgments state calls, attempts, tokens, refusals, models {stated}; "
            f"the ledger's rows {rows}",
            path,
        )
    expected = ("excluded", traffic.refusal) if traffic.refused else ("scored", None)
    if (terminal.kind, terminal.exclusion_code) != expected:
        raise _refuse(
            "audit_terminal_mismatch",
            f"the judges' ledger ends {terminal.kind} ({terminal.exclusion_code}), "
            f"the judgments say {expected[0]} ({expected[1]})",
            path,
        )
    if pricing is not None and traffic.cost != decimal_text(derived.judge_cost(pricing)):
        raise _refuse(
            "audit_cost_mismatch",
            f"the judges' cost is stated {traffic.cost}; their rows' tokens cost "
            f"{decimal_text(derived.judge_cost(pricing))}",
            path,
        )
    return derived


def _check_sources(
    path: Path,
    nodeid: str,
    stated: CaseModelCalls,
    derived: CaseTotals,
    model_run: RunProvenance | None,
) -> None:
    """A case's cassette hits and recordings: stated in a ``mixed`` run only, and adding up
    to the requests its rows say were answered (every answer was replayed or recorded)."""
    mixed = model_run is not None and model_run.mode == "mixed"
    counts = (stated.cassette_hits, stated.recorded)
    if not mixed:
        if counts != (None, None):
            raise _refuse(
                "audit_mode_mismatch",
                f"case {nodeid} states cassette hits and recordings; the run's mode is "
                f"{None if model_run is None else model_run.mode!r}, not 'mixed'",
                path,
            )
        return
    hits, recorded = counts
    if hits is None or recorded is None:
        raise _refuse(
            "audit_mode_mismatch",
            f"case {nodeid} of a mixed run states no cassette hits or recordings",
            path,
        )
    answered = stated.calls - derived.cut_off
    if hits + recorded != answered:
        raise _refuse(
            "audit_mode_mismatch",
            f"case {nodeid}: {hits} cassette hits and {recorded} recorded, but its rows "
            f"answer {answered} requests",
            path,
        )


def _check_mixed_run(report: Path, model_run: RunProvenance, totals: RunTotals) -> None:
    """The run's mode and counts: a ``mixed`` run's counts are its cases' sums, and the run
    log beside the report (if any) states the same mode and totals."""
    counts = (model_run.cassette_hits, model_run.recorded)
    if model_run.mode != "mixed":
        if counts != (None, None):
            raise _refuse(
                "audit_mode_mismatch",
                f"the run states cassette hits and recordings; its mode is {model_run.mode!r}",
                report,
            )
    elif counts != (totals.cassette_hits, totals.recorded):
        raise _refuse(
            "audit_mode_mismatch",
            f"the mixed run states cassette hits and recorded {counts}; its cases' sum to "
            f"{(totals.cassette_hits, totals.recorded)}",
            report,
        )
    totals.mixed = model_run.mode == "mixed"
    log = default_log_path(report)
    if not log.is_file():
        return
    events = _log_events(log)
    start = next(((n, e) for n, e in events if e.get("event") == "start"), None)
    end = next((e for _, e in events if e.get("event") == "end"), None)
    logged = None if start is None else _logged_mode(log, *start)
    if logged is not None and logged != model_run.mode:
        raise _refuse(
            "audit_mode_mismatch",
            f"the run log states mode {logged!r}, the report {model_run.mode!r}",
            log,
        )
    if end is not None and totals.mixed:
        stated = tuple(end.get(name) for name in SOURCE_COUNTS)
        if stated != counts:
            raise _refuse(
                "audit_mode_mismatch",
                f"the run log's end states cassette hits and recorded {stated}; the report "
                f"{counts}",
                log,
            )


def _log_events(log: Path) -> list[tuple[int, dict[str, Any]]]:
    """The run log's events with their line numbers; a line that is not a JSON object is
    refused naming the log and the line (not the report the log lies beside)."""
    try:
        text = log.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise AgentbenchError(
            "audit_unreadable", f"the run log is not UTF-8 (byte {exc.start})", file=str(log)
        ) from None
    events: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line:
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AgentbenchError(
                "audit_unreadable",
                f"the run log's event is not JSON ({exc.msg}, column {exc.colno})",
                file=str(log),
                line=number,
            ) from None
        if not isinstance(event, dict):
            raise AgentbenchError(
                "audit_unreadable",
                f"the run log's event is a JSON {type(event).__name__}, not an object",
                file=str(log),
                line=number,
            )
        events.append((number, event))
    return events


def _logged_mode(log: Path, number: int, start: dict[str, Any]) -> str | None:
    """The mode the log's ``start`` event states (``None`` for a run without a model)."""
    model = start.get("model")
    if model is None:
        return None
    mode = model.get("mode") if isinstance(model, dict) else None
    if not isinstance(mode, str):
        raise AgentbenchError(
            "audit_unreadable",
            f"the run log's start event states no model mode ({mode!r})",
            file=str(log),
            line=number,
            field="model.mode",
        )
    return mode


def _check_run(report: Path, model_run: RunProvenance, totals: RunTotals, priced: bool) -> None:
    settings = model_run.settings
    provider = provider_of_label(model_run.provider)
    if (
        settings is not None
        and settings.digest(model_run.model, provider) != model_run.settings_digest
    ):
        # The ledgers bind the digest; the settings in clear are bound only through it.
        raise _refuse(
            "audit_settings_mismatch",
            f"the run's settings in clear hash to sha256:"
            f"{settings.digest(model_run.model, provider)}, "
            f"not to its settings_digest sha256:{model_run.settings_digest}",
            report,
        )
    stated = (model_run.calls, model_run.attempts, model_run.input_tokens, model_run.output_tokens)
    derived = (totals.calls, totals.attempts, totals.input_tokens, totals.output_tokens)
    if stated != derived:
        raise _refuse(
            "audit_run_totals_mismatch",
            f"the run states calls, attempts, tokens {stated}; its ledgers' rows {derived}",
            report,
        )
    if priced and model_run.cost != decimal_text(totals.cost):
        raise _refuse(
            "audit_cost_mismatch",
            f"the run states cost {model_run.cost}; its ledgers' tokens cost "
            f"{decimal_text(totals.cost)}",
            report,
        )
