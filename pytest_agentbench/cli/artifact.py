"""``agentbench artifact validate|replay|audit``: three readers of an episode artefact.

Each makes one claim and no other (``worlds/operations/artifact.py``):

- ``validate A``: coherence. The document's binding, execution record, decision
  tape and identity describe one run. The ledger is never opened.
- ``replay A --suite SUITE``: reproduction. The episode is re-executed from its
  own tape with every network connection refused (zero provider calls); the
  agent's identity, execution record and binding are carried forward.
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

from pytest_agentbench.cli.common import add_oracle_root, load
from pytest_agentbench.sdk.canonical import JsonValue, read_json
from pytest_agentbench.sdk.errors import AgentbenchError

NOT_ATTESTATION: Final = (
    "not provider attestation: both documents are written locally, and a content digest "
    "cannot tell a provider that answered from one that was never asked"
)


def _document(path: str) -> JsonValue:
    return read_json(Path(path), display=path)


def _spec(suite: str, registry: Any, oracle_roots: list[str]) -> Any:
    loaded = load(suite, registry, oracle_roots)
    if loaded.world.kind != "operations":
        raise AgentbenchError(
            "unsupported_command",
            f"world kind {loaded.world.kind!r} writes no episode artefacts",
            field="--suite",
        )
    return loaded.suite.data.spec


def cmd_artifact(args: argparse.Namespace, registry: Any) -> int:
    # The operations world is imported when an artefact is read, not when the command starts.
    from pytest_agentbench.worlds.operations import artifact

    if args.reader == "validate":
        version = artifact.validate_artifact(_document(args.artifact), args.artifact)
        summary: dict[str, JsonValue] = {
            "ok": True,
            "claim": "coherence",
            "artifact_version": version,
            "ledger_opened": False,
            "provider_attested": False,
        }
        line = f"ok: {args.artifact}: contract {version}, coherent; the ledger was not opened"
    elif args.reader == "replay":
        summary = artifact.replay_artifact(
            _spec(args.suite, registry, args.oracle_root), _document(args.artifact), args.artifact
        )
        line = (
            f"ok: {args.artifact}: reproduced from {summary['decisions']} tape decisions at "
            f"{summary['provider_calls']} provider calls; carried forward: "
            f"{', '.join(str(name) for name in artifact.CARRIED_FORWARD)}"
        )
    else:
        summary = artifact.audit_artifact(
            _document(args.artifact), Path(args.journal), args.artifact
        )
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
    add_oracle_root(replay)
    audit = readers.add_parser("audit", help="hold the artefact's binding to its journal")
    audit.add_argument("artifact", help="an episode artefact with a provider binding")
    audit.add_argument("journal", help="the case's execution ledger (--agentbench-ledger)")
    for reader in (validate, replay, audit):
        reader.add_argument("--json", action="store_true", help="print JSON instead of text")
