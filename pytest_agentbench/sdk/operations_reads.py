"""What an operations domain pack declares about reading: where each named read comes from,
and which records an action must cite.

The original's retrieval catalogue gives each named read a source service, the
authority class of its answer and a schema id; its action evidence contract
obliges some actions to cite the very records their payload selects, a small
closed algebra of selectors. A pack states both as data (``read_tool_sources``,
``role_authority``, ``evidence_contract``); the engine serves, gates and refuses
by them. Exported by :mod:`pytest_agentbench.sdk`, like the rest of the pack
contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_agentbench.sdk.canonical import JsonValue, canonical_bytes, sha256_hex

# The original's authority classes, closed: an event or a read says "someone
# asserted this" (actor claim) or "the record holds it" (authoritative
# verification), or comes from a system of record, a communication channel or
# the scheduler.
AUTHORITY_ACTOR_CLAIM = "actor_claim"
AUTHORITY_AUTHORITATIVE_VERIFICATION = "authoritative_verification"
AUTHORITY_COMMUNICATION = "communication"
AUTHORITY_SYSTEM_EVENT = "system_event"
AUTHORITY_SYSTEM_OF_RECORD = "system_of_record"
AUTHORITIES = (
    AUTHORITY_ACTOR_CLAIM,
    AUTHORITY_AUTHORITATIVE_VERIFICATION,
    AUTHORITY_COMMUNICATION,
    AUTHORITY_SYSTEM_EVENT,
    AUTHORITY_SYSTEM_OF_RECORD,
)


@dataclass(frozen=True)
class ReadToolSource:
    """The service a named read comes from, the authority class its answer carries, and
    the schema id of its answer (the original's ``ToolResult`` fields)."""

    source: str
    authority: str
    schema_id: str


PUBLIC_RECORD_VERSION_ALGORITHM = "canonical-json-sha256-prefix-v1"
"""The original's name for how a served read is versioned: the SHA-256 of the canonical
JSON of exactly what the read projected, as a hex prefix of the pack's stated length."""


@dataclass(frozen=True)
class ReadRecordContract:
    """How a pack's named reads identify and version what they serve (the original's
    retrieval record contract): each answer is about the record ``{source}:{identity_suffix}``,
    its ``record_version`` is :func:`public_record_version` of its projection with
    ``version_length`` hex characters, and ``version_context`` is the label the pack
    publishes for that encoding."""

    identity_suffix: str
    version_context: str
    version_length: int = 16

    def record_id(self, source: str) -> str:
        """Which record a read of ``source`` is about: the service, never the scenario."""
        return f"{source}:{self.identity_suffix}"

    def as_list(self) -> list[str | int]:
        """The contract in the original's compact order: suffix, context, algorithm, length."""
        return [
            self.identity_suffix,
            self.version_context,
            PUBLIC_RECORD_VERSION_ALGORITHM,
            self.version_length,
        ]


def public_record_version(records: JsonValue, length: int) -> str:
    """The version a projection carries: a digest of exactly what it says, so it moves when
    and only when the projected content moves (no record keeps a counter of its own)."""
    return sha256_hex(canonical_bytes(records))[:length]


READ_GATE_CODES = frozenset(
    {"ACTION_WITHOUT_RETRIEVAL", "ACTED_ON_CLAIM_WITHOUT_RECORD", "STALE_RETRIEVED_RECORD"}
)
"""The codes the operations read gate refuses an outcome with (a pack's grader may count
any of them as "refused for want of a read")."""


# --- evidence selectors -------------------------------------------------------
#
# Some outcomes must cite the very record their payload selects, not merely have
# read its collection: the original's action evidence contract, a small closed
# algebra of three selectors, checked when the action is proposed. Here they
# name collections rather than (tool, root) pairs, since a record is cited by
# its collection.


@dataclass(frozen=True)
class PayloadRecord:
    """Cite the record of ``collection`` whose id is ``payload[payload_field]``."""

    collection: str
    payload_field: str


# The original's WorkEvidenceForInvoice.
@dataclass(frozen=True)
class LinkedEvidence:
    """Cite the evidence linked to the payload-selected record.

    The selected record is ``selected[payload[payload_field]]``; it links to
    ``links[selected_record[link_field]]``, and the evidence is every record of
    ``evidence`` whose ``link_field`` names that same linked record.
    """

    selected: str
    payload_field: str
    links: str
    evidence: str
    link_field: str


# The original's QuoteForSelectedApproval.
@dataclass(frozen=True)
class BoundVersion:
    """Cite the record the payload-selected record binds, at the version it binds.

    The selected record is ``selected[payload[payload_field]]``; its ``id_field``
    must name a record of ``target`` whose ``version_field`` is the selected one's.
    """

    selected: str
    payload_field: str
    target: str
    id_field: str
    version_field: str


EvidenceSelector = PayloadRecord | LinkedEvidence | BoundVersion


@dataclass(frozen=True)
class EvidenceObligation:
    """What an outcome must cite (``selectors``), and the code it is refused with if not."""

    code: str
    selectors: tuple[EvidenceSelector, ...]


EvidenceContract = Mapping[str, EvidenceObligation]
