"""The protocol a world kind implements.

A world kind turns a suite folder into cases, drives an adapter through one
case using public data only, and grades the adapter's output against its oracle,
which it loads only once that output exists. The core calls nothing else; it
never imports a world. See ``hookspecs.py`` for how a world registers itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_agentbench.sdk.contracts import Case, CaseResult, ControlAgent, MetricSpec, Outcome
from pytest_agentbench.sdk.suite import Suite, SuiteConfig


@runtime_checkable
class World(Protocol):
    kind: str
    """The ``world:`` value of ``suite.yaml`` this world serves."""

    adapter_protocol: type
    """A ``runtime_checkable`` Protocol an adapter must satisfy to run this world's cases.

    A world may accept more than one protocol: an optional class attribute
    ``adapter_protocols: tuple[type, ...]`` lists every one it accepts (see
    :func:`accepted_protocols`); ``adapter_protocol`` stays the primary one.
    Interactive worlds accept :class:`pytest_agentbench.sdk.tools.ToolAgent` there.
    A world registered as a :class:`~pytest_agentbench.sdk.registry.LazyWorld`
    names the same protocols, in the same order, in its ``adapter_protocols``.
    """

    def load_suite(self, suite: Suite) -> Any:
        """Verify the suite's public artifacts (digests included) and parse them.

        Raise :class:`~pytest_agentbench.sdk.errors.AgentbenchError` naming the file
        and field on bad input. Must not read the oracle folder's truth.
        """

    def cases(self, suite: Suite) -> Sequence[Case]:
        """One case per test item, in a deterministic order."""

    def public_view(self, suite: Suite, case: Case) -> Any:
        """What the adapter may see for ``case``: the ``agentbench_world`` fixture value."""

    def reference_agent(self) -> Any:
        """The built-in adapter used when the user names none."""

    def run(self, suite: Suite, case: Case, view: Any, adapter: Any) -> Outcome:
        """Drive ``adapter`` through ``case``.

        Call the adapter through :func:`pytest_agentbench.sdk.runner.call_adapter` so
        its exceptions are classified as ``agent_error``; raise
        :class:`~pytest_agentbench.sdk.runner.MalformedOutput` when it returns
        something the world cannot accept. Anything else raised is a harness error.
        """

    def load_oracle(self, suite: Suite) -> Any:
        """Load and verify the evaluator truth; called only after adapter output exists."""

    def evaluate(self, suite: Suite, case: Case, outcome: Outcome, oracle: Any) -> CaseResult:
        """Grade ``outcome``; an outcome with a failure class still gets its checks (as missing)."""

    def metrics(self, suite: Suite) -> Sequence[MetricSpec]:
        """How this world's case results aggregate."""

    def dimensions(self, suite: Suite) -> Sequence[str]:
        """Every check name a negative-control manifest must classify."""

    def control_agents(self, suite: Suite) -> Sequence[ControlAgent]:
        """Built-in deterministic agents: the reference and every negative agent."""

    def leak_canaries(self, suite: Suite, oracle: Any) -> Sequence[str]:
        """Strings that exist only in the oracle; none may reach an adapter."""

    def predictions_adapter(self, suite: Suite, path: Path) -> Any:
        """An adapter that answers from a predictions file produced elsewhere."""


def accepted_protocols(world: World) -> tuple[type, ...]:
    """The primary adapter protocol, then any others the world lists in ``adapter_protocols``."""
    extra: tuple[type, ...] = tuple(getattr(world, "adapter_protocols", ()))
    primary = world.adapter_protocol
    return (primary, *(protocol for protocol in extra if protocol is not primary))


@runtime_checkable
class RecognisesLayout(Protocol):
    """Optional world capability: run an original's published folder with no ``suite.yaml``.

    The world declares marker sets: relative file paths that all exist in a
    folder of one published layout, e.g. ``(("public/manifest.json",
    "evaluator/checksums.json"),)``, as ``layout_markers=`` of its
    :class:`~pytest_agentbench.sdk.registry.LazyWorld` or, registered as an object,
    as its ``layout_markers`` attribute. The core asks ``recognise`` only about
    folders holding every file of one set, so that pytest, which visits every
    directory, neither imports the world nor reads its files elsewhere; the
    first file of the matching set anchors the suite's own collector. A marker
    may be a file-name pattern (``*.yaml``) for a layout recognised by content;
    such a world names the anchor itself with ``layout_anchor(folder, config)``.
    A world that declares no markers is never asked.
    """

    def recognise(self, folder: Path) -> SuiteConfig | None:
        """The suite declaration for ``folder`` if it is this world's original layout.

        Check the content that makes the layout this world's own (manifest
        fields, schema versions), not file names alone, and return None for
        anything else, including a file that does not parse: the folder may be
        another world's. ``oracle`` is relative to ``folder``; ``world`` is this
        world's kind. Keep it cheap: read no more than the manifests.
        """
