"""The closed records of the fixture format (format page sections 1, 2 and 4).

Every object is closed (unknown keys refused) and strictly typed: a JSON
``true`` is not a number and ``"1"`` is not an integer, as the original's
draft-07 schemas have it.
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
)

SCHEMA_VERSION = "1.0"
TASK_ID = re.compile(r"^t[0-9a-f]{7}$")
COLLECTION_ID = re.compile(r"^c[0-9a-f]{3}$")
CLAIM_KEY = re.compile(r"^[a-z][a-zA-Z0-9]*$")
TOOL_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
URI = re.compile(r"^gno://(c[0-9a-f]{3})/(.+)$")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

NORMALIZER_BY_TYPE = {
    "identifier": "identifier-v1",
    "date": "iso-date-v1",
    "string[]": "string-set-v1",
}
Category = Literal[
    "exact_identifier",
    "ambiguity",
    "multi_document_comparison",
    "meeting_decision",
    "temporal",
    "typed_relationship",
    "code_documentation",
    "multilingual",
    "missing_evidence",
]
ValueType = Literal["string", "number", "boolean", "string[]", "date", "identifier"]
Provenance = Literal["harness_observed", "backend_provided"]
Sha = Annotated[StrictStr, Field(pattern=SHA256.pattern)]
NonEmpty = Annotated[StrictStr, Field(min_length=1)]
Line = Annotated[StrictInt, Field(ge=1)]


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ManifestFile(Closed):
    path: StrictStr
    kind: Literal["task", "oracle", "corpus"]
    sha256: Sha
    taskId: Annotated[StrictStr, Field(pattern=TASK_ID.pattern)]
    collection: Annotated[StrictStr, Field(pattern=COLLECTION_ID.pattern)] | None


class Manifest(Closed):
    schemaVersion: Literal["1.0"]
    fixtureVersion: NonEmpty
    license: NonEmpty
    provenance: NonEmpty
    taskCount: Annotated[StrictInt, Field(ge=1)]
    files: tuple[ManifestFile, ...]
    corpusFingerprint: Sha


class Brief(Closed):
    goal: NonEmpty
    instructions: Annotated[tuple[NonEmpty, ...], Field(min_length=1)]


class PublicClaim(Closed):
    claimKey: Annotated[StrictStr, Field(pattern=CLAIM_KEY.pattern)]
    valueType: ValueType
    substantive: StrictBool
    required: StrictBool


class Budgets(Closed):
    maxAgentCalls: Annotated[StrictInt, Field(ge=1)]
    maxModelVisibleBytes: Annotated[StrictInt, Field(ge=1)]


class TaskCorpus(Closed):
    collections: Annotated[
        tuple[Annotated[StrictStr, Field(pattern=COLLECTION_ID.pattern)], ...], Field(min_length=1)
    ]

    @field_validator("collections")
    @classmethod
    def _unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("collections must be unique")
        return value


class Task(Closed):
    schemaVersion: Literal["1.0"]
    taskId: Annotated[StrictStr, Field(pattern=TASK_ID.pattern)]
    category: Category
    brief: Brief
    claims: Annotated[tuple[PublicClaim, ...], Field(min_length=1)]
    allowedTools: Annotated[
        tuple[Annotated[StrictStr, Field(pattern=TOOL_NAME.pattern)], ...], Field(min_length=1)
    ]
    budgets: Budgets
    corpus: TaskCorpus

    @field_validator("allowedTools")
    @classmethod
    def _unique_tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("allowedTools must be unique")
        return value


class Coord(Closed):
    uri: Annotated[StrictStr, Field(pattern=URI.pattern)]
    sourceHash: Sha
    startLine: Line
    endLine: Line
    spanHash: Sha
    sourceHashProvenance: Provenance
    spanHashProvenance: Provenance

    def key(self) -> tuple[str, str, int, int, str, str, str]:
        """All seven fields: coordinates match only if every one is equal."""
        return (
            self.uri,
            self.sourceHash,
            self.startLine,
            self.endLine,
            self.spanHash,
            self.sourceHashProvenance,
            self.spanHashProvenance,
        )


class ScalarValue(Closed):
    type: Literal["string"]
    value: StrictStr


class NumberValue(Closed):
    type: Literal["number"]
    value: StrictInt | StrictFloat

    @field_validator("value")
    @classmethod
    def _finite(cls, value: int | float) -> int | float:
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


class BooleanValue(Closed):
    type: Literal["boolean"]
    value: StrictBool


class StringSetValue(Closed):
    type: Literal["string[]"]
    value: tuple[StrictStr, ...]

    @field_validator("value")
    @classmethod
    def _unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("string[] items must be unique")
        return value


class DateValue(Closed):
    type: Literal["date"]
    value: StrictStr

    @field_validator("value")
    @classmethod
    def _date(cls, value: str) -> str:
        if not ISO_DATE.match(value):
            raise ValueError("must be YYYY-MM-DD")
        try:
            datetime.date.fromisoformat(value)
        except ValueError:
            raise ValueError("is not a valid calendar date") from None
        return value


class IdentifierValue(Closed):
    type: Literal["identifier"]
    value: NonEmpty


ClaimValue = Annotated[
    ScalarValue | NumberValue | BooleanValue | StringSetValue | DateValue | IdentifierValue,
    Field(discriminator="type"),
]


class Normalizer(Closed):
    id: Literal["exact-v1", "trim-lower-v1", "identifier-v1", "iso-date-v1", "string-set-v1"]
    version: StrictInt

    @field_validator("version")
    @classmethod
    def _one(cls, value: int) -> int:
        if value != 1:
            raise ValueError("normalizer version must be 1")
        return value


class OracleClaim(Closed):
    claimKey: Annotated[StrictStr, Field(pattern=CLAIM_KEY.pattern)]
    expectedValue: ClaimValue
    normalizer: Normalizer
    requiredEvidence: tuple[Coord, ...]
    optionalEvidence: tuple[Coord, ...]
    forbiddenEvidence: tuple[Coord, ...]


class Scope(Closed):
    collection: Annotated[StrictStr, Field(pattern=COLLECTION_ID.pattern)] | None
    filters: dict[str, StrictStr | StrictInt | StrictFloat | StrictBool]


class Completion(Closed):
    expectAbstention: StrictBool
    maxAgentCalls: Annotated[StrictInt, Field(ge=1)]
    maxModelVisibleBytes: Annotated[StrictInt, Field(ge=1)]
    failOnUnexpectedEvidence: StrictBool


class Oracle(Closed):
    schemaVersion: Literal["1.0"]
    taskId: Annotated[StrictStr, Field(pattern=TASK_ID.pattern)]
    claims: tuple[OracleClaim, ...]
    expectedMissing: tuple[StrictStr, ...]
    expectedScope: Scope
    completion: Completion
    leakCanaries: tuple[Annotated[StrictStr, Field(min_length=8)], ...]

    @field_validator("expectedMissing", "leakCanaries")
    @classmethod
    def _unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("items must be unique")
        return value

    def all_evidence(self) -> set[tuple[str, str, int, int, str, str, str]]:
        return {
            coord.key()
            for claim in self.claims
            for coord in (
                *claim.requiredEvidence,
                *claim.optionalEvidence,
                *claim.forbiddenEvidence,
            )
        }
