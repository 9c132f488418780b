"""GNO's capsule content rule, on documents and queries of our own."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.worlds.retrieval.backends import CapsuleBackend, TaskScope
from pytest_agentbench.worlds.retrieval.bundle import parse_bundle_content
from pytest_agentbench.worlds.retrieval.capsule import Candidate, line_facets, plan_facets, select
from pytest_agentbench.worlds.retrieval.fixture import CorpusDoc
from pytest_agentbench.worlds.retrieval.jscanon import sha256_text
from pytest_agentbench.worlds.retrieval.tools import projection, visible_bytes


def test_facets_are_query_tokens_and_claim_key_words_in_utf16_order() -> None:
    facets = plan_facets("  Which  FOLLOW-UP owner\u3000a? ", ["reviewOwner", "x", "slaHours2"])
    assert facets == ["follow-up", "hours2", "owner", "review", "sla", "which"]
    # NFKC first: full-width letters are the ASCII word; one-unit words are dropped.
    assert plan_facets("\uff37\uff29\uff2e\uff24\uff2f\uff37 q", []) == ["window"]
    # An astral letter is two UTF-16 units, as long as JavaScript's length counts it,
    # and its surrogates sort it before BMP letters above them (U+FA0E), as
    # JavaScript's sort orders UTF-16 code units, not code points.
    assert plan_facets("\ufa0e\ufa0f \U00020000 ab", []) == ["ab", "\U00020000", "\ufa0e\ufa0f"]
    assert line_facets("# Escalation  Policy", ["escalation", "policy", "window"]) == [
        "escalation",
        "policy",
    ]
    assert line_facets("Reviewed by the team", ["review", "owner"]) == ["review"]


def _line(uri: str, line: int, facets: tuple[str, ...], rank: int) -> Candidate:
    return Candidate(uri, "h" + uri, line, f"s{uri}{line}", rank, facets)


def _lines(chosen: list[Candidate]) -> list[tuple[str, int]]:
    return [(c.uri, c.line) for c in chosen]


def test_a_title_whose_facets_a_value_line_covers_is_left_out() -> None:
    title = _line("a", 1, ("escalation",), 0)
    value = _line("a", 3, ("escalation", "window"), 2)
    other = _line("a", 4, ("effective",), 3)
    chosen = select([title, value, other], one_call=False, fits=lambda _: True)
    assert _lines(chosen) == [("a", 3), ("a", 4)]
    # On a one-call task only the lines covering the most facets are eligible.
    assert _lines(select([title, value, other], one_call=True, fits=lambda _: True)) == [("a", 3)]


def test_coverage_is_per_document_and_lines_without_facets_never_go_in() -> None:
    first = _line("a", 2, ("date", "launch"), 1)
    second = _line("a", 3, ("date", "launch"), 2)
    elsewhere = _line("b", 5, ("date",), 1000)
    blank_facets = _line("b", 6, (), 1001)
    chosen = select([second, first, elsewhere, blank_facets], one_call=False, fits=lambda _: True)
    # The better-ranked of two equal lines, then another document's line for a facet
    # already covered (coverage that silences a line is its own document's).
    assert _lines(chosen) == [("a", 2), ("b", 5)]
    duplicate = _line("a", 2, ("date", "launch"), 7)
    assert _lines(select([first, duplicate], one_call=False, fits=lambda _: True)) == [("a", 2)]


def test_a_line_the_budget_cannot_hold_is_skipped_and_the_next_tried() -> None:
    wide = _line("a", 1, ("alpha", "beta", "gamma"), 0)
    narrow = _line("a", 2, ("delta",), 1)
    chosen = select([wide, narrow], one_call=False, fits=lambda lines: wide not in lines)
    assert _lines(chosen) == [("a", 2)]


def _doc(collection: str, rel_path: str, text: str) -> CorpusDoc:
    return CorpusDoc(
        task_id="t0000abc",
        collection=collection,
        rel_path=rel_path,
        path=f"corpus/t0000abc/{collection}/{rel_path}",
        raw=text.encode("utf-8"),
        text=text,
        source_hash=sha256_text(text),
        lines=tuple(text.split("\n")[:-1]),
    )


def _carried(result: dict[str, Any]) -> list[tuple[str, int]]:
    carried = parse_bundle_content(result["content"])
    assert carried is not None
    return [(item["uri"], item["startLine"]) for item in carried]


def test_the_capsule_backend_carries_the_value_line_not_the_title() -> None:
    policy = _doc("c001", "policy.md", "# Paging policy\n\nCurrent paging window: 20 minutes\n")
    notes = _doc("c001", "notes.md", "# Notes\n\nThe paging rota is weekly.\n")
    docs = {doc.uri: doc for doc in (policy, notes)}
    backend = CapsuleBackend()
    backend.prepare(docs)

    def search(calls: int, budget: int | None) -> dict[str, Any]:
        scope = TaskScope("t0000abc", ("c001",), docs, ("pagingWindow",), calls, budget)
        return backend.search({"query": "paging window"}, scope)

    one_call = search(1, 12_000)
    assert _carried(one_call) == [("gno://c001/policy.md", 3)]
    assert [e["startLine"] for e in one_call["evidence"]] == [3]
    # With calls to spare, the notes' own line covers "paging" for its document too.
    assert _carried(search(3, None)) == [("gno://c001/notes.md", 3), ("gno://c001/policy.md", 3)]
    # A budget below the one-line bundle leaves the bundle empty rather than over it.
    empty_bytes = visible_bytes(projection(search(1, 1)))
    assert _carried(search(1, empty_bytes)) == []
