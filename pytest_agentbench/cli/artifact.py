"""``agentbench artifact validate|replay|audit``: three readers of an episode artefact.

Each makes one claim and no other; the world that wrote the artefact reads it
(:class:`~pytest_agentbench.sdk.ReadsEpisodeArtifacts`):

- ``validate A``: coherence. The document's binding, execution record, decision
  tape and identity describe one run. The ledger is never opened.
- ``replay A --suite SUITE``: reproduction. The episode is re-executed with every
  network connection refused (zero provider calls): a built-in agent's record by
  running the agent it names, any other from its own tape, the agent's identity,
  execution record and binding then carried forward.
- ``audit A JOURNAL``: agreement. The journal's chain verifies and ends
  ``scored``, its totals re-derived from its rows are the binding's, and call
  by call it holds the artefact's request and decision digests.

None is attestation of what a provider answered: both documents are local.
Exit 0 when the claim holds, 1 with the refusal's code when it does not.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Final

from pytest_agentbench.cli.common import add_oracle_root, load, world_providing
from pytest_agentbench.sdk.canonical import JsonValue, read_json
from pytest_agentbench.sdk.episode_artifacts import ReadsEpisodeArtifacts
from pytest_agentbench.sdk.registry import WorldRegistry

NOT_ATTESTATION: Final = (
    "not provider attestation: both documents are written locally, and a content digest "
    "cannot tell a provider that answered from one that was never asked"
)


def _document(path: str) -> JsonValue:
    return read_json(Path(path), display=path)


def cmd_artifact(args: argparse.Namespace, registry: WorldRegistry) -> int:
    loaded = None if args.suite is None else load(args.suite, registry, args.oracle_root)
    world: ReadsEpisodeArtifacts = world_providing(
        registry,
        ReadsEpisodeArtifacts,
        "episode artefact readers",
        None if loaded is None else loaded.world.kind,
    )
    document = _document(args.artifact)
    if args.reader == "validate":
        version = world.validate_artifact(document, args.artifact)
        summary: dict[str, JsonValue] = {
            "ok": True,
            "claim": "coherence",
            "artifact_version": version,
            "ledger_opened": False,
            "provider_attested": False,
        }
        line = f"ok: {args.artifact}: contract {version}, coherent; the ledger was not opened"
    elif args.reader == "replay":
        assert loaded is not None  # --suite is required by the replay reader's parser
        summary = world.replay_artifact(loaded.suite, document, args.artifact)
        carried = summary["carried_forward"]
        assert isinstance(carried, list)
        how = (
            f"by re-running agent {summary['re_executed']}"
            if summary["re_executed"] is not None
            else f"from {summary['decisions']} tape decisions"
        )
        line = (
            f"ok: {args.artifact}: reproduced {how} at {summary['provider_calls']} provider "
            f"calls; carried forward: {', '.join(str(name) for name in carried) or 'nothing'}"
        )
    else:
        summary = world.audit_artifact(document, Path(args.journal), args.artifact)
        line = (
            f"ok: {args.artifact} agrees with {args.journal}: run {summary['execution_run_id']}, "
            f"{summary['provider_calls']} provider calls, {summary['attempts']} attempts, "
            f"cost {summary['measured_cost_usd']}, sha256:"
            f"{summary['execution_ledger_digest_sha256']}"
        )
    if args.json:
        print(json.dumps({**summary, "note": NOT_ATTESTATION}, sort_keys=True))
    else:
        print(line)
        print(f"  {NOT_ATTESTATION}")
    return 0


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser(
        "artifact", help="validate, replay or audit an operations episode artefact"
    )
    parser.set_defaults(handler=cmd_artifact)
    readers = parser.add_subparsers(
        dest="reader",
        required=True,
        metavar="READER",
        help="validate (coherence), replay (reproduction) or audit (agreement with a ledger)",
    )
    validate = readers.add_parser("validate", help="coherence of one document (no ledger)")
    validate.add_argument("artifact", help="an episode artefact (--agentbench-artifacts)")
    replay = readers.add_parser("replay", help="re-execute from the tape, no provider reached")
    replay.add_argument("artifact", help="an episode artefact (contract 8)")
    replay.add_argument(
        "--suite", required=True, help="the operations suite (id or folder) it was run on"
    )
    audit = readers.add_parser("audit", help="hold the artefact's binding to its journal")
    audit.add_argument("artifact", help="an episode artefact with a provider binding")
    audit.add_argument("journal", help="the case's execution ledger (--agentbench-ledger)")
    for reader in (validate, replay, audit):
        reader.add_argument("--json", action="store_true", help="print JSON instead of text")
        add_oracle_root(reader)
    for reader in (validate, audit):
        reader.add_argument(
            "--suite",
            default=None,
            help="a suite of the world that wrote it (default: the one world that reads artefacts)",
        )
