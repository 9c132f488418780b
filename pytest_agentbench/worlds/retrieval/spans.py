"""Line coordinates, span hashes and the corpus canonical-form rules (section 1 and 2)."""

from __future__ import annotations

import unicodedata
from typing import Any

from pytest_agentbench.worlds.retrieval.jscanon import sha256_text

_ALLOWED_CONTROLS = {"\t", "\n"}


def split_lines(text: str) -> list[str]:
    """CRLF and lone CR become LF, one terminal LF is dropped, then split on LF."""
    normalised = text.replace("\r\n", "\n").replace("\r", "\n")
    if normalised.endswith("\n"):
        normalised = normalised[:-1]
    return normalised.split("\n")


def span_text(lines: list[str], start: int, end: int) -> str | None:
    """Lines ``start..end`` (1-based, inclusive) joined by LF; None when out of range."""
    if start < 1 or end < start or end > len(lines):
        return None
    return "\n".join(lines[start - 1 : end])


def observed_coord(
    uri: str, source_hash: str, start: int, end: int, span_hash: str
) -> dict[str, Any]:
    """A citation coordinate in its JSON form, both hashes computed by the harness."""
    return {
        "uri": uri,
        "sourceHash": source_hash,
        "startLine": start,
        "endLine": end,
        "spanHash": span_hash,
        "sourceHashProvenance": "harness_observed",
        "spanHashProvenance": "harness_observed",
    }


def span_hash(lines: list[str], start: int, end: int) -> str | None:
    text = span_text(lines, start, end)
    return None if text is None else sha256_text(text)


def _is_control(char: str) -> bool:
    return unicodedata.category(char) == "Cc" and char not in _ALLOWED_CONTROLS


def canonical_form_problem(text: str) -> str | None:
    """Why the product's Markdown canonicaliser would change ``text``, or None."""
    if text.startswith("\ufeff"):
        return "starts with a byte-order mark"
    if "\r" in text:
        return "contains a carriage return"
    if unicodedata.normalize("NFC", text) != text:
        return "is not in Unicode normalisation form NFC"
    for index, char in enumerate(text):
        if _is_control(char):
            return f"contains control character U+{ord(char):04X} at offset {index}"
    if not text.endswith("\n") or text.endswith("\n\n"):
        return "does not end with exactly one line feed"
    lines = text[:-1].split("\n")
    blank_run = 0
    for number, line in enumerate(lines, start=1):
        if line and line[-1].isspace():
            return f"line {number} has trailing whitespace"
        blank_run = blank_run + 1 if line == "" else 0
        if blank_run >= 2:
            return f"line {number} ends a run of two or more blank lines"
    return None
