"""Retrieval backends: the plug point, the task visibility boundary, and two built-ins.

A backend answers ``search`` / ``get`` / ``multi_get`` over an index it
prepares once from the corpus snapshot (unmeasured, shared by the cold and
warm cohorts). The harness hands it only calls that stay inside the task's
collections; a backend is free to index the whole fixture.

Built-ins:

- :class:`LexicalBackend` (``lexical``) ranks single non-blank *lines* with
  Okapi BM25 (k1 = 1.2, b = 0.75) over lowercase Unicode word tokens, with
  document frequencies taken over every line of the snapshot. Lines, not files,
  are ranked because a citation is a line span: the best hit is the line the
  agent must cite, and a short line that holds the cue outranks a long one
  that mentions it in passing. Ties break by URI, then line number, so the
  ranking is deterministic. Search results are ``candidates``; reads are
  ``source``.
- :class:`CapsuleBackend` (``capsule``) answers ``search`` with one
  ``evidence_bundle`` whose content carries its evidence as
  ``gno-context-agent-v1`` tuples, enough to finalise after one call; which
  lines it carries is GNO's capsule content rule (:mod:`.capsule`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_agentbench.worlds.retrieval.bundle import bundle_content
from pytest_agentbench.worlds.retrieval.capsule import Candidate, line_facets, plan_facets, select
from pytest_agentbench.worlds.retrieval.fixture import CorpusDoc
from pytest_agentbench.worlds.retrieval.jscanon import fingerprint, sha256_text

# Re-exported: its home before it moved to a module the plugin may import at configure time.
from pytest_agentbench.worlds.retrieval.protocol import RetrievalBackend  # noqa: F401
from pytest_agentbench.worlds.retrieval.spans import observed_coord
from pytest_agentbench.worlds.retrieval.tools import projection, visible_bytes

_TOKEN = re.compile(r"\w+")
K1 = 1.2
B = 0.75
DEFAULT_SEARCH_LIMIT = 8
NO_BACKEND_HASHES = "the lexical backend reads the snapshot and reports no hashes of its own"


@dataclass(frozen=True)
class TaskScope:
    """What one task may see: its collections and their documents."""

    task_id: str
    collections: tuple[str, ...]
    docs: Mapping[str, CorpusDoc]
    """The task's documents by URI."""
    claim_keys: tuple[str, ...] = ()
    """The task's public claim keys (the capsule plans facets from them)."""
    max_agent_calls: int | None = None
    max_model_visible_bytes: int | None = None
    """The task's budgets, where the harness knows them."""


class BackendError(Exception):
    """A backend's own failure with a stable code and failure class."""

    def __init__(self, code: str, message: str, failure_class: str = "product_error") -> None:
        super().__init__(message)
        self.code = code
        self.failure_class = failure_class


def item(doc: CorpusDoc, line: int, *, backend_hashes: bool) -> dict[str, Any]:
    """A single-line evidence item with harness-observed hashes."""
    text = doc.lines[line - 1]
    span = sha256_text(text)
    return {
        **observed_coord(doc.uri, doc.source_hash, line, line, span),
        "text": text,
        "backendSourceHash": doc.source_hash if backend_hashes else None,
        "backendSpanHash": span if backend_hashes else None,
        "backendHashUnavailableReason": None if backend_hashes else NO_BACKEND_HASHES,
    }


def ok(role: str, content: str, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "status": "ok",
        "resultRole": role,
        "content": content,
        "evidence": evidence,
        "errorCode": None,
    }


def error(role: str, code: str) -> dict[str, Any]:
    return {"status": "error", "resultRole": role, "content": "", "evidence": [], "errorCode": code}


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@dataclass
class LineIndex:
    """BM25 statistics over every non-blank line of the snapshot.

    Postings are kept per collection, so a search touches only the lines of
    the collections it may see; document frequencies and the average line
    length are the snapshot's.
    """

    postings: dict[tuple[str, str], list[tuple[str, int, int]]] = field(default_factory=dict)
    """(collection, term) -> [(uri, line, term frequency)]"""
    frequency: dict[str, int] = field(default_factory=dict)
    """term -> number of lines holding it"""
    lengths: dict[tuple[str, int], int] = field(default_factory=dict)
    average: float = 0.0

    @classmethod
    def build(cls, docs: Mapping[str, CorpusDoc]) -> LineIndex:
        index = cls()
        for uri in sorted(docs):
            collection = docs[uri].collection
            for number, text in enumerate(docs[uri].lines, start=1):
                if not text.strip():
                    continue
                words = tokens(text)
                index.lengths[(uri, number)] = len(words)
                for term, count in sorted(Counter(words).items()):
                    index.postings.setdefault((collection, term), []).append((uri, number, count))
                    index.frequency[term] = index.frequency.get(term, 0) + 1
        index.average = sum(index.lengths.values()) / max(1, len(index.lengths))
        return index

    def rank(self, query: str, collections: set[str], uris: set[str]) -> list[tuple[str, int]]:
        total = len(self.lengths)
        scores: dict[tuple[str, int], float] = {}
        for term in dict.fromkeys(tokens(query)):
            df = self.frequency.get(term, 0)
            if not df:
                continue
            idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
            postings = [
                posting
                for collection in sorted(collections)
                for posting in self.postings.get((collection, term), [])
            ]
            for uri, line, count in postings:
                if uri not in uris:
                    continue
                norm = K1 * (1 - B + B * self.lengths[(uri, line)] / self.average)
                gain = idf * count * (K1 + 1) / (count + norm)
                scores[(uri, line)] = scores.get((uri, line), 0.0) + gain
        return sorted(scores, key=lambda key: (-scores[key], key[0], key[1]))

    def fingerprint(self) -> str:
        return fingerprint(
            {
                "postings": {
                    f"{collection}\u0000{term}": [[u, n, c] for u, n, c in rows]
                    for (collection, term), rows in self.postings.items()
                },
                "scheme": "bm25-lines-v1",
            }
        )


def _in_scope(scope: TaskScope, collection: str | None) -> set[str]:
    return {
        uri for uri, doc in scope.docs.items() if collection is None or doc.collection == collection
    }


class LexicalBackend:
    """BM25 over lines; candidates from ``search``, exact ``source`` reads."""

    adapter_id = "lexical"
    backend_hashes = False
    search_role = "candidates"

    def __init__(self, limit: int = DEFAULT_SEARCH_LIMIT) -> None:
        self.limit = limit
        self.index: LineIndex | None = None

    @property
    def config(self) -> dict[str, Any]:
        return {"adapter": self.adapter_id, "limit": self.limit, "k1": K1, "b": B}

    def prepare(self, docs: Mapping[str, CorpusDoc]) -> str:
        self.index = LineIndex.build(docs)
        return self.index.fingerprint()

    def invocations(self, tool: str) -> int:
        """Internal operations per call: one retrieval or one read."""
        return 1

    def call(self, tool: str, arguments: Mapping[str, Any], scope: TaskScope) -> dict[str, Any]:
        if self.index is None:
            raise BackendError("backend_not_prepared", "call before prepare", "harness_error")
        if tool == "search":
            return self.search(arguments, scope)
        if tool == "get":
            return self.get(arguments, scope)
        if tool == "multi_get":
            return self.multi_get(arguments, scope)
        return error("source", "unsupported_tool")

    def hits(
        self, arguments: Mapping[str, Any], scope: TaskScope, limit: int
    ) -> list[dict[str, Any]]:
        assert self.index is not None
        uris = _in_scope(scope, arguments.get("collection"))
        collections = {scope.docs[uri].collection for uri in uris}
        ranked = self.index.rank(str(arguments["query"]), collections, uris)[:limit]
        return [
            item(scope.docs[uri], line, backend_hashes=self.backend_hashes) for uri, line in ranked
        ]

    def search(self, arguments: Mapping[str, Any], scope: TaskScope) -> dict[str, Any]:
        limit = int(arguments.get("limit", self.limit))
        found = self.hits(arguments, scope, limit)
        content = "\n".join(f"{e['uri']}#L{e['startLine']}: {e['text']}" for e in found)
        return ok("candidates", content, found)

    def _lines(self, doc: CorpusDoc, first: int, count: int | None) -> list[dict[str, Any]]:
        last = len(doc.lines) if count is None else min(len(doc.lines), first + count - 1)
        return [
            item(doc, number, backend_hashes=self.backend_hashes)
            for number in range(first, last + 1)
            if doc.lines[number - 1].strip()
        ]

    def get(self, arguments: Mapping[str, Any], scope: TaskScope) -> dict[str, Any]:
        doc = scope.docs.get(str(arguments["uri"]))
        if doc is None:
            return error("source", "not_found")
        found = self._lines(
            doc, int(arguments.get("fromLine", 1)), _opt_int(arguments, "lineCount")
        )
        return ok("source", "\n".join(e["text"] for e in found), found)

    def multi_get(self, arguments: Mapping[str, Any], scope: TaskScope) -> dict[str, Any]:
        limit = _opt_int(arguments, "maxBytes")
        found: list[dict[str, Any]] = []
        used = 0
        for uri in arguments["uris"]:
            doc = scope.docs.get(uri)
            if doc is None:
                return error("source", "not_found")
            for entry in self._lines(doc, 1, None):
                size = len(entry["text"].encode("utf-8"))
                if limit is not None and used + size > limit:
                    return ok("source", "\n".join(e["text"] for e in found), found)
                used += size
                found.append(entry)
        return ok("source", "\n".join(e["text"] for e in found), found)


class CapsuleBackend(LexicalBackend):
    """One ``evidence_bundle`` per search, its lines chosen by GNO's capsule content rule.

    Retrieval is ours: the query, then each facet, ranked by the line index in
    each of the searched collections; the documents of the first ``limit`` hits
    of each, in the order first met. Every non-blank line of those documents is
    a candidate (rank: document order x 1000 + line offset), and
    :mod:`~pytest_agentbench.worlds.retrieval.capsule` chooses among them
    within the task's byte budget, measured on the model-visible result.
    """

    adapter_id = "capsule"
    backend_hashes = True

    @property
    def config(self) -> dict[str, Any]:
        return {**super().config, "selection": "marginal-facet-coverage-v1"}

    def invocations(self, tool: str) -> int:
        """A search retrieves and then plans the bundle: two operations."""
        return 2 if tool == "search" else 1

    def search(self, arguments: Mapping[str, Any], scope: TaskScope) -> dict[str, Any]:
        assert self.index is not None
        limit = int(arguments.get("limit", self.limit))
        query = str(arguments["query"])
        facets = plan_facets(query, scope.claim_keys)
        requested = arguments.get("collection")
        collections = [requested] if requested is not None else list(scope.collections)
        uris: list[str] = []
        for variant in dict.fromkeys([query, *facets]):
            for collection in collections:
                in_scope = _in_scope(scope, collection)
                for uri, _ in self.index.rank(variant, {collection}, in_scope)[:limit]:
                    if uri not in uris:
                        uris.append(uri)
        candidates = [
            Candidate(
                uri,
                scope.docs[uri].source_hash,
                number,
                sha256_text(text),
                order * 1000 + number - 1,
                tuple(line_facets(text, facets)),
            )
            for order, uri in enumerate(uris)
            for number, text in enumerate(scope.docs[uri].lines, start=1)
            if text.strip()
        ]
        titles = {uri: _title(doc) for uri, doc in scope.docs.items()}

        def result(chosen: list[Candidate]) -> dict[str, Any]:
            found = [
                item(scope.docs[c.uri], c.line, backend_hashes=self.backend_hashes) for c in chosen
            ]
            return ok("evidence_bundle", bundle_content(found, titles), found)

        budget = scope.max_model_visible_bytes

        def fits(chosen: list[Candidate]) -> bool:
            return budget is None or visible_bytes(projection(result(chosen))) <= budget

        return result(select(candidates, one_call=scope.max_agent_calls == 1, fits=fits))


def _title(doc: CorpusDoc) -> str:
    for line in doc.lines:
        if line.startswith("# "):
            return line[2:]
    return doc.rel_path


def _opt_int(arguments: Mapping[str, Any], key: str) -> int | None:
    value = arguments.get(key)
    return None if value is None else int(value)


BUILTIN_BACKENDS: dict[str, type[LexicalBackend]] = {
    "lexical": LexicalBackend,
    "capsule": CapsuleBackend,
}


def backend_id(backend: Any) -> str:
    value = getattr(backend, "adapter_id", None)
    return value if isinstance(value, str) and value else type(backend).__name__
