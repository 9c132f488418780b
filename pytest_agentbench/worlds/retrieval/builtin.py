"""The project's own retrieval fixture, authored here in the original's format.

Twenty-four synthetic tasks over thirty-four Markdown documents in
twenty-six collections (one per task plus two distractor collections), in
the nine categories of the seed: three tasks each of exact identifiers,
ambiguity, multi-document comparison and meeting decisions, two each of
temporal questions, typed relationships and code documentation, four of
multilingual prose (Spanish, Chinese, French, German) and two
missing-evidence abstentions. The seed names the categories but no per-category
counts; this split keeps every category at two or more tasks with one
multilingual task per language.

Special tasks, as the issue asks: two scoped tasks with a distractor
collection, two with forbidden evidence, two abstentions, and one task with a
one-call budget that fails on unexpected evidence.

:func:`build` writes the tree (``scale`` > 1 repeats the tasks under fresh
ids, for the loading and scoring benchmarks); the committed suite is its
output at scale 1, which a test regenerates and compares byte for byte.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.worlds.retrieval.writer import (
    DocSpec,
    Evidence,
    TaskSpec,
    json_file_bytes,
    write_fixture,
)

SUITE_ID = "retrieval-fixture-v1"
FIXTURE_VERSION = "2026-11-30.1"
PROVENANCE = (
    "Synthetic tasks and documents written for pytest-agentbench in the "
    "agentic-retrieval@1 fixture format; no text is taken from another fixture."
)
CUES_FILE = "fixture-agent.cues.json"
INSTRUCTIONS = (
    "Answer with a final envelope holding one typed claim per public claim key.",
    "Cite the exact source lines you read; record a gap when the corpus lacks the evidence.",
)


def _id(prefix: str, width: int, seed: str) -> str:
    return prefix + hashlib.sha256(seed.encode()).hexdigest()[:width]


def _doc(collection: str, rel_path: str, *lines: str) -> DocSpec:
    return DocSpec(collection, rel_path, "\n".join(lines) + "\n")


# claimKey -> cues (the first cue is preferred in queries)
CUES: dict[str, list[str]] = {
    "errorIdentifier": ["error identifier"],
    "incidentId": ["incident identifier"],
    "invoiceId": ["invoice identifier"],
    "migrationOwner": ["ledger migration owner"],
    "serviceOwner": ["service owner"],
    "initiativeOwner": ["initiative owner"],
    "retentionComparison": ["log retention"],
    "bothIncludeAuditLogs": ["audit logs included"],
    "earliestMilestone": ["milestone date"],
    "selectedDatabase": ["decision", "database"],
    "rolloutRegion": ["selected rollout region"],
    "approvedBudget": ["approved budget", "budget"],
    "launchDate": ["launch date"],
    "escalationWindow": ["escalation window"],
    "dependency": ["depends on"],
    "ownerTeam": ["owned by"],
    "configKey": ["configuration key"],
    "defaultBatchSize": ["batch size", "batchsize"],
    "automaticExport": ["exportación automática", "automatic export"],
    "releaseCodename": ["发布代号"],
    "renewalDate": ["date de renouvellement"],
    "supportCity": ["gewählter standort"],
    "projectCodename": ["project codename"],
    "availabilityTarget": ["availability target"],
}


def _specs() -> list[dict[str, Any]]:
    """Each task as keyword arguments of TaskSpec, collections named by position."""
    return [
        {
            "category": "exact_identifier",
            "goal": "Which error identifier does the payments gateway report on a failed capture?",
            "claim_key": "errorIdentifier",
            "value_type": "identifier",
            "expected": "PAY-GW-4417",
            "docs": [
                (
                    0,
                    "payments-gateway-runbook.md",
                    [
                        "# Payments gateway runbook",
                        "",
                        "The gateway retries a declined capture twice before it pages on-call.",
                        "",
                        "Error identifier: PAY-GW-4417",
                        "Fallback queue: payments-retry",
                    ],
                ),
            ],
            "required": [("payments-gateway-runbook.md", "Error identifier")],
        },
        {
            "category": "exact_identifier",
            "goal": "Which incident identifier was assigned to the storage outage?",
            "claim_key": "incidentId",
            "value_type": "identifier",
            "expected": "INC-7731",
            "max_calls": 1,
            "fail_on_unexpected": True,
            "docs": [
                (
                    0,
                    "storage-outage-review.md",
                    [
                        "# Storage outage review",
                        "",
                        "Incident identifier: INC-7731",
                        "Severity: 2",
                        "Root cause: an expired certificate on the replica set.",
                    ],
                ),
            ],
            "required": [("storage-outage-review.md", "Incident identifier")],
        },
        {
            "category": "exact_identifier",
            "goal": "Report the invoice identifier of the March hosting invoice.",
            "claim_key": "invoiceId",
            "value_type": "identifier",
            "expected": "INV-2026-0042",
            "docs": [
                (
                    0,
                    "hosting-invoices.md",
                    [
                        "# Hosting invoices",
                        "",
                        "March hosting was billed on the first working day.",
                        "Invoice identifier: INV-2026-0042",
                        "Amount due: 1840 EUR",
                    ],
                ),
            ],
            "required": [("hosting-invoices.md", "Invoice identifier")],
        },
        {
            "category": "ambiguity",
            "goal": "Who owns the ledger migration (not the search migration)?",
            "claim_key": "migrationOwner",
            "value_type": "string",
            "expected": "Dana Whitfield",
            "docs": [
                (
                    0,
                    "ledger-plan.md",
                    [
                        "# Ledger migration plan",
                        "",
                        "Ledger migration owner: Dana Whitfield",
                        "Cutover window: two weekends in the spring.",
                    ],
                ),
                (
                    0,
                    "search-plan.md",
                    [
                        "# Search migration plan",
                        "",
                        "Search migration owner: Priya Raman",
                        "The index is rebuilt before the ledger cutover.",
                    ],
                ),
            ],
            "required": [("ledger-plan.md", "Ledger migration owner")],
            "forbidden": [("search-plan.md", "Search migration owner")],
        },
        {
            "category": "ambiguity",
            "goal": "Which team is the service owner of the catalog API, not its web client?",
            "claim_key": "serviceOwner",
            "value_type": "string",
            "normalizer": "trim-lower-v1",
            "expected": "team lumen",
            "docs": [
                (
                    0,
                    "catalog-api.md",
                    [
                        "# Catalog API",
                        "",
                        "Service owner: Team Lumen",
                        "Paging rota: weekdays only.",
                    ],
                ),
                (
                    0,
                    "catalog-web.md",
                    [
                        "# Catalog web client",
                        "",
                        "Client maintainer: Team Brass",
                        "The client calls the catalog API through the edge proxy.",
                    ],
                ),
            ],
            "required": [("catalog-api.md", "Service owner")],
        },
        {
            "category": "ambiguity",
            "goal": "Name the initiative owner of the onboarding revamp (programme collection).",
            "claim_key": "initiativeOwner",
            "value_type": "string",
            "expected": "Mara Oduya",
            "scope": 0,
            "docs": [
                (
                    0,
                    "onboarding-revamp.md",
                    [
                        "# Onboarding revamp",
                        "",
                        "Initiative owner: Mara Oduya",
                        "Sponsor: the customer success director.",
                    ],
                ),
                (
                    1,
                    "archived-onboarding.md",
                    [
                        "# Archived onboarding pilot",
                        "",
                        "Initiative owner: Lee Tran",
                        "The pilot closed before the revamp began.",
                    ],
                ),
            ],
            "required": [("onboarding-revamp.md", "Initiative owner")],
        },
        {
            "category": "multi_document_comparison",
            "goal": "Compare the log retention of the standard and the regulated tier.",
            "claim_key": "retentionComparison",
            "value_type": "string",
            "expected": "Standard: 30 days; Regulated: 400 days",
            "docs": [
                (
                    0,
                    "standard-tier.md",
                    [
                        "# Standard tier",
                        "",
                        "Standard log retention: 30 days",
                    ],
                ),
                (
                    0,
                    "regulated-tier.md",
                    [
                        "# Regulated tier",
                        "",
                        "Regulated tier log retention: 400 days",
                    ],
                ),
            ],
            "required": [
                ("standard-tier.md", "Standard log retention"),
                ("regulated-tier.md", "Regulated tier log retention"),
            ],
        },
        {
            "category": "multi_document_comparison",
            "goal": "Do both support plans include audit logs?",
            "claim_key": "bothIncludeAuditLogs",
            "value_type": "boolean",
            "expected": True,
            "docs": [
                (
                    0,
                    "plan-team.md",
                    [
                        "# Team plan",
                        "",
                        "Audit logs included: yes",
                        "Seats: up to 25.",
                    ],
                ),
                (
                    0,
                    "plan-business.md",
                    [
                        "# Business plan",
                        "",
                        "Audit logs included: yes, with export",
                        "Seats: unlimited.",
                    ],
                ),
            ],
            "required": [
                ("plan-team.md", "Audit logs included"),
                ("plan-business.md", "Audit logs included"),
            ],
        },
        {
            "category": "multi_document_comparison",
            "goal": "Across the two project plans, what is the earliest milestone date?",
            "claim_key": "earliestMilestone",
            "value_type": "date",
            "expected": "2026-04-02",
            "docs": [
                (
                    0,
                    "alpha-plan.md",
                    [
                        "# Alpha plan",
                        "",
                        "Milestone date: 2026-05-18",
                    ],
                ),
                (
                    0,
                    "beta-plan.md",
                    [
                        "# Beta plan",
                        "",
                        "Milestone date: 2026-04-02",
                    ],
                ),
            ],
            "required": [("alpha-plan.md", "Milestone date"), ("beta-plan.md", "Milestone date")],
        },
        {
            "category": "meeting_decision",
            "goal": "Which database did the architecture meeting decide on for the order store?",
            "claim_key": "selectedDatabase",
            "value_type": "string",
            "expected": "PostgreSQL 16",
            "docs": [
                (
                    0,
                    "architecture-meeting.md",
                    [
                        "# Architecture meeting, order store",
                        "",
                        "Attendees: storage, payments and platform leads.",
                        "Options discussed: a document store, MySQL 8 and PostgreSQL 16.",
                        "Decision: we will use PostgreSQL 16 for the order store.",
                    ],
                ),
            ],
            "required": [("architecture-meeting.md", "Decision:")],
        },
        {
            "category": "meeting_decision",
            "goal": "What rollout region did the launch meeting select, per the launch collection?",
            "claim_key": "rolloutRegion",
            "value_type": "string",
            "expected": "eu-west-2",
            "scope": 0,
            "docs": [
                (
                    0,
                    "launch-meeting.md",
                    [
                        "# Launch meeting notes",
                        "",
                        "Selected rollout region: eu-west-2",
                        "Follow-up: confirm capacity with the network team.",
                    ],
                ),
                (
                    1,
                    "rehearsal-meeting.md",
                    [
                        "# Rehearsal meeting notes",
                        "",
                        "Selected rollout region: us-east-1",
                        "This was the dry run, not the launch.",
                    ],
                ),
            ],
            "required": [("launch-meeting.md", "Selected rollout region")],
        },
        {
            "category": "meeting_decision",
            "goal": "What budget did the steering meeting approve for the pilot?",
            "claim_key": "approvedBudget",
            "value_type": "number",
            "expected": 48000,
            "docs": [
                (
                    0,
                    "steering-meeting.md",
                    [
                        "# Steering meeting",
                        "",
                        "The committee reviewed the pilot scope.",
                        "Approved budget: 48000 EUR",
                    ],
                ),
            ],
            "required": [("steering-meeting.md", "Approved budget")],
        },
        {
            "category": "temporal",
            "goal": "What is the current launch date of the mobile app?",
            "claim_key": "launchDate",
            "value_type": "date",
            "expected": "2026-09-14",
            "docs": [
                (
                    0,
                    "mobile-launch.md",
                    [
                        "# Mobile app launch",
                        "",
                        "Launch date (original): 2026-08-01",
                        "Launch date (revised): 2026-09-14",
                    ],
                ),
                (
                    0,
                    "mobile-changelog.md",
                    [
                        "# Mobile changelog",
                        "",
                        "The beta channel opened to staff in June.",
                    ],
                ),
            ],
            "required": [("mobile-launch.md", "(revised)")],
            "forbidden": [("mobile-launch.md", "(original)")],
        },
        {
            "category": "temporal",
            "goal": "How long is the escalation window for priority incidents?",
            "claim_key": "escalationWindow",
            "value_type": "string",
            "expected": "45 minutes",
            "docs": [
                (
                    0,
                    "incident-policy.md",
                    [
                        "# Incident policy",
                        "",
                        "Escalation window: 45 minutes",
                        "Applies to priority one and two incidents.",
                    ],
                ),
                (
                    0,
                    "policy-history.md",
                    [
                        "# Policy history",
                        "",
                        "The policy was last reviewed in the autumn.",
                    ],
                ),
            ],
            "required": [("incident-policy.md", "Escalation window")],
        },
        {
            "category": "typed_relationship",
            "goal": "Which service does the billing worker depend on?",
            "claim_key": "dependency",
            "value_type": "string",
            "expected": "ledger-api",
            "docs": [
                (
                    0,
                    "billing-worker.md",
                    [
                        "# Billing worker",
                        "",
                        "Runs every ten minutes.",
                        "Depends on: ledger-api",
                    ],
                ),
            ],
            "required": [("billing-worker.md", "Depends on")],
        },
        {
            "category": "typed_relationship",
            "goal": "Which team owns the feature-flag service?",
            "claim_key": "ownerTeam",
            "value_type": "string",
            "expected": "Platform Reliability",
            "docs": [
                (
                    0,
                    "feature-flags.md",
                    [
                        "# Feature-flag service",
                        "",
                        "Owned by: Platform Reliability",
                        "Flags are evaluated at the edge.",
                    ],
                ),
            ],
            "required": [("feature-flags.md", "Owned by")],
        },
        {
            "category": "code_documentation",
            "goal": "Which configuration key limits the sync batch?",
            "claim_key": "configKey",
            "value_type": "identifier",
            "expected": "SYNC_BATCH.LIMIT",
            "docs": [
                (
                    0,
                    "sync-config.md",
                    [
                        "# Sync configuration",
                        "",
                        "Configuration key: SYNC_BATCH.LIMIT",
                        "",
                        "```toml",
                        "[sync_batch]",
                        "limit = 500",
                        "```",
                    ],
                ),
            ],
            "required": [("sync-config.md", "Configuration key")],
        },
        {
            "category": "code_documentation",
            "goal": "What is the default batch size of the export client?",
            "claim_key": "defaultBatchSize",
            "value_type": "number",
            "expected": 250,
            "docs": [
                (
                    0,
                    "export-client.md",
                    [
                        "# Export client",
                        "",
                        "Default batch size: 250 records",
                        "",
                        "```yaml",
                        "batchSize: 250",
                        "```",
                    ],
                ),
            ],
            "required": [("export-client.md", "Default batch size")],
        },
        {
            "category": "multilingual",
            "goal": "¿Está activada la exportación automática de informes?",
            "claim_key": "automaticExport",
            "value_type": "boolean",
            "expected": True,
            "docs": [
                (
                    0,
                    "informes.md",
                    [
                        "# Informes mensuales",
                        "",
                        "Exportación automática: activada",
                        "Formato: CSV con separador de punto y coma.",
                    ],
                ),
            ],
            "required": [("informes.md", "Exportación automática")],
        },
        {
            "category": "multilingual",
            "goal": "下一个版本的发布代号是什么？",  # noqa: RUF001
            "claim_key": "releaseCodename",
            "value_type": "string",
            "expected": "青鸟",
            "docs": [
                (
                    0,
                    "发布计划.md",
                    [
                        "# 发布计划",
                        "",
                        "发布代号：青鸟",  # noqa: RUF001
                        "预计时间：第三季度。",  # noqa: RUF001
                    ],
                ),
            ],
            "required": [("发布计划.md", "发布代号")],
        },
        {
            "category": "multilingual",
            "goal": "Quelle est la date de renouvellement du contrat d'hébergement ?",
            "claim_key": "renewalDate",
            "value_type": "date",
            "expected": "2027-01-31",
            "docs": [
                (
                    0,
                    "contrat-hebergement.md",
                    [
                        "# Contrat d'hébergement",
                        "",
                        "Date de renouvellement : 2027-01-31",
                        "Préavis : trois mois.",
                    ],
                ),
            ],
            "required": [("contrat-hebergement.md", "Date de renouvellement")],
        },
        {
            "category": "multilingual",
            "goal": "Welcher Standort wurde für den Support gewählt?",
            "claim_key": "supportCity",
            "value_type": "string",
            "expected": "Leipzig",
            "docs": [
                (
                    0,
                    "support-standort.md",
                    [
                        "# Support-Standort",
                        "",
                        "Gewählter Standort: Leipzig",
                        "Begründung: Nähe zum Rechenzentrum.",
                    ],
                ),
            ],
            "required": [("support-standort.md", "Gewählter Standort")],
        },
        {
            "category": "missing_evidence",
            "goal": "What is the project codename of the warehouse rewrite?",
            "claim_key": "projectCodename",
            "value_type": "string",
            "expected": None,
            "docs": [
                (
                    0,
                    "warehouse-rewrite.md",
                    [
                        "# Warehouse rewrite",
                        "",
                        "The project replaces the nightly batch loader.",
                        "Status: design review pending.",
                    ],
                ),
                (
                    0,
                    "warehouse-faq.md",
                    [
                        "# Warehouse FAQ",
                        "",
                        "Naming is decided after the design review.",
                    ],
                ),
            ],
        },
        {
            "category": "missing_evidence",
            "goal": "What availability target does the reporting service commit to?",
            "claim_key": "availabilityTarget",
            "value_type": "number",
            "expected": None,
            "docs": [
                (
                    0,
                    "reporting-service.md",
                    [
                        "# Reporting service",
                        "",
                        "Availability is reviewed each quarter.",
                        "No commitment has been published yet.",
                    ],
                ),
            ],
        },
    ]


def fixture_tasks(scale: int = 1) -> list[TaskSpec]:
    """The tasks; ``scale`` copies of each under fresh task and collection ids."""
    tasks: list[TaskSpec] = []
    counter = 0
    for copy in range(scale):
        for index, spec in enumerate(_specs()):
            seed = f"{SUITE_ID}:{copy}:{index}"
            task_id = _id("t", 7, seed)
            doc_rows: Sequence[tuple[int, str, list[str]]] = spec["docs"]
            positions = sorted({position for position, _, _ in doc_rows})
            collections = {}
            for position in positions:
                collections[position] = f"c{counter % 4096:03x}"
                counter += 1
            docs = tuple(
                _doc(collections[position], rel_path, *lines)
                for position, rel_path, lines in doc_rows
            )
            scope = spec.get("scope")
            tasks.append(
                TaskSpec(
                    task_id=task_id,
                    category=spec["category"],
                    goal=spec["goal"],
                    instructions=INSTRUCTIONS,
                    claim_key=spec["claim_key"],
                    value_type=spec["value_type"],
                    docs=docs,
                    expected=spec["expected"],
                    normalizer=spec.get("normalizer"),
                    required=tuple(Evidence(d, n) for d, n in spec.get("required", [])),
                    optional=tuple(Evidence(d, n) for d, n in spec.get("optional", [])),
                    forbidden=tuple(Evidence(d, n) for d, n in spec.get("forbidden", [])),
                    scope=None if scope is None else collections[scope],
                    max_calls=spec.get("max_calls", 3),
                    fail_on_unexpected=spec.get("fail_on_unexpected", False),
                    canaries=(_id("oracle-canary-", 24, seed),),
                )
            )
    if scale > 1 and counter > 4096:
        raise ValueError("collection ids c000-cfff run out beyond scale 150")
    return tasks


def cue_map() -> dict[str, Any]:
    return {"schemaVersion": "1.0", "agentId": "fixture-agent-v1", "cues": CUES}


def build(suite_root: Path, oracle_root: Path, *, scale: int = 1) -> dict[str, Any]:
    """Write the fixture: public tree under ``suite_root``, oracles under ``oracle_root``."""
    manifest = write_fixture(
        suite_root,
        fixture_tasks(scale),
        oracle_root=oracle_root,
        fixture_version=FIXTURE_VERSION,
        provenance=PROVENANCE,
    )
    (suite_root / CUES_FILE).write_bytes(json_file_bytes(cue_map()))
    return manifest


BASELINE_DIR = "baseline/fixture-agent"


def baseline_report(suite_root: Path, oracle_root: Path) -> dict[str, Any]:
    """The fixture agent over both built-in backends, both lifecycles; lexical vs capsule."""
    from pytest_agentbench.worlds.retrieval import fixture, report
    from pytest_agentbench.worlds.retrieval.agent import load_cues
    from pytest_agentbench.worlds.retrieval.backends import CapsuleBackend, LexicalBackend

    public = fixture.load_public(suite_root, suite_root.name, extra_files=[CUES_FILE])
    oracles = fixture.load_hidden(public, oracle_root, oracle_root.name)
    cues = load_cues(suite_root / CUES_FILE, CUES_FILE)
    return report.run_matrix(
        public,
        oracles,
        cues,
        [LexicalBackend(), CapsuleBackend()],
        baseline_adapter="lexical",
        candidate_adapter="capsule",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pytest_agentbench.worlds.retrieval.builtin SUITE_DIR ORACLE_DIR [SCALE]``.

    Writes the fixture, then (at scale 1) its baseline set under
    ``ORACLE_DIR/baseline/fixture-agent``: its scores come from the oracles, so
    the set sits with them rather than beside what an agent may see.
    """
    import sys

    from pytest_agentbench.worlds.retrieval.report import write_baseline

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (2, 3):
        print(main.__doc__, file=sys.stderr)
        return 2
    suite_root, oracle_root = Path(args[0]), Path(args[1])
    scale = int(args[2]) if len(args) == 3 else 1
    build(suite_root, oracle_root, scale=scale)
    if scale == 1:
        write_baseline(oracle_root / BASELINE_DIR, baseline_report(suite_root, oracle_root))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
