"""Shape rules the C08 v2 models share: sorted, unique, contiguous."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Protocol

from pytest_agentbench.worlds.evidence_binding.artifacts import InvariantError


class Ordered(Hashable, Protocol):
    """A value with an order: ids, paths and tuples of them."""

    def __lt__(self, other: Any, /) -> bool: ...


def sorted_unique(values: Sequence[Ordered], field: str, *, allow_empty: bool = False) -> None:
    if not values and not allow_empty:
        raise InvariantError("invalid_field", "must hold at least one entry", field)
    for index in range(1, len(values)):
        previous, current = values[index - 1], values[index]
        if previous == current:
            raise InvariantError("duplicate_entry", f"{current!r} appears twice", field)
        if not previous < current:
            raise InvariantError("unsorted_entries", "entries must be sorted", field)


def unique(values: Sequence[Hashable], field: str, code: str = "duplicate_id") -> None:
    seen: set[Hashable] = set()
    for index, value in enumerate(values):
        if value in seen:
            raise InvariantError(code, f"{value!r} appears more than once", f"{field}[{index}]")
        seen.add(value)


def runs_from(values: Sequence[int], start: int, field: str, name: str) -> None:
    """``values`` are ``start, start + 1, ...`` in list order."""
    for index, value in enumerate(values):
        if value != start + index:
            raise InvariantError(
                "order_mismatch",
                f"{name} must run {start}..{start + len(values) - 1} in list order; "
                f"entry {index} has {value}",
                f"{field}[{index}].{name}",
            )


def check_candidates(
    requirements: list[tuple[str, list[tuple[str, str]]]],
    candidates: list[tuple[str, str, str]],
    *,
    distractor_outside_requirements: bool,
) -> None:
    """Every requirement: one matching same-action candidate and a same-kind distractor.

    Enterprise asks more of the distractor: its handle is not required for
    that kind at all (``distractor_outside_requirements``).
    """
    triples: set[tuple[str, str, str]] = set()
    for action_id, required in requirements:
        for kind, handle in required:
            triple = (action_id, kind, handle)
            if triple in triples:
                raise InvariantError(
                    "duplicate_requirement", f"action {action_id} requires ({kind}, {handle}) twice"
                )
            triples.add(triple)
    by_action_kind: dict[tuple[str, str], list[str]] = {}
    for action_id, kind, handle in candidates:
        by_action_kind.setdefault((action_id, kind), []).append(handle)
    for action_id, required in requirements:
        required_of_kind = {(kind, handle) for kind, handle in required}
        for kind, handle in required:
            handles = by_action_kind.get((action_id, kind), [])
            matches = handles.count(handle)
            if matches != 1:
                raise InvariantError(
                    "unmatched_requirement",
                    f"action {action_id} requirement ({kind}, {handle}) has {matches} "
                    "matching candidates, not exactly one",
                )
            distractors = [
                other
                for other in handles
                if other != handle
                and not (distractor_outside_requirements and (kind, other) in required_of_kind)
            ]
            if not distractors:
                raise InvariantError(
                    "missing_distractor",
                    f"action {action_id} requirement ({kind}, {handle}) has no same-action, "
                    "same-kind candidate with another handle",
                )
