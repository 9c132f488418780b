"""The retrieval world's second plug point, importable without the world.

The plugin checks an ``--agentbench-adapter`` against every kind's protocol at
configure time; this module imports nothing of the world at runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pytest_agentbench.worlds.retrieval.backends import TaskScope
    from pytest_agentbench.worlds.retrieval.fixture import CorpusDoc


@runtime_checkable
class RetrievalBackend(Protocol):
    """The second plug point: a search engine benchmarked under the built-in fixture agent.

    ``prepare`` builds the index once from every corpus document (by URI) and
    returns its fingerprint; ``call`` answers one tool call within ``scope``
    and returns a result ``{status, resultRole, content, evidence, errorCode}``.
    Optional attributes: ``adapter_id`` (str), ``config`` (JSON, fingerprinted),
    ``backend_hashes`` (bool), ``invocations(tool) -> int`` (internal operations
    per call; without it backendInvocations is 0 and accounting unsupported),
    ``reset()`` (called before each cold task).
    """

    def prepare(self, docs: Mapping[str, CorpusDoc]) -> str: ...

    def call(self, tool: str, arguments: Mapping[str, Any], scope: TaskScope) -> Any: ...
