"""The retrieval world's judged view: each claim beside the text of the lines it cites.

A final envelope's citations are coordinates and hashes; a judge asked whether
a claim says what its cited lines say needs those lines' text. The tools
returned it as evidence during the episode (the receipt keeps every result),
so each citation is given the text of the evidence span with its exact
coordinates and span hash, or ``null`` when the tools never returned that span
(a citation of lines the agent was never shown). Hashes and provenance stay
out of the view: they are for the scorer, not for a reader.
"""

from __future__ import annotations

from typing import Final

from pytest_agentbench.sdk import AgentbenchError, JsonValue

CLAIMS_WITH_CITED_LINES: Final = "claims-with-cited-lines"

SpanKey = tuple[object, object, object, object]


def claims_with_cited_lines(output: JsonValue) -> JsonValue:
    """The answer's claims, each citation with its lines' text; ``None`` without an envelope."""
    receipt = output.get("receipt") if isinstance(output, dict) else None
    envelope = receipt.get("finalEnvelope") if isinstance(receipt, dict) else None
    if not isinstance(receipt, dict) or not isinstance(envelope, dict):
        return None
    seen = _evidence_text(receipt.get("calls"))
    claims: list[JsonValue] = []
    for claim in _records(envelope.get("claims")):
        citations: list[JsonValue] = [
            {
                "uri": citation.get("uri"),
                "startLine": citation.get("startLine"),
                "endLine": citation.get("endLine"),
                "text": seen.get(_span(citation)),
            }
            for citation in _records(claim.get("citations"))
        ]
        claims.append(
            {"claimKey": claim.get("claimKey"), "value": claim.get("value"), "citations": citations}
        )
    return {
        "abstained": envelope.get("abstained"),
        "stopReason": envelope.get("stopReason"),
        "claims": claims,
        "gaps": envelope.get("gaps", []),
    }


def judged_view(name: str, output: JsonValue) -> JsonValue:
    if name != CLAIMS_WITH_CITED_LINES:
        raise AgentbenchError(
            "unknown_judged_view",
            f"the retrieval world builds {CLAIMS_WITH_CITED_LINES!r}, not {name!r}",
            field="rubric.view",
        )
    return claims_with_cited_lines(output)


def _evidence_text(calls: JsonValue) -> dict[SpanKey, JsonValue]:
    seen: dict[SpanKey, JsonValue] = {}
    for call in _records(calls):
        result = call.get("result")
        evidence = result.get("evidence") if isinstance(result, dict) else None
        for span in _records(evidence):
            seen.setdefault(_span(span), span.get("text"))
    return seen


def _span(record: dict[str, JsonValue]) -> SpanKey:
    return (
        record.get("uri"),
        record.get("startLine"),
        record.get("endLine"),
        record.get("spanHash"),
    )


def _records(value: JsonValue) -> list[dict[str, JsonValue]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
