"""How much of a case's output its stored result keeps (``agentbench_max_output_bytes``).

A graded case travels in its test report and is kept until the run ends, then
written to the JSON run report (and its receipt to ``--agentbench-receipts``):
a check's expected and actual values and a tool-session receipt are copies of
what the adapter produced, so a 10 MB answer would be carried, kept and
written whole for every case. Each such value larger than the limit (in UTF-8
bytes of its canonical JSON) is stored as the start of that JSON followed by a
marker giving its full size and sha256. A receipt keeps the digest of its
whole canonical partition, so it can still be matched with a full receipt
from a run that kept everything (limit 0). Golden snapshots never see any of
this: they pin the adapter's whole output before the result is capped.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_core import PydanticSerializationError

from pytest_agentbench.run.result_json import written_result_json
from pytest_agentbench.sdk.canonical import JsonValue, canonical_json, sha256_hex
from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, CaseResult, Record
from pytest_agentbench.sdk.errors import escape_surrogates_json

MARKER = "... [truncated: "


def parse_max_output_bytes(text: object) -> int:
    """A limit from the command line or the ini file: a whole number of bytes, 0 = no limit."""
    try:
        limit = int(str(text).strip())
    except ValueError:
        raise ValueError(
            f"{text!r} is not a whole number of bytes (0: keep outputs whole)"
        ) from None
    if limit < 0:
        raise ValueError(
            f"{text!r} is negative: give a number of bytes, or 0 to keep outputs whole"
        )
    return limit


def _truncated(data: bytes, limit: int) -> str:
    head = data[:limit].decode("utf-8", "ignore")
    return f"{head}{MARKER}{len(data)} bytes of canonical JSON in all, sha256 {sha256_hex(data)}]"


def cap_value(value: JsonValue, limit: int) -> JsonValue:
    """``value``, or the marked start of its canonical JSON when that exceeds ``limit`` bytes."""
    if limit <= 0 or value is None or isinstance(value, bool | int | float):
        return value
    data = canonical_json(value).encode("utf-8")
    return value if len(data) <= limit else _truncated(data, limit)


class ReceiptTruncation(Record):
    model_config = BUILT_ON_FIRST_USE

    bytes: int = Field(ge=0)
    """Size of the whole receipt's canonical JSON."""
    sha256: str
    """sha256 of the whole receipt's canonical JSON (the digest covers its canonical partition)."""
    limit: int
    """The ``agentbench_max_output_bytes`` in force."""


class TruncatedReceipt(Record):
    """What the run report keeps of a receipt larger than the limit: not itself a receipt."""

    model_config = BUILT_ON_FIRST_USE

    digest: str
    """The whole receipt's digest, over its whole canonical partition."""
    truncated: ReceiptTruncation
    head: str
    """The start of the whole receipt's canonical JSON, with the truncation marker."""


def cap_receipt(receipt: dict[str, JsonValue], limit: int) -> dict[str, JsonValue]:
    if limit <= 0:
        return receipt
    data = canonical_json(receipt).encode("utf-8")
    if len(data) <= limit:
        return receipt
    digest = receipt.get("digest")
    stored = TruncatedReceipt(
        digest=digest if isinstance(digest, str) else "",
        truncated=ReceiptTruncation(bytes=len(data), sha256=sha256_hex(data), limit=limit),
        head=_truncated(data, limit),
    )
    capped: dict[str, JsonValue] = stored.model_dump(mode="json")
    return capped


def _cap_text(text: str | None, limit: int) -> str | None:
    if text is None or limit <= 0:
        return text
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return f"{data[:limit].decode('utf-8', 'ignore')}{MARKER}{len(data)} bytes in all]"


def cap_result(result: CaseResult, limit: int) -> CaseResult:
    """``result`` with every check value, check detail and receipt held to ``limit`` bytes.

    A recorded output (``--agentbench-report`` / ``--agentbench-record``) larger
    than ``limit`` is not kept at all.
    """
    if limit <= 0:
        return result
    checks = tuple(
        check.model_copy(
            update={
                "expected": cap_value(check.expected, limit),
                "actual": cap_value(check.actual, limit),
                "detail": _cap_text(check.detail, limit),
            }
        )
        for check in result.checks
    )
    receipt = None if result.receipt is None else cap_receipt(result.receipt, limit)
    # A recorded output is only worth keeping whole (re-scoring grades it again):
    # above the limit it is dropped, and replaying it is refused by name.
    recorded = result.recorded
    if recorded is not None and len(recorded.model_dump_json().encode("utf-8")) > limit:
        recorded = None
    return result.model_copy(update={"checks": checks, "receipt": receipt, "recorded": recorded})


def stored_result(result: CaseResult, limit: int, *, canonical: bool = False) -> str:
    """The JSON text a case's report carries: the result, capped only when it is large.

    ``canonical`` gives the result's canonical JSON, which a run report copies as
    it is, rather than pydantic's faster dump, which the report would re-serialise.
    The two differ in length only where a float has an exponent (``1.5e-07``
    against ``1.5e-7``).
    """
    try:
        wire = _result_text(result, canonical)
        size = len(wire.encode("utf-8"))
    except (UnicodeEncodeError, PydanticSerializationError):
        # A lone surrogate some world kept (outputs holding one are refused, reasons
        # escaped): the report, the JSON between processes and the files are UTF-8.
        result = CaseResult.model_validate(escape_surrogates_json(result.model_dump(mode="json")))
        wire = _result_text(result, canonical)
        size = len(wire.encode("utf-8"))
    if limit > 0 and size > limit:
        wire = _result_text(cap_result(result, limit), canonical)
    return wire


def _result_text(result: CaseResult, canonical: bool) -> str:
    if not canonical:
        return result.model_dump_json()
    written = written_result_json(result)
    return canonical_json(result.model_dump(mode="json")) if written is None else written
