"""Which lines a capsule bundle carries: GNO's capsule content rule.

GNO's capsule prototype (``evals/agentic/capsule-query.ts`` and
``capsule-selection.ts``) plans *facets* from what the agent can see, the
search query's word tokens and the task's claim keys split at camel-case
boundaries, and carries a line only for the facets it covers:

- a line's facets are the facets its text contains (NFKC, JavaScript
  whitespace collapsed and trimmed, lowercased, substring match);
- on a one-call task (``maxAgentCalls`` 1) only the lines covering the most
  facets are eligible;
- the eligible lines are ordered by facet count (more first), retrieval rank,
  span length and coordinate; exact duplicates and overlapping spans are
  dropped;
- then, greedily, the line adding the most facets not yet covered (ties by
  that order) is taken if the whole result still fits the byte budget; a line
  with no facets, or whose facets its document's taken lines already cover,
  is never taken;
- the bundle lists the taken lines in coordinate order.

So a document's title line, which names the topic but holds no value, is
left out whenever a line of the same document covers its facets.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_agentbench.worlds.retrieval.jscanon import utf16_key
from pytest_agentbench.worlds.retrieval.normalizers import JS_WHITESPACE, js_trim

_JS_SPACE_RUN = re.compile("[" + "".join(sorted(JS_WHITESPACE)) + "]+")
_WORD = re.compile(r"[\w-]+")
"""GNO's ``[\\p{L}\\p{N}_-]+``: Python's ``\\w`` is letters, numbers and ``_``."""
_CAMEL_BOUNDARY = re.compile(r"([a-z0-9])([A-Z])")


def _normalize(text: str) -> str:
    return _JS_SPACE_RUN.sub(" ", js_trim(unicodedata.normalize("NFKC", text)))


def plan_facets(query: str, claim_keys: Sequence[str]) -> list[str]:
    """The facets of a search: query tokens and claim-key words two or more UTF-16 code
    units long (JavaScript's ``length``), unique, in UTF-16 order (its default sort)."""
    terms = _WORD.findall(_normalize(query).lower())
    for key in claim_keys:
        terms.extend(_WORD.findall(_CAMEL_BOUNDARY.sub(r"\1 \2", key).lower()))
    kept = {term for term in (_normalize(t) for t in terms) if len(utf16_key(term)) >= 4}
    return sorted(kept, key=utf16_key)


def line_facets(text: str, facets: Sequence[str]) -> list[str]:
    normalized = _normalize(text).lower()
    return [facet for facet in facets if facet in normalized]


@dataclass(frozen=True)
class Candidate:
    """One line of a retrieved document, with its retrieval rank and the facets it covers."""

    uri: str
    source_hash: str
    line: int
    span_hash: str
    rank: int
    facets: tuple[str, ...]

    @property
    def coordinate(self) -> tuple[bytes, bytes, int, int, bytes]:
        return (
            utf16_key(self.uri),
            utf16_key(self.source_hash),
            self.line,
            self.line,
            utf16_key(self.span_hash),
        )

    @property
    def priority(self) -> tuple[int, int, int, tuple[bytes, bytes, int, int, bytes]]:
        # Single lines all have span length 0, the third key of GNO's order.
        return (-len(self.facets), self.rank, 0, self.coordinate)


def select(
    candidates: Sequence[Candidate], *, one_call: bool, fits: Callable[[list[Candidate]], bool]
) -> list[Candidate]:
    """The lines the bundle carries, in coordinate order."""
    eligible = list(candidates)
    if one_call:
        most = max((len(c.facets) for c in eligible), default=0)
        eligible = [c for c in eligible if len(c.facets) == most]
    kept: list[Candidate] = []
    for candidate in sorted(eligible, key=lambda c: c.priority):
        if any(k.coordinate == candidate.coordinate for k in kept):
            continue  # an exact duplicate
        if any(k.uri == candidate.uri and k.line == candidate.line for k in kept):
            continue  # an overlapping span (single lines overlap only when equal)
        kept.append(candidate)
    remaining = sorted(kept, key=lambda c: c.coordinate)
    chosen: list[Candidate] = []
    covered: set[str] = set()
    while remaining:
        by_uri: dict[str, set[str]] = {}
        for item in chosen:
            by_uri.setdefault(item.uri, set()).update(item.facets)
        remaining = [
            c
            for c in remaining
            if c.facets and not all(f in by_uri.get(c.uri, set()) for f in c.facets)
        ]
        if not remaining:
            break
        remaining.sort(key=lambda c: (-sum(f not in covered for f in c.facets), c.priority))
        candidate = remaining.pop(0)
        if not fits([*chosen, candidate]):
            continue
        chosen.append(candidate)
        covered.update(candidate.facets)
    return sorted(chosen, key=lambda c: c.coordinate)
